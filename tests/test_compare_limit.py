"""``topocast compare --time-limit``: a planner whose simulation is on course to take longer
than the limit is stopped and named with the time the projection gives; the others finish."""

from __future__ import annotations

import itertools
import json

import pytest

from topocast.cli.main import main
from topocast.evaluate import compare as comparison
from topocast.topology.generators import random_tree
from topocast.topology.io import save_file


class _FakeClock:
    """A clock that advances one second each time it is read."""

    def __init__(self):
        self._ticks = itertools.count()

    def __call__(self) -> float:
        return float(next(self._ticks))


@pytest.fixture
def slow_clock(monkeypatch):
    real_init = comparison._Watch.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self._clock = _FakeClock()
        self.start = self._clock()

    monkeypatch.setattr(comparison._Watch, "__init__", init)


def test_a_planner_on_course_to_exceed_the_limit_is_stopped(slow_clock):
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, seed=2)
    seen = []
    _, results = comparison.compare(
        topo,
        topo.hosts[0],
        1 << 24,
        ["binomial", "scatter_allgather_ring"],
        time_limit=3.0,
        on_progress=lambda name, done, total: seen.append((name, done, total)),
    )
    outcome = dict(results)
    assert not isinstance(outcome["binomial"], str)  # few events: no progress report, no stop
    ring = outcome["scatter_allgather_ring"]
    assert isinstance(ring, str) and ring.startswith(comparison.OVER_LIMIT), ring
    assert "transfers simulated, about" in ring
    done = [d for name, d, _ in seen if name == "scatter_allgather_ring"]
    assert done[0] == 0 and max(done) > 0  # progress reported while it ran


def test_no_limit_lets_every_planner_finish(slow_clock):
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, seed=2)
    _, results = comparison.compare(topo, topo.hosts[0], 1 << 24, ["binomial", "scatter_allgather_ring"])
    assert all(not isinstance(r, str) for _, r in results)


def test_cli_names_the_planner_over_the_limit(slow_clock, tmp_path, capsys):
    path = tmp_path / "tree.yaml"
    save_file(random_tree(40, 10, min_mbit=100, max_mbit=1000, seed=2), path)
    argv = ["compare", str(path), "-a", "binomial,scatter_allgather_ring", "--size", "16MiB", "--time-limit", "3s"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["algorithm"] for r in out["results"]] == ["binomial"]
    assert out["errors"]["scatter_allgather_ring"].startswith("over the time limit (3 s)")
