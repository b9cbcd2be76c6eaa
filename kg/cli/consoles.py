"""The terminal consoles every command prints to (no Typer here: ``kg sync`` starts without it)."""

from __future__ import annotations

from rich.console import Console

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def reset() -> None:
    """Detect the terminal again (colour, width), in place so every module's reference sees
    it: a command run by the resident host (:mod:`kg.host.resident_host`) inherits consoles
    created before its standard descriptors became the client's."""
    console.__init__(highlight=False, soft_wrap=True)  # type: ignore[misc]
    err_console.__init__(stderr=True, highlight=False, soft_wrap=True)  # type: ignore[misc]
