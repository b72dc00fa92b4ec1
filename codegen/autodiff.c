/* Reverse-mode autodiff of the inter-operator IR: single-assignment renaming, activity
 * analysis, the op -> backward-statements table, and dead-gradient removal. */
#include "codegen/autodiff.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

static int is_var(const ir_operand *o) { return o->acc != IR_ACC_CONST && o->var >= 0; }

static ir_operand opv(int var, ir_access acc) { return (ir_operand){var, acc, 0}; }
static ir_operand opc(double c) { return (ir_operand){-1, IR_ACC_CONST, c}; }

/* A variable name not used yet: base, else base_2, base_3, ... */
static void unique_name(const ir_program *p, const char *base, char out[64])
{
    snprintf(out, 64, "%.60s", base);
    for (int k = 2; ir_find_var(p, out) >= 0; k++) snprintf(out, 64, "%.52s_%d", base, k);
}

static int is_data_role(ir_role r)
{
    return r == IR_ROLE_INPUT || r == IR_ROLE_PARAM || r == IR_ROLE_GRAPH || r == IR_ROLE_LABEL;
}

/* ------------------------------------------------------------------ single assignment */

/* Pass 1: which statements start a new version of their output, and versions per var. */
static int count_versions(const ir_program *p, int *nver, char *starts, rg_err *err)
{
    char *read_since = rg_xcalloc((size_t)p->nvars + 1, 1);
    int rc = 0;
    for (int i = 0; i < p->nstmts && rc == 0; i++) {
        const ir_stmt *s = &p->stmts[i];
        int o = s->out.var, reads_self = 0;
        for (int k = 0; k < s->nin; k++) reads_self |= is_var(&s->in[k]) && s->in[k].var == o;
        if (is_data_role(p->vars[o].role)) {
            rc = rg_errf(err, "%s: statement %d writes the input '%s'", p->name, i, p->vars[o].name);
            break;
        }
        if (s->accumulate && (read_since[o] || reads_self)) {
            rc = rg_errf(err, "%s: statement %d adds into '%s' after it was read: autodiff needs each "
                         "value complete before use", p->name, i, p->vars[o].name);
            break;
        }
        int fresh = nver[o] == 0 || !s->accumulate;
        for (int k = 0; k < s->nin; k++)
            if (is_var(&s->in[k]) && s->in[k].var != o) read_since[s->in[k].var] = 1;
        if (fresh) {
            starts[i] = 1;
            nver[o]++;
            read_since[o] = 0;
        }
    }
    free(read_since);
    return rc;
}

/* Id of version k of v: the last version keeps v's id, earlier ones are new variables. */
static int version_id(int v, int k, const int *nver, const int *first_new)
{
    return k >= nver[v] - 1 ? v : first_new[v] + k;
}

static int make_single_assignment(ir_program *p, rg_err *err)
{
    int n0 = p->nvars;
    int *nver = rg_xcalloc((size_t)n0 + 1, sizeof *nver);
    char *starts = rg_xcalloc((size_t)p->nstmts + 1, 1);
    if (count_versions(p, nver, starts, err) < 0) {
        free(nver);
        free(starts);
        return -1;
    }
    int *first_new = rg_xcalloc((size_t)n0 + 1, sizeof *first_new);
    for (int v = 0; v < n0; v++) {
        first_new[v] = p->nvars;
        for (int k = 0; k + 1 < nver[v]; k++) {
            ir_var nv = p->vars[v];
            char base[80];
            snprintf(base, sizeof base, "%.60s.%d", p->vars[v].name, k);
            unique_name(p, base, nv.name);
            nv.role = IR_ROLE_TEMP;
            nv.grad = nv.grad_of = -1;
            nv.zero_init = k == 0 ? p->vars[v].zero_init : 0;
            ir_add_var(p, &nv);
        }
    }
    int *cur = rg_xmalloc(((size_t)n0 + 1) * sizeof *cur);
    for (int v = 0; v < n0; v++) cur[v] = -1;
    for (int i = 0; i < p->nstmts; i++) {
        ir_stmt *s = &p->stmts[i];
        for (int k = 0; k < s->nin; k++)
            if (is_var(&s->in[k]) && s->in[k].var < n0) {
                int v = s->in[k].var;
                s->in[k].var = version_id(v, cur[v] < 0 ? 0 : cur[v], nver, first_new);
            }
        int o = s->out.var;
        if (o < n0) {
            if (starts[i]) cur[o]++;
            s->out.var = version_id(o, cur[o], nver, first_new);
        }
    }
    free(cur);
    free(first_new);
    free(nver);
    free(starts);
    return 0;
}

