r"""Comparing coordinate partitions and their subsystems: which linear model can a tracking controller use?

For every partition (or a given list) the system is linearized along the
reference and, for each, tabulated:

* whether the partition is admissible all along the reference: :math:`D_{dd}`
  invertible at every sample, its determinant not changing sign between two
  samples (a singularity the samples straddle), and its conditioning;
* its candidate subsystems: the full reduced state
  :math:`X = (\delta x_{ai}, \delta\dot x_{ai}, \delta x_{ad})`, the dynamic
  subsystem :math:`(\delta x_{ai}, \delta\dot x_{ai})`, and every exact
  subsystem (no other state drives it) that contains the tracked coordinates
  (e.g. the 4 contact-point states of the ball-plate on any path);
* for each subsystem: how much the other states drive it (0: exact), the rank
  of its reachability Gramian and the Gramian's smallest scaled singular value
  at the sample time and at half of it.

The rank counts the scaled singular values above ``rank_rtol`` of the largest
that **do not vanish as the step shrinks**: the frozen-step (ZOH) model of a
time-varying system leaks a little reach into the direction of a quantity the
continuous system conserves (the spin about the plate normal of the
ball-plate: its scaled singular value falls as :math:`\Delta t^4`, about
16-fold when the step halves, and along the figure-eight it exceeds
``RANK_RTOL`` at a 20 ms step). A direction whose singular value falls at
least :data:`LEAK_RATIO`-fold when the step halves is therefore counted out.

The comparison then recommends one partition and subsystem: among the
subsystems that are exact, completely controllable and contain the tracked
coordinates, of partitions admissible along the whole reference, the largest
(the controller regulates the most of the motion), then the best conditioned.

Agúndez et al. (2024), section 3.3 and the conclusions: along the circle, the
partition with independent (yaw, lean, roll) is not completely controllable,
while independent (contact_x, contact_y, yaw) gives a controllable 6-state
system decoupled from lean and roll. The uncontrollable mode is the spin about
the plate normal, :math:`\omega_z = \dot\psi + \dot\theta\sin\phi`, which the
quasi-static plate cannot change (it exerts no torque about its normal);
its linearization is a conserved linear functional of the state. On a path of
varying curvature the 6-state subsystem is no longer exact (lean and roll drive
the yaw); the 4 contact-point states are, on any path.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from .._errors import ParameterError, PartitionError, ShapeError
from ..design.controllability import RANK_RTOL, GramianReport, discrete_gramian
from ..linear.discretize import DiscreteLTVSystem, discretize
from ..linear.linearize import linearize_samples
from ..linear.partition import Partition
from ..references.base import Reference
from ..system import ConstrainedSystem

#: D_dd conditioning above which a partition is flagged as passing near a singularity
NEAR_SINGULAR = 1e4
#: D_dd conditioning above which it is singular (the default of :meth:`ballctl.Partition.check`)
SINGULAR = 1e10
#: ... and above which it is singular to rounding (the value itself depends on the machine, so is not printed)
ROUNDING_SINGULAR = 1e15
#: a scaled Gramian singular value that falls at least this much when the step halves (as dt^1.5 or faster) is
#: the frozen-step leak of a conserved quantity, not a direction of the continuous system (such a leak falls as
#: dt^4; a converged direction changes by O(dt))
LEAK_RATIO = 2.0 ** 1.5
#: relative coupling ``max|A[:, sub, other]| / max(1, max|A|)`` up to which a subsystem is exact (the rule of
#: :meth:`ballctl.LTVSystem.select_states`, so a recommended subsystem can be designed on)
EXACT_RTOL = 1e-9
#: scaled singular values below this are rounding (printed as such)
ROUNDING = 1e-14

__all__ = ["PartitionComparison", "PartitionRow", "SubsystemRow", "Recommendation", "compare_partitions",
           "enumerate_partitions"]


@dataclass(frozen=True)
class SubsystemRow:
    """One candidate subsystem of a partition: its states, whether it is exact, its controllability.

    Attributes
    ----------
    kind : {"full", "dynamic", "subsystem"}
        The full reduced state, the dynamic subsystem ``(dx_ai, dxd_ai)`` or another exact subsystem.
    states : tuple of str
        Its states, in the partition's state order.
    label : str
        Short name, e.g. ``"contact_x, contact_y + rates"``.
    coupling : float
        ``max |A[:, states, other]|`` over the samples: how much the other states drive it.
    exact : bool
        ``coupling <= EXACT_RTOL * max(1, max|A|)``: a model a controller can use on its own.
    coarse, fine : GramianReport
        Gramians of the states scaled by their reachable spread, at the sample time and at half of it.
    rank : int
        Scaled singular values above the rank tolerance at both steps that do not fall
        :data:`LEAK_RATIO`-fold or more when the step halves.
    drivers : tuple of str
        The other states that drive it (empty when exact), most driving first.
    """

    kind: str
    states: tuple[str, ...]
    label: str
    coupling: float
    exact: bool
    coarse: GramianReport
    fine: GramianReport
    rank: int
    drivers: tuple[str, ...] = ()

    @property
    def n_states(self) -> int:
        return len(self.states)

    @property
    def controllable(self) -> bool:
        """Exact and of full rank: a completely controllable model of its own."""
        return self.exact and self.rank == self.n_states

    @property
    def sigma_min(self) -> float:
        """Smallest singular value of the scaled Gramian at the sample time, over the largest."""
        return float(max(self.coarse.scaled_eigenvalues[0], 0.0))

    @property
    def sigma_min_fine(self) -> float:
        """The same at half the sample time."""
        return float(max(self.fine.scaled_eigenvalues[0], 0.0))

    @property
    def leaks(self) -> int:
        """Directions the plain rank test at the sample time counts but that vanish as the step shrinks."""
        return max(self.coarse.rank - self.rank, 0)

    @property
    def W(self) -> np.ndarray:
        """The scaled Gramian at the sample time."""
        return self.coarse.W

    @property
    def condition_number(self) -> float:
        """Condition number of the scaled Gramian at the sample time."""
        return self.coarse.condition_number

    @property
    def directions(self) -> tuple:
        """Directions of the scaled Gramian at half the sample time, least controllable first."""
        return self.fine.directions

    @property
    def missing_directions(self) -> tuple:
        """The ``n_states - rank`` directions the inputs cannot reach (least controllable first)."""
        return self.fine.directions[:self.n_states - self.rank]


@dataclass(frozen=True)
class PartitionRow:
    """One partition's line of the comparison.

    Attributes
    ----------
    partition : Partition
    admissible : bool
        False when ``D_dd`` is singular somewhere along the reference (see ``reason``).
    reason : str
    full : SubsystemRow or None
        The full reduced state.
    coupling : float
        ``max |A23|`` over the samples: how much ``dx_ad`` drives the dynamic subsystem.
    dynamic : SubsystemRow or None
        The dynamic subsystem ``(dx_ai, dxd_ai)`` (exact only when ``coupling`` is ~0).
    ddd_condition : float
        Largest ``|D| / sigma_min(D_dd)`` over the samples: a large value means
        the partition passes near a singularity between samples.
    subsystems : tuple of SubsystemRow
        ``full``, ``dynamic`` and every other exact subsystem that contains the tracked coordinates.
    """

    partition: Partition
    admissible: bool
    reason: str = ""
    full: SubsystemRow | None = None
    coupling: float = float("nan")
    dynamic: SubsystemRow | None = None
    ddd_condition: float = float("nan")
    subsystems: tuple[SubsystemRow, ...] = ()

    @property
    def decoupled(self) -> bool:
        """The dynamic subsystem is exact (``dx_ad`` does not drive it)."""
        return self.admissible and self.dynamic is not None and self.dynamic.exact

    @property
    def nearly_singular(self) -> bool:
        """``D_dd`` is badly conditioned (> 1e4) at some sample: the samples may straddle a singularity."""
        return self.admissible and not self.ddd_condition < NEAR_SINGULAR

    @property
    def usable(self) -> bool:
        """Admissible along the whole reference and not nearly singular."""
        return self.admissible and not self.nearly_singular


@dataclass(frozen=True)
class Recommendation:
    """The partition and subsystem :func:`compare_partitions` recommends, and why.

    Attributes
    ----------
    row : PartitionRow
    subsystem : SubsystemRow
    reason : str
    """

    row: PartitionRow
    subsystem: SubsystemRow
    reason: str


@dataclass(frozen=True)
class PartitionComparison:
    """The table of :func:`compare_partitions`; ``str()`` prints it.

    Attributes
    ----------
    rows : tuple of PartitionRow
        One row per partition: the recommended first, then the other usable ones, then the rest.
    t0, t1 : float
        Interval in s.
    dt : float
        Sample time in s (the ranks are checked at ``dt / 2`` too).
    tracked : tuple of str
        Coordinates a candidate subsystem must contain.
    rank_rtol : float
        Relative tolerance of the ranks.
    recommendation : Recommendation or None
        None when no partition has an exact, completely controllable subsystem with the tracked coordinates.
    why_none : str
        Why there is no recommendation.
    """

    rows: tuple[PartitionRow, ...]
    t0: float
    t1: float
    dt: float
    tracked: tuple[str, ...] = ()
    rank_rtol: float = RANK_RTOL
    recommendation: Recommendation | None = None
    why_none: str = ""

    def to_table(self) -> str:
        """Plain-text table: per partition its admissibility and its subsystems, then the recommendation."""
        wide = any(r.partition.dependent for r in self.rows)
        part_w = 27 + (24 if wide else 0)
        head = (f"{'independent':<27}" + (f"{'dependent':<24}" if wide else "")
                + f" {'adm. dependent':<22} {'cond(D_dd)':>10}  {'subsystem (states)':<47} {'coupling':>9} "
                  f"{'rank':>5} {'sig_min dt':>10} {'sig_min dt/2':>12}  verdict")
        tracked = ", ".join(self.tracked) if self.tracked else "none declared"
        lines = [f"partition comparison over [{self.t0:.4g}, {self.t1:.4g}] s: ZOH models at dt = {self.dt:g} s, "
                 f"ranks checked at dt/2 = {self.dt / 2:g} s; tracked coordinates: {tracked}",
                 f"rank: singular values of the scaled Gramian (sig_min: the smallest, over the largest; its "
                 f"condition number is 1/sig_min) above {self.rank_rtol:g} that do not fall >= "
                 f"{LEAK_RATIO:.2f}x when dt halves", head, "-" * len(head)]
        for r in self.rows:
            p = r.partition
            ai = ", ".join(p.independent_names)
            ad = ", ".join(p.admissible_dependent_names)
            d = f"{', '.join(p.dependent_names):<24}" if wide else ""
            lead = f"{ai:<27}" + d + f" {ad:<22}"
            if not r.admissible:
                lines.append(f"{lead} {'-':>10}  not admissible: {r.reason}")
                continue
            if r.nearly_singular:
                lines.append(f"{lead} {r.ddd_condition:10.2e}  nearly singular between samples (cond(D_dd) >= "
                             f"{NEAR_SINGULAR:.0e}): not usable")
                continue
            for i, s in enumerate(r.subsystems):
                start = f"{lead} {r.ddd_condition:10.2e}" if i == 0 else " " * (part_w + 1 + 22 + 1 + 10)
                coupling = "exact" if s.exact else f"{s.coupling:.2e}"
                label = {"full": f"full state ({s.n_states})",
                         "dynamic": f"{s.label} ({s.n_states}, dynamic)"}.get(s.kind, f"{s.label} ({s.n_states})")
                lines.append(f"{start}  {label:<47} {coupling:>9} {f'{s.rank}/{s.n_states}':>5} "
                             f"{_small(s.sigma_min):>10} {_small(s.sigma_min_fine):>12}  {_verdict(s)}")
        lines.append("")
        rec = self.recommendation
        if rec is None:
            lines.append(f"recommended: none -- {self.why_none}")
        else:
            lines.append(f"recommended: {rec.reason}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


def _small(value: float) -> str:
    return f"<{ROUNDING:.0e}" if value < ROUNDING else f"{value:.2e}"


def _verdict(s: SubsystemRow) -> str:
    """One subsystem's verdict, with the direction it misses."""
    if not s.exact:
        return f"not exact: driven by {', '.join(s.drivers)}"
    if s.rank == s.n_states:
        return "controllable"
    leak = ""
    if s.leaks:
        ratio = s.sigma_min / s.sigma_min_fine if s.sigma_min_fine > 0 else float("inf")
        leak = f" (sig_min falls {ratio:.3g}x when dt halves)"
    weakest = ", ".join(f"{w:+.2f} {n}" for n, w in s.missing_directions[0][:3] if abs(w) >= 0.005)
    return f"not controllable{leak}: misses {weakest}"


