r"""Calibrate a rig from its own log: level offsets, latency, servo response, noise, rolling resistance.

:func:`identify_rig` fits the project's truth plant (the exact servo plate,
:meth:`ballctl.RigProfile.truth_plant`) to a rig log (:class:`ballctl.ball_plate.rig_log.RigLog`:
the commands the firmware sent, the readings it received) and returns the
identified rig (:class:`RigIdentification`: values, standard errors, what the
log did not excite, a rig TOML that ``ballctl track --rig`` accepts).

The fit: output error by multiple shooting
------------------------------------------
The ball on a plate is open-loop unstable: a simulation under the logged
commands runs away from the log within a second. The fit therefore cuts the
log into windows of ``window_s`` (0.5 s by default, :math:`M` control steps) and
re-initializes the ball in each: window :math:`w` starts at step
:math:`s_w = wM` from its own contact point and velocity
:math:`n_w = (x_C, y_C, \dot x_C, \dot y_C)` (4 nuisance parameters per window),
while the plate (angles, rates) and the ball's spin about the plate normal
carry over from the end of the previous window (the plate's servo state and
the spin are physical states that the windows share; the first window starts
with the plate at rest at the command plus the level offset, with the spin
:math:`\omega_0`, a global nuisance parameter, and is the plate's burn-in: its
readings are not fitted). The ball's orientation chart is fresh in every
window (roll axis along its angular velocity: the ball is isotropic, and RK4
then integrates a window to about 0.01 mm per second). Each window runs the
truth plant under the logged commands through the compiled loop
(:func:`ballctl.simulation.engine.run_closed_loop` open loop, classical RK4, the same
kernels as the rig's truth); the servo dead band acts on the commands first
(:func:`ballctl.simulation.loop_step.backlash` along the whole log, so its state is right
at every window start).

A reading received at row :math:`k` of sensor :math:`g` is modelled as the
truth signal at the older instant :math:`t_k - \tau_g` (the sample age, one
per sensor), interpolated between the simulated samples (cubic Hermite with
the simulated rates), plus a bias for plate-angle encoders:

.. math::

    \hat y_k(\theta, n) = h\big(x(t_k - \tau_g;\ \theta, n_{w(k)})\big) + b_g,
    \qquad
    \min_{\theta, n}\ \sum_k \Big\| \frac{y_k - \hat y_k}{\sigma_g} \Big\|^2
    + \sum_i \Big(\frac{\theta_i - \theta_{i,0}}{s_i}\Big)^2 ,

with :math:`\theta` = (plate level offsets :math:`\delta_\alpha, \delta_\beta`
[rad], servo bandwidth :math:`\omega_s` [rad/s] and damping :math:`\zeta`,
rolling resistance :math:`c`, servo dead band [rad], initial spin
:math:`\omega_0` [rad/s], sample ages :math:`\tau_g` [s], encoder biases
[rad]) and a weak prior (:data:`PRIOR_STD`, centred on the base rig) that only
matters for a parameter the log leaves undetermined. Levenberg-Marquardt
solves it: the Jacobian of the simulated parameters comes from forward
differences, all perturbations of a window run in one batched call of the
compiled loop (split over ``workers`` threads); the sample ages and biases have
analytic columns (:math:`\partial\hat y/\partial\tau = -\dot y`), and so have
the nuisances (a reading moves with its window's initial contact point and,
by its time in the window, with the initial velocity); the nuisance block is
block diagonal and eliminated by its Schur complement. In the last stage
each reading is weighted by its modelled spread,
:math:`\sigma_k^2 = \sigma_n^2 + \sigma_j^2 \dot y_k^2` (generalized least
squares with the noise and the timing jitter of the residuals). A reading's
noise is white and independent of the commands that shaped the sample, so
the output error stays consistent on closed-loop data; the windows' nuisance
sees the loop's reaction to the noise inside its window, which widens the
scatter of the rolling resistance on short windows (``docs/identification.md``).

Stages and the excitation test
------------------------------
(1) Level offsets, rolling resistance, encoder biases and the nuisances, with
the servo and the latencies at the base rig's values; (2) at that point, all
parameters free, the one whose standard error exceeds its tolerance is held at
the base rig's value, in the order :data:`HOLD_ORDER`, until every remaining
one is within its tolerance; (3) the remaining set is fitted (a parameter that
leaves its tolerance there is held too); (4) again with the readings'
weights. A camera alone sees the servo's lag and the sample's age only as
their sum (and, on a steady circle, as the rolling resistance's along-track
mark): the order holds the dead band, the damping and the latency before the
bandwidth. Plate encoders see the servo directly.

Standard errors, noise, what the log excites
--------------------------------------------
The covariance of the global parameters is :math:`s^2 S^{-1}` with :math:`S`
the Schur complement of the nuisance block in :math:`J^TJ` and
:math:`s^2 = \mathrm{RSS}/(n - p)`, widened where the windows' sandwich (their
profiled scores, neighbours correlated) is wider; it is conditional on the
held parameters. The sensor noise and the timing jitter of
the sample instants come from the residuals: a reading off by
:math:`\epsilon \sim N(0, \sigma_j^2)` in time reads :math:`y + \epsilon\dot y`,
so :math:`E[r^2] = \sigma_n^2 + \sigma_j^2 \dot y^2` per signal, a linear
regression of the squared residuals (scaled by :math:`n/(n-p)`) on the
simulated rates squared. The lost-frame rate is the fraction of a sensor's
expected readings that are missing.

The log only resolves the sensor latency to one control period: a sample
taken at :math:`t_j` and used at :math:`t_k` had a latency in
:math:`((k-j-1)\Delta t, (k-j)\Delta t]`, and the rig model (and the Kalman
filter) rounds a latency up to whole periods. The latency reported is the
middle of the interval the fitted age lies in, :math:`\max(0, \tau_g - \Delta t/2)`,
with the standard error :math:`\sqrt{se_\tau^2 + \Delta t^2/12}`.

A parameter is **not excited** when its standard error exceeds its tolerance
(:data:`TOLERANCES`: what a design needs to know it to); the report names it
and the rig TOML keeps the base rig's value for it.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .._errors import ParameterError
from .._validation import check_integer, check_positive
from ..simulation.arrays import LoopArrays, draw_runs
from ..simulation.engine import kernel_code, run_closed_loop
from ..simulation.loop_step import backlash, latency_steps
from .rig import RigProfile, rig_preset
from .rig_log import RigLog

__all__ = ["IdentifiedParameter", "RigIdentification", "identify_rig", "rig_parameter_values", "rig_to_toml",
           "plot_identification",
           "write_identification", "identification_outputs", "REPORT_FILES",
           "excitation_log", "PARAMETERS", "TOLERANCES", "PRIOR_STD", "HOLD_ORDER",
           "DEFAULT_WINDOW_S"]

#: window of the multiple shooting in s
DEFAULT_WINDOW_S = 0.5

#: the rig parameters the fit can estimate: name -> (unit, what it is)
PARAMETERS = {
    "plate_offset_alpha": ("rad", "plate level error about the alpha axis"),
    "plate_offset_beta": ("rad", "plate level error about the beta axis"),
    "servo_bandwidth": ("rad/s", "servo natural frequency"),
    "servo_damping": ("", "servo damping ratio"),
    "rolling_resistance": ("", "rolling resistance coefficient c"),
    "servo_deadband": ("rad", "servo dead band (backlash) at the plate"),
    "latency": ("s", "sensor latency (per sensor)"),
    "bias": ("rad", "encoder bias (per plate-angle signal)"),
    "noise": ("m or rad", "sensor noise std (per signal)"),
    "timing_jitter": ("s", "std of the sample instants' error"),
    "frame_drop": ("", "probability that a sensor sample is lost"),
}

#: a parameter whose standard error exceeds this is "not excited" (relative ones multiply the value)
TOLERANCES = {
    "plate_offset_alpha": ("abs", float(np.deg2rad(0.15))),
    "plate_offset_beta": ("abs", float(np.deg2rad(0.15))),
    "servo_bandwidth": ("rel", 0.3),
    "servo_damping": ("rel", 0.3),
    "rolling_resistance": ("relabs", (0.5, 0.002)),
    "servo_deadband": ("relabs", (0.5, float(np.deg2rad(0.05)))),
    "latency": ("abs", 0.010),
    "bias": ("abs", float(np.deg2rad(0.15))),
    "noise": ("rel", 0.25),
    "timing_jitter": ("relabs", (0.5, 0.001)),
    "frame_drop": ("relabs", (0.5, 0.005)),
}

#: the order in which the excitation test holds parameters whose standard error exceeds the tolerance: what a
#: contact-point log resolves worst first (a camera sees the servo's lag and the sample's age only as their
#: sum: holding the age at the base rig's whole number of control periods leaves the bandwidth to match the lag)
HOLD_ORDER = ("servo_deadband", "servo_damping", "latency", "servo_bandwidth", "rolling_resistance", "bias",
              "plate_offset")

#: std of the weak prior about the base rig's value (only decisive for parameters the log does not excite)
PRIOR_STD = {
    "plate_offset_alpha": float(np.deg2rad(5.0)), "plate_offset_beta": float(np.deg2rad(5.0)),
    "servo_bandwidth": ("rel", 1.0), "servo_damping": 1.0, "rolling_resistance": 0.05,
    "servo_deadband": float(np.deg2rad(1.0)), "initial_spin": 100.0, "latency": 0.1,
    "bias": float(np.deg2rad(5.0)),
}

#: simulated global parameters in the order of the fit
_SIM = ("plate_offset_alpha", "plate_offset_beta", "servo_bandwidth", "servo_damping", "rolling_resistance",
        "servo_deadband", "initial_spin")
#: forward-difference steps (absolute; the bandwidth's relative)
_STEP = {"plate_offset_alpha": 1e-4, "plate_offset_beta": 1e-4, "servo_bandwidth": 0.005, "servo_damping": 2e-3,
         "rolling_resistance": 2e-4, "servo_deadband": 2e-4, "initial_spin": 0.2}
_MIN_DEADBAND_STEP = 2e-4
#: a Levenberg-Marquardt step that lowers the cost by less than this (weighted sum of squares) ends a stage
_COST_TOL = 0.05
#: neighbouring windows whose scores the robust covariance correlates (the loop carries noise across them)
_HAC_LAGS = 1
#: rad: the roll axis goes along the ball's angular velocity unless that is within this of the plate normal
_MIN_POLAR = float(np.deg2rad(25.0))
#: longest RK4 step of the fit in s (the truth's of ``ballctl track``)
_MAX_RK4_STEP = 0.01


@dataclass(frozen=True)
class IdentifiedParameter:
    """One identified parameter of a rig.

    Attributes
    ----------
    name : str
        E.g. ``"servo_bandwidth"``, ``"latency"`` or ``"noise"``.
    key : str
        Unique label: the name, with the sensor or signal for per-sensor ones
        (``"latency camera"``, ``"noise contact_x"``).
    unit : str
        SI unit of :attr:`value` (m, rad, s, rad/s or dimensionless "").
    value : float
        The estimate.
    standard_error : float
        Its standard error (same unit; ``inf`` when the log does not determine it).
    base_value : float
        The base rig's value (kept in the TOML when not excited).
    excited : bool
        The log determines it to its tolerance (:data:`TOLERANCES`).
    tolerance : float
        The standard error above which it counts as not excited (same unit).
    fitted : bool
        False for a parameter held at the base value (``fit=`` left it out, or the log has no data for it).
    """

    name: str
    key: str
    unit: str
    value: float
    standard_error: float
    base_value: float
    excited: bool
    tolerance: float
    fitted: bool = True

    @property
    def rig_value(self) -> float:
        """The value the identified rig uses: the estimate when excited, else the base rig's."""
        return self.value if (self.excited and self.fitted) else self.base_value

    def display(self) -> tuple[float, float, float, str]:
        """``(value, standard error, base value, unit)`` in the units of a report (deg, ms).

        Returns
        -------
        tuple
        """
        scale, unit = 1.0, self.unit
        if self.unit == "rad":
            scale, unit = 180.0 / np.pi, "deg"
        elif self.unit == "s":
            scale, unit = 1e3, "ms"
        elif self.unit == "m":
            scale, unit = 1e3, "mm"
        return self.value * scale, self.standard_error * scale, self.base_value * scale, unit

    def as_dict(self) -> dict:
        """JSON-ready (SI units; an infinite standard error is None)."""
        se = self.standard_error
        return {"name": self.name, "key": self.key, "unit": self.unit, "value": float(self.value),
                "standard_error": float(se) if np.isfinite(se) else None, "base_value": float(self.base_value),
                "excited": bool(self.excited), "tolerance": float(self.tolerance), "fitted": bool(self.fitted),
                "rig_value": float(self.rig_value)}


