/* The inter-operator IR core: building, cloning, verifying, printing programs and
 * removing dead statements. The semantics it checks are documented at the top of ir.h. */
#include "codegen/ir.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ construction */

ir_program *ir_new(const char *name, const ir_dims *dims)
{
    ir_program *p = rg_xcalloc(1, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name ? name : "program");
    if (dims) p->dims = *dims;
    p->output = p->loss = p->label = -1;
    return p;
}

void ir_free(ir_program *p)
{
    if (!p) return;
    free(p->vars);
    free(p->stmts);
    free(p);
}

ir_program *ir_clone(const ir_program *p)
{
    ir_program *c = rg_xmalloc(sizeof *c);
    *c = *p;
    c->cap_vars = p->nvars > 0 ? p->nvars : 1;
    c->cap_stmts = p->nstmts > 0 ? p->nstmts : 1;
    c->vars = rg_xmalloc((size_t)c->cap_vars * sizeof *c->vars);
    c->stmts = rg_xmalloc((size_t)c->cap_stmts * sizeof *c->stmts);
    if (p->nvars) memcpy(c->vars, p->vars, (size_t)p->nvars * sizeof *p->vars);
    if (p->nstmts) memcpy(c->stmts, p->stmts, (size_t)p->nstmts * sizeof *p->stmts);
    return c;
}

int ir_add_var(ir_program *p, const ir_var *v)
{
    RG_ASSERT(v->name[0] != '\0');
    if (ir_find_var(p, v->name) >= 0) RG_DIE("IR variable '%s' added twice", v->name);
    if (p->nvars == p->cap_vars) {
        p->cap_vars = p->cap_vars ? 2 * p->cap_vars : 16;
        p->vars = rg_xrealloc(p->vars, (size_t)p->cap_vars * sizeof *p->vars);
    }
    p->vars[p->nvars] = *v;
    return p->nvars++;
}

int ir_find_var(const ir_program *p, const char *name)
{
    for (int i = 0; i < p->nvars; i++)
        if (!strcmp(p->vars[i].name, name)) return i;
    return -1;
}

/* nforward follows appends while the program is still all-forward, so that building
 * a forward program statement by statement keeps it right without bookkeeping. */
int ir_add_stmt(ir_program *p, const ir_stmt *s)
{
    return ir_insert_stmt(p, p->nstmts, s);
}

int ir_insert_stmt(ir_program *p, int index, const ir_stmt *s)
{
    RG_ASSERT(index >= 0 && index <= p->nstmts);
    if (p->nstmts == p->cap_stmts) {
        p->cap_stmts = p->cap_stmts ? 2 * p->cap_stmts : 32;
        p->stmts = rg_xrealloc(p->stmts, (size_t)p->cap_stmts * sizeof *p->stmts);
    }
    memmove(p->stmts + index + 1, p->stmts + index, (size_t)(p->nstmts - index) * sizeof *p->stmts);
    p->stmts[index] = *s;
    int all_forward = p->nforward == p->nstmts;
    p->nstmts++;
    if (!s->backward && (all_forward || index < p->nforward)) p->nforward++;
    return index;
}

void ir_remove_stmt(ir_program *p, int index)
{
    RG_ASSERT(index >= 0 && index < p->nstmts);
    memmove(p->stmts + index, p->stmts + index + 1, (size_t)(p->nstmts - index - 1) * sizeof *p->stmts);
    p->nstmts--;
    if (index < p->nforward) p->nforward--;
}

int64_t ir_var_rows(const ir_var *v, int64_t nodes, int64_t edges, int64_t unique,
                    int64_t ntypes, int64_t etypes)
{
    switch (v->kind) {
    case IR_VAR_NODE: return nodes;
    case IR_VAR_EDGE: return v->layout == IR_LAYOUT_COMPACT ? unique : edges;
    case IR_VAR_WEIGHT:
        return v->widx == IR_WIDX_ETYPE ? etypes : v->widx == IR_WIDX_NTYPE ? ntypes : 1;
    case IR_VAR_SCALAR: return 1;
    }
    RG_DIE("bad variable kind %d", (int)v->kind);
}

int64_t ir_var_row_width(const ir_var *v)
{
    switch (v->kind) {
    case IR_VAR_NODE:
    case IR_VAR_EDGE: return (int64_t)v->heads * v->dim;
    case IR_VAR_WEIGHT: return (int64_t)v->heads * (v->rows_dim > 0 ? v->rows_dim : 1) * v->dim;
    case IR_VAR_SCALAR: return 1;
    }
    RG_DIE("bad variable kind %d", (int)v->kind);
}

/* ------------------------------------------------------------------ names */

