r"""The ball-plate with a truly moving plate: exact kinematics of a turning plate.

The quasi-static model (:class:`~ballctl.BallPlate`, Agúndez et al. 2024,
section 3.1) lets the plate angles set the direction of gravity in the plate
frame and drops the plate's angular velocity and acceleration. Here the ball's
kinetic energy and Newton-Euler equations are written in the inertial frame,
so the plate's rates enter exactly (the two-body method of the paper's
appendix B, eqs. (90)-(115), with body 2 in motion).

Frames and coordinates
----------------------
The plate orientation is :math:`R_p = R_x(\alpha) R_y(\beta) R_z(\gamma)`
(eq. 33 with an optional spin :math:`\gamma` about the plate normal, for
turntable rigs). The pivot is the inertial origin and sits ``pivot_depth``
:math:`d` below the plate's top surface, so a point with plate coordinates
:math:`r` is at :math:`R_p (r + d\,e_z)`. The ball keeps the coordinates of
:class:`~ballctl.BallPlate` (contact point and Z-X-Y angles *relative to the
plate*); the plate angles are appended:

``x = (contact_x, contact_y, yaw, lean, roll, alpha, beta[, plate_spin])``.

Kinematics (all vectors in plate components). Plate angular velocity
:math:`\Omega = G_p(q_p)\dot q_p` with

.. math::

    \Omega = \dot\alpha\,(c_\gamma c_\beta, -s_\gamma c_\beta, s_\beta)
           + \dot\beta\,(s_\gamma, c_\gamma, 0) + \dot\gamma\,(0, 0, 1).

Ball centre :math:`s = (x_C, y_C, R + d)`, relative velocity
:math:`\dot s = (\dot x_C, \dot y_C, 0)`; absolute centre velocity
:math:`v = \dot s + \Omega\times s = H\dot x`; ball angular velocity
:math:`\omega_b = w + \Omega = G\dot x` with :math:`w` the relative one of
:class:`~ballctl.BallPlate`. Rolling without slipping compares the ball's
material point at the contact with the plate's point there:
:math:`(\dot s + \Omega\times s) + (w + \Omega)\times(-R e_z) - \Omega\times(s - R e_z)
= \dot s - w\times R e_z = 0`, so the constraints (43)-(44) are *unchanged*
and do not involve the plate coordinates.

Accelerations: :math:`a = H\ddot x + h`, :math:`\dot\omega_b^{abs} = G\ddot x + g_v` with

.. math::

    h = (\dot G_p\dot q_p)\times s + 2\Omega\times\dot s + \Omega\times(\Omega\times s),
    \qquad g_v = \dot G_{rel}\dot q_a + \dot G_p\dot q_p + \Omega\times w .

Projecting Newton's and Euler's equations of the ball (a sphere: no
gyroscopic term :math:`\omega\times I\omega`) with :math:`H^T`, :math:`G^T`:

.. math::

    M_{ball} = m H^T H + I G^T G, \qquad
    Q_{ball} = m H^T (g_p - h) - I G^T g_v,\qquad
    g_p = R_p^T (0, 0, -g).

Two ways to drive the plate coordinates
---------------------------------------
:class:`MovingPlateBallPlate` (prescribed plate motion): the inputs are the
plate's angular accelerations :math:`u = \ddot q_p`. The plate rows are
:math:`\ddot q_p = u` exactly; the ball rows carry the coupling to the right
side, so M stays symmetric and block diagonal:

.. math::

    M = \begin{pmatrix} M_{bb} & 0 \\ 0 & I \end{pmatrix},\qquad
    Q = \begin{pmatrix} Q_{ball,b} - M_{bp} u \\ u \end{pmatrix}.

:class:`ServoPlateBallPlate` (two bodies): the plate is a rigid body with
inertia tensor :math:`J` about the pivot (centre of mass on the pivot, so no
gravity torque), driven on each gimbal axis by a position servo whose inputs
are the commanded plate angles :math:`u = q_{p,cmd}`:

.. math::

    M = M_{ball} + \begin{pmatrix}0&0\\0&G_p^T J G_p\end{pmatrix},\qquad
    Q = Q_{ball} + \begin{pmatrix}0\\ -G_p^T(J\dot G_p\dot q_p + \Omega\times J\Omega) + \tau\end{pmatrix},

.. math::

    \tau_i = \tau_{max}\tanh\!\Big(\frac{J_i k_v(r_i - \dot q_i)}{\tau_{max}}\Big),\quad
    r_i = \dot q_{max}\tanh\!\Big(\frac{k_p (u_i - q_i)}{\dot q_{max}}\Big),\quad
    k_p = \frac{\omega_s}{2\zeta},\; k_v = 2\zeta\omega_s,

which is :math:`J_i(\omega_s^2 (u_i - q_i) - 2\zeta\omega_s\dot q_i)` for small
signals: a second-order servo of bandwidth :math:`\omega_s` and damping
:math:`\zeta`, with smooth (complex-step safe) torque and slew limits. The
ball's reaction on the plate enters through the full :math:`M_{ball}, Q_{ball}`.
A constant ``ServoParameters.set_point_offset`` :math:`\delta` (plate level or
servo zero error) replaces :math:`u_i` by :math:`u_i + \delta_i` on the two tilt
axes: the servo regulates the plate to :math:`u + \delta`.

Rolling resistance
------------------
With ``ball.rolling_resistance`` :math:`c > 0` the contact exerts the couple
:math:`\tau = -c N R\,w_t/\sqrt{|w_t|^2 + \varepsilon^2}` on the ball and
:math:`-\tau` on the plate, :math:`w_t` the plate-plane part of the ball's
angular velocity relative to the plate, :math:`N` the normal contact force,
:math:`\varepsilon = 10^{-4}\,\mathrm{m/s}/R`; it adds
:math:`G_{rel}^T\tau` to the ball rows of Q (the plate rows' shares cancel).
N comes from the ball's Newton equation: exact for the prescribed plate, to
:math:`O(c)` for the servo plate (details in
:mod:`ballctl.plants.kernels.moving_plate`).

Contact forces
--------------
:meth:`~_MovingPlateBase.contact_forces` returns the plate's force on the ball,
:math:`F = m(H\ddot x + h - g_p)` in plate axes (normal and friction parts).

Both plants are :class:`~ballctl.ConstrainedSystem` s; every method accepts a
single state or a batch with a leading axis and is complex-step safe.

References
----------
A.G. Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, sec. 3.1 and appendix B, eqs. (33), (40)-(48), (90)-(115).
"""

