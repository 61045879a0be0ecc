"""A ball or disk described by a mapping (the [plant] table): presets, user plants, round trip, bad input."""

import re
import tomllib

import numpy as np
import pytest

from ballctl._errors import ConfigError, ParameterError, ParameterTypeError
from ballctl.plants import description
from ballctl.plants.description import PLANT_KEYS, plant_to_mapping, rolling_plant_from_mapping
from ballctl.plants.internal_masses import PointMass
from ballctl.plants.paper import (paper_ball_initial_state, paper_ball_parameters, paper_disk_initial_state,
                                  paper_disk_parameters)
from ballctl.plants.rails import CallableRail, CircleRail, EllipseRail, FigureEightRail, SegmentRail
from ballctl.plants.rolling_ball import RollingBall, RollingBallParameters
from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters


def assert_same_plant(a, b, *, rotation_atol=0.0):
    """Same class, input mode, parameters and rails (rotations to ``rotation_atol``, everything else exactly)."""
    assert type(a) is type(b) and a.inputs == b.inputs
    pa, pb = a.params, b.params
    for name in ("mass_kg", "radius_m", "gravity_mps2"):
        assert getattr(pa, name) == getattr(pb, name), name
    inertia = "principal_inertia_kgm2" if isinstance(a, RollingBall) else "inertia_kgm2"
    np.testing.assert_array_equal(getattr(pa, inertia), getattr(pb, inertia))
    np.testing.assert_array_equal(pa.cm_offset_m, pb.cm_offset_m)
    assert pa.external_force is None and pb.external_force is None
    assert pa.n_masses == pb.n_masses
    for ma, mb in zip(pa.point_masses, pb.point_masses):
        assert ma.mass_kg == mb.mass_kg and type(ma.rail) is type(mb.rail)
        assert ma.rail.parameter_range == mb.rail.parameter_range
        ra, rb = ma.rail.kernel_row(), mb.rail.kernel_row()
        np.testing.assert_array_equal(ra[[0, 1, 2, 12, 13, 14]], rb[[0, 1, 2, 12, 13, 14]])  # kind, sizes, centre
        np.testing.assert_allclose(ra[3:12], rb[3:12], rtol=0, atol=rotation_atol)          # rotation
    np.testing.assert_array_equal(a.kernel_parameters, b.kernel_parameters)


TWO_MASS_BALL = {
    "kind": "ball", "radius_m": 0.15, "mass_kg": 0.8, "inertia_kgm2": [0.006, 0.0065, 0.007],
    "gravity_mps2": 9.81, "cm_offset_m": [0.0, 0.0, -0.01],
    "masses": [
        {"mass_kg": 0.3, "rail": "circle", "radius_m": 0.12, "normal": [0, 0, 1], "start_direction": [1, 0, 0],
         "center_m": [0, 0, 0], "theta0_rad": 0.4, "theta_dot0_rad_s": 0.2},
        {"mass_kg": 0.3, "rail": "circle", "radius_m": 0.10, "normal": [1, 0, 0], "theta0_rad": -1.1},
    ],
    "initial": {"rotation_vector_rad": [0.1, -0.2, 0.3], "angular_velocity_rad_s": [0.0, 0.5, 0.0],
                "contact_m": [0.2, -0.1]},
}


def test_the_paper_ball_preset_is_the_papers_ball():
    plant, x0 = rolling_plant_from_mapping({"preset": "paper_ball"})
    assert_same_plant(plant, RollingBall(paper_ball_parameters()))
    np.testing.assert_array_equal(x0, paper_ball_initial_state())
    # the [plant] table of ballctl plan's built-in problem (initial_state None = the preset's)
    plant, x0 = rolling_plant_from_mapping({"preset": "paper_ball", "initial_state": None})
    np.testing.assert_array_equal(x0, paper_ball_initial_state())
    plant, x0 = rolling_plant_from_mapping({"preset": "paper_disk", "inputs": "force"})
    assert_same_plant(plant, RollingDisk(paper_disk_parameters(), inputs="force"))
    np.testing.assert_array_equal(x0, paper_disk_initial_state())


