"""Import every built-in planner module so that registration order is deterministic.

One line per module; add new planners here. Selectors (``auto``) come last in their
collective so that listings show the algorithms first.
"""

# broadcast
from .allreduce import auto as allreduce_auto  # noqa: F401

# allreduce
from .allreduce import (
    gridmpi,  # noqa: F401
    proportional,  # noqa: F401
    rabenseifner,  # noqa: F401
    recursive_doubling,  # noqa: F401
    ring,  # noqa: F401
    two_tier,  # noqa: F401
)

# broadcast: bandwidth-oriented multi-tree planners (issue 3)
# broadcast: latency-aware and grid collectives (issue 4)
from .broadcast import (
    auto,  # noqa: F401
    balanced_multicast,  # noqa: F401
    binomial,  # noqa: F401
    depth_first,  # noqa: F401
    dijkstra,  # noqa: F401
    essp,  # noqa: F401
    far_first,  # noqa: F401
    flat,  # noqa: F401
    fpfr,  # noqa: F401
    gridmpi_bcast,  # noqa: F401
    mpich,  # noqa: F401
    optimal,  # noqa: F401
    random_pipeline,  # noqa: F401
    scatter_allgather,  # noqa: F401
    speed_aware,  # noqa: F401
    stable,  # noqa: F401
    topology_aware,  # noqa: F401
    two_tree,  # noqa: F401
)

# redistribute
from .redistribute import brute_force as _rd_brute_force  # noqa: F401
from .redistribute import ggp as _rd_ggp  # noqa: F401
from .redistribute import oggp as _rd_oggp  # noqa: F401
