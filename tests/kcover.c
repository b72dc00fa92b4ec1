/* Covering a design space's kernels and keys without visiting every point: hash sets, kernel
 * classes that share NVRTC's verdict, schedule classes of configs, pairwise covering points. */
#include "tests/kcover.h"
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

/* ---- hash set ---- */

static size_t slot_of(const kc_set *s, uint64_t h)
{
    size_t mask = (size_t)s->cap - 1, i = (size_t)(h ^ (h >> 29)) & mask;
    while (s->used[i] && s->slot[i] != h) i = (i + 1) & mask;
    return i;
}

static void grow(kc_set *s)
{
    kc_set big = {.n = 0, .cap = s->cap ? 2 * s->cap : 1024};
    big.slot = rg_xcalloc((size_t)big.cap, sizeof *big.slot);
    big.used = rg_xcalloc((size_t)big.cap, 1);
    for (int i = 0; i < s->cap; i++)
        if (s->used[i]) kc_set_add(&big, s->slot[i]);
    kc_set_free(s);
    *s = big;
}

int kc_set_add(kc_set *s, uint64_t h)
{
    if (2 * (s->n + 1) > s->cap) grow(s);   /* at most half full: probes stay short */
    size_t i = slot_of(s, h);
    if (s->used[i]) return 0;
    s->used[i] = 1;
    s->slot[i] = h;
    s->n++;
    return 1;
}

int kc_set_has(const kc_set *s, uint64_t h) { return s->cap && s->used[slot_of(s, h)]; }

void kc_set_free(kc_set *s)
{
    free(s->slot);
    free(s->used);
    *s = (kc_set){0};
}

/* ---- kernel classes ---- */

static int is_ident(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* FNV-1a of the source without comments, with the kernel's name as "KERNEL", and with shape != 0
 * the values of #define lines and of __launch_bounds__(...) as "#" (hashed span by span: FNV-1a
 * of a concatenation is the chained hash of its parts). Generated sources hold no string literals,
 * so a comment opener is never inside one. */
/* Where a comment or the kernel's own name at p ends (the name stands as *put = "KERNEL"), or NULL:
 * what no NVRTC verdict depends on, left out by kc_kernel_class and kc_text_items alike. */
static const char *comment_or_name(const kp_kernel *k, const char *p, const char **put)
{
    size_t nlen = strlen(k->name);
    *put = NULL;
    if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        return e ? e + 2 : p + strlen(p);
    }
    if (p[0] == '/' && p[1] == '/') return p + strcspn(p, "\n");
    if (nlen && !strncmp(p, k->name, nlen) && !is_ident(p[nlen]) && (p == k->source || !is_ident(p[-1]))) {
        *put = "KERNEL";
        return p + nlen;
    }
    return NULL;
}

static uint64_t normalized_hash(const kp_kernel *k, int shape)
{
    const char *p = k->source, *run = p;   /* run: start of the text not hashed yet */
    uint64_t h = RG_FNV_SEED;
#define KC_PUT(s, n) (h = rg_fnv1a64((s), (n), h))
    while (*p) {
        const char *put, *skip = comment_or_name(k, p, &put);
        if (!skip && shape && !strncmp(p, "#define ", 8)) {
            const char *end = p + 8 + strcspn(p + 8, " \n");
            KC_PUT(run, (size_t)(end - run));   /* the line up to the macro's name */
            run = p = end;
            skip = p + strcspn(p, "\n");
            put = " #";
        } else if (!skip && shape && !strncmp(p, "__launch_bounds__(", 18)) {
            skip = p + strcspn(p, ")");
            put = "__launch_bounds__(#";
        }
        if (!skip) {
            p++;
            continue;
        }
        KC_PUT(run, (size_t)(p - run));
        if (put) KC_PUT(put, strlen(put));
        run = p = skip;
    }
    KC_PUT(run, (size_t)(p - run));
#undef KC_PUT
    return h;
}

uint64_t kc_kernel_class(const kp_kernel *k) { return normalized_hash(k, 0); }
uint64_t kc_kernel_shape(const kp_kernel *k) { return normalized_hash(k, 1); }

/* ---- schedule classes ---- */

