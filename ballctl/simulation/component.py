r"""A controller is a component; one driver runs any component against any truth plant.

The protocol (:class:`ControllerComponent`) has the shape of the exported C
API (``ballctl_reset``, ``ballctl_measure``, ``ballctl_step``): reset to step
0, record the measurement of step ``j``, compute the command of the current
step. Three implementations exist:

* :class:`LQGComponent` -- the design's LQR or LQG (Kalman filter with latency
  compensation, disturbance states, integrators) on the compiled step kernels
  of :mod:`ballctl.simulation.loop_step`;
* the compiled loop (:func:`ballctl.simulation.engine.run_closed_loop`) is the
  same component fused with this driver for batches (tested equal to 1e-10 m);
* the generated C library (:class:`ballctl.deploy.sil.CController`) and its
  numpy twin (:class:`ballctl.deploy.runtime.ControllerRuntime`).

:func:`run_loop` is the one Python driver. At every control step ``k`` it
senses the truth plant (the sensors' sampling pattern, bias, noise, lost
samples and sample-instant errors of :class:`~ballctl.simulation.arrays.RunDraws`),
delivers the readings of step ``k - latency`` (``measure``), asks for the
command (``step``), shapes it as the rig does (quantum, tilt limit, actuation
latency, slew limit, dead band) and integrates the plant through a
:class:`PlantStepper` over the held segments.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numba import config as numba_config
from scipy.integrate import solve_ivp

from .._errors import BallctlError, IntegrationError, NonFiniteStateError
from .._guards import check_finite_at, guard_rhs
from ..plants.kernels.native import entry_points
from ..simulate import rk4
from .arrays import LoopArrays, RunDraws
from .engine import CompiledLoopOutput, hold_rk4, kernel_code
from .loop_step import (backlash, control_law, delay_segments, effective_input, hold_segment, kalman_predict,
                        kalman_update, quantize_clamp, sense)

__all__ = ["ControllerComponent", "LQGComponent", "PlantStepper", "NonlinearStepper", "ComponentRun", "run_loop",
           "METHODS"]

#: integrators of the truth plant between samples: adaptive ``solve_ivp`` methods or fixed-step RK4
METHODS = ("DOP853", "RK45", "Radau", "rk4")


@runtime_checkable
class ControllerComponent(Protocol):
    """The controller as the loop sees it: the three calls of the C API.

    Methods
    -------
    reset()
        Back to step 0, estimate on the reference.
    measure(j, y) -> int
        The signals sampled at step ``j`` (m or rad, NaN: not received; for
        state feedback, the measured reduced state); a status >= 0, or < 0 if refused.
    step() -> ndarray
        The command of the current step (rad, shape (nu,)); the step advances.
    """

    def reset(self) -> None:
        """Back to step 0."""

    def measure(self, j: int, y) -> int:
        """Record the sample of step ``j``.

        Parameters
        ----------
        j : int
            Step of the sample.
        y : array_like
            The signals (NaN: not received).
        """

    def step(self) -> np.ndarray:
        """The command of the current step."""


class LQGComponent:
    r"""The design's controller as a component: LQR on the measured state, or LQG on the sensors.

    Output feedback: the Kalman filter is committed up to the newest step whose
    samples have all arrived (update over the signals received, then predict
    with the input that acted) and predicted forward to the current step with
    the inputs already sent; ``u = u_ff - K X_hat`` (eqs. 27, 30). The input
    that acted is known to the controller: it models the rig's quantum, tilt
    limit, latency and slew limit on its own commands (the same kernels the
    rig side runs), and returns the law's command (the rig shapes it).

    Parameters
    ----------
    loop : LoopArrays
        The controller's arrays (gains, feedforward, filter, limits).
    delay_s : float, optional
        Actuation latency in s the controller models (default ``loop.delay_s``).
    """

    def __init__(self, loop: LoopArrays, delay_s: float | None = None) -> None:
        self.loop = loop
        d = loop.delay_s if delay_s is None else float(delay_s)
        self._d_int, self._d_frac = delay_segments(d, loop.dt)
        self.reset()

    @property
    def estimate(self) -> np.ndarray:
        """What the law used at the last step: the measured state or the filter's estimate, shape (Ne,)."""
        return self._X_hat

    def reset(self) -> None:
        """Back to step 0, the estimate on the reference."""
        loop = self.loop
        K, nu, Ne, ny = loop.K, loop.u_ref.shape[1], loop.gains.shape[2], loop.n_signals
        self.k = 0
        self._X_c = np.zeros(Ne)
        self._j_c = 0
        self._y_dev = np.zeros((K, ny))
        self._avail = np.zeros((K, ny), dtype=bool)
        self._du = np.zeros((K, nu))
        self._commands = np.empty((K, nu))
        self._u_app = loop.u_start.copy()
        self._X_meas = np.zeros(Ne)
        self._X_hat = np.zeros(Ne)
        self._inn = np.empty(ny)
        self._work = np.empty(Ne)
        self._held = np.empty((2, nu))
        self._u_step = np.empty(nu)

    def measure(self, j: int, y) -> int:
        """Record the sample of step ``j`` (0 accepted, -1 refused: a future step or a step past the filter).

        Parameters
        ----------
        j : int
            Step of the sample.
        y : array_like, shape (ny,) or (N,)
            Readings (NaN: not received), or the measured reduced state for state feedback.
        """
        y = np.asarray(y, dtype=float)
        e = self.loop.estimator
        if e is None:
            self._X_meas = y.copy()
            return 0
        if not 0 <= j <= self.k or j >= e.sampled.shape[0]:
            return -1
        got = np.isfinite(y)
        self._avail[j] = got
        self._y_dev[j] = np.where(got, y - e.signal_reference[j], 0.0)
        return 0

    def current_estimate(self) -> np.ndarray:
        """The estimate at the current step without advancing (the loop's last sample), shape (Ne,)."""
        return self._estimate(self.k)

    def _estimate(self, k: int) -> np.ndarray:
        e = self.loop.estimator
        if e is None:
            return self._X_meas
        while self._j_c <= k - e.latency_steps and self._j_c < k:   # commit the steps whose samples have arrived
            j = self._j_c
            kalman_update(self._X_c, self._y_dev[j], self._avail[j], e.C[j], e.update_gains[j], self._inn,
                          self._work)
            kalman_predict(self._work, e.Ad[j], e.Bd[j], self._du[j], self._X_c)
            self._j_c += 1
        X_hat = np.empty_like(self._X_c)
        if e.latency_steps == 0 and k < e.sampled.shape[0]:
            kalman_update(self._X_c, self._y_dev[k], self._avail[k], e.C[k], e.update_gains[k], self._inn, X_hat)
        else:
            X_hat[:] = self._X_c
            for j in range(self._j_c, k):   # latency compensation: predict with the inputs already sent
                kalman_predict(X_hat, e.Ad[j], e.Bd[j], self._du[j], self._work)
                X_hat[:] = self._work
        return X_hat

    def step(self) -> np.ndarray:
        """The command of the current step (rad); the step advances."""
        loop, k = self.loop, self.k
        self._X_hat = self._estimate(k)
        cmd = np.empty(loop.u_ref.shape[1])
        if loop.feedback:
            control_law(loop.u_ref[k], loop.gains[k], self._X_hat, cmd)
        else:
            cmd[:] = loop.u_ref[k]
        shaped = cmd.copy()
        quantize_clamp(shaped, loop.quantum, loop.max_angle)
        self._commands[k] = shaped
        # the input that acts over this step, as the rig applies it (latency, slew): the filter's du
        T = loop.times
        for seg, (t_a, t_b) in enumerate(((T[k], T[k] + self._d_frac), (T[k] + self._d_frac, T[k + 1]))):
            if t_b > t_a:
                hold_segment(self._commands, k - self._d_int - 1 + seg, loop.u_start, t_b - t_a, loop.max_rate,
                             self._u_app)
            self._held[seg] = self._u_app
        effective_input(self._held[0], self._held[1], self._d_frac, loop.dt, self._u_step)
        self._du[k] = self._u_step - loop.u_ref[k]
        self.k = k + 1
        return cmd


