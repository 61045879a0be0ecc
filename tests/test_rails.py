"""Rails: geometry, derivatives, validation and the basis convention of eq. (7.8)."""

import itertools

import numpy as np
import pytest

from ballctl._derivatives import directional_derivative
from ballctl.plants.paper import paper_ball_initial_state, paper_ball_parameters
from ballctl.plants.rolling_ball import PointMass, RollingBall, RollingBallParameters
from ballctl.plants.kernels.rails import rail_curve, rail_curve_casadi
from ballctl.plants.rails import (CallableRail, CircleRail, EllipseRail, FigureEightRail, SegmentRail, frisvad_basis,
                                  paper_rail_basis, plane_rotation, spherical_to_cartesian)

RNG = np.random.default_rng(7)


def _random_rotation():
    q, _ = np.linalg.qr(RNG.normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def _rails():
    R = _random_rotation()
    return [
        CircleRail(radius_m=0.7, rotation=R, center_m=[0.05, -0.02, 0.1]),
        CircleRail.from_spherical(0.85, np.pi / 4, np.pi / 4),
        EllipseRail(semi_axis_first_m=0.6, semi_axis_third_m=0.3, rotation=R),
        FigureEightRail(half_width_m=0.5, half_height_m=0.4, rotation=R),
        SegmentRail(start_m=[0.1, -0.3, 0.2], end_m=[-0.2, 0.4, -0.1]),
        CallableRail(function=lambda th: (np.stack([0.3 * np.cos(th), 0.2 * np.sin(th), 0.1 * np.cos(2 * th)], -1),
                                          np.stack([-0.3 * np.sin(th), 0.2 * np.cos(th), -0.2 * np.sin(2 * th)], -1),
                                          np.stack([-0.3 * np.cos(th), -0.2 * np.sin(th), -0.4 * np.cos(2 * th)], -1))),
    ]


@pytest.mark.parametrize("rail", _rails(), ids=lambda r: type(r).__name__)
def test_rail_derivatives_match_complex_step(rail):
    # The analytic zeta' and zeta'' must equal the complex-step derivatives of zeta and zeta'
    # (exact to rounding: tolerance 1e-12 m on O(1) quantities).
    for theta in RNG.uniform(*rail.parameter_range, size=5):
        zeta, dzeta, ddzeta = rail.evaluate(theta)
        d1, used = directional_derivative(lambda th: rail.evaluate(th[0])[0], np.array([theta]), np.array([1.0]))
        d2, _ = directional_derivative(lambda th: rail.evaluate(th[0])[1], np.array([theta]), np.array([1.0]))
        assert used == "complex-step"
        np.testing.assert_allclose(d1, dzeta, atol=1e-12)
        np.testing.assert_allclose(d2, ddzeta, atol=1e-12)


def test_rails_are_vectorised():
    for rail in _rails():
        theta = np.linspace(*rail.parameter_range, 12).reshape(3, 4)
        out = rail.evaluate(theta)
        assert all(o.shape == (3, 4, 3) for o in out)
        np.testing.assert_allclose(out[0][1, 2], rail.evaluate(theta[1, 2])[0], atol=1e-15)


def test_max_distance():
    assert CircleRail(radius_m=0.4).max_distance_m() == 0.4
    assert CircleRail(radius_m=0.4, center_m=[0.1, 0, 0]).max_distance_m() == pytest.approx(0.5, abs=1e-6)
    assert SegmentRail(start_m=[0, 0, -0.5], end_m=[0, 0, 0.7]).max_distance_m() == pytest.approx(0.7)
    assert FigureEightRail(half_width_m=0.5, half_height_m=0.4).max_distance_m() == pytest.approx(0.5, abs=1e-6)


def test_frisvad_basis_is_right_handed_orthonormal():
    normals = [RNG.normal(size=3) for _ in range(20)] + [np.array([0, 0, -1.0]), np.array([0, 0, 1.0])]
    for n in normals:
        n = n / np.linalg.norm(n)
        b1, b2 = frisvad_basis(n)
        F = np.column_stack([b1, b2, n])
        np.testing.assert_allclose(F.T @ F, np.eye(3), atol=1e-6 if n[2] < -0.9999999 else 1e-12)
        assert np.linalg.det(F) == pytest.approx(1.0, abs=1e-6)
        B = paper_rail_basis(n)
        np.testing.assert_allclose(B.T @ B, np.eye(3), atol=1e-12)
        assert np.linalg.det(B) == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(B[:, 0], n, atol=0)  # theta = 0 is the point rho * n


def test_spherical_to_cartesian_eq_7_9():
    np.testing.assert_allclose(spherical_to_cartesian(np.pi / 4, np.pi / 4, 2.0),
                               [1.0, 1.0, np.sqrt(2.0)], atol=1e-15)


def _horizontal_and_vertical_cm(columns):
    """Total CM of the section-7 ball at theta_a with basis columns built by ``columns(n, b1, b2)``."""
    p = paper_ball_parameters()
    theta = paper_ball_initial_state()[:3]
    total = p.mass_kg * np.asarray(p.cm_offset_m)
    for (az, el), radius, th in zip([(0, 0), (np.pi / 2, 0), (np.pi / 4, np.pi / 4)], (0.95, 0.9, 0.85), theta):
        n = spherical_to_cartesian(az, el)
        b1, b2 = frisvad_basis(n)
        B = columns(n, b1, b2)
        total = total + radius * B @ np.array([np.cos(th), 0.0, np.sin(th)])
    cm = total / p.total_mass_kg
    return np.hypot(cm[0], cm[1]), cm[2]


def test_paper_initial_condition_pins_the_basis_column_order():
    # Eq. (7.12): theta_a = (0, 2.0369, 0.7044) puts the total CM on the vertical through the GC, above it.
    # theta_a has 4 decimals: |d theta| <= 5e-5 rad on three rails of radius <= 0.95 m moves the CM by
    # <= 3 * 0.95 * 5e-5 / M(=4) = 3.6e-5 m, hence the 4e-5 m tolerance.
    horizontal, vertical = _horizontal_and_vertical_cm(lambda n, b1, b2: np.column_stack([n, b2, -b1]))
    assert horizontal < 4e-5
    assert vertical > 0.1  # "above the GC"
    ball = RollingBall(paper_ball_parameters())
    cm = ball.total_cm_body(paper_ball_initial_state())
    assert np.hypot(cm[0], cm[1]) < 4e-5 and cm[2] > 0.1
    # Every plain column order of Frisvad's (b1, b2, n) misses the vertical by centimetres or more.
    for perm in itertools.permutations(range(3)):
        h, _ = _horizontal_and_vertical_cm(lambda n, b1, b2: np.column_stack([(b1, b2, n)[k] for k in perm]))
        assert h > 1e-2, perm
    # The mirror [-n, b2, b1] also centres the CM horizontally, but below the GC.
    h, v = _horizontal_and_vertical_cm(lambda n, b1, b2: np.column_stack([-n, b2, b1]))
    assert h < 4e-5 and v < 0


def test_bad_rails_raise():
    with pytest.raises(ValueError, match="radius_m must be > 0"):
        CircleRail(radius_m=-1.0)
    with pytest.raises(ValueError, match="rotation must be a rotation matrix"):
        CircleRail(radius_m=0.5, rotation=np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="end_m must differ"):
        SegmentRail(start_m=[0, 0, 0], end_m=[0, 0, 0])
    with pytest.raises(ValueError, match="normal must be a unit vector"):
        frisvad_basis([1.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="shape theta.shape"):
        CallableRail(function=lambda th: (th, th, th))
    with pytest.raises(ValueError, match="parameter_range"):
        CallableRail(function=lambda th: (th, th, th), parameter_range=(1.0, 0.0))


@pytest.mark.parametrize("rail", [
    CircleRail(radius_m=0.9, center_m=[0.0, 0.0, 0.2]),         # reaches 1.1 m
    SegmentRail(start_m=[0.0, 0.0, -0.5], end_m=[0.0, 0.0, 1.0]),  # the far end touches the shell
    FigureEightRail(half_width_m=1.2, half_height_m=0.2),
], ids=["off-centre circle", "segment", "figure eight"])
def test_rail_leaving_the_ball_is_rejected(rail):
    with pytest.raises(ValueError, match=r"rail leaves the ball: max \|zeta\|.*must be < radius_m = 1.0"):
        RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[1, 1, 1],
                              point_masses=(PointMass(mass_kg=1.0, rail=rail),))


def _random_closed_form_rails(rng):
    """One rail of each kernel kind with random shape, orientation and centre (sizes below 1 m)."""
    R = plane_rotation(rng.normal(size=3))
    c = rng.uniform(-0.2, 0.2, size=3)
    a, b = rng.uniform(0.1, 0.7, size=2)
    return [CircleRail(radius_m=a, rotation=R, center_m=c),
            EllipseRail(semi_axis_first_m=a, semi_axis_third_m=b, rotation=R, center_m=c),
            FigureEightRail(half_width_m=a, half_height_m=b, rotation=R, center_m=c),
            SegmentRail(start_m=c, end_m=rng.uniform(-0.5, 0.5, size=3))]


def test_symbolic_rail_geometry_equals_the_compiled_geometry():
    """The planners' CasADi rail (``rail_curve_casadi``) equals the numeric one (``rail_curve``) to 1e-12 m.

    Both evaluate the same formulas (``plane_curve_with``, ``body_component``) in double precision;
    CasADi's SX graph may fold constants and reassociate products, so they differ by rounding only
    (~1e-16 m on rails below 1 m), while a wrong term or sign would show at 1e-2 m or more. 1e-12 m
    leaves four orders of magnitude for the rounding and none for a formula error.
    """
    ca = pytest.importorskip("casadi")
    rng = np.random.default_rng(11)
    th = ca.SX.sym("theta")
    for _ in range(5):
        for rail in _random_closed_form_rails(rng):
            row = rail.kernel_row()
            f = ca.Function("rail", [th], list(rail_curve_casadi(th, row)))
            for theta in rng.uniform(-7.0, 7.0, size=4):
                for got, ref in zip(f(theta), rail_curve(theta, row)):
                    assert np.max(np.abs(got.full().ravel() - ref)) < 1e-12, type(rail).__name__


def test_closed_form_rails_evaluate_through_the_compiled_geometry():
    """``evaluate`` of a closed-form rail is its kernel row's geometry: the same numbers, bit for bit."""
    rng = np.random.default_rng(5)
    theta = rng.uniform(-7.0, 7.0, size=(2, 3))
    for rail in _random_closed_form_rails(rng):
        for got, ref in zip(rail.evaluate(theta), rail_curve(theta, rail.kernel_row())):
            assert got.shape == (2, 3, 3)
            np.testing.assert_array_equal(got, ref)


def test_plane_rotation_puts_the_normal_second():
    for normal in ([0.0, 0.0, 2.0], [1.0, -2.0, 0.5], [0.0, 0.0, -1.0]):
        R = plane_rotation(normal)
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-6)
        assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-6)
        np.testing.assert_allclose(R[:, 1], np.asarray(normal) / np.linalg.norm(normal), atol=0)