/* h extended by key k's name and its value in c. */
static uint64_t hash_key(uint64_t h, const cfg_key *k, const cg_config *c)
{
    char buf[CFG_VALUE_MAX];
    const char *v = cfg_value(k, c, buf);
    h = rg_fnv1a64(k->name, strlen(k->name) + 1, h);
    return rg_fnv1a64(v, strlen(v) + 1, h);
}

void kc_schedule_classes(const cg_config *c, uint64_t cls[2])
{
    static const unsigned kinds[2] = {CFG_ON_GEMM, CFG_ON_TRAV};
    for (int j = 0; j < 2; j++) {
        uint64_t h = rg_fnv1a64(&kinds[j], sizeof kinds[j], RG_FNV_SEED);
        for (int i = 0; i < CFG_NKEYS; i++) {
            const cfg_key *k = cfg_key_at(i);
            unsigned on = cfg_key_kernels(k);
            if (on && !(on & kinds[j])) continue;   /* the other category's schedule key */
            /* relabel renumbers the graph before anything runs; no kernel's text reads it (the walks'
             * premise check samples points of every relabel value). Keeping it would walk every
             * structure once per value: three times the builds of the default space. */
            if (!strcmp(k->name, "relabel")) continue;
            h = hash_key(h, k, c);
        }
        cls[j] = h;
    }
}

/* The structure keys of a config (cfg_structure's), relabel included. */
static uint64_t structure_hash(const cg_config *c)
{
    uint64_t h = RG_FNV_SEED;
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        if (!cfg_key_kernels(k)) h = hash_key(h, k, c);
    }
    return h;
}

/* ---- pairwise covering points ---- */

typedef struct pair_table {
    int ndims, nvals[SP_MAX_DIMS];
    unsigned char covered[SP_MAX_DIMS][SP_MAX_DIMS][SP_MAX_VALS][SP_MAX_VALS];   /* [a][b], a < b */
} pair_table;

/* Pairs of dim c at value v with the dims fixed so far (fixed[d] >= 0) not covered yet. */
static int gain(const pair_table *t, const int *fixed, int c, int v)
{
    int g = 0;
    for (int d = 0; d < t->ndims; d++)
        if (d != c && fixed[d] >= 0) g += !(d < c ? t->covered[d][c][fixed[d]][v] : t->covered[c][d][v][fixed[d]]);
    return g;
}

/* The first pair not covered (1), or none left (0). */
static int first_uncovered(const pair_table *t, int *a, int *b, int *va, int *vb)
{
    for (*a = 0; *a < t->ndims; ++*a)
        for (*b = *a + 1; *b < t->ndims; ++*b)
            for (*va = 0; *va < t->nvals[*a]; ++*va)
                for (*vb = 0; *vb < t->nvals[*b]; ++*vb)
                    if (!t->covered[*a][*b][*va][*vb]) return 1;
    return 0;
}

/* One greedy row: the first uncovered pair, each other dim at the value covering most new pairs. */
static long next_row(pair_table *t, int a, int b, int va, int vb)
{
    int fixed[SP_MAX_DIMS];
    for (int d = 0; d < t->ndims; d++) fixed[d] = -1;
    fixed[a] = va;
    fixed[b] = vb;
    for (int c = 0; c < t->ndims; c++) {
        if (fixed[c] >= 0) continue;
        int best = 0;
        for (int v = 1; v < t->nvals[c]; v++)
            if (gain(t, fixed, c, v) > gain(t, fixed, c, best)) best = v;
        fixed[c] = best;
    }
    long idx = 0;
    for (int d = 0; d < t->ndims; d++) {
        idx = idx * t->nvals[d] + fixed[d];
        for (int e = d + 1; e < t->ndims; e++) t->covered[d][e][fixed[d]][fixed[e]] = 1;
    }
    return idx;
}

int kc_pairwise(const sp_space *sp, int extra, uint64_t seed, long **idx)
{
    pair_table *t = rg_xcalloc(1, sizeof *t);
    long total = 1;
    t->ndims = sp->ndims;
    for (int d = 0; d < sp->ndims; d++) total *= (t->nvals[d] = sp->dims[d].nvals);
    int n = 0, cap = 64 + extra;
    long *out = rg_xmalloc((size_t)cap * sizeof *out);
    int a, b, va, vb;
    while (first_uncovered(t, &a, &b, &va, &vb)) {
        if (n == cap) out = rg_xrealloc(out, (size_t)(cap *= 2) * sizeof *out);
        out[n++] = next_row(t, a, b, va, vb);
    }
    if (n + extra > cap) out = rg_xrealloc(out, (size_t)(cap = n + extra) * sizeof *out);
    rg_rng rng;
    rg_rng_seed(&rng, seed);
    for (int i = 0; i < extra; i++) out[n++] = (long)rg_rng_below(&rng, (uint64_t)total);
    free(t);
    *idx = out;
    return n;
}

