/* Tests of the code generator without a GPU: every distinct kernel of the default design space,
 * for every model and task, is emitted, and NVRTC compiles for sm_90 those that bring text not compiled
 * yet and a fixed sample of the rest (fewer for sm_80; points that do not apply to a problem,
 * softmax=single for rgcn or a vector width wider than its rows, must say so and are left out). */
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "codegen/collective.h"
#include "codegen/emit_trav.h"
#include "codegen/pipeline.h"
#include "explorer/space.h"
#include "runtime/exec.h"
#include "tests/kcover.h"

#include <stdlib.h>
#include <ctype.h>
#include <string.h>

/* Kernels queued for sm_90 in this run, by kc_kernel_class (the same text up to comments and the
 * kernel's own name: NVRTC's verdict is the same), and the tensor-core kernel shapes seen
 * (kc_kernel_shape): shared by the tests, so that none compiles what an earlier one did. */
static kc_set queued90, mma_shapes;
/* The text compiled in this run (kc_text_items): for sm_90 every line as it is and every pair of
 * consecutive lines up to numeric literals, for sm_80 every line up to numeric literals. */
#define TEXT90_EXACT KC_LINES
#define TEXT90_PAIRS (KC_LINE_PAIRS | KC_NO_LITERALS)
#define TEXT80 (KC_LINES | KC_NO_LITERALS)
static kc_set text90, text80;

static void add_copy(kp_plan *p, const kp_kernel *k)
{
    kp_kernel *c = kp_add_kernel(p);
    *c = *k;
    c->source = rg_xstrdup(k->source);
}

/* Queues k for sm_90 unless a kernel of its class was queued in this run; 1 when queued. */
static int queue90(kp_plan *p, const kp_kernel *k)
{
    if (!kc_set_add(&queued90, kc_kernel_class(k))) return 0;
    kc_text_items(&text90, k, TEXT90_EXACT, 1);
    kc_text_items(&text90, k, TEXT90_PAIRS, 1);
    add_copy(p, k);
    return 1;
}

/* Compiles the queued kernels for sm_90 (failing the test on an error) and frees the plan. */
static void compile90_and_free(kp_plan *plan)
{
    kx_compiled c;
    rg_err err;
    if (kx_compile(plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    kx_compiled_free(&c);
    kp_plan_free(plan);
}

/* Text of k that no kernel queued for sm_90 in this run had (items of kc_text_items). */
static int new_text90(const kp_kernel *k)
{
    return kc_text_items(&text90, k, TEXT90_EXACT, 0) + kc_text_items(&text90, k, TEXT90_PAIRS, 0);
}

/* One float32 kernel in 32, by a hash of its class with a fixed seed: the same kernels in every run,
 * whatever order the points come in. */
static int sampled(const kp_kernel *k)
{
    uint64_t h = (kc_kernel_class(k) ^ 0x5eed2024u) * 0x9e3779b97f4a7c15ull;
    return h >> 59 == 0;
}

static const ir_dims dims = {64, 64, 1};

static int build_variant_dims(const char *model, const char *task, const ir_dims *d, const cg_config *cfg,
                              cg_variant *v, rg_err *err)
{
    pl_problem p = {.model = model, .task = task, .dims = *d};
    ir_program *ir;
    lw_program *lp;
    int rc = pl_build(&p, cfg, NULL, NULL, &ir, &lp, err);
    if (rc) return rc;
    rc = cg_build(ir, lp, cfg, v, err);
    lw_free(lp);
    ir_free(ir);
    return rc;
}

static int build_variant(const char *model, const char *task, const cg_config *cfg, cg_variant *v, rg_err *err)
{
    return build_variant_dims(model, task, &dims, cfg, v, err);
}

/* kv over the defaults builds nothing for model and task: pl_build or cg_build returns rc
 * (PL_INAPPLICABLE, or -1 for an invalid config) with a reason that contains `why`. */
static void assert_refused(const char *model, const char *task, const char *kv, int rc, const char *why)
{
    cg_config cfg;
    cg_variant v;
    rg_err err;
    cfg_default(&cfg);
    if (cfg_parse(&cfg, kv, &err)) fail_msg("%s: %s", kv, err.msg);
    int got = build_variant(model, task, &cfg, &v, &err);
    if (got != rc || !strstr(err.msg, why)) fail_msg("%s %s %s: returned %d, not %d: %s", model, task, kv, got, rc, err.msg);
}

/* The kernels of one problem's space, split by target. */
typedef struct space_kernels {
    kp_plan sm90, sm80;
    int fp32, mma;       /* distinct kernels of the problem */
    int fp32_compiled;   /* float32 ones queued for sm_90 */
} space_kernels;

static void collect(const kp_kernel *k, void *ctx)
{
    space_kernels *s = ctx;
    if (strstr(k->source, "nvcuda::wmma")) {
        s->mma++;
        if (kc_set_add(&mma_shapes, kc_kernel_shape(k))) queue90(&s->sm90, k);
        return;
    }
    s->fp32++;
    /* NVRTC's verdict on a float32 kernel follows from its text. Compiled for sm_90: each kernel with a
     * line (as written) or a pair of consecutive lines (numeric literals aside) that no kernel compiled
     * in this run had, and one in 32 of the others by a fixed hash (some 500 of the 8,700 distinct
     * float32 kernels of the six problems when this was written). So every line any kernel of the
     * space has goes through NVRTC (every #define and launch-bounds value included), next to every
     * neighbour it has anywhere: an emitter fault that writes wrong code shows as new text. A fault
     * in how lines far apart combine (a declaration another option drops) is left to the sample and
     * to the GPU sweeps, which compile every kernel they run. Compiling all of them (NVRTC takes about
     * 0.1 s a kernel) took 4 minutes of a clean CI run; one per kc_kernel_shape would merge few
     * float32 kernels (their schedules are written out in the code, not in macros). */
    if (kc_set_has(&queued90, kc_kernel_class(k)) || (!new_text90(k) && !sampled(k))) return;
    s->fp32_compiled += queue90(&s->sm90, k);
    /* sm_80: portability is a property of the constructs a kernel uses (atomics, intrinsics, types),
     * each on its own line: the kernels that bring a line (up to numeric literals) new to sm_80 */
    if (kc_text_items(&text80, k, TEXT80, 1)) add_copy(&s->sm80, k);
}

/* softmax=single for rgcn, a traversal mapping wider than the rows, or wrun in inference and crsum in inference or without compaction (nothing to
 * change), crsum=defer without a traversal's row sums over destinations, recompute=on in inference or for RGCN (nothing stored for the backward pass to recompute),
 * nchunk=8 where no node-centric kernel walks a node's edges once (nothing split), epi=on where no
 * aggregation is followed by node statements it can run, cdot=edge for RGCN and HGT (compaction leaves
 * them no dot product): the only points that may not apply. */
static int inapplicable_ok(const pl_problem *p, const cg_config *c, const rg_err *why)
{
    rg_err e;
    if (c->wrun != 32 && !pl_is_train(p->task) && strstr(why->msg, "changes only the traversals that sum weight gradients"))
        return 1;
    if (c->crsum != CFG_CRSUM_ATOMIC && (!pl_is_train(p->task) || c->compact == CFG_COMPACT_OFF) &&
        strstr(why->msg, "changes only the traversals that sum into compact (src, etype) rows"))
        return 1;
    /* crsum=defer: RGCN's backward, and RGAT's without reordering (its destination term is a GEMM's),
     * sum no row over destinations in a traversal */
    if (c->crsum == CFG_CRSUM_DEFER && (!strcmp(p->model, "rgcn") || (!strcmp(p->model, "rgat") && !c->reorder)) &&
        strstr(why->msg, "no such sums, so it would duplicate crsum=run"))
        return 1;
    if (c->recompute && (!pl_is_train(p->task) || !strcmp(p->model, "rgcn")) &&
        strstr(why->msg, "recompute=on does not apply"))
        return 1;
    if (c->nchunk != 64 && c->node_centric && strstr(why->msg, "it would duplicate nchunk=64")) return 1;
    if (c->epilogue && strstr(why->msg, "so it would duplicate epi=off")) return 1;
    if (c->cdot && strcmp(p->model, "rgat") && strstr(why->msg, "so it would duplicate cdot=table")) return 1;
    return (c->softmax == CFG_SOFTMAX_SINGLE && !strcmp(p->model, "rgcn")) || !et_mapping_applies(c, &p->dims, &e);
}

static void compile_space(const char *model, const char *task)
{
    pl_problem p = {.model = model, .task = task, .dims = dims};
    space_kernels sk = {0};
    kc_walk w;
    rg_err err;
    /* every distinct kernel, from the points of a new schedule class (tests/kcover.h) */
    kc_space_kernels("default", &p, 64, inapplicable_ok, collect, &sk, &w);
    if (!strcmp(model, "rgcn")) assert_true(w.inapplicable + w.refused > 0);
    assert_true(sk.mma > 0);
    /* sm_90, the target, compiles the float32 kernels that bring new text, a fixed sample of the
     * others (collect), and one tensor-core kernel of each shape (they differ by schedule macros;
     * test_mma_sources_compile compiles every one of its schedules at two problem sizes); sm_80 the
     * float32 ones with a line new to it (portability is a property of the constructs used) */
    static const int archs[] = {90, 80};
    const kp_plan *plans[] = {&sk.sm90, &sk.sm80};
    /* Under `make asan` (the pairwise walk) NVRTC compiles nothing here: ASan looks for memory errors
     * of our code, which the walk runs; NVRTC's verdict on the text is `make test`'s, which compiles
     * every line and pair of lines the space's kernels have (the pairwise points' other kernels took
     * 80 s of a clean CI run for no code of ours). */
    if (kc_cover_pairwise()) {
        printf("%s %s: %d valid points, %d built (%d not for this model), %d left out unbuilt, %d distinct kernels: not "
               "compiled under the pairwise walk (make asan)\n", model, task, w.points, w.built, w.inapplicable,
               w.refused, sk.fp32 + sk.mma);
        kp_plan_free(&sk.sm90);
        kp_plan_free(&sk.sm80);
        return;
    }
    for (int a = 0; a < 2; a++) {
        kx_compiled c;
        double t0 = rg_now();
        if (kx_compile(plans[a], archs[a], 2, &c, &err))
            fail_msg("%s %s sm_%d: %s", model, task, archs[a], err.msg);
        printf("%s %s: %d valid points, %d built (%d not for this model), %d left out unbuilt (not for this model by "
               "their structure or schedule), %d distinct kernels (%d on tensor cores, %d float32 ones for sm_90): %d new "
               "to this run compiled for sm_%d in %.1f s\n", model, task, w.points, w.built, w.inapplicable, w.refused,
               sk.fp32 + sk.mma, sk.mma, sk.fp32_compiled, plans[a]->nkernels, archs[a],
               rg_now() - t0);
        kx_compiled_free(&c);
    }
    kp_plan_free(&sk.sm90);
    kp_plan_free(&sk.sm80);
}

static void test_rgcn_infer_space_compiles(void **state) { (void)state; compile_space("rgcn", "infer"); }
static void test_rgat_infer_space_compiles(void **state) { (void)state; compile_space("rgat", "infer"); }
static void test_hgt_infer_space_compiles(void **state) { (void)state; compile_space("hgt", "infer"); }
static void test_rgcn_train_space_compiles(void **state) { (void)state; compile_space("rgcn", "train"); }
static void test_rgat_train_space_compiles(void **state) { (void)state; compile_space("rgat", "train"); }
static void test_hgt_train_space_compiles(void **state) { (void)state; compile_space("hgt", "train"); }

/* mma=tf32 and bf16 at dims 64 heads 1 and dims 128 heads 4, for every model and task, with a
 * one-warp tile (16), an eight-warp one (64, two fragments a warp; another layout and
 * traversal) and blocks of 8 row tiles (gtiles; at dims 128 K takes two steps, so W is staged
 * for every tile): every GEMM kernel either runs on tensor cores or says why it keeps the float32
 * path, each model and task has tensor-core kernels, and NVRTC compiles every one of those for
 * sm_90 (the default-space tests compile a sample of the space's other schedules). */
static void test_mma_sources_compile(void **state)
{
    (void)state;
    static const char *const models[] = {"rgcn", "rgat", "hgt"}, *const tasks[] = {"infer", "train"};
    static const char *const precisions[] = {"tf32", "bf16"};
    static const char *const schedules[] = {"tile=16,coarsen=1",
                                            "tile=64,coarsen=2,lb=on,compact=bsearch,reorder=off,trav=node",
                                            "tile=32,coarsen=4,gtiles=8,store=bf16"};
    static const ir_dims dims[] = {{64, 64, 1}, {128, 128, 4}};
    kp_plan plan = {0};
    int distinct = 0;
    rg_err err;
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++) {
            int tensor = 0;
            for (int d = 0; d < 2; d++)
                for (int p = 0; p < 2; p++)
                    for (int c = 0; c < 3; c++) {
                        cg_config cfg;
                        cfg_default(&cfg);
                        char *kv = rg_xasprintf("mma=%s,%s", precisions[p], schedules[c]);
                        assert_int_equal(cfg_parse(&cfg, kv, &err), 0);
                        cg_variant v;
                        if (build_variant_dims(models[m], tasks[t], &dims[d], &cfg, &v, &err))
                            fail_msg("%s %s %s: %s", models[m], tasks[t], kv, err.msg);
                        for (int k = 0; k < v.plan.nkernels; k++) {
                            const kp_kernel *kk = &v.plan.kernels[k];
                            if (kk->category != KC_GEMM) continue;
                            int on = strstr(kk->source, "nvcuda::wmma::mma_sync") != NULL;
                            if (!on && !strstr(kk->source, "float32 path under mma"))
                                fail_msg("%s %s %s: %s neither uses tensor cores nor says why", models[m], tasks[t], kv,
                                         kk->name);
                            tensor += on;
                            if (on) distinct += queue90(&plan, kk);   /* the float32 ones: the space tests */
                        }
                        cg_variant_free(&v);
                        free(kv);
                    }
            if (!tensor) fail_msg("%s %s: no GEMM on tensor cores", models[m], tasks[t]);
        }
    kx_compiled c;
    double t0 = rg_now();
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("%s", err.msg);
    printf("mma: %d distinct GEMM kernels compiled for sm_90 in %.1f s (%d from the cache)\n", distinct, rg_now() - t0,
           c.cache_hits);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
}

/* The edge loops load an edge's source and type only where a statement of the kernel reads them:
 * RGCN's aggregation reads neither (its message is the compact row's), RGAT's the type (the relation's
 * attention weight) but not the source (its terms are compact rows'); with msg=trav the traversal
 * reads the source's features, and compact=bsearch finds the compact row from both. */
static int traversal_has(const char *model, const char *task, const char *config, const char *text)
{
    rg_err err;
    cg_config cfg;
    cg_variant v;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, config, &err), 0);
    if (build_variant(model, task, &cfg, &v, &err)) fail_msg("%s %s %s: %s", model, task, config, err.msg);
    int n = 0;
    for (int k = 0; k < v.plan.nkernels; k++)
        n += v.plan.kernels[k].category == KC_TRAVERSAL && strstr(v.plan.kernels[k].source, text) != NULL;
    cg_variant_free(&v);
    return n;
}

