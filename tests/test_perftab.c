/* Tests of `explore perf-tables` (results/perftab): the same store contents give the same bytes
 * (twice, and from two stores built at different times in different folders), and the numbers. */
#include "tests/testutil.h"
#include "common/json.h"
#include "results/perftab.h"
#include "results/store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GPU "Test GPU"

typedef struct fixture {
    rs_store *s;
    int64_t run;
    const char *store;   /* the next variants' store key (NULL: float32 storage) */
} fixture;

/* One measurement of a variant with config JSON `json` (dims 64, HEADS heads) on GPU. */
static void record(fixture *fx, const char *json, const char *model, const char *task, int heads, const char *dataset,
                   const char *gpu, const char *system, const char *layer, rs_status st, double ms,
                   const rs_metric *metrics, size_t nmetrics)
{
    rg_err err;
    rs_variant v = {.config_json = json, .model = model, .task = task, .dim_in = 64, .dim_out = 64, .heads = heads};
    int64_t ds = rs_upsert_dataset(fx->s, dataset, NULL, &err);
    assert_true(ds > 0);
    char *dev = rs_device_key(gpu, 90);
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = fx->run, m.dataset_id = ds, m.device_key = dev;
    m.system = system, m.layer = layer, m.status = st, m.median_ms = ms;
    tu_store_measurement(fx->s, &v, &m, NULL, 0, metrics, nmetrics);
    free(dev);
}

static void put(fixture *fx, const char *system, const char *layer, const char *model, const char *task,
                const char *dataset, int tag, rs_status st, double ms, const rs_metric *metrics, size_t nmetrics)
{
    rgj_writer w = {0};
    rgj_begin_object(&w);
    rgj_kv_string(&w, "system", system);
    rgj_kv_string(&w, "model", model);
    rgj_kv_string(&w, "task", task);
    rgj_kv_int(&w, "tag", tag);
    if (fx->store) rgj_kv_string(&w, "store", fx->store);
    rgj_end_object(&w);
    char *json = rgj_finish(&w);
    record(fx, json, model, task, 1, dataset, GPU, system, layer, st, ms, metrics, nmetrics);
    free(json);
}

static int64_t begin(fixture *fx, const char *commit)
{
    rg_err err;
    rs_run_info info = {.commit = commit, .host = "testhost", .gpu_name = GPU, .sm = 90};
    return fx->run = rs_begin_run(fx->s, &info, &err);
}

/* A new store at `path`, no run begun yet. */
static fixture open_fixture(const char *path)
{
    rg_err err;
    fixture fx = {rs_open(path, &err), 0, NULL};
    if (!fx.s) fail_msg("%s: %s", path, err.msg);
    return fx;
}

/* Two commits; a generated problem with floor metrics, one without; a cuBLAS layer with a span,
 * PyG (an imported row without a commit, an OOM), the equal-work torch rows. */
