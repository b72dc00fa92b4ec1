/* Sweep plans (`explore sweep --plan FILE [--shard I/N]`): a matrix of models x datasets x
 * tasks x dims x heads, split round-robin across shards (processes, GPUs, Slurm array tasks). */
#ifndef XP_PLAN_H
#define XP_PLAN_H

#include <stdio.h>
#include <time.h>
#include "explorer/sweep.h"

#define XP_MAX_VALUES 64

typedef struct xp_plan {
    char path[256];
    int budget;            /* 'budget: N': variants measured per job (0: every one) */
    /* jobs left out of the matrix (xp_print_skipped says which): heads h does not divide
     * the output dim of dims d, or model m has no heads (heads > 1 would repeat heads 1) */
    unsigned char skip_dims_heads[XP_MAX_VALUES][XP_MAX_VALUES];    /* [d][h] */
    unsigned char skip_model_heads[XP_MAX_VALUES][XP_MAX_VALUES];   /* [m][h] */
    /* the matrix (the default run group hashes it, from nmodels on) */
    int nmodels, ndatasets, ntasks, ndims, nheads;
    char models[XP_MAX_VALUES][256];
    char datasets[XP_MAX_VALUES][256];
    char tasks[XP_MAX_VALUES][16];
    int dims[XP_MAX_VALUES][2];
    int heads[XP_MAX_VALUES];
} xp_plan;

/* Reads `key: values` lines (# comments): models, datasets (required), tasks (infer, train;
 * default infer), dims (IN,OUT or N; default 64,64), heads (default 1), budget (one number:
 * variants per job, for `--budget`), with the limits of the command line (common/opts.h).
 * A heads value that does not divide a dims' output, or a heads value above 1 for a model
 * without heads (RGCN: the same problem as heads 1), leaves those jobs out; a plan with no
 * job left is an error. Errors say file:line. */
int xp_load(const char *path, xp_plan *plan, rg_err *err);
/* The jobs of the matrix, skipped ones left out. */
int xp_count(const xp_plan *plan);
/* Job k (models outermost, heads innermost, skipped ones left out) as a problem. */
void xp_job(const xp_plan *plan, int k, xb_problem *out);
/* One line per skipped (dims, heads) or (model, heads) pair, with how many jobs it left out. */
void xp_print_skipped(const xp_plan *plan, FILE *out);
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