const char *ir_op_name(ir_opkind op)
{
    static const char *const names[IR_OP__COUNT] = {
        [IR_OP_LINEAR] = "linear", [IR_OP_DOT] = "dot", [IR_OP_ADD] = "add",
        [IR_OP_SUB] = "sub", [IR_OP_MUL] = "mul", [IR_OP_DIV] = "div", [IR_OP_EXP] = "exp",
        [IR_OP_LEAKYRELU] = "leakyrelu", [IR_OP_RELU] = "relu", [IR_OP_COPY] = "copy",
        [IR_OP_CONCAT] = "concat", [IR_OP_LEAKYRELU_GRAD] = "leakyrelu_grad",
        [IR_OP_RELU_GRAD] = "relu_grad", [IR_OP_SLICE] = "slice",
        [IR_OP_WEIGHT_MM] = "weight_mm", [IR_OP_WGRAD] = "wgrad",
        [IR_OP_NLL_LOSS] = "nll_loss", [IR_OP_NLL_GRAD] = "nll_grad",
        [IR_OP_DIV_NZ] = "div_nz", [IR_OP_GELU] = "gelu", [IR_OP_SIGMOID] = "sigmoid",
        [IR_OP_GELU_GRAD] = "gelu_grad",
    };
    if ((int)op < 0 || op >= IR_OP__COUNT || !names[op]) return "?";
    return names[op];
}

const char *ir_layout_name(ir_layout l)
{
    switch (l) {
    case IR_LAYOUT_NODE: return "node";
    case IR_LAYOUT_VANILLA: return "vanilla";
    case IR_LAYOUT_COMPACT: return "compact";
    case IR_LAYOUT_WEIGHT: return "weight";
    case IR_LAYOUT_SCALAR: return "scalar";
    }
    return "?";
}

static const char *role_name(ir_role r)
{
    switch (r) {
    case IR_ROLE_TEMP: return "temp";
    case IR_ROLE_INPUT: return "input";
    case IR_ROLE_GRAPH: return "graph";
    case IR_ROLE_PARAM: return "param";
    case IR_ROLE_OUTPUT: return "output";
    case IR_ROLE_LOSS: return "loss";
    case IR_ROLE_LABEL: return "label";
    }
    return "?";
}

static const char *kind_name(ir_var_kind k)
{
    switch (k) {
    case IR_VAR_NODE: return "node";
    case IR_VAR_EDGE: return "edge";
    case IR_VAR_WEIGHT: return "weight";
    case IR_VAR_SCALAR: return "scalar";
    }
    return "?";
}

static const char *domain_name(ir_domain d)
{
    switch (d) {
    case IR_DOM_EDGE: return "edge";
    case IR_DOM_NODE: return "node";
    case IR_DOM_TYPE: return "type";
    case IR_DOM_GLOBAL: return "global";
    }
    return "?";
}

/* ------------------------------------------------------------------ reads / writes */

int ir_stmt_reads_operand(const ir_stmt *s, int var)
{
    for (int i = 0; i < s->nin; i++)
        if (s->in[i].acc != IR_ACC_CONST && s->in[i].var == var) return 1;
    return 0;
}

int ir_stmt_reads(const ir_stmt *s, int var)
{
    /* += reads the previous value: it orders after earlier writers of the variable */
    return ir_stmt_reads_operand(s, var) || (s->accumulate && s->out.var == var);
}

int ir_stmt_writes(const ir_stmt *s, int var)
{
    return s->out.var == var;
}

int ir_sole_stmt(const ir_program *p, int var, int (*touches)(const ir_stmt *s, int var))
{
    int w = -1;
    for (int i = 0; i < p->nstmts; i++)
        if (touches(&p->stmts[i], var)) {
            if (w != -1) return -2;
            w = i;
        }
    return w;
}

int ir_first_sole_writer(const ir_program *p, int stmt)
{
    const ir_stmt *s = &p->stmts[stmt];
    int v = s->out.var;
    if (v < 0 || ir_sole_stmt(p, v, ir_stmt_writes) != stmt) return 0;
    for (int i = 0; i < stmt; i++)
        if (ir_stmt_reads(&p->stmts[i], v)) return 0;
    return !ir_stmt_reads_operand(s, v);
}

/* ------------------------------------------------------------------ verification */

static int op_arity(ir_opkind op)
{
    switch (op) {
    case IR_OP_EXP: case IR_OP_LEAKYRELU: case IR_OP_RELU: case IR_OP_COPY: case IR_OP_SLICE:
    case IR_OP_GELU: case IR_OP_SIGMOID:
        return 1;
    case IR_OP_NLL_GRAD: return 3;
    default: return 2;
    }
}

/* The shape an operand presents to an op: (heads, dim) for rows, plus the matrix input
 * width for weight matrices. Constants and the scalar are (1, 1). */
typedef struct opshape {
    int heads, dim, rows_dim;
    int is_weight, is_matrix;
} opshape;

