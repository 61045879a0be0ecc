r"""Software in the loop: the exported controller as a component of the closed loop on the truth plant.

A *controller component* (:class:`ControllerComponent`) is what runs on the
rig: ``reset()``, ``measure(j, y)`` (the signals sampled at step ``j``, NaN =
not received) and ``step() -> u`` (the command of the current step; the step
advances). Two implement it:

* :class:`ballctl.deploy.runtime.ControllerRuntime` -- the Python twin,
* :class:`CController` -- the generated C, compiled into a shared library
  (:func:`compile_controller`, gcc) and called through ``ctypes``.

:func:`run_component_loop` runs any component against a rig's truth plant
(``rig.truth_plant()``) for any number of steps (past the design's horizon:
the exported controller runs forever): the sensors sampled with their pattern,
noise and bias and delivered after the estimator's latency, the commands
through the rig's shaping and actuation latency, the plant integrated by RK4
-- the steps of :func:`ballctl.simulate_closed_loop`, written with the same
:mod:`ballctl.simulation.loop_step` functions and the same noise draws, so that over the
design's horizon a component that is the design gives the design's loop.

:func:`export_controller` writes the controller a rig runs and chooses its
Fourier order by verification: the smallest order whose closed loop on the
truth plant (the twin, double precision) keeps the RMS contact error of the
last period within ``tolerance`` of the verified design's, over the design's
horizon and over ``periods`` periods of running on.
"""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .._errors import BallctlError, ParameterError, ShapeError
from .._validation import check_bool, check_instance, check_integer, check_nonnegative, check_positive
from ..hardware import LoopImperfections
from ..simulation.arrays import draw_runs, imperfection_draws
from ..simulation.closed_loop import ClosedLoopOptions, controller_loop
from ..simulation.component import ControllerComponent, NonlinearStepper, run_loop
from ..system import ConstrainedSystem
from ..ball_plate.rig import RigProfile
from .runtime import ControllerRuntime
from ..schedule.c_controller import write_controller_files
from ..schedule.compact import ControllerData, ControllerDataOptions, controller_data

__all__ = ["ControllerComponent", "CController", "ComponentLoopOptions", "ComponentLoopResult", "ExportOptions",
           "ExportReport", "compile_controller", "run_component_loop", "export_controller", "C_FLAGS",
           "ExportVerificationError", "RMS_FLOOR_M"]

#: warnings-as-errors flags every build of the generated C passes (also the cross build of the PIL benchmark)
C_FLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Wconversion", "-pedantic", "-Werror", "-ffp-contract=off")
#: absolute floor in m of :func:`export_controller`'s comparisons of one loop's RMS contact error with another's
#: (an order with the full-precision loop, the compiled C with the twin): 1 um, far above the float32 rounding of
#: a contact point on a 0.5 m plate (0.03 um) and far below any sensor's noise (the lab camera's 0.3 mm), so the
#: comparison stays meaningful when the reference error is 0 (a noise-free rig started on its reference) and
#: leaves every other verdict to the relative tolerance
RMS_FLOOR_M = 1e-6


class ExportVerificationError(BallctlError, RuntimeError):
    """No Fourier order of the exported controller passed the closed-loop check (the report is attached).

    Parameters
    ----------
    message : str
        What failed.
    report : ExportReport, optional
        The checks that were run.
    """

    def __init__(self, message: str, report: "ExportReport | None" = None) -> None:
        super().__init__(message)
        self.report = report


