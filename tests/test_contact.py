"""Contact physics of the plants: rolling resistance, the servo plate's set-point offset, contact forces.

Tolerances are stated where they are used, with the reason: the rolling-resistance direction is smoothed at
the contact speed ``v_eps = 1e-4 m/s`` (relative error ``(v_eps / v)^2 / 2`` of the couple at rolling speed
``v``); the servo plate is compliant, so anything measured on it carries the plate's own motion (of order
``m (R + d)^2 / J`` or the ball's load ``m g |r_C| / (J omega_s^2)``); finite differences along a simulation
carry their truncation and the integrator's tolerance.

``tests/data/ball_plate_c0_reference.npz`` holds accelerations, multipliers, forces and mass matrices of every
ball-plate variant at random states, recorded with the kernels *before* rolling resistance, the set-point
offset and the contact forces existed; ``rolling_resistance = 0`` must reproduce them bit for bit (same
platform: a different libm may change the last bits of sin/cos, then regenerate with
``python tests/test_contact.py`` on a commit whose ``c = 0`` path is unchanged).
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest

import ballctl
from ballctl.plants import (BallPlate, BallPlateParameters, MovingPlateBallPlate, MovingPlateParameters,
                            PointMass, RollingBall, RollingBallParameters, RollingDisk, RollingDiskParameters,
                            ServoParameters, ServoPlateBallPlate, check_plant, friction_coefficient_required,
                            random_consistent_state)
from ballctl.plants.kernels import ball_plate as bp_kernels
from ballctl.plants.kernels import moving_plate as mp_kernels
from ballctl.plants.paper import (paper_ball_initial_state, paper_ball_parameters, paper_disk_initial_state,
                                  paper_disk_parameters)
from ballctl.plants.rails import CircleRail, SegmentRail

DATA = pathlib.Path(__file__).parent / "data" / "ball_plate_c0_reference.npz"
C = 0.004   # a steel ball on aluminium
V_EPS = bp_kernels.ROLLING_SPEED_SCALE


def reference_cases() -> dict:
    """name -> ball-plate plant of the c = 0 reference file (every variant, both servo kinds)."""
    return {
        "ball_plate": BallPlate(),
        "ball_plate_hollow": BallPlate(BallPlateParameters(mass=0.0027, radius=0.02,
                                                           inertia=2 / 3 * 0.0027 * 0.02 ** 2)),
        "moving": MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.02)),
        "moving_spin": MovingPlateBallPlate(MovingPlateParameters(pivot_depth=0.02, with_spin=True)),
        "servo": ServoPlateBallPlate(MovingPlateParameters(pivot_depth=0.03)),
        "servo_spin_limits": ServoPlateBallPlate(MovingPlateParameters(with_spin=True),
                                                 ServoParameters(max_torque=2.0, max_rate=3.0)),
    }


def _outputs(plant, X, XD, U) -> dict:
    xdd, lam = plant.accelerations(X, XD, U)
    xdd_s, lam_s = plant.accelerations(X, XD, U, stabilization=(10.0, 10.0))
    return dict(xdd=xdd, lam=lam, xdd_stab=xdd_s, lam_stab=lam_s, Q=plant.forces(X, XD, U),
                M=plant.mass_matrix(X, U))


def _regenerate() -> None:
    out = {}
    for name, plant in reference_cases().items():
        rng = np.random.default_rng(2024)
        states = [random_consistent_state(plant, rng, scale=0.5) for _ in range(6)]
        X, XD, U = (np.array([s[i] for s in states]) for i in range(3))
        out.update({f"{name}/{k}": v for k, v in dict(x=X, xd=XD, u=U, **_outputs(plant, X, XD, U)).items()})
    np.savez_compressed(DATA, **out)


def _with_resistance(plant, c=C):
    """The same plant with the ball's rolling resistance set to ``c``."""
    params = plant.params
    if isinstance(plant, BallPlate):
        return BallPlate(dataclasses.replace(params, rolling_resistance=c))
    params = dataclasses.replace(params, ball=dataclasses.replace(params.ball, rolling_resistance=c))
    return type(plant)(params, plant.servo) if hasattr(plant, "servo") else type(plant)(params)


def _level_rolling_state(plant, speed, heading=0.7, spin=1.3, at=(0.0, 0.0)):
    """Ball rolling at ``speed`` m/s along ``heading`` (rad) with normal spin, plate level and at rest."""
    bp = BallPlate(plant.params if isinstance(plant, BallPlate) else plant.params.ball)
    x = np.array([at[0], at[1], 0.3, 0.2, -0.1])
    xd = bp.rolling_velocities(x, speed * np.array([np.cos(heading), np.sin(heading)]), spin)
    n_p = plant.n_coordinates - 5
    return np.concatenate([x, np.zeros(n_p)]), np.concatenate([xd, np.zeros(n_p)]), np.zeros(plant.n_inputs)


