"""The coordinate-partition linearizer: analytic coefficients, an independent numerical path,
nonlinear simulation (eps^2 convergence) and fixtures with holonomic and nonholonomic constraints."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

import ballctl
from ballctl.linear.linearize import linearize_samples
from fixtures_systems import SampledReference, cart_pendulum, knife_edge, rolling_coin_on_rail


def paper_partition(plant):
    return ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])


def analytic_ball_plate_ltv(plant, ref, t):
    """A(t), B(t) along the circle for X = (x, y, yaw, x', y', yaw', lean, roll), derived by hand.

    Contact rows: x'' = k_b g cos(a) sin(b), y'' = -k_b g sin(a) (orientation-free).
    Orientation rows from eqs. (45)-(46) and the conserved spin; coefficients of appendix C,
    eqs. (116)-(121): a1 = -Omega^2, a2 = -a5 (Omega - omega sin(phi0)), a3 = rho omega / R,
    a4 = 1/R, a5 = Omega/(rho omega), a6 = a5 Omega R sin(phi0), b1..b5.
    """
    p = plant.params
    kb, g, R = p.rolling_gain, p.gravity, p.radius
    rho, w, Om, phi0 = ref.radius, ref.omega, ref.roll_rate, ref.lean
    s = ref(t)
    A = np.zeros((len(t), 8, 8))
    B = np.zeros((len(t), 8, 2))
    A[:, 0, 3] = A[:, 1, 4] = A[:, 2, 5] = 1.0
    a1 = -Om ** 2
    a5 = Om / (rho * w)
    a2 = -a5 * (Om - w * np.sqrt(1 - (rho * w / (Om * R)) ** 2))
    a3 = rho * w / R
    a4 = 1 / R
    a6 = a5 * Om * R * np.sqrt(1 - (rho * w / (Om * R)) ** 2)
    c, sn = np.cos(w * t), np.sin(w * t)
    f1 = np.cos(s.u[:, 0])
    f2 = np.cos(s.u[:, 1])
    b1 = rho ** 2 * w ** 4 / (kb * g * f1) * sn * c
    b2 = kb * g * f1 * f2
    b3 = -kb * g * f1
    b4 = kb * g * np.tan(phi0) / (R * f1) * c
    # b5: the text conversion lost the fraction bars; the yaw response is -(tan(phi0)/R) times
    # the tangential acceleration, which puts f1 f2 in the numerator (the reading with f1 f2 in
    # the denominator differs by the constant factor 1 - k^2 and fails the independent FD check)
    b5 = kb * g * np.tan(phi0) * sn * f1 * f2 / R
    # lateral unit vector e = (sin yaw, -cos yaw) = (cos wt, sin wt) (radial, outward)
    A[:, 5, 2] = a1
    A[:, 5, 3] = a2 * c
    A[:, 5, 4] = a2 * sn
    A[:, 6, 2] = a3
    A[:, 6, 3] = a4 * c
    A[:, 6, 4] = a4 * sn
    # roll' = (v . n)/(R cos phi), n = (cos yaw, sin yaw) = (-sin wt, cos wt)
    A[:, 7, 3] = -sn / (R * np.cos(phi0))
    A[:, 7, 4] = c / (R * np.cos(phi0))
    A[:, 7, 6] = a6
    B[:, 3, 0] = b1
    B[:, 3, 1] = b2
    B[:, 4, 0] = b3
    B[:, 5, 0] = b4
    B[:, 5, 1] = b5
    return A, B


def test_ball_plate_linearization_matches_appendix_c(rng):
    plant = ballctl.BallPlate()
    for rho, w, Om in [(0.5, 1.0, 40.0), (0.2, 1.7, 30.0)]:
        ref = ballctl.CircularMotion(plant, rho, w, Om)
        t = np.sort(rng.uniform(0, 2 * ref.period, 9))
        ltv = ballctl.linearize(plant, ref, t, paper_partition(plant))
        A, B = analytic_ball_plate_ltv(plant, ref, t)
        assert ltv.derivative_method == "complex-step"
        # complex-step derivatives: agreement to rounding relative to the largest entry
        np.testing.assert_allclose(ltv.A, A, atol=1e-10 * np.abs(A).max())
        np.testing.assert_allclose(ltv.B, B, atol=1e-10 * np.abs(B).max())
        # the dynamic subsystem does not see lean and roll: A23 = 0
        assert np.abs(ltv.A[:, 3:6, 6:]).max() < 1e-10


def reduced_ode_jacobian(system, partition, x0, xd0, u0, h=1e-6):
    """Independent path: central differences of the reduced nonlinear ODE z' = f(z, u).

    z = (x_ai, xd_ai, x_ad); dependent holonomic coordinates by Newton on C(x) = 0, dependent
    velocities by solving D(x) xd = 0, accelerations from the index-1 equations.
    """
    n = system.n_coordinates
    ai, ad, d = list(partition.independent), list(partition.admissible_dependent), list(partition.dependent)
    dep = ad + d
    nai = len(ai)

    def full(z):
        x = x0.copy()
        x[ai] = z[:nai]
        x[ad] = z[2 * nai:]
        for _ in range(30):
            if not d:
                break
            C = system.holonomic(x)
            Cx = system.constraint_jacobian(x)[: len(d)]
            x[d] -= np.linalg.solve(Cx[:, d], C)
        D = system.constraint_jacobian(x)
        xd = np.zeros(n)
        xd[ai] = z[nai:2 * nai]
        xd[dep] = -np.linalg.solve(D[:, dep], D[:, ai] @ xd[ai])
        return x, xd

    def f(z, u):
        x, xd = full(z)
        xdd, _ = system.accelerations(x, xd, u)
        return np.concatenate([xd[ai], xdd[ai], xd[ad]])

    z0 = np.concatenate([x0[ai], xd0[ai], x0[ad]])
    N = z0.size
    A = np.zeros((N, N))
    for j in range(N):
        e = np.zeros(N)
        e[j] = h
        A[:, j] = (f(z0 + e, u0) - f(z0 - e, u0)) / (2 * h)
    B = np.zeros((N, system.n_inputs))
    for j in range(system.n_inputs):
        e = np.zeros(system.n_inputs)
        e[j] = h
        B[:, j] = (f(z0, u0 + e) - f(z0, u0 - e)) / (2 * h)
    return A, B


def test_ball_plate_against_finite_differences_of_the_reduced_ode(rng):
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.3, -1.2, 35.0, center=(0.1, 0.05))
    for part in [paper_partition(plant),
                 ballctl.Partition.from_coordinates(plant, ["yaw", "lean", "roll"], ["contact_x", "contact_y"])]:
        t = rng.uniform(0, 10, 3)
        s = ref(t)
        for k in range(3):
            A, B = ballctl.linear.linearize_at(plant, s.x[k], s.xd[k], s.xdd[k], s.u[k], part)
            A_fd, B_fd = reduced_ode_jacobian(plant, part, s.x[k], s.xd[k], s.u[k])
            # central differences with h = 1e-6: O(h^2) truncation, 1e-10/h rounding -> ~1e-6 relative
            np.testing.assert_allclose(A, A_fd, atol=2e-6 * np.abs(A).max())
            np.testing.assert_allclose(B, B_fd, atol=2e-6 * np.abs(B).max())


def simulate_ltv(ltv_fn, t_span, X0, t_eval):
    sol = solve_ivp(lambda t, X: ltv_fn(t) @ X, t_span, X0, method="DOP853", rtol=1e-11, atol=1e-14,
                    t_eval=t_eval)
    return sol.y.T


def test_nonlinear_deviation_approaches_ltv_response_like_eps_squared():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = paper_partition(plant)
    T = ref.period
    t_eval = np.linspace(0, T, 21)
    ltv0 = ballctl.linearize(plant, ref, np.linspace(0, T, 2001), part)
    direction = np.array([1.0, -0.5, 0.02, 0.3, 0.2, 0.5, 0.01, 0.02])
    # cubic interpolation of A on 2001 samples: error ~ (T/2000)^4 |d4A/dt4|, far below the eps^2 effects
    A_spline = CubicSpline(ltv0.t, ltv0.A, axis=0)

    def A_of_t(t):
        return A_spline(t)

    X_lin = simulate_ltv(A_of_t, (0, T), direction, t_eval)
    errors = []
    for eps in (1e-5, 5e-6):
        dx, dxd = ltv0.expand(0, eps * direction)
        s0 = ref(0.0)
        # exact nonlinear start: independent velocities from X, dependent ones from D(x) xd = 0
        x_start = s0.x + dx
        xd_start = part.complete_velocities(plant, x_start, s0.xd + dxd)
        res = ballctl.simulate(plant, x_start, xd_start, lambda tt: ref(tt).u, (0, T),
                               t_eval=t_eval,
                               options=ballctl.SimulationOptions(rtol=1e-12, atol=1e-14, stabilization=None))
        assert res.max_constraint_residual < 1e-12  # the perturbed start satisfies the constraints
        s = ref(t_eval)
        X_nl = ltv0.reduce(res.x - s.x, res.xd - s.xd)
        errors.append(np.abs(X_nl - eps * X_lin).max() / eps)
    # relative error is O(eps): halving eps halves it (ratio 2 within 10 %), i.e. absolute O(eps^2)
    ratio = errors[0] / errors[1]
    assert 1.8 < ratio < 2.2, (errors, ratio)
    assert errors[0] < 0.05


def test_state_map_round_trip_and_constraints(rng):
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    ltv = ballctl.linearize(plant, ref, np.linspace(0, 3, 4), paper_partition(plant))
    s = ref(ltv.t)
    for k in range(4):
        X = rng.normal(size=8)
        dx, dxd = ltv.expand(k, X)
        np.testing.assert_allclose(ltv.reduce(dx, dxd), X, rtol=1e-14)
        # the full deviation satisfies the linearized velocity constraint D dxd + d(D xd0)/dx dx = 0
        eps = 1e-6
        viol = plant.constraint_jacobian(s.x[k] + eps * dx) @ (s.xd[k] + eps * dxd)
        assert np.abs(viol).max() < 1e-9  # O(eps^2) with eps = 1e-6


def test_knife_edge_straight_line_has_the_known_linearization():
    sys = knife_edge(mass=2.0, inertia=0.3)
    v = 1.5

    def fn(t):
        K = t.size
        x = np.column_stack([v * t, np.zeros(K), np.zeros(K)])
        xd = np.column_stack([np.full(K, v), np.zeros(K), np.zeros(K)])
        return x, xd, np.zeros((K, 3)), np.zeros((K, 2)), np.zeros((K, 1))

    part = ballctl.Partition.from_coordinates(sys, ["x", "heading"], ["y"])
    ltv = ballctl.linearize(sys, SampledReference(sys, fn), [0.0, 1.0], part)
    # X = (dx, dheading, dxd, dheadingd, dy): xdd = F/m, headingdd = tau/J, yd = v dheading
    A = np.zeros((5, 5))
    A[0, 2] = A[1, 3] = 1.0
    A[4, 1] = v
    B = np.zeros((5, 2))
    B[2, 0] = 1 / 2.0
    B[3, 1] = 1 / 0.3
    np.testing.assert_allclose(ltv.A[1], A, atol=1e-14)
    np.testing.assert_allclose(ltv.B[1], B, atol=1e-14)


def test_knife_edge_turning_against_finite_differences():
    sys = knife_edge()
    v, w = 1.2, 0.7  # circle of radius v/w, constant speed and turn rate: no force, no torque

    def fn(t):
        h = w * t
        x = np.column_stack([v / w * np.sin(h), v / w * (1 - np.cos(h)), h])
        xd = np.column_stack([v * np.cos(h), v * np.sin(h), np.full(t.size, w)])
        xdd = np.column_stack([-v * w * np.sin(h), v * w * np.cos(h), np.zeros(t.size)])
        # lateral acceleration v w supplied by the constraint: -D^T lam = m a_lat
        lam = np.column_stack([2.0 * v * w * np.ones(t.size)])
        return x, xd, xdd, np.zeros((t.size, 2)), lam

    ref = SampledReference(sys, fn)
    s = ref(np.array([0.4]))
    assert np.abs(sys.dynamics_residual(s.x[0], s.xd[0], s.xdd[0], s.lam[0], s.u[0])).max() < 1e-12
    part = ballctl.Partition.from_coordinates(sys, ["x", "heading"], ["y"])
    A, B = ballctl.linear.linearize_at(sys, s.x[0], s.xd[0], s.xdd[0], s.u[0], part)
    A_fd, B_fd = reduced_ode_jacobian(sys, part, s.x[0], s.xd[0], s.u[0])
    np.testing.assert_allclose(A, A_fd, atol=1e-7)
    np.testing.assert_allclose(B, B_fd, atol=1e-7)


def test_pendulum_with_holonomic_constraint_linearizes_to_the_textbook_oscillator():
    m, L, g = 1.3, 0.8, 9.81
    sys = cart_pendulum(m, L, g)
    part = ballctl.Partition.from_coordinates(sys, ["px"], [], ["py"])
    # hanging equilibrium: lam from m g = -D^T lam -> D = (0, -2L): lam = -m g / (2 L)... solved internally
    A, B = ballctl.linear.linearize_at(sys, [0.0, -L], [0.0, 0.0], [0.0, 0.0], [0.0], part)
    np.testing.assert_allclose(A, [[0, 1], [-g / L, 0]], atol=1e-12)
    np.testing.assert_allclose(B, [[0], [1 / m]], atol=1e-14)
    # and along a large swing, against the independent numerical path
    th, thd, thdd = 0.9, 1.1, -g / L * np.sin(0.9)
    x = np.array([L * np.sin(th), -L * np.cos(th)])
    xd = np.array([L * np.cos(th), L * np.sin(th)]) * thd
    xdd = np.array([L * np.cos(th), L * np.sin(th)]) * thdd + np.array([-L * np.sin(th), L * np.cos(th)]) * thd ** 2
    A, B = ballctl.linear.linearize_at(sys, x, xd, xdd, [0.0], part)
    A_fd, B_fd = reduced_ode_jacobian(sys, part, x, xd, np.array([0.0]))
    np.testing.assert_allclose(A, A_fd, atol=1e-7)
    np.testing.assert_allclose(B, B_fd, atol=1e-8)


def test_system_with_both_constraint_kinds():
    sys = rolling_coin_on_rail()
    part = ballctl.Partition.from_coordinates(sys, ["angle"], ["s"], ["z"])
    x = np.array([0.3, 0.06, 3.0])
    xd = np.array([0.5, 0.1, 5.0])
    xdd, lam = sys.accelerations(x, xd, [0.1])
    A, B = ballctl.linear.linearize_at(sys, x, xd, xdd, [0.1], part)
    A_fd, B_fd = reduced_ode_jacobian(sys, part, x, xd, np.array([0.1]))
    np.testing.assert_allclose(A, A_fd, atol=1e-7)
    np.testing.assert_allclose(B, B_fd, atol=1e-7)
    assert A.shape == (3, 3)  # N = 2(n - m) - l = 3


def test_automatic_partition_and_singular_partitions():
    plant = ballctl.BallPlate()
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    auto = ballctl.Partition.automatic(plant, x)
    assert len(auto.independent) == 3 and len(auto.admissible_dependent) == 2
    with pytest.raises(ballctl.errors.PartitionError, match="missing: roll"):
        ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "lean"])
    with pytest.raises(ballctl.errors.PartitionError, match="independent must have 3 coordinates"):
        ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y"], ["yaw", "lean", "roll"])
    with pytest.raises(ballctl.errors.PartitionError, match="unknown coordinate 'pitch'"):
        ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "pitch"], ["lean", "roll"])
    # contact_x and contact_y dependent are fine, but (contact_x, lean) dependent is singular
    # when yaw = 0 and lean = 0: D[:, (x, lean)] = [[1, 0], [0, R]] is fine; at yaw = pi/2 it is [[1, -R], [0, 0]]
    bad = ballctl.Partition.from_coordinates(plant, ["contact_y", "yaw", "roll"], ["contact_x", "lean"])
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    with pytest.raises(ballctl.errors.PartitionError,
                       match=r"D_dd \(columns of D for contact_x, lean\) is singular at t=0 s"):
        ballctl.linearize(plant, ref, [0.0, 1.0], bad)


def test_vectorized_equals_per_sample_and_user_loop():
    plant = ballctl.BallPlate()
    ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    part = paper_partition(plant)
    t = np.linspace(0, 6, 7)
    ltv = ballctl.linearize(plant, ref, t, part)
    user = ballctl.ConstrainedSystem(
        n_coordinates=5, n_holonomic=0, n_nonholonomic=2, n_inputs=2, coordinate_names=plant.coordinate_names,
        input_names=plant.input_names,
        equations=ballctl.SystemEquations(
            mass_matrix=lambda x, u: plant.mass_matrix(x, u)[()] if x.ndim == 1 else 1 / 0,
            forces=lambda x, xd, u: plant.forces(x, xd, u) if x.ndim == 1 else 1 / 0,
            constraint_jacobian=lambda x: plant.constraint_jacobian(x) if x.ndim == 1 else 1 / 0,
        ),
    )
    ltv_user = linearize_samples(user, ref(t), ballctl.Partition.from_coordinates(
        user, ["contact_x", "contact_y", "yaw"], ["lean", "roll"]))
    # user system: numerical Ddot xd (4th-order differences) -> ~1e-9 relative
    np.testing.assert_allclose(ltv_user.A, ltv.A, atol=1e-7 * np.abs(ltv.A).max())
    np.testing.assert_allclose(ltv_user.B, ltv.B, atol=1e-12 * np.abs(ltv.B).max())
    snap = ltv.to_statespace(3)
    np.testing.assert_array_equal(snap.A, ltv.A[3])
    assert list(snap.state_labels) == list(part.state_names)


def test_one_by_one_dependent_block_near_zero_is_caught():
    # knife edge with y dependent: D_dd = -cos(heading), singular at heading = 90 deg; a 1x1 block
    # always has condition number 1, so the check must compare it with the scale of D
    sys = knife_edge()
    part = ballctl.Partition.from_coordinates(sys, ["x", "heading"], ["y"])
    part.check(sys, [0.0, 0.0, 1.0])
    with pytest.raises(ballctl.errors.PartitionError, match="is singular"):
        part.check(sys, [0.0, 0.0, np.pi / 2 - 1e-12])


def test_compiled_stack_inverse_equals_lapack_and_flags_singular_matrices():
    """inverse_stack (the linearizer's small solves) equals numpy's LAPACK inverse to 1e-12 relative on
    well-conditioned random matrices, and marks an exactly singular matrix instead of returning garbage."""
    from ballctl._linalg import inverse_stack

    rng = np.random.default_rng(3)
    for k in (1, 2, 3, 6):
        A = rng.normal(size=(50, k, k)) + 3 * np.eye(k)
        inv, ok = inverse_stack(A)
        assert ok.all()
        assert np.abs(inv - np.linalg.inv(A)).max() < 1e-12 * np.abs(np.linalg.inv(A)).max()
    A = rng.normal(size=(3, 3, 3))
    A[1] = 0.0                                       # exactly singular: a zero pivot
    inv, ok = inverse_stack(A)
    assert ok.tolist() == [True, False, True] and np.isnan(inv[1]).all()
