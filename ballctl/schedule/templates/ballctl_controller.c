/* ballctl output-feedback tracking controller (see ballctl_controller.h).
 * The same steps, in the same order, as ballctl/loop_step.py; ballctl/runtime.py is its Python twin. */
#include "ballctl_controller.h"
#include "ballctl_controller_data.h"

#define BC_NB_MAX BC_N_BASIS
#if defined(__GNUC__) && !defined(__clang__)
#define BC_UNROLL _Pragma("GCC unroll 65")
#else
#define BC_UNROLL
#endif

/* slot of the step `back` steps before the one in `slot` */
static unsigned int bc_back(unsigned int slot, unsigned int back)
{
    return (slot + (unsigned int)BC_RING - back) % (unsigned int)BC_RING;
}

static int bc_finite(ballctl_real v)
{
    return v == v && v - v == BC_R(0.0);
}

/* round half to even (numpy.round) without libm: exact for |v| below BC_ROUND_LIMIT, larger values are integers */
static ballctl_real bc_round_even(ballctl_real v)
{
    ballctl_real t;
    if (v >= BC_ROUND_LIMIT || v <= -BC_ROUND_LIMIT) {
        return v;
    }
    t = v + BC_ROUND_MAGIC;   /* the assignment rounds to ballctl_real, also with excess precision */
    return t - BC_ROUND_MAGIC;
}

/* ----------------------------------------------------------------------------- the time-varying data */
#if BC_PERIODIC
/* 1, cos phi, sin phi, ..., cos H phi, sin H phi of the phase theta (2^-64 turns); no libm */
static void bc_phase_basis(unsigned long long theta, ballctl_real b[BC_N_BASIS])
{
    const unsigned long long t = theta + (1ULL << 61);
    const unsigned int n = (unsigned int)(t >> 62);                  /* nearest quarter turn */
    const unsigned long long f = t & ((1ULL << 62) - 1ULL);          /* offset from it, shifted by 1/8 turn */
    const unsigned int hi = (unsigned int)(f >> 31);
    const unsigned int lo = (unsigned int)(f & 0x7FFFFFFFULL);
    const ballctl_real x = (((ballctl_real)hi - BC_R(1073741824.0)) + (ballctl_real)lo * BC_R(4.656612873077393e-10))
                           * BC_R(7.314590396335798e-10);          /* in [-pi/4, pi/4) */
    const ballctl_real x2 = x * x;
    const ballctl_real s = x * (BC_R(1.0) + x2 * (BC_R(-0.16666666666666666) + x2 * (BC_R(0.008333333333333333)
        + x2 * (BC_R(-0.0001984126984126984) + x2 * (BC_R(2.7557319223985893e-06) + x2 * (BC_R(-2.505210838544172e-08)
        + x2 * (BC_R(1.6059043836821613e-10) + x2 * BC_R(-7.647163731819816e-13))))))));
    const ballctl_real co = BC_R(1.0) + x2 * (BC_R(-0.5) + x2 * (BC_R(0.041666666666666664) + x2 * (BC_R(-0.001388888888888889)
        + x2 * (BC_R(2.48015873015873e-05) + x2 * (BC_R(-2.755731922398589e-07) + x2 * (BC_R(2.08767569878681e-09)
        + x2 * (BC_R(-1.1470745597729725e-11) + x2 * BC_R(4.779477332387385e-14))))))));
    b[0] = BC_R(1.0);
#if BC_N_BASIS > 1
    {
    int h;
    switch (n) {
    case 0: b[1] = co; b[2] = s; break;
    case 1: b[1] = -s; b[2] = co; break;
    case 2: b[1] = -co; b[2] = -s; break;
    default: b[1] = s; b[2] = -co; break;
    }
    for (h = 3; h + 1 < BC_N_BASIS; h += 2) {
        b[h] = b[h - 2] * b[1] - b[h - 1] * b[2];
        b[h + 1] = b[h - 1] * b[1] + b[h - 2] * b[2];
    }
    }
#else
    (void)n; (void)s; (void)co;
#endif
}

