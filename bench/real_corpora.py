"""The real dev-set repositories (issue 31): extracted from ``../shared/corpora`` at run time,
made a git work tree as a user's clone is, and ingested with ``kg ingest .`` as a user would,
into a database kept between runs.

The corpora's text never enters this repository: the archives are data, read from
``KG_DEV_CORPORA`` (default ``/work/shared/corpora``) and extracted under ``/tmp``.

A kept database is named after the corpus and a fingerprint of what the ingested graph depends
on (the archive, the ingest/projection/embedding code, the embedder). When the fingerprint
changes, a new database is ingested from scratch, its embedding cache first seeded from the
corpus's older database: content-addressed vectors do not depend on the ingest code, so a
ranking or parsing change re-ingests in the time parsing takes, not the model's.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
from pathlib import Path

ARCHIVES = Path(os.environ.get("KG_DEV_CORPORA", "/work/shared/corpora"))
EXTRACTED = Path(os.environ.get("KG_DEV_CORPORA_DIR", "/tmp/kg-dev-corpora"))
REAL_CORPORA = ("bmad-docvet", "speckit-deacon", "adr-buy-for-your-school", "agents-beads")
TENANT = os.environ.get("KG_REAL_TENANT", "real")
# An already ingested database per corpus, instead of the kept one (e.g. ingested by hand on
# another server): a URL with ``{corpus_}`` for the corpus name with underscores.
GIVEN_DATABASE = os.environ.get("KG_REAL_DATABASE_URL")
CODE = Path(__file__).resolve().parent.parent
_INGEST_CODE = (
    "kg/ingest", "kg/parsed", "kg/projections", "kg/embeddings", "kg/events", "kg/directives",
    "kg/languages.py", "kg/passages.py",
)  # fmt: skip


def available() -> str | None:
    """None when every archive is there, else why the real corpora cannot run."""
    missing = [c for c in REAL_CORPORA if not (ARCHIVES / f"{c}.tar.gz").is_file()]
    return f"real dev corpora missing in {ARCHIVES}: {', '.join(missing)}" if missing else None


def extract(corpus: str, into: Path = EXTRACTED) -> Path:
    """The corpus as a git work tree (extracted once per archive version)."""
    archive = ARCHIVES / f"{corpus}.tar.gz"
    stamp = into / f"{corpus}.extracted"
    version = f"{archive.stat().st_size}:{archive.stat().st_mtime_ns}"
    root = into / corpus
    if stamp.is_file() and stamp.read_text() == version and root.is_dir():
        return root
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(root)], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "import"], cwd=root, check=True)
    stamp.write_text(version)
    return root


def fingerprint(corpus: str, embedder_id: str) -> str:
    """What an ingested corpus depends on: the archive, the ingest code, the embedder."""
    archive = ARCHIVES / f"{corpus}.tar.gz"
    digest = hashlib.sha256(f"{embedder_id}:{archive.stat().st_size}".encode())
    for part in _INGEST_CODE:
        where = CODE / part
        for path in [where] if where.is_file() else sorted(where.rglob("*.py")):
            digest.update(str(path.relative_to(CODE)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def database_name(corpus: str, fp: str) -> str:
    return f"kg_real_{corpus.replace('-', '_')}_{fp}"


def kept_ingested(corpus: str, embedder_id: str) -> str:
    """The URL of ``corpus`` ingested whole by ``kg ingest .`` with the current code."""
    if GIVEN_DATABASE:
        return GIVEN_DATABASE.format(corpus_=corpus.replace("-", "_"))
    import psycopg
    from common import COMPLETE, _server, mark_complete

    from kg.db import migrate
    from kg.db.urls import asyncpg_url, with_database

    server = _server(keep=True)
    name = database_name(corpus, fingerprint(corpus, embedder_id))
    prefix = database_name(corpus, "")
    with psycopg.connect(asyncpg_url(server), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database "
            "WHERE datname LIKE %s ORDER BY datname",
            (prefix + "%",),
        ).fetchall()
        done = {r[0] for r in rows if r[1] == COMPLETE}
        if name in done:
            url = with_database(server, name)
            migrate.upgrade(url)
            return url
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    url = with_database(server, name)
    migrate.upgrade(url)
    older = sorted(done - {name})
    if older:
        _seed_embedding_cache(with_database(server, older[-1]), url)
    root = extract(corpus)
    env = {
        **os.environ,
        "KG_DATABASE_URL": url,
        "KG_TENANT": TENANT,
        "KG_PROJECT": corpus,
        "PYTHONPATH": str(CODE),
    }
    print(f"  ingesting {corpus} with `kg ingest .` into {name} ...", flush=True)
    subprocess.run(["kg", "ingest", "."], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    mark_complete(url, name)
    with psycopg.connect(asyncpg_url(server), autocommit=True) as conn:
        for old in older:
            conn.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')  # type: ignore[arg-type]
    return url


def _seed_embedding_cache(source: str, target: str) -> None:
    """Copy the content-addressed vectors of an older ingest of the same corpus."""
    import psycopg

    from kg.db.urls import asyncpg_url

    with (
        psycopg.connect(asyncpg_url(source)) as src,
        psycopg.connect(asyncpg_url(target)) as dst,
        src.cursor().copy("COPY embedding_cache TO STDOUT (FORMAT binary)") as out,
        dst.cursor().copy("COPY embedding_cache FROM STDIN (FORMAT binary)") as into,
    ):
        for block in out:
            into.write(block)
