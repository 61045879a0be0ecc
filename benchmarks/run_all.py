"""Every performance target of the engine issue next to its peer, measured in one run (same-run ratios).

Rows:

1. closed loop, 4*pi s at 1 ms on the nonlinear ball-plate (TV-LQR, 6 states, 2 cm offset), warm:
   ballctl's compiled RK4 loop vs the same RK4 loop hand-written in numpy (np.linalg.solve of the
   7x7 index-1 matrix) and vs ballctl's own Python loop; target >= 100x real time and >= 6x the
   hand-written loop;
   1b. the default rig's verification loop of ``ballctl track`` (LQG with a 50 Hz camera, 30 ms latency
   and noise, the exact design on the servo plate, tilt/slew/quantum limits), 4*pi s at 20 ms: compiled
   vs ballctl's Python loop, with their agreement;
2. the first call of that loop in a fresh process: cold (empty numba cache) and with the on-disk cache
   (target <= 2 s), each measured in a subprocess;
3. Monte Carlo, 1,000 runs of 4*pi s at 10 ms with noise, bias, latency, mass/radius uncertainty and
   initial offsets: serially, on 2 threads, and through a dask.distributed LocalCluster with 2 workers
   (target <= 20 s); peer: ballctl's Python loop, run on a few runs and scaled;
4. linearization of 10^4 samples of the circle, warm (target <= 0.05 s); peer: sympy's linearizer when
   sympy is installed;
5. the finite-horizon Riccati sweep, 12,566 steps (4*pi s at 1 ms), N = 8, vs a plain numpy sweep (target <= 1.2x);
6. the paper's rolling ball, t in [0, 20] at rtol 1e-10, warm (target <= 0.1 s); peer: the same rails
   as CallableRails (rail geometry in Python per call, same dynamics kernel).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/run_all.py [--quick] [--repeat 3]

``--quick`` shortens every horizon and run count by 10 (a smoke run). Numbers are wall times with
``time.perf_counter``, best of ``--repeat`` for the fast rows; on a shared machine compare the ratios,
which are measured back to back in the same process.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time

__all__ = ["main", "handwritten_closed_loop", "plain_riccati"]

if "numpy" not in sys.modules:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402


CPU: dict[int, float] = {}


def _best(fn, repeat: int):
    """Best wall time over ``repeat`` calls and the last result; the CPU time of this process for the
    best call is kept in ``CPU[id(result)]`` (on a shared machine wall time includes waiting for a core)."""
    best, out, cpu = float("inf"), None, float("inf")
    for _ in range(repeat):
        start, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall = time.perf_counter() - start
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    CPU[id(out)] = cpu
    return best, out


def _cpu(out) -> str:
    return f"cpu {CPU.get(id(out), float('nan')):.3g} s"


def handwritten_closed_loop(params, x0, xd0, t, x_ref, xd_ref, u_ref, gains, selection, a=10.0):
    """The closed loop in plain numpy: hand-written ball-plate equations, KKT by np.linalg.solve, RK4.

    Parameters
    ----------
    params : (mass, radius, inertia, gravity)
        SI units.
    x0, xd0 : ndarray, shape (5,)
    t : ndarray, shape (K,)
        Control times in s.
    x_ref, xd_ref : ndarray, shape (K, 5)
    u_ref : ndarray, shape (K, 2)
    gains : ndarray, shape (K - 1, 2, N)
    selection : ndarray, shape (N,)
        Controller states as indices into ``(x, xd)``.
    a : float
        Baumgarte gain in 1/s.

    Returns
    -------
    ndarray, shape (K, 10)
        ``(x, xd)`` at the control times.
    """
    m, R, inertia, g = params[:4]   # no rolling resistance in this hand-written peer
    kkt = np.zeros((7, 7))
    kkt[0, 0] = kkt[1, 1] = m

    def rhs(y, u):
        x, xd = y[:5], y[5:]
        cps, sps, cph, sph = np.cos(x[2]), np.sin(x[2]), np.cos(x[3]), np.sin(x[3])
        dpsi, dphi, dth = xd[2], xd[3], xd[4]
        kkt[2, 2] = kkt[3, 3] = kkt[4, 4] = inertia
        kkt[2, 4] = kkt[4, 2] = inertia * sph
        D = np.array([[1.0, 0.0, 0.0, -R * sps, -R * cps * cph], [0.0, 1.0, 0.0, R * cps, -R * sps * cph]])
        kkt[:5, 5:] = D.T
        kkt[5:, :5] = D
        Q = np.array([m * g * np.cos(u[0]) * np.sin(u[1]), -m * g * np.sin(u[0]), -inertia * dth * dphi * cph,
                      inertia * dpsi * dth * cph, -inertia * dpsi * dphi * cph])
        bias = R * np.array([-cps * dpsi * dphi + sps * cph * dpsi * dth + cps * sph * dphi * dth,
                             -sps * dpsi * dphi - cps * cph * dpsi * dth + sps * sph * dphi * dth])
        sol = np.linalg.solve(kkt, np.concatenate([Q, -bias - 2 * a * (D @ xd)]))
        return np.concatenate([xd, sol[:5]])

    y = np.concatenate([x0, xd0])
    y_ref = np.concatenate([x_ref, xd_ref], axis=1)
    out = np.empty((len(t), 10))
    for k in range(len(t)):
        out[k] = y
        if k == len(t) - 1:
            break
        u = u_ref[k] - gains[k] @ (y - y_ref[k])[selection]
        h = t[k + 1] - t[k]
        k1 = rhs(y, u)
        k2 = rhs(y + h / 2 * k1, u)
        k3 = rhs(y + h / 2 * k2, u)
        k4 = rhs(y + h * k3, u)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return out


def plain_riccati(Ad, Bd, Q, R, Q_N):
    """Backward Riccati sweep in plain numpy (gains (K, nu, N)); the peer of ballctl's sweep.

    Parameters
    ----------
    Ad : ndarray, shape (K, N, N)
    Bd : ndarray, shape (K, N, nu)
    Q, R, Q_N : ndarray
        Weights.
    """
    K = Ad.shape[0]
    P = Q_N.copy()
    gains = np.empty((K, Bd.shape[2], Ad.shape[1]))
    for k in range(K - 1, -1, -1):
        A, B = Ad[k], Bd[k]
        BtP = B.T @ P
        G = np.linalg.solve(R + BtP @ B, BtP @ A)
        P = Q + A.T @ P @ (A - B @ G)
        P = 0.5 * (P + P.T)
        gains[k] = G
    return gains


_FIRST_CALL = """
import time, numpy as np
t0 = time.perf_counter()
import ballctl
t1 = time.perf_counter()
plant = ballctl.BallPlate()
ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
s0 = ref(0.0)