/* out[e] = sum_i coef[e][i] b[i], i < NB: a truncated Fourier series per entry; one function per group so that
 * NB is a constant (the inner loop unrolls, the basis stays in registers) */
#define BC_SUM_FN(NAME, NB)                                                                                   \
    static void NAME(const ballctl_real *restrict coef, int n, const ballctl_real *restrict b,                 \
                     ballctl_real *restrict out)                                                               \
    {                                                                                                          \
        int e, i;                                                                                              \
        for (e = 0; e < n; ++e) {                                                                              \
            const ballctl_real *ce = coef + e * (NB);                                                          \
            ballctl_real acc = ce[0];                                                                          \
            BC_UNROLL for (i = 1; i < (NB); ++i) {                                                             \
                acc += ce[i] * b[i];                                                                           \
            }                                                                                                  \
            out[e] = acc;                                                                                      \
        }                                                                                                      \
    }
/* out[idx[v]] = sum_i coef[v][i] b[i], i < NB, over the entries that vary with the phase (the others are
 * constants, written once by ballctl_init) */
#define BC_VSUM_FN(NAME, NB)                                                                                  \
    static void NAME(const ballctl_real *restrict coef, const unsigned short *restrict idx, int nv,            \
                     const ballctl_real *restrict b, ballctl_real *restrict out)                               \
    {                                                                                                          \
        int v, i;                                                                                              \
        for (v = 0; v < nv; ++v) {                                                                             \
            const ballctl_real *cv = coef + v * (NB);                                                          \
            ballctl_real acc = cv[0];                                                                          \
            BC_UNROLL for (i = 1; i < (NB); ++i) {                                                             \
                acc += cv[i] * b[i];                                                                           \
            }                                                                                                  \
            out[idx[v]] = acc;                                                                                 \
        }                                                                                                      \
    }
BC_VSUM_FN(bc_vsum_ad, BC_NB_AD)
BC_VSUM_FN(bc_vsum_bd, BC_NB_BD)
BC_VSUM_FN(bc_vsum_c, BC_NB_C)
BC_VSUM_FN(bc_vsum_m, BC_NB_M)
BC_VSUM_FN(bc_vsum_k, BC_NB_K)
BC_SUM_FN(bc_sum_uff, BC_NB_UFF)
BC_SUM_FN(bc_sum_yref, BC_NB_YREF)

static void bc_copy(const ballctl_real *from, int n, ballctl_real *out)
{
    int e;
    for (e = 0; e < n; ++e) {
        out[e] = from[e];
    }
}
#endif

/* Ad, Bd of step j into ring slot s */
static void bc_model(ballctl_controller *c, unsigned int s, ballctl_index j)
{
#if BC_PERIODIC
    (void)j;
    int e;
    ballctl_real *A = &c->Ad[s][0][0];
    const ballctl_real *B = &c->Bd[s][0][0];
    (void)e;
    bc_vsum_bd(&bc_v_Bd[0][0], bc_v_Bd_idx, BC_NV_BD, c->basis[s], &c->Bd[s][0][0]);
    bc_vsum_ad(&bc_v_Ad[0][0], bc_v_Ad_idx, BC_NV_AD, c->basis[s], A);
    for (e = 0; e < BC_NCOPY_BD_AD; ++e) {   /* entries of Ad that are entries of Bd (an augmented model) */
        A[bc_copy_bd_ad[e][0]] = B[bc_copy_bd_ad[e][1]];
    }
    for (e = 0; e < BC_NCOPY_AD_AD; ++e) {
        A[bc_copy_ad_ad[e][0]] = A[bc_copy_ad_ad[e][1]];
    }
#else
    int e;
    const ballctl_real *A = j < BC_N_PLAN ? &bc_t_Ad[j][0][0] : &bc_h_Ad[0][0];
    const ballctl_real *B = j < BC_N_PLAN ? &bc_t_Bd[j][0][0] : &bc_h_Bd[0][0];
    for (e = 0; e < BC_N_STATES * BC_N_STATES; ++e) {
        (&c->Ad[s][0][0])[e] = A[e];
    }
    for (e = 0; e < BC_N_STATES * BC_N_INPUTS; ++e) {
        (&c->Bd[s][0][0])[e] = B[e];
    }
#endif
}

