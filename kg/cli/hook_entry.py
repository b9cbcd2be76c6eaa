"""What the git hooks run: ``python -m kg.cli.hook_entry pre-commit|post-commit|sync``.

The project's warm command host (:mod:`kg.host.resident`) runs the hook when it is up, so a
commit does not pay for Python's start-up and kg's imports; otherwise
:mod:`kg.cli.hook_runner` runs here. This module imports nothing else first.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from kg.host.resident import run_in_host

    status = run_in_host(argv, entry="hook")
    if status is not None:
        return status
    from kg.cli.hook_runner import main as run_here

    return run_here(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
