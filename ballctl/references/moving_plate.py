r"""Dynamic inversion on the exact moving-plate model: plate angles that respect their own rates.

On a turning plate (:mod:`ballctl.plants.ball_plate_moving`) the contact point
no longer accelerates at :math:`k_b g_p[:2]`: Newton's and Euler's equations of
the ball in the plate frame (rolling :math:`\dot s = w\times R e_z`, absolute
angular velocity :math:`\omega_b = w + \Omega`, Euler's equation
:math:`I(\dot\omega_b + \Omega\times\omega_b) = -R e_z\times F`) give, after
eliminating the contact force :math:`F = m(a - g_p)`,

.. math::

    \ddot s_\parallel = k_b\,(g_p - c)_\parallel
        - \frac{I R}{I + mR^2}\big[(\Omega\times\omega_b + \dot\Omega)\times e_z\big]_\parallel,
    \qquad c = \dot\Omega\times s + 2\Omega\times\dot s + \Omega\times(\Omega\times s),

.. math::

    \dot\sigma = -(\Omega\times\omega_b)_z, \qquad \sigma = \omega_{b,z},

with :math:`s = (x_C, y_C, R + d)`, :math:`k_b = mR^2/(I + mR^2)` and
:math:`\Omega = G_p(\alpha, \beta)(\dot\alpha, \dot\beta)`,
:math:`\dot\Omega = G_p(\ddot\alpha, \ddot\beta) + \dot G_p(\dot\alpha,\dot\beta)`.
The in-plane components of :math:`\omega_b` follow from the path
(:math:`w_\parallel = (-\dot y_C, \dot x_C)/R`), so for a prescribed periodic
contact path :math:`(x_C, y_C)(t)` these are three ODE-like equations in the
unknown periodic functions :math:`\alpha, \beta` and the ball's spin
:math:`\sigma` about the plate normal (no longer conserved when the plate
turns). They are solved by Fourier collocation at N points of one period
(spectral differentiation matrices) with Gauss-Newton on the exact
complex-step Jacobian; the mean spin is prescribed (it is a free constant of
the motion). The ball's orientation then follows by integrating the rolling
kinematics once, as in :class:`~ballctl.PathMotion`.

For the servo plant the commanded angles follow from the plate's equations:
the torque the servo must supply is :math:`(M\ddot x - Q_{no\,servo})_p` and
the servo law is inverted (:meth:`ServoPlateBallPlate.commands_for_torque`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from .._derivatives import directional_derivative
from .._errors import ChartSingularityError, InfeasibleReferenceError, ParameterError, ParameterTypeError
from .._validation import check_finite_scalar, check_instance, check_integer, check_positive
from .._quaternion import cross
from ..plants.ball_plate_moving import MovingPlateBallPlate, ServoPlateBallPlate, plate_kinematics
from ..plants.kernels import moving_plate as _plate_kernels
from .base import Reference, ReferenceSample
from .circular import LEAN_LIMIT, CircularMotion
from .inversion import plate_angles_for_acceleration, require_ideal_rolling
from .paths import LissajousPath, check_path, evaluate_path, initial_ball_orientation

__all__ = ["CollocationOptions", "MovingPlateMotion", "exact_circular_motion", "spectral_derivative_matrices",
           "chebyshev_derivative_matrices"]


@dataclass(frozen=True, kw_only=True)
class CollocationOptions:
    """How :class:`MovingPlateMotion` solves for the plate angles.

    Attributes
    ----------
    n_collocation : int
        Collocation points per period of a periodic path (Fourier), or Chebyshev intervals of any other path
        (``n_collocation + 1`` Gauss-Lobatto nodes); even, >= 8.
    tol : float
        Gauss-Newton stops when the largest residual is below ``tol`` (m/s^2 and rad/s^2), > 0.
    max_iter : int
        Gauss-Newton iterations allowed, >= 1.
    """

    n_collocation: int = 64
    tol: float = 1e-11
    max_iter: int = 30

    def __post_init__(self) -> None:
        n = self.n_collocation
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 8 or n % 2:
            raise ParameterError(f"n_collocation must be an even integer >= 8, got {n!r}")
        object.__setattr__(self, "n_collocation", int(n))
        object.__setattr__(self, "tol", check_positive(self.tol, "tol"))
        object.__setattr__(self, "max_iter", check_integer(self.max_iter, "max_iter", minimum=1))


def spectral_derivative_matrices(n_points: int, period: float) -> tuple[np.ndarray, np.ndarray]:
    """Real matrices ``D1, D2`` (shape (N, N)) differentiating a periodic function sampled at N points.

    Parameters
    ----------
    n_points : int
        Number N of uniform samples over one period.
    period : float
        Period in s.

    Returns
    -------
    D1, D2 : ndarray, shape (N, N)
        First and second derivative matrices.

    Notes
    -----
    ``f' = D1 @ f`` and ``f'' = D2 @ f`` exactly for trigonometric polynomials
    of degree < N/2 (the Nyquist mode is kept as a cosine: zero first
    derivative at the samples).
    """
    n = int(n_points)
    k = np.fft.fftfreq(n, d=1.0 / n) * (2.0 * np.pi / period)
    k1 = k.copy()
    if n % 2 == 0:
        k1[n // 2] = 0.0
        k[n // 2] = np.pi * n / period
    eye = np.fft.fft(np.eye(n), axis=0)
    D1 = np.real(np.fft.ifft(1j * k1[:, None] * eye, axis=0))
    D2 = np.real(np.fft.ifft(-(k ** 2)[:, None] * eye, axis=0))
    return D1, D2


def chebyshev_derivative_matrices(n: int, t_start: float, t_end: float
                                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chebyshev-Gauss-Lobatto nodes on ``[t_start, t_end]`` and the matrices differentiating samples there.

    Parameters
    ----------
    n : int
        Polynomial degree; there are ``n + 1`` nodes, ascending, including both ends.
    t_start, t_end : float
        Interval in s.

    Returns
    -------
    nodes : ndarray, shape (n + 1,)
    D1, D2 : ndarray, shape (n + 1, n + 1)
        ``f' = D1 @ f``, ``f'' = D2 @ f`` exactly for polynomials of degree <= n
        (Trefethen, *Spectral Methods in MATLAB*, program ``cheb``).
    """
    j = np.arange(n + 1)
    x = np.cos(np.pi * j / n)
    c = np.where((j == 0) | (j == n), 2.0, 1.0) * (-1.0) ** j
    dX = x[:, None] - x[None, :]
    D = np.outer(c, 1.0 / c) / (dX + np.eye(n + 1))
    D = D - np.diag(D.sum(axis=1))
    x, D = x[::-1], D[::-1, ::-1]  # ascending
    scale = 2.0 / (t_end - t_start)
    nodes = t_start + (x + 1.0) / scale
    D1 = D * scale
    return nodes, D1, D1 @ D1


