/* Command-line front ends of the baselines: `explore import`, `explore compare-baselines` and
 * `explore baselines` (measure and record the cuBLAS-built layers on the current GPU). */
#include "cli/blcli.h"
#include "baselines/compare.h"
#include "baselines/cublas_layers.h"
#include "baselines/import.h"
#include "codegen/pipeline.h"
#include "common/json.h"
#include "datasets/dataset.h"
#include "cli/runcli.h"
#include "runtime/memplan.h"
#include "runtime/rt.h"
#include "results/store.h"

#include <cupti.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* ------------------------------------------------------------ arguments ---- */

typedef struct opt {
    const char *name;          /* without "--" */
    const char **value;        /* NULL for a flag */
    int *flag;
} opt;

/* --name VALUE, --name=VALUE and flags; other words go to pos (at most maxpos).
 * Returns 0, 1 for --help, or EXIT_USAGE after saying why. */
static int parse(const char *cmd, int argc, char **argv, const opt *opts, int nopts, const char **pos, int maxpos,
                 int *npos)
{
    *npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 1;
        if (strncmp(a, "--", 2)) {
            if (*npos == maxpos) {
                fprintf(stderr, "explore %s: unexpected argument '%s' (see --help)\n", cmd, a);
                return EXIT_USAGE;
            }
            pos[(*npos)++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        const opt *o = NULL;
        for (int k = 0; k < nopts && !o; k++)
            if (strlen(opts[k].name) == len && !strncmp(a + 2, opts[k].name, len)) o = &opts[k];
        if (!o) {
            fprintf(stderr, "explore %s: unknown option '%s' (see --help)\n", cmd, a);
            return EXIT_USAGE;
        }
        if (o->flag) {
            *o->flag = 1;
        } else if (eq) {
            *o->value = eq + 1;
        } else if (i + 1 < argc) {
            *o->value = argv[++i];
        } else {
            fprintf(stderr, "explore %s: --%s needs a value\n", cmd, o->name);
            return EXIT_USAGE;
        }
    }
    return 0;
}

static int int_arg(const char *flag, const char *v, int lo, int hi, int *out, rg_err *err)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi)
        return rg_errf(err, "--%s expects an integer in [%d, %d], got '%s'", flag, lo, hi, v);
    *out = (int)x;
    return 0;
}

static void git_commit(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = popen("git rev-parse HEAD 2>/dev/null", "r");
    if (!f) return;
    char line[128] = "";
    if (fgets(line, sizeof line, f)) {
        size_t n = strspn(line, "0123456789abcdef");
        if (n >= 7 && (line[n] == '\n' || line[n] == 0)) snprintf(out, cap, "%.*s", (int)n, line);
    }
    pclose(f);
}

static char *joined_command(int argc, char **argv)
{
    rg_str b = {0};
    rg_str_puts(&b, "explore");
    for (int i = 0; i < argc; i++) rg_str_printf(&b, " %s", argv[i]);
    return b.s;
}

/* --------------------------------------------------------------- import ---- */

static const char IMPORT_HELP[] =
    "usage: explore import CSV [--db PATH] [--commit C]\n"
    "\n"
    "Loads baseline measurements (the CSV baselines/pyg_bench.py writes) into the results store,\n"
    "under a run of their own, each row a measurement tagged by its system and layer.\n"
    "Columns: system, layer, model, task, dataset, dims, heads, status, median_ms (required);\n"
    "dim_in, dim_out, min_ms, max_ms, stddev_ms, repeats, peak_mem_bytes, gpu, sm,\n"
    "torch_version, pyg_version, cuda_version, error (optional). Every row is checked before\n"
    "anything is written.\n"
    "\n"
    "  --db PATH     results database (default " RS_DEFAULT_DB ")\n"
    "  --commit C    code version to record (default: git rev-parse HEAD)\n";

int blcli_import_main(int argc, char **argv)
{
    const char *db = RS_DEFAULT_DB, *commit = NULL, *pos[1];
    int npos;
    opt opts[] = {{"db", &db, NULL}, {"commit", &commit, NULL}};
    int rc = parse("import", argc, argv, opts, 2, pos, 1, &npos);
    if (rc == 1) fputs(IMPORT_HELP, stdout);
    if (rc) return rc == 1 ? 0 : rc;
    if (npos != 1) {
        fprintf(stderr, "explore import: give the CSV file to import (see --help)\n");
        return EXIT_USAGE;
    }
    char head[64];
    if (!commit) git_commit(head, sizeof head), commit = head;
    rg_err err;
    rs_store *s = rs_open(db, &err);
    if (!s) {
        fprintf(stderr, "explore import: %s\n", err.msg);
        return EXIT_FAIL;
    }
    char *cmdline = joined_command(argc, argv);
    bim_stats st;
    rc = bim_import_csv(s, pos[0], commit, cmdline, &st, &err);
    free(cmdline);
    rs_close(s);
    if (rc) {
        fprintf(stderr, "explore import: %s\n", err.msg);
        return EXIT_FAIL;
    }
    printf("imported %lld measurements from %s into %s (run %lld): %lld ok, %lld out of memory, %lld failed\n",
           (long long)st.rows, pos[0], db, (long long)st.run_id, (long long)st.ok, (long long)st.oom,
           (long long)st.failed);
    return 0;
}

