/* The per-type weight-product emitter: weight-by-weight matrix products (DOM_TYPE WEIGHT_MM) and
 * their gradients (DOM_TYPE WGRAD), one thread block row per edge type, as the reference defines them. */
#include "codegen/emit_wmm.h"
#include "codegen/vartype.h"

#include <string.h>

/* Per head h, a (rows x k) times b (k x cols); a one-head weight is either shared by every
 * head or split into column blocks, whichever makes the shapes agree. */

typedef struct mview {
    long off;
    int rows, cols;
    long rs, cs;
} mview;

typedef struct mm_plan {
    const ir_var *v[3];   /* in0, in1, out */
    int split[3];
    int H;
    int wgrad;
    int transpose;
} mm_plan;

static int make_view(const ir_var *o, int column, int split, int transpose, int H, int h, mview *v)
{
    int dim = o->dim;
    long head_off = 0;
    if (split) {
        if (dim % H) return -1;
        dim /= H;
        head_off = (long)h * dim;
    } else if (vt_heads(o) > 1) {
        head_off = (long)h * (o->rows_dim > 0 ? o->rows_dim : 1) * o->dim;
    }
    if (o->rows_dim > 0) *v = (mview){head_off, o->rows_dim, dim, o->dim, 1};
    else if (column) *v = (mview){head_off, dim, 1, 1, 0};
    else *v = (mview){head_off, 1, dim, 0, 1};
    if (transpose) {
        int t = v->rows;
        v->rows = v->cols;
        v->cols = t;
        long u = v->rs;
        v->rs = v->cs;
        v->cs = u;
    }
    return 0;
}

static int mm_views(const mm_plan *pl, int h, mview *va, mview *vb, mview *vo)
{
    if (make_view(pl->v[0], 0, pl->split[0], pl->wgrad, pl->H, h, va) < 0) return -1;
    if (make_view(pl->v[1], !pl->wgrad, pl->split[1], !pl->wgrad && pl->transpose, pl->H, h, vb) < 0) return -1;
    if (va->cols != vb->rows) return -1;
    const ir_var *o = pl->v[2];
    int column = o->rows_dim > 0 ? 0 : va->rows != 1;
    if (o->rows_dim == 0 && column && vb->cols != 1) return -1;
    if (make_view(o, column, pl->split[2], 0, pl->H, h, vo) < 0) return -1;
    return vo->rows == va->rows && vo->cols == vb->cols ? 0 : -1;
}

static int plan_mm(const ir_program *ir, const ir_stmt *s, mm_plan *pl, rg_err *err)
{
    memset(pl, 0, sizeof *pl);
    pl->v[0] = &ir->vars[s->in[0].var];
    pl->v[1] = &ir->vars[s->in[1].var];
    pl->v[2] = &ir->vars[s->out.var];
    pl->wgrad = s->op == IR_OP_WGRAD;
    pl->transpose = s->transpose_w;
    pl->H = 1;
    for (int i = 0; i < 3; i++) {
        if (pl->v[i]->kind != IR_VAR_WEIGHT) return rg_errf(err, "a type loop multiplies weights only");
        if (vt_heads(pl->v[i]) > pl->H) pl->H = vt_heads(pl->v[i]);
    }
    for (int mask = 0; mask < 8; mask++) {
        int ok = 1;
        for (int i = 0; i < 3; i++) {
            pl->split[i] = (mask >> i) & 1;
            if (pl->split[i] && (pl->H == 1 || vt_heads(pl->v[i]) != 1)) ok = 0;
        }
        mview a, b, o;
        if (ok && mm_views(pl, 0, &a, &b, &o) == 0) return 0;
    }
    return rg_errf(err, "%s shapes do not agree", ir_op_name(s->op));
}

static const char *type_slice(ir_access acc)
{
    switch (acc) {
    case IR_ACC_SRC_NTYPE: return "etype_src_ntype[r]";
    case IR_ACC_DST_NTYPE: return "etype_dst_ntype[r]";
    case IR_ACC_ALL: return "0";
    default: return "r";
    }
}

