/* Compact materialization: finds the edgewise values that depend only on (src, etype),
 * transitively, and gives them the COMPACT layout (one row per unique (src, etype) pair). */
#ifndef PC_PASS_COMPACT_H
#define PC_PASS_COMPACT_H

#include <stdio.h>
#include "codegen/ir.h"

/*
 * A temporary edge variable becomes COMPACT when its one writer is a `=` DOM_EDGE
 * statement whose operands all depend on (src, etype) alone: node data at e.src, weights
 * at e.etype / e.src.ntype / unsliced, constants, and edge values already COMPACT. The
 * marking iterates to a fixpoint. A variable stays VANILLA if compacting it would make a
 * reader run per unique row instead of per edge (ir.h, ir_stmt_per_unique case b), which
 * would change what that reader adds up. Semantics never change; only row counts do.
 * Runs on the forward program (before autodiff). Returns the number of variables marked
 * (each named on `log` if not NULL), or -1.
 */
int pc_compact(ir_program *p, FILE *log, rg_err *err);

/* pc_compact, where dots = 0 leaves dot products per edge (config cdot=edge: a per-edge scalar of
 * compact rows, RGAT's source attention term hs . w_s, evaluated in the traversal that reads it
 * instead of a table of its own); *kept (may be NULL) gets how many such dot products stayed per edge. */
int pc_compact_opts(ir_program *p, int dots, int *kept, FILE *log, rg_err *err);

#endif
