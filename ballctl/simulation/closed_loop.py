r"""Closed-loop simulation of a sampled tracking controller on a continuous truth plant.

python-control cannot interconnect a continuous nonlinear plant with a
discrete time-varying controller; this loop does. At every control time
:math:`t_k = t_0 + k\,\Delta t` it runs the steps of :mod:`ballctl.simulation.loop_step`:

1. **sense**: with a state estimator (output feedback), each sensor sampled
   at step k reads its signals of the truth plant plus bias and seeded noise;
   without one (state feedback), the controller's reduced state is measured
   directly (optionally with noise per coordinate),
2. **estimate**: the Kalman filter is committed up to the newest step whose
   samples have all arrived, and predicted forward to ``t_k`` with the inputs
   already sent (latency compensation, any latency),
3. **control**: :math:`u = u_{ff,k} - K_k \hat X_k` (eqs. 27, 30), with the
   zero-order-hold feedforward of the design,
4. **shape**: quantization, tilt limit, slew limit and actuation latency
   (each reported when active); the tilt limit holds from the first step,
5. **integrate** the truth plant with the input held: the nonlinear DAE
   (``model="nonlinear"``), or the design's exact discretized linear model
   (``model="linear"``, the paper's L).

The truth plant may differ from the design plant (a quasi-static design on the
exact servo plate): the design's coordinates are looked up by name among the
truth's. ``feedback=False`` runs the same loop open (``u = u_ff``).
"""

from __future__ import annotations

import sys
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from .._errors import (BallctlError, ChartSingularityError, ConstraintViolationError, IntegrationError,
                      NonFiniteStateError, ParameterError, ParameterTypeError)
from .._validation import (as_vector, check_bool, check_choice, check_finite_at, check_instance, check_integer,
                          check_nonnegative, check_positive, check_stabilization, check_tolerances, guard_rhs)
from .engine import EstimatorArrays, kernel_code, run_closed_loop, sensor_draws
from .loop_step import (backlash, control_law, delay_segments, effective_input, kalman_predict, kalman_update,
                        measure, shape_command)
from ..hardware import LoopImperfections, RigLimits
from ..simulate import CONSTRAINT_TOL, MAX_STEPS, rk4
from ..plants.base import friction_coefficient_required
from ..system import ConstrainedSystem
from ..design.tracking import TrackingController

__all__ = ["RigLimits", "ClosedLoopResult", "ClosedLoopSummary", "ClosedLoopBatchResult", "simulate_closed_loop",
           "state_selection", "estimator_arrays", "imperfection_draws", "run_compiled_batch", "contact_forces_along",
           "contact_extremes", "INTEGRATORS"]

#: integrators of the truth plant between samples
INTEGRATORS = ("DOP853", "RK45", "Radau", "rk4")


