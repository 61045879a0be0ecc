"""Gain schedules and the controller a rig runs.

* :mod:`ballctl.schedule.data` -- :class:`GainSchedule`: the data (gains,
  feedforward, reference, weights, partition), its validation, the gain
  lookup and the checksum;
* :mod:`ballctl.schedule.formats` -- its files: ``.npz``/``.json`` with the
  checksum (read and written) and the CSV export;
* :mod:`ballctl.schedule.c_export` -- its C header with the gain lookup, and
  the C literal and initializer writer both C generators use;
* :mod:`ballctl.schedule.compact` -- :class:`ControllerData`: the controller a
  microcontroller runs forever (periodic Fourier series or a plan with a hold,
  float32, the rig's command shaping) and :func:`controller_footprint`;
* :mod:`ballctl.schedule.c_controller` -- :func:`write_c_controller`: that
  controller in C (generated headers plus the shipped template
  ``templates/ballctl_controller.c``/``.h``) and as the ``.npz`` file of the
  Python twin :class:`ballctl.deploy.runtime.ControllerRuntime`.
"""

from .c_controller import C_TEMPLATES, GENERATED_FILES, write_c_controller, write_controller_files
from .compact import ControllerData, ControllerDataOptions, ControllerFootprint, controller_data, controller_footprint
from .data import SCHEDULE_FORMAT, SCHEDULE_FORMAT_VERSION, GainSchedule, ScheduleEstimator

__all__ = ["SCHEDULE_FORMAT", "SCHEDULE_FORMAT_VERSION", "GainSchedule", "ScheduleEstimator", "write_c_controller",
           "C_TEMPLATES", "GENERATED_FILES", "write_controller_files", "ControllerData", "ControllerDataOptions",
           "ControllerFootprint", "controller_data", "controller_footprint"]