static opshape operand_shape(const ir_program *p, const ir_operand *o)
{
    opshape sh = {1, 1, 0, 0, 0};
    if (o->acc == IR_ACC_CONST) return sh;
    const ir_var *v = &p->vars[o->var];
    if (v->kind == IR_VAR_SCALAR) return sh;
    sh.heads = v->heads;
    sh.dim = v->dim;
    if (v->kind == IR_VAR_WEIGHT) {
        sh.is_weight = 1;
        sh.rows_dim = v->rows_dim;
        sh.is_matrix = v->rows_dim > 0;
    }
    return sh;
}

static int weight_acc_matches(const ir_var *v, ir_access acc)
{
    switch (acc) {
    case IR_ACC_ETYPE: return v->widx == IR_WIDX_ETYPE;
    case IR_ACC_NTYPE: case IR_ACC_SRC_NTYPE: case IR_ACC_DST_NTYPE: return v->widx == IR_WIDX_NTYPE;
    case IR_ACC_ALL: return v->widx == IR_WIDX_NONE;
    default: return 0;
    }
}

/* Is this access of this variable meaningful inside this domain? (reads and writes) */
static int access_legal(const ir_var *v, ir_domain dom, ir_access acc)
{
    if (v->kind == IR_VAR_SCALAR) return acc == IR_ACC_ALL;
    if (v->kind == IR_VAR_WEIGHT) {
        if (dom == IR_DOM_EDGE)
            return acc != IR_ACC_NTYPE && weight_acc_matches(v, acc);
        if (dom == IR_DOM_NODE)
            return (acc == IR_ACC_NTYPE || acc == IR_ACC_ALL) && weight_acc_matches(v, acc);
        if (dom == IR_DOM_TYPE) {
            if (acc == IR_ACC_ROW) return v->widx == IR_WIDX_ETYPE;
            return acc != IR_ACC_NTYPE && weight_acc_matches(v, acc);
        }
        return acc == IR_ACC_ALL;   /* global: the whole weight */
    }
    if (dom == IR_DOM_GLOBAL) return acc == IR_ACC_ALL;
    if (v->kind == IR_VAR_EDGE) return dom == IR_DOM_EDGE && acc == IR_ACC_ROW;
    /* node variable */
    if (dom == IR_DOM_EDGE) return acc == IR_ACC_SRC || acc == IR_ACC_DST;
    return dom == IR_DOM_NODE && acc == IR_ACC_ROW;
}

static const char *acc_name(ir_access a)
{
    static const char *const n[] = {"ROW", "SRC", "DST", "ETYPE", "NTYPE", "SRC_NTYPE",
                                    "DST_NTYPE", "ALL", "CONST"};
    return (unsigned)a < sizeof n / sizeof n[0] ? n[a] : "?";
}

int ir_operand_src_etype_only(const ir_program *p, const ir_operand *o)
{
    if (o->acc == IR_ACC_CONST || o->acc == IR_ACC_ALL) return 1;
    const ir_var *v = &p->vars[o->var];
    switch (o->acc) {
    case IR_ACC_SRC: case IR_ACC_ETYPE: case IR_ACC_SRC_NTYPE: return 1;
    case IR_ACC_ROW: return v->kind == IR_VAR_EDGE && v->layout == IR_LAYOUT_COMPACT;
    default: return 0;
    }
}

int ir_stmt_per_unique(const ir_program *p, const ir_stmt *s)
{
    if (s->dom != IR_DOM_EDGE) return 0;
    const ir_var *o = &p->vars[s->out.var];
    if (o->kind == IR_VAR_EDGE && o->layout == IR_LAYOUT_COMPACT) return !s->accumulate;
    int scatter_out = (o->kind == IR_VAR_NODE && s->out.acc == IR_ACC_SRC) || o->kind == IR_VAR_WEIGHT;
    if (!scatter_out || !s->accumulate || !ir_operand_src_etype_only(p, &s->out)) return 0;
    int reads_compact = 0;
    for (int i = 0; i < s->nin; i++) {
        const ir_operand *in = &s->in[i];
        if (!ir_operand_src_etype_only(p, in)) return 0;
        if (in->acc == IR_ACC_ROW && p->vars[in->var].kind == IR_VAR_EDGE) reads_compact = 1;
    }
    return reads_compact;
}

static int broadcast_ok(int a, int b) { return a == b || a == 1 || b == 1; }
static int max_int(int a, int b) { return a > b ? a : b; }

#define VFAIL(...) do { rg_errf(err, __VA_ARGS__); goto fail; } while (0)

/* An output of (oh, od) can take a broadcast result of (h, d): the same size, a wider
 * output of a size-1 axis (broadcast), or a narrower size-1 output that receives the sum
 * over the axis (the adjoint of broadcasting, codegen/ref.h). */
static int out_fits(int oh, int od, int h, int d)
{
    return (oh == h || oh == 1 || h == 1) && (od == d || od == 1 || d == 1);
}

