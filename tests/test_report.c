/* Tests of `explore report`: the whole report from the committed fixture store (every figure a
 * valid image, readings checked against the store), skips, missing columns and tables, CLI errors. */
#include "tests/testutil.h"
#include "results/report.h"
#include "cli/rpcli.h"
#include "results/store.h"

#include <ftw.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define RPF_NO_MAIN
#include "tests/fixtures/make_report_fixture.c"

#define FIXTURE "tests/fixtures/report.db"

/* ---------------------------------------------------------------- helpers ---- */

static void copy_file(const char *from, const char *to)
{
    size_t n;
    char *data = tu_read_file(from, &n);
    if (!data) fail_msg("cannot read %s (run the tests from the repository root)", from);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    free(data);
}

/* A private copy of the fixture: opening a store writes WAL files beside it. */
static char *fixture_copy(const char *dir)
{
    char *p = rg_xasprintf("%s/store.db", dir);
    copy_file(FIXTURE, p);
    return p;
}

static void exec_sql(const char *db_path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A PNG file: signature, then an IHDR chunk with a positive width and height. */
static void assert_png(const char *path)
{
    size_t n;
    unsigned char *d = (unsigned char *)tu_read_file(path, &n);
    if (!d) fail_msg("%s: missing", path);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n < 33 || memcmp(d, sig, 8) != 0) fail_msg("%s: not a PNG (%zu bytes)", path, n);
    if (be32(d + 8) != 13 || memcmp(d + 12, "IHDR", 4) != 0) fail_msg("%s: no IHDR chunk first", path);
    if (be32(d + 16) == 0 || be32(d + 20) == 0) fail_msg("%s: empty image", path);
    if (be32(d + 16) < 600 || be32(d + 20) < 300) fail_msg("%s: %ux%u is too small to read", path, be32(d + 16), be32(d + 20));
    free(d);
}

static void assert_svg(const char *path)
{
    char *d = tu_read_file(path, NULL);
    if (!d) fail_msg("%s: missing", path);
    if (!strstr(d, "<svg") || !strstr(d, "</svg>")) fail_msg("%s: not a complete SVG", path);
    free(d);
}

static int exists(const char *dir, const char *stem, const char *ext)
{
    char *p = rg_xasprintf("%s/%s.%s", dir, stem, ext);
    int e = rg_file_exists(p);
    free(p);
    return e;
}

static void assert_figure_files(const char *out, int i)
{
    const char *stem = rp_figure_stem(i);
    char *png = rg_xasprintf("%s/%s.png", out, stem), *svg = rg_xasprintf("%s/%s.svg", out, stem);
    char *csv = rg_xasprintf("%s/data/%s.csv", out, stem);
    assert_png(png);
    assert_svg(svg);
    if (!rg_file_exists(csv)) fail_msg("%s: missing", csv);
    free(png);
    free(svg);
    free(csv);
}

static char *run_report(const char *db, const char *out, const char *gpu, rp_summary *s)
{
    rp_options o = {.db_path = db, .out_dir = out, .gpu = gpu, .quiet = 1};
    rg_err err;
    if (rp_build(&o, s, &err)) fail_msg("report failed: %s", err.msg);
    char *index = rg_xasprintf("%s/index.md", out);
    char *md = tu_read_file(index, NULL);
    free(index);
    assert_non_null(md);
    return md;
}

/* nclusters of one figure, as replot.sh passes it to gnuplot. */
static int figure_clusters(const char *out, const char *stem)
{
    char *path = rg_xasprintf("%s/data/replot.sh", out), *script = tu_read_file(path, NULL);
    if (!script) fail_msg("%s: missing", path);
    char *csv = rg_xasprintf("data/%s.csv", stem), *line = strstr(script, csv), *n = line ? strstr(line, "nclusters=") : NULL;
    if (!n) fail_msg("replot.sh passes no nclusters to %s", stem);
    int clusters = atoi(n + strlen("nclusters="));
    free(csv);
    free(script);
    free(path);
    return clusters;
}

