"""The suite's warm ``kg`` interpreter: ``python tests/command_host.py STATE_DIR PARENT_PID``.

A ``kg`` process spends ~0.5 s of CPU importing (Typer, pydantic, asyncpg, kg) before it does
anything, and the suite runs ~1,000 of them (bench/RESULTS.md, issue 34 item 6). This is the
product's own resident command host (:class:`kg.host.resident_host.CommandHost` with
:func:`kg.cli.watchdog.command_host`'s entries and imports): each command line
:mod:`tests.kg_client` sends is run in a forked child that takes the client's descriptors,
environment, working folder, umask and limits and runs ``kg`` exactly as the warm host runs a
user's command on the embedded server (``kg``'s default there). One per pytest process, on a
folder of its own; it exits when that process is gone.
"""

from __future__ import annotations

import os
import sys
import warnings

if __name__ == "__main__":
    sys.path.pop(0)  # tests/ itself: its folders (mcp, events, ...) would shadow packages
    from pathlib import Path

    import psutil  # type: ignore[import-untyped]

    from kg.cli.watchdog import command_host

    state_dir, parent = Path(sys.argv[1]), int(sys.argv[2])
    host = command_host(state_dir)
    with warnings.catch_warnings():  # the wheel's import warns; the commands keep the filters
        warnings.simplefilter("ignore")
        opened = host.open()
    if not opened:
        sys.exit(f"the suite's command host could not listen in {state_dir}")
    print("ready", flush=True)
    try:
        while psutil.pid_exists(parent) and os.getppid() == parent:
            host.serve(0.5)  # a client whose code differs is refused and runs `kg` itself
    finally:
        host.close()
