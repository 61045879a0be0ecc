r"""Dynamic inversion of the quasi-static ball-plate: plate angles from a contact acceleration.

In the quasi-static model the contact point accelerates at
:math:`a = k_b\,g_{plate}[:2] = k_b g(\cos\alpha\sin\beta, -\sin\alpha)`, so a
wanted acceleration is produced by

.. math::

    \sin\alpha = -\frac{a_y}{k_b g}, \qquad \cos\alpha\sin\beta = \frac{a_x}{k_b g},

feasible while :math:`|a| < k_b g` (the plate tilt is then
:math:`\arcsin(|a|/(k_b g))`). Differentiating once gives the plate rates from
the jerk :math:`j`:
:math:`\dot\alpha = -j_y/(k_b g\cos\alpha)`,
:math:`\dot\beta = (j_x/(k_b g) + \sin\alpha\sin\beta\,\dot\alpha)/(\cos\alpha\cos\beta)`.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._errors import InfeasibleReferenceError, LargeTiltWarning, ParameterError
from ..plants.ball_plate import BallPlate

__all__ = ["plate_angles_for_acceleration"]

#: Plate tilt (rad) above which a reference draws a :class:`~ballctl.errors.LargeTiltWarning`: 20 deg, the upper end
#: of typical rig limits (5-20 deg); beyond it the quasi-static plate model's error, which grows with the
#: square of the path's angular rate, and rig saturation degrade the tracking design.
LARGE_TILT = float(np.deg2rad(20.0))


def warn_large_tilt(tilt, what: str, t=None, *, stacklevel: int = 3) -> None:
    """Issue a :class:`~ballctl.errors.LargeTiltWarning` when a plate tilt exceeds :data:`LARGE_TILT`.

    Parameters
    ----------
    tilt : float or ndarray, shape (K,)
        Plate tilt in rad (angle between the plate normal and the vertical).
    what : str
        The reference, used in the message.
    t : ndarray, shape (K,), optional
        Times in s of the tilts, to name when the largest occurs.
    stacklevel : int
        Passed to :func:`warnings.warn`.
    """
    tilt = np.atleast_1d(np.asarray(tilt, dtype=float))
    k = int(np.argmax(tilt))
    if tilt[k] > LARGE_TILT:
        when = f" at t = {float(np.atleast_1d(t)[k]):.4g} s" if t is not None else ""
        warnings.warn(
            f"{what} needs a plate tilt of {np.rad2deg(tilt[k]):.3g} deg{when}, above "
            f"{np.rad2deg(LARGE_TILT):.0f} deg: typical rigs saturate there and the quasi-static design "
            f"degrades; slow down or enlarge the path (or plan it within the tilt limit)",
            LargeTiltWarning, stacklevel=stacklevel)


def plate_angles_for_acceleration(plant: BallPlate, acceleration, jerk, t=None) -> tuple[np.ndarray, np.ndarray]:
    """Plate angles ``(alpha, beta)`` and rates that give the contact point an acceleration.

    Parameters
    ----------
    plant : BallPlate
    acceleration, jerk : ndarray, shape (K, 2)
        Wanted contact acceleration (m/s^2) and its derivative (m/s^3) in the plate frame.
    t : ndarray, shape (K,), optional
        Times, only for error messages.

    Returns
    -------
    u, ud : ndarray, shape (K, 2)
        Plate angles in rad and their rates in rad/s.

    Raises
    ------
    InfeasibleReferenceError
        When ``|a| >= k_b g`` at some sample: the plate cannot supply it.
    """
    a = np.asarray(acceleration, dtype=float)
    j = np.asarray(jerk, dtype=float)
    p = plant.params
    amax = p.rolling_gain * p.gravity
    ratio = np.hypot(a[:, 0], a[:, 1]) / amax
    if np.any(ratio >= 1.0):
        k = int(np.argmax(ratio))
        when = f" at t={t[k]:.6g} s" if t is not None else ""
        raise InfeasibleReferenceError(
            f"the plate cannot supply the required contact acceleration{when}: |a| = "
            f"{ratio[k] * amax:.6g} m/s^2 but a tilted plate gives at most k_b*g = {amax:.6g} m/s^2 "
            f"(k_b = m R^2/(I + m R^2) = {p.rolling_gain:.6g}); slow down or enlarge the path")
    sa = -a[:, 1] / amax
    alpha = np.arcsin(sa)
    ca = np.cos(alpha)
    sb = a[:, 0] / (amax * ca)
    beta = np.arcsin(sb)
    cb = np.cos(beta)
    dalpha = -j[:, 1] / (amax * ca)
    dbeta = (j[:, 0] / amax + sa * sb * dalpha) / (ca * cb)
    return np.stack([alpha, beta], axis=-1), np.stack([dalpha, dbeta], axis=-1)


def rolling_multipliers(plant: BallPlate, u, contact_acceleration) -> np.ndarray:
    """Lagrange multipliers of the rolling constraints, shape (K, 2), in N.

    Parameters
    ----------
    plant : BallPlate
    u : ndarray, shape (K, 2)
        Plate angles in rad.
    contact_acceleration : ndarray, shape (K, 2)
        Contact-point acceleration in m/s^2 (plate frame).

    Notes
    -----

    The generalized constraint force is ``-D^T lam = B^T F`` with ``F`` the
    friction force on the ball, and ``m a = m g_plate + F`` in the plate
    plane, so ``lam = -F = m (g_plate[:2] - a)``.
    """
    g = plant.gravity_in_plate(u)
    return plant.params.mass * (g[:, :2] - np.asarray(contact_acceleration))


def require_ideal_rolling(plant) -> None:
    """Refuse a ball-plate with rolling resistance: the references are solutions of ideal rolling.

    A reference built on a plant with ``rolling_resistance > 0`` would not
    solve that plant's equations (the inversions assume no resisting couple),
    so designs along it would start from a wrong reference without a word.
    Build references on the nominal plant (``rig.design_plant()``); the
    resistance belongs to the truth (``rig.truth_plant()``).

    Parameters
    ----------
    plant : BallPlate or MovingPlateBallPlate or ServoPlateBallPlate
    """
    params = plant.params
    ball = getattr(params, "ball", params)  # the moving plates keep the ball's parameters in params.ball
    if float(getattr(ball, "rolling_resistance", 0.0)) > 0.0:
        raise ParameterError(f"references are solutions of rolling without resistance; this plant has "
                             f"rolling_resistance = {ball.rolling_resistance:g}: build the reference on the nominal "
                             f"plant (rig.design_plant(), or rolling_resistance=0) and keep the resistance for the "
                             f"truth")
