"""Which files hold a project's rules for agents (besides what the schema map types ``Rule``)."""

from __future__ import annotations

from kg.directives.globs import glob_matches

#: Files agents read their rules from, besides what the schema map types ``Rule``.
RULE_FILES: tuple[str, ...] = (
    "AGENTS.md",
    "**/AGENTS.md",
    "CLAUDE.md",
    "**/CLAUDE.md",
    "GEMINI.md",
    ".cursor/rules/**/*.mdc",
    ".cursor/rules/**/*.md",
    ".github/copilot-instructions.md",
    ".github/instructions/**/*.md",
    "docs/rules/**/*.md",
)
#: Hidden folders a project scan enters, for their rule files only.
RULE_FOLDERS = frozenset({".cursor", ".github"})


def is_rule_path(relpath: str) -> bool:
    return any(glob_matches(g, relpath) for g in RULE_FILES)
