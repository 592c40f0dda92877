"""The local launcher's fork server: forked agents behave like started ones."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from topocast.runtime import make_launcher, perform
from topocast.runtime.forkserver import fork_server
from topocast.runtime.launchers import _agent_env

from .helpers import chain_plan


def _boot(control: str) -> dict:
    return {
        "host": "x",
        "secret": "00" * 32,
        "control": control,
        "bind": "127.0.0.1",
        "advertise": "127.0.0.1",
        "dest_dir": None,
    }


def test_an_agent_that_fails_reports_its_exit_code_and_stderr():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = fork_server(_agent_env()).start(_boot(f"tcp:127.0.0.1:{port}"))
    assert agent.wait(timeout=30) == 1
    assert agent.poll() == 1
    assert agent.stderr is not None
    assert b"cannot reach the coordinator at tcp:127.0.0.1:" in agent.stderr.read()  # one line, no traceback


def test_kill_and_wait_like_popen():
    with socket.socket() as listener:  # accepts, then never answers: the agent waits
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        agent = fork_server(_agent_env()).start(_boot(f"tcp:127.0.0.1:{listener.getsockname()[1]}"))
        with pytest.raises(subprocess.TimeoutExpired):
            agent.wait(timeout=0.2)
        assert agent.poll() is None
        agent.kill()
        assert agent.wait(timeout=10) == -signal.SIGKILL
        agent.kill()  # an exited agent: nothing to signal, no error


def test_agents_run_in_their_own_session():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        agent = fork_server(_agent_env()).start(_boot(f"tcp:127.0.0.1:{listener.getsockname()[1]}"))
        try:  # a Ctrl-C at the terminal does not reach it (setsid is its first step after fork)
            deadline = time.monotonic() + 10
            while os.getsid(agent.pid) != agent.pid and time.monotonic() < deadline:
                time.sleep(0.01)
            assert os.getsid(agent.pid) == agent.pid
            assert os.getsid(agent.pid) != os.getsid(0)
        finally:
            agent.kill()
            agent.wait(timeout=10)


def test_a_run_after_the_server_died_starts_a_new_one():
    server = fork_server(_agent_env())
    server.proc.kill()
    server.proc.wait()
    out = perform(chain_plan(1 << 20), launcher=make_launcher("local"))
    assert out.failed == {}
    assert fork_server(_agent_env()) is not server


def test_a_server_that_cannot_start_falls_back_to_plain_agent_processes(monkeypatch):
    """A fork server that dies at once (here: its interpreter is ``false``) is noticed at
    once, not after the start timeout, and the launcher starts each agent as ``python -m
    topocast.runtime.agent`` instead."""
    import topocast.runtime.forkserver as fs

    with monkeypatch.context() as m:
        m.setattr(fs.sys, "executable", "/bin/false")
        broken = fs.ForkServerClient(_agent_env())
    t = time.monotonic()
    with pytest.raises(OSError):
        broken.start({"host": "x"})
    assert time.monotonic() - t < fs.START_TIMEOUT / 2
    monkeypatch.setattr(fs, "fork_server", lambda env: broken)
    try:
        out = perform(chain_plan(1 << 20), launcher=make_launcher("local"))
    finally:
        broken.close()
    assert out.failed == {}


def test_a_single_threaded_process_forks_its_server_from_itself():
    """``topocast run`` has one thread when it starts the server: the server is a fork of it
    (ready at once), and agents forked from that server perform a plan."""
    script = (
        "from topocast.runtime import make_launcher, perform\n"
        "from topocast.runtime.forkserver import fork_server\n"
        "from topocast.runtime.launchers import _agent_env\n"
        "from tests.runtime.helpers import chain_plan\n"
        "launcher = make_launcher('local')\n"
        "launcher.prepare(fork_this_process=True)\n"
        "kind = type(fork_server(_agent_env()).proc).__name__\n"
        "out = perform(chain_plan(1 << 20), launcher=launcher)\n"
        "print(kind, sorted(out.failed))\n"
        "from topocast.runtime.forkserver import ForkServerClient\n"
        "library = ForkServerClient(_agent_env())\n"  # not asked to fork: a fresh interpreter
        "print(type(library.proc).__name__)\n"
        "library.close()\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["_ServerHere", "[]", "Popen"]


def test_a_process_with_threads_starts_a_fresh_server_process():
    """A fork copies only the calling thread: with another thread running, the server is a
    new interpreter, not a fork of this process, even when asked for one."""
    import threading

    import topocast.runtime.forkserver as fs

    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    other.start()
    try:
        client = fs.ForkServerClient(_agent_env(), fork_this_process=True)
    finally:
        release.set()
    try:
        assert isinstance(client.proc, subprocess.Popen)
        agent = client.start(_boot("tcp:127.0.0.1:1"))  # nobody listens: exits with a traceback
        assert agent.wait(timeout=30) == 1
    finally:
        client.close()


def test_a_server_whose_client_is_gone_exits_without_a_traceback(tmp_path):
    """The coordinator may exit (its run done) before the server has sent every reply; the
    server's writes then meet a closed pipe, which is no error worth a traceback on the
    user's terminal."""
    with socket.socket() as s:  # a port nobody listens on: the agent exits at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for _ in range(3):
        server = subprocess.Popen(
            [sys.executable, "-m", "topocast.runtime.forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_agent_env(),
        )
        server.stdout.close()  # the client is gone before any reply
        err_file = tmp_path / "agent.err"
        err_file.write_bytes(b"")
        request = {"id": 0, "boot": _boot(f"tcp:127.0.0.1:{port}"), "cwd": str(tmp_path), "stderr": str(err_file)}
        server.stdin.write((json.dumps(request) + "\n").encode())
        server.stdin.flush()
        time.sleep(0.5)  # the agent forked and exited: its exit notice is written too
        server.stdin.close()
        server.wait(timeout=30)
        err = server.stderr.read()
        server.stderr.close()
        assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode(errors="replace")


@pytest.mark.parametrize("fork_this_process", [True, False])
def test_a_killed_client_leaves_no_agents_folder(tmp_path, fork_this_process):
    """A coordinator killed outright (SIGKILL) cannot remove its agents' stderr folder: its
    server, which exits when the coordinator is gone, removes it."""
    script = (
        "import os, signal\n"
        "from topocast.runtime.forkserver import fork_server\n"
        "from topocast.runtime.launchers import _agent_env\n"
        f"client = fork_server(_agent_env(), fork_this_process={fork_this_process})\n"
        f"agent = client.start({_boot('tcp:127.0.0.1:1')!r})\n"  # nobody listens: it exits at once
        "agent.wait(timeout=30)\n"
        "print(client._dir, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    folder = done.stdout.strip()
    assert os.path.basename(folder).startswith("topocast-agents-") and folder.startswith(str(tmp_path))
    deadline = time.monotonic() + 10
    while os.path.exists(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(folder)
