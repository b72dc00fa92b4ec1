/* The exact optimum of per-kernel schedules from uniform-schedule measurements: per structure, each
 * instance's best schedule, the combined config and its predicted time; and the per-kernel space's size. */
#include "explorer/perkernel.h"
#include "codegen/codegen.h"
#include "explorer/space.h"
#include "results/store.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ keys and names ==== */

/* The schedule keys a kernel category reads ("gemm", "traversal"; "other" reads none). */
static unsigned category_kinds(const char *category)
{
    if (!strcmp(category, "gemm")) return CFG_ON_GEMM;
    if (!strcmp(category, "traversal")) return CFG_ON_TRAV;
    return 0;
}

/* The instance a kernel belongs to: its name without the suffix "_cr" of a crsum=split traversal's
 * second kernel and the phase suffix "_p<digits>" (emit_trav.c names a multi-phase traversal's
 * kernels INST_p0, INST_p1, ..., and the second part's INST_cr or INST_p1_cr). */
static void instance_of(const char *kernel, char out[64])
{
    snprintf(out, 64, "%s", kernel);
    size_t n = strlen(out);
    if (n > 3 && !strcmp(out + n - 3, "_cr")) out[n - 3] = 0;
    char *p = strrchr(out, '_');
    if (p && p[1] == 'p' && p[2] && strspn(p + 2, "0123456789") == strlen(p + 2)) *p = 0;
}

/* Whether a and b agree on every schedule key that kernels of `kinds` read. */
static int same_schedule(const cg_config *a, const cg_config *b, unsigned kinds)
{
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        if ((cfg_key_kernels(k) & kinds) && k->get(a) != k->get(b)) return 0;
    }
    return 1;
}

/* "tile=32,coarsen=2,...": the values of the keys kernels of `kinds` read. */
static void schedule_text(const cg_config *c, unsigned kinds, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < CFG_NKEYS && n < cap; i++) {
        const cfg_key *k = cfg_key_at(i);
        char v[CFG_VALUE_MAX];
        if (cfg_key_kernels(k) & kinds)
            n += (size_t)snprintf(out + n, cap - n, "%s%s=%s", n ? "," : "", k->name, cfg_value(k, c, v));
    }
}

/* "compact=direct,reorder=on,trav=edge": the structure keys of c as the canonical string has them. */
static char *structure_text(const cg_config *c)
{
    rg_str s = {0};
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        char v[CFG_VALUE_MAX];
        if (!cfg_key_kernels(k) && cfg_printed(k, c)) rg_str_printf(&s, "%s%s=%s", s.len ? "," : "", k->name, cfg_value(k, c, v));
    }
    return s.s ? s.s : rg_xstrdup("");
}

/* The index of c's structure in names[0..*n), appended when new (the caller frees the names). */
static int structure_index(char ***names, int *n, const cg_config *c)
{
    char *name = structure_text(c);
    for (int q = 0; q < *n; q++)
        if (!strcmp((*names)[q], name)) {
            free(name);
            return q;
        }
    *names = rg_xrealloc(*names, (size_t)(*n + 1) * sizeof **names);
    (*names)[*n] = name;
    return (*n)++;
}

/* ================================================================ observations ==== */

typedef struct pk_kernel {
    char name[64];
    unsigned kinds;
    double ms;
    uint64_t fp;              /* kernel_fingerprint of its generated kernel; 0: not regenerated */
} pk_kernel;

/* One uniform variant's stored measurement. */
typedef struct pk_obs {
    cg_config cfg;
    double sum_ms, span_ms;   /* span NaN when none */
    int nk;
    pk_kernel *k;
    int structure;
} pk_obs;

typedef struct obs_set {
    int n, cap;
    pk_obs *o;
} obs_set;

static void obs_free(obs_set *s)
{
    for (int i = 0; i < s->n; i++) free(s->o[i].k);
    free(s->o);
    memset(s, 0, sizeof *s);
}

/* The problem's ok generated measurements, newest per variant, of the (device, commit) that
 * measured the most variants: kernels of one code version are compared, never old against new. */
