"""Second-order optimality check (ballctl.planning.optimality) and a Pontryagin proof of the direct planner.

Oracles:

* small NLPs whose answers are known by hand (a strict minimum on an active inequality, a saddle on
  the constraint manifold with its curvature, weakly active constraints, duplicate active rows),
  solved by IPOPT or written as KKT points;
* the indirect method for the planar disk with one internal mass: Pontryagin's two-point boundary
  value problem solved by ``scipy.integrate.solve_bvp`` (no collocation NLP, no IPOPT), against
  which the direct plans of both local optima (the straight branch, theta(T) ~ -1.76, cost ~ 54.3,
  and the branch where the mass swings over the top, theta(T) ~ 3.95, cost ~ 4.90) must converge
  at the orders of Hermite-Simpson collocation;
* the second-order report of both branches (both strict local minima).
"""

import inspect
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import solve_bvp
from threadpoolctl import threadpool_limits

from ballctl._errors import ParameterError, ShapeError
from ballctl.planning import ManeuverProblem, plan_maneuver
from ballctl.planning.optimality import SecondOrderReport, casadi_second_order, second_order_conditions
from ballctl.planning.symbolic import disk_rhs_function
from ballctl.planning.transcription import hermite_simpson
from ballctl.plants.rails import CircleRail
from ballctl.plants.rolling_ball import PointMass
from ballctl.plants.rolling_disk import RollingDisk, RollingDiskParameters

from _planning_fixtures import default_disk_plan, describe

ca = pytest.importorskip("casadi")

# conftest.py limits BLAS to one thread per test process, but scipy.linalg loads its own OpenBLAS after it
# ran: limit that one too (the dense QR of the null space took 0.6 s instead of 0.01 s on the loaded machine)
threadpool_limits(limits=1, user_api="blas")

