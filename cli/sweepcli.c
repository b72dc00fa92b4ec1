/* The sweep's command lines: `explore --model M ...` (one problem) and `explore sweep --plan FILE
 * [--shard I/N]` (a plan's matrix, optionally one shard of it), with their shared sweep options. */
#include "cli/sweepcli.h"
#include "cli/problem.h"
#include "datasets/dataset.h"
#include "explorer/costmodel.h"
#include "explorer/plan.h"
#include "measure/mgpu_backend.h"
#include "runtime/rt.h"
#include "results/store.h"

/* A macro's value as a string literal (explorer/sweep.h's defaults in the help text). */
#define SC_STR_(x) #x
#define SC_STR(x) SC_STR_(x)

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SC_DEFAULT_COST_MODEL "results/costmodel.txt"

/* ---------------------------------------------------------------- options ---- */

static const char PROBLEM_USAGE[] =
    "usage: explore --model M [--dataset D] [--task infer|train] [--dims IN,OUT] [--heads H]\n"
    "               [sweep options]\n\n"
    "Measures every variant of the design space for one problem: each in a worker process\n"
    "(a crash or hang is recorded as runtime_fault or timeout and the worker restarted),\n"
    "each outcome recorded in the results database at once. Variants already measured\n"
    "for the same device, dataset, commit and config are skipped (resume). Prints the\n"
    "top configs and the U/C/R/C+R comparison, and writes the chosen config to\n"
    "results/best/<gpu>/<model>-<dataset>-<task>.json. Without --dataset: aifb when the\n"
    "data dir has it, else synth:aifb.\n\n";

static const char PLAN_USAGE[] =
    "usage: explore sweep --plan FILE [--shard I/N] [sweep options]\n\n"
    "Sweeps every job of the plan's matrix (models x datasets x tasks x dims x heads). The\n"
    "plan file has 'key: values' lines (# comments): models, datasets, tasks (default\n"
    "infer), dims (IN,OUT pairs or N for N,N; default 64,64), heads (default 1; a heads\n"
    "value that does not divide a dims, or above 1 for a model without heads, skips those\n"
    "jobs and says so), budget (variants per job, as --budget; the option wins).\n"
    "Shards split the jobs round-robin, one process per GPU or per Slurm array task;\n"
    "with N > 1 and no --db each shard writes results/results.shard-I-of-N.db, and\n"
    "`explore merge --into results/results.db results/results.shard-*.db` combines them.\n\n";

static int parse_rank(const char *value, void *dst, rg_err *err)
{
    if (!strcmp(value, "sum")) *(int *)dst = XS_RANK_SUM;
    else if (!strcmp(value, "span")) *(int *)dst = XS_RANK_SPAN;
    else return rg_errf(err, "--rank takes sum or span, not '%s'", value);
    return 0;
}

/* The options of both forms, after the problem's or the plan's own. */
static int parse_group(const char *value, void *dst, rg_err *err)
{
    if (rs_check_group(value, err)) return -1;
    *(const char **)dst = value;
    return 0;
}