# ---------------------------------------------------------------------------------------- rolling resistance
def test_zero_rolling_resistance_is_bit_identical_to_the_model_without_it():
    """c = 0 (the default) reproduces the recorded pre-change kernels exactly (0 ulp), also with Baumgarte."""
    data = np.load(DATA)
    for name, plant in reference_cases().items():
        assert plant.params.as_dict()["rolling_resistance"] == 0.0
        X, XD, U = data[f"{name}/x"], data[f"{name}/xd"], data[f"{name}/u"]
        for key, value in _outputs(plant, X, XD, U).items():
            np.testing.assert_array_equal(value, data[f"{name}/{key}"], err_msg=f"{name}/{key}")


def test_rolling_resistance_travels_through_every_construction_path():
    ball = BallPlateParameters(rolling_resistance=C)
    assert BallPlate(rolling_resistance=C).params == BallPlate(ball).params
    assert BallPlate(ball).kernel_parameters.tolist()[4] == C
    assert BallPlate(ball).kernel_parameters.shape == (bp_kernels.N_PARAMETERS,)
    moving = MovingPlateBallPlate(MovingPlateParameters(ball=ball))
    servo = ServoPlateBallPlate(MovingPlateParameters(ball=ball), ServoParameters(set_point_offset=(0.01, -0.02)))
    for plant in (moving, servo):
        assert plant.kernel_parameters.shape == (mp_kernels.N_PARAMETERS,)
        assert plant.kernel_parameters[14] == C
        assert plant.quasi_static().params == ball
        assert plant.params.as_dict()["rolling_resistance"] == C
    assert servo.kernel_parameters[15:17].tolist() == [0.01, -0.02]
    assert moving.kernel_parameters[15:17].tolist() == [0.0, 0.0]
    assert dataclasses.replace(ball, mass=0.2).rolling_resistance == C
    with pytest.raises(ballctl.ParameterError, match="params or keyword"):
        BallPlate(ball, rolling_resistance=C)


@pytest.mark.parametrize("value, match", [
    (-0.001, r"rolling_resistance must lie in \[0, 1\) \(dimensionless"),
    (1.0, r"rolling_resistance must lie in \[0, 1\)"),
    (float("nan"), "rolling_resistance must be finite"),
    ("0.1", "rolling_resistance must be a real number"),
])
def test_rolling_resistance_is_validated(value, match):
    with pytest.raises((ballctl.ParameterError, ballctl.errors.ParameterTypeError), match=match):
        BallPlateParameters(rolling_resistance=value)


@pytest.mark.parametrize("speed", [0.05, 0.2])
def test_ball_rolling_on_a_level_plate_slows_at_kb_c_g(speed):
    """Deceleration m R^2 c g / (I + m R^2) along the motion, spin conserved.

    Quasi-static plate and the prescribed plate held level (u = 0): exact up to the regularization,
    relative ``(v_eps / v)^2 / 2`` (5e-7 at 5 cm/s); tolerance that plus 1e-12. The servo plate is
    compliant: the reactions (friction at the lever R + d and the couple) turn it at the instant, which
    changes the ball's acceleration by about ``m (R + d)^2 / J`` relative (measured 7.1e-4 for d = 0 and
    2.1e-3 for d = 2 cm with J = 0.06 kg m^2); tolerance ``2 m (R + d)^2 / J_min`` plus the regularization.
    Its normal force is exactly m g with the ball over the pivot and the plate at rest.
    """
    ball = BallPlateParameters(rolling_resistance=C)
    decel = ball.mass * ball.radius ** 2 * C * ball.gravity / (ball.ball_inertia + ball.mass * ball.radius ** 2)
    heading = np.array([np.cos(0.7), np.sin(0.7)])
    reg = 0.5 * (V_EPS / speed) ** 2 + 1e-12
    plants = [(BallPlate(ball), reg), (MovingPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=0.02)), reg)]
    for d in (0.0, 0.02):
        servo = ServoPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=d))
        J = min(servo.servo.plate_inertia[:2])
        plants.append((servo, reg + 2.0 * ball.mass * (ball.radius + d) ** 2 / J))
    for plant, tol in plants:
        x, xd, u = _level_rolling_state(plant, speed)
        xdd, _ = plant.accelerations(x, xd, u)
        np.testing.assert_allclose(xdd[:2], -decel * heading, rtol=0, atol=tol * decel, err_msg=plant.name)
        spin_rate = xdd[2] + xdd[4] * np.sin(x[3]) + xd[4] * xd[3] * np.cos(x[3])
        assert abs(spin_rate) < 1e-12, plant.name     # the spin about the normal is not resisted
        normal, _ = plant.contact_forces(x, xd, u)
        assert abs(normal - ball.mass * ball.gravity) <= 1e-15 * ball.mass * ball.gravity, plant.name


