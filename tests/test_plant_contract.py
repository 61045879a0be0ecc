"""The plant contract (ballctl.plants.base) over every registered plant.

Adding a plant to ``ballctl.plants.PLANTS`` adds it to every test here.
"""

import inspect

import numpy as np
import pytest
from numba import njit

import ballctl
from ballctl import plants
from ballctl.plants import PLANTS, check_plant, random_consistent_state
from ballctl.plants.base import is_ode_plant
from ballctl.plants.internal_masses import InternalMassesPlant
from ballctl.plants.kernels import native
from ballctl.plants.kernels.native import call
from ballctl.system import ConstrainedSystem

NAMES = sorted(PLANTS)
CONSTRAINED = [n for n in NAMES if isinstance(PLANTS[n](), ConstrainedSystem)]
ODE = [n for n in NAMES if is_ode_plant(PLANTS[n]())]


def test_registry_holds_every_plant_class():
    """Every concrete plant class of ballctl.plants is built by some registry entry."""
    built = {type(PLANTS[n]()) for n in NAMES}
    classes = {obj for mod in (plants.ball_plate, plants.ball_plate_moving, plants.rolling_ball, plants.rolling_disk)
               for _, obj in inspect.getmembers(mod, inspect.isclass)
               if obj.__module__ == mod.__name__ and not obj.__name__.startswith("_")
               and (issubclass(obj, ConstrainedSystem) or issubclass(obj, InternalMassesPlant))}
    assert classes, "no plant classes found"
    assert classes <= built, f"plants missing from PLANTS: {sorted(c.__name__ for c in classes - built)}"
    assert set(CONSTRAINED) | set(ODE) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_plant_honours_the_contract(name):
    """C1-C6 / O1-O5 at 12 random consistent states: shapes, symmetry, batch = loop to 1e-12,
    complex step = central differences to 1e-6, eq. (1) to 1e-9, charts, the ODE = its constrained form."""
    assert check_plant(PLANTS[name](), n_states=12, seed=7) == []


def _derivative(y, h, step):
    """Fourth-order central difference with spacing ``step`` samples of ``h`` s, at samples 4 .. K-5."""
    K = y.shape[0]
    i = np.arange(4, K - 4)
    s = step
    return (8.0 * (y[i + s] - y[i - s]) - (y[i + 2 * s] - y[i - 2 * s])) / (12.0 * s * h)


@pytest.mark.parametrize("name", CONSTRAINED)
def test_short_simulation_solves_the_dae(name):
    """A 0.1 s run satisfies eq. (1) with accelerations taken from the trajectory itself.

    ``xd`` and ``xdd`` come from fourth-order central differences of the
    output at spacing h = 1 ms; their truncation error is bounded by the
    difference to the same stencil at 2h (which is 15 times the error of
    the h stencil for a smooth motion). A trajectory that does not solve the
    DAE keeps its residual as h shrinks; one that does shows only that bound.
    The constraints hold to the integrator's tolerance.
    """
    plant = PLANTS[name]()
    x0, xd0, u = random_consistent_state(plant, np.random.default_rng(3), scale=0.2)
    h = 1e-3
    t = np.arange(0.0, 0.1 + h / 2, h)
    run = ballctl.simulate(plant, x0, xd0, u, (0.0, t[-1]), t_eval=t,
                           options=ballctl.SimulationOptions(rtol=1e-12, atol=1e-12, stabilization=None))
    x, xd = run.x[4:-4], run.xd[4:-4]
    v1, v2 = _derivative(run.x, h, 1), _derivative(run.x, h, 2)
    assert np.all(np.abs(v1 - xd) <= 1e-9 * max(1.0, np.max(np.abs(xd))) + np.abs(v1 - v2))
    xdd, xdd2 = _derivative(run.xd, h, 1), _derivative(run.xd, h, 2)
    for k in range(0, len(x), 10):
        M = plant.mass_matrix(x[k], u)
        D = plant.constraint_jacobian(x[k])
        Q = plant.forces(x[k], xd[k], u)
        lam = np.linalg.lstsq(D.T, Q - M @ xdd[k], rcond=None)[0]
        res = plant.dynamics_residual(x[k], xd[k], xdd[k], lam, u)
        bound = 1e-8 * max(1.0, np.max(np.abs(Q))) + np.max(np.abs(M @ (xdd[k] - xdd2[k])))
        assert np.max(np.abs(res)) <= bound
    assert run.max_constraint_residual < 1e-9


