r"""The compiled fixed-step closed loop: many runs of a sampled LQR or LQG tracking loop at once.

This is the fast backend of :func:`ballctl.simulate_closed_loop` (selected by
``integrator="rk4"`` when the truth plant carries compiled kernels, see
:mod:`ballctl.plants.kernels`) and the engine under :func:`ballctl.monte_carlo`.
It runs the *same* loop as the Python reference path of
:mod:`ballctl.simulation.closed_loop`, step for step (:mod:`ballctl.simulation.loop_step`):

0. **stop** (with ``divergence_error``): a run whose contact point is farther
   than ``divergence_error`` m from its reference, or whose state is not
   finite, stops at that sample (``status``),
1. **sense and estimate**. State feedback: ``X_k = (y_k - y_ref,k)[sel] + e_k``
   (``e_k``: measurement noise and bias, drawn in Python from per-run seeds,
   so results do not depend on the engine). Output feedback (an
   :class:`EstimatorArrays`): every signal sampled at step k reads the truth
   plus bias and ``noise_std * z`` (standard normals drawn in Python, in the
   order of the Python loop), read ``shift`` s off its nominal instant
   (latency error, timing jitter: ``y + shift * y_dot``), or is lost
   (``received`` False: no update from it); the Kalman filter -- on the
   design's states and, offset-free, its disturbance states and integrators
   (``Ne`` states, :mod:`ballctl.design.estimator`) -- is committed up to the newest
   step whose samples have all arrived (update, then predict with the input
   that acted) and predicted forward to ``t_k`` with the inputs already sent
   (latency compensation),
2. ``cmd = u_ff,k - K_k X_k`` (eqs. 27, 30), quantized, then within the tilt
   limit (:func:`ballctl.simulation.loop_step.shape_command`); before the first command
   the plant holds the feedforward shaped the same way,
3. the command reaches the plant ``delay`` s later: the step splits at
   ``t_k + frac`` (:func:`ballctl.simulation.loop_step.delay_segments`) into two held
   segments, each slew-limited; the recorded input is their time average
   (:func:`ballctl.simulation.loop_step.effective_input`); a servo dead band
   (:func:`ballctl.simulation.loop_step.backlash`) stands between it and the plant,
4. classical RK4 with ``substeps`` steps per segment on the truth plant's
   index-1 equations with Baumgarte stabilization ``(a, b)``.

The truth plant may have more coordinates than the design (a quasi-static
design on the servo plate): the reference, the controller's state selection
and the sensor signals are given in the truth's coordinates.

Batch axis: a leading run axis ``B`` for initial states, measurement errors,
sensor draws, plant parameters (one kernel parameter vector per run) and
delays; the reference, the gains and the filter are shared. A run whose state
stops being finite is stopped and marked (``status``), the others go on.

Compilation: numba, ``cache=True`` (compiled code is cached on disk next to
the source, so only the first process on a machine pays the compile time).
One specialization serves every request: state and output feedback, every
built-in plant, any limits (switched by values, not by types; the Python
wrapper passes every array with a fixed dtype, layout and writability).
Built-in plants are listed once in :func:`_accelerations` and
:func:`_constraint_jacobian` (a ``kernel_code`` each); a plant becomes
available to the compiled loop by adding its kernel module there and to
``KERNEL_CODES``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._errors import ShapeError
from .loop_step import delay_segments, shape_command

from ..plants.kernels import ball_plate as _bp
from ..plants.kernels import moving_plate as _mp

__all__ = ["KERNEL_CODES", "CompiledLoopOutput", "EstimatorArrays", "kernel_code", "run_closed_loop", "sensor_draws"]

#: kernel module name -> code used by the compiled dispatch
KERNEL_CODES = {_bp.__name__: 0, _mp.__name__: 1}

_EVENT_NAMES = ("max_angle", "max_rate", "quantum")


def kernel_code(system) -> int | None:
    """Code of the system's compiled kernels in :data:`KERNEL_CODES`, or None (Python path only).

    Parameters
    ----------
    system : ConstrainedSystem
        A plant; built-in plants expose ``kernels`` (their kernel module) and
        ``kernel_parameters``.
    """
    module = getattr(system, "kernels", None)
    if module is None or not hasattr(system, "kernel_parameters"):
        return None
    return KERNEL_CODES.get(getattr(module, "__name__", ""))


@njit(cache=True)
def _accelerations(code, x, xd, u, p, a, b, xdd, lam):
    if code == 0:
        _bp.accelerations(x, xd, u, p, a, b, xdd, lam)
    else:
        _mp.accelerations(x, xd, u, p, a, b, xdd, lam)


@njit(cache=True)
def _constraint_jacobian(code, x, p, out):
    if code == 0:
        _bp.constraint_jacobian(x, p, out)
    else:
        _mp.constraint_jacobian(x, p, out)


@njit(cache=True)
def _rhs(code, y, u, p, a, b, n, out, xdd, lam):
    _accelerations(code, y[:n], y[n:], u, p, a, b, xdd, lam)
    for i in range(n):
        out[i] = y[n + i]
        out[n + i] = xdd[i]


@njit(cache=True)
def _rk4(code, y, h, substeps, u, p, a, b, n, k1, k2, k3, k4, tmp, xdd, lam):
    """``substeps`` classical RK4 steps of ``h / substeps`` with ``u`` held (same arithmetic as simulate.rk4)."""
    hs = h / substeps
    half = hs / 2
    sixth = hs / 6
    for _ in range(substeps):
        _rhs(code, y, u, p, a, b, n, k1, xdd, lam)
        for i in range(2 * n):
            tmp[i] = y[i] + half * k1[i]
        _rhs(code, tmp, u, p, a, b, n, k2, xdd, lam)
        for i in range(2 * n):
            tmp[i] = y[i] + half * k2[i]
        _rhs(code, tmp, u, p, a, b, n, k3, xdd, lam)
        for i in range(2 * n):
            tmp[i] = y[i] + hs * k3[i]
        _rhs(code, tmp, u, p, a, b, n, k4, xdd, lam)
        for i in range(2 * n):
            y[i] = y[i] + sixth * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])


@njit(cache=True)
def _kalman_update(X, y_dev, avail, C, M, inn, out):
    """``out = X + M @ (y_dev - C @ X)`` over the signals that arrived (:func:`ballctl.simulation.loop_step.kalman_update`)."""
    ny = y_dev.shape[0]
    N = X.shape[0]
    for j in range(ny):
        if not avail[j]:
            inn[j] = 0.0  # a lost sample: no update from that signal
            continue
        s = 0.0
        for l in range(N):
            s += C[j, l] * X[l]
        inn[j] = y_dev[j] - s
    for i in range(N):
        s = 0.0
        for j in range(ny):
            s += M[i, j] * inn[j]
        out[i] = X[i] + s


@njit(cache=True)
def _kalman_predict(X, Ad, Bd, du, out):
    """``out = Ad @ X + Bd @ du`` (:func:`ballctl.simulation.loop_step.kalman_predict`); ``out`` must not alias ``X``."""
    N = X.shape[0]
    nu = du.shape[0]
    for i in range(N):
        s = 0.0
        for l in range(N):
            s += Ad[i, l] * X[l]
        t = 0.0
        for l in range(nu):
            t += Bd[i, l] * du[l]
        out[i] = s + t


@njit(cache=True)
def _blank_after(r, k, out_y, out_X, out_Xm, out_d, out_res, out_u, out_meas):
    """NaN in every output of run ``r`` after step ``k`` (the run stopped there)."""
    for kk in range(k + 1, out_y.shape[1]):
        out_y[r, kk] = np.nan
        out_X[r, kk] = np.nan
        out_Xm[r, kk] = np.nan
        out_d[r, kk] = np.nan
        out_res[r, kk] = np.nan
        out_u[r, kk] = np.nan
        out_meas[r, kk] = np.nan


@njit(cache=True)
def _backlash(u_app, width, u_plant):
    """The servo's dead band: ``u_plant`` follows ``u_app`` only once it is more than ``width / 2`` away."""
    half = 0.5 * width
    for i in range(u_app.shape[0]):
        if u_app[i] - u_plant[i] > half:
            u_plant[i] = u_app[i] - half
        elif u_app[i] - u_plant[i] < -half:
            u_plant[i] = u_app[i] + half


