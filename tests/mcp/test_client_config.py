"""The configuration ``kg mcp config`` prints starts a server a real MCP client can use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.mcp.client import CLIENT, READ_TIMEOUT, TOOLS
from tests.mcp.test_prompts import PROMPTS


async def test_the_printed_configuration_serves_the_tools_and_prompts(
    db_url: str, tmp_path: Path
) -> None:
    (tmp_path / ".git").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KG_DATABASE_URL")}
    printed = subprocess.run(  # noqa: ASYNC221 (a short command before the session starts)
        [sys.executable, "-m", "kg.cli", "mcp", "config", "--client", "claude-code"],
        cwd=tmp_path, env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    entry = json.loads(printed.stdout)["mcpServers"]["kg"]
    # What a client does: start the command with the env it was given (the database URL is
    # the user's to add: it is never written), from wherever it happens to run.
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={**entry["env"], "KG_DATABASE_URL": db_url, "KG_EMBEDDER": "hashing"},
        cwd=Path(tempfile.gettempdir()),
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read, write, client_info=CLIENT, read_timeout_seconds=READ_TIMEOUT
            ) as session,
        ):
            init = await session.initialize()
            assert "query_directives" in (init.instructions or "")
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            assert {p.name for p in (await session.list_prompts()).prompts} == PROMPTS
            lint = await session.call_tool("lint_graph", {})
            assert not lint.is_error