#define OUT_FITS_OR_FAIL(H, D)                                                                     \
    do {                                                                                           \
        if (!out_fits(o.heads, o.dim, (H), (D)))                                                   \
            VFAIL("%s output %dx%d cannot hold %dx%d", ir_op_name(s->op), o.heads, o.dim, (H), (D)); \
    } while (0)

static int check_linear(const opshape *a, const opshape *b, const opshape *po, const ir_stmt *s, rg_err *err)
{
    opshape o = *po;
    if (!b->is_matrix) VFAIL("linear needs a weight matrix as its second operand");
    if (a->is_weight || o.is_weight) VFAIL("linear maps rows, not weights");
    int kin = s->transpose_w ? b->dim : b->rows_dim, kout = s->transpose_w ? b->rows_dim : b->dim;
    if (b->heads == 1) {
        if (a->heads * a->dim != kin) VFAIL("linear input is %d wide, weight expects %d", a->heads * a->dim, kin);
        if (o.heads * o.dim != kout) VFAIL("linear output is %d wide, weight gives %d", o.heads * o.dim, kout);
        return 0;
    }
    if (a->heads != 1 && a->heads != b->heads)
        VFAIL("linear input has %d heads, per-head weight has %d", a->heads, b->heads);
    if (a->dim != kin) VFAIL("linear input is %d wide per head, weight expects %d", a->dim, kin);
    if ((o.heads != b->heads && o.heads != 1) || o.dim != kout)
        VFAIL("linear output is %dx%d, per-head weight gives %dx%d", o.heads, o.dim, b->heads, kout);
    return 0;
fail:
    return -1;
}

static int check_weight_mm(const opshape *a, const opshape *b, const opshape *o, rg_err *err)
{
    if (!o->is_weight || !a->is_matrix || !b->is_weight)
        VFAIL("weight_mm needs a weight matrix times a weight into a weight");
    int kb = b->is_matrix ? b->rows_dim : b->dim;
    int per_head = b->heads > 1 && a->heads == 1;
    if (a->heads != 1 && a->heads != b->heads) VFAIL("weight_mm heads %d vs %d", a->heads, b->heads);
    if (a->dim != (per_head ? b->heads * kb : kb))
        VFAIL("weight_mm inner widths %d and %d do not match", a->dim, per_head ? b->heads * kb : kb);
    int want_rows = b->is_matrix ? a->rows_dim : 0, want_dim = b->is_matrix ? b->dim : a->rows_dim;
    if (o->heads != b->heads || o->rows_dim != want_rows || o->dim != want_dim)
        VFAIL("weight_mm result must be %d heads of (%d, %d)", b->heads, want_rows, want_dim);
    return 0;
fail:
    return -1;
}

static int check_wgrad(const opshape *a, const opshape *b, const opshape *o, rg_err *err)
{
    if (!o->is_weight) VFAIL("wgrad must write a weight gradient");
    if (a->is_weight || b->is_weight) return 0;   /* DOM_TYPE products: ref.h's matrix rules */
    if (o->is_matrix) {
        int kin = o->heads == 1 ? a->heads * a->dim : a->dim, kout = o->heads == 1 ? b->heads * b->dim : b->dim;
        if (kin != o->rows_dim || kout != o->dim)
            VFAIL("wgrad outer product %dx%d into a (%d, %d) weight", kin, kout, o->rows_dim, o->dim);
    } else if (!out_fits(o->heads, o->dim, a->heads > b->heads ? a->heads : b->heads, a->dim > b->dim ? a->dim : b->dim)
               || (b->dim != 1 && b->dim != o->dim) || !broadcast_ok(a->heads, b->heads)) {
        VFAIL("wgrad of a vector weight %dx%d from %dx%d and %dx%d", o->heads, o->dim, a->heads, a->dim, b->heads,
              b->dim);
    }
    return 0;
fail:
    return -1;
}