from __future__ import annotations

from dataclasses import replace, dataclass, field

import numpy as np

from .._errors import ParameterError, ParameterTypeError, ShapeError
from .._validation import as_array, check_finite_scalar, check_positive
from ..system import ConstrainedSystem
from .kernels import moving_plate as _kernels
from .kernels import native
from .kernels.batching import as_stacks, restore
from .ball_plate import BallPlate, BallPlateParameters

__all__ = ["MovingPlateParameters", "ServoParameters", "MovingPlateBallPlate", "ServoPlateBallPlate"]

BALL_NAMES = ("contact_x", "contact_y", "yaw", "lean", "roll")
PLATE_NAMES = ("alpha", "beta", "plate_spin")
_MAX_OFFSET = 0.2  # rad: bound of |ServoParameters.set_point_offset| (a level or zero error, not a command)


@dataclass(frozen=True, kw_only=True)
class MovingPlateParameters:
    """Parameters of the moving-plate ball-plate.

    Attributes
    ----------
    ball : BallPlateParameters
        Ball mass (kg), radius (m), inertia (kg m^2), gravity (m/s^2) and
        rolling resistance (dimensionless; the couple acts between ball and plate).
    pivot_depth : float
        Distance d in m from the pivot up to the plate's top surface (>= 0,
        < 1 m); the ball centre sits at height ``R + d`` above the pivot in
        the plate frame.
    with_spin : bool
        Add the plate's spin gamma about its normal as a third plate
        coordinate (``R_p = Rx(alpha) Ry(beta) Rz(gamma)``, turntable rigs).
    """

    ball: BallPlateParameters = field(default_factory=BallPlateParameters)
    pivot_depth: float = 0.0
    with_spin: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.ball, BallPlateParameters):
            raise ParameterTypeError(f"ball must be a BallPlateParameters, got {type(self.ball).__name__}")
        d = check_finite_scalar(self.pivot_depth, "pivot_depth")
        if not 0.0 <= d < 1.0:
            raise ParameterError(f"pivot_depth must lie in [0, 1) m, got {self.pivot_depth!r}")
        if not isinstance(self.with_spin, bool):
            raise ParameterError(f"with_spin must be True or False, got {self.with_spin!r}")

    @property
    def n_plate(self) -> int:
        """Number of plate coordinates (2, or 3 with the spin)."""
        return 3 if self.with_spin else 2

    def as_dict(self) -> dict:
        """Flat dictionary of the resolved parameters (for files and reports); ball keys as in the ball's."""
        return {**self.ball.as_dict(), "pivot_depth": float(self.pivot_depth), "with_spin": self.with_spin}


