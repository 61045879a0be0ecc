"""``ballctl montecarlo``: many closed-loop runs of the circle tracker on a rig's uncertain balls.

The tracker (``--controller``) is by default the rig-aware output-feedback
design that ``ballctl track`` verifies and exports (``lqg``): the ``--design``
of :func:`~ballctl.design_for_rig` (default ``exact``: the servo plate along the
exact inversion) with the rig's Kalman filter on the rig's sensors -- it
compensates the contact camera's latency -- offset-free (it estimates and
cancels a plate level error and integrates the path-frame error), at the rig's
control period. Its runs are those ``ballctl track`` verifies on: the rig's
exact servo plate with its imperfections (level error, rolling resistance), the
rig's limits and loop imperfections (lost frames, servo dead band, timing
jitter), stopped once the contact point is farther than max(0.2 m, 2 r) from
the path. ``--controller lqr`` runs the paper's 6-state *state-feedback* LQR on
the rig's quasi-static design plant instead, as this command did before (no
filter, no imperfections: for comparison; the rig's latency makes most of its
runs diverge).

What varies from run to run defaults to the rig's (``--rig``, as for ``ballctl
track``): the ball's mass and radius spread, its contact-point sensor's noise
and bias, its latency (the sensor's plus the actuation delay, give or take the
latency uncertainty) and the initial offset's spread about ``--offset DX DY``
(default the same 5 cm as ``ballctl track``). Every flag overrides its default;
the values used are printed and written into ``summary.json``. Both trackers
run through :func:`ballctl.monte_carlo` (``lqg`` with the rig's truth, limits
and loop imperfections), so run ``i`` draws the same ball, latency, bias and
offset for both.

Where the draws act. ``lqr``: the noise and bias are added to the measured
contact point, the latency delays the commands (the loop has no sensor model).
``lqg``: the noise and bias are the contact camera's (the filter's gains stay
the rig design's, as ``ballctl track --truth`` reads another rig's sensors),
the actuation delay stays the rig's, and the drawn latency is the camera's
(plus that delay): the filter compensates the rig's nominal latency, and a
run's latency error moves the instant of every frame of that run (first order,
``y(t - e) = y - e dy/dt``, as ``ballctl track``'s verification over the rig's
uncertainty; the loop's sample-instant error is one per step, so on a rig with
more sensors it moves them all).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import replace

import numpy as np

from .._errors import BallctlError, BallctlWarning, ConfigError, ParameterError
from .._io import atomic_directory, check_output_folder
from ._common import (add_ball_overrides, add_circle_arguments, compile_progress, integer, number, rig_ball_plate,
                      rig_from_spec)
from .reference import circle_from_flags

__all__ = ["NAME", "HELP", "MAX_DURATION_S", "MAX_RUN_STEPS", "SCHEDULER_TIMEOUT_S", "add_arguments", "run"]

NAME = "montecarlo"
HELP = ("Monte Carlo of the rig's circle tracker (the LQG ballctl track exports, or the plain LQR) over a rig's "
        "uncertainty: ball, sensor noise and bias, latency, offsets")

MAX_STATE_ERRORS = {"contact_x": 0.01, "contact_y": 0.01, "yaw": 0.5,
                    "contact_x_rate": 0.1, "contact_y_rate": 0.1, "yaw_rate": 5.0}
#: --duration at most this (s), as for ballctl track: the gains, the filter and every run are stored per control step
MAX_DURATION_S = 600.0
#: --runs x control steps at most this: each run's error history is kept (8 bytes a step, about 160 MB)
MAX_RUN_STEPS = 20_000_000
#: how long to wait for a Dask scheduler (and for its first worker), s
SCHEDULER_TIMEOUT_S = 5.0
#: the files montecarlo writes: an earlier output folder of only these may be replaced
OUTPUT_NAMES = ("error_bands.png", "summary.json", "runs.npz")
#: the measured coordinates the noise, bias and initial offset act on
_CONTACT = ("contact_x", "contact_y")
#: the trackers of --controller
CONTROLLERS = {"lqg": "the rig-aware output-feedback design ballctl track exports (Kalman filter on the rig's "
                      "sensors, latency compensated, offset-free), run on the rig's servo-plate truth with its "
                      "imperfections",
               "lqr": "the paper's 6-state state-feedback LQR on the quasi-static design plant (no filter, no "
                      "imperfections; the earlier tracker of this command, for comparison)"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    g = p.add_argument_group("rig and ball")
    g.add_argument("--rig", default="tabletop",
                   help="rig preset (tabletop, lab, ideal) or a TOML file: ball, control period and the default "
                        "uncertainty (default tabletop)")
    add_ball_overrides(g)
    from ..ball_plate.design import RIG_DESIGNS

    g = p.add_argument_group("tracker")
    g.add_argument("--controller", choices=tuple(CONTROLLERS), default="lqg",
                   help="; ".join(f"{k}: {v}" for k, v in CONTROLLERS.items()) + " (default lqg)")
    g.add_argument("--design", choices=tuple(RIG_DESIGNS), default="exact",
                   help="the rig design of --controller lqg, as ballctl track --design (default exact: on the "
                        "tabletop rig the design track exports; the quasi-static ones lose runs on its servo plate)")
    add_circle_arguments(p)
    g = p.add_argument_group("runs")
    g.add_argument("--runs", type=integer(low=1), default=200, help="number of runs (default 200)")
    g.add_argument("--seed", type=integer(low=0), default=0, help="root seed, an integer >= 0 (default 0)")
    g.add_argument("--chunk-size", type=integer(low=1), default=50, help="runs per chunk (default 50)")
    g.add_argument("--workers", type=integer(low=0), default=0,
                   help="threads for the chunks (default 0: this thread; the compiled loop releases the GIL)")
    g.add_argument("--scheduler", default=None,
                   help="address of a running Dask scheduler with workers (tcp://host:8786); needs "
                        f"ballctl[distributed]; refused after {SCHEDULER_TIMEOUT_S:g} s without an answer")
    g.add_argument("--dt", type=float, default=None, help="controller sample time in s (default: the rig's)")
    g.add_argument("--duration", type=float, default=4 * np.pi,
                   help=f"run length in s, at most {MAX_DURATION_S:g} (default 4 pi); --runs x control steps at most "
                        f"{MAX_RUN_STEPS:,}")
    g = p.add_argument_group("uncertainty (default: the rig's; each flag overrides)")
    g.add_argument("--mass-std", type=number("kg", low=0), default=None,
                   help="std of the ball mass in kg (default: the rig's relative spread times the mass)")
    g.add_argument("--radius-std", type=number("m", low=0), default=None,
                   help="std of the ball radius in m (default: the rig's relative spread times the radius)")
    g.add_argument("--noise", type=number("m", low=0), default=None,
                   help="white noise std on contact_x, contact_y in m (default: the rig's contact sensor's; lqg: the "
                        "camera's, the filter's gains stay the rig design's)")
    g.add_argument("--bias", type=number("m", low=0), default=None,
                   help="std of a constant bias per run on contact_x, contact_y in m (default: the rig's fixed "
                        "sensor bias)")
    g.add_argument("--latency-max", type=number("s", low=0), default=None,
                   help="latency uniform in [0, this] s (default: the rig's contact-sensor latency plus actuation "
                        "delay, +- its latency uncertainty). lqr: it delays the commands; lqg: it is the camera's "
                        "plus the rig's actuation delay, and its difference from the rig's nominal (which the filter "
                        "compensates) moves the frames' instant")
    g.add_argument("--offset", type=number("m"), nargs="+", default=None, metavar=("DX", "DY"),
                   help="mean initial contact-point offset in m, as for ballctl track (default 0.05 0)")
    g.add_argument("--offset-std", type=number("m", low=0), default=None,
                   help="std of the initial offset per axis in m, about --offset (default: the rig's)")
    g.add_argument("--failure-error", type=number("m", low=0, low_inclusive=False), default=0.01,
                   help="a run fails above this final error in m (default 0.01)")
    p.add_argument("--out", default="ballctl_montecarlo", help="output folder (default ballctl_montecarlo)")


class _Bar:
    def __init__(self) -> None:
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        pct = int(100 * done / max(total, 1))
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4) + "-" * (25 - pct // 4)
            print(f"\rmonte carlo [{bar}] {pct:3d}% ({done}/{total} runs)", end="", file=sys.stderr, flush=True)
            if done >= total:
                print(file=sys.stderr)


def _offset(args: argparse.Namespace) -> tuple[tuple[float, float], float | None]:
    """``(mean offset (DX, DY) in m, std in m or None)`` of ``--offset`` / ``--offset-std``.

    The one-value form ``--offset S`` of earlier versions was the std; it is read as ``--offset-std S``
    (with a warning).
    """
    if args.offset is None:
        return (0.05, 0.0), args.offset_std
    if len(args.offset) == 2:
        return (float(args.offset[0]), float(args.offset[1])), args.offset_std
    if len(args.offset) == 1:
        if args.offset_std is not None:
            raise ParameterError("argument --offset: takes two values DX DY in m (the mean initial offset, as for "
                                 "ballctl track), got one; the std is --offset-std")
        if args.offset[0] < 0:
            raise ParameterError(f"argument --offset: the one-value form is the std of the initial offset and must "
                                 f"be >= 0 m, got {args.offset[0]:g}; give DX DY for the mean offset")
        warnings.warn(f"--offset {args.offset[0]:g} (one value) is the old form of --offset-std {args.offset[0]:g} "
                      f"and is read so, about the default mean offset 0.05 0 m; --offset now takes DX DY in m, "
                      f"as for ballctl track", BallctlWarning, stacklevel=2)
        return (0.05, 0.0), float(args.offset[0])
    raise ParameterError(f"argument --offset: takes two values DX DY in m, got {len(args.offset)}")


def _uncertainty(args: argparse.Namespace, rig, plant, *, output_feedback: bool = False) -> tuple[object, dict]:
    """The :class:`~ballctl.Uncertainty` of the runs (the rig's unless a flag overrides) and its description.

    With ``output_feedback`` the sensors carry the noise and the rig's own bias (:func:`_truth_sensors`): the
    uncertainty then has no ``noise_std``, and its ``bias`` is the drawn one of ``--bias`` alone.
    """
    from ..simulation.monte_carlo import Normal, Uncertainty, Uniform

    u = rig.uncertainty
    by_signal = {sig: (s, i) for s in rig.sensors for i, sig in enumerate(s.signals)}
    noise = {k: float(by_signal[k][0].noise_std[by_signal[k][1]]) if k in by_signal else 0.0 for k in _CONTACT}
    bias = {k: float(by_signal[k][0].bias[by_signal[k][1]]) if k in by_signal else 0.0 for k in _CONTACT}
    sensor_latency = max((by_signal[k][0].latency_s for k in _CONTACT if k in by_signal), default=0.0)
    latency_nominal = sensor_latency + rig.limits.delay
    mean_offset, offset_std = _offset(args)
    mass_std = u.mass_rel * plant.params.mass if args.mass_std is None else args.mass_std
    radius_std = u.radius_rel * plant.params.radius if args.radius_std is None else args.radius_std
    if args.noise is not None:
        noise = {k: args.noise for k in _CONTACT}
    if offset_std is None:
        offset_std = u.initial_offset_m
    if args.latency_max is not None:
        latency = Uniform(0.0, args.latency_max) if args.latency_max else None
        latency_text = f"uniform in [0, {args.latency_max:g}] s (--latency-max)"
    elif latency_nominal or u.latency_s:
        latency = Uniform(max(latency_nominal - u.latency_s, 0.0), latency_nominal + u.latency_s)
        latency_text = f"uniform in [{latency.low:g}, {latency.high:g}] s (rig)"
    else:
        latency, latency_text = None, "none (rig)"
    if args.bias is not None:
        bias_dist = {k: Normal(0.0, args.bias) for k in _CONTACT} if args.bias else {}
        bias_text = f"std {args.bias:g} m per axis (--bias)"
    else:
        bias_dist = {k: Normal(v, 0.0) for k, v in bias.items() if v}
        bias_text = (f"fixed {', '.join(f'{v:g}' for v in bias.values())} m (rig)" if bias_dist else "none (rig)")
    if output_feedback and args.bias is None:
        bias_dist = {}  # the rig's fixed bias is its sensor's own (_truth_sensors)
    unc = Uncertainty(
        parameters={**({"mass": Normal(plant.params.mass, mass_std)} if mass_std else {}),
                    **({"radius": Normal(plant.params.radius, radius_std)} if radius_std else {})},
        noise_std={} if output_feedback else {k: v for k, v in noise.items() if v},
        bias=bias_dist,
        latency=latency,
        initial_offset={k: Normal(m, offset_std) for k, m in zip(_CONTACT, mean_offset) if m or offset_std})

    def src(flag):
        return flag if getattr(args, flag.lstrip("-").replace("-", "_")) is not None else "rig"

    described = {
        "mass_std_kg": mass_std, "radius_std_m": radius_std, "noise_std_m": noise, "bias": bias_text,
        "latency": latency_text, "nominal_latency_s": latency_nominal, "actuation_delay_s": rig.limits.delay,
        "initial_offset_mean_m": list(mean_offset), "initial_offset_std_m": offset_std,
        "sources": {"mass_std": src("--mass-std"), "radius_std": src("--radius-std"), "noise": src("--noise"),
                    "offset_std": "--offset-std" if args.offset_std is not None or (
                        args.offset is not None and len(args.offset) == 1) else "rig"}}
    return unc, described


def _truth_sensors(args: argparse.Namespace, sensors) -> tuple:
    """The rig's sensors as the runs read them: ``--noise`` sets the contact point's noise std, ``--bias`` replaces
    its fixed bias by the drawn one (the filter's gains stay the design's)."""
    out = []
    for s in sensors:
        contact = [sig in _CONTACT for sig in s.signals]
        noise = tuple(args.noise if c and args.noise is not None else v for c, v in zip(contact, s.noise_std))
        bias = tuple(0.0 if c and args.bias is not None else v for c, v in zip(contact, s.bias))
        out.append(replace(s, noise_std=noise, bias=bias))
    return tuple(out)


def _connect(address: str, timeout: float | None = None):
    """A Dask client of the scheduler at ``address`` with at least one worker, or a one-line ParameterError.

    The address is probed with a plain TCP connection first (a clear reason: refused, unknown host, no
    answer), then the client must connect within ``timeout`` s (default :data:`SCHEDULER_TIMEOUT_S`) and
    see a worker within ``timeout`` s more (a scheduler without workers would run nothing, for ever).
    """
    timeout = SCHEDULER_TIMEOUT_S if timeout is None else timeout
    try:
        from dask.distributed import Client
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError as exc:
        raise ConfigError("--scheduler needs dask.distributed: pip install 'ballctl[distributed]'") from exc
    hint = "start one with `dask scheduler` or drop --scheduler"

    def refuse(reason: str):
        return ParameterError(f"cannot reach the Dask scheduler at {address}: {reason}; {hint}")

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location, 8786)
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"--scheduler {address!r} is not a scheduler address such as tcp://host:8786 "
                             f"({exc})") from None
    if scheme == "tcp":
        reason = _probe(host, int(port), timeout)
        if reason is not None:
            raise refuse(reason)
    import threading

    box: dict = {}

    def connect() -> None:
        try:
            box["client"] = Client(address, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - reported in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=connect, name="ballctl-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + 2.0)
    if thread.is_alive():
        raise refuse(f"it accepts connections but no Dask scheduler answered within {timeout:g} s (is it a "
                     f"scheduler's address?)")
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, (OSError, TimeoutError)):
            raise refuse(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise refuse(f"it answered, but not as a Dask scheduler ({type(exc).__name__})")
    client = box["client"]
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        client.close()
        raise ParameterError(f"the Dask scheduler at {address} has no worker after {timeout:g} s; start one with "
                             f"`dask worker {address}` or drop --scheduler") from None
    return client


def _probe(host: str, port: int, timeout: float) -> str | None:
    """Why a TCP connection to ``host:port`` fails within ``timeout`` s, or None when it opens."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror:
        return f"unknown host {host!r}"
    except ConnectionRefusedError:
        return f"connection refused (nothing listens on port {port})"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)


