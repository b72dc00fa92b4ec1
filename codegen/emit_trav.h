/* The traversal template emitter: turns a fused group of edgewise / nodewise statements
 * into edge-centric or node-centric CUDA kernels (warp per row, lanes over heads x features). */
#ifndef ET_EMIT_TRAV_H
#define ET_EMIT_TRAV_H

#include "codegen/config.h"
#include "codegen/kplan.h"
#include "codegen/lower.h"
#include "codegen/pass_softmax.h"

/* Phase of each statement of a traversal: a statement that reads, at e.dst or e.src, a
 * variable aggregated earlier in the same group starts a new phase (a grid-wide dependency:
 * another kernel in edge-centric form, another pass over the incoming edges in node-centric
 * form). phases[i] is for tr->stmts[i] (phases: room for tr->nstmts, never NULL); returns the
 * number of phases. */
int et_phases(const ir_program *ir, const lw_trav *tr, int *phases);

/* Whether the traversal sums into compact (src, etype) rows walking the edges in their stored
 * (etype, src) order (cfg crsum run or split): an edge traversal with such sums that it never
 * reads back. decide_materialization keeps per-node sums in device memory then. */
int et_compact_walk(const ir_program *ir, const lw_trav *tr, const cg_config *cfg);

/* crsum=split: marks in keep[i] the statements of part 1 (the sums into compact rows and weight
 * gradients, walked in the (etype, src) order) or part 2 (every other statement that writes device
 * memory or sums, in the traversal's own walk), each with the per-row temporaries it reads,
 * transitively (computed in both parts where both need them). Returns the number marked. */
int et_split_part(const ir_program *ir, const lw_trav *tr, const int *materialized, int part, int *keep);

/* Emits the kernels of one traversal instance. `materialized[v]` says which variables live
 * in device memory; the others are per-row scratch in shared memory. Kernel texts come
 * without the device helpers (codegen/templates.h). */
int et_emit(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg,
            const char *name, int backward, kp_plan *plan, rg_err *err);

/* epi=on: an aggregating traversal runs the statements of the node traversal that follows it (RGAT's
 * and HGT's division by the softmax sum) when it flushes a destination whose incoming edges it summed
 * whole, from its accumulators, instead of storing them for that traversal to read back; the node
 * traversal then skips those nodes (its guard) and finishes only the rest (heavy nodes split across
 * row groups, dst runs cut by a row group's boundary, nodes without incoming edges). */
typedef enum et_guard {
    ET_GUARD_NONE,   /* every row */
    ET_GUARD_CHUNK,  /* skip a node of 1..chunk incoming edges (node-centric tiles of chunk edges) */
    ET_GUARD_RUN     /* skip a node whose incoming edges lie in one run of chunk dst-sorted positions */
} et_guard;

typedef struct et_fusion {
    const lw_trav *epilogue;   /* for the aggregating traversal: the node traversal's statements, or NULL */
    et_guard guard;            /* for the node traversal: the rows the aggregation finished */
    int chunk;
    /* rmax=on (codegen.c, cg_rmax_links): the softmax (rmax) whose exp the aggregating traversal holds
     * and whose division the node traversal after it holds (rmax_linked, on both); for that node
     * traversal, the aggregation's nchunk where it splits destinations into tiles it merges, else 0 */
    psm_online rmax;
    int rmax_linked, rmax_chunk;
} et_fusion;

/* Whether traversal `agg` (under its effective config cfg) can run the statements of `node`, the
 * instance after it, for the destinations it sums whole: NULL with agg_fu and node_fu filled, or why
 * not. */
const char *et_fusion_plan(const ir_program *ir, const lw_trav *agg, const lw_trav *node, const int *materialized,
                           const cg_config *cfg, et_fusion *agg_fu, et_fusion *node_fu);

/* et_emit with a fusion (NULL: none). */
int et_emit_fused(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg,
                  const et_fusion *fu, const char *name, int backward, kp_plan *plan, rg_err *err);

/* Whether a node-centric kernel of this traversal walks each node's edges once, so that nodes of
 * more than cfg->nchunk incoming edges are split across row groups (the degree-aware hybrid). */
int et_node_split(const ir_program *ir, const lw_trav *tr, const cg_config *cfg);

/* scalars=lane: how many statements of the traversal's kernels each lane evaluates for an edge of its
 * own (per-edge scalars ahead of the row group's loop over its edges); 0 under scalars=group, in the
 * forms that walk no edges, and where no statement qualifies. Under crsum=split it counts the
 * statements of the traversal taken as one kernel, which is what decides whether the key applies. */
int et_lane_scalars(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg);
/* pfetch=on: how many per-edge scalar operands the kernels of traversal tr load with their edges' ids
 * (0: the key changes nothing there). */
int et_prefetches(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg);
/* rowpf=l2|l1: how many gathered rows (variable and access) the kernels of traversal tr prefetch with
 * their edges' ids (0: the key changes nothing there). */
int et_row_prefetches(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg);
/* wacc=reg: how many weight-gradient sums the kernels of traversal tr keep in registers (0: the key
 * changes nothing there). */
int et_wacc_registers(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg);

/* Whether the traversal thread mapping (vec with lanes) applies to a problem of these feature
 * sizes: 0 with the reason when a vector width could vectorize no feature row, or when the row
 * group's step is wider than every row (the point duplicates one with fewer lanes). */
int et_mapping_applies(const cg_config *cfg, const ir_dims *dims, rg_err *err);

#endif
