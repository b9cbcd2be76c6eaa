"""``kg audit``: what a compliance reviewer runs."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kg.cli.common import console, err_console, fail, run
from kg.host.database import open_runtime
from kg.read.as_of import AS_OF_ENV, list_replays
from kg.runtime import Runtime

audit_app = typer.Typer(help="Verify and replay the audit trail.", no_args_is_help=True)


def _note_as_of(rt: Runtime) -> None:
    if rt.as_of is not None:
        err_console.print(f"reading the replay {rt.as_of.describe()}", markup=False)


def _live_only(rt: Runtime, what: str) -> None:
    if rt.as_of is not None:
        raise rt.as_of.read_only(what)


@audit_app.command("verify")
def verify(
    projections: bool = typer.Option(
        False,
        "--projections",
        help="Also compare a digest of every projection with a fresh replay of the log into a "
        "scratch schema at the same position.",
    ),
    checkpoints: list[Path] = typer.Option(
        None,
        "--checkpoint",
        metavar="FILE",
        help="A signed checkpoint held outside the database (repeatable): prove that today's "
        "log extends it, or name where it was rewritten.",
    ),
    trusted_key: str = typer.Option(
        None,
        "--trusted-key",
        metavar="KEY|FILE",
        help="Require the checkpoints to be signed by this verifier key (or the .pub file).",
    ),
) -> None:
    """Walk this tenant's hash chain and Merkle tree and the global positions; with
    --checkpoint, check held checkpoints too. Exit 1 at the first break."""

    async def go() -> bool:
        from kg.audit.evidence import load_checkpoints

        held = load_checkpoints(list(checkpoints or []), _trusted(trusted_key))
        async with open_runtime() as rt:
            _note_as_of(rt)
            if projections:
                _live_only(rt, "compare projections (that checks the live ones)")
            from kg.audit.verdict import audit

            verdict = await audit(rt, held=held, projections=projections)
        for ok, line in verdict.lines():
            (console if ok else err_console).print(line, markup=False)
        if not trusted_key:
            from kg.audit.checkpoint import untrusted_note

            for cp in held:
                err_console.print(untrusted_note(cp), markup=False)
        return verdict.ok

    if not run(go):
        raise typer.Exit(1)


@audit_app.command("replay")
def replay(
    until: str = typer.Option(
        None,
        "--until",
        help="A POSITION in the tenant's log, or an ISO-8601 TIME (no zone: UTC).",
    ),
    schema: str = typer.Option(
        None,
        "--schema",
        help="Schema to keep the replay in (default: kg_asof_<tenant>_<position>).",
    ),
    list_them: bool = typer.Option(False, "--list", help="List the kept replays."),
    drop: str = typer.Option(None, "--drop", metavar="SCHEMA", help="Drop a kept replay."),
) -> None:
    """Rebuild the graph as it was at a position or time into a separate schema and keep it;
    then run any read command against it with `kg --as-of SCHEMA ...`."""
    if sum((until is not None, list_them, drop is not None)) != 1:
        fail("pass exactly one of --until POSITION|TIME, --list or --drop SCHEMA")

    async def go() -> None:
        from kg.audit.snapshot import drop_kept, materialise

        async with open_runtime() as rt:
            if list_them:
                replays = await list_replays(rt.system_pool)
                for kept in replays:
                    console.print(kept.describe(), markup=False)
                if not replays:
                    console.print("no kept replays")
                return
            _live_only(rt, "replay or drop schemas")
            if drop:
                await drop_kept(rt.system_pool, drop)
                console.print(f"dropped {drop}")
                return
            from kg.cli.progress import shown

            with shown("replay") as progress:
                as_of, applied = await materialise(
                    rt.system_pool,
                    rt.url,
                    until,
                    rt.embedder,
                    schema,
                    tenant_id=rt.scope.tenant_id,
                    progress=progress,
                )
        console.print(
            f"replayed {applied} events into {as_of.describe()}\n"
            f"read it with: kg --as-of {as_of.schema} <command>  (or {AS_OF_ENV}="
            f"{as_of.schema}); read-only\ndrop it with: kg audit replay --drop {as_of.schema}",
            markup=False,
        )

    run(go)


@audit_app.command("trail")
def trail(
    decision: str = typer.Option(None, "--decision", help="A decision id (decision:ID or ID)."),
    session: str = typer.Option(None, "--session", help="A session id."),
    actor: str = typer.Option(None, "--actor", help="An actor name (metadata.actor)."),
    since: str = typer.Option(None, "--since", help="ISO-8601 time (no zone: UTC), inclusive."),
    until: str = typer.Option(None, "--until", help="ISO-8601 time (no zone: UTC), inclusive."),
    event_types: list[str] = typer.Option(
        None, "--type", help="Only events of this type (repeatable): DecisionRecorded, ..."
    ),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl, csv or md."),
    output: Path = typer.Option(None, "--output", "-o", help="Write to FILE, not stdout."),
) -> None:
    """The events of a decision, session, actor or time window, in log order: who, what, when,
    why and the source. Filters combine (AND); with none, the whole trail of the scope."""
    from kg.audit.snapshot import parse_time
    from kg.audit.trail import TrailFilter
    from kg.audit.trail import trail as select
    from kg.audit.trail_format import FORMATS, write_trail

    if fmt not in FORMATS:
        fail(f"--format {fmt!r} is unknown: use {', '.join(FORMATS)}")

    async def go() -> int:
        selection = TrailFilter(
            decision,
            session,
            actor,
            parse_time(since) if since else None,
            parse_time(until) if until else None,
            tuple(event_types or ()),
        )
        selection.check()
        async with open_runtime() as rt:
            _note_as_of(rt)
            if selection.everything:
                err_console.print(
                    f"the whole trail of tenant {rt.scope.tenant_id}, project "
                    f"{rt.scope.project_id}; narrow it with --decision, --session, --actor, "
                    "--since, --until or --type",
                    markup=False,
                )
            entries = select(rt.app_pool, rt.scope, selection)
            if output is None:
                return await write_trail(entries, sys.stdout, fmt)
            with output.open("w", encoding="utf-8", newline="") as out:
                return await write_trail(entries, out, fmt)

    count = run(go)
    err_console.print(f"{count} events", markup=False)


@audit_app.command("context")
def context(context_graph_id: str = typer.Argument(..., help="A logged context graph id.")) -> None:
    """Re-derive a logged context graph from the log at its as-of position; exit 1 on mismatch."""
    from kg.context.reproduce import reproduce_context_graph

    async def go() -> bool:
        async with open_runtime() as rt:
            _live_only(rt, "reproduce a context graph (that replays into a scratch schema)")
            result = await reproduce_context_graph(rt, context_graph_id)
        (console if result.matches else err_console).print(str(result))
        return result.matches

    if not run(go):
        raise typer.Exit(1)


def _trusted(key: str | None) -> str | None:
    if key and Path(key).is_file():
        return Path(key).read_text(encoding="utf-8").strip()
    return key


def _default_key() -> Path:
    from kg.config import Settings

    return Settings.from_env().state_dir / "audit.key"


@audit_app.command("keygen")
def keygen(
    output: Path = typer.Option(
        None, "--output", "-o", help="Private key file (default: <project>/.kg/audit.key)."
    ),
    name: str = typer.Option("kg-audit", "--name", help="The key's name in signatures."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing key."),
) -> None:
    """Make an Ed25519 key for signing checkpoints: FILE (private, mode 0600) and FILE.pub
    (the verifier key a reviewer keeps to check signatures)."""
    from kg.audit.checkpoint import generate_key
    from kg.errors import KgError

    path = output or _default_key()
    if path.exists() and not force:
        fail(f"{path} exists: pass --force to replace it (checkpoints it signed stay valid)")
    try:
        key = generate_key(name)
    except KgError as exc:
        fail(str(exc))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(key.encode() + "\n", encoding="utf-8")
    pub = path.with_name(path.name + ".pub")
    pub.write_text(key.verifier() + "\n", encoding="utf-8")
    console.print(f"signing key: {path}\nverifier key: {pub}\n{key.verifier()}", markup=False)


@audit_app.command("checkpoint")
def checkpoint(
    key: Path = typer.Option(None, "--key", help="Signing key (default: <project>/.kg/audit.key)."),
    output: Path = typer.Option(None, "--output", "-o", help="Write to FILE, not stdout."),
    witness_dir: Path = typer.Option(
        None,
        "--witness",
        metavar="DIR",
        help="Also keep it in DIR (a folder or git repository outside the database), with a "
        "copy of the tree's leaves that lets verify name a rewritten event.",
    ),
) -> None:
    """Sign a checkpoint of this tenant's Merkle tree (origin, size, root, time)."""
    from kg.audit.checkpoint import load_signer, write_json
    from kg.audit.evidence import take_checkpoint, witness

    async def go() -> None:
        signer = load_signer(key or _default_key())
        async with open_runtime() as rt:
            _note_as_of(rt)
            cp = await take_checkpoint(rt.app_pool, rt.scope.tenant_id, signer)
            kept = (
                await witness(rt.app_pool, rt.scope.tenant_id, cp, witness_dir)
                if witness_dir
                else None
            )
        if output:
            write_json(output, cp.to_json())
        else:
            import json

            sys.stdout.write(json.dumps(cp.to_json(), indent=2, ensure_ascii=False) + "\n")
        err_console.print(
            f"checkpoint: tenant {cp.tenant_id}, {cp.size} events, root {cp.root.hex()}"
            + (f"; kept in {kept}" if kept else ""),
            markup=False,
        )

    run(go)


