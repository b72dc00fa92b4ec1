/* Command-line front ends of the baselines: `explore import`, `explore compare-baselines` and
 * `explore baselines` (measure and record the cuBLAS-built layers on the current GPU). */
#include "cli/blcli.h"
#include "baselines/compare.h"
#include "baselines/cublas_layers.h"
#include "baselines/import.h"
#include "codegen/pipeline.h"
#include "common/json.h"
#include "datasets/dataset.h"
#include "cli/problem.h"
#include "common/git.h"
#include "measure/rows.h"
#include "runtime/memplan.h"
#include "runtime/rt.h"
#include "results/store.h"

#include <cupti.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_FAIL = 1 };

/* --------------------------------------------------------------- import ---- */

static const char IMPORT_USAGE[] =
    "usage: explore import CSV [--db PATH] [--commit C]\n"
    "\n"
    "Loads baseline measurements (the CSV baselines/pyg_bench.py writes) into the results store,\n"
    "under a run of their own, each row a measurement tagged by its system and layer.\n"
    "Columns: system, layer, model, task, dataset, dims, heads, status, median_ms (required);\n"
    "dim_in, dim_out, min_ms, max_ms, stddev_ms, repeats, peak_mem_bytes, gpu, sm,\n"
    "torch_version, pyg_version, cuda_version, error (optional). Every row is checked before\n"
    "anything is written.\n"
    "\n";

int blcli_import_main(int argc, char **argv)
{
    cp_problem p;
    cp_init(&p);
    const char *commit = NULL, *pos[1];
    ro_cmd c;
    ro_init(&c, "explore import", IMPORT_USAGE, NULL);
    cp_add_options(&c, &p, CP_DB);
    ro_add(&c, (ro_opt){.name = "commit", .arg = "C", .kind = RO_STR, .dst = &commit, .help = "code version to record (default: git rev-parse HEAD)"});
    ro_positional(&c, pos, 1);
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    if (c.npos != 1) return ro_bad(c.name, "give the CSV file to import (see --help)");
    char head[64];
    if (!commit) git_head_commit(head, sizeof head), commit = head;
    rg_err err;
    rs_store *s = rs_open(p.db, &err);
    if (!s) {
        fprintf(stderr, "explore import: %s\n", err.msg);
        return EXIT_FAIL;
    }
    char *cmdline = cp_command_line(argc, argv);
    bim_stats st;
    rc = bim_import_csv(s, pos[0], commit, cmdline, &st, &err);
    free(cmdline);
    rs_close(s);
    if (rc) {
        fprintf(stderr, "explore import: %s\n", err.msg);
        return EXIT_FAIL;
    }
    printf("imported %lld measurements from %s into %s (run %lld): %lld ok, %lld out of memory, %lld failed\n",
           (long long)st.rows, pos[0], p.db, (long long)st.run_id, (long long)st.ok, (long long)st.oom,
           (long long)st.failed);
    return 0;
}

/* ------------------------------------------------------ compare-baselines ---- */

static const char COMPARE_USAGE[] =
    "usage: explore compare-baselines [--db PATH] [--model M] [--task T] [--dataset D] [--dims N]\n"
    "                                 [--gpu NAME]\n"
    "\n"
    "For every (GPU, model, dataset, task, dims, heads) that has baseline measurements: the best\n"
    "generated variant against the best attempt of each baseline (system and layer: pyg\n"
    "RGCNConv, cublas-seg RGCN, ...), the speed-ups (baseline time / generated time), OOMs and\n"
    "failures, and the best baseline. Markdown tables, one per GPU, model and task.\n"
    "\n";

