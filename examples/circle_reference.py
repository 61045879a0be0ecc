"""The paper's circular steady motion: dynamic inversion, its DAE residual, and an open-loop run
=============================================================================================

Run: ``python examples/circle_reference.py [--out DIR]``.
"""

import argparse
from pathlib import Path

import numpy as np

import ballctl
from ballctl.figures.plotting import plot_reference, save_figure


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="out/circle_reference")
    args = parser.parse_args(argv)
    plant = ballctl.BallPlate()  # solid 40 mm ball, 0.1 kg
    ref = ballctl.CircularMotion(plant, radius=0.5, omega=1.0, roll_rate=40.0, center=(0.1, 0.0))
    t = np.linspace(0, ref.period, 200)
    s = ref(t)
    residual = max(np.abs(plant.dynamics_residual(s.x[k], s.xd[k], s.xdd[k], s.lam[k], s.u[k])).max()
                   for k in range(len(t)))
    print(f"plate tilt {np.rad2deg(ref.tilt):.3f} deg, lean {np.rad2deg(ref.lean):.2f} deg, "
          f"max DAE residual {residual:.2e}")
    run = ballctl.simulate(plant, s.x[0], s.xd[0], lambda tt: ref(tt).u, (0, ref.period), t_eval=t)
    drift = np.abs(run.x[:, :2] - s.x[:, :2]).max()
    print(f"open loop under u0(t): largest distance from the reference over one revolution {drift:.2e} m")
    path = save_figure(plot_reference(ref, t), Path(args.out) / "reference.png")
    print(f"figure written to {path}")
    return residual, drift


if __name__ == "__main__":
    main()
