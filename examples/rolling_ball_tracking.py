"""LQR tracking for the 3-D rolling ball with internal masses
==========================================================

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

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

import ballctl
from ballctl.figures.plotting import REFERENCE_STYLE, run_styles, save_figure
from ballctl.plants.paper import paper_ball_parameters
from ballctl.plants.rolling_ball import RollingBall
from ballctl.studies.rail_layouts import compare_rail_layouts
from ballctl.references.rolling import paper_ball_reference

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
    weights = ballctl.LQRWeights(max_state_errors=errors,
                                 max_input_errors={f'theta_ddot_{i}': 1.0 for i in range(1, 4)})
    ctrl = ballctl.design_tracking_lqr(system, ref, part, dt=dt, horizon=t_final, weights=weights)
    s0 = ref(0.0)
    x0, xd0 = s0.x.copy(), s0.xd.copy()
    x0[:3] += [0.05, -0.05, 0.1]
    x0[5:] += 0.1
    closed = ballctl.simulate_closed_loop(ctrl, x0, xd0)
    opened = ballctl.simulate_closed_loop(ctrl, x0, xd0, options=ballctl.ClosedLoopOptions(feedback="open"))

    def err(r):
        return np.hypot(r.x[:, 0] - r.x_ref[:, 0], r.x[:, 1] - r.x_ref[:, 1])

    # the shared ballctl style: one colour per run in every panel, reference black dashed on top,
    # one panel per rail, one legend below the panels
    styles = run_styles({"closed loop": closed, "open loop": opened})
    fig = Figure(figsize=(15, 8.5), layout="constrained")
    axes = fig.subplot_mosaic([["path", "path", "error"], ["rail 1", "rail 2", "rail 3"]])
    for label, r in (("closed loop", closed), ("open loop", opened)):
        axes["path"].plot(r.x[:, 0], r.x[:, 1], **styles[label])
        axes["error"].semilogy(r.t, err(r), **styles[label])
    axes["path"].plot(closed.x_ref[:, 0], closed.x_ref[:, 1], **REFERENCE_STYLE)
    axes["path"].set_aspect("equal", adjustable="datalim")
    axes["path"].set_xlabel("contact point x [m]")
    axes["path"].set_ylabel("contact point y [m]")
    axes["path"].set_title("contact point on the floor")
    axes["error"].set_xlabel("time [s]")
    axes["error"].set_ylabel("distance to reference [m]")
    axes["error"].set_title("distance of the contact point from the reference")
    for i in range(3):
        ax = axes[f"rail {i + 1}"]
        for label, r in (("closed loop", closed), ("open loop", opened)):
            ax.plot(r.t, r.u[:, i], **styles[label])
        ax.plot(closed.t, closed.u_ref[:, i], **REFERENCE_STYLE)
        ax.set_xlabel("time [s]")
        ax.set_ylabel(f"rail {i + 1} acceleration [rad/s²]")
        ax.set_title(f"input: acceleration of mass {i + 1} along its rail")
    for ax in axes.values():
        ax.grid(alpha=0.3)
    handles = [Line2D([], [], **REFERENCE_STYLE, label="reference")]
    handles += [Line2D([], [], color=st["color"], lw=st["linewidth"], label=lab) for lab, st in styles.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle("Rolling ball (Putkaradze & Rogers 2018, sec. 7): LQR on the rail accelerations")
    save_figure(fig, out / "ball_tracking.png", dpi=110)

    table = compare_rail_layouts()
    (out / "rail_layouts.txt").write_text(table.to_table() + "\n")
    e_cl, e_ol = err(closed), err(opened)
    late = closed.t >= 0.5 * t_final
    return {"initial_error_m": float(e_cl[0]), "closed_loop_max_error_second_half_m": float(e_cl[late].max()),
            "closed_loop_final_error_m": float(e_cl[-1]), "open_loop_final_error_m": float(e_ol[-1]),
            "layout_table": table.to_table()}


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
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
    main()
