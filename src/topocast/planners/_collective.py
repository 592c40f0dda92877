"""Building blocks shared by the MPI-style broadcast and allreduce planners.

* :class:`MPISchedule` writes a plan the way MPI processes execute a collective: each host
  runs its operations one after the other (blocking ``MPI_Send``/``MPI_Recv``/
  ``MPI_Sendrecv``). Every transfer waits (``after``) for the previous operation of its
  sender **and** of its receiver (rendezvous: a large message only flows once the receiver
  has posted the matching receive). Operations issued in one :meth:`MPISchedule.step` are
  concurrent (a ``Sendrecv`` exchange, one ring shift).
* MPICH's data layouts: :func:`mpich_chunks` (``ceil(n/p)``-byte chunks, last ones short or
  empty) and :func:`balanced_counts` (``n/p`` rounded, remainder to the first ranks).
* Collective skeletons over an ordered list of hosts (rank order): binomial broadcast,
  binomial scatter, ring allgather, recursive-doubling allgather (MPICH, including the
  non-power-of-two code path), ring reduce-scatter.
* :func:`detect_clusters` and :func:`switch_groups`: which hosts form a cluster / hang off
  one switch (rule documented on each function).

Zero-byte messages (empty chunks when ``p`` does not divide the size) are not planned: an MPI
implementation still sends them (one latency), we leave them out [I].
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..errors import InputError, PlanError
from ..plan import Ranges, Transfer, normalize_ranges

if TYPE_CHECKING:
    from ..plan import Broadcast
    from ..topology import Topology

#: one operation of an MPI step: (src, dst, ranges, reduce, label)
Operation = tuple[str, str, Iterable[Sequence[int]], bool, str]

__all__ = [
    "MPISchedule",
    "mpich_chunks",
    "balanced_counts",
    "counts_to_ranges",
    "binomial_children",
    "binomial_bcast",
    "binomial_scatter",
    "ring_allgather",
    "rdb_allgather",
    "ring_reduce_scatter",
    "switch_groups",
    "detect_clusters",
    "parse_clusters",
    "nic_bandwidth",
    "participants",
    "lowbit",
    "is_pof2",
]


def lowbit(x: int) -> int:
    return x & -x


def is_pof2(p: int) -> bool:
    return p > 0 and p & (p - 1) == 0


# --------------------------------------------------------------------------- data layouts
def mpich_chunks(offset: int, length: int, parts: int) -> list[Ranges]:
    """MPICH's scatter layout: chunk ``i`` is ``[i*ss, (i+1)*ss)`` with ``ss = ceil(n/p)``,
    clipped to the message (so the last chunks may be short or empty)."""
    ss = -(-length // parts) if parts else 0
    out = []
    for i in range(parts):
        a = min(i * ss, length)
        b = min((i + 1) * ss, length)
        out.append(normalize_ranges([(offset + a, b - a)]))
    return out


def balanced_counts(length: int, parts: int) -> list[int]:
    """``length // parts`` each, the remainder spread over the first parts (MPICH cnts[])."""
    q, r = divmod(length, parts)
    return [q + (1 if i < r else 0) for i in range(parts)]


def counts_to_ranges(offset: int, counts: Sequence[int]) -> list[Ranges]:
    out, pos = [], offset
    for c in counts:
        out.append(normalize_ranges([(pos, c)]))
        pos += c
    return out


def merge_ranges(*parts: Iterable[tuple[int, int]]) -> Ranges:
    """Concatenate range sequences, merging touching neighbours (order kept)."""
    out: list[list[int]] = []
    for rs in parts:
        for off, length in rs:
            if length <= 0:
                continue
            if out and out[-1][0] + out[-1][1] == off:
                out[-1][1] += length
            else:
                out.append([off, length])
    return tuple((a, b) for a, b in out)


