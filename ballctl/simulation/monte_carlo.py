r"""Monte Carlo runs of a tracking controller on uncertain plants, on one core or a cluster.

:func:`monte_carlo` draws, for every run, the plant's physical parameters
(those it declares in ``physical_parameters``, e.g. the ball's mass, radius
and inertia, applied through its ``with_parameters``), a constant sensor bias
per coordinate, the input latency and an initial offset from the
distributions in :class:`Uncertainty`, adds Gaussian sensor
noise, and runs the closed loop through the compiled batched engine
(:mod:`ballctl.simulation.engine`). A controller with an estimator (LQG) runs its Kalman
filter on its sensors (their noise, rate and latency; a drawn ``bias`` adds
to a sensor's), as :func:`ballctl.simulate_closed_loop` does. It returns per-run metrics, percentile bands of the
position error over time and the failure rate.

Reproducibility: the run seeds are ``numpy.random.SeedSequence(seed).spawn(n_runs)``
and run ``i`` draws everything from its own seed, in a fixed order, inside
the chunk that runs it. The results therefore do not depend on
``chunk_size`` or on where the chunks run.

Scaling out: chunks of ``chunk_size`` runs are submitted to ``executor``, any
:class:`concurrent.futures.Executor`. ``None`` runs them in this process;
a :class:`~concurrent.futures.ThreadPoolExecutor` uses several cores (the
compiled loop releases the GIL); a Dask client's executor runs them on a
cluster (install ``ballctl[distributed]``)::

    from dask.distributed import Client
    client = Client("tcp://scheduler:8786")      # or Client(LocalCluster(...))
    result = ballctl.monte_carlo(ctrl, 10_000, executor=client.get_executor())

Every worker needs ballctl installed; the chunks carry the controller's arrays,
not its Python objects' references.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError, ParameterTypeError
from .._validation import check_positive
from .arrays import LoopArrays, RunDraws, sensor_draws
from .closed_loop import ClosedLoopOptions, controller_loop
from .engine import kernel_code, run_closed_loop
from ..design.tracking import TrackingController

__all__ = ["Normal", "Uniform", "Uncertainty", "MonteCarloSettings", "MonteCarloResult", "monte_carlo"]


@dataclass(frozen=True)
class Normal:
    """Gaussian distribution of a parameter, in the parameter's unit.

    Attributes
    ----------
    mean : float
    std : float
        Standard deviation (>= 0).
    """

    mean: float
    std: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.mean) and np.isfinite(self.std)) or self.std < 0:
            raise ParameterError(f"Normal needs a finite mean and a finite std >= 0, got {self.mean!r}, {self.std!r}")

    def sample(self, rng: np.random.Generator) -> float:
        """One draw from ``rng``.

        Parameters
        ----------
        rng : numpy.random.Generator
            The run's generator.
        """
        return float(self.mean + self.std * rng.standard_normal())


@dataclass(frozen=True)
class Uniform:
    """Uniform distribution of a parameter on ``[low, high]``, in the parameter's unit.

    Attributes
    ----------
    low, high : float
        Bounds (``low <= high``).
    """

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.low) and np.isfinite(self.high)) or self.high < self.low:
            raise ParameterError(f"Uniform needs finite low <= high, got {self.low!r}, {self.high!r}")

    def sample(self, rng: np.random.Generator) -> float:
        """One draw from ``rng``.

        Parameters
        ----------
        rng : numpy.random.Generator
            The run's generator.
        """
        return float(rng.uniform(self.low, self.high))


def _check_distribution(value, name: str) -> None:
    if value is not None and not isinstance(value, (Normal, Uniform)):
        raise ParameterTypeError(f"{name} must be a Normal or Uniform distribution or None, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class Uncertainty:
    """What varies from run to run (everything optional; what is not given keeps its nominal value).

    Attributes
    ----------
    parameters : dict
        Distribution of a physical parameter of the plant per run, by the names
        of its ``physical_parameters`` (for the ball-plates: ``mass`` in kg,
        ``radius`` in m, ``inertia`` in kg m^2; an inertia not drawn follows the
        plant's rule, the solid sphere's ``2/5 m R^2`` of the drawn mass and radius).
    noise_std : dict
        Standard deviation of white measurement noise per coordinate name, or
        ``"<name>_rate"``, in m, rad, m/s or rad/s (as in
        :func:`ballctl.simulate_closed_loop`).
    bias : dict
        Distribution of a constant sensor bias per run, by the same names and units.
    latency : Normal or Uniform, optional
        Input delay in s (draws must be >= 0; a negative draw raises).
    initial_offset : dict
        Distribution of the initial offset per coordinate name in m or rad
        (velocities are completed from the constraints).
    """

    parameters: Mapping[str, Normal | Uniform] = field(default_factory=dict)
    noise_std: Mapping[str, float] = field(default_factory=dict)
    bias: Mapping[str, Normal | Uniform] = field(default_factory=dict)
    latency: Normal | Uniform | None = None
    initial_offset: Mapping[str, Normal | Uniform] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_distribution(self.latency, "latency")
        for label in ("parameters", "bias", "initial_offset"):
            if not isinstance(getattr(self, label), Mapping):
                raise ParameterTypeError(f"{label} must be a mapping of name to distribution, got "
                                         f"{type(getattr(self, label)).__name__}")
            for key, dist in getattr(self, label).items():
                _check_distribution(dist, f"{label}[{key!r}]")
        for key, value in self.noise_std.items():
            if not np.isfinite(value) or value < 0:
                raise ParameterError(f"noise_std[{key!r}] must be finite and >= 0 (m, rad, m/s or rad/s), got {value}")
        for label in ("parameters", "noise_std", "bias", "initial_offset"):
            object.__setattr__(self, label, dict(getattr(self, label)))


@dataclass(frozen=True)
class MonteCarloResult:
    """Per-run metrics, drawn parameters and error bands of a Monte Carlo study.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Control times in s.
    metrics : dict of ndarray, each shape (n_runs,)
        ``final_error``, ``steady_state_error`` (RMS over the last 20 % of
        the run), ``max_error`` (m), ``peak_<input>`` (rad), ``failed`` (bool).
    samples : dict of ndarray, each shape (n_runs,)
        What each run drew: ``mass`` (kg), ``radius`` (m), ``inertia`` (kg m^2),
        ``latency`` (s), ``bias_<name>``, ``offset_<name>``.
    percentiles : ndarray, shape (P,)
        The percentiles of the bands, in %.
    bands : ndarray, shape (P, K)
        Percentiles over runs of the position error in m at each time (a
        diverged run counts as an infinite error).
    failure_rate : float
        Fraction of runs that diverged or ended farther than ``failure_error`` m.
    failure_error : float
        The threshold in m.
    wall_time_s : float
        Wall-clock seconds.
    """

    t: np.ndarray
    metrics: dict
    samples: dict
    percentiles: np.ndarray
    bands: np.ndarray
    failure_rate: float
    failure_error: float
    wall_time_s: float

    @property
    def n_runs(self) -> int:
        """Number of runs."""
        return int(self.metrics["final_error"].shape[0])

    def plot(self, *, ax=None):
        """The percentile bands (:func:`ballctl.figures.plotting.plot_percentile_bands`).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw into these axes.
        """
        from ..figures.plotting import plot_percentile_bands

        return plot_percentile_bands(self.t, self.bands, self.percentiles, ax=ax,
                                     title=f"{self.n_runs} runs, failure rate {100 * self.failure_rate:.1f} %")


@dataclass(frozen=True)
class _Job:
    """Everything a chunk needs (plain arrays and small frozen objects, picklable)."""

    system: object
    partition: object
    loop: LoopArrays
    coordinate_names: tuple
    state_names: tuple
    x0: np.ndarray
    xd0: np.ndarray
    uncertainty: Uncertainty
    noise: np.ndarray
    failure_error: float
    steps_available: int = 0
    signal_names: tuple = ()


def _index_of(name: str, coords: tuple, states: tuple, label: str) -> int:
    if name in states:
        return states.index(name)
    base = name[:-5] if name.endswith("_rate") else name
    if base not in coords:
        raise ParameterError(f"{label}: unknown coordinate {name!r}; coordinates are {coords}")
    return -1  # a coordinate the controller does not measure


def _run_chunk(job: _Job, seeds) -> dict:
    """Run the runs of ``seeds`` (one SeedSequence each) through the compiled loop."""
    B = len(seeds)
    unc = job.uncertainty
    loop = job.loop
    K, N, n = loop.K, loop.selection.shape[0], job.x0.shape[0]
    pvecs, X0, XD0, err, delays = [], np.empty((B, n)), np.empty((B, n)), np.zeros((B, K, N)), np.empty(B)
    ny = loop.n_signals
    draws = np.zeros((B, K, ny))
    sensor_bias = np.zeros((B, ny)) if loop.estimator is None else np.repeat(loop.estimator.bias[None], B, axis=0)
    names = tuple(job.system.physical_parameters) if hasattr(job.system, "physical_parameters") else ()
    samples = {key: np.empty(B) for key in (*names, "latency")}
    for key in unc.bias:
        samples[f"bias_{key}"] = np.empty(B)
    for key in unc.initial_offset:
        samples[f"offset_{key}"] = np.empty(B)
    for i, s in enumerate(seeds):
        rng = np.random.default_rng(s)
        changes = {name: unc.parameters[name].sample(rng) for name in names if name in unc.parameters}
        plant = job.system.with_parameters(**changes) if changes else job.system
        pvecs.append(plant.kernel_parameters)
        for name, value in (plant.physical_parameters.items() if names else ()):
            samples[name][i] = value
        delay = loop.delay_s if unc.latency is None else unc.latency.sample(rng)
        if not np.isfinite(delay) or delay < 0:
            raise ParameterError(f"uncertainty.latency drew {delay!r} s for run {i}; latency must be >= 0 s "
                                 "(use a distribution without negative values, e.g. Uniform(0, 0.02))")
        delays[i] = samples["latency"][i] = delay
        bias = np.zeros(N)
        for key, dist in sorted(unc.bias.items()):
            value = dist.sample(rng)
            samples[f"bias_{key}"][i] = value
            if loop.estimator is not None:  # output feedback: on the sensor reading of that signal
                sensor_bias[i, job.signal_names.index(key)] += value
                continue
            j = job.state_names.index(key) if key in job.state_names else -1
            if j >= 0:
                bias[j] = value
        x0 = job.x0.copy()
        for key, dist in sorted(unc.initial_offset.items()):
            value = dist.sample(rng)
            samples[f"offset_{key}"][i] = value
            x0[job.coordinate_names.index(key)] += value
        X0[i] = x0
        XD0[i] = job.partition.complete_velocities(plant, x0, job.xd0)
        if loop.estimator is None:
            err[i] = bias + job.noise * rng.standard_normal((K, N))
        else:
            draws[i] = sensor_draws(rng, K, job.steps_available, ny)
    runs = RunDraws(np.stack(pvecs), X0, XD0, err, draws, sensor_bias, np.ones((B, K, ny), dtype=bool),
                    np.zeros((B, K)), delays)
    out = run_closed_loop(loop, runs)
    idx = list(loop.tracked_index)
    error = np.linalg.norm(out.x[:, :, idx] - loop.y_ref[None, :, idx], axis=2)
    times = loop.times
    tail = times >= times[0] + 0.8 * (times[-1] - times[0])
    diverged = out.status >= 0
    with np.errstate(invalid="ignore"):
        metrics = {"final_error": error[:, -1], "steady_state_error": np.sqrt(np.mean(error[:, tail] ** 2, axis=1)),
                   "max_error": np.max(error, axis=1)}
        for j in range(out.u.shape[2]):
            metrics[f"peak_input_{j}"] = np.max(np.abs(out.u[:, :, j]), axis=1)
        metrics["failed"] = diverged | ~(error[:, -1] <= job.failure_error)
    return {"error": error, "metrics": metrics, "samples": samples}


@dataclass(frozen=True, kw_only=True)
class MonteCarloSettings:
    """Where and how the runs of :func:`monte_carlo` run and what they report.

    Attributes
    ----------
    executor : concurrent.futures.Executor, optional
        Where the chunks run (``None``: here, one after the other). A Dask
        client's ``get_executor()`` runs them on its cluster.
    chunk_size : int
        Runs per chunk (>= 1); does not change the results.
    failure_error : float
        A run fails when it diverges or its final position error exceeds this, m.
    percentiles : sequence of float
        Percentiles of the error bands, in %.
    progress : callable, optional
        Called as ``progress(runs_done, n_runs)`` after each chunk.
    """

    executor: Executor | None = None
    chunk_size: int = 100
    failure_error: float = 0.01
    percentiles: tuple = (5.0, 25.0, 50.0, 75.0, 95.0)
    progress: Callable[[int, int], None] | None = None


def monte_carlo(controller: TrackingController, n_runs: int, *, uncertainty: Uncertainty | None = None,
                seed: int | np.random.SeedSequence | None = 0, x0=None, xd0=None,
                options: ClosedLoopOptions | None = None, settings: MonteCarloSettings | None = None
                ) -> MonteCarloResult:
    """Run ``n_runs`` closed loops of ``controller`` on randomly perturbed plants (see the module docstring).

    Parameters
    ----------
    controller : TrackingController
        From :func:`ballctl.design_tracking_lqr` or :func:`ballctl.ball_plate.design.design_for_rig`;
        its plant must have compiled loop kernels (a parameter sample changes
        what the plant's ``physical_parameters`` name, through its ``with_parameters``).
    n_runs : int
        Number of runs (>= 1).
    uncertainty : Uncertainty, optional
        What varies per run (default: nothing, all runs equal).
    seed : int or SeedSequence or None
        Root seed; run ``i`` uses ``SeedSequence(seed).spawn(n_runs)[i]``.
    x0, xd0 : array_like, shape (n,), optional
        Nominal initial state (default: the reference at the first control time).
    options : ClosedLoopOptions, optional
        The loop of every run: ``feedback`` (``"auto"``: the controller's
        Kalman filter on its sensors when it has an estimator; the sensors then
        carry the noise, ``uncertainty.noise_std`` must be empty and
        ``uncertainty.bias`` keys are measured signals, added to their
        sensors' bias), ``limits`` (``uncertainty.latency``, when given,
        replaces its delay), ``substeps`` and ``stabilization``. The runs are
        compiled RK4 (``method`` must be ``"rk4"``, the default here).
    settings : MonteCarloSettings, optional
        Executor, chunk size, failure threshold, percentiles and progress.

    Returns
    -------
    MonteCarloResult

    Examples
    --------
    >>> import numpy as np, ballctl
    >>> plant = ballctl.BallPlate()
    >>> ref = ballctl.CircularMotion(plant, 0.5, 1.0, 40.0)
    >>> part = ballctl.Partition.from_coordinates(plant, ["contact_x", "contact_y", "yaw"], ["lean", "roll"])
    >>> w = ballctl.LQRWeights(states=part.state_names[:6], Q=np.eye(6), R=np.eye(2))
    >>> ctrl = ballctl.design_tracking_lqr(plant, ref, part, dt=0.02, horizon=1.0, weights=w)
    >>> unc = ballctl.Uncertainty(parameters={"mass": ballctl.Normal(0.1, 0.005)},
    ...                           initial_offset={"contact_x": ballctl.Uniform(-0.01, 0.01)})
    >>> mc = ballctl.monte_carlo(ctrl, 8, uncertainty=unc, seed=1,
    ...                         settings=ballctl.simulation.MonteCarloSettings(chunk_size=3))
    >>> mc.bands.shape, bool(mc.failure_rate < 1)
    ((5, 51), True)
    """
    start = _time.perf_counter()
    options = ClosedLoopOptions(method="rk4") if options is None else options
    settings = MonteCarloSettings() if settings is None else settings
    if not isinstance(options, ClosedLoopOptions):
        raise ParameterTypeError(f"options must be a ClosedLoopOptions, got {type(options).__name__}")
    if not isinstance(settings, MonteCarloSettings):
        raise ParameterTypeError(f"settings must be a MonteCarloSettings, got {type(settings).__name__}")
    if options.method != "rk4" or options.model != "nonlinear" or options.feedback == "open":
        raise ParameterError("monte_carlo runs the compiled closed loop: options.method must be 'rk4', "
                             f"options.model 'nonlinear' and options.feedback not 'open', got {options.method!r}, "
                             f"{options.model!r}, {options.feedback!r}")
    for name in ("imperfections", "noise_std", "divergence_error"):
        if getattr(options, name):
            raise ParameterError(f"options.{name} is not used by monte_carlo (the noise is uncertainty.noise_std, a "
                                 "run fails by settings.failure_error); leave it None")
    executor, chunk_size, failure_error = settings.executor, settings.chunk_size, settings.failure_error
    percentiles, progress, limits = settings.percentiles, settings.progress, options.limits
    substeps, stabilization = options.substeps, options.stabilization
    output_feedback = {"auto": None, "output": True, "state": False}[options.feedback]
    if not isinstance(n_runs, (int, np.integer)) or isinstance(n_runs, bool) or n_runs < 1:
        raise ParameterError(f"n_runs must be an integer >= 1, got {n_runs!r}")
    if not isinstance(chunk_size, (int, np.integer)) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ParameterError(f"chunk_size must be an integer >= 1 (runs), got {chunk_size!r}")
    failure_error = check_positive(failure_error, "failure_error", "m")
    if executor is not None and not isinstance(executor, Executor):
        raise ParameterTypeError("executor must be a concurrent.futures.Executor (e.g. a Dask client's "
                                 f"get_executor()), "
                        f"got {type(executor).__name__}")
    unc = uncertainty or Uncertainty()
    system = controller.system
    if kernel_code(system) < 0:
        raise ParameterError(f"monte_carlo needs a plant with compiled loop kernels; {type(system).__name__} has none "
                             "(see ballctl.plants.kernels.LOOP_KERNELS)")
    declared = tuple(getattr(system, "physical_parameters", {}) or {})
    for key in unc.parameters:
        if key not in declared or not hasattr(system, "with_parameters"):
            raise ParameterError(f"uncertainty.parameters: {key!r} is not a physical parameter of "
                                 f"{type(system).__name__}; it declares {declared}")
    coords = system.coordinate_names
    names = controller.state_names
    noise = np.zeros(len(names))
    for key, value in unc.noise_std.items():
        j = _index_of(key, coords, names, "uncertainty.noise_std")
        if j >= 0:
            noise[j] = value
    est = controller.estimator
    if output_feedback is None:
        output_feedback = est is not None
    if output_feedback and est is None:
        raise ParameterError("options.feedback='output' needs a controller designed with sensors "
                             "(controller.estimator)")
    if output_feedback and unc.noise_std:
        raise ParameterError("uncertainty.noise_std is for state feedback; with output feedback the controller's "
                             "sensors carry the noise (design it with other sensors to change it)")
    for key in unc.bias:
        if output_feedback:
            if key not in est.signal_names:
                raise ParameterError(f"uncertainty.bias: {key!r} is not a measured signal; the sensors measure "
                                     f"{est.signal_names}")
        else:
            _index_of(key, coords, names, "uncertainty.bias")
    for key in unc.initial_offset:
        if key not in coords:
            raise ParameterError(f"uncertainty.initial_offset: unknown coordinate {key!r}; coordinates are {coords}")
    ref = controller.samples
    steps = len(controller.times)
    K = steps + 1
    n = system.n_coordinates
    x0 = ref.x[0].copy() if x0 is None else np.array(x0, dtype=float).reshape(n)
    xd0 = ref.xd[0].copy() if xd0 is None else np.array(xd0, dtype=float).reshape(n)
    if not getattr(system, "tracked_coordinates", ()):
        raise ParameterError(f"monte_carlo measures the position error of the plant's tracked_coordinates; "
                             f"{type(system).__name__} declares none")
    pct = np.asarray(percentiles, dtype=float)
    if pct.ndim != 1 or pct.size == 0 or np.any((pct < 0) | (pct > 100)):
        raise ParameterError(f"percentiles must be values in [0, 100] %, got {percentiles!r}")
    loop = controller_loop(controller, system, steps, mode="output" if output_feedback else "state", limits=limits,
                           solver=(int(substeps), stabilization))
    job = _Job(system, controller.partition, loop, coords, names, x0, xd0, unc, noise, failure_error, steps,
               tuple(est.signal_names) if output_feedback else ())
    seeds = np.random.SeedSequence(seed).spawn(n_runs) if not isinstance(seed, np.random.SeedSequence) \
        else seed.spawn(n_runs)
    chunks = [seeds[i:i + chunk_size] for i in range(0, n_runs, chunk_size)]
    parts: list = [None] * len(chunks)
    done = 0
    if executor is None:
        for c, chunk in enumerate(chunks):
            parts[c] = _run_chunk(job, chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, n_runs)
    else:
        futures = {executor.submit(_run_chunk, job, chunk): c for c, chunk in enumerate(chunks)}
        from concurrent.futures import as_completed

        for fut in as_completed(futures):
            c = futures[fut]
            parts[c] = fut.result()
            done += len(chunks[c])
            if progress is not None:
                progress(done, n_runs)
    error = np.concatenate([p["error"] for p in parts])
    metrics = {key: np.concatenate([p["metrics"][key] for p in parts]) for key in parts[0]["metrics"]}
    for j, name in enumerate(system.input_names):
        metrics[f"peak_{name}"] = metrics.pop(f"peak_input_{j}")
    samples = {key: np.concatenate([p["samples"][key] for p in parts]) for key in parts[0]["samples"]}
    with np.errstate(invalid="ignore"):
        # a diverged run counts as an infinite error (inf - inf in the interpolation also means inf)
        bands = np.percentile(np.where(np.isfinite(error), error, np.inf), pct, axis=0)
    bands = np.where(np.isnan(bands), np.inf, bands)
    return MonteCarloResult(ref.t[:K].copy(), metrics, samples, pct, bands,
                            float(np.mean(metrics["failed"])), failure_error, _time.perf_counter() - start)