IPOPT = {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes", "ipopt.tol": 1e-12}


def ipopt(nlp, **bounds):
    """Solve a small NLP; return (solution dict, bounds dict)."""
    solver = ca.nlpsol("s", "ipopt", nlp, IPOPT)
    args = {k: bounds[k] for k in ("x0", "lbx", "ubx", "lbg", "ubg", "p") if k in bounds}
    sol = solver(**args)
    assert solver.stats()["success"], solver.stats()["return_status"]
    return sol, {"lbg": bounds.get("lbg", -np.inf), "ubg": bounds.get("ubg", np.inf),
                 "lbw": bounds.get("lbx", -np.inf), "ubw": bounds.get("ubx", np.inf)}


# ------------------------------------------------------------------------------ (a) strict minima
def test_strict_minimum_on_an_active_nonlinear_inequality():
    """min x + y s.t. x^2 + y^2 <= 2: (-1, -1) with lam_g = 1/2 (upper bound), H_L = 2 lam I = I.

    The tangent line has curvature 1; ||H||_inf = 1, so the scaled eigenvalue is 1 (to IPOPT's 1e-12
    tolerance: 1e-8). If CasADi's sign convention were the other one (L = f - lam^T g) the curvature
    would be -1: the check below pins it, and stationarity of f + lam_g^T g + lam_x^T x to 1e-6.
    """
    x = ca.SX.sym("x", 2)
    nlp = {"x": x, "f": x[0] + x[1], "g": ca.sumsqr(x)}
    sol, b = ipopt(nlp, x0=[0.5, 0.0], ubg=2.0)
    assert float(sol["lam_g"]) == pytest.approx(0.5, abs=1e-8)     # > 0: the upper bound acts
    r = casadi_second_order(nlp, sol, **b)
    assert isinstance(r, SecondOrderReport)
    assert r.satisfied and not r.rank_deficient and r.conclusive, r.message
    assert r.stationarity < 1e-6
    assert (r.n_variables, r.n_active, r.n_free_directions, r.n_negative_directions) == (2, 1, 1, 0)
    assert r.min_reduced_eigenvalue == pytest.approx(1.0, abs=1e-8)
    assert "hold" in r.message


def test_strict_minimum_on_an_active_bound_is_checked_on_the_remaining_variables():
    """min (x + 1)^2 + (y - 2)^2 + x y, x >= 0: x = 0 is a strongly active bound (lam_x = -(2 + y) = -4).

    The bound deletes x; the reduced Hessian is d2f/dy2 = 2, ||H||_inf = 3 -> 2/3 (to 1e-8).
    """
    x = ca.SX.sym("x", 2)
    nlp = {"x": x, "f": (x[0] + 1) ** 2 + (x[1] - 2) ** 2 + x[0] * x[1]}
    sol, b = ipopt(nlp, x0=[1.0, 0.0], lbx=[0.0, -np.inf], ubx=[np.inf, np.inf])
    r = casadi_second_order(nlp, sol, **b)
    assert r.satisfied, r.message
    assert float(sol["lam_x"][0]) == pytest.approx(-4.0, abs=1e-6)
    assert (r.n_active, r.n_free_directions) == (1, 1)
    assert r.min_reduced_eigenvalue == pytest.approx(2.0 / 3.0, abs=1e-8)


# ------------------------------------------------------------------------------ (b) saddles
def test_saddle_on_the_constraint_manifold_from_ipopt():
    """min -x^2 + y^2 s.t. y = 0, -1 <= x <= 1, started at x = 0: IPOPT stops at the stationary (0, 0).

    The line y = 0 has curvature d2f/dx2 = -2, ||H||_inf = 2: scaled eigenvalue -1 exactly (the
    constraint is linear, so H does not depend on the multipliers; 1e-10 is rounding). The bounds do
    not bind (multipliers ~ 1e-12, below the threshold).
    """
    x = ca.SX.sym("x", 2)
    nlp = {"x": x, "f": -x[0] ** 2 + x[1] ** 2, "g": x[1]}
    sol, b = ipopt(nlp, x0=[0.0, 0.3], lbg=0.0, ubg=0.0, lbx=[-1.0, -np.inf], ubx=[1.0, np.inf])
    assert np.allclose(np.asarray(sol["x"]).ravel(), 0.0, atol=1e-9)
    r = casadi_second_order(nlp, sol, **b)
    assert not r.satisfied and r.conclusive and not r.rank_deficient
    assert r.min_reduced_eigenvalue == pytest.approx(-1.0, abs=1e-10)
    assert (r.n_active, r.n_free_directions, r.n_negative_directions, r.n_weakly_active) == (1, 1, 1, 0)
    assert "fail" in r.message and "saddle" in r.message


@pytest.mark.parametrize("method", ["auto", "lu", "qr"])
def test_saddle_at_a_hand_made_kkt_point(method):
    """f = x1^2 - 3 x2^2 + x3^2, x1 + x2 = 1: KKT at (1.5, -0.5, 0) with lam = -3 (grad f = (3, 3, 0)).

    Null space of (1, 1, 0): (1, -1, 0)/sqrt(2), (0, 0, 1); reduced Hessian diag((2 - 6)/2, 2) =
    diag(-2, 2); ||H||_inf = 6, so the scaled smallest eigenvalue is -1/3 (1e-10: rounding of the
    orthonormal basis). Every null-space method gives it.
    """
    H = np.diag([2.0, -6.0, 2.0])
    w = np.array([1.5, -0.5, 0.0])
    r = second_order_conditions(H, [[1.0, 1.0, 0.0]], g=[w[0] + w[1]], lbg=1.0, ubg=1.0, lam_g=[-3.0], w=w,
                                lbw=-np.inf, ubw=np.inf, lam_x=np.zeros(3), gradient=[3.0, 3.0, 0.0], method=method)
    assert not r.satisfied
    assert r.min_reduced_eigenvalue == pytest.approx(-1.0 / 3.0, abs=1e-10)
    assert r.hessian_norm == 6.0 and r.n_free_directions == 2 and r.n_negative_directions == 1
    assert r.stationarity == 0.0
    assert r.method == {"auto": "lu", "lu": "lu", "qr": "qr"}[method]


# ------------------------------------------------------------------------------ (c) weakly active
def test_weakly_active_inequality_from_ipopt_is_left_free():
    """min x^2 + (y - 1)^2 s.t. x >= 0: the constraint is at its bound with a zero multiplier.

    IPOPT's interior point leaves x ~ |lam| ~ sqrt(mu) ~ 1e-6 here (x * |lam| = mu): below the
    default thresholds (1e-4), so the row counts as weakly active and is not imposed. The full
    Hessian 2I is then tested: scaled eigenvalue 2/2 = 1.
    """
    x = ca.SX.sym("x", 2)
    nlp = {"x": x, "f": x[0] ** 2 + (x[1] - 1) ** 2, "g": x[0]}
    sol, b = ipopt(nlp, x0=[1.0, 0.0], lbg=0.0)
    assert abs(float(sol["x"][0])) < 1e-4 and abs(float(sol["lam_g"])) < 1e-4
    r = casadi_second_order(nlp, sol, **b)
    assert r.satisfied and r.conclusive, r.message
    assert (r.n_active, r.n_weakly_active, r.n_free_directions) == (0, 1, 2)
    assert r.min_reduced_eigenvalue == pytest.approx(1.0, abs=1e-8)
    assert "weakly active" in r.message


def test_one_weakly_active_constraint_with_negative_curvature_is_a_conclusive_failure():
    """-x^2 + y^2 at (0, 0) with x >= 0 weakly active: f decreases into x > 0, not a minimum.

    With one weakly active row the subspace test is exact (q(-d) = q(d)): conclusive, scaled -1.
    """
    r = second_order_conditions(np.diag([-2.0, 2.0]), [[1.0, 0.0]], g=[0.0], lbg=0.0, ubg=np.inf, lam_g=[0.0],
                                w=[0.0, 0.0], lbw=-np.inf, ubw=np.inf, lam_x=[0.0, 0.0])
    assert not r.satisfied and r.conclusive
    assert r.n_weakly_active == 1 and r.min_reduced_eigenvalue == pytest.approx(-1.0, abs=1e-12)


def test_two_weakly_active_constraints_can_leave_the_test_inconclusive():
    """x^2 + y^2 + 3 x y on x >= 0, y >= 0 at the origin: a strict minimum (f >= x^2 + y^2 there).

    The Hessian [[2, 3], [3, 2]] (eigenvalues -1, 5) is positive only on the quadrant, a cone: the
    subspace test fails, with both rows imposed nothing is left, so the report says inconclusive
    (scaled -1/5, ||H||_inf = 5).
    """
    r = second_order_conditions([[2.0, 3.0], [3.0, 2.0]], np.eye(2), g=[0.0, 0.0], lbg=0.0, ubg=np.inf,
                                lam_g=[0.0, 0.0], w=[0.0, 0.0], lbw=-np.inf, ubw=np.inf, lam_x=[0.0, 0.0])
    assert not r.satisfied and not r.conclusive
    assert r.min_reduced_eigenvalue == pytest.approx(-0.2, abs=1e-12)
    assert r.min_reduced_eigenvalue_weak_imposed == np.inf
    assert "inconclusive" in r.message


def test_multiplier_of_the_wrong_sign_is_not_a_minimum():
    """(x + 1)^2 with x <= 0 at x = 0: stationarity needs lam = -2 < 0 on an upper bound."""
    r = second_order_conditions([[2.0]], [[1.0]], g=[0.0], lbg=-np.inf, ubg=0.0, lam_g=[-2.0], w=[0.0],
                                lbw=-np.inf, ubw=np.inf, lam_x=[0.0], gradient=[2.0])
    assert not r.satisfied and r.n_inconsistent_multipliers == 1 and r.stationarity == 0.0
    assert "wrong sign" in r.message


def test_a_vertex_satisfies_the_conditions_trivially():
    """min x + y on x >= 0, y >= 0 (bounds): both active with lam_x = -1, no free direction."""
    r = second_order_conditions(np.zeros((2, 2)), np.zeros((0, 2)), g=[], lbg=[], ubg=[], lam_g=[], w=[0.0, 0.0],
                                lbw=0.0, ubw=np.inf, lam_x=[-1.0, -1.0], gradient=[1.0, 1.0])
    assert r.satisfied and r.n_free_directions == 0 and r.min_reduced_eigenvalue == np.inf
    assert r.stationarity == 0.0 and "vertex" in r.message


# ------------------------------------------------------------------------------ (d) LICQ fails
def test_duplicate_active_rows_are_reported_rank_deficient():
    """min x^2 + y^2 s.t. x + y = 1 twice (IPOPT copes by regularization): LICQ fails.

    The null space is still the line (1, -1) with curvature 2, scaled 1; the report must not certify.
    """
    x = ca.SX.sym("x", 2)
    nlp = {"x": x, "f": ca.sumsqr(x), "g": ca.vertcat(x[0] + x[1], x[0] + x[1])}
    sol, b = ipopt(nlp, x0=[0.0, 0.0], lbg=1.0, ubg=1.0)
    r = casadi_second_order(nlp, sol, **b)
    assert r.rank_deficient and not r.satisfied
    assert r.positive_definite                 # the curvature test alone passes (Theorem 12.6 needs no LICQ)
    assert (r.n_active, r.n_free_directions) == (2, 1)
    assert r.min_reduced_eigenvalue == pytest.approx(1.0, abs=1e-8)
    assert "LICQ" in r.message


@pytest.mark.parametrize("method", ["auto", "qr"])
def test_a_row_made_redundant_by_an_active_bound_is_rank_deficient(method):
    """g = x0 + 2 x1 = 0 with x0 fixed by its bounds and x1 at an active bound: the row is dependent.

    (The planner's input limits between collocation points do this on saturated arcs.) The sparse
    path moves the zero row aside and counts it by the exact ``A2 Z1`` step.
    """
    H = np.diag([1.0, 1.0, 4.0])
    J = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]]))
    r = second_order_conditions(H, J, g=[0.0, 0.0], lbg=0.0, ubg=0.0, lam_g=[0.5, 0.5], w=[0.0, 0.0, 0.0],
                                lbw=[0.0, 0.0, -np.inf], ubw=[0.0, np.inf, np.inf], lam_x=[-1.0, -2.0, 0.0],
                                method=method)
    assert r.rank_deficient and not r.satisfied
    assert r.method == ("lu" if method == "auto" else "qr")
    # free: x2 only, but row 2 (x1 + x2 = 0) pins it: no free direction
    assert r.n_free_directions == 0 and r.n_active == 4


