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
* the **control period** ``dt`` in s;
* the **imperfections** of the truth (:class:`Imperfections`: plate level
  error, rolling resistance, lost camera frames, servo dead band, timing
  jitter) -- truth only: no design reads them (:meth:`RigProfile.design_plant`
  is the nominal plant, :meth:`RigProfile.truth_plant` the imperfect one);
* the **uncertainty** a design must survive (:class:`RigUncertainty`), drawn
  run by run by the robust verification (:func:`ballctl.ball_plate.verification.verify_over_uncertainty`);
* the **friction coefficient** of the ball on the plate, against which a closed
  loop's required friction is checked (``slips``).

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
latency, no command quantum, no imperfections, no uncertainty.

Imperfections and uncertainty of the presets
--------------------------------------------
``tabletop``: a level error of 0.5 deg and -0.35 deg (hobby servos are set to
about 0.5 deg -- one 5 us pulse step of an MG996R is 0.45 deg at the horn --
and tables are not level; Project Moab calibrates its servo offsets for the
same reason); rolling resistance 0.002 (a couple ``c N R``: a lever arm of
0.04 mm for the 20 mm ball, a steel ball on an acrylic or painted plate;
0.0005-0.005 is the range reported for hard balls on hard plates); 1 % of the
camera frames lost (USB cameras at 50 Hz under load); a servo dead band of
0.1 deg at the plate (a 5 us dead band, 0.45 deg at the horn, through a
roughly 4:1 linkage); 2 ms std of timing jitter of the sample instant (a
non-real-time OS reading a USB camera). Uncertainty: ball mass 5 %, radius
2 %, servo bandwidth 20 % (std), latency +-5 ms, level error 0.25 deg std
per axis about the nominal one, rolling resistance 0.001-0.004, sensor noise
20 %, initial offset 1 cm std per axis, frames lost at the rig's rate.
``lab``: level error 0.1 deg and -0.07 deg (calibrated), rolling resistance
0.001, 0.1 % frames lost, 0.01 deg dead band (industrial servos), 0.2 ms
jitter (real-time loop); uncertainty halved where the lab measures it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .._errors import ConfigError
from .._validation import ProblemCollector, check_finite_scalar, check_nonnegative, check_positive
from ..plants.ball_plate import BallPlateParameters
from ..plants.ball_plate_moving import MovingPlateParameters, ServoParameters, ServoPlateBallPlate

from ..hardware import LoopImperfections, RigLimits, Sensor, per_signal

__all__ = ["RigLimits", "Sensor", "Imperfections", "RigUncertainty", "RigSample", "RigProfile", "RigProfileError",
           "PRESETS", "rig_preset", "MEASURABLE_SIGNALS"]

#: plant coordinates a rig sensor can measure (contact point: camera/touch panel; plate angles: encoders)
MEASURABLE_SIGNALS = ("contact_x", "contact_y", "alpha", "beta")


class RigProfileError(ConfigError):
    """A rig description (preset name, TOML file or field) is invalid."""


