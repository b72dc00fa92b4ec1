/* Tests of bfloat16 storage (store=bf16) without a GPU: which variables it stores as bfloat16,
 * the sources it emits (compiled by NVRTC), the host conversions, its tolerance and floor. */
#include "tests/testutil.h"
#include "tests/irbuild.h"
#include "codegen/codegen.h"
#include "codegen/counts.h"
#include "codegen/floor.h"
#include "codegen/pipeline.h"
#include "codegen/ref.h"
#include "codegen/vartype.h"
#include "explorer/space.h"
#include "measure/validate.h"
#include "runtime/exec.h"
#include "tests/kcover.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const models[] = {"rgcn", "rgat", "hgt"}, *const tasks[] = {"infer", "train"};

static cg_config config_of(const char *kv)
{
    cg_config c;
    rg_err err;
    cfg_default(&c);
    if (kv && cfg_parse(&c, kv, &err)) fail_msg("%s: %s", kv, err.msg);
    return c;
}

static ir_program *build_ir(const char *model, const char *task, const ir_dims *d, const char *kv, lw_program **lp)
{
    pl_problem p = {model, task, *d};
    cg_config cfg = config_of(kv);
    ir_program *ir;
    rg_err err;
    if (pl_build(&p, &cfg, NULL, NULL, &ir, lp, &err)) fail_msg("%s %s %s: %s", model, task, kv, err.msg);
    return ir;
}

/* The names of p's bfloat16 variables, space-separated in variable order. */
static char *bf16_names(const ir_program *p)
{
    rg_str s = {0};
    rg_str_puts(&s, "");
    for (int v = 0; v < p->nvars; v++)
        if (vt_is_bf16(&p->vars[v])) rg_str_printf(&s, "%s%s", s.s[0] ? " " : "", p->vars[v].name);
    return s.s;
}

static const char *reason_of(const ir_program *p, const char *name)
{
    int v = ir_find_var(p, name);
    if (v < 0) fail_msg("no variable %s", name);
    const char *why = vt_bf16_exclusion(p, v);
    if (!why) fail_msg("%s is eligible", name);
    return why;
}

/* Per model and task (default schedule, compaction and reordering): the input features and the
 * typed linears' outputs become bfloat16 (RGCN's compact message _t1, RGAT's hs, HGT's q, katt
 * and msg); weights, scalars, outputs, gradients and backward temporaries stay, each for its
 * reason; store=f32 (and the default) marks nothing. */
static void test_eligible_variables_by_name(void **state)
{
    (void)state;
    static const char *const want[3] = {"feature _t1", "feature hs", "feature q katt msg"};
    ir_dims d = {64, 64, 1};
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++) {
            lw_program *lp;
            ir_program *ir = build_ir(models[m], tasks[t], &d, "store=bf16", &lp);
            char *got = bf16_names(ir);
            if (strcmp(got, want[m])) fail_msg("%s %s: bf16 variables '%s', expected '%s'", models[m], tasks[t], got, want[m]);
            free(got);
            assert_non_null(strstr(reason_of(ir, "h"), "output"));
            assert_non_null(strstr(reason_of(ir, m == 0 ? "norm" : "att_sum"), m == 0 ? "graph-derived" : "per-row scalar"));
            assert_non_null(strstr(reason_of(ir, m == 2 ? "WQ" : "W"), "weight"));
            if (t == 1) {
                assert_non_null(strstr(reason_of(ir, "d_feature"), "gradient"));
                assert_non_null(strstr(reason_of(ir, m == 2 ? "d_WQ" : "d_W"), "weight"));
                assert_non_null(strstr(reason_of(ir, "loss"), "loss"));
            }
            lw_free(lp);
            ir_free(ir);
            ir = build_ir(models[m], tasks[t], &d, "store=f32", &lp);
            got = bf16_names(ir);
            assert_string_equal(got, "");
            free(got);
            lw_free(lp);
            ir_free(ir);
        }
    /* RGAT's backward temporary _bt3 is as wide as a message and written once per row, but by
     * the backward pass */
    lw_program *lp;
    ir_program *ir = build_ir("rgat", "train", &d, "store=bf16", &lp);
    assert_non_null(strstr(reason_of(ir, "_bt3"), "backward"));
    assert_non_null(strstr(reason_of(ir, "d_hs"), "gradient"));
    lw_free(lp);
    ir_free(ir);
}

