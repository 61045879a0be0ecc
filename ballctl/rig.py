r"""A rig, described once: the truth plant, what the actuators do, and what the sensors see.

:class:`RigProfile` gathers everything a controller meets on a real ball-plate
rig:

* the **plant used as truth** -- the exact :class:`~ballctl.ServoPlateBallPlate`
  (ball, plate inertia, pivot depth, servo bandwidth and damping, servo torque
  and slew limits);
* the **actuation** -- :class:`RigLimits`: software tilt limit, command slew
  limit, command quantum and actuation latency, applied to every command
  (also the first one);
* the **sensing** -- one :class:`Sensor` per physical sensor: which plant
  coordinates it measures, at what period (a whole number of control periods),
  with what latency (any length, also a fraction of a control period), noise
  standard deviation and bias;
* the **control period** ``dt`` in s.

Presets (:data:`PRESETS`, :func:`rig_preset`) describe typical rigs; a TOML
file (:meth:`RigProfile.from_toml`) describes any other. SI units and radians
inside; the TOML keys name their unit (``max_tilt_deg``, ``latency_s``).

Where the preset numbers come from
----------------------------------
``tabletop`` (the default): a resistive touch panel or a USB camera read at
50 Hz (period 20 ms) with about 1.5 mm noise (touch panels resolve ~0.5 mm with
1-2 mm jitter; a 640 px camera over 0.6 m sees ~1 mm per pixel) and 30 ms
latency (exposure + transfer + image processing, typically 20-50 ms); hobby
servos (MG996R-class) driving a 2 kg, 0.6 m plate: about 60 rad/s closed-loop
bandwidth, no-load speed about 0.17 s / 60 deg (~350 deg/s), stall torque about
1 N m through the linkage; tilt limited in software to +-15 deg and slewed at
300 deg/s; command resolution 0.1 deg (1 us pulse steps); pivot 2 cm below the
top surface; control at 50 Hz, the camera's rate (the 30 ms latency is then
1.5 control periods).
``lab``: a high-speed camera (200 Hz, 0.3 mm noise, 8 ms latency) plus servo
encoders (plate angles at 200 Hz, 0.05 deg noise, no latency), industrial
servos (150 rad/s, 600 deg/s), +-20 deg, control at 200 Hz.
``ideal``: every design's best case, for checking designs: the tabletop
mechanics, contact point measured at the control rate without noise, bias or
latency, no command quantum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ._errors import ConfigError
from ._validation import ProblemCollector, check_finite_scalar, check_nonnegative, check_positive
from .plants.ball_plate import BallPlateParameters
from .plants.ball_plate_moving import MovingPlateParameters, ServoParameters, ServoPlateBallPlate

__all__ = ["RigLimits", "Sensor", "RigProfile", "RigProfileError", "PRESETS", "rig_preset",
           "MEASURABLE_SIGNALS"]

#: plant coordinates a rig sensor can measure (contact point: camera/touch panel; plate angles: encoders)
MEASURABLE_SIGNALS = ("contact_x", "contact_y", "alpha", "beta")


class RigProfileError(ConfigError):
    """A rig description (preset name, TOML file or field) is invalid."""


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
        Plant coordinates it measures, from :data:`MEASURABLE_SIGNALS`
        (contact point in m, plate angles in rad).
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
        for s in signals:
            if s not in MEASURABLE_SIGNALS:
                check.add(f"signals: unknown signal {s!r}; measurable signals are {MEASURABLE_SIGNALS}")
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
            raise RigProfileError(f"sensor {self.name!r}: period_s = {self.period_s} s must be a whole number "
                                  f"(>= 1) of control periods dt = {dt} s")
        return steps


@dataclass(frozen=True, kw_only=True)
class RigProfile:
    """A ball-plate rig: truth plant, actuation limits, sensors and control period.

    Attributes
    ----------
    name : str
    description : str
        Where the numbers come from.
    ball : BallPlateParameters
        Ball mass (kg), radius (m), inertia (kg m^2), gravity (m/s^2).
    pivot_depth : float
        Pivot below the plate's top surface in m.
    servo : ServoParameters
        Servo bandwidth (rad/s), damping, plate inertia (kg m^2), torque (N m)
        and physical slew (rad/s) limits of the truth plant.
    limits : RigLimits
        Software tilt limit, command slew, quantum (rad) and actuation latency (s).
    sensors : tuple of Sensor
    dt : float
        Control period in s.
    """

    name: str
    description: str = ""
    ball: BallPlateParameters = field(default_factory=BallPlateParameters)
    pivot_depth: float = 0.02
    servo: ServoParameters = field(default_factory=ServoParameters)
    limits: RigLimits = field(default_factory=RigLimits)
    sensors: tuple[Sensor, ...] = ()
    dt: float = 0.01

    def __post_init__(self) -> None:
        check = ProblemCollector(f"RigProfile {self.name!r}")
        check.attempt(lambda: check_positive(self.dt, "dt", "s"))
        if not 0.0 <= float(self.pivot_depth) < 1.0:
            check.add(f"pivot_depth must lie in [0, 1) m, got {self.pivot_depth!r}")
        sensors = tuple(self.sensors)
        if not sensors:
            check.add("sensors: a rig needs at least one sensor")
        seen: set[str] = set()
        for s in sensors:
            if not isinstance(s, Sensor):
                check.add(f"sensors must be Sensor objects, got {type(s).__name__}")
                continue
            for sig in s.signals:
                if sig in seen:
                    check.add(f"signal {sig!r} is measured by two sensors")
                seen.add(sig)
            if self.dt > 0:
                check.attempt(lambda s=s: s.period_steps(self.dt))
        check.raise_if_any()
        object.__setattr__(self, "sensors", sensors)

    # ----------------------------------------------------------------- views
    @property
    def signals(self) -> tuple[str, ...]:
        """All measured signals, sensor by sensor."""
        return tuple(sig for s in self.sensors for sig in s.signals)

    @property
    def noise_std(self) -> np.ndarray:
        """Noise std per measured signal (m or rad), shape (ny,)."""
        return np.array([v for s in self.sensors for v in s.noise_std])

    @property
    def bias(self) -> np.ndarray:
        """Bias per measured signal (m or rad), shape (ny,)."""
        return np.array([v for s in self.sensors for v in s.bias])

    @property
    def max_latency_s(self) -> float:
        """Largest sensor latency in s."""
        return max(s.latency_s for s in self.sensors)

    def truth_plant(self) -> ServoPlateBallPlate:
        """The exact servo plate with this rig's ball, pivot and servos (the plant used as truth)."""
        return ServoPlateBallPlate(MovingPlateParameters(ball=self.ball, pivot_depth=self.pivot_depth), self.servo)

    def without_imperfections(self) -> "RigProfile":
        """The same mechanics with noise, bias and every latency set to zero (the design's best case)."""
        sensors = tuple(replace(s, latency_s=0.0, noise_std=(0.0,) * len(s.signals), bias=(0.0,) * len(s.signals))
                        for s in self.sensors)
        return replace(self, name=f"{self.name} (no noise, no latency)", sensors=sensors,
                       limits=replace(self.limits, delay=0.0))

    def as_dict(self) -> dict:
        """Plain JSON-ready description with units in the key names."""
        lim = self.limits
        return {
            "name": self.name, "dt_s": self.dt, "pivot_depth_m": self.pivot_depth,
            "ball": {"mass_kg": self.ball.mass, "radius_m": self.ball.radius, "gravity_m_s2": self.ball.gravity},
            "servo": {"bandwidth_rad_s": self.servo.bandwidth, "damping": self.servo.damping,
                      "plate_inertia_kg_m2": list(self.servo.plate_inertia), "max_torque_N_m": self.servo.max_torque,
                      "max_rate_rad_s": self.servo.max_rate},
            "limits": {"max_angle_rad": lim.max_angle, "max_rate_rad_s": lim.max_rate, "quantum_rad": lim.quantum,
                       "delay_s": lim.delay},
            "sensors": [{"name": s.name, "signals": list(s.signals), "period_s": s.period_s,
                         "latency_s": s.latency_s, "noise_std": list(s.noise_std), "bias": list(s.bias)}
                        for s in self.sensors],
        }

    # ------------------------------------------------------------------ TOML
    @classmethod
    def from_toml(cls, path) -> "RigProfile":
        """Read a rig from a TOML file (degrees only here, in keys ending ``_deg``).

        Layout (every key optional except ``[[sensor]]``; a key left out takes
        the ``base`` preset's value, default ``"tabletop"``)::

            name = "my rig"
            base = "tabletop"
            dt_s = 0.01
            pivot_depth_m = 0.02
            [ball]      mass_kg, radius_m
            [servo]     bandwidth_rad_s, damping, plate_inertia_kg_m2 = [Jxx, Jyy, Jzz],
                        max_torque_N_m, max_rate_deg_s
            [limits]    max_tilt_deg, max_rate_deg_s, quantum_deg, delay_s
            [[sensor]]  name, signals = ["contact_x", "contact_y"], rate_hz, latency_s,
                        noise_std (m or rad, per signal or one for all), noise_std_deg (plate angles),
                        bias (per signal)

        Unknown keys raise (a typo never silently keeps a default).

        Parameters
        ----------
        path : str or path-like
            The TOML file.

        Returns
        -------
        RigProfile
        """
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib
        path = Path(path)
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise RigProfileError(f"rig file {str(path)!r} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise RigProfileError(f"rig file {str(path)!r} is not valid TOML: {exc}") from None
        return cls.from_mapping(data, source=str(path))

    @classmethod
    def from_mapping(cls, data: Mapping, *, source: str = "<mapping>") -> "RigProfile":
        """Build a rig from the nested mapping of :meth:`from_toml`.

        Parameters
        ----------
        data : mapping
            The nested mapping (SI units; degrees only in keys ending ``_deg``).
        source : str
            Where the mapping came from, for error messages.

        Returns
        -------
        RigProfile
        """
        top = {"name", "base", "description", "dt_s", "pivot_depth_m", "ball", "servo", "limits", "sensor"}
        _check_keys(data, top, source)
        base = rig_preset(str(data.get("base", "tabletop")))
        ball = base.ball
        if "ball" in data:
            b = data["ball"]
            _check_keys(b, {"mass_kg", "radius_m"}, f"{source} [ball]")
            ball = BallPlateParameters(mass=float(b.get("mass_kg", ball.mass)),
                                       radius=float(b.get("radius_m", ball.radius)), gravity=ball.gravity)
        servo = base.servo
        if "servo" in data:
            s = data["servo"]
            _check_keys(s, {"bandwidth_rad_s", "damping", "plate_inertia_kg_m2", "max_torque_N_m", "max_rate_deg_s"},
                        f"{source} [servo]")
            servo = ServoParameters(
                bandwidth=float(s.get("bandwidth_rad_s", servo.bandwidth)),
                damping=float(s.get("damping", servo.damping)),
                plate_inertia=tuple(s.get("plate_inertia_kg_m2", servo.plate_inertia)),
                max_torque=s.get("max_torque_N_m", servo.max_torque),
                max_rate=np.deg2rad(s["max_rate_deg_s"]) if "max_rate_deg_s" in s else servo.max_rate)
        limits = base.limits
        if "limits" in data:
            lm = data["limits"]
            _check_keys(lm, {"max_tilt_deg", "max_rate_deg_s", "quantum_deg", "delay_s"}, f"{source} [limits]")
            limits = RigLimits(
                max_angle=float(np.deg2rad(lm["max_tilt_deg"])) if "max_tilt_deg" in lm else limits.max_angle,
                max_rate=float(np.deg2rad(lm["max_rate_deg_s"])) if "max_rate_deg_s" in lm else limits.max_rate,
                quantum=float(np.deg2rad(lm["quantum_deg"])) if "quantum_deg" in lm else limits.quantum,
                delay=float(lm.get("delay_s", limits.delay)))
        sensors = base.sensors
        if "sensor" in data:
            sensors = tuple(_sensor_from_mapping(s, f"{source} [[sensor]] #{i + 1}")
                            for i, s in enumerate(data["sensor"]))
        try:
            return cls(name=str(data.get("name", path_stem(source))),
                       description=str(data.get("description", f"read from {source}")), ball=ball,
                       pivot_depth=float(data.get("pivot_depth_m", base.pivot_depth)), servo=servo, limits=limits,
                       sensors=sensors, dt=float(data.get("dt_s", base.dt)))
        except RigProfileError:
            raise
        except ValueError as exc:
            raise RigProfileError(f"{source}: {exc}") from None


def path_stem(source: str) -> str:
    """File stem of a source label (the rig's default name)."""
    return Path(source).stem if source and not source.startswith("<") else "custom"


def _check_keys(table, allowed: set[str], where: str) -> None:
    if not isinstance(table, Mapping):
        raise RigProfileError(f"{where} must be a table, got {type(table).__name__}")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise RigProfileError(f"{where}: unknown key(s) {unknown}; allowed keys are {sorted(allowed)}")


def _sensor_from_mapping(s, where: str) -> Sensor:
    _check_keys(s, {"name", "signals", "rate_hz", "latency_s", "noise_std", "noise_std_deg", "bias"}, where)
    if "signals" not in s or "rate_hz" not in s:
        raise RigProfileError(f"{where}: a sensor needs 'signals' and 'rate_hz'")
    signals = tuple(s["signals"])
    rate = float(s["rate_hz"])
    if not np.isfinite(rate) or rate <= 0:
        raise RigProfileError(f"{where}: rate_hz must be > 0 Hz, got {s['rate_hz']!r}")

    def per_signal(value):
        values = [float(value)] * len(signals) if np.ndim(value) == 0 else [float(v) for v in value]
        return tuple(values)

    if "noise_std" in s and "noise_std_deg" in s:
        raise RigProfileError(f"{where}: give noise_std (m or rad) or noise_std_deg, not both")
    noise = per_signal(s["noise_std"]) if "noise_std" in s else (
        tuple(np.deg2rad(per_signal(s["noise_std_deg"]))) if "noise_std_deg" in s else ())
    try:
        return Sensor(name=str(s.get("name", "sensor")), signals=signals, period_s=1.0 / rate,
                      latency_s=float(s.get("latency_s", 0.0)), noise_std=noise,
                      bias=per_signal(s["bias"]) if "bias" in s else ())
    except ValueError as exc:
        raise RigProfileError(f"{where}: {exc}") from None


def _presets() -> dict[str, RigProfile]:
    deg = np.pi / 180.0
    hobby = ServoParameters(bandwidth=60.0, damping=0.8, plate_inertia=(0.06, 0.06, 0.12), max_torque=1.0,
                            max_rate=350 * deg)
    tabletop = RigProfile(
        name="tabletop",
        description="touch panel / camera at 50 Hz, 1.5 mm noise, 30 ms latency; hobby servos (60 rad/s, "
                    "350 deg/s, 1 N m); +-15 deg tilt, 300 deg/s slew, 0.1 deg quantum; pivot 2 cm; control 50 Hz",
        pivot_depth=0.02, servo=hobby,
        limits=RigLimits(max_angle=15 * deg, max_rate=300 * deg, quantum=0.1 * deg, delay=0.0),
        sensors=(Sensor(name="camera", signals=("contact_x", "contact_y"), period_s=0.02, latency_s=0.03,
                        noise_std=(1.5e-3, 1.5e-3)),),
        dt=0.02)
    lab = RigProfile(
        name="lab",
        description="high-speed camera 200 Hz (0.3 mm, 8 ms) + servo encoders 200 Hz (0.05 deg); industrial "
                    "servos (150 rad/s, 600 deg/s); +-20 deg tilt; control 200 Hz",
        pivot_depth=0.02,
        servo=ServoParameters(bandwidth=150.0, damping=0.8, plate_inertia=(0.06, 0.06, 0.12), max_torque=5.0,
                              max_rate=600 * deg),
        limits=RigLimits(max_angle=20 * deg, max_rate=500 * deg, quantum=0.01 * deg, delay=0.0),
        sensors=(Sensor(name="camera", signals=("contact_x", "contact_y"), period_s=0.005, latency_s=0.008,
                        noise_std=(3e-4, 3e-4)),
                 Sensor(name="encoders", signals=("alpha", "beta"), period_s=0.005, latency_s=0.0,
                        noise_std=(0.05 * deg, 0.05 * deg))),
        dt=0.005)
    ideal = RigProfile(
        name="ideal",
        description="tabletop mechanics; contact point at the control rate, no noise, bias or latency; "
                    "no command quantum",
        pivot_depth=0.02, servo=hobby,
        limits=RigLimits(max_angle=15 * deg, max_rate=300 * deg),
        sensors=(Sensor(name="camera", signals=("contact_x", "contact_y"), period_s=0.02, latency_s=0.0),),
        dt=0.02)
    return {"tabletop": tabletop, "lab": lab, "ideal": ideal}


#: the documented presets by name (see the module docstring for their sources)
PRESETS: Mapping[str, RigProfile] = _presets()


def rig_preset(name: str) -> RigProfile:
    """The preset called ``name`` (``"tabletop"``, ``"lab"`` or ``"ideal"``).

    Parameters
    ----------
    name : str
        Preset name.

    Returns
    -------
    RigProfile
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise RigProfileError(f"unknown rig preset {name!r}; presets are {sorted(PRESETS)}") from None
