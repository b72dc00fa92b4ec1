/* From a lowered program and one config to a launch plan: decides which variables live in
 * device memory, emits every instance's kernels in program order, and lists zero-fills. */
#ifndef CG_CODEGEN_H
#define CG_CODEGEN_H

#include "codegen/config.h"
#include "codegen/emit_trav.h"
#include "codegen/kplan.h"
#include "codegen/lower.h"

typedef struct cg_variant {
    kp_plan plan;
    int *materialized;   /* [ir->nvars] 1: allocated in device memory */
    int nvars;
} cg_variant;

/* Emits the kernels of lp (lowered from ir) under cfg, each kernel's source complete with the
 * device helpers it needs. Fails with the reason when an instance cannot be expressed;
 * nothing is left allocated then. */
int cg_build(const ir_program *ir, const lw_program *lp, const cg_config *cfg, cg_variant *out, rg_err *err);

/* Which variables cg_build keeps in device memory (mat[v] = 1; mat has ir->nvars entries) and which
 * live in a traversal's per-row scratch. */
void cg_materialization(const ir_program *ir, const lw_program *lp, const cg_config *cfg, int *mat);

/* epi=on: the pairs of an aggregating traversal and the node traversal right after it whose node
 * statements the aggregation runs (codegen/emit_trav.h, et_fusion_plan), each aggregation under its
 * own effective config: fu[i] for instance i (zero where none; room for lp->ninst). Returns the
 * number of pairs; *why (may be NULL) gets why the first aggregation followed by a node traversal
 * did not pair, or NULL. */
int cg_fusions(const ir_program *ir, const lw_program *lp, const cg_config *cfg, const int *mat, et_fusion *fu,
               const char **why);
/* rmax=on: gives each single-pass softmax (psm_find_online) to the aggregation that holds its exp and to
 * the node traversal right after it, which must hold its division, and that node traversal the
 * aggregation's nchunk where the aggregation splits destinations into tiles (et_fusion.rmax,
 * rmax_linked, rmax_chunk; fu as cg_fusions fills it); -1 where a softmax is not so placed. */
int cg_rmax_links(const ir_program *ir, const lw_program *lp, const cg_config *cfg, et_fusion *fu, rg_err *err);
void cg_variant_free(cg_variant *v);
/* The buffers of variable `var` that the plan keeps in device memory: its rows (CG_RES_ROWS)
 * unless every kernel that reads it reads its copy in the dst-sorted order (KP_VAR_IN) instead,
 * and that copy (CG_RES_IN_ORDER, named <var>@in) when a kernel binds it; 0 when the variable
 * is not materialized. */
enum { CG_RES_ROWS = 1, CG_RES_IN_ORDER = 2 };
int cg_resident(const cg_variant *v, int var);
/* Writes each kernel's source to DIR/<name>.cu and the launch plan to DIR/plan.txt. */
int cg_write_sources(const cg_variant *v, const ir_program *ir, const char *dir, rg_err *err);

#endif
