"""The ball-plate application: rigs and their presets, rig logs and identification, designs for a rig.

Each module's public names are this package's (``__all__`` is theirs, in this order).
"""

import sys as _sys

from .rig import *  # noqa: F403
from .design import *  # noqa: F403
from .verification import *  # noqa: F403
from .rig_log import *  # noqa: F403
from .identification import *  # noqa: F403

__all__ = [name for _module in ("rig", "design", "verification", "rig_log", "identification")
           for name in _sys.modules[f"{__name__}.{_module}"].__all__]