/* ------------------------------------------------------------------ differentiation */

typedef struct adctx {
    ir_program *p;
    rg_err *err;
    char *active;          /* [nvars of the forward program]: depends on an input or param */
    int nactive;
    ir_stmt f;             /* the forward statement being differentiated (a copy) */
    int f_index;
    int f_per_unique;
    int ntemps;
} adctx;

static int grad_var(ir_program *p, int v)
{
    if (p->vars[v].grad >= 0) return p->vars[v].grad;
    ir_var g = p->vars[v];
    char base[80];
    snprintf(base, sizeof base, "d_%.60s", p->vars[v].name);
    unique_name(p, base, g.name);
    g.role = IR_ROLE_TEMP;
    g.zero_init = 1;
    g.grad_of = v;
    g.grad = -1;
    int id = ir_add_var(p, &g);
    p->vars[v].grad = id;
    return id;
}

/* A temporary row variable of the forward statement's row space (edge rows, compact
 * rows or node rows) of the given shape. */
static int row_temp(adctx *c, int heads, int dim)
{
    ir_var t = {0};
    char base[32];
    snprintf(base, sizeof base, "_bt%d", ++c->ntemps);
    unique_name(c->p, base, t.name);
    t.role = IR_ROLE_TEMP;
    t.widx = IR_WIDX_NONE;
    t.heads = heads;
    t.dim = dim;
    t.grad = t.grad_of = -1;
    if (c->f.dom == IR_DOM_EDGE) {
        t.kind = IR_VAR_EDGE;
        t.layout = c->f_per_unique ? IR_LAYOUT_COMPACT : IR_LAYOUT_VANILLA;
    } else if (c->f.dom == IR_DOM_NODE) {
        t.kind = IR_VAR_NODE;
        t.layout = IR_LAYOUT_NODE;
    } else {
        RG_DIE("row temporaries exist only in edge and node loops");
    }
    return ir_add_var(c->p, &t);
}

static int temp_rows_ok(const adctx *c) { return c->f.dom == IR_DOM_EDGE || c->f.dom == IR_DOM_NODE; }

typedef struct shape { int heads, dim, rows_dim; } shape;

static shape shape_of(const ir_program *p, const ir_operand *o)
{
    if (!is_var(o) || p->vars[o->var].kind == IR_VAR_SCALAR) return (shape){1, 1, 0};
    const ir_var *v = &p->vars[o->var];
    return (shape){v->heads, v->dim, v->kind == IR_VAR_WEIGHT ? v->rows_dim : 0};
}

static int imax(int a, int b) { return a > b ? a : b; }

static int emit_raw(adctx *c, ir_opkind op, ir_operand out, int acc, int nin, const ir_operand *in,
                    double cval, int iarg, int tw)
{
    ir_stmt s = {0};
    s.op = op;
    s.dom = op == IR_OP_NLL_GRAD ? IR_DOM_NODE : c->f.dom;
    s.out = out;
    s.accumulate = acc;
    s.nin = nin;
    for (int i = 0; i < nin; i++) s.in[i] = in[i];
    s.cval = cval;
    s.iarg = iarg;
    s.transpose_w = tw;
    s.backward = 1;
    s.line = c->f.line;
    return ir_add_stmt(c->p, &s);
}

/* Emits `out (+)= op(in...)` in the forward statement's loop. A compact gradient added
 * from compact values must run once per unique row like its forward statement; ir.h runs
 * a compact `+=` per edge, so it becomes t = op(...) and g = g + t (both per unique row). */
static void emit(adctx *c, ir_opkind op, ir_operand out, int acc, int nin, const ir_operand *in, double cval,
                 int iarg, int tw)
{
    int idx = emit_raw(c, op, out, acc, nin, in, cval, iarg, tw);
    if (c->f.dom != IR_DOM_EDGE || op == IR_OP_NLL_GRAD) return;
    ir_program *p = c->p;
    int per_unique = ir_stmt_per_unique(p, &p->stmts[idx]);
    if (per_unique == c->f_per_unique) return;
    const ir_var *ov = &p->vars[out.var];
    if (!(c->f_per_unique && acc && ov->kind == IR_VAR_EDGE && ov->layout == IR_LAYOUT_COMPACT))
        RG_DIE("backward statement of statement %d runs over other rows than it", c->f_index);
    int t = row_temp(c, ov->heads, ov->dim);
    p->stmts[idx].out = opv(t, IR_ACC_ROW);
    p->stmts[idx].accumulate = 0;
    ir_operand sum_in[2] = {out, opv(t, IR_ACC_ROW)};
    int add = emit_raw(c, IR_OP_ADD, out, 0, 2, sum_in, 0, 0, 0);
    RG_ASSERT(ir_stmt_per_unique(p, &p->stmts[add]) && ir_stmt_per_unique(p, &p->stmts[idx]));
}

