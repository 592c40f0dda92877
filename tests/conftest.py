"""Whole-session checks: the test session's processes (and every command they start) make
their temporary files in a directory of their own, so that whatever topocast leaves there
is this session's, and the session fails naming it. A session with simulator tests also
compiles the numba kernels in a process of its own from its start (tests/sim/warm_kernels.py),
beside the tests that come first."""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_session_tmp: Path | None = None
_warming: subprocess.Popen | None = None


def pytest_configure(config):
    global _session_tmp
    if hasattr(config, "workerinput") or _session_tmp is not None:
        return
    _session_tmp = Path(tempfile.mkdtemp(prefix="tc-tests-"))  # short: unix socket paths live under it
    os.environ["TMPDIR"] = str(_session_tmp)
    tempfile.tempdir = None  # tempfile reads TMPDIR again


def pytest_collection_finish(session):
    """Start compiling the simulator's kernels when the session will need them: on a fresh
    checkout the first compiled simulation would otherwise wait for the whole compilation."""
    global _warming
    if _session_tmp is None or importlib.util.find_spec("numba") is None:
        return
    if any(item.path.parent.name == "sim" for item in session.items):
        script = Path(__file__).parent / "sim" / "warm_kernels.py"
        _warming = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sys.meta_path.insert(0, _NumbaAfterWarmUp())


class _NumbaAfterWarmUp(importlib.abc.MetaPathFinder):
    """Holds this process's first look-up of numba until the warm-up has ended: two processes
    compiling the same kernel into one cache could each write its index, and a signature could
    then be read with another's machine code."""

    def find_spec(self, name, path=None, target=None):
        if name == "numba":
            sys.meta_path.remove(self)
            try:
                _warming.wait(timeout=WARM_UP_LIMIT)
            except subprocess.TimeoutExpired:
                _end_warm_up()
        return None  # the import goes on as usual


WARM_UP_LIMIT = 900  # seconds; a warm-up that hangs is killed and the tests compile themselves


def _end_warm_up() -> None:
    """Stop the warm-up if it still runs (its cache writes are atomic) and reap it."""
    if _warming is not None:
        if _warming.poll() is None:
            _warming.kill()
        _warming.wait()


def pytest_sessionfinish(session, exitstatus):
    _end_warm_up()
    if _session_tmp is None:
        return
    if "topocast.runtime.forkserver" in sys.modules:  # this process's own server: done with it now
        sys.modules["topocast.runtime.forkserver"]._close_client()
    left = sorted(p.name for p in _session_tmp.glob("topocast-*"))
    if left:
        writer = session.config.get_terminal_writer()
        writer.line()
        writer.line(f"topocast left temporary entries behind in {_session_tmp}: {', '.join(left)}", red=True)
        session.exitstatus = 1
        return
    shutil.rmtree(_session_tmp, ignore_errors=True)
