"""Exception and warning hierarchy of ballctl.

Every error ballctl raises derives from :class:`BallctlError` **and** from the
builtin a caller would expect, so both ``except BallctlError`` and the builtin
style (``except ValueError``, ``except TypeError``, ``except RuntimeError``,
``except IndexError``) catch it::

    BallctlError (Exception)
    ├── ParameterError (ValueError)          bad value: range, finiteness, choice
    │   └── ShapeError                       wrong shape or length of an array
    ├── ParameterTypeError (TypeError, ValueError) wrong kind of object (not callable, ...)
    ├── ConstraintViolationError (ValueError) a state/velocity violates the constraints
    ├── InfeasibleReferenceError (ValueError) a motion the plant cannot realise
    ├── ChartSingularityError (ValueError)   a motion near an angle chart's singularity
    ├── PartitionError (ValueError)          a malformed or singular coordinate partition
    ├── ConfigError (ValueError)             a missing, unreadable or malformed config file
    ├── FileArgumentError (ValueError)       a path argument that cannot be used as asked
    │   └── MissingFileError (+ FileNotFoundError) an input file that does not exist
    ├── ScheduleFileError (ValueError)       a gain-schedule file that cannot be trusted
    ├── SampleIndexError (IndexError)        a sample/time index out of range
    ├── NumericalError (RuntimeError)        a numerical computation failed
    │   ├── SingularMatrixError (+ numpy.linalg.LinAlgError)
    │   └── RiccatiConvergenceError
    └── IntegrationError (RuntimeError)      a numerical integration failed
        ├── NonFiniteStateError              a state/derivative/input became NaN or inf
        └── IntegrationBudgetError           a step or wall-clock budget was exhausted

Warnings derive from :class:`BallctlWarning` (a ``UserWarning``).

Messages name the user's parameter, its unit and the allowed range; integration
errors say at what time (s) which quantity failed.
"""

from __future__ import annotations

import numpy as np


class BallctlError(Exception):
    """Base class of every error raised by ballctl."""


class ParameterError(BallctlError, ValueError):
    """A parameter's value is out of its allowed range, not finite, or not one of the allowed choices."""


class ShapeError(ParameterError):
    """An array argument has the wrong number of dimensions, shape or length."""


class ParameterTypeError(BallctlError, TypeError, ValueError):
    """An argument is of the wrong kind (e.g. not callable, not a parameters object, not a plant).

    Also a ``ValueError``: ballctl raised ``ValueError`` for these before, and
    every bad-input error stays catchable as ``ValueError``.
    """


class ConstraintViolationError(BallctlError, ValueError):
    """A state or velocity violates the plant's constraints beyond the stated tolerance."""


class InfeasibleReferenceError(BallctlError, ValueError):
    """A requested reference motion cannot be realised by the plant."""


class ChartSingularityError(BallctlError, ValueError):
    """A motion passes too close to the singularity of an angle chart."""


class PartitionError(BallctlError, ValueError):
    """A coordinate partition is malformed or singular along a reference."""


class ConfigError(BallctlError, ValueError):
    """A configuration file is missing, unreadable, malformed or has unknown keys."""


class FileArgumentError(BallctlError, ValueError):
    """A path argument cannot be used as asked (a directory where a file is expected, a parent that is a file...)."""


class MissingFileError(FileArgumentError, FileNotFoundError):
    """An input file does not exist (also a ``FileNotFoundError``)."""


class ScheduleFileError(BallctlError, ValueError):
    """A gain-schedule file is truncated, edited, of another version or mismatched."""


class SampleIndexError(BallctlError, IndexError):
    """A sample or time index is out of range (an ``IndexError``, so iteration protocols keep working)."""


class NumericalError(BallctlError, RuntimeError):
    """A numerical computation failed (wraps the library error with the context that explains it)."""


class SingularMatrixError(NumericalError, np.linalg.LinAlgError):
    """A matrix that must be invertible is singular (also a ``numpy.linalg.LinAlgError``)."""


class RiccatiConvergenceError(NumericalError):
    """A periodic Riccati iteration did not converge (or the periodic system is not stabilizable)."""


class IntegrationError(BallctlError, RuntimeError):
    """A numerical integration failed.

    Parameters
    ----------
    message : str
        What failed, including the time in s.
    time : float, optional
        Time in s at which the integration failed.
    quantity : str, optional
        Name of the quantity that failed (e.g. ``"state"``, ``"input"``).
    """

    def __init__(self, message: str, *, time: float | None = None, quantity: str | None = None) -> None:
        super().__init__(message)
        self.time = time
        self.quantity = quantity


class NonFiniteStateError(IntegrationError):
    """A state, derivative or input became NaN or infinite during an integration."""


class IntegrationBudgetError(IntegrationError):
    """An integration exhausted its step or wall-clock budget (it would otherwise run for ever)."""


class BallctlWarning(UserWarning):
    """Base class of every warning issued by ballctl."""


class LargeTiltWarning(BallctlWarning):
    """A reference needs a large plate tilt, where the small-angle assumptions of the design degrade."""


class ConstraintProjectionWarning(BallctlWarning):
    """A state or velocity was projected onto the constraint manifold at the caller's request."""


class RiccatiConditioningWarning(BallctlWarning):
    """The Riccati sweep met an ill-conditioned ``R + B^T P B``."""


class InfeasiblePlanError(BallctlError, ValueError):
    """A trajectory-optimization request cannot be met (names the constraint that fails)."""


class MissingExtraError(BallctlError, ImportError):
    """An optional dependency is missing; the message names the ``pip install ballctl[extra]`` to run."""
