"""Tests of ballctl.linear.discretize against closed forms, python-control and the series' order of accuracy."""

import numpy as np
import pytest

from ballctl.linear.discretize import (DiscreteLTVSystem, discretization_error, discretize, series_matrices,
                                zoh_matrices)
from ballctl.linear.ltv import LTVSystem

# Closed forms and expm agree to rounding: entries are O(1), so a few ulps of
# the largest entry (1e-14 absolute) leaves room for expm's scaling-and-squaring
# (its backward error is ~ 1e-16 * ||A dt||) but would catch a wrong formula.
EXACT = 1e-14


def _ltv(t, A, B):
    A = np.asarray(A, float)
    B = np.asarray(B, float)
    return LTVSystem(np.asarray(t, float), A, B, tuple(f"x{i}" for i in range(A.shape[1])),
                     tuple(f"u{i}" for i in range(B.shape[2])))


def test_double_integrator_closed_form():
    dt = 0.1
    A = np.array([[[0.0, 1.0], [0.0, 0.0]]])
    B = np.array([[[0.0], [1.0]]])
    d = discretize(_ltv([0.0], A, B), dt)
    np.testing.assert_allclose(d.Ad[0], [[1.0, dt], [0.0, 1.0]], rtol=0, atol=EXACT)
    np.testing.assert_allclose(d.Bd[0], [[dt**2 / 2], [dt]], rtol=0, atol=EXACT)
    assert d.method == "zoh" and d.order is None and d.dt == dt


@pytest.mark.parametrize("a", [-3.0, 0.7, 1e-9])
def test_scalar_closed_form(a):
    # a = 1e-9 is nearly singular: (e^{a dt} - 1)/a computed naively loses ~7
    # digits to cancellation; the augmented exponential must not.
    dt, b = 0.05, 2.0
    d = discretize(_ltv([0.0], [[[a]]], [[[b]]]), dt)
    assert d.Ad[0, 0, 0] == pytest.approx(np.exp(a * dt), rel=1e-15)
    assert d.Bd[0, 0, 0] == pytest.approx(np.expm1(a * dt) / a * b, rel=1e-14)


def test_singular_damped_closed_form():
    # A = [[0, 1], [0, -c]] is singular: eq. (23) written with A^{-1} fails, the
    # augmented exponential is exact.
    c, dt = 2.0, 0.2
    A = np.array([[[0.0, 1.0], [0.0, -c]]])
    B = np.array([[[0.0], [1.0]]])
    assert np.linalg.matrix_rank(A[0]) == 1
    d = discretize(_ltv([0.0], A, B), dt)
    g = -np.expm1(-c * dt) / c  # (1 - e^{-c dt}) / c
    np.testing.assert_allclose(d.Ad[0], [[1.0, g], [0.0, np.exp(-c * dt)]], rtol=0, atol=EXACT)
    np.testing.assert_allclose(d.Bd[0], [[(dt - g) / c], [g]], rtol=0, atol=EXACT)


def test_rotation_closed_form_and_zero_matrix():
    w, dt = 3.0, 0.3
    A = np.array([[[0.0, w], [-w, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])
    B = np.array([[[1.0], [0.0]], [[1.0], [2.0]]])
    Ad, Bd = zoh_matrices(A, B, dt)
    c, s = np.cos(w * dt), np.sin(w * dt)
    np.testing.assert_allclose(Ad[0], [[c, s], [-s, c]], rtol=0, atol=EXACT)
    # integral of e^{A s} B over [0, dt] for B = e1: (sin(w dt)/w, (cos(w dt) - 1)/w)
    np.testing.assert_allclose(Bd[0, :, 0], [s / w, (c - 1) / w], rtol=0, atol=EXACT)
    np.testing.assert_array_equal(Ad[1], np.eye(2))
    np.testing.assert_allclose(Bd[1, :, 0], [dt, 2 * dt], rtol=0, atol=EXACT)


def test_vectorized_equals_loop_and_python_control():
    import control
    from scipy.linalg import expm

    rng = np.random.default_rng(0)
    K, N, nu, dt = 7, 4, 2, 0.05
    A = rng.normal(size=(K, N, N))
    B = rng.normal(size=(K, N, nu))
    ltv = _ltv(np.arange(K) * dt, A, B)
    d = discretize(ltv, dt)
    for k in range(K):
        M = np.zeros((N + nu, N + nu))
        M[:N, :N], M[:N, N:] = A[k], B[k]
        E = expm(M * dt)
        # Same algorithm on one 2-D matrix: the stacked call must give the same bits up to rounding.
        np.testing.assert_allclose(d.Ad[k], E[:N, :N], rtol=0, atol=1e-14)
        np.testing.assert_allclose(d.Bd[k], E[:N, N:], rtol=0, atol=1e-14)
        # Independent oracle: python-control's ZOH (scipy cont2discrete); 1e-12
        # because it uses a different expm call path on an O(1)-norm matrix.
        sysd = control.sample_system(control.ss(A[k], B[k], np.eye(N), np.zeros((N, nu))), dt, method="zoh")
        np.testing.assert_allclose(d.Ad[k], sysd.A, rtol=0, atol=1e-12)
        np.testing.assert_allclose(d.Bd[k], sysd.B, rtol=0, atol=1e-12)
    ss = d.to_statespace(3)
    assert ss.dt == dt and ss.nstates == N


def test_series_order_one_is_eq_89_exactly():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 3, 3))
    B = rng.normal(size=(3, 3, 2))
    dt = 0.01
    d = discretize(_ltv(np.arange(3) * dt, A, B), dt, method="series", order=1)
    np.testing.assert_allclose(d.Ad, np.eye(3) + A * dt, rtol=0, atol=1e-16)
    np.testing.assert_allclose(d.Bd, B * dt, rtol=0, atol=1e-16)
    assert d.method == "series" and d.order == 1


