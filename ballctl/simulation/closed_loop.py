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
from dataclasses import dataclass, field, replace

import numpy as np

from .._errors import (ChartSingularityError, ConstraintViolationError, NonFiniteStateError, ParameterError,
                      ParameterTypeError)
from .._validation import (as_vector, check_bool, check_choice, check_instance, check_integer, check_nonnegative,
                           check_positive, check_stabilization, check_tolerances)
from .arrays import EstimatorArrays, LoopArrays, RunDraws, draw_runs
from .component import METHODS, LQGComponent, NonlinearStepper, run_loop
from .engine import kernel_code, run_closed_loop
from ..hardware import LoopImperfections, RigLimits
from ..simulate import CONSTRAINT_TOL, MAX_STEPS
from ..plants.base import friction_coefficient_required
from ..system import ConstrainedSystem
from ..design.tracking import TrackingController, state_selection

__all__ = ["ClosedLoopOptions", "ClosedLoopResult", "ClosedLoopSummary", "ClosedLoopBatchResult",
           "simulate_closed_loop", "controller_loop", "contact_forces_along", "contact_extremes"]

#: the feedback of a closed loop (:class:`ClosedLoopOptions`)
FEEDBACK = ("auto", "output", "state", "open")


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
    wall_time_s : float
        Wall-clock seconds of the run.
    y : ndarray, shape (K, ny)
        Sensor readings (NaN where a signal was not sampled); ny = 0 without an estimator.
    signal_names : tuple of str
    diverged_at_s : float or None
        Time in s at which the run was stopped because the truth diverged
        (arrays then end there).
    period_s : float or None
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
    tracked_coordinates : tuple of str
        The truth plant's tracked point (its ``tracked_coordinates``: the contact point of the built-in plants).
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
    wall_time_s: float = 0.0
    y: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    signal_names: tuple[str, ...] = ()
    diverged_at_s: float | None = None
    period_s: float | None = None
    augmented_estimate: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    normal_force: np.ndarray = field(default_factory=lambda: np.zeros(0))
    friction_force: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    tracked_coordinates: tuple[str, ...] = ()

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
        """Distance in m between the tracked point and its reference, shape (K,).

        The tracked point is the truth plant's ``tracked_coordinates`` (the
        contact point of the ball-plate, the rolling ball and the rolling disk).
        """
        idx = [self.coordinate_names.index(n) for n in self.tracked_coordinates]
        if not idx:
            raise ParameterError("position_error needs a truth plant that declares its tracked_coordinates")
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
            cidx = [self.state_names.index(n) for n in self.tracked_coordinates if n in self.state_names]
        except ValueError:
            err = np.linalg.norm(self.X, axis=1)
            cidx = list(range(self.X.shape[1]))
        span = self.t[-1] - self.t[0]
        tail = self.t >= self.t[0] + 0.8 * span
        last_rms = last_peak = None
        if self.period_s is not None and self.diverged_at_s is None and span >= self.period_s - 1e-9:
            window = self.t >= self.t[-1] - self.period_s - 1e-9
            last_rms = float(np.sqrt(np.mean(err[window] ** 2)))
            last_peak = float(np.max(err[window]))
        threshold = max(settle_fraction * err[0], settle_floor)
        outside = np.nonzero(err > threshold)[0]
        if self.diverged_at_s is not None:
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
            diverged=self.diverged_at_s is not None, diverged_at_s=self.diverged_at_s, wall_time_s=self.wall_time_s)

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
            success=self.diverged_at_s is None,
            message=None if self.diverged_at_s is None else f"diverged at t = {self.diverged_at_s:.6g} s")


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


