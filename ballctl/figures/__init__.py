"""Figures and animations."""

from .plotting import (
    REFERENCE_STYLE,
    RUN_COLORS,
    OPEN_LOOP_COLOR,
    run_styles,
    save_figure,
    plot_reference,
    plot_path,
    plot_coordinates,
    plot_lean_roll,
    plot_inputs,
    plot_error,
    plot_constraints,
    plot_tracking,
    plot_ball_paths,
    plot_percentile_bands,
    plot_robust_bands,
)
from .animation import available_formats, save_animation, animate_ball_plate, animate_rolling_ball

__all__ = [
    "REFERENCE_STYLE",
    "RUN_COLORS",
    "OPEN_LOOP_COLOR",
    "run_styles",
    "save_figure",
    "plot_reference",
    "plot_path",
    "plot_coordinates",
    "plot_lean_roll",
    "plot_inputs",
    "plot_error",
    "plot_constraints",
    "plot_tracking",
    "plot_ball_paths",
    "plot_percentile_bands",
    "plot_robust_bands",
    "available_formats",
    "save_animation",
    "animate_ball_plate",
    "animate_rolling_ball",
]