class PlantStepper(Protocol):
    """How the driver advances the truth plant.

    Methods
    -------
    segment(y, t_a, t_b, u) -> ndarray
        The state ``(x, xd)`` at ``t_b`` from ``y`` at ``t_a`` with ``u`` held.
    end_step(k, y, du) -> ndarray
        The state at the end of step ``k`` (``du``: the input deviation that acted); a
        plant integrated segment by segment returns ``y``.
    residual(y) -> ndarray
        ``D(x) xd`` at the state ``y``.
    keep_chart(y) -> ndarray, optional
        ``y`` re-charted as the compiled loop does (called when ``LoopArrays.rechart``).
    """

    def segment(self, y: np.ndarray, t_a: float, t_b: float, u: np.ndarray) -> np.ndarray:
        """Integrate one held segment.

        Parameters
        ----------
        y : ndarray, shape (2n,)
            State ``(x, xd)`` at ``t_a``.
        t_a, t_b : float
            The segment in s.
        u : ndarray, shape (nu,)
            The input held on it.
        """

    def end_step(self, k: int, y: np.ndarray, du: np.ndarray) -> np.ndarray:
        """Finish step ``k``.

        Parameters
        ----------
        k : int
            The step.
        y : ndarray, shape (2n,)
            State after its segments.
        du : ndarray, shape (nu,)
            Input deviation that acted over the step.
        """

    def residual(self, y: np.ndarray) -> np.ndarray:
        """Velocity-constraint residual.

        Parameters
        ----------
        y : ndarray, shape (2n,)
            State ``(x, xd)``.
        """