static void test_unread_ids_not_loaded(void **state)
{
    (void)state;
    assert_int_equal(traversal_has("rgcn", "infer", "lanes=8,vec=4,acc=reg", "sn_l = in_src[ql];"), 0);
    assert_int_equal(traversal_has("rgcn", "infer", "lanes=8,vec=4,acc=reg", "t_l = in_etype[ql];"), 0);
    assert_true(traversal_has("rgcn", "infer", "lanes=8,vec=4,acc=reg", "cr_l = in_compact[ql];") > 0);
    assert_int_equal(traversal_has("rgat", "infer", "softmax=single", "sn_l = in_src[ql];"), 0);
    assert_true(traversal_has("rgat", "infer", "softmax=single", "t_l = in_etype[ql];") > 0);
    assert_true(traversal_has("rgat", "infer", "msg=trav,compact=off", "sn_l = in_src[ql];") > 0);
    assert_true(traversal_has("rgcn", "infer", "compact=bsearch", "t_l = in_etype[ql];") > 0);
    assert_true(traversal_has("rgcn", "infer", "compact=bsearch", "sn_l = in_src[ql];") > 0);
}

/* gtiles: a tensor-core product's block walks G row tiles (the launch divides the tile count by
 * G and passes it), keeps the relation's W staged between them and overlays its results on X's
 * tile only; the outer products and the float32 forms keep one tile a block, and gtiles > 1
 * without mma is refused as a duplicate. */
static void test_gemm_row_tiles_per_block(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "mma=bf16,tile=64,coarsen=4,store=bf16,gtiles=4", &err), 0);
    assert_int_equal(cfg_validate(&cfg, &err), 0);
    assert_int_equal(build_variant("rgat", "train", &cfg, &v, &err), 0);
    int walking = 0, single = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        const kp_kernel *kk = &v.plan.kernels[k];
        if (kk->category != KC_GEMM) continue;
        if (strstr(kk->source, "#define GT 4")) {
            walking++;
            assert_int_equal(kk->rows_per_block, 4);
            assert_non_null(strstr(kk->source, "int num_tiles)"));
            assert_non_null(strstr(kk->source, "const bool stage_w = K > KT || t != tw;"));
            assert_non_null(strstr(kk->source, "if (stage_w) "));
            /* Ws first, the results over X's tile: 9216 + 64 x 68 floats */
            assert_non_null(strstr(kk->source, "smem[26624]"));
            assert_non_null(strstr(kk->source, "Cs)[TILE + 4] = reinterpret_cast<float (*)[TILE + 4]>(smem + 9216)"));
        } else {
            single++;
            assert_true(kk->rows_per_block <= 1);
            assert_null(strstr(kk->source, "num_tiles"));
        }
    }
    assert_true(walking >= 2);   /* the forward products and the backward data products */
    assert_true(single >= 1);    /* the weight-gradient outer products */
    cg_variant_free(&v);
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "mma=off,gtiles=2", &err), 0);
    assert_int_not_equal(cfg_validate(&cfg, &err), 0);
    assert_non_null(strstr(err.msg, "it would duplicate gtiles=1"));
}

/* gvec=on: the tensor-core GEMMs' float32 outputs leave their staged tile 4 floats a thread, the scattered
 * backward products and the dW tiles by vector atomics (atomic_add4), the plain and accumulated outputs by
 * float4 stores; off keeps one element a thread. Refused without mma, and where no GEMM has such an output. */
static void test_gemm_vector_epilogue(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    for (int on = 0; on <= 1; on++) {
        cfg_default(&cfg);
        assert_int_equal(cfg_parse(&cfg, on ? "mma=bf16,tile=64,coarsen=4,store=bf16,gvec=on"
                                            : "mma=bf16,tile=64,coarsen=4,store=bf16", &err), 0);
        assert_int_equal(cfg_validate(&cfg, &err), 0);
        assert_int_equal(build_variant("rgcn", "train", &cfg, &v, &err), 0);
        int scatter4 = 0, outer4 = 0, stores4 = 0;
        for (int k = 0; k < v.plan.nkernels; k++) {
            const kp_kernel *kk = &v.plan.kernels[k];
            if (kk->category != KC_GEMM) continue;
            scatter4 += strstr(kk->source, "atomic_add4(y, v);") != NULL;
            outer4 += strstr(kk->source, "atomic_add4(Wt + (size_t)kk * N + nn, v);") != NULL;
            stores4 += strstr(kk->source, "*(float4*)y = v;") != NULL || strstr(kk->source, "*(float4*)y = o_;") != NULL;
            if (on) {
                assert_null(strstr(kk->source, "atomicAdd(y, v);"));
                assert_null(strstr(kk->source, "atomicAdd(Wt + (size_t)kk * N + nn, v);"));
            }
        }
        /* d_feature at unique_src; d_W and d_W0; h = feature x W0 and d_feature += d_h x W0^T */
        assert_int_equal(scatter4, on ? 1 : 0);
        assert_int_equal(outer4, on ? 2 : 0);
        assert_int_equal(stores4, on ? 2 : 0);
        cg_variant_free(&v);
    }
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "mma=off,gvec=on", &err), 0);
    assert_int_not_equal(cfg_validate(&cfg, &err), 0);
    assert_non_null(strstr(err.msg, "it would duplicate gvec=off"));
    /* inference under store=bf16: every tensor-core output is bfloat16 */
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "mma=bf16,store=bf16,gvec=on", &err), 0);
    assert_int_equal(cfg_validate(&cfg, &err), 0);
    assert_int_not_equal(build_variant("rgat", "infer", &cfg, &v, &err), 0);
    assert_non_null(strstr(err.msg, "this plan has none (its outputs are bfloat16"));
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "mma=bf16,store=bf16,gemm_2.gvec=on", &err), 0);
    assert_int_equal(cfg_validate(&cfg, &err), 0);
    assert_int_not_equal(build_variant("rgcn", "train", &cfg, &v, &err), 0);
    assert_non_null(strstr(err.msg, "gemm_2.gvec=on: gemm_2 has no float32 tensor-core output"));
}

/* Properties of the emitted sources that schedules promise. */
static void test_schedule_shows_in_sources(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "compact=bsearch,reorder=on,tile=16,coarsen=4,lb=on,trav=edge,pagg=on", &err), 0);
    cg_variant v;
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), 0);
    int gemms = 0, bsearch = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        const char *src = v.plan.kernels[k].source;
        /* the schedule knob applies to the two templates, not to per-type weight products */
        if (v.plan.kernels[k].category != KC_OTHER) assert_non_null(strstr(src, "__launch_bounds__"));
        if (v.plan.kernels[k].category == KC_GEMM) {
            gemms++;
            assert_non_null(strstr(src, "#define TILE 16"));
            assert_non_null(strstr(src, "#define TY 4"));
        }
        if (strstr(src, "compact_find(unique_src")) bsearch++;
    }
    assert_true(gemms >= 1);
    assert_true(bsearch >= 1);   /* edges find the compact rows of hs by binary search */
    cg_variant_free(&v);
    assert_int_equal(cfg_parse(&cfg, "compact=direct,lb=off,trav=node", &err), 0);
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), 0);
    for (int k = 0; k < v.plan.nkernels; k++) {
        assert_null(strstr(v.plan.kernels[k].source, "__launch_bounds__"));
        assert_null(strstr(v.plan.kernels[k].source, "compact_find(unique_src"));
    }
    cg_variant_free(&v);
}

/* Traversal thread mappings beyond the default space's, and GEMM coarsening 8: every kernel
 * of every model and task compiles for sm_90. */
static const char *const mappings[] = {
    "lanes=4,tblock=128",
    "lanes=8,vec=2,tblock=512,lb=on",
    "lanes=16,vec=4,relabel=degree",
    "lanes=32,vec=2,compact=bsearch",
    "trav=node,lanes=8,vec=4,tblock=128",
    "trav=node,lanes=16,vec=2,compact=off,softmax=single",
    "pagg=off,lanes=4,vec=4,tblock=512",
    "pagg=off,lanes=8,vec=2,softmax=single",
    "tile=64,coarsen=8",
    "tile=16,coarsen=8,lanes=16,w=reg",
    "tblock=64,lanes=16,lb=on",
    "tblock=32,lb=on",
    "tblock=32,lanes=8,acc=reg",
    "tblock=1024,lb=on",
    "trav=node,tblock=1024,lanes=16",
    "trav=node,tblock=64,lanes=8,nchunk=8,softmax=single",
    NULL,
};

static void test_thread_mappings_compile(void **state)
{
    (void)state;
    static const char *const models[] = {"rgcn", "rgat", "hgt"}, *const tasks[] = {"infer", "train"};
    kp_plan plan = {0};
    int variants = 0, distinct = 0;
    rg_err err;
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++)
            for (int i = 0; mappings[i]; i++) {
                cg_config cfg;
                cfg_default(&cfg);
                assert_int_equal(cfg_parse(&cfg, mappings[i], &err), 0);
                if (cfg_validate(&cfg, &err)) fail_msg("%s: %s", mappings[i], err.msg);
                cg_variant v;
                int rc = build_variant(models[m], tasks[t], &cfg, &v, &err);
                if (rc == PL_INAPPLICABLE && cfg.softmax == CFG_SOFTMAX_SINGLE && m == 0) continue;
                if (rc) fail_msg("%s %s %s: %s", models[m], tasks[t], mappings[i], err.msg);
                variants++;
                for (int k = 0; k < v.plan.nkernels; k++) distinct += queue90(&plan, &v.plan.kernels[k]);
                cg_variant_free(&v);
            }
    kx_compiled c;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("thread mappings: %d variants, %d distinct kernels new to this run compiled for sm_90 (%d from the cache)\n",
           variants, distinct, c.cache_hits);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
}

/* acc=reg across the traversal forms and schedules (every model and task, edge- and node-centric,
 * both softmax forms, lanes 4, 16 and 32, vec 1, 2 and 4, store f32 and bf16): every accumulator
 * is placed, in registers or in shared memory with its reason, and NVRTC compiles for sm_90 every
 * traversal kernel the key changed. pagg=off is refused by the key's rule (tests/test_config.c). */
static const char *const acc_schedules[] = {
    "acc=reg",
    "acc=reg,trav=node,softmax=single,lanes=16,store=bf16",
    "acc=reg,lanes=16,vec=4,softmax=single,store=bf16",
    "acc=reg,trav=node,vec=2",
    "acc=reg,lanes=4,softmax=single",   /* 16 registers for a 64-wide row: the cap keeps one in shared memory */
    "acc=reg,trav=node,lanes=8,vec=8,nchunk=8,softmax=single",   /* split nodes: vector atomics or += by tile */
    "acc=reg32,lanes=8,vec=4,store=bf16",
    "acc=reg32,trav=node,softmax=single,lanes=8,store=bf16,scalars=lane,nchunk=256,epi=on",
    NULL,
};

/* acc=reg32: the float32 register accumulators of a kernel's source, each add into one checked to take
 * a float32 value (no float64 product converted per element); returns the adds, or -1 at the first
 * add of a float64 value into a float32 register, and counts the float64 registers kept in *f64. */
static int f32_register_adds(const char *src, int *f64)
{
    int adds = 0;
    for (const char *p = strstr(src, "double ra"); p; p = strstr(p + 1, "double ra")) (*f64)++;
    for (const char *p = strstr(src, "float ra"); p; p = strstr(p + 1, "float ra")) {
        int v = atoi(p + strlen("float ra"));
        char add[48];
        snprintf(add, sizeof add, "            ra%d[k_] += r;", v);
        for (const char *a = strstr(src, add); a; a = strstr(a + 1, add)) {
            const char *line = a - 1;   /* the end of the previous line */
            while (line > src && line[-1] != '\n') line--;
            if (strncmp(line, "            const float r = ", strlen("            const float r = "))) return -1;
            adds++;
        }
    }
    return adds;
}

static void test_acc_reg_compiles(void **state)
{
    (void)state;
    static const char *const models[] = {"rgcn", "rgat", "hgt"}, *const tasks[] = {"infer", "train"};
    kp_plan plan = {0};
    int variants = 0, distinct = 0, in_regs = 0, capped = 0, vflush = 0, vflush_cond = 0, scalar_flush = 0;
    int f32_adds = 0, f64_kept = 0;
    rg_err err;
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++)
            for (int i = 0; acc_schedules[i]; i++) {
                cg_config cfg;
                cfg_default(&cfg);
                assert_int_equal(cfg_parse(&cfg, acc_schedules[i], &err), 0);
                if (cfg_validate(&cfg, &err)) fail_msg("%s: %s", acc_schedules[i], err.msg);
                cg_variant v;
                int rc = build_variant(models[m], tasks[t], &cfg, &v, &err);
                if (rc == PL_INAPPLICABLE && cfg.softmax == CFG_SOFTMAX_SINGLE && m == 0) continue;
                if (rc) fail_msg("%s %s %s: %s", models[m], tasks[t], acc_schedules[i], err.msg);
                variants++;
                for (int k = 0; k < v.plan.nkernels; k++) {
                    const kp_kernel *kk = &v.plan.kernels[k];
                    if (!strstr(kk->source, "acc=reg: ")) continue;   /* no accumulator: the acc=smem text */
                    in_regs += strstr(kk->source, "register(s) a lane") != NULL;
                    if (cfg.acc == CFG_ACC_REG32) {
                        int adds = f32_register_adds(kk->source, &f64_kept);
                        if (adds < 0) fail_msg("%s %s %s %s: a float64 value added into a float32 register",
                                               models[m], tasks[t], acc_schedules[i], kk->name);
                        f32_adds += adds;
                    } else if (strstr(kk->source, "float ra")) {
                        fail_msg("%s %s %s %s: float32 registers under acc=reg", models[m], tasks[t], acc_schedules[i],
                                 kk->name);
                    }
                    capped += strstr(kk->source, "more than 16 doubles") != NULL;
                    /* vec > 1: a lane's consecutive sums leave in one vector access, never float by float */
                    if (cfg.vec > 1 && strstr(kk->source, " = 0.0;\n") && strstr(kk->source, "av_[vu] = (float)ra")) {
                        vflush++;
                        /* split nodes: vector atomics, or a vector += where the node is the warp's alone */
                        vflush_cond += strstr(kk->source, ") {\n#if __CUDA_ARCH__ >= 900\n            atomicAdd((float") &&
                                       strstr(kk->source, "            } else\n            { float");
                        scalar_flush += strstr(kk->source, "* 64 + i], ra") != NULL;   /* 1-wide sums stay scalar */
                    }
                    distinct += queue90(&plan, kk);
                }
                cg_variant_free(&v);
            }
    assert_true(in_regs > 0 && capped > 0);
    assert_true(vflush > 0 && vflush_cond > 0);
    assert_int_equal(scalar_flush, 0);
    /* reg32: the features' sums in float32, the softmax sums (float64 variables) kept in float64 */
    assert_true(f32_adds > 0 && f64_kept > 0);
    kx_compiled c;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("acc=reg: %d variants, %d distinct traversal kernels new to this run compiled for sm_90 (%d from the cache); "
           "%d flush vector accesses (%d of split nodes); reg32: %d float32 adds, %d float64 registers kept\n",
           variants, distinct, c.cache_hits, vflush, vflush_cond, f32_adds, f64_kept);
    kx_compiled_free(&c);
    /* the vector atomics are sm_90's: elsewhere the flush adds float by float */
    if (kx_compile(&plan, 80, 2, &c, &err)) fail_msg("sm_80: %s", err.msg);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
}

