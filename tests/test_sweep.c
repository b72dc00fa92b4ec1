/* Tests of the sweep driver through the simulated backend (no GPU): constraints, every failure
 * class, worker restarts and timeouts, resume after a budget or a kill, SIGINT, plans and shards. */
#include "tests/testutil.h"
#include "explorer/plan.h"
#include "explorer/calib.h"
#include "explorer/sweep.h"
#include "cli/rscli.h"
#include "cli/sweepcli.h"
#include "explorer/costmodel.h"
#include "runtime/rt.h"
#include "results/report.h"
#include "cli/cmcli.h"
#include "cli/rpcli.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <time.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 48 points: w=reg with tile=64 does not fit in registers (3 compact x 2 reorder x 2 coarsen
 * = 12 invalid); 36 valid. */
static const char SPACE[] = "compact: off bsearch direct\n"
                            "reorder: off on\n"
                            "tile: 16 64\n"
                            "coarsen: 1 4\n"
                            "w: shmem reg\n";
enum { POINTS = 48, VALID = 36, INVALID = 12 };

static const char *DATASET = "synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4";

typedef struct fixture {
    char *dir, *db, *best, *space;
} fixture;

static fixture *fx_new(void)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir();
    f->db = rg_xasprintf("%s/results.db", f->dir);
    f->best = rg_xasprintf("%s/best", f->dir);
    f->space = tu_write_file(f->dir, "space.txt", SPACE);
    return f;
}

static void fx_free(fixture *f)
{
    char *cmd = rg_xasprintf("rm -rf '%s'", f->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", f->dir);
    free(cmd);
    free(f->dir), free(f->db), free(f->best), free(f->space);
    free(f);
}

static int setup(void **state)
{
    *state = fx_new();
    return 0;
}

static int teardown(void **state)
{
    fx_free(*state);
    return 0;
}

static void options(xs_options *o, const fixture *f, const char *backend)
{
    xs_options_default(o);
    o->db = f->db;
    o->best_dir = f->best;
    o->space = f->space;
    o->backend = backend;
    o->commit = "test";
    o->progress = XS_PROGRESS_OFF;
    o->quiet = 1;
    o->timeout_s = 10;
    o->measure.repeats = 3;
}

static void problem(xb_problem *p, const char *model, const char *task)
{
    memset(p, 0, sizeof *p);
    snprintf(p->model, sizeof p->model, "%s", model);
    snprintf(p->dataset, sizeof p->dataset, "%s", DATASET);
    snprintf(p->task, sizeof p->task, "%s", task);
    p->dim_in = p->dim_out = 64;
    p->heads = 1;
}

static void sweep_ok(const xs_options *o, const xb_problem *p, xs_summary *sum)
{
    rg_err err;
    if (xs_sweep(o, p, sum, &err)) fail_msg("sweep failed: %s", err.msg);
}

/* ---- Reading the database directly ---- */

/* -1 when the query cannot run (a database another process is still creating); tu_sql_int
 * is the form that fails the test instead. */
static int64_t q_int_or_minus1(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 10000);
    int64_t v = -1;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}

static char *q_text(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    char *v = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        v = rg_xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* Rows of the variant at `index` of the test space, of this problem. */
static char *status_of(const fixture *f, const xb_problem *p, int index, char **evidence)
{
    sp_space s;
    sp_point *pts;
    int n;
    rg_err err;
    assert_int_equal(sp_load(f->space, &s, &err), 0);
    assert_int_equal(sp_enumerate(&s, &pts, &n, &err), 0);
    char hex[17];
    cg_config c;
    sp_config_at(&s, index, &c);
    rs_hash_hex(xs_variant_hash(&c, p), hex);
    free(pts);
    char *sql = rg_xasprintf("SELECT m.status FROM measurements m JOIN variants v ON v.id = m.variant_id"
                             " WHERE v.hash = '%s' ORDER BY m.id DESC", hex);
    char *st = q_text(f->db, sql);
    free(sql);
    if (evidence) {
        sql = rg_xasprintf("SELECT m.evidence FROM measurements m JOIN variants v ON v.id = m.variant_id"
                           " WHERE v.hash = '%s' ORDER BY m.id DESC", hex);
        *evidence = q_text(f->db, sql);
        free(sql);
    }
    return st;
}

/* The index of the k-th valid point of the test space. */
static int valid_index(const fixture *f, int k)
{
    sp_space s;
    sp_point *pts;
    int n, seen = 0, found = -1;
    rg_err err;
    assert_int_equal(sp_load(f->space, &s, &err), 0);
    assert_int_equal(sp_enumerate(&s, &pts, &n, &err), 0);
    for (int i = 0; i < n && found < 0; i++)
        if (pts[i].valid && seen++ == k) found = i;
    free(pts);
    assert_true(found >= 0);
    return found;
}

/* Every variant of the problem in the store exactly once. */
static void assert_each_variant_once(const char *db, int expected_variants)
{
    assert_int_equal(tu_sql_int(db, "SELECT count(*) FROM measurements"), expected_variants);
    assert_int_equal(tu_sql_int(db, "SELECT count(DISTINCT variant_id) FROM measurements"), expected_variants);
}

/* ---- Tests ---- */

static void test_constraints_through_a_sweep(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.points, POINTS);
    assert_int_equal(sum.valid, VALID);
    assert_int_equal(sum.invalid, INVALID);
    assert_int_equal(sum.measured, VALID);          /* invalid points never reach the backend */
    assert_int_equal(sum.recorded, POINTS);
    assert_int_equal(sum.count[RS_OK], VALID);
    assert_int_equal(sum.count[RS_INVALID], INVALID);
    assert_int_equal(sum.restarts, 0);
    assert_each_variant_once(f->db, POINTS);
    /* invalid rows say why and carry no time */
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status = 'invalid'"
                                  " AND evidence LIKE '%registers%'"), 12);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status = 'invalid' AND median_ms IS NOT NULL"), 0);
    /* ok rows have kernel times and the forward/backward split */
    assert_int_equal(tu_sql_int(f->db, "SELECT count(DISTINCT measurement_id) FROM kernel_times"), VALID);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM metrics WHERE name = 'fwd_ms'"), VALID);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'finished' AND git_commit = 'test'"
                                  " AND gpu_name = 'Simulated GPU' AND sm = 90"), 1);
    /* the layout choices matter in the simulation: compaction beats none on this graph */
    assert_true(isfinite(sum.best_ms));
    assert_null(strstr(sum.best_config, "compact=off"));
}

static void test_every_failure_class_is_recorded(void **state)
{
    fixture *f = *state;
    const char *classes[] = {"invalid", "compile", "launch", "fault", "wrong", "hang", "oom", "abort"};
    const char *status[] = {"invalid", "compile_error", "launch_error", "runtime_fault", "wrong_answer", "timeout",
                            "oom", "runtime_fault"};
    const char *evidence[] = {"rejects", "identifier \"tile_w\" is undefined", "cudaErrorLaunchOutOfResources",
                              "signal 11", "3.7e-01", "no result after", "out of memory", "signal 6"};
    int idx[8];
    rg_str spec = {0};
    rg_str_puts(&spec, "sim:fail=");
    for (int k = 0; k < 8; k++) {
        idx[k] = valid_index(f, 2 * k + 1);   /* every other valid point, never the last */
        rg_str_printf(&spec, "%s%s@%d", k ? "," : "", classes[k], idx[k]);
    }
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, spec.s);
    o.timeout_s = 1;
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.recorded, POINTS);        /* the sweep went through to the end */
    assert_int_equal(sum.count[RS_OK], VALID - 8);
    assert_int_equal(sum.count[RS_RUNTIME_FAULT], 2);
    assert_int_equal(sum.count[RS_TIMEOUT], 1);
    assert_int_equal(sum.restarts, 3);             /* fault, hang, abort */
    for (int k = 0; k < 8; k++) {
        char *ev = NULL, *st = status_of(f, &p, idx[k], &ev);
        assert_non_null(st);
        if (strcmp(st, status[k])) fail_msg("variant %d (%s): status %s, want %s", idx[k], classes[k], st, status[k]);
        if (!ev || !strstr(ev, evidence[k])) fail_msg("variant %d (%s): evidence '%s' lacks '%s'", idx[k], classes[k], ev, evidence[k]);
        free(st);
        free(ev);
    }
    /* the crash's own last words are part of its evidence */
    char *ev = NULL, *st = status_of(f, &p, idx[3], &ev);
    assert_non_null(strstr(ev, "illegal memory access"));
    free(st), free(ev);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status = 'wrong_answer' AND validation_error > 0.3"), 1);
    rg_str_free(&spec);
}

static void test_crashes_restart_the_worker(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    /* every tile=16, coarsen=4, reorder=on variant crashes its worker: 3 compact x 2 w = 6 */
    options(&o, f, "sim:fail=fault@tile=16+coarsen=4+reorder=on");
    problem(&p, "hgt", "train");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.count[RS_RUNTIME_FAULT], 6);
    assert_int_equal(sum.restarts, 6);
    assert_int_equal(sum.count[RS_OK], VALID - 6);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status = 'runtime_fault'"
                                  " AND evidence LIKE '%killed by signal 11%'"), 6);
}

