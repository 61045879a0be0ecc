"""ballctl: control design for nonholonomic rolling systems.

The names here are the everyday workflow: a plant, a reference, a partition,
the linearization and its controllability, the tracking design, the closed
loop on a truth plant, a rig, Monte Carlo and the gain schedule. Everything
else lives in its subpackage, which the folders mirror (``docs/architecture.md``):
``plants``, ``references``, ``linear`` (partition, linearize, LTV,
discretize), ``design`` (LQR, Kalman, estimators, controllability,
observability, tracking), ``simulation`` (closed loop, compiled engine,
controller components, Monte Carlo), ``ball_plate`` (rigs, designs for a rig,
verification, logs, identification), ``deploy``, ``schedule``, ``figures``,
``planning``, ``studies``, ``errors`` and ``cli``. See ``docs/conventions.md``.
"""

from .errors import BallctlError, BallctlWarning, NumericalError, ParameterError
from .system import ConstrainedSystem, SystemEquations, check_system
from .plants import (PLANTS, BallPlate, MovingPlateBallPlate, PointMass, RollingBall, RollingDisk, ServoPlateBallPlate,
                     check_plant)
from .references import CircularMotion, LissajousPath, PathMotion, Reference, ReferenceSample, WaypointPath
from .references.moving_plate import MovingPlateMotion, exact_circular_motion
from .ode import IntegrationOptions
from .simulate import SimulationOptions, SimulationResult, simulate
# the simulation package before the design package: design.estimator uses the loop's step kernels
from .simulation import (ClosedLoopOptions, ClosedLoopResult, ClosedLoopSummary, MonteCarloResult, Normal, Uncertainty,
                         Uniform, monte_carlo, simulate_closed_loop)
from .linear import DiscreteLTVSystem, LTVSystem, Partition, discretize, linearize
from .design import (FiniteHorizonLQR, LQRWeights, TrackingController, bryson, design_tracking_lqr, discrete_gramian,
                     finite_horizon_kalman, finite_horizon_lqr, gramian, observability_gramian, periodic_lqr)
from .studies.partitions import compare_partitions
from .hardware import RigLimits, Sensor
from .ball_plate import RigProfile, rig_preset
from .ball_plate.design import design_for_rig
from .schedule import GainSchedule

__version__ = "0.1.0"

__all__ = [
    # errors
    "BallctlError", "BallctlWarning", "ParameterError", "NumericalError",
    # systems and plants
    "ConstrainedSystem", "SystemEquations", "check_system", "check_plant", "PLANTS", "BallPlate",
    "MovingPlateBallPlate", "ServoPlateBallPlate", "RollingBall", "RollingDisk", "PointMass",
    # references
    "Reference", "ReferenceSample", "CircularMotion", "PathMotion", "LissajousPath", "WaypointPath",
    "MovingPlateMotion", "exact_circular_motion",
    # simulation of a plant
    "simulate", "SimulationOptions", "SimulationResult", "IntegrationOptions",
    # linear models along a reference and controllability
    "Partition", "LTVSystem", "linearize", "DiscreteLTVSystem", "discretize", "gramian", "discrete_gramian",
    "observability_gramian", "compare_partitions",
    # design
    "bryson", "finite_horizon_lqr", "FiniteHorizonLQR", "periodic_lqr", "finite_horizon_kalman", "LQRWeights",
    "TrackingController", "design_tracking_lqr",
    # the closed loop
    "simulate_closed_loop", "ClosedLoopOptions", "ClosedLoopResult", "ClosedLoopSummary",
    # rigs
    "RigLimits", "Sensor", "RigProfile", "rig_preset", "design_for_rig",
    # Monte Carlo and gain files
    "monte_carlo", "MonteCarloResult", "Uncertainty", "Normal", "Uniform", "GainSchedule",
]
