"""Start local agents by forking a process that has already imported them.

An agent started as ``python -m topocast.runtime.agent`` pays an interpreter start, the
``site`` imports and its own imports (numpy included, for pacing and generated data) before
it can connect: about a tenth of a second of CPU each, paid for every host of a local run on
a machine whose cores the run itself needs. The local launcher instead asks one server
process, started once per coordinator process (early, while the caller still plans), to
``fork()`` each agent: a child starts with every module loaded.

The server itself is a ``fork()`` of the coordinator process when the caller asks for it
and that process still runs a single thread (the ``topocast run`` command: the server is then
ready at once, with what the command has imported); otherwise (a library caller, a test
runner, a program with threads) it is a fresh ``python -m topocast.runtime.forkserver``. A
library caller does not get the fork by default: its memory would count in every agent's
resident set.

We do not use ``multiprocessing``'s forkserver: its children re-run the caller's main script
(spawn semantics), which for a benchmark or a test runner costs more than it saves.

Protocol between the launcher (client) and the server: newline-delimited JSON on the
server's stdin and stdout.

* request ``{"id": N, "boot": {...}, "cwd": DIR, "stderr": PATH}``: fork one agent with
  that boot record (the agent's stdin line under ``python -m``), working directory and
  stderr file; reply ``{"id": N, "pid": PID}``; with ``"netns": NAME`` the agent first
  enters the named network namespace (``ip netns``'s ``/var/run/netns/NAME``), as
  ``ip netns exec NAME`` would start it (the testbed launcher);
* when an agent exits: ``{"exit": PID, "code": C}`` (``C`` as ``Popen.returncode``: the exit
  status, or minus the signal number).

The server exits when its stdin closes (the coordinator process is gone), removing the
folder of its agents' stderr files (the client removes it too, unless it was killed); agents
run in their own sessions, so a Ctrl-C at the terminal reaches the coordinator only, which stops them.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import IO, Any

START_TIMEOUT = 30.0  # seconds a fork request may take before the launcher gives up
AGENTS_DIR_PREFIX = "topocast-agents-"  # the client's folder of its agents' stderr files


# --- the server (python -m topocast.runtime.forkserver) ---------------------------------


def serve(requests: IO[bytes], replies: IO[bytes]) -> int:
    import numpy  # noqa: F401  (paced agents and generated data use it: loaded once, here)

    from . import agent

    lock = threading.Lock()

    def reply(message: dict) -> None:
        with lock:
            try:
                replies.write(json.dumps(message).encode() + b"\n")
                replies.flush()
            except (OSError, ValueError):  # the client is gone (its run is over): no one to tell
                pass

    folders = set()
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_child(request, agent.run_boot)
        reply({"id": request["id"], "pid": pid})
        threading.Thread(target=_reap, args=(pid, reply), daemon=True).start()
        folders.add(os.path.dirname(request["stderr"]))
    # the client is gone: its folder goes too, also when the client could not remove it
    # (killed); agents still running keep writing to their open, now unnamed, files
    for folder in folders:
        if os.path.basename(folder).startswith(AGENTS_DIR_PREFIX):
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def _run_child(request: dict, run_boot) -> None:
    """The forked agent: its own session, working directory and stderr; never returns."""
    code = 1
    try:
        os.setsid()
        if request.get("netns"):
            _enter_netns(request["netns"])
        os.chdir(request["cwd"])
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)  # fd 1 is the server's reply pipe: an agent must never write to it
        err = os.open(request["stderr"], os.O_WRONLY | os.O_APPEND)
        os.dup2(err, 2)
        os.close(null)
        os.close(err)
        code = run_boot(request["boot"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


NETNS_DIR = "/var/run/netns"
CLONE_NEWNET = 0x40000000


def _enter_netns(name: str) -> None:
    """This process into the network namespace ``name`` (``setns(2)``; ``os.setns`` is
    Python 3.12's)."""
    fd = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        if hasattr(os, "setns"):
            os.setns(fd, CLONE_NEWNET)
        else:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns into network namespace {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _reap(pid: int, reply) -> None:
    _, status = os.waitpid(pid, 0)
    reply({"exit": pid, "code": os.waitstatus_to_exitcode(status)})


# --- the client (used by LocalLauncher) -------------------------------------------------


class ForkedAgent:
    """A forked agent, with the part of ``subprocess.Popen``'s interface the coordinator uses
    (``pid``, ``poll``, ``wait``, ``returncode``, ``kill``, ``terminate``, ``stdin``,
    ``stderr``)."""

    stdin = None

    def __init__(self, pid: int, stderr_path: str):
        self.pid = pid
        self.returncode: int | None = None
        self._exited = threading.Event()
        self._stderr_path = stderr_path
        self.stderr: IO[bytes] | None = open(stderr_path, "rb")  # noqa: SIM115 (closed by the coordinator)
        try:  # signals go through a pidfd, so a recycled pid is never signalled
            self._pidfd: int | None = os.pidfd_open(pid)
        except OSError:
            self._pidfd = None

    def _exit(self, code: int) -> None:
        self.returncode = code
        self._exited.set()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"agent {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            return
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, OSError):
            pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class ForkServerClient:
    """One running server and the agents it forked for this process."""

    def __init__(self, env: dict, *, fork_this_process: bool = False):
        self.proc: Any = _fork_server_here() if fork_this_process and _can_fork_here() else None
        if self.proc is None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "topocast.runtime.forkserver"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        self._dir = tempfile.mkdtemp(prefix=AGENTS_DIR_PREFIX)
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._replies: dict[int, Any] = {}
        self._reply_ready = threading.Condition(self._lock)
        self._agents: dict[int, ForkedAgent] = {}
        self._early_exits: dict[int, int] = {}
        self._gone = False  # the server's replies ended
        threading.Thread(target=self._read, daemon=True, name="forkserver-replies").start()

    def alive(self) -> bool:
        return not self._gone and self.proc.poll() is None

    def start(self, boot: dict) -> ForkedAgent:
        return self.start_all([boot])[0]

    def start_all(self, boots: list[dict], netns: list[str] | None = None) -> list[ForkedAgent]:
        """Fork one agent per boot record (each in the network namespace of ``netns`` at the
        same position, when given): every request is written at once, then the replies are
        collected (the server forks them one after the other)."""
        stderr_paths = {}
        requests = b""
        for k, boot in enumerate(boots):
            n = next(self._ids)
            stderr_paths[n] = os.path.join(self._dir, f"agent-{n}.err")
            open(stderr_paths[n], "wb").close()
            request = {"id": n, "boot": boot, "cwd": os.getcwd(), "stderr": stderr_paths[n]}
            if netns is not None:
                request["netns"] = netns[k]
            requests += json.dumps(request).encode() + b"\n"
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(requests)
            self.proc.stdin.flush()
            return [self._forked(n, path) for n, path in stderr_paths.items()]

    def _forked(self, n: int, stderr_path: str) -> ForkedAgent:
        """The agent of request ``n``, once the server replied (called holding the lock)."""
        if not self._reply_ready.wait_for(lambda: n in self._replies or not self.alive(), START_TIMEOUT):
            raise OSError(f"the agent fork server did not answer within {START_TIMEOUT:.0f} s")
        pid = self._replies.pop(n, None)
        if pid is None:
            raise OSError("the agent fork server exited")
        agent = ForkedAgent(pid, stderr_path)
        self._agents[pid] = agent
        if pid in self._early_exits:
            agent._exit(self._early_exits.pop(pid))
        return agent

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            with self._lock:
                if "exit" in message:
                    agent = self._agents.pop(message["exit"], None)
                    if agent is None:  # exited before its start() returned
                        self._early_exits[message["exit"]] = message["code"]
                    else:
                        agent._exit(message["code"])
                else:
                    self._replies[message["id"]] = message["pid"]
                self._reply_ready.notify_all()
        with self._lock:  # the server is gone: no exit status will come for its agents
            self._gone = True
            self._reply_ready.notify_all()

    def close(self) -> None:
        """Let the server go (it exits when its stdin closes; not waited for: this runs as
        the coordinator process exits, and the server's own exit is no part of the run)."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        shutil.rmtree(self._dir, ignore_errors=True)


def _can_fork_here() -> bool:
    """Whether this process may become the server by ``fork()``: only while it runs one
    thread (a fork copies no other thread, and a lock another thread held would stay held in
    the child forever)."""
    return threading.active_count() == 1


class _ServerHere:
    """The server as a ``fork()`` of this process (``Popen``'s ``stdin``, ``stdout``, ``pid``,
    ``poll``, ``wait``, ``kill``): it inherits every module this process has already
    imported, so it is ready in milliseconds instead of an interpreter start and numpy's
    import; an agent forked from it is ready as soon as before."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes]):
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"fork server {self.pid}", timeout or 0.0)
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)