def test_a_preset_keeps_its_rail_angles_under_an_initial_table():
    _, x0 = rolling_plant_from_mapping({"preset": "paper_ball", "initial": {"contact_m": [1.0, -2.0]}})
    expected = paper_ball_initial_state()
    expected[-2:] = [1.0, -2.0]
    np.testing.assert_array_equal(x0, expected)


def test_a_two_mass_ball_is_built_with_consistent_physics():
    plant, x0 = rolling_plant_from_mapping(TWO_MASS_BALL)
    assert isinstance(plant, RollingBall) and plant.n_masses == 2 and plant.inputs == "acceleration"
    theta, theta_dot, q, omega, z = plant.split_state(x0)
    np.testing.assert_array_equal(theta, [0.4, -1.1])
    np.testing.assert_array_equal(theta_dot, [0.2, 0.0])
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_array_equal(omega, [0.0, 0.5, 0.0])
    np.testing.assert_array_equal(z, [0.2, -0.1])
    # the attitude is the rotation vector's: the axis is fixed, and the angle is its length
    from ballctl._quaternion import quat_to_matrix
    v = np.array([0.1, -0.2, 0.3])
    Lam = quat_to_matrix(q)
    np.testing.assert_allclose(Lam @ v, v, atol=1e-15)
    assert np.arccos((np.trace(Lam) - 1) / 2) == pytest.approx(np.linalg.norm(v), rel=1e-12)

    # the total centre of mass from the description, by the documented rail formula
    # zeta = c + rho (cos theta u + sin theta (u x n)), u = start_direction (default for normal E1: E2)
    def on_circle(rho, n, u, th):
        n, u = np.asarray(n, float), np.asarray(u, float)
        return rho * (np.cos(th) * u + np.sin(th) * np.cross(u, n))

    zeta = [on_circle(0.12, [0, 0, 1], [1, 0, 0], 0.4), on_circle(0.10, [1, 0, 0], [0, 1, 0], -1.1)]
    cm = (0.8 * np.array([0.0, 0.0, -0.01]) + 0.3 * zeta[0] + 0.3 * zeta[1]) / 1.4
    np.testing.assert_allclose(plant.total_cm_body(x0), cm, rtol=0, atol=1e-16)
    # the two rails lie in perpendicular planes and inside the shell
    rails = [pm.rail for pm in plant.params.point_masses]
    assert abs(rails[0].rotation[:, 1] @ rails[1].rotation[:, 1]) == 0.0
    assert max(r.max_distance_m() for r in rails) == 0.12

    xdot = plant.rhs(0.0, x0, [0.3, -0.2])
    assert xdot.shape == (13,) and np.all(np.isfinite(xdot))
    # the state stays a unit quaternion to first order: q . q_dot = 0
    assert q @ plant.split_state(xdot)[2] == pytest.approx(0.0, abs=1e-15)


def test_a_two_mass_ball_round_trips():
    plant, x0 = rolling_plant_from_mapping(TWO_MASS_BALL)
    mapping = plant_to_mapping(plant, x0)
    again, x1 = rolling_plant_from_mapping(mapping)
    assert_same_plant(again, plant, rotation_atol=1e-15)
    np.testing.assert_array_equal(x1, x0)
    assert plant_to_mapping(again, x1) == mapping


@pytest.mark.parametrize("which", ["paper_ball", "paper_disk"])
def test_the_papers_plants_round_trip(which):
    plant, x0 = rolling_plant_from_mapping({"preset": which})
    mapping = plant_to_mapping(plant, x0)
    assert "preset" not in mapping and mapping["kind"] == which.split("_")[1]
    again, x1 = rolling_plant_from_mapping(mapping)
    assert_same_plant(again, plant, rotation_atol=1e-15)
    np.testing.assert_array_equal(x1, x0)


