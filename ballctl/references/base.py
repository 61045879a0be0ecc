"""Reference motions: the common result type and protocol."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError
from .._validation import as_times
from ..system import ConstrainedSystem

__all__ = ["Reference", "ReferenceSample"]


@dataclass(frozen=True)
class ReferenceSample:
    """A reference solution of the DAE sampled at K times.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Times in s.
    x, xd, xdd : ndarray, shape (K, n)
        Coordinates, velocities, accelerations.
    u : ndarray, shape (K, nu)
        Inputs (for the ball-plate: plate angles in rad).
    ud : ndarray, shape (K, nu)
        Input rates (plate angular rates in rad/s), used by slew checks and
        the moving-plate model.
    lam : ndarray, shape (K, m + l)
        Lagrange multipliers of eq. (1).
    """

    t: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    u: np.ndarray
    ud: np.ndarray
    lam: np.ndarray

    def __len__(self) -> int:
        return self.t.shape[0]

    def __getitem__(self, k) -> "ReferenceSample":
        """Select samples with an index, slice or mask (the time axis is kept)."""
        idx = np.atleast_1d(np.arange(len(self))[k])
        return ReferenceSample(*(getattr(self, f)[idx] for f in ("t", "x", "xd", "xdd", "u", "ud", "lam")))


class Reference(ABC):
    """A reference solution ``x0(t), xd0(t), xdd0(t), lam0(t), u0(t)`` of a system.

    Subclasses implement :meth:`_evaluate`; calling the reference with a time
    or an array of K times returns a :class:`ReferenceSample`.
    """

    system: ConstrainedSystem
    #: period in s of a periodic reference, else None
    period: float | None = None
    #: time interval in s on which the reference is defined
    t_range: tuple[float, float] = (-np.inf, np.inf)

    def __call__(self, t) -> ReferenceSample:
        t = as_times(t, "t")
        lo, hi = self.t_range
        if t.size and (t.min() < lo - 1e-12 or t.max() > hi + 1e-12):
            raise ParameterError(f"t must lie in the reference's interval [{lo}, {hi}] s, got [{t.min()}, {t.max()}]")
        return self._evaluate(t)

    @abstractmethod
    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        """Evaluate at a validated 1-D array of times."""

    def summary(self) -> dict[str, float]:
        """Key numbers of the reference (overridden by subclasses)."""
        return {}
