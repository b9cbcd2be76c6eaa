"""The resident command host cannot be taken over by another local user (issue 30, A1).

When a project's path is too long for a Unix socket in ``.kg/``, the host listens in
``<tmp>/kg-<uid>/``, a name anyone can create first. A squatter there would receive every
command's argv, environment (API keys, tokens) and descriptors, and answer with any exit
status. The client must check the folder and the socket, and the listener's credentials, and
otherwise run the command itself with a one-line warning, sending the squatter nothing.

The squatters are simulated with real processes and real files: a folder created first with
loose permissions, a symlinked folder, and (as root, the only way to be another uid without a
second account) a folder owned by another uid and a listener that runs as another uid.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kg.host import resident
from tests.support import kg

NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="becoming another uid needs root")

# Listens on argv[1] (after dropping to uid argv[2] when not 0), writes every byte it is sent
# to its standard output, and answers "started, exited 0" as a host would.
SQUATTER = textwrap.dedent(
    """
    import os, socket, struct, sys
    path, uid = sys.argv[1], int(sys.argv[2])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o777)
    if uid:
        os.setgid(uid)
        os.setuid(uid)
    listener.listen(4)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            conn.sendall(struct.pack("!ci", b"R", 0))  # "ready", as a host says first
        except OSError:
            pass
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        if data or fds:  # a client that checks hangs up before sending anything
            sys.stdout.write(f"received {len(data)} bytes {len(fds)} fds\\n")
            sys.stdout.flush()
        for fd in fds:
            os.close(fd)  # the client's stdout and stderr: let its caller see them end
        try:
            conn.sendall(struct.pack("!ci", b"P", 1) + struct.pack("!ci", b"X", 0))
        except OSError:
            pass
        conn.close()
    """
)


@pytest.fixture
def long_project(tmp_path: Path) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """A project whose ``.kg`` path is too long for a socket (so the host's socket goes to
    the temporary directory), that temporary directory, and the environment of a ``kg`` run
    there."""
    root = tmp_path / ("p" * 110)
    root.mkdir()
    # Short, unlike tmp_path (a pytest-xdist worker's is longer still): the socket's own path
    # in it must fit a Unix socket's 107 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="kg-sq-"))
    env = {k: v for k, v in os.environ.items() if k not in ("KG_DATABASE_URL",)}
    env.pop(resident.RESIDENT_ENV, None)
    env.update(KG_PROJECT_ROOT=str(root), TMPDIR=str(tmp), KG_EMBEDDER="hashing")
    yield root, tmp, env
    shutil.rmtree(tmp, ignore_errors=True)


def socket_in(root: Path, tmp: Path) -> Path:
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp)
    try:
        path = resident.socket_path(root / ".kg")
    finally:
        tempfile.tempdir = saved
    assert path.parent == tmp / f"kg-{os.getuid()}", "the socket is in the temporary directory"
    return path


def squat(path: Path, uid: int = 0) -> subprocess.Popen[str]:
    squatter = subprocess.Popen(
        [sys.executable, "-c", SQUATTER, str(path), str(uid)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert squatter.stdout is not None
    assert squatter.stdout.readline().strip() == "ready"
    return squatter


def heard(squatter: subprocess.Popen[str]) -> str:
    squatter.terminate()
    out, _ = squatter.communicate(timeout=30)
    return out


def open_folder(folder: Path) -> None:
    folder.mkdir()
    folder.chmod(0o777)


def symlinked_folder(folder: Path) -> None:
    elsewhere = folder.parent / "squatters-own"
    elsewhere.mkdir(mode=0o700)
    folder.symlink_to(elsewhere)


def another_users_folder(folder: Path) -> None:
    folder.mkdir(mode=0o700)
    os.chown(folder, NOBODY, NOBODY)


SQUATTED_FOLDERS: list[object] = [
    pytest.param(open_folder, "must be owner-only", id="folder-made-first-mode-0777"),
    pytest.param(symlinked_folder, "is not a folder", id="folder-is-a-symlink"),
    pytest.param(
        another_users_folder, f"owned by uid {NOBODY}", id="folder-of-another-uid", marks=ROOT_ONLY
    ),
]


@pytest.mark.parametrize(("prepare", "reason"), SQUATTED_FOLDERS)
def test_a_squatted_socket_folder_gets_nothing_and_the_command_runs_here(
    long_project: tuple[Path, Path, dict[str, str]],
    prepare: Callable[[Path], None],
    reason: str,
) -> None:
    root, tmp, env = long_project
    path = socket_in(root, tmp)
    prepare(path.parent)
    squatter = squat(path)
    try:
        done = kg("--help", env=env, cwd=root, timeout=120)
    finally:
        received = heard(squatter)
    assert received == "", "the squatter was sent nothing (no argv, environment or descriptors)"
    assert done.returncode == 0, done.stderr
    assert "Usage: kg" in done.stdout, "the command ran in its own process"
    warnings = [line for line in done.stderr.splitlines() if "resident command host" in line]
    assert len(warnings) == 1, done.stderr
    assert reason in warnings[0] and "running the command in this process" in warnings[0]


@ROOT_ONLY
def test_a_listener_of_another_uid_in_our_own_folder_gets_nothing(
    long_project: tuple[Path, Path, dict[str, str]],
) -> None:
    """Folder and socket file look right (ours, 0700); only the listener's credentials
    (SO_PEERCRED) show it is another user's process."""
    root, tmp, env = long_project
    path = socket_in(root, tmp)
    path.parent.mkdir(mode=0o700)
    squatter = squat(path, uid=NOBODY)
    try:
        assert os.lstat(path).st_uid == os.getuid(), "the socket file itself is ours"
        done = kg("--help", env=env, cwd=root, timeout=120)
    finally:
        received = heard(squatter)
    assert received == ""
    assert done.returncode == 0, done.stderr
    assert "Usage: kg" in done.stdout
    assert f"runs as uid {NOBODY}, not as you" in done.stderr


