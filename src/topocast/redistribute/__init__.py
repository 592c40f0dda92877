"""The ``redistribute`` collective: data redistribution between two clusters (KPBS; Jeannot &
Wagner, AINA 2006).

One name in code: the collective ``redistribute`` (``Plan.collective``, the planners
``redistribute/…``, this package, :mod:`topocast.planners.redistribute`,
:mod:`topocast.experiments.redistribute`, ``topocast redistribute``); its request is
:class:`topocast.plan.Redistribution`.

* :mod:`.matrix`: matrix files, generators, the two-cluster platform, the block layout of
  plans;
* :mod:`.kpbs`: lower bounds, the brute-force estimate, schedules and their plans.

The schedulers build on this package and never the other way round: the planners
``redistribute/brute_force``, ``ggp``, ``oggp`` and the decision "schedule or not"
(:mod:`topocast.planners.redistribute.decide`) are in ``topocast.planners.redistribute``; the
paper's experiments in :mod:`topocast.experiments.redistribute`.
"""

from .kpbs import Bounds, Schedule, brute_force_time, lower_bound, validate_schedule
from .matrix import (
    dense_pattern,
    fig2_pattern,
    load_matrix,
    random_pattern,
    resolve_platform,
    two_cluster_topology,
)

__all__ = [
    "load_matrix",
    "random_pattern",
    "dense_pattern",
    "fig2_pattern",
    "two_cluster_topology",
    "resolve_platform",
    "Bounds",
    "Schedule",
    "lower_bound",
    "brute_force_time",
    "validate_schedule",
]
