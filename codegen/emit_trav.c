/* The traversal template emitter: turns a fused group of edgewise / nodewise statements
 * into edge-centric or node-centric CUDA kernels (a group of lanes per row, lanes over heads x features). */
#include "codegen/emit_trav.h"
#include "codegen/templates.h"
#include "codegen/vartype.h"

#include <stdlib.h>
#include <string.h>

#define DST_RUN 32   /* edge-centric partial aggregation: positions of the dst-sorted order per row group */
#define EDGE_CHUNK 32 /* edge-centric: consecutive edges per row group */
#define SMEM_MAX 232448 /* dynamic shared memory one block may have on sm_90 (the runtime opts in above 48 KB) */
#define REG_SLOTS 16    /* acc=reg: doubles of register accumulators a lane may hold (32 registers) */
#define WACC_SLOTS 8    /* weight-gradient sums: edge-type slots a row group keeps at most */
#define WACC_BLOCK 4096 /* ... and the doubles of shared memory a block gives them (32 KB) */
#define LANE_WIDTH 8    /* scalars=lane: the widest per-row temporary a lane evaluates alone (doubles) */
#define LANE_TOTAL 32   /* ... and the doubles of such temporaries a lane holds at most (64 registers) */

/* How a kernel walks its rows. Each statement is then evaluated at its own shape: a
 * [1][1] value once per row, [H][1] once per head, [H][D] per feature, which is loop
 * hoisting to the outermost legal level by construction. */
typedef enum form {
    FORM_EDGE,        /* warp per edge, etype order, atomics into e.dst / e.src (crrun: compact rows' sums per run) */
    FORM_EDGE_DSTRUN, /* warp per run of the dst-sorted order, partial sums flushed per dst */
    FORM_NODE,        /* warp per dst node, passes over its incoming edges, no dst atomics */
    FORM_UNIQUE,      /* warp per unique (src, etype) row (compact outputs) */
    FORM_NODE_DOM,    /* warp per node, DOM_NODE statements */
    FORM_TYPE,        /* warp per edge type, DOM_TYPE statements on weights */
    FORM_GLOBAL       /* one warp, DOM_GLOBAL statements on scalars */
} form;

typedef enum dest { DEST_SCRATCH, DEST_ACC, DEST_PLAIN, DEST_ATOMIC, DEST_WACC } dest;

typedef struct kgen {
    const ir_program *ir;
    const cg_config *cfg;
    const int *mat;
    form f;
    const int *keep;              /* per traversal statement: in this kernel (crsum=split), or NULL: all */
    int crrun;                    /* FORM_EDGE walking compact rows: their sums kept per row and run */
    rg_str body;
    int *var_used, *var_written;  /* per var: appears as a kernel parameter / is written */
    int arr_used[KG__COUNT];
    int *scr_off;                 /* per var: scratch offset or -1 */
    int *acc_off;                 /* per var: accumulator offset or -1 (unused by one in registers) */
    int *reg_slots;               /* per var: acc=reg: the accumulator's registers per lane, 0: in scratch */
    int owned;                    /* inside open_row_loop's register-order loop (k_ names the register) */
    rg_str acc_note;              /* acc=reg: which accumulators live where, and why (the kernel's comment) */
    int *wacc_off;                /* per weight: partial sums of its slice, wslots edge types of them, or -1 */
    int wslots;                   /* edge-type slots of each such accumulator (wsl names the current one) */
    int *wreg;                    /* per weight: wacc=reg: registers per lane of its sums (rw<var>), 0: in scratch */
    int run;                      /* rows a row group walks (edge forms: positions; unique rows) */
    int scr_size;
    int needs_cr;
    int needs_e;                  /* a statement reads an edge variable at row e (edge id) */
    int needs_q;                  /* ... or a graph constant's dst-ordered copy at position qpos */
    /* thread mapping (cfg lanes, tblock, vec): a row group of L lanes per row, rpb groups per
     * block; V elements per lane access where a row allows it */
    int L, rpb, V;
    int vec_on;                   /* operand_ref may turn an operand into a vector load */
    int vec_total, vec_dim;       /* ... of this shape (the statement's output row) */
    int nvec;                     /* vector loads registered for the current statement */
    rg_str vec_loads;             /* their declarations, emitted before the element loop */
    /* scalars=lane (plan_lanes): per-edge scalars each lane evaluates for an edge of its own */
    int *lane_stmt;               /* per traversal statement: evaluated by each lane for its own edge */
    int *lane_off;                /* per var: offset of its row in a lane's ls_ registers, or -1 */
    int *lane_bcast;              /* per var: read by the group's statements (taken by shuffles into bs_) */
    int lane_size;                /* doubles of ls_ a lane holds */
    int prologue;                 /* emitting the lanes' own statements (loops over whole rows, no barriers) */
    int replicated;               /* scalars=replicated: every lane of the group runs them, in the loop's order */
    /* pfetch=on (plan_prefetch): per-edge scalar operands each lane loads for its own edge with the ids */
    int *pf_var;                  /* per var: loaded so (1 + the access), read as pf<var> (pf<var>_l in the lane's own statements) */
    int *pf_bcast;                /* per var: read as pf<var> by the group's statements (so broadcast per edge) */
    /* rowpf=l2|l1 (plan_rowpf): per var, bit 1 << ir_access for each access at which each lane
     * prefetches its own edge's row right after its ids */
    int *rp_acc;
    /* plan_stores: per var, 1 where the kernel's statement is the program's only writer of a zero-filled
     * per-edge row the kernel visits once (stored with =, not +=), 2 where the kernel's later statements
     * also read it, from register fw<var> */
    int *once;
    /* plan_stores, plan_whole_rows: per var, 1 where this kernel writes every element of a zero-filled variable before
     * anything reads it (kp_kernel.covers: the zero-fill is dropped) */
    int *cover;
    int *fw_live;                 /* per var: fw<var> holds the current edge's value (its writer is emitted) */
    /* epi=on (et_fusion): the next instance's node statements, run when a whole destination is flushed */
    const lw_trav *epi;
    int epi_mode;                 /* emitting them: a node variable at ROW is the flushed destination's */
    const char *epi_node;         /* ... whose index this names ("n" or "cur") */
    int *epi_off;                 /* per var: the scratch row an accumulator in registers is copied to, or -1 */
    int *epi_skip;                /* per var: an accumulator only they read, not stored for a whole destination */
    int *epi_recip;               /* per var: its copy holds reciprocals (1: of a divisor, 2: 0 for a zero one) */
    et_guard guard;               /* node rows: skip those the aggregation before finished */
    int guard_chunk;
    /* rmax=on (plan_rmax): the softmax (psm_find_online) whose sums this aggregation keeps under a
     * running maximum rm_[h] (rm_agg), or whose split tiles this node kernel merges before its division
     * (rm_node); rm_chunk: the tiles' nchunk, 0 where the aggregation splits none; rm_lane: its exp is a
     * lane's own statement (scalars=lane: the maximum taken over the group's step of edges); rm_shift:
     * emitting that exp */
    psm_online rm;
    int rm_agg, rm_node, rm_chunk, rm_heads, rm_lane, rm_shift;
    int rm_work;                  /* the kernel binds the softmax's workspace (KP_WORK) */
    int *rm_skip;                 /* per var: one of the two sums (their flush is emit_rm_partials'), or NULL */
} kgen;

static const ir_var *V(const kgen *g, int v) { return &g->ir->vars[v]; }

/* The destination every edge of a walk shares: node n's, in the node-centric walk of its edges
 * (emit_rows), else NULL (each edge has its own). */
static const char *walk_dst(const kgen *g) { return g->f == FORM_NODE ? "n" : NULL; }

/* The barrier of a row group: the whole warp when a row has 32 lanes. */
static const char *gsync(const kgen *g) { return g->L == 32 ? "__syncwarp()" : "__syncwarp(gmask)"; }

/* acc=reg: elements of a w-wide accumulator row a lane takes at once: the vector width where the row
 * takes it, so that a statement's vector loads (one per V elements) and its registers walk the
 * row in the same order. */
static int reg_vec(const kgen *g, int w) { return w % g->V == 0 ? g->V : 1; }

/* acc=reg: registers per lane of a w-wide accumulator row: its steps of L x reg_vec elements. */
static int reg_count(const kgen *g, int w)
{
    int vr = reg_vec(g, w);
    return (w + g->L * vr - 1) / (g->L * vr) * vr;
}

/* The home of element `el` of var v in the row's scratch (off: scr_off, acc_off or wacc_off): its
 * shared-memory address, or, for an accumulator in registers, the current lane's register k_ (only
 * inside open_row_loop's register-order loop, where el is the loop's element i). Every access to
 * the scratch row is printed here. */
static void row_home(const kgen *g, const int *off, int v, const char *el, char *out, size_t n)
{
    if (off == g->acc_off && g->reg_slots[v]) {
        RG_ASSERT(g->owned);
        snprintf(out, n, "ra%d[k_]", v);
        return;
    }
    if (off == g->wacc_off && g->wreg[v]) {
        RG_ASSERT(g->owned);
        snprintf(out, n, "rw%d[k_]", v);
        return;
    }
    if (off == g->scr_off && g->lane_off[v] >= 0) {
        /* scalars=lane: the lane's own edge's row, or, in the group's statements, edge j's (shuffled);
         * scalars=replicated: every lane's copy of the current edge's */
        snprintf(out, n, "%s[%d + %s]", g->prologue || g->replicated ? "ls_" : "bs_", g->lane_off[v], el);
        return;
    }
    RG_ASSERT(off[v] >= 0);
    if (off == g->wacc_off && g->wslots > 1)
        snprintf(out, n, "scr[%d + wsl * %lld + %s]", off[v], (long long)ir_var_row_width(V(g, v)), el);
    else
        snprintf(out, n, "scr[%d + %s]", off[v], el);
}

/* The first element and the step of a lane's loop over a row: its share of the row group's, or, in
 * a lane's own statements (scalars=lane), the whole row, for the lane's own edge. */
static const char *lane_first(const kgen *g) { return g->prologue ? "0" : "lane"; }
static int lane_step(const kgen *g) { return g->prologue ? 1 : g->L; }

/* A lane's loop over the elements of a w-wide row: i = lane, lane + L, ... or, when `reg` (the row
 * is an accumulator in registers), in register order: element i = (c_ * L + lane) * Vr + vu is
 * register k_ = c_ * Vr + vu (Vr = reg_vec), both loops unrolled so that k_ is a constant and the
 * array stays in registers; `loads` (vector loads at i0, or NULL) open each step. */
static void open_row_loop(kgen *g, rg_str *b, int w, int reg, const char *loads)
{
    if (!reg) {
        rg_str_printf(b, "        for (int i = %s; i < %d; i += %d) {\n", lane_first(g), w, lane_step(g));
        return;
    }
    int vr = reg_vec(g, w);
    rg_str_printf(b,
                  "        #pragma unroll\n"
                  "        for (int c_ = 0; c_ < %d; c_++) {\n"
                  "            const int i0 = (c_ * %d + lane) * %d;\n"
                  "            if (i0 < %d) {\n%s"
                  "            #pragma unroll\n"
                  "            for (int vu = 0; vu < %d; vu++) {\n"
                  "            const int i = i0 + vu, k_ = c_ * %d + vu; (void)k_;\n",
                  reg_count(g, w) / vr, g->L, vr, w, loads ? loads : "", vr, vr);
    g->owned = 1;
}

static void close_row_loop(kgen *g, rg_str *b, int reg)
{
    rg_str_puts(b, reg ? "            }\n            }\n        }\n" : "        }\n");
    g->owned = 0;
}

/* Whether an access (var, acc) is to the kernel's accumulator row of var: a destination's sums,
 * read at e.dst, or (crrun) the current compact row's, at the edge's own row. */
static int acc_access(const kgen *g, int var, ir_access acc)
{
    if (g->acc_off[var] < 0) return 0;
    return g->ir->vars[var].kind == IR_VAR_EDGE ? acc == IR_ACC_ROW : acc == IR_ACC_DST;
}

/* Whether, in the node statements of epi=on, operand op is a sum of this kernel: a node variable
 * read at the node's own row that the kernel accumulates. */
static int epi_acc_read(const kgen *g, const ir_operand *op)
{
    return g->epi_mode && op->acc == IR_ACC_ROW && op->var >= 0 && g->ir->vars[op->var].kind == IR_VAR_NODE &&
           g->acc_off[op->var] >= 0;
}

/* Whether a node statement of epi=on reads an accumulator from its registers (its element loop is
 * then the register-order one). */
static int epi_reads_regs(const kgen *g, const ir_stmt *s)
{
    for (int k = 0; k < s->nin; k++)
        if (epi_acc_read(g, &s->in[k]) && g->reg_slots[s->in[k].var] && g->epi_off[s->in[k].var] < 0) return 1;
    return 0;
}

/* Whether statement s adds into an accumulator in registers (its element loop is then
 * open_row_loop's register-order one). */
static int stores_to_regs(const kgen *g, const ir_stmt *s)
{
    return acc_access(g, s->out.var, s->out.acc) && g->reg_slots[s->out.var];
}

/* Whether statement s adds into weight-gradient sums in registers (wacc=reg; the same loop order). */
static int stores_to_wregs(const kgen *g, const ir_stmt *s)
{
    return s->out.acc == IR_ACC_ETYPE && g->wacc_off[s->out.var] >= 0 && g->wreg[s->out.var];
}

/* acc=reg32: whether var v's register accumulators (if any) are float32: those of float32
 * variables; a float64 one (a softmax sum, vt_is_f64) keeps its digits. */
static int reg_is_f32(const kgen *g, int v)
{
    return g->cfg->acc == CFG_ACC_REG32 && !vt_is_f64(V(g, v));
}

/* farith=f32: whether statement s's arithmetic on feature rows is float32. A dot product: where
 * neither operand is a float64 variable. Any other statement: where its result is stored to a
 * float32 or bfloat16 variable (a float64 operand, an edge's scalar, rounded once). */
static int f32_feature_arith(const kgen *g, const ir_stmt *s)
{
    if (!g->cfg->farith) return 0;
    if (s->op != IR_OP_DOT) return !vt_is_f64(V(g, s->out.var));
    for (int k = 0; k < s->nin; k++)
        if (s->in[k].var >= 0 && s->in[k].acc != IR_ACC_CONST && vt_is_f64(V(g, s->in[k].var))) return 0;
    return 1;
}

/* Whether an elementwise statement's value is formed in float32: it adds into float32 registers
 * (acc=reg32), or farith=f32 allows it. */
static int value_is_f32(const kgen *g, const ir_stmt *s)
{
    return (stores_to_regs(g, s) && reg_is_f32(g, s->out.var)) || f32_feature_arith(g, s);
}


static const char *arr(kgen *g, kp_graph_array a)
{
    g->arr_used[a] = 1;
    return kp_graph_array_name(a);
}

/* Element offset inside a row of `v` for head h and feature d, with broadcasting. */
static void elem_expr(const ir_var *v, const char *h, const char *d, char *out, size_t n)
{
    int hv = vt_heads(v), dv = v->dim;
    char hp[64] = "", dp[64] = "";
    if (hv > 1) snprintf(hp, sizeof hp, "(%s) * %d", h, dv);
    if (dv > 1) snprintf(dp, sizeof dp, "(%s)", d);
    if (*hp && *dp) snprintf(out, n, "%s + %s", hp, dp);
    else if (*hp) snprintf(out, n, "%s", hp);
    else if (*dp) snprintf(out, n, "%s", dp);
    else snprintf(out, n, "0");
}

/* Whether the kernel reads edge variable `var` from its copy in the dst-sorted order (KP_VAR_IN:
 * row q holds row in_eid[q]) at the walk's position: in a kernel walking that order, a graph
 * constant (graph-derived and written by no statement, so a copy made before the run stays equal
 * to it) is then read sequentially instead of one gathered 32-byte sector per edge, and the
 * kernel needs no in_eid for it. */
static int reads_in_order(const kgen *g, int var)
{
    const ir_var *v = V(g, var);
    if ((g->f != FORM_EDGE_DSTRUN && g->f != FORM_NODE) || v->kind != IR_VAR_EDGE ||
        v->layout != IR_LAYOUT_VANILLA || v->role != IR_ROLE_GRAPH)
        return 0;
    for (int i = 0; i < g->ir->nstmts; i++)
        if (ir_stmt_writes(&g->ir->stmts[i], var)) return 0;
    return 1;
}

/* Row index expression of a variable accessed with `acc` in the current row context. */
static int row_expr(kgen *g, int var, ir_access acc, char *out, size_t n, rg_err *err)
{
    const ir_var *v = V(g, var);
    switch (v->kind) {
    case IR_VAR_NODE:
        if (acc == IR_ACC_SRC) snprintf(out, n, "sn");
        else if (acc == IR_ACC_DST) snprintf(out, n, "dn");
        else if (acc == IR_ACC_ROW && g->f == FORM_NODE_DOM) snprintf(out, n, "n");
        else if (acc == IR_ACC_ROW && g->epi_mode) snprintf(out, n, "%s", g->epi_node);
        else return rg_errf(err, "node variable %s read with an access this loop cannot give", v->name);
        return 0;
    case IR_VAR_EDGE:
        if (acc != IR_ACC_ROW) return rg_errf(err, "edge variable %s needs its own row", v->name);
        if (g->f == FORM_UNIQUE) {
            if (v->layout != IR_LAYOUT_COMPACT) return rg_errf(err, "compact rows cannot read per-edge %s", v->name);
            snprintf(out, n, "u");
        } else if (g->f == FORM_NODE_DOM) {
            return rg_errf(err, "a node loop cannot read edge variable %s", v->name);
        } else if (v->layout == IR_LAYOUT_COMPACT) {
            g->needs_cr = 1;
            snprintf(out, n, "cr");
        } else if (reads_in_order(g, var)) {
            g->needs_q = 1;
            snprintf(out, n, "qpos");
        } else {
            g->needs_e = 1;
            snprintf(out, n, "e");
        }
        return 0;
    case IR_VAR_WEIGHT:
        switch (acc) {
        case IR_ACC_ROW:
            if (g->f != FORM_TYPE) return rg_errf(err, "weight %s read by row outside a type loop", v->name);
            snprintf(out, n, "t");
            return 0;
        case IR_ACC_ETYPE: snprintf(out, n, "t"); return 0;
        case IR_ACC_NTYPE: snprintf(out, n, "nt"); return 0;
        case IR_ACC_SRC_NTYPE: snprintf(out, n, "%s[t]", arr(g, KG_ETYPE_SRC_NTYPE)); return 0;
        case IR_ACC_DST_NTYPE: snprintf(out, n, "%s[t]", arr(g, KG_ETYPE_DST_NTYPE)); return 0;
        case IR_ACC_ALL: snprintf(out, n, "0"); return 0;
        default: return rg_errf(err, "weight %s read with a non-type access", v->name);
        }
    case IR_VAR_SCALAR: snprintf(out, n, "0"); return 0;
    }
    return rg_errf(err, "bad variable kind");
}

/* Whether an operand in device memory can be read V elements at a time in the element loop of
 * the current statement (vec_total, vec_dim): float32 or bfloat16, the loop's own shape (element
 * (h, d) is i), and rows whose width keeps every access aligned to V elements (buffers are
 * cudaMalloc'd). */
static int vec_operand(const kgen *g, const ir_var *v)
{
    return !vt_is_f64(v) && vt_heads(v) * v->dim == g->vec_total && v->dim == g->vec_dim &&
           ir_var_row_width(v) % g->V == 0;
}

/* Opens a statement's operand references: operand_at may (`on`) turn operands of rows `total` elements
 * wide, `dim` a head, into vector loads, registered afresh in vec_loads; the caller clears vec_on after. */
static void vec_begin(kgen *g, int on, int total, int dim)
{
    g->vec_on = on;
    g->vec_total = total;
    g->vec_dim = dim;
    g->nvec = 0;
    rg_str_free(&g->vec_loads);
}

/* The declaration of vector load `id`: V consecutive elements of v's row at i0, as floats. Eight
 * are one 16-byte access of bfloat16 or two of float32 (ld_bf16x8, ld_f32x8 in templates.c). */
static void emit_vec_load(kgen *g, int id, int var, const ir_var *v, const char *row)
{
    static const char *const type[] = {[2] = "float2", [4] = "float4"};
    static const char comp[4] = {'x', 'y', 'z', 'w'};
    char at[160];
    snprintf(at, sizeof at, "v%d[(size_t)(%s) * %lld + i0]", var, row, (long long)ir_var_row_width(v));
    if (g->V == 8) {
        rg_str_printf(&g->vec_loads, "            float vl%d[8];\n            ld_%sx8(&%s, vl%d);\n", id,
                      vt_is_bf16(v) ? "bf16" : "f32", at, id);
        return;
    }
    rg_str_printf(&g->vec_loads, "            float vl%d[%d];\n            { const %s q = ", id, g->V, type[g->V]);
    /* bfloat16 rows: 4 or 8 bytes converted to floats (templates.c) */
    if (vt_is_bf16(v)) rg_str_printf(&g->vec_loads, "ld_bf16x%d(&%s);", g->V, at);
    else rg_str_printf(&g->vec_loads, "*(const %s*)&%s;", type[g->V], at);
    for (int u = 0; u < g->V; u++) rg_str_printf(&g->vec_loads, " vl%d[%d] = q.%c;", id, u, comp[u]);
    rg_str_puts(&g->vec_loads, " }\n");
}

/* Element (h, d) of an operand: an lvalue of its stored type (to write), or its value (to read:
 * a bfloat16 element converted to float, vt_load). */
