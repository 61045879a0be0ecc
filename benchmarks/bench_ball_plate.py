"""Benchmark the ball-plate pipeline along the paper's circle (rho 0.5 m, omega 1 rad/s, roll rate 40 rad/s).

Rows (wall time with ``time.perf_counter``, best of ``--repeat`` runs for the fast stages):

1. linearization (eqs. 13-20) at 10,000 samples over one period;
2. linearization at the control grid, dt = 1 ms over 4*pi s (12,567 samples);
3. exact zero-order-hold discretization (eq. 23) of that LTV system;
4. the finite-horizon Riccati sweep (eqs. 28-29), Q = I, R = I, Q_N = 10 I (8 states);
5. an open-loop nonlinear simulation over 4*pi s under u0(t), DOP853, rtol 1e-10;
6. if ``ballctl.simulate_closed_loop`` exists: the closed loop over 4*pi s at 1 ms control steps
   (6-state controller of the (contact_x, contact_y, yaw) subsystem, ball starting 2 cm outside the circle),
   reported as a ratio to real time. The paper reports 11.5 s for 12.56 s (Intel i7-6700HQ).

Usage::

    python benchmarks/bench_ball_plate.py [--quick] [--repeat 3] [--blas-threads 1]

``--quick`` divides every horizon and sample count by 10 (for a smoke run).

BLAS threads: the matrices are tiny (8x8 to 10x10), so threads only add synchronisation, and on a
loaded or shared machine multi-threaded OpenBLAS spin-waits: the batched ``expm`` of the ZOH stage was
measured at 0.2 to 9.8 s for 1,257 steps with the default threads on 2 busy cores, against a steady
8 ms with one thread. The script therefore sets ``OPENBLAS_NUM_THREADS`` (and the OpenMP/MKL
equivalents) to ``--blas-threads`` (default 1) before numpy is imported; it can only do so when run as
a script, and the header says which setting was in effect.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

__all__ = ["main"]

PAPER_CLOSED_LOOP = (11.5, 12.56)  # s of wall time, s of simulated time (Agúndez et al. 2024, section 4)


def _best(fn, repeat: int):
    """Best wall time in s over ``repeat`` calls and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv=None) -> dict:
    """Run the benchmark, print a table and return the timings in s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one tenth of every horizon and sample count")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of the fast stages (best is kept)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS/OpenMP threads, set before numpy is imported (default 1)")
    args = parser.parse_args(argv)
    if "numpy" not in sys.modules:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.blas_threads)
        blas = f"BLAS threads {args.blas_threads}"
    else:
        blas = f"BLAS threads: numpy already imported, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    import numpy as np

    import ballctl

    scale = 10 if args.quick else 1
    repeat = max(1, args.repeat)

    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, radius=0.5, omega=1.0, roll_rate=40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    dt = 1e-3
    horizon = 4 * np.pi / scale
    rows: list[tuple[str, str, float, str]] = []
    timings: dict[str, float] = {}

    K1 = 10_000 // scale
    t1 = np.linspace(0.0, ref.period, K1)
    sec, ltv1 = _best(lambda: ballctl.linearize(plant, ref, t1, part), repeat)
    timings["linearize_period"] = sec
    rows.append(("linearize, one period", f"{K1} samples", sec, f"{sec / K1 * 1e6:.1f} us/sample"))

    K2 = int(np.floor(horizon / dt)) + 1  # 12,567 for 4*pi s
    t2 = dt * np.arange(K2)
    sec, ltv2 = _best(lambda: ballctl.linearize(plant, ref, t2, part), repeat)
    timings["linearize_grid"] = sec
    rows.append(("linearize, dt = 1 ms grid", f"{K2} samples", sec, f"{sec / K2 * 1e6:.1f} us/sample"))

    sec, disc = _best(lambda: ballctl.discretize(ltv2, dt), repeat)
    timings["discretize_zoh"] = sec
    rows.append(("discretize (exact ZOH)", f"{K2} x (8+2)^2 expm", sec, f"{sec / K2 * 1e6:.1f} us/step"))

    N = ltv2.n_states
    sec, lqr = _best(lambda: ballctl.finite_horizon_lqr(disc, np.eye(N), np.eye(2), Q_N=10 * np.eye(N)), repeat)
    timings["riccati"] = sec
    rows.append(("finite-horizon Riccati sweep", f"{K2} steps, N = {N}", sec, f"{sec / K2 * 1e6:.1f} us/step"))

    s0 = ref(0.0)
    start = time.perf_counter()
    run = ballctl.simulate(plant, s0.x, s0.xd, lambda t: ref(t).u, (0.0, horizon),
                           options=ballctl.SimulationOptions(rtol=1e-10))
    sec = time.perf_counter() - start
    timings["open_loop"] = sec
    drift = float(np.abs(run.x[:, :2] - ref(run.t).x[:, :2]).max())
    rows.append(("open loop NL, DOP853 rtol 1e-10", f"{horizon:.4g} s, {run.nfev} RHS", sec,
                 f"{sec / horizon:.3f} x real time; drift {drift:.1e} m"))

    closed = getattr(ballctl, "simulate_closed_loop", None)
    design = getattr(ballctl, "design_tracking_lqr", None)
    if design is None:
        from ballctl.design import tracking  # noqa: PLC0415 - optional, may not exist yet
        design = getattr(tracking, "design_tracking_lqr", None)
    skipped = None
    if closed is None or design is None:
        skipped = "ballctl.simulate_closed_loop is not available: closed loop skipped"
    else:
        steps = int(np.floor(horizon / dt))
        start = time.perf_counter()
        ctrl = design(plant, ref, part, dt=dt, horizon=steps * dt, states=part.state_names[:6],
                      Q=np.eye(6), R=np.eye(2), Q_N=10 * np.eye(6))
        sec = time.perf_counter() - start
        timings["design"] = sec
        rows.append(("design_tracking_lqr (lin+ZOH+LQR)", f"{steps} steps, 6 states", sec, ""))
        x0 = s0.x.copy()
        x0[0] += 0.02  # 2 cm outside the circle
        start = time.perf_counter()
        res = closed(ctrl, x0, s0.xd)
        sec = time.perf_counter() - start
        timings["closed_loop"] = sec
        simulated = steps * dt
        final = ""
        for name in ("x", "X", "states"):
            arr = getattr(res, name, None)
            if arr is not None and np.ndim(arr) == 2 and np.shape(arr)[1] >= 2 and name == "x":
                tt = getattr(res, "t", None)
                if tt is not None and len(tt) == len(arr):
                    final = f"; final error {np.hypot(*(arr[-1, :2] - ref(tt[-1]).x[:2])):.1e} m"
                break
        rows.append(("closed loop NL, dt = 1 ms, DOP853", f"{simulated:.4g} s, {steps} steps", sec,
                     f"{sec / simulated:.3f} x real time{final} "
                     f"(paper {PAPER_CLOSED_LOOP[0] / PAPER_CLOSED_LOOP[1]:.2f})"))
        start = time.perf_counter()
        res_rk4 = closed(ctrl, x0, s0.xd, options=ballctl.ClosedLoopOptions(method="rk4", substeps=1))
        sec = time.perf_counter() - start
        gap = np.abs(res_rk4.x[:, :2] - res.x[:, :2]).max()
        rows.append(("closed loop NL, dt = 1 ms, RK4", f"{simulated:.4g} s, {steps} steps", sec,
                     f"{sec / simulated:.3f} x real time; differs from DOP853 by {gap:.1e} m"))

    print(f"ball-plate pipeline benchmark  ({platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, numpy {np.__version__}, {blas}{', QUICK' if args.quick else ''})")
    print(f"{'stage':36} {'size':28} {'wall [s]':>9}  notes")
    print("-" * 110)
    for stage, size, sec, note in rows:
        print(f"{stage:36} {size:28} {sec:9.3f}  {note}")
    if skipped:
        print(skipped)
    return timings


if __name__ == "__main__":
    main()
