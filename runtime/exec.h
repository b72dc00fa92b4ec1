/* Runs a variant's launch plan on the GPU: graph structures uploaded once, kernels compiled
 * in parallel and loaded, every tensor allocated once, arguments bound, launched and timed. */
#ifndef KX_EXEC_H
#define KX_EXEC_H

#include "codegen/codegen.h"
#include "datasets/hgraph.h"
#include "runtime/memplan.h"
#include "runtime/rt.h"

/* ---- graph structures on the device (once per dataset) ---- */
typedef struct kx_tiles {
    int rowset, rows_per_tile, ntiles;
    int *type_d, *row0_d;
} kx_tiles;

typedef struct kx_graph {
    const hg_graph *g;
    void *arr[KG__COUNT];
    size_t base_bytes;     /* device bytes of the structures uploaded up front (the traversal-ordered
                            * arrays and tile tables added later are counted per plan) */
    int ntiles, cap_tiles;
    kx_tiles *tiles;
} kx_graph;

int kx_graph_upload(const hg_graph *g, kx_graph *out, rg_err *err);
void kx_graph_free(kx_graph *kg);
int64_t kx_size(const hg_graph *g, int kp_size_id);
/* Device bytes of the graph structures `plan` binds (after kx_alloc added them): those uploaded
 * up front and the lazily added ones it uses, not those earlier plans added, so that a variant's
 * peak memory and its memory limit do not depend on which variants ran before it. */
size_t kx_plan_graph_bytes(const kx_graph *kg, const kp_plan *plan);
/* Host copy of a traversal-ordered array (KG_IN_SRC .. KG_IN_COMPACT): X[in_eid[q]] for q in
 * [0, num_edges). Caller frees. */
int32_t *kx_in_order_array(const hg_graph *g, kp_graph_array a);
/* Host copy of an edge variable's rows (`width` values each, one row per edge) in the order of
 * the dst-sorted CSR: row q is row in_eid[q] (the KP_VAR_IN buffers). Caller frees. */
double *kx_in_order_values(const hg_graph *g, const double *rows, int64_t width);
/* Host-side tile table of a row set (for tests and the CPU-side checks). Caller frees. */
int kx_tile_table(const hg_graph *g, int rowset, int rows_per_tile, int **type, int **row0);

/* ---- compilation (no device needed) and loading ---- */
typedef struct kx_compiled {
    int n;
    krt_cubin *cubins;
    krt_module **modules;  /* after kx_load */
    krt_kernel *kernels;
    double compile_wall_s;
    int cache_hits;
    /* launch=graph|dag: the run's kernels as one graph, captured on first use for these buffers and
     * this graph (their pointers are in the nodes' arguments), and how many kernels it launches */
    krt_graph *graph;
    const struct kx_buffers *graph_bufs;
    const kx_graph *graph_kg;
    int graph_launched;
} kx_compiled;

/* Compiles every kernel of the plan for sm_<sm> with `threads` threads. On failure err
 * names the kernel and carries its log. */
int kx_compile(const kp_plan *plan, int sm, int threads, kx_compiled *out, rg_err *err);
int kx_load(kx_compiled *c, rg_err *err);
/* The loaded kernels' handles (the launches look them up on first use too): 0, -1 with err, or
 * KX_TOO_MANY_THREADS when a kernel's registers leave room for fewer threads than its blocks have
 * (tblock 1024 without lb=on: 64 registers a thread at most), named in err, rather than the
 * launch's "too many resources requested": the point is invalid, not a fault. */
enum { KX_TOO_MANY_THREADS = -2 };
int kx_resolve(const kp_plan *plan, kx_compiled *c, rg_err *err);
void kx_compiled_free(kx_compiled *c);

/* ---- buffers ---- */
typedef struct kx_buffers {
    mp_plan *mp;
    int *id;               /* [nvars] memplan id or -1 */
    int *in_id;            /* [nvars] memplan id of the variable's dst-ordered copy (<var>@in) or -1 */
    /* the plan's zero-filled variables share one buffer, so that a run starts with one memset, not
     * one per variable (each a launch and a gap on a small graph): its memplan id (-1: none) and
     * each variable's offset in it (SIZE_MAX: not in it) */
    int zero_id;
    size_t *zero_off;
    const hg_graph *g;     /* the graph the buffers are sized for (the copies follow its in_eid) */
    int *work_id;          /* [nvars] memplan id of the rmax workspace keyed by that variable (KP_WORK) or -1 */
    int nvars;
    size_t graph_bytes;
} kx_buffers;

/* Allocates every buffer cg_resident names: the materialized variables and the dst-ordered
 * copies (<var>@in) the plan's kernels read, each counted in the peak. Returns MP_OK, MP_OOM
 * (err says which tensor and the limit; nothing crashed) or MP_FAIL. mem_limit counts graph
 * structures too (0 = none). */
