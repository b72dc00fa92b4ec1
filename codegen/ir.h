/* The inter-operator IR: a model program as a list of three-address statements over
 * node, edge and weight variables, with each variable's data layout kept apart from it. */
#ifndef IR_H
#define IR_H

#include <stdint.h>
#include <stdio.h>
#include "common/util.h"

/*
 * Semantics in one page
 * ---------------------
 * Variables are tensors:
 *   node var    [num_nodes][heads][dim]
 *   edge var    [rows][heads][dim], rows = num_edges (layout VANILLA) or num_unique
 *               (layout COMPACT: one row per unique (src, etype) pair; legal only when
 *               the value depends on (src, etype) alone, see pass_compact)
 *   weight      [types][wheads][rows_dim][dim]  (matrix, rows_dim > 0)
 *               [types][wheads][dim]            (vector, rows_dim == 0)
 *               types = num_etypes (WIDX_ETYPE), num_ntypes (WIDX_NTYPE) or 1 (WIDX_NONE)
 *   scalar      [1][1][1] (the loss)
 * Memory order is row-major, so a node/edge row of `heads` x `dim` is also a flat vector
 * of heads*dim values ("heads as a dimension").
 *
 * A statement computes `out (=|+=) op(in...)` for every row of its domain:
 *   DOM_EDGE: every edge e (graph-semantically equal to: every dst node, then each of its
 *             incoming edges; lowering picks the loop form). When `out` is an edge var
 *             with COMPACT layout, the statement is evaluated once per unique (src, etype)
 *             row instead (its operands then depend on (src, etype) only).
 *   DOM_NODE: every node n.
 *   DOM_TYPE: every edge type r (weight-weight products made by reordering).
 *   DOM_GLOBAL: once (loss).
 * Operand access says which row of a variable a statement reads or writes:
 *   ACC_ROW   the statement's own row (edge e / node n / type r)
 *   ACC_SRC   e.src's row of a node var        ACC_DST  e.dst's row of a node var
 *   ACC_ETYPE weight slice W[e.etype] (DOM_EDGE) or W[r] (DOM_TYPE)
 *   ACC_NTYPE weight slice W[n.ntype] (DOM_NODE)
 *   ACC_SRC_NTYPE / ACC_DST_NTYPE  W[ntype of e.src / e.dst]; in DOM_TYPE, of r's src/dst type
 *   ACC_ALL   an unsliced weight (WIDX_NONE) or the scalar
 *   ACC_CONST the literal `cval` (no variable)
 * Reading an edge var with ACC_ROW in DOM_EDGE reads row edge_compact[e] when the var is
 * COMPACT: semantics never change with layout, only addressing does.
 * An output with ACC_DST / ACC_SRC and accumulate=1 is an aggregation (scatter-add):
 *   e.dst["h"] += x  ==  for n: for e in n.incoming_edges(): n["h"] += x.
 * Variables with zero_init are all-zero before the program runs (accumulation targets).
 *
 * Broadcasting in elementwise ops and DOT: an operand with heads == 1 is broadcast over
 * the heads of the other; an operand with dim == 1 is broadcast over its dim.
 *
 * Additions (D1, additive clarifications checked by ir_verify):
 *  - LINEAR with a per-head weight (wheads == H > 1) and an input with heads == 1: the
 *    input row is broadcast to every head, out[h] = x * W[t][h] (reordered HGT uses it).
 *  - COPY between rows of equal width but other (heads, dim) copies the row as a flat
 *    vector (the language's reshape() of a stored value).
 *  - Outputs narrower than the broadcast shape receive the sum over the broadcast axis
 *    (codegen/ref.h states it); ir_verify accepts them.
 *  - Which rows a DOM_EDGE statement runs over (ir_stmt_per_unique() decides it):
 *    once per unique (src, etype) row u when (a) its output is a COMPACT edge var written
 *    with `=`, or (b) its output is a node var at ACC_SRC or a weight slice, written with
 *    `+=`, it reads at least one COMPACT edge var, and every operand depends on (src, etype)
 *    alone (COMPACT edge vars at ROW, node vars at SRC, weights at ETYPE/SRC_NTYPE/ALL,
 *    constants). Case (b) is the backward of a compact value: its COMPACT gradient already
 *    holds the sum over the row's edges, so e.g. dx[src] += dhs * W^T must count each
 *    unique row once. Otherwise once per edge e: COMPACT vars are read at edge_compact[e],
 *    and a COMPACT output written with `+=` (a gradient) adds into row edge_compact[e].
 *    pass_compact never creates case (b) in a forward program.
 *  - In DOM_TYPE, the out/in access ACC_ETYPE (or ACC_ROW) on an etype-indexed weight is
 *    W[r]; ACC_SRC_NTYPE is W[etype_src[r]], ACC_DST_NTYPE is W[etype_dst[r]].
 *  - In DOM_GLOBAL (NLL_LOSS) every operand is read whole with ACC_ALL, the loss is
 *    written with ACC_ALL.
 *  - Reads of a temporary that nothing wrote earlier, and += into a variable that is
 *    neither zero_init nor written earlier, are errors (inputs, graph data, params and
 *    labels count as written).
 */

