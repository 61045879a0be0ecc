"""RigProfile: presets, TOML files, validation."""

import numpy as np
import pytest

import ballctl
from ballctl.ball_plate.rig import PRESETS, RigProfile, RigProfileError, Sensor, rig_preset


def test_presets_are_valid_and_documented():
    assert set(PRESETS) == {"tabletop", "lab", "ideal"}
    for name, rig in PRESETS.items():
        assert rig.name == name and rig.description
        assert rig.truth_plant().n_inputs == 2
        for s in rig.sensors:
            assert s.period_steps(rig.dt) >= 1
    tab = rig_preset("tabletop")
    # the typical tabletop rig of the issue: ~50 Hz, 1-2 mm, 20-50 ms, +-15 deg, ~300 deg/s
    cam = tab.sensors[0]
    assert cam.signals == ("contact_x", "contact_y") and cam.period_s == pytest.approx(0.02)
    assert 1e-3 <= cam.noise_std[0] <= 2e-3 and 0.02 <= cam.latency_s <= 0.05
    assert np.rad2deg(tab.limits.max_angle) == pytest.approx(15) and np.rad2deg(tab.limits.max_rate) == \
        pytest.approx(300)
    ideal = tab.without_imperfections()
    assert ideal.max_latency_s == 0 and not ideal.noise_std.any()
    with pytest.raises(RigProfileError, match="unknown rig preset 'desk'"):
        rig_preset("desk")


def test_from_toml_overrides_the_base_preset(tmp_path):
    f = tmp_path / "rig.toml"
    f.write_text('name = "bench"\nbase = "tabletop"\ndt_s = 0.01\n[limits]\nmax_tilt_deg = 10\n'
                 '[[sensor]]\nname = "panel"\nsignals = ["contact_x", "contact_y"]\nrate_hz = 100\n'
                 'latency_s = 0.015\nnoise_std = 0.001\n'
                 '[[sensor]]\nname = "enc"\nsignals = ["alpha", "beta"]\nrate_hz = 50\nnoise_std_deg = 0.1\n')
    rig = RigProfile.from_toml(f)
    assert rig.name == "bench" and rig.dt == 0.01
    assert rig.limits.max_angle == pytest.approx(np.deg2rad(10)) and rig.limits.max_rate == \
        rig_preset("tabletop").limits.max_rate
    assert rig.signals == ("contact_x", "contact_y", "alpha", "beta")
    np.testing.assert_allclose(rig.noise_std, [1e-3, 1e-3, np.deg2rad(0.1), np.deg2rad(0.1)])
    assert rig.sensors[1].period_steps(rig.dt) == 2


@pytest.mark.parametrize("text, match", [
    ("dt_s = 0.01\nspeeed = 1\n", r"unknown key\(s\) \['speeed'\]"),
    ("[limits]\nmax_tilt = 10\n", r"\[limits\]: unknown key"),
    ("[[sensor]]\nsignals = ['contact_x']\nrate_hz = 30\n", "whole number"),
    ("[[sensor]]\nsignals = ['pitch']\nrate_hz = 50\n", "unknown signal 'pitch'"),
    ("[[sensor]]\nsignals = ['contact_x']\nrate_hz = -5\n", "rate_hz must be > 0 Hz"),
    ("dt_s = 0.01\n[[sensor]]\nsignals = ['contact_x']\nrate_hz = 100\nnoise_std = [1, 2]\n",
     "one entry per signal"),
    ("this is not toml", "not valid TOML"),
])
def test_bad_rig_files_name_the_problem(tmp_path, text, match):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(RigProfileError, match=match):
        RigProfile.from_toml(f)


def test_validation_aggregates_problems():
    with pytest.raises(ValueError) as info:
        Sensor(name="cam", signals=("contact_x",), period_s=-1.0, latency_s=-0.1, noise_std=(-1.0,))
    msg = str(info.value)
    assert "period_s must be > 0 s" in msg and "latency_s must be >= 0 s" in msg and "noise_std must be >= 0" in msg
    with pytest.raises(ValueError, match="measured by two sensors"):
        RigProfile(name="x", sensors=(Sensor(name="a", signals=("contact_x",), period_s=0.01),
                                      Sensor(name="b", signals=("contact_x",), period_s=0.01)))
    with pytest.raises(RigProfileError, match="does not exist"):
        RigProfile.from_toml("/nonexistent/rig.toml")
    assert issubclass(RigProfileError, ballctl.BallctlError)


def test_every_rig_design_names_the_plant_it_is_made_on():
    """``RIG_DESIGN_PLANTS`` (what the CLIs compile ahead for a design) covers every design, and names the class of
    the rig's design plant for the exact design and the quasi-static BallPlate for the others (the classes
    ``design_for_rig`` accepts)."""
    from ballctl.ball_plate.design import RIG_DESIGN_PLANTS, RIG_DESIGNS
    from ballctl.plants import PLANTS

    assert set(RIG_DESIGN_PLANTS) == set(RIG_DESIGNS)
    assert type(rig_preset("tabletop").design_plant()) is PLANTS[RIG_DESIGN_PLANTS["exact"]]
    assert all(PLANTS[RIG_DESIGN_PLANTS[d]] is ballctl.BallPlate for d in RIG_DESIGNS if d != "exact")
