"""The compiled rolling ball/disk kernels against values recorded from the former numpy implementation.

``tests/data/rolling_reference.npz`` holds, at random states, every dynamics
output of the ball and the disk (both input modes, closed-form and callable
rails, an off-centre body, an external force) and of their
generalized-coordinate forms, computed by the numpy code that the kernels
replaced (commit history: recorded before the switch). That code was proven
equal to the CasADi form of :mod:`ballctl.planning.symbolic` and to the
energy/momentum checks of ``tests/test_rolling_ball.py``; the kernels must
reproduce it to 1e-12 (relative to the size of each quantity), i.e. to
rounding. Regenerate with ``python tests/test_rolling_kernels.py`` only when
the physics is meant to change.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from ballctl.ode import IntegrationOptions
from ballctl.plants.internal_masses import PointMass
from ballctl.plants.paper import paper_ball_parameters, paper_disk_parameters
from ballctl.plants.rails import CallableRail, CircleRail, EllipseRail, FigureEightRail, SegmentRail
from ballctl.plants.rolling_ball import RollingBall, RollingBallParameters
from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters

DATA = pathlib.Path(__file__).parent / "data" / "rolling_reference.npz"
N_SAMPLES = 6


def _wobbly_circle(theta):
    """A user rail in plain Python: a circle of radius 0.5 m in the E1-E3 plane with a 3-fold wobble."""
    theta = np.asarray(theta)
    rho = 0.5 + 0.05 * np.sin(3 * theta)
    drho = 0.15 * np.cos(3 * theta)
    ddrho = -0.45 * np.sin(3 * theta)
    c, s = np.cos(theta), np.sin(theta)
    z = np.zeros_like(rho * c)
    zeta = np.stack([rho * c, z, rho * s], axis=-1)
    dzeta = np.stack([drho * c - rho * s, z, drho * s + rho * c], axis=-1)
    ddzeta = np.stack([ddrho * c - 2 * drho * s - rho * c, z, ddrho * s + 2 * drho * c - rho * s], axis=-1)
    return zeta, dzeta, ddzeta


def _tilt(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def ball_cases():
    """name -> RollingBallParameters covering every rail kind, an off-centre body and an external force."""
    mixed = RollingBallParameters(
        mass_kg=2.0, radius_m=1.2, principal_inertia_kgm2=[0.7, 0.9, 1.1], cm_offset_m=[0.02, -0.03, 0.05],
        point_masses=(PointMass(mass_kg=0.3, rail=EllipseRail(semi_axis_first_m=0.6, semi_axis_third_m=0.4,
                                                              rotation=_tilt(0.3), center_m=[0.1, 0.0, -0.1])),
                      PointMass(mass_kg=0.5, rail=FigureEightRail(half_width_m=0.5, half_height_m=0.6,
                                                                  rotation=_tilt(-0.7), center_m=[0.0, 0.1, 0.0])),
                      PointMass(mass_kg=0.4, rail=SegmentRail(start_m=[-0.5, 0.2, 0.1], end_m=[0.4, -0.3, 0.2])),
                      PointMass(mass_kg=0.2, rail=CircleRail(radius_m=0.3, rotation=_tilt(1.1),
                                                             center_m=[0.0, 0.0, 0.2]))),
        gravity_mps2=9.81, external_force=lambda t: np.array([0.3 * np.cos(t), -0.2, 0.1 * t]))
    user = RollingBallParameters(
        mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.5, 0.6, 0.7],
        point_masses=(PointMass(mass_kg=0.6, rail=CallableRail(function=_wobbly_circle)),
                      PointMass(mass_kg=0.4, rail=CircleRail.from_spherical(0.7, 0.4, 0.3))))
    bare = RollingBallParameters(mass_kg=1.5, radius_m=0.8, principal_inertia_kgm2=[0.3, 0.4, 0.5],
                                 cm_offset_m=[0.0, 0.1, -0.2])
    return {"paper": paper_ball_parameters(), "mixed": mixed, "user": user, "bare": bare}


def disk_cases():
    """name -> RollingDiskParameters: the paper's disk and one with every planar rail kind and a force."""
    mixed = RollingDiskParameters(
        mass_kg=1.5, radius_m=1.1, inertia_kgm2=0.8, cm_offset_m=[0.05, -0.1],
        point_masses=(PointMass(mass_kg=0.3, rail=EllipseRail(semi_axis_first_m=0.6, semi_axis_third_m=0.4,
                                                              center_m=[0.1, 0.0, -0.1])),
                      PointMass(mass_kg=0.5, rail=FigureEightRail(half_width_m=0.5, half_height_m=0.6)),
                      PointMass(mass_kg=0.4, rail=SegmentRail(start_m=[-0.5, 0.0, 0.1], end_m=[0.4, 0.0, -0.3])),
                      PointMass(mass_kg=0.2, rail=CallableRail(function=_wobbly_circle))),
        gravity_mps2=9.81, external_force=lambda t: 0.4 * np.sin(t))
    return {"paper": paper_disk_parameters(), "mixed": mixed}


