"""``ballctl montecarlo``: many closed-loop runs of the circle tracker on uncertain balls."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .._errors import ConfigError, ParameterError
from ._common import add_ball_arguments, add_circle_arguments, ball_plate, circle

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "montecarlo"
HELP = "Monte Carlo of the circle tracker: uncertain ball, noisy biased sensors, latency; bands and failure rate"

MAX_STATE_ERRORS = {"contact_x": 0.01, "contact_y": 0.01, "yaw": 0.5,
                    "contact_x_rate": 0.1, "contact_y_rate": 0.1, "yaw_rate": 5.0}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add this subcommand's flags.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser.
    """
    add_ball_arguments(p)
    add_circle_arguments(p)
    g = p.add_argument_group("runs")
    g.add_argument("--runs", type=int, default=200, help="number of runs (default 200)")
    g.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    g.add_argument("--chunk-size", type=int, default=50, help="runs per chunk (default 50)")
    g.add_argument("--workers", type=int, default=0,
                   help="threads for the chunks (default 0: this thread; the compiled loop releases the GIL)")
    g.add_argument("--scheduler", default=None,
                   help="address of a Dask scheduler (tcp://host:8786); needs ballctl[distributed]")
    g.add_argument("--dt", type=float, default=0.01, help="controller sample time in s (default 0.01)")
    g.add_argument("--duration", type=float, default=4 * np.pi, help="run length in s (default 4 pi)")
    g = p.add_argument_group("uncertainty (standard deviations)")
    g.add_argument("--mass-std", type=float, default=0.0, help="ball mass in kg")
    g.add_argument("--radius-std", type=float, default=0.0, help="ball radius in m")
    g.add_argument("--noise", type=float, default=0.0, help="white noise on contact_x, contact_y in m")
    g.add_argument("--bias", type=float, default=0.0, help="constant bias on contact_x, contact_y in m")
    g.add_argument("--latency-max", type=float, default=0.0, help="latency uniform in [0, this] s")
    g.add_argument("--offset", type=float, default=0.0, help="initial offset of contact_x, contact_y in m")
    g.add_argument("--failure-error", type=float, default=0.01, help="a run fails above this final error in m")
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


def run(args: argparse.Namespace) -> int:
    """Design the circle tracker, run the Monte Carlo study, write bands, metrics and a figure.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ..simulation.monte_carlo import MonteCarloSettings, Normal, Uncertainty, Uniform, monte_carlo
    from ..linear.partition import Partition
    from ..figures.plotting import save_figure
    from ..design.tracking import LQRWeights, design_tracking_lqr

    for name in ("runs", "chunk_size"):
        if getattr(args, name) < 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name, unit in (("dt", "s"), ("duration", "s")):
        value = getattr(args, name)
        if not (value > 0 and value < float("inf")):
            raise ParameterError(f"--{name} must be a finite number > 0 {unit}, got {value}")
    if args.duration < args.dt:
        raise ParameterError(f"--duration must be at least one control period --dt = {args.dt} s, "
                             f"got {args.duration} s")
    for name in ("mass_std", "radius_std", "noise", "bias", "latency_max", "offset", "workers"):
        if getattr(args, name) < 0:
            raise ParameterError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    plant = ball_plate(args)
    ref = circle(args, plant)
    part = Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    steps = int(round(args.duration / args.dt))
    print(f"designing the tracker: dt {args.dt} s, {steps} steps", file=sys.stderr)
    ctrl = design_tracking_lqr(plant, ref, part, dt=args.dt, horizon=steps * args.dt,
                               weights=LQRWeights(states=part.state_names[:6], max_state_errors=MAX_STATE_ERRORS,
                                                  max_input_errors={"alpha": np.deg2rad(3.0), "beta": np.deg2rad(3.0)}))
    xy = ("contact_x", "contact_y")
    unc = Uncertainty(
        parameters={**({"mass": Normal(plant.params.mass, args.mass_std)} if args.mass_std else {}),
                    **({"radius": Normal(plant.params.radius, args.radius_std)} if args.radius_std else {})},
        noise_std={k: args.noise for k in xy} if args.noise else {},
        bias={k: Normal(0.0, args.bias) for k in xy} if args.bias else {},
        latency=Uniform(0.0, args.latency_max) if args.latency_max else None,
        initial_offset={k: Normal(0.0, args.offset) for k in xy} if args.offset else {})
    client = executor = pool = None
    if args.scheduler:
        try:
            from dask.distributed import Client
        except ImportError as exc:
            raise ConfigError("--scheduler needs dask.distributed: pip install 'ballctl[distributed]'") from exc
        client = Client(args.scheduler)
        executor = client.get_executor()
    elif args.workers:
        executor = pool = ThreadPoolExecutor(args.workers)
    try:
        mc = monte_carlo(ctrl, args.runs, uncertainty=unc, seed=args.seed,
                         settings=MonteCarloSettings(chunk_size=args.chunk_size, executor=executor,
                                                     failure_error=args.failure_error, progress=_Bar()))
    finally:
        if pool is not None:
            pool.shutdown()
        if client is not None:
            client.close()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_figure(mc.plot(), out / "error_bands.png")
    summary = {"runs": mc.n_runs, "failure_rate": mc.failure_rate, "failure_error_m": mc.failure_error,
               "wall_time_s": mc.wall_time_s,
               "final_error_m": {f"p{q:g}": float(np.nanpercentile(mc.metrics["final_error"], q))
                                 for q in mc.percentiles}}
    tmp = out / ".summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2))
    tmp.replace(out / "summary.json")
    np.savez(out / "runs.npz", t_s=mc.t, bands_m=mc.bands, percentiles=mc.percentiles,
             **{f"metric_{k}": v for k, v in mc.metrics.items()}, **{f"sample_{k}": v for k, v in mc.samples.items()})
    print(f"{mc.n_runs} runs in {mc.wall_time_s:.2f} s; failure rate {100 * mc.failure_rate:.1f} %; "
          f"median final error {summary['final_error_m'].get('p50', float('nan')):.3g} m; wrote {out}")
    return 0
