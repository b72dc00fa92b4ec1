/* A simulated measurement backend for testing the sweep driver without a GPU: timings are a
 * deterministic function of config and problem, and failures of every class are injected. */
#include "measure/backend.h"
#include "datasets/dataset.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* What an injected failure does. */
typedef enum sim_kind {
    K_INVALID, K_COMPILE, K_LAUNCH, K_FAULT, K_ABORT, K_WRONG, K_HANG, K_OOM, K_BROKEN, K_PREPARE, K_REFERENCE, K_COUNT
} sim_kind;

static const char *const KIND_NAMES[K_COUNT] = {
    "invalid", "compile", "launch", "fault", "abort", "wrong", "hang", "oom", "broken", "prepare", "reference",
};

#define SIM_MAX_RULES 64

/* kind@index, kind@key=val+key=val (every listed key matches), kind alone (every variant);
 * prepare@NAME and reference@NAME match the dataset. */
typedef struct sim_rule {
    sim_kind kind;
    int index;            /* -1: not by index */
    char match[128];      /* "key=val,key=val" or a dataset name; "" with index -1: always */
} sim_rule;

typedef struct sim_ctx {
    sim_rule rules[SIM_MAX_RULES];
    int nrules;
    uint64_t seed;
    double scale;         /* multiplies every time (to fake a regression) */
    int slow_ms;          /* sleep per measure (to have time to interrupt a sweep) */
    char device[128];
    int sm;
    xb_problem problem;
    hg_stats stats;
    int index;            /* the variant being measured, from xb_sim_set_index; -1 unknown */
} sim_ctx;

const char *xb_sim_help(void)
{
    return "--backend sim[:KEY=VAL,...]  simulated backend for testing without a GPU:\n"
           "    deterministic timings from the config and the dataset's statistics, and injected\n"
           "    failures. Keys:\n"
           "    fail=CLASS[@WHERE],...  CLASS: invalid, compile, launch, fault (the worker gets\n"
           "        SIGSEGV), abort, wrong, hang (the worker sleeps until --timeout), oom,\n"
           "        broken (the backend reports itself broken), prepare (preparing fails),\n"
           "        reference (building the reference fails, once a variant is to be measured).\n"
           "        WHERE: a variant's index in the space's enumeration (fail=fault@11), config\n"
           "        keys joined by + (fail=compile@tile=16+coarsen=4), or for prepare and\n"
           "        reference a dataset name; none: every variant. Example:\n"
           "        sim:fail=compile@3,oom@7,hang@15\n"
           "    seed=N  noise seed; scale=F  multiply every time by F; slow=MS  sleep per variant\n"
           "    device=NAME, sm=N  the simulated GPU (default 'Simulated GPU', 90)\n";
}

/* ---- Spec parsing ---- */

static int parse_rule(sim_ctx *c, const char *item, rg_err *err)
{
    if (c->nrules == SIM_MAX_RULES) return rg_errf(err, "--backend sim: more than %d fail= items", SIM_MAX_RULES);
    sim_rule *r = &c->rules[c->nrules];
    memset(r, 0, sizeof *r);
    r->index = -1;
    const char *at = strchr(item, '@');
    size_t klen = at ? (size_t)(at - item) : strlen(item);
    int k = 0;
    while (k < K_COUNT && (strlen(KIND_NAMES[k]) != klen || strncmp(item, KIND_NAMES[k], klen))) k++;
    if (k == K_COUNT)
        return rg_errf(err, "--backend sim: unknown failure class '%.*s' (invalid, compile, launch, fault, abort, "
                            "wrong, hang, oom, broken, prepare, reference)", (int)klen, item);
    r->kind = (sim_kind)k;
    if (at && (r->kind == K_PREPARE || r->kind == K_REFERENCE)) {
        snprintf(r->match, sizeof r->match, "%s", at + 1);
    } else if (at) {
        char *end;
        long idx = strtol(at + 1, &end, 10);
        if (at[1] && !*end && idx >= 0) {
            r->index = (int)idx;
        } else {
            snprintf(r->match, sizeof r->match, "%s", at + 1);
            for (char *p = r->match; *p; p++)
                if (*p == '+') *p = ',';
            cg_config probe;
            cfg_default(&probe);
            if (cfg_parse(&probe, r->match, err)) {
                rg_err_prefix(err, "--backend sim: fail=%s", item);
                return -1;
            }
        }
    }
    c->nrules++;
    return 0;
}

