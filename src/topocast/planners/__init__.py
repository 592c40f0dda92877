"""Planners, registered by (collective, name). See :mod:`topocast.planners.registry`."""

from .registry import PlannerInfo, available_planners, get_planner, register_planner

__all__ = ["PlannerInfo", "available_planners", "get_planner", "register_planner"]