# ---------------------------------------------------------------------- the C as a component
def compile_controller(directory, *, compiler: str = "gcc", out_dir=None, extra_flags=()) -> Path:
    """Compile the C controller in ``directory`` into a shared library (with the warnings of :data:`C_FLAGS`).

    Parameters
    ----------
    directory : str or Path
        Written by :func:`ballctl.schedule.write_c_controller`.
    compiler : str
        A C compiler on the PATH (gcc or clang).
    out_dir : str or Path, optional
        Where the library goes (default: a new temporary folder).
    extra_flags : sequence of str
        More compiler flags.

    Returns
    -------
    Path
        The shared library.

    Raises
    ------
    ParameterError
        No compiler, or the code does not compile warning-free (the compiler's output is in the message).
    """
    directory = Path(directory)
    if shutil.which(compiler) is None:
        raise ParameterError(f"compiler: {compiler!r} is not on the PATH")
    if not (directory / "ballctl_controller.c").is_file():
        raise ParameterError(f"directory: no ballctl_controller.c in {str(directory)!r} (write_c_controller first)")
    out = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="ballctl_sil_"))
    out.mkdir(parents=True, exist_ok=True)
    shim = out / "ballctl_shim.c"
    shim.write_text('#include <stddef.h>\n#include "ballctl_controller.h"\n'
                    "size_t ballctl_sizeof(void);\nint ballctl_real_bytes(void);\n"
                    "size_t ballctl_sizeof(void) { return sizeof(ballctl_controller); }\n"
                    "int ballctl_real_bytes(void) { return (int)sizeof(ballctl_real); }\n")
    lib = out / "libballctl_controller.so"
    cmd = [compiler, *C_FLAGS, *extra_flags, "-fPIC", "-shared", "-I", str(directory), "-o", str(lib),
           str(directory / "ballctl_controller.c"), str(shim)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ParameterError(f"the generated C did not compile warning-free with {' '.join(cmd)}:\n{res.stderr}")
    return lib


class CController:
    """The compiled C controller, called through ``ctypes`` (a :class:`ControllerComponent`).

    Parameters
    ----------
    library : str or Path
        From :func:`compile_controller`.
    n_inputs, n_signals : int
        ``BC_N_INPUTS``, ``BC_N_SIGNALS`` of the build.

    Attributes
    ----------
    real : type
        ``ctypes.c_float`` or ``ctypes.c_double`` (``ballctl_real``).
    """

    def __init__(self, library, n_inputs: int, n_signals: int) -> None:
        self._lib = ctypes.CDLL(str(library))
        lib = self._lib
        self.real = ctypes.c_double if lib.ballctl_real_bytes() == 8 else ctypes.c_float
        lib.ballctl_sizeof.restype = ctypes.c_size_t
        self._mem = ctypes.create_string_buffer(int(lib.ballctl_sizeof()) + 16)
        self._c = ctypes.cast(self._mem, ctypes.c_void_p)
        self.n_inputs, self.n_signals = int(n_inputs), int(n_signals)
        real_p = ctypes.POINTER(self.real)
        lib.ballctl_init.argtypes = [ctypes.c_void_p]
        lib.ballctl_measure.argtypes = [ctypes.c_void_p, ctypes.c_longlong, real_p]
        lib.ballctl_measure.restype = ctypes.c_int
        lib.ballctl_step.argtypes = [ctypes.c_void_p, real_p]
        lib.ballctl_step.restype = ctypes.c_longlong
        lib.ballctl_reference.argtypes = [ctypes.c_void_p, ctypes.c_longlong, real_p]
        lib.ballctl_reference.restype = ctypes.c_int
        lib.ballctl_health.argtypes = [ctypes.c_void_p]
        lib.ballctl_health.restype = ctypes.c_uint
        self._y = (self.real * self.n_signals)()
        self._u = (self.real * self.n_inputs)()
        self.reset()

    @classmethod
    def build(cls, directory, *, compiler: str = "gcc", out_dir=None) -> "CController":
        """Compile the controller in ``directory`` and load it.

        Parameters
        ----------
        directory : str or Path
            Written by :func:`ballctl.schedule.write_c_controller`.
        compiler : str
            C compiler.
        out_dir : str or Path, optional
            Build folder (default: temporary).
        """
        lib = compile_controller(directory, compiler=compiler, out_dir=out_dir)
        with np.load(Path(directory) / "ballctl_controller.npz", allow_pickle=False) as npz:
            nu, ny = len(npz["input_names"]), len(npz["signal_names"])
        return cls(lib, nu, ny)

    def reset(self) -> None:
        """``ballctl_init``."""
        self._lib.ballctl_init(self._c)
        self.k = 0

    def measure(self, j: int, y) -> int:
        """``ballctl_measure``.

        Parameters
        ----------
        j : int
            Step of the sample.
        y : array_like, shape (ny,)
            The signals (NaN: not received).

        Returns
        -------
        int
            The C status.
        """
        for m in range(self.n_signals):
            self._y[m] = float(y[m])
        return int(self._lib.ballctl_measure(self._c, int(j), self._y))

    def step(self) -> np.ndarray:
        """``ballctl_step``: the command of the current step (rad).

        Returns
        -------
        ndarray, shape (nu,)
        """
        self.k = int(self._lib.ballctl_step(self._c, self._u)) + 1
        return np.array(self._u[:], dtype=float)

    def reference(self, j: int) -> np.ndarray:
        """``ballctl_reference``: the signals' reference at step ``j``.

        Parameters
        ----------
        j : int
            Step number (>= 0).
        """
        out = (self.real * self.n_signals)()
        if self._lib.ballctl_reference(self._c, int(j), out) != 0:
            raise ParameterError(f"j must be a step number >= 0, got {j}")
        return np.array(out[:], dtype=float)

    @property
    def health(self) -> int:
        """``ballctl_health`` bits."""
        return int(self._lib.ballctl_health(self._c))


# ---------------------------------------------------------------------- the loop
@dataclass(frozen=True)
class ComponentLoopResult:
    """A component's closed loop on the truth plant, at the control samples.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Control times in s (K = steps + 1, fewer after a divergence).
    x, xd : ndarray, shape (K, n)
        Truth coordinates and velocities.
    u : ndarray, shape (K, nu)
        Input that acted over ``[t_k, t_k+1)`` (the time average of its held segments; the last
        row is the input held at the end).
    commands : ndarray, shape (K - 1, nu)
        What the component returned at each step.
    y : ndarray, shape (K, ny)
        Sensor readings delivered (NaN where not sampled or not received).
    position_error : ndarray, shape (K,)
        Contact-point distance from the reference in m.
    health : ndarray of int, shape (K - 1,)
        The component's health bits after each step (0 when it has none).
    measure_status : ndarray of int, shape (K - 1,)
        Status of the measurement delivered at each step (0 when none).
    diverged_at_s : float or None
        Time in s at which the run stopped (state not finite or contact error above the limit).
    wall_time_s : float
    controller_time_s : float
        Wall-clock time spent in the component's ``measure`` and ``step`` calls.
    """

    t: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    u: np.ndarray
    commands: np.ndarray
    y: np.ndarray
    position_error: np.ndarray
    health: np.ndarray
    measure_status: np.ndarray
    diverged_at_s: float | None
    wall_time_s: float
    controller_time_s: float = 0.0

    def rms_last(self, window_s: float) -> float:
        """RMS contact error over the last ``window_s`` s of the run (m).

        Parameters
        ----------
        window_s : float
            Window length in s.
        """
        keep = self.t >= self.t[-1] - window_s - 1e-9
        return float(np.sqrt(np.mean(self.position_error[keep] ** 2)))


@dataclass(frozen=True, kw_only=True)
class ComponentLoopOptions(ClosedLoopOptions):
    """How :func:`run_component_loop` runs: the closed-loop options a component's loop uses, lost frames, the truth.

    A :class:`~ballctl.simulation.closed_loop.ClosedLoopOptions` with the component loop's defaults.
    The component runs the rig's output feedback (its estimator's sensors carry the noise, the rig's
    limits shape the commands) on the nonlinear truth integrated by RK4 in the Python driver, so
    ``method`` is ``"rk4"`` and the fields listed last keep their defaults.

    Attributes
    ----------
    substeps : int
        RK4 steps per held segment (>= 1; 2 by default here).
    stabilization : (float, float) or None
        Baumgarte gains of the truth plant in 1/s (each >= 0).
    divergence_error : float, optional
        Stop when the contact point is farther than this from its reference (m, > 0).
    imperfections : LoopImperfections, optional
        The loop's share of a rig's imperfections (``rig.imperfections.loop``): lost frames, timing
        jitter and the servo dead band, drawn as :func:`ballctl.simulate_closed_loop` draws them
        (over the design's horizon the same seed gives the same lost frames and jitter as there;
        the steps after it draw from a stream of their own).
    received : ndarray of bool, shape (steps, ny), optional
        False where a sample is lost (a dropped frame); default all arrive.
    truth : ConstrainedSystem, optional
        The plant (default ``rig.truth_plant()``).
    method : {"rk4"}
        The integrator of the truth plant (the only one of the component loop).
    feedback : {"auto", "output"}
        Output feedback through the component (``"auto"`` means the same).
    limits, noise_std, model, rtol, atol, backend, progress
        Not used here (the rig's limits, the sensors' noise, the nonlinear truth, RK4, the Python
        driver, no progress bar): leave them at their defaults.
    """

    method: str = "rk4"
    substeps: int = 2
    received: np.ndarray | None = field(default=None, compare=False)
    truth: ConstrainedSystem | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method != "rk4" or self.model != "nonlinear" or self.feedback not in ("auto", "output") \
                or self.backend == "compiled":
            raise ParameterError("the component loop is the output feedback of the component on the nonlinear truth, "
                                 "integrated by RK4 in the Python driver: method must be 'rk4', model 'nonlinear', "
                                 "feedback 'auto' or 'output' and backend not 'compiled', got "
                                 f"{self.method!r}, {self.model!r}, {self.feedback!r}, {self.backend!r}")
        for name in ("limits", "noise_std"):
            if getattr(self, name) is not None:
                raise ParameterError(f"{name} is not used by run_component_loop (the rig's limits shape the commands, "
                                     "the estimator's sensors carry the noise); leave it None")
        if self.progress:
            raise ParameterError("progress is not used by run_component_loop; leave it False")
        if self.received is not None:
            received = np.array(self.received, dtype=bool)
            if received.ndim != 2:
                raise ShapeError(f"received must have shape (steps, ny) (True where a sample arrives), "
                                 f"got {received.shape}")
            received.setflags(write=False)
            object.__setattr__(self, "received", received)
        if self.truth is not None:
            check_instance(self.truth, "truth", ConstrainedSystem)


def _component_loop(controller, plant, steps: int, rig: RigProfile, imperfections, substeps, stabilization,
                    divergence_error):
    """The design's loop on the truth's layout for ``steps`` steps; past the horizon the reference repeats."""
    Kd = len(controller.times)
    loop = controller_loop(controller, plant, min(steps, Kd), mode="output", limits=rig.limits,
                           imperfections=imperfections, solver=(substeps, stabilization),
                           divergence_error=divergence_error)
    if steps <= Kd:
        return loop
    K = steps + 1
    design = controller.system
    cmap = [plant.coordinate_names.index(nm) for nm in design.coordinate_names]
    period = getattr(controller.reference, "period", None)
    t0, dt = float(controller.samples.t[0]), float(controller.dt)
    y_ref = np.zeros((K, 2 * loop.n))
    y_ref[:loop.K] = loop.y_ref
    if period is None:
        y_ref[loop.K:] = loop.y_ref[-1]
    else:   # the steps past the horizon in one evaluation of the reference (a stack of times)
        s = controller.reference(t0 + ((np.arange(loop.K, K) * dt) % period))
        y_ref[loop.K:, cmap] = np.asarray(s.x, dtype=float)
        y_ref[loop.K:, [loop.n + i for i in cmap]] = np.asarray(s.xd, dtype=float)
    e = loop.estimator
    periods = [sensor.period_steps(dt) for sensor in controller.estimator.sensors]
    S = math.lcm(*periods)
    pattern = np.zeros((S, e.n_signals), dtype=bool)
    col = 0
    for sensor, every in zip(controller.estimator.sensors, periods):
        pattern[::every, col:col + len(sensor.signals)] = True
        col += len(sensor.signals)
    sampled = pattern[np.arange(K) % S]
    est = replace(e, sampled=sampled, signal_reference=y_ref[:, e.signal_index])
    times = t0 + dt * np.arange(K)
    u_ref = np.vstack([loop.u_ref, np.repeat(loop.u_ref[-1:], K - loop.K, axis=0)])
    gains = np.zeros((K - 1,) + loop.gains.shape[1:])
    return replace(loop, times=times, x_ref=y_ref[:, :loop.n], xd_ref=y_ref[:, loop.n:], u_ref=u_ref, gains=gains,
                   estimator=est)


def run_component_loop(component, rig: RigProfile, controller, x0, xd0, *, steps: int, seed: int | None = 0,
                       options: ComponentLoopOptions | None = None) -> ComponentLoopResult:
    """Run a controller component against the rig's truth plant for ``steps`` control steps.

    The one Python driver (:func:`ballctl.simulation.component.run_loop`) with the rig's sensors,
    limits and truth plant: at step k the truth is sensed (the estimator's signals, sampling
    pattern, bias and noise, the same ``seed`` giving the same draws as
    :func:`ballctl.simulate_closed_loop`), the readings of step ``k - latency_steps`` are
    delivered (``component.measure``), the command is asked for (``component.step``), shaped by
    the rig (quantum, tilt, then slew and actuation latency) and held on the plant.

    Parameters
    ----------
    component : ControllerComponent
        The controller (twin, compiled C, or any object with the three calls).
    rig : RigProfile
        Its limits shape the commands; its truth plant is the plant unless ``options.truth`` is given.
    controller : TrackingController
        The design the component was exported from (its estimator's sensors, the reference, dt).
    x0, xd0 : array_like, shape (n,)
        Initial truth state (the truth plant's coordinates).
    steps : int
        Control steps to run (any number: past the design's horizon the reference repeats).
    seed : int, optional
        Seed of the sensor noise.
    options : ComponentLoopOptions, optional
        RK4 substeps, stabilization, divergence stop, the loop's imperfections, lost frames and
        the truth plant (default: ``ComponentLoopOptions()``).

    Returns
    -------
    ComponentLoopResult
    """
    if not isinstance(rig, RigProfile):
        raise ParameterError(f"rig must be a RigProfile, got {type(rig).__name__}")
    if not isinstance(component, ControllerComponent):
        raise ParameterError("component must implement ControllerComponent (reset, measure, step)")
    steps = check_integer(steps, "steps", minimum=1)
    options = ComponentLoopOptions() if options is None else options
    check_instance(options, "options", ComponentLoopOptions, "ComponentLoopOptions (the component loop's defaults)")
    substeps, stabilization, divergence_error = options.substeps, options.stabilization, options.divergence_error
    received, truth, imperfections = options.received, options.truth, options.imperfections
    est = controller.estimator
    if est is None:
        raise ParameterError("run_component_loop needs an output-feedback design (controller.estimator)")
    plant = rig.truth_plant() if truth is None else truth
    n = plant.n_coordinates
    x = np.array(x0, dtype=float).reshape(-1)
    xd = np.array(xd0, dtype=float).reshape(-1)
    if x.shape != (n,) or xd.shape != (n,):
        raise ParameterError(f"x0 and xd0 must have shape ({n},) (the truth plant's coordinates)")
    ny = est.n_signals
    if received is not None:
        if received.shape != (steps, ny):
            raise ParameterError(f"received must have shape ({steps}, {ny}), got {received.shape}")
    loop = _component_loop(controller, plant, steps, rig, imperfections, substeps, stabilization,
                           divergence_error)
    K = steps + 1
    Kd = min(K, len(controller.times) + 1)
    runs = draw_runs(loop, [seed], np.asarray(getattr(plant, "kernel_parameters", np.zeros(1)), dtype=float)[None],
                     x[None], xd[None], imperfections=None)
    lost, shift = runs.received[0], runs.sample_shift[0]
    if imperfections is not None:
        # the design's horizon draws what simulate_closed_loop draws over it; the steps after it their own
        widths = loop.estimator.sensor_widths
        lost[:Kd], shift[:Kd] = imperfection_draws(seed, Kd, widths, imperfections)
        if K > Kd:
            root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
            after = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (2,))
            lost[Kd:], shift[Kd:] = imperfection_draws(after, K - Kd, widths, imperfections)
    if received is not None:
        lost[:steps] &= received
    start = time.perf_counter()
    stepper = NonlinearStepper(plant, "rk4", 1e-9, 1e-12, substeps, loop.stabilization)
    done = run_loop(component, stepper, loop, runs, raise_on_failure=False)
    out, status = done.output, int(done.output.status[0])
    last = K - 1 if status < 0 else status
    keep = slice(0, last + 1)
    tracked = loop.tracked_index
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.sqrt(np.sum((out.x[0][:, tracked] - loop.y_ref[:, tracked]) ** 2, axis=1))
    return ComponentLoopResult(loop.times[keep], out.x[0, keep], out.xd[0, keep], out.u[0, keep],
                               done.commands[:last], out.measurements[0, keep], err[keep], done.health[:last],
                               done.measure_status[:last], None if status < 0 else float(loop.times[status]),
                               time.perf_counter() - start, done.controller_time_s)