@dataclass(frozen=True, kw_only=True)
class Imperfections:
    """What the real rig does that no design model has (truth only).

    The plant's share (``plate_offset``, ``rolling_resistance``) goes into the
    truth plant (:meth:`RigProfile.truth_plant`); the loop's share
    (``frame_drop``, ``servo_deadband``, ``timing_jitter_s``) into the closed
    loop (``simulate_closed_loop(..., options=ClosedLoopOptions(imperfections=rig.imperfections.loop))``).

    Attributes
    ----------
    plate_offset : (float, float)
        Level error in rad: a constant angle added to each servo's set-point
        (alpha, beta); |each| < 0.2 rad.
    rolling_resistance : float
        Dimensionless ``c`` >= 0 (< 0.1): a couple ``c N R`` opposing the
        ball's rolling relative to the plate.
    frame_drop : float
        Probability in [0, 1) that a sensor sample is lost (the controller then
        has no measurement of that sensor for that step).
    servo_deadband : float
        Dead band (backlash) of the servos in rad (>= 0): the plate follows a
        command only once it differs from the servo's position by more than
        half of it.
    timing_jitter_s : float
        Std in s (>= 0, below the control period) of the error of each sample
        instant (a non-real-time loop).
    """

    plate_offset: tuple[float, float] = (0.0, 0.0)
    rolling_resistance: float = 0.0
    frame_drop: float = 0.0
    servo_deadband: float = 0.0
    timing_jitter_s: float = 0.0

    def __post_init__(self) -> None:
        check = ProblemCollector("Imperfections")
        offset = tuple(float(v) for v in np.ravel(self.plate_offset))
        if len(offset) != 2 or not all(np.isfinite(offset)) or max(abs(v) for v in offset) >= 0.2:
            check.add(f"plate_offset must be two finite angles in rad with |each| < 0.2 rad (11.5 deg), "
                      f"got {self.plate_offset!r}")
        rr = check.attempt(lambda: check_nonnegative(self.rolling_resistance, "rolling_resistance", ""))
        if rr is not None and rr >= 0.1:
            check.add(f"rolling_resistance must lie in [0, 0.1) (dimensionless), got {self.rolling_resistance!r}")
        drop = check.attempt(lambda: check_finite_scalar(self.frame_drop, "frame_drop"))
        if drop is not None and not 0.0 <= drop < 1.0:
            check.add(f"frame_drop must be a probability in [0, 1), got {self.frame_drop!r}")
        check.attempt(lambda: check_nonnegative(self.servo_deadband, "servo_deadband", "rad"))
        check.attempt(lambda: check_nonnegative(self.timing_jitter_s, "timing_jitter_s", "s"))
        check.raise_if_any()
        object.__setattr__(self, "plate_offset", offset)
        for name in ("rolling_resistance", "frame_drop", "servo_deadband", "timing_jitter_s"):
            object.__setattr__(self, name, float(getattr(self, name)))

    @property
    def any(self) -> bool:
        """True when any imperfection is set."""
        return any(v != 0 for v in (*self.plate_offset, self.rolling_resistance, self.frame_drop,
                                    self.servo_deadband, self.timing_jitter_s))

    @property
    def loop(self) -> LoopImperfections:
        """The loop's share (lost frames, servo dead band, timing jitter), for ``simulate_closed_loop``."""
        return LoopImperfections(frame_drop=self.frame_drop, actuator_deadband=self.servo_deadband,
                                 timing_jitter_s=self.timing_jitter_s)

    def as_dict(self) -> dict:
        """JSON-ready, units in the keys."""
        return {"plate_offset_deg": [float(np.rad2deg(v)) for v in self.plate_offset],
                "rolling_resistance": self.rolling_resistance, "frame_drop": self.frame_drop,
                "servo_deadband_deg": float(np.rad2deg(self.servo_deadband)),
                "timing_jitter_s": self.timing_jitter_s}


