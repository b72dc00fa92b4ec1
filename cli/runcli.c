/* `explore run` (one variant: validate against the CPU reference, then time it) and
 * `explore gen` (write the generated CUDA sources and launch plan of variants). */
#include "cli/runcli.h"
#include "cli/problem.h"
#include "cli/refdump.h"
#include "codegen/codegen.h"
#include "codegen/floor.h"
#include "codegen/pipeline.h"
#include "codegen/ref.h"
#include "datasets/dataset.h"
#include "measure/backend.h"
#include "measure/mgpu_backend.h"
#include "measure/validate.h"
#include "explorer/space.h"
#include "runtime/exec.h"
#include "runtime/memplan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_args {
    cp_problem p;
    const char *out, *space;
    const char *backend, *dump, *weights;   /* run: "gpu" (default) or "ref"; tensor exchange */
    int compile_sm, show_plan, metrics;
    int validate_only;                      /* run: validate, do not time (sanitizer runs) */
    int ranks;                              /* run: --ranks N, a layer over N GPUs; 0: one GPU */
    double input_scale;                     /* run: --input-scale S (0: 1) */
} run_args;

static const char RUN_USAGE[] =
    "usage: explore run --model M --dataset D [--task infer|train] [--dims IN,OUT] [--heads H]\n"
    "                   [--config KEY=VAL,...] [--data-dir DIR] [--mem-limit BYTES]\n"
    "                   [--repeats N] [--warmup N] [--flush-l2] [--metrics] [--plan]\n"
    "                   [--backend gpu|ref] [--dump DIR] [--weights DIR] [--ranks N] [--validate-only]\n"
    "                   [--input-scale S]\n"
    "Builds one variant, validates it against the float64 CPU reference, then times it\n"
    "(warm-up, repeats, median) and prints per-kernel times, the run's span, peak device\n"
    "memory and the layer's floors at the device's measured ceilings (docs/floor.md).\n"
    "--dump DIR writes the reference's tensors (inputs, weights, output; in training also the\n"
    "loss, input and weight gradients and the weights after the SGD step) as DIR/<variable>.npy\n"
    "with DIR/manifest.json. --backend ref runs only the CPU reference (no GPU needed), as\n"
    "--dump does when no GPU is present; --weights DIR (with --backend ref) replaces the seeded\n"
    "inputs, weights and labels by the ones of such a directory.\n"
    "--ranks N runs the layer over GPUs 0..N-1, relations split by the config key part\n"
    "(edges, count, rows), node sums all-reduced with NCCL (codegen/collective.h); its time is\n"
    "the host's, from every rank ready to every rank done, with the collectives' share.\n";

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
        ro_add(c, (ro_opt){.name = "validate-only", .arg = NULL, .kind = RO_FLAG, .dst = &a->validate_only,
                           .help = "validate against the reference, then stop: no timing (the profiler, which a\n"
                                   "sanitizer displaces, times launch graph and dag)"});
        ro_add(c, (ro_opt){.name = "metrics", .arg = NULL, .kind = RO_FLAG, .dst = &a->metrics,
                           .help = "collect hardware counters: achieved DRAM bandwidth against the measured ceiling"});
        ro_add(c, (ro_opt){.name = "input-scale", .arg = "S", .kind = RO_REAL, .dst = &a->input_scale, .lo = 1e-6, .hi = 1e6,
                           .help = "input features from U(-S, S) instead of U(-1, 1): attention logits grow with S\n"
                                   "(where exp of a logit overflows float32, only rmax=on keeps the softmax finite)"});
        ro_add(c, (ro_opt){.name = "backend", .arg = "B", .kind = RO_STR, .dst = &a->backend, .help = "gpu (default) or ref: the CPU reference only"});
        ro_add(c, (ro_opt){.name = "ranks", .arg = "N", .kind = RO_INT, .dst = &a->ranks, .lo = 1, .hi = 16,
                           .help = "one layer over GPUs 0..N-1, relations split by the config key part"});
        ro_add(c, (ro_opt){.name = "dump", .arg = "DIR", .kind = RO_STR, .dst = &a->dump, .help = "write the reference's tensors as .npy files and manifest.json"});
        ro_add(c, (ro_opt){.name = "weights", .arg = "DIR", .kind = RO_STR, .dst = &a->weights, .help = "inputs and weights from a --dump directory (--backend ref)"});
    }
}

