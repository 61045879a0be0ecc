"""Plants: the nonlinear models, one module per plant, with their contract in :mod:`ballctl.plants.base`.

``PLANTS`` maps a registry name to a function building the plant with
default (or the papers') parameters. ``tests/test_plant_contract.py`` checks
every entry against the contract, so a new plant is one new module plus one
line here.
"""

from collections.abc import Callable

from .ball_plate import BallPlate, BallPlateParameters
from .ball_plate_moving import MovingPlateBallPlate, MovingPlateParameters, ServoParameters, ServoPlateBallPlate
from .base import check_plant, friction_coefficient_required, random_consistent_state
from .internal_masses import PointMass
from .paper import paper_ball_parameters, paper_disk_parameters
from .rolling_ball import RollingBall, RollingBallParameters, RollingBallSystem
from .rolling_disk import RollingDisk, RollingDiskParameters, RollingDiskSystem

__all__ = ["PLANTS", "BallPlate", "BallPlateParameters", "MovingPlateBallPlate", "MovingPlateParameters",
           "ServoParameters", "ServoPlateBallPlate", "PointMass", "RollingBall", "RollingBallParameters",
           "RollingBallSystem", "RollingDisk", "RollingDiskParameters", "RollingDiskSystem", "check_plant",
           "friction_coefficient_required", "random_consistent_state"]

#: every plant: registry name -> builder of an instance (constrained plants and ODE plants)
PLANTS: dict[str, Callable[[], object]] = {
    "ball_plate": BallPlate,
    "ball_plate_hollow": lambda: BallPlate(BallPlateParameters(mass=0.0027, radius=0.02,
                                                               inertia=2 / 3 * 0.0027 * 0.02 ** 2)),
    "ball_plate_moving": MovingPlateBallPlate,
    "ball_plate_moving_spin": lambda: MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.02, with_spin=True)),
    "ball_plate_servo": ServoPlateBallPlate,
    "rolling_ball": lambda: RollingBall(paper_ball_parameters()),
    "rolling_ball_force": lambda: RollingBall(paper_ball_parameters(), inputs="force"),
    "rolling_ball_system": lambda: RollingBall(paper_ball_parameters()).to_constrained_system(),
    "rolling_ball_system_force": lambda: RollingBall(paper_ball_parameters(), inputs="force").to_constrained_system(),
    "rolling_disk": lambda: RollingDisk(paper_disk_parameters()),
    "rolling_disk_force": lambda: RollingDisk(paper_disk_parameters(), inputs="force"),
    "rolling_disk_system": lambda: RollingDisk(paper_disk_parameters()).to_constrained_system(),
    "rolling_disk_system_force": lambda: RollingDisk(paper_disk_parameters(), inputs="force").to_constrained_system(),
}