/* C (ny x N) and M (N x ny) of the step in slot s (step j) */
static void bc_filter(ballctl_controller *c, unsigned int s, ballctl_index j, const ballctl_real **Cm,
                      const ballctl_real **Mg)
{
#if BC_PERIODIC
    const unsigned int r = c->cls[s];
    (void)j;
    bc_vsum_c(&bc_v_C[r][0][0], bc_v_C_idx, BC_NV_C, c->basis[s], c->Cm[r]);
    bc_vsum_m(&bc_v_M[r][0][0], bc_v_M_idx, BC_NV_M, c->basis[s], c->Mg[r]);
    *Cm = c->Cm[r];
    *Mg = c->Mg[r];
#else
    if (j < BC_N_PLAN) {
        *Cm = &bc_t_C[j][0][0];
        *Mg = &bc_t_M[j][0][0];
    } else {
        *Cm = &bc_h_C[c->cls[s]][0][0];
        *Mg = &bc_h_M[c->cls[s]][0][0];
    }
#endif
}

/* feedback gains (nu x N) and feedforward of step k (slot s) */
static const ballctl_real *bc_law(ballctl_controller *c, unsigned int s, ballctl_index k, ballctl_real uff[BC_N_INPUTS])
{
#if BC_PERIODIC
    (void)k;
    bc_vsum_k(&bc_v_K[0][0], bc_v_K_idx, BC_NV_K, c->basis[s], c->G);
    bc_sum_uff(&bc_f_uff[0][0], BC_N_INPUTS, c->basis[s], uff);
    return c->G;
#else
    int i;
    (void)c; (void)s;
    for (i = 0; i < BC_N_INPUTS; ++i) {
        uff[i] = k < BC_N_PLAN ? bc_t_uff[k][i] : bc_h_uff[i];
    }
    return k < BC_N_PLAN ? &bc_t_K[k][0][0] : &bc_h_K[0][0];
#endif
}

/* reference of the measured signals of step j (b: its basis when periodic) */
static void bc_yref(const ballctl_real *b, ballctl_index j, ballctl_real y_ref[BC_N_SIGNALS])
{
#if BC_PERIODIC
    (void)j;
    bc_sum_yref(&bc_f_yref[0][0], BC_N_SIGNALS, b, y_ref);
#else
    int m;
    (void)b;
    for (m = 0; m < BC_N_SIGNALS; ++m) {
        y_ref[m] = j < BC_N_PLAN ? bc_t_yref[j][m] : bc_h_yref[m];
    }
#endif
}

/* ----------------------------------------------------------------------------- the filter */
/* out = X + M (y_dev - C X) over the signals received (loop_step.kalman_update); counts health when `commit` */
static void bc_update(ballctl_controller *c, const ballctl_real X[BC_N_STATES], unsigned int s,
                      const ballctl_real *Cm, const ballctl_real *Mg, ballctl_real out[BC_N_STATES], int commit)
{
    ballctl_real inn[BC_N_SIGNALS];
    int i, m, large = 0, any = 0;
    for (m = 0; m < BC_N_SIGNALS; ++m) {
        ballctl_real acc = c->y_dev[s][m];
        if (!c->got[s][m]) {
            inn[m] = BC_R(0.0);   /* not received: no update from this signal */
            continue;
        }
        any = 1;
        for (i = 0; i < BC_N_STATES; ++i) {
            acc -= Cm[m * BC_N_STATES + i] * X[i];
        }
        inn[m] = acc;
        if (acc > bc_innovation_limit[m] || acc < -bc_innovation_limit[m]) {
            large = 1;
        }
    }
    for (i = 0; i < BC_N_STATES; ++i) {
        ballctl_real acc = BC_R(0.0);
        for (m = 0; m < BC_N_SIGNALS; ++m) {
            acc += Mg[i * BC_N_SIGNALS + m] * inn[m];
        }
        out[i] = X[i] + acc;
    }
    if (commit) {
        c->n_large = large ? (c->n_large < BC_HEALTH_STEPS ? c->n_large + 1U : c->n_large) : 0U;
        c->n_stale = any ? 0U : (c->n_stale < BC_STALE_STEPS ? c->n_stale + 1U : c->n_stale);
    }
}