/* ---- the text NVRTC sees ---- */

/* One line's items: the line, and the pair it makes with the line before (salted by `what` and
 * the kind of item, so that the sets of different calls do not mix). */
static int line_items(kc_set *seen, unsigned what, int add, uint64_t line, uint64_t *prev)
{
    int fresh = 0;
    for (unsigned kind = KC_LINES; kind <= KC_LINE_PAIRS; kind <<= 1) {
        if (!(what & kind) || (kind == KC_LINE_PAIRS && !*prev)) continue;
        uint64_t tag = what | kind << 8, h = rg_fnv1a64(&tag, sizeof tag, RG_FNV_SEED);
        h = rg_fnv1a64(&line, sizeof line, h);
        if (kind == KC_LINE_PAIRS) h = rg_fnv1a64(prev, sizeof *prev, h);
        fresh += add ? kc_set_add(seen, h) : !kc_set_has(seen, h);
    }
    *prev = line;
    return fresh;
}

/* Where the text of a line stops being hashed as it is at p: past a comment, the kernel's name, or
 * (KC_NO_LITERALS) a numeric literal, with *put what stands for it; NULL where p is plain text. */
static const char *special(const kp_kernel *k, const char *p, unsigned what, const char **put)
{
    const char *skip = comment_or_name(k, p, put);
    if (skip) return skip;
    if ((what & KC_NO_LITERALS) && (p == k->source || !is_ident(p[-1])) && *p >= '0' && *p <= '9') {
        const char *e = p;
        while (is_ident(*e) || *e == '.') e++;
        *put = "#";
        return e;
    }
    return NULL;
}

int kc_text_items(kc_set *seen, const kp_kernel *k, unsigned what, int add)
{
    const char *p = k->source, *run = p;   /* run: start of the line's text not hashed yet */
    uint64_t line = RG_FNV_SEED, prev = 0;
    int fresh = 0;
    for (;;) {
        const char *put, *skip = *p && *p != '\n' ? special(k, p, what, &put) : NULL;
        if (*p && *p != '\n' && !skip) {
            p++;
            continue;
        }
        line = rg_fnv1a64(run, (size_t)(p - run), line);
        if (skip) {
            if (put) line = rg_fnv1a64(put, strlen(put), line);
            run = p = skip;
            continue;
        }
        fresh += line_items(seen, what, add, line, &prev);
        if (!*p) return fresh;
        run = ++p;
        line = RG_FNV_SEED;
    }
}

/* ---- the points of a space, once per binary ---- */

static kc_space space_cache;

cg_config kc_config(const kc_space *s, int v)
{
    cg_config c;
    sp_config_at(&s->sp, s->point[v], &c);
    return c;
}

const kc_space *kc_space_get(const char *space)
{
    kc_space *s = &space_cache;
    if (s->slot && !strcmp(s->spec, space)) return s;
    free(s->slot);
    free(s->point);
    free(s->cls);
    free(s->structure);
    *s = (kc_space){0};
    sp_point *pts;
    rg_err err;
    if (sp_load(space, &s->sp, &err) || sp_enumerate(&s->sp, &pts, &s->n, &err)) fail_msg("%s", err.msg);
    s->nvalid = sp_count_valid(pts, s->n);
    s->slot = rg_xmalloc(((size_t)s->n + 1) * sizeof *s->slot);
    s->point = rg_xmalloc(((size_t)s->nvalid + 1) * sizeof *s->point);
    s->cls = rg_xmalloc(((size_t)s->nvalid + 1) * sizeof *s->cls);
    s->structure = rg_xmalloc(((size_t)s->nvalid + 1) * sizeof *s->structure);
    for (int i = 0, v = 0; i < s->n; i++) {
        s->slot[i] = pts[i].valid ? v : -1;
        if (!pts[i].valid) continue;
        s->point[v] = i;
        cg_config c;
        sp_config_at(&s->sp, i, &c);
        s->structure[v] = structure_hash(&c);
        kc_schedule_classes(&c, s->cls[v]);
        v++;
    }
    free(pts);
    snprintf(s->spec, sizeof s->spec, "%s", space);
    return s;
}