mp_status kx_alloc(const ir_program *ir, const cg_variant *v, const kx_graph *kg, size_t mem_limit,
                   kx_buffers *out, rg_err *err);
void kx_buffers_free(kx_buffers *b);
size_t kx_peak_bytes(const kx_buffers *b);   /* variant tensors + graph structures */
void *kx_var_ptr(const kx_buffers *b, int var);

/* Host copies of a problem's inputs in the device's element type (and of graph constants in
 * the dst-sorted order of the problem's graph), made once into page-locked memory and keyed by
 * the float64 array they came from (which must outlive the staging) and that order, plus one page-locked buffer reused by downloads: a sweep uploads the same
 * features and downloads outputs of the same size for every variant. */
typedef struct kx_staging kx_staging;
kx_staging *kx_staging_new(void);
void kx_staging_free(kx_staging *s);

/* Uploads the values of every input, graph-derived input, label and parameter (float64 on
 * the host, as the reference has them; NULL entries are skipped) into its buffer and its
 * dst-ordered copy, poisons every other buffer, then zero-fills the accumulation targets.
 * float32 and bfloat16 inputs, and the dst-ordered copies, come from (and are added to) the
 * staging's copies. */
int kx_prepare(const ir_program *ir, const cg_variant *v, const kx_buffers *b, const double *const *host_values,
               kx_staging *stage, rg_err *err);
/* Zero-fills the accumulation targets only (between timed repeats). */
int kx_reset(const cg_variant *v, const kx_buffers *b, rg_err *err);
/* Launches every kernel once, in order (as the plan's launch mode says: one by one, or one graph,
 * which zero-fills the accumulation targets again as its first node), then waits. */
int kx_launch_all(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg, rg_err *err);
/* Launches every kernel once, one by one on the default stream whatever the plan's launch mode
 * (the hardware counters of --metrics are collected per kernel launch), then waits. */
int kx_launch_each(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg, rg_err *err);
/* Launches kernel i of the plan alone (nothing when its grid is empty on this graph), without
 * waiting: a caller that puts other work between kernels (collectives) launches them one by one. */
int kx_launch_one(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg, int i,
                  rg_err *err);
/* Bytes of a variable's device buffer on this graph. */
size_t kx_var_bytes(const ir_program *ir, const kx_graph *kg, int var);
/* Downloads a variable as float64 (caller frees; bfloat16 widened exactly). */
double *kx_download(const ir_program *ir, const kx_buffers *b, const kx_graph *kg, int var, rg_err *err);
/* Downloads a variable's elements (float64 or float32 as stored per vt_bytes; bfloat16 widened
 * exactly to float32, so validation and dumps see floats) into the staging's buffer, valid
 * until its next download; *count and *elem_bytes describe what it holds. */
const void *kx_download_staged(kx_staging *s, const ir_program *ir, const kx_buffers *b, const kx_graph *kg, int var,
                               int64_t *count, int *elem_bytes, rg_err *err);

/* Host conversions of bfloat16 (store=bf16): from float64 with one rounding to nearest even,
 * as the device's __double2bfloat16; to float, exactly. */
uint16_t kx_bf16_from_double(double x);
float kx_bf16_to_float(uint16_t h);

/* ---- timing ---- */
typedef struct kx_kernel_time {
    char name[64];
    kp_category category;
    int backward;
    double median_ns, min_ns, max_ns;
} kx_kernel_time;

typedef struct kx_timing {
    int repeats;
    double median_ms, min_ms, max_ms, stddev_ms;   /* per run: sum of its kernels' times */
    double span_ms;      /* median per run of first kernel or memset start to last kernel end */
    int flushed_l2;      /* each timed run started after an L2 flush */
    double gemm_ms, traversal_ms, other_ms;        /* medians per category */
    double fwd_ms, bwd_ms;
    int nkernels;
    kx_kernel_time *kernels;
    const char *method;                            /* "cupti" or "cudaEvent" */
} kx_timing;

/* Plan indices of the kernels that launch on this graph (grid > 0), in launch order; returns
 * their count. order needs room for every kernel of the plan. */
int kx_launch_order(const cg_variant *v, const kx_graph *kg, int *order);

/* Warm-up runs, then `repeats` timed runs under the CUPTI activity API, each run zero-filling the
 * accumulation targets first (under launch graph or dag, as the graph's first node). With flush_bytes > 0,
 * flush_buf's bytes are written before each timed run, outside its records, so that the run
 * starts with a cold L2 (give a buffer of twice the L2's size). */
int kx_time(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg, int warmup,
            int repeats, void *flush_buf, size_t flush_bytes, kx_timing *out, rg_err *err);
void kx_timing_free(kx_timing *t);

#endif