static int operand_at(kgen *g, const ir_operand *op, const char *h, const char *d, int lvalue, char *out, size_t n,
                      rg_err *err)
{
    if (op->acc == IR_ACC_CONST || op->var < 0) {
        snprintf(out, n, "((double)%.17g)", op->cval);
        return 0;
    }
    const ir_var *v = V(g, op->var);
    char el[160], row[96];
    elem_expr(v, h, d, el, sizeof el);
    if (!lvalue && epi_acc_read(g, op)) {
        /* epi=on: the flushed destination's sum, from its register (plan_epilogue: the statement's own
         * element) or from the scratch row */
        if (g->epi_off[op->var] >= 0) snprintf(out, n, "scr[%d + %s]", g->epi_off[op->var], el);
        else if (g->reg_slots[op->var]) snprintf(out, n, "ra%d[k_]", op->var);   /* the loop is in register order */
        else row_home(g, g->acc_off, op->var, el, out, n);
        return 0;
    }
    if (acc_access(g, op->var, op->acc)) {
        RG_ASSERT(lvalue || !g->reg_slots[op->var]);   /* plan_registers: no statement reads one back */
        row_home(g, g->acc_off, op->var, el, out, n);
        return 0;
    }
    if (g->scr_off[op->var] >= 0) {
        row_home(g, g->scr_off, op->var, el, out, n);
        return 0;
    }
    if (!lvalue && g->pf_var[op->var] == 1 + (int)op->acc) {   /* pfetch=on: loaded with the edge's ids (plan_prefetch) */
        /* the lane's own edge's in the prologue of scalars=lane; scalars=replicated runs the lanes'
         * statements (prologue set) for the group's current edge */
        int own = g->prologue && !g->replicated;
        if (!own) g->pf_bcast[op->var] = 1;
        snprintf(out, n, "pf%d%s", op->var, own ? "_l" : "");
        return 0;
    }
    if (!lvalue && !g->prologue && g->fw_live[op->var] && op->acc == IR_ACC_ROW) {
        snprintf(out, n, "fw%d", op->var);   /* the value this edge's writer stored (plan_stores) */
        return 0;
    }
    if (row_expr(g, op->var, op->acc, row, sizeof row, err)) return -1;
    g->var_used[op->var] = 1;
    if (!lvalue && g->vec_on && vec_operand(g, v)) {
        /* V consecutive elements at i0 in one access; the element loop picks element vu */
        int id = g->nvec++;
        emit_vec_load(g, id, op->var, v, row);
        snprintf(out, n, "vl%d[vu]", id);
        return 0;
    }
    char at[320];
    snprintf(at, sizeof at, "v%d[(size_t)(%s) * %lld + %s]", op->var, row, (long long)ir_var_row_width(v), el);
    if (lvalue) snprintf(out, n, "%s", at);
    else vt_load(v, at, out, n);
    return 0;
}

/* The value of element (h, d) of an operand. */
static int operand_ref(kgen *g, const ir_operand *op, const char *h, const char *d, char *out, size_t n,
                       rg_err *err)
{
    return operand_at(g, op, h, d, 0, out, n, err);
}

static dest dest_of(kgen *g, const ir_stmt *s, rg_err *err, int *bad)
{
    const ir_var *v = V(g, s->out.var);
    *bad = 0;
    if (acc_access(g, s->out.var, s->out.acc)) return DEST_ACC;
    if (g->wacc_off[s->out.var] >= 0 && s->out.acc == IR_ACC_ETYPE) return DEST_WACC;
    if (g->scr_off[s->out.var] >= 0) return DEST_SCRATCH;
    switch (v->kind) {
    case IR_VAR_NODE:
        if (s->out.acc == IR_ACC_ROW) return DEST_PLAIN;
        if (!s->accumulate) break;
        return DEST_ATOMIC;
    case IR_VAR_EDGE:
        if (v->layout == IR_LAYOUT_COMPACT && g->f != FORM_UNIQUE) {
            if (!s->accumulate) break;
            return DEST_ATOMIC;
        }
        return DEST_PLAIN;
    case IR_VAR_WEIGHT:
    case IR_VAR_SCALAR:
        /* one writer per row: a type loop writing its own slice, or the single global row */
        if ((g->f == FORM_TYPE && (s->out.acc == IR_ACC_ROW || s->out.acc == IR_ACC_ETYPE)) || g->f == FORM_GLOBAL)
            return DEST_PLAIN;
        if (!s->accumulate) break;
        return DEST_ATOMIC;
    }
    *bad = 1;
    rg_errf(err, "statement writing %s: a plain '=' here would race between rows", v->name);
    return DEST_PLAIN;
}

/* Emits `target (op)= value` for element (h, d) of the statement's output. */
static int emit_store(kgen *g, const ir_stmt *s, const char *value, rg_err *err)
{
    int bad;
    dest dk = dest_of(g, s, err, &bad);
    if (bad) return -1;
    char ref[512];
    g->var_written[s->out.var] = 1;
    if (dk == DEST_WACC) {
        char el[160], home[200];
        elem_expr(V(g, s->out.var), "h", "d", el, sizeof el);
        row_home(g, g->wacc_off, s->out.var, el, home, sizeof home);
        g->var_used[s->out.var] = 1;
        /* the group's own partial sums, each element of the loop its own (a lane its own elements of
         * the output's row, or lane 0 alone for a dot product's sum): a plain sum, not a shared-memory
         * atomic (on sm_90 a compare-and-swap loop) */
        rg_str_printf(&g->body, "            %s += (double)(%s);\n", home, value);
        return 0;
    }
    if (operand_at(g, &s->out, "h", "d", 1, ref, sizeof ref, err)) return -1;
    int bf16 = vt_is_bf16(V(g, s->out.var)) && dk == DEST_PLAIN;
    /* vt_bf16_exclusion keeps every accumulated variable out of bfloat16 */
    RG_ASSERT(bf16 || !vt_is_bf16(V(g, s->out.var)) || dk == DEST_SCRATCH);
    RG_ASSERT(!bf16 || !s->accumulate);
    char rounded[600];
    int v = s->out.var;
    if (dk == DEST_ATOMIC) rg_str_printf(&g->body, "            atomicAdd(&%s, %s);\n", ref, value);
    else if (g->once[v] == 2) rg_str_printf(&g->body, "            fw%d = %s;\n            %s = fw%d;\n", v, value, ref, v);
    else if (g->once[v]) rg_str_printf(&g->body, "            %s = %s;\n", ref, value);   /* 0 + value */
    else if (s->accumulate || dk == DEST_ACC) rg_str_printf(&g->body, "            %s += %s;\n", ref, value);
    else rg_str_printf(&g->body, "            %s = %s;\n", ref, vt_store(V(g, s->out.var), value, rounded, sizeof rounded));
    return 0;
}

/* The value of elementwise statement s for element (h, d); f32 (value_is_f32): formed in float32. */
static int elementwise_value(kgen *g, const ir_stmt *s, int f32, char *out, size_t n, rg_err *err)
{
    char a[512] = "", b[512] = "";
    if (s->nin > 0 && operand_ref(g, &s->in[0], "h", "d", a, sizeof a, err)) return -1;
    if (s->nin > 1 && operand_ref(g, &s->in[1], "h", "d", b, sizeof b, err)) return -1;
    if (g->epi_mode && (s->op == IR_OP_DIV || s->op == IR_OP_DIV_NZ) && epi_acc_read(g, &s->in[1]) &&
        g->epi_recip[s->in[1].var]) {
        snprintf(out, n, "%s * %s", a, b);   /* b holds 1 / divisor, 0 for a zero one under DIV_NZ */
        return 0;
    }
    if (f32 && (s->op == IR_OP_ADD || s->op == IR_OP_SUB || s->op == IR_OP_MUL || s->op == IR_OP_COPY)) {
        /* acc=reg32 or farith=f32: in float32 (a float64 operand, e.g. an edge's softmax weight, rounded
         * once per edge where the compiler hoists it), without the conversion to float64 of every element */
        char sym = s->op == IR_OP_ADD ? '+' : s->op == IR_OP_SUB ? '-' : '*';
        if (s->op == IR_OP_COPY) snprintf(out, n, "(float)(%s)", a);
        else snprintf(out, n, "(float)(%s) %c (float)(%s)", a, sym, b);
        return 0;
    }
    switch (s->op) {
    case IR_OP_ADD: snprintf(out, n, "%s + %s", a, b); return 0;
    case IR_OP_SUB: snprintf(out, n, "%s - %s", a, b); return 0;
    case IR_OP_MUL: snprintf(out, n, "%s * %s", a, b); return 0;
    case IR_OP_DIV: snprintf(out, n, "%s / %s", a, b); return 0;
    case IR_OP_DIV_NZ: snprintf(out, n, "(%s != 0.0 ? %s / %s : 0.0)", b, a, b); return 0;
    case IR_OP_EXP:
        if (g->rm_shift) snprintf(out, n, "exp(%s - rm_[h])", a);   /* rmax=on: under the running maximum */
        else snprintf(out, n, "exp(%s)", a);
        return 0;
    case IR_OP_LEAKYRELU: snprintf(out, n, "lrelu(%s, %.17g)", a, s->cval); return 0;
    case IR_OP_RELU: snprintf(out, n, "fmax(%s, 0.0)", a); return 0;
    case IR_OP_GELU: snprintf(out, n, "gelu(%s)", a); return 0;
    case IR_OP_SIGMOID: snprintf(out, n, "(1.0 / (1.0 + exp(-(%s))))", a); return 0;
    case IR_OP_GELU_GRAD: snprintf(out, n, "gelu_grad(%s, %s)", a, b); return 0;
    case IR_OP_COPY: snprintf(out, n, "%s", a); return 0;
    case IR_OP_LEAKYRELU_GRAD: snprintf(out, n, "lrelu_grad(%s, %s, %.17g)", a, b, s->cval); return 0;
    case IR_OP_RELU_GRAD: snprintf(out, n, "(%s > 0.0 ? %s : 0.0)", b, a); return 0;
    default: return rg_errf(err, "op %s is not elementwise", ir_op_name(s->op));
    }
}

/* Broadcast shape of a statement: the largest heads and dim among its output and operands. */
static void iter_shape(const kgen *g, const ir_stmt *s, int *H, int *D)
{
    const ir_var *o = V(g, s->out.var);
    *H = vt_heads(o);
    *D = o->dim;
    for (int k = 0; k < s->nin; k++) {
        if (s->in[k].var < 0) continue;
        const ir_var *v = V(g, s->in[k].var);
        if (vt_heads(v) > *H) *H = vt_heads(v);
        if (v->dim > *D) *D = v->dim;
    }
}

/* Loop of lanes over the output's heads x dim elements. */
static void open_elem_loop(kgen *g, const ir_var *out)
{
    int total = vt_heads(out) * out->dim;
    rg_str_printf(&g->body, "        for (int i = %s; i < %d; i += %d) {\n"
                            "            const int h = i / %d, d = i %% %d; (void)h; (void)d;\n",
                  lane_first(g), total, lane_step(g), out->dim, out->dim);
}

/* The same loop when operands were turned into vector loads: a lane takes V consecutive
 * elements at i0 (open_vec_steps: the step loop and its loads), loads each such operand once,
 * then runs the statement per element. */
static void open_vec_steps(kgen *g, const ir_var *out)
{
    rg_str_printf(&g->body, "        for (int i0 = lane * %d; i0 < %d; i0 += %d) {\n%s", g->V, vt_heads(out) * out->dim,
                  g->L * g->V, g->vec_loads.s);
}

static void open_vec_elem_loop(kgen *g, const ir_var *out)
{
    open_vec_steps(g, out);
    rg_str_printf(&g->body, "            #pragma unroll\n"
                            "            for (int vu = 0; vu < %d; vu++) {\n"
                            "            const int i = i0 + vu;\n"
                            "            const int h = i / %d, d = i %% %d; (void)h; (void)d;\n",
                  g->V, out->dim, out->dim);
}

/* Whether a vectorized statement's V results go to device memory in one vector atomic: a float32
 * row added into atomically (the scatter of a gradient to the rows of its sources), V consecutive
 * elements of one head, which sit 4 V bytes aligned (rows and heads are multiples of V wide). */
static int vector_atomic(kgen *g, const ir_stmt *s, const ir_var *out)
{
    int bad;
    rg_err ignored;
    if (g->V != 2 && g->V != 4 && g->V != 8) return 0;
    if (vt_is_f64(out) || vt_is_bf16(out) || out->dim % g->V) return 0;
    return dest_of(g, s, &ignored, &bad) == DEST_ATOMIC && !bad;
}

/* Adds the V floats av_[0..V) to the V consecutive floats at lvalue `ref`: one atomicAdd of a float2
 * or float4 (two float4 at 8: sm_90 has none wider), which sm_90 has for global memory; an older target
 * adds them one by one. */
static void emit_av_atomic(rg_str *b, const char *ref, int V)
{
    rg_str_puts(b, "#if __CUDA_ARCH__ >= 900\n");
    if (V == 8)
        rg_str_printf(b,
                      "            atomicAdd((float4*)&%s, make_float4(av_[0], av_[1], av_[2], av_[3]));\n"
                      "            atomicAdd((float4*)&%s + 1, make_float4(av_[4], av_[5], av_[6], av_[7]));\n",
                      ref, ref);
    else if (V == 4)
        rg_str_printf(b, "            atomicAdd((float4*)&%s, make_float4(av_[0], av_[1], av_[2], av_[3]));\n", ref);
    else
        rg_str_printf(b, "            atomicAdd((float2*)&%s, make_float2(av_[0], av_[1]));\n", ref);
    rg_str_printf(b,
                  "#else\n"
                  "            for (int vu = 0; vu < %d; vu++) atomicAdd(&%s + vu, av_[vu]);\n"
                  "#endif\n",
                  V, ref);
}

/* Adds av_[0..V) to the V consecutive floats at lvalue `ref` without atomics: float2 or float4 loads and
 * stores (two float4 at 8). */
static void emit_av_add(rg_str *b, const char *ref, int V)
{
    if (V == 2) {
        rg_str_printf(b, "            { float2* p_ = (float2*)&%s; float2 o_ = *p_; o_.x += av_[0]; o_.y += av_[1]; *p_ = o_; }\n",
                      ref);
        return;
    }
    rg_str_printf(b,
                  "            { float4* p_ = (float4*)&%s;\n"
                  "              #pragma unroll\n"
                  "              for (int q = 0; q < %d; q++) {\n"
                  "                  float4 o_ = p_[q];\n"
                  "                  o_.x += av_[4 * q]; o_.y += av_[4 * q + 1]; o_.z += av_[4 * q + 2]; o_.w += av_[4 * q + 3];\n"
                  "                  p_[q] = o_;\n"
                  "              } }\n",
                  ref, V / 4);
}

/* The vector loop of such a statement: each lane computes its V elements at i0 into registers, then
 * adds them with one atomicAdd of a float2 or float4, which sm_90 has for global memory (4 or 2 times
 * fewer atomic operations at the L2 than a float each); an older target adds them one by one. */
static int emit_vector_atomic(kgen *g, const ir_stmt *s, const ir_var *out, const char *val, rg_err *err)
{
    char ref[512];
    if (operand_at(g, &s->out, "h", "d", 1, ref, sizeof ref, err)) return -1;
    g->var_written[s->out.var] = 1;
    open_vec_steps(g, out);
    rg_str_printf(&g->body,
                  "            float av_[%d];\n"
                  "            #pragma unroll\n"
                  "            for (int vu = 0; vu < %d; vu++) {\n"
                  "                const int i = i0 + vu;\n"
                  "                const int h = i / %d, d = i %% %d; (void)h; (void)d;\n"
                  "                av_[vu] = (float)(%s);\n"
                  "            }\n"
                  "            const int h = i0 / %d, d = i0 %% %d; (void)h; (void)d;\n",
                  g->V, g->V, out->dim, out->dim, val, out->dim, out->dim);
    emit_av_atomic(&g->body, ref, g->V);
    rg_str_puts(&g->body, "        }\n");
    return 0;
}

static int emit_elementwise(kgen *g, const ir_stmt *s, rg_err *err)
{
    const ir_var *out = V(g, s->out.var);
    const int f32 = value_is_f32(g, s);
    char val[1400];
    if (s->op == IR_OP_CONCAT) {
        const ir_var *a = V(g, s->in[0].var);
        char ra[512], rb[512];
        if (operand_ref(g, &s->in[0], "h", "d", ra, sizeof ra, err) ||
            operand_ref(g, &s->in[1], "h", "(d - %%DA%%)", rb, sizeof rb, err))
            return -1;
        /* substitute the first operand's width into the second reference */
        char *p = strstr(rb, "%DA%");
        char rb2[600];
        if (p) {
            *p = 0;
            snprintf(rb2, sizeof rb2, "%s%d%s", rb, a->dim, p + 4);
        } else {
            snprintf(rb2, sizeof rb2, "%s", rb);
        }
        snprintf(val, sizeof val, "(d < %d ? %s : %s)", a->dim, ra, rb2);
    } else if (s->op == IR_OP_SLICE) {
        char dexpr[64], ra[512];
        snprintf(dexpr, sizeof dexpr, "d + %d", s->iarg);
        if (operand_ref(g, &s->in[0], "h", dexpr, ra, sizeof ra, err)) return -1;
        snprintf(val, sizeof val, "%s", ra);
    } else {
        int H, D;
        iter_shape(g, s, &H, &D);
        /* operands of the output's shape may be loaded V elements at a time */
        int total = vt_heads(out) * out->dim;
        vec_begin(g, !g->prologue && g->V > 1 && vt_heads(out) >= H && out->dim >= D && total % g->V == 0, total,
                  out->dim);
        int rc = elementwise_value(g, s, f32, val, sizeof val, err);
        g->vec_on = 0;
        if (rc) return -1;
    }
    int H, D;
    iter_shape(g, s, &H, &D);
    int Ho = vt_heads(out), Do = out->dim;
    int concat_like = s->op == IR_OP_CONCAT || s->op == IR_OP_SLICE;
    int reg = stores_to_regs(g, s) || stores_to_wregs(g, s) || epi_reads_regs(g, s);
    if (!concat_like && (Ho < H || Do < D)) {
        /* a narrower output receives the sum over the broadcast axis */
        open_row_loop(g, &g->body, Ho * Do, reg, NULL);
        rg_str_printf(&g->body,
                      "            const int h0 = i / %d, d0 = i %% %d;\n"
                      "            double r = 0.0;\n"
                      "            for (int hh = 0; hh < %d; hh++)\n"
                      "                for (int dd = 0; dd < %d; dd++) {\n"
                      "                    const int h = %s, d = %s; (void)h; (void)d;\n"
                      "                    r += %s;\n"
                      "                }\n"
                      "            { const int h = h0, d = d0; (void)h; (void)d;\n",
                      Do, Do, Ho < H ? H : 1, Do < D ? D : 1, Ho < H ? "hh" : "h0", Do < D ? "dd" : "d0",
                      val);
        if (emit_store(g, s, "r", err)) return -1;
        rg_str_puts(&g->body, "            }\n");
        close_row_loop(g, &g->body, reg);
        return 0;
    }
    int vec = g->nvec > 0;
    if (reg) {
        /* vector loads cover V elements at i0, which the register order walks together */
        RG_ASSERT(!vec || reg_vec(g, vt_heads(out) * out->dim) == g->V);
        open_row_loop(g, &g->body, vt_heads(out) * out->dim, 1, vec ? g->vec_loads.s : NULL);
        rg_str_printf(&g->body, "            const int h = i / %d, d = i %% %d; (void)h; (void)d;\n", out->dim,
                      out->dim);
    } else if (vec) {
        if (vector_atomic(g, s, out)) return emit_vector_atomic(g, s, out, val, err);
        open_vec_elem_loop(g, out);
    } else {
        open_elem_loop(g, out);
    }
    rg_str_printf(&g->body, "            const %s r = %s;\n", f32 ? "float" : "double", val);
    if (emit_store(g, s, "r", err)) return -1;
    if (reg) close_row_loop(g, &g->body, 1);
    else rg_str_puts(&g->body, vec ? "            }\n        }\n" : "        }\n");
    return 0;
}

/* The sum of p over the row group's lanes, every lane getting it (f32: p is a float). */
static const char *group_sum(const kgen *g, int f32)
{
    switch (g->L) {
    case 32: return f32 ? "warp_sumf(p)" : "warp_sum(p)";
    case 16: return f32 ? "group_sumf(p, gmask, 16)" : "group_sum(p, gmask, 16)";
    case 8: return f32 ? "group_sumf(p, gmask, 8)" : "group_sum(p, gmask, 8)";
    default: RG_ASSERT(g->L == 4); return f32 ? "group_sumf(p, gmask, 4)" : "group_sum(p, gmask, 4)";
    }
}

/* A dot product's operands: their elements (h, dd) in ra and rb, the terms per head D (the wider
 * operand's row) and the heads H of the broadcast shape. */
static int dot_operands(kgen *g, const ir_stmt *s, char *ra, char *rb, size_t n, int *D, int *H, rg_err *err)
{
    const ir_var *a = V(g, s->in[0].var);
    const ir_var *b = s->in[1].var >= 0 ? V(g, s->in[1].var) : a;
    int Dmax;
    *D = a->dim > b->dim ? a->dim : b->dim;
    iter_shape(g, s, H, &Dmax);
    return operand_ref(g, &s->in[0], "h", "dd", ra, n, err) || operand_ref(g, &s->in[1], "h", "dd", rb, n, err) ? -1 : 0;
}

/* Who stores a group dot product's sum, which the shuffle reduction leaves with every lane: lane 0 into
 * the shared scratch, or, for scalars=replicated, every lane into its own registers. */
static const char *dot_guard(const kgen *g) { return g->prologue ? "" : "if (lane == 0) "; }