def _energy_rate(energy, x, xd, xdd, h=1e-30):
    """d/dt of ``energy(x, xd)`` along (xd, xdd): the complex-step derivative ``Im E(x + i h xd, xd + i h xdd) / h``
    (exact to rounding; the energies are analytic)."""
    return float(np.imag(energy(x + 1j * h * xd, xd + 1j * h * xdd)) / h)


def _couple_power(plant, x, xd, u):
    """Power of the rolling-resistance couple, -c N R |w_t|^2 / sqrt(|w_t|^2 + eps^2).

    N is the normal force of the same plant without the couple (``contact_forces`` at c = 0): exactly the
    kernels' N (exact for the quasi-static and the prescribed plate, the documented O(c) estimate on the
    servo plate).
    """
    b = plant.params if isinstance(plant, BallPlate) else plant.params.ball
    w = BallPlate(b).angular_velocity(x[:5], xd[:5])
    wt2 = w[0] ** 2 + w[1] ** 2
    normal, _ = _with_resistance(plant, 0.0).contact_forces(x, xd, u)
    return -b.rolling_resistance * normal * b.radius * wt2 / np.sqrt(wt2 + (V_EPS / b.radius) ** 2)


def test_the_couple_dissipates_exactly_its_power_in_every_variant():
    """The virtual-power mapping Q += J_rel^T tau, checked through energy balances at random states.

    Quasi-static: d(T + V)/dt = tau . w. Prescribed plate: d(ball energy)/dt = drive power + tau . w. Servo
    plate: d(ball + plate + servo spring energy)/dt = -sum J_i k_v qd_i^2 + tau . w (the plate's reaction
    couple included). The rates are complex-step derivatives (exact to rounding), so the tolerance is 1e-12
    of the typical power |Q . xd| (the couple's power is ~1e-3 of it).
    """
    ball = BallPlateParameters(rolling_resistance=0.05)
    qs = BallPlate(ball)
    moving = MovingPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=0.02))
    servo = ServoPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=0.02), ServoParameters(bandwidth=30.0))
    rng = np.random.default_rng(4)
    for _ in range(4):
        x, xd, u = random_consistent_state(qs, rng)
        xdd, _ = qs.accelerations(x, xd, u)
        rate = _energy_rate(lambda a, b: qs.kinetic_energy(a, b) + qs.potential_energy(a, u), x, xd, xdd)
        scale = abs(qs.forces(x, xd, u) @ xd)
        assert abs(rate - _couple_power(qs, x, xd, u)) < 1e-12 * scale
        assert _couple_power(qs, x, xd, u) < 0.0

        x, xd, u = random_consistent_state(moving, rng)
        xdd, _ = moving.accelerations(x, xd, u)
        drive = moving.drive_force(x, xd, xdd) @ xd[5:]
        rate = _energy_rate(moving.ball_energy, x, xd, xdd)
        scale = abs(moving.forces(x, xd, u)[:5] @ xd[:5]) + abs(drive)
        assert abs(rate - drive - _couple_power(moving, x, xd, u)) < 1e-12 * scale

        x, xd, u = random_consistent_state(servo, rng, scale=0.2)
        xdd, _ = servo.accelerations(x, xd, u)
        sv = servo.servo
        J = np.array(sv.plate_inertia[:2])

        def total(a, b):
            spring = 0.5 * np.sum(J * sv.rate_gain * sv.position_gain * (a[5:] - u) ** 2)
            return servo.ball_energy(a, b) + servo.plate_kinetic_energy(a, b) + spring

        damping = -np.sum(J * sv.rate_gain * xd[5:] ** 2)
        rate = _energy_rate(total, x, xd, xdd)
        scale = abs(servo.forces(x, xd, u) @ xd) + abs(damping)
        assert abs(rate - damping - _couple_power(servo, x, xd, u)) < 1e-12 * scale