static int parse_number(const char *key, const char *val, double lo, double hi, double *out, rg_err *err)
{
    char *end;
    double v = strtod(val, &end);
    if (!*val || *end || !(v >= lo && v <= hi))
        return rg_errf(err, "--backend sim: %s must be a number in [%g, %g] (got '%s')", key, lo, hi, val);
    *out = v;
    return 0;
}

static int parse_item(sim_ctx *c, const char *key, const char *val, rg_err *err)
{
    double v;
    if (!strcmp(key, "fail")) return parse_rule(c, val, err);
    if (!strcmp(key, "device")) {
        snprintf(c->device, sizeof c->device, "%s", val);
        return 0;
    }
    if (!strcmp(key, "seed")) return parse_number(key, val, 0, 1e15, &v, err) ? -1 : (c->seed = (uint64_t)v, 0);
    if (!strcmp(key, "scale")) return parse_number(key, val, 1e-6, 1e6, &c->scale, err);
    if (!strcmp(key, "slow")) return parse_number(key, val, 0, 600000, &v, err) ? -1 : (c->slow_ms = (int)v, 0);
    if (!strcmp(key, "sm")) return parse_number(key, val, 10, 200, &v, err) ? -1 : (c->sm = (int)v, 0);
    return rg_errf(err, "--backend sim: unknown key '%s' (fail, seed, scale, slow, device, sm)", key);
}

/* "sim" or "sim:k=v,k=v"; an item without its own key (before any '=' or with an '@' first)
 * continues the fail= list: sim:fail=compile@3,oom@7. */
static int parse_spec(sim_ctx *c, const char *spec, rg_err *err)
{
    if (strncmp(spec, "sim", 3) || (spec[3] && spec[3] != ':'))
        return rg_errf(err, "--backend: '%s' is not a sim[:...] spec", spec);
    if (!spec[3] || !spec[4]) return 0;
    char *copy = rg_xstrdup(spec + 4), *save = NULL, last_key[16] = "";
    int rc = 0;
    for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *at = strchr(item, '@');
        if (eq && (!at || eq < at)) {
            *eq = 0;
            snprintf(last_key, sizeof last_key, "%s", item);
            rc = parse_item(c, item, eq + 1, err);
        } else if (!strcmp(last_key, "fail")) {
            rc = parse_rule(c, item, err);
        } else {
            rc = rg_errf(err, "--backend sim: expected KEY=VALUE, got '%s'", item);
        }
    }
    free(copy);
    return rc;
}

/* ---- Rules ---- */

static int config_matches(const cg_config *cfg, const char *kv)
{
    cg_config probe = *cfg;
    if (cfg_parse(&probe, kv, NULL)) return 0;
    char *a = cfg_to_string(cfg), *b = cfg_to_string(&probe);
    int same = !strcmp(a, b);
    free(a);
    free(b);
    return same;
}

/* The first rule (other than prepare and reference) that applies to this variant, or NULL. */
static const sim_rule *find_rule(const sim_ctx *c, const cg_config *cfg)
{
    for (int i = 0; i < c->nrules; i++) {
        const sim_rule *r = &c->rules[i];
        if (r->kind == K_PREPARE || r->kind == K_REFERENCE) continue;
        if (r->index >= 0 ? r->index == c->index : !r->match[0] || config_matches(cfg, r->match)) return r;
    }
    return NULL;
}

/* ---- The timing model ---- */

/* Shape of a model's layer: edgewise GEMMs whose rows compaction shrinks, edgewise GEMMs it
 * cannot shrink (RGAT's destination-side product), nodewise GEMMs, traversal passes, the
 * share of GEMM work reordering folds into weight products, and kernels per pass. */
typedef struct sim_model {
    const char *name;
    double gemm_compactable, gemm_fixed, gemm_node, trav_passes, reorder_saving;
    int kernels;
} sim_model;