@dataclass(frozen=True, kw_only=True)
class ClosedLoopOptions:
    """How a closed loop runs: the feedback, what the rig adds, and how the truth plant is integrated.

    Attributes
    ----------
    feedback : {"auto", "output", "state", "open"}
        Output feedback through the controller's estimator and its sensors,
        state feedback on the measured reduced state, or open loop (``u =
        u_ff``; the rig limits still apply). ``"auto"``: output feedback when
        the controller has an estimator, else state feedback.
    limits : RigLimits, optional
        Tilt, slew, quantization and actuation latency; they shape every command including the first.
    imperfections : LoopImperfections, optional
        The loop's share of a rig's imperfections (``rig.imperfections.loop``):
        lost sensor samples (the filter makes no update from a lost sample),
        timing jitter of the sample instants and the actuator dead band, drawn
        from a stream of their own (the noise draws do not change). The
        plant's share lives in the truth plant.
    noise_std : dict, optional
        State feedback only: std of Gaussian measurement noise per coordinate
        name (m or rad) or ``"<name>_rate"`` (m/s or rad/s).
    divergence_error : float, optional
        Stop the run (recording ``diverged_at_s``) when the tracked point is
        farther than this from its reference (m), when the state stops being
        finite, or when the integration fails. Default: never stop (an
        integration failure raises).
    model : {"nonlinear", "linear"}
        Plant: the nonlinear DAE, or the design's exact-ZOH linear model (the paper's L).
    method : {"DOP853", "RK45", "Radau", "rk4"}
        Integrator of the truth plant between samples: an adaptive ``solve_ivp``
        method (with ``rtol``/``atol``) or fixed-step classical Runge-Kutta
        with ``substeps`` steps per held segment.
    rtol, atol : float
        Tolerances of the adaptive methods.
    substeps : int
        RK4 steps per held segment (``method="rk4"``).
    stabilization : (float, float) or None
        Baumgarte gains in 1/s of the truth plant's constraint stabilization.
    backend : {"auto", "compiled", "python"}
        ``"auto"`` runs ``method="rk4"`` on the nonlinear model through the
        compiled loop (:mod:`ballctl.simulation.engine`) when the truth plant
        has loop kernels, otherwise the Python driver
        (:func:`ballctl.simulation.component.run_loop`); the two agree to
        1e-10 m. ``"compiled"`` requires the compiled loop, ``"python"``
        forces the driver.
    progress : bool
        Show a progress bar on stderr.
    """

    feedback: str = "auto"
    limits: RigLimits | None = None
    imperfections: LoopImperfections | None = None
    noise_std: Mapping[str, float] | None = None
    divergence_error: float | None = None
    model: str = "nonlinear"
    method: str = "DOP853"
    rtol: float = 1e-9
    atol: float = 1e-12
    substeps: int = 1
    stabilization: tuple[float, float] | None = (10.0, 10.0)
    backend: str = "auto"
    progress: bool = False

    def __post_init__(self) -> None:
        check_choice(self.feedback, "feedback", FEEDBACK)
        check_choice(self.model, "model", ("nonlinear", "linear"))
        check_choice(self.method, "method", METHODS)
        check_choice(self.backend, "backend", ("auto", "compiled", "python"))
        if self.limits is not None:
            check_instance(self.limits, "limits", RigLimits)
        if self.imperfections is not None:
            check_instance(self.imperfections, "imperfections", LoopImperfections)
        rtol, atol = check_tolerances(self.rtol, self.atol)
        object.__setattr__(self, "rtol", rtol)
        object.__setattr__(self, "atol", atol)
        object.__setattr__(self, "substeps", check_integer(self.substeps, "substeps", minimum=1))
        object.__setattr__(self, "stabilization", check_stabilization(self.stabilization))
        object.__setattr__(self, "progress", check_bool(self.progress, "progress"))
        if self.divergence_error is not None:
            object.__setattr__(self, "divergence_error",
                               check_positive(self.divergence_error, "divergence_error", "m"))
        if self.noise_std is not None and not isinstance(self.noise_std, Mapping):
            raise ParameterTypeError(f"noise_std must be a mapping of coordinate name to standard deviation "
                                     f"(m, rad, m/s or rad/s), got {type(self.noise_std).__name__}")