static int reference_only(const run_args *a) { return a->backend && !strcmp(a->backend, "ref"); }

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
    else if (a->backend && strcmp(a->backend, "gpu") && strcmp(a->backend, "ref"))
        rc = ro_bad(c.name, "unknown --backend '%s' (gpu or ref)", a->backend);
    else if (a->weights && !reference_only(a))
        rc = ro_bad(c.name, "--weights needs --backend ref (the GPU backend validates against seeded tensors)");
    else if (cp_check(&a->p, &err) || cp_config(&a->p, cfg, &err)) rc = ro_fail(c.name, &err);
    *exit_rc = rc;
    return rc ? -1 : 0;
}

/* Sum over kernels of a per-kernel counter. NaN when no kernel has it. */
static double kernel_sum(const xb_result *r, const char *name)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < r->nmetrics; i++)
        if (r->metrics[i].kernel[0] && !strcmp(r->metrics[i].name, name)) s += r->metrics[i].value, n++;
    return n ? s : NAN;
}

/* The span against the kernel sum, the measured ceilings, the floors and (with counters)
 * the achieved DRAM bandwidth. */
static void print_floors(const xb_result *r)
{
    double span = xb_run_metric(r, "span_ms"), copy = xb_run_metric(r, "ceil_copy_Bps"), l2 = xb_run_metric(r, "ceil_l2_Bps");
    double fp32 = xb_run_metric(r, "ceil_fp32_flops"), fb = xb_run_metric(r, "floor_bytes"), ff = xb_run_metric(r, "floor_flops");
    printf("span (median, first memset or kernel start to last kernel end): %.4f ms; kernel sum %.4f ms%s\n", span,
           r->median_ms, xb_run_metric(r, "flush_l2") == 1 ? "; L2 flushed before each run" : "");
    printf("ceilings (measured): copy %.0f GB/s, L2 %.0f GB/s, FP32 %.1f TFLOP/s, TF32 %.1f, BF16 %.1f TFLOP/s\n",
           copy / 1e9, l2 / 1e9, fp32 / 1e12, xb_run_metric(r, "ceil_tf32_flops") / 1e12, xb_run_metric(r, "ceil_bf16_flops") / 1e12);
    fl_floor f = {.bytes = fb, .flops = ff};
    double dram = fl_time_ms(fb, ff, copy, fp32), l2f = fl_l2_time_ms(&f, xb_run_metric(r, "l2_bytes"), l2, fp32);
    printf("floor: %.3g bytes, %.3g flops; DRAM-cold %.4f ms (span %.1fx), L2-resident %s", fb, ff, dram,
           span / dram, isnan(l2f) ? "none (does not fit in L2)" : "");
    if (!isnan(l2f)) printf("%.4f ms (span %.1fx)", l2f, span / l2f);
    printf("\n");
    double gather = xb_run_metric(r, "gather_floor_ms"), gbwd = xb_run_metric(r, "gather_bwd_ms");
    if (!isnan(gather)) {
        printf("gather floor (one row per edge at the storage width, on the graph as given; docs/floor.md): %.4f ms", gather);
        if (!isnan(gbwd)) printf(" (forward %.4f, backward %.4f)", xb_run_metric(r, "gather_fwd_ms"), gbwd);
        printf("; span %.2fx\n", span / gather);
    }
    double moved = kernel_sum(r, "dram__bytes_read.sum") + kernel_sum(r, "dram__bytes_write.sum");
    if (!isnan(moved) && r->median_ms > 0)
        printf("achieved DRAM bandwidth: %.0f GB/s over the kernel sum, %.1f%% of the measured copy ceiling\n",
               moved / (r->median_ms / 1e3) / 1e9, 100 * moved / (r->median_ms / 1e3) / copy);
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
    /* the tolerance the variant was judged by: its precision widens the float32 one (validate.h) */
    const pl_problem pl = cp_to_pl(&a->p);
    printf("%s (tolerance %.2g)\n", r->evidence, xv_variant_tolerance(0, &pl, cfg));
    if (a->validate_only) {
        printf("validated only (--validate-only): not timed\n");
        return;
    }
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
    printf("analytic: %.3g flops, %.3g bytes, %.3g atomics, %d launches\n", r->flops, r->bytes, r->atomics,
           r->launches);
    print_floors(r);
    printf("compile: %.2f s\n", r->compile_s);
}