def enumerate_partitions(system: ConstrainedSystem) -> list[Partition]:
    """Every split of the coordinates into sets of sizes n - m - l, l and m (unchecked).

    Parameters
    ----------
    system : ConstrainedSystem
        The system.
    """
    n, m, l_ = system.n_coordinates, system.n_holonomic, system.n_nonholonomic
    out = []
    for ai in itertools.combinations(range(n), n - m - l_):
        rest = [i for i in range(n) if i not in ai]
        for ad in itertools.combinations(rest, l_):
            d = tuple(i for i in rest if i not in ad)
            out.append(Partition(tuple(ai), tuple(ad), d, system.coordinate_names))
    return out


def compare_partitions(system: ConstrainedSystem, reference: Reference, times, *,
                       partitions: Sequence[Partition] | None = None, tracked: Sequence[str] | None = None,
                       rank_rtol: float = RANK_RTOL, executor: Executor | None = None) -> PartitionComparison:
    """Linearize along a reference with each partition, tabulate its subsystems' controllability, recommend one.

    Parameters
    ----------
    system : ConstrainedSystem
    reference : Reference
        Defined on ``[times[0], times[-1]]``.
    times : array_like, shape (K,)
        Uniformly spaced sample times in s; the Gramians are those of the
        exact-ZOH discretization over ``[times[0], times[-1]]`` at this step and
        at half of it (the reference is evaluated at the midpoints too).
    partitions : sequence of Partition, optional
        Default: every partition (:func:`enumerate_partitions`).
    tracked : sequence of str, optional
        Coordinates a recommended subsystem must contain (default: the
        system's ``tracked_coordinates``; none: the full state and the dynamic
        subsystem are the only candidates).
    rank_rtol : float
        Relative tolerance of the Gramian ranks, the one rank test
        :func:`~ballctl.design.controllability.gramian_rank` (default
        :data:`~ballctl.design.controllability.RANK_RTOL`; the rank does not depend on the units of the
        states), applied at both steps; a direction that falls :data:`LEAK_RATIO`-fold when the step
        halves is not counted (module notes). The reported Gramians are those of the states scaled by
        their largest Gramian diagonal entries (so metres and radians compare).
    executor : concurrent.futures.Executor, optional
        Evaluate the partitions there, one task each (e.g. a
        ``ThreadPoolExecutor`` or a Dask client's ``get_executor()``); the
        table is the same as the serial one.

    Returns
    -------
    PartitionComparison
    """
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times.size < 3:
        raise ShapeError("times must be a 1-D array of at least 3 uniformly spaced times in s")
    steps = np.diff(times)
    dt = float(steps.mean())
    if not dt > 0:
        raise ParameterError(f"times must increase, got a mean step of {dt:g} s")
    if np.max(np.abs(steps - dt)) > 1e-9 * max(1.0, dt):
        raise ParameterError("times must be uniformly spaced")
    names = system.coordinate_names
    tracked_names = tuple(getattr(system, "tracked_coordinates", ()) or ()) if tracked is None else tuple(tracked)
    unknown = [c for c in tracked_names if c not in names]
    if unknown:
        raise ParameterError(f"tracked: unknown coordinates {unknown}; coordinates are {names}")
    K = times.size - 1
    fine_times = np.linspace(times[0], times[-1], 2 * K + 1)
    sample = reference(fine_times)
    jacobians = np.stack([np.asarray(system.constraint_jacobian(x), dtype=float) for x in sample.x])
    parts = list(partitions) if partitions is not None else enumerate_partitions(system)
    task = (system, sample, jacobians, dt, rank_rtol, tracked_names)
    if executor is None:
        rows = [_partition_row(part, *task) for part in parts]
    else:
        futures = [executor.submit(_partition_row, part, *task) for part in parts]
        rows = [f.result() for f in futures]
    best, why_none = _recommend(rows, tracked_names)
    rows.sort(key=lambda r: _row_order(r, best, tracked_names))
    return PartitionComparison(tuple(rows), float(times[0]), float(times[-1]), dt, tracked_names,
                               float(rank_rtol), best, why_none)