static const sim_model MODELS[] = {
    {"rgcn", 1, 0, 1, 1, 0.00, 2},
    {"rgat", 1, 1, 0, 3, 0.35, 4},
    {"hgt", 1, 1, 3, 3, 0.30, 6},
};

static const sim_model *find_model(const char *name)
{
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (!strcmp(MODELS[i].name, name)) return &MODELS[i];
    size_t n = strlen(name);
    if (n > 5 && !strcmp(name + n - 5, ".rgnn") && rg_file_exists(name)) return &MODELS[1];
    return NULL;
}

/* Uniform [0, 1) from a string and a salt: the same inputs give the same noise. */
static double noise(const char *what, uint64_t salt)
{
    rg_rng r;
    rg_rng_seed(&r, rg_fnv1a64(what, strlen(what), RG_FNV_SEED ^ salt));
    return rg_rng_uniform(&r);
}

static double gemm_efficiency(const cg_config *c, int dim_out)
{
    double e = c->tile == 16 ? 0.75 : c->tile == 32 ? 1.0 : 0.9;
    e *= c->coarsen == 1 ? 0.85 : c->coarsen == 2 ? 1.0 : (c->tile == 16 ? 0.8 : 0.95);
    if (c->launch_bounds) e *= 1.03;
    if (c->w_regs) e *= c->tile == 16 ? 1.05 : 0.9;
    if (dim_out < c->tile) e *= (double)dim_out / c->tile;   /* idle threads in a too-wide tile */
    return e;
}

typedef struct sim_times {
    double gemm, trav, other;       /* forward, ms */
    double flops, bytes, atomics;
    double mem_bytes;
    int launches;
} sim_times;

static void model_times(const sim_ctx *ctx, const sim_model *m, const cg_config *c, sim_times *t)
{
    const hg_stats *s = &ctx->stats;
    const xb_problem *p = &ctx->problem;
    double E = (double)s->edges, V = (double)s->nodes, R = s->edge_types;
    double U = s->unique_pairs > 0 ? (double)s->unique_pairs : E;
    double width = (double)p->dim_out * p->heads, rows = c->compact != CFG_COMPACT_OFF ? U : E;
    t->flops = 2.0 * p->dim_in * width * (m->gemm_compactable * rows + m->gemm_fixed * E + m->gemm_node * V);
    if (c->reorder) t->flops = t->flops * (1 - m->reorder_saving) + 2.0 * R * p->dim_in * width;
    t->gemm = t->flops / (gemm_efficiency(c, p->dim_out) * 20e12) * 1e3;

    double locality = c->compact != CFG_COMPACT_OFF ? 0.55 + 0.45 * U / E : 1.0;
    t->bytes = E * width * 4 * m->trav_passes * locality;
    if (c->compact == CFG_COMPACT_BSEARCH) t->bytes += E * 8 * log2(1 + U / (R > 0 ? R : 1));
    if (c->compact == CFG_COMPACT_DIRECT) t->bytes += E * 4;
    t->atomics = 0;
    if (c->node_centric) {
        t->bytes *= 1 + 0.15 * fmin(fabs(s->in_degree_skew), 10) / 10;   /* load imbalance */
    } else {
        t->atomics = E * width * (c->partial_agg ? 0.3 : 1.2);
        t->bytes += t->atomics * 4;
    }
    t->trav = t->bytes / 1.5e12 * 1e3;
    double gemm_factor, trav_factor;   /* the effects that keys declare in the key table */
    cfg_sim_factors(c, &gemm_factor, &trav_factor);
    t->gemm *= gemm_factor;
    t->trav *= trav_factor;
    t->launches = m->kernels + (c->reorder ? 1 : 0);
    t->other = t->launches * 0.004;

    double edge_rows = m->gemm_fixed * E + (c->compact != CFG_COMPACT_OFF ? m->gemm_compactable * U : m->gemm_compactable * E);
    t->mem_bytes = 4 * (V * p->dim_in + edge_rows * width + V * width + R * p->dim_in * width) + 16 * E;
}

