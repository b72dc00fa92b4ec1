/* Analytic counts of a variant from its IR on a given graph: floating-point operations,
 * bytes of device memory each statement must touch, atomic updates, and kernel launches. */
#ifndef CG_COUNTS_H
#define CG_COUNTS_H

#include "codegen/codegen.h"
#include "datasets/hgraph.h"

/* Rows a statement runs over on g (edges, unique pairs, nodes, types or 1). */
int64_t cg_stmt_rows(const ir_program *ir, int stmt, const hg_graph *g);
/* Floating-point operations of one statement over `rows` rows (multiply-adds count 2). */
double cg_stmt_flops(const ir_program *ir, const ir_stmt *s, double rows);
/* Totals for the whole variant. bytes counts each materialized operand of each statement
 * once per distinct row it can touch (a lower bound on traffic: the roofline floor). */
void cg_counts_fill(const ir_program *ir, const cg_variant *v, const hg_graph *g, double *flops, double *bytes,
                    double *atomics, int *launches);

#endif
