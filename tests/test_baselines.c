/* Tests of the baselines: CSV import into a store, the compare-baselines table from a
 * fixture store, NVRTC compilation of the step kernels, the cuBLAS layers on a GPU, pyg_bench.py. */
#include "tests/testutil.h"
#include "baselines/blkernels.h"
#include "baselines/compare.h"
#include "baselines/cublas_layers.h"
#include "baselines/import.h"
#include "common/json.h"
#include "datasets/loaders.h"
#include "datasets/npz.h"
#include "runtime/rt.h"
#include "results/store.h"

#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVICE_NAME "Test GPU"

static const rs_row *find_row(const rs_row *rows, size_t n, const char *layer, const char *dataset, const char *task)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].layer, layer) && !strcmp(rows[i].dataset, dataset) && !strcmp(rows[i].task, task))
            return &rows[i];
    return NULL;
}

/* ---------------------------------------------------------------- import ---- */

/* Columns in another order than pyg_bench.py writes them, an extra column, quoting, CRLF. */
static const char GOOD_CSV[] =
    "layer,system,model,task,dataset,dims,heads,status,median_ms,min_ms,max_ms,repeats,peak_mem_bytes,"
    "torch_version,pyg_version,cuda_version,gpu,sm,nodes,error\r\n"
    "RGCNConv,pyg,rgcn,infer,aifb,64,1,ok,1.5,1.25,2.0,10,123456,2.11.0,2.8.0,13.0," DEVICE_NAME ",90,7262,\r\n"
    "FastRGCNConv,pyg,rgcn,training,fb15k237,64,1,oom,,,,0,80000000000,2.11.0,2.8.0,13.0," DEVICE_NAME ",90,14541,"
    "\"OutOfMemoryError: CUDA out of memory, \"\"tried\"\" to allocate 20 GiB\"\r\n"
    "\r\n"
    "HGTConv,pyg,hgt,infer,mutag,64,1,error,,,,,,2.11.0,2.8.0,13.0," DEVICE_NAME ",90,27163,\"ValueError: bad\n"
    "second line\"\r\n";

static void test_import_csv(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *csv = tu_write_file(dir, "pyg.csv", GOOD_CSV);
    char *db = rg_xasprintf("%s/results.db", dir);
    rg_err err;
    rs_store *s = rs_open(db, &err);
    assert_non_null(s);
    bim_stats st;
    if (bim_import_csv(s, csv, "abc1234", "explore import pyg.csv", &st, &err)) fail_msg("%s", err.msg);
    assert_int_equal(st.rows, 3);
    assert_int_equal(st.ok, 1);
    assert_int_equal(st.oom, 1);
    assert_int_equal(st.failed, 1);

    rs_row *rows;
    size_t n;
    rs_filter f = {.system = "pyg"};
    assert_int_equal(rs_query_measurements(s, &f, &rows, &n, &err), 0);
    assert_int_equal(n, 3);
    const rs_row *ok = find_row(rows, n, "RGCNConv", "aifb", "infer");
    assert_non_null(ok);
    assert_int_equal(ok->status, RS_OK);
    assert_float_equal(ok->median_ms, 1.5, 1e-12);
    assert_float_equal(ok->min_ms, 1.25, 1e-12);
    assert_int_equal(ok->repeats, 10);
    assert_int_equal(ok->peak_mem_bytes, 123456);
    assert_int_equal(ok->dim_in, 64);
    assert_string_equal(ok->model, "rgcn");
    assert_string_equal(ok->device_key, DEVICE_NAME " (sm_90)");
    assert_non_null(strstr(ok->evidence, "pyg 2.8.0"));
    assert_int_equal(ok->run_id, st.run_id);

    const rs_row *oom = find_row(rows, n, "FastRGCNConv", "fb15k237", "train");   /* "training" normalized */
    assert_non_null(oom);
    assert_int_equal(oom->status, RS_OOM);
    assert_true(isnan(oom->median_ms));
    assert_non_null(strstr(oom->evidence, "\"tried\" to allocate 20 GiB"));
    const rs_row *bad = find_row(rows, n, "HGTConv", "mutag", "infer");
    assert_non_null(bad);
    assert_int_equal(bad->status, RS_LAUNCH_ERROR);
    assert_true(bad->peak_mem_bytes < 0);
    assert_non_null(strstr(bad->evidence, "ValueError: bad\nsecond line"));
    rs_rows_free(rows, n);

    rs_run_row run;
    assert_int_equal(rs_get_run(s, st.run_id, &run, &err), 0);
    assert_string_equal(run.status, "finished");
    assert_string_equal(run.commit, "abc1234");
    assert_string_equal(run.gpu_name, DEVICE_NAME);
    assert_int_equal(run.measurements, 3);

    /* A second import is a run of its own. */
    bim_stats st2;
    assert_int_equal(bim_import_csv(s, csv, "abc1234", NULL, &st2, &err), 0);
    assert_true(st2.run_id != st.run_id);
    rs_close(s);
    free(csv);
    free(db);
    tu_rm_tree(dir);
}