@dataclass(frozen=True)
class RigIdentification:
    """The rig a log describes: identified parameters with standard errors, the rig, and the fit's traces.

    Attributes
    ----------
    parameters : tuple of IdentifiedParameter
    rig : RigProfile
        The base rig with every excited parameter replaced by its estimate.
    base : RigProfile
        The rig the fit started from (what the log cannot tell comes from it).
    log : RigLog
    t : ndarray, shape (R,)
        Times in s of the fitted readings (the control step at which each arrived).
    measured, predicted : ndarray, shape (R, ny)
        Readings and the fitted model's prediction (NaN where a signal has none).
    window_s : float
        Length of the shooting windows in s.
    n_windows : int
    iterations : int
        Levenberg-Marquardt iterations.
    converged : bool
        The relative cost decrease fell below the tolerance.
    cost : float
        Final weighted sum of squares.
    correlation : ndarray, shape (P, P)
        Correlations of the fitted global parameters (:attr:`correlation_names`).
    correlation_names : tuple of str
    initial_spin_rad_s : tuple of float
        The ball's fitted spin about the plate normal at the log's start and its standard error, rad/s.
    wall_time_s : float
    """

    parameters: tuple
    rig: RigProfile
    base: RigProfile
    log: RigLog
    t: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    window_s: float
    n_windows: int
    iterations: int
    converged: bool
    cost: float
    correlation: np.ndarray
    correlation_names: tuple
    initial_spin_rad_s: tuple
    wall_time_s: float

    def parameter(self, key: str) -> IdentifiedParameter:
        """The parameter with this key (or name, when only one has it).

        Parameters
        ----------
        key : str
            E.g. ``"servo_bandwidth"``, ``"latency camera"``.

        Returns
        -------
        IdentifiedParameter
        """
        for p in self.parameters:
            if p.key == key:
                return p
        hits = [p for p in self.parameters if p.name == key]
        if len(hits) == 1:
            return hits[0]
        raise ParameterError(f"key must be one of {[p.key for p in self.parameters]}, got {key!r}")

    @property
    def not_excited(self) -> tuple[str, ...]:
        """Keys of the fitted parameters the log did not excite (the TOML keeps the base values)."""
        return tuple(p.key for p in self.parameters if p.fitted and not p.excited)

    @property
    def residuals(self) -> np.ndarray:
        """``measured - predicted``, shape (R, ny)."""
        return self.measured - self.predicted

    def as_dict(self) -> dict:
        """JSON-ready summary (strict: no NaN or infinity)."""
        return {"log": self.log.as_dict(), "base_rig": self.base.name, "window_s": self.window_s,
                "windows": self.n_windows, "iterations": self.iterations, "converged": self.converged,
                "cost": float(self.cost), "parameters": [p.as_dict() for p in self.parameters],
                "not_excited": list(self.not_excited),
                "initial_spin_rad_s": [float(v) if np.isfinite(v) else None for v in self.initial_spin_rad_s],
                "residual_rms": {s: _rms(self.residuals[:, i]) for i, s in enumerate(self.log.signal_names)},
                "correlation": {"names": list(self.correlation_names),
                                "matrix": np.round(self.correlation, 4).tolist()},
                "wall_time_s": self.wall_time_s}

    def to_table(self) -> str:
        """The parameters as a Markdown table (value +- standard error, base, excited).

        Returns
        -------
        str
        """
        lines = ["| parameter | identified | +- standard error | base | excited | in the rig TOML |",
                 "|---|---|---|---|---|---|"]
        for p in self.parameters:
            v, se, b, unit = p.display()
            u = f" {unit}" if unit else ""
            se_text = f"{se:.3g}" if np.isfinite(se) else "-"
            state = "yes" if (p.excited and p.fitted) else ("held" if not p.fitted else "**no**")
            lines.append(f"| {p.key} | {v:.4g}{u} | {se_text}{u} | {b:.4g}{u} | {state} | "
                         f"{'identified' if p.excited and p.fitted else 'base'} |")
        return "\n".join(lines)

    def report(self) -> str:
        """A Markdown report: the table, what the log did not excite, the fit's residuals.

        Returns
        -------
        str
        """
        log = self.log
        lines = ["# ballctl identify: summary", "",
                 f"Log {log.source!r}: {log.n_steps} control steps of {log.dt:g} s ({log.duration_s:.4g} s), "
                 f"signals {', '.join(log.signal_names)}" + (", with an identification dither" if log.dither is not None
                                                              else "") + ".",
                 f"Base rig **{self.base.name}** (what the log cannot tell comes from it).", "",
                 f"Fit: output error by multiple shooting on the exact servo plate, {self.n_windows} windows of "
                 f"{self.window_s:g} s, {self.iterations} Levenberg-Marquardt iterations "
                 f"({'converged' if self.converged else 'NOT converged'}), {self.wall_time_s:.3g} s.", "",
                 "## Identified parameters", "", self.to_table(), ""]
        missing = self.not_excited
        if missing:
            lines += [f"**Not excited by this log:** {', '.join(missing)}. Their standard errors exceed what a "
                      "design needs; the rig TOML keeps the base rig's values. A log with more motion (a longer run, "
                      "`ballctl identify --excitation`) excites them.", ""]
        else:
            lines += ["Every fitted parameter is excited by this log.", ""]
        lines += ["The standard errors are conditional on the values held (not excited or not fitted); a "
                  "parameter not excited shows the base value and the standard error it had when it was held.", ""]
        held = [p.key for p in self.parameters if not p.fitted]
        if held:
            lines += [f"Held at the base rig's values (not fitted): {', '.join(held)}.", ""]
        spin, spin_se = self.initial_spin_rad_s
        lines += [f"Nuisance: the ball's spin about the plate normal at the start, {spin:.3g} +- "
                  f"{spin_se:.2g} rad/s; {self.n_windows} windows' initial contact points and velocities.", "",
                  "Latency: the log gives each reading at the control step it arrived, so a sensor's latency is "
                  "known to one control period; the value is the middle of that interval (see "
                  "docs/identification.md).", "",
                  "## Residuals", "",
                  "| signal | RMS residual | RMS reading change per step |", "|---|---|---|"]
        for i, s in enumerate(log.signal_names):
            unit, scale = ("mm", 1e3) if s.startswith("contact") else ("deg", 180 / np.pi)
            y = self.measured[:, i]
            lines.append(f"| {s} | {scale * _rms(self.residuals[:, i]):.3g} {unit} | "
                         f"{scale * _rms(np.diff(y[np.isfinite(y)])):.3g} {unit} |")
        if len(self.correlation_names) > 1:
            c = self.correlation
            pairs = [(abs(c[i, j]), self.correlation_names[i], self.correlation_names[j], c[i, j])
                     for i in range(len(c)) for j in range(i + 1, len(c))]
            strong = [p for p in sorted(pairs, reverse=True) if p[0] >= 0.5][:5]
            if strong:
                lines += ["", "Strongly correlated estimates: " + "; ".join(f"{a} / {b} ({v:+.2f})"
                                                                          for _, a, b, v in strong) + "."]
        return "\n".join(lines) + "\n"


def _rms(v) -> float:
    v = np.asarray(v, dtype=float)
    v = v[np.isfinite(v)]
    return float(np.sqrt(np.mean(v ** 2))) if v.size else 0.0


