"""Planners, registered by (collective, name): one subpackage per collective, one module per
published algorithm. See :mod:`.registration` (the decorator) and :mod:`.registry` (look-ups)."""

from .registration import PlannerInfo, register_planner
from .registry import available_planners, get_planner

__all__ = ["PlannerInfo", "available_planners", "get_planner", "register_planner"]
