/* Recomputing per-edge forward values in the backward pass (config key recompute=on): the
 * forward traversal keeps them in registers instead of storing one row per edge for the backward. */
#ifndef PRC_PASS_RECOMPUTE_H
#define PRC_PASS_RECOMPUTE_H

#include <stdio.h>
#include "codegen/ir.h"

/*
 * A candidate is an edge temporary stored one row per edge (VANILLA) that exactly one forward
 * statement writes, with `=`, over edges, by an elementwise or dot operation (not a linear
 * operator: those are GEMMs, and their outputs stay stored), such that no later statement writes
 * any variable it reads. HGT's _t1 = dot(katt, q[dst]) and att_2 = exp(_t1 * mu / 8) are, RGAT's
 * attention scores too.
 *
 * For the candidates the backward program reads, and the candidates their definitions read in
 * turn, the pass clones each definition into the backward program (a new variable NAME_r, in the
 * original order), just before the first backward statement that reads one of them, and makes the
 * backward statements read the clones. The forward values are then read only by the forward pass:
 * lowering fuses the clones into the backward traversal that reads them, and materialization
 * (codegen.c) keeps both copies in registers where one traversal reads them. What a definition
 * reads besides candidates (node rows, compact rows, weights) the backward traversal gathers from
 * device memory, which materialization keeps there.
 *
 * Runs on the training program after autodiff. Returns the number of values recomputed (each
 * reported on `log` when not NULL); with none, *why (may be NULL) says why.
 */
int prc_recompute_edge_values(ir_program *p, FILE *log, char *why, size_t why_len);

/* Why recompute=on does not apply in inference (pipeline.c says it before parsing, model.c after). */
#define PRC_INFERENCE_WHY "inference stores no per-edge value for a backward pass"

#endif