static void add_sweep_options(ro_cmd *r, sc_cli *c, cp_problem *p)
{
    xs_options *o = &c->opt;
    ro_add(r, (ro_opt){.name = "space", .arg = "S", .kind = RO_STR, .dst = &o->space, .help = "default, full, or a file of 'key: values' lines (default: default)"});
    ro_add(r, (ro_opt){.name = "budget", .arg = "N", .kind = RO_INT, .dst = &o->budget, .help = "measure at most N variants per problem (default: all of a space of up to\n"
                               SC_STR(XS_EXHAUSTIVE_MAX) " valid points; a larger one is searched, "
                               SC_STR(XS_DEFAULT_SEARCH_PERCENT) "% of it with " XS_DEFAULT_SEARCH ")", .lo = 1, .hi = 100000000});
    ro_add(r, (ro_opt){.name = "exhaustive", .arg = NULL, .kind = RO_FLAG, .dst = &o->exhaustive,
                       .help = "measure every valid point however large the space (no default search)"});
    ro_add(r, (ro_opt){.name = "strategy", .arg = "S", .kind = RO_STR, .dst = &o->strategy,
                       .help = "search the space within --budget with a strategy of explore replay (random,\n"
                               "model, static, anneal, bo): each pick is measured, or read back when stored\n"
                               "(default: measure in cost-model or enumeration order; " XS_DEFAULT_SEARCH " over\n"
                               SC_STR(XS_DEFAULT_SEARCH_PERCENT) "% of a space of more than " SC_STR(XS_EXHAUSTIVE_MAX) " valid points)"});
    ro_add(r, (ro_opt){.name = "seed", .arg = "K", .kind = RO_INT, .dst = &c->seed, .help = "the strategy's seed (default 1)", .lo = 0, .hi = 2000000000});
    ro_add(r, (ro_opt){.name = "time-limit", .arg = "S", .kind = RO_REAL, .dst = &o->time_limit_s,
                       .help = "wall seconds per problem (dataset, compiling and validating included): the\n"
                               "sweep or search stops after the variant that reaches it (default: none)", .lo = 1e-9, .hi = 1e9});
    cp_add_options(r, p, CP_DB);
    cp_add_options(r, p, CP_DATA_DIR);
    cp_add_options(r, p, CP_MEM_LIMIT);
    cp_add_options(r, p, CP_REPEATS);
    ro_add(r, (ro_opt){.name = "metrics", .arg = NULL, .kind = RO_FLAG, .dst = &o->measure.metrics,
                       .help = "collect CUPTI counters (DRAM bytes, SM throughput, IPC, occupancy, L2)"});
    ro_add(r, (ro_opt){.name = "timeout", .arg = "S", .kind = RO_REAL, .dst = &o->timeout_s,
                       .help = "seconds a variant may take before its worker is killed (default 60)", .lo = 0.001, .hi = 1e7});
    ro_add(r, (ro_opt){.name = "slow-factor", .arg = "X", .kind = RO_REAL, .dst = &o->slow_factor,
                       .help = "a variant whose validation run is over X times the best so far is timed\n"
                       "once, without warm-up (default 4; 0: time every variant fully)", .lo = 0, .hi = 1e6});
    ro_add(r, (ro_opt){.name = "rank", .arg = "sum|span", .kind = RO_FN, .dst = &o->rank, .fn = parse_rank,
                       .help = "rank variants by the sum of their kernels' times (default), or by the run's\n"
                       "span, first kernel start to last kernel end: gaps between launches and kernels\n"
                       "that overlap (config key launch) count; a variant with no stored span is left out"});
    ro_add(r, (ro_opt){.name = "no-resume", .arg = NULL, .kind = RO_FLAG, .dst = &o->no_resume,
                       .help = "measure again what the database has for this device, dataset and commit"});
    ro_add(r, (ro_opt){.name = "cost-model", .arg = "FILE", .kind = RO_STR, .dst = &c->cost_model,
                       .help = "rank the variants with this fitted model first (explore fit), so that\n"
                       "--budget keeps the most promising (default: " SC_DEFAULT_COST_MODEL " if present)"});
    ro_add(r, (ro_opt){.name = "no-cost-model", .arg = NULL, .kind = RO_FLAG, .dst = &c->no_cost_model, .help = "enumeration order even when a cost model exists"});
    ro_add(r, (ro_opt){.name = "tolerance", .arg = "X", .kind = RO_REAL, .dst = &o->measure.tolerance,
                       .help = "relative L2 error allowed against the reference (default: the\n"
                       "backend's, 1e-5 for infer and 1e-4 for train)", .lo = 1e-12, .hi = 1e6});
    ro_add(r, (ro_opt){.name = "compile-threads", .arg = "N", .kind = RO_INT, .dst = &o->measure.compile_threads,
                       .help = "parallel NVRTC compiles (default: the CPU count)", .lo = 1, .hi = 100000});
    ro_add(r, (ro_opt){.name = "best-dir", .arg = "DIR", .kind = RO_STR, .dst = &o->best_dir,
                       .help = "where the chosen config is written (default " XS_DEFAULT_BEST_DIR ")"});
    ro_add(r, (ro_opt){.name = "group", .arg = "G", .kind = RO_FN, .dst = &o->group, .fn = parse_group,
                       .help = "the run's group, what explore compare's latest/previous compare (default:\n"
                               "a plan sweep: the plan and the night; else the run alone)"});
    ro_add(r, (ro_opt){.name = "commit", .arg = "C", .kind = RO_STR, .dst = &o->commit, .help = "commit to record (default: git rev-parse HEAD, else 'unknown')"});
    ro_add(r, (ro_opt){.name = "no-progress", .arg = NULL, .kind = RO_FLAG, .dst = &c->no_progress, .help = "no progress output on stderr"});
    ro_add(r, (ro_opt){.name = "backend", .arg = "B", .kind = RO_STR, .dst = &o->backend, .help = "gpu (default), or sim[:...] to test without a GPU (see below)"});
    ro_add(r, (ro_opt){.name = "ranks", .arg = "N", .kind = RO_INT, .dst = &c->ranks, .lo = 1, .hi = 16,
                       .help = "each variant is one layer over GPUs 0..N-1, its relations split by the\n"
                               "config key part (edges, count, rows); N 1 runs that code path on one GPU"});
}

