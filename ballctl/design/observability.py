r"""Observability of the linearized tracking model along a reference: the dual of controllability.

The discrete observability Gramian over ``K`` steps from step 0,

.. math::

    W_o = \sum_{k=0}^{K-1} \Phi(k, 0)^T C_k^T C_k\, \Phi(k, 0),
    \qquad \Phi(k, 0) = A_{d,k-1} \cdots A_{d,0},

is the reachability Gramian of the *transposed, time-reversed* system
:math:`(A_{d,K-1-i}^T,\; C_{K-1-i}^T)`, so :func:`observability_gramian` calls
:func:`ballctl.discrete_gramian` on that system. An initial deviation ``X_0``
along an eigenvector of :math:`W_o` with eigenvalue :math:`\lambda` produces
measured output energy :math:`\lambda |X_0|^2`; a zero eigenvalue is a
direction the sensors cannot see. Because the states mix units (m, rad, m/s),
the verdict is the one rank test of controllability,
:func:`~ballctl.design.controllability.gramian_rank`: the rank of the
Jacobi-scaled Gramian :math:`D^{-1/2} W_o D^{-1/2}`, :math:`D = \mathrm{diag}(W_o)`
(a state with no output energy at all is unobservable outright), with the one
default tolerance :data:`~ballctl.design.controllability.RANK_RTOL`.

:func:`sensor_table` tabulates, for one design model and several sensor sets
(e.g. "contact point", "contact point + plate angles"), the rank and the least
observable direction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterTypeError, ShapeError
from .controllability import RANK_RTOL, GramianReport, discrete_gramian, gramian_rank
from .controllability.gramians import gramian_report, jacobi_scaled
from ..linear.discretize import DiscreteLTVSystem
from .estimator import measurement_matrices

__all__ = ["ObservabilityReport", "observability_gramian", "SensorSetRow", "sensor_table"]


@dataclass(frozen=True)
class ObservabilityReport:
    """The observability Gramian of a sensor set and what it says.

    Attributes
    ----------
    gramian : GramianReport
        Eigen-analysis of the Jacobi-scaled Gramian (``directions`` in scaled
        states; least observable first).
    W : ndarray, shape (N, N)
        The unscaled Gramian.
    unseen_states : tuple of str
        States with a zero diagonal entry (no output energy at all).
    rank : int
        :func:`~ballctl.design.controllability.gramian_rank` of ``W`` (the unseen states count as missing).
    state_names : tuple of str
    steps : int
        Number of steps K of the window.
    """

    gramian: GramianReport
    W: np.ndarray
    unseen_states: tuple[str, ...]
    rank: int
    state_names: tuple[str, ...]
    steps: int

    @property
    def n_states(self) -> int:
        return len(self.state_names)

    @property
    def observable(self) -> bool:
        """True when every state direction reaches the sensors."""
        return self.rank == self.n_states

    def least_observable(self, count: int = 3) -> str:
        """The least observable direction as ``"weight*name + ..."`` (largest weights first).

        Parameters
        ----------
        count : int
            How many state names (largest weights) to show.

        Returns
        -------
        str
        """
        if self.unseen_states:
            return ", ".join(self.unseen_states) + " (not seen at all)"
        pairs = self.gramian.directions[0]
        return " ".join(f"{w:+.3f}*{n}" for n, w in pairs[:count])

    def to_table(self) -> str:
        """Plain-text report."""
        return (f"observability over {self.steps} steps: rank {self.rank} of {self.n_states}; "
                f"least observable: {self.least_observable()} "
                f"(scaled eigenvalue {self.gramian.eigenvalues[0]:.3g})")


def observability_gramian(sys: DiscreteLTVSystem, C, *, state_names: Sequence[str] | None = None,
                          rank_rtol: float = RANK_RTOL) -> ObservabilityReport:
    r"""Observability Gramian of ``X[k+1] = Ad[k] X[k]``, ``y[k] = C[k] X[k]`` over the steps of ``sys``.

    Parameters
    ----------
    sys : DiscreteLTVSystem
        The discrete system (its ``Bd`` does not enter); :meth:`DiscreteLTVSystem.from_arrays` wraps plain
        arrays. It also gives the default ``state_names``.
    C : ndarray, shape (ny, N) or (K, ny, N)
        Measurement matrices.
    state_names : sequence of str, optional
    rank_rtol : float
        Relative tolerance of the rank test
        (:func:`~ballctl.design.controllability.gramian_rank`, default
        :data:`~ballctl.design.controllability.RANK_RTOL`).

    Returns
    -------
    ObservabilityReport

    Examples
    --------
    >>> import numpy as np
    >>> from ballctl.linear.discretize import DiscreteLTVSystem
    >>> sys = DiscreteLTVSystem.from_arrays(np.broadcast_to([[1.0, 0.1], [0.0, 1.0]], (10, 2, 2)),
    ...                                     np.zeros((10, 2, 1)))          # position and velocity
    >>> observability_gramian(sys, np.array([[1.0, 0.0]])).observable    # position seen: velocity too
    True
    >>> observability_gramian(sys, np.array([[0.0, 1.0]])).observable    # velocity only: position not
    False
    """
    if not isinstance(sys, DiscreteLTVSystem):
        raise ParameterTypeError("sys must be a DiscreteLTVSystem (DiscreteLTVSystem.from_arrays(Ad, Bd) wraps "
                                 f"arrays), got {type(sys).__name__}")
    Ad = sys.Ad
    K, N = Ad.shape[:2]
    C = np.asarray(C, dtype=float)
    if C.ndim == 2:
        C = np.broadcast_to(C, (K,) + C.shape)
    if C.ndim != 3 or C.shape[0] != K or C.shape[2] != N:
        raise ShapeError(f"C must have shape (ny, N) or (K, ny, N) with K = {K}, N = {N}; got {C.shape}")
    names = tuple(state_names) if state_names is not None else tuple(sys.state_names)
    # W_o = sum Phi(k,0)^T C_k^T C_k Phi(k,0): the dual system's reachability Gramian
    dual = discrete_gramian(DiscreteLTVSystem.from_arrays(np.swapaxes(Ad[::-1], -1, -2), np.swapaxes(C[::-1], -1, -2),
                                                          state_names=names), rank_rtol=rank_rtol)
    W = np.array(dual.W)
    Ws, seen = jacobi_scaled(W)
    # eigen-analysis of the scaled Gramian (directions in scaled states, least observable first)
    scaled = gramian_report(Ws, names, 0.0, float(K), "discrete observability (scaled)", rank_rtol)
    unseen = tuple(n for n, s in zip(names, seen) if not s)
    rank = gramian_rank(W, rank_rtol=rank_rtol)
    W.setflags(write=False)
    return ObservabilityReport(scaled, W, unseen, rank, names, K)


@dataclass(frozen=True)
class SensorSetRow:
    """One row of :func:`sensor_table`.

    Attributes
    ----------
    design : str
    sensor_set : str
    signals : tuple of str
    report : ObservabilityReport
    """

    design: str
    sensor_set: str
    signals: tuple[str, ...]
    report: ObservabilityReport


def sensor_table(models: Mapping[str, tuple], sensor_sets: Mapping[str, Sequence[str]], *,
                 steps: int | None = None) -> tuple[tuple[SensorSetRow, ...], str]:
    """Observability of several design models under several sensor sets, as rows and a markdown table.

    Parameters
    ----------
    models : mapping of str to (LTVSystem, DiscreteLTVSystem, coordinate_names)
        Design name -> its linearization (with ``state_map``), discretization,
        and the design plant's coordinates.
    sensor_sets : mapping of str to sequence of str
        Sensor-set name -> measured coordinates. A set with a signal the model
        has no coordinate for is reported as "not applicable".
    steps : int, optional
        Window length in steps (default: the whole horizon).

    Returns
    -------
    rows : tuple of SensorSetRow
    table : str
        Markdown: design, sensor set, rank, least observable direction.
    """
    rows = []
    lines = ["| design | sensor set | rank | least observable direction (scaled) |", "|---|---|---|---|"]
    for design, (ltv, disc, coords) in models.items():
        K = disc.Ad.shape[0] if steps is None else min(int(steps), disc.Ad.shape[0])
        for set_name, signals in sensor_sets.items():
            signals = tuple(signals)
            if not all(s in coords for s in signals):
                lines.append(f"| {design} | {set_name} | not applicable (no coordinate "
                             f"{[s for s in signals if s not in coords]}) | |")
                continue
            C = measurement_matrices(ltv, coords, signals)[:K]
            rep = observability_gramian(DiscreteLTVSystem.from_arrays(disc.Ad[:K], disc.Bd[:K], dt=disc.dt,
                                                                      state_names=disc.state_names), C)
            rows.append(SensorSetRow(design, set_name, signals, rep))
            lines.append(f"| {design} | {set_name} | {rep.rank} of {rep.n_states} | "
                         f"{'all observable; weakest: ' if rep.observable else ''}{rep.least_observable()} |")
    return tuple(rows), "\n".join(lines)