static void fill_kernel(xb_result *r, const char *name, const char *cat, int bwd, double ms)
{
    xb_kernel *k = &r->kernels[r->nkernels++];
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->category, sizeof k->category, "%s", cat);
    k->backward = bwd;
    k->median_ns = ms * 1e6;
    k->spread_ns = ms * 1e6 * 0.01;
}

static void fill_metric(xb_result *r, const char *name, const char *unit, double v)
{
    xb_metric *x = &r->metrics[r->nmetrics++];
    x->kernel[0] = 0;
    snprintf(x->name, sizeof x->name, "%s", name);
    snprintf(x->unit, sizeof x->unit, "%s", unit);
    x->value = v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Repeats around the variant's time: median, min, max and standard deviation. */
static void fill_repeats(const sim_ctx *c, const char *key, double total, int repeats, xb_result *r)
{
    double *v = rg_xmalloc((size_t)repeats * sizeof *v), sum = 0, sq = 0;
    for (int i = 0; i < repeats; i++) {
        v[i] = total * (1 + 0.01 * (noise(key, c->seed * 1000003 + (uint64_t)i + 1) - 0.5));
        sum += v[i];
    }
    qsort(v, (size_t)repeats, sizeof *v, cmp_double);
    double mean = sum / repeats;
    for (int i = 0; i < repeats; i++) sq += (v[i] - mean) * (v[i] - mean);
    r->repeats = repeats;
    r->median_ms = repeats % 2 ? v[repeats / 2] : (v[repeats / 2 - 1] + v[repeats / 2]) / 2;
    r->min_ms = v[0];
    r->max_ms = v[repeats - 1];
    r->stddev_ms = repeats > 1 ? sqrt(sq / (repeats - 1)) : 0;
    free(v);
}

/* What a run's span adds to its kernel sum, as the GPU backend measures it: a gap after each launch on
 * a stream (about 2 us), less inside one CUDA graph, and under launch=dag a GEMM that overlaps a
 * traversal (a part of the shorter one is hidden). Negative when the overlap outweighs the gaps. */
static double sim_launch_gaps_ms(const cg_config *cfg, int launches, double gemm, double trav)
{
    if (cfg->launch == KP_LAUNCH_STREAM) return launches * 0.002;
    double gaps = launches * 0.0008;
    return cfg->launch == KP_LAUNCH_DAG ? gaps - 0.3 * fmin(gemm, trav) : gaps;
}

static void simulate(const sim_ctx *c, const sim_model *m, const cg_config *cfg, const xb_options *opt, xb_result *r)
{
    sim_times t;
    model_times(c, m, cfg, &t);
    char *key = cfg_to_string(cfg);
    /* a fixed per-variant deviation, so rankings are not a pure product of the factors */
    double jitter = (1 + 0.08 * (noise(key, c->seed) - 0.5)) * c->scale;
    int train = !strcmp(c->problem.task, "train");
    double gemm = t.gemm * jitter, trav = t.trav * jitter, other = t.other * jitter;
    r->fwd_ms = gemm + trav + other;
    r->bwd_ms = train ? 2.0 * gemm + 2.2 * trav + other : 0;
    r->gemm_ms = gemm * (train ? 3.0 : 1.0);
    r->traversal_ms = trav * (train ? 3.2 : 1.0);
    r->other_ms = other * (train ? 2.0 : 1.0);
    double total = r->fwd_ms + r->bwd_ms;
    int slow = opt->slow_ms > 0 && total > opt->slow_ms;   /* as the GPU backend: timed once */
    fill_repeats(c, key, total, slow ? 1 : opt->repeats > 0 ? opt->repeats : 10, r);
    fill_kernel(r, "gemm_fwd", "gemm", 0, gemm);
    fill_kernel(r, "trav_fwd", "traversal", 0, trav);
    fill_kernel(r, "other_fwd", "other", 0, other);
    if (train) {
        fill_kernel(r, "gemm_bwd", "gemm", 1, 2.0 * gemm);
        fill_kernel(r, "trav_bwd", "traversal", 1, 2.2 * trav);
        fill_kernel(r, "other_bwd", "other", 1, other);
    }
    r->flops = t.flops * (train ? 3 : 1);
    r->bytes = t.bytes * (train ? 3 : 1);
    r->atomics = t.atomics * (train ? 2 : 1);
    r->launches = t.launches * (train ? 2 : 1);
    r->peak_mem_bytes = (int64_t)(t.mem_bytes * (train ? 2 : 1));
    r->validation_error = 1e-6 * (1 + noise(key, 7));
    r->compile_s = 0;
    fill_metric(r, "span_ms", "ms", r->median_ms + sim_launch_gaps_ms(cfg, r->launches, gemm, trav));
    if (opt->metrics) {
        fill_metric(r, "dram_bytes_read", "byte", r->bytes * 0.8);
        fill_metric(r, "dram_bytes_write", "byte", r->bytes * 0.2);
        fill_metric(r, "sm_throughput", "%", 100 * gemm / (gemm + trav + other));
        fill_metric(r, "ipc", "inst/cycle", 1 + 2 * noise(key, 11));
        fill_metric(r, "achieved_occupancy", "%", 100.0 * cfg_block_threads(cfg) / 1024);
        fill_metric(r, "l2_hit_rate", "%", cfg->compact != CFG_COMPACT_OFF ? 70 : 45);
    }
    free(key);
}

/* ---- Injected failures ---- */

static _Noreturn void die_like_a_fault(const sim_ctx *c, int use_abort)
{
    fprintf(stderr, "sim: an illegal memory access was encountered (cudaErrorIllegalAddress) in trav_fwd "
                    "(variant %d)\n", c->index);
    fflush(stderr);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);   /* an intended crash needs no core file */
    if (use_abort) abort();
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    _exit(139);
}