# ------------------------------------------------------------------------------ inputs
def test_triangular_hessian_as_casadi_returns_it_gives_the_same_report():
    """nlp_hess_l of an nlpsol returns the upper triangle; the lower one and the full matrix agree."""
    x = ca.SX.sym("x", 3)
    f = x[0] ** 2 * x[1] + ca.exp(x[1] * x[2]) + x[2] ** 4 + x[0] * x[2]
    g = ca.vertcat(x[0] + x[1] ** 2 + x[2], x[0] * x[1])
    nlp = {"x": x, "f": f, "g": g}
    solver = ca.nlpsol("s", "ipopt", nlp, IPOPT)
    sol = solver(x0=[1.0, 0.5, -0.5], lbg=[1.0, -np.inf], ubg=[1.0, 0.2])
    upper = solver.get_function("nlp_hess_l")(sol["x"], [], 1.0, sol["lam_g"]).sparse()
    assert sp.tril(upper, -1).nnz == 0 and sp.triu(upper, 1).nnz > 0
    jac = solver.get_function("nlp_jac_g")(sol["x"], [])[1].sparse()
    common = dict(g=np.asarray(sol["g"]).ravel(), lbg=[1.0, -np.inf], ubg=[1.0, 0.2],
                  lam_g=np.asarray(sol["lam_g"]).ravel(), w=np.asarray(sol["x"]).ravel(), lbw=-np.inf, ubw=np.inf,
                  lam_x=np.asarray(sol["lam_x"]).ravel())
    full = casadi_second_order(nlp, sol, lbg=[1.0, -np.inf], ubg=[1.0, 0.2])
    for hess in (upper, upper.T.tocsr(), upper.toarray()):
        r = second_order_conditions(hess, jac, **common)
        assert r.min_reduced_eigenvalue == pytest.approx(full.min_reduced_eigenvalue, rel=1e-12)
        assert r.hessian_norm == pytest.approx(full.hessian_norm, rel=1e-12)


