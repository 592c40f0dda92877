"""What transfers between the hosts can tell apart: a tree reduced to its bandwidth-equivalent
form, and the hosts grouped under each switch (how ``topocast probe``'s result is compared
with the truth; docs/experiments/probe.md, "Chains and invisible switches").

Three reductions, none of which changes the max-min rates of any set of host-to-host
transfers, applied until none applies:

1. a switch with nothing behind it but one link (no host reachable through it) is removed;
2. a switch-to-switch link that can never be full is contracted (its two switches become
   one): in each direction its bandwidth is at least the most the hosts on one side can send
   to the other side through the rest of the tree (the max flow with this link uncapped), so
   no set of transfers is ever limited by it;
3. a chain (a switch with exactly two links, one of them to a switch) becomes one link of
   the smaller bandwidth in each direction (latencies add up).
"""

from __future__ import annotations

from ..topology.model import PhysicalLink, Topology

__all__ = ["bandwidth_equivalent", "host_groups"]


def host_groups(topo: Topology) -> set[frozenset]:
    """The sets of hosts hanging off one switch (a host attached to no switch: alone)."""
    hosts = set(topo.hosts)
    out = set()
    for sw in topo.switches:
        g = frozenset(pl.a if pl.b == sw else pl.b for pl in topo.physical_links if sw in (pl.a, pl.b)) & hosts
        if g:
            out.add(g)
    grouped = set().union(*out) if out else set()
    return out | {frozenset([h]) for h in hosts - grouped}


def bandwidth_equivalent(topo: Topology) -> Topology:
    """``topo`` (a tree) with the reductions of the module comment applied."""
    cap: dict[tuple[str, str], float] = {}
    lat: dict[frozenset, float] = {}
    adj: dict[str, set] = {n: set() for n in [*topo.hosts, *topo.switches]}
    for pl in topo.physical_links:
        cap[(pl.a, pl.b)], cap[(pl.b, pl.a)] = pl.bandwidth, pl.reverse_bandwidth
        lat[frozenset((pl.a, pl.b))] = pl.latency
        adj[pl.a].add(pl.b)
        adj[pl.b].add(pl.a)
    hosts, switches = set(topo.hosts), [s for s in topo.switches]
    changed = True
    while changed:
        changed = (
            _drop_empty(adj, hosts, switches)
            or _contract_invisible(adj, cap, lat, hosts, switches)
            or _merge_chains(adj, cap, lat, hosts, switches)
        )
    links, seen = [], set()
    for a in [*topo.hosts, *switches]:  # hosts first: a host's link is written host -> switch
        for b in sorted(adj[a]):
            if frozenset((a, b)) not in seen:
                seen.add(frozenset((a, b)))
                ab, ba = cap[(a, b)], cap[(b, a)]
                links.append(PhysicalLink(a, b, ab, lat[frozenset((a, b))], None if ab == ba else ba))
    return Topology(topo.name, list(topo.hosts), switches, links)


def _remove(adj: dict, switches: list, s: str) -> None:
    for n in adj.pop(s):
        adj[n].discard(s)
    switches.remove(s)


def _drop_empty(adj, hosts, switches) -> bool:
    for s in switches:
        if len(adj[s]) <= 1:
            _remove(adj, switches, s)
            return True
    return False


def _reach(adj, cap, hosts, x: str, p: str, outward: bool) -> float:
    """The most the hosts behind x (seen from p) can send to p (``outward`` False) or
    receive from p (True), through the tree below x."""
    link = cap[(p, x)] if outward else cap[(x, p)]
    if x in hosts:
        return link
    inner = sum(_reach(adj, cap, hosts, c, x, outward) for c in adj[x] if c != p)
    return min(link, inner)


def _contract_invisible(adj, cap, lat, hosts, switches) -> bool:
    for u in switches:
        for v in list(adj[u]):
            if v in hosts or v < u:
                continue
            send_u = sum(_reach(adj, cap, hosts, c, u, False) for c in adj[u] if c != v)
            recv_v = sum(_reach(adj, cap, hosts, c, v, True) for c in adj[v] if c != u)
            send_v = sum(_reach(adj, cap, hosts, c, v, False) for c in adj[v] if c != u)
            recv_u = sum(_reach(adj, cap, hosts, c, u, True) for c in adj[u] if c != v)
            if cap[(u, v)] >= min(send_u, recv_v) and cap[(v, u)] >= min(send_v, recv_u):
                for n in adj[v] - {u}:
                    cap[(u, n)], cap[(n, u)] = cap[(v, n)], cap[(n, v)]
                    lat[frozenset((u, n))] = lat[frozenset((v, n))] + lat[frozenset((u, v))]
                    adj[u].add(n)
                    adj[n].add(u)
                _remove(adj, switches, v)
                return True
    return False


def _merge_chains(adj, cap, lat, hosts, switches) -> bool:
    for s in switches:
        if len(adj[s]) == 2 and any(n not in hosts for n in adj[s]):
            a, b = sorted(adj[s])
            cap[(a, b)] = min(cap[(a, s)], cap[(s, b)])
            cap[(b, a)] = min(cap[(b, s)], cap[(s, a)])
            lat[frozenset((a, b))] = lat[frozenset((a, s))] + lat[frozenset((s, b))]
            adj[a].add(b)
            adj[b].add(a)
            _remove(adj, switches, s)
            return True
    return False
