"""Fuzz ballctl's public API and CLI with a catalogue of bad inputs, each in its own process.

Every case runs in a fresh interpreter with a timeout and is classified:

* ``clear``   -- a :class:`ballctl.BallctlError` (or a :class:`ballctl.BallctlWarning` for inputs
  that are legal but risky) whose message names the expected parameter; for the CLI: exit status
  2 and exactly one line on stderr without a traceback;
* ``builtin`` -- a plain ``ValueError``/``TypeError`` that names the parameter (clear to a reader,
  but it escapes ``except BallctlError``);
* ``unclear`` -- any other exception (``IndexError``, ``LinAlgError``, reshape errors...), an
  error that does not name the parameter, or a CLI traceback / multi-line error;
* ``silent``  -- the call returned normally (the bad input was accepted);
* ``hang``    -- the timeout expired.

Usage::

    python benchmarks/fuzz_bad_inputs.py                  # this checkout
    python benchmarks/fuzz_bad_inputs.py --tree /path/to/other/checkout --json out.json
    python benchmarks/fuzz_bad_inputs.py --only simulate  # cases whose id contains "simulate"

Cases needing an API that a tree lacks are classified by what happens (usually ``unclear``:
a ``TypeError`` for an unknown keyword).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Case", "CASES", "run_case", "main"]

ROOT = Path(__file__).resolve().parents[1]

# Fixtures are built lazily and cached, so a case pays only for what it uses.
PRELUDE = r'''
import functools, math, warnings
import numpy as np
import ballctl
from ballctl import *
from ballctl.errors import *  # noqa: F403  (the names the fuzzer calls live in their subpackages)
from ballctl.plants import *  # noqa: F403
from ballctl.linear import *  # noqa: F403
from ballctl.design import *  # noqa: F403
from ballctl.simulation import *  # noqa: F403
from ballctl.studies import *  # noqa: F403
from ballctl.ball_plate import *  # noqa: F403
from ballctl.plants.rails import CircleRail, SegmentRail, CallableRail
from ballctl.plants.paper import (paper_ball_initial_state, paper_ball_parameters, paper_disk_initial_state,
                                  paper_disk_parameters)
from ballctl.simulate import rk4
from ballctl.linear.discretize import zoh_matrices

NAN, INF = float("nan"), float("inf")
cache = functools.lru_cache(maxsize=None)

@cache
def plant(): return BallPlate()
@cache
def ref(): return CircularMotion(plant(), 0.5, 1.0, 40.0)
@cache
def s0(): return ref()(0.0)
@cache
def part(): return Partition.from_coordinates(plant(), ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
@cache
def ltv(): return linearize(plant(), ref(), np.linspace(0.0, 1.0, 51), part())
@cache
def dltv(): return discretize(ltv(), 0.02)
MSE = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1, yaw_rate=5.0)
MIE = dict(alpha=0.05, beta=0.05)
_WEIGHT_FIELDS = ("states", "Q", "R", "Q_N", "max_state_errors", "max_input_errors", "terminal_factor", "terminal")
_DESIGN_OPTIONS = ("t0", "feedforward", "method", "substeps")
def design(**kw):
    """The fuzzed design: a keyword goes to LQRWeights, TrackingOptions or the call, by its name."""
    w = dict(states=part().state_names[:6], max_state_errors=MSE, max_input_errors=MIE)
    w.update({k: kw.pop(k) for k in list(kw) if k in _WEIGHT_FIELDS})
    o = {k: kw.pop(k) for k in list(kw) if k in _DESIGN_OPTIONS}
    args = dict(dt=0.02, horizon=1.0, weights=LQRWeights(**w), options=TrackingOptions(**o) if o else None)
    args.update(kw)
    return design_tracking_lqr(plant(), ref(), part(), **args)
_RUN_KEYWORDS = ("duration", "seed", "truth")
def closed_loop(controller, x0, xd0, **kw):
    """The fuzzed closed loop: a keyword goes to simulate_closed_loop or to ClosedLoopOptions, by its name."""
    run = {k: kw.pop(k) for k in list(kw) if k in _RUN_KEYWORDS}
    if "integrator" in kw:
        kw["method"] = kw.pop("integrator")
    return simulate_closed_loop(controller, x0, xd0, options=ClosedLoopOptions(**kw), **run)
@cache
def ctrl(): return design()
@cache
def ball(): return RollingBall(paper_ball_parameters())
@cache
def disk(): return RollingDisk(paper_disk_parameters())
def x0_offset():
    x = s0().x.copy(); x[0] += 0.05; return x
N6 = 6
'''

WRAPPER = r'''
import sys, traceback, warnings
warnings.simplefilter("always")
_expect = {expect!r}
with warnings.catch_warnings(record=True) as _w:
    warnings.simplefilter("always")
    try:
{body}
    except ballctl.BallctlError as _e:
        _msg = str(_e)
        _named = all(n.lower() in _msg.lower() for n in _expect)
        print("@@RESULT", "clear" if _named else "unclear", type(_e).__name__, _msg.replace("\n", " | ")[:300])
    except (ValueError, TypeError) as _e:
        _msg = str(_e)
        _named = bool(_expect) and all(n.lower() in _msg.lower() for n in _expect)
        print("@@RESULT", "builtin" if _named else "unclear", type(_e).__name__, _msg.replace("\n", " | ")[:300])
    except Exception as _e:
        print("@@RESULT", "unclear", type(_e).__name__, str(_e).replace("\n", " | ")[:300])
    else:
        _bw = [w for w in _w if issubclass(w.category, ballctl.BallctlWarning)]
        if _bw:
            print("@@RESULT", "clear", _bw[0].category.__name__, str(_bw[0].message)[:300])
        else:
            print("@@RESULT", "silent", "-", "returned normally")
'''


@dataclass(frozen=True)
class Case:
    """One bad input: Python code (or CLI arguments) and the names a clear message must contain."""

    id: str
    code: str = ""
    cli: tuple[str, ...] | None = None
    expect: tuple[str, ...] = ()


def _api(id: str, code: str, *expect: str) -> Case:
    return Case(id=id, code=code, expect=tuple(expect))


def _cli(id: str, *argv: str) -> Case:
    return Case(id=id, cli=tuple(argv))


def _catalogue() -> list[Case]:
    c: list[Case] = []
    bad_scalars = {"nan": "NAN", "inf": "INF", "neg": "-1.0", "zero": "0.0", "str": "'abc'", "none": "None",
                   "list": "[1.0, 2.0]", "complex": "1j", "bool": "True", "huge": "1e308"}
    # --- parameters of plants (positive physical scalars)
    for field in ("mass", "radius", "inertia", "gravity"):
        for tag, v in bad_scalars.items():
            if tag in ("none",) and field == "inertia":
                continue  # None is the documented default
            if tag == "huge" and field in ("gravity", "inertia"):
                continue  # a huge but finite g or I is physically odd, not invalid
            c.append(_api(f"BallPlateParameters.{field}={tag}", f"BallPlateParameters({field}={v})", field))
    c.append(_api("BallPlateParameters.overflow", "BallPlateParameters(mass=1e300, radius=1e200)", "overflow"))
    c.append(_api("BallPlate.params=dict", "BallPlate({'mass': 0.1})", "params"))
    c.append(_api("BallPlate.params=str", "BallPlate('heavy')", "params"))
    c.append(_api("BallPlate.both", "BallPlate(BallPlateParameters(), mass=0.2)", "params"))
    for tag, v in (("nan", "NAN"), ("neg", "-0.1"), ("one", "1.0"), ("str", "'x'")):
        c.append(_api(f"MovingPlateParameters.pivot_depth={tag}", f"MovingPlateParameters(pivot_depth={v})",
                      "pivot_depth"))
    c.append(_api("MovingPlateParameters.with_spin=str", "MovingPlateParameters(with_spin='yes')", "with_spin"))
    c.append(_api("MovingPlateParameters.ball=dict", "MovingPlateParameters(ball={})", "ball"))
    for field in ("bandwidth", "damping"):
        for tag, v in (("nan", "NAN"), ("neg", "-1.0"), ("zero", "0.0"), ("str", "'x'")):
            c.append(_api(f"ServoParameters.{field}={tag}", f"ServoParameters({field}={v})", field))
    c.append(_api("ServoParameters.plate_inertia=short", "ServoParameters(plate_inertia=(0.1, 0.1))", "plate_inertia"))
    c.append(_api("ServoParameters.plate_inertia=neg", "ServoParameters(plate_inertia=(0.1, -0.1, 0.2))",
                  "plate_inertia"))
    c.append(_api("ServoPlateBallPlate.servo=dict", "ServoPlateBallPlate(servo={})", "servo"))
    c.append(_api("MovingPlateBallPlate.params=str", "MovingPlateBallPlate('x')", "params"))
    # --- rolling ball / disk parameters and rails
    for field, v in (("mass_kg", "NAN"), ("mass_kg", "-1"), ("radius_m", "0"), ("radius_m", "'r'"),
                     ("gravity_mps2", "INF")):
        c.append(_api(f"RollingBallParameters.{field}={v}",
                      f"RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.3, 0.4, 0.6], "
                      f"**{{'{field}': {v}}})", field))
    for tag, v in (("triangle", "[0.1, 0.1, 0.5]"), ("neg", "[0.1, -0.1, 0.1]"), ("short", "[0.1, 0.1]"),
                   ("nan", "[0.1, NAN, 0.1]"), ("str", "'abc'")):
        c.append(_api(f"RollingBallParameters.inertia={tag}",
                      f"RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2={v})",
                      "principal_inertia_kgm2"))
    c.append(_api("RollingBallParameters.cm_outside",
                  "RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.3, 0.4, 0.6], "
                  "cm_offset_m=[0, 0, 2.0])", "cm_offset_m"))
    c.append(_api("RollingBallParameters.point_masses=floats",
                  "RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.3, 0.4, 0.6], "
                  "point_masses=(1.0,))", "point_masses"))
    c.append(_api("RollingBallParameters.rail_outside",
                  "RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.3, 0.4, 0.6], "
                  "point_masses=(PointMass(mass_kg=0.1, rail=CircleRail(radius_m=2.0)),))", "rail"))
    c.append(_api("RollingBallParameters.external_force=str",
                  "RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.3, 0.4, 0.6], "
                  "external_force='wind')", "external_force"))
    c.append(_api("RollingBall.parameters=dict", "RollingBall({'mass_kg': 1.0})", "parameters"))
    c.append(_api("RollingBall.inputs=bad", "RollingBall(paper_ball_parameters(), inputs='torque')", "inputs"))
    c.append(_api("RollingDisk.parameters=None", "RollingDisk(None)", "parameters"))
    c.append(_api("RollingDiskParameters.inertia=neg",
                  "RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=-1.0)", "inertia_kgm2"))
    c.append(_api("PointMass.mass=nan", "PointMass(mass_kg=NAN, rail=CircleRail(radius_m=0.5))", "mass_kg"))
    c.append(_api("PointMass.rail=str", "PointMass(mass_kg=0.1, rail='circle')", "rail"))
    c.append(_api("CircleRail.radius=neg", "CircleRail(radius_m=-0.5)", "radius_m"))
    c.append(_api("CircleRail.radius=nan", "CircleRail(radius_m=NAN)", "radius_m"))
    c.append(_api("CircleRail.rotation=bad", "CircleRail(radius_m=0.5, rotation=2*np.eye(3))", "rotation"))
    c.append(_api("CircleRail.center=short", "CircleRail(radius_m=0.5, center_m=[0, 0])", "center_m"))
    c.append(_api("EllipseRail.axis=zero", "EllipseRail(semi_axis_first_m=0.0, semi_axis_third_m=0.1)",
                  "semi_axis_first_m"))
    c.append(_api("FigureEightRail.width=nan", "FigureEightRail(half_width_m=NAN, half_height_m=0.1)",
                  "half_width_m"))
    c.append(_api("SegmentRail.same_ends", "SegmentRail(start_m=[0, 0, 0], end_m=[0, 0, 0])", "end_m"))
    c.append(_api("SegmentRail.nan", "SegmentRail(start_m=[0, 0, NAN], end_m=[0, 0, 0.1])", "start_m"))
    c.append(_api("CallableRail.function=str", "CallableRail(function='circle')", "function"))
    c.append(_api("CallableRail.range=reversed", "CallableRail(function=lambda th: (th, th, th), "
                  "parameter_range=(1.0, 0.0))", "parameter_range"))
    c.append(_api("CallableRail.function=wrong_return", "CallableRail(function=lambda th: th)", "function"))
    c.append(_api("CallableRail.function=raises", "CallableRail(function=lambda th: 1/0)", "function"))
    c.append(_api("frisvad_basis.not_unit", "ballctl.plants.rails.frisvad_basis([1.0, 1.0, 0.0])", "normal"))
    c.append(_api("frisvad_basis.nan", "ballctl.plants.rails.frisvad_basis([NAN, 0.0, 1.0])", "normal"))
    # --- references
    circle = "CircularMotion(plant(), {radius}, {omega}, {roll_rate}{extra})"
    base = dict(radius="0.5", omega="1.0", roll_rate="40.0", extra="")
    for field in ("radius", "omega", "roll_rate"):
        for tag, v in bad_scalars.items():
            if (field, tag) in (("omega", "neg"), ("omega", "huge")):
                continue
            args = dict(base, **{field: v})
            c.append(_api(f"CircularMotion.{field}={tag}", circle.format(**args), field))
    c.append(_api("CircularMotion.omega=5(plate limit)", circle.format(**dict(base, omega="5.0")), "plate", "3.74"))
    c.append(_api("CircularMotion.roll_rate=low", circle.format(**dict(base, roll_rate="10.0")), "roll_rate"))
    c.append(_api("CircularMotion.roll_rate=high(chart)", circle.format(**dict(base, roll_rate="1e5")), "roll_rate"))
    c.append(_api("CircularMotion.large_tilt(78deg)", circle.format(**dict(base, omega="3.66", roll_rate="300")),
                  "tilt"))
    c.append(_api("CircularMotion.max_tilt=neg", circle.format(**dict(base, extra=", max_tilt=-0.1")), "max_tilt"))
    c.append(_api("CircularMotion.max_tilt=exceeded", circle.format(**dict(base, omega="2.0", extra=", max_tilt=0.01")),
                  "max_tilt"))
    c.append(_api("CircularMotion.center=nan", circle.format(**dict(base, extra=", center=(NAN, 0)")), "center"))
    c.append(_api("CircularMotion.center=3", circle.format(**dict(base, extra=", center=(0, 0, 0)")), "center"))
    c.append(_api("CircularMotion.plant=str", "CircularMotion('plant', 0.5, 1.0, 40.0)", "plant"))
    c.append(_api("CircularMotion.plant=moving", "CircularMotion(MovingPlateBallPlate(), 0.5, 1.0, 40.0)", "plant"))
    c.append(_api("Reference.t=nan", "ref()(NAN)", "t"))
    c.append(_api("Reference.t=str", "ref()('now')", "t"))
    c.append(_api("Reference.t=2d", "ref()(np.zeros((2, 2)))", "t"))
    for tag, v in (("nan", "NAN"), ("neg", "-1.0"), ("zero", "0.0"), ("str", "'x'")):
        c.append(_api(f"LissajousPath.circle.radius={tag}", f"LissajousPath.circle({v}, 1.0)", "radius"))
        c.append(_api(f"LissajousPath.circle.omega={tag}", f"LissajousPath.circle(0.5, {v})", "omega"))
        c.append(_api(f"WaypointPath.speed={tag}", f"WaypointPath([[0, 0], [1, 0]], {v})", "speed"))
    c.append(_api("WaypointPath.one_point", "WaypointPath([[0, 0]], 0.1)", "waypoints"))
    c.append(_api("WaypointPath.duplicate", "WaypointPath([[0, 0], [0, 0], [1, 0]], 0.1)", "waypoints"))
    c.append(_api("WaypointPath.nan", "WaypointPath([[0, 0], [NAN, 0]], 0.1)", "waypoints"))
    c.append(_api("WaypointPath.3d", "WaypointPath([[0, 0, 0], [1, 0, 0]], 0.1)", "waypoints"))
    c.append(_api("WaypointPath.ramp_time=neg", "WaypointPath([[0, 0], [1, 0]], 0.1, ramp_time=-1.0)", "ramp_time"))
    c.append(_api("WaypointPath.ramp_time=long", "WaypointPath([[0, 0], [1, 0]], 0.1, ramp_time=100.0)", "ramp_time"))
    c.append(_api("WaypointPath.t=outside", "WaypointPath([[0, 0], [1, 0]], 0.1)(1e6)", "t"))
    c.append(_api("LissajousPath.zero_amplitudes",
                  "LissajousPath(amplitude_x=0, amplitude_y=0, omega_x=1, omega_y=1)", "amplitude"))
    c.append(_api("LissajousPath.omega=nan",
                  "LissajousPath(amplitude_x=1, amplitude_y=1, omega_x=NAN, omega_y=1)", "omega_x"))
    c.append(_api("PathMotion.path=str", "PathMotion(plant(), 'circle', duration=1.0)", "path"))
    c.append(_api("PathMotion.duration=nan",
                  "PathMotion(plant(), LissajousPath.circle(0.5, 1.0), duration=NAN)", "duration"))
    c.append(_api("PathMotion.duration=neg",
                  "PathMotion(plant(), LissajousPath.circle(0.5, 1.0), duration=-1)", "duration"))
    c.append(_api("PathMotion.path_returns_nan",
                  "PathMotion(plant(), lambda t: (np.full((len(t), 2), NAN),) * 3, duration=1.0)", "path"))
    c.append(_api("PathMotion.path_returns_wrong_shape",
                  "PathMotion(plant(), lambda t: (np.zeros(3),) * 3, duration=1.0)", "path"))
    c.append(_api("PathMotion.path_raises", "PathMotion(plant(), lambda t: 1/0, duration=1.0)", "path"))
    c.append(_api("PathMotion.too_fast",
                  "PathMotion(plant(), LissajousPath.circle(0.5, 6.0), duration=1.0)", "acceleration"))
    c.append(_api("PathMotion.check_samples=str",
                  "PathMotion(plant(), LissajousPath.circle(0.5, 1.0), duration=1.0, check_samples='many')",
                  "check_samples"))
    c.append(_api("PathMotion.spin=nan",
                  "PathMotion(plant(), LissajousPath.circle(0.5, 1.0), duration=1.0, spin=NAN)", "spin"))
    c.append(_api("PathMotion.initial_orientation=short",
                  "PathMotion(plant(), LissajousPath.circle(0.5, 1.0), duration=1.0, initial_orientation=[0.0])",
                  "initial_orientation"))
    c.append(_api("plate_angles.nan", "plate_angles_for_acceleration(plant(), [[NAN, 0]], [[0, 0]])", "acceleration"))
    c.append(_api("plate_angles.shape", "plate_angles_for_acceleration(plant(), [1.0, 0.0], [0.0, 0.0])",
                  "acceleration"))
    c.append(_api("exact_circular_motion.omega=nan",
                  "exact_circular_motion(MovingPlateBallPlate(), LissajousPath.circle(0.5, NAN), 40.0)",
                  "omega"))
    c.append(_api("exact_circular_motion.plant=ballplate",
                  "exact_circular_motion(plant(), LissajousPath.circle(0.5, 1.0), 40.0)", "plant"))
    c.append(_api("MovingPlateMotion.n_collocation=odd",
                  "MovingPlateMotion(MovingPlateBallPlate(), LissajousPath.circle(0.5, 1.0), spin=0.0, "
                  "duration=2*np.pi, collocation=ballctl.references.moving_plate.CollocationOptions(n_collocation=7))",
                  "n_collocation"))
    c.append(_api("MovingPlateMotion.duration=nan",
                  "MovingPlateMotion(MovingPlateBallPlate(), LissajousPath.circle(0.5, 1.0), spin=0.0, duration=NAN)",
                  "duration"))
    c.append(_api("DiskRollReference.speed=0",
                  "DiskRollReference(disk().to_constrained_system(), cruise_speed_mps=0.0)", "cruise_speed_mps"))
    c.append(_api("DiskRollReference.speed=nan",
                  "DiskRollReference(disk().to_constrained_system(), cruise_speed_mps=NAN)", "cruise_speed_mps"))
    c.append(_api("DiskRollReference.ramp=neg",
                  "DiskRollReference(disk().to_constrained_system(), cruise_speed_mps=0.5, ramp_time_s=-1)",
                  "ramp_time_s"))
    c.append(_api("DiskRollReference.system=ball",
                  "DiskRollReference(ball().to_constrained_system(), cruise_speed_mps=0.5)", "system"))
    c.append(_api("StraightRollReference.roll_rate=nan",
                  "StraightRollReference(ball().to_constrained_system(), [0, 1, 2], roll_rate=NAN)", "roll_rate"))
    c.append(_api("StraightRollReference.park_angles=short",
                  "StraightRollReference(ball().to_constrained_system(), [0.0], roll_rate=1.0)", "park_angles"))
    c.append(_api("IntegratedReference.input_nan",
                  "s = disk().to_constrained_system(); r = DiskRollReference(s, cruise_speed_mps=0.5)(0.0); "
                  "IntegratedReference(s, r.x, r.xd, lambda t: [NAN] * s.n_inputs, (0.0, 1.0))",
                  "nominal_input"))
    c.append(_api("IntegratedReference.input_nan_mid",
                  "s = disk().to_constrained_system(); r = DiskRollReference(s, cruise_speed_mps=0.5)(0.0); "
                  "IntegratedReference(s, r.x, r.xd, lambda t: [NAN if t > 0.3 else 0.0] * s.n_inputs, "
                  "(0.0, 1.0))", "nominal_input", "0.3"))
    c.append(_api("IntegratedReference.t_span=reversed",
                  "s = disk().to_constrained_system(); r = DiskRollReference(s, cruise_speed_mps=0.5)(0.0); "
                  "IntegratedReference(s, r.x, r.xd, lambda t: [0.0] * s.n_inputs, (1.0, 0.0))", "t_span"))
    c.append(_api("IntegratedReference.input=str",
                  "s = disk().to_constrained_system(); r = DiskRollReference(s, cruise_speed_mps=0.5)(0.0); "
                  "IntegratedReference(s, r.x, r.xd, 'zero', (0.0, 1.0))", "nominal_input"))
    c.append(_api("IntegratedReference.method=bad",
                  "s = disk().to_constrained_system(); r = DiskRollReference(s, cruise_speed_mps=0.5)(0.0); "
                  "IntegratedReference(s, r.x, r.xd, lambda t: [0.0] * s.n_inputs, (0.0, 1.0), "
                  "options=IntegrationOptions(method='euler'))",
                  "method"))
    # --- simulate
    sim = "simulate(plant(), {x0}, {xd0}, {u}, {span}{extra})"
    sbase = dict(x0="s0().x", xd0="s0().xd", u="s0().u", span="(0.0, 0.2)", extra="")
    for field, cases in {
        "x0": {"nan": "[NAN] * 5", "short": "[0.0] * 4", "str": "'x'", "2d": "np.zeros((2, 5))", "none": "None"},
        "xd0": {"nan": "np.r_[s0().xd[:4], NAN]", "short": "[0.0] * 3",
                "violating": "s0().xd + [0.3, 0, 0, 0, 0]"},
        "inputs": {"nan": "[NAN, 0.0]", "short": "[0.0]", "str": "'zero'",
                   "nan_mid": "lambda t: [NAN, 0] if t > 0.1 else [0, 0]",
                   "wrong_shape": "lambda t: np.zeros(3)", "non_numeric": "lambda t: 'up'",
                   "raises_type": "lambda t, x: 0",
                   "inf_mid": "lambda t: [INF, 0] if t > 0.05 else [0, 0]"},
        "t_span": {"reversed": "(1.0, 0.0)", "nan": "(0.0, NAN)", "three": "(0.0, 1.0, 2.0)", "str": "'long'",
                   "equal": "(0.0, 0.0)"},
    }.items():
        for tag, v in cases.items():
            key = {"inputs": "u", "t_span": "span"}.get(field, field)
            expect = {"inputs": ("input",), "xd0": ("xd0",), "x0": ("x0",), "t_span": ("t_span",)}[field]
            c.append(_api(f"simulate.{field}={tag}", sim.format(**dict(sbase, **{key: v})), *expect))
    for kw, tag, v in (("rtol", "neg", "-1e-3"), ("rtol", "nan", "NAN"), ("atol", "neg", "-1.0"),
                       ("atol", "str", "'x'"),
                       ("method", "bad", "'euler'"), ("method", "int", "3"), ("max_step", "zero", "0.0"),
                       ("max_step", "tiny", "1e-300"), ("max_step", "nan", "NAN"),
                       ("stabilization", "neg", "(-1.0, 10.0)"),
                       ("stabilization", "nan", "(NAN, 10.0)"), ("stabilization", "str", "'on'"),
                       ("stabilization", "three", "(1, 2, 3)"), ("projection_interval", "neg", "-0.1"),
                       ("projection_interval", "nan", "NAN"), ("projection_interval", "tiny", "1e-300"),
                       ("t_eval", "outside", "[0.0, 5.0]"), ("t_eval", "nan", "[0.0, NAN]"),
                       ("t_eval", "decreasing", "[0.1, 0.0]"), ("project_initial", "str", "'yes'")):
        extra = f", {kw}={v}" if kw == "t_eval" else f", options=SimulationOptions({kw}={v})"
        c.append(_api(f"simulate.{kw}={tag}", sim.format(**dict(sbase, extra=extra)), kw))
    c.append(_api("simulate.x0_beyond_chart",
                  "x = s0().x.copy(); x[3] = np.deg2rad(89.5); simulate(plant(), x, plant().project_velocities(x, "
                  "s0().xd), s0().u, (0.0, 0.2))", "x0"))
    c.append(_api("simulate.system=str", "simulate('ballplate', s0().x, s0().xd, None, (0, 1))", "system"))
    c.append(_api("rk4.steps=0", "rk4(lambda t, y: -y, np.ones(2), 0.0, 0.1, 0)", "steps"))
    c.append(_api("rk4.steps=float", "rk4(lambda t, y: -y, np.ones(2), 0.0, 0.1, 2.5)", "steps"))
    c.append(_api("rk4.nan", "rk4(lambda t, y: y * NAN, np.ones(2), 0.0, 0.1, 4)", "t ="))
    # --- rolling plants' own integrators
    bsim = "ball().simulate({x0}, {span}, {u}{extra})"
    bbase = dict(x0="paper_ball_initial_state()", span="(0.0, 0.3)", u="lambda t: np.ones(3)", extra="")
    for tag, args, expect in (
            ("x0=nan", dict(x0="np.full(15, NAN)"), "x0"),
            ("x0=short", dict(x0="np.zeros(14)"), "x0"),
            ("x0=quat_not_unit", dict(x0="paper_ball_initial_state() * 2"), "quaternion"),
            ("u=nan", dict(u="lambda t: [NAN, 0, 0]"), "rail_input"),
            ("u=nan_mid", dict(u="lambda t: [NAN, 0, 0] if t > 0.15 else [1, 1, 1]"), "rail_input"),
            ("u=wrong_shape", dict(u="lambda t: np.ones(2)"), "rail_input"),
            ("u=str", dict(u="'up'"), "rail_input"),
            ("u=huge", dict(u="lambda t: np.full(3, 1e200)"), "t ="),
            ("t_span=reversed", dict(span="(1.0, 0.0)"), "t_span"),
            ("t_span=nan", dict(span="(0.0, NAN)"), "t_span"),
            ("method=bad", dict(extra=", options=IntegrationOptions(method='euler')"), "method"),
            ("rtol=neg", dict(extra=", options=IntegrationOptions(rtol=-1.0)"), "rtol"),
            ("atol=nan", dict(extra=", options=IntegrationOptions(atol=NAN)"), "atol"),
            ("breakpoints=nan", dict(extra=", breakpoints=[NAN]"), "breakpoints"),
            ("t_eval=outside", dict(extra=", t_eval=[0.0, 9.0]"), "t_eval")):
        c.append(_api(f"RollingBall.simulate.{tag}", bsim.format(**dict(bbase, **args)), expect))
    c.append(_api("RollingBall.simulate.mass_leaves_ball",
                  "p = RollingBallParameters(mass_kg=1.0, radius_m=0.5, principal_inertia_kgm2=[0.1, 0.1, 0.1], "
                  "point_masses=(PointMass(mass_kg=0.2, rail=SegmentRail(start_m=[0, 0, 0], end_m=[0.2, 0, 0])),)); "
                  "RollingBall(p).simulate(np.r_[0.1, 0.0, 1, 0, 0, 0, 0, 0, 0, 0, 0], (0.0, 3.0), "
                  "lambda t: [1.0], breakpoints=())", "mass 0"))
    dsim = "disk().simulate({x0}, (0.0, 0.3), {u})"
    c.append(_api("RollingDisk.simulate.u=nan_mid", dsim.format(x0="paper_disk_initial_state()",
                  u="lambda t: [NAN if t > 0.1 else 0.0] * disk().n_masses"), "rail_input"))
    c.append(_api("RollingDisk.simulate.x0=nan", dsim.format(x0="paper_disk_initial_state() * NAN",
                  u="lambda t: [0.0] * disk().n_masses"), "x0"))
    c.append(_api("RollingBallSystem.chart_rotation=bad", "RollingBallSystem(ball(), chart_rotation=np.ones((3, 3)))",
                  "chart_rotation"))
    c.append(_api("RollingBallSystem.ball=str", "RollingBallSystem('ball')", "ball"))
    c.append(_api("RollingDiskSystem.contact=nan", "RollingDiskSystem(disk(), contact_at_zero_angle_m=NAN)",
                  "contact_at_zero_angle_m"))
    # --- partitions, linearization
    c.append(_api("Partition.unknown_name", "Partition.from_coordinates(plant(), ['contact_x', 'contact_y', 'pitch'], "
                  "['lean', 'roll'])", "pitch"))
    c.append(_api("Partition.duplicate", "Partition.from_coordinates(plant(), ['contact_x', 'contact_x', 'yaw'], "
                  "['lean', 'roll'])", "contact_x"))
    c.append(_api("Partition.index_out_of_range", "Partition.from_coordinates(plant(), [0, 1, 9], [3, 4])", "9"))
    c.append(_api("Partition.float_index", "Partition.from_coordinates(plant(), [0, 1, 2.5], [3, 4])", "2.5"))
    c.append(_api("Partition.singular", "Partition.from_coordinates(plant(), ['lean', 'roll', 'yaw'], "
                  "['contact_x', 'contact_y'])", "singular"))
    c.append(_api("linearize.times=nan", "linearize(plant(), ref(), [0.0, NAN], part())", "times"))
    c.append(_api("linearize.times=empty", "linearize(plant(), ref(), [], part())", "times"))
    c.append(_api("linearize.times=decreasing", "linearize(plant(), ref(), [1.0, 0.0], part())", "times"))
    c.append(_api("linearize.times=str", "linearize(plant(), ref(), 'all', part())", "times"))
    c.append(_api("linearize.partition=str", "linearize(plant(), ref(), [0.0, 0.1], 'default')", "partition"))
    c.append(_api("linearize.reference=str", "linearize(plant(), 'circle', [0.0, 0.1], part())", "reference"))
    c.append(_api("linearize_at.x=nan", "linearize_at(plant(), [NAN] * 5, s0().xd, s0().xdd, s0().u, part())",
                  "x"))
    c.append(_api("linearize_at.u=short", "linearize_at(plant(), s0().x, s0().xd, s0().xdd, [0.0], part())",
                  "u"))
    # --- LTV, discretization, controllability
    c.append(_api("LTVSystem.shapes", "LTVSystem(np.arange(3.0), np.zeros((3, 2, 2)), np.zeros((4, 2, 1)), ('a', 'b'), "
                  "('u',))", "B"))
    c.append(_api("LTVSystem.t=decreasing", "LTVSystem(np.array([2.0, 1.0, 0.0]), np.zeros((3, 2, 2)), "
                  "np.zeros((3, 2, 1)), ('a', 'b'), ('u',))", "t"))
    c.append(_api("LTVSystem.nan", "LTVSystem(np.arange(3.0), np.full((3, 2, 2), NAN), np.zeros((3, 2, 1)), "
                  "('a', 'b'), ('u',))", "A"))
    c.append(_api("LTVSystem.names", "LTVSystem(np.arange(3.0), np.zeros((3, 2, 2)), np.zeros((3, 2, 1)), ('a',), "
                  "('u',))", "state_names"))
    c.append(_api("LTVSystem.index", "ltv()[1000]", "1000"))
    c.append(_api("LTVSystem.state_name", "ltv().state_index('pitch')", "pitch"))
    for tag, v in (("neg", "-1"), ("zero", "0"), ("nan", "NAN"), ("str", "'fast'"), ("mismatch", "0.03")):
        c.append(_api(f"discretize.dt={tag}", f"discretize(ltv(), {v})", "dt"))
    c.append(_api("discretize.method=bad", "discretize(ltv(), 0.02, method='euler')", "method"))
    c.append(_api("discretize.order=0", "discretize(ltv(), 0.02, method='series', order=0)", "order"))
    c.append(_api("discretize.order=float", "discretize(ltv(), 0.02, method='series', order=1.5)", "order"))
    c.append(_api("discretize.ltv=array", "discretize(np.zeros((3, 2, 2)), 0.02)", "ltv"))
    c.append(_api("zoh_matrices.shape", "zoh_matrices(np.zeros((2, 2)), np.zeros((2, 1)), 0.1)", "A"))
    c.append(_api("zoh_matrices.dt=nan", "zoh_matrices(np.zeros((1, 2, 2)), np.zeros((1, 2, 1)), NAN)", "dt"))
    c.append(_api("discretization_error.orders=empty", "discretization_error(ltv(), 0.02, [])", "orders"))
    c.append(_api("gramian.t1<t0", "gramian(ltv(), 0.5, 0.1)", "t1"))
    c.append(_api("gramian.t=nan", "gramian(ltv(), 0.0, NAN)", "t1"))
    c.append(_api("gramian.outside", "gramian(ltv(), 0.0, 50.0)", "t1"))
    c.append(_api("gramian.method=bad", "gramian(ltv(), 0.0, 0.5, method='magic')", "method"))
    c.append(_api("gramian.system=array", "gramian(np.eye(2), 0.0, 1.0)", "system"))
    c.append(_api("gramian.rank_rtol=2", "gramian(ltv(), 0.0, 0.5, rank_rtol=2.0)", "rank_rtol"))
    c.append(_api("discrete_gramian.nan",
                  "discrete_gramian(DiscreteLTVSystem.from_arrays(np.full((2, 2, 2), NAN), np.zeros((2, 2, 1))))",
                  "Ad"))
    c.append(_api("discrete_gramian.shape",
                  "discrete_gramian(DiscreteLTVSystem.from_arrays(np.zeros((2, 2, 2)), np.zeros((3, 2, 1))))", "Bd"))
    c.append(_api("transition_matrix.nan", "transition_matrix(ltv(), 0.0, NAN)", "t1"))
    c.append(_api("silverman_meadows.order=neg", "silverman_meadows(ltv(), [0.1, 0.2], order=-1)", "order"))
    c.append(_api("silverman_meadows.times=empty", "silverman_meadows(ltv(), [])", "times"))
    c.append(_api("monodromy.no_period", "monodromy(ltv())", "period"))
    c.append(_api("monodromy.period=nan", "monodromy(ltv(), period=NAN)", "period"))
    c.append(_api("LTVCallables.not_callable", "from ballctl.design.controllability import LTVCallables; "
                  "LTVCallables(A_of_t=np.eye(2), B_of_t=np.ones((2, 1)))", "A_of_t"))
    c.append(_api("LTVCallables.returns_nan", "from ballctl.design.controllability import LTVCallables; "
                  "gramian(LTVCallables(A_of_t=lambda t: np.full((2, 2), NAN), "
                  "B_of_t=lambda t: np.ones((2, 1))), 0.0, 1.0)",
                  "t ="))
    # --- LQR
    Ad, Bd = "np.tile(np.eye(2), (5, 1, 1))", "np.ones((5, 2, 1))"
    c.append(_api("finite_horizon_lqr.Q=neg", f"finite_horizon_lqr({Ad}, {Bd}, -np.eye(2), np.eye(1), np.eye(2))", "Q"))
    c.append(_api("finite_horizon_lqr.R=zero",
                  f"finite_horizon_lqr({Ad}, {Bd}, np.eye(2), np.zeros((1, 1)), np.eye(2))",
                  "R"))
    c.append(_api("finite_horizon_lqr.Q=nan", f"finite_horizon_lqr({Ad}, {Bd}, np.full((2, 2), NAN), np.eye(1), "
                  "np.eye(2))", "Q"))
    c.append(_api("finite_horizon_lqr.Q=shape", f"finite_horizon_lqr({Ad}, {Bd}, np.eye(3), np.eye(1), np.eye(2))",
                  "Q"))
    c.append(_api("finite_horizon_lqr.Q_N=asym", f"finite_horizon_lqr({Ad}, {Bd}, np.eye(2), np.eye(1), "
                  "np.array([[1.0, 2.0], [0.0, 1.0]]))", "Q_N"))
    c.append(_api("finite_horizon_lqr.Ad=nan", f"finite_horizon_lqr(np.full((5, 2, 2), NAN), {Bd}, np.eye(2), "
                  "np.eye(1), np.eye(2))", "Ad"))
    c.append(_api("finite_horizon_lqr.Bd=str", f"finite_horizon_lqr({Ad}, 'B', np.eye(2), np.eye(1), np.eye(2))", "Bd"))
    c.append(_api("finite_horizon_lqr.cond_limit=neg", f"finite_horizon_lqr({Ad}, {Bd}, np.eye(2), np.eye(1), "
                  "np.eye(2), cond_limit=-1.0)", "cond_limit"))
    c.append(_api("periodic_lqr.tol=neg", f"periodic_lqr({Ad}, {Bd}, np.eye(2), np.eye(1), tol=-1.0)", "tol"))
    c.append(_api("periodic_lqr.max_periods=0", f"periodic_lqr({Ad}, {Bd}, np.eye(2), np.eye(1), max_periods=0)",
                  "max_periods"))
    c.append(_api("periodic_lqr.unstabilizable", "periodic_lqr(np.tile(2 * np.eye(2), (5, 1, 1)), np.zeros((5, 2, 1)), "
                  "np.eye(2), np.eye(1), max_periods=50)", "period"))
    c.append(_api("bryson.unknown", "bryson(['a', 'b'], ['u'], {'a': 1.0, 'c': 1.0}, {'u': 1.0})", "c"))
    c.append(_api("bryson.zero", "bryson(['a', 'b'], ['u'], {'a': 1.0, 'b': 0.0}, {'u': 1.0})", "b"))
    c.append(_api("bryson.nan", "bryson(['a', 'b'], ['u'], {'a': 1.0, 'b': NAN}, {'u': 1.0})", "b"))
    c.append(_api("bryson.str", "bryson(['a', 'b'], ['u'], {'a': 1.0, 'b': 'x'}, {'u': 1.0})", "b"))
    c.append(_api("bryson.list", "bryson(['a', 'b'], ['u'], [1.0, 1.0], {'u': 1.0})", "max_state_errors"))
    # --- tracking design and closed loop
    for kw, tag, v in (("dt", "zero", "0.0"), ("dt", "nan", "NAN"), ("dt", "neg", "-0.02"), ("horizon", "neg", "-1.0"),
                       ("horizon", "not_multiple", "1.003"), ("horizon", "nan", "NAN"), ("terminal", "bad", "'loop'"),
                       ("terminal_factor", "neg", "-1.0"), ("states", "unknown", "['pitch']"),
                       ("max_state_errors", "neg", "dict(MSE, yaw=-1.0)"), ("t0", "nan", "NAN"),
                       ("dt", "str", "'fast'"), ("horizon", "tiny", "1e-9"), ("Q", "with_bryson", "np.eye(6)")):
        c.append(_api(f"design_tracking_lqr.{kw}={tag}", f"design(**{{'{kw}': {v}}})", kw))
    c.append(_api("design_tracking_lqr.reference=str",
                  "design_tracking_lqr(plant(), 'circle', part(), dt=0.02, horizon=1.0)", "reference"))
    cl = "closed_loop(ctrl(), {x0}, s0().xd{extra})"
    for kw, tag, v in (("duration", "neg", "-1.0"), ("duration", "nan", "NAN"), ("duration", "too_long", "100.0"),
                       ("duration", "below_one_step", "0.001"), ("model", "bad", "'quadratic'"),
                       ("integrator", "bad", "'euler'"), ("noise_std", "neg", "{'contact_x': -0.01}"),
                       ("noise_std", "nan", "{'contact_x': NAN}"), ("noise_std", "unknown", "{'pitch': 0.1}"),
                       ("noise_std", "list", "[0.1]"), ("noise_std", "str_value", "{'contact_x': 'big'}"),
                       ("seed", "str", "'abc'"), ("seed", "neg", "-1"), ("substeps", "zero", "0"),
                       ("substeps", "float", "2.5"), ("rtol", "neg", "-1.0"), ("atol", "nan", "NAN"),
                       ("stabilization", "neg", "(-5.0, 10.0)"), ("limits", "dict", "{'max_angle': 0.1}"),
                       ("feedback", "str", "'yes'")):
        c.append(_api(f"simulate_closed_loop.{kw}={tag}", cl.format(x0="x0_offset()", extra=f", {kw}={v}"), kw))
    c.append(_api("simulate_closed_loop.x0=nan", cl.format(x0="[NAN] * 5", extra=""), "x0"))
    c.append(_api("simulate_closed_loop.x0=short", cl.format(x0="[0.0] * 4", extra=""), "x0"))
    c.append(_api("simulate_closed_loop.controller=str", "simulate_closed_loop('lqr', x0_offset(), s0().xd)",
                  "controller"))
    c.append(_api("simulate_closed_loop.nan_gains",
                  "import dataclasses; c = ctrl(); g = np.array(c.lqr.gains); g[3] = NAN; "
                  "lq = dataclasses.replace(c.lqr, gains=g); c2 = dataclasses.replace(c, lqr=lq); "
                  "simulate_closed_loop(c2, x0_offset(), s0().xd)", "t ="))
    c.append(_api("simulate_closed_loop.x0_beyond_chart",
                  "x = x0_offset(); x[3] = np.deg2rad(89.9); simulate_closed_loop(ctrl(), x, s0().xd)", "x0"))
    for kw, tag, v in (("max_angle", "neg", "-0.1"), ("max_angle", "nan", "NAN"), ("max_rate", "zero", "0.0"),
                       ("quantum", "str", "'fine'"), ("delay", "neg", "-0.01"), ("delay", "inf", "INF")):
        c.append(_api(f"RigLimits.{kw}={tag}", f"RigLimits(**{{'{kw}': {v}}})", kw))
    # --- schedules
    c.append(_api("GainSchedule.load.missing", "GainSchedule.load('/nonexistent/sched.npz')", "sched.npz"))
    c.append(_api("GainSchedule.load.directory", "GainSchedule.load('/tmp')", "/tmp"))
    c.append(_api("GainSchedule.load.wrong_suffix", "GainSchedule.load('/tmp/x.txt')", "path"))
    c.append(_api("GainSchedule.load.garbage",
                  "import tempfile, os; d = tempfile.mkdtemp(); p = os.path.join(d, 's.json'); "
                  "open(p, 'w').write('{{not json'); GainSchedule.load(p)", "s.json"))
    c.append(_api("GainSchedule.save.dir",
                  "import tempfile; d = tempfile.mkdtemp(); ctrl().to_schedule().save(d)", "path"))
    c.append(_api("GainSchedule.save.parent_is_file",
                  "import tempfile, os; d = tempfile.mkdtemp(); f = os.path.join(d, 'f'); open(f, 'w').write('x'); "
                  "ctrl().to_schedule().save(os.path.join(f, 's.npz'))", "f"))
    c.append(_api("GainSchedule.gain.t=outside", "ctrl().to_schedule().gain(100.0)", "t"))
    c.append(_api("GainSchedule.gain.t=nan", "ctrl().to_schedule().gain(NAN)", "t"))
    c.append(_api("GainSchedule.to_c_header.name", "import tempfile, os; d = tempfile.mkdtemp(); "
                  "ctrl().to_schedule().to_c_header(os.path.join(d, 'g.h'), name='1 bad')", "name"))
    # --- plotting / files
    c.append(_api("save_figure.dir", "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; "
                  "from ballctl.figures.plotting import save_figure; import tempfile; "
                  "save_figure(plt.figure(), tempfile.mkdtemp())",
                  "path"))
    c.append(_api("save_figure.parent_is_file",
                  "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; "
                  "from ballctl.figures.plotting import save_figure; import tempfile, os; d = tempfile.mkdtemp(); "
                  "f = os.path.join(d, 'f'); open(f, 'w').write('x'); "
                  "save_figure(plt.figure(), os.path.join(f, 'a.png'))",
                  "path"))
    c.append(_api("plot_reference.t=nan",
                  "import matplotlib; matplotlib.use('Agg'); from ballctl.figures.plotting import "
                  "plot_reference; plot_reference(ref(), [0.0, NAN])", "t"))
    c.append(_api("simulate_paper_ball.samples=1", "from ballctl.studies import simulate_paper_ball; import tempfile; "
                  "simulate_paper_ball(tempfile.mkdtemp(), samples=1)", "samples"))
    c.append(_api("simulate_paper_ball.t_final=nan",
                  "from ballctl.studies import simulate_paper_ball; import tempfile; "
                  "simulate_paper_ball(tempfile.mkdtemp(), t_final=NAN)", "t_final"))
    c.append(_api("compare_partitions.times=short", "compare_partitions(plant(), ref(), [0.0, 0.1])", "times"))
    c.append(_api("compare_rail_layouts.samples=1", "compare_rail_layouts(samples=1)", "samples"))
    c.append(_api("compare_rail_layouts.roll_rate=0", "compare_rail_layouts(roll_rate=0.0)", "roll_rate"))
    c.append(_api("ConstrainedSystem.n=neg", "ConstrainedSystem(n_coordinates=-1, n_holonomic=0, n_nonholonomic=0, "
                  "n_inputs=0)", "n_coordinates"))
    c.append(_api("ConstrainedSystem.not_callable",
                  "ConstrainedSystem(n_coordinates=2, n_holonomic=0, n_nonholonomic=0, "
                  "n_inputs=0, mass_matrix=np.eye(2), forces=lambda x, xd, u: np.zeros(2))", "mass_matrix"))
    c.append(_api("check_system.x=nan", "check_system(plant(), [NAN] * 5, s0().xd, s0().u)", "x"))
    # --- CLI
    c += [
        _cli("cli.no_command"),
        _cli("cli.unknown_command", "fly"),
        _cli("cli.track.dt=0", "track", "--dt", "0"),
        _cli("cli.track.dt=nan", "track", "--dt", "nan"),
        _cli("cli.track.dt=-1", "track", "--dt", "-1"),
        _cli("cli.track.dt=abc", "track", "--dt", "abc"),
        _cli("cli.track.duration=0", "track", "--duration", "0"),
        _cli("cli.track.duration=inf", "track", "--duration", "inf"),
        _cli("cli.track.duration_not_multiple", "track", "--duration", "1", "--dt", "0.3"),
        _cli("cli.track.noise=-0.01", "track", "--noise", "-0.01"),
        _cli("cli.track.noise=nan", "track", "--noise", "nan"),
        _cli("cli.track.seed=1.5", "track", "--seed", "1.5"),
        _cli("cli.track.max_tilt=-5", "track", "--max-tilt-deg", "-5"),
        _cli("cli.track.max_tilt=0", "track", "--max-tilt-deg", "0"),
        _cli("cli.track.max_tilt=95", "track", "--max-tilt-deg", "95"),
        _cli("cli.track.max_rate=0", "track", "--max-rate-deg", "0"),
        _cli("cli.track.quantum=-1", "track", "--quantum-deg", "-1"),
        _cli("cli.track.delay=-1", "track", "--delay", "-1"),
        _cli("cli.track.delay=long", "track", "--delay", "100", "--duration", "1"),
        _cli("cli.track.weight_scale=0", "track", "--weight-scale", "0"),
        _cli("cli.track.max_input_error=0", "track", "--max-input-error-deg", "0"),
        _cli("cli.track.terminal_factor=-1", "track", "--terminal-factor", "-1"),
        _cli("cli.track.offset=nan", "track", "--offset", "nan", "0"),
        _cli("cli.track.offset=one", "track", "--offset", "0.1"),
        _cli("cli.track.omega=5", "track", "--omega", "5"),
        _cli("cli.track.config_missing", "track", "--config", "{tmp}/missing.toml"),
        _cli("cli.track.config_dir", "track", "--config", "{tmp}"),
        _cli("cli.track.config_malformed", "track", "--config", "{tmp}/malformed.toml"),
        _cli("cli.track.config_unknown_key", "track", "--config", "{tmp}/unknown.toml"),
        _cli("cli.track.config_bad_value", "track", "--config", "{tmp}/badvalue.toml"),
        _cli("cli.track.config_table", "track", "--config", "{tmp}/table.toml"),
        _cli("cli.track.config_binary", "track", "--config", "{tmp}/binary.toml"),
        _cli("cli.track.out_is_file", "track", "--out", "{tmp}/file"),
        _cli("cli.track.out_parent_is_file", "track", "--out", "{tmp}/file/sub"),
        _cli("cli.reference.omega=0", "reference", "--omega", "0"),
        _cli("cli.reference.omega=5", "reference", "--omega", "5", "--out", ""),
        _cli("cli.reference.omega=9", "reference", "--omega", "9", "--out", ""),
        _cli("cli.reference.radius=0", "reference", "--radius", "0"),
        _cli("cli.reference.ball_radius=0", "reference", "--ball-radius", "0"),
        _cli("cli.reference.mass=-1", "reference", "--mass", "-1"),
        _cli("cli.reference.inertia=0", "reference", "--inertia", "0"),
        _cli("cli.reference.gravity=nan", "reference", "--gravity", "nan"),
        _cli("cli.reference.roll_rate=nan", "reference", "--roll-rate", "nan"),
        _cli("cli.reference.roll_rate=-40", "reference", "--roll-rate", "-40", "--out", ""),
        _cli("cli.reference.center=inf", "reference", "--center", "inf", "0"),
        _cli("cli.reference.out_dir", "reference", "--out", "{tmp}"),
        _cli("cli.reference.out_parent_is_file", "reference", "--out", "{tmp}/file/x.png"),
        _cli("cli.reference.out_bad_suffix", "reference", "--out", "{tmp}/x.xyz"),
        _cli("cli.partitions.dt=0", "partitions", "--dt", "0"),
        _cli("cli.partitions.dt=nan", "partitions", "--dt", "nan"),
        _cli("cli.partitions.dt_huge", "partitions", "--dt", "100"),
        _cli("cli.simulate_ball.t_final=0", "simulate-ball", "--t-final", "0"),
        _cli("cli.simulate_ball.t_final=inf", "simulate-ball", "--t-final", "inf"),
        _cli("cli.simulate_ball.t_final=-1", "simulate-ball", "--t-final", "-1"),
        _cli("cli.simulate_ball.out_is_file", "simulate-ball", "--out", "{tmp}/file"),
    ]
    return c


CASES = _catalogue()


def _cli_files(tmp: Path) -> None:
    (tmp / "file").write_text("x")
    (tmp / "malformed.toml").write_text("dt = \n")
    (tmp / "unknown.toml").write_text("[track]\nspeeed = 2.0\n")
    (tmp / "badvalue.toml").write_text('[track]\ndt = "x"\n')
    (tmp / "table.toml").write_text("[track]\n[track.dt]\nvalue = 1\n")
    (tmp / "binary.toml").write_bytes(b"\xff\xfe\x00dt = 1")


def run_case(case: Case, *, tree: Path, timeout: float, tmp: Path) -> dict:
    """Run one case in a fresh interpreter; return its classification."""
    env = dict(os.environ, PYTHONPATH=str(tree), MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
    start = time.perf_counter()
    if case.cli is not None:
        argv = [a.format(tmp=tmp) for a in case.cli]
        cmd = [sys.executable, "-m", "ballctl.cli", *argv]
    else:
        body = "\n".join("        " + line for line in case.code.split("; "))
        script = PRELUDE + WRAPPER.format(expect=case.expect, body=body)
        cmd = [sys.executable, "-c", script]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
    except subprocess.TimeoutExpired:
        return {"id": case.id, "class": "hang", "detail": f"no answer within {timeout:g} s",
                "seconds": time.perf_counter() - start}
    seconds = time.perf_counter() - start
    if case.cli is not None:
        err = proc.stderr.strip()
        lines = err.splitlines()
        if proc.returncode == 0:
            cls, detail = "silent", "exit 0"
        elif proc.returncode == 2 and len(lines) == 1 and "Traceback" not in err:
            cls, detail = "clear", lines[0]
        else:
            last_line = lines[-1] if lines else ""
            cls, detail = "unclear", f"exit {proc.returncode}, {len(lines)} stderr lines: {last_line}"
        return {"id": case.id, "class": cls, "detail": detail[:300], "seconds": seconds}
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT"):
            _, cls, kind, msg = (line.split(" ", 3) + ["", ""])[:4]
            return {"id": case.id, "class": cls, "detail": f"{kind}: {msg}", "seconds": seconds}
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"id": case.id, "class": "unclear", "detail": f"crashed before answering: {tail}"[:300], "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    """Run the catalogue and print the counts per class (and every case that is not clear)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", default=str(ROOT), help="checkout whose ballctl is fuzzed (default: this one)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it counts as a hang")
    p.add_argument("--workers", type=int, default=2, help="cases run in parallel")
    p.add_argument("--only", default="", help="run only cases whose id contains this text")
    p.add_argument("--json", default=None, help="write every case's result to this file")
    args = p.parse_args(argv)
    cases = [c for c in CASES if args.only in c.id]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        _cli_files(tmp)
        results = []
        with ThreadPoolExecutor(args.workers) as pool:
            futures = [pool.submit(run_case, c, tree=Path(args.tree), timeout=args.timeout, tmp=tmp) for c in cases]
            for fut in as_completed(futures):  # streamed, so an interrupted run still reports what it saw
                r = fut.result()
                results.append(r)
                print(f"{r['class']:8s} {r['id']}: {r['detail']}", flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps({"results": results}, indent=1))
    counts = {k: sum(r["class"] == k for r in results) for k in ("clear", "builtin", "unclear", "silent", "hang")}
    total = len(results)
    print(f"\n{total} bad inputs ({sum(c.cli is not None for c in cases)} CLI): " +
          ", ".join(f"{k} {v} ({100 * v / max(total, 1):.0f} %)" for k, v in counts.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