/* Every dataset slot of every bar panel (panel -1: all of the figure's panels, else only that
 * one) holds a bar or a label saying why there is none: a reader never meets a blank slot. */
static void assert_no_empty_slot(const char *out, const char *stem, int only_panel)
{
    enum { MAXP = 16, MAXC = 32 };
    int clusters = figure_clusters(out, stem), seen[MAXP][MAXC] = {{0}}, rows[MAXP] = {0}, npanels = 0;
    assert_true(clusters > 0 && clusters <= MAXC);
    char *path = rg_xasprintf("%s/data/%s.csv", out, stem), *text = tu_read_file(path, NULL);
    if (!text) fail_msg("%s: missing", path);
    char *save = NULL;
    strtok_r(text, "\n", &save);   /* header: panel,x,value,base,halfwidth,series,label,xtic */
    for (char *line; (line = strtok_r(NULL, "\n", &save));) {
        char *f[8] = {0}, *p = line;
        for (int i = 0; i < 8; i++) {
            f[i] = p;
            p = p ? strchr(p, ',') : NULL;
            if (p) *p++ = 0;
        }
        int panel = atoi(f[0]);
        if (panel < 0 || panel >= MAXP || (only_panel >= 0 && panel != only_panel)) continue;
        long slot = lround(strtod(f[1], NULL));
        if (slot < 0 || slot >= clusters) fail_msg("%s: panel %d has a bar outside its %d slots", stem, panel, clusters);
        rows[panel]++;
        if (panel + 1 > npanels) npanels = panel + 1;
        if (isfinite(strtod(f[2], NULL)) || (f[6] && f[6][0])) seen[panel][slot] = 1;
    }
    for (int panel = only_panel >= 0 ? only_panel : 0; panel < npanels; panel++) {
        if (!rows[panel]) fail_msg("%s: panel %d is empty", stem, panel);
        for (int k = 0; k < clusters; k++)
            if (!seen[panel][k]) fail_msg("%s: panel %d leaves dataset slot %d of %d empty", stem, panel, k, clusters);
    }
    free(text);
    free(path);
}

/* The figures drawn as clustered bars: stem and the panel that holds bars (-1: all). */
static const struct {
    const char *stem;
    int panel;
} BAR_FIGURES[] = {{"02_baselines", -1}, {"03_ablation", -1}, {"05_memory", 1}, {"07_metrics", -1}, {"08_costmodel", 1}};

static void assert_no_empty_slots(const char *out)
{
    for (size_t i = 0; i < sizeof BAR_FIGURES / sizeof BAR_FIGURES[0]; i++)
        assert_no_empty_slot(out, BAR_FIGURES[i].stem, BAR_FIGURES[i].panel);
}

/* The geomean over datasets of (best U time / best C+R time) of one problem, straight from
 * the tables, to check the figure's reading independently of the report's queries. */
static double cr_speedup(const char *db_path, const char *model, const char *task)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    char *sql = sqlite3_mprintf(
        "SELECT d.name, min(CASE WHEN json_extract(v.config, '$.compact') = 'off' AND NOT json_extract(v.config, "
        "'$.reorder') THEN m.median_ms END), min(CASE WHEN json_extract(v.config, '$.compact') <> 'off' AND "
        "json_extract(v.config, '$.reorder') THEN m.median_ms END) FROM measurements m JOIN variants v ON v.id = "
        "m.variant_id JOIN datasets d ON d.id = m.dataset_id WHERE m.system = 'generated' AND m.status = 'ok' AND "
        "m.device_key LIKE 'Fixture GPU%%' AND v.model = %Q AND v.task = %Q AND v.dim_in = 64 GROUP BY d.name",
        model, task);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    double logs = 0;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        if (sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_type(st, 2) != SQLITE_NULL) {
            logs += log(sqlite3_column_double(st, 1) / sqlite3_column_double(st, 2));
            n++;
        }
    sqlite3_finalize(st);
    sqlite3_free(sql);
    sqlite3_close(db);
    assert_true(n > 0);
    return exp(logs / n);
}