@dataclass(frozen=True, kw_only=True)
class RigUncertainty:
    """What a design must survive: the spread of the rig from run to run (robust verification).

    Every draw is centred on the rig as described (its ball, servos and
    imperfections); all spreads >= 0, 0 keeps the value.

    Attributes
    ----------
    mass_rel, radius_rel : float
        Relative spread of the ball's mass and radius (< 0.3): the value is
        drawn log-normal, ``nominal * exp(rel * z)`` with ``z`` standard normal.
    servo_bandwidth_rel : float
        Relative spread of the servo bandwidth (< 0.5), log-normal likewise.
    latency_s : float
        Half-width in s of a uniform error of the sensor latency (the sample
        is that much older or newer than the design assumes).
    plate_offset : float
        Std in rad of the level error per axis, about the rig's own.
    rolling_resistance : (float, float)
        Uniform range of the rolling resistance (dimensionless), or None to keep the rig's.
    noise_rel : float
        Relative spread of the sensors' noise (< 0.5), log-normal likewise.
    initial_offset_m : float
        Std in m of the initial contact-point offset per axis (added to the job's offset).
    frame_drop : float or None
        Probability of a lost sample in the robust runs; None: the rig's own.
    """

    mass_rel: float = 0.0
    radius_rel: float = 0.0
    servo_bandwidth_rel: float = 0.0
    latency_s: float = 0.0
    plate_offset: float = 0.0
    rolling_resistance: tuple[float, float] | None = None
    noise_rel: float = 0.0
    initial_offset_m: float = 0.0
    frame_drop: float | None = None

    def __post_init__(self) -> None:
        check = ProblemCollector("RigUncertainty")
        for name, unit, high in (("mass_rel", "", 0.3), ("radius_rel", "", 0.3), ("servo_bandwidth_rel", "", 0.5),
                                 ("latency_s", "s", 1.0), ("plate_offset", "rad", 0.1), ("noise_rel", "", 0.5),
                                 ("initial_offset_m", "m", 1.0)):
            v = check.attempt(lambda name=name, unit=unit: check_nonnegative(getattr(self, name), name, unit))
            if v is not None and v >= high:
                check.add(f"{name} must lie in [0, {high}) {unit}".rstrip() + f", got {getattr(self, name)!r}")
        if self.rolling_resistance is not None:
            rr = tuple(float(v) for v in np.ravel(self.rolling_resistance))
            if len(rr) != 2 or not (0.0 <= rr[0] <= rr[1] < 0.1):
                check.add(f"rolling_resistance must be a range [low, high] with 0 <= low <= high < 0.1, "
                          f"got {self.rolling_resistance!r}")
            else:
                object.__setattr__(self, "rolling_resistance", rr)
        if self.frame_drop is not None:
            d = check.attempt(lambda: check_finite_scalar(self.frame_drop, "frame_drop"))
            if d is not None and not 0.0 <= d < 1.0:
                check.add(f"frame_drop must be a probability in [0, 1), got {self.frame_drop!r}")
        check.raise_if_any()

    def as_dict(self) -> dict:
        """JSON-ready, units in the keys."""
        return {"mass_rel": self.mass_rel, "radius_rel": self.radius_rel,
                "servo_bandwidth_rel": self.servo_bandwidth_rel, "latency_s": self.latency_s,
                "plate_offset_deg": float(np.rad2deg(self.plate_offset)),
                "rolling_resistance": None if self.rolling_resistance is None else list(self.rolling_resistance),
                "noise_rel": self.noise_rel, "initial_offset_m": self.initial_offset_m,
                "frame_drop": self.frame_drop}