/* A one-head dot product whose rows a lane reads V elements at a time (vec=V): each lane takes V
 * consecutive terms at i0 = lane * V, L * V apart, an operand in device memory in one vector load
 * (vec_operand), instead of one element a load, L apart. Fewer, wider loads of the gathered rows:
 * the attention traversals' time goes to their L1 accesses. Returns 1, having emitted nothing, where
 * an operand cannot be read so (a scratch row, a lane's register): emit_dot's loop then reads it. */
static int emit_dot_vec(kgen *g, const ir_stmt *s, int D, rg_err *err)
{
    char ra[512], rb[512];
    vec_begin(g, 1, D, D);
    int rc = operand_ref(g, &s->in[0], "h", "dd", ra, sizeof ra, err) ||
             operand_ref(g, &s->in[1], "h", "dd", rb, sizeof rb, err);
    g->vec_on = 0;
    if (rc) return -1;
    int operands = 0;
    for (int k = 0; k < 2; k++) operands += s->in[k].acc != IR_ACC_CONST && s->in[k].var >= 0;
    if (g->nvec < operands) {   /* an operand read element by element: emit_dot's loop */
        rg_str_free(&g->vec_loads);
        return 1;
    }
    int f32 = f32_feature_arith(g, s);
    const char *ty = f32 ? "float" : "double";
    rg_str_printf(&g->body,
                  "        {\n"
                  "            %s p = 0.0;\n"
                  "            for (int i0 = lane * %d; i0 < %d; i0 += %d) {\n%s"
                  "                #pragma unroll\n"
                  "                for (int vu = 0; vu < %d; vu++) p = fma((%s)%s, (%s)%s, p);\n"
                  "            }\n"
                  "            p = %s;\n"
                  "            const int h = 0, d = 0; (void)h; (void)d;\n"
                  "            %s{\n",
                  ty, g->V, D, g->L * g->V, g->vec_loads.s ? g->vec_loads.s : "", g->V, ty, ra, ty, rb,
                  group_sum(g, f32), dot_guard(g));
    if (emit_store(g, s, "p", err)) return -1;
    rg_str_puts(&g->body, "            }\n        }\n");
    return 0;
}

static int emit_dot(kgen *g, const ir_stmt *s, rg_err *err)
{
    const ir_var *out = V(g, s->out.var);
    int D, H;
    char ra[512], rb[512];
    RG_ASSERT(!stores_to_regs(g, s));   /* lane 0 stores each head's sum: plan_registers keeps those shared */
    iter_shape(g, s, &H, &D);
    if (g->V > 1 && H == 1 && vt_heads(out) == 1 && D % g->V == 0) {
        int rc = emit_dot_vec(g, s, D, err);
        if (rc <= 0) return rc;
    }
    if (dot_operands(g, s, ra, rb, sizeof ra, &D, &H, err)) return -1;
    int f32 = f32_feature_arith(g, s);
    const char *ty = f32 ? "float" : "double";
    if (vt_heads(out) == 1 && H > 1) {
        /* one-head output of per-head operands: the sum over heads too */
        rg_str_printf(&g->body,
                      "        {\n"
                      "            %s p = 0.0;\n"
                      "            for (int h = 0; h < %d; h++)\n"
                      "                for (int dd = lane; dd < %d; dd += %d) p = fma((%s)%s, (%s)%s, p);\n"
                      "            p = %s;\n"
                      "            const int h = 0, d = 0; (void)h; (void)d;\n"
                      "            %s{\n",
                      ty, H, D, g->L, ty, ra, ty, rb, group_sum(g, f32), dot_guard(g));
    } else {
        rg_str_printf(&g->body,
                      "        for (int h = 0; h < %d; h++) {\n"
                      "            %s p = 0.0;\n"
                      "            for (int dd = lane; dd < %d; dd += %d) p = fma((%s)%s, (%s)%s, p);\n"
                      "            p = %s;\n"
                      "            const int d = 0; (void)d;\n"
                      "            %s{\n",
                      vt_heads(out), ty, D, g->L, ty, ra, ty, rb, group_sum(g, f32), dot_guard(g));
    }
    if (emit_store(g, s, "p", err)) return -1;
    rg_str_puts(&g->body, "            }\n        }\n");
    return 0;
}

/* `var` of lane `from` of the row group (an index within the group), taken by a shuffle. */
static void emit_shfl(const kgen *g, rg_str *b, const char *var, const char *from)
{
    if (g->L == 32) rg_str_printf(b, "__shfl_sync(0xffffffffu, %s, %s)", var, from);
    else rg_str_printf(b, "__shfl_sync(gmask, %s, %s, %d)", var, from, g->L);
}

/* Broadcast of `var` from lane j of the row group into `out`. */
static void emit_bcast(const kgen *g, rg_str *b, const char *var) { emit_shfl(g, b, var, "j"); }

/* The ids of edge j of the row group's L (fixed_dn: the destination all share, or NULL), each lane's
 * fetched ones broadcast; `all`: every id, else those the statements read. */
static void emit_edge_ids(const kgen *g, rg_str *b, const char *fixed_dn, int all, const char *indent)
{
    if (all || g->needs_e) {   /* e_l holds no edge id in the dst-sorted order otherwise */
        rg_str_printf(b, "%sconst int e = ", indent);
        emit_bcast(g, b, "e_l");
        rg_str_puts(b, "; (void)e;\n");
    }
    if (all || g->needs_q) rg_str_printf(b, "%sconst int qpos = qb + j; (void)qpos;\n", indent);
    rg_str_printf(b, "%sconst int sn = ", indent);
    emit_bcast(g, b, "sn_l");
    rg_str_puts(b, ", t = ");
    emit_bcast(g, b, "t_l");
    rg_str_puts(b, "; (void)sn; (void)t;\n");
    rg_str_printf(b, "%sconst int dn = ", indent);
    if (fixed_dn) rg_str_puts(b, fixed_dn);
    else emit_bcast(g, b, "dn_l");
    rg_str_puts(b, "; (void)dn;\n");
    if (all || g->needs_cr) {
        rg_str_printf(b, "%sconst int cr = ", indent);
        emit_bcast(g, b, "cr_l");
        rg_str_puts(b, "; (void)cr;\n");
    }
    for (int v = 0; v < g->ir->nvars && !all; v++) {   /* all: a prologue's dot products, which read none */
        if (!g->pf_bcast[v]) continue;
        char from[32];
        snprintf(from, sizeof from, "pf%d_l", v);
        rg_str_printf(b, "%sconst double pf%d = ", indent, v);
        emit_bcast(g, b, from);
        rg_str_printf(b, "; (void)pf%d;\n", v);
    }
}

/* scalars=lane: a dot product of the lanes' prologue. The row group forms the dot products of its L
 * edges together, each lane over its share of the features (coalesced loads, D/L terms a lane and
 * edge, L independent chains), then a transposed reduction (L - 1 shuffles a lane, where L group
 * sums take L log2 L) leaves edge j's sums with lane j, which keeps them as its own. Every lane of
 * the group runs it (the prologue is outside the loads' guard); edges past the run's end (j >= cnt)
 * add 0. */
static int emit_lane_dot(kgen *g, const ir_stmt *s, rg_err *err)
{
    const ir_var *out = V(g, s->out.var);
    const ir_var *a = V(g, s->in[0].var);
    const ir_var *bv = s->in[1].var >= 0 ? V(g, s->in[1].var) : a;
    int D, H, L = g->L, Ho = vt_heads(out);
    char ra[512], rb[512];
    if (dot_operands(g, s, ra, rb, sizeof ra, &D, &H, err)) return -1;
    /* float32 partial sums of float32 or bfloat16 rows (as the GEMM template sums them; a D-term float
     * sum is within the validation tolerance): half the registers of double ones, which cost the
     * gather-bound kernels occupancy (HGT at 16 lanes: 64 registers against 32 without the prologue) */
    const char *ty = vt_is_f64(a) || vt_is_f64(bv) ? "double" : "float";
    /* the operands' rows: an edge whose rows are the previous edge's takes its partial sums (RGAT's
     * destination term, feature[dst] . w[etype], repeats along a destination's edges of one type) */
    char rowa[96] = "0", rowb[96] = "0";
    if ((s->in[0].var >= 0 && s->in[0].acc != IR_ACC_CONST && row_expr(g, s->in[0].var, s->in[0].acc, rowa, sizeof rowa, err)) ||
        (s->in[1].var >= 0 && s->in[1].acc != IR_ACC_CONST && row_expr(g, s->in[1].var, s->in[1].acc, rowb, sizeof rowb, err)))
        return -1;
    rg_str *b = &g->body;
    rg_str_printf(b, "        {\n            %s pj_[%d];\n            int pa_ = -1, pb_ = -1;\n            #pragma unroll\n"
                     "            for (int j = 0; j < %d; j++) {\n", ty, Ho * L, L);
    emit_edge_ids(g, b, walk_dst(g), 1, "                ");
    rg_str_printf(b, "                const int ka_ = %s, kb_ = %s, same_ = j > 0 && ka_ == pa_ && kb_ == pb_;\n"
                     "                pa_ = ka_;\n                pb_ = kb_;\n", rowa, rowb);
    if (Ho == 1 && H > 1)   /* one-head output of per-head operands: the sum over heads too */
        rg_str_printf(b, "                %s p = 0;\n"
                         "                if (same_) p = pj_[j > 0 ? j - 1 : 0];\n"
                         "                else if (j < cnt)\n"
                         "                    for (int h = 0; h < %d; h++)\n"
                         "                        for (int dd = lane; dd < %d; dd += %d) p = fma((%s)%s, (%s)%s, p);\n"
                         "                pj_[j] = p;\n",
                      ty, H, D, L, ty, ra, ty, rb);
    else
        rg_str_printf(b, "                #pragma unroll\n"
                         "                for (int h = 0; h < %d; h++) {\n"
                         "                    %s p = 0;\n"
                         "                    if (same_) p = pj_[h * %d + (j > 0 ? j - 1 : 0)];\n"
                         "                    else if (j < cnt) for (int dd = lane; dd < %d; dd += %d) p = fma((%s)%s, (%s)%s, p);\n"
                         "                    pj_[h * %d + j] = p;\n"
                         "                }\n",
                      Ho, ty, L, D, L, ty, ra, ty, rb, L);
    /* written out step by step: each select between two sums of constant index, so that the array
     * stays in registers (a loop left `pj_[up ? k : k + w]` to local memory at 16 lanes) */
    const char *xmask = L == 32 ? "0xffffffffu" : "gmask";
    rg_str_puts(b, "            }\n");
    for (int h = 0; h < Ho; h++)
        for (int w = L / 2; w >= 1; w >>= 1)
            for (int k = 0; k < w; k++)
                rg_str_printf(b, "            { const %s lo = pj_[%d], hi = pj_[%d];\n"
                                 "              pj_[%d] = ((lane & %d) ? hi : lo) + __shfl_xor_sync(%s, (lane & %d) ? lo : hi, %d, %d); }\n",
                              ty, h * L + k, h * L + k + w, h * L + k, w, xmask, w, w, L);
    rg_str_printf(b, "            #pragma unroll\n"
                     "            for (int h = 0; h < %d; h++) {\n"
                     "                const double p = (double)pj_[h * %d];\n"
                     "                const int d = 0; (void)d;\n",
                  Ho, L);
    if (emit_store(g, s, "p", err)) return -1;
    rg_str_puts(b, "            }\n        }\n");
    return 0;
}

/* A linear operator evaluated row by row: a message computed in the traversal (msg=trav), or the
 * fallback for a linear the GEMM template cannot take. Each lane forms its output elements as float32
 * dot products over K, as the GEMM template does (a K-term float sum is within the validation
 * tolerance), in double where the input row is float64 (vt_is_f64). The x row is one broadcast
 * address per k, the weight's row coalesced across lanes and L1-resident when consecutive edges share
 * a relation. */
static int emit_rowwise_linear(kgen *g, const ir_stmt *s, rg_err *err)
{
    const ir_var *out = V(g, s->out.var), *x = V(g, s->in[0].var), *w = V(g, s->in[1].var);
    int K = s->transpose_w ? w->dim : w->rows_dim, N = s->transpose_w ? w->rows_dim : w->dim;
    int per_head = vt_heads(w) > 1;
    char xrow[96], wrow[96];
    if (row_expr(g, s->in[0].var, s->in[0].acc, xrow, sizeof xrow, err) ||
        row_expr(g, s->in[1].var, s->in[1].acc, wrow, sizeof wrow, err))
        return -1;
    if (g->scr_off[s->in[0].var] >= 0) return rg_errf(err, "row-wise linear needs a materialized input");
    g->var_used[s->in[0].var] = g->var_used[s->in[1].var] = 1;
    long long ldx = ir_var_row_width(x), wslice = (long long)vt_heads(w) * K * N;
    const char *welem = s->transpose_w ? "(size_t)nn * K_ + k" : "(size_t)k * N_ + nn";
    char xk[64];
    int reg = stores_to_regs(g, s);
    const char *acc_t = vt_is_f64(x) ? "double" : "float";   /* a float64 per-row input keeps its digits */
    open_row_loop(g, &g->body, vt_heads(out) * out->dim, reg, NULL);
    rg_str_printf(&g->body,
                  "            const int h = i / %d, d = i %% %d; (void)d;\n"
                  "            const int K_ = %d, N_ = %d;\n"
                  "            const int hh = %s, nn = %s;\n"
                  "            const auto* xr = v%d + (size_t)(%s) * %lld + %s;\n"
                  "            const float* wr = v%d + (size_t)(%s) * %lld + (size_t)hh * K_ * N_;\n"
                  "            %s r = 0;\n"
                  "#pragma unroll 16\n"
                  "            for (int k = 0; k < K_; k++) r = fma((%s)%s, (%s)wr[%s], r);\n",
                  per_head ? out->dim : vt_heads(out) * out->dim,
                  per_head ? out->dim : vt_heads(out) * out->dim, K, N, per_head ? "h" : "0", per_head ? "d" : "i",
                  s->in[0].var, xrow, ldx, per_head && vt_heads(x) > 1 ? "(size_t)h * K_" : "0", s->in[1].var, wrow,
                  wslice, acc_t, acc_t, vt_load(x, "xr[k]", xk, sizeof xk), acc_t, welem);
    (void)N;
    if (emit_store(g, s, "r", err)) return -1;
    close_row_loop(g, &g->body, reg);
    return 0;
}

/* Weight-gradient contribution of one row: dW[slice] += x^T dy (atomics). */
static int emit_rowwise_wgrad(kgen *g, const ir_stmt *s, rg_err *err)
{
    const ir_var *w = V(g, s->out.var), *x = V(g, s->in[0].var), *dy = V(g, s->in[1].var);
    char wrow[96], xr[512], dr[512];
    if (row_expr(g, s->out.var, s->out.acc, wrow, sizeof wrow, err)) return -1;
    g->var_used[s->out.var] = g->var_written[s->out.var] = 1;
    int H = vt_heads(w);
    if (w->rows_dim == 0) {
        /* vector weight: the broadcast product x * dy, reduced into w's [heads][dim] slice */
        int BH, BD;
        char wel[160];
        iter_shape(g, s, &BH, &BD);
        elem_expr(w, "h", "d", wel, sizeof wel);
        if (operand_ref(g, &s->in[0], "h", "d", xr, sizeof xr, err) ||
            operand_ref(g, &s->in[1], "h", "d", dr, sizeof dr, err))
            return -1;
        char home[200], term[1200];
        /* farith=f32: the product in float32, one conversion; the sum keeps float64 */
        if (g->cfg->farith) snprintf(term, sizeof term, "(double)((float)(%s) * (float)(%s))", dr, xr);
        else snprintf(term, sizeof term, "(double)(%s) * (double)(%s)", dr, xr);
        if (stores_to_wregs(g, s)) {
            /* wacc=reg: each lane adds into the registers of its own elements (plan_registers, wacc_obstacle:
             * the loop's elements are w's own), in open_row_loop's order */
            open_row_loop(g, &g->body, BH * BD, 1, NULL);
            row_home(g, g->wacc_off, s->out.var, wel, home, sizeof home);
            rg_str_printf(&g->body, "            const int h = i / %d, d = i %% %d; (void)h; (void)d;\n"
                                    "            %s += %s;\n", BD, BD, home, term);
            close_row_loop(g, &g->body, 1);
        } else if (g->wacc_off[s->out.var] >= 0 && s->out.acc == IR_ACC_ETYPE) {
            row_home(g, g->wacc_off, s->out.var, wel, home, sizeof home);
            /* Where each element of the loop is its own element of w, no two lanes share one and a
             * plain sum does: a shared-memory double atomic is a compare-and-swap loop on sm_90. */
            int own = H == BH && w->dim == BD;
            char sum[1400];
            snprintf(sum, sizeof sum, own ? "%s += %s" : "atomicAdd(&%s, %s)", home, term);
            rg_str_printf(&g->body,
                          "        for (int i = lane; i < %d; i += %d) {\n"
                          "            const int h = i / %d, d = i %% %d;\n"
                          "            %s;\n"
                          "        }\n",
                          BH * BD, g->L, BD, BD, sum);
        } else {
            rg_str_printf(&g->body,
                          "        for (int i = lane; i < %d; i += %d) {\n"
                          "            const int h = i / %d, d = i %% %d;\n"
                          "            atomicAdd(&v%d[(size_t)(%s) * %d + %s], %s * %s);\n"
                          "        }\n",
                          BH * BD, g->L, BD, BD, s->out.var, wrow, H * w->dim, wel, dr, xr);
        }
        return 0;
    }
    int K = w->rows_dim, N = w->dim;
    /* x and dy rows are seen flat when the weight is shared across heads */
    if (H == 1) {
        char xrow[96], drow[96];
        if (row_expr(g, s->in[0].var, s->in[0].acc, xrow, sizeof xrow, err) ||
            row_expr(g, s->in[1].var, s->in[1].acc, drow, sizeof drow, err))
            return -1;
        if (g->scr_off[s->in[0].var] >= 0 || g->scr_off[s->in[1].var] >= 0)
            return rg_errf(err, "row-wise weight gradient needs materialized inputs");
        g->var_used[s->in[0].var] = g->var_used[s->in[1].var] = 1;
        char at[256];
        snprintf(at, sizeof at, "v%d[(size_t)(%s) * %lld + k]", s->in[0].var, xrow, (long long)ir_var_row_width(x));
        vt_load(x, at, xr, sizeof xr);
        snprintf(at, sizeof at, "v%d[(size_t)(%s) * %lld + c]", s->in[1].var, drow, (long long)ir_var_row_width(dy));
        vt_load(dy, at, dr, sizeof dr);
    } else {
        if (operand_ref(g, &s->in[0], "h", "k", xr, sizeof xr, err) ||
            operand_ref(g, &s->in[1], "h", "c", dr, sizeof dr, err))
            return -1;
    }
    rg_str_printf(&g->body,
                  "        for (int i = lane; i < %d; i += %d) {\n"
                  "            const int h = i / %d, k = (i / %d) %% %d, c = i %% %d; (void)h;\n"
                  "            atomicAdd(&v%d[(size_t)(%s) * %d + i], %s * %s);\n"
                  "        }\n",
                  H * K * N, g->L, K * N, N, K, N, s->out.var, wrow, H * K * N, xr, dr);
    return 0;
}

/* Whether an operand of s is read from the shared scratch row. */
static int reads_shared(const kgen *g, const ir_stmt *s)
{
    for (int k = 0; k < s->nin; k++) {
        int v = s->in[k].var;
        if (v >= 0 && ((g->scr_off[v] >= 0 && g->lane_off[v] < 0) || acc_access(g, v, s->in[k].acc))) return 1;
    }
    return 0;
}

/* ---- rmax=on: the single-pass softmax under a running maximum (psm_find_online) ---- */

static const char *gmask_of(const kgen *g) { return g->L == 32 ? "0xffffffffu" : "gmask"; }

/* m_ = the largest of the row group's lanes' m_, in every lane (butterfly shuffles), at `indent`. */
static void emit_group_max(const kgen *g, rg_str *b, const char *indent)
{
    for (int o = g->L / 2; o >= 1; o /= 2) {
        if (g->L == 32) rg_str_printf(b, "%sm_ = fmax(m_, __shfl_xor_sync(%s, m_, %d));\n", indent, gmask_of(g), o);
        else rg_str_printf(b, "%sm_ = fmax(m_, __shfl_xor_sync(%s, m_, %d, %d));\n", indent, gmask_of(g), o, g->L);
    }
}

/* The head whose maximum scales element `i` of a sum of x's shape (its heads, or one for all). */
static void rm_head_of(const kgen *g, int v, char *out, size_t n)
{
    const ir_var *x = V(g, v);
    if (vt_heads(x) == g->rm_heads) snprintf(out, n, "i / %d", x->dim);
    else snprintf(out, n, "0");
}

/* Multiplies the lane's elements of the softmax's two sums by sc_[head], in their own element order
 * (each lane its share of the group's row, also inside a lane's own statements); a barrier after
 * sums kept in shared memory. */
static void emit_rm_rescale(kgen *g, rg_str *b)
{
    int saved = g->prologue, shared = 0;
    g->prologue = 0;
    const int sums[2] = {g->rm.sum, g->rm.un};
    for (int k = 0; k < 2; k++) {
        int v = sums[k], reg = g->reg_slots[v] > 0;
        char home[64], head[32];
        open_row_loop(g, b, (int)ir_var_row_width(V(g, v)), reg, NULL);
        row_home(g, g->acc_off, v, "i", home, sizeof home);
        rm_head_of(g, v, head, sizeof head);
        rg_str_printf(b, "            %s *= sc_[%s];\n", home, head);
        close_row_loop(g, b, reg);
        shared |= !reg;
    }
    if (shared) rg_str_printf(b, "        %s;\n", gsync(g));
    g->prologue = saved;
}