/* ---------------------------------------------------------------- tests ---- */

/* The committed fixture is what the generator writes (same rows, same numbers). */
static void test_fixture_is_current(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *fresh = rg_xasprintf("%s/fresh.db", dir), *committed = fixture_copy(dir);
    rg_err err;
    if (rpf_write_fixture(fresh, &err)) fail_msg("%s", err.msg);
    struct stat st;
    assert_int_equal(stat(FIXTURE, &st), 0);
    assert_true(st.st_size < 300 * 1024);
    char *text[2];
    const char *paths[2] = {fresh, committed};
    for (int i = 0; i < 2; i++) {
        rs_store *s = rs_open_existing(paths[i], &err);
        if (!s) fail_msg("%s", err.msg);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        rs_filter all = {0};
        int64_t rows = rs_export(s, RS_JSON, f, &all, &err);
        fclose(f);
        rs_close(s);
        if (rows < 0) fail_msg("%s", err.msg);
        assert_true(rows >= 200 && rows <= 1000);   /* "a few hundred rows" */
        text[i] = buf;
    }
    if (strcmp(text[0], text[1]) != 0)
        fail_msg("tests/fixtures/report.db is stale: run `make report-fixture` and commit it");
    free(text[0]);
    free(text[1]);
    free(fresh);
    free(committed);
    tu_rm_tree(dir);
}

static void test_full_report(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir), *out = rg_xasprintf("%s/report", dir);
    rp_summary s;
    char *md = run_report(db, out, NULL, &s);
    assert_int_equal(s.drawn, RP_NFIGURES);
    assert_int_equal(s.skipped, 0);
    assert_non_null(strstr(s.device, "Fixture GPU"));
    for (int i = 0; i < RP_NFIGURES; i++) {
        assert_figure_files(out, i);
        char *img = rg_xasprintf("](%s.png)", rp_figure_stem(i)), *head = rg_xasprintf("## %d. %s", i + 1, rp_figure_title(i));
        if (!strstr(md, img) || !strstr(md, head)) fail_msg("index.md does not show figure %d (%s)", i + 1, rp_figure_stem(i));
        free(img);
        free(head);
    }
    /* the device with fewer rows is named, not mixed in */
    assert_non_null(strstr(md, "Other fixture GPU (sm_80) (4)"));
    /* the dataset table, in markdown too */
    assert_non_null(strstr(md, "| fb15k237 | 1 | 474 | 14.5K | 620K |"));
    /* figure 3's reading agrees with the store */
    char *want = rg_xasprintf("RGAT inference: C+R %.2fx over U (geomean)", cr_speedup(db, "rgat", "infer"));
    if (!strstr(md, want)) fail_msg("index.md lacks \"%s\"", want);
    free(want);
    /* RGAT training on am: U runs out of memory, so that row is normalized by C */
    assert_non_null(strstr(md, "| am* | 1.00 | OOM |"));
    /* HGT training on am: everything OOMs, baselines included */
    assert_non_null(strstr(md, "| hgt | train |"));
    assert_non_null(strstr(md, "the generated code ran out of memory on 1 problem"));
    assert_non_null(strstr(md, "C avoids U's out-of-memory in 1 case (e.g. RGAT training on am)"));
    assert_non_null(strstr(md, "Cost-model picks run"));
    assert_non_null(strstr(md, "2.34 for GEMM vs"));   /* time-weighted IPC of the fixture's counters */
    assert_no_empty_slots(out);
    /* the CSV behind a figure is real data: the heatmap cells of one dataset include the best (1) */
    char *csv_path = rg_xasprintf("%s/data/09_heatmaps.csv", out);
    char *csv = tu_read_file(csv_path, NULL);
    assert_non_null(strstr(csv, ",1,1.00\n"));
    free(csv);
    free(csv_path);
    /* replot.sh redraws the figures through a path relative to the report, not this checkout's */
    char *replot = rg_xasprintf("%s/data/replot.sh", out), *script = tu_read_file(replot, NULL);
    char *png = rg_xasprintf("%s/08_costmodel.png", out);
    assert_non_null(script);
    assert_non_null(strstr(script, "plots=${RGNN_PLOTS:-'../"));
    assert_int_equal(unlink(png), 0);
    char *cmd = rg_xasprintf("cd / && sh '%s' > /dev/null 2>&1", replot);
    assert_int_equal(system(cmd), 0);
    assert_true(rg_file_exists(png));
    free(cmd);
    free(png);
    free(script);
    free(replot);
    free(md);
    free(db);
    free(out);
    tu_rm_tree(dir);
}

