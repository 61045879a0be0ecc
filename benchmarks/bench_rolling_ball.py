"""Benchmark the paper's rolling ball (section 7): t in [0, 20], rtol = atol = 1e-10.

Reports RHS evaluations per second and wall time for DOP853 and Radau, and the throughput of a
vectorised batch mode: ``RollingBall.rhs`` accepts a ``(batch, 15)`` state stack, which is integrated
(a) as one big system by DOP853 and (b) by a fixed-step classical RK4 on the stack.

Usage::

    python benchmarks/bench_rolling_ball.py [--batch 256]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

from ballctl.simulate import rk4
from ballctl.plants.paper import (PAPER_KINK_TIMES, paper_ball_initial_state, paper_ball_parameters,
                                  paper_rail_acceleration)
from ballctl.plants.rolling_ball import RollingBall

__all__ = ["main", "rk4_batch"]


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
    args = parser.parse_args(argv)
    ball = RollingBall(paper_ball_parameters())
    x0 = paper_ball_initial_state()
    u = lambda t: paper_rail_acceleration(t) * np.ones(3)  # noqa: E731

    t0 = time.perf_counter()
    reps = 2000
    for _ in range(reps):
        ball.rhs(0.05, x0, u(0.05))
    per_call = (time.perf_counter() - t0) / reps
    print(f"single RHS call: {per_call * 1e6:.1f} us  ({1 / per_call:,.0f} RHS/s)")

    runs = {}
    for method in ("DOP853", "Radau"):
        run = ball.simulate(x0, (0.0, 20.0), u, method=method, rtol=1e-10, atol=1e-10, breakpoints=PAPER_KINK_TIMES)
        runs[method] = run
        print(f"{method:7s}: wall {run.wall_time_s:6.2f} s, {run.nfev:6d} RHS evals "
              f"({run.nfev / run.wall_time_s:,.0f} RHS/s incl. solver overhead)")
    diff = np.max(np.abs(runs["DOP853"].x[-1] - runs["Radau"].x[-1]))
    print(f"max |x_DOP853(20) - x_Radau(20)| = {diff:.2e}")

    # batch: perturbed initial rail angles, all integrated at once
    rng = np.random.default_rng(0)
    B = args.batch
    X0 = np.tile(x0, (B, 1))
    X0[:, :3] += 1e-2 * rng.normal(size=(B, 3))
    nx = X0.shape[1]
    fun_flat = lambda t, y: ball.rhs(t, y.reshape(B, nx), np.broadcast_to(u(t), (B, 3))).ravel()  # noqa: E731
    start = time.perf_counter()
    y = X0.ravel()
    nfev = 0
    for a, b in ((0.0, 0.1), (0.1, 0.2), (0.2, 20.0)):
        sol = solve_ivp(fun_flat, (a, b), y, method="DOP853", rtol=1e-10, atol=1e-10)
        y, nfev = sol.y[:, -1], nfev + sol.nfev
    wall = time.perf_counter() - start
    print(f"batch {B} as one DOP853 system: wall {wall:.2f} s, {nfev} stacked RHS evals, "
          f"{B * 20.0 / wall:,.0f} simulated-s per wall-s, {B / wall:.1f} trajectories/s")

    dt = 1e-2
    start = time.perf_counter()
    XT = rk4_batch(lambda t, X: ball.rhs(t, X, np.broadcast_to(u(t), (B, 3))), (0.0, 20.0), X0, dt)
    wall_rk = time.perf_counter() - start
    err = np.max(np.abs(XT - y.reshape(B, nx)))
    print(f"batch {B} fixed-step RK4 (dt = {dt} s): wall {wall_rk:.2f} s, {B / wall_rk:.1f} trajectories/s, "
          f"max deviation from DOP853 {err:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
