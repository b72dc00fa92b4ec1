/* Sweep plans (`explore sweep --plan FILE [--shard I/N]`): a matrix of models x datasets x
 * tasks x dims x heads, split round-robin across shards (processes, GPUs, Slurm array tasks). */
#include "explorer/plan.h"
#include "codegen/pipeline.h"
#include "common/opts.h"

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

typedef struct where {
    const char *path;
    int line;
} where;

/* "file:line: " before a message of a shared value parser. */
static int prefix_where(rg_err *err, where at)
{
    rg_err_prefix(err, "%s:%d", at.path, at.line);
    return -1;
}

static int add_value(xp_plan *p, const char *key, const char *v, where at, rg_err *err)
{
    if (!strcmp(key, "models") || !strcmp(key, "datasets")) {
        int *n = key[0] == 'm' ? &p->nmodels : &p->ndatasets;
        char (*list)[256] = key[0] == 'm' ? p->models : p->datasets;
        if (strlen(v) >= sizeof list[0]) return rg_errf(err, "%s:%d: '%.40s...' is too long", at.path, at.line, v);
        snprintf(list[(*n)++], sizeof list[0], "%s", v);
    } else if (!strcmp(key, "tasks")) {
        const char *t;
        if (pl_parse_task(v, &t, err)) return prefix_where(err, at);
        snprintf(p->tasks[p->ntasks++], sizeof p->tasks[0], "%s", t);
    } else if (!strcmp(key, "dims")) {
        if (ro_parse_dims(v, &p->dims[p->ndims][0], &p->dims[p->ndims][1], err)) return prefix_where(err, at);
        p->ndims++;
    } else {
        if (parse_int(v, 1, RO_MAX_HEADS, &p->heads[p->nheads]))
            return rg_errf(err, "%s:%d: heads must be 1 to %d (got '%s')", at.path, at.line, RO_MAX_HEADS, v);
        p->nheads++;
    }
    return 0;
}

/* 'budget: N': one positive number, once. */
static int parse_budget(xp_plan *p, char *value, where at, rg_err *err)
{
    if (p->budget) return rg_errf(err, "%s:%d: key 'budget' given twice", at.path, at.line);
    if (parse_int(trim(value), 1, 100000000, &p->budget))
        return rg_errf(err, "%s:%d: budget must be one positive number of variants (got '%s')", at.path, at.line,
                       trim(value));
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
    if (!strcmp(key, "budgets")) return parse_budget(p, colon + 1, at, err);
    int *n = count_of(p, key);
    if (!n) return rg_errf(err, "%s:%d: unknown key '%s' (models, datasets, tasks, dims, heads, budget)", at.path,
                           at.line, trim(line));
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

/* Whether a model's layer has heads: built with 2 heads, some variable has more than one.
 * A model that cannot be built is taken to have them (its sweep reports the error). */
static int model_has_heads(const char *model)
{
    pl_problem pp = {.model = model, .task = "infer", .dims = {16, 16, 2}};
    rg_err err;
    ir_program *prog = pl_reference_program(&pp, &err);
    if (!prog) return 1;
    int has = 0;
    for (int v = 0; v < prog->nvars && !has; v++) has = prog->vars[v].heads > 1;
    ir_free(prog);
    return has;
}

/* Marks the jobs that are not problems the commands accept (heads not dividing the output
 * dim) or that repeat another (heads > 1 for a model without heads). */
static void mark_skipped(xp_plan *p)
{
    for (int h = 0; h < p->nheads; h++) {
        rg_err err;
        for (int d = 0; d < p->ndims; d++) p->skip_dims_heads[d][h] = ro_check_heads(p->heads[h], p->dims[d][1], &err) != 0;
        for (int m = 0; m < p->nmodels && p->heads[h] > 1; m++) p->skip_model_heads[m][h] = !model_has_heads(p->models[m]);
    }
}

/* Whether job (m, d, h) of the matrix is left out. */
static int skipped(const xp_plan *p, int m, int d, int h)
{
    return p->skip_dims_heads[d][h] || p->skip_model_heads[m][h];
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
    mark_skipped(p);
    if (!xp_count(p)) return rg_errf(err, "%s: every job is skipped (no heads value divides the dims)", path);
    return 0;
}

/* The matrix position of job k (skipped jobs left out), or -1 past the last job. */
static int job_position(const xp_plan *p, int k, int *m, int *ds, int *t, int *d, int *h)
{
    int all = p->nmodels * p->ndatasets * p->ntasks * p->ndims * p->nheads;
    for (int i = 0; i < all; i++) {
        int r = i;
        *h = r % p->nheads, r /= p->nheads;
        *d = r % p->ndims, r /= p->ndims;
        *t = r % p->ntasks, r /= p->ntasks;
        *ds = r % p->ndatasets;
        *m = r / p->ndatasets;
        if (!skipped(p, *m, *d, *h) && k-- == 0) return i;
    }
    return -1;
}

int xp_count(const xp_plan *p)
{
    int n = 0;
    for (int m = 0; m < p->nmodels; m++)
        for (int d = 0; d < p->ndims; d++)
            for (int h = 0; h < p->nheads; h++) n += !skipped(p, m, d, h);
    return n * p->ndatasets * p->ntasks;
}

void xp_job(const xp_plan *p, int k, xb_problem *out)
{
    RG_ASSERT(k >= 0 && k < xp_count(p));
    memset(out, 0, sizeof *out);
    int m, ds, t, d, h;
    int pos = job_position(p, k, &m, &ds, &t, &d, &h);
    RG_ASSERT(pos >= 0);
    snprintf(out->model, sizeof out->model, "%s", p->models[m]);
    snprintf(out->dataset, sizeof out->dataset, "%s", p->datasets[ds]);
    snprintf(out->task, sizeof out->task, "%s", p->tasks[t]);
    out->dim_in = p->dims[d][0];
    out->dim_out = p->dims[d][1];
    out->heads = p->heads[h];
}

void xp_print_skipped(const xp_plan *p, FILE *out)
{
    int per = p->ndatasets * p->ntasks;
    for (int d = 0; d < p->ndims; d++)
        for (int h = 0; h < p->nheads; h++)
            if (p->skip_dims_heads[d][h])
                fprintf(out, "%s: heads %d does not divide dims %d,%d: %d jobs skipped\n", p->path, p->heads[h],
                        p->dims[d][0], p->dims[d][1], per * p->nmodels);
    for (int m = 0; m < p->nmodels; m++)
        for (int h = 0; h < p->nheads; h++) {
            int n = 0;
            for (int d = 0; d < p->ndims; d++) n += !p->skip_dims_heads[d][h];
            if (p->skip_model_heads[m][h] && n)
                fprintf(out, "%s: %s has no heads: heads %d would repeat heads 1: %d jobs skipped\n", p->path,
                        p->models[m], p->heads[h], per * n);
        }
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