static const char *const OBS_SQL =
    "WITH ok AS (SELECT m.id, m.device_key, m.git_commit, m.variant_id"
    "            FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
    "            WHERE m.status = 'ok' AND m.system = 'generated' AND m.layer = '' AND v.model = ?1"
    "              AND v.task = ?2 AND d.name = ?3 AND v.dim_in = ?4 AND v.dim_out = ?5 AND v.heads = ?6"
    "              AND (?7 IS NULL OR m.device_key = ?7)),"
    " chosen AS (SELECT device_key, git_commit FROM ok GROUP BY device_key, git_commit"
    "            ORDER BY count(DISTINCT variant_id) DESC, max(id) DESC LIMIT 1)"
    " SELECT m.id, v.config, m.median_ms,"
    "        (SELECT value FROM metrics x WHERE x.measurement_id = m.id AND x.kernel = '' AND x.name = 'span_ms'),"
    "        m.device_key, m.git_commit"
    " FROM measurements m JOIN variants v ON v.id = m.variant_id"
    " WHERE m.id IN (SELECT max(ok.id) FROM ok JOIN chosen USING (device_key, git_commit) GROUP BY ok.variant_id)"
    " ORDER BY m.id";

static const char *const KERNELS_SQL =
    "SELECT kernel, category, median_ns FROM kernel_times WHERE measurement_id = ?1 ORDER BY id";

static int db_err(sqlite3 *db, const char *path, rg_err *err) { return rg_errf(err, "%s: %s", path, sqlite3_errmsg(db)); }

/* The dataset's counts as the store keeps them (what the passes read of a graph); 0 when a count is
 * missing (a dataset recorded without statistics): its kernels are then not regenerated. */
static const char *const STATS_SQL =
    "SELECT nodes, edges, unique_pairs, node_types, edge_types FROM datasets WHERE name = ?1"
    " AND nodes IS NOT NULL AND edges IS NOT NULL AND unique_pairs IS NOT NULL AND node_types IS NOT NULL"
    " AND edge_types IS NOT NULL";

static int read_stats(sqlite3 *db, const char *dataset, rr_stats *rs)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    memset(rs, 0, sizeof *rs);
    if (sqlite3_prepare_v2(db, STATS_SQL, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, dataset, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            rs->nodes = sqlite3_column_int64(st, 0);
            rs->edges = sqlite3_column_int64(st, 1);
            rs->unique_pairs = sqlite3_column_int64(st, 2);
            rs->ntypes = sqlite3_column_int64(st, 3);
            rs->etypes = sqlite3_column_int64(st, 4);
            snprintf(rs->source, sizeof rs->source, "%s", dataset);
            found = rs->nodes > 0 && rs->edges > 0 && rs->ntypes > 0 && rs->etypes > 0;
        }
    }
    sqlite3_finalize(st);
    return found;
}

/* ================================================================ kernel identity ==== */

/* What regenerating a variant's kernels needs: the problem and the dataset's counts. */
typedef struct pk_regen {
    int on;                    /* 0: the store lacks the dataset's counts (nothing regenerated) */
    pl_problem p;
    rr_stats rs;
} pk_regen;

/* Schedules that generate the same kernel are one choice. A key a kernel does not read (wrun in a
 * forward traversal, rowpf where nothing is gathered, lanes of a kernel that keeps its own mapping)
 * leaves its source and launch shape unchanged, so its values are measurements of one kernel: they
 * are pooled into one median, and the combined config overrides no key that changes nothing there
 * (nor one that a per-kernel override would refuse where the uniform key is silently not applied). */
static uint64_t kernel_fingerprint(const kp_kernel *k)
{
    int shape[] = {(int)k->grid_kind, k->grid_rows_size, k->rows_per_block, k->tile_rowset, k->tile_rows,
                   k->grid_x_fixed, k->grid_y, k->grid_z, k->block_x, k->block_y, k->shmem_bytes};
    uint64_t h = rg_fnv1a64(k->source, strlen(k->source), RG_FNV_SEED);
    h = rg_fnv1a64(shape, sizeof shape, h);
    return h ? h : 1;
}

