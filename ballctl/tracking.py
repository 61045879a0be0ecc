r"""The tracking-controller design pipeline: reference -> linearize -> discretize -> LQR.

:func:`design_tracking_lqr` runs the paper's chain (Agúndez et al. 2024,
sections 2.2-2.4) at a sample time of the user's choice and returns a
:class:`TrackingController` that the closed loop
(:func:`ballctl.simulate_closed_loop`) runs and that exports to a
:class:`~ballctl.GainSchedule`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._errors import ParameterError
from ._validation import check_positive
from .discretize import DiscreteLTVSystem, discretize
from .linearize import linearize, linearize_samples
from .lqr import FiniteHorizonLQR, bryson, finite_horizon_lqr, periodic_lqr
from .ltv import LTVSystem
from .partition import Partition
from .references.base import Reference, ReferenceSample
from .schedule import GainSchedule
from .system import ConstrainedSystem

__all__ = ["TrackingController", "design_tracking_lqr"]


@dataclass(frozen=True)
class TrackingController:
    """A discrete time-varying LQR tracking a reference.

    Attributes
    ----------
    system : ConstrainedSystem
    reference : Reference
    partition : Partition
    dt : float
        Control sample time in s.
    ltv : LTVSystem
        Continuous linearization at the control samples (possibly a subsystem).
    discrete : DiscreteLTVSystem
        Its zero-order-hold discretization.
    lqr : FiniteHorizonLQR
        Gains ``(Kt, nu, N)``; ``du_k = -gains[k] @ X_k``.
    samples : ReferenceSample
        The reference at the control times ``t0 + k dt``, k = 0..Kt.
    Q, R, Q_N : ndarray
        Weights.
    """

    system: ConstrainedSystem
    reference: Reference
    partition: Partition
    dt: float
    ltv: LTVSystem
    discrete: DiscreteLTVSystem
    lqr: FiniteHorizonLQR
    samples: ReferenceSample
    Q: np.ndarray
    R: np.ndarray
    Q_N: np.ndarray

    @property
    def times(self) -> np.ndarray:
        """Control times in s, shape (Kt,)."""
        return self.ltv.t

    @property
    def state_names(self) -> tuple[str, ...]:
        return self.ltv.state_names

    @property
    def needs_dependent_measurements(self) -> bool:
        """True when the controller's state includes admissible-dependent coordinates."""
        return any(n in self.partition.admissible_dependent_names for n in self.state_names)

    def to_schedule(self, *, plant_name: str | None = None) -> GainSchedule:
        """The gain schedule for an embedded controller (see :class:`GainSchedule`)."""
        params = getattr(self.system, "params", None)
        values = params.as_dict() if params is not None and hasattr(params, "as_dict") else {}
        s = self.samples
        K = len(self.times)
        return GainSchedule.from_lqr(self.lqr, self.discrete, x0=s.x[:K], xd0=s.xd[:K], u0=s.u[:K],
                                     plant_name=plant_name or getattr(self.system, "name", type(self.system).__name__),
                                     plant_parameters=values)


def design_tracking_lqr(system: ConstrainedSystem, reference: Reference, partition: Partition, *,
                        dt: float, horizon: float, t0: float = 0.0,
                        states: Sequence[str] | None = None,
                        Q: np.ndarray | None = None, R: np.ndarray | None = None, Q_N: np.ndarray | None = None,
                        max_state_errors: Mapping[str, float] | None = None,
                        max_input_errors: Mapping[str, float] | None = None,
                        terminal_factor: float = 1.0, terminal: str = "weight") -> TrackingController:
    """Design a finite-horizon LQR tracking a reference (eqs. 18-29).

    Parameters
    ----------
    system, reference, partition
        The plant, the reference solution and the coordinate partition.
    dt : float
        Controller sample time in s (its discretization and LQR use it).
    horizon : float
        Horizon in s; the controller runs on ``[t0, t0 + horizon)``.
    t0 : float
        Start time in s.
    states : sequence of str, optional
        Controller states: a subset of the partition's reduced state that is
        not driven by the others (e.g. ``(dx_ai, dxd_ai)`` when A23 = 0).
        Default: the full reduced state.
    Q, R, Q_N : ndarray, optional
        Weights; or give ``max_state_errors`` / ``max_input_errors`` (Bryson's
        rule, eq. 26, by state and input name), with ``Q_N = terminal_factor * Q``.
    terminal : {"weight", "periodic"}
        ``"weight"``: the finite-horizon LQR of eqs. (24)-(29) with ``Q_N``.
        ``"periodic"`` (periodic references only, a whole number of steps
        per period): the terminal weight is the periodic Riccati solution
        at the horizon's phase, so the gains are the infinite-horizon
        periodic LQR's over the whole horizon (no end effects).
    """
    dt = check_positive(dt, "dt", "s")
    horizon = check_positive(horizon, "horizon", "s")
    steps = int(round(horizon / dt))
    if steps < 1 or abs(steps * dt - horizon) > 1e-9 * max(1.0, horizon):
        raise ParameterError(f"horizon must be a whole number of steps dt = {dt} s, got horizon = {horizon} s")
    times = t0 + dt * np.arange(steps + 1)
    samples = reference(times)  # evaluated once: the linearization uses all but the last sample
    ltv_full = linearize_samples(system, samples[:-1], partition)
    ltv = ltv_full if states is None else ltv_full.select_states(list(states))
    disc = discretize(ltv, dt)
    if Q is None or R is None:
        if max_state_errors is None or max_input_errors is None:
            raise ParameterError("give Q and R, or max_state_errors and max_input_errors (Bryson's rule)")
        Qb, Rb = bryson(ltv.state_names, ltv.input_names, max_state_errors, max_input_errors)
        Q = Qb if Q is None else Q
        R = Rb if R is None else R
    Q = np.asarray(Q, dtype=float)
    R = np.asarray(R, dtype=float)
    Q_N = terminal_factor * Q if Q_N is None else np.asarray(Q_N, dtype=float)
    if terminal == "periodic":
        Q_N = _periodic_terminal_weight(system, reference, partition, states, dt, t0, steps, Q, R)
    elif terminal != "weight":
        raise ParameterError(f"terminal must be 'weight' or 'periodic', got {terminal!r}")
    lqr = finite_horizon_lqr(disc, None, Q, R, Q_N)
    return TrackingController(system, reference, partition, dt, ltv, disc, lqr, samples, Q, R, Q_N)


def _periodic_terminal_weight(system, reference, partition, states, dt, t0, steps, Q, R) -> np.ndarray:
    """Periodic Riccati solution at the phase of ``t0 + steps * dt``."""
    period = getattr(reference, "period", None)
    if period is None:
        raise ParameterError("terminal='periodic' needs a periodic reference (reference.period is None)")
    per_steps = int(round(period / dt))
    if abs(per_steps * dt - period) > 1e-9 * period:
        raise ParameterError(f"terminal='periodic' needs a whole number of steps per period: period {period:.9g} s, "
                         f"dt {dt} s gives {period / dt:.6g} steps; choose dt = period / integer")
    times = t0 + dt * np.arange(per_steps)
    ltv = linearize(system, reference, times, partition)
    if states is not None:
        ltv = ltv.select_states(list(states))
    per = periodic_lqr(discretize(ltv, dt), None, Q, R)
    return per.riccati[steps % per_steps]
