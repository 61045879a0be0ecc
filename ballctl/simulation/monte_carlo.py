r"""Monte Carlo runs of a tracking controller on uncertain plants, on one core or a cluster.

:func:`monte_carlo` draws, for every run, the plant's physical parameters
(those it declares in ``physical_parameters``, e.g. the ball's mass, radius
and inertia, applied through its ``with_parameters``), a constant sensor bias
per coordinate, the input latency and an initial offset from the
distributions in :class:`Uncertainty`, adds Gaussian sensor
noise, and runs the closed loop through the compiled batched engine
(:mod:`ballctl.simulation.engine`). A controller with an estimator (LQG) runs its Kalman
filter on its sensors (their noise, rate and latency; a drawn ``bias`` adds
to a sensor's), as :func:`ballctl.simulate_closed_loop` does; the drawn
latency is then the sensors' (plus the actuation delay), and its error moves
the sample instants, as the robust verification of a rig design does. The
runs integrate the design plant or a given ``truth`` (e.g. a rig's servo
plate with its imperfections), under the loop's limits, imperfections (lost
frames, dead band, timing jitter) and divergence stop of ``options``. It
returns per-run metrics, percentile bands of the position error over time
and the failure rate.

One runner: :func:`run_chunks` runs a :class:`MonteCarloJob` (the loop and a
sampler that draws each run from its seed) in chunks on an executor; it is
the runner of :func:`monte_carlo` (sampler: :class:`Uncertainty`) and of
:func:`ballctl.ball_plate.verification.verify_over_uncertainty` (sampler:
rigs drawn from :attr:`ballctl.RigProfile.uncertainty`).

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
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field

import numpy as np

from .._errors import ParameterError, ParameterTypeError
from .._validation import check_positive
from .arrays import LoopArrays, RunDraws, imperfection_draws, sensor_draws
from .closed_loop import ClosedLoopOptions, contact_extremes, contact_forces_along, controller_loop
from .engine import kernel_code, run_closed_loop
from ..design.tracking import TrackingController
from ..linear.partition import Partition

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
        Latency in s (draws must be >= 0; a negative draw raises). State
        feedback: the input delay (it replaces the limits' delay). Output
        feedback: the sensing-to-actuation latency, nominally the slowest
        sensor's latency plus the actuation delay, which the filter
        compensates; the commands keep the actuation delay and a run's
        latency ``e`` above the nominal moves its sample instants, ``y(t - e)
        = y - e dy/dt`` (first order). Not given: the nominal latency.
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
        the run), ``max_error`` (m; NaN for a run that stopped: it diverged),
        ``peak_<input>`` (rad), ``failed`` (bool).
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
class MonteCarloJob:
    """What every chunk of a Monte Carlo study needs (plain arrays and small frozen objects, picklable).

    Attributes
    ----------
    loop : LoopArrays
        The controller on the truth plant's layout (:func:`~ballctl.simulation.closed_loop.controller_loop`).
    sampler : object
        Draws the runs of a chunk: ``sampler.draw(loop, seeds)`` returns ``(runs, plants, samples)``, the
        batch (:class:`~ballctl.simulation.arrays.RunDraws`), each run's truth plant and a dict of what each
        run drew (arrays of shape (B,)). Run ``i`` must draw from ``seeds[i]`` alone, so that the results do
        not depend on the chunks.
    contact_window : ndarray of bool, shape (K,), optional
        When given, each run's contact extremes are computed (:func:`run_chunks`), over the run and over the
        samples where this is True.
    """

    loop: LoopArrays
    sampler: object
    contact_window: np.ndarray | None = None


@dataclass(frozen=True)
class _UncertaintyDraws:
    """The sampler of :func:`monte_carlo`: each run's draws from :class:`Uncertainty` (see its ``draw``)."""

    plant: object
    partition: object
    x0: np.ndarray
    xd0: np.ndarray
    uncertainty: Uncertainty
    noise: np.ndarray
    steps_available: int
    state_names: tuple
    signal_names: tuple = ()
    imperfections: object = None
    nominal_latency_s: float | None = None

    def draw(self, loop: LoopArrays, seeds) -> tuple[RunDraws, list, dict]:
        """The runs of ``seeds`` (one SeedSequence each), drawn in a fixed order per run.

        Each run draws the plant's parameters, its latency, the bias, the initial offset, then its noise
        (state feedback: on the measured state; output feedback: the sensors' standard normals). State
        feedback: the latency delays the commands. Output feedback (``nominal_latency_s`` set): the lost
        frames and timing jitter come from a child stream of the run's seed
        (:func:`~ballctl.simulation.arrays.imperfection_draws`), the commands keep the loop's delay, and a run
        whose latency exceeds the nominal one by ``e`` reads ``y(t - e) = y - e dy/dt`` at every sample.

        Parameters
        ----------
        loop : LoopArrays
        seeds : sequence of numpy.random.SeedSequence

        Returns
        -------
        runs : RunDraws
        plants : list
            Each run's plant.
        samples : dict of ndarray
            What each run drew, by :attr:`MonteCarloResult.samples`' names.
        """
        B = len(seeds)
        unc = self.uncertainty
        K, N, n = loop.K, loop.selection.shape[0], self.x0.shape[0]
        pvecs, plants, X0, XD0 = [], [], np.empty((B, n)), np.empty((B, n))
        err, delays = np.zeros((B, K, N)), np.empty(B)
        est = loop.estimator
        ny = loop.n_signals
        draws, shift = np.zeros((B, K, ny)), np.zeros((B, K))
        received = np.ones((B, K, ny), dtype=bool)
        sensor_bias = np.zeros((B, ny)) if est is None else np.repeat(est.bias[None], B, axis=0)
        coords = self.plant.coordinate_names
        names = tuple(self.plant.physical_parameters) if hasattr(self.plant, "physical_parameters") else ()
        samples = {key: np.empty(B) for key in (*names, "latency")}
        for key in unc.bias:
            samples[f"bias_{key}"] = np.empty(B)
        for key in unc.initial_offset:
            samples[f"offset_{key}"] = np.empty(B)
        nominal = loop.delay_s if self.nominal_latency_s is None else self.nominal_latency_s
        for i, s in enumerate(seeds):
            rng = np.random.default_rng(s)
            changes = {name: unc.parameters[name].sample(rng) for name in names if name in unc.parameters}
            plant = self.plant.with_parameters(**changes) if changes else self.plant
            plants.append(plant)
            pvecs.append(plant.kernel_parameters)
            for name, value in (plant.physical_parameters.items() if names else ()):
                samples[name][i] = value
            latency = nominal if unc.latency is None else unc.latency.sample(rng)
            if not np.isfinite(latency) or latency < 0:
                raise ParameterError(f"uncertainty.latency drew {latency!r} s for run {i}; latency must be >= 0 s "
                                     "(use a distribution without negative values, e.g. Uniform(0, 0.02))")
            samples["latency"][i] = latency
            delays[i] = latency if est is None else loop.delay_s
            bias = np.zeros(N)
            for key, dist in sorted(unc.bias.items()):
                value = dist.sample(rng)
                samples[f"bias_{key}"][i] = value
                if est is not None:  # output feedback: on the sensor reading of that signal
                    sensor_bias[i, self.signal_names.index(key)] += value
                    continue
                j = self.state_names.index(key) if key in self.state_names else -1
                if j >= 0:
                    bias[j] = value
            x0 = self.x0.copy()
            for key, dist in sorted(unc.initial_offset.items()):
                value = dist.sample(rng)
                samples[f"offset_{key}"][i] = value
                x0[coords.index(key)] += value
            X0[i] = x0
            XD0[i] = self.partition.complete_velocities(plant, x0, self.xd0)
            if est is None:
                err[i] = bias + self.noise * rng.standard_normal((K, N))
            else:
                draws[i] = sensor_draws(rng, K, self.steps_available, ny)
                received[i], jitter = imperfection_draws(s, K, est.sensor_widths, self.imperfections)
                # a sample older by e than the filter assumes reads y(t - e) = y - e dy/dt (the engine's shift)
                shift[i] = jitter - (latency - nominal)
        runs = RunDraws(np.stack(pvecs), X0, XD0, err, draws, sensor_bias, received, shift, delays)
        return runs, plants, samples


