"""The resident command host: a warm interpreter that runs ``kg`` commands by forking.

It lives in the embedded server's idle watchdog (:mod:`kg.host.idle`), so it is up exactly while
the server is kept warm and stops with it. At start it imports what short commands need, then
listens on :func:`kg.host.resident.socket_path`. For each command line it forks: the child
takes the client's standard descriptors, environment, working folder and umask, runs the
command as ``kg`` would in a process of its own (its exit handlers included, so it lets go of
the server like any kg process), and exits; the host reports the child's exit status to the
client. Forking is safe because the host itself runs no threads and no event loop: it only
imports modules and waits on its socket.

Only the user who owns the socket can connect (it is created mode 0600, and on Linux the
peer's uid is checked too). A client whose kg code differs from the host's (an upgrade, an
edit in a development checkout) is told so and runs the command itself, and the host retires
so that the next warm host runs the new code.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kg.host.resident import (
    EXITED,
    READY,
    STALE,
    STARTED,
    code_fingerprint,
    folder_problem,
    send_status,
    socket_path,
)

#: runs one command line in the forked child: its exit status (None for 0), or SystemExit
Entry = Callable[[list[str]], int | None]
#: the entry points a client may name (``kg``, ``hook``): given by the process that hosts
#: the commands (:mod:`kg.cli.watchdog`), so the host never imports what it runs
Entries = Mapping[str, Entry]
_REQUEST_TIMEOUT = 5.0
_MAX_REQUEST = 16 << 20
_PEERCRED = struct.Struct("3i")


class CommandHost:
    """Listens for ``kg`` command lines for one project (``state_dir``) and runs each in a
    forked child. :meth:`serve` waits for one round of work; the watchdog calls it in place
    of sleeping."""

    def __init__(self, state_dir: Path, entries: Entries, preload: Sequence[str] = ()) -> None:
        self.state_dir = state_dir
        self.path = socket_path(state_dir)
        self.entries = entries
        self.preload = tuple(preload)
        self.children: dict[int, socket.socket] = {}
        self._ended: set[int] = set()  # children whose client connection is no longer watched
        self.stale = False
        self._listener: socket.socket | None = None
        self._wake: tuple[int, int] | None = None
        self._fingerprint = ""

    def open(self) -> bool:
        """Import the common modules and start listening; False (and no host) on failure."""
        for name in self.preload:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        with contextlib.suppress(Exception):
            _preload_model()
        self._fingerprint = code_fingerprint()
        gc.collect()
        gc.freeze()  # the imported modules' objects stay shared with the children's pages
        try:
            if not self._own_folder():
                return False
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # left by a host that was killed
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o077)
            try:
                listener.bind(os.fspath(self.path))
            finally:
                os.umask(old)
            listener.listen(16)
        except OSError:
            return False
        self._listener = listener
        read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write)
        signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
        self._wake = (read, write)
        return True

    def _own_folder(self) -> bool:
        """Create the socket's folder owner-only, or find it so; a folder someone else made
        first (in the shared temporary directory) or left open means no host."""
        folder = self.path.parent
        private = folder != self.state_dir
        if private:
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=0o700, parents=True)
        return folder_problem(folder, private=private) is None

    def serve(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds, taking command lines and reporting children that
        exited."""
        if self._listener is None or self._wake is None:
            return
        listener, wake = self._listener.fileno(), self._wake[0]
        clients = {c.fileno(): pid for pid, c in self.children.items() if pid not in self._ended}
        ready, _, _ = select.select([listener, wake, *clients], [], [], max(0.0, timeout))
        if wake in ready:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                os.read(self._wake[0], 512)
        self._end_orphans([clients[fd] for fd in ready if fd in clients])
        self._reap()
        if listener in ready:
            with contextlib.suppress(OSError):
                conn, _ = self._listener.accept()
                self._take(conn)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            with contextlib.suppress(OSError):
                self.path.unlink()

    def _take(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(_REQUEST_TIMEOUT)
            if not self._same_user(conn):
                conn.close()
                return
            send_status(conn, READY, 0)  # alive: the client sends its request only now
            request, fds = _read_request(conn)
        except (OSError, ValueError):
            conn.close()
            return
        if _gone(conn):  # it gave up waiting (a stopped host): it runs the command itself
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        if request.get("fingerprint") != self._fingerprint or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                send_status(conn, STALE, 0)
            conn.close()
            if request.get("fingerprint") != self._fingerprint:
                self.stale = True  # retire: the next warm host runs the client's code
            return
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _run_command(conn, fds, request, self._inherited(), self.entries)
        for fd in fds:
            os.close(fd)
        self.children[pid] = conn
        with contextlib.suppress(OSError):
            send_status(conn, STARTED, pid)

    def _end_orphans(self, pids: list[int]) -> None:
        """Kill the commands whose client is gone (``kill -9`` of ``kg``, a crash): the
        command's life follows its caller's, as it would in the caller's own process. A
        client sends nothing after its request, so a readable connection is a closed one."""
        for pid in pids:
            self._ended.add(pid)  # not watched again: closed (or sending what it must not)
            if _gone(self.children[pid]):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def _inherited(self) -> list[int]:
        """Descriptors a child must not keep: the listener, the wake pipe, siblings' clients."""
        fds = [c.fileno() for c in self.children.values()]
        if self._listener is not None:
            fds.append(self._listener.fileno())
        if self._wake is not None:
            fds.extend(self._wake)
        return fds

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            self._ended.discard(pid)
            if conn is not None:
                code = os.waitstatus_to_exitcode(status)
                with contextlib.suppress(OSError):
                    send_status(conn, EXITED, code if code >= 0 else 128 - code)
                conn.close()

    @staticmethod
    def _same_user(conn: socket.socket) -> bool:
        option = getattr(socket, "SO_PEERCRED", None)
        if option is None:
            return True  # the socket's mode (0600) already limits it to its owner
        _pid, uid, _gid = _PEERCRED.unpack(
            conn.getsockopt(socket.SOL_SOCKET, option, _PEERCRED.size)
        )
        return bool(uid == os.getuid())


def _gone(conn: socket.socket) -> bool:
    """Whether the client closed its end (it never sends after its request)."""
    timeout = conn.gettimeout()
    conn.setblocking(False)  # a socket with a timeout would wait for data first
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        conn.settimeout(timeout)


def _limit(request: dict[str, Any]) -> None:
    """Take on the client's resource limits (``ulimit``). One that cannot be set (above the
    host's own hard limit) stays at the host's, which is then the lower of the two."""
    import resource

    for name, (soft, hard) in dict(request.get("rlimits") or {}).items():
        number = getattr(resource, str(name), None)
        if number is not None:
            with contextlib.suppress(OSError, ValueError):
                resource.setrlimit(number, (int(soft), int(hard)))


def _preload_model() -> None:
    """Load the MiniLM model (tokenizer, memory-mapped weights) when the host's environment
    will embed with it, so a command's first embedding does not pay for the load."""
    from kg.embeddings.factory import minilm_available

    chosen = os.environ.get("KG_EMBEDDER", "auto").strip().lower() or "auto"
    if chosen in ("auto", "minilm") and minilm_available():
        from kg.embeddings.minilm import MiniLMEmbedder

        MiniLMEmbedder().load()


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    if len(data) < 4:
        raise ValueError("short request")
    (size,) = struct.unpack("!I", data[:4])
    if size > _MAX_REQUEST:
        raise ValueError("request too large")
    body = bytearray(data[4:])
    while len(body) < size:
        chunk = conn.recv(min(1 << 16, size - len(body)))
        if not chunk:
            raise ValueError("truncated request")
        body += chunk
    request = json.loads(body)
    if not isinstance(request, dict):
        raise ValueError("not a request")
    return request, list(fds)


def _run_command(
    conn: socket.socket,
    fds: list[int],
    request: dict[str, Any],
    inherited: list[int],
    entries: Entries,
) -> None:
    """In the forked child: become the client's ``kg`` process, run the command, exit."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for fd in inherited:
            with contextlib.suppress(OSError):
                os.close(fd)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        atexit._clear()  # the host's exit handlers are not the command's
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()  # the client's TZ
        os.chdir(request["cwd"])
        os.umask(int(request["umask"]))
        _limit(request)
        argv = [str(a) for a in request["argv"]]
        sys.argv = ["kg", *argv]
        sys.stdout.reconfigure(line_buffering=os.isatty(1))  # type: ignore[union-attr]
        consoles = sys.modules.get("kg.cli.consoles")
        if consoles is not None:
            consoles.reset()
        code = _exit_code(entries[str(request.get("entry", "kg"))], argv)
    except BaseException:  # the child must exit, whatever happened
        with contextlib.suppress(Exception):
            import traceback

            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # lets go of the server, like any kg process at exit
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        conn.close()
        os._exit(code)


def _exit_code(entry: Entry, argv: list[str]) -> int:
    try:
        code = entry(argv)
        if code is not None:
            return code
    except SystemExit as exit_:
        if exit_.code is None:
            return 0
        if isinstance(exit_.code, int):
            return exit_.code
        print(exit_.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
