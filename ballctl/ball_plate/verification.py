r"""Verification of a ball-plate design over the rig's uncertainty: many truths, one verdict.

A design verified in one nominal run is verified on one rig that does not
exist. :func:`verify_over_uncertainty` draws ``n_runs`` rigs from
:attr:`ballctl.RigProfile.uncertainty` about the rig as described (ball mass
and radius, servo bandwidth, sensor latency error, level error, rolling
resistance, sensor noise, initial offset; lost frames, dead band and timing
jitter from the rig's imperfections), runs the design on each one's exact
servo-plate truth in the compiled loop (:mod:`ballctl.simulation.engine`, through the
runner of :func:`ballctl.monte_carlo`, :func:`ballctl.simulation.monte_carlo.run_chunks`:
one chunk per thread) and reduces the runs to one verdict:

* a run **converges** when it does not diverge and its RMS contact error
  over the evaluation window (the reference's last period) is below
  ``max_rms_error``;
* whether the ball really rolls is counted beside it: the runs whose contact
  needs more friction than the rig's ``friction_coefficient`` (they *slip*)
  or loses its normal force (they *lift off*) at some sample, and those that
  do so within the evaluation window;
* the design **passes** when at least ``min_success_rate`` of the runs
  converge and the 95th percentile of the RMS errors is below ``max_rms_error``.

Reproducibility: run ``i`` draws its rig and its sensor noise from
``SeedSequence(seed).spawn(n_runs)[i]`` (its lost frames and jitter from a
child stream of that seed, see :func:`ballctl.simulation.closed_loop.imperfection_draws`),
so results do not depend on the number of threads.
"""

from __future__ import annotations

import time as _time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .._errors import ParameterError
from .._validation import check_finite_scalar, check_instance, check_integer, check_positive
from ..simulation.arrays import RunDraws, imperfection_draws, sensor_draws
from ..simulation.closed_loop import controller_loop
from ..simulation.monte_carlo import MonteCarloJob, run_chunks
from .rig import Imperfections, RigProfile
from ..design.tracking import TrackingController
from .design import DesignCandidate

__all__ = ["RobustVerification", "VerificationSettings", "verify_over_uncertainty", "ROBUST_PERCENTILES",
           "CandidateScore", "DesignSearch", "search_robust_design", "search_seed"]

#: percentiles of the error bands over time, in %
ROBUST_PERCENTILES = (5.0, 50.0, 95.0)


@dataclass(frozen=True)
class RobustVerification:
    """The runs of a design over a rig's uncertainty, and the verdict.

    Attributes
    ----------
    runs : int
    success_rate : float
        Fraction of runs that converged.
    rms_p50_m, rms_p95_m, worst_rms_m : float
        Median, 95th percentile and largest RMS contact error over the window, m
        (a diverged run counts as infinite).
    passed : bool
        ``success_rate >= min_success_rate`` and ``rms_p95_m < max_rms_error``.
    max_rms_error_m, min_success_rate : float
        The criteria.
    rms_m : ndarray, shape (runs,)
        Each run's RMS error over the window in m (inf when diverged).
    converged : ndarray of bool, shape (runs,)
    t : ndarray, shape (K,)
        Control times in s.
    percentiles : ndarray, shape (P,)
        Percentiles of :attr:`bands` in %.
    bands : ndarray, shape (P, K)
        Percentiles over runs of the contact error in m at each time (inf once too many runs diverged).
    samples : dict of ndarray
        What each run drew: ``mass_kg``, ``radius_m``, ``servo_bandwidth_rad_s``,
        ``latency_error_s``, ``plate_offset_alpha_rad``, ``plate_offset_beta_rad``,
        ``rolling_resistance``, ``noise_scale``, ``initial_offset_x_m``, ``initial_offset_y_m``.
    window_s : float
        Length of the evaluation window in s (the end of the run).
    peak_friction_coefficient : ndarray, shape (runs,)
        Each run's largest required friction coefficient ``|F_t| / N`` (up to its divergence).
    least_normal_force_N : ndarray, shape (runs,)
        Each run's smallest normal contact force in N.
    rolls_in_window : ndarray of bool, shape (runs,)
        The ball neither slips nor lifts off over the evaluation window.
    friction_coefficient : float
        The rig's coefficient of static friction the runs were checked against.
    wall_time_s : float
    """

    runs: int
    success_rate: float
    rms_p50_m: float
    rms_p95_m: float
    worst_rms_m: float
    passed: bool
    max_rms_error_m: float
    min_success_rate: float
    rms_m: np.ndarray
    converged: np.ndarray
    t: np.ndarray
    percentiles: np.ndarray
    bands: np.ndarray
    samples: dict
    window_s: float
    peak_friction_coefficient: np.ndarray
    least_normal_force_N: np.ndarray
    rolls_in_window: np.ndarray
    friction_coefficient: float
    wall_time_s: float

    @property
    def slipping_runs(self) -> int:
        """Runs whose contact needed more friction than the rig has (anywhere in the run)."""
        return int(np.sum(self.peak_friction_coefficient > self.friction_coefficient))

    @property
    def lift_off_runs(self) -> int:
        """Runs whose normal force reached zero (anywhere in the run)."""
        return int(np.sum(~(self.least_normal_force_N > 0)))

    def as_dict(self) -> dict:
        """The summary block (strict JSON: an infinite error is None)."""
        def num(v):
            return float(v) if np.isfinite(v) else None

        return {"runs": self.runs, "success_rate": self.success_rate, "rms_p50_m": num(self.rms_p50_m),
                "rms_p95_m": num(self.rms_p95_m), "worst_rms_m": num(self.worst_rms_m), "passed": self.passed,
                "criteria": {"min_success_rate": self.min_success_rate, "max_rms_p95_m": self.max_rms_error_m,
                             "friction_coefficient": self.friction_coefficient},
                "friction_coefficient_p95": num(np.percentile(self.peak_friction_coefficient, 95.0,
                                                              method="inverted_cdf")),
                "least_normal_force_N": num(np.min(self.least_normal_force_N)),
                "slipping_runs": self.slipping_runs, "lift_off_runs": self.lift_off_runs,
                "runs_not_rolling_in_window": int(np.sum(~self.rolls_in_window)),
                "window_s": self.window_s, "wall_time_s": self.wall_time_s}