# ------------------------------------------------------------------ one partition
def _partition_row(part, system, sample, jacobians, dt, rank_rtol, tracked) -> PartitionRow:
    """One row of :func:`compare_partitions` (a task for an executor)."""
    t = sample.t
    where = [f" at t={tk:.6g} s" for tk in t]
    dep = list(part.dependent_all)
    cols = ", ".join(part.coordinate_names[i] for i in dep)
    try:
        cond = part.check_jacobians(system, jacobians, where, cond_limit=np.inf)  # every state's, no raise
    except PartitionError as exc:
        return PartitionRow(part, False, str(exc).split(";")[0])
    bad = np.nonzero(~(cond <= SINGULAR))[0]
    if bad.size:  # as Partition.check; a value at rounding level is not printed (it depends on the machine)
        k = int(bad[0])
        size = "to rounding" if not cond[k] < ROUNDING_SINGULAR else \
            f"|D| / sigma_min(D_dd) = {cond[k]:.3g} > {SINGULAR:.0e}"
        return PartitionRow(part, False, f"D_dd (columns of D for {cols}) is singular{where[k]} ({size})")
    try:
        cond = part.check_jacobians(system, jacobians, where)   # the holonomic block too
    except PartitionError as exc:
        return PartitionRow(part, False, str(exc).split(";")[0])
    if dep:  # a determinant changing sign between two samples passes through zero: singular in between
        det = np.linalg.det(jacobians[:, :, dep])
        flips = np.nonzero(np.sign(det[:-1]) * np.sign(det[1:]) < 0)[0]
        if flips.size:
            k = int(flips[0])
            return PartitionRow(part, False, f"D_dd (columns of D for {cols}) is singular between t={t[k]:.6g} and "
                                             f"{t[k + 1]:.6g} s (its determinant changes sign)")
    ddd = float(cond.max())
    if not ddd < NEAR_SINGULAR:
        return PartitionRow(part, True, "nearly singular", ddd_condition=ddd)
    fine = linearize_samples(system, sample, part)
    coarse = fine.subsample(2)
    models = [discretize(coarse, dt), discretize(fine, dt / 2)]
    A = fine.A
    scale = max(1.0, float(np.abs(A).max()))
    names = fine.state_names
    nai = len(part.independent)
    coupling = float(np.abs(A[:, nai:2 * nai, 2 * nai:]).max()) if part.admissible_dependent else 0.0

    def subsystem(kind, idx):
        other = [i for i in range(len(names)) if i not in idx]
        per_state = np.abs(A[:, idx][:, :, other]).max(axis=(0, 1)) if other else np.zeros(0)
        c = float(per_state.max(initial=0.0))
        order = np.argsort(-per_state, kind="stable")
        drivers = tuple(names[other[j]] for j in order if per_state[j] > EXACT_RTOL * scale)
        grams = [_scaled_gramian(m.Ad[:-1][:, idx][:, :, idx], m.Bd[:-1][:, idx], tuple(names[i] for i in idx),
                                 rank_rtol) for m in models]
        return SubsystemRow(kind, tuple(names[i] for i in idx), _label(part, idx, names), c,
                            c <= EXACT_RTOL * scale, grams[0], grams[1], _refined_rank(*grams, rank_rtol), drivers)

    full_idx, dyn_idx = list(range(len(names))), list(range(2 * nai))
    subs = [subsystem("full", full_idx)]
    if dyn_idx != full_idx:  # without admissible-dependent coordinates the dynamic subsystem is the full state
        subs.append(subsystem("dynamic", dyn_idx))
    if tracked:
        for idx in _candidate_states(part, names, tracked):
            if idx == full_idx or idx == dyn_idx:
                continue
            other = [i for i in range(len(names)) if i not in idx]
            if float(np.abs(A[:, idx][:, :, other]).max()) <= EXACT_RTOL * scale:
                subs.append(subsystem("subsystem", idx))
    return PartitionRow(part, True, "", subs[0], coupling, subs[1] if len(subs) > 1 else subs[0], ddd, tuple(subs))