class NonlinearStepper:
    """The truth plant's DAE (index-1 form with Baumgarte stabilization) between samples.

    Parameters
    ----------
    plant : ConstrainedSystem
        The truth plant.
    method : {"DOP853", "RK45", "Radau", "rk4"}
        Adaptive ``solve_ivp`` method (with ``rtol``/``atol``) or ``substeps`` classical RK4 steps per segment.
    rtol, atol : float
        Tolerances of the adaptive methods.
    substeps : int
        RK4 steps per held segment.
    stabilization : (float, float)
        Baumgarte gains in 1/s.
    """

    def __init__(self, plant, method: str, rtol: float, atol: float, substeps: int, stabilization) -> None:
        self.plant, self.method, self.rtol, self.atol = plant, method, rtol, atol
        self.substeps = substeps
        self.stabilization = None if tuple(stabilization) == (0.0, 0.0) else tuple(stabilization)
        n = plant.n_coordinates
        self._n = n
        # the truth ball's chart, kept as the compiled loop keeps it (None: a plant without one)
        self._keep_chart = getattr(getattr(plant, "kernels", None), "keep_chart", None)
        # RK4 on a plant with compiled kernels: each segment in one compiled call (the loop's integrator)
        self._compiled = None
        if method == "rk4" and kernel_code(plant) >= 0 and not numba_config.DISABLE_JIT:
            a, b = (0.0, 0.0) if self.stabilization is None else (float(v) for v in self.stabilization)
            self._compiled = (entry_points(plant.kernels), np.array(plant.kernel_parameters, dtype=float), a, b,
                              int(plant.n_constraints))
        self._names = tuple(plant.coordinate_names) + tuple(f"{c}_rate" for c in plant.coordinate_names)

    def _rhs(self, u):
        plant, n, stab = self.plant, self._n, self.stabilization

        def rhs(t, yy):
            xdd, _ = plant.accelerations(yy[:n], yy[n:], u, stabilization=stab)
            return np.concatenate([yy[n:], xdd])
        return rhs

    def segment(self, y, t_a, t_b, u):
        """``y`` at ``t_b`` with ``u`` held from ``t_a``.

        Parameters
        ----------
        y : ndarray, shape (2n,)
            State ``(x, xd)`` at ``t_a``.
        t_a, t_b : float
            The segment in s.
        u : ndarray, shape (nu,)
            The input held on it.
        """
        if self._compiled is not None:
            plant, p, a, b, n_c = self._compiled
            y_b = hold_rk4(plant, np.ascontiguousarray(y, dtype=float), float(t_b - t_a), int(self.substeps),
                           np.ascontiguousarray(u, dtype=float), p, a, b, n_c)
            if np.all(np.isfinite(y_b)):
                return y_b
            # not finite: the Python integrator below names the substep where it stopped being so
        if self.method == "rk4":
            return rk4(self._rhs(u), y, t_a, t_b - t_a, self.substeps)
        # the guard turns a NaN into an error naming its time instead of an endless step loop
        sol = solve_ivp(guard_rhs(self._rhs(u), context="simulate_closed_loop", names=self._names), (t_a, t_b), y,
                        method=self.method, rtol=self.rtol, atol=self.atol)
        if not sol.success:
            raise IntegrationError(f"plant integration failed at t = {sol.t[-1]:.6g} s: {sol.message}")
        return sol.y[:, -1]

    def end_step(self, k, y, du):
        """The state integrated over the segments (``y`` unchanged).

        Parameters
        ----------
        k : int
            The step.
        y : ndarray, shape (2n,)
            State after its segments.
        du : ndarray, shape (nu,)
            Input deviation that acted over the step.
        """
        return y

    def keep_chart(self, y):
        """``y`` with the truth ball re-charted as the compiled loop does (when ``LoopArrays.rechart``).

        The truth plant's kernel module's ``keep_chart`` (the ball on a plate:
        :func:`ballctl.plants.kernels.ball_plate.keep_chart`) re-charts when the
        lean passed ``RECHART_LEAN``; ``y`` unchanged for a plant without one
        or a state that is not finite.

        Parameters
        ----------
        y : ndarray, shape (2n,)
            State at the end of a step.
        """
        if self._keep_chart is None or not np.all(np.isfinite(y)):
            return y
        y = np.array(y, dtype=float)
        self._keep_chart(y, self._n)
        return y

    def residual(self, y):
        """``D(x) xd``.

        Parameters
        ----------
        y : ndarray, shape (2n,)
            State ``(x, xd)``.
        """
        n = self._n
        return self.plant.constraint_jacobian(y[:n]) @ y[n:]


