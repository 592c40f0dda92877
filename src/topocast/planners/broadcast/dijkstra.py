"""'Dijkstra' relay tree: add, one at a time, the host reachable with the largest bandwidth.

Reference: C.-M. Wang, C.-C. Wu, H.-M. Chang (Wang, Wu, Chang), "A novel data grid coherence
protocol using pipeline-based aggressive copy method", GPC 2007, pp. 484-495; as described
in the Stable Broadcast slides [S:SB-slides 15, 43]; docs/algorithms.md section 2.5.

Paper (as summarised by the slides): build the relaying structure greedily, adding one by one
the node reachable with the maximum bandwidth; slow nodes have little effect; some links are
used by many transfers and may become bottlenecks.

Ours ([I]):
* default ``variant="load-aware"``: a candidate hop u->v is worth
  ``min(rate[u], min_{e in route(u,v)} c(e) / (load(e) + k(e)))`` where ``load`` counts the
  hops already chosen that cross e, e is a resource (a shared cable is one for both
  directions) and k(e) is how often the route crosses it (twice for a declared route up to a
  gateway and back, else 1); the best candidate is added (ties: lowest host order, parent
  first), then ``load`` is updated. Read literally with isolated bandwidths the greedy
  degenerates on trees (docs/algorithms.md 2.5), so the literal readings are options:
  ``"widest"`` (variant A, widest path ``min(key[u], bw(u,v))``) and ``"prim"`` (variant B,
  ``bw(u,v)``);
* every host forwards the whole message to all its children at once, pipelined, no caps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...bounds.route import RootedTree
from ...errors import InputError
from ...plan import Broadcast, Plan, Transfer
from ..registration import register_planner
from ._trees import resource_arrays, undirected_tree

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_dijkstra", "dijkstra_tree", "first_exact"]

VARIANTS = ("load-aware", "widest", "prim")


def _route_matrix(topology: Topology, hosts: Sequence[str]):
    """Padded directed-link ids of route(h_i, h_j) (pad = an extra link of infinite capacity)."""
    n_links = len(topology.links)
    if topology.is_tree():
        mat = _tree_route_matrix(topology, hosts)
        if mat is not None:
            return _with_declared_routes(topology, hosts, mat) if topology.routes else mat
    routes = [[topology.route(u, v) if u != v else () for v in hosts] for u in hosts]
    lmax = max((len(r) for row in routes for r in row), default=1) or 1
    mat = np.full((len(hosts), len(hosts), lmax), n_links, dtype=np.int64)
    for i, row in enumerate(routes):
        for j, r in enumerate(row):
            if r:
                mat[i, j, : len(r)] = r
    return mat


def _tree_route_matrix(topology: Topology, hosts: Sequence[str]) -> np.ndarray | None:
    """``_route_matrix`` on a tree, every pair at once: the path of ``Topology.route`` (up
    from ``h_i`` to the lowest common ancestor, then down to ``h_j``) read off each host's
    chain of ancestors, one position of the paths per step for all pairs, instead of h^2
    walks in Python. None when a route is missing (a one-way link): the caller falls back to
    ``Topology.route``, which names the pair."""
    parent, depth, up, down = (np.asarray(x, dtype=np.int64) for x in topology._rooted_tree())
    idx = np.array([topology.index(x) for x in hosts], dtype=np.int64)
    if (depth[idx] < 0).any():
        return None
    h, pad = len(hosts), len(topology.links)
    dep = depth[idx]
    top = int(dep.max(initial=0))
    # anc[i, d]: the ancestor of h_i at depth d (padded with a value no other host's holds)
    anc = np.repeat(-1 - np.arange(h, dtype=np.int64)[:, None], top + 1, axis=1)
    cur = idx.copy()
    for _ in range(top + 1):
        live = cur >= 0
        anc[live, depth[cur[live]]] = cur[live]
        cur = np.where(live, parent[np.maximum(cur, 0)], -1)
    same = anc[:, None, :] == anc[None, :, :]
    lca = np.where(same.all(axis=2), top + 1, same.argmin(axis=2)) - 1  # depth of the common ancestor
    del same
    node = np.maximum(anc, 0)
    rise_len = dep[:, None] - lca  # links up from h_i; then dep_j - lca links down to h_j
    lmax = max(int((rise_len + dep[None, :] - lca).max(initial=0)), 1)
    # rise[i, k]: the k-th link up from h_i
    steps = np.arange(top)
    rise = np.full((h, max(top, lmax)), pad, dtype=np.int64)
    below = steps[None, :] < dep[:, None]
    rise[:, :top] = np.where(below, up[node[np.arange(h)[:, None], np.maximum(dep[:, None] - steps, 0)]], pad)
    # fall[j, off + d]: the link down onto depth d towards h_j, pad above depth 1 and past h_j,
    # so that the k-th link of a route, once falling, is fall[j, off + 2 lca + 1 + k - dep_i]
    off = top + 1
    width = off + 2 * top + lmax + 2
    fall = np.full((h, width), pad, dtype=np.int64)
    depths = np.arange(top + 1)
    on_path = (depths[None, :] >= 1) & (depths[None, :] <= dep[:, None])
    fall[:, off : off + top + 1] = np.where(on_path, down[node], pad)
    at = (2 * lca + 1 - dep[:, None] + off) + (np.arange(h) * width)[None, :]
    flat = fall.ravel()
    mat = np.empty((h, h, lmax), dtype=np.int64)
    for k in range(lmax):
        mat[:, :, k] = np.where(k < rise_len, rise[:, k][:, None], flat.take(at + k))
    if (mat == -1).any():
        return None
    return mat


def _with_declared_routes(topology: Topology, hosts: Sequence[str], mat: np.ndarray) -> np.ndarray:
    """``mat`` (tree paths) with the declared routes between the hosts written over their
    pairs: one pass over the declared routes instead of a route per host pair."""
    where = {h: i for i, h in enumerate(hosts)}
    pairs = [(where[u], where[v], r) for (u, v), r in topology.routes.items() if u in where and v in where and u != v]
    if not pairs:
        return mat
    routes = [topology.route(hosts[i], hosts[j]) for i, j, _ in pairs]
    lmax = max(mat.shape[2], max(len(r) for r in routes))
    if lmax > mat.shape[2]:
        wide = np.full(mat.shape[:2] + (lmax,), len(topology.links), dtype=np.int64)
        wide[:, :, : mat.shape[2]] = mat
        mat = wide
    for (i, j, _), r in zip(pairs, routes):
        mat[i, j, : len(r)] = r
        mat[i, j, len(r) :] = len(topology.links)
    return mat


def dijkstra_tree(
    topology: Topology, source: str, destinations: Sequence[str], variant: str = "load-aware"
) -> list[tuple[str, str]]:
    """Parent of every destination (host names) in insertion order: list of (parent, child)."""
    if variant not in VARIANTS:
        raise InputError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}", element="variant")
    hosts = [source] + list(destinations)
    h = len(hosts)
    mat = _route_matrix(topology, hosts)
    cap = np.append(topology.link_bandwidth, np.inf)
    hops = []
    if variant != "load-aware":
        iso = cap[mat].min(axis=2)  # isolated bottleneck bw(u, v)
        # step: classic Dijkstra/Prim over the overlay with isolated bandwidths
        best = np.full(h, -1.0)
        parent = np.full(h, -1)
        done = np.zeros(h, dtype=bool)
        best[0] = np.inf
        for _ in range(h):
            cand = np.where(done, -np.inf, best)
            u = int(np.argmax(cand))
            if cand[u] <= 0 and u != 0:
                break
            done[u] = True
            if u != 0:
                hops.append((hosts[parent[u]], hosts[u]))
            val = np.minimum(best[u], iso[u]) if variant == "widest" else iso[u].copy()
            upd = (~done) & (val > best)
            best[upd] = val[upd]
            parent[upd] = u
        return hops
    res_of, res_cap = resource_arrays(topology)
    res_mat = np.append(res_of, len(res_cap))[mat]
    mats = _by_multiplicity(res_mat, _declared_pairs(topology, hosts))
    cuts = _Cuts(topology, hosts, res_of) if undirected_tree(topology) else None
    return _load_aware_hops(mats, np.append(res_cap, np.inf), len(res_cap), hosts, cuts)


def _declared_pairs(topology: Topology, hosts: Sequence[str]) -> np.ndarray:
    """(h, h) bool: the host pairs with a declared route, the only routes that may cross a
    resource twice (a path of the tree or of the fewest-hop search crosses each cable once,
    and only a cable's two directions share a resource) [I]."""
    where = {x: i for i, x in enumerate(hosts)}
    pairs = [(where[u], where[v]) for u, v in topology.routes if u in where and v in where]
    out = np.zeros((len(hosts), len(hosts)), dtype=bool)
    if pairs:
        out[tuple(np.array(pairs).T)] = True
    return out


def _by_multiplicity(res_mat: np.ndarray, may_repeat: np.ndarray | None = None) -> list[tuple[float, np.ndarray]]:
    """``res_mat`` (each route's resources, then padding) split by how many times each
    entry's resource appears in its route: a list of (k, matrix of the resources crossed k
    times, padded), k = 1 alone when none repeats. ``may_repeat``: (h, h) bool, the routes
    that may cross a resource more than once (None: any); those that do are sorted, the
    others are kept as they are.

    A declared route up to a gateway and back crosses one cable twice; a shared cable is one
    resource for both directions. A hop crossing a resource k times gets at most
    ``c / (load + k)`` of it [I]."""
    pad = res_mat.max(initial=0)
    maybe = np.ones(res_mat.shape[:2], dtype=bool) if may_repeat is None else may_repeat
    rows = np.sort(res_mat[maybe], axis=1)
    repeats = ((rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] < pad)).any(axis=1)
    if not repeats.any():
        return [(1.0, res_mat)]
    where = tuple(np.argwhere(maybe)[repeats].T)
    rows = rows[repeats]
    mult = (rows[:, :, None] == rows[:, None, :]).sum(axis=2)
    ks = set(np.unique(mult[rows < pad]).tolist())
    if int((res_mat[..., 0] < pad).sum()) > len(rows):  # a route without repeats: all k = 1
        ks.add(1)
    out = []
    for k in sorted(ks):
        mat = res_mat.copy() if k == 1 else np.full_like(res_mat, pad)
        mat[where] = np.sort(np.where(mult == k, rows, pad), axis=1)
        width = max(int((mat < pad).sum(axis=2).max()), 1)
        out.append((float(k), np.ascontiguousarray(mat[..., :width])))
    return out


