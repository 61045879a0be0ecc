r"""Accuracy you can read: the discretization error of a plan and the checks of its replay.

Hermite-Simpson collocation converges at order 4 in the interval length: the
state's global error and the optimal cost's error both fall ~16-fold when
every interval is halved (measured on the one-mass disk: cost changes of
0.147, 0.0096, 0.00061 from 50 to 100, 200, 400 intervals). So halving every
interval of a mesh and re-solving gives the Richardson estimate of the finer
plan's cost error

.. math:: |J_{2N} - J^*| \approx |J_{2N} - J_N| / (2^4 - 1),

valid in the asymptotic range (the same family of optima on both meshes,
which :func:`~ballctl.planning.branches.branch_of` checks).

A plan is only as good as its replay: :func:`replay_checks` integrates the
plant under the planned inputs (DOP853, 1e-12, restarting at the mesh nodes:
:func:`~ballctl.planning.maneuver.resimulate`) and checks, with a relative
tolerance ``tol`` on the problem's scales -- the length ``L = max(distance to
the target, plant radius)``, the rate ``max(L / r, 1 rad) / T`` --

* the end conditions: target contact point within ``tol L``, final contact
  velocity within ``tol L / T``, rest within the rate scale, heading within ``tol pi``;
* every obstacle cleared by its margin less ``tol L`` on the replayed path;
* rail speeds, rail accelerations (the input's quadratics between the points)
  or forces within ``(1 + tol)`` of their limits, and the masses between the
  ends of segment rails.

:func:`~ballctl.planning.planner.plan_maneuver` halves the mesh until the cost
estimate and every check meet ``tol`` (:class:`PlanAccuracy`), or reports the
plan not converged with the check that failed (:class:`AccuracyReport`).

References
----------
J.T. Betts, *Practical Methods for Optimal Control and Estimation Using
Nonlinear Programming*, 2nd ed., SIAM (2010), section 4.7 (mesh refinement,
the local error of a collocation interval).
L.F. Richardson, "The deferred approach to the limit", Phil. Trans. R. Soc. A
226 (1927) 299-361.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_integer, check_positive
from ._models import BallModel, plant_model
from .maneuver import ManeuverPlan, optional_limit, resimulate

__all__ = ["DEFAULT_ACCURACY", "AccuracyReport", "PlanAccuracy", "ReplayCheck", "replay_checks"]

#: Order of Hermite-Simpson collocation: halving every interval divides the error by 2**ORDER.
ORDER = 4


@dataclass(frozen=True, kw_only=True)
class PlanAccuracy:
    """The accuracy a plan must meet before it is reported converged.

    Attributes
    ----------
    tolerance : float
        Relative tolerance (dimensionless, > 0) of the cost's estimated
        discretization error and of every replay check (:func:`replay_checks`).
    max_intervals : int
        The mesh is halved at most up to this many intervals, >= 2; a plan that
        needs more is reported not converged, with the estimate reached.
    """

    tolerance: float = 1e-6
    max_intervals: int = 800

    def __post_init__(self) -> None:
        object.__setattr__(self, "tolerance", check_positive(self.tolerance, "tolerance"))
        object.__setattr__(self, "max_intervals", check_integer(self.max_intervals, "max_intervals", minimum=2))


#: The planner's default accuracy: 1e-6 relative, at most 800 intervals.
DEFAULT_ACCURACY = PlanAccuracy()


@dataclass(frozen=True)
class ReplayCheck:
    """One condition checked on the replay of a plan.

    Attributes
    ----------
    name : str
        What is checked (names the problem's field).
    value : float
        What the replay gives.
    allowed : float
        The bound it must meet (``value <= allowed``; for clearance, ``value >= allowed``).
    unit : str
    passed : bool
    """

    name: str
    value: float
    allowed: float
    unit: str
    passed: bool

    def text(self) -> str:
        """``name: value unit (allowed ...)``."""
        rel = ">=" if self.name.startswith("obstacle") else "<="
        return f"{self.name}: {self.value:.3g} {self.unit} (must be {rel} {self.allowed:.3g} {self.unit})"


@dataclass(frozen=True)
class AccuracyReport:
    """The discretization-error estimate of a plan and the checks of its replay.

    Attributes
    ----------
    tolerance : float
        The relative tolerance asked for.
    meets : bool
        The cost estimate and every check meet it.
    cost_error_estimate : float
        Estimated ``|J - J*|`` of the returned plan (Richardson, order 4); ``nan``
        when only one mesh was solved.
    relative_cost_error : float
        ``cost_error_estimate / max(|J|, tiny)``.
    mesh_sizes : tuple of int
        Intervals of every mesh solved, the returned plan's last.
    objectives : tuple of float
        The cost on each of them.
    end_state_error : float
        ``max |x_replay(T) - x_plan(T)|`` (state units): the global error of the transcription.
    checks : tuple of ReplayCheck
    message : str
    """

    tolerance: float
    meets: bool
    cost_error_estimate: float
    relative_cost_error: float
    mesh_sizes: tuple[int, ...]
    objectives: tuple[float, ...]
    end_state_error: float
    checks: tuple[ReplayCheck, ...]
    message: str

    @property
    def failures(self) -> tuple[ReplayCheck, ...]:
        """The checks that failed."""
        return tuple(c for c in self.checks if not c.passed)


def scales(plan: ManeuverPlan) -> tuple[float, float, float]:
    """``(L in m, rate scale in rad/s, speed scale in m/s)`` of a plan's problem."""
    pb = plan.problem
    model = plant_model(plan.plant)
    r = plan.plant.params.radius_m
    start = model.contact(pb.initial_state, pb.initial_state)
    end = plan.contact()[-1] if pb.target_contact_m is None else pb.target_contact_m
    L = max(float(np.linalg.norm(np.asarray(end) - start)), r)
    T = plan.duration_s
    return L, max(L / r, 1.0) / T, L / T


def replay_checks(plan: ManeuverPlan, tolerance: float, *, per_interval: int = 20) -> tuple[
        tuple[ReplayCheck, ...], float]:
    """Replay a plan's inputs on the plant and check its end conditions, obstacles and limits.

    Parameters
    ----------
    plan : ManeuverPlan
    tolerance : float
        Relative tolerance on the problem's scales (module docstring).
    per_interval : int
        Replay samples per mesh interval.

    Returns
    -------
    checks : tuple of ReplayCheck
    end_state_error : float
        ``max |x_replay(T) - x_plan(T)|``.
    """
    tol = check_positive(tolerance, "tolerance")
    pb, model = plan.problem, plant_model(plan.plant)
    n = model.n
    t = np.unique(np.concatenate([np.linspace(a, b, per_interval + 1) for a, b in zip(plan.nodes[:-1],
                                                                                       plan.nodes[1:])]))
    t_r, x_r = resimulate(plan, t)
    L, rate, speed = scales(plan)
    x0 = pb.initial_state
    contact = model.contact(x_r, x0)
    checks: list[ReplayCheck] = []

    def add(name, value, allowed, unit, above=False):
        checks.append(ReplayCheck(name, float(value), float(allowed), unit,
                                  bool(value >= allowed if above else value <= allowed)))

    if pb.target_contact_m is not None:
        add("target_contact_m: replayed end distance", np.linalg.norm(contact[-1] - pb.target_contact_m), tol * L, "m")
    u_end = plan.input(plan.nodes[-1])
    xdot_end = model.f_numpy(x_r[-1], u_end)
    if pb.final_velocity_mps is not None:
        v = xdot_end[-2:] if isinstance(model, BallModel) else -plan.plant.params.radius_m * xdot_end[2 * n:2 * n + 1]
        add("final_velocity_mps: replayed end velocity error", np.linalg.norm(v - pb.final_velocity_mps),
            tol * speed, "m/s")
    if pb.rest_at_end:
        add("rest_at_end: replayed end rates", np.abs(x_r[-1, model.rest_indices]).max(), tol * rate, "rad/s")
    if pb.target_heading_rad is not None:
        dh = np.angle(np.exp(1j * (float(model.heading(x_r[-1])) - pb.target_heading_rad)))
        add("target_heading_rad: replayed end heading error", abs(dh), tol * np.pi, "rad")
    for k, ob in enumerate(pb.obstacles):
        add(f"obstacle {k} clearance on the replayed path", ob.clearance(contact).min(),
            pb.clearance_margin_m - tol * L, "m", above=True)
    spd = optional_limit(pb.max_rail_speed, "max_rail_speed", "", n)
    if spd is not None:
        add("max_rail_speed: replayed peak |theta_dot_i| / limit", (np.abs(x_r[:, n:2 * n]) / spd).max(),
            1.0 + tol, "")
    u = plan.input(t_r)
    acc = optional_limit(pb.max_rail_acceleration, "max_rail_acceleration", "", n)
    if acc is not None and plan.plant.inputs == "acceleration":
        add("max_rail_acceleration: peak |theta_ddot_i| / limit between the points", (np.abs(u) / acc).max(),
            1.0 + tol, "")
    force = optional_limit(pb.max_rail_force, "max_rail_force", "", n)
    if force is not None and plan.plant.inputs == "force":
        add("max_rail_force: peak |tau_i| / limit between the points", (np.abs(u) / force).max(), 1.0 + tol, "")
    for i, rail in enumerate(model.rails):
        if not rail.periodic:
            lo, hi = rail.parameter_range
            beyond = max(float(lo - x_r[:, i].min()), float(x_r[:, i].max() - hi), 0.0)
            add(f"rail {i + 1} ends: replayed excursion beyond them", beyond, tol * (hi - lo), "rail units")
    end_err = float(np.abs(x_r[-1] - plan.x[-1]).max())
    return tuple(checks), end_err


def richardson(coarse: float, fine: float) -> float:
    """Estimated ``|J_fine - J*|`` from the costs on a mesh and on its halving (order 4)."""
    return abs(fine - coarse) / (2 ** ORDER - 1)