/* farith=f32: the traversals' group dot products sum in float32 (group_sumf/warp_sumf), no dot
 * product of float32 rows converts its terms to float64, and the weight-gradient sums keep float64
 * accumulators; farith=f64 writes what the default writes. Every kernel compiles for sm_90 and sm_80. */
static void test_float32_feature_arithmetic(void **state)
{
    (void)state;
    static const char *const mappings[] = {
        "compact=direct,trav=edge,pagg=on,softmax=single,store=bf16,crsum=run,recompute=on,lanes=16,scalars=replicated",
        "trav=node,softmax=single,lanes=32",
        "trav=edge,pagg=on,lanes=8,vec=4,acc=reg32,softmax=single,store=bf16",
        NULL,
    };
    static const char *const models[] = {"rgcn", "rgat", "hgt"};
    kp_plan plan = {0};
    int f32_dots = 0, f32_values = 0, kernels = 0;
    rg_err err;
    for (int m = 0; m < 3; m++)
        for (int i = 0; mappings[i]; i++) {
            char with[512], same[512];
            snprintf(with, sizeof with, "%s,farith=f32", mappings[i]);
            snprintf(same, sizeof same, "%s,farith=f64", mappings[i]);
            cg_config cf, cd, cs;
            cfg_default(&cf), cfg_default(&cd), cfg_default(&cs);
            assert_int_equal(cfg_parse(&cf, with, &err), 0);
            assert_int_equal(cfg_parse(&cd, mappings[i], &err), 0);
            assert_int_equal(cfg_parse(&cs, same, &err), 0);
            cg_variant vf, vd, vs;
            int rc = build_variant(models[m], "train", &cd, &vd, &err);
            if (rc == PL_INAPPLICABLE && cd.softmax == CFG_SOFTMAX_SINGLE && m == 0) continue;   /* RGCN: no softmax */
            if (rc) fail_msg("%s %s: %s", models[m], mappings[i], err.msg);
            if (build_variant(models[m], "train", &cf, &vf, &err)) fail_msg("%s %s: %s", models[m], with, err.msg);
            if (build_variant(models[m], "train", &cs, &vs, &err)) fail_msg("%s %s: %s", models[m], same, err.msg);
            assert_int_equal(vf.plan.nkernels, vd.plan.nkernels);
            for (int k = 0; k < vd.plan.nkernels; k++) {
                const char *f = vf.plan.kernels[k].source, *d = vd.plan.kernels[k].source;
                assert_string_equal(vs.plan.kernels[k].source, d);
                if (vd.plan.kernels[k].category != KC_TRAVERSAL) continue;
                kernels++;
                f32_dots += strstr(f, "group_sumf(p") != NULL || strstr(f, "warp_sumf(p)") != NULL;
                f32_values += strstr(f, "const float r = (float)(") != NULL;
                /* the float64 group dot's text is gone: every such dot here has float32 rows */
                if (strstr(f, "double p = 0.0;\n            for (int dd"))
                    fail_msg("%s %s %s: a float64 group dot product under farith=f32", models[m], with,
                             vf.plan.kernels[k].name);
                /* vector weights' gradient sums stay float64, their products formed in float32 */
                if (strstr(d, "+= (double)(") && strstr(d, "scr[") && !strstr(f, "(double)((float)("))
                    fail_msg("%s %s %s: a weight-gradient product still float64", models[m], with, vf.plan.kernels[k].name);
                queue90(&plan, &vf.plan.kernels[k]);
            }
            cg_variant_free(&vf), cg_variant_free(&vd), cg_variant_free(&vs);
        }
    assert_true(kernels > 0 && f32_dots > 0 && f32_values > 0);
    kx_compiled c;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("farith=f32: %d traversal kernels, %d with float32 group dots, %d with float32 values\n", kernels, f32_dots,
           f32_values);
    kx_compiled_free(&c);
    if (kx_compile(&plan, 80, 2, &c, &err)) fail_msg("sm_80: %s", err.msg);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
}

/* The traversal kernels of one mapping: how many, and how many contain each of want[]. */
static void count_traversals(const char *model, const char *task, const char *config, const char *const *want,
                             int *found, int *travs, int *block_x)
{
    rg_err err;
    cg_config cfg;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, config, &err), 0);
    cg_variant v;
    if (build_variant(model, task, &cfg, &v, &err)) fail_msg("%s: %s", config, err.msg);
    *travs = 0;
    for (int w = 0; want[w]; w++) found[w] = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        const kp_kernel *kk = &v.plan.kernels[k];
        if (kk->category != KC_TRAVERSAL) continue;
        ++*travs;
        *block_x = kk->block_x;
        assert_int_equal(kk->block_x, cfg.tblock);
        for (int w = 0; want[w]; w++) found[w] += strstr(kk->source, want[w]) != NULL;
    }
    cg_variant_free(&v);
}

/* Each mapping value is a code path of its own in the sources. */
static void test_thread_mapping_shows_in_sources(void **state)
{
    (void)state;
    int found[8], travs, block_x;
    /* 8 lanes per row: masked barriers and shuffles of a row group, never the whole warp's */
    const char *const groups[] = {"row group of 8 lanes", "__shfl_sync(gmask, e_l, j, 8)", "__syncwarp()", "__launch_bounds__(512, 4)",
                                  NULL};
    count_traversals("rgat", "infer", "lanes=8,tblock=512,lb=on", groups, found, &travs, &block_x);
    assert_true(travs >= 2);
    assert_int_equal(found[0], travs);
    assert_true(found[1] >= 1);
    assert_int_equal(found[2], 0);
    assert_int_equal(found[3], travs);
    assert_int_equal(block_x, 512);
    /* attention scores summed over a row group */
    const char *const sums[] = {"group_sum(p, gmask, 16)", "warp_sum(", NULL};
    count_traversals("rgat", "infer", "lanes=16", sums, found, &travs, &block_x);
    assert_true(found[0] >= 1);
    assert_int_equal(found[1], 0);
    /* gathered message rows read as float4 / float2; the default reads them one float at a time */
    const char *const vec4[] = {"const float4 q = *(const float4*)&v", "float2", NULL};
    count_traversals("rgcn", "infer", "lanes=16,vec=4", vec4, found, &travs, &block_x);
    assert_true(found[0] >= 1);
    assert_int_equal(found[1], 0);
    const char *const vec2[] = {"const float2 q = *(const float2*)&v", "float4", NULL};
    count_traversals("hgt", "train", "vec=2,tblock=128", vec2, found, &travs, &block_x);
    assert_true(found[0] >= 1);
    assert_int_equal(found[1], 0);
    assert_int_equal(block_x, 128);
    /* the ends of the tblock axis: an SM holds 2048 threads, so lb asks for 2 blocks of 1024, 4 of 64 */
    const char *const big[] = {"__launch_bounds__(1024, 2)", NULL};
    count_traversals("rgat", "train", "tblock=1024,lb=on", big, found, &travs, &block_x);
    assert_int_equal(found[0], travs);
    assert_int_equal(block_x, 1024);
    const char *const small[] = {"__launch_bounds__(64, 4)", NULL};
    count_traversals("hgt", "infer", "tblock=64,lanes=8,lb=on", small, found, &travs, &block_x);
    assert_int_equal(found[0], travs);
    assert_int_equal(block_x, 64);
    const char *const none[] = {"const float4 q", "const float2 q", "gmask", NULL};
    count_traversals("hgt", "train", "compact=direct", none, found, &travs, &block_x);
    assert_int_equal(found[0] + found[1] + found[2], 0);
    assert_int_equal(block_x, 256);
}

/* acc=reg: RGCN inference's aggregation keeps its partial sums in registers, with no shared scratch
 * access and no barrier at all (one statement adds into registers, the flush is the lane's own);
 * acc=smem has both. Where a later phase reads a sum back (node-centric two-pass softmax), that
 * sum stays in shared memory and the kernel says why, while the aggregation beside it moves. */
static void test_acc_reg_in_sources(void **state)
{
    (void)state;
    int found[8], travs, block_x;
    const char *const marks[] = {"scr[", "__syncwarp", "double ra", "acc=reg: h in ", NULL};
    static const char *const lanes[] = {"", ",lanes=16", ",vec=4,lanes=16"};
    for (int l = 0; l < 3; l++) {
        char kv[64];
        snprintf(kv, sizeof kv, "acc=reg%s", lanes[l]);
        count_traversals("rgcn", "infer", kv, marks, found, &travs, &block_x);
        assert_int_equal(travs, 1);
        assert_int_equal(found[0] + found[1], 0);
        assert_int_equal(found[2] + found[3], 2);
        count_traversals("rgcn", "infer", lanes[l][0] ? lanes[l] + 1 : "", marks, found, &travs, &block_x);   /* acc=smem */
        assert_int_equal(found[0] + found[1], 2);
        assert_int_equal(found[2] + found[3], 0);
    }
    const char *const node[] = {"acc=reg: att_sum stays in shared memory: a statement reads it back",
                                "acc=reg: h in 2 register(s) a lane", NULL};
    count_traversals("rgat", "infer", "acc=reg,trav=node", node, found, &travs, &block_x);
    assert_true(found[0] >= 1 && found[1] >= 1);
}

/* Weight gradients summed over rows (RGAT's attention vectors in training): the unique-row kernel
 * walks a run of wrun rows and the dst-sorted edge kernel runs of wrun positions with edge-type slots,
 * as many as fit 32 KB of a block (8 at dims 64, 2 at 256: one slot is 256 doubles a row group); the
 * launch covers wrun rows per row group. Inference has no such sums: wrun other than 32 is refused. */
static void test_weight_gradient_runs(void **state)
{
    (void)state;
    static const struct { const char *kv; int run, slots, dims; } cases[] = {
        {"softmax=single", 32, 8, 64}, {"softmax=single,wrun=128", 128, 8, 64}, {"wrun=512", 512, 2, 256}};
    for (int c = 0; c < 3; c++) {
        rg_err err;
        cg_config cfg;
        cfg_default(&cfg);
        assert_int_equal(cfg_parse(&cfg, cases[c].kv, &err), 0);
        const ir_dims d = {cases[c].dims, cases[c].dims, 1};
        cg_variant v;
        if (build_variant_dims("rgat", "train", &d, &cfg, &v, &err)) fail_msg("%s: %s", cases[c].kv, err.msg);
        char unique_run[64], slots[32];
        snprintf(unique_run, sizeof unique_run, "const int u0 = (blockIdx.x * 8 + warp) * %d;", cases[c].run);
        snprintf(slots, sizeof slots, "wtag[%d];", cases[c].slots);
        int nunique = 0, nslots = 0;
        for (int k = 0; k < v.plan.nkernels; k++) {
            const kp_kernel *kk = &v.plan.kernels[k];
            int u = strstr(kk->source, unique_run) != NULL, sl = strstr(kk->source, slots) != NULL;
            if (u || sl) assert_int_equal(kk->rows_per_block, 8 * cases[c].run);
            nunique += u;
            nslots += sl;
        }
        if (nunique != 1 || nslots != 1)
            fail_msg("%s: %d unique-row runs, %d slotted edge kernels (want 1 and 1)", cases[c].kv, nunique, nslots);
        cg_variant_free(&v);
    }
    int found[2], travs, block_x;
    /* vectorized rows scatter their gradients with one float4 / float2 atomic a lane */
    const char *const vatom[] = {"atomicAdd((float4*)&", "atomicAdd((float2*)&", NULL};
    count_traversals("rgat", "train", "lanes=16,vec=4", vatom, found, &travs, &block_x);
    assert_true(found[0] >= 1);
    assert_int_equal(found[1], 0);
    count_traversals("hgt", "train", "lanes=16,vec=2", vatom, found, &travs, &block_x);
    assert_true(found[1] >= 1);
    assert_int_equal(found[0], 0);
    count_traversals("hgt", "train", "lanes=16", vatom, found, &travs, &block_x);
    assert_int_equal(found[0] + found[1], 0);
    const char *const none[] = {"wtag[", "const int u0", NULL};
    count_traversals("rgat", "infer", "softmax=single", none, found, &travs, &block_x);
    assert_int_equal(found[0] + found[1], 0);
    rg_err err;
    cg_config cfg;
    cg_variant v;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "wrun=128", &err), 0);
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), PL_INAPPLICABLE);
    assert_non_null(strstr(err.msg, "wrun=128 changes only the traversals that sum weight gradients"));
}

/* Which kernels of a plan walk compact rows' sums (the comment's words) and which are a split's
 * second part (named *_cr, part 1). */
static void count_compact_walks(const cg_variant *v, int *walks, int *second, int *travs)
{
    *walks = *second = *travs = 0;
    for (int k = 0; k < v->plan.nkernels; k++) {
        const kp_kernel *kk = &v->plan.kernels[k];
        if (kk->category != KC_TRAVERSAL) continue;
        ++*travs;
        int walk = strstr(kk->source, "in (etype, src) order, sums per compact row") != NULL;
        size_t n = strlen(kk->name);
        int cr = n > 3 && !strcmp(kk->name + n - 3, "_cr");
        *walks += walk;
        *second += cr;
        if (cr) assert_true(walk && kk->part == 1);
        if (walk) assert_non_null(strstr(kk->source, "cur = cr;"));
    }
}

/* crsum: the traversals that sum into compact rows walk the (etype, src) order with per-row sums
 * (run), or split off a second kernel that does (split), whose statements are only what its sums
 * need; every such schedule compiles, under each form and softmax; and where there are no compact
 * sums (inference, compact=off) the key is refused with its reason. */