static int inject(const sim_ctx *c, const sim_rule *rule, const xb_options *opt, xb_result *r, rg_err *err)
{
    switch (rule->kind) {
    case K_INVALID:
        r->status = RS_INVALID;
        snprintf(r->evidence, sizeof r->evidence, "sim: the backend rejects this variant (injected invalid)");
        return 0;
    case K_COMPILE:
        r->status = RS_COMPILE_ERROR;
        snprintf(r->evidence, sizeof r->evidence,
                 "nvrtc: compiling gemm_fwd_%d.cu failed:\n"
                 "gemm_fwd_%d.cu(42): error: identifier \"tile_w\" is undefined\n"
                 "1 error detected in the compilation of \"gemm_fwd_%d.cu\".", c->index, c->index, c->index);
        return 0;
    case K_LAUNCH:
        r->status = RS_LAUNCH_ERROR;
        snprintf(r->evidence, sizeof r->evidence, "launching gemm_fwd: too many resources requested for launch "
                                                  "(cudaErrorLaunchOutOfResources)");
        return 0;
    case K_WRONG:
        r->status = RS_WRONG_ANSWER;
        r->validation_error = 0.37;
        snprintf(r->evidence, sizeof r->evidence, "output h: relative L2 error 3.7e-01 exceeds the tolerance %g "
                 "(first bad element: node 17, column 3: got 1.25, want 0.91)",
                 opt->tolerance > 0 ? opt->tolerance : !strcmp(c->problem.task, "train") ? 1e-4 : 1e-5);
        return 0;
    case K_OOM:
        r->status = RS_OOM;
        snprintf(r->evidence, sizeof r->evidence, "out of memory: tensor 'msg' needs 1073741824 bytes, "
                                                  "3221225472 in use (injected)");
        return 0;
    case K_FAULT:
    case K_ABORT:
        die_like_a_fault(c, rule->kind == K_ABORT);
    case K_HANG:
        fprintf(stderr, "sim: kernel trav_fwd never finishes (variant %d)\n", c->index);
        fflush(stderr);
        for (;;) sleep(3600);
    case K_BROKEN:
        return rg_errf(err, "sim: the backend is broken (injected)");
    case K_PREPARE:
    case K_REFERENCE:
    case K_COUNT:
        break;
    }
    RG_DIE("bad injected failure %d", (int)rule->kind);
}