# --------------------------------------------------------------------------- MPI process model
class MPISchedule:
    """Accumulates transfers with MPI blocking semantics (see module docstring).

    ``frontier[h]`` holds the transfers of ``h``'s latest operation; the next operation
    involving ``h`` waits for them.
    """

    def __init__(self, transfers: list[Transfer] | None = None):
        self.transfers: list[Transfer] = transfers if transfers is not None else []
        self.frontier: dict[str, tuple[int, ...]] = defaultdict(tuple)

    def add(self, t: Transfer) -> int:
        self.transfers.append(t)
        return len(self.transfers) - 1

    def send(
        self,
        src: str,
        dst: str,
        ranges: Iterable[Sequence[int]],
        *,
        reduce: bool = False,
        label: str = "",
        extra_after: Iterable[int] = (),
    ) -> int | None:
        """A blocking send ``src -> dst`` (one operation of both hosts). ``None`` if empty."""
        return self.step([(src, dst, ranges, reduce, label)], extra_after=extra_after).get((src, dst))

    def step(self, ops: Iterable[Operation], *, extra_after: Iterable[int] = ()) -> dict[tuple[str, str], int]:
        """Concurrent operations ``(src, dst, ranges, reduce, label)``: each waits for the
        latest operation of its two hosts; afterwards each host's frontier is the set of this
        step's transfers it takes part in. Returns ``{(src, dst): index}``."""
        normalized = ((src, dst, normalize_ranges(r), reduce, label) for src, dst, r, reduce, label in ops)
        return self._step(normalized, tuple(extra_after))

    def _step(
        self, ops: Iterable[tuple[str, str, Ranges, bool, str]], extra: tuple[int, ...]
    ) -> dict[tuple[str, str], int]:
        """``step`` of operations whose ranges are normalised already. The skeletons that send
        the same chunks step after step pass the chunks' own tuples, so a plan of a million
        transfers holds a few thousand sequences."""
        frontier = self.frontier  # read only until every operation of the step is made
        transfers = self.transfers
        made: dict[tuple[str, str], int] = {}
        touched: dict[str, list[int]] = defaultdict(list)
        for src, dst, ranges, reduce, label in ops:
            if not ranges:
                continue
            after = tuple(sorted({*frontier.get(src, ()), *frontier.get(dst, ()), *extra}))
            i = len(transfers)
            transfers.append(Transfer(src, dst, ranges, after=after, reduce=reduce, label=label))
            made[(src, dst)] = i
            touched[src].append(i)
            touched[dst].append(i)
        for h, idx in touched.items():
            frontier[h] = tuple(idx)
        return made

    def join(self, hosts: Iterable[str]) -> tuple[int, ...]:
        """Union of the frontiers of ``hosts`` (to start a later phase after all of them)."""
        out: set[int] = set()
        for h in hosts:
            out.update(self.frontier.get(h, ()))
        return tuple(sorted(out))

    def wait_for(self, host: str, deps: Iterable[int]) -> None:
        """Make ``host``'s next operation also wait for ``deps``."""
        self.frontier[host] = tuple(sorted(set(self.frontier.get(host, ())) | set(deps)))


# --------------------------------------------------------------------------- skeletons
def binomial_children(rel: int, p: int) -> list[int]:
    """Relative ranks rank ``rel`` sends to in MPICH's binomial tree, in send order
    (largest subtree first)."""
    top = lowbit(rel) if rel else 1 << max(p - 1, 0).bit_length()
    out = []
    mask = top >> 1
    while mask > 0:
        if rel + mask < p:
            out.append(rel + mask)
        mask >>= 1
    return out


def _preorder(p: int) -> list[int]:
    order, stack = [], [0]
    while stack:
        r = stack.pop()
        order.append(r)
        stack.extend(reversed(binomial_children(r, p)))
    return order


def binomial_bcast(
    sched: MPISchedule, hosts: Sequence[str], root: int, ranges: Iterable[Sequence[int]], label: str = "binomial"
) -> None:
    """MPICH ``bcast_intra_binomial`` over ``hosts`` (rank order) from ``hosts[root]``:
    relative rank ``r`` receives from ``r`` minus its lowest set bit, then sends to
    ``r + mask`` for decreasing masks (blocking sends, one after the other)."""
    p = len(hosts)
    ranges = normalize_ranges(ranges)
    for rel in _preorder(p):
        for child in binomial_children(rel, p):
            # step: send to the child of the largest remaining subtree
            sched.send(hosts[(rel + root) % p], hosts[(child + root) % p], ranges, label=label)


def binomial_scatter(
    sched: MPISchedule, hosts: Sequence[str], root: int, chunks: Sequence[Ranges], label: str = "scatter"
) -> None:
    """MPICH's binomial scatter (``MPII_Scatter_for_bcast``): relative rank ``r`` ends with
    ``chunks[r]``; a parent sends child ``c`` the chunks of the child's subtree
    ``[c, c + lowbit(c))``."""
    p = len(hosts)
    for rel in _preorder(p):
        for child in binomial_children(rel, p):
            sub = merge_ranges(*chunks[child : min(child + lowbit(child), p)])
            if sub:
                sched.send(hosts[(rel + root) % p], hosts[(child + root) % p], sub, label=label)


