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
static uint64_t normalized_hash(const kp_kernel *k, int shape)
{
    const char *p = k->source, *run = p;   /* run: start of the text not hashed yet */
    size_t nlen = strlen(k->name);
    uint64_t h = RG_FNV_SEED;
#define KC_PUT(s, n) (h = rg_fnv1a64((s), (n), h))
    while (*p) {
        const char *skip = NULL, *put = NULL;
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            skip = e ? e + 2 : p + strlen(p);
        } else if (p[0] == '/' && p[1] == '/') {
            skip = p + strcspn(p, "\n");
        } else if (nlen && !strncmp(p, k->name, nlen) && !is_ident(p[nlen]) && (p == k->source || !is_ident(p[-1]))) {
            skip = p + nlen;
            put = "KERNEL";
        } else if (shape && !strncmp(p, "#define ", 8)) {
            const char *end = p + 8 + strcspn(p + 8, " \n");
            KC_PUT(run, (size_t)(end - run));   /* the line up to the macro's name */
            run = p = end;
            skip = p + strcspn(p, "\n");
            put = " #";
        } else if (shape && !strncmp(p, "__launch_bounds__(", 18)) {
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

void kc_schedule_classes(const cg_config *c, uint64_t cls[2])
{
    static const unsigned kinds[2] = {CFG_ON_GEMM, CFG_ON_TRAV};
    for (int j = 0; j < 2; j++) {
        uint64_t h = rg_fnv1a64(&kinds[j], sizeof kinds[j], RG_FNV_SEED);
        for (int i = 0; i < CFG_NKEYS; i++) {
            const cfg_key *k = cfg_key_at(i);
            unsigned on = cfg_key_kernels(k);
            if (on && !(on & kinds[j])) continue;   /* the other category's schedule key */
            char buf[CFG_VALUE_MAX];
            const char *v = cfg_value(k, c, buf);
            h = rg_fnv1a64(k->name, strlen(k->name) + 1, h);
            h = rg_fnv1a64(v, strlen(v) + 1, h);
        }
        cls[j] = h;
    }
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

/* ---- the distinct kernels of a space ---- */

static uint64_t source_hash(const kp_kernel *k) { return rg_fnv1a64(k->source, strlen(k->source), RG_FNV_SEED); }

/* Builds point i: 0 with *v filled, or 1 when it is inapplicable (the test fails on any other error). */
static int build_point(const sp_point *pt, const pl_problem *p,
                       int (*inapplicable_ok)(const pl_problem *, const cg_config *, const rg_err *), cg_variant *v)
{
    ir_program *ir;
    lw_program *lp;
    rg_err err;
    int rc = pl_build(p, &pt->cfg, NULL, NULL, &ir, &lp, &err);
    if (rc == PL_INAPPLICABLE && (!inapplicable_ok || inapplicable_ok(p, &pt->cfg, &err))) return 1;
    if (rc == 0) {
        rc = cg_build(ir, lp, &pt->cfg, v, &err);
        lw_free(lp);
        ir_free(ir);
    }
    if (rc) {
        char *cs = cfg_to_string(&pt->cfg);
        fail_msg("%s %s %s: %s", p->model, p->task, cs, err.msg);
    }
    return 0;
}

void kc_space_kernels(const char *space, const pl_problem *p, int sample,
                      int (*inapplicable_ok)(const pl_problem *p, const cg_config *c, const rg_err *why),
                      void (*fn)(const kp_kernel *k, void *ctx), void *ctx, kc_walk *out)
{
    sp_space sp;
    sp_point *pts;
    int n;
    rg_err err;
    if (sp_load(space, &sp, &err) || sp_enumerate(&sp, &pts, &n, &err)) fail_msg("%s", err.msg);
    kc_set classes = {0}, seen = {0};
    unsigned char *built = rg_xcalloc((size_t)n, 1);
    *out = (kc_walk){0};
    for (int i = 0; i < n; i++) {
        if (!pts[i].valid) continue;
        out->points++;
        uint64_t cls[2];
        kc_schedule_classes(&pts[i].cfg, cls);
        if (kc_set_has(&classes, cls[0]) && kc_set_has(&classes, cls[1])) continue;
        cg_variant v;
        built[i] = 1;
        out->built++;
        if (build_point(&pts[i], p, inapplicable_ok, &v)) {
            out->inapplicable++;   /* its classes stay open for the next point that has them */
            continue;
        }
        kc_set_add(&classes, cls[0]);
        kc_set_add(&classes, cls[1]);
        for (int k = 0; k < v.plan.nkernels; k++)
            if (kc_set_add(&seen, source_hash(&v.plan.kernels[k]))) {
                fn(&v.plan.kernels[k], ctx);
                out->kernels++;
            }
        cg_variant_free(&v);
    }
    /* the premise: any other point's kernels are among those seen */
    rg_rng rng;
    rg_rng_seed(&rng, 20240611);
    for (int tries = 0; out->sampled < sample && tries < 64 * sample; tries++) {
        int i = (int)rg_rng_below(&rng, (uint64_t)n);
        cg_variant v;
        if (!pts[i].valid || built[i] || build_point(&pts[i], p, inapplicable_ok, &v)) continue;
        out->sampled++;
        for (int k = 0; k < v.plan.nkernels; k++)
            if (!kc_set_has(&seen, source_hash(&v.plan.kernels[k]))) {
                char *cs = cfg_to_string(&pts[i].cfg);
                fail_msg("%s %s %s: kernel %s is not among those of the points of a new schedule class: a kernel's "
                         "text depends on more than its structure and its own schedule keys", p->model, p->task, cs,
                         v.plan.kernels[k].name);
            }
        cg_variant_free(&v);
    }
    free(built);
    kc_set_free(&classes);
    kc_set_free(&seen);
    free(pts);
}