int ew_emit(const ir_program *ir, const ir_stmt *s, kp_kernel *k, rg_str *src, rg_err *err)
{
    mm_plan pl;
    if (plan_mm(ir, s, &pl, err)) return -1;
    mview a0, b0, o0;
    RG_ASSERT(mm_views(&pl, 0, &a0, &b0, &o0) == 0);
    /* every head writes its own block unless a shared (unsplit, one-head) output sums them */
    int out_sums_heads = pl.H > 1 && vt_heads(pl.v[2]) == 1 && !pl.split[2];
    int per_thread_heads = out_sums_heads ? pl.H : 1;
    int total = (out_sums_heads ? 1 : pl.H) * o0.rows * o0.cols;
    rg_str offs = {0};
    rg_str_printf(&offs, "    const long aoff[%d] = {", pl.H);
    for (int h = 0; h < pl.H; h++) {
        mview a, b, o;
        RG_ASSERT(mm_views(&pl, h, &a, &b, &o) == 0);
        rg_str_printf(&offs, "%s%ld", h ? ", " : "", a.off);
    }
    rg_str_printf(&offs, "};\n    const long boff[%d] = {", pl.H);
    for (int h = 0; h < pl.H; h++) {
        mview a, b, o;
        mm_views(&pl, h, &a, &b, &o);
        rg_str_printf(&offs, "%s%ld", h ? ", " : "", b.off);
    }
    rg_str_printf(&offs, "};\n    const long ooff[%d] = {", pl.H);
    for (int h = 0; h < pl.H; h++) {
        mview a, b, o;
        mm_views(&pl, h, &a, &b, &o);
        rg_str_printf(&offs, "%s%ld", h ? ", " : "", o.off);
    }
    rg_str_puts(&offs, "};\n");
    /* several edge types may share the output slice (A[src ntype]): then they add atomically */
    int shared_slice = s->out.acc != IR_ACC_ROW && s->out.acc != IR_ACC_ETYPE;
    if (shared_slice && !s->accumulate)
        return rg_errf(err, "%s = ... writes a slice shared by several edge types", pl.v[2]->name);
    char hlo[16], hhi[32], store[96];
    snprintf(hlo, sizeof hlo, "%s", out_sums_heads ? "0" : "hh");
    if (out_sums_heads) snprintf(hhi, sizeof hhi, "%d", per_thread_heads);
    else snprintf(hhi, sizeof hhi, "hh + 1");
    /* the first and only writer of a zero-filled slice per type stores 0 + acc, and the zero-fill
     * is dropped: every element of every type's slice is one thread's */
    int whole = !shared_slice && total == ir_var_row_width(pl.v[2]) && ir->vars[s->out.var].zero_init &&
                ir_first_sole_writer(ir, (int)(s - ir->stmts));
    snprintf(store, sizeof store, shared_slice ? "atomicAdd(&o[ooff[hh] + (long)row * %ld + (long)col * %ld], acc)"
                                               : "o[ooff[hh] + (long)row * %ld + (long)col * %ld] %s acc",
             o0.rs, o0.cs, s->accumulate && !whole ? "+=" : "=");
    if (whole) kp_kernel_covers(k, s->out.var);
    /* weights and their gradients are never bfloat16 (vt_bf16_exclusion): the float casts below hold */
    RG_ASSERT(!vt_is_bf16(pl.v[0]) && !vt_is_bf16(pl.v[1]) && !vt_is_bf16(pl.v[2]));
    const char *ta = vt_ctype(pl.v[0]), *tb = vt_ctype(pl.v[1]), *to = vt_ctype(pl.v[2]);
    const char *tacc = vt_is_f64(pl.v[0]) || vt_is_f64(pl.v[1]) || vt_is_f64(pl.v[2]) ? "double" : "float";
    /* a type's output elements are spread over grid.y blocks: there may be only a few types */
    k->category = KC_OTHER;
    k->grid_kind = KGRID_ROWS;
    k->grid_rows_size = KS_ETYPES;
    k->rows_per_block = 1;
    k->block_x = 256;
    k->grid_y = (total + 255) / 256;
    rg_str_printf(src,
                  "\n/* %s: %s[r] %s %s[%s]%s x %s[%s]%s for every edge type r */\n"
                  "extern \"C\" __global__ void %s(int num_rows, const %s* __restrict__ A, const %s* __restrict__ B,\n"
                  "    %s* __restrict__ O, const int* __restrict__ etype_src_ntype, const int* __restrict__ etype_dst_ntype)\n"
                  "{\n"
                  "    const int r = blockIdx.x;\n"
                  "    if (r >= num_rows) return;\n"
                  "    const %s* a = A + (size_t)(%s) * %lld;\n"
                  "    const %s* b = B + (size_t)(%s) * %lld;\n"
                  "    %s* o = O + (size_t)(%s) * %lld;\n"
                  "%s"
                  "    {\n"
                  "        const int i = blockIdx.y * blockDim.x + threadIdx.x;\n"
                  "        if (i >= %d) return;\n"
                  "        const int hh = i / %d, row = (i / %d) %% %d, col = i %% %d;\n"
                  "        %s acc = 0;  /* double when an operand is (a gradient summed over many edges) */\n"
                  "        for (int h = %s; h < %s; h++)\n"
                  "            for (int k = 0; k < %d; k++)\n"
                  "                acc = fma((%s)a[aoff[h] + (long)row * %ld + (long)k * %ld], (%s)b[boff[h] + (long)k * %ld + (long)col * %ld], acc);\n"
                  "        %s;\n"
                  "    }\n"
                  "}\n",
                  k->name, pl.v[2]->name, s->accumulate ? "+=" : "=", pl.v[0]->name, type_slice(s->in[0].acc),
                  pl.wgrad ? "^T" : "", pl.v[1]->name, type_slice(s->in[1].acc), pl.transpose ? "^T" : "", k->name,
                  ta, tb, to, ta, type_slice(s->in[0].acc), (long long)ir_var_row_width(pl.v[0]), tb,
                  type_slice(s->in[1].acc), (long long)ir_var_row_width(pl.v[1]), to, type_slice(s->out.acc),
                  (long long)ir_var_row_width(pl.v[2]), offs.s, total, o0.rows * o0.cols, o0.cols, o0.rows, o0.cols,
                  tacc, hlo, hhi, a0.cols, tacc, a0.rs, a0.cs, tacc, b0.rs, b0.cs, store);
    rg_str_free(&offs);
    kp_add_param(k, KP_INT, KS_ETYPES, 0, "num_rows");
    kp_add_param(k, KP_VAR, s->in[0].var, 0, "A");
    kp_add_param(k, KP_VAR, s->in[1].var, 0, "B");
    kp_add_param(k, KP_VAR, s->out.var, 0, "O")->written = 1;
    kp_add_param(k, KP_GRAPH, KG_ETYPE_SRC_NTYPE, 0, "etype_src_ntype");
    kp_add_param(k, KP_GRAPH, KG_ETYPE_DST_NTYPE, 0, "etype_dst_ntype");
    return 0;
}
