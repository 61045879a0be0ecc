"""Benchmark the paper's rolling ball (section 7): t in [0, 20], rtol = atol = 1e-10.

Reports the cost of one compiled RHS call (compiled rail geometry vs the same rails as
CallableRails, whose geometry is evaluated in Python before the same dynamics kernel), RHS
evaluations per second and wall time for DOP853 and Radau, the generalized-coordinate form
(``RollingBallSystem.accelerations``) on a stack vs one state at a time, and the throughput of a
vectorised batch mode: ``RollingBall.rhs`` accepts a ``(batch, 15)`` state stack, which is integrated
(a) as one big system by DOP853 (``RollingBall.simulate`` of a stack) and (b) by a fixed-step
classical RK4 on the stack. ``--cold`` also times the first calls in fresh processes, with an empty
numba cache and then with the cache on disk.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_rolling_ball.py [--batch 256] [--cold]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from ballctl.simulate import rk4
from ballctl.ode import IntegrationOptions
from ballctl.plants.internal_masses import PointMass
from ballctl.plants.paper import (PAPER_KINK_TIMES, paper_ball_initial_state, paper_ball_parameters,
                                  paper_rail_acceleration)
from ballctl.plants.rails import CallableRail
from ballctl.plants.rolling_ball import RollingBall

__all__ = ["main", "rk4_batch", "cold_compile"]

_FIRST_CALLS = r'''
import time
import numpy as np
from ballctl.plants.paper import (paper_ball_initial_state, paper_ball_parameters, paper_disk_initial_state,
                                  paper_disk_parameters)
from ballctl.plants.rolling_ball import RollingBall
from ballctl.plants.rolling_disk import RollingDisk
ball, x0 = RollingBall(paper_ball_parameters()), paper_ball_initial_state()
disk, d0 = RollingDisk(paper_disk_parameters()), paper_disk_initial_state()
bs, ds = ball.to_constrained_system(), disk.to_constrained_system()
steps = [("ball rhs", lambda: ball.rhs(0.0, x0, np.ones(3))),
         ("ball rhs complex", lambda: ball.rhs_jacobian(0.0, x0, np.ones(3))),
         ("ball system", lambda: bs.accelerations(*bs.from_ode_state(x0), np.ones(3))),
         ("disk rhs", lambda: disk.rhs(0.0, d0, np.ones(4))),
         ("disk rhs complex", lambda: disk.rhs_jacobian(0.0, d0, np.ones(4))),
         ("disk system", lambda: ds.accelerations(*ds.from_ode_state(d0), np.ones(4)))]
out = []
for label, fn in steps:
    t0 = time.perf_counter()
    fn()
    out.append(f"{label} {time.perf_counter() - t0:.2f} s")
print("; ".join(out))
'''


def cold_compile() -> None:
    """Time the first calls of every rolling ball/disk kernel in fresh processes (empty numba cache, then warm)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("empty numba cache", "numba cache on disk"):
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, "-c", _FIRST_CALLS], env=env, capture_output=True, text=True,
                                 check=True)
            print(f"first calls, {label}: {time.perf_counter() - t0:.1f} s wall incl. imports; {res.stdout.strip()}")


def rk4_batch(fun, t_span, x0, dt: float) -> np.ndarray:
    """Classical RK4 with step ``dt`` (s) on a state stack ``(batch, nx)``; returns the final stack.

    The step grid includes the paper's kinks at 0.1 and 0.2 s when ``dt`` divides them.
    """
    t0, t1 = t_span
    steps = int(round((t1 - t0) / dt))
    return rk4(fun, x0, t0, steps * dt, steps)