def test_energy_decreases_monotonically_on_a_level_plate():
    """1 s of rolling with spin on a level plate: with c > 0 the energy falls at every sample and the speed
    by k_b c g per second; with c = 0 it is conserved (to the integrator's 1e-9 relative). The drop per
    10 ms sample (~5e-7 J) is far above the integration noise (~1e-12 J)."""
    ball = BallPlateParameters(rolling_resistance=C)
    decel = ball.rolling_gain * C * ball.gravity
    t = np.linspace(0.0, 1.0, 101)
    for plant, energy in ((BallPlate(ball), lambda p, r: p.kinetic_energy(r.x, r.xd)),
                          (MovingPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=0.02)),
                           lambda p, r: p.ball_energy(r.x, r.xd))):
        for c in (C, 0.0):
            p = _with_resistance(plant, c)
            x0, xd0, u = _level_rolling_state(p, 0.2, at=(0.01, -0.02))
            run = ballctl.simulate(p, x0, xd0, u, (0.0, 1.0), t_eval=t,
                                   options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13))
            E = energy(p, run)
            if c > 0:
                assert np.all(np.diff(E) < 0.0), plant.name
                speed = np.hypot(run.xd[:, 0], run.xd[:, 1])
                np.testing.assert_allclose(speed, 0.2 - decel * t, rtol=0, atol=1e-8)
            else:
                assert np.max(np.abs(E - E[0])) < 1e-9 * E[0], plant.name


@pytest.mark.parametrize("plant", [
    BallPlate(rolling_resistance=C),
    MovingPlateBallPlate(MovingPlateParameters(ball=BallPlateParameters(rolling_resistance=C), pivot_depth=0.02)),
    ServoPlateBallPlate(MovingPlateParameters(ball=BallPlateParameters(rolling_resistance=0.05), pivot_depth=0.02,
                                              with_spin=True),
                        ServoParameters(set_point_offset=(0.01, -0.02))),
], ids=["quasi-static", "moving", "servo-spin-offset"])
def test_plant_contract_holds_with_rolling_resistance(plant):
    """C1-C6 at 6 random states: complex step = central differences (the smoothed direction is analytic),
    batch = loop, eq. (1) with the couple in Q. (No servo limits here: their tanh knee defeats the contract's
    central-difference reference at some states already without rolling resistance.)"""
    assert check_plant(plant, n_states=6, seed=3) == []


def test_planners_refuse_rolling_resistance():
    pytest.importorskip("casadi")
    from ballctl.planning.symbolic import ball_plate_equations, moving_plate_contact_function
    ball = BallPlateParameters(rolling_resistance=C)
    with pytest.raises(ballctl.ParameterError, match="rolling_resistance = 0.004 .* must be 0 to plan"):
        ball_plate_equations(BallPlate(ball))
    with pytest.raises(ballctl.ParameterError, match="must be 0 to plan"):
        moving_plate_contact_function(MovingPlateParameters(ball=ball))
    ball_plate_equations(BallPlate())     # ideal rolling still plans


# ---------------------------------------------------------------------------------------- set-point offset
def test_set_point_offset_is_validated():
    assert ServoParameters().set_point_offset == (0.0, 0.0)
    assert ServoParameters(set_point_offset=[0.01, -0.02]).as_dict()["set_point_offset"] == [0.01, -0.02]
    for value, match in (((0.2, 0.0), r"set_point_offset must lie in \(-0.2, 0.2\) rad"),
                         ((0.0, float("nan")), "set_point_offset must be finite"),
                         ((0.1,), "set_point_offset must have 2 entries")):
        with pytest.raises((ballctl.ParameterError, ballctl.errors.ShapeError), match=match):
            ServoParameters(set_point_offset=value)


