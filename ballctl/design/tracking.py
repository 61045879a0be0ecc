r"""The tracking-controller design pipeline: reference -> linearize -> discretize -> LQR (-> Kalman).

:func:`design_tracking_lqr` runs the paper's chain (Agúndez et al. 2024,
sections 2.2-2.4) at a sample time of the user's choice and returns a
:class:`TrackingController` that the closed loop
(:func:`ballctl.simulate_closed_loop`) runs and that exports to a
:class:`~ballctl.GainSchedule`. Given sensors, it adds the LTV Kalman filter
(:func:`ballctl.design.estimator.design_estimator`) for output feedback.

Feedforward consistent with the zero-order hold
-----------------------------------------------
A sampled controller holds each input over ``[t_k, t_k+1)``. Holding the
reference input ``u0(t_k)`` makes the plate lag the reference by half a step:
a loop started exactly on the reference drifts to a steady offset
proportional to ``dt`` (1.1e-4 m at dt = 10 ms on the paper's circle), which
the linear model cannot show. With ``feedforward="zoh"`` (the default) the
design

1. designs a first LQR along the continuous reference, with the feedforward
   ``u0(t_k + dt/2)`` (the held value closest to the moving reference input),
2. runs that loop on the design plant from the reference's initial state
   (no noise, no limits): the result is an exact solution of the plant under
   a zero-order hold, within ~1e-6 m of the continuous reference,
3. uses that sampled solution as the controller's reference: its states at
   the samples are what the loop regulates to, its held inputs are the
   feedforward.

A loop started on the reference then stays on it to integration accuracy. The
design's linear model is the exact ZOH discretization of the linearization
along the continuous reference with the mid-step feedforward held over each
step (what step 1 designs); the sampled solution lies within
``TrackingController.zoh_deviation`` of that reference (1.4e-6 m at
dt = 10 ms on the paper's circle), so linearizing along it instead changes
the matrices only at that order -- except for exact subsystems such as the
ball-plate's (contact, yaw) block, whose decoupling from lean and roll holds
on the continuous reference only (A23 = 0 there, 0.3 off it). A second
design pass along the sampled solution would therefore break the subsystem
and is not done. ``feedforward="sample"`` keeps the
reference input at the sample (the paper's choice, with the half-step lag).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


from .._errors import IntegrationError, ParameterError
from .._validation import check_positive
from ..linear.discretize import DiscreteLTVSystem, discretize
from ..simulation.arrays import LoopArrays, draw_runs
from ..simulation.component import LQGComponent, NonlinearStepper, run_loop
from ..simulation.engine import kernel_code, run_closed_loop
from .estimator import EstimatorSettings, InputDisturbance, IntegralAction, StateEstimator, design_estimator
from ..linear.linearize import linearize_samples
from .lqr import FiniteHorizonLQR, bryson, finite_horizon_lqr, periodic_lqr
from ..linear.ltv import LTVSystem
from ..linear.partition import Partition
from ..references.base import Reference, ReferenceSample
from ..hardware import Sensor
from ..schedule import GainSchedule, ScheduleEstimator
from ..system import ConstrainedSystem

__all__ = ["TrackingController", "LQRWeights", "EstimatorDesign", "TrackingOptions", "design_tracking_lqr",
           "FEEDFORWARD_METHODS", "zoh_reference", "state_selection"]

#: how the held feedforward is chosen (see the module docstring)
FEEDFORWARD_METHODS = ("zoh", "sample")


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
        The sampled reference at the control times ``t0 + k dt``, k = 0..Kt:
        with ``feedforward="zoh"`` the zero-order-hold solution of the plant
        (its ``u`` is the held feedforward), else the reference itself.
    Q, R, Q_N : ndarray
        Weights.
    estimator : StateEstimator or None
        The Kalman filter and sensors for output feedback.
    feedforward : str
        "zoh" or "sample".
    zoh_deviation : float
        Largest contact-point (or coordinate) distance in m between the sampled
        reference and the continuous one (0 for ``"sample"``).
    integral_lqr : FiniteHorizonLQR or None
        With integral action: the LQR of the design's states and the
        estimator's integrators together, gains ``(Kt, nu, N + ni)`` (the law
        of output feedback; ``lqr`` stays the plain design's, used for the
        zero-order-hold reference and state feedback).
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
    estimator: StateEstimator | None = None
    feedforward: str = "sample"
    zoh_deviation: float = 0.0
    integral_lqr: FiniteHorizonLQR | None = None

    @property
    def times(self) -> np.ndarray:
        """Control times in s, shape (Kt,)."""
        return self.ltv.t

    @property
    def state_names(self) -> tuple[str, ...]:
        return self.ltv.state_names

    @property
    def feedback_gains(self) -> np.ndarray:
        """Gains of the control law on the estimator's state, shape (Kt, nu, Ne).

        ``u_k = u_ff,k - feedback_gains[k] @ X_hat_k`` with ``X_hat = (X, d, zeta)``:
        the LQR gains on the design's states, the disturbance map ``T_k`` on
        the disturbance estimates (cancelled) and the integral gains on the
        integrators (see :mod:`ballctl.design.estimator`). Without an estimator, the LQR gains.
        """
        est = self.estimator
        if est is None:
            return self.lqr.gains
        N = self.lqr.gains.shape[2]
        gains = self.lqr.gains if self.integral_lqr is None else self.integral_lqr.gains
        K = gains.shape[0]
        parts = [gains[:, :, :N], est.disturbance_map[:K], gains[:, :, N:]]
        return np.ascontiguousarray(np.concatenate(parts, axis=2))

    @property
    def augmented_state_names(self) -> tuple[str, ...]:
        """Names of the estimator's states beyond the design's: ``<input>_disturbance`` (rad), then
        ``integral_<i>`` (the integrators, m s); empty without them."""
        est = self.estimator
        if est is None:
            return ()
        inputs = self.system.input_names
        names = tuple(f"{inputs[i]}_disturbance" if est.n_disturbances == len(inputs) else f"disturbance_{i}"
                      for i in range(est.n_disturbances))
        return names + tuple(f"integral_{i}" for i in range(est.n_integrals))

    @property
    def offset_free(self) -> bool:
        """True when the estimator carries disturbance states or integrators (constant errors are rejected)."""
        return self.estimator is not None and (self.estimator.n_disturbances + self.estimator.n_integrals) > 0

    @property
    def needs_dependent_measurements(self) -> bool:
        """True when the controller's state includes admissible-dependent coordinates."""
        return any(n in self.partition.admissible_dependent_names for n in self.state_names)

    def to_schedule(self, *, plant_name: str | None = None) -> GainSchedule:
        """The gain schedule for an embedded controller (see :class:`GainSchedule`).

        It holds the feedforward, the gains, the discrete model and, for output
        feedback, the Kalman filter; the plant's parameters are recorded as
        numbers (flags as 1.0 / 0.0).

        Parameters
        ----------
        plant_name : str, optional
            Recorded in the file (default the system's ``name``).

        Returns
        -------
        GainSchedule
        """
        params = getattr(self.system, "params", None)
        values = params.as_dict() if params is not None and hasattr(params, "as_dict") else {}
        # the file holds numbers: a plant's flags (e.g. with_spin) are recorded as 1.0 / 0.0
        values = {key: float(v) if isinstance(v, (bool, np.bool_)) else v for key, v in values.items()}
        s = self.samples
        K = len(self.times)
        est = self.estimator
        augmented = () if est is None else self.augmented_state_names
        feedback = None if est is None else ScheduleEstimator(
            estimator=est, feedback_gains=self.feedback_gains if augmented else None, augmented_state_names=augmented)
        return GainSchedule.from_lqr(self.lqr, self.discrete, x0=s.x[:K], xd0=s.xd[:K], u0=s.u[:K],
                                     plant_name=plant_name or getattr(self.system, "name", type(self.system).__name__),
                                     plant_parameters=values, output_feedback=feedback)


