/* Single-pass softmax aggregation (config key softmax=single): defers edge_softmax's division by
 * the destination's sum to one node-wise division after the aggregation, so one edge pass suffices. */
#ifndef PSM_PASS_SOFTMAX_H
#define PSM_PASS_SOFTMAX_H

#include <stdio.h>
#include "codegen/ir.h"

/*
 * The pattern (models/lib.rgnn's edge_softmax followed by an attention-weighted aggregation):
 *   x:   e[A] = exp(...)                      A written only here
 *   s:   e.dst[S] += e[A]                     S zero_init, written only here
 *   d:   e[N] = e[A] / e.dst[S]               N written only here, read only by g
 *   g:   e.dst[H] += e[N] * e[M]              H zero_init, written only here, read only after g;
 *                                             H has the full broadcast shape of N * M
 * in that order, all over edges. Since S is the same for every edge of one destination,
 *   sum_e (A_e / S_dst) * M_e == (sum_e A_e * M_e) / S_dst,
 * so d is removed and g becomes e.dst[H_un] += e[A] * e[M] (H_un a new zero_init node
 * variable of H's shape), followed by the node-wise n[H] = div_nz(n[H_un], n[S]) (per head
 * when S has heads: S broadcasts over H's dim). div_nz keeps H = 0 on nodes without
 * incoming edges, as before; exp makes S > 0 on every other node, which is why x must be
 * an exp (with arbitrary weights S could be 0 where the original divides by 0).
 * No edge statement then reads a destination aggregate, so lowering puts exp, the sum and
 * the aggregation in one phase (emit_trav.h, et_phases). Runs on the forward program
 * (before the loss and autodiff). Returns the number of rewrites (each reported on `log`
 * when not NULL); with none, *why (may be NULL) says why the first candidate division did
 * not match, or that there is no softmax division at all.
 */
int psm_single_pass(ir_program *p, FILE *log, char *why, size_t why_len);

/*
 * What psm_single_pass leaves, found again in a program after the passes (config key rmax: the
 * traversal emitter keeps a running maximum of x's argument per destination and rescales the two
 * sums when it grows, as FlashAttention does for attention rows):
 *   x:    e[A] = exp(e[X])               A read only by s and g
 *   s:    e.dst[S] += e[A]
 *   g:    e.dst[H_un] += e[A] * e[M]
 *   norm: n[H] = div_nz(n[H_un], n[S])   the only reader of S and of H_un
 * Since exp(X - m) / sum exp(X - m) is the same softmax for any m per destination, subtracting the
 * destination's running maximum from X in x, and multiplying S and H_un by exp(m_old - m_new) when
 * it grows, leaves norm's quotient unchanged while no exp overflows. Statement and variable ids.
 */
typedef struct psm_online {
    int x, s, g, norm;
    int a, arg, sum, un;   /* A, X, S, H_un */
} psm_online;

/* The patterns of p (at most max, in statement order); returns how many. */
int psm_find_online(const ir_program *p, psm_online *out, int max);

#endif