def test_our_own_listener_in_a_private_folder_is_still_used(
    long_project: tuple[Path, Path, dict[str, str]],
) -> None:
    """The checks do not turn the host off: a listener of ours in a 0700 folder of ours is
    asked to run the command (here it answers "exit 0" without running it)."""
    root, tmp, env = long_project
    path = socket_in(root, tmp)
    path.parent.mkdir(mode=0o700)
    squatter = squat(path)
    try:
        done = kg("--help", env=env, cwd=root, timeout=120)
    finally:
        received = heard(squatter)
    assert received.startswith("received ") and received.rstrip().endswith("3 fds"), received
    assert done.returncode == 0 and "Usage: kg" not in done.stdout
    assert "resident command host" not in done.stderr


def test_the_host_does_not_listen_in_a_folder_someone_else_made_first(
    long_project: tuple[Path, Path, dict[str, str]],
) -> None:
    root, tmp, env = long_project
    (root / ".kg").mkdir()
    path = socket_in(root, tmp)
    open_folder(path.parent)
    probe = (
        "import sys; from pathlib import Path; from kg.host.resident_host import CommandHost;"
        "host = CommandHost(Path(sys.argv[1]), {}); print(host.open()); host.close()"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(root / ".kg")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "no host in a folder it did not make owner-only"
    assert not path.exists()

    path.parent.rmdir()  # with the folder its own, the host listens (mode 0700)
    done = subprocess.run(
        [sys.executable, "-c", probe, str(root / ".kg")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "True", done.stderr
    assert oct(path.parent.stat().st_mode & 0o777) == oct(0o700)


def test_a_host_that_does_not_answer_is_bypassed(
    long_project: tuple[Path, Path, dict[str, str]],
) -> None:
    """Issue 30 A5: a stopped (SIGSTOP) host hung every `kg` command and `git commit`. The
    listener here is ours and stopped: it takes nothing, as a stopped watchdog would."""
    root, tmp, env = long_project
    path = socket_in(root, tmp)
    path.parent.mkdir(mode=0o700)
    stopped = squat(path)
    os.kill(stopped.pid, signal.SIGSTOP)
    try:
        done = kg("--help", env={**env, "KG_HOST_TIMEOUT": "1"}, cwd=root, timeout=60)
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
        heard(stopped)
    assert done.returncode == 0, done.stderr
    assert "Usage: kg" in done.stdout, "the command ran in its own process"
    assert "did not answer within 1 s (KG_HOST_TIMEOUT)" in done.stderr
