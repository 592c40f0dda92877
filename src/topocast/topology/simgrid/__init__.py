"""SimGrid platform XML: import (DTD v3 and v4.x) and export (v4.1).

SimGrid describes a network as *resources* (``<link>``) listed along routes between
netpoints (hosts and routers), grouped in zones with a routing mode. topocast's model is a
graph: nodes (hosts, switches) joined by links, with optional explicit node-path routes. The
import infers a graph that crosses the same links as SimGrid's routes.

Mapping (what each SimGrid element becomes)
-------------------------------------------
* ``<host>`` -> a host; ``<router>`` -> a switch (it only forwards).
* ``<link>`` sharing policy: ``SHARED`` (SimGrid's default: both directions share one
  capacity) -> ``sharing: shared``; ``SPLITDUPLEX``/``FULLDUPLEX`` -> ``duplex`` (one capacity
  per direction); ``FATPIPE`` -> ``fatpipe``; ``WIFI`` -> ``shared``.
* ``<cluster>`` (``topology="FLAT"`` only), as SimGrid builds it::

        host_1 ... host_n                 hosts: prefix + radical + suffix
           \\  |   /      private links (bw, lat, sharing_policy; SPLITDUPLEX -> duplex)
          <cluster id>    one switch per cluster (named after the cluster)
              |           backbone (bb_bw, bb_lat; bb_sharing_policy SHARED -> shared,
           router         FATPIPE -> fatpipe); the router is router_id or
                          prefix + id + "_router" + suffix, the cluster's gateway

  Difference: in SimGrid a host-to-host route *inside* a cluster crosses the backbone
  (private up, backbone, private down); here it turns at the cluster switch and does not.
  Traffic leaving the cluster crosses the backbone in both. Without ``bb_bw`` the router is
  the cluster switch itself. ``load_simgrid(..., exact=True)`` (CLI ``topology convert
  --simgrid-exact``) maps a cluster with a backbone exactly as SimGrid routes it, with one-way
  links: ``host -UP-> <id> -backbone-> <id>-out -DOWN-> host`` and connectors
  ``<id>-out -> router -> <id>``, so every route, intra-cluster ones included, crosses the
  backbone once (the graph is then no tree; a SHARED private link becomes two one-way links).
  ``limiter_link`` and ``loopback_*`` are ignored.
* A zone with ``routing="Cluster"`` (hosts with ``<host_link up= down=>``, ``<backbone>``,
  ``<router>``) is mapped the same way: one switch named after the zone, each host joined to
  it by its up/down links (one link with ``bandwidth``/``bandwidth_ba`` when they are two,
  ``l_UP``/``l_DOWN`` halves of one SPLITDUPLEX link -> that link), backbone switch-router.
* Routes (``<route>``, ``<zoneRoute>``/``<ASroute>`` between their gateways, with
  ``link_ctn`` lists, ``symmetrical``): each is a chain of links from its source netpoint to
  its destination netpoint. We give every link two ends and unify them along every chain
  (shortest chains first): the first link's entry end *is* the source, each link's exit end
  *is* the next link's entry end, the last exit *is* the destination. Ends that never become
  a host or router are synthetic junction switches (``j0``, ``j1``, ...). A Floyd/Dijkstra
  zone whose routes are single links thus becomes those links as direct edges, and the
  hierarchical platforms shipped here (g5k, griffon, gdx) become trees.
* When the routes cannot be drawn as a graph whose edges are the links (unification would
  glue two netpoints together or a link to itself; ``small_platform.xml`` is such a list of
  hand-made routes: e.g. Tremblay->Bourassa ends with links 6,7 and Fafard->Bourassa with
  8,6,7, while Jacquelin->Fafard crosses 6 then 9, the Tremblay-Jupiter link), the whole
  platform is imported as an exact *route graph* instead: each direction in which a route
  crosses link ``L`` is a one-way link ``L.in -> L.out`` (``L.rin -> L.rout`` backwards),
  one-way connector edges (fatpipe, 1e15 B/s, 0 s) join consecutive links, and every route
  between two hosts is an explicit route. Every flow crosses exactly SimGrid's links and no
  path can bypass one, so bounds stay finite. Limit: a SHARED link crossed in both
  directions becomes two one-way links of its full bandwidth (opposite flows do not share).
* A link that single-link routes use between more than two netpoints (a shared bus such as
  ``gdx_main`` or griffon's ``backbone``) cannot be one edge: it becomes a hub switch
  ``<id>-bus`` with one spoke per netpoint (the link's bandwidth and sharing, half its
  latency, so a route through the hub has the link's latency). Difference: in SimGrid all
  flows over the bus share one capacity; here only flows that share a spoke do. With
  ``exact=True`` the bus is one one-way link ``<id>-bus -> <id>-bus-out`` that every endpoint
  reaches and leaves through one-way connectors, so all its flows share it, as in SimGrid.
* A link that routes cross in one direction only becomes a one-way link (SimGrid cannot use
  the other direction either).
* Parallel links (several SimGrid links between the same two nodes) are merged, because the
  model allows one link per node pair: if each is used in one direction only (an
  asymmetric pair, as :func:`save_simgrid` writes) they become one link with
  ``bandwidth``/``bandwidth_ba``; otherwise bandwidths are summed and the larger latency kept.
* Routes: every host pair takes the links SimGrid's own route crosses, in SimGrid's order
  (:mod:`topocast.topology.simgrid.routing` reproduces SimGrid's zone routing: declared
  routes, Floyd chains of them, gateways through nested zones). Where that route is not the
  fewest-hop path of the graph — typically two hosts behind one intermediate switch whose
  declared routes go up to the site gateway and back down, crossing the uplink twice — it is
  kept as an explicit node path; a link crossed twice then counts twice in the simulator, as
  in SimGrid. Pairs are checked within each zone (every pair up to 400 hosts); the tests
  compare every pair, or a large sample, with SimGrid 3.32's ``route_to``. A SimGrid route
  that the graph cannot draw (a cluster's intra-cluster route crosses its backbone; use
  ``exact=True``) keeps topocast's path, and ``Topology.notes`` says how many pairs.
  The max-flow bound does not look at routes: it is the bound of the graph, which a detour
  can only lower the achievable rate below.
* ``Topology.notes`` lists what the import left out: routers and links no route uses,
  attributes not modelled (speeds, cores, properties), and bare bandwidths that look like
  bit/s (SimGrid reads a bare number as bytes/s; so does topocast, with a warning).
* Ignored: ``src == dst`` routes (loopback), ``bypassRoute``, host speeds and properties,
  traces. Unsupported elements (``peer``, ``cabinet``, ``include``,
  non-FLAT clusters) raise an error naming the element.

Units follow SimGrid: bandwidth ``Bps`` (default, bytes/s), ``kBps``..``EBps``, ``KiBps``..,
bits with ``bps``; latency ``s`` (default), ``ms``, ``us``, ``ns``, ``ps``, ``m``, ``h``,
``d``, ``w``.
"""

from .export import save_simgrid, simgrid_xml
from .load import load_simgrid

__all__ = ["load_simgrid", "save_simgrid", "simgrid_xml"]