def test_series_high_order_converges_to_zoh():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(4, 5, 5))
    B = rng.normal(size=(4, 5, 2))
    Ad0, Bd0 = zoh_matrices(A, B, 0.1)
    Ad, Bd = series_matrices(A, B, 0.1, 20)
    # ||A dt|| ~ 0.3: the 21st term is ~ 0.3^21/21! ~ 1e-30, so only rounding remains.
    np.testing.assert_allclose(Ad, Ad0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(Bd, Bd0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_series_error_scales_like_dt_power_order_plus_one(order):
    rng = np.random.default_rng(3)
    A = rng.normal(size=(2, 4, 4))
    B = rng.normal(size=(2, 4, 2))
    ltv = _ltv([0.0, 1.0], A, B)
    dts = [0.04, 0.02]
    errs = [discretization_error(ltv, dt, [order]) for dt in dts]
    # Halving dt divides the error by 2^(p+1) up to the next term, a relative
    # O(||A|| dt) ~ 10 % correction: the observed exponent is within 0.25 of p + 1,
    # while a wrong order would be off by >= 1.
    slope_A = np.log2(errs[0].Ad[0] / errs[1].Ad[0])
    slope_B = np.log2(errs[0].Bd[0] / errs[1].Bd[0])
    assert slope_A == pytest.approx(order + 1, abs=0.25)
    assert slope_B == pytest.approx(order + 1, abs=0.25)
    # the error must be well above rounding for the slope to mean something
    assert errs[1].Ad[0] > 1e-12


def test_discretization_error_monotone_in_order():
    rng = np.random.default_rng(4)
    ltv = _ltv([0.0], rng.normal(size=(1, 3, 3)), rng.normal(size=(1, 3, 1)))
    e = discretization_error(ltv, 1e-2, [1, 2, 3, 4])
    assert e.orders == (1, 2, 3, 4)
    assert np.all(np.diff(e.Ad) < 0) and np.all(np.diff(e.Bd) < 0)
    assert "order" in e.as_table()


def test_dt_must_match_the_sample_spacing():
    A = np.zeros((5, 1, 1))
    B = np.ones((5, 1, 1))
    ltv = _ltv(np.linspace(0.0, 0.04, 5), A, B)  # spacing 0.01, with linspace rounding
    assert len(discretize(ltv, 0.01)) == 5
    with pytest.raises(ValueError, match=r"subsample\(2\)"):
        discretize(ltv, 0.02)
    assert len(discretize(ltv.subsample(2), 0.02)) == 3
    with pytest.raises(ValueError, match="differs from the spacing"):
        discretize(ltv, 0.015)
    bad = _ltv([0.0, 0.01, 0.03], A[:3], B[:3])
    with pytest.raises(ValueError, match="not uniformly spaced"):
        discretize(bad, 0.01)
    # a single sample (LTI snapshot) accepts any step
    assert discretize(_ltv([0.0], A[:1], B[:1]), 0.123).dt == 0.123


@pytest.mark.parametrize("kwargs, match", [
    (dict(dt=0.0), "dt must be > 0"),
    (dict(dt=-1.0), "dt must be > 0"),
    (dict(dt=0.1, method="tustin"), "method must be one of"),
    (dict(dt=0.1, order=2), "order applies only"),
    (dict(dt=0.1, method="series"), "needs order"),
    (dict(dt=0.1, method="series", order=0), "order must be an integer >= 1"),
    (dict(dt=0.1, method="series", order=1.5), "order must be an integer >= 1"),
])
def test_bad_arguments(kwargs, match):
    ltv = _ltv([0.0], np.zeros((1, 1, 1)), np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match=match):
        discretize(ltv, **kwargs)


def test_discrete_system_validates_and_is_read_only():
    with pytest.raises(ValueError, match="t must have shape"):
        DiscreteLTVSystem(np.zeros(2), 0.1, np.zeros((1, 1, 1)), np.zeros((1, 1, 1)), ("x",), ("u",))
    d = DiscreteLTVSystem([0.0], 0.1, np.eye(1)[None], np.ones((1, 1, 1)), ("x",), ("u",))
    with pytest.raises(ValueError):
        d.Ad[0, 0, 0] = 2.0