def test_every_closed_form_rail_round_trips():
    R = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))[0]
    R = R * np.sign(np.linalg.det(R))
    rails = (CircleRail(radius_m=0.2, rotation=R, center_m=[0.05, 0.0, -0.1]),
             EllipseRail(semi_axis_first_m=0.3, semi_axis_third_m=0.1, rotation=R.T),
             FigureEightRail(half_width_m=0.25, half_height_m=0.2, center_m=[0.0, 0.1, 0.0]),
             SegmentRail(start_m=[0.0, -0.2, 0.1], end_m=[0.1, 0.2, 0.0]))
    params = RollingBallParameters(mass_kg=1.0, radius_m=0.5, principal_inertia_kgm2=[0.1, 0.12, 0.14],
                                   point_masses=tuple(PointMass(mass_kg=0.1 * (k + 1), rail=r)
                                                      for k, r in enumerate(rails)))
    plant = RollingBall(params, inputs="force")
    x0 = np.concatenate([[0.3, -2.0, 1.0, 0.25], [0.1, 0.2, 0.3, -0.05], [0.6, 0.0, 0.8, 0.0], [0.1, 0.2, 0.3],
                         [1.0, 2.0]])
    mapping = plant_to_mapping(plant, x0)
    assert [m["rail"] for m in mapping["masses"]] == ["circle", "ellipse", "figure_eight", "segment"]
    assert mapping["masses"][3]["theta0_m"] == 0.25 and mapping["masses"][3]["theta_dot0_mps"] == -0.05
    again, x1 = rolling_plant_from_mapping(mapping)
    assert_same_plant(again, plant, rotation_atol=1e-15)
    np.testing.assert_array_equal(x1, x0)


def test_a_one_mass_disk_is_the_disk_of_its_parameters():
    spec = {"kind": "disk", "radius_m": 1.0, "mass_kg": 1.0, "inertia_kgm2": 1.0, "gravity_mps2": 1.0,
            "masses": [{"mass_kg": 1.0, "rail": "circle", "radius_m": 0.5, "theta0_rad": -np.pi / 2}]}
    plant, x0 = rolling_plant_from_mapping(spec)
    expected = RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                                 point_masses=(PointMass(mass_kg=1.0,
                                                                         rail=CircleRail(radius_m=0.5)),)))
    assert_same_plant(plant, expected)  # the default plane is the identity rotation, exactly
    np.testing.assert_array_equal(x0, [-np.pi / 2, 0.0, 0.0, 0.0])
    again, x1 = rolling_plant_from_mapping(plant_to_mapping(plant, x0))
    assert_same_plant(again, plant)
    np.testing.assert_array_equal(x1, x0)


def test_the_documented_format_parses_and_builds():
    """The TOML of the module docstring is a valid [plant] table."""
    doc = description.__doc__
    block = doc[doc.index("Format::") + len("Format::"):doc.index("Orientation of a closed rail")]
    text = "\n".join(line[4:] for line in block.splitlines())
    plant, x0 = rolling_plant_from_mapping(tomllib.loads(text)["plant"])
    assert isinstance(plant, RollingBall) and plant.n_masses == 2
    assert isinstance(plant.params.point_masses[1].rail, SegmentRail)
    assert x0[1] == 0.1 and np.all(np.isfinite(plant.rhs(0.0, x0, [0.0, 0.0])))


UNIT_SUFFIXES = (("_rad_s", "rad/s"), ("_mps2", "m/s^2"), ("_kgm2", "kg m^2"), ("_mps", "m/s"), ("_rad", "rad"),
                 ("_kg", "kg"), ("_m", "m"))


def test_every_key_is_documented_with_its_unit_and_range():
    for table, keys in PLANT_KEYS.items():
        for name, key in keys.items():
            assert key.allowed and key.default and key.meaning, (table, name)
            unit = next((u for suffix, u in UNIT_SUFFIXES if name.endswith(suffix)), "")
            assert key.unit == unit, (table, name, key.unit)


# ------------------------------------------------------------------ bad input
def _ball(**changes):
    spec = {k: (list(v) if isinstance(v, list) else v) for k, v in TWO_MASS_BALL.items()}
    spec["masses"] = [dict(m) for m in TWO_MASS_BALL["masses"]]
    spec.update(changes)
    return spec


def _first_mass(**changes):
    spec = _ball()
    spec["masses"][0].update(changes)
    return spec


