r"""Contact constraints of the planners: the Coulomb friction cone and a least normal force.

Both planners (:func:`~ballctl.planning.maneuver.plan_maneuver` and
:func:`~ballctl.planning.ball_plate.plan_plate_motion`) take a friction
coefficient :math:`\mu` (dimensionless, > 0) and a least normal force
:math:`N_{min}` (N, >= 0). Given, the NLP imposes at every collocation point

.. math::

    \frac{|F_t|^2 - \mu^2 N^2}{W^2} \le 0,\qquad \frac{N}{W} \ge \frac{\max(N_{min}, 0)}{W},

the friction cone :math:`|F_t| \le \mu N` written smooth (squared, with
:math:`N \ge 0` its other half) and scaled by the weight :math:`W = M g` to be
dimensionless. ``F`` is the contact force of the planner's CasADi model
(:mod:`ballctl.planning.symbolic`: :math:`F = \sum_i m_i a_i + M g\,e_3` for the
internal-mass ball and disk, :math:`F = m(a_G - g_{plate})` for the ball-plate),
proven equal to the plants' numeric ``contact_forces`` in
``tests/test_planning_contact.py``. A closed loop that needs more than the
rig's friction slips; one whose normal force reaches zero lifts off.

This module holds what the two planners share: the validation of the two
parameters, the constraint groups, the plan's contact summary (peak required
friction coefficient, least normal force), which contact constraints bind, and
the message of a plan made infeasible by them.
"""

from __future__ import annotations

import math

import numpy as np

from .._errors import ParameterError
from ..plants import friction_coefficient_required

__all__ = ["BINDING_RTOL", "BETWEEN_NODES_RTOL", "between_nodes_message", "binding_contact_constraints",
           "check_friction_coefficient", "check_min_normal_force", "contact_constraint_groups",
           "contact_failure_message", "contact_summary", "contact_summary_text", "update_contact_backoffs"]

#: relative distance to a bound below which a contact constraint counts as binding
BINDING_RTOL = 1e-6

#: what the planners accept between the collocation points (sampled densely): the peak ``|F_t|/N`` up to
#: ``friction_coefficient * (1 + BETWEEN_NODES_RTOL)``, the least N down to
#: ``min_normal_force_N - BETWEEN_NODES_RTOL M g``
BETWEEN_NODES_RTOL = 1e-3


