r"""Rails: the 1-d curves along which internal point masses move.

A rail is the curve :math:`\zeta(\theta)` of Putkaradze & Rogers (2018),
eq. (5.27), in the body frame translated to the ball's geometric centre (GC),
in metres. Every rail evaluates

``rail.evaluate(theta) -> (zeta, dzeta, ddzeta)``, each of shape
``theta.shape + (3,)``: the position and its first and second derivatives with
respect to the rail parameter ``theta``. Evaluation is vectorised and
complex-step safe. The closed-form rails (circle, ellipse, figure eight,
segment) are packed into a row (:meth:`Rail.kernel_row`) and evaluated by the
compiled geometry of :mod:`ballctl.plants.kernels.rails`, where their formulas
are written once (for the dynamics kernels, these classes and, symbolically,
the planners).

Rails provided:

* :class:`CircleRail` -- circle of any radius, centre and orientation, and
  :meth:`CircleRail.from_spherical`, the paper's construction (7.8)-(7.10);
* :class:`EllipseRail`;
* :class:`FigureEightRail` (lemniscate of Gerono);
* :class:`SegmentRail` -- a straight segment (a magnet in a tube), parameter
  = arc length in m;
* :class:`CallableRail` -- any user curve given by a callable.

Each rail knows ``parameter_range`` (the part of the curve that physically
exists) and :meth:`max_distance_m` (the largest ``|zeta|`` over that range);
plants use it to check that the rail stays inside the ball, ``|zeta| < r``.

Basis convention of eq. (7.8)
-----------------------------
The paper builds :math:`\mathcal{B}_i` from Frisvad's orthonormal basis
``(b1, b2)`` of the unit vector ``n = varsigma(v_i)`` but does not state the
column order. The paper's initial condition
``theta_a = (0, 2.0369, 0.7044)`` (eq. 7.12) is stated to put the total centre
of mass on the vertical through the GC and *above* it. Of all right-handed
matrices whose first and third columns are signed members of ``{b1, b2, n}``,
only ``B = [n | b2 | -b1]`` (and its mirror ``[-n | b2 | b1]``, which puts the
CM *below* the GC) does this: the horizontal CM offset is 6.9e-6 m, consistent
with the 4 digits of ``theta_a``, while every plain column permutation of
``(b1, b2, n)`` leaves >= 0.09 m. With this order, ``theta = 0`` puts the mass at
``radius * n``: the spherical coordinates ``v_i`` name the rail's starting
point, and the rail lies in the plane spanned by ``n`` and ``b1``.
See :func:`paper_rail_basis`.

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (5.27), (7.8)-(7.10).
J.R. Frisvad, "Building an orthonormal basis from a 3D unit vector without
normalization", J. Graphics Tools 16(3) (2012) 151-159, Listing 2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError, ParameterTypeError, ShapeError
from .._validation import as_matrix, as_vector, check_positive
from .kernels import rails as _rail_kernels

__all__ = [
    "Rail",
    "CircleRail",
    "EllipseRail",
    "FigureEightRail",
    "SegmentRail",
    "CallableRail",
    "spherical_to_cartesian",
    "frisvad_basis",
    "paper_rail_basis",
    "plane_rotation",
]

_SAMPLES = 4097  # samples used to bound |zeta| over a rail's parameter range


def spherical_to_cartesian(azimuth: float, elevation: float, radius: float = 1.0) -> np.ndarray:
    r"""Map spherical coordinates to Cartesian, eq. (7.9).

    ``varsigma(phi, theta, rho) = rho (cos theta cos phi, cos theta sin phi, sin theta)``.

    Parameters
    ----------
    azimuth : float
        Angle ``phi`` in rad, from ``E1`` towards ``E2``.
    elevation : float
        Angle ``theta`` in rad above the ``E1``-``E2`` plane.
    radius : float
        Length ``rho``.

    Returns
    -------
    ndarray, shape (3,)
    """
    return radius * np.array([np.cos(elevation) * np.cos(azimuth),
                              np.cos(elevation) * np.sin(azimuth),
                              np.sin(elevation)])


def frisvad_basis(normal) -> tuple[np.ndarray, np.ndarray]:
    """Frisvad's orthonormal vectors ``(b1, b2)`` completing a unit vector (Listing 2).

    ``(b1, b2, normal)`` is a right-handed orthonormal basis.

    Parameters
    ----------
    normal : array_like, shape (3,)
        Unit vector ``n``.

    Returns
    -------
    b1, b2 : ndarray, shape (3,)

    Raises
    ------
    ValueError
        If ``normal`` is not a unit vector (to 1e-9).
    """
    n = as_vector(normal, "normal", 3)
    if abs(float(n @ n) - 1.0) > 1e-9:
        raise ParameterError(f"normal must be a unit vector (|n| = 1 within 1e-9), got |n| = {np.linalg.norm(n)!r}")
    x, y, z = n
    if z < -0.9999999:
        return np.array([0.0, -1.0, 0.0]), np.array([-1.0, 0.0, 0.0])
    a = 1.0 / (1.0 + z)
    b = -x * y * a
    return np.array([1.0 - x * x * a, b, -x]), np.array([b, 1.0 - y * y * a, -y])


def paper_rail_basis(normal) -> np.ndarray:
    """Rotation ``B(n)`` of eq. (7.8) with the column order pinned down by eq. (7.12).

    Returns ``[n | b2 | -b1]`` (columns), ``(b1, b2) = frisvad_basis(n)``; see
    the module docstring for why this order.

    Parameters
    ----------
    normal : array_like, shape (3,)
        Unit vector ``n = varsigma(v_i)``.

    Returns
    -------
    ndarray, shape (3, 3)
        A rotation matrix (orthogonal, determinant +1).
    """
    n = as_vector(normal, "normal", 3)
    b1, b2 = frisvad_basis(n)
    return np.column_stack([n, b2, -b1])


def plane_rotation(normal) -> np.ndarray:
    """Rotation whose first and third columns span the plane normal to ``normal`` (second column).

    Rails (:class:`CircleRail`, :class:`EllipseRail`, :class:`FigureEightRail`)
    lie in the plane of the first and third columns of their ``rotation``.

    Parameters
    ----------
    normal : array_like, shape (3,)
        Plane normal in body axes (need not be unit).

    Returns
    -------
    ndarray, shape (3, 3)
        ``[b2 | n | b1]`` with Frisvad's ``(b1, b2)`` of the unit normal ``n``.
    """
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    b1, b2 = frisvad_basis(n)
    return np.column_stack([b2, n, b1])


def _rotation(value, name: str) -> np.ndarray:
    R = as_matrix(value, name, (3, 3))
    if np.max(np.abs(R.T @ R - np.eye(3))) > 1e-9 or np.linalg.det(R) < 0:
        raise ParameterError(f"{name} must be a rotation matrix (R^T R = I within 1e-9, det R = +1)")
    R = R.copy()
    R.setflags(write=False)
    return R


def _frozen_vector(value, name: str, size: int) -> np.ndarray:
    v = as_vector(value, name, size).copy()
    v.setflags(write=False)
    return v


class Rail:
    """Base class of rails (the contract).

    Subclasses implement :meth:`_local` returning the three arrays and set
    ``parameter_range``. Rails are immutable descriptions.
    """

    parameter_range: tuple[float, float] = (0.0, 2.0 * np.pi)
    periodic: bool = True

    def evaluate(self, theta):
        """Return ``(zeta, dzeta, ddzeta)`` at rail parameter(s) ``theta``.

        Parameters
        ----------
        theta : array_like, shape (...)
            Rail parameter (rad for closed rails, m for :class:`SegmentRail`).

        Returns
        -------
        zeta, dzeta, ddzeta : ndarray, shape (..., 3)
            Position in m (body frame, GC origin) and its first and second
            derivatives with respect to ``theta`` (eq. 5.27).
        """
        return self._local(np.asarray(theta))

    def _local(self, theta):  # pragma: no cover - abstract
        raise NotImplementedError

    def kernel_row(self) -> np.ndarray | None:
        """This rail packed for the compiled geometry (:mod:`ballctl.plants.kernels.rails`), or None.

        Closed-form rails return their row; rails the kernels do not know
        (:class:`CallableRail`, user subclasses that override the curve) return
        None and are evaluated in Python.

        Returns
        -------
        ndarray, shape (15,), or None
        """
        return None

    def max_distance_m(self) -> float:
        """Largest distance ``|zeta|`` from the GC over ``parameter_range``, in m."""
        lo, hi = self.parameter_range
        zeta = np.asarray(self.evaluate(np.linspace(lo, hi, _SAMPLES))[0], dtype=float)
        return float(np.max(np.linalg.norm(zeta, axis=-1)))


def _row(kind: int, a: float, b: float, rotation, center) -> np.ndarray:
    """Kernel row ``(kind, a, b, R (9), c (3))`` (:mod:`ballctl.plants.kernels.rails`)."""
    return np.concatenate([[float(kind), float(a), float(b)], np.asarray(rotation, dtype=float).ravel(),
                           np.asarray(center, dtype=float)])


class _ClosedFormRail(Rail):
    """A rail packed into a kernel row: its curve is the compiled one of :mod:`ballctl.plants.kernels.rails`.

    Subclasses implement :meth:`_packed`. A user subclass that redefines the
    curve (overrides ``_local``) has no row and is evaluated in Python.
    """

    def _packed(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _local(self, theta):
        return _rail_kernels.rail_curve(theta, self._packed())

    def kernel_row(self) -> np.ndarray | None:
        """This rail packed for the compiled geometry, or None when a subclass redefines the curve.

        See :meth:`Rail.kernel_row`.

        Returns
        -------
        ndarray, shape (15,), or None
        """
        if type(self)._local is not _ClosedFormRail._local:
            return None
        return self._packed()


@dataclass(frozen=True, kw_only=True)
class CircleRail(_ClosedFormRail):
    r"""Circle ``zeta = c + rho R (cos theta, 0, sin theta)`` (eqs. 5.42, 6.5, 7.8).

    Attributes
    ----------
    radius_m : float
        Circle radius rho in m, > 0.
    rotation : ndarray, shape (3, 3)
        Rotation from the circle's frame to the body frame; the circle lies in
        the plane of the first and third columns. Identity (the ``E1``-``E3``
        plane, as in the disk of section 6) by default.
    center_m : ndarray, shape (3,)
        Centre c in m, body frame translated to the GC.
    """

    radius_m: float
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    center_m: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius_m", check_positive(self.radius_m, "radius_m", "m"))
        object.__setattr__(self, "rotation", _rotation(self.rotation, "rotation"))
        object.__setattr__(self, "center_m", _frozen_vector(self.center_m, "center_m", 3))

    @classmethod
    def from_spherical(cls, radius_m: float, azimuth: float, elevation: float) -> "CircleRail":
        """The paper's rail ``rho B(varsigma(v)) (cos theta, 0, sin theta)``, eqs. (7.8)-(7.10).

        Parameters
        ----------
        radius_m : float
            Circle radius in m.
        azimuth, elevation : float
            Spherical angles (rad) of the unit vector ``n`` (``v = (phi, theta, 1)``).

        Examples
        --------
        The second rail of section 7:

        >>> import numpy as np
        >>> rail = CircleRail.from_spherical(0.9, np.pi / 2, 0.0)
        >>> np.round(rail.evaluate(0.0)[0], 12) + 0.0
        array([0. , 0.9, 0. ])
        """
        return cls(radius_m=radius_m, rotation=paper_rail_basis(spherical_to_cartesian(azimuth, elevation)))

    def _packed(self) -> np.ndarray:
        # an ellipse with equal semi-axes
        return _row(_rail_kernels.KIND_ELLIPSE, self.radius_m, self.radius_m, self.rotation, self.center_m)

    def max_distance_m(self) -> float:
        if not np.any(self.center_m):
            return self.radius_m
        return Rail.max_distance_m(self)


@dataclass(frozen=True, kw_only=True)
class EllipseRail(_ClosedFormRail):
    """Ellipse ``zeta = c + R (a cos theta, 0, b sin theta)``.

    Attributes
    ----------
    semi_axis_first_m, semi_axis_third_m : float
        Semi-axes a and b in m (> 0) along the first and third columns of ``rotation``.
    rotation : ndarray, shape (3, 3)
        Rotation from the ellipse's frame to the body frame.
    center_m : ndarray, shape (3,)
        Centre in m.
    """

    semi_axis_first_m: float
    semi_axis_third_m: float
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    center_m: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        object.__setattr__(self, "semi_axis_first_m", check_positive(self.semi_axis_first_m, "semi_axis_first_m", "m"))
        object.__setattr__(self, "semi_axis_third_m", check_positive(self.semi_axis_third_m, "semi_axis_third_m", "m"))
        object.__setattr__(self, "rotation", _rotation(self.rotation, "rotation"))
        object.__setattr__(self, "center_m", _frozen_vector(self.center_m, "center_m", 3))

    def _packed(self) -> np.ndarray:
        return _row(_rail_kernels.KIND_ELLIPSE, self.semi_axis_first_m, self.semi_axis_third_m, self.rotation,
                    self.center_m)


@dataclass(frozen=True, kw_only=True)
class FigureEightRail(_ClosedFormRail):
    """Figure eight (lemniscate of Gerono) ``zeta = c + R (a sin theta, 0, b sin theta cos theta)``.

    Attributes
    ----------
    half_width_m : float
        a in m (> 0): the curve spans ``[-a, a]`` along the first column of ``rotation``.
    half_height_m : float
        Twice the largest excursion along the third column, b in m (> 0);
        the lobes reach ``+-b/2``.
    rotation : ndarray, shape (3, 3)
    center_m : ndarray, shape (3,)
    """

    half_width_m: float
    half_height_m: float
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    center_m: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        object.__setattr__(self, "half_width_m", check_positive(self.half_width_m, "half_width_m", "m"))
        object.__setattr__(self, "half_height_m", check_positive(self.half_height_m, "half_height_m", "m"))
        object.__setattr__(self, "rotation", _rotation(self.rotation, "rotation"))
        object.__setattr__(self, "center_m", _frozen_vector(self.center_m, "center_m", 3))

    def _packed(self) -> np.ndarray:
        return _row(_rail_kernels.KIND_FIGURE_EIGHT, self.half_width_m, 0.5 * self.half_height_m, self.rotation,
                    self.center_m)


@dataclass(frozen=True, kw_only=True)
class SegmentRail(_ClosedFormRail):
    """Straight segment from ``start_m`` to ``end_m``; parameter = arc length in m from ``start_m``.

    A magnet in a tube: ``parameter_range = (0, length)``. The generalized
    force conjugate to the parameter is the force along the tube in N.
    Outside the range the line is extrapolated; a controller must keep the
    mass inside (the plant does not model end stops).

    Attributes
    ----------
    start_m, end_m : ndarray, shape (3,)
        End points in m, body frame translated to the GC; distinct.
    """

    start_m: np.ndarray
    end_m: np.ndarray
    periodic: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        start = _frozen_vector(self.start_m, "start_m", 3)
        end = _frozen_vector(self.end_m, "end_m", 3)
        if np.linalg.norm(end - start) <= 0.0:
            raise ParameterError("end_m must differ from start_m (a segment of length > 0 m)")
        object.__setattr__(self, "start_m", start)
        object.__setattr__(self, "end_m", end)

    @property
    def length_m(self) -> float:
        """Segment length in m."""
        return float(np.linalg.norm(self.end_m - self.start_m))

    @property
    def parameter_range(self) -> tuple[float, float]:  # type: ignore[override]
        return (0.0, self.length_m)

    def _packed(self) -> np.ndarray:
        # the unit direction as the first column of R, the start as the centre
        R = np.zeros((3, 3))
        R[:, 0] = (self.end_m - self.start_m) / self.length_m
        return _row(_rail_kernels.KIND_SEGMENT, 0.0, 0.0, R, self.start_m)

    def max_distance_m(self) -> float:
        # |zeta| is convex along a line: its maximum over the segment is at an end.
        return float(max(np.linalg.norm(self.start_m), np.linalg.norm(self.end_m)))


@dataclass(frozen=True, kw_only=True)
class CallableRail(Rail):
    """Any user rail: ``function(theta) -> (zeta, dzeta, ddzeta)``.

    Attributes
    ----------
    function : callable
        Maps ``theta`` of shape (...) to three arrays of shape (..., 3) in m,
        m/unit and m/unit^2. Must be vectorised and, for Jacobians to machine
        precision, complex-step safe.
    parameter_range : tuple of float
        ``(low, high)`` range of ``theta`` the rail exists on; it is sampled
        at 4097 points to check that the rail stays inside the ball.
    periodic : bool
        Whether the rail closes on itself over the range.
    """

    function: Callable
    parameter_range: tuple[float, float] = (0.0, 2.0 * np.pi)
    periodic: bool = True

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise ParameterTypeError(f"function must be callable, got {self.function!r}")
        lo, hi = (float(v) for v in self.parameter_range)
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise ParameterError(
                f"parameter_range must be finite (low, high) with high > low, got {self.parameter_range!r}")
        object.__setattr__(self, "parameter_range", (lo, hi))
        theta = np.linspace(lo, hi, 5)
        out = self.function(theta)
        if not (isinstance(out, tuple) and len(out) == 3):
            raise ParameterTypeError("function must return a tuple (zeta, dzeta, ddzeta)")
        for name, arr in zip(("zeta", "dzeta", "ddzeta"), out):
            if np.shape(arr) != (5, 3):
                raise ShapeError(f"function must return {name} of shape theta.shape + (3,), "
                                 f"got {np.shape(arr)} for theta of shape (5,)")

    def _local(self, theta):
        zeta, dzeta, ddzeta = self.function(theta)
        return np.asarray(zeta), np.asarray(dzeta), np.asarray(ddzeta)