/* Builds a variant: 0, or PL_INAPPLICABLE when the config does not apply to the model. */
static int build_variant(const char *model, const char *task, const ir_dims *d, const char *kv, cg_variant *v)
{
    pl_problem p = {model, task, *d};
    cg_config cfg = config_of(kv);
    ir_program *ir;
    lw_program *lp;
    rg_err err;
    int rc = pl_build(&p, &cfg, NULL, NULL, &ir, &lp, &err);
    if (rc == PL_INAPPLICABLE) return rc;
    if (rc || cg_build(ir, lp, &cfg, v, &err)) fail_msg("%s %s %s: %s", model, task, kv, err.msg);
    lw_free(lp);
    ir_free(ir);
    return 0;
}

/* Text that marks each way an emitter reads or writes a bfloat16 variable, with the forms it
 * appears in (GEMM, outer product, traversal kinds). */
static const char *const PATHS[] = {
    "ldg_bf16x4(X",                       /* GEMM float4 staging of X (product and outer product) */
    "? __bfloat162float(__ldg(X",         /* GEMM scalar staging of X */
    "sv[rr] * (float)__bfloat162float",   /* outer product, scalar X */
    ": __float2bfloat16(0.f)",            /* mma=bf16 staging a bfloat16 X as it is (rows not 4-aligned) */
    "? __ldg((const uint4*)(X + xbase[r]",   /* mma=bf16 staging a bfloat16 X's bits, 16 bytes at a time */
    "? __ldg((const uint2*)(X + xbase[r]",   /* ... 8 bytes at a time (rows of a multiple of 4, not 8) */
    "? __ldg((const uint4*)(X + xb[xr]",     /* mma=bf16 outer product, the same */
    "const float4 v = ldg_bf16x4(X",      /* mma=tf32 outer product, 16-byte staging of a bfloat16 X */
    "__float_to_tf32((xbase[r] >= 0 && k0 + kk < K) ? __bfloat162float",   /* mma=tf32 staging a converted X */
    "*y = __float2bfloat16_rn(v)",        /* GEMM output rounded once */
    "st_bf16x4(Y",                        /* mma GEMM output, 4 elements in 8 bytes */
    "ld_bf16x4(",                         /* traversal 4-wide loads */
    "ld_bf16x2(",                         /* traversal 2-wide loads */
    "fma((double)__bfloat162float",       /* traversal dot products and row-wise linears */
    "] = __double2bfloat16",              /* traversal output rounded once */
    "node-centric",
    "compact_find",
};
#define NPATHS ((int)(sizeof PATHS / sizeof PATHS[0]))

/* Kernels that name bfloat16, one for each path (or form) no kept kernel shows yet: NVRTC
 * compiles these few, the others differ from them by sizes and schedule macros only. */
typedef struct source_set {
    int covered[NPATHS];
    kp_plan plan;
} source_set;

static void add_bf16_kernels(source_set *s, const cg_variant *v)
{
    for (int k = 0; k < v->plan.nkernels; k++) {
        const kp_kernel *kk = &v->plan.kernels[k];
        if (!strstr(kk->source, "__nv_bfloat16")) continue;
        int adds = 0;
        for (int i = 0; i < NPATHS; i++)
            if (!s->covered[i] && strstr(kk->source, PATHS[i])) adds = s->covered[i] = 1;
        if (!adds) continue;
        kp_kernel *c = kp_add_kernel(&s->plan);
        *c = *kk;
        c->source = rg_xstrdup(kk->source);
    }
}