def _fork_server_here() -> _ServerHere | None:
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (requests_r, requests_w, replies_r, replies_w):
            os.close(fd)
        return None
    if pid == 0:  # the server: its own session, only its two pipes open
        code = 1
        try:
            os.setsid()
            os.dup2(requests_r, 0)
            os.dup2(replies_w, 1)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            # this process's streams may be a caller's wrappers (a test runner's capture):
            # the server and its agents write to the file descriptors themselves
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (fd 1 carries the replies)
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            code = serve(os.fdopen(0, "rb"), os.fdopen(1, "wb"))
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(requests_r)
    os.close(replies_w)
    return _ServerHere(pid, os.fdopen(requests_w, "wb"), os.fdopen(replies_r, "rb"))


_client: ForkServerClient | None = None
_client_lock = threading.Lock()


def fork_server(env: dict, *, fork_this_process: bool = False) -> ForkServerClient:
    """This process's fork server, started on first use (and again if it died); with
    ``fork_this_process``, as a fork of this process when it runs a single thread."""
    global _client
    with _client_lock:
        if _client is None or not _client.alive():
            if _client is None:
                atexit.register(_close_client)
            else:
                _client.close()
            _client = ForkServerClient(env, fork_this_process=fork_this_process)
        return _client


def _close_client() -> None:
    if _client is not None:
        _client.close()


if __name__ == "__main__":
    sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))