def ring_allgather(
    sched: MPISchedule, hosts: Sequence[str], root: int, chunks: Sequence[Ranges], label: str = "ring allgather"
) -> None:
    """MPICH's ring allgather (bcast_intra_scatter_ring_allgather): relative rank ``r`` starts
    with ``chunks[r]``; in step ``i = 1..p-1`` it sends to its right neighbour the chunk it
    received in the previous step (first its own) and receives the next one from the left."""
    ring, chunks = _ring(hosts, root), [normalize_ranges(c) for c in chunks]
    p = len(ring)
    for i in range(1, p):
        step = f"{label} {i}"
        # relative rank rel sends chunk (rel - i + 1) mod p to rel + 1
        sched._step([(ring[rel], ring[(rel + 1) % p], chunks[(rel - i + 1) % p], False, step) for rel in range(p)], ())


def _ring(hosts: Sequence[str], root: int) -> list[str]:
    """``hosts`` by relative rank: ``hosts[root]`` first."""
    return [*hosts[root:], *hosts[:root]]


def rdb_allgather(
    sched: MPISchedule, hosts: Sequence[str], root: int, chunks: Sequence[Ranges], label: str = "rdb allgather"
) -> None:
    """MPICH's recursive-doubling allgather of the scatter chunks
    (bcast_intra_scatter_recursive_doubling_allgather), including its non-power-of-two
    code path: after each doubling step, processes of a subtree whose partner does not exist
    get the missing chunks from the subtree's "haves" by recursive halving."""
    p = len(hosts)

    def chunk_span(a: int, b: int) -> Ranges:
        return merge_ranges(*chunks[max(a, 0) : min(b, p)])

    def h(rel: int) -> str:
        return hosts[(rel + root) % p]

    mask, i = 1, 0
    while mask < p:
        ops = []
        fix = []
        for rel in range(p):
            dst = rel ^ mask
            dst_tree_root = (dst >> i) << i
            my_tree_root = (rel >> i) << i
            if dst < p:
                ops.append((h(rel), h(dst), chunk_span(my_tree_root, my_tree_root + mask), False, f"{label} {mask}"))
            if dst_tree_root + mask > p:
                fix.append(rel)
        sched.step(ops)
        # non-power-of-two: "the haves in this subtree must send to the havenots"
        if fix:
            k = i
            tmp_mask = mask >> 1
            while tmp_mask:
                sends = []
                for rel in fix:
                    dst_tree_root = ((rel ^ mask) >> i) << i
                    my_tree_root = (rel >> i) << i
                    nprocs_completed = p - my_tree_root - mask
                    tree_root = (rel >> k) << k
                    dst = rel ^ tmp_mask
                    if (
                        dst > rel
                        and rel < tree_root + nprocs_completed
                        and dst >= tree_root + nprocs_completed
                        and dst < p
                    ):
                        sends.append(
                            (
                                h(rel),
                                h(dst),
                                chunk_span(dst_tree_root, dst_tree_root + mask),
                                False,
                                f"{label} fix {mask}/{tmp_mask}",
                            )
                        )
                sched.step(sends)
                tmp_mask >>= 1
                k -= 1
        mask <<= 1
        i += 1


def ring_reduce_scatter(
    sched: MPISchedule, hosts: Sequence[str], chunks: Sequence[Ranges], label: str = "ring reduce-scatter"
) -> None:
    """Ring reduce-scatter (MPICH ``allreduce_intra_ring``): in step ``i = 1..p-1`` rank ``r``
    sends chunk ``(r - i + 1) mod p`` (its partial sum) to ``r + 1``, which reduces it into its own.
    Afterwards rank ``r`` holds the complete reduction of chunk ``(r + 1) mod p``."""
    chunks = [normalize_ranges(c) for c in chunks]
    p = len(hosts)
    for i in range(1, p):
        step = f"{label} {i}"
        sched._step([(hosts[r], hosts[(r + 1) % p], chunks[(r - i + 1) % p], True, step) for r in range(p)], ())


# --------------------------------------------------------------------------- request helpers
def participants(topology: Topology, request: Broadcast) -> tuple[str, list[str]]:
    """(source, hosts in rank order) of a broadcast request: the topology's host order
    restricted to the source and the destinations."""
    dests = request.resolve(topology)
    members = set(dests) | {request.source}
    return request.source, [h for h in topology.hosts if h in members]


def nic_bandwidth(topology: Topology, host: str) -> float:
    """Bandwidth of a host's access (bytes/s): the slower direction of its widest attached
    link (the NIC speed in a cluster)."""
    from ..errors import TopologyError

    best = 0.0
    for lid in topology.out_links(host):
        link = topology.links[lid]
        try:
            back = topology.capacity(link.dst, host)
        except TopologyError:  # one-way link
            back = link.bandwidth
        best = max(best, min(link.bandwidth, back))
    return best