def _random_ball_states(plant, rng):
    n = plant.n_masses
    q = rng.normal(size=(N_SAMPLES, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return np.concatenate([rng.uniform(0.0, 2.0 * np.pi, (N_SAMPLES, n)),
                           rng.normal(size=(N_SAMPLES, n)), q, rng.normal(size=(N_SAMPLES, 3)),
                           rng.normal(size=(N_SAMPLES, 2))], axis=-1)


def _segment_safe(plant, x):
    """Keep segment parameters inside the tube (so the states are physical)."""
    for i, pm in enumerate(plant.params.point_masses):
        if isinstance(pm.rail, SegmentRail):
            x[:, i] = np.mod(x[:, i], pm.rail.length_m)
    return x


def compute(record=False):
    """Every recorded quantity, as a dict name -> array (same seeds as the recording)."""
    out = {}
    rng = np.random.default_rng(20261201)
    for name, params in ball_cases().items():
        for mode in ("acceleration", "force"):
            ball = RollingBall(params, inputs=mode)
            x = _segment_safe(ball, _random_ball_states(ball, rng))
            u = rng.normal(size=(N_SAMPLES, ball.n_masses))
            t = 0.37
            key = f"ball/{name}/{mode}"
            out[key + "/x"], out[key + "/u"] = x, u
            out[key + "/rhs"] = ball.rhs(t, x, u)
            out[key + "/rhs_single"] = np.array([ball.rhs(t, xi, ui) for xi, ui in zip(x, u)])
            if mode == "acceleration":
                out[key + "/angular_acceleration"] = ball.angular_acceleration(t, x, u)
                if ball.n_masses:
                    out[key + "/rail_forces"] = ball.rail_forces(t, x, u)
                    out[key + "/rail_accelerations"] = ball.rail_accelerations(t, x, u)
            out[key + "/energy"] = ball.energy(x)
            out[key + "/momentum"] = ball.contact_angular_momentum(x)
            out[key + "/jacobian0"] = ball.rhs_jacobian(t, x[0], u[0])
            if params.external_force is None:
                sys_ = ball.to_constrained_system()
                X, XD = zip(*(sys_.from_ode_state(xi) for xi in x))
                X, XD = np.array(X), np.array(XD)
                out[key + "/sys_x"], out[key + "/sys_xd"] = X, XD
                out[key + "/sys_M"] = np.array([sys_.mass_matrix(a, b) for a, b in zip(X, u)])
                out[key + "/sys_Q"] = np.array([sys_.forces(a, b, c) for a, b, c in zip(X, XD, u)])
                out[key + "/sys_D"] = np.array([sys_.constraint_jacobian(a) for a in X])
                out[key + "/sys_bias"] = np.array([sys_.constraint_bias(a, b) for a, b in zip(X, XD)])
                acc = [sys_.accelerations(a, b, c) for a, b, c in zip(X, XD, u)]
                out[key + "/sys_xdd"] = np.array([a for a, _ in acc])
                out[key + "/sys_lam"] = np.array([b for _, b in acc])
    for name, params in disk_cases().items():
        for mode in ("acceleration", "force"):
            disk = RollingDisk(params, inputs=mode)
            n = disk.n_masses
            x = np.concatenate([rng.uniform(0.0, 2.0 * np.pi, (N_SAMPLES, n)), rng.normal(size=(N_SAMPLES, n)),
                                rng.normal(size=(N_SAMPLES, 2))], axis=-1)
            x = _segment_safe(disk, x)
            u = rng.normal(size=(N_SAMPLES, n))
            t = 0.61
            key = f"disk/{name}/{mode}"
            out[key + "/x"], out[key + "/u"] = x, u
            out[key + "/rhs"] = disk.rhs(t, x, u)
            out[key + "/rhs_single"] = np.array([disk.rhs(t, xi, ui) for xi, ui in zip(x, u)])
            if mode == "acceleration":
                out[key + "/angular_acceleration"] = disk.angular_acceleration(t, x, u)
                out[key + "/rail_forces"] = disk.rail_forces(t, x, u)
                out[key + "/rail_accelerations"] = disk.rail_accelerations(t, x, u)
            out[key + "/energy"] = disk.energy(x)
            out[key + "/jacobian0"] = disk.rhs_jacobian(t, x[0], u[0])
            if params.external_force is None:
                sys_ = disk.to_constrained_system(contact_at_zero_angle_m=0.2)
                X, XD = sys_.from_ode_state(x)
                out[key + "/sys_x"], out[key + "/sys_xd"] = X, XD
                out[key + "/sys_M"] = np.array([sys_.mass_matrix(a, b) for a, b in zip(X, u)])
                out[key + "/sys_Q"] = np.array([sys_.forces(a, b, c) for a, b, c in zip(X, XD, u)])
                out[key + "/sys_D"] = np.array([sys_.constraint_jacobian(a) for a in X])
                out[key + "/sys_bias"] = np.array([sys_.constraint_bias(a, b) for a, b in zip(X, XD)])
                acc = [sys_.accelerations(a, b, c, stabilization=(2.0, 3.0)) for a, b, c in zip(X, XD, u)]
                out[key + "/sys_xdd"] = np.array([a for a, _ in acc])
                out[key + "/sys_lam"] = np.array([b for _, b in acc])
    return out


def _reference():
    with np.load(DATA) as f:
        return {k: f[k] for k in f.files}


REFERENCE = _reference() if DATA.exists() else {}


@pytest.fixture(scope="module")
def current():
    return compute()


@pytest.mark.parametrize("key", sorted(k for k in REFERENCE if not k.endswith(("/x", "/u", "/sys_x", "/sys_xd"))))
def test_kernels_reproduce_the_recorded_numpy_values(current, key):
    """Every output equals the recorded numpy value to 1e-12 relative to the largest entry (rounding only)."""
    ref = REFERENCE[key]
    got = current[key]
    assert got.shape == ref.shape
    scale = max(1.0, float(np.max(np.abs(ref))))
    assert np.max(np.abs(got - ref)) <= 1e-12 * scale, (key, np.max(np.abs(got - ref)) / scale)


def test_the_recording_covers_every_case():
    assert len(REFERENCE) > 100
    assert {k for k in REFERENCE if k.endswith("/x")} == {k for k in compute() if k.endswith("/x")}


if __name__ == "__main__":  # pragma: no cover - regenerates the reference file
    values = compute()
    np.savez_compressed(DATA, **values)
    print(f"wrote {len(values)} arrays to {DATA}")


# ---------------------------------------------------------------------------------------------
# the compiled rail geometry and the Python-geometry path
# ---------------------------------------------------------------------------------------------

def _closed_form_rails():
    return [CircleRail(radius_m=0.4, rotation=_tilt(0.9), center_m=[0.1, -0.2, 0.05]),
            CircleRail.from_spherical(0.85, np.pi / 4, np.pi / 4),
            EllipseRail(semi_axis_first_m=0.6, semi_axis_third_m=0.3, rotation=_tilt(-0.4), center_m=[0, 0.1, 0]),
            FigureEightRail(half_width_m=0.5, half_height_m=0.4, rotation=_tilt(0.2)),
            SegmentRail(start_m=[-0.5, 0.2, 0.1], end_m=[0.4, -0.3, 0.2])]


@pytest.mark.parametrize("rail", _closed_form_rails(), ids=lambda r: type(r).__name__)
def test_compiled_rail_geometry_equals_the_rail_classes(rail):
    """The kernel row reproduces ``rail.evaluate`` (positions and both derivatives) to 1e-15 m, float and complex."""
    from ballctl.plants.kernels.rails import rail_geometry_batch

    theta = np.linspace(-1.0, 7.0, 41)
    table = rail.kernel_row()[None, :]
    got = rail_geometry_batch(theta[:, None], table)
    for g, ref in zip(got, rail.evaluate(theta)):
        assert np.max(np.abs(g[:, 0, :] - ref)) < 1e-15 * 10
    # complex step through the compiled geometry: Im f(theta + ih)/h = the next derivative
    h = 1e-30
    zc = rail_geometry_batch((theta + 1j * h)[:, None], table)
    assert np.max(np.abs(zc[0].imag[:, 0] / h - rail.evaluate(theta)[1])) < 1e-14
    assert np.max(np.abs(zc[1].imag[:, 0] / h - rail.evaluate(theta)[2])) < 1e-14


def test_rails_without_a_closed_form_are_evaluated_in_python():
    class Wobbly(CircleRail):
        def _local(self, theta):
            return _wobbly_circle(theta)

    assert Wobbly(radius_m=0.5).kernel_row() is None
    assert CallableRail(function=_wobbly_circle).kernel_row() is None


def test_python_geometry_path_equals_the_compiled_path():
    """The same rails given as CallableRails (Python geometry) give the same rhs, solve and system terms.

    Both paths feed the same dynamics kernels, so they agree to rounding (1e-14 relative);
    this pins the dispatch (table vs arrays) and the shapes of the Python path.
    """
    rails = _closed_form_rails()[2:]
    wrapped = [CallableRail(function=r.evaluate, periodic=r.periodic,
                            parameter_range=r.parameter_range) for r in rails]
    rng = np.random.default_rng(3)
    for mode in ("acceleration", "force"):
        balls = [RollingBall(RollingBallParameters(
            mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.5, 0.6, 0.7],
            point_masses=tuple(PointMass(mass_kg=0.3 + 0.1 * i, rail=r) for i, r in enumerate(rs))), inputs=mode)
            for rs in (rails, wrapped)]
        assert balls[0].compiled_rails and not balls[1].compiled_rails
        x = _segment_safe(balls[0], _random_ball_states(balls[0], rng))
        u = rng.normal(size=(N_SAMPLES, 3))
        a, b = (ball.rhs(0.0, x, u) for ball in balls)
        assert np.max(np.abs(a - b)) < 1e-14 * max(1.0, np.max(np.abs(a)))
        ja, jb = (ball.rhs_jacobian(0.0, x[0], u[0]) for ball in balls)
        assert np.max(np.abs(ja - jb)) < 1e-12 * max(1.0, np.max(np.abs(ja)))
        systems = [ball.to_constrained_system() for ball in balls]
        X, XD = zip(*(systems[0].from_ode_state(xi) for xi in x))
        X, XD = np.array(X), np.array(XD)
        for s0, s1 in zip(*(s.accelerations(X, XD, u) for s in systems)):
            assert np.max(np.abs(s0 - s1)) < 1e-12 * max(1.0, np.max(np.abs(s0)))


def test_a_rail_that_drops_the_imaginary_part_falls_back_to_central_differences():
    """A CallableRail that casts to float cannot be complex-stepped; the Jacobian must not silently lose its
    terms: the plant refuses the complex call and ballctl's differentiation falls back (agreement 1e-6)."""
    def real_only(theta):
        return tuple(np.asarray(a.real, dtype=float) for a in _wobbly_circle(np.asarray(theta)))

    params = [RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.5, 0.6, 0.7],
                                    point_masses=(PointMass(mass_kg=0.6, rail=CallableRail(function=f)),))
              for f in (_wobbly_circle, real_only)]
    safe, unsafe = (RollingBall(p) for p in params)
    x = np.array([0.7, 0.3, 0.8, 0.0, 0.6, 0.0, 0.2, -0.1, 0.3, 0.1, 0.0])
    x[2:6] /= np.linalg.norm(x[2:6])
    J_safe = safe.rhs_jacobian(0.0, x, [0.4])
    J_unsafe = unsafe.rhs_jacobian(0.0, x, [0.4])
    assert np.max(np.abs(J_safe - J_unsafe)) < 1e-6 * np.max(np.abs(J_safe))