/* Before the softmax's exp: the running maximum per head takes this edge's logit (rm_lane: the largest
 * of the group's step of edges, one per lane, so the sums are rescaled once a step), and where it grows
 * the sums so far are multiplied by exp(old - new); the exp then subtracts it (elementwise_value). */
static int emit_rm_step(kgen *g, const ir_stmt *s, rg_err *err)
{
    char x[512];
    if (operand_ref(g, &s->in[0], "h", "d", x, sizeof x, err)) return -1;
    rg_str *b = &g->body;
    rg_str_printf(b, "        {   /* rmax=on: the running maximum of the logits; the sums rescaled when it grows */\n"
                     "        double sc_[%d];\n        int up_ = 0;\n        #pragma unroll\n"
                     "        for (int h = 0; h < %d; h++) {\n            const int d = 0; (void)d;\n",
                  g->rm_heads, g->rm_heads);
    if (g->rm_lane) {
        /* lanes past the walk's end hold no edge: the maximum so far stands in for them */
        rg_str_printf(b, "            double m_ = ql < q_end ? (double)(%s) : rm_[h];\n", x);
        emit_group_max(g, b, "            ");
    } else {
        rg_str_printf(b, "            const double m_ = %s;\n", x);
    }
    rg_str_puts(b, "            sc_[h] = 1.0;\n"
                   "            if (m_ > rm_[h]) {\n"
                   "                sc_[h] = exp(rm_[h] - m_);\n"
                   "                rm_[h] = m_;\n"
                   "                up_ = 1;\n"
                   "            }\n"
                   "        }\n"
                   "        if (up_) {\n");
    emit_rm_rescale(g, b);
    rg_str_puts(b, "        }\n        }\n");
    return 0;
}

static int is_rm_exp(const kgen *g, const ir_stmt *s) { return g->rm_agg && s == &g->ir->stmts[g->rm.x]; }

/* The softmax's exp under the running maximum. */
static int emit_rm_exp(kgen *g, const ir_stmt *s, rg_err *err)
{
    if (emit_rm_step(g, s, err)) return -1;
    g->rm_shift = 1;
    int rc = emit_elementwise(g, s, err);
    g->rm_shift = 0;
    return rc;
}

static int emit_stmt(kgen *g, const ir_stmt *s, rg_err *err)
{
    int rc, fw = !g->prologue && g->once[s->out.var] == 2;
    if (fw) rg_str_printf(&g->body, "        %s fw%d = 0;\n", vt_ctype(V(g, s->out.var)), s->out.var);
    switch (s->op) {
    case IR_OP_DOT: rc = g->prologue && !g->replicated ? emit_lane_dot(g, s, err) : emit_dot(g, s, err); break;
    case IR_OP_LINEAR: rc = emit_rowwise_linear(g, s, err); break;
    case IR_OP_WGRAD: rc = emit_rowwise_wgrad(g, s, err); break;
    case IR_OP_WEIGHT_MM: case IR_OP_NLL_LOSS: case IR_OP_NLL_GRAD:
        return rg_errf(err, "%s cannot be part of a traversal", ir_op_name(s->op));
    default: rc = is_rm_exp(g, s) ? emit_rm_exp(g, s, err) : emit_elementwise(g, s, err); break;
    }
    if (rc) return -1;
    if (g->prologue) return 0;   /* a lane's own statement: nothing another lane reads */
    /* a statement that adds into its lane's own registers and reads nothing shared leaves nothing
     * another lane reads, nor a shared value a later write could overtake: no barrier */
    if ((stores_to_regs(g, s) || stores_to_wregs(g, s)) && !reads_shared(g, s)) return 0;
    rg_str_printf(&g->body, "        %s;\n", gsync(g));
    if (fw) {   /* lane 0 stored the row's one element (a width-1 row's loop, a dot product's sum) */
        char name[24];
        snprintf(name, sizeof name, "fw%d", s->out.var);
        rg_str_printf(&g->body, "        %s = ", name);
        emit_shfl(g, &g->body, name, "0");
        rg_str_puts(&g->body, ";\n");
        g->fw_live[s->out.var] = 1;
    }
    return 0;
}

/* ---- phases and scratch ---- */

static int aggregated_at(const ir_stmt *s, int var)
{
    return s->out.var == var && s->accumulate && (s->out.acc == IR_ACC_DST || s->out.acc == IR_ACC_SRC);
}

int et_phases(const ir_program *ir, const lw_trav *tr, int *phases)
{
    RG_ASSERT(phases);   /* a statement's phase follows from the earlier ones': without them every count is 1 */
    int phase = 0;
    for (int i = 0; i < tr->nstmts; i++) {
        const ir_stmt *s = &ir->stmts[tr->stmts[i].stmt];
        for (int j = 0; j < i; j++) {
            if (phases[j] != phase) continue;
            const ir_stmt *w = &ir->stmts[tr->stmts[j].stmt];
            for (int k = 0; k < s->nin; k++)
                if (s->in[k].var >= 0 && aggregated_at(w, s->in[k].var) && s->in[k].acc != IR_ACC_ROW) {
                    phase++;
                    goto next;
                }
        }
    next:
        phases[i] = phase;
    }
    return phase + 1;
}

static form form_of(const lw_trav *tr, const cg_config *cfg)
{
    if (tr->dom == IR_DOM_NODE) return FORM_NODE_DOM;
    if (tr->dom == IR_DOM_TYPE) return FORM_TYPE;
    if (tr->dom == IR_DOM_GLOBAL) return FORM_GLOBAL;
    if (tr->compact_rows) return FORM_UNIQUE;
    if (cfg->node_centric) return FORM_NODE;
    return cfg->partial_agg && tr->has_dst_aggregation ? FORM_EDGE_DSTRUN : FORM_EDGE;
}

static void add_scratch(kgen *g, int *off, int var)
{
    if (off[var] >= 0) return;
    off[var] = g->scr_size;
    /* an accumulator in registers has no shared home: the offset only marks it as an accumulator */
    if ((off == g->acc_off && g->reg_slots[var]) || (off == g->wacc_off && g->wreg[var])) return;
    g->scr_size += (int)ir_var_row_width(V(g, var)) * (off == g->wacc_off ? g->wslots : 1);
}

/* Whether statement i of the traversal runs in the kernel of `phase` (a node-centric kernel runs all)
 * and belongs to its part (crsum=split). */
static int in_kernel(const kgen *g, const int *phases, int phase, int i)
{
    return (!g->keep || g->keep[i]) && (phases[i] == phase || g->f == FORM_NODE);
}

/* Whether statement s sums into a compact (src, etype) row: a gradient of a per-relation message. */
static int compact_sum(const ir_program *ir, const ir_stmt *s)
{
    const ir_var *v = &ir->vars[s->out.var];
    return s->accumulate && s->out.acc == IR_ACC_ROW && v->kind == IR_VAR_EDGE && v->layout == IR_LAYOUT_COMPACT;
}

/* Whether statement s sums a weight gradient over rows. */
static int weight_sum(const ir_program *ir, const ir_stmt *s)
{
    return s->accumulate && ir->vars[s->out.var].kind == IR_VAR_WEIGHT;
}

int et_compact_walk(const ir_program *ir, const lw_trav *tr, const cg_config *cfg)
{
    if (cfg->crsum == CFG_CRSUM_ATOMIC || tr->dom != IR_DOM_EDGE || tr->compact_rows) return 0;
    int any = 0;
    for (int i = 0; i < tr->nstmts; i++) {
        const ir_stmt *s = &ir->stmts[tr->stmts[i].stmt];
        if (!compact_sum(ir, s)) continue;
        any = 1;
        for (int j = 0; j < tr->nstmts; j++)
            if (ir_stmt_reads_operand(&ir->stmts[tr->stmts[j].stmt], s->out.var)) return 0;
    }
    return any;
}

/* Whether statement s writes a per-row temporary (a scratch row, plan_scratch). */
static int writes_temporary(const ir_stmt *s, const int *mat)
{
    return !mat[s->out.var] && s->out.acc == IR_ACC_ROW;
}

int et_split_part(const ir_program *ir, const lw_trav *tr, const int *mat, int part, int *keep)
{
    RG_ASSERT(part == 1 || part == 2);
    for (int i = 0; i < tr->nstmts; i++) {
        const ir_stmt *s = &ir->stmts[tr->stmts[i].stmt];
        int first = compact_sum(ir, s) || weight_sum(ir, s);
        keep[i] = part == 1 ? first : !first && !writes_temporary(s, mat);
    }
    /* the temporaries the kept statements read, and their own inputs, to a fixed point */
    int *need = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof *need);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < tr->nstmts; i++) {
            const ir_stmt *s = &ir->stmts[tr->stmts[i].stmt];
            if (!keep[i] && writes_temporary(s, mat) && need[s->out.var]) keep[i] = changed = 1;
            if (!keep[i]) continue;
            for (int k = 0; k < s->nin; k++)
                if (s->in[k].var >= 0 && !need[s->in[k].var]) need[s->in[k].var] = changed = 1;
        }
    }
    free(need);
    int n = 0;
    for (int i = 0; i < tr->nstmts; i++) n += keep[i];
    return n;
}

/* Whether statement s sums a weight gradient over the rows into partial sums per edge type (a run
 * of unique rows is sorted by type; the edge forms take slots, see plan_wacc). */
static int wacc_candidate(const kgen *g, const ir_stmt *s)
{
    int form_ok = g->f == FORM_EDGE || g->f == FORM_EDGE_DSTRUN || g->f == FORM_NODE || g->f == FORM_UNIQUE;
    const ir_var *v = V(g, s->out.var);
    return form_ok && g->cfg->partial_agg && s->accumulate && s->out.acc == IR_ACC_ETYPE &&
           v->kind == IR_VAR_WEIGHT && ir_var_row_width(v) <= 256;
}

/* Gives shared-memory homes to register-only temporaries and to per-node accumulators. */
static void plan_scratch(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    for (int i = 0; i < tr->nstmts; i++) {
        if (!in_kernel(g, phases, phase, i)) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        int v = s->out.var;
        if (!g->mat[v] && s->out.acc == IR_ACC_ROW) add_scratch(g, g->scr_off, v);
        if ((g->f == FORM_NODE || g->f == FORM_EDGE_DSTRUN) && s->out.acc == IR_ACC_DST && s->accumulate &&
            V(g, v)->kind == IR_VAR_NODE)
            add_scratch(g, g->acc_off, v);
        /* walking compact rows in the (etype, src) order: a row's sums stay in the scratch until the
         * row changes (et_compact_walk: no statement reads them back) */
        if (g->crrun && compact_sum(g->ir, s)) add_scratch(g, g->acc_off, v);
        /* weight gradients summed over rows: partial sums per edge type (plan_wacc), instead of one
         * atomic per row and element on a handful of addresses */
        if (wacc_candidate(g, s)) add_scratch(g, g->wacc_off, v);
    }
}

/* The rows a row group walks and the edge-type slots of its weight-gradient sums. Without such sums
 * the forms keep their runs (32 positions, one unique row). With them the run is the config's wrun:
 * the sums reach device memory once per slot and run instead of once per change of edge type, on a
 * handful of contended addresses. A dst-sorted run sees its destinations' edge types over and over
 * (in_eid keeps each node's edges in (etype, src) order), so it keeps up to WACC_SLOTS types at once
 * within WACC_BLOCK doubles a block; unique rows and the edges in their stored (etype, src) order are
 * sorted by type (one slot); a node-centric warp takes one node whatever the run. */
static void plan_wacc(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    int64_t width = 0;
    for (int i = 0; i < tr->nstmts; i++) {
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        if (in_kernel(g, phases, phase, i) && wacc_candidate(g, s)) width += ir_var_row_width(V(g, s->out.var));
    }
    g->wslots = 1;
    g->run = g->f == FORM_EDGE_DSTRUN ? DST_RUN : g->f == FORM_EDGE ? EDGE_CHUNK : 1;
    /* a compact row's sums reach device memory once per row and run: its run is wrun too */
    if ((!width && !g->crrun) || g->f == FORM_NODE) return;
    g->run = g->cfg->wrun;
    /* unique rows and the edges in their stored order are sorted by type: one slot */
    if (g->f == FORM_UNIQUE || g->f == FORM_EDGE || !width) return;
    int64_t fit = WACC_BLOCK / (width * g->rpb);
    g->wslots = fit < 1 ? 1 : fit > WACC_SLOTS ? WACC_SLOTS : (int)fit;
}

/* Why accumulator v cannot live in registers, or NULL. A lane holds only the elements it owns, so
 * every statement must touch v at its own element: stores in an element loop over v's row, which
 * a dot product is not (lane 0 stores each head's sum), and no reads (a later phase reads the
 * sums broadcast over another shape: elements other lanes own). */
static const char *reg_obstacle(const kgen *g, const lw_trav *tr, const int *phases, int phase, int v)
{
    const ir_var *x = V(g, v);
    if (ir_var_row_width(x) != (int64_t)vt_heads(x) * x->dim) return "its row is not heads x dim elements";
    for (int i = 0; i < tr->nstmts; i++) {
        if (!in_kernel(g, phases, phase, i)) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        for (int k = 0; k < s->nin; k++)
            if (s->in[k].var == v && acc_access(g, v, s->in[k].acc))
                return "a statement reads it back, at elements other lanes own";
        if (s->out.var == v && acc_access(g, v, s->out.acc) && s->op == IR_OP_DOT)
            return "a dot product stores it, one lane per head";
    }
    return NULL;
}

/* wacc=reg: why weight v's partial sums cannot live in registers, or NULL. As for an accumulator
 * (reg_obstacle), a lane holds only its own elements: every statement of the kernel writing v does so
 * at the loop's own element of v's row (an elementwise statement, or a vector weight's gradient over
 * v's whole [heads][dim] shape), and none reads v. */
static const char *wacc_obstacle(const kgen *g, const lw_trav *tr, const int *phases, int phase, int v)
{
    const ir_var *x = V(g, v);
    if (g->wslots != 1) return "a dst-sorted run keeps several edge types' sums (slots)";
    if (ir_var_row_width(x) != (int64_t)vt_heads(x) * x->dim) return "its row is not heads x dim elements";
    for (int i = 0; i < tr->nstmts; i++) {
        if (!in_kernel(g, phases, phase, i)) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        if (ir_stmt_reads_operand(s, v)) return "a statement reads it back";
        if (s->out.var != v) continue;
        if (s->op == IR_OP_DOT || s->op == IR_OP_LINEAR) return "a statement sums into it across lanes";
        if (s->op == IR_OP_WGRAD) {
            int BH, BD;
            iter_shape(g, s, &BH, &BD);
            if (x->rows_dim != 0 || BH != vt_heads(x) || BD != x->dim) return "lanes share its elements";
        }
    }
    return NULL;
}

typedef const char *(*reg_obstacle_fn)(const kgen *g, const lw_trav *tr, const int *phases, int phase, int v);

/* Puts the sums with a scratch home in `off` (accumulators: acc_off; weight-gradient sums: wacc_off)
 * that `obstacle` allows in registers (their counts a lane in `slots`), within the REG_SLOTS doubles a
 * lane that *used leaves, and notes under `key` where each one lives; returns how many it placed. */
static int place_registers(kgen *g, const lw_trav *tr, const int *phases, int phase, const int *off, int *slots,
                           const char *key, reg_obstacle_fn obstacle, int *used)
{
    int placed = 0;
    for (int v = 0; v < g->ir->nvars; v++) {
        if (off[v] < 0) continue;
        int w = (int)ir_var_row_width(V(g, v));
        const char *why = obstacle(g, tr, phases, phase, v);
        if (!why && *used + reg_count(g, w) > REG_SLOTS) why = "a lane would hold more than 16 doubles of registers";
        if (why) {
            rg_str_printf(&g->acc_note, "; %s: %s stays in shared memory: %s", key, V(g, v)->name, why);
            continue;
        }
        slots[v] = reg_count(g, w);
        *used += slots[v];
        placed++;
        rg_str_printf(&g->acc_note, "; %s: %s in %d register(s) a lane", key, V(g, v)->name, slots[v]);
    }
    return placed;
}

/* acc=reg: the accumulators that allow it in registers (reg_slots); then wacc=reg: the weight-gradient
 * sums (wreg) in what room is left; returns how many were placed. */
static int plan_registers(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    int used = 0, placed = 0;
    if (g->cfg->acc != CFG_ACC_SMEM)
        placed += place_registers(g, tr, phases, phase, g->acc_off, g->reg_slots, "acc=reg", reg_obstacle, &used);
    if (g->cfg->wacc)
        placed += place_registers(g, tr, phases, phase, g->wacc_off, g->wreg, "wacc=reg", wacc_obstacle, &used);
    return placed;
}

/* The scratch row of a kernel: shared homes for temporaries and accumulators, then, under acc=reg,
 * registers for the accumulators that allow them and shared homes again for the rest only. */
static void plan_rows(kgen *g, const lw_trav *tr, const int *phases, int phase, int nphases)
{
    plan_wacc(g, tr, phases, phase);
    for (int pass = 0; pass < 2; pass++) {
        for (int p = 0; p < (g->f == FORM_NODE ? nphases : 1); p++)
            plan_scratch(g, tr, phases, g->f == FORM_NODE ? p : phase);
        if (pass || !plan_registers(g, tr, phases, phase)) return;
        for (int v = 0; v < g->ir->nvars; v++) g->scr_off[v] = g->acc_off[v] = g->wacc_off[v] = -1;
        g->scr_size = 0;
    }
}

/* ---- scalars=lane: the per-edge scalars a lane evaluates for an edge of its own ---- */

/* Ops a lane evaluates alone: the elementwise ones and the dot product (not a row's concatenation
 * or slice, whose rows are features wide, nor the linears). */
static int lane_op(ir_opkind op)
{
    switch (op) {
    case IR_OP_DOT: case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_DIV_NZ:
    case IR_OP_EXP: case IR_OP_LEAKYRELU: case IR_OP_RELU: case IR_OP_GELU: case IR_OP_SIGMOID:
    case IR_OP_GELU_GRAD: case IR_OP_COPY: case IR_OP_LEAKYRELU_GRAD: case IR_OP_RELU_GRAD: return 1;
    default: return 0;
    }
}

/* Whether a statement of the kernel other than `except` writes var. */
static int kernel_writes(const kgen *g, const lw_trav *tr, const int *phases, int phase, int var, int except)
{
    for (int j = 0; j < tr->nstmts; j++)
        if (j != except && in_kernel(g, phases, phase, j) && g->ir->stmts[tr->stmts[j].stmt].out.var == var) return 1;
    return 0;
}

/* Whether every kernel statement writing var is one of `pick` (so var is a lane's own), and, where
 * `last` is given, the index of the last of them. */
static int lane_var(const kgen *g, const lw_trav *tr, const int *phases, int phase, const int *pick, int var,
                    int *last)
{
    int any = 0;
    for (int j = 0; j < tr->nstmts; j++) {
        if (!in_kernel(g, phases, phase, j) || g->ir->stmts[tr->stmts[j].stmt].out.var != var) continue;
        if (!pick[j]) return 0;
        any = 1;
        if (last) *last = j;
    }
    return any;
}

/* What kernel statement i must be by itself to run in the lanes' prologue: an elementwise op or a dot
 * product writing a small per-row temporary (a scratch row) that no other pass over the edges reads
 * (trav=node runs its phases as passes); one that sums into it (a backward chain's gradient of a
 * per-edge scalar) only into one that starts each row at zero. */
static int lane_candidate(const kgen *g, const lw_trav *tr, const int *phases, int phase, int i)
{
    const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
    int v = s->out.var;
    if (!lane_op(s->op) || s->out.acc != IR_ACC_ROW || g->scr_off[v] < 0) return 0;
    if (acc_access(g, v, s->out.acc) || ir_var_row_width(V(g, v)) > LANE_WIDTH) return 0;
    if (s->accumulate && !V(g, v)->zero_init) return 0;
    for (int j = 0; j < tr->nstmts; j++)
        if (in_kernel(g, phases, phase, j) && phases[j] != phases[i] &&
            ir_stmt_reads_operand(&g->ir->stmts[tr->stmts[j].stmt], v))
            return 0;
    return 1;
}

/* Whether candidate i stays picked, given the others picked: every writer of its temporary is picked
 * (a lane holds the whole row), every statement of the group's loop that reads it comes after the last
 * of them (the loop sees the prologue's final values), and it reads only constants, the lanes'
 * temporaries and device memory this kernel does not write (so that running it first, for L edges at
 * once, reads what the group's order would have read). The prologue keeps the statements' order. */
static int lane_keeps(const kgen *g, const lw_trav *tr, const int *phases, int phase, const int *pick, int i)
{
    const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
    int last = -1;
    if (!lane_var(g, tr, phases, phase, pick, s->out.var, &last)) return 0;
    for (int j = 0; j < last; j++)
        if (in_kernel(g, phases, phase, j) && !pick[j] && ir_stmt_reads_operand(&g->ir->stmts[tr->stmts[j].stmt], s->out.var))
            return 0;
    for (int k = 0; k < s->nin; k++) {
        int x = s->in[k].var;
        if (s->in[k].acc == IR_ACC_CONST || x < 0) continue;
        if (acc_access(g, x, s->in[k].acc)) return 0;
        if (g->scr_off[x] >= 0 ? !lane_var(g, tr, phases, phase, pick, x, NULL) : kernel_writes(g, tr, phases, phase, x, -1))
            return 0;
        if (s->op == IR_OP_DOT && g->scr_off[x] >= 0) return 0;   /* emit_lane_dot reads rows at edge j, not the lane's */
    }
    return 1;
}

