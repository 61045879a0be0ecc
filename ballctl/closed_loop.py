r"""Closed-loop simulation of a sampled tracking controller on the continuous plant.

python-control cannot interconnect a continuous nonlinear plant with a
discrete time-varying controller; this loop does. At every control time
:math:`t_k = t_0 + k\,\Delta t`:

1. the independent states are measured (optionally with seeded Gaussian
   noise; the admissible-dependent ones, e.g. the ball's lean and roll, only
   if the controller needs them),
2. the reduced state :math:`X_k` is formed through the partition,
3. :math:`\delta u_k = -K_k X_k` (eq. 27) and :math:`u = u_0(t_k) + \delta u_k` (eq. 30),
4. optional rig effects shape the command: tilt limits, slew-rate limits,
   quantization and an input delay (each reported when active),
5. the plant is integrated with the input held (zero-order hold) to
   :math:`t_{k+1}`: the nonlinear DAE (``model="nonlinear"``), or the exact
   discretized linear model (``model="linear"``, the paper's L).

``feedback=False`` runs the same loop open (``u = u_0``).
"""

from __future__ import annotations

import sys
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from ._errors import (ChartSingularityError, ConstraintViolationError, IntegrationError, ParameterError,
                      ParameterTypeError)
from ._validation import (as_vector, check_bool, check_choice, check_finite_at, check_instance, check_integer,
                          check_nonnegative, check_positive, check_stabilization, check_tolerances, guard_rhs)
from .simulate import CONSTRAINT_TOL, MAX_STEPS, rk4
from .tracking import TrackingController

__all__ = ["RigLimits", "ClosedLoopResult", "simulate_closed_loop"]


@dataclass(frozen=True, kw_only=True)
class RigLimits:
    """What a real rig does to the commands (all optional).

    Attributes
    ----------
    max_angle : float or None
        Largest |u_i| in rad (plate tilt limit, e.g. 5-20 deg); commands saturate.
    max_rate : float or None
        Largest |du_i/dt| in rad/s (servo slew); the applied input moves at most
        ``max_rate * dt`` per control step.
    quantum : float or None
        Command resolution in rad; commands are rounded to a multiple of it.
    delay : float
        Input delay in s (>= 0): a command computed at t_k acts from t_k + delay.
    """

    max_angle: float | None = None
    max_rate: float | None = None
    quantum: float | None = None
    delay: float = 0.0

    def __post_init__(self) -> None:
        for name in ("max_angle", "max_rate", "quantum"):
            value = getattr(self, name)
            if value is not None:
                check_positive(value, name, {"max_angle": "rad", "max_rate": "rad/s", "quantum": "rad"}[name])
        check_nonnegative(self.delay, "delay", "s")

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.max_angle, self.max_rate, self.quantum)) or self.delay > 0


