/* ballctl output-feedback tracking controller: measurement in, plate command out.
 *
 * Shipped with ballctl (ballctl/schedule/templates); the generated header
 * "ballctl_controller_data.h" (ballctl.schedule.write_c_controller) holds the
 * schedule: feedforward, LQR gains, Kalman gains and the discrete model.
 *
 * At control step k (time t0 + k dt):
 *   1. ballctl_measure(c, j, y) for every sensor sample that has arrived
 *      (taken at step j <= k; y holds all BC_N_SIGNALS signals in order,
 *      unsampled ones are ignored);
 *   2. ballctl_step(c, u) computes the plate command u[BC_N_INPUTS] of step k:
 *      the Kalman filter is committed up to step k - BC_LATENCY_STEPS, the
 *      estimate is predicted to step k with the inputs already sent
 *      (latency compensation), and u = u_ff[k] - K[k] X_hat.
 * The controller assumes the command acts as sent (no saturation in the loop).
 */
#ifndef BALLCTL_CONTROLLER_H_
#define BALLCTL_CONTROLLER_H_

#include "ballctl_controller_data.h"

typedef struct {
    long k;                                        /* current control step */
    long j_c;                                      /* step of the committed (prior) estimate */
    double X_c[BC_N_STATES];                       /* committed prior estimate at step j_c */
    double y_dev[BC_N_SAMPLES][BC_N_SIGNALS];      /* measurement minus reference, by sample step */
    double du[BC_N_SAMPLES][BC_N_INPUTS];          /* input deviation sent at each step */
} ballctl_controller;

/* Start at step 0 with the estimate on the reference. */
void ballctl_init(ballctl_controller *c);

/* Record the sample taken at step j (0 <= j < BC_N_SAMPLES); returns 0, or -1 if j is out of range. */
int ballctl_measure(ballctl_controller *c, long j, const double y[BC_N_SIGNALS]);

/* Command of the current step into u; advances the step. Returns the step used, or -1 after the horizon. */
long ballctl_step(ballctl_controller *c, double u[BC_N_INPUTS]);

#endif /* BALLCTL_CONTROLLER_H_ */
