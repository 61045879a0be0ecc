/* ballctl output-feedback tracking controller: measurement in, plate command out, forever.
 *
 * Shipped with ballctl (ballctl/schedule/templates); the generated headers
 * "ballctl_controller_config.h" (sizes, scalar type, rig shaping) and
 * "ballctl_controller_data.h" (the constant tables, included by the .c only)
 * come from ballctl.schedule.write_c_controller.
 *
 * C99, no dynamic memory, no libm (sine and cosine are its own polynomial). The caller owns
 * the controller's memory: one ballctl_controller, sizeof() fixed by the
 * latency and the state size, never by the run length.
 *
 * At control step k (time t0 + k dt; k counts up forever):
 *   1. ballctl_measure(c, j, y) for every sensor sample that has arrived
 *      (taken at step j, k - BC_LATENCY_STEPS <= j <= k). A step for which
 *      ballctl_measure is never called has no measurement: the filter makes
 *      no update from it (a dropped camera frame). A NaN or infinite entry,
 *      or one farther than its limit from the reference, is refused (status
 *      bits) and that signal counts as not received; the others are used.
 *      Signals not sampled at step j (the sensors' pattern) are ignored.
 *   2. ballctl_step(c, u) computes the command of step k into u: the Kalman
 *      filter is committed up to step k - BC_LATENCY_STEPS, the estimate is
 *      predicted to step k with the inputs that acted on the plate (latency
 *      compensation), u = u_ff(k) - K(k) x_hat, then the rig's shaping:
 *      quantum and tilt limit. The estimator is fed what the plate receives:
 *      the command after the slew limit and the actuation latency, averaged
 *      over the step (the same steps, in the same order, as
 *      ballctl/loop_step.py in ballctl.simulate_closed_loop).
 *   3. write u to the servos.
 */
#ifndef BALLCTL_CONTROLLER_H_
#define BALLCTL_CONTROLLER_H_

#include "ballctl_controller_config.h"

#define BC_API_VERSION 2

/* ballctl_measure: bits of a status >= 0 (the accepted signals are recorded) ... */
#define BC_OK 0
#define BC_REFUSED_NONFINITE 1  /* some entry was NaN or infinite: that signal is not received */
#define BC_REFUSED_RANGE 2      /* some entry was farther than its limit from the reference */
/* ... or an error < 0 (nothing recorded) */
#define BC_ERR_LATE (-1)        /* step j is already committed (older than BC_LATENCY_STEPS) */
#define BC_ERR_FUTURE (-2)      /* step j is after the current step */

/* ballctl_health: bits */
#define BC_HEALTH_INNOVATION 1  /* large innovation on BC_HEALTH_STEPS consecutive committed steps */
#define BC_HEALTH_STALE 2       /* no accepted sample in the last BC_HEALTH_STEPS committed steps */
#define BC_HEALTH_RESET 4       /* the estimate stopped being finite and was reset (sticky until init) */

typedef long long ballctl_index;  /* step numbers: at least 64 bits, counting up forever */

typedef struct {
    ballctl_index k;                                  /* step of the next command */
    ballctl_index j_c;                                /* step of the committed (prior) estimate */
    unsigned long long theta;                         /* phase of step k in 2^-64 turns */
    ballctl_real X_c[BC_N_STATES];                    /* committed prior estimate at step j_c */
    /* ring buffers: step j lives in slot (j mod BC_RING) */
    ballctl_real y_dev[BC_RING][BC_N_SIGNALS];        /* measurement minus reference */
    unsigned char got[BC_RING][BC_N_SIGNALS];         /* 1: that signal of that step was received */
    ballctl_real du[BC_RING][BC_N_INPUTS];            /* input deviation that acted over the step */
    ballctl_real Ad[BC_RING][BC_N_STATES][BC_N_STATES];
    ballctl_real Bd[BC_RING][BC_N_STATES][BC_N_INPUTS];
    ballctl_real basis[BC_RING][BC_N_BASIS];          /* 1, cos phi, sin phi, cos 2 phi, ... of the step */
    unsigned int cls[BC_RING];                        /* class (j mod BC_N_CLASSES) of the step */
#if BC_PERIODIC
    ballctl_real Cm[BC_N_CLASSES][BC_N_SIGNALS * BC_N_STATES];   /* C, M, K of the current use (constants stay) */
    ballctl_real Mg[BC_N_CLASSES][BC_N_STATES * BC_N_SIGNALS];
    ballctl_real G[BC_N_INPUTS * BC_N_STATES];
#endif
    unsigned int slot;                                /* slot of step k */
    /* the rig's actuator, as the estimator needs it */
    ballctl_real cmd[BC_DELAY_RING][BC_N_INPUTS];     /* the last shaped commands, step j in slot j mod BC_DELAY_RING */
    unsigned int dslot;                               /* slot of step k in cmd */
    ballctl_real u_applied[BC_N_INPUTS];              /* what the plate holds (after the slew limit) */
    /* health */
    unsigned int n_large;                             /* consecutive committed steps with a large innovation */
    unsigned int n_stale;                             /* consecutive committed steps without an accepted sample */
    unsigned int health;                              /* BC_HEALTH_* bits */
} ballctl_controller;

/* Start at step 0 with the estimate on the reference. */
void ballctl_init(ballctl_controller *c);

/* Record the sample taken at step j; returns BC_OK, refusal bits (>= 0) or BC_ERR_* (< 0). */
int ballctl_measure(ballctl_controller *c, ballctl_index j, const ballctl_real y[BC_N_SIGNALS]);

/* Command of the current step into u[BC_N_INPUTS] (rad); advances the step. Returns the step used (>= 0). */
ballctl_index ballctl_step(ballctl_controller *c, ballctl_real u[BC_N_INPUTS]);

/* The reference of the measured signals at step j >= 0 into y_ref; returns 0, or BC_ERR_FUTURE for j < 0. */
int ballctl_reference(const ballctl_controller *c, ballctl_index j, ballctl_real y_ref[BC_N_SIGNALS]);

/* BC_HEALTH_* bits of the current state (0: healthy). */
unsigned int ballctl_health(const ballctl_controller *c);

#endif /* BALLCTL_CONTROLLER_H_ */