static void make_store(const char *path)
{
    fixture fx = open_fixture(path);
    assert_true(begin(&fx, "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") > 0);
    put(&fx, "generated", "", "rgat", "infer", "aifb", 1, RS_OK, 2.0, NULL, 0);
    put(&fx, "generated", "", "rgcn", "infer", "aifb", 1, RS_OK, 0.5, NULL, 0);
    put(&fx, "pyg", "RGATConv", "rgat", "infer", "aifb", 2, RS_OK, 8.0, NULL, 0);
    put(&fx, "cublas-seg", "RGAT", "rgat", "infer", "aifb", 3, RS_OK, 3.0,
        (rs_metric[]){{.name = "span_ms", .unit = "ms", .value = 3.5}}, 1);
    assert_true(begin(&fx, "unknown") > 0);
    put(&fx, "pyg", "RGCNConv", "rgcn", "infer", "aifb", 2, RS_OK, 5.0, NULL, 0);
    put(&fx, "pyg", "FastRGCNConv", "rgcn", "infer", "aifb", 4, RS_OOM, NAN, NULL, 0);
    assert_true(begin(&fx, "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") > 0);
    /* the best rgat variant now (1.0 ms, span 1.25), with its floor: bytes 3e6 at 3e12 B/s = 1 us,
     * flops 1e9 at 5e13 flop/s = 20 us, so the floor is 0.02 ms and the span 62.5x it; its kernels
     * moved 1.5 + 0.75 GB to and from DRAM (--metrics): 2.25 GB in 1.0 ms is 75% of 3e12 B/s; its gather
     * floor is 0.5 ms, the span 2.5x it */
    const rs_metric floor[] = {
        {.name = "span_ms", .unit = "ms", .value = 1.25}, {.name = "floor_bytes", .unit = "B", .value = 3e6},
        {.name = "floor_flops", .unit = "flop", .value = 1e9}, {.name = "ceil_copy_Bps", .unit = "B/s", .value = 3e12},
        {.name = "ceil_l2_Bps", .unit = "B/s", .value = 2e13}, {.name = "ceil_fp32_flops", .unit = "flop/s", .value = 5e13},
        {.name = "l2_bytes", .unit = "B", .value = 50e6}, {.name = "gather_floor_ms", .unit = "ms", .value = 0.5},
        {.kernel = "gemm_1", .name = "dram__bytes_read.sum", .unit = "byte", .value = 1e9},
        {.kernel = "trav_2", .name = "dram__bytes_read.sum", .unit = "byte", .value = 0.5e9},
        {.kernel = "trav_2", .name = "dram__bytes_write.sum", .unit = "byte", .value = 0.75e9},
        {.kernel = "trav_2", .name = "sm__throughput.avg.pct_of_peak_sustained_elapsed", .unit = "%", .value = 40},
    };
    put(&fx, "generated", "", "rgat", "infer", "aifb", 5, RS_OK, 1.0, floor, sizeof floor / sizeof floor[0]);
    put(&fx, "generated", "", "rgat", "infer", "aifb", 6, RS_WRONG_ANSWER, NAN, NULL, 0);
    put(&fx, "torch-compile", "equal", "rgat", "infer", "aifb", 7, RS_OK, 4.0, NULL, 0);
    put(&fx, "torch-compile", "equal", "rgat", "infer", "aifb", 8, RS_OK, 5.0, NULL, 0);
    /* a faster bf16-storage variant: its own row in the best table, never against a baseline */
    fx.store = "bf16";
    put(&fx, "generated", "", "rgat", "infer", "aifb", 9, RS_OK, 0.5,
        (rs_metric[]){{.name = "span_ms", .unit = "ms", .value = 0.6}}, 1);
    rs_close(fx.s);
}

static char *tables_of(const char *const *stores, int n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    rg_err err;
    if (pt_write(stores, n, mem, &err)) fail_msg("%s", err.msg);
    fclose(mem);
    return text;
}

/* The line of the table that starts with PREFIX (NULL when none). */
static const char *line_of(const char *text, const char *prefix)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, prefix, strlen(prefix))) return p;
    return NULL;
}

static int line_has(const char *text, const char *prefix, const char *what)
{
    const char *l = line_of(text, prefix);
    if (!l) return 0;
    size_t n = strchr(l, '\n') ? (size_t)(strchr(l, '\n') - l) : strlen(l);
    char *copy = rg_xasprintf("%.*s", (int)n, l);
    int has = strstr(copy, what) != NULL;
    free(copy);
    return has;
}

/* Each store made in its own folder at its own time (other uuids, other timestamps), named by
 * the same relative path: the text must be the same bytes, twice and for both. */
static void test_deterministic(void **state)
{
    (void)state;
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    char *dirs[2] = {tu_tmpdir(), tu_tmpdir()};
    char *text[3];
    const char *stores[] = {"store.db"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(chdir(dirs[i]), 0);
        make_store("store.db");
        if (i == 0) usleep(20000);   /* later timestamps in the second store */
        text[i] = tables_of(stores, 1);
        if (i == 0) text[2] = tables_of(stores, 1);
    }
    assert_int_equal(chdir(cwd), 0);
    assert_string_equal(text[0], text[2]);
    assert_string_equal(text[0], text[1]);
    assert_null(strstr(text[0], dirs[0]));
    assert_null(strstr(text[0], "testhost"));
    for (int i = 0; i < 3; i++) free(text[i]);
    tu_rm_tree(dirs[0]), tu_rm_tree(dirs[1]);
}

/* A caller's section comes after the query tables and before the queries; without any, the text
 * is pt_write's. */