static void test_hang_is_killed_as_timeout(void **state)
{
    fixture *f = *state;
    int hang = valid_index(f, 0);
    char spec[64];
    snprintf(spec, sizeof spec, "sim:fail=hang@%d", hang);
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, spec);
    o.timeout_s = 0.5;
    o.budget = 3;
    problem(&p, "rgcn", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, 3);
    assert_int_equal(sum.count[RS_TIMEOUT], 1);
    assert_int_equal(sum.count[RS_OK], 2);
    assert_int_equal(sum.restarts, 1);
    char *ev = NULL, *st = status_of(f, &p, hang, &ev);
    assert_string_equal(st, "timeout");
    assert_non_null(strstr(ev, "0.5 s"));
    assert_non_null(strstr(ev, "never finishes"));
    free(st), free(ev);
}

static void test_backend_failures_stop_the_problem(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    rg_err err;
    problem(&p, "rgat", "infer");
    options(&o, f, "sim:fail=prepare");
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    assert_non_null(strstr(err.msg, "cannot prepare"));
    assert_false(rg_file_exists(f->db));   /* no device: no run, and no store left behind */

    options(&o, f, "sim:fail=broken@2");
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    assert_non_null(strstr(err.msg, "broken"));
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'failed'"), 1);

    problem(&p, "nosuchmodel", "infer");
    options(&o, f, "sim");
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    assert_non_null(strstr(err.msg, "unknown model 'nosuchmodel'"));

    /* the GPU backend on a machine without one: the usual one-line message, no new store */
    if (!krt_have_device()) {
        problem(&p, "rgat", "infer");
        options(&o, f, NULL);
        o.gpu_backend = xb_gpu_backend;
        char *fresh = rg_xasprintf("%s/fresh.db", f->dir);
        o.db = fresh;
        assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
        assert_memory_equal(err.msg, "no CUDA device: ", 16);
        assert_null(strchr(err.msg, '\n'));
        assert_false(rg_file_exists(fresh));
        free(fresh);
    }
    options(&o, f, NULL);
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    assert_non_null(strstr(err.msg, "without the GPU backend"));
}

/* The reference is built only once a variant is to be measured: a resumed sweep of a
 * problem the store already has complete never builds it (on the largest graphs that was
 * minutes per problem), and a failing reference still stops the problem with its reason. */
static void test_reference_built_only_when_needed(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    rg_err err;
    problem(&p, "rgat", "infer");
    options(&o, f, "sim:fail=reference");
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    assert_non_null(strstr(err.msg, "cannot build the reference"));
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status <> 'invalid'"), 0);

    options(&o, f, "sim");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.count[RS_OK], VALID);
    options(&o, f, "sim:fail=reference");
    sweep_ok(&o, &p, &sum);   /* nothing left to measure: the failing reference is never built */
    assert_int_equal(sum.measured, 0);
    assert_int_equal(sum.skipped, POINTS);
    o.budget = 0;
    o.no_resume = 1;
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    assert_non_null(strstr(err.msg, "cannot build the reference"));
}

static void test_resume_after_budget(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    o.budget = 10;
    problem(&p, "rgat", "train");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, 10);
    assert_int_equal(sum.recorded, 10);             /* under --budget the invalid points are not recorded */
    o.budget = 0;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.skipped, 10);
    assert_int_equal(sum.recorded, VALID - 10 + INVALID);   /* the whole space: they are now */
    assert_int_equal(sum.measured, VALID - 10);
    assert_each_variant_once(f->db, POINTS);
    sweep_ok(&o, &p, &sum);                         /* complete: nothing left */
    assert_int_equal(sum.measured, 0);
    assert_int_equal(sum.skipped, POINTS);
    assert_true(isfinite(sum.best_ms));             /* the report covers earlier runs */
    o.commit = "other";                            /* another commit is other work */
    o.budget = 4;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, 4);
    o.commit = "test";
    o.no_resume = 1;                               /* forced: everything again */
    o.budget = 0;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, VALID);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs"), 5);
}

/* Measures from the end of the enumeration: a cost model would rank instead. */
static void reverse_order(void *ctx, const xb_problem *p, const hg_stats *stats, const sp_space *space, int *idx, int n)
{
    (void)p, (void)space;
    assert_true(stats->edges > 0);
    (*(int *)ctx)++;
    for (int i = 0; i < n / 2; i++) {
        int t = idx[i];
        idx[i] = idx[n - 1 - i];
        idx[n - 1 - i] = t;
    }
}

static void test_order_callback_and_budget(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    int calls = 0;
    options(&o, f, "sim");
    o.order = reverse_order;
    o.order_ctx = &calls;
    o.budget = 2;
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(calls, 1);
    assert_int_equal(sum.measured, 2);
    char *st = status_of(f, &p, valid_index(f, VALID - 1), NULL);
    assert_string_equal(st, "ok");
    free(st);
    st = status_of(f, &p, valid_index(f, VALID - 2), NULL);
    assert_string_equal(st, "ok");
    free(st);
    assert_null(status_of(f, &p, valid_index(f, 0), NULL));
}

/* Runs a sweep in a child process (its own process group, like a shell job). */
static pid_t fork_sweep(const xs_options *o, const xb_problem *p)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        xs_summary sum;
        rg_err err;
        int rc = xs_sweep(o, p, &sum, &err);
        _exit(rc ? 1 : sum.interrupted ? 130 : 0);
    }
    setpgid(pid, pid);
    return pid;
}

static int64_t wait_rows(const char *db, int64_t at_least, double limit_s)
{
    int64_t n = 0;
    for (double end = rg_now() + limit_s; rg_now() < end; usleep(5000)) {
        if (!rg_file_exists(db)) continue;
        n = q_int_or_minus1(db, "SELECT count(*) FROM measurements");
        if (n >= at_least) break;
    }
    return n;
}

static void test_killed_sweep_resumes_losing_nothing(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim:slow=20");
    problem(&p, "rgat", "infer");
    pid_t pid = fork_sweep(&o, &p);
    int64_t seen = wait_rows(f->db, INVALID + 8, 10);
    kill(-pid, SIGKILL);   /* the sweep and its worker, mid-variant */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    int64_t kept = tu_sql_int(f->db, "SELECT count(*) FROM measurements");
    assert_true(kept >= seen && kept < POINTS);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    /* rows are whole: every ok row has its kernel times */
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements m WHERE status = 'ok' AND"
                                  " (SELECT count(*) FROM kernel_times k WHERE k.measurement_id = m.id) = 0"), 0);
    options(&o, f, "sim");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.skipped, kept);
    assert_int_equal(sum.measured, POINTS - kept);
    assert_each_variant_once(f->db, POINTS);
}

static void test_sigint_finishes_and_marks_interrupted(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim:slow=40");
    problem(&p, "rgat", "infer");
    pid_t pid = fork_sweep(&o, &p);
    wait_rows(f->db, INVALID + 3, 10);
    kill(-pid, SIGINT);    /* Ctrl-C reaches the worker too: it must survive it */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 130);
    int64_t kept = tu_sql_int(f->db, "SELECT count(*) FROM measurements");
    assert_true(kept < POINTS);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status <> 'ok' AND status <> 'invalid'"), 0);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'interrupted' AND finished_at IS NOT NULL"), 1);
    options(&o, f, "sim");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, POINTS - kept);
    assert_each_variant_once(f->db, POINTS);
}

static void test_best_config_json(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim:device=NVIDIA H100 80GB HBM3");
    problem(&p, "hgt", "train");
    p.dim_in = p.dim_out = 32;
    sweep_ok(&o, &p, &sum);
    char *want = rg_xasprintf("%s/NVIDIA_H100_80GB_HBM3/hgt-synth_nodes_3000_edges_20000_ntypes_3_etypes_4_ratio_0.4-"
                              "train-32x32.json", f->best);
    assert_string_equal(sum.best_path, want);
    free(want);
    FILE *fp = fopen(sum.best_path, "r");
    assert_non_null(fp);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = 0;
    /* valid JSON (SQLite's parser), with the config the store says is fastest */
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(":memory:", &h), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT json_valid(?1), json_extract(?1, '$.config_string'),"
                                           " json_extract(?1, '$.median_ms'), json_extract(?1, '$.config.tile'),"
                                           " json_extract(?1, '$.dim_in'), json_extract(?1, '$.gpu')", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 1);
    assert_string_equal((const char *)sqlite3_column_text(st, 1), sum.best_config);
    assert_float_equal(sqlite3_column_double(st, 2), sum.best_ms, 1e-12);
    assert_true(sqlite3_column_int(st, 3) == 16 || sqlite3_column_int(st, 3) == 64);
    assert_int_equal(sqlite3_column_int(st, 4), 32);
    assert_string_equal((const char *)sqlite3_column_text(st, 5), "NVIDIA H100 80GB HBM3");
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* nothing faster in the store */
    char *sql = rg_xasprintf("SELECT count(*) FROM measurements WHERE status = 'ok' AND median_ms < %.17g", sum.best_ms);
    assert_int_equal(tu_sql_int(f->db, sql), 0);
    free(sql);
    char *tmp = rg_xasprintf("%s.tmp.%ld", sum.best_path, (long)getpid());
    assert_false(rg_file_exists(tmp));   /* written through a temporary file, renamed */
    free(tmp);
}