def switch_groups(topology: Topology, hosts: Sequence[str] | None = None) -> dict[str, list[str]]:
    """Hosts grouped by the switch they attach to (the switch at the far end of their widest
    link; a host attached to no switch is a group of its own). Keys in first-seen order."""
    hosts = list(topology.hosts if hosts is None else hosts)
    groups: dict[str, list[str]] = {}
    switches = set(topology.switches)
    for h in hosts:
        best, key = -1.0, h
        for lid in topology.out_links(h):
            link = topology.links[lid]
            if link.dst in switches and link.bandwidth > best:
                best, key = link.bandwidth, link.dst
        groups.setdefault(key, []).append(h)
    return groups


def parse_clusters(
    spec: str | Iterable[Iterable[str]], hosts: Sequence[str], source: str = "clusters"
) -> list[list[str]]:
    """Explicit clusters: a list of host lists, or ``"a1,a2;b1,b2"``. Every host of
    ``hosts`` must appear exactly once."""
    if isinstance(spec, str):
        groups = [[x.strip() for x in part.split(",") if x.strip()] for part in spec.split(";") if part.strip()]
    else:
        groups = [list(g) for g in spec]
    seen: dict[str, int] = {}
    for gi, g in enumerate(groups):
        for x in g:
            if x in seen:
                raise InputError(f"host {x!r} is in two clusters", element=source)
            seen[x] = gi
    missing = [h for h in hosts if h not in seen]
    if missing:
        raise InputError(
            f"hosts {', '.join(missing)} are in no cluster (expected 'a1,a2;b1,b2' covering every host)", element=source
        )
    order = {h: i for i, h in enumerate(hosts)}
    out = [[x for x in g if x in order] for g in groups]
    return [sorted(g, key=order.__getitem__) for g in out if g]


def detect_clusters(topology: Topology, hosts: Sequence[str] | None = None) -> list[list[str]]:
    """Split ``hosts`` into clusters joined by wide-area links.

    Rule [I]:

    1. latency: let ``L`` be the largest latency of the links that touch no host (of all
       links if every link touches a host). If ``L > 0`` and some link is faster, remove those
       links of latency ``L``; the connected components that contain hosts are the clusters;
    2. otherwise (or if that leaves one component), bandwidth: remove the inter-switch links
       narrower than every host's access link (thinned up-links);
    3. otherwise one cluster.

    Clusters come in host order (the cluster of the first host first); hosts keep their order.
    Pass ``clusters=`` to the planners to override.
    """
    hosts = list(topology.hosts if hosts is None else hosts)
    if len(hosts) <= 1 or not topology.physical_links:
        return [hosts]
    plinks = list(topology.physical_links)
    host_set = set(topology.hosts)

    def components(removed: set[int]) -> list[list[str]]:
        parent = {n: n for n in topology.nodes}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for i, pl in enumerate(plinks):
            if i not in removed:
                ra, rb = find(pl.a), find(pl.b)
                if ra != rb:
                    parent[ra] = rb
        groups: dict[str, list[str]] = {}
        for h in hosts:
            groups.setdefault(find(h), []).append(h)
        return list(groups.values())

    # step 1: largest latency
    inner = [i for i, pl in enumerate(plinks) if pl.a not in host_set and pl.b not in host_set]
    cand = inner or list(range(len(plinks)))
    top = max(plinks[i].latency for i in cand)
    if top > 0 and min(pl.latency for pl in plinks) < top:
        comps = components({i for i in cand if plinks[i].latency == top})
        if len(comps) > 1:
            return comps
    # step 2: thinned inter-switch links
    access = min(nic_bandwidth(topology, h) for h in hosts)
    thin = {
        i
        for i, pl in enumerate(plinks)
        if pl.a not in host_set
        and pl.b not in host_set
        and min(pl.bandwidth, pl.bandwidth if getattr(pl, "directed", False) else pl.reverse_bandwidth) < access
    }
    if thin:
        comps = components(thin)
        if len(comps) > 1:
            return comps
    return [hosts]


def clusters_for(
    topology: Topology, hosts: Sequence[str], clusters: str | Iterable[Iterable[str]] | None = None
) -> list[list[str]]:
    """Explicit ``clusters`` (see :func:`parse_clusters`) or :func:`detect_clusters`,
    restricted to ``hosts``."""
    if clusters is not None:
        return parse_clusters(clusters, hosts)
    keep = set(hosts)
    out = [[h for h in g if h in keep] for g in detect_clusters(topology)]
    return [g for g in out if g]