def simulate_closed_loop(controller: TrackingController, x0, xd0, *, duration: float | None = None,
                         truth=None, seed=None, options: ClosedLoopOptions | None = None
                         ) -> "ClosedLoopResult | ClosedLoopBatchResult":
    """Run a sampled LQR (or LQG) tracking loop on a truth plant (see the module docstring).

    Parameters
    ----------
    controller : TrackingController
        From :func:`ballctl.design_tracking_lqr`; its ``dt`` is the control
        period; its ``estimator`` (if any) gives the sensors.
    x0, xd0 : array_like, shape (n,) or (B, n)
        Initial truth state (the dependent velocities are completed from the
        independent ones when the truth is the design plant). A 2-D ``x0`` is
        a batch, one row per run (a 1-D one is one run): B runs run together
        and return a :class:`ClosedLoopBatchResult` with a leading run axis;
        ``xd0`` may then be one state for all runs.
    duration : float, optional
        Length of the run in s (default: the controller's horizon).
    truth : ConstrainedSystem or sequence of them, optional
        The plant integrated (default: the design plant). Its coordinates must
        include the design plant's (matched by name), with the same number of
        inputs. For a batch: one truth plant or one per run (parameter samples).
    seed : int or numpy.random.SeedSequence, optional
        Seed of the noise; for a batch, one seed per run (a sequence of B) or
        one root seed whose ``SeedSequence(seed).spawn(B)`` children seed the runs.
    options : ClosedLoopOptions, optional
        Feedback, rig limits and imperfections, measurement noise, divergence
        stop, and the integration of the truth (default: ``ClosedLoopOptions()``).

    Returns
    -------
    ClosedLoopResult or ClosedLoopBatchResult
        One run for a 1-D ``x0``; B runs for shape (B, n).
    """
    check_instance(controller, "controller", TrackingController, "TrackingController (from design_tracking_lqr)")
    options = ClosedLoopOptions() if options is None else options
    check_instance(options, "options", ClosedLoopOptions)
    if np.ndim(x0) == 2:
        return _simulate_batch(controller, x0, xd0, duration=duration, truth=truth, seed=seed, options=options)
    if truth is not None:
        check_instance(truth, "truth", ConstrainedSystem)
    plant = controller.system if truth is None else truth
    n = plant.n_coordinates
    x = as_vector(x0, "x0", n).copy()
    xd = as_vector(xd0, "xd0", n).copy()
    job = _Job.check(controller, plant, truth_given=truth is not None, duration=duration, options=options)
    if seed is not None and not isinstance(seed, np.random.SeedSequence):   # a batch hands each run its own
        seed = check_integer(seed, "seed", minimum=0)
    job.check_initial_state(x)
    if truth is None:
        xd = controller.partition.complete_velocities(controller.system, x, xd)
    if job.model == "linear":
        x, xd = job.linear_initial_state(x, xd)
    start = _time.perf_counter()
    runs = job.draws([seed], [plant], x[None], xd[None])
    if job.compiled:
        out = run_closed_loop(job.loop, runs)
        if out.status[0] >= 0 and job.divergence_error is None:
            raise NonFiniteStateError(f"the compiled closed loop left the finite numbers at step {out.status[0]} "
                                      f"(t = {controller.samples.t[out.status[0]]:.6g} s)")
    else:
        bar = _Progress(job.steps, options.progress, f"closed loop ({job.model}, {job.mode})")
        out = run_loop(LQGComponent(job.loop), job.stepper(plant), job.loop, runs, progress=bar.update).output
    return _result(controller, plant, out, 0, job, _time.perf_counter() - start)


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


def _tracked_index(plant) -> np.ndarray:
    """Truth coordinates of the tracked point (the plant's ``tracked_coordinates``)."""
    names = tuple(getattr(plant, "tracked_coordinates", ()) or ())
    return np.array([plant.coordinate_names.index(c) for c in names], dtype=np.int64)


