r"""Families of locally optimal maneuvers: seeds that reach each one, and the signature that names it.

A rolling-mass maneuver has several locally optimal families. Two numbers tell
them apart, and both are topological (a continuous deformation of a maneuver
cannot change them without passing through a costlier or infeasible one):

* how far each mass travels on a closed rail, in whole turns
  (``round((theta_i(T) - theta_i(0)) / 2 pi)``): a mass that rocks below the
  centre and one that swings over the top are different branches;
* on which side the ball passes each obstacle: the sign of the angle the
  contact point sweeps around the obstacle's centre (positive,
  counter-clockwise: the obstacle stays on the ball's left; negative: on its right).

:class:`ManeuverBranch` is such a signature (``None`` entries: not imposed);
:func:`branch_of` reads it off a plan; :func:`side_seeds` gives the contact
paths that pass every obstacle blocking the straight way on a chosen side;
:func:`wind` adds whole turns of a rail to a guess. The planner
(:func:`~ballctl.planning.planner.plan_maneuver`) solves the seeds, reads each
result's branch and keeps the cheapest; its table is :class:`BranchOutcome`.

References
----------
S. Bhattacharya, M. Likhachev, V. Kumar, "Topological constraints in
search-based robot path planning", Auton. Robots 33 (2012) 273-290
(homotopy classes around obstacles by swept angles).
V. Putkaradze, S.M. Rogers, Numer. Algebra Control Optim. 11(2) (2021)
(several optimal families of the same ball maneuver, reached by continuation).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError

__all__ = ["BranchOutcome", "ManeuverBranch", "branch_of"]

_SIDES = ("left", "right")


@dataclass(frozen=True, kw_only=True)
class ManeuverBranch:
    """A family of maneuvers: whole turns of each mass on its rail, side of each obstacle.

    Attributes
    ----------
    rail_turns : tuple of (int or None), optional
        Per mass: the whole turns its rail travel rounds to (signed, in the
        rail's positive direction); ``None`` for a mass on a segment rail or
        left free. ``None``: all free.
    obstacle_sides : tuple of str, optional
        Per obstacle: ``"left"`` (the obstacle stays on the ball's left: the
        ball passes it on its right) or ``"right"``; ``None`` for free.
    """

    rail_turns: tuple[int | None, ...] | None = None
    obstacle_sides: tuple[str | None, ...] | None = None

    def __post_init__(self) -> None:
        if self.rail_turns is not None:
            turns = tuple(self.rail_turns)
            for k, v in enumerate(turns):
                if v is not None and (isinstance(v, bool) or int(v) != v):
                    raise ParameterError(f"rail_turns[{k}] must be a whole number of turns or None, got {v!r}")
            object.__setattr__(self, "rail_turns", tuple(None if v is None else int(v) for v in turns))
        if self.obstacle_sides is not None:
            sides = tuple(self.obstacle_sides)
            for k, v in enumerate(sides):
                if v is not None and v not in _SIDES:
                    raise ParameterError(f"obstacle_sides[{k}] must be 'left', 'right' or None, got {v!r}")
            object.__setattr__(self, "obstacle_sides", sides)

    def label(self) -> str:
        """A short text: ``turns (0, 1) | sides (left, right)``."""
        parts = []
        if self.rail_turns is not None:
            parts.append("turns (" + ", ".join("free" if t is None else f"{t:+d}" for t in self.rail_turns) + ")")
        if self.obstacle_sides:
            parts.append("sides (" + ", ".join(s or "free" for s in self.obstacle_sides) + ")")
        return " | ".join(parts) or "any"

    def admits(self, other: ManeuverBranch) -> bool:
        """Whether ``other`` (a plan's signature) lies in this family (free entries match anything).

        Parameters
        ----------
        other : ManeuverBranch

        Returns
        -------
        bool
        """
        for mine, theirs in ((self.rail_turns, other.rail_turns), (self.obstacle_sides, other.obstacle_sides)):
            if mine is None:
                continue
            if theirs is None or len(mine) != len(theirs):
                return False
            if any(a is not None and a != b for a, b in zip(mine, theirs)):
                return False
        return True


@dataclass(frozen=True)
class BranchOutcome:
    """One row of the planner's branch table.

    Attributes
    ----------
    seed : str
        How the solve was started (a :meth:`ManeuverBranch.label` or a description).
    branch : ManeuverBranch
        The family the solve landed in (:func:`branch_of`).
    objective : float
        Its cost (the problem's objective).
    converged : bool
    intervals : int
        Mesh intervals of the solve.
    iterations : int
    rail_travel_rad : tuple of float
        ``theta_i(T) - theta_i(0)`` per mass (rad; m on a segment rail).
    full_mesh : bool
        Solved on the full mesh with every round (clearance, contact) of the
        planner; False for the search's single coarse solves.
    chosen : bool
        The family returned.
    """

    seed: str
    branch: ManeuverBranch
    objective: float
    converged: bool
    intervals: int
    iterations: int
    rail_travel_rad: tuple[float, ...]
    full_mesh: bool = False
    chosen: bool = False


def swept_angle(points: np.ndarray, center: np.ndarray) -> float:
    """Angle in rad the vector from ``center`` to ``points`` (K, 2) sweeps along them (counter-clockwise > 0)."""
    rel = np.asarray(points, dtype=float) - center
    ang = np.unwrap(np.arctan2(rel[:, 1], rel[:, 0]))
    return float(ang[-1] - ang[0])


def branch_of(plan) -> ManeuverBranch:
    """The family of a plan: whole turns of each mass on a closed rail, side of each obstacle.

    Parameters
    ----------
    plan : ManeuverPlan

    Returns
    -------
    ManeuverBranch
    """
    n = plan.plant.n_masses
    rails = [pm.rail for pm in plan.plant.params.point_masses]
    travel = plan.x[-1, :n] - plan.x[0, :n]
    turns = tuple(int(np.rint(d / (2 * np.pi))) if rail.periodic else None for d, rail in zip(travel, rails))
    obstacles = plan.problem.obstacles
    sides = None
    if obstacles:
        path = plan.contact(np.linspace(plan.nodes[0], plan.nodes[-1], 40 * (plan.nodes.size - 1) + 1))
        sides = tuple("left" if swept_angle(path, ob.center_m) > 0 else "right" for ob in obstacles)
    return ManeuverBranch(rail_turns=turns, obstacle_sides=sides)


def blocking(problem, start: np.ndarray, end: np.ndarray) -> list[int]:
    """Indices of the obstacles (with the margin) that the straight segment start -> end crosses, in its order."""
    d = end - start
    L2 = float(d @ d)
    hits = []
    for k, ob in enumerate(problem.obstacles):
        s = 0.0 if L2 == 0 else float(np.clip((ob.center_m - start) @ d / L2, 0.0, 1.0))
        if np.linalg.norm(start + s * d - ob.center_m) < ob.radius_m + problem.clearance_margin_m:
            hits.append((s, k))
    return [k for _, k in sorted(hits)]


def side_seeds(problem, start: np.ndarray, end: np.ndarray, *, max_obstacles: int = 3,
               sides: tuple[str | None, ...] | None = None) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Polylines from start to end that pass the blocking obstacles on every combination of sides.

    Parameters
    ----------
    problem : ManeuverProblem
    start, end : ndarray, shape (2,)
        Contact points in m.
    max_obstacles : int
        At most this many blocking obstacles (the first along the way) get both
        sides; the others keep the side of their first combination (``2^max``
        seeds at most).
    sides : tuple of str or None, optional
        Imposed sides by obstacle index (a requested branch).

    Returns
    -------
    list of (sides, waypoints)
        ``sides``: per obstacle, the side the seed passes it on; ``waypoints``:
        ndarray, shape (W, 2), from start to end.
    """
    direction = end - start
    length = float(np.linalg.norm(direction))
    unit = direction / length if length > 0 else np.array([1.0, 0.0])
    left_normal = np.array([-unit[1], unit[0]])
    order = blocking(problem, start, end)
    free = [k for k in order if sides is None or sides[k] is None][:max_obstacles]
    seeds = []
    for combo in itertools.product(_SIDES, repeat=len(free)):
        chosen = {}
        for k, ob in enumerate(problem.obstacles):
            if sides is not None and sides[k] is not None:
                chosen[k] = sides[k]
            else:  # the side the straight way already takes
                rel = ob.center_m - start
                chosen[k] = "left" if unit[0] * rel[1] - unit[1] * rel[0] > 0 else "right"
        chosen.update(dict(zip(free, combo)))
        points = [start]
        for k in order:
            ob = problem.obstacles[k]
            # "left": the obstacle on the ball's left, so the ball goes round it on the right-hand side
            sign = -1.0 if chosen[k] == "left" else 1.0
            offset = 1.3 * (ob.radius_m + problem.clearance_margin_m)
            points.append(ob.center_m + sign * offset * left_normal)
        points.append(end)
        seeds.append((tuple(chosen[k] for k in range(len(problem.obstacles))), np.array(points)))
    return seeds


def along_polyline(waypoints: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Points on a polyline at the arclength fraction ``3 s^2 - 2 s^3`` of ``s = t / T`` (rest to rest)."""
    seg = np.linalg.norm(np.diff(waypoints, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    s = times / times[-1]
    arc = (3 * s ** 2 - 2 * s ** 3) * cum[-1]
    if cum[-1] == 0:
        return np.tile(waypoints[0], (times.size, 1))
    return np.column_stack([np.interp(arc, cum, waypoints[:, j]) for j in range(waypoints.shape[1])])


def wind(X: np.ndarray, times: np.ndarray, mass: int, n: int, turns: float) -> np.ndarray:
    """A guess with mass ``mass`` sent ``turns`` more turns round its rail (smoothstep in time)."""
    X = X.copy()
    s = times / times[-1]
    X[:, mass] += (3 * s ** 2 - 2 * s ** 3) * 2 * np.pi * turns
    X[:, n + mass] += (6 * s - 6 * s ** 2) / times[-1] * 2 * np.pi * turns
    return X