int kc_cover_pairwise(void)
{
    const char *c = getenv("RGNN_TEST_COVER");
    return c && !strcmp(c, "pairwise");
}

/* ---- covering walks ---- */

int kc_structure_applies(const kc_space *s, const pl_problem *p, const hg_graph *g, int v, kc_set *ok, kc_set *bad)
{
    uint64_t h = s->structure[v];
    if (kc_set_has(bad, h)) return 0;
    if (kc_set_has(ok, h)) return 1;
    cg_config base, c = kc_config(s, v);
    cfg_structure(&c, &base);
    rg_err err;
    int rc = pl_build_verdict(p, &base, g, &err);
    kc_set_add(rc == PL_INAPPLICABLE ? bad : ok, h);
    return rc != PL_INAPPLICABLE;
}

/* Whether point v may apply to p: its schedule (pl_schedule_applies) and its structure (the point
 * with every schedule key at its default) must. A structure that pl_build refuses (crsum=run or
 * recompute=on in inference, softmax=single for RGCN) is refused at every schedule, and most of the
 * default space's inference points are such: deciding them by structure, once each
 * (kc_structure_applies), spares a lowering per point. kc_space_kernels checks the claim on a sample. */
static int may_apply(const kc_space *s, const pl_problem *p, int v, kc_set *ok, kc_set *bad)
{
    if (!kc_structure_applies(s, p, NULL, v, ok, bad)) return 0;
    cg_config c = kc_config(s, v);
    return pl_schedule_applies(p, &c, NULL);
}

/* The points that bring a schedule class no applicable point brought yet, in enumeration order: first
 * those that bring both of theirs (a GEMM and a traversal class each), then the rest, so that a
 * structure's classes take about as many builds as the larger of its GEMM and traversal class counts,
 * not their sum. */
static void walk_classes(const kc_space *s, const pl_problem *p, int (*visit)(int, void *), void *ctx,
                         kc_set *classes, unsigned char *built, kc_walk *out)
{
    kc_set ok = {0}, bad = {0};
    for (int both = 1; both >= 0; both--)
        for (int v = 0; v < s->nvalid; v++) {
            int have0 = kc_set_has(classes, s->cls[v][0]), have1 = kc_set_has(classes, s->cls[v][1]);
            if (built[v] || (have0 && have1) || (both && (have0 || have1))) continue;
            if (!may_apply(s, p, v, &ok, &bad)) {
                built[v] = KC_REFUSED;
                out->refused++;
                continue;
            }
            built[v] = 1;
            out->built++;
            if (visit(v, ctx)) {
                out->inapplicable++;   /* its classes stay open for the next point that has them */
                continue;
            }
            kc_set_add(classes, s->cls[v][0]);
            kc_set_add(classes, s->cls[v][1]);
        }
    kc_set_free(&ok);
    kc_set_free(&bad);
}

/* Pairs of values of two keys: state[a][va][b][vb] (a < b) is the number of inapplicable points
 * that had the pair (up to PAIR_TRIES: given up), or PAIR_COVERED. */
enum { PAIR_TRIES = 32, PAIR_COVERED = 255 };
typedef unsigned char pair_state[SP_MAX_DIMS][SP_MAX_VALS][SP_MAX_DIMS][SP_MAX_VALS];

void kc_point_values(const sp_space *sp, long i, int *val)
{
    for (int d = sp->ndims - 1; d >= 0; d--) {
        val[d] = (int)(i % sp->dims[d].nvals);
        i /= sp->dims[d].nvals;
    }
}

/* Whether the point has a pair still sought (mark == 0); with mark, how many, each counted as a
 * failure (fail) or covered. */