static void emit1(adctx *c, ir_opkind op, ir_operand out, ir_operand a)
{
    emit(c, op, out, 1, 1, &a, 0, 0, 0);
}

static void emit2(adctx *c, ir_opkind op, ir_operand out, ir_operand a, ir_operand b)
{
    ir_operand in[2] = {a, b};
    emit(c, op, out, 1, 2, in, 0, 0, 0);
}

/* Does operand x need a gradient? (a variable depending on an input or a param) */
static int wants_grad(const adctx *c, const ir_operand *x)
{
    if (!is_var(x) || x->var >= c->nactive || !c->active[x->var]) return 0;
    ir_role r = c->p->vars[x->var].role;
    return r != IR_ROLE_GRAPH && r != IR_ROLE_LABEL;
}

static int is_weight(const adctx *c, const ir_operand *x)
{
    return is_var(x) && c->p->vars[x->var].kind == IR_VAR_WEIGHT;
}

static ir_operand grad_at(adctx *c, const ir_operand *x) { return opv(grad_var(c->p, x->var), x->acc); }

/* d x += sum over broadcast axes of p * q (elementwise). For a weight vector x this is
 * WGRAD (with the factor of x's width second, as ir_verify wants it, or a temporary). */
static int add_product(adctx *c, const ir_operand *x, ir_operand p1, ir_operand q1)
{
    ir_operand gx = grad_at(c, x);
    shape sx = shape_of(c->p, x), sp = shape_of(c->p, &p1), sq = shape_of(c->p, &q1);
    if (!is_weight(c, x)) {
        /* a narrower output sums; a 1-wide one from wider factors is a dot product */
        int dot = sx.dim == 1 && imax(sp.dim, sq.dim) > 1 && sx.heads == imax(sp.heads, sq.heads);
        emit2(c, dot ? IR_OP_DOT : IR_OP_MUL, gx, p1, q1);
        return 0;
    }
    if (sx.rows_dim > 0) return rg_errf(c->err, "a weight matrix used elementwise has no gradient rule");
    /* ir.h's form first: in[0] as wide as the weight, in[1] one wide */
    if (sp.dim == 1 && sq.dim == sx.dim) {
        emit2(c, IR_OP_WGRAD, gx, q1, p1);
    } else if (sq.dim == 1 || sq.dim == sx.dim) {
        emit2(c, IR_OP_WGRAD, gx, p1, q1);
    } else if (sp.dim == 1 || sp.dim == sx.dim) {
        emit2(c, IR_OP_WGRAD, gx, q1, p1);
    } else {
        if (!temp_rows_ok(c)) return rg_errf(c->err, "no gradient rule for this weight product");
        int t = row_temp(c, imax(sp.heads, sq.heads), sx.dim);
        ir_operand in[2] = {p1, q1};
        emit(c, sx.dim == 1 ? IR_OP_DOT : IR_OP_MUL, opv(t, IR_ACC_ROW), 0, 2, in, 0, 0, 0);
        emit2(c, IR_OP_WGRAD, gx, opv(t, IR_ACC_ROW), opc(1.0));
    }
    return 0;
}

/* d x += g (summed over broadcast axes). */
static int add_copy(adctx *c, const ir_operand *x, ir_operand g)
{
    shape sx = shape_of(c->p, x), sg = shape_of(c->p, &g);
    /* equal widths: the same shape, or the adjoint of a reshape (a flat copy back) */
    if (!is_weight(c, x) && !is_weight(c, &g) && sx.heads * sx.dim == sg.heads * sg.dim) {
        emit1(c, IR_OP_COPY, grad_at(c, x), g);
        return 0;
    }
    return add_product(c, x, g, opc(1.0));
}

/* The forward statement's per-row result: its output itself when nothing else writes
 * that variable, else recomputed into a temporary. */
