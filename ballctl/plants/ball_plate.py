r"""The ball-plate system: a sphere rolling without slipping on a tilted plate.

Model of Agúndez et al. (2024), section 3.1, with the plate acting
*quasi-statically*: the plate angles :math:`u = (\alpha, \beta)` set the
direction of gravity in the plate frame, while the plate's angular velocity
and acceleration are neglected (as in the paper). The exact moving-plate model
is a separate concern; see the docs.

Coordinates (all in the plate frame, SI units, radians):

===========  ======  ===================================================
name         paper   meaning
===========  ======  ===================================================
contact_x    x_C     contact point, plate x axis (m)
contact_y    y_C     contact point, plate y axis (m)
yaw          psi     first Z-X-Y Euler angle of the ball relative to the plate
lean         phi     second (X) angle; the chart is singular at lean = ±90°
roll         theta   third (Y) angle
===========  ======  ===================================================

The ball's orientation relative to the plate is
:math:`R_{rel} = R_z(\psi) R_x(\phi) R_y(\theta)` and its angular velocity in
the plate frame is :math:`\omega = G(\psi, \phi)(\dot\psi, \dot\phi, \dot\theta)` with

.. math::

    \omega = (\dot\phi\cos\psi - \dot\theta\sin\psi\cos\phi,\;
              \dot\phi\sin\psi + \dot\theta\cos\psi\cos\phi,\;
              \dot\psi + \dot\theta\sin\phi).

Rolling without slipping, :math:`v_{centre} + \omega \times (-R e_z) = 0`,
gives the two nonholonomic constraints (42)-(44).

Derivation of M and Q (the Newton-Euler projection of the paper's appendix
B, eqs. (90)-(115), for a non-rotating plate frame): the centre velocity is
:math:`H\dot x` with :math:`H = [I_2\;0]` padded to 3 rows, the angular
velocity is :math:`G\dot x`; then :math:`M = m H^T H + I\,G^T G` and
:math:`Q = m H^T g_{plate} - I\,G^T \dot G \dot x` (the gyroscopic term
:math:`\omega\times I\omega` vanishes for a sphere). Worked out:

.. math::

    M = \mathrm{diag}(m, m, \cdot) \oplus I\begin{pmatrix}1&0&\sin\phi\\0&1&0\\
        \sin\phi&0&1\end{pmatrix},\qquad
    Q = \begin{pmatrix} m g\cos\alpha\sin\beta \\ -m g\sin\alpha \\
        -I\dot\theta\dot\phi\cos\phi \\ I\dot\psi\dot\theta\cos\phi \\
        -I\dot\psi\dot\phi\cos\phi\end{pmatrix},

with gravity in the plate frame
:math:`g_{plate} = R_2^T(0,0,-g) = g(\cos\alpha\sin\beta, -\sin\alpha, -\cos\alpha\cos\beta)`,
:math:`R_2 = R_x(\alpha)R_y(\beta)` (eq. 33). The same M and Q follow from
Lagrange's equations with
:math:`T = \tfrac12 m(\dot x_C^2 + \dot y_C^2) + \tfrac12 I(\dot\psi^2 + \dot\phi^2 +
\dot\theta^2 + 2\dot\psi\dot\theta\sin\phi)`; the tests check both routes.

Consequences used throughout ballctl: the contact point accelerates at
:math:`k_b\, g_{plate}[:2]`, :math:`k_b = mR^2/(I + mR^2)`, independently of
the orientation, and the spin about the plate normal
:math:`\omega_z = \dot\psi + \dot\theta\sin\phi` is conserved.

Rolling resistance (``BallPlateParameters.rolling_resistance`` :math:`c`,
zero by default): a couple :math:`\tau = -c N R\,\omega_t/\sqrt{|\omega_t|^2+\varepsilon^2}`
on the ball, :math:`\omega_t = (\omega_x, \omega_y, 0)`, :math:`N = m g\cos\alpha\cos\beta`,
:math:`\varepsilon = 10^{-4}\,\mathrm{m/s} / R`, added to Q as :math:`G^T\tau`. On a
level plate a rolling ball then decelerates at :math:`k_b\,c\,g` (to the
regularization, :math:`\tfrac12(\varepsilon/|\omega_t|)^2` relative); the spin
stays conserved. See :mod:`ballctl.plants.kernels.ball_plate`.

:meth:`BallPlate.contact_forces` returns the plate's force on the ball,
``F = m (a_G - g_plate)`` (the friction force is ``-lam``, the normal force
:math:`m g\cos\alpha\cos\beta`).
"""

