"""Rolling ball (Putkaradze & Rogers 2018): equations, paper example, invariants, common interface."""

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from ballctl._errors import ChartSingularityError
from ballctl.ode import IntegrationOptions
from ballctl.plants.paper import (PAPER_KINK_TIMES, paper_ball_initial_state, paper_ball_parameters,
                                  paper_rail_acceleration)
from ballctl.plants.rolling_ball import PointMass, RollingBall, RollingBallParameters
from ballctl.plants.rails import CircleRail, SegmentRail
from ballctl.system import check_system
from figure_checks import assert_drawn_png

RNG = np.random.default_rng(2018)
ROOT = Path(__file__).resolve().parents[1]


def _paper_input(t):
    return paper_rail_acceleration(t) * np.ones(3)


def _random_state(ball, rng=RNG):
    n = ball.n_masses
    q = rng.normal(size=4)
    return np.concatenate([rng.uniform(-3, 3, n), rng.normal(size=n), q / np.linalg.norm(q),
                           rng.normal(size=3), rng.normal(size=2)])


def _mixed_rail_ball(**kw):
    return RollingBallParameters(
        mass_kg=1.2, radius_m=0.5, principal_inertia_kgm2=[0.08, 0.1, 0.12], cm_offset_m=[0.01, -0.02, -0.05],
        point_masses=(PointMass(mass_kg=0.3, rail=CircleRail.from_spherical(0.4, 0.3, 0.5)),
                      PointMass(mass_kg=0.2, rail=SegmentRail(start_m=[0, -0.3, 0.1], end_m=[0.1, 0.3, -0.2]))),
        gravity_mps2=9.81, **kw)


# ----------------------------------------------------------------------------- validation
def test_parameter_validation_names_every_problem():
    with pytest.raises(ValueError) as info:
        RollingBallParameters(mass_kg=0.0, radius_m=1.0, principal_inertia_kgm2=[1.0, -1.0, 1.0],
                              cm_offset_m=[0, 0, 2.0])
    msg = str(info.value)
    assert "mass_kg must be > 0 kg" in msg
    assert "principal_inertia_kgm2 must be positive definite" in msg
    assert "cm_offset_m must lie inside the ball" in msg
    with pytest.raises(ValueError, match="mass_kg must be > 0"):
        PointMass(mass_kg=-1.0, rail=CircleRail(radius_m=0.5))


def test_non_unit_quaternion_rejected():
    ball = RollingBall(paper_ball_parameters())
    x0 = paper_ball_initial_state()
    x0[6] = 1.01
    with pytest.raises(ValueError, match=r"unit quaternion \(\|q\| = 1 within 1e-09\), got \|q\| = 1.01"):
        ball.simulate(x0, (0.0, 1.0), _paper_input)


# ------------------------------------------------------------------- equations of motion
def test_rail_force_and_acceleration_inputs_are_inverse():
    # tau(theta_ddot) and theta_ddot(tau) are two solves of the same linear system: rounding-level agreement.
    ball = RollingBall(_mixed_rail_ball())
    force_ball = RollingBall(_mixed_rail_ball(), inputs="force")
    for _ in range(5):
        x, u = _random_state(ball), RNG.normal(size=2)
        tau = ball.rail_forces(0.0, x, u)
        np.testing.assert_allclose(ball.rail_accelerations(0.0, x, tau), u, atol=1e-12)
        np.testing.assert_allclose(force_ball.rhs(0.0, x, tau), ball.rhs(0.0, x, u), atol=1e-12)


def test_rhs_batch_equals_loop():
    ball = RollingBall(_mixed_rail_ball())
    X = np.stack([_random_state(ball) for _ in range(4)])
    U = RNG.normal(size=(4, 2))
    batch = ball.rhs(0.0, X, U)
    for k in range(4):
        np.testing.assert_allclose(batch[k], ball.rhs(0.0, X[k], U[k]), atol=1e-14)


def test_dae_form_matches_ode_on_the_constraint():
    # (7.3)-(7.5): M x_dot = g with the algebraic row |q|^2 - 1 = 0 on unit quaternions.
    ball = RollingBall(paper_ball_parameters())
    x, u = _random_state(ball), RNG.normal(size=3)
    residual = ball.dae_mass_matrix() @ ball.rhs(0.0, x, u) - ball.dae_rhs(0.0, x, u)
    np.testing.assert_allclose(residual, 0.0, atol=1e-15)


def test_external_force_torque_is_r_gamma_tilde_cross_gamma():
    # A horizontal force F at the GC on a ball at rest with CM at the GC: Omega_dot solves
    # (sum m hat(s)^2 - I) Omega_dot = r (Lambda^T F) x Gamma; for Lambda = I, F = e1 this gives
    # Omega_dot = -r / (d2 + m r^2) e2 ... (rolls towards +e1).
    params = RollingBallParameters(mass_kg=2.0, radius_m=0.5, principal_inertia_kgm2=[0.2, 0.2, 0.2],
                                   gravity_mps2=9.81, external_force=lambda t: np.array([1.0, 0.0, 0.0]))
    ball = RollingBall(params)
    x = np.array([1.0, 0, 0, 0, 0, 0, 0, 0, 0])
    omega_dot = ball.angular_acceleration(0.0, x, np.zeros(0))
    np.testing.assert_allclose(omega_dot, [0.0, 0.5 / (0.2 + 2.0 * 0.25), 0.0], atol=1e-15)
    zdd_sign = ball.rhs(0.0, np.array([1.0, 0, 0, 0, 0, 0.1, 0, 0, 0]), np.zeros(0))[-2]
    assert zdd_sign > 0  # positive Omega_2 rolls the GC towards +e1


