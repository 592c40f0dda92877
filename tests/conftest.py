"""Whole-session checks: the test session's processes (and every command they start) make
their temporary files in a directory of their own, so that whatever topocast leaves there
is this session's, and the session fails naming it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_session_tmp: Path | None = None


def pytest_configure(config):
    global _session_tmp
    if hasattr(config, "workerinput") or _session_tmp is not None:
        return
    _session_tmp = Path(tempfile.mkdtemp(prefix="tc-tests-"))  # short: unix socket paths live under it
    os.environ["TMPDIR"] = str(_session_tmp)
    tempfile.tempdir = None  # tempfile reads TMPDIR again


def pytest_sessionfinish(session, exitstatus):
    if _session_tmp is None:
        return
    import sys

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
