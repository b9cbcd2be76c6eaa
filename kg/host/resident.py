"""The ``kg`` command's client side of the resident command host.

Most of a short command's wall clock is not its work: it is Python's start-up and importing
kg (pydantic's event models, the parsers' patterns, asyncpg, Typer). While the project's
embedded server is kept warm, its idle watchdog also keeps a warm interpreter with those
modules imported (:mod:`kg.host.resident_host`), listening on a Unix socket in ``.kg/``. The
``kg`` entry point asks it to run the command line: it passes its standard input, output and
error (the descriptors themselves, so a terminal stays a terminal), its arguments, working
folder, environment and umask; the host forks a child that becomes the command and reports
its exit status. Ctrl-C and termination are forwarded to the child.

Whenever that is not possible (no host, another kg's code, a closed descriptor, any error
before the command started) the command runs in this process as before: the host is only a
shortcut, never a second implementation. This module imports only the standard library: it
runs before anything else on every command.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import struct
import sys
from pathlib import Path

from kg.paths import STATE_DIR_NAME, find_project_root

RESIDENT_ENV = "KG_RESIDENT"  # "0" runs every command in its own process
SOCKET_NAME = "kg-commands.sock"
# Commands that never go through the host: the MCP server is a long-lived process of its own,
# `kg server` manages the server (and so the host) itself, and `kg watch` lives as long as a
# developer's session.
IN_PROCESS = frozenset({"mcp", "server", "watch"})
TIMEOUT_ENV = "KG_HOST_TIMEOUT"
_DEFAULT_TIMEOUT = 2.0
#: the ``ulimit``s a command keeps when the host runs it (see :func:`caller_limits`)
LIMITS = (
    "RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NOFILE",
    "RLIMIT_STACK", "RLIMIT_MEMLOCK", "RLIMIT_NPROC",
)  # fmt: skip
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
_PACKAGES = ("kg", "mcp_server", "migrations", "backfill")

STARTED, EXITED, STALE, READY = b"P", b"X", b"S", b"R"
_HEADER = struct.Struct("!I")
_STATUS = struct.Struct("!ci")
_PEERCRED = struct.Struct("3i")


def socket_path(state_dir: Path) -> Path:
    """Where the host of ``state_dir`` listens: in the folder itself, or (when that path is
    too long for a Unix socket) in a private folder of the temporary directory."""
    path = state_dir / SOCKET_NAME
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        return path
    import hashlib
    import tempfile

    digest = hashlib.sha256(os.fsencode(state_dir.resolve())).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"kg-{os.getuid()}" / f"{digest}.sock"


def folder_problem(folder: Path, *, private: bool) -> str | None:
    """Why ``folder`` cannot hold this user's command socket, or None. It must be a real
    folder (not a symlink) owned by this user; a ``private`` one (the shared temporary
    directory's ``kg-<uid>``, which anyone could have created first) must be mode 0700, and
    the project's ``.kg`` must at least not be writable by everyone."""
    try:
        info = os.lstat(folder)
    except OSError as error:
        return f"{folder} cannot be checked ({error.strerror})"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder (a symlink or another kind of file)"
    if info.st_uid != os.getuid():
        return f"{folder} is owned by uid {info.st_uid}, not by you (uid {os.getuid()})"
    loose = info.st_mode & (0o077 if private else 0o002)
    if loose:
        return f"{folder} is mode {stat.S_IMODE(info.st_mode):04o}; it must be owner-only (0700)"
    return None


def listener_problem(path: Path, state_dir: Path) -> str | None:
    """Why the socket at ``path`` may belong to someone else, or None: its folder fails
    :func:`folder_problem`, or the socket is not a socket this user owns."""
    problem = folder_problem(path.parent, private=path.parent != state_dir)
    if problem is not None:
        return problem
    try:
        info = os.lstat(path)
    except OSError as error:
        return f"{path} cannot be checked ({error.strerror})"
    if not stat.S_ISSOCK(info.st_mode):
        return f"{path} is not a socket"
    if info.st_uid != os.getuid():
        return f"{path} is owned by uid {info.st_uid}, not by you (uid {os.getuid()})"
    return None


def peer_problem(conn: socket.socket) -> str | None:
    """Why the process listening on ``conn`` is not this user's, or None. Linux reports the
    listener's credentials (SO_PEERCRED); elsewhere the socket's owner and folder, checked by
    :func:`listener_problem`, are what we have."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    pid, uid, _gid = _PEERCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, option, _PEERCRED.size))
    if uid != os.getuid():
        return f"its listener (pid {pid}) runs as uid {uid}, not as you (uid {os.getuid()})"
    return None


def _distrust(path: Path, problem: str) -> None:
    print(
        f"kg: warning: not using the resident command host at {path}: {problem}; "
        "running the command in this process",
        file=sys.stderr,
    )


def code_fingerprint() -> str:
    """Which kg code this interpreter runs: its executable, the package folder, the newest
    source file's modification time and when its dependencies were last installed. A host
    started before kg or a dependency was upgraded or edited has another fingerprint and is
    not used."""
    root = Path(__file__).resolve().parents[2]
    newest = 0
    stack = [root / name for name in _PACKAGES]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py"):
                newest = max(newest, entry.stat().st_mtime_ns)
            elif entry.name != "__pycache__" and entry.is_dir():
                stack.append(Path(entry.path))
    return f"{sys.executable}|{root}|{newest}|{_dependencies_stamp(root)}"


def _dependencies_stamp(root: Path) -> str:
    """When the installed dependencies last changed: the modification times of the folders
    they are installed in (site-packages, and PYTHONPATH entries other than kg's own). pip
    adds and removes a ``*.dist-info`` folder there on every install or upgrade, so a warm
    host started before an upgrade of a dependency is not used after it."""
    import sysconfig

    folders = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    folders.update(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    stamps = []
    for folder in sorted(folders):
        if os.path.abspath(folder) == os.fspath(root):
            continue  # kg's own files are covered above
        with contextlib.suppress(OSError):
            stamps.append(str(os.stat(folder).st_mtime_ns))
    return ",".join(stamps)


def run_in_host(argv: list[str], entry: str = "kg") -> int | None:
    """Run ``kg argv`` (``entry="hook"``: the git hooks' runner, :mod:`kg.cli.hook_entry`) in
    the project's resident host and return its exit status, or None when the command must run
    in this process (no host, or it could not take the command)."""
    if os.environ.get(RESIDENT_ENV, "").strip() == "0" or os.environ.get("KG_DATABASE_URL"):
        return None
    if entry == "kg" and argv and argv[0] in IN_PROCESS:
        return None
    root = os.environ.get("KG_PROJECT_ROOT")
    state_dir = (Path(root) if root else find_project_root()) / STATE_DIR_NAME
    return send_to_host(state_dir, argv, entry)


def send_to_host(
    state_dir: Path, argv: list[str], entry: str = "kg", timeout: float | None = None
) -> int | None:
    """Run ``argv`` in the host listening for ``state_dir`` and return its exit status, or None
    when there is none or it could not take the command (see :func:`run_in_host`); ``timeout``:
    seconds it has to take the command (default :func:`answer_timeout`)."""
    wait = answer_timeout() if timeout is None else timeout
    path = socket_path(state_dir)
    if not path.exists():
        return None
    problem = listener_problem(path, state_dir)
    if problem is not None:
        _distrust(path, problem)
        return None
    request = json.dumps(
        {
            "fingerprint": code_fingerprint(),
            "entry": entry,
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": _umask(),
            "rlimits": caller_limits(),
        }
    ).encode()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(wait)  # a stopped or stuck host must not hang the command
        conn.connect(os.fspath(path))
        problem = peer_problem(conn)
        if problem is not None:
            conn.close()
            _distrust(path, problem)
            return None  # nothing of this command (argv, environment, descriptors) was sent
        # Nothing is sent before the host shows it is alive: descriptors sent to a stopped
        # host would stay in flight, holding this command's output open, until it resumed.
        kind, _ = _read_status(conn)
        if kind != READY:
            conn.close()
            return None
        socket.send_fds(conn, [_HEADER.pack(len(request)) + request], [0, 1, 2])
        kind, pid = _read_status(conn)
    except TimeoutError:
        conn.close()  # the host sees it gone and does not run the command (resident_host)
        _distrust(path, f"it did not answer within {wait:g} s ({TIMEOUT_ENV})")
        return None
    except OSError:
        return None  # no host, or a descriptor that cannot be passed: run it here
    if kind != STARTED:
        conn.close()
        return None  # the host runs other code (kg was upgraded or edited): run it here
    conn.settimeout(None)  # the command itself takes as long as it takes
    return _wait(conn, pid)


def answer_timeout() -> float:
    """Seconds the host has to take a command (``KG_HOST_TIMEOUT``, default 2)."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, "") or _DEFAULT_TIMEOUT)
    except ValueError:
        return _DEFAULT_TIMEOUT
    return value if value > 0 else _DEFAULT_TIMEOUT


def caller_limits() -> dict[str, list[int]]:
    """This process's resource limits (``ulimit``), which the host's child takes on: the
    command must run under the caller's limits, as it would in its own process."""
    import resource

    limits: dict[str, list[int]] = {}
    for name in LIMITS:
        number = getattr(resource, name, None)
        if number is not None:
            with contextlib.suppress(OSError, ValueError):
                limits[name] = list(resource.getrlimit(number))
    return limits


def _wait(conn: socket.socket, pid: int) -> int:
    """The exit status of the command the host's child ``pid`` runs, forwarding signals."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    try:
        kind, status = _read_status(conn)
    except OSError:
        kind, status = b"", 1
    if kind != EXITED:
        print("kg: the command ended without reporting its exit status", file=sys.stderr)
        return 1
    return status


def _read_status(conn: socket.socket) -> tuple[bytes, int]:
    data = b""
    while len(data) < _STATUS.size:
        try:
            chunk = conn.recv(_STATUS.size - len(data))
        except InterruptedError:
            continue
        if not chunk:
            raise ConnectionError("the resident host closed the connection")
        data += chunk
    kind, value = _STATUS.unpack(data)
    return kind, value


def send_status(conn: socket.socket, kind: bytes, value: int) -> None:
    conn.sendall(_STATUS.pack(kind, value))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