/* Each bad file fails with its own message, and nothing reaches the store. */
static void test_import_errors(void **state)
{
    (void)state;
    static const struct {
        const char *csv, *want;
    } cases[] = {
        {"system,layer,model,task,dataset,dims,heads,status\npyg,X,rgcn,infer,aifb,64,1,ok\n", "no 'median_ms' column"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\npyg,X,rgcn,infer,aifb,64,1,ok,1\n"
         "pyg,X,rgcn,infer,aifb,64,1,sleepy,1\n",
         "bad.csv:3: unknown status 'sleepy'"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\npyg,X,rgcn,infer,aifb,64,1,ok,\n",
         "bad.csv:2: status ok needs a median_ms"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\npyg,X,rgcn,predict,aifb,64,1,ok,1\n",
         "bad.csv:2: unknown task 'predict'"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\npyg,X,rgcn,infer,aifb,sixty,1,ok,1\n",
         "bad.csv:2: column dims: 'sixty' is not an integer"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\npyg,X,rgcn,infer,aifb,64,1,ok,-3\n",
         "column median_ms: '-3' is not a time"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\n\"pyg,X,rgcn,infer,aifb,64,1,ok,1\n",
         "bad.csv:2: unterminated quoted field"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\ngenerated,X,rgcn,infer,aifb,64,1,ok,1\n",
         "system 'generated' is reserved"},
        {"system,layer,model,task,dataset,dims,heads,status,median_ms\n", "no data rows"},
        {"", "empty file"},
    };
    char *dir = tu_tmpdir();
    char *db = rg_xasprintf("%s/results.db", dir);
    rg_err err;
    rs_store *s = rs_open(db, &err);
    assert_non_null(s);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *csv = tu_write_file(dir, "bad.csv", cases[i].csv);
        bim_stats st;
        err.msg[0] = 0;
        assert_int_equal(bim_import_csv(s, csv, NULL, NULL, &st, &err), -1);
        if (!strstr(err.msg, cases[i].want)) fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i].want);
        free(csv);
    }
    rs_row *rows;
    size_t n;
    assert_int_equal(rs_query_measurements(s, NULL, &rows, &n, &err), 0);
    assert_int_equal(n, 0);
    rs_rows_free(rows, n);
    assert_int_equal(bim_import_csv(s, "/nonexistent/x.csv", NULL, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "cannot open /nonexistent/x.csv"));
    rs_close(s);
    free(db);
    tu_rm_tree(dir);
}

/* --------------------------------------------------------------- compare ---- */

typedef struct fixture {
    rs_store *s;
    int64_t run;
} fixture;