@dataclass(frozen=True, kw_only=True)
class LQRWeights:
    """The states a tracking LQR acts on and its weights (eqs. 24-26).

    Attributes
    ----------
    states : sequence of str, optional
        Controller states: a subset of the partition's reduced state that is
        not driven by the others (e.g. ``(dx_ai, dxd_ai)`` when A23 = 0).
        Default: the full reduced state.
    Q, R, Q_N : ndarray, optional
        Weights; or give ``max_state_errors`` / ``max_input_errors``, with
        ``Q_N = terminal_factor * Q``.
    max_state_errors, max_input_errors : mapping of str to float, optional
        Bryson's rule (eq. 26) by state and input name (their units), instead of ``Q`` and ``R``.
    terminal_factor : float
        ``Q_N = terminal_factor * Q`` when ``Q_N`` is not given.
    terminal : {"weight", "periodic"}
        ``"weight"``: the finite-horizon LQR of eqs. (24)-(29) with ``Q_N``.
        ``"periodic"`` (periodic references only, a whole number of steps per
        period): the terminal weight is the periodic Riccati solution at the
        horizon's phase, so the gains are the infinite-horizon periodic
        LQR's over the whole horizon (no end effects); a ``Q_N`` given with
        it is an error (it would be ignored).
    """

    states: Sequence[str] | None = None
    Q: np.ndarray | None = None
    R: np.ndarray | None = None
    Q_N: np.ndarray | None = None
    max_state_errors: Mapping[str, float] | None = None
    max_input_errors: Mapping[str, float] | None = None
    terminal_factor: float = 1.0
    terminal: str = "weight"

    def __post_init__(self) -> None:
        if self.terminal not in ("weight", "periodic"):
            raise ParameterError(f"terminal must be 'weight' or 'periodic', got {self.terminal!r}")
        if self.terminal == "periodic" and self.Q_N is not None:
            raise ParameterError("Q_N must not be given with terminal='periodic' (the periodic Riccati solution is "
                                 "the terminal weight); use terminal='weight' to keep your Q_N")