static void test_compare_finds_a_regression(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary base, head, same;
    problem(&p, "rgat", "infer");
    options(&o, f, "sim");
    o.commit = "c1";
    sweep_ok(&o, &p, &base);
    options(&o, f, "sim:scale=1.2");   /* every kernel 20% slower */
    o.commit = "c2";
    sweep_ok(&o, &p, &head);
    options(&o, f, "sim:scale=1.03");
    o.commit = "c3";
    sweep_ok(&o, &p, &same);
    rg_err err;
    rs_store *s = rs_open_existing(f->db, &err);
    assert_non_null(s);
    rs_comparison c;
    assert_int_equal(rs_compare(s, base.run_id, head.run_id, 0.05, &c, &err), 0);
    assert_int_equal(c.count[RS_CMP_REGRESSION], 1);
    assert_float_equal(c.rows[0].ratio, 1.2, 1e-9);
    rs_comparison_free(&c);
    assert_int_equal(rs_compare(s, base.run_id, same.run_id, 0.05, &c, &err), 0);
    assert_int_equal(c.count[RS_CMP_REGRESSION], 0);
    assert_int_equal(c.count[RS_CMP_SAME], 1);
    rs_comparison_free(&c);
    rs_close(s);
}

/* ---- Plans and shards ---- */

static const char PLAN[] = "# nightly\n"
                           "models: rgat hgt\n"
                           "datasets: synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4\n"
                           "          \n"
                           "dataset2: x\n";

static void test_plan_parsing(void **state)
{
    fixture *f = *state;
    xp_plan *plan = malloc(sizeof *plan);
    rg_err err;
    char *bad = tu_write_file(f->dir, "bad.plan", PLAN);
    assert_int_equal(xp_load(bad, plan, &err), -1);
    assert_non_null(strstr(err.msg, "bad.plan:5: unknown key 'dataset2'"));
    char *bad2 = tu_write_file(f->dir, "bad2.plan", "models: rgat\ndatasets: aifb\ntasks: infer fly\n");
    assert_int_equal(xp_load(bad2, plan, &err), -1);
    assert_non_null(strstr(err.msg, "bad2.plan:3: unknown task 'fly' (expected infer or train)"));
    char *good = tu_write_file(f->dir, "good.plan", "model: rgat, hgt\ndatasets: aifb mutag\ntasks: infer train\n"
                                                    "dims: 32 64,64 128x64\n");
    assert_int_equal(xp_load(good, plan, &err), 0);
    assert_int_equal(xp_count(plan), 2 * 2 * 2 * 3);
    xb_problem p;
    xp_job(plan, xp_count(plan) - 1, &p);
    assert_string_equal(p.model, "hgt");
    assert_string_equal(p.dataset, "mutag");
    assert_string_equal(p.task, "train");
    assert_int_equal(p.dim_in, 128);
    assert_int_equal(p.dim_out, 64);
    assert_int_equal(p.heads, 1);
    xp_job(plan, 1, &p);
    assert_int_equal(p.dim_in, 64);
    int i, n;
    assert_int_equal(xp_parse_shard("2/3", &i, &n, &err), 0);
    assert_int_equal(i * 10 + n, 23);
    assert_int_equal(xp_parse_shard("3/3", &i, &n, &err), -1);
    assert_int_equal(xp_parse_shard("1-3", &i, &n, &err), -1);
    setenv("SLURM_ARRAY_TASK_ID", "5", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "4", 1);
    assert_int_equal(xp_env_shard(&i, &n, &err), 1);
    assert_int_equal(i, 1);
    assert_int_equal(n, 4);
    setenv("SLURM_ARRAY_TASK_ID", "9", 1);
    assert_int_equal(xp_env_shard(&i, &n, &err), -1);
    unsetenv("SLURM_ARRAY_TASK_ID");
    unsetenv("SLURM_ARRAY_TASK_COUNT");
    unsetenv("SLURM_ARRAY_TASK_MIN");
    assert_int_equal(xp_env_shard(&i, &n, &err), 0);
    free(bad), free(bad2), free(good), free(plan);
}

/* Heads that do not divide a dims, and heads above 1 for a model without heads (RGCN), leave
 * those jobs out and are named; every other combination is a job exactly once. */
static void test_plan_skips_heads_and_says_so(void **state)
{
    fixture *f = *state;
    xp_plan *plan = malloc(sizeof *plan);
    rg_err err;
    char *path = tu_write_file(f->dir, "sizes.plan", "models: rgcn rgat\ndatasets: aifb\ndims: 16 20 64\n"
                                                     "heads: 1 4 8\nbudget: 12\n");
    assert_int_equal(xp_load(path, plan, &err), 0);
    assert_int_equal(plan->budget, 12);
    /* rgcn: heads 1 at 3 dims; rgat: heads 1 at 3 dims, 4 at 3 (20 / 4 = 5), 8 at 2 (not 20) */
    assert_int_equal(xp_count(plan), 3 + 3 + 3 + 2);
    int seen[2][3][3] = {{{0}}};
    static const int dims[] = {16, 20, 64}, heads[] = {1, 4, 8};
    for (int k = 0; k < xp_count(plan); k++) {
        xb_problem p;
        xp_job(plan, k, &p);
        int m = !strcmp(p.model, "rgat"), d = 0, h = 0;
        while (dims[d] != p.dim_out) d++;
        while (heads[h] != p.heads) h++;
        assert_int_equal(p.dim_out % p.heads, 0);
        assert_true(m || p.heads == 1);
        seen[m][d][h]++;
    }
    for (int d = 0; d < 3; d++)
        for (int h = 0; h < 3; h++) {
            assert_int_equal(seen[0][d][h], h == 0);
            assert_int_equal(seen[1][d][h], dims[d] % heads[h] == 0);
        }
    char *out = tu_tmpdir(), *log = rg_xasprintf("%s/skipped.txt", out);
    FILE *fp = fopen(log, "w");
    xp_print_skipped(plan, fp);
    fclose(fp);
    char *text = tu_read_file(log, NULL);
    assert_non_null(strstr(text, "heads 8 does not divide dims 20,20: 2 jobs skipped"));
    assert_non_null(strstr(text, "rgcn has no heads: heads 4 would repeat heads 1: 3 jobs skipped"));
    assert_non_null(strstr(text, "rgcn has no heads: heads 8 would repeat heads 1: 2 jobs skipped"));
    assert_null(strstr(text, "rgat has no heads"));
    char *none = tu_write_file(f->dir, "none.plan", "models: rgat\ndatasets: aifb\ndims: 20\nheads: 8\n");
    assert_int_equal(xp_load(none, plan, &err), -1);
    assert_non_null(strstr(err.msg, "every job is skipped"));
    char *twice = tu_write_file(f->dir, "twice.plan", "models: rgat\ndatasets: aifb\nbudget: 3 4\n");
    assert_int_equal(xp_load(twice, plan, &err), -1);
    assert_non_null(strstr(err.msg, "twice.plan:3: budget must be one positive number"));
    free(text), free(log), tu_rm_tree(out), free(none), free(twice), free(path), free(plan);
}

/* The committed nightly plan sweeps dims 16-256 and heads 1, 4, 8 for the models with heads,
 * and heads 1 alone for RGCN, on the four shared graphs, both tasks, under a budget. */
static void test_nightly_plan_covers_every_size(void **state)
{
    (void)state;
    xp_plan *plan = malloc(sizeof *plan);
    rg_err err;
    if (xp_load("plans/nightly.txt", plan, &err)) fail_msg("%s", err.msg);
    assert_true(plan->budget > 0);
    static const int dims[] = {16, 32, 64, 128, 256}, heads[] = {1, 4, 8};
    static const char *const models[] = {"rgcn", "rgat", "hgt"};
    int seen[3][5][3] = {{{0}}};
    for (int k = 0; k < xp_count(plan); k++) {
        xb_problem p;
        xp_job(plan, k, &p);
        int m = 0, d = 0, h = 0;
        while (m < 3 && strcmp(models[m], p.model)) m++;
        while (d < 5 && dims[d] != p.dim_out) d++;
        while (h < 3 && heads[h] != p.heads) h++;
        assert_true(m < 3 && d < 5 && h < 3 && p.dim_in == p.dim_out);
        seen[m][d][h]++;
    }
    for (int m = 0; m < 3; m++)
        for (int d = 0; d < 5; d++)
            for (int h = 0; h < 3; h++) assert_int_equal(seen[m][d][h], m == 0 && h > 0 ? 0 : 4 * 2);
    free(plan);
}