@njit(cache=True, nogil=True)
def _loop(code, n, n_constraints, Y0, params, T, dt, y_ref, u_ref, u_start, gains, sel, meas_err, has_err,
          feedback, quantum, max_angle, max_rate, d_int, d_frac, substeps, a, b, div_error, div_idx, div_ref,
          has_est, sampled, Cm, Mg, Ad, Bd, sig_idx, sig_ref, bias, noise_std, z, lat, received, shift, deadband,
          out_y, out_u, out_X, out_Xm, out_d, out_res, out_meas, events, status):
    B = Y0.shape[0]
    K = out_y.shape[1]
    steps = K - 1
    nu = u_ref.shape[1]
    N = sel.shape[0]
    Ne = gains.shape[2]  # what the control law acts on: the design's states (+ disturbance estimates)
    ny = 2 * n
    n_sig = sig_idx.shape[0]
    Kt = sampled.shape[0]  # steps the estimator covers
    k1 = np.empty(ny)
    k2 = np.empty(ny)
    k3 = np.empty(ny)
    k4 = np.empty(ny)
    tmp = np.empty(ny)
    xdd = np.empty(n)
    lam = np.empty(n_constraints)
    D = np.empty((n_constraints, n))
    y = np.empty(ny)
    dy = np.empty(ny)
    X = np.empty(N)
    Xm = np.empty(Ne)
    cmd = np.empty(nu)
    new = np.empty(nu)
    u_app = np.empty(nu)
    u_plant = np.empty(nu)
    commands = np.empty((K, nu))
    held = np.empty((2, nu))
    du_eff = np.zeros((K, nu))
    y_dev = np.zeros((K, n_sig))
    avail = np.zeros((K, n_sig), dtype=np.bool_)
    inn = np.empty(n_sig)
    X_c = np.empty(Ne)
    X_post = np.empty(Ne)
    X_tmp = np.empty(Ne)
    for r in range(B):
        p = params[r]
        y[:] = Y0[r]
        u_app[:] = u_start
        u_plant[:] = u_start
        status[r] = -1
        X_c[:] = 0.0  # the estimate starts on the reference
        j_c = 0
        y_dev[:, :] = 0.0
        avail[:, :] = False
        for k in range(K):
            for i in range(ny):
                dy[i] = y[i] - y_ref[k, i]
            for j in range(N):
                X[j] = dy[sel[j]]
            out_y[r, k] = y
            out_X[r, k] = X
            out_meas[r, k] = np.nan
            _constraint_jacobian(code, y[:n], p, D)
            for i in range(n_constraints):
                s = 0.0
                for j in range(n):
                    s += D[i, j] * y[n + j]
                out_res[r, k, i] = s
            # 0: divergence
            if div_error > 0 and k > 0:
                finite = True
                for i in range(ny):
                    if not np.isfinite(y[i]):
                        finite = False
                e = np.hypot(y[div_idx[0]] - div_ref[k, 0], y[div_idx[1]] - div_ref[k, 1])
                if not finite or e > div_error:
                    status[r] = k
                    out_Xm[r, k] = X
                    out_d[r, k] = np.nan
                    out_u[r, k] = u_app
                    _blank_after(r, k, out_y, out_X, out_Xm, out_d, out_res, out_u, out_meas)
                    break
            # 1: sense and estimate
            if has_est:
                if k < Kt:
                    for j in range(n_sig):
                        # the sample instant is off by shift[r, k] s (latency error, timing jitter): first order
                        reading = (y[sig_idx[j]] + shift[r, k] * y[n + sig_idx[j]] + bias[r, j]
                                   + noise_std[j] * z[r, k, j])
                        if sampled[k, j] and received[r, k, j]:
                            out_meas[r, k, j] = reading
                            y_dev[k, j] = reading - sig_ref[k, j]
                            avail[k, j] = True
                        else:
                            y_dev[k, j] = 0.0
                while j_c <= k - lat and j_c < k:  # commit the steps whose samples have all arrived
                    _kalman_update(X_c, y_dev[j_c], avail[j_c], Cm[j_c], Mg[j_c], inn, X_post)
                    _kalman_predict(X_post, Ad[j_c], Bd[j_c], du_eff[j_c], X_c)
                    j_c += 1
                if lat == 0 and k < Kt:
                    _kalman_update(X_c, y_dev[k], avail[k], Cm[k], Mg[k], inn, Xm)
                else:
                    Xm[:] = X_c
                    for j in range(j_c, k):  # latency compensation: predict with the inputs already sent
                        _kalman_predict(Xm, Ad[j], Bd[j], du_eff[j], X_tmp)
                        Xm[:] = X_tmp
            else:
                for j in range(N):
                    Xm[j] = X[j] + meas_err[r, k, j] if has_err else X[j]
            for j in range(N):
                out_Xm[r, k, j] = Xm[j]
            for j in range(N, Ne):
                out_d[r, k, j - N] = Xm[j]
            if k == steps:
                out_u[r, k] = u_app
                break
            # 2: control law and shaping
            for i in range(nu):
                if feedback:
                    kx = 0.0
                    for j in range(Ne):
                        kx += gains[k, i, j] * Xm[j]
                    cmd[i] = u_ref[k, i] - kx
                else:
                    cmd[i] = u_ref[k, i]
            if quantum > 0:
                changed = False
                for i in range(nu):
                    q = np.rint(cmd[i] / quantum) * quantum
                    if q != cmd[i]:
                        changed = True
                    cmd[i] = q
                events[r, 2] += changed
            if max_angle > 0:
                changed = False
                for i in range(nu):
                    c = min(max(cmd[i], -max_angle), max_angle)
                    if c != cmd[i]:
                        changed = True
                    cmd[i] = c
                events[r, 0] += changed
            commands[k] = cmd
            # 3-4: delay segments, slew limit, integration
            for seg in range(2):
                if seg == 0:
                    t_a = T[k]
                    t_b = T[k] + d_frac[r]
                    src = k - d_int[r] - 1
                else:
                    t_a = T[k] + d_frac[r]
                    t_b = T[k + 1]
                    src = k - d_int[r]
                if t_b <= t_a:
                    held[seg] = u_app
                    continue
                if max_rate > 0:
                    step = max_rate * (t_b - t_a)
                    changed = False
                    for i in range(nu):
                        target = commands[src, i] if src >= 0 else u_start[i]
                        change = target - u_app[i]
                        if change > step:
                            new[i] = u_app[i] + step
                            changed = True
                        elif change < -step:
                            new[i] = u_app[i] - step
                            changed = True
                        else:
                            new[i] = target
                    events[r, 1] += changed
                    u_app[:] = new
                else:
                    for i in range(nu):
                        u_app[i] = commands[src, i] if src >= 0 else u_start[i]
                held[seg] = u_app
                if deadband > 0:
                    _backlash(u_app, deadband, u_plant)
                else:
                    u_plant[:] = u_app
                _rk4(code, y, t_b - t_a, substeps, u_plant, p, a, b, n, k1, k2, k3, k4, tmp, xdd, lam)
            w = d_frac[r] / dt
            for i in range(nu):
                out_u[r, k, i] = w * held[0, i] + (1.0 - w) * held[1, i]
                du_eff[k, i] = out_u[r, k, i] - u_ref[k, i]
            if div_error <= 0:
                finite = True
                for i in range(ny):
                    if not np.isfinite(y[i]):
                        finite = False
                if not finite:
                    status[r] = k + 1
                    _blank_after(r, k, out_y, out_X, out_Xm, out_d, out_res, out_u, out_meas)
                    break


