r"""The compiled fixed-step closed loop: many runs of a sampled LQR tracking loop at once.

This is the fast backend of :func:`ballctl.simulate_closed_loop` (selected by
``integrator="rk4"`` when the plant carries compiled kernels, see
:mod:`ballctl.plants.kernels`) and the engine under :func:`ballctl.monte_carlo`.
It runs the *same* loop as the Python reference path of
:mod:`ballctl.closed_loop`, step for step:

1. measure ``X_k = (y_k - y_ref,k)[sel] + e_k`` (``e_k``: measurement noise
   and bias, drawn in Python from per-run seeds, so results do not depend on
   the engine),
2. ``cmd = u_ff,k - K_k X_k`` (eqs. 27, 30), quantized, then within the tilt
   limit (:func:`ballctl.loop_step.shape_command`); before the first command
   the plant holds the feedforward shaped the same way,
3. the command reaches the plant ``delay`` s later: the step splits at
   ``t_k + frac`` (:func:`ballctl.loop_step.delay_segments`) into two held
   segments, each slew-limited; the recorded input is their time average
   (:func:`ballctl.loop_step.effective_input`),
4. classical RK4 with ``substeps`` steps per segment on the plant's
   index-1 equations with Baumgarte stabilization ``(a, b)``.

Batch axis: a leading run axis ``B`` for initial states, measurement errors,
plant parameters (one kernel parameter vector per run) and delays; the
reference and the gains are shared. A run whose state stops being finite is
stopped and marked (``status``), the others go on.

Compilation: numba, ``cache=True`` (compiled code is cached on disk next to
the source, so only the first process on a machine pays the compile time).
Built-in plants are listed once in :func:`_accelerations` and
:func:`_constraint_jacobian` (a ``kernel_code`` each); a plant becomes
available to the compiled loop by adding its kernel module there and to
``KERNEL_CODES``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ._errors import ShapeError
from .loop_step import delay_segments, shape_command

from .plants.kernels import ball_plate as _bp

__all__ = ["KERNEL_CODES", "CompiledLoopOutput", "kernel_code", "run_closed_loop"]

#: kernel module name -> code used by the compiled dispatch
KERNEL_CODES = {_bp.__name__: 0}

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


@njit(cache=True)
def _constraint_jacobian(code, x, p, out):
    if code == 0:
        _bp.constraint_jacobian(x, p, out)


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


@njit(cache=True, nogil=True)
def _loop(code, n, n_constraints, Y0, params, T, dt, y_ref, u_ref, u_start, gains, sel, meas_err, has_err,
          feedback, quantum, max_angle, max_rate, d_int, d_frac, substeps, a, b,
          out_y, out_u, out_X, out_Xm, out_res, events, status):
    B = Y0.shape[0]
    K = out_y.shape[1]
    steps = K - 1
    nu = u_ref.shape[1]
    N = sel.shape[0]
    ny = 2 * n
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
    Xm = np.empty(N)
    cmd = np.empty(nu)
    new = np.empty(nu)
    u_app = np.empty(nu)
    commands = np.empty((K, nu))
    held = np.empty((2, nu))
    for r in range(B):
        p = params[r]
        y[:] = Y0[r]
        u_app[:] = u_start
        status[r] = -1
        for k in range(K):
            for i in range(ny):
                dy[i] = y[i] - y_ref[k, i]
            for j in range(N):
                X[j] = dy[sel[j]]
                Xm[j] = X[j] + meas_err[r, k, j] if has_err else X[j]
            out_y[r, k] = y
            out_X[r, k] = X
            out_Xm[r, k] = Xm
            _constraint_jacobian(code, y[:n], p, D)
            for i in range(n_constraints):
                s = 0.0
                for j in range(n):
                    s += D[i, j] * y[n + j]
                out_res[r, k, i] = s
            if k == steps:
                out_u[r, k] = u_app
                break
            for i in range(nu):
                if feedback:
                    kx = 0.0
                    for j in range(N):
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
                        new[i] = u_app[i] + min(max(target - u_app[i], -step), step)
                        if new[i] != target:
                            changed = True
                    events[r, 1] += changed
                    u_app[:] = new
                else:
                    for i in range(nu):
                        u_app[i] = commands[src, i] if src >= 0 else u_start[i]
                held[seg] = u_app
                _rk4(code, y, t_b - t_a, substeps, u_app, p, a, b, n, k1, k2, k3, k4, tmp, xdd, lam)
            w = d_frac[r] / dt
            for i in range(nu):
                out_u[r, k, i] = w * held[0, i] + (1.0 - w) * held[1, i]
            finite = True
            for i in range(ny):
                if not np.isfinite(y[i]):
                    finite = False
            if not finite:
                status[r] = k + 1
                for kk in range(k + 1, K):
                    out_y[r, kk] = np.nan
                    out_X[r, kk] = np.nan
                    out_Xm[r, kk] = np.nan
                    out_res[r, kk] = np.nan
                    out_u[r, kk] = np.nan
                break


@dataclass(frozen=True)
class CompiledLoopOutput:
    """Raw histories of a batch of closed-loop runs (leading run axis B).

    Attributes
    ----------
    x, xd : ndarray, shape (B, K, n)
        Coordinates and velocities at the control times.
    u : ndarray, shape (B, K, nu)
        Input applied over ``[t_k, t_k+1)``: the time average of its two held
        segments (as :func:`ballctl.loop_step.effective_input`); the last
        sample is the input held at the end.
    X, X_measured : ndarray, shape (B, K, N)
        True and measured reduced deviations.
    velocity_residual : ndarray, shape (B, K, m + l)
        ``D(x) xd``.
    limit_events : ndarray of int, shape (B, 3)
        Control steps at which ``("max_angle", "max_rate", "quantum")`` changed the command.
    status : ndarray of int, shape (B,)
        -1 for a completed run, else the first control step whose state was not finite.
    """

    x: np.ndarray
    xd: np.ndarray
    u: np.ndarray
    X: np.ndarray
    X_measured: np.ndarray
    velocity_residual: np.ndarray
    limit_events: np.ndarray
    status: np.ndarray


def run_closed_loop(code: int, params, x0, xd0, *, dt: float, times, x_ref, xd_ref, u_ref, gains, selection,
                    measurement_error=None, feedback: bool = True, quantum: float | None = None,
                    max_angle: float | None = None, max_rate: float | None = None, delay=0.0,
                    substeps: int = 1, stabilization: tuple[float, float] | None = (10.0, 10.0),
                    n_constraints: int) -> CompiledLoopOutput:
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
        Reference coordinates and velocities at the control times.
    u_ref : ndarray, shape (K, nu)
        Reference input in rad.
    gains : ndarray, shape (K - 1, nu, N)
        Feedback gains, ``du_k = -gains[k] @ X_k``.
    selection : ndarray of int, shape (N,)
        Index of each controller state in ``(x, xd)`` (length 2n).
    measurement_error : ndarray, shape (B, K, N), optional
        Added to the true reduced state to form the measurement.
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

    Returns
    -------
    CompiledLoopOutput
    """
    Y0 = np.ascontiguousarray(np.concatenate([np.asarray(x0, float), np.asarray(xd0, float)], axis=1))
    B, ny = Y0.shape
    n = ny // 2
    T = np.ascontiguousarray(times, dtype=float)
    K = T.shape[0]
    params = np.ascontiguousarray(np.broadcast_to(np.asarray(params, float), (B, np.shape(params)[-1])))
    y_ref = np.ascontiguousarray(np.concatenate([x_ref[:K], xd_ref[:K]], axis=1), dtype=float)
    u_ref = np.ascontiguousarray(u_ref[:K], dtype=float)
    gains = np.ascontiguousarray(gains, dtype=float)
    sel = np.ascontiguousarray(selection, dtype=np.int64)
    N = sel.shape[0]
    nu = u_ref.shape[1]
    if measurement_error is None:
        err = np.zeros((1, 1, 1))
        has_err = False
    else:
        err = np.ascontiguousarray(measurement_error, dtype=float)
        if err.shape != (B, K, N):
            raise ShapeError(f"measurement_error must have shape {(B, K, N)}, got {err.shape}")
        has_err = True
    delay = np.broadcast_to(np.asarray(delay, dtype=float), (B,))
    splits = [delay_segments(float(v), dt) for v in delay]
    d_int = np.array([w for w, _ in splits], dtype=np.int64)
    d_frac = np.array([f for _, f in splits], dtype=float)
    # the input before the first command: the feedforward, quantized and within the tilt limit
    u_start = np.ascontiguousarray(shape_command(u_ref[0], u_ref[0], 0.0, max_angle, None, quantum)[0], dtype=float)
    a, b = (0.0, 0.0) if stabilization is None else (float(stabilization[0]), float(stabilization[1]))
    out_y = np.empty((B, K, ny))
    out_u = np.empty((B, K, nu))
    out_X = np.empty((B, K, N))
    out_Xm = np.empty((B, K, N))
    out_res = np.empty((B, K, n_constraints))
    events = np.zeros((B, 3), dtype=np.int64)
    status = np.empty(B, dtype=np.int64)
    _loop(int(code), n, int(n_constraints), Y0, params, T, float(dt), y_ref, u_ref, u_start, gains, sel, err, has_err,
          bool(feedback),
          float(quantum or 0.0), float(max_angle or 0.0), float(max_rate or 0.0), d_int, d_frac, int(substeps),
          a, b, out_y, out_u, out_X, out_Xm, out_res, events, status)
    return CompiledLoopOutput(out_y[:, :, :n], out_y[:, :, n:], out_u, out_X, out_Xm, out_res, events, status)