static void test_compact_row_sums(void **state)
{
    (void)state;
    static const char *const models[] = {"rgcn", "rgat", "hgt"};
    static const char *const forms[] = {"", "trav=node,", "pagg=off,", "softmax=single,", "lanes=16,vec=4,acc=reg,",
                                        "wrun=128,"};
    kp_plan plan = {0};
    int variants = 0;
    rg_err err;
    for (int m = 0; m < 3; m++) {
        int base_travs = 0;
        for (int f = 0; f < 6; f++)
            for (int c = 0; c < 3; c++) {
                char kv[128];
                snprintf(kv, sizeof kv, "%scrsum=%s", forms[f], c == 0 ? "atomic" : c == 1 ? "run" : "split");
                cg_config cfg;
                cfg_default(&cfg);
                assert_int_equal(cfg_parse(&cfg, kv, &err), 0);
                cg_variant v;
                int rc = build_variant(models[m], "train", &cfg, &v, &err);
                if (rc == PL_INAPPLICABLE && m == 0 && cfg.softmax == CFG_SOFTMAX_SINGLE) continue;
                /* RGCN's backward traversal has nothing besides its compact sums: split would be run */
                if (rc == PL_INAPPLICABLE && m == 0 && c == 2 && strstr(err.msg, "it would duplicate crsum=run")) continue;
                if (rc) fail_msg("%s train %s: %s", models[m], kv, err.msg);
                variants++;
                int walks, second, travs;
                count_compact_walks(&v, &walks, &second, &travs);
                if (f == 0 && c == 0) base_travs = travs;
                if (c == 0) assert_int_equal(walks + second, 0);
                if (c == 1) assert_true(walks >= 1 && second == 0);
                if (c == 2) assert_true(second >= 1);
                /* run keeps the kernel count of atomic; split adds one kernel per compact walk */
                if (f == 0 && c == 1) assert_int_equal(travs, base_travs);
                if (f == 0 && c == 2) assert_int_equal(travs, base_travs + second);
                for (int k = 0; k < v.plan.nkernels; k++)
                    if (v.plan.kernels[k].category == KC_TRAVERSAL) queue90(&plan, &v.plan.kernels[k]);
                cg_variant_free(&v);
            }
    }
    kx_compiled c;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("crsum: %d variants, %d traversal kernels new to this run compiled for sm_90\n", variants, plan.nkernels);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
    assert_refused("rgat", "infer", "crsum=run", PL_INAPPLICABLE,
                   "crsum=run changes only the traversals that sum into compact (src, etype) rows, and inference has none");
    assert_refused("hgt", "train", "compact=off,crsum=split", PL_INAPPLICABLE, "and compact=off has none");
}

/* The lowered instance of the statements lw_defers_dst_sum picks under crsum=defer, and the first walk
 * of compact rows' sums. */
static int deferred_instance(const ir_program *ir, const lw_program *lp, const cg_config *cfg, int *walk)
{
    int deferred = -1;
    *walk = -1;
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind != LW_TRAV || !in->backward) continue;
        for (int k = 0; k < in->u.trav.nstmts; k++)
            assert_int_equal(lw_defers_dst_sum(ir, in->u.trav.stmts[k].stmt), in->u.trav.deferred);
        if (in->u.trav.deferred) {
            assert_int_equal(deferred, -1);
            deferred = i;
        }
        if (*walk < 0 && et_compact_walk(ir, &in->u.trav, cfg)) *walk = i;
    }
    return deferred;
}

/* crsum=defer: the backward sums over destinations (RGAT's d_feature, HGT's d_q) leave the walk of the
 * compact rows for an instance of their own after it, which runs in a destination order without
 * atomics per edge; the per-edge values it reads are materialized; every form compiles; RGCN (no such
 * sums) and inference are refused. */
static void test_deferred_dst_sums(void **state)
{
    (void)state;
    static const char *const models[] = {"rgat", "hgt"};
    static const char *const forms[] = {"", "trav=node,", "pagg=off,", "softmax=single,recompute=on,",
                                        "softmax=single,lanes=16,acc=reg32,scalars=replicated,", "store=bf16,vec=4,lanes=16,"};
    kp_plan plan = {0};
    rg_err err;
    int variants = 0;
    for (int m = 0; m < 2; m++)
        for (int f = 0; f < 6; f++) {
            char kv[160];
            snprintf(kv, sizeof kv, "%scrsum=defer", forms[f]);
            cg_config cfg;
            cfg_default(&cfg);
            assert_int_equal(cfg_parse(&cfg, kv, &err), 0);
            pl_problem p = {.model = models[m], .task = "train", .dims = dims};
            ir_program *ir;
            lw_program *lp;
            if (pl_build(&p, &cfg, NULL, NULL, &ir, &lp, &err)) fail_msg("%s %s: %s", models[m], kv, err.msg);
            int walk, d = deferred_instance(ir, lp, &cfg, &walk);
            assert_true(d >= 0 && walk >= 0 && walk < d);
            const lw_trav *tr = &lp->inst[d].u.trav;
            for (int k = 0; k < tr->nstmts; k++) {   /* what the deferred sums read per edge is in memory */
                const ir_stmt *s = &ir->stmts[tr->stmts[k].stmt];
                for (int q = 0; q < s->nin; q++)
                    if (s->in[q].var >= 0 && ir->vars[s->in[q].var].kind == IR_VAR_EDGE)
                        assert_true(lp->materialized[s->in[q].var]);
            }
            cg_variant v;
            if (cg_build(ir, lp, &cfg, &v, &err)) fail_msg("%s %s: %s", models[m], kv, err.msg);
            for (int k = 0; k < v.plan.nkernels; k++) {
                const kp_kernel *kk = &v.plan.kernels[k];
                if (!strcmp(kk->name, lp->inst[walk].name))   /* the walk no longer adds rows at destinations */
                    assert_null(strstr(kk->source, "[(size_t)(dn) * 64 + (d)], r)"));
                if (!strcmp(kk->name, lp->inst[d].name)) assert_null(strstr(kk->source, "(etype, src) order"));
                if (kk->category == KC_TRAVERSAL) queue90(&plan, kk);
            }
            variants++;
            cg_variant_free(&v);
            lw_free(lp);
            ir_free(ir);
        }
    kx_compiled c;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("crsum=defer: %d variants, %d traversal kernels new to this run compiled for sm_90\n", variants, plan.nkernels);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
    assert_refused("rgcn", "train", "crsum=defer", PL_INAPPLICABLE, "this problem has no such sums, so it would duplicate crsum=run");
    assert_refused("rgat", "infer", "crsum=defer", PL_INAPPLICABLE, "inference has none");
    assert_refused("hgt", "train", "compact=off,crsum=defer", PL_INAPPLICABLE, "and compact=off has none");
}

/* pfetch=on: a kernel reading a per-edge scalar it does not write loads it with the edge ids, one lane
 * an edge, and reads the broadcast value; the kernel that writes it does not; plans reading none are
 * refused; the kernels compile. */
static void test_prefetched_scalar_operands(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "crsum=defer,softmax=single,recompute=on,lanes=8,pfetch=on", &err), 0);
    if (build_variant("rgat", "train", &cfg, &v, &err)) fail_msg("%s", err.msg);
    int loads = 0;
    kp_plan plan = {0};
    for (int k = 0; k < v.plan.nkernels; k++) {
        const kp_kernel *kk = &v.plan.kernels[k];
        const char *at = strstr(kk->source, "_l = v");
        for (; at; at = strstr(at + 1, "_l = v")) {
            /* "pfN_l = vN[(size_t)(e_l)]" and the value read as pfN, never vN[...] of the edge */
            const char *pf = at;
            while (pf > kk->source && pf[-1] != ' ') pf--;
            if (strncmp(pf, "pf", 2)) continue;
            int var = atoi(pf + 2);
            char direct[48], bcast[48];
            snprintf(direct, sizeof direct, "v%d[(size_t)(e) * 1", var);
            snprintf(bcast, sizeof bcast, "const double pf%d = __shfl_sync", var);
            assert_null(strstr(kk->source, direct));
            assert_non_null(strstr(kk->source, bcast));
            char written[48];
            snprintf(written, sizeof written, "v%d[(size_t)(e) * 1 + 0] +=", var);
            assert_null(strstr(kk->source, written));
            loads++;
        }
        if (kk->category == KC_TRAVERSAL) queue90(&plan, kk);
    }
    assert_true(loads >= 1);
    cg_variant_free(&v);
    /* scalars=replicated runs the lanes' statements for the group's current edge: they read the
     * broadcast value, never the lane's own (pfN_l only where it is declared, loaded and broadcast) */
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "crsum=defer,pfetch=on,lanes=8,softmax=single,recompute=on,scalars=replicated", &err), 0);
    if (build_variant("rgat", "train", &cfg, &v, &err)) fail_msg("%s", err.msg);
    int replicated = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        const char *src = v.plan.kernels[k].source;
        if (!strstr(src, "scalars=replicated") || !strstr(src, "double pf")) continue;
        int uses = 0, decls = 0;
        for (const char *at = strstr(src, "pf"); at; at = strstr(at + 2, "pf")) {
            const char *u = at + 2;
            while (*u >= '0' && *u <= '9') u++;
            uses += u > at + 2 && !strncmp(u, "_l", 2);
        }
        for (const char *at = strstr(src, "double pf"); at; at = strstr(at + 9, "double pf")) {
            const char *u = at + 9;
            while (*u >= '0' && *u <= '9') u++;
            decls += !strncmp(u, "_l = 0.0;", 9);
        }
        assert_true(decls >= 1);
        assert_int_equal(uses, 3 * decls);
        replicated++;
    }
    assert_true(replicated >= 1);
    cg_variant_free(&v);
    static const char *const more[][3] = {{"hgt", "train", "crsum=defer,pfetch=on,trav=node"},
                                          {"rgcn", "infer", "pagg=off,pfetch=on"},
                                          {"rgat", "infer", "pfetch=on,scalars=replicated,softmax=single"},
                                          {"rgat", "infer", "pfetch=on,softmax=twopass"}};
    int sums_loaded = 0;
    for (int i = 0; i < 4; i++) {
        cfg_default(&cfg);
        assert_int_equal(cfg_parse(&cfg, more[i][2], &err), 0);
        if (build_variant(more[i][0], more[i][1], &cfg, &v, &err)) fail_msg("%s: %s", more[i][2], err.msg);
        for (int k = 0; k < v.plan.nkernels; k++) {
            if (v.plan.kernels[k].category != KC_TRAVERSAL) continue;
            queue90(&plan, &v.plan.kernels[k]);
            /* twopass: the second pass loads the softmax sums the first pass's kernel finished */
            sums_loaded += i == 3 && strstr(v.plan.kernels[k].source, "[(size_t)(dn_l)];") != NULL;
        }
        cg_variant_free(&v);
    }
    assert_int_equal(sums_loaded, 1);
    compile90_and_free(&plan);
    /* under scalars=lane the lanes' own statements load what only they read lane-parallel already */
    assert_refused("rgat", "infer", "pfetch=on,scalars=lane,softmax=single,trav=node", PL_INAPPLICABLE,
                   "it would duplicate pfetch=off");
    /* RGCN's dst-sorted aggregation reads its per-edge norm in that order already */
    assert_refused("rgcn", "infer", "pfetch=on", PL_INAPPLICABLE, "it would duplicate pfetch=off");
    assert_refused("rgat", "train", "crsum=defer,trav_3.pfetch=on", PL_INAPPLICABLE,
                   "trav_3.pfetch=on: trav_3 reads no per-edge scalar operand");
}

/* The walk's store of a per-edge gradient that no other statement writes (RGAT's d_attt, HGT's d__t1):
 * a plain store, and the weight gradient after it reads the value from a register, broadcast from
 * the lane that stored it, not from memory; a row with two writers (compact=off's d_hs) keeps +=.
 * pfetch=on also loads a destination's softmax-sum gradient with the edge's ids. */
static void test_single_stores(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    kp_plan plan = {0};
    static const char *const cases[][3] = {{"rgat", "train", "crsum=defer,softmax=single,recompute=on,pfetch=on,lanes=16"},
                                           {"hgt", "train", "crsum=defer,softmax=single,recompute=on,lanes=32"},
                                           {"rgat", "train", "compact=off,softmax=single,recompute=on,pfetch=on,scalars=replicated"}};
    int forwarded = 0, dst_loads = 0;
    for (int c = 0; c < 3; c++) {
        cfg_default(&cfg);
        assert_int_equal(cfg_parse(&cfg, cases[c][2], &err), 0);
        if (build_variant(cases[c][0], cases[c][1], &cfg, &v, &err)) fail_msg("%s: %s", cases[c][2], err.msg);
        for (int k = 0; k < v.plan.nkernels; k++) {
            const kp_kernel *kk = &v.plan.kernels[k];
            for (const char *at = strstr(kk->source, " fw"); at; at = strstr(at + 1, " fw")) {
                int var = atoi(at + 3);
                char decl[48], store[64], bcast[48], plus[48], reread[48];
                snprintf(decl, sizeof decl, "double fw%d = 0;", var);
                if (strncmp(at - 6, "double", 6)) continue;
                snprintf(store, sizeof store, "v%d[(size_t)(e) * 1 + 0] = fw%d;", var, var);
                snprintf(bcast, sizeof bcast, "fw%d = __shfl_sync(", var);
                snprintf(plus, sizeof plus, "v%d[(size_t)(e) * 1 + 0] +=", var);
                snprintf(reread, sizeof reread, "(v%d[(size_t)(e) * 1 + 0])", var);
                assert_non_null(strstr(kk->source, decl));
                assert_non_null(strstr(kk->source, store));
                assert_non_null(strstr(kk->source, bcast));
                assert_null(strstr(kk->source, plus));
                assert_null(strstr(kk->source, reread));
                forwarded++;
            }
            for (const char *at = strstr(kk->source, "_l = v"); at; at = strstr(at + 1, "_l = v")) {
                int var = atoi(at + 6);
                char direct[48];
                if (!strstr(at, "[(size_t)(dn_l)]") || strstr(at, "[(size_t)(dn_l)]") > strchr(at, '\n')) continue;
                snprintf(direct, sizeof direct, "v%d[(size_t)(dn) * 1 + 0]", var);
                assert_null(strstr(kk->source, direct));
                dst_loads++;
            }
            if (c == 2 && strstr(kk->source, "v23[(size_t)(e) * 64 + (d)]")) {
                assert_non_null(strstr(kk->source, "v23[(size_t)(e) * 64 + (d)] += r;"));   /* d_hs: two writers */
                assert_null(strstr(kk->source, "v23[(size_t)(e) * 64 + (d)] = r;"));
            }
            if (kk->category == KC_TRAVERSAL) queue90(&plan, kk);
        }
        cg_variant_free(&v);
    }
    assert_int_equal(forwarded, 2);   /* the two walks of crsum=defer */
    assert_true(dst_loads >= 2);
    compile90_and_free(&plan);
}

/* Whether the plan zero-fills variable v before the run. */
static int zero_filled(const kp_plan *plan, int v)
{
    for (int i = 0; i < plan->nzero; i++)
        if (plan->zero_vars[i] == v) return 1;
    return 0;
}

/* The one kernel of the plan that writes v whole (kp_kernel.covers), or NULL; two are a failure. */
static const kp_kernel *covering_kernel(const kp_plan *plan, int v)
{
    const kp_kernel *found = NULL;
    for (int k = 0; k < plan->nkernels; k++)
        for (int j = 0; j < plan->kernels[k].ncovers; j++)
            if (plan->kernels[k].covers[j] == v) {
                assert_null(found);
                found = &plan->kernels[k];
            }
    return found;
}

/* A traversal kernel that writes v whole stores each element: no line of it adds into v's buffer. */
static void assert_stores_only(const kp_kernel *k, int v)
{
    char name[16];
    snprintf(name, sizeof name, "v%d[", v);
    int stores = 0;
    for (const char *at = strstr(k->source, name); at; at = strstr(at + 1, name)) {
        const char *bol = at, *eol = strchr(at, '\n');
        while (bol > k->source && bol[-1] != '\n') bol--;
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(eol ? eol - bol : (long)strlen(bol)), bol);
        if (strstr(line, "atomicAdd") || strstr(line, "] +=")) fail_msg("%s adds into v%d: %s", k->name, v, line);
        stores += strstr(line, "] = ") != NULL;
    }
    assert_true(stores > 0);
}