@dataclass(frozen=True, kw_only=True)
class EstimatorDesign:
    """The sensors of an output-feedback design and its Kalman filter.

    The filter is :func:`~ballctl.design.estimator.design_estimator`'s.

    Attributes
    ----------
    sensors : sequence of Sensor
        The rig's sensors.
    settings : EstimatorSettings, optional
        The filter's noise model (default ``EstimatorSettings()``).
    disturbance : InputDisturbance, optional
        Disturbance states acting through the inputs, estimated and cancelled by the law (offset-free).
    integral : IntegralAction, optional
        Integrators of the measured error in the estimator, and an LQR over the
        design's states and the integrators together (``TrackingController.integral_lqr``).
    """

    sensors: Sequence[Sensor]
    settings: EstimatorSettings | None = None
    disturbance: InputDisturbance | None = None
    integral: IntegralAction | None = None

    def __post_init__(self) -> None:
        if self.integral is not None and not isinstance(self.integral, IntegralAction):
            raise ParameterError(f"integral must be an IntegralAction, got {type(self.integral).__name__}")
        object.__setattr__(self, "sensors", tuple(self.sensors))


@dataclass(frozen=True, kw_only=True)
class TrackingOptions:
    """Where along the reference a design starts and how its held feedforward is computed.

    Attributes
    ----------
    t0 : float
        Start time in s; the controller runs on ``[t0, t0 + horizon)``.
    feedforward : {"zoh", "sample"}
        ``"zoh"``: feedforward and linearization along the zero-order-hold
        solution of the plant (module docstring); ``"sample"``: the reference
        input at each sample (the paper's choice; lags by half a step).
    method : {"DOP853", "RK45", "Radau", "rk4"}
        How the ``"zoh"`` sampled reference is integrated (``rk4`` with
        ``substeps`` steps per sample; adaptive methods at rtol 1e-10).
    substeps : int
        RK4 steps per control sample of the ``"zoh"`` sampled reference.
    """

    t0: float = 0.0
    feedforward: str = "zoh"
    method: str = "rk4"
    substeps: int = 4

    def __post_init__(self) -> None:
        if self.feedforward not in FEEDFORWARD_METHODS:
            raise ParameterError(f"feedforward must be one of {FEEDFORWARD_METHODS}, got {self.feedforward!r}")