static void put(fixture *fx, const char *gpu, const char *system, const char *layer, const char *model,
                const char *task, const char *dataset, int dims, int tag, rs_status st, double ms, int64_t peak)
{
    rg_err err;
    rgj_writer w = {0};
    rgj_begin_object(&w);
    rgj_kv_string(&w, "system", system);
    rgj_kv_string(&w, "model", model);
    rgj_kv_string(&w, "task", task);
    rgj_kv_int(&w, "dims", dims);
    rgj_kv_int(&w, "tag", tag);
    rgj_end_object(&w);
    char *json = rgj_finish(&w);
    rs_variant v = {.config_json = json, .model = model, .task = task, .dim_in = dims, .dim_out = dims, .heads = 1};
    int64_t ds = rs_upsert_dataset(fx->s, dataset, NULL, &err);
    assert_true(ds > 0);
    char *dev = rs_device_key(gpu, 90);
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = fx->run, m.dataset_id = ds, m.device_key = dev;
    m.system = system, m.layer = layer, m.status = st, m.median_ms = ms, m.peak_mem_bytes = peak;
    tu_store_measurement(fx->s, &v, &m, NULL, 0, NULL, 0);
    free(json);
    free(dev);
}

static fixture make_fixture(const char *db)
{
    rg_err err;
    fixture fx = {rs_open(db, &err), 0};
    assert_non_null(fx.s);
    rs_run_info info = {.commit = "c0ffee1", .host = "testhost", .gpu_name = DEVICE_NAME, .sm = 90};
    fx.run = rs_begin_run(fx.s, &info, &err);
    assert_true(fx.run > 0);
    const char *G = DEVICE_NAME;
    /* rgat/aifb/infer: generated best 1.0 ms among three attempts (one failed) */
    put(&fx, G, "generated", "", "rgat", "infer", "aifb", 64, 1, RS_OK, 2.0, 1000);
    put(&fx, G, "generated", "", "rgat", "infer", "aifb", 64, 2, RS_OK, 1.0, 1000);
    put(&fx, G, "generated", "", "rgat", "infer", "aifb", 64, 3, RS_WRONG_ANSWER, NAN, -1);
    put(&fx, G, "pyg", "RGATConv", "rgat", "infer", "aifb", 64, 4, RS_OK, 4.0, 5000);
    put(&fx, G, "cublas-seg", "RGAT", "rgat", "infer", "aifb", 64, 5, RS_OK, 3.0, 3000);
    put(&fx, G, "cublas-seg", "RGAT", "rgat", "infer", "aifb", 64, 6, RS_OK, 2.5, 3000);   /* best attempt */
    put(&fx, G, "cublas-bmm", "RGAT", "rgat", "infer", "aifb", 64, 7, RS_OOM, NAN, 24000000000LL);
    put(&fx, G, "cublas-grouped", "RGAT", "rgat", "infer", "aifb", 64, 8, RS_RUNTIME_FAULT, NAN, -1);
    /* rgat/mutag/infer: baselines faster than the generated code */
    put(&fx, G, "generated", "", "rgat", "infer", "mutag", 64, 1, RS_OK, 8.0, 1000);
    put(&fx, G, "pyg", "RGATConv", "rgat", "infer", "mutag", 64, 4, RS_OK, 4.0, 5000);
    /* generated only: left out; baselines only: generated n/a */
    put(&fx, G, "generated", "", "rgat", "infer", "fb15k237", 64, 1, RS_OK, 5.0, 1000);
    put(&fx, G, "pyg", "RGATConv", "rgat", "train", "aifb", 64, 9, RS_OK, 9.0, 5000);
    /* other dims and another GPU, for the filters */
    put(&fx, G, "generated", "", "rgat", "infer", "aifb", 32, 1, RS_OK, 0.5, 1000);
    put(&fx, G, "pyg", "RGATConv", "rgat", "infer", "aifb", 32, 4, RS_OK, 1.0, 5000);
    put(&fx, "Other GPU", "generated", "", "rgat", "infer", "aifb", 64, 1, RS_OK, 3.0, 1000);
    put(&fx, "Other GPU", "pyg", "RGATConv", "rgat", "infer", "aifb", 64, 4, RS_OK, 6.0, 5000);
    put(&fx, G, "generated", "", "rgcn", "infer", "aifb", 64, 1, RS_OK, 1.0, 1000);
    put(&fx, G, "pyg", "RGCNConv", "rgcn", "infer", "aifb", 64, 4, RS_OK, 3.0, 5000);
    put(&fx, G, "pyg", "FastRGCNConv", "rgcn", "infer", "aifb", 64, 5, RS_OOM, NAN, -1);
    assert_int_equal(rs_finish_run(fx.s, fx.run, RS_RUN_FINISHED, &err), 0);
    return fx;
}