# --------------------------------------------------------------------- the paper's ball
@pytest.fixture(scope="module")
def paper_runs():
    ball = RollingBall(paper_ball_parameters())
    x0 = paper_ball_initial_state()
    runs = {m: ball.simulate(x0, (0.0, 20.0), _paper_input,
                             breakpoints=PAPER_KINK_TIMES, options=IntegrationOptions(method=m, rtol=1e-10, atol=1e-10))
            for m in ("DOP853", "Radau")}
    return ball, runs


def test_paper_ball_two_integrators_agree_at_t20(paper_runs):
    # Section 7, tolerances 1e-10 as in the paper. Measured max difference at t = 20 is ~3e-10;
    # 1e-8 allows for global error growth while still asserting 8 agreed digits on O(1) states.
    ball, runs = paper_runs
    x_explicit, x_implicit = runs["DOP853"].x[-1], runs["Radau"].x[-1]
    assert runs["DOP853"].t[-1] == runs["Radau"].t[-1] == 20.0
    np.testing.assert_allclose(x_explicit, x_implicit, atol=1e-8)
    # the rail kinematics are exact: theta(20) - theta_a = 0.0183333... + 0.15 * 19.8, theta_dot = 0.15
    np.testing.assert_allclose(x_explicit[:3] - paper_ball_initial_state()[:3], 0.0183333333333333 + 2.97,
                               atol=1e-9)
    np.testing.assert_allclose(x_explicit[3:6], 0.15, atol=1e-12)


def test_paper_ball_restarts_at_the_kinks(paper_runs):
    _, runs = paper_runs
    for run in runs.values():
        for kink in PAPER_KINK_TIMES:
            assert np.any(run.t == kink)


def test_paper_ball_quaternion_stays_unit(paper_runs):
    # No projection is applied; with tol 1e-10 the norm drifts by < 1e-9 over 20 s.
    ball, runs = paper_runs
    for run in runs.values():
        q = ball.split_state(run.x)[2]
        assert np.max(np.abs(np.linalg.norm(q, axis=1) - 1.0)) < 1e-9


# ------------------------------------------------------------------------- invariants
def test_energy_conserved_with_fixed_masses():
    # u = 0 and theta_dot = 0 (masses fixed): the ball is a rigid body rolling without slipping, a
    # conservative system. Relative drift over t in [0, 100] at tol 1e-11 stays below 1e-8 (measured ~1e-10).
    ball = RollingBall(paper_ball_parameters())
    x0 = paper_ball_initial_state()
    x0[10:13] = [0.3, -0.5, 0.8]
    run = ball.simulate(x0, (0.0, 100.0), lambda t: np.zeros(3),
                        t_eval=np.linspace(0, 100, 201), breakpoints=(),
                        options=IntegrationOptions(rtol=1e-11, atol=1e-11))
    energy = ball.energy(run.x)
    assert np.max(np.abs(energy - energy[0])) / abs(energy[0]) < 1e-8


def test_energy_conserved_with_free_masses_on_rails():
    # inputs="force", tau = 0: the masses slide freely on frictionless rails; the whole system is
    # conservative, which checks the rail-force mapping dynamically. Drift < 1e-8 relative (tol 1e-11).
    ball = RollingBall(_mixed_rail_ball(), inputs="force")
    x0 = _random_state(ball, np.random.default_rng(3))
    x0[0:2] = [0.5, 0.2]
    # the segment mass slides along its extrapolated line beyond the shell (at 0.44 s): the equations stay
    # conservative, so the rail-exit check is switched off for this check of the force mapping
    run = ball.simulate(x0, (0.0, 10.0), lambda t: np.zeros(2),
                        t_eval=np.linspace(0, 10, 101), breakpoints=(), check_rails=False,
                        options=IntegrationOptions(rtol=1e-11, atol=1e-11))
    energy = ball.energy(run.x)
    assert np.max(np.abs(energy - energy[0])) / np.max(np.abs(energy)) < 1e-8


