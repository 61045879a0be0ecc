"""Tests of ballctl.design.lqr: Bryson weights, finite-horizon and periodic LQR against oracles."""

import warnings

import control
import numpy as np
import pytest

from ballctl.linear.discretize import DiscreteLTVSystem, discretize
from ballctl.design.lqr import (FiniteHorizonLQR, RiccatiConditioningWarning, RiccatiConvergenceError, bryson,
                                riccati_sweep,
                         finite_horizon_lqr, periodic_lqr)
from ballctl.linear.ltv import LTVSystem

_sys = DiscreteLTVSystem.from_arrays


def _random_lti(seed, N=4, nu=2):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, N)) * 0.5
    A += np.eye(N) * (1.05 - np.max(np.abs(np.linalg.eigvals(A))))  # spectral radius ~1.05: open-loop unstable
    B = rng.normal(size=(N, nu))
    return A, B


# ------------------------------------------------------------------- bryson
def test_bryson_values_in_name_order():
    Q, R = bryson(["x", "v", "y"], ["a", "b"], {"y": 0.5, "x": 0.1, "v": 2.0}, {"b": 4.0, "a": 0.01})
    # order follows state_names, not the dict; 1 ulp slack because 1/0.1**2 rounds to 99.99999999999999
    np.testing.assert_allclose(Q, np.diag([100.0, 0.25, 4.0]), rtol=2e-16, atol=0)
    np.testing.assert_allclose(R, np.diag([1e4, 1.0 / 16.0]), rtol=1e-15)


def test_bryson_reports_every_problem_at_once():
    with pytest.raises(ValueError) as info:
        bryson(["x", "v"], ["a"], {"x": 0.1, "vv": 1.0}, {"a": -1.0})
    msg = str(info.value)
    assert "unknown state names ['vv']" in msg
    assert "missing ['v']" in msg
    assert "max_input_errors['a'] must be finite and > 0" in msg
    with pytest.raises(ValueError, match=r"max_state_errors\['x'\] must be finite and > 0"):
        bryson(["x"], ["a"], {"x": float("inf")}, {"a": 1.0})
    with pytest.raises(ValueError, match=r"max_input_errors\['a'\] must be finite and > 0, got 0"):
        bryson(["x"], ["a"], {"x": 1.0}, {"a": 0})


# ------------------------------------------------------------- finite horizon
def test_long_horizon_gain_equals_dlqr():
    A, B = _random_lti(0)
    Q = np.diag([1.0, 2.0, 0.5, 3.0])
    R = np.diag([0.3, 1.0])
    K_inf, P_inf, _ = control.dlqr(A, B, Q, R)  # slycot SB02OD
    Kt = 400
    lqr = finite_horizon_lqr(_sys(np.broadcast_to(A, (Kt, 4, 4)), np.broadcast_to(B, (Kt, 4, 2))), Q, R, Q_N=Q)
    # The recursion converges geometrically at rate rho(A - BK)^2 ~ 0.25 per step; after
    # 400 steps the truncation is far below rounding, so what remains is rounding in
    # two different solvers on a well-conditioned problem (measured 1e-15 relative).
    # 1e-11 leaves room for other BLAS builds and still catches a wrong sign/transpose.
    np.testing.assert_allclose(lqr.gains[0], K_inf, rtol=0, atol=1e-11 * np.abs(K_inf).max())
    np.testing.assert_allclose(lqr.riccati[0], P_inf, rtol=0, atol=1e-11 * np.abs(P_inf).max())
    # and the last gain is the one-step gain with P_N = Q_N, which differs: the test is not vacuous
    assert np.abs(lqr.gains[-1] - K_inf).max() > 1e-3