@dataclass(frozen=True, kw_only=True)
class ServoParameters:
    """A second-order position servo on each plate axis, and the plate's inertia.

    Attributes
    ----------
    bandwidth : float
        Natural frequency omega_s of the servo loop in rad/s (> 0).
    damping : float
        Damping ratio zeta (> 0).
    plate_inertia : (float, float, float)
        Principal moments (J_xx, J_yy, J_zz) of the plate (with its gimbal)
        about the pivot in kg m^2, plate axes (each > 0). The centre of mass is
        on the pivot. The default is a 0.6 m square aluminium plate of ~2 kg.
    max_torque : float or None
        Servo torque limit in N m (> 0), smooth ``tanh`` saturation; None: unlimited.
    max_rate : float or None
        Slew limit in rad/s (> 0), smooth ``tanh`` saturation of the rate
        set-point; None: unlimited.
    set_point_offset : (float, float)
        Constant angles ``(delta_alpha, delta_beta)`` in rad added to the
        commanded tilt angles (a plate level error or a servo zero error):
        the servos regulate the plate to ``u + set_point_offset``. Each finite
        with ``|.| < 0.2`` rad; the spin servo of a turntable has none.
    """

    bandwidth: float = 60.0
    damping: float = 0.8
    plate_inertia: tuple[float, float, float] = (0.06, 0.06, 0.12)
    max_torque: float | None = None
    max_rate: float | None = None
    set_point_offset: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        check_positive(self.bandwidth, "bandwidth", "rad/s")
        check_positive(self.damping, "damping")
        inertia = as_array(self.plate_inertia, "plate_inertia", unit="kg m^2", finite=False)
        if inertia.shape != (3,):
            raise ShapeError(f"plate_inertia must have 3 entries (J_xx, J_yy, J_zz) in kg m^2, got shape "
                             f"{inertia.shape}")
        inertia = tuple(float(v) for v in inertia)
        for i, value in enumerate(inertia):
            check_positive(value, f"plate_inertia[{i}]", "kg m^2")
        if 2.0 * max(inertia) > sum(inertia) * (1.0 + 1e-12):
            raise ParameterError(f"plate_inertia must satisfy the triangle inequality of a rigid body (each moment "
                                 f"<= the sum of the other two, to 1e-12), got {list(inertia)} kg m^2")
        object.__setattr__(self, "plate_inertia", tuple(float(v) for v in inertia))
        if self.max_torque is not None:
            check_positive(self.max_torque, "max_torque", "N m")
        if self.max_rate is not None:
            check_positive(self.max_rate, "max_rate", "rad/s")
        offset = as_array(self.set_point_offset, "set_point_offset", unit="rad")
        if offset.shape != (2,):
            raise ShapeError(f"set_point_offset must have 2 entries (delta_alpha, delta_beta) in rad, got shape "
                             f"{offset.shape}")
        if np.any(np.abs(offset) >= _MAX_OFFSET):
            raise ParameterError(f"set_point_offset must lie in (-{_MAX_OFFSET}, {_MAX_OFFSET}) rad on each axis (a "
                                 f"level or zero error, not a command), got {[float(v) for v in offset]} rad")
        object.__setattr__(self, "set_point_offset", tuple(float(v) for v in offset))

    @property
    def position_gain(self) -> float:
        """``k_p = omega_s / (2 zeta)`` in 1/s: rate set-point per unit angle error."""
        return self.bandwidth / (2.0 * self.damping)

    @property
    def rate_gain(self) -> float:
        """``k_v = 2 zeta omega_s`` in 1/s: angular acceleration per unit rate error."""
        return 2.0 * self.damping * self.bandwidth

    def as_dict(self) -> dict:
        """Flat dictionary of the parameters (for files and reports)."""
        return {"bandwidth": float(self.bandwidth), "damping": float(self.damping),
                "plate_inertia": list(self.plate_inertia), "max_torque": self.max_torque, "max_rate": self.max_rate,
                "set_point_offset": list(self.set_point_offset)}