/* ------------------------------------------------------ compare-baselines ---- */

static const char COMPARE_HELP[] =
    "usage: explore compare-baselines [--db PATH] [--model M] [--task T] [--dataset D] [--dims N]\n"
    "                                 [--gpu NAME]\n"
    "\n"
    "For every (GPU, model, dataset, task, dims, heads) that has baseline measurements: the best\n"
    "generated variant against the best attempt of each baseline (system and layer: pyg\n"
    "RGCNConv, cublas-seg RGCN, ...), the speed-ups (baseline time / generated time), OOMs and\n"
    "failures, and the best baseline. Markdown tables, one per GPU, model and task.\n"
    "\n"
    "  --db PATH     results database (default " RS_DEFAULT_DB ")\n"
    "  --model M     rgcn, rgat, hgt ...      --task T   infer or train\n"
    "  --dataset D   one dataset              --dims N   input = output dims (e.g. 64)\n"
    "  --gpu NAME    a substring of the device (e.g. H100)\n";

int blcli_compare_main(int argc, char **argv)
{
    const char *db = RS_DEFAULT_DB, *dims = NULL, *pos[1];
    bcmp_filter f = {0};
    int npos;
    opt opts[] = {{"db", &db, NULL},        {"model", &f.model, NULL}, {"task", &f.task, NULL},
                  {"dataset", &f.dataset, NULL}, {"dims", &dims, NULL}, {"gpu", &f.gpu, NULL}};
    int rc = parse("compare-baselines", argc, argv, opts, 6, pos, 0, &npos);
    if (rc == 1) fputs(COMPARE_HELP, stdout);
    if (rc) return rc == 1 ? 0 : rc;
    rg_err err;
    const char *task;
    if ((dims && int_arg("dims", dims, 1, 65536, &f.dims, &err)) || (f.task && pl_parse_task(f.task, &task, &err))) {
        fprintf(stderr, "explore compare-baselines: %s\n", err.msg);
        return EXIT_USAGE;
    }
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

static const char BASELINES_HELP[] =
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
    "\n"
    "  --model M      rgcn, rgat, hgt, a comma-separated list, or all\n"
    "  --dataset D    a registered name, synth:..., or a folder\n"
    "  --style S      seg, bmm, grouped or all (default all)\n"
    "  --dims IN,OUT  default 64,64        --heads H   default 1\n"
    "  --mem-limit B  e.g. 24GB: tensors beyond it are an out-of-memory result (bmm)\n"
    "  --repeats N    default 10           --warmup N  default 3\n"
    "  --db PATH      results database (default " RS_DEFAULT_DB ")\n"
    "  --no-record    print only           --validate-only  no timing (and no record)\n";

typedef struct bl_args {
    const char *models, *dataset, *style, *db, *dims, *heads, *mem, *repeats, *warmup, *data_dir, *task;
    int validate_only, no_record;
} bl_args;

static int parse_baselines(int argc, char **argv, bl_args *a)
{
    memset(a, 0, sizeof *a);
    a->style = "all", a->db = RS_DEFAULT_DB, a->task = "infer";
    const char *pos[1];
    int npos;
    opt opts[] = {
        {"model", &a->models, NULL},   {"dataset", &a->dataset, NULL},  {"style", &a->style, NULL},
        {"db", &a->db, NULL},          {"dims", &a->dims, NULL},        {"heads", &a->heads, NULL},
        {"mem-limit", &a->mem, NULL},  {"repeats", &a->repeats, NULL},  {"warmup", &a->warmup, NULL},
        {"data-dir", &a->data_dir, NULL}, {"task", &a->task, NULL},
        {"validate-only", NULL, &a->validate_only}, {"no-record", NULL, &a->no_record},
    };
    int rc = parse("baselines", argc, argv, opts, (int)(sizeof opts / sizeof *opts), pos, 0, &npos);
    if (rc == 1) fputs(BASELINES_HELP, stdout);
    return rc;
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
    m.system = bl_system_name(style), m.layer = bl_layer_name(model), m.status = r->status;
    m.evidence = r->evidence[0] ? r->evidence : NULL;
    m.validation_error = r->validation_error;
    m.median_ms = r->median_ms, m.min_ms = r->min_ms, m.max_ms = r->max_ms, m.stddev_ms = r->stddev_ms;
    m.repeats = r->repeats, m.peak_mem_bytes = r->peak_mem_bytes;
    m.gemm_ms = r->gemm_ms, m.traversal_ms = r->traversal_ms, m.other_ms = r->other_ms;
    rs_kernel_time kt[XB_MAX_KERNELS];
    rs_metric mt[XB_MAX_METRICS];
    for (int i = 0; i < r->nkernels; i++)
        kt[i] = (rs_kernel_time){r->kernels[i].name, r->kernels[i].category, r->kernels[i].median_ns,
                                 r->kernels[i].spread_ns};
    for (int i = 0; i < r->nmetrics; i++)
        mt[i] = (rs_metric){r->metrics[i].kernel, r->metrics[i].name, r->metrics[i].unit, r->metrics[i].value};
    return rs_record(ss->store, &m, kt, (size_t)r->nkernels, mt, (size_t)r->nmetrics, err) < 0 ? -1 : 0;
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
    ss->store = rs_open(a->db, err);
    if (!ss->store) return -1;
    char commit[64], driver[32], cuda[32], cupti[32] = "unknown";
    git_commit(commit, sizeof commit);
    snprintf(driver, sizeof driver, "%d.%d", dev->driver_version / 1000, (dev->driver_version % 1000) / 10);
    snprintf(cuda, sizeof cuda, "%d.%d", dev->runtime_version / 1000, (dev->runtime_version % 1000) / 10);
    uint32_t cv = 0;
    if (cuptiGetVersion(&cv) == CUPTI_SUCCESS) snprintf(cupti, sizeof cupti, "%u", cv);
    char *cmdline = joined_command(argc, argv);
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
static int check_args(const bl_args *a, ir_dims *d, bl_options *o, rg_err *err)
{
    memset(o, 0, sizeof *o);
    *d = (ir_dims){64, 64, 1};
    if (!a->models || !a->dataset) return rg_errf(err, "--model and --dataset are required (see --help)");
    const char *task;
    if (pl_parse_task(a->task, &task, err)) return -1;
    if (strcmp(task, "infer"))
        return rg_errf(err, "the cuBLAS baselines are inference-only; PyG's layers (baselines/pyg_bench.py) "
                            "cover training");
    bl_style st;
    if (strcmp(a->style, "all") && bl_style_parse(a->style, &st, err)) return -1;
    if (a->dims && xr_parse_dims(a->dims, &d->in_dim, &d->out_dim, err)) return -1;
    if (a->heads && int_arg("heads", a->heads, 1, 64, &d->heads, err)) return -1;
    if (d->out_dim % d->heads) return rg_errf(err, "--heads %d does not divide the output dim %d", d->heads, d->out_dim);
    if (a->mem && mp_parse_bytes(a->mem, &o->mem_limit, err)) return -1;
    if (a->repeats && int_arg("repeats", a->repeats, 1, 100000, &o->repeats, err)) return -1;
    if (a->warmup && int_arg("warmup", a->warmup, 0, 100000, &o->warmup, err)) return -1;
    if (a->warmup && o->warmup == 0) o->warmup = -1;   /* bl_options: 0 is the default, negative none */
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
    int rc = parse_baselines(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    rg_err err;
    ir_dims d;
    bl_options o;
    char models[3][8];
    int nmodels;
    if (check_args(&a, &d, &o, &err) || split_models(a.models, models, &nmodels, &err)) {
        fprintf(stderr, "explore baselines: %s\n", err.msg);
        return EXIT_USAGE;
    }
    krt_device dev;
    if (krt_init(0, &dev, &err)) {
        fprintf(stderr, "explore baselines: %s\n", err.msg);
        return EXIT_FAIL;
    }
    ds_options dso = {.data_dir = a.data_dir};
    hg_graph *g = ds_open(a.dataset, &dso, &err);
    if (!g) {
        fprintf(stderr, "explore baselines: %s\n", err.msg);
        return EXIT_FAIL;
    }
    hg_stats stats;
    hg_stats_compute(g, &stats);
    printf("%s on %s: %lld nodes, %lld edges, %d relations; dims %d,%d, heads %d\n", a.dataset, dev.name,
           (long long)stats.nodes, (long long)stats.edges, stats.edge_types, d.in_dim, d.out_dim, d.heads);
    bl_session ss = {0};
    int record = !a.no_record && !a.validate_only;
    rc = record ? open_session(&ss, &a, &dev, a.dataset, &stats, argc, argv, &err) : 0;
    for (int i = 0; i < nmodels && !rc; i++) rc = measure_model(&ss, models[i], g, &d, &a, &o, &err);
    if (rc) fprintf(stderr, "explore baselines: %s\n", err.msg);
    if (ss.store) {
        rg_err ferr;
        if (ss.run_id > 0) rs_finish_run(ss.store, ss.run_id, rc ? RS_RUN_FAILED : RS_RUN_FINISHED, &ferr);
        if (!rc) printf("recorded in %s (run %lld)\n", a.db, (long long)ss.run_id);
        rs_close(ss.store);
    }
    free(ss.device_key);
    hg_free(g);
    return rc ? EXIT_FAIL : (ss.failures ? 3 : 0);
}