def design_and_run():
    # the design's zero-order-hold reference already runs the compiled loop
    weights = ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6), R=np.eye(2))
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.01, horizon=0.1, weights=weights)
    ballctl.simulate_closed_loop(ctrl, s0.x, s0.xd, options=ballctl.ClosedLoopOptions(method="rk4"))


t2 = time.perf_counter()
design_and_run()
t3 = time.perf_counter()
design_and_run()
t4 = time.perf_counter()
print(t1 - t0, (t3 - t2) - (t4 - t3))
"""


def _first_call(cache_dir: str) -> tuple[float, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True, check=True)
    imp, first = (float(v) for v in out.stdout.split())
    return imp, first


_LOOP_AT_REVISION = r"""
import sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
import ballctl
scale, rep = float(sys.argv[2]), int(sys.argv[3])
plant = ballctl.BallPlate()
ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
s0 = ref(0.0)
x0 = np.array(s0.x, dtype=float).reshape(-1)
xd0 = np.array(s0.xd, dtype=float).reshape(-1)
x0[0] += 0.02
dt = 1e-3
steps = int(np.floor(4 * np.pi / scale / dt))
if hasattr(ballctl, "LQRWeights"):
    w = ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6), R=np.eye(2), Q_N=10 * np.eye(6))
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=steps * dt, weights=w)
    run = lambda: ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(method="rk4"))
else:   # the API before the options objects
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=steps * dt, states=part.state_names[:6],
                                       Q=np.eye(6), R=np.eye(2), Q_N=10 * np.eye(6))
    run = lambda: ballctl.simulate_closed_loop(ctrl, x0, xd0, integrator="rk4")
