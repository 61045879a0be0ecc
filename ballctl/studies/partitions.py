r"""Comparing coordinate partitions: which choice gives a controllable linear model?

For every admissible partition (or a given list) the system is linearized
along the reference and, for each, tabulated:

* the rank and conditioning of the discrete reachability Gramian of the full
  reduced state :math:`X = (\delta x_{ai}, \delta\dot x_{ai}, \delta x_{ad})`,
* whether the dynamic subsystem :math:`(\delta x_{ai}, \delta\dot x_{ai})`
  decouples from :math:`\delta x_{ad}` (the size of :math:`A_{23}`),
* the rank of the dynamic subsystem's Gramian, and the least controllable
  direction in named states.

Agúndez et al. (2024), section 3.3 and the conclusions: along the circle, the
partition with independent (yaw, lean, roll) is not completely controllable,
while independent (contact_x, contact_y, yaw) gives a controllable 6-state
system decoupled from lean and roll. The uncontrollable mode is the spin about
the plate normal, :math:`\omega_z = \dot\psi + \dot\theta\sin\phi`, which the
quasi-static plate cannot change (it exerts no torque about its normal);
its linearization is a conserved linear functional of the state.
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

__all__ = ["PartitionComparison", "PartitionRow", "compare_partitions", "enumerate_partitions"]


@dataclass(frozen=True)
class PartitionRow:
    """One partition's line of the comparison.

    Attributes
    ----------
    partition : Partition
    admissible : bool
        False when ``D_dd`` is singular somewhere along the reference (see ``reason``).
    reason : str
    full : GramianReport or None
        Reachability Gramian of the full reduced state.
    coupling : float
        ``max |A23|`` over the samples: how much ``dx_ad`` drives the dynamic subsystem.
    dynamic : GramianReport or None
        Gramian of ``(dx_ai, dxd_ai)`` (exact subsystem only when ``coupling`` is ~0).
    ddd_condition : float
        Largest ``|D| / sigma_min(D_dd)`` over the samples: a large value means
        the partition passes near a singularity between samples.
    """

    partition: Partition
    admissible: bool
    reason: str = ""
    full: GramianReport | None = None
    coupling: float = float("nan")
    dynamic: GramianReport | None = None
    ddd_condition: float = float("nan")

    @property
    def decoupled(self) -> bool:
        return self.admissible and self.coupling <= 1e-9

    @property
    def nearly_singular(self) -> bool:
        """``D_dd`` is badly conditioned (> 1e4) at some sample: the samples may straddle a singularity."""
        return self.admissible and not self.ddd_condition < NEAR_SINGULAR


@dataclass(frozen=True)
class PartitionComparison:
    """The table of :func:`compare_partitions`; ``str()`` prints it.

    Attributes
    ----------
    rows : tuple of PartitionRow
        One row per partition, best first.
    t0, t1 : float
        Interval in s.
    dt : float
        Sample time in s.
    """

    rows: tuple[PartitionRow, ...]
    t0: float
    t1: float
    dt: float

    def to_table(self) -> str:
        """Plain-text table, one row per partition (best first)."""
        head = (f"{'independent':<30} {'adm. dependent':<24} {'full rank':>9} {'dyn. rank':>9} "
                f"{'|A23|':>9} {'cond(D_dd)':>10} {'cond(W_dyn)':>11}  "
                "least controllable direction of the dynamic subsystem (scaled states)")
        lines = [f"partition comparison over [{self.t0:g}, {self.t1:g}] s, dt = {self.dt:g} s", head,
                 "-" * len(head)]
        for r in self.rows:
            p = r.partition
            ai = ", ".join(p.independent_names)
            ad = ", ".join(p.admissible_dependent_names)
            if not r.admissible:
                lines.append(f"{ai:<30} {ad:<24} {'-':>9} {'-':>9} {'-':>9} {'-':>10} {'-':>11}  "
                             f"not admissible: {r.reason}")
                continue
            if r.nearly_singular:
                lines.append(f"{ai:<30} {ad:<24} {'-':>9} {'-':>9} {'-':>9} {r.ddd_condition:10.2e} {'-':>11}  "
                             "nearly singular between samples: not usable")
                continue
            full = f"{r.full.rank}/{r.full.n_states}"
            dyn = f"{r.dynamic.rank}/{r.dynamic.n_states}"
            weakest = ", ".join(f"{w:+.2f} {n}" for n, w in r.dynamic.directions[0][:3])
            lines.append(f"{ai:<30} {ad:<24} {full:>9} {dyn:>9} {r.coupling:9.2e} {r.ddd_condition:10.2e} "
                         f"{r.dynamic.condition_number:11.3e}  {weakest}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_table()


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
                       partitions: Sequence[Partition] | None = None,
                       rank_rtol: float = RANK_RTOL, executor: Executor | None = None) -> PartitionComparison:
    """Linearize along a reference with each partition and tabulate controllability.

    Parameters
    ----------
    system : ConstrainedSystem
    reference : Reference
    times : array_like, shape (K,)
        Uniformly spaced sample times in s; the Gramians are those of the
        exact-ZOH discretization over ``[times[0], times[-1]]``.
    partitions : sequence of Partition, optional
        Default: every partition (:func:`enumerate_partitions`).
    rank_rtol : float
        Relative tolerance of the Gramian ranks, the one rank test
        :func:`~ballctl.design.controllability.gramian_rank` (default
        :data:`~ballctl.design.controllability.RANK_RTOL`; the rank does not depend on the units of the
        states). The reported Gramians are those of the states scaled by their largest Gramian diagonal
        entries (so metres and radians compare).
    executor : concurrent.futures.Executor, optional
        Evaluate the partitions there, one task each (e.g. a
        ``ThreadPoolExecutor`` or a Dask client's ``get_executor()``); the
        table is the same as the serial one.
    """
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times.size < 3:
        raise ShapeError("times must be a 1-D array of at least 3 uniformly spaced times in s")
    steps = np.diff(times)
    dt = float(steps.mean())
    if np.max(np.abs(steps - dt)) > 1e-9 * max(1.0, dt):
        raise ParameterError("times must be uniformly spaced")
    sample = reference(times)
    jacobians = np.stack([np.asarray(system.constraint_jacobian(x), dtype=float) for x in sample.x])
    where = [f" at t={t:.6g} s" for t in sample.t]
    parts = list(partitions) if partitions is not None else enumerate_partitions(system)
    if executor is None:
        rows = [_partition_row(system, sample, part, jacobians, where, dt, rank_rtol) for part in parts]
    else:
        futures = [executor.submit(_partition_row, system, sample, part, jacobians, where, dt, rank_rtol)
                   for part in parts]
        rows = [f.result() for f in futures]

    def order(r: PartitionRow):
        usable = r.admissible and not r.nearly_singular
        return (not usable, -(r.dynamic.rank / r.dynamic.n_states) if usable else 0.0,
                r.coupling if usable else 0.0)

    rows.sort(key=order)
    return PartitionComparison(tuple(rows), float(times[0]), float(times[-1]), dt)


def _partition_row(system, sample, part, jacobians, where, dt, rank_rtol) -> PartitionRow:
    """One row of :func:`compare_partitions` (a task for an executor)."""
    try:
        ddd = float(part.check_jacobians(system, jacobians, where).max())
    except PartitionError as exc:
        return PartitionRow(part, False, str(exc).split(";")[0])
    if not ddd < NEAR_SINGULAR:
        return PartitionRow(part, True, "nearly singular", ddd_condition=ddd)
    ltv = linearize_samples(system, sample, part)
    nai = len(part.independent)
    disc = discretize(ltv, dt)
    full = _scaled_gramian(disc.Ad, disc.Bd, ltv.state_names, rank_rtol)
    coupling = float(np.abs(ltv.A[:, nai:2 * nai, 2 * nai:]).max()) if part.admissible_dependent else 0.0
    dyn_idx = list(range(2 * nai))
    dynamic = _scaled_gramian(disc.Ad[:, dyn_idx][:, :, dyn_idx], disc.Bd[:, dyn_idx],
                              ltv.state_names[:2 * nai], rank_rtol)
    return PartitionRow(part, True, "", full, coupling, dynamic, ddd)


def _scaled_gramian(Ad, Bd, names, rank_rtol) -> GramianReport:
    """Gramian of the state scaled so that every state's reachable spread is comparable."""
    raw = discrete_gramian(DiscreteLTVSystem.from_arrays(Ad, Bd, state_names=names), rank_rtol=rank_rtol)
    diag = np.diag(raw.W)
    # a state the inputs cannot reach at all keeps a tiny (not zero) scale: no overflow
    scale = np.sqrt(np.maximum(diag, 1e-24 * max(float(diag.max()), np.finfo(float).tiny)))
    S = np.diag(1.0 / scale)
    return discrete_gramian(DiscreteLTVSystem.from_arrays(S @ Ad @ np.diag(scale), S @ Bd, state_names=names),
                            rank_rtol=rank_rtol)