/* The backend of --ranks N (a sweep's workers are forked: they see the count set here). */
static int sweep_ranks;
static xb_backend *ranks_backend(rg_err *err) { return xb_mgpu_backend(sweep_ranks, err); }

static xs_gpu_backend_fn choose_backend(const sc_cli *c, xs_gpu_backend_fn gpu_backend)
{
    if (c->ranks <= 0) return gpu_backend;
    sweep_ranks = c->ranks;
    return ranks_backend;
}

static void init(sc_cli *c, cp_problem *p)
{
    memset(c, 0, sizeof *c);
    xs_options_default(&c->opt);
    c->seed = (int)c->opt.seed;
    cp_init(p);
}

void sc_print_options(FILE *f)
{
    sc_cli c;
    cp_problem p;
    init(&c, &p);
    ro_cmd r;
    ro_init(&r, "explore", "", NULL);
    add_sweep_options(&r, &c, &p);
    ro_print_options(&r, f);
}

/* What the table stored, into the sweep's options and problem; the checks across options. */
static int finish(const char *cmd, const ro_cmd *r, const cp_problem *p, int plan_mode, sc_cli *c)
{
    rg_err err;
    if (c->opt.slow_factor > 0 && c->opt.slow_factor < 1)
        return ro_bad(cmd, "--slow-factor must be 0 (off) or a number >= 1 (got %g)", c->opt.slow_factor);
    if (cp_check(p, &err) || cp_to_xb(p, &c->problem, &err) || xs_check_backend(c->opt.backend, &err) ||
        xs_check_strategy(c->opt.strategy, &err))
        return ro_fail(cmd, &err);
    c->opt.seed = (uint64_t)c->seed;
    if (c->no_progress) c->opt.progress = XS_PROGRESS_OFF;
    c->opt.db = p->db;
    c->opt.measure.repeats = p->repeats;
    c->opt.measure.warmup = p->warmup;
    c->opt.measure.flush_l2 = p->flush_l2;
    c->have_db = ro_given(r, "db");
    c->have_dataset = !plan_mode && ro_given(r, "dataset");
    return 0;
}

int sc_parse_cli(const char *cmd, int argc, char **argv, int plan_mode, sc_cli *c)
{
    cp_problem p;
    init(c, &p);
    ro_cmd r;
    ro_init(&r, cmd, plan_mode ? PLAN_USAGE : PROBLEM_USAGE, xb_sim_help());
    if (plan_mode) {
        ro_add(&r, (ro_opt){.name = "plan", .arg = "FILE", .kind = RO_STR, .dst = &c->plan, .help = "the matrix to sweep (required)"});
        ro_add(&r, (ro_opt){.name = "shard", .arg = "I/N", .kind = RO_STR, .dst = &c->shard,
                            .help = "run the jobs k with k % N == I (0 <= I < N); default from\n"
                            "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, else 0/1"});
        ro_add(&r, (ro_opt){.name = "gpus", .arg = "all|N", .kind = RO_STR, .dst = &c->gpus,
                            .help = "one sweep process per GPU of this host (GPU g runs the shard's jobs\n"
                            "with (k / N_shards) %% N == g), all into the one database"});
    } else {
        cp_add_options(&r, &p, CP_MODEL | CP_DATASET | CP_TASK | CP_DIMS | CP_HEADS);
    }
    add_sweep_options(&r, c, &p);
    int rc = ro_parse(&r, argc, argv);
    if (rc) return rc;
    return finish(cmd, &r, &p, plan_mode, c);
}

