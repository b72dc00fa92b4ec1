/* Tests of the results store: schema and refusals, record/best/resume, two concurrent
 * writer processes, a writer killed mid-sweep, merge, CSV/JSON export and compare. */
#include "tests/testutil.h"
#include "results/store.h"
#include "cli/rscli.h"

#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEVICE "Test GPU (sm_90)"

/* ---- helpers ---- */

static void exec_raw(const char *db_path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static int64_t begin_run(rs_store *s, const char *commit)
{
    rs_run_info info = {.commit = commit, .host = "testhost", .gpu_name = "Test GPU", .sm = 90,
                        .driver_version = "580.1", .cuda_version = "13.0", .cupti_version = "26",
                        .command_line = "explore sweep --test"};
    rg_err err;
    int64_t id = rs_begin_run(s, &info, &err);
    assert_true(id > 0);
    return id;
}

static int64_t variant(rs_store *s, const char *model, const char *task, int tile, int dims)
{
    char *cfg = rg_xasprintf("{\"model\":\"%s\",\"task\":\"%s\",\"tile\":%d,\"dims\":%d,\"note\":\"a, \\\"b\\\"\"}",
                             model, task, tile, dims);
    rs_variant v = {.config_json = cfg, .model = model, .task = task, .dim_in = dims, .dim_out = dims, .heads = 1};
    rg_err err;
    int64_t id = rs_upsert_variant(s, &v, &err);
    if (id <= 0) fail_msg("%s", err.msg);
    free(cfg);
    return id;
}

static uint64_t variant_hash(const char *model, const char *task, int tile, int dims)
{
    char *cfg = rg_xasprintf("{\"model\":\"%s\",\"task\":\"%s\",\"tile\":%d,\"dims\":%d,\"note\":\"a, \\\"b\\\"\"}",
                             model, task, tile, dims);
    uint64_t h = rg_fnv1a64(cfg, strlen(cfg), RG_FNV_SEED);
    free(cfg);
    return h;
}

static int64_t record(rs_store *s, int64_t run, int64_t ds, int64_t var, rs_status st, double ms)
{
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = run;
    m.dataset_id = ds;
    m.variant_id = var;
    m.device_key = DEVICE;
    m.status = st;
    if (st == RS_OK) {
        m.median_ms = ms;
        m.min_ms = ms * 0.9;
        m.max_ms = ms * 1.1;
        m.stddev_ms = ms * 0.01;
        m.repeats = 10;
        m.gemm_ms = ms / 2;
        m.traversal_ms = ms / 4;
        m.other_ms = ms / 4;
        m.peak_mem_bytes = 123456789;
        m.validation_error = 1e-6;
    } else {
        m.evidence = "error: line 3, \"x\" undefined\nsecond line";
    }
    rs_kernel_time k[2] = {{"gemm_1", "gemm", ms * 5e5, 100}, {"trav_2", "traversal", ms * 5e5, NAN}};
    rs_metric x[1] = {{"gemm_1", "sm__throughput", "%", 71.5}};
    rg_err err;
    int64_t id = rs_record(s, &m, k, st == RS_OK ? 2 : 0, x, st == RS_OK ? 1 : 0, &err);
    if (id <= 0) fail_msg("%s", err.msg);
    return id;
}

static int64_t dataset(rs_store *s, const char *name)
{
    hg_stats x = {.nodes = 100, .edges = 1000, .unique_pairs = 400, .node_types = 3, .edge_types = 4,
                  .avg_degree = 10, .density = 0.1, .compaction_ratio = 0.4, .rel_min = 10, .rel_max = 500,
                  .rel_median = 200, .rel_skew = 1.5, .max_in_degree = 50, .in_degree_skew = 2.5};
    rg_err err;
    int64_t id = rs_upsert_dataset(s, name, &x, &err);
    assert_true(id > 0);
    return id;
}

static rs_store *open_ok(const char *path)
{
    rg_err err;
    rs_store *s = rs_open(path, &err);
    if (!s) fail_msg("%s", err.msg);
    return s;
}

/* ---- schema and refusals ---- */

static void test_schema_creation(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/a/b/results.db", dir);
    rs_store *s = open_ok(path);
    rs_close(s);
    assert_int_equal(tu_sql_int(path, "PRAGMA user_version"), RS_SCHEMA_VERSION);
    assert_int_equal(tu_sql_int(path, "PRAGMA application_id"), RS_APPLICATION_ID);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
                                      " ('runs','datasets','variants','measurements','kernel_times','metrics')"), 6);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'measurements_resume'"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
    s = open_ok(path);   /* reopening an up-to-date store changes nothing */
    rs_close(s);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 0);
    rg_err err;
    assert_null(rs_open_existing("/nonexistent/dir/x.db", &err));
    assert_non_null(strstr(err.msg, "no such results database"));
    free(path);
    tu_rm_tree(dir);
}

