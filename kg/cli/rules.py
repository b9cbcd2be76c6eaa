"""``kg rules detect|query``: the project's rules for a task, from the terminal.

The same application functions as the MCP tools ``detect_context`` and ``query_directives``
(:mod:`kg.rules.service`), so the same policies: a denied directive is only counted.
"""

from __future__ import annotations

import json
import sys

import typer
from rich.markup import escape

from kg.cli.common import console, err_console, fail, run

rules_app = typer.Typer(
    help="Project rules (AGENTS.md, .cursor/rules, docs/rules) as directives.",
    no_args_is_help=True,
)

_TASK = typer.Option("", "--task", "-t", help="What you are doing, in a sentence or two.")
_PATHS = typer.Option(None, "--path", "-p", help="A file in play (repeatable).")
_DIFF = typer.Option(
    None, "--diff", help="A unified diff file ('-': read it from stdin), e.g. `git diff`."
)
_LAYER = typer.Option(None, help="The layer, when you know it (e.g. 4-Persistence or 4).")
_TOPICS = typer.Option(None, "--topic", help="A topic, when you know it (repeatable).")


def _read_diff(diff: str | None) -> str:
    if not diff:
        return ""
    if diff == "-":
        return sys.stdin.read()
    try:
        with open(diff, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as error:
        fail(f"cannot read the diff file {escape(diff)}: {escape(error.strerror or str(error))}")
        raise  # fail() exits; this line is for the type checker


@rules_app.command("detect")
def detect(
    task: str = _TASK,
    path: list[str] = _PATHS,
    diff: str = _DIFF,
    layer: str = _LAYER,
    topic: list[str] = _TOPICS,
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON."),
) -> None:
    """Detect a task's layer, topics and technologies, each with its evidence."""
    from kg.host.database import open_runtime
    from kg.rules import service

    diff_text = _read_diff(diff)

    async def go() -> None:
        async with open_runtime() as rt:
            found = await service.detect(
                rt, task=task, paths=path or [], diff=diff_text, layer=layer, topics=topic or []
            )
        data = found.to_dict()
        if as_json:
            console.print_json(json.dumps(data))
            return
        for warning in data["warnings"]:
            err_console.print(f"[bold yellow]warning:[/] {escape(warning)}")
        console.print(f"layer: {data['layer'] or 'unknown'} ({data['layer_confidence']:.2f})")
        for key in ("layer_candidates", "topics", "languages", "frameworks"):
            for f in data[key]:
                why = "; ".join(f["evidence"][:3])
                console.print(f"{key}: {escape(f['value'])} ({f['confidence']:.2f}) {escape(why)}")
        console.print(f"confidence: {data['confidence']:.2f}")

    run(go)


@rules_app.command("query")
def query(
    task: str = _TASK,
    path: list[str] = _PATHS,
    diff: str = _DIFF,
    layer: str = _LAYER,
    topic: list[str] = _TOPICS,
    strict_layer: bool = typer.Option(False, help="Leave out directives of other layers."),
    token_budget: int = typer.Option(900, help="Tokens the checklist may take (100-20000)."),
    session: str = typer.Option(None, help="Session id, recorded with the served directives."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON."),
) -> None:
    """Serve the directives that apply to a task as a checklist, and log what was served."""
    from kg.events import EventMetadata
    from kg.host.database import open_runtime
    from kg.rules import service

    diff_text = _read_diff(diff)

    async def go() -> None:
        async with open_runtime() as rt:
            served = await service.query_directives(
                rt, task=task, paths=path or [], diff=diff_text, layer=layer,
                topics=topic or [], strict_layer=strict_layer, token_budget=token_budget,
                metadata=EventMetadata(actor="kg rules query", session_id=session),
            )  # fmt: skip
        if as_json:
            console.print_json(json.dumps(served.to_dict()))
            return
        console.print(served.checklist.rstrip("\n"), markup=False)
        d = served.diagnostics()
        err_console.print(
            f"served {d['served']} of {d['applicable']} applicable ({d['considered']} "
            f"directives), ~{d['token_estimate']}/{d['token_budget']} tokens, "
            f"{d['cut_by_budget']} cut by the budget, {d['excluded_by_policy']} withheld by "
            f"policy; served_id {served.served_id}"
        )

    run(go)