typedef enum ir_domain { IR_DOM_EDGE, IR_DOM_NODE, IR_DOM_TYPE, IR_DOM_GLOBAL } ir_domain;

typedef enum ir_var_kind { IR_VAR_NODE, IR_VAR_EDGE, IR_VAR_WEIGHT, IR_VAR_SCALAR } ir_var_kind;

typedef enum ir_layout {
    IR_LAYOUT_NODE,     /* node var: one row per node */
    IR_LAYOUT_VANILLA,  /* edge var: one row per edge */
    IR_LAYOUT_COMPACT,  /* edge var: one row per unique (src, etype) */
    IR_LAYOUT_WEIGHT,   /* weight: one slice per type */
    IR_LAYOUT_SCALAR
} ir_layout;

typedef enum ir_widx { IR_WIDX_NONE, IR_WIDX_ETYPE, IR_WIDX_NTYPE } ir_widx;

typedef enum ir_role {
    IR_ROLE_TEMP,      /* produced and consumed inside the program */
    IR_ROLE_INPUT,     /* node features (random, seeded) */
    IR_ROLE_GRAPH,     /* graph-derived input, e.g. e.norm = 1 / |incoming edges of dst with this etype| */
    IR_ROLE_PARAM,     /* a trainable weight (random init, seeded) */
    IR_ROLE_OUTPUT,    /* the layer output */
    IR_ROLE_LOSS,      /* the training loss (scalar) */
    IR_ROLE_LABEL      /* fixed random labels (training), node var of dim 1 holding class ids */
} ir_role;

typedef struct ir_var {
    char name[64];
    ir_var_kind kind;
    ir_layout layout;
    ir_role role;
    ir_widx widx;      /* weights only */
    int heads;         /* node/edge vars: heads; weights: wheads (1 = shared, or per-head) */
    int rows_dim;      /* weights: input dim of a matrix, 0 for a vector */
    int dim;           /* per-head feature width (weights: output width) */
    int zero_init;
    int grad_of;       /* -1, or the id of the variable this is the gradient of */
    int grad;          /* -1, or the id of this variable's gradient (set by autodiff) */
    int bf16;          /* stored as bfloat16 in device memory (codegen/vartype.h, vt_mark_storage) */
} ir_var;

typedef enum ir_opkind {
    IR_OP_LINEAR,     /* out = x * W[t]. wheads==1: flat [heads_x*dim_x] x [rows_dim][dim] -> flat out.
                         wheads==H: per head h: out[h] = x[h] * W[t][h]. With `transpose_w`:
                         x * W[t]^T (backward input gradient). GEMM-eligible. */
    IR_OP_DOT,        /* out[h] = sum_d a[h][d] * b[h][d]   (out dim 1) */
    IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_DIV,   /* elementwise, broadcasting as above */
    IR_OP_EXP,
    IR_OP_LEAKYRELU,  /* slope in cval */
    IR_OP_RELU,
    IR_OP_COPY,
    IR_OP_CONCAT,     /* out = [a, b] along dim (same heads) */
    IR_OP_LEAKYRELU_GRAD, /* out = g * (x > 0 ? 1 : cval); in[0] = g, in[1] = x (backward) */
    IR_OP_RELU_GRAD,      /* out = g * (x > 0) */
    IR_OP_SLICE,      /* out = a[..., off .. off+dim) along dim; off in iarg (concat backward) */
    IR_OP_WEIGHT_MM,  /* DOM_TYPE: out[r] = A[ta(r)] * B[r], weights (reordering). B may be a
                         vector: out[r][h] = A[..] * B[r][h] gives a vector of A's rows_dim. */
    IR_OP_WGRAD,      /* out (a weight gradient) [t] += sum over rows of type t of
                         x[row]^T (outer) dy[row]; in[0] = x, in[1] = dy; out access gives t.
                         For a vector weight (dot product): out[t][h] += dy[row][h] * x[row][h]. */
    IR_OP_NLL_LOSS,   /* DOM_GLOBAL: loss = -(1/N) sum_n log_softmax(x[n])[label[n]]; in[0]=x, in[1]=label */
    IR_OP_NLL_GRAD,   /* DOM_NODE: out[n] = (softmax(x[n]) - onehot(label[n])) * dloss / N;
                         in[0] = x, in[1] = label, in[2] = dloss (scalar) */
    IR_OP_DIV_NZ,     /* out = b != 0 ? a / b : 0, elementwise with DIV's broadcasting: the
                         normalisation of an aggregate by the sum of its weights, where a row
                         that received nothing (b == 0, a == 0) stays 0 (pass_softmax) */
    IR_OP_GELU,       /* out = x * Phi(x), Phi the standard normal CDF (erf form, PyTorch's default) */
    IR_OP_SIGMOID,    /* out = 1 / (1 + exp(-x)) */
    IR_OP_GELU_GRAD,  /* out = g * (Phi(x) + x * phi(x)); in[0] = g, in[1] = x (backward) */
    IR_OP__COUNT
} ir_opkind;