@dataclass(frozen=True, kw_only=True)
class ClosedLoopSummary:
    """Key numbers of a closed-loop run (SI units, named in the fields).

    Attributes
    ----------
    initial_error_m, final_error_m : float
        Contact-point distance from the reference at the first and last sample
        (norm of the reduced state where the plant has no contact point).
    steady_state_error_m : float
        RMS error over the last 20 % of the run.
    rms_error_last_period_m : float or None
        RMS error over the last ``period_s`` of the run (None without a period).
    peak_error_last_period_m : float or None
        Largest error over that window.
    settling_time_s : float or None
        First time after which the error stays below
        ``max(settle_fraction * initial error, settle_floor)``; None if it never does.
    peak_input_rad, peak_input_rate_rad_s : dict
        Largest |u_i| and |du_i/dt| by input name.
    peak_tilt_rad : float
        Largest |u_i| over all inputs.
    rms_effort_rad : float
        RMS of ``u - u_ff``.
    max_constraint_residual : float
        Largest |D(x) xd|.
    estimator_rms_error_m : float or None
        RMS of the estimator's contact-point error over the last 20 % of the
        run (output feedback only).
    limit_steps : dict
        Control steps at which each rig limit changed the command.
    peak_friction_coefficient : float or None
        Largest friction coefficient the contact needed, ``max |F_t| / N``
        (rolling without slipping holds while it stays below the contact's
        coefficient of static friction; inf once the normal force vanishes).
        None for a plant without ``contact_forces``.
    least_normal_force_N : float or None
        Smallest normal force at the contact in N (<= 0: the ball lifts off).
    peak_friction_coefficient_last_period, least_normal_force_last_period_N : float or None
        The same over the last period (the steady tracking; None without a period).
    diverged : bool
        The run was stopped because the truth left the region of interest.
    diverged_at_s : float or None
    wall_time_s : float
    """

    initial_error_m: float
    final_error_m: float
    steady_state_error_m: float
    rms_error_last_period_m: float | None
    peak_error_last_period_m: float | None
    settling_time_s: float | None
    peak_input_rad: dict
    peak_input_rate_rad_s: dict
    peak_tilt_rad: float
    rms_effort_rad: float
    max_constraint_residual: float
    estimator_rms_error_m: float | None
    limit_steps: dict
    peak_friction_coefficient: float | None
    least_normal_force_N: float | None
    peak_friction_coefficient_last_period: float | None
    least_normal_force_last_period_N: float | None
    diverged: bool
    diverged_at_s: float | None
    wall_time_s: float

    def contact_verdict(self, friction_coefficient: float, *, last_period: bool = False) -> str:
        """``"rolls"``, ``"slips"`` (needs more friction than ``friction_coefficient``) or ``"lifts off"``.

        Parameters
        ----------
        friction_coefficient : float
            The contact's coefficient of static friction (e.g. ``rig.friction_coefficient``).
        last_period : bool
            Judge the last period only (the steady tracking) instead of the whole run.
        """
        mu, least = ((self.peak_friction_coefficient_last_period, self.least_normal_force_last_period_N)
                     if last_period else (self.peak_friction_coefficient, self.least_normal_force_N))
        if least is None:
            return "not computed"
        if not least > 0:
            return "lifts off"
        return "slips" if mu > friction_coefficient else "rolls"

    def as_dict(self) -> dict:
        """Strict-JSON-ready dictionary (no NaN or infinity: missing values are None)."""
        def clean(v):
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, (bool, np.bool_)):
                return bool(v)
            if v is None:
                return None
            v = float(v)
            return v if np.isfinite(v) else None
        return {name: clean(getattr(self, name)) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class ClosedLoopResult:
    """Time histories of a closed-loop (or open-loop) run at the control samples.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Control times in s (the last is the end of the run).
    x, xd : ndarray, shape (K, n)
        Truth coordinates and velocities.
    x_ref, xd_ref : ndarray, shape (K, n)
        The design's reference in the truth's coordinates (NaN for truth
        coordinates the design plant does not have, e.g. the plate angles of a
        quasi-static design).
    u, u_ref : ndarray, shape (K, nu)
        Input that acted over [t_k, t_k+1) (its time average under an
        actuation latency) and the feedforward.
    X : ndarray, shape (K, N)
        Reduced deviation of the true state in the controller's states.
    X_measured : ndarray, shape (K, N)
        What the control law used: the measured state (state feedback) or the
        estimate (output feedback).
    velocity_residual : ndarray, shape (K, m + l)
        Constraint residual ``D(x) xd`` of the truth plant.
    state_names, input_names, coordinate_names : tuple of str
    model : str
        "nonlinear" or "linear".
    feedback : str
        "state", "output" or "open".
    limit_events : dict
        How many control steps each rig limit changed the command.
    wall_time : float
        Wall-clock seconds of the run.
    y : ndarray, shape (K, ny)
        Sensor readings (NaN where a signal was not sampled); ny = 0 without an estimator.
    signal_names : tuple of str
    diverged_at : float or None
        Time in s at which the run was stopped because the truth diverged
        (arrays then end there).
    period : float or None
        Period in s of the reference (for the last-period error).
    augmented_estimate : ndarray, shape (K, nd + ni)
        The offset-free filter's states beyond the design's: the estimated
        input disturbances in rad, then the integrators of the measured error
        in m s (none without them; see :mod:`ballctl.design.estimator`).
    normal_force : ndarray, shape (K,)
        Normal contact force in N at the samples (empty for a plant without
        ``contact_forces``), from the truth's state and the input that acts over the step.
    friction_force : ndarray, shape (K, 2)
        Tangential (friction) contact force in N, plate axes.
    """

    t: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    x_ref: np.ndarray
    xd_ref: np.ndarray
    u: np.ndarray
    u_ref: np.ndarray
    X: np.ndarray
    X_measured: np.ndarray
    velocity_residual: np.ndarray
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    coordinate_names: tuple[str, ...]
    model: str
    feedback: str
    limit_events: dict = field(default_factory=dict)
    wall_time: float = 0.0
    y: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    signal_names: tuple[str, ...] = ()
    diverged_at: float | None = None
    period: float | None = None
    augmented_estimate: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    normal_force: np.ndarray = field(default_factory=lambda: np.zeros(0))
    friction_force: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def X_estimate(self) -> np.ndarray:
        """What the controller believed, shape (K, N) (alias of ``X_measured`` kept for clarity)."""
        return self.X_measured

    @property
    def estimation_error(self) -> np.ndarray:
        """``X_measured - X``: estimate (or measurement) minus truth, shape (K, N)."""
        return self.X_measured - self.X

    @property
    def position_error(self) -> np.ndarray:
        """Distance in m between the contact point and its reference, shape (K,).

        Uses the coordinates named ``contact_x`` and/or ``contact_y`` (ball-plate,
        rolling ball, rolling disk).
        """
        idx = [self.coordinate_names.index(n) for n in ("contact_x", "contact_y") if n in self.coordinate_names]
        if not idx:
            raise ParameterError("position_error needs coordinates named contact_x and/or contact_y")
        return np.linalg.norm(self.x[:, idx] - self.x_ref[:, idx], axis=1)

    @property
    def control_effort(self) -> np.ndarray:
        """``u - u_ref`` in input units, shape (K, nu)."""
        return self.u - self.u_ref

    def summary(self, *, settle_fraction: float = 0.05, settle_floor: float = 1e-3) -> ClosedLoopSummary:
        """Key numbers (see :class:`ClosedLoopSummary`).

        The settling time is the first time after which the position error
        stays below ``max(settle_fraction * initial error, settle_floor)`` m.

        Parameters
        ----------
        settle_fraction : float
            Settled below this fraction of the initial position error.
        settle_floor : float
            Error in m that always counts as settled.

        Returns
        -------
        ClosedLoopSummary
        """
        try:
            err = self.position_error
            cidx = [self.state_names.index(n) for n in ("contact_x", "contact_y") if n in self.state_names]
        except ValueError:
            err = np.linalg.norm(self.X, axis=1)
            cidx = list(range(self.X.shape[1]))
        span = self.t[-1] - self.t[0]
        tail = self.t >= self.t[0] + 0.8 * span
        last_rms = last_peak = None
        if self.period is not None and self.diverged_at is None and span >= self.period - 1e-9:
            window = self.t >= self.t[-1] - self.period - 1e-9
            last_rms = float(np.sqrt(np.mean(err[window] ** 2)))
            last_peak = float(np.max(err[window]))
        threshold = max(settle_fraction * err[0], settle_floor)
        outside = np.nonzero(err > threshold)[0]
        if self.diverged_at is not None:
            settling = None
        elif outside.size == 0:
            settling = 0.0
        elif outside[-1] == len(err) - 1:
            settling = None
        else:
            settling = float(self.t[outside[-1] + 1] - self.t[0])
        dts = np.diff(self.t)
        peak_u = {name: float(np.max(np.abs(self.u[:, i]))) for i, name in enumerate(self.input_names)}
        peak_rate = {name: (float(np.max(np.abs(np.diff(self.u[:, i]))) / np.min(dts)) if len(self.t) > 1 else 0.0)
                     for i, name in enumerate(self.input_names)}
        mu = least = mu_last = least_last = None
        if self.normal_force.size:
            mu, least = contact_extremes(self.normal_force, self.friction_force)
            if last_rms is not None:
                mu_last, least_last = contact_extremes(self.normal_force[window], self.friction_force[window])
        est = None
        if self.feedback == "output" and cidx:
            e = self.estimation_error[tail][:, cidx]
            est = float(np.sqrt(np.mean(np.sum(e ** 2, axis=1))))
        return ClosedLoopSummary(
            initial_error_m=float(err[0]), final_error_m=float(err[-1]),
            steady_state_error_m=float(np.sqrt(np.mean(err[tail] ** 2))),
            rms_error_last_period_m=last_rms, peak_error_last_period_m=last_peak, settling_time_s=settling,
            peak_input_rad=peak_u, peak_input_rate_rad_s=peak_rate,
            peak_tilt_rad=float(np.max(np.abs(self.u))) if self.u.size else 0.0,
            rms_effort_rad=float(np.sqrt(np.mean(np.sum(self.control_effort ** 2, axis=1)))),
            max_constraint_residual=float(np.max(np.abs(self.velocity_residual)))
            if self.velocity_residual.size else 0.0,
            estimator_rms_error_m=est,
            limit_steps={k: float(v) for k, v in self.limit_events.items()},
            peak_friction_coefficient=mu, least_normal_force_N=least,
            peak_friction_coefficient_last_period=mu_last, least_normal_force_last_period_N=least_last,
            diverged=self.diverged_at is not None, diverged_at_s=self.diverged_at, wall_time_s=self.wall_time)

    def to_time_response(self):
        """The run as a python-control ``TimeResponseData`` (signal-major, the one transposing adapter).

        Outputs are the truth coordinates, states the reduced deviation ``X``,
        inputs the applied plate commands.
        """
        import control

        return control.TimeResponseData(
            self.t, self.x.T, states=self.X.T, inputs=self.u.T, output_labels=list(self.coordinate_names),
            state_labels=list(self.state_names), input_labels=list(self.input_names),
            title=f"closed loop ({self.model}, {self.feedback} feedback)", sysname="ballctl closed loop",
            success=self.diverged_at is None,
            message=None if self.diverged_at is None else f"diverged at t = {self.diverged_at:.6g} s")


class _Progress:
    def __init__(self, total: int, enabled: bool, label: str) -> None:
        self.total, self.enabled, self.label = total, enabled, label
        self.last = -1

    def update(self, k: int) -> None:
        if not self.enabled:
            return
        pct = 5 * int(20 * k / max(self.total, 1))
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4) + "-" * (25 - pct // 4)
            print(f"\r{self.label} [{bar}] {pct:3d}%", end="", file=sys.stderr, flush=True)
            if k >= self.total:
                print(file=sys.stderr)


def simulate_closed_loop(controller: TrackingController, x0, xd0, *, duration: float | None = None,
                         model: str = "nonlinear", feedback: bool = True, truth: ConstrainedSystem | None = None,
                         output_feedback: bool | None = None,
                         noise_std: dict[str, float] | None = None, seed: int | None = None,
                         limits: RigLimits | None = None, integrator: str = "DOP853",
                         rtol: float = 1e-9, atol: float = 1e-12, substeps: int = 1,
                         stabilization: tuple[float, float] | None = (10.0, 10.0),
                         divergence_error: float | None = None,
                         progress: bool = False, backend: str = "auto",
                         imperfections: LoopImperfections | None = None
                         ) -> "ClosedLoopResult | ClosedLoopBatchResult":
    """Run a sampled LQR (or LQG) tracking loop on a truth plant (see the module docstring).

    Parameters
    ----------
    controller : TrackingController
        From :func:`ballctl.design_tracking_lqr`; its ``dt`` is the control
        period; its ``estimator`` (if any) gives the sensors.
    x0, xd0 : array_like, shape (n,) or (B, n)
        Initial truth state (the dependent velocities are completed from the
        independent ones when the truth is the design plant). A stack of B
        initial states runs B runs together and returns a
        :class:`ClosedLoopBatchResult` with a leading run axis; ``xd0`` may
        then be one state for all runs.
    duration : float, optional
        Length of the run in s (default: the controller's horizon).
    model : {"nonlinear", "linear"}
        Plant: the nonlinear DAE, or the design's exact-ZOH linear model (the paper's L).
    feedback : bool
        False runs open loop, ``u = u_ff`` (rig limits still apply).
    truth : ConstrainedSystem, optional
        The plant integrated (default: the design plant). Its coordinates must
        include the design plant's (matched by name), with the same number of inputs.
        For a batch: one truth plant or one per run (parameter samples).
    output_feedback : bool, optional
        Use the controller's estimator with its sensors (default: True when
        the controller has one).
    noise_std : dict, optional
        State feedback only: std of Gaussian measurement noise per coordinate
        name (m or rad) or ``"<name>_rate"`` (m/s or rad/s).
    seed : int or numpy.random.SeedSequence, optional
        Seed of the noise generator; for a batch, one seed per run (a
        sequence of B) or one root seed whose ``SeedSequence(seed).spawn(B)``
        children seed the runs.
    limits : RigLimits, optional
        Tilt, slew, quantization and actuation latency; they shape every
        command including the first.
    integrator : {"DOP853", "RK45", "Radau", "rk4"}
        Adaptive ``solve_ivp`` method between samples (with ``rtol``/``atol``),
        or fixed-step classical Runge-Kutta with ``substeps`` steps per sample.
    stabilization : (float, float) or None
        Baumgarte gains of the truth plant's constraint stabilization.
    divergence_error : float, optional
        Stop the run (recording ``diverged_at``) when the contact point is
        farther than this from its reference (m), when the state stops being
        finite, or when the integration fails. Default: never stop
        (an integration failure raises).
    progress : bool
        Show a progress bar on stderr.
    rtol, atol : float
        Tolerances of the adaptive integrators.
    substeps : int
        RK4 steps per control sample (``integrator='rk4'``).
    stabilization : (float, float) or None
        Baumgarte gains in 1/s of the plant integration (see :func:`ballctl.simulate`).

    backend : {"auto", "compiled", "python"}
        ``"auto"`` runs ``integrator="rk4"`` on the nonlinear model through
        the compiled loop of :mod:`ballctl.simulation.engine` when the truth plant has
        compiled kernels (state or output feedback, rig limits, divergence
        stops: the same steps and arithmetic as the Python loop; agreement to
        1e-10 m is tested), otherwise the Python loop. ``"compiled"``
        requires the compiled loop, ``"python"`` forces the Python loop.
    imperfections : LoopImperfections, optional
        The loop's share of a rig's imperfections (``rig.imperfections``):
        lost sensor samples (``frame_drop``; the filter makes no update from a
        lost sample), timing jitter of the sample instants and the servo dead
        band, drawn from a stream of their own (the noise draws do not
        change). The plant's share (level offset, rolling resistance) lives in
        the truth plant (:meth:`ballctl.RigProfile.truth_plant`).

    Returns
    -------
    ClosedLoopResult or ClosedLoopBatchResult
        One run for ``x0`` of shape (n,); B runs for shape (B, n).
    """
    check_instance(controller, "controller", TrackingController, "TrackingController (from design_tracking_lqr)")
    if backend not in ("auto", "compiled", "python"):
        raise ParameterError(f"backend must be 'auto', 'compiled' or 'python', got {backend!r}")
    if np.ndim(x0) == 2:
        return _simulate_batch(controller, x0, xd0, duration=duration, model=model, feedback=feedback,
                               truth=truth, output_feedback=output_feedback, noise_std=noise_std, seed=seed,
                               limits=limits, integrator=integrator, rtol=rtol, atol=atol, substeps=substeps,
                               stabilization=stabilization, divergence_error=divergence_error,
                               progress=progress, backend=backend, imperfections=imperfections)
    if truth is not None:
        check_instance(truth, "truth", ConstrainedSystem)
    system = controller.system
    plant = system if truth is None else truth
    nu = system.n_inputs
    n = plant.n_coordinates
    if plant.n_inputs != nu:
        raise ParameterError(f"truth has {plant.n_inputs} inputs, the controller {nu}")
    try:
        cmap = np.array([plant.coordinate_names.index(nm) for nm in system.coordinate_names])
    except ValueError:
        raise ParameterError(f"truth coordinates {plant.coordinate_names} must include the design's "
                         f"{system.coordinate_names}") from None
    x = as_vector(x0, "x0", n).copy()
    xd = as_vector(xd0, "xd0", n).copy()
    check_choice(model, "model", ("nonlinear", "linear"))
    feedback = check_bool(feedback, "feedback")
    progress = check_bool(progress, "progress")
    if output_feedback is not None:
        output_feedback = check_bool(output_feedback, "output_feedback")
    if limits is not None:
        check_instance(limits, "limits", RigLimits)
    if imperfections is not None:
        check_instance(imperfections, "imperfections", LoopImperfections)
    check_choice(integrator, "integrator", INTEGRATORS)
    rtol, atol = check_tolerances(rtol, atol)
    substeps = check_integer(substeps, "substeps", minimum=1)
    stabilization = check_stabilization(stabilization)
    if seed is not None and not isinstance(seed, np.random.SeedSequence):   # a batch hands each run its own
        seed = check_integer(seed, "seed", minimum=0)
    if model == "nonlinear" and plant.n_holonomic:
        pos = np.asarray(plant.holonomic(x), dtype=float).reshape(-1)
        if np.max(np.abs(pos)) > CONSTRAINT_TOL:
            raise ConstraintViolationError(
                f"x0 violates the position constraints: residual {np.max(np.abs(pos)):.3g} m or rad exceeds "
                f"{CONSTRAINT_TOL:g}; project it with system.project_positions(x0) first")
    margin = getattr(plant, "chart_margin", None)
    if margin is not None and float(np.real(margin(x))) <= 0.0:
        raise ChartSingularityError("x0 lies beyond the edge of the plant's coordinate chart (for the ball-plate: "
                                    "|lean| at or beyond the chart limit near 90 deg)")
    if truth is None:
        xd = controller.partition.complete_velocities(system, x, xd)
    if model == "linear" and truth is not None:
        raise ParameterError("model='linear' integrates the design's linear model; it takes no truth plant")
    limits = limits or RigLimits()
    dt = controller.dt
    steps_available = len(controller.times)
    if duration is None:
        steps = steps_available
    else:
        duration = check_positive(duration, "duration", "s")
        steps = int(round(duration / dt))
        if steps < 1:
            raise ParameterError(f"duration must be at least one control step dt = {dt:g} s, got {duration!r} s")
        if steps > steps_available:
            raise ParameterError(f"duration = {duration!r} s exceeds the controller's horizon "
                                 f"{steps_available * dt:.6g} s (allowed: dt = {dt:g} s up to the horizon)")
    if integrator == "rk4" and steps * substeps > MAX_STEPS:
        raise ParameterError(f"substeps = {substeps} gives more than {MAX_STEPS:.0e} RK4 steps over the run; "
                             f"lower substeps")
    est = controller.estimator
    if output_feedback is None:
        output_feedback = est is not None and feedback
    if output_feedback and est is None:
        raise ParameterError("output_feedback=True needs a controller designed with sensors (controller.estimator)")
    if output_feedback and noise_std:
        raise ParameterError("noise_std is for state feedback; with output feedback the sensors carry the noise")
    names = controller.state_names
    noise = np.zeros(len(names))
    if noise_std is not None and not isinstance(noise_std, Mapping):
        raise ParameterTypeError(f"noise_std must be a mapping of coordinate name to standard deviation "
                                 f"(m, rad, m/s or rad/s), got {type(noise_std).__name__}")
    if noise_std:
        coord = set(system.coordinate_names)
        for key, value in noise_std.items():
            base = key[:-5] if isinstance(key, str) and key.endswith("_rate") else key
            if base not in coord:
                raise ParameterError(f"noise_std: unknown coordinate {key!r}; coordinates are "
                                     f"{system.coordinate_names}")
            value = check_nonnegative(value, f"noise_std[{key!r}]", "m, rad, m/s or rad/s")
            if key in names:
                noise[names.index(key)] = value
    rng = np.random.default_rng(seed)
    if divergence_error is not None:
        divergence_error = check_positive(divergence_error, "divergence_error", "m")
    if not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ParameterError(f"substeps must be an integer >= 1, got {substeps!r}")
    code = _compiled_code(controller, plant, model, integrator, backend)
    if code is not None:
        start = _time.perf_counter()
        K = steps + 1
        err = (noise * rng.standard_normal((K, len(names))))[None] if noise_std else None
        draws = sensor_draws(rng, K, steps_available, est.n_signals)[None] if output_feedback else None
        received, shift = imperfection_draws(seed, K, est if output_feedback else None, imperfections)
        out = run_compiled_batch(controller, code, [plant], x[None], xd[None], steps, err, limits, feedback,
                            substeps, stabilization, draws=draws, divergence_error=divergence_error,
                            received=received[None], sample_shift=shift[None],
                            deadband=imperfections.actuator_deadband if imperfections else 0.0)
        if out.status[0] >= 0 and divergence_error is None:
            raise NonFiniteStateError(f"the compiled closed loop left the finite numbers at step {out.status[0]} "
                                      f"(t = {controller.samples.t[out.status[0]]:.6g} s)")
        return _result(controller, plant, out, 0, K, model, feedback, output_feedback, limits,
                       _time.perf_counter() - start, divergence_error is not None)

    ref = controller.samples
    ltv = controller.ltv
    Ad, Bd = controller.discrete.Ad, controller.discrete.Bd
    gains = controller.feedback_gains if output_feedback else controller.lqr.gains
    K = steps + 1
    T = ref.t[:K]
    N = len(names)
    out_x = np.full((K, n), np.nan)
    out_xd = np.full((K, n), np.nan)
    out_u = np.full((K, nu), np.nan)
    out_X = np.full((K, N), np.nan)
    out_Xm = np.full((K, N), np.nan)
    out_d = np.full((K, gains.shape[2] - N), np.nan)
    out_res = np.full((K, plant.n_constraints), np.nan)
    events = {"quantum": 0, "max_angle": 0, "max_rate": 0}
    d_int, d_frac = delay_segments(limits.delay, dt)
    lim = (limits.max_angle, limits.max_rate, limits.quantum)
    # the input before the first command: the feedforward, quantized and within the tilt limit
    u_start, _ = shape_command(ref.u[0], ref.u[0], 0.0, lim[0], None, lim[2])
    commands: list[np.ndarray] = []
    u_applied = u_start.copy()
    u_plant = u_start.copy()  # what the plate's servos receive (after a dead band)
    deadband = imperfections.actuator_deadband if imperfections else 0.0
    du_eff = np.zeros((steps, nu))  # input deviation that acted over each step (known to the controller)
    X_lin = ltv.reduce(x[cmap] - ref.x[0], xd[cmap] - ref.xd[0]) if model == "linear" else None
    # output feedback: sensors and the committed filter state
    if output_feedback:
        ny = est.n_signals
        sig_idx = np.array([plant.coordinate_names.index(s) for s in est.signal_names])
        sig_ref_idx = np.array(est.coordinate_index)
        y_dev = np.zeros((K, ny))
        avail = np.zeros((K, ny), dtype=bool)
        y_out = np.full((K, ny), np.nan)
        M, C = est.kalman.update_gains, est.kalman.C
        Ad_f, Bd_f = est.Ad, est.Bd  # the filter's model (with the disturbance states, if any)
        lat = est.latency_steps
        X_c = np.zeros(est.n_states)  # committed prior at step j_c: the estimate starts on the reference
        j_c = 0
        received, shift = imperfection_draws(seed, K, est, imperfections)
    else:
        ny = 0
        y_out = np.zeros((K, 0))
    mode = "open" if not feedback else ("output" if output_feedback else "state")
    bar = _Progress(steps, progress, f"closed loop ({model}, {mode})")
    diverged_at = None
    start = _time.perf_counter()

    state_names = tuple(plant.coordinate_names) + tuple(f"{c}_rate" for c in plant.coordinate_names)

    def rhs_for(u_const):
        def rhs(t, yy):
            xdd, _ = plant.accelerations(yy[:n], yy[n:], u_const, stabilization=stabilization)
            return np.concatenate([yy[n:], xdd])
        # the guard turns a NaN into an error naming its time instead of an endless step loop
        return guard_rhs(rhs, context="simulate_closed_loop", names=state_names) if integrator != "rk4" else rhs

    def advance(yy, t_a, t_b, u_const):
        if integrator == "rk4":
            with np.errstate(all="ignore" if divergence_error is not None else "warn"):
                try:
                    return rk4(rhs_for(u_const), yy, t_a, t_b - t_a, substeps)
                except NonFiniteStateError:
                    if divergence_error is None:
                        raise
                    return np.full_like(yy, np.nan)  # recorded as divergence at the next sample
        sol = solve_ivp(rhs_for(u_const), (t_a, t_b), yy, method=integrator, rtol=rtol, atol=atol)
        if not sol.success:
            raise IntegrationError(f"plant integration failed at t = {sol.t[-1]:.6g} s: {sol.message}")
        return sol.y[:, -1]

    last = K - 1
    for k in range(K):
        if model == "linear":
            dx, dxd = ltv.expand(min(k, steps_available - 1), X_lin)
            x, xd = ref.x[k] + dx, ref.xd[k] + dxd
        xr, xdr = x[cmap], xd[cmap]
        X_true = ltv.reduce(xr - ref.x[k], xdr - ref.xd[k])
        out_x[k], out_xd[k] = x, xd
        out_X[k] = X_true
        out_res[k] = plant.constraint_jacobian(x) @ xd
        if divergence_error is not None and k > 0:
            e = np.hypot(*(xr[:2] - ref.x[k, :2]))
            if not (np.all(np.isfinite(x)) and np.all(np.isfinite(xd))) or e > divergence_error:
                diverged_at, last = float(T[k]), k
                out_Xm[k] = out_X[k]
                out_u[k] = u_applied
                break
        # 1-2: sense and estimate
        if output_feedback:
            if k < steps_available:
                sampled = est.sampled[k] & received[k]
                # the sample instant is off by shift[k] s (latency error, timing jitter): first order
                reading = measure(x[sig_idx] + shift[k] * xd[sig_idx], est.bias, est.noise_std,
                                  rng.standard_normal(ny))
                y_out[k] = np.where(sampled, reading, np.nan)
                y_dev[k] = np.where(sampled, reading - ref.x[k, sig_ref_idx], 0.0)
                avail[k] = sampled
            while j_c <= k - lat and j_c < k:   # commit the steps whose samples have all arrived
                X_post = kalman_update(X_c, np.where(avail[j_c], y_dev[j_c] - C[j_c] @ X_c, 0.0), M[j_c])
                X_c = kalman_predict(X_post, Ad_f[j_c], Bd_f[j_c], du_eff[j_c])
                j_c += 1
            if lat == 0 and k < steps_available:
                X_hat = kalman_update(X_c, np.where(avail[k], y_dev[k] - C[k] @ X_c, 0.0), M[k])
            else:
                X_hat = X_c
                for j in range(j_c, k):  # latency compensation: predict with the inputs already sent
                    X_hat = kalman_predict(X_hat, Ad_f[j], Bd_f[j], du_eff[j])
        else:
            X_hat = X_true + noise * rng.standard_normal(N) if noise_std else X_true
        out_Xm[k] = X_hat[:N]
        out_d[k] = X_hat[N:]
        if k == steps:
            out_u[k] = u_applied
            break
        # 3: control law
        cmd = control_law(ref.u[k], gains[k], X_hat) if feedback else ref.u[k].copy()
        if not np.all(np.isfinite(cmd)) and divergence_error is None:
            check_finite_at(cmd, time=T[k], quantity="input command u", names=system.input_names,
                            context="simulate_closed_loop")
        qcmd, (hq, ha, _) = shape_command(cmd, u_applied, 0.0, lim[0], None, lim[2])
        events["quantum"] += int(hq)
        events["max_angle"] += int(ha)
        commands.append(qcmd)
        # 4: actuation latency splits the step; the slew limit acts on each held segment
        first = commands[k - d_int - 1] if k - d_int - 1 >= 0 else u_start
        second = commands[k - d_int] if k - d_int >= 0 else u_start
        segments = [(T[k], T[k] + d_frac, first), (T[k] + d_frac, T[k + 1], second)]
        held = []
        y = np.concatenate([x, xd])
        try:
            for t_a, t_b, target in segments:
                if t_b <= t_a:
                    held.append(u_applied)
                    continue
                u_applied, (_, _, hr) = shape_command(target, u_applied, t_b - t_a, None, lim[1], None)
                events["max_rate"] += int(hr)
                held.append(u_applied)
                u_plant = backlash(u_applied, u_plant, deadband) if deadband > 0 else u_applied
                if model == "nonlinear":
                    y = advance(y, t_a, t_b, u_plant)
        except (IntegrationError, BallctlError, np.linalg.LinAlgError, FloatingPointError):
            if divergence_error is None:
                raise
            diverged_at, last = float(T[k]), k
            out_u[k] = u_applied
            break
        u_step = effective_input(held[0], held[1], d_frac, dt)
        du_eff[k] = u_step - ref.u[k]
        out_u[k] = u_step
        if model == "nonlinear":
            x, xd = y[:n], y[n:]
            if divergence_error is None and not np.all(np.isfinite(y)):
                check_finite_at(y, time=T[k + 1], quantity="plant state", names=state_names,
                                context="simulate_closed_loop")
        else:
            kk = min(k, steps_available - 1)
            X_lin = Ad[kk] @ X_lin + Bd[kk] @ du_eff[k]
        bar.update(k + 1)
    wall = _time.perf_counter() - start
    active = {key: v for key, v in events.items() if v} if limits.active else {}
    if limits.delay > 0:
        active["delay_s"] = limits.delay
    keep = slice(0, last + 1)
    x_ref = np.full((last + 1, n), np.nan)
    xd_ref = np.full((last + 1, n), np.nan)
    x_ref[:, cmap] = ref.x[keep]
    xd_ref[:, cmap] = ref.xd[keep]
    return ClosedLoopResult(
        T[keep], out_x[keep], out_xd[keep], x_ref, xd_ref, out_u[keep], ref.u[keep], out_X[keep],
        out_Xm[keep], out_res[keep], names, plant.input_names, plant.coordinate_names, model, mode, active, wall,
        y_out[keep], tuple(est.signal_names) if output_feedback else (), diverged_at,
        getattr(controller.reference, "period", None), out_d[keep],
        *contact_forces_along(plant, out_x[keep], out_xd[keep], out_u[keep]))


def contact_forces_along(plant: ConstrainedSystem, x, xd, u) -> tuple[np.ndarray, np.ndarray]:
    """Normal (K,) and friction (K, 2) contact forces in N along a run, or empty arrays.

    A ball-plate plant gives them (``contact_forces(x, xd, u)``, one kernel
    call for the whole run); other plants give empty arrays. Samples after a
    divergence (NaN) stay NaN.

    Parameters
    ----------
    plant : ConstrainedSystem
        The truth plant.
    x, xd : ndarray, shape (K, n)
    u : ndarray, shape (K, nu)
        The input that acts over each step (its time average).
    """
    if not hasattr(plant, "contact_forces"):
        return np.zeros(0), np.zeros((0, 0))
    ok = np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(xd), axis=1) & np.all(np.isfinite(u), axis=1)
    normal = np.full(len(x), np.nan)
    friction = np.full((len(x), 2), np.nan)
    if np.any(ok):
        n, f = plant.contact_forces(x[ok], xd[ok], u[ok])
        normal[ok] = n
        friction[ok] = np.asarray(f).reshape(-1, 2)
    return normal, friction


