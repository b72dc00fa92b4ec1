/* `explore run` (one variant: validate against the CPU reference, then time it) and
 * `explore gen` (write the generated CUDA sources and launch plan of variants). */
#include "cli/runcli.h"
#include "cli/problem.h"
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
    cp_problem p;
    const char *out, *space;
    int compile_sm, show_plan;
} run_args;

static const char RUN_USAGE[] =
    "usage: explore run --model M --dataset D [--task infer|train] [--dims IN,OUT] [--heads H]\n"
    "                   [--config KEY=VAL,...] [--data-dir DIR] [--mem-limit BYTES]\n"
    "                   [--repeats N] [--warmup N] [--plan]\n"
    "Builds one variant, validates it against the float64 CPU reference, then times it\n"
    "(warm-up, repeats, median) and prints per-kernel times and peak device memory.\n";

static const char GEN_USAGE[] =
    "usage: explore gen --model M [--dataset D] [--task infer|train] [--dims IN,OUT] [--heads H]\n"
    "                   [--config KEY=VAL,... | --space default|full|FILE] --out DIR [--compile SM]\n"
    "Writes the generated .cu files of one variant (or of every valid variant of a space, one\n"
    "folder each) and a readable launch plan (plan.txt). Each .cu compiles on its own with\n"
    "`nvcc -cubin -arch=sm_90 FILE.cu`. --compile SM also compiles them with NVRTC (no GPU needed).\n"
    "The dataset only informs the reordering decision (nominal sizes without one).\n";

/* The table of run (gen = 0) or gen (gen = 1). */
static void command(ro_cmd *c, run_args *a, int gen)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    ro_init(c, gen ? "explore gen" : "explore run", gen ? GEN_USAGE : RUN_USAGE, NULL);
    cp_add_options(c, &a->p, CP_PROBLEM | CP_CONFIG | (gen ? 0 : CP_MEM_LIMIT | CP_REPEATS));
    if (gen) {
        ro_add(c, (ro_opt){.name = "space", .arg = "S", .kind = RO_STR, .dst = &a->space, .help = "default, full or a space file: every valid variant"});
        ro_add(c, (ro_opt){.name = "out", .arg = "DIR", .kind = RO_STR, .dst = &a->out, .help = "where the sources go (required)"});
        ro_add(c, (ro_opt){.name = "compile", .arg = "SM", .kind = RO_INT, .dst = &a->compile_sm, .help = "also compile them with NVRTC for sm_SM", .lo = 50, .hi = 200});
    } else {
        ro_add(c, (ro_opt){.name = "plan", .arg = NULL, .kind = RO_FLAG, .dst = &a->show_plan, .help = "also print the launch plan"});
    }
}

/* 0, or the exit status (0 after the help, 2 for bad input). */
static int parse_args(int argc, char **argv, run_args *a, int gen, cg_config *cfg, int *exit_rc)
{
    ro_cmd c;
    command(&c, a, gen);
    int rc = ro_parse(&c, argc, argv);
    if (rc) return *exit_rc = ro_exit(rc), -1;
    rg_err err;
    if (!a->p.model) rc = ro_bad(c.name, "--model is required (rgcn, rgat, hgt or a .rgnn file)");
    else if (!gen && !a->p.dataset) rc = ro_bad(c.name, "--dataset is required");
    else if (gen && !a->out) rc = ro_bad(c.name, "--out DIR is required");
    else if (gen && a->p.config && a->space) rc = ro_bad(c.name, "give --config or --space, not both");
    else if (cp_check(&a->p, &err) || cp_config(&a->p, cfg, &err)) rc = ro_fail(c.name, &err);
    *exit_rc = rc;
    return rc ? -1 : 0;
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
    printf("%s (tolerance %s)\n", r->evidence, pl_is_train(a->p.task) ? "1e-4" : "1e-5");
    printf("\n%-34s %-10s %-4s %12s %12s\n", "kernel", "category", "pass", "median us", "spread us");
    for (int i = 0; i < r->nkernels; i++)
        printf("%-34s %-10s %-4s %12.2f %12.2f\n", r->kernels[i].name, r->kernels[i].category,
               r->kernels[i].backward ? "bwd" : "fwd", r->kernels[i].median_ns / 1e3, r->kernels[i].spread_ns / 1e3);
    printf("\ntotal (median of %d runs, sum of kernel times): %.4f ms  [min %.4f, max %.4f, sd %.4f]\n", r->repeats,
           r->median_ms, r->min_ms, r->max_ms, r->stddev_ms);
    printf("by category: gemm %.4f ms, traversal %.4f ms, other %.4f ms", r->gemm_ms, r->traversal_ms, r->other_ms);
    if (pl_is_train(a->p.task)) printf("; forward %.4f ms, backward %.4f ms", r->fwd_ms, r->bwd_ms);
    char mb[32];
    printf("\npeak device memory: %s\n", mp_format_bytes((size_t)r->peak_mem_bytes, mb));
    double floor_ms = 1e3 * fmax(r->bytes / FLOOR_BYTES_PER_S, r->flops / FLOOR_FLOPS_PER_S);
    printf("analytic: %.3g flops, %.3g bytes, %.3g atomics, %d launches; floor %.4f ms (%.1fx from it)\n", r->flops,
           r->bytes, r->atomics, r->launches, floor_ms, floor_ms > 0 ? r->median_ms / floor_ms : NAN);
    printf("compile: %.2f s\n", r->compile_s);
}