@pytest.mark.parametrize("name", CONSTRAINED)
def test_constraint_drift_is_bounded(name):
    """Without stabilization the index-1 form drifts only at the integration tolerance over 0.3 s;
    Baumgarte stabilization (10, 10) 1/s keeps it there too."""
    plant = PLANTS[name]()
    x0, xd0, u = random_consistent_state(plant, np.random.default_rng(11), scale=0.2)
    for stab in (None, (10.0, 10.0)):
        run = ballctl.simulate(plant, x0, xd0, u, (0.0, 0.3), t_eval=np.linspace(0.0, 0.3, 7),
                               options=ballctl.SimulationOptions(rtol=1e-10, atol=1e-12, stabilization=stab))
        assert run.max_constraint_residual < 1e-8, (stab, run.max_constraint_residual)


@pytest.mark.parametrize("name", ODE)
def test_ode_plant_simulation_matches_its_constrained_form(name):
    """The ODE plant and its generalized-coordinate form integrate to the same motion (0.2 s, 1e-7)."""
    plant = PLANTS[name]()
    system = plant.to_constrained_system()
    x0, xd0, u = random_consistent_state(system, np.random.default_rng(5), scale=0.3)
    t = np.linspace(0.0, 0.2, 5)
    ode = plant.simulate(system.to_ode_state(x0, xd0), (0.0, 0.2), lambda tt: u, t_eval=t,
                         options=ballctl.IntegrationOptions(rtol=1e-11, atol=1e-11))
    dae = ballctl.simulate(system, x0, xd0, u, (0.0, 0.2), t_eval=t,
                           options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-12))
    mapped = np.array([system.to_ode_state(x, xd) for x, xd in zip(dae.x, dae.xd)])
    q = slice(2 * plant.n_masses, 2 * plant.n_masses + 4) if plant.n_states == 2 * plant.n_masses + 9 else None
    if q is not None:   # a quaternion and its negative are the same rotation
        sign = np.sign(np.sum(mapped[:, q] * ode.x[:, q], axis=1))
        mapped[:, q] *= sign[:, None]
    assert np.max(np.abs(mapped - ode.x)) < 1e-7


