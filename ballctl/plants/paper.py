"""The examples of Putkaradze & Rogers (2018): the ball of section 7 and the disk of section 6.

Fixtures for tests, examples and studies: the parameters, initial states and
rail-acceleration inputs of the paper. The inputs have kinks at
:data:`PAPER_KINK_TIMES`; pass them as ``breakpoints`` to ``simulate``.

References
----------
V. Putkaradze, S.M. Rogers, "On the dynamics of a rolling ball actuated by
internal point masses", Meccanica 53 (2018) 3839-3868, eqs. (6.5)-(6.7), (7.8)-(7.12).
"""

from __future__ import annotations

import numpy as np

from .internal_masses import PointMass
from .rails import CircleRail
from .rolling_ball import RollingBallParameters
from .rolling_disk import RollingDiskParameters

__all__ = ["PAPER_KINK_TIMES", "paper_rail_acceleration", "paper_ball_parameters", "paper_ball_initial_state",
           "paper_disk_parameters", "paper_disk_initial_state", "paper_disk_rail_accelerations"]

#: Times (s) where the paper's rail accelerations (6.6), (7.11) have kinks.
PAPER_KINK_TIMES = (0.1, 0.2)


def paper_rail_acceleration(t):
    """The paper's rail acceleration profile, eqs. (6.6) and (7.11) without the sign.

    1 on ``[0, 0.1]``, ``2 - 10 t`` on ``[0.1, 0.2]``, 0 afterwards (rad/s^2).
    Continuous with kinks at :data:`PAPER_KINK_TIMES`.

    Parameters
    ----------
    t : float or array_like
        Time in s.

    Returns
    -------
    float or ndarray
    """
    if isinstance(t, (float, int)):
        # scalar fast path (the integrators call this at every stage); same branches as below
        return 1.0 if t <= 0.1 else (2.0 - 10.0 * t if t <= 0.2 else 0.0)
    t = np.asarray(t, dtype=float)
    out = np.where(t <= 0.1, 1.0, np.where(t <= 0.2, 2.0 - 10.0 * t, 0.0))
    return float(out) if out.ndim == 0 else out


def paper_ball_parameters() -> RollingBallParameters:
    """The ball of section 7 (eqs. 7.8-7.10): three masses on tilted circles, g = 1.

    Returns
    -------
    RollingBallParameters
    """
    rails = [CircleRail.from_spherical(0.95, 0.0, 0.0),
             CircleRail.from_spherical(0.9, np.pi / 2, 0.0),
             CircleRail.from_spherical(0.85, np.pi / 4, np.pi / 4)]
    return RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.9, 1.0, 1.1],
                                 cm_offset_m=[0.0, 0.0, -0.05],
                                 point_masses=tuple(PointMass(mass_kg=1.0, rail=r) for r in rails),
                                 gravity_mps2=1.0)


def paper_ball_initial_state() -> np.ndarray:
    """Initial state (7.12): at rest at the origin, ``theta_a = (0, 2.0369, 0.7044)``, ``q = (1, 0, 0, 0)``.

    Returns
    -------
    ndarray, shape (15,)
    """
    return np.array([0.0, 2.0369, 0.7044, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)


def paper_disk_parameters() -> RollingDiskParameters:
    """The disk of section 6 (eq. 6.5): four unit masses on concentric circles, g = 1.

    Radii 0.9, 0.6333..., 0.3666..., 0.1 m (``.63`` and ``.36`` repeating).

    Returns
    -------
    RollingDiskParameters
    """
    radii = (0.9, 19.0 / 30.0, 11.0 / 30.0, 0.1)
    return RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, cm_offset_m=[0.0, 0.0],
                                 point_masses=tuple(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=r)) for r in radii),
                                 gravity_mps2=1.0)


def paper_disk_initial_state() -> np.ndarray:
    """Initial state (6.7): all masses below the GC, at rest, ``phi = 0``.

    Returns
    -------
    ndarray, shape (10,)
    """
    return np.array([-np.pi / 2] * 4 + [0.0] * 4 + [0.0, 0.0])


def paper_disk_rail_accelerations(t) -> np.ndarray:
    """Rail accelerations (6.6): ``u_i = (-1)^i * profile(t)``, i = 1..4.

    Parameters
    ----------
    t : float
        Time in s.

    Returns
    -------
    ndarray, shape (4,)
    """
    return paper_rail_acceleration(t) * np.array([-1.0, 1.0, -1.0, 1.0])
