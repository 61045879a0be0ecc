"""Compile a plant's complex-step kernels ahead of their first use (a first run's second process).

A linearization differentiates a plant by complex steps (:mod:`ballctl._derivatives`):
it calls the plant's mass matrix, forces, constraint Jacobian and constraint bias
(and, on a moving plate, the plate's kinematics) with complex arrays, which
compiles a complex specialization of the plant's kernels next to the real one.
:func:`compile_complex_step` makes those calls once, on a state whose values do
not matter (a specialization depends on the arrays' types, not on their values),
so that a second process can compile them while the first one compiles the real
ones (:func:`ballctl.simulation.engine.compile_in_background`).
"""

from __future__ import annotations

import numpy as np

from .ball_plate_moving import plate_kinematics
from .kernels import moving_plate

__all__ = ["compile_complex_step"]

#: the imaginary part of the complex calls (the complex step of ballctl._derivatives' size)
_STEP = 1e-30j


def compile_complex_step(plant) -> None:
    """Call ``plant``'s equations with complex arrays once, so numba compiles (or loads) their complex kernels.

    Parameters
    ----------
    plant : ConstrainedSystem
        Any plant; one with compiled kernels compiles their complex specializations, the others
        only evaluate their equations once.
    """
    n = plant.n_coordinates
    x = np.full(n, 0.1) + _STEP
    xd = np.full(n, 0.1) + _STEP
    u = np.full(plant.n_inputs, 0.1) + _STEP
    plant.mass_matrix(x)
    plant.forces(x, xd, u)
    plant.constraint_jacobian(x)
    plant.constraint_bias(x, xd)
    if getattr(plant, "kernels", None) is moving_plate:  # a ball on a moving plate
        plate_kinematics(x[5:], xd[5:], plant.params.ball.gravity)