def test_generalized_coordinate_forms_are_batched():
    """RollingBallSystem and RollingDiskSystem evaluate stacks in one call; the stack equals the loop to 1e-13."""
    rng = np.random.default_rng(5)
    ball = RollingBall(paper_ball_parameters())
    sys_ = ball.to_constrained_system()
    assert sys_.batched
    x = _random_ball_states(ball, rng)
    X, XD = (np.array(a) for a in zip(*(sys_.from_ode_state(xi) for xi in x)))
    u = rng.normal(size=(N_SAMPLES, 3))
    xdd, lam = sys_.accelerations(X, XD, u)
    assert xdd.shape == (N_SAMPLES, 8) and lam.shape == (N_SAMPLES, 2)
    for k in range(N_SAMPLES):
        a, b = sys_.accelerations(X[k], XD[k], u[k])
        assert np.max(np.abs(a - xdd[k])) < 1e-13 * max(1.0, np.max(np.abs(a)))
    assert sys_.mass_matrix(X).shape == (N_SAMPLES, 8, 8)
    assert sys_.constraint_jacobian(X[:2].reshape(2, 1, 8)).shape == (2, 1, 2, 8)
    assert sys_.holonomic(X).shape == (N_SAMPLES, 0)


def test_simulate_runs_a_batch_of_ball_systems_in_one_call():
    """ballctl.simulate on a stack of three initial states of RollingBallSystem equals three single runs
    (same equations, one step-size sequence: agreement to the 1e-10 tolerance scale), and follows the
    Euler-Poincare ODE of RollingBall (an independent formulation) to 1e-7."""
    import ballctl
    from ballctl.plants.paper import paper_ball_initial_state

    ball = RollingBall(paper_ball_parameters())
    system = ball.to_constrained_system()
    x_ode = np.tile(paper_ball_initial_state(), (3, 1))
    x_ode[:, 3:6] = [[0.3, 0.0, 0.0], [0.0, -0.2, 0.1], [0.1, 0.1, 0.1]]    # rail rates
    starts = [system.from_ode_state(x) for x in x_ode]
    X0 = np.array([s[0] for s in starts])
    XD0 = np.array([s[1] for s in starts])
    u = np.array([0.2, -0.1, 0.05])
    t_eval = np.linspace(0.0, 0.5, 6)
    batch = ballctl.simulate(system, X0, XD0, u, (0.0, 0.5), t_eval=t_eval,
                             options=ballctl.SimulationOptions(rtol=1e-10, atol=1e-12))
    assert batch.x.shape == (3, 6, 8)
    for b in range(3):
        one = ballctl.simulate(system, X0[b], XD0[b], u, (0.0, 0.5), t_eval=t_eval,
                               options=ballctl.SimulationOptions(rtol=1e-10, atol=1e-12))
        assert np.max(np.abs(one.x - batch.x[b])) < 1e-8
        ode = ball.simulate(x_ode[b], (0.0, 0.5), lambda t: u, t_eval=t_eval)
        coords = np.array([system.from_ode_state(x)[0] for x in ode.x])
        assert np.max(np.abs(coords - batch.x[b])) < 1e-7


