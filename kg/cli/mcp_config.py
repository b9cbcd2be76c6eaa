"""``kg mcp config``: the MCP client configuration that starts ``kg mcp`` for this project.

Each client keeps its servers in a JSON file of its own shape. ``--write`` merges the ``kg``
entry into that file, leaving every other server (and key) as it was, and refuses a file it
cannot parse rather than replacing it. Secrets are never written: ``KG_DATABASE_URL`` may hold
a password, so it is named in a note instead.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg.errors import ValidationError

SERVER_NAME = "kg"


@dataclass(frozen=True)
class Client:
    """Where a client reads its MCP servers, and under which key."""

    name: str
    key: str  # "mcpServers", or VS Code's "servers"
    project_file: str | None  # relative to the project root; None: a per-user file
    typed: bool  # whether entries carry "type": "stdio"


CLIENTS = {
    "claude-code": Client("claude-code", "mcpServers", ".mcp.json", typed=True),
    "claude-desktop": Client("claude-desktop", "mcpServers", None, typed=False),
    "cursor": Client("cursor", "mcpServers", ".cursor/mcp.json", typed=False),
    "vscode": Client("vscode", "servers", ".vscode/mcp.json", typed=True),
}


def client_named(name: str) -> Client:
    try:
        return CLIENTS[name]
    except KeyError:
        raise ValidationError(
            f"--client {name!r} is unknown: use one of {', '.join(CLIENTS)}"
        ) from None


def desktop_config(home: Path, platform: str = sys.platform) -> Path:
    """Claude Desktop's per-user file (it has no per-project one)."""
    if platform == "darwin":
        return home / "Library/Application Support/Claude/claude_desktop_config.json"
    if platform.startswith("win"):
        appdata = os.environ.get("APPDATA")
        return Path(appdata) / "Claude/claude_desktop_config.json" if appdata else home
    return home / ".config/Claude/claude_desktop_config.json"


def config_path(client: Client, project_root: Path, home: Path) -> Path:
    if client.project_file is None:
        return desktop_config(home)
    return project_root / client.project_file


def server_entry(client: Client, project_root: Path, env: dict[str, str]) -> dict[str, Any]:
    """How the client starts ``kg mcp`` over stdio: this interpreter (so the same install of
    kg, whichever tool installed it), the project root (a client may start servers anywhere),
    and the tenant and project if they are set."""
    server_env = {"KG_PROJECT_ROOT": str(project_root)}
    for name in ("KG_TENANT", "KG_PROJECT", "KG_EMBEDDER", "KG_TOKEN_BUDGET"):
        if env.get(name):
            server_env[name] = env[name]
    package = Path(__file__).resolve().parents[2]
    if not any(str(package).startswith(p) for p in (sys.prefix, sys.base_prefix)):
        server_env["PYTHONPATH"] = str(package)  # a source checkout, not an installed kg
    entry: dict[str, Any] = {"type": "stdio"} if client.typed else {}
    entry |= {"command": sys.executable, "args": ["-m", "kg.cli", "mcp"], "env": server_env}
    return entry


def render(client: Client, entry: dict[str, Any]) -> str:
    return json.dumps({client.key: {SERVER_NAME: entry}}, indent=2) + "\n"


def merge_into(path: Path, client: Client, entry: dict[str, Any]) -> bool:
    """Add or replace the ``kg`` entry in ``path``; every other entry stays. Returns whether
    an entry for kg was already there."""
    existing: dict[str, Any] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        try:
            existing = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); nothing was written. "
                "Fix or move the file, or print the configuration without --write and add it "
                "by hand."
            ) from None
        if not isinstance(existing, dict) or not isinstance(existing.get(client.key, {}), dict):
            raise ValidationError(
                f"{path} does not hold a JSON object with a {client.key!r} object; nothing was "
                "written. Print the configuration without --write and add it by hand."
            )
    servers = dict(existing.get(client.key, {}))
    replaced = SERVER_NAME in servers
    servers[SERVER_NAME] = entry
    existing[client.key] = servers
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.kg-tmp")
    partial.write_text(json.dumps(existing, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)  # atomic: the client never reads half a file
    return replaced
