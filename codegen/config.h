/* One point of the design space: the layout and schedule choices of a generated variant,
 * parsed from KEY=VAL lists, printed canonically, hashed, and checked for validity. */
#ifndef CFG_CONFIG_H
#define CFG_CONFIG_H

#include <stdint.h>
#include "common/util.h"

typedef enum cfg_compact {
    CFG_COMPACT_OFF,      /* edgewise values materialized per edge */
    CFG_COMPACT_BSEARCH,  /* per unique (src, etype); edges find their row by binary search */
    CFG_COMPACT_DIRECT    /* per unique (src, etype); edges read a precomputed per-edge index */
} cfg_compact;

typedef struct cg_config {
    cfg_compact compact;
    int reorder;          /* linear-operator reordering */
    int tile;             /* GEMM tile width: 16, 32, 64 */
    int coarsen;          /* GEMM output rows per thread: 1, 2, 4 (times cfg_col_coarsen columns) */
    int launch_bounds;    /* emit __launch_bounds__ */
    int w_regs;           /* GEMM: W operand in registers instead of shared memory */
    int node_centric;     /* traversal: node-centric (CSR of incoming edges) vs edge-centric */
    int partial_agg;      /* traversal: thread/warp partial aggregation before atomics */
} cg_config;

void cfg_default(cg_config *c);
/* Applies "key=val,key=val" on top of *c. Unknown keys or values give an error naming them. */
int cfg_parse(cg_config *c, const char *kv, rg_err *err);
/* Canonical text, stable across versions (keys in fixed order): caller frees. */
char *cfg_to_string(const cg_config *c);
char *cfg_to_json(const cg_config *c);
uint64_t cfg_hash(const cg_config *c);
/* Rejects invalid combinations before anything is compiled, saying why. */
int cfg_validate(const cg_config *c, rg_err *err);
int cfg_block_threads(const cg_config *c);   /* GEMM threads per block */
/* Output columns per GEMM thread (register tiling across columns): 4, or 2 for tile 16. */
int cfg_col_coarsen(const cg_config *c);
const char *cfg_compact_name(cfg_compact m);

#endif