/* Shape rules of each op (ir.h, with ref.h's reductions). 0 or -1 with a message. */
static int check_shapes(const ir_program *p, const ir_stmt *s, rg_err *err)
{
    opshape o = operand_shape(p, &s->out);
    opshape a = s->nin > 0 ? operand_shape(p, &s->in[0]) : o;
    opshape b = s->nin > 1 ? operand_shape(p, &s->in[1]) : o;
    switch (s->op) {
    case IR_OP_LINEAR: return check_linear(&a, &b, &o, s, err);
    case IR_OP_DOT:
        if (a.is_matrix || b.is_matrix) VFAIL("dot of a weight matrix");
        if (!broadcast_ok(a.heads, b.heads) || !broadcast_ok(a.dim, b.dim))
            VFAIL("dot operands %dx%d and %dx%d do not match", a.heads, a.dim, b.heads, b.dim);
        OUT_FITS_OR_FAIL(max_int(a.heads, b.heads), 1);
        return 0;
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_DIV_NZ:
    case IR_OP_LEAKYRELU_GRAD: case IR_OP_RELU_GRAD: case IR_OP_GELU_GRAD:
        if (a.is_matrix || b.is_matrix) VFAIL("%s of a weight matrix", ir_op_name(s->op));
        if (!broadcast_ok(a.heads, b.heads) || !broadcast_ok(a.dim, b.dim))
            VFAIL("%s operands %dx%d and %dx%d do not broadcast", ir_op_name(s->op), a.heads, a.dim, b.heads, b.dim);
        OUT_FITS_OR_FAIL(max_int(a.heads, b.heads), max_int(a.dim, b.dim));
        return 0;
    case IR_OP_EXP: case IR_OP_LEAKYRELU: case IR_OP_RELU: case IR_OP_COPY: case IR_OP_GELU: case IR_OP_SIGMOID:
        if (a.is_matrix != o.is_matrix || (a.is_matrix && a.rows_dim != o.rows_dim))
            VFAIL("%s between a matrix and a non-matrix", ir_op_name(s->op));
        /* COPY between equal row widths of other (heads, dim) is a reshape (flat copy) */
        if (s->op == IR_OP_COPY && !a.is_weight && o.heads * o.dim == a.heads * a.dim) return 0;
        OUT_FITS_OR_FAIL(a.heads, a.dim);
        return 0;
    case IR_OP_CONCAT:
        if (a.heads != b.heads || (o.heads != a.heads && o.heads != 1) || o.dim != a.dim + b.dim)
            VFAIL("concat of %dx%d and %dx%d into %dx%d", a.heads, a.dim, b.heads, b.dim, o.heads, o.dim);
        return 0;
    case IR_OP_SLICE:
        if (!out_fits(o.heads, 1, a.heads, 1) || s->iarg < 0 || s->iarg + o.dim > a.dim)
            VFAIL("slice [%d, %d) of a %d-wide value", s->iarg, s->iarg + o.dim, a.dim);
        return 0;
    case IR_OP_WEIGHT_MM:
        if (s->transpose_w || s->backward) return o.is_weight ? 0 : rg_errf(err, "weight_mm must write a weight");
        return check_weight_mm(&a, &b, &o, err);
    case IR_OP_WGRAD: return check_wgrad(&a, &b, &o, err);
    case IR_OP_NLL_LOSS:
        if (b.heads != 1 || b.dim != 1) VFAIL("nll_loss labels must be 1 wide");
        return 0;
    case IR_OP_NLL_GRAD:
        if (b.heads != 1 || b.dim != 1) VFAIL("nll_grad labels must be 1 wide");
        if (o.heads * o.dim != a.heads * a.dim) VFAIL("nll_grad output must match its input");
        return 0;
    default:
        return 0;   /* ops added later: their operands' accesses are still checked */
    }
fail:
    return -1;
}

static int check_out(const ir_program *p, const ir_stmt *s, rg_err *err)
{
    const ir_var *v = &p->vars[s->out.var];
    if (s->out.acc == IR_ACC_CONST) VFAIL("writes a constant");
    if (!access_legal(v, s->dom, s->out.acc))
        VFAIL("cannot write '%s' (%s var) with access %s in a %s loop", v->name, kind_name(v->kind),
              acc_name(s->out.acc), domain_name(s->dom));
    int scatter = (v->kind == IR_VAR_NODE && s->dom == IR_DOM_EDGE)
                  || (v->kind == IR_VAR_WEIGHT && s->dom != IR_DOM_TYPE && s->dom != IR_DOM_GLOBAL
                      && s->out.acc != IR_ACC_ROW);
    if (scatter && !s->accumulate)
        VFAIL("'%s' is written by many rows: it needs += (aggregation)", v->name);
    if (v->kind == IR_VAR_EDGE && v->layout == IR_LAYOUT_COMPACT && !s->accumulate)
        for (int i = 0; i < s->nin; i++)
            if (!ir_operand_src_etype_only(p, &s->in[i]))
                VFAIL("compact '%s' computed from an operand that depends on more than (src, etype)",
                      v->name);
    return 0;
fail:
    return -1;
}

