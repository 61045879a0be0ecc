"""The paper's tracking study on the nonlinear ball-plate, then past it
====================================================================

1. Circle of radius 0.5 m, ball starting 5 cm outside: closed loop (NL and L),
   open loop, the heavy weights of eq. (84) and measurement noise.
2. The same pipeline on other PathMotion references (figure-eight, Lissajous,
   waypoints), with the 4-state contact-point controller (exact subsystem on
   any path: the quasi-static contact dynamics do not depend on the orientation).
3. A sweep over circle radius and speed up to the feasibility limit, on a rig
   with a 15 deg tilt limit and 300 deg/s slew, reporting where tracking degrades.

Run: ``python examples/tracking_study.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import ballctl
from ballctl.figures.plotting import plot_tracking, save_figure

PAPER_PARTITION = (["contact_x", "contact_y", "yaw"], ["lean", "roll"])
ERRORS6 = dict(contact_x=0.01, contact_y=0.01, yaw=0.5, contact_x_rate=0.1, contact_y_rate=0.1, yaw_rate=5.0)
ERRORS4 = {k: v for k, v in ERRORS6.items() if not k.startswith("yaw")}


def design(plant, ref, *, dt, horizon, states, errors, input_deg=3.0, scale=1.0, terminal=1.0, t0=0.0):
    part = ballctl.Partition.from_coordinates(plant, *PAPER_PARTITION)
    return ballctl.design_tracking_lqr(plant, ref, part, dt=dt, horizon=horizon,
                                       weights=ballctl.LQRWeights(states=states,
                                                                  max_state_errors={k: v / np.sqrt(scale) for k,
                                                                                    v in errors.items()},
                                                                  max_input_errors={"alpha": np.deg2rad(input_deg),
                                                                                    "beta": np.deg2rad(input_deg)},
                                                                  terminal_factor=terminal),
                                       options=ballctl.design.TrackingOptions(t0=t0))


def offset_start(ref, t0, dx=0.05, dy=0.0):
    s = ref(t0)
    x0 = s.x.copy()
    x0[0] += dx
    x0[1] += dy
    return x0, s.xd


def fmt(sm):
    settle = "never" if sm.settling_time_s is None else f"{sm.settling_time_s:.2f} s"
    return (f"final {sm.final_error_m:.2e} m, steady {sm.steady_state_error_m:.2e} m, settle "
            f"{settle}, peak alpha {np.rad2deg(sm.peak_input_rad['alpha']):.2f} deg, "
            f"peak beta {np.rad2deg(sm.peak_input_rad['beta']):.2f} deg")


def paper_study(plant, dt, horizon, out):
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = ballctl.Partition.from_coordinates(plant, *PAPER_PARTITION)
    states = part.state_names[:6]
    base = design(plant, ref, dt=dt, horizon=horizon, states=states, errors=ERRORS6)
    heavy = design(plant, ref, dt=dt, horizon=horizon, states=states, errors=ERRORS6, scale=100.0,
                   input_deg=0.03, terminal=100.0)  # eq. (84)
    x0, xd0 = offset_start(ref, 0.0)
    runs = {"base NL": ballctl.simulate_closed_loop(base, x0, xd0),
            "base L": ballctl.simulate_closed_loop(base, x0, xd0, options=ballctl.ClosedLoopOptions(model="linear")),
            "open loop": ballctl.simulate_closed_loop(base, x0, xd0,
                                                      options=ballctl.ClosedLoopOptions(feedback="open")),
            "heavy (84) NL": ballctl.simulate_closed_loop(heavy, x0, xd0),
            "noisy NL": ballctl.simulate_closed_loop(heavy, x0, xd0, seed=1,
                                                     options=ballctl.ClosedLoopOptions(noise_std={"contact_x": 2e-3,
                                                                                                  "contact_y": 2e-3})),
            }
    summaries = {k: r.summary() for k, r in runs.items()}
    for k, sm in summaries.items():
        print(f"  {k:14s} {fmt(sm)}")
    save_figure(plot_tracking({k: runs[k] for k in ("base NL", "base L", "open loop")},
                              title="circle r = 0.5 m: closed loop (NL, L) and open loop"), out / "paper_base.png")
    save_figure(plot_tracking({k: runs[k] for k in ("base NL", "heavy (84) NL", "noisy NL")},
                              title="heavier weights (eq. 84) and measurement noise"), out / "paper_weights_noise.png")
    return summaries


def path_study(plant, dt, horizon, out):
    paths = {
        "figure-eight": ballctl.LissajousPath.figure_eight(0.3, 0.8),
        "Lissajous": ballctl.LissajousPath(amplitude_x=0.3, amplitude_y=0.2, omega_x=0.6, omega_y=0.9, phase_x=0.4),
        "waypoints": ballctl.WaypointPath([[0, 0], [0.3, 0.1], [0.5, 0.4], [0.2, 0.6], [-0.1, 0.4]], speed=0.15,
                                          ramp_time=1.0),
    }
    part = ballctl.Partition.from_coordinates(plant, *PAPER_PARTITION)
    states = [n for n in part.state_names if n.startswith("contact")]
    summaries = {}
    for name, path in paths.items():
        available = getattr(path, "duration", None)
        dur = horizon if available is None else min(horizon, available - dt)  # the reference needs t0 + dur + dt
        dur = dt * int(dur / dt + 1e-9)
        ref = ballctl.PathMotion(plant, path, duration=dur + dt, spin=0.0)
        ctrl = design(plant, ref, dt=dt, horizon=dur, states=states, errors=ERRORS4)
        x0, xd0 = offset_start(ref, 0.0, 0.02, -0.01)
        run = ballctl.simulate_closed_loop(ctrl, x0, xd0)
        ol = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(feedback="open"))
        summaries[name] = run.summary()
        print(f"  {name:13s} closed: {fmt(summaries[name])}; open-loop final {ol.summary().final_error_m:.2e} m")
        save_figure(plot_tracking({"closed loop": run, "open loop": ol}, title=f"{name} path"),
                    out / f"path_{name}.png")
    return summaries


def sweep(plant, dt, horizon, radii, fractions):
    p = plant.params
    limits = ballctl.RigLimits(max_angle=np.deg2rad(15.0), max_rate=np.deg2rad(300.0))
    part = ballctl.Partition.from_coordinates(plant, *PAPER_PARTITION)
    states = part.state_names[:6]
    rows = []
    for rho in radii:
        omega_max = np.sqrt(p.rolling_gain * p.gravity / rho)
        for frac in fractions:
            w = frac * omega_max
            roll = 2.0 * rho * w / p.radius  # lean 60 deg
            ref = ballctl.CircularMotion(plant, rho, w, roll)
            ctrl = design(plant, ref, dt=dt, horizon=horizon, states=states, errors=ERRORS6)
            x0, xd0 = offset_start(ref, 0.0, 0.02, 0.0)
            try:
                sm = ballctl.simulate_closed_loop(ctrl, x0, xd0,
                                                  options=ballctl.ClosedLoopOptions(limits=limits)).summary()
                final, peak_beta = sm.final_error_m, sm.peak_input_rad["beta"]
                saturated = sm.limit_steps.get("max_angle", 0.0)
            except (ballctl.BallctlError, np.linalg.LinAlgError) as exc:  # e.g. the chart edge
                final, peak_beta, saturated = float("inf"), float("nan"), float("nan")
                print(f"    radius {rho} m, {frac:.2f} omega_max: failed ({exc})")
            rows.append((rho, frac, w, np.rad2deg(ref.tilt), final, np.rad2deg(peak_beta), saturated))
    print("  radius[m] frac  omega[rad/s] tilt0[deg] final_err[m] peak_beta[deg] saturated_steps")
    for r in rows:
        flag = "  <- degraded" if not r[4] < 0.01 * r[0] else ""
        print(f"  {r[0]:8.2f} {r[1]:5.2f} {r[2]:11.3f} {r[3]:10.2f} {r[4]:12.2e} {r[5]:13.2f} {r[6]:8.0f}{flag}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/tracking_study")
    parser.add_argument("--quick", action="store_true", help="short horizons and a small sweep (for the tests)")
    parser.add_argument("--dt", type=float, default=0.01, help="controller sample time in s")
    args = parser.parse_args(argv)
    out = Path(args.out)
    plant = ballctl.BallPlate()
    horizon = 3.0 if args.quick else 4 * np.pi
    horizon = args.dt * int(round(horizon / args.dt))
    print("1. the paper's circle study")
    paper = paper_study(plant, args.dt, horizon, out)
    print("2. other paths through the same pipeline")
    paths = path_study(plant, args.dt, 3.0 if args.quick else 12.0, out)
    print("3. sweep over radius and speed (rig: 15 deg tilt limit, 300 deg/s slew)")
    radii = [0.5] if args.quick else [0.1, 0.25, 0.5, 1.0]
    fractions = [0.3, 0.97] if args.quick else [0.3, 0.6, 0.8, 0.9, 0.97]
    rows = sweep(plant, args.dt, 3.0 if args.quick else 8.0, radii, fractions)
    return {"paper": paper, "paths": paths, "sweep": rows}


if __name__ == "__main__":
    main()
