/* Building small IR programs and a small typed graph by hand, for the tests of the CPU
 * reference and of autodiff (shared so the two check the same graph and the same builders). */
#ifndef IRB_IRBUILD_H
#define IRB_IRBUILD_H

#include "codegen/ir.h"
#include "datasets/hgraph.h"

int irb_var(ir_program *p, const char *name, ir_var_kind kind, ir_layout layout, ir_role role, ir_widx widx,
            int heads, int rows_dim, int dim, int zero_init);
int irb_node_var(ir_program *p, const char *name, int heads, int dim, ir_role role, int zero_init);
/* A statement with up to three operands (unused ones are the constant 0). */
int irb_stmt(ir_program *p, ir_opkind op, ir_domain dom, ir_operand out, int acc, int nin, ir_operand a,
             ir_operand b, ir_operand c);
ir_operand irb_zero(void);
#define S1(p, op, dom, out, acc, a) irb_stmt(p, op, dom, out, acc, 1, a, irb_zero(), irb_zero())
#define S2(p, op, dom, out, acc, a, b) irb_stmt(p, op, dom, out, acc, 2, a, b, irb_zero())
/* Two node types (user 0-2, item 3-4), relations buys user->item and knows user->user, with
 * reverse types: several edges share (src, etype), so compaction matters. */
hg_graph *irb_small_graph(void);
/* An empty program with dims in 4, out 3, one head. */
ir_program *irb_new_prog(const char *name);

#endif
