/* Tests of what a machine without a usable GPU sees: the "no CUDA device:" line says why in a
 * reader's words, and a sweep that stops before any device answers leaves no store behind. */
#include "tests/testutil.h"
#include "explorer/sweep.h"
#include "measure/backend.h"
#include "runtime/rt.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *DATASET = "synth:nodes=500,edges=2000,ntypes=2,etypes=3,ratio=0.4";

/* cudart's own wording for "no driver" is about driver versions: the reason must not repeat it. */
static void test_reason_names_the_missing_driver(void **state)
{
    (void)state;
    char buf[256];
    krt_no_device_reason(cudaErrorInsufficientDriver, 0, 12080, buf, sizeof buf);
    assert_string_equal(buf, "no NVIDIA driver or device was found (cudaErrorInsufficientDriver)");

    krt_no_device_reason(cudaErrorInsufficientDriver, 12020, 12080, buf, sizeof buf);
    assert_string_equal(buf, "the NVIDIA driver supports CUDA 12.2, older than this build's CUDA 12.8 runtime "
                             "(cudaErrorInsufficientDriver)");

    krt_no_device_reason(cudaErrorNoDevice, 12080, 12080, buf, sizeof buf);
    assert_string_equal(buf, "no NVIDIA device was found (cudaErrorNoDevice)");

    krt_no_device_reason(cudaErrorDevicesUnavailable, 12080, 12080, buf, sizeof buf);
    assert_non_null(strstr(buf, "(cudaErrorDevicesUnavailable)"));
}

/* The live message on this machine (when it has no device): one line, the usual prefix, and
 * never cudart's misleading "driver version is insufficient" wording when no driver exists. */
static void test_live_message(void **state)
{
    (void)state;
    if (krt_have_device()) {
        printf("skip: this machine has a CUDA device\n");
        skip();
    }
    rg_err err;
    assert_int_equal(krt_require_device(&err), -1);
    assert_memory_equal(err.msg, "no CUDA device: ", 16);
    assert_null(strchr(err.msg, '\n'));
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)
        assert_string_equal(err.msg, "no CUDA device: no NVIDIA driver or device was found "
                                     "(cudaErrorInsufficientDriver)");
}

/* The sweeps here stop before a device answers, or measure a point or two: a space of 8 points, not
 * the default one (what a sweep creates and when does not depend on the space; enumerating the
 * default space's half a million points, and recording the invalid ones, took seconds a sweep). */
static const char SPACE[] = "compact: off direct\ntile: 16 32\nlanes: 16 32\n";
static char space_path[512];

static void options(xs_options *o, const char *dir, const char *db, const char *backend)
{
    xs_options_default(o);
    snprintf(space_path, sizeof space_path, "%s/space.txt", dir);
    free(tu_write_file(dir, "space.txt", SPACE));
    o->space = space_path;
    o->db = db;
    o->best_dir = dir;
    o->backend = backend;
    o->commit = "test";
    o->progress = XS_PROGRESS_OFF;
    o->quiet = 1;
    o->timeout_s = 10;
}

static void problem(xb_problem *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->model, sizeof p->model, "rgat");
    snprintf(p->dataset, sizeof p->dataset, "%s", DATASET);
    snprintf(p->task, sizeof p->task, "infer");
    p->dim_in = p->dim_out = 16;
    p->heads = 1;
}

/* Sweeps once with a backend that cannot start and returns the error. */
static void failing_sweep(const char *dir, const char *db, const char *backend, rg_err *err)
{
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, dir, db, backend);
    if (!backend) o.gpu_backend = xb_gpu_backend;
    problem(&p);
    assert_int_equal(xs_sweep(&o, &p, &sum, err), -1);
}

static void test_failed_start_leaves_no_store(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *db = rg_xasprintf("%s/sub/results.db", dir);
    rg_err err;
    failing_sweep(dir, db, "sim:fail=prepare", &err);
    assert_non_null(strstr(err.msg, "cannot prepare"));
    assert_int_not_equal(access(db, F_OK), 0);
    if (!krt_have_device()) {
        failing_sweep(dir, db, NULL, &err);
        assert_memory_equal(err.msg, "no CUDA device: ", 16);
        assert_int_not_equal(access(db, F_OK), 0);
    }
    /* a sweep that does start creates it */
    xs_options o;
    xb_problem p;
    xs_summary sum;
    options(&o, dir, db, "sim");
    o.budget = 1;
    problem(&p);
    if (xs_sweep(&o, &p, &sum, &err)) fail_msg("sweep failed: %s", err.msg);
    assert_int_equal(tu_sql_int(db, "SELECT count(*) FROM runs"), 1);
    free(db);
    tu_rm_tree(dir);
}

/* A store that existed before is used as it is: the failed sweep neither removes nor changes it. */
static void test_failed_start_keeps_an_existing_store(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *db = rg_xasprintf("%s/results.db", dir);
    xs_options o;
    xb_problem p;
    xs_summary sum;
    rg_err err;
    options(&o, dir, db, "sim");
    o.budget = 2;
    problem(&p);
    if (xs_sweep(&o, &p, &sum, &err)) fail_msg("sweep failed: %s", err.msg);
    int64_t before = tu_sql_int(db, "SELECT count(*) FROM measurements");
    assert_true(before > 0);
    failing_sweep(dir, db, "sim:fail=prepare", &err);
    assert_int_equal(access(db, F_OK), 0);
    assert_int_equal(tu_sql_int(db, "SELECT count(*) FROM measurements"), before);
    assert_int_equal(tu_sql_int(db, "SELECT count(*) FROM runs"), 1);
    free(db);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reason_names_the_missing_driver),
        cmocka_unit_test(test_live_message),
        cmocka_unit_test(test_failed_start_leaves_no_store),
        cmocka_unit_test(test_failed_start_keeps_an_existing_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
