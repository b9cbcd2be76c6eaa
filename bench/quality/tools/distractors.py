"""Writes the distractor files that sit beside the specs, as they do in real repositories:
method templates and agent files, older copies and drafts of the specs with outdated values,
stand-up notes and chat logs that discuss the features loosely, and unrelated documents.

Deterministic (seeded). Run: ``python bench/quality/tools/distractors.py``. The hand-written
distractors (chat logs, runbooks, blog posts) live in the corpora directly.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

BASE = Path(__file__).resolve().parent.parent
FN = BASE / "fieldnote"
LU = BASE / "lumen"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# -- older copies with outdated values ---------------------------------------------------------

FN_OUTDATED = [
    ("expires 45 minutes after it was issued", "expires 24 hours after it was issued"),
    ("expires 45 minutes after it was sent", "expires 24 hours after it was sent"),
    (
        "the link can be used once, and using it signs the user out of every other device",
        "the link can be used once",
    ),
    ("expires after 7 days", "expires after 14 days"),
    ("batches of at most 100 operations", "batches of at most 200 operations"),
    (
        "in 15-minute increments with a one-hour minimum per visit",
        "in 30-minute increments with a two-hour minimum per visit",
    ),
    (
        "rounded up to the next 15 minutes with a minimum of one hour per visit",
        "rounded up to the next 30 minutes with a minimum of two hours per visit",
    ),
    (
        "until 24 hours before the start of its arrival window",
        "until 48 hours before the start of its arrival window",
    ),
    (
        "15 minutes after the start of its arrival window",
        "30 minutes after the start of its arrival window",
    ),
    ("30 days before each due date", "14 days before each due date"),
    ("up to 14 days of assigned visits", "up to 7 days of assigned visits"),
    ("under 300 ms at the 95th percentile", "under 500 ms at the 95th percentile"),
    ("99.5% of each calendar month", "99.9% of each calendar month"),
    ("10 attempts per 15 minutes", "5 attempts per 10 minutes"),
    ("After 10 failed attempts in 15 minutes", "After 5 failed attempts in 10 minutes"),
    ("up to 20,000 rows", "up to 5,000 rows"),
    ("recovery point objective is 15 minutes", "recovery point objective is 1 hour"),
    (
        "httpOnly, Secure, SameSite=Lax cookie holding an opaque session id",
        "JWT kept in localStorage",
    ),
    ("a JWT access token valid for 15 minutes", "a JWT access token valid for 60 minutes"),
    ("valid for 30 days that is rotated on every use", "valid for 14 days"),
    ("at least 10 characters long", "at least 8 characters long, with one digit and one symbol"),
    ("at most 500 changes per response", "at most 1,000 changes per response"),
    ("The nightly export runs at 02:15", "The nightly export runs at 01:00"),
    ("retention 35 days", "retention 7 days"),
]

LU_OUTDATED = [
    ("removed 48 hours after their first use", "removed 24 hours after their first use"),
    ("up to 180 days after it was created", "up to 90 days after it was created"),
    ("Created more than 180 days ago.", "Created more than 90 days ago."),
    ("more than 300 seconds from your clock", "more than 600 seconds from your clock"),
    ("| 100 per second | 25 per second |", "| 50 per second | 10 per second |"),
    ("for up to three days with exponential backoff", "for up to 7 days with exponential backoff"),
    ("within 20 seconds", "within 30 seconds"),
    ("an uncaptured charge expires after 7 days", "an uncaptured charge expires after 5 days"),
    ("between 1 and 100. Default 10", "between 1 and 50. Default 20"),
    ("for 30 days after they were created", "for 14 days after they were created"),
    ("created in the last 30 days", "created in the last 14 days"),
    ("For 72 hours after an upgrade", "For 24 hours after an upgrade"),
    ("within 23 hours", "within 72 hours"),
    ("up to 4 retries over 21 days", "up to 3 retries over 14 days"),
    ("15.00 USD dispute fee", "20.00 USD dispute fee"),
    ("cost 1% of the amount, at least 0.50 USD", "cost 1.5% of the amount, at least 1.00 USD"),
    ("Up to 730", "Up to 365"),
    ("Trials can last up to 730 days", "Trials can last up to 365 days"),
    ("up to 16 endpoints", "up to 10 endpoints"),
    ("after an expiration of up to 7 days", "after an expiration of up to 24 hours"),
]


def outdated(text: str, pairs: list[tuple[str, str]]) -> str:
    for new, old in pairs:
        text = text.replace(new, old)
    return text


def old_copies() -> list[Path]:
    written = []
    for src, dst, note in [
        (
            "docs/prd.md",
            "docs/archive/prd-v1.md",
            "Archived copy of PRD version 1.0 (2026-04-07). Superseded; kept for reference.",
        ),
        (
            "docs/architecture.md",
            "docs/archive/architecture-v1.0.md",
            "Snapshot of the architecture as approved on 2026-04-14, before ADR-0005 and the pilot changes.",
        ),
        (
            "docs/prd.md",
            "docs/drafts/prd-draft-0.4.md",
            "Working draft 0.4 after the dispatcher workshop. Not the current version.",
        ),
    ]:
        text = outdated((FN / src).read_text(), FN_OUTDATED)
        text = re.sub(r"^(# .*)$", r"\1" + f"\n\n> {note}", text, count=1, flags=re.M)
        write(FN / dst, text)
        written.append(FN / dst)
    for story in sorted((FN / "docs/stories").glob("[1-4].*.md"))[::3]:
        text = outdated(story.read_text(), FN_OUTDATED).replace(
            "## Status\n\nDone", "## Status\n\nDraft"
        )
        dst = FN / "docs/stories/drafts" / story.name.replace(".md", ".draft.md")
        write(dst, text)
        written.append(dst)
    for name in (
        "idempotency",
        "refunds",
        "webhooks",
        "rate-limits",
        "charges",
        "subscriptions",
        "events",
        "pagination",
    ):
        text = outdated((LU / f"docs/api/{name}.md").read_text(), LU_OUTDATED)
        text = re.sub(
            r"^(# .*)$",
            r"\1"
            + "\n\n> Version 2023-10-16 of this page. See the current reference for newer API versions.",
            text,
            count=1,
            flags=re.M,
        )
        dst = LU / f"docs/archive/2023-10-16/{name}.md"
        write(dst, text)
        written.append(dst)
    return written


# -- templates derived from the specs ------------------------------------------------------------

GUIDANCE = [
    "Describe {topic} for this project. Keep it short and concrete; link to the source document instead of copying it.",
    "[[LLM: Elicit {topic} from the user. Offer sensible defaults (for example expiry times, limits and retry counts) and ask the user to confirm each value before writing it.]]",
    "{{{{{topic_var}}}}}: explain the decision, the values chosen and why. Include limits, timeouts and expiry periods where relevant.",
    "List the requirements for {topic} as numbered items. Each must be testable and state its measurable threshold.",
]


def template_of(src: Path, seed: int) -> str:
    rng = random.Random(seed)
    out = []
    for line in src.read_text().splitlines():
        m = re.match(r"^(#{1,6}) (.*)$", line)
        if m and not line.startswith("#!"):
            heading = re.sub(r"\d+\.\d+|[A-Z][a-z]+ \d+:?", "{{n}}", m.group(2)).strip()
            out += [f"{m.group(1)} {heading}", ""]
            topic = m.group(2).lower()
            out += [
                rng.choice(GUIDANCE).format(
                    topic=topic, topic_var=re.sub(r"\W+", "_", topic).strip("_")
                ),
                "",
            ]
    return "\n".join(out)


def templates() -> list[Path]:
    pairs = [
        (FN / "docs/prd.md", FN / "bmad-method/templates/prd-tmpl.md"),
        (FN / "docs/prd.md", FN / "bmad-method/templates/brownfield-prd-tmpl.md"),
        (FN / "docs/architecture.md", FN / "bmad-method/templates/architecture-tmpl.md"),
        (FN / "docs/architecture.md", FN / "bmad-method/templates/fullstack-architecture-tmpl.md"),
        (FN / "docs/stories/1.5.password-reset.md", FN / "bmad-method/templates/story-tmpl.md"),
        (
            FN / "docs/epics/epic-1-foundation-identity.md",
            FN / "bmad-method/templates/epic-tmpl.md",
        ),
        (
            FN / "docs/adr/0005-httponly-cookie-sessions.md",
            FN / "bmad-method/templates/adr-tmpl.md",
        ),
        (
            FN / "docs/retrospectives/epic-1-retrospective.md",
            FN / "bmad-method/templates/retrospective-tmpl.md",
        ),
        (LU / "docs/api/charges.md", LU / "templates/resource-page-template.md"),
        (LU / "docs/api/webhooks.md", LU / "templates/guide-page-template.md"),
        (LU / "docs/api/refunds.md", LU / "templates/endpoint-template.md"),
    ]
    for i, (src, dst) in enumerate(pairs):
        write(dst, template_of(src, i))
    return [d for _, d in pairs]


# -- stand-up notes ------------------------------------------------------------------------------

PEOPLE = ["Lena", "Tomás", "Aisha", "Jun"]


def standups() -> list[Path]:
    rng = random.Random(42)
    stories = sorted((FN / "docs/stories").glob("[1-4].*.md"))
    arch_sentences = [
        s.strip()
        for s in re.split(r"(?<=[.;])\s+", (FN / "docs/architecture.md").read_text())
        if 60 < len(s) < 240 and "|" not in s and "`" not in s
    ]
    written = []
    for day in range(14):
        date = f"2026-{5 + day // 7:02d}-{4 + (day % 7) * 3:02d}"
        lines = [f"# Stand-up {date}", ""]
        for person in PEOPLE:
            story = rng.choice(stories)
            title = story.read_text().splitlines()[0].removeprefix("# ")
            lines += [
                f"## {person}",
                "",
                f"- Yesterday: worked on {title}; {rng.choice(['tests green locally', 'review comments addressed', 'pairing with Dana', 'blocked for an hour on staging'])}.",
                f"- Today: finish {title.split(': ', 1)[-1].lower()} and open the PR.",
                f"- Note: {rng.choice(arch_sentences)}",
                f"- Blockers: {rng.choice(['none', 'none', 'waiting for the Stripe test account', 'need a decision on the value in the PRD vs the story', 'flaky Maestro flow'])}",
                "",
            ]
        lines += [
            "## Decisions",
            "",
            f"- {rng.choice(['Keep the current approach.', 'PO to confirm the number with the pilot customer.', 'Dana to update the architecture doc.', 'Park it for the retro.'])}",
            "",
        ]
        dst = FN / f"notes/standups/{date}.md"
        write(dst, "\n".join(lines))
        written.append(dst)
    return written


def agents() -> list[Path]:
    roles = {
        "pm": (
            "Priya",
            "Product Manager",
            "PRDs, goals, functional and non-functional requirements, epic lists",
        ),
        "architect": (
            "Dana",
            "Architect",
            "architecture documents, tech stack, data models, security and deployment",
        ),
        "sm": (
            "Bob",
            "Scrum Master",
            "drafting stories from epics with full Dev Notes quoting the architecture",
        ),
        "dev": (
            "James",
            "Developer",
            "implementing stories task by task, running tests, updating the Dev Agent Record",
        ),
        "qa": (
            "Quinn",
            "Test Architect",
            "reviewing stories, risk profiles, test design and quality gates",
        ),
        "po": (
            "Sarah",
            "Product Owner",
            "validating documents against the checklists, sharding the PRD into epics",
        ),
    }
    written = []
    for key, (name, title, focus) in roles.items():
        text = f"""# {title} agent ({name})

