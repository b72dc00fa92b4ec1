/* The design space as data: named value lists per config key (built-in "default" and
 * "full", or a file), enumerated into configs, with invalid points pruned and explained. */
#include "explorer/space.h"
#include "common/names.h"
#include "common/util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static int parse_line(sp_space *sp, char *line, const char *where, int lineno, rg_err *err)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    line = trim(line);
    if (!*line) return 0;
    char *colon = strchr(line, ':');
    if (!colon) return rg_errf(err, "%s:%d: expected 'key: value value ...'", where, lineno);
    *colon = 0;
    char *key = trim(line);
    if (sp->ndims == SP_MAX_DIMS) return rg_errf(err, "%s:%d: too many keys", where, lineno);
    sp_dim *d = &sp->dims[sp->ndims];
    memset(d, 0, sizeof *d);
    /* by the key's name, so that an alias (launch_bounds for lb) is the same dimension */
    const cfg_key *k = cfg_find_key(key);
    snprintf(d->key, sizeof d->key, "%s", k ? k->name : key);
    for (int i = 0; i < sp->ndims; i++)
        if (!strcmp(sp->dims[i].key, d->key)) return rg_errf(err, "%s:%d: key '%s' given twice", where, lineno, key);
    char *save = NULL;
    for (char *v = strtok_r(colon + 1, " \t,", &save); v; v = strtok_r(NULL, " \t,", &save)) {
        if (d->nvals == SP_MAX_VALS) return rg_errf(err, "%s:%d: too many values for %s", where, lineno, key);
        cg_config probe;
        cfg_default(&probe);
        char kv[64];
        snprintf(kv, sizeof kv, "%s=%s", key, v);
        if (cfg_parse(&probe, kv, err)) {
            rg_err_prefix(err, "%s:%d", where, lineno);
            return -1;
        }
        if (k && !strchr(key, '.')) {
            d->k = k;
            d->code[d->nvals] = k->get(&probe);
        }
        snprintf(d->vals[d->nvals++], sizeof d->vals[0], "%s", v);
    }
    if (d->nvals == 0) return rg_errf(err, "%s:%d: key '%s' has no values", where, lineno, key);
    sp->ndims++;
    return 0;
}

static int parse_text(sp_space *sp, const char *text, const char *where, rg_err *err)
{
    char *copy = rg_xstrdup(text), *save = NULL;
    int lineno = 0, rc = 0;
    /* strtok_r would skip empty lines and lose line numbers: split by hand */
    for (char *line = copy; line && !rc; line = save) {
        char *nl = strchr(line, '\n');
        save = nl ? nl + 1 : NULL;
        if (nl) *nl = 0;
        lineno++;
        rc = parse_line(sp, line, where, lineno, err);
    }
    free(copy);
    return rc;
}

/* A built-in space as the text a space file holds, from the key table: "default" has the papers'
 * dimensions (compaction x reordering x tile x coarsening x launch bounds) and the traversal form,
 * the softmax form, the GEMMs' precision (mma), traversal mappings and accumulators, node
 * relabelling, the run of the traversals that sum weight gradients (wrun) and how training traversals
 * sum into compact rows (crsum) and whether they recompute per-edge forward values (recompute),
 * which node-centric kernels split heavy nodes (nchunk), whether the aggregation runs the node
 * statements after it (epi) and where compaction's dot products are evaluated (cdot), 9,953,280
 * points; "full" adds traversals without partial aggregation, more mapping values, bfloat16 storage
 * and who evaluates the per-edge scalars (scalars), and leaves the W operand in shared memory and
 * wrun, crsum, recompute and nchunk at their defaults (14,929,920 points; with them it would pass
 * SP_MAX_POINTS; config_keys.def says why each key is where it is). */
static char *builtin_text(int full)
{
    rg_str text = {0};
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        const char *vals = full ? k->space_full : k->space_default;
        if (vals) rg_str_printf(&text, "%s: %s\n", k->name, vals);
    }
    return text.s ? text.s : rg_xstrdup("");
}

int sp_load(const char *spec, sp_space *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", spec);
    if (!strcmp(spec, "default") || !strcmp(spec, "full")) {
        char *text = builtin_text(!strcmp(spec, "full")), *where = rg_xasprintf("%s space", spec);
        int rc = parse_text(out, text, where, err);
        free(where);
        free(text);
        return rc;
    }
    FILE *f = fopen(spec, "r");
    if (!f) return rg_errf(err, "--space: '%s' is neither default, full nor a readable file", spec);
    rg_str text = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
        buf[n] = 0;
        rg_str_puts(&text, buf);
    }
    fclose(f);
    int rc = parse_text(out, text.s ? text.s : "", spec, err);
    rg_str_free(&text);
    if (rc == 0 && out->ndims == 0) return rg_errf(err, "%s: the space file lists no keys", spec);
    return rc;
}