static void assert_refused_untouched(const char *path, const char *expect)
{
    size_t n0, n1;
    char *before = tu_read_file(path, &n0);
    rg_err err;
    assert_null(rs_open(path, &err));
    assert_non_null(strstr(err.msg, expect));
    assert_non_null(strstr(err.msg, path));
    char *dbpath = rg_xasprintf("--db=%s", path);
    char *argv[] = {"export", dbpath, "--format", "csv", NULL};
    assert_int_equal(rs_cli_export(4, argv), 1);
    char *argv2[] = {"compare", "--db", (char *)path, NULL};
    assert_int_equal(rs_cli_compare(3, argv2), 1);
    char *after = tu_read_file(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(dbpath);
    free(before);
    free(after);
}

static void test_garbage_db_untouched(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    rg_str text = {0};
    for (int i = 0; i < 40; i++) rg_str_printf(&text, "line %d: this is not a database, really\n", i);
    char *path = tu_write_file(dir, "garbage.db", text.s);
    assert_refused_untouched(path, "not an SQLite database");
    char *wal = rg_xasprintf("%s-wal", path), *shm = rg_xasprintf("%s-shm", path);
    assert_false(rg_file_exists(wal));
    assert_false(rg_file_exists(shm));
    char *tiny = tu_write_file(dir, "tiny.db", "hello\n");
    assert_refused_untouched(tiny, "not an SQLite database");
    rg_str_free(&text);
    free(path);
    free(tiny);
    free(wal);
    free(shm);
    tu_rm_tree(dir);
}

static void test_newer_schema_refused(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/future.db", dir);
    rs_close(open_ok(path));
    exec_raw(path, "PRAGMA user_version = 99");
    assert_refused_untouched(path, "newer");
    char *other = rg_xasprintf("%s/other.db", dir);
    exec_raw(other, "CREATE TABLE foo(x); INSERT INTO foo VALUES (1)");
    assert_refused_untouched(other, "another program");
    free(path);
    free(other);
    tu_rm_tree(dir);
}

/* ---- record, best, resume ---- */

static void test_record_and_best(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/r.db", dir);
    rs_store *s = open_ok(path);
    int64_t run = begin_run(s, "abc123");
    int64_t aifb = dataset(s, "aifb");
    assert_int_equal(rs_upsert_dataset(s, "aifb", NULL, NULL), aifb);   /* no stats: kept as they were */
    assert_int_equal(tu_sql_int(path, "SELECT edges FROM datasets WHERE name = 'aifb'"), 1000);
    int64_t v16 = variant(s, "rgat", "inference", 16, 64), v32 = variant(s, "rgat", "inference", 32, 64);
    int64_t vbad = variant(s, "rgat", "inference", 64, 64), vhgt = variant(s, "hgt", "training", 16, 64);
    assert_int_equal(variant(s, "rgat", "inference", 16, 64), v16);   /* upsert finds it again */
    record(s, run, aifb, v16, RS_OK, 2.0);
    int64_t best_id = record(s, run, aifb, v32, RS_OK, 1.5);
    record(s, run, aifb, vbad, RS_COMPILE_ERROR, NAN);
    record(s, run, aifb, vhgt, RS_OOM, NAN);
    rg_err err;
    assert_int_equal(rs_finish_run(s, run, RS_RUN_FINISHED, &err), 0);

    rs_best *b;
    size_t n;
    assert_int_equal(rs_query_best(s, NULL, &b, &n, &err), 0);
    assert_int_equal(n, 2);   /* hgt/training first? no: ordered by model: hgt < rgat */
    assert_string_equal(b[0].model, "hgt");
    assert_true(isnan(b[0].best_ms));
    assert_int_equal(b[0].n_ok, 0);
    assert_string_equal(b[1].model, "rgat");
    assert_float_equal(b[1].best_ms, 1.5, 1e-12);
    assert_int_equal(b[1].measurement_id, best_id);
    assert_int_equal(b[1].n_ok, 2);
    assert_int_equal(b[1].n_total, 3);
    assert_non_null(strstr(b[1].config_json, "\"tile\":32"));
    char hex[17];
    rs_hash_hex(variant_hash("rgat", "inference", 32, 64), hex);
    assert_string_equal(b[1].hash, hex);
    assert_string_equal(b[1].device_key, DEVICE);
    rs_best_free(b, n);

    rs_row *rows;
    rs_filter f = {.run_id = run, .model = "rgat"};
    assert_int_equal(rs_query_measurements(s, &f, &rows, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(rows[0].n_kernels, 2);
    assert_int_equal(rows[0].n_metrics, 1);
    assert_string_equal(rows[0].commit, "abc123");   /* inherited from the run */
    assert_int_equal(rows[2].status, RS_COMPILE_ERROR);
    assert_non_null(strstr(rows[2].evidence, "undefined"));
    assert_true(isnan(rows[2].median_ms));
    assert_int_equal(rows[0].peak_mem_bytes, 123456789);
    rs_rows_free(rows, n);

    /* bad inputs come back as errors, nothing is written */
    rs_variant clash = {.config_json = "{\"other\":1}", .hash = variant_hash("rgat", "inference", 16, 64),
                        .model = "rgat", .task = "inference", .dim_in = 64, .dim_out = 64, .heads = 1};
    assert_int_equal(rs_upsert_variant(s, &clash, &err), -1);
    assert_non_null(strstr(err.msg, "collision"));
    rs_variant broken = {.config_json = "{\"tile\":", .model = "rgat", .task = "inference", .heads = 1};
    assert_int_equal(rs_upsert_variant(s, &broken, &err), -1);
    assert_non_null(strstr(err.msg, "not valid JSON"));
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = run, m.dataset_id = aifb, m.variant_id = v16, m.device_key = DEVICE;
    assert_int_equal(rs_record(s, &m, NULL, 0, NULL, 0, &err), -1);   /* ok without a time */
    assert_non_null(strstr(err.msg, "median"));
    m.median_ms = 1, m.run_id = 999;
    assert_int_equal(rs_record(s, &m, NULL, 0, NULL, 0, &err), -1);   /* unknown run */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM measurements"), 4);
    rs_close(s);
    free(path);
    tu_rm_tree(dir);
}

/* Derived metrics (cost-model predictions) are replaced on every fit, never piled up, and a
 * bad id leaves every earlier value in place. */
static void test_set_metric_replaces(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/r.db", dir);
    rs_store *s = open_ok(path);
    int64_t run = begin_run(s, "abc123"), aifb = dataset(s, "aifb");
    int64_t a = record(s, run, aifb, variant(s, "rgat", "inference", 16, 64), RS_OK, 2.0);
    int64_t b = record(s, run, aifb, variant(s, "rgat", "inference", 32, 64), RS_OK, 1.5);
    rg_err err;
    int64_t ids[2] = {a, b};
    double first[2] = {3.0, 4.0}, second[2] = {5.0, NAN};
    assert_int_equal(rs_set_metric(s, "predicted_ms", "ms", NULL, ids, first, 2, &err), 0);
    assert_int_equal(rs_set_metric(s, "predicted_ms", "ms", NULL, ids, second, 2, &err), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM metrics WHERE name = 'predicted_ms'"), 1);
    char *sql = rg_xasprintf("SELECT value * 10 FROM metrics WHERE name = 'predicted_ms' AND measurement_id = %lld",
                             (long long)a);
    assert_int_equal(tu_sql_int(path, sql), 50);
    /* the per-kernel metric of the same measurements is left alone */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM metrics WHERE name = 'sm__throughput'"), 2);
    int64_t bad[2] = {b, 9999};
    assert_int_equal(rs_set_metric(s, "predicted_ms", "ms", NULL, bad, first, 2, &err), -1);
    assert_non_null(strstr(err.msg, "9999"));
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM metrics WHERE name = 'predicted_ms'"), 1);
    assert_int_equal(tu_sql_int(path, sql), 50);
    /* a scope clears the metric of every measurement it matches, listed or not: an hgt
     * measurement keeps its value when the scope is rgat, a's goes */
    int64_t h = record(s, run, aifb, variant(s, "hgt", "training", 16, 64), RS_OK, 3.0);
    double one[1] = {7.0};
    assert_int_equal(rs_set_metric(s, "predicted_ms", "ms", NULL, &h, one, 1, &err), 0);
    rs_filter rgat = {.model = "rgat", .device_key = DEVICE};
    assert_int_equal(rs_set_metric(s, "predicted_ms", "ms", &rgat, &b, one, 1, &err), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM metrics WHERE name = 'predicted_ms'"), 2);
    char *of_a = rg_xasprintf("SELECT count(*) FROM metrics WHERE name = 'predicted_ms' AND measurement_id = %lld",
                              (long long)a);
    char *sum = rg_xasprintf("SELECT sum(value) FROM metrics WHERE name = 'predicted_ms' AND measurement_id IN (%lld, %lld)",
                             (long long)b, (long long)h);
    assert_int_equal(tu_sql_int(path, of_a), 0);
    assert_int_equal(tu_sql_int(path, sum), 14);
    free(of_a);
    free(sum);
    free(sql);
    rs_close(s);
    free(path);
    tu_rm_tree(dir);
}

static void test_resume_lookup(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/r.db", dir);
    rs_store *s = open_ok(path);
    int64_t run = begin_run(s, "c0ffee");
    int64_t ds = dataset(s, "mutag");
    record(s, run, ds, variant(s, "rgcn", "training", 16, 32), RS_OK, 3.0);
    record(s, run, ds, variant(s, "rgcn", "training", 32, 32), RS_TIMEOUT, NAN);
    rs_resume_key k = {.device_key = DEVICE, .dataset = "mutag", .commit = "c0ffee",
                       .config_hash = variant_hash("rgcn", "training", 16, 32), .model = "rgcn", .task = "training",
                       .dim_in = 32, .dim_out = 32, .heads = 1};
    rg_err err;
    rs_status st = RS_OOM;
    assert_int_equal(rs_already_measured(s, &k, &st, &err), 1);
    assert_int_equal(st, RS_OK);
    rs_resume_key other = k;
    other.config_hash = variant_hash("rgcn", "training", 32, 32);
    assert_int_equal(rs_already_measured(s, &other, &st, &err), 1);
    assert_int_equal(st, RS_TIMEOUT);
    other = k, other.commit = "newcommit";
    assert_int_equal(rs_already_measured(s, &other, NULL, &err), 0);
    other = k, other.device_key = "Other GPU (sm_80)";
    assert_int_equal(rs_already_measured(s, &other, NULL, &err), 0);
    other = k, other.dataset = "aifb";
    assert_int_equal(rs_already_measured(s, &other, NULL, &err), 0);
    other = k, other.dim_in = 64;
    assert_int_equal(rs_already_measured(s, &other, NULL, &err), 0);
    other = k, other.system = "pyg";
    assert_int_equal(rs_already_measured(s, &other, NULL, &err), 0);
    other = k, other.config_hash = 12345;
    assert_int_equal(rs_already_measured(s, &other, NULL, &err), 0);
    /* every hash of the problem at once, sorted; none for another commit, device or system */
    char(*hashes)[17];
    size_t n;
    assert_int_equal(rs_measured_hashes(s, &k, &hashes, &n, &err), 0);
    assert_int_equal(n, 2);
    char want[2][17];
    rs_hash_hex(variant_hash("rgcn", "training", 16, 32), want[0]);
    rs_hash_hex(variant_hash("rgcn", "training", 32, 32), want[1]);
    assert_true(strcmp(hashes[0], hashes[1]) < 0);   /* sorted, each once: the two are the two wanted */
    for (int i = 0; i < 2; i++) assert_true(!strcmp(hashes[i], want[0]) || !strcmp(hashes[i], want[1]));
    free(hashes);
    static const char *const fields[] = {"commit", "device", "system", "dim_in"};
    for (int f = 0; f < 4; f++) {
        other = k;
        if (f == 0) other.commit = "newcommit";
        if (f == 1) other.device_key = "Other GPU (sm_80)";
        if (f == 2) other.system = "pyg";
        if (f == 3) other.dim_in = 64;
        assert_int_equal(rs_measured_hashes(s, &other, &hashes, &n, &err), 0);
        if (n != 0) fail_msg("another %s: %zu hashes", fields[f], n);
        free(hashes);
    }
    rs_close(s);
    free(path);
    tu_rm_tree(dir);
}

/* ---- concurrency and crashes ---- */

/* A sweep process: its own connection, run, and n measurements; exit status 0 on success. */
static void child_sweep(const char *path, int worker, int n)
{
    rg_err err;
    rs_store *s = rs_open(path, &err);
    if (!s) _exit(10);
    rs_run_info info = {.commit = "abc", .gpu_name = "Test GPU", .sm = 90};
    int64_t run = rs_begin_run(s, &info, &err);
    int64_t ds = rs_upsert_dataset(s, "aifb", NULL, &err);
    if (run <= 0 || ds <= 0) _exit(11);
    for (int i = 0; i < n; i++) {
        /* half of the variants are shared between the workers: concurrent upserts of one hash */
        char *cfg = rg_xasprintf("{\"tile\":%d,\"worker\":%d}", i, i % 2 ? worker : -1);
        rs_variant v = {.config_json = cfg, .model = "rgat", .task = "inference", .dim_in = 64, .dim_out = 64, .heads = 1};
        int64_t var = rs_upsert_variant(s, &v, &err);
        free(cfg);
        rs_measurement m;
        rs_measurement_init(&m);
        m.run_id = run, m.dataset_id = ds, m.variant_id = var, m.device_key = DEVICE;
        m.median_ms = 1.0 + i, m.repeats = 3;
        rs_kernel_time k[3] = {{"a", "gemm", 1, 0}, {"b", "traversal", 2, 0}, {"c", "other", 3, 0}};
        rs_metric x[2] = {{"a", "ipc", "", 1.5}, {"", "dram", "%", 40}};
        if (var <= 0 || rs_record(s, &m, k, 3, x, 2, &err) <= 0) {
            fprintf(stderr, "worker %d: %s\n", worker, err.msg);
            _exit(12);
        }
    }
    rs_close(s);
    _exit(0);
}

/* A batch keeps all its writes or, when one of them fails, none: the later writes of a failed batch
 * are refused and rs_batch_end says why. */
static void test_batch_all_or_nothing(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/b.db", dir);
    rs_store *s = open_ok(path);
    rg_err err;
    assert_int_equal(rs_batch_begin(s, &err), 0);
    for (int t = 1; t <= 50; t++) variant(s, "rgat", "train", t, 64);
    assert_int_equal(rs_batch_end(s, &err), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM variants"), 50);
    /* a hash already stored for another config fails inside the batch */
    assert_int_equal(rs_batch_begin(s, &err), 0);
    variant(s, "rgat", "train", 51, 64);
    rs_variant clash = {.config_json = "{\"tile\":99}", .hash = variant_hash("rgat", "train", 1, 64), .model = "rgat",
                        .task = "train", .dim_in = 64, .dim_out = 64, .heads = 1};
    assert_true(rs_upsert_variant(s, &clash, &err) < 0);
    assert_non_null(strstr(err.msg, "already stored for a different config"));
    rs_variant later = {.config_json = "{\"tile\":7}", .model = "rgat", .task = "train", .dim_in = 64, .dim_out = 64,
                        .heads = 1};
    assert_true(rs_upsert_variant(s, &later, &err) < 0);
    assert_non_null(strstr(err.msg, "an earlier write of this batch failed"));
    assert_int_equal(rs_batch_end(s, &err), -1);
    assert_non_null(strstr(err.msg, "none of its rows were kept"));
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM variants"), 50);
    /* and the store takes writes again */
    variant(s, "rgat", "train", 52, 64);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM variants"), 51);
    rs_close(s);
    free(path);
    tu_rm_tree(dir);
}

static void test_two_concurrent_writers(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/shared/results.db", dir);
    pid_t pids[2];
    /* both create the database at once: schema creation must be race-free too */
    for (int w = 0; w < 2; w++)
        if ((pids[w] = fork()) == 0) child_sweep(path, w, 300);
    for (int w = 0; w < 2; w++) {
        int status;
        assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM measurements"), 600);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM kernel_times"), 1800);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM metrics"), 1200);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM datasets"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM variants"), 450);   /* 150 shared + 2 x 150 own */
    assert_int_equal(tu_sql_int(path, "SELECT count(DISTINCT run_id || '/' || median_ms) FROM measurements"), 600);
    free(path);
    tu_rm_tree(dir);
}

static void test_kill_mid_sweep_leaves_complete_rows(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/k.db", dir);
    rs_close(open_ok(path));
    pid_t pid = fork();
    if (pid == 0) child_sweep(path, 0, 1000000);
    double t0 = rg_now();
    while (tu_sql_int(path, "SELECT count(*) FROM measurements") < 100 && rg_now() - t0 < 20) usleep(2000);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    rs_store *s = open_ok(path);   /* recovers the WAL of the killed writer */
    rs_close(s);
    int64_t n = tu_sql_int(path, "SELECT count(*) FROM measurements");
    assert_true(n >= 100);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM kernel_times"), 3 * n);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM metrics"), 2 * n);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM measurements m WHERE NOT EXISTS"
                                      " (SELECT 1 FROM variants v WHERE v.id = m.variant_id)"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check <> 'ok'"), 0);
    free(path);
    tu_rm_tree(dir);
}

/* ---- merge ---- */

static char *make_db(const char *dir, const char *name, const char *commit, double ms, int64_t *run_out)
{
    char *path = rg_xasprintf("%s/%s", dir, name);
    rs_store *s = open_ok(path);
    int64_t run = begin_run(s, commit);
    int64_t ds = dataset(s, "am");
    record(s, run, ds, variant(s, "hgt", "inference", 16, 64), RS_OK, ms);   /* shared variant */
    record(s, run, ds, variant(s, "hgt", "inference", (int)(ms * 100), 64), RS_OK, ms * 2);
    record(s, run, dataset(s, name), variant(s, "rgat", "training", 16, 64), RS_WRONG_ANSWER, NAN);
    if (run_out) *run_out = run;
    rs_close(s);
    return path;
}

static void test_merge(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *a = make_db(dir, "a.db", "aaa", 1.0, NULL);
    int64_t run_b;
    char *b = make_db(dir, "b.db", "bbb", 2.0, &run_b);
    char *c = rg_xasprintf("%s/merged/c.db", dir);
    rs_store *dst = open_ok(c);
    rs_merge_stats st;
    rg_err err;
    for (int round = 0; round < 2; round++) {
        assert_int_equal(rs_merge(dst, a, &st, &err), 0);
        assert_int_equal(st.measurements_added, round ? 0 : 3);
        assert_int_equal(st.measurements_skipped, round ? 3 : 0);
        assert_int_equal(rs_merge(dst, b, &st, &err), 0);
        assert_int_equal(st.runs_added, round ? 0 : 1);
        assert_int_equal(st.runs_known, round ? 1 : 0);
        assert_int_equal(st.variants_added, round ? 0 : 1);   /* hgt tile 16 came with a.db */
        assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM measurements"), 6);
        assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM runs"), 2);
        assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM variants"), 4);
        assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM datasets"), 3);   /* am, a.db, b.db */
        assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM kernel_times"), 8);
        assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM metrics"), 4);
    }
    /* kernel rows follow their measurement through the id remapping */
    assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM kernel_times k JOIN measurements m ON m.id = k.measurement_id"
                                   " WHERE k.median_ns <> m.median_ms * 5e5"), 0);
    assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM measurements m JOIN runs r ON r.id = m.run_id"
                                   " WHERE m.git_commit <> r.git_commit"), 0);
    /* b's run goes on after the first merge: only its new rows come over, its end is copied */
    rs_store *sb = open_ok(b);
    record(sb, run_b, dataset(sb, "am"), variant(sb, "hgt", "inference", 99, 64), RS_OK, 5.0);
    assert_int_equal(rs_finish_run(sb, run_b, RS_RUN_FINISHED, &err), 0);
    rs_close(sb);
    assert_int_equal(rs_merge(dst, b, &st, &err), 0);
    assert_int_equal(st.measurements_added, 1);
    assert_int_equal(st.measurements_skipped, 3);
    assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM runs WHERE status = 'finished' AND git_commit = 'bbb'"), 1);
    /* refusals: itself, garbage, missing */
    assert_int_equal(rs_merge(dst, c, &st, &err), -1);
    assert_non_null(strstr(err.msg, "itself"));
    char *junk = tu_write_file(dir, "junk.db", "not a database at all, not at all, not at all, not at all, "
                                               "not at all, not at all, not at all, not at all\n");
    assert_int_equal(rs_merge(dst, junk, &st, &err), -1);
    assert_non_null(strstr(err.msg, "not an SQLite database"));
    assert_int_equal(rs_merge(dst, "/nonexistent.db", &st, &err), -1);
    rs_close(dst);
    /* the CLI, merging both again plus the junk: known rows skipped, junk reported, exit 1 */
    char *argv[] = {"merge", "--into", c, a, b, junk, NULL};
    assert_int_equal(rs_cli_merge(6, argv), 1);
    assert_int_equal(tu_sql_int(c, "SELECT count(*) FROM measurements"), 7);
    char *argv2[] = {"merge", a, NULL};
    assert_int_equal(rs_cli_merge(2, argv2), 2);   /* --into missing */
    free(a);
    free(b);
    free(c);
    free(junk);
    tu_rm_tree(dir);
}