static int check_stmt(const ir_program *p, const ir_stmt *s, const char *written, rg_err *err)
{
    if ((int)s->op < 0 || s->op >= IR_OP__COUNT) VFAIL("unknown op %d", (int)s->op);
    if ((unsigned)s->dom > IR_DOM_GLOBAL) VFAIL("unknown domain %d", (int)s->dom);
    if (s->nin != op_arity(s->op) || s->nin > IR_MAX_IN)
        VFAIL("%s takes %d operands, has %d", ir_op_name(s->op), op_arity(s->op), s->nin);
    if (s->out.var < 0 || s->out.var >= p->nvars) VFAIL("output variable %d out of range", s->out.var);
    for (int i = 0; i < s->nin; i++) {
        const ir_operand *o = &s->in[i];
        if (o->acc == IR_ACC_CONST) continue;
        if (o->var < 0 || o->var >= p->nvars) VFAIL("operand %d: variable %d out of range", i, o->var);
        const ir_var *v = &p->vars[o->var];
        if (!access_legal(v, s->dom, o->acc))
            VFAIL("cannot read '%s' (%s var) with access %s in a %s loop", v->name, kind_name(v->kind),
                  acc_name(o->acc), domain_name(s->dom));
        if (!written[o->var]) VFAIL("reads '%s' before anything writes it", v->name);
    }
    if (s->accumulate && !written[s->out.var])
        VFAIL("accumulates into '%s', which is neither zero_init nor written before",
              p->vars[s->out.var].name);
    if (check_out(p, s, err) < 0) return -1;
    return check_shapes(p, s, err);
fail:
    return -1;
}

static int check_var(const ir_var *v, rg_err *err)
{
    if (v->heads < 1 || v->dim < 1 || v->rows_dim < 0) VFAIL("bad shape %dx%d", v->heads, v->dim);
    switch (v->kind) {
    case IR_VAR_NODE:
        if (v->layout != IR_LAYOUT_NODE) VFAIL("node variable with %s layout", ir_layout_name(v->layout));
        break;
    case IR_VAR_EDGE:
        if (v->layout != IR_LAYOUT_VANILLA && v->layout != IR_LAYOUT_COMPACT)
            VFAIL("edge variable with %s layout", ir_layout_name(v->layout));
        break;
    case IR_VAR_WEIGHT:
        if (v->layout != IR_LAYOUT_WEIGHT) VFAIL("weight with %s layout", ir_layout_name(v->layout));
        break;
    case IR_VAR_SCALAR:
        if (v->layout != IR_LAYOUT_SCALAR) VFAIL("scalar with %s layout", ir_layout_name(v->layout));
        break;
    default: VFAIL("unknown kind %d", (int)v->kind);
    }
    return 0;
fail:
    return -1;
}

static int initially_defined(const ir_var *v)
{
    return v->zero_init || v->role == IR_ROLE_INPUT || v->role == IR_ROLE_GRAPH
           || v->role == IR_ROLE_PARAM || v->role == IR_ROLE_LABEL;
}

int ir_verify(const ir_program *p, rg_err *err)
{
    rg_err local;
    if (!err) err = &local;
    if (p->nforward < 0 || p->nforward > p->nstmts)
        return rg_errf(err, "%s: nforward %d outside [0, %d]", p->name, p->nforward, p->nstmts);
    for (int i = 0; i < p->nvars; i++)
        if (check_var(&p->vars[i], err) < 0) {
            rg_err_prefix(err, "%s: variable '%s'", p->name, p->vars[i].name);
            return -1;
        }
    int ids[3] = {p->output, p->loss, p->label};
    for (int i = 0; i < 3; i++)
        if (ids[i] < -1 || ids[i] >= p->nvars) return rg_errf(err, "%s: bad output/loss/label id", p->name);
    if (p->output < 0) return rg_errf(err, "%s: no output variable", p->name);
    char *written = rg_xcalloc((size_t)p->nvars + 1, 1);
    for (int i = 0; i < p->nvars; i++) written[i] = (char)initially_defined(&p->vars[i]);
    int rc = 0;
    for (int i = 0; i < p->nstmts && rc == 0; i++) {
        if (check_stmt(p, &p->stmts[i], written, err) < 0) {
            rg_err_prefix(err, "%s: statement %d (%s, line %d)", p->name, i,
                          ir_op_name(p->stmts[i].op), p->stmts[i].line);
            rc = -1;
        }
        written[p->stmts[i].out.var] = 1;
    }
    if (rc == 0 && !written[p->output]) rc = rg_errf(err, "%s: the output is never written", p->name);
    free(written);
    return rc;
}

/* ------------------------------------------------------------------ printing */

static void print_shape(const ir_var *v, FILE *f)
{
    switch (v->kind) {
    case IR_VAR_NODE: fprintf(f, "[nodes][%d][%d]", v->heads, v->dim); break;
    case IR_VAR_EDGE:
        fprintf(f, "[%s][%d][%d]", v->layout == IR_LAYOUT_COMPACT ? "unique(src,etype)" : "edges",
                v->heads, v->dim);
        break;
    case IR_VAR_WEIGHT:
        fprintf(f, "[%s][%d]", v->widx == IR_WIDX_ETYPE ? "etypes" : v->widx == IR_WIDX_NTYPE ? "ntypes" : "1",
                v->heads);
        if (v->rows_dim > 0) fprintf(f, "[%d]", v->rows_dim);
        fprintf(f, "[%d]", v->dim);
        break;
    case IR_VAR_SCALAR: fprintf(f, "[1]"); break;
    }
}

