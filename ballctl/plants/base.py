r"""The plant contract: what the pipeline relies on, written down and checkable.

ballctl has two kinds of plants. Both are immutable descriptions (the state of
a run lives in its result); :func:`check_plant` checks every rule below at
random consistent states, and ``tests/test_plant_contract.py`` runs it over
the registry :data:`ballctl.plants.PLANTS`.

Constrained plants (the pipeline: simulate, invert, linearize, design)
--------------------------------------------------------------------------
A :class:`~ballctl.system.ConstrainedSystem` subclass (rules 1-8 of
:mod:`ballctl.system`: shapes, symmetric ``M``, holonomic rows first,
scleronomic constraints, complex-step safety, SI units, batch axis) that
also honours:

C1. ``name`` -- a short identifier (class attribute), used in reports and
    file metadata.
C2. ``params`` -- a frozen parameters dataclass with ``as_dict()`` returning
    a JSON-serialisable ``dict`` (units in the keys or the docstring).
C3. ``batched`` -- True for every built-in plant whose callables accept a
    leading batch axis ``(K, ...)``; stacked results equal looped ones to
    rounding (``1e-12`` relative).
C4. Complex-step safety: ``mass_matrix``, ``forces``, ``constraint_jacobian``
    and ``constraint_bias`` are analytic in their arguments, so the
    complex-step derivative equals a central difference to the latter's
    truncation error (``~1e-7`` relative).
C5. Charts: a plant whose coordinates include angles with a singular chart
    provides ``chart_margin(x) -> (...)``, positive where the chart is
    usable (the simulation stops where it reaches zero), and may provide
    ``rechart(x, xd) -> (x, xd)``, the same physical state in a fresh chart:
    the kinetic energy ``xd^T M xd / 2`` and the constraint residual
    ``D xd`` do not change and the new state has a positive margin.
C6. ``accelerations`` of a consistent state satisfy eq. (1) and the
    acceleration-level constraints; the mass matrix is positive definite
    on the null space of ``D``.

ODE plants (the internally actuated rolling ball and disk)
-------------------------------------------------------------
An object (see :class:`~ballctl.plants.internal_masses.InternalMassesPlant`)
with:

O1. ``name``, ``params`` (with ``as_dict()``), ``inputs`` in
    :data:`~ballctl.plants.internal_masses.INPUT_MODES`, ``n_states`` and
    ``n_inputs``.
O2. ``rhs(t, x, u) -> (..., n_states)``, batched over leading axes and
    complex-step safe in ``x``; ``rhs_jacobian(t, x, u)``, its Jacobian
    ``(n_states, n_states)``.
O3. ``validate_state(x, name)`` checking the state's invariants (length,
    finiteness, a unit quaternion for the ball).
O4. ``simulate(x0, t_span, u_of_t, *, options, breakpoints, t_eval)``, with
    ``options`` an :class:`~ballctl.ode.IntegrationOptions` (method,
    tolerances, largest step), returning an :class:`~ballctl.ode.ODETrajectory`.
O5. ``to_constrained_system()`` returning a constrained plant (C1-C6) with
    ``to_ode_state(x, xd)`` and ``from_ode_state(x_ode)``, describing the
    same motion: the time derivative of ``to_ode_state`` along the
    constrained accelerations equals ``rhs`` at the mapped state.

Adding a plant is one new module in :mod:`ballctl.plants` and one line in
:data:`ballctl.plants.PLANTS`; the contract test picks it up.
"""

from __future__ import annotations

import json

import numpy as np

from .._derivatives import directional_derivative
from .._errors import ParameterError, ShapeError
from .._validation import as_array
from ..system import ConstrainedSystem, check_system

__all__ = ["random_consistent_state", "check_plant", "is_ode_plant", "friction_coefficient_required"]