@pytest.mark.parametrize("spec, pattern", [
    # unknown key: named, with the known ones
    (_ball(radius=0.15), r"^\[plant\]: unknown key\(s\) 'radius'; known keys: .*radius_m"),
    (_first_mass(theta0_m=0.1), r"^\[\[plant\.masses\]\] #1: unknown key\(s\) 'theta0_m'; known keys: .*theta0_rad"),
    ({"preset": "paper_ball", "initial": {"contact": [0, 0]}},
     r"^\[plant\.initial\]: unknown key\(s\) 'contact'; known keys: .*contact_m"),
    # negative masses: key, table, unit, range
    (_ball(mass_kg=-0.8), r"^\[plant\] mass_kg \(kg\) must be a number > 0; got -0\.8$"),
    (_first_mass(mass_kg=-0.3), r"^\[\[plant\.masses\]\] #1 mass_kg \(kg\) must be a number > 0; got -0\.3$"),
    # a rail outside the shell: the numbers
    (_first_mass(radius_m=0.16), r"^\[\[plant\.masses\]\] #1: the circle rail leaves the ball's shell: its farthest "
                                 r"point .* is 0\.16 m from the centre, must be < radius_m = 0\.15 m of \[plant\]$"),
    (_first_mass(center_m=[0.05, 0.0, 0.0]), r"#1: the circle rail leaves .* is 0\.17 m .* < radius_m = 0\.15 m"),
    # a normal of zero length
    (_first_mass(normal=[0, 0, 0]), r"^\[\[plant\.masses\]\] #1 normal must be 3 numbers of nonzero length "
                                    r"\(a direction: zero length has none\); got \[0, 0, 0\]$"),
    # wrong kind, wrong preset, neither
    (_ball(kind="cube"), r"^\[plant\] kind must be 'ball' or 'disk'; got 'cube'$"),
    ({"preset": "paper_cube"}, r"^\[plant\] preset must be 'paper_ball' or 'paper_disk'; got 'paper_cube'$"),
    ({"radius_m": 1.0}, r"^\[plant\] needs kind = 'ball' or 'disk' .* or preset"),
    ({"preset": "paper_ball", "radius_m": 1.0}, r"^\[plant\]: preset fixes the plant, so radius_m cannot be given"),
    # missing keys, wrong types, non-finite values
    ({k: v for k, v in _ball().items() if k != "radius_m"},
     r"^\[plant\] is missing the required key 'radius_m' \(m\): a number > 0; radius"),
    (_ball(radius_m="0.15"), r"^\[plant\] radius_m \(m\) must be a number > 0; got '0\.15'$"),
    (_ball(gravity_mps2=float("nan")), r"^\[plant\] gravity_mps2 \(m/s\^2\) must be a number > 0; got nan$"),
    (_ball(gravity_mps2=True), r"^\[plant\] gravity_mps2 \(m/s\^2\) must be a number > 0; got True$"),
    (_ball(inertia_kgm2=[0.001, 0.001, 0.01]),
     r"^\[plant\] inertia_kgm2 \(kg m\^2\) must be .* each <= the sum of the other two.*; "
     r"got \[0\.001, 0\.001, 0\.01\]$"),
    (_ball(cm_offset_m=[0.0, 0.0]), r"^\[plant\] cm_offset_m \(m\) must be ball: 3 numbers.*; got \[0\.0, 0\.0\]$"),
    (_ball(cm_offset_m=[0.0, 0.0, 0.2]), r"^\[plant\] cm_offset_m \(m\) must be .*\(\|cm_offset_m\| = 0\.2 m, "
                                         r"radius_m = 0\.15 m\)"),
    (_ball(masses={"mass_kg": 1.0}), r"^\[plant\] masses must be an array of tables \[\[plant\.masses\]\]"),
    (_first_mass(rail="helix"), r"^\[\[plant\.masses\]\] #1 rail must be 'circle', 'ellipse', 'figure_eight' or "
                                r"'segment'; got 'helix'$"),
    (_first_mass(rail="callable"), r"#1 rail = 'callable': a CallableRail is a Python function and cannot be "
                                   r"described in a file"),
    (_first_mass(start_direction=[1, 0, 0.1]), r"#1 start_direction must be perpendicular to normal .*got "
                                               r"\|cos angle\| = 0\.0995"),
    (_first_mass(theta0_rad=float("inf")), r"#1 theta0_rad \(rad\) must be a finite number; got inf$"),
    # initial state
    (_ball(initial={"quaternion": [1.0, 0.1, 0.0, 0.0]}),
     r"^\[plant\.initial\] quaternion: x0: the quaternion x0\[4:8\] must be a unit quaternion"),
    (_ball(initial={"quaternion": [1, 0, 0, 0], "rotation_vector_rad": [0, 0, 1]}),
     r"^\[plant\.initial\]: give the attitude once"),
    (_ball(initial_state=[0.0] * 13), r"^\[plant\]: initial_state gives the whole state"),
    ({"preset": "paper_ball", "initial_state": [0.0] * 3},
     r"^\[plant\] initial_state: initial_state must have length 15, got length 3$"),
])
def test_bad_input_is_a_config_error_naming_the_key(spec, pattern):
    with pytest.raises(ConfigError) as info:
        rolling_plant_from_mapping(spec)
    message = str(info.value)
    assert "\n" not in message
    assert re.search(pattern, message), message


