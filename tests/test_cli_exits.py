"""The command line's exit status says what happened: 0 done, 1 failed, 2 bad input, 130/143
interrupted/terminated (after clean-up), 1 without a word when the reader of its output went
away."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from topocast.cli import cmd_planners
from topocast.cli.main import main

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.parametrize(
    "argv",
    [
        "topology show builtin:list",  # a rich table
        "topology generate random-tree --hosts 3000 --switches 500",  # 170 kB of YAML
        "planners --json",  # print
    ],
)
def test_a_closed_stdout_ends_the_command_quietly(argv):
    """``topocast ... | true``: the reader is gone before the first byte; no traceback, no
    error line, status 1 (the output was not delivered)."""
    for _ in range(2):
        r = subprocess.run(
            f"{sys.executable} -m topocast {argv} | true; echo ${{PIPESTATUS[0]}} >&2",
            shell=True,
            executable="/bin/bash",
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        lines = r.stderr.strip().splitlines()
        assert lines == ["1"], r.stderr


def test_a_broken_pipe_that_is_not_stdout_is_a_failure(monkeypatch, capsys):
    """A connection to an agent (ssh, a fork server) that breaks is no success."""

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cmd_planners, "run", broken)
    assert main(["planners"]) == 1
    assert "Broken pipe" in capsys.readouterr().err


def _agent_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "topocast-agents-*")))


def _open_under(path: Path) -> list[str]:
    """Processes with a file under ``path`` open (the agents' stores)."""
    users = []
    for fd_dir in glob.glob("/proc/[0-9]*/fd"):
        try:
            for fd in os.listdir(fd_dir):
                if os.readlink(os.path.join(fd_dir, fd)).startswith(str(path)):
                    users.append(fd_dir)
                    break
        except OSError:
            continue
    return users


def slow_plan(path: Path) -> Path:
    """s -> a, capped at 64 KB/s: a run of a minute, long enough to be stopped mid-way."""
    from topocast.plan import Plan, Transfer

    size = 4 << 20
    plan = Plan.broadcast("s", size, ["a"], [Transfer.of("s", "a", 0, size, rate_cap=64e3)], planner="slow")
    path.write_text(plan.dumps())
    return path


@pytest.mark.parametrize("sig, code, words", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_signal_to_run_stops_the_agents_and_cleans_up(tmp_path, sig, code, words):
    """SIGTERM is handled as Ctrl-C is: a message, the agents stopped, the fork server's
    temporary directory removed, a non-zero status."""
    before = _agent_dirs()
    out_dir = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "topocast", "run", str(slow_plan(tmp_path / "slow.json")), "--dest-dir", str(out_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(out_dir.rglob("*.part")):  # the receiver's store is open: the agents run
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, err
    assert words in err and "Traceback" not in err, err
    assert _agent_dirs() - before == set()
    deadline = time.monotonic() + 5
    while _open_under(out_dir) and time.monotonic() < deadline:  # every agent is gone
        time.sleep(0.1)
    assert not _open_under(out_dir)


def test_an_agent_dying_during_set_up_is_a_failure_naming_it(monkeypatch, capsys):
    """Not status 2 (bad input): the input was fine, a host was lost."""
    from topocast.runtime import startup

    real = startup.configure

    def configure_after_a_death(plan, hosts, conns, procs, *rest):
        procs["a1"].kill()
        procs["a1"].wait()
        return real(plan, hosts, conns, procs, *rest)

    monkeypatch.setattr(startup, "configure", configure_after_a_death)
    assert main(["run", "builtin:hetero-2switch", "-a", "flat", "-s", "s", "--size", "64KiB"]) == 1
    err = capsys.readouterr().err
    # the others go on without it (runtime.absent): the status and the message name it
    assert "a1 never came (its agent failed before the start" in err and "SIGKILL" in err, err


@pytest.mark.parametrize(
    "sig, code, words", [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_signal_turned_into_another_error_by_an_import_is_still_that_signal(monkeypatch, capsys, sig, code, words):
    """SIGTERM or Ctrl-C while numpy (say) loads a C extension: the import machinery hands
    back an ImportError instead of the handler's exception. It is still reported as the
    signal, not as a traceback."""

    def importing(args):
        try:
            os.kill(os.getpid(), sig)
            time.sleep(5)  # the handler raises before this ends
        except BaseException as exc:
            raise ImportError('PyCapsule_Import could not import module "datetime"') from exc
        return 0

    monkeypatch.setattr(cmd_planners, "run", importing)
    assert main(["planners"]) == code
    assert words in capsys.readouterr().err


def test_the_end_after_a_signal_does_not_wait_for_a_stuck_thread():
    """After a signal, ``python -m topocast`` ends with :func:`exit_now`: the signal's
    exception may have left an import lock held, and a thread importing a module behind it
    (the table's modules load in the background during a run) would never end."""
    stuck = "import threading, topocast.cli.main as m; threading.Thread(target=threading.Event().wait).start(); m.exit_now(130)"
    proc = subprocess.run([sys.executable, "-c", stuck], env=_env(), timeout=60, capture_output=True, text=True)
    assert proc.returncode == 130, proc.stderr


def test_an_agent_dying_after_ready_stops_an_all_or_nothing_run_before_the_start(monkeypatch, capsys):
    """Every agent reported ready, then one died while the prediction was still being made:
    with --all-or-nothing that is still a failure before the start, and no byte moves."""
    from topocast.runtime import coordinator, startup

    real = startup.send_trims
    started = []

    def trims_then_a_death(plan, conns, kept):
        real(plan, conns, kept)
        procs = _session_procs[0]
        procs["a1"].kill()
        procs["a1"].wait()

    _session_procs: list = []
    real_hand_out = coordinator.hand_out

    def hand_out(run, *rest, **kw):
        _session_procs.append(run.procs)
        return real_hand_out(run, *rest, **kw)

    real_go = coordinator._go_and_watch
    monkeypatch.setattr(startup, "send_trims", trims_then_a_death)
    monkeypatch.setattr(coordinator, "hand_out", hand_out)
    monkeypatch.setattr(coordinator, "_go_and_watch", lambda *a, **k: started.append(1) or real_go(*a, **k))
    argv = ["run", "builtin:hetero-2switch", "-a", "flat", "-s", "s", "--size", "64KiB", "--all-or-nothing"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert "a1 failed before the start" in err and "SIGKILL" in err, (out, err)
    assert not started
