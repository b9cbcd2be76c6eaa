"""``kg erase``: forget content with a receipt (by node, source file or pattern)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from kg.cli.common import console, err_console, run


def erase(
    node: str = typer.Option(None, "--node", help="Erase every assertion of this node id."),
    source: str = typer.Option(
        None, "--source", help="Erase every node ingested from this file (path from the root)."
    ),
    pattern: bool = typer.Option(
        False,
        "--pattern",
        help="Erase every event whose content holds a literal string, read from the "
        "KG_ERASE_PATTERN environment variable or stdin (never from the command line: it would "
        "stay in shell history and process lists).",
    ),
    reason: str = typer.Option(None, "--reason", help="Why (logged, in the receipt)."),
    authority: str = typer.Option(
        None, "--authority", help="Under which authority: a ticket, a legal basis (logged)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="List every event, row, cache entry and replay it would touch."
    ),
    receipt_path: Path = typer.Option(
        None, "--receipt", "-o", help="Write the receipt here (default: print it)."
    ),
    key: Path = typer.Option(
        None, "--key", help="Sign the receipt with this audit key (kg audit keygen)."
    ),
    check: Path = typer.Option(
        None, "--check", help="Check a receipt against the log instead of erasing."
    ),
    trusted_key: str = typer.Option(
        None, "--trusted-key", help="With --check: the verifier key the receipt must be signed by."
    ),
    vacuum: str = typer.Option(
        "full", help="full (default: rewrite touched tables), plain, or none."
    ),
) -> None:
    """Forget content (by node, source file or pattern) with a receipt; the log still verifies.

    Removes it from the log's storage, the projections, the embedding cache and every kept
    replay, appends ContentErased and prints (or writes) the receipt.

    Events written before this kg version keep their content inside the hashed payload: they
    are listed as not erasable (see README, 'Erasure')."""
    from kg.erasure import Selection, build_receipt, check_receipt, erase, plan_erasure
    from kg.errors import ValidationError
    from kg.host.database import open_runtime

    if check is not None:
        receipt = json.loads(check.read_text(encoding="utf-8"))

        async def checking() -> tuple[bool, str]:
            from kg.audit.verify import verify_tenant

            async with open_runtime() as rt:
                verdict = await check_receipt(rt.system_pool, receipt, trusted_key=trusted_key)
                # "Nothing else": the rest of the chain, every other event's content included.
                chain = await verify_tenant(rt.system_pool, str(receipt["tenant_id"]))
            return verdict.ok and chain.ok, f"{verdict}\nlog: {chain}"

        ok, text = run(checking)
        console.print(text, markup=False)
        if not ok:
            raise typer.Exit(1)
        return

    chosen = [s for s, v in (("node", node), ("source", source), ("pattern", pattern)) if v]
    if len(chosen) != 1:
        err_console.print("error: give exactly one of --node, --source, --pattern")
        raise typer.Exit(2)
    if vacuum not in ("full", "plain", "none"):
        err_console.print("error: --vacuum must be full, plain or none")
        raise typer.Exit(2)
    value = node or source
    if pattern:
        value = os.environ.get("KG_ERASE_PATTERN") or typer.get_text_stream("stdin").read()
        value = value.rstrip("\n")

    async def go() -> str | None:
        selection = Selection(chosen[0], value or "")
        async with open_runtime() as rt:
            if dry_run:
                await rt.catch_up()
                plan = await plan_erasure(rt.system_pool, rt.scope, selection)
                for line in plan.lines():
                    console.print(line, markup=False)
                return None
            if not reason or not authority:
                raise ValidationError(
                    "kg erase needs --reason and --authority (both are logged in ContentErased "
                    "and the receipt)"
                )
            signer = None
            if key is not None:
                from kg.audit.checkpoint import load_signer

                signer = load_signer(key)
            result = await erase(
                rt,
                selection,
                reason=reason,
                authority=authority,
                vacuum=vacuum,
            )
            receipt = build_receipt(result, signer)
            err_console.print(
                f"erased {len(result.plan.events)} event(s), re-derived {result.rows_rederived} "
                f"row(s), dropped {result.cache_entries_dropped} cache entries; ContentErased at "
                f"position {result.position}"
                + (
                    f"; {len(result.plan.not_erasable)} event(s) NOT erasable (content inside "
                    "the hashed payload)"
                    if result.plan.not_erasable
                    else ""
                )
            )
            return json.dumps(receipt, indent=2, ensure_ascii=False) + "\n"

    text = run(go)
    if text is None:
        return
    if receipt_path is not None:
        receipt_path.write_text(text, encoding="utf-8")
        err_console.print(f"receipt written to {receipt_path}")
    else:
        console.print(text, markup=False, end="")
