"""Deployment of an exported controller: its numpy-only twin and the software-in-the-loop driver of its C library.

Each module's public names are this package's (``__all__`` is theirs, in this order).
"""

import sys as _sys

from .runtime import *  # noqa: F403
from .sil import *  # noqa: F403

__all__ = [name for _module in ("runtime", "sil")
           for name in _sys.modules[f"{__name__}.{_module}"].__all__]