/* The plan of config c generated for the dataset's counts, or -1. */
static int regenerate(const pk_regen *g, const cg_config *c, cg_variant *v)
{
    ir_program *ir;
    lw_program *lp;
    rg_err e;
    if (pl_build_stats(&g->p, c, &g->rs, NULL, &ir, &lp, &e)) return -1;
    int rc = cg_build(ir, lp, c, v, &e);
    lw_free(lp);
    ir_free(ir);
    return rc ? -1 : 0;
}

/* Sets each measured kernel's fingerprint from the variant's plan generated again; kernels the plan
 * does not name (another build's) keep 0. Returns 1 when every one got one. */
static int fingerprint_kernels(pk_obs *o, const pk_regen *g)
{
    cg_variant v;
    if (regenerate(g, &o->cfg, &v)) return 0;
    int all = 1;
    for (int i = 0; i < o->nk; i++) {
        for (int k = 0; k < v.plan.nkernels && !o->k[i].fp; k++)
            if (!strcmp(v.plan.kernels[k].name, o->k[i].name)) o->k[i].fp = kernel_fingerprint(&v.plan.kernels[k]);
        all &= o->k[i].fp != 0;
    }
    cg_variant_free(&v);
    return all;
}

static int read_kernels(sqlite3_stmt *st, int64_t mid, pk_obs *o)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, mid);
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (o->nk == cap) o->k = rg_xrealloc(o->k, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *o->k);
        pk_kernel *k = &o->k[o->nk++];
        snprintf(k->name, sizeof k->name, "%s", (const char *)sqlite3_column_text(st, 0));
        k->kinds = category_kinds((const char *)sqlite3_column_text(st, 1));
        k->ms = sqlite3_column_double(st, 2) / 1e6;
        k->fp = 0;
    }
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Adds the row's measurement unless its config has overrides (not a uniform schedule). */
static int add_row(sqlite3_stmt *row, sqlite3_stmt *kst, obs_set *s, pk_result *r)
{
    cg_config c;
    cfg_default(&c);
    if (cfg_parse_json(&c, (const char *)sqlite3_column_text(row, 1), NULL)) return 0;   /* another build's keys */
    if (c.noverrides) {
        r->nother++;
        return 0;
    }
    snprintf(r->device, sizeof r->device, "%s", (const char *)sqlite3_column_text(row, 4));
    snprintf(r->commit, sizeof r->commit, "%s", (const char *)sqlite3_column_text(row, 5));
    if (s->n == s->cap) s->o = rg_xrealloc(s->o, (size_t)(s->cap = s->cap ? 2 * s->cap : 64) * sizeof *s->o);
    pk_obs *o = &s->o[s->n++];
    memset(o, 0, sizeof *o);
    o->cfg = c;
    o->sum_ms = sqlite3_column_double(row, 2);
    o->span_ms = sqlite3_column_type(row, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(row, 3);
    return read_kernels(kst, sqlite3_column_int64(row, 0), o);
}

/* Every observation's kernels fingerprinted, where the store has the dataset's counts. */
static void fingerprint_all(const pk_query *q, sqlite3 *db, obs_set *s, pk_regen *g, pk_result *r)
{
    memset(g, 0, sizeof *g);
    if (!read_stats(db, q->dataset, &g->rs)) return;
    g->on = 1;
    g->p = (pl_problem){.model = q->model, .task = q->task, .dims = {q->dim_in, q->dim_out, q->heads}};
    for (int i = 0; i < s->n; i++) r->nregenerated += fingerprint_kernels(&s->o[i], g);
}

static int read_store(const pk_query *q, obs_set *s, pk_regen *g, pk_result *r, rg_err *err)
{
    rs_store *reader = rs_open_read(q->db, err);
    if (!reader) return -1;
    sqlite3 *db = rs_detach(reader);
    sqlite3_stmt *row = NULL, *kst = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, OBS_SQL, -1, &row, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, KERNELS_SQL, -1, &kst, NULL) != SQLITE_OK) {
        db_err(db, q->db, err);
        goto done;
    }
    sqlite3_bind_text(row, 1, q->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(row, 2, q->task, -1, SQLITE_STATIC);
    sqlite3_bind_text(row, 3, q->dataset, -1, SQLITE_STATIC);
    sqlite3_bind_int(row, 4, q->dim_in);
    sqlite3_bind_int(row, 5, q->dim_out);
    sqlite3_bind_int(row, 6, q->heads);
    if (q->device) sqlite3_bind_text(row, 7, q->device, -1, SQLITE_STATIC);
    else sqlite3_bind_null(row, 7);
    int step;
    while ((step = sqlite3_step(row)) == SQLITE_ROW)
        if (add_row(row, kst, s, r)) break;
    if (step != SQLITE_DONE) {
        db_err(db, q->db, err);
        goto done;
    }
    fingerprint_all(q, db, s, g, r);
    rc = 0;
done:
    sqlite3_finalize(row);
    sqlite3_finalize(kst);
    sqlite3_close(db);
    return rc;
}