/* Every shipped model and task under store=bf16 with three schedules that reach each path that reads or
 * writes a bfloat16 variable (GEMM scalar, float4 and wmma tf32/bf16 staging, register W, traversal
 * scalar and 2/4-wide loads, edge- and node-centric, bsearch and direct compaction, reordering on and
 * off): each variant has bfloat16 kernels, every path shows, and NVRTC compiles for sm_90 a kernel
 * of each (a few, so that the test stays fast). */
static void test_bf16_sources_compile(void **state)
{
    (void)state;
    static const char *const configs[] = {
        "store=bf16",
        "store=bf16,mma=bf16,vec=4,lanes=16,tile=64,coarsen=2,softmax=single",
        "store=bf16,mma=tf32,vec=2,trav=node,compact=bsearch,tile=16,coarsen=1,w=reg,reorder=off"};
    source_set set = {0};
    for (int m = 0; m < tu_nmodels; m++)
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < 3; c++) {
                ir_dims d = tu_model_dims(tu_models[m], &(ir_dims){64, 64, 1});
                const char *kv = configs[c];
                cg_variant v;
                /* softmax=single does not apply to the RGCNs (no edge softmax): without it there */
                if (build_variant(tu_models[m], tasks[t], &d, kv, &v) &&
                    build_variant(tu_models[m], tasks[t], &d, "store=bf16,mma=bf16,vec=4,lanes=16,tile=64,coarsen=2", &v))
                    fail_msg("%s %s: no store=bf16 variant", tu_models[m], tasks[t]);
                int any = 0;
                for (int k = 0; k < v.plan.nkernels; k++) any |= strstr(v.plan.kernels[k].source, "__nv_bfloat16") != NULL;
                if (!any) fail_msg("%s %s %s: no kernel reads or writes bfloat16", tu_models[m], tasks[t], kv);
                add_bf16_kernels(&set, &v);
                cg_variant_free(&v);
            }
    /* rows of 30 elements: no 4-wide access, so the GEMMs (float32 and tensor-core) stage X element
     * by element; of 20: 4-wide, not 8 */
    static const char *const narrow[] = {"store=bf16", "store=bf16,mma=bf16"};
    for (int w = 20; w <= 30; w += 10)
        for (int c = 0; c < 2; c++) {
            cg_variant v;
            build_variant("rgcn", "train", &(ir_dims){w, w, 1}, narrow[c], &v);
            add_bf16_kernels(&set, &v);
            cg_variant_free(&v);
        }
    for (int i = 0; i < NPATHS; i++)
        if (!set.covered[i]) fail_msg("no kernel shows path '%s'", PATHS[i]);
    kx_compiled comp;
    rg_err err;
    double t0 = rg_now();
    if (kx_compile(&set.plan, 90, 2, &comp, &err)) fail_msg("%s", err.msg);
    printf("store=bf16: %d kernels covering %d paths compiled for sm_90 in %.1f s (%d from the cache)\n",
           set.plan.nkernels, NPATHS, rg_now() - t0, comp.cache_hits);
    kx_compiled_free(&comp);
    kp_plan_free(&set.plan);
}

/* How a GEMM kernel reads X: 16 bytes of float32, 8 of bfloat16 widened to floats, bfloat16 bits
 * in 16 or 8 bytes, or element by element. */
typedef enum x_read { XR_SCALAR, XR_F32X4, XR_BF16X4, XR_BITS8, XR_BITS4 } x_read;

static x_read x_read_of(const char *src)
{
    if (strstr(src, "__ldg((const float4*)(X + ")) return XR_F32X4;
    if (strstr(src, "ldg_bf16x4(X + ")) return XR_BF16X4;
    if (strstr(src, "__ldg((const uint4*)(X + ")) return XR_BITS8;
    if (strstr(src, "__ldg((const uint2*)(X + ")) return XR_BITS4;
    return XR_SCALAR;
}

/* The shapes of the GEMM tests: widths that are multiples of 8 (with heads of 16 and 32), of 4
 * only, and of neither (6 is narrower than a fragment, 30 is not). */