# ---------------------------------------------------------------- pure functions
def plate_kinematics(qp, qpd, gravity: float):
    r"""Plate angular velocity and gravity in the plate frame.

    Parameters
    ----------
    qp, qpd : ndarray, shape (..., n_p)
        Plate angles ``(alpha, beta[, gamma])`` in rad and their rates in rad/s.
    gravity : float
        g in m/s^2.

    Returns
    -------
    Gp : ndarray, shape (..., 3, n_p)
        ``Omega = Gp @ qpd`` (plate components).
    omega : ndarray, shape (..., 3)
        Plate angular velocity Omega in rad/s.
    Gpdot_qd : ndarray, shape (..., 3)
        :math:`\dot G_p \dot q_p`, the velocity part of the angular acceleration.
    g_plate : ndarray, shape (..., 3)
        :math:`R_p^T (0, 0, -g)` in m/s^2.
    """
    qp = np.asarray(qp)
    n_p = qp.shape[-1]
    lead, (qs, qds) = as_stacks([qp, qpd], [n_p, n_p])
    return tuple(restore(a, lead) for a in _kernels.plate_kinematics_batch(qs, qds, float(gravity)))


class _MovingPlateBase(ConstrainedSystem):
    """Shared kinematics of the moving-plate plants (not a plant by itself)."""

    input_suffix = ""
    batched = True

    def __init__(self, params: MovingPlateParameters | None = None) -> None:
        if params is None:
            params = MovingPlateParameters()
        if not isinstance(params, MovingPlateParameters):
            raise ParameterTypeError(f"params must be a MovingPlateParameters, got {type(params).__name__}")
        self.params = params
        self._ball_plate = BallPlate(params.ball)
        n_p = params.n_plate
        self.n_plate = n_p
        plate = PLATE_NAMES[:n_p]
        b = params.ball
        # layout: ballctl.plants.kernels.moving_plate (N_PARAMETERS = 17); the servo fills 6..13 and 15..16
        self._kernel_parameters = np.array([b.mass, b.radius, b.ball_inertia, b.gravity, params.pivot_depth, n_p,
                                            0.0, 0, 0, 0, 0, 0, 0, 0, b.rolling_resistance, 0.0, 0.0], dtype=float)
        super().__init__(n_coordinates=5 + n_p, n_holonomic=0, n_nonholonomic=2, n_inputs=n_p,
                         coordinate_names=BALL_NAMES + plate,
                         input_names=tuple(f"{p}{self.input_suffix}" for p in plate))

    # ------------------------------------------------------------ kinematics
    def quasi_static(self) -> BallPlate:
        """The quasi-static :class:`~ballctl.BallPlate` with the same ball."""
        return BallPlate(self.params.ball)

    def _terms(self, x, xd):
        """``H, G (..., 3, n)``, ``h, g_v, g_plate, Omega (..., 3)``, ``Gp``, ``Gdot_p qd_p``, ``s`` (kernel)."""
        n = self.n_coordinates
        lead, (xs, xds) = as_stacks([x, xd], [n, n])
        return tuple(restore(a, lead) for a in _kernels.terms_batch(xs, xds, self._kernel_parameters))

    def _ball_mass_and_forces(self, x, xd):
        n = self.n_coordinates
        lead, (xs, xds) = as_stacks([x, xd], [n, n])
        M, Q = _kernels.ball_mass_and_forces_batch(xs, xds, self._kernel_parameters)
        return restore(M, lead), restore(Q, lead)

    def plate_angular_velocity(self, x, xd) -> np.ndarray:
        """Plate angular velocity Omega in plate components, rad/s, shape (..., 3)."""
        x = np.asarray(x)
        return plate_kinematics(x[..., 5:], np.asarray(xd)[..., 5:], self.params.ball.gravity)[1]

    def gravity_in_plate(self, x) -> np.ndarray:
        """Gravity ``R_p^T (0, 0, -g)`` in the plate frame, m/s^2, shape (..., 3)."""
        x = np.asarray(x)
        return plate_kinematics(x[..., 5:], 0.0 * x[..., 5:], self.params.ball.gravity)[3]

    def plate_rotation(self, x) -> np.ndarray:
        """Plate orientation ``R_p = Rx(alpha) Ry(beta) Rz(gamma)``, shape (..., 3, 3)."""
        x = np.asarray(x, dtype=float)
        ca, sa = np.cos(x[..., 5]), np.sin(x[..., 5])
        cb, sb = np.cos(x[..., 6]), np.sin(x[..., 6])
        g = x[..., 7] if self.n_plate == 3 else 0.0 * ca
        cg, sg = np.cos(g), np.sin(g)
        one, zero = np.ones_like(ca), np.zeros_like(ca)
        Rx = np.stack([np.stack([one, zero, zero], -1), np.stack([zero, ca, -sa], -1),
                       np.stack([zero, sa, ca], -1)], -2)
        Ry = np.stack([np.stack([cb, zero, sb], -1), np.stack([zero, one, zero], -1),
                       np.stack([-sb, zero, cb], -1)], -2)
        Rz = np.stack([np.stack([cg, -sg, zero], -1), np.stack([sg, cg, zero], -1),
                       np.stack([zero, zero, one], -1)], -2)
        return Rx @ Ry @ Rz

    def ball_centre_inertial(self, x) -> np.ndarray:
        """Ball centre in the inertial frame (origin at the pivot), m, shape (..., 3)."""
        x = np.asarray(x, dtype=float)
        p = self.params
        s = np.stack([x[..., 0], x[..., 1], np.full(x.shape[:-1], p.ball.radius + p.pivot_depth)], axis=-1)
        return np.einsum("...ij,...j->...i", self.plate_rotation(x), s)

    def ball_angular_velocity(self, x, xd) -> np.ndarray:
        """Absolute angular velocity of the ball in plate components, rad/s, shape (..., 3)."""
        _, G, *_ = self._terms(x, xd)
        return np.einsum("...ij,...j->...i", G, np.asarray(xd))

    def ball_energy(self, x, xd) -> np.ndarray:
        r"""Mechanical energy of the ball in J: :math:`\tfrac12 m|v|^2 + \tfrac12 I|\omega_b|^2 - m g_p\cdot s`.

        Inertial kinetic energy plus the gravitational potential of the
        centre (zero at the pivot's height).
        """
        b = self.params.ball
        xd = np.asarray(xd)
        H, G, _, _, g_plate, _, _, _, s = self._terms(x, xd)
        v = np.einsum("...ij,...j->...i", H, xd)
        w = np.einsum("...ij,...j->...i", G, xd)
        return (0.5 * b.mass * np.sum(v * v, axis=-1) + 0.5 * b.ball_inertia * np.sum(w * w, axis=-1)
                - b.mass * np.sum(g_plate * s, axis=-1))

    def drive_force(self, x, xd, xdd) -> np.ndarray:
        r"""Generalized force the plate drive exerts on the ball, per plate coordinate, shape (..., n_p).

        :math:`(M_{ball}\ddot x - Q_{ball})_p` of the ball's own equations (the
        contact reactions have no plate components, see the module
        docstring); its power :math:`\tau\cdot\dot q_p` is the rate of change
        of :meth:`ball_energy`. In N m for the tilt angles. With rolling
        resistance it includes the couple's plate share :math:`G_p^T\tau_{rr}`,
        and the power balance gains the dissipation :math:`\tau_{rr}\cdot w \le 0`:
        :math:`\dot E_{ball} = \tau\cdot\dot q_p + \tau_{rr}\cdot w`.
        """
        M, Q = self._ball_mass_and_forces(x, xd)
        return (np.einsum("...ij,...j->...i", M, np.asarray(xdd)) - Q)[..., 5:]

    # ------------------------------------------------------------ interface
    kernels = _kernels
    tracked_coordinates = ("contact_x", "contact_y")

    @property
    def physical_parameters(self) -> dict[str, float]:
        """The ball's parameters a Monte Carlo run may draw: ``mass`` (kg), ``radius`` (m), ``inertia`` (kg m^2)."""
        b = self.params.ball
        return {"mass": b.mass, "radius": b.radius, "inertia": b.ball_inertia}

    def with_parameters(self, **changes: float):
        """The same plant (plate and servos kept) with some of the ball's :attr:`physical_parameters` replaced.

        Parameters
        ----------
        **changes : float
            ``mass`` in kg, ``radius`` in m, ``inertia`` in kg m^2.
        """
        if not changes:
            return self
        params = replace(self.params, ball=replace(self.params.ball, **changes))
        return type(self)(params, self.servo) if hasattr(self, "servo") else type(self)(params)

    @property
    def kernel_parameters(self) -> np.ndarray:
        """Parameters packed for :mod:`ballctl.plants.kernels.moving_plate`, shape (17,).

        ``(mass kg, radius m, inertia kg m^2, gravity m/s^2, pivot_depth m, n_plate, kind, J_xx, J_yy,
        J_zz kg m^2, position_gain 1/s, rate_gain 1/s, max_torque N m, max_rate rad/s, rolling_resistance,
        set_point_offset (2) rad)``; the servo entries are 0 for the prescribed plate.
        """
        return self._kernel_parameters

    def contact_forces(self, x, xd, u) -> tuple[np.ndarray, np.ndarray]:
        r"""Force of the plate on the ball at the contact: the normal force and the friction force.

        From the ball's Newton equation, :math:`F = m(a - g_p)` with
        :math:`a = H\ddot x + h` the inertial acceleration of the ball centre in
        plate components and :math:`\ddot x` the exact (unstabilized)
        :meth:`accelerations`; the normal part is :math:`F_z`, the friction force
        :math:`F_{xy}` (see :func:`~ballctl.plants.base.friction_coefficient_required`).

        Parameters
        ----------
        x, xd : array_like, shape (..., n)
            Coordinates (m, rad) and velocities.
        u : array_like, shape (..., n_plate)
            Plate inputs (see the class docstring).

        Returns
        -------
        normal : ndarray, shape (...)
            Normal force N in N (along the plate normal, > 0 while pressing).
        tangential : ndarray, shape (..., 2)
            Friction force in N, plate axes x and y.
        """
        n = self.n_coordinates
        lead, (xs, xds, us) = as_stacks([x, xd, u], [n, n, self.n_plate])
        xdd, _ = self._accelerations(xs, xds, us, 0.0, 0.0)
        F = restore(_kernels.contact_forces_batch(xs, xds, xdd, self._kernel_parameters), lead)
        return F[..., 2].copy(), F[..., :2].copy()

    def mass_and_forces(self, x, xd, u) -> tuple[np.ndarray, np.ndarray]:
        """``M(x)`` and ``Q(x, xd, u)`` from one kernel call (cheaper than :meth:`mass_matrix` and :meth:`forces`).

        Parameters
        ----------
        x, xd : array_like, shape (..., n)
            Coordinates (m, rad) and velocities.
        u : array_like, shape (..., n_plate)
            Plate inputs (see the class docstring).

        Returns
        -------
        M : ndarray, shape (..., n, n)
        Q : ndarray, shape (..., n)
        """
        n = self.n_coordinates
        lead, (xs, xds, us) = as_stacks([x, xd, u], [n, n, self.n_plate])
        M, Q = _kernels.mass_and_forces_batch(xs, xds, us, self._kernel_parameters)
        return restore(M, lead), restore(Q, lead)

    def mass_matrix(self, x, u=None) -> np.ndarray:
        """Mass matrix ``M(x)``, shape (..., n, n) (see the class docstring)."""
        x = np.asarray(x)
        zero = np.zeros(x.shape, dtype=np.result_type(x, float))
        return self.mass_and_forces(x, zero, np.zeros(x.shape[:-1] + (self.n_plate,)))[0]

    def forces(self, x, xd, u) -> np.ndarray:
        """Generalized forces ``Q(x, xd, u)``, shape (..., n) (see the class docstring)."""
        return self.mass_and_forces(x, xd, u)[1]

    def accelerations(self, x, xd, u, *, stabilization: tuple[float, float] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`ConstrainedSystem.accelerations`, by the compiled structured solve.

        See :mod:`ballctl.plants.kernels.moving_plate`; accepts stacks ``(..., n)``.
        """
        n = self.n_coordinates
        a, b = (0.0, 0.0) if stabilization is None else (float(stabilization[0]), float(stabilization[1]))
        lead, (xs, xds, us) = as_stacks([x, xd, u], [n, n, self.n_plate])
        xdd, lam = self._accelerations(xs, xds, us, a, b)
        return restore(xdd, lead), restore(lam, lead)

    def _accelerations(self, xs, xds, us, a, b) -> tuple[np.ndarray, np.ndarray]:
        """The kernels' accelerations of stacks ``(K, n)`` of one dtype (real: through the C entry point)."""
        if xs.dtype == np.float64:
            entry = native.entry_points(_kernels).accelerations
            return _kernels.accelerations_batch(xs, xds, us, self._kernel_parameters, a, b, entry)
        return _kernels.accelerations_batch_direct(xs, xds, us, self._kernel_parameters, a, b)

    def holonomic(self, x) -> np.ndarray:
        """No holonomic constraints: shape (..., 0)."""
        x = np.asarray(x)
        return np.zeros(x.shape[:-1] + (0,), dtype=np.result_type(x, float))

    def constraint_jacobian(self, x) -> np.ndarray:
        """Rolling constraints (43)-(44) in plate-relative coordinates, shape (..., 2, n); zero plate columns.

        The rolling constraint is written relative to the plate, so it is
        exactly :meth:`BallPlate.constraint_jacobian` of the ball coordinates.
        """
        x = np.asarray(x)
        D = np.zeros(x.shape[:-1] + (2, self.n_coordinates), dtype=np.result_type(x, float))
        D[..., :, :5] = self._ball_plate.constraint_jacobian(x[..., :5])
        return D

    def constraint_bias(self, x, xd) -> np.ndarray:
        """Analytic ``Ddot(x, xd) @ xd``, shape (..., 2): that of :class:`BallPlate` (no plate terms)."""
        x, xd = np.asarray(x), np.asarray(xd)
        return self._ball_plate.constraint_bias(x[..., :5], xd[..., :5])

    def chart_margin(self, x) -> np.ndarray:
        """``cos(lean) - cos(LEAN_LIMIT)``: positive while the Z-X-Y chart is usable."""
        return self._ball_plate.chart_margin(np.asarray(x)[..., :5])

    def rechart(self, x, xd) -> tuple[np.ndarray, np.ndarray]:
        """The same physical state in a fresh ball chart (lean = roll = 0), see :meth:`BallPlate.rechart`."""
        x = np.array(x, dtype=float)
        xd = np.array(xd, dtype=float)
        xb, xdb = self._ball_plate.rechart(x[:5], xd[:5])
        x[:5], xd[:5] = xb, xdb
        return x, xd


class MovingPlateBallPlate(_MovingPlateBase):
    r"""Ball on a plate whose motion is prescribed: inputs are the plate's angular accelerations.

    n = 7 coordinates ``(contact_x, contact_y, yaw, lean, roll, alpha, beta)``
    (8 with ``plate_spin``), l = 2 rolling constraints, inputs
    ``(alpha_acc, beta_acc[, plate_spin_acc])`` in rad/s^2 with
    :math:`\ddot q_p = u` exactly (see the module docstring for M and Q).

    Parameters
    ----------
    params : MovingPlateParameters, optional

    Examples
    --------
    >>> import numpy as np, ballctl
    >>> from ballctl.plants.ball_plate_moving import MovingPlateBallPlate
    >>> plant = MovingPlateBallPlate()
    >>> x = np.zeros(7); xd = np.zeros(7)
    >>> ballctl.check_system(plant, x, xd, [0.1, -0.2])
    []
    """

    name = "ball_plate_moving"
    input_suffix = "_acc"


class ServoPlateBallPlate(_MovingPlateBase):
    r"""Two bodies: the ball and a plate with inertia driven by position servos (commanded angles).

    n = 7 (or 8) coordinates as :class:`MovingPlateBallPlate`; inputs the
    commanded plate angles ``(alpha_cmd, beta_cmd[, plate_spin_cmd])`` in rad,
    which is what hardware takes. See the module docstring for the servo law.

    Parameters
    ----------
    params : MovingPlateParameters, optional
    servo : ServoParameters, optional
    """

    name = "ball_plate_servo"
    input_suffix = "_cmd"

    def __init__(self, params: MovingPlateParameters | None = None, servo: ServoParameters | None = None) -> None:
        super().__init__(params)
        if servo is None:
            servo = ServoParameters()
        if not isinstance(servo, ServoParameters):
            raise ParameterTypeError(f"servo must be a ServoParameters, got {type(servo).__name__}")
        self.servo = servo
        self._J = np.diag(servo.plate_inertia)
        self._axis_inertia = np.array(servo.plate_inertia[: self.n_plate])
        kp = self._kernel_parameters.copy()
        kp[6] = 1.0
        kp[7:10] = servo.plate_inertia
        kp[10] = servo.position_gain
        kp[11] = servo.rate_gain
        kp[12] = servo.max_torque or 0.0
        kp[13] = servo.max_rate or 0.0
        kp[15:17] = servo.set_point_offset
        self._kernel_parameters = kp
        self._offset = np.zeros(self.n_plate)
        self._offset[:2] = servo.set_point_offset

    def servo_torque(self, x, xd, u) -> np.ndarray:
        """Servo torques ``tau`` on the plate axes in N m, shape (..., n_p), regulating to ``u + set_point_offset``.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        u : array_like, shape (..., n_p)
            Commanded plate angles in rad.
        """
        n = self.n_coordinates
        lead, (xs, xds, us) = as_stacks([x, xd, u], [n, n, self.n_plate])
        return restore(_kernels.servo_torque_batch(xs, xds, us, self._kernel_parameters), lead)

    def commands_for_torque(self, x, xd, tau) -> np.ndarray:
        """Invert :meth:`servo_torque`: the commanded angles that produce ``tau``, shape (..., n_p).

        The set point that produces ``tau`` minus ``servo.set_point_offset``
        (the command the servo needs). Raises ``ValueError`` when the torque or
        the implied rate set-point reaches a servo limit.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        tau : array_like, shape (..., n_p)
            Servo torques in N m.
        """
        x, xd, tau = np.asarray(x, float), np.asarray(xd, float), np.asarray(tau, float)
        sv = self.servo
        if sv.max_torque is not None:
            if np.any(np.abs(tau) >= sv.max_torque):
                raise ParameterError(f"the required torque {np.abs(tau).max():.4g} N m reaches max_torque "
                                 f"= {sv.max_torque} N m")
            tau = sv.max_torque * np.arctanh(tau / sv.max_torque)
        rate = xd[..., 5:] + tau / (self._axis_inertia * sv.rate_gain)
        if sv.max_rate is not None:
            if np.any(np.abs(rate) >= sv.max_rate):
                raise ParameterError(f"the required rate set-point {np.abs(rate).max():.4g} rad/s reaches "
                                 f"max_rate = {sv.max_rate} rad/s")
            rate = sv.max_rate * np.arctanh(rate / sv.max_rate)
        return x[..., 5:] + rate / sv.position_gain - self._offset

    def plate_kinetic_energy(self, x, xd) -> np.ndarray:
        """Kinetic energy of the plate ``1/2 Omega^T J Omega`` in J.

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        """
        Om = self.plate_angular_velocity(x, xd)
        return 0.5 * np.einsum("...i,ij,...j->...", Om, self._J, Om)

    def plate_forces(self, x, xd) -> np.ndarray:
        """Plate gyroscopic and velocity terms ``-G_p^T (J Gdot_p qd_p + Omega x J Omega)``, shape (..., n_p).

        Parameters
        ----------
        x : array_like, shape (..., n)
            Coordinates (SI units, rad); a leading batch axis is allowed where the plant is batched.
        xd : array_like, shape (..., n)
            Velocities.
        """
        n = self.n_coordinates
        lead, (xs, xds) = as_stacks([x, xd], [n, n])
        return restore(_kernels.plate_forces_batch(xs, xds, self._kernel_parameters), lead)