static int result_value(adctx *c, ir_operand *val)
{
    const ir_program *p = c->p;
    int o = c->f.out.var, sole = !c->f.accumulate && c->f.out.acc == IR_ACC_ROW;
    for (int i = 0; i < c->p->nforward && sole; i++)
        if (i != c->f_index && p->stmts[i].out.var == o) sole = 0;
    if (sole) {
        *val = c->f.out;
        return 0;
    }
    if (!temp_rows_ok(c)) return rg_errf(c->err, "cannot recompute a %s result here", ir_op_name(c->f.op));
    shape so = shape_of(p, &c->f.out);
    int t = row_temp(c, so.heads, so.dim);
    emit(c, c->f.op, opv(t, IR_ACC_ROW), 0, c->f.nin, c->f.in, c->f.cval, c->f.iarg, c->f.transpose_w);
    *val = opv(t, IR_ACC_ROW);
    return 0;
}

/* a / b, or div_nz (its gradients are div_nz too: where b == 0 the result is the constant 0). */
static int diff_div(adctx *c, ir_operand G)
{
    const ir_operand *a = &c->f.in[0], *b = &c->f.in[1];
    ir_opkind div = c->f.op;
    if (wants_grad(c, a)) {
        if (is_weight(c, a)) {
            if (!temp_rows_ok(c)) return rg_errf(c->err, "no gradient rule for dividing a weight here");
            shape sg = shape_of(c->p, &G), sb = shape_of(c->p, b);
            int t = row_temp(c, imax(sg.heads, sb.heads), imax(sg.dim, sb.dim));
            ir_operand in[2] = {G, *b};
            emit(c, div, opv(t, IR_ACC_ROW), 0, 2, in, 0, 0, 0);
            if (add_copy(c, a, opv(t, IR_ACC_ROW)) < 0) return -1;
        } else {
            emit2(c, div, grad_at(c, a), G, *b);
        }
    }
    if (wants_grad(c, b)) {
        /* d b += -(g * out) / b */
        if (!temp_rows_ok(c)) return rg_errf(c->err, "no gradient rule for a divisor here");
        ir_operand val;
        if (result_value(c, &val) < 0) return -1;
        shape so = shape_of(c->p, &c->f.out);
        int t1 = row_temp(c, so.heads, so.dim), t2 = row_temp(c, so.heads, so.dim);
        ir_operand m[2] = {G, val}, d[2] = {opv(t1, IR_ACC_ROW), *b};
        emit(c, IR_OP_MUL, opv(t1, IR_ACC_ROW), 0, 2, m, 0, 0, 0);
        emit(c, div, opv(t2, IR_ACC_ROW), 0, 2, d, 0, 0, 0);
        if (add_product(c, b, opv(t2, IR_ACC_ROW), opc(-1.0)) < 0) return -1;
    }
    return 0;
}

static int diff_linear(adctx *c, ir_operand G)
{
    const ir_operand *x = &c->f.in[0], *W = &c->f.in[1];
    int tw = c->f.transpose_w;
    if (wants_grad(c, x)) {
        ir_operand in[2] = {G, *W};
        emit(c, IR_OP_LINEAR, grad_at(c, x), 1, 2, in, 0, 0, !tw);
    }
    if (wants_grad(c, W)) emit2(c, IR_OP_WGRAD, grad_at(c, W), tw ? G : *x, tw ? *x : G);
    return 0;
}

/* out[r] = A[ta(r)] * B[r]: dA += G * B^T (or G (x) B for a vector B), dB += A^T G
 * (or the row G * A for a vector B). */
static int diff_weight_mm(adctx *c, ir_operand G)
{
    const ir_operand *A = &c->f.in[0], *B = &c->f.in[1];
    if (c->f.transpose_w) return rg_errf(c->err, "no gradient rule for weight_mm with a transposed operand");
    int b_vector = shape_of(c->p, B).rows_dim == 0;
    if (wants_grad(c, A)) {
        if (b_vector) {
            emit2(c, IR_OP_WGRAD, grad_at(c, A), G, *B);
        } else {
            ir_operand in[2] = {G, *B};
            emit(c, IR_OP_WEIGHT_MM, grad_at(c, A), 1, 2, in, 0, 0, 1);
        }
    }
    if (wants_grad(c, B)) {
        if (b_vector) emit2(c, IR_OP_WEIGHT_MM, grad_at(c, B), G, *A);
        else emit2(c, IR_OP_WGRAD, grad_at(c, B), *A, G);
    }
    return 0;
}