def test_scalar_matches_closed_form_recursion():
    a, b, q, r, qn = 1.2, 0.5, 2.0, 0.7, 5.0
    Kt = 25
    lqr = finite_horizon_lqr(_sys(np.full((Kt, 1, 1), a), np.full((Kt, 1, 1), b)), [[q]], [[r]], Q_N=[[qn]])
    p = qn
    for k in range(Kt - 1, -1, -1):
        kk = a * b * p / (r + b * b * p)          # eq. (28), scalar
        p = q + a * a * p - a * b * p * kk        # eq. (29), scalar
        # same arithmetic in another order: agreement to a few ulps of the O(10) values
        assert lqr.gains[k, 0, 0] == pytest.approx(kk, rel=1e-13)
        assert lqr.riccati[k, 0, 0] == pytest.approx(p, rel=1e-13)
    assert lqr.riccati[Kt, 0, 0] == qn


def _time_varying(seed, Kt=30, N=3, nu=2):
    rng = np.random.default_rng(seed)
    Ad = np.eye(N) + 0.2 * rng.normal(size=(Kt, N, N))
    Bd = 0.5 * rng.normal(size=(Kt, N, nu))
    L = rng.normal(size=(Kt, N, N))
    Q = L @ np.swapaxes(L, 1, 2) * 0.1 + np.eye(N) * 0.01  # time-varying Q (Kt, N, N)
    R = np.diag([0.5, 2.0])
    return Ad, Bd, Q, R, np.eye(N) * 3.0


def test_lqr_sequence_is_never_beaten_by_perturbations():
    Ad, Bd, Q, R, QN = _time_varying(1)
    lqr = finite_horizon_lqr(_sys(Ad, Bd), Q, R, Q_N=QN)
    rng = np.random.default_rng(2)
    for _ in range(10):
        X0 = rng.normal(size=3)
        roll = lqr.rollout(X0)
        J_star = lqr.cost(X0, roll.du)
        # the optimal cost is X0' P0 X0 (dynamic programming), up to rounding of O(100) sums
        assert J_star == pytest.approx(X0 @ lqr.riccati[0] @ X0, rel=1e-11)
        assert roll.cost == pytest.approx(J_star, rel=1e-12)
        for scale in (1e-3, 1e-1, 1.0):
            delta = scale * rng.normal(size=roll.du.shape) * np.abs(roll.du).max()
            # J(u* + d) - J(u*) = d' H d >= 0 exactly (no linear term at the optimum); the
            # 1e-12 slack only absorbs rounding in J_star, far below the smallest increase
            # (scale 1e-3 gives ~1e-6 relative).
            assert lqr.cost(X0, roll.du + delta) > J_star * (1 - 1e-12)
            assert lqr.cost(X0, roll.du + delta) - J_star > 0


def test_rollout_is_the_closed_loop():
    Ad, Bd, Q, R, QN = _time_varying(3)
    lqr = finite_horizon_lqr(_sys(Ad, Bd), Q, R, Q_N=QN)
    X0 = np.array([1.0, -2.0, 0.5])
    roll = lqr.rollout(X0)
    assert roll.X.shape == (31, 3) and roll.du.shape == (30, 2)
    for k in (0, 17, 29):
        np.testing.assert_allclose(roll.du[k], -lqr.gains[k] @ roll.X[k], rtol=1e-15, atol=0)
        np.testing.assert_allclose(roll.X[k + 1], (Ad[k] - Bd[k] @ lqr.gains[k]) @ roll.X[k], rtol=1e-12,
                                   atol=1e-14)


def test_riccati_symmetric_and_results_read_only():
    Ad, Bd, Q, R, QN = _time_varying(4)
    Ad_in = Ad.copy()
    lqr = finite_horizon_lqr(_sys(Ad_in, Bd), Q, R, Q_N=QN)
    np.testing.assert_array_equal(lqr.riccati, np.swapaxes(lqr.riccati, 1, 2))  # exactly: symmetrized each step
    assert np.all(np.linalg.eigvalsh(lqr.riccati) > 0)
    Ad_in[:] = 0.0  # editing the input must not change the result
    assert np.array_equal(lqr.Ad, Ad)
    with pytest.raises(ValueError):
        lqr.gains[0, 0, 0] = 1.0
    assert isinstance(lqr, FiniteHorizonLQR) and lqr.horizon_steps == 30


