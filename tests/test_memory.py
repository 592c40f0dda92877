"""Work too large for memory is refused before it is allocated, with the size in the message."""

from __future__ import annotations

import pytest

from topocast import memory
from topocast.cli.main import main
from topocast.errors import InputError
from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.sim import simulate
from topocast.topology.generators import random_tree


@pytest.fixture
def little_memory(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 50 * 2**20)  # 50 MiB


def test_a_plan_too_large_names_its_size(little_memory):
    topo = random_tree(3000, 750, seed=1)
    with pytest.raises(InputError, match=r"plan of [\d,]+ transfers .* about [\d.]+ GiB .* 0\.0 GiB is available"):
        get_planner("broadcast", "stable")(topo, Broadcast(topo.hosts[0], 10**9), rate_tolerance=0)


def test_a_topology_too_large_names_its_size(little_memory):
    with pytest.raises(InputError, match=r"random_tree: a topology of 1,250,000 nodes would need about"):
        random_tree(1_000_000, 250_000)


def test_simulating_a_plan_too_large_names_its_size(monkeypatch):
    topo = random_tree(200, 50, seed=1)
    plan = get_planner("broadcast", "flat")(topo, Broadcast(topo.hosts[0], 10**9))
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    with pytest.raises(InputError, match=r"simulating a plan of 199 transfers would need"):
        simulate(plan, topo)


def test_the_cli_exits_2_with_the_size(little_memory, capsys):
    code = main(["topology", "generate", "random-tree", "--hosts", "1000000", "--switches", "250000"])
    assert code == 2
    assert "1,250,000 nodes" in capsys.readouterr().err