static void test_sections(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = rg_xasprintf("%s/store.db", dir);
    make_store(db);
    const char *stores[] = {db};
    pt_section sec = {"A computed section", "What it shows.", "\n| x |\n|---|\n| 1 |\n"};
    char *text = NULL, *none = NULL;
    size_t len = 0;
    rg_err err;
    FILE *mem = open_memstream(&text, &len);
    if (pt_write_sections(stores, 1, &sec, 1, mem, &err)) fail_msg("%s", err.msg);
    fclose(mem);
    mem = open_memstream(&none, &len);
    if (pt_write_sections(stores, 1, NULL, 0, mem, &err)) fail_msg("%s", err.msg);
    fclose(mem);
    char *plain = tables_of(stores, 1);
    assert_string_equal(none, plain);
    const char *at = strstr(text, "\n### A computed section\n\nWhat it shows.\n\n| x |\n|---|\n| 1 |\n");
    assert_non_null(at);
    assert_true(at > strstr(text, "### Generated code against each baseline, per problem"));
    assert_true(at < strstr(text, "\n## Queries\n"));
    free(text), free(none), free(plain), free(db);
    tu_rm_tree(dir);
}

static void test_numbers(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/s.db", dir);
    make_store(path);
    const char *stores[] = {path};
    char *t = tables_of(stores, 1);
    /* best: the 1.0 ms variant of the second commit, its span over a 0.02 ms floor and a 0.5 ms gather floor */
    assert_true(line_has(t, "| rgat | infer | aifb | 64,64/1 | fp32 | 2 | 1.0000 | 1.2500 | 0.0200 | 0.0200 | 62.5 |"
                            " 0.5000 | 2.50 | 2.250 | 75.0% |", "2222222"));
    /* one row per precision */
    assert_non_null(line_of(t, "| rgat | infer | aifb | 64,64/1 | fp32+bf16-store | 1 | 0.5000 | 0.6000 | - | - | - | - | - | - |"));
    /* a problem without floor metrics */
    assert_non_null(line_of(t, "| rgcn | infer | aifb | 64,64/1 | fp32 | 1 | 0.5000 | - | - | - | - | - | - | - | - |"));
    /* baselines: spans where the generated row has one (cuBLAS span 3.5 / 1.25), else wall over span;
     * only float32 variants stand against them (not the 0.6 ms bf16-storage one) */
    assert_non_null(line_of(t, "| rgat | infer | aifb | 64,64/1 | 1.0000 | 1.2500 | cublas-seg RGAT | 3.0000 | 3.5000 | 2.80x | span / span |"));
    assert_non_null(line_of(t, "| rgat | infer | aifb | 64,64/1 | 1.0000 | 1.2500 | pyg RGATConv | 8.0000 | - | 6.40x | wall / span |"));
    assert_non_null(line_of(t, "| rgat | infer | aifb | 64,64/1 | 1.0000 | 1.2500 | torch-compile equal | 4.0000 | - | 3.20x | wall / span |"));
    /* no generated span: wall time over the kernel sum; an OOM without a ratio */
    assert_non_null(line_of(t, "| rgcn | infer | aifb | 64,64/1 | 0.5000 | - | pyg RGCNConv | 5.0000 | - | 10.00x | wall / sum |"));
    assert_non_null(line_of(t, "| rgcn | infer | aifb | 64,64/1 | 0.5000 | - | pyg FastRGCNConv | OOM | - | - | - |"));
    /* the geomean of one dataset is its ratio; counts with the failed attempt */
    assert_non_null(line_of(t, "| rgat | infer | 64,64/1 | torch-compile equal | wall / span | 1 | 3.20x |"));
    assert_non_null(line_of(t, "| generated | infer | 5 | 4 | 2 | 2 | 2 |"));
    /* commits oldest first, the imported rows named; the PyG classes' extra work noted */
    assert_non_null(strstr(t, "oldest first: `1111111`, `2222222`; rows imported without a commit."));
    assert_non_null(strstr(t, "- `pyg RGATConv`: PyG 2.8 RGATConv: attention vectors shared across relations"));
    assert_non_null(strstr(t, "- `pyg`: PyG training"));
    free(t);
    free(path);
    tu_rm_tree(dir);
}

/* One generated float32 row of HGT inference on aifb (4 heads) at a tile/coarsening/launch-bounds schedule. */
static void put_on(fixture *fx, const char *gpu, int tile, int coarsen, int lb, double ms)
{
    char *json = rg_xasprintf("{\"compact\":\"direct\",\"tile\":%d,\"coarsen\":%d,\"lb\":%s}", tile, coarsen,
                              lb ? "true" : "false");
    record(fx, json, "hgt", "infer", 4, "aifb", gpu, "generated", "", RS_OK, ms, NULL, 0);
    free(json);
}

static void put_schedule(fixture *fx, int tile, int coarsen, int lb, double ms) { put_on(fx, GPU, tile, coarsen, lb, ms); }

