"""LQR tracking for the 3-D rolling ball with internal masses (issue 5, section 4b-c).

The reference is the paper's ball (section 7) under its rail accelerations (7.11), integrated once by
:class:`ballctl.references.rolling.IntegratedReference` (DAE-consistent dense output). A finite-horizon
LQR on the three rail accelerations is designed through the linearizer (independent yaw, pitch, roll and
rail angles; admissible-dependent contact point), and the nonlinear ball is simulated from a perturbed
state (contact point 5 cm x 5 cm off, yaw and rails 0.1 rad off) in closed and open loop. Finally the
controllability of several rail layouts along a straight roll is tabulated
(:func:`ballctl.studies.rail_layouts.compare_rail_layouts`).

Usage::

    python examples/rolling_ball_tracking.py [OUT_DIR] [--t-final 10]

Writes ``ball_tracking.png`` and ``rail_layouts.txt`` to ``OUT_DIR`` (default ``out/rolling_ball_tracking``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import ballctl  # noqa: E402
from ballctl.plants.paper import paper_ball_parameters  # noqa: E402
from ballctl.plants.rolling_ball import RollingBall  # noqa: E402
from ballctl.studies.rail_layouts import compare_rail_layouts  # noqa: E402
from ballctl.references.rolling import paper_ball_reference  # noqa: E402

__all__ = ["run", "main"]


def run(out: Path, *, t_final: float = 10.0, dt: float = 0.1) -> dict:
    """Design, simulate, plot and tabulate; return the key numbers."""
    system = RollingBall(paper_ball_parameters()).to_constrained_system()
    ref = paper_ball_reference(system, t_final=t_final)
    part = ballctl.Partition.from_coordinates(system, ["yaw", "pitch", "roll", "theta_1", "theta_2", "theta_3"],
                                              ["contact_x", "contact_y"])
    errors = {"contact_x": 0.02, "contact_y": 0.02, **{n: 1.0 for n in ("yaw", "pitch", "roll")},
              **{f"{n}_rate": 2.0 for n in ("yaw", "pitch", "roll")},
              **{f"theta_{i}": 1.0 for i in range(1, 4)}, **{f"theta_{i}_rate": 2.0 for i in range(1, 4)}}
    ctrl = ballctl.design_tracking_lqr(system, ref, part, dt=dt, horizon=t_final, max_state_errors=errors,
                                       max_input_errors={f"theta_ddot_{i}": 1.0 for i in range(1, 4)})
    s0 = ref(0.0)
    x0, xd0 = s0.x[0].copy(), s0.xd[0].copy()
    x0[:3] += [0.05, -0.05, 0.1]
    x0[5:] += 0.1
    closed = ballctl.simulate_closed_loop(ctrl, x0, xd0)
    opened = ballctl.simulate_closed_loop(ctrl, x0, xd0, feedback=False)

    def err(r):
        return np.hypot(r.x[:, 0] - r.x_ref[:, 0], r.x[:, 1] - r.x_ref[:, 1])

    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    axes[0].plot(closed.x_ref[:, 0], closed.x_ref[:, 1], "k--", label="reference")
    axes[0].plot(closed.x[:, 0], closed.x[:, 1], label="closed loop")
    axes[0].plot(opened.x[:, 0], opened.x[:, 1], label="open loop")
    axes[0].set_aspect("equal")
    axes[0].set_xlabel("contact_x / m")
    axes[0].set_ylabel("contact_y / m")
    axes[0].legend()
    axes[1].semilogy(closed.t, err(closed), label="closed loop")
    axes[1].semilogy(opened.t, err(opened), label="open loop")
    axes[1].set_xlabel("t / s")
    axes[1].set_ylabel("contact-point error / m")
    axes[1].legend()
    for i in range(3):
        axes[2].plot(closed.t, closed.u[:, i], label=f"theta_ddot_{i + 1}")
    axes[2].plot(closed.t, closed.u_ref[:, 0], "k--", label="reference (all rails)")
    axes[2].set_xlabel("t / s")
    axes[2].set_ylabel("rail acceleration / (rad/s^2)")
    axes[2].legend(fontsize=7)
    fig.suptitle("Rolling ball (Putkaradze & Rogers 2018, sec. 7): LQR on the rail accelerations")
    fig.tight_layout()
    fig.savefig(out / "ball_tracking.png", dpi=110)
    plt.close(fig)

    table = compare_rail_layouts()
    (out / "rail_layouts.txt").write_text(table.to_table() + "\n")
    e_cl, e_ol = err(closed), err(opened)
    late = closed.t >= 0.5 * t_final
    return {"initial_error_m": float(e_cl[0]), "closed_loop_max_error_second_half_m": float(e_cl[late].max()),
            "closed_loop_final_error_m": float(e_cl[-1]), "open_loop_final_error_m": float(e_ol[-1]),
            "layout_table": table.to_table()}


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="out/rolling_ball_tracking", help="output folder")
    parser.add_argument("--t-final", type=float, default=10.0, help="horizon in s")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = run(out, t_final=args.t_final)
    for key, value in result.items():
        print(value if key == "layout_table" else f"{key:>40}: {value:.4g}")
    print(f"figures written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
