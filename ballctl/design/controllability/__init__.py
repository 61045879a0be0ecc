r"""Controllability of linear time-varying systems ``Xdot = A(t) X + B(t) u``.

Three complementary tests (Agúndez et al. 2024, section 2.3 and the
nomenclature: :math:`W_c(t_0, t_1)`, :math:`\Phi(t_1, \tau)`, :math:`Q_{N-1}(t)`):

* the **controllability Gramian** (Brogan 1991, ch. 11)

  .. math::

      W_c(t_0, t_1) = \int_{t_0}^{t_1} \Phi(t_1, \tau) B(\tau) B(\tau)^T
                      \Phi(t_1, \tau)^T \, d\tau ,

  positive definite iff every state can be reached from the origin on
  :math:`[t_0, t_1]`. :func:`gramian` integrates the matrix ODE it solves,
  :math:`\dot W = A W + W A^T + B B^T`, :math:`W(t_0) = 0`;
  :func:`discrete_gramian` sums its discrete counterpart;
  :func:`transition_matrix` integrates :math:`\dot\Phi = A \Phi`, :math:`\Phi(t_0, t_0) = I`;
* the **Silverman–Meadows rank test** (Silverman & Meadows 1967):
  :math:`Q_k(t) = [B_0(t), \dots, B_k(t)]` with :math:`B_0 = B` and
  :math:`B_{j+1} = -A B_j + \dot B_j`; if :math:`\operatorname{rank} Q_{N-1}(t) = N`
  at some :math:`t` the system is controllable on every interval containing
  :math:`t` (for analytic :math:`A, B` the condition is also necessary);
* for **periodic** references, the monodromy matrix :math:`\Phi(t_0 + T, t_0)`,
  its Floquet multipliers and a PBH-like test of the pair
  (monodromy, one-period Gramian): :func:`monodromy`, :func:`periodic_controllability`.

Systems
-------
Every function takes either a sampled :class:`~ballctl.linear.ltv.LTVSystem` or an
:class:`LTVCallables` (``A_of_t``, ``B_of_t`` and optional derivative
callables).

* Between the samples of an ``LTVSystem``, :math:`A(t)` and :math:`B(t)` are
  **cubic splines** through the samples (``scipy.interpolate.CubicSpline``,
  not-a-knot ends; periodic ends when a ``period`` is given), so Gramians and
  transition matrices carry an interpolation error :math:`O(\Delta t^4)`.
  Times must lie in ``[t[0], t[-1]]`` unless a ``period`` is given, in which
  case they are wrapped into one period.
* The time derivatives needed by the Silverman–Meadows test are, for an
  ``LTVSystem``, taken from the samples: **spectral** (trigonometric
  interpolation of the FFT) for a periodic uniformly sampled system, else a
  **local polynomial** through the :math:`k + 7` nearest samples
  (Fornberg 1988 weights, error :math:`O(\Delta t^{7 + k - m})` for the
  :math:`m`-th derivative). For callables, missing derivative callables are
  replaced by the **Cauchy integral** on a circle of radius ``time_scale / 2``
  in the complex plane (Lyness & Moler 1967) when the callables are complex
  safe, else by the local polynomial on a uniform grid of step
  ``time_scale / 20``. The method used is recorded in the report.

Periodic convention
-------------------
An ``LTVSystem`` over one period has samples ``t[0] < ... < t[K-1]``. With
``period=None`` the **last sample is the periodic copy of the first**:
``period = t[-1] - t[0]`` and ``A[-1] == A[0]``, ``B[-1] == B[0]`` (checked
to a relative 1e-6). With an explicit ``period``, either the same holds
(``t[-1] - t[0] == period``) or the samples cover ``[t[0], t[0] + period)``
without the copy (``t[-1] < t[0] + period``), the sample at ``t[0] + period``
being taken as the first one.

Rank verdicts: every Gramian rank (controllability here, observability in
:mod:`ballctl.design.observability`, the partition and rail-layout studies) is
:func:`gramian_rank`: the rank of the Jacobi-scaled Gramian
:math:`D^{-1/2} W D^{-1/2}`, :math:`D = \mathrm{diag}(W)`, by its singular
values relative to the largest with the one default tolerance
:data:`RANK_RTOL` (1e-10), so that a verdict depends neither on the units of
the states nor on the function that computed the Gramian. The
Silverman-Meadows test ranks another matrix, :math:`Q_k` built from numerical
derivatives of the samples (accurate to about 1e-9 .. 1e-7), with its own
:data:`SM_RANK_RTOL` on balanced singular values; the PBH test of
:func:`periodic_controllability` ranks :math:`[M - \mu I, W]`.

References
----------
A.G. Agúndez, A. Saccon, D. García-Vallejo, E. Freire, "Dynamic inversion and
optimal tracking control on the ball-plate system based on a linearized
nonholonomic multibody model", Mech. Mach. Theory 203 (2024) 105795.

L.M. Silverman, H.E. Meadows, "Controllability and observability in
time-variable linear systems", SIAM J. Control 5 (1967) 64-73.

C. Van Loan, "Computing integrals involving the matrix exponential", IEEE
Trans. Autom. Control 23 (1978) 395-404.

B. Fornberg, "Generation of finite difference formulas on arbitrarily spaced
grids", Math. Comp. 51 (1988) 699-706.

J.N. Lyness, C.B. Moler, "Numerical differentiation of analytic functions",
SIAM J. Numer. Anal. 4 (1967) 202-210.

S. Bittanti, P. Colaneri, *Periodic Systems: Filtering and Control*,
Springer 2009, ch. 4 (reachability and the PBH test of periodic systems).
"""

from .coefficients import LTVCallables
from .gramians import RANK_RTOL, GramianReport, discrete_gramian, gramian, gramian_rank, transition_matrix
from .periodic import MonodromyReport, PeriodicControllabilityReport, monodromy, periodic_controllability
from .silverman_meadows import SM_RANK_RTOL, SilvermanMeadowsReport, silverman_meadows

__all__ = [
    "RANK_RTOL",
    "gramian_rank",
    "SM_RANK_RTOL",
    "LTVCallables",
    "GramianReport",
    "SilvermanMeadowsReport",
    "MonodromyReport",
    "PeriodicControllabilityReport",
    "transition_matrix",
    "gramian",
    "discrete_gramian",
    "silverman_meadows",
    "monodromy",
    "periodic_controllability",
]
