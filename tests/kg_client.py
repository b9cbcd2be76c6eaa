"""``kg`` for the suite's :func:`tests.support.kg`: ``python tests/kg_client.py ARGS...``.

It does what the ``kg`` console script does (the project's own resident host first, when the
command's environment lets it: ``KG_RESIDENT`` on, the embedded server), then hands the command
to the suite's warm interpreter (:mod:`tests.command_host`, ``KG_TEST_HOST``; only with
``KG_RESIDENT=0``, the suite's default, so a test of the product's host sees only it), and
runs it in this process when neither takes it (``kg mcp``, ``kg server``, ``kg watch`` always do, as
with the product's host). Only the standard library and :mod:`kg.host.resident` are imported
before that.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    sys.path.pop(0)  # tests/ itself: its folders (mcp, events, ...) would shadow packages
    from pathlib import Path

    from kg.host.resident import IN_PROCESS, run_in_host, send_to_host

    argv = sys.argv[1:]
    status = run_in_host(argv)
    host = os.environ.get("KG_TEST_HOST", "")
    cold = os.environ.get("KG_RESIDENT", "").strip() != "0"  # the product's own routing
    if status is None and host and not cold and not (argv and argv[0] in IN_PROCESS):
        status = send_to_host(Path(host), argv, timeout=60.0)
    if status is not None:
        sys.exit(status)
    from kg.cli.main import run_here

    run_here(argv)
