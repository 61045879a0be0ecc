r"""Plain descriptions of a rig's hardware, for any plant: actuator limits, sensors, and the loop's imperfections.

These are the generic parts of a rig; a plant's application (for the
ball-plate, :class:`ballctl.ball_plate.RigProfile`) gathers them with its truth
plant. SI units and radians.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._errors import ParameterError
from ._validation import ProblemCollector, check_finite_scalar, check_nonnegative, check_positive

__all__ = ["RigLimits", "Sensor", "LoopImperfections", "per_signal"]


@dataclass(frozen=True, kw_only=True)
class RigLimits:
    """What a real rig does to the commands (all optional).

    The limits shape every command, the first one included: quantization,
    then the tilt limit, then the slew limit from the previously applied
    command (the applied angle never exceeds ``max_angle``).

    Attributes
    ----------
    max_angle : float or None
        Largest |u_i| in rad (plate tilt limit, e.g. 5-20 deg); commands saturate.
    max_rate : float or None
        Largest |du_i/dt| in rad/s (command slew); the applied input moves at most
        ``max_rate * dt`` per control step.
    quantum : float or None
        Command resolution in rad; commands are rounded to a multiple of it.
    delay : float
        Actuation latency in s (>= 0): a command computed at t_k acts from t_k + delay.
    """

    max_angle: float | None = None
    max_rate: float | None = None
    quantum: float | None = None
    delay: float = 0.0

    def __post_init__(self) -> None:
        check = ProblemCollector("RigLimits")
        for name, unit in (("max_angle", "rad"), ("max_rate", "rad/s"), ("quantum", "rad")):
            value = getattr(self, name)
            if value is not None:
                check.attempt(lambda value=value, name=name, unit=unit: check_positive(value, name, unit))
        check.attempt(lambda: check_nonnegative(self.delay, "delay", "s"))
        check.raise_if_any()

    @property
    def active(self) -> bool:
        """True when any limit or the delay is set."""
        return any(v is not None for v in (self.max_angle, self.max_rate, self.quantum)) or self.delay > 0


@dataclass(frozen=True, kw_only=True)
class Sensor:
    """One sensor of a rig.

    Attributes
    ----------
    name : str
        Label (e.g. ``"camera"``).
    signals : tuple of str
        Plant coordinates it measures (m or rad), by name; checked against
        the plant's coordinates where the sensor is used.
    period_s : float
        Sampling period in s; a whole number of control periods (checked
        against the rig's ``dt``).
    latency_s : float
        Time in s from sampling to availability (>= 0; any value, also a
        fraction of a control period).
    noise_std : tuple of float
        Standard deviation of the Gaussian noise per signal (m or rad, >= 0).
    bias : tuple of float
        Constant offset per signal (m or rad); the estimator does not know it.
    """

    name: str
    signals: tuple[str, ...]
    period_s: float
    latency_s: float = 0.0
    noise_std: tuple[float, ...] = ()
    bias: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        check = ProblemCollector(f"Sensor {self.name!r}")
        signals = tuple(str(s) for s in self.signals)
        if not signals:
            check.add("signals must name at least one measured coordinate")
        if len(set(signals)) != len(signals):
            check.add(f"signals must be unique, got {signals}")
        check.attempt(lambda: check_positive(self.period_s, "period_s", "s"))
        latency = check.attempt(lambda: check_finite_scalar(self.latency_s, "latency_s"))
        if latency is not None and latency < 0:
            check.add(f"latency_s must be >= 0 s, got {self.latency_s!r}")
        noise = tuple(float(v) for v in self.noise_std) or (0.0,) * len(signals)
        bias = tuple(float(v) for v in self.bias) or (0.0,) * len(signals)
        for label, values in (("noise_std", noise), ("bias", bias)):
            if len(values) != len(signals):
                check.add(f"{label} must have one entry per signal ({len(signals)}), got {len(values)}")
            if not all(np.isfinite(values)):
                check.add(f"{label} must be finite, got {values}")
        if any(v < 0 for v in noise):
            check.add(f"noise_std must be >= 0 (m or rad), got {noise}")
        check.raise_if_any()
        object.__setattr__(self, "signals", signals)
        object.__setattr__(self, "noise_std", noise)
        object.__setattr__(self, "bias", bias)

    def period_steps(self, dt: float) -> int:
        """The sampling period in control periods (raises unless a whole number).

        Parameters
        ----------
        dt : float
            Control sample time in s.

        Returns
        -------
        int
        """
        steps = int(round(self.period_s / dt))
        if steps < 1 or abs(steps * dt - self.period_s) > 1e-9 * self.period_s:
            raise ParameterError(f"sensor {self.name!r}: period_s = {self.period_s} s must be a whole number "
                                  f"(>= 1) of control periods dt = {dt} s")
        return steps


@dataclass(frozen=True, kw_only=True)
class LoopImperfections:
    """What a real loop does that no design model has: lost samples, actuator dead band, timing jitter.

    Attributes
    ----------
    frame_drop : float
        Probability in [0, 1) that a sensor sample is lost (the controller then
        has no measurement of that sensor for that step).
    actuator_deadband : float
        Dead band (backlash) of the actuators in input units (rad for a servo;
        >= 0): the plant follows a command only once it differs from the
        actuator's position by more than half of it.
    timing_jitter_s : float
        Std in s (>= 0) of the error of each sample instant (a non-real-time loop).
    """

    frame_drop: float = 0.0
    actuator_deadband: float = 0.0
    timing_jitter_s: float = 0.0

    def __post_init__(self) -> None:
        check = ProblemCollector("LoopImperfections")
        drop = check.attempt(lambda: check_finite_scalar(self.frame_drop, "frame_drop"))
        if drop is not None and not 0.0 <= drop < 1.0:
            check.add(f"frame_drop must be a probability in [0, 1), got {self.frame_drop!r}")
        check.attempt(lambda: check_nonnegative(self.actuator_deadband, "actuator_deadband", "input units"))
        check.attempt(lambda: check_nonnegative(self.timing_jitter_s, "timing_jitter_s", "s"))
        check.raise_if_any()
        for name in ("frame_drop", "actuator_deadband", "timing_jitter_s"):
            object.__setattr__(self, name, float(getattr(self, name)))


def per_signal(sensors, field: str) -> np.ndarray:
    """A sensor field (``"noise_std"`` or ``"bias"``, m or rad) stacked signal by signal, sensor by sensor, shape (ny,).

    Parameters
    ----------
    sensors : sequence of Sensor
    field : {"noise_std", "bias"}
    """
    return np.array([v for s in sensors for v in getattr(s, field)], dtype=float)