static const ir_dims gemm_shapes[] = {{64, 64, 1}, {64, 64, 4}, {128, 128, 1}, {128, 128, 4}, {20, 20, 1}, {30, 30, 1}, {6, 6, 1}};
#define NSHAPES ((int)(sizeof gemm_shapes / sizeof gemm_shapes[0]))
static const char *const mmas[] = {"off", "bf16", "tf32"};

/* The variant of a model, task, shape, mma and store under the session-8 schedule (compact=direct,
 * reorder=on, tile=64, coarsen=4, softmax=single where it applies). */
static void build_gemm_variant(int m, int t, int d, int mma, int bf16, cg_variant *v)
{
    char *kv = rg_xasprintf("compact=direct,reorder=on,tile=64,coarsen=4,mma=%s%s%s", mmas[mma],
                            m ? ",softmax=single" : "", bf16 ? ",store=bf16" : "");
    build_variant(models[m], tasks[t], &gemm_shapes[d], kv, v);
    free(kv);
}

/* What test_gemm_reads_follow_f32 saw, so that none of its checks is vacuous. */
typedef struct gemm_seen {
    int bits8, bits4, widened, scalar, vec_store, elem_store;
} gemm_seen;

/* One GEMM kernel under store=bf16 (b) against the same kernel under store=f32 (a), in a shape of
 * row width w: X is read as widely as float32 reads it (bfloat16 bits under mma=bf16, 16 bytes
 * when w is a multiple of 8), and a bfloat16 Y is written from float, 4 elements in 8 bytes by
 * the tensor-core epilogue when w is a multiple of 4. */
static void check_gemm_pair(const kp_kernel *a, const kp_kernel *b, int w, int mma, gemm_seen *seen)
{
    assert_string_equal(a->name, b->name);
    x_read ra = x_read_of(a->source), rb = x_read_of(b->source);
    int tensor = strstr(b->source, "nvcuda::wmma::mma_sync") != NULL;
    if (!strstr(b->source, "const __nv_bfloat16* __restrict__ X")) {
        assert_int_equal(ra, rb);
    } else if (ra == XR_SCALAR) {
        if (rb != XR_SCALAR) fail_msg("%s: float32 X element by element, bfloat16 X read as %d", b->name, rb);
        seen->scalar++;
    } else {
        x_read want = !tensor || strcmp(mmas[mma], "bf16") ? XR_BF16X4 : w % 8 == 0 ? XR_BITS8 : XR_BITS4;
        if (ra != XR_F32X4 || rb != want)
            fail_msg("%s (rows of %d, mma=%s): X read as %d in float32 and %d in bfloat16, %d wanted:\n%s", b->name, w,
                     mmas[mma], ra, rb, want, b->source);
        seen->bits8 += rb == XR_BITS8;
        seen->bits4 += rb == XR_BITS4;
        seen->widened += rb == XR_BF16X4;
    }
    if (strstr(b->source, "__double2bfloat16")) fail_msg("%s rounds through float64:\n%s", b->name, b->source);
    if (!strstr(b->source, "    __nv_bfloat16* __restrict__ Y") && !strstr(b->source, ", __nv_bfloat16* __restrict__ Y"))
        return;
    int vec = tensor && w % 4 == 0;
    if (vec != (strstr(b->source, "st_bf16x4(Y + ") != NULL) ||
        !vec != (strstr(b->source, "*y = __float2bfloat16_rn(v);") != NULL))
        fail_msg("%s (rows of %d): %s bfloat16 stores of Y wanted:\n%s", b->name, w, vec ? "8-byte" : "element", b->source);
    seen->vec_store += vec;
    seen->elem_store += !vec;
}

/* Every GEMM of every model and task, shapes of rows that are multiples of 8, of 4 only and of
 * neither, under mma off, bf16 and tf32: under store=bf16 X is read as widely as under store=f32
 * (16-byte bits under mma=bf16 when rows allow, no float round trip; element by element where
 * float32 is), Y is written with 8-byte stores by the tensor cores' epilogue, and no GEMM
 * converts through float64. */
