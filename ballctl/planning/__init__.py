"""Trajectory optimization: optimal maneuvers of the internal-mass ball and disk, limit-aware ball-plate references.

Hermite-Simpson direct collocation (:mod:`~ballctl.planning.transcription`) of the
plants' equations (written symbolically once in :mod:`~ballctl.planning.symbolic`),
solved by IPOPT through CasADi with exact derivatives (:mod:`~ballctl.planning.maneuver`),
and the plan turned into a reference for the LQR tracking chain
(:mod:`~ballctl.planning.follow`); minimum-time and minimum-effort ball-plate motions
through waypoints within a rig's tilt and slew limits (:mod:`~ballctl.planning.ball_plate`),
tracked on a rig by :mod:`~ballctl.ball_plate.plan_tracking`. Both planners take
:class:`~ballctl.planning.transcription.SolverOptions` and report a
:class:`~ballctl.planning.transcription.SolverReport`; both trackings return a
:class:`~ballctl.planning.follow.PlanTracking`.
CasADi is the optional extra ``ballctl[optimal]``;
it is imported only when a planner is built. See ``docs/planning.md``.
"""

from .ball_plate import PLATE_OBJECTIVES, PlateMotionPlan, PlateMotionProblem, plan_plate_motion
from .follow import ConstraintReport, PlanTracking, plan_chart_rotation, plan_reference, track_plan
from .accuracy import AccuracyReport, PlanAccuracy
from .branches import BranchOutcome, ManeuverBranch
from .maneuver import CircularObstacle, ManeuverPlan, ManeuverProblem, resimulate
from .nlp import ManeuverNLP
from .planner import plan_maneuver, refine_plan
from .receding import RecedingTracking, TrackingStart, compare_tracking, track_receding
from .transcription import SolverOptions, SolverReport
from ..ball_plate.plan_tracking import track_plate_plan

__all__ = [
    "AccuracyReport",
    "BranchOutcome",
    "CircularObstacle",
    "ConstraintReport",
    "ManeuverBranch",
    "ManeuverNLP",
    "PlanAccuracy",
    "PLATE_OBJECTIVES",
    "PlateMotionPlan",
    "PlateMotionProblem",
    "plan_plate_motion",
    "track_plate_plan",
    "ManeuverPlan",
    "ManeuverProblem",
    "PlanTracking",
    "RecedingTracking",
    "TrackingStart",
    "SolverOptions",
    "SolverReport",
    "plan_chart_rotation",
    "plan_maneuver",
    "plan_reference",
    "refine_plan",
    "resimulate",
    "compare_tracking",
    "track_plan",
    "track_receding",
]