static void print_var(const ir_program *p, int id, FILE *f)
{
    const ir_var *v = &p->vars[id];
    fprintf(f, "  %-3d %-16s %-6s %-8s ", id, v->name, kind_name(v->kind), ir_layout_name(v->layout));
    print_shape(v, f);
    fprintf(f, "  %s", role_name(v->role));
    if (v->zero_init) fprintf(f, " zero_init");
    if (v->grad_of >= 0 && v->grad_of < p->nvars) fprintf(f, " grad_of=%s", p->vars[v->grad_of].name);
    fputc('\n', f);
}

/* Inputs and graph data print as attributes (n.feature, e.norm), as the language reads them. */
static int attr_style(const ir_var *v) { return v->role == IR_ROLE_INPUT || v->role == IR_ROLE_GRAPH; }

static void print_operand(const ir_program *p, const ir_stmt *s, const ir_operand *o, FILE *f)
{
    if (o->acc == IR_ACC_CONST) {
        fprintf(f, "%.17g", o->cval);
        return;
    }
    const char *name = p->vars[o->var].name;
    int type_dom = s->dom == IR_DOM_TYPE;
    switch (o->acc) {
    case IR_ACC_ROW:
        if (p->vars[o->var].kind == IR_VAR_WEIGHT) fprintf(f, "%s[r]", name);
        else if (attr_style(&p->vars[o->var])) fprintf(f, "%s.%s", s->dom == IR_DOM_EDGE ? "e" : "n", name);
        else fprintf(f, "%s[\"%s\"]", s->dom == IR_DOM_EDGE ? "e" : "n", name);
        break;
    case IR_ACC_SRC:
    case IR_ACC_DST:
        fprintf(f, attr_style(&p->vars[o->var]) ? "e.%s.%s" : "e.%s[\"%s\"]", o->acc == IR_ACC_SRC ? "src" : "dst",
                name);
        break;
    case IR_ACC_ETYPE: fprintf(f, type_dom ? "%s[r]" : "%s[e.etype]", name); break;
    case IR_ACC_NTYPE: fprintf(f, "%s[n.ntype]", name); break;
    case IR_ACC_SRC_NTYPE: fprintf(f, type_dom ? "%s[r.src_ntype]" : "%s[e.src.ntype]", name); break;
    case IR_ACC_DST_NTYPE: fprintf(f, type_dom ? "%s[r.dst_ntype]" : "%s[e.dst.ntype]", name); break;
    case IR_ACC_ALL: fprintf(f, "%s", name); break;
    case IR_ACC_CONST: break;
    }
}

static void print_binary(const ir_program *p, const ir_stmt *s, const char *sym, FILE *f)
{
    print_operand(p, s, &s->in[0], f);
    fprintf(f, " %s ", sym);
    print_operand(p, s, &s->in[1], f);
}

static void print_call(const ir_program *p, const ir_stmt *s, const char *fn, FILE *f)
{
    fprintf(f, "%s(", fn);
    for (int i = 0; i < s->nin; i++) {
        if (i) fprintf(f, ", ");
        print_operand(p, s, &s->in[i], f);
        if (s->op == IR_OP_LINEAR && i == 1 && s->transpose_w) fprintf(f, "^T");
    }
    if (s->op == IR_OP_LEAKYRELU || s->op == IR_OP_LEAKYRELU_GRAD) fprintf(f, ", %g", s->cval);
    if (s->op == IR_OP_SLICE) fprintf(f, ", %d, %d", s->iarg, p->vars[s->out.var].dim);
    fputc(')', f);
}

static void print_rhs(const ir_program *p, const ir_stmt *s, FILE *f)
{
    switch (s->op) {
    case IR_OP_ADD: print_binary(p, s, "+", f); break;
    case IR_OP_SUB: print_binary(p, s, "-", f); break;
    case IR_OP_MUL: print_binary(p, s, "*", f); break;
    case IR_OP_DIV: print_binary(p, s, "/", f); break;
    case IR_OP_WEIGHT_MM: print_binary(p, s, "@", f); break;
    case IR_OP_COPY: print_operand(p, s, &s->in[0], f); break;
    case IR_OP_WGRAD: print_call(p, s, "outer", f); break;
    default: print_call(p, s, ir_op_name(s->op), f); break;
    }
}

static const char *loop_header(ir_domain d)
{
    switch (d) {
    case IR_DOM_EDGE: return "for e in g.edges():";
    case IR_DOM_NODE: return "for n in g.nodes():";
    case IR_DOM_TYPE: return "for r in g.etypes():";
    case IR_DOM_GLOBAL: return "once:";
    }
    return "?";
}

