"""What no plan can beat, and what the textbook collectives cost in closed form.

* :mod:`.maxflow` — per-destination max-flow from the source and their sum
  (:func:`broadcast_bounds`, :func:`maxflow_from`);
* :mod:`.relay` — the relay ceiling, which knows that relays on a shared link send and
  receive through one capacity (:func:`relay_ceiling`);
* :mod:`.route` — the route-aware bounds where the topology fixes the routes
  (:func:`route_bounds`, :func:`reference_bound`);
* :mod:`.cost` — closed-form (Hockney, GridMPI) times of the MPI and grid collectives.

docs/algorithms.md section 8 gives the derivations; docs/design.md ("Bounds") the contract.
"""

from .maxflow import Bound, broadcast_bounds, maxflow_from
from .relay import relay_ceiling
from .route import Reference, RouteBound, reference_bound, route_bounds, routes_are_fixed

__all__ = [
    "Bound",
    "Reference",
    "RouteBound",
    "broadcast_bounds",
    "maxflow_from",
    "reference_bound",
    "relay_ceiling",
    "route_bounds",
    "routes_are_fixed",
]