static void test_gemm_reads_follow_f32(void **state)
{
    (void)state;
    gemm_seen seen = {0};
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++)
            for (int d = 0; d < NSHAPES; d++)
                for (int mma = 0; mma < 3; mma++) {
                    cg_variant a, b;
                    build_gemm_variant(m, t, d, mma, 0, &a);
                    build_gemm_variant(m, t, d, mma, 1, &b);
                    assert_int_equal(a.plan.nkernels, b.plan.nkernels);
                    for (int k = 0; k < a.plan.nkernels; k++)
                        if (a.plan.kernels[k].category == KC_GEMM)
                            check_gemm_pair(&a.plan.kernels[k], &b.plan.kernels[k], gemm_shapes[d].out_dim, mma, &seen);
                    cg_variant_free(&a);
                    cg_variant_free(&b);
                }
    printf("bfloat16 X: %d kernels 16-byte bits, %d 8-byte bits, %d widened, %d element by element; bfloat16 Y: %d "
           "8-byte stores, %d element stores\n", seen.bits8, seen.bits4, seen.widened, seen.scalar, seen.vec_store,
           seen.elem_store);
    assert_true(seen.bits8 > 0 && seen.bits4 > 0 && seen.widened > 0 && seen.scalar > 0);
    assert_true(seen.vec_store > 0 && seen.elem_store > 0);
}

/* A GEMM kernel's form: the branches of the emitter its text shows (tensor-core precision,
 * product or outer product, W transposed, per-row scalar, element types of X and Y, how X is
 * read and Y written). Kernels of one form differ by widths, strides, index arrays and schedule
 * constants, where NVRTC's verdict does not change. */
static uint64_t gemm_form(const kp_kernel *k)
{
    static const char *const marks[] = {
        "m16n16k16", "precision::tf32", "outer product", "^T  (", "__ldg(S", "const __nv_bfloat16* __restrict__ X",
        "__nv_bfloat16* __restrict__ Y", "st_bf16x4(Y", "*y = __float2bfloat16_rn(v)", "atomicAdd(y", "*y += v",
        "__bfloat162float(__ldg(X", ": __float2bfloat16(0.f)"};
    int f[sizeof marks / sizeof marks[0] + 1];
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) f[i] = strstr(k->source, marks[i]) != NULL;
    f[sizeof marks / sizeof marks[0]] = (int)x_read_of(k->source);
    return rg_fnv1a64(f, sizeof f, RG_FNV_SEED);
}

/* The same matrix (every model and task, the shapes above, mma off, bf16 and tf32, store f32 and
 * bf16): NVRTC compiles for sm_90 a GEMM kernel of each form (gemm_form) that reads or writes
 * bfloat16 (21 forms, a few seconds). The store=f32 GEMMs' text does not depend on store=bf16's
 * paths (test_f32_unchanged) and test_codegen compiles them; traversals do not change with the
 * GEMMs' precision (test_bf16_sources_compile and test_codegen compile theirs). */
static void test_gemm_matrix_compiles(void **state)
{
    (void)state;
    kc_set seen = {0};
    kp_plan plan = {0};
    int gemms = 0;
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++)
            for (int d = 0; d < NSHAPES; d++)
                for (int mma = 0; mma < 3; mma++)
                    for (int bf16 = 0; bf16 < 2; bf16++) {
                        cg_variant v;
                        build_gemm_variant(m, t, d, mma, bf16, &v);
                        for (int k = 0; k < v.plan.nkernels; k++) {
                            const kp_kernel *kk = &v.plan.kernels[k];
                            if (kk->category != KC_GEMM || !strstr(kk->source, "__nv_bfloat16* __restrict__")) continue;
                            gemms++;
                            if (!kc_set_add(&seen, gemm_form(kk))) continue;
                            kp_kernel *c = kp_add_kernel(&plan);
                            *c = *kk;
                            c->source = rg_xstrdup(kk->source);
                        }
                        cg_variant_free(&v);
                    }
    kx_compiled comp;
    rg_err err;
    double t0 = rg_now();
    if (kx_compile(&plan, 90, 2, &comp, &err)) fail_msg("%s", err.msg);
    printf("GEMM matrix: %d GEMM kernels, one of each of %d forms compiled for sm_90 in %.1f s (%d from the cache)\n", gemms,
           plan.nkernels, rg_now() - t0, comp.cache_hits);
    kx_compiled_free(&comp);
    kp_plan_free(&plan);
    kc_set_free(&seen);
}

