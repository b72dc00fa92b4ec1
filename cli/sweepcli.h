/* The sweep's command lines: `explore --model M ...` (one problem) and `explore sweep --plan FILE
 * [--shard I/N]` (a plan's matrix, optionally one shard of it), with their shared sweep options. */
#ifndef SC_SWEEPCLI_H
#define SC_SWEEPCLI_H

#include "explorer/sweep.h"

typedef struct sc_cli {
    xs_options opt;
    xb_problem problem;
    int have_dataset, have_db;    /* --dataset, --db given */
    const char *plan, *shard;     /* explore sweep only */
    const char *gpus;             /* explore sweep only: --gpus all|N, one worker per GPU of this host */
    const char *cost_model;       /* --cost-model FILE */
    int no_cost_model;            /* --no-cost-model */
    int no_progress;              /* --no-progress */
    int ranks;                    /* --ranks N: each variant a layer over N GPUs; 0: one GPU */
    int seed;                     /* --seed K: the strategy's seed (opt.seed) */
} sc_cli;

/* Parses the sweep options (plan_mode: `explore sweep`, which takes --plan and --shard instead
 * of a problem). 0; 1 after printing the help; 2 after saying what is wrong on stderr. */
int sc_parse_cli(const char *cmd, int argc, char **argv, int plan_mode, sc_cli *cli);
/* Orders the sweep with a fitted cost model (explore fit): the one given with --cost-model, else
 * results/costmodel.txt when it exists, unless --no-cost-model. *model must be freed with
 * cm_model_free when 1 is returned. 0: none attached; 1: attached; -1: a file given or found
 * could not be read (err says why). */
struct cm_model;
int sc_attach_cost_model(sc_cli *c, struct cm_model *model, rg_err *err);
/* The options shared by `explore` and `explore sweep`, for help texts. */
void sc_print_options(FILE *f);
/* `explore [--model M ...]`: exit 0, 1 on failure, 2 on bad usage, 130 when interrupted. */
int sc_sweep_main(int argc, char **argv, xs_gpu_backend_fn gpu_backend);
/* `explore sweep --plan FILE [--shard I/N] [sweep options]`: 0, 1 if a job failed, 2 bad usage,
 * 130 interrupted. */
int sc_plan_main(int argc, char **argv, xs_gpu_backend_fn gpu_backend);

#endif
