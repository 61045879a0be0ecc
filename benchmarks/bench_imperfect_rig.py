"""Imperfect rigs: what a level error does to the designs, the robust verification, and its cost.

Run ``python benchmarks/bench_imperfect_rig.py`` (a minute on a quiet 2-core machine, warm numba cache). It prints

1. the table of the issue: the tabletop rig (every imperfection of the preset) with the truth's level error
   ``(a, -0.7 a)``, a = 0, 0.5, 1 deg, and the default job's designs as it runs them (0.5 m circle at 1 rad/s,
   two revolutions, 5 cm initial offset, output feedback): RMS contact error over the last revolution and final
   error, plain LQG against the offset-free design;
2. the target rig (tabletop with a 1 deg level error, rolling resistance 0.003, 2 % frames lost): the exported
   design's nominal error and its verification over the rig's uncertainty (200 drawn rigs);
3. the cost of the robust verification inside ``ballctl track``: the whole job against the same job with
   ``--robust-runs 0`` in the same run (a ratio; the machine is shared).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import replace

import numpy as np

from ballctl.simulation.closed_loop import ClosedLoopOptions, simulate_closed_loop
from ballctl.references import CircularMotion
from ballctl.references.moving_plate import exact_circular_motion
from ballctl.references.paths import LissajousPath
from ballctl.ball_plate.rig import rig_preset
from ballctl.ball_plate.design import design_for_rig
from ballctl.ball_plate.verification import VerificationSettings, verify_over_uncertainty

DEG = np.pi / 180


def _run(rig, ctrl, x0, xd0, period):
    r = simulate_closed_loop(ctrl, rig.truth_initial_state(x0), xd0, truth=rig.truth_plant(), seed=0,
                             options=ClosedLoopOptions(method="rk4", limits=rig.limits, substeps=2,
                                                       divergence_error=1.0, imperfections=rig.imperfections.loop))
    s = r.summary()
    if s.diverged:
        return "diverged", "diverged"
    return f"{1e3 * s.rms_error_last_period_m:.2f}", f"{1e3 * s.final_error_m:.2f}"


def main() -> None:
    base = rig_preset("tabletop")
    dt = base.dt
    period = 2 * np.pi
    horizon = dt * int(np.ceil(2 * period / dt - 1e-9))
    plant = base.design_plant()
    exact = exact_circular_motion(plant, LissajousPath.circle(0.5, 1.0), 40.0, duration=horizon + 2 * dt)
    qs = CircularMotion(plant.quasi_static(), 0.5, 1.0, 40.0)
    s = exact(0.0)
    x_exact, xd_exact = s.x.copy(), s.xd.copy()
    x_exact[0] += 0.05
    q = qs(0.0)
    x_qs = np.concatenate([q.x, q.u])
    xd_qs = np.concatenate([q.xd, q.ud])
    x_qs[0] += 0.05
    designs = {}
    for name, ref, x0, xd0 in (("exact", exact, x_exact, xd_exact), ("qs-contact", qs, x_qs, xd_qs)):
        for offset_free in (False, True):
            designs[(name, offset_free)] = (design_for_rig(base, ref, name, horizon=horizon,
                                                           offset_free=offset_free), x0, xd0)
    print("1. level error (a, -0.7 a) on the tabletop truth: RMS last revolution / final error, mm")
    print("| design | a = 0 | a = 0.5 deg | a = 1.0 deg |")
    print("|---|---|---|---|")
    for (name, offset_free), (ctrl, x0, xd0) in designs.items():
        cells = []
        for a in (0.0, 0.5, 1.0):
            rig = replace(base, imperfections=replace(base.imperfections, plate_offset=(a * DEG, -0.7 * a * DEG)))
            rms, final = _run(rig, ctrl, x0, xd0, period)
            cells.append(f"{rms} / {final}")
        print(f"| {name}{' offset-free' if offset_free else ''} | " + " | ".join(cells) + " |")

    target = replace(base, imperfections=replace(base.imperfections, plate_offset=(1.0 * DEG, -0.7 * DEG),
                                                 rolling_resistance=0.003, frame_drop=0.02))
    ctrl, x0, xd0 = designs[("exact", True)]
    rms, final = _run(target, ctrl, x0, xd0, period)
    rv = verify_over_uncertainty(ctrl, target, x0, xd0, seed=0, window_s=period, max_rms_error=0.005,
                                 settings=VerificationSettings(n_runs=200, divergence_error=1.0))
    print("\n2. target rig (1 deg level error, rolling resistance 0.003, 2 % frames lost), exact offset-free:")
    print(f"   nominal RMS last revolution {rms} mm, final {final} mm; over {rv.runs} drawn rigs: "
          f"success rate {rv.success_rate:.3f}, RMS p50 {1e3 * rv.rms_p50_m:.2f} mm, p95 {1e3 * rv.rms_p95_m:.2f} mm, "
          f"worst {1e3 * rv.worst_rms_m:.2f} mm ({rv.wall_time_s:.2f} s)")

    print("\n3. ballctl track on defaults, the whole job against --robust-runs 0 (same run, 3 repeats, best of):")
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in (("whole job", []), ("no robust verification", ["--robust-runs", "0"])):
            best = np.inf
            for i in range(3):
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "ballctl.cli", "track", "--out", f"{tmp}/{i}", *extra],
                               check=True, capture_output=True)
                best = min(best, time.perf_counter() - start)
            times[label] = best
            print(f"   {label}: {best:.2f} s")
    print(f"   ratio: {times['whole job'] / times['no robust verification']:.2f}")


if __name__ == "__main__":
    main()
