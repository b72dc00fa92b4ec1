/* A gradient summed by several backward statements, started by the one that writes every row (config key
 * dinit=gemm): that statement runs first and assigns, so the gradient needs no zero-fill and is not read back. */
#ifndef PDI_PASS_DINIT_H
#define PDI_PASS_DINIT_H

#include <stdio.h>
#include "codegen/ir.h"

/*
 * A candidate is a zero-initialised node variable v of the backward program (RGCN's and HGT's d_feature)
 * written by a linear operator over every node, `for n in g.nodes(): n["v"] += linear(...)`, whose
 * weight has no more heads than v (a head-summing product adds into v from several blocks), and by other
 * any statements before it that all add (`+=`) into v: the scatters of the compact rows' products into
 * their sources. The pass moves each of those earlier writers to just after the node statement, keeping
 * their order, where nothing between reads v, writes what they read or reads what they write; the node
 * statement is then v's first writer and assigns (`=`), and v loses zero_init. A sum's terms are added in
 * another order, as the atomics already did.
 *
 * Runs on the training program after autodiff (and pass_recompute). Returns the number of variables
 * changed (each reported on `log` when not NULL); with none, *why (may be NULL) says why.
 */
int pdi_assign_first(ir_program *p, FILE *log, char *why, size_t why_len);

#endif