/* sizes: the winner's schedule, the fixed corner against it, and the axes it sits at the edge of. */
static void test_sizes(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/z.db", dir);
    fixture fx = open_fixture(path);
    assert_true(begin(&fx, "3333333ccccccccccccccccccccccccccccccccc") > 0);
    static const int tiles[] = {16, 32, 64}, coarsens[] = {2, 4, 8};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) put_schedule(&fx, tiles[i], coarsens[j], 0, 1.0 + 0.1 * i + 0.01 * j);
    put_schedule(&fx, 16, 4, 1, 0.5);   /* the winner: smallest tile, coarsening inside */
    rs_close(fx.s);
    const char *stores[] = {path};
    char *t = tables_of(stores, 1);
    assert_non_null(line_of(t, "| hgt | infer | aifb | 64,64/4 | 10 | 16 | 4 | on | 0.5000 | 1.2100 | 2.42x | tile=min(16) |"));
    free(t);
    free(path);
    tu_rm_tree(dir);
}

/* transfer: the variant best on one GPU, timed on the other, against that one's best of the shared points. */
static void test_transfer(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/t.db", dir);
    fixture fx = open_fixture(path);
    assert_true(begin(&fx, "4444444ddddddddddddddddddddddddddddddddd") > 0);
    put_on(&fx, "GPU A", 16, 2, 0, 1.0);   /* A's best ... */
    put_on(&fx, "GPU A", 32, 2, 0, 1.5);
    put_on(&fx, "GPU A", 64, 2, 0, 2.0);   /* ... and a point only A measured */
    put_on(&fx, "GPU B", 16, 2, 0, 0.9);   /* A's best on B: 0.9, B's best of the shared points: 0.6 */
    put_on(&fx, "GPU B", 32, 2, 0, 0.6);
    put_on(&fx, "GPU B", 16, 4, 0, 0.1);   /* only B: not an oracle of the shared points */
    rs_close(fx.s);
    const char *stores[] = {path};
    char *text = tables_of(stores, 1);
    assert_non_null(line_of(text, "| GPU A -> GPU B | hgt | infer | aifb | 64,64/4 | 2 | 0.9000 | 0.6000 | 1.500x |"));
    assert_non_null(line_of(text, "| GPU B -> GPU A | hgt | infer | aifb | 64,64/4 | 2 | 1.5000 | 1.0000 | 1.500x |"));
    assert_non_null(line_of(text, "| GPU A -> GPU B | geomean |  |  |  | 2 | - | - | 1.500x | 1 problems |"));
    free(text);
    free(path);
    tu_rm_tree(dir);
}

/* One generated RGAT training row on aifb of config JSON `json`, with its span. */
static void put_launch(fixture *fx, const char *json, double sum_ms, double span_ms)
{
    const rs_metric span[] = {{.name = "span_ms", .unit = "ms", .value = span_ms}};
    record(fx, json, "rgat", "train", 1, "aifb", GPU, "generated", "", RS_OK, sum_ms, span, 1);
}

/* launch: the same kernels under stream, graph and dag side by side (stream's two rows averaged); kernels
 * measured under one launch only, and another commit's rows, are not mixed in. best-span chooses by the span
 * what best chooses by the kernel sum. */
static void test_launch(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/l.db", dir);
    fixture fx = open_fixture(path);
    assert_true(begin(&fx, "4444444ddddddddddddddddddddddddddddddddd") > 0);
    put_launch(&fx, "{\"tile\":64,\"coarsen\":4}", 0.40, 0.48);
    put_launch(&fx, "{\"tile\":64,\"coarsen\":4}", 0.40, 0.52);
    put_launch(&fx, "{\"tile\":64,\"coarsen\":4,\"launch\":\"graph\"}", 0.40, 0.45);
    put_launch(&fx, "{\"tile\":64,\"coarsen\":4,\"launch\":\"dag\"}", 0.48, 0.40);
    put_launch(&fx, "{\"tile\":32,\"coarsen\":4}", 0.30, 0.35);   /* stream only */
    assert_true(begin(&fx, "5555555eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee") > 0);
    put_launch(&fx, "{\"tile\":64,\"coarsen\":4,\"launch\":\"dag\"}", 0.48, 0.20);   /* no stream here */
    rs_close(fx.s);
    const char *stores[] = {path};
    char *t = tables_of(stores, 1);
    const char *launch = strstr(t, "### How the run reaches the GPU");   /* the last table */
    assert_non_null(launch);
    assert_non_null(line_of(launch, "| rgat | train | aifb | 64,64/1 | 4 | 0.5000 | 0.4500 | 0.4000 | 1.11x | 1.25x | 0.4000 | 0.4800 |"));
    assert_null(line_of(launch, "| rgat | train | aifb | 64,64/1 | 1 |"));
    assert_null(strstr(launch, "0.2000"));
    /* the best by kernel sum (tile 32, 0.30 ms) and the best by span (the second commit's dag, 0.20 ms) */
    assert_non_null(line_of(t, "| rgat | train | aifb | 64,64/1 | fp32 | 6 | 0.3000 | 0.3500 |"));
    assert_non_null(line_of(t, "| rgat | train | aifb | 64,64/1 | fp32 | 6 | 0.4800 | 0.2000 |"));
    free(t);
    free(path);
    tu_rm_tree(dir);
}