# ---------------------------------------------------------------------------------------------
# batched simulate of the ODE plants
# ---------------------------------------------------------------------------------------------

def _paper_ball_batch():
    from ballctl.plants.paper import paper_ball_initial_state

    X0 = np.tile(paper_ball_initial_state(), (3, 1))
    X0[:, 3:6] = [[0.3, 0.0, 0.0], [0.0, -0.2, 0.1], [0.1, 0.1, 0.1]]    # rail rates
    return X0


@pytest.mark.parametrize("method", ["DOP853", "Radau"])
def test_ball_simulate_runs_a_stack_of_initial_states(method):
    """A stack of 3 runs (one input per run) equals the 3 single runs to the tolerance scale (1e-8 at
    rtol = atol = 1e-10); Radau gets the block-diagonal complex-step Jacobian of the stack."""
    ball = RollingBall(paper_ball_parameters())
    X0 = _paper_ball_batch()
    gains = np.array([[1.0], [-0.5], [0.2]])
    t_eval = np.linspace(0.0, 0.5, 6)
    batch = ball.simulate(X0, (0.0, 0.5), lambda t: gains * np.array([1.0, 0.5, -0.3]),
                          t_eval=t_eval, breakpoints=(), options=IntegrationOptions(method=method))
    assert batch.x.shape == (3, 6, 15)
    for b in range(3):
        one = ball.simulate(X0[b], (0.0, 0.5), lambda t, b=b: gains[b] * np.array([1.0, 0.5, -0.3]), t_eval=t_eval,
                            breakpoints=(), options=IntegrationOptions(method=method))
        assert np.max(np.abs(one.x - batch.x[b])) < 1e-8


