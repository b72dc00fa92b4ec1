/* The layer's true floor: bytes any implementation must move and flops it must do, from the
 * model's IR and the graph alone (not a variant's plan), and the times they take at ceilings. */
#ifndef FL_FLOOR_H
#define FL_FLOOR_H

#include "codegen/ir.h"
#include "codegen/pipeline.h"
#include "datasets/hgraph.h"

typedef struct fl_floor {
    /* bytes, each moved once at its stored width (docs/floor.md) */
    double input_bytes;   /* node features and labels read */
    double weight_bytes;  /* weights read (training: also written once, the update) */
    double index_bytes;   /* the edge structure: the cheapest encoding of what the layer reads */
    double output_bytes;  /* the output (and the loss) written */
    double bytes;         /* their sum */
    double flops;         /* statements over their fewest rows, plus the SGD step */
} fl_floor;

/* Fills f for program ir on g: bytes by the roles of its variables, flops with each statement
 * over its fewest rows (unique (src, etype) pairs where the operands allow it). */
void fl_floor_fill(const ir_program *ir, const hg_graph *g, fl_floor *f);
/* The floor of a layer: fl_floor_fill on its unoptimized program (pl_reference_program), its
 * flops lowered to the cheapest of the arithmetic rewrites (compaction, reordering), so that it
 * belongs to the layer and never to one variant's plan. */
int fl_floor_layer(const pl_problem *p, const hg_graph *g, fl_floor *f, rg_err *err);
/* The same at the storage widths of store=bf16 (store_bf16 1: features read as bfloat16) or of
 * float32 (0, fl_floor_layer): the floor of the variants that store their features that way. */
int fl_floor_layer_store(const pl_problem *p, const hg_graph *g, int store_bf16, fl_floor *f, rg_err *err);
/* Index bytes of a layer whose edge statements need the per-edge fields flagged (src, dst,
 * etype): all but one at 4 bytes per edge, the cheapest one replaced by a row-pointer array
 * (edges sorted by it). 0 when no field is needed. */
double fl_index_bytes(const hg_graph *g, int need_src, int need_dst, int need_etype);
/* Milliseconds at a bandwidth (bytes/s) and a flop rate (flop/s): max(bytes/bw, flops/peak);
 * NaN when either ceiling is unknown (<= 0). */
double fl_time_ms(double bytes, double flops, double bytes_per_s, double flops_per_s);
/* The L2-resident floor: as fl_time_ms at the L2 bandwidth, NaN when the bytes do not fit in
 * an L2 of l2_bytes (a working set that does not fit has no L2-resident floor). */
double fl_l2_time_ms(const fl_floor *f, double l2_bytes, double l2_bytes_per_s, double flops_per_s);

#endif