def design_tracking_lqr(system: ConstrainedSystem, reference: Reference, partition: Partition, *, dt: float,
                        horizon: float, weights: LQRWeights | None = None, estimator: EstimatorDesign | None = None,
                        options: TrackingOptions | None = None) -> TrackingController:
    """Design a finite-horizon LQR tracking a reference (eqs. 18-29), optionally with a Kalman filter.

    Parameters
    ----------
    system, reference, partition
        The plant, the reference solution and the coordinate partition.
    dt : float
        Controller sample time in s (its discretization and LQR use it).
    horizon : float
        Horizon in s; the controller runs on ``[t0, t0 + horizon)``.
    weights : LQRWeights, optional
        The controller's states and weights (default: the full reduced state, identity weights).
    estimator : EstimatorDesign, optional
        Rig sensors: adds the LTV Kalman filter for output feedback, with
        input-disturbance states and integrators for offset-free tracking.
    options : TrackingOptions, optional
        Start time and the feedforward's computation.

    Returns
    -------
    TrackingController
    """
    dt = check_positive(dt, "dt", "s")
    w = LQRWeights() if weights is None else weights
    o = TrackingOptions() if options is None else options
    for value, name, kind in ((w, "weights", LQRWeights), (o, "options", TrackingOptions)):
        if not isinstance(value, kind):
            raise ParameterError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    if estimator is not None and not isinstance(estimator, EstimatorDesign):
        raise ParameterError(f"estimator must be an EstimatorDesign, got {type(estimator).__name__}")
    states, Q, R, Q_N = w.states, w.Q, w.R, w.Q_N
    max_state_errors, max_input_errors, terminal_factor, terminal = (w.max_state_errors, w.max_input_errors,
                                                                      w.terminal_factor, w.terminal)
    t0, feedforward, integrator, substeps = o.t0, o.feedforward, o.method, o.substeps
    integral = None if estimator is None else estimator.integral
    horizon = check_positive(horizon, "horizon", "s")
    steps = int(round(horizon / dt))
    if steps < 1 or abs(steps * dt - horizon) > 1e-9 * max(1.0, horizon):
        raise ParameterError(f"horizon must be a whole number of steps dt = {dt} s, got horizon = {horizon} s")
    times = t0 + dt * np.arange(steps + 1)
    samples = reference(times)  # evaluated once: the linearization uses all but the last sample
    continuous = samples
    if feedforward == "zoh":
        mid = reference(np.minimum(times + 0.5 * dt, reference.t_range[1]))
        samples = ReferenceSample(samples.t, samples.x, samples.xd, samples.xdd, mid.u, mid.ud, samples.lam)
    ltv, disc, lqr, Q, R, Q_N = _design_along(system, reference, partition, samples, states, dt, t0, steps, Q, R,
                                              Q_N, max_state_errors, max_input_errors, terminal_factor, terminal,
                                              0.5 * dt if feedforward == "zoh" else 0.0)
    deviation = 0.0
    if feedforward == "zoh":
        samples = zoh_reference(system, ltv, lqr.gains, samples, method=integrator, substeps=substeps)
        names = system.coordinate_names
        idx = [names.index(nm) for nm in system.tracked_coordinates] or list(range(len(names)))
        deviation = float(np.max(np.linalg.norm(samples.x[:, idx] - continuous.x[:, idx], axis=1)))
    est = None
    if estimator is not None:
        est = design_estimator(ltv, disc, system.coordinate_names, estimator.sensors, settings=estimator.settings,
                               disturbance=estimator.disturbance, integral=integral)
    integral_lqr = None
    if integral is not None:
        integral_lqr = _integral_lqr(disc, est.integral_map, Q, R, Q_N, integral.max_integral_error)
    return TrackingController(system, reference, partition, dt, ltv, disc, lqr, samples, Q, R, Q_N, est,
                              feedforward, deviation, integral_lqr)