/* Runs the float64 reference on the graph, with --weights' tensors when given. */
static ref_exec *reference_run(const run_args *a, const ir_program *prog, const hg_graph *g, rg_err *err)
{
    ref_options ro = {.input_scale = a->input_scale};   /* seed 1, as the validator's */
    ref_exec *x = ref_new(prog, g, &ro, err);
    if (!x) return NULL;
    if ((a->weights && rd_load(x, prog, a->weights, err)) || ref_run(x, err)) {
        ref_free(x);
        return NULL;
    }
    return x;
}

/* --backend ref, or --dump without a GPU: the CPU reference alone, its tensors to --dump.
 * Returns the exit status (2 for bad --weights, 1 for other failures). */
static int reference_main(const run_args *a, const xb_problem *prob)
{
    rg_err err;
    const char *task;
    if (pl_parse_task(prob->task, &task, &err)) return ro_fail("explore run", &err);
    pl_problem pp = {.model = prob->model, .task = task, .dims = {prob->dim_in, prob->dim_out, prob->heads}};
    ds_options dso = {.data_dir = a->p.data_dir};
    hg_graph *g = ds_open(prob->dataset, &dso, &err);
    ir_program *prog = g ? pl_reference_program(&pp, &err) : NULL;
    ref_exec *x = prog ? reference_run(a, prog, g, &err) : NULL;
    int rc = x ? 0 : (prog && a->weights ? 2 : 1);
    rd_meta m = {prob->model, task, prob->dataset, prob->dim_in, prob->dim_out, prob->heads};
    if (x && a->dump && rd_dump(x, prog, g, &m, a->dump, &err)) rc = 1;
    if (rc) {
        fprintf(stderr, "explore run: %s\n", err.msg);
    } else {
        printf("reference (float64, CPU) of %s on %s (%s): %lld nodes, %lld edges", prob->model, prob->dataset, task,
               (long long)g->num_nodes, (long long)g->num_edges);
        if (pl_is_train(task)) printf(", loss %.10g", ref_loss(x));
        printf("\n");
        if (a->dump) printf("wrote the tensors and manifest.json to %s\n", a->dump);
    }
    ref_free(x);
    ir_free(prog);
    hg_free(g);
    return rc;
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
    prob.input_scale = a.input_scale;
    if (reference_only(&a)) return reference_main(&a, &prob);
    xb_backend *b = a.ranks > 0 ? xb_mgpu_backend(a.ranks, &err) : xb_gpu_backend(&err);
    if (!b && a.dump && err.code == RG_ERR_NO_DEVICE) {
        fprintf(stderr, "explore run: %s; writing the CPU reference's tensors only\n", err.msg);
        return reference_main(&a, &prob);
    }
    if (!b) {
        fprintf(stderr, "explore run: %s\n", err.msg);
        return 1;
    }
    if (a.dump && (rc = reference_main(&a, &prob)) != 0) {
        b->close(b);
        return rc;
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
    xb_options opt = {.warmup = a.p.warmup, .repeats = a.p.repeats, .metrics = a.metrics, .flush_l2 = a.p.flush_l2,
                      .validate_only = a.validate_only};
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
    pl_problem p = cp_to_pl(&a->p);
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
        cg_config c;
        sp_config_at(&sp, i, &c);
        char *cs = cfg_to_string(&c);
        char *dir = rg_xasprintf("%s/v%03d", a.out, i);
        int grc = gen_one(&a, &c, g, dir, NULL, &err);
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
