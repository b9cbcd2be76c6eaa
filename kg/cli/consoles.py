"""The terminal consoles every command prints to (no Typer here: ``kg sync`` starts without it)."""

from __future__ import annotations

from rich.console import Console

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
