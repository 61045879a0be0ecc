"""Compile a plant's kernels ahead of their first use (a first run on two cores).

A linearization differentiates a plant by complex steps (:mod:`ballctl._derivatives`):
it calls the plant's mass matrix, forces, constraint Jacobian and constraint bias
(and, on a moving plate, the plate's kinematics) with complex arrays, which
compiles a complex specialization of the plant's kernels next to the real one.
:func:`compile_complex_step` makes those calls once, and :func:`compile_real` the
real calls a design and its closed loops make, on a state whose values do not
matter (a specialization depends on the arrays' types, not on their values): a
second process compiles the one while the first compiles the other
(:func:`ballctl.simulation.engine.compile_in_background`).
"""

from __future__ import annotations

import numpy as np

from .ball_plate_moving import plate_kinematics
from .kernels import moving_plate

__all__ = ["compile_complex_step", "compile_real"]

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


def compile_real(plant) -> None:
    """Call ``plant``'s equations with real arrays once, as a design and its closed loops do.

    The mass matrix, forces, accelerations and constraint Jacobian; the contact
    forces and servo torques of a plant that has them; on a moving plate its
    kinematics (stacked and one state at a time, as the exact inversion calls
    them); the re-chart of a plant of the compiled loop.

    Parameters
    ----------
    plant : ConstrainedSystem
        Any plant (see :func:`compile_complex_step`).
    """
    n = plant.n_coordinates
    x, xd, u = np.full(n, 0.1), np.full(n, 0.1), np.full(plant.n_inputs, 0.1)
    plant.mass_matrix(x)
    plant.forces(x, xd, u)
    plant.accelerations(x, xd, u)
    plant.constraint_jacobian(x)
    for method in ("contact_forces", "servo_torque"):
        if hasattr(plant, method):
            getattr(plant, method)(x, xd, u)
    kernels = getattr(plant, "kernels", None)
    if kernels is moving_plate:
        plate_kinematics(x[5:], xd[5:], plant.params.ball.gravity)
        n_p = n - 5
        kernels.plate_kinematics(x[5:], xd[5:], 1.0, np.empty((3, n_p)), np.empty(3), np.empty(3), np.empty(3))
    if hasattr(kernels, "keep_chart"):
        kernels.keep_chart(np.concatenate([x, xd]), n)