def controller_loop(controller: TrackingController, truth: ConstrainedSystem, steps: int, *, mode: str = "output",
                    limits: RigLimits | None = None, imperfections: LoopImperfections | None = None,
                    solver: tuple = (1, (10.0, 10.0)), divergence_error: float | None = None) -> LoopArrays:
    """The controller on the truth plant's layout, as both loops take it (the one place that packs it).

    Parameters
    ----------
    controller : TrackingController
    truth : ConstrainedSystem
        The truth plant; its coordinates must include the design's (by name).
    steps : int
        Control steps (at most the controller's horizon).
    mode : {"output", "state", "open"}
        Output feedback through the controller's estimator, state feedback, or open loop (``u = u_ff``).
    limits : RigLimits, optional
    imperfections : LoopImperfections, optional
        The dead band (lost samples and jitter are drawn per run).
    solver : (int, (float, float) or None)
        RK4 substeps per held segment and the Baumgarte gains in 1/s.
    divergence_error : float, optional
        Stop a run whose tracked point is farther than this from its reference (m).

    Returns
    -------
    LoopArrays
    """
    design = controller.system
    n = truth.n_coordinates
    cmap = np.array([truth.coordinate_names.index(nm) for nm in design.coordinate_names], dtype=np.int64)
    selection = np.concatenate([cmap, n + cmap])[state_selection(controller.partition, controller.state_names,
                                                                  design.n_coordinates)]
    ref = controller.samples
    K = steps + 1
    x_ref = np.zeros((K, n))
    xd_ref = np.zeros((K, n))
    x_ref[:, cmap] = ref.x[:K]
    xd_ref[:, cmap] = ref.xd[:K]
    est = controller.estimator if mode == "output" else None
    arrays = None
    if est is not None:
        arrays = EstimatorArrays(
            sampled=est.sampled, C=est.kalman.C, update_gains=est.kalman.update_gains, Ad=est.Ad, Bd=est.Bd,
            signal_index=np.array([truth.coordinate_names.index(s) for s in est.signal_names], dtype=np.int64),
            signal_reference=ref.x[:K][:, list(est.coordinate_index)], bias=est.bias, noise_std=est.noise_std,
            latency_steps=est.latency_steps, sensor_widths=tuple(len(s.signals) for s in est.sensors))
    gains = controller.feedback_gains if est is not None else controller.lqr.gains
    substeps, stabilization = solver
    return LoopArrays(kernel_code=kernel_code(truth), n_constraints=truth.n_constraints, dt=controller.dt,
                      times=ref.t[:K], x_ref=x_ref, xd_ref=xd_ref, u_ref=ref.u[:K], gains=gains[:steps],
                      selection=selection, tracked_index=_tracked_index(truth), feedback=mode != "open",
                      limits=limits or RigLimits(), substeps=substeps, stabilization=stabilization,
                      divergence_error=divergence_error, rechart=True,
                      deadband=0.0 if imperfections is None else imperfections.actuator_deadband, estimator=arrays)


class _LinearStepper:
    """The design's exact-ZOH linear model (the paper's L) in place of the truth plant."""

    def __init__(self, controller: TrackingController) -> None:
        self.controller = controller
        self.n = controller.system.n_coordinates
        self.X = None

    def start(self, x, xd):
        ref, ltv = self.controller.samples, self.controller.ltv
        self.X = ltv.reduce(x - ref.x[0], xd - ref.xd[0])
        dx, dxd = ltv.expand(0, self.X)
        return ref.x[0] + dx, ref.xd[0] + dxd

    def segment(self, y, t_a, t_b, u):
        return y

    def end_step(self, k, y, du):
        c = self.controller
        kk = min(k, len(c.times) - 1)
        self.X = c.discrete.Ad[kk] @ self.X + c.discrete.Bd[kk] @ du
        dx, dxd = c.ltv.expand(min(k + 1, len(c.times) - 1), self.X)
        return np.concatenate([c.samples.x[k + 1] + dx, c.samples.xd[k + 1] + dxd])

    def residual(self, y):
        return self.controller.system.constraint_jacobian(y[:self.n]) @ y[self.n:]


