"""``python -m mcp_server [--http] [--host H] [--port P] [--log-level L] [--memory-compat]``:
as ``kg mcp``."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from kg.errors import KgError
from mcp_server.serve import serve

parser = argparse.ArgumentParser(prog="python -m mcp_server", description=__doc__)
parser.add_argument("--http", action="store_true")
parser.add_argument("--host")
parser.add_argument("--port", type=int)
parser.add_argument("--token", default=os.environ.get("KG_MCP_TOKEN"))
parser.add_argument("--log-level", default="WARNING")
parser.add_argument("--memory-compat", action="store_true")
options = parser.parse_args()
try:
    asyncio.run(serve(**vars(options)))
except KgError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(1)