/* The zero-fills before a run are only those a kernel reads back: a zero-initialised variable that
 * one kernel writes whole (every element, once, with =) before anything reads it has none (d_h,
 * d_h_un, d_loss, d_w_t of RGAT training), and its kernel stores instead of adding to the zeros;
 * the sums with atomics (h_un, d_feature), the loss, and whatever two statements write keep theirs. */
static void test_zero_fills_only_where_read_back(void **state)
{
    (void)state;
    static const char *const cases[][3] = {{"rgat", "train", ""},
                                           {"hgt", "train", ""},
                                           {"rgcn", "train", ""},
                                           {"rgat", "train", "trav=node,softmax=single,recompute=on,lanes=16"},
                                           {"hgt", "train", "compact=off,softmax=single,scalars=replicated"},
                                           {"rgat", "infer", "trav=node,softmax=single,epi=on,nchunk=64"}};
    int dropped = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rg_err err;
        cg_config cfg;
        cfg_default(&cfg);
        if (cfg_parse(&cfg, cases[c][2], &err)) fail_msg("%s: %s", cases[c][2], err.msg);
        pl_problem p = {.model = cases[c][0], .task = cases[c][1], .dims = dims};
        ir_program *ir;
        lw_program *lp;
        cg_variant v;
        if (pl_build(&p, &cfg, NULL, NULL, &ir, &lp, &err) || cg_build(ir, lp, &cfg, &v, &err))
            fail_msg("%s %s %s: %s", cases[c][0], cases[c][1], cases[c][2], err.msg);
        for (int x = 0; x < ir->nvars; x++) {
            const kp_kernel *k = covering_kernel(&v.plan, x);
            int writer = ir_sole_stmt(ir, x, ir_stmt_writes);
            int loss = writer >= 0 && ir->stmts[writer].op == IR_OP_NLL_LOSS;
            int wanted = v.materialized[x] && (ir->vars[x].zero_init || loss) && !k;
            if (zero_filled(&v.plan, x) != wanted)
                fail_msg("%s %s [%s]: %s %s zero-filled", cases[c][0], cases[c][1], cases[c][2], ir->vars[x].name,
                         wanted ? "is not" : "is");
            if (!k) continue;
            assert_true(ir->vars[x].zero_init && v.materialized[x] && !loss);
            assert_true(writer >= 0 && ir_first_sole_writer(ir, writer));
            if (k->category == KC_TRAVERSAL) assert_stores_only(k, x);
            dropped++;
        }
        if (!strcmp(cases[c][0], "rgat") && !strcmp(cases[c][1], "train")) {
            static const char *const whole[] = {"d_h", "d_loss", "d_w_t"}, *const summed[] = {"d_feature", "loss"};
            for (int i = 0; i < 3; i++) assert_false(zero_filled(&v.plan, ir_find_var(ir, whole[i])));
            for (int i = 0; i < 2; i++) assert_true(zero_filled(&v.plan, ir_find_var(ir, summed[i])));
            if (c == 3)   /* softmax=single: the unnormalised sum has atomics, its gradient one writer */
                assert_true(zero_filled(&v.plan, ir_find_var(ir, "h_un")) && !zero_filled(&v.plan, ir_find_var(ir, "d_h_un")));
        }
        if (!strcmp(cases[c][1], "infer"))   /* heavy nodes' chunks add into h_un and att_sum */
            assert_true(zero_filled(&v.plan, ir_find_var(ir, "h_un")) && zero_filled(&v.plan, ir_find_var(ir, "att_sum")));
        cg_variant_free(&v);
        lw_free(lp);
        ir_free(ir);
    }
    assert_true(dropped >= 15);
}

/* Whether kernel k's source declares parameter `name` without const (a buffer the kernel may store into).
 * The signature is the text between "void <kernel>(" and the next ")\n{". */
static int declared_writable(const kp_kernel *k, const char *name)
{
    char head[96];
    snprintf(head, sizeof head, " %s(", k->name);
    const char *sig = strstr(k->source, head), *end = sig ? strstr(sig, ")\n{") : NULL;
    assert_non_null(sig);
    assert_non_null(end);
    sig += strlen(head);
    while (sig < end) {
        const char *comma = memchr(sig, ',', (size_t)(end - sig));
        const char *stop = comma ? comma : end;
        char decl[256];
        snprintf(decl, sizeof decl, "%.*s", (int)(stop - sig), sig);
        char *c = strstr(decl, "/*");
        if (c) *c = 0;   /* the variable's name in a comment */
        char *last = decl + strlen(decl);
        while (last > decl && (last[-1] == ' ' || last[-1] == '\n')) *--last = 0;
        while (last > decl && (isalnum((unsigned char)last[-1]) || last[-1] == '_')) last--;
        if (!strcmp(last, name)) {
            const char *t = decl;
            while (*t == ' ' || *t == '\n') t++;
            return strncmp(t, "const ", 6) != 0;
        }
        sig = stop + 1;
    }
    fail_msg("%s: no parameter %s in its signature", k->name, name);
    return 0;
}

/* The variant of model and task under `config` over the defaults (a failure fails the test). */
static void build_or_fail(const char *model, const char *task, const char *config, cg_variant *v)
{
    rg_err err;
    cg_config cfg;
    cfg_default(&cfg);
    if (cfg_parse(&cfg, config, &err)) fail_msg("%s: %s", config, err.msg);
    if (build_variant(model, task, &cfg, v, &err)) fail_msg("%s %s %s: %s", model, task, config, err.msg);
}

/* launch=dag orders two kernels only where they conflict: the `written` marks its edges come from must say
 * what each kernel's source says (a buffer it stores into is declared without const), and the reduced
 * edges must still order every conflicting pair, through a path, and never a pair that does not conflict. */
/* Whether kernel i of the plan binds a variable that the run zero-fills. */
static int binds_zero_filled(const kp_plan *pl, int i)
{
    const kp_kernel *k = &pl->kernels[i];
    for (int j = 0; j < k->nparams; j++)
        for (int z = 0; z < pl->nzero; z++)
            if ((k->params[j].kind == KP_VAR || k->params[j].kind == KP_VAR_IN) && k->params[j].id == pl->zero_vars[z])
                return 1;
    return 0;
}

static void test_dag_launch_orders_every_conflict(void **state)
{
    (void)state;
    static const char *const cases[][3] = {{"hgt", "train", "softmax=single,recompute=on,launch=dag"},
                                           {"rgat", "train", "trav=node,softmax=single,lanes=16,launch=dag"},
                                           {"rgcn", "train", "crsum=run,launch=dag"},
                                           {"rgat", "infer", "trav=node,softmax=single,epi=on,nchunk=64,launch=dag"},
                                           {"hgt", "infer", "compact=off,softmax=single,launch=dag"},
                                           {"rgat", "train", "mma=bf16,store=bf16,compact=off,launch=dag"}};
    int roots_after_first = 0, marked = 0, zero_edges = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cg_variant v;
        build_or_fail(cases[c][0], cases[c][1], cases[c][2], &v);
        const kp_plan *pl = &v.plan;
        assert_int_equal(pl->launch, KP_LAUNCH_DAG);
        int n = pl->nkernels;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < pl->kernels[i].nparams; j++) {
                const kp_param *q = &pl->kernels[i].params[j];
                if (q->kind != KP_VAR && q->kind != KP_VAR_IN) continue;
                if (declared_writable(&pl->kernels[i], q->name) != q->written)
                    fail_msg("%s %s: %s's %s is %smarked written", cases[c][0], cases[c][1], pl->kernels[i].name, q->name,
                             q->written ? "" : "not ");
                marked += q->written;
            }
        /* before[i * n + j]: kernel j runs before kernel i through the graph's edges; after_zero[i]: kernel i
         * runs after the zero-fill, the graph's first node */
        unsigned char *before = rg_xcalloc((size_t)n * (size_t)n, 1), *after_zero = rg_xcalloc((size_t)n, 1);
        int *deps = rg_xmalloc((size_t)n * sizeof *deps);
        for (int i = 0; i < n; i++) {
            int nd = kp_dag_deps(pl, i, NULL, deps);
            after_zero[i] = (unsigned char)kp_dag_waits_on_zero(pl, i, deps, nd);
            zero_edges += after_zero[i];
            for (int d = 0; d < nd; d++) after_zero[i] |= after_zero[deps[d]];
            if (binds_zero_filled(pl, i) && !after_zero[i])
                fail_msg("%s %s: %s binds a zero-filled variable but may run before the zero-fill", cases[c][0],
                         cases[c][1], pl->kernels[i].name);
            if (i > 0 && nd == 0 && !after_zero[i]) roots_after_first++;
            for (int d = 0; d < nd; d++) {
                assert_true(deps[d] < i && (d == 0 || deps[d - 1] < deps[d]));
                assert_true(kp_kernels_conflict(&pl->kernels[deps[d]], &pl->kernels[i]));
                before[(size_t)i * (size_t)n + (size_t)deps[d]] = 1;
                for (int m = 0; m < n; m++)
                    if (before[(size_t)deps[d] * (size_t)n + (size_t)m]) before[(size_t)i * (size_t)n + (size_t)m] = 1;
            }
            for (int j = 0; j < i; j++)
                if (kp_kernels_conflict(&pl->kernels[j], &pl->kernels[i]) && !before[(size_t)i * (size_t)n + (size_t)j])
                    fail_msg("%s %s: %s is not ordered before %s", cases[c][0], cases[c][1], pl->kernels[j].name,
                             pl->kernels[i].name);
        }
        free(before);
        free(after_zero);
        free(deps);
        cg_variant_free(&v);
    }
    /* HGT's query projection reads `feature` like the key and message projections, and none waits on another */
    assert_true(roots_after_first >= 3 && marked > 50);
    /* the zero-fill is waited on by few kernels: the others may overlap it */
    assert_true(zero_edges > 0);
    /* in plan order the graph is a chain, and the default launches one by one */
    cg_variant v;
    build_or_fail("rgat", "infer", "", &v);
    assert_int_equal(v.plan.launch, KP_LAUNCH_STREAM);
    cg_variant_free(&v);
}

/* `src` without what rowpf adds: its prefetch blocks and its note in the kernel's comment. */
static char *without_row_prefetches(const char *src)
{
    char *out = rg_xstrdup(src);
    char *note = strstr(out, "; rowpf=");
    if (note) {
        char *end = strstr(note, " with the ids");
        assert_non_null(end);
        memmove(note, end + strlen(" with the ids"), strlen(end + strlen(" with the ids")) + 1);
    }
    for (char *at = strstr(out, "            {   /* rowpf: "); at; at = strstr(at, "            {   /* rowpf: ")) {
        char *close = strstr(at, "\n            }\n");
        assert_non_null(close);
        close += strlen("\n            }\n");
        memmove(at, close, strlen(close) + 1);
    }
    return out;
}

/* rowpf=l2|l1: the walk in (etype, src) order prefetches its edges' destination rows, the dst-sorted
 * aggregation its compact source rows, each lane its own edge's inside the ids' guard, at the level
 * asked; rows the kernel writes are never prefetched; nothing else of the kernels changes; an instance
 * (or a plan) that gathers no such row is refused; the kernels compile. */
static void test_row_prefetches(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg, off;
    cg_variant v, w;
    kp_plan plan = {0};
    static const char *const cases[][4] = {
        {"rgat", "train", "crsum=defer,softmax=single,recompute=on,pfetch=on,lanes=16", "L2"},
        {"hgt", "train", "crsum=defer,softmax=single,recompute=on,lanes=8", "L1"},
        {"rgat", "infer", "softmax=single,trav=node,compact=off", "L2"}};
    int dst_rows = 0, src_rows = 0;
    for (int c = 0; c < 3; c++) {
        cfg_default(&off);
        assert_int_equal(cfg_parse(&off, cases[c][2], &err), 0);
        cfg = off;
        assert_int_equal(cfg_parse(&cfg, !strcmp(cases[c][3], "L1") ? "rowpf=l1" : "rowpf=l2", &err), 0);
        if (build_variant(cases[c][0], cases[c][1], &cfg, &v, &err)) fail_msg("%s: %s", cases[c][2], err.msg);
        if (build_variant(cases[c][0], cases[c][1], &off, &w, &err)) fail_msg("%s: %s", cases[c][2], err.msg);
        assert_int_equal(v.plan.nkernels, w.plan.nkernels);
        int prefetching = 0;
        for (int k = 0; k < v.plan.nkernels; k++) {
            const char *src = v.plan.kernels[k].source;
            char *plain = without_row_prefetches(src);
            assert_string_equal(plain, w.plan.kernels[k].source);
            free(plain);
            if (!strstr(src, "/* rowpf: ")) continue;
            prefetching++;
            char level[48];
            snprintf(level, sizeof level, "prefetch.global.%s [%%0];", cases[c][3]);
            assert_non_null(strstr(src, level));
            for (const char *at = strstr(src, "const size_t p_ = (size_t)(v"); at; at = strstr(at + 1, "const size_t p_ = (size_t)(v")) {
                int var = atoi(at + strlen("const size_t p_ = (size_t)(v"));
                char param[48], line[160];
                snprintf(param, sizeof param, "__restrict__ v%d /*", var);
                assert_non_null(strstr(src, param));   /* read-only in the kernel */
                /* inside the ids' guard: after "if (ql < ", before the edge loop */
                assert_true(strstr(src, "if (ql < ") < at && at < strstr(src, "for (int j = 0; j < cnt; j++)"));
                snprintf(line, sizeof line, "%.*s", (int)(strchr(at, '\n') - at), at);
                dst_rows += strstr(line, "(size_t)(dn_l) *") != NULL;
                src_rows += strstr(line, "(size_t)(cr_l) *") || strstr(line, "(size_t)(sn_l) *");
            }
            queue90(&plan, &v.plan.kernels[k]);
        }
        assert_true(prefetching >= 1);
        cg_variant_free(&v);
        cg_variant_free(&w);
    }
    assert_true(dst_rows >= 2);   /* the walks' d_h_un and feature rows */
    assert_true(src_rows >= 2);   /* the aggregations' messages */
    compile90_and_free(&plan);
    assert_refused("rgat", "train", "crsum=defer,softmax=single,recompute=on,trav_12_bwd.rowpf=l2", PL_INAPPLICABLE,
                   "trav_12_bwd.rowpf: trav_12_bwd gathers no feature row");
    assert_refused("rgcn", "infer", "pagg=off,rowpf=l2", PL_INAPPLICABLE, "it would duplicate rowpf=off");
}

/* wacc=reg: the walk's and the compact rows' partial sums of a vector weight's gradient live in
 * registers (rwN, each lane its own elements), added to without a shared-memory row and flushed per
 * edge type in the same register order; the shared scratch shrinks by the row; where the registers
 * would pass 16 doubles a lane the sums stay shared, saying why; kernels without such sums refuse it by
 * name, and so does a plan without any; the kernels compile. */
