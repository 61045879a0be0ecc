r"""Which rail layouts make the rolling ball controllable along a straight-line roll.

For each layout (1-4 rails, circles, ellipses or segments, in various
orientations) a ball is built whose shell CM balances the parked masses
(total CM at the GC), so that a uniform roll about a principal axis of the
total inertia is an exact solution
(:class:`~ballctl.references.rolling.StraightRollReference`). The
constrained system (:meth:`RollingBall.to_constrained_system`, rail
accelerations as inputs) is linearized along that roll
(:func:`ballctl.linearize`, independent ``(yaw, pitch, roll, theta_i)``,
admissible-dependent ``(contact_x, contact_y)``), discretized (zero-order
hold) and the rank of the discrete reachability Gramian over one revolution
(:func:`ballctl.design.controllability.discrete_gramian`) is reported: full rank
``N = 2 n + 8`` means every small deviation from the roll (position,
attitude, rail positions and their rates) can be steered to zero over one
revolution.

Two first-order invariants of every straight roll
-------------------------------------------------
No layout reaches rank N: along the roll about ``e1`` the linearized
rolling constraint ``y_dot + r omega_1 = 0`` integrates to
``delta contact_y + r delta roll = const`` (the along-track position and the
roll phase cannot be set independently at first order), and the vertical
angular momentum about the contact point (a combination of ``yaw_rate`` and
``pitch`` with small rail terms) is conserved at first order: internal
masses exert no vertical torque and the ``v_cp x p`` term is a total time
derivative along the roll. Both are first-order effects of the
nonholonomic constraints, not properties of the layout (the nonlinear ball
can change them by non-straight manoeuvres). A layout is therefore called
*controllable along the roll* when the rank is ``N - 2``
(:data:`ROLL_INVARIANTS`); :attr:`LayoutResult.fully_controllable` asks for N.

The rank is the one rank test of ballctl,
:func:`~ballctl.design.controllability.gramian_rank` (the Jacobi-scaled Gramian,
so the verdict does not depend on the units of the states; relative tolerance
``rank_rtol``, default :data:`~ballctl.design.controllability.RANK_RTOL`); the
smallest relative eigenvalue of that scaled Gramian outside the invariants is
reported too, so a layout that is controllable only in a weak,
ill-conditioned sense is visible. ``state_scales`` (1 m and 1 rad, rates per
s by default) set the units in which the least controllable direction is
written.

References
----------
V. Putkaradze, S.M. Rogers, Meccanica 53 (2018), eqs. (5.23)-(5.28), (7.8).
A.G. Agúndez et al., Mech. Mach. Theory 203 (2024) 105795, sections 2.2-2.3.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError, ParameterTypeError
from ..design.controllability import RANK_RTOL, discrete_gramian
from ..linear.discretize import DiscreteLTVSystem, discretize
from ..linear.linearize import linearize
from ..linear.partition import Partition
from ..plants.rolling_ball import PointMass, RollingBall, RollingBallParameters, RollingBallSystem
from ..plants.rails import CircleRail, EllipseRail, Rail, SegmentRail, plane_rotation
from ..references.rolling import StraightRollReference

__all__ = [
    "ROLL_INVARIANTS",
    "RailLayout",
    "LayoutResult",
    "LayoutTable",
    "default_layouts",
    "compare_rail_layouts",
]

#: First-order invariants of every straight roll (module docstring): the Gramian rank is at most N - 2.
ROLL_INVARIANTS = 2


@dataclass(frozen=True, kw_only=True)
class RailLayout:
    """A set of rails, each carrying one point mass, with the masses' parking positions.

    Attributes
    ----------
    name : str
        Label in tables.
    rails : tuple of Rail
        1-4 rails (any number >= 1 works).
    park_angles : tuple of float
        Rail parameter of each parked mass (rad, or m for segments); default 0.
    shape : str
        Description of the rail shapes ("circle", "ellipse", "segment", "mixed").
    orientation : str
        Description of the orientations (e.g. plane normals).
    """

    name: str
    rails: tuple[Rail, ...]
    park_angles: tuple[float, ...] = ()
    shape: str = ""
    orientation: str = ""

    def __post_init__(self) -> None:
        rails = tuple(self.rails)
        if not rails or not all(isinstance(r, Rail) for r in rails):
            raise ParameterTypeError(f"layout {self.name!r}: rails must be a non-empty sequence of "
                                     "ballctl.plants.rails.Rail")
        park = tuple(float(a) for a in self.park_angles) if self.park_angles else (0.0,) * len(rails)
        if len(park) != len(rails):
            raise ParameterError(f"layout {self.name!r}: park_angles needs one value per rail ({len(rails)}), "
                             f"got {len(park)}")
        object.__setattr__(self, "rails", rails)
        object.__setattr__(self, "park_angles", park)

    @property
    def n_rails(self) -> int:
        return len(self.rails)


def straight_roll_setup(layout: RailLayout, *, shell_mass_kg: float = 1.0, point_mass_kg: float = 0.2,
                        radius_m: float = 1.0, principal_inertia_kgm2=(0.9, 1.0, 1.1),
                        gravity_mps2: float = 9.81) -> tuple[RollingBallSystem, np.ndarray]:
    r"""A ball with the layout's masses parked and balanced, ready to roll straight.

    The shell's own CM is placed at ``chi0 = -sum m_i zeta_i(theta_park) / m0``
    so that the total CM is at the GC. The rolling axis ``a`` is the principal
    axis of the total inertia about the GC closest to ``E1``; the chart
    rotation ``C`` (rows ``a, ., .``, right-handed) maps it to ``e1``, so the
    ball starts with ``Lambda0 = C`` and rolls about ``e1`` with
    ``yaw = pitch = 0``.

    Parameters
    ----------
    layout : RailLayout
    shell_mass_kg, point_mass_kg : float
        m0 and every m_i in kg.
    radius_m : float
        Ball radius in m.
    principal_inertia_kgm2 : sequence of 3 float
        Shell inertia about its CM in kg m^2.
    gravity_mps2 : float
        g in m/s^2.

    Returns
    -------
    system : RollingBallSystem
        Acceleration inputs, chart rotation ``C``.
    rolling_axis_body : ndarray, shape (3,)
        ``a`` in body axes.

    Raises
    ------
    ValueError
        When the balancing shell CM would leave the ball.
    """
    zeta = np.array([np.asarray(r.evaluate(a)[0], dtype=float) for r, a in zip(layout.rails, layout.park_angles)])
    chi0 = -point_mass_kg * zeta.sum(axis=0) / shell_mass_kg
    params = RollingBallParameters(mass_kg=shell_mass_kg, radius_m=radius_m,
                                   principal_inertia_kgm2=np.asarray(principal_inertia_kgm2, dtype=float),
                                   cm_offset_m=chi0,
                                   point_masses=tuple(PointMass(mass_kg=point_mass_kg, rail=r) for r in layout.rails),
                                   gravity_mps2=gravity_mps2)

    def point_inertia(m, p):
        return m * (p @ p * np.eye(3) - np.outer(p, p))

    inertia = np.diag(params.principal_inertia_kgm2) + point_inertia(shell_mass_kg, chi0)
    for p in zeta:
        inertia = inertia + point_inertia(point_mass_kg, p)
    _, vecs = np.linalg.eigh(inertia)
    a = vecs[:, int(np.argmax(np.abs(vecs[0])))]
    a = a * np.sign(a[0])
    b = np.cross(a, [0.0, 0.0, 1.0]) if abs(a[2]) < 0.9 else np.cross(a, [0.0, 1.0, 0.0])
    b = -b / np.linalg.norm(b)
    c = np.cross(a, b)
    C = np.vstack([a, b, c])
    system = RollingBall(params).to_constrained_system(chart_rotation=C)
    return system, a


@dataclass(frozen=True)
class LayoutResult:
    """Controllability of one layout along the straight roll.

    Attributes
    ----------
    layout : RailLayout
    n_states : int
        N = 2 n + 8.
    rank : int
        Rank of the discrete reachability Gramian over one revolution
        (:func:`~ballctl.design.controllability.gramian_rank`).
    min_relative_eigenvalue : float
        The smallest eigenvalue of the Jacobi-scaled Gramian outside the two
        invariants (the third smallest), over the largest: how well the
        weakest steerable direction is reached.
    least_controllable : tuple
        ``(state, weight)`` pairs of the least controllable direction.
    reference_acceleration : float
        ``max |xdd|`` of the roll (0 to rounding: the roll is an exact solution).
    """

    layout: RailLayout
    n_states: int
    rank: int
    min_relative_eigenvalue: float
    least_controllable: tuple
    reference_acceleration: float

    @property
    def controllable(self) -> bool:
        """True when the rank is ``N - ROLL_INVARIANTS``: every direction but the two invariants is reachable."""
        return self.rank >= self.n_states - ROLL_INVARIANTS

    @property
    def fully_controllable(self) -> bool:
        """True when the Gramian has full rank N (never along a straight roll, see the module docstring)."""
        return self.rank == self.n_states


@dataclass(frozen=True)
class LayoutTable:
    """Results of :func:`compare_rail_layouts`, one row per layout.

    Attributes
    ----------
    rows : tuple of LayoutResult
    roll_rate : float
        rad/s.
    horizon_s : float
        Gramian horizon in s (one revolution).
    rank_rtol : float
    """

    rows: tuple[LayoutResult, ...]
    roll_rate: float
    horizon_s: float
    rank_rtol: float

    def __getitem__(self, name: str) -> LayoutResult:
        for row in self.rows:
            if row.layout.name == name:
                return row
        raise ParameterError(f"no layout named {name!r}; layouts are {[r.layout.name for r in self.rows]}")

    def to_table(self) -> str:
        """Plain-text table."""
        lines = [f"Straight roll at {self.roll_rate:g} rad/s, reachability Gramian over {self.horizon_s:.4g} s "
                 f"(rank tolerance {self.rank_rtol:g}); controllable = rank N - {ROLL_INVARIANTS} "
                 "(two first-order invariants of every straight roll)",
                 f"{'layout':<28} {'rails':>5} {'shape':<9} {'orientation':<34} {'rank':>7} {'eig3/max':>11}  "
                 f"controllable"]
        for r in self.rows:
            lines.append(f"{r.layout.name:<28} {r.layout.n_rails:>5d} {r.layout.shape:<9} {r.layout.orientation:<34} "
                         f"{r.rank:>3d}/{r.n_states:<3d} {r.min_relative_eigenvalue:>11.2e}  "
                         f"{'yes' if r.controllable else 'NO'}")
        return "\n".join(lines)

    def to_records(self) -> list[dict]:
        """One dict per layout (for CSV/JSON)."""
        return [{"layout": r.layout.name, "n_rails": r.layout.n_rails, "shape": r.layout.shape,
                 "orientation": r.layout.orientation, "rank": r.rank, "n_states": r.n_states,
                 "min_relative_eigenvalue": r.min_relative_eigenvalue, "controllable": r.controllable}
                for r in self.rows]

    def __str__(self) -> str:
        return self.to_table()


def default_layouts() -> tuple[RailLayout, ...]:
    """The layouts compared in ``docs``: 1-4 rails, circles, ellipses and segments, several orientations.

    Body axis ``E1`` is (close to) the rolling axis of the straight roll.

    Returns
    -------
    tuple of RailLayout
    """
    e1, e2, e3 = np.eye(3)
    tet = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=float) / np.sqrt(3)

    def circle(n, rho=0.6):
        return CircleRail(radius_m=rho, rotation=plane_rotation(n))

    def ellipse(n, a=0.7, b=0.4):
        return EllipseRail(semi_axis_first_m=a, semi_axis_third_m=b, rotation=plane_rotation(n))

    def segment(d, half=0.6):
        d = np.asarray(d, dtype=float) / np.linalg.norm(d)
        return SegmentRail(start_m=-half * d, end_m=half * d)

    mid = 0.6
    return (
        RailLayout(name="1 circle, rolling plane", rails=(circle(e1),), shape="circle", orientation="normal E1"),
        RailLayout(name="1 circle, horizontal", rails=(circle(e3),), shape="circle", orientation="normal E3"),
        RailLayout(name="1 segment along E2", rails=(segment(e2),), park_angles=(mid,), shape="segment",
                   orientation="E2"),
        RailLayout(name="2 circles, coplanar", rails=(circle(e3, 0.6), circle(e3, 0.3)), shape="circle",
                   orientation="normals E3, E3"),
        RailLayout(name="2 circles, orthogonal", rails=(circle(e1), circle(e2)), shape="circle",
                   orientation="normals E1, E2"),
        RailLayout(name="3 circles, coplanar", rails=(circle(e3, 0.7), circle(e3, 0.5), circle(e3, 0.3)),
                   shape="circle", orientation="normals E3, E3, E3"),
        RailLayout(name="3 circles, orthogonal", rails=(circle(e1), circle(e2), circle(e3)), shape="circle",
                   orientation="normals E1, E2, E3"),
        RailLayout(name="3 ellipses, orthogonal", rails=(ellipse(e1), ellipse(e2), ellipse(e3)), shape="ellipse",
                   orientation="normals E1, E2, E3"),
        RailLayout(name="3 segments, orthogonal", rails=(segment(e1), segment(e2), segment(e3)),
                   park_angles=(mid, mid, mid), shape="segment", orientation="E1, E2, E3"),
        RailLayout(name="4 circles, tetrahedral", rails=tuple(circle(n) for n in tet), shape="circle",
                   orientation="tetrahedron normals"),
    )


def compare_rail_layouts(layouts: Sequence[RailLayout] | None = None, *, roll_rate: float = 1.0,
                         samples: int = 48, rank_rtol: float = RANK_RTOL, state_scales: dict[str, float] | None = None,
                         executor: Executor | None = None, **ball_options) -> LayoutTable:
    r"""Tabulate the controllability of rail layouts along a straight-line roll.

    Parameters
    ----------
    layouts : sequence of RailLayout, optional
        Default :func:`default_layouts`.
    roll_rate : float
        Roll rate in rad/s; the horizon is one revolution ``2 pi / |roll_rate|``.
    samples : int
        Linearization samples (= discretization steps) over the horizon.
    rank_rtol : float
        Relative tolerance of the rank test (:func:`~ballctl.design.controllability.gramian_rank`).
    state_scales : dict, optional
        Scale (deviation of unit size) of named reduced states; the reported
        directions are those of the scaled states ``X / scale`` (the rank does
        not depend on them). Default 1 for every state.
    executor : concurrent.futures.Executor, optional
        Evaluate the layouts there, one task each (a ``ThreadPoolExecutor``,
        a ``ProcessPoolExecutor`` or a Dask client's ``get_executor()``); the
        table is the same as the serial one, in the order of ``layouts``.
    **ball_options
        Passed to :func:`straight_roll_setup` (masses, radius, inertia, g).

    Returns
    -------
    LayoutTable

    Examples
    --------
    >>> from ballctl.studies.rail_layouts import compare_rail_layouts, default_layouts
    >>> table = compare_rail_layouts(default_layouts()[:1], samples=16)
    >>> table.rows[0].controllable
    False
    """
    if layouts is None:
        layouts = default_layouts()
    if not roll_rate or not np.isfinite(roll_rate):
        raise ParameterError(f"roll_rate must be finite and non-zero (rad/s), got {roll_rate!r}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 2:
        raise ParameterError(f"samples must be an integer >= 2, got {samples!r}")
    horizon = 2 * np.pi / abs(roll_rate)
    dt = horizon / samples
    times = dt * np.arange(samples)
    layouts = list(layouts)
    for k, layout in enumerate(layouts):
        if not isinstance(layout, RailLayout):
            raise ParameterTypeError(f"layouts[{k}] must be a RailLayout, got {type(layout).__name__}")
    args = (float(roll_rate), times, dt, float(rank_rtol), dict(state_scales or {}), dict(ball_options))
    if executor is None:
        rows = [_layout_row(layout, *args) for layout in layouts]
    else:
        if not isinstance(executor, Executor):
            raise ParameterTypeError("executor must be a concurrent.futures.Executor (e.g. a ThreadPoolExecutor or "
                                     f"a Dask client's get_executor()), got {type(executor).__name__}")
        futures = [executor.submit(_layout_row, layout, *args) for layout in layouts]
        rows = [f.result() for f in futures]
    return LayoutTable(tuple(rows), float(roll_rate), float(horizon), float(rank_rtol))


def _layout_row(layout: RailLayout, roll_rate: float, times: np.ndarray, dt: float, rank_rtol: float,
                state_scales: dict, ball_options: dict) -> LayoutResult:
    """One row of :func:`compare_rail_layouts` (a task for an executor)."""
    system, _ = straight_roll_setup(layout, **ball_options)
    n = layout.n_rails
    ref = StraightRollReference(system, layout.park_angles, roll_rate=roll_rate)
    part = Partition.from_coordinates(system, ["yaw", "pitch", "roll"] + [f"theta_{i + 1}" for i in range(n)],
                                      ["contact_x", "contact_y"])
    ltv = linearize(system, ref, times, part)
    disc = discretize(ltv, dt)
    scales = np.ones(ltv.n_states)
    for name, value in state_scales.items():
        scales[ltv.state_index(name)] = float(value)
    S = np.diag(1.0 / scales)
    Sinv = np.diag(scales)
    rep = discrete_gramian(DiscreteLTVSystem.from_arrays(S @ disc.Ad @ Sinv, S @ disc.Bd, dt=disc.dt,
                                                         state_names=ltv.state_names), rank_rtol=rank_rtol)
    ev = rep.scaled_eigenvalues
    acc = float(np.max(np.abs(ref(times[:4]).xdd)))
    k = min(ROLL_INVARIANTS, len(ev) - 1)
    weakest = rep.directions[k] if rep.rank >= ltv.n_states - ROLL_INVARIANTS else rep.directions[0]
    return LayoutResult(layout, ltv.n_states, int(rep.rank), float(max(ev[k], 0.0)), tuple(weakest), acc)