/* ---- export ---- */

/* Minimal RFC 4180 reader: splits one record at *p into fields; returns the count. */
static int csv_record(const char **p, char fields[][512], int max)
{
    int n = 0;
    const char *s = *p;
    for (;;) {
        char *out = fields[n];
        size_t len = 0;
        if (*s == '"') {
            for (s++; !(*s == '"' && s[1] != '"'); s++) {
                assert_true(*s != 0);
                if (*s == '"') s++;
                if (len < 511) out[len++] = *s;
            }
            s++;
        } else {
            while (*s && *s != ',' && *s != '\r' && *s != '\n')
                if (len < 511) out[len++] = *s++;
                else s++;
        }
        out[len] = 0;
        n++;
        assert_true(n < max);
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s == '\r') s++;
        if (*s == '\n') s++;
        *p = s;
        return n;
    }
}

static int find_field(char names[][512], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return i;
    fail_msg("no column %s", name);
    return -1;
}

/* The precision of each measurement comes from its variant's config (no column stored):
 * variants without the mma key, as every one stored before it, are fp32; a text that is not a
 * config this build reads has none. */
static void test_export_precision(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/p.db", dir);
    rs_store *s = open_ok(path);
    int64_t run = begin_run(s, "p1");
    int64_t ds = dataset(s, "fb15k");
    static const char *const configs[] = {"{\"tile\":32,\"mma\":\"bf16\"}", "{\"tile\":16}",
                                          "{\"tile\":64,\"mma\":\"tf32\"}"};
    for (int i = 0; i < 3; i++) {
        rs_variant v = {.config_json = configs[i], .model = "rgcn", .task = "inference", .dim_in = 64, .dim_out = 64,
                        .heads = 1};
        rg_err err;
        int64_t id = rs_upsert_variant(s, &v, &err);
        if (id <= 0) fail_msg("%s", err.msg);
        record(s, run, ds, id, RS_OK, 1.0 + i);
    }
    record(s, run, ds, variant(s, "rgat", "inference", 16, 64), RS_OK, 5.0);
    char *buf;
    size_t len;
    FILE *mem = open_memstream(&buf, &len);
    rg_err err;
    assert_int_equal(rs_export(s, RS_CSV, mem, NULL, &err), 4);
    fclose(mem);
    static char head[64][512], row[64][512];
    const char *p = buf;
    int nh = csv_record(&p, head, 64);
    static const char *const want[] = {"bf16", "fp32", "tf32", ""};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(csv_record(&p, row, 64), nh);
        assert_string_equal(row[find_field(head, nh, "precision")], want[i]);
    }
    free(buf);
    rs_close(s);
    free(path);
    tu_rm_tree(dir);
}