static const bcmp_row *table_row(const bcmp_table *t, const char *model, const char *task, const char *dataset)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].model, model) && !strcmp(t->rows[i].task, task) && !strcmp(t->rows[i].dataset, dataset))
            return &t->rows[i];
    return NULL;
}

static void test_compare_table(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *db = rg_xasprintf("%s/results.db", dir);
    fixture fx = make_fixture(db);
    rg_err err;
    bcmp_table t;
    bcmp_filter f = {.model = "rgat", .dims = 64, .gpu = "test gpu"};
    assert_int_equal(bcmp_build(fx.s, &f, &t, &err), 0);
    assert_int_equal(t.n, 3);   /* aifb infer, mutag infer, aifb train (fb15k237 has no baseline) */
    assert_null(table_row(&t, "rgat", "infer", "fb15k237"));

    const bcmp_row *r = table_row(&t, "rgat", "infer", "aifb");
    assert_non_null(r);
    assert_float_equal(r->generated_ms, 1.0, 1e-12);
    assert_int_equal(r->ncells, 4);
    assert_string_equal(r->cells[0].system, "cublas-bmm");
    assert_int_equal(r->cells[0].status, RS_OOM);
    assert_true(isnan(r->cells[0].speedup));
    assert_int_equal(r->cells[0].peak_mem_bytes, 24000000000LL);
    assert_string_equal(r->cells[1].system, "cublas-grouped");
    assert_int_equal(r->cells[1].status, RS_RUNTIME_FAULT);
    assert_string_equal(r->cells[2].system, "cublas-seg");
    assert_float_equal(r->cells[2].best_ms, 2.5, 1e-12);
    assert_float_equal(r->cells[2].speedup, 2.5, 1e-12);
    assert_string_equal(r->cells[3].system, "pyg");
    assert_string_equal(r->cells[3].layer, "RGATConv");
    assert_float_equal(r->cells[3].speedup, 4.0, 1e-12);
    assert_int_equal(r->best, 2);
    assert_float_equal(r->best_speedup, 2.5, 1e-12);

    const bcmp_row *slow = table_row(&t, "rgat", "infer", "mutag");
    assert_non_null(slow);
    assert_float_equal(slow->best_speedup, 0.5, 1e-12);   /* generated 8 ms vs pyg 4 ms */
    const bcmp_row *train = table_row(&t, "rgat", "train", "aifb");
    assert_non_null(train);
    assert_true(isnan(train->generated_ms));
    assert_true(isnan(train->best_speedup));
    assert_int_equal(train->best, 0);

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    bcmp_print_markdown(&t, out);
    fclose(out);
    assert_non_null(strstr(text, "### rgat, infer, " DEVICE_NAME " (sm_90)"));
    assert_non_null(strstr(text, "| dataset | dims/heads | generated | cublas-bmm RGAT | cublas-grouped RGAT | "
                                 "cublas-seg RGAT | pyg RGATConv | best baseline | speed-up over best |"));
    assert_non_null(strstr(text, "| aifb | 64,64/1 | 1.000 ms | OOM | failed: runtime_fault | 2.500 ms (2.50x) | "
                                 "4.000 ms (4.00x) | cublas-seg RGAT 2.500 ms | 2.50x |"));
    assert_non_null(strstr(text, "| mutag | 64,64/1 | 8.000 ms | - | - | - | 4.000 ms (0.50x) | pyg RGATConv 4.000 ms | 0.50x |"));
    assert_non_null(strstr(text, "| aifb | 64,64/1 | n/a | 9.000 ms | pyg RGATConv 9.000 ms | - |"));
    free(text);
    bcmp_free(&t);

    /* Filters: another GPU, other dims, a task, every model. */
    bcmp_filter other = {.gpu = "other", .dims = 64};
    assert_int_equal(bcmp_build(fx.s, &other, &t, &err), 0);
    assert_int_equal(t.n, 1);
    assert_float_equal(t.rows[0].best_speedup, 2.0, 1e-12);
    bcmp_free(&t);
    bcmp_filter d32 = {.dims = 32};
    assert_int_equal(bcmp_build(fx.s, &d32, &t, &err), 0);
    assert_int_equal(t.n, 1);
    assert_float_equal(t.rows[0].best_speedup, 2.0, 1e-12);
    bcmp_free(&t);
    bcmp_filter rgcn = {.model = "rgcn", .task = "inference"};
    assert_int_equal(bcmp_build(fx.s, &rgcn, &t, &err), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.rows[0].ncells, 2);
    assert_string_equal(t.rows[0].cells[0].layer, "FastRGCNConv");
    assert_int_equal(t.rows[0].cells[0].status, RS_OOM);
    assert_float_equal(t.rows[0].best_speedup, 3.0, 1e-12);
    bcmp_free(&t);
    bcmp_filter badtask = {.task = "predict"};
    assert_int_equal(bcmp_build(fx.s, &badtask, &t, &err), -1);
    assert_non_null(strstr(err.msg, "unknown task"));

    rs_close(fx.s);
    free(db);
    tu_rm_tree(dir);
}

