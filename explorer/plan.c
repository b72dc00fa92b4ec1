/* Sweep plans (`explore sweep --plan FILE [--shard I/N]`): a matrix of models x datasets x
 * tasks x dims x heads, split round-robin across shards (processes, GPUs, Slurm array tasks). */
#include "explorer/plan.h"
#include "explorer/costmodel.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- parsing ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static int parse_int(const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* "IN,OUT", "INxOUT" or "N". */
static int parse_dims(const char *text, int out[2])
{
    char a[32], *sep;
    snprintf(a, sizeof a, "%s", text);
    sep = strpbrk(a, ",x");
    if (sep) *sep = 0;
    return parse_int(a, 1, 65536, &out[0]) || parse_int(sep ? sep + 1 : a, 1, 65536, &out[1]) ? -1 : 0;
}

typedef struct where {
    const char *path;
    int line;
} where;

static int add_value(xp_plan *p, const char *key, const char *v, where at, rg_err *err)
{
    if (!strcmp(key, "models") || !strcmp(key, "datasets")) {
        int *n = key[0] == 'm' ? &p->nmodels : &p->ndatasets;
        char (*list)[256] = key[0] == 'm' ? p->models : p->datasets;
        if (strlen(v) >= sizeof list[0]) return rg_errf(err, "%s:%d: '%.40s...' is too long", at.path, at.line, v);
        snprintf(list[(*n)++], sizeof list[0], "%s", v);
    } else if (!strcmp(key, "tasks")) {
        const char *t = !strcmp(v, "infer") || !strcmp(v, "inference") ? "infer"
                        : !strcmp(v, "train") || !strcmp(v, "training") ? "train" : NULL;
        if (!t) return rg_errf(err, "%s:%d: task must be infer or train (got '%s')", at.path, at.line, v);
        snprintf(p->tasks[p->ntasks++], sizeof p->tasks[0], "%s", t);
    } else if (!strcmp(key, "dims")) {
        if (parse_dims(v, p->dims[p->ndims]))
            return rg_errf(err, "%s:%d: dims must be IN,OUT or N (got '%s')", at.path, at.line, v);
        p->ndims++;
    } else {
        if (parse_int(v, 1, 1024, &p->heads[p->nheads]))
            return rg_errf(err, "%s:%d: heads must be a positive number (got '%s')", at.path, at.line, v);
        p->nheads++;
    }
    return 0;
}

static int *count_of(xp_plan *p, const char *key)
{
    if (!strcmp(key, "models")) return &p->nmodels;
    if (!strcmp(key, "datasets")) return &p->ndatasets;
    if (!strcmp(key, "tasks")) return &p->ntasks;
    if (!strcmp(key, "dims")) return &p->ndims;
    if (!strcmp(key, "heads")) return &p->nheads;
    return NULL;
}

static int parse_line(xp_plan *p, char *line, where at, rg_err *err)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    line = trim(line);
    if (!*line) return 0;
    char *colon = strchr(line, ':');
    if (!colon) return rg_errf(err, "%s:%d: expected 'key: value value ...'", at.path, at.line);
    *colon = 0;
    char key[32];
    snprintf(key, sizeof key, "%s", trim(line));
    /* the singular reads as well: "model: rgat" */
    size_t kl = strlen(key);
    if (kl > 0 && key[kl - 1] != 's' && kl < sizeof key - 1) strcat(key, "s");
    int *n = count_of(p, key);
    if (!n) return rg_errf(err, "%s:%d: unknown key '%s' (models, datasets, tasks, dims, heads)", at.path, at.line,
                           trim(line));
    if (*n) return rg_errf(err, "%s:%d: key '%s' given twice", at.path, at.line, key);
    /* dims pairs and synth: specs hold commas, so only blanks separate those; other lists may
     * use commas too */
    const char *seps = !strcmp(key, "dims") || !strcmp(key, "datasets") ? " \t" : " \t,";
    char *save = NULL;
    for (char *v = strtok_r(colon + 1, seps, &save); v; v = strtok_r(NULL, seps, &save)) {
        if (*n == XP_MAX_VALUES) return rg_errf(err, "%s:%d: more than %d values", at.path, at.line, XP_MAX_VALUES);
        if (add_value(p, key, v, at, err)) return -1;
    }
    if (*n == 0) return rg_errf(err, "%s:%d: key '%s' has no values", at.path, at.line, key);
    return 0;
}