/* ---- The backend interface ---- */

/* Whether a prepare or reference rule injects a failure into this problem. */
static int fails_at(const sim_ctx *c, sim_kind kind, const char *dataset)
{
    for (int i = 0; i < c->nrules; i++)
        if (c->rules[i].kind == kind && (!c->rules[i].match[0] || !strcmp(c->rules[i].match, dataset))) return 1;
    return 0;
}

static int sim_prepare(xb_backend *b, const xb_problem *p, hg_stats *stats, rg_err *err)
{
    sim_ctx *c = b->ctx;
    if (fails_at(c, K_PREPARE, p->dataset))
        return rg_errf(err, "sim: cannot prepare %s on %s (injected)", p->model, p->dataset);
    if (!find_model(p->model))
        return rg_errf(err, "sim: unknown model '%s' (rgcn, rgat, hgt or an existing .rgnn file)", p->model);
    ds_options dopt = {.data_dir = p->data_dir, .quiet = 1};
    hg_graph *g = ds_open(p->dataset, &dopt, err);
    if (!g) return -1;
    hg_stats_compute(g, &c->stats);
    hg_free(g);
    c->problem = *p;
    *stats = c->stats;
    return 0;
}

static int sim_prepare_reference(xb_backend *b, rg_err *err)
{
    sim_ctx *c = b->ctx;
    if (fails_at(c, K_REFERENCE, c->problem.dataset))
        return rg_errf(err, "sim: cannot build the reference of %s on %s (injected)", c->problem.model,
                       c->problem.dataset);
    return 0;
}

static int sim_measure(xb_backend *b, const cg_config *cfg, const xb_options *opt, xb_result *r, rg_err *err)
{
    sim_ctx *c = b->ctx;
    if (c->slow_ms) usleep((useconds_t)c->slow_ms * 1000);
    const sim_rule *rule = find_rule(c, cfg);
    if (rule) return inject(c, rule, opt, r, err);
    rg_err why;
    if (cfg_validate(cfg, &why)) {
        r->status = RS_INVALID;
        snprintf(r->evidence, sizeof r->evidence, "%s", why.msg);
        return 0;
    }
    simulate(c, find_model(c->problem.model), cfg, opt, r);
    if (c->problem.mem_limit && r->peak_mem_bytes > (int64_t)c->problem.mem_limit) {
        snprintf(r->evidence, sizeof r->evidence, "out of memory: the variant needs %lld bytes, over the limit of "
                 "%zu (--mem-limit)", (long long)r->peak_mem_bytes, c->problem.mem_limit);
        r->status = RS_OOM;
        r->median_ms = r->min_ms = r->max_ms = r->stddev_ms = NAN;
    }
    return 0;
}

static void sim_device(xb_backend *b, char *gpu_name, size_t n, int *sm, char *driver, char *cuda, char *cupti, size_t vn)
{
    sim_ctx *c = b->ctx;
    snprintf(gpu_name, n, "%s", c->device);
    *sm = c->sm;
    snprintf(driver, vn, "sim");
    snprintf(cuda, vn, "sim");
    snprintf(cupti, vn, "sim");
}

static void sim_close(xb_backend *b)
{
    free(b->ctx);
    free(b);
}

xb_backend *xb_sim_backend(const char *spec, rg_err *err)
{
    sim_ctx *c = rg_xcalloc(1, sizeof *c);
    c->scale = 1;
    c->sm = 90;
    c->index = -1;
    snprintf(c->device, sizeof c->device, "Simulated GPU");
    if (parse_spec(c, spec, err)) {
        free(c);
        return NULL;
    }
    xb_backend *b = rg_xcalloc(1, sizeof *b);
    b->name = "sim";
    b->ctx = c;
    b->prepare = sim_prepare;
    b->prepare_reference = sim_prepare_reference;
    b->measure = sim_measure;
    b->device = sim_device;
    b->close = sim_close;
    return b;
}

void xb_sim_set_index(xb_backend *b, int index)
{
    RG_ASSERT(b && b->name && !strcmp(b->name, "sim"));
    ((sim_ctx *)b->ctx)->index = index;
}
