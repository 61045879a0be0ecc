r"""The per-step logic of the sampled loop, written once as compiled kernels.

The compiled batched loop (:mod:`ballctl.simulation.engine`) and the Python
driver of any controller component (:mod:`ballctl.simulation.component`) call
*these* functions, in this order, at every control step ``k``:

1. **sense** -- each sensor sampled at step ``k`` measures its signals of
   the truth plant plus bias and seeded noise, read ``shift`` s off its
   nominal instant to first order (:func:`sense`); the sample becomes
   available ``ceil(latency / dt)`` steps later (:func:`latency_steps`).
2. **estimate** -- the Kalman filter is *committed* up to the newest step
   whose measurements have all arrived (:func:`kalman_update` over the
   signals that arrived, then :func:`kalman_predict` with the input that
   acted), and the estimate at ``k`` is the committed one predicted forward
   with the inputs already sent (latency compensation).
3. **control** -- ``u = u_ff[k] - K[k] @ X_hat`` (:func:`control_law`, eqs. 27 and 30).
4. **shape** -- quantization and the tilt limit (:func:`quantize_clamp`);
   an actuation latency splits the step into two held segments
   (:func:`delay_segments`), each slew-limited from the input applied before
   (:func:`hold_segment`); the input that acted over the step is their time
   average (:func:`effective_input`); an actuator dead band stands between
   the applied input and the plant (:func:`backlash`).
5. **integrate** -- the truth plant with the input held on each segment.

Kernels write into their last argument(s) and allocate nothing (numba,
``cache=True``); :func:`shape_command` is their composition for callers
outside the loop (the C export's first command). They are inlined into the
compiled loop (``inline="always"``), so compiling the loop compiles no other
cached function: the second process of
:func:`ballctl.simulation.engine.compile_in_background` compiles none of what
the first one compiles too.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit

__all__ = ["latency_steps", "delay_segments", "effective_input", "sense", "kalman_update", "kalman_predict",
           "control_law", "quantize_clamp", "slew_toward", "hold_segment", "backlash", "shape_command"]


def latency_steps(latency_s: float, dt: float) -> int:
    """Control steps until a sample taken at ``t_k`` is usable: ``ceil(latency_s / dt)`` (0 for no latency).

    A fractional latency (e.g. 1.5 samples) rounds up: the sample is used at the
    first control instant at or after its arrival.

    Parameters
    ----------
    latency_s : float
        Latency in s (>= 0).
    dt : float
        Control sample time in s (> 0).

    Returns
    -------
    int
        Whole control steps of delay.
    """
    return int(math.ceil(latency_s / dt - 1e-9)) if latency_s > 0 else 0


def delay_segments(delay_s: float, dt: float) -> tuple[int, float]:
    """Split an actuation latency into whole steps and the fraction (in s) of the current step.

    Over ``[t_k, t_k + frac)`` the command of step ``k - whole - 1`` acts,
    over ``[t_k + frac, t_k+1)`` the command of step ``k - whole``.

    Parameters
    ----------
    delay_s : float
        Actuation latency in s (>= 0).
    dt : float
        Control period in s.

    Returns
    -------
    whole : int
    frac : float
        In s, in ``[0, dt)``.
    """
    ratio = delay_s / dt
    whole = int(math.floor(ratio + 1e-12))
    frac = max(0.0, (ratio - whole) * dt)
    if frac < 1e-12 * dt:
        frac = 0.0
    return whole, frac


@njit(cache=True, nogil=True, inline="always")
def effective_input(first, second, frac_s, dt, out):
    """``out = w * first + (1 - w) * second`` with ``w = frac_s / dt``: the input the discrete model's ``Bd`` sees.

    Parameters
    ----------
    first, second : ndarray, shape (nu,)
        Inputs held on ``[t_k, t_k + frac_s)`` and ``[t_k + frac_s, t_k+1)``.
    frac_s : float
        Length of the first segment in s.
    dt : float
        Control period in s.
    out : ndarray, shape (nu,)
        Written.
    """
    w = frac_s / dt
    for i in range(out.shape[0]):
        out[i] = w * first[i] + (1.0 - w) * second[i]


@njit(cache=True, nogil=True, inline="always")
def sense(y, n, signal_index, shift_s, bias, noise_std, standard_normal, out):
    """Sensor readings ``x[i] + shift_s * xd[i] + bias + noise_std * z`` of the signals ``signal_index``.

    Parameters
    ----------
    y : ndarray, shape (2n,)
        Truth coordinates and velocities ``(x, xd)``.
    n : int
        Coordinates.
    signal_index : ndarray of int, shape (ny,)
        Truth coordinate of each signal.
    shift_s : float
        Error of the sample instant in s (latency error, jitter): first order.
    bias, noise_std, standard_normal : ndarray, shape (ny,)
        Sensor bias and noise std (m or rad) and the step's standard normal draws.
    out : ndarray, shape (ny,)
        Written.
    """
    for j in range(signal_index.shape[0]):
        i = signal_index[j]
        out[j] = y[i] + shift_s * y[n + i] + bias[j] + noise_std[j] * standard_normal[j]


@njit(cache=True, nogil=True, inline="always")
def kalman_update(X, y_dev, available, C, M, innovation, out):
    """Measurement update ``out = X + M @ (y_dev - C @ X)`` over the signals that arrived.

    A signal not available (not sampled, or its sample lost) has a zero
    innovation: no update from it.

    Parameters
    ----------
    X : ndarray, shape (N,)
        Prior estimate.
    y_dev : ndarray, shape (ny,)
        Readings minus their reference values.
    available : ndarray of bool, shape (ny,)
    C : ndarray, shape (ny, N)
    M : ndarray, shape (N, ny)
        Kalman measurement-update gain.
    innovation : ndarray, shape (ny,)
        Work space (written).
    out : ndarray, shape (N,)
        Written; must not alias ``X``.
    """
    ny = y_dev.shape[0]
    N = X.shape[0]
    for j in range(ny):
        if not available[j]:
            innovation[j] = 0.0
            continue
        s = 0.0
        for l in range(N):
            s += C[j, l] * X[l]
        innovation[j] = y_dev[j] - s
    for i in range(N):
        s = 0.0
        for j in range(ny):
            s += M[i, j] * innovation[j]
        out[i] = X[i] + s


@njit(cache=True, nogil=True, inline="always")
def kalman_predict(X, Ad, Bd, du, out):
    """Time update ``out = Ad @ X + Bd @ du`` through one control step; ``out`` must not alias ``X``.

    Parameters
    ----------
    X : ndarray, shape (N,)
    Ad : ndarray, shape (N, N)
    Bd : ndarray, shape (N, nu)
    du : ndarray, shape (nu,)
        Input deviation that acted over the step (rad).
    out : ndarray, shape (N,)
    """
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


@njit(cache=True, nogil=True, inline="always")
def control_law(u_ff, K, X_hat, out):
    """Command ``out = u_ff - K @ X_hat`` (eqs. 27 and 30; the sign of ``docs/conventions.md``).

    Parameters
    ----------
    u_ff : ndarray, shape (nu,)
        Feedforward input (rad).
    K : ndarray, shape (nu, N)
        Feedback gain of the step.
    X_hat : ndarray, shape (N,)
        Measured or estimated reduced deviation.
    out : ndarray, shape (nu,)
    """
    for i in range(out.shape[0]):
        kx = 0.0
        for j in range(X_hat.shape[0]):
            kx += K[i, j] * X_hat[j]
        out[i] = u_ff[i] - kx


@njit(cache=True, nogil=True, inline="always")
def quantize_clamp(cmd, quantum, max_angle):
    """Round ``cmd`` in place to a multiple of ``quantum``, then clip it to ``|u| <= max_angle`` (0: no limit).

    Parameters
    ----------
    cmd : ndarray, shape (nu,)
        Command in rad (changed in place).
    quantum, max_angle : float
        Command resolution and tilt limit in rad; 0 disables.

    Returns
    -------
    (bool, bool)
        Whether the quantum and the tilt limit changed the command.
    """
    hit_q = False
    hit_a = False
    if quantum > 0:
        for i in range(cmd.shape[0]):
            q = np.rint(cmd[i] / quantum) * quantum
            if q != cmd[i]:
                hit_q = True
            cmd[i] = q
    if max_angle > 0:
        for i in range(cmd.shape[0]):
            c = min(max(cmd[i], -max_angle), max_angle)
            if c != cmd[i]:
                hit_a = True
            cmd[i] = c
    return hit_q, hit_a


@njit(cache=True, nogil=True, inline="always")
def slew_toward(target, u_applied, max_step):
    """Move ``u_applied`` in place toward ``target`` by at most ``max_step`` per entry (< 0: no limit).

    An entry within reach takes the target exactly.

    Parameters
    ----------
    target : ndarray, shape (nu,)
    u_applied : ndarray, shape (nu,)
        Changed in place.
    max_step : float
        ``max_rate * span_s`` in rad; negative for no slew limit.

    Returns
    -------
    bool
        Whether the limit held an entry back.
    """
    hit = False
    for i in range(target.shape[0]):
        change = target[i] - u_applied[i]
        if max_step >= 0 and change > max_step:
            u_applied[i] = u_applied[i] + max_step
            hit = True
        elif max_step >= 0 and change < -max_step:
            u_applied[i] = u_applied[i] - max_step
            hit = True
        else:
            u_applied[i] = target[i]
    return hit


@njit(cache=True, nogil=True, inline="always")
def hold_segment(commands, src, u_start, span_s, max_rate, u_applied):
    """The input held over one segment: the command of step ``src`` (``u_start`` before the first), slew-limited.

    ``u_applied`` moves in place toward the command by at most ``max_rate * span_s`` (:func:`slew_toward`).

    Parameters
    ----------
    commands : ndarray, shape (K, nu)
        The commands sent so far (rad).
    src : int
        Step whose command acts on the segment (:func:`delay_segments`); < 0: none yet.
    u_start : ndarray, shape (nu,)
        The input held before the first command.
    span_s : float
        Length of the segment in s.
    max_rate : float
        Slew limit in rad/s (0: none).
    u_applied : ndarray, shape (nu,)
        Changed in place.

    Returns
    -------
    bool
        Whether the slew limit held an entry back.
    """
    target = commands[src] if src >= 0 else u_start
    return slew_toward(target, u_applied, max_rate * span_s if max_rate > 0 else -1.0)


@njit(cache=True, nogil=True, inline="always")
def backlash(u_applied, width, u_plant):
    """An actuator dead band (the play operator): ``u_plant`` follows ``u_applied`` only beyond ``width / 2``.

    Parameters
    ----------
    u_applied : ndarray, shape (nu,)
        Command applied by the firmware (after the rig's limits).
    width : float
        Dead band in input units (rad for a servo), >= 0.
    u_plant : ndarray, shape (nu,)
        What the plant received before; changed in place.
    """
    half = 0.5 * width
    for i in range(u_applied.shape[0]):
        if u_applied[i] - u_plant[i] > half:
            u_plant[i] = u_applied[i] - half
        elif u_applied[i] - u_plant[i] < -half:
            u_plant[i] = u_applied[i] + half


def shape_command(cmd, u_prev, span_s: float, max_angle: float | None, max_rate: float | None,
                  quantum: float | None) -> tuple[np.ndarray, tuple[bool, bool, bool]]:
    """What the rig applies for ``cmd`` over ``span_s`` s after ``u_prev``.

    :func:`quantize_clamp`, then :func:`slew_toward` (the composition of the loop's kernels).

    Parameters
    ----------
    cmd, u_prev : array_like, shape (nu,)
        Command and the input applied before, in rad.
    span_s : float
        Time in s over which the slew limit applies.
    max_angle, max_rate, quantum : float or None
        Tilt limit (rad), slew limit (rad/s), resolution (rad); None disables.

    Returns
    -------
    applied : ndarray, shape (nu,)
    hits : tuple of bool
        Which of (quantum, max_angle, max_rate) changed the command.
    """
    out = np.array(cmd, dtype=float)
    hit_q, hit_a = quantize_clamp(out, float(quantum or 0.0), float(max_angle or 0.0))
    hit_r = False
    if max_rate is not None and span_s > 0:
        applied = np.array(u_prev, dtype=float)
        hit_r = slew_toward(out, applied, float(max_rate) * span_s)
        out = applied
    return out, (bool(hit_q), bool(hit_a), bool(hit_r))
