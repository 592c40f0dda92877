import os
import shutil
import uuid

import pytest


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the emulated network needs root (network namespaces and tc); CI runs as root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` (iproute2) is not installed"
    if not os.path.isdir("/sys/class/net"):
        return "no /sys/class/net"
    return None


@pytest.fixture
def testbed_factory(tmp_path, monkeypatch):
    """Build testbeds with a private state directory; every one is torn down afterwards."""
    why = _why_not()
    if why:
        pytest.skip(why)
    monkeypatch.setenv("TOPOCAST_STATE_DIR", str(tmp_path / "state"))
    from topocast.testbed import down, list_states, up

    made = []

    def make(topology, **kw):
        name = kw.pop("name", f"t{uuid.uuid4().hex[:8]}")
        made.append(name)
        return up(topology, name=name, **kw)

    try:
        yield make
    finally:
        for name in made:
            if name in list_states():
                down(name)
