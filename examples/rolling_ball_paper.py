"""Reproduce the rolling disk (section 6) and rolling ball (section 7) of Putkaradze & Rogers (2018)
=================================================================================================

Figures like the paper's figs. 6.3 and 7.2 (paths of the masses and of the total CM in the body and the
spatial frame about the GC, and the path of the contact point), plus a GIF of the ball rolling.

Usage::

    python examples/rolling_ball_paper.py [OUT_DIR] [--quick]

``OUT_DIR`` defaults to ``out/rolling_ball``; ``--quick`` integrates to t = 2 s instead of 20 s and
makes a short animation.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ballctl.figures.animation import animate_rolling_ball  # noqa: E402
from ballctl.figures.plotting import plot_ball_paths, save_figure  # noqa: E402
from ballctl.plants.paper import (PAPER_KINK_TIMES, paper_ball_initial_state, paper_ball_parameters,  # noqa: E402
                                  paper_disk_initial_state, paper_disk_parameters, paper_disk_rail_accelerations,
                                  paper_rail_acceleration)
from ballctl.plants.rolling_ball import RollingBall  # noqa: E402
from ballctl.plants.rolling_disk import RollingDisk  # noqa: E402

__all__ = ["main"]


def _disk_figure(out: Path, t_end: float) -> None:
    disk = RollingDisk(paper_disk_parameters())
    run = disk.simulate(paper_disk_initial_state(), (0.0, t_end), paper_disk_rail_accelerations,
                        t_eval=np.linspace(0.0, t_end, 1001), breakpoints=PAPER_KINK_TIMES)
    body = disk.mass_positions_body(run.x)                      # (K, n, 2)
    cm = disk.total_cm_body(run.x)                              # (K, 2)
    spatial = disk.to_spatial_about_gc(run.x, body)
    cm_spatial = disk.to_spatial_about_gc(run.x, cm[:, None, :])[:, 0]
    z = disk.contact_position(run.x)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    for i in range(disk.n_masses):
        axes[0].plot(body[:, i, 0], body[:, i, 1], label=f"m{i + 1}")
        axes[1].plot(spatial[:, i, 0], spatial[:, i, 1], label=f"m{i + 1}")
    axes[0].plot(cm[:, 0], cm[:, 1], "k--", label="total CM")
    axes[1].plot(cm_spatial[:, 0], cm_spatial[:, 1], "k--", label="total CM")
    for ax, title in zip(axes[:2], ("body frame about GC", "spatial frame about GC")):
        ax.add_patch(plt.Circle((0, 0), 1.0, fill=False, color="0.6"))
        ax.set_aspect("equal")
        ax.set_title(title)
        ax.set_xlabel("e1 / m")
        ax.set_ylabel("e3 / m")
        ax.legend(fontsize=7)
    axes[2].plot(run.t, z)
    axes[2].set_xlabel("t / s")
    axes[2].set_ylabel("GC and CP, e1 / m")
    axes[2].set_title("contact point")
    fig.suptitle("Rolling disk, Putkaradze & Rogers (2018) section 6")
    fig.tight_layout()
    fig.savefig(out / "disk_paths.png", dpi=110)
    plt.close(fig)


def _ball_run(t_end: float, samples: int):
    ball = RollingBall(paper_ball_parameters())
    run = ball.simulate(paper_ball_initial_state(), (0.0, t_end), lambda t: paper_rail_acceleration(t) * np.ones(3),
                        t_eval=np.linspace(0.0, t_end, samples), breakpoints=PAPER_KINK_TIMES)
    return ball, run


def _ball_figure(out: Path, ball, run) -> None:
    fig = plot_ball_paths(ball, run, "Rolling ball, Putkaradze & Rogers (2018) section 7")
    save_figure(fig, out / "ball_paths.png", dpi=110)


def _ball_animation(out: Path, ball, run, frames: int) -> None:
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("pillow is not installed: skipping the GIF animation")
        return
    animate_rolling_ball(ball, run, out / "ball_rolling.gif", max_frames=frames, fps=10)


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("out", nargs="?", default="out/rolling_ball", help="output folder")
    parser.add_argument("--quick", action="store_true", help="t = 2 s and a short animation (for tests)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_end = 2.0 if args.quick else 20.0
    _disk_figure(out, t_end)
    ball, run = _ball_run(t_end, 201 if args.quick else 2001)
    _ball_figure(out, ball, run)
    _ball_animation(out, ball, run, frames=8 if args.quick else 120)
    print(f"figures written to {out}")
    return 0


if __name__ == "__main__":
    main()
