"""The errors and warnings ballctl raises (one class per kind of problem; see ``docs/conventions.md``).

Every error derives from :class:`BallctlError` and from the builtin it
refines (``ValueError``, ``TypeError``, ``RuntimeError``, ...), so code that
catches the builtin keeps working; every warning derives from :class:`BallctlWarning`.
"""

from ._errors import (
    BallctlError,
    ParameterError,
    ShapeError,
    ParameterTypeError,
    ConstraintViolationError,
    InfeasibleReferenceError,
    ChartSingularityError,
    PartitionError,
    ConfigError,
    FileArgumentError,
    MissingFileError,
    ScheduleFileError,
    SampleIndexError,
    NumericalError,
    SingularMatrixError,
    RiccatiConvergenceError,
    IntegrationError,
    NonFiniteStateError,
    IntegrationBudgetError,
    BallctlWarning,
    LargeTiltWarning,
    ConstraintProjectionWarning,
    RiccatiConditioningWarning,
    InfeasiblePlanError,
    MissingExtraError,
)

__all__ = [
    "BallctlError",
    "ParameterError",
    "ShapeError",
    "ParameterTypeError",
    "ConstraintViolationError",
    "InfeasibleReferenceError",
    "ChartSingularityError",
    "PartitionError",
    "ConfigError",
    "FileArgumentError",
    "MissingFileError",
    "ScheduleFileError",
    "SampleIndexError",
    "NumericalError",
    "SingularMatrixError",
    "RiccatiConvergenceError",
    "IntegrationError",
    "NonFiniteStateError",
    "IntegrationBudgetError",
    "BallctlWarning",
    "LargeTiltWarning",
    "ConstraintProjectionWarning",
    "RiccatiConditioningWarning",
    "InfeasiblePlanError",
    "MissingExtraError",
]
