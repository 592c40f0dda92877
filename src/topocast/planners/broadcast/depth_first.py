"""Depth-first pipeline broadcast (Shirai, Saito, Taura — HPDC 2007).

One chain through the destinations in depth-first (preorder) order of the topology, rooted at
the source; each hop is carried along the DFS tree path between consecutive hosts (up to
their lowest common ancestor, then down), so on a tree every directed link is used at most
once. Every hop is pipelined: a host forwards bytes as they arrive.

Readings that are ours (docs/algorithms.md 2.3, [I]): the source gives no child order; we visit
neighbours by decreasing link bandwidth (ties: node order), which on a tree does not change
any link's load. On a general graph the DFS spanning tree fixes the paths (explicit ``path``
on each hop) instead of the topology's default routes, which keeps the one-use-per-link
property. With store-and-forward relays (our simulator and runtime) host i of the chain gets
the minimum of the hop rates up to it, and every host behind a slow hop inherits its rate.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan, Transfer
from ..registration import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_depth_first", "dfs_order"]


def dfs_order(topology: Topology, source: str) -> tuple[list[str], dict[str, str | None], dict[str, int]]:
    """Preorder of all nodes reachable from ``source`` (neighbours by decreasing link
    bandwidth, ties by node order), with the DFS tree's parent and depth of every node."""
    bw = topology.link_bandwidth
    links = topology.links
    index = topology.index

    def neighbours(x: str) -> Iterator[str]:
        out = sorted(topology.out_links(x), key=lambda lid: (-bw[lid], index(links[lid].dst)))
        return iter([links[lid].dst for lid in out])

    order = [source]
    parent: dict[str, str | None] = {source: None}
    depth = {source: 0}
    stack = [(source, neighbours(source))]
    while stack:
        x, it = stack[-1]
        for y in it:
            if y not in parent:
                parent[y] = x
                depth[y] = depth[x] + 1
                order.append(y)
                stack.append((y, neighbours(y)))
                break
        else:
            stack.pop()
    return order, parent, depth


def _tree_path(u: str, v: str, parent, depth) -> tuple[str, ...]:
    up, down = [u], [v]
    a, b = u, v
    while depth[a] > depth[b]:
        a = parent[a]
        up.append(a)
    while depth[b] > depth[a]:
        b = parent[b]
        down.append(b)
    while a != b:
        a = parent[a]
        b = parent[b]
        up.append(a)
        down.append(b)
    return tuple(up + down[-2::-1])


@register_planner(
    "broadcast",
    "depth_first",
    summary="one pipeline through the hosts in depth-first order; each link used once on a tree",
    reference="Shirai, Saito, Taura, A Fast Topology Inference, HPDC 2007 (as used by Takahashi et al., CCGrid 2008)",
    aliases=("depth-first", "dfs"),
)
def plan_depth_first(topology: Topology, request: Broadcast) -> Plan:
    """A pipelined chain ``source -> d1 -> d2 -> ...`` in DFS preorder."""
    dests = request.resolve(topology)
    wanted = set(dests)
    order, parent, depth = dfs_order(topology, request.source)
    chain = [request.source] + [x for x in order if x in wanted]
    transfers = []
    for k, (u, v) in enumerate(zip(chain, chain[1:])):
        tree_path = None if topology.routes else _tree_path(u, v, parent, depth)
        # one-way links (imported SimGrid route graphs): the way back up the DFS tree may
        # not exist; fall back to the topology's route for this hop (path None). Where the
        # topology declares its routes, every hop takes its route (docs/design.md, The Plan).
        usable = tree_path is not None and all(topology.has_link(x, y) for x, y in zip(tree_path, tree_path[1:]))
        path = tree_path if usable else None
        transfers.append(
            Transfer(
                u,
                v,
                ((0, request.size),),
                pipelined=True,
                upstream=k - 1 if k > 0 else None,
                path=path,
                label="chain",
            )
        )
    return Plan.broadcast(request.source, request.size, dests, transfers, planner="depth_first")