def contact_extremes(normal: np.ndarray, friction: np.ndarray) -> tuple[float, float]:
    """Largest required friction coefficient and least normal force (N) over the finite samples of a run.

    Parameters
    ----------
    normal : ndarray, shape (K,)
    friction : ndarray, shape (K, 2)
        From :func:`contact_forces_along` (NaN after a divergence).
    """
    ok = np.isfinite(normal) & np.all(np.isfinite(friction), axis=1)
    if not np.any(ok):
        return float("nan"), float("nan")
    return (float(np.max(friction_coefficient_required(normal[ok], friction[ok]))), float(np.min(normal[ok])))


def state_selection(controller: TrackingController) -> np.ndarray:
    """Index of each controller state in the stacked ``(x, xd)`` (length 2n), shape (N,).

    The reduced state is a selection of the full deviation (see
    :meth:`ballctl.LTVSystem.reduce`); this is that selection as indices.

    Parameters
    ----------
    controller : TrackingController
    """
    p = controller.partition
    n = controller.system.n_coordinates
    full = list(p.independent) + [n + i for i in p.independent] + list(p.admissible_dependent)
    return np.array([full[p.state_names.index(name)] for name in controller.state_names], dtype=np.int64)


def _compiled_code(controller, plant, model, integrator, backend):
    """Kernel code when the compiled loop runs this request, else None (raises for backend='compiled')."""
    code = kernel_code(plant)
    ok = integrator == "rk4" and model == "nonlinear" and code is not None
    if backend == "compiled" and not ok:
        raise ParameterError("backend='compiled' needs integrator='rk4', model='nonlinear' and a truth plant with "
                             f"compiled kernels ({type(plant).__name__})")
    return code if ok and backend != "python" else None