/* out = Ad X + Bd du (loop_step.kalman_predict); out must not alias X */
static void bc_predict(const ballctl_real *restrict X, const ballctl_real *restrict Ad, const ballctl_real *restrict Bd,
                       const ballctl_real *restrict du, ballctl_real *restrict out)
{
    int i, l;
    for (i = 0; i < BC_N_STATES; ++i) {
        ballctl_real a = BC_R(0.0), b = BC_R(0.0);
        BC_UNROLL for (l = 0; l < BC_N_STATES; ++l) {
            a += Ad[i * BC_N_STATES + l] * X[l];
        }
        BC_UNROLL for (l = 0; l < BC_N_INPUTS; ++l) {
            b += Bd[i * BC_N_INPUTS + l] * du[l];
        }
        out[i] = a + b;
    }
}

/* the slew limit over a span (loop_step.shape_command with only max_rate) */
static ballctl_real bc_slew(ballctl_real target, ballctl_real prev, ballctl_real step)
{
    ballctl_real change;
    if (!(BC_MAX_RATE > BC_R(0.0))) {
        return target;
    }
    change = target - prev;
    if (change > step) {
        return prev + step;
    }
    if (change < -step) {
        return prev + -step;
    }
    return target;
}

/* the slot bookkeeping of a new step k (basis, class, nothing received yet) */
static void bc_enter(ballctl_controller *c, unsigned int s, unsigned int cls)
{
    int m;
    c->cls[s] = cls;
#if BC_PERIODIC
    bc_phase_basis(c->theta, c->basis[s]);
#else
    c->basis[s][0] = BC_R(1.0);
#endif
    for (m = 0; m < BC_N_SIGNALS; ++m) {
        c->y_dev[s][m] = BC_R(0.0);
        c->got[s][m] = 0;
    }
}

/* ----------------------------------------------------------------------------- the API */
void ballctl_init(ballctl_controller *c)
{
    unsigned int s;
    int i, l;
    c->k = 0;
    c->j_c = 0;
    c->theta = 0ULL;
    c->slot = 0U;
    c->dslot = 0U;
    c->n_large = 0U;
    c->n_stale = 0U;
    c->health = 0U;
    for (i = 0; i < BC_N_STATES; ++i) {
        c->X_c[i] = BC_R(0.0);
    }
    for (s = 0; s < (unsigned int)BC_RING; ++s) {
        bc_enter(c, s, 0U);
        for (i = 0; i < BC_N_INPUTS; ++i) {
            c->du[s][i] = BC_R(0.0);
        }
        for (i = 0; i < BC_N_STATES; ++i) {
            for (l = 0; l < BC_N_STATES; ++l) {
                c->Ad[s][i][l] = BC_R(0.0);
            }
            for (l = 0; l < BC_N_INPUTS; ++l) {
                c->Bd[s][i][l] = BC_R(0.0);
            }
        }
    }
#if BC_PERIODIC
    /* the entries that do not vary with the phase, once */
    for (s = 0; s < (unsigned int)BC_RING; ++s) {
        bc_copy(bc_c_Ad, BC_N_STATES * BC_N_STATES, &c->Ad[s][0][0]);
        bc_copy(bc_c_Bd, BC_N_STATES * BC_N_INPUTS, &c->Bd[s][0][0]);
    }
    for (s = 0; s < BC_N_CLASSES; ++s) {
        bc_copy(bc_c_C[s], BC_N_SIGNALS * BC_N_STATES, c->Cm[s]);
        bc_copy(bc_c_M[s], BC_N_STATES * BC_N_SIGNALS, c->Mg[s]);
    }
    bc_copy(bc_c_K, BC_N_INPUTS * BC_N_STATES, c->G);
#endif
    for (s = 0; s < (unsigned int)BC_DELAY_RING; ++s) {
        for (i = 0; i < BC_N_INPUTS; ++i) {
            c->cmd[s][i] = bc_u_start[i];
        }
    }
    for (i = 0; i < BC_N_INPUTS; ++i) {
        c->u_applied[i] = bc_u_start[i];
    }
    bc_enter(c, 0U, 0U);
}