/* Three RGAT training rows of one commit, the fastest at an edge of every numeric key they vary. */
static void put_boundary_rows(fixture *fx)
{
    put_launch(fx, "{\"tile\":64,\"coarsen\":4,\"lanes\":8,\"trav_3.vec\":4}", 0.30, 0.30);   /* the winner */
    put_launch(fx, "{\"tile\":32,\"coarsen\":4,\"lanes\":16,\"trav_3.vec\":2}", 0.40, 0.40);
    put_launch(fx, "{\"tile\":32,\"coarsen\":8,\"vec\":4}", 0.50, 0.50);   /* lanes 32, trav_3.vec 4 (global) */
}

/* boundary: the winner's numeric keys at the smallest or largest value measured, a key at its default counted at
 * the default (lanes 32 where unset), a per-kernel override a dimension of its own falling back to the global value,
 * `*` where the value is also the key's first or last legal one, `!` where the next legal value breaks a config
 * rule for the winner; a wider row makes the same winner interior; a problem that varies no numeric key is not
 * listed. */
static void test_boundary(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/b.db", dir);
    fixture fx = open_fixture(path);
    assert_true(begin(&fx, "6666666fffffffffffffffffffffffffffffffff") > 0);
    put_boundary_rows(&fx);
    record(&fx, "{\"tile\":64,\"coarsen\":4}", "rgcn", "infer", 1, "aifb", GPU, "generated", "", RS_OK, 0.1, NULL, 0);
    assert_true(begin(&fx, "7777777aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") > 0);
    put_boundary_rows(&fx);
    put_launch(&fx, "{\"tile\":128,\"coarsen\":2,\"lanes\":4,\"trav_3.vec\":8}", 0.60, 0.60);   /* all but vec wider */
    rs_close(fx.s);
    const char *stores[] = {path};
    char *t = tables_of(stores, 1);
    const char *b = strstr(t, "### Winners on the boundary");
    assert_non_null(b);
    /* varied: tile, coarsen, vec, lanes, trav_3.vec; the winner on an edge of each, vec 1 the key's first value,
     * tile 64 where the next value (128 at coarsen 4) breaks a config rule, which the last column quotes */
    assert_non_null(line_of(b, "| rgat | train | aifb | 64,64/1 | 3 | 0.3000 | 5 | coarsen=min(4) lanes=min(8) "
                               "tile=max(64)! trav_3.vec=max(4) vec=min(1)* | tile=128: tile=128 with coarsen=4 "
                               "gives 1024 threads per block"));
    assert_non_null(line_of(b, "| rgat | train | aifb | 64,64/1 | 4 | 0.3000 | 5 | vec=min(1)* |  | 7777777 |"));
    assert_null(line_of(b, "| rgcn |"));
    const char *sql = pt_query_sql("boundary");
    assert_non_null(sql);
    assert_non_null(strstr(sql, "('lanes', 32, 4, 32)"));   /* the key table's default, first and last values */
    free(t);
    free(path);
    tu_rm_tree(dir);
}

static void test_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *good = rg_xasprintf("%s/s.db", dir), *bad = tu_write_file(dir, "bad.db", "not a database");
    make_store(good);
    const char *stores[] = {good, bad};
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    rg_err err;
    assert_int_equal(pt_write(stores, 2, mem, &err), -1);
    fclose(mem);
    assert_int_equal(len, 0);   /* nothing written when one store cannot be read */
    assert_non_null(strstr(err.msg, "bad.db"));
    assert_non_null(pt_query_sql("best"));
    assert_null(pt_query_sql("nope"));
    free(text), free(good), free(bad);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_sections),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_transfer),
        cmocka_unit_test(test_launch),
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