@dataclass(frozen=True, kw_only=True)
class VerificationSettings:
    """How many runs :func:`verify_over_uncertainty` draws, how it judges them and where they run.

    Attributes
    ----------
    n_runs : int
        Runs (>= 1; 200 by default, enough to resolve a 99 % success rate to about 1 run in 100).
    min_success_rate : float
        Fraction of converged runs needed to pass, in (0, 1].
    divergence_error : float
        A run is stopped once its contact point is farther than this from the reference, m (> 0).
    workers : int
        Threads over which the runs are split (>= 1; the compiled loop releases the GIL).
    """

    n_runs: int = 200
    min_success_rate: float = 0.99
    divergence_error: float = 0.2
    workers: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_runs", check_integer(self.n_runs, "n_runs", minimum=1))
        object.__setattr__(self, "workers", check_integer(self.workers, "workers", minimum=1))
        object.__setattr__(self, "divergence_error", check_positive(self.divergence_error, "divergence_error", "m"))
        rate = check_finite_scalar(self.min_success_rate, "min_success_rate")
        if not 0.0 < rate <= 1.0:
            raise ParameterError(f"min_success_rate must lie in (0, 1], got {self.min_success_rate!r}")
        object.__setattr__(self, "min_success_rate", rate)


def verify_over_uncertainty(controller: TrackingController, rig: RigProfile, x0, xd0, *, window_s: float,
                            max_rms_error: float, seed: int = 0, settings: VerificationSettings | None = None
                            ) -> RobustVerification:
    """Run ``controller`` on ``n_runs`` rigs drawn from ``rig.uncertainty`` (see the module docstring).

    Parameters
    ----------
    controller : TrackingController
        A design for the rig (:func:`ballctl.design_for_rig`); output feedback
        through its estimator when it has one, else state feedback.
    rig : RigProfile
        The rig as described: its truth (:meth:`~ballctl.RigProfile.truth_plant`),
        limits, sensors, imperfections and uncertainty.
    x0, xd0 : array_like, shape (n,)
        Nominal initial state (servo-plate coordinates, the plate at the
        design's angles); each drawn rig starts with its plate at its own
        level error (:meth:`~ballctl.RigProfile.truth_initial_state`).
    window_s : float
        Evaluation window at the end of the run in s (the last period).
    max_rms_error : float
        Convergence threshold on a run's RMS contact error over the window, m.
    seed : int
        Root seed.
    settings : VerificationSettings, optional
        Number of runs, success rate to pass, divergence stop and threads
        (default: ``VerificationSettings()``).

    Returns
    -------
    RobustVerification
    """
    start = _time.perf_counter()
    settings = VerificationSettings() if settings is None else settings
    check_instance(settings, "settings", VerificationSettings)
    n_runs, workers, divergence_error = settings.n_runs, settings.workers, settings.divergence_error
    min_success_rate = settings.min_success_rate
    seed = check_integer(seed, "seed", minimum=0)
    window_s = check_positive(window_s, "window_s", "s")
    max_rms_error = check_positive(max_rms_error, "max_rms_error", "m")
    truth0 = rig.truth_plant()
    n = truth0.n_coordinates
    x0 = np.array(x0, dtype=float).reshape(n)
    xd0 = np.array(xd0, dtype=float).reshape(n)
    steps = len(controller.times)
    K = steps + 1
    substeps = max(2, int(np.ceil(controller.dt / 0.01 - 1e-9)))
    loop = controller_loop(controller, truth0, steps, mode="state" if controller.estimator is None else "output",
                           limits=rig.limits, imperfections=rig.imperfections.loop, solver=(substeps, (10.0, 10.0)),
                           divergence_error=divergence_error)
    t = controller.samples.t[:K]
    window = t >= t[-1] - window_s - 1e-9
    job = MonteCarloJob(loop, _RigDraws(rig, x0, xd0, steps), contact_window=window)
    seeds = np.random.SeedSequence(seed).spawn(n_runs)
    chunk = -(-n_runs // min(workers, n_runs))   # one chunk per thread
    if chunk == n_runs:
        runs = run_chunks(job, seeds, chunk_size=chunk)
    else:
        with ThreadPoolExecutor(min(workers, n_runs)) as pool:
            runs = run_chunks(job, seeds, executor=pool, chunk_size=chunk)
    error, diverged = runs["error"], runs["status"] >= 0
    mu, least, mu_w, least_w = runs["contact"].T
    rolls = (mu_w <= rig.friction_coefficient) & (least_w > 0)
    with np.errstate(invalid="ignore"):
        rms = np.where(diverged, np.inf, np.sqrt(np.mean(error[:, window] ** 2, axis=1)))
    converged = ~diverged & (rms < max_rms_error)
    pct = np.asarray(ROBUST_PERCENTILES)
    # percentiles without interpolation ("inverted_cdf"): a diverged run counts as an infinite error
    bands = np.percentile(np.where(np.isfinite(error), error, np.inf), pct, axis=0, method="inverted_cdf")
    p50, p95 = np.percentile(rms, [50.0, 95.0], method="inverted_cdf")
    success = float(np.mean(converged))
    passed = bool(success >= min_success_rate and p95 < max_rms_error)
    return RobustVerification(n_runs, success, float(p50), float(p95), float(np.max(rms)), passed,
                              max_rms_error, float(min_success_rate), rms, converged, t.copy(), pct, bands,
                              runs["samples"], float(window_s), mu, least, rolls, float(rig.friction_coefficient),
                              _time.perf_counter() - start)


# ------------------------------------------------------------------ robust design search
#: mixed into the job's seed for the search's draws (:func:`search_seed`)
_SEARCH_SEED_KEY = 0x5EA4C4


def search_seed(seed: int) -> int:
    """The root seed of :func:`search_robust_design`'s draws for a job's ``seed``: a stream of its own.

    ``SeedSequence([seed, key])`` shares no stream with the ``SeedSequence(seed)`` of
    :func:`verify_over_uncertainty` for any ``seed``, so the verification stays an independent test of the
    tuning the search picked.

    Parameters
    ----------
    seed : int
        The job's seed (``--seed``), >= 0.

    Returns
    -------
    int
    """
    seed = check_integer(seed, "seed", minimum=0)
    return int(np.random.SeedSequence([seed, _SEARCH_SEED_KEY]).generate_state(1)[0])


@dataclass(frozen=True)
class CandidateScore:
    """One candidate tuning of :func:`search_robust_design` and its pre-check.

    Attributes
    ----------
    candidate : DesignCandidate
    controller : TrackingController or None
        The design (None when it cannot be built).
    check : RobustVerification or None
        Its runs over the design rig's uncertainty (None when not built).
    meets : bool
        It passes the pre-check (``check.passed``).
    error : str or None
        Why the design cannot be built.
    """

    candidate: DesignCandidate
    controller: TrackingController | None
    check: RobustVerification | None
    meets: bool
    error: str | None = None

    def as_dict(self) -> dict:
        """JSON-ready: the candidate, and its score or why it has none."""
        c = self.check
        out = {"candidate": self.candidate.name, "meets": self.meets}
        if c is None:
            return {**out, "error": self.error}
        num = (lambda v: float(v) if np.isfinite(v) else None)   # noqa: E731
        return {**out, "success_rate": c.success_rate, "rms_p50_m": num(c.rms_p50_m), "rms_p95_m": num(c.rms_p95_m),
                "worst_rms_m": num(c.worst_rms_m), "wall_time_s": c.wall_time_s}


@dataclass(frozen=True)
class DesignSearch:
    """What :func:`search_robust_design` tried and what it picked.

    Attributes
    ----------
    scores : tuple of CandidateScore
        The candidates tried, in order (the search stops at the first that meets the criteria).
    chosen : int
        Index into :attr:`scores` of the picked tuning.
    reason : str
        Why it was picked.
    runs : int
        Runs of each pre-check.
    seed : int
        Root seed of the pre-checks' draws (the same rigs for every candidate).
    """

    scores: tuple
    chosen: int
    reason: str
    runs: int
    seed: int

    @property
    def candidate(self) -> DesignCandidate:
        """The picked tuning."""
        return self.scores[self.chosen].candidate

    @property
    def controller(self) -> TrackingController:
        """The picked design."""
        return self.scores[self.chosen].controller

    def as_dict(self) -> dict:
        """JSON-ready: the pick, why, and every candidate's score."""
        return {"chosen": self.candidate.name, "reason": self.reason, "runs": self.runs, "seed": self.seed,
                "candidates": [s.as_dict() for s in self.scores]}


def search_robust_design(design: Callable[[DesignCandidate], TrackingController],
                         candidates: Sequence[DesignCandidate], rig: RigProfile, x0, xd0, *, window_s: float,
                         max_rms_error: float, seed: int = 0, settings: VerificationSettings | None = None,
                         scored: Sequence[CandidateScore] = ()) -> DesignSearch:
    """Pick a tuning that survives the design rig's uncertainty: the first candidate whose pre-check passes.

    Each candidate is designed (``design(candidate)``) and run on ``settings.n_runs`` rigs drawn from
    ``rig.uncertainty`` by :func:`verify_over_uncertainty` -- the same runs, draws and criteria as the
    verification, on the design rig **without its imperfections** (they are the truth's: no design reads
    them; the draws then centre on a level rig) and with the root seed ``seed`` (give it
    :func:`search_seed` of the job's seed: the verification that follows must not see these draws). Every
    candidate meets the same drawn rigs. The search stops at the first candidate that passes (so with the
    job's own tuning first, a design that passes costs one pre-check and is kept as it is); when none does,
    it picks the one with the most converged runs (then the smallest 95th-percentile error; the earlier on
    a tie).

    Parameters
    ----------
    design : callable
        ``design(candidate) -> TrackingController``; a :class:`~ballctl.BallctlError` marks the candidate as
        not buildable (the first candidate's is raised).
    candidates : sequence of DesignCandidate
        In the order to try.
    rig : RigProfile
        The design rig (its imperfections are not used).
    x0, xd0 : array_like
        Nominal initial state, as for :func:`verify_over_uncertainty`.
    window_s, max_rms_error : float
        As for :func:`verify_over_uncertainty`.
    seed : int
        Root seed of the pre-checks' draws.
    settings : VerificationSettings, optional
        The pre-check's runs (default 40), success rate, divergence stop and threads.
    scored : sequence of CandidateScore
        Scores of the leading candidates already run (reused, not rerun).

    Returns
    -------
    DesignSearch
    """
    from .._errors import BallctlError

    settings = VerificationSettings(n_runs=40) if settings is None else settings
    check_instance(settings, "settings", VerificationSettings)
    candidates = tuple(candidates)
    if not candidates:
        raise ParameterError("candidates: the search needs at least one candidate tuning")
    level = replace(rig, imperfections=Imperfections())
    scores = list(scored)
    for cand in candidates[len(scores):] if not any(s.meets for s in scores) else ():
        try:
            ctrl = design(cand)
        except BallctlError as exc:
            if not scores:
                raise
            scores.append(CandidateScore(cand, None, None, False, " ".join(str(exc).split())))
            continue
        with np.errstate(over="ignore", invalid="ignore"):  # the contact forces of runs that diverged
            rv = verify_over_uncertainty(ctrl, level, x0, xd0, window_s=window_s, max_rms_error=max_rms_error,
                                         seed=seed, settings=settings)
        scores.append(CandidateScore(cand, ctrl, rv, rv.passed))
        if rv.passed:
            break

    def text(s: CandidateScore) -> str:
        c = s.check
        p95 = "diverged" if not np.isfinite(c.rms_p95_m) else f"{c.rms_p95_m:.3g} m"
        return f"{100 * c.success_rate:.1f} % of {c.runs} runs converge, RMS p95 {p95}"

    met = [i for i, s in enumerate(scores) if s.meets]
    if met:
        chosen = met[0]
        reason = (f"{scores[chosen].candidate.name}: the first candidate that passes the pre-check "
                  f"({text(scores[chosen])})")
    else:
        run = [i for i, s in enumerate(scores) if s.check is not None]
        chosen = max(run, key=lambda i: (scores[i].check.success_rate, -scores[i].check.rms_p95_m, -i))
        reason = (f"no candidate passes the pre-check; {scores[chosen].candidate.name} does best "
                  f"({text(scores[chosen])})")
    return DesignSearch(tuple(scores), chosen, reason, settings.n_runs, int(seed))


#: what :class:`_RigDraws` records of each run, in :attr:`RobustVerification.samples`
_SAMPLES = ("mass_kg", "radius_m", "servo_bandwidth_rad_s", "latency_error_s", "plate_offset_alpha_rad",
            "plate_offset_beta_rad", "rolling_resistance", "noise_scale", "initial_offset_x_m", "initial_offset_y_m")


@dataclass(frozen=True)
class _RigDraws:
    """The sampler of :func:`verify_over_uncertainty` (a :class:`~ballctl.simulation.monte_carlo.MonteCarloJob`'s):
    each run a rig drawn from ``rig.uncertainty`` (:meth:`~ballctl.RigProfile.sample`)."""

    rig: RigProfile
    x0: np.ndarray
    xd0: np.ndarray
    steps: int

    def draw(self, loop, seeds) -> tuple[RunDraws, list, dict]:
        """The runs of ``seeds`` (one SeedSequence each): rig, then sensor noise, from each run's generator.

        Each run's truth is its drawn rig's (ball, servos, level error, rolling resistance), starting with its
        plate at its own level error and the drawn initial offset on the contact point (the velocities are
        ``xd0``'s). Output feedback: the sensor noise is scaled by the drawn noise scale, lost frames and jitter
        come from the drawn rig's loop imperfections (a child stream of the seed), and the drawn latency error
        moves every sample instant (``y(t - e) = y - e dy/dt``).

        Parameters
        ----------
        loop : LoopArrays
        seeds : sequence of numpy.random.SeedSequence

        Returns
        -------
        runs : RunDraws
        plants : list
            Each run's truth plant.
        samples : dict of ndarray
            What each run drew (:attr:`RobustVerification.samples`).
        """
        B, K, ny = len(seeds), loop.K, loop.n_signals
        contact = loop.tracked_index   # the truth's tracked point (its contact point)
        est = loop.estimator
        truths, X0 = [], np.repeat(self.x0[None], B, axis=0)
        samples = {k: np.empty(B) for k in _SAMPLES}
        draws = np.zeros((B, K, ny))
        received = np.ones((B, K, ny), dtype=bool)
        shift = np.zeros((B, K))
        for i, ss in enumerate(seeds):
            rng = np.random.default_rng(ss)
            drawn = self.rig.sample(rng)
            r = drawn.rig
            truths.append(r.truth_plant())
            X0[i] = r.truth_initial_state(self.x0)
            X0[i, contact] += drawn.initial_offset_m
            values = (r.ball.mass, r.ball.radius, r.servo.bandwidth, drawn.latency_error_s,
                      *r.imperfections.plate_offset, r.imperfections.rolling_resistance, drawn.noise_scale,
                      *drawn.initial_offset_m)
            for k, v in zip(_SAMPLES, values):
                samples[k][i] = v
            if est is not None:
                draws[i] = drawn.noise_scale * sensor_draws(rng, K, self.steps, ny)
                received[i], jitter = imperfection_draws(ss, K, est.sensor_widths, r.imperfections.loop)
                shift[i] = jitter - drawn.latency_error_s  # a sample older by L reads y(t - L) = y - L y_dot
        XD0 = np.repeat(self.xd0[None], B, axis=0)
        params = np.stack([np.asarray(t.kernel_parameters, dtype=float) for t in truths])
        bias = np.zeros((B, ny)) if est is None else np.repeat(est.bias[None], B, 0)
        runs = RunDraws(params, X0, XD0, np.zeros((B, K, loop.selection.shape[0])), draws, bias, received, shift,
                        np.full(B, loop.delay_s))
        return runs, truths, samples