def friction_coefficient_required(normal, tangential) -> np.ndarray:
    r"""Smallest Coulomb friction coefficient that keeps a contact from slipping, :math:`|F_t| / N`.

    For the ``(normal, tangential)`` pair that the plants' ``contact_forces``
    return. Where the normal force is not positive (the body would lift off)
    no coefficient suffices and the result is ``inf``.

    Parameters
    ----------
    normal : array_like, shape (...)
        Normal contact force N in N.
    tangential : array_like, shape (..., k)
        Tangential (friction) force in N, ``k`` components (2 on a plate or a
        floor, 1 for the disk).

    Returns
    -------
    ndarray, shape (...)
        :math:`|F_t|/N`, dimensionless (``inf`` where ``N <= 0``).

    Examples
    --------
    >>> friction_coefficient_required([2.0, 0.0], [[0.3, 0.4], [0.1, 0.0]])
    array([0.25,  inf])
    """
    normal = as_array(normal, "normal", unit="N")
    tangential = as_array(tangential, "tangential", unit="N")
    if tangential.ndim == 0:
        raise ShapeError("tangential must have shape (..., k) in N, got a scalar")
    try:
        shape = np.broadcast_shapes(normal.shape, tangential.shape[:-1])
    except ValueError as exc:
        raise ShapeError(f"normal (shape {normal.shape}) and tangential (shape {tangential.shape}, i.e. (..., k)) "
                         "must have matching leading shapes") from exc
    magnitude = np.sqrt(np.sum(tangential * tangential, axis=-1))
    pressing = normal > 0.0
    ratio = magnitude / np.where(pressing, normal, 1.0)
    return np.broadcast_to(np.where(pressing, ratio, np.inf), shape).copy()


def is_ode_plant(plant) -> bool:
    """True when ``plant`` follows the ODE-plant contract (O1-O5) rather than the constrained one.

    Parameters
    ----------
    plant : object
        A plant.

    Returns
    -------
    bool
    """
    return not isinstance(plant, ConstrainedSystem) and all(
        hasattr(plant, a) for a in ("rhs", "simulate", "to_constrained_system", "n_states"))