@dataclass
class _Job:
    """One request of :func:`simulate_closed_loop`, checked once (single runs and batches)."""

    controller: TrackingController
    plant: ConstrainedSystem
    options: "ClosedLoopOptions"
    mode: str
    steps: int
    noise: np.ndarray | None
    compiled: bool
    loop: LoopArrays

    @classmethod
    def check(cls, controller, plant, *, truth_given, duration, options: "ClosedLoopOptions") -> "_Job":
        o = options
        model, limits, integrator = o.model, o.limits, o.method
        substeps, stabilization, divergence_error, backend = o.substeps, o.stabilization, o.divergence_error, o.backend
        imperfections, noise_std = o.imperfections, o.noise_std
        system = controller.system
        if plant.n_inputs != system.n_inputs:
            raise ParameterError(f"truth has {plant.n_inputs} inputs, the controller {system.n_inputs}")
        missing = [nm for nm in system.coordinate_names if nm not in plant.coordinate_names]
        if missing:
            raise ParameterError(f"truth coordinates {plant.coordinate_names} must include the design's "
                                 f"{system.coordinate_names}")
        if model == "linear" and truth_given:
            raise ParameterError("model='linear' integrates the design's linear model; it takes no truth plant")
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
        mode = o.feedback if o.feedback != "auto" else ("output" if est is not None else "state")
        if mode == "output" and est is None:
            raise ParameterError("feedback='output' needs a controller designed with sensors (controller.estimator)")
        if mode == "output" and noise_std:
            raise ParameterError("noise_std is for state feedback; with output feedback the sensors carry the noise")
        noise = None
        if noise_std:
            names = controller.state_names
            noise = np.zeros(len(names))
            coord = set(system.coordinate_names)
            for key, value in noise_std.items():
                base = key[:-5] if isinstance(key, str) and key.endswith("_rate") else key
                if base not in coord:
                    raise ParameterError(f"noise_std: unknown coordinate {key!r}; coordinates are "
                                         f"{system.coordinate_names}")
                value = check_nonnegative(value, f"noise_std[{key!r}]", "m, rad, m/s or rad/s")
                if key in names:
                    noise[names.index(key)] = value
        code = kernel_code(plant)
        compiled = integrator == "rk4" and model == "nonlinear" and code >= 0
        if backend == "compiled" and not compiled:
            raise ParameterError("backend='compiled' needs method='rk4', model='nonlinear' and a truth plant "
                                 f"with compiled kernels ({type(plant).__name__})")
        compiled = compiled and backend != "python"
        limits = limits or RigLimits()
        loop = controller_loop(controller, plant, steps, mode=mode, limits=limits, imperfections=imperfections,
                               solver=(substeps, stabilization), divergence_error=divergence_error)
        return cls(controller, plant, options, mode, steps, noise, compiled, loop)

    @property
    def model(self) -> str:
        return self.options.model

    @property
    def limits(self) -> RigLimits:
        return self.loop.limits

    @property
    def divergence_error(self) -> float | None:
        return self.options.divergence_error

    @property
    def output_feedback(self) -> bool:
        return self.loop.estimator is not None

    def check_initial_state(self, x) -> None:
        plant = self.plant
        if self.model == "nonlinear" and plant.n_holonomic:
            pos = np.asarray(plant.holonomic(x), dtype=float).reshape(-1)
            if np.max(np.abs(pos)) > CONSTRAINT_TOL:
                raise ConstraintViolationError(
                    f"x0 violates the position constraints: residual {np.max(np.abs(pos)):.3g} m or rad exceeds "
                    f"{CONSTRAINT_TOL:g}; project it with system.project_positions(x0) first")
        margin = getattr(plant, "chart_margin", None)
        if margin is not None and float(np.real(margin(x))) <= 0.0:
            raise ChartSingularityError("x0 lies beyond the edge of the plant's coordinate chart (its "
                                        "chart_margin(x0) <= 0)")

    def linear_initial_state(self, x, xd):
        self._linear = _LinearStepper(self.controller)
        return self._linear.start(x, xd)

    def stepper(self, plant):
        if self.model == "linear":
            return self._linear
        o = self.options
        return NonlinearStepper(plant, o.method, o.rtol, o.atol, o.substeps, self.loop.stabilization)

    def draws(self, seeds, plants, x0, xd0) -> RunDraws:
        params = np.stack([np.asarray(getattr(p, "kernel_parameters", np.zeros(1)), dtype=float) for p in plants])
        return draw_runs(self.loop, seeds, params, x0, xd0, noise_std=self.noise,
                         imperfections=self.options.imperfections, steps_available=len(self.controller.times))


