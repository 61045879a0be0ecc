"""ballctl.simulate's API: explicit state feedback, the options type, the python-control adapter."""

import numpy as np
import pytest

import ballctl


def _plate_run(**kwargs):
    plant = ballctl.BallPlate()
    x0 = np.array([0.1, -0.05, 0.0, 0.0, 0.0])
    xd0 = plant.rolling_velocities(x0, [0.02, 0.01], 0.0)
    return plant, x0, xd0


def test_feedback_is_an_explicit_argument():
    """A PD law on the contact point through control_law= equals the same law written as u(t) along the run."""
    plant, x0, xd0 = _plate_run()

    def law(t, x, xd):
        return np.array([0.5 * x[1] + 0.2 * xd[1], -0.5 * x[0] - 0.2 * xd[0]])

    t = np.linspace(0.0, 0.5, 11)
    run = ballctl.simulate(plant, x0, xd0, None, (0.0, 0.5), control_law=law, t_eval=t,
                           options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13))
    np.testing.assert_allclose(run.u, np.array([law(tk, xk, xdk) for tk, xk, xdk in zip(run.t, run.x, run.xd)]),
                               rtol=0, atol=1e-15)
    # the feedback changes the motion: the open loop with the initial input drifts differently
    open_loop = ballctl.simulate(plant, x0, xd0, law(0.0, x0, xd0), (0.0, 0.5), t_eval=t)
    assert np.max(np.abs(open_loop.x[-1] - run.x[-1])) > 1e-4
    with pytest.raises(ValueError, match="either inputs .* or control_law"):
        ballctl.simulate(plant, x0, xd0, np.zeros(2), (0.0, 0.1), control_law=law)


def test_state_feedback_as_inputs_is_refused_and_options_are_one_type():
    plant, x0, xd0 = _plate_run()
    with pytest.raises(TypeError, match="control_law="):
        ballctl.simulate(plant, x0, xd0, lambda t, x, xd: -0.1 * x[:2], (0.0, 0.2))
    # an IntegrationOptions is a SimulationOptions with the constraint handling at its defaults
    t = np.linspace(0.0, 0.2, 5)
    a = ballctl.simulate(plant, x0, xd0, None, (0.0, 0.2), t_eval=t,
                         options=ballctl.IntegrationOptions(rtol=1e-11, atol=1e-13))
    b = ballctl.simulate(plant, x0, xd0, None, (0.0, 0.2), t_eval=t,
                         options=ballctl.SimulationOptions(rtol=1e-11, atol=1e-13))
    np.testing.assert_array_equal(a.x, b.x)
    assert a.wall_time_s >= 0.0 and not hasattr(a, "wall_time")
    with pytest.raises(TypeError, match="SimulationOptions"):
        ballctl.simulate(plant, x0, xd0, None, (0.0, 0.2), options={"rtol": 1e-8})


def test_to_time_response_is_python_control_shaped():
    plant, x0, xd0 = _plate_run()
    run = ballctl.simulate(plant, x0, xd0, lambda t: [0.01 * t, -0.02], (0.0, 0.3), t_eval=np.linspace(0, 0.3, 7))
    resp = run.to_time_response()
    assert resp.time.shape == (7,)
    np.testing.assert_array_equal(resp.states, np.concatenate([run.x, run.xd], axis=1).T)
    np.testing.assert_array_equal(resp.outputs, resp.states)
    np.testing.assert_array_equal(resp.inputs, run.u.T)
    assert resp.state_labels[:2] == ["contact_x", "contact_y"] and resp.state_labels[5] == "contact_x_dot"
    assert resp.input_labels == ["alpha", "beta"]
    # python-control's own unpacking: t, y = response
    t, y = resp
    np.testing.assert_array_equal(t, run.t)