def test_offset_plant_equals_the_plain_plant_with_the_offset_added_to_the_command():
    """Offset (a, b) with command u == no offset with command u + (a, b): accelerations, forces, torques to
    1e-14 (they are the same floating-point operations: 0 ulp measured); the inverse subtracts the offset."""
    offset = np.array([0.013, -0.021])
    for params, servo in ((MovingPlateParameters(pivot_depth=0.02), ServoParameters()),
                          (MovingPlateParameters(with_spin=True), ServoParameters(max_torque=2.0, max_rate=3.0))):
        plain = ServoPlateBallPlate(params, servo)
        shifted = ServoPlateBallPlate(params, dataclasses.replace(servo, set_point_offset=tuple(offset)))
        rng = np.random.default_rng(8)
        states = [random_consistent_state(plain, rng) for _ in range(5)]
        X, XD, U = (np.array([s[i] for s in states]) for i in range(3))
        U_plus = U.copy()
        U_plus[:, :2] += offset
        pairs = [*zip(shifted.accelerations(X, XD, U), plain.accelerations(X, XD, U_plus)),
                 (shifted.forces(X, XD, U), plain.forces(X, XD, U_plus)),
                 (shifted.servo_torque(X, XD, U), plain.servo_torque(X, XD, U_plus)),
                 *zip(shifted.contact_forces(X, XD, U), plain.contact_forces(X, XD, U_plus))]
        for a, b in pairs:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)
        # the inverse, at commands within the servo's limits (set point 0.02 rad at most from the plate)
        pad = np.pad(offset, (0, plain.n_plate - 2))
        U_in = X[:, 5:] - pad + rng.uniform(-0.02, 0.02, U.shape)
        XD_in = XD.copy()
        XD_in[:, 5:] *= 0.1
        tau = shifted.servo_torque(X, XD_in, U_in)
        np.testing.assert_allclose(shifted.commands_for_torque(X, XD_in, tau), U_in, rtol=0, atol=1e-12)
        np.testing.assert_allclose(shifted.commands_for_torque(X, XD_in, tau),
                                   plain.commands_for_torque(X, XD_in, tau) - pad, rtol=0, atol=1e-15)


@pytest.mark.parametrize("inertia", [0.06, 6.0])
def test_plate_settles_at_the_offset_for_a_zero_command(inertia):
    """Command 0, offset (0.01, -0.02) rad: after 0.4 s (ten servo time constants 1/(zeta omega_s)) the plate
    sits at the offset, up to the static deflection under the ball's load, bounded by 2 m g |r_C| / (J omega_s^2)
    (the ball rolls off the pivot once the plate tilts; 4e-5 rad measured for J = 0.06 kg m^2, 4e-7 for 6)."""
    ball = BallPlateParameters()
    servo = ServoParameters(plate_inertia=(inertia, inertia, 2 * inertia), set_point_offset=(0.01, -0.02))
    plant = ServoPlateBallPlate(MovingPlateParameters(ball=ball), servo)
    run = ballctl.simulate(plant, np.zeros(7), np.zeros(7), [0.0, 0.0], (0.0, 0.4), t_eval=[0.4],
                           options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-12))
    bound = 2.0 * ball.mass * ball.gravity * np.hypot(*run.x[-1, :2]) / (inertia * servo.bandwidth ** 2)
    assert np.max(np.abs(run.x[-1, 5:] - [0.01, -0.02])) < bound
    assert bound < 1e-4