/* Runs a CLI entry point with its output thrown away. */
static int quietly(int (*fn)(int, char **, xs_gpu_backend_fn), int argc, char **argv)
{
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), errfd = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    int rc = fn(argc, argv, NULL);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(errfd, 2);
    close(out), close(errfd), close(null);
    return rc;
}

static int merge_quietly(int argc, char **argv)
{
    fflush(stdout);
    int out = dup(1), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    int rc = rs_cli_merge(argc, argv);
    fflush(stdout);
    dup2(out, 1);
    close(out), close(null);
    return rc;
}

static void test_three_shards_cover_the_plan_once(void **state)
{
    fixture *f = *state;
    char *plan = tu_write_file(f->dir, "nightly.plan",
                               "models: rgat hgt rgcn\n"
                               "datasets: synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4"
                               " synth:nodes=2000,edges=8000,ntypes=2,etypes=3,ratio=0.7\n"
                               "tasks: infer train\n"
                               "dims: 32 64\n");   /* 24 jobs */
    enum { JOBS = 24 };
    char *dbs[3];
    for (int s = 0; s < 3; s++) {
        dbs[s] = rg_xasprintf("%s/shard%d.db", f->dir, s);
        char shard[16];
        snprintf(shard, sizeof shard, "%d/3", s);
        char *argv[] = {"sweep", "--plan", plan, "--shard", shard, "--db", dbs[s], "--space", f->space,
                        "--backend", "sim", "--best-dir", f->best, "--commit", "nightly", "--repeats", "2", NULL};
        assert_int_equal(quietly(sc_plan_main, 17, argv), 0);
        /* round-robin: 8 jobs each, every job complete */
        assert_int_equal(tu_sql_int(dbs[s], "SELECT count(*) FROM measurements"), (JOBS / 3) * POINTS);
        assert_int_equal(tu_sql_int(dbs[s], "SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
    }
    char *merged = rg_xasprintf("%s/merged.db", f->dir);
    char *argv[] = {"merge", "--into", merged, dbs[0], dbs[1], dbs[2], NULL};
    assert_int_equal(merge_quietly(6, argv), 0);
    assert_int_equal(merge_quietly(6, argv), 0);   /* twice: nothing added */
    assert_int_equal(tu_sql_int(merged, "SELECT count(*) FROM measurements"), JOBS * POINTS);
    assert_int_equal(tu_sql_int(merged, "SELECT count(*) FROM runs"), 3);
    /* each (model, dataset, task, dims) exactly once over all shards */
    assert_int_equal(tu_sql_int(merged, "SELECT count(*) FROM (SELECT v.model, d.name, v.task, v.dim_in,"
                                   " count(*) AS n, count(DISTINCT m.run_id) AS r FROM measurements m"
                                   " JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
                                   " GROUP BY 1, 2, 3, 4 HAVING n = 48 AND r = 1)"), JOBS);
    rg_err err;
    rs_store *s = rs_open_existing(merged, &err);
    rs_best *best;
    size_t nbest;
    assert_int_equal(rs_query_best(s, NULL, &best, &nbest, &err), 0);
    assert_int_equal(nbest, JOBS);
    for (size_t k = 0; k < nbest; k++) assert_true(isfinite(best[k].best_ms));
    rs_best_free(best, nbest);
    rs_close(s);
    for (int k = 0; k < 3; k++) free(dbs[k]);
    free(merged);
    free(plan);
}

static void test_cli(void **state)
{
    fixture *f = *state;
    sc_cli c;
    char *ok[] = {"explore", "--model", "hgt", "--dataset=mutag", "--task", "training", "--dims", "32,128",
                  "--heads", "4", "--budget", "7", "--mem-limit", "24GB", "--timeout", "2.5", "--metrics",
                  "--no-resume", "--backend", "sim:fail=oom@3,hang@4,seed=2", NULL};
    assert_int_equal(sc_parse_cli("explore", 20, ok, 0, &c), 0);
    assert_string_equal(c.problem.model, "hgt");
    assert_string_equal(c.problem.dataset, "mutag");
    assert_string_equal(c.problem.task, "train");
    assert_int_equal(c.problem.dim_in, 32);
    assert_int_equal(c.problem.dim_out, 128);
    assert_int_equal(c.problem.heads, 4);
    assert_int_equal(c.problem.mem_limit, 24000000000ULL);
    assert_int_equal(c.opt.budget, 7);
    assert_float_equal(c.opt.timeout_s, 2.5, 0);
    assert_int_equal(c.opt.measure.metrics, 1);
    assert_int_equal(c.opt.no_resume, 1);
    assert_null(c.opt.strategy);
    char *search[] = {"explore", "--model", "rgat", "--strategy", "anneal", "--seed", "9", "--time-limit", "30", NULL};
    assert_int_equal(sc_parse_cli("explore", 9, search, 0, &c), 0);
    assert_string_equal(c.opt.strategy, "anneal");
    assert_int_equal(c.opt.seed, 9);
    assert_float_equal(c.opt.time_limit_s, 30, 0);
    char *bad[][3] = {
        {"explore", "--modle", "x"}, {"explore", "--task", "fly"}, {"explore", "--dims", "0,3"},
        {"explore", "--shard", "0/2"}, {"explore", "--backend", "cuda"}, {"explore", "--backend", "sim:fail=explode@3"},
        {"explore", "--budget", "-1"}, {"explore", "--mem-limit", "lots"}, {"explore", "--backend", "sim:fail=oom@tile=7"},
        {"explore", "--slow-factor", "0.5"}, {"explore", "--strategy", "exhaustive"}, {"explore", "--time-limit", "0"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fflush(stderr);
        int saved = dup(2), null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        int rc = sc_parse_cli("explore", 3, bad[k], 0, &c);
        dup2(saved, 2);
        close(saved), close(null);
        if (rc != 2) fail_msg("'%s %s' was accepted", bad[k][1], bad[k][2]);
    }
    char *plan_only[] = {"sweep", "--model", "rgat"};
    assert_int_equal(quietly(sc_plan_main, 3, plan_only), 2);
    char *no_model[] = {"explore", "--db", f->db};
    assert_int_equal(quietly(sc_sweep_main, 3, no_model), 2);
    /* the whole command: a sweep through the CLI, then resumed */
    char *run[] = {"explore", "--model", "rgat", "--dataset", (char *)DATASET, "--space", f->space, "--db", f->db,
                   "--best-dir", f->best, "--backend", "sim", "--commit", "cli", "--budget", "5", NULL};
    assert_int_equal(quietly(sc_sweep_main, 17, run), 0);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements"), 5);   /* --budget: no invalid row */
    char *cmd = q_text(f->db, "SELECT command_line FROM runs");
    assert_non_null(strstr(cmd, "explore --model rgat"));
    free(cmd);
}

/* Variants far slower than the best so far are timed once (their validation run served as
 * the warm-up), never a variant near the best; --slow-factor 0 times every one fully. */
static void test_slow_variants_are_timed_once(void **state)
{
    fixture *f = *state;
    xs_options o;
    options(&o, f, "sim");
    o.slow_factor = 1.1;
    xb_problem p;
    problem(&p, "rgat", "infer");
    xs_summary sum;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.count[RS_OK], VALID);
    int64_t once = tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status = 'ok' AND repeats = 1");
    int64_t fully = tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status = 'ok' AND repeats = 3");
    assert_true(once > 0);
    assert_true(fully > 0);
    assert_int_equal(once + fully, VALID);
    /* 1.1 x the best so far is at least 1.1 x the best of all (less the 1% timing noise) */
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE repeats = 1 AND median_ms <= 1.1 * 0.99 *"
                                  " (SELECT min(median_ms) FROM measurements WHERE status = 'ok')"),
                     0);
    o.slow_factor = 0;
    o.no_resume = 1;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE status = 'ok' AND repeats = 3"
                                  " AND run_id = (SELECT max(id) FROM runs)"),
                     VALID);
}

/* A model fitted on two graphs orders the sweep of a third: under --budget 5 the five
 * variants measured include that graph's best one (found by a sweep without budget). */