def _truth_layout(controller, plant):
    """The design's coordinates among the truth's, the controller's states in the truth's ``(x, xd)``,
    and the reference in the truth's coordinates (0 where the design has no coordinate), shapes
    ``(n_design,)``, ``(N,)``, ``(Kt + 1, n)`` twice."""
    design = controller.system
    n = plant.n_coordinates
    cmap = np.array([plant.coordinate_names.index(nm) for nm in design.coordinate_names], dtype=np.int64)
    selection = np.concatenate([cmap, n + cmap])[state_selection(controller)]
    ref = controller.samples
    x_ref = np.zeros((ref.x.shape[0], n))
    xd_ref = np.zeros((ref.x.shape[0], n))
    x_ref[:, cmap] = ref.x
    xd_ref[:, cmap] = ref.xd
    return cmap, selection, x_ref, xd_ref


def estimator_arrays(controller: TrackingController, truth: ConstrainedSystem, draws, *, bias=None
                     ) -> EstimatorArrays:
    """The controller's Kalman filter and sensors as the compiled loop takes them (``EstimatorArrays``).

    Parameters
    ----------
    controller : TrackingController
        With an ``estimator``.
    truth : ConstrainedSystem
        The truth plant (its coordinates locate the measured signals).
    draws : ndarray, shape (B, K, ny)
        Standard normal draws of the sensor noise per run (:func:`ballctl.simulation.engine.sensor_draws`).
    bias : ndarray, shape (ny,) or (B, ny), optional
        Sensor bias in m or rad (default: the sensors' own).

    Returns
    -------
    EstimatorArrays
    """
    est = controller.estimator
    K = np.shape(draws)[1]
    return EstimatorArrays(
        sampled=est.sampled, C=est.kalman.C, update_gains=est.kalman.update_gains, Ad=est.Ad, Bd=est.Bd,
        signal_index=np.array([truth.coordinate_names.index(s) for s in est.signal_names], dtype=np.int64),
        signal_reference=controller.samples.x[:K][:, list(est.coordinate_index)],
        bias=est.bias if bias is None else bias, noise_std=est.noise_std, standard_normal=draws,
        latency_steps=est.latency_steps)


