"""The test suite's wall clock (issue 34 item 6), serially and with pytest-xdist workers.

Runs the whole suite (``python -m pytest``, as ``scripts/test`` does after its set-up) once per
worker count given, ``0`` meaning serially (``-p no:xdist``), and prints a Markdown row per run:
wall clock, the sum of the per-test durations (set-up, call and tear-down, from the JUnit XML),
the outcome counts, and the load average before and after. The sum is the figure to compare
across machines and loads; the wall clock is only comparable on the same quiet machine.

    python bench/bench_suite.py 0 2 3 4        # the four runs, ~25 min on a quiet 2-core machine
    python bench/bench_suite.py 3 -- tests/cli  # one run of part of the suite

Extra pytest arguments go after ``--``. Runs are niced (``nice -n 10``) unless ``--no-nice``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

ROOT = Path(__file__).resolve().parent.parent


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _durations(junit: Path) -> tuple[float, dict[str, int]]:
    """The sum of the test cases' times and the outcome counts of a JUnit XML report."""
    total, counts = 0.0, {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for case in ET.parse(junit).getroot().iter("testcase"):
        total += float(case.get("time", 0))
        outcome = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "")
        counts[
            {"failure": "failed", "error": "error", "skipped": "skipped"}.get(outcome, "passed")
        ] += 1
    return total, counts


def run(workers: int, extra: list[str], nice: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="kg-bench-suite-") as tmp:
        junit = Path(tmp) / "junit.xml"
        spread = ["-p", "no:xdist"] if workers == 0 else ["-n", str(workers)]
        command = [sys.executable, "-m", "pytest", "-q", *spread, f"--junitxml={junit}", *extra]
        if nice:
            command = ["nice", "-n", "10", *command]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        before = _load()
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = _load()
        if not junit.is_file():
            sys.exit(f"pytest wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}")
        total, counts = _durations(junit)
    outcome = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    label = "serial (-p no:xdist)" if workers == 0 else f"-n {workers}"
    return (
        f"| {label} | {wall / 60:.1f} min | {total / 60:.1f} min | {outcome} | {before} / {after} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workers", nargs="+", type=int, help="worker counts; 0 is serial")
    parser.add_argument("--no-nice", action="store_true")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = parser.parse_args(argv[:cut]), argv[cut + 1 :]
    print(machine())
    print("| run | wall clock | sum of per-test durations | outcome | load before / after |")
    print("| --- | ---: | ---: | --- | --- |")
    for workers in args.workers:
        print(run(workers, extra, not args.no_nice), flush=True)


if __name__ == "__main__":
    main()