@dataclass(frozen=True)
class RigSample:
    """One draw of a rig from its uncertainty (:meth:`RigProfile.sample`).

    Attributes
    ----------
    rig : RigProfile
        The drawn rig (ball, servos, imperfections, sensor noise).
    latency_error_s : float
        How much older (> 0) the samples are than the design assumes, in s.
    initial_offset_m : ndarray, shape (2,)
        Extra initial contact-point offset in m.
    noise_scale : float
        The drawn sensors' noise over the rig's own.
    """

    rig: "RigProfile"
    latency_error_s: float
    initial_offset_m: np.ndarray
    noise_scale: float = 1.0


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
    imperfections : Imperfections
        What the truth does that no design knows (truth only).
    uncertainty : RigUncertainty
        The spread of the rig the robust verification draws from.
    friction_coefficient : float
        Coefficient of static friction of the ball on the plate (> 0): a closed
        loop that needs more slips.
    """

    name: str
    description: str = ""
    ball: BallPlateParameters = field(default_factory=BallPlateParameters)
    pivot_depth: float = 0.02
    servo: ServoParameters = field(default_factory=ServoParameters)
    limits: RigLimits = field(default_factory=RigLimits)
    sensors: tuple[Sensor, ...] = ()
    dt: float = 0.01
    imperfections: Imperfections = field(default_factory=Imperfections)
    uncertainty: RigUncertainty = field(default_factory=RigUncertainty)
    friction_coefficient: float = 0.3

    def __post_init__(self) -> None:
        check = ProblemCollector(f"RigProfile {self.name!r}")
        check.attempt(lambda: check_positive(self.dt, "dt", "s"))
        check.attempt(lambda: check_positive(self.friction_coefficient, "friction_coefficient", ""))
        if not isinstance(self.imperfections, Imperfections):
            check.add(f"imperfections must be an Imperfections, got {type(self.imperfections).__name__}")
        elif self.dt > 0 and self.imperfections.timing_jitter_s >= self.dt:
            check.add(f"imperfections.timing_jitter_s = {self.imperfections.timing_jitter_s} s must be below the "
                      f"control period dt = {self.dt} s")
        if not isinstance(self.uncertainty, RigUncertainty):
            check.add(f"uncertainty must be a RigUncertainty, got {type(self.uncertainty).__name__}")
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
                if sig not in MEASURABLE_SIGNALS:
                    check.add(f"sensor {s.name!r}: unknown signal {sig!r}; measurable signals are {MEASURABLE_SIGNALS}")
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
        return per_signal(self.sensors, "noise_std")

    @property
    def bias(self) -> np.ndarray:
        """Bias per measured signal (m or rad), shape (ny,)."""
        return per_signal(self.sensors, "bias")

    @property
    def max_latency_s(self) -> float:
        """Largest sensor latency in s."""
        return max(s.latency_s for s in self.sensors)

    def design_plant(self) -> ServoPlateBallPlate:
        """The nominal servo plate (ball, pivot, servos as described, no imperfections): what designs use."""
        return ServoPlateBallPlate(MovingPlateParameters(ball=self.ball, pivot_depth=self.pivot_depth), self.servo)

    def truth_plant(self) -> ServoPlateBallPlate:
        """The exact servo plate with this rig's imperfections: level offset and rolling resistance (the truth)."""
        imp = self.imperfections
        ball = replace(self.ball, rolling_resistance=imp.rolling_resistance)
        servo = replace(self.servo, set_point_offset=tuple(imp.plate_offset))
        return ServoPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=self.pivot_depth), servo)

    def truth_initial_state(self, x0) -> np.ndarray:
        """A truth state ``x0`` (servo-plate coordinates) with the plate where this rig's servos hold it.

        A plate with a level error rests at its servos' zero plus the error;
        starting the truth at the design's plate angles would begin every run
        with a step of the level error on the servos.

        Parameters
        ----------
        x0 : array_like, shape (..., 7)
            ``(contact_x, contact_y, yaw, lean, roll, alpha, beta)``.

        Returns
        -------
        ndarray, shape (..., 7)
        """
        x = np.array(x0, dtype=float)
        names = self.design_plant().coordinate_names
        if x.shape[-1] != len(names):
            raise RigProfileError(f"x0 must have the servo plate's {len(names)} coordinates {names}, got shape "
                                  f"{x.shape}")
        x[..., [names.index("alpha"), names.index("beta")]] += np.asarray(self.imperfections.plate_offset)
        return x

    def without_imperfections(self) -> "RigProfile":
        """The same mechanics with noise, bias, every latency and every imperfection set to zero (the best case)."""
        sensors = tuple(replace(s, latency_s=0.0, noise_std=(0.0,) * len(s.signals), bias=(0.0,) * len(s.signals))
                        for s in self.sensors)
        return replace(self, name=f"{self.name} (no noise, no latency)", sensors=sensors,
                       limits=replace(self.limits, delay=0.0), imperfections=Imperfections())

    def sample(self, rng: np.random.Generator) -> RigSample:
        """One rig drawn from :attr:`uncertainty` about this one (fixed order of draws).

        Parameters
        ----------
        rng : numpy.random.Generator
            The run's generator.

        Returns
        -------
        RigSample
        """
        u = self.uncertainty
        z = rng.standard_normal(8)
        # relative spreads are log-normal: a drawn mass, radius, bandwidth or noise stays positive
        mass = self.ball.mass * np.exp(u.mass_rel * z[0])
        radius = self.ball.radius * np.exp(u.radius_rel * z[1])
        # a solid ball of the drawn mass and radius unless the rig gives its inertia
        inertia = None if self.ball.inertia is None else self.ball.inertia * (mass / self.ball.mass) * (
            radius / self.ball.radius) ** 2
        ball = replace(self.ball, mass=mass, radius=radius, inertia=inertia)
        factor = np.exp(u.servo_bandwidth_rel * z[2])
        servo = replace(self.servo, bandwidth=self.servo.bandwidth * factor)
        imp = self.imperfections
        offset = (imp.plate_offset[0] + u.plate_offset * z[3], imp.plate_offset[1] + u.plate_offset * z[4])
        rr = imp.rolling_resistance if u.rolling_resistance is None else float(rng.uniform(*u.rolling_resistance))
        drop = imp.frame_drop if u.frame_drop is None else u.frame_drop
        imperfections = replace(imp, plate_offset=offset, rolling_resistance=rr, frame_drop=drop)
        noise_scale = float(np.exp(u.noise_rel * z[5]))
        sensors = tuple(replace(s, noise_std=tuple(noise_scale * v for v in s.noise_std)) for s in self.sensors)
        latency_error = float(u.latency_s * (2.0 * rng.random() - 1.0))
        rig = replace(self, ball=ball, servo=servo, imperfections=imperfections, sensors=sensors)
        return RigSample(rig, latency_error, u.initial_offset_m * z[6:8], noise_scale)

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
            "imperfections": self.imperfections.as_dict(),
            "uncertainty": self.uncertainty.as_dict(),
            "friction_coefficient": self.friction_coefficient,
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
            friction_coefficient = 0.3
            [imperfections]  plate_offset_deg = [a, b], rolling_resistance, frame_drop,
                             servo_deadband_deg, timing_jitter_s          (truth only)
            [uncertainty]    mass_rel, radius_rel, servo_bandwidth_rel, latency_s,
                             plate_offset_deg, rolling_resistance = [low, high],
                             noise_rel, initial_offset_m, frame_drop

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
        top = {"name", "base", "description", "dt_s", "pivot_depth_m", "ball", "servo", "limits", "sensor",
               "imperfections", "uncertainty", "friction_coefficient"}
        _check_keys(data, top, source)
        where = _where(source)
        base = rig_preset(str(data.get("base", "tabletop")))
        # the scalar keys are checked as the file gives them (key, unit, range), before any object is built
        dt = _number(data, "dt_s", where, "s", base.dt, low=0.0, low_open=True, what="the control period")
        pivot_depth = _number(data, "pivot_depth_m", where, "m", base.pivot_depth, low=0.0, high=1.0,
                              high_open=True, what="the pivot below the plate surface")
        friction = _number(data, "friction_coefficient", where, "", base.friction_coefficient, low=0.0,
                           low_open=True, what="the ball's static friction on the plate")
        ball = base.ball
        if "ball" in data:
            b = data["ball"]
            _check_keys(b, {"mass_kg", "radius_m"}, f"{source} [ball]")
            at = _where(source, "ball")
            ball = BallPlateParameters(mass=_number(b, "mass_kg", at, "kg", ball.mass, low=0.0, low_open=True),
                                       radius=_number(b, "radius_m", at, "m", ball.radius, low=0.0, low_open=True),
                                       gravity=ball.gravity)
        servo = base.servo
        if "servo" in data:
            s = data["servo"]
            _check_keys(s, {"bandwidth_rad_s", "damping", "plate_inertia_kg_m2", "max_torque_N_m", "max_rate_deg_s"},
                        f"{source} [servo]")
            at = _where(source, "servo")
            servo = _built(at, lambda: ServoParameters(
                bandwidth=_number(s, "bandwidth_rad_s", at, "rad/s", servo.bandwidth, low=0.0, low_open=True),
                damping=_number(s, "damping", at, "", servo.damping, low=0.0, low_open=True),
                plate_inertia=tuple(s.get("plate_inertia_kg_m2", servo.plate_inertia)),
                max_torque=_number(s, "max_torque_N_m", at, "N m", servo.max_torque, low=0.0, low_open=True),
                max_rate=(np.deg2rad(_number(s, "max_rate_deg_s", at, "deg/s", None, low=0.0, low_open=True))
                          if "max_rate_deg_s" in s else servo.max_rate)))
        limits = base.limits
        if "limits" in data:
            lm = data["limits"]
            _check_keys(lm, {"max_tilt_deg", "max_rate_deg_s", "quantum_deg", "delay_s"}, f"{source} [limits]")
            at = _where(source, "limits")

            def deg(key, unit, current, **bounds):
                return float(np.deg2rad(_number(lm, key, at, unit, None, **bounds))) if key in lm else current

            limits = _built(at, lambda: RigLimits(
                max_angle=deg("max_tilt_deg", "deg", limits.max_angle, low=0.0, high=90.0, low_open=True,
                              high_open=True),
                max_rate=deg("max_rate_deg_s", "deg/s", limits.max_rate, low=0.0, low_open=True),
                quantum=deg("quantum_deg", "deg", limits.quantum, low=0.0),
                delay=_number(lm, "delay_s", at, "s", limits.delay, low=0.0)))
        sensors = base.sensors
        if "sensor" in data:
            sensors = tuple(_sensor_from_mapping(s, f"{source} [[sensor]] #{i + 1}")
                            for i, s in enumerate(data["sensor"]))
        try:
            imperfections = base.imperfections
            if "imperfections" in data:
                im = data["imperfections"]
                _check_keys(im, {"plate_offset_deg", "rolling_resistance", "frame_drop", "servo_deadband_deg",
                                 "timing_jitter_s"}, f"{source} [imperfections]")
                imperfections = _built(_where(source, "imperfections"), lambda: Imperfections(
                    plate_offset=tuple(np.deg2rad(np.asarray(im["plate_offset_deg"], dtype=float)))
                    if "plate_offset_deg" in im else imperfections.plate_offset,
                    rolling_resistance=float(im.get("rolling_resistance", imperfections.rolling_resistance)),
                    frame_drop=float(im.get("frame_drop", imperfections.frame_drop)),
                    servo_deadband=float(np.deg2rad(im["servo_deadband_deg"])) if "servo_deadband_deg" in im
                    else imperfections.servo_deadband,
                    timing_jitter_s=float(im.get("timing_jitter_s", imperfections.timing_jitter_s))))
            uncertainty = base.uncertainty
            if "uncertainty" in data:
                un = data["uncertainty"]
                keys = {"mass_rel", "radius_rel", "servo_bandwidth_rel", "latency_s", "plate_offset_deg",
                        "rolling_resistance", "noise_rel", "initial_offset_m", "frame_drop"}
                _check_keys(un, keys, f"{source} [uncertainty]")
                at = _where(source, "uncertainty")
                changes = {k: _number(un, k, at, "s" if k.endswith("_s") else "m" if k.endswith("_m") else "", None)
                           for k in un if k not in ("plate_offset_deg", "rolling_resistance")}
                if "plate_offset_deg" in un:
                    changes["plate_offset"] = float(np.deg2rad(_number(un, "plate_offset_deg", at, "deg", None)))
                if "rolling_resistance" in un:
                    changes["rolling_resistance"] = _built(
                        at, lambda: tuple(float(v) for v in un["rolling_resistance"]))
                uncertainty = _built(at, lambda: replace(uncertainty, **changes))
            return cls(name=str(data.get("name", path_stem(source))),
                       description=str(data.get("description", f"read from {source}")), ball=ball,
                       pivot_depth=pivot_depth, servo=servo, limits=limits, sensors=sensors, dt=dt,
                       imperfections=imperfections, uncertainty=uncertainty, friction_coefficient=friction)
        except RigProfileError:
            raise
        except (ValueError, TypeError) as exc:
            raise RigProfileError(f"{where}: {exc}") from None