def test_bad_inputs_raise_early_with_the_parameter_name():
    ok = dict(g=[0.0], lbg=0.0, ubg=0.0, lam_g=[0.0], w=[0.0, 0.0], lbw=-np.inf, ubw=np.inf, lam_x=[0.0, 0.0])
    with pytest.raises(ShapeError, match="jacobian"):
        second_order_conditions(np.eye(2), [[1.0, 0.0, 0.0]], **ok)
    with pytest.raises(ShapeError, match="hessian"):
        second_order_conditions(np.eye(3), [[1.0, 0.0]], **ok)
    with pytest.raises(ParameterError, match="symmetric"):
        second_order_conditions([[1.0, 2.0], [0.5, 1.0]], [[1.0, 0.0]], **ok)
    with pytest.raises(ParameterError, match="lbg"):
        second_order_conditions(np.eye(2), [[1.0, 0.0]], **{**ok, "lbg": 1.0})
    with pytest.raises(ParameterError, match="tolerance"):
        second_order_conditions(np.eye(2), [[1.0, 0.0]], tolerance=0.0, **ok)
    with pytest.raises(ParameterError, match="method"):
        second_order_conditions(np.eye(2), [[1.0, 0.0]], method="svd", **ok)
    with pytest.raises(ParameterError, match="finite"):
        second_order_conditions(np.eye(2), [[np.nan, 0.0]], **ok)
    with pytest.raises(ParameterError, match="p must"):
        p = ca.SX.sym("p")
        x = ca.SX.sym("x")
        casadi_second_order({"x": x, "f": p * x ** 2, "p": p}, {"x": 0.0, "lam_g": [], "lam_x": 0.0})


