"""Tests of ballctl.design.controllability against closed forms, oracles and physics.

Every tolerance is stated next to the assertion with where it comes from.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import control
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm, solve_continuous_lyapunov

from ballctl.design.controllability import (RANK_RTOL, GramianReport, LTVCallables, SilvermanMeadowsReport,
                                            discrete_gramian, gramian, gramian_rank, monodromy,
                                            periodic_controllability, silverman_meadows, transition_matrix)
from ballctl.design.observability import observability_gramian
from ballctl.linear.discretize import zoh_matrices
from ballctl.design.controllability.coefficients import Coefficients as _Coefficients
from ballctl.linear.discretize import DiscreteLTVSystem
from ballctl.linear.ltv import LTVSystem

TWO_PI = 2.0 * np.pi


# ---------------------------------------------------------------- helpers / systems
def constant_callables(A, B, names=None):
    A = np.asarray(A, float)
    B = np.asarray(B, float)
    return LTVCallables(A_of_t=lambda t: A, B_of_t=lambda t: B, state_names=names)


def sample(fA, fB, t, names, inputs=("u",)):
    return LTVSystem(t, np.stack([fA(s) for s in t]), np.stack([fB(s) for s in t]), names, inputs)


def van_loan_gramian(A, B, T):
    """int_0^T e^{A s} B B^T e^{A^T s} ds from expm([[-A, BB^T], [0, A^T]] T) (Van Loan 1978)."""
    N = A.shape[0]
    M = np.block([[-A, B @ B.T], [np.zeros((N, N)), A.T]])
    E = expm(M * T)
    return E[N:, N:].T @ E[:N, N:]


def rotating_B(t):          # A = 0, B(t) = (cos t, sin t): rank 1 at every t
    return np.array([[np.cos(t)], [np.sin(t)]])


def zero2(t):
    return np.zeros((2, 2))


def with_unreached_state(rate):
    """States (p, q, r): p' = u cos t, q' = u sin t, r' = rate * r. r is never reached."""
    def A(t):
        return np.diag([0.0, 0.0, rate])

    def B(t):
        return np.array([[np.cos(t)], [np.sin(t)], [0.0]])

    return A, B


def exp_sin_derivatives(t, count):
    """Derivatives 0..count-1 of exp(sin t) by g^(n+1) = sum_k C(n,k) sin^(k+1) g^(n-k)."""
    g = [math.exp(math.sin(t))]
    for n in range(count - 1):
        g.append(sum(math.comb(n, k) * math.sin(t + (k + 1) * math.pi / 2) * g[n - k] for k in range(n + 1)))
    return np.array(g)


