"""LTV Kalman filter as the dual of the LQR sweep: against control.dlqe and an independent propagation."""

import control
import numpy as np
import pytest

from ballctl.design.kalman import finite_horizon_kalman, periodic_kalman
from ballctl.linear.discretize import DiscreteLTVSystem


def _sys(Ad):
    """The discrete system of a stack of state matrices (the input matrices do not enter the filter)."""
    Ad = np.asarray(Ad, dtype=float)
    return DiscreteLTVSystem.from_arrays(Ad, np.zeros(Ad.shape[:2] + (1,)))


def _lti(seed=0, n=4, ny=2):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n)) * 0.4 + np.eye(n) * 0.6
    C = rng.normal(size=(ny, n))
    G = rng.normal(size=(n, 2))
    W = G @ G.T + 1e-3 * np.eye(n)
    V = np.diag(rng.uniform(0.1, 1.0, ny))
    return A, C, W, V


def test_long_horizon_filter_is_control_dlqe():
    # time-invariant system: the finite-horizon covariance converges to the DARE solution of control.dlqe
    A, C, W, V = _lti()
    n = A.shape[0]
    L_ref, P_ref, E_ref = control.dlqe(A, np.eye(n), C, W, V)
    L, P, E = finite_horizon_kalman(_sys(np.broadcast_to(A, (400, n, n))), C, W, V, P0=np.eye(n))
    np.testing.assert_allclose(P[-1], P_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(L[-1], L_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(E[-1]), np.sort_complex(E_ref), rtol=1e-8, atol=1e-10)
    # the periodic filter with period 1 is dlqe too
    per = periodic_kalman(_sys(A[None]), C, W, V)
    Lp, Pp, Ep = per
    np.testing.assert_allclose(Pp[0], P_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Lp[0], L_ref, rtol=1e-9, atol=1e-12)
    assert per.spectral_radius < 1


def test_time_varying_covariances_match_an_independent_propagation():
    # an LTV system with intermittent measurements (zero rows): the forward Riccati recursion written
    # out directly (predict/update in Joseph form) agrees with the transposed LQR sweep to 1e-10
    rng = np.random.default_rng(1)
    K, n, ny = 60, 3, 2
    A = np.eye(n) + 0.1 * rng.normal(size=(K, n, n))
    C = rng.normal(size=(K, ny, n))
    C[::3, 1] = 0.0  # the second signal is missing every third step (zero row)
    W = np.stack([np.diag(rng.uniform(0.01, 0.1, n)) for _ in range(K)])
    V = np.diag([0.2, 0.05])
    P0 = np.diag([1.0, 2.0, 0.5])
    res = finite_horizon_kalman(_sys(A), C, W, V, P0=P0)
    P = P0.copy()
    for k in range(K):
        S = C[k] @ P @ C[k].T + V
        M = P @ C[k].T @ np.linalg.inv(S)
        np.testing.assert_allclose(res.covariance[k], P, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(res.update_gains[k], M, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(res.gains[k], A[k] @ M, rtol=1e-9, atol=1e-12)
        Ppost = (np.eye(n) - M @ C[k]) @ P
        np.testing.assert_allclose(res.posterior_covariance[k], Ppost, rtol=1e-9, atol=1e-12)
        P = A[k] @ Ppost @ A[k].T + W[k]
    np.testing.assert_allclose(res.covariance[K], P, rtol=1e-10, atol=1e-12)
    # unmeasured signal: zero gain column
    assert np.all(res.update_gains[::3, :, 1] == 0.0)


def test_filter_error_variance_matches_monte_carlo():
    # the a-priori covariance is the actual estimation-error covariance of the filter (2000 runs, 10 %)
    A, C, W, V = _lti(seed=2, n=2, ny=1)
    K = 30
    res = finite_horizon_kalman(_sys(np.broadcast_to(A, (K, 2, 2))), C, W, V, P0=np.eye(2))
    rng = np.random.default_rng(5)
    runs = 2000
    X = rng.multivariate_normal(np.zeros(2), np.eye(2), size=runs)
    Xh = np.zeros((runs, 2))
    for k in range(K):
        y = X @ C.T + rng.multivariate_normal(np.zeros(1), V, size=runs)
        Xh = Xh + (y - Xh @ C.T) @ res.update_gains[k].T
        X = X @ A.T + rng.multivariate_normal(np.zeros(2), W, size=runs)
        Xh = Xh @ A.T
    emp = np.cov((X - Xh).T)
    np.testing.assert_allclose(np.diag(emp), np.diag(res.covariance[K]), rtol=0.1)


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match="C must have shape"):
        finite_horizon_kalman(_sys(np.ones((3, 2, 2))), np.ones((1, 3)), np.eye(2), np.eye(1), P0=np.eye(2))
    with pytest.raises(ValueError, match="P0 must have shape"):
        finite_horizon_kalman(_sys(np.ones((3, 2, 2))), np.ones((1, 2)), np.eye(2), np.eye(1), P0=np.eye(3))
    with pytest.raises(ValueError, match="V must have shape"):
        finite_horizon_kalman(_sys(np.ones((3, 2, 2))), np.ones((1, 2)), np.eye(2), np.eye(2), P0=np.eye(2))
    with pytest.raises(TypeError, match="DiscreteLTVSystem"):
        finite_horizon_kalman(np.ones((3, 2, 2)), np.ones((1, 2)), np.eye(2), np.eye(1), P0=np.eye(2))