/* ================================================================ one structure ==== */

/* The instances of the structure's plan from one variant's kernels, in launch order. */
static void find_instances(const pk_obs *o, pk_structure *st)
{
    st->inst = rg_xcalloc((size_t)(o->nk ? o->nk : 1), sizeof *st->inst);
    for (int i = 0; i < o->nk; i++) {
        char name[64];
        instance_of(o->k[i].name, name);
        int u = 0;
        while (u < st->ninst && strcmp(st->inst[u].name, name)) u++;
        if (u == st->ninst) snprintf(st->inst[st->ninst++].name, sizeof st->inst[u].name, "%s", name);
        st->inst[u].kinds |= o->k[i].kinds;
        st->inst[u].nkernels++;
    }
}

/* Whether every variant launched the same kernels, in the same order, as the first. */
static int same_kernels(const pk_obs *const *obs, int n, char *note, size_t cap)
{
    for (int j = 1; j < n; j++) {
        int same = obs[j]->nk == obs[0]->nk;
        for (int i = 0; same && i < obs[0]->nk; i++) same = !strcmp(obs[j]->k[i].name, obs[0]->k[i].name);
        if (same) continue;
        char *a = cfg_to_string(&obs[0]->cfg), *b = cfg_to_string(&obs[j]->cfg);
        snprintf(note, cap, "not one plan: %.100s and %.100s launch different kernels", a, b);
        free(a);
        free(b);
        return 0;
    }
    return 1;
}

/* Instance u's time in one variant: the sum of its kernels'. */
static double inst_ms(const pk_obs *o, const char *inst)
{
    double t = 0;
    char name[64];
    for (int i = 0; i < o->nk; i++) {
        instance_of(o->k[i].name, name);
        if (!strcmp(name, inst)) t += o->k[i].ms;
    }
    return t;
}

/* Instance inst's kernels' fingerprints combined (a sum: the order of its kernels' rows does not
 * matter), or 0 when one is unknown. */
static uint64_t inst_fp(const pk_obs *o, const char *inst)
{
    uint64_t h = 0;
    char name[64];
    for (int i = 0; i < o->nk; i++) {
        instance_of(o->k[i].name, name);
        if (strcmp(name, inst)) continue;
        if (!o->k[i].fp) return 0;
        h += o->k[i].fp;
    }
    return h;
}

/* The same of config c's plan generated again; 0 when it cannot be. */
static uint64_t config_inst_fp(const pk_regen *g, const cg_config *c, const char *inst)
{
    cg_variant v;
    if (regenerate(g, c, &v)) return 0;
    uint64_t h = 0;
    char name[64];
    for (int k = 0; k < v.plan.nkernels; k++) {
        instance_of(v.plan.kernels[k].name, name);
        if (!strcmp(name, inst)) h += kernel_fingerprint(&v.plan.kernels[k]);
    }
    cg_variant_free(&v);
    return h;
}

/* Whether a and b ran the same kernels of instance u: the same generated kernels where both were
 * regenerated, else the same values of the keys u's kernels read. */
static int same_kernel(const pk_obs *a, const pk_obs *b, const pk_inst *u)
{
    uint64_t fa = inst_fp(a, u->name), fb = inst_fp(b, u->name);
    if (fa && fb) return fa == fb;
    return same_schedule(&a->cfg, &b->cfg, u->kinds);
}

