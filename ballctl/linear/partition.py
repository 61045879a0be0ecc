r"""Coordinate partitions for the reduced linearization.

A partition splits the n generalized coordinates into (Agúndez et al. 2024,
eqs. (9)-(12))

* ``independent`` :math:`x_{ai}` (n - m - l): independent positions and velocities,
* ``admissible_dependent`` :math:`x_{ad}` (l): admissible positions whose
  velocities follow from the nonholonomic constraints,
* ``dependent`` :math:`x_d` (m): positions that follow from the holonomic constraints.

It is valid at a state ``x`` when :math:`D_{dd}` (the columns of ``D(x)`` for
``x_ad`` and ``x_d``) is invertible and, if m > 0, the columns of ``C_x`` for
``x_d`` are invertible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import PartitionError
from .._linalg import inverse_stack
from ..system import ConstrainedSystem

__all__ = ["Partition"]

_COND_LIMIT = 1e10


def _resolve(system: ConstrainedSystem, items: Sequence[int | str], label: str) -> tuple[int, ...]:
    names = system.coordinate_names
    if isinstance(items, (str, bytes)) or not isinstance(items, (Sequence, np.ndarray)):
        raise PartitionError(f"{label} must be a sequence of coordinate names or indices, got {items!r}")
    out = []
    for item in items:
        if isinstance(item, str):
            if item not in names:
                raise PartitionError(f"{label}: unknown coordinate {item!r}; coordinates are {names}")
            out.append(names.index(item))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not 0 <= int(item) < len(names):
                raise PartitionError(f"{label}: index {item} out of range 0..{len(names) - 1}")
            out.append(int(item))
        else:
            raise PartitionError(f"{label}: entries must be coordinate names or indices, got {item!r}")
    return tuple(out)


@dataclass(frozen=True)
class Partition:
    """A split of the coordinates into independent, admissible-dependent and dependent sets.

    Build it with :meth:`from_coordinates` (names or indices) or
    :meth:`automatic`; the constructor takes validated index tuples.

    Attributes
    ----------
    independent : tuple of int
        Indices of :math:`x_{ai}`, length n - m - l.
    admissible_dependent : tuple of int
        Indices of :math:`x_{ad}`, length l.
    dependent : tuple of int
        Indices of :math:`x_d`, length m.
    coordinate_names : tuple of str
        Names of all n coordinates, in the system's order.
    """

    independent: tuple[int, ...]
    admissible_dependent: tuple[int, ...]
    dependent: tuple[int, ...]
    coordinate_names: tuple[str, ...]

    def __post_init__(self) -> None:
        n = len(self.coordinate_names)
        allidx = self.independent + self.admissible_dependent + self.dependent
        seen = sorted(allidx)
        if seen != list(range(n)):
            dup = sorted({i for i in allidx if allidx.count(i) > 1})
            miss = sorted(set(range(n)) - set(allidx))
            parts = []
            if dup:
                parts.append("repeated: " + ", ".join(self.coordinate_names[i] for i in dup))
            if miss:
                parts.append("missing: " + ", ".join(self.coordinate_names[i] for i in miss))
            raise PartitionError("a partition must list every coordinate exactly once (" + "; ".join(parts) + ")")
        if not self.independent:
            raise PartitionError("a partition needs at least one independent coordinate")

    # -------------------------------------------------------------- builders
    @classmethod
    def from_coordinates(cls, system: ConstrainedSystem, independent: Sequence[int | str],
                         admissible_dependent: Sequence[int | str] | None = None,
                         dependent: Sequence[int | str] | None = None) -> "Partition":
        """Build a partition from coordinate names or indices.

        The sizes must be n - m - l, l and m. When ``admissible_dependent`` is
        omitted and m == 0, the coordinates not listed as independent form it.

        Parameters
        ----------
        system : ConstrainedSystem
            The system.
        independent : sequence of int or str
            The n - m - l independent coordinates.
        admissible_dependent : sequence of int or str, optional
            The l admissible-dependent coordinates.
        dependent : sequence of int or str, optional
            The m dependent coordinates.
        """
        ai = _resolve(system, independent, "independent")
        if dependent is None:
            if system.n_holonomic:
                raise PartitionError("dependent coordinates must be given when the system has holonomic constraints")
            d: tuple[int, ...] = ()
        else:
            d = _resolve(system, dependent, "dependent")
        if admissible_dependent is None:
            ad = tuple(i for i in range(system.n_coordinates) if i not in ai and i not in d)
        else:
            ad = _resolve(system, admissible_dependent, "admissible_dependent")
        sizes = (("independent", ai, system.n_dof), ("admissible_dependent", ad, system.n_nonholonomic),
                 ("dependent", d, system.n_holonomic))
        for label, idx, expected in sizes:
            if len(idx) != expected:
                raise PartitionError(
                    f"{label} must have {expected} coordinates for n={system.n_coordinates}, "
                    f"m={system.n_holonomic}, l={system.n_nonholonomic}; got {len(idx)}: "
                    f"{[system.coordinate_names[i] for i in idx]}")
        return cls(ai, ad, d, system.coordinate_names)

    @classmethod
    def automatic(cls, system: ConstrainedSystem, x) -> "Partition":
        """Choose a partition by Gaussian elimination with column pivoting on ``D(x)``.

        The holonomic rows are eliminated first, their pivot columns become
        the dependent coordinates; the pivots of the nonholonomic rows become
        the admissible-dependent ones (Agúndez et al. 2024, section 2.2).

        Parameters
        ----------
        system : ConstrainedSystem
            The system.
        x : array_like, shape (n,)
            Coordinates where ``D(x)`` is eliminated.
        """
        D = np.array(system.constraint_jacobian(np.asarray(x, dtype=float)), dtype=float)
        k, n = D.shape
        free = list(range(n))
        pivots = []
        for r in range(k):
            col = max(free, key=lambda j: abs(D[r, j]))
            if abs(D[r, col]) <= 1e-12 * max(1.0, np.max(np.abs(D))):
                raise PartitionError(
                    f"constraint_jacobian is rank deficient at x={np.asarray(x)}: row {r} has no pivot")
            pivots.append(col)
            free.remove(col)
            D[r + 1:] -= np.outer(D[r + 1:, col] / D[r, col], D[r])
        m = system.n_holonomic
        d = tuple(sorted(pivots[:m]))
        ad = tuple(sorted(pivots[m:]))
        ai = tuple(free)
        part = cls(ai, ad, d, system.coordinate_names)
        part.check(system, x)
        return part

    # ------------------------------------------------------------ properties
    @property
    def order(self) -> tuple[int, ...]:
        """Permutation ``(x_ai, x_ad, x_d)`` of the coordinate indices."""
        return self.independent + self.admissible_dependent + self.dependent

    @property
    def dependent_all(self) -> tuple[int, ...]:
        """Indices of ``(x_ad, x_d)``, whose columns of ``D`` form ``D_dd``."""
        return self.admissible_dependent + self.dependent

    @property
    def independent_names(self) -> tuple[str, ...]:
        return tuple(self.coordinate_names[i] for i in self.independent)

    @property
    def admissible_dependent_names(self) -> tuple[str, ...]:
        return tuple(self.coordinate_names[i] for i in self.admissible_dependent)

    @property
    def dependent_names(self) -> tuple[str, ...]:
        return tuple(self.coordinate_names[i] for i in self.dependent)

    @property
    def state_names(self) -> tuple[str, ...]:
        """Names of the reduced state ``X = (dx_ai, dxd_ai, dx_ad)`` (eq. 18)."""
        ai = self.independent_names
        return ai + tuple(f"{s}_rate" for s in ai) + self.admissible_dependent_names

    @property
    def n_states(self) -> int:
        return 2 * len(self.independent) + len(self.admissible_dependent)

    def describe(self) -> str:
        """One-line description, e.g. ``ai=(contact_x, contact_y, yaw) ad=(lean, roll)``."""
        s = f"ai=({', '.join(self.independent_names)}) ad=({', '.join(self.admissible_dependent_names)})"
        if self.dependent:
            s += f" d=({', '.join(self.dependent_names)})"
        return s

    def complete_velocities(self, system: ConstrainedSystem, x, xd) -> np.ndarray:
        """Velocities with the independent entries of ``xd`` kept and the dependent ones
        solved from ``D(x) xd = 0`` exactly, shape (n,).

        Parameters
        ----------
        system : ConstrainedSystem
            The system.
        x, xd : array_like, shape (n,)
            Coordinates and velocities.

        Raises
        ------
        PartitionError
            When ``D_dd`` (the constraint columns of the dependent coordinates) is singular at ``x``, so
            the constraints do not determine the dependent velocities; the message names them.
        """
        x = np.asarray(x, dtype=float)
        out = np.array(xd, dtype=float)
        D = np.asarray(system.constraint_jacobian(x), dtype=float)
        if D.shape[0]:
            dep = list(self.dependent_all)
            ai = list(self.independent)
            inv, ok = inverse_stack(np.ascontiguousarray(D[None][:, :, dep]))
            with np.errstate(invalid="ignore", over="ignore"):
                cond = float(np.sqrt((D * D).sum() * (inv * inv).sum())) if ok[0] else float("inf")
            if not cond <= _COND_LIMIT:
                names = self.coordinate_names
                raise PartitionError(
                    f"complete_velocities: the partition {self.describe()} cannot complete the velocities at "
                    f"x={np.array2string(x, precision=4)}: D_dd, the constraint columns of the dependent "
                    f"coordinates {', '.join(names[i] for i in dep)}, is singular there (|D| / sigma_min(D_dd) = "
                    f"{cond:.3g} > {_COND_LIMIT:.0e}), so the constraints D(x) xd = 0 do not determine the "
                    f"velocities {', '.join(names[i] + '_rate' for i in dep)} from those of "
                    f"{', '.join(names[i] for i in ai)}; choose other dependent coordinates, e.g. "
                    f"Partition.automatic(system, x)")
            out[dep] = -np.linalg.solve(D[:, dep], D[:, ai] @ out[ai])
        return out

    # ------------------------------------------------------------ validation
    def check(self, system: ConstrainedSystem, x, *, t: float | None = None,
              cond_limit: float = _COND_LIMIT) -> float:
        """Raise :class:`PartitionError` unless ``D_dd`` is invertible at ``x``.

        The measure is ``|D|_F |D_dd^{-1}|_F`` (the condition of the
        dependent block relative to the whole Jacobian, so a 1x1 block near
        zero is caught); it is returned. It bounds ``|D|_2 / sigma_min(D_dd)``
        from above, within a factor ``m + l``.

        Parameters
        ----------
        system : ConstrainedSystem
            The system.
        x : array_like, shape (n,)
            Coordinates.
        t : float, optional
            Time in s, for the message.
        cond_limit : float
            Largest accepted ``|D|_F |D_dd^{-1}|_F``.
        """
        x = np.asarray(x, dtype=float)
        D = np.asarray(system.constraint_jacobian(x), dtype=float)
        where = [f" at t={t:.6g} s" if t is not None else f" at x={np.array2string(x, precision=4)}"]
        return float(self.check_jacobians(system, D[None], where, cond_limit=cond_limit)[0])

    def check_jacobians(self, system: ConstrainedSystem, D, where, *, cond_limit: float = _COND_LIMIT
                        ) -> np.ndarray:
        """:meth:`check` for a stack of already evaluated constraint Jacobians.

        Parameters
        ----------
        system : ConstrainedSystem
        D : ndarray, shape (K, m + l, n)
            ``D(x_k)`` at K states.
        where : sequence of str
            How to name each state in an error (e.g. ``" at t=0.5 s"``).
        cond_limit : float

        Returns
        -------
        ndarray, shape (K,)
            ``|D|_F |D_dd^{-1}|_F`` per state (see :meth:`check`); raises at the first state beyond
            ``cond_limit``.
        """
        if self.coordinate_names != system.coordinate_names:
            raise PartitionError(f"partition coordinates {self.coordinate_names} do not match the system's "
                                 f"{system.coordinate_names}")
        if (len(self.independent), len(self.admissible_dependent), len(self.dependent)) != (
                system.n_dof, system.n_nonholonomic, system.n_holonomic):
            raise PartitionError("partition sizes do not match the system's n - m - l, l, m")
        D = np.asarray(D, dtype=float)
        if D.shape[1] == 0:
            return np.ones(D.shape[0])
        # measured against the scale of the whole D, so that a 1x1 D_dd near zero is caught too; Frobenius
        # norms and a compiled stack inverse instead of two SVDs per state (the linearizer's long pole)
        inv, ok = inverse_stack(np.ascontiguousarray(D[:, :, list(self.dependent_all)]))
        with np.errstate(invalid="ignore", over="ignore"):
            cond = np.where(ok, np.sqrt((D * D).sum(axis=(1, 2)) * (inv * inv).sum(axis=(1, 2))), np.inf)
        bad = np.nonzero(~(cond <= cond_limit))[0]
        if bad.size:
            k = int(bad[0])
            raise PartitionError(
                f"D_dd (columns of D for {', '.join(self.coordinate_names[i] for i in self.dependent_all)}) "
                f"is singular{where[k]} (|D| / sigma_min(D_dd) = {cond[k]:.3g} > {cond_limit:.0e}); choose other "
                f"dependent coordinates, e.g. Partition.automatic(system, x)")
        if self.dependent:
            cc = np.linalg.cond(D[:, : system.n_holonomic][:, :, list(self.dependent)])
            bad = np.nonzero(~(cc <= cond_limit))[0]
            if bad.size:
                k = int(bad[0])
                raise PartitionError(
                    f"the columns of C_x for the dependent coordinates "
                    f"{', '.join(self.dependent_names)} are singular{where[k]} (condition number {cc[k]:.3g})")
        return cond
