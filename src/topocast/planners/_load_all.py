"""Import every built-in planner module so that registration order is deterministic.

One line per module; add new planners here.
"""

# broadcast
from .broadcast import flat  # noqa: F401
from .broadcast import depth_first  # noqa: F401
from .broadcast import random_pipeline  # noqa: F401
from .broadcast import dijkstra  # noqa: F401
from .broadcast import fpfr  # noqa: F401
from .broadcast import stable  # noqa: F401
from .broadcast import balanced_multicast  # noqa: F401
from .broadcast import optimal  # noqa: F401
