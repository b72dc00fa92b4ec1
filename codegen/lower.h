/* The intra-operator program: the inter-operator IR lowered by preference into GEMM
 * instances and traversal instances (plus fallbacks), the unit the emitters specialize. */
#ifndef LOWER_H
#define LOWER_H

#include "codegen/ir.h"

/*
 * GEMM template  Y[S] (+)= s * X[G] x W[T]   (digest §3.1), or its outer-product form
 * dW[T] += X[G]^T x dY[S] for weight gradients.
 * The instance iterates "rows" grouped in type segments; for each row it finds the X row
 * through the gather, the weight slice through the type, and the Y row through the scatter.
 */
typedef enum lw_rows {
    LW_ROWS_EDGES,      /* one row per edge, segments etype_ptr */
    LW_ROWS_UNIQUE,     /* one row per unique (src, etype), segments unique_etype_ptr */
    LW_ROWS_NODES,      /* one row per node, segments ntype_ptr (node-typed linear) or one segment */
    LW_ROWS_TYPES       /* one row per edge type (weight-weight products) */
} lw_rows;

typedef enum lw_index {
    LW_IDX_ROW,         /* the row itself (edge id, unique id, node id) */
    LW_IDX_SRC,         /* src[edge] (rows = edges) or unique_src[u] (rows = unique) */
    LW_IDX_DST,         /* dst[edge] */
    LW_IDX_COMPACT      /* the compact row of the edge (an edge var with COMPACT layout read
                           per edge): edge_compact[e] or a binary search, per schedule */
} lw_index;

typedef struct lw_gemm {
    int stmt;           /* index of the IR statement (LINEAR or WGRAD) */
    int outer_product;  /* WGRAD form */
    lw_rows rows;
    int x_var, w_var, y_var;
    lw_index x_idx;     /* gather list on X */
    lw_index y_idx;     /* scatter list on Y (ROW = contiguous) */
    int y_atomic;       /* several rows update one Y row: atomics (or a segmented reduction) */
    int accumulate;     /* Y += */
    int transpose_w;    /* multiply by W^T (input gradients) */
    ir_access w_acc;    /* which type slices W: ETYPE, NTYPE, SRC_NTYPE, DST_NTYPE, ALL */
    int scalar_var;     /* -1 or a per-row scalar fused into the GEMM (e.norm, attention) */
    int scalar_stmt;    /* the statement of that multiply (its output is y_var), -1 */
    lw_index scalar_idx;
    int K, N;           /* inner and output widths of one head's product */
    int heads;          /* per-head weights: heads independent products; else 1 */
} lw_gemm;

/* Traversal template: a fused group of elementwise / dot / aggregation statements sharing
 * one loop nest (edge -> head -> feature, or dst node -> incoming edge -> head -> feature). */
typedef enum lw_level { LW_LEVEL_OUTER, LW_LEVEL_HEAD, LW_LEVEL_FEAT } lw_level;

typedef struct lw_trav_stmt {
    int stmt;           /* IR statement index */
    lw_level level;     /* outermost legal loop level after hoisting */
    int out_in_register;/* a temporary used only inside this instance: never materialized */
} lw_trav_stmt;

typedef struct lw_trav {
    ir_domain dom;      /* IR_DOM_EDGE or IR_DOM_NODE (or TYPE for tiny per-type work) */
    int compact_rows;   /* iterates unique (src, etype) rows (the outputs are COMPACT) */
    int has_dst_aggregation;  /* writes e.dst[...] += : node-centric form is legal */
    int has_src_aggregation;  /* writes e.src[...] += (backward): edge-centric or out-CSR */
    int deferred;       /* only backward sums over destinations, split off by lw_options.defer_dst_sums */
    int nstmts;
    lw_trav_stmt *stmts;
} lw_trav;

typedef enum lw_kind { LW_GEMM, LW_TRAV, LW_FALLBACK } lw_kind;

typedef struct lw_instance {
    lw_kind kind;
    char name[64];      /* e.g. "gemm_1", "trav_2" (stable: used as kernel names) */
    int backward;
    union {
        lw_gemm gemm;
        lw_trav trav;
        int fallback_stmt;  /* a statement lowered to a plain host/device loop */
    } u;
} lw_instance;

typedef struct lw_program {
    const ir_program *ir;   /* not owned */
    int ninst;
    lw_instance *inst;
    /* variables that must exist in device memory (not register-only temporaries) */
    int *materialized;      /* [ir->nvars] 0/1 */
} lw_program;

lw_program *lw_lower(const ir_program *p, rg_err *err);

/* ---- additions (D1) ---- */
/* Switches of the lowering: fuse = 0 turns loop fusion (pass_fuse) off, so every
 * traversal statement becomes its own instance; lw_lower uses fuse = 1. msg_in_trav = 1 (config
 * msg=trav) leaves the forward pass's per-edge typed linears (x[src] or x[dst] times W[etype]: the
 * messages) to the traversal that reads them, computed per edge in its kernel, instead of a GEMM
 * that materializes them (lw_message_linear says which statements). defer_dst_sums = 1 (config
 * crsum=defer) keeps the backward pass's per-edge sums over destinations (lw_defers_dst_sum) out of
 * the traversal of the other per-edge statements: they fuse only with each other, into an instance of
 * their own that runs after it, and the per-edge values they read are materialized by it. */
typedef struct lw_options {
    int fuse;
    int msg_in_trav;
    int defer_dst_sums;
} lw_options;
/* Whether statement i is a backward per-edge sum of a row (wider than one value) into e.dst, which
 * defer_dst_sums lowers apart. */
int lw_defers_dst_sum(const ir_program *p, int i);
/* Whether statement i is a forward per-edge typed linear that msg=trav computes in a traversal. */
int lw_message_linear(const ir_program *p, int i);
lw_program *lw_lower_opts(const ir_program *p, const lw_options *opt, rg_err *err);
void lw_free(lw_program *lp);
void lw_print(const lw_program *lp, FILE *f);

#endif