/* The median time of instance u over the variants that ran the same kernels as `like`. */
static double kernel_ms(const pk_obs *const *obs, int n, const pk_inst *u, const pk_obs *like, double *buf)
{
    int m = 0;
    for (int j = 0; j < n; j++)
        if (same_kernel(obs[j], like, u)) buf[m++] = inst_ms(obs[j], u->name);
    RG_ASSERT(m > 0);
    return rg_median_sort(buf, (size_t)m);
}

/* The number of keys of `kinds` on which a and b differ. */
static int schedule_distance(const cg_config *a, const cg_config *b, unsigned kinds)
{
    int d = 0;
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        d += (cfg_key_kernels(k) & kinds) && k->get(a) != k->get(b);
    }
    return d;
}

/* Of the variants that ran the kernels of `best`, the config closest to the uniform one: the
 * fewest overrides that give u those kernels. */
static cg_config closest_config(const pk_obs *const *obs, int n, const pk_inst *u, const pk_obs *best,
                                const cg_config *uniform)
{
    const pk_obs *c = best;
    int dc = schedule_distance(&best->cfg, uniform, u->kinds);
    for (int j = 0; j < n; j++) {
        if (!same_kernel(obs[j], best, u)) continue;
        int d = schedule_distance(&obs[j]->cfg, uniform, u->kinds);
        if (d < dc) dc = d, c = obs[j];
    }
    return c->cfg;
}

/* best with each of u's keys set back to the uniform config's value where that still generates u's
 * kernels: the overrides that matter, not those a measured point happened to carry. */
static cg_config fewest_overrides(const pk_regen *g, const pk_inst *u, cg_config best, const cg_config *uniform)
{
    uint64_t want = g->on ? config_inst_fp(g, &best, u->name) : 0;
    if (!want) return best;
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        if (!(cfg_key_kernels(k) & u->kinds) || k->get(&best) == k->get(uniform)) continue;
        cg_config t = best;
        k->set(&t, k->get(uniform));
        rg_err e;
        if (!cfg_validate(&t, &e) && config_inst_fp(g, &t, u->name) == want) best = t;
    }
    return best;
}

/* An instance keeps the uniform schedule unless another is faster by more than this fraction of its
 * time: a choice among medians within noise of each other would only add overrides. */
#define PK_MIN_GAIN 0.01

/* Instance u's best kernels among those measured; ties keep the best uniform variant's. */
static void choose(const pk_obs *const *obs, int n, pk_inst *u, const pk_obs *uniform, const pk_regen *g, double *buf)
{
    u->uniform_ms = kernel_ms(obs, n, u, uniform, buf);
    u->best = uniform->cfg;
    u->best_ms = u->uniform_ms;
    u->nchoices = 0;
    int best = -1;
    for (int j = 0; j < n; j++) {
        int seen = 0;
        for (int i = 0; i < j && !seen; i++) seen = same_kernel(obs[i], obs[j], u);
        if (seen) continue;
        u->nchoices++;
        double t = kernel_ms(obs, n, u, obs[j], buf);
        if (t < u->best_ms) u->best_ms = t, best = j;
    }
    if (best >= 0 && u->best_ms > u->uniform_ms * (1 - PK_MIN_GAIN)) {
        u->best_ms = u->uniform_ms;
        best = -1;
    }
    if (best >= 0) u->best = fewest_overrides(g, u, closest_config(obs, n, u, obs[best], &uniform->cfg), &uniform->cfg);
}

/* The uniform config with each instance's best schedule as overrides. */
static int combine(pk_structure *st, rg_err *err)
{
    st->combined = st->uniform;
    for (int u = 0; u < st->ninst; u++) {
        const pk_inst *in = &st->inst[u];
        if (!in->kinds) continue;
        if (!cfg_instance_name_ok(in->name))
            return rg_errf(err, "kernel instance '%s' is not an instance name this build reads", in->name);
        for (int i = 0; i < CFG_NKEYS; i++) {
            const cfg_key *k = cfg_key_at(i);
            if ((cfg_key_kernels(k) & in->kinds) && cfg_set_override(&st->combined, in->name, k, k->get(&in->best), err))
                return -1;
        }
    }
    return cfg_validate(&st->combined, err);
}