/* store=f32 is the default: the same canonical string and hash as a config without it (so every
 * stored variant keeps its key), and the same sources, none naming bfloat16. store=bf16 is printed
 * last; other values are refused with the allowed ones. */
static void test_f32_unchanged(void **state)
{
    (void)state;
    cg_config a = config_of(NULL), b = config_of("store=f32"), c = config_of("store=bf16");
    char *sa = cfg_to_string(&a), *sb = cfg_to_string(&b), *sc = cfg_to_string(&c);
    assert_string_equal(sa, sb);
    assert_true(cfg_hash(&a) == cfg_hash(&b));
    char *want = rg_xasprintf("%s,store=bf16", sa);
    assert_string_equal(sc, want);
    assert_true(cfg_hash(&c) != cfg_hash(&a));
    free(sa), free(sb), free(sc), free(want);
    rg_err err;
    assert_int_equal(cfg_parse(&a, "store=fp16", &err), -1);
    assert_string_equal(err.msg, "config: store must be f32 or bf16 (got 'fp16')");
    ir_dims d = {32, 32, 2};
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++) {
            cg_variant v0, v1;
            build_variant(models[m], tasks[t], &d, NULL, &v0);
            build_variant(models[m], tasks[t], &d, "store=f32", &v1);
            assert_int_equal(v0.plan.nkernels, v1.plan.nkernels);
            for (int k = 0; k < v0.plan.nkernels; k++) {
                assert_string_equal(v0.plan.kernels[k].source, v1.plan.kernels[k].source);
                assert_null(strstr(v0.plan.kernels[k].source, "bfloat16"));
            }
            cg_variant_free(&v0);
            cg_variant_free(&v1);
        }
}

/* The host's conversions: one rounding to nearest even from float64, as __double2bfloat16 (a
 * value just above a tie that float32 would round onto the tie rounds up), NaN and infinity kept,
 * and the widening back exact. */
static void test_host_conversions(void **state)
{
    (void)state;
    assert_int_equal(kx_bf16_from_double(1.0), 0x3f80);
    assert_int_equal(kx_bf16_from_double(-2.0), 0xc000);
    assert_int_equal(kx_bf16_from_double(1.0 + ldexp(1, -8)), 0x3f80);       /* tie: to even (down) */
    assert_int_equal(kx_bf16_from_double(1.0 + 3 * ldexp(1, -8)), 0x3f82);   /* tie: to even (up) */
    assert_int_equal(kx_bf16_from_double(1.0 + ldexp(1, -8) + ldexp(1, -30)), 0x3f81);   /* not a tie */
    assert_int_equal(kx_bf16_from_double(-(1.0 + ldexp(1, -8) + ldexp(1, -30))), 0xbf81);
    assert_int_equal(kx_bf16_from_double(1.0 + ldexp(1, -8) - ldexp(1, -30)), 0x3f80);
    assert_int_equal(kx_bf16_from_double(INFINITY), 0x7f80);
    assert_int_equal(kx_bf16_from_double(1e300), 0x7f80);
    assert_true(isnan(kx_bf16_to_float(kx_bf16_from_double(NAN))));
    assert_true(kx_bf16_to_float(0x3f81) == 1.0f + ldexpf(1, -7));
    assert_true(kx_bf16_to_float(kx_bf16_from_double(0.1)) == 0.10009765625f);
}

/* The precision names and tolerances: "+bf16-store" after the operands' name; bfloat16 storage adds
 * bf16's rounding unit to the operands' (float32 operands: bf16 mma's tolerance; both: twice the
 * added term); the operands' mantissa bits are unchanged by the suffix. */
