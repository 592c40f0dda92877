"""Shared fixtures for the topology tests: where ../shared/data is."""

from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
# The data sits beside the repository root (../shared/data); in a git worktree under
# /work/wt/<branch> it is one level further up.
_CANDIDATES = [_ROOT / ".." / "shared" / "data", _ROOT / ".." / ".." / "shared" / "data"]


def shared_data() -> Path | None:
    for c in _CANDIDATES:
        if c.is_dir():
            return c.resolve()
    return None


@pytest.fixture
def data_dir() -> Path:
    d = shared_data()
    if d is None:
        pytest.skip("../shared/data (third-party SimGrid/Topology Zoo files) is not present beside the repository")
    return d
