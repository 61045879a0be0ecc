"""Trajectory optimization: optimal maneuvers of the internal-mass ball and disk (issue 13).

Hermite-Simpson direct collocation (:mod:`~ballctl.planning.transcription`) of the
plants' equations (written symbolically once in :mod:`~ballctl.planning.symbolic`),
solved by IPOPT through CasADi with exact derivatives (:mod:`~ballctl.planning.maneuver`),
and the plan turned into a reference for the LQR tracking chain
(:mod:`~ballctl.planning.follow`). CasADi is the optional extra ``ballctl[optimal]``;
it is imported only when a planner is built. See ``docs/planning.md``.
"""

from .follow import PlanTracking, plan_chart_rotation, plan_reference, track_plan
from .maneuver import (
                       CircularObstacle,
                       ManeuverPlan,
                       ManeuverProblem,
                       SolverReport,
                       plan_maneuver,
                       refine_plan,
                       resimulate,
)

__all__ = [
                       "CircularObstacle",
                       "ManeuverPlan",
                       "ManeuverProblem",
                       "PlanTracking",
                       "SolverReport",
                       "plan_chart_rotation",
                       "plan_maneuver",
                       "plan_reference",
                       "refine_plan",
                       "resimulate",
                       "track_plan",
]
