"""Secrets caught before they land: ingestion replaces them by a marker and keeps the rest of
the file, ``kg lint`` reports them, and neither ever prints the secret itself."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from kg.ingest.secrets import ALLOW_FILE, mask_text, scan_text
from kg.ingest.service import ingest_paths, lint_files
from kg.runtime import Runtime
from tests.ingest.conftest import Writer

# Built at run time so the repository itself holds no token a scanner would flag.
AWS_KEY = "AKIA" + "Q3EXAMPLE7KGTEST"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PASSWORD_LINE = 'db_password = "' + "Zx8#qLm2!vR9tW4pK7" + '"'
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----"
KEY_BODY = "MIIEowIBAAKCAQEAw1" + "x" * 46


def test_each_rule_names_file_line_and_rule_never_the_secret() -> None:
    text = "\n".join(
        ["# Setup", f"key id {AWS_KEY}", f"token: {GITHUB}", PASSWORD_LINE, PEM, KEY_BODY,
         "plain prose"]
    )  # fmt: skip
    findings = scan_text("docs/setup.md", text)
    assert [(f.line, f.rule) for f in findings] == [
        (2, "aws-access-key-id"),
        (3, "github-token"),
        (4, "high-entropy-assignment"),
        (5, "private-key"),
    ]
    for f in findings:
        message = str(f.problem())
        assert message.startswith(f"docs/setup.md:{f.line}: possible secret ({f.rule})")
        for secret in (AWS_KEY, GITHUB, "Zx8#qLm2", AWS_KEY[:8]):
            assert secret not in message


def test_a_private_key_header_without_a_key_is_a_placeholder_not_a_secret() -> None:
    """Issue 30 item 10: docs and templates show where a key goes."""
    end = "-----END " + "RSA PRIVATE KEY-----"
    for text in (
        f"Paste yours:\n\n{PEM}\n...\n{end}\n",
        f"Paste yours:\n\n{PEM}\n<your key here>\n{end}\n",
        f"A header alone: {PEM}\n\nthen prose.\n",
        f'{{"private_key": "{PEM}\\n<key>\\n{end}"}}',
    ):
        assert scan_text("docs/setup.md", text) == [], text
    inline = f'{{"private_key": "{PEM}\\n{KEY_BODY}\\n{end}"}}'
    assert [f.rule for f in scan_text("creds.json", inline)] == ["private-key"]


def test_prose_and_low_entropy_assignments_are_not_secrets() -> None:
    text = (
        "The password = must be rotated monthly by the operator.\n"
        "token: see-the-vault-for-this\n"
        "api_key = PLACEHOLDER_PLACEHOLDER\n"
    )
    assert scan_text("docs/ops.md", text) == []


def test_inline_mark_and_allowlist_file(write: Writer, tmp_path: Path) -> None:
    write("docs/a.md", f"# A\n\nexample {AWS_KEY} <!-- kg:allow-secret -->\n")
    write("docs/fixtures/b.md", f"# B\n\n{GITHUB}\n")
    write("docs/c.md", f"# C\n\n{GITHUB}\n\n{AWS_KEY}\n")
    write(ALLOW_FILE, "docs/fixtures/*  # test keys\ndocs/c.md github-token\n")
    problems = [p for p in lint_files(tmp_path) if "possible secret" in p.message]
    assert [(p.path, p.line) for p in problems] == [("docs/c.md", 5)]
    assert "aws-access-key-id" in problems[0].message


def test_masking_replaces_each_secret_and_only_the_secret() -> None:
    key_body = "MIIEowIBAAKCAQEAw1" + "x" * 40
    text = "\n".join(
        [
            "# Setup",
            f"curl -H 'Authorization: Bearer {GITHUB}' https://api.example.com",
            PASSWORD_LINE,
            PEM,
            key_body,
            "-----END " + "RSA PRIVATE KEY-----",
            "after the key",
        ]
    )
    masked, findings = mask_text("docs/setup.md", text)
    assert [(f.line, f.rule) for f in findings] == [
        (2, "github-token"),
        (3, "high-entropy-assignment"),
        (4, "private-key"),
    ]
    assert masked.splitlines() == [
        "# Setup",
        "curl -H 'Authorization: Bearer [secret removed: github-token]' https://api.example.com",
        'db_password = "[secret removed: high-entropy-assignment]"',
        "[secret removed: private-key]",
        "",
        "",
        "after the key",
    ], "the same line numbers after the key"
    assert mask_text("docs/clean.md", "# Clean\n\nno key here\n") == (
        "# Clean\n\nno key here\n",
        [],
    )


async def test_ingest_removes_the_secret_and_keeps_the_file(
    runtime: Runtime, app_pool: asyncpg.Pool
) -> None:
    root = runtime.settings.project_root
    (root / "docs").mkdir()
    (root / "docs/clean.md").write_text("# Clean\n\nNothing to hide.\n")
    (root / "docs/leak.md").write_text(f"# Leak\n\n## Deploy\n\naws key {AWS_KEY}\n")
    report = await ingest_paths(runtime, ["docs"])
    assert report.rejected == [] and report.errors == []
    assert report.masked == ["docs/leak.md"]
    assert [str(p) for p in report.problems] == [
        "docs/leak.md:5: possible secret (aws-access-key-id) replaced by '[secret removed: "
        "aws-access-key-id]' before ingesting; remove it from the file, or allow it with "
        "'kg:allow-secret' on the line or a 'docs/leak.md aws-access-key-id' line in "
        ".kg-secrets-allow"
    ]
    assert "1 with a secret removed" in report.summary()
    async with app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", runtime.scope.tenant_id)
        ids = await conn.fetch("SELECT node_id FROM kg_nodes ORDER BY node_id")
        assert [r["node_id"] for r in ids] == [
            "document:docs/clean.md",
            "document:docs/leak.md",
            "section:docs/clean.md#clean",
            "section:docs/leak.md#deploy",
            "section:docs/leak.md#leak",
        ]
        deploy = await conn.fetchval(
            "SELECT content FROM kg_nodes WHERE node_id = 'section:docs/leak.md#deploy'"
        )
        assert "aws key [secret removed: aws-access-key-id]" in deploy
        stored = (
            "SELECT (SELECT count(*) FROM kg_events WHERE payload::text LIKE $1) "
            "+ (SELECT count(*) FROM kg_event_content WHERE body LIKE $1)"
        )
        assert await conn.fetchval(stored, f"%{AWS_KEY}%") == 0

    allowed = await ingest_paths(runtime, ["docs/leak.md"], allow_secrets=True)
    assert allowed.masked == [] and allowed.problems == []
    async with app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", runtime.scope.tenant_id)
        assert await conn.fetchval(stored, f"%{AWS_KEY}%") == 1, "the check sees it once in"


def test_the_pre_commit_lint_refuses_a_staged_secret(tmp_path: Path) -> None:
    from kg.ingest.staged import lint_staged
    from tests.ingest.gitrepo import Repo

    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# A\n\nclean\n")
    repo.commit()
    repo.write("docs/a.md", f"# A\n\nclean\n\n{GITHUB}\n")
    repo.git("add", "docs/a.md")
    found = [str(p) for p in lint_staged(tmp_path)]
    assert len(found) == 1 and found[0].startswith("docs/a.md:5: possible secret (github-token)")
    assert GITHUB not in found[0]


def test_a_name_in_code_assigned_to_a_secret_looking_key_is_no_secret() -> None:
    text = "\n".join(
        [
            '    "tokenBudget": self.token_budget,',
            "    api_key = settings.openai_api_key",
            "    password: str = config.db_password",
            '    "GIT_AUTHOR_EMAIL": "bench@example.com",',
        ]
    )
    assert scan_text("kg/memory/read.py", text) == []
    assert [f.rule for f in scan_text("a.py", PASSWORD_LINE)] == ["high-entropy-assignment"]