def _events(limits, counts) -> dict:
    ev = dict(zip(("max_angle", "max_rate", "quantum"), (int(v) for v in counts)))
    active = {key: v for key, v in ev.items() if v} if limits.active else {}
    if limits.delay > 0:
        active["delay_s"] = limits.delay
    return active


def _result(controller, plant, out, i, job: _Job, wall) -> ClosedLoopResult:
    """Run ``i`` of a loop output as a :class:`ClosedLoopResult` (cut at its divergence)."""
    ref = controller.samples
    K = job.steps + 1
    status = int(out.status[i])
    diverged_at = None
    last = K
    if job.divergence_error is not None and status >= 0:
        diverged_at, last = float(ref.t[status]), status + 1
    keep = slice(0, last)
    n = plant.n_coordinates
    cmap = [plant.coordinate_names.index(nm) for nm in controller.system.coordinate_names]
    x_ref = np.full((last, n), np.nan)
    xd_ref = np.full((last, n), np.nan)
    x_ref[:, cmap] = ref.x[keep]
    xd_ref[:, cmap] = ref.xd[keep]
    signals = tuple(controller.estimator.signal_names) if job.output_feedback else ()
    return ClosedLoopResult(ref.t[keep], out.x[i, keep], out.xd[i, keep], x_ref, xd_ref, out.u[i, keep],
                            ref.u[keep], out.X[i, keep], out.X_measured[i, keep], out.velocity_residual[i, keep],
                            controller.state_names, plant.input_names, plant.coordinate_names, job.model, job.mode,
                            _events(job.limits, out.limit_events[i]), wall, out.measurements[i, keep], signals,
                            diverged_at, getattr(controller.reference, "period", None),
                            out.augmented_estimate[i, keep],
                            *contact_forces_along(plant, out.x[i, keep], out.xd[i, keep], out.u[i, keep]),
                            tracked_coordinates=tuple(getattr(plant, "tracked_coordinates", ()) or ()))


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
    wall_time_s : float
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
    wall_time_s: float = 0.0

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


def _simulate_batch(controller, x0, xd0, *, duration, truth, seed, options: ClosedLoopOptions
                    ) -> ClosedLoopBatchResult:
    start = _time.perf_counter()
    design = controller.system
    if truth is None:
        plants = None
    elif isinstance(truth, ConstrainedSystem):
        plants = [truth]
    else:
        plants = list(truth)
        for p in plants:
            check_instance(p, "truth", ConstrainedSystem)
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
    truths = plants or [design] * B
    one_layout = len({tuple(p.coordinate_names) for p in truths}) == 1 and len({kernel_code(p) for p in truths}) == 1
    job = _Job.check(controller, truths[0], truth_given=plants is not None, duration=duration, options=options)
    if not (job.compiled and one_layout):
        if options.backend == "compiled":
            raise ParameterError("backend='compiled' needs truth plants of one type with compiled kernels")
        runs = []
        bar = _Progress(B, options.progress, "closed-loop runs")
        single = replace(options, progress=False, backend="python" if job.compiled else options.backend)
        for i in range(B):
            runs.append(simulate_closed_loop(controller, X0[i], XD0[i], truth=None if plants is None else plants[i],
                                             seed=seeds[i], duration=duration, options=single))
            bar.update(i + 1)
        status = [-1 if r.diverged_at_s is None else len(r.t) - 1 for r in runs]
        return _stack(runs, "python", status, _time.perf_counter() - start, controller.samples.t[:job.steps + 1])
    for i in range(B):
        job.check_initial_state(X0[i])
        if plants is None:
            XD0[i] = controller.partition.complete_velocities(design, X0[i], XD0[i])
    out = run_closed_loop(job.loop, job.draws(seeds, truths, X0, XD0))
    wall = _time.perf_counter() - start
    runs = [_result(controller, truths[i], out, i, job, wall / B) for i in range(B)]
    return _stack(runs, "compiled", out.status, wall, controller.samples.t[:job.steps + 1])