static void test_export_csv_json(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/e.db", dir);
    rs_store *s = open_ok(path);
    int64_t run = begin_run(s, "e1");
    int64_t ds = dataset(s, "fb15k");
    record(s, run, ds, variant(s, "rgat", "inference", 16, 64), RS_OK, 0.1);
    record(s, run, ds, variant(s, "rgat", "inference", 32, 64), RS_COMPILE_ERROR, NAN);
    record(s, run, ds, variant(s, "hgt", "inference", 32, 64), RS_OK, 4.25);

    char *buf;
    size_t len;
    FILE *mem = open_memstream(&buf, &len);
    rg_err err;
    rs_filter f = {.model = "rgat"};
    assert_int_equal(rs_export(s, RS_CSV, mem, &f, &err), 2);
    fclose(mem);
    static char head[64][512], row[64][512];
    const char *p = buf;
    int nh = csv_record(&p, head, 64);
    assert_true(nh >= 30);
    assert_int_equal(csv_record(&p, row, 64), nh);
    assert_string_equal(row[find_field(head, nh, "median_ms")], "0.1");
    assert_string_equal(row[find_field(head, nh, "dataset")], "fb15k");
    assert_string_equal(row[find_field(head, nh, "compaction_ratio")], "0.4");
    assert_string_equal(row[find_field(head, nh, "config")],
                        "{\"model\":\"rgat\",\"task\":\"inference\",\"tile\":16,\"dims\":64,\"note\":\"a, \\\"b\\\"\"}");
    assert_string_equal(row[find_field(head, nh, "evidence")], "");
    assert_int_equal(csv_record(&p, row, 64), nh);   /* the quoted newline stays inside its field */
    assert_string_equal(row[find_field(head, nh, "status")], "compile_error");
    assert_string_equal(row[find_field(head, nh, "evidence")], "error: line 3, \"x\" undefined\nsecond line");
    assert_string_equal(row[find_field(head, nh, "median_ms")], "");
    assert_int_equal(*p, 0);
    free(buf);

    mem = open_memstream(&buf, &len);
    assert_int_equal(rs_export(s, RS_JSON, mem, NULL, &err), 3);
    fclose(mem);
    assert_int_equal(buf[0], '[');
    assert_non_null(strstr(buf, "\"config\":{\"model\":\"hgt\",\"task\":\"inference\",\"tile\":32"));
    assert_non_null(strstr(buf, "\"median_ms\":4.25"));
    assert_non_null(strstr(buf, "\"evidence\":\"error: line 3, \\\"x\\\" undefined\\nsecond line\""));
    assert_non_null(strstr(buf, "\"kernels\":[{\"kernel\":\"gemm_1\",\"category\":\"gemm\""));
    assert_non_null(strstr(buf, "\"metrics\":[{\"kernel\":\"gemm_1\",\"name\":\"sm__throughput\",\"value\":71.5"));
    assert_non_null(strstr(buf, "\"kernels\":[]"));
    free(buf);
    rs_close(s);

    /* CLI: atomic file output, format from the extension, usage errors */
    char *out = rg_xasprintf("%s/out.json", dir);
    char *argv[] = {"export", "--db", path, "--out", out, "--task", "inference", "--dataset", "fb15k", NULL};
    assert_int_equal(rs_cli_export(9, argv), 0);
    size_t n;
    char *text = tu_read_file(out, &n);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"dataset\":\"fb15k\""));
    free(text);
    char *argv2[] = {"export", "--db", path, "--fromat", "csv", NULL};
    assert_int_equal(rs_cli_export(5, argv2), 2);
    char *argv3[] = {"export", "--db", path, NULL};
    assert_int_equal(rs_cli_export(3, argv3), 2);   /* no format */
    char *argv4[] = {"export", "--db", path, "--format", "xml", NULL};
    assert_int_equal(rs_cli_export(5, argv4), 2);
    free(out);
    free(path);
    tu_rm_tree(dir);
}

