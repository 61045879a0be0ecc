r"""The circular steady motion of the ball-plate by dynamic inversion.

Circle of radius :math:`\rho` about :math:`(a, b)` at angular rate
:math:`\omega` (positive anticlockwise), ball roll rate :math:`\Omega > 0`
(Agúndez et al. 2024, section 3.2, reconstructed in
``shared/notes/ball-plate-facts.md`` and consistent with every coefficient of
appendix C, eqs. (116)-(121)). With :math:`\tau = \omega t + \text{phase}` and
:math:`s = \operatorname{sign}\omega`:

.. math::

    x_C = a + \rho\cos\tau,\quad y_C = b + \rho\sin\tau,\quad
    \psi = \tau + s\pi/2,\quad \dot\theta = \Omega,\quad
    \cos\phi_0 = \frac{\rho|\omega|}{\Omega R},\quad \dot\phi = 0,

and, with :math:`k = \rho\omega^2 (I + mR^2)/(m g R^2) < 1`,

.. math::

    \sin\alpha_0 = k\sin\tau, \qquad \cos\alpha_0\sin\beta_0 = -k\cos\tau,

so :math:`f_1 = \cos\alpha_0`, :math:`f_2 = \cos\beta_0` in appendix C and the
plate tilts by the constant angle :math:`\arcsin k` about a turning axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import ChartSingularityError, InfeasibleReferenceError, ParameterError, ParameterTypeError
from .._validation import as_vector, check_finite_scalar, check_in_range, check_positive
from ..plants.ball_plate import LEAN_LIMIT, BallPlate
from .base import Reference, ReferenceSample
from .inversion import plate_angles_for_acceleration, require_ideal_rolling, rolling_multipliers, warn_large_tilt

__all__ = ["CircleLimits", "CircularMotion", "LEAN_LIMIT", "circle_limits"]


@dataclass(frozen=True)
class CircleLimits:
    """What a circle asks of the plant and which of its limits it violates (:func:`circle_limits`).

    Attributes
    ----------
    k : float
        ``radius omega^2 / (k_b g)``: below 1 the plate can supply the centripetal acceleration.
    tilt, lean : float
        The plate's tilt ``arcsin(min(k, 1))`` and the ball's lean in rad (0 when the roll rate is too low).
    acceleration, max_acceleration : float
        ``radius omega^2`` and ``k_b g`` in m/s^2.
    speed : float
        ``radius |omega|`` in m/s.
    max_omega, max_radius : float
        ``|omega|`` (rad/s) at this radius and the radius (m) at this ``omega`` at which ``k`` reaches 1.
    min_roll_rate, max_roll_rate : float
        The roll rates in rad/s between which the ball rolls with a lean at most ``LEAN_LIMIT``.
    violated : tuple of (str, type, str)
        Each violated limit, the binding one (that no other argument can cure) first: its name
        (``"acceleration"``, ``"tilt"``, ``"roll_rate_low"``, ``"roll_rate_high"``), the error it raises and
        its message in the library's argument names.
    """

    k: float
    tilt: float
    lean: float
    acceleration: float
    max_acceleration: float
    speed: float
    max_omega: float
    max_radius: float
    min_roll_rate: float
    max_roll_rate: float
    violated: tuple


def circle_limits(radius: float, omega: float, roll_rate: float, params, *,
                  max_tilt: float | None = None) -> CircleLimits:
    """The limits of the circular steady motion (module docstring) for a request, checked in one place.

    ``radius omega^2 < k_b g`` (a tilted plate accelerates the ball by at most ``k_b g``), the tilt
    ``arcsin k`` within ``max_tilt``, ``roll_rate R >= radius |omega|`` (the ball rolls) and a lean at most
    :data:`LEAN_LIMIT`, 89 deg (``roll_rate R cos(89 deg) <= radius |omega|``).

    Parameters
    ----------
    radius, omega, roll_rate : float
        As for :class:`CircularMotion` (m, rad/s, rad/s), already checked.
    params : BallPlateParameters
        The ball's parameters.
    max_tilt : float, optional
        Largest acceptable plate tilt in rad.

    Returns
    -------
    CircleLimits
    """
    p = params
    speed = radius * abs(omega)
    most = p.rolling_gain * p.gravity
    violated = []
    acceleration = radius * omega * omega
    k = acceleration / most
    omega_max = np.sqrt(most / radius)
    if k >= 1.0:
        violated.append(("acceleration", InfeasibleReferenceError,
                         f"the plate cannot supply the centripetal acceleration: radius*omega^2 = "
                         f"{acceleration:.6g} m/s^2 >= k_b*g = {most:.6g} m/s^2; for radius "
                         f"{radius:g} m need |omega| < {omega_max:.6g} rad/s"))
    tilt = float(np.arcsin(min(k, 1.0)))
    if max_tilt is not None and tilt > max_tilt:
        violated.append(("tilt", InfeasibleReferenceError,
                         f"the circle needs a plate tilt of {np.rad2deg(tilt):.4g} deg, above max_tilt = "
                         f"{np.rad2deg(max_tilt):.4g} deg; need |omega| <= "
                         f"{omega_max * np.sqrt(np.sin(max_tilt)):.6g} rad/s"))
    max_roll_rate = speed / (p.radius * np.cos(LEAN_LIMIT))
    if roll_rate * p.radius < speed * (1.0 - 1e-12):
        violated.append(("roll_rate_low", InfeasibleReferenceError,
                         f"roll_rate too low for the speed: rolling needs roll_rate*R >= radius*|omega|, i.e. "
                         f"roll_rate >= {speed / p.radius:.6g} rad/s, got {roll_rate:.6g} rad/s"))
        lean = 0.0
    else:
        lean = float(np.arccos(min(1.0, speed / (roll_rate * p.radius))))
    if lean > LEAN_LIMIT:
        violated.append(("roll_rate_high", ChartSingularityError,
                         f"roll_rate too high for the speed: the lean would be {np.rad2deg(lean):.4g} deg, "
                         f"within 1 deg of the yaw-lean-roll chart's singularity at 90 deg; use "
                         f"roll_rate <= {max_roll_rate:.6g} rad/s"))
    return CircleLimits(k=k, tilt=tilt, lean=lean, acceleration=acceleration, max_acceleration=most,
                        speed=speed, max_omega=float(omega_max), max_radius=most / (omega * omega),
                        min_roll_rate=speed / p.radius, max_roll_rate=float(max_roll_rate),
                        violated=tuple(violated))


class CircularMotion(Reference):
    """Circular steady motion of the contact point, computed analytically.

    Parameters
    ----------
    plant : BallPlate
        The plant (mass, radius, inertia, gravity).
    radius : float
        Circle radius rho in m (> 0).
    omega : float
        Angular rate of the contact point about the centre in rad/s (non-zero;
        negative runs clockwise).
    roll_rate : float
        Roll rate Omega of the ball in rad/s; must satisfy
        ``roll_rate * R >= radius * |omega|``.
    center : (float, float)
        Circle centre (a, b) in m in the plate frame; the plate pivot is the origin.
    phase : float
        Angle of the contact point on the circle at t = 0 in rad.
    roll0 : float
        Roll angle at t = 0 in rad.
    max_tilt : float, optional
        Largest acceptable plate tilt in rad (e.g. the rig's limit); a circle
        that needs more raises.

    Raises
    ------
    InfeasibleReferenceError
        If ``rho omega^2 >= k_b g`` (the plate cannot supply the centripetal
        acceleration), if the roll rate is too low for the speed, or if the
        tilt exceeds ``max_tilt``.
    ChartSingularityError
        If the lean would come within 1 degree of 90 degrees.

    Examples
    --------
    >>> import ballctl
    >>> ref = ballctl.CircularMotion(ballctl.BallPlate(), radius=0.5, omega=1.0, roll_rate=40.0)
    >>> s = ref([0.0, 1.0])
    >>> s.x.shape, s.u.shape
    ((2, 5), (2, 2))
    """

    def __init__(self, plant: BallPlate, radius: float, omega: float, roll_rate: float, *,
                 center=(0.0, 0.0), phase: float = 0.0, roll0: float = 0.0,
                 max_tilt: float | None = None) -> None:
        if not isinstance(plant, BallPlate):
            raise ParameterTypeError(f"plant must be a BallPlate, got {type(plant).__name__}")
        require_ideal_rolling(plant)
        self.system = plant
        self.radius = check_positive(radius, "radius", "m")
        self.omega = check_finite_scalar(omega, "omega", "rad/s")
        if self.omega == 0.0:
            raise ParameterError("omega must be non-zero (rad/s); its sign sets the direction")
        self.roll_rate = check_positive(roll_rate, "roll_rate", "rad/s")
        self.center = tuple(float(c) for c in as_vector(center, "center", 2, unit="m"))
        self.phase = check_finite_scalar(phase, "phase", "rad")
        self.roll0 = check_finite_scalar(roll0, "roll0", "rad")
        if max_tilt is not None:
            max_tilt = check_in_range(max_tilt, "max_tilt", 0.0, np.pi / 2, unit="rad", low_inclusive=False,
                                      high_inclusive=False)
        limits = circle_limits(self.radius, self.omega, self.roll_rate, plant.params, max_tilt=max_tilt)
        self.k, self.tilt, self.lean = limits.k, limits.tilt, limits.lean
        if limits.violated:
            (cls, first), rest = limits.violated[0][1:], limits.violated[1:]
            more = "; also: " if rest else ""
            raise cls(first + more + "; also: ".join(msg for _, _, msg in rest))
        warn_large_tilt(self.tilt, "CircularMotion", stacklevel=3)
        self.period = float(2.0 * np.pi / abs(self.omega))
        self.t_range = (-np.inf, np.inf)

    @property
    def spin(self) -> float:
        """Conserved spin about the plate normal, ``omega + Omega sin(lean)``, rad/s."""
        return self.omega + self.roll_rate * np.sin(self.lean)

    @property
    def speed(self) -> float:
        """Speed of the contact point in m/s."""
        return self.radius * abs(self.omega)

    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        rho, w, Om = self.radius, self.omega, self.roll_rate
        tau = w * t + self.phase
        c, s = np.cos(tau), np.sin(tau)
        K = t.shape[0]
        x = np.empty((K, 5))
        x[:, 0] = self.center[0] + rho * c
        x[:, 1] = self.center[1] + rho * s
        x[:, 2] = tau + np.sign(w) * np.pi / 2
        x[:, 3] = self.lean
        x[:, 4] = self.roll0 + Om * t
        xd = np.zeros((K, 5))
        xd[:, 0] = -rho * w * s
        xd[:, 1] = rho * w * c
        xd[:, 2] = w
        xd[:, 4] = Om
        xdd = np.zeros((K, 5))
        xdd[:, 0] = -rho * w * w * c
        xdd[:, 1] = -rho * w * w * s
        jerk = np.stack([rho * w ** 3 * s, -rho * w ** 3 * c], axis=-1)
        u, ud = plate_angles_for_acceleration(self.system, xdd[:, :2], jerk, t)
        lam = rolling_multipliers(self.system, u, xdd[:, :2])
        return ReferenceSample(t.copy(), x, xd, xdd, u, ud, lam)

    def summary(self) -> dict[str, float]:
        return {"radius_m": self.radius, "omega_rad_s": self.omega, "roll_rate_rad_s": self.roll_rate,
                "speed_m_s": self.speed, "period_s": self.period, "tilt_rad": self.tilt,
                "lean_rad": self.lean, "spin_rad_s": float(self.spin), "k": self.k,
                "alpha_amplitude_rad": float(np.arcsin(self.k)),
                "beta_amplitude_rad": float(np.arcsin(self.k))}
