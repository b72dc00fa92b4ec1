/* `explore run` (one variant: validate against the CPU reference, then time it) and
 * `explore gen` (write the generated CUDA sources and launch plan of variants). */
#include "cli/runcli.h"
#include "codegen/codegen.h"
#include "codegen/pipeline.h"
#include "datasets/dataset.h"
#include "measure/backend.h"
#include "explorer/space.h"
#include "runtime/exec.h"
#include "runtime/memplan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Roofline ceilings of the H100 we measure on (docs/perf-notes.md): device-to-device copy
 * bandwidth and cuBLAS SGEMM throughput. */
#define FLOOR_BYTES_PER_S 3.0e12
#define FLOOR_FLOPS_PER_S 51.6e12

typedef struct run_args {
    const char *model, *dataset, *task, *config, *data_dir, *out, *space;
    int dim_in, dim_out, heads, repeats, warmup, compile_sm, show_plan;
    size_t mem_limit;
} run_args;

int xr_parse_dims(const char *s, int *in, int *out, rg_err *err)
{
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (*end == ',') b = strtol(end + 1, &end, 10);
    if (*end || a <= 0 || b <= 0 || a > 4096 || b > 4096)
        return rg_errf(err, "--dims expects IN,OUT (positive, at most 4096), got '%s'", s);
    *in = (int)a;
    *out = (int)b;
    return 0;
}

static int parse_int_arg(const char *flag, const char *v, int lo, int hi, int *out, rg_err *err)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < lo || x > hi) return rg_errf(err, "%s expects an integer in [%d, %d], got '%s'", flag, lo, hi, v);
    *out = (int)x;
    return 0;
}

static void usage_run(FILE *f)
{
    fprintf(f,
            "usage: explore run --model M --dataset D [--task infer|train] [--dims IN,OUT] [--heads H]\n"
            "                   [--config KEY=VAL,...] [--data-dir DIR] [--mem-limit BYTES]\n"
            "                   [--repeats N] [--warmup N] [--plan]\n"
            "Builds one variant, validates it against the float64 CPU reference, then times it\n"
            "(warm-up, repeats, median) and prints per-kernel times and peak device memory.\n"
            "  --model    a name in models/ (rgcn, rgat, hgt) or a .rgnn file\n"
            "  --dataset  a registered name, synth:NAME, synth:nodes=..,edges=.. or a folder\n"
            "  --config   e.g. compact=direct,reorder=on,tile=32,coarsen=2,lb=off,w=shmem,trav=node,pagg=on\n"
            "  --mem-limit e.g. 24GB: report out-of-memory as a result above this many bytes\n"
            "  --plan     also print the launch plan\n");
}

static void usage_gen(FILE *f)
{
    fprintf(f,
            "usage: explore gen --model M [--dataset D] [--task infer|train] [--dims IN,OUT] [--heads H]\n"
            "                   [--config KEY=VAL,... | --space default|full|FILE] --out DIR [--compile SM]\n"
            "Writes the generated .cu files of one variant (or of every valid variant of a space, one\n"
            "folder each) and a readable launch plan (plan.txt). Each .cu compiles on its own with\n"
            "`nvcc -cubin -arch=sm_90 FILE.cu`. --compile SM also compiles them with NVRTC (no GPU needed).\n"
            "The dataset only informs the reordering decision (nominal sizes without one).\n");
}