# ======================================================================= the model
def _chart(vx, vy, wz, radius):
    """A ball chart (yaw, lean) and Euler rates for the relative angular velocity ``(-vy/R, vx/R, wz)``.

    The roll axis goes along the angular velocity (Euler rates ``(0, 0, |w|)``:
    a ball rolling along a smooth path keeps a steady chart, which RK4
    integrates accurately) unless that is within 25 deg of the plate normal
    (a spinning ball); then it lies horizontal and perpendicular to it. In
    both cases the axis precesses away from the vertical, the chart's singularity.
    """
    w = np.stack([-vy / radius, vx / radius, wz], axis=-1)
    nw = np.linalg.norm(w, axis=-1)
    wt = np.hypot(w[..., 0], w[..., 1])
    parallel = (np.arctan2(wt, np.abs(w[..., 2])) >= _MIN_POLAR) & (nw > 1e-9)
    a_par = w / np.maximum(nw, 1e-12)[..., None]
    a_perp = np.where((wt > 1e-9)[..., None],
                      np.stack([-w[..., 1], w[..., 0], 0.0 * wt], axis=-1) / np.maximum(wt, 1e-12)[..., None],
                      np.array([0.0, 1.0, 0.0]))
    a = np.where(parallel[..., None], a_par, a_perp)
    lean = np.arcsin(np.clip(a[..., 2], -1.0, 1.0))
    yaw = np.arctan2(-a[..., 0], a[..., 1])
    return (yaw, lean) + _rates_at(yaw, lean, vx, vy, wz, radius)


def _rates_at(yaw, lean, vx, vy, wz, radius):
    r"""Euler rates ``(yaw_rate, lean_rate, roll_rate)`` of the chart ``(yaw, lean)`` for the relative angular
    velocity ``w = (-vy/R, vx/R, wz)``: :math:`w = \dot\phi(c_\psi, s_\psi, 0) + \dot\theta(-s_\psi c_\phi,
    c_\psi c_\phi, s_\phi) + \dot\psi e_z` (docs/conventions.md)."""
    wx, wy = -vy / radius, vx / radius
    c, s = np.cos(yaw), np.sin(yaw)
    lean_rate = wx * c + wy * s
    roll_rate = (-wx * s + wy * c) / np.cos(lean)
    return wz - roll_rate * np.sin(lean), lean_rate, roll_rate


def _spin(x, xd):
    """Relative angular velocity of the ball about the plate normal, ``yaw_rate + roll_rate sin(lean)``."""
    return xd[..., 2] + xd[..., 4] * np.sin(x[..., 3])


@dataclass
class _Group:
    """The readings of one sensor: columns of the log, truth coordinates, arrival steps, rows used."""

    sensor: object
    cols: list
    coords: list
    L: int
    encoder: bool
    k: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    j: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))