static void test_wacc_registers(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v, w;
    kp_plan plan = {0};
    static const char *base = "crsum=defer,softmax=single,recompute=on,lanes=16,scalars=replicated";
    char kv[256];
    snprintf(kv, sizeof kv, "%s,wacc=reg", base);
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, kv, &err), 0);
    if (build_variant("rgat", "train", &cfg, &v, &err)) fail_msg("%s: %s", kv, err.msg);
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, base, &err), 0);
    if (build_variant("rgat", "train", &cfg, &w, &err)) fail_msg("%s: %s", base, err.msg);
    assert_int_equal(v.plan.nkernels, w.plan.nkernels);
    int in_regs = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        const char *src = v.plan.kernels[k].source;
        const char *decl = strstr(src, "    double rw");
        if (!decl) continue;
        int var = atoi(decl + strlen("    double rw")), n = atoi(strchr(decl, '[') + 1);
        char add[48], flush[80], shared[48];
        snprintf(add, sizeof add, "rw%d[k_] += (double)", var);
        snprintf(flush, sizeof flush, "atomicAdd(&v%d[(size_t)(tcur) * 64 + i], rw%d[k_]);", var, var);
        assert_non_null(strstr(src, add));
        assert_non_null(strstr(src, flush));
        assert_non_null(strstr(src, "wacc=reg: "));
        /* the smem variant's row of the same sums: 64 doubles more of scratch a row group (an empty
         * scratch is printed as 1) */
        int with = atoi(strstr(src, "smem + warp * ") + strlen("smem + warp * "));
        const char *old = w.plan.kernels[k].source;
        int without = atoi(strstr(old, "smem + warp * ") + strlen("smem + warp * "));
        assert_int_equal(without - (with == 1 && without == 64 ? 0 : with), 64);
        snprintf(shared, sizeof shared, "atomicAdd(&v%d[(size_t)(tcur) * 64 + i], scr[", var);
        assert_non_null(strstr(old, shared));
        assert_int_equal(n, 4);   /* 64 elements over 16 lanes */
        in_regs++;
        queue90(&plan, &v.plan.kernels[k]);
    }
    assert_int_equal(in_regs, 2);   /* the walk's d_W_w_t and the compact rows' d_w_s */
    cg_variant_free(&v);
    cg_variant_free(&w);
    /* at 8 lanes the walk's d_hs (8 registers under acc=reg32), d_atts and d_W_w_t (8) pass 16 doubles */
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "crsum=defer,softmax=single,recompute=on,lanes=8,acc=reg32,wacc=reg", &err), 0);
    if (build_variant("rgat", "train", &cfg, &v, &err)) fail_msg("lanes 8: %s", err.msg);
    int stays = 0;
    for (int k = 0; k < v.plan.nkernels; k++)
        stays += strstr(v.plan.kernels[k].source, "wacc=reg: d_W_w_t stays in shared memory: a lane would hold more") != NULL;
    assert_int_equal(stays, 1);
    cg_variant_free(&v);
    compile90_and_free(&plan);
    assert_refused("rgat", "train", "crsum=defer,softmax=single,recompute=on,trav_12_bwd.wacc=reg", PL_INAPPLICABLE,
                   "trav_12_bwd.wacc=reg: trav_12_bwd has no weight-gradient sums");
    assert_refused("rgat", "infer", "wacc=reg", PL_INAPPLICABLE, "it would duplicate wacc=smem");
}

/* occ=N: every traversal kernel asks the compiler for N warps an SM (__launch_bounds__(tblock,
 * N x 32 / tblock)), a per-kernel override only its instance's, no GEMM; blocks that do not divide
 * are refused; the kernels compile. */
static void test_occupancy_bounds(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    kp_plan plan = {0};
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "tblock=128,occ=48,trav_10_bwd.occ=64,crsum=defer,softmax=single,recompute=on", &err), 0);
    if (build_variant("rgat", "train", &cfg, &v, &err)) fail_msg("%s", err.msg);
    int bounded = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        const kp_kernel *kk = &v.plan.kernels[k];
        if (kk->category != KC_TRAVERSAL) {
            assert_null(strstr(kk->source, "__launch_bounds__(128, 12)"));
            continue;
        }
        const char *want = !strcmp(kk->name, "trav_10_bwd") ? "__launch_bounds__(128, 16) trav_10_bwd("
                                                              : "__launch_bounds__(128, 12) ";
        assert_non_null(strstr(kk->source, want));
        bounded++;
        queue90(&plan, kk);
    }
    assert_true(bounded >= 5);
    cg_variant_free(&v);
    compile90_and_free(&plan);
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "tblock=512,occ=40", &err), 0);
    assert_int_not_equal(cfg_validate(&cfg, &err), 0);
    assert_non_null(strstr(err.msg, "occ=40 asks for 1280 threads an SM, which is not a whole number of tblock=512 blocks"));
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "tblock=32,occ=64", &err), 0);   /* 64 blocks an SM */
    assert_int_not_equal(cfg_validate(&cfg, &err), 0);
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "tblock=128,occ=40", &err), 0);
    assert_int_equal(cfg_validate(&cfg, &err), 0);
}

/* The loss and its gradient in float32 (expf, not a double exp): float4 loads where a lane's classes
 * are a whole 16-byte slice of the row (64 classes: 8 lanes of 8), one float a class otherwise (10
 * classes: 2 lanes of 5, the second lane's last guarded); both forms compile; one class is refused. */
static void test_loss_kernels_float32(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    kp_plan plan = {0};
    static const struct { int out, vec4; } cases[] = {{64, 1}, {10, 0}};
    for (int c = 0; c < 2; c++) {
        ir_dims d = dims;
        d.out_dim = cases[c].out;
        cfg_default(&cfg);
        if (build_variant_dims("rgcn", "train", &d, &cfg, &v, &err)) fail_msg("out %d: %s", cases[c].out, err.msg);
        int losses = 0;
        for (int k = 0; k < v.plan.nkernels; k++) {
            const kp_kernel *kk = &v.plan.kernels[k];
            if (!strstr(kk->source, "NLL loss")) continue;
            assert_non_null(strstr(kk->source, "expf(xv[j] - m)"));
            assert_null(strstr(kk->source, "exp((double)"));
            assert_int_equal(strstr(kk->source, "*(const float4*)(x + j)") != NULL, cases[c].vec4);
            assert_int_equal(strstr(kk->source, "(valid && sub * V + j < C)") != NULL, !cases[c].vec4);
            queue90(&plan, kk);
            losses++;
        }
        assert_int_equal(losses, 2);   /* the loss and its gradient */
        cg_variant_free(&v);
    }
    compile90_and_free(&plan);
    /* one class: a float64 per-row output whose loss is always 0, refused with the reason (it aborted) */
    ir_dims one = dims;
    one.out_dim = 1;
    cfg_default(&cfg);
    assert_int_not_equal(build_variant_dims("rgcn", "train", &one, &cfg, &v, &err), 0);
    assert_non_null(strstr(err.msg, "at least 2 classes"));
}

/* vec=V reads a one-head dot product's rows V elements a lane at a time: HGT's q . k in its
 * aggregation (edge rows, bfloat16), RGAT's hs . w_s over compact rows (u names the row there; the
 * vector element loops name their element vu), the training walk's gradient dots. */
static void test_vector_dot_products(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    kp_plan plan = {0};
    static const struct { const char *model, *task, *kv, *kernel, *want; } cases[] = {
        {"hgt", "infer", "softmax=single,vec=4,lanes=8,scalars=replicated,store=bf16", "trav_6",
         "for (int i0 = lane * 4; i0 < 64; i0 += 32) {"},
        {"rgat", "train", "softmax=single,store=bf16,trav_3.lanes=8,trav_3.vec=8", "trav_3",
         "ld_bf16x8(&v4[(size_t)(u) * 64 + i0], vl0);"},
        {"rgat", "train", "crsum=defer,softmax=single,recompute=on,lanes=16,vec=4,scalars=replicated", "trav_10_bwd",
         "for (int i0 = lane * 4; i0 < 64; i0 += 64) {"},
        /* compact rows' elementwise statements at vec 4: row u's scalar and output inside the element
         * loop (the loop once named its element u, and read and wrote rows 0-3: NaN in d_feature) */
        {"rgat", "train", "crsum=defer,softmax=single,recompute=on,lanes=16,scalars=replicated,trav_13_bwd.vec=4",
         "trav_13_bwd", "v26[(size_t)(u) * 1 + 0] * vl0[vu];"}};
    for (int c = 0; c < 4; c++) {
        cfg_default(&cfg);
        assert_int_equal(cfg_parse(&cfg, cases[c].kv, &err), 0);
        if (build_variant(cases[c].model, cases[c].task, &cfg, &v, &err)) fail_msg("%s: %s", cases[c].kv, err.msg);
        int found = 0;
        for (int k = 0; k < v.plan.nkernels; k++) {
            const kp_kernel *kk = &v.plan.kernels[k];
            if (kk->category != KC_TRAVERSAL) continue;
            queue90(&plan, kk);
            assert_null(strstr(kk->source, "for (int u = 0; u <"));   /* u names a compact row */
            if (strcmp(kk->name, cases[c].kernel)) continue;
            found = 1;
            if (!strstr(kk->source, cases[c].want)) fail_msg("%s %s: no '%s'", cases[c].kv, kk->name, cases[c].want);
            assert_non_null(strstr(kk->source, "for (int vu = 0; vu < "));
        }
        assert_true(found);
        cg_variant_free(&v);
    }
    compile90_and_free(&plan);
}

/* crsum=split's two parts: the second runs the compact rows' and weights' sums and the temporaries
 * they read, the first everything else that reaches device memory, and no compact sum. */
static void test_split_parts(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "softmax=single,crsum=split", &err), 0);
    pl_problem p = {.model = "hgt", .task = "train", .dims = dims};
    ir_program *ir;
    lw_program *lp;
    assert_int_equal(pl_build(&p, &cfg, NULL, NULL, &ir, &lp, &err), 0);
    cg_variant v;
    if (cg_build(ir, lp, &cfg, &v, &err)) fail_msg("%s", err.msg);
    int *stmts = rg_xmalloc((size_t)ir->nstmts * sizeof *stmts), parts[3] = {0};
    for (int k = 0; k < v.plan.nkernels; k++) {
        const kp_kernel *kk = &v.plan.kernels[k];
        if (kk->part == 0) continue;
        parts[kk->part]++;
        int n = col_kernel_stmts(ir, lp, v.materialized, kk, stmts), compact = 0, temps = 0;
        assert_true(n > 0);
        for (int i = 0; i < n; i++) {
            const ir_stmt *s = &ir->stmts[stmts[i]];
            const ir_var *x = &ir->vars[s->out.var];
            int sum = s->accumulate && ((x->kind == IR_VAR_EDGE && x->layout == IR_LAYOUT_COMPACT) ||
                                        x->kind == IR_VAR_WEIGHT);
            int temp = !v.materialized[s->out.var] && s->out.acc == IR_ACC_ROW;
            compact += sum;
            temps += temp;
            if (kk->part == 1 && !sum && !temp) fail_msg("%s runs %s, neither a sum nor a temporary", kk->name, x->name);
        }
        if (kk->part == 1) assert_true(compact >= 2 && temps >= 1);   /* HGT: d_msg and d_katt, and d_mu */
        else assert_int_equal(compact, 0);
    }
    assert_true(parts[1] >= 1 && parts[2] >= 1);
    free(stmts);
    cg_variant_free(&v);
    lw_free(lp);
    ir_free(ir);
}

/* A mapping that does not apply to a problem says why, before anything is emitted. */
static void test_thread_mapping_refusals(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "vec=4", &err), 0);   /* lanes=32: 128 elements per step, rows of 64 */
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), PL_INAPPLICABLE);
    assert_non_null(strstr(err.msg, "vec=4 does not apply with lanes=32"));
    assert_non_null(strstr(err.msg, "widest feature row (64)"));
    cfg.lanes = 16;
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), 0);
    cg_variant_free(&v);
    const ir_dims odd = {30, 30, 1};
    assert_int_equal(build_variant_dims("rgcn", "train", &odd, &cfg, &v, &err), PL_INAPPLICABLE);
    assert_non_null(strstr(err.msg, "no feature row of this problem (widths 30 and 30) is a multiple of 4"));
    cfg.vec = 2;   /* 30 = 15 float2, 8 lanes step over 16 */
    cfg.lanes = 8;
    /* the training mappings refused in sessions 6-22 (NaN outputs, from reads hoisted above a barrier
     * under __restrict__; codegen/pipeline.c) build: fewer than 16 lanes on dst-sorted two-pass
     * traversals, acc=reg with the node-centric form, acc=reg with 16 lanes on dst-sorted runs */
    assert_int_equal(build_variant_dims("rgcn", "train", &odd, &cfg, &v, &err), 0);
    cg_variant_free(&v);
    static const char *const formerly_refused[] = {"acc=reg,trav=node", "trav=edge,lanes=16,acc=reg",
                                                   "trav=edge,lanes=8,acc=reg,softmax=single", "lanes=8"};
    for (int i = 0; i < 4; i++) {
        cg_config ac;
        cfg_default(&ac);
        assert_int_equal(cfg_parse(&ac, formerly_refused[i], &err), 0);
        if (build_variant("rgat", "train", &ac, &v, &err)) fail_msg("rgat train %s: %s", formerly_refused[i], err.msg);
        cg_variant_free(&v);
    }
    cfg.partial_agg = 0;
    assert_int_equal(build_variant_dims("rgcn", "train", &odd, &cfg, &v, &err), 0);
    cg_variant_free(&v);
    cfg.partial_agg = 1;
    assert_int_equal(build_variant_dims("rgcn", "infer", &odd, &cfg, &v, &err), 0);
    cg_variant_free(&v);
    /* 128 row groups of 4 lanes, each with a 512-wide accumulator in shared memory */
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "lanes=4,tblock=512", &err), 0);
    const ir_dims wide = {512, 512, 1};
    assert_int_equal(build_variant_dims("rgcn", "infer", &wide, &cfg, &v, &err), -1);
    assert_non_null(strstr(err.msg, "tblock=512 with lanes=4 runs 128 rows per block"));
    cfg.lanes = 32;
    assert_int_equal(build_variant_dims("rgcn", "infer", &wide, &cfg, &v, &err), 0);
    cg_variant_free(&v);
}

/* scalars=lane and scalars=replicated: the schedules each kernel with lanes' statements is compiled under,
 * with RGAT and HGT,
 * both tasks, one head and four: the edge forms (dst runs, node-centric walks in one pass and in two,
 * edges with atomics), both softmax forms, 8 to 32 lanes with vector loads, registers, recompute,
 * compaction off and bfloat16 storage. */
static const char *const lane_schedules[] = {
    "",
    "softmax=single",
    "softmax=single,acc=reg,lanes=8",
    "trav=node",
    "trav=node,softmax=single,nchunk=8",
    "pagg=off",
    "lanes=8,vec=4",
    "softmax=single,recompute=on",
    "compact=off,softmax=single",
    "softmax=single,mma=bf16,store=bf16,lanes=8,tblock=128",
    NULL,
};

