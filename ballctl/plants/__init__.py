"""Plants: nonlinear constrained multibody models speaking the ConstrainedSystem interface.

``PLANTS`` maps a plant's name to its class; the contract tests are
parametrised over it, so a new plant is one new file plus one line here.
"""

from .ball_plate import BallPlate, BallPlateParameters
from .ball_plate_moving import MovingPlateBallPlate, MovingPlateParameters, ServoParameters, ServoPlateBallPlate
from .rolling_ball import PointMass, RollingBall, RollingBallParameters, RollingBallSystem
from .rolling_disk import RollingDisk, RollingDiskParameters, RollingDiskSystem

__all__ = ["PLANTS", "BallPlate", "BallPlateParameters", "MovingPlateBallPlate", "MovingPlateParameters",
           "ServoParameters", "ServoPlateBallPlate", "PointMass", "RollingBall", "RollingBallParameters",
           "RollingBallSystem", "RollingDisk", "RollingDiskParameters", "RollingDiskSystem"]

#: plants in the common ConstrainedSystem interface, buildable with default arguments
PLANTS = {"ball_plate": BallPlate, "ball_plate_moving": MovingPlateBallPlate, "ball_plate_servo": ServoPlateBallPlate}