int xp_load(const char *path, xp_plan *p, rg_err *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) return rg_errf(err, "cannot read the plan %s: %s", path, strerror(errno));
    char line[8192];
    int rc = 0;
    where at = {path, 0};
    while (!rc && fgets(line, sizeof line, f)) {
        at.line++;
        if (!strchr(line, '\n') && !feof(f)) rc = rg_errf(err, "%s:%d: line too long", path, at.line);
        else rc = parse_line(p, line, at, err);
    }
    fclose(f);
    if (rc) return -1;
    if (!p->nmodels) return rg_errf(err, "%s: the plan lists no models ('models: rgat hgt')", path);
    if (!p->ndatasets) return rg_errf(err, "%s: the plan lists no datasets ('datasets: aifb mutag')", path);
    if (!p->ntasks) snprintf(p->tasks[p->ntasks++], sizeof p->tasks[0], "infer");
    if (!p->ndims) p->dims[0][0] = p->dims[0][1] = 64, p->ndims = 1;
    if (!p->nheads) p->heads[p->nheads++] = 1;
    return 0;
}

int xp_count(const xp_plan *p) { return p->nmodels * p->ndatasets * p->ntasks * p->ndims * p->nheads; }

void xp_job(const xp_plan *p, int k, xb_problem *out)
{
    RG_ASSERT(k >= 0 && k < xp_count(p));
    memset(out, 0, sizeof *out);
    int h = k % p->nheads;
    k /= p->nheads;
    int d = k % p->ndims;
    k /= p->ndims;
    int t = k % p->ntasks;
    k /= p->ntasks;
    int ds = k % p->ndatasets;
    int m = k / p->ndatasets;
    snprintf(out->model, sizeof out->model, "%s", p->models[m]);
    snprintf(out->dataset, sizeof out->dataset, "%s", p->datasets[ds]);
    snprintf(out->task, sizeof out->task, "%s", p->tasks[t]);
    out->dim_in = p->dims[d][0];
    out->dim_out = p->dims[d][1];
    out->heads = p->heads[h];
}

/* ---------------------------------------------------------------- groups ---- */

void xp_default_group(const xp_plan *p, time_t now, char *out, size_t cap)
{
    /* the matrix, not the file's text or path: comments or a copy elsewhere change nothing */
    size_t from = offsetof(xp_plan, nmodels);
    uint64_t h = rg_fnv1a64((const char *)p + from, sizeof *p - from, RG_FNV_SEED);
    /* a night runs from noon to noon: shards started either side of midnight stay together */
    time_t evening = now - 12 * 3600;
    struct tm tm;
    char night[16] = "unknown";
    if (localtime_r(&evening, &tm)) strftime(night, sizeof night, "%Y-%m-%d", &tm);
    const char *slash = strrchr(p->path, '/'), *base = slash ? slash + 1 : p->path;
    snprintf(out, cap, "%.64s-%08llx-%s", base, (unsigned long long)(h & 0xffffffffu), night);
}

/* ---------------------------------------------------------------- shards ---- */

int xp_shard_owns(int job, int index, int count) { return count > 0 && job % count == index; }

int xp_parse_shard(const char *text, int *index, int *count, rg_err *err)
{
    char a[32];
    const char *slash = strchr(text, '/');
    if (!slash || slash - text >= (long)sizeof a)
        return rg_errf(err, "--shard must be I/N with 0 <= I < N (got '%s')", text);
    snprintf(a, sizeof a, "%.*s", (int)(slash - text), text);
    int i, n;
    if (parse_int(slash + 1, 1, 1000000, &n) || parse_int(a, 0, 1000000, &i) || i >= n)
        return rg_errf(err, "--shard must be I/N with 0 <= I < N (got '%s')", text);
    *index = i;
    *count = n;
    return 0;
}

int xp_env_shard(int *index, int *count, rg_err *err)
{
    const char *id = getenv("SLURM_ARRAY_TASK_ID"), *cnt = getenv("SLURM_ARRAY_TASK_COUNT");
    const char *min = getenv("SLURM_ARRAY_TASK_MIN");
    if (!id || !cnt) return 0;
    int i, n, lo = 0;
    if (parse_int(id, 0, 100000000, &i) || parse_int(cnt, 1, 1000000, &n) || (min && parse_int(min, 0, 100000000, &lo)))
        return rg_errf(err, "SLURM_ARRAY_TASK_ID=%s / SLURM_ARRAY_TASK_COUNT=%s are not numbers", id, cnt);
    /* --array=1-4 numbers tasks from 1: shards are counted from the array's first id */
    if (i - lo < 0 || i - lo >= n)
        return rg_errf(err, "SLURM_ARRAY_TASK_ID=%s is outside the %d tasks starting at %d (use a contiguous "
                            "--array range, or give --shard I/N)", id, n, lo);
    *index = i - lo;
    *count = n;
    return 1;
}