from __future__ import annotations

from dataclasses import replace, dataclass, field

import numpy as np

from .._errors import ParameterError
from .._validation import ProblemCollector, check_finite_scalar, check_instance, check_positive
from ..system import ConstrainedSystem
from .kernels import ball_plate as _kernels
from .kernels.batching import as_stacks, restore

__all__ = ["BallPlate", "BallPlateParameters", "LEAN_LIMIT"]

#: largest |lean| in rad that references and simulations accept: the Z-X-Y chart is singular at 90 deg
LEAN_LIMIT = float(np.deg2rad(89.0))

COORDINATE_NAMES = ("contact_x", "contact_y", "yaw", "lean", "roll")
INPUT_NAMES = ("alpha", "beta")


@dataclass(frozen=True, kw_only=True)
class BallPlateParameters:
    """Physical parameters of the ball-plate system.

    The defaults describe a solid 40 mm ball of 0.1 kg, a typical
    laboratory rig (the paper does not state its values).

    Attributes
    ----------
    mass : float
        Ball mass m in kg (> 0).
    radius : float
        Ball radius R in m (> 0).
    inertia : float or None
        Moment of inertia about a diameter in kg m^2 (> 0). ``None`` gives the
        solid sphere ``2/5 m R^2``; a thin hollow sphere is ``2/3 m R^2``.
    gravity : float
        Gravitational acceleration g in m/s^2 (> 0).
    rolling_resistance : float
        Coefficient of rolling resistance c, dimensionless, in [0, 1): the
        contact exerts a couple of magnitude ``c N R`` on the ball (N the normal
        force in N) opposing its rolling relative to the plate (the spin about
        the normal is not resisted); see :mod:`ballctl.plants.kernels.ball_plate`.
        Physical values are small: a steel ball on aluminium or glass about
        0.001-0.005, a plastic ball on a hard plate about 0.005-0.02, rubber
        on a soft surface up to about 0.1. The default 0 is the paper's ideal
        rolling (and reproduces the plant without it bit for bit).
    """

    mass: float = 0.1
    radius: float = 0.02
    inertia: float | None = None
    gravity: float = 9.81
    rolling_resistance: float = 0.0
    _inertia: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check = ProblemCollector("BallPlateParameters")
        m = check.attempt(lambda: check_positive(self.mass, "mass", "kg"))
        r = check.attempt(lambda: check_positive(self.radius, "radius", "m"))
        check.attempt(lambda: check_positive(self.gravity, "gravity", "m/s^2"))
        c = check.attempt(lambda: check_finite_scalar(self.rolling_resistance, "rolling_resistance"))
        if c is not None and not 0.0 <= c < 1.0:
            check.add(f"rolling_resistance must lie in [0, 1) (dimensionless; physical values are about "
                      f"0.001-0.02, a steel ball on aluminium 0.001-0.005), got {self.rolling_resistance!r}")
            c = None
        inertia = None
        if self.inertia is not None:
            inertia = check.attempt(lambda: check_positive(self.inertia, "inertia", "kg m^2"))
        elif m is not None and r is not None:
            inertia = 0.4 * m * r * r
        if m is not None and r is not None and inertia is not None:
            mr2 = m * r * r
            if not (np.isfinite(mr2) and np.isfinite(inertia) and mr2 > 0.0 and np.isfinite(inertia + mr2)):
                check.add(f"mass * radius^2 = {mr2:.3g} kg m^2 and inertia = {inertia:.3g} kg m^2 must be finite "
                          f"and > 0 (the parameters overflow or underflow double precision)")
        check.raise_if_any()
        object.__setattr__(self, "_inertia", float(inertia))
        object.__setattr__(self, "rolling_resistance", float(c))

    @property
    def ball_inertia(self) -> float:
        """Moment of inertia about a diameter, kg m^2 (resolved default)."""
        return self._inertia

    @property
    def rolling_gain(self) -> float:
        """``k_b = m R^2 / (I + m R^2)``: contact acceleration per unit in-plane gravity (5/7 for a solid ball)."""
        mr2 = self.mass * self.radius ** 2
        return mr2 / (self._inertia + mr2)

    def as_dict(self) -> dict[str, float]:
        """Flat dictionary of the resolved parameters (for files and reports)."""
        return {"mass": float(self.mass), "radius": float(self.radius),
                "inertia": self._inertia, "gravity": float(self.gravity),
                "rolling_resistance": float(self.rolling_resistance)}


