"""ballctl: control design for nonholonomic rolling systems."""

from ._errors import *  # noqa: F401,F403
from .ltv import LTVSystem
from .partition import Partition
from .system import ConstrainedSystem, check_system

__version__ = "0.1.0"
from .plants import BallPlate, BallPlateParameters
from .references import (CirclePath, CircularMotion, EllipsePath, FigureEightPath, LissajousPath,
                         PathMotion, Reference, ReferenceSample, WaypointPath)
from .simulate import SimulationResult, simulate
from .linearize import linearize, linearize_at
from .discretize import DiscreteLTVSystem, discretization_error, discretize
from .lqr import FiniteHorizonLQR, PeriodicLQR, bryson, finite_horizon_lqr, periodic_lqr
from .schedule import GainSchedule
from .closed_loop import ClosedLoopResult, RigLimits, simulate_closed_loop
from .tracking import TrackingController, design_tracking_lqr
from . import rails
from .plants import (PointMass, RollingBall, RollingBallParameters, RollingBallSystem, RollingDisk,
                     RollingDiskParameters, RollingDiskSystem)
from .rail_layouts import compare_rail_layouts
from .controllability import (discrete_gramian, gramian, monodromy, periodic_controllability, silverman_meadows,
                              transition_matrix)
from .partition_study import compare_partitions