/* Drops the picked statements whose temporaries, in the statements' order, pass the LANE_TOTAL doubles a
 * lane holds; returns whether it dropped any. */
static int lane_fit(const kgen *g, const lw_trav *tr, int *pick)
{
    int *seen = rg_xcalloc((size_t)g->ir->nvars, sizeof *seen), size = 0, dropped = 0;
    for (int i = 0; i < tr->nstmts; i++) {
        if (!pick[i]) continue;
        int v = g->ir->stmts[tr->stmts[i].stmt].out.var;
        if (seen[v]) continue;
        if (size + ir_var_row_width(V(g, v)) > LANE_TOTAL) {
            pick[i] = 0;
            dropped = 1;
            continue;
        }
        seen[v] = 1;
        size += (int)ir_var_row_width(V(g, v));
    }
    free(seen);
    return dropped;
}

/* scalars=lane: picks the kernel's statements each lane evaluates for an edge of its own (edge
 * forms only: they walk edges L at a time) and the rows the group's statements read back; returns
 * how many it picked. The candidates are dropped, to a fixed point, until every one left keeps.
 * scalars=replicated takes the same statements (run in the loop's order, they would allow more; the
 * prologue's conditions keep one selection for both). */
static int plan_lanes(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    if (!g->cfg->lane_scalars || (g->f != FORM_EDGE && g->f != FORM_EDGE_DSTRUN && g->f != FORM_NODE)) return 0;
    int *pick = g->lane_stmt;
    for (int i = 0; i < tr->nstmts; i++) pick[i] = in_kernel(g, phases, phase, i) && lane_candidate(g, tr, phases, phase, i);
    for (int changed = 1; changed;) {
        changed = lane_fit(g, tr, pick);
        for (int i = 0; i < tr->nstmts; i++)
            if (pick[i] && !lane_keeps(g, tr, phases, phase, pick, i)) pick[i] = 0, changed = 1;
    }
    int placed = 0;
    for (int i = 0; i < tr->nstmts; i++) {
        if (!pick[i]) continue;
        int v = g->ir->stmts[tr->stmts[i].stmt].out.var;
        placed++;
        if (g->lane_off[v] >= 0) continue;
        g->lane_off[v] = g->lane_size;
        g->lane_size += (int)ir_var_row_width(V(g, v));
    }
    /* scalars=replicated: every lane holds the current edge's rows, the group's statements read them there */
    g->replicated = placed && g->cfg->lane_scalars == CFG_SCALARS_REPLICATED;
    for (int i = 0; i < tr->nstmts && !g->replicated; i++) {
        if (!in_kernel(g, phases, phase, i) || pick[i]) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        for (int k = 0; k < s->nin; k++)
            if (s->in[k].var >= 0 && s->in[k].acc != IR_ACC_CONST && g->lane_off[s->in[k].var] >= 0)
                g->lane_bcast[s->in[k].var] = 1;
    }
    if (placed)
        rg_str_printf(&g->acc_note, "; scalars=%s: %d statement(s), %d double(s) a lane",
                      g->replicated ? "replicated" : "lane", placed, g->lane_size);
    return placed;
}

/* pfetch=on: the scalar operands (one value an edge or compact row, read at the edge's row, or a
 * destination's, read at its destination: a softmax sum or its gradient) in device memory that no
 * statement of the kernel writes (an earlier phase's kernel has finished writing them), which each
 * lane loads for its own edge right after its ids, so that the group's L loads are in flight
 * together; operand_at then reads the broadcast value. Only those the group's statements read: under
 * scalars=lane, what only the lanes' own statements read is loaded lane-parallel already. Edge forms
 * only (the node form's edges share their destination); returns how many. pf_var records the access
 * (1 + ir_access) a variable is loaded for. */
static int plan_prefetch(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    if (!g->cfg->pfetch || (g->f != FORM_EDGE && g->f != FORM_EDGE_DSTRUN && g->f != FORM_NODE)) return 0;
    int n = 0;
    for (int i = 0; i < tr->nstmts; i++) {
        if (!in_kernel(g, phases, phase, i) || (g->lane_stmt[i] && !g->replicated)) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        for (int k = 0; k < s->nin; k++) {
            int v = s->in[k].var;
            if (v < 0 || g->pf_var[v]) continue;
            const ir_var *x = V(g, v);
            int edge_row = s->in[k].acc == IR_ACC_ROW && x->kind == IR_VAR_EDGE;
            int dst_row = s->in[k].acc == IR_ACC_DST && x->kind == IR_VAR_NODE && g->f != FORM_NODE;
            if ((!edge_row && !dst_row) || ir_var_row_width(x) != 1 || !g->mat[v] || g->scr_off[v] >= 0 ||
                g->acc_off[v] >= 0 || g->lane_off[v] >= 0 || reads_in_order(g, v) ||
                kernel_writes(g, tr, phases, phase, v, -1))
                continue;
            g->pf_var[v] = 1 + (int)s->in[k].acc;
            g->var_used[v] = 1;
            if (edge_row && x->layout == IR_LAYOUT_COMPACT) g->needs_cr = 1;
            else if (edge_row) g->needs_e = 1;   /* dst_row: dn_l, which every edge form but the node one loads */
            n++;
        }
    }
    return n;
}

/* pfetch=on: each lane's loads of its own edge's scalar operands, inside the ids' guard. */
static void emit_prefetch_loads(const kgen *g, rg_str *b)
{
    for (int v = 0; v < g->ir->nvars; v++) {
        if (!g->pf_var[v]) continue;
        const ir_var *x = V(g, v);
        const char *row = g->pf_var[v] == 1 + IR_ACC_DST ? "dn_l" : x->layout == IR_LAYOUT_COMPACT ? "cr_l" : "e_l";
        char at[96], val[160];
        snprintf(at, sizeof at, "v%d[(size_t)(%s)]", v, row);
        vt_load(x, at, val, sizeof val);
        rg_str_printf(b, "            pf%d_l = %s;\n", v, val);
    }
}

/* rowpf=l2|l1: the feature rows (two or more elements) that the kernel's statements gather at a row
 * id that is random in its walk, from device memory it does not write. In the stored (etype, src) order
 * (FORM_EDGE) sources, compact rows and edges come in order and only destinations jump; in the
 * dst-sorted orders it is the other way round (an edge variable's dst-ordered copy is read in order:
 * reads_in_order). Each lane prefetches its own edge's rows after its ids (emit_row_prefetches), so
 * that the group's L gathers are in flight together instead of one after another in its loop. Returns
 * how many (variable, access) rows. */
static int plan_rowpf(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    if (!g->cfg->rowpf || (g->f != FORM_EDGE && g->f != FORM_EDGE_DSTRUN && g->f != FORM_NODE)) return 0;
    int dst_order = g->f != FORM_EDGE, n = 0;
    for (int i = 0; i < tr->nstmts; i++) {
        if (!in_kernel(g, phases, phase, i) || (g->lane_stmt[i] && !g->replicated)) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        for (int k = 0; k < s->nin; k++) {
            int v = s->in[k].var;
            if (v < 0) continue;
            const ir_var *x = V(g, v);
            ir_access a = s->in[k].acc;
            int node = x->kind == IR_VAR_NODE, edge = x->kind == IR_VAR_EDGE && a == IR_ACC_ROW;
            int random = dst_order ? (node && a == IR_ACC_SRC) || (edge && !reads_in_order(g, v))
                                   : node && a == IR_ACC_DST;
            if (!random || ir_var_row_width(x) < 2 || !g->mat[v] || g->scr_off[v] >= 0 || g->acc_off[v] >= 0 ||
                g->lane_off[v] >= 0 || (g->rp_acc[v] >> a & 1) || kernel_writes(g, tr, phases, phase, v, -1))
                continue;
            g->rp_acc[v] |= 1 << a;
            g->var_used[v] = 1;
            if (edge && x->layout == IR_LAYOUT_COMPACT) g->needs_cr = 1;
            else if (edge) g->needs_e = 1;
            n++;
        }
    }
    return n;
}

/* rowpf=l2|l1: each lane's prefetches of its own edge's gathered rows, inside the ids' guard: one
 * prefetch instruction a 128-byte line of the row (a hint: nothing waits on it). */
static void emit_row_prefetches(const kgen *g, rg_str *b)
{
    const char *level = g->cfg->rowpf == CFG_ROWPF_L1 ? "L1" : "L2";
    for (int v = 0; v < g->ir->nvars; v++) {
        for (int a = 0; a < 31; a++) {
            if (!(g->rp_acc[v] >> a & 1)) continue;
            const ir_var *x = V(g, v);
            const char *row = a == IR_ACC_SRC ? "sn_l" : a == IR_ACC_DST ? "dn_l"
                              : x->layout == IR_LAYOUT_COMPACT ? "cr_l" : "e_l";
            long long w = (long long)ir_var_row_width(x);
            rg_str_printf(b,
                          "            {   /* rowpf: %s's row */\n"
                          "                const size_t p_ = (size_t)(v%d + (size_t)(%s) * %lld);\n"
                          "                for (size_t a_ = p_ & ~(size_t)127; a_ < p_ + %lld * sizeof(*v%d); a_ += 128)\n"
                          "                    asm volatile(\"prefetch.global.%s [%%0];\" :: \"l\"(a_));\n"
                          "            }\n",
                          x->name, v, row, w, w, v, level);
        }
    }
}

/* ---- stores the kernel makes alone ---- */

/* Whether v is a zero-filled variable that lives in device memory alone (no shared-scratch row, register
 * accumulator, lane value or register weight sum of this kernel): what a statement storing it once may
 * write in place of reading back its zeros. */
static int zero_filled_in_memory(const kgen *g, int v)
{
    return V(g, v)->zero_init && g->mat[v] && g->scr_off[v] < 0 && g->acc_off[v] < 0 && g->lane_off[v] < 0 &&
           g->wacc_off[v] < 0;
}

/* Node rows and the once-only form: a statement that is the program's first and only writer of a
 * zero-filled node row or scalar (autodiff's d_h_un += ..., d_loss = 1) writes each of its elements
 * once in its own row's loop, so it stores (0 + value) instead of reading the zeros back, and the
 * zero-fill before the run is not needed (g->cover). Not under epi=on's guard, which leaves the
 * rows the aggregation finished to that kernel. */
static void plan_whole_rows(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    if ((g->f != FORM_NODE_DOM && g->f != FORM_GLOBAL) || g->guard != ET_GUARD_NONE || g->epi) return;
    for (int i = 0; i < tr->nstmts; i++) {
        if (!in_kernel(g, phases, phase, i) || g->lane_stmt[i]) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        int v = s->out.var;
        const ir_var *x = V(g, v);
        int own_row = g->f == FORM_NODE_DOM ? x->kind == IR_VAR_NODE && s->out.acc == IR_ACC_ROW
                                             : x->kind == IR_VAR_SCALAR;
        if (!own_row || !zero_filled_in_memory(g, v) || !ir_first_sole_writer(g->ir, tr->stmts[i].stmt)) continue;
        g->once[v] = s->accumulate;
        g->cover[v] = 1;
    }
}

/* Marks g->once: a statement of the kernel summing into a zero-filled per-edge row (a gradient
 * of an edge scalar) that no other statement of the program writes, in a form that visits each
 * edge once, stores its value (0 + value) instead of reading the row back first; where a later
 * statement of its phase reads the row at the same edge (RGAT's d_attt, HGT's d__t1: the weight
 * gradient after the walk's store), a width-1 row's value also stays in a register, so that the
 * edge's work no longer waits on a load of what it has just stored. */
static void plan_stores(kgen *g, const lw_trav *tr, const int *phases, int phase)
{
    plan_whole_rows(g, tr, phases, phase);
    if (g->f != FORM_EDGE && g->f != FORM_EDGE_DSTRUN && g->f != FORM_NODE) return;
    for (int i = 0; i < tr->nstmts; i++) {
        if (!in_kernel(g, phases, phase, i) || g->lane_stmt[i]) continue;
        const ir_stmt *s = &g->ir->stmts[tr->stmts[i].stmt];
        int v = s->out.var;
        const ir_var *x = V(g, v);
        if (!s->accumulate || s->out.acc != IR_ACC_ROW || x->kind != IR_VAR_EDGE || x->layout != IR_LAYOUT_VANILLA ||
            !zero_filled_in_memory(g, v) || ir_sole_stmt(g->ir, v, ir_stmt_writes) != tr->stmts[i].stmt)
            continue;
        g->once[v] = 1;
        g->cover[v] = ir_first_sole_writer(g->ir, tr->stmts[i].stmt);   /* every edge's row stored */
        if (ir_var_row_width(x) != 1 || !lane_op(s->op)) continue;
        for (int j = i + 1; j < tr->nstmts && g->once[v] == 1; j++)
            if (in_kernel(g, phases, phase, j) && phases[j] == phases[i] && !g->lane_stmt[j] &&
                ir_stmt_reads_operand(&g->ir->stmts[tr->stmts[j].stmt], v))
                g->once[v] = 2;
    }
}

/* ---- kernel assembly ---- */

/* ---- epi=on: the next instance's node statements at a whole destination's flush ---- */

static int in_trav(const lw_trav *tr, int stmt)
{
    for (int k = 0; k < tr->nstmts; k++)
        if (tr->stmts[k].stmt == stmt) return 1;
    return 0;
}

/* Whether the node statements are the only readers of accumulator v (then a whole destination's sum
 * is not stored: the node traversal skips that node). */
static int epi_only_reader(const kgen *g, int v)
{
    const ir_var *x = V(g, v);
    if (v == g->ir->output || v == g->ir->loss || x->role != IR_ROLE_TEMP || x->grad_of >= 0) return 0;
    for (int i = 0; i < g->ir->nstmts; i++)
        if (ir_stmt_reads_operand(&g->ir->stmts[i], v) && !in_trav(g->epi, i)) return 0;
    return 1;
}

/* How the node statements read accumulator v: 1 if only as the divisor of DIV statements, 2 if only
 * as that of DIV_NZ ones, else 0. */
static int divisor_kind(const kgen *g, int v)
{
    int kind = -1;
    for (int k = 0; k < g->epi->nstmts; k++) {
        const ir_stmt *s = &g->ir->stmts[g->epi->stmts[k].stmt];
        for (int j = 0; j < s->nin; j++) {
            if (s->in[j].acc == IR_ACC_CONST || s->in[j].var != v) continue;
            int here = j == 1 && s->in[0].var != v ? s->op == IR_OP_DIV ? 1 : s->op == IR_OP_DIV_NZ ? 2 : 0 : 0;
            if (kind >= 0 && kind != here) return 0;
            kind = here;
        }
    }
    return kind > 0 ? kind : 0;
}

/* Where the node statements find each sum: a lane holds its own elements of an accumulator in
 * registers, so a statement whose loop is the accumulator's own shape reads its register, and any
 * other (a head's divisor broadcast over the features) reads a copy in the scratch row (epi_off).
 * A divisor narrower than its statement's row is copied as its reciprocal (epi_recip): the row's
 * elements are then multiplied, a division a head instead of one per element (an inlined float64
 * division costs a lane 16 registers, and the aggregation's occupancy with them). */
static void plan_epilogue(kgen *g)
{
    for (int k = 0; k < g->epi->nstmts; k++) {
        const ir_stmt *s = &g->ir->stmts[g->epi->stmts[k].stmt];
        const ir_var *o = V(g, s->out.var);
        int H, D;
        iter_shape(g, s, &H, &D);
        for (int j = 0; j < s->nin; j++) {
            int v = s->in[j].var;
            if (s->in[j].acc == IR_ACC_CONST || v < 0 || g->acc_off[v] < 0 || g->epi_off[v] >= 0) continue;
            const ir_var *x = V(g, v);
            int own_shape = vt_heads(x) == H && x->dim == D && vt_heads(o) == H && o->dim == D;
            int recip = own_shape ? 0 : divisor_kind(g, v);
            if ((!g->reg_slots[v] || own_shape) && !recip) continue;
            g->epi_off[v] = g->scr_size;
            g->epi_recip[v] = recip;
            g->scr_size += (int)ir_var_row_width(x);
        }
    }
    for (int v = 0; v < g->ir->nvars; v++)
        if (g->acc_off[v] >= 0) g->epi_skip[v] = epi_only_reader(g, v);
}

/* Ops a node statement of epi=on may have: elementwise on rows of one shape or broadcast. */
static int epi_op(ir_opkind op)
{
    switch (op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_DIV_NZ: case IR_OP_EXP:
    case IR_OP_LEAKYRELU: case IR_OP_RELU: case IR_OP_GELU: case IR_OP_SIGMOID: case IR_OP_COPY:
        return 1;
    default:
        return 0;
    }
}

/* Why node statement s cannot run at an aggregation's flush (g: the aggregation's kernel, whose statements
 * are all in phase 0), or NULL; *sums counts the accumulators it reads. */
static const char *epi_stmt_obstacle(const kgen *g, const lw_trav *agg, const int *phases, const lw_trav *node, int k,
                                     int *sums)
{
    const ir_stmt *s = &g->ir->stmts[node->stmts[k].stmt];
    const ir_var *o = V(g, s->out.var);
    if (!epi_op(s->op)) return "a node statement is not elementwise";
    if (s->accumulate || s->out.acc != IR_ACC_ROW || o->kind != IR_VAR_NODE || !g->mat[s->out.var])
        return "a node statement does not assign a node row in device memory";
    for (int j = 0; j < s->nin; j++) {
        const ir_operand *in = &s->in[j];
        if (in->acc == IR_ACC_CONST || in->var < 0) continue;
        if (V(g, in->var)->kind != IR_VAR_NODE || in->acc != IR_ACC_ROW)
            return "a node statement reads other than node rows at its own node";
        for (int i = 0; i < k; i++)
            if (ir_stmt_writes(&g->ir->stmts[node->stmts[i].stmt], in->var))
                return "a node statement reads what another one writes";
        if (g->acc_off[in->var] >= 0) {
            (*sums)++;
            continue;
        }
        if (kernel_writes(g, agg, phases, 0, in->var, -1))
            return "a node statement reads a row the aggregation writes other than as a sum";
    }
    return NULL;
}

/* Zeroes var v's row in the scratch (off: scr_off, acc_off or wacc_off), each lane its elements. */
static void emit_zero_row(kgen *g, const char *indent, const int *off, int v)
{
    char home[64];
    row_home(g, off, v, "i", home, sizeof home);
    rg_str_printf(&g->body, "%sfor (int i = lane; i < %lld; i += %d) %s = 0.0;\n", indent,
                  (long long)ir_var_row_width(V(g, v)), g->L, home);
}

/* Per-row temporaries that statements accumulate into (+=) start at zero on every row. */
static void emit_zero_row_scratch(kgen *g)
{
    int any = 0;
    for (int v = 0; v < g->ir->nvars; v++) {
        if (g->scr_off[v] < 0 || g->lane_off[v] >= 0 || !V(g, v)->zero_init) continue;
        emit_zero_row(g, "        ", g->scr_off, v);
        any = 1;
    }
    if (any) rg_str_printf(&g->body, "        %s;\n", gsync(g));
}

static void emit_row_context(kgen *g, const cg_config *cfg)
{
    rg_str *b = &g->body;
    emit_zero_row_scratch(g);
    if (g->f == FORM_UNIQUE) {
        rg_str_printf(b, "        const int sn = %s[u], t = %s[u]; (void)sn; (void)t;\n", arr(g, KG_UNIQUE_SRC),
                      arr(g, KG_UNIQUE_ETYPE));
        return;
    }
    if (g->f == FORM_NODE_DOM) {
        rg_str_printf(b, "        const int nt = %s[n]; (void)nt;\n", arr(g, KG_NODE_NTYPE));
        return;
    }
    RG_ASSERT(g->f == FORM_TYPE || g->f == FORM_GLOBAL);  /* edge forms fetch ids in emit_edge_loop */
    (void)cfg;
}

/* acc=reg with vec=2|4|8: whether the flush of accumulator v (w wide) can move a lane's reg_vec
 * consecutive elements at once (a float row: the flush's targets are float32, vt_bf16_exclusion). */
static int flush_vectorizes(const kgen *g, int v, int w)
{
    int vr = reg_vec(g, w);
    return vr >= 2 && !vt_is_f64(V(g, v)) && !vt_is_bf16(V(g, v));
}

/* The flush of register accumulator v with vector accesses: per step c_ the lane's reg_vec
 * consecutive elements at i0 go out together (emit_av_atomic; emit_av_add where the node is the
 * warp's alone). Element by element, the lanes' stores of one instruction were reg_vec floats apart:
 * 8 sectors touched where one would do (why vec > 1 lost in session 22, docs/perf-notes.md). */
static void emit_flush_vec(kgen *g, rg_str *b, int v, int w, const char *node, int reset, const char *atomic_cond)
{
    int vr = reg_vec(g, w);
    char ref[160];
    snprintf(ref, sizeof ref, "v%d[(size_t)(%s) * %d + i0]", v, node, w);
    g->var_used[v] = g->var_written[v] = 1;
    rg_str_printf(b,
                  "        #pragma unroll\n"
                  "        for (int c_ = 0; c_ < %d; c_++) {\n"
                  "            const int i0 = (c_ * %d + lane) * %d;\n"
                  "            if (i0 < %d) {\n"
                  "            float av_[%d];\n"
                  "            #pragma unroll\n"
                  "            for (int vu = 0; vu < %d; vu++) av_[vu] = (float)ra%d[c_ * %d + vu];\n",
                  reg_count(g, w) / vr, g->L, vr, w, vr, vr, v, vr);
    if (!atomic_cond) {
        emit_av_add(b, ref, vr);
    } else if (!strcmp(atomic_cond, "1")) {
        emit_av_atomic(b, ref, vr);
    } else {
        rg_str_printf(b, "            if (%s) {\n", atomic_cond);
        emit_av_atomic(b, ref, vr);
        rg_str_puts(b, "            } else\n");
        emit_av_add(b, ref, vr);
    }
    if (reset)
        rg_str_printf(b, "            #pragma unroll\n            for (int vu = 0; vu < %d; vu++) ra%d[c_ * %d + vu] = 0.0;\n", vr, v,
                      vr);
    rg_str_puts(b, "            }\n        }\n");
}