/* ---- compare ---- */

static void test_compare(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/c.db", dir);
    rs_store *s = open_ok(path);
    const char *names[] = {"aifb", "mutag", "bgs", "am", "biokg"};
    int64_t ds[5];
    for (int i = 0; i < 5; i++) ds[i] = dataset(s, names[i]);
    int64_t fast = variant(s, "rgat", "inference", 16, 64), slow = variant(s, "rgat", "inference", 32, 64);
    int64_t base = begin_run(s, "base");
    record(s, base, ds[0], fast, RS_OK, 1.0);     /* aifb: +10% -> regression */
    record(s, base, ds[0], slow, RS_OK, 3.0);
    record(s, base, ds[1], fast, RS_OK, 2.0);     /* mutag: +3% -> ignored */
    record(s, base, ds[2], fast, RS_OK, 1.0);     /* bgs: -20% -> improvement */
    record(s, base, ds[3], fast, RS_OK, 1.0);     /* am: fails in head */
    int64_t head = begin_run(s, "head");
    record(s, head, ds[0], fast, RS_OK, 1.10);
    record(s, head, ds[0], slow, RS_OK, 1.3);     /* the best moved to another variant, still slower */
    record(s, head, ds[1], fast, RS_OK, 2.06);
    record(s, head, ds[2], fast, RS_OK, 0.8);
    record(s, head, ds[3], fast, RS_RUNTIME_FAULT, NAN);
    record(s, head, ds[4], fast, RS_OK, 7.0);     /* biokg: new */
    rs_comparison c;
    rg_err err;
    assert_int_equal(rs_compare(s, base, head, 0.05, &c, &err), 0);
    assert_int_equal(c.count[RS_CMP_REGRESSION], 1);
    assert_int_equal(c.count[RS_CMP_FAILED], 1);
    assert_int_equal(c.count[RS_CMP_IMPROVEMENT], 1);
    assert_int_equal(c.count[RS_CMP_SAME], 1);
    assert_int_equal(c.count[RS_CMP_NEW], 1);
    assert_int_equal(c.n, 5);
    assert_int_equal(c.rows[0].kind, RS_CMP_REGRESSION);
    assert_string_equal(c.rows[0].dataset, "aifb");
    assert_float_equal(c.rows[0].ratio, 1.1, 1e-9);
    assert_float_equal(c.rows[0].base_ms, 1.0, 1e-12);
    assert_int_equal(c.rows[1].kind, RS_CMP_FAILED);
    assert_string_equal(c.rows[1].dataset, "am");
    assert_int_equal(c.rows[2].kind, RS_CMP_IMPROVEMENT);
    assert_string_equal(c.rows[2].dataset, "bgs");
    for (size_t i = 0; i < c.n; i++)
        if (c.rows[i].kind == RS_CMP_SAME) assert_string_equal(c.rows[i].dataset, "mutag");
    rs_comparison_free(&c);
    /* a 15% threshold also absorbs the 10% */
    assert_int_equal(rs_compare(s, base, head, 0.15, &c, &err), 0);
    assert_int_equal(c.count[RS_CMP_REGRESSION], 0);
    rs_comparison_free(&c);
    assert_int_equal(rs_compare(s, base, 999, 0.05, &c, &err), -1);
    assert_int_equal(rs_compare(s, base, head, -1, &c, &err), -1);

    /* run specs */
    int64_t id;
    assert_int_equal(rs_resolve_run(s, "latest", &id, &err), 0);
    assert_int_equal(id, head);
    assert_int_equal(rs_resolve_run(s, "previous", &id, &err), 0);
    assert_int_equal(id, base);
    rs_run_row r;
    assert_int_equal(rs_get_run(s, base, &r, &err), 0);
    assert_int_equal(r.measurements, 5);
    char prefix[9];
    snprintf(prefix, sizeof prefix, "%.8s", r.uuid);
    assert_int_equal(rs_resolve_run(s, prefix, &id, &err), 0);
    assert_int_equal(id, base);
    assert_int_equal(rs_resolve_run(s, "zz", &id, &err), -1);
    assert_int_equal(rs_resolve_run(s, "99999999999", &id, &err), -1);
    rs_close(s);

    /* CLI: exit 1 when something regressed or failed; 2 on bad usage */
    char *argv[] = {"compare", "--db", path, "--base", prefix, "--head", "latest", NULL};
    assert_int_equal(rs_cli_compare(7, argv), 1);
    char *argv2[] = {"compare", "--db", path, "--threshold", "five", NULL};
    assert_int_equal(rs_cli_compare(5, argv2), 2);
    char *argv3[] = {"compare", "--db", path, "--base", "latest", "--threshold=5%", "--all", NULL};
    assert_int_equal(rs_cli_compare(7, argv3), 0);   /* head vs head: nothing changed */
    free(path);
    tu_rm_tree(dir);
}