def _real(value, name: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be {what} or None, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be {what} or None, got {value!r}")
    return v


def check_friction_coefficient(value) -> float | None:
    """Validate a Coulomb friction coefficient: ``None`` (no friction constraint) or a finite number > 0.

    Parameters
    ----------
    value : float or None
        Dimensionless friction coefficient between the body and the floor (or plate).

    Returns
    -------
    float or None

    Raises
    ------
    ParameterError
        Not a finite real number > 0 (dimensionless).
    """
    if value is None:
        return None
    what = "a finite number > 0 (the dimensionless Coulomb friction coefficient, e.g. 0.5)"
    v = _real(value, "friction_coefficient", what)
    if v <= 0.0:
        raise ParameterError(f"friction_coefficient must be {what} or None, got {value!r}")
    return v


def check_min_normal_force(value) -> float | None:
    """Validate a least normal contact force: ``None`` (no bound) or a finite number >= 0 in N.

    Parameters
    ----------
    value : float or None
        Least normal force in N (0 keeps the body from lifting off).

    Returns
    -------
    float or None

    Raises
    ------
    ParameterError
        Not a finite real number >= 0 N.
    """
    if value is None:
        return None
    what = "a finite force >= 0 N (0 keeps the contact from lifting off)"
    v = _real(value, "min_normal_force_N", what)
    if v < 0.0:
        raise ParameterError(f"min_normal_force_N must be {what} or None, got {value!r}")
    return v


def contact_constraint_groups(normal, tangential, *, friction_coefficient: float | None,
                              min_normal_force_N: float | None, weight_N: float, friction_backoff=0.0,
                              normal_backoff_N=0.0, where: str = "") -> list[tuple[str, object, float, float]]:
    r"""The NLP constraint groups of the friction cone and the least normal force at the collocation points.

    With the back-offs :math:`b_\mu` (a fraction of :math:`\mu`) and
    :math:`b_N` (N), set by the planners' re-check between the collocation
    points, the constraints are imposed as
    :math:`|F_t|^2 \le ((1 - b_\mu)\mu)^2 N^2` and :math:`N \ge N_{min} + b_N`.

    Parameters
    ----------
    normal : casadi expression, shape (1, P)
        Normal contact force N in N at the P collocation points.
    tangential : casadi expression, shape (k, P)
        Friction force in N (``k`` = 2 on a floor or plate, 1 for the disk).
    friction_coefficient : float or None
        :math:`\mu`; given, :math:`(|F_t|^2 - \mu^2 N^2) / W^2 \le 0` and :math:`N \ge 0`.
    min_normal_force_N : float or None
        Given, :math:`N \ge N_{min}` (N).
    weight_N : float
        The scale ``W = M g`` in N (the constraints are divided by it).
    friction_backoff : float or casadi expression
        :math:`b_\mu` in [0, 1), dimensionless (an NLP parameter in the planners).
    normal_backoff_N : float or casadi expression
        :math:`b_N` >= 0 in N (added to the floor of N, 0 under the friction cone alone).
    where : str
        Appended to the labels (e.g. ``", leg 2"``).

    Returns
    -------
    list of (label, expression, lower, upper)
        The groups in the planners' format, each expression a column of length
        P; empty when both constraints are ``None``. The labels name the
        parameters (``friction_coefficient``, ``min_normal_force_N``), so
        :func:`~ballctl.planning.transcription.most_violated` names them.
    """
    from ._casadi import require_casadi

    ca = require_casadi()
    W = float(weight_N)
    if not W > 0:
        raise ParameterError(f"weight_N must be > 0 N, got {weight_N!r}")
    groups = []
    if friction_coefficient is not None:
        mu = float(friction_coefficient)
        mu_used = (1.0 - friction_backoff) * mu
        cone = (ca.sum1(tangential ** 2) - mu_used ** 2 * normal ** 2) / W ** 2
        groups.append((f"friction cone |F_t| <= mu N (friction_coefficient = {mu:.4g}; slips){where}",
                       cone.T, -np.inf, 0.0))
    if friction_coefficient is not None or min_normal_force_N is not None:
        least = max(0.0, min_normal_force_N or 0.0)
        label = (f"normal force N >= min_normal_force_N = {least:.4g} N (lifts off){where}"
                 if min_normal_force_N is not None else
                 f"normal force N >= 0 (friction cone, friction_coefficient; lifts off){where}")
        groups.append((label, ((normal - normal_backoff_N) / W).T, least / W, np.inf))
    return groups


def update_contact_backoffs(peak_friction: float, least_normal_N: float, *, friction_coefficient: float | None,
                            min_normal_force_N: float | None, weight_N: float, friction_backoff: float,
                            normal_backoff_N: float) -> tuple[float, float, bool, bool]:
    r"""Whether a plan, sampled between its collocation points, keeps the contact constraints; new back-offs.

    With :math:`\epsilon` = :data:`BETWEEN_NODES_RTOL`, a plan keeps them when its
    dense peak is at most :math:`\mu(1 + \epsilon)` and its least normal force
    at least :math:`N_{min} - \epsilon W` (:math:`N_{min} = 0` under the
    friction cone alone). A peak :math:`\mu(1 + e)` with :math:`e > \epsilon`,
    or :math:`e < -5\epsilon` while :math:`b_\mu > 0` (too conservative), sets

    .. math::

        1 - b_\mu \leftarrow (1 - b_\mu)\,\frac{1 - \epsilon/2}{1 + e}

    (the collocation-point bound scaled by the measured ratio, aiming half the
    tolerance below :math:`\mu`; :math:`0 \le b_\mu \le 1/2`). A least force
    :math:`N_{min} - d` with :math:`d > \epsilon W` (or, under the friction cone,
    :math:`N \le 0` anywhere) sets :math:`b_N \leftarrow \min(b_N + \max(d, 0) + \epsilon W/2, W/2)`;
    :math:`d < -5\epsilon W` with :math:`b_N > 0` loosens it the same way.

    Parameters
    ----------
    peak_friction, least_normal_N : float
        :func:`contact_summary` of the dense samples (dimensionless, N).
    friction_coefficient, min_normal_force_N : float or None
        The problem's constraints.
    weight_N : float
        ``M g`` in N.
    friction_backoff, normal_backoff_N : float
        The current back-offs (dimensionless, N).

    Returns
    -------
    friction_backoff, normal_backoff_N : float
        The new back-offs.
    keeps : bool
        Whether the sampled plan keeps the contact constraints (within the tolerance).
    changed : bool
        Whether a back-off changed (the plan should be re-solved with them).
    """
    b_mu0, b_n0 = float(friction_backoff), float(normal_backoff_N)
    b_mu, b_n, keeps = b_mu0, b_n0, True
    tol, loosen = BETWEEN_NODES_RTOL, 5.0 * BETWEEN_NODES_RTOL
    if friction_coefficient is not None:
        e = peak_friction / friction_coefficient - 1.0 if np.isfinite(peak_friction) else np.inf
        keeps = keeps and e <= tol
        if np.isfinite(e) and (e > tol or (e < -loosen and b_mu0 > 0.0)):
            b_mu = min(0.5, max(0.0, 1.0 - (1.0 - b_mu0) * (1.0 - 0.5 * tol) / (1.0 + e)))
    # the floor of N: min_normal_force_N, or 0 under the friction cone (its other half, N >= 0)
    floor = min_normal_force_N
    if floor is None and friction_coefficient is not None:
        floor = 0.0
    if floor is not None:
        d = floor - least_normal_N
        keeps = keeps and d <= tol * weight_N
        if d > tol * weight_N or (friction_coefficient is not None and not np.isfinite(peak_friction)):
            b_n = min(0.5 * weight_N, b_n0 + max(d, 0.0) + 0.5 * tol * weight_N)
        elif d < -loosen * weight_N and b_n0 > 0.0:
            b_n = max(0.0, b_n0 + d + 0.5 * tol * weight_N)
    changed = abs(b_mu - b_mu0) > 1e-12 or abs(b_n - b_n0) > 1e-12 * weight_N
    return b_mu, b_n, bool(keeps), bool(changed)


def between_nodes_message(peak_friction: float, least_normal_N: float, *, friction_coefficient: float | None,
                          min_normal_force_N: float | None, rounds: int) -> str:
    """The message of a plan that keeps the contact constraints at its collocation points but not between them.

    Parameters
    ----------
    peak_friction, least_normal_N : float
        :func:`contact_summary` of 20 samples per interval (dimensionless, N).
    friction_coefficient, min_normal_force_N : float or None
        The problem's constraints.
    rounds : int
        The re-solves tried.

    Returns
    -------
    str
    """
    given = []
    if friction_coefficient is not None:
        given.append(f"the friction cone (friction_coefficient = {friction_coefficient:.4g})")
    if min_normal_force_N is not None:
        given.append(f"the least normal force (min_normal_force_N = {min_normal_force_N:.4g} N)")
    return (f"not converged: {' and '.join(given)} met at the collocation points but not between them after "
            f"{rounds} re-solves with tightened bounds: the plan needs a peak |F_t|/N of {peak_friction:.4g} "
            f"with a least normal force of {least_normal_N:.4g} N on 20 samples per interval. Use more "
            f"intervals (or SolverOptions.contact_rounds), or relax the contact constraints: the request may be "
            f"infeasible.")


def contact_summary(normal, tangential) -> tuple[float, float]:
    """Peak required friction coefficient and least normal force of sampled contact forces.

    Parameters
    ----------
    normal : array_like, shape (K,)
        Normal force in N.
    tangential : array_like, shape (K, k)
        Friction force in N.

    Returns
    -------
    peak_friction_coefficient_required : float
        ``max |F_t| / N`` (dimensionless; ``inf`` where ``N <= 0``), see
        :func:`~ballctl.plants.base.friction_coefficient_required`.
    least_normal_force_N : float
        ``min N`` in N.
    """
    normal = np.asarray(normal, dtype=float).reshape(-1)
    tangential = np.asarray(tangential, dtype=float).reshape(normal.size, -1)
    return float(np.max(friction_coefficient_required(normal, tangential))), float(np.min(normal))


def binding_contact_constraints(peak_friction: float, least_normal_N: float, *, friction_coefficient: float | None,
                                min_normal_force_N: float | None, weight_N: float,
                                rtol: float = BINDING_RTOL) -> tuple[str, ...]:
    """Which contact constraints a plan meets with equality (active at its optimum).

    Parameters
    ----------
    peak_friction, least_normal_N : float
        From :func:`contact_summary` (dimensionless, N).
    friction_coefficient, min_normal_force_N : float or None
        The problem's constraints.
    weight_N : float
        ``M g`` in N: the scale of the normal-force tolerance.
    rtol : float
        Relative distance to the bound counted as binding.

    Returns
    -------
    tuple of str
        ``"friction_coefficient"`` and/or ``"min_normal_force_N"``.
    """
    out = []
    if friction_coefficient is not None and peak_friction >= friction_coefficient * (1.0 - rtol):
        out.append("friction_coefficient")
    if min_normal_force_N is not None and least_normal_N <= min_normal_force_N + rtol * weight_N:
        out.append("min_normal_force_N")
    return tuple(out)


def contact_summary_text(peak_friction: float, least_normal_N: float, binding: tuple[str, ...]) -> str:
    """One clause for a converged plan's message: the contact numbers and the binding constraints.

    Parameters
    ----------
    peak_friction, least_normal_N : float
        From :func:`contact_summary` (dimensionless, N).
    binding : tuple of str
        From :func:`binding_contact_constraints`.

    Returns
    -------
    str
    """
    text = f"peak |F_t|/N = {peak_friction:.4g}, least normal force {least_normal_N:.4g} N"
    if binding:
        text += "; binding: " + ", ".join(
            {"friction_coefficient": "friction cone (friction_coefficient)",
             "min_normal_force_N": "least normal force (min_normal_force_N)"}[b] for b in binding)
    return text


def contact_failure_message(*, friction_coefficient: float | None, min_normal_force_N: float | None,
                            relaxed_converged: bool, relaxed_peak_friction: float,
                            relaxed_least_normal_N: float) -> str:
    """Why a plan with contact constraints failed, from a re-solve without them.

    Parameters
    ----------
    friction_coefficient, min_normal_force_N : float or None
        The problem's contact constraints.
    relaxed_converged : bool
        Whether the same problem without the contact constraints converged.
    relaxed_peak_friction, relaxed_least_normal_N : float
        That plan's peak required friction coefficient and least normal force (N).

    Returns
    -------
    str
        Empty when the relaxed problem failed too (the contact constraints are
        then not shown to be the cause); otherwise a sentence naming them.
    """
    if not relaxed_converged:
        return ""
    given = []
    if friction_coefficient is not None:
        given.append(f"the friction cone |F_t| <= mu N with friction_coefficient = {friction_coefficient:.4g}")
    if min_normal_force_N is not None:
        given.append(f"the least normal force min_normal_force_N = {min_normal_force_N:.4g} N")
    violated = []
    if friction_coefficient is not None and relaxed_peak_friction > friction_coefficient:
        violated.append("friction_coefficient")
    if min_normal_force_N is not None and relaxed_least_normal_N < min_normal_force_N:
        violated.append("min_normal_force_N")
    culprit = " and ".join(violated) if violated else "the contact constraints"
    return (f"the contact constraints make it infeasible: {' and '.join(given)}. Without them the problem "
            f"solves, needing a peak |F_t|/N of {relaxed_peak_friction:.4g} and a least normal force of "
            f"{relaxed_least_normal_N:.4g} N; relax {culprit}, lengthen the motion or loosen its end conditions.")
