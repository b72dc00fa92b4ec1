/* Building small IR programs and a small typed graph by hand, for the tests of the CPU
 * reference and of autodiff (shared so the two check the same graph and the same builders). */
#include "tests/irbuild.h"
#include "tests/testutil.h"

#include <stdio.h>

int irb_var(ir_program *p, const char *name, ir_var_kind kind, ir_layout layout, ir_role role, ir_widx widx,
            int heads, int rows_dim, int dim, int zero_init)
{
    ir_var v = {0};
    snprintf(v.name, sizeof v.name, "%s", name);
    v.kind = kind;
    v.layout = layout;
    v.role = role;
    v.widx = widx;
    v.heads = heads;
    v.rows_dim = rows_dim;
    v.dim = dim;
    v.zero_init = zero_init;
    v.grad_of = v.grad = -1;
    return ir_add_var(p, &v);
}

int irb_node_var(ir_program *p, const char *name, int heads, int dim, ir_role role, int zero_init)
{
    return irb_var(p, name, IR_VAR_NODE, IR_LAYOUT_NODE, role, IR_WIDX_NONE, heads, 0, dim, zero_init);
}

ir_operand irb_zero(void) { return (ir_operand){-1, IR_ACC_CONST, 0}; }

int irb_stmt(ir_program *p, ir_opkind op, ir_domain dom, ir_operand out, int acc, int nin, ir_operand a,
             ir_operand b, ir_operand c)
{
    ir_stmt s = {0};
    s.op = op;
    s.dom = dom;
    s.out = out;
    s.accumulate = acc;
    s.nin = nin;
    s.in[0] = a;
    s.in[1] = b;
    s.in[2] = c;
    return ir_add_stmt(p, &s);
}

hg_graph *irb_small_graph(void)
{
    hg_builder *b = hgb_new("small");
    int32_t user = hgb_ntype(b, "user"), item = hgb_ntype(b, "item");
    int32_t buys = hgb_etype(b, "buys", user, item), knows = hgb_etype(b, "knows", user, user);
    int pairs[][3] = {{1, 2, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 1}, {1, 0, 1}, {0, 0, 0}, {1, 0, 2}, {1, 1, 2}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        hgb_add_edge(b, pairs[i][0] ? knows : buys, pairs[i][1], pairs[i][2]);
    rg_err err;
    hg_graph *g = hgb_finish(b, 1, &err);
    assert_non_null(g);
    assert_true(g->num_unique < g->num_edges);
    return g;
}

ir_program *irb_new_prog(const char *name)
{
    ir_dims d = {4, 3, 1};
    return ir_new(name, &d);
}