static void test_precision_and_tolerance(void **state)
{
    (void)state;
    static const char *const kv[] = {"store=bf16", "store=bf16,mma=tf32", "store=bf16,mma=bf16", "mma=bf16"};
    static const char *const name[] = {"fp32+bf16-store", "tf32+bf16-store", "bf16+bf16-store", "bf16"};
    static const int bits[] = {23, 10, 7, 7};
    pl_problem inf = {"rgat", "infer", {64, 64, 1}}, train = {"hgt", "train", {128, 128, 4}};
    double u8 = ldexp(1, -8), u11 = ldexp(1, -11);
    const double want_inf[] = {1e-5 + 2 * u8 * 8, 1e-5 + 2 * (u11 + u8) * 8, 1e-5 + 2 * (2 * u8) * 8, 1e-5 + 2 * u8 * 8};
    for (int i = 0; i < 4; i++) {
        cg_config c = config_of(kv[i]);
        assert_string_equal(cfg_precision(&c), name[i]);
        assert_int_equal(xv_mantissa_bits(cfg_precision(&c)), bits[i]);
        assert_float_equal(xv_variant_tolerance(0, &inf, &c), want_inf[i], 1e-15);
    }
    cg_config s = config_of("store=bf16");
    assert_float_equal(xv_variant_tolerance(0, &train, &s), 1e-4 + 4 * u8 * sqrt(128), 1e-15);
    assert_float_equal(xv_variant_tolerance(3e-3, &train, &s), 3e-3, 0);   /* a requested one wins */
}

static void round_to_bf16(ref_exec *x, int v)
{
    double *a = ref_values(x, v);
    for (int64_t i = 0; i < ref_count(x, v); i++) a[i] = kx_bf16_to_float(kx_bf16_from_double(a[i]));
}

/* The relative L2 error of a bf16-storage run emulated on the CPU: the float64 reference of the
 * variant's program with its bfloat16 variables rounded as a device stores them (inputs at
 * upload, the others after each statement writing them), against the same program unrounded;
 * the largest over the output and, in training, every parameter's gradient. */
static double emulated_error(const pl_problem *p, const hg_graph *g)
{
    cg_config cfg = config_of("store=bf16");
    ir_program *ir;
    lw_program *lp;
    rg_err err;
    if (pl_build(p, &cfg, g, NULL, &ir, &lp, &err)) fail_msg("%s", err.msg);
    ref_options opt = {0};
    ref_exec *exact = ref_new(ir, g, &opt, &err), *x = ref_new(ir, g, &opt, &err);
    if (!exact || !x || ref_run(exact, &err) || ref_reset_all(x, &err)) fail_msg("%s", err.msg);
    for (int v = 0; v < ir->nvars; v++)
        if (vt_is_bf16(&ir->vars[v]) && ir->vars[v].role == IR_ROLE_INPUT) round_to_bf16(x, v);
    for (int i = 0; i < ir->nstmts; i++) {
        if (ref_run_stmt(x, i, &err)) fail_msg("%s", err.msg);
        if (vt_is_bf16(&ir->vars[ir->stmts[i].out.var])) round_to_bf16(x, ir->stmts[i].out.var);
    }
    double worst = 0;
    for (int v = 0; v < ir->nvars; v++) {
        const ir_var *y = &ir->vars[v];
        int checked = v == ir->output || (y->grad_of >= 0 && ir->vars[y->grad_of].role == IR_ROLE_PARAM);
        if (!checked) continue;
        double e = xv_rel_l2(ref_values(exact, v), ref_values(x, v), ref_count(x, v));
        if (e > worst) worst = e;
    }
    ref_free(exact);
    ref_free(x);
    lw_free(lp);
    ir_free(ir);
    return worst;
}

/* What bfloat16 storage does to a layer's results on the CPU, for every model (inference, and
 * training where no (Leaky)ReLU kink can flip: RGCN and HGT): over float32's tolerance, so the
 * rounding is real, and within store=bf16's, so a correct device run validates. */
