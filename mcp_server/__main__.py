"""``python -m mcp_server``: the same as ``kg mcp``."""

import typer

from mcp_server.cli import mcp

typer.run(mcp)