def _index_of(name: str, coords: tuple, states: tuple, label: str) -> int:
    if name in states:
        return states.index(name)
    base = name[:-5] if name.endswith("_rate") else name
    if base not in coords:
        raise ParameterError(f"{label}: unknown coordinate {name!r}; coordinates are {coords}")
    return -1  # a coordinate the controller does not measure


def _run_chunk(job: MonteCarloJob, seeds) -> dict:
    """The runs of ``seeds`` through the compiled loop: tracked error, stop, peak inputs, draws (and contact)."""
    loop = job.loop
    runs, plants, samples = job.sampler.draw(loop, seeds)
    out = run_closed_loop(loop, runs)
    idx = list(loop.tracked_index)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged run's last states may be huge
        error = np.linalg.norm(out.x[:, :, idx] - loop.y_ref[None, :, idx], axis=2)
        peak = np.max(np.abs(out.u), axis=1)
    part = {"error": error, "status": out.status, "peak_input": peak, "samples": samples}
    if job.contact_window is not None:
        window = job.contact_window
        extremes = np.empty((len(plants), 4))
        with np.errstate(over="ignore", invalid="ignore"):  # the contact forces of runs that diverged
            for i, plant in enumerate(plants):  # one kernel call per run (its own plant)
                normal, friction = contact_forces_along(plant, out.x[i], out.xd[i], out.u[i])
                extremes[i, :2] = contact_extremes(normal, friction)
                extremes[i, 2:] = contact_extremes(normal[window], friction[window])
        part["contact"] = extremes
    return part


