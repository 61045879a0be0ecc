"""Linear models along a reference: coordinate partitions, the reduced linearization, LTV systems, ZOH
discretization.

Each module's public names are this package's (``__all__`` is theirs, in this order).
"""

import sys as _sys

from .ltv import *  # noqa: F403
from .partition import *  # noqa: F403
from .linearize import *  # noqa: F403
from .discretize import *  # noqa: F403

__all__ = [name for _module in ("ltv", "partition", "linearize", "discretize")
           for name in _sys.modules[f"{__name__}.{_module}"].__all__]
