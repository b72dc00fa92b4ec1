/* Tests of the layer's true floor (codegen/floor.c): bytes and flops of a tiny program worked
 * out by hand, and the floor never above any variant's own analytic counts. */
#include "tests/testutil.h"
#include "tests/kcover.h"
#include "tests/irbuild.h"
#include "codegen/codegen.h"
#include "codegen/counts.h"
#include "codegen/floor.h"
#include "codegen/pipeline.h"
#include "explorer/space.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* One RGCN layer, in 4 out 3, written out by hand:
 *   h = linear(x, W0);  t[e] = linear(x[src], W[etype]);  h[dst] += t[e] * norm[e] */
static ir_program *tiny_rgcn(void)
{
    ir_program *p = irb_new_prog("tiny");
    int x = irb_node_var(p, "x", 1, 4, IR_ROLE_INPUT, 0);
    int h = irb_node_var(p, "h", 1, 3, IR_ROLE_OUTPUT, 0);
    int w0 = irb_var(p, "W0", IR_VAR_WEIGHT, IR_LAYOUT_WEIGHT, IR_ROLE_PARAM, IR_WIDX_NONE, 1, 4, 3, 0);
    int w = irb_var(p, "W", IR_VAR_WEIGHT, IR_LAYOUT_WEIGHT, IR_ROLE_PARAM, IR_WIDX_ETYPE, 1, 4, 3, 0);
    int norm = irb_var(p, "norm", IR_VAR_EDGE, IR_LAYOUT_VANILLA, IR_ROLE_GRAPH, IR_WIDX_NONE, 1, 0, 1, 0);
    int t = irb_var(p, "t", IR_VAR_EDGE, IR_LAYOUT_VANILLA, IR_ROLE_TEMP, IR_WIDX_NONE, 1, 0, 3, 0);
    p->output = h;
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, ((ir_operand){h, IR_ACC_ROW, 0}), 0, ((ir_operand){x, IR_ACC_ROW, 0}),
       ((ir_operand){w0, IR_ACC_ALL, 0}));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, ((ir_operand){t, IR_ACC_ROW, 0}), 0, ((ir_operand){x, IR_ACC_SRC, 0}),
       ((ir_operand){w, IR_ACC_ETYPE, 0}));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, ((ir_operand){h, IR_ACC_DST, 0}), 1, ((ir_operand){t, IR_ACC_ROW, 0}),
       ((ir_operand){norm, IR_ACC_ROW, 0}));
    return p;
}

/* The small graph: 5 nodes, 8 edges and their 8 reverses, 4 edge types; unique (src, etype)
 * pairs: buys {1, 0}, knows {2, 0, 1}, and the reverses {item 0, item 1}, {0, 1, 2}: 10. */
static void test_tiny_floor_by_hand(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    assert_int_equal(g->num_nodes, 5);
    assert_int_equal(g->num_edges, 16);
    assert_int_equal(g->num_etypes, 4);
    assert_int_equal(g->num_unique, 10);
    ir_program *p = tiny_rgcn();
    fl_floor f;
    fl_floor_fill(p, g, &f);
    assert_true(f.input_bytes == 5 * 4 * 4);               /* x; norm derives from the graph */
    assert_true(f.weight_bytes == (12 + 4 * 12) * 4);      /* W0 and W, read once */
    assert_true(f.output_bytes == 5 * 3 * 4);
    /* src and dst per edge, etype as the row pointers of the type-sorted edges (4 + 1 < 5 + 1) */
    assert_true(f.index_bytes == 2 * 16 * 4 + 4 * (4 + 1));
    assert_true(f.bytes == 80 + 240 + 60 + 148);
    /* node linear 2*5*4*3, edge linear on the 10 unique rows 2*10*4*3, the scaling 16*3 */
    assert_true(f.flops == 120 + 240 + 48);
    ir_free(p);
    hg_free(g);
}

static void test_index_bytes_use_the_cheapest_sort_key(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    assert_true(fl_index_bytes(g, 0, 0, 0) == 0);
    assert_true(fl_index_bytes(g, 1, 0, 0) == 4 * (5 + 1));            /* out_ptr alone */
    assert_true(fl_index_bytes(g, 1, 1, 0) == 16 * 4 + 4 * (5 + 1));   /* CSR by dst */
    hg_free(g);
}

static void test_time_floors(void **state)
{
    (void)state;
    fl_floor f = {.bytes = 2e9, .flops = 5e10};
    assert_true(fabs(fl_time_ms(f.bytes, f.flops, 2e12, 1e14) - 1.0) < 1e-12);       /* bandwidth-bound */
    assert_true(fabs(fl_time_ms(f.bytes, f.flops, 2e12, 2.5e12) - 20.0) < 1e-12); /* compute-bound */
    assert_true(isnan(fl_time_ms(f.bytes, f.flops, 0, 1e14)));
    assert_true(isnan(fl_l2_time_ms(&f, 50e6, 1e13, 1e14)));           /* does not fit */
    f.bytes = 40e6;
    f.flops = 0;
    assert_true(fabs(fl_l2_time_ms(&f, 50e6, 1e13, 1e14) - 4e-3) < 1e-12);
}