## Activation

Read this whole file, adopt the persona below and greet the user with your name and role. Do not load other files until asked.

## Persona

- Role: {title}
- Focus: {focus}
- Style: concise, asks one question at a time, numbered options for every choice

## Core Principles

- Never invent requirements, limits, expiry times or numbers: ask the user or cite the source document.
- Quote the architecture and PRD verbatim in the documents you produce, with a [Source: file#section] reference.
- When the PRD and a story disagree, the PRD and architecture win; raise the conflict with the PO.

## Commands

- `*help`: list the commands
- `*create-doc {{template}}`: create a document from a template in `bmad-method/templates/`
- `*execute-checklist {{checklist}}`: run a checklist from `bmad-method/checklists/`
- `*exit`: leave the persona

## Dependencies

- templates: prd-tmpl.md, architecture-tmpl.md, story-tmpl.md, epic-tmpl.md
- checklists: pm-checklist.md, architect-checklist.md, story-dod-checklist.md
"""
        dst = FN / f"bmad-method/agents/{key}.md"
        write(dst, text)
        written.append(dst)
    return written


def checklists() -> list[Path]:
    items = {
        "pm-checklist": [
            "Problem definition and context",
            "MVP scope definition",
            "User experience requirements",
            "Functional requirements",
            "Non-functional requirements (performance, security, availability, retention)",
            "Epic and story structure",
        ],
        "architect-checklist": [
            "Requirements alignment",
            "Architecture fundamentals",
            "Technical stack and decisions",
            "Security and compliance (authentication, session and token lifetimes, rate limiting, encryption)",
            "Resilience and operational readiness (backups, recovery objectives, rollback)",
            "Implementation guidance (coding standards, testing strategy)",
        ],
        "story-dod-checklist": [
            "Requirements met (every acceptance criterion)",
            "Coding standards and project structure",
            "Testing (unit, integration, end-to-end where applicable)",
            "Functionality and verification",
            "Story administration (Dev Agent Record, File List, Change Log)",
            "Dependencies, build and configuration",
        ],
    }
    written = []
    for name, sections in items.items():
        lines = [
            f"# {name.replace('-', ' ').title()}",
            "",
            "[[LLM: Work through each item. Mark [x] done, [ ] not done, [N/A] with a reason. Report a summary at the end.]]",
            "",
        ]
        for i, s in enumerate(sections, 1):
            lines += [f"## {i}. {s}", ""]
            lines += [
                f"- [ ] The document states {s.lower()} clearly, with measurable values where a value is expected.",
                f"- [ ] Every limit, expiry, timeout and retention period in {s.lower()} is given with its unit.",
                "- [ ] Nothing contradicts an accepted ADR; superseded decisions are marked as such.",
                "",
            ]
        dst = FN / f"bmad-method/checklists/{name}.md"
        write(dst, "\n".join(lines))
        written.append(dst)
    return written


def main() -> None:
    files = old_copies() + templates() + standups() + agents() + checklists()
    print(f"{len(files)} distractor files written")


if __name__ == "__main__":
    main()
