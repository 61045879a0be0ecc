"""Deployment of an exported controller: its numpy-only twin and the software-in-the-loop driver of its C library."""

from .runtime import (
    ControllerRuntime,
    BC_OK,
    BC_REFUSED_NONFINITE,
    BC_REFUSED_RANGE,
    BC_ERR_LATE,
    BC_ERR_FUTURE,
    BC_HEALTH_INNOVATION,
    BC_HEALTH_STALE,
    BC_HEALTH_RESET,
)
from .sil import (
    ControllerComponent,
    CController,
    ComponentLoopOptions,
    ComponentLoopResult,
    ExportOptions,
    ExportReport,
    compile_controller,
    run_component_loop,
    export_controller,
    C_FLAGS,
    ExportVerificationError,
)

__all__ = [
    "ControllerRuntime",
    "BC_OK",
    "BC_REFUSED_NONFINITE",
    "BC_REFUSED_RANGE",
    "BC_ERR_LATE",
    "BC_ERR_FUTURE",
    "BC_HEALTH_INNOVATION",
    "BC_HEALTH_STALE",
    "BC_HEALTH_RESET",
    "ControllerComponent",
    "CController",
    "ComponentLoopOptions",
    "ComponentLoopResult",
    "ExportOptions",
    "ExportReport",
    "compile_controller",
    "run_component_loop",
    "export_controller",
    "C_FLAGS",
    "ExportVerificationError",
]
