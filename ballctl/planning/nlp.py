r"""The maneuver NLP, built once and solved many times: new start states, targets and durations.

:class:`ManeuverNLP` transcribes a :class:`~ballctl.planning.maneuver.ManeuverProblem`
by Hermite-Simpson collocation (:func:`~ballctl.planning.transcription.hermite_simpson`)
on a mesh of the *normalized* time ``tau = t / T`` in ``[0, 1]``. The duration ``T``,
the target contact point and the continuation values (obstacle radius factor and
the clearance and contact back-offs) are NLP parameters and the initial state is
the bound of the first collocation point, so the same NLP -- and the same exact
first and second derivatives CasADi generated for it -- serves

* the planner's stages (obstacle continuation, clearance and contact rounds,
  branch candidates: :func:`~ballctl.planning.planner.plan_maneuver`);
* re-planning from a measured state while the ball rolls
  (:meth:`ManeuverNLP.solve` with ``initial_state``, ``duration_s`` and a warm
  start; :mod:`ballctl.planning.receding`).

A warm start passes the previous solution's multipliers to a second IPOPT
instance built (on the first warm solve) on the *same* derivative functions, with
``warm_start_init_point`` and a small initial barrier parameter; a cold solve
starts from the interior as usual.

Every solve ends in :meth:`ManeuverNLP.finish`, which names the most violated
constraint, renormalizes the quaternions and summarizes the contact forces
(:class:`~ballctl.planning.transcription.SolverReport`).

References
----------
J.T. Betts, *Practical Methods for Optimal Control and Estimation Using
Nonlinear Programming*, 2nd ed., SIAM (2010), sections 4.5-4.7 (collocation),
4.9 (time scaling of a free duration).
A. Waechter, L.T. Biegler, Math. Program. 106 (2006) 25-57, section 3.8
(IPOPT's warm start from a primal-dual point).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from .._errors import ParameterError, ShapeError
from .._validation import as_vector, check_positive
from ._casadi import require_casadi
from ._models import plant_model
from .contact import (
    binding_contact_constraints,
    contact_constraint_groups,
    contact_summary,
    contact_summary_text,
)
from .maneuver import ManeuverPlan, ManeuverProblem, optional_limit, precheck
from .transcription import (
    NLPConstraints,
    SolverOptions,
    SolverReport,
    Transcription,
    collocation_times,
    dense_times,
    hermite_simpson,
    most_violated,
)

__all__ = ["ManeuverNLP", "NLPSolution"]

#: IPOPT settings of a warm re-solve: start at the given primal-dual point with a small barrier parameter.
_WARM_IPOPT = {"ipopt.warm_start_init_point": "yes", "ipopt.mu_init": 1e-8, "ipopt.warm_start_bound_push": 1e-9,
               "ipopt.warm_start_bound_frac": 1e-9, "ipopt.warm_start_slack_bound_push": 1e-9,
               "ipopt.warm_start_slack_bound_frac": 1e-9, "ipopt.warm_start_mult_bound_push": 1e-9}


@dataclass(frozen=True)
class NLPSolution:
    """One IPOPT solve of a :class:`ManeuverNLP`.

    Attributes
    ----------
    w : ndarray, shape (n_w,)
        The decision vector.
    lam_g, lam_x : ndarray, shapes (n_g,), (n_w,)
        Multipliers of the constraints and of the bounds (CasADi's sign
        convention: the Lagrangian is ``f + lam_g^T g + lam_x^T w``).
    objective : float
    iterations : int
    wall_time_s : float
        Wall time of the solve, s.
    status : str
        IPOPT's return status.
    success : bool
    dual_infeasibility : float
        IPOPT's final scaled dual infeasibility.
    parameters : ndarray
        The NLP parameters of the solve (:meth:`ManeuverNLP.parameters`).
    initial_state : ndarray, shape (n_x,)
    """

    w: np.ndarray
    lam_g: np.ndarray
    lam_x: np.ndarray
    objective: float
    iterations: int
    wall_time_s: float
    status: str
    success: bool
    dual_infeasibility: float
    parameters: np.ndarray = field(repr=False)
    initial_state: np.ndarray = field(repr=False)


class ManeuverNLP:
    """The Hermite-Simpson NLP of a maneuver problem, built once for its mesh and re-solved for new data.

    Parameters
    ----------
    plant : RollingBall or RollingDisk
        Without external force; rails of closed form.
    problem : ManeuverProblem
        The structure of the problem (objective, end conditions, obstacles,
        limits). Its ``initial_state``, ``duration_s`` and ``target_contact_m``
        are only the defaults of :meth:`solve`: they can change between solves.
    intervals : int
        Uniform mesh intervals N (ignored when ``nodes`` is given), >= 2.
    nodes : array_like, shape (N + 1,), optional
        A mesh from 0 to ``problem.duration_s`` in s; stored normalized by the
        duration, so a re-solve with another duration stretches it.
    symbolic : {"SX", "MX"}
        CasADi graph of the transcription: ``"SX"`` (default) evaluates the exact
        Hessian ~3x faster per iteration on the 3-mass ball, ``"MX"`` builds faster.
    solver : SolverOptions, optional
        IPOPT's limits and tolerances.

    Notes
    -----
    The transcription of eqs. (7.1)-(7.4) (ball) or (6.1)-(6.2) (disk) of
    Putkaradze & Rogers (2018) with ``h_k = T (tau_{k+1} - tau_k)``; the cost
    ``int |u|^2 dt = T int |u|^2 dtau`` by the Simpson rule of the mesh.
    """

    def __init__(self, plant, problem: ManeuverProblem, *, intervals: int = 50, nodes=None, symbolic: str = "SX",
                 solver: SolverOptions | None = None) -> None:
        start = time.perf_counter()
        ca, model, nodes, sym = check_request(plant, problem, intervals=intervals, nodes=nodes, symbolic=symbolic)
        T = problem.duration_s
        self.model, self.problem, self.solver_options = model, problem, solver or SolverOptions()
        self.tau = nodes / T
        dim, n = model.dim, model.n
        # parameters: obstacle radius factor, clearance back-off (m), friction back-off, normal back-off (N),
        # duration (s), target contact point (m)
        self.param = sym.sym("p", 5 + dim)
        T_sym, target = self.param[4], self.param[5:5 + dim]
        f, n_z, h = model.f_casadi()
        tr: Transcription = hermite_simpson(f, self.tau, n_z=n_z, algebraic=h, symbolic=symbolic, time_scale=T_sym)
        self.tr = tr
        P = tr.n_points
        C = model.contact_casadi(tr.X)      # (dim, P)
        wq = ca.DM(tr.quadrature_weights).T * T_sym
        J = 0
        if problem.effort_weight > 0:
            J = J + problem.effort_weight * ca.sum2(wq * ca.sum1(tr.U ** 2))
        if problem.path is not None:
            ref = np.asarray(problem.path(self.tau * T), dtype=float).reshape(P, -1)
            if ref.shape[1] != dim or not np.all(np.isfinite(ref)):
                raise ShapeError(f"path(t) must return finite (K, {dim}) contact points in m, got shape {ref.shape}")
            J = J + problem.tracking_weight * ca.sum2(wq * ca.sum1((C - ca.DM(ref.T)) ** 2))
        groups: list[tuple[str, object, object, object]] = [
            ("collocation defects (dynamics)", tr.defects[:tr.defects.numel() - (P - 1) * n_z], 0.0, 0.0)]
        if n_z:
            groups.append(("unit quaternion |q| = 1", tr.defects[tr.defects.numel() - (P - 1) * n_z:], 0.0, 0.0))
        if problem.target_contact_m is not None:
            groups.append(("target contact point target_contact_m", C[:, -1] - target, 0.0, 0.0))
        if problem.target_heading_rad is not None:
            ax = model.heading_axis_casadi(tr.X[:, -1])
            c, s_ = np.cos(problem.target_heading_rad), np.sin(problem.target_heading_rad)
            groups.append(("target heading target_heading_rad", -s_ * ax[0] + c * ax[1], 0.0, 0.0))
            groups.append(("target heading target_heading_rad (the axis points along it, not against it)",
                           c * ax[0] + s_ * ax[1], 0.0, np.inf))
        if problem.final_velocity_mps is not None:
            V = model.contact_velocity_casadi(tr.F)
            groups.append(("final contact velocity final_velocity_mps",
                           V[:, -1] - ca.DM(problem.final_velocity_mps), 0.0, 0.0))
        if problem.rest_at_end:
            groups.append(("at rest at the end (rest_at_end)", tr.X[model.rest_indices, -1], 0.0, 0.0))
        for k, ob in enumerate(problem.obstacles):
            d2 = ca.sum1((C - ca.DM(ob.center_m)) ** 2)
            rad = self.param[0] * ob.radius_m + problem.clearance_margin_m + self.param[1]
            # from the second point on: the first is the fixed start (checked by precheck; a re-plan from a
            # measured state on the margin must not be infeasible at its start)
            groups.append((f"obstacle {k} clearance (centre {ob.center_m.tolist()} m, radius {ob.radius_m} m, "
                           f"margin {problem.clearance_margin_m} m)", (d2[:, 1:] - rad ** 2).T, 0.0, np.inf))
        acc = optional_limit(problem.max_rail_acceleration, "max_rail_acceleration", "(rail units)/s^2", n)
        if acc is not None and model.plant.inputs == "force":
            groups.append(("rail acceleration limit max_rail_acceleration", ca.vec(tr.F[n:2 * n, :]),
                           -np.tile(acc, P), np.tile(acc, P)))
        spd = optional_limit(problem.max_rail_speed, "max_rail_speed", "(rail units)/s", n)
        ulim = acc if model.plant.inputs == "acceleration" else \
            optional_limit(problem.max_rail_force, "max_rail_force", "N", n)
        # limits between the collocation points: the Bernstein coefficients of the input's quadratic
        # (u_k, 2 u_{k+1/2} - (u_k + u_{k+1}) / 2, u_{k+1}) and of the rail speed's Hermite cubic
        # (theta_dot_k, theta_dot_k + h f_k / 3, theta_dot_{k+1} - h f_{k+1} / 3, theta_dot_{k+1})
        # bound the polynomials (convex hull), so bounding them keeps the whole replayed input and the
        # planned rail speed within the limits, at an O(h^2) cost in conservatism
        N = P // 2
        if ulim is not None:
            middle = 2.0 * tr.U[:, 1::2] - 0.5 * (tr.U[:, 0:-1:2] + tr.U[:, 2::2])
            groups.append(("rail input limit between the collocation points (max_rail_acceleration or "
                           "max_rail_force)", ca.vec(middle), -np.tile(ulim, N), np.tile(ulim, N)))
        if spd is not None:
            hk = T_sym * ca.DM(np.diff(self.tau)).T
            Hn = ca.repmat(hk, n, 1)
            v, a = tr.X[n:2 * n, 0::2], tr.F[n:2 * n, 0::2]
            inner = ca.vertcat(ca.vec(v[:, :-1] + Hn * a[:, :-1] / 3.0), ca.vec(v[:, 1:] - Hn * a[:, 1:] / 3.0))
            groups.append(("rail speed limit between the collocation points (max_rail_speed)", inner,
                           -np.tile(spd, 2 * N), np.tile(spd, 2 * N)))
        n_before_contact = sum(int(grp[1].numel()) for grp in groups)
        if problem.friction_coefficient is not None or problem.min_normal_force_N is not None:
            normal, tangential = model.contact_force_casadi().map(P)(tr.X, tr.U)
            groups += contact_constraint_groups(normal, tangential, friction_coefficient=problem.friction_coefficient,
                                                min_normal_force_N=problem.min_normal_force_N,
                                                weight_N=model.weight_N, friction_backoff=self.param[2],
                                                normal_backoff_N=self.param[3])
        self.groups = groups
        g = ca.vertcat(*[grp[1] for grp in groups])
        lbX, ubX = np.full((P, model.n_x), -np.inf), np.full((P, model.n_x), np.inf)
        for i, rail in enumerate(model.rails):
            if not rail.periodic:
                lbX[1:, i], ubX[1:, i] = rail.parameter_range
        # the bounds at the nodes; at the midpoints the Bernstein rows above imply them (the polynomial's value
        # there is a convex combination of its coefficients), and imposing both would make the active rows
        # of a saturated arc linearly dependent (LICQ, the second-order check)
        if spd is not None:
            lbX[2::2, n:2 * n], ubX[2::2, n:2 * n] = -spd, spd
        lbU, ubU = np.full((P, model.n_u), -np.inf), np.full((P, model.n_u), np.inf)
        if ulim is not None:
            lbU[0::2], ubU[0::2] = -ulim, ulim
        lbZ, ubZ = np.full((P, n_z), -np.inf), np.full((P, n_z), np.inf)
        lbZ[0] = ubZ[0] = 0.0   # the initial state is consistent: no multiplier needed there
        self.limits = {"max_rail_speed": spd, "max_rail_acceleration": acc,
                       "max_rail_force": None if model.plant.inputs == "acceleration" else ulim}
        self._x0_rows = np.arange(model.n_x)   # the first point's states lead the point-major decision vector
        self.constraints = NLPConstraints.from_groups(
            groups, tr.pack(lbX, lbU, lbZ), tr.pack(ubX, ubU, ubZ),
            "variable bounds (initial state, rail ends, rail speed or input limits)")
        self.has_contact = n_before_contact < self.constraints.lbg.size
        self.relaxed_constraints = self.constraints.relaxed(np.arange(self.constraints.lbg.size) >= n_before_contact)
        self.g_fun = ca.Function("g", [tr.w, self.param], [g])
        self.nlp = {"x": tr.w, "f": J, "g": g, "p": self.param}
        opts = self.solver_options.casadi_options(max_iterations=1000, max_cpu_time_s=600.0)
        self._cold = ca.nlpsol("plan", "ipopt", self.nlp, opts)
        self._opts = opts
        self._warm_solver = None    # the warm solver is built on its first use (:attr:`_warm`)
        self.build_time_s = time.perf_counter() - start

    @property
    def _warm(self):
        """The warm-start IPOPT instance on the cold one's derivative functions, built on first use.

        Its build time is added to :attr:`build_time_s` (reports finished after it count it).
        """
        if self._warm_solver is None:
            ca = require_casadi()
            start = time.perf_counter()
            derivatives = {name: self._cold.get_function(f"nlp_{name}") for name in ("hess_l", "jac_g", "grad_f")}
            self._warm_solver = ca.nlpsol("replan", "ipopt", self.nlp,
                                          {**self._opts, **_WARM_IPOPT, "hess_lag": derivatives["hess_l"],
                                           "jac_g": derivatives["jac_g"], "grad_f": derivatives["grad_f"]})
            self.build_time_s += time.perf_counter() - start
        return self._warm_solver

    # -------------------------------------------------------------------------------------------
    @property
    def intervals(self) -> int:
        """Mesh intervals N."""
        return self.tau.size - 1

    def nodes(self, duration_s: float) -> np.ndarray:
        """Mesh nodes in s for a duration.

        Parameters
        ----------
        duration_s : float
            Maneuver time in s.

        Returns
        -------
        ndarray, shape (N + 1,)
        """
        return self.tau * duration_s

    def parameters(self, *, duration_s: float | None = None, target_contact_m=None, obstacle_factor: float = 1.0,
                   backoffs: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
        """The NLP's parameter vector.

        Parameters
        ----------
        duration_s : float, optional
            Maneuver time in s (default: the problem's). Fixed for a problem with a ``path``.
        target_contact_m : array_like, shape (dim,), optional
            Target contact point in m (default: the problem's).
        obstacle_factor : float
            Obstacle radius factor of the continuation (1: the true radii).
        backoffs : (float, float, float)
            Clearance back-off in m, friction back-off (fraction of mu), normal-force back-off in N.

        Returns
        -------
        ndarray, shape (5 + dim,)
        """
        pb, dim = self.problem, self.model.dim
        T = pb.duration_s if duration_s is None else check_positive(duration_s, "duration_s", "s")
        if pb.path is not None and abs(T - pb.duration_s) > 1e-12 * pb.duration_s:
            raise ParameterError(f"duration_s is fixed at {pb.duration_s} s for a problem with a path to track "
                                 f"(the path is sampled when the NLP is built), got {T} s")
        if target_contact_m is None:
            target = np.zeros(dim) if pb.target_contact_m is None else pb.target_contact_m
        else:
            if pb.target_contact_m is None:
                raise ParameterError("target_contact_m cannot be set on a re-solve of a problem without a target")
            target = as_vector(target_contact_m, "target_contact_m", dim)
        return np.concatenate([[obstacle_factor, *backoffs, T], target])

    def constraints_for(self, initial_state, *, relaxed: bool = False) -> NLPConstraints:
        """The constraints with the first point fixed at ``initial_state``.

        Parameters
        ----------
        initial_state : array_like, shape (n_x,)
        relaxed : bool
            Without the contact constraints.

        Returns
        -------
        NLPConstraints
        """
        base = self.relaxed_constraints if relaxed else self.constraints
        x0 = self.model.validate(initial_state)
        lbw, ubw = base.lbw.copy(), base.ubw.copy()
        lbw[self._x0_rows] = ubw[self._x0_rows] = x0
        return replace(base, lbw=lbw, ubw=ubw)

    def solve(self, w0, parameters, *, initial_state, relaxed: bool = False,
              warm: NLPSolution | None = None) -> NLPSolution:
        """One IPOPT solve.

        Parameters
        ----------
        w0 : ndarray, shape (n_w,)
            Initial guess (its first point is replaced by ``initial_state``).
        parameters : ndarray
            From :meth:`parameters`.
        initial_state : array_like, shape (n_x,)
            The fixed state at ``t = 0``.
        relaxed : bool
            Without the contact constraints.
        warm : NLPSolution, optional
            Warm start: its multipliers seed the solve (the primal guess is still ``w0``).

        Returns
        -------
        NLPSolution
        """
        c = self.constraints_for(initial_state, relaxed=relaxed)
        w0 = np.asarray(w0, dtype=float).copy()
        w0[self._x0_rows] = c.lbw[self._x0_rows]
        solver = self._cold if warm is None else self._warm
        kw = {} if warm is None else {"lam_g0": warm.lam_g, "lam_x0": warm.lam_x}
        begin = time.perf_counter()
        sol = solver(x0=w0, lbx=c.lbw, ubx=c.ubw, lbg=c.lbg, ubg=c.ubg, p=parameters, **kw)
        wall = time.perf_counter() - begin
        stats = solver.stats()
        its = stats.get("iterations", {})
        return NLPSolution(w=np.asarray(sol["x"], dtype=float).ravel(), lam_g=np.asarray(sol["lam_g"]).ravel(),
                           lam_x=np.asarray(sol["lam_x"]).ravel(), objective=float(sol["f"]),
                           iterations=int(stats.get("iter_count", 0)), wall_time_s=wall,
                           status=str(stats.get("return_status", "")), success=bool(stats.get("success", False)),
                           dual_infeasibility=float(its["inf_du"][-1]) if its and its.get("inf_du") else float("nan"),
                           parameters=np.asarray(parameters, dtype=float), initial_state=c.lbw[self._x0_rows].copy())

    def violation(self, solution: NLPSolution, *, relaxed: bool = False) -> tuple[float, str]:
        """Largest constraint violation of a solution and the name of its group.

        Parameters
        ----------
        solution : NLPSolution
        relaxed : bool
            Against the constraints without the contact ones.

        Returns
        -------
        violation : float
        name : str
        """
        g = np.asarray(self.g_fun(solution.w, solution.parameters), dtype=float).ravel()
        return most_violated(g, solution.w, self.constraints_for(solution.initial_state, relaxed=relaxed))

    def problem_for(self, solution: NLPSolution) -> ManeuverProblem:
        """The problem a solution solves: this NLP's with the solve's start state, duration and target.

        Parameters
        ----------
        solution : NLPSolution

        Returns
        -------
        ManeuverProblem
        """
        pb, p = self.problem, solution.parameters
        changes = {"initial_state": solution.initial_state, "duration_s": float(p[4])}
        if pb.target_contact_m is not None:
            changes["target_contact_m"] = p[5:].copy()
        return replace(pb, **changes)

    def finish(self, solution: NLPSolution, *, iterations: tuple[int, ...] = (), solve_time_s: float | None = None,
               relaxed: bool = False) -> ManeuverPlan:
        """The plan of a solution, with its report (convergence, most violated constraint, contact summary).

        Parameters
        ----------
        solution : NLPSolution
        iterations : tuple of int
            Iterations of every solve that led to it (default: this one's).
        solve_time_s : float, optional
            Wall time of those solves in s (default: this one's).
        relaxed : bool
            The solution is of the problem without its contact constraints.

        Returns
        -------
        ManeuverPlan
        """
        model, tr = self.model, self.tr
        problem = self.problem_for(solution)
        p = solution.parameters
        backoff, b_mu, b_n = float(p[1]), float(p[2]), float(p[3])
        viol, worst = self.violation(solution, relaxed=relaxed)
        X, U, _ = tr.unpack(solution.w)
        X, qerr = model.renormalize(X)
        iterations = tuple(iterations) or (solution.iterations,)
        solve_time = solution.wall_time_s if solve_time_s is None else solve_time_s
        tol = 1e-6
        converged = solution.success and viol <= tol
        nodes = self.nodes(problem.duration_s)
        plan = ManeuverPlan(plant=model.plant, problem=problem, nodes=nodes, t=collocation_times(nodes), x=X, u=U,
                            report=None, obstacle_backoff_m=backoff, decision_vector=solution.w,
                            contact_backoffs=(b_mu, b_n), solution=solution)
        mu, n_min = problem.friction_coefficient, problem.min_normal_force_N
        binding = binding_contact_constraints(*contact_summary(*plan.contact_forces()),
                                              friction_coefficient=None if mu is None else (1 - b_mu) * mu,
                                              min_normal_force_N=None if n_min is None else n_min + b_n,
                                              weight_N=model.weight_N)
        peak, least = contact_summary(*plan.contact_forces(dense_times(nodes)))
        if converged:
            message = f"converged ({solution.status}) in {sum(iterations)} iterations, max constraint violation " \
                      f"{viol:.2e}"
            if self.has_contact and not relaxed:
                message += "; " + contact_summary_text(peak, least, binding)
        else:
            message = (f"not converged: IPOPT status {solution.status}; most violated constraint: {worst} "
                       f"(violation {viol:.3g})")
        report = SolverReport(converged=bool(converged), status=solution.status, message=message,
                              iterations=int(sum(iterations)), stage_iterations=iterations, solve_time_s=solve_time,
                              build_time_s=self.build_time_s, objective=solution.objective,
                              max_constraint_violation=viol, dual_infeasibility=solution.dual_infeasibility,
                              quaternion_norm_error=qerr, n_variables=int(tr.w.numel()),
                              n_constraints=int(self.constraints.lbg.size),
                              peak_friction_coefficient_required=peak, least_normal_force_N=least,
                              binding_contact_constraints=binding if converged else ())
        return replace(plan, report=report)

    def shift(self, solution: NLPSolution, *, time_offset_s: float, duration_s: float) -> NLPSolution:
        r"""A solve's multipliers moved in time to the mesh of a later re-solve (the dual half of a shifted guess).

        The re-solve's collocation point ``j`` lies at ``time_offset_s + tau_j T_new`` on the old
        solve's clock, where the old points were at ``tau_j T_old``. Every multiplier that belongs to
        a time -- the bound multipliers of the states and inputs (``lam_x``), those of the collocation
        defects and of the quaternion norm (costates), of the obstacle and contact constraints at
        the points and of the input and rail-speed limits on the intervals (``lam_g``) -- is
        interpolated linearly in time from the old points (or interval midpoints) to the new ones,
        and held beyond the old end; the end conditions keep theirs. A group of another layout
        keeps its values.

        Parameters
        ----------
        solution : NLPSolution
            The old solve.
        time_offset_s : float
            Time of the re-solve's start on the old solve's clock, s.
        duration_s : float
            The re-solve's duration, s.

        Returns
        -------
        NLPSolution
            ``solution`` with the shifted ``lam_g`` and ``lam_x`` (its primal point unchanged).

        """
        tau = self.tau
        N, P = tau.size - 1, 2 * tau.size - 1
        T_old = float(solution.parameters[4])
        points = np.empty(P)
        points[0::2], points[1::2] = tau, 0.5 * (tau[:-1] + tau[1:])
        mids = points[1::2]
        old_p, new_p = points * T_old, time_offset_s + points * duration_s
        old_m, new_m = mids * T_old, time_offset_s + mids * duration_s
        X, U, Z = self.tr.unpack(solution.lam_x)
        lam_x = self.tr.pack(_rows_at(X, old_p, new_p), _rows_at(U, old_p, new_p), _rows_at(Z, old_p, new_p))
        out, i = [], 0
        for name, expr, _, _ in self.groups:
            size = int(expr.numel())
            seg = solution.lam_g[i:i + size]
            i += size
            if name.startswith(("collocation defects", "rail speed limit between")) and size % (2 * N) == 0:
                half = size // 2
                seg = np.concatenate([_rows_at(b.reshape(N, -1), old_m, new_m).ravel()
                                      for b in (seg[:half], seg[half:])])
            elif name.startswith("rail input limit between") and size % N == 0:
                seg = _rows_at(seg.reshape(N, -1), old_m, new_m).ravel()
            elif name.startswith(("unit quaternion", "obstacle")) and size == P - 1:
                seg = np.interp(new_p[1:], old_p[1:], seg)
            elif name.startswith("rail acceleration limit") and size % P == 0:
                seg = _rows_at(seg.reshape(P, -1), old_p, new_p).ravel()
            elif size == P:
                seg = np.interp(new_p, old_p, seg)
            out.append(np.array(seg, dtype=float))
        if i != solution.lam_g.size:
            return solution
        return replace(solution, lam_g=np.concatenate(out), lam_x=lam_x)

    def second_order(self, solution: NLPSolution):
        """The second-order optimality check at a solution (:mod:`ballctl.planning.optimality`).

        The Hessian of the Lagrangian and the constraint Jacobian are the ones
        IPOPT used (this NLP's generated functions), at the solution's multipliers.

        Parameters
        ----------
        solution : NLPSolution

        Returns
        -------
        SecondOrderReport
        """
        from .optimality import second_order_conditions
        c = self.constraints_for(solution.initial_state)
        hess = self._cold.get_function("nlp_hess_l")(solution.w, solution.parameters, 1.0, solution.lam_g)
        g, jac = self._cold.get_function("nlp_jac_g")(solution.w, solution.parameters)
        return second_order_conditions(hess.sparse(), jac.sparse(), g=np.asarray(g).ravel(), lbg=c.lbg, ubg=c.ubg,
                                       lam_g=solution.lam_g, w=solution.w, lbw=c.lbw, ubw=c.ubw,
                                       lam_x=solution.lam_x)

    def guess(self, plan: ManeuverPlan, *, duration_s: float | None = None, time_offset_s: float = 0.0) -> np.ndarray:
        """A decision vector interpolated from a plan (its states, inputs and, for the ball, zero multipliers).

        Parameters
        ----------
        plan : ManeuverPlan
            The plan to interpolate (any mesh).
        duration_s : float, optional
            Duration of the new solve in s (default: the problem's).
        time_offset_s : float
            The new solve's ``t = 0`` is the plan's ``t = time_offset_s`` (a re-plan
            started later); times beyond the plan's end hold its last values.

        Returns
        -------
        ndarray, shape (n_w,)
        """
        T = self.problem.duration_s if duration_s is None else duration_s
        times = time_offset_s + collocation_times(self.nodes(T))
        X, _ = self.model.renormalize(plan.state(times))
        return self.tr.pack(X, plan.input(times))


def check_request(plant, problem: ManeuverProblem, *, intervals: int = 50, nodes=None, symbolic: str = "SX"):
    """The checks of a :class:`ManeuverNLP` request, in its order, without building it.

    Parameters
    ----------
    plant, problem, intervals, nodes, symbolic
        As for :class:`ManeuverNLP`.

    Returns
    -------
    ca : module
        CasADi.
    model : the plant's planning model
    nodes : ndarray, shape (N + 1,)
        The checked mesh in s.
    sym : CasADi's SX or MX
    """
    ca = require_casadi()
    if not isinstance(problem, ManeuverProblem):
        raise ParameterError(f"problem must be a ManeuverProblem, got {type(problem).__name__}")
    model = plant_model(plant)
    x0 = model.validate(problem.initial_state)
    precheck(model, problem, x0)
    T = problem.duration_s
    nodes = default_nodes(T, intervals) if nodes is None else check_nodes(nodes, T)
    sym = getattr(ca, symbolic) if symbolic in ("SX", "MX") else None
    if sym is None:
        raise ParameterError(f"symbolic must be 'SX' or 'MX', got {symbolic!r}")
    return ca, model, nodes, sym


def _rows_at(A: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Every column of ``A`` (rows at the times ``old``) linearly interpolated at the times ``new`` (held beyond)."""
    out = np.empty((new.size, A.shape[1]))
    for j in range(A.shape[1]):
        out[:, j] = np.interp(new, old, A[:, j])
    return out


def default_nodes(duration_s: float, intervals: int) -> np.ndarray:
    """A uniform mesh of ``intervals`` intervals on ``[0, duration_s]`` s."""
    if isinstance(intervals, bool) or int(intervals) != intervals or intervals < 2:
        raise ParameterError(f"intervals must be an integer >= 2, got {intervals!r}")
    return np.linspace(0.0, duration_s, int(intervals) + 1)


def check_nodes(nodes, duration_s: float) -> np.ndarray:
    """A mesh checked to increase strictly from 0 to ``duration_s`` s."""
    nodes = as_vector(nodes, "nodes")
    T = duration_s
    if nodes.size < 3 or abs(nodes[0]) > 0 or abs(nodes[-1] - T) > 1e-12 * max(1.0, T) or np.any(np.diff(nodes) <= 0):
        raise ParameterError(f"nodes must increase strictly from 0 to duration_s = {T} s (at least 2 intervals)")
    out = nodes.copy()
    out[-1] = T
    return out