# ---------------------------------------------------------------------------------------- contact forces
def test_friction_coefficient_required():
    mu = friction_coefficient_required([2.0, 0.0, -1.0, 1.0], [[0.3, 0.4], [0.1, 0.0], [0.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(mu, [0.25, np.inf, np.inf, 0.0])
    np.testing.assert_array_equal(friction_coefficient_required(4.0, [-1.0]), 0.25)
    with pytest.raises(ballctl.errors.ShapeError, match="matching leading shapes"):
        friction_coefficient_required([1.0, 2.0], [[0.1, 0.2]] * 3)


def test_quasi_static_contact_forces_on_an_incline():
    """A ball rolling freely on a plate tilted by constant (alpha, beta), any orientation, rates and spin:
    N = m g cos(alpha) cos(beta), |F_t| / N = I/(I + m R^2) |g_plate,xy| / |g_plate,z|, i.e.
    I/(I + m R^2) tan(alpha) for beta = 0 (the no-slip friction of an incline); to rounding (1e-13)."""
    for params in (BallPlateParameters(), BallPlateParameters(mass=0.0027, inertia=2 / 3 * 0.0027 * 0.02 ** 2)):
        plant = BallPlate(params)
        m, inertia, g = params.mass, params.ball_inertia, params.gravity
        rng = np.random.default_rng(1)
        states = [random_consistent_state(plant, rng) for _ in range(6)]
        X, XD = np.array([s[0] for s in states]), np.array([s[1] for s in states])
        share = inertia / (inertia + m * params.radius ** 2)
        for alpha, beta in ((0.1, 0.0), (-0.25, 0.0), (0.15, -0.3)):
            U = np.broadcast_to([alpha, beta], (6, 2))
            normal, tangential = plant.contact_forces(X, XD, U)
            assert normal.shape == (6,) and tangential.shape == (6, 2)
            np.testing.assert_allclose(normal, m * g * np.cos(alpha) * np.cos(beta), rtol=1e-13)
            expected = share * np.hypot(np.cos(alpha) * np.sin(beta), np.sin(alpha)) / (np.cos(alpha) * np.cos(beta))
            if beta == 0.0:
                assert np.isclose(expected, share * np.tan(abs(alpha)), rtol=1e-14)
            np.testing.assert_allclose(friction_coefficient_required(normal, tangential), expected, rtol=1e-12)
            # the friction force is -lam (docs/conventions.md)
            np.testing.assert_allclose(tangential, -plant.accelerations(X, XD, U)[1], rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("inertia, tol_normal, tol_mu", [(0.06, 1e-4, 3e-3), (6.0, 2e-6, 3e-5)])
def test_servo_plate_settled_at_a_tilt_matches_the_incline(inertia, tol_normal, tol_mu):
    """Command (0.05, 0) rad from level and rest, 0.3 s later (plate settled to ~1e-4 of the tilt): the same
    closed forms as the quasi-static incline. The plate is not perfectly still: the ball rolling down moves
    its load, so the plate keeps turning at about m g v / (J omega_s^2) and its motion shifts N and F_t;
    the relative deviation scales as 1/J (measured 1.2e-5 and 7.8e-4 for J = 0.06 kg m^2, 2e-7 and 4e-6 for
    J = 6), tolerances about 4x those."""
    ball = BallPlateParameters()
    plant = ServoPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=0.02),
                                ServoParameters(plate_inertia=(inertia, inertia, 2 * inertia)))
    alpha = 0.05
    run = ballctl.simulate(plant, np.zeros(7), np.zeros(7), [alpha, 0.0], (0.0, 0.3), t_eval=[0.3],
                           options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-12))
    normal, tangential = plant.contact_forces(run.x[-1], run.xd[-1], [alpha, 0.0])
    tilt = run.x[-1, 5]
    assert abs(tilt - alpha) < 1e-3 * alpha
    np.testing.assert_allclose(normal, ball.mass * ball.gravity * np.cos(alpha), rtol=tol_normal)
    share = ball.ball_inertia / (ball.ball_inertia + ball.mass * ball.radius ** 2)
    np.testing.assert_allclose(friction_coefficient_required(normal, tangential), share * np.tan(alpha),
                               rtol=tol_mu)


def test_ball_at_rest_on_a_level_plate_presses_with_its_weight():
    """N = m g, F_t = 0 exactly (1e-15) on every ball-plate variant (on the servo plate over the pivot)."""
    ball = BallPlateParameters(rolling_resistance=C)
    for plant in (BallPlate(ball), MovingPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=0.02)),
                  ServoPlateBallPlate(MovingPlateParameters(ball=ball, pivot_depth=0.02)),
                  ServoPlateBallPlate(MovingPlateParameters(ball=ball, with_spin=True))):
        n = plant.n_coordinates
        x = np.zeros(n)
        x[2:5] = [0.4, -0.3, 1.2]
        normal, tangential = plant.contact_forces(x, np.zeros(n), np.zeros(plant.n_inputs))
        assert normal.shape == () and tangential.shape == (2,)
        assert abs(normal - ball.mass * ball.gravity) <= 1e-15
        assert np.max(np.abs(tangential)) <= 1e-15


# --------------------------------------------------------------------- rolling ball and disk: contact forces
def _standing_ball(inputs="acceleration"):
    """A ball (m0 = 2 kg, CM 0.1 m below the GC) with a 0.5 kg mass on a vertical segment through the GC."""
    params = RollingBallParameters(mass_kg=2.0, radius_m=0.5, principal_inertia_kgm2=[0.2, 0.2, 0.25],
                                   cm_offset_m=[0.0, 0.0, -0.1], gravity_mps2=9.81,
                                   point_masses=(PointMass(mass_kg=0.5, rail=SegmentRail(start_m=[0, 0, -0.3],
                                                                                         end_m=[0, 0, 0.3])),))
    x = np.array([0.2, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3, -0.1])   # theta, theta_dot, q, Omega, z
    return RollingBall(params, inputs=inputs), x


def test_rolling_ball_and_disk_at_rest_press_with_their_total_weight():
    """Masses at rest in an equilibrium (total CM on the vertical through the GC): N = M g, F_t = 0 (1e-14)."""
    ball, x = _standing_ball()
    normal, tangential = ball.contact_forces(0.0, x, [0.0])
    assert normal.shape == () and tangential.shape == (2,)
    assert abs(normal - ball.params.total_mass_kg * 9.81) < 1e-13
    assert np.max(np.abs(tangential)) < 1e-14
    disk = RollingDisk(paper_disk_parameters())
    normal, tangential = disk.contact_forces(0.0, paper_disk_initial_state(), np.zeros(4))
    assert normal.shape == () and tangential.shape == (1,)
    assert abs(normal - disk.masses_kg.sum() * 1.0) < 1e-14 and abs(tangential[0]) < 1e-14