/* ---------------------------------------------------------------- one problem ---- */

/* aifb when the data dir has it (no download needed), else the synthetic graph with its sizes. */
static void choose_default_dataset(xb_problem *p)
{
    const ds_entry *e = ds_find("aifb");
    ds_options dopt = {.data_dir = p->data_dir};
    char *dir = e ? ds_entry_dir(e, &dopt) : NULL;
    char *missing = dir ? ds_missing_files(e, dir) : rg_xstrdup("aifb");
    if (!missing) {
        snprintf(p->dataset, sizeof p->dataset, "aifb");
        fprintf(stderr, "explore: no --dataset given: using aifb from %s\n", dir);
    } else {
        snprintf(p->dataset, sizeof p->dataset, "synth:aifb");
        fprintf(stderr, "explore: no --dataset given: using synth:aifb, a synthetic graph with aifb's sizes "
                        "(aifb itself is not in %s; --data-dir DIR points elsewhere)\n", ds_data_dir(&dopt));
    }
    free(missing);
    free(dir);
}

/* "no CUDA device: ..." stays the first thing on its line, as everywhere else. */
static void print_failure(const char *cmd, const rg_err *err)
{
    if (!strncmp(err->msg, "no CUDA device:", 15)) fprintf(stderr, "%s\n", err->msg);
    else fprintf(stderr, "%s: %s\n", cmd, err->msg);
}

/* A search's model prior (xs_predict_fn): the attached model's predictions, none on an error. */
static void predict_with_model(void *ctx, const xb_problem *p, const cg_config *cfgs, int n, double *pred_ms)
{
    int *order = rg_xmalloc((size_t)(n ? n : 1) * sizeof *order);
    rg_err err;
    if (cm_order(ctx, p, NULL, cfgs, n, order, pred_ms, &err)) {
        fprintf(stderr, "cost model: %s; searching without its predictions\n", err.msg);
        for (int i = 0; i < n; i++) pred_ms[i] = NAN;
    }
    free(order);
}

/* bo's calibrated prior (xs_prior_fn): the attached model's section's, if explore fit wrote one. */
static int prior_of_model(void *ctx, const xb_problem *p, double *sd)
{
    const cm_section *sec = cm_find_section(ctx, p->model, p->task, NULL);
    if (!sec || !sec->bo_prior) return 0;
    memcpy(sd, sec->bo_prior, CM_BO_NFEAT * sizeof *sd);
    return 1;
}

int sc_attach_cost_model(sc_cli *c, cm_model *model, rg_err *err)
{
    const char *path = c->cost_model;
    if (c->no_cost_model) return 0;
    if (!path) {
        if (!rg_file_exists(SC_DEFAULT_COST_MODEL)) return 0;
        path = SC_DEFAULT_COST_MODEL;
    }
    if (cm_load(path, model, err)) {
        rg_err_prefix(err, "cost model %s (--no-cost-model to sweep without it)", path);
        return -1;
    }
    c->opt.order = cm_sweep_order;
    c->opt.predict = predict_with_model;
    c->opt.bo_prior = prior_of_model;
    c->opt.order_ctx = model;
    fprintf(stderr, "explore: %s with the cost model %s\n", c->opt.strategy ? "guiding the search" : "ordering the variants",
            path);
    return 1;
}

int sc_sweep_main(int argc, char **argv, xs_gpu_backend_fn gpu_backend)
{
    sc_cli c;
    int rc = sc_parse_cli("explore", argc, argv, 0, &c);
    if (rc) return ro_exit(rc);
    if (!c.problem.model[0])
        return ro_bad("explore", "--model is required (rgcn, rgat, hgt or a .rgnn file); explore --help lists "
                                 "the commands and options");
    if (!c.have_dataset) choose_default_dataset(&c.problem);
    c.opt.gpu_backend = choose_backend(&c, gpu_backend);
    rg_err err;
    cm_model model;
    int attached = sc_attach_cost_model(&c, &model, &err);
    if (attached < 0) return ro_fail("explore", &err);
    /* argv[0] is "explore" itself here */
    char *line = cp_command_line(argc - 1, argv + 1);
    c.opt.command_line = line;
    xs_summary sum;
    rc = xs_sweep(&c.opt, &c.problem, &sum, &err);
    if (attached) cm_model_free(&model);
    free(line);
    if (rc) print_failure("explore", &err);
    if (sum.interrupted) return 130;
    return rc ? 1 : 0;
}