int xr_run_main(int argc, char **argv)
{
    run_args a;
    cg_config cfg;
    int rc;
    if (parse_args(argc, argv, &a, 0, &cfg, &rc)) return rc;
    rg_err err;
    xb_problem prob;
    if (cp_to_xb(&a.p, &prob, &err)) return ro_fail("explore run", &err);
    xb_backend *b = xb_gpu_backend(&err);
    if (!b) {
        fprintf(stderr, "explore run: %s\n", err.msg);
        return 1;
    }
    hg_stats st;
    fprintf(stderr, "preparing %s on %s (%s, dims %d,%d, heads %d): dataset, CPU reference, graph upload...\n", prob.model,
            prob.dataset, prob.task, prob.dim_in, prob.dim_out, prob.heads);
    double t0 = rg_now();
    if (b->prepare(b, &prob, &st, &err)) {
        fprintf(stderr, "explore run: %s\n", err.msg);
        b->close(b);
        return 1;
    }
    printf("dataset %s: %lld nodes, %lld edges, %d node types, %d edge types, compaction ratio %.3f (prepared in %.1f s)\n",
           prob.dataset, (long long)st.nodes, (long long)st.edges, st.node_types, st.edge_types, st.compaction_ratio,
           rg_now() - t0);
    xb_options opt = {.warmup = a.p.warmup, .repeats = a.p.repeats};
    xb_result r;
    rc = b->measure(b, &cfg, &opt, &r, &err);
    if (rc) fprintf(stderr, "explore run: %s\n", err.msg);
    else print_result(&a, &cfg, &r);
    b->close(b);
    return rc ? 1 : (r.status == RS_OK ? 0 : 3);
}

/* Writes one variant's sources into dir; with sm > 0 also compiles them with NVRTC.
 * PL_INAPPLICABLE when the config chooses a pass the model has nothing for. */
static int gen_one(const run_args *a, const cg_config *cfg, const hg_graph *g, const char *dir, FILE *log,
                   rg_err *err)
{
    pl_problem p = {.model = a->p.model, .task = a->p.task, .dims = {a->p.dims[0], a->p.dims[1], a->p.heads}};
    ir_program *ir;
    lw_program *lp;
    int rc = pl_build(&p, cfg, g, log, &ir, &lp, err);
    if (rc) return rc;
    cg_variant v;
    rc = cg_build(ir, lp, cfg, &v, err);
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
    run_args a;
    cg_config cfg;
    int rc;
    if (parse_args(argc, argv, &a, 1, &cfg, &rc)) return rc;
    rg_err err;
    hg_graph *g = NULL;
    if (a.p.dataset) {
        ds_options dso = {.data_dir = a.p.data_dir};
        g = ds_open(a.p.dataset, &dso, &err);
        if (!g) {
            fprintf(stderr, "explore gen: %s\n", err.msg);
            return 1;
        }
    }
    int failures = 0, total = 0, skipped = 0;
    if (!a.space) {
        if (gen_one(&a, &cfg, g, a.out, stdout, &err)) {
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
        int grc = gen_one(&a, &pts[i].cfg, g, dir, NULL, &err);
        if (grc == PL_INAPPLICABLE) {
            fprintf(stderr, "variant %d (%s): skipped: %s\n", i, cs, err.msg);
            skipped++;
        } else if (grc) {
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
    printf("%d variants of space %s written under %s%s; %d not for this model; %d failed\n", total - skipped,
           a.space, a.out, a.compile_sm ? " and compiled" : "", skipped, failures);
    free(pts);
    hg_free(g);
    return failures ? 1 : 0;
}