def test_mass_pushed_along_a_vertical_rail_adds_its_inertial_force():
    """Vertical rail through the GC, ball upright: theta_ddot = u is the mass's vertical acceleration and the
    ball does not turn, so N = M g + m_1 u; with rail forces tau, m_1 (theta_ddot + g) = tau, so N = m0 g + tau."""
    ball, x = _standing_ball()
    for u in (-3.0, 0.7, 5.0):
        normal, tangential = ball.contact_forces(0.0, x, [u])
        assert abs(normal - (2.5 * 9.81 + 0.5 * u)) < 1e-13 and np.max(np.abs(tangential)) < 1e-14
    ball, x = _standing_ball("force")
    for tau in (0.0, 2.0, 8.0):
        normal, _ = ball.contact_forces(0.0, x, [tau])
        assert abs(normal - (2.0 * 9.81 + tau)) < 1e-13


def _ball_positions_and_momentum(ball, X):
    """Spatial positions (K, n + 1, 3) of the body CM and the masses, and the total momentum (K, 3), from the
    state alone (rail geometry and rotations; not the contact kernel)."""
    theta, theta_dot, _, Om, z = ball.split_state(X)
    K = X.shape[0]
    zeta, dzeta, _ = ball.rail_geometry(theta)
    body = np.concatenate([np.broadcast_to(ball.params.cm_offset_m, (K, 1, 3)), zeta], axis=1)
    rail_velocity = np.concatenate([np.zeros((K, 1, 3)), theta_dot[..., None] * dzeta], axis=1)
    gc = np.concatenate([z, np.zeros((K, 1))], axis=1)
    positions = gc[:, None, :] + ball.to_spatial_about_gc(X, body)
    omega = ball.to_spatial_about_gc(X, Om[:, None, :])[:, 0]
    r = ball.params.radius_m
    v_gc = r * np.stack([omega[:, 1], -omega[:, 0], np.zeros(K)], axis=-1)    # rolling: v = omega x (r e3)
    v = v_gc[:, None, :] + ball.to_spatial_about_gc(X, np.cross(Om[:, None, :], body) + rail_velocity)
    return positions, np.einsum("k,tki->ti", ball.masses_kg, v)


def _disk_positions_and_momentum(disk, X):
    """As :func:`_ball_positions_and_momentum` for the disk, spatial (e1, e3) components."""
    theta, theta_dot, phi, phi_dot = disk.split_state(X)
    K = X.shape[0]
    _, dzeta, _ = disk.rail_geometry(theta)
    body = np.concatenate([np.broadcast_to(disk.params.cm_offset_m, (K, 1, 2)), disk.mass_positions_body(X)], axis=1)
    rail_velocity = np.concatenate([np.zeros((K, 1, 2)), theta_dot[..., None] * dzeta[..., [0, 2]]], axis=1)
    gc = np.stack([disk.contact_position(X), np.zeros(K)], axis=-1)
    positions = gc[:, None, :] + disk.to_spatial_about_gc(X, body)
    turn = phi_dot[:, None, None] * np.stack([-body[..., 1], body[..., 0]], axis=-1)   # phi_dot e2 x zeta (1, 3)
    v_gc = np.stack([-disk.params.radius_m * phi_dot, np.zeros(K)], axis=-1)
    v = v_gc[:, None, :] + disk.to_spatial_about_gc(X, turn + rail_velocity)
    return positions, np.einsum("k,tki->ti", disk.masses_kg, v)


def _fd(y, h, order):
    """Fourth-order central first or second derivative along axis 0 at samples 2 .. K-3."""
    if order == 1:
        return (y[:-4] - 8 * y[1:-3] + 8 * y[3:-1] - y[4:]) / (12 * h)
    return (-y[:-4] + 16 * y[1:-3] - 30 * y[2:-2] + 16 * y[3:-1] - y[4:]) / (12 * h * h)


def _smooth_input(n, amplitude):
    phases = np.arange(n) * 1.3
    return lambda t: amplitude * np.sin(2.0 * t + phases)