def _candidate_states(part: Partition, names, tracked) -> list[list[int]]:
    """State indices of every subsystem of ``part`` that contains the tracked coordinates (largest first).

    A subsystem keeps some independent coordinates with their rates and some admissible-dependent
    coordinates, at least one independent one.
    """
    ai = part.independent_names
    ad = part.admissible_dependent_names
    out = []
    for k_ai in range(len(ai), 0, -1):
        for sub_ai in itertools.combinations(ai, k_ai):
            for k_ad in range(len(ad), -1, -1):
                for sub_ad in itertools.combinations(ad, k_ad):
                    if not set(tracked) <= set(sub_ai) | set(sub_ad):
                        continue
                    states = list(sub_ai) + [f"{c}_rate" for c in sub_ai] + list(sub_ad)
                    out.append(sorted(names.index(s) for s in states))
    out.sort(key=len, reverse=True)
    return out


def _label(part: Partition, idx, names) -> str:
    """``"contact_x, contact_y + rates, lean"`` for a subsystem's states."""
    chosen = {names[i] for i in idx}
    ai = [c for c in part.independent_names if c in chosen]
    ad = [c for c in part.admissible_dependent_names if c in chosen]
    text = ", ".join(ai) + " + rates" if ai else ""
    return ", ".join([text] + ad) if ad else text


