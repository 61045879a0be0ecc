/* ballctl output-feedback tracking controller (see ballctl_controller.h).
 * The same steps, in the same order, as ballctl/loop_step.py. */
#include "ballctl_controller.h"

static void update(const double X[BC_N_STATES], long j, const double y_dev[BC_N_SIGNALS],
                   double out[BC_N_STATES])
{
    double innov[BC_N_SIGNALS];
    int i, m;
    for (m = 0; m < BC_N_SIGNALS; ++m) {
        double acc = y_dev[m];
        for (i = 0; i < BC_N_STATES; ++i) {
            acc -= bc_C[j][m][i] * X[i];
        }
        innov[m] = acc;
    }
    for (i = 0; i < BC_N_STATES; ++i) {
        double acc = X[i];
        for (m = 0; m < BC_N_SIGNALS; ++m) {
            acc += bc_M[j][i][m] * innov[m];
        }
        out[i] = acc;
    }
}

static void predict(const double X[BC_N_STATES], long j, const double du[BC_N_INPUTS], double out[BC_N_STATES])
{
    int i, l;
    for (i = 0; i < BC_N_STATES; ++i) {
        double acc = 0.0;
        for (l = 0; l < BC_N_STATES; ++l) {
            acc += bc_Ad[j][i][l] * X[l];
        }
        for (l = 0; l < BC_N_INPUTS; ++l) {
            acc += bc_Bd[j][i][l] * du[l];
        }
        out[i] = acc;
    }
}

void ballctl_init(ballctl_controller *c)
{
    long j;
    int i;
    c->k = 0;
    c->j_c = 0;
    for (i = 0; i < BC_N_STATES; ++i) {
        c->X_c[i] = 0.0;
    }
    for (j = 0; j < BC_N_SAMPLES; ++j) {
        for (i = 0; i < BC_N_SIGNALS; ++i) {
            c->y_dev[j][i] = 0.0;
        }
        for (i = 0; i < BC_N_INPUTS; ++i) {
            c->du[j][i] = 0.0;
        }
    }
}

int ballctl_measure(ballctl_controller *c, long j, const double y[BC_N_SIGNALS])
{
    int m;
    if (j < 0 || j >= BC_N_SAMPLES) {
        return -1;
    }
    for (m = 0; m < BC_N_SIGNALS; ++m) {
        c->y_dev[j][m] = bc_sampled[j][m] ? y[m] - bc_signal_ref[j][m] : 0.0;
    }
    return 0;
}

long ballctl_step(ballctl_controller *c, double u[BC_N_INPUTS])
{
    double X[BC_N_STATES], tmp[BC_N_STATES];
    long k = c->k, j;
    int i, l;
    if (k >= BC_N_SAMPLES) {
        return -1;
    }
    /* commit the steps whose samples have all arrived */
    while (c->j_c <= k - BC_LATENCY_STEPS && c->j_c < k) {
        update(c->X_c, c->j_c, c->y_dev[c->j_c], tmp);
        predict(tmp, c->j_c, c->du[c->j_c], c->X_c);
        c->j_c += 1;
    }
    if (BC_LATENCY_STEPS == 0) {
        update(c->X_c, k, c->y_dev[k], X);
    } else {
        for (i = 0; i < BC_N_STATES; ++i) {
            X[i] = c->X_c[i];
        }
        for (j = c->j_c; j < k; ++j) {   /* latency compensation: predict with the inputs already sent */
            predict(X, j, c->du[j], tmp);
            for (i = 0; i < BC_N_STATES; ++i) {
                X[i] = tmp[i];
            }
        }
    }
    for (i = 0; i < BC_N_INPUTS; ++i) {
        double acc = 0.0;
        for (l = 0; l < BC_N_STATES; ++l) {
            acc += bc_gains[k][i][l] * X[l];
        }
        u[i] = bc_u_ff[k][i] - acc;
        c->du[k][i] = u[i] - bc_u_ff[k][i];
    }
    c->k = k + 1;
    return k;
}
