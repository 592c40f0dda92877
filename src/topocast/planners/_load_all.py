"""Import every built-in planner module so that registration order is deterministic.

One line per module; add new planners here. Selectors (``auto``) come last in their
collective so that listings show the algorithms first.
"""

# broadcast
from .broadcast import flat  # noqa: F401
from .broadcast import depth_first  # noqa: F401
# broadcast: bandwidth-oriented multi-tree planners (issue 3)
from .broadcast import random_pipeline  # noqa: F401
from .broadcast import dijkstra  # noqa: F401
from .broadcast import fpfr  # noqa: F401
from .broadcast import stable  # noqa: F401
from .broadcast import balanced_multicast  # noqa: F401
from .broadcast import optimal  # noqa: F401
# broadcast: latency-aware and grid collectives (issue 4)
from .broadcast import binomial  # noqa: F401
from .broadcast import essp  # noqa: F401
from .broadcast import scatter_allgather  # noqa: F401
from .broadcast import far_first  # noqa: F401
from .broadcast import gridmpi_bcast  # noqa: F401
from .broadcast import topology_aware  # noqa: F401
from .broadcast import speed_aware  # noqa: F401
from .broadcast import mpich  # noqa: F401
from .broadcast import auto  # noqa: F401

# allreduce
from .allreduce import ring  # noqa: F401
from .allreduce import recursive_doubling  # noqa: F401
from .allreduce import rabenseifner  # noqa: F401
from .allreduce import two_tier  # noqa: F401
from .allreduce import gridmpi  # noqa: F401
from .allreduce import auto as allreduce_auto  # noqa: F401

# redistribute
from .redistribute import brute_force as _rd_brute_force  # noqa: F401
from .redistribute import ggp as _rd_ggp  # noqa: F401
from .redistribute import oggp as _rd_oggp  # noqa: F401