def imperfection_draws(seed, K: int, estimator, imperfections: LoopImperfections | None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """A run's lost samples and sample-instant errors, from a stream of their own.

    The stream is a child of the run's seed (``spawn_key + (1,)``), so the
    sensor-noise draws are the same with and without imperfections, and both
    loops (Python and compiled) draw the same values.

    Parameters
    ----------
    seed : int, SeedSequence or None
        The run's seed (as given to :func:`simulate_closed_loop`).
    K : int
        Control samples of the run.
    estimator : StateEstimator or None
        Its sensors group the signals (a lost frame loses every signal of its sensor).
    imperfections : LoopImperfections or None
        ``frame_drop`` (probability per sensor sample) and ``timing_jitter_s``
        (std in s of the sample instant).

    Returns
    -------
    received : ndarray of bool, shape (K, ny)
        False where a sample is lost.
    sample_shift : ndarray, shape (K,)
        Error of each step's sample instant in s.
    """
    ny = 0 if estimator is None else estimator.n_signals
    received = np.ones((K, ny), dtype=bool)
    shift = np.zeros(K)
    if imperfections is None or (imperfections.frame_drop == 0 and imperfections.timing_jitter_s == 0):
        return received, shift
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rng = np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (1,)))
    if ny and imperfections.frame_drop > 0:
        col = 0
        for sensor in estimator.sensors:
            width = len(sensor.signals)
            received[:, col:col + width] = (rng.random(K) >= imperfections.frame_drop)[:, None]
            col += width
    if imperfections.timing_jitter_s > 0:
        shift = imperfections.timing_jitter_s * rng.standard_normal(K)
    return received, shift


