/* A variant's launch plan: the generated kernels in order, with each parameter bound to a
 * program variable, a graph array or a constant, and the grid derived from graph sizes. */
#ifndef KPLAN_H
#define KPLAN_H

#include <stdint.h>
#include <stdio.h>
#include "common/util.h"

/* Graph arrays a kernel may read (uploaded once per dataset). The KG_IN_* arrays after
 * KG_UNIQUE_ETYPE are the edge arrays in the order of the dst-sorted CSR (in_src[q] =
 * src[in_eid[q]], ...): a kernel walking that order reads them sequentially instead of
 * gathering one 32-byte sector per 4-byte id. They are built and uploaded only when a plan
 * uses them (kx_alloc). */
typedef enum kp_graph_array {
    KG_SRC, KG_DST, KG_ETYPE, KG_ETYPE_PTR, KG_IN_PTR, KG_IN_EID, KG_OUT_PTR, KG_OUT_EID,
    KG_UNIQUE_SRC, KG_UNIQUE_ETYPE_PTR, KG_EDGE_COMPACT, KG_NTYPE_PTR,
    KG_ETYPE_SRC_NTYPE, KG_ETYPE_DST_NTYPE, KG_NODE_NTYPE, KG_UNIQUE_ETYPE,
    KG_IN_SRC, KG_IN_ETYPE, KG_IN_DST, KG_IN_COMPACT,
    KG__COUNT
} kp_graph_array;

/* Row sets a GEMM iterates, grouped into type segments (for tile tables). */
typedef enum kp_rowset {
    KR_EDGES, KR_UNIQUE, KR_NODES_BY_NTYPE, KR_NODES_ALL,
    KR_IN_EDGES,        /* positions of the dst-sorted CSR, one segment per node */
    KR__COUNT
} kp_rowset;

typedef enum kp_param_kind {
    KP_VAR,         /* device buffer of an IR variable (id) */
    KP_VAR_IN,      /* copy of an edge variable's rows in the dst-sorted order (id; row q holds row
                     * in_eid[q]), for a graph constant a traversal walking that order reads at q;
                     * named <var>@in in plan.txt */
    KP_GRAPH,       /* a graph array (id = kp_graph_array) */
    KP_TILE_TYPE,   /* tile table of (rowset id, rows per tile ival): segment of each tile */
    KP_TILE_ROW0,   /* ... and first row of each tile */
    KP_INT,         /* a 32-bit constant (ival) or a graph size (id >= 0: kp_size) */
    KP_WORK         /* rmax=on: the workspace of the softmax whose unnormalised aggregate is variable id
                     * (float64, read and written by its aggregation and node kernels, never zero-filled):
                     * work_node values per node, then work_row per tile slot, ceil(edges / ival) + 1
                     * slots (ival: the aggregation's nchunk) */
} kp_param_kind;

typedef enum kp_size { KS_NONE = -1, KS_NODES, KS_EDGES, KS_UNIQUE, KS_NTYPES, KS_ETYPES, KS_NTILES } kp_size;

typedef struct kp_param {
    kp_param_kind kind;
    int id;             /* var id, graph array, rowset, or kp_size for KP_INT */
    int64_t ival;       /* constant, or rows per tile for tile tables */
    char name[32];      /* the parameter's name in the generated source */
    int written;        /* KP_VAR: the kernel stores into the variable (kp_kernels_conflict) */
    int work_node, work_row;   /* KP_WORK: its layout (above) */
} kp_param;

/* KP_WORK: the workspace's float64 values on a graph of these sizes. */
int64_t kp_work_values(const kp_param *p, int64_t nodes, int64_t edges);

typedef enum kp_category { KC_GEMM, KC_TRAVERSAL, KC_OTHER } kp_category;

/* grid.x is either a fixed count, a number of rows divided by rows-per-block, or the
 * number of tiles of a tile table. */
typedef enum kp_grid_kind { KGRID_FIXED, KGRID_ROWS, KGRID_TILES } kp_grid_kind;

#define KP_MAX_PARAMS 32
#define KP_MAX_COVERS 32

