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

__all__ = ["BINDING_RTOL", "BETWEEN_NODES_RTOL", "tighten_contact_backoffs", "check_friction_coefficient", "check_min_normal_force", "contact_constraint_groups",
           "contact_summary", "binding_contact_constraints", "contact_summary_text", "contact_failure_message"]

#: relative distance to a bound below which a contact constraint counts as binding
BINDING_RTOL = 1e-6

#: what the planners accept between the collocation points (sampled densely): the peak ``|F_t|/N`` up to
#: ``friction_coefficient * (1 + BETWEEN_NODES_RTOL)``, the least N down to ``min_normal_force_N - BETWEEN_NODES_RTOL M g``
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
        :math:`b_N` >= 0 in N.
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
        offset = normal_backoff_N if min_normal_force_N is not None else 0.0
        groups.append((label, ((normal - offset) / W).T, least / W, np.inf))
    return groups


def tighten_contact_backoffs(peak_friction: float, least_normal_N: float, *, friction_coefficient: float | None,
                             min_normal_force_N: float | None, weight_N: float, friction_backoff: float,
                             normal_backoff_N: float) -> tuple[float, float, bool]:
    r"""New back-offs when a plan, sampled between its collocation points, leaves the contact constraints.

    A measured peak :math:`\mu (1 + e)` with :math:`e >` :data:`BETWEEN_NODES_RTOL`
    =: :math:`\epsilon` sets :math:`1 - b_\mu \leftarrow (1 - b_\mu)(1 - \epsilon/2)/(1 + e)`:
    the collocation-point bound shrinks by the overshoot (which, relative to it,
    hardly changes from one solve to the next) and half the tolerance, at most
    to half of :math:`\mu`; a least normal force :math:`N_{min} - d` with
    :math:`d > \epsilon W` gives :math:`b_N \leftarrow b_N + d + \epsilon W / 2`.

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
    changed : bool
        Whether either changed (the plan should be re-solved).
    """
    b_mu, b_n, changed = float(friction_backoff), float(normal_backoff_N), False
    if friction_coefficient is not None:
        e = peak_friction / friction_coefficient - 1.0
        if e > BETWEEN_NODES_RTOL and b_mu < 0.5:
            shrink = (1.0 - 0.5 * BETWEEN_NODES_RTOL) / (1.0 + e) if np.isfinite(e) else 0.0
            b_mu, changed = min(0.5, 1.0 - (1.0 - b_mu) * shrink), True
    if min_normal_force_N is not None:
        d = min_normal_force_N - least_normal_N
        if d > BETWEEN_NODES_RTOL * weight_N:
            b_n, changed = b_n + d + 0.5 * BETWEEN_NODES_RTOL * weight_N, True
    return b_mu, b_n, changed


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