def run_compiled_batch(controller, code, plants, x0, xd0, steps, err, limits, feedback, substeps, stabilization,
                       delay=None, *, draws=None, divergence_error=None, received=None, sample_shift=None,
                       deadband=0.0):
    """B runs of ``controller`` on the truth plants ``plants`` (one per run, one layout) in the compiled loop.

    The one place that packs a controller into :func:`ballctl.simulation.engine.run_closed_loop`
    (no validation beyond the engine's: callers check their arguments).

    Parameters
    ----------
    controller : TrackingController
    code : int
        Kernel code of the truth plants (:func:`ballctl.simulation.engine.kernel_code`).
    plants : sequence of ConstrainedSystem
        One truth plant per run (their ``kernel_parameters`` are the runs' parameters).
    x0, xd0 : ndarray, shape (B, n)
        Initial truth states.
    steps : int
        Control steps to run.
    err : ndarray, shape (B, steps + 1, N), or None
        State feedback: measurement error added to the reduced state.
    limits : RigLimits
    feedback : bool
    substeps : int
    stabilization : (a, b) or None
    delay : float or ndarray, shape (B,), optional
        Actuation delay in s (default ``limits.delay``).
    draws : ndarray, shape (B, steps + 1, ny), optional
        Output feedback: the sensor noise's standard normals (:func:`ballctl.simulation.engine.sensor_draws`).
    divergence_error, received, sample_shift, deadband
        As in :func:`ballctl.simulation.engine.run_closed_loop`.

    Returns
    -------
    CompiledLoopOutput
    """
    ref = controller.samples
    K = steps + 1
    cmap, selection, x_ref, xd_ref = _truth_layout(controller, plants[0])
    params = np.stack([np.asarray(p.kernel_parameters, dtype=float) for p in plants])
    arrays = None if draws is None else estimator_arrays(controller, plants[0], draws)
    gains = controller.feedback_gains if arrays is not None else controller.lqr.gains
    return run_closed_loop(code, params, x0, xd0, dt=controller.dt, times=ref.t[:K], x_ref=x_ref[:K],
                           xd_ref=xd_ref[:K], u_ref=ref.u[:K], gains=gains[:steps],
                           selection=selection, measurement_error=err, feedback=feedback,
                           quantum=limits.quantum, max_angle=limits.max_angle, max_rate=limits.max_rate,
                           delay=limits.delay if delay is None else delay, substeps=substeps,
                           stabilization=stabilization, n_constraints=plants[0].n_constraints, estimator=arrays,
                           divergence_error=divergence_error, divergence_index=cmap[:2],
                           received=received if arrays is not None else None,
                           sample_shift=sample_shift if arrays is not None else None, deadband=deadband)