run()
best = min((lambda t0: (run(), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(rep))
print(best)
"""


def _loop_at_revision(rev: str, scale: float, rep: int) -> float:
    """Best wall time of the row-1 closed loop at git revision ``rev`` (temporary worktree, fresh process)."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "tree")
        subprocess.run(["git", "-C", root, "worktree", "add", "--detach", "-q", tree, rev], check=True)
        try:
            out = subprocess.run([sys.executable, "-c", _LOOP_AT_REVISION, tree, str(scale), str(rep)],
                                 capture_output=True, text=True, check=True)
        finally:
            subprocess.run(["git", "-C", root, "worktree", "remove", "--force", tree], check=False)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    """Run every row and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one tenth of every horizon and run count")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of the fast rows (best kept)")
    parser.add_argument("--no-dask", action="store_true", help="skip the LocalCluster row")
    parser.add_argument("--against", metavar="REV",
                        help="also time the same closed loop at git revision REV (a temporary worktree, a fresh "
                             "process): the before/after ratio of a change")
    args = parser.parse_args(argv)
    import ballctl

    scale = 10 if args.quick else 1
    rep = max(1, args.repeat)
    rows: list[tuple[str, str, str, str]] = []

    def row(what, ours, peer, note):
        rows.append((what, ours, peer, note))
        print(f"  ... {what}: {ours} | {peer} | {note}", file=sys.stderr)

    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    s0 = ref(0.0)
    x0 = s0.x.copy()
    x0[0] += 0.02

    # 1. closed loop at 1 ms
    dt = 1e-3
    steps = int(np.floor(4 * np.pi / scale / dt))
    ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=steps * dt,
                                       weights=ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6),
                                                                  R=np.eye(2), Q_N=10 * np.eye(6)))
    sim_time = steps * dt
    ballctl.simulate_closed_loop(
        ctrl, x0, s0.xd, duration=10 * dt, options=ballctl.ClosedLoopOptions(method="rk4")
    )  # compile/load
    ours, res = _best(
        lambda: ballctl.simulate_closed_loop(ctrl, x0, s0.xd, options=ballctl.ClosedLoopOptions(method="rk4")), rep
    )
    sel = ballctl.design.tracking.state_selection(ctrl.partition, ctrl.state_names, plant.n_coordinates)
    smp = ctrl.samples
    K = steps + 1
    hand, yh = _best(lambda: handwritten_closed_loop(plant.kernel_parameters, x0, res.xd[0], smp.t[:K], smp.x[:K],
                                                     smp.xd[:K], smp.u[:K], ctrl.lqr.gains, sel), 1)
    gap = np.abs(yh[:, :2] - res.x[:, :2]).max()
    py_steps = max(steps // 10, 10)
    py, rpy = _best(lambda: ballctl.simulate_closed_loop(ctrl, x0, s0.xd, duration=py_steps * dt,
                                                         options=ballctl.ClosedLoopOptions(method="rk4",
                                                                                           backend="python")), 1)
    py_scaled = py * steps / py_steps
    agree = np.abs(rpy.x - res.x[:py_steps + 1]).max()   # the Python driver and the compiled loop, same steps
    row(f"closed loop {sim_time:.4g} s at 1 ms, RK4: Python driver vs compiled loop (the same kernels)",
        f"max |x - x_compiled| = {agree:.1e} m or rad over {py_steps} steps", "tested bound 1e-10",
        "agree" if agree <= 1e-10 else "DISAGREE")
    if args.against:
        before = _loop_at_revision(args.against, scale, rep)
        row(f"closed loop {sim_time:.4g} s at 1 ms, RK4, warm: this tree vs revision {args.against}",
            f"{ours:.4f} s", f"{before:.4f} s (same machine, same run, fresh process)",
            f"{before / ours:.2f}x (>= 1: as fast or faster)")
    row(f"closed loop {sim_time:.4g} s at 1 ms, RK4, warm",
        f"{ours:.4f} s ({sim_time / ours:.0f}x real time; {_cpu(res)})",
        f"hand-written numpy loop {hand:.3f} s ({_cpu(yh)}); ballctl Python loop {py_scaled:.2f} s "
        f"(scaled from {py_steps} steps)",
        f"{hand / ours:.1f}x faster than hand-written, {py_scaled / ours:.0f}x than Python loop; "
        f"same states to {gap:.1e} m")

    # 1b. the default rig's verification loop: LQG on the exact servo plate (what `ballctl track` runs)
    from ballctl.references.moving_plate import exact_circular_motion
    from ballctl.references.paths import LissajousPath
    from ballctl.ball_plate.rig import rig_preset
    from ballctl.ball_plate.design import design_for_rig

    rig = rig_preset("tabletop")
    truth = rig.truth_plant()
    horizon = rig.dt * int(np.ceil(4 * np.pi / scale / rig.dt))
    exact = exact_circular_motion(rig.design_plant(), LissajousPath.circle(0.5, 1.0), 40.0,
                                  duration=horizon + 2 * rig.dt)
    lqg = design_for_rig(rig, exact, "exact", horizon=horizon)
    se = exact(0.0)
    xe0 = se.x.copy()
    xe0[0] += 0.05
    sim = ballctl.ClosedLoopOptions(limits=rig.limits, method="rk4", substeps=2, divergence_error=0.2)
    ballctl.simulate_closed_loop(lqg, xe0, se.xd, duration=10 * rig.dt, truth=truth, seed=0, options=sim)  # load
    rig_c, rc = _best(lambda: ballctl.simulate_closed_loop(lqg, xe0, se.xd, truth=truth, seed=0, options=sim), rep)
    rig_p, rp = _best(lambda: ballctl.simulate_closed_loop(lqg, xe0, se.xd, truth=truth, seed=0,
                                                           options=dataclasses.replace(sim, backend="python")), 1)
    row(f"rig loop {horizon:.4g} s at {rig.dt * 1e3:.0f} ms: LQG on the servo plate (tabletop rig), warm",
        f"{rig_c:.4f} s ({_cpu(rc)})", f"ballctl Python loop {rig_p:.3f} s ({_cpu(rp)})",
        f"{rig_p / rig_c:.1f}x; contact points agree to {np.abs(rc.x[:, :2] - rp.x[:, :2]).max():.1e} m, "
        f"estimates to {np.abs(rc.X_measured - rp.X_measured).max():.1e}")

    # 2. first call in a fresh process
    with tempfile.TemporaryDirectory() as cache:
        imp_cold, cold = _first_call(cache)
        imp_warm, cached = _first_call(cache)
    row("first closed-loop call in a new process", f"cached {cached:.2f} s, cold {cold:.2f} s",
        f"import ballctl {imp_warm:.2f} s", "compile time = first call minus a warm call (numba cache=True)")

    # 3. Monte Carlo
    dt_mc = 0.01
    steps_mc = int(round(4 * np.pi / dt_mc))
    ctrl_mc = ballctl.design_tracking_lqr(plant, ref, part, dt=dt_mc, horizon=steps_mc * dt_mc,
                                          weights=ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6),
                                                                     R=np.eye(2)))
    unc = ballctl.Uncertainty(parameters={"mass": ballctl.Normal(0.1, 0.005), "radius": ballctl.Normal(0.02, 0.0005)},
                              noise_std={"contact_x": 1e-3, "contact_y": 1e-3},
                              bias={"contact_x": ballctl.Normal(0, 5e-4), "contact_y": ballctl.Normal(0, 5e-4)},
                              latency=ballctl.Uniform(0.0, 0.01),
                              initial_offset={"contact_x": ballctl.Normal(0, 0.02),
                                              "contact_y": ballctl.Normal(0, 0.02)})
    n_runs = 1000 // scale
    ballctl.monte_carlo(ctrl_mc, 2, uncertainty=unc)  # compile/load
    serial, mc = _best(lambda: ballctl.monte_carlo(ctrl_mc, n_runs, uncertainty=unc, seed=0,
                                                   settings=ballctl.simulation.MonteCarloSettings(chunk_size=100)), 1)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        on_pool = ballctl.simulation.MonteCarloSettings(chunk_size=100, executor=pool)
        threads, mct = _best(lambda: ballctl.monte_carlo(ctrl_mc, n_runs, uncertainty=unc, seed=0, settings=on_pool), 1)
    same = np.array_equal(mc.bands, mct.bands)
    dask_txt = "skipped"
    if not args.no_dask:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            dask_txt = "dask.distributed not installed"
        else:
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl, \
                    Client(cl) as client:
                ex = client.get_executor()
                ballctl.monte_carlo(ctrl_mc, 2, uncertainty=unc,
                                    settings=ballctl.simulation.MonteCarloSettings(executor=ex))
                on_dask = ballctl.simulation.MonteCarloSettings(chunk_size=100, executor=ex)
                dsk, mcd = _best(
                    lambda: ballctl.monte_carlo(ctrl_mc, n_runs, uncertainty=unc, seed=0, settings=on_dask), 1
                )
            dask_txt = f"LocalCluster 2 workers {dsk:.2f} s (bit-identical: {np.array_equal(mc.bands, mcd.bands)})"
    few = 3
    one_by_one = ballctl.ClosedLoopOptions(method="rk4", backend="python", noise_std={"contact_x": 1e-3})
    unit, _ = _best(lambda: [ballctl.simulate_closed_loop(ctrl_mc, x0, s0.xd, seed=i, options=one_by_one)
                             for i in range(few)], 1)
    row(f"Monte Carlo {n_runs} runs x {steps_mc} steps (10 ms)",
        f"serial {serial:.2f} s ({_cpu(mc)}); 2 threads {threads:.2f} s (identical: {same}); {dask_txt}",
        f"Python loop {unit / few * n_runs:.0f} s (scaled from {few} runs)",
        f"{unit / few * n_runs / serial:.0f}x; failure rate {mc.failure_rate:.3f}")

    # 4. linearize 10^4 samples
    t_lin = np.linspace(0.0, ref.period, 10_000 // scale)
    ballctl.linearize(plant, ref, t_lin[:10], part)
    lin, lin_out = _best(lambda: ballctl.linearize(plant, ref, t_lin, part), rep)
    try:
        import sympy  # noqa: F401
        peer = "sympy installed: see bench_ball_plate.py"
    except ImportError:
        peer = "sympy not installed (no peer)"
    row(f"linearize {len(t_lin)} samples of the circle, warm",
        f"{lin:.3f} s ({lin / len(t_lin) * 1e6:.1f} us/sample; {_cpu(lin_out)})",
        peer, "target <= 0.05 s for 10^4")

    # 5. Riccati (the full reduced state, N = 8, on the 1 ms grid)
    disc = ballctl.discretize(ballctl.linearize(plant, ref, dt * np.arange(steps), part), dt)
    N = disc.Ad.shape[1]
    ric, lqr = _best(lambda: ballctl.finite_horizon_lqr(disc, np.eye(N), np.eye(2), Q_N=10 * np.eye(N)), rep)
    plain, g = _best(lambda: plain_riccati(disc.Ad, disc.Bd, np.eye(N), np.eye(2), 10 * np.eye(N)), rep)
    row(f"Riccati sweep {disc.Ad.shape[0]} steps, N = {N}", f"{ric:.3f} s ({_cpu(lqr)})",
        f"plain numpy {plain:.3f} s ({_cpu(g)})",
        f"ratio {ric / plain:.2f} (target <= 1.2); gains agree to {np.abs(lqr.gains - g).max():.1e}")

    # 6. rolling ball: compiled kernels with compiled rail geometry; peer: the same rails as CallableRails
    # (geometry evaluated in Python per call, then the same dynamics kernel)
    from ballctl.plants.internal_masses import PointMass
    from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters, paper_rail_acceleration
    from ballctl.plants.rails import CallableRail
    from ballctl.plants.rolling_ball import RollingBall

    ball_params = paper_ball_parameters()
    ball = RollingBall(ball_params)
    python_rails = RollingBall(dataclasses.replace(ball_params, point_masses=tuple(
        PointMass(mass_kg=pm.mass_kg, rail=CallableRail(function=pm.rail.evaluate))
        for pm in ball_params.point_masses)))
    xb0 = paper_ball_initial_state()

    def u_ball(t):
        return paper_rail_acceleration(t) * np.ones(3)

    t_end = 20.0 / scale
    dop853 = ballctl.IntegrationOptions(method="DOP853", rtol=1e-10, atol=1e-10)
    rb, run = _best(lambda: ball.simulate(xb0, (0.0, t_end), u_ball, options=dop853), rep)
    rp, run_p = _best(lambda: python_rails.simulate(xb0, (0.0, t_end), u_ball, options=dop853), rep)
    row(f"rolling ball t in [0, {t_end:g}] s, DOP853 1e-10", f"{rb:.3f} s ({run.nfev} RHS; {_cpu(run)})",
        f"Python rail geometry {rp:.3f} s ({_cpu(run_p)})",
        f"ratio {rp / rb:.1f}; target <= 0.1 s; states agree to {np.abs(run.x[-1] - run_p.x[-1]).max():.1e}")

    print(f"\nballctl engine benchmarks ({os.cpu_count()} cores, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}, numba cache on disk{', QUICK' if args.quick else ''})\n")
    widths = [max(len(r[i]) for r in rows + [("what", "ballctl", "peer", "ratio / note")]) for i in range(4)]
    header = ("what", "ballctl", "peer", "ratio / note")
    for r in [header, tuple("-" * w for w in widths)] + rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
