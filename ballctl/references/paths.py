r"""Smooth planar paths of the contact point and the general dynamic inversion along them.

A *path* is any callable ``path(t) -> (p, v, a)`` or ``(p, v, a, j)`` taking
an array of K times (s) and returning arrays of shape (K, 2): position (m),
velocity (m/s), acceleration (m/s^2) and optionally jerk (m/s^3) in the plate
frame. When the jerk is missing it is computed by complex-step differentiation
of the acceleration in t (central differences if the callable is not
complex-safe).

:class:`PathMotion` inverts the quasi-static ball-plate along a path: the
plate angles follow from the acceleration (see :mod:`.inversion`), and the
ball's orientation from the rolling constraints with the conserved spin about
the plate normal,

.. math::

    \dot\phi = \frac{v_x\sin\psi - v_y\cos\psi}{R},\quad
    \dot\theta = \frac{v_x\cos\psi + v_y\sin\psi}{R\cos\phi},\quad
    \dot\psi = \sigma - \dot\theta\sin\phi,

integrated once, at construction, to rtol = atol = 1e-12 (eqs. (45)-(46)).
The yaw-lean-roll chart is singular at lean = ±90 degrees and, unlike on a
circle, the lean drifts on paths of varying curvature; a reference whose lean
reaches ``LEAN_LIMIT`` raises :class:`~ballctl.errors.ChartSingularityError` naming
the time (shorten the duration, or change ``spin`` / ``initial_orientation``).
The contact dynamics and plate angles do not depend on the orientation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.interpolate import make_interp_spline

from .._derivatives import directional_derivative
from .._errors import (BallctlError, ChartSingularityError, IntegrationError, ParameterError, ParameterTypeError,
                       ShapeError)
from .._guards import guard_rhs
from .._validation import (as_array, as_vector, check_bool, check_finite_scalar, check_integer, check_nonnegative,
                           check_positive)
from ..plants.ball_plate import BallPlate
from .base import Reference, ReferenceSample
from .circular import LEAN_LIMIT
from .inversion import plate_angles_for_acceleration, require_ideal_rolling, rolling_multipliers, warn_large_tilt

__all__ = ["LissajousPath", "WaypointPath", "PathMotion"]


def _rot(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])


@dataclass(frozen=True, kw_only=True)
class LissajousPath:
    r"""Lissajous curve ``p = c + (Ax sin(wx t + dx), Ay sin(wy t + dy))``, rotated by ``rotation``.

    Attributes: amplitudes in m, rates in rad/s, phases and rotation in rad,
    centre in m. Every other built-in path is a special case.

    Attributes
    ----------
    amplitude_x, amplitude_y : float
        Amplitudes in m.
    omega_x, omega_y : float
        Rates in rad/s.
    phase_x, phase_y : float
        Phases in rad.
    center : (float, float)
        Centre in m.
    rotation : float
        Rotation of the curve about its centre in rad.
    """

    amplitude_x: float
    amplitude_y: float
    omega_x: float
    omega_y: float
    phase_x: float = 0.0
    phase_y: float = 0.0
    center: tuple[float, float] = (0.0, 0.0)
    rotation: float = 0.0

    def __post_init__(self) -> None:
        for name in ("amplitude_x", "amplitude_y", "omega_x", "omega_y", "phase_x", "phase_y", "rotation"):
            check_finite_scalar(getattr(self, name), name)
        as_vector(self.center, "center", 2)
        if self.amplitude_x == 0 and self.amplitude_y == 0:
            raise ParameterError("amplitude_x and amplitude_y cannot both be zero")
        if self.omega_x == 0 and self.omega_y == 0:
            raise ParameterError("omega_x and omega_y (rad/s) cannot both be zero: the path would be a point; "
                                 "give a non-zero rate (negative runs it backwards)")

    @property
    def period(self) -> float | None:
        """Common period in s when omega_x/omega_y is rational (to 1e-9), else None."""
        wx, wy = abs(self.omega_x), abs(self.omega_y)
        if wx == 0 or wy == 0:
            return 2 * np.pi / max(wx, wy)
        from fractions import Fraction
        frac = Fraction(wx / wy).limit_denominator(1000)
        if abs(float(frac) - wx / wy) > 1e-9:
            return None
        return float(2 * np.pi * frac.denominator / wy)

    def __call__(self, t):
        t = np.atleast_1d(np.asarray(t))
        amp = np.array([self.amplitude_x, self.amplitude_y])
        w = np.array([self.omega_x, self.omega_y])
        ph = np.array([self.phase_x, self.phase_y])
        arg = t[:, None] * w + ph
        s, c = np.sin(arg), np.cos(arg)
        R = _rot(self.rotation)
        p = np.asarray(self.center) + (amp * s) @ R.T
        v = (amp * w * c) @ R.T
        a = (-amp * w ** 2 * s) @ R.T
        j = (-amp * w ** 3 * c) @ R.T
        return p, v, a, j

    @classmethod
    def circle(cls, radius: float, omega: float, *, center=(0.0, 0.0), phase: float = 0.0) -> "LissajousPath":
        """A circle.

        Parameters
        ----------
        radius : float
            Radius in m (> 0).
        omega : float
            Angular rate in rad/s (negative: clockwise).
        center : (float, float)
            Centre in m.
        phase : float
            Angle of the start point in rad.

        Examples
        --------
        >>> p, v, a, j = LissajousPath.circle(0.5, 1.0)(0.0)
        >>> p.round(12).tolist()
        [[0.5, 0.0]]
        """
        radius = check_positive(radius, "radius", "m")
        return cls(amplitude_x=radius, amplitude_y=radius, omega_x=omega, omega_y=omega,
                   phase_x=phase + np.pi / 2, phase_y=phase, center=tuple(center))

    @classmethod
    def ellipse(cls, semi_major: float, semi_minor: float, omega: float, *, center=(0.0, 0.0),
                phase: float = 0.0, rotation: float = 0.0) -> "LissajousPath":
        """An ellipse.

        Parameters
        ----------
        semi_major, semi_minor : float
            Semi-axes in m (> 0).
        omega : float
            Angular rate of the parametrisation in rad/s.
        center : (float, float)
            Centre in m.
        phase : float
            Start parameter in rad.
        rotation : float
            Angle of the major axis in rad.
        """
        a = check_positive(semi_major, "semi_major", "m")
        b = check_positive(semi_minor, "semi_minor", "m")
        return cls(amplitude_x=a, amplitude_y=b, omega_x=omega, omega_y=omega,
                   phase_x=phase + np.pi / 2, phase_y=phase, center=tuple(center), rotation=rotation)

    @classmethod
    def figure_eight(cls, size: float, omega: float, *, center=(0.0, 0.0), rotation: float = 0.0
                     ) -> "LissajousPath":
        """A figure-eight (lemniscate of Gerono) ``(A sin wt, A/2 sin 2wt)``.

        Parameters
        ----------
        size : float
            Half-width A in m (> 0).
        omega : float
            Rate w in rad/s; one loop of the eight takes ``2 pi / w`` s.
        center : (float, float)
            Centre in m.
        rotation : float
            Rotation of the figure in rad.
        """
        A = check_positive(size, "size", "m")
        return cls(amplitude_x=A, amplitude_y=A / 2, omega_x=omega, omega_y=2 * omega,
                   center=tuple(center), rotation=rotation)


class WaypointPath:
    """A C4 path through waypoints with a smooth speed profile.

    The geometric curve is a quintic spline through the waypoints
    parametrised by cumulative chord length (vanishing third and fourth
    derivatives at the ends, or periodic when ``closed``), so the plate
    angles of the quasi-static inversion are C2 and those of the exact
    moving-plate inversion (which involve the plate's angular acceleration)
    are continuous. The time law ``s(t)`` runs along it at ``speed`` m/s
    (nominal, in chord-length units), starting and ending at rest through
    quintic ramps of ``ramp_time`` s (zero velocity and acceleration at the
    ends), so plate angles start and end level; a closed path loops at
    constant speed without ramps.

    Parameters
    ----------
    waypoints : array_like, shape (P, 2)
        Points in m, P >= 2 (P >= 3 when closed), consecutive points distinct.
    speed : float
        Cruise speed in m/s (> 0).
    ramp_time : float
        Duration of the start and stop ramps in s (>= 0; ignored when closed).
    closed : bool
        Periodic spline through the points and back to the first.
    """

    def __init__(self, waypoints, speed: float, *, ramp_time: float = 1.0, closed: bool = False) -> None:
        pts = as_array(waypoints, "waypoints", ndim=2, unit="m")
        if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < (3 if closed else 2):
            raise ShapeError(f"waypoints must have shape (P, 2) with P >= {3 if closed else 2}, got {pts.shape}")
        if not np.all(np.isfinite(pts)):
            raise ParameterError("waypoints must be finite")
        self.speed = check_positive(speed, "speed", "m/s")
        self.closed = check_bool(closed, "closed")
        if closed:
            pts = np.vstack([pts, pts[:1]])
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        if np.any(seg <= 1e-12):
            raise ParameterError("consecutive waypoints must be distinct")
        s = np.concatenate([[0.0], np.cumsum(seg)])
        self.length = float(s[-1])
        self.waypoints = pts
        if closed:
            self._spline = make_interp_spline(s, pts, k=5, bc_type="periodic")
        elif pts.shape[0] == 2:  # a straight segment: the line itself
            self._spline = make_interp_spline(s, pts, k=1)
        else:  # quintic with vanishing 3rd and 4th derivatives at the ends ("natural" for k = 5)
            zero = [(3, np.zeros(2)), (4, np.zeros(2))]
            self._spline = make_interp_spline(s, pts, k=5, bc_type=(zero, zero))
        ramp_time = check_nonnegative(ramp_time, "ramp_time", "s")
        self.ramp_time = 0.0 if closed else ramp_time
        T = self.ramp_time
        if not closed and self.speed * T > self.length:
            raise ParameterError(f"ramp_time too long: the ramps would cover {self.speed * T:.4g} m of a "
                             f"{self.length:.4g} m path; use ramp_time < {self.length / self.speed:.4g} s")
        # the quintic ramps cover speed*T/2 each, cruise the rest
        self.duration = (self.length / self.speed + T) if not closed else self.length / self.speed
        self.period = None if not closed else self.duration

    def _time_law(self, t: np.ndarray):
        v, T, L = self.speed, self.ramp_time, self.length
        if self.closed:
            s = np.mod(v * t, L)
            return s, np.full_like(t, v), np.zeros_like(t), np.zeros_like(t)
        if np.any(t < -1e-12) or np.any(t > self.duration + 1e-12):
            raise ParameterError(f"t must lie in [0, {self.duration:.6g}] s for this waypoint path")
        t = np.clip(t, 0.0, self.duration)  # only rounding-level excursions reach here

        def ramp(tau):  # speed fraction, its integral (distance/(vT)), derivative and 2nd derivative
            r = tau / T
            f = 10 * r ** 3 - 15 * r ** 4 + 6 * r ** 5
            F = T * (2.5 * r ** 4 - 3 * r ** 5 + r ** 6)
            df = (30 * r ** 2 - 60 * r ** 3 + 30 * r ** 4) / T
            ddf = (60 * r - 180 * r ** 2 + 120 * r ** 3) / T ** 2
            return f, F, df, ddf

        s = np.empty_like(t)
        sd = np.empty_like(t)
        sdd = np.empty_like(t)
        sddd = np.empty_like(t)
        if T > 0:
            a = t < T
            f, F, df, ddf = ramp(t[a])
            s[a], sd[a], sdd[a], sddd[a] = v * F, v * f, v * df, v * ddf
            b = t > self.duration - T
            f, F, df, ddf = ramp(self.duration - t[b])
            s[b], sd[b], sdd[b], sddd[b] = L - v * F, v * f, -v * df, v * ddf
            mid = ~(a | b)
        else:
            mid = np.ones_like(t, dtype=bool)
        s[mid] = v * T / 2 + v * (t[mid] - T)
        sd[mid], sdd[mid], sddd[mid] = v, 0.0, 0.0
        return s, sd, sdd, sddd

    def __call__(self, t):
        t = np.atleast_1d(np.asarray(t, dtype=float))
        s, sd, sdd, sddd = self._time_law(t)
        c0 = self._spline(s)
        c1 = self._spline(s, nu=1)
        c2 = self._spline(s, nu=2)
        c3 = self._spline(s, nu=3)
        p = c0
        v = c1 * sd[:, None]
        a = c2 * sd[:, None] ** 2 + c1 * sdd[:, None]
        j = c3 * sd[:, None] ** 3 + 3 * c2 * (sd * sdd)[:, None] + c1 * sddd[:, None]
        return p, v, a, j


#: builders of the paths ``ballctl track --path`` names, for the message of a path given by name
_PATH_BUILDERS = {"circle": "LissajousPath.circle(radius, omega)",
                  "ellipse": "LissajousPath.ellipse(semi_major, semi_minor, omega)",
                  "figure8": "LissajousPath.figure_eight(size, omega)",
                  "figure_eight": "LissajousPath.figure_eight(size, omega)",
                  "lissajous": "LissajousPath(amplitude_x=..., amplitude_y=..., omega_x=..., omega_y=...)",
                  "waypoints": "WaypointPath(waypoints, speed)"}


def check_path(path, name: str = "path") -> Callable:
    """``path`` if it is a path callable, else a :class:`~ballctl.errors.ParameterTypeError` naming ``name``.

    A string (e.g. ``"figure8"``, the name of a ``ballctl track --path``) gets the builder to call instead.

    Parameters
    ----------
    path : object
        The argument.
    name : str
        Its name in the message.

    Returns
    -------
    callable
    """
    if callable(path):
        return path
    what = "path(t) -> (p, v, a[, jerk]) with arrays of shape (K, 2) in m, m/s, m/s^2 (m/s^3)"
    if isinstance(path, (str, bytes)):
        text = path.decode(errors="replace") if isinstance(path, bytes) else path
        builder = _PATH_BUILDERS.get(text.strip().lower().replace("-", "").replace(" ", "_"))
        hint = (f"; build it with ballctl.{builder}" if builder else
                "; build one with ballctl.LissajousPath (circle, ellipse, figure_eight) or ballctl.WaypointPath")
        raise ParameterTypeError(f"{name} must be a callable {what}, not the string {text!r} (a path name is only "
                                 f"understood by the command line's --path){hint}")
    raise ParameterTypeError(f"{name} must be a callable {what}, e.g. ballctl.LissajousPath.figure_eight(0.5, 1.0); "
                             f"got {type(path).__name__}")


def evaluate_path(path: Callable, t: np.ndarray):
    """Position, velocity, acceleration and jerk of a path at times ``t``, each shape (K, 2).

    Parameters
    ----------
    path : callable
        ``path(t) -> (p, v, a)`` or ``(p, v, a, jerk)``, each (K, 2) in m, m/s, m/s^2, m/s^3;
        a missing jerk is the complex-step derivative of the acceleration.
    t : ndarray, shape (K,)
        Times in s.

    Returns
    -------
    tuple of ndarray
        ``(p, v, a, jerk)``, each shape (K, 2).

    Raises
    ------
    ValueError
        If the path returns the wrong number of arrays or non-finite values.
    """
    names = ("position", "velocity", "acceleration", "jerk")
    out = _call_path(path, t)
    if not isinstance(out, (tuple, list)) or len(out) not in (3, 4):
        raise ShapeError("a path must return (p, v, a) or (p, v, a, jerk), each of shape (K, 2)")
    arrays = [_path_array(o, name, t.shape[0]) for o, name in zip(out, names)]
    if len(arrays) == 3:
        def acc(tt):
            return np.asarray(_call_path(path, tt)[2])
        jerk, _ = directional_derivative(acc, t, np.ones_like(t))
        arrays.append(_path_array(jerk, "jerk", t.shape[0]))
    for name, arr in zip(("position", "velocity", "acceleration", "jerk"), arrays):
        if not np.all(np.isfinite(arr)):
            raise ParameterError(f"the path returned a non-finite {name}")
    return arrays


def _call_path(path: Callable, t: np.ndarray):
    """``path(t)``; an exception inside the user's function is re-raised naming the path and the times."""
    try:
        return path(t)
    except BallctlError:
        raise
    except Exception as exc:
        raise ParameterError(f"the path raised {type(exc).__name__}: {exc} (evaluated at {t.shape[0]} times in "
                             f"[{float(np.min(t.real)):.6g}, {float(np.max(t.real)):.6g}] s)") from exc


def _path_array(value, name: str, K: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (K, 2) and not (arr.ndim <= 2 and arr.size == 2 * K and arr.shape[-1:] in ((2,), (2 * K,))):
        raise ShapeError(f"the path's {name} must have shape (K, 2) = ({K}, 2) in SI units, got {arr.shape}")
    return arr.reshape(K, 2)


def initial_ball_orientation(initial_orientation: Sequence[float] | None, velocity) -> tuple[float, float, float]:
    """Validated ``(yaw, lean, roll)`` in rad; by default rolling along ``velocity`` with lean and roll 0.

    Parameters
    ----------
    initial_orientation : (yaw, lean, roll) or None
        Given angles in rad, or None for the default.
    velocity : array_like, shape (2,)
        Initial contact velocity in m/s (the ball rolls along ``(cos yaw, sin yaw)``);
        yaw 0 when it is zero.
    """
    if initial_orientation is None:
        v0 = np.asarray(velocity, dtype=float)
        yaw0 = float(np.arctan2(v0[1], v0[0])) if np.hypot(*v0) > 1e-12 else 0.0
        initial_orientation = (yaw0, 0.0, 0.0)
    out = tuple(float(a) for a in as_vector(initial_orientation, "initial_orientation", 3))
    if abs(out[1]) >= LEAN_LIMIT:
        raise ChartSingularityError(f"initial lean must satisfy |lean| < {np.rad2deg(LEAN_LIMIT):.0f} deg")
    return out


class PathMotion(Reference):
    """Dynamic inversion of the quasi-static ball-plate along any smooth planar path.

    Parameters
    ----------
    plant : BallPlate
    path : callable
        ``path(t) -> (p, v, a[, jerk])`` with arrays of shape (K, 2) in SI units.
    duration : float
        Length in s of the interval ``[t0, t0 + duration]`` on which the
        orientation is integrated and the reference is defined.
    t0 : float
        Start time in s.
    spin : float
        Conserved spin about the plate normal ``yaw' + roll' sin(lean)`` in rad/s.
    initial_orientation : (yaw, lean, roll), optional
        Angles at ``t0`` in rad. Default: yaw along the initial velocity
        (along +x if the path starts at rest; the ball rolls along (cos yaw, sin yaw)), lean 0, roll 0.
    check_samples : int
        Samples of the duration at which feasibility and the chart are checked.

    Raises
    ------
    InfeasibleReferenceError
        If the path needs more acceleration than the plate can give.
    ChartSingularityError
        If the lean reaches ``LEAN_LIMIT`` within the duration (the message names the time).
    """

    def __init__(self, plant: BallPlate, path: Callable, *, duration: float, t0: float = 0.0,
                 spin: float = 0.0, initial_orientation: Sequence[float] | None = None,
                 check_samples: int = 2001) -> None:
        if not isinstance(plant, BallPlate):
            raise ParameterTypeError(f"plant must be a BallPlate, got {type(plant).__name__}")
        check_path(path)
        require_ideal_rolling(plant)
        self.system = plant
        self.path = path
        self.duration = check_positive(duration, "duration", "s")
        self.t0 = check_finite_scalar(t0, "t0", "s")
        self.spin = check_finite_scalar(spin, "spin", "rad/s")
        self.t_range = (self.t0, self.t0 + self.duration)
        self.period = getattr(path, "period", None)
        grid = np.linspace(self.t0, self.t0 + self.duration, check_integer(check_samples, "check_samples", minimum=2))
        _, v, a, j = evaluate_path(path, grid)
        u_check, _ = plate_angles_for_acceleration(plant, a, j, grid)  # raises when infeasible
        warn_large_tilt(np.arccos(np.clip(np.cos(u_check[:, 0]) * np.cos(u_check[:, 1]), -1.0, 1.0)),
                        "PathMotion", grid)
        self.initial_orientation = initial_ball_orientation(initial_orientation, v[0])
        self._solution = self._integrate_orientation()

    def _orientation_rates(self, t, angles):
        R = self.system.params.radius
        _, v, _, _ = evaluate_path(self.path, np.atleast_1d(t))
        yaw, lean = angles[0], angles[1]
        vx, vy = v[0]
        dlean = (vx * np.sin(yaw) - vy * np.cos(yaw)) / R
        droll = (vx * np.cos(yaw) + vy * np.sin(yaw)) / (R * np.cos(lean))
        dyaw = self.spin - droll * np.sin(lean)
        return np.array([dyaw, dlean, droll])

    def _integrate_orientation(self):
        def hit_limit(t, y):
            return LEAN_LIMIT - abs(y[1])

        hit_limit.terminal = True
        rates = guard_rhs(self._orientation_rates, context="PathMotion orientation",
                          names=("yaw", "lean", "roll"))
        sol = solve_ivp(rates, self.t_range, np.array(self.initial_orientation),
                        method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True, events=hit_limit)
        if sol.status == 1:
            t_hit = float(sol.t_events[0][0])
            raise ChartSingularityError(
                f"the ball's lean reaches {np.rad2deg(LEAN_LIMIT):.0f} deg at t = {t_hit:.4g} s, near the "
                f"yaw-lean-roll chart's singularity (lean = 90 deg); on paths of varying curvature the lean "
                f"drifts: shorten duration below {t_hit - self.t0:.4g} s or change spin/initial_orientation")
        if not sol.success:
            raise IntegrationError(f"orientation integration failed at t = {sol.t[-1]:.6g} s: {sol.message}",
                                   time=float(sol.t[-1]))
        return sol

    def _evaluate(self, t: np.ndarray) -> ReferenceSample:
        plant = self.system
        R = plant.params.radius
        p, v, a, j = evaluate_path(self.path, t)
        ang = self._solution.sol(t).T
        K = t.shape[0]
        x = np.empty((K, 5))
        x[:, :2] = p
        x[:, 2:] = ang
        xd = plant.rolling_velocities(x, v, self.spin)
        yaw, lean = ang[:, 0], ang[:, 1]
        cps, sps = np.cos(yaw), np.sin(yaw)
        cph, sph = np.cos(lean), np.sin(lean)
        dyaw, dlean, droll = xd[:, 2], xd[:, 3], xd[:, 4]
        normal = v[:, 0] * cps + v[:, 1] * sps
        across = -v[:, 0] * sps + v[:, 1] * cps
        ddlean = (a[:, 0] * sps - a[:, 1] * cps + dyaw * normal) / R
        dnormal = a[:, 0] * cps + a[:, 1] * sps + dyaw * across
        ddroll = dnormal / (R * cph) + normal * sph * dlean / (R * cph ** 2)
        ddyaw = -(ddroll * sph + droll * cph * dlean)
        xdd = np.column_stack([a[:, 0], a[:, 1], ddyaw, ddlean, ddroll])
        u, ud = plate_angles_for_acceleration(plant, a, j, t)
        lam = rolling_multipliers(plant, u, a)
        return ReferenceSample(t.copy(), x, xd, xdd, u, ud, lam)

    def summary(self) -> dict[str, float]:
        t = np.linspace(*self.t_range, 2001)
        s = self(t)
        tilt = np.arccos(np.cos(s.u[:, 0]) * np.cos(s.u[:, 1]))
        speed = np.hypot(s.xd[:, 0], s.xd[:, 1])
        return {"duration_s": self.duration, "max_speed_m_s": float(speed.max()),
                "max_tilt_rad": float(tilt.max()), "max_abs_lean_rad": float(np.abs(s.x[:, 3]).max()),
                "spin_rad_s": self.spin}