typedef enum ir_access {
    IR_ACC_ROW, IR_ACC_SRC, IR_ACC_DST,
    IR_ACC_ETYPE, IR_ACC_NTYPE, IR_ACC_SRC_NTYPE, IR_ACC_DST_NTYPE,
    IR_ACC_ALL, IR_ACC_CONST
} ir_access;

typedef struct ir_operand {
    int var;           /* -1 for ACC_CONST */
    ir_access acc;
    double cval;       /* ACC_CONST */
} ir_operand;

#define IR_MAX_IN 3

typedef struct ir_stmt {
    ir_opkind op;
    ir_domain dom;
    ir_operand out;    /* out.var is the written variable; out.acc ROW, SRC, DST, or a weight access */
    int accumulate;    /* += instead of = */
    int nin;
    ir_operand in[IR_MAX_IN];
    double cval;       /* LEAKYRELU slope */
    int iarg;          /* SLICE offset */
    int transpose_w;   /* LINEAR: multiply by W^T */
    int backward;      /* emitted by autodiff */
    int line;          /* source line of the model program (0 if synthesized) */
} ir_stmt;

typedef struct ir_dims {
    int in_dim, out_dim, heads;
} ir_dims;

typedef struct ir_program {
    char name[64];
    char source_path[512];
    ir_dims dims;
    int nvars, cap_vars;
    ir_var *vars;
    int nstmts, cap_stmts;
    ir_stmt *stmts;
    int output;        /* var id of the layer output */
    int loss;          /* var id of the loss, or -1 for inference */
    int label;         /* var id of the labels, or -1 */
    int nforward;      /* statements [0, nforward) are the forward pass (incl. loss) */
} ir_program;

/* ---- construction and inspection (codegen/ir.c) ---- */
ir_program *ir_new(const char *name, const ir_dims *dims);
void ir_free(ir_program *p);
ir_program *ir_clone(const ir_program *p);
int ir_add_var(ir_program *p, const ir_var *v);          /* returns id; name must be unique */
int ir_find_var(const ir_program *p, const char *name);  /* id or -1 */
int ir_add_stmt(ir_program *p, const ir_stmt *s);        /* returns index */
void ir_remove_stmt(ir_program *p, int index);
/* Number of rows of a variable on a graph of these sizes (edges, unique pairs, nodes, types). */
int64_t ir_var_rows(const ir_var *v, int64_t nodes, int64_t edges, int64_t unique,
                    int64_t ntypes, int64_t etypes);
int64_t ir_var_row_width(const ir_var *v);               /* values per row (per type for weights) */
/* Checks shapes, accesses and domains of every statement; -1 with the first problem. */
int ir_verify(const ir_program *p, rg_err *err);
/* Readable printout: variables with kind/layout/shape/role, then statements in the
 * model language's terms (e.g. `for e in edges: e["hs"] = linear(e.src["h"], W[e.etype])`). */
void ir_print(const ir_program *p, FILE *f);
const char *ir_op_name(ir_opkind op);
const char *ir_layout_name(ir_layout l);
/* Which variables a statement reads and writes (for dead-code and dependence analysis). */
int ir_stmt_reads(const ir_stmt *s, int var);
/* ir_stmt_reads without the running sum that a `+=` reads of its own output: var is one of s's operands. */
int ir_stmt_reads_operand(const ir_stmt *s, int var);
int ir_stmt_writes(const ir_stmt *s, int var);
/* The one statement that touches var (touches: ir_stmt_reads or ir_stmt_writes), -1 when none does,
 * -2 when several do: the passes' pattern matches ask it of their variables. */
int ir_sole_stmt(const ir_program *p, int var, int (*touches)(const ir_stmt *s, int var));
/* Whether statement `stmt` is the one writer of its output and nothing reads that output before it
 * (nor does the statement itself, but for its own `+=`): then `+=` from a zero-filled start is `=`,
 * and a kernel that runs it over every row in one launch can skip the zero-fill (kp_kernel.covers). */
int ir_first_sole_writer(const ir_program *p, int stmt);
/* Removes statements whose outputs are never read (except outputs, loss and params'
 * gradients) and variables no statement touches. Returns the number removed. */
int ir_remove_dead(ir_program *p);

/* ---- additions (D1) ---- */
/* Inserts a statement before position `index` (0..nstmts); returns index. Both this and
 * ir_add_stmt keep nforward right: a non-backward statement inserted inside the forward
 * part, or appended while the program is all forward, extends it. */
int ir_insert_stmt(ir_program *p, int index, const ir_stmt *s);
/* 1 when a DOM_EDGE statement runs once per unique (src, etype) row (see above). */
int ir_stmt_per_unique(const ir_program *p, const ir_stmt *s);
/* 1 when reading this operand in a DOM_EDGE statement depends on (src, etype) alone. */
int ir_operand_src_etype_only(const ir_program *p, const ir_operand *o);
/* One statement in the printout's form, without newline. */
void ir_print_stmt(const ir_program *p, int index, FILE *f);

#endif