class _Model:
    """Multiple-shooting simulation of a log on the truth plant, batched over parameter perturbations."""

    def __init__(self, log: RigLog, base: RigProfile, window_steps: int, workers: int) -> None:
        self.log, self.base = log, base
        self.dt = log.dt
        self.K = log.n_steps
        self.M = window_steps
        self.W = (self.K - 1) // self.M
        self.workers = workers
        self.R = base.ball.radius
        self.substeps = max(2, int(np.ceil(self.dt / _MAX_RK4_STEP - 1e-9)))
        plant = base.truth_plant()
        self.code = kernel_code(plant)
        self.n = plant.n_coordinates
        self.n_constraints = plant.n_constraints
        names = plant.coordinate_names
        self.groups: list[_Group] = []
        for s in base.sensors:
            cols = [log.signal_names.index(g) for g in s.signals if g in log.signal_names]
            if not cols:
                continue
            if len(cols) != len(s.signals):
                raise ParameterError(f"the log has only part of sensor {s.name!r}'s signals {s.signals}")
            self.groups.append(_Group(s, cols, [names.index(g) for g in s.signals],
                                      latency_steps(s.latency_s, self.dt), s.signals[0] == "alpha"))
        used = sorted(c for g in self.groups for c in g.cols)
        if used != list(range(len(log.signal_names))):
            extra = [log.signal_names[c] for c in range(len(log.signal_names)) if c not in used]
            raise ParameterError(f"the log has readings of {extra} but the base rig {base.name!r} has no sensor of "
                                 f"them; give a base rig with that sensor (e.g. --rig lab for plate encoders)")
        if self.groups[0].encoder or "contact_x" not in log.signal_names:
            raise ParameterError("the log needs the contact-point readings")
        self.map_rows()

    def map_rows(self) -> None:
        """Assign each reading to the window of the sample it is (row k, sample j = k - L)."""
        end = self.W * self.M
        for g in self.groups:
            k = np.arange(g.L, self.K)
            j = k - g.L
            # window 0 is the plate's burn-in (its servo state at the log's start is unknown): not fitted
            ok = (j >= self.M) & (j < end) & np.all(np.isfinite(self.log.readings[k][:, g.cols]), axis=1)
            g.k, g.j = k[ok], j[ok]

    # ------------------------------------------------------------------ runs
    def kernel_parameters(self, v: dict) -> np.ndarray:
        rig = self.base
        servo = replace(rig.servo, bandwidth=float(v["servo_bandwidth"]), damping=float(v["servo_damping"]))
        imp = replace(rig.imperfections, plate_offset=(float(v["plate_offset_alpha"]), float(v["plate_offset_beta"])),
                      rolling_resistance=float(max(v["rolling_resistance"], 0.0)))
        return np.asarray(replace(rig, servo=servo, imperfections=imp).truth_plant().kernel_parameters, dtype=float)

    def plant_inputs(self, deadband: float) -> np.ndarray:
        """What the plate's servos receive along the log for a dead band in rad, shape (K, 2)."""
        u = self.log.commands
        if deadband <= 0:
            return np.array(u)
        out = np.empty_like(u)
        state = np.array(u[0], dtype=float)
        for k in range(self.K):
            backlash(np.ascontiguousarray(u[k], dtype=float), deadband, state)   # the loop's kernel, in place
            out[k] = state
        return out

    def simulate(self, values: list, nuisance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run every member: ``values[b]`` (dict of the simulated parameters), ``nuisance (B, W, 4)``.

        Returns the coordinates and velocities ``(B, W, M + 1, n)`` of each window.
        """
        B = len(values)
        M, W, n = self.M, self.W, self.n
        params = np.stack([self.kernel_parameters(v) for v in values])
        X = np.full((B, W, M + 1, n), np.nan)
        XD = np.full((B, W, M + 1, n), np.nan)
        deadbands = np.array([max(float(v["servo_deadband"]), 0.0) for v in values])
        inputs = {d: self.plant_inputs(d) for d in np.unique(deadbands)}
        zeros = np.zeros((M + 1, n))
        gains = np.zeros((M, 2, 1))
        selection = np.zeros(1, dtype=np.int64)
        t = self.log.t

        def run(members):
            m = len(members)
            spin = np.array([float(values[b]["initial_spin"]) for b in members])
            u0 = np.stack([inputs[deadbands[b]][0] for b in members])
            offset = np.array([[values[b]["plate_offset_alpha"], values[b]["plate_offset_beta"]] for b in members])
            end_x = end_xd = None
            for w in range(W):
                s = w * M
                nu = nuisance[members, w]
                x0 = np.zeros((m, n))
                xd0 = np.zeros((m, n))
                x0[:, 0], x0[:, 1] = nu[:, 0], nu[:, 1]
                xd0[:, 0], xd0[:, 1] = nu[:, 2], nu[:, 3]
                if end_x is None:
                    x0[:, 5:7] = u0 + offset
                    wz = spin
                else:
                    x0[:, 5:] = end_x[:, 5:]
                    xd0[:, 5:] = end_xd[:, 5:]
                    wz = _spin(end_x, end_xd)
                # a fresh chart in every window (the ball is isotropic: only its angular velocity matters)
                yaw, lean, dyaw, dlean, droll = _chart(nu[:, 2], nu[:, 3], wz, self.R)
                x0[:, 2], x0[:, 3] = yaw, lean
                xd0[:, 2], xd0[:, 3], xd0[:, 4] = dyaw, dlean, droll
                bad = ~(np.all(np.isfinite(x0), axis=1) & np.all(np.isfinite(xd0), axis=1))
                x0[bad], xd0[bad] = 0.0, 0.0
                ex, exd = np.empty((m, n)), np.empty((m, n))
                for d in np.unique(deadbands[members]):  # members sharing a dead band share the plant's inputs
                    sel = np.nonzero(deadbands[members] == d)[0]
                    loop = LoopArrays(kernel_code=self.code, n_constraints=self.n_constraints, dt=self.dt,
                                      times=t[s:s + M + 1], x_ref=zeros, xd_ref=zeros,
                                      u_ref=inputs[d][s:s + M + 1], gains=gains, selection=selection,
                                      tracked_index=np.zeros(0, dtype=np.int64), feedback=False,
                                      substeps=self.substeps)
                    out = run_closed_loop(loop, draw_runs(loop, range(len(sel)), params[[members[i] for i in sel]],
                                                          x0[sel], xd0[sel]))
                    ok = out.status < 0
                    for i, b in enumerate(sel):
                        if ok[i] and not bad[b]:
                            X[members[b], w] = out.x[i]
                            XD[members[b], w] = out.xd[i]
                    ex[sel], exd[sel] = out.x[:, M], out.xd[:, M]
                lost = ~(np.all(np.isfinite(ex), axis=1) & np.all(np.isfinite(exd), axis=1))
                if np.any(lost):  # a failed window: the next one restarts the plate from the commands
                    ex[lost] = 0.0
                    exd[lost] = 0.0
                    ex[lost, 5:7] = inputs[deadbands[0]][min(s + M, self.K - 1)] + offset[lost]
                end_x, end_xd = ex, exd

        chunks = [list(c) for c in np.array_split(np.arange(B), min(self.workers, B)) if len(c)]
        if len(chunks) == 1:
            run(chunks[0])
        else:
            with ThreadPoolExecutor(len(chunks)) as pool:
                list(pool.map(run, chunks))
        return X, XD

    def predict(self, X, XD, g: _Group, age: float):
        """Readings of group ``g`` at ``t_k - age`` from the window runs: values and d/d(age), shapes (B, R, c)."""
        M = self.M
        f = g.L - age / self.dt  # sample instant relative to step j, in steps
        w = g.j // M
        i = g.j - w * M
        base = np.floor(f).astype(int)
        i0 = np.clip(i + base, 0, M - 1)
        s = (i + f - i0)[None, :, None]
        c = g.coords
        p0 = X[:, w, i0][..., c]
        p1 = X[:, w, i0 + 1][..., c]
        v0 = XD[:, w, i0][..., c] * self.dt
        v1 = XD[:, w, i0 + 1][..., c] * self.dt
        s2, s3 = s * s, s * s * s
        value = ((2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * v0 + (-2 * s3 + 3 * s2) * p1 + (s3 - s2) * v1)
        slope = ((6 * s2 - 6 * s) * p0 + (3 * s2 - 4 * s + 1) * v0 + (-6 * s2 + 6 * s) * p1 + (3 * s2 - 2 * s) * v1)
        rate = slope / self.dt
        return value, -rate, rate

    def initial_nuisance(self, age: float) -> np.ndarray:
        """Contact point and velocity at each window start from a quadratic through its readings, shape (W, 4)."""
        g = self.groups[0]
        N = np.zeros((self.W, 4))
        k = np.arange(g.L, self.K)
        k = k[np.all(np.isfinite(self.log.readings[k][:, g.cols]), axis=1)]
        y = self.log.readings[k][:, g.cols]
        j = k - g.L
        t = (j + g.L - age / self.dt) * self.dt
        w_of = j // self.M
        for w in range(self.W):
            sel = w_of == w
            if np.count_nonzero(sel) >= 3:
                tt = t[sel] - w * self.M * self.dt
                for a in range(2):
                    c = np.polyfit(tt, y[sel, a], 2)
                    N[w, a], N[w, 2 + a] = c[2], c[1]
            else:  # too few readings: the nearest one, at rest
                near = int(np.argmin(np.abs(j - w * self.M)))
                N[w, :2] = y[near]
        return N


# ======================================================================= the fit
@dataclass
class _Globals:
    """The global parameter vector: internal names (sim names, ``age g``, ``bias g c``), kinds, prior."""

    names: list
    kinds: list        # "sim", "age", "bias"
    group: list        # sensor group of an age or bias, else -1
    column: list       # column within the group of a bias, else -1
    prior_mean: np.ndarray
    prior_std: np.ndarray
    candidate: np.ndarray  # bool: may be fitted (the fit= choice; the spin always)

    def index(self, name: str) -> int:
        return self.names.index(name)


class _Fit:
    """Levenberg-Marquardt on the multiple-shooting residuals (nuisance block eliminated by its Schur complement)."""

    def __init__(self, model: _Model, G: _Globals, sigma: list) -> None:
        self.m, self.G = model, G
        self.sigma = sigma  # per sensor group: noise std per signal, the residuals' weights
        self.jitter = 0.0  # s: std of the sample instants, weighting the readings by their rate
        self.weight_rates = None  # per group: the rates (R, c) the jitter weights use (fixed within a stage)
        self.N0 = None

    def weights(self, gi: int, shape) -> np.ndarray:
        """Std of the readings of group ``gi``: ``sqrt(sigma^2 + jitter^2 rate^2)``, broadcast to ``shape``."""
        sig = np.broadcast_to(self.sigma[gi], shape)
        if self.jitter > 0 and self.weight_rates is not None and self.weight_rates[gi].shape == shape:
            sig = np.sqrt(sig ** 2 + (self.jitter * self.weight_rates[gi]) ** 2)
        return sig

    def evaluate(self, theta, N, free, jacobian: bool = True) -> dict:
        """Weighted residuals ``r (n,)``, their windows, and (with ``jacobian``) ``Jg (n, P)``, ``Jn (n, 4)``."""
        m, G = self.m, self.G
        sim = [i for i, k in enumerate(G.kinds) if k == "sim" and free[i]] if jacobian else []
        base_values = _sim_values(theta, G)
        values, steps = [base_values], []
        for i in sim:
            v = dict(base_values)
            name = G.names[i]
            h = _STEP[name] * (v[name] if name == "servo_bandwidth" else 1.0)
            if name == "servo_deadband" and v[name] < _MIN_DEADBAND_STEP:
                h = _MIN_DEADBAND_STEP
            v[name] += h
            values.append(v)
            steps.append(h)
        X, XD = m.simulate(values, np.broadcast_to(N, (len(values),) + N.shape))
        res, win, jg, jn, rates, preds, sigs = [], [], [], [], [], [], []
        for gi, g in enumerate(m.groups):
            age = theta[G.index(f"age {gi}")]
            value, d_age, rate = m.predict(X, XD, g, age)
            meas = m.log.readings[np.ix_(g.k, g.cols)]
            bias = np.zeros(len(g.cols))
            for i in range(len(G.names)):
                if G.kinds[i] == "bias" and G.group[i] == gi:
                    bias[G.column[i]] = theta[i]
            sig = self.weights(gi, meas.shape)
            sigs.append(sig)
            pred = value[0] + bias
            preds.append(pred)
            rates.append(rate[0])
            r = ((meas - pred) / sig).reshape(-1)
            res.append(r)
            window = g.j // m.M
            win.append(np.repeat(window, len(g.cols)))
            if not jacobian:
                continue
            J = np.zeros((r.size, len(G.names)))
            for c, i in enumerate(sim):
                J[:, i] = ((value[1 + c] - value[0]) / steps[c] / sig).reshape(-1)
            if free[G.index(f"age {gi}")]:
                J[:, G.index(f"age {gi}")] = (d_age[0] / sig).reshape(-1)
            for i in range(len(G.names)):
                if G.kinds[i] == "bias" and G.group[i] == gi and free[i]:
                    col = np.zeros(len(g.cols))
                    col[G.column[i]] = 1.0
                    J[:, i] = (col / sig).reshape(-1)
            jg.append(J)
            # the window's contact point and velocity move a contact reading by 1 and by its time in the window
            Jn = np.zeros((g.k.size, len(g.cols), 4))
            if not g.encoder:
                tau = (g.j - window * m.M + g.L - age / m.dt) * m.dt
                for a in range(2):
                    Jn[:, a, a] = 1.0 / sig[:, a]
                    Jn[:, a, 2 + a] = tau / sig[:, a]
            jn.append(Jn.reshape(-1, 4))
        out = {"r": np.concatenate(res), "window": np.concatenate(win), "rates": rates, "pred": preds, "sig": sigs}
        if jacobian:
            out["Jg"] = np.concatenate(jg)
            out["Jn"] = np.concatenate(jn)
        return out

    def _nuisance_prior(self):
        return np.array([1 / 0.1 ** 2, 1 / 0.1 ** 2, 1.0, 1.0])  # 10 cm, 1 m/s: only for a window without readings

    def normal_equations(self, ev, theta, N, lam, free):
        """Schur complement ``S`` of the nuisance block, the right side, and the per-window factors."""
        G, W = self.G, self.m.W
        Jg, Jn, r, win = ev["Jg"], ev["Jn"], ev["r"], ev["window"]
        P = len(G.names)
        prior = np.where(free, 1.0 / G.prior_std ** 2, 0.0)
        A = Jg.T @ Jg + np.diag(prior)
        b = Jg.T @ r - prior * (theta - G.prior_mean)
        C = np.zeros((W, 4, 4))
        Bw = np.zeros((W, P, 4))
        bn = np.zeros((W, 4))
        np.add.at(C, win, Jn[:, :, None] * Jn[:, None, :])
        np.add.at(Bw, win, Jg[:, :, None] * Jn[:, None, :])
        np.add.at(bn, win, Jn * r[:, None])
        pn = self._nuisance_prior()
        C = C + np.eye(4) * pn
        bn = bn - pn * (N - self.N0)
        Ci = np.linalg.inv(C + lam * C * np.eye(4))
        S = A - np.einsum("wpi,wij,wqj->pq", Bw, Ci, Bw)
        rhs = b - np.einsum("wpi,wij,wj->p", Bw, Ci, bn)
        return A, S, rhs, Ci, Bw, bn

    def cost(self, ev, theta, N, free) -> float:
        rp = np.where(free, (theta - self.G.prior_mean) / self.G.prior_std, 0.0)
        rn = (N - self.N0) * np.sqrt(self._nuisance_prior())
        return float(ev["r"] @ ev["r"] + rp @ rp + np.sum(rn ** 2))

    def run(self, theta, N, free, max_iterations: int):
        """Levenberg-Marquardt from ``(theta, N)`` over the ``free`` globals and every window's nuisance."""
        if self.N0 is None:
            self.N0 = N.copy()
        lam = 1e-3
        ev = self.evaluate(theta, N, free)
        cost = self.cost(ev, theta, N, free)
        idx = np.nonzero(free)[0]
        converged = False
        it = 0
        for it in range(1, max_iterations + 1):
            A, S, rhs, Ci, Bw, bn = self.normal_equations(ev, theta, N, lam, free)
            dg = np.zeros(len(theta))
            if idx.size:
                Sd = S[np.ix_(idx, idx)] + lam * np.diag(np.diag(A)[idx])
                try:
                    dg[idx] = np.linalg.solve(Sd, rhs[idx])
                except np.linalg.LinAlgError:
                    lam *= 8.0
                    continue
            dn = np.einsum("wij,wj->wi", Ci, bn - np.einsum("wpi,p->wi", Bw, dg))
            trial, trial_n = _clip(theta + dg, self.G), N + dn
            ok = np.all(np.isfinite(trial)) and np.all(np.isfinite(trial_n))
            ev2 = self.evaluate(trial, trial_n, free) if ok else None
            cost2 = self.cost(ev2, trial, trial_n, free) if ok else math.inf
            if np.isfinite(cost2) and cost2 < cost:
                done = cost - cost2 < _COST_TOL
                theta, N, ev, cost = trial, trial_n, ev2, cost2
                lam = max(lam / 5.0, 1e-7)
                if done:
                    converged = True
                    break
            else:
                lam *= 8.0
                if lam > 1e4:  # no step lowers the cost: a minimum to the precision of the differences
                    converged = True
                    break
        return theta, N, ev, cost, it, converged

    def covariance(self, ev, theta, N, free, *, robust: bool = False) -> tuple[np.ndarray, float, int]:
        """Covariance of the free globals (NaN elsewhere), the residual variance s^2 and the degrees of freedom.

        ``s^2 S^-1`` (white residuals); with ``robust`` the larger of that and the
        windows' sandwich ``S^-1 (sum_w g_w g_w^T) S^-1 W / (W - P)``, ``g_w`` a
        window's score with its nuisance profiled out (it holds for residuals
        that are correlated within a window or unequal in spread).
        """
        A, S, Ci, Bw, bn = self._profiled(ev, theta, N, free)
        idx = np.nonzero(free)[0]
        n = ev["r"].size
        windows = int(np.count_nonzero(np.bincount(ev["window"], minlength=self.m.W)))
        dof = max(n - idx.size - 4 * windows, 1)
        s2 = float(ev["r"] @ ev["r"]) / dof
        cov = np.full((len(theta), len(theta)), np.nan)
        if not idx.size:
            return cov, s2, dof
        Si = np.linalg.pinv(S[np.ix_(idx, idx)])
        model = s2 * Si
        if robust and windows > idx.size + 1:
            Jg, r, win = ev["Jg"], ev["r"], ev["window"]
            g = np.zeros((self.m.W, len(theta)))
            np.add.at(g, win, Jg * r[:, None])
            g -= np.einsum("wpi,wij,wj->wp", Bw, Ci, bn)
            g = g[:, idx]
            meat = g.T @ g
            for lag in range(1, _HAC_LAGS + 1):  # neighbouring windows share the loop's reaction to the noise
                c = g[:-lag].T @ g[lag:]
                meat += (1.0 - lag / (_HAC_LAGS + 1)) * (c + c.T)
            meat *= windows / (windows - idx.size)
            sandwich = Si @ meat @ Si
            scale = np.sqrt(np.maximum(np.diag(sandwich), 0.0) / np.maximum(np.diag(model), 1e-300))
            factor = np.maximum(scale, 1.0)
            model = model * np.outer(factor, factor)
        cov[np.ix_(idx, idx)] = model
        return cov, s2, dof

    def _profiled(self, ev, theta, N, free):
        """The normal matrix, Schur complement and per-window factors without the priors' shares of the score."""
        A, S, rhs, Ci, Bw, bn = self.normal_equations(ev, theta, N, 0.0, free)
        Jn, r, win = ev["Jn"], ev["r"], ev["window"]
        bn_data = np.zeros_like(bn)
        np.add.at(bn_data, win, Jn * r[:, None])
        return A, S, Ci, Bw, bn_data


def _sim_values(theta: np.ndarray, G: _Globals) -> dict:
    return {nm: float(theta[i]) for i, (nm, k) in enumerate(zip(G.names, G.kinds)) if k == "sim"}


def _clip(theta, G: _Globals):
    """Keep a trial step where the plant and the rig accept it (the rig's ranges of these parameters)."""
    out = theta.copy()
    for i, nm in enumerate(G.names):
        if nm == "rolling_resistance":
            out[i] = float(np.clip(out[i], 0.0, 0.09))
        elif nm == "servo_deadband" or G.kinds[i] == "age":
            out[i] = max(out[i], 0.0)
        elif nm in ("servo_bandwidth", "servo_damping"):
            out[i] = float(np.clip(out[i], 0.1 * G.prior_mean[i], 10.0 * G.prior_mean[i]))
        elif nm.startswith("plate_offset"):
            out[i] = float(np.clip(out[i], -0.19, 0.19))
    return out


def _tolerance(name: str, value: float) -> float:
    kind, v = TOLERANCES[name]
    if kind == "abs":
        return float(v)
    if kind == "rel":
        return float(v * abs(value))
    rel, floor = v
    return float(max(rel * abs(value), floor))


def _public_name(name: str) -> str:
    if name.startswith("age "):
        return "latency"
    if name.startswith("bias "):
        return "bias"
    return name


def _se_for_test(G: _Globals, i: int, se: float, dt: float) -> float:
    """The standard error the excitation test compares with the tolerance (a latency's includes dt/sqrt(12))."""
    return math.sqrt(se ** 2 + dt ** 2 / 12.0) if G.kinds[i] == "age" else se


def _over_tolerance(fitter: _Fit, cov, theta, free, testable, dt) -> dict:
    """``{global index: standard error}`` of the free testable parameters whose standard error exceeds the tolerance."""
    G = fitter.G
    out = {}
    for i in np.nonzero(free & testable)[0]:
        se = _se_for_test(G, i, math.sqrt(max(cov[i, i], 0.0)), dt)
        if not se <= _tolerance(_public_name(G.names[i]), theta[i] if G.kinds[i] != "age" else 0.0):
            out[int(i)] = se
    return out


def _first_to_hold(G: _Globals, over: dict) -> int:
    """Of the parameters over their tolerance, the one to hold first (:data:`HOLD_ORDER`)."""
    def rank(i):
        name = _public_name(G.names[i])
        return HOLD_ORDER.index("plate_offset" if name.startswith("plate_offset") else name), i

    return min(over, key=rank)


def _excitation(fitter: _Fit, ev, theta, N, free, testable, dt) -> tuple[np.ndarray, dict]:
    """Hold, one at a time in :data:`HOLD_ORDER`, the parameters whose standard error exceeds the tolerance.

    Returns the free mask that remains and the standard error each held parameter had when it was held.
    """
    free = free.copy()
    held = {}
    while True:
        cov, _, _ = fitter.covariance(ev, theta, N, free)
        over = _over_tolerance(fitter, cov, theta, free, testable, dt)
        if not over:
            return free, held
        i = _first_to_hold(fitter.G, over)
        held[i] = over[i]
        free[i] = False


def _regress_noise(resid_phys: list, rates: list, scale: float):
    """Weighted least squares of ``r^2 = s_i^2 + s_j^2 v^2``: noise variance per signal, the jitter's, covariance."""
    blocks = [(r[:, a], v[:, a]) for r, v in zip(resid_phys, rates) for a in range(r.shape[1])]
    n_sig = len(blocks)
    y = np.concatenate([b[0] ** 2 * scale for b in blocks])
    X = np.zeros((y.size, n_sig + 1))
    row = 0
    for i, (r, v) in enumerate(blocks):
        X[row:row + r.size, i] = 1.0
        X[row:row + r.size, n_sig] = v ** 2
        row += r.size
    w = np.ones(y.size)
    beta = np.zeros(n_sig + 1)
    for _ in range(3):  # Var(r^2) = 2 E[r^2]^2: reweight by the fitted variance
        Xw = X * w[:, None]
        beta = np.linalg.lstsq(Xw.T @ X, Xw.T @ y, rcond=None)[0]
        beta[n_sig] = max(beta[n_sig], 0.0)
        fitted = np.maximum(X @ beta, 1e-30)
        w = 1.0 / (2.0 * fitted ** 2)
    cov = np.linalg.pinv((X * w[:, None]).T @ X)
    return beta[:n_sig], beta[n_sig], cov


def identify_rig(log: RigLog, base: RigProfile | str = "tabletop", *, window_s: float = DEFAULT_WINDOW_S,
                 fit: tuple | None = None, max_iterations: int = 30, workers: int = 2,
                 progress: Callable[[str], None] | None = None) -> RigIdentification:
    """Identify a rig from its log: the truth plant fitted to the commands and readings (module docstring).

    The fit runs in stages: (1) level offsets, rolling resistance, encoder
    biases and the windows' initial states with the servo and the latencies at
    the base rig's values; (2) the excitation test at that point: the fitted
    parameter whose standard error (all of them free) exceeds its tolerance
    most is held at the base value, until every remaining one is within its
    tolerance; (3) the remaining set is fitted (a parameter that leaves its
    tolerance there is held too and the fit repeated). Standard errors are
    conditional on the held parameters.

    Parameters
    ----------
    log : RigLog
        The rig's log (:func:`ballctl.ball_plate.rig_log.read_rig_log`, or
        :meth:`~ballctl.ball_plate.rig_log.RigLog.from_closed_loop` of a simulated run).
    base : RigProfile or str
        The rig the fit starts from and takes what the log cannot tell from
        (ball, plate inertia, pivot, limits, sensor layout and rates, the
        uncertainty): a :class:`~ballctl.RigProfile` or a preset name. Its
        control period must be the log's.
    window_s : float
        Length in s of the multiple-shooting windows (>= 4 control steps; 0.5 s by default).
    fit : tuple of str, optional
        Which of ``"plate_offset"``, ``"servo_bandwidth"``, ``"servo_damping"``,
        ``"rolling_resistance"``, ``"servo_deadband"``, ``"latency"``,
        ``"bias"`` to fit (default: all); the others stay at the base rig's
        values. Noise, timing jitter and lost frames are always estimated.
    max_iterations : int
        Levenberg-Marquardt iterations per stage (>= 1).
    workers : int
        Threads over which the batched runs are split (the compiled loop releases the GIL).
    progress : callable, optional
        Called with one line of text at the start of each stage (the first call
        comes once every argument has been checked: the fit starts).

    Returns
    -------
    RigIdentification
    """
    start = _time.perf_counter()
    if not isinstance(log, RigLog):
        raise ParameterError(f"log must be a RigLog (ballctl.ball_plate.rig_log.read_rig_log), "
                             f"got {type(log).__name__}")
    if isinstance(base, str):
        base = rig_preset(base)
    if not isinstance(base, RigProfile):
        raise ParameterError(f"base must be a RigProfile or a preset name, got {type(base).__name__}")
    window_s = check_positive(window_s, "window_s", "s")
    max_iterations = check_integer(max_iterations, "max_iterations", minimum=1)
    workers = check_integer(workers, "workers", minimum=1)
    if progress is not None and not callable(progress):
        raise ParameterError(f"progress must be a callable taking a line of text, got {type(progress).__name__}")
    say = progress if progress is not None else (lambda _message: None)
    dt = log.dt
    if abs(dt - base.dt) > 1e-6 * base.dt:
        raise ParameterError(f"the log's control period {dt:.6g} s differs from the base rig {base.name!r}'s dt = "
                             f"{base.dt:g} s; give a base rig with the log's period")
    M = int(round(window_s / dt))
    if M < 4:
        raise ParameterError(f"window_s = {window_s:g} s must span at least 4 control steps of {dt:g} s")
    if (log.n_steps - 1) // M < 3:
        raise ParameterError(f"the log ({log.duration_s:.3g} s) must span at least 3 windows of {M * dt:.3g} s "
                             f"(the first is the plate's burn-in)")
    allowed = ("plate_offset", "servo_bandwidth", "servo_damping", "rolling_resistance", "servo_deadband",
               "latency", "bias")
    chosen = set(allowed if fit is None else fit)
    unknown = sorted(chosen - set(allowed))
    if unknown:
        raise ParameterError(f"fit: unknown parameter(s) {unknown}; choose from {allowed}")
    model = _Model(log, base, M, workers)

    # ------------------------------------------------------------ the global vector
    names, kinds, group, column, mean, std, candidate = [], [], [], [], [], [], []
    imp, servo = base.imperfections, base.servo
    base_sim = {"plate_offset_alpha": imp.plate_offset[0], "plate_offset_beta": imp.plate_offset[1],
                "servo_bandwidth": servo.bandwidth, "servo_damping": servo.damping,
                "rolling_resistance": imp.rolling_resistance, "servo_deadband": imp.servo_deadband,
                "initial_spin": 0.0}

    def add(name, kind, gi, c, m, s, cand):
        names.append(name)
        kinds.append(kind)
        group.append(gi)
        column.append(c)
        mean.append(m)
        std.append(s)
        candidate.append(cand)

    for nm in _SIM:
        s = PRIOR_STD[nm]
        add(nm, "sim", -1, -1, base_sim[nm], s[1] * base_sim[nm] if isinstance(s, tuple) else s,
            nm == "initial_spin" or ("plate_offset" if nm.startswith("plate_offset") else nm) in chosen)
    for gi, g in enumerate(model.groups):
        add(f"age {gi}", "age", gi, -1, g.L * dt, PRIOR_STD["latency"], "latency" in chosen)
        if g.encoder:
            for c in range(len(g.cols)):
                add(f"bias {gi} {c}", "bias", gi, c, g.sensor.bias[c], PRIOR_STD["bias"], "bias" in chosen)
    G = _Globals(names, kinds, group, column, np.array(mean, float), np.array(std, float), np.array(candidate))
    theta = G.prior_mean.copy()
    sigma = [np.maximum(np.asarray(g.sensor.noise_std, float), 1e-6 if not g.encoder else 1e-5)
             for g in model.groups]
    fitter = _Fit(model, G, sigma)
    N = model.initial_nuisance(theta[G.index("age 0")])
    testable = np.array([c and nm != "initial_spin" for c, nm in zip(candidate, names)])
    spin = np.array([nm == "initial_spin" for nm in names])
    iterations = 0
    converged = True

    def stage(theta, N, free):
        nonlocal iterations, converged
        for _ in range(4):  # a sample age decides which window a reading belongs to: remap when it moved
            theta, N, ev, cost, its, conv = fitter.run(theta, N, free, max_iterations)
            iterations += its
            converged = converged and conv
            moved = False
            for gi, g in enumerate(model.groups):
                i = G.index(f"age {gi}")
                shift = int(np.round(theta[i] / dt)) - g.L
                if free[i] and shift != 0:
                    g.L += shift
                    moved = True
            if not moved:
                return theta, N, ev, cost
            model.map_rows()
        return theta, N, ev, cost

    # (1) the well-conditioned part, the servo and the latencies at the base rig's values
    say(f"{model.W} windows of {M * dt:.3g} s; stage 1 of 4: level offsets, rolling resistance and biases")
    first = testable & np.array([k == "bias" or nm.startswith("plate_offset") or nm == "rolling_resistance"
                                 for k, nm in zip(kinds, names)]) | spin
    theta, N, ev, cost = stage(theta, N, first)
    if len(model.groups) > 1:  # the signals' weights relative to each other: their residuals' spread
        fitter.sigma = _residual_sigma(fitter, ev, model)
    # (2) the excitation test at that point, every candidate free
    say("stage 2 of 4: the excitation test (which parameters the log tells)")
    ev = fitter.evaluate(theta, N, testable | spin)
    free, held = _excitation(fitter, ev, theta, N, testable | spin, testable, dt)
    # (3) the excited set (a parameter that leaves its tolerance there is held too, and the set refitted)
    say("stage 3 of 4: the excited parameters")
    for _ in range(len(names)):
        theta, N, ev, cost = stage(theta, N, free)
        cov, s2, dof = fitter.covariance(ev, theta, N, free)
        over = _over_tolerance(fitter, cov, theta, free, testable, dt)
        if not over:
            break
        worst = _first_to_hold(G, over)
        held[worst] = over[worst]
        free[worst] = False
        theta[worst] = G.prior_mean[worst]
        if kinds[worst] == "age":
            model.groups[group[worst]].L = int(round(G.prior_mean[worst] / dt))
            model.map_rows()
    # (4) generalized least squares: each reading weighted by its noise and the timing jitter's share of it
    say("stage 4 of 4: each reading weighted by its noise and the timing jitter")
    cov, s2, dof = fitter.covariance(ev, theta, N, free)
    s_n2, s_j2, cov_n = _regress_noise(_physical_residuals(ev, model), ev["rates"], ev["r"].size / dof)
    col = 0
    sigma_new = []
    for g in model.groups:
        sigma_new.append(np.sqrt(np.maximum(s_n2[col:col + len(g.cols)], 1e-18)))
        col += len(g.cols)
    fitter.sigma, fitter.jitter, fitter.weight_rates = sigma_new, math.sqrt(s_j2), ev["rates"]
    theta, N, ev, cost = stage(theta, N, free)
    if fitter.weight_rates is not ev["rates"] and any(a.shape != b.shape for a, b in
                                                      zip(fitter.weight_rates, ev["rates"])):
        fitter.weight_rates = ev["rates"]  # a sample age moved the readings' windows: weights of the new rows
        theta, N, ev, cost = stage(theta, N, free)
    cov, s2, dof = fitter.covariance(ev, theta, N, free, robust=True)
    se = np.sqrt(np.clip(np.diag(np.nan_to_num(cov, nan=0.0)), 0.0, None))
    s_n2, s_j2, cov_n = _regress_noise(_physical_residuals(ev, model), ev["rates"], ev["r"].size / dof)

    # ------------------------------------------------------------ the parameters
    params = []

    def param(name, key, unit, value, err, base_value, fitted=True, excited=None):
        tol = _tolerance(name, value if np.isfinite(value) else base_value)
        if excited is None:
            excited = bool(fitted and np.isfinite(err) and err <= tol)
        params.append(IdentifiedParameter(name, key, unit, float(value), float(err), float(base_value),
                                          bool(excited), tol, fitted))

    def state(i):
        """(fitted, excited, standard error) of global i."""
        if not candidate[i]:
            return False, False, math.inf
        if i in held:
            return True, False, held[i]
        return True, True, se[i]

    for nm in _SIM[:-1]:
        i = G.index(nm)
        fitted, excited, err = state(i)
        param(nm, nm, PARAMETERS[nm][0], theta[i], err, base_sim[nm], fitted, excited)
    for gi, g in enumerate(model.groups):
        i = G.index(f"age {gi}")
        fitted, excited, err = state(i)
        age = theta[i]
        latency = max(0.0, age - 0.5 * dt) if age > 0.25 * dt else 0.0
        if excited:
            err = _se_for_test(G, i, se[i], dt) if latency > 0 else se[i]
            value = latency
        else:
            value = g.sensor.latency_s
        param("latency", f"latency {g.sensor.name}", "s", value, err, g.sensor.latency_s, fitted, excited)
        for c in range(len(g.cols)) if g.encoder else ():
            i = G.index(f"bias {gi} {c}")
            fitted, excited, err = state(i)
            param("bias", f"bias {g.sensor.signals[c]}", "rad", theta[i], err, g.sensor.bias[c], fitted, excited)
    col = 0
    for gi, g in enumerate(model.groups):
        for c in range(len(g.cols)):
            var, var_se = s_n2[col], math.sqrt(max(cov_n[col, col], 0.0))
            sd = math.sqrt(max(var, 0.0))
            param("noise", f"noise {g.sensor.signals[c]}", "m" if not g.encoder else "rad", sd,
                  var_se / (2 * sd) if sd > 0 else math.inf, g.sensor.noise_std[c])
            col += 1
    jit_se = math.sqrt(max(cov_n[-1, -1], 0.0))
    jit = math.sqrt(s_j2)
    # near zero the std's error is that of its square's root
    param("timing_jitter", "timing_jitter", "s", jit, jit_se / (2 * jit) if jit > math.sqrt(jit_se) else
          math.sqrt(jit_se), base.imperfections.timing_jitter_s)
    drop, drop_se = _frame_drop(model)
    param("frame_drop", "frame_drop", "", drop, drop_se, base.imperfections.frame_drop)
    params = tuple(params)
    rig = _identified_rig(base, params, model)
    R_t, meas, pred = _traces(model, ev)
    idx = np.nonzero(free)[0]
    cov_free = cov[np.ix_(idx, idx)]
    sd = np.sqrt(np.clip(np.diag(cov_free), 1e-300, None))
    corr = cov_free / np.outer(sd, sd)
    spin_i = G.index("initial_spin")
    return RigIdentification(params, rig, base, log, R_t, meas, pred, M * dt, model.W, iterations, converged,
                             float(cost), corr, tuple(_label(names[i], model) for i in idx),
                             (float(theta[spin_i]), float(se[spin_i])), _time.perf_counter() - start)


def _residual_sigma(fitter: _Fit, ev, model: _Model) -> list:
    """Each signal's residual RMS (its noise, the weight of its readings), per sensor group."""
    return [np.maximum(np.sqrt(np.mean(r ** 2, axis=0)), 1e-9) for r in _physical_residuals(ev, model)]


def _physical_residuals(ev, model: _Model) -> list:
    """The residuals in m or rad, per sensor group, shape (R, c)."""
    return [ev["r"][_slice(model, gi)].reshape(-1, len(g.cols)) * ev["sig"][gi] for gi, g in enumerate(model.groups)]


def _label(name: str, model: _Model) -> str:
    if name.startswith("age "):
        return f"latency {model.groups[int(name.split()[1])].sensor.name}"
    if name.startswith("bias "):
        _, gi, c = name.split()
        return f"bias {model.groups[int(gi)].sensor.signals[int(c)]}"
    return name


def _slice(model: _Model, gi: int) -> slice:
    start = sum(g.k.size * len(g.cols) for g in model.groups[:gi])
    g = model.groups[gi]
    return slice(start, start + g.k.size * len(g.cols))


def _traces(model: _Model, ev):
    K, ny = model.K, len(model.log.signal_names)
    meas = np.full((K, ny), np.nan)
    pred = np.full((K, ny), np.nan)
    for gi, g in enumerate(model.groups):
        meas[np.ix_(g.k, g.cols)] = model.log.readings[np.ix_(g.k, g.cols)]
        pred[np.ix_(g.k, g.cols)] = ev["pred"][gi]
    used = np.any(np.isfinite(pred), axis=1)
    return model.log.t[used], meas[used], pred[used]


def _frame_drop(model: _Model) -> tuple[float, float]:
    """Lost fraction of the expected readings (each sensor at its period, between its first and last reading)."""
    expected = lost = 0
    for g in model.groups:
        y = model.log.readings[:, g.cols[0]]
        have = np.nonzero(np.isfinite(y))[0]
        if have.size < 2:
            continue
        period = g.sensor.period_steps(model.dt)
        rows = np.arange(have[0], have[-1] + 1, period)
        expected += rows.size
        lost += int(np.sum(~np.isfinite(y[rows])))
    if expected == 0:
        return 0.0, math.inf
    p = lost / expected
    return p, math.sqrt(max(p * (1 - p), 1.0 / expected) / expected)


def rig_parameter_values(rig: RigProfile) -> dict[str, float]:
    """A rig's values of the identified parameters, by the keys of :attr:`IdentifiedParameter.key`.

    The inverse of what :func:`identify_rig` writes into its rig: ``plate_offset_alpha``/``_beta`` (rad),
    ``servo_bandwidth`` (rad/s), ``servo_damping``, ``rolling_resistance``, ``servo_deadband`` (rad),
    ``timing_jitter`` (s), ``frame_drop``, ``latency <sensor>`` (s), ``noise <signal>`` (m or rad) and, for
    plate angles, ``bias <signal>`` (rad). For comparing an identification with the rig that made the log.

    Parameters
    ----------
    rig : RigProfile

    Returns
    -------
    dict of str to float
    """
    imp, servo = rig.imperfections, rig.servo
    values = {"plate_offset_alpha": imp.plate_offset[0], "plate_offset_beta": imp.plate_offset[1],
              "servo_bandwidth": servo.bandwidth, "servo_damping": servo.damping,
              "rolling_resistance": imp.rolling_resistance, "servo_deadband": imp.servo_deadband,
              "timing_jitter": imp.timing_jitter_s, "frame_drop": imp.frame_drop}
    for s in rig.sensors:
        values[f"latency {s.name}"] = s.latency_s
        for sig, noise, bias in zip(s.signals, s.noise_std, s.bias):
            values[f"noise {sig}"] = noise
            if sig in ("alpha", "beta"):
                values[f"bias {sig}"] = bias
    return values


def _identified_rig(base: RigProfile, params, model: _Model) -> RigProfile:
    v = {p.key: p.rig_value for p in params}
    servo = replace(base.servo, bandwidth=v["servo_bandwidth"], damping=v["servo_damping"])
    imp = replace(base.imperfections, plate_offset=(v["plate_offset_alpha"], v["plate_offset_beta"]),
                  rolling_resistance=v["rolling_resistance"], servo_deadband=v["servo_deadband"],
                  timing_jitter_s=min(v["timing_jitter"], 0.5 * base.dt), frame_drop=min(v["frame_drop"], 0.5))
    sensors = []
    for s in base.sensors:
        if f"latency {s.name}" not in v:
            sensors.append(s)
            continue
        noise = tuple(v[f"noise {sig}"] for sig in s.signals)
        bias = tuple(v.get(f"bias {sig}", b) for sig, b in zip(s.signals, s.bias))
        sensors.append(replace(s, latency_s=v[f"latency {s.name}"], noise_std=noise, bias=bias))
    return replace(base, name=f"{base.name} (identified)",
                   description=f"identified from {model.log.source} on base {base.name!r}", servo=servo,
                   imperfections=imp, sensors=tuple(sensors))


# ======================================================================= files
def _toml_value(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    return repr(float(v))


def rig_to_toml(rig: RigProfile, *, comments=()) -> str:
    """A rig as TOML text that :meth:`ballctl.RigProfile.from_toml` (and ``ballctl track --rig``) reads back.

    Every key of the file layout is written (degrees only in keys ending
    ``_deg``), so the file does not depend on a preset: reading it gives
    the same rig (limits or servo limits that are None are left out and
    then take the ``base`` preset's value; a ball with its own inertia
    cannot be written).

    Parameters
    ----------
    rig : RigProfile
        The rig to write.
    comments : sequence of str
        Lines written as ``#`` comments at the top.

    Returns
    -------
    str
    """
    from .rig import PRESETS

    if rig.ball.inertia is not None:
        raise ParameterError("rig_to_toml: a rig file gives the ball's mass and radius (a solid ball); this rig's "
                             "ball has its own inertia")
    deg = 180.0 / np.pi
    base = rig.name.split(" ")[0] if rig.name.split(" ")[0] in PRESETS else "tabletop"
    lines = [f"# {c}" for c in comments]
    lines += [f"name = {_toml_value(rig.name)}", f"description = {_toml_value(rig.description)}",
              f"base = {_toml_value(base)}", f"dt_s = {rig.dt!r}", f"pivot_depth_m = {float(rig.pivot_depth)!r}",
              f"friction_coefficient = {float(rig.friction_coefficient)!r}", "",
              "[ball]", f"mass_kg = {float(rig.ball.mass)!r}", f"radius_m = {float(rig.ball.radius)!r}", "",
              "[servo]", f"bandwidth_rad_s = {float(rig.servo.bandwidth)!r}", f"damping = {float(rig.servo.damping)!r}",
              f"plate_inertia_kg_m2 = {_toml_value(rig.servo.plate_inertia)}"]
    if rig.servo.max_torque is not None:
        lines.append(f"max_torque_N_m = {float(rig.servo.max_torque)!r}")
    if rig.servo.max_rate is not None:
        lines.append(f"max_rate_deg_s = {float(rig.servo.max_rate) * deg!r}")
    lim = rig.limits
    lines += ["", "[limits]"]
    for key, v in (("max_tilt_deg", lim.max_angle), ("max_rate_deg_s", lim.max_rate), ("quantum_deg", lim.quantum)):
        if v is not None:
            lines.append(f"{key} = {float(v) * deg!r}")
    lines.append(f"delay_s = {float(lim.delay)!r}")
    for s in rig.sensors:
        lines += ["", "[[sensor]]", f"name = {_toml_value(s.name)}", f"signals = {_toml_value(list(s.signals))}",
                  f"rate_hz = {1.0 / s.period_s!r}", f"latency_s = {float(s.latency_s)!r}",
                  f"noise_std = {_toml_value(s.noise_std)}", f"bias = {_toml_value(s.bias)}"]
    imp = rig.imperfections
    lines += ["", "[imperfections]", f"plate_offset_deg = {_toml_value([v * deg for v in imp.plate_offset])}",
              f"rolling_resistance = {imp.rolling_resistance!r}", f"frame_drop = {imp.frame_drop!r}",
              f"servo_deadband_deg = {imp.servo_deadband * deg!r}", f"timing_jitter_s = {imp.timing_jitter_s!r}"]
    u = rig.uncertainty
    lines += ["", "[uncertainty]", f"mass_rel = {u.mass_rel!r}", f"radius_rel = {u.radius_rel!r}",
              f"servo_bandwidth_rel = {u.servo_bandwidth_rel!r}", f"latency_s = {u.latency_s!r}",
              f"plate_offset_deg = {u.plate_offset * deg!r}", f"noise_rel = {u.noise_rel!r}",
              f"initial_offset_m = {u.initial_offset_m!r}"]
    if u.rolling_resistance is not None:
        lines.append(f"rolling_resistance = {_toml_value(u.rolling_resistance)}")
    if u.frame_drop is not None:
        lines.append(f"frame_drop = {u.frame_drop!r}")
    return "\n".join(lines) + "\n"


def plot_identification(result: RigIdentification, *, max_seconds: float | None = 20.0):
    """Measured against predicted readings and the residuals (matplotlib ``Figure``).

    One row per sensor: the readings (dots) and the fitted model's
    multiple-shooting prediction (lines, re-initialized every window), and
    the residuals under them.

    Parameters
    ----------
    result : RigIdentification
    max_seconds : float or None
        Show the first ``max_seconds`` of the log only (None: all of it).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    names = result.log.signal_names
    pairs = [(0, 1)] + ([(2, 3)] if len(names) == 4 else [])
    fig = Figure(figsize=(10, 3.2 * 2 * len(pairs)), layout="constrained")
    axes = fig.subplots(2 * len(pairs), 1, sharex=True, squeeze=False)[:, 0]
    t = result.t
    show = np.ones(t.size, dtype=bool) if max_seconds is None else t <= t[0] + max_seconds
    for p, (a, b) in enumerate(pairs):
        scale, unit = (1e3, "mm") if p == 0 else (180 / np.pi, "deg")
        ax, axr = axes[2 * p], axes[2 * p + 1]
        for c, color in ((a, "tab:blue"), (b, "tab:orange")):
            ax.plot(t[show], scale * result.measured[show, c], ".", ms=2.5, color=color, alpha=0.5,
                    label=f"{names[c]} measured")
            ax.plot(t[show], scale * result.predicted[show, c], "-", lw=1.0, color=color,
                    label=f"{names[c]} predicted")
            axr.plot(t[show], scale * result.residuals[show, c], ".", ms=2.5, color=color, label=names[c])
        ax.set_ylabel(f"reading [{unit}]")
        ax.legend(loc="upper right", fontsize=8, ncol=2)
        axr.axhline(0.0, color="k", lw=0.5)
        axr.set_ylabel(f"residual [{unit}]")
        axr.legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("time at which the reading arrived [s]")
    axes[0].set_title(f"identification of {result.log.source!r} on base {result.base.name!r}: measured vs predicted "
                      f"(windows of {result.window_s:g} s)")
    return fig


#: the files of the report folder (:func:`write_identification`); an earlier folder of only these may be replaced
REPORT_FILES = ("summary.md", "summary.json", "identification.png")


def identification_outputs(toml_path, report_dir=None, *, names=("toml_path", "report_dir")) -> tuple[Path, Path]:
    """The rig TOML and the report folder :func:`write_identification` writes, checked before any work.

    The report gets a folder of its own, replaced whole at the end
    (:func:`ballctl._io.atomic_directory`): by default the TOML's name without
    ``.toml`` plus ``_report``, next to it (``rigs/mine.toml`` ->
    ``rigs/mine_report/``).

    Parameters
    ----------
    toml_path : str or path-like
        The rig file: a ``.toml`` name, not a directory, no ancestor a file (a missing folder is created).
    report_dir : str or path-like, optional
        The report folder: new, empty, or an earlier report (see :func:`ballctl._io.check_output_folder`);
        not the current folder or one of its ancestors, and not a folder that holds ``toml_path``.
    names : (str, str)
        The parameters (or command-line flags) that named them, for messages.

    Returns
    -------
    toml_path : pathlib.Path
    report_dir : pathlib.Path
        As given (or derived), not made absolute.

    Raises
    ------
    FileArgumentError
        A path that cannot be used as asked.
    ParameterError
        ``toml_path`` does not end in ``.toml``.
    """
    import os

    from .._errors import FileArgumentError
    from .._io import check_output_folder
    from .._paths import check_output_dir, check_output_path

    toml_flag, report_flag = names
    toml = check_output_path(toml_path, toml_flag, create_parents=True)
    if toml.suffix != ".toml":
        raise ParameterError(f"{toml_flag} must name a .toml file (the identified rig), got {str(toml_path)!r}")
    report = (toml.with_name(toml.stem + "_report") if report_dir is None
              else check_output_dir(report_dir, report_flag))
    where = check_output_folder(report, report_flag, own_names=REPORT_FILES)
    if Path(os.path.abspath(toml)).is_relative_to(where):
        raise FileArgumentError(f"{report_flag} {str(report)!r} holds {toml_flag} {str(toml)!r}: the report folder "
                                f"is replaced whole; give it a folder of its own (default "
                                f"{str(toml.with_name(toml.stem + '_report'))!r})")
    return toml, report


def write_identification(result: RigIdentification, toml_path, report_dir=None) -> list:
    """Write the identified rig TOML and the report (``summary.md``, ``summary.json``, ``identification.png``).

    Every output appears whole or not at all, also when the process is
    killed: the report is built in a hidden sibling folder and moved into
    place complete (:func:`ballctl._io.atomic_directory`, replacing an earlier
    report whole), then the TOML is written to a temporary file in its folder
    and moved over ``toml_path`` (:func:`ballctl._io.atomic_write_text`). The
    TOML therefore never appears without its report; a run stopped between
    the two leaves the new report next to the earlier TOML (or none), and
    ``summary.json``'s ``rig_toml`` (the TOML's name and SHA-256) tells which
    TOML a report describes.

    Parameters
    ----------
    result : RigIdentification
    toml_path : str or path-like
        The rig file (its folder is created).
    report_dir : str or path-like, optional
        Folder of the report (default: next to the rig file, named after it:
        ``rig.toml`` -> ``rig_report/``); see :func:`identification_outputs`.

    Returns
    -------
    list of pathlib.Path
        The files written: the TOML, then the report's.
    """
    import hashlib
    import json

    from .._io import atomic_directory, atomic_write_text, strict_json
    from ..figures.plotting import save_figure

    toml_path, report = identification_outputs(toml_path, report_dir)
    not_excited = ", ".join(result.not_excited) or "none"
    comments = (f"identified by ballctl identify from {result.log.source} on base {result.base.name!r}",
                f"not excited by the log (base values kept): {not_excited}",
                f"report: {report.name}/ ({', '.join(REPORT_FILES)})")
    toml_text = rig_to_toml(result.rig, comments=comments)
    summary = dict(result.as_dict(), rig_toml={"file": toml_path.name,
                                               "sha256": hashlib.sha256(toml_text.encode("utf-8")).hexdigest()})
    text = result.report() + f"\nFiles: {toml_path.name} (the identified rig for `ballctl track --rig`, next to " \
                             f"this folder), summary.json, identification.png.\n"
    with atomic_directory(report, flag="report_dir", own_names=REPORT_FILES) as tmp:
        atomic_write_text(tmp / "summary.md", text)
        atomic_write_text(tmp / "summary.json", json.dumps(strict_json(summary), indent=2, allow_nan=False))
        save_figure(plot_identification(result), tmp / "identification.png")
    toml_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(toml_path, toml_text)
    return [toml_path] + [report / name for name in REPORT_FILES]


# ======================================================================= excitation
def excitation_log(base: RigProfile | str = "tabletop", *, duration_s: float = 60.0, amplitude_deg: float = 1.0,
                   radius_m: float = 0.3, omega: float = 1.0, seed: int = 0) -> RigLog:
    r"""A closed-loop run with a dither for identification, as a rig log (commands, dither and expected readings).

    The base rig's exact design (plain LQG) tracks a circle while a
    multisine dither is added to its feedforward: on each axis 12 sines with
    frequencies log-spaced over 0.3-4 Hz (below a quarter of the control
    rate), random phases (``seed``), different on the two axes, scaled to an
    RMS of ``amplitude_deg``. The dither moves the plate (and the ball, whose
    response falls as :math:`1/\omega^2`) over the band where the servo's lag,
    the sample age, the level offsets and the rolling resistance leave
    different marks; the closed loop keeps the ball on the plate.

    Parameters
    ----------
    base : RigProfile or str
        The rig to excite (its nominal truth runs the simulation, with its imperfections).
    duration_s : float
        Length in s (>= 1; 60 by default).
    amplitude_deg : float
        RMS of the dither per axis in deg (0 < . <= 3; 1 by default: on the tabletop rig 2 deg drive the
        ball off the circle).
    radius_m : float
        Circle radius in m.
    omega : float
        Angular rate on the circle in rad/s.
    seed : int
        Seed of the dither's phases and of the simulated sensor noise.

    Returns
    -------
    RigLog
        With :attr:`~ballctl.ball_plate.rig_log.RigLog.dither`; its commands are the
        sequence to play (the dither columns are the part to add to a
        firmware's own control output), its readings what the base rig would
        log.
    """
    from ..simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop
    from ..references.moving_plate import exact_circular_motion
    from ..references.paths import LissajousPath
    from ..ball_plate.design import design_for_rig

    if isinstance(base, str):
        base = rig_preset(base)
    if not isinstance(base, RigProfile):
        raise ParameterError(f"base must be a RigProfile or a preset name, got {type(base).__name__}")
    duration_s = check_positive(duration_s, "duration_s", "s")
    if duration_s < 1.0:
        raise ParameterError(f"duration_s must be >= 1 s, got {duration_s!r}")
    amplitude_deg = check_positive(amplitude_deg, "amplitude_deg", "deg")
    if amplitude_deg > 3.0:
        raise ParameterError(f"amplitude_deg must be <= 3 deg (the dither rides on the tracking), got "
                             f"{amplitude_deg!r}")
    radius_m = check_positive(radius_m, "radius_m", "m")
    seed = check_integer(seed, "seed", minimum=0)
    dt = base.dt
    steps = int(round(duration_s / dt))
    horizon = steps * dt
    ref = exact_circular_motion(base.design_plant(), LissajousPath.circle(radius_m, omega), 40.0,
                                duration=horizon + 2 * dt)
    # the plain LQG: the offset-free design's disturbance states would take the dither for a level error
    ctrl = design_for_rig(base, ref, "exact", horizon=horizon, offset_free=False)
    rng = np.random.default_rng(seed)
    t = ctrl.samples.t
    f_max = min(4.0, 0.25 / dt)
    freqs = np.geomspace(0.3, f_max, 12)
    dither = np.zeros((t.size, 2))
    for axis in range(2):
        phases = rng.uniform(0.0, 2 * np.pi, freqs.size)
        f = freqs * (1.0 + 0.03 * axis)  # the axes' lines interleave: their responses stay apart
        dither[:, axis] = np.sum(np.sin(2 * np.pi * f[None] * (t - t[0])[:, None] + phases[None]), axis=1)
    ramp = np.clip((t - t[0]) / 1.0, 0.0, 1.0)  # fade in over 1 s: the loop settles first
    dither *= ramp[:, None] * np.deg2rad(amplitude_deg) / np.sqrt(np.mean(dither ** 2, axis=0))
    excited = replace(ctrl, samples=replace(ctrl.samples, u=ctrl.samples.u + dither))
    s = ref(0.0)
    x0, xd0 = s.x.copy(), s.xd.copy()
    run = simulate_closed_loop(excited, base.truth_initial_state(x0), xd0, truth=base.truth_plant(), seed=seed,
                               options=ClosedLoopOptions(method="rk4", imperfections=base.imperfections.loop,
                                                         limits=base.limits,
                                                         substeps=max(2, int(np.ceil(dt / 0.01 - 1e-9))),
                                                         divergence_error=max(0.2, 2 * radius_m)))
    if run.diverged_at_s is not None:
        raise ParameterError(f"the excitation of {amplitude_deg:g} deg drives the ball off the circle at "
                             f"t = {run.diverged_at_s:.3g} s on rig {base.name!r}; lower amplitude_deg")
    log = RigLog.from_closed_loop(run, base, ctrl, source=f"excitation for rig {base.name!r}")
    K = log.n_steps
    return replace(log, dither=dither[:K], comments=log.comments + (
        f"excitation: circle {radius_m:g} m at {omega:g} rad/s, multisine dither {amplitude_deg:g} deg RMS per axis "
        f"over {freqs[0]:.2g}-{freqs[-1]:.2g} Hz, seed {seed}",
        "play alpha_cmd_rad/beta_cmd_rad, or add alpha_dither_rad/beta_dither_rad to your controller's output; "
        "readings: what the base rig would log"))
