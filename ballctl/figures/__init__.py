"""Figures and animations.

Each module's public names are this package's (``__all__`` is theirs, in this order).
"""

import sys as _sys

from .plotting import *  # noqa: F403
from .animation import *  # noqa: F403

__all__ = [name for _module in ("plotting", "animation")
           for name in _sys.modules[f"{__name__}.{_module}"].__all__]