/* Baselines and CUPTI counters measured on some datasets only (as on the H100 store): the bar
 * figures show the datasets that have them, not a row of blank slots, and a problem without a
 * baseline on a dataset shown says so. */
static void test_no_empty_slots(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir), *out = rg_xasprintf("%s/report", dir);
    static const char *const tables[] = {"kernel_times", "metrics"};
    for (int t = 0; t < 3; t++) {
        /* mutag: no baseline at all; fb15k237: none for training; aifb: no CUPTI counters */
        char *sql = rg_xasprintf(
            "DELETE FROM %s WHERE %s IN (SELECT m.id FROM measurements m JOIN datasets d ON d.id = m.dataset_id"
            " JOIN variants v ON v.id = m.variant_id WHERE m.system <> 'generated' AND (d.name = 'mutag'"
            " OR (d.name = 'fb15k237' AND v.task LIKE 'train%%')))",
            t < 2 ? tables[t] : "measurements", t < 2 ? "measurement_id" : "id");
        exec_sql(db, sql);
        free(sql);
    }
    exec_sql(db, "DELETE FROM metrics WHERE kernel <> '' AND measurement_id IN (SELECT m.id FROM measurements m"
                 " JOIN datasets d ON d.id = m.dataset_id WHERE d.name = 'aifb')");
    rp_summary s;
    char *md = run_report(db, out, NULL, &s);
    assert_int_equal(s.drawn, RP_NFIGURES);
    assert_no_empty_slots(out);
    assert_int_equal(figure_clusters(out, "02_baselines"), 3);   /* aifb, fb15k237, am */
    assert_int_equal(figure_clusters(out, "07_metrics"), 3);     /* mutag, fb15k237, am */
    char *csv_path = rg_xasprintf("%s/data/02_baselines.csv", out), *csv = tu_read_file(csv_path, NULL);
    assert_non_null(strstr(csv, ",no baseline,fb15k237\n"));
    free(csv);
    free(csv_path);
    free(md);
    free(db);
    free(out);
    tu_rm_tree(dir);
}

/* Figure 5a names each dataset once beside its points: with every dataset at the same entity
 * compaction ratio their points share one column, and the names must still not overlap
 * (boxes: 1.45 x units per character, 3.9 y units per line, as report.c sizes them). */
static void test_memory_names_do_not_overlap(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir), *out = rg_xasprintf("%s/report", dir);
    exec_sql(db, "UPDATE datasets SET compaction_ratio = 0.5");
    rp_summary s;
    free(run_report(db, out, NULL, &s));
    char *path = rg_xasprintf("%s/data/05_memory.csv", out), *text = tu_read_file(path, NULL);
    assert_non_null(text);
    int leader = strstr(text, "\n3,") != NULL;   /* a name moved away from its points has a leader line */
    double x0[16], x1[16], y0[16], y1[16];
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "2,", 2) != 0) continue;
        double x, y;
        char name[64];
        assert_int_equal(sscanf(line, "2,%lf,%lf,NaN,NaN,0,%63[^,],", &x, &y, name), 3);
        assert_true(n < 16);
        double w = (double)strlen(name) * 1.45 + 1;
        x0[n] = x - w / 2, x1[n] = x + w / 2, y0[n] = y - 1.95, y1[n] = y + 1.95;
        for (int k = 0; k < n; k++)
            if (x0[n] < x1[k] && x0[k] < x1[n] && y0[n] < y1[k] && y0[k] < y1[n])
                fail_msg("figure 5: the name %s overlaps another (%s)", name, line);
        n++;
    }
    assert_int_equal(n, 4);   /* each dataset named once */
    assert_true(leader);
    free(text);
    free(path);
    free(db);
    free(out);
    tu_rm_tree(dir);
}