/* A version-1 store (the committed H100 stores are): read as it is by a reader, which writes
 * nothing, and migrated by a writer, each old run a group of its own. */
static void test_version1_store_reads_and_migrates(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = rg_xasprintf("%s/v1.db", dir);
    char *cmd = rg_xasprintf("cp tests/fixtures/report.db '%s'", db);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    assert_int_equal(tu_sql_int(db, "PRAGMA user_version"), 1);
    rg_err err;
    rs_store *s = rs_open_read(db, &err);
    if (!s) fail_msg("%s", err.msg);
    rs_row *rows;
    size_t n;
    assert_int_equal(rs_query_measurements(s, NULL, &rows, &n, &err), 0);
    assert_true(n > 0);
    rs_rows_free(rows, n);
    rs_run_row r;
    assert_int_equal(rs_get_run(s, 1, &r, &err), 0);
    assert_string_equal(r.group, r.uuid);
    rs_selection latest;
    assert_int_equal(rs_resolve_selection(s, "latest", &latest, &err), 0);
    rs_close(s);
    assert_int_equal(tu_sql_int(db, "PRAGMA user_version"), 1);   /* the reader wrote nothing */
    s = rs_open(db, &err);
    if (!s) fail_msg("%s", err.msg);
    rs_close(s);
    assert_int_equal(tu_sql_int(db, "PRAGMA user_version"), RS_SCHEMA_VERSION);
    assert_int_equal(tu_sql_int(db, "SELECT count(*) FROM runs WHERE group_id <> uuid OR pid <> 0"), 0);
    assert_int_equal(tu_sql_int(db, "SELECT count(*) FROM claims"), 0);
    free(db);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_creation),
        cmocka_unit_test(test_version1_store_reads_and_migrates),
        cmocka_unit_test(test_garbage_db_untouched),
        cmocka_unit_test(test_newer_schema_refused),
        cmocka_unit_test(test_record_and_best),
        cmocka_unit_test(test_set_metric_replaces),
        cmocka_unit_test(test_resume_lookup),
        cmocka_unit_test(test_batch_all_or_nothing),
        cmocka_unit_test(test_two_concurrent_writers),
        cmocka_unit_test(test_kill_mid_sweep_leaves_complete_rows),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_export_csv_json), cmocka_unit_test(test_export_precision),
        cmocka_unit_test(test_compare),
    };
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