def run(args: argparse.Namespace) -> int:
    """Design the circle tracker, run the Monte Carlo study, write bands, metrics and a figure.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        Exit status.
    """
    import time
    from concurrent.futures import ThreadPoolExecutor

    from ..ball_plate.design import RIG_DESIGN_PLANTS
    from ..simulation.monte_carlo import MonteCarloSettings, monte_carlo
    from ..linear.partition import Partition
    from ..figures.plotting import save_figure
    from ..design.tracking import LQRWeights, design_tracking_lqr

    for name in ("runs", "chunk_size"):
        if getattr(args, name) < 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.workers < 0:
        raise ParameterError(f"--workers must be >= 0, got {args.workers}")
    out = check_output_folder(args.out, "--out", own_names=OUTPUT_NAMES)
    for name, unit in (("dt", "s"), ("duration", "s")):
        value = getattr(args, name)
        if value is not None and not (value > 0 and value < float("inf")):
            raise ParameterError(f"--{name} must be a finite number > 0 {unit}, got {value}")
    rig = rig_from_spec(args.rig)
    dt = rig.dt if args.dt is None else args.dt
    if args.duration < dt:
        raise ParameterError(f"--duration must be at least one control period --dt = {dt} s, "
                             f"got {args.duration} s")
    if args.duration > MAX_DURATION_S:
        raise ParameterError(f"--duration must be at most {MAX_DURATION_S:g} s (the gains, the filter and every run "
                             f"are stored per control step), got {args.duration:g} s")
    steps = int(round(args.duration / dt))
    if args.runs * steps > MAX_RUN_STEPS:
        raise ParameterError(f"--runs {args.runs:,} over {steps:,} control steps: runs x steps must be at most "
                             f"{MAX_RUN_STEPS:,} (each run's error history is kept); at most "
                             f"{max(MAX_RUN_STEPS // steps, 1):,} runs at this --duration and --dt")
    lqg = args.controller == "lqg"
    plant = rig_ball_plate(args, rig)
    if lqg and dt != rig.dt:  # the rig's sensors must sample at whole numbers of --dt: checked before any work
        try:
            replace(rig, dt=dt)
        except BallctlError as exc:
            why = "; ".join(line.strip() for line in str(exc).splitlines()[1:]) or str(exc)  # the problems alone
            raise ParameterError(f"argument --dt: {dt:g} s does not suit rig {rig.name!r} ({why}); give a whole "
                                 f"fraction of its sensors' periods, or leave --dt at the rig's {rig.dt:g} s") from None
    # the circle must be feasible on the plant (tilt, roll rate): refused before any work, in the flags' terms
    reference = circle_from_flags(args, plant)
    unc, described = _uncertainty(args, rig, plant, output_feedback=lqg)
    client = executor = pool = None
    if args.scheduler:  # before the design: an unreachable cluster is refused at once
        client = _connect(args.scheduler)
        executor = client.get_executor()
    try:
        say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
        say(f"rig {rig.name!r}: ball {plant.params.mass:g} kg, radius {plant.params.radius:g} m; drawn per run: "
            f"mass std {described['mass_std_kg']:.3g} kg, radius std {described['radius_std_m']:.3g} m, noise "
            f"{', '.join(f'{v:g}' for v in described['noise_std_m'].values())} m, bias {described['bias']}, "
            f"latency {described['latency']}, initial offset {tuple(described['initial_offset_mean_m'])} m "
            f"+- {described['initial_offset_std_m']:g} m")
        # the plant the tracker is designed on (its complex-step kernels compile aside, with the loop)
        linearized = (RIG_DESIGN_PLANTS[args.design if lqg else "qs-paper"],)
        with compile_progress(say, loop_aside=True, complex_step=linearized):  # a first run: said, compiled aside
            started = time.perf_counter()
            settings = MonteCarloSettings(chunk_size=args.chunk_size, executor=executor,
                                          failure_error=args.failure_error, progress=_Bar())
            if lqg:
                say(f"designing the tracker: {args.design}, output feedback through the rig's Kalman filter, "
                    f"offset-free (as ballctl track); dt {dt} s, {steps} steps")
                ctrl, on_rig = _rig_tracker(args, rig, dt, steps, unc, described)
            else:
                say(f"designing the tracker: the paper's 6-state state-feedback LQR on the quasi-static plate; "
                    f"dt {dt} s, {steps} steps")
                described["truth"] = "the quasi-static design plant (the ball drawn per run), no limits"
                part = Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
                ctrl = design_tracking_lqr(plant, reference, part, dt=dt, horizon=steps * dt,
                                           weights=LQRWeights(states=part.state_names[:6],
                                                              max_state_errors=MAX_STATE_ERRORS,
                                                              max_input_errors={"alpha": np.deg2rad(3.0),
                                                                                "beta": np.deg2rad(3.0)}))
                on_rig = {}
            design_time = time.perf_counter() - started
            if executor is None and args.workers:
                executor = pool = ThreadPoolExecutor(args.workers)
                settings = replace(settings, executor=executor)
            mc = monte_carlo(ctrl, args.runs, uncertainty=unc, seed=args.seed, settings=settings, **on_rig)
    finally:
        if pool is not None:
            pool.shutdown()
        if client is not None:
            client.close()
    final = np.asarray(mc.metrics["final_error"], dtype=float)
    rms = np.asarray(mc.metrics["steady_state_error"], dtype=float)
    diverged = int(np.sum(~np.isfinite(final)))
    summary = {"runs": mc.n_runs, "controller": args.controller,
               "design": args.design if lqg else "qs-paper state feedback",
               "offset_free": described.pop("offset_free", False),
               "truth": described.pop("truth"),
               "failure_rate": mc.failure_rate, "failure_error_m": mc.failure_error,
               "diverged_runs": diverged, "wall_time_s": mc.wall_time_s, "design_time_s": design_time,
               "rig": rig.name, "dt_s": dt, "uncertainty": described,
               "final_error_m": {f"p{q:g}": _percentile(final, q) for q in mc.percentiles},
               "rms_error_m": {f"p{q:g}": _percentile(rms, q) for q in mc.percentiles},
               "rms_window": "the last 20 % of the run"}
    with atomic_directory(out, flag="--out", own_names=OUTPUT_NAMES) as folder:   # whole, or not at all
        save_figure(mc.plot(), folder / "error_bands.png")
        (folder / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        np.savez(folder / "runs.npz", t_s=mc.t, bands_m=mc.bands, percentiles=mc.percentiles,
                 **{f"metric_{k}": v for k, v in mc.metrics.items()},
                 **{f"sample_{k}": v for k, v in mc.samples.items()})

    def show(block):
        return ", ".join(f"{k} {'diverged' if v is None else f'{v:.3g} m'}" for k, v in block.items())

    print(f"{args.controller} ({summary['design']}): {mc.n_runs} runs in {mc.wall_time_s:.2f} s (design "
          f"{design_time:.2f} s); failure rate {100 * mc.failure_rate:.1f} % ({diverged} diverged); final error "
          f"{show(summary['final_error_m'])}; RMS error over the last 20 % {show(summary['rms_error_m'])}; "
          f"wrote {out}")
    if not lqg and mc.failure_rate > 0 and unc.latency is not None:
        print(f"note: the drawn latency ({described['latency']}) is not compensated by this state-feedback tracker; "
              f"compare --latency-max 0, or the default --controller lqg (the rig's Kalman filter compensates the "
              f"rig's latency)", file=sys.stderr)
    return 0


def _rig_tracker(args: argparse.Namespace, rig, dt: float, steps: int, unc, described: dict) -> tuple[object, dict]:
    """The rig-aware tracker (``design_for_rig``, output feedback, offset-free) and where its runs run.

    Returns
    -------
    controller : TrackingController
        The design, its filter reading the truth's sensors (:func:`_truth_sensors`).
    on_rig : dict
        The :func:`ballctl.monte_carlo` arguments of ``ballctl track``'s verification: the rig's servo-plate
        truth with its imperfections, its initial state, the rig's limits, loop imperfections and divergence stop.
    """
    from ..ball_plate.design import DISTURBANCE_FADE, DISTURBANCE_START, design_for_rig
    from ..references import CircularMotion, LissajousPath
    from ..references.moving_plate import exact_circular_motion
    from ..simulation.closed_loop import ClosedLoopOptions

    given = {k: v for k, v in (("mass", args.mass), ("radius", args.ball_radius), ("inertia", args.inertia),
                               ("gravity", args.gravity)) if v is not None}
    if given:
        rig = replace(rig, ball=replace(rig.ball, **given))
    if dt != rig.dt:
        rig = replace(rig, dt=dt)   # the rig checks its sensors' periods against it
    horizon = steps * dt
    center = tuple(args.center)
    design_plant = rig.design_plant()
    if args.design == "exact":
        ref = exact_circular_motion(design_plant, LissajousPath.circle(args.radius, args.omega, center=center),
                                    args.roll_rate, duration=horizon + 2 * dt)
        s0 = ref(0.0)
        x0, xd0 = s0.x.copy(), s0.xd.copy()
    else:
        ref = CircularMotion(design_plant.quasi_static(), args.radius, args.omega, args.roll_rate, center=center)
        s0 = ref(0.0)
        x0, xd0 = np.concatenate([s0.x, s0.u]), np.concatenate([s0.xd, s0.ud])  # the plate at its angles
    # offset-free as ballctl track, once the run is long enough for its level-error states to fade in (they are
    # zero, hence unobservable, before DISTURBANCE_START)
    offset_free = horizon >= DISTURBANCE_START + DISTURBANCE_FADE - 1e-9
    if not offset_free:
        print(f"note: a run of {horizon:g} s is shorter than the {DISTURBANCE_START + DISTURBANCE_FADE:g} s the "
              f"offset-free filter's level-error states take to fade in: designing the plain LQG", file=sys.stderr)
    described["offset_free"] = offset_free
    ctrl = design_for_rig(rig, ref, args.design, horizon=horizon, output_feedback=True, offset_free=offset_free)
    est = ctrl.estimator
    ctrl = replace(ctrl, estimator=replace(est, sensors=_truth_sensors(args, est.sensors)))
    for key in unc.bias:
        if key not in est.signal_names:
            raise ParameterError(f"--bias: the rig's filter does not read {key!r}; it reads {est.signal_names}")
    divergence = max(0.2, 2 * args.radius)
    imp = rig.imperfections
    described["truth"] = (f"the rig's servo plate with its imperfections (level error "
                          f"{', '.join(f'{np.rad2deg(v):.3g}' for v in imp.plate_offset)} deg, rolling resistance "
                          f"{imp.rolling_resistance:g}; {100 * imp.frame_drop:g} % frames lost, dead band "
                          f"{np.rad2deg(imp.servo_deadband):.3g} deg, timing jitter {1e3 * imp.timing_jitter_s:g} ms) "
                          f"and limits; a run stops farther than {divergence:g} m from the path")
    described["filter_latency_steps"] = est.latency_steps
    # as ballctl track: RK4 steps <= 10 ms for the servos
    options = ClosedLoopOptions(method="rk4", limits=rig.limits, imperfections=imp.loop,
                                substeps=max(2, int(np.ceil(dt / 0.01 - 1e-9))), divergence_error=divergence)
    return ctrl, {"truth": rig.truth_plant(), "x0": rig.truth_initial_state(x0), "xd0": xd0, "options": options}


def _percentile(values: np.ndarray, q: float) -> float | None:
    """The ``q``-th percentile (linear, as numpy's) with diverged (non-finite) runs ranked last; None when it
    falls among them."""
    v = np.sort(np.where(np.isfinite(values), values, np.inf))
    pos = q / 100.0 * (v.size - 1)
    lo, hi = int(np.floor(pos)), int(np.ceil(pos))
    if not np.isfinite(v[hi]):
        return None
    return float(v[lo] + (pos - lo) * (v[hi] - v[lo]))