# ---------------------------------------------------------------------- the verified export
@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_controller` wrote and how it was verified.

    Attributes
    ----------
    files : tuple of Path
        The written files.
    data : ControllerData
        The exported controller.
    fourier_order : int or None
        The chosen order (None for a plan); ``data.orders`` has the order of each group (the model's
        own may be lower).
    design_rms_error_m : float
        RMS contact error over the last period of the verified design's loop over its horizon.
    tolerance : float
        Relative tolerance of the check.
    checks : tuple of dict
        The full-precision controller first (``full_precision``: True, ``rms_error_m`` over the
        last period of the check run, ``rms_error_design_window_m`` over the design's last period and
        ``relative_to_design`` of the latter), then one per order tried
        (``order``, ``rms_error_m``, ``relative_to_full``, ``peak_distance_to_full_m``, ``passed``).
        A ``relative_to_*`` is ``e / e_ref - 1``; None when the loop diverged or the reference
        error is at most :data:`RMS_FLOOR_M` (no ratio to speak of: the check is then absolute).
    periods : int
        Periods of the check runs.
    c_check : dict or None
        The compiled C (the exported ``real``) in the same loop: ``rms_error_m``,
        ``relative_to_twin`` (as above) and ``passed``; None without a C compiler.
    footprint : ControllerFootprint
    wall_time_s : float
    """

    files: tuple
    data: ControllerData
    fourier_order: int | None
    design_rms_error_m: float
    tolerance: float
    checks: tuple
    periods: int
    c_check: dict | None
    footprint: object
    wall_time_s: float = 0.0

    def as_dict(self) -> dict:
        """Strict-JSON-ready summary (for the main job's summary.json)."""
        return {"kind": self.data.kind, "real": self.data.real, "fourier_order": self.fourier_order,
                "fourier_orders": dict(self.data.orders),
                "dropped_states": list(self.data.dropped_states),
                "design_rms_error_m": self.design_rms_error_m, "tolerance": self.tolerance,
                "periods": self.periods, "checks": [dict(c) for c in self.checks], "c_check": self.c_check,
                "footprint": self.footprint.as_dict(), "files": [p.name for p in self.files],
                "wall_time_s": self.wall_time_s}


@dataclass(frozen=True, kw_only=True)
class ExportOptions:
    """How :func:`export_controller` checks and writes the controller a rig runs.

    Attributes
    ----------
    real : {"float32", "float64"}
        Scalar type of the export.
    tolerance : float
        Relative tolerance of the checks (> 0, dimensionless; 0.05: within 5 %).
    distance_floor_m : float
        Absolute allowance in m on the distance between the loops (>= 0).
    orders : sequence of int
        Fourier orders to try, ascending (each in 0..32).
    full_order : int
        Order of the full-precision reference controller (0..32).
    periods : int
        Periods of the check runs (>= 1; at least the design's horizon).
    substeps : int, optional
        RK4 steps per held segment of the check runs (>= 1; default: steps of at most 10 ms, at least 2).
    representation : {"auto", "fourier", "plan"}
        As in :class:`~ballctl.schedule.compact.ControllerDataOptions`.
    drop_states : "auto", None or sequence of str
        As in :class:`~ballctl.schedule.compact.ControllerDataOptions`.
    check_c : bool, optional
        Run the compiled C too (default: when ``compiler`` is on the PATH).
    compiler : str
        C compiler of ``check_c``.
    imperfections : LoopImperfections, None or "rig"
        The loop's share of the rig's imperfections in every check run (``"rig"``: the rig's own,
        ``rig.imperfections.loop``; None: none).
    reduce_model_order : bool
        After the order is chosen, lower the prediction model's own order (``Ad``, the largest
        group) while the same check passes.
    """

    real: str = "float32"
    tolerance: float = 0.05
    distance_floor_m: float = 5e-4
    orders: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 8, 10, 12)
    full_order: int = 16
    periods: int = 3
    substeps: int | None = None
    representation: str = "auto"
    drop_states: str | tuple[str, ...] | None = "auto"
    check_c: bool | None = None
    compiler: str = "gcc"
    imperfections: LoopImperfections | str | None = "rig"
    reduce_model_order: bool = True

    def __post_init__(self) -> None:
        data = ControllerDataOptions(representation=self.representation, real=self.real, drop_states=self.drop_states)
        object.__setattr__(self, "drop_states", data.drop_states)
        object.__setattr__(self, "tolerance", check_positive(self.tolerance, "tolerance"))
        object.__setattr__(self, "distance_floor_m", check_nonnegative(self.distance_floor_m, "distance_floor_m", "m"))
        object.__setattr__(self, "periods", check_integer(self.periods, "periods", minimum=1))
        object.__setattr__(self, "full_order", check_integer(self.full_order, "full_order", minimum=0, maximum=32))
        if isinstance(self.orders, (str, bytes)) or not hasattr(self.orders, "__iter__"):
            raise ParameterError(f"orders must be a sequence of Fourier orders in 0..32, got {self.orders!r}")
        object.__setattr__(self, "orders", tuple(check_integer(h, f"orders[{i}]", minimum=0, maximum=32)
                                                 for i, h in enumerate(self.orders)))
        if self.substeps is not None:
            object.__setattr__(self, "substeps", check_integer(self.substeps, "substeps", minimum=1))
        if self.check_c is not None:
            object.__setattr__(self, "check_c", check_bool(self.check_c, "check_c"))
        if not isinstance(self.compiler, str) or not self.compiler:
            raise ParameterError(f"compiler must be the name of a C compiler on the PATH, got {self.compiler!r}")
        if isinstance(self.imperfections, str) and self.imperfections != "rig":
            raise ParameterError(f"imperfections must be a LoopImperfections, None or 'rig', "
                                 f"got {self.imperfections!r}")
        if self.imperfections is not None and not isinstance(self.imperfections, str):
            check_instance(self.imperfections, "imperfections", LoopImperfections, "LoopImperfections, None or 'rig'")
        object.__setattr__(self, "reduce_model_order", check_bool(self.reduce_model_order, "reduce_model_order"))


def _within(value: float | None, reference: float, tolerance: float, floor: float) -> bool:
    """``|value - reference| <= tolerance * reference + floor``; False when the loop diverged (``value`` None)."""
    return value is not None and abs(value - reference) <= tolerance * reference + floor


def _relative(value: float | None, reference: float) -> float | None:
    """``value / reference - 1``; None when ``value`` is None or ``reference`` is at most :data:`RMS_FLOOR_M`."""
    if value is None or not reference > RMS_FLOOR_M:
        return None
    return value / reference - 1.0


def _design_run(controller, rig, x0, xd0, seed, substeps, imperfections):
    from ..simulation.closed_loop import simulate_closed_loop

    return simulate_closed_loop(controller, x0, xd0, truth=rig.truth_plant(), seed=seed,
                                options=ClosedLoopOptions(limits=rig.limits, method="rk4", substeps=substeps,
                                                          imperfections=imperfections))


def export_controller(controller, rig: RigProfile, directory, *, x0, xd0, seed: int | None = 0,
                      options: ExportOptions | None = None) -> ExportReport:
    r"""Write the controller a rig runs, with its Fourier order chosen by a closed-loop check.

    Every loop below runs on ``rig.truth_plant()`` with the rig's limits and
    sensors, from ``x0``, with the same sensor draws (``seed``), for
    ``periods`` periods (:func:`run_component_loop`, the exported controller
    in double precision through :class:`~ballctl.deploy.runtime.ControllerRuntime`).

    1. The *full-precision* periodic controller (order ``full_order``) is
       accepted against the verified design (:func:`ballctl.simulate_closed_loop`
       over its horizon, the same sensor and imperfection draws): its RMS
       contact error over the last period of the design's horizon is at most
       :math:`(1 + \mathrm{tolerance})\,e_d` plus ``distance_floor_m`` / 5,
       with :math:`e_d` the design's there, and over the last period of the
       check run at most :math:`2 e_d` plus ``distance_floor_m`` / 5 (it does
       not drift; the floor makes both checks absolute when :math:`e_d = 0`,
       a noise-free rig started on its reference).
    2. An order H passes when its loop stays within ``tolerance`` of the
       full-precision loop: :math:`|e_H - e_f| \le \mathrm{tolerance}\,e_f +`
       :data:`RMS_FLOOR_M` (1 µm: the comparison holds at :math:`e_f = 0`),
       and the contact points of the two loops are never farther apart than
       ``tolerance`` times the full loop's peak error plus ``distance_floor_m``
       (the floor covers the command quantum: one quantum step of difference
       moves the ball by a few tenths of a millimetre).
    3. The smallest passing order of ``orders`` is chosen; with
       ``reduce_model_order`` the prediction model ``Ad`` (the largest group:
       N^2 entries) then gets the lowest order of its own that passes the same
       check. That controller is exported in ``real``; with a C compiler the
       compiled C runs the same loop (``c_check``: its RMS error within
       ``tolerance`` of the twin's, plus :data:`RMS_FLOOR_M`).

    A plan (no period) is checked in step 1 only, over the design's horizon.

    Parameters
    ----------
    controller : TrackingController
        The verified output-feedback design.
    rig : RigProfile
        The rig (truth plant, limits, sensors).
    directory : str or Path
        Where the files go (see :func:`ballctl.schedule.write_controller_files`).
    x0, xd0 : array_like, shape (n,)
        Initial truth state of the check (the main job's).
    seed : int, optional
        Sensor-noise seed of the check.
    options : ExportOptions, optional
        Scalar type, tolerances, the orders tried, the check runs (periods, substeps,
        imperfections, the compiled C) and the representation (default: ``ExportOptions()``).

    Returns
    -------
    ExportReport

    Raises
    ------
    ExportVerificationError
        The full-precision controller is worse than the design, or no order passes (nothing is
        written; the report is attached to the error).
    """
    start = time.perf_counter()
    options = ExportOptions() if options is None else options
    check_instance(options, "options", ExportOptions)
    o = options
    real, tolerance, distance_floor_m, orders = o.real, o.tolerance, o.distance_floor_m, list(o.orders)
    full_order, periods, substeps, imperfections = o.full_order, o.periods, o.substeps, o.imperfections
    representation, drop_states, check_c, compiler = o.representation, o.drop_states, o.check_c, o.compiler
    dt = float(controller.dt)
    if substeps is None:
        substeps = max(2, int(math.ceil(dt / 0.01 - 1e-9)))
    if isinstance(imperfections, str):   # "rig"
        imperfections = rig.imperfections.loop
    r = _design_run(controller, rig, x0, xd0, seed, substeps, imperfections)
    if r.summary().diverged:
        raise ExportVerificationError("the design itself diverges on the truth plant")
    period = getattr(controller.reference, "period", None)
    horizon_steps = len(controller.times)
    window = period if period is not None else horizon_steps * dt
    e_d = float(np.sqrt(np.mean(r.position_error[r.t >= r.t[-1] - window - 1e-9] ** 2)))
    rep = representation
    if rep == "auto":
        rep = "fourier" if period is not None and horizon_steps * dt >= period - 1e-9 else "plan"
    steps = max(int(math.ceil(periods * period / dt)) if rep == "fourier" else 0, horizon_steps)
    loop_options = ComponentLoopOptions(substeps=substeps, divergence_error=max(0.2, 10 * e_d + 0.05),
                                        imperfections=imperfections)

    def loop(data, component=None):
        comp = ControllerRuntime(data) if component is None else component
        return run_component_loop(comp, rig, controller, x0, xd0, steps=steps, seed=seed, options=loop_options)

    def build(order, real_):
        return controller_data(controller, rig=rig, options=ControllerDataOptions(
            representation=rep, fourier_order=order, real=real_, drop_states=drop_states))

    full = loop(build(full_order if rep == "fourier" else 0, "float64"))
    e_f = e_w = None
    if full.diverged_at_s is None:
        e_f = full.rms_last(window)
        in_w = (full.t >= r.t[-1] - window - 1e-9) & (full.t <= r.t[-1] + 1e-9)   # the design's last period
        e_w = float(np.sqrt(np.mean(full.position_error[in_w] ** 2)))
    design_floor = 0.2 * distance_floor_m   # the allowance of step 1 (docstring): absolute where e_d is 0
    accept = (e_f is not None and e_w <= (1.0 + tolerance) * e_d + design_floor
              and e_f <= 2.0 * e_d + design_floor)
    peak_f = float(np.max(full.position_error)) if e_f is not None else None
    checks = [{"order": full_order if rep == "fourier" else None, "full_precision": True, "rms_error_m": e_f,
               "rms_error_design_window_m": e_w, "relative_to_design": _relative(e_w, e_d),
               "passed": bool(accept)}]
    chosen = None

    def check(order) -> bool:
        res = loop(build(order, "float64"))
        ok = res.diverged_at_s is None
        e_h = res.rms_last(window) if ok else None
        dist = float(np.max(np.hypot(*(res.x[:, :2] - full.x[:, :2]).T))) if ok else None
        passed = ok and _within(e_h, e_f, tolerance, RMS_FLOOR_M) and dist <= tolerance * peak_f + distance_floor_m
        checks.append({"order": order, "full_precision": False, "rms_error_m": e_h,
                       "relative_to_full": _relative(e_h, e_f),
                       "peak_distance_to_full_m": dist, "passed": bool(passed)})
        return bool(passed)

    if accept and rep == "fourier":
        chosen = next((order for order in orders if check(order)), None)
    spec = chosen
    if chosen is not None and o.reduce_model_order:
        # the prediction model is the largest group: its own order as low as the same check allows
        for h in range(chosen - 1, 0, -1):
            if not check({"Ad": h, "Bd": chosen, "C": chosen, "M": chosen, "K": chosen, "u_ff": chosen,
                          "y_ref": chosen}):
                break
            spec = dict(checks[-1]["order"])
    base = dict(design_rms_error_m=e_d, tolerance=tolerance, checks=tuple(checks), periods=periods)
    if not accept or (rep == "fourier" and chosen is None):
        data = build(full_order if rep == "fourier" else 0, real)
        report = ExportReport(files=(), data=data, fourier_order=None, c_check=None, footprint=data.footprint(),
                              wall_time_s=time.perf_counter() - start, **base)
        if e_f is None:
            why = "the full-precision exported controller diverges"
        elif not accept:
            why = (f"the full-precision exported controller's RMS error ({e_w:.4g} m over the design's last period, "
                   f"{e_f:.4g} m over the check run's) is not within {100 * tolerance:g} % of the design's "
                   f"{e_d:.4g} m plus {design_floor:.2g} m (at most twice it plus that over the check run)")
        else:
            why = f"no Fourier order in {orders} stays within {100 * tolerance:g} % of the full-precision controller"
        raise ExportVerificationError(f"export_controller: {why} on the truth plant (checks: {checks})", report)
    data = build(spec if spec is not None else 0, real)
    files = write_controller_files(data, directory)
    twin_rms = next(c["rms_error_m"] for c in reversed(checks) if c["passed"])   # the exported one's
    c_check = None
    if check_c is None:
        check_c = shutil.which(compiler) is not None
    if check_c:
        with tempfile.TemporaryDirectory(prefix="ballctl_sil_") as tmp:
            res = loop(data, CController.build(directory, compiler=compiler, out_dir=tmp))
        c_rms = res.rms_last(window) if res.diverged_at_s is None else None
        c_check = {"real": real, "rms_error_m": c_rms,
                   "relative_to_twin": _relative(c_rms, twin_rms),
                   "passed": _within(c_rms, twin_rms, tolerance, RMS_FLOOR_M)}
    return ExportReport(files=files, data=data, fourier_order=chosen, c_check=c_check, footprint=data.footprint(),
                        wall_time_s=time.perf_counter() - start, **base)