static int diff_stmt(adctx *c)
{
    const ir_stmt *f = &c->f;
    ir_operand G = opv(c->p->vars[f->out.var].grad, f->out.acc);
    const ir_operand *a = &f->in[0], *b = f->nin > 1 ? &f->in[1] : NULL;
    int ga = wants_grad(c, a), gb = b && wants_grad(c, b);
    if (!ga && !gb) return 0;
    switch (f->op) {
    case IR_OP_COPY:
        return add_copy(c, a, G);
    case IR_OP_ADD:
        if (ga && add_copy(c, a, G) < 0) return -1;
        return gb ? add_copy(c, b, G) : 0;
    case IR_OP_SUB:
        if (ga && add_copy(c, a, G) < 0) return -1;
        return gb ? add_product(c, b, G, opc(-1.0)) : 0;
    case IR_OP_MUL:
    case IR_OP_DOT:
        if (ga && add_product(c, a, G, *b) < 0) return -1;
        return gb ? add_product(c, b, G, *a) : 0;
    case IR_OP_DIV:
    case IR_OP_DIV_NZ:
        return diff_div(c, G);
    case IR_OP_EXP: {
        ir_operand val;
        if (result_value(c, &val) < 0) return -1;
        return add_product(c, a, G, val);
    }
    case IR_OP_SIGMOID: {
        /* d a += g * s * (1 - s), s the result; a may be a weight (HGT's gated skip) */
        if (!temp_rows_ok(c)) return rg_errf(c->err, "no gradient rule for sigmoid here");
        ir_operand s;
        if (result_value(c, &s) < 0) return -1;
        shape so = shape_of(c->p, &c->f.out);
        int t1 = row_temp(c, so.heads, so.dim), t2 = row_temp(c, so.heads, so.dim);
        ir_operand sub[2] = {opc(1.0), s}, mul[2] = {s, opv(t1, IR_ACC_ROW)};
        emit(c, IR_OP_SUB, opv(t1, IR_ACC_ROW), 0, 2, sub, 0, 0, 0);
        emit(c, IR_OP_MUL, opv(t2, IR_ACC_ROW), 0, 2, mul, 0, 0, 0);
        return add_product(c, a, G, opv(t2, IR_ACC_ROW));
    }
    case IR_OP_GELU: {
        if (is_weight(c, a)) return rg_errf(c->err, "no gradient rule for gelu of a weight");
        ir_operand in[2] = {G, *a};
        emit(c, IR_OP_GELU_GRAD, grad_at(c, a), 1, 2, in, 0, 0, 0);
        return 0;
    }
    case IR_OP_LEAKYRELU:
    case IR_OP_RELU: {
        if (is_weight(c, a)) return rg_errf(c->err, "no gradient rule for %s of a weight", ir_op_name(f->op));
        ir_operand in[2] = {G, *a};
        emit(c, f->op == IR_OP_RELU ? IR_OP_RELU_GRAD : IR_OP_LEAKYRELU_GRAD, grad_at(c, a), 1, 2, in, f->cval, 0, 0);
        return 0;
    }
    case IR_OP_CONCAT: {
        int da = shape_of(c->p, a).dim;
        if (is_weight(c, a) || is_weight(c, b)) return rg_errf(c->err, "no gradient rule for concat of weights");
        if (ga) emit(c, IR_OP_SLICE, grad_at(c, a), 1, 1, &G, 0, 0, 0);
        if (gb) emit(c, IR_OP_SLICE, grad_at(c, b), 1, 1, &G, 0, da, 0);
        return 0;
    }
    case IR_OP_LINEAR: return diff_linear(c, G);
    case IR_OP_WEIGHT_MM: return diff_weight_mm(c, G);
    case IR_OP_NLL_LOSS: {
        if (!ga) return 0;
        ir_operand in[3] = {opv(a->var, IR_ACC_ROW), opv(b->var, IR_ACC_ROW), G};
        emit(c, IR_OP_NLL_GRAD, opv(grad_var(c->p, a->var), IR_ACC_ROW), 1, 3, in, 0, 0, 0);
        return 0;
    }
    default:
        return rg_errf(c->err, "no gradient rule for %s", ir_op_name(f->op));
    }
}

/* ------------------------------------------------------------------ analysis */

static char *active_vars(const ir_program *p)
{
    char *active = rg_xcalloc((size_t)p->nvars + 1, 1);
    for (int v = 0; v < p->nvars; v++)
        active[v] = p->vars[v].role == IR_ROLE_INPUT || p->vars[v].role == IR_ROLE_PARAM;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < p->nstmts; i++) {
            const ir_stmt *s = &p->stmts[i];
            if (active[s->out.var]) continue;
            for (int k = 0; k < s->nin; k++)
                if (is_var(&s->in[k]) && active[s->in[k].var]) {
                    active[s->out.var] = 1;
                    changed = 1;
                    break;
                }
        }
    }
    return active;
}