static void test_cost_model_orders_the_budget(void **state)
{
    fixture *f = *state;
    static const char *train_sets[] = {"synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4",
                                       "synth:nodes=4000,edges=20000,ntypes=2,etypes=4,ratio=0.35"};
    static const char *held_out = "synth:nodes=3500,edges=24000,ntypes=3,etypes=5,ratio=0.3";
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    for (int i = 0; i < 2; i++) {
        problem(&p, "rgat", "infer");
        snprintf(p.dataset, sizeof p.dataset, "%s", train_sets[i]);
        sweep_ok(&o, &p, &sum);
    }
    rg_err err;
    cm_set set;
    cm_filter filt = {.model = "rgat", .task = "infer"};
    assert_int_equal(cm_set_load(f->db, &filt, &set, &err), 0);
    cm_fit_options fo;
    cm_fit_options_default(&fo);
    fo.lambda = 0.1;
    cm_model model;
    assert_int_equal(cm_fit(&set, &fo, &model, &err), 0);
    char *model_path = rg_xasprintf("%s/costmodel.txt", f->dir);
    assert_int_equal(cm_save(&model, model_path, &err), 0);
    cm_model_free(&model);
    cm_set_free(&set);
    /* the oracle of the held-out graph */
    char *full_db = rg_xasprintf("%s/full.db", f->dir), *budget_db = rg_xasprintf("%s/budget.db", f->dir);
    options(&o, f, "sim");
    o.db = full_db;
    problem(&p, "rgat", "infer");
    snprintf(p.dataset, sizeof p.dataset, "%s", held_out);
    sweep_ok(&o, &p, &sum);
    char *best = q_text(full_db, "SELECT v.hash FROM measurements m JOIN variants v ON v.id = m.variant_id"
                                 " WHERE m.status = 'ok' ORDER BY m.median_ms LIMIT 1");
    char *run[] = {"explore", "--model", "rgat", "--dataset", (char *)held_out, "--space", f->space, "--db",
                   budget_db, "--best-dir", f->best, "--backend", "sim", "--budget", "5", "--cost-model",
                   model_path, NULL};
    assert_int_equal(quietly(sc_sweep_main, 17, run), 0);
    assert_int_equal(tu_sql_int(budget_db, "SELECT count(*) FROM measurements WHERE status = 'ok'"), 5);
    char *sql = rg_xasprintf("SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id"
                             " WHERE m.status = 'ok' AND v.hash = '%s'", best);
    assert_int_equal(tu_sql_int(budget_db, sql), 1);
    /* a model file that cannot be read stops before anything is measured */
    char *missing[] = {"explore", "--model", "rgat", "--dataset", (char *)held_out, "--space", f->space, "--db",
                       budget_db, "--backend", "sim", "--cost-model", "/nonexistent/costmodel.txt", NULL};
    assert_int_equal(quietly(sc_sweep_main, 13, missing), 2);
    free(sql);
    free(best);
    free(full_db);
    free(budget_db);
    free(model_path);
}

/* ---- Live search (--strategy) ---- */

/* The config that config_sql selects and the time that time_sql does (both freed here). */
static char *config_and_time(const fixture *f, char *config_sql, char *time_sql, double *ms)
{
    char *json = q_text(f->db, config_sql), *t = q_text(f->db, time_sql);
    free(config_sql);
    free(time_sql);
    assert_non_null(json);
    assert_non_null(t);
    *ms = strtod(t, NULL);
    cg_config c;
    cfg_default(&c);
    assert_int_equal(cfg_parse_json(&c, json, NULL), 0);
    free(json);
    free(t);
    return cfg_to_string(&c);
}

/* The fastest ok config and its time (as text: to 1e-6) for this commit, from the store. */
static char *best_of_commit(const fixture *f, const char *commit, double *ms)
{
    return config_and_time(
        f,
        rg_xasprintf("SELECT v.config FROM measurements m JOIN variants v ON v.id = m.variant_id"
                     " WHERE m.status = 'ok' AND m.git_commit = '%s' ORDER BY m.median_ms LIMIT 1", commit),
        rg_xasprintf("SELECT min(median_ms) FROM measurements WHERE status = 'ok' AND git_commit = '%s'", commit), ms);
}

/* The config of the ok measurement with the shortest stored span (the span metric of the whole run),
 * and that span in *ms. */
static char *shortest_span(const fixture *f, double *ms)
{
    const char *from = " FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN metrics x ON"
                       " x.measurement_id = m.id AND x.kernel = '' AND x.name = 'span_ms' WHERE m.status = 'ok'";
    return config_and_time(f, rg_xasprintf("SELECT v.config%s ORDER BY x.value LIMIT 1", from),
                           rg_xasprintf("SELECT min(x.value)%s", from), ms);
}

/* --rank span: the sweep, a search over the same points and a resumed report all choose the variant
 * with the shortest span, which is not the one with the shortest kernel sum (the simulated backend's
 * dag overlaps kernels and a graph shortens the gaps, neither of which the sum sees); a variant whose
 * span is not stored is left out of the span ranking. */
static void test_rank_by_span(void **state)
{
    fixture *f = *state;
    free(f->space);
    f->space = tu_write_file(f->dir, "launch.txt", "tile: 16 64\ncoarsen: 1 4\nlaunch: stream graph dag\n");
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);   /* ranked by the kernel sum */
    double sum_best, span_best;
    char *by_sum = best_of_commit(f, "test", &sum_best), *by_span = shortest_span(f, &span_best);
    assert_string_equal(sum.best_config, by_sum);
    assert_float_equal(sum.best_ms, sum_best, 1e-12);
    assert_string_not_equal(by_sum, by_span);
    o.rank = XS_RANK_SPAN;
    sweep_ok(&o, &p, &sum);   /* everything stored: the report ranks what it reads back */
    assert_int_equal(sum.measured, 0);
    assert_string_equal(sum.best_config, by_span);
    assert_float_equal(sum.best_ms, span_best, 1e-12);
    assert_non_null(strstr(by_span, "launch=dag"));
    o.strategy = "random";
    o.no_resume = 1;   /* measured again, the search minimizing the span */
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, 12);
    assert_string_equal(sum.search_best_config, by_span);
    /* the winner's span removed from the store: the next shortest among those with one wins */
    sqlite3 *h;
    assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "DELETE FROM metrics WHERE kernel = '' AND name = 'span_ms' AND value ="
                                     " (SELECT min(value) FROM metrics WHERE kernel = '' AND name = 'span_ms')",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    char *second = shortest_span(f, &span_best);
    o.strategy = NULL;
    o.no_resume = 0;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, 0);
    assert_string_equal(sum.best_config, second);
    assert_float_equal(sum.best_ms, span_best, 1e-12);
    free(by_sum), free(by_span), free(second);
}

/* The configs a run measured, in order, joined by ';'. */
static char *measured_sequence(const fixture *f, const char *commit)
{
    char *sql = rg_xasprintf("SELECT group_concat(h, ';') FROM (SELECT v.hash AS h FROM measurements m JOIN variants v"
                             " ON v.id = m.variant_id WHERE m.git_commit = '%s' AND m.status != 'invalid' ORDER BY m.id)",
                             commit);
    char *seq = q_text(f->db, sql);
    free(sql);
    assert_non_null(seq);
    return seq;
}

/* With the budget of the whole space, every strategy measures each valid point once and finds
 * the optimum of a plain sweep; the chosen config is written as the sweep writes it. */
static void test_live_search_finds_the_optimum(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    o.commit = "plain";
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    double oracle;
    char *best = best_of_commit(f, "plain", &oracle);
    const char *strategies[] = {"random", "anneal", "bo"};
    for (int k = 0; k < 3; k++) {
        o.commit = strategies[k];   /* a commit of its own: nothing to resume */
        o.strategy = strategies[k];
        o.budget = 1000;            /* more than the space: the valid points are the budget */
        sweep_ok(&o, &p, &sum);
        assert_string_equal(sum.strategy, strategies[k]);
        assert_int_equal(sum.budget, VALID);
        assert_int_equal(sum.evaluations, VALID);
        assert_int_equal(sum.measured, VALID);
        assert_int_equal(sum.read_back, 0);
        assert_string_equal(sum.stopped_by, "budget");
        assert_int_equal(sum.count[RS_INVALID], 0);   /* a search records no invalid point */
        assert_int_equal(sum.invalid, INVALID);
        if (strcmp(sum.search_best_config, best) || fabs(sum.search_best_ms - oracle) > 1e-6 * oracle)
            fail_msg("%s found %s (%g ms), the oracle is %s (%g ms)", strategies[k], sum.search_best_config,
                     sum.search_best_ms, best, oracle);
        assert_string_equal(sum.best_config, best);
        assert_false(sum.partial);
        assert_true(rg_file_exists(sum.best_path));
    }
    free(best);
}

/* The same seed measures the same configs in the same order; another seed, another order. */
static void test_live_search_is_seeded(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    problem(&p, "rgat", "train");
    const char *runs[][2] = {{"anneal", "a1"}, {"anneal", "a2"}, {"random", "r1"}, {"random", "r2"}, {"random", "r3"}};
    const int seeds[] = {5, 5, 5, 5, 6};
    for (int k = 0; k < 5; k++) {
        o.strategy = runs[k][0];
        o.commit = runs[k][1];
        o.seed = (uint64_t)seeds[k];
        o.budget = 10;
        sweep_ok(&o, &p, &sum);
        assert_int_equal(sum.measured, 10);
    }
    char *a1 = measured_sequence(f, "a1"), *a2 = measured_sequence(f, "a2"), *r1 = measured_sequence(f, "r1"),
         *r2 = measured_sequence(f, "r2"), *r3 = measured_sequence(f, "r3");
    assert_string_equal(a1, a2);
    assert_string_equal(r1, r2);
    assert_string_not_equal(r1, r3);
    free(a1), free(a2), free(r1), free(r2), free(r3);
}

