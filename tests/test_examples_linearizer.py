"""examples/linearize_user_system.py: a user's own system (offset Chaplygin sleigh) through the public API.

Oracles: the closed-form steady turn solves the DAE; the nonlinear simulation under the constant
steady inputs stays on it; the linearizer reproduces the hand-derived A(t), B(t) to rounding, with the
zero blocks of eqs. (19)-(20) and the translation-invariance zero columns, and the frozen-time spectrum
{0, 0, roots of p(s)}; the python-control snapshot has the same poles.
"""

import runpy
from pathlib import Path

import numpy as np
import pytest

import ballctl

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "linearize_user_system.py"


@pytest.fixture(scope="module")
def example():
    return runpy.run_path(str(EXAMPLE))


@pytest.fixture(scope="module")
def result(example):
    return example["main"]([])


def test_system_passes_the_contract_checks(result):
    assert result["problems"] == []


def test_reference_solves_the_dae_and_the_simulation_follows_it(result):
    assert result["residual"] < 1e-12
    assert result["constraint_residual"] < 1e-12
    # constant inputs (F0, tau0) reproduce the steady turn (rtol 1e-12 over a third of a revolution)
    assert result["sim_deviation"] < 1e-9


def test_linearization_matches_the_closed_form_with_the_expected_blocks(result):
    ltv = result["ltv"]
    assert ltv.derivative_method == "complex-step"
    assert ltv.state_names == ("x", "heading", "x_rate", "heading_rate", "y")
    assert ltv.A.shape == (41, 5, 5) and ltv.B.shape == (41, 5, 2)
    scale = np.abs(ltv.A).max()
    assert result["A_error"] < 1e-12 * scale
    assert result["B_error"] < 1e-13
    A, B = ltv.A, ltv.B
    # eq. (19): first block row (0, I, 0); eq. (20): B has zero position and admissible-dependent rows
    np.testing.assert_array_equal(A[:, :2, :], np.broadcast_to(np.hstack([np.zeros((2, 2)), np.eye(2),
                                                                          np.zeros((2, 1))]), (41, 2, 5)))
    assert np.all(B[:, :2, :] == 0) and np.all(B[:, 4, :] == 0)
    # translation invariance: nothing depends on the positions x, y
    assert np.abs(A[:, :, 0]).max() < 1e-14 and np.abs(A[:, :, 4]).max() < 1e-14
    # the dependent velocity: y' = x' tan(h) -> row (0, v/cos h, tan h, 0, 0)
    ref = result["reference"]
    h = ref(ltv.t).x[:, 2]
    np.testing.assert_allclose(A[:, 4, 1], ref.speed / np.cos(h), rtol=1e-13)
    np.testing.assert_allclose(A[:, 4, 2], np.tan(h), atol=1e-14)


def test_frozen_spectrum_is_two_zeros_and_the_roots_of_p(result):
    eig = np.sort_complex(result["eigenvalues"])
    expected = np.sort_complex(np.concatenate([[0.0, 0.0], result["p_roots"]]))
    np.testing.assert_allclose(eig, expected, atol=1e-12)
    # p(0) = -mu v w^2 < 0: the frozen A has one positive real eigenvalue although the steady turn is
    # stable (the body-frame velocity dynamics s^2 + mu v s + 2 a mu w^2 are Hurwitz for v, a > 0)
    assert np.sum(eig.real > 1e-9) == 1
    np.testing.assert_allclose(np.sort_complex(result["snapshot"].poles()), eig, atol=1e-12)


def test_other_parameters_and_user_entry_points(example):
    out = example["main"](["--mass", "5", "--inertia", "0.8", "--offset", "0.1", "--speed", "0.5",
                           "--turn-rate", "-1.3", "--samples", "7"])
    assert out["problems"] == [] and out["residual"] < 1e-12
    assert out["A_error"] < 1e-12 * np.abs(out["ltv"].A).max()
    # linearize_at agrees with the batched path at one sample
    s = out["reference"](out["ltv"].t[3:4])
    part = out["ltv"].partition
    A, B = ballctl.linear.linearize_at(out["system"], s.x[0], s.xd[0], s.xdd[0], s.u[0], part, lam=s.lam[0])
    np.testing.assert_allclose(A, out["ltv"].A[3], atol=1e-13)
    np.testing.assert_allclose(B, out["ltv"].B[3], atol=1e-15)
    # full deviations: expand then reduce is the identity; the expanded velocity satisfies the
    # linearized constraint D dxd + d(D xd0)/dx dx = 0
    X = np.array([0.01, -0.02, 0.03, 0.05, -0.04])
    dx, dxd = out["ltv"].expand(3, X)
    np.testing.assert_allclose(out["ltv"].reduce(dx, dxd), X, rtol=1e-14)
    eps = 1e-6
    viol = out["system"].constraint_jacobian(s.x[0] + eps * dx) @ (s.xd[0] + eps * dxd)
    assert np.abs(viol).max() < 1e-10
    assert np.abs(np.cos(out["reference"](out["ltv"].t).x[:, 2])).min() >= 0.5 - 1e-12  # |heading| <= 60 deg
