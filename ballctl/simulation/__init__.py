"""Simulation above the plants: the sampled closed loop, its compiled engine, Monte Carlo.

Each module's public names are this package's (``__all__`` is theirs, in this order).
"""

import sys as _sys

from .loop_step import *  # noqa: F403
from .arrays import *  # noqa: F403
from .engine import *  # noqa: F403
from .component import *  # noqa: F403
from .closed_loop import *  # noqa: F403
from .monte_carlo import *  # noqa: F403

__all__ = [name for _module in ("loop_step", "arrays", "engine", "component", "closed_loop", "monte_carlo")
           for name in _sys.modules[f"{__name__}.{_module}"].__all__]