/* The live static list comes from the store's other datasets (leave-one-dataset-out, as replay's):
 * after a sweep of one graph, `static` on another graph measures that graph's best config first;
 * on a store with no other dataset the list is empty and the search still spends its budget. */
static void test_live_static_list_from_other_datasets(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    o.commit = "static";
    o.strategy = "static";
    o.budget = 3;
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);   /* nothing else in the store yet: random */
    assert_int_equal(sum.measured, 3);
    o.commit = "plain";
    o.strategy = NULL;
    o.budget = 0;
    sweep_ok(&o, &p, &sum);
    double oracle;
    char *best = best_of_commit(f, "plain", &oracle);
    xb_problem other = p;
    snprintf(other.dataset, sizeof other.dataset, "%s", "synth:nodes=2000,edges=15000,ntypes=3,etypes=4,ratio=0.3,seed=9");
    o.commit = "static2";
    o.strategy = "static";
    o.budget = 3;
    sweep_ok(&o, &other, &sum);
    assert_int_equal(sum.measured, 3);
    char *json = q_text(f->db, "SELECT v.config FROM measurements m JOIN variants v ON v.id = m.variant_id"
                                " WHERE m.git_commit = 'static2' AND m.status != 'invalid' ORDER BY m.id LIMIT 1");
    assert_non_null(json);
    cg_config c;
    cfg_default(&c);
    assert_int_equal(cfg_parse_json(&c, json, NULL), 0);
    char *first = cfg_to_string(&c);
    assert_string_equal(first, best);
    free(first);
    free(json);
    free(best);
}

/* Variants that fail to compile, and one whose worker crashes, each cost a unit and find nothing;
 * the search goes on to the best of the rest. */
static void test_live_search_goes_on_past_failures(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    o.commit = "plain";
    o.backend = "sim:fail=compile@tile=16+coarsen=4";
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    int compile_errors = sum.count[RS_COMPILE_ERROR];
    assert_true(compile_errors > 0);
    double oracle;
    char *best = best_of_commit(f, "plain", &oracle);
    o.backend = "sim:fail=compile@tile=16+coarsen=4,fault@compact=off+reorder=off+tile=64+coarsen=1+w=shmem";
    o.commit = "search";
    o.strategy = "anneal";
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.evaluations, VALID);
    assert_int_equal(sum.count[RS_COMPILE_ERROR], compile_errors);
    assert_int_equal(sum.count[RS_RUNTIME_FAULT], 1);
    assert_int_equal(sum.count[RS_OK], VALID - compile_errors - 1);
    assert_true(sum.restarts >= 1);
    assert_string_equal(sum.stopped_by, "budget");
    assert_string_equal(sum.search_best_config, best);
    free(best);
}

/* A space of more than XS_EXHAUSTIVE_MAX valid points is searched, not swept, unless asked: without
 * --strategy or --budget the default search measures XS_DEFAULT_SEARCH_PERCENT of it; --exhaustive
 * or a budget keeps the ordered sweep (its budget then bounds it). */
static void test_large_space_is_searched_by_default(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    /* over the threshold (the points that do not apply to the problem counted out): the default space
     * would take minutes under ASan */
    char *large = tu_write_file(f->dir, "large.txt",
                                "compact: off bsearch direct\nreorder: off on\ntile: 16 32 64\ncoarsen: 1 2 4 8\n"
                                "lb: off on\ntrav: node edge\nsoftmax: twopass single\nlanes: 16 32\nvec: 1 4\n"
                                "relabel: orig bfs\n");
    o.space = large;
    o.commit = "large";
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_true(sum.valid > XS_EXHAUSTIVE_MAX);
    assert_string_equal(sum.strategy, XS_DEFAULT_SEARCH);
    assert_int_equal(sum.budget, (sum.valid * XS_DEFAULT_SEARCH_PERCENT + 99) / 100);
    assert_int_equal(sum.evaluations, sum.budget);
    assert_int_equal(sum.measured, sum.budget);
    /* a budget: the ordered sweep as before, no search */
    o.commit = "budgeted";
    o.budget = 7;
    sweep_ok(&o, &p, &sum);
    assert_string_equal(sum.strategy, "");
    assert_int_equal(sum.measured, 7);
    /* --exhaustive with a budget: still ordered and bounded by it */
    o.commit = "exhaustive";
    o.exhaustive = 1;
    o.budget = 5;
    sweep_ok(&o, &p, &sum);
    assert_string_equal(sum.strategy, "");
    assert_int_equal(sum.measured, 5);
    /* the small space of the other tests is still swept whole */
    options(&o, f, "sim");
    o.commit = "small";
    sweep_ok(&o, &p, &sum);
    assert_string_equal(sum.strategy, "");
    assert_int_equal(sum.measured, VALID);
    free(large);
}

static xb_backend *sim_backend_only(const char *spec, void *ctx, rg_err *err)
{
    (void)ctx;
    return xb_sim_backend(spec, err);
}

/* A config with an override whose instance name the driver meets only after the worker has forked (a
 * search's static list, a store read back) reaches the worker whole: overrides name their instance by an
 * id of the process that interned it, so the config travels as its canonical text. */
static void test_worker_gets_overrides_named_after_its_start(void **state)
{
    (void)state;
    xw_config wc = {.make_backend = sim_backend_only, .backend_spec = "sim", .timeout_s = 10};
    xb_problem p;
    problem(&p, "rgat", "infer");
    xw_info info;
    rg_err err;
    xw_worker *w = xw_start(&wc, &p, &info, &err);
    if (!w) fail_msg("%s", err.msg);
    cg_config c;
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "tile=64,zz_after_fork_7.tile=16", &err), 0);   /* a name new to the process */
    xb_options o = {.repeats = 1};
    xb_result r;
    xb_result_init(&r);
    assert_int_equal(xw_measure(w, 0, &c, &o, &r, &err), XW_DONE);
    if (r.status != RS_OK) fail_msg("%s: %s", rs_status_name(r.status), r.evidence);
    assert_int_equal(xw_restarts(w), 0);
    xw_stop(w);
}

/* Points pl_build refuses for the problem (epi=on with nothing to fuse, cdot=edge without a dot product
 * of compact rows, softmax=single without attention) are recorded invalid with its reason and never
 * measured: RGCN keeps only the two compaction choices, RGAT every point but epi=on with two-pass
 * softmax (and cdot=edge with compact=off, which no model takes). */
static void test_refused_points_are_invalid_for_the_problem(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    char *path = tu_write_file(f->dir, "refused.txt", "compact: off direct\nsoftmax: twopass single\nepi: off on\ncdot: table edge\n");
    o.space = path;
    o.commit = "refused-rgcn";
    problem(&p, "rgcn", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.points, 16);
    assert_int_equal(sum.valid, 2);
    assert_int_equal(sum.measured, 2);
    assert_int_equal(sum.count[RS_INVALID], 14);
    assert_true(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE git_commit = 'refused-rgcn' AND status = "
                                  "'invalid' AND evidence LIKE '%so it would duplicate epi=off%'") > 0);
    assert_true(tu_sql_int(f->db, "SELECT count(*) FROM measurements WHERE git_commit = 'refused-rgcn' AND status = "
                                  "'invalid' AND evidence LIKE '%so it would duplicate cdot=table%'") > 0);
    o.commit = "refused-rgat";
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.valid, 9);   /* compact=off: twopass, single, single+epi; direct: those x cdot */
    assert_int_equal(sum.measured, 9);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id"
                                       " WHERE m.git_commit = 'refused-rgat' AND m.status = 'ok'"
                                       " AND json_extract(v.config, '$.epi') = 1"), 3);
    free(path);
}

/* A time limit that has run out when the first variant is done stops the search, and the
 * ordered sweep, after that variant; the summary says so. */
static void test_time_limit_stops_after_one_evaluation(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    o.time_limit_s = 1e-9;
    problem(&p, "rgat", "infer");
    o.strategy = "bo";
    o.budget = 20;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.evaluations, 1);
    assert_int_equal(sum.measured, 1);
    assert_string_equal(sum.stopped_by, "time limit");
    assert_true(isfinite(sum.search_best_ms));
    assert_true(sum.partial);
    o.strategy = NULL;   /* the ordered sweep */
    o.commit = "ordered";
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, 1);
    assert_string_equal(sum.stopped_by, "time limit");
    o.time_limit_s = 0;   /* none: the budget ends it */
    o.strategy = "random";
    o.commit = "unlimited";
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.evaluations, 20);
    assert_string_equal(sum.stopped_by, "budget");
}