static void solve_structure(const pk_obs *const *obs, int n, const pk_regen *g, pk_structure *st)
{
    st->nvariants = n;
    int b = 0;
    for (int j = 1; j < n; j++)
        if (obs[j]->sum_ms < obs[b]->sum_ms) b = j;
    st->uniform = obs[b]->cfg;
    st->uniform_ms = obs[b]->sum_ms;
    st->uniform_span_ms = obs[b]->span_ms;
    st->combined = st->uniform;
    st->predicted_ms = st->model_uniform_ms = st->predicted_span_ms = NAN;
    if (!same_kernels(obs, n, st->note, sizeof st->note)) {
        st->skipped = 1;
        return;
    }
    find_instances(obs[0], st);
    double *buf = rg_xmalloc((size_t)n * sizeof *buf);
    st->points = 1;
    st->predicted_ms = st->model_uniform_ms = 0;
    for (int u = 0; u < st->ninst; u++) {
        pk_inst *in = &st->inst[u];
        if (!in->kinds) {   /* reads no schedule key: the same kernel in every variant */
            for (int j = 0; j < n; j++) buf[j] = inst_ms(obs[j], in->name);
            in->best_ms = in->uniform_ms = rg_median_sort(buf, (size_t)n);
            in->nchoices = 1;
            in->best = st->uniform;
            st->fixed_ms += in->best_ms;
        } else {
            choose(obs, n, in, obs[b], g, buf);
        }
        st->points *= in->nchoices;
        st->predicted_ms += in->best_ms;
        st->model_uniform_ms += in->uniform_ms;
    }
    free(buf);
    if (isfinite(st->uniform_span_ms)) st->predicted_span_ms = st->predicted_ms + (st->uniform_span_ms - st->uniform_ms);
    rg_err e;
    if (combine(st, &e)) {
        snprintf(st->note, sizeof st->note, "no combined config: %.200s", e.msg);
        st->skipped = 1;
    }
}

/* ================================================================ the problem ==== */

static void group_structures(obs_set *s, pk_result *r)
{
    char **names = NULL;
    for (int i = 0; i < s->n; i++) s->o[i].structure = structure_index(&names, &r->nstructures, &s->o[i].cfg);
    r->s = rg_xcalloc((size_t)(r->nstructures ? r->nstructures : 1), sizeof *r->s);
    for (int q = 0; q < r->nstructures; q++) r->s[q].name = names[q];
    free(names);
}

int pk_solve_store(const pk_query *q, pk_result *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    obs_set s = {0};
    pk_regen g;
    if (read_store(q, &s, &g, out, err)) {
        obs_free(&s);
        return -1;
    }
    if (s.n == 0) {
        obs_free(&s);
        return rg_errf(err, "%s has no ok uniform-schedule measurement of %s %s on %s at dims %d,%d heads %d%s%s", q->db,
                       q->model, q->task, q->dataset, q->dim_in, q->dim_out, q->heads, q->device ? " on " : "",
                       q->device ? q->device : "");
    }
    out->nvariants = s.n;
    group_structures(&s, out);
    const pk_obs **obs = rg_xmalloc((size_t)s.n * sizeof *obs);
    for (int t = 0; t < out->nstructures; t++) {
        int n = 0;
        for (int i = 0; i < s.n; i++)
            if (s.o[i].structure == t) obs[n++] = &s.o[i];
        pk_structure *st = &out->s[t];
        solve_structure(obs, n, &g, st);
        if (st->skipped) continue;
        out->points += st->points;
        if (out->best < 0 || st->predicted_ms < out->s[out->best].predicted_ms) out->best = t;
    }
    free(obs);
    obs_free(&s);
    return 0;
}

void pk_result_free(pk_result *r)
{
    for (int t = 0; t < r->nstructures; t++) {
        free(r->s[t].name);
        free(r->s[t].inst);
    }
    free(r->s);
    memset(r, 0, sizeof *r);
}

/* ================================================================ printing ==== */