@dataclass(frozen=True)
class EstimatorArrays:
    """The sensing and Kalman filter of an output-feedback loop, as plain arrays (the truth's coordinates).

    Attributes
    ----------
    sampled : ndarray of bool, shape (Kt, ny)
        Whether each signal is sampled at control step k (Kt: steps the filter covers).
    C : ndarray, shape (Kt, ny, N)
        Measurement matrices.
    update_gains : ndarray, shape (Kt, N, ny)
        Kalman measurement-update gains.
    Ad, Bd : ndarray, shapes (Kt, N, N), (Kt, N, nu)
        The design's discrete model (prediction).
    signal_index : ndarray of int, shape (ny,)
        Index of each signal among the truth's coordinates.
    signal_reference : ndarray, shape (K, ny)
        Reference value of each signal at the control times (m or rad).
    bias : ndarray, shape (ny,) or (B, ny)
        Sensor bias (m or rad), one for all runs or one per run.
    noise_std : ndarray, shape (ny,)
        Sensor noise std (m or rad).
    standard_normal : ndarray, shape (B, K, ny)
        Each run's standard normal draws for the sensor noise (rows of steps ``k >= Kt`` unused).
    latency_steps : int
        Control steps until every sample of a step has arrived.
    """

    sampled: np.ndarray
    C: np.ndarray
    update_gains: np.ndarray
    Ad: np.ndarray
    Bd: np.ndarray
    signal_index: np.ndarray
    signal_reference: np.ndarray
    bias: np.ndarray
    noise_std: np.ndarray
    standard_normal: np.ndarray
    latency_steps: int


