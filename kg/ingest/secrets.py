"""Secrets caught before they land: private keys, cloud and API tokens, high-entropy strings.

A secret that reaches the log stays in every replay and backup until someone erases it
(``kg erase``), so ingestion never takes one: it ingests the file with each secret replaced by
``[secret removed: RULE]`` (the rest of the file is knowledge an agent needs: an API reference
with an example key in a code sample keeps its sections) and reports a warning, and ``kg lint``
reports it as an error. A finding names the file, the line and the rule that matched, never the
secret itself (not even a prefix: the report goes to terminals, CI logs and agents).

Allowed on purpose (test fixtures, documented example keys):

* a line containing ``kg:allow-secret`` (in a comment, e.g. ``<!-- kg:allow-secret -->``);
* a line of ``.kg-secrets-allow`` at the project root: ``GLOB`` (every rule in the matching
  files) or ``GLOB RULE`` (that rule only); ``#`` starts a comment.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kg.parsed.model import ParseProblem
from kg.project_files import read_project_text

ALLOW_FILE = ".kg-secrets-allow"
ALLOW_MARK = "kg:allow-secret"
MASK = "[secret removed: {rule}]"
_KEY_END = re.compile(r"-----END (?:[A-Z]+ )?PRIVATE KEY(?: BLOCK)?-----")

# (rule, pattern): the first group, when there is one, is the secret itself.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY(?: BLOCK)?-----")),
    ("aws-access-key-id", re.compile(r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16})\b")),
    ("github-token", re.compile(r"\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255})\b")),
    ("github-fine-grained-token", re.compile(r"\b(github_pat_[A-Za-z0-9_]{60,255})\b")),
    ("gitlab-token", re.compile(r"\b(glpat-[A-Za-z0-9_-]{20,})\b")),
    ("slack-token", re.compile(r"\b(xox[abposr]-[A-Za-z0-9-]{10,})\b")),
    ("stripe-key", re.compile(r"\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,})\b")),
    ("openai-key", re.compile(r"\b(sk-(?:proj-)?[A-Za-z0-9_-]{32,})\b")),
    ("anthropic-key", re.compile(r"\b(sk-ant-[A-Za-z0-9_-]{32,})\b")),
    ("google-api-key", re.compile(r"\b(AIza[0-9A-Za-z_-]{35})\b")),
    ("jwt", re.compile(r"\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})")),
)

# ``password = "..."``, ``API_KEY: ...``, ``"client_secret": "..."``: a value assigned to a
# name that says secret, kept only when it looks random (entropy), so prose does not match.
_ASSIGNMENT = re.compile(
    r"(?i)\b[\w.-]*(?:secret|passw(?:or)?d|pwd|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|credential|auth)[\w.-]*[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9+/=_\-.~!@#$%^&*]{16,})"
)
_MIN_ENTROPY = 3.5  # bits per character: random base64 is ~6, English words ~3
# A value that is a name in code (``self.token_budget``, ``settings.api_key``, ``os.environ``)
# is read from somewhere, not written down, and an email address is an identity, not a
# credential: neither is a secret however mixed its characters.
_IDENTIFIER = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*[,;)]?"  # a name, dotted or not
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # an email address (``GIT_AUTHOR_EMAIL: a@b.com``)
)
_MIN_CLASSES = 2  # at least two of: lower, upper, digits, symbols


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """Where a secret is and which rule found it; the secret itself is never kept."""

    path: str
    line: int
    rule: str

    def problem(self) -> ParseProblem:
        return ParseProblem(
            self.path,
            self.line,
            f"possible secret ({self.rule}): remove it, or allow it with '{ALLOW_MARK}' on the "
            f"line or a '{self.path} {self.rule}' line in {ALLOW_FILE}",
        )

    def masked(self) -> ParseProblem:
        """The ingest's warning: the secret was replaced, the rest of the file was ingested."""
        return ParseProblem(
            self.path,
            self.line,
            f"possible secret ({self.rule}) replaced by '{MASK.format(rule=self.rule)}' before "
            f"ingesting; remove it from the file, or allow it with '{ALLOW_MARK}' on the line "
            f"or a '{self.path} {self.rule}' line in {ALLOW_FILE}",
            severity="warning",
        )


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_looking(value: str) -> bool:
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    return (
        classes >= _MIN_CLASSES
        and entropy(value) >= _MIN_ENTROPY
        and not _IDENTIFIER.fullmatch(value)
    )