static void test_emulated_run_within_tolerance(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    cg_config cfg = config_of("store=bf16");
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++) {
            if (t == 1 && m == 1) continue;
            pl_problem p = {models[m], tasks[t], {32, 32, m == 0 ? 1 : 2}};
            double e = emulated_error(&p, g), tol = xv_variant_tolerance(0, &p, &cfg);
            printf("%s %s: emulated bf16 storage error %.2e, tolerance %.2e\n", models[m], tasks[t], e, tol);
            if (!(e > xv_tolerance(0, t) && e < tol))
                fail_msg("%s %s: error %.3g outside (%.3g, %.3g)", models[m], tasks[t], e, xv_tolerance(0, t), tol);
        }
    hg_free(g);
}

/* The floor at bfloat16 widths: the input features' bytes halve, nothing else moves, and a
 * store=bf16 variant's analytic bytes lie between that floor and the float32 variant's. */
static void test_floor_and_counts(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    for (int m = 0; m < 3; m++) {
        pl_problem p = {models[m], "infer", {32, 32, 1}};
        fl_floor f32, bf;
        rg_err err;
        if (fl_floor_layer(&p, g, &f32, &err) || fl_floor_layer_store(&p, g, 1, &bf, &err)) fail_msg("%s", err.msg);
        int64_t feature_bytes = (int64_t)g->num_nodes * 32 * 4;
        assert_float_equal(f32.input_bytes - bf.input_bytes, feature_bytes / 2, 0);
        assert_float_equal(f32.weight_bytes, bf.weight_bytes, 0);
        assert_float_equal(f32.output_bytes, bf.output_bytes, 0);
        assert_float_equal(f32.flops, bf.flops, 0);
        double bytes[2];
        for (int s = 0; s < 2; s++) {
            cg_variant v;
            lw_program *lp;
            ir_program *ir = build_ir(models[m], "infer", &p.dims, s ? "store=bf16" : NULL, &lp);
            cg_config cfg = config_of(s ? "store=bf16" : NULL);
            if (cg_build(ir, lp, &cfg, &v, &err)) fail_msg("%s", err.msg);
            double flops, atomics;
            int launches;
            cg_counts_fill(ir, &v, g, &flops, &bytes[s], &atomics, &launches);
            cg_variant_free(&v);
            lw_free(lp);
            ir_free(ir);
        }
        if (!(bf.bytes <= bytes[1] && bytes[1] < bytes[0]))
            fail_msg("%s: floor %.0f, bf16 variant %.0f, float32 variant %.0f bytes", models[m], bf.bytes, bytes[1], bytes[0]);
    }
    hg_free(g);
}

/* docs/spaces/store.txt, the GPU validation space of store=bf16 (README), loads and crosses store
 * f32 and bf16 with the rest, half of its valid points bfloat16. */
static void test_gpu_space_file(void **state)
{
    (void)state;
    sp_space sp;
    sp_point *pts;
    int n, bf16 = 0, valid = 0;
    rg_err err;
    if (sp_load("docs/spaces/store.txt", &sp, &err)) fail_msg("%s", err.msg);
    assert_string_equal(sp.dims[sp.ndims - 1].key, "store");
    assert_int_equal(sp_enumerate(&sp, &pts, &n, &err), 0);
    for (int i = 0; i < n; i++) {
        cg_config c;
        sp_config_at(&sp, i, &c);
        valid += pts[i].valid;
        bf16 += pts[i].valid && c.store_bf16;
    }
    assert_true(valid > 0);
    assert_int_equal(2 * bf16, valid);
    free(pts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eligible_variables_by_name),
        cmocka_unit_test(test_f32_unchanged),
        cmocka_unit_test(test_host_conversions),
        cmocka_unit_test(test_precision_and_tolerance),
        cmocka_unit_test(test_emulated_run_within_tolerance),
        cmocka_unit_test(test_floor_and_counts),
        cmocka_unit_test(test_bf16_sources_compile),
        cmocka_unit_test(test_gemm_reads_follow_f32),
        cmocka_unit_test(test_gemm_matrix_compiles),
        cmocka_unit_test(test_gpu_space_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