def _cs(angle):
    return np.cos(angle), np.sin(angle)


class BallPlate(ConstrainedSystem):
    """The ball-plate plant of Agúndez et al. (2024), section 3.1 (quasi-static plate).

    n = 5 coordinates ``(contact_x, contact_y, yaw, lean, roll)``, m = 0,
    l = 2 rolling constraints, inputs the plate angles ``(alpha, beta)`` in
    rad with ``R2 = Rx(alpha) Ry(beta)``. The plate angles act
    quasi-statically: only the direction of gravity in the plate frame
    changes; the plate's angular velocity and acceleration are neglected, as
    in the paper.

    Every method accepts a single state (``x`` of shape (5,)) or a batch
    (shape (K, 5)) and is complex-step safe.

    Parameters
    ----------
    params : BallPlateParameters, optional
        Physical parameters; keyword arguments build one when omitted.
    mass, radius, inertia, gravity, rolling_resistance : float, optional
        Convenience: ``BallPlate(mass=0.2)`` equals
        ``BallPlate(BallPlateParameters(mass=0.2))`` (kg, m, kg m^2, m/s^2,
        dimensionless); not together with ``params``.

    References
    ----------
    Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, eqs. (31)-(48), (90)-(115).
    """

    name = "ball_plate"
    batched = True

    def __init__(self, params: BallPlateParameters | None = None, *, mass: float | None = None,
                 radius: float | None = None, inertia: float | None = None,
                 gravity: float | None = None, rolling_resistance: float | None = None) -> None:
        given = {k: v for k, v in (("mass", mass), ("radius", radius), ("inertia", inertia),
                                   ("gravity", gravity), ("rolling_resistance", rolling_resistance))
                 if v is not None}
        if params is None:
            params = BallPlateParameters(**given)
        elif given:
            raise ParameterError("pass either params or keyword parameters to BallPlate, not both")
        check_instance(params, "params", BallPlateParameters)
        self.params = params
        self._kernel_parameters = np.array([params.mass, params.radius, params.ball_inertia, params.gravity,
                                            params.rolling_resistance], dtype=float)
        self._kernel_parameters.setflags(write=False)
        super().__init__(n_coordinates=5, n_holonomic=0, n_nonholonomic=2, n_inputs=2,
                         coordinate_names=COORDINATE_NAMES, input_names=INPUT_NAMES)

    # -------------------------------------------------------------- helpers
    def gravity_in_plate(self, u) -> np.ndarray:
        """Gravity in the plate frame, ``R2^T (0, 0, -g)``, shape (..., 3), m/s^2.

        Parameters
        ----------
        u : array_like, shape (..., 2)
            Plate angles ``(alpha, beta)`` in rad.
        """
        u = np.asarray(u)
        ca, sa = _cs(u[..., 0])
        cb, sb = _cs(u[..., 1])
        g = self.params.gravity
        return g * np.stack([ca * sb, -sa, -ca * cb], axis=-1)

    def angular_velocity(self, x, xd) -> np.ndarray:
        """Ball angular velocity in the plate frame, rad/s, shape (..., 3).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        """
        x = np.asarray(x)
        xd = np.asarray(xd)
        cps, sps = _cs(x[..., 2])
        cph, sph = _cs(x[..., 3])
        dpsi, dphi, dth = xd[..., 2], xd[..., 3], xd[..., 4]
        return np.stack([dphi * cps - dth * sps * cph,
                         dphi * sps + dth * cps * cph,
                         dpsi + dth * sph], axis=-1)

    def spin(self, x, xd) -> np.ndarray:
        """Spin about the plate normal ``yaw' + roll' sin(lean)`` in rad/s (conserved).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        """
        x = np.asarray(x)
        xd = np.asarray(xd)
        return xd[..., 2] + xd[..., 4] * np.sin(x[..., 3])

    def kinetic_energy(self, x, xd) -> np.ndarray:
        """Kinetic energy of the ball in J (plate frame).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        """
        p = self.params
        w = self.angular_velocity(x, xd)
        xd = np.asarray(xd)
        return 0.5 * p.mass * (xd[..., 0] ** 2 + xd[..., 1] ** 2) + 0.5 * p.ball_inertia * np.sum(w * w, axis=-1)

    def potential_energy(self, x, u) -> np.ndarray:
        """Gravitational potential energy in J of the ball centre at ``(x_C, y_C, R)`` in the plate frame.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        u : array_like, shape (..., 2)
            Plate angles in rad.
        """
        p = self.params
        g = self.gravity_in_plate(u)
        x = np.asarray(x)
        return -p.mass * (g[..., 0] * x[..., 0] + g[..., 1] * x[..., 1] + g[..., 2] * p.radius)

    # ------------------------------------------------------------ interface
    # every equation below is evaluated by the compiled kernels of
    # ballctl.plants.kernels.ball_plate (one source of truth)
    kernels = _kernels
    tracked_coordinates = ("contact_x", "contact_y")

    @property
    def physical_parameters(self) -> dict[str, float]:
        """The ball's parameters a Monte Carlo run may draw: ``mass`` (kg), ``radius`` (m), ``inertia`` (kg m^2)."""
        p = self.params
        return {"mass": p.mass, "radius": p.radius, "inertia": p.ball_inertia}

    def with_parameters(self, **changes: float) -> "BallPlate":
        """The same plant with some of :attr:`physical_parameters` replaced.

        Parameters
        ----------
        **changes : float
            ``mass`` in kg, ``radius`` in m, ``inertia`` in kg m^2 (omitted: the
            plant's rule, e.g. the solid sphere's ``2/5 m R^2`` of the new values).
        """
        return type(self)(replace(self.params, **changes)) if changes else self

    @property
    def kernel_parameters(self) -> np.ndarray:
        """Parameters packed for the kernels, shape (5,).

        ``(mass kg, radius m, inertia kg m^2, gravity m/s^2, rolling_resistance)``
        (:data:`ballctl.plants.kernels.ball_plate.N_PARAMETERS`).
        """
        return self._kernel_parameters

    def mass_matrix(self, x, u=None) -> np.ndarray:
        """Mass matrix M(x), shape (..., 5, 5); independent of u for the quasi-static plate.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        u : array_like, shape (..., nu), optional
            Inputs.
        """
        dtype = np.result_type(np.asarray(x), np.asarray(u), float) if u is not None else None
        lead, (xs,) = as_stacks([x], [5], dtype=dtype)
        return restore(_kernels.mass_matrix_batch(xs, self._kernel_parameters), lead)

    def forces(self, x, xd, u) -> np.ndarray:
        """Generalized forces Q(x, xd, u), shape (..., 5): gravity, gyroscopic terms and rolling resistance.

        With ``rolling_resistance`` c > 0, Q includes the couple ``G^T tau``,
        ``tau = -c N R omega_t / sqrt(|omega_t|^2 + eps^2)`` (module docstring).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        u : array_like, shape (..., 2)
            Plate angles in rad.
        """
        lead, (xs, xds, us) = as_stacks([x, xd, u], [5, 5, 2])
        return restore(_kernels.forces_batch(xs, xds, us, self._kernel_parameters), lead)

    def holonomic(self, x) -> np.ndarray:
        """No holonomic constraints: shape (..., 0).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        """
        x = np.asarray(x)
        return np.zeros(x.shape[:-1] + (0,), dtype=np.result_type(x, float))

    def constraint_jacobian(self, x) -> np.ndarray:
        """Rolling constraints B(x) of eqs. (43)-(44), shape (..., 2, 5).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        """
        lead, (xs,) = as_stacks([x], [5])
        return restore(_kernels.constraint_jacobian_batch(xs, self._kernel_parameters), lead)

    def constraint_bias(self, x, xd) -> np.ndarray:
        """Analytic ``Ddot(x, xd) @ xd``, shape (..., 2).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        """
        lead, (xs, xds) = as_stacks([x, xd], [5, 5])
        return restore(_kernels.constraint_bias_batch(xs, xds, self._kernel_parameters), lead)

    def accelerations(self, x, xd, u, *, stabilization: tuple[float, float] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Accelerations and multipliers by the structured index-1 solve (compiled).

        Same equations and arguments as :meth:`ConstrainedSystem.accelerations`;
        the elimination is described in :mod:`ballctl.plants.kernels.ball_plate`.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        u : array_like, shape (..., 2)
            Plate angles in rad.
        stabilization : (float, float) or None
            Baumgarte gains ``(a, b)`` in 1/s.

        Returns
        -------
        xdd : ndarray, shape (..., 5)
        lam : ndarray, shape (..., 2)
        """
        a, b = (0.0, 0.0) if stabilization is None else (float(stabilization[0]), float(stabilization[1]))
        lead, (xs, xds, us) = as_stacks([x, xd, u], [5, 5, 2])
        xdd, lam = _kernels.accelerations_batch(xs, xds, us, self._kernel_parameters, a, b)
        return restore(xdd, lead), restore(lam, lead)

    def contact_forces(self, x, xd, u) -> tuple[np.ndarray, np.ndarray]:
        """Force of the plate on the ball at the contact: the normal force and the friction force.

        From the ball's Newton equation in the plate frame (treated, as the
        quasi-static model does, as inertial with gravity ``g_plate``):
        ``F = m (a_G - g_plate)``, ``a_G = (xdd_0, xdd_1, 0)`` from the exact
        (unstabilized) :meth:`accelerations`. Hence ``N = m g cos(alpha)
        cos(beta)`` and the friction force is ``-lam``; rolling without
        slipping needs a friction coefficient of at least
        :func:`~ballctl.plants.base.friction_coefficient_required`.

        Parameters
        ----------
        x : array_like, shape (..., 5)
            Coordinates (SI units, rad).
        xd : array_like, shape (..., 5)
            Velocities.
        u : array_like, shape (..., 2)
            Plate angles in rad.

        Returns
        -------
        normal : ndarray, shape (...)
            Normal force N in N (along the plate normal, > 0 while pressing).
        tangential : ndarray, shape (..., 2)
            Friction force in N, plate axes x and y.
        """
        lead, (xs, xds, us) = as_stacks([x, xd, u], [5, 5, 2])
        F = restore(_kernels.contact_forces_batch(xs, xds, us, self._kernel_parameters), lead)
        return F[..., 2].copy(), F[..., :2].copy()

    def chart_margin(self, x) -> np.ndarray:
        """``cos(lean) - cos(LEAN_LIMIT)``: positive while the Z-X-Y chart is usable.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        """
        return np.cos(np.asarray(x)[..., 3]) - np.cos(LEAN_LIMIT)

    def rechart(self, x, xd) -> tuple[np.ndarray, np.ndarray]:
        """The same physical state in a fresh chart with lean = roll = 0.

        The ball is isotropic, so its body axes may be re-chosen at any
        instant without changing the physics: the new body frame is
        ``R_rel_new = Rz(yaw)`` (same yaw), the contact point and the angular
        velocity in the plate frame are unchanged, and the new angle rates
        follow from ``w = (lean' cos yaw - roll' sin yaw, lean' sin yaw +
        roll' cos yaw, yaw')``. Used by :func:`ballctl.simulate` with
        ``options=SimulationOptions(rechart=True)`` to run past the chart's singularity.

        Parameters
        ----------
        x, xd : array_like, shape (5,)
            Coordinates and velocities of one state.
        """
        n = self.n_coordinates
        y = np.concatenate([np.asarray(x, dtype=float).reshape(n), np.asarray(xd, dtype=float).reshape(n)])
        _kernels.rechart(y, n)   # the one formula, shared with the closed loops' keep_chart
        return y[:n], y[n:]

    def rolling_velocities(self, x, contact_velocity, spin) -> np.ndarray:
        """Full velocity ``xd`` from the contact velocity and the normal spin.

        Inverts eqs. (45)-(46): ``lean' = (vx sin(yaw) - vy cos(yaw))/R``,
        ``roll' = (vx cos(yaw) + vy sin(yaw))/(R cos(lean))``,
        ``yaw' = spin - roll' sin(lean)``. Shapes broadcast over a leading batch axis.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        contact_velocity : array_like, shape (..., 2)
            Contact-point velocity in the plate frame, m/s.
        spin : float or array_like
            Spin about the plate normal, rad/s.
        """
        x = np.asarray(x)
        v = np.asarray(contact_velocity)
        R = self.params.radius
        cps, sps = _cs(x[..., 2])
        cph, sph = _cs(x[..., 3])
        dphi = (v[..., 0] * sps - v[..., 1] * cps) / R
        dth = (v[..., 0] * cps + v[..., 1] * sps) / (R * cph)
        dpsi = spin - dth * sph
        return np.stack([v[..., 0], v[..., 1], dpsi, dphi, dth], axis=-1)