/* The valid variants of the default space: the floor is at most their analytic counts. A point's counts
 * are its structure's (schedule keys change how kernels run, not what they count: test_costmodel's
 * test_counts_depend_on_structure_only checks it), so one point per structure is checked, and every
 * 4096th other point besides. Under RGNN_TEST_COVER=pairwise (make asan) the points of kc_cover_walk's
 * pairwise walk instead (every pair of values of two keys). */
typedef struct floor_check {
    const kc_space *s;
    pl_problem p;
    hg_graph *g;
    fl_floor f;
    int checked;
} floor_check;

/* Point v checked: 0, or 1 when it does not apply to the problem. */
static int check_point(int v, void *ctx)
{
    floor_check *c = ctx;
    cg_config point = kc_config(c->s, v);
    const cg_config *cfg = &point;
    ir_program *ir;
    lw_program *lp;
    cg_variant var;
    rg_err err;
    int built = pl_build(&c->p, cfg, c->g, NULL, &ir, &lp, &err);
    if (built == PL_INAPPLICABLE) return 1;   /* softmax=single for rgcn: not a variant of this model */
    char *cs = cfg_to_string(cfg);
    if (built || cg_build(ir, lp, cfg, &var, &err)) fail_msg("%s %s %s: %s", c->p.model, c->p.task, cs, err.msg);
    double flops, bytes, atomics;
    int launches;
    cg_counts_fill(ir, &var, c->g, &flops, &bytes, &atomics, &launches);
    if (c->f.bytes > bytes || c->f.flops > flops)
        fail_msg("%s %s %s: floor %.0f bytes %.0f flops above the variant's %.0f bytes %.0f flops", c->p.model,
                 c->p.task, cs, c->f.bytes, c->f.flops, bytes, flops);
    c->checked++;
    free(cs);
    cg_variant_free(&var);
    lw_free(lp);
    ir_free(ir);
    return 0;
}

static void check_space(const char *model, const char *task)
{
    floor_check c = {.s = kc_space_get("default"), .p = {.model = model, .task = task, .dims = {64, 64, 1}}};
    rg_err err;
    c.g = irb_small_graph();
    if (fl_floor_layer(&c.p, c.g, &c.f, &err)) fail_msg("%s %s: %s", model, task, err.msg);
    assert_true(c.f.bytes > 0 && c.f.flops > 0);
    kc_set seen = {0};
    if (kc_cover_pairwise()) {
        unsigned char *built = rg_xcalloc((size_t)c.s->nvalid + 1, 1);
        kc_walk w;
        kc_cover_walk(c.s, &c.p, check_point, &c, &seen, built, &w);
        free(built);
    } else {
        kc_set ok = {0}, refused = {0};
        for (int v = 0; v < c.s->nvalid; v++) {
            uint64_t h = c.s->structure[v];
            if (!kc_set_has(&seen, h)) {
                /* a structure pl_build refuses is refused at every point (RGCN's crsum=defer points: decided
                 * once); an inapplicable point of another leaves it open */
                if (kc_structure_applies(c.s, &c.p, c.g, v, &ok, &refused) && check_point(v, &c) == 0)
                    kc_set_add(&seen, h);
            } else if (c.s->point[v] % 4096 == 0) {
                check_point(v, &c);
            }
        }
        kc_set_free(&ok);
        kc_set_free(&refused);
    }
    assert_true(c.checked > 0);
    printf("%s %s: %d points checked\n", model, task, c.checked);
    kc_set_free(&seen);
    hg_free(c.g);
}

static void test_rgcn_floor_below_variants(void **s) { (void)s; check_space("rgcn", "infer"); check_space("rgcn", "train"); }
static void test_rgat_floor_below_variants(void **s) { (void)s; check_space("rgat", "infer"); check_space("rgat", "train"); }
static void test_hgt_floor_below_variants(void **s) { (void)s; check_space("hgt", "infer"); check_space("hgt", "train"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_floor_by_hand),
        cmocka_unit_test(test_index_bytes_use_the_cheapest_sort_key),
        cmocka_unit_test(test_time_floors),
        cmocka_unit_test(test_rgcn_floor_below_variants),
        cmocka_unit_test(test_rgat_floor_below_variants),
        cmocka_unit_test(test_hgt_floor_below_variants),
    };
    return cmocka_run_group_tests_name("floor", tests, NULL, NULL);
}