def _integral_lqr(disc: DiscreteLTVSystem, H: np.ndarray, Q, R, Q_N, max_integral_error: float) -> FiniteHorizonLQR:
    """The LQR of ``(X, zeta)`` with ``zeta_{k+1} = zeta_k + H_k X_k`` (the estimator's integrators)."""
    Kt, N, nu = disc.Bd.shape
    ni = H.shape[1]
    A = np.zeros((Kt, N + ni, N + ni))
    A[:, :N, :N] = disc.Ad
    A[:, N:, :N] = H
    A[:, N:, N:] = np.eye(ni)
    B = np.zeros((Kt, N + ni, nu))
    B[:, :N] = disc.Bd
    w = np.eye(ni) / max_integral_error ** 2

    def block(M):
        out = np.zeros(M.shape[:-2] + (N + ni, N + ni))
        out[..., :N, :N] = M
        out[..., N:, N:] = w
        return out

    return finite_horizon_lqr(DiscreteLTVSystem.from_arrays(A, B), block(np.asarray(Q)), R,
                              Q_N=block(np.asarray(Q_N)))


def _design_along(system, reference, partition, samples, states, dt, t0, steps, Q, R, Q_N, max_state_errors,
                  max_input_errors, terminal_factor, terminal, input_shift):
    """Linearize along the samples, discretize (ZOH) and solve the LQR."""
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
    if terminal == "periodic":
        Q_N = _periodic_terminal_weight(system, reference, partition, states, dt, t0, steps, Q, R, input_shift)
    else:
        Q_N = terminal_factor * Q if Q_N is None else np.asarray(Q_N, dtype=float)
    lqr = finite_horizon_lqr(disc, Q, R, Q_N=Q_N)
    return ltv, disc, lqr, Q, R, Q_N


