"""ballctl: control design for nonholonomic rolling systems.

The layout follows the pipeline: ``plants`` (constrained multibody models in
the common :class:`ConstrainedSystem` interface), ``references`` (dynamic
inversion), ``linearize`` (coordinate-partition linearization),
``controllability``, ``discretize``, ``lqr``, ``tracking`` (the design
chain), ``closed_loop`` (sampled control of the nonlinear plant),
``schedule`` (gain files), ``plotting`` and ``cli``. See ``docs/conventions.md``.
"""

from .plants import rails
from ._errors import (BallctlError, BallctlWarning, ChartSingularityError, ConfigError, ConstraintProjectionWarning,
                      ConstraintViolationError, FileArgumentError, InfeasiblePlanError, InfeasibleReferenceError,
                      IntegrationBudgetError, IntegrationError, LargeTiltWarning, MissingExtraError, MissingFileError,
                      NonFiniteStateError, NumericalError, ParameterError,
                      ParameterTypeError, PartitionError, RiccatiConditioningWarning, RiccatiConvergenceError,
                      SampleIndexError, ScheduleFileError, ShapeError, SingularMatrixError)
from .simulation.closed_loop import (ClosedLoopBatchResult, ClosedLoopOptions, ClosedLoopResult, ClosedLoopSummary,
                                     simulate_closed_loop)
from .design.controllability import (discrete_gramian, gramian, monodromy, periodic_controllability, silverman_meadows,
                              transition_matrix)
from .linear.discretize import DiscreteLTVSystem, discretization_error, discretize
from .linear.linearize import linearize, linearize_at
from .design.kalman import KalmanFilterResult, PeriodicKalmanResult, finite_horizon_kalman, periodic_kalman
from .simulation.monte_carlo import MonteCarloResult, Normal, Uncertainty, Uniform, monte_carlo
from .design.lqr import FiniteHorizonLQR, PeriodicLQR, bryson, finite_horizon_lqr, periodic_lqr, riccati_sweep
from .linear.ltv import LTVSystem
from .linear.partition import Partition
from .studies.partitions import compare_partitions
from .plants import (PLANTS, BallPlate, BallPlateParameters, MovingPlateBallPlate, MovingPlateParameters, PointMass,
                     RollingBall, RollingBallParameters, RollingBallSystem, RollingDisk, RollingDiskParameters,
                     RollingDiskSystem, ServoParameters, ServoPlateBallPlate, check_plant)
from .studies.rail_layouts import compare_rail_layouts
from .references import CircularMotion, LissajousPath, PathMotion, Reference, ReferenceSample, WaypointPath
from .references.moving_plate import MovingPlateMotion, exact_circular_motion
from .ball_plate.rig import PRESETS, RigLimits, RigProfile, RigProfileError, Sensor, rig_preset
from .schedule import GainSchedule, write_c_controller
from .ode import IntegrationOptions
from .simulate import SimulationOptions, SimulationResult, simulate
from .system import ConstrainedSystem, check_system
from .design.tracking import LQRWeights, TrackingController, design_tracking_lqr
from .ball_plate.design import design_for_rig
from .design.observability import observability_gramian, sensor_table

__version__ = "0.1.0"

__all__ = [
    # errors
    "BallctlError", "ParameterError", "ShapeError", "ParameterTypeError", "ConstraintViolationError",
    "InfeasibleReferenceError", "ChartSingularityError", "PartitionError", "ConfigError", "FileArgumentError",
    "MissingFileError",
    "ScheduleFileError", "SampleIndexError", "NumericalError", "SingularMatrixError", "RiccatiConvergenceError",
    "IntegrationError", "NonFiniteStateError", "IntegrationBudgetError", "InfeasiblePlanError", "MissingExtraError",
    # warnings
    "BallctlWarning", "LargeTiltWarning", "ConstraintProjectionWarning", "RiccatiConditioningWarning",
    # interface and plants
    "ConstrainedSystem", "check_system", "check_plant", "PLANTS", "BallPlate", "BallPlateParameters",
    "MovingPlateBallPlate", "MovingPlateParameters", "ServoParameters", "ServoPlateBallPlate", "RollingBall",
    "RollingBallParameters", "RollingBallSystem", "RollingDisk", "RollingDiskParameters", "RollingDiskSystem",
    "PointMass", "rails",
    # references
    "Reference", "ReferenceSample", "CircularMotion", "PathMotion", "LissajousPath", "WaypointPath",
    "MovingPlateMotion", "exact_circular_motion",
    # simulation
    "simulate", "SimulationOptions", "IntegrationOptions", "SimulationResult",
    # linearization and controllability
    "Partition", "LTVSystem", "linearize", "linearize_at", "compare_partitions", "compare_rail_layouts", "gramian",
    "discrete_gramian", "transition_matrix", "silverman_meadows", "monodromy", "periodic_controllability",
    # discretization and LQR
    "DiscreteLTVSystem", "discretize", "discretization_error", "bryson", "finite_horizon_lqr", "FiniteHorizonLQR",
    "periodic_lqr", "PeriodicLQR", "riccati_sweep",
    # tracking
    "TrackingController", "design_tracking_lqr", "simulate_closed_loop", "ClosedLoopResult", "RigLimits",
    "GainSchedule", "ClosedLoopSummary", "ClosedLoopBatchResult", "ClosedLoopOptions", "LQRWeights",
    # rigs and estimation
    "RigProfile", "RigProfileError", "Sensor", "PRESETS", "rig_preset", "finite_horizon_kalman", "periodic_kalman",
    "KalmanFilterResult", "PeriodicKalmanResult", "design_for_rig", "observability_gramian", "sensor_table",
    "write_c_controller",
    # Monte Carlo
    "monte_carlo", "MonteCarloResult", "Uncertainty", "Normal", "Uniform",
]