@dataclass(frozen=True)
class CompiledLoopOutput:
    """Raw histories of a batch of closed-loop runs (leading run axis B).

    Attributes
    ----------
    x, xd : ndarray, shape (B, K, n)
        Coordinates and velocities at the control times.
    u : ndarray, shape (B, K, nu)
        Input applied over ``[t_k, t_k+1)``: the time average of its two held
        segments (as :func:`ballctl.simulation.loop_step.effective_input`); the last
        sample is the input held at the end.
    X, X_measured : ndarray, shape (B, K, N)
        True reduced deviations and what the control law used (the measured
        state, or the estimate of the Kalman filter).
    velocity_residual : ndarray, shape (B, K, m + l)
        ``D(x) xd``.
    limit_events : ndarray of int, shape (B, 3)
        Control steps at which ``("max_angle", "max_rate", "quantum")`` changed the command.
    status : ndarray of int, shape (B,)
        -1 for a completed run, else the control step at which the run
        stopped: the first sample whose state was not finite, or (with
        ``divergence_error``) the sample at which it diverged; later samples are NaN.
    measurements : ndarray, shape (B, K, ny)
        Sensor readings (NaN where a signal was not sampled or its sample was
        lost); ny = 0 without an estimator.
    augmented_estimate : ndarray, shape (B, K, Ne - N)
        The filter's states beyond the design's: disturbance estimates (rad)
        and integrators (m s), in the estimator's order (none without them).
    """

    x: np.ndarray
    xd: np.ndarray
    u: np.ndarray
    X: np.ndarray
    X_measured: np.ndarray
    velocity_residual: np.ndarray
    limit_events: np.ndarray
    status: np.ndarray
    measurements: np.ndarray
    augmented_estimate: np.ndarray