static int required_grad(const ir_program *p, int v)
{
    int of = p->vars[v].grad_of;
    return of >= 0 && (p->vars[of].role == IR_ROLE_INPUT || p->vars[of].role == IR_ROLE_PARAM);
}

/* Removes backward statements no required gradient needs, then the variables created by
 * autodiff (ids >= first_new) that nothing touches any more. */
static void remove_dead_gradients(ir_program *p, int first_new)
{
    char *needed = rg_xcalloc((size_t)p->nvars + 1, 1);
    for (int v = 0; v < p->nvars; v++) needed[v] = (char)required_grad(p, v);
    for (int i = p->nstmts - 1; i >= p->nforward; i--) {
        const ir_stmt *s = &p->stmts[i];
        if (!needed[s->out.var]) {
            ir_remove_stmt(p, i);
            continue;
        }
        for (int k = 0; k < s->nin; k++)
            if (is_var(&s->in[k])) needed[s->in[k].var] = 1;
    }
    char *used = rg_xcalloc((size_t)p->nvars + 1, 1);
    for (int i = 0; i < p->nstmts; i++) {
        used[p->stmts[i].out.var] = 1;
        for (int k = 0; k < p->stmts[i].nin; k++)
            if (is_var(&p->stmts[i].in[k])) used[p->stmts[i].in[k].var] = 1;
    }
    int *remap = rg_xmalloc(((size_t)p->nvars + 1) * sizeof *remap);
    int n = first_new;
    for (int v = 0; v < p->nvars; v++) {
        if (v < first_new) remap[v] = v;
        else if (used[v]) {
            remap[v] = n;
            p->vars[n++] = p->vars[v];
        } else {
            remap[v] = -1;
        }
    }
    p->nvars = n;
    for (int v = 0; v < n; v++) {
        if (p->vars[v].grad >= 0) p->vars[v].grad = remap[p->vars[v].grad];
        if (p->vars[v].grad_of >= 0) p->vars[v].grad_of = remap[p->vars[v].grad_of];
    }
    for (int i = 0; i < p->nstmts; i++) {
        ir_stmt *s = &p->stmts[i];
        s->out.var = remap[s->out.var];
        for (int k = 0; k < s->nin; k++)
            if (is_var(&s->in[k])) s->in[k].var = remap[s->in[k].var];
    }
    free(remap);
    free(used);
    free(needed);
}

int ad_append_backward(ir_program *p, rg_err *err)
{
    if (p->loss < 0) return rg_errf(err, "%s: autodiff needs a loss (the training task)", p->name);
    for (int i = 0; i < p->nstmts; i++)
        if (p->stmts[i].backward) return rg_errf(err, "%s: the program already has a backward part", p->name);
    p->nforward = p->nstmts;
    if (make_single_assignment(p, err) < 0) return -1;
    adctx c = {.p = p, .err = err};
    c.active = active_vars(p);
    c.nactive = p->nvars;
    int first_new = p->nvars, rc = 0;
    if (!c.active[p->loss]) {
        free(c.active);
        return rg_errf(err, "%s: the loss depends on no input or weight", p->name);
    }
    int dloss = grad_var(p, p->loss);
    ir_stmt seed = {0};
    seed.op = IR_OP_COPY;
    seed.dom = IR_DOM_GLOBAL;
    seed.out = opv(dloss, IR_ACC_ALL);
    seed.nin = 1;
    seed.in[0] = opc(1.0);
    seed.backward = 1;
    ir_add_stmt(p, &seed);
    for (int i = p->nforward - 1; i >= 0 && rc == 0; i--) {
        c.f = p->stmts[i];
        c.f_index = i;
        c.f_per_unique = ir_stmt_per_unique(p, &c.f);
        if (p->vars[c.f.out.var].grad < 0) continue;   /* no gradient reaches it */
        if (diff_stmt(&c) < 0) {
            rg_err_prefix(err, "%s: autodiff of statement %d (%s, line %d)", p->name, i, ir_op_name(c.f.op),
                          c.f.line);
            rc = -1;
        }
    }
    free(c.active);
    if (rc == 0) remove_dead_gradients(p, first_new);
    return rc;
}