/* Adds node accumulators into global memory: `+=` when this warp owns the node (other
 * instances may contribute too), atomically when `atomic_cond` (a CUDA expression, or "1")
 * says several warps share it; those `skip` marks (or none: NULL) are only cleared. */
static void emit_flush(kgen *g, rg_str *b, const char *node, int reset, const char *atomic_cond, const int *skip)
{
    int shared = 0, regs = 0;
    for (int v = 0; v < g->ir->nvars; v++) {
        if (g->acc_off[v] < 0) continue;
        int w = (int)ir_var_row_width(V(g, v));
        int store = g->mat[v] && !(skip && skip[v]);
        if (!store && !reset) continue;
        int reg = g->reg_slots[v] > 0;
        shared |= !reg;
        regs |= reg;
        if (store && reg && flush_vectorizes(g, v, w)) {
            emit_flush_vec(g, b, v, w, node, reset, atomic_cond);
            continue;
        }
        char sum[64];
        open_row_loop(g, b, w, reg, NULL);
        row_home(g, g->acc_off, v, "i", sum, sizeof sum);
        if (store) {
            RG_ASSERT(!vt_is_bf16(V(g, v)));   /* an accumulation target: float32 (vt_bf16_exclusion) */
            g->var_used[v] = g->var_written[v] = 1;
            char dst[128];
            snprintf(dst, sizeof dst, "v%d[(size_t)(%s) * %d + i]", v, node, w);
            if (!atomic_cond)
                rg_str_printf(b, "            %s += %s;\n", dst, sum);
            else if (!strcmp(atomic_cond, "1"))
                rg_str_printf(b, "            atomicAdd(&%s, %s);\n", dst, sum);
            else
                rg_str_printf(b, "            if (%s) atomicAdd(&%s, %s); else %s += %s;\n", atomic_cond, dst, sum, dst,
                              sum);
        }
        if (reset) rg_str_printf(b, "            %s = 0.0;\n", sum);
        close_row_loop(g, b, reg);
    }
    /* registers are the lane's own: the barrier is for shared rows (a vector statement wrote them
     * in another element order than this loop's); none when nothing was flushed (epi=on) */
    if (shared || (!regs && !skip)) rg_str_printf(b, "        %s;\n", gsync(g));
}

/* rmax=on: the workspace's row of a tile slot (float64): the maximum per head, then the two sums. */
static int rm_row(const kgen *g)
{
    return g->rm_heads + (int)ir_var_row_width(V(g, g->rm.sum)) + (int)ir_var_row_width(V(g, g->rm.un));
}

/* rmax=on, a tile of a destination the aggregation splits: its maximum and sums, which the node kernel
 * merges, the destination's first tile's in the sums themselves (zero-filled, no other tile's there) and
 * its maximum in the workspace's node part, another tile's in slot q_begin / nchunk (tiles other than a
 * node's first begin at least nchunk positions apart, so no two share a slot); no atomics. */
static void emit_rm_partials(kgen *g, rg_str *b)
{
    int H = g->rm_heads, N = g->cfg->nchunk, off = H;
    g->rm_work = 1;
    rg_str_printf(b, "        {   /* rmax=on: this tile's maximum and sums, which the node kernel merges */\n"
                     "        const int first_ = q_begin == %s[n];\n"
                     "        double* ws_ = first_ ? rmw_ + (size_t)n * %d : rmw_ + (size_t)rm_nodes_ * %d + (size_t)(q_begin / %d) * %d;\n"
                     "        if (lane == 0)\n            for (int h = 0; h < %d; h++) ws_[h] = rm_[h];\n",
                  arr(g, KG_IN_PTR), H, H, N, rm_row(g), H);
    const int sums[2] = {g->rm.sum, g->rm.un};
    for (int k = 0; k < 2; k++) {
        int v = sums[k], reg = g->reg_slots[v] > 0, w = (int)ir_var_row_width(V(g, v));
        char home[64];
        g->var_used[v] = g->var_written[v] = 1;
        open_row_loop(g, b, w, reg, NULL);
        row_home(g, g->acc_off, v, "i", home, sizeof home);
        rg_str_printf(b, "            if (first_) v%d[(size_t)n * %d + i] = %s;\n            else ws_[%d + i] = %s;\n", v, w,
                      home, off, home);
        close_row_loop(g, b, reg);
        off += w;
    }
    rg_str_puts(b, "        }\n");
}

/* The flush of a tile that holds part of its destination's edges: every sum atomically, or, under
 * rmax=on, the softmax's two as emit_rm_partials leaves them and the others atomically. */
static void emit_flush_part(kgen *g, rg_str *b, const char *node, int reset)
{
    if (!g->rm_agg) {
        emit_flush(g, b, node, reset, "1", NULL);
        return;
    }
    emit_rm_partials(g, b);
    emit_flush(g, b, node, reset, "1", g->rm_skip);
}

#define RM_MERGE_REGS 16  /* rmax=on's merge: elements of a sum a lane keeps in registers over one walk of the tiles */
#define RM_HUB_REGS 32    /* the same for a hub, whose walks are the row's chunks: RGAT's 65 elements in 3, not 5 */

/* rmax=on's merge, the row it merges: the softmax's two sums as the workspace holds them, element i of S
 * (variable vs, width ws) then of H_un (vu, wu), and the head whose maximum scales element i of each. */
typedef struct rm_rowmap {
    int vs, vu, ws, wu, tot;
    char hs[32], hu[48];
} rm_rowmap;

/* The merge's step over tile c: its exps, one per head, and its elements i0 + e * stride (e < E) added
 * into r_[e], rescaled to the merged maximum mm_. */
static void emit_rm_tile_add(const kgen *g, rg_str *b, const char *ind, int E, int stride, const rm_rowmap *rm)
{
    int H = g->rm_heads;
    char elem[32];
    if (stride == 1) snprintf(elem, sizeof elem, "i0 + e");
    else snprintf(elem, sizeof elem, "i0 + e * %d", stride);
    rg_str_printf(b,
                  "%sconst double* p_ = ws0_ + (size_t)c * %d;\n"
                  "%sdouble f_[%d];\n"
                  "%s#pragma unroll\n"
                  "%sfor (int h = 0; h < %d; h++) f_[h] = exp(p_[h] - mm_[h]);\n"
                  "%s#pragma unroll\n"
                  "%sfor (int e = 0; e < %d; e++) {\n"
                  "%s    const int i = %s;\n"
                  "%s    if (i < %d) r_[e] += p_[%d + i] * f_[i < %d ? %s : %s];\n"
                  "%s}\n",
                  ind, rm_row(g), ind, H, ind, ind, H, ind, ind, E, ind, elem, ind, rm->tot, H, rm->ws, rm->hs, rm->hu,
                  ind);
}

/* rmax=on's merge of a hub (more tiles than lanes): the lanes split its tiles, each summing its own
 * over the row in chunks of up to RM_HUB_REGS elements, then the group sums them by shuffles, so each
 * walk is tiles / L long instead of tiles (synth:mag's largest destination has 715). Element e of a chunk
 * is read, seeded with the node's first tile, and stored by lane e % L alone. The order of the sums
 * depends only on L and the tile count: deterministic. */
static void emit_rm_merge_hub(kgen *g, rg_str *b, const rm_rowmap *rm)
{
    int tot = rm->tot, ws = rm->ws, nchunk = (tot + RM_HUB_REGS - 1) / RM_HUB_REGS;
    int E = (tot + nchunk - 1) / nchunk;   /* chunks of equal size: 65 elements are 3 of 22, not 2 of 32 and 1 */
    rg_str_printf(b,
                  "            if (mk_ > %d) {   /* a hub: the lanes split its tiles, %d elements of the row at a time */\n"
                  "                for (int i0 = 0; i0 < %d; i0 += %d) {\n"
                  "                    double r_[%d];\n"
                  "                    #pragma unroll\n"
                  "                    for (int e = 0; e < %d; e++) {\n"
                  "                        const int i = i0 + e;\n"
                  "                        r_[e] = 0.0;\n"
                  "                        if (i >= %d || e %% %d != lane) continue;\n"
                  "                        const int h = i < %d ? %s : %s;\n"
                  "                        r_[e] = (i < %d ? v%d[(size_t)n * %d + i] : v%d[(size_t)n * %d + i - %d]) * exp(w0_[h] - mm_[h]);\n"
                  "                    }\n"
                  "                    #pragma unroll 2\n"
                  "                    for (int c = 1 + lane; c < mk_; c += %d) {\n",
                  g->L, E, tot, E, E, E, tot, g->L, ws, rm->hs, rm->hu, ws, rm->vs, ws, rm->vu, rm->wu, ws, g->L);
    emit_rm_tile_add(g, b, "                        ", E, 1, rm);
    rg_str_printf(b,
                  "                    }\n"
                  "                    #pragma unroll\n"
                  "                    for (int e = 0; e < %d; e++) {\n"
                  "                        { const double p = r_[e]; r_[e] = %s; }   /* the group's sum, in every lane */\n",
                  E, group_sum(g, 0));
    rg_str_printf(b,
                  "                        const int i = i0 + e;\n"
                  "                        if (i >= %d || e %% %d != lane) continue;\n"
                  "                        if (i < %d) v%d[(size_t)n * %d + i] = r_[e];\n"
                  "                        else v%d[(size_t)n * %d + i - %d] = r_[e];\n"
                  "                    }\n"
                  "                }\n"
                  "            } else\n",
                  tot, g->L, ws, rm->vs, ws, rm->vu, rm->wu, ws);
}

/* rmax=on, the node kernel after the aggregation: a destination it split into tiles of rm_chunk edges
 * has their maxima and sums merged in a fixed order (deterministic), rescaled to the largest maximum,
 * into the sums the division reads; a destination of one tile has its sums there already. The lanes take
 * the maximum over the tiles between them; then a destination of more tiles than lanes is a hub
 * (emit_rm_merge_hub), and the others' tiles are walked with up to RM_MERGE_REGS elements a lane in
 * registers, one exp per head and tile, unrolled so that several tiles' loads are in flight. Merged
 * element by element, a tile's exp and two dependent loads at a time, the merge took 2.29 ms of RGAT's
 * 4.80 on synth:mag; walking each tile once, 0.81 ms, a hub's 715 tiles one after another
 * (docs/perf-notes.md). */
static void emit_rm_merge(kgen *g)
{
    rg_str *b = &g->body;
    int H = g->rm_heads, N = g->rm_chunk, row = rm_row(g);
    const char *ptr = arr(g, KG_IN_PTR);
    g->rm_work = 1;
    rg_str_printf(b,
                  "    {   /* rmax=on: a destination split into tiles of %d edges: their maxima and sums merged */\n"
                  "        const int ma_ = %s[n], mk_ = (%s[n + 1] - ma_ + %d) / %d;\n"
                  "        if (mk_ > 1) {\n"
                  "            const double* w0_ = rmw_ + (size_t)n * %d;   /* the first tile's maximum; its sums are the node's */\n"
                  "            const double* ws0_ = rmw_ + (size_t)rm_nodes_ * %d + (size_t)(ma_ / %d) * %d;   /* tile c's at c */\n"
                  "            double mm_[%d];\n"
                  "            for (int h = 0; h < %d; h++) {\n"
                  "                double m_ = w0_[h];\n"
                  "                for (int c = 1 + lane; c < mk_; c += %d) m_ = fmax(m_, ws0_[(size_t)c * %d + h]);\n",
                  N, ptr, ptr, N - 1, N, H, H, N, row, H, H, g->L, row);
    emit_group_max(g, b, "                ");
    rg_str_puts(b, "                mm_[h] = m_;\n            }\n");
    /* the two sums as one row, as the workspace holds them: element j of S, then of H_un */
    rm_rowmap rm = {.vs = g->rm.sum, .vu = g->rm.un};
    rm.ws = (int)ir_var_row_width(V(g, rm.vs));
    rm.wu = (int)ir_var_row_width(V(g, rm.vu));
    int tot = rm.tot = rm.ws + rm.wu, ws = rm.ws, eb = (tot + g->L - 1) / g->L;
    if (eb > RM_MERGE_REGS) eb = RM_MERGE_REGS;
    rm_head_of(g, rm.vs, rm.hs, sizeof rm.hs);
    if (vt_heads(V(g, rm.vu)) == H) snprintf(rm.hu, sizeof rm.hu, "(i - %d) / %d", ws, V(g, rm.vu)->dim);
    else snprintf(rm.hu, sizeof rm.hu, "0");
    g->var_used[rm.vs] = g->var_written[rm.vs] = g->var_used[rm.vu] = g->var_written[rm.vu] = 1;
    emit_rm_merge_hub(g, b, &rm);
    rg_str_printf(b,
                  "            for (int i0 = lane; i0 < %d; i0 += %d) {   /* %s then %s: up to %d elements a lane at a time */\n"
                  "                double r_[%d];\n"
                  "                #pragma unroll\n"
                  "                for (int e = 0; e < %d; e++) {\n"
                  "                    const int i = i0 + e * %d, h = i < %d ? %s : %s;\n"
                  "                    const double x_ = i < %d ? v%d[(size_t)n * %d + i] : i < %d ? v%d[(size_t)n * %d + i - %d] : 0.0;\n"
                  "                    r_[e] = i < %d ? x_ * exp(w0_[h] - mm_[h]) : 0.0;\n"
                  "                }\n"
                  "                #pragma unroll 4\n"
                  "                for (int c = 1; c < mk_; c++) {\n",
                  tot, g->L * eb, V(g, rm.vs)->name, V(g, rm.vu)->name, eb, eb, eb, g->L, ws, rm.hs, rm.hu, ws, rm.vs, ws,
                  tot, rm.vu, rm.wu, ws, tot);
    emit_rm_tile_add(g, b, "                    ", eb, g->L, &rm);
    rg_str_printf(b,
                  "                }\n"
                  "                #pragma unroll\n"
                  "                for (int e = 0; e < %d; e++) {\n"
                  "                    const int i = i0 + e * %d;\n"
                  "                    if (i < %d) v%d[(size_t)n * %d + i] = r_[e];\n"
                  "                    else if (i < %d) v%d[(size_t)n * %d + i - %d] = r_[e];\n"
                  "                }\n"
                  "            }\n",
                  eb, g->L, ws, rm.vs, ws, tot, rm.vu, rm.wu, ws);
    rg_str_printf(b, "            %s;\n        }\n    }\n", gsync(g));
}

/* epi=on: the node statements for destination `node`, from its sums (plan_epilogue), into *out. */
static int render_epilogue(kgen *g, const char *node, rg_str *out, rg_err *err)
{
    rg_str saved = g->body;
    g->body = (rg_str){0};
    /* sums in registers that a statement of another shape reads, and narrow divisors (as reciprocals):
     * through the scratch row */
    for (int v = 0; v < g->ir->nvars; v++) {
        if (g->epi_off[v] < 0) continue;
        int reg = g->reg_slots[v] > 0;
        char sum[64];
        open_row_loop(g, &g->body, (int)ir_var_row_width(V(g, v)), reg, NULL);
        row_home(g, g->acc_off, v, "i", sum, sizeof sum);
        if (g->epi_recip[v] == 2)
            rg_str_printf(&g->body, "            scr[%d + i] = %s != 0.0 ? 1.0 / %s : 0.0;\n", g->epi_off[v], sum, sum);
        else
            rg_str_printf(&g->body, "            scr[%d + i] = %s%s;\n", g->epi_off[v], g->epi_recip[v] ? "1.0 / " : "", sum);
        close_row_loop(g, &g->body, reg);
    }
    /* the sums in shared memory were written in the edge statements' element order */
    rg_str_printf(&g->body, "        %s;\n", gsync(g));
    g->epi_mode = 1;
    g->epi_node = node;
    int rc = 0;
    for (int k = 0; k < g->epi->nstmts && !rc; k++) rc = emit_stmt(g, &g->ir->stmts[g->epi->stmts[k].stmt], err);
    g->epi_mode = 0;
    *out = g->body;
    g->body = saved;
    return rc ? -1 : 0;
}

/* epi=on: the flush of destination `node`: when `whole` (a CUDA expression) says this row group summed
 * all its incoming edges, the node statements (`epi`, render_epilogue's text) and the sums others read;
 * otherwise every sum atomically, which the node traversal finishes. */
static void emit_flush_whole(kgen *g, rg_str *b, const char *node, const char *whole, const char *epi, int reset)
{
    rg_str_printf(b, "        if (%s) {   /* epi=on: every incoming edge of %s is this row group's */\n", whole, node);
    rg_str_puts(b, epi);
    emit_flush(g, b, node, reset, NULL, g->epi_skip);
    rg_str_puts(b, "        } else {\n");
    emit_flush_part(g, b, node, reset);
    rg_str_puts(b, "        }\n");
}

/* Adds the weight-gradient partial sums of the current slot (wsl), which belong to edge type
 * `tvar`, and clears them. */
static void emit_wflush(kgen *g, rg_str *b, const char *tvar)
{
    for (int v = 0; v < g->ir->nvars; v++) {
        if (g->wacc_off[v] < 0) continue;
        int w = (int)ir_var_row_width(V(g, v));
        g->var_used[v] = g->var_written[v] = 1;
        char home[64];
        int reg = g->wreg[v] > 0;   /* wacc=reg: each lane its own elements, in register order */
        open_row_loop(g, b, w, reg, NULL);
        row_home(g, g->wacc_off, v, "i", home, sizeof home);
        rg_str_printf(b, "            atomicAdd(&v%d[(size_t)(%s) * %d + i], %s);\n            %s = 0.0;\n", v, tvar, w,
                      home, home);
        close_row_loop(g, b, reg);
    }
    rg_str_printf(b, "        %s;\n", gsync(g));
}

/* The per-row prefix of a kernel with weight-gradient sums: at a change of edge type, the type's
 * slot (t mod wslots) becomes current, and the other type it held, if any, is flushed first. */
static void emit_wslot_switch(kgen *g, rg_str *b)
{
    if (g->wslots == 1) {
        rg_str_puts(b, "            if (t != tcur) {\n                if (tcur >= 0) {\n");
        emit_wflush(g, b, "tcur");
        rg_str_puts(b, "                }\n                tcur = t;\n            }\n");
        return;
    }
    rg_str_printf(b,
                  "            if (t != tcur) {\n"
                  "                wsl = t %% %d;\n"
                  "                if (wtag[wsl] != t) {\n"
                  "                    if (wtag[wsl] >= 0) {\n",
                  g->wslots);
    emit_wflush(g, b, "wtag[wsl]");
    rg_str_puts(b, "                    }\n                    wtag[wsl] = t;\n                }\n"
                   "                tcur = t;\n            }\n");
}

/* The slots' bookkeeping, declared before the rows (tcur: the type of the current slot). */
static void emit_wslot_decls(kgen *g)
{
    if (g->wslots == 1) return;
    rg_str_printf(&g->body, "    int wsl = 0, wtag[%d];   /* current slot; each slot's edge type, -1: free */\n"
                            "    for (int k_ = 0; k_ < %d; k_++) wtag[k_] = -1;\n",
                  g->wslots, g->wslots);
}

/* Flushes every slot still holding sums after the rows. */
static void emit_wslot_final(kgen *g, rg_str *b)
{
    if (g->wslots == 1) {
        rg_str_puts(b, "    if (tcur >= 0) {\n");
        emit_wflush(g, b, "tcur");
        rg_str_puts(b, "    }\n");
        return;
    }
    rg_str_printf(b, "    for (wsl = 0; wsl < %d; wsl++) {\n        if (wtag[wsl] < 0) continue;\n", g->wslots);
    emit_wflush(g, b, "wtag[wsl]");
    rg_str_puts(b, "    }\n");
}

static int has_wacc(const kgen *g)
{
    for (int v = 0; v < g->ir->nvars; v++)
        if (g->wacc_off[v] >= 0) return 1;
    return 0;
}

/* Clears the kernel's accumulators before its first row, declaring those in registers. */
static void emit_zero_acc(kgen *g)
{
    int shared = 0, regs = 0;
    for (int v = 0; v < g->ir->nvars; v++)
        if (g->wreg[v]) {
            rg_str_printf(&g->body, "    double rw%d[%d];   /* %s: this lane's elements of the type's sums, in open_row_loop's order */\n"
                                    "    #pragma unroll\n    for (int k_ = 0; k_ < %d; k_++) rw%d[k_] = 0.0;\n",
                          v, g->wreg[v], V(g, v)->name, g->wreg[v], v);
            regs = 1;
        } else if (g->wacc_off[v] >= 0) {
            rg_str_printf(&g->body, "    for (int i = lane; i < %lld; i += %d) scr[%d + i] = 0.0;\n",
                          (long long)ir_var_row_width(V(g, v)) * g->wslots, g->L, g->wacc_off[v]);
            shared = 1;
        }
    for (int v = 0; v < g->ir->nvars; v++) {
        if (g->acc_off[v] < 0) continue;
        if (g->reg_slots[v]) {
            rg_str_printf(&g->body, "    %s ra%d[%d];   /* %s: this lane's elements, in open_row_loop's order */\n"
                                    "    #pragma unroll\n    for (int k_ = 0; k_ < %d; k_++) ra%d[k_] = 0.0;\n",
                          reg_is_f32(g, v) ? "float" : "double", v, g->reg_slots[v], V(g, v)->name, g->reg_slots[v], v);
            regs = 1;
            continue;
        }
        emit_zero_row(g, "    ", g->acc_off, v);
        shared = 1;
    }
    if (shared || !regs) rg_str_printf(&g->body, "    %s;\n", gsync(g));
}