def test_accepts_discrete_ltv_system():
    A, B = _random_lti(5, N=2, nu=1)
    ltv = LTVSystem(np.arange(10) * 0.1, np.broadcast_to(A, (10, 2, 2)), np.broadcast_to(B, (10, 2, 1)),
                    ("x", "v"), ("a",))
    d = discretize(ltv, 0.1)
    lqr_sys = finite_horizon_lqr(d, np.eye(2), np.eye(1), Q_N=np.eye(2))
    # the array form of 0.1 is gone: one type per positional argument
    with pytest.raises(TypeError, match="DiscreteLTVSystem"):
        finite_horizon_lqr(d.Ad, np.eye(2), np.eye(1))
    with pytest.raises(TypeError, match="DiscreteLTVSystem"):
        periodic_lqr(d.Ad, np.eye(2), np.eye(1))
    # python-control's unpacking: K, S, E
    K, S, E = lqr_sys
    assert K is lqr_sys.gains and S is lqr_sys.riccati
    np.testing.assert_allclose(np.sort_complex(E[3]), np.sort_complex(np.linalg.eigvals(d.Ad[3] - d.Bd[3] @ K[3])),
                               rtol=1e-14)


def _plain_sweep(Ad, Bd, Q, R, QN):
    """Textbook eqs. (28)-(29), written independently of riccati_sweep (no symmetrization, no checks)."""
    P = QN
    gains = np.empty((Ad.shape[0], Bd.shape[2], Ad.shape[1]))
    for k in range(Ad.shape[0] - 1, -1, -1):
        A, B = Ad[k], Bd[k]
        gains[k] = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        P = Q[k] + A.T @ P @ A - A.T @ P @ B @ gains[k]
    return gains, P


def test_sweep_gains_equal_a_plain_sweep():
    Ad, Bd, Q, R, QN = _time_varying(8, Kt=200, N=4, nu=2)
    K, P, S = riccati_sweep(Ad, Bd, Q, np.broadcast_to(R, (200, 2, 2)), QN)
    K_ref, P0_ref = _plain_sweep(Ad, Bd, Q, R, QN)
    # same operations up to symmetrization (which changes P by rounding only): 1e-12 relative
    np.testing.assert_allclose(K, K_ref, rtol=0, atol=1e-12 * np.abs(K_ref).max())
    np.testing.assert_allclose(P[0], P0_ref, rtol=0, atol=1e-12 * np.abs(P0_ref).max())
    np.testing.assert_array_equal(S, np.swapaxes(S, 1, 2))


def test_sweep_names_the_failing_step():
    Ad = np.broadcast_to(np.eye(2), (6, 2, 2))
    Bd = np.zeros((6, 2, 1))
    R = np.zeros((6, 1, 1))
    R[:4] = 1.0   # R = 0 at steps 4, 5 and B = 0: S is exactly singular there
    with pytest.raises(np.linalg.LinAlgError, match="step 5 of 6"):
        riccati_sweep(Ad, Bd, np.broadcast_to(np.eye(2), (6, 2, 2)), R, np.eye(2))