def random_consistent_state(system: ConstrainedSystem, rng: np.random.Generator, *, scale: float = 0.5,
                            min_chart_margin: float = 0.2, max_tries: int = 100
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random state on the constraint manifold, away from chart singularities.

    Coordinates, velocities and inputs are drawn uniformly from
    ``[-scale, scale]`` (SI units, rad), then projected: ``x`` onto
    ``C(x) = 0`` and ``xd`` onto ``D(x) xd = 0``. States whose
    ``chart_margin`` is below ``min_chart_margin`` are drawn again.

    Parameters
    ----------
    system : ConstrainedSystem
        The plant.
    rng : numpy.random.Generator
        Source of randomness.
    scale : float
        Half-width of the sampling box.
    min_chart_margin : float
        Smallest accepted ``chart_margin(x)`` when the plant has one.
    max_tries : int
        Draws before giving up.

    Returns
    -------
    x, xd : ndarray, shape (n,)
        Consistent coordinates and velocities.
    u : ndarray, shape (nu,)
        Inputs.

    Raises
    ------
    ParameterError
        If no draw in ``max_tries`` has the required chart margin.
    """
    n, nu = system.n_coordinates, system.n_inputs
    margin = getattr(system, "chart_margin", None)
    for _ in range(max_tries):
        x = system.project_positions(rng.uniform(-scale, scale, n))
        if margin is not None and not float(margin(x)) > min_chart_margin:
            continue
        xd = system.project_velocities(x, rng.uniform(-scale, scale, n))
        return x, xd, rng.uniform(-scale, scale, nu)
    raise ParameterError(f"no state with chart_margin > {min_chart_margin} in {max_tries} draws of scale {scale}")


def _rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    return float(np.max(np.abs(a - b), initial=0.0)) / scale


def _check_meta(plant, problems: list[str]) -> None:
    name = getattr(plant, "name", None)
    if not isinstance(name, str) or not name:
        problems.append(f"name must be a non-empty str, got {name!r}")
    params = getattr(plant, "params", None)
    if params is None or not callable(getattr(params, "as_dict", None)):
        problems.append("params with an as_dict() method is missing")
        return
    values = params.as_dict()
    if not isinstance(values, dict):
        problems.append(f"params.as_dict() must return a dict, got {type(values).__name__}")
        return
    try:
        json.dumps(values)
    except (TypeError, ValueError) as exc:
        problems.append(f"params.as_dict() is not JSON-serialisable: {exc}")


def _check_constrained(system: ConstrainedSystem, states, problems: list[str], fd_rtol: float) -> None:
    n = system.n_coordinates
    for i, (x, xd, u) in enumerate(states):
        problems.extend(f"state {i}: {p}" for p in check_system(system, x, xd, u))
        # C4: complex step vs central differences, in x (all callables), xd and u (forces)
        v = np.linspace(1.0, -0.5, n)
        for label, fn, arg, direction in (
                ("mass_matrix/x", lambda z: system.mass_matrix(z, u), x, v),
                ("forces/x", lambda z: system.forces(z, xd, u), x, v),
                ("forces/xd", lambda z: system.forces(x, z, u), xd, v),
                ("constraint_jacobian/x", system.constraint_jacobian, x, v),
                ("constraint_bias/x", lambda z: system.constraint_bias(z, xd), x, v),
                ("forces/u", lambda z: system.forces(x, xd, z), u, np.linspace(1.0, -0.5, u.size))):
            if not np.asarray(arg).size:
                continue
            cs, used = directional_derivative(fn, arg, direction)
            fd, _ = directional_derivative(fn, arg, direction, method="central")
            if used != "complex-step":
                problems.append(f"state {i}: {label} is not complex-step safe")
            elif _rel(cs, fd) > fd_rtol:
                problems.append(f"state {i}: {label} complex step and central differences differ by "
                                f"{_rel(cs, fd):.3g} (relative) > {fd_rtol}")
        # C6: M positive definite on the null space of D; eq. (1) and D xdd + Ddot xd = 0 at the solution
        D = system.constraint_jacobian(x)
        M = system.mass_matrix(x, u)
        _, sv, vt = np.linalg.svd(D)
        null = vt[D.shape[0]:].T
        if null.size and not np.min(np.linalg.eigvalsh(null.T @ (0.5 * (M + M.T)) @ null)) > 0.0:
            problems.append(f"state {i}: M is not positive definite on the null space of D")
        xdd, lam = system.accelerations(x, xd, u)
        Q = system.forces(x, xd, u)
        res = system.dynamics_residual(x, xd, xdd, lam, u)
        scale = max(1.0, float(np.max(np.abs(Q))), float(np.max(np.abs(M @ xdd))))
        if np.max(np.abs(res)) > 1e-9 * scale:
            problems.append(f"state {i}: residual of eq. (1) {np.max(np.abs(res)):.3g} > 1e-9 * {scale:.3g}")
        acc = D @ xdd + system.constraint_bias(x, xd)
        if np.max(np.abs(acc), initial=0.0) > 1e-9 * max(1.0, float(np.max(np.abs(D @ xdd)))):
            problems.append(f"state {i}: acceleration-level constraint residual {np.max(np.abs(acc)):.3g}")
        # C5: charts
        if hasattr(system, "chart_margin") and not float(system.chart_margin(x)) > 0.0:
            problems.append(f"state {i}: chart_margin is not positive at a sampled state")
        if hasattr(system, "rechart"):
            xn, xdn = system.rechart(x, xd)
            ke0 = 0.5 * xd @ M @ xd
            ke1 = 0.5 * xdn @ system.mass_matrix(xn, u) @ xdn
            if abs(ke1 - ke0) > 1e-12 * max(1.0, abs(ke0)):
                problems.append(f"state {i}: rechart changed the kinetic energy from {ke0!r} to {ke1!r}")
            if np.max(np.abs(system.constraint_jacobian(xn) @ xdn), initial=0.0) > 1e-12 * max(
                    1.0, float(np.max(np.abs(xdn)))):
                problems.append(f"state {i}: rechart left the velocity constraints")
            if not float(system.chart_margin(xn)) > 0.0:
                problems.append(f"state {i}: rechart gave a state outside the chart")
    # C3: batch axis
    if system.batched:
        X = np.array([s[0] for s in states])
        XD = np.array([s[1] for s in states])
        U = np.array([s[2] for s in states])
        for label, stacked, single in (
                ("mass_matrix", system.mass_matrix(X, U), lambda k: system.mass_matrix(X[k], U[k])),
                ("forces", system.forces(X, XD, U), lambda k: system.forces(X[k], XD[k], U[k])),
                ("holonomic", system.holonomic(X), lambda k: system.holonomic(X[k])),
                ("constraint_jacobian", system.constraint_jacobian(X), lambda k: system.constraint_jacobian(X[k])),
                ("constraint_bias", system.constraint_bias(X, XD), lambda k: system.constraint_bias(X[k], XD[k]))):
            looped = np.stack([np.asarray(single(k)) for k in range(len(states))])
            if np.shape(stacked) != looped.shape:
                problems.append(f"batched {label} has shape {np.shape(stacked)}, looped {looped.shape}")
            elif _rel(stacked, looped) > 1e-12:
                problems.append(f"batched {label} differs from looped by {_rel(stacked, looped):.3g}")


def _check_ode(plant, rng: np.random.Generator, n_states: int, problems: list[str], fd_rtol: float) -> None:
    from .internal_masses import INPUT_MODES
    if getattr(plant, "inputs", None) not in INPUT_MODES:
        problems.append(f"inputs must be one of {INPUT_MODES}, got {getattr(plant, 'inputs', None)!r}")
    system = plant.to_constrained_system()
    if not isinstance(system, ConstrainedSystem):
        problems.append(f"to_constrained_system() returned {type(system).__name__}, not a ConstrainedSystem")
        return
    if system.n_inputs != plant.n_inputs:
        problems.append(f"the constrained form has {system.n_inputs} inputs, the plant {plant.n_inputs}")
    states = [random_consistent_state(system, rng) for _ in range(n_states)]
    Z = np.array([system.to_ode_state(x, xd) for x, xd, _ in states])
    U = np.array([u for _, _, u in states])
    if Z.shape != (n_states, plant.n_states):
        problems.append(f"to_ode_state gave shape {Z.shape[1:]}, expected ({plant.n_states},)")
        return
    F = plant.rhs(0.3, Z, U)
    looped = np.stack([plant.rhs(0.3, Z[k], U[k]) for k in range(n_states)])
    if np.shape(F) != looped.shape or _rel(F, looped) > 1e-12:
        problems.append("batched rhs differs from looped rhs")
    for k, ((x, xd, u), z) in enumerate(zip(states, Z)):
        plant.validate_state(z, f"to_ode_state(state {k})")
        J = plant.rhs_jacobian(0.3, z, u)
        v = rng.standard_normal(z.size)
        fd, _ = directional_derivative(lambda w: plant.rhs(0.3, w, u), z, v, method="central")
        if J.shape != (z.size, z.size) or _rel(J @ v, fd) > fd_rtol:
            problems.append(f"state {k}: rhs_jacobian differs from central differences")
        # O5: d/dt to_ode_state(x(t), xd(t)) = rhs(to_ode_state), by a central difference in time
        xdd, _ = system.accelerations(x, xd, u)
        h = 1e-5
        zp = system.to_ode_state(x + h * xd + 0.5 * h * h * xdd, xd + h * xdd)
        zm = system.to_ode_state(x - h * xd + 0.5 * h * h * xdd, xd - h * xdd)
        zdot = (zp - zm) / (2.0 * h)
        f = plant.rhs(0.3, z, u)
        if _rel(zdot, f) > 1e-6:
            problems.append(f"state {k}: rhs differs from the constrained form's motion by {_rel(zdot, f):.3g}")
    sub: list[str] = []
    _check_constrained(system, states, sub, fd_rtol)
    problems.extend(f"to_constrained_system(): {p}" for p in sub)


def check_plant(plant, *, n_states: int = 12, seed: int = 0, fd_rtol: float = 1e-6) -> list[str]:
    """Check a plant against the contract of this module at random consistent states.

    Parameters
    ----------
    plant : ConstrainedSystem or ODE plant
        A constrained plant (rules C1-C6) or an ODE plant (O1-O5, its
        constrained form checked against C1-C6 too).
    n_states : int
        Number of random states (:func:`random_consistent_state`).
    seed : int
        Seed of the random states.
    fd_rtol : float
        Relative tolerance between complex-step derivatives and fourth-order
        central differences (whose truncation and rounding errors are about
        ``1e-10`` relative with the step ``1e-3``; ``1e-6`` leaves room for
        large curvature).

    Returns
    -------
    list of str
        Every problem found; empty when the plant honours the contract.
    """
    rng = np.random.default_rng(seed)
    problems: list[str] = []
    _check_meta(plant, problems)
    if isinstance(plant, ConstrainedSystem):
        states = [random_consistent_state(plant, rng) for _ in range(n_states)]
        _check_constrained(plant, states, problems, fd_rtol)
    elif is_ode_plant(plant):
        _check_ode(plant, rng, n_states, problems, fd_rtol)
    else:
        problems.append(f"{type(plant).__name__} is neither a ConstrainedSystem nor an ODE plant "
                        "(rhs, simulate, to_constrained_system, n_states)")
    return problems
