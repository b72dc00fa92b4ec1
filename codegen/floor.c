/* The layer's true floor: bytes any implementation must move and flops it must do, from the
 * model's IR and the graph alone (not a variant's plan), and the times they take at ceilings. */
#include "codegen/floor.h"
#include "codegen/counts.h"
#include "codegen/vartype.h"
#include "codegen/config.h"

#include <math.h>

/* Bytes of a whole variable at its stored width. */
static double var_bytes(const ir_var *v, const hg_graph *g)
{
    int64_t rows = ir_var_rows(v, g->num_nodes, g->num_edges, g->num_unique, g->num_ntypes, g->num_etypes);
    return (double)rows * (double)ir_var_row_width(v) * vt_bytes(v);
}

double fl_index_bytes(const hg_graph *g, int need_src, int need_dst, int need_etype)
{
    /* a field the edges are sorted by costs a row-pointer array (its value count + 1) instead
     * of one int32 per edge: keep the per-edge array of every field but the cheapest such */
    double per_edge = 4.0 * g->num_edges, best = INFINITY, sum = 0;
    int n = 0;
    const int need[3] = {need_src, need_dst, need_etype};
    const double values[3] = {g->num_nodes, g->num_nodes, g->num_etypes};
    for (int i = 0; i < 3; i++) {
        if (!need[i]) continue;
        n++;
        sum += per_edge;
        double ptr = 4.0 * (values[i] + 1);
        if (ptr - per_edge < best) best = ptr - per_edge;
    }
    return n ? sum + best : 0;
}

/* Which per-edge fields the edge statements read (weights sliced by type need the etype). */
static void edge_fields(const ir_program *ir, int *src, int *dst, int *etype)
{
    *src = *dst = *etype = 0;
    for (int i = 0; i < ir->nstmts; i++) {
        const ir_stmt *s = &ir->stmts[i];
        if (s->dom != IR_DOM_EDGE) continue;
        for (int k = -1; k < s->nin; k++) {
            ir_access a = (k < 0 ? &s->out : &s->in[k])->acc;
            *src |= a == IR_ACC_SRC || a == IR_ACC_SRC_NTYPE;
            *dst |= a == IR_ACC_DST || a == IR_ACC_DST_NTYPE;
            *etype |= a == IR_ACC_ETYPE;
        }
    }
}

/* An edge statement computing a fresh value from (src, etype)-only operands needs one row
 * per unique (src, etype) pair, whatever layout a variant gives it (pass_compact's rows). */
static double fewest_rows(const ir_program *ir, const ir_stmt *s, const hg_graph *g)
{
    switch (s->dom) {
    case IR_DOM_NODE: return g->num_nodes;
    case IR_DOM_TYPE: return g->num_etypes;
    case IR_DOM_GLOBAL: return 1;
    case IR_DOM_EDGE: break;
    }
    if (ir_stmt_per_unique(ir, s)) return g->num_unique;
    if (s->accumulate) return g->num_edges;
    for (int k = 0; k < s->nin; k++)
        if (!ir_operand_src_etype_only(ir, &s->in[k])) return g->num_edges;
    return g->num_unique;
}

/* Bytes of the variables that cross the layer's boundary, by role. */
static void boundary_bytes(const ir_program *ir, const hg_graph *g, fl_floor *f)
{
    int train = ir->loss >= 0;
    for (int v = 0; v < ir->nvars; v++) {
        const ir_var *x = &ir->vars[v];
        double b = var_bytes(x, g);
        switch (x->role) {
        /* graph-derived inputs (e.g. e.norm) are functions of the index arrays: not counted */
        case IR_ROLE_INPUT: case IR_ROLE_LABEL: f->input_bytes += b; break;
        case IR_ROLE_PARAM: f->weight_bytes += train && x->grad >= 0 ? 2 * b : b; break;
        case IR_ROLE_OUTPUT: case IR_ROLE_LOSS: f->output_bytes += b; break;
        default: break;
        }
    }
}

/* Flops of a program with every statement over its fewest rows, plus the SGD step. */
static double program_flops(const ir_program *ir, const hg_graph *g)
{
    double flops = 0;
    for (int i = 0; i < ir->nstmts; i++) flops += cg_stmt_flops(ir, &ir->stmts[i], fewest_rows(ir, &ir->stmts[i], g));
    /* w -= lr * dw: a multiply and a subtraction per weight value */
    for (int v = 0; v < ir->nvars; v++)
        if (ir->loss >= 0 && ir->vars[v].role == IR_ROLE_PARAM && ir->vars[v].grad >= 0)
            flops += 2 * var_bytes(&ir->vars[v], g) / vt_bytes(&ir->vars[v]);
    return flops;
}

void fl_floor_fill(const ir_program *ir, const hg_graph *g, fl_floor *f)
{
    *f = (fl_floor){0};
    boundary_bytes(ir, g, f);
    int src, dst, etype;
    edge_fields(ir, &src, &dst, &etype);
    f->index_bytes = fl_index_bytes(g, src, dst, etype);
    f->bytes = f->input_bytes + f->weight_bytes + f->index_bytes + f->output_bytes;
    f->flops = program_flops(ir, g);
}

/* The rewrites that change the arithmetic (not just the schedule): compaction and the
 * reordering of linear operators. */
static const char *const REWRITES[] = {"compact=off,reorder=on", "compact=direct,reorder=off",
                                       "compact=direct,reorder=on"};

int fl_floor_layer(const pl_problem *p, const hg_graph *g, fl_floor *f, rg_err *err)
{
    return fl_floor_layer_store(p, g, 0, f, err);
}

int fl_floor_layer_store(const pl_problem *p, const hg_graph *g, int store_bf16, fl_floor *f, rg_err *err)
{
    ir_program *ref = pl_reference_program(p, err);
    if (!ref) return -1;
    /* the reference's variables at the widths store= gives them: its input features (the only
     * bfloat16 variables among the roles the floor counts) at 2 bytes under bf16 */
    vt_mark_storage(ref, store_bf16);
    fl_floor_fill(ref, g, f);
    ir_free(ref);
    for (size_t i = 0; i < sizeof REWRITES / sizeof *REWRITES; i++) {
        cg_config cfg;
        cfg_default(&cfg);
        ir_program *ir;
        lw_program *lp;
        rg_err e;
        /* a rewrite this model cannot take gives no cheaper order: skip it */
        if (cfg_parse(&cfg, REWRITES[i], &e) || cfg_validate(&cfg, &e) || pl_build(p, &cfg, g, NULL, &ir, &lp, &e))
            continue;
        f->flops = fmin(f->flops, program_flops(ir, g));
        lw_free(lp);
        ir_free(ir);
    }
    return 0;
}

double fl_time_ms(double bytes, double flops, double bytes_per_s, double flops_per_s)
{
    if (!(bytes_per_s > 0) || !(flops_per_s > 0)) return NAN;
    return 1e3 * fmax(bytes / bytes_per_s, flops / flops_per_s);
}

double fl_l2_time_ms(const fl_floor *f, double l2_bytes, double l2_bytes_per_s, double flops_per_s)
{
    if (!(l2_bytes > 0) || f->bytes > l2_bytes) return NAN;
    return fl_time_ms(f->bytes, f->flops, l2_bytes_per_s, flops_per_s);
}
