"""Reference motions obtained by dynamic inversion."""

from .base import Reference, ReferenceSample
from .circular import LEAN_LIMIT, CircularMotion
from .inversion import plate_angles_for_acceleration
from .rolling import DiskRollReference, IntegratedReference, StraightRollReference, dae_residuals, paper_ball_reference
from .paths import LissajousPath, PathMotion, WaypointPath

__all__ = ["Reference", "ReferenceSample", "CircularMotion", "PathMotion", "LEAN_LIMIT", "LissajousPath",
           "WaypointPath", "plate_angles_for_acceleration", "DiskRollReference", "IntegratedReference",
           "StraightRollReference", "dae_residuals", "paper_ball_reference"]