class _Cuts:
    """On a tree of two-way links: the candidate hops whose routes cross each directed link.

    Removing the cable of a directed link parts the tree in two; every walk between the two
    parts crosses it, a declared route up to a gateway and back as well as the tree path. So
    the hops from the hosts on the link's near side to those on its far side (a rectangle
    of the candidate matrix: rows x columns) all cross it, at least once, and
    ``c(e) / (load(e) + 1)`` bounds each of them. Lowering their bounds to it when a hop
    loads the link keeps them exact where the link is their bottleneck, instead of stale.
    Links every route out of each row host (or into each column host) crosses are already
    kept exact by the per-host terms (:func:`_mandatory_terms`) and are skipped [I]."""

    def __init__(self, topology: Topology, hosts: Sequence[str], res_of: np.ndarray) -> None:
        tree = RootedTree(topology)
        tin, tout = tree.tin, tree.tout  # preorder interval of each subtree
        self.tin, self.tout = tin, tout
        self.host_tin = np.array([tin[topology.index(x)] for x in hosts])
        self.res_of = res_of
        # directed link -> (the node below its cable, whether the link leaves that subtree)
        self.side: dict[int, tuple[int, bool]] = {}
        for v, p in enumerate(tree.parent):
            if p >= 0:
                self.side[tree.up[v]] = (v, True)
                self.side[tree.down[v]] = (v, False)
        self.links_of: dict[int, list[int]] = {}
        for lid, r in enumerate(res_of.tolist()):
            self.links_of.setdefault(r, []).append(lid)
        self._sides: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}

    def rectangles(self, res: int, sends_over: np.ndarray, receives_over: np.ndarray):
        """(rows, columns) bool masks over the hosts: the hops that cross resource ``res`` and
        whose per-host terms do not already count it (one pair per directed link)."""
        known = self._sides.get(res)
        if known is None:
            known = []
            for lid in self.links_of.get(res, ()):
                below, leaves = self.side[lid]
                inside = (self.host_tin >= self.tin[below]) & (self.host_tin < self.tout[below])
                rows, cols = (inside, ~inside) if leaves else (~inside, inside)
                if rows.any() and cols.any() and not (sends_over[res, rows].all() or receives_over[res, cols].all()):
                    known.append((rows, cols))
            self._sides[res] = known
        return known