/* The import feeds the table: an imported CSV's rows appear as baseline columns. */
static void test_import_then_compare(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *db = rg_xasprintf("%s/results.db", dir);
    fixture fx = make_fixture(db);
    char *csv = tu_write_file(dir, "pyg.csv",
                              "system,layer,model,task,dataset,dims,heads,status,median_ms,gpu,sm\n"
                              "pyg,HGTConv,hgt,train,aifb,64,1,ok,12.5," DEVICE_NAME ",90\n");
    rg_err err;
    assert_int_equal(bim_import_csv(fx.s, csv, NULL, NULL, NULL, &err), 0);
    put(&fx, DEVICE_NAME, "generated", "", "hgt", "train", "aifb", 64, 1, RS_OK, 5.0, 1000);
    bcmp_table t;
    bcmp_filter f = {.model = "hgt"};
    assert_int_equal(bcmp_build(fx.s, &f, &t, &err), 0);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.rows[0].cells[0].layer, "HGTConv");
    assert_float_equal(t.rows[0].best_speedup, 2.5, 1e-12);
    bcmp_free(&t);
    rs_close(fx.s);
    free(csv);
    free(db);
    tu_rm_tree(dir);
}

/* -------------------------------------------------------------- kernels ---- */

static void test_kernels_compile(void **state)
{
    (void)state;
    krt_cubin c;
    rg_err err;
    if (blk_compile(90, &c, &err)) fail_msg("%s", err.msg);
    assert_true(c.size > 1000);
    assert_int_equal(c.sm, 90);
    for (int i = 0; i < BLK_COUNT; i++) {
        const char *name = blk_kernel_name((blk_id)i);
        if (!memmem(c.data, c.size, name, strlen(name) + 1)) fail_msg("kernel %s missing from the cubin", name);
    }
    krt_cubin_free(&c);
    assert_string_equal(blk_category_of("bl_replicate"), "copy");
    assert_string_equal(blk_category_of("bl_gather_rows"), "traversal");
    assert_string_equal(blk_category_of("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x64x8"), "gemm");
    assert_int_equal(blk_grid(1).x, 1);
    assert_int_equal(blk_grid(1000).x, 4);
    assert_int_equal(blk_grid(INT64_C(1) << 40).x, 1u << 20);
}