# ------------------------------------------------------------------------------ the disk: direct and indirect
T = 5.0
X0 = np.array([-np.pi / 2, 0.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def disk():
    return RollingDisk(RollingDiskParameters(mass_kg=1.0, radius_m=1.0, inertia_kgm2=1.0, gravity_mps2=1.0,
                                             point_masses=(PointMass(mass_kg=1.0, rail=CircleRail(radius_m=0.5)),)))


@pytest.fixture(scope="module")
def problem():
    return ManeuverProblem(initial_state=X0, duration_s=T, target_contact_m=[1.0], rest_at_end=True)


class DiskNLP:
    """The planner's Hermite-Simpson NLP of this problem, rebuilt from public pieces, with its multipliers.

    The one place this file reaches past the planner's result: the plan does not (yet) carry the NLP
    and its multipliers in a stable form (ballctl.planning is being refactored), so the same
    transcription is built here -- ``hermite_simpson`` of ``disk_rhs_function``, Simpson-weighted
    ``int u^2``, contact travel ``-r (phi(T) - phi(0)) = 1``, ``theta_dot(T) = phi_dot(T) = 0``, x(0)
    fixed by its bounds -- and ``test_the_rebuilt_nlp_is_the_planners`` checks that re-solving it from
    a plan returns that plan. Swap for the plan's own report when it has one.
    """

    def __init__(self, disk, nodes):
        f = disk_rhs_function(disk)
        x, u, z = ca.SX.sym("x", 4), ca.SX.sym("u", 1), ca.SX.sym("z", 0)
        self.tr = tr = hermite_simpson(ca.Function("f", [x, u, z], [f(x, u)]), nodes)
        self.N, P = nodes.size - 1, tr.n_points
        r = disk.params.radius_m
        J = ca.sum2(ca.DM(tr.quadrature_weights).T * ca.sum1(tr.U ** 2))
        g = ca.vertcat(tr.defects, -r * (tr.X[2, -1] - X0[2]) - 1.0, tr.X[1, -1], tr.X[3, -1])
        lbX, ubX = np.full((P, 4), -np.inf), np.full((P, 4), np.inf)
        lbX[0] = ubX[0] = X0
        self.bounds = {"lbg": 0.0, "ubg": 0.0, "lbw": tr.pack(lbX, np.full((P, 1), -np.inf)),
                       "ubw": tr.pack(ubX, np.full((P, 1), np.inf))}
        self.nlp = {"x": tr.w, "f": J, "g": g}
        self.solver = ca.nlpsol("disk", "ipopt", self.nlp, {**IPOPT, "ipopt.tol": 1e-10})

    def solve(self, X, U):
        b = self.bounds
        sol = self.solver(x0=self.tr.pack(X, U), lbx=b["lbw"], ubx=b["ubw"], lbg=b["lbg"], ubg=b["ubg"])
        assert self.solver.stats()["success"], self.solver.stats()["return_status"]
        Xs, Us, _ = self.tr.unpack(np.asarray(sol["x"]).ravel())
        # costate estimate: stationarity in the midpoint input u_m of the Simpson defect
        # x_{k+1} - x_k - h (f_k + 4 f_m + f_{k+1}) / 6 (multiplier nu_k) with the cost weight 4h/6 gives
        # u_m = nu_k^T b / 2; Pontryagin's u* = -lambda^T b / 2, so lambda(t_{k+1/2}) ~ -nu_k (it converges at O(h^2))
        lam = np.asarray(sol["lam_g"]).ravel()
        costate_mid = -lam[4 * self.N:8 * self.N].reshape(self.N, 4)
        return {"t": self.tr.times, "x": Xs, "u": Us[:, 0], "cost": float(sol["f"]), "costate_mid": costate_mid,
                "solution": sol}

    def second_order(self, solution):
        return casadi_second_order(self.nlp, solution, **self.bounds)


def seed(times, theta_end):
    """Smoothstep from the start: theta to ``theta_end``, phi to -1 (1 m of travel), inputs zero."""
    s = times / T
    prog, dprog = 3 * s ** 2 - 2 * s ** 3, (6 * s - 6 * s ** 2) / T
    X = np.tile(X0, (times.size, 1))
    X[:, 0], X[:, 1] = X0[0] + prog * (theta_end - X0[0]), dprog * (theta_end - X0[0])
    X[:, 2], X[:, 3] = -prog, -dprog
    return X, np.zeros((times.size, 1))


#: the two local optima: straight (mass stays below, theta(T) ~ -1.76) and over the top (theta(T) ~ 3.95)
BRANCHES = {"straight": -np.pi / 2, "over_the_top": 3 * np.pi / 2}


class Pontryagin:
    """The indirect solution: min int u^2 dt, x' = a(x) + b(x) u (eq. 6.2 with u = theta_ddot).

    H(x, lam, u) = u^2 + lam^T (a + b u); dH/du = 0 gives u* = -lam^T b / 2, and with
    H*(x, lam) = H(x, lam, u*(x, lam)): x' = dH*/dlam, lam' = -dH*/dx (the envelope theorem removes
    du*/dx). A ninth state c' = u*^2, c(0) = 0 carries the cost. Boundary conditions: x(0) = x0;
    theta_dot(T) = 0, phi(T) = phi(0) - 1/r (1 m of travel), phi_dot(T) = 0; theta(T) free, so
    lam_theta(T) = 0 (transversality). Derivatives by CasADi of ``disk_rhs_function`` (the same
    equations the planner transcribes, checked against RollingDisk.rhs in tests/test_planning.py).
    """

    def __init__(self, disk):
        f = disk_rhs_function(disk)
        y = ca.SX.sym("y", 9)
        x, lam, u = y[:4], y[4:8], ca.SX.sym("u")
        a = f(x, 0.0)
        b = ca.jacobian(f(x, u), u)                      # f is affine in u: b does not depend on u
        ustar = -ca.dot(lam, b) / 2
        Hs = ustar ** 2 + ca.dot(lam, a + b * ustar)
        rhs = ca.vertcat(ca.gradient(Hs, lam), -ca.gradient(Hs, x), ustar ** 2)
        self.F, self.DF = ca.Function("F", [y], [rhs]), ca.Function("DF", [y], [ca.jacobian(rhs, y)])
        self.U, self.H = ca.Function("U", [y], [ustar]), ca.Function("H", [y], [Hs])
        self.phi_T = X0[2] - 1.0 / disk.params.radius_m

    def solve(self, t, X, costate):
        fun = lambda _, Y: np.asarray(self.F(Y))                                     # noqa: E731
        jac = lambda _, Y: np.asarray(self.DF(Y)).reshape(9, Y.shape[1], 9).transpose(0, 2, 1)  # noqa: E731

        def bc(ya, yb):
            return np.array([*(ya[:4] - X0), ya[8], yb[1], yb[2] - self.phi_T, yb[3], yb[4]])

        A, B = np.zeros((9, 9)), np.zeros((9, 9))
        A[:4, :4], A[4, 8] = np.eye(4), 1.0
        B[5, 1] = B[6, 2] = B[7, 3] = B[8, 4] = 1.0
        sol = solve_bvp(fun, bc, t, np.vstack([X.T, costate.T, np.zeros(t.size)]), fun_jac=jac,
                        bc_jac=lambda ya, yb: (A, B), tol=1e-8, max_nodes=50000)
        assert sol.success, sol.message
        return sol

    def control(self, sol, t):
        return np.asarray(self.U(sol.sol(t))).ravel()


@pytest.fixture(scope="module")
def direct(disk):
    """Both branches on 50 and 100 uniform intervals (the planner's transcription, fixed meshes)."""
    out = {}
    for N in (50, 100):
        nlp = DiskNLP(disk, np.linspace(0.0, T, N + 1))
        for name, theta_end in BRANCHES.items():
            out[name, N] = nlp.solve(*seed(nlp.tr.times, theta_end))
            out[name, N]["nlp"] = nlp
    return out


@pytest.fixture(scope="module")
def indirect(disk, direct):
    """Pontryagin's solution of each branch, seeded by its 50-interval direct plan and multipliers."""
    pmp = Pontryagin(disk)
    out = {}
    for name in BRANCHES:
        d = direct[name, 50]
        t = d["t"]
        costate = np.column_stack([np.interp(t, t[1::2], d["costate_mid"][:, i]) for i in range(4)])
        out[name] = pmp.solve(t, d["x"], costate)
    return pmp, out


@pytest.fixture(scope="module")
def default_plan(disk, problem):
    """``plan_maneuver(disk, problem)`` on its defaults (planned once per process, shared with
    tests/test_planning_branches.py: the same disk and problem, checked here)."""
    planned_disk, planned_problem, plan = default_disk_plan()
    assert describe(planned_disk, planned_problem) == describe(disk, problem)
    return plan


# Measured errors of the direct plans against the indirect solution, uniform mesh h = T/N:
#   straight (cost 54.32155, |u| up to 17, costates up to ~1800): N=50: cost 2.9e-3 relative, state 1.0e-2,
#     input 0.78; N=100: 1.9e-4, 6.8e-4, 0.18.
#   over the top (cost 4.895737, |u| up to 1.7): N=50: 4.6e-7, 1.5e-5, 4.2e-3; N=100: 2.9e-8, 9.3e-7, 1.1e-3.
# Cost and states shrink 15-16x per halving (order 4, Hermite-Simpson's local error O(h^5)); the input
# (and the multiplier costates) only 4x: order 2, measured (the order-4 bound is the states'; the collocated
# control and the multipliers converge at a lower order).
# Bounds below: about twice the measured error at h = 0.1, scaled by (h / 0.1)^4 (cost, states) or
# (h / 0.1)^2 (input), so that they hold on any mesh the planner returns.
ERROR_AT_H01 = {"straight": {"cost": 5e-3, "state": 2e-2, "input": 1.5},
                "over_the_top": {"cost": 1e-6, "state": 3e-5, "input": 1e-2}}


def errors(pmp, sol, t, X, U, cost):
    Y = sol.sol(t)
    return {"cost": abs(cost - sol.y[8, -1]) / sol.y[8, -1], "state": float(np.abs(X - Y[:4].T).max()),
            "input": float(np.abs(U - np.asarray(pmp.U(Y)).ravel()).max())}


def test_the_indirect_solutions_are_pontryagin_extremals_of_the_two_branches(indirect):
    """The BVP solutions: the stated end conditions, the known end angles and costs, a constant H.

    H* is constant along an extremal of an autonomous problem: checked on 2001 points to 1e-6 of
    max(1, |H*|) (solve_bvp's residual tolerance is 1e-8 relative; its cubic interpolant between
    its ~2000-5000 nodes adds ~1e-8).
    """
    pmp, sols = indirect
    ends = {"straight": (-1.763, 54.3216), "over_the_top": (3.947, 4.89574)}
    for name, sol in sols.items():
        yT = sol.y[:, -1]
        assert abs(yT[1]) < 1e-10 and abs(yT[2] + 1.0) < 1e-10 and abs(yT[3]) < 1e-10 and abs(yT[4]) < 1e-10
        assert yT[0] == pytest.approx(ends[name][0], abs=1e-3) and yT[8] == pytest.approx(ends[name][1], rel=1e-5)
        Hs = np.asarray(pmp.H(sol.sol(np.linspace(0.0, T, 2001)))).ravel()
        assert np.ptp(Hs) < 1e-6 * max(1.0, np.abs(Hs).max()), (name, np.ptp(Hs))


@pytest.mark.parametrize("name", list(BRANCHES))
def test_direct_plans_converge_to_the_indirect_solution_at_hermite_simpsons_orders(name, direct, indirect):
    """Cost and states at order 4, the input u = -lam^T b / 2 at order 2 (N = 50 -> 100).

    The indirect reference is exact to ~1e-10 relative in the cost (solve_bvp at tol 1e-8: the cost
    changes by < 1e-9 relative from tol 1e-6 to 1e-8), far below the smallest error compared (3e-8).
    """
    pmp, sols = indirect
    e = {N: errors(pmp, sols[name], direct[name, N]["t"], direct[name, N]["x"], direct[name, N]["u"],
                   direct[name, N]["cost"]) for N in (50, 100)}
    for kind, bound in ERROR_AT_H01[name].items():
        assert e[50][kind] < bound, (name, kind, e[50][kind])
    # halving h divides the error by 2^4 = 16 (cost, states) and 2^2 = 4 (input); [12, 20] and [3.3, 4.8]
    # accept orders 3.6-4.3 and 1.7-2.3
    assert 12 < e[50]["cost"] / e[100]["cost"] < 20, e
    assert 12 < e[50]["state"] / e[100]["state"] < 20, e
    assert 3.3 < e[50]["input"] / e[100]["input"] < 4.8, e


def test_the_default_plan_agrees_with_the_indirect_solution_of_its_branch(default_plan, indirect):
    """``plan_maneuver(disk, problem)`` on its defaults: one of the two branches, within its error bounds.

    The branch is the indirect solution nearest in theta(T); the bounds of ERROR_AT_H01 are scaled to
    the plan's largest mesh step (the planner may refine the mesh).
    """
    plan = default_plan
    assert plan.converged, plan.report.message
    pmp, sols = indirect
    name = min(sols, key=lambda k: abs(sols[k].y[0, -1] - plan.x[-1, 0]))
    assert abs(sols[name].y[0, -1] - plan.x[-1, 0]) < 1e-3
    h = float(np.diff(plan.nodes).max())
    e = errors(pmp, sols[name], plan.t, plan.x, plan.u[:, 0], plan.report.objective)
    scale = {"cost": (h / 0.1) ** 4, "state": (h / 0.1) ** 4, "input": (h / 0.1) ** 2}
    for kind, bound in ERROR_AT_H01[name].items():
        assert e[kind] < bound * scale[kind], (name, h, kind, e[kind])
    report = getattr(plan, "second_order", None)       # when the planner checks its own solution
    if report is not None:
        assert report.satisfied, report.message


#: the planner on the mesh asked for: a planner that refines to an accuracy target (``accuracy=``) is
#: told not to (the straight branch would be refined to 400 intervals, ~25 s)
ON_THE_MESH = {"accuracy": None} if "accuracy" in inspect.signature(plan_maneuver).parameters else {}


@pytest.mark.parametrize("name", list(BRANCHES))
def test_the_planner_warm_started_on_a_branch_returns_its_direct_solution(name, disk, problem, default_plan, direct):
    """``plan_maneuver(..., warm_start=plan with theta replaced by the branch's smoothstep)`` on 50 intervals.

    Same transcription and mesh as the rebuilt NLP: same end angle (1e-6 rad) and cost (1e-8 relative:
    both IPOPT solves stop at tol <= 1e-9 on a quadratic-cost problem, the cost is accurate to ~1e-10).
    """
    X, U = seed(default_plan.t, BRANCHES[name])
    plan = plan_maneuver(disk, problem, intervals=50, warm_start=replace(default_plan, x=X, u=U), **ON_THE_MESH)
    assert plan.converged, plan.report.message
    ref = direct[name, 50]
    assert plan.nodes.size == 51
    assert plan.x[-1, 0] == pytest.approx(ref["x"][-1, 0], abs=1e-6)
    assert plan.report.objective == pytest.approx(ref["cost"], rel=1e-8)


def test_the_rebuilt_nlp_is_the_planners(disk, default_plan):
    """Re-solving the rebuilt NLP on the default plan's mesh from the plan returns the plan (1e-8)."""
    plan = default_plan
    nlp = DiskNLP(disk, plan.nodes)
    d = nlp.solve(plan.x, plan.u)
    assert d["cost"] == pytest.approx(plan.report.objective, rel=1e-8)
    assert np.abs(d["x"] - plan.x).max() < 1e-6 and np.abs(d["u"] - plan.u[:, 0]).max() < 1e-5


# ------------------------------------------------------------------------------ second order on the disk
@pytest.mark.parametrize("name", list(BRANCHES))
def test_both_disk_branches_are_strict_local_minima(name, direct):
    """SOSC on the 50-interval NLP of each branch: 4 fixed initial states, 400 defects and 3 end conditions.

    Free directions: the 101 inputs less the 3 end conditions = 98. Smallest scaled eigenvalues:
    3.2e-5 (straight, ||H||_inf ~ 930: curvature ~ 0.03) and 3.1e-3 (over the top, ||H||_inf ~ 5):
    both far above the 1e-8 threshold, asserted at > 1e-6. The sparse and dense null spaces agree.
    """
    d = direct[name, 50]
    r = d["nlp"].second_order(d["solution"])
    assert r.satisfied and not r.rank_deficient, r.message
    assert r.stationarity < 1e-6               # CasADi's multipliers: grad(f + lam_g^T g + lam_x^T w) = 0
    assert (r.n_variables, r.n_active, r.n_free_directions) == (505, 407, 98)
    assert r.min_reduced_eigenvalue > 1e-6 and r.n_negative_directions == 0 and r.method == "lu"
    sol, b = d["solution"], d["nlp"].bounds
    dense = casadi_second_order(d["nlp"].nlp, sol, method="qr", **b)
    assert dense.min_reduced_eigenvalue == pytest.approx(r.min_reduced_eigenvalue, rel=1e-8)


def test_a_duplicated_collocation_defect_is_found_by_the_sparse_path(direct):
    """The over-the-top NLP with one Simpson defect row repeated (multiplier 0): LICQ fails by exactly one row.

    The basis block is then exactly singular; the sparse path locates the row by its pivot and counts it
    by the exact ``A2 Z1`` step, without the dense QR: same 98 free directions, same eigenvalue (1e-10).
    """
    d = direct["over_the_top", 50]
    nlp, sol = d["nlp"], d["solution"]
    k = 4 * 50 + 7                           # a Simpson defect row (interval 1, phi_dot)
    twice = {**nlp.nlp, "g": ca.vertcat(nlp.nlp["g"], nlp.nlp["g"][k])}
    sol2 = {**sol, "lam_g": ca.vertcat(sol["lam_g"], 0.0)}
    r0 = nlp.second_order(sol)
    r = casadi_second_order(twice, sol2, **nlp.bounds)
    assert r.rank_deficient and not r.satisfied and r.positive_definite and r.method == "lu", r
    assert (r.n_active, r.n_free_directions) == (r0.n_active + 1, r0.n_free_directions)
    assert r.min_reduced_eigenvalue == pytest.approx(r0.min_reduced_eigenvalue, rel=1e-10)
    assert r.stationarity < 1e-6
