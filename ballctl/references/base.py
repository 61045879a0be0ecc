"""Reference motions: the common result type and protocol.

Batch rule: a reference sampled at one time is one state, ``ref(0.0).x`` of shape ``(n,)`` (and ``t`` a
0-d array); sampled at an array of K times (a list, an array, even of length 1) it is a stack,
``ref([0.0]).x`` of shape ``(1, n)``, ``ref(t).x`` of shape ``(K, n)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError, ParameterTypeError
from .._validation import as_times
from ..system import ConstrainedSystem

__all__ = ["Reference", "ReferenceSample"]

_FIELDS = ("t", "x", "xd", "xdd", "u", "ud", "lam")


@dataclass(frozen=True)
class ReferenceSample:
    """A reference solution of the DAE sampled at K times, or at one time (the module's batch rule).

    Attributes
    ----------
    t : ndarray, shape (K,) or ()
        Times in s.
    x, xd, xdd : ndarray, shape (K, n) or (n,)
        Coordinates, velocities, accelerations.
    u : ndarray, shape (K, nu) or (nu,)
        Inputs (for the ball-plate: plate angles in rad).
    ud : ndarray, shape (K, nu) or (nu,)
        Input rates (plate angular rates in rad/s), used by slew checks and
        the moving-plate model.
    lam : ndarray, shape (K, m + l) or (m + l,)
        Lagrange multipliers of eq. (1).
    """

    t: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    u: np.ndarray
    ud: np.ndarray
    lam: np.ndarray

    @property
    def is_batch(self) -> bool:
        """True for a stack of K samples (``t`` of shape (K,)), False for a sample at one time."""
        return np.ndim(self.t) == 1

    def __len__(self) -> int:
        if not self.is_batch:
            raise ParameterTypeError("a reference sample at one time has no length (sample an array of times for a "
                                     "stack)")
        return self.t.shape[0]

    def __getitem__(self, k) -> "ReferenceSample":
        """Select samples of a stack with an index, slice or mask (the time axis is kept)."""
        idx = np.atleast_1d(np.arange(len(self))[k])
        return ReferenceSample(*(getattr(self, f)[idx] for f in _FIELDS))

    def at(self, k: int) -> "ReferenceSample":
        """Sample ``k`` of a stack as a sample at one time (``x`` of shape (n,)).

        Parameters
        ----------
        k : int
            Index of the sample (negative counts from the end).

        Returns
        -------
        ReferenceSample
        """
        k = np.arange(len(self))[k]
        return ReferenceSample(*(getattr(self, f)[k] for f in _FIELDS))


class Reference(ABC):
    """A reference solution ``x0(t), xd0(t), xdd0(t), lam0(t), u0(t)`` of a system.

    Subclasses implement :meth:`_evaluate` on a 1-D array of times; calling the
    reference with one time returns a :class:`ReferenceSample` of one state
    (``x`` of shape (n,)), with an array of K times a stack (``x`` of shape
    (K, n)): the batch rule of the module docstring.
    """

    system: ConstrainedSystem
    #: period in s of a periodic reference, else None
    period: float | None = None
    #: time interval in s on which the reference is defined
    t_range: tuple[float, float] = (-np.inf, np.inf)

    def __call__(self, t) -> ReferenceSample:
        one = np.ndim(t) == 0
        t = as_times(t, "t")
        lo, hi = self.t_range
        if t.size and (t.min() < lo - 1e-12 or t.max() > hi + 1e-12):
            raise ParameterError(f"t must lie in the reference's interval [{lo}, {hi}] s, got [{t.min()}, {t.max()}]")
        sample = self._evaluate(t)
        return sample.at(0) if one else sample

    @abstractmethod
    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        """Evaluate at a validated 1-D array of times."""

    def summary(self) -> dict[str, float]:
        """Key numbers of the reference (overridden by subclasses)."""
        return {}