def zoh_reference(system: ConstrainedSystem, ltv: LTVSystem, gains: np.ndarray, samples: ReferenceSample, *,
                  method: str = "DOP853", substeps: int = 1, backend: str = "auto") -> ReferenceSample:
    """The zero-order-hold solution of the plant that follows a reference (step 2 of the module docstring).

    Parameters
    ----------
    system : ConstrainedSystem
        The design plant.
    ltv : LTVSystem
        Linearization along ``samples`` (for the reduced state).
    gains : ndarray, shape (Kt, nu, N)
        LQR gains along ``samples``.
    samples : ReferenceSample
        Kt + 1 samples whose ``u`` is the held feedforward (e.g. the
        reference input at mid-step).
    method : {"DOP853", "RK45", "Radau", "rk4"}
        Integrator of the plant between samples.
    substeps : int
        RK4 steps per sample.
    backend : {"auto", "python"}
        ``"auto"`` runs ``method="rk4"`` on a plant with compiled kernels
        through the compiled loop of :mod:`ballctl.simulation.engine` (the same steps and
        arithmetic), ``"python"`` the Python loop.

    Returns
    -------
    ReferenceSample
        States of the plant at the samples under the held inputs
        ``u_k = samples.u[k] - gains[k] @ X_k`` from ``samples`` at step 0;
        ``xdd`` and ``lam`` from the plant's equations with ``u_k``; ``ud`` zero
        (the input is held).
    """
    n = system.n_coordinates
    Kt = gains.shape[0]
    U = np.array(samples.u, dtype=float)
    code = kernel_code(system)
    if backend not in ("auto", "python"):
        raise ParameterError(f"backend must be 'auto' or 'python', got {backend!r}")
    # a state-feedback closed loop without noise or limits: the loop of ballctl.simulation, compiled or not
    loop = LoopArrays(kernel_code=code, n_constraints=system.n_constraints,
                      dt=float(samples.t[1] - samples.t[0]), times=samples.t[:Kt + 1], x_ref=samples.x[:Kt + 1],
                      xd_ref=samples.xd[:Kt + 1], u_ref=samples.u[:Kt + 1], gains=gains,
                      selection=state_selection(ltv.partition, ltv.state_names, n),
                      tracked_index=np.zeros(0, dtype=np.int64), substeps=substeps)
    runs = draw_runs(loop, [0], np.asarray(getattr(system, "kernel_parameters", np.zeros(1)), dtype=float)[None],
                     samples.x[:1], samples.xd[:1])
    if method == "rk4" and code >= 0 and backend == "auto":
        out = run_closed_loop(loop, runs)
    else:
        stepper = NonlinearStepper(system, method, 1e-10, 1e-13, substeps, loop.stabilization)
        out = run_loop(LQGComponent(loop), stepper, loop, runs, raise_on_failure=True).output
    if out.status[0] >= 0:
        raise IntegrationError(f"zero-order-hold reference left the finite numbers at t = "
                               f"{samples.t[out.status[0]]:.6g} s")
    X, XD = out.x[0], out.xd[0]
    U[:Kt] = out.u[0, :Kt]
    U[Kt] = U[Kt - 1]
    if code >= 0:  # the plant's kernels take the whole stack
        XDD, LAM = system.accelerations(X, XD, U)
    else:
        XDD = np.zeros_like(X)
        LAM = np.zeros((Kt + 1, system.n_constraints))
        for k in range(Kt + 1):
            XDD[k], LAM[k] = system.accelerations(X[k], XD[k], U[k])
    return ReferenceSample(samples.t, X, XD, XDD, U, np.zeros_like(U), LAM)


def state_selection(partition: Partition, state_names, n: int) -> np.ndarray:
    """Index of each reduced state in the stacked deviation ``(dx, dxd)`` (length 2n), shape (N,).

    The reduced state is a selection of the full deviation (see
    :meth:`ballctl.LTVSystem.reduce`); this is that selection as indices.

    Parameters
    ----------
    partition : Partition
    state_names : sequence of str
        The reduced states, in order (a subset of ``partition.state_names``).
    n : int
        Coordinates of the plant.
    """
    p = partition
    full = list(p.independent) + [n + i for i in p.independent] + list(p.admissible_dependent)
    return np.array([full[p.state_names.index(name)] for name in state_names], dtype=np.int64)


def _periodic_terminal_weight(system, reference, partition, states, dt, t0, steps, Q, R, input_shift
                              ) -> np.ndarray:
    """Periodic Riccati solution at the phase of ``t0 + steps * dt`` (inputs taken ``input_shift`` s later)."""
    period = getattr(reference, "period", None)
    if period is None:
        raise ParameterError("terminal='periodic' needs a periodic reference (reference.period is None)")
    per_steps = int(round(period / dt))
    if abs(per_steps * dt - period) > 1e-9 * period:
        raise ParameterError(f"terminal='periodic' needs a whole number of steps per period: period {period:.9g} s, "
                         f"dt {dt} s gives {period / dt:.6g} steps; choose dt = period / integer")
    times = t0 + dt * np.arange(per_steps)
    samples = reference(times)
    if input_shift:
        shifted = reference(times + input_shift)
        samples = ReferenceSample(samples.t, samples.x, samples.xd, samples.xdd, shifted.u, shifted.ud, samples.lam)
    ltv = linearize_samples(system, samples, partition)
    if states is not None:
        ltv = ltv.select_states(list(states))
    per = periodic_lqr(discretize(ltv, dt), Q, R)
    return per.riccati[steps % per_steps]
