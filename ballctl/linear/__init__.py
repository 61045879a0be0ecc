"""Linear models along a reference: coordinate partitions, the reduced linearization, LTV systems, ZOH
discretization."""

from .ltv import LTVSystem, StateReduction
from .partition import Partition
from .linearize import linearize, linearize_at, linearize_samples
from .discretize import (
    DISCRETIZATION_METHODS,
    DiscreteLTVSystem,
    DiscretizationErrors,
    discretize,
    discretization_error,
    zoh_matrices,
    series_matrices,
)

__all__ = [
    "LTVSystem",
    "StateReduction",
    "Partition",
    "linearize",
    "linearize_at",
    "linearize_samples",
    "DISCRETIZATION_METHODS",
    "DiscreteLTVSystem",
    "DiscretizationErrors",
    "discretize",
    "discretization_error",
    "zoh_matrices",
    "series_matrices",
]