static void test_names_and_errors(void **state)
{
    (void)state;
    rg_err err;
    bl_style s;
    assert_int_equal(bl_style_parse("grouped", &s, &err), 0);
    assert_int_equal(s, BL_GROUPED);
    assert_string_equal(bl_system_name(s), "cublas-grouped");
    assert_int_equal(bl_style_parse("loop", &s, &err), -1);
    assert_non_null(strstr(err.msg, "seg, bmm or grouped"));
    assert_string_equal(bl_layer_name("hgt"), "HGT");
    assert_null(bl_layer_name("gcn"));
    hg_graph *g = synth_generate("nodes=60,edges=300,ntypes=2,etypes=3,ratio=0.5,seed=1", &err);
    assert_non_null(g);
    ir_dims d = {16, 16, 3};
    assert_null(bl_problem_new("rgat", g, &d, &err));
    assert_non_null(strstr(err.msg, "heads 3 does not divide"));
    d.heads = 1;
    assert_null(bl_problem_new("gcn", g, &d, &err));
    assert_non_null(strstr(err.msg, "no cuBLAS baseline for model 'gcn'"));
    if (!krt_have_device()) {
        xb_result r;
        assert_int_equal(bl_measure("rgcn", "seg", g, &d, NULL, &r, &err), -1);
        assert_non_null(strstr(err.msg, "no CUDA device"));
    }
    hg_free(g);
}

/* ------------------------------------------------------------------ GPU ---- */

/* Every model in every style on a small graph, against the float64 reference. */
static void test_gpu_layers(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    rg_err err;
    hg_graph *g = synth_generate("nodes=400,edges=5000,ntypes=3,etypes=6,ratio=0.3,seed=5", &err);
    if (!g) fail_msg("%s", err.msg);
    static const struct {
        const char *model;
        int heads;
    } cases[] = {{"rgcn", 1}, {"rgat", 1}, {"rgat", 4}, {"hgt", 1}, {"hgt", 4}};
    bl_options o = {.warmup = 1, .repeats = 3};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ir_dims d = {32, 64, cases[i].heads};
        bl_problem *p = bl_problem_new(cases[i].model, g, &d, &err);
        if (!p) fail_msg("%s", err.msg);
        for (int s = 0; s < BL_STYLE_COUNT; s++) {
            xb_result r;
            if (bl_run(p, (bl_style)s, &o, &r, &err)) fail_msg("%s %s: %s", cases[i].model, bl_style_name(s), err.msg);
            if (r.status != RS_OK)
                fail_msg("%s/%d heads %s: %s: %s", cases[i].model, cases[i].heads, bl_style_name(s),
                         rs_status_name(r.status), r.evidence);
            assert_true(r.validation_error < 1e-5);
            assert_true(r.median_ms > 0 && r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
            assert_int_equal(r.repeats, 3);
            assert_true(r.peak_mem_bytes > 0);
            assert_true(r.nkernels >= 2);
            assert_true(r.gemm_ms > 0 && r.traversal_ms > 0);
            printf("%s heads %d %-8s %.4f ms (gemm %.4f, traversal %.4f) error %.2e\n", cases[i].model,
                   cases[i].heads, bl_style_name(s), r.median_ms, r.gemm_ms, r.traversal_ms, r.validation_error);
        }
        bl_problem_free(p);
    }
    hg_free(g);
}

/* The replicated weights of bmm go through the planner: a limit turns them into OOM. */
static void test_gpu_bmm_oom(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    rg_err err;
    hg_graph *g = synth_generate("nodes=400,edges=5000,ntypes=3,etypes=6,ratio=0.3,seed=5", &err);
    if (!g) fail_msg("%s", err.msg);
    ir_dims d = {64, 64, 1};
    /* seg needs about E*(K+M)*4 = 2.6 MB, bmm adds E*K*M*4 = 82 MB of weight copies */
    bl_options o = {.mem_limit = 16u << 20, .validate_only = 1};
    xb_result r;
    assert_int_equal(bl_measure("rgcn", "bmm", g, &d, &o, &r, &err), 0);
    assert_int_equal(r.status, RS_OOM);
    assert_non_null(strstr(r.evidence, "per row"));
    assert_int_equal(bl_measure("rgcn", "seg", g, &d, &o, &r, &err), 0);
    assert_int_equal(r.status, RS_OK);
    assert_true(r.peak_mem_bytes < (16 << 20));
    hg_free(g);
}

