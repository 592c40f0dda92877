"""Import every built-in planner module so that registration order is deterministic.

One line per module; add new planners here.
"""

# broadcast
from .broadcast import flat  # noqa: F401
from .broadcast import depth_first  # noqa: F401
# redistribute
from .redistribute import brute_force as _rd_brute_force  # noqa: F401
from .redistribute import ggp as _rd_ggp  # noqa: F401
from .redistribute import oggp as _rd_oggp  # noqa: F401