/* Without predictions figure 8 still draws measured times only, and says why. */
/* Cell `col` (1: the first after the dataset) of a dataset's row in the ablation table of a panel. */
static double ablation_cell(const char *md, const char *panel, const char *dataset, int col)
{
    char *head = rg_xasprintf("**%s**: speed-up over U", panel), *row = rg_xasprintf("\n| %s |", dataset);
    const char *at = strstr(md, head);
    if (!at || !(at = strstr(at, row))) fail_msg("index.md has no row %s in the %s table", dataset, panel);
    at += strlen(row);
    for (int k = 1; k < col; k++) at = strchr(at, '|') + 1;
    double v = strtod(at, NULL);
    free(head);
    free(row);
    return v;
}

/* The best fixed config of a dataset is chosen on the OTHER datasets (the static list's one
 * definition): a config made 10^6 times faster on aifb alone would win an in-sample choice, and
 * changes aifb's oracle, but not aifb's best fixed bar. */
static void test_best_fixed_is_out_of_sample(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir), *out = rg_xasprintf("%s/before", dir);
    rp_summary s;
    char *md = run_report(db, out, NULL, &s);
    double oracle = ablation_cell(md, "RGAT inference", "aifb", 4), fixed = ablation_cell(md, "RGAT inference", "aifb", 5);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    const char *boost =
        "UPDATE measurements SET median_ms = median_ms * 1e-6, min_ms = min_ms * 1e-6, max_ms = max_ms * 1e-6"
        " WHERE (variant_id, dataset_id) = (SELECT m.variant_id, m.dataset_id FROM measurements m"
        "  JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
        "  WHERE v.model = 'rgat' AND v.task LIKE 'inf%' AND d.name = 'aifb' AND m.status = 'ok'"
        "  AND m.system = 'generated' AND v.dim_in = 64 AND v.config LIKE '%\"compact\":\"direct\"%'"
        "  ORDER BY m.median_ms DESC LIMIT 1)";
    char *msg = NULL;
    if (sqlite3_exec(h, boost, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s", msg);
    assert_true(sqlite3_changes(h) > 0);
    sqlite3_close(h);
    char *out2 = rg_xasprintf("%s/after", dir), *md2 = run_report(db, out2, NULL, &s);
    assert_true(ablation_cell(md2, "RGAT inference", "aifb", 4) > 1000 * oracle);
    assert_float_equal(ablation_cell(md2, "RGAT inference", "aifb", 5), fixed, 0);
    free(md);
    free(md2);
    free(out);
    free(out2);
    free(db);
    tu_rm_tree(dir);
}

static void test_without_cost_model(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir), *out = rg_xasprintf("%s/report", dir);
    exec_sql(db, "DELETE FROM metrics WHERE name = 'predicted_ms'");
    rp_summary s;
    char *md = run_report(db, out, NULL, &s);
    assert_int_equal(s.drawn, RP_NFIGURES);
    assert_non_null(strstr(md, "No cost model fitted"));
    assert_null(strstr(md, "cost-model pick |"));
    assert_figure_files(out, 7);
    free(md);
    free(db);
    free(out);
    tu_rm_tree(dir);
}