def sensor_draws(rng: np.random.Generator, K: int, steps_available: int, n_signals: int) -> np.ndarray:
    """The standard normals of one run's sensor noise, in the Python loop's order, shape (K, ny).

    The Python loop draws ``ny`` values at every step ``k < steps_available``
    (sampled or not); the rows of later steps are zero (unused).

    Parameters
    ----------
    rng : numpy.random.Generator
        The run's generator.
    K : int
        Control samples of the run (steps + 1).
    steps_available : int
        Steps the controller (and its filter) covers.
    n_signals : int
        Measured signals ny.
    """
    z = np.zeros((K, n_signals))
    rows = min(K, steps_available)
    z[:rows] = rng.standard_normal((rows, n_signals))
    return z


def _arr(value, dtype, ndim: int) -> np.ndarray:
    """C-contiguous, writable array of ``dtype`` and rank ``ndim``: one numba specialization for every call."""
    out = np.require(value, dtype=dtype, requirements=["C", "W", "A"])
    if out.ndim != ndim:
        raise ShapeError(f"internal: expected a rank-{ndim} array, got shape {out.shape}")
    return out


def run_closed_loop(code: int, params, x0, xd0, *, dt: float, times, x_ref, xd_ref, u_ref, gains, selection,
                    measurement_error=None, feedback: bool = True, quantum: float | None = None,
                    max_angle: float | None = None, max_rate: float | None = None, delay=0.0,
                    substeps: int = 1, stabilization: tuple[float, float] | None = (10.0, 10.0),
                    n_constraints: int, estimator: EstimatorArrays | None = None,
                    divergence_error: float | None = None, divergence_index=(0, 1), received=None,
                    sample_shift=None, deadband: float = 0.0) -> CompiledLoopOutput:
    """Run B closed-loop runs through the compiled loop (arrays in, arrays out; no validation of meaning).

    Parameters
    ----------
    code : int
        Kernel code of the plant (:func:`kernel_code`).
    dt : float
        Control period in s (the delay splits it).
    params : ndarray, shape (B, P)
        Kernel parameters of each run's plant.
    x0, xd0 : ndarray, shape (B, n)
        Initial coordinates and velocities.
    times : ndarray, shape (K,)
        Control times in s; K - 1 control steps are run.
    x_ref, xd_ref : ndarray, shape (K, n)
        Reference coordinates and velocities at the control times, in the
        truth's coordinates (entries the controller does not use are ignored).
    u_ref : ndarray, shape (K, nu)
        Reference input in rad.
    gains : ndarray, shape (K - 1, nu, Ne)
        Feedback gains, ``du_k = -gains[k] @ X_hat_k``, on the design's N states
        (state feedback) or on the filter's Ne states (N plus input disturbances).
    selection : ndarray of int, shape (N,)
        Index of each controller state in ``(x, xd)`` (length 2n).
    measurement_error : ndarray, shape (B, K, N), optional
        State feedback: added to the true reduced state to form the measurement.
    feedback : bool
        False runs open loop (``u = u_ref``, rig limits still apply).
    quantum, max_angle, max_rate : float or None
        Rig limits (rad, rad, rad/s) as in :class:`ballctl.RigLimits`.
    delay : float or ndarray, shape (B,)
        Input delay per run in s.
    substeps : int
        RK4 steps per held segment.
    stabilization : (a, b) or None
        Baumgarte gains in 1/s.
    n_constraints : int
        Rows m + l of the constraint Jacobian.
    estimator : EstimatorArrays, optional
        Output feedback through this Kalman filter and its sensors (then
        ``measurement_error`` must be None).
    divergence_error : float, optional
        Stop a run at the first sample (after the first) whose contact point
        is farther than this from its reference (m) or whose state is not finite.
    divergence_index : (int, int)
        Truth coordinates of the contact point (for ``divergence_error``).
    received : ndarray of bool, shape (B, K, ny), optional
        Output feedback: False where a sample was lost (a dropped frame); the
        filter then makes no update from that signal at that step. Default: all arrive.
    sample_shift : ndarray, shape (B, K), optional
        Output feedback: the error in s of each step's sample instant (a
        latency error, timing jitter); a signal then reads ``y + shift * y_dot``
        (first order). Default: 0.
    deadband : float
        Servo dead band (backlash) in rad between the applied command and what
        the plant receives; 0 for none.

    Returns
    -------
    CompiledLoopOutput
    """
    Y0 = _arr(np.concatenate([np.asarray(x0, float), np.asarray(xd0, float)], axis=1), np.float64, 2)
    B, ny = Y0.shape
    n = ny // 2
    T = _arr(times, np.float64, 1)
    K = T.shape[0]
    params = _arr(np.broadcast_to(np.asarray(params, float), (B, np.shape(params)[-1])), np.float64, 2)
    y_ref = _arr(np.concatenate([np.asarray(x_ref)[:K], np.asarray(xd_ref)[:K]], axis=1), np.float64, 2)
    u_ref = _arr(np.asarray(u_ref)[:K], np.float64, 2)
    gains = _arr(gains, np.float64, 3)
    sel = _arr(selection, np.int64, 1)
    N = sel.shape[0]
    nu = u_ref.shape[1]
    if measurement_error is None:
        err = np.zeros((1, 1, 1))
        has_err = False
    else:
        err = _arr(measurement_error, np.float64, 3)
        if err.shape != (B, K, N):
            raise ShapeError(f"measurement_error must have shape {(B, K, N)}, got {err.shape}")
        has_err = True
    if estimator is not None and has_err:
        raise ShapeError("measurement_error is for state feedback; with an estimator the sensors carry the noise")
    delay = np.broadcast_to(np.asarray(delay, dtype=float), (B,))
    splits = [delay_segments(float(v), dt) for v in delay]
    d_int = np.array([w for w, _ in splits], dtype=np.int64)
    d_frac = np.array([f for _, f in splits], dtype=float)
    # the input before the first command: the feedforward, quantized and within the tilt limit
    u_start = _arr(shape_command(u_ref[0], u_ref[0], 0.0, max_angle, None, quantum)[0], np.float64, 1)
    a, b = (0.0, 0.0) if stabilization is None else (float(stabilization[0]), float(stabilization[1]))
    div_idx = _arr(np.asarray(divergence_index), np.int64, 1)
    div_ref = _arr(y_ref[:, div_idx], np.float64, 2)
    div_error = 0.0 if divergence_error is None else float(divergence_error)
    if estimator is None:
        est = (np.zeros((0, 0), dtype=np.bool_), np.zeros((0, 0, N)), np.zeros((0, N, 0)), np.zeros((0, N, N)),
               np.zeros((0, N, nu)), np.zeros(0, dtype=np.int64), np.zeros((K, 0)), np.zeros((B, 0)), np.zeros(0),
               np.zeros((B, K, 0)), 0)
        n_sig = 0
    else:
        e = estimator
        n_sig = int(np.shape(e.signal_index)[0])
        z = _arr(e.standard_normal, np.float64, 3)
        if z.shape != (B, K, n_sig):
            raise ShapeError(f"estimator.standard_normal must have shape {(B, K, n_sig)}, got {z.shape}")
        est = (_arr(e.sampled, np.bool_, 2), _arr(e.C, np.float64, 3), _arr(e.update_gains, np.float64, 3),
               _arr(e.Ad, np.float64, 3), _arr(e.Bd, np.float64, 3), _arr(e.signal_index, np.int64, 1),
               _arr(np.asarray(e.signal_reference)[:K], np.float64, 2),
               _arr(np.broadcast_to(np.asarray(e.bias, dtype=float), (B, n_sig)), np.float64, 2),
               _arr(e.noise_std, np.float64, 1), z, int(e.latency_steps))
    if received is None:
        recv = np.ones((B, K, n_sig), dtype=np.bool_)
    else:
        recv = _arr(received, np.bool_, 3)
        if recv.shape != (B, K, n_sig):
            raise ShapeError(f"received must have shape {(B, K, n_sig)}, got {recv.shape}")
    if sample_shift is None:
        shift = np.zeros((B, K))
    else:
        shift = _arr(sample_shift, np.float64, 2)
        if shift.shape != (B, K):
            raise ShapeError(f"sample_shift must have shape {(B, K)}, got {shift.shape}")
    Ne = gains.shape[2]
    if estimator is not None and est[3].shape[1] != Ne:
        raise ShapeError(f"gains act on {Ne} states but the estimator's model has {est[3].shape[1]}")
    if estimator is None and Ne != N:
        raise ShapeError(f"state feedback: gains must act on the {N} selected states, got {Ne}")
    out_y = np.empty((B, K, ny))
    out_u = np.empty((B, K, nu))
    out_X = np.empty((B, K, N))
    out_Xm = np.empty((B, K, N))
    out_d = np.zeros((B, K, Ne - N))
    out_res = np.empty((B, K, n_constraints))
    out_meas = np.empty((B, K, n_sig))
    events = np.zeros((B, 3), dtype=np.int64)
    status = np.empty(B, dtype=np.int64)
    _loop(int(code), n, int(n_constraints), Y0, params, T, float(dt), y_ref, u_ref, u_start, gains, sel, err, has_err,
          bool(feedback), float(quantum or 0.0), float(max_angle or 0.0), float(max_rate or 0.0), d_int, d_frac,
          int(substeps), a, b, div_error, div_idx, div_ref, estimator is not None, *est, recv, shift,
          float(deadband), out_y, out_u, out_X, out_Xm, out_d, out_res, out_meas, events, status)
    return CompiledLoopOutput(out_y[:, :, :n], out_y[:, :, n:], out_u, out_X, out_Xm, out_res, events, status,
                              out_meas, out_d)