static int open_pairs(const sp_space *sp, pair_state *st, const int *val, int mark, int fail)
{
    int open = 0;
    for (int a = 0; a < sp->ndims; a++)
        for (int b = a + 1; b < sp->ndims; b++) {
            unsigned char *x = &(*st)[a][val[a]][b][val[b]];
            if (*x >= PAIR_TRIES) continue;
            if (!mark) return 1;
            open++;
            if (mark) *x = fail ? (unsigned char)(*x + 1) : PAIR_COVERED;
        }
    return open;
}

/* The points that bring a pair no applicable point had, in a fixed-seed random order; those
 * pl_schedule_applies refuses are left out (in inference most points are: they would give up every
 * pair before an applicable point had it), the others' refusals give a pair up. */
static void walk_pairs(const kc_space *s, const pl_problem *p, int (*visit)(int, void *), void *ctx,
                       kc_set *classes, unsigned char *built, kc_walk *out)
{
    pair_state *st = rg_xcalloc(1, sizeof *st);
    int *order = rg_xmalloc(((size_t)s->nvalid + 1) * sizeof *order), val[SP_MAX_DIMS];
    rg_rng rng;
    rg_rng_seed(&rng, 20240611);
    for (int v = 0; v < s->nvalid; v++) order[v] = v;
    for (int v = s->nvalid - 1; v > 0; v--) {
        int j = (int)rg_rng_below(&rng, (uint64_t)v + 1), t = order[v];
        order[v] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < s->nvalid; k++) {
        int v = order[k];
        kc_point_values(&s->sp, s->point[v], val);
        if (!open_pairs(&s->sp, st, val, 0, 0)) continue;
        cg_config c = kc_config(s, v);
        if (!pl_schedule_applies(p, &c, NULL)) continue;
        built[v] = 1;
        out->built++;
        int inapplicable = visit(v, ctx);
        open_pairs(&s->sp, st, val, 1, inapplicable);
        out->inapplicable += inapplicable;
        if (inapplicable) continue;
        kc_set_add(classes, s->cls[v][0]);
        kc_set_add(classes, s->cls[v][1]);
    }
    free(order);
    free(st);
}

void kc_pairs_walk(const kc_space *s, const pl_problem *p, int (*visit)(int v, void *ctx), void *ctx,
                   kc_set *classes, unsigned char *built, kc_walk *out)
{
    *out = (kc_walk){.points = s->nvalid};
    walk_pairs(s, p, visit, ctx, classes, built, out);
}

void kc_cover_walk(const kc_space *s, const pl_problem *p, int (*visit)(int v, void *ctx), void *ctx,
                   kc_set *classes, unsigned char *built, kc_walk *out)
{
    *out = (kc_walk){.points = s->nvalid};
    if (kc_cover_pairwise()) walk_pairs(s, p, visit, ctx, classes, built, out);
    else walk_classes(s, p, visit, ctx, classes, built, out);
}

/* ---- the distinct kernels of a space ---- */

static uint64_t source_hash(const kp_kernel *k) { return rg_fnv1a64(k->source, strlen(k->source), RG_FNV_SEED); }

typedef int (*inapplicable_fn)(const pl_problem *, const cg_config *, const rg_err *);

/* Builds a config: 0 with *v filled, or 1 when it is inapplicable (the test fails on any other error). */
static int build_point(const cg_config *cfg, const pl_problem *p, inapplicable_fn inapplicable_ok, cg_variant *v)
{
    ir_program *ir;
    lw_program *lp;
    rg_err err;
    int rc = pl_build(p, cfg, NULL, NULL, &ir, &lp, &err);
    if (rc == PL_INAPPLICABLE && (!inapplicable_ok || inapplicable_ok(p, cfg, &err))) return 1;
    if (rc == 0) {
        rc = cg_build(ir, lp, cfg, v, &err);
        lw_free(lp);
        ir_free(ir);
    }
    if (rc) {
        char *cs = cfg_to_string(cfg);
        fail_msg("%s %s %s: %s", p->model, p->task, cs, err.msg);
    }
    return 0;
}

/* kc_space_kernels' visit: a point built, its kernels not seen yet given to fn. */
typedef struct kernel_walk {
    const kc_space *s;
    const pl_problem *p;
    inapplicable_fn inapplicable_ok;
    void (*fn)(const kp_kernel *, void *);
    void *ctx;
    kc_set seen;   /* source hashes */
    kc_walk *out;
} kernel_walk;