void sp_config_at(const sp_space *s, long k, cg_config *cfg)
{
    int idx[SP_MAX_DIMS];
    for (int i = s->ndims - 1; i >= 0; i--) {   /* the last key varies fastest */
        idx[i] = (int)(k % s->dims[i].nvals);
        k /= s->dims[i].nvals;
    }
    RG_ASSERT(k == 0);
    int coded = 1;
    for (int i = 0; i < s->ndims; i++) coded &= s->dims[i].k != NULL;
    cfg_default(cfg);
    if (coded) {   /* every key global: its code set directly (the default space's 10M points in seconds) */
        for (int i = 0; i < s->ndims; i++) s->dims[i].k->set(cfg, s->dims[i].code[idx[i]]);
        return;
    }
    for (int i = 0; i < s->ndims; i++) {   /* per-instance keys: parsed in order, as a config string would be */
        char kv[64];
        snprintf(kv, sizeof kv, "%s=%s", s->dims[i].key, s->dims[i].vals[idx[i]]);
        RG_ASSERT(cfg_parse(cfg, kv, NULL) == 0);  /* checked by sp_load */
    }
}

/* Reasons interned for as long as the process lives: a space's invalid points share a few hundred
 * distinct lines, and a point keeps a pointer, not a 320-byte copy. */
static rg_names reasons;
static pthread_mutex_t reasons_lock = PTHREAD_MUTEX_INITIALIZER;

const char *sp_intern(const char *reason)
{
    pthread_mutex_lock(&reasons_lock);
    int32_t id = rg_names_intern(&reasons, reason);   /* first: it may move the array */
    const char *copy = reasons.names[id];
    pthread_mutex_unlock(&reasons_lock);
    return copy;
}

int sp_enumerate(const sp_space *s, sp_point **points, int *n, rg_err *err)
{
    long total = 1;
    for (int i = 0; i < s->ndims && total <= SP_MAX_POINTS; i++) total *= s->dims[i].nvals;
    /* a point is 16 bytes and its config is rebuilt on use: the limit is the time to validate them
     * all (under a microsecond each), and what a search samples from, not what a sweep measures
     * (spaces past 2,000 valid points are searched under a budget: explore replay) */
    if (total > SP_MAX_POINTS)
        return rg_errf(err, "space %s has more than %d points: too many (at most %d)", s->name, SP_MAX_POINTS,
                       SP_MAX_POINTS);
    sp_point *p = rg_xcalloc((size_t)total, sizeof *p);
    const char *last = NULL;   /* neighbours mostly share their reason: interned once for the run */
    for (long k = 0; k < total; k++) {
        cg_config c;
        sp_config_at(s, k, &c);
        rg_err why;
        p[k].valid = cfg_validate(&c, &why) == 0;
        if (p[k].valid) continue;
        if (!last || strcmp(last, why.msg)) last = sp_intern(why.msg);
        p[k].reason = last;
    }
    *points = p;
    *n = (int)total;
    return 0;
}

int sp_valid_configs(const sp_space *s, const sp_point *points, int n, cg_config **cfgs, int **index)
{
    int nv = sp_count_valid(points, n), k = 0;
    if (cfgs) *cfgs = rg_xmalloc((size_t)(nv ? nv : 1) * sizeof **cfgs);
    if (index) *index = rg_xmalloc((size_t)(nv ? nv : 1) * sizeof **index);
    for (int i = 0; i < n; i++) {
        if (!points[i].valid) continue;
        if (cfgs) sp_config_at(s, i, &(*cfgs)[k]);
        if (index) (*index)[k] = i;
        k++;
    }
    return nv;
}

int sp_count_valid(const sp_point *p, int n)
{
    int c = 0;
    for (int i = 0; i < n; i++) c += p[i].valid;
    return c;
}

void sp_print(const sp_space *s, FILE *f)
{
    fprintf(f, "# design space %s\n", s->name);
    for (int i = 0; i < s->ndims; i++) {
        fprintf(f, "%s:", s->dims[i].key);
        for (int j = 0; j < s->dims[i].nvals; j++) fprintf(f, " %s", s->dims[i].vals[j]);
        fputc('\n', f);
    }
}