class _Chebyshev:
    """Polynomial interpolant of samples at Chebyshev-Gauss-Lobatto nodes, with derivatives."""

    def __init__(self, values: np.ndarray, t_start: float, t_end: float) -> None:
        from numpy.polynomial import chebyshev as C

        self._C = C
        n = values.shape[0] - 1
        x = np.cos(np.pi * np.arange(n + 1) / n)[::-1]
        self.a, self.b = t_start, t_end
        self.c = C.chebfit(x, values, n)

    def __call__(self, t: np.ndarray, order: int = 0) -> np.ndarray:
        C = self._C
        x = (2.0 * np.asarray(t) - (self.a + self.b)) / (self.b - self.a)
        c = C.chebder(self.c, m=order, axis=0) * (2.0 / (self.b - self.a)) ** order if order else self.c
        out = C.chebval(x, c)
        return np.moveaxis(out, -1, 0) if out.ndim > 1 else out

    def value_and_rate(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Value and first derivative at one time ``t`` (the fast path of an ODE right-hand side)."""
        if not hasattr(self, "_d1"):
            self._d1 = self._C.chebder(self.c, m=1, axis=0) * (2.0 / (self.b - self.a))
        x = (2.0 * t - (self.a + self.b)) / (self.b - self.a)
        return self._C.chebval(x, self.c), self._C.chebval(x, self._d1)


class _Fourier:
    """Trigonometric interpolant of periodic samples with derivatives up to order 3."""

    def __init__(self, values: np.ndarray, t0: float, period: float) -> None:
        n = values.shape[0]
        self.n, self.t0, self.period = n, t0, period
        c = np.fft.rfft(values, axis=0) / n
        weights = np.full(c.shape[0], 2.0)
        weights[0] = 1.0
        if n % 2 == 0:
            weights[-1] = 1.0
        self.c = c * weights.reshape((-1,) + (1,) * (values.ndim - 1))
        self.k = np.arange(c.shape[0]) * 2.0 * np.pi / period
        self.nyquist = n % 2 == 0

    def __call__(self, t: np.ndarray, order: int = 0) -> np.ndarray:
        phase = np.exp(1j * np.outer(t - self.t0, self.k))          # (K, modes)
        factor = (1j * self.k) ** order
        if self.nyquist and order % 2 == 1:
            factor = factor.copy()
            factor[-1] = 0.0
        elif self.nyquist and order:
            factor = factor.copy()
            factor[-1] = (-1) ** (order // 2) * self.k[-1] ** order
        return np.real(np.tensordot(phase * factor, self.c, axes=(1, 0)))

    def value_and_rate(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Value and first derivative at one time ``t`` (the fast path of an ODE right-hand side).

        The same sums as ``self(t)`` and ``self(t, 1)``, without their per-call set-up.
        """
        if not hasattr(self, "_rate_factor"):
            factor = 1j * self.k
            if self.nyquist:
                factor[-1] = 0.0
            self._rate_factor = factor
            self._c2 = self.c.reshape(self.c.shape[0], -1)
        phase = np.exp(1j * (t - self.t0) * self.k)
        shape = self.c.shape[1:]
        return (np.real(phase @ self._c2).reshape(shape),
                np.real((phase * self._rate_factor) @ self._c2).reshape(shape))


class MovingPlateMotion(Reference):
    r"""Reference along a contact path, by dynamic inversion of the exact moving-plate model.

    A periodic path (one with a ``period`` attribute) is solved by Fourier
    collocation over one period with the mean spin prescribed. Any other path
    is solved on ``[t0, t0 + duration]`` by Chebyshev collocation
    (``n_collocation + 1`` Gauss-Lobatto nodes) with boundary conditions: the
    plate angles equal the quasi-static ones at both ends (a path that starts
    and ends at rest starts and ends with a level plate) and the spin equals
    ``spin`` at ``t0``. Convergence is spectral for smooth paths (measured:
    contact residual 4e-13 m/s^2 with 48 intervals on a 4 s C-infinity
    rest-to-rest move) but only algebraic for piecewise-smooth paths such as
    :class:`~ballctl.WaypointPath` (spline knots, speed-ramp junctions): about
    3e-3 m/s^2 between nodes with 96 intervals (reported in ``residuals``).

    Parameters
    ----------
    plant : MovingPlateBallPlate or ServoPlateBallPlate
        Without plate spin (two plate angles). For the prescribed plant the
        reference inputs are the plate's angular accelerations; for the servo
        plant they are the commanded plate angles.
    path : callable
        ``path(t) -> (p, v, a[, jerk])`` with a ``period`` attribute in s
        (e.g. :meth:`LissajousPath.circle <ballctl.LissajousPath.circle>`, any :class:`~ballctl.LissajousPath`), or any
        other path defined on ``[t0, t0 + duration]``.
    spin : float
        Periodic path: the mean over a period; other paths: the value at ``t0``; of the ball's spin about the
        plate normal
        ``sigma = omega_b . e_z`` in rad/s (the conserved spin of the
        quasi-static model).
    duration : float
        Length in s of ``[t0, t0 + duration]`` on which the ball's orientation
        is integrated and the reference is defined.
    t0 : float
        Start time in s.
    initial_orientation : (yaw, lean, roll), optional
        Ball angles at ``t0`` in rad (default: yaw along the velocity, lean and roll 0).
    collocation : CollocationOptions, optional
        Collocation points, Gauss-Newton tolerance and iterations (default ``CollocationOptions()``).

    Attributes
    ----------
    residuals : dict
        ``contact_acceleration`` (m/s^2): largest difference between the
        plant's contact acceleration and the path's along the reference at the
        collocation points and at midpoints; ``spin`` (rad/s^2): same for the
        spin equation; ``collocation`` the solver's final residual;
        ``iterations``.
    spin_drift : float
        Mean over a period of the spin equation's right side in rad/s^2: the
        secular change of the ball's spin that a periodic reference cannot
        follow (zero for centred circles by symmetry; ~1e-5 rad/s^2 for
        off-centre ones). The spin residual equals it.
    quasi_static_difference : dict
        Largest ``|alpha - alpha_qs|``, ``|beta - beta_qs|`` in rad over a
        period, and the same relative to the quasi-static amplitude.

    Raises
    ------
    InfeasibleReferenceError
        If the quasi-static start is infeasible or Gauss-Newton does not reach ``tol``.
    ChartSingularityError
        If the ball's lean reaches ``LEAN_LIMIT`` within the duration.
    """

    def __init__(self, plant: MovingPlateBallPlate | ServoPlateBallPlate, path: Callable, *, spin: float,
                 duration: float, t0: float = 0.0, initial_orientation: Sequence[float] | None = None,
                 collocation: CollocationOptions | None = None) -> None:
        if not isinstance(plant, (MovingPlateBallPlate, ServoPlateBallPlate)):
            raise ParameterTypeError(
                f"plant must be a MovingPlateBallPlate or ServoPlateBallPlate, got {type(plant).__name__}")
        require_ideal_rolling(plant)
        if plant.n_plate != 2:
            raise ParameterError(
                "the inversion needs a plant without plate spin (MovingPlateParameters(with_spin=False))")
        check_path(path)
        period = getattr(path, "period", None)
        collocation = CollocationOptions() if collocation is None else check_instance(
            collocation, "collocation", CollocationOptions)
        n_col = collocation.n_collocation
        self.system = plant
        self.path = path
        self.periodic = period is not None
        self.period = check_positive(period, "path.period", "s") if self.periodic else None
        self.spin = check_finite_scalar(spin, "spin")
        self.duration = check_positive(duration, "duration", "s")
        self.t0 = check_finite_scalar(t0, "t0")
        self.t_range = (self.t0, self.t0 + self.duration)
        self.n_collocation = n_col
        self._prescribed = MovingPlateBallPlate(plant.params)
        self._solve(collocation.tol, collocation.max_iter)
        _, v, _, _ = evaluate_path(path, np.array([self.t0]))
        self.initial_orientation = initial_ball_orientation(initial_orientation, v[0])
        self._orientation = self._integrate_orientation()
        if isinstance(plant, ServoPlateBallPlate):
            self._commands = self._interpolant(self._servo_commands(self._grid))
        self.residuals["contact_acceleration"], self.residuals["spin"] = self._check_residuals()

    # ------------------------------------------------------------------ solve
    def _ball_constants(self):
        b = self.system.params.ball
        mr2 = b.mass * b.radius ** 2
        return b.radius, b.rolling_gain, b.ball_inertia * b.radius / (b.ball_inertia + mr2), b.gravity

    def _contact_model(self, qp, qpd, qpdd, sigma, p, v):
        """Predicted contact acceleration (..., N, 2) and spin rate (..., N) of the module docstring."""
        R, k_b, c_rot, g = self._ball_constants()
        Gp, Om, Gpdot_qd, g_plate = plate_kinematics(qp, qpd, g)
        Omd = np.einsum("...ij,...j->...i", Gp, qpdd) + Gpdot_qd
        zero = 0.0 * Om[..., 0]
        d = self.system.params.pivot_depth
        s = np.stack([p[:, 0] + zero, p[:, 1] + zero, zero + R + d], axis=-1)
        sd = np.stack([v[:, 0] + zero, v[:, 1] + zero, zero], axis=-1)
        wb = np.stack([-v[:, 1] / R + Om[..., 0], v[:, 0] / R + Om[..., 1], sigma + zero], axis=-1)
        c = cross(Omd, s) + 2.0 * cross(Om, sd) + cross(Om, cross(Om, s))
        gyro = cross(Om, wb) + Omd
        acc = k_b * (g_plate[..., :2] - c[..., :2]) - c_rot * np.stack([gyro[..., 1], -gyro[..., 0]], axis=-1)
        return acc, -cross(Om, wb)[..., 2]

    def _interpolant(self, values: np.ndarray):
        if self.periodic:
            return _Fourier(values, self.t0, self.period)
        return _Chebyshev(values, self.t0, self.t0 + self.duration)

    def _residual_open(self, z, p, v, a):
        """Non-periodic path: Chebyshev collocation with boundary conditions.

        Plate angles equal the quasi-static ones at both ends (for a path
        starting and ending at rest: level plate), the spin equals ``spin``
        at the start; the contact equations hold at the interior nodes, the
        spin equation at every node but the first.
        """
        n1 = self._grid.shape[0]
        alpha, beta, sigma = z[..., :n1], z[..., n1:2 * n1], z[..., 2 * n1:]
        qp = np.stack([alpha, beta], axis=-1)
        qpd = np.stack([alpha @ self._D1.T, beta @ self._D1.T], axis=-1)
        qpdd = np.stack([alpha @ self._D2.T, beta @ self._D2.T], axis=-1)
        acc, dsigma = self._contact_model(qp, qpd, qpdd, sigma, p, v)
        inner = (acc - a)[..., 1:-1, :]
        r_acc = inner.reshape(inner.shape[:-2] + (2 * (n1 - 2),))
        qs = self._quasi_static_angles
        r_bc = np.stack([alpha[..., 0] - qs[0, 0], beta[..., 0] - qs[0, 1],
                         alpha[..., -1] - qs[-1, 0], beta[..., -1] - qs[-1, 1],
                         sigma[..., 0] - self.spin], axis=-1)
        r_spin = (sigma @ self._D1.T - dsigma)[..., 1:]
        return np.concatenate([r_acc, r_bc, r_spin], axis=-1)

    def _residual(self, z, p, v, a):
        if not self.periodic:
            return self._residual_open(z, p, v, a)
        N = self.n_collocation
        alpha, beta, sigma = z[..., :N], z[..., N:2 * N], z[..., 2 * N:]
        qp = np.stack([alpha, beta], axis=-1)
        qpd = np.stack([alpha @ self._D1.T, beta @ self._D1.T], axis=-1)
        qpdd = np.stack([alpha @ self._D2.T, beta @ self._D2.T], axis=-1)
        acc, dsigma = self._contact_model(qp, qpd, qpdd, sigma, p, v)
        r_acc = (acc - a).reshape(acc.shape[:-2] + (2 * N,))
        # the mean of the spin equation is the secular spin drift (zero for centred circles): a
        # periodic reference can only satisfy the equation up to it, which is reported
        r_spin = sigma @ self._D1.T - (dsigma - np.mean(dsigma, axis=-1, keepdims=True))
        r_mean = np.mean(sigma, axis=-1, keepdims=True) - self.spin
        return np.concatenate([r_acc, r_spin, r_mean], axis=-1)

    def _solve(self, tol: float, max_iter: int) -> None:
        N, T = self.n_collocation, self.period
        if self.periodic:
            grid = self.t0 + T * np.arange(N) / N
            self._D1, self._D2 = spectral_derivative_matrices(N, T)
        else:
            grid, self._D1, self._D2 = chebyshev_derivative_matrices(N, self.t0, self.t0 + self.duration)
        self._grid = grid
        M = grid.shape[0]
        p, v, a, j = evaluate_path(self.path, grid)
        qs = self.system.quasi_static()
        u_qs, _ = plate_angles_for_acceleration(qs, a, j, grid)
        self._quasi_static_angles = u_qs
        z = np.concatenate([u_qs[:, 0], u_qs[:, 1], np.full(M, self.spin)])
        res = self._residual(z, p, v, a)
        it = 0
        for it in range(1, max_iter + 1):
            # the complex-step Jacobian, every column in one batched residual call (directions: the unit vectors)
            J = directional_derivative(lambda Z: self._residual(Z, p, v, a), z, np.eye(3 * M))[0].T  # (3N + 1, 3N)
            dz = np.linalg.lstsq(J, -res, rcond=None)[0]
            z = z + dz
            res = self._residual(z, p, v, a)
            if np.max(np.abs(res)) < tol and np.max(np.abs(dz)) < 1e-8:
                break
        worst = float(np.max(np.abs(res)))
        if not np.all(np.isfinite(z)) or worst > max(tol, 1e-9):
            raise InfeasibleReferenceError(
                f"the exact-plate inversion did not converge: residual {worst:.3g} after {it} Gauss-Newton "
                f"iterations (tol {tol:.3g}); slow down the path or raise n_collocation")
        self._z = z
        N = M
        self._angles = self._interpolant(np.stack([z[:N], z[N:2 * N]], axis=-1))
        self._sigma = self._interpolant(z[2 * N:])
        # the same interpolants stacked, for the scalar right-hand side of the orientation ODE
        self._angles_and_spin = self._interpolant(np.stack([z[:N], z[N:2 * N], z[2 * N:]], axis=-1))
        diff = np.abs(np.stack([z[:N], z[N:2 * N]], axis=-1) - u_qs).max(axis=0)
        amp = np.abs(u_qs).max(axis=0)
        self.quasi_static_difference = {"alpha_rad": float(diff[0]), "beta_rad": float(diff[1]),
                                        "alpha_relative": float(diff[0] / max(amp[0], 1e-300)),
                                        "beta_relative": float(diff[1] / max(amp[1], 1e-300))}
        qp = np.stack([z[:N], z[N:2 * N]], axis=-1)
        _, dsig = self._contact_model(qp, self._D1 @ qp, self._D2 @ qp, z[2 * N:], p, v)
        # secular spin drift of a periodic reference; a non-periodic one follows its spin equation (0)
        self.spin_drift = float(np.mean(dsig)) if self.periodic else 0.0
        self.residuals = {"collocation": worst, "iterations": float(it)}

    # ------------------------------------------------------------ orientation
    def _relative_rates(self, t, angles, v, qp, qpd, sigma):
        """``(yaw', lean', roll')`` from the rolling kinematics, shapes (K,)."""
        _, Om, _, _ = plate_kinematics(qp, qpd, 1.0)
        return self._angle_rates(angles, self._relative_angular_velocity(v, sigma, Om[..., 2]))

    def _relative_angular_velocity(self, v, sigma, omega_z):
        """Ball's angular velocity relative to the plate, ``w = (-v_y / R, v_x / R, sigma - Omega_z)``, (..., 3).

        Rolling fixes the in-plane components from the contact velocity ``v``
        (m/s); the normal one is the spin ``sigma`` less the plate's ``Omega_z`` (rad/s).
        """
        R = self.system.params.ball.radius
        return np.stack([-v[..., 1] / R, v[..., 0] / R, sigma - omega_z], axis=-1)

    @staticmethod
    def _angle_rates(angles, w):
        """Z-X-Y angle rates ``(yaw', lean', roll')`` for the relative angular velocity ``w``, shape (..., 3)."""
        yaw, lean = angles[..., 0], angles[..., 1]
        cps, sps, cph, sph = np.cos(yaw), np.sin(yaw), np.cos(lean), np.sin(lean)
        wx, wy, wz = w[..., 0], w[..., 1], w[..., 2]
        dlean = wx * cps + wy * sps
        droll = (-wx * sps + wy * cps) / cph
        dyaw = wz - droll * sph
        return np.stack([dyaw, dlean, droll], axis=-1)

    def _integrate_orientation(self):
        # scalar fast path of the right-hand side (it is called ~10^4 times): the path once, the plate
        # angles, their rates and the spin from one interpolant, the plate's Omega_z from the kernel
        n_p = self.system.n_plate
        Gp, om, gd, gp = np.empty((3, n_p)), np.empty(3), np.empty(3), np.empty(3)
        kinematics = _plate_kernels.plate_kinematics
        path = self.path

        def rates(t, y):
            v = np.asarray(path(np.array([t]))[1], dtype=float).reshape(2)
            value, rate = self._angles_and_spin.value_and_rate(t)
            # contiguous (a Fourier value is a real part, strided): the specialization the kernels compile
            kinematics(np.ascontiguousarray(value[:2]), np.ascontiguousarray(rate[:2]), 1.0, Gp, om, gd, gp)
            out = self._angle_rates(y, self._relative_angular_velocity(v, value[2], om[2]))
            if not np.all(np.isfinite(out)):
                raise ParameterError(f"the ball's orientation rates are not finite at t = {t:.6g} s (path "
                                     f"velocity {v} m/s)")
            return out

        def hit_limit(t, y):
            return LEAN_LIMIT - abs(y[1])

        hit_limit.terminal = True
        span = (self.t0, self.t0 + (max(self.duration, self.period) if self.periodic else self.duration))
        sol = solve_ivp(rates, span, np.array(self.initial_orientation), method="DOP853", rtol=1e-12,
                        atol=1e-12, dense_output=True, events=hit_limit)
        if sol.status == 1:
            t_hit = float(sol.t_events[0][0])
            raise ChartSingularityError(
                f"the ball's lean reaches {np.rad2deg(LEAN_LIMIT):.0f} deg at t = {t_hit:.4g} s; shorten "
                f"duration below {t_hit - self.t0:.4g} s or change spin/initial_orientation")
        return sol

    def _states(self, t: np.ndarray):
        """Full ``x, xd`` (K, 7), plate accelerations and jerks (K, 2), path acceleration (K, 2)."""
        p, v, a, _ = evaluate_path(self.path, t)
        qp, qpd = self._angles(t), self._angles(t, 1)
        ang = self._orientation.sol(t).T
        rates = self._relative_rates(t, ang, v, qp, qpd, self._sigma(t))
        x = np.concatenate([p, ang, qp], axis=1)
        xd = np.concatenate([v, rates, qpd], axis=1)
        return x, xd, self._angles(t, 2), self._angles(t, 3), a

    def _accelerations(self, x, xd, acc):
        return self._prescribed.accelerations(x, xd, acc)

    def _servo_commands(self, t: np.ndarray) -> np.ndarray:
        plant = self.system
        x, xd, acc, _, _ = self._states(t)
        xdd, _ = self._accelerations(x, xd, acc)
        u0 = x[:, 5:]
        M, Q = plant.mass_and_forces(x, xd, u0)
        tau = (np.einsum("kij,kj->ki", M, xdd) - Q)[:, 5:] + plant.servo_torque(x, xd, u0)
        return plant.commands_for_torque(x, xd, tau)

    def _check_residuals(self) -> tuple[float, float]:
        """Largest contact-acceleration and spin-rate mismatch of the DAE at grid and mid points of a period."""
        N, T = self.n_collocation, self.period
        if self.periodic:
            t = self.t0 + T * np.arange(2 * N) / (2 * N)
        else:
            t = np.linspace(self.t0, self.t0 + self.duration, 2 * N + 1)
        s = self._evaluate(t)
        _, _, _, _, a = self._states(t)
        # spin sigma = yaw' + roll' sin(lean) + Omega_z and its derivative from the DAE's xdd
        dsig = (s.xdd[:, 2] + s.xdd[:, 4] * np.sin(s.x[:, 3]) + s.xd[:, 4] * np.cos(s.x[:, 3]) * s.xd[:, 3]
                + s.xdd[:, 5] * np.sin(s.x[:, 6]) + s.xd[:, 5] * np.cos(s.x[:, 6]) * s.xd[:, 6])
        return float(np.abs(s.xdd[:, :2] - a).max()), float(np.abs(dsig - self._sigma(t, 1)).max())

    # --------------------------------------------------------------- evaluate
    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        x, xd, acc, jerk, _ = self._states(t)
        if isinstance(self.system, ServoPlateBallPlate):
            u, ud = self._commands(t), self._commands(t, 1)
            xdd, lam = self.system.accelerations(x, xd, u)
        else:
            u, ud = acc, jerk
            xdd, lam = self._accelerations(x, xd, acc)
        return ReferenceSample(t.copy(), x, xd, xdd, u, ud, lam)

    def plate_angles(self, t) -> tuple[np.ndarray, np.ndarray]:
        """Exact plate angles (K, 2) in rad and rates (K, 2) in rad/s at times t (periodic).

        Parameters
        ----------
        t : float or array_like
            Times in s.
        """
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return self._angles(t), self._angles(t, 1)

    def quasi_static_angles(self, t) -> np.ndarray:
        """The quasi-static model's plate angles (K, 2) in rad along the same path.

        Parameters
        ----------
        t : float or array_like
            Times in s.
        """
        t = np.atleast_1d(np.asarray(t, dtype=float))
        _, _, a, j = evaluate_path(self.path, t)
        return plate_angles_for_acceleration(self.system.quasi_static(), a, j, t)[0]

    def summary(self) -> dict[str, float]:
        out = {"period_s": self.period if self.periodic else float("nan"), "duration_s": self.duration,
               "spin_rad_s": self.spin,
               "n_collocation": float(self.n_collocation)}
        out.update({f"residual_{k}": v for k, v in self.residuals.items()})
        out.update({f"quasi_static_difference_{k}": v for k, v in self.quasi_static_difference.items()})
        return out


def exact_circular_motion(plant: MovingPlateBallPlate | ServoPlateBallPlate, path: LissajousPath,
                          roll_rate: float, *, roll0: float = 0.0, duration: float | None = None,
                          collocation: CollocationOptions | None = None) -> MovingPlateMotion:
    """The circular steady motion of :class:`~ballctl.CircularMotion` on the exact moving plate.

    Parameters
    ----------
    plant : MovingPlateBallPlate or ServoPlateBallPlate
    path : LissajousPath
        The circle of the contact point, :meth:`LissajousPath.circle(radius, omega, center=..., phase=...)
        <ballctl.LissajousPath.circle>` (m, rad/s, m, rad).
    roll_rate, roll0
        As for :class:`~ballctl.CircularMotion` (rad/s, rad).
    duration : float, optional
        Interval in s on which the reference is defined (default: one period).
    collocation : CollocationOptions, optional
        Fourier collocation of the plate-angle solve (default ``CollocationOptions()``).

    Returns
    -------
    MovingPlateMotion

    Notes
    -----
    Same circle, same mean spin ``omega + roll_rate sin(lean0)`` and same
    initial orientation as the quasi-static reference; the plate angles are
    solved from the exact dynamics. ``duration`` defaults to one period.
    """
    check_instance(plant, "plant", (MovingPlateBallPlate, ServoPlateBallPlate),
                   "MovingPlateBallPlate or ServoPlateBallPlate (for a BallPlate use CircularMotion)")
    radius, omega, center, phase = _circle_of(path)
    qs = CircularMotion(plant.quasi_static(), radius, omega, roll_rate, center=center, phase=phase, roll0=roll0)
    s0 = qs(0.0)
    return MovingPlateMotion(plant, path, spin=float(qs.spin), duration=duration or qs.period,
                             initial_orientation=tuple(s0.x[2:5]), collocation=collocation)


def _circle_of(path) -> tuple[float, float, tuple[float, float], float]:
    """``(radius, omega, center, phase)`` of a circle built by :meth:`LissajousPath.circle` (rotation adds to the
    phase), or a ParameterError."""
    check_instance(path, "path", LissajousPath, "LissajousPath (LissajousPath.circle(radius, omega))")
    gap = (path.phase_x - path.phase_y - np.pi / 2) % (2 * np.pi)
    if not (path.amplitude_x == path.amplitude_y > 0 and path.omega_x == path.omega_y
            and min(gap, 2 * np.pi - gap) < 1e-12):
        raise ParameterError(f"path must be a circle, LissajousPath.circle(radius, omega, center=..., phase=...), "
                             f"got {path!r}")
    center = tuple(float(c) for c in path.center)
    return float(path.amplitude_x), float(path.omega_x), center, float(path.phase_y + path.rotation)