@pytest.mark.parametrize("masses", ["none", "opposite pair"])
def test_contact_angular_momentum_conserved_when_cm_at_gc(masses):
    # Total CM at the GC: gravity and the contact force have no moment about the contact point and
    # v_CP x p = 0, so Lambda K is constant (Chaplygin ball); hence <K, Gamma> and |K| are conserved.
    # Tolerance 1e-8 relative for tol 1e-11 over 30 s.
    rail = CircleRail.from_spherical(0.6, 0.4, 0.3)
    pms = () if masses == "none" else (PointMass(mass_kg=0.5, rail=rail), PointMass(mass_kg=0.5, rail=rail))
    params = RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.3, 0.4, 0.6],
                                   point_masses=pms, gravity_mps2=9.81)
    ball = RollingBall(params)
    n = ball.n_masses
    theta = np.array([0.3, 0.3 + np.pi])[:n]
    x0 = np.concatenate([theta, np.zeros(n), [np.cos(0.2), np.sin(0.2), 0, 0], [1.0, -0.7, 2.0], [0, 0]])
    np.testing.assert_allclose(ball.total_cm_body(x0), 0.0, atol=1e-15)
    run = ball.simulate(x0, (0.0, 30.0), lambda t: np.zeros(n),
                        t_eval=np.linspace(0, 30, 61), breakpoints=(),
                        options=IntegrationOptions(rtol=1e-11, atol=1e-11))
    K = ball.contact_angular_momentum(run.x)
    projected = np.sum(K * ball.vertical(run.x), axis=1)
    magnitude = np.linalg.norm(K, axis=1)
    spatial = ball.to_spatial_about_gc(run.x, K[:, None, :])[:, 0]
    scale = magnitude[0]
    assert np.max(np.abs(projected - projected[0])) < 1e-8 * scale
    assert np.max(np.abs(magnitude - magnitude[0])) < 1e-8 * scale
    assert np.max(np.abs(spatial - spatial[0])) < 1e-8 * scale


# ------------------------------------------------------------------ common interface
@pytest.mark.parametrize("inputs", ["acceleration", "force"])
def test_constrained_system_matches_euler_poincare(inputs):
    # Independent derivations: Lagrange-d'Alembert in yaw-pitch-roll coordinates (KKT solve) against the
    # Euler-Poincare/quaternion form (7.4). Both are exact, so they agree to rounding; 1e-9 as specified.
    ball = RollingBall(_mixed_rail_ball(), inputs=inputs)
    accel_ball = RollingBall(_mixed_rail_ball())
    system = ball.to_constrained_system()
    for _ in range(5):
        x_ode = _random_state(ball)
        u = RNG.normal(size=2)
        coords, rates = system.from_ode_state(x_ode)
        back = system.to_ode_state(coords, rates)
        sign = np.sign(back[2 * 2] * x_ode[2 * 2])  # q and -q are the same orientation (eq. 2.16)
        back[4:8] *= sign
        np.testing.assert_allclose(back[:-2], x_ode[:-2], atol=1e-12)
        np.testing.assert_allclose(system.constraint_residuals(coords, rates)[1], 0.0, atol=1e-14)
        xdd, _ = system.accelerations(coords, rates, u)
        theta_ddot = u if inputs == "acceleration" else ball.rail_accelerations(0.0, x_ode, u)
        np.testing.assert_allclose(xdd[5:], theta_ddot, atol=1e-9)
        np.testing.assert_allclose(system.body_angular_acceleration(coords, rates, xdd),
                                   accel_ball.angular_acceleration(0.0, x_ode, theta_ddot), atol=1e-9)
        assert check_system(system, coords, rates, u) == []


def test_chart_singularity_raises_and_chart_rotation_moves_it():
    ball = RollingBall(_mixed_rail_ball())
    system = ball.to_constrained_system()
    x = np.array([0.0, 0.0, 0.1, np.pi / 2 - 1e-5, 0.2, 0.0, 0.0])
    with pytest.raises(ChartSingularityError,
                       match=r"pitch = 1.57.* rad is within the chart singularity margin.*chart_rotation"):
        system.mass_matrix(x, np.zeros(2))
    # The same physical orientation in a chart rotated by -90 deg about E2 is regular.
    c, s = np.cos(-np.pi / 2), np.sin(-np.pi / 2)
    rotated = ball.to_constrained_system(chart_rotation=[[c, 0, s], [0, 1, 0], [-s, 0, c]])
    x_ode = system.to_ode_state(np.array([0.0, 0.0, 0.1, 0.3, 0.2, 0.0, 0.0]), np.zeros(7))
    x_ode[4:8] = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]  # pitch = pi/2 in the default chart
    with pytest.raises(ChartSingularityError):
        system.from_ode_state(x_ode)
    coords, rates = rotated.from_ode_state(x_ode)
    assert abs(np.cos(coords[3])) > 0.5
    assert check_system(rotated, coords, rates, np.zeros(2)) == []


# --------------------------------------------------------------------------- example
def test_example_script_quick(tmp_path, monkeypatch, capsys):
    # the script run as ``python examples/rolling_ball_paper.py --quick OUT`` runs it (its ``__main__`` block),
    # here in the test's process: a subprocess would re-import numpy, scipy, matplotlib and ballctl (2 s)
    script = ROOT / "examples" / "rolling_ball_paper.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--quick", str(tmp_path)])
    runpy.run_path(str(script), run_name="__main__")
    assert f"figures written to {tmp_path}" in capsys.readouterr().out
    for name in ("disk_paths.png", "ball_paths.png"):
        assert_drawn_png(tmp_path / name)