@pytest.mark.parametrize("name", NAMES)
def test_contact_forces_are_batched_and_complex_step_safe(name):
    """Every plant (bar the generalized-coordinate forms) has contact_forces -> (normal (...), tangential (..., k)):
    stacked = looped to 1e-12, and a complex state gives the complex-step derivative (= central differences with
    h = 1e-6 to their O(h^2) error, 1e-5 relative)."""
    plant = PLANTS[name]()
    if isinstance(plant, ConstrainedSystem) and not hasattr(plant, "contact_forces"):
        pytest.skip("generalized-coordinate form of an ODE plant: its contact forces are the ODE plant's")
    rng = np.random.default_rng(2)
    if isinstance(plant, ConstrainedSystem):
        states = [random_consistent_state(plant, rng, scale=0.2) for _ in range(3)]
        X, XD, U = (np.array([s[i] for s in states]) for i in range(3))
        call = lambda x, u, k=slice(None): plant.contact_forces(x, XD[k], U[k] if u is None else u)  # noqa: E731
        k_tangential = 2
    else:
        system = plant.to_constrained_system()
        states = [random_consistent_state(system, rng, scale=0.2) for _ in range(3)]
        X = np.array([system.to_ode_state(x, xd) for x, xd, _ in states])
        U = np.array([u for _, _, u in states])
        call = lambda x, u, k=slice(None): plant.contact_forces(0.3, x, U[k] if u is None else u)  # noqa: E731
        k_tangential = 2 if isinstance(plant, plants.RollingBall) else 1   # the disk rolls along e1 only
    normal, tangential = call(X, None)
    assert normal.shape == (3,) and tangential.shape == (3, k_tangential)
    for k in range(3):
        n_k, t_k = call(X[k], None, k)
        assert n_k.shape == () and np.allclose(n_k, normal[k], rtol=1e-12) and np.allclose(t_k, tangential[k],
                                                                                              rtol=1e-12, atol=1e-15)
    v = rng.standard_normal(X.shape[1])
    cs = call(X[0] + 1e-30j * v, None, 0)
    assert np.iscomplexobj(cs[0])
    h = 1e-6
    fd = [(a - b) / (2 * h) for a, b in zip(call(X[0] + h * v, None, 0), call(X[0] - h * v, None, 0))]
    for c, f in zip(cs, fd):
        assert np.allclose(np.imag(c) / 1e-30, f, rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------- the check can fail
class _NotComplexSafe(plants.BallPlate):
    name = "broken"

    def forces(self, x, xd, u):
        return np.real(super().forces(x, xd, u))


class _WrongBatch(plants.BallPlate):
    name = "broken"

    def mass_matrix(self, x, u=None):
        M = super().mass_matrix(x, u)
        return M[..., :1, :, :] + 0.0 * M if np.ndim(x) == 2 else M


class _BadRechart(plants.BallPlate):
    name = "broken"

    def rechart(self, x, xd):
        x_new, xd_new = super().rechart(x, xd)
        return x_new, 1.01 * xd_new


class _WrongODE(plants.RollingDisk):
    def rhs(self, t, x, u):
        f = super().rhs(t, x, u)
        return f * np.concatenate([np.ones(f.shape[-1] - 1), [1.001]])


@pytest.mark.parametrize("broken, message", [
    (_NotComplexSafe(), "not complex-step safe"),
    (_WrongBatch(), "batched mass_matrix differs"),
    (_BadRechart(), "rechart changed the kinetic energy"),
    (_WrongODE(plants.paper_disk_parameters()), "rhs differs from the constrained form"),
])
def test_check_plant_reports_broken_plants(broken, message):
    problems = check_plant(broken, n_states=3)
    assert any(message in p for p in problems), problems


LOOP_PLANTS = [n for n in CONSTRAINED if ballctl.simulation.engine.kernel_code(PLANTS[n]()) >= 0]


def test_every_loop_kernel_module_serves_a_registered_plant():
    """LOOP_KERNELS lists no module that no plant of the registry uses (and misses none that one does)."""
    used = {PLANTS[n]().kernels for n in LOOP_PLANTS}
    assert used == set(ballctl.plants.kernels.LOOP_KERNELS)


@pytest.mark.parametrize("name", LOOP_PLANTS)
def test_the_compiled_loop_kernels_are_the_plants_equations(name):
    """The kernels the compiled loop integrates equal the plant's own accelerations and constraint
    Jacobian at 8 random consistent states and inputs (to 1e-12 relative: the same formulas, in the same
    order, up to the plant wrapper's reshaping), with and without Baumgarte stabilization; and the plant
    declares the point the loop tracks among its coordinates."""
    plant = PLANTS[name]()
    assert plant.tracked_coordinates and set(plant.tracked_coordinates) <= set(plant.coordinate_names)
    kernels = plant.kernels
    p = np.asarray(plant.kernel_parameters, dtype=float)
    rng = np.random.default_rng(3)
    n = plant.n_coordinates
    for _ in range(8):
        x, xd, u = random_consistent_state(plant, rng)
        for a, b in ((0.0, 0.0), (10.0, 10.0)):
            xdd, lam = np.empty(n), np.empty(plant.n_constraints)
            kernels.accelerations(x, xd, u, p, a, b, xdd, lam)
            want, want_lam = plant.accelerations(x, xd, u, stabilization=(a, b) if a else None)
            np.testing.assert_allclose(xdd, want, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(lam, want_lam, rtol=1e-12, atol=1e-12)
        D = np.empty((plant.n_constraints, n))
        kernels.constraint_jacobian(x, p, D)
        np.testing.assert_allclose(D, plant.constraint_jacobian(x), rtol=1e-12, atol=1e-14)


@njit
def _through_entry_points(plant, x, xd, u, p, a, b, xdd, lam, D, y):
    call(plant.accelerations, x, xd, u, p, a, b, xdd, lam, x.shape[0], u.shape[0], p.shape[0], lam.shape[0])
    call(plant.constraint_jacobian, x, p, D, x.shape[0], p.shape[0], D.shape[0])
    call(plant.keep_chart, y, x.shape[0])


@pytest.mark.parametrize("name", LOOP_PLANTS)
def test_the_compiled_loop_calls_the_kernels_themselves_through_their_entry_points(name):
    """The C entry points the compiled loop calls by address (``ballctl.plants.kernels.native``) give the
    kernels' own accelerations, multipliers, constraint Jacobian and re-chart bit for bit (the same compiled
    functions, reached through a pointer), at 4 random consistent states, with and without stabilization."""
    plant = PLANTS[name]()
    kernels = plant.kernels
    entry = native.entry_points(kernels)
    assert entry == native.entry_points(kernels)  # compiled once per process
    p = np.asarray(plant.kernel_parameters, dtype=float).copy()
    n, m = plant.n_coordinates, plant.n_constraints
    rng = np.random.default_rng(11)
    for _ in range(4):
        x, xd, u = random_consistent_state(plant, rng)
        x[3] = np.deg2rad(80.0)  # past the re-chart lean
        for a, b in ((0.0, 0.0), (10.0, 10.0)):
            xdd, lam, D = np.empty(n), np.empty(m), np.empty((m, n))
            y = np.concatenate([x, xd])
            _through_entry_points(entry, x, xd, u, p, a, b, xdd, lam, D, y)
            want_xdd, want_lam, want_D = np.empty(n), np.empty(m), np.empty((m, n))
            kernels.accelerations(x, xd, u, p, a, b, want_xdd, want_lam)
            kernels.constraint_jacobian(x, p, want_D)
            want_y = np.concatenate([x, xd])
            assert kernels.keep_chart(want_y, n)
            np.testing.assert_array_equal(xdd, want_xdd)
            np.testing.assert_array_equal(lam, want_lam)
            np.testing.assert_array_equal(D, want_D)
            np.testing.assert_array_equal(y, want_y)


@pytest.mark.parametrize("name", LOOP_PLANTS)
def test_a_python_driven_rk4_segment_is_the_python_rk4_on_the_plants_own_accelerations(name):
    """``NonlinearStepper`` integrates an RK4 segment of a loop plant in one compiled call
    (``engine.hold_rk4``, the compiled loop's integrator); it equals :func:`ballctl.simulate.rk4` on the
    plant's Python ``accelerations`` to 1e-12 relative (the same arithmetic, in the same order: only the
    plant wrapper's reshaping lies between them), at 3 random consistent states, with and without
    stabilization; a segment that stops being finite raises the Python integrator's error, which names
    the substep's time."""
    from ballctl.simulation.component import NonlinearStepper
    from ballctl.simulate import rk4

    plant = PLANTS[name]()
    rng = np.random.default_rng(17)
    for _ in range(3):
        x, xd, u = random_consistent_state(plant, rng)
        y = np.concatenate([x, xd])
        for stabilization in ((0.0, 0.0), (10.0, 10.0)):
            stepper = NonlinearStepper(plant, "rk4", 1e-9, 1e-12, 3, stabilization)
            assert stepper._compiled is not None
            got = stepper.segment(y, 0.1, 0.13, u)
            want = rk4(stepper._rhs(u), y, 0.1, 0.03, 3)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    # the one specialization the closed loop's second process compiles ahead (engine.compile_in_background)
    assert ballctl.simulation.engine.hold_rk4.signatures == [ballctl.simulation.engine.hold_rk4_types()]
    y_bad = np.concatenate([x, xd * 1e200])
    with pytest.raises(ballctl.errors.NonFiniteStateError, match="t = "):
        NonlinearStepper(plant, "rk4", 1e-9, 1e-12, 3, (0.0, 0.0)).segment(y_bad, 0.1, 0.13, u)


def test_the_call_by_address_refuses_what_its_c_signature_cannot_take():
    """``native.call`` passes C-contiguous float64 arrays by pointer and numbers by value; anything else is
    refused when the caller compiles, not read as a wrong pointer at run time."""
    from numba.core.errors import TypingError

    @njit
    def strided(address, a):
        call(address, a[::2])

    @njit
    def integers(address, a):
        call(address, a)

    with pytest.raises(TypingError, match="C-contiguous float64"):
        strided(0, np.zeros(4))
    with pytest.raises(TypingError, match="C-contiguous float64"):
        integers(0, np.zeros(4, dtype=np.int64))


@pytest.mark.parametrize("name", LOOP_PLANTS)
def test_the_loop_kernels_re_chart_the_ball_without_changing_its_motion(name):
    """``keep_chart`` (the closed loops' re-chart of the truth ball) leaves a lean of 30 deg alone and
    re-charts one of 80 deg to lean = roll = 0 with the same physics: the same contact point, the rolling
    constraints still met, the same angular velocity of the ball, and the same contact and plate
    accelerations and constraint forces (to 1e-9 relative: the new chart's equations are other formulas of
    the same motion, so only rounding differs), at 6 random consistent states and inputs."""
    plant = PLANTS[name]()
    kernels = plant.kernels
    n = plant.n_coordinates
    chart = kernels.CHART_COORDINATES
    rng = np.random.default_rng(5)
    for _ in range(6):
        x, xd, u = random_consistent_state(plant, rng)
        y = np.concatenate([x, xd])
        y[3] = np.deg2rad(30.0)
        y_kept = y.copy()
        assert not kernels.keep_chart(y_kept, n)
        np.testing.assert_array_equal(y_kept, y)
        x[3] = np.deg2rad(80.0)
        D = plant.constraint_jacobian(x)
        np.testing.assert_allclose(D[:, :2], np.eye(2), atol=1e-15)
        xd[:2] = -(D[:, 2:] @ xd[2:])  # rolling at the new lean
        y = np.concatenate([x, xd])
        assert kernels.keep_chart(y, n)
        x2, xd2 = y[:n], y[n:]
        assert x2[chart[1]] == 0.0 and x2[chart[2]] == 0.0
        np.testing.assert_array_equal(np.delete(x2, chart[1:]), np.delete(x, chart[1:]))
        np.testing.assert_allclose(plant.constraint_jacobian(x2) @ xd2, 0.0, atol=1e-12)
        omega = getattr(plant, "angular_velocity", None) or plant.ball_angular_velocity
        np.testing.assert_allclose(omega(x2, xd2), omega(x, xd), rtol=1e-12, atol=1e-12)
        xdd, lam = plant.accelerations(x, xd, u)
        xdd2, lam2 = plant.accelerations(x2, xd2, u)
        keep = [i for i in range(n) if i not in chart]
        np.testing.assert_allclose(xdd2[keep], xdd[keep], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(lam2, lam, rtol=1e-9, atol=1e-9)