static int parse_args(int argc, char **argv, run_args *a, int gen, rg_err *err)
{
    memset(a, 0, sizeof *a);
    a->task = "infer";
    a->dim_in = a->dim_out = 64;
    a->heads = 1;
    a->repeats = 10;
    a->warmup = 3;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(o, "--plan")) { a->show_plan = 1; takes = 0; }
        else if (!v && o[0] == '-' && o[1] == '-') return rg_errf(err, "%s needs a value", o);
        else if (!strcmp(o, "--model")) a->model = v;
        else if (!strcmp(o, "--dataset")) a->dataset = v;
        else if (!strcmp(o, "--task")) a->task = v;
        else if (!strcmp(o, "--config")) a->config = v;
        else if (!strcmp(o, "--data-dir")) a->data_dir = v;
        else if (!strcmp(o, "--dims")) { if (xr_parse_dims(v, &a->dim_in, &a->dim_out, err)) return -1; }
        else if (!strcmp(o, "--heads")) { if (parse_int_arg(o, v, 1, 64, &a->heads, err)) return -1; }
        else if (!strcmp(o, "--repeats") && !gen) { if (parse_int_arg(o, v, 1, 100000, &a->repeats, err)) return -1; }
        else if (!strcmp(o, "--warmup") && !gen) { if (parse_int_arg(o, v, 0, 100000, &a->warmup, err)) return -1; }
        else if (!strcmp(o, "--mem-limit") && !gen) { if (mp_parse_bytes(v, &a->mem_limit, err)) return -1; }
        else if (!strcmp(o, "--out") && gen) a->out = v;
        else if (!strcmp(o, "--space") && gen) a->space = v;
        else if (!strcmp(o, "--compile") && gen) { if (parse_int_arg(o, v, 50, 200, &a->compile_sm, err)) return -1; }
        else return rg_errf(err, "unknown option '%s' (see --help)", o);
        i += takes;
    }
    if (!a->model) return rg_errf(err, "--model is required (rgcn, rgat, hgt or a .rgnn file)");
    if (!gen && !a->dataset) return rg_errf(err, "--dataset is required");
    if (gen && !a->out) return rg_errf(err, "--out DIR is required");
    if (gen && a->config && a->space) return rg_errf(err, "give --config or --space, not both");
    const char *canon;
    if (pl_parse_task(a->task, &canon, err)) return -1;
    a->task = canon;
    if (a->dim_out % a->heads) return rg_errf(err, "--heads %d does not divide the output dim %d", a->heads, a->dim_out);
    return 0;
}

static int want_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

static void print_result(const run_args *a, const cg_config *cfg, const xb_result *r)
{
    char *cs = cfg_to_string(cfg);
    printf("variant: %s\n", cs);
    free(cs);
    printf("status: %s\n", rs_status_name(r->status));
    if (r->status != RS_OK) {
        printf("%s\n", r->evidence);
        return;
    }
    printf("%s (tolerance %s)\n", r->evidence, pl_is_train(a->task) ? "1e-4" : "1e-5");
    printf("\n%-34s %-10s %-4s %12s %12s\n", "kernel", "category", "pass", "median us", "spread us");
    for (int i = 0; i < r->nkernels; i++)
        printf("%-34s %-10s %-4s %12.2f %12.2f\n", r->kernels[i].name, r->kernels[i].category,
               r->kernels[i].backward ? "bwd" : "fwd", r->kernels[i].median_ns / 1e3, r->kernels[i].spread_ns / 1e3);
    printf("\ntotal (median of %d runs, sum of kernel times): %.4f ms  [min %.4f, max %.4f, sd %.4f]\n", r->repeats,
           r->median_ms, r->min_ms, r->max_ms, r->stddev_ms);
    printf("by category: gemm %.4f ms, traversal %.4f ms, other %.4f ms", r->gemm_ms, r->traversal_ms, r->other_ms);
    if (pl_is_train(a->task)) printf("; forward %.4f ms, backward %.4f ms", r->fwd_ms, r->bwd_ms);
    char mb[32];
    printf("\npeak device memory: %s\n", mp_format_bytes((size_t)r->peak_mem_bytes, mb));
    double floor_ms = 1e3 * fmax(r->bytes / FLOOR_BYTES_PER_S, r->flops / FLOOR_FLOPS_PER_S);
    printf("analytic: %.3g flops, %.3g bytes, %.3g atomics, %d launches; floor %.4f ms (%.1fx from it)\n", r->flops,
           r->bytes, r->atomics, r->launches, floor_ms, floor_ms > 0 ? r->median_ms / floor_ms : NAN);
    printf("compile: %.2f s\n", r->compile_s);
}