static void test_lane_scalars_compile(void **state)
{
    (void)state;
    static const char *const models[] = {"rgat", "hgt"}, *const tasks[] = {"infer", "train"};
    static const ir_dims both[] = {{64, 64, 1}, {32, 16, 4}};
    static const char *const values[] = {"lane", "replicated"};
    kp_plan plan = {0};
    int variants = 0, lane_kernels = 0, distinct = 0, none = 0;
    rg_err err;
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < 2; t++)
            for (int d = 0; d < 2; d++)
                for (int i = 0; lane_schedules[i]; i++)
                for (int x = 0; x < 2; x++) {
                    char kv[160], note[32];
                    snprintf(kv, sizeof kv, "scalars=%s%s%s", values[x], lane_schedules[i][0] ? "," : "", lane_schedules[i]);
                    snprintf(note, sizeof note, "scalars=%s: ", values[x]);
                    cg_config cfg;
                    cfg_default(&cfg);
                    assert_int_equal(cfg_parse(&cfg, kv, &err), 0);
                    if (cfg_validate(&cfg, &err)) fail_msg("%s: %s", kv, err.msg);
                    cg_variant v;
                    int rc = build_variant_dims(models[m], tasks[t], &both[d], &cfg, &v, &err);
                    if (rc == PL_INAPPLICABLE && strstr(err.msg, "recompute=on does not apply")) continue;
                    /* training stores its scores for the backward pass unless it recomputes them: nothing
                     * is left to a lane in some plans */
                    if (rc == PL_INAPPLICABLE && t == 1 && strstr(err.msg, "would duplicate scalars=group")) {
                        none++;
                        continue;
                    }
                    if (rc) fail_msg("%s %s %s: %s", models[m], tasks[t], kv, err.msg);
                    variants++;
                    for (int k = 0; k < v.plan.nkernels; k++) {
                        const kp_kernel *kk = &v.plan.kernels[k];
                        if (!strstr(kk->source, note)) continue;
                        lane_kernels++;
                        distinct += queue90(&plan, kk);
                    }
                    cg_variant_free(&v);
                }
    /* every variant builds a lanes' prologue somewhere, or pl_build would have refused it */
    assert_true(variants >= 80 && lane_kernels >= variants);
    kx_compiled c;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("scalars=lane and replicated: %d variants (%d training plans with no lanes' prologue refused), %d kernels with one, %d "
           "distinct new to this run compiled for sm_90 (%d from the cache)\n", variants, none, lane_kernels, distinct,
           c.cache_hits);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
}

/* The source of the kernel of v whose name is `name`, or NULL. */
static const char *kernel_source(const cg_variant *v, const char *name)
{
    for (int k = 0; k < v->plan.nkernels; k++)
        if (!strcmp(v->plan.kernels[k].name, name)) return v->plan.kernels[k].source;
    return NULL;
}

static int occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* scalars=lane takes RGAT inference's score chain (the destination's dot product, the sum with the
 * source's term, LeakyReLU, exp) out of the row group's loop: the aggregation kernel keeps no warp
 * barrier and no shuffle reduction, and takes one shuffled value per edge. RGCN has no such scalars
 * and refuses the key; an instance set to it by name must have some. */
static void test_lane_scalars_in_sources(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant grp, lane;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "softmax=single,acc=reg,lanes=8", &err), 0);
    assert_int_equal(build_variant("rgat", "infer", &cfg, &grp, &err), 0);
    assert_int_equal(cfg_parse(&cfg, "scalars=lane", &err), 0);
    assert_int_equal(build_variant("rgat", "infer", &cfg, &lane, &err), 0);
    const char *g4 = kernel_source(&grp, "trav_4"), *l4 = kernel_source(&lane, "trav_4");
    assert_non_null(g4);
    assert_non_null(l4);
    assert_true(occurrences(g4, "__syncwarp") >= 4);
    assert_int_equal(occurrences(g4, "group_sum(p"), 1);
    assert_int_equal(occurrences(l4, "__syncwarp") + occurrences(l4, "group_sum(p"), 0);
    assert_non_null(strstr(l4, "scalars=lane: 4 statement(s), 4 double(s) a lane"));
    assert_int_equal(occurrences(l4, "= __shfl_sync(gmask, ls_["), 1);
    assert_null(strstr(g4, "ls_["));
    cg_variant_free(&grp);
    cg_variant_free(&lane);
    assert_refused("rgcn", "infer", "scalars=lane", PL_INAPPLICABLE, "would duplicate scalars=group");
    assert_refused("rgat", "infer", "softmax=single,trav_3.scalars=lane", PL_INAPPLICABLE,
                   "trav_3.scalars=lane: trav_3 has no per-edge scalars");
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "softmax=single,trav_4.scalars=lane", &err), 0);
    assert_int_equal(build_variant("rgat", "infer", &cfg, &lane, &err), 0);
    assert_non_null(strstr(kernel_source(&lane, "trav_4"), "scalars=lane: "));
    cg_variant_free(&lane);
}

/* scalars=lane in the backward pass: RGAT's chain of per-edge gradients (sums into temporaries that
 * start each edge at zero) goes to the lanes with the recomputed scores, each starting at zero in
 * the prologue, and the group's loop keeps the statements that sum into rows: d_hs, d_atts, d_feature
 * and d_W_w_t. The group's own weight-gradient partial sums take a plain sum, not a shared-memory
 * atomic (a compare-and-swap loop on sm_90). */
static void test_lane_scalars_backward(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant grp, lane;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "softmax=single,recompute=on,lanes=16,wrun=128,crsum=run", &err), 0);
    assert_int_equal(build_variant("rgat", "train", &cfg, &grp, &err), 0);
    assert_int_equal(cfg_parse(&cfg, "trav_10_bwd.scalars=lane", &err), 0);
    assert_int_equal(build_variant("rgat", "train", &cfg, &lane, &err), 0);
    const char *g10 = kernel_source(&grp, "trav_10_bwd"), *l10 = kernel_source(&lane, "trav_10_bwd");
    assert_non_null(g10);
    assert_non_null(l10);
    assert_non_null(strstr(l10, "scalars=lane: 9 statement(s), 8 double(s) a lane"));
    /* the four temporaries statements sum into start at zero in the prologue, not in the scratch */
    assert_int_equal(occurrences(g10, "i += 16) scr[") - occurrences(l10, "i += 16) scr["), 4);
    assert_int_equal(occurrences(l10, "] = 0.0;\n") - occurrences(l10, "i] = 0.0;\n"), 4);
    assert_non_null(strstr(l10, "ls_[0 + 0] += p;"));   /* the dot product sums into one of them */
    assert_int_equal(occurrences(l10, "= __shfl_sync(gmask, ls_["), 3);
    assert_true(occurrences(g10, "__syncwarp") >= occurrences(l10, "__syncwarp") + 8);
    assert_null(strstr(l10, "group_sum(p"));
    /* the forward kernel is the group's: the override names the backward one */
    assert_null(strstr(kernel_source(&lane, "trav_4"), "ls_["));
    for (int i = 0; i < lane.plan.nkernels; i++) assert_null(strstr(lane.plan.kernels[i].source, "atomicAdd(&scr"));
    assert_non_null(strstr(g10, "scr[73 + (d)] += (double)("));
    cg_variant_free(&lane);
    /* scalars=replicated: the same statements, every lane of the group in its registers, in the loop's
     * order: the group's dot products (the shuffle reduction leaves every lane the sum), no prologue, no
     * shuffle of the values, no barrier after them */
    assert_int_equal(cfg_parse(&cfg, "trav_10_bwd.scalars=replicated", &err), 0);
    assert_int_equal(build_variant("rgat", "train", &cfg, &lane, &err), 0);
    const char *r10 = kernel_source(&lane, "trav_10_bwd");
    assert_non_null(strstr(r10, "scalars=replicated: 9 statement(s), 8 double(s) a lane"));
    assert_int_equal(occurrences(r10, "group_sum(p"), occurrences(g10, "group_sum(p"));
    assert_int_equal(occurrences(r10, "            ls_[0 + 0] += p;"), 1);
    assert_null(strstr(r10, "pj_["));
    assert_null(strstr(r10, "ls_[%d + 0] = __shfl"));
    assert_null(strstr(r10, "bs_["));
    assert_int_equal(occurrences(g10, "__syncwarp") - occurrences(r10, "__syncwarp"), 10);
    cg_variant_free(&grp);
    cg_variant_free(&lane);
}

/* The text of the branch of an aggregation kernel that flushes a destination it summed whole (epi=on):
 * from its marker to the `} else {` of the atomic branch, copied into buf. */
static const char *whole_branch(const char *src, char *buf, size_t n)
{
    const char *a = strstr(src, "epi=on: every incoming edge");
    if (!a) return NULL;
    const char *b = strstr(a, "} else {");
    if (!b) return NULL;
    snprintf(buf, n, "%.*s", (int)(b - a), a);
    return buf;
}

/* The parameter name (v<N>) the kernel gives variable `var`, from its comment, or "" when absent. */
static void param_of(const char *src, const char *var, char *out, size_t n)
{
    char tag[64];
    snprintf(tag, sizeof tag, " /* %s */", var);
    const char *t = strstr(src, tag);
    *out = 0;
    if (!t) return;
    const char *v = t;
    while (v > src && v[-1] != ' ') v--;
    snprintf(out, n, "%.*s[", (int)(t - v), v);
}

/* epi=on: the aggregation runs the division after it for the destinations it sums whole, in the node
 * form (tiles of nchunk edges) and the dst-run form, with register or shared accumulators; the node
 * kernel after it skips exactly those nodes by the same rule; only sums another kernel reads are
 * still stored for them (training keeps att_sum for the backward pass); refused where nothing fuses. */
static void test_epilogue_in_aggregation(void **state)
{
    (void)state;
    static const char *const models[] = {"rgat", "hgt"};
    static const struct { const char *kv, *agg_mark, *guard; } forms[] = {
        {"trav=node,nchunk=16,lanes=8,acc=reg,scalars=lane", "if (whole)", "gb_ - ga_ <= 16"},
        {"trav=node,lanes=32", "if (whole)", "gb_ - ga_ <= 64"},
        {"trav=edge,lanes=16,acc=reg", "!(first_ && cut0_)", "ga_ / 32 == (gb_ - 1) / 32"},
        {"trav=edge,lanes=8", "!(first_ && cut0_) && !cut1_", "ga_ / 32 == (gb_ - 1) / 32"},
    };
    rg_err err;
    char buf[16384], sum[32], out[32];
    kp_plan plan = {0};
    int fused = 0;
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < 2; t++)
            for (int f = 0; f < 4; f++) {
                const char *task = t ? "train" : "infer";
                char kv[256];
                snprintf(kv, sizeof kv, "softmax=single,%s%s", forms[f].kv, t ? ",recompute=on" : "");
                cg_config cfg;
                cg_variant off, on;
                cfg_default(&cfg);
                assert_int_equal(cfg_parse(&cfg, kv, &err), 0);
                if (build_variant(models[m], task, &cfg, &off, &err)) fail_msg("%s %s %s: %s", models[m], task, kv, err.msg);
                cfg.epilogue = 1;
                if (build_variant(models[m], task, &cfg, &on, &err)) fail_msg("%s %s %s,epi=on: %s", models[m], task, kv, err.msg);
                /* the same kernels; the aggregation is the kernel before the node rows' one */
                assert_int_equal(on.plan.nkernels, off.plan.nkernels);
                int node = -1;
                for (int k = 1; k < on.plan.nkernels && node < 0; k++)
                    if (strstr(on.plan.kernels[k].source, "epi=on: finished by the aggregation")) node = k;
                if (node < 0) fail_msg("%s %s %s: no node kernel skips finished nodes", models[m], task, kv);
                const char *agg = on.plan.kernels[node - 1].source, *agg_off = kernel_source(&off, on.plan.kernels[node - 1].name);
                assert_non_null(strstr(on.plan.kernels[node].source, forms[f].guard));
                assert_non_null(strstr(agg, forms[f].agg_mark));
                assert_null(strstr(agg_off, "epi=on"));
                /* the divisor as a reciprocal, a zero sum giving 0 */
                assert_non_null(strstr(agg, "!= 0.0 ? 1.0 / "));
                /* the output row is written by the aggregation, att_sum in the whole branch only in training */
                param_of(agg, "h", out, sizeof out);
                param_of(agg, "att_sum", sum, sizeof sum);
                assert_true(*out && *sum);
                const char *whole = whole_branch(agg, buf, sizeof buf);
                assert_non_null(whole);
                if (!strstr(whole, out)) fail_msg("%s %s %s: the whole branch does not write %s", models[m], task, kv, out);
                if (t != (strstr(whole, sum) != NULL))
                    fail_msg("%s %s %s: the whole branch %s att_sum (%s)", models[m], task, kv, t ? "does not store" : "stores", sum);
                queue90(&plan, &on.plan.kernels[node - 1]);
                queue90(&plan, &on.plan.kernels[node]);
                fused++;
                cg_variant_free(&off);
                cg_variant_free(&on);
            }
    /* refused where no aggregation has node statements after it to run */
    assert_refused("rgcn", "infer", "trav=node,epi=on", PL_INAPPLICABLE, "it would duplicate epi=off");
    assert_refused("rgat", "infer", "softmax=twopass,epi=on", PL_INAPPLICABLE, "it would duplicate epi=off");
    assert_refused("hgt", "infer", "softmax=single,trav=edge,pagg=off,epi=on", PL_INAPPLICABLE, "it would duplicate epi=off");
    assert_int_equal(fused, 16);   /* 2 models x 2 tasks x 4 forms */
    kx_compiled c;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("epi=on: %d variants, their aggregation and node kernels compiled for sm_90 (%d from the cache)\n", fused,
           c.cache_hits);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
}

/* cdot=edge: RGAT's plan loses the kernel over compact rows that wrote atts, and its aggregation
 * computes the dot product of the compact row hs[cr] with w_s itself, in both tasks; refused where
 * nothing is left per edge and with compact=off. */
static void test_compact_dot_in_traversal(void **state)
{
    (void)state;
    rg_err err;
    for (int t = 0; t < 2; t++) {
        const char *task = t ? "train" : "infer";
        cg_config cfg;
        cg_variant table, edge;
        cfg_default(&cfg);
        assert_int_equal(cfg_parse(&cfg, "softmax=single,lanes=8", &err), 0);
        assert_int_equal(build_variant("rgat", task, &cfg, &table, &err), 0);
        cfg.cdot = 1;
        if (build_variant("rgat", task, &cfg, &edge, &err)) fail_msg("rgat %s cdot=edge: %s", task, err.msg);
        assert_int_equal(edge.plan.nkernels, table.plan.nkernels - 1 - t);   /* training: its gradient's kernel too */
        int dots = 0, unique_rows = 0;
        for (int k = 0; k < edge.plan.nkernels; k++) {
            const char *src = edge.plan.kernels[k].source;
            unique_rows += strstr(src, "compact (src, etype) rows, ") != NULL;
            dots += strstr(src, "/* w_s */") && strstr(src, "/* hs */") && strstr(src, "edge-centric");
        }
        assert_int_equal(unique_rows, 0);
        assert_true(dots >= 1 + t);   /* the aggregation, and in training the backward traversal */
        int table_rows = 0;
        for (int k = 0; k < table.plan.nkernels; k++)
            table_rows += strstr(table.plan.kernels[k].source, "compact (src, etype) rows, ") != NULL;
        assert_true(table_rows >= 1);
        cg_variant_free(&table);
        cg_variant_free(&edge);
    }
    assert_refused("hgt", "infer", "cdot=edge", PL_INAPPLICABLE, "it would duplicate cdot=table");
    assert_refused("rgcn", "infer", "cdot=edge", PL_INAPPLICABLE, "it would duplicate cdot=table");
    assert_refused("rgat", "infer", "cdot=edge,compact=off", -1, "compact=off computes every value per edge already");
}