/* ---------------------------------------------------------------- command ---- */

static int resolve_shard(const xs_cli *c, int *si, int *sn, rg_err *err)
{
    *si = 0;
    *sn = 1;
    if (c->shard) return xp_parse_shard(c->shard, si, sn, err);
    int e = xp_env_shard(si, sn, err);
    if (e > 0) fprintf(stderr, "explore sweep: shard %d/%d from SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT\n", *si, *sn);
    return e < 0 ? -1 : 0;
}

static void print_failure(const char *what, const rg_err *err)
{
    if (!strncmp(err->msg, "no CUDA device:", 15)) fprintf(stderr, "%s\n", err->msg);
    else fprintf(stderr, "explore sweep: %s: %s\n", what, err->msg);
}

static char *join_args(int argc, char **argv)
{
    rg_str s = {0};
    rg_str_puts(&s, "explore");
    for (int i = 0; i < argc; i++) {
        rg_str_putc(&s, ' ');
        rg_str_puts(&s, argv[i]);
    }
    return s.s;
}

/* Runs this shard's jobs in one session (one run); a job that cannot be prepared is reported
 * and the others go on. */
static int run_shard(xs_cli *c, const xp_plan *plan, int si, int sn, int *failed, rg_err *err)
{
    xs_session *s = xs_open(&c->opt, err);
    if (!s) return -1;
    int total = xp_count(plan), mine = 0;
    for (int k = 0; k < total; k++) mine += xp_shard_owns(k, si, sn);
    fprintf(stderr, "explore sweep: %s: %d jobs; shard %d/%d runs %d of them into %s (group %s)\n", plan->path, total,
            si, sn, mine, c->opt.db, c->opt.group ? c->opt.group : "-");
    for (int k = 0, nth = 0; k < total && !xs_interrupted(s); k++) {
        if (!xp_shard_owns(k, si, sn)) continue;
        xb_problem p;
        xp_job(plan, k, &p);
        p.data_dir = c->problem.data_dir;
        p.mem_limit = c->problem.mem_limit;
        fprintf(stderr, "== job %d (%d of %d in this shard): %s on %s, %s, dims %d,%d, heads %d ==\n", k, ++nth,
                mine, p.model, p.dataset, p.task, p.dim_in, p.dim_out, p.heads);
        xs_summary sum;
        rg_err jerr;
        if (xs_problem(s, &p, &sum, &jerr)) {
            char *what = rg_xasprintf("job %d (%s on %s, %s)", k, p.model, p.dataset, p.task);
            print_failure(what, &jerr);
            free(what);
            (*failed)++;
        }
    }
    int interrupted = xs_interrupted(s);
    if (xs_close(s, err)) return -1;
    return interrupted;
}

int xp_cli_main(int argc, char **argv, xs_gpu_backend_fn gpu_backend)
{
    xs_cli c;
    int rc = xs_parse_cli("explore sweep", argc, argv, 1, &c);
    if (rc) return rc == 1 ? 0 : rc;
    if (!c.plan) {
        fputs("explore sweep: --plan FILE is required (explore sweep --help)\n", stderr);
        return 2;
    }
    xp_plan *plan = rg_xmalloc(sizeof *plan);
    rg_err err;
    int si, sn;
    if (xp_load(c.plan, plan, &err) || resolve_shard(&c, &si, &sn, &err)) {
        fprintf(stderr, "explore sweep: %s\n", err.msg);
        free(plan);
        return 2;
    }
    cm_model model;
    int attached = xs_attach_cost_model(&c, &model, &err);
    if (attached < 0) {
        fprintf(stderr, "explore sweep: %s\n", err.msg);
        free(plan);
        return 2;
    }
    char *db = NULL, *line = join_args(argc, argv);
    if (sn > 1 && !c.have_db) c.opt.db = db = rg_xasprintf("results/results.shard-%d-of-%d.db", si, sn);
    char group[RS_GROUP_MAX];
    if (!c.opt.group) {
        xp_default_group(plan, time(NULL), group, sizeof group);
        c.opt.group = group;
    }
    c.opt.gpu_backend = gpu_backend;
    c.opt.command_line = line;
    int failed = 0;
    rc = run_shard(&c, plan, si, sn, &failed, &err);
    if (attached) cm_model_free(&model);
    if (rc < 0) print_failure("stopped", &err);
    else fprintf(stderr, "explore sweep: shard %d/%d: %d job%s failed%s\n", si, sn, failed, failed == 1 ? "" : "s",
                 rc > 0 ? " (interrupted)" : "");
    free(db);
    free(line);
    free(plan);
    return rc > 0 ? 130 : rc < 0 || failed ? 1 : 0;
}
