"""One check, one message: every place that needs a host of the topology asks
``Topology.require_host`` and says "'X' is not a host of topology 'T' (hosts: ...)"."""

from __future__ import annotations

import numpy as np
import pytest

from topocast import Broadcast, broadcast_bounds, check_plan, get_planner, load_topology
from topocast.errors import InputError, PlanError
from topocast.plan import Allreduce, Plan, Redistribution, Transfer
from topocast.redistribute.matrix import resolve_platform

TOPO = load_topology("builtin:two-clusters")
MESSAGE = "'ghost' is not a host of topology 'two-clusters' (hosts: s, a1, a2, a3, b1, b2, b3, b4)"


def test_require_host_returns_the_host_or_names_the_element():
    assert TOPO.require_host("a1") == "a1"
    with pytest.raises(InputError) as err:
        TOPO.require_host("ghost", element="--source")
    assert str(err.value) == f"--source: {MESSAGE}"
    with pytest.raises(PlanError):
        TOPO.require_host("swA", error=PlanError)  # a switch is not a host either


def test_a_long_host_list_is_cut():
    many = load_topology("builtin:fat-tree-k4")
    text = many.not_a_host("ghost")
    assert text.endswith(", ...)") and text.count(",") == 8


@pytest.mark.parametrize(
    "call, element",
    [
        (lambda: Broadcast("ghost", 10).resolve(TOPO), "source"),
        (lambda: Broadcast("s", 10, ("a1", "ghost")).resolve(TOPO), "destinations"),
        (lambda: broadcast_bounds(TOPO, "ghost"), "source"),
        (lambda: Allreduce(8, ("a1", "ghost")).resolve(TOPO), "hosts"),
        (lambda: resolve_platform(Redistribution(np.ones((1, 1), dtype=int), ("a1",), ("ghost",)), TOPO), "receivers"),
        (lambda: get_planner("broadcast", "flat")(TOPO, Broadcast("ghost", 10)), "source"),
    ],
)
def test_every_request_says_it_the_same_way(call, element):
    with pytest.raises(InputError) as err:
        call()
    assert err.value.message == MESSAGE and err.value.element == element


def test_check_plan_and_the_command_line_say_it_the_same_way(capsys):
    from topocast.cli.main import main

    plan = Plan.broadcast("s", 10, ["ghost"], [Transfer.of("s", "ghost", 0, 10)], planner="typo")
    with pytest.raises(PlanError, match=MESSAGE.replace("(", r"\(").replace(")", r"\)")):
        check_plan(plan, TOPO)
    assert main(["simulate", "builtin:two-clusters", "-a", "flat", "-s", "ghost", "--size", "1KiB"]) == 2
    assert f"--source: {MESSAGE}" in capsys.readouterr().err