int ballctl_measure(ballctl_controller *c, ballctl_index j, const ballctl_real y[BC_N_SIGNALS])
{
    ballctl_real y_ref[BC_N_SIGNALS];
    unsigned int s;
    int m, status = BC_OK;
    if (j > c->k) {
        return BC_ERR_FUTURE;
    }
    if (j < c->j_c) {
        return BC_ERR_LATE;
    }
    s = bc_back(c->slot, (unsigned int)(c->k - j));
    bc_yref(c->basis[s], j, y_ref);
    for (m = 0; m < BC_N_SIGNALS; ++m) {
        ballctl_real dev;
        if (!bc_sampled[c->cls[s]][m]) {
            continue;
        }
        if (!bc_finite(y[m])) {
            status |= BC_REFUSED_NONFINITE;
            continue;
        }
        dev = y[m] - y_ref[m];
        if (dev > bc_max_deviation[m] || dev < -bc_max_deviation[m]) {
            status |= BC_REFUSED_RANGE;
            continue;
        }
        c->y_dev[s][m] = dev;
        c->got[s][m] = 1;
    }
    return status;
}

ballctl_index ballctl_step(ballctl_controller *c, ballctl_real u[BC_N_INPUTS])
{
    ballctl_real X[BC_N_STATES], tmp[BC_N_STATES], uff[BC_N_INPUTS], held0[BC_N_INPUTS];
    const ballctl_real *Cm, *Mg, *G;
    const ballctl_index k = c->k;
    unsigned int s, d_first, d_second;
    ballctl_index j;
    int i, l, finite = 1;
    /* 1. commit the steps whose samples have all arrived: update, then predict with the input that acted */
    while (c->j_c <= k - BC_LATENCY_STEPS && c->j_c < k) {
        s = bc_back(c->slot, (unsigned int)(k - c->j_c));
        bc_filter(c, s, c->j_c, &Cm, &Mg);
        bc_update(c, c->X_c, s, Cm, Mg, tmp, 1);
        bc_predict(tmp, &c->Ad[s][0][0], &c->Bd[s][0][0], c->du[s], c->X_c);
        c->j_c += 1;
    }
    /* 2. the estimate at step k */
    if (BC_LATENCY_STEPS == 0) {
        bc_filter(c, c->slot, k, &Cm, &Mg);
        bc_update(c, c->X_c, c->slot, Cm, Mg, X, 0);
    } else {
        for (i = 0; i < BC_N_STATES; ++i) {
            X[i] = c->X_c[i];
        }
        for (j = c->j_c; j < k; ++j) {   /* latency compensation: predict with the inputs already sent */
            s = bc_back(c->slot, (unsigned int)(k - j));
            bc_predict(X, &c->Ad[s][0][0], &c->Bd[s][0][0], c->du[s], tmp);
            for (i = 0; i < BC_N_STATES; ++i) {
                X[i] = tmp[i];
            }
        }
    }
    /* 3. the control law u = u_ff - K x_hat */
    G = bc_law(c, c->slot, k, uff);
    for (i = 0; i < BC_N_INPUTS; ++i) {
        ballctl_real acc = BC_R(0.0);
        for (l = 0; l < BC_N_STATES; ++l) {
            acc += G[i * BC_N_STATES + l] * X[l];
        }
        u[i] = uff[i] - acc;
        finite &= bc_finite(u[i]);
    }
    if (!finite) {   /* never propagate a NaN: restart the estimate on the reference */
        for (i = 0; i < BC_N_STATES; ++i) {
            c->X_c[i] = BC_R(0.0);
        }
        for (s = 0; s < (unsigned int)BC_RING; ++s) {
            for (i = 0; i < BC_N_INPUTS; ++i) {
                c->du[s][i] = BC_R(0.0);
            }
        }
        c->health |= BC_HEALTH_RESET;
        for (i = 0; i < BC_N_INPUTS; ++i) {
            u[i] = uff[i];
        }
    }
    /* 4. the rig's shaping of the command: quantum, then the tilt limit */
    for (i = 0; i < BC_N_INPUTS; ++i) {
        ballctl_real q = u[i];
        if (BC_QUANTUM > BC_R(0.0)) {
            q = bc_round_even(q / BC_QUANTUM) * BC_QUANTUM;
        }
        if (BC_MAX_ANGLE > BC_R(0.0)) {
            if (q > BC_MAX_ANGLE) {
                q = BC_MAX_ANGLE;
            } else if (q < -BC_MAX_ANGLE) {
                q = -BC_MAX_ANGLE;
            }
        }
        u[i] = q;
        c->cmd[c->dslot][i] = q;
    }
    /* 5. what acts on the plate over the step: the commands of steps k - d - 1 and k - d, slewed, averaged */
    d_first = (c->dslot + (unsigned int)BC_DELAY_RING - (unsigned int)BC_DELAY_STEPS - 1U) % (unsigned int)BC_DELAY_RING;
    d_second = (c->dslot + (unsigned int)BC_DELAY_RING - (unsigned int)BC_DELAY_STEPS) % (unsigned int)BC_DELAY_RING;
    for (i = 0; i < BC_N_INPUTS; ++i) {
        const ballctl_real first = k - BC_DELAY_STEPS - 1 >= 0 ? c->cmd[d_first][i] : bc_u_start[i];
        const ballctl_real second = k - BC_DELAY_STEPS >= 0 ? c->cmd[d_second][i] : bc_u_start[i];
        if (BC_SPAN1 > BC_R(0.0)) {
            c->u_applied[i] = bc_slew(first, c->u_applied[i], BC_MAX_RATE * BC_SPAN1);
        }
        held0[i] = c->u_applied[i];
        c->u_applied[i] = bc_slew(second, c->u_applied[i], BC_MAX_RATE * BC_SPAN2);
        c->du[c->slot][i] = (BC_W1 * held0[i] + BC_W2 * c->u_applied[i]) - uff[i];
    }
    /* 6. the model of step k (used by the next steps), then the next step */
    bc_model(c, c->slot, k);
    c->health = (c->health & BC_HEALTH_RESET) | (c->n_large >= BC_HEALTH_STEPS ? BC_HEALTH_INNOVATION : 0U)
                | (c->n_stale >= BC_STALE_STEPS ? BC_HEALTH_STALE : 0U);
    {
        const unsigned int next = (c->slot + 1U) % (unsigned int)BC_RING;
        const unsigned int cls = (c->cls[c->slot] + 1U) % (unsigned int)BC_N_CLASSES;
        c->k = k + 1;
        c->theta += BC_PHASE_STEP;
        c->slot = next;
        c->dslot = (c->dslot + 1U) % (unsigned int)BC_DELAY_RING;
        bc_enter(c, next, cls);
    }
    return k;
}

int ballctl_reference(const ballctl_controller *c, ballctl_index j, ballctl_real y_ref[BC_N_SIGNALS])
{
    ballctl_real b[BC_N_BASIS];
    (void)c;
    if (j < 0) {
        return BC_ERR_FUTURE;
    }
#if BC_PERIODIC
    bc_phase_basis((unsigned long long)j * BC_PHASE_STEP, b);
#else
    b[0] = BC_R(1.0);
#endif
    bc_yref(b, j, y_ref);
    return 0;
}

unsigned int ballctl_health(const ballctl_controller *c)
{
    return c->health;
}