@dataclass(frozen=True)
class ClosedLoopResult:
    """Time histories of a closed-loop (or open-loop) run at the control samples.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Control times in s (the last is the end of the run).
    x, xd : ndarray, shape (K, n)
        Plant coordinates and velocities.
    x_ref, xd_ref : ndarray, shape (K, n)
        Reference.
    u, u_ref : ndarray, shape (K, nu)
        Applied input (held on [t_k, t_k+1)) and reference input.
    X : ndarray, shape (K, N)
        Reduced deviation of the true state in the controller's states.
    X_measured : ndarray, shape (K, N)
        What the controller saw (with noise).
    velocity_residual : ndarray, shape (K, m + l)
        Constraint residual ``D(x) xd``. For ``model="linear"`` the state is
        the reference plus the linear deviation, which satisfies the
        constraints to first order only: the residual is then O(|X|^2).
    state_names, input_names : tuple of str
    model : str
        "nonlinear" or "linear".
    feedback : bool
    limit_events : dict
        How many control steps each rig limit changed the command.
    wall_time : float
        Wall-clock seconds of the run.
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
    feedback: bool
    limit_events: dict = field(default_factory=dict)
    wall_time: float = 0.0

    @property
    def position_error(self) -> np.ndarray:
        """Distance in m between the contact point and its reference, shape (K,).

        Uses the coordinates named ``contact_x`` and/or ``contact_y`` (ball-plate,
        rolling ball, rolling disk).
        """
        names = self.coordinate_names
        idx = [names.index(n) for n in ("contact_x", "contact_y") if n in names]
        if not idx:
            raise ParameterError("position_error needs coordinates named contact_x and/or contact_y")
        return np.linalg.norm(self.x[:, idx] - self.x_ref[:, idx], axis=1)

    @property
    def control_effort(self) -> np.ndarray:
        """``u - u_ref`` in input units, shape (K, nu)."""
        return self.u - self.u_ref

    def summary(self, *, settle_fraction: float = 0.05, settle_floor: float = 1e-3) -> dict[str, float]:
        """Key numbers: final/peak errors, peak inputs, settling time, effort, constraint residual.

        The settling time is the first time after which the position error
        stays below ``max(settle_fraction * initial error, settle_floor)`` m.
        """
        out: dict[str, float] = {}
        try:
            err = self.position_error
        except ValueError:
            err = np.linalg.norm(self.X, axis=1)
        out["initial_error"] = float(err[0])
        out["final_error"] = float(err[-1])
        tail = self.t >= self.t[0] + 0.8 * (self.t[-1] - self.t[0])
        out["steady_state_error"] = float(np.sqrt(np.mean(err[tail] ** 2)))
        threshold = max(settle_fraction * err[0], settle_floor)
        outside = np.nonzero(err > threshold)[0]
        if outside.size == 0:
            out["settling_time"] = 0.0
        elif outside[-1] == len(err) - 1:
            out["settling_time"] = float("inf")
        else:
            out["settling_time"] = float(self.t[outside[-1] + 1] - self.t[0])
        for i, name in enumerate(self.input_names):
            out[f"peak_{name}"] = float(np.max(np.abs(self.u[:, i])))
            out[f"peak_{name}_rate"] = float(np.max(np.abs(np.diff(self.u[:, i]))) / np.min(np.diff(self.t))) \
                if len(self.t) > 1 else 0.0
        out["rms_effort"] = float(np.sqrt(np.mean(np.sum(self.control_effort ** 2, axis=1))))
        out["max_constraint_residual"] = float(np.max(np.abs(self.velocity_residual))) \
            if self.velocity_residual.size else 0.0
        for key, value in self.limit_events.items():
            out[f"limit_{key}_steps"] = float(value)
        out["wall_time"] = self.wall_time
        return out


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
                         model: str = "nonlinear", feedback: bool = True,
                         noise_std: dict[str, float] | None = None, seed: int | None = None,
                         limits: RigLimits | None = None, integrator: str = "DOP853",
                         rtol: float = 1e-9, atol: float = 1e-12, substeps: int = 1,
                         stabilization: tuple[float, float] | None = (10.0, 10.0),
                         progress: bool = False) -> ClosedLoopResult:
    """Run a sampled LQR tracking loop on the plant (see the module docstring).

    Parameters
    ----------
    controller : TrackingController
        From :func:`ballctl.design_tracking_lqr`; its ``dt`` is the control period.
    x0, xd0 : array_like, shape (n,)
        Initial plant state (velocities should satisfy the constraints; the
        dependent ones are completed from the independent ones).
    duration : float, optional
        Length of the run in s (default: the controller's horizon).
    model : {"nonlinear", "linear"}
        Plant: the nonlinear DAE, or the exact-ZOH linear model (the paper's L).
    feedback : bool
        False runs open loop, ``u = u0(t)`` (rig limits still apply).
    noise_std : dict, optional
        Standard deviation of Gaussian measurement noise per coordinate name
        (m or rad) or ``"<name>_rate"`` (m/s or rad/s), added at each sample.
    seed : int, optional
        Seed of the noise generator.
    limits : RigLimits, optional
        Tilt, slew, quantization and delay.
    integrator : {"DOP853", "RK45", "Radau", "rk4"}
        Adaptive ``solve_ivp`` method between samples (with ``rtol``/``atol``),
        or fixed-step classical Runge-Kutta with ``substeps`` steps per sample.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    ClosedLoopResult
    """
    check_instance(controller, "controller", TrackingController, "TrackingController (from design_tracking_lqr)")
    system = controller.system
    partition = controller.partition
    n, nu = system.n_coordinates, system.n_inputs
    x = as_vector(x0, "x0", n).copy()
    xd = as_vector(xd0, "xd0", n).copy()
    check_choice(model, "model", ("nonlinear", "linear"))
    feedback = check_bool(feedback, "feedback")
    progress = check_bool(progress, "progress")
    if limits is not None:
        check_instance(limits, "limits", RigLimits)
    limits = limits or RigLimits()
    check_choice(integrator, "integrator", ("DOP853", "RK45", "Radau", "rk4"))
    rtol, atol = check_tolerances(rtol, atol)
    substeps = check_integer(substeps, "substeps", minimum=1)
    stabilization = check_stabilization(stabilization)
    if seed is not None:
        seed = check_integer(seed, "seed", minimum=0)
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
    if model == "nonlinear" and system.n_holonomic:
        pos = np.asarray(system.holonomic(x), dtype=float).reshape(-1)
        if np.max(np.abs(pos)) > CONSTRAINT_TOL:
            raise ConstraintViolationError(
                f"x0 violates the position constraints: residual {np.max(np.abs(pos)):.3g} m or rad exceeds "
                f"{CONSTRAINT_TOL:g}; project it with system.project_positions(x0) first")
    margin = getattr(system, "chart_margin", None)
    if margin is not None and float(np.real(margin(x))) <= 0.0:
        raise ChartSingularityError("x0 lies beyond the edge of the plant's coordinate chart (for the ball-plate: "
                                    "|lean| at or beyond the chart limit near 90 deg)")
    xd = partition.complete_velocities(system, x, xd)
    names = controller.state_names
    noise = np.zeros(len(names))
    if noise_std is not None:
        if not isinstance(noise_std, Mapping):
            raise ParameterTypeError(f"noise_std must be a mapping of coordinate name to standard deviation "
                                     f"(m, rad, m/s or rad/s), got {type(noise_std).__name__}")
        coord = set(system.coordinate_names)
        for key, value in noise_std.items():
            base = key[:-5] if isinstance(key, str) and key.endswith("_rate") else key
            if base not in coord:
                raise ParameterError(f"noise_std: unknown coordinate {key!r}; coordinates are {system.coordinate_names}")
            value = check_nonnegative(value, f"noise_std[{key!r}]", "m, rad, m/s or rad/s")
            if key in names:
                noise[names.index(key)] = value
    rng = np.random.default_rng(seed)

    ref = controller.samples
    ltv = controller.ltv
    gains = controller.lqr.gains
    K = steps + 1
    T = ref.t[:K]
    out_x = np.zeros((K, n))
    out_xd = np.zeros((K, n))
    out_u = np.zeros((K, nu))
    out_X = np.zeros((K, len(names)))
    out_Xm = np.zeros((K, len(names)))
    out_res = np.zeros((K, system.n_constraints))
    events = {"max_angle": 0, "max_rate": 0, "quantum": 0}
    delay_steps = limits.delay / dt
    d_int = int(np.floor(delay_steps + 1e-12))
    d_frac = (delay_steps - d_int) * dt
    commands: list[np.ndarray] = []
    u_applied = ref.u[0].copy()
    X_lin = ltv.reduce(x - ref.x[0], xd - ref.xd[0]) if model == "linear" else None
    bar = _Progress(steps, progress, f"closed loop ({model})" if feedback else f"open loop ({model})")
    start = _time.perf_counter()

    state_names = tuple(system.coordinate_names) + tuple(f"{c}_rate" for c in system.coordinate_names)

    def rhs_for(u_const):
        def rhs(t, y):
            xdd, _ = system.accelerations(y[:n], y[n:], u_const, stabilization=stabilization)
            return np.concatenate([y[n:], xdd])
        return guard_rhs(rhs, context="simulate_closed_loop", names=state_names) if integrator != "rk4" else rhs

    def advance(y, t_a, t_b, u_const):
        if t_b <= t_a:
            return y
        if integrator == "rk4":
            return rk4(rhs_for(u_const), y, t_a, t_b - t_a, substeps)
        sol = solve_ivp(rhs_for(u_const), (t_a, t_b), y, method=integrator, rtol=rtol, atol=atol)
        if not sol.success:
            raise IntegrationError(f"plant integration failed at t = {sol.t[-1]:.6g} s: {sol.message}")
        return sol.y[:, -1]

    for k in range(K):
        if model == "linear":
            dx, dxd = ltv.expand(min(k, steps_available - 1), X_lin)
            x, xd = ref.x[k] + dx, ref.xd[k] + dxd
        X_true = ltv.reduce(x - ref.x[k], xd - ref.xd[k])
        X_meas = X_true + noise * rng.standard_normal(len(names)) if noise_std else X_true
        out_x[k], out_xd[k] = x, xd
        out_X[k], out_Xm[k] = X_true, X_meas
        out_res[k] = system.constraint_jacobian(x) @ xd
        if k == steps:
            out_u[k] = u_applied
            break
        du = -gains[k] @ X_meas if feedback else np.zeros(nu)
        cmd = ref.u[k] + du
        if not np.all(np.isfinite(cmd)):
            check_finite_at(cmd, time=T[k], quantity="input command u", names=system.input_names,
                            context="simulate_closed_loop")
        if limits.quantum is not None:
            q = np.round(cmd / limits.quantum) * limits.quantum
            events["quantum"] += int(np.any(q != cmd))
            cmd = q
        if limits.max_angle is not None:
            c = np.clip(cmd, -limits.max_angle, limits.max_angle)
            events["max_angle"] += int(np.any(c != cmd))
            cmd = c
        commands.append(cmd)
        # the command acting during [t_k, t_k + d_frac) and [t_k + d_frac, t_k+1)
        first = commands[k - d_int - 1] if k - d_int - 1 >= 0 else ref.u[0]
        second = commands[k - d_int] if k - d_int >= 0 else ref.u[0]
        segments = [(T[k], T[k] + d_frac, first), (T[k] + d_frac, T[k + 1], second)]
        y = np.concatenate([x, xd])
        for t_a, t_b, target in segments:
            if t_b <= t_a:
                continue
            if limits.max_rate is not None:
                step = limits.max_rate * (t_b - t_a)
                new = u_applied + np.clip(target - u_applied, -step, step)
                events["max_rate"] += int(np.any(new != target))
            else:
                new = target
            u_applied = new
            if model == "nonlinear":
                y = advance(y, t_a, t_b, u_applied)
        out_u[k] = u_applied
        if model == "nonlinear":
            x, xd = y[:n], y[n:]
            if not np.all(np.isfinite(y)):
                check_finite_at(y, time=T[k + 1], quantity="plant state", names=state_names,
                                context="simulate_closed_loop")
        else:
            kk = min(k, steps_available - 1)
            X_lin = controller.discrete.Ad[kk] @ X_lin + controller.discrete.Bd[kk] @ (u_applied - ref.u[k])
        bar.update(k + 1)
    wall = _time.perf_counter() - start
    active = {key: v for key, v in events.items() if v} if limits.active else {}
    if limits.delay > 0:
        active["delay_s"] = limits.delay
    return ClosedLoopResult(T, out_x, out_xd, ref.x[:K], ref.xd[:K], out_u, ref.u[:K], out_X, out_Xm, out_res,
                            names, system.input_names, system.coordinate_names, model, feedback, active, wall)