def _where(source: str, table: str | None = None) -> str:
    """How a message names a place of a rig description: ``rig file 'x.toml' [limits]``."""
    place = f"rig {source}" if source.startswith("<") else f"rig file {source!r}"
    return place if table is None else f"{place} [{table}]"


def _number(table: Mapping, key: str, where: str, unit: str, default, *, low: float | None = None,
            high: float | None = None, low_open: bool = False, high_open: bool = False, what: str = ""):
    """``table[key]`` as a finite float within its range, in the file's own key and unit, else ``default``.

    A bad value raises a :class:`RigProfileError` of one line naming the file, the key, its unit and range,
    e.g. ``rig file 'rig.toml': dt_s must be > 0 s (the control period), got 0``.
    """
    if key not in table:
        return default
    value = table[key]
    u = f" {unit}" if unit else ""
    note = f" ({what})" if what else ""
    if low is not None and high is not None:
        rng = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}{u}"
    elif low is not None:
        rng = f"{'>' if low_open else '>='} {low:g}{u}"
    elif high is not None:
        rng = f"{'<' if high_open else '<='} {high:g}{u}"
    else:
        rng = f"a finite number{(' in ' + unit) if unit else ''}"
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value)
    if not bad:
        v = float(value)
        bad = ((low is not None and (v < low or (low_open and v == low)))
               or (high is not None and (v > high or (high_open and v == high))))
    if bad:
        shown = repr(value) if isinstance(value, (str, list, dict, bool)) else f"{value:g}"
        raise RigProfileError(f"{where}: {key} must be {'a number ' if rng[0] in '<>' else ''}{rng}{note}, "
                              f"got {shown}")
    return float(value)