/* The statements of one phase into *into: those the group runs per edge (lanes 0), those each lane runs
 * for its own (lanes 1), or all in their order (lanes -1, scalars=replicated: the lanes' own ones in
 * registers, without a barrier, among the group's). */
static int emit_phase_stmts(kgen *g, const lw_trav *tr, const int *phases, int phase, int lanes, rg_str *into,
                            rg_err *err)
{
    int rc = 0;
    g->body = (rg_str){0};
    memset(g->fw_live, 0, (size_t)g->ir->nvars * sizeof *g->fw_live);   /* fw<var> lives in one phase's edge loop */
    for (int i = 0; i < tr->nstmts && !rc; i++) {
        if (phases[i] != phase || (g->keep && !g->keep[i]) || (lanes >= 0 && g->lane_stmt[i] != lanes)) continue;
        g->prologue = g->lane_stmt[i];
        rc = emit_stmt(g, &g->ir->stmts[tr->stmts[i].stmt], err);
    }
    *into = g->body;
    g->prologue = 0;
    return rc ? -1 : 0;
}

/* Statements of one phase, emitted into *out, and those each lane runs for its own edge into *lanes
 * (scalars=lane; g records what they need from the row). */
static int phase_body(kgen *g, const lw_trav *tr, const int *phases, int phase, rg_str *out, rg_str *lanes,
                      rg_err *err)
{
    rg_str saved = g->body;
    *out = *lanes = (rg_str){0};
    int rc = g->replicated ? emit_phase_stmts(g, tr, phases, phase, -1, out, err)
                           : emit_phase_stmts(g, tr, phases, phase, 1, lanes, err) ||
                                 emit_phase_stmts(g, tr, phases, phase, 0, out, err);
    g->body = saved;
    return rc ? -1 : 0;
}

/* The lanes' temporaries that statements sum into start each edge at zero, as emit_zero_row_scratch's
 * rows do. */
static void emit_lane_zero(kgen *g)
{
    for (int v = 0; v < g->ir->nvars; v++)
        if (g->lane_off[v] >= 0 && V(g, v)->zero_init)
            for (int64_t k = 0; k < ir_var_row_width(V(g, v)); k++)
                rg_str_printf(&g->body, "            ls_[%lld] = 0.0;\n", (long long)(g->lane_off[v] + k));
}

/* scalars=lane: the lanes' prologue, run by every lane of the group after the loads (the dot products
 * in it shuffle among the group): each lane evaluates the statements for its own edge, whose ids it
 * fetched (a lane past the run's end for ids 0, which every array has, and the run's last position,
 * and its values are never taken), the dot products for the group's edges together (emit_lane_dot). */
static void emit_lane_prologue(kgen *g, const char *qe_var, const char *fixed_dn, const char *lanes)
{
    rg_str_printf(&g->body,
                  "        {   /* scalars=lane: this lane's edge */\n"
                  "            const int e = e_l, sn = sn_l, t = t_l, dn = %s, cr = cr_l, qpos = min(ql, %s - 1);\n"
                  "            (void)e; (void)sn; (void)t; (void)dn; (void)cr; (void)qpos;\n",
                  fixed_dn ? fixed_dn : "dn_l", qe_var);
    emit_lane_zero(g);
    rg_str_printf(&g->body, "%s        }\n", lanes);
}

/* scalars=lane: edge j's rows of the lanes' temporaries that the group's statements read, from lane j. */
static void emit_lane_bcast(kgen *g)
{
    rg_str *b = &g->body;
    rg_str_printf(b, "            double bs_[%d]; (void)bs_;\n", g->lane_size);
    for (int v = 0; v < g->ir->nvars; v++) {
        if (!g->lane_bcast[v]) continue;
        for (int64_t k = 0; k < ir_var_row_width(V(g, v)); k++) {
            char from[32];
            snprintf(from, sizeof from, "ls_[%lld]", (long long)(g->lane_off[v] + k));
            rg_str_printf(b, "            bs_[%lld] = ", (long long)(g->lane_off[v] + k));
            emit_bcast(g, b, from);
            rg_str_puts(b, ";\n");
        }
    }
}

/* A row group walks positions [q_begin_var, q_end_var) of an edge order (edge ids, or the
 * dst-sorted in_eid), L at a time: each lane fetches one edge's ids in parallel, then the
 * group runs the statements for each edge in turn, ids broadcast by shuffles. This takes
 * the chain of dependent index loads off every edge's critical path. In the dst-sorted order
 * the ids come from the arrays in that order (in_src[q] = src[in_eid[q]], ...), read
 * sequentially; the edge id itself only where a statement reads an edge variable that has no
 * such copy (reads_in_order). With scalars=lane, the lanes' prologue runs between the two. */
static void emit_edge_loop(kgen *g, const char *qb_var, const char *qe_var, int dst_order, const char *fixed_dn,
                           const char *per_edge_prefix, const char *lanes, const char *body)
{
    rg_str *b = &g->body;
    int own = lanes && *lanes;
    rg_str_printf(b,
                  "    for (int qb = %s; qb < %s; qb += %d) {\n"
                  "        const int ql = qb + lane;\n"
                  "        int e_l = 0, sn_l = 0, dn_l = 0, t_l = 0, cr_l = 0; (void)dn_l; (void)cr_l;\n",
                  qb_var, qe_var, g->L);
    if (own) rg_str_printf(b, "        double ls_[%d];\n", g->lane_size);
    for (int v = 0; v < g->ir->nvars; v++)
        if (g->pf_var[v]) rg_str_printf(b, "        double pf%d_l = 0.0;\n", v);
    rg_str_printf(b, "        if (ql < %s) {\n", qe_var);
    /* the edge arrays of this order and the index they are read at */
    kp_graph_array a_src = KG_SRC, a_etype = KG_ETYPE, a_dst = KG_DST, a_compact = KG_EDGE_COMPACT;
    const char *at = "e_l";
    if (dst_order) {
        a_src = KG_IN_SRC, a_etype = KG_IN_ETYPE, a_dst = KG_IN_DST, a_compact = KG_IN_COMPACT;
        at = "ql";
        if (g->needs_e) rg_str_printf(b, "            e_l = %s[ql];\n", arr(g, KG_IN_EID));
    } else {
        rg_str_puts(b, "            e_l = ql;\n");
    }
    /* one load a line: drop_unread_ids removes the ones no statement reads */
    rg_str_printf(b, "            sn_l = %s[%s];\n            t_l = %s[%s];\n", arr(g, a_src), at, arr(g, a_etype), at);
    if (!fixed_dn) rg_str_printf(b, "            dn_l = %s[%s];\n", arr(g, a_dst), at);
    if (g->needs_cr) {
        if (g->cfg->compact == CFG_COMPACT_BSEARCH)
            rg_str_printf(b, "            cr_l = compact_find(%s, %s, t_l, sn_l);\n", arr(g, KG_UNIQUE_SRC),
                          arr(g, KG_UNIQUE_ETYPE_PTR));
        else
            rg_str_printf(b, "            cr_l = %s[%s];\n", arr(g, a_compact), at);
    }
    emit_prefetch_loads(g, b);
    emit_row_prefetches(g, b);
    rg_str_printf(b, "        }\n        const int cnt = min(%d, %s - qb);\n", g->L, qe_var);
    if (own) emit_lane_prologue(g, qe_var, fixed_dn, lanes);
    if (cfg_unroll_factor(g->cfg)) rg_str_printf(b, "        #pragma unroll %d\n", cfg_unroll_factor(g->cfg));
    rg_str_puts(b, "        for (int j = 0; j < cnt; j++) {\n");
    emit_edge_ids(g, b, fixed_dn, 0, "            ");
    if (own) emit_lane_bcast(g);
    if (g->replicated) {   /* every lane's copy of this edge's temporaries */
        rg_str_printf(b, "            double ls_[%d];\n", g->lane_size);
        emit_lane_zero(g);
    }
    if (per_edge_prefix) rg_str_puts(b, per_edge_prefix);
    emit_zero_row_scratch(g);
    rg_str_puts(b, body);
    rg_str_puts(b, "        }\n    }\n");
}

/* The rows of the edge forms: each row group walks `run` positions of an edge order (dst_order: the
 * dst-sorted one, else the stored (etype, src) order) and keeps the sums keyed by `key` ("dn": a
 * destination's, "cr": a compact row's, whose edges are consecutive there; NULL: none) in its
 * accumulators until the key changes, then adds them atomically: a neighbouring run may hold the
 * key's other edges. */
static void emit_edge_runs(kgen *g, int dst_order, const char *key, const char *tpre, const char *lanes,
                           const char *body, const char *epi)
{
    rg_str *b = &g->body;
    rg_str_printf(b, "    const int q0 = (blockIdx.x * %d + warp) * %d;\n    if (q0 >= num_rows) return;\n"
                     "    const int q_end = min(q0 + %d, num_rows);\n    int cur = -1, tcur = -1; %s(void)tcur;\n",
                  g->rpb, g->run, g->run, key ? "" : "(void)cur; ");
    if (epi) {
        /* epi=on: only the run's first destination can have edges before q0, and only its last edges
         * after q_end; both known from the dst-sorted order before the walk, off its critical path */
        const char *dst = arr(g, KG_IN_DST);
        rg_str_printf(b, "    const int cut0_ = q0 > 0 && %s[q0 - 1] == %s[q0];   /* the first destination began before q0 */\n"
                         "    const int cut1_ = q_end < num_rows && %s[q_end] == %s[q_end - 1];   /* the last goes on after q_end */\n"
                         "    int first_ = 1;\n",
                      dst, dst, dst, dst);
    }
    emit_wslot_decls(g);
    emit_zero_acc(g);
    rg_str prefix = {0};
    if (key) {
        rg_str_printf(&prefix, "            if (%s != cur) {\n                if (cur >= 0) {\n", key);
        if (epi) {
            emit_flush_whole(g, &prefix, "cur", "!(first_ && cut0_)", epi, 1);
            rg_str_puts(&prefix, "                first_ = 0;\n");
        } else {
            emit_flush(g, &prefix, "cur", 1, "1", NULL);
        }
        rg_str_printf(&prefix, "                }\n                cur = %s;\n            }\n", key);
    }
    if (tpre) rg_str_puts(&prefix, tpre);
    emit_edge_loop(g, "q0", "q_end", dst_order, NULL, prefix.s, lanes, body);
    rg_str_free(&prefix);
    if (!key) return;
    rg_str_puts(b, "    if (cur >= 0) {\n");
    if (epi) emit_flush_whole(g, b, "cur", "!(first_ && cut0_) && !cut1_", epi, 0);
    else emit_flush(g, b, "cur", 0, "1", NULL);
    rg_str_puts(b, "    }\n");
}

/* epi=on, the node traversal after the aggregation: a node the aggregation summed whole is done
 * (et_fusion_plan gives the rule, which must be the aggregation's own). */
static void emit_guard(kgen *g)
{
    RG_ASSERT(g->f == FORM_NODE_DOM && g->guard_chunk > 0);
    rg_str_printf(&g->body, "    const int ga_ = %s[n], gb_ = %s[n + 1];\n", arr(g, KG_IN_PTR), arr(g, KG_IN_PTR));
    if (g->guard == ET_GUARD_CHUNK)   /* a node of at most nchunk edges is one tile: one row group's */
        rg_str_printf(&g->body, "    if (gb_ > ga_ && gb_ - ga_ <= %d) return;   /* epi=on: finished by the aggregation */\n",
                      g->guard_chunk);
    else   /* its edges lie in one run of the dst-sorted positions: one row group's */
        rg_str_printf(&g->body, "    if (gb_ > ga_ && ga_ / %d == (gb_ - 1) / %d) return;   /* epi=on: finished by the aggregation */\n",
                      g->guard_chunk, g->guard_chunk);
}

/* The rows of one kernel: which rows a warp takes and the statements run per row. With
 * `split`, a node-centric kernel works on tiles of at most nchunk incoming edges, so a
 * high-degree node is shared by several warps that add their partial sums atomically. */
static int emit_rows(kgen *g, const lw_trav *tr, const int *phases, int phase, int nphases, int split, rg_err *err)
{
    rg_str *b = &g->body;
    int np = g->f == FORM_NODE ? nphases : 1;
    RG_ASSERT(np <= 8);
    rg_str bodies[8] = {{0}}, lanes[8] = {{0}};
    int rc = 0;
    for (int p = 0; p < np && !rc; p++)
        rc = phase_body(g, tr, phases, g->f == FORM_NODE ? p : phase, &bodies[p], &lanes[p], err);
    if (rc) {
        for (int p = 0; p < np; p++) {
            rg_str_free(&bodies[p]);
            rg_str_free(&lanes[p]);
        }
        return -1;
    }
    const char *body0 = bodies[0].s ? bodies[0].s : "";
    rg_str epi = {0};
    if (g->epi && render_epilogue(g, g->f == FORM_NODE ? "n" : "cur", &epi, err)) {
        for (int p = 0; p < np; p++) {
            rg_str_free(&bodies[p]);
            rg_str_free(&lanes[p]);
        }
        return -1;
    }
    /* weight-gradient partial sums: flushed when their slot changes edge type, and at the end */
    rg_str tprefix = {0};
    int wacc = has_wacc(g);
    if (wacc) emit_wslot_switch(g, &tprefix);
    const char *tpre = wacc ? tprefix.s : NULL;
    switch (g->f) {
    case FORM_EDGE:
        if (g->crrun) g->needs_cr = 1;
        emit_edge_runs(g, 0, g->crrun ? "cr" : NULL, tpre, lanes[0].s, body0, NULL);
        break;
    case FORM_EDGE_DSTRUN:
        emit_edge_runs(g, 1, "dn", tpre, lanes[0].s, body0, epi.s);
        break;
    case FORM_NODE:
        if (split) {
            rg_str_printf(b,
                          "    const int tile = blockIdx.x * %d + warp;\n    if (tile >= num_rows) return;\n"
                          "    const int n = tile_type[tile];\n    const int q_begin = tile_row0[tile];\n"
                          "    const int q_end = min(%s[n + 1], q_begin + %d);\n"
                          "    const int whole = q_begin == %s[n] && q_end == %s[n + 1];\n",
                          g->rpb, arr(g, KG_IN_PTR), g->cfg->nchunk, arr(g, KG_IN_PTR), arr(g, KG_IN_PTR));
        } else {
            rg_str_printf(b, "    const int n = blockIdx.x * %d + warp;\n    if (n >= num_rows) return;\n"
                             "    const int q_begin = %s[n], q_end = %s[n + 1];\n",
                          g->rpb, arr(g, KG_IN_PTR), arr(g, KG_IN_PTR));
        }
        rg_str_puts(b, "    int tcur = -1; (void)tcur;\n");
        emit_zero_acc(g);
        if (g->rm_agg)   /* -infinity: the first edge's logit becomes the maximum, its factor 0 (the sums are 0) */
            rg_str_printf(b, "    double rm_[%d];   /* rmax=on: the running maximum of the softmax's logits, per head */\n"
                             "    #pragma unroll\n    for (int h = 0; h < %d; h++) rm_[h] = __longlong_as_double(0xfff0000000000000ULL);\n",
                          g->rm_heads, g->rm_heads);
        for (int p = 0; p < np; p++) {
            emit_edge_loop(g, "q_begin", "q_end", 1, walk_dst(g), tpre, lanes[p].s, bodies[p].s ? bodies[p].s : "");
            rg_str_printf(b, "    %s;\n", gsync(g));
        }
        RG_ASSERT(!g->epi || split);   /* et_fusion_plan: one pass over each node's edges */
        if (g->epi) {
            emit_flush_whole(g, b, "n", "whole", epi.s, 0);
        } else if (g->rm_agg && split) {
            rg_str_puts(b, "        if (whole) {\n");
            emit_flush(g, b, "n", 0, NULL, NULL);
            rg_str_puts(b, "        } else {\n");
            emit_flush_part(g, b, "n", 0);
            rg_str_puts(b, "        }\n");
        } else {
            emit_flush(g, b, "n", 0, split ? "!whole" : NULL, NULL);
        }
        break;
    default: {
        /* one row per warp: unique pairs, nodes, types, or the single global row; a run of unique
         * rows where weight gradients are summed (plan_wacc) */
        static const char *row_decl[] = {[FORM_UNIQUE] = "u", [FORM_NODE_DOM] = "n", [FORM_TYPE] = "t"};
        rg_str ctx = g->body;
        g->body = (rg_str){0};
        emit_row_context(g, g->cfg);
        rg_str ctxs = g->body;
        g->body = ctx;
        if (g->run > 1) {   /* a run of unique rows, summing weight gradients per edge type */
            RG_ASSERT(g->f == FORM_UNIQUE && wacc);
            rg_str_printf(b, "    const int u0 = (blockIdx.x * %d + warp) * %d;\n    if (u0 >= num_rows) return;\n"
                             "    const int u_end = min(u0 + %d, num_rows);\n    int tcur = -1;\n",
                          g->rpb, g->run, g->run);
            emit_zero_acc(g);
            rg_str_printf(b, "    for (int u = u0; u < u_end; u++) {\n%s%s%s    }\n", ctxs.s ? ctxs.s : "", tpre, body0);
            emit_wslot_final(g, b);
        } else {
            if (g->f == FORM_GLOBAL)
                rg_str_printf(b, "    if (blockIdx.x * %d + warp >= num_rows) return;\n", g->rpb);
            else
                rg_str_printf(b, "    const int %s = blockIdx.x * %d + warp;\n    if (%s >= num_rows) return;\n",
                              row_decl[g->f], g->rpb, row_decl[g->f]);
            if (g->guard != ET_GUARD_NONE) emit_guard(g);
            if (g->rm_node) emit_rm_merge(g);
            rg_str_printf(b, "    {\n%s%s    }\n", ctxs.s ? ctxs.s : "", body0);
        }
        rg_str_free(&ctxs);
        break;
    }
    }
    if (wacc && (g->f == FORM_EDGE || g->f == FORM_EDGE_DSTRUN || g->f == FORM_NODE)) emit_wslot_final(g, b);
    rg_str_free(&tprefix);
    rg_str_free(&epi);
    for (int p = 0; p < np; p++) {
        rg_str_free(&bodies[p]);
        rg_str_free(&lanes[p]);
    }
    return 0;
}

static kp_size rows_size(form f)
{
    switch (f) {
    case FORM_EDGE: case FORM_EDGE_DSTRUN: return KS_EDGES;
    case FORM_UNIQUE: return KS_UNIQUE;
    case FORM_TYPE: return KS_ETYPES;
    case FORM_GLOBAL: return KS_NONE;
    default: return KS_NODES;
    }
}

/* Whether the kernel text reads identifier `w`: a whole-word occurrence that is neither declared or
 * assigned there (`w = `) nor discarded (`(void)w`). Conservative: a word in a comment counts. */
static int word_read(const char *text, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = tpl_find_word(text, text, w); p; p = tpl_find_word(text, p + 1, w)) {
        if (p - text >= 6 && !strncmp(p - 6, "(void)", 6)) continue;
        if (p[n] == ' ' && p[n + 1] == '=' && p[n + 2] != '=') continue;
        return 1;
    }
    return 0;
}

/* Removes every line of `text` that is exactly `indent` + "var = ARRAY[INDEX];" (in place). */
static void drop_load_lines(char *text, const char *var)
{
    char *out = text;
    size_t n = strlen(var);
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        char *q = line;
        while (*q == ' ') q++;
        size_t rest = (size_t)(line + len - q);   /* q's part of the line, its newline included */
        int load = rest > n + 3 && !strncmp(q, var, n) && !strncmp(q + n, " = ", 3) && end &&
                   !strncmp(end - 2, "];", 2) && memchr(q, '[', rest) != NULL;
        if (!load) {
            memmove(out, line, len);
            out += len;
        }
        line += len;
    }
    *out = '\0';
}

/* The edge loops fetch each edge's source and type (emit_edge_loop); where no statement of the kernel
 * reads them (RGCN's aggregation reads only the compact row and the norm), the loads go: 8 bytes an
 * edge that the compiler kept (the id broadcasts' divergent fallback holds them; docs/perf-notes.md,
 * session 23). The binary search of compact=bsearch reads both. */
static void drop_unread_ids(kgen *g)
{
    if (!g->body.s || (g->cfg->compact == CFG_COMPACT_BSEARCH && g->needs_cr)) return;
    if (!word_read(g->body.s, "sn")) drop_load_lines(g->body.s, "sn_l");
    if (!word_read(g->body.s, "t")) drop_load_lines(g->body.s, "t_l");
    g->body.len = strlen(g->body.s);
}