def test_disk_simulate_batch_with_one_input_for_all_runs_and_its_errors():
    from ballctl.plants.paper import paper_disk_initial_state, paper_disk_rail_accelerations

    disk = RollingDisk(paper_disk_parameters())
    X0 = np.tile(paper_disk_initial_state(), (2, 1))
    X0[1, 8] = 0.3
    kinks = (0.1, 0.2)
    batch = disk.simulate(X0, (0.0, 1.0), paper_disk_rail_accelerations, t_eval=[0.5, 1.0], breakpoints=kinks)
    one = disk.simulate(X0[1], (0.0, 1.0), paper_disk_rail_accelerations, t_eval=[0.5, 1.0], breakpoints=kinks)
    assert batch.x.shape == (2, 2, 10)
    assert np.max(np.abs(one.x - batch.x[1])) < 1e-10       # default tolerance 1e-12
    import ballctl
    with pytest.raises(ballctl.errors.ShapeError, match=r"rail_input must return shape \(4,\) or \(2, 4\)"):
        disk.simulate(X0, (0.0, 1.0), lambda t: np.ones((3, 4)))
    with pytest.raises(ballctl.errors.NonFiniteStateError, match="rail_input"):
        disk.simulate(X0, (0.0, 1.0), lambda t: np.full(4, np.nan))


def test_a_batch_run_that_drives_a_mass_out_of_the_ball_names_the_run():
    import ballctl

    params = RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[0.5, 0.6, 0.7],
                                   point_masses=(PointMass(mass_kg=0.3, rail=SegmentRail(start_m=[-0.5, 0, 0],
                                                                                          end_m=[0.5, 0, 0])),))
    ball = RollingBall(params)
    x0 = np.zeros(11)
    x0[0] = 0.5
    x0[2] = 1.0
    X0 = np.stack([x0, x0])
    with pytest.raises(ballctl.ParameterError, match="run 1 of the batch"):
        ball.simulate(X0, (0.0, 5.0), lambda t: np.array([[0.0], [2.0]]))
