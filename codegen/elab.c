/* Checker and instantiation of the model language: walks the syntax tree with the loop
 * context, resolves names, checks slicing and shapes, and emits three-address IR. */
#include "codegen/ast.h"
#include "codegen/modeldir.h"
#include "codegen/parse.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ values */

typedef enum val_kind {
    VK_CONST,   /* a number (dims IN/OUT/HEADS fold into numbers) */
    VK_ROW,     /* node or edge data read through an access: an IR operand */
    VK_WEIGHT,  /* a weight, sliced (acc) or unsliced (sliced == 0) */
    VK_EDGE,    /* the loop's edge e */
    VK_NODE,    /* a node: the loop's n, or e.src / e.dst; acc says which */
    VK_GRAPH,   /* g */
    VK_TYPE,    /* e.etype, n.ntype, e.src.ntype ...: acc is the weight access it gives */
    VK_STR      /* a data name, e.g. a function parameter bound to "att" */
} val_kind;

typedef struct value {
    val_kind kind;
    double c;
    int var;            /* ROW, WEIGHT */
    ir_access acc;      /* ROW/WEIGHT operand access; NODE: ROW, SRC or DST; TYPE: weight access */
    int heads, dim;     /* ROW shape; WEIGHT: wheads and dim */
    int rows_dim;       /* WEIGHT: matrix input width, 0 for vectors */
    int sliced;         /* WEIGHT */
    const char *str;    /* STR (owned by the syntax tree) */
} value;

/* A named thing in a scope: data fields (per node / per edge), locals, function params. */
typedef struct binding {
    char name[64];
    int var;            /* -1: declared `= 0` but no shape yet (pending accumulator) */
    int node_level;     /* locals: 1 if it lives on nodes, 0 on edges */
    int depth;          /* locals: loop depth that owns it; params: call depth */
    value v;            /* params */
    ast_loc loc;
} binding;

typedef struct bindings {
    int n, cap;
    binding *b;
} bindings;

typedef enum loop_ctx { CTX_TOP, CTX_NODE, CTX_EDGE } loop_ctx;

typedef struct elab {
    ir_program *p;
    rg_err *err;
    ast_file **files;
    int nfiles;
    const ast_stmt **defs;
    int ndefs;
    bindings node_fields, edge_fields, locals, params, weights_decl;
    /* loop context */
    loop_ctx ctx;
    const char *edge_name, *node_name;
    ir_access node_acc;     /* how the node loop variable is reached from the current domain */
    int depth;              /* loop nesting depth */
    int call_depth;
    int ntemps;
    int output_decl;        /* an `output` statement was seen */
    char output_key[64];
    ast_loc output_loc;
    int norm_var;
} elab;

#define EFAIL(loc, ...) (located_error(el, (loc), __VA_ARGS__))

