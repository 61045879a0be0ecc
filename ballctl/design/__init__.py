"""Control design on linear time-varying models: LQR, Kalman filters and estimators, controllability and
observability, the tracking controller."""

from .lqr import bryson, riccati_sweep, LQRRollout, FiniteHorizonLQR, finite_horizon_lqr, PeriodicLQR, periodic_lqr
from .kalman import KalmanFilterResult, PeriodicKalmanResult, finite_horizon_kalman, periodic_kalman
from .estimator import (
    StateEstimator,
    EstimatorSettings,
    InputDisturbance,
    IntegralAction,
    design_estimator,
    measurement_matrices,
)
from .observability import ObservabilityReport, observability_gramian, SensorSetRow, sensor_table
from .controllability import (
    RANK_RTOL,
    gramian_rank,
    SM_RANK_RTOL,
    LTVCallables,
    GramianReport,
    SilvermanMeadowsReport,
    MonodromyReport,
    PeriodicControllabilityReport,
    transition_matrix,
    gramian,
    discrete_gramian,
    silverman_meadows,
    monodromy,
    periodic_controllability,
)
from .tracking import TrackingController, design_tracking_lqr, FEEDFORWARD_METHODS, zoh_reference, state_selection

__all__ = [
    "bryson",
    "riccati_sweep",
    "LQRRollout",
    "FiniteHorizonLQR",
    "finite_horizon_lqr",
    "PeriodicLQR",
    "periodic_lqr",
    "KalmanFilterResult",
    "PeriodicKalmanResult",
    "finite_horizon_kalman",
    "periodic_kalman",
    "StateEstimator",
    "EstimatorSettings",
    "InputDisturbance",
    "IntegralAction",
    "design_estimator",
    "measurement_matrices",
    "ObservabilityReport",
    "observability_gramian",
    "SensorSetRow",
    "sensor_table",
    "RANK_RTOL",
    "gramian_rank",
    "SM_RANK_RTOL",
    "LTVCallables",
    "GramianReport",
    "SilvermanMeadowsReport",
    "MonodromyReport",
    "PeriodicControllabilityReport",
    "transition_matrix",
    "gramian",
    "discrete_gramian",
    "silverman_meadows",
    "monodromy",
    "periodic_controllability",
    "TrackingController",
    "design_tracking_lqr",
    "FEEDFORWARD_METHODS",
    "zoh_reference",
    "state_selection",
]