/* -------------------------------------------------------------- python ---- */

static const char *numpy_python(void)
{
    static const char *const candidates[] = {"python3", "/usr/bin/python3"};
    for (size_t i = 0; i < 2; i++) {
        char *cmd = rg_xasprintf("%s -c 'import numpy' >/dev/null 2>&1", candidates[i]);
        int rc = system(cmd);
        free(cmd);
        if (rc == 0) return candidates[i];
    }
    return NULL;
}

static char *run_capture(const char *cmd, int *rc)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    rg_str out = {0};
    rg_str_puts(&out, "");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        for (size_t i = 0; i < n; i++) rg_str_putc(&out, buf[i]);
    *rc = pclose(p);
    return out.s;
}

/* pyg_bench.py reads our npz export as the graph it is (numpy only), and its self-test
 * passes (or says why it skips: no torch / PyG here). */
static void test_pyg_bench_script(void **state)
{
    (void)state;
    const char *py = numpy_python();
    if (!py) {
        printf("skip: numpy is not importable by python3 here\n");
        skip();
    }
    assert_true(rg_file_exists("baselines/pyg_bench.py"));
    rg_err err;
    hg_graph *g = synth_generate("nodes=500,edges=4000,ntypes=3,etypes=5,ratio=0.4,seed=9", &err);
    assert_non_null(g);
    char *dir = tu_tmpdir();
    char *path = rg_xasprintf("%s/g.npz", dir);
    if (npz_export_graph(g, path, &err)) fail_msg("%s", err.msg);
    int ntypes = 0, etypes = 0;
    for (int t = 0; t < g->num_ntypes; t++) ntypes += g->ntype_ptr[t + 1] > g->ntype_ptr[t];
    for (int r = 0; r < g->num_etypes; r++) etypes += g->etype_ptr[r + 1] > g->etype_ptr[r];
    char *want = rg_xasprintf("name=%s nodes=%d edges=%d node_types=%d relations=%d hetero_node_types=%d "
                              "hetero_edge_types=%d hetero_edges=%d\n",
                              g->name, g->num_nodes, g->num_edges, g->num_ntypes, g->num_etypes, ntypes, etypes,
                              g->num_edges);
    char *cmd = rg_xasprintf("%s baselines/pyg_bench.py --describe %s 2>&1", py, path);
    int rc;
    char *out = run_capture(cmd, &rc);
    if (rc != 0 || strcmp(out, want)) fail_msg("`%s` (rc %d) printed\n%s\nexpected\n%s", cmd, rc, out, want);
    free(out), free(cmd);

    /* A file that is not a graph export is refused with a message. */
    cmd = rg_xasprintf("%s baselines/pyg_bench.py --describe %s/none.npz 2>&1", py, dir);
    out = run_capture(cmd, &rc);
    assert_true(rc != 0);
    assert_non_null(strstr(out, "pyg_bench.py:"));
    free(out), free(cmd);

    cmd = rg_xasprintf("%s baselines/pyg_bench.py --self-test 2>&1", py);
    out = run_capture(cmd, &rc);
    if (rc != 0 || !strstr(out, "npz reading: ok") ||
        !(strstr(out, "self-test passed") || strstr(out, "skip: torch")))
        fail_msg("self-test (rc %d):\n%s", rc, out);
    printf("%s", out);
    free(out), free(cmd);
    free(want), free(path);
    tu_rm_tree(dir);
    hg_free(g);
}