def main(argv=None) -> int:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256, help="number of initial conditions in batch mode")
    parser.add_argument("--cold", action="store_true", help="also time the first calls with an empty numba cache")
    args = parser.parse_args(argv)
    if args.cold:
        cold_compile()
    params = paper_ball_parameters()
    ball = RollingBall(params)
    python_rails = RollingBall(dataclasses.replace(params, point_masses=tuple(
        PointMass(mass_kg=pm.mass_kg, rail=CallableRail(function=pm.rail.evaluate)) for pm in params.point_masses)))
    x0 = paper_ball_initial_state()
    u = lambda t: paper_rail_acceleration(t) * np.ones(3)  # noqa: E731

    reps = 2000
    u0 = u(0.05)
    for label, plant in (("compiled rails", ball), ("Python rail geometry", python_rails)):
        plant.rhs(0.05, x0, u0)
        t0 = time.perf_counter()
        for _ in range(reps):
            plant.rhs(0.05, x0, u0)
        per_call = (time.perf_counter() - t0) / reps
        print(f"single RHS call, {label}: {per_call * 1e6:.1f} us  ({1 / per_call:,.0f} RHS/s)")

    system = ball.to_constrained_system()
    rng = np.random.default_rng(1)
    K = 1000
    X, XD = system.from_ode_state(x0)
    XS = X + 0.1 * rng.normal(size=(K, X.shape[0]))
    XDS = XD + 0.1 * rng.normal(size=(K, X.shape[0]))
    US = rng.normal(size=(K, 3))
    system.accelerations(XS[:2], XDS[:2], US[:2])
    t0 = time.perf_counter()
    stacked = system.accelerations(XS, XDS, US)[0]
    t_stack = time.perf_counter() - t0
    t0 = time.perf_counter()
    looped = np.array([system.accelerations(a, b, c)[0] for a, b, c in zip(XS, XDS, US)])
    t_loop = time.perf_counter() - t0
    print(f"RollingBallSystem.accelerations, {K} states: stack {t_stack * 1e6 / K:.2f} us/state, "
          f"one at a time {t_loop * 1e6 / K:.1f} us/state (ratio {t_loop / t_stack:.0f}); "
          f"max difference {np.max(np.abs(stacked - looped)):.1e}")

    runs = {}
    for method in ("DOP853", "Radau"):
        run = ball.simulate(x0, (0.0, 20.0), u, breakpoints=PAPER_KINK_TIMES,
                            options=IntegrationOptions(method=method, rtol=1e-10, atol=1e-10))
        runs[method] = run
        print(f"{method:7s}: wall {run.wall_time_s:6.3f} s, {run.nfev:6d} RHS evals "
              f"({run.nfev / run.wall_time_s:,.0f} RHS/s incl. solver overhead)")
    diff = np.max(np.abs(runs["DOP853"].x[-1] - runs["Radau"].x[-1]))
    print(f"max |x_DOP853(20) - x_Radau(20)| = {diff:.2e}")

    # batch: perturbed initial rail angles, all integrated at once
    rng = np.random.default_rng(0)
    B = args.batch
    X0 = np.tile(x0, (B, 1))
    X0[:, :3] += 1e-2 * rng.normal(size=(B, 3))
    start = time.perf_counter()
    stack = ball.simulate(X0, (0.0, 20.0), u, breakpoints=PAPER_KINK_TIMES,
                          t_eval=[20.0], options=IntegrationOptions(method="DOP853", rtol=1e-10, atol=1e-10))
    wall = time.perf_counter() - start
    y = stack.x[:, -1]
    print(f"batch {B} as one DOP853 system (RollingBall.simulate of a stack): wall {wall:.2f} s, {stack.nfev} "
          f"stacked RHS evals, {B * 20.0 / wall:,.0f} simulated-s per wall-s, {B / wall:.1f} trajectories/s")

    dt = 1e-2
    start = time.perf_counter()
    XT = rk4_batch(lambda t, X: ball.rhs(t, X, np.broadcast_to(u(t), (B, 3))), (0.0, 20.0), X0, dt)
    wall_rk = time.perf_counter() - start
    err = np.max(np.abs(XT - y))
    print(f"batch {B} fixed-step RK4 (dt = {dt} s): wall {wall_rk:.2f} s, {B / wall_rk:.1f} trajectories/s, "
          f"max deviation from DOP853 {err:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