typedef struct kp_kernel {
    char name[64];
    char *source;       /* complete CUDA C translation unit, compilable on its own */
    kp_category category;
    int backward;
    /* the lowered instance it comes from (lw_program.inst index; -1: the SGD step), the
     * traversal phase it runs (-1: every statement of the instance), and, where crsum=split
     * makes two kernels of a traversal, which part of its statements (et_split_part: 1 the
     * compact rows' sums, 2 the rest; 0: all) */
    int inst, phase, part;
    int nparams;
    kp_param params[KP_MAX_PARAMS];
    kp_grid_kind grid_kind;
    int grid_rows_size; /* KGRID_ROWS: kp_size of the rows */
    int rows_per_block; /* KGRID_ROWS: rows per block; KGRID_TILES: tiles per block (0 = 1) */
    int tile_rowset, tile_rows;  /* KGRID_TILES */
    int grid_x_fixed, grid_y, grid_z;
    int block_x, block_y;
    int shmem_bytes;
    /* analytic counts for the cost model and the roofline floor, per launch */
    double flops, bytes, atomics;
    /* zero_init variables this kernel writes whole (every element of every row, once, with `=`)
     * before anything reads them: their zero-fills are not needed (kp_kernel_covers) */
    int ncovers;
    int covers[KP_MAX_COVERS];
} kp_kernel;

/* How a run's kernels reach the GPU (the config key `launch`, runtime/exec.c): one launch each on a
 * stream; one CUDA graph of them in plan order; or one graph whose edges are only the plan's data
 * dependencies (kp_kernels_conflict), so that kernels that share no written variable may overlap. */
typedef enum kp_launch { KP_LAUNCH_STREAM, KP_LAUNCH_GRAPH, KP_LAUNCH_DAG } kp_launch;

typedef struct kp_plan {
    int nkernels, cap;
    kp_kernel *kernels;
    kp_launch launch;
    /* memsets before the run: variables that must start at zero (accumulation targets) */
    int nzero;
    int *zero_vars;
} kp_plan;

kp_kernel *kp_add_kernel(kp_plan *p);
/* Appends a parameter and returns it (set `written` on a variable the kernel stores into). */
kp_param *kp_add_param(kp_kernel *k, kp_param_kind kind, int id, int64_t ival, const char *name);
/* Whether kernels a and b of a plan must run in plan order: they bind one variable and at least
 * one of them writes it (a read after a write, a write after a read, or two writes: even two
 * atomic sums into one variable stay ordered, so a DAG launch adds in the same order as a stream). */
int kp_kernels_conflict(const kp_kernel *a, const kp_kernel *b);
/* launch=dag: the kernels kernel i of the plan waits on, among those that run (present[j] != 0; NULL:
 * all): every earlier conflicting one not already ordered before i through another of them (the
 * transitive reduction). Writes their indices to deps, ascending; returns their number. */
int kp_dag_deps(const kp_plan *p, int i, const int *present, int *deps);
/* launch=graph and dag: the run's zero-fill is the graph's first node, a memset. Under dag kernel i waits
 * on it where it binds a zero-filled variable and none of deps[0..n) (its kp_dag_deps) does: those are
 * after the memset already, as every kernel that binds one is. */
int kp_dag_waits_on_zero(const kp_plan *p, int i, const int *deps, int n);
/* Records that k writes variable `var` whole (kp_kernel.covers); a second record is a no-op. */
void kp_kernel_covers(kp_kernel *k, int var);
/* Whether a kernel of the plan writes variable `var` whole. */
int kp_plan_covers(const kp_plan *p, int var);
void kp_plan_free(kp_plan *p);
const char *kp_graph_array_name(kp_graph_array a);
/* Whether `a` is one of the traversal-ordered arrays (KG_IN_SRC .. KG_IN_COMPACT). */
int kp_graph_array_in_order(kp_graph_array a);
const char *kp_category_name(kp_category c);
/* Readable launch plan: kernel, category, grid, block, parameters. */
void kp_print(const kp_plan *p, const char *const *var_names, FILE *f);

#endif