def _events(limits, counts) -> dict:
    ev = dict(zip(("max_angle", "max_rate", "quantum"), (int(v) for v in counts)))
    active = {key: v for key, v in ev.items() if v} if limits.active else {}
    if limits.delay > 0:
        active["delay_s"] = limits.delay
    return active


def _result(controller, plant, out, i, K, model, feedback, output_feedback, limits, wall, divergence
            ) -> ClosedLoopResult:
    """Run ``i`` of a compiled batch as the Python loop returns it (cut at the divergence)."""
    ref = controller.samples
    status = int(out.status[i])
    diverged_at = None
    last = K
    if divergence and status >= 0:
        diverged_at, last = float(ref.t[status]), status + 1
    keep = slice(0, last)
    n = plant.n_coordinates
    cmap = [plant.coordinate_names.index(nm) for nm in controller.system.coordinate_names]
    x_ref = np.full((last, n), np.nan)
    xd_ref = np.full((last, n), np.nan)
    x_ref[:, cmap] = ref.x[keep]
    xd_ref[:, cmap] = ref.xd[keep]
    mode = "open" if not feedback else ("output" if output_feedback else "state")
    signals = tuple(controller.estimator.signal_names) if output_feedback else ()
    return ClosedLoopResult(ref.t[keep], out.x[i, keep], out.xd[i, keep], x_ref, xd_ref, out.u[i, keep],
                            ref.u[keep], out.X[i, keep], out.X_measured[i, keep], out.velocity_residual[i, keep],
                            controller.state_names, plant.input_names, plant.coordinate_names, model, mode,
                            _events(limits, out.limit_events[i]), wall, out.measurements[i, keep], signals,
                            diverged_at, getattr(controller.reference, "period", None),
                            out.augmented_estimate[i, keep],
                            *contact_forces_along(plant, out.x[i, keep], out.xd[i, keep], out.u[i, keep]))


