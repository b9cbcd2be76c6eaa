"""Progress of long commands: counts, rates, ETA, and the plain lines a log file gets."""

from __future__ import annotations

import io

import pytest

from kg.cli.progress import TerminalProgress
from kg.progress import EVENTS_APPENDED, FILES_PARSED, NO_PROGRESS, Progress, format_seconds


def test_a_line_names_each_count_its_total_rate_and_the_eta() -> None:
    progress = Progress()
    progress.total(FILES_PARSED, 1000)
    progress.add(FILES_PARSED, 250)
    progress.add(EVENTS_APPENDED, 12_000)
    for counter in progress.counters.values():
        counter.started -= 10.0  # as if it had run for ten seconds
    progress.started -= 10.0
    line = progress.line()
    assert line.startswith("files parsed 250/1,000 (25.0/s), events appended 12,000 (1,200.0/s)")
    assert line.endswith("; 10 s elapsed, ETA 30 s")


def test_the_eta_is_that_of_the_slowest_count() -> None:
    progress = Progress()
    progress.total("fast", 100)
    progress.add("fast", 90)
    progress.total("slow", 100)
    progress.add("slow", 10)
    for counter in progress.counters.values():
        counter.started -= 10.0
    assert progress.eta() == pytest.approx(90.0, rel=0.01)


def test_plain_lines_go_to_a_stream_that_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KG_PROGRESS_SECONDS", "0")
    stream = io.StringIO()
    progress = TerminalProgress(stream, label="ingest")
    assert not progress.rich
    progress.total(FILES_PARSED, 2)
    progress.add(FILES_PARSED, 1)
    progress.add(FILES_PARSED, 1)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("ingest: files parsed 0/2")
    assert lines[-2].startswith("ingest: files parsed 2/2")
    assert lines[-1].startswith("ingest: files parsed 2/2"), "a last line when the command ends"


def test_a_short_command_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KG_PROGRESS_SECONDS", raising=False)
    stream = io.StringIO()
    progress = TerminalProgress(stream)
    progress.add(FILES_PARSED, 1)
    progress.close()
    assert stream.getvalue() == ""


def test_the_default_progress_counts_nothing() -> None:
    NO_PROGRESS.add(FILES_PARSED, 5)
    NO_PROGRESS.total(FILES_PARSED, 5)
    assert NO_PROGRESS.counters == {}


def test_durations_read_as_a_person_would_say_them() -> None:
    assert format_seconds(42.4) == "42 s"
    assert format_seconds(125) == "2 min 05 s"
    assert format_seconds(3 * 3600 + 61) == "3 h 01 min"
