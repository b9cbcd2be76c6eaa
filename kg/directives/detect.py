"""``detect_context``: a task (text, files in play, a diff) -> layer, topics, technologies.

Each finding carries its evidence and a confidence in 0..1:

* **layer**: every file votes for the layer its path convention names (the project's own,
  from the schema map, before the built-in ones below), and words of the task vote at half
  weight. The layer's confidence is its share of the votes, damped when there are few
  (``share * min(1, 0.5 + 0.25 * votes)``). Below 0.6 the candidates are listed with a warning.
* **topics**: the shipped domain dictionaries (:mod:`kg.directives.topics`) over the task, the
  diff's changed lines and the paths' words.
* **technologies**: languages and frameworks from manifests and file extensions
  (:mod:`kg.directives.manifests`).

The overall confidence weighs the layer (0.4), the topics (0.4) and the technologies (0.2);
below 0.3 the result carries a prominent warning (and directives are still served).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg.directives.config import DEFAULT_CONFIG, DirectiveConfig
from kg.directives.globs import compile_glob
from kg.directives.manifests import read_technologies
from kg.directives.topics import topic_hits

AMBIGUOUS_BELOW = 0.6
LOW_CONFIDENCE_BELOW = 0.3

#: Built-in path conventions. File names first (a test file is a test wherever it lives),
#: then the folders of the path from the innermost out: in ``api/jobs/reminders.py`` the
#: ``jobs`` folder says more than the ``api`` service it belongs to.
FILE_CONVENTIONS: tuple[tuple[str, str, str], ...] = (
    ("tests", "{test_*.py,*_test.py,*_test.go,*.test.*,*.spec.*,conftest.py}", "5-Tests"),
    ("persistence", "*.sql", "4-Persistence"),
    ("deployment", "{Dockerfile,docker-compose*.yml,*.tf,Makefile,Chart.yaml}", "7-Deployment"),
    ("docs", "*.{md,rst,adoc}", "6-Docs"),
    ("ui", "*.{tsx,jsx,vue,svelte,css,scss,html}", "1-Presentation"),
)
FOLDER_CONVENTIONS: tuple[tuple[str, frozenset[str], str], ...] = (
    ("tests", frozenset({"test", "tests", "__tests__", "spec", "e2e"}), "5-Tests"),
    ("migrations", frozenset({"migrations", "alembic", "migrate"}), "4-Persistence"),
    ("persistence", frozenset({"repositories", "repository", "repos", "dao", "persistence",
                               "db", "database", "queries"}), "4-Persistence"),
    ("deployment", frozenset({"workflows", "deploy", "deployment", "k8s", "helm", "terraform",
                              "infra", "ops", ".github"}), "7-Deployment"),
    ("docs", frozenset({"docs", "doc", "adr"}), "6-Docs"),
    ("api", frozenset({"api", "apis", "routes", "routers", "controllers", "handlers",
                       "endpoints", "views"}), "1-Presentation"),
    ("ui", frozenset({"ui", "components", "pages", "screens", "frontend", "templates",
                      "styles"}), "1-Presentation"),
    ("application", frozenset({"services", "service", "usecases", "use_cases", "application",
                               "commands", "jobs", "workers", "tasks"}), "2-Application"),
    ("domain", frozenset({"domain", "entities", "models", "model", "core"}), "3-Domain"),
)  # fmt: skip
#: The topic a path convention is evidence of.
CONVENTION_TOPICS = {
    "tests": "testing", "migrations": "migrations", "persistence": "database",
    "deployment": "deployment", "docs": "docs", "api": "api", "ui": "ui",
}  # fmt: skip
#: A top-level folder named like a layer (``api/``, ``web/``) is usually a service of a
#: monorepo; it names the layer only for these conventions.
TOP_LEVEL_CONVENTIONS = frozenset({"tests", "migrations", "deployment", "docs"})
_FILE_RES = tuple((name, compile_glob(glob), layer) for name, glob, layer in FILE_CONVENTIONS)

#: Words of a task that point at a layer (a vote of half a file's weight).
LAYER_WORDS: dict[str, tuple[str, ...]] = {
    "1-Presentation": ("endpoint", "route", "controller", "handler", "ui", "page", "screen",
                       "component", "button", "form", "css", "frontend", "view", "http",
                       "api response", "status code", "template"),
    "2-Application": ("service", "use case", "usecase", "workflow", "orchestrate", "command",
                      "job", "worker", "application service"),
    "3-Domain": ("domain", "entity", "entities", "aggregate", "value object", "business rule",
                 "invariant", "model"),
    "4-Persistence": ("database", "migration", "sql", "query", "table", "index", "repository",
                      "schema", "column", "transaction", "orm"),
    "5-Tests": ("test", "tests", "testing", "pytest", "jest", "fixture", "coverage", "flaky",
                "assertion", "unit test"),
    "6-Docs": ("docs", "documentation", "readme", "docstring", "changelog", "guide"),
    "7-Deployment": ("deploy", "deployment", "release", "docker", "ci", "pipeline",
                     "kubernetes", "helm", "terraform", "rollback", "github actions"),
}  # fmt: skip
_LAYER_RES = {
    layer: re.compile(
        r"(?<![\w-])(?:"
        + "|".join(re.escape(w) for w in sorted(ws, key=len, reverse=True))
        + r")(?![\w-])",
        re.IGNORECASE,
    )
    for layer, ws in LAYER_WORDS.items()
}
_DIFF_FILE = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", re.M)
_DIFF_GIT = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)


@dataclass
class Finding:
    value: str
    confidence: float
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "confidence": round(self.confidence, 3),
                "evidence": self.evidence[:10]}  # fmt: skip


@dataclass
class DetectedContext:
    layer: str | None
    layer_confidence: float
    layer_candidates: list[Finding]
    topics: list[Finding]
    languages: list[Finding]
    frameworks: list[Finding]
    path_layers: list[dict[str, str]]
    paths: list[str]
    confidence: float
    warnings: list[str]

    @property
    def topic_names(self) -> tuple[str, ...]:
        return tuple(t.value for t in self.topics)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "layer_confidence": round(self.layer_confidence, 3),
            "layer_candidates": [c.to_dict() for c in self.layer_candidates],
            "topics": [t.to_dict() for t in self.topics],
            "languages": [t.to_dict() for t in self.languages],
            "frameworks": [t.to_dict() for t in self.frameworks],
            "path_layers": self.path_layers,
            "paths": self.paths,
            "confidence": round(self.confidence, 3),
            "warnings": self.warnings,
        }

    def summary(self) -> dict[str, Any]:
        """What a served set of directives records of its context (kept small for the log)."""
        return {
            "layer": self.layer,
            "layer_confidence": round(self.layer_confidence, 3),
            "topics": list(self.topic_names),
            "languages": [f.value for f in self.languages],
            "frameworks": [f.value for f in self.frameworks],
            "confidence": round(self.confidence, 3),
        }


def diff_paths(diff: str) -> list[str]:
    """The files a unified diff touches (``/dev/null`` left out)."""
    found = [b for _, b in _DIFF_GIT.findall(diff)] + _DIFF_FILE.findall(diff)
    return [p for p in dict.fromkeys(found) if p != "/dev/null"]


def _diff_text(diff: str) -> str:
    return "\n".join(
        line[1:] for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )  # fmt: skip


def detect_context(
    root: Path,
    *,
    task: str = "",
    paths: list[str] | tuple[str, ...] = (),
    diff: str = "",
    config: DirectiveConfig = DEFAULT_CONFIG,
    layer: str | None = None,
    topics: list[str] | tuple[str, ...] = (),
    manifests: bool = True,
) -> DetectedContext:
    """Detect the context of a task. ``layer``/``topics`` given by the caller win (confidence
    1.0) over what is detected. Paths are project-relative POSIX paths. ``manifests=False``
    reads no file (technologies come from the paths' extensions only)."""
    all_paths = list(dict.fromkeys([p.strip().lstrip("./") for p in paths if p.strip()]
                                   + diff_paths(diff)))  # fmt: skip
    votes: dict[str, float] = {}
    evidence: dict[str, list[str]] = {}
    path_layers: list[dict[str, str]] = []
    for path in all_paths:
        found = _path_layer(path, config)
        if found is not None:
            convention, value = found
            votes[value] = votes.get(value, 0.0) + 1.0
            evidence.setdefault(value, []).append(f"path {path} ({convention})")
            path_layers.append({"path": path, "layer": value, "convention": convention})
    words_text = task + "\n" + _diff_text(diff)
    for value, pattern in _LAYER_RES.items():
        words = sorted({m.casefold() for m in pattern.findall(task)})
        if words:
            votes[value] = votes.get(value, 0.0) + 0.5 * min(len(words), 2)
            evidence.setdefault(value, []).append(f"task words {', '.join(words)}")
    total = sum(votes.values())
    candidates = [
        Finding(v, n / total * min(1.0, 0.5 + 0.25 * total), evidence[v])
        for v, n in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    warnings: list[str] = []
    if layer:
        chosen, layer_conf = layer, 1.0
        candidates = [Finding(layer, 1.0, ["given by the caller"])]
    elif candidates:
        chosen, layer_conf = candidates[0].value, candidates[0].confidence
        if layer_conf < AMBIGUOUS_BELOW:
            shown = ", ".join(f"{c.value} ({c.confidence:.2f})" for c in candidates[:3])
            warnings.append(
                f"the layer is ambiguous ({shown}): give the files in play or the layer"
            )
    else:
        chosen, layer_conf = None, 0.0
    topic_text = words_text + "\n" + "\n".join(_path_words(p) for p in all_paths)
    hits = topic_hits(topic_text, config)
    for convention in {p["convention"] for p in path_layers}:
        topic = CONVENTION_TOPICS.get(convention)
        if topic is not None:  # a file under migrations/ is evidence of the topic too
            hits[topic] += 1
    if topics:
        found_topics = [Finding(t, 1.0, ["given by the caller"]) for t in topics]
    else:
        # One word is a mention (0.5), two are a theme (0.75), three or more the subject.
        found_topics = [
            Finding(t, 1 - 0.5**n, [f"{n} word(s) of the '{t}' dictionary"])
            for t, n in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))
        ][:6]
    tech = read_technologies(root, all_paths, manifests=manifests)
    languages = [
        Finding(k, min(1.0, 0.5 + 0.25 * len(v)), v) for k, v in sorted(tech.languages.items())
    ]
    frameworks = [
        Finding(k, min(1.0, 0.5 + 0.25 * len(v)), v) for k, v in sorted(tech.frameworks.items())
    ]
    topic_conf = (
        0.0
        if not found_topics
        else min(1.0, 0.3 + 0.15 * sum(hits.values()))
        if not topics
        else 1.0
    )
    tech_conf = 1.0 if (languages or frameworks) else 0.0
    confidence = round(0.4 * layer_conf + 0.4 * topic_conf + 0.2 * tech_conf, 3)
    if confidence < LOW_CONFIDENCE_BELOW:
        warnings.insert(
            0,
            f"LOW CONFIDENCE ({confidence:.2f}): little in the task says where it applies; the "
            "directives below are a best guess. Give the files in play, a diff or a fuller task.",
        )
    return DetectedContext(
        layer=chosen, layer_confidence=layer_conf, layer_candidates=candidates,
        topics=found_topics, languages=languages, frameworks=frameworks,
        path_layers=path_layers, paths=all_paths, confidence=confidence, warnings=warnings,
    )  # fmt: skip


def _path_layer(path: str, config: DirectiveConfig) -> tuple[str, str] | None:
    own = config.path_layer(path)
    if own is not None:
        return f"schema map {own[0]}", own[1]
    for name, pattern, value in _FILE_RES:
        if pattern.fullmatch(path):
            return name, value
    folders = path.split("/")[:-1]
    for depth in range(len(folders) - 1, -1, -1):
        for name, names, value in FOLDER_CONVENTIONS:
            if folders[depth].casefold() in names and (depth or name in TOP_LEVEL_CONVENTIONS):
                return name, value
    return None


def _path_words(path: str) -> str:
    """The words of a path that say what it is about: its file name and its folder."""
    parts = path.split("/")[-2:]
    parts[-1] = parts[-1].rsplit(".", 1)[0]
    return " ".join(re.split(r"[_.\-]", " ".join(parts)))
