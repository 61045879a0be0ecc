"""Plants: nonlinear constrained multibody models speaking the ConstrainedSystem interface.

``PLANTS`` maps a plant's name to its class; the contract tests are
parametrised over it, so a new plant is one new file plus one line here.
"""

from .ball_plate import BallPlate, BallPlateParameters

__all__ = ["PLANTS", "BallPlate", "BallPlateParameters"]

PLANTS = {"ball_plate": BallPlate}
