"""LQR control of the rolling disk driven by its internal masses
=============================================================

The paper's disk (section 6: four unit masses on concentric circles, g = 1) is commanded to roll from rest
to 0.3 m/s and to stop 2 m further (:class:`ballctl.references.rolling.DiskRollReference`, dynamic
inversion of eq. 5.40), a finite-horizon LQR on the rail accelerations is designed along that reference
(:func:`ballctl.design_tracking_lqr`) and the nonlinear disk is simulated in closed and open loop from a
perturbed state (10 cm behind, rolling backwards at 0.1 m/s, masses 0.2 rad off).

Usage::

    python examples/rolling_disk_control.py [OUT_DIR]

Writes ``disk_control.png`` to ``OUT_DIR`` (default ``out/rolling_disk_control``) and prints the errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import ballctl  # noqa: E402
from ballctl.plants.paper import paper_disk_parameters  # noqa: E402
from ballctl.plants.rolling_disk import RollingDisk  # noqa: E402
from ballctl.references.rolling import DiskRollReference  # noqa: E402

__all__ = ["run", "main"]


def run(out: Path, *, dt: float = 0.05, horizon: float = 12.0) -> dict:
    """Design, simulate and plot; return the key numbers."""
    system = RollingDisk(paper_disk_parameters()).to_constrained_system()
    ref = DiskRollReference(system, cruise_speed_mps=0.3, ramp_time_s=4.0, stop_position_m=2.0)
    part = ballctl.Partition.from_coordinates(system, ["phi"] + [f"theta_{i}" for i in range(1, 5)], [],
                                              ["contact_x"])
    errors = {"phi": 0.02, "phi_rate": 0.05, **{f"theta_{i}": 0.5 for i in range(1, 5)},
              **{f"theta_{i}_rate": 1.0 for i in range(1, 5)}}
    weights = ballctl.LQRWeights(max_state_errors=errors,
                                 max_input_errors={f'theta_ddot_{i}': 2.0 for i in range(1, 5)})
    ctrl = ballctl.design_tracking_lqr(system, ref, part, dt=dt, horizon=horizon, weights=weights)
    s0 = ref(0.0)
    x0, xd0 = s0.x.copy(), s0.xd.copy()
    x0[:2] += [-0.1, 0.1]
    xd0[:2] += [-0.1, 0.1]
    x0[2:] += 0.2
    closed = ballctl.simulate_closed_loop(ctrl, x0, xd0)
    opened = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(feedback="open"))

    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    axes[0].plot(closed.t, closed.x_ref[:, 0], "k--", label="reference")
    axes[0].plot(closed.t, closed.x[:, 0], label="closed loop")
    axes[0].plot(opened.t, opened.x[:, 0], label="open loop")
    axes[0].set_ylabel("contact point x / m")
    axes[0].legend()
    axes[1].plot(closed.t, closed.xd_ref[:, 0], "k--")
    axes[1].plot(closed.t, closed.xd[:, 0])
    axes[1].plot(opened.t, opened.xd[:, 0])
    axes[1].set_ylabel("speed / (m/s)")
    for i in range(4):
        axes[2].plot(closed.t, closed.u[:, i], label=f"theta_ddot_{i + 1}")
    axes[2].set_ylabel("rail acceleration / (rad/s^2)")
    axes[2].set_xlabel("t / s")
    axes[2].legend(fontsize=7)
    fig.suptitle("Rolling disk: rest -> 0.3 m/s -> stop at 2 m, LQR on rail accelerations")
    fig.tight_layout()
    fig.savefig(out / "disk_control.png", dpi=110)
    plt.close(fig)
    tail = closed.t >= 8.0
    return {"initial_position_error_m": float(abs(closed.x[0, 0] - closed.x_ref[0, 0])),
            "closed_loop_final_position_error_m": float(abs(closed.x[-1, 0] - closed.x_ref[-1, 0])),
            "closed_loop_max_position_error_after_8s_m": float(np.abs(closed.x[tail, 0] - closed.x_ref[tail, 0]).max()),
            "closed_loop_max_speed_error_after_8s_mps":
                float(np.abs(closed.xd[tail, 0] - closed.xd_ref[tail, 0]).max()),
            "open_loop_final_position_error_m": float(abs(opened.x[-1, 0] - opened.x_ref[-1, 0])),
            "lead_amplitude_rad": ref.amplitude_rad}


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("out", nargs="?", default="out/rolling_disk_control", help="output folder")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for key, value in run(out).items():
        print(f"{key:>45}: {value:.4g}")
    print(f"figure written to {out / 'disk_control.png'}")
    return 0


if __name__ == "__main__":
    main()