@pytest.mark.slow
def test_sweep_stays_finite_and_symmetric_over_a_million_steps():
    """An unstable, barely stabilizable 2-state system over 1e6 steps: P stays finite, exactly symmetric,
    positive definite and at its stationary value (control.dlqr), with no drift over the horizon."""
    Kt = 1_000_000
    A = np.array([[1.05, 0.1], [0.0, 0.98]])
    B = np.array([[0.0], [0.1]])
    Q, R = np.eye(2), np.array([[10.0]])
    K, P, S = riccati_sweep(np.broadcast_to(A, (Kt, 2, 2)), np.broadcast_to(B, (Kt, 2, 1)),
                            np.broadcast_to(Q, (Kt, 2, 2)), np.broadcast_to(R, (Kt, 1, 1)), Q, check_every=4096)
    assert np.all(np.isfinite(P))
    np.testing.assert_array_equal(P, np.swapaxes(P, 1, 2))
    K_inf, P_inf, _ = control.dlqr(A, B, Q, R)
    for k in (0, Kt // 2, Kt - 10_000):
        np.testing.assert_allclose(P[k], P_inf, rtol=0, atol=1e-9 * np.abs(P_inf).max())
        np.testing.assert_allclose(K[k], K_inf, rtol=0, atol=1e-9 * np.abs(K_inf).max())
    assert np.all(np.linalg.eigvalsh(P[::1000]) > 0)


def test_ill_conditioning_is_reported():
    # the second input does not act on the state and is almost free: R + B'PB has
    # eigenvalues ~1 and 1e-14, cond ~1e14 > 1e12
    Kt = 5
    Ad = np.broadcast_to(np.eye(2), (Kt, 2, 2))
    Bd = np.broadcast_to(np.array([[1.0, 0.0], [0.0, 0.0]]), (Kt, 2, 2))
    with pytest.warns(RiccatiConditioningWarning, match="ill-conditioned at 5 of 5 steps"):
        lqr = finite_horizon_lqr(_sys(Ad, Bd), np.eye(2), np.diag([1.0, 1e-14]), Q_N=np.eye(2))
    assert lqr.condition_numbers.min() > 1e13
    assert lqr.ill_conditioned_steps.tolist() == [0, 1, 2, 3, 4]
    assert "ill-conditioned steps (> 1e+12): 5" in lqr.report()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        finite_horizon_lqr(_sys(Ad, Bd), np.eye(2), np.eye(2), Q_N=np.eye(2))  # well-conditioned: silent


@pytest.mark.parametrize("Q, R, QN, match", [
    (np.eye(2), np.diag([1.0, 0.0]), np.eye(2), "R must be positive definite"),
    (np.array([[1.0, 1.0], [0.0, 1.0]]), np.eye(2), np.eye(2), "Q must be symmetric"),
    (np.eye(2), np.eye(2), -np.eye(2), "Q_N must be positive semidefinite"),
    (np.eye(3), np.eye(2), np.eye(2), r"Q must have shape \(2, 2\) or \(4, 2, 2\)"),
    (np.eye(2), np.eye(2), np.eye(3), r"Q_N must be a finite \(2, 2\) matrix"),
])
def test_bad_weights(Q, R, QN, match):
    Ad = np.broadcast_to(np.eye(2), (4, 2, 2))
    Bd = np.broadcast_to(np.eye(2), (4, 2, 2))
    with pytest.raises(ValueError, match=match):
        finite_horizon_lqr(_sys(Ad, Bd), Q, R, Q_N=QN)


def test_cost_argument_checks():
    lqr = finite_horizon_lqr(_sys(np.ones((3, 1, 1)), np.ones((3, 1, 1))), np.eye(1), np.eye(1), Q_N=np.eye(1))
    with pytest.raises(ValueError, match=r"du_sequence must be a finite array of shape \(3, 1\)"):
        lqr.cost([1.0], np.zeros(3))
    with pytest.raises(ValueError, match="X0 must be a finite vector of length 1"):
        lqr.rollout([1.0, 2.0])


# ------------------------------------------------------------------ periodic
def test_periodic_constant_system_equals_dlqr():
    A, B = _random_lti(6)
    Q, R = np.eye(4), np.diag([0.5, 2.0])
    K_inf, P_inf, _ = control.dlqr(A, B, Q, R)
    T = 3
    p = periodic_lqr(_sys(np.broadcast_to(A, (T, 4, 4)), np.broadcast_to(B, (T, 4, 2))), Q, R, tol=1e-14)
    for k in range(T):  # 1e-11 relative: the same solver-rounding margin as the finite-horizon test
        np.testing.assert_allclose(p.gains[k], K_inf, rtol=0, atol=1e-11 * np.abs(K_inf).max())
    np.testing.assert_allclose(p.riccati[0], P_inf, rtol=0, atol=1e-11 * np.abs(P_inf).max())
    cl = np.max(np.abs(np.linalg.eigvals(A - B @ K_inf)))
    assert p.spectral_radius == pytest.approx(cl**T, rel=1e-8)


def _mathieu(T=100, a=1.0, q=0.4, c=0.05):
    """x'' + c x' + (a - 2 q cos 2t) x = u, period pi, discretized exactly (ZOH) with T steps."""
    dt = np.pi / T
    t = np.arange(T) * dt
    A = np.zeros((T, 2, 2))
    A[:, 0, 1] = 1.0
    A[:, 1, 0] = -(a - 2 * q * np.cos(2 * t))
    A[:, 1, 1] = -c
    B = np.zeros((T, 2, 1))
    B[:, 1, 0] = 1.0
    return discretize(LTVSystem(t, A, B, ("x", "x_rate"), ("u",)), dt)


def test_periodic_mathieu_is_stabilized_and_a_fixed_point():
    d = _mathieu()
    open_loop = np.eye(2)
    for k in range(len(d)):
        open_loop = d.Ad[k] @ open_loop
    # (a, q) = (1, 0.4) is inside the first instability tongue: open loop unstable
    assert np.max(np.abs(np.linalg.eigvals(open_loop))) > 1.2
    Q, R = np.eye(2), np.array([[0.1]])
    p = periodic_lqr(d, Q, R, tol=1e-13)
    assert p.spectral_radius < 1.0 and p.periods < 200
    assert p.residual <= 1e-13
    assert f"converged in {p.periods} periods" in p.report()
    # fixed point: one more period of sweeps from P_0 returns P_0 (the tolerance is the
    # convergence tolerance, amplified by at most the contraction over one period)
    again = finite_horizon_lqr(d, Q, R, Q_N=p.riccati[0])
    np.testing.assert_allclose(again.riccati[0], p.riccati[0], rtol=0, atol=1e-11 * np.abs(p.riccati[0]).max())
    np.testing.assert_allclose(p.riccati[-1], p.riccati[0], rtol=0, atol=1e-11 * np.abs(p.riccati[0]).max())
    # cross-check: a long finite-horizon LQR (20 periods) has the periodic gains far from its end
    n_per = 20
    T = len(d)
    long = finite_horizon_lqr(_sys(np.tile(d.Ad, (n_per, 1, 1)), np.tile(d.Bd, (n_per, 1, 1))), Q, R, Q_N=Q)
    np.testing.assert_allclose(long.gains[:T], p.gains, rtol=0, atol=1e-9 * np.abs(p.gains).max())
    # the monodromy is the product of the closed-loop steps
    roll = long.rollout(np.array([1.0, 0.0]))
    np.testing.assert_allclose(roll.X[T], p.monodromy @ roll.X[0], rtol=0, atol=1e-9)


def test_periodic_failures_raise():
    A = np.full((2, 1, 1), 2.0)
    B = np.zeros((2, 1, 1))
    with pytest.raises(RiccatiConvergenceError, match="did not converge in 30 periods"):
        periodic_lqr(_sys(A, B), np.eye(1), np.eye(1), max_periods=30)
    # Q = 0 does not see the unstable mode: P = 0 converges at once but the loop stays unstable
    with pytest.raises(RiccatiConvergenceError, match=r"spectral radius 4 >= 1"):
        periodic_lqr(_sys(A, B), np.zeros((1, 1)), np.eye(1))
    with pytest.raises(ValueError, match="max_periods must be a positive integer"):
        periodic_lqr(_sys(A, B), np.eye(1), np.eye(1), max_periods=0)