static int located_error(elab *el, ast_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int located_error(elab *el, ast_loc loc, const char *fmt, ...)
{
    char msg[1800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rg_errf(el->err, "%s:%d:%d: %s", loc.file, loc.line, loc.col, msg);
}

static binding *find_binding(bindings *bs, const char *name)
{
    for (int i = bs->n - 1; i >= 0; i--)
        if (!strcmp(bs->b[i].name, name)) return &bs->b[i];
    return NULL;
}

static binding *add_binding(bindings *bs, const char *name)
{
    if (bs->n == bs->cap) {
        bs->cap = bs->cap ? 2 * bs->cap : 16;
        bs->b = rg_xrealloc(bs->b, (size_t)bs->cap * sizeof *bs->b);
    }
    binding *b = &bs->b[bs->n++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->var = -1;
    return b;
}

/* ------------------------------------------------------------------ IR helpers */

/* IR names are unique C identifiers: a second `att` becomes `att_2`. */
static void unique_name(const ir_program *p, const char *base, char *out, size_t n)
{
    snprintf(out, n, "%s", base);
    for (int k = 2; ir_find_var(p, out) >= 0; k++) snprintf(out, n, "%.50s_%d", base, k);
}

static int new_var(elab *el, const char *base, ir_var_kind kind, int heads, int dim, ir_role role)
{
    ir_var v;
    memset(&v, 0, sizeof v);
    unique_name(el->p, base, v.name, sizeof v.name);
    v.kind = kind;
    v.layout = kind == IR_VAR_NODE ? IR_LAYOUT_NODE : kind == IR_VAR_EDGE ? IR_LAYOUT_VANILLA
               : kind == IR_VAR_WEIGHT ? IR_LAYOUT_WEIGHT : IR_LAYOUT_SCALAR;
    v.role = role;
    v.heads = heads;
    v.dim = dim;
    v.grad_of = v.grad = -1;
    return ir_add_var(el->p, &v);
}

static ir_operand operand_of(const value *v)
{
    ir_operand o = {-1, IR_ACC_CONST, 0};
    if (v->kind == VK_CONST) o.cval = v->c;
    else {
        o.var = v->var;
        o.acc = v->acc;
    }
    return o;
}

static value row_value(const ir_program *p, int var, ir_access acc)
{
    value v;
    memset(&v, 0, sizeof v);
    v.kind = VK_ROW;
    v.var = var;
    v.acc = acc;
    v.heads = p->vars[var].heads;
    v.dim = p->vars[var].dim;
    return v;
}

static value const_value(double c)
{
    value v;
    memset(&v, 0, sizeof v);
    v.kind = VK_CONST;
    v.c = c;
    v.heads = v.dim = 1;
    return v;
}

static const char *kind_desc(val_kind k)
{
    switch (k) {
    case VK_CONST: return "a number";
    case VK_ROW: return "node or edge data";
    case VK_WEIGHT: return "a weight";
    case VK_EDGE: return "an edge";
    case VK_NODE: return "a node";
    case VK_GRAPH: return "the graph";
    case VK_TYPE: return "a type";
    case VK_STR: return "a string";
    }
    return "?";
}

/* ------------------------------------------------------------------ targets */

/* Where the root operation of an assignment writes; resolved once its shape is known. */
typedef struct target {
    char op;                /* '=' or '+' */
    bindings *map;          /* node_fields, edge_fields or locals */
    char key[64];
    ir_var_kind kind;       /* node or edge var */
    ir_access acc;          /* ROW, SRC or DST */
    int node_level;         /* locals */
    ast_loc loc;
    const char *desc;       /* e.g. e["att"], for messages */
} target;

static int resolve_target(elab *el, const target *t, int heads, int dim, ir_operand *out, int *accumulate)
{
    binding *b = find_binding(t->map, t->key);
    if (t->map == &el->locals && b && b->depth > el->depth) b = NULL;
    if (t->op == '+' && b && b->var >= 0) {
        const ir_var *v = &el->p->vars[b->var];
        if (v->heads != heads || v->dim != dim)
            return EFAIL(t->loc, "%s is %dx%d (heads x dim) but the value added to it is %dx%d", t->desc, v->heads,
                         v->dim, heads, dim);
        *out = (ir_operand){b->var, t->acc, 0};
        *accumulate = 1;
        return 0;
    }
    int var = new_var(el, t->key, t->kind, heads, dim, IR_ROLE_TEMP);
    if (t->op == '+') el->p->vars[var].zero_init = 1;
    if (!b || t->op == '=') {
        b = add_binding(t->map, t->key);
        b->node_level = t->node_level;
        b->depth = el->depth;
        b->loc = t->loc;
    }
    b->var = var;
    *out = (ir_operand){var, t->acc, 0};
    *accumulate = t->op == '+';
    return 0;
}

/* Emits out = op(ins) into the target (or a fresh temporary) and returns the result. */
static int emit(elab *el, ir_opkind op, const value *ins, int nin, int heads, int dim, double cval,
                const target *dst, ast_loc loc, value *res)
{
    ir_stmt s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.dom = el->ctx == CTX_EDGE ? IR_DOM_EDGE : IR_DOM_NODE;
    s.nin = nin;
    s.cval = cval;
    s.line = loc.line;
    for (int i = 0; i < nin; i++) s.in[i] = operand_of(&ins[i]);
    if (dst) {
        if (resolve_target(el, dst, heads, dim, &s.out, &s.accumulate) < 0) return -1;
    } else {
        char name[32];
        snprintf(name, sizeof name, "_t%d", ++el->ntemps);
        int var = new_var(el, name, el->ctx == CTX_EDGE ? IR_VAR_EDGE : IR_VAR_NODE, heads, dim, IR_ROLE_TEMP);
        s.out = (ir_operand){var, IR_ACC_ROW, 0};
    }
    ir_add_stmt(el->p, &s);
    *res = row_value(el->p, s.out.var, s.out.acc);
    return 0;
}

/* ------------------------------------------------------------------ name lookup */

static const char *const BUILTINS[] = {"linear", "dot", "exp", "leakyrelu", "relu", "concat", "reshape", "sqrt", NULL};

static int is_builtin(const char *n)
{
    for (int i = 0; BUILTINS[i]; i++)
        if (!strcmp(BUILTINS[i], n)) return 1;
    return 0;
}

static const ast_stmt *find_def(elab *el, const char *name)
{
    for (int i = 0; i < el->ndefs; i++)
        if (!strcmp(el->defs[i]->name, name)) return el->defs[i];
    return NULL;
}

/* Closest known name for "did you mean". */
static void suggest(elab *el, const char *name, char *out, size_t n)
{
    const char *best = NULL;
    int bestd = 3;
    const char *fixed[] = {"g", "IN", "OUT", "HEADS", el->edge_name, el->node_name};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (fixed[i] && rg_edit_distance(name, fixed[i]) < bestd) {
            bestd = rg_edit_distance(name, fixed[i]);
            best = fixed[i];
        }
    bindings *lists[] = {&el->locals, &el->params, &el->weights_decl};
    for (size_t l = 0; l < 3; l++)
        for (int i = 0; i < lists[l]->n; i++)
            if (rg_edit_distance(name, lists[l]->b[i].name) < bestd) {
                bestd = rg_edit_distance(name, lists[l]->b[i].name);
                best = lists[l]->b[i].name;
            }
    for (int i = 0; BUILTINS[i]; i++)
        if (rg_edit_distance(name, BUILTINS[i]) < bestd) {
            bestd = rg_edit_distance(name, BUILTINS[i]);
            best = BUILTINS[i];
        }
    if (best) snprintf(out, n, " (did you mean '%s'?)", best);
    else out[0] = '\0';
}

static int dim_constant(elab *el, const char *name, double *c)
{
    if (!strcmp(name, "IN")) *c = el->p->dims.in_dim;
    else if (!strcmp(name, "OUT")) *c = el->p->dims.out_dim;
    else if (!strcmp(name, "HEADS")) *c = el->p->dims.heads;
    else return 0;
    return 1;
}

static value weight_value(const ir_program *p, int var)
{
    value v;
    memset(&v, 0, sizeof v);
    v.kind = VK_WEIGHT;
    v.var = var;
    v.acc = IR_ACC_ALL;
    v.heads = p->vars[var].heads;
    v.dim = p->vars[var].dim;
    v.rows_dim = p->vars[var].rows_dim;
    return v;
}

static int lookup_name(elab *el, const ast_expr *x, value *v)
{
    const char *n = x->text;
    memset(v, 0, sizeof *v);
    if (el->ctx == CTX_EDGE && el->edge_name && !strcmp(n, el->edge_name)) {
        v->kind = VK_EDGE;
        return 0;
    }
    if (el->ctx != CTX_TOP && el->node_name && !strcmp(n, el->node_name)) {
        v->kind = VK_NODE;
        v->acc = el->node_acc;
        return 0;
    }
    binding *b = find_binding(&el->params, n);
    if (b && b->depth == el->call_depth) {
        *v = b->v;
        return 0;
    }
    if (!strcmp(n, "g") && el->call_depth == 0) {
        v->kind = VK_GRAPH;
        return 0;
    }
    if ((b = find_binding(&el->locals, n))) {
        if (b->var < 0) return EFAIL(x->loc, "'%s' is read before it has a value (only += can follow `= 0`)", n);
        if (!b->node_level) {
            *v = row_value(el->p, b->var, IR_ACC_ROW);
        } else {
            *v = row_value(el->p, b->var, el->ctx == CTX_EDGE ? el->node_acc : IR_ACC_ROW);
        }
        return 0;
    }
    if ((b = find_binding(&el->weights_decl, n))) {
        *v = weight_value(el->p, b->var);
        return 0;
    }
    double c;
    if (dim_constant(el, n, &c)) {
        *v = const_value(c);
        return 0;
    }
    if (is_builtin(n) || find_def(el, n)) return EFAIL(x->loc, "'%s' is a function: call it, e.g. %s(...)", n, n);
    char hint[96];
    suggest(el, n, hint, sizeof hint);
    if ((!strcmp(n, "e") || !strcmp(n, "n")) && el->ctx == CTX_TOP)
        return EFAIL(x->loc, "undefined name '%s': it exists only inside a loop such as `for %s in g.%s():`", n, n,
                     n[0] == 'e' ? "edges" : "nodes");
    return EFAIL(x->loc, "undefined name '%s'%s", n, hint);
}

/* ------------------------------------------------------------------ expressions */

typedef struct want {
    const target *dst;  /* the root op writes here (NULL: a temporary) */
    int heads, dim;     /* reshape of the result (0: none) */
} want;

static int eval(elab *el, const ast_expr *x, const want *w, value *v);

static int eval_plain(elab *el, const ast_expr *x, value *v)
{
    want none = {NULL, 0, 0};
    return eval(el, x, &none, v);
}

static int data_key(elab *el, const ast_expr *k, const char **key)
{
    if (k->kind == AST_STR) {
        *key = k->text;
    } else {
        value kv;
        if (eval_plain(el, k, &kv) < 0) return -1;
        if (kv.kind != VK_STR)
            return EFAIL(k->loc, "data is named by a string, e.g. e[\"att\"]; this is %s", kind_desc(kv.kind));
        *key = kv.str;
    }
    const char *s = *key;
    int ok = (s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) && strlen(s) < 48;
    for (const char *c = s; ok && *c; c++)
        ok = *c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
    if (!ok) return EFAIL(k->loc, "data name \"%s\" must be an identifier (letters, digits, _)", s);
    return 0;
}

static const char *widx_name(ir_widx w)
{
    return w == IR_WIDX_ETYPE ? "edge type" : w == IR_WIDX_NTYPE ? "node type" : "nothing";
}

static int eval_index(elab *el, const ast_expr *x, value *v)
{
    value obj;
    if (eval_plain(el, x->a, &obj) < 0) return -1;
    if (obj.kind == VK_WEIGHT) {
        const ir_var *wv = &el->p->vars[obj.var];
        if (obj.sliced) return EFAIL(x->loc, "weight '%s' is already sliced", wv->name);
        if (wv->widx == IR_WIDX_NONE)
            return EFAIL(x->loc, "weight '%s' is not indexed by a type: use it as '%s' without [...]", wv->name,
                         wv->name);
        value key;
        if (eval_plain(el, x->b, &key) < 0) return -1;
        const char *want_ex = wv->widx == IR_WIDX_ETYPE ? "e.etype" : "n.ntype, e.src.ntype or e.dst.ntype";
        if (key.kind != VK_TYPE)
            return EFAIL(x->b->loc, "weight '%s' must be sliced by its %s (%s), not by %s", wv->name,
                         widx_name(wv->widx), want_ex, kind_desc(key.kind));
        int key_is_etype = key.acc == IR_ACC_ETYPE;
        if (key_is_etype != (wv->widx == IR_WIDX_ETYPE))
            return EFAIL(x->b->loc, "weight '%s' is indexed by %s (%s), but this is a %s", wv->name,
                         widx_name(wv->widx), want_ex, key_is_etype ? "edge type" : "node type");
        *v = obj;
        v->sliced = 1;
        v->acc = key.acc;
        return 0;
    }
    if (obj.kind != VK_EDGE && obj.kind != VK_NODE)
        return EFAIL(x->loc, "cannot subscript %s; data is read as e[\"name\"] or n[\"name\"]", kind_desc(obj.kind));
    const char *key;
    if (data_key(el, x->b, &key) < 0) return -1;
    bindings *map = obj.kind == VK_EDGE ? &el->edge_fields : &el->node_fields;
    binding *b = find_binding(map, key);
    if (!b) {
        if (obj.kind == VK_EDGE && !strcmp(key, "norm"))
            return EFAIL(x->loc, "the graph's normalisation is read as e.norm");
        return EFAIL(x->loc, "%s data \"%s\" is read before anything assigns it", obj.kind == VK_EDGE ? "edge" : "node",
                     key);
    }
    if (b->var < 0) return EFAIL(x->loc, "\"%s\" is read before it has a value (only += can follow `= 0`)", key);
    *v = row_value(el->p, b->var, obj.kind == VK_EDGE ? IR_ACC_ROW : obj.acc);
    return 0;
}

static int norm_var(elab *el)
{
    if (el->norm_var < 0) el->norm_var = new_var(el, "norm", IR_VAR_EDGE, 1, 1, IR_ROLE_GRAPH);
    return el->norm_var;
}

static int eval_attr(elab *el, const ast_expr *x, value *v)
{
    value obj;
    if (eval_plain(el, x->a, &obj) < 0) return -1;
    const char *a = x->text;
    memset(v, 0, sizeof *v);
    if (obj.kind == VK_EDGE) {
        if (!strcmp(a, "src") || !strcmp(a, "dst")) {
            v->kind = VK_NODE;
            v->acc = a[0] == 's' ? IR_ACC_SRC : IR_ACC_DST;
        } else if (!strcmp(a, "etype")) {
            v->kind = VK_TYPE;
            v->acc = IR_ACC_ETYPE;
        } else if (!strcmp(a, "norm")) {
            *v = row_value(el->p, norm_var(el), IR_ACC_ROW);
        } else {
            return EFAIL(x->loc, "an edge has no attribute '%s' (expected src, dst, etype, norm, or data e[\"%s\"])", a,
                         a);
        }
        return 0;
    }
    if (obj.kind == VK_NODE) {
        if (!strcmp(a, "ntype")) {
            v->kind = VK_TYPE;
            v->acc = obj.acc == IR_ACC_SRC ? IR_ACC_SRC_NTYPE : obj.acc == IR_ACC_DST ? IR_ACC_DST_NTYPE : IR_ACC_NTYPE;
            return 0;
        }
        binding *b = find_binding(&el->node_fields, a);
        if (b && b->var >= 0 && el->p->vars[b->var].role == IR_ROLE_INPUT) {
            *v = row_value(el->p, b->var, obj.acc);
            return 0;
        }
        if (!strcmp(a, "incoming_edges") || !strcmp(a, "outgoing_edges"))
            return EFAIL(x->loc, "n.%s() is only valid as a for loop's iterable", a);
        return EFAIL(x->loc, "a node has no attribute '%s' (expected ntype, a declared input, or data n[\"%s\"])", a,
                     a);
    }
    if (obj.kind == VK_GRAPH)
        return EFAIL(x->loc, "g.%s is only valid in a for loop header, e.g. `for e in g.edges():`", a);
    return EFAIL(x->loc, "%s has no attribute '%s'", kind_desc(obj.kind), a);
}

static int check_operand(elab *el, const value *v, ast_loc loc, const char *fn, int allow_vector)
{
    if (v->kind == VK_ROW || v->kind == VK_CONST) return 0;
    if (v->kind == VK_WEIGHT && allow_vector) {
        const ir_var *wv = &el->p->vars[v->var];
        if (wv->widx != IR_WIDX_NONE && !v->sliced)
            return EFAIL(loc, "weight '%s' is indexed by %s: slice it, e.g. %s[%s]", wv->name, widx_name(wv->widx),
                         wv->name, wv->widx == IR_WIDX_ETYPE ? "e.etype" : "n.ntype");
        if (wv->rows_dim > 0)
            return EFAIL(loc, "%s: weight '%s' is a matrix; matrices are applied with linear()", fn, wv->name);
        return 0;
    }
    return EFAIL(loc, "%s: expected node/edge data%s, got %s", fn, allow_vector ? " or a weight vector" : "",
                 kind_desc(v->kind));
}

static int bcast(int a, int b) { return a == b || a == 1 || b == 1; }
static int imax(int a, int b) { return a > b ? a : b; }

/* Reshaping a result: the same row as a flat vector viewed as heads x dim. */
static int apply_reshape(elab *el, const want *w, int *heads, int *dim, ast_loc loc)
{
    if (!w->heads) return 0;
    if (w->heads * w->dim != *heads * *dim)
        return EFAIL(loc, "reshape to %dx%d of a %dx%d value: sizes differ (%d vs %d)", w->heads, w->dim, *heads,
                     *dim, w->heads * w->dim, *heads * *dim);
    *heads = w->heads;
    *dim = w->dim;
    return 0;
}

static int eval_linear(elab *el, const ast_expr *x, const want *w, value *v)
{
    if (x->nargs != 2) return EFAIL(x->loc, "linear takes 2 arguments (data, weight), got %d", x->nargs);
    value in[2];
    if (eval_plain(el, x->args[0], &in[0]) < 0 || eval_plain(el, x->args[1], &in[1]) < 0) return -1;
    if (in[0].kind != VK_ROW)
        return EFAIL(x->args[0]->loc, "linear: the first argument must be node or edge data, got %s",
                     kind_desc(in[0].kind));
    if (in[1].kind != VK_WEIGHT)
        return EFAIL(x->args[1]->loc, "linear: the second argument must be a weight such as W[e.etype], got %s",
                     kind_desc(in[1].kind));
    const ir_var *wv = &el->p->vars[in[1].var];
    if (wv->widx != IR_WIDX_NONE && !in[1].sliced)
        return EFAIL(x->args[1]->loc, "weight '%s' is indexed by %s: slice it, e.g. %s[%s]", wv->name,
                     widx_name(wv->widx), wv->name, wv->widx == IR_WIDX_ETYPE ? "e.etype" : "n.ntype");
    if (wv->rows_dim == 0)
        return EFAIL(x->args[1]->loc, "linear: weight '%s' is a vector (%d); linear needs a matrix", wv->name, wv->dim);
    int heads, dim;
    if (wv->heads == 1) {
        if (in[0].heads * in[0].dim != wv->rows_dim)
            return EFAIL(x->loc, "linear: input is %d wide but weight '%s' is (%d, %d): it expects %d", in[0].heads * in[0].dim,
                         wv->name, wv->rows_dim, wv->dim, wv->rows_dim);
        heads = 1;
        dim = wv->dim;
    } else {
        if ((in[0].heads != 1 && in[0].heads != wv->heads) || in[0].dim != wv->rows_dim)
            return EFAIL(x->loc, "linear: input is %dx%d (heads x dim) but per-head weight '%s' is %d heads of (%d, %d)",
                         in[0].heads, in[0].dim, wv->name, wv->heads, wv->rows_dim, wv->dim);
        heads = wv->heads;
        dim = wv->dim;
        if (w->heads && (w->heads != heads || w->dim != dim))
            return EFAIL(x->loc, "linear with per-head weight '%s' gives %dx%d; it cannot be reshaped", wv->name,
                         heads, dim);
    }
    if (apply_reshape(el, w, &heads, &dim, x->loc) < 0) return -1;
    return emit(el, IR_OP_LINEAR, in, 2, heads, dim, 0, w->dst, x->loc, v);
}

static int eval_dot(elab *el, const ast_expr *x, const want *w, value *v)
{
    if (x->nargs != 2) return EFAIL(x->loc, "dot takes 2 arguments, got %d", x->nargs);
    value in[2];
    for (int i = 0; i < 2; i++)
        if (eval_plain(el, x->args[i], &in[i]) < 0 || check_operand(el, &in[i], x->args[i]->loc, "dot", 1) < 0)
            return -1;
    if (in[0].kind == VK_CONST && in[1].kind == VK_CONST) return EFAIL(x->loc, "dot of two numbers");
    if (!bcast(in[0].heads, in[1].heads) || in[0].dim != in[1].dim)
        return EFAIL(x->loc, "dot: shapes %dx%d and %dx%d (heads x dim) do not match", in[0].heads, in[0].dim,
                     in[1].heads, in[1].dim);
    int heads = imax(in[0].heads, in[1].heads), dim = 1;
    if (apply_reshape(el, w, &heads, &dim, x->loc) < 0) return -1;
    return emit(el, IR_OP_DOT, in, 2, heads, dim, 0, w->dst, x->loc, v);
}

static int eval_unary_fn(elab *el, const ast_expr *x, const want *w, value *v, ir_opkind op)
{
    const char *fn = ir_op_name(op);
    int max_args = op == IR_OP_LEAKYRELU ? 2 : 1;
    if (x->nargs < 1 || x->nargs > max_args)
        return EFAIL(x->loc, "%s takes %s argument%s, got %d", fn, max_args == 2 ? "1 or 2" : "1",
                     max_args == 2 ? "s" : "", x->nargs);
    value in;
    if (eval_plain(el, x->args[0], &in) < 0) return -1;
    double slope = 0.2;   /* RGAT's LeakyReLU slope (GAT default) */
    if (x->nargs == 2) {
        value s;
        if (eval_plain(el, x->args[1], &s) < 0) return -1;
        if (s.kind != VK_CONST) return EFAIL(x->args[1]->loc, "leakyrelu: the slope must be a number");
        slope = s.c;
    }
    if (in.kind == VK_CONST) {
        if (op == IR_OP_EXP) *v = const_value(exp(in.c));
        else if (op == IR_OP_RELU) *v = const_value(in.c > 0 ? in.c : 0);
        else if (op == IR_OP_GELU) *v = const_value(0.5 * in.c * erfc(-in.c * M_SQRT1_2));
        else if (op == IR_OP_SIGMOID) *v = const_value(1.0 / (1.0 + exp(-in.c)));
        else *v = const_value(in.c > 0 ? in.c : slope * in.c);
        return w->dst ? emit(el, IR_OP_COPY, v, 1, 1, 1, 0, w->dst, x->loc, v) : 0;
    }
    if (check_operand(el, &in, x->args[0]->loc, fn, 1) < 0) return -1;
    int heads = in.heads, dim = in.dim;
    if (apply_reshape(el, w, &heads, &dim, x->loc) < 0) return -1;
    if (w->heads && (heads != in.heads || dim != in.dim)) {
        value t;
        if (emit(el, op, &in, 1, in.heads, in.dim, slope, NULL, x->loc, &t) < 0) return -1;
        return emit(el, IR_OP_COPY, &t, 1, heads, dim, 0, w->dst, x->loc, v);
    }
    return emit(el, op, &in, 1, heads, dim, slope, w->dst, x->loc, v);
}

static int eval_concat(elab *el, const ast_expr *x, const want *w, value *v)
{
    if (x->nargs != 2) return EFAIL(x->loc, "concat takes 2 arguments, got %d", x->nargs);
    value in[2];
    for (int i = 0; i < 2; i++)
        if (eval_plain(el, x->args[i], &in[i]) < 0 || check_operand(el, &in[i], x->args[i]->loc, "concat", 0) < 0)
            return -1;
    if (in[0].kind != VK_ROW || in[1].kind != VK_ROW) return EFAIL(x->loc, "concat: both arguments must be data");
    if (in[0].heads != in[1].heads)
        return EFAIL(x->loc, "concat: %d heads and %d heads differ", in[0].heads, in[1].heads);
    int heads = in[0].heads, dim = in[0].dim + in[1].dim;
    if (w->heads) {
        value t;
        if (emit(el, IR_OP_CONCAT, in, 2, heads, dim, 0, NULL, x->loc, &t) < 0) return -1;
        if (apply_reshape(el, w, &heads, &dim, x->loc) < 0) return -1;
        return emit(el, IR_OP_COPY, &t, 1, heads, dim, 0, w->dst, x->loc, v);
    }
    return emit(el, IR_OP_CONCAT, in, 2, heads, dim, 0, w->dst, x->loc, v);
}

static int const_int_arg(elab *el, const ast_expr *a, const char *what, int *out)
{
    value c;
    if (eval_plain(el, a, &c) < 0) return -1;
    if (c.kind != VK_CONST) return EFAIL(a->loc, "%s must be a number (IN, OUT, HEADS and arithmetic)", what);
    if (c.c < 1 || c.c != floor(c.c) || c.c > 1e6) return EFAIL(a->loc, "%s must be a positive whole number, is %g", what, c.c);
    *out = (int)c.c;
    return 0;
}

static int eval_reshape(elab *el, const ast_expr *x, const want *w, value *v)
{
    if (x->nargs != 3) return EFAIL(x->loc, "reshape takes 3 arguments (data, heads, dim), got %d", x->nargs);
    want inner = {w->dst, 0, 0};
    if (const_int_arg(el, x->args[1], "reshape's heads", &inner.heads) < 0 ||
        const_int_arg(el, x->args[2], "reshape's dim", &inner.dim) < 0)
        return -1;
    if (w->heads && (w->heads != inner.heads || w->dim != inner.dim)) {
        /* reshape(reshape(...)): the outer one wins, sizes must agree */
        if (w->heads * w->dim != inner.heads * inner.dim)
            return EFAIL(x->loc, "nested reshapes of different sizes");
        inner.heads = w->heads;
        inner.dim = w->dim;
    }
    const ast_expr *a = x->args[0];
    if (a->kind == AST_CALL || a->kind == AST_BINOP || a->kind == AST_NEG) return eval(el, a, &inner, v);
    value in;   /* a stored value: copy it as a flat row into the new shape */
    if (eval_plain(el, a, &in) < 0) return -1;
    if (in.kind != VK_ROW) return EFAIL(a->loc, "reshape: expected node or edge data, got %s", kind_desc(in.kind));
    int heads = in.heads, dim = in.dim;
    if (apply_reshape(el, &inner, &heads, &dim, x->loc) < 0) return -1;
    return emit(el, IR_OP_COPY, &in, 1, heads, dim, 0, w->dst, x->loc, v);
}

static int eval_sqrt(elab *el, const ast_expr *x, const want *w, value *v)
{
    if (x->nargs != 1) return EFAIL(x->loc, "sqrt takes 1 argument, got %d", x->nargs);
    value in;
    if (eval_plain(el, x->args[0], &in) < 0) return -1;
    if (in.kind != VK_CONST || in.c < 0)
        return EFAIL(x->loc, "sqrt is for constants such as sqrt(OUT/HEADS) (a non-negative number)");
    *v = const_value(sqrt(in.c));
    return w->dst ? emit(el, IR_OP_COPY, v, 1, 1, 1, 0, w->dst, x->loc, v) : 0;
}

static int eval_call(elab *el, const ast_expr *x, const want *w, value *v)
{
    if (x->a->kind != AST_NAME) {
        if (x->a->kind == AST_ATTR) {
            value obj;
            if (eval_plain(el, x->a->a, &obj) < 0) return -1;
            if (obj.kind == VK_GRAPH || obj.kind == VK_NODE)
                return EFAIL(x->loc, "%s.%s() is only valid as a for loop's iterable", obj.kind == VK_GRAPH ? "g" : "n",
                             x->a->text);
        }
        return EFAIL(x->loc, "only named functions can be called");
    }
    const char *fn = x->a->text;
    if (!strcmp(fn, "linear")) return eval_linear(el, x, w, v);
    if (!strcmp(fn, "dot")) return eval_dot(el, x, w, v);
    if (!strcmp(fn, "exp")) return eval_unary_fn(el, x, w, v, IR_OP_EXP);
    if (!strcmp(fn, "relu")) return eval_unary_fn(el, x, w, v, IR_OP_RELU);
    if (!strcmp(fn, "gelu")) return eval_unary_fn(el, x, w, v, IR_OP_GELU);
    if (!strcmp(fn, "sigmoid")) return eval_unary_fn(el, x, w, v, IR_OP_SIGMOID);
    if (!strcmp(fn, "leakyrelu")) return eval_unary_fn(el, x, w, v, IR_OP_LEAKYRELU);
    if (!strcmp(fn, "concat")) return eval_concat(el, x, w, v);
    if (!strcmp(fn, "reshape")) return eval_reshape(el, x, w, v);
    if (!strcmp(fn, "sqrt")) return eval_sqrt(el, x, w, v);
    if (find_def(el, fn))
        return EFAIL(x->loc, "function '%s' gives no value: call it as a statement outside loops", fn);
    char hint[96];
    suggest(el, fn, hint, sizeof hint);
    return EFAIL(x->a->loc, "unknown function '%s'%s", fn, hint);
}

static ir_opkind binop_kind(char op)
{
    return op == '+' ? IR_OP_ADD : op == '-' ? IR_OP_SUB : op == '*' ? IR_OP_MUL : IR_OP_DIV;
}

/* Constants fold here and become C literals of the kernels, so a fold must stay finite (an
 * `inf` would not compile) and no divisor may fold to 0 (x / (1 - 1)); the parser already
 * refuses literal ones. */
static int eval_binop_values(elab *el, char op, value *in, const want *w, ast_loc loc, value *v)
{
    if (op == '/' && in[1].kind == VK_CONST && in[1].c == 0) return EFAIL(loc, "division by zero");
    if (in[0].kind == VK_CONST && in[1].kind == VK_CONST) {
        double a = in[0].c, b = in[1].c;
        *v = const_value(op == '+' ? a + b : op == '-' ? a - b : op == '*' ? a * b : a / b);
        if (!isfinite(v->c)) return EFAIL(loc, "constant overflows: %g %c %g is not a finite number", a, op, b);
        return w->dst ? EFAIL(loc, "a new value needs a shape; a bare number only starts an accumulator (`= 0`)") : 0;
    }
    int heads = imax(in[0].heads, in[1].heads), dim = imax(in[0].dim, in[1].dim);
    if (!bcast(in[0].heads, in[1].heads) || !bcast(in[0].dim, in[1].dim))
        return EFAIL(loc, "'%c' of %dx%d and %dx%d values (heads x dim): shapes do not broadcast", op, in[0].heads,
                     in[0].dim, in[1].heads, in[1].dim);
    if (w->heads) {
        value t;
        if (emit(el, binop_kind(op), in, 2, heads, dim, 0, NULL, loc, &t) < 0) return -1;
        if (apply_reshape(el, w, &heads, &dim, loc) < 0) return -1;
        return emit(el, IR_OP_COPY, &t, 1, heads, dim, 0, w->dst, loc, v);
    }
    return emit(el, binop_kind(op), in, 2, heads, dim, 0, w->dst, loc, v);
}

static int eval_binop(elab *el, const ast_expr *x, const want *w, value *v)
{
    value in[2];
    const ast_expr *args[2] = {x->a, x->b};
    char fn[16];
    snprintf(fn, sizeof fn, "'%c'", x->op);
    for (int i = 0; i < 2; i++)
        if (eval_plain(el, args[i], &in[i]) < 0 || check_operand(el, &in[i], args[i]->loc, fn, 1) < 0) return -1;
    return eval_binop_values(el, x->op, in, w, x->loc, v);
}

static int eval(elab *el, const ast_expr *x, const want *w, value *v)
{
    RG_ASSERT(x->depth <= AST_MAX_DEPTH);   /* ast_parse bounds it: this recursion stays shallow */
    switch (x->kind) {
    case AST_NUM:
        *v = const_value(x->num);
        break;
    case AST_STR:
        memset(v, 0, sizeof *v);
        v->kind = VK_STR;
        v->str = x->text;
        break;
    case AST_NAME:
        if (lookup_name(el, x, v) < 0) return -1;
        break;
    case AST_ATTR:
        if (eval_attr(el, x, v) < 0) return -1;
        break;
    case AST_INDEX:
        if (eval_index(el, x, v) < 0) return -1;
        break;
    case AST_CALL: return eval_call(el, x, w, v);
    case AST_BINOP: return eval_binop(el, x, w, v);
    case AST_NEG: {
        value in[2];
        if (eval_plain(el, x->a, &in[0]) < 0 || check_operand(el, &in[0], x->a->loc, "'-'", 1) < 0) return -1;
        in[1] = const_value(-1);
        if (in[0].kind == VK_CONST) {
            *v = const_value(-in[0].c);
            break;
        }
        return eval_binop_values(el, '*', in, w, x->loc, v);
    }
    }
    if (w->dst && v->kind != VK_ROW) {
        if (v->kind == VK_CONST)
            return EFAIL(x->loc, "a new value needs a shape; a bare number only starts an accumulator (`= 0`)");
        if (check_operand(el, v, x->loc, "assignment", 1) < 0) return -1;
    }
    if (w->dst || w->heads) {   /* a stored value assigned or reshaped: copy it */
        if (v->kind != VK_ROW && v->kind != VK_WEIGHT) return 0;
        int heads = v->heads, dim = v->dim;
        if (apply_reshape(el, w, &heads, &dim, x->loc) < 0) return -1;
        value src = *v;
        return emit(el, IR_OP_COPY, &src, 1, heads, dim, 0, w->dst, x->loc, v);
    }
    return 0;
}

/* ------------------------------------------------------------------ statements */

static int elab_block(elab *el, const ast_block *b);

static int resolve_assign_target(elab *el, const ast_stmt *s, target *t)
{
    const ast_expr *x = s->target;
    memset(t, 0, sizeof *t);
    t->op = s->assign_op == '+' ? '+' : '=';
    t->loc = x->loc;
    if (x->kind == AST_NAME) {
        value probe;
        if (el->ctx == CTX_EDGE && el->edge_name && !strcmp(x->text, el->edge_name))
            return EFAIL(x->loc, "cannot assign to the loop's edge '%s'", x->text);
        if (find_binding(&el->weights_decl, x->text) || (dim_constant(el, x->text, &probe.c)))
            return EFAIL(x->loc, "cannot assign to '%s' (a weight or a dimension)", x->text);
        binding *b = find_binding(&el->locals, x->text);
        int node_level = el->ctx == CTX_NODE;
        if (b && t->op == '+') node_level = b->node_level;
        t->map = &el->locals;
        snprintf(t->key, sizeof t->key, "%s", x->text);
        t->node_level = node_level;
        t->kind = node_level ? IR_VAR_NODE : IR_VAR_EDGE;
        t->acc = node_level && el->ctx == CTX_EDGE ? el->node_acc : IR_ACC_ROW;
        t->desc = x->text;
        return 0;
    }
    if (x->kind == AST_ATTR) {
        value obj;
        if (eval_plain(el, x->a, &obj) < 0) return -1;
        if (obj.kind == VK_NODE && find_binding(&el->node_fields, x->text))
            return EFAIL(x->loc, "cannot assign to the input '%s'", x->text);
        return EFAIL(x->loc, "cannot assign to an attribute; data is written as e[\"name\"] or n[\"name\"]");
    }
    if (x->kind != AST_INDEX)
        return EFAIL(x->loc, "cannot assign to this; targets are e[\"name\"], n[\"name\"], e.dst[\"name\"] (+=) or a name");
    value obj;
    if (eval_plain(el, x->a, &obj) < 0) return -1;
    if (obj.kind != VK_EDGE && obj.kind != VK_NODE)
        return EFAIL(x->loc, "cannot assign into %s; targets are e[\"name\"] or n[\"name\"]", kind_desc(obj.kind));
    const char *key;
    if (data_key(el, x->b, &key) < 0) return -1;
    snprintf(t->key, sizeof t->key, "%s", key);
    t->map = obj.kind == VK_EDGE ? &el->edge_fields : &el->node_fields;
    t->kind = obj.kind == VK_EDGE ? IR_VAR_EDGE : IR_VAR_NODE;
    t->acc = obj.kind == VK_EDGE ? IR_ACC_ROW : obj.acc;
    t->desc = obj.kind == VK_EDGE ? "edge data" : "node data";
    binding *b = find_binding(t->map, key);
    if (b && b->var >= 0 && el->p->vars[b->var].role != IR_ROLE_TEMP)
        return EFAIL(x->loc, "cannot assign to \"%s\": it is an input of the program", key);
    if (obj.kind == VK_NODE && obj.acc != IR_ACC_ROW && s->assign_op != '+')
        return EFAIL(s->loc, "a node's data can only be aggregated (+=) from an edge loop; "
                             "assign it in a node loop instead");
    return 0;
}

/* `x = 0` on a new name: an accumulator that the following += statements fill. */
static int is_zero_literal(const ast_expr *x) { return x->kind == AST_NUM && x->num == 0; }

static int elab_assign(elab *el, const ast_stmt *s)
{
    if (el->ctx == CTX_TOP)
        return EFAIL(s->loc, "assignments belong inside a loop over the graph, e.g. `for e in g.edges():`");
    target t;
    if (resolve_assign_target(el, s, &t) < 0) return -1;
    if (s->assign_op == '=' && is_zero_literal(s->value)) {
        if (t.acc != IR_ACC_ROW) return EFAIL(s->loc, "`= 0` starts an accumulator in its own loop");
        binding *b = add_binding(t.map, t.key);
        b->node_level = t.node_level;
        b->depth = el->depth;
        b->loc = s->loc;
        return 0;
    }
    value v;
    if (s->assign_op == '=' || s->assign_op == '+') {
        want w = {&t, 0, 0};
        return eval(el, s->value, &w, &v);
    }
    /* x -= y, x *= y, x /= y: a new version x = x op y */
    value in[2];
    if (eval_plain(el, s->target, &in[0]) < 0 || check_operand(el, &in[0], s->target->loc, "assignment", 0) < 0 ||
        eval_plain(el, s->value, &in[1]) < 0 || check_operand(el, &in[1], s->value->loc, "assignment", 1) < 0)
        return -1;
    if (t.acc != IR_ACC_ROW)
        return EFAIL(s->loc, "only += can update a node's data from an edge loop");
    want w = {&t, 0, 0};
    return eval_binop_values(el, s->assign_op, in, &w, s->loc, &v);
}

static void pop_locals(elab *el)
{
    while (el->locals.n > 0 && el->locals.b[el->locals.n - 1].depth > el->depth) el->locals.n--;
}

static int elab_for(elab *el, const ast_stmt *s)
{
    const ast_expr *it = s->iter;
    if (it->kind != AST_CALL || it->a->kind != AST_ATTR || it->nargs != 0)
        return EFAIL(it->loc, "a for loop iterates g.edges(), g.nodes(), g.dst_nodes(), g.src_nodes(), "
                              "or n.incoming_edges() / n.outgoing_edges()");
    value obj;
    if (eval_plain(el, it->a->a, &obj) < 0) return -1;
    const char *m = it->a->text;
    loop_ctx saved_ctx = el->ctx;
    const char *saved_e = el->edge_name, *saved_n = el->node_name;
    ir_access saved_acc = el->node_acc;
    if (obj.kind == VK_GRAPH) {
        if (el->ctx != CTX_TOP)
            return EFAIL(s->loc, "loops over the graph cannot be nested; inside a node loop use n.incoming_edges()");
        if (!strcmp(m, "edges")) {
            el->ctx = CTX_EDGE;
            el->edge_name = s->name;
            el->node_name = NULL;
        } else if (!strcmp(m, "nodes") || !strcmp(m, "dst_nodes") || !strcmp(m, "src_nodes")) {
            el->ctx = CTX_NODE;
            el->node_name = s->name;
            el->edge_name = NULL;
            el->node_acc = IR_ACC_ROW;
        } else {
            return EFAIL(it->a->loc, "the graph has no iterator '%s' (edges, nodes, dst_nodes, src_nodes)", m);
        }
    } else if (obj.kind == VK_NODE && el->ctx == CTX_NODE && obj.acc == IR_ACC_ROW) {
        if (strcmp(m, "incoming_edges") && strcmp(m, "outgoing_edges"))
            return EFAIL(it->a->loc, "a node iterates incoming_edges() or outgoing_edges(), not '%s'", m);
        el->ctx = CTX_EDGE;
        el->edge_name = s->name;
        el->node_acc = m[0] == 'i' ? IR_ACC_DST : IR_ACC_SRC;
    } else {
        return EFAIL(it->loc, "cannot iterate %s here; loops iterate g.edges(), g.nodes(), g.dst_nodes(), or "
                              "n.incoming_edges() directly inside a node loop", kind_desc(obj.kind));
    }
    el->depth++;
    int rc = elab_block(el, &s->body);
    el->depth--;
    pop_locals(el);
    el->ctx = saved_ctx;
    el->edge_name = saved_e;
    el->node_name = saved_n;
    el->node_acc = saved_acc;
    return rc;
}

static int declared_dim(elab *el, const ast_expr *x, const char *what, int *out)
{
    return const_int_arg(el, x, what, out);
}

static int elab_weight(elab *el, const ast_stmt *s)
{
    binding *prev = find_binding(&el->weights_decl, s->name);
    if (prev) return EFAIL(s->loc, "weight '%s' declared twice (first at line %d)", s->name, prev->loc.line);
    if (find_binding(&el->node_fields, s->name))
        return EFAIL(s->loc, "'%s' is already declared as an input", s->name);
    ir_var v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", s->name);
    if (ir_find_var(el->p, v.name) >= 0) return EFAIL(s->loc, "name '%s' is already used", s->name);
    v.kind = IR_VAR_WEIGHT;
    v.layout = IR_LAYOUT_WEIGHT;
    v.role = IR_ROLE_PARAM;
    v.widx = !s->widx ? IR_WIDX_NONE : !strcmp(s->widx, "etype") ? IR_WIDX_ETYPE : IR_WIDX_NTYPE;
    v.heads = s->per_head ? el->p->dims.heads : 1;
    v.grad_of = v.grad = -1;
    if (s->nshape == 2) {
        if (declared_dim(el, s->shape[0], "a weight's input size", &v.rows_dim) < 0 ||
            declared_dim(el, s->shape[1], "a weight's output size", &v.dim) < 0)
            return -1;
    } else if (declared_dim(el, s->shape[0], "a weight vector's size", &v.dim) < 0) {
        return -1;
    }
    binding *b = add_binding(&el->weights_decl, s->name);
    b->var = ir_add_var(el->p, &v);
    b->loc = s->loc;
    return 0;
}

static int elab_input(elab *el, const ast_stmt *s)
{
    if (find_binding(&el->node_fields, s->name) || find_binding(&el->weights_decl, s->name))
        return EFAIL(s->loc, "'%s' is declared twice", s->name);
    if (s->nshape != 1) return EFAIL(s->loc, "an input has one size, e.g. input feature: (IN)");
    int dim;
    if (declared_dim(el, s->shape[0], "the input's size", &dim) < 0) return -1;
    if (ir_find_var(el->p, s->name) >= 0) return EFAIL(s->loc, "name '%s' is already used", s->name);
    binding *b = add_binding(&el->node_fields, s->name);
    b->var = new_var(el, s->name, IR_VAR_NODE, 1, dim, IR_ROLE_INPUT);
    b->loc = s->loc;
    return 0;
}

static int elab_output(elab *el, const ast_stmt *s)
{
    const ast_expr *x = s->value;
    if (el->output_decl) return EFAIL(s->loc, "the output is declared twice (first at line %d)", el->output_loc.line);
    if (x->kind != AST_INDEX || x->a->kind != AST_NAME || x->b->kind != AST_STR)
        return EFAIL(x->loc, "expected the output as node data, e.g. output n[\"h\"]");
    el->output_decl = 1;
    el->output_loc = s->loc;
    snprintf(el->output_key, sizeof el->output_key, "%s", x->b->text);
    return 0;
}

static int load_import(elab *el, const ast_stmt *s, const char *from_path);

static int elab_call_stmt(elab *el, const ast_stmt *s)
{
    const ast_expr *x = s->value;
    if (x->kind != AST_CALL || x->a->kind != AST_NAME)
        return EFAIL(s->loc, "this statement does nothing; expected an assignment, a loop or a function call");
    const ast_stmt *d = find_def(el, x->a->text);
    if (!d) {
        if (is_builtin(x->a->text)) return EFAIL(s->loc, "the value of %s() is not used", x->a->text);
        char hint[96];
        suggest(el, x->a->text, hint, sizeof hint);
        return EFAIL(x->a->loc, "unknown function '%s'%s", x->a->text, hint);
    }
    if (el->ctx != CTX_TOP)
        return EFAIL(s->loc, "function '%s' contains loops: call it outside loops", d->name);
    if (x->nargs != d->nparams)
        return EFAIL(x->loc, "function '%s' takes %d arguments, got %d", d->name, d->nparams, x->nargs);
    if (el->call_depth >= 16) return EFAIL(x->loc, "calls nested too deeply (recursion?)");
    value args[16];
    if (d->nparams > 16) return EFAIL(d->loc, "too many parameters");
    for (int i = 0; i < x->nargs; i++) {
        if (eval_plain(el, x->args[i], &args[i]) < 0) return -1;
        if (args[i].kind != VK_STR && args[i].kind != VK_GRAPH && args[i].kind != VK_WEIGHT && args[i].kind != VK_CONST)
            return EFAIL(x->args[i]->loc, "function arguments are the graph, data names (\"att\"), weights or numbers");
    }
    int mark = el->params.n;
    el->call_depth++;
    for (int i = 0; i < d->nparams; i++) {
        binding *b = add_binding(&el->params, d->params[i]);
        b->v = args[i];
        b->depth = el->call_depth;
        b->loc = d->param_locs[i];
    }
    int rc = elab_block(el, &d->body);
    el->call_depth--;
    el->params.n = mark;
    if (rc < 0 && el->err) {   /* keep the message starting with its own file:line:col */
        size_t n = strlen(el->err->msg);
        snprintf(el->err->msg + n, sizeof el->err->msg - n, " (in %s() called at %s:%d)", d->name, x->loc.file,
                 x->loc.line);
    }
    return rc;
}

static int elab_stmt(elab *el, const ast_stmt *s)
{
    switch (s->kind) {
    case AST_IMPORT:
        if (el->ctx != CTX_TOP || el->call_depth) return EFAIL(s->loc, "import belongs at the top of a file");
        return load_import(el, s, s->loc.file);
    case AST_INPUT:
    case AST_WEIGHT:
    case AST_OUTPUT:
        if (el->ctx != CTX_TOP || el->call_depth)
            return EFAIL(s->loc, "declarations belong at the top level of the model, outside loops and functions");
        return s->kind == AST_INPUT ? elab_input(el, s) : s->kind == AST_WEIGHT ? elab_weight(el, s) : elab_output(el, s);
    case AST_DEF: {
        if (el->ctx != CTX_TOP || el->call_depth) return EFAIL(s->loc, "functions are defined at the top level");
        const ast_stmt *prev = find_def(el, s->name);
        if (prev) return EFAIL(s->loc, "function '%s' defined twice (first at %s:%d)", s->name, prev->loc.file, prev->loc.line);
        if (is_builtin(s->name)) return EFAIL(s->loc, "'%s' is a built-in function", s->name);
        el->defs = rg_xrealloc(el->defs, (size_t)(el->ndefs + 1) * sizeof *el->defs);
        el->defs[el->ndefs++] = s;
        return 0;
    }
    case AST_FOR: return elab_for(el, s);
    case AST_ASSIGN: return elab_assign(el, s);
    case AST_EXPR: return elab_call_stmt(el, s);
    }
    return EFAIL(s->loc, "unknown statement");
}

static int elab_block(elab *el, const ast_block *b)
{
    for (int i = 0; i < b->n; i++)
        if (elab_stmt(el, b->items[i]) < 0) return -1;
    return 0;
}

/* ------------------------------------------------------------------ files and imports */

char *ps_read_file(const char *path, rg_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        rg_errf(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    rg_str s = {0};
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) {
            if (buf[i] == '\0') {
                fclose(f);
                rg_str_free(&s);
                rg_errf(err, "%s: not a text file (NUL byte)", path);
                return NULL;
            }
            rg_str_putc(&s, buf[i]);
        }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        rg_str_free(&s);
        rg_errf(err, "%s: read error", path);
        return NULL;
    }
    return s.s ? s.s : rg_xstrdup("");
}

static ast_file *parse_and_keep(elab *el, const char *path, const char *text)
{
    for (int i = 0; i < el->nfiles; i++)
        if (!strcmp(el->files[i]->path, path)) return NULL;   /* already imported */
    ast_file *f = ast_parse(path, text, el->err);
    if (!f) return NULL;
    el->files = rg_xrealloc(el->files, (size_t)(el->nfiles + 1) * sizeof *el->files);
    el->files[el->nfiles++] = f;
    return f;
}

static int load_import(elab *el, const ast_stmt *s, const char *from_path)
{
    /* beside the importing file first, then the model directories */
    char path[1024];
    const char *slash = strrchr(from_path, '/');
    if (slash) snprintf(path, sizeof path, "%.*s/%s.rgnn", (int)(slash - from_path), from_path, s->name);
    else snprintf(path, sizeof path, "%s.rgnn", s->name);
    char *found = NULL;
    if (rg_file_exists(path)) found = rg_xstrdup(path);
    else found = md_find(s->name);
    if (!found) return EFAIL(s->loc, "cannot import '%s': no %s.rgnn beside this file or in the model directory",
                             s->name, s->name);
    for (int i = 0; i < el->nfiles; i++)
        if (!strcmp(el->files[i]->path, found)) {
            free(found);
            return 0;
        }
    char *text = ps_read_file(found, el->err);
    if (!text) {
        free(found);
        return -1;
    }
    ast_file *f = parse_and_keep(el, found, text);
    free(text);
    free(found);
    if (!f) return -1;
    for (int i = 0; i < f->top.n; i++) {
        const ast_stmt *st = f->top.items[i];
        if (st->kind != AST_DEF && st->kind != AST_IMPORT)
            return EFAIL(st->loc, "an imported file may only define functions (def) and import others");
        if (elab_stmt(el, st) < 0) return -1;
    }
    return 0;
}

static int finish_program(elab *el, const char *path)
{
    ir_program *p = el->p;
    if (!el->output_decl)
        return rg_errf(el->err, "%s: the model declares no output (add a line such as `output n[\"h\"]`)", path);
    binding *b = find_binding(&el->node_fields, el->output_key);
    if (!b || b->var < 0)
        return EFAIL(el->output_loc, "output n[\"%s\"]: no node data \"%s\" is ever assigned", el->output_key,
                     el->output_key);
    if (p->vars[b->var].role != IR_ROLE_TEMP) return EFAIL(el->output_loc, "the output cannot be an input");
    p->output = b->var;
    p->vars[b->var].role = IR_ROLE_OUTPUT;
    ir_remove_dead(p);
    rg_err verr;
    if (ir_verify(p, &verr) < 0) RG_DIE("the front end produced invalid IR: %s", verr.msg);
    return 0;
}

static void elab_free(elab *el)
{
    for (int i = 0; i < el->nfiles; i++) ast_free(el->files[i]);
    free(el->files);
    free(el->defs);
    free(el->node_fields.b);
    free(el->edge_fields.b);
    free(el->locals.b);
    free(el->params.b);
    free(el->weights_decl.b);
}

static void model_name_of(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strcspn(base, ".");
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), base);
}

ir_program *ps_load_string(const char *path, const char *text, const ir_dims *dims, rg_err *err)
{
    if (dims->in_dim < 1 || dims->out_dim < 1 || dims->heads < 1) {
        rg_errf(err, "%s: dims must be positive (in %d, out %d, heads %d)", path, dims->in_dim, dims->out_dim,
                dims->heads);
        return NULL;
    }
    char name[64];
    model_name_of(path, name, sizeof name);
    elab el;
    memset(&el, 0, sizeof el);
    el.err = err;
    el.norm_var = -1;
    el.p = ir_new(name, dims);
    snprintf(el.p->source_path, sizeof el.p->source_path, "%s", path);
    ast_file *f = parse_and_keep(&el, path, text);
    int rc = f ? elab_block(&el, &f->top) : -1;
    if (rc == 0) rc = finish_program(&el, path);
    elab_free(&el);
    if (rc < 0) {
        ir_free(el.p);
        return NULL;
    }
    return el.p;
}

ir_program *ps_load_file(const char *path, const ir_dims *dims, rg_err *err)
{
    char *text = ps_read_file(path, err);
    if (!text) return NULL;
    ir_program *p = ps_load_string(path, text, dims, err);
    free(text);
    return p;
}