/* With recompute=on, training's edge-centric forward traversals are the inference plan's under the same
 * schedule, text for text (sessions 19-21 let a forward instance take the mappings then refused in
 * training on this ground; codegen/pipeline.c says why none is refused now). */
static void test_recompute_forward_is_inference(void **state)
{
    (void)state;
    static const char *const models[] = {"rgat", "hgt"};
    static const char *const schedules[] = {"softmax=twopass,lanes=8", "softmax=twopass,lanes=4,acc=reg",
                                            "softmax=single,lanes=4,acc=reg",
                                            "softmax=single,lanes=8,acc=reg,scalars=lane", NULL};
    rg_err err;
    int compared = 0;
    for (int m = 0; m < 2; m++)
        for (int i = 0; schedules[i]; i++) {
            cg_config cfg;
            cg_variant inf, tr;
            cfg_default(&cfg);
            assert_int_equal(cfg_parse(&cfg, schedules[i], &err), 0);
            assert_int_equal(build_variant(models[m], "infer", &cfg, &inf, &err), 0);
            /* training: the same schedule on each forward traversal instance, recompute on */
            rg_str kv = {0};
            rg_str_puts(&kv, "recompute=on");
            if (strstr(schedules[i], "softmax=single")) rg_str_puts(&kv, ",softmax=single");
            if (strstr(schedules[i], "scalars=lane")) rg_str_puts(&kv, ",scalars=lane");
            char inst[64] = "";
            for (int k = 0; k < inf.plan.nkernels; k++) {
                const kp_kernel *kk = &inf.plan.kernels[k];
                if (kk->category != KC_TRAVERSAL) continue;
                char name[64];
                snprintf(name, sizeof name, "%s", kk->name);
                char *pass = strstr(name, "_p");   /* trav_4_p0: a pass of instance trav_4 */
                if (pass) *pass = 0;
                if (!strcmp(name, inst)) continue;
                snprintf(inst, sizeof inst, "%s", name);
                const char *keys[] = {"acc=reg", "lanes=8", "lanes=4"};
                for (int q = 0; q < 3; q++)
                    if (strstr(schedules[i], keys[q])) rg_str_printf(&kv, ",%s.%s", inst, keys[q]);
            }
            cfg_default(&cfg);
            if (cfg_parse(&cfg, kv.s, &err)) fail_msg("%s: %s", kv.s, err.msg);
            if (build_variant(models[m], "train", &cfg, &tr, &err)) fail_msg("%s train %s: %s", models[m], kv.s, err.msg);
            for (int k = 0; k < inf.plan.nkernels; k++) {
                const kp_kernel *kk = &inf.plan.kernels[k];
                if (kk->category != KC_TRAVERSAL) continue;
                const char *twin = kernel_source(&tr, kk->name);
                if (!twin || strcmp(twin, kk->source)) fail_msg("%s %s: %s differs in training (%s)", models[m], schedules[i], kk->name, kv.s);
                compared++;
            }
            cg_variant_free(&inf);
            cg_variant_free(&tr);
            rg_str_free(&kv);
        }
    assert_true(compared >= 12);
}

/* Kernels write no buffer through a __restrict__ pointer: in training one lane stores an edge's value
 * that the group's other lanes read after a __syncwarp, and under noalias the compiler hoisted those
 * reads above the barrier (NaN outputs, sessions 6-22). unroll=N puts `#pragma unroll N` on the edge
 * loop and is refused above lanes; vec=8 reads rows 16 bytes (bfloat16) or 32 (float32) at a time. */
static void test_written_buffers_unroll_and_vec8(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "trav=node,lanes=8,unroll=4", &err), 0);
    assert_int_equal(build_variant("rgat", "train", &cfg, &v, &err), 0);
    int written = 0, pragmas = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        const kp_kernel *kk = &v.plan.kernels[k];
        if (kk->category != KC_TRAVERSAL) continue;
        for (const char *line = kk->source; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            size_t len = strcspn(line, "\n");
            char buf[512];
            snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
            if (strstr(buf, "__restrict__") && !strstr(buf, "const "))
                fail_msg("%s writes through a restrict pointer: %s", kk->name, buf);
            written += strstr(buf, "double* v") && !strstr(buf, "const ");
        }
        for (const char *p = strstr(kk->source, "#pragma unroll 4\n        for (int j = 0; j < cnt; j++)"); p;
             p = strstr(p + 1, "#pragma unroll 4\n        for (int j = 0; j < cnt; j++)"))
            pragmas++;
    }
    assert_true(written >= 3);   /* the per-edge scores training stores (_t1, att_2, att_3) */
    assert_true(pragmas >= 2);   /* both passes of the two-pass node form */
    cg_variant_free(&v);
    assert_refused("rgat", "infer", "lanes=8,unroll=16", PL_INAPPLICABLE, "unroll=16 does not apply with lanes=8");
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "lanes=8,vec=8,store=bf16,softmax=single", &err), 0);
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), 0);
    int bf16x8 = 0, f32x8 = 0;
    for (int k = 0; k < v.plan.nkernels; k++) {
        bf16x8 += strstr(v.plan.kernels[k].source, "ld_bf16x8(&") != NULL;
        f32x8 += strstr(v.plan.kernels[k].source, "ld_f32x8(&") != NULL;
    }
    assert_true(bf16x8 > 0 && f32x8 > 0);   /* the bfloat16 message rows, the float32 sums */
    cg_variant_free(&v);
    assert_refused("rgat", "infer", "lanes=16,vec=8", PL_INAPPLICABLE, "vec=8 does not apply with lanes=16");
}

/* msg=trav: the forward messages are computed in the traversal (no GEMM over edges, no message
 * table), the backward keeps its GEMMs; it needs compact=off. nchunk: the tile size of split
 * node-centric kernels, refused where no kernel is split. */
static int count_category(const cg_variant *v, kp_category c, int backward)
{
    int n = 0;
    for (int i = 0; i < v->plan.nkernels; i++)
        n += v->plan.kernels[i].category == c && v->plan.kernels[i].backward == backward;
    return n;
}

static void test_messages_in_traversal_and_node_split(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cg_variant v;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "msg=trav", &err), 0);
    assert_int_equal(cfg_validate(&cfg, &err), -1);
    assert_non_null(strstr(err.msg, "compact=direct keeps a table of messages"));
    assert_int_equal(cfg_parse(&cfg, "compact=off,msg=gemm,softmax=single", &err), 0);
    assert_int_equal(build_variant("hgt", "infer", &cfg, &v, &err), 0);
    int gemm_before = count_category(&v, KC_GEMM, 0);
    cg_variant_free(&v);
    cfg.msg = 1;
    assert_int_equal(build_variant("hgt", "infer", &cfg, &v, &err), 0);
    /* HGT's two per-edge typed linears (K·Wa, V·Wm) leave the GEMMs; Q stays a GEMM over nodes */
    assert_int_equal(count_category(&v, KC_GEMM, 0), gemm_before - 2);
    assert_int_equal(count_category(&v, KC_GEMM, 0), 1);
    int in_trav = 0;
    for (int i = 0; i < v.plan.nkernels; i++) {
        const kp_kernel *k = &v.plan.kernels[i];
        if (k->category == KC_TRAVERSAL && strstr(k->source, "k < K_; k++) r = fma((float)")) in_trav++;
    }
    assert_int_equal(in_trav, 1);
    cg_variant_free(&v);
    /* training: the backward pass's edge GEMMs stay */
    assert_int_equal(build_variant("rgat", "train", &cfg, &v, &err), 0);
    assert_true(count_category(&v, KC_GEMM, 1) >= 2);
    assert_int_equal(count_category(&v, KC_GEMM, 0), 0);
    cg_variant_free(&v);

    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "nchunk=8", &err), 0);
    assert_int_equal(cfg_validate(&cfg, &err), -1);
    assert_non_null(strstr(err.msg, "trav=edge walks dst runs"));
    assert_int_equal(cfg_parse(&cfg, "trav=node", &err), 0);
    /* two-pass softmax walks each node's edges twice: nothing is split */
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), PL_INAPPLICABLE);
    assert_non_null(strstr(err.msg, "it would duplicate nchunk=64"));
    assert_int_equal(cfg_parse(&cfg, "softmax=single", &err), 0);
    assert_int_equal(build_variant("rgat", "infer", &cfg, &v, &err), 0);
    int tiled = 0;
    for (int i = 0; i < v.plan.nkernels; i++)
        if (v.plan.kernels[i].grid_kind == KGRID_TILES && v.plan.kernels[i].category == KC_TRAVERSAL) {
            assert_int_equal(v.plan.kernels[i].tile_rows, 8);
            assert_non_null(strstr(v.plan.kernels[i].source, "q_begin + 8)"));
            tiled++;
        }
    assert_int_equal(tiled, 1);
    cg_variant_free(&v);
}

static void test_invalid_configs_are_rejected_before_compiling(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "tile=64,coarsen=1,w=reg", &err), 0);
    cg_variant v;
    assert_int_equal(build_variant("rgcn", "infer", &cfg, &v, &err), -1);
    assert_non_null(strstr(err.msg, "registers"));
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, "trav=node,pagg=off", &err), 0);
    assert_int_equal(build_variant("rgcn", "infer", &cfg, &v, &err), -1);
    assert_non_null(strstr(err.msg, "pagg=off"));
    assert_int_not_equal(cfg_parse(&cfg, "tile=48", &err), 0);
    assert_non_null(strstr(err.msg, "tile must be"));
    assert_int_not_equal(cfg_parse(&cfg, "colour=blue", &err), 0);
    assert_non_null(strstr(err.msg, "unknown key"));
}

/* Canonical strings parse back to the same config, on points of the full space that cover every
 * pair of values of every two keys, and 4096 more drawn with a fixed seed (the whole space is
 * 331,776 points; tests/test_config.c enumerates it and prints it). */
static void test_config_strings_round_trip(void **state)
{
    (void)state;
    sp_space sp;
    rg_err err;
    assert_int_equal(sp_load("full", &sp, &err), 0);
    long *idx;
    int n = kc_pairwise(&sp, 4096, 7, &idx), valid = 0;
    assert_true(n > 4096);
    for (int i = 0; i < n; i++) {
        cg_config c, back;
        sp_config_at(&sp, idx[i], &c);
        char *s = cfg_to_string(&c);
        cfg_default(&back);
        assert_int_equal(cfg_parse(&back, s, &err), 0);
        if (cfg_hash(&back) != cfg_hash(&c)) fail_msg("%s does not parse back to the point it was printed from", s);
        char *diff = tu_config_diff(&c, &back);
        if (diff) fail_msg("%s parses back with %s", s, diff);
        valid += cfg_validate(&c, &err) == 0;
        free(s);
    }
    assert_true(valid > 100 && valid < n);   /* both kinds of point were checked */
    free(idx);
}

static void test_space_file_errors_name_the_line(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = tu_write_file(dir, "space.txt", "compact: off direct\n\ntile: 16 17\n");
    sp_space sp;
    rg_err err;
    assert_int_equal(sp_load(path, &sp, &err), -1);
    assert_non_null(strstr(err.msg, "space.txt:3"));
    free(path);
    path = tu_write_file(dir, "ok.txt", "# a small space\ncompact: off direct\ntile: 16 32\n");
    assert_int_equal(sp_load(path, &sp, &err), 0);
    sp_point *pts;
    int n;
    assert_int_equal(sp_enumerate(&sp, &pts, &n, &err), 0);
    assert_int_equal(n, 4);
    free(pts);
    free(path);
    free(dir);
}

int main(void)
{
    /* cubins cached under build/, never in the home folder of the machine running the tests */
    setenv("RGNN_KCACHE", "build/kcache-test", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_configs_are_rejected_before_compiling),
        cmocka_unit_test(test_config_strings_round_trip),
        cmocka_unit_test(test_space_file_errors_name_the_line),
        cmocka_unit_test(test_schedule_shows_in_sources),
        cmocka_unit_test(test_mma_sources_compile),
        cmocka_unit_test(test_thread_mapping_shows_in_sources),
        cmocka_unit_test(test_thread_mapping_refusals),
        cmocka_unit_test(test_messages_in_traversal_and_node_split),
        cmocka_unit_test(test_thread_mappings_compile),
        cmocka_unit_test(test_acc_reg_in_sources),
        cmocka_unit_test(test_weight_gradient_runs),
        cmocka_unit_test(test_compact_row_sums),
        cmocka_unit_test(test_split_parts),
        cmocka_unit_test(test_deferred_dst_sums),
        cmocka_unit_test(test_prefetched_scalar_operands),
        cmocka_unit_test(test_single_stores),
        cmocka_unit_test(test_zero_fills_only_where_read_back),
        cmocka_unit_test(test_dag_launch_orders_every_conflict),
        cmocka_unit_test(test_row_prefetches),
        cmocka_unit_test(test_wacc_registers),
        cmocka_unit_test(test_occupancy_bounds),
        cmocka_unit_test(test_loss_kernels_float32),
        cmocka_unit_test(test_vector_dot_products),
        cmocka_unit_test(test_acc_reg_compiles),
        cmocka_unit_test(test_float32_feature_arithmetic),
        cmocka_unit_test(test_lane_scalars_in_sources),
        cmocka_unit_test(test_lane_scalars_backward),
        cmocka_unit_test(test_recompute_forward_is_inference),
        cmocka_unit_test(test_written_buffers_unroll_and_vec8),
        cmocka_unit_test(test_gemm_row_tiles_per_block),
        cmocka_unit_test(test_gemm_vector_epilogue),
        cmocka_unit_test(test_unread_ids_not_loaded),
        cmocka_unit_test(test_epilogue_in_aggregation),
        cmocka_unit_test(test_compact_dot_in_traversal),
        cmocka_unit_test(test_lane_scalars_compile),
        cmocka_unit_test(test_rgcn_infer_space_compiles),
        cmocka_unit_test(test_rgat_infer_space_compiles),
        cmocka_unit_test(test_hgt_infer_space_compiles),
        cmocka_unit_test(test_rgcn_train_space_compiles),
        cmocka_unit_test(test_rgat_train_space_compiles),
        cmocka_unit_test(test_hgt_train_space_compiles),
    };
    return cmocka_run_group_tests_name("codegen", tests, NULL, NULL);
}