int blcli_compare_main(int argc, char **argv)
{
    cp_problem p;
    cp_init(&p);
    p.task = NULL;   /* filters: all when not given */
    bcmp_filter f = {0};
    ro_cmd c;
    ro_init(&c, "explore compare-baselines", COMPARE_USAGE, NULL);
    cp_add_options(&c, &p, CP_DB | CP_MODEL | CP_TASK | CP_DATASET);
    ro_add(&c, (ro_opt){.name = "dims", .arg = "N", .kind = RO_INT, .dst = &f.dims, .help = "input = output dims (e.g. 64)", .lo = 1, .hi = RO_MAX_DIM});
    ro_add(&c, (ro_opt){.name = "gpu", .arg = "NAME", .kind = RO_STR, .dst = &f.gpu, .help = "a substring of the device (e.g. H100)"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    f.model = p.model, f.task = p.task, f.dataset = p.dataset;
    const char *db = p.db;
    rg_err err;
    rs_store *s = rs_open_read(db, &err);
    if (!s) {
        fprintf(stderr, "explore compare-baselines: %s\n", err.msg);
        return EXIT_FAIL;
    }
    bcmp_table t;
    rc = bcmp_build(s, &f, &t, &err);
    rs_close(s);
    if (rc) {
        fprintf(stderr, "explore compare-baselines: %s\n", err.msg);
        return EXIT_FAIL;
    }
    bcmp_print_markdown(&t, stdout);
    bcmp_free(&t);
    return 0;
}

/* -------------------------------------------------------------- baselines ---- */

static const char BASELINES_USAGE[] =
    "usage: explore baselines --model M[,M...] --dataset D [--style seg|bmm|grouped|all] [--db PATH]\n"
    "                         [--dims IN,OUT] [--heads H] [--mem-limit BYTES] [--repeats N]\n"
    "                         [--warmup N] [--data-dir DIR] [--validate-only] [--no-record]\n"
    "\n"
    "Measures the cuBLAS-built baseline layers (inference) on the current GPU: each step a\n"
    "separate kernel, each typed linear through cuBLAS in one style:\n"
    "  seg      gather rows, one cublasSgemm per relation, scatter (DGL segment_mm)\n"
    "  bmm      weights replicated per edge + strided batched GEMM (PyG FastRGCNConv)\n"
    "  grouped  one cublasSgemmGroupedBatched over the relations (pyg-lib)\n"
    "Every run is validated against the float64 CPU reference (same seeded inputs and weights\n"
    "as the generated variants), then timed (CUPTI: sum of kernel times per run, median of the\n"
    "repeats after warm-up), and recorded as system cublas-<style>, layer RGCN/RGAT/HGT.\n"
    "Training is not implemented for these baselines: PyG's layers (pyg_bench.py) cover it.\n"
    "--model takes rgcn, rgat, hgt, a comma-separated list, or all.\n"
    "\n";

typedef struct bl_args {
    cp_problem p;
    const char *style;
    int validate_only, no_record;
} bl_args;

/* -1 to go on; else the exit status. */
static int parse_baselines(int argc, char **argv, bl_args *a, ro_cmd *c)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    a->style = "all";
    ro_init(c, "explore baselines", BASELINES_USAGE, NULL);
    cp_add_options(c, &a->p, CP_PROBLEM | CP_DB | CP_MEM_LIMIT | CP_REPEATS);
    ro_add(c, (ro_opt){.name = "style", .arg = "S", .kind = RO_STR, .dst = &a->style, .help = "seg, bmm, grouped or all (default all)"});
    ro_add(c, (ro_opt){.name = "validate-only", .arg = NULL, .kind = RO_FLAG, .dst = &a->validate_only, .help = "no timing (and no record)"});
    ro_add(c, (ro_opt){.name = "no-record", .arg = NULL, .kind = RO_FLAG, .dst = &a->no_record, .help = "print only"});
    int rc = ro_parse(c, argc, argv);
    return rc ? ro_exit(rc) : -1;
}

typedef struct bl_session {
    rs_store *store;
    int64_t run_id, dataset_id;
    char *device_key;
    int failures;
} bl_session;

static int record_result(bl_session *ss, const char *model, bl_style style, const ir_dims *d, const xb_result *r,
                         rg_err *err)
{
    rgj_writer w = {0};
    rgj_begin_object(&w);
    rgj_kv_string(&w, "baseline", bl_system_name(style));
    rgj_kv_string(&w, "layer", bl_layer_name(model));
    rgj_kv_string(&w, "model", model);
    rgj_kv_string(&w, "task", "infer");
    rgj_kv_int(&w, "dim_in", d->in_dim);
    rgj_kv_int(&w, "dim_out", d->out_dim);
    rgj_kv_int(&w, "heads", d->heads);
    rgj_end_object(&w);
    char *json = rgj_finish(&w);
    rs_variant v = {.config_json = json, .model = model, .task = "infer", .dim_in = d->in_dim,
                    .dim_out = d->out_dim, .heads = d->heads};
    int64_t var = rs_upsert_variant(ss->store, &v, err);
    free(json);
    if (var < 0) return -1;
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = ss->run_id, m.dataset_id = ss->dataset_id, m.variant_id = var, m.device_key = ss->device_key;
    m.system = bl_system_name(style), m.layer = bl_layer_name(model);
    return xrow_record(ss->store, &m, r, err) < 0 ? -1 : 0;
}

static void print_result(const char *model, bl_style style, const xb_result *r)
{
    char mb[32];
    printf("%-5s %-8s %-13s", model, bl_style_name(style), rs_status_name(r->status));
    if (r->status == RS_OK && !isnan(r->median_ms))
        printf(" %10.4f ms  gemm %.4f  traversal %.4f  other %.4f  peak %s", r->median_ms, r->gemm_ms,
               r->traversal_ms, r->other_ms, mp_format_bytes((size_t)(r->peak_mem_bytes > 0 ? r->peak_mem_bytes : 0), mb));
    printf("\n      %s\n", r->evidence);
}

static int measure_model(bl_session *ss, const char *model, const hg_graph *g, const ir_dims *d, const bl_args *a,
                         const bl_options *o, rg_err *err)
{
    bl_problem *p = bl_problem_new(model, g, d, err);
    if (!p) return -1;
    for (int st = 0; st < BL_STYLE_COUNT; st++) {
        if (strcmp(a->style, "all") && strcmp(a->style, bl_style_name((bl_style)st))) continue;
        xb_result r;
        if (bl_run(p, (bl_style)st, o, &r, err)) {
            bl_problem_free(p);
            return -1;
        }
        print_result(model, (bl_style)st, &r);
        fflush(stdout);
        if (r.status != RS_OK) ss->failures++;
        if (ss->store && !a->validate_only && record_result(ss, model, (bl_style)st, d, &r, err)) {
            bl_problem_free(p);
            return -1;
        }
    }
    bl_problem_free(p);
    return 0;
}

static int open_session(bl_session *ss, const bl_args *a, const krt_device *dev, const char *dataset,
                        const hg_stats *stats, int argc, char **argv, rg_err *err)
{
    ss->store = rs_open(a->p.db, err);
    if (!ss->store) return -1;
    char commit[64], driver[32], cuda[32], cupti[32] = "unknown";
    git_head_commit(commit, sizeof commit);
    snprintf(driver, sizeof driver, "%d.%d", dev->driver_version / 1000, (dev->driver_version % 1000) / 10);
    snprintf(cuda, sizeof cuda, "%d.%d", dev->runtime_version / 1000, (dev->runtime_version % 1000) / 10);
    uint32_t cv = 0;
    if (cuptiGetVersion(&cv) == CUPTI_SUCCESS) snprintf(cupti, sizeof cupti, "%u", cv);
    char *cmdline = cp_command_line(argc, argv);
    rs_run_info info = {.commit = commit, .gpu_name = dev->name, .sm = dev->sm, .driver_version = driver,
                        .cuda_version = cuda, .cupti_version = cupti, .command_line = cmdline};
    ss->run_id = rs_begin_run(ss->store, &info, err);
    free(cmdline);
    if (ss->run_id < 0) return -1;
    ss->dataset_id = rs_upsert_dataset(ss->store, dataset, stats, err);
    ss->device_key = rs_device_key(dev->name, dev->sm);
    return ss->dataset_id < 0 ? -1 : 0;
}

/* Options into dims and bl_options; messages for bad values. */
static int check_args(const ro_cmd *c, const bl_args *a, ir_dims *d, bl_options *o, rg_err *err)
{
    memset(o, 0, sizeof *o);
    *d = (ir_dims){a->p.dims[0], a->p.dims[1], a->p.heads};
    if (!a->p.model || !a->p.dataset) return rg_errf(err, "--model and --dataset are required (see --help)");
    if (strcmp(a->p.task, "infer"))
        return rg_errf(err, "the cuBLAS baselines are inference-only; PyG's layers (baselines/pyg_bench.py) "
                            "cover training");
    bl_style st;
    if (strcmp(a->style, "all") && bl_style_parse(a->style, &st, err)) return -1;
    if (cp_check(&a->p, err)) return -1;
    o->mem_limit = a->p.mem_limit;
    /* bl_options: 0 is the default, so only what was given is passed on (warm-up 0: negative, none) */
    if (ro_given(c, "repeats")) o->repeats = a->p.repeats;
    if (ro_given(c, "warmup")) o->warmup = a->p.warmup ? a->p.warmup : -1;
    o->validate_only = a->validate_only;
    return 0;
}

/* The models of --model: one name, a comma-separated list, or "all". */
static int split_models(const char *arg, char names[3][8], int *n, rg_err *err)
{
    static const char *const ALL[] = {"rgcn", "rgat", "hgt"};
    *n = 0;
    if (!strcmp(arg, "all")) {
        for (int i = 0; i < 3; i++) snprintf(names[(*n)++], 8, "%s", ALL[i]);
        return 0;
    }
    char *copy = rg_xstrdup(arg), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        if (!bl_layer_name(tok)) rc = rg_errf(err, "no cuBLAS baseline for model '%s' (rgcn, rgat, hgt or all)", tok);
        else if (*n == 3) rc = rg_errf(err, "--model lists more than three models");
        else snprintf(names[(*n)++], 8, "%s", tok);
    }
    free(copy);
    return rc;
}

