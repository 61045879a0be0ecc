"""Gain schedules and the controller a rig runs.

* :mod:`ballctl.schedule.data` -- :class:`GainSchedule`: the data (gains,
  feedforward, reference, weights, partition) and its file formats
  (``.npz``/``.json`` with checksum, CSV, a C header with the gain lookup);
* :mod:`ballctl.schedule.c_controller` -- :func:`write_c_controller`: the
  output-feedback controller in C (generated data header plus the shipped
  template ``templates/ballctl_controller.c``/``.h``).
"""

from .c_controller import C_TEMPLATES, write_c_controller
from .data import SCHEDULE_FORMAT, SCHEDULE_FORMAT_VERSION, GainSchedule

__all__ = ["SCHEDULE_FORMAT", "SCHEDULE_FORMAT_VERSION", "GainSchedule", "write_c_controller", "C_TEMPLATES"]