/* A device with little data: the figures it cannot support are skipped, saying what they need. */
static void test_sparse_device_skips(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir), *out = rg_xasprintf("%s/report", dir);
    rp_summary s;
    char *md = run_report(db, out, "other", &s);
    assert_non_null(strstr(s.device, "Other fixture GPU"));
    assert_true(s.skipped >= 4);
    assert_int_equal(s.drawn + s.skipped, RP_NFIGURES);
    for (int i = 0; i < RP_NFIGURES; i++) {
        if (s.figure_drawn[i]) {
            assert_figure_files(out, i);
            continue;
        }
        char *line = rg_xasprintf("*Figure %d (%s) skipped:* needs ", i + 1, rp_figure_stem(i));
        if (!strstr(md, line)) fail_msg("index.md lacks \"%s\"", line);
        free(line);
        assert_false(exists(out, rp_figure_stem(i), "png"));
    }
    assert_false(s.figure_drawn[1]);   /* no baselines measured there */
    assert_false(s.figure_drawn[6]);   /* no CUPTI counters */
    free(md);
    free(db);
    free(out);
    tu_rm_tree(dir);
}

static void test_empty_store(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = rg_xasprintf("%s/empty.db", dir), *out = rg_xasprintf("%s/report", dir);
    rg_err err;
    rs_store *st = rs_open(db, &err);
    assert_non_null(st);
    rs_close(st);
    rp_summary s;
    char *md = run_report(db, out, NULL, &s);
    assert_int_equal(s.drawn, 0);
    assert_non_null(strstr(md, "no measurements yet"));
    free(md);
    free(db);
    free(out);
    tu_rm_tree(dir);
}

static void expect_failure(const char *db, const char *gpu, const char *needle)
{
    char *dir = tu_tmpdir(), *out = rg_xasprintf("%s/report", dir);
    rp_options o = {.db_path = db, .out_dir = out, .gpu = gpu, .quiet = 1};
    rg_err err;
    assert_int_equal(rp_build(&o, NULL, &err), -1);
    if (!strstr(err.msg, needle)) fail_msg("error \"%s\" does not mention \"%s\"", err.msg, needle);
    free(out);
    tu_rm_tree(dir);
}

static void test_missing_column_fails(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir);
    exec_sql(db, "ALTER TABLE measurements DROP COLUMN peak_mem_bytes");
    expect_failure(db, NULL, "table measurements has no column peak_mem_bytes");
    exec_sql(db, "ALTER TABLE datasets DROP COLUMN compaction_ratio");
    expect_failure(db, NULL, "no column");
    free(db);
    tu_rm_tree(dir);
}

static void test_missing_table_fails(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir);
    exec_sql(db, "DROP TABLE kernel_times");
    expect_failure(db, NULL, "damaged: table 'kernel_times' is missing");
    free(db);
    tu_rm_tree(dir);
}

static void test_bad_inputs(void **state)
{
    TU_REQUIRE_PROGRAM("gnuplot");
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_copy(dir), *missing = rg_xasprintf("%s/none.db", dir);
    expect_failure(db, "no-such-gpu", "no measurements on a GPU matching 'no-such-gpu'");
    expect_failure(missing, NULL, "no such results database");
    char *text = tu_write_file(dir, "text.db", "not a database\n");
    expect_failure(text, NULL, "text.db");
    rp_options o = {.db_path = db, .out_dir = dir, .plots_dir = dir, .quiet = 1};
    rg_err err;
    assert_int_equal(rp_build(&o, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "common.gp"));
    /* CLI: usage errors exit 2, a missing --out included */
    char *argv1[] = {"report", "--db", db, NULL};
    assert_int_equal(rp_cli_main(3, argv1), 2);
    char *argv2[] = {"report", "--out", dir, "--frobnicate", NULL};
    assert_int_equal(rp_cli_main(4, argv2), 2);
    char *argv3[] = {"report", "--out", NULL};
    assert_int_equal(rp_cli_main(2, argv3), 2);
    free(text);
    free(missing);
    free(db);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_is_current),
        cmocka_unit_test(test_full_report),
        cmocka_unit_test(test_no_empty_slots),
        cmocka_unit_test(test_memory_names_do_not_overlap),
        cmocka_unit_test(test_best_fixed_is_out_of_sample),
        cmocka_unit_test(test_without_cost_model),
        cmocka_unit_test(test_sparse_device_skips),
        cmocka_unit_test(test_empty_store),
        cmocka_unit_test(test_missing_column_fails),
        cmocka_unit_test(test_missing_table_fails),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
