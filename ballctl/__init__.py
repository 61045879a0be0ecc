"""ballctl: control design for nonholonomic rolling systems."""

from ._errors import *  # noqa: F401,F403
from .ltv import LTVSystem
from .partition import Partition
from .system import ConstrainedSystem, check_system

__version__ = "0.1.0"
