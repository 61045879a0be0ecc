r"""The per-step logic of the sampled loop, as small pure array functions.

:func:`ballctl.simulate_closed_loop` is a thin driver around these functions;
a compiled or batched backend reproduces the loop by calling (or
transcribing) exactly these, in this order, at every control step ``k``:

1. **sense** -- each sensor sampled at step ``k`` measures its signals of
   the truth plant plus bias and seeded noise (:func:`measure`); the sample
   becomes available ``ceil(latency / dt)`` steps later (:func:`latency_steps`).
2. **estimate** -- the Kalman filter is *committed* up to the newest step
   whose measurements have all arrived (:func:`kalman_update`, then
   :func:`kalman_predict` with the input that acted), and the estimate at
   ``k`` is the committed one predicted forward through the model with the
   inputs already sent (latency compensation).
3. **control** -- ``u = u_ff[k] - K[k] @ X_hat`` (:func:`control_law`, eq. 27/30).
4. **shape** -- quantization, tilt limit, then slew limit from the previously
   applied input (:func:`shape_command`); an actuation latency splits the step
   into two held segments (:func:`delay_segments`), and the input that
   acted over the step is their time average (:func:`effective_input`).
5. **integrate** -- the truth plant with the input held on each segment.

All functions take and return plain ``numpy`` arrays and scalars (``None``
disables a limit); none keeps state.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["latency_steps", "measure", "kalman_update", "kalman_predict", "control_law", "shape_command",
           "delay_segments", "effective_input", "backlash"]


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


def measure(values: np.ndarray, bias: np.ndarray, noise_std: np.ndarray, standard_normal: np.ndarray
            ) -> np.ndarray:
    """A sensor reading: true ``values`` + ``bias`` + ``noise_std * standard_normal``.

    Parameters
    ----------
    values : ndarray, shape (ny,)
        True values of the measured signals (their SI units).
    bias : ndarray, shape (ny,)
        Constant sensor bias, same units.
    noise_std : ndarray, shape (ny,)
        Standard deviation of the white noise, same units.
    standard_normal : ndarray, shape (ny,)
        Draws of a standard normal variable.

    Returns
    -------
    ndarray, shape (ny,)
    """
    return values + bias + noise_std * standard_normal


def kalman_update(X_prior: np.ndarray, innovation: np.ndarray, M: np.ndarray) -> np.ndarray:
    """Measurement update ``X_prior + M @ innovation`` (``innovation = y - C @ X_prior``).

    Parameters
    ----------
    X_prior : ndarray, shape (N,)
        Predicted reduced deviation.
    innovation : ndarray, shape (ny,)
        Measurement minus its prediction.
    M : ndarray, shape (N, ny)
        Kalman measurement-update gain.

    Returns
    -------
    ndarray, shape (N,)
    """
    return X_prior + M @ innovation


def kalman_predict(X_post: np.ndarray, Ad: np.ndarray, Bd: np.ndarray, du: np.ndarray) -> np.ndarray:
    """Time update ``Ad @ X_post + Bd @ du`` through one control step.

    Parameters
    ----------
    X_post : ndarray, shape (N,)
        Filtered reduced deviation at the step's start.
    Ad : ndarray, shape (N, N)
        Discrete transition matrix of the step.
    Bd : ndarray, shape (N, nu)
        Discrete input matrix of the step.
    du : ndarray, shape (nu,)
        Input deviation applied over the step (rad).

    Returns
    -------
    ndarray, shape (N,)
    """
    return Ad @ X_post + Bd @ du


def control_law(u_ff: np.ndarray, K: np.ndarray, X_hat: np.ndarray) -> np.ndarray:
    """Command ``u_ff - K @ X_hat`` (eqs. 27 and 30; the sign of ``docs/conventions.md``).

    Parameters
    ----------
    u_ff : ndarray, shape (nu,)
        Feedforward input (rad).
    K : ndarray, shape (nu, N)
        Feedback gain of the step.
    X_hat : ndarray, shape (N,)
        Measured or estimated reduced deviation.

    Returns
    -------
    ndarray, shape (nu,)
    """
    return u_ff - K @ X_hat


def shape_command(cmd: np.ndarray, u_prev: np.ndarray, span_s: float, max_angle: float | None,
                  max_rate: float | None, quantum: float | None) -> tuple[np.ndarray, tuple[bool, bool, bool]]:
    """What the rig applies for ``cmd`` over a span of ``span_s`` seconds after ``u_prev``.

    Quantization (round to a multiple of ``quantum``), then the tilt limit
    (``|u| <= max_angle``), then the slew limit (at most ``max_rate * span_s``
    from ``u_prev``; an input within reach takes the command exactly). With
    ``u_prev`` itself within the tilt limit, the result is too.

    Parameters
    ----------
    cmd : ndarray, shape (nu,)
        Commanded plate angles in rad.
    u_prev : ndarray, shape (nu,)
        Plate angles applied before, in rad.
    span_s : float
        Time in s over which the slew limit applies.
    max_angle : float or None
        Tilt limit in rad (None: no limit).
    max_rate : float or None
        Slew limit in rad/s (None: no limit).
    quantum : float or None
        Command resolution in rad (None: continuous).

    Returns
    -------
    applied : ndarray, shape (nu,)
        What the rig applies.
    hits : tuple of bool
        Which of (quantum, max_angle, max_rate) changed the command.
    """
    out = cmd
    hit_q = hit_a = hit_r = False
    if quantum is not None:
        q = np.round(out / quantum) * quantum
        hit_q = bool(np.any(q != out))
        out = q
    if max_angle is not None:
        c = np.clip(out, -max_angle, max_angle)
        hit_a = bool(np.any(c != out))
        out = c
    if max_rate is not None and span_s > 0:
        step = max_rate * span_s
        change = out - u_prev
        over = np.abs(change) > step  # only these move at the limit; the others reach the command exactly
        hit_r = bool(np.any(over))
        out = np.where(over, u_prev + np.clip(change, -step, step), out)
    return out, (hit_q, hit_a, hit_r)


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


def effective_input(first: np.ndarray, second: np.ndarray, frac_s: float, dt: float) -> np.ndarray:
    """Time average over the step of the two held segments (what the discrete model's ``Bd`` sees).

    Parameters
    ----------
    first, second : ndarray, shape (nu,)
        Inputs held on ``[t_k, t_k + frac_s)`` and ``[t_k + frac_s, t_k+1)``.
    frac_s : float
        Length of the first segment in s.
    dt : float
        Control period in s.

    Returns
    -------
    ndarray, shape (nu,)
    """
    w = frac_s / dt
    return w * first + (1.0 - w) * second


def backlash(u_applied: np.ndarray, u_plant: np.ndarray, width: float) -> np.ndarray:
    """A servo's dead band (backlash of width ``width``): what the plant receives for ``u_applied``.

    The output stays at ``u_plant`` while ``|u_applied - u_plant| <= width / 2``
    and otherwise trails the command by ``width / 2`` (the play operator).

    Parameters
    ----------
    u_applied : ndarray, shape (nu,)
        Command applied by the firmware in rad (after the rig's limits).
    u_plant : ndarray, shape (nu,)
        What the plant received before, in rad.
    width : float
        Dead band in rad (>= 0).

    Returns
    -------
    ndarray, shape (nu,)
    """
    half = 0.5 * width
    return np.where(u_applied - u_plant > half, u_applied - half,
                    np.where(u_applied - u_plant < -half, u_applied + half, u_plant))