int xr_run_main(int argc, char **argv)
{
    if (want_help(argc, argv)) {
        usage_run(stdout);
        return 0;
    }
    run_args a;
    rg_err err;
    cg_config cfg;
    cfg_default(&cfg);
    if (parse_args(argc, argv, &a, 0, &err) || (a.config && cfg_parse(&cfg, a.config, &err)) ||
        cfg_validate(&cfg, &err)) {
        fprintf(stderr, "explore run: %s\n", err.msg);
        return 2;
    }
    xb_backend *b = xb_gpu_backend(&err);
    if (!b) {
        fprintf(stderr, "explore run: %s\n", err.msg);
        return 1;
    }
    xb_problem prob = {.dim_in = a.dim_in, .dim_out = a.dim_out, .heads = a.heads, .data_dir = a.data_dir,
                       .mem_limit = a.mem_limit};
    snprintf(prob.model, sizeof prob.model, "%s", a.model);
    snprintf(prob.dataset, sizeof prob.dataset, "%s", a.dataset);
    snprintf(prob.task, sizeof prob.task, "%s", a.task);
    hg_stats st;
    fprintf(stderr, "preparing %s on %s (%s, dims %d,%d, heads %d): dataset, CPU reference, graph upload...\n", a.model,
            a.dataset, a.task, a.dim_in, a.dim_out, a.heads);
    double t0 = rg_now();
    if (b->prepare(b, &prob, &st, &err)) {
        fprintf(stderr, "explore run: %s\n", err.msg);
        b->close(b);
        return 1;
    }
    printf("dataset %s: %lld nodes, %lld edges, %d node types, %d edge types, compaction ratio %.3f (prepared in %.1f s)\n",
           a.dataset, (long long)st.nodes, (long long)st.edges, st.node_types, st.edge_types, st.compaction_ratio,
           rg_now() - t0);
    xb_options opt = {.warmup = a.warmup, .repeats = a.repeats};
    xb_result r;
    int rc = b->measure(b, &cfg, &opt, &r, &err);
    if (rc) fprintf(stderr, "explore run: %s\n", err.msg);
    else print_result(&a, &cfg, &r);
    b->close(b);
    return rc ? 1 : (r.status == RS_OK ? 0 : 3);
}

/* Writes one variant's sources into dir; with sm > 0 also compiles them with NVRTC. */
static int gen_one(const run_args *a, const cg_config *cfg, const hg_graph *g, const char *dir, FILE *log,
                   rg_err *err)
{
    pl_problem p = {.model = a->model, .task = a->task, .dims = {a->dim_in, a->dim_out, a->heads}};
    ir_program *ir;
    lw_program *lp;
    if (pl_build(&p, cfg, g, log, &ir, &lp, err)) return -1;
    cg_variant v;
    int rc = cg_build(ir, lp, cfg, &v, err);
    if (rc == 0) {
        rc = cg_write_sources(&v, ir, dir, err);
        if (rc == 0 && a->compile_sm) {
            kx_compiled c;
            rc = kx_compile(&v.plan, a->compile_sm, 2, &c, err);
            if (rc == 0) kx_compiled_free(&c);
        }
        cg_variant_free(&v);
    }
    lw_free(lp);
    ir_free(ir);
    return rc;
}

int xr_gen_main(int argc, char **argv)
{
    if (want_help(argc, argv)) {
        usage_gen(stdout);
        return 0;
    }
    run_args a;
    rg_err err;
    if (parse_args(argc, argv, &a, 1, &err)) {
        fprintf(stderr, "explore gen: %s\n", err.msg);
        return 2;
    }
    hg_graph *g = NULL;
    if (a.dataset) {
        ds_options dso = {.data_dir = a.data_dir};
        g = ds_open(a.dataset, &dso, &err);
        if (!g) {
            fprintf(stderr, "explore gen: %s\n", err.msg);
            return 1;
        }
    }
    int failures = 0, total = 0;
    if (!a.space) {
        cg_config cfg;
        cfg_default(&cfg);
        if ((a.config && cfg_parse(&cfg, a.config, &err)) || gen_one(&a, &cfg, g, a.out, stdout, &err)) {
            fprintf(stderr, "explore gen: %s\n", err.msg);
            hg_free(g);
            return 1;
        }
        printf("wrote %s (sources and plan.txt)\n", a.out);
        hg_free(g);
        return 0;
    }
    sp_space sp;
    sp_point *pts;
    int n;
    if (sp_load(a.space, &sp, &err) || sp_enumerate(&sp, &pts, &n, &err)) {
        fprintf(stderr, "explore gen: %s\n", err.msg);
        hg_free(g);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        if (!pts[i].valid) continue;
        total++;
        char *cs = cfg_to_string(&pts[i].cfg);
        char *dir = rg_xasprintf("%s/v%03d", a.out, i);
        if (gen_one(&a, &pts[i].cfg, g, dir, NULL, &err)) {
            fprintf(stderr, "variant %d (%s): %s\n", i, cs, err.msg);
            failures++;
        } else {
            char *cfgpath = rg_xasprintf("%s/config.txt", dir);
            FILE *f = fopen(cfgpath, "w");
            if (f) {
                fprintf(f, "%s\n", cs);
                fclose(f);
            }
            free(cfgpath);
        }
        free(dir);
        free(cs);
    }
    printf("%d variants of space %s written under %s%s; %d failed\n", total, a.space, a.out,
           a.compile_sm ? " and compiled" : "", failures);
    free(pts);
    hg_free(g);
    return failures ? 1 : 0;
}