/* ---------------------------------------------------------------- a plan ---- */

static int resolve_shard(const sc_cli *c, int *si, int *sn, rg_err *err)
{
    *si = 0;
    *sn = 1;
    if (c->shard) return xp_parse_shard(c->shard, si, sn, err);
    int e = xp_env_shard(si, sn, err);
    if (e > 0) fprintf(stderr, "explore sweep: shard %d/%d from SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT\n", *si, *sn);
    return e < 0 ? -1 : 0;
}

/* Runs this shard's jobs in one session (one run); a job that cannot be prepared is reported
 * and the others go on. */
/* Which GPU of the host (gi of gn) runs job k of shard si/sn: the shard's jobs round-robin. */
static int gpu_owns(int k, int si, int sn, int gi, int gn)
{
    return xp_shard_owns(k, si, sn) && (k / sn) % gn == gi;
}

static int run_shard(sc_cli *c, const xp_plan *plan, int si, int sn, int gi, int gn, int *failed, rg_err *err)
{
    xs_session *s = xs_open(&c->opt, err);
    if (!s) return -1;
    int total = xp_count(plan), mine = 0;
    for (int k = 0; k < total; k++) mine += gpu_owns(k, si, sn, gi, gn);
    char on_gpu[32] = "";
    if (gn > 1) snprintf(on_gpu, sizeof on_gpu, ", GPU %d of %d,", gi, gn);
    fprintf(stderr, "explore sweep: %s: %d jobs; shard %d/%d%s runs %d of them into %s (group %s)\n", plan->path, total,
            si, sn, on_gpu, mine, c->opt.db, c->opt.group ? c->opt.group : "-");
    for (int k = 0, nth = 0; k < total && !xs_interrupted(s); k++) {
        if (!gpu_owns(k, si, sn, gi, gn)) continue;
        xb_problem p;
        xp_job(plan, k, &p);
        p.data_dir = c->problem.data_dir;
        p.mem_limit = c->problem.mem_limit;
        fprintf(stderr, "== job %d (%d of %d in this shard): %s on %s, %s, dims %d,%d, heads %d ==\n", k, ++nth,
                mine, p.model, p.dataset, p.task, p.dim_in, p.dim_out, p.heads);
        xs_summary sum;
        rg_err jerr;
        if (xs_problem(s, &p, &sum, &jerr)) {
            char *what = rg_xasprintf("explore sweep: job %d (%s on %s, %s)", k, p.model, p.dataset, p.task);
            print_failure(what, &jerr);
            free(what);
            (*failed)++;
        }
    }
    int interrupted = xs_interrupted(s);
    if (xs_close(s, err)) return -1;
    return interrupted;
}

/* The number of GPUs, counted in a child process: CUDA initialized in this one would be
 * unusable in the sweep processes forked after it. 0 when there is none. */
static int count_gpus(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        rg_err e;
        int n = krt_require_device(&e) ? 0 : krt_device_count();
        _exit(n > 100 ? 100 : n);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 0;
}

static int resolve_gpus(const sc_cli *c, int *n, rg_err *err)
{
    if (c->ranks > 0) return rg_errf(err, "--gpus runs one single-GPU worker per GPU; --ranks spreads each variant over "
                                     "several: use one or the other");
    if (strcmp(c->gpus, "all") == 0) {
        if (c->opt.backend && strncmp(c->opt.backend, "sim", 3) == 0)
            return rg_errf(err, "--gpus all counts this host's GPUs; with --backend sim give a number");
        if ((*n = count_gpus()) < 1) return rg_errf(err, "--gpus all: no CUDA device was found on this host");
        return 0;
    }
    char *end;
    long v = strtol(c->gpus, &end, 10);
    if (*end || v < 1 || v > 64) return rg_errf(err, "--gpus: '%s' is neither 'all' nor a count from 1 to 64", c->gpus);
    *n = (int)v;
    return 0;
}