def run_chunks(job: MonteCarloJob, seeds, *, executor: Executor | None = None, chunk_size: int = 100,
               progress: Callable[[int, int], None] | None = None) -> dict:
    """Run the runs of ``seeds`` in chunks of ``chunk_size`` on ``executor`` and gather them in seed order.

    The one runner under :func:`monte_carlo` and
    :func:`ballctl.ball_plate.verification.verify_over_uncertainty`: each chunk draws its runs
    (``job.sampler``), runs them through the compiled loop and returns what the callers reduce.

    Parameters
    ----------
    job : MonteCarloJob
    seeds : sequence of numpy.random.SeedSequence
        One per run.
    executor : concurrent.futures.Executor, optional
        Where the chunks run (``None``: here, one after the other).
    chunk_size : int
        Runs per chunk (>= 1); does not change the results.
    progress : callable, optional
        Called as ``progress(runs_done, n_runs)`` after each chunk.

    Returns
    -------
    dict
        ``error`` (n_runs, K): the tracked point's distance to its reference in m (NaN after a stop);
        ``status`` (n_runs,): the sample where a run stopped, -1 if it ran to the end; ``peak_input``
        (n_runs, m): largest ``|u|`` per input; ``samples``: dict of (n_runs,) arrays, what each run drew;
        with ``job.contact_window``, ``contact`` (n_runs, 4): the largest required friction coefficient and
        the least normal force in N over the run, then over the window
        (:func:`~ballctl.simulation.closed_loop.contact_extremes`).
    """
    n_runs = len(seeds)
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
        for fut in as_completed(futures):
            c = futures[fut]
            parts[c] = fut.result()
            done += len(chunks[c])
            if progress is not None:
                progress(done, n_runs)
    out = {key: np.concatenate([p[key] for p in parts]) for key in parts[0] if key != "samples"}
    out["samples"] = {key: np.concatenate([p["samples"][key] for p in parts]) for key in parts[0]["samples"]}
    return out


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
                seed: int | np.random.SeedSequence | None = 0, x0=None, xd0=None, truth=None,
                options: ClosedLoopOptions | None = None, settings: MonteCarloSettings | None = None
                ) -> MonteCarloResult:
    """Run ``n_runs`` closed loops of ``controller`` on randomly perturbed plants (see the module docstring).

    Parameters
    ----------
    controller : TrackingController
        From :func:`ballctl.design_tracking_lqr` or :func:`ballctl.ball_plate.design.design_for_rig`.
    n_runs : int
        Number of runs (>= 1).
    uncertainty : Uncertainty, optional
        What varies per run (default: nothing, all runs equal).
    seed : int or SeedSequence or None
        Root seed; run ``i`` uses ``SeedSequence(seed).spawn(n_runs)[i]``.
    x0, xd0 : array_like, shape (n,), optional
        Nominal initial state of the truth (default: the reference at the
        first control time; required when the truth's coordinates are not the
        design's). The drawn initial offset is added to ``x0`` and the
        velocities are completed from the truth's constraints.
    truth : ConstrainedSystem, optional
        The plant every run integrates, as in :func:`ballctl.simulate_closed_loop`
        (default: the design plant ``controller.system``), e.g. a rig's
        :meth:`~ballctl.RigProfile.truth_plant` with its imperfections. It must
        have compiled loop kernels; a parameter sample changes what its
        ``physical_parameters`` name, through its ``with_parameters``.
    options : ClosedLoopOptions, optional
        The loop of every run: ``feedback`` (``"auto"``: the controller's
        Kalman filter on its sensors when it has an estimator; the sensors then
        carry the noise, ``uncertainty.noise_std`` must be empty and
        ``uncertainty.bias`` keys are measured signals, added to their
        sensors' bias), ``limits`` (with state feedback ``uncertainty.latency``,
        when given, replaces its delay; with output feedback it moves the
        sample instants, see :class:`Uncertainty`), ``imperfections`` (the
        dead band acts in the loop; with output feedback each run draws its
        lost frames and timing jitter), ``divergence_error`` (a run stops
        farther than this from its reference, and fails), ``substeps`` and
        ``stabilization``. The runs are compiled RK4 (``method`` must be
        ``"rk4"``, the default here).
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
    if options.noise_std:
        raise ParameterError("options.noise_std is not used by monte_carlo (the noise is uncertainty.noise_std); "
                             "leave it None")
    executor, chunk_size, failure_error = settings.executor, settings.chunk_size, settings.failure_error
    percentiles, progress, limits = settings.percentiles, settings.progress, options.limits
    output_feedback = {"auto": None, "output": True, "state": False}[options.feedback]
    if not isinstance(n_runs, (int, np.integer)) or isinstance(n_runs, bool) or n_runs < 1:
        raise ParameterError(f"n_runs must be an integer >= 1, got {n_runs!r}")
    if not isinstance(chunk_size, (int, np.integer)) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ParameterError(f"chunk_size must be an integer >= 1 (runs), got {chunk_size!r}")
    failure_error = check_positive(failure_error, "failure_error", "m")
    if executor is not None and not isinstance(executor, Executor):
        raise ParameterTypeError("executor must be a concurrent.futures.Executor (e.g. a Dask client's "
                                 f"get_executor()), got {type(executor).__name__}")
    unc = uncertainty or Uncertainty()
    system = controller.system
    plant = system if truth is None else truth
    if kernel_code(plant) < 0:
        raise ParameterError(f"monte_carlo needs a plant with compiled loop kernels; {type(plant).__name__} has none "
                             "(see ballctl.plants.kernels.LOOP_KERNELS)")
    missing = [nm for nm in system.coordinate_names if nm not in plant.coordinate_names]
    if missing or plant.n_inputs != system.n_inputs:
        raise ParameterError(f"truth coordinates {plant.coordinate_names} must include the design's "
                             f"{system.coordinate_names}, with as many inputs ({system.n_inputs})")
    declared = tuple(getattr(plant, "physical_parameters", {}) or {})
    for key in unc.parameters:
        if key not in declared or not hasattr(plant, "with_parameters"):
            raise ParameterError(f"uncertainty.parameters: {key!r} is not a physical parameter of "
                                 f"{type(plant).__name__}; it declares {declared}")
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
        if key not in plant.coordinate_names:
            raise ParameterError(f"uncertainty.initial_offset: unknown coordinate {key!r}; coordinates are "
                                 f"{plant.coordinate_names}")
    ref = controller.samples
    steps = len(controller.times)
    K = steps + 1
    n = plant.n_coordinates
    if (x0 is None or xd0 is None) and plant.coordinate_names != coords:
        raise ParameterError(f"monte_carlo on a truth with other coordinates than the design's needs x0 and xd0 "
                             f"in the truth's coordinates {plant.coordinate_names}")
    x0 = ref.x[0].copy() if x0 is None else np.array(x0, dtype=float).reshape(n)
    xd0 = ref.xd[0].copy() if xd0 is None else np.array(xd0, dtype=float).reshape(n)
    if not getattr(plant, "tracked_coordinates", ()):
        raise ParameterError(f"monte_carlo measures the position error of the plant's tracked_coordinates; "
                             f"{type(plant).__name__} declares none")
    pct = np.asarray(percentiles, dtype=float)
    if pct.ndim != 1 or pct.size == 0 or np.any((pct < 0) | (pct > 100)):
        raise ParameterError(f"percentiles must be values in [0, 100] %, got {percentiles!r}")
    loop = controller_loop(controller, plant, steps, mode="output" if output_feedback else "state", limits=limits,
                           imperfections=options.imperfections, solver=(int(options.substeps), options.stabilization),
                           divergence_error=options.divergence_error)
    partition = controller.partition if truth is None else _truth_partition(controller.partition, plant)
    sampler = _UncertaintyDraws(
        plant, partition, x0, xd0, unc, noise, steps, names,
        signal_names=tuple(est.signal_names) if output_feedback else (), imperfections=options.imperfections,
        nominal_latency_s=max(s.latency_s for s in est.sensors) + loop.delay_s if output_feedback else None)
    seeds = np.random.SeedSequence(seed).spawn(n_runs) if not isinstance(seed, np.random.SeedSequence) \
        else seed.spawn(n_runs)
    runs = run_chunks(MonteCarloJob(loop, sampler), seeds, executor=executor, chunk_size=chunk_size,
                      progress=progress)
    error, diverged = runs["error"], runs["status"] >= 0
    times = loop.times
    tail = times >= times[0] + 0.8 * (times[-1] - times[0])
    with np.errstate(invalid="ignore"):  # a run that stopped has no final, steady-state or largest error
        metrics = {"final_error": np.where(diverged, np.nan, error[:, -1]),
                   "steady_state_error": np.where(diverged, np.nan, np.sqrt(np.mean(error[:, tail] ** 2, axis=1))),
                   "max_error": np.where(diverged, np.nan, np.max(error, axis=1))}
        metrics["failed"] = diverged | ~(metrics["final_error"] <= failure_error)
    for j, name in enumerate(plant.input_names):
        metrics[f"peak_{name}"] = runs["peak_input"][:, j]
    with np.errstate(invalid="ignore"):
        # a diverged run counts as an infinite error (inf - inf in the interpolation also means inf)
        bands = np.percentile(np.where(np.isfinite(error), error, np.inf), pct, axis=0)
    bands = np.where(np.isnan(bands), np.inf, bands)
    return MonteCarloResult(ref.t[:K].copy(), metrics, runs["samples"], pct, bands,
                            float(np.mean(metrics["failed"])), failure_error, _time.perf_counter() - start)


def _truth_partition(partition, truth):
    """``partition`` carried over to ``truth``: the same (admissible-)dependent coordinates, all others independent."""
    dependent = set(partition.admissible_dependent_names + partition.dependent_names)
    return Partition.from_coordinates(truth, [c for c in truth.coordinate_names if c not in dependent],
                                      partition.admissible_dependent_names, partition.dependent_names)