# ---------------------------------------------------------------- Gramian, constant systems
@pytest.mark.parametrize("method", ["integrate", "transition"])
def test_gramian_constant_matches_van_loan_and_lyapunov(rng, method):
    N = 4
    A = rng.standard_normal((N, N)) - 2.0 * np.eye(N)      # stable: the Lyapunov form applies
    B = rng.standard_normal((N, 2))
    T = 1.5
    ref = van_loan_gramian(A, B, T)
    # finite-horizon closed form W(T) = W_inf - e^{AT} W_inf e^{A^T T}, A W_inf + W_inf A^T + B B^T = 0
    W_inf = solve_continuous_lyapunov(A, -B @ B.T)
    E = expm(A * T)
    np.testing.assert_allclose(W_inf - E @ W_inf @ E.T, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    rep = gramian(constant_callables(A, B), 0.3, 0.3 + T, method=method)
    # DOP853 at rtol 1e-10: relative error a few 1e-10
    assert np.abs(rep.W - ref).max() <= 1e-9 * np.abs(ref).max()
    assert rep.rank == N and rep.controllable
    np.testing.assert_allclose(rep.eigenvalues, np.linalg.eigvalsh(ref), rtol=1e-8)
    assert np.all(np.diff(rep.eigenvalues) >= 0)
    assert rep.condition_number == pytest.approx(rep.eigenvalues[-1] / rep.eigenvalues[0])
    # a constant LTVSystem: the splines are exact, same tolerance
    t = np.linspace(0.0, 2.0, 5)
    ltv = LTVSystem(t, np.repeat(A[None], 5, 0), np.repeat(B[None], 5, 0), tuple("abcd"), ("u", "v"))
    rep2 = gramian(ltv, 0.3, 0.3 + T, method=method)
    assert np.abs(rep2.W - ref).max() <= 1e-9 * np.abs(ref).max()


def test_gramian_rotating_input_closed_form():
    sys_ = LTVCallables(A_of_t=zero2, B_of_t=rotating_B, state_names=("p", "q"))
    t0, t1 = 0.2, 2.7
    c2 = 0.5 * (t1 - t0) + 0.25 * (np.sin(2 * t1) - np.sin(2 * t0))       # int cos^2
    s2 = 0.5 * (t1 - t0) - 0.25 * (np.sin(2 * t1) - np.sin(2 * t0))       # int sin^2
    cs = 0.25 * (np.cos(2 * t0) - np.cos(2 * t1))                          # int sin cos
    ref = np.array([[c2, cs], [cs, s2]])
    rep = gramian(sys_, t0, t1)
    assert np.abs(rep.W - ref).max() <= 1e-10 * np.abs(ref).max()          # DOP853 at rtol 1e-10
    assert rep.rank == 2
    # the same from 2001 samples: cubic splines, error O(dt^4) ~ 1e-13 * |B''''|: 1e-9 allowed
    t = np.linspace(0.0, 3.0, 2001)
    rep_s = gramian(sample(zero2, rotating_B, t, ("p", "q")), t0, t1)
    assert np.abs(rep_s.W - ref).max() <= 1e-9 * np.abs(ref).max()


# ---------------------------------------------------------------- Silverman–Meadows, constant systems
def _uncontrollable_pair(rng, N, nu, n_ctrl):
    """(A, B) with an uncontrollable subspace of dimension N - n_ctrl, hidden by a similarity."""
    A = rng.standard_normal((N, N))
    A[n_ctrl:, :n_ctrl] = 0.0
    B = np.zeros((N, nu))
    B[:n_ctrl] = rng.standard_normal((n_ctrl, nu))
    Tm = rng.standard_normal((N, N)) + 3 * np.eye(N)
    return Tm @ A @ np.linalg.inv(Tm), Tm @ B


@pytest.mark.parametrize("N, nu, n_ctrl", [(3, 1, 3), (4, 1, 2), (4, 2, 3), (5, 1, 5), (5, 2, 1)])
def test_silverman_meadows_rank_equals_ctrb_for_constant_systems(rng, N, nu, n_ctrl):
    A, B = _uncontrollable_pair(rng, N, nu, n_ctrl)
    expected = np.linalg.matrix_rank(control.ctrb(A, B))
    assert expected == n_ctrl
    rep = silverman_meadows(constant_callables(A, B), [0.0, 1.0])
    assert rep.order == N - 1
    assert list(rep.ranks) == [expected, expected]
    # B_j = (-A)^j B for constant systems
    blocks = np.concatenate([np.linalg.matrix_power(-A, j) @ B for j in range(N)], axis=1)
    np.testing.assert_allclose(rep.Q[0], blocks, rtol=0, atol=1e-11 * np.abs(blocks).max())
    # sampled constant system: numerical derivatives of constants vanish to rounding
    t = np.linspace(0.0, 1.0, 11)
    ltv = LTVSystem(t, np.repeat(A[None], 11, 0), np.repeat(B[None], 11, 0),
                    tuple(f"x{i}" for i in range(N)), tuple(f"u{i}" for i in range(nu)))
    assert list(silverman_meadows(ltv, [0.5]).ranks) == [expected]
    # the uncontrollable directions are orthogonal to the controllable subspace range(ctrb)
    if expected < N:
        U = rep.left_singular_vectors[0][:, expected:]
        assert np.abs(U.T @ control.ctrb(A, B)).max() <= 1e-8 * np.abs(control.ctrb(A, B)).max()


# ---------------------------------------------------------------- time variation
def test_controllable_only_through_time_variation():
    sys_ = LTVCallables(A_of_t=zero2, B_of_t=rotating_B, state_names=("p", "q"))
    times = np.linspace(0.0, 6.0, 7)
    assert list(silverman_meadows(sys_, times, order=0).ranks) == [1] * 7      # B(t) alone: rank 1
    rep = silverman_meadows(sys_, times, order=1)
    assert list(rep.ranks) == [2] * 7 and rep.controllable
    # Q_1 = [B, B'] is a rotation: both singular values are 1 (contour derivatives, ~1e-14)
    raw = silverman_meadows(sys_, times, order=1, balance=False)
    np.testing.assert_allclose(raw.singular_values, 1.0, atol=1e-12)
    # same from periodic samples (spectral derivatives) and non-periodic ones (local polynomials)
    t = np.linspace(0.0, TWO_PI, 65)
    ltv = sample(zero2, rotating_B, t, ("p", "q"))
    for kw in ({"period": TWO_PI}, {}):
        rep_s = silverman_meadows(ltv, [0.5, 3.0, 6.0], order=1, balance=False, **kw)
        assert list(rep_s.ranks) == [2, 2, 2]
        np.testing.assert_allclose(rep_s.singular_values, 1.0, atol=1e-8)    # FD with 64 samples: ~1e-10


def test_unreached_state_is_named():
    A, B = with_unreached_state(-1.0)
    names = ("p", "q", "r")
    sys_ = LTVCallables(A_of_t=A, B_of_t=B, state_names=names)
    rep = silverman_meadows(sys_, [0.0, 1.0, 2.0])
    assert list(rep.ranks) == [2, 2, 2] and not rep.controllable
    for i in range(3):
        (direction,) = rep.uncontrollable_directions(i)
        assert direction[0][0] == "r" and direction[0][1] == pytest.approx(1.0, abs=1e-12)
        assert all(abs(w) <= 1e-12 for _, w in direction[1:])
    text = str(rep)
    assert "(r +1.000" in text and "derivatives: callables" in text
    g = gramian(sys_, 0.0, 3.0)
    assert g.rank == 2 and not g.controllable
    assert g.condition_number > 1e12
    (least,) = g.least_controllable
    assert least[0] == ("r", pytest.approx(1.0, abs=1e-12))
    assert g.eigenvalues[0] <= 1e-12 * g.eigenvalues[-1]
    assert "  *  r +1.000" in g.to_table()
    # from samples: same verdict
    t = np.linspace(0.0, 3.0, 301)
    ltv = sample(A, B, t, names)
    rep_s = silverman_meadows(ltv, [1.0])
    assert rep_s.ranks[0] == 2 and rep_s.uncontrollable_directions(0)[0][0][0] == "r"
    assert gramian(ltv, 0.0, 3.0).least_controllable[0][0][0] == "r"


def test_silverman_meadows_leibniz_recursion_on_time_varying_A():
    # A(t) = [[0, t], [0, 0]], B(t) = (sin t, 1):
    # B_1 = -A B_0 + B_0' = (cos t - t, 0);  B_2 = -A B_1 + B_1' = (-sin t - 1, 0)
    def A(t):
        return np.array([[0.0, t], [0.0, 0.0]])

    def B(t):
        return np.array([[np.sin(t)], [1.0 + 0.0 * t]])

    t = np.array([0.3, 1.1])
    expected = np.stack([np.array([[np.sin(s), np.cos(s) - s, -np.sin(s) - 1.0], [1.0, 0.0, 0.0]]) for s in t])
    exact = LTVCallables(A_of_t=A, B_of_t=B,
                         A_derivatives=(lambda t: np.array([[0.0, 1.0], [0.0, 0.0]]), lambda t: np.zeros((2, 2))),
                         B_derivatives=(lambda t: np.array([[np.cos(t)], [0.0]]),
                                        lambda t: np.array([[-np.sin(t)], [0.0]])))
    rep = silverman_meadows(exact, t, order=2)
    np.testing.assert_allclose(rep.Q, expected, rtol=0, atol=1e-14)
    assert "2 derivative callable(s) of A" in rep.derivative_method
    contour = LTVCallables(A_of_t=A, B_of_t=B)                                # Cauchy integral
    np.testing.assert_allclose(silverman_meadows(contour, t, order=2).Q, expected, rtol=0, atol=1e-13)
    samples = sample(A, B, np.linspace(0.0, 2.0, 201), ("x", "v"))            # local polynomials
    np.testing.assert_allclose(silverman_meadows(samples, t, order=2).Q, expected, rtol=0, atol=1e-9)


def test_derivative_accuracy_of_the_sample_methods():
    """Measured accuracy of the m-th derivative of exp(sin t), m = 0..6 (relative to max |f^(m)|)."""
    times = np.array([0.3, 1.7, 4.0, 6.0])
    exact = np.stack([exp_sin_derivatives(s, 7) for s in times], axis=1)       # (7, T)
    scale = np.abs(exact).max(axis=1)

    def err(coef, **kw):
        _, dB = coef.derivatives(times, 6, **kw)
        return np.abs(dB[:, :, 0, 0] - exact).max(axis=1) / scale

    def ltv(K, copy=True):
        t = np.linspace(0.0, TWO_PI, K + 1) if copy else np.arange(K) * (TWO_PI / K)
        return LTVSystem(t, np.zeros((t.size, 1, 1)), np.exp(np.sin(t))[:, None, None], ("x",), ("u",))

    # spectral: measured <= 1e-11 for all m up to 6 for K = 64 .. 628 (noise floor filtered)
    for K in (64, 628):
        e = err(_Coefficients(ltv(K), TWO_PI))
        assert np.all(e <= 1e-10), e
    assert np.all(err(_Coefficients(ltv(100, copy=False), TWO_PI)) <= 1e-10)
    # local polynomial through 13 samples: 628 samples, stride 6: measured 1.5e-7 at m = 5
    e = err(_Coefficients(ltv(628), None), stride=6)
    assert np.all(e[:4] <= 1e-9) and np.all(e <= 1e-6), e
    # callables: Cauchy integral, measured <= 1e-12
    cal = LTVCallables(A_of_t=lambda t: np.zeros((1, 1)) + 0 * t, B_of_t=lambda t: np.exp(np.sin(t)) * np.ones((1, 1)))
    assert np.all(err(_Coefficients(cal, None)) <= 1e-11)
    # callables that are not complex safe: local polynomial on a grid of step time_scale / 20, ~5e-7 at m = 6
    cal_real = LTVCallables(A_of_t=lambda t: np.zeros((1, 1)), B_of_t=lambda t: np.array([[math.exp(math.sin(t))]]))
    coef = _Coefficients(cal_real, None)
    assert "not complex safe" in coef.derivative_method
    assert np.all(err(coef) <= 5e-6)


# ---------------------------------------------------------------- transition matrix
def test_transition_matrix_of_a_rotating_frame_system():
    # A(t) = R(wt) A0 R(wt)^T with R = exp(w J t): in the rotating frame z = R^T x, z' = (A0 - w J) z,
    # so Phi(t1, t0) = R(w t1) expm((A0 - w J)(t1 - t0)) R(w t0)^T
    w = 2.0
    A0 = np.array([[-0.3, 1.0], [0.0, -1.0]])
    J = np.array([[0.0, -1.0], [1.0, 0.0]])

    def R(t):
        return np.array([[np.cos(w * t), -np.sin(w * t)], [np.sin(w * t), np.cos(w * t)]])

    def A(t):
        return R(t) @ A0 @ R(t).T

    def Phi(t1, t0):
        return R(t1) @ expm((A0 - w * J) * (t1 - t0)) @ R(t0).T

    sys_ = LTVCallables(A_of_t=A, B_of_t=lambda t: np.zeros((2, 1)))
    np.testing.assert_allclose(transition_matrix(sys_, 0.4, 3.0), Phi(3.0, 0.4), rtol=0, atol=1e-9)
    np.testing.assert_allclose(transition_matrix(sys_, 3.0, 0.4), Phi(0.4, 3.0), rtol=0, atol=1e-8)
    np.testing.assert_array_equal(transition_matrix(sys_, 1.0, 1.0), np.eye(2))
    # from 801 samples on [0, 4]: cubic splines, dt = 5e-3, measured 1e-10 (callables 1.3e-11)
    ltv = sample(A, lambda t: np.zeros((2, 1)), np.linspace(0.0, 4.0, 801), ("x", "y"))
    np.testing.assert_allclose(transition_matrix(ltv, 0.4, 3.0), Phi(3.0, 0.4), rtol=0, atol=1e-8)


# ---------------------------------------------------------------- periodic
def mathieu(a, q):
    """x'' + (a - 2 q cos 2t) x = 0 as a first-order system of period pi."""
    def A(t):
        return np.array([[0.0, 1.0], [-(a - 2.0 * q * np.cos(2.0 * t)), 0.0]])
    return A


@pytest.mark.parametrize("a, q", [(2.0, 0.2), (1.0, 0.6)])      # stable region; first instability tongue
def test_monodromy_of_mathieu_equation(a, q):
    A = mathieu(a, q)
    T = np.pi

    def ode(t, y):
        return [y[1], -(a - 2.0 * q * np.cos(2.0 * t)) * y[0]]

    cols = [solve_ivp(ode, (0.0, T), e, method="DOP853", rtol=1e-13, atol=1e-14).y[:, -1] for e in np.eye(2)]
    M_ref = np.stack(cols, axis=1)
    sys_ = LTVCallables(A_of_t=A, B_of_t=lambda t: np.array([[0.0], [1.0]]))
    rep = monodromy(sys_, period=T)
    np.testing.assert_allclose(rep.matrix, M_ref, rtol=0, atol=1e-9)       # measured 2e-11 and 4e-11
    # Liouville: det M = exp(int tr A) = 1; multipliers come in pairs mu, 1/mu
    assert np.linalg.det(rep.matrix) == pytest.approx(1.0, abs=1e-9)
    assert abs(np.prod(rep.multipliers) - 1.0) <= 1e-9
    # a Hamiltonian system is at best marginally stable: |mu| = 1 (a = 2) or mu, 1/mu real (a = 1 tongue)
    if a == 2.0:
        np.testing.assert_allclose(np.abs(rep.multipliers), 1.0, atol=1e-9)
    else:
        assert rep.spectral_radius > 2.0 and np.all(np.abs(rep.multipliers.imag) <= 1e-9)
    left = rep.left_eigenvectors
    for i, mu in enumerate(rep.multipliers):
        np.testing.assert_allclose(left[:, i].conj() @ rep.matrix, mu * left[:, i].conj(), atol=1e-10)
    # samples: with the periodic copy (period inferred) and without it (period given): cubic splines
    # with 256 samples per period, error measured 2e-9
    t = np.linspace(0.0, T, 257)
    with_copy = sample(A, lambda t: np.array([[0.0], [1.0]]), t, ("x", "v"))
    np.testing.assert_allclose(monodromy(with_copy).matrix, M_ref, rtol=0, atol=1e-7)
    without = sample(A, lambda t: np.array([[0.0], [1.0]]), t[:-1], ("x", "v"))
    np.testing.assert_allclose(monodromy(without, period=T).matrix, M_ref, rtol=0, atol=1e-7)
    assert "spectral radius" in str(rep)


def test_periodic_controllability_reports():
    rep = periodic_controllability(LTVCallables(A_of_t=zero2, B_of_t=rotating_B), TWO_PI)
    assert rep.controllable and rep.pbh_controllable and rep.stabilizable
    np.testing.assert_allclose(rep.gramian.W, np.pi * np.eye(2), atol=1e-9)   # int_0^2pi of B B^T
    # an unreached stable state: one period is not enough, nor are many; stabilizable
    A, B = with_unreached_state(-1.0)
    names = ("p", "q", "r")
    rep = periodic_controllability(LTVCallables(A_of_t=A, B_of_t=B, state_names=names), TWO_PI)
    assert not rep.controllable and not rep.pbh_controllable and rep.stabilizable
    i = int(np.argmin(np.abs(rep.monodromy.multipliers - np.exp(-TWO_PI))))
    assert rep.pbh_ranks[i] == 2 and rep.modal_controllability[i] <= 1e-12
    assert sorted(rep.pbh_ranks) == [2, 3, 3]
    assert "NOT controllable, stabilizable" in str(rep)
    # the same unreached state, unstable: not stabilizable; sampled periodic system, period given
    A, B = with_unreached_state(0.1)
    t = np.arange(128) * (TWO_PI / 128)
    rep = periodic_controllability(sample(A, B, t, names), TWO_PI)
    assert not rep.stabilizable and rep.gramian.least_controllable[0][0][0] == "r"


def test_periodic_gramian_wraps_over_several_periods():
    t = np.linspace(0.0, TWO_PI, 201)
    ltv = sample(zero2, rotating_B, t, ("p", "q"))
    rep = gramian(ltv, 1.0, 1.0 + 3 * TWO_PI, period=TWO_PI)
    np.testing.assert_allclose(rep.W, 3 * np.pi * np.eye(2), atol=1e-7)     # spline error, measured 3e-8


# ---------------------------------------------------------------- discrete vs continuous
def _zoh(A, B, dt):
    N, nu = B.shape
    M = np.zeros((N + nu, N + nu))
    M[:N, :N], M[:N, N:] = A, B
    E = expm(M * dt)
    return E[:N, :N], E[:N, N:]


def _discrete_error(fA, fB, T, n):
    dt = T / n
    mats = [_zoh(fA(k * dt), fB(k * dt), dt) for k in range(n)]
    Wd = discrete_gramian(DiscreteLTVSystem.from_arrays(np.stack([m[0] for m in mats]),
                                                        np.stack([m[1] for m in mats]), dt=dt)).W
    Wc = gramian(LTVCallables(A_of_t=fA, B_of_t=fB), 0.0, T, rtol=1e-12, atol=1e-15).W
    return np.abs(Wd / dt - Wc).max() / np.abs(Wc).max()


def test_discrete_gramian_converges_to_continuous():
    """W_d / dt -> W_c: first order for a time-varying system, second order for a constant one."""
    def A(t):
        return np.array([[0.0, 1.0], [-1.0 - 0.5 * np.cos(t), -0.2]])

    def B(t):
        return np.array([[0.0], [1.0 + 0.5 * np.sin(t)]])

    errs = [_discrete_error(A, B, TWO_PI, n) for n in (100, 200, 400)]
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all((rates > 0.9) & (rates < 1.1)), (errs, rates)        # measured 0.98, 0.99 (2.7e-2 at n=100)
    A0 = A(0.0)
    B0 = B(0.3)
    errs = [_discrete_error(lambda t: A0, lambda t: B0, 3.0, n) for n in (50, 100, 200)]
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all((rates > 1.9) & (rates < 2.1)), (errs, rates)        # measured 2.00, 2.00 (4e-4 at n=50)


def test_discrete_gramian_definition_and_system_argument(rng):
    K, N = 5, 3
    Ad = rng.standard_normal((K, N, N)) * 0.5
    Bd = rng.standard_normal((K, N, 1))
    ref = np.zeros((N, N))
    for k in range(K):
        Phi = np.eye(N)
        for j in range(k + 1, K):
            Phi = Ad[j] @ Phi
        ref += Phi @ Bd[k] @ Bd[k].T @ Phi.T
    rep = discrete_gramian(DiscreteLTVSystem.from_arrays(Ad, Bd, state_names=("a", "b", "c")))
    np.testing.assert_allclose(rep.W, ref, rtol=1e-12)
    # arrays or a duck-typed object are refused: one type per positional argument
    with pytest.raises(TypeError, match="DiscreteLTVSystem"):
        discrete_gramian(SimpleNamespace(Ad=Ad, Bd=Bd, state_names=("a", "b", "c")))
    assert rep.state_names == ("a", "b", "c") and rep.method == "discrete" and rep.t1 == K
    assert isinstance(rep, GramianReport) and "rank 3 of 3" in str(rep)


# ---------------------------------------------------------------- the one scaled rank test
def test_rank_verdict_does_not_depend_on_the_units_of_the_states():
    # metres next to micrometres: the raw Gramian's relative eigenvalue 1e-9 would fall below a 1e-8 eigenvalue
    # tolerance in one unit system and not in the other; the scaled rank is 2 in both
    W = np.array([[1.0, 0.0], [0.0, 1e-9]])
    for scale in (1.0, 1e3, 1e-3, 1e6):
        S = np.diag([1.0, scale])
        assert gramian_rank(S @ W @ S) == 2
    # a rank-deficient Gramian stays rank-deficient in every unit (its scaled form is singular exactly)
    v = np.array([1.0, 2.0, -1.0])
    Wd = np.outer(v, v) + np.outer([0.0, 1.0, 1.0], [0.0, 1.0, 1.0])
    for S in (np.eye(3), np.diag([1e3, 1.0, 1.0]), np.diag([1.0, 1e-3, 1e4])):
        assert gramian_rank(S @ Wd @ S) == 2
    assert gramian_rank(np.zeros((2, 2))) == 0 and gramian_rank(np.diag([1.0, 0.0])) == 1
    assert RANK_RTOL == 1e-8


@pytest.mark.parametrize("N, nu, n_ctrl", [(4, 1, 3), (4, 2, 2), (3, 1, 3)])
def test_every_function_gives_the_same_verdict_for_the_same_pair_in_any_units(rng, N, nu, n_ctrl):
    # one pair (A, B) with a known controllable dimension; a state rescaled by 1e3 (mm for m); the continuous
    # Gramian, the discrete one and the observability Gramian of the dual pair (A^T, B^T) all give n_ctrl
    A, B = _uncontrollable_pair(rng, N, nu, n_ctrl)
    A = A - (np.max(np.linalg.eigvals(A).real) + 0.5) * np.eye(N)      # stable: the Gramians stay moderate
    dt, K = 0.05, 60
    t = dt * np.arange(K)
    names = tuple(f"x{i}" for i in range(N))
    for S in (np.eye(N), np.diag([1e3] + [1.0] * (N - 1))):
        As, Bs = S @ A @ np.linalg.inv(S), S @ B
        cont = gramian(LTVSystem(t, np.broadcast_to(As, (K, N, N)), np.broadcast_to(Bs, (K, N, nu)), names,
                                 tuple(f"u{j}" for j in range(nu))), 0.0, t[-1])
        Ad, Bd = zoh_matrices(np.broadcast_to(As, (K, N, N)), np.broadcast_to(Bs, (K, N, nu)), dt)
        disc = discrete_gramian(DiscreteLTVSystem.from_arrays(Ad, Bd, dt=dt))
        dual = DiscreteLTVSystem.from_arrays(np.swapaxes(Ad, 1, 2)[::-1], np.zeros((K, N, 1)), dt=dt)
        obs = observability_gramian(dual, np.swapaxes(Bd, 1, 2)[::-1])
        assert cont.rank == disc.rank == obs.rank == gramian_rank(disc.W) == n_ctrl
        assert cont.controllable == disc.controllable == obs.observable == (n_ctrl == N)


# ---------------------------------------------------------------- errors
def test_bad_input_raises_named_errors():
    sys_ = LTVCallables(A_of_t=zero2, B_of_t=rotating_B, t_range=(0.0, 5.0))
    with pytest.raises(ValueError, match="t1 must be > t0"):
        gramian(sys_, 1.0, 1.0)
    with pytest.raises(ValueError, match="t1 = 6 s lies outside"):
        gramian(sys_, 1.0, 6.0)
    with pytest.raises(ValueError, match="times = -1 s lies outside"):
        silverman_meadows(sys_, [1.0, -1.0])
    with pytest.raises(ValueError, match="method must be one of"):
        gramian(sys_, 0.0, 1.0, method="quad")
    with pytest.raises(ValueError, match="rank_rtol"):
        gramian(sys_, 0.0, 1.0, rank_rtol=0.0)
    with pytest.raises(ValueError, match="order must be a non-negative integer"):
        silverman_meadows(sys_, [1.0], order=-1)
    with pytest.raises(ValueError, match="stencil_stride"):
        silverman_meadows(sys_, [1.0], stencil_stride=0)
    with pytest.raises(ValueError, match="period is required"):
        monodromy(sys_)
    with pytest.raises(ValueError, match="system must be an LTVSystem or LTVCallables"):
        gramian(np.eye(2), 0.0, 1.0)
    with pytest.raises(ValueError, match="B_of_t must return shape"):
        LTVCallables(A_of_t=zero2, B_of_t=lambda t: np.ones((3, 1)))
    with pytest.raises(ValueError, match="t_range"):
        LTVCallables(A_of_t=zero2, B_of_t=rotating_B, t_range=(1.0, 0.0))
    with pytest.raises(ValueError, match="Ad must have shape"):
        DiscreteLTVSystem.from_arrays(np.ones((2, 2)), np.ones((2, 2, 1)))
    with pytest.raises(ValueError, match="Bd must have shape"):
        DiscreteLTVSystem.from_arrays(np.ones((2, 2, 2)), np.ones((3, 2, 1)))
    with pytest.raises(ValueError, match="sys must be a DiscreteLTVSystem"):
        discrete_gramian(np.ones((2, 2, 2)))
    t = np.linspace(0.0, 1.0, 11)
    ltv = sample(zero2, rotating_B, t, ("p", "q"))
    with pytest.raises(ValueError, match="periodic copy"):
        monodromy(ltv)                                  # B(1) != B(0)
    with pytest.raises(ValueError, match="shorter than the span"):
        monodromy(ltv, period=0.5)
    with pytest.raises(ValueError, match="t0 = -0.5 s lies outside"):
        transition_matrix(ltv, -0.5, 0.5)


def test_report_types_and_tables():
    rep = silverman_meadows(LTVCallables(A_of_t=zero2, B_of_t=rotating_B), 0.0)
    assert isinstance(rep, SilvermanMeadowsReport)
    assert rep.Q.shape == (1, 2, 2) and rep.singular_values.shape == (1, 2)
    lines = str(rep).splitlines()
    assert lines[0].startswith("Silverman-Meadows test, Q_1") and lines[-1].split()[:2] == ["0", "2"]
    with pytest.raises(IndexError):
        rep.uncontrollable_directions(3)
    with pytest.raises(ValueError, match="read-only"):
        rep.ranks[0] = 1                                # read-only arrays in a frozen report