@dataclass(frozen=True, slots=True)
class Allowlist:
    """Files (globs) and file/rule pairs where findings are expected."""

    entries: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def load(cls, root: Path) -> Allowlist:
        text = read_project_text(root, Path(ALLOW_FILE), errors="replace")
        if text is None:
            return cls()
        entries: list[tuple[str, str | None]] = []
        for raw in text.splitlines():
            parts = raw.split("#", 1)[0].split()
            if parts:
                entries.append((parts[0], parts[1] if len(parts) > 1 else None))
        return cls(tuple(entries))

    def allows(self, path: str, rule: str) -> bool:
        return any(
            fnmatch.fnmatchcase(path, glob) and (wanted is None or wanted == rule)
            for glob, wanted in self.entries
        )


def scan_text(path: str, text: str, allow: Allowlist | None = None) -> list[SecretFinding]:
    """Secrets in ``text`` (the file ``path``), one finding per line and rule."""
    allow = allow or Allowlist()
    found: list[SecretFinding] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if ALLOW_MARK in line:
            continue
        rules = {rule for rule, pattern in _RULES if pattern.search(line)}
        if "private-key" in rules and not _key_body(lines, number - 1):
            rules.discard("private-key")  # a placeholder header (docs, templates): no key
        # The generic rule only where no specific one said what the secret is.
        if not rules and any(_random_looking(m.group(1)) for m in _ASSIGNMENT.finditer(line)):
            rules.add("high-entropy-assignment")
        found += [
            SecretFinding(path, number, rule)
            for rule in sorted(rules)
            if not allow.allows(path, rule)
        ]
    return found


_KEY_BODY = re.compile(r"[A-Za-z0-9+/]{40,}")
_KEY_LINES = 100  # a 4096-bit RSA key's PEM body is ~50 lines


def _key_body(lines: list[str], index: int) -> bool:
    """Whether the private key whose BEGIN line is ``lines[index]`` has a body: a run of
    base64 after the header on its line (a key inside a JSON string) or on the lines that
    follow, up to its END line. A header alone, or with ``...`` under it, is a placeholder."""
    begin = _RULES[0][1].search(lines[index])
    rest = [lines[index][begin.end() :]] if begin else []
    for line in lines[index + 1 : index + 1 + _KEY_LINES]:
        rest.append(line)
        if _KEY_END.search(line):
            break
    return any(_KEY_BODY.search(_KEY_END.split(part)[0]) for part in rest)


def mask_text(
    path: str, text: str, allow: Allowlist | None = None
) -> tuple[str, list[SecretFinding]]:
    """``text`` with every secret :func:`scan_text` finds replaced by :data:`MASK`, and the
    findings. A token is replaced where it stands; a private key from its BEGIN line through
    its END line (to the end of the text if there is none), since its body is the secret: the
    marker on its first line, the others left blank, so the file keeps its line numbers."""
    findings = scan_text(path, text, allow)
    if not findings:
        return text, []
    lines = text.splitlines(keepends=True)
    by_line: dict[int, set[str]] = {}
    for f in findings:
        by_line.setdefault(f.line, set()).add(f.rule)
    out: list[str] = []
    in_key = False
    for number, line in enumerate(lines, start=1):
        rules = by_line.get(number, set())
        if in_key or "private-key" in rules:
            ending = "\n" if line.endswith("\n") else ""
            # the key's other lines blank, so every line after it keeps its number
            out.append(ending if in_key else MASK.format(rule="private-key") + ending)
            in_key = not _KEY_END.search(line)
            continue
        for rule, pattern in _RULES:
            if rule in rules:
                line = pattern.sub(functools.partial(_mask_group, rule=rule), line)
        if "high-entropy-assignment" in rules:
            line = _ASSIGNMENT.sub(
                lambda m: (
                    _mask_group(m, "high-entropy-assignment")
                    if _random_looking(m.group(1))
                    else m.group(0)
                ),
                line,
            )
        out.append(line)
    return "".join(out), findings


def _mask_group(match: re.Match[str], rule: str) -> str:
    """The match with its first group (the secret) replaced; the whole match if no group."""
    if match.re.groups == 0:
        return MASK.format(rule=rule)
    start, end = match.span(1)
    whole = match.group(0)
    offset = match.start(0)
    return whole[: start - offset] + MASK.format(rule=rule) + whole[end - offset :]


def scan_files(root: Path, relpaths: Iterable[str]) -> list[SecretFinding]:
    """:func:`scan_text` of each readable file under ``root`` (unreadable ones are lint's)."""
    allow = Allowlist.load(root)
    found: list[SecretFinding] = []
    for rel in relpaths:
        text = read_project_text(root, Path(rel))  # never a FIFO, a device or outside root
        if text is not None:
            found += scan_text(rel, text, allow)
    return found