def _built(where: str, build):
    """``build()``, its ValueError or TypeError as a one-line :class:`RigProfileError` naming ``where``."""
    try:
        return build()
    except RigProfileError:
        raise
    except (ValueError, TypeError) as exc:
        raise RigProfileError(f"{where}: {' '.join(str(exc).split())}") from None


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
        dt=0.02,
        imperfections=Imperfections(plate_offset=(0.5 * deg, -0.35 * deg), rolling_resistance=0.002,
                                    frame_drop=0.01, servo_deadband=0.1 * deg, timing_jitter_s=0.002),
        uncertainty=RigUncertainty(mass_rel=0.05, radius_rel=0.02, servo_bandwidth_rel=0.2, latency_s=0.003,
                                   plate_offset=0.25 * deg, rolling_resistance=(0.001, 0.004), noise_rel=0.2,
                                   initial_offset_m=0.01),
        friction_coefficient=0.3)
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
        dt=0.005,
        imperfections=Imperfections(plate_offset=(0.1 * deg, -0.07 * deg), rolling_resistance=0.001,
                                    frame_drop=0.001, servo_deadband=0.01 * deg, timing_jitter_s=0.0002),
        uncertainty=RigUncertainty(mass_rel=0.02, radius_rel=0.01, servo_bandwidth_rel=0.1, latency_s=0.001,
                                   plate_offset=0.1 * deg, rolling_resistance=(0.0005, 0.002), noise_rel=0.1,
                                   initial_offset_m=0.01),
        friction_coefficient=0.3)
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