void ir_print_stmt(const ir_program *p, int index, FILE *f)
{
    const ir_stmt *s = &p->stmts[index];
    /* a statement computed once per unique (src, etype) row says so in its loop */
    fprintf(f, "%-20s ", ir_stmt_per_unique(p, s) ? "for e in unique(src,etype):" : loop_header(s->dom));
    print_operand(p, s, &s->out, f);
    fprintf(f, " %s ", s->accumulate ? "+=" : "=");
    print_rhs(p, s, f);
}

void ir_print(const ir_program *p, FILE *f)
{
    fprintf(f, "program %s (in %d, out %d, heads %d)\n", p->name, p->dims.in_dim, p->dims.out_dim,
            p->dims.heads);
    fprintf(f, "variables (id name kind layout [rows][heads][dim] role):\n");
    for (int i = 0; i < p->nvars; i++) print_var(p, i, f);
    fprintf(f, "statements:\n");
    for (int i = 0; i < p->nstmts; i++) {
        if (i == p->nforward && p->nforward < p->nstmts) fprintf(f, "  -- backward --\n");
        fprintf(f, "  %3d  ", i);
        ir_print_stmt(p, i, f);
        if (p->stmts[i].line > 0) fprintf(f, "    # line %d", p->stmts[i].line);
        fputc('\n', f);
    }
}

/* ------------------------------------------------------------------ dead code */

static int var_is_root(const ir_program *p, int id)
{
    const ir_var *v = &p->vars[id];
    if (id == p->output || id == p->loss) return 1;
    if (v->role == IR_ROLE_OUTPUT || v->role == IR_ROLE_LOSS) return 1;
    /* gradients of params and inputs are the results of the backward pass */
    if (v->grad_of >= 0 && v->grad_of < p->nvars) {
        ir_role r = p->vars[v->grad_of].role;
        return r == IR_ROLE_PARAM || r == IR_ROLE_INPUT;
    }
    return 0;
}

/* Marks live statements: those writing a live variable. A variable read by a live
 * statement is live; every writer of a live variable (e.g. all += parts) is live. */
static char *live_statements(const ir_program *p)
{
    char *live_var = rg_xcalloc((size_t)p->nvars + 1, 1);
    char *live_stmt = rg_xcalloc((size_t)p->nstmts + 1, 1);
    for (int i = 0; i < p->nvars; i++) live_var[i] = (char)var_is_root(p, i);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = p->nstmts - 1; i >= 0; i--) {
            const ir_stmt *s = &p->stmts[i];
            if (live_stmt[i] || !live_var[s->out.var]) continue;
            live_stmt[i] = 1;
            changed = 1;
            for (int k = 0; k < s->nin; k++)
                if (s->in[k].acc != IR_ACC_CONST) live_var[s->in[k].var] = 1;
        }
    }
    free(live_var);
    return live_stmt;
}

static void remove_unused_vars(ir_program *p, int *removed)
{
    char *used = rg_xcalloc((size_t)p->nvars + 1, 1);
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        used[s->out.var] = 1;
        for (int k = 0; k < s->nin; k++)
            if (s->in[k].acc != IR_ACC_CONST) used[s->in[k].var] = 1;
    }
    int keep[3] = {p->output, p->loss, p->label};
    for (int i = 0; i < 3; i++)
        if (keep[i] >= 0) used[keep[i]] = 1;
    int *remap = rg_xmalloc(((size_t)p->nvars + 1) * sizeof *remap);
    int n = 0;
    for (int i = 0; i < p->nvars; i++) {
        remap[i] = used[i] ? n : -1;
        if (used[i]) p->vars[n++] = p->vars[i];
        else (*removed)++;
    }
    for (int i = 0; i < n; i++) {
        ir_var *v = &p->vars[i];
        if (v->grad_of >= 0) v->grad_of = remap[v->grad_of];
        if (v->grad >= 0) v->grad = remap[v->grad];
    }
    for (int i = 0; i < p->nstmts; i++) {
        ir_stmt *s = &p->stmts[i];
        s->out.var = remap[s->out.var];
        for (int k = 0; k < s->nin; k++)
            if (s->in[k].acc != IR_ACC_CONST) s->in[k].var = remap[s->in[k].var];
    }
    if (p->output >= 0) p->output = remap[p->output];
    if (p->loss >= 0) p->loss = remap[p->loss];
    if (p->label >= 0) p->label = remap[p->label];
    p->nvars = n;
    free(remap);
    free(used);
}

int ir_remove_dead(ir_program *p)
{
    char *live = live_statements(p);
    int removed = 0;
    for (int i = p->nstmts - 1; i >= 0; i--)
        if (!live[i]) {
            ir_remove_stmt(p, i);
            removed++;
        }
    free(live);
    remove_unused_vars(p, &removed);
    return removed;
}