def _refined_rank(coarse: GramianReport, fine: GramianReport, rank_rtol: float) -> int:
    """Scaled singular values above ``rank_rtol`` at both steps that do not fall LEAK_RATIO-fold as dt halves."""
    sc = np.asarray(coarse.scaled_eigenvalues, dtype=float)
    sf = np.asarray(fine.scaled_eigenvalues, dtype=float)
    kept = (sc > rank_rtol) & (sf > rank_rtol) & (sc < LEAK_RATIO * np.maximum(sf, 0.0))
    return int(min(kept.sum(), coarse.rank, fine.rank))


def _scaled_gramian(Ad, Bd, names, rank_rtol) -> GramianReport:
    """Gramian of the state scaled so that every state's reachable spread is comparable."""
    raw = discrete_gramian(DiscreteLTVSystem.from_arrays(Ad, Bd, state_names=names), rank_rtol=rank_rtol)
    diag = np.diag(raw.W)
    # a state the inputs cannot reach at all keeps a tiny (not zero) scale: no overflow
    scale = np.sqrt(np.maximum(diag, 1e-24 * max(float(diag.max()), np.finfo(float).tiny)))
    S = np.diag(1.0 / scale)
    return discrete_gramian(DiscreteLTVSystem.from_arrays(S @ Ad @ np.diag(scale), S @ Bd, state_names=names),
                            rank_rtol=rank_rtol)