/* Predictions that rank the candidates backwards: the last valid point is the favourite. */
static void backwards_prediction(void *ctx, const xb_problem *p, const cg_config *cfgs, int n, double *pred_ms)
{
    (void)p, (void)cfgs;
    (*(int *)ctx)++;
    for (int i = 0; i < n; i++) pred_ms[i] = n - i;
}

/* The model's predictions reach the strategy: `model` measures the predicted best first. */
static void test_live_search_uses_predictions(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    int calls = 0;
    options(&o, f, "sim");
    o.predict = backwards_prediction;
    o.order_ctx = &calls;
    o.strategy = "model";
    o.budget = 2;
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(calls, 1);
    assert_int_equal(sum.measured, 2);
    char *st = status_of(f, &p, valid_index(f, VALID - 1), NULL);
    assert_non_null(st);
    free(st);
    st = status_of(f, &p, valid_index(f, VALID - 2), NULL);
    assert_non_null(st);
    free(st);
    assert_null(status_of(f, &p, valid_index(f, 0), NULL));
}

/* bo's prior from the cost model (explore fit's calibration) reaches a live search: asked once per
 * problem; a tight one (every weight's sd and the noise at their floor) makes bo trust the
 * predictions and measure the three predicted best first. */
static int prior_calls;
static int tight_prior(void *ctx, const xb_problem *p, double *sd)
{
    (void)ctx, (void)p;
    prior_calls++;
    for (int j = 0; j < CM_BO_NFEAT; j++) sd[j] = CAL_SD_MIN;
    return 1;
}

static void test_live_bo_takes_the_models_prior(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    int calls = 0;
    prior_calls = 0;
    options(&o, f, "sim");
    o.predict = backwards_prediction;
    o.bo_prior = tight_prior;
    o.order_ctx = &calls;
    o.strategy = "bo";
    o.budget = 3;
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(prior_calls, 1);
    assert_int_equal(sum.measured, 3);
    for (int k = 1; k <= 3; k++) {
        char *st = status_of(f, &p, valid_index(f, VALID - k), NULL);
        assert_non_null(st);
        free(st);
    }
}

/* A search reads back what the store has for this device and commit (each still a unit of its
 * budget) and measures only the rest; every variant ends up measured once. */
static void test_live_search_resumes(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    problem(&p, "rgat", "infer");
    o.strategy = "random";
    o.budget = 10;
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.measured, 10);
    o.strategy = "anneal";
    o.budget = 0;   /* the whole space */
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.evaluations, VALID);
    assert_int_equal(sum.read_back, 10);
    assert_int_equal(sum.measured, VALID - 10);
    assert_each_variant_once(f->db, VALID);   /* a search records no invalid point */
    double oracle;
    char *best = best_of_commit(f, "test", &oracle);
    assert_string_equal(sum.search_best_config, best);
    o.strategy = "bo";
    o.budget = 5;   /* all stored: nothing measured, still five units */
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.evaluations, 5);
    assert_int_equal(sum.read_back, 5);
    assert_int_equal(sum.measured, 0);
    assert_each_variant_once(f->db, VALID);   /* a search records no invalid point */
    free(best);
}

static void test_best_path_names(void **state)
{
    (void)state;
    xb_problem p;
    memset(&p, 0, sizeof p);
    snprintf(p.model, sizeof p.model, "models/custom/my model.rgnn");
    snprintf(p.dataset, sizeof p.dataset, "/data/graphs/am/");
    snprintf(p.task, sizeof p.task, "infer");
    p.dim_in = p.dim_out = 64;
    p.heads = 1;
    char *path = xs_best_path("out", "../evil/GPU", &p);
    assert_string_equal(path, "out/.._evil_GPU/my_model-am-infer.json");
    free(path);
    p.heads = 2;
    path = xs_best_path("out", "NVIDIA A100-SXM4-40GB", &p);
    assert_string_equal(path, "out/NVIDIA_A100-SXM4-40GB/my_model-am-infer-64x64h2.json");
    free(path);
}

/* ---- The store under nightly jobs ---- */

/* Four sweeps of one problem on one store at once: each variant measured and stored once. */
static void test_concurrent_sweeps_measure_each_variant_once(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    options(&o, f, "sim:slow=2");
    problem(&p, "rgat", "infer");
    pid_t pids[4];
    for (int k = 0; k < 4; k++) pids[k] = fork_sweep(&o, &p);
    for (int k = 0; k < 4; k++) {
        int status;
        assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 4);
    assert_each_variant_once(f->db, POINTS);
    /* the work was shared: a claim per point, each held by the run that stored the point */
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM claims c JOIN measurements m ON m.variant_id ="
                                  " c.variant_id AND m.run_id = c.run_id"), POINTS);
}

/* Two live searches of one store in different orders share the work through the claims:
 * each variant is measured once, and a later search reads every one back. */
static void test_concurrent_searches_measure_each_variant_once(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    options(&o, f, "sim:slow=2");
    problem(&p, "rgat", "infer");
    o.strategy = "random";
    pid_t pids[2];
    for (int k = 0; k < 2; k++) {
        o.seed = (uint64_t)k + 1;
        pids[k] = fork_sweep(&o, &p);
    }
    for (int k = 0; k < 2; k++) {
        int status;
        assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_each_variant_once(f->db, VALID);   /* a search records no invalid point */
    xs_summary sum;
    o.backend = "sim";
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.read_back, VALID);
    assert_int_equal(sum.measured, 0);
}

/* A store damaged on disk: the sweep fails naming the damage and writes nothing, readers name it. */
static void test_damaged_store_is_refused(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    o.budget = 4;
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    /* garbage over the first page of an index: the table data still reads, the b-tree is broken */
    int64_t page = tu_sql_int(f->db, "SELECT rootpage FROM sqlite_master WHERE name = 'measurements_report'");
    int64_t size = tu_sql_int(f->db, "PRAGMA page_size");
    int fd = open(f->db, O_WRONLY);
    assert_true(fd >= 0);
    char junk[512];
    memset(junk, 0xa5, sizeof junk);
    assert_int_equal(pwrite(fd, junk, sizeof junk, (off_t)((page - 1) * size)), (ssize_t)sizeof junk);
    close(fd);
    int64_t before = tu_sql_int(f->db, "SELECT count(*) FROM measurements");
    struct stat st0, st1;
    assert_int_equal(stat(f->db, &st0), 0);
    options(&o, f, "sim");
    rg_err err;
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    if (!strstr(err.msg, "damaged")) fail_msg("the sweep's error does not name the damage: %s", err.msg);
    assert_int_equal(stat(f->db, &st1), 0);
    assert_int_equal(st1.st_size, st0.st_size);
    assert_int_equal(st1.st_mtime, st0.st_mtime);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM measurements"), before);
    /* readers too: the cost model's loader names the damage instead of "no usable measurements" */
    cm_set set;
    assert_int_equal(cm_set_load(f->db, NULL, &set, &err), -1);
    if (!strstr(err.msg, "damaged")) fail_msg("fit's error does not name the damage: %s", err.msg);
    /* a missing table is damage too */
    char *copy = rg_xasprintf("%s/other.db", f->dir);
    options(&o, f, "sim");
    o.db = copy;
    o.budget = 2;
    sweep_ok(&o, &p, &sum);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(copy, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "DROP TABLE metrics", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(xs_sweep(&o, &p, &sum, &err), -1);
    if (!strstr(err.msg, "table 'metrics' is missing")) fail_msg("unexpected error: %s", err.msg);
    free(copy);
}

/* A budget (or an interrupt) leaves part of the space unmeasured: the chosen config says so. */
static void test_partial_best_is_marked(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, f, "sim");
    o.budget = 10;
    problem(&p, "rgat", "infer");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.partial, 1);
    FILE *fp = fopen(sum.best_path, "r");
    assert_non_null(fp);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = 0;
    assert_non_null(strstr(text, "\"partial\":true"));
    options(&o, f, "sim");
    sweep_ok(&o, &p, &sum);
    assert_int_equal(sum.partial, 0);
    fp = fopen(sum.best_path, "r");
    assert_non_null(fp);
    n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = 0;
    assert_non_null(strstr(text, "\"partial\":false"));
}

static int run_compare_quietly(char **argv)
{
    int argc = 0;
    while (argv[argc]) argc++;
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), errfd = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    int rc = rs_cli_compare(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(errfd, 2);
    close(out), close(errfd), close(null);
    return rc;
}

