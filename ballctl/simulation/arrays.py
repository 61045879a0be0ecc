r"""The closed loop's arrays, built and checked once, and each run's draws.

:class:`LoopArrays` holds what every run of one controller on one truth-plant
layout shares: control times, the reference in the truth's coordinates, the
feedforward, the gains, the state selection, the rig's limits, the Kalman
filter and its sensors (:class:`EstimatorArrays`), the integration settings
and the divergence stop. :class:`RunDraws` holds what differs per run: plant
parameters, initial states, measurement errors, sensor noise draws and bias,
lost samples, sample-instant errors and delays (:func:`draw_runs` draws them
from per-run seeds, in the order the loop uses them).

Both loops take these objects as they are: the compiled batched loop
(:func:`ballctl.simulation.engine.run_closed_loop`) and the Python driver of a
controller component (:func:`ballctl.simulation.component.run_loop`). Nothing
else packs the loop's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import partial

import numpy as np

from .._errors import ShapeError
from ..hardware import LoopImperfections, RigLimits
from ..plants.kernels import LOOP_KERNELS
from .loop_step import delay_segments, quantize_clamp

__all__ = ["EstimatorArrays", "LoopArrays", "RunDraws", "sensor_draws", "imperfection_draws", "draw_runs"]


def _arr(value, dtype, ndim: int, name: str) -> np.ndarray:
    """C-contiguous, writable array of ``dtype`` and rank ``ndim`` (one numba specialization for every call)."""
    out = np.require(np.asarray(value, dtype=dtype), requirements=["C", "W", "A"])   # copies only if it must
    if out.ndim != ndim:
        raise ShapeError(f"{name} must be a rank-{ndim} array, got shape {out.shape}")
    return out


@dataclass(frozen=True)
class EstimatorArrays:
    """The sensing and Kalman filter of an output-feedback loop, as plain arrays (the truth's coordinates).

    Attributes
    ----------
    sampled : ndarray of bool, shape (Ks, ny)
        Whether each signal is sampled at control step k (no sensing at ``k >= Ks``).
    C : ndarray, shape (Kt, ny, Ne)
        Measurement matrices (Kt: steps the filter covers).
    update_gains : ndarray, shape (Kt, Ne, ny)
        Kalman measurement-update gains.
    Ad, Bd : ndarray, shapes (Kt, Ne, Ne), (Kt, Ne, nu)
        The filter's discrete model (prediction), with its disturbance states and integrators.
    signal_index : ndarray of int, shape (ny,)
        Index of each signal among the truth's coordinates.
    signal_reference : ndarray, shape (K, ny)
        Reference value of each signal at the control times (m or rad).
    bias : ndarray, shape (ny,)
        The sensors' own bias (m or rad); a run may add to it (:class:`RunDraws`).
    noise_std : ndarray, shape (ny,)
        Sensor noise std (m or rad).
    latency_steps : int
        Control steps until every sample of a step has arrived.
    sensor_widths : tuple of int
        Signals of each sensor, in order (a lost frame loses all of its sensor's signals).
    """

    sampled: np.ndarray
    C: np.ndarray
    update_gains: np.ndarray
    Ad: np.ndarray
    Bd: np.ndarray
    signal_index: np.ndarray
    signal_reference: np.ndarray
    bias: np.ndarray
    noise_std: np.ndarray
    latency_steps: int
    sensor_widths: tuple = ()

    @property
    def n_signals(self) -> int:
        """Measured signals ny."""
        return int(self.signal_index.shape[0])


@dataclass(frozen=True, kw_only=True)
class LoopArrays:
    r"""One controller on one truth-plant layout, as both loops take it (packed and checked once, here).

    Every array is stored C-contiguous with a fixed dtype (one numba
    specialization serves every request); the truth plant's coordinates
    index everything.

    Attributes
    ----------
    kernel_code : int
        Index of the truth plant's kernels in
        :data:`ballctl.plants.kernels.LOOP_KERNELS` (-1: none, Python driver only).
    n_constraints : int
        Constraint rows m + l of the truth plant.
    dt : float
        Control period in s.
    times : ndarray, shape (K,)
        Control times in s (K - 1 steps are run).
    x_ref, xd_ref : ndarray, shape (K, n)
        Reference coordinates and velocities at the control times.
    u_ref : ndarray, shape (K, nu)
        Feedforward input.
    gains : ndarray, shape (K - 1, nu, Ne)
        Feedback gains on the design's N states (state feedback) or the filter's Ne states.
    selection : ndarray of int, shape (N,)
        Index of each controller state in ``(x, xd)``.
    tracked_index : ndarray of int, shape (p,)
        Truth coordinates of the tracked point (the plant's ``tracked_coordinates``).
    feedback : bool
        False runs open loop (``u = u_ff``; the rig limits still apply).
    limits : RigLimits
        Tilt, slew, quantum and the actuation latency of every run without a drawn one.
    substeps : int
        RK4 steps per held segment.
    stabilization : (float, float)
        Baumgarte gains in 1/s (None is stored as (0, 0): none).
    divergence_error : float
        Stop a run whose tracked point is farther than this from its reference (m; None is stored as 0: never).
    deadband : float
        Actuator dead band in input units (0: none).
    estimator : EstimatorArrays or None
        Output feedback through this filter; None: state feedback.
    rechart : bool
        Re-chart the truth ball after every step where its chart needs it (its kernel module's
        ``keep_chart``): a truth plant's simulation asks for it
        (:func:`~ballctl.simulation.closed_loop.controller_loop`), a loop that builds a reference does not
        (its angles must stay continuous). It is
        kept only when the module has a chart (``CHART_COORDINATES``) and the controller does not read its angles
        (output feedback, or a state selection without them and their rates); False otherwise.
    n : int
        Truth coordinates (derived).
    y_ref : ndarray, shape (K, 2n)
        ``(x_ref, xd_ref)`` side by side (derived).
    u_start : ndarray, shape (nu,)
        The input held before the first command: the feedforward, quantized and within the tilt limit (derived).
    """

    kernel_code: int
    n_constraints: int
    dt: float
    times: np.ndarray
    x_ref: np.ndarray
    xd_ref: np.ndarray
    u_ref: np.ndarray
    gains: np.ndarray
    selection: np.ndarray
    tracked_index: np.ndarray
    feedback: bool = True
    limits: RigLimits = field(default_factory=RigLimits)
    substeps: int = 1
    stabilization: tuple | None = (10.0, 10.0)
    divergence_error: float | None = None
    deadband: float = 0.0
    estimator: EstimatorArrays | None = None
    rechart: bool = False
    n: int = field(init=False)
    y_ref: np.ndarray = field(init=False, repr=False)
    u_start: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        put = partial(object.__setattr__, self)
        limits = self.limits if self.limits is not None else RigLimits()
        put("limits", limits)
        T = _arr(self.times, np.float64, 1, "times")
        K = T.shape[0]
        x_ref = _arr(np.asarray(self.x_ref)[:K], np.float64, 2, "x_ref")
        xd_ref = _arr(np.asarray(self.xd_ref)[:K], np.float64, 2, "xd_ref")
        if x_ref.shape != xd_ref.shape or x_ref.shape[0] != K:
            raise ShapeError(f"x_ref and xd_ref must have shape ({K}, n), got {x_ref.shape} and {xd_ref.shape}")
        u_ref = _arr(np.asarray(self.u_ref)[:K], np.float64, 2, "u_ref")
        if u_ref.shape[0] != K:
            raise ShapeError(f"u_ref must have {K} rows, got {u_ref.shape[0]}")
        gains = _arr(np.asarray(self.gains)[:K - 1], np.float64, 3, "gains")
        sel = _arr(self.selection, np.int64, 1, "selection")
        N, nu = sel.shape[0], u_ref.shape[1]
        if gains.shape[0] != K - 1 or gains.shape[1] != nu:
            raise ShapeError(f"gains must have shape ({K - 1}, {nu}, Ne), got {gains.shape}")
        Ne = gains.shape[2]
        e = self.estimator
        if e is None and Ne != N:
            raise ShapeError(f"state feedback: gains must act on the {N} selected states, got {Ne}")
        if e is not None:
            ny = int(np.shape(e.signal_index)[0])
            e = replace(
                e, sampled=_arr(e.sampled, np.bool_, 2, "sampled"), C=_arr(e.C, np.float64, 3, "C"),
                update_gains=_arr(e.update_gains, np.float64, 3, "update_gains"),
                Ad=_arr(e.Ad, np.float64, 3, "Ad"), Bd=_arr(e.Bd, np.float64, 3, "Bd"),
                signal_index=_arr(e.signal_index, np.int64, 1, "signal_index"),
                signal_reference=_arr(np.asarray(e.signal_reference)[:K], np.float64, 2, "signal_reference"),
                bias=_arr(np.broadcast_to(e.bias, (ny,)), np.float64, 1, "bias"),
                noise_std=_arr(e.noise_std, np.float64, 1, "noise_std"), latency_steps=int(e.latency_steps),
                sensor_widths=tuple(int(w) for w in e.sensor_widths) or (ny,))
            if e.Ad.shape[1] != Ne:
                raise ShapeError(f"gains act on {Ne} states but the estimator's model has {e.Ad.shape[1]}")
            if e.signal_reference.shape != (K, ny):
                raise ShapeError(f"signal_reference must have shape ({K}, {ny}), got {e.signal_reference.shape}")
        u_start = u_ref[0].copy()
        quantize_clamp(u_start, float(limits.quantum or 0.0), float(limits.max_angle or 0.0))
        stab = self.stabilization
        for name, value in (("kernel_code", int(self.kernel_code)), ("n_constraints", int(self.n_constraints)),
                            ("dt", float(self.dt)), ("times", T), ("x_ref", x_ref), ("xd_ref", xd_ref),
                            ("u_ref", u_ref), ("gains", gains), ("selection", sel),
                            ("tracked_index", _arr(self.tracked_index, np.int64, 1, "tracked_index")),
                            ("feedback", bool(self.feedback)), ("substeps", int(self.substeps)),
                            ("stabilization", (0.0, 0.0) if stab is None else (float(stab[0]), float(stab[1]))),
                            ("divergence_error", float(self.divergence_error or 0.0)),
                            ("deadband", float(self.deadband)), ("estimator", e), ("n", int(x_ref.shape[1])),
                            ("y_ref", np.ascontiguousarray(np.concatenate([x_ref, xd_ref], axis=1))),
                            ("u_start", u_start)):
            put(name, value)
        put("rechart", bool(self.rechart) and _rechart_allowed(self.kernel_code, sel, self.n, e is not None))

    @property
    def quantum(self) -> float:
        """Command resolution in rad (0: continuous)."""
        return float(self.limits.quantum or 0.0)

    @property
    def max_angle(self) -> float:
        """Tilt limit in rad (0: none)."""
        return float(self.limits.max_angle or 0.0)

    @property
    def max_rate(self) -> float:
        """Slew limit in rad/s (0: none)."""
        return float(self.limits.max_rate or 0.0)

    @property
    def delay_s(self) -> float:
        """Actuation latency in s."""
        return float(self.limits.delay)

    @property
    def K(self) -> int:
        """Control samples (steps + 1)."""
        return int(self.times.shape[0])

    @property
    def n_signals(self) -> int:
        """Measured signals (0 for state feedback)."""
        return 0 if self.estimator is None else self.estimator.n_signals


@dataclass(frozen=True)
class RunDraws:
    """What differs between the B runs of a batch (leading run axis).

    Attributes
    ----------
    params : ndarray, shape (B, P)
        Kernel parameters of each run's truth plant.
    x0, xd0 : ndarray, shape (B, n)
        Initial truth states.
    measurement_error : ndarray, shape (B, K, N)
        State feedback: added to the true reduced state (zeros with an estimator).
    standard_normal : ndarray, shape (B, K, ny)
        Output feedback: the sensor noise's standard normal draws.
    bias : ndarray, shape (B, ny)
        Sensor bias of each run in m or rad (the sensors' own plus any drawn).
    received : ndarray of bool, shape (B, K, ny)
        False where a sample is lost.
    sample_shift : ndarray, shape (B, K)
        Error of each step's sample instant in s.
    delay_s : ndarray, shape (B,)
        Actuation latency of each run in s.
    """

    params: np.ndarray
    x0: np.ndarray
    xd0: np.ndarray
    measurement_error: np.ndarray
    standard_normal: np.ndarray
    bias: np.ndarray
    received: np.ndarray
    sample_shift: np.ndarray
    delay_s: np.ndarray

    def __post_init__(self) -> None:
        for name, dtype, ndim in (("params", np.float64, 2), ("x0", np.float64, 2), ("xd0", np.float64, 2),
                                  ("measurement_error", np.float64, 3), ("standard_normal", np.float64, 3),
                                  ("bias", np.float64, 2), ("received", np.bool_, 3), ("sample_shift", np.float64, 2),
                                  ("delay_s", np.float64, 1)):
            object.__setattr__(self, name, _arr(getattr(self, name), dtype, ndim, name))

    def __len__(self) -> int:
        return int(self.x0.shape[0])

    def delay_split(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Whole steps and fraction (s) of each run's delay (:func:`~ballctl.simulation.loop_step.delay_segments`).

        Parameters
        ----------
        dt : float
            Control period in s.
        """
        splits = [delay_segments(float(v), dt) for v in self.delay_s]
        return (np.array([w for w, _ in splits], dtype=np.int64), np.array([f for _, f in splits], dtype=float))

    def part(self, runs: slice) -> "RunDraws":
        """The runs ``runs`` of the batch (e.g. one thread's share).

        Parameters
        ----------
        runs : slice
        """
        return RunDraws(*(getattr(self, f.name)[runs] for f in fields(RunDraws)))


def sensor_draws(rng: np.random.Generator, K: int, steps_available: int, n_signals: int) -> np.ndarray:
    """The standard normals of one run's sensor noise, in the loop's order, shape (K, ny).

    ``ny`` values at every step ``k < steps_available`` (sampled or not); the
    rows of later steps are zero (unused).

    Parameters
    ----------
    rng : numpy.random.Generator
        The run's generator.
    K : int
        Control samples of the run (steps + 1).
    steps_available : int
        Steps the controller (and its filter) covers.
    n_signals : int
        Measured signals ny.
    """
    z = np.zeros((K, n_signals))
    rows = min(K, steps_available)
    z[:rows] = rng.standard_normal((rows, n_signals))
    return z


def imperfection_draws(seed, K: int, sensor_widths, imperfections: LoopImperfections | None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """A run's lost samples and sample-instant errors, from a stream of their own.

    The stream is a child of the run's seed (``spawn_key + (1,)``), so the
    sensor-noise draws are the same with and without imperfections.

    Parameters
    ----------
    seed : int, SeedSequence or None
        The run's seed.
    K : int
        Control samples of the run.
    sensor_widths : sequence of int
        Signals of each sensor (a lost frame loses every signal of its sensor); empty for state feedback.
    imperfections : LoopImperfections or None
        ``frame_drop`` (probability per sensor sample) and ``timing_jitter_s`` (std in s of the sample instant).

    Returns
    -------
    received : ndarray of bool, shape (K, ny)
        False where a sample is lost.
    sample_shift : ndarray, shape (K,)
        Error of each step's sample instant in s.
    """
    widths = [int(w) for w in sensor_widths]
    ny = sum(widths)
    received = np.ones((K, ny), dtype=bool)
    shift = np.zeros(K)
    if imperfections is None or (imperfections.frame_drop == 0 and imperfections.timing_jitter_s == 0):
        return received, shift
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rng = np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (1,)))
    if ny and imperfections.frame_drop > 0:
        col = 0
        for width in widths:
            received[:, col:col + width] = (rng.random(K) >= imperfections.frame_drop)[:, None]
            col += width
    if imperfections.timing_jitter_s > 0:
        shift = imperfections.timing_jitter_s * rng.standard_normal(K)
    return received, shift


def draw_runs(loop: LoopArrays, seeds, params, x0, xd0, *, noise_std=None, imperfections=None,
              steps_available: int | None = None) -> RunDraws:
    """Each run's draws from its own seed, in the loop's order (the noise first, then the imperfections' stream).

    Parameters
    ----------
    loop : LoopArrays
    seeds : sequence of int or SeedSequence
        One per run.
    params : ndarray, shape (B, P) or (P,)
        Kernel parameters per run (one row for all runs).
    x0, xd0 : ndarray, shape (B, n)
        Initial truth states.
    noise_std : ndarray, shape (N,), optional
        State feedback: std of the measurement noise on each controller state (m, rad, m/s or rad/s).
    imperfections : LoopImperfections, optional
        Lost samples and timing jitter (output feedback).
    steps_available : int, optional
        Steps whose sensor noise is drawn (default: every step).

    Returns
    -------
    RunDraws
    """
    seeds = list(seeds)
    B, K, N, ny = len(seeds), loop.K, loop.selection.shape[0], loop.n_signals
    X0 = _arr(x0, np.float64, 2, "x0")
    XD0 = _arr(xd0, np.float64, 2, "xd0")
    if X0.shape != (B, loop.n) or XD0.shape != (B, loop.n):
        raise ShapeError(f"x0 and xd0 must have shape ({B}, {loop.n}), got {X0.shape} and {XD0.shape}")
    P = _arr(np.broadcast_to(np.asarray(params, dtype=float), (B, np.shape(params)[-1])), np.float64, 2, "params")
    err = np.zeros((B, K, N))
    z = np.zeros((B, K, ny))
    received = np.ones((B, K, ny), dtype=bool)
    shift = np.zeros((B, K))
    widths = () if loop.estimator is None else loop.estimator.sensor_widths
    noisy = noise_std is not None and np.any(np.asarray(noise_std) != 0)
    for i, s in enumerate(seeds):   # a generator only for a run that draws (identification runs thousands)
        if loop.estimator is not None:
            z[i] = sensor_draws(np.random.default_rng(s), K, K if steps_available is None else steps_available, ny)
            received[i], shift[i] = imperfection_draws(s, K, widths, imperfections)
        elif noisy:
            err[i] = np.asarray(noise_std, dtype=float) * np.random.default_rng(s).standard_normal((K, N))
    bias = np.zeros((B, ny)) if loop.estimator is None else np.repeat(loop.estimator.bias[None], B, axis=0)
    return RunDraws(P, X0, XD0, err, z, bias, received, shift, np.full(B, loop.delay_s))


def _rechart_allowed(kernel_code: int, selection: np.ndarray, n: int, output_feedback: bool) -> bool:
    """Whether the loops can re-chart the truth (:attr:`LoopArrays.rechart`) without the controller noticing."""
    if not 0 <= kernel_code < len(LOOP_KERNELS):
        return False
    module = LOOP_KERNELS[kernel_code]
    chart = tuple(getattr(module, "CHART_COORDINATES", ()))   # every loop kernel has keep_chart (the engine's)
    if not chart:
        return False
    read = {int(i) for i in selection}
    return output_feedback or not read & ({*chart} | {n + i for i in chart})
