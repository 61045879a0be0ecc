"""Exception hierarchy of ballctl.

Every error raised on bad user input derives from :class:`BallctlError` and
from the builtin that a caller would expect (``ValueError`` for bad values,
``RuntimeError`` for failed computations), so ``except ValueError`` keeps
working.
"""

from __future__ import annotations

__all__ = [
    "BallctlError",
    "InfeasibleReferenceError",
    "ChartSingularityError",
    "PartitionError",
    "IntegrationError",
    "ScheduleFileError",
    "InfeasiblePlanError",
    "MissingExtraError",
]


class BallctlError(Exception):
    """Base class of every error raised by ballctl."""


class InfeasibleReferenceError(BallctlError, ValueError):
    """A requested reference motion cannot be realised by the plant."""


class ChartSingularityError(BallctlError, ValueError):
    """A motion passes too close to the singularity of an angle chart."""


class PartitionError(BallctlError, ValueError):
    """A coordinate partition is malformed or singular along a reference."""


class IntegrationError(BallctlError, RuntimeError):
    """A numerical integration failed."""


class ScheduleFileError(BallctlError, ValueError):
    """A gain-schedule file is truncated, edited, of another version or mismatched."""


class InfeasiblePlanError(BallctlError, ValueError):
    """A trajectory-optimization request cannot be met (names the constraint that fails)."""


class MissingExtraError(BallctlError, ImportError):
    """An optional dependency is missing; the message names the ``pip install ballctl[extra]`` to run."""