def wan_capacity(topology: Topology, a: str, b: str) -> float:
    """Bandwidth of the inter-cluster part of ``route(a, b)``: the narrowest link on it that
    touches no host (the whole route if every link touches a host)."""
    links = [topology.links[i] for i in topology.route(a, b)]
    inner = [l.bandwidth for l in links if not (topology.is_host(l.src) or topology.is_host(l.dst))]
    return min(inner) if inner else min(l.bandwidth for l in links)


def require(cond: bool, message: str, element: str = "topology") -> None:
    if not cond:
        raise PlanError(message, element=element)


def log2ceil(p: int) -> int:
    return max(0, math.ceil(math.log2(p))) if p > 1 else 0


# --------------------------------------------------------------------------- GridMPI layout
class GridLayout:
    """Data layout of the GridMPI modified algorithms [I] (docs/algorithms.md 5.6).

    The message ``[0, size)`` is cut into ``n`` blocks (one per inter-cluster connection).
    The ``p`` hosts of a cluster (``hosts`` in relative order: ``hosts[0]`` is the root or
    cluster leader) are cut into ``n`` contiguous groups; the first member of group ``i`` is
    the *selected* host that talks to the other cluster for block ``i``. Block ``i`` is split
    among the members of group ``i``: ``superchunk[r]`` is what relative rank ``r`` owns in the
    scatter / reduce-scatter / allgather phases. With ``n == p`` every host is selected and
    ``superchunk[r]`` is block ``r``.
    """

    def __init__(self, hosts: Sequence[str], size: int, n: int):
        self.hosts = list(hosts)
        p = len(self.hosts)
        self.n = n
        self.blocks = counts_to_ranges(0, balanced_counts(size, n))
        self.groups: list[list[int]] = []
        pos = 0
        for g in balanced_counts(p, n):
            self.groups.append(list(range(pos, pos + g)))
            pos += g
        self.superchunk: list[Ranges] = [()] * p
        for i, members in enumerate(self.groups):
            ((off, length),) = self.blocks[i] or ((0, 0),)
            for k, piece in enumerate(counts_to_ranges(off, balanced_counts(length, len(members)))):
                self.superchunk[members[k]] = piece

    def selected(self, i: int) -> str:
        return self.hosts[self.groups[i][0]]

    def funnel(self, sched: MPISchedule, label: str = "funnel") -> None:
        """Members of each group send their superchunk to the group's selected host
        (one receive after the other at the selected host; groups in parallel)."""
        depth = max(len(g) for g in self.groups)
        for k in range(1, depth):
            ops = [
                (self.hosts[g[k]], self.hosts[g[0]], self.superchunk[g[k]], False, label)
                for g in self.groups
                if k < len(g)
            ]
            sched.step(ops)

    def unfunnel(self, sched: MPISchedule, label: str = "unfunnel") -> None:
        """Selected hosts send each group member its superchunk (the reverse of funnel)."""
        depth = max(len(g) for g in self.groups)
        for k in range(1, depth):
            ops = [
                (self.hosts[g[0]], self.hosts[g[k]], self.superchunk[g[k]], False, label)
                for g in self.groups
                if k < len(g)
            ]
            sched.step(ops)


def connections_for(
    topology: Topology, a_hosts: Sequence[str], b_hosts: Sequence[str], connections: int | None = None
) -> tuple[int, dict[str, object]]:
    """Number of inter-cluster connections ``n`` and how it was chosen.

    Default (GridMPI congestion avoidance): ``n = floor(C_wan / B_nic)`` limited to
    ``[1, min(pA, pB)]``, with ``C_wan`` the inter-cluster capacity between the two leaders
    (:func:`wan_capacity`) and ``B_nic`` the slowest NIC of the two clusters.
    """
    limit = min(len(a_hosts), len(b_hosts))
    if connections is not None:
        n = int(connections)
        if n < 1:
            raise InputError(f"connections must be >= 1, got {connections!r}", element="connections")
        return min(n, limit), {"connections_rule": "given", "requested": n}
    cwan = wan_capacity(topology, a_hosts[0], b_hosts[0])
    nic = min(nic_bandwidth(topology, h) for h in list(a_hosts) + list(b_hosts))
    n = max(1, min(limit, int(math.floor(cwan / nic * (1 + 1e-9)))))
    return n, {"connections_rule": "floor(backbone / NIC)", "wan_capacity": cwan, "nic_bandwidth": nic}