static void print_ms(FILE *f, const char *label, double ms)
{
    if (isfinite(ms)) fprintf(f, "%s%.4f ms", label, ms);
}

static void print_structure(const pk_structure *st, FILE *f)
{
    fprintf(f, "\nstructure %s: %d uniform variants, %.0f per-kernel points\n", st->name, st->nvariants, st->points);
    if (st->skipped) {
        fprintf(f, "  skipped: %s\n", st->note);
        return;
    }
    fprintf(f, "  %-16s %7s %7s %10s %10s  %s\n", "instance", "kernels", "choices", "best ms", "uniform ms", "best schedule");
    for (int u = 0; u < st->ninst; u++) {
        const pk_inst *in = &st->inst[u];
        char sched[256];
        schedule_text(&in->best, in->kinds, sched, sizeof sched);
        int differs = in->kinds && !same_schedule(&in->best, &st->uniform, in->kinds);
        fprintf(f, "  %-16s %7d %7d %10.4f %10.4f  %s%s\n", in->name, in->nkernels, in->nchoices, in->best_ms,
                in->uniform_ms, in->kinds ? sched : "(no schedule key)", differs ? "  *" : "");
    }
    char *u = cfg_to_string(&st->uniform), *c = cfg_to_string(&st->combined);
    fprintf(f, "  best uniform %s: ", u);
    print_ms(f, "", st->uniform_ms);
    print_ms(f, ", span ", st->uniform_span_ms);
    print_ms(f, " (medians at its schedules: ", st->model_uniform_ms);
    fprintf(f, ")\n  per-kernel predicted: ");
    print_ms(f, "", st->predicted_ms);
    print_ms(f, ", span ", st->predicted_span_ms);
    fprintf(f, "; predicted / best uniform %.3f\n  combined: %s\n", st->predicted_ms / st->uniform_ms, c);
    free(u);
    free(c);
}

void pk_print(const pk_result *r, FILE *f)
{
    fprintf(f, "per-kernel optimum from %d uniform variants (%s, commit %.12s)", r->nvariants, r->device, r->commit);
    if (r->nother) fprintf(f, "; %d per-kernel variants left out", r->nother);
    fprintf(f, "\n(* marks an instance whose best schedule differs from the best uniform variant's; ms: medians over "
               "the variants sharing that schedule)\n");
    if (r->nregenerated)
        fprintf(f, "(%d of the %d variants' kernels generated again for the dataset's counts: schedules that generate "
                   "the same kernel are one choice, their times pooled)\n", r->nregenerated, r->nvariants);
    for (int t = 0; t < r->nstructures; t++) print_structure(&r->s[t], f);
    fprintf(f, "\nper-kernel space measured: %d structures, %.0f points (%d uniform variants)\n", r->nstructures,
            r->points, r->nvariants);
    if (r->best < 0) {
        fprintf(f, "no structure could be solved\n");
        return;
    }
    const pk_structure *b = &r->s[r->best];
    double best_uniform = INFINITY;
    for (int t = 0; t < r->nstructures; t++)
        if (r->s[t].uniform_ms < best_uniform) best_uniform = r->s[t].uniform_ms;
    char *c = cfg_to_string(&b->combined);
    fprintf(f, "best overall: %s\n  predicted %.4f ms against the best uniform variant's %.4f ms (%.3f)\n", c,
            b->predicted_ms, best_uniform, b->predicted_ms / best_uniform);
    free(c);
}

/* ================================================================ the space's size ==== */

/* The kernel categories of each instance of the structure's plan, from one applicable point. */
static int plan_kinds(const pl_problem *p, const cg_config *cfg, const hg_graph *g, unsigned **kinds, int *ninst,
                      rg_err *err)
{
    ir_program *ir;
    lw_program *lp;
    int rc = pl_build(p, cfg, g, NULL, &ir, &lp, err);
    if (rc) return rc;
    cg_variant v;
    rc = cg_build(ir, lp, cfg, &v, err);
    if (!rc) {
        *ninst = lp->ninst;
        *kinds = rg_xcalloc((size_t)(lp->ninst ? lp->ninst : 1), sizeof **kinds);
        for (int k = 0; k < v.plan.nkernels; k++) {
            const kp_kernel *kk = &v.plan.kernels[k];
            if (kk->inst >= 0) (*kinds)[kk->inst] |= category_kinds(kp_category_name(kk->category));
        }
        cg_variant_free(&v);
    }
    lw_free(lp);
    ir_free(ir);
    return rc;
}

