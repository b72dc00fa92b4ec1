/* Tests of `explore prune --keep-latest-commit` (rs_prune_superseded) on a small store swept by
 * the simulated backend at two commits: what stays is what the cost-model fit reads. */
#include "tests/testutil.h"
#include "explorer/costmodel.h"
#include "explorer/sweep.h"
#include "results/store.h"
#include "cli/rscli.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char SPACE[] = "compact: off direct\n"
                            "reorder: off on\n"
                            "tile: 16 64\n"
                            "coarsen: 1 2 4\n";   /* 24 points */
static const char *DATASETS[2] = {"synth:nodes=600,edges=3000,ntypes=2,etypes=3,ratio=0.4",
                                  "synth:nodes=800,edges=4000,ntypes=3,etypes=4,ratio=0.5"};

/* Sweeps one problem at a commit, measuring at most `budget` configs (0: all). */
static void sweep(const char *dir, const char *db, const char *space, const char *commit, int dataset, int budget)
{
    xs_options o;
    xs_options_default(&o);
    o.db = db;
    o.best_dir = dir;
    o.space = space;
    o.backend = "sim";
    o.commit = commit;
    o.progress = XS_PROGRESS_OFF;
    o.quiet = 1;
    o.timeout_s = 10;
    o.budget = budget;
    xb_problem p;
    memset(&p, 0, sizeof p);
    snprintf(p.model, sizeof p.model, "rgat");
    snprintf(p.dataset, sizeof p.dataset, "%s", DATASETS[dataset]);
    snprintf(p.task, sizeof p.task, "infer");
    p.dim_in = p.dim_out = 16;
    p.heads = 1;
    xs_summary sum;
    rg_err err;
    if (xs_sweep(&o, &p, &sum, &err)) fail_msg("sweep failed: %s", err.msg);
}

/* The measurement ids the cost-model fit trains on, sorted. */
static int64_t *fit_ids(const char *db, int *n)
{
    cm_set set;
    cm_filter f = {0};
    rg_err err;
    if (cm_set_load(db, &f, &set, &err)) fail_msg("%s", err.msg);
    int64_t *ids = rg_xcalloc((size_t)set.nsamples + 1, sizeof *ids);
    for (int i = 0; i < set.nsamples; i++) ids[i] = set.samples[i].measurement_id;
    *n = set.nsamples;
    cm_set_free(&set);
    for (int i = 1; i < *n; i++)   /* insertion sort: a few dozen ids */
        for (int k = i; k > 0 && ids[k - 1] > ids[k]; k--) {
            int64_t t = ids[k];
            ids[k] = ids[k - 1];
            ids[k - 1] = t;
        }
    return ids;
}

static int64_t count(const char *db, const char *sql) { return tu_sql_int(db, sql); }

static void exec_sql(const char *db_path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int prune_cli(const char *db, int with_rule)
{
    char *argv[] = {"prune", "--db", (char *)db, with_rule ? "--keep-latest-commit" : NULL, NULL};
    return rs_cli_prune(with_rule ? 4 : 3, argv);
}

static void test_prune_keeps_what_the_fit_reads(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = rg_xasprintf("%s/results.db", dir), *space = tu_write_file(dir, "space.txt", SPACE);
    /* dataset 0: "old" sweeps all 24 configs, then "new" re-measures 3 of them: old stays the
     * problem's commit. dataset 1: both sweep all 24: the newer commit replaces the older. */
    sweep(dir, db, space, "old", 0, 0);
    sweep(dir, db, space, "new", 0, 3);
    sweep(dir, db, space, "old", 1, 0);
    sweep(dir, db, space, "new", 1, 0);
    int n_before, n_after;
    int64_t *before = fit_ids(db, &n_before);
    assert_int_equal(n_before, 48);
    int64_t total = count(db, "SELECT count(*) FROM measurements");
    int64_t superseded = count(db, "SELECT count(*) FROM measurements m JOIN datasets d ON d.id = m.dataset_id"
                                   " WHERE (d.name LIKE '%nodes=600%' AND m.git_commit = 'new')"
                                   " OR (d.name LIKE '%nodes=800%' AND m.git_commit = 'old')");
    assert_int_equal(superseded, 27);
    /* a CUPTI profile of a superseded row: kept, it is not measured again */
    exec_sql(db, "INSERT INTO metrics (measurement_id, kernel, name, unit, value) SELECT min(m.id), 'gemm_1',"
                 " 'sm__throughput.avg.pct_of_peak_sustained_elapsed', '%', 42 FROM measurements m JOIN datasets d"
                 " ON d.id = m.dataset_id WHERE d.name LIKE '%nodes=800%' AND m.git_commit = 'old'");
    superseded--;
    long long size_before = file_size(db);

    assert_int_equal(prune_cli(db, 1), 0);

    int64_t *after = fit_ids(db, &n_after);
    assert_int_equal(n_after, n_before);
    assert_memory_equal(after, before, (size_t)n_before * sizeof *before);
    assert_int_equal(count(db, "SELECT count(*) FROM measurements"), total - superseded);
    assert_int_equal(count(db, "SELECT count(*) FROM measurements m JOIN datasets d ON d.id = m.dataset_id"
                               " WHERE d.name LIKE '%nodes=600%' AND m.git_commit = 'new'"), 0);
    assert_int_equal(count(db, "SELECT count(*) FROM measurements m JOIN datasets d ON d.id = m.dataset_id"
                               " WHERE d.name LIKE '%nodes=800%' AND m.git_commit = 'old'"), 1);
    assert_int_equal(count(db, "SELECT count(*) FROM metrics WHERE kernel = 'gemm_1'"), 1);
    /* no orphans: the kernel times and metrics of the removed rows went with them */
    assert_int_equal(count(db, "SELECT count(*) FROM kernel_times WHERE measurement_id NOT IN"
                               " (SELECT id FROM measurements)"), 0);
    assert_int_equal(count(db, "SELECT count(*) FROM metrics WHERE measurement_id NOT IN (SELECT id FROM measurements)"),
                     0);
    assert_true(count(db, "SELECT count(*) FROM kernel_times") > 0);
    /* the runs left empty are gone, the others stay */
    assert_int_equal(count(db, "SELECT count(*) FROM runs WHERE id NOT IN (SELECT run_id FROM measurements)"), 0);
    assert_int_equal(count(db, "SELECT count(*) FROM runs"), 3);   /* new@0 emptied; old@1 keeps its profiled row */
    if (file_size(db) >= size_before) fail_msg("not compacted: %lld -> %lld bytes", size_before, file_size(db));

    /* nothing left to prune: a second run changes nothing */
    rg_err err;
    rs_store *s = rs_open_existing(db, &err);
    assert_non_null(s);
    rs_prune_stats st;
    assert_int_equal(rs_prune_superseded(s, &st, &err), 0);
    rs_close(s);
    assert_int_equal(st.measurements_removed, 0);
    assert_int_equal(st.measurements_kept, total - superseded);
    free(before);
    free(after);
    free(space);
    free(db);
    tu_rm_tree(dir);
}

/* A deleting command needs its rule named; a missing store is bad input, and nothing is made. */
static void test_prune_cli_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = rg_xasprintf("%s/none.db", dir);
    assert_int_equal(prune_cli(db, 0), 2);
    assert_int_equal(prune_cli(db, 1), 2);
    assert_int_equal(file_size(db), -1);
    free(db);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prune_keeps_what_the_fit_reads),
        cmocka_unit_test(test_prune_cli_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