@dataclass(frozen=True)
class ComponentRun:
    """One run of :func:`run_loop`: the loop's histories and what the component did.

    Attributes
    ----------
    output : CompiledLoopOutput
        The histories in the compiled loop's layout (a batch of one).
    commands : ndarray, shape (K - 1, nu)
        What the component returned at each step (NaN after a stop).
    health : ndarray of int, shape (K - 1,)
        The component's ``health`` bits after each step (0 when it has none).
    measure_status : ndarray of int, shape (K - 1,)
        Status of the measurement delivered at each step (0 when none).
    controller_time_s : float
        Wall-clock time spent in the component's ``measure`` and ``step`` calls.
    """

    output: CompiledLoopOutput
    commands: np.ndarray
    health: np.ndarray
    measure_status: np.ndarray
    controller_time_s: float


def run_loop(component, stepper, loop: LoopArrays, run: RunDraws, *, raise_on_failure: bool = True,
             progress: Callable[[int], None] | None = None) -> ComponentRun:
    """Run ``component`` against the plant of ``stepper`` for ``loop.K - 1`` control steps (one run).

    Parameters
    ----------
    component : ControllerComponent
        The controller (:class:`LQGComponent`, the C library, its twin, or any object with the three calls).
        An ``estimate`` attribute (shape (Ne,)), when it has one, is recorded as the estimate.
    stepper : PlantStepper
        The truth plant (:class:`NonlinearStepper`) or a model of it.
    loop : LoopArrays
        Reference, limits, sensors and the divergence stop (the truth's coordinates).
    run : RunDraws
        The run's draws (a batch of one: initial state, noise, lost samples, delay).
    raise_on_failure : bool
        Without a divergence stop (``loop.divergence_error == 0``): raise on a
        non-finite command or state (True), or stop and mark the run (False).
    progress : callable, optional
        Called as ``progress(k)`` after step ``k``.

    Returns
    -------
    ComponentRun
    """
    n, K = loop.n, loop.K
    steps = K - 1
    nu = loop.u_ref.shape[1]
    N = loop.selection.shape[0]
    Ne = loop.gains.shape[2]
    e = loop.estimator
    ny = loop.n_signals
    d_int, d_frac = delay_segments(float(run.delay_s[0]), loop.dt)
    T, dt = loop.times, loop.dt
    stop_on_divergence = loop.divergence_error > 0
    out_y = np.full((1, K, 2 * n), np.nan)
    out_u = np.full((1, K, nu), np.nan)
    out_X = np.full((1, K, N), np.nan)
    out_Xm = np.full((1, K, N), np.nan)
    out_d = np.full((1, K, Ne - N), np.nan)
    out_res = np.full((1, K, loop.n_constraints), np.nan)
    out_meas = np.full((1, K, ny), np.nan)
    events = np.zeros((1, 3), dtype=np.int64)
    status = np.full(1, -1, dtype=np.int64)
    cmds = np.full((steps, nu), np.nan)
    health = np.zeros(steps, dtype=np.int64)
    m_status = np.zeros(steps, dtype=np.int64)
    commands = np.empty((K, nu))
    pending: dict[int, np.ndarray] = {}
    held = np.empty((2, nu))
    u_step = np.empty(nu)
    reading = np.empty(ny)
    u_app = loop.u_start.copy()
    u_plant = loop.u_start.copy()   # what the plant receives (after a dead band)
    y = np.concatenate([run.x0[0], run.xd0[0]])
    lat = 0 if e is None else e.latency_steps
    component.reset()
    t_ctl = 0.0
    for k in range(K):
        X_true = y[loop.selection] - loop.y_ref[k, loop.selection]
        out_y[0, k], out_X[0, k] = y, X_true
        out_res[0, k] = stepper.residual(y)
        if k > 0:   # 0: divergence (the tracked point's distance from its reference, or a state not finite)
            finite = bool(np.all(np.isfinite(y)))
            dist = float(np.sqrt(np.sum((y[loop.tracked_index] - loop.y_ref[k, loop.tracked_index]) ** 2)))
            if stop_on_divergence and (not finite or dist > loop.divergence_error):
                status[0] = k
                out_Xm[0, k] = X_true
                out_u[0, k] = u_app
                break
        # 1: sense; deliver what has arrived
        c0 = _time.perf_counter()
        if e is not None:
            if k < e.sampled.shape[0]:
                sense(y, n, e.signal_index, run.sample_shift[0, k], run.bias[0], e.noise_std,
                      run.standard_normal[0, k], reading)
                got = e.sampled[k] & run.received[0, k]
                out_meas[0, k] = np.where(got, reading, np.nan)
                pending[k] = out_meas[0, k].copy()
            y_j = pending.pop(k - lat, None)
            if y_j is not None and np.any(np.isfinite(y_j)):   # nothing received: no call (no update)
                status_j = component.measure(k - lat, y_j)
                if k < steps:
                    m_status[k] = status_j
        else:
            component.measure(k, X_true + run.measurement_error[0, k])
        if k == steps:
            if hasattr(component, "current_estimate"):
                X_last = component.current_estimate()
                out_Xm[0, k], out_d[0, k] = X_last[:N], X_last[N:]
            out_u[0, k] = u_app
            break
        # 2: the component's command
        cmd = np.array(component.step(), dtype=float)
        t_ctl += _time.perf_counter() - c0
        health[k] = int(getattr(component, "health", 0))
        cmds[k] = cmd
        estimate = getattr(component, "estimate", None)
        if estimate is not None:
            out_Xm[0, k], out_d[0, k] = estimate[:N], estimate[N:]
        if not np.all(np.isfinite(cmd)):
            if raise_on_failure and not stop_on_divergence:
                check_finite_at(cmd, time=T[k], quantity="input command u", context="simulate_closed_loop")
        # 3: the rig: quantum and tilt, latency, slew, dead band; 4: integrate each held segment
        hit_q, hit_a = quantize_clamp(cmd, loop.quantum, loop.max_angle)
        events[0, 2] += hit_q
        events[0, 0] += hit_a
        commands[k] = cmd
        try:
            for seg, (t_a, t_b) in enumerate(((T[k], T[k] + d_frac), (T[k] + d_frac, T[k + 1]))):
                if t_b <= t_a:
                    held[seg] = u_app
                    continue
                events[0, 1] += hold_segment(commands, k - d_int - 1 + seg, loop.u_start, t_b - t_a, loop.max_rate,
                                             u_app)
                held[seg] = u_app
                if loop.deadband > 0:
                    backlash(u_app, loop.deadband, u_plant)
                else:
                    u_plant[:] = u_app
                with np.errstate(all="ignore" if stop_on_divergence or not raise_on_failure else "warn"):
                    y = stepper.segment(y, t_a, t_b, u_plant.copy())
        except NonFiniteStateError:
            if raise_on_failure and not stop_on_divergence:
                raise
            y = np.full_like(y, np.nan)   # recorded at the next sample, as the compiled loop records it
        except (IntegrationError, BallctlError, np.linalg.LinAlgError, FloatingPointError):
            if raise_on_failure and not stop_on_divergence:
                raise
            status[0] = k
            out_u[0, k] = u_app
            break
        effective_input(held[0], held[1], d_frac, dt, u_step)
        out_u[0, k] = u_step
        y = stepper.end_step(k, y, u_step - loop.u_ref[k])
        if loop.rechart and hasattr(stepper, "keep_chart"):
            y = stepper.keep_chart(y)
        if not np.all(np.isfinite(y)) and not stop_on_divergence:
            if raise_on_failure:
                names = tuple(f"y[{i}]" for i in range(2 * n))
                check_finite_at(y, time=T[k + 1], quantity="plant state", names=names,
                                context="simulate_closed_loop")
            status[0] = k + 1
            break
        if progress is not None:
            progress(k + 1)
    out = CompiledLoopOutput(out_y[:, :, :n], out_y[:, :, n:], out_u, out_X, out_Xm, out_res, events, status,
                             out_meas, out_d)
    return ComponentRun(out, cmds, health, m_status, t_ctl)