def _mixed_ball(inputs):
    force = lambda t: np.array([0.3 * np.cos(t), -0.2, 0.1 * t])   # noqa: E731
    params = RollingBallParameters(
        mass_kg=2.0, radius_m=1.2, principal_inertia_kgm2=[0.7, 0.9, 1.1], cm_offset_m=[0.02, -0.03, 0.05],
        point_masses=(PointMass(mass_kg=0.3, rail=CircleRail(radius_m=0.6, center_m=[0.1, 0.0, -0.1])),
                      PointMass(mass_kg=0.4, rail=SegmentRail(start_m=[-0.5, 0.2, 0.1], end_m=[0.4, -0.3, 0.2]))),
        gravity_mps2=9.81, external_force=force)
    x0 = np.array([0.5, 0.3, 0.4, -0.2, 1.0, 0.0, 0.0, 0.0, 0.3, -0.2, 0.5, 0.0, 0.0])
    return RollingBall(params, inputs=inputs), x0, force


CASES = {
    "paper ball, accelerations": lambda: (RollingBall(paper_ball_parameters()), paper_ball_initial_state(), None,
                                          _smooth_input(3, 0.8)),
    "paper ball, rail forces": lambda: (RollingBall(paper_ball_parameters(), inputs="force"),
                                        paper_ball_initial_state(), None, _smooth_input(3, 0.3)),
    "off-centre ball, external force": lambda: (*_mixed_ball("acceleration"), _smooth_input(2, 1.5)),
    "paper disk, accelerations": lambda: (RollingDisk(paper_disk_parameters()), paper_disk_initial_state(), None,
                                          _smooth_input(4, 0.8)),
    "disk, rail forces, external force": lambda: (
        RollingDisk(RollingDiskParameters(mass_kg=1.5, radius_m=1.1, inertia_kgm2=0.8, cm_offset_m=[0.05, -0.1],
                                          point_masses=(PointMass(mass_kg=0.5, rail=CircleRail(radius_m=0.7)),),
                                          external_force=lambda t: 0.4 * np.cos(3 * t)), inputs="force"),
        np.array([0.3, 0.5, 0.2, -0.4]), lambda t: np.array([0.4 * np.cos(3 * t), 0.0]),   # (F_e1, F_e3)
        _smooth_input(1, 0.5)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_contact_force_is_the_rate_of_the_total_momentum(case):
    """Along a 0.6 s simulation (smooth inputs, rtol = atol = 1e-12, samples every 2.5 ms):
    N = M g + sum_i m_i z_i'' - F_e,3 with z_i'' the fourth-order second difference of the positions of the
    masses (and of the body's CM), and F_t = dP_t/dt - F_e,t with P the total momentum from the state's
    velocities, differenced once. Measured, relative to the total weight: <= 6e-9 (the integrator's error,
    differenced) for four cases; 3.5e-8 for the disk whose free mass whirls (the h^4 truncation: 5.5e-7 at
    h = 5 ms, 16x less at 2.5 ms). Tolerance 2e-7 of the total weight."""
    plant, x0, force, u = CASES[case]()
    h = 2.5e-3
    t = np.arange(0.0, 0.6 + h / 2, h)
    traj = plant.simulate(x0, (0.0, t[-1]), u, t_eval=t, breakpoints=(),
                          options=ballctl.IntegrationOptions(rtol=1e-12, atol=1e-12))
    X = traj.x
    normal = np.empty(t.size)
    tangential = np.empty((t.size, 2 if isinstance(plant, RollingBall) else 1))
    for k, tk in enumerate(t):
        normal[k], tangential[k] = plant.contact_forces(tk, X[k], u(tk))
    if force is None:   # batched = looped
        n_b, t_b = plant.contact_forces(0.0, X, np.array([u(tk) for tk in t]))
        np.testing.assert_allclose(n_b, normal, rtol=1e-14)
        np.testing.assert_allclose(t_b, tangential, rtol=1e-14, atol=1e-15)
    if isinstance(plant, RollingBall):
        positions, momentum = _ball_positions_and_momentum(plant, X)
    else:
        positions, momentum = _disk_positions_and_momentum(plant, X)
    fe = np.zeros_like(momentum) if force is None else np.array([force(tk) for tk in t])   # spatial, N
    masses = plant.masses_kg
    weight = masses.sum() * plant.params.gravity_mps2
    vertical = np.einsum("k,tk->t", masses, _fd(positions[..., -1], h, 2))
    np.testing.assert_allclose(normal[2:-2], weight + vertical - fe[2:-2, -1], rtol=0, atol=2e-7 * weight)
    np.testing.assert_allclose(tangential[2:-2], _fd(momentum[:, :-1], h, 1) - fe[2:-2, :-1], rtol=0,
                               atol=2e-7 * weight)
    assert np.ptp(normal) > 1e-3 * weight      # the masses do move: the check is not trivial


if __name__ == "__main__":
    _regenerate()
