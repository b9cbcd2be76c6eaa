"""``kg new epic|story|adr|rule NAME``: a new spec file from a template that passes lint.

Each kind goes to the folder the built-in schema map types by path (``docs/epics/``,
``docs/stories/``, ``docs/adr/``, ``docs/rules/``) and declares its type in front matter too,
so it is typed the same if moved. Guidance is in HTML comments, which the parser ignores
(a requirement id or a link in a comment is not a reference).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from kg.errors import ValidationError
from kg.ingest.files import absolute_path, project_relpath
from kg.ingest.links import is_markdown
from kg.ingest.markdown import parse_markdown
from kg.ingest.schema_map import DEFAULT_SCHEMA
from kg.ingest.slugs import slugify


@dataclass(frozen=True, slots=True)
class Kind:
    folder: str
    front_matter_type: str


KINDS: dict[str, Kind] = {
    "epic": Kind("docs/epics", "epic"),
    "story": Kind("docs/stories", "story"),
    "adr": Kind("docs/adr", "adr"),
    "rule": Kind("docs/rules", "rule"),
}

_ADR_NUMBER = re.compile(r"^(\d{4})-")

_BODIES = {
    "epic": """# {title}

<!-- What outcome this epic delivers, for whom, and how we will know it worked. -->

## Goal

## Scope

<!-- In scope, and just as important, out of scope. -->

## Stories

<!-- One line per story, e.g. - [Checkout with a saved card](../stories/saved-card.md) -->

## Requirements

<!-- Mention requirement ids such as FR-12 or NFR-3: each becomes a Requirement node. -->
""",
    "story": """# {title}
{epic_line}
## User story

As a <role>, I want <capability>, so that <benefit>.

## Acceptance criteria

<!-- One checkable statement per line: Given ..., when ..., then ... -->

## Notes
""",
    "adr": """# {title}

## Status

Proposed

## Context

<!-- The forces at play: what is true, what is needed, what constrains the choice. -->

## Decision

<!-- What we will do, stated in full sentences ("We will ..."). -->

## Consequences

<!-- What becomes easier, what becomes harder, and what we will watch. -->
""",
    "rule": """# {title}

## Rule

<!-- One sentence an agent can follow, e.g. "Never log card numbers." -->

## Applies to

<!-- Paths, components or node types the rule governs. -->

## Rationale

## Examples
""",
}


def _check_name(name: str) -> str:
    name = " ".join(name.split())
    if not name or not slugify(name).strip("-"):
        raise ValidationError(f"name {name!r} has no letters or digits to make a file name from")
    if len(name) > 200:
        raise ValidationError("name is longer than 200 characters")
    return name


def _next_adr_number(folder: Path) -> int:
    numbers = [
        int(m.group(1)) for p in folder.glob("*.md") if (m := _ADR_NUMBER.match(p.name)) is not None
    ]
    return max(numbers, default=0) + 1


def new_document(
    root: Path,
    kind: str,
    name: str,
    *,
    folder: Path | None = None,
    epic: Path | None = None,
    today: date | None = None,
) -> Path:
    """Write the new file and return its path.

    ``folder`` and ``epic`` are absolute or relative to ``root``. ``epic`` (stories only) must
    be an existing Markdown file of the project; the story links to it.

    Raises:
        ValidationError: unknown kind, unusable name, the file exists, or a bad ``epic``.
    """
    if kind not in KINDS:
        raise ValidationError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    spec = KINDS[kind]
    name = _check_name(name)
    target_dir = absolute_path(root, folder or Path(spec.folder))
    rel_dir = project_relpath(root, target_dir / "x.md")
    if rel_dir is None:
        raise ValidationError(f"folder {target_dir} is outside the project root {root}")
    slug = slugify(name).strip("-")
    title = name
    if kind == "adr":
        number = _next_adr_number(target_dir)
        slug = f"{number:04d}-{slug}"
        title = f"ADR-{number:04d}: {name}"
    path = target_dir / f"{slug}.md"
    if path.exists():
        raise ValidationError(f"{path} already exists: choose another name")
    front = {"type": spec.front_matter_type, "title": title, "status": "draft"}
    if kind == "adr":
        front["status"] = "proposed"
        front["date"] = (today or date.today()).isoformat()
    epic_line = ""
    if epic is not None:
        if kind != "story":
            raise ValidationError("--epic is for stories only")
        epic_line = _epic_line(root, epic, posixpath.dirname(rel_dir))
        front["epic"] = str(project_relpath(root, epic))
    lines = ["---", *(f"{key}: {json.dumps(value)}" for key, value in front.items()), "---", ""]
    text = "\n".join(lines) + _BODIES[kind].format(title=title, epic_line=epic_line)
    target_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _epic_line(root: Path, epic: Path, from_dir: str) -> str:
    rel = project_relpath(root, epic)
    full = absolute_path(root, epic)
    if rel is None or not is_markdown(rel) or not full.is_file():
        raise ValidationError(f"epic {epic} is not a Markdown file of this project")
    doc = parse_markdown(root, full, schema=DEFAULT_SCHEMA)
    name = doc.nodes[0].name if doc.nodes else posixpath.basename(rel)
    link = posixpath.relpath(rel, from_dir or ".")
    label = name.replace("[", "(").replace("]", ")")
    if " " in link or "(" in link or ")" in link:
        link = f"<{link}>"
    return f"\nPart of the epic [{label}]({link}).\n"