/* The number of distinct schedules of the keys `kinds` reads among configs cfgs[idx[0..n)). */
static int distinct_schedules(const cg_config *cfgs, const int *idx, int n, unsigned kinds)
{
    int count = 0;
    for (int j = 0; j < n; j++) {
        int seen = 0;
        for (int i = 0; i < j && !seen; i++) seen = same_schedule(&cfgs[idx[i]], &cfgs[idx[j]], kinds);
        count += !seen;
    }
    return count;
}

/* One structure's product: built once from its first config; the configs are applicable ones. */
static int structure_points(const pl_problem *p, const hg_graph *g, const cg_config *cfgs, const int *idx, int n,
                            double *points, rg_err *err)
{
    unsigned *kinds;
    int ninst, rc = plan_kinds(p, &cfgs[idx[0]], g, &kinds, &ninst, err);
    if (rc == PL_INAPPLICABLE) return *points = 0, 0;   /* a pass that does not apply to the model */
    if (rc) return -1;
    *points = 1;
    for (int u = 0; u < ninst; u++)
        if (kinds[u]) *points *= distinct_schedules(cfgs, idx, n, kinds[u]);
    free(kinds);
    return 0;
}

/* nchunk other than 64 changes only node-centric kernels that walk a node's edges once, which the
 * structure decides: where its plan has none, pl_build refuses those points (they would duplicate 64),
 * so one build tells for all of the structure's. Returns how many of idx[0..n) are kept. */
static int drop_unsplit_nchunk(const pl_problem *p, const hg_graph *g, const cg_config *cfgs, int *idx, int n)
{
    int first = -1;
    for (int j = 0; j < n && first < 0; j++)
        if (cfgs[idx[j]].nchunk != 64) first = j;
    if (first < 0) return n;
    rg_err why;
    if (pl_build_verdict(p, &cfgs[idx[first]], g, &why) != PL_INAPPLICABLE) return n;
    int m = 0;
    for (int j = 0; j < n; j++)
        if (cfgs[idx[j]].nchunk == 64) idx[m++] = idx[j];
    return m;
}

int pk_space_size(const char *space, const pl_problem *p, const hg_graph *g, pk_space_count *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    sp_space sp;
    sp_point *pts;
    int n;
    if (sp_load(space, &sp, err) || sp_enumerate(&sp, &pts, &n, err)) return -1;
    /* the applicable configs only: the default space has 2.6M valid points, a problem a tenth of them */
    cg_config *cfgs = NULL, c;
    int m_app = 0, cap = 0;
    for (int i = 0; i < n; i++) {
        rg_err why;
        if (!pts[i].valid) continue;
        sp_config_at(&sp, i, &c);
        if (!pl_schedule_applies(p, &c, &why)) continue;
        if (m_app == cap) cfgs = rg_xrealloc(cfgs, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *cfgs);
        cfgs[m_app++] = c;
    }
    free(pts);
    n = m_app;
    int *structure = rg_xmalloc((size_t)(n ? n : 1) * sizeof *structure), *idx = rg_xmalloc((size_t)(n ? n : 1) * sizeof *idx);
    char **names = NULL;
    int nst = 0, rc = 0;
    for (int i = 0; i < n; i++) structure[i] = structure_index(&names, &nst, &cfgs[i]);   /* by structure */
    for (int q = 0; q < nst && !rc; q++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (structure[i] == q) idx[m++] = i;
        m = drop_unsplit_nchunk(p, g, cfgs, idx, m);
        double points;
        rc = structure_points(p, g, cfgs, idx, m, &points, err);
        if (rc || points == 0) continue;
        out->nstructures++;
        out->uniform += m;
        out->points += points;
    }
    for (int q = 0; q < nst; q++) free(names[q]);
    free(names);
    free(structure);
    free(idx);
    free(cfgs);
    return rc;
}