static void assemble(kgen *g, kp_kernel *k, rg_str *src, const char *comment, int split)
{
    rg_str_printf(src, "\n/* %s */\nextern \"C\" __global__ void ", comment);
    if (g->cfg->occ)   /* occ=N: N warps an SM, so registers for that many blocks (cfg_rule_occ) */
        rg_str_printf(src, "__launch_bounds__(%d, %d) ", g->cfg->tblock, g->cfg->occ * 32 / g->cfg->tblock);
    else if (g->cfg->launch_bounds)   /* resident blocks asked for: an SM holds 2048 threads at most */
        rg_str_printf(src, "__launch_bounds__(%d, %d) ", g->cfg->tblock, g->cfg->tblock >= 1024 ? 2 : 4);
    rg_str_printf(src, "%s(int num_rows", k->name);
    if (split) {
        /* rows are tiles of incoming edges: num_rows is the tile count */
        kp_add_param(k, KP_INT, KS_NTILES, 0, "num_rows");
        rg_str_puts(src, ", const int* __restrict__ tile_type, const int* __restrict__ tile_row0");
        kp_add_param(k, KP_TILE_TYPE, KR_IN_EDGES, g->cfg->nchunk, "tile_type");
        kp_add_param(k, KP_TILE_ROW0, KR_IN_EDGES, g->cfg->nchunk, "tile_row0");
    } else {
        kp_add_param(k, KP_INT, rows_size(g->f), 1, "num_rows");  /* FORM_GLOBAL: the constant 1 */
    }
    for (int v = 0; v < g->ir->nvars; v++) {
        if (!g->var_used[v]) continue;
        char pname[32];
        snprintf(pname, sizeof pname, "v%d", v);
        int in_order = reads_in_order(g, v);   /* then every read of v in this kernel is at qpos */
        /* A variable the kernel writes is not __restrict__: one lane stores an edge's value (training's
         * per-edge scores) and the group's other lanes read it after a __syncwarp, and under noalias the
         * compiler may hoist those reads above the barrier (it did: NaN from the poisoned buffer in
         * training, with unroll=4 and some lane counts; docs/perf-notes.md, session 22). */
        rg_str_printf(src, ",\n    %s%s*%s v%d /* %s%s */", g->var_written[v] ? "" : "const ", vt_ctype(V(g, v)),
                      g->var_written[v] ? "" : " __restrict__", v, V(g, v)->name, in_order ? "@in" : "");
        kp_add_param(k, in_order ? KP_VAR_IN : KP_VAR, v, 0, pname)->written = g->var_written[v];
    }
    for (int a = 0; a < KG__COUNT; a++) {
        if (!g->arr_used[a]) continue;
        const char *name = kp_graph_array_name((kp_graph_array)a);
        rg_str_printf(src, ",\n    const int* __restrict__ %s", name);
        kp_add_param(k, KP_GRAPH, a, 0, name);
    }
    if (g->rm_work) {   /* rmax=on: the softmax's workspace and the node count its slots begin after */
        rg_str_puts(src, ",\n    double* rmw_, int rm_nodes_");
        kp_param *w = kp_add_param(k, KP_WORK, g->rm.un, g->rm_agg ? g->cfg->nchunk : g->rm_chunk, "rmw_");
        w->work_node = g->rm_heads;
        w->work_row = rm_row(g);
        kp_add_param(k, KP_INT, KS_NODES, 0, "rm_nodes_");
    }
    /* per-row temporaries and accumulators live in double: see vt_is_f64 */
    rg_str_puts(src, ")\n{\n    extern __shared__ double smem[];\n");
    if (g->L == 32)
        rg_str_puts(src, "    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;\n");
    else   /* `warp` is the row group; gmask its lanes within the warp */
        rg_str_printf(src, "    const int warp = threadIdx.x / %d, lane = threadIdx.x %% %d;  /* row group of %d lanes */\n"
                           "    const unsigned gmask = (0xffffffffu >> %d) << (threadIdx.x & %d); (void)gmask;\n",
                      g->L, g->L, g->L, 32 - g->L, 32 - g->L);
    drop_unread_ids(g);
    rg_str_printf(src, "    double* scr = smem + warp * %d; (void)scr;\n%s}\n", g->scr_size > 0 ? g->scr_size : 1,
                  g->body.s);
    k->grid_kind = g->f == FORM_GLOBAL ? KGRID_FIXED : split ? KGRID_TILES : KGRID_ROWS;
    k->grid_x_fixed = 1;
    k->grid_rows_size = rows_size(g->f);
    k->tile_rowset = KR_IN_EDGES;
    k->tile_rows = g->cfg->nchunk;
    k->rows_per_block = g->rpb * g->run;
    k->block_x = g->cfg->tblock;
    k->shmem_bytes = g->rpb * (g->scr_size > 0 ? g->scr_size : 1) * (int)sizeof(double);
}

static void kgen_init(kgen *g, const ir_program *ir, const lw_trav *tr, const cg_config *cfg, const int *mat, form f)
{
    memset(g, 0, sizeof *g);
    g->ir = ir;
    g->cfg = cfg;
    g->mat = mat;
    g->f = f;
    g->L = cfg->lanes;
    g->rpb = cfg->tblock / cfg->lanes;
    g->V = cfg->vec;
    RG_ASSERT(g->L >= 4 && g->L <= 32 && (g->L & (g->L - 1)) == 0 && g->rpb >= 1 && cfg->tblock % 32 == 0);
    g->var_used = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->var_written = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->scr_off = rg_xmalloc((size_t)ir->nvars * sizeof(int));
    g->acc_off = rg_xmalloc((size_t)ir->nvars * sizeof(int));
    g->reg_slots = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->wacc_off = rg_xmalloc((size_t)ir->nvars * sizeof(int));
    g->wreg = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->lane_off = rg_xmalloc((size_t)ir->nvars * sizeof(int));
    g->lane_bcast = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->pf_var = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->pf_bcast = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->rp_acc = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->once = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->cover = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->fw_live = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->lane_stmt = rg_xcalloc((size_t)(tr->nstmts ? tr->nstmts : 1), sizeof(int));
    g->epi_off = rg_xmalloc((size_t)ir->nvars * sizeof(int));
    g->epi_skip = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    g->epi_recip = rg_xcalloc((size_t)ir->nvars, sizeof(int));
    for (int v = 0; v < ir->nvars; v++) g->scr_off[v] = g->acc_off[v] = g->wacc_off[v] = g->lane_off[v] = g->epi_off[v] = -1;
}

static void kgen_free(kgen *g)
{
    free(g->var_used);
    free(g->var_written);
    free(g->scr_off);
    free(g->acc_off);
    free(g->reg_slots);
    rg_str_free(&g->acc_note);
    free(g->wacc_off);
    free(g->wreg);
    free(g->lane_stmt);
    free(g->lane_off);
    free(g->lane_bcast);
    free(g->pf_var);
    free(g->pf_bcast);
    free(g->rp_acc);
    free(g->once);
    free(g->cover);
    free(g->fw_live);
    free(g->epi_off);
    free(g->epi_skip);
    free(g->epi_recip);
    free(g->rm_skip);
    rg_str_free(&g->body);
    rg_str_free(&g->vec_loads);
}

/* Index in tr of statement `stmt` when it runs in this kernel, else -1. */
static int kernel_index(const kgen *g, const lw_trav *tr, const int *phases, int phase, int stmt)
{
    for (int i = 0; i < tr->nstmts; i++)
        if (tr->stmts[i].stmt == stmt) return in_kernel(g, phases, phase, i) ? i : -1;
    return -1;
}

/* rmax=on (the softmax cg_rmax_links gave the instance): this kernel keeps its sums under a running
 * maximum where its exp is here, or merges the aggregation's split tiles before the division where that
 * is here; an error where the aggregation cannot keep them. */
static int plan_rmax(kgen *g, const lw_trav *tr, const int *phases, int phase, const et_fusion *fu, rg_err *err)
{
    if (!fu || !fu->rmax_linked) return 0;
    const psm_online *on = &fu->rmax;
    if (fu->rmax_chunk > 0 && kernel_index(g, tr, phases, phase, on->norm) >= 0) {
        g->rm = *on;
        g->rm_node = 1;
        g->rm_chunk = fu->rmax_chunk;
        g->rm_heads = vt_heads(V(g, on->a));
    }
    int i = kernel_index(g, tr, phases, phase, on->x);
    if (i < 0) return 0;
    if (g->f != FORM_NODE) return rg_errf(err, "invalid: rmax=on: the softmax's exp is not in a node-centric aggregation");
    if (g->acc_off[on->sum] < 0 || g->acc_off[on->un] < 0)
        return rg_errf(err, "invalid: rmax=on: the aggregation does not hold the softmax's two sums");
    g->rm = *on;
    g->rm_agg = 1;
    g->rm_heads = vt_heads(V(g, on->a));
    g->rm_lane = g->lane_stmt[i] && !g->replicated;
    g->rm_skip = rg_xcalloc((size_t)g->ir->nvars, sizeof *g->rm_skip);
    g->rm_skip[on->sum] = g->rm_skip[on->un] = 1;
    return 0;
}

/* What one kernel of a traversal runs: its form, its part of the statements (crsum=split; NULL:
 * all), whether it walks compact rows' sums, and the suffix of its name. */
typedef struct kpart {
    form f;
    const int *keep;
    int crrun, part;
    const char *suffix;
    const et_fusion *fu;   /* epi=on: the node statements it runs, or the rows it skips; NULL: none */
} kpart;

static int emit_one_kernel(const ir_program *ir, const lw_trav *tr, const int *mat, const cg_config *cfg,
                           const kpart *kp, const int *phases, int phase, int nphases, const char *name, int backward,
                           kp_plan *plan, rg_err *err)
{
    kgen g;
    form f = kp->f;
    kgen_init(&g, ir, tr, cfg, mat, f);
    g.keep = kp->keep;
    g.crrun = kp->crrun;
    if (kp->fu) {
        g.epi = kp->fu->epilogue;
        g.guard = kp->fu->guard;
        g.guard_chunk = kp->fu->chunk;
    }
    plan_rows(&g, tr, phases, phase, nphases);
    plan_lanes(&g, tr, phases, phase);
    plan_stores(&g, tr, phases, phase);
    if (plan_prefetch(&g, tr, phases, phase)) rg_str_puts(&g.acc_note, "; pfetch=on: scalar operands loaded with the ids");
    if (plan_rowpf(&g, tr, phases, phase))
        rg_str_printf(&g.acc_note, "; rowpf=%s: gathered rows prefetched with the ids", cfg->rowpf == CFG_ROWPF_L1 ? "l1" : "l2");
    if (g.epi) plan_epilogue(&g);
    /* one pass over a node's edges can be shared by warps; several passes need the whole node */
    int split = f == FORM_NODE && nphases == 1;   /* et_node_split */
    long long smem = (long long)g.rpb * (g.scr_size > 0 ? g.scr_size : 1) * (long long)sizeof(double);
    int rc = plan_rmax(&g, tr, phases, phase, kp->fu, err) ? -1
           : smem > SMEM_MAX ? rg_errf(err, "invalid: tblock=%d with lanes=%d runs %d rows per block, each with %d "
                                            "doubles of shared scratch: %lld bytes, over the %d a block may have",
                                       cfg->tblock, cfg->lanes, g.rpb, g.scr_size, smem, SMEM_MAX)
                             : emit_rows(&g, tr, phases, phase, nphases, split, err);
    if (rc == 0) {
        kp_kernel *k = kp_add_kernel(plan);
        snprintf(k->name, sizeof k->name, "%s", name);
        k->category = KC_TRAVERSAL;
        k->backward = backward;
        k->part = kp->part;
        rg_str src = {0};
        char comment[1024];
        static const char *form_names[] = {"edge-centric", "edge-centric, dst-sorted partial aggregation",
                                           "node-centric over incoming edges", "compact (src, etype) rows",
                                           "node rows", "edge-type rows", "once"};
        int nkept = 0;
        for (int i = 0; i < tr->nstmts; i++) nkept += !kp->keep || kp->keep[i];
        snprintf(comment, sizeof comment, "%s: traversal, %s%s%s, %d statement(s)%s", name, form_names[f],
                 kp->crrun ? " in (etype, src) order, sums per compact row" : "",
                 split ? " (heavy nodes split across warps)" : "", nkept, g.acc_note.s ? g.acc_note.s : "");
        assemble(&g, k, &src, comment, split);
        k->source = src.s;
        for (int v = 0; v < ir->nvars; v++)
            if (g.cover[v]) kp_kernel_covers(k, v);
        for (int i = 0; i < nkept; i++) k->flops += 2.0;  /* per row and element, rough */
    }
    kgen_free(&g);
    return rc;
}

/* Whether statement i of a part runs in phase p. */
static int part_has_phase(const kpart *kp, const int *phases, int n, int p)
{
    for (int i = 0; i < n; i++)
        if (phases[i] == p && (!kp->keep || kp->keep[i])) return 1;
    return 0;
}

/* The kernels of one part: one node-centric kernel for every phase, or a kernel per phase
 * (NAME_pN) that has statements of the part; the part's suffix ends each name. */
static int emit_part(const ir_program *ir, const lw_trav *tr, const int *mat, const cg_config *cfg, const kpart *kp,
                     const int *phases, int nphases, const char *name, int backward, kp_plan *plan, rg_err *err)
{
    char kname[64];
    if (kp->f == FORM_NODE || nphases == 1) {
        snprintf(kname, sizeof kname, "%s%s", name, kp->suffix);
        return emit_one_kernel(ir, tr, mat, cfg, kp, phases, 0, nphases, kname, backward, plan, err);
    }
    for (int p = 0; p < nphases; p++) {
        if (kp->keep && !part_has_phase(kp, phases, tr->nstmts, p)) continue;
        snprintf(kname, sizeof kname, "%s_p%d%s", name, p, kp->suffix);
        if (emit_one_kernel(ir, tr, mat, cfg, kp, phases, p, nphases, kname, backward, plan, err)) return -1;
        plan->kernels[plan->nkernels - 1].phase = p;
    }
    return 0;
}

/* crsum=split: the rest in the traversal's own form first (the compact rows' kernels read what it
 * writes to device memory, the destinations' sums of earlier phases), then the compact rows' sums
 * in the (etype, src) order, named NAME_cr. Without a rest, the one kernel of crsum=run. */
static int emit_split(const ir_program *ir, const lw_trav *tr, const int *mat, const cg_config *cfg,
                      const int *phases, int nphases, const char *name, int backward, kp_plan *plan, rg_err *err)
{
    int n = tr->nstmts;
    int *keep_cr = rg_xmalloc((size_t)n * sizeof(int)), *keep_rest = rg_xmalloc((size_t)n * sizeof(int));
    et_split_part(ir, tr, mat, 1, keep_cr);
    int rest = et_split_part(ir, tr, mat, 2, keep_rest);
    kpart first = {form_of(tr, cfg), keep_rest, 0, 2, "", NULL}, second = {FORM_EDGE, keep_cr, 1, 1, "_cr", NULL};
    if (!rest) second = (kpart){FORM_EDGE, NULL, 1, 0, "", NULL};
    int rc = (rest && emit_part(ir, tr, mat, cfg, &first, phases, nphases, name, backward, plan, err)) ||
             emit_part(ir, tr, mat, cfg, &second, phases, nphases, name, backward, plan, err);
    free(keep_cr);
    free(keep_rest);
    return rc ? -1 : 0;
}

int et_emit(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg,
            const char *name, int backward, kp_plan *plan, rg_err *err)
{
    return et_emit_fused(ir, tr, materialized, cfg, NULL, name, backward, plan, err);
}

int et_emit_fused(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg,
                  const et_fusion *fu, const char *name, int backward, kp_plan *plan, rg_err *err)
{
    int walk = et_compact_walk(ir, tr, cfg);
    int *phases = rg_xmalloc((size_t)(tr->nstmts ? tr->nstmts : 1) * sizeof(int));
    int nphases = et_phases(ir, tr, phases);
    int rc;
    if (walk && cfg->crsum == CFG_CRSUM_SPLIT) {
        rc = emit_split(ir, tr, materialized, cfg, phases, nphases, name, backward, plan, err);
    } else {
        kpart one = {walk ? FORM_EDGE : form_of(tr, cfg), NULL, walk, 0, "", fu};
        rc = emit_part(ir, tr, materialized, cfg, &one, phases, nphases, name, backward, plan, err);
    }
    free(phases);
    if (rc) rg_err_prefix(err, "cannot emit %s", name);
    return rc;
}

int et_node_split(const ir_program *ir, const lw_trav *tr, const cg_config *cfg)
{
    if (form_of(tr, cfg) != FORM_NODE) return 0;
    int *phases = rg_xmalloc((size_t)(tr->nstmts ? tr->nstmts : 1) * sizeof *phases);
    int once = et_phases(ir, tr, phases) == 1;
    free(phases);
    return once;
}

/* What the kernels of traversal tr would hold, planned as emit_one_kernel plans them: their lanes' own
 * statements (scalars=lane|replicated), their operands loaded with the ids (pfetch), their gathered
 * rows prefetched (rowpf), or their weight-gradient sums in registers (wacc). */
typedef enum planned { PLANNED_LANES, PLANNED_PFETCH, PLANNED_ROWPF, PLANNED_WACC } planned;

static int count_wregs(const kgen *g)
{
    int n = 0;
    for (int v = 0; v < g->ir->nvars; v++) n += g->wreg[v] > 0;
    return n;
}

static int planned_count(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg,
                         planned what)
{
    int walk = et_compact_walk(ir, tr, cfg);
    form f = walk ? FORM_EDGE : form_of(tr, cfg);
    int set = what == PLANNED_LANES ? (int)cfg->lane_scalars : what == PLANNED_PFETCH ? cfg->pfetch
              : what == PLANNED_ROWPF ? cfg->rowpf : cfg->wacc;
    int edges = f == FORM_EDGE || f == FORM_EDGE_DSTRUN || f == FORM_NODE;
    if (!set || !(edges || (what == PLANNED_WACC && f == FORM_UNIQUE))) return 0;
    int *phases = rg_xmalloc((size_t)(tr->nstmts ? tr->nstmts : 1) * sizeof *phases);
    int nphases = et_phases(ir, tr, phases), n = 0;
    for (int p = 0; p < (f == FORM_NODE ? 1 : nphases); p++) {
        kgen g;
        kgen_init(&g, ir, tr, cfg, materialized, f);
        g.crrun = walk;
        plan_rows(&g, tr, phases, p, nphases);
        int lanes = plan_lanes(&g, tr, phases, p);
        n += what == PLANNED_LANES ? lanes : what == PLANNED_PFETCH ? plan_prefetch(&g, tr, phases, p)
             : what == PLANNED_ROWPF ? plan_rowpf(&g, tr, phases, p) : count_wregs(&g);
        kgen_free(&g);
    }
    free(phases);
    return n;
}

int et_lane_scalars(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg)
{
    return planned_count(ir, tr, materialized, cfg, PLANNED_LANES);
}

int et_prefetches(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg)
{
    return planned_count(ir, tr, materialized, cfg, PLANNED_PFETCH);
}

int et_row_prefetches(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg)
{
    return planned_count(ir, tr, materialized, cfg, PLANNED_ROWPF);
}

int et_wacc_registers(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg)
{
    return planned_count(ir, tr, materialized, cfg, PLANNED_WACC);
}

int et_mapping_applies(const cg_config *cfg, const ir_dims *dims, rg_err *err)
{
    if (cfg_unroll_factor(cfg) > cfg->lanes) {
        rg_errf(err, "unroll=%d does not apply with lanes=%d: a row group's walk steps over at most %d edges, so the "
                     "unrolled loop body would never run", cfg_unroll_factor(cfg), cfg->lanes, cfg->lanes);
        return 0;
    }
    if (cfg->vec == 1) return 1;
    int widest = dims->in_dim > dims->out_dim ? dims->in_dim : dims->out_dim;
    if (dims->in_dim % cfg->vec && dims->out_dim % cfg->vec) {
        rg_errf(err, "vec=%d does not apply: no feature row of this problem (widths %d and %d) is a multiple of %d "
                     "floats, so every access would stay scalar, as with vec=1", cfg->vec, dims->in_dim, dims->out_dim,
                cfg->vec);
        return 0;
    }
    if (cfg->lanes * cfg->vec > widest) {
        rg_errf(err, "vec=%d does not apply with lanes=%d: a row group steps over %d elements, more than the widest "
                     "feature row (%d), so lanes idle on every row; fewer lanes make the same vector accesses",
                cfg->vec, cfg->lanes, cfg->lanes * cfg->vec, widest);
        return 0;
    }
    return 1;
}

const char *et_fusion_plan(const ir_program *ir, const lw_trav *agg, const lw_trav *node, const int *materialized,
                           const cg_config *cfg, et_fusion *agg_fu, et_fusion *node_fu)
{
    memset(agg_fu, 0, sizeof *agg_fu);
    memset(node_fu, 0, sizeof *node_fu);
    if (!cfg->epilogue) return "epi=off";
    if (agg->dom != IR_DOM_EDGE || agg->compact_rows || !agg->has_dst_aggregation)
        return "the traversal before it sums into no destination";
    if (node->dom != IR_DOM_NODE) return "the next traversal is not over nodes";
    form f = form_of(agg, cfg);
    if (f != FORM_NODE && f != FORM_EDGE_DSTRUN)
        return "the aggregation adds every edge atomically (trav=edge, pagg=off): it holds no destination's sum";
    if (et_compact_walk(ir, agg, cfg)) return "the aggregation walks the (etype, src) order (crsum)";
    int *phases = rg_xmalloc((size_t)(agg->nstmts ? agg->nstmts : 1) * sizeof *phases);
    int nphases = et_phases(ir, agg, phases);
    const char *why = nphases > 1 ? "the aggregation walks each destination's edges in several passes" : NULL;
    kgen g;
    kgen_init(&g, ir, agg, cfg, materialized, f);
    int sums = 0;
    if (!why) {
        plan_rows(&g, agg, phases, 0, nphases);
        for (int k = 0; k < node->nstmts && !why; k++) why = epi_stmt_obstacle(&g, agg, phases, node, k, &sums);
        if (!why && !sums) why = "the node statements read none of the aggregation's sums";
    }
    if (!why) {
        agg_fu->epilogue = node;
        node_fu->guard = f == FORM_NODE ? ET_GUARD_CHUNK : ET_GUARD_RUN;
        node_fu->chunk = f == FORM_NODE ? cfg->nchunk : g.run;
    }
    kgen_free(&g);
    free(phases);
    return why;
}