/* torch_equal.py's numpy parts on our own dumps: its self-test exports a synthetic graph,
 * dumps the reference of every model and task with `explore run --backend ref --dump`, checks
 * that the export and the dump agree and that its layer code in float64 numpy reproduces the
 * reference's output and loss; with torch it also checks gradients and times (else it says so). */
static void test_torch_equal_script(void **state)
{
    (void)state;
    const char *py = numpy_python();
    if (!py) {
        printf("skip: numpy is not importable by python3 here\n");
        skip();
    }
    assert_true(rg_file_exists("build/explore"));
    char *cmd = rg_xasprintf("%s baselines/torch_equal.py --self-test --explore build/explore 2>&1", py);
    int rc;
    char *out = run_capture(cmd, &rc);
    if (rc != 0 || !strstr(out, "numpy checks: ok") || !strstr(out, "check-io hgt train loss") ||
        !(strstr(out, "self-test passed") || strstr(out, "skip: torch")))
        fail_msg("self-test (rc %d):\n%s", rc, out);
    free(out), free(cmd);
}

/* pyg_crosscheck.py --check-io on our dumps of the three PyG-definition programs (dims 8, 2 heads;
 * pyg_hgt's bias, GELU, output linear and skip included): the weight mapping in PyG's layout,
 * run by its numpy emulation of the classes, gives our reference's output. Without PyG the real
 * check says so in one line and exits 2. */
static void test_pyg_crosscheck_script(void **state)
{
    (void)state;
    const char *py = numpy_python();
    if (!py) {
        printf("skip: numpy is not importable by python3 here\n");
        skip();
    }
    assert_true(rg_file_exists("build/explore"));
    const char *G = "synth:nodes=60,edges=400,ntypes=3,etypes=5,ratio=0.5,seed=3";
    const char *models[] = {"pyg_rgcn", "pyg_rgat", "pyg_hgt"};
    char *dir = tu_tmpdir();
    char *cmd = rg_xasprintf("build/explore datasets export '%s' --format npz --out %s/g.npz >/dev/null 2>&1", G, dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    for (int m = 0; m < 3; m++) {
        cmd = rg_xasprintf("build/explore run --model %s --dataset '%s' --dims 8 --heads 2 --backend ref --dump %s/%s "
                           ">/dev/null 2>&1", models[m], G, dir, models[m]);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        cmd = rg_xasprintf("%s baselines/pyg_crosscheck.py --check-io --npz %s/g.npz --dump %s/%s 2>&1", py, dir, dir,
                           models[m]);
        int rc;
        char *out = run_capture(cmd, &rc);
        if (rc != 0 || !strstr(out, "numpy emulation of PyG:") || !strstr(out, ": ok"))
            fail_msg("`%s` (rc %d):\n%s", cmd, rc, out);
        printf("%s", out);
        free(out), free(cmd);
    }
    cmd = rg_xasprintf("%s baselines/pyg_crosscheck.py --npz %s/g.npz --dump %s/pyg_hgt 2>&1", py, dir, dir);
    int rc;
    char *out = run_capture(cmd, &rc);
    if (!(WEXITSTATUS(rc) == 2 && strstr(out, "PyTorch Geometric is not installed")) &&
        !(rc == 0 && strstr(out, "PyG pyg_hgt")))
        fail_msg("`%s` (rc %d):\n%s", cmd, rc, out);
    free(out), free(cmd);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_csv),
        cmocka_unit_test(test_torch_equal_script),
        cmocka_unit_test(test_pyg_crosscheck_script),
        cmocka_unit_test(test_import_errors),
        cmocka_unit_test(test_compare_table),
        cmocka_unit_test(test_import_then_compare),
        cmocka_unit_test(test_kernels_compile),
        cmocka_unit_test(test_names_and_errors),
        cmocka_unit_test(test_gpu_layers),
        cmocka_unit_test(test_gpu_bmm_oom),
        cmocka_unit_test(test_pyg_bench_script),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
