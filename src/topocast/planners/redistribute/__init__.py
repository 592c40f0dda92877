"""Redistribution planners (collective ``redistribute``): brute force, GGP, OGGP.

The request is a :class:`topocast.plan.Redistribution`.
"""

# Register every built-in planner first, so that the registry order (``topocast planners``,
# docs/planners.md) does not depend on which planner module a caller happens to import first.
from .. import _load_all  # noqa: F401,E402
