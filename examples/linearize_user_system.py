r"""Linearize your own constrained system: a Chaplygin sleigh with an offset blade
==============================================================================

The sleigh is a rigid body of mass ``m`` and inertia ``J`` about its centre of
mass (CM), resting on a blade (knife edge) at the point ``P``. The CM lies on
the blade's line, a distance ``a`` *ahead* of ``P``. Coordinates
``x = (x, y, heading)``: ``(x, y)`` is the blade point ``P`` in m, ``heading``
the blade direction in rad. The blade cannot slide sideways (one
nonholonomic constraint, l = 1, m = 0):

.. math::

    -\dot x\sin h + \dot y\cos h = 0, \qquad D(x) = (-\sin h,\ \cos h,\ 0).

Inputs ``u = (force, torque)``: a force F (N) along the blade, acting on the
line through P and the CM, and a torque tau (N m).

Mass matrix and forces (Lagrange). With the CM at
``(x + a cos h, y + a sin h)``,
``T = m/2 (xd^2 + yd^2 + a^2 hd^2 + 2 a hd (-xd sin h + yd cos h)) + J/2 hd^2``, so

.. math::

    M = \begin{pmatrix} m & 0 & -m a\sin h \\ 0 & m & m a\cos h \\
        -m a\sin h & m a\cos h & J + m a^2 \end{pmatrix},\qquad
    Q = \begin{pmatrix} (F + m a\dot h^2)\cos h \\ (F + m a\dot h^2)\sin h \\ \tau \end{pmatrix}.

The offset couples translation and heading in ``M``; the quadratic-velocity
term :math:`m a\dot h^2` is the CM's centripetal force
(:math:`\dot M\dot x - \partial_x T` has no heading component). Projected on
the admissible motions (forward speed ``v`` of P, turn rate ``w``):
``m v' = F + m a w^2`` and ``(J + m a^2) w' = tau - m a v w``.

Steady circular motion (closed form): P runs at constant speed ``v`` and
turn rate ``w`` on a circle of radius ``v / w``. Then the DAE
``M xdd + D^T lam = Q`` holds with

.. math::

    F_0 = -m a w^2, \qquad \tau_0 = m a v w, \qquad \Lambda_0 = -m v w .

Partition: independent ``(x, heading)``, admissible dependent ``y``
(``D_dd = cos h``, valid while ``|heading| < 90 deg``); the reference is the
arc ``heading in [-60, 60] deg``. With ``c, s, t = cos h, sin h, tan h`` and
``mu = m a / (J + m a^2)`` the reduced linearization for
``X = (dx, dh, dxd, dhd, dy)`` is, in closed form,

.. math::

    A = \begin{pmatrix} 0&0&1&0&0\\ 0&0&0&1&0\\
        0& -vw/c & -wt & 2awc - vs & 0\\
        0& -\mu v w t & -\mu w/c & -\mu v & 0\\
        0& v/c & t & 0 & 0\end{pmatrix},\qquad
    B = \begin{pmatrix} 0&0\\0&0\\ c/m & 0\\ 0 & 1/(J+ma^2)\\ 0&0\end{pmatrix}.

The columns of ``dx`` and ``dy`` vanish (translation invariance), so the
frozen-time A has the double eigenvalue 0 and the three roots of
``p(s) = s^3 + (wt + mu v) s^2 + (2 a mu w^2 + mu v w t) s - mu v w^2``.

Run: ``python examples/linearize_user_system.py [--mass 2 --inertia 0.3 --offset 0.4
--speed 1.2 --turn-rate 0.7 --samples 41]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import ballctl

__all__ = ["make_sleigh", "SteadyTurn", "analytic_ltv", "main"]


def make_sleigh(mass: float, inertia: float, offset: float) -> ballctl.ConstrainedSystem:
    """Chaplygin sleigh with the CM ``offset`` m ahead of the blade; plain, complex-step-safe callables."""

    def mass_matrix(x, u):
        h = x[2]
        dt = np.result_type(x, u, float)
        ma = mass * offset
        return np.array([[mass, 0.0, -ma * np.sin(h)],
                         [0.0, mass, ma * np.cos(h)],
                         [-ma * np.sin(h), ma * np.cos(h), inertia + mass * offset ** 2]], dtype=dt)

    def forces(x, xd, u):
        h = x[2]
        along = u[0] + mass * offset * xd[2] ** 2
        return np.array([along * np.cos(h), along * np.sin(h), u[1] + 0 * h])

    def constraint_jacobian(x):
        h = x[2]
        return np.array([[-np.sin(h), np.cos(h), 0 * h]])

    def constraint_bias(x, xd):  # d/dt(D) xd, supplied analytically (optional)
        h = x[2]
        return np.array([-xd[2] * (np.cos(h) * xd[0] + np.sin(h) * xd[1])])

    return ballctl.ConstrainedSystem(
        n_coordinates=3, n_holonomic=0, n_nonholonomic=1, n_inputs=2, coordinate_names=("x", "y", "heading"),
        input_names=("force", "torque"),
        equations=ballctl.SystemEquations(
            mass_matrix=mass_matrix,
            forces=forces,
            constraint_jacobian=constraint_jacobian,
            constraint_bias=constraint_bias,
        ),
    )


class SteadyTurn(ballctl.Reference):
    """The sleigh's steady circular motion in closed form (speed m/s, turn rate rad/s).

    ``heading = heading0 + w t``, ``x = (v/w) sin(heading)``,
    ``y = (v/w)(1 - cos(heading))``; inputs ``(-m a w^2, m a v w)``,
    multiplier ``-m v w``.
    """

    def __init__(self, system, *, mass: float, offset: float, speed: float, turn_rate: float,
                 heading0: float) -> None:
        if turn_rate == 0.0:
            raise ValueError("turn_rate must be non-zero (rad/s)")
        self.system = system
        self.mass, self.offset, self.speed, self.turn_rate, self.heading0 = mass, offset, speed, turn_rate, heading0
        self.period = 2 * np.pi / abs(turn_rate)

    def _evaluate(self, t):
        m, a, v, w = self.mass, self.offset, self.speed, self.turn_rate
        h = self.heading0 + w * t
        K = t.shape[0]
        r = v / w
        x = np.column_stack([r * np.sin(h), r * (1 - np.cos(h)), h])
        xd = np.column_stack([v * np.cos(h), v * np.sin(h), np.full(K, w)])
        xdd = np.column_stack([-v * w * np.sin(h), v * w * np.cos(h), np.zeros(K)])
        u = np.column_stack([np.full(K, -m * a * w ** 2), np.full(K, m * a * v * w)])
        lam = np.full((K, 1), -m * v * w)
        return ballctl.ReferenceSample(t.copy(), x, xd, xdd, u, np.zeros_like(u), lam)


def analytic_ltv(heading, *, mass, inertia, offset, speed, turn_rate):
    """Closed-form ``A (5, 5)``, ``B (5, 2)`` at one heading for ``X = (dx, dh, dxd, dhd, dy)``."""
    m, a, v, w = mass, offset, speed, turn_rate
    Jc = inertia + m * a ** 2
    mu = m * a / Jc
    c, s = np.cos(heading), np.sin(heading)
    t = s / c
    A = np.zeros((5, 5))
    A[0, 2] = A[1, 3] = 1.0
    A[2, 1], A[2, 2], A[2, 3] = -v * w / c, -w * t, 2 * a * w * c - v * s
    A[3, 1], A[3, 2], A[3, 3] = -mu * v * w * t, -mu * w / c, -mu * v
    A[4, 1], A[4, 2] = v / c, t
    B = np.zeros((5, 2))
    B[2, 0] = c / m
    B[3, 1] = 1 / Jc
    poly = np.array([1.0, w * t + mu * v, 2 * a * mu * w ** 2 + mu * v * w * t, -mu * v * w ** 2])
    return A, B, poly


def main(argv=None) -> dict:
    """Build, check, linearize and print; returns the key numbers as a dict."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--mass", type=float, default=2.0, help="mass m in kg")
    parser.add_argument("--inertia", type=float, default=0.3, help="inertia J about the CM in kg m^2")
    parser.add_argument("--offset", type=float, default=0.4, help="CM ahead of the blade, a in m")
    parser.add_argument("--speed", type=float, default=1.2, help="blade speed v in m/s")
    parser.add_argument("--turn-rate", type=float, default=0.7, help="turn rate w in rad/s")
    parser.add_argument("--samples", type=int, default=41, help="linearization samples on the arc")
    args = parser.parse_args(argv)
    par = dict(mass=args.mass, inertia=args.inertia, offset=args.offset)
    motion = dict(speed=args.speed, turn_rate=args.turn_rate)
    fmt = dict(precision=5, suppress_small=True, max_line_width=110)  # local, not np.set_printoptions

    # 1. the system, checked against the contract (shapes, symmetry, rank, bias, complex-step safety)
    sleigh = make_sleigh(**par)
    rng = np.random.default_rng(1)
    problems = ballctl.check_system(
        sleigh, rng.normal(size=3), rng.normal(size=3), rng.normal(size=2))
    print(f"check_system: {problems or 'no problems'}")

    # 2. the closed-form steady turn, on the arc |heading| <= 60 deg where y can be dependent
    h0 = -np.sign(args.turn_rate) * np.pi / 3  # the arc runs from -60 to +60 deg (or back)
    ref = SteadyTurn(sleigh, heading0=h0, **{k: par[k] for k in ("mass", "offset")}, **motion)
    t_end = (2 * np.pi / 3) / abs(args.turn_rate)
    times = np.linspace(0.0, t_end, args.samples)
    s = ref(times)
    residual = max(float(np.abs(sleigh.dynamics_residual(s.x[k], s.xd[k], s.xdd[k], s.lam[k], s.u[k])).max())
                   for k in range(len(times)))
    constraint = float(np.abs(np.einsum("kij,kj->ki", np.stack([sleigh.constraint_jacobian(x) for x in s.x]),
                                        s.xd)).max())
    print(f"steady turn: F0 = {s.u[0, 0]:.6g} N, tau0 = {s.u[0, 1]:.6g} N m, lam0 = {s.lam[0, 0]:.6g} N; "
          f"max DAE residual {residual:.2e}, max D xd {constraint:.2e}")

    # the nonlinear model under the constant inputs (F0, tau0) follows the circle
    run = ballctl.simulate(sleigh, s.x[0], s.xd[0], s.u[0], (0.0, t_end), t_eval=times,
                           options=ballctl.SimulationOptions(rtol=1e-12, atol=1e-12))
    sim_deviation = float(np.abs(run.x - s.x).max())
    print(f"ballctl.simulate under constant (F0, tau0): largest deviation from the circle {sim_deviation:.2e}")

    # 3. linearize along the reference
    partition = ballctl.Partition.from_coordinates(sleigh, ["x", "heading"], ["y"])
    ltv = ballctl.linearize(sleigh, ref, times, partition)
    k = len(times) // 2
    A_exact, B_exact, poly = analytic_ltv(s.x[k, 2], **par, **motion)
    eig = np.linalg.eigvals(ltv.A[k])
    print(f"partition {partition.describe()}, states {ltv.state_names}, derivatives: {ltv.derivative_method}")
    print(f"A at t = {times[k]:.4g} s (heading {np.rad2deg(s.x[k, 2]):.3g} deg):\n"
          f"{np.array2string(ltv.A[k], **fmt)}")
    print(f"B:\n{np.array2string(ltv.B[k], **fmt)}")
    print(f"eigenvalues of A: {np.sort_complex(eig)}")
    print(f"predicted: 0, 0 and the roots of p(s): {np.sort_complex(np.roots(poly))}")
    A_err = max(float(np.abs(ltv.A[j] - analytic_ltv(s.x[j, 2], **par, **motion)[0]).max())
                for j in range(len(times)))
    B_err = max(float(np.abs(ltv.B[j] - analytic_ltv(s.x[j, 2], **par, **motion)[1]).max())
                for j in range(len(times)))
    print(f"largest difference from the closed-form A, B over the arc: {A_err:.2e}, {B_err:.2e}")

    # 4. the frozen-time snapshot for python-control
    snapshot = ltv.to_statespace(k)
    print(f"python-control snapshot: {snapshot.nstates} states, {snapshot.ninputs} inputs, "
          f"poles {np.sort_complex(snapshot.poles())}")
    return {"problems": problems, "residual": residual, "constraint_residual": constraint,
            "sim_deviation": sim_deviation, "A": ltv.A[k], "B": ltv.B[k], "A_exact": A_exact,
            "B_exact": B_exact, "eigenvalues": eig, "p_roots": np.roots(poly), "A_error": A_err,
            "B_error": B_err, "ltv": ltv, "snapshot": snapshot, "reference": ref, "system": sleigh}


if __name__ == "__main__":
    main()