/* Four shards a night, two nights, the second 30% slower: previous/latest are the nights. */
static void test_nightly_groups_find_the_regression(void **state)
{
    fixture *f = *state;
    char *plan = tu_write_file(f->dir, "nightly.plan",
                               "models: rgat hgt\n"
                               "datasets: synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4"
                               " synth:nodes=2000,edges=8000,ntypes=2,etypes=3,ratio=0.7\n"
                               "tasks: infer train\n");   /* 8 jobs: 2 per shard */
    char *merged = rg_xasprintf("%s/merged.db", f->dir);
    static const char *const nights[2][2] = {{"night-1", "sim"}, {"night-2", "sim:scale=1.3"}};
    for (int night = 0; night < 2; night++)
        for (int s = 0; s < 4; s++) {
            char *db = rg_xasprintf("%s/n%d-shard%d.db", f->dir, night, s);
            char shard[16];
            snprintf(shard, sizeof shard, "%d/4", s);
            char *argv[] = {"sweep", "--plan", plan, "--shard", shard, "--db", db, "--space", f->space,
                            "--backend", (char *)nights[night][1], "--best-dir", f->best, "--commit",
                            (char *)nights[night][0], "--group", (char *)nights[night][0], "--repeats", "2", NULL};
            assert_int_equal(quietly(sc_plan_main, 19, argv), 0);
            char *margv[] = {"merge", "--into", merged, db, NULL};
            assert_int_equal(merge_quietly(4, margv), 0);
            free(db);
        }
    assert_int_equal(tu_sql_int(merged, "SELECT count(DISTINCT group_id) FROM runs"), 2);
    char *cmp[] = {"compare", "--db", merged, "--base", "previous", "--head", "latest", NULL};
    assert_int_equal(run_compare_quietly(cmp), 1);
    rg_err err;
    rs_store *s = rs_open_read(merged, &err);
    assert_non_null(s);
    rs_selection base, head;
    assert_int_equal(rs_resolve_selection(s, "previous", &base, &err), 0);
    assert_int_equal(rs_resolve_selection(s, "latest", &head, &err), 0);
    assert_string_equal(base.group, "night-1");
    assert_string_equal(head.group, "night-2");
    rs_comparison c;
    assert_int_equal(rs_compare_selections(s, &base, &head, 0.05, &c, &err), 0);
    assert_int_equal(c.count[RS_CMP_REGRESSION], 8);
    assert_int_equal(c.count[RS_CMP_MISSING], 0);
    rs_comparison_free(&c);
    rs_close(s);
    /* two shards of one night share no problem: that is no pass */
    char *disjoint[] = {"compare", "--db", merged, "--base", "1", "--head", "2", NULL};
    assert_int_equal(run_compare_quietly(disjoint), 1);
    free(merged);
    free(plan);
}

/* Without --group, the shards of one plan on one night share a group derived from both. */
static void test_plan_group_is_shared_by_its_shards(void **state)
{
    fixture *f = *state;
    char *plan = tu_write_file(f->dir, "nightly.plan", "models: rgat hgt\ndatasets: synth:aifb\n");
    xp_plan pl;
    rg_err err;
    assert_int_equal(xp_load(plan, &pl, &err), 0);
    char g1[RS_GROUP_MAX], g2[RS_GROUP_MAX], g3[RS_GROUP_MAX];
    time_t t = 1700000000;   /* 2023-11-14 22:13 UTC */
    xp_default_group(&pl, t, g1, sizeof g1);
    xp_default_group(&pl, t + 6 * 3600, g2, sizeof g2);   /* after midnight: the same night */
    xp_default_group(&pl, t + 24 * 3600, g3, sizeof g3);  /* the next night */
    assert_string_equal(g1, g2);
    assert_string_not_equal(g1, g3);
    assert_non_null(strstr(g1, "nightly.plan-"));
    snprintf(pl.models[0], sizeof pl.models[0], "rgcn");   /* another matrix, another group */
    xp_default_group(&pl, t, g2, sizeof g2);
    assert_string_not_equal(g1, g2);
    free(plan);
}

/* A sweep killed with SIGKILL stays 'running' only until the next command opens the store. */
static void test_killed_run_is_marked_interrupted(void **state)
{
    fixture *f = *state;
    xs_options o;
    xb_problem p;
    options(&o, f, "sim:slow=20");
    problem(&p, "rgat", "infer");
    pid_t pid = fork_sweep(&o, &p);
    wait_rows(f->db, INVALID + 2, 10);
    kill(-pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    rg_err err;
    rs_store *s = rs_open_read(f->db, &err);   /* a reader says it, without writing */
    assert_non_null(s);
    rs_run_row r;
    assert_int_equal(rs_get_run(s, 1, &r, &err), 0);
    assert_string_equal(r.status, "interrupted");
    assert_int_equal(r.pid, pid);
    rs_close(s);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    s = rs_open(f->db, &err);                  /* a writer records it */
    assert_non_null(s);
    rs_close(s);
    assert_int_equal(tu_sql_int(f->db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"
                                  " AND finished_at IS NOT NULL"), 1);
}

/* Runs fn in a child process as the user nobody (root ignores file permissions); its exit code. */
static int as_nobody(int (*fn)(int, char **), char **argv)
{
    int argc = 0;
    while (argv[argc]) argc++;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        if (getenv("RGNN_TEST_VERBOSE") == NULL) dup2(null, 2);
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(99);
        _exit(fn(argc, argv));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static int fit_cli(int argc, char **argv) { return cm_cli_fit(argc, argv); }

/* A store in a folder its reader cannot write: export, compare, report and fit read it. */
static void test_store_in_read_only_folder(void **state)
{
    fixture *f = *state;
    if (getuid() != 0) skip();   /* needs to become another user */
    xs_options o;
    xb_problem p;
    xs_summary sum;
    char *ro = rg_xasprintf("%s/ro", f->dir), *out = rg_xasprintf("%s/out", f->dir);
    char *db = rg_xasprintf("%s/results.db", ro);
    static const char *const datasets[] = {"synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4",
                                           "synth:nodes=2000,edges=8000,ntypes=2,etypes=3,ratio=0.7"};
    for (int k = 0; k < 2; k++) {
        options(&o, f, "sim");
        o.db = db;
        problem(&p, "rgat", "infer");
        snprintf(p.dataset, sizeof p.dataset, "%s", datasets[k]);
        sweep_ok(&o, &p, &sum);
    }
    assert_int_equal(chmod(f->dir, 0755), 0);
    assert_int_equal(chmod(db, 0444), 0);
    assert_int_equal(chmod(ro, 0555), 0);
    assert_int_equal(mkdir(out, 0777), 0);
    assert_int_equal(chmod(out, 0777), 0);
    char *cm = rg_xasprintf("%s/cm.txt", out), *report = rg_xasprintf("%s/report", out);
    char *exp[] = {"export", "--db", db, "--format", "csv", NULL};
    char *cmp[] = {"compare", "--db", db, "--base", "1", "--head", "1", NULL};
    char *rep[] = {"report", "--db", db, "--out", report, NULL};
    char *fit[] = {"fit", "--db", db, "--out", cm, NULL};
    assert_int_equal(as_nobody(rs_cli_export, exp), 0);
    assert_int_equal(as_nobody(rs_cli_compare, cmp), 0);
    assert_int_equal(as_nobody(rp_cli_main, rep), 0);
    assert_int_equal(as_nobody(fit_cli, fit), 0);
    char *wal = rg_xasprintf("%s-wal", db), *shm = rg_xasprintf("%s-shm", db);
    assert_false(rg_file_exists(wal));
    assert_false(rg_file_exists(shm));
    assert_int_equal(chmod(ro, 0755), 0);   /* the fixture removes the folder */
    free(wal), free(shm), free(cm), free(report), free(ro), free(out), free(db);
}

int main(void)
{
    /* graphs generated by the tests are cached in a temporary folder, not in the checkout */
    char *cache = tu_tmpdir();
    setenv("RGNN_CACHE", cache, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_constraints_through_a_sweep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_failure_class_is_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crashes_restart_the_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hang_is_killed_as_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backend_failures_stop_the_problem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reference_built_only_when_needed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_after_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_callback_and_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_sweep_resumes_losing_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigint_finishes_and_marks_interrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_best_config_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compare_finds_a_regression, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_parsing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_skips_heads_and_says_so, setup, teardown),
        cmocka_unit_test(test_nightly_plan_covers_every_size),
        cmocka_unit_test_setup_teardown(test_three_shards_cover_the_plan_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_model_orders_the_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_variants_are_timed_once, setup, teardown),
        cmocka_unit_test(test_best_path_names),
        cmocka_unit_test_setup_teardown(test_concurrent_sweeps_measure_each_variant_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_store_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_best_is_marked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nightly_groups_find_the_regression, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_group_is_shared_by_its_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_run_is_marked_interrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_in_read_only_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_search_finds_the_optimum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_search_is_seeded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_search_goes_on_past_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_points_are_invalid_for_the_problem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_gets_overrides_named_after_its_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_space_is_searched_by_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_static_list_from_other_datasets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_limit_stops_after_one_evaluation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_search_resumes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_search_uses_predictions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_bo_takes_the_models_prior, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_searches_measure_each_variant_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_by_span, setup, teardown),
    };
    int rc = cmocka_run_group_tests_name("sweep", tests, NULL, NULL);
    char *cmd = rg_xasprintf("rm -rf '%s'", cache);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cache);
    free(cmd);
    free(cache);
    return rc;
}
