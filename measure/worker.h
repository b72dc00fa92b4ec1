/* Measurement in a child process: the backend lives in a forked worker so that a crash, a
 * sticky CUDA fault or a hang kills only the worker, which the driver records and restarts. */
#ifndef XW_WORKER_H
#define XW_WORKER_H

#include <signal.h>
#include "measure/backend.h"

/* What a prepared worker reports: the problem's graph statistics and the device. */
typedef struct xw_info {
    hg_stats stats;
    char gpu_name[128];
    int sm;
    char driver[64], cuda[64], cupti[64];
} xw_info;

/* Makes the backend; called inside the worker process only, so that no device context is
 * ever created in the driver (CUDA contexts do not survive fork). */
typedef xb_backend *(*xw_backend_fn)(const char *spec, void *ctx, rg_err *err);

typedef struct xw_config {
    xw_backend_fn make_backend;
    const char *backend_spec;        /* passed to make_backend */
    void *backend_ctx;               /* passed to make_backend */
    /* Called in the worker before each measure with the variant's position in the space's
     * enumeration (the simulated backend injects failures by it). NULL: none. */
    void (*before_measure)(xb_backend *b, int index);
    double timeout_s;                /* per variant; <= 0: none */
    double prepare_timeout_s;        /* loading the dataset, and building the reference; <= 0: none */
    /* Nonzero (set by a signal handler): stop waiting, kill the worker, report XW_ABORTED. */
    volatile sig_atomic_t *abort_now;
    /* Each line the worker writes on stdout/stderr, as it comes (NULL: only kept, for evidence). */
    void (*on_output)(void *ctx, const char *line);
    void *ctx;
} xw_config;

typedef struct xw_worker xw_worker;

/* Forks a worker that makes the backend and prepares the problem. NULL with the backend's
 * error (e.g. "no CUDA device: ...") or why the worker died. The config and the problem
 * (including the strings it points to) must outlive the worker: restarts reuse them. */
xw_worker *xw_start(const xw_config *c, const xb_problem *p, xw_info *info, rg_err *err);

enum { XW_DONE = 0, XW_ABORTED = 1 };
/* Measures one variant in the worker. XW_DONE: *r holds the outcome, failures included:
 * a worker that dies gives RS_RUNTIME_FAULT (signal or exit status and its last output
 * lines as evidence), one that exceeds the timeout is killed and gives RS_TIMEOUT; either
 * way the worker is restarted (re-preparing the problem) before the next variant.
 * XW_ABORTED: *abort_now was set; the worker is killed and nothing is measured.
 * -1: the backend reported itself broken, or a restart failed (err says why). */
int xw_measure(xw_worker *w, int index, const cg_config *cfg, const xb_options *opt, xb_result *r, rg_err *err);
/* How many times the worker was restarted after a fault or a timeout. */
int xw_restarts(const xw_worker *w);
/* Asks the worker to close its backend and exit (kills it if it does not), then frees. */
void xw_stop(xw_worker *w);

#endif
