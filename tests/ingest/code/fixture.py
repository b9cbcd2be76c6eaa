"""The fixture repository ``shop_repo/`` (Python and TypeScript, every call's target known)
parsed and linked without a database, as the ingest does."""

from __future__ import annotations

from pathlib import Path

from kg.config import Scope
from kg.ingest.code.model import CodeFile
from kg.ingest.code.stage import CodeStage, parse_one
from kg.ingest.requirements import RequirementMatcher
from kg.parsed.model import ParsedDocument

SHOP_REPO = Path(__file__).parent / "shop_repo"


def source_files(root: Path = SHOP_REPO) -> dict[str, str]:
    found = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".ts") and p.is_file())
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in found}


def link_repository(root: Path = SHOP_REPO) -> tuple[list[ParsedDocument], CodeStage]:
    texts = source_files(root)
    matcher = RequirementMatcher()
    files = [
        f for f in (parse_one(r, t, matcher) for r, t in texts.items()) if isinstance(f, CodeFile)
    ]
    specs = {p.relative_to(root).as_posix() for p in root.rglob("*.md")}
    stage = CodeStage(root, Scope("t", "p"), ("FR", "NFR"), specs)
    return stage.link_parsed(files, [], texts), stage


def expected_calls(root: Path = SHOP_REPO) -> set[tuple[str, str]]:
    """``expected_calls.txt`` as (caller id, callee id) pairs."""
    pairs: set[tuple[str, str]] = set()
    for line in (root / "expected_calls.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        caller, callee = (part.strip() for part in line.split("->"))
        target = f"class:{callee[6:]}" if callee.startswith("class ") else f"function:{callee}"
        pairs.add((f"function:{caller}", target))
    return pairs


def produced_calls(docs: list[ParsedDocument]) -> set[tuple[str, str]]:
    return {(e.from_node, e.to_node) for d in docs for e in d.edges if e.edge_type == "CALLS"}
