/* Sweep plans (`explore sweep --plan FILE [--shard I/N]`): a matrix of models x datasets x
 * tasks x dims x heads, split round-robin across shards (processes, GPUs, Slurm array tasks). */
#ifndef XP_PLAN_H
#define XP_PLAN_H

#include <time.h>
#include "explorer/sweep.h"

#define XP_MAX_VALUES 64

typedef struct xp_plan {
    char path[256];
    int nmodels, ndatasets, ntasks, ndims, nheads;
    char models[XP_MAX_VALUES][256];
    char datasets[XP_MAX_VALUES][256];
    char tasks[XP_MAX_VALUES][16];
    int dims[XP_MAX_VALUES][2];
    int heads[XP_MAX_VALUES];
} xp_plan;

/* Reads `key: values` lines (# comments): models, datasets (required), tasks (infer, train;
 * default infer), dims (IN,OUT or N; default 64,64), heads (default 1), with the limits of the
 * command line (common/opts.h), each heads dividing each output dim. Errors say file:line. */
int xp_load(const char *path, xp_plan *plan, rg_err *err);
int xp_count(const xp_plan *plan);
/* Job k of the matrix (models outermost, heads innermost) as a problem. */
void xp_job(const xp_plan *plan, int k, xb_problem *out);
/* Round-robin: shard `index` of `count` runs the jobs k with k % count == index. */
int xp_shard_owns(int job, int index, int count);
/* "I/N" with 0 <= I < N. */
int xp_parse_shard(const char *text, int *index, int *count, rg_err *err);
/* From SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN when set) and SLURM_ARRAY_TASK_COUNT:
 * 1 when set, 0 when not, -1 when set but inconsistent (err says why). */
int xp_env_shard(int *index, int *count, rg_err *err);

/* The run group of a plan sweep without --group: "<plan file name>-<hash of the matrix>-<night>",
 * the night being the date twelve hours before now (local time), so that every shard of one
 * nightly job shares it and the next night's differs. */
void xp_default_group(const xp_plan *plan, time_t now, char *out, size_t cap);

#endif