@audit_app.command("prove")
def prove(
    subject: str = typer.Argument(..., help="decision:ID or an event id."),
    checkpoint_file: Path = typer.Option(
        None, "--checkpoint", metavar="FILE", help="Prove against this held checkpoint."
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Write to FILE, not stdout."),
) -> None:
    """Inclusion proofs for a decision's events (its DecisionRecorded and the context graphs
    built and used for it) or one event; check offline with
    `python -m kg.audit.check_proof PROOF CHECKPOINT`."""
    import json

    from kg.audit.checkpoint import load_checkpoint, write_json
    from kg.audit.evidence import build_proof

    async def go() -> dict[str, object]:
        cp = load_checkpoint(checkpoint_file) if checkpoint_file else None
        async with open_runtime() as rt:
            _note_as_of(rt)
            return await build_proof(rt.app_pool, rt.scope, subject, cp)

    proof = run(go)
    if output:
        write_json(output, proof)
    else:
        sys.stdout.write(json.dumps(proof, indent=2, ensure_ascii=False) + "\n")
    entries = proof["entries"]
    assert isinstance(entries, list)
    err_console.print(
        f"{len(entries)} events proved in a tree of {proof['tree_size']}"
        + ("" if checkpoint_file else " (today's: pass --checkpoint FILE to check it offline)"),
        markup=False,
    )


@audit_app.command("report")
def report(
    decision: str = typer.Option(..., "--decision", help="A decision id (decision:ID or ID)."),
    output: Path = typer.Option(..., "--output", "-o", help="The HTML file to write (- : stdout)."),
    checkpoints: list[Path] = typer.Option(
        None, "--checkpoint", metavar="FILE", help="Held checkpoints to check (repeatable)."
    ),
) -> None:
    """One self-contained HTML file for a reviewer: the decision, who/when/why, its lineage
    diagram, the context graphs it used (denied nodes counted, never named), the verification
    of the log and the inclusion proofs of its events. Opens with no network."""
    from kg.audit.checkpoint import load_checkpoint
    from kg.audit.report import build_report

    async def go() -> str:
        held = [load_checkpoint(p) for p in checkpoints or []]
        async with open_runtime() as rt:
            _note_as_of(rt)
            return await build_report(rt, decision, held)

    page = run(go)
    if str(output) == "-":
        sys.stdout.write(page)
        return
    output.write_text(page, encoding="utf-8")
    err_console.print(f"wrote {output} ({len(page) // 1024} KiB)", markup=False)