#: Stale candidates re-evaluated at once, at first (doubled while none is still exact).
REFRESH_CHUNK = 64


def first_exact(ties: np.ndarray, top: float, evaluate, values: np.ndarray) -> int:
    """The lowest of ``ties`` (candidate indices, increasing, whose upper bound is ``top``)
    whose value ``evaluate`` finds still ``top``, or -1 when none is. Candidates are
    re-evaluated in consecutive chunks, the first of :data:`REFRESH_CHUNK`, each twice the
    last, so each is evaluated at most once however many are stale; their fresh values are
    written into ``values`` (the bounds, by candidate index)."""
    chunk, start = REFRESH_CHUNK, 0
    while start < len(ties):
        part = ties[start : start + chunk]
        fresh = evaluate(part)
        values[part] = fresh
        exact = np.flatnonzero(fresh == top)
        if len(exact):
            return int(part[exact[0]])
        start += chunk
        chunk *= 2
    return -1


def _mandatory_terms(mats, n_links: int, into: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per host, the resources every route into it (``into``) or out of it crosses, with the
    fewest times a route crosses each: (resource ids, multiplicities), padded with
    ``n_links`` (``mats`` as :func:`_by_multiplicity` gives them).

    A candidate hop's value is at most ``c(e) / (load(e) + k)`` for each such resource of
    its sender's routes out and its receiver's routes in, whoever the other end is: these
    terms are exact at every step for every candidate at once (a vector per host), so a
    candidate whose bottleneck is one of them is never stale in the lazy greedy [I].
    """
    h = mats[0][1].shape[0]
    width = n_links + 1
    counts = []  # per multiplicity k: how many routes into (out of) each host cross each resource
    for _, mat in mats:
        first = np.ones(mat.shape, dtype=bool)
        first[..., 1:] = mat[..., 1:] != mat[..., :-1]  # a resource crossed k times: listed k times, sorted
        keep = first & (mat < n_links)
        host = np.broadcast_to((np.arange(h)[None, :, None] if into else np.arange(h)[:, None, None]), mat.shape)
        counts.append(np.bincount((host * width + mat)[keep], minlength=h * width).reshape(h, width))
    every = sum(counts) == h - 1  # crossed by the routes from (to) every other host
    every[:, n_links] = False
    times = np.zeros(every.shape)
    for (k, _), c in zip(reversed(mats), reversed(counts)):  # the fewest crossings wins
        times[c > 0] = k
    host, res = np.nonzero(every)
    slot = np.arange(len(host)) - np.searchsorted(host, host)
    m = max(int(slot.max(initial=-1)) + 1, 1)
    out_res = np.full((h, m), n_links, dtype=np.int64)
    out_k = np.ones((h, m))
    out_res[host, slot] = res
    out_k[host, slot] = times[host, res]
    return out_res, out_k


def _best_candidate(bound: np.ndarray, row_top: np.ndarray, evaluate) -> tuple[int, float]:
    """The candidate the greedy adds: the lowest flat index of ``bound`` whose fresh value
    (``evaluate``) is the largest of all, and that value. ``row_top`` holds, per row, at least
    its largest bound (bounds only fall, so a row's maximum stays a bound of it), so no
    candidate is worth more than ``top``, the largest of them. The rows that may reach it are
    read in index order, in blocks of 1, 2, 4... rows: each block's maxima are brought up to
    date and its candidates at ``top`` re-evaluated as in :func:`first_exact`; the first exact
    one is the lowest index at the maximum (every earlier candidate is below ``top``), so a
    step reads the rows up to it instead of the whole h x h matrix. When none is exact, ``top``
    falls and the search starts again."""
    h = bound.shape[1]
    flat = bound.reshape(-1)
    while True:
        top = row_top.max()
        rows = np.flatnonzero(row_top == top)
        start, size = 0, 1
        while start < len(rows):
            block = rows[start : start + size]
            row_top[block] = bound[block].max(axis=1)
            block = block[row_top[block] == top]
            if len(block):
                r, c = np.nonzero(bound[block] == top)
                found = first_exact(block[r] * h + c, top, evaluate, flat)
                if found >= 0:
                    return found, top
            start += size
            size *= 2


def _load_aware_hops(mats, cap, n_links, hosts, cuts: _Cuts | None = None):
    """The load-aware greedy: repeatedly add the hop u->v (u in the tree, v not) of largest
    ``min(rate[u], min_{e in route(u,v)} c(e) / (load(e) + k(e)))``, lowest (u, v) on ties
    (``mats``: (k, resource ids crossed k times by every route, padded with ``n_links``),
    :func:`_by_multiplicity`).

    Loads only grow, so a value computed earlier is an upper bound of the current one ([I],
    lazy greedy): ``bound`` keeps each candidate's last value, and only the candidates whose
    bound reaches the maximum are re-evaluated, lowest index first, in chunks, until one is
    still exact. That candidate is the one a full re-evaluation would pick (every other
    candidate is at most its bound, below the maximum, or later in index order), so the tree
    is the same; the work per step follows the stale candidates instead of all h x h pairs.
    The terms of the resources every route out of the sender and into the receiver crosses
    (:func:`_mandatory_terms`) are brought up to date each step in the rows and columns of
    the hosts whose such resources the new hop loads, so a shared uplink that every route of
    a switch's hosts crosses does not make every candidate through it stale.
    """
    h = len(hosts)
    load = np.zeros(len(cap))
    rate = np.zeros(h)
    rate[0] = np.inf
    bound = np.full((h, h), -np.inf)
    row_top = np.full(h, -np.inf)  # per row, at least its largest bound
    out = np.zeros(h, dtype=bool)  # not in the tree yet
    out[1:] = True
    out_res, out_k = _mandatory_terms(mats, n_links, into=False)
    in_res, in_k = _mandatory_terms(mats, n_links, into=True)
    # resource -> the hosts whose routes out (in) all cross it, to find the rows (columns) a hop changes
    sends_over = np.zeros((n_links + 1, h), dtype=bool)
    sends_over[out_res, np.arange(h)[:, None]] = True
    receives_over = np.zeros((n_links + 1, h), dtype=bool)
    receives_over[in_res, np.arange(h)[:, None]] = True
    sends_over[n_links] = receives_over[n_links] = False

    def sending(u):
        return np.minimum(rate[u], (cap[out_res[u]] / (load[out_res[u]] + out_k[u])).min(axis=-1))

    def receiving(v):
        return (cap[in_res[v]] / (load[in_res[v]] + in_k[v])).min(axis=-1)

    def value(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        best = np.minimum(sending(u), receiving(v))
        for k, mat in mats:
            best = np.minimum(best, (cap / (load + k))[mat[u, v]].min(axis=-1))
        return best

    def join(u: int) -> None:  # u's candidate row, exact at the current loads
        cols = np.flatnonzero(out)
        bound[u, cols] = value(np.full(len(cols), u), cols)
        row_top[u] = bound[u].max()

    join(0)
    hops = []
    for _ in range(h - 1):
        found, top = _best_candidate(bound, row_top, lambda part: value(*np.divmod(part, h)))
        u, v = divmod(found, h)
        rate[v] = top
        out[v] = False
        bound[:, v] = -np.inf
        loaded = []
        for k, mat in mats:
            r = mat[u, v]
            r = r[r < n_links]
            load[r] += k
            loaded.append(r)
        hit = np.concatenate(loaded)
        rows = np.flatnonzero(sends_over[hit].any(axis=0) & ~out)
        cols = np.flatnonzero(receives_over[hit].any(axis=0) & out)
        bound[rows] = np.minimum(bound[rows], sending(rows)[:, None])
        bound[:, cols] = np.minimum(bound[:, cols], receiving(cols)[None, :])
        if cuts is not None:
            for res in np.unique(hit).tolist():
                term = cap[res] / (load[res] + 1.0)
                for near, far in cuts.rectangles(res, sends_over, receives_over):
                    # a row whose bounds are all at most the term keeps them
                    block = np.ix_(np.flatnonzero(near & ~out & (row_top > term)), np.flatnonzero(far & out))
                    bound[block] = np.minimum(bound[block], term)
        hops.append((hosts[u], hosts[v]))
        join(v)
    return hops


@register_planner(
    "broadcast",
    "dijkstra",
    summary="Dijkstra: greedy relay tree adding the host reachable with the largest (load-aware) bandwidth",
    reference="Wang, Wu, Chang. Pipeline-based aggressive copy for data grid coherence. GPC 2007, pp. 484-495",
)
def plan_dijkstra(
    topology: Topology, request: Broadcast, *, seed: int | None = None, variant: str = "load-aware"
) -> Plan:
    """Greedy widest relay tree; each host forwards to all its children concurrently (pipelined)."""
    dests = request.resolve(topology)
    hops = dijkstra_tree(topology, request.source, dests, variant=variant)
    whole = ((0, int(request.size)),)
    index_into: dict[str, int] = {}
    transfers = []
    for u, v in hops:
        transfers.append(Transfer(u, v, whole, pipelined=True, upstream=index_into.get(u), label="dijkstra"))
        index_into[v] = len(transfers) - 1
    return Plan.broadcast(
        request.source, request.size, dests, transfers, planner="dijkstra", params={"variant": variant}
    )