static int visit_kernels(int v, void *ctx)
{
    kernel_walk *w = ctx;
    cg_variant var;
    cg_config c = kc_config(w->s, v);
    if (build_point(&c, w->p, w->inapplicable_ok, &var)) return 1;
    for (int k = 0; k < var.plan.nkernels; k++)
        if (kc_set_add(&w->seen, source_hash(&var.plan.kernels[k]))) {
            w->fn(&var.plan.kernels[k], w->ctx);
            w->out->kernels++;
        }
    cg_variant_free(&var);
    return 0;
}

/* may_apply's claim on `sample` points it refused without building them: pl_build refuses each. */
static void check_refusals(const kc_space *s, const pl_problem *p, int sample, inapplicable_fn inapplicable_ok,
                           const unsigned char *built)
{
    int ncand = 0, checked = 0;
    int *cand = rg_xmalloc(((size_t)s->nvalid + 1) * sizeof *cand);
    for (int v = 0; v < s->nvalid; v++)
        if (built[v] == KC_REFUSED) cand[ncand++] = v;
    rg_rng rng;
    rg_rng_seed(&rng, 20261128);
    for (; ncand && checked < sample; checked++) {
        cg_config c = kc_config(s, cand[rg_rng_below(&rng, (uint64_t)ncand)]);
        const cg_config *cfg = &c;
        rg_err err;
        if (pl_build_verdict(p, cfg, NULL, &err) != PL_INAPPLICABLE) {
            char *cs = cfg_to_string(cfg);
            fail_msg("%s %s %s: left out as inapplicable by its structure or schedule, but pl_build does not refuse it",
                     p->model, p->task, cs);
        }
        if (inapplicable_ok && !inapplicable_ok(p, cfg, &err)) {
            char *cs = cfg_to_string(cfg);
            fail_msg("%s %s %s: %s", p->model, p->task, cs, err.msg);
        }
    }
    free(cand);
}

/* The premise on `sample` points not built whose two classes were: each kernel of theirs was seen. */
static void check_premise(const kernel_walk *w, int sample, const kc_set *classes, const unsigned char *built)
{
    const kc_space *s = w->s;
    int ncand = 0;
    int *cand = rg_xmalloc(((size_t)s->nvalid + 1) * sizeof *cand);
    for (int v = 0; v < s->nvalid; v++)
        if (!built[v] && kc_set_has(classes, s->cls[v][0]) && kc_set_has(classes, s->cls[v][1])) cand[ncand++] = v;
    rg_rng rng;
    rg_rng_seed(&rng, 20240611);
    for (int tries = 0; ncand && w->out->sampled < sample && tries < 64 * sample; tries++) {
        cg_config c = kc_config(s, cand[rg_rng_below(&rng, (uint64_t)ncand)]);
        const cg_config *cfg = &c;
        cg_variant var;
        if (build_point(cfg, w->p, w->inapplicable_ok, &var)) continue;
        w->out->sampled++;
        for (int k = 0; k < var.plan.nkernels; k++)
            if (!kc_set_has(&w->seen, source_hash(&var.plan.kernels[k]))) {
                char *cs = cfg_to_string(cfg);
                fail_msg("%s %s %s: kernel %s is not among those of the points of a new schedule class: a kernel's "
                         "text depends on more than its structure and its own schedule keys", w->p->model,
                         w->p->task, cs, var.plan.kernels[k].name);
            }
        cg_variant_free(&var);
    }
    free(cand);
}

void kc_space_kernels(const char *space, const pl_problem *p, int sample,
                      int (*inapplicable_ok)(const pl_problem *p, const cg_config *c, const rg_err *why),
                      void (*fn)(const kp_kernel *k, void *ctx), void *ctx, kc_walk *out)
{
    const kc_space *s = kc_space_get(space);
    kernel_walk w = {.s = s, .p = p, .inapplicable_ok = inapplicable_ok, .fn = fn, .ctx = ctx, .out = out};
    kc_set classes = {0};
    unsigned char *built = rg_xcalloc((size_t)s->nvalid + 1, 1);
    kc_cover_walk(s, p, visit_kernels, &w, &classes, built, out);
    check_premise(&w, sample, &classes, built);
    check_refusals(s, p, sample, inapplicable_ok, built);
    free(built);
    kc_set_free(&classes);
    kc_set_free(&w.seen);
}