# ------------------------------------------------------------------ the decision
def _signif(value: float) -> float:
    """``value`` to 3 significant digits: orderings do not depend on rounding noise."""
    return float(f"{value:.3g}")


def _candidate_key(row: PartitionRow, sub: SubsystemRow) -> tuple:
    # the largest exact controllable subsystem regulates the most of the motion; then the best conditioned
    # Gramian, then the best conditioned D_dd (3 significant digits: no rounding-noise ties)
    return (-sub.n_states, -_signif(sub.sigma_min_fine), _signif(row.ddd_condition))


def _candidates_of(row: PartitionRow, tracked: tuple[str, ...]) -> list[SubsystemRow]:
    """The subsystems of a usable row a controller could use: exact, completely controllable, with the tracked."""
    if not row.usable:
        return []
    return [s for s in row.subsystems if s.controllable and set(tracked) <= set(s.states)]


def _recommend(rows: list[PartitionRow], tracked: tuple[str, ...]) -> tuple[Recommendation | None, str]:
    """The best candidate (a stable choice: ties keep the enumeration order) and its reason, or why none."""
    usable = [r for r in rows if r.usable]
    if not usable:
        return None, "no partition is admissible all along the reference (D_dd singular or nearly so)"
    candidates = [(r, s) for r in usable for s in _candidates_of(r, tracked)]
    if not candidates:
        what = f"contains {', '.join(tracked)}" if tracked else "is the full state or the dynamic subsystem"
        return None, (f"{len(usable)} partition(s) are admissible all along the reference, but none has an exact, "
                      f"completely controllable subsystem that {what}")
    row, sub = min(candidates, key=lambda c: _candidate_key(*c))
    p = row.partition
    split = (f"independent ({', '.join(p.independent_names)}), admissible dependent "
             f"({', '.join(p.admissible_dependent_names)})"
             + (f", dependent ({', '.join(p.dependent_names)})" if p.dependent else ""))
    kind = {"full": "full state", "dynamic": "dynamic subsystem"}.get(sub.kind, "subsystem")
    lines = [f"{split}; control the {sub.n_states}-state {kind} {sub.label}",
             f"  why: admissible all along the reference (cond(D_dd) <= {row.ddd_condition:.3g}), "
             + ("" if sub.kind == "full" else "exact (no other state drives it), ")
             + f"completely controllable (rank {sub.rank}/{sub.n_states}, sig_min {sub.sigma_min_fine:.3g})"
             + (f", contains the tracked {', '.join(tracked)}" if tracked else "")
             + " and is the largest such subsystem"]
    larger = [s for s in row.subsystems if s.n_states > sub.n_states]
    if larger:
        lines.append("  the larger subsystems of this partition fail: "
                     + "; ".join(f"{s.label} ({_why_not(s)})" for s in larger))
    for r in usable:
        if r is row:
            continue
        q = f"  independent ({', '.join(r.partition.independent_names)}): "
        best = _candidates_of(r, tracked)
        if not best:
            lines.append(q + "no exact, completely controllable subsystem with the tracked coordinates ("
                         + "; ".join(f"{s.label}: {_why_not(s, tracked)}" for s in r.subsystems) + ")")
            continue
        s = min(best, key=lambda s: _candidate_key(r, s))
        lines.append(q + (f"at most {s.n_states} states ({s.label})" if s.n_states < sub.n_states else
                          f"{s.label} as large but ranks after it (sig_min {s.sigma_min_fine:.3g}, cond(D_dd) "
                          f"{r.ddd_condition:.3g})"))
    return Recommendation(row, sub, "\n".join(lines)), ""


def _why_not(s: SubsystemRow, tracked: tuple[str, ...] = ()) -> str:
    """Why a subsystem cannot be the controlled one (short)."""
    out = []
    if not s.exact:
        out.append(f"not exact: driven by {', '.join(s.drivers)}")
    elif s.rank < s.n_states:
        out.append(f"not controllable: rank {s.rank}/{s.n_states}")
    missing = [c for c in tracked if c not in s.states]
    if missing:
        out.append(f"without {', '.join(missing)}")
    return ", ".join(out) or "controllable"


def _row_order(row: PartitionRow, best: Recommendation | None, tracked: tuple[str, ...]) -> tuple:
    """Recommended first, then the usable rows with a candidate, the other usable, nearly singular, not admissible."""
    if best is not None and row is best.row:
        return (0, ())
    if row.usable:
        cands = _candidates_of(row, tracked)
        if cands:
            return (1, min(_candidate_key(row, s) for s in cands))
        return (2, ())
    return (3, ()) if row.admissible else (4, ())
