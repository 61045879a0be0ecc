"""Linear models along a reference: coordinate partitions, the reduced linearization, LTV systems, ZOH
discretization."""

from .ltv import LTVSystem, StateReduction
from .partition import Partition
from .linearize import linearize, linearize_at, linearize_samples
from .discretize import DiscreteLTVSystem, DiscretizationErrors, discretize, discretization_error

__all__ = [
    "LTVSystem",
    "StateReduction",
    "Partition",
    "linearize",
    "linearize_at",
    "linearize_samples",
    "DiscreteLTVSystem",
    "DiscretizationErrors",
    "discretize",
    "discretization_error",
]