int blcli_baselines_main(int argc, char **argv)
{
    bl_args a;
    ro_cmd c;
    int rc = parse_baselines(argc, argv, &a, &c);
    if (rc >= 0) return rc;
    rg_err err;
    ir_dims d;
    bl_options o;
    char models[3][8];
    int nmodels;
    if (check_args(&c, &a, &d, &o, &err) || split_models(a.p.model, models, &nmodels, &err))
        return ro_fail(c.name, &err);
    krt_device dev;
    if (krt_init(0, &dev, &err)) {
        fprintf(stderr, "explore baselines: %s\n", err.msg);
        return EXIT_FAIL;
    }
    ds_options dso = {.data_dir = a.p.data_dir};
    hg_graph *g = ds_open(a.p.dataset, &dso, &err);
    if (!g) {
        fprintf(stderr, "explore baselines: %s\n", err.msg);
        return EXIT_FAIL;
    }
    hg_stats stats;
    hg_stats_compute(g, &stats);
    printf("%s on %s: %lld nodes, %lld edges, %d relations; dims %d,%d, heads %d\n", a.p.dataset, dev.name,
           (long long)stats.nodes, (long long)stats.edges, stats.edge_types, d.in_dim, d.out_dim, d.heads);
    bl_session ss = {0};
    int record = !a.no_record && !a.validate_only;
    rc = record ? open_session(&ss, &a, &dev, a.p.dataset, &stats, argc, argv, &err) : 0;
    for (int i = 0; i < nmodels && !rc; i++) rc = measure_model(&ss, models[i], g, &d, &a, &o, &err);
    if (rc) fprintf(stderr, "explore baselines: %s\n", err.msg);
    if (ss.store) {
        rg_err ferr;
        if (ss.run_id > 0) rs_finish_run(ss.store, ss.run_id, rc ? RS_RUN_FAILED : RS_RUN_FINISHED, &ferr);
        if (!rc) printf("recorded in %s (run %lld)\n", a.p.db, (long long)ss.run_id);
        rs_close(ss.store);
    }
    free(ss.device_key);
    hg_free(g);
    return rc ? EXIT_FAIL : (ss.failures ? 3 : 0);
}