@dataclass(frozen=True)
class ClosedLoopBatchResult:
    """B closed-loop runs of one controller, with a leading run axis.

    Attributes
    ----------
    runs : tuple of ClosedLoopResult
        Each run as a :class:`ClosedLoopResult` (its ``summary()`` and plots apply).
    t : ndarray, shape (K,)
        Control times in s (shared).
    x, xd : ndarray, shape (B, K, n)
        Truth coordinates and velocities.
    u : ndarray, shape (B, K, nu)
        Applied inputs (time average over each step).
    X, X_measured : ndarray, shape (B, K, N)
        True and measured reduced deviations.
    status : ndarray of int, shape (B,)
        -1 for a completed run, else the control step at which the run
        stopped: the state stopped being finite (compiled loop) or, with
        ``divergence_error``, the run diverged there (its own result ends
        there; the stacked arrays are NaN after it).
    backend : str
        "compiled" or "python".
    wall_time : float
        Wall-clock seconds for the whole batch.
    """

    runs: tuple
    t: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    u: np.ndarray
    X: np.ndarray
    X_measured: np.ndarray
    status: np.ndarray
    backend: str
    wall_time: float = 0.0

    def __len__(self) -> int:
        return len(self.runs)

    @property
    def position_error(self) -> np.ndarray:
        """Distance in m between the contact point and its reference, shape (B, K) (NaN after a divergence)."""
        out = np.full((len(self.runs), len(self.t)), np.nan)
        for i, r in enumerate(self.runs):
            e = r.position_error
            out[i, :e.shape[0]] = e
        return out

    def run(self, i: int) -> ClosedLoopResult:
        """Run ``i`` as a :class:`ClosedLoopResult`.

        Parameters
        ----------
        i : int
            Run index.
        """
        return self.runs[i]


def _batch_seeds(seed, B: int) -> list:
    if seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        return list(root.spawn(B))
    seeds = list(seed)
    if len(seeds) != B:
        raise ParameterError(f"seed: give one seed or one per run ({B}), got {len(seeds)}")
    return seeds


def _stack(runs, backend, status, wall, T) -> ClosedLoopBatchResult:
    """Stack the runs' histories on a leading run axis; a run cut at its divergence is padded with NaN."""
    K = len(T)

    def pad(a):
        out = np.full((K,) + a.shape[1:], np.nan)
        out[:a.shape[0]] = a
        return out

    def stack(name):
        return np.stack([pad(getattr(r, name)) for r in runs])

    return ClosedLoopBatchResult(tuple(runs), np.asarray(T), stack("x"), stack("xd"), stack("u"), stack("X"),
                                 stack("X_measured"), np.asarray(status), backend, wall)


def _simulate_batch(controller, x0, xd0, *, duration, model, feedback, truth, output_feedback, noise_std, seed,
                    limits, integrator, rtol, atol, substeps, stabilization, divergence_error, progress,
                    backend, imperfections) -> ClosedLoopBatchResult:
    start = _time.perf_counter()
    design = controller.system
    if truth is None:
        plants = None
    elif isinstance(truth, ConstrainedSystem):
        plants = [truth]
    else:
        plants = list(truth)
    n = (plants[0] if plants else design).n_coordinates
    X0 = np.array(x0, dtype=float)
    if X0.ndim != 2 or X0.shape[1] != n or X0.shape[0] < 1:
        raise ParameterError(f"x0 must have shape (n,) or (B, n) with n = {n}, got {X0.shape}")
    B = X0.shape[0]
    if plants is not None and len(plants) == 1:
        plants = plants * B
    if plants is not None and len(plants) != B:
        raise ParameterError(f"truth: give one plant or one per run ({B}), got {len(plants)}")
    XD0 = np.array(xd0, dtype=float)
    if XD0.shape not in ((n,), (B, n)):
        raise ParameterError(f"xd0 must have shape ({n},) or ({B}, {n}), got {XD0.shape}")
    XD0 = np.broadcast_to(XD0, (B, n)).copy()
    if not (np.all(np.isfinite(X0)) and np.all(np.isfinite(XD0))):
        raise ParameterError("x0 and xd0 must be finite")
    seeds = _batch_seeds(seed, B)
    limits = limits or RigLimits()
    kwargs = dict(duration=duration, model=model, feedback=feedback, output_feedback=output_feedback,
                  noise_std=noise_std, limits=limits, integrator=integrator, rtol=rtol, atol=atol,
                  substeps=substeps, stabilization=stabilization, divergence_error=divergence_error,
                  imperfections=imperfections)
    truths = plants or [design] * B
    codes = {_compiled_code(controller, p, model, integrator, backend) for p in truths}
    if len({tuple(p.coordinate_names) for p in truths}) != 1:
        codes.add(None)  # one layout per compiled batch
    if len(codes) != 1 or None in codes:
        if backend == "compiled":
            raise ParameterError("backend='compiled' needs truth plants of one type with compiled kernels")
        runs = []
        bar = _Progress(B, progress, "closed-loop runs")
        for i in range(B):
            runs.append(simulate_closed_loop(controller, X0[i], XD0[i], truth=None if plants is None else plants[i],
                                             seed=seeds[i], backend=backend, **kwargs))
            bar.update(i + 1)
        status = [-1 if r.diverged_at is None else len(r.t) - 1 for r in runs]
        steps = len(controller.times) if duration is None else int(round(duration / controller.dt))
        return _stack(runs, "python", status, _time.perf_counter() - start, controller.samples.t[:steps + 1])
    code = codes.pop()
    # validation of the arguments, with the first run's (one step of the Python loop)
    probe = simulate_closed_loop(controller, X0[0], XD0[0], truth=truths[0], seed=seeds[0], backend="python",
                                 **{**kwargs, "duration": controller.dt})
    del probe
    output = bool(output_feedback) if output_feedback is not None else controller.estimator is not None and feedback
    steps = len(controller.times) if duration is None else int(round(duration / controller.dt))
    if plants is None:
        for i in range(B):
            XD0[i] = controller.partition.complete_velocities(design, X0[i], XD0[i])
    names = controller.state_names
    K = steps + 1
    err = draws = received = shift = None
    if output:
        draws = np.stack([sensor_draws(np.random.default_rng(s), K, len(controller.times),
                                        controller.estimator.n_signals) for s in seeds])
        pairs = [imperfection_draws(s, K, controller.estimator, imperfections) for s in seeds]
        received = np.stack([p[0] for p in pairs])
        shift = np.stack([p[1] for p in pairs])
    elif noise_std:
        noise = np.array([noise_std.get(name, 0.0) for name in names])
        err = np.stack([noise * np.random.default_rng(s).standard_normal((K, len(names))) for s in seeds])
    out = run_compiled_batch(controller, code, truths, X0, XD0, steps, err, limits, feedback, substeps, stabilization,
                        draws=draws, divergence_error=divergence_error, received=received, sample_shift=shift,
                        deadband=imperfections.actuator_deadband if imperfections else 0.0)
    wall = _time.perf_counter() - start
    runs = [_result(controller, truths[i], out, i, K, model, feedback, output, limits, wall / B,
                    divergence_error is not None) for i in range(B)]
    return _stack(runs, "compiled", out.status, wall, controller.samples.t[:K])
