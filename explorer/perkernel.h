/* The exact optimum of per-kernel schedules from uniform-schedule measurements: per structure, each
 * instance's best schedule, the combined config and its predicted time; and the per-kernel space's size. */
#ifndef PK_PERKERNEL_H
#define PK_PERKERNEL_H

#include "codegen/config.h"
#include "codegen/pipeline.h"
#include "datasets/hgraph.h"

/* Within one structure (the values of the keys that are not per-kernel-capable) every variant
 * launches the same kernels, each instance's kernels depend only on its own schedule keys (those
 * whose CFG_SCHEDULE categories include its kernels' categories), and the layer's time is the sum
 * of its kernels' times. So the best per-kernel config is exact from a sweep of uniform schedules:
 * each instance takes the schedule with the smallest stored time of its kernels. An instance's time
 * at a schedule is the median of its stored times over the variants that share that schedule (they
 * differ only in other instances' keys): a median, not the minimum, so that picking among many
 * measurements of one kernel does not reward noise. Where the store has the dataset's counts, each
 * variant's kernels are generated again and schedules that generate the same kernel (a key the
 * kernel does not read) are one choice, their times pooled; the combined config takes, for each
 * instance, the fewest overrides that give it its best kernel. The kernels are this build's: on a store
 * measured at another commit, the pooling assumes that a key which leaves a kernel unchanged now left
 * it unchanged then. Interactions between kernels (a warm L2 left by
 * the previous one) are outside the premise; measuring the combined config checks it. */

typedef struct pk_query {
    const char *db, *model, *task, *dataset;
    int dim_in, dim_out, heads;
    const char *device;        /* NULL: the device (and commit) that measured the most variants */
} pk_query;

/* One lowered instance (its kernels: the instance itself, or INST_p0, INST_p1, ...). */
typedef struct pk_inst {
    char name[64];
    unsigned kinds;            /* CFG_ON_GEMM | CFG_ON_TRAV of its kernels; 0: no schedule key (fixed) */
    int nkernels;
    int nchoices;              /* distinct kernels measured (schedules that generate the same kernel
                                  are one; distinct schedules of its keys where not regenerated) */
    double best_ms;            /* median time at its best schedule */
    double uniform_ms;         /* median time at the best uniform variant's schedule */
    cg_config best;            /* a config that generates its best kernel (its keys only matter), as close to
                                  the best uniform variant as regenerating allows */
} pk_inst;

typedef struct pk_structure {
    char *name;                /* the structure keys as KEY=VAL,... */
    int nvariants;             /* uniform variants measured */
    int skipped;               /* 1: not analysed (note says why) */
    char note[256];
    double points;             /* per-kernel points measured: product over instances of nchoices */
    cg_config uniform;         /* the best uniform variant (fastest kernel sum) */
    double uniform_ms;         /* its stored kernel sum */
    double uniform_span_ms;    /* its stored span, NaN when none */
    cg_config combined;        /* uniform + overrides where an instance's best differs */
    double fixed_ms;           /* kernels of no schedule key (loss, SGD, per-type weights): medians */
    double predicted_ms;       /* sum of the instances' best medians + fixed_ms */
    double predicted_span_ms;  /* + the best uniform variant's non-kernel overhead (span - sum); NaN */
    double model_uniform_ms;   /* the same sum at the best uniform variant's schedules */
    int ninst;
    pk_inst *inst;
} pk_structure;

typedef struct pk_result {
    char device[160], commit[64];
    int nvariants;             /* uniform variants read */
    int nother;                /* measured variants with overrides (not uniform: left out) */
    int nregenerated;          /* uniform variants whose kernels were generated again and told apart by
                                  their source and launch shape (the store has the dataset's counts) */
    int nstructures;
    pk_structure *s;
    int best;                  /* index of the structure with the smallest predicted time; -1 */
    double points;             /* per-kernel points over all structures (sum of their products) */
} pk_result;

/* Reads the problem's ok measurements (the newest per variant, of the device and commit that
 * measured the most variants) and solves every structure. A problem the store lacks is an error. */
int pk_solve_store(const pk_query *q, pk_result *out, rg_err *err);
void pk_result_free(pk_result *r);
/* The result as text: a table per structure, then the best overall. */
void pk_print(const pk_result *r, FILE *f);

/* The per-kernel size of a design space for a problem: per structure (of the space's valid points
 * that apply to the problem), the product over the plan's instances of the distinct schedules of
 * the instance's keys among those points; *uniform receives the applicable points themselves. The
 * plans are built with g's sizes (nominal ones when NULL). */
typedef struct pk_space_count {
    int nstructures;
    int uniform;               /* applicable points (uniform schedules) */
    double points;             /* per-kernel points: sum over structures of their products */
} pk_space_count;
int pk_space_size(const char *space, const pl_problem *p, const hg_graph *g, pk_space_count *out, rg_err *err);

#endif
