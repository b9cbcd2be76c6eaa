"""Fixtures for the parser tests: projects are written to ``tmp_path``; no database is used."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Writer = Callable[[str, str | bytes], Path]


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """``write("docs/a.md", text)`` creates the file (and its folders) under ``tmp_path``."""

    def _write(relpath: str, content: str | bytes) -> Path:
        path = tmp_path / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return _write