/* One sweep process per GPU (CUDA_VISIBLE_DEVICES=g), all writing the one database (its
 * claims keep concurrent writers apart); waits for all. 1 if any was interrupted. */
static int run_on_every_gpu(sc_cli *c, const xp_plan *plan, int si, int sn, int gn, int *failed, rg_err *err)
{
    pid_t pids[64];
    fflush(NULL);
    for (int g = 0; g < gn; g++) {
        pids[g] = fork();
        if (pids[g] < 0) return rg_errf(err, "cannot start the sweep of GPU %d: fork: %s", g, strerror(errno));
        if (pids[g] == 0) {
            char dev[16];
            snprintf(dev, sizeof dev, "%d", g);
            setenv("CUDA_VISIBLE_DEVICES", dev, 1);
            int nf = 0;
            rg_err e;
            int rc = run_shard(c, plan, si, sn, g, gn, &nf, &e);
            if (rc < 0) print_failure("explore sweep: stopped", &e);
            fflush(NULL);
            _exit(rc > 0 ? 130 : rc < 0 ? 2 : nf ? 1 : 0);
        }
    }
    int interrupted = 0, broken = 0;
    for (int g = 0; g < gn; g++) {
        int st;
        while (waitpid(pids[g], &st, 0) < 0 && errno == EINTR) {}
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 2;
        fprintf(stderr, "explore sweep: GPU %d of %d: %s\n", g, gn,
                code == 0 ? "done" : code == 1 ? "some jobs failed" : code == 130 ? "interrupted" : "stopped");
        *failed += code == 1;
        interrupted |= code == 130;
        broken |= code == 2;
    }
    if (broken) return rg_errf(err, "the sweep of at least one GPU stopped (its messages are above)");
    return interrupted;
}

int sc_plan_main(int argc, char **argv, xs_gpu_backend_fn gpu_backend)
{
    const char *cmd = "explore sweep";
    sc_cli c;
    int rc = sc_parse_cli(cmd, argc, argv, 1, &c);
    if (rc) return ro_exit(rc);
    if (!c.plan) return ro_bad(cmd, "--plan FILE is required (explore sweep --help)");
    xp_plan *plan = rg_xmalloc(sizeof *plan);
    rg_err err;
    int si, sn;
    cm_model model;
    int attached = 0;
    if (xp_load(c.plan, plan, &err) || resolve_shard(&c, &si, &sn, &err) ||
        (attached = sc_attach_cost_model(&c, &model, &err)) < 0) {
        free(plan);
        return ro_fail(cmd, &err);
    }
    xp_print_skipped(plan, stderr);
    if (!c.opt.budget) c.opt.budget = plan->budget;   /* --budget wins over the plan's */
    char *db = NULL, *line = cp_command_line(argc, argv);
    if (sn > 1 && !c.have_db) c.opt.db = db = rg_xasprintf("results/results.shard-%d-of-%d.db", si, sn);
    char group[RS_GROUP_MAX];
    if (!c.opt.group) {
        xp_default_group(plan, time(NULL), group, sizeof group);
        c.opt.group = group;
    }
    c.opt.gpu_backend = choose_backend(&c, gpu_backend);
    c.opt.command_line = line;
    int failed = 0, gn = 1;
    if (c.gpus && resolve_gpus(&c, &gn, &err)) {
        rc = -1;
    } else if (gn > 1) {
        rc = run_on_every_gpu(&c, plan, si, sn, gn, &failed, &err);
    } else {
        rc = run_shard(&c, plan, si, sn, 0, 1, &failed, &err);
    }
    if (attached) cm_model_free(&model);
    if (rc < 0) print_failure("explore sweep: stopped", &err);
    else fprintf(stderr, "explore sweep: shard %d/%d: %d job%s failed%s\n", si, sn, failed, failed == 1 ? "" : "s",
                 rc > 0 ? " (interrupted)" : "");
    free(db);
    free(line);
    free(plan);
    return rc > 0 ? 130 : rc < 0 || failed ? 1 : 0;
}
