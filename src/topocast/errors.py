"""Exceptions raised by topocast.

Every error a user can cause carries *where* (file and element) and *what was expected*,
so the command line can print one clear line instead of a traceback.
"""

from __future__ import annotations

__all__ = [
    "TopocastError",
    "InputError",
    "TopologyError",
    "PlanError",
    "UnknownPlanner",
    "SimulationError",
    "LinearProgramError",
    "RunFailure",
    "TopologyWarning",
]


class TopocastError(Exception):
    """Base class of every error topocast raises on purpose."""


class InputError(TopocastError, ValueError):
    """Bad user input: names the source (file), the element/field and what was expected.

    ``str(err)`` reads ``"<source>: <element>: <message>"`` with the empty parts left out.
    """

    def __init__(self, message: str, *, source: str | None = None, element: str | None = None):
        self.message = message
        self.source = source
        self.element = element
        parts = [p for p in (source, element, message) if p]
        super().__init__(": ".join(parts))

    def at(self, source: str | None = None, element: str | None = None) -> InputError:
        """Return a copy of this error with the source and/or element filled in."""
        cls = type(self)
        err = cls.__new__(cls)
        InputError.__init__(
            err,
            self.message,
            source=self.source or source,
            element=(f"{element}: {self.element}" if element and self.element else element or self.element),
        )
        return err


class TopologyError(InputError):
    """A topology file or object is malformed or inconsistent."""


class TopologyWarning(UserWarning):
    """A topology file reads, but probably not as its author meant (e.g. bit/s written as bytes/s)."""


class PlanError(InputError):
    """A plan violates the Plan contract (see ``topocast.plan.check.check_plan``)."""


class UnknownPlanner(InputError, KeyError):
    """No planner is registered under the requested (collective, name)."""

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return InputError.__str__(self)


class RunFailure(TopocastError):
    """The input was valid but the command could not carry it out: a host could not be
    started, reached or heard from, an agent died, a measurement failed. The command line
    exits with status 1 (bad input, an :class:`InputError`, exits with 2)."""


class SimulationError(TopocastError, RuntimeError):
    """The simulator cannot make progress (for example a plan whose dependencies deadlock)."""


class LinearProgramError(TopocastError, RuntimeError):
    """HiGHS found no optimum for a linear programme that always has one (a bound's LP, where
    all rates zero is feasible and every rate is bounded): a fault in topocast, not in the input."""