DISK = {"kind": "disk", "radius_m": 1.0, "mass_kg": 1.0, "inertia_kgm2": 1.0}


@pytest.mark.parametrize("mass, pattern", [
    ({"rail": "circle", "radius_m": 0.5, "normal": [0, 0, 1]}, r"normal must be \[0, 1, 0\] or \[0, -1, 0\] and "
                                                               r"center_m must have middle entry 0 m; got max "
                                                               r"\|zeta_2\| = 0\.5 m$"),
    ({"rail": "segment", "start_m": [0, 0.1, 0], "end_m": [0.2, 0, 0]}, r"start_m and end_m must have middle entry"),
    ({"rail": "segment", "start_m": [0, 0, 0], "end_m": [0.2, 0, 0], "theta0_m": 0.3},
     r"#1 theta0_m \(m\) must be a number in \[0, \|end_m - start_m\|\] \(the segment is 0\.2 m long\); got 0\.3$"),
    ({"rail": "segment", "start_m": [0, 0, 0], "end_m": [0, 0, 0]}, r"#1 end_m \(m\) must be 3 numbers, not start_m"),
])
def test_bad_disk_rails(mass, pattern):
    with pytest.raises(ConfigError, match=pattern):
        rolling_plant_from_mapping({**DISK, "masses": [{"mass_kg": 1.0, **mass}]})
    with pytest.raises(ConfigError, match=r"^\[plant\.initial\]: unknown key\(s\) 'contact_m'; known keys: angle_rad"):
        rolling_plant_from_mapping({**DISK, "initial": {"contact_m": [0, 0]}})


def test_where_names_the_tables():
    spec = _ball(masses=[TWO_MASS_BALL["masses"][0], {"mass_kg": 0, "rail": "circle"}])
    with pytest.raises(ConfigError, match=r"^problem\.toml \[\[plant\.masses\]\] #2 mass_kg \(kg\) must be a number"):
        rolling_plant_from_mapping(spec, where="problem.toml [plant]")


def test_what_a_mapping_cannot_describe_is_refused():
    rail = CallableRail(function=lambda th: (np.stack([0.1 * np.cos(th), 0 * th, 0.1 * np.sin(th)], -1),) * 3)
    ball = RollingBall(RollingBallParameters(mass_kg=1.0, radius_m=1.0, principal_inertia_kgm2=[1, 1, 1],
                                             point_masses=(PointMass(mass_kg=1.0, rail=rail),)))
    with pytest.raises(ParameterError, match=r"point_masses\[0\]\.rail is a CallableRail, which a mapping cannot"):
        plant_to_mapping(ball, np.r_[0.0, 0.0, 1.0, 0, 0, 0, 0, 0, 0, 0, 0])
    pushed = RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0,
                                               external_force=lambda t: 1.0))
    with pytest.raises(ParameterError, match="external_force is a Python callable"):
        plant_to_mapping(pushed, [0.0, 0.0])
    with pytest.raises(ParameterTypeError, match="plant must be a RollingBall or RollingDisk"):
        plant_to_mapping(RollingBall(paper_ball_parameters()).to_constrained_system(), paper_ball_initial_state())
    with pytest.raises(ParameterError, match="unit quaternion"):
        plant_to_mapping(RollingBall(paper_ball_parameters()), np.zeros(15))
