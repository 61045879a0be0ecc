"""Control design on linear time-varying models: LQR, Kalman filters and estimators, controllability and
observability, the tracking controller.

Each module's public names are this package's (``__all__`` is theirs, in this order).
"""

import sys as _sys

from .lqr import *  # noqa: F403
from .kalman import *  # noqa: F403
from .estimator import *  # noqa: F403
from .observability import *  # noqa: F403
from .controllability import *  # noqa: F403
from .tracking import *  # noqa: F403

__all__ = [name for _module in ("lqr", "kalman", "estimator", "observability", "controllability", "tracking")
           for name in _sys.modules[f"{__name__}.{_module}"].__all__]
