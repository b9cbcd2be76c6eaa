"""The domain dictionaries shipped with kg: topic -> words that point at it.

A project adds its own under ``directives: topics:`` in its schema map
(:mod:`kg.directives.config`). Words are matched on word boundaries, case-insensitively, in a
task text, a diff, path segments and rule statements; a multi-word entry matches as a phrase.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from kg.directives.config import DEFAULT_CONFIG, DirectiveConfig

TOPICS: dict[str, tuple[str, ...]] = {
    "security": ("security", "secure", "secret", "secrets", "credential", "credentials",
                 "vulnerability", "xss", "csrf", "injection", "sanitize", "sanitise", "encrypt",
                 "encryption", "encrypted", "tls", "owasp", "api key", "api keys", "password",
                 "passwords", "hash", "hashing", "hmac", "signature", "user input",
                 "untrusted input"),
    "auth": ("auth", "authentication", "authorization", "authorisation", "login", "logout",
             "sign in", "sign-in", "sign-ins", "signin", "sign out", "session", "sessions",
             "oauth", "jwt", "token", "tokens", "permission", "permissions", "role", "roles",
             "rbac", "sso", "lockout", "2fa", "mfa", "passkey", "passkeys"),
    "testing": ("test", "tests", "testing", "pytest", "jest", "vitest", "unit test",
                "integration test", "fixture", "fixtures", "mock", "mocks", "coverage",
                "assert", "assertion", "e2e", "snapshot"),
    "database": ("database", "db", "sql", "query", "queries", "postgres", "postgresql",
                 "mysql", "sqlite", "schema", "table", "tables", "index", "indexes",
                 "transaction", "transactions", "orm", "sqlalchemy", "prisma", "repository",
                 "repositories", "column", "columns", "report query"),
    "migrations": ("migration", "migrations", "alembic", "migrate", "schema change",
                   "flyway", "liquibase", "ddl"),
    "api": ("api", "endpoint", "endpoints", "rest", "http", "route", "routes", "request",
            "response", "status code", "graphql", "openapi", "controller", "handler",
            "pagination", "webhook", "webhooks"),
    "errors": ("error", "errors", "exception", "exceptions", "raise", "retry", "retries",
               "failure", "fallback", "panic", "traceback", "error handling"),
    "logging": ("log", "logs", "logging", "logger", "observability", "metrics", "tracing",
                "telemetry", "monitoring", "alert", "alerts"),
    "performance": ("performance", "latency", "throughput", "slow", "fast", "faster",
                    "speed", "speed up", "cache",
                    "caching", "benchmark", "benchmarks", "optimize", "optimise", "n+1",
                    "batch", "memory", "profiling"),
    "ui": ("ui", "frontend", "component", "components", "css", "style", "styles", "layout",
           "button", "form", "forms", "react", "vue", "svelte", "accessibility", "a11y",
           "tailwind", "page", "screen"),
    "docs": ("docs", "documentation", "readme", "docstring", "docstrings", "comment",
             "comments", "changelog", "adr", "guide"),
    "deployment": ("deploy", "deployment", "release", "ci", "cd", "pipeline", "docker",
                   "dockerfile", "kubernetes", "k8s", "helm", "terraform", "github actions",
                   "workflow", "container", "infrastructure", "rollback"),
    "dependencies": ("dependency", "dependencies", "package", "packages", "library",
                     "libraries", "npm", "pip", "cargo", "go.mod", "pyproject", "lockfile",
                     "version pin", "upgrade"),
    "style": ("format", "formatting", "lint", "linter", "ruff", "eslint", "prettier", "black",
              "naming", "typing", "type hints", "types", "mypy", "typescript strict",
              "code style", "import", "imports"),
    "git": ("git", "commit", "commits", "branch", "branches", "rebase", "merge",
            "pull request", "pr", "code review"),
    "concurrency": ("concurrency", "concurrent", "async", "await", "thread", "threads",
                    "lock", "locks", "race", "goroutine", "goroutines", "parallel", "asyncio",
                    "mutex", "channel", "channels", "semaphore", "pool", "deadlock"),
    "privacy": ("privacy", "pii", "gdpr", "personal data", "consent", "retention",
                "anonymise", "anonymize", "redact", "redaction"),
    "notifications": ("notification", "notifications", "email", "emails", "sms", "reminder",
                      "reminders", "digest", "unsubscribe", "push notification", "newsletter"),
    "jobs": ("job", "jobs", "worker", "workers", "queue", "queues", "scheduled", "scheduler",
             "cron", "background", "dead-letter", "every morning", "nightly", "daily"),
    "validation": ("validation", "validate", "validates", "validated", "validating",
                   "validator", "validators", "invalid", "input validation"),
    "payments": ("payment", "payments", "invoice", "invoices", "billing", "refund",
                 "refunds", "charge", "charges", "stripe", "currency", "money", "price"),
}  # fmt: skip


@lru_cache(maxsize=16)
def _matcher(config: DirectiveConfig) -> tuple[re.Pattern[str], dict[str, str]]:
    """One pattern over every word (longest first, so the longest match wins where words
    overlap: "API keys" is security, not also api) and the topic each word counts for (a word
    in two dictionaries counts for the first by name)."""
    merged: dict[str, set[str]] = {t: set(ws) for t, ws in TOPICS.items()}
    for topic, extra in config.topics:
        merged.setdefault(topic, set()).update(extra)
    owner: dict[str, str] = {}
    for topic, words in sorted(merged.items()):
        for word in sorted(words):
            owner.setdefault(word.casefold(), topic)
    ordered = sorted(owner, key=lambda w: (-len(w), w))
    alternation = "|".join(re.escape(w) for w in ordered)
    pattern = re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])", re.IGNORECASE)
    return pattern, owner


@lru_cache(maxsize=8192)
def _hits(text: str, config: DirectiveConfig) -> tuple[tuple[str, int], ...]:
    pattern, owner = _matcher(config)
    seen: set[str] = set()
    found: Counter[str] = Counter()
    for match in pattern.finditer(text):
        word = match.group(0).casefold()
        key = word.removesuffix("s")
        if key not in seen:  # "invoice" three times is one word of evidence
            seen.add(key)
            found[owner[word]] += 1
    return tuple(sorted(found.items()))


def topic_hits(text: str, config: DirectiveConfig = DEFAULT_CONFIG) -> Counter[str]:
    """``topic -> number of its distinct words found`` in ``text`` (absent: none found).

    Rule files repeat their section headings and descriptions for every statement, so the
    answer for a text is kept (an LRU of a few thousand texts).
    """
    return Counter(dict(_hits(text, config)))


def topics_of(texts: Iterable[str], config: DirectiveConfig = DEFAULT_CONFIG) -> tuple[str, ...]:
    found: Counter[str] = Counter()
    for text in texts:
        found.update(topic_hits(text, config))
    return tuple(sorted(found))


def normalise_topic(value: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", value.strip().casefold()).strip("-")[:64]
