/* The options every command that takes a problem shares (--model, --dataset, --task, --dims,
 * --heads, --data-dir, --config, --db): one definition each, one set of limits, one check. */
#ifndef CP_PROBLEM_H
#define CP_PROBLEM_H

#include "codegen/config.h"
#include "common/opts.h"
#include "measure/backend.h"

typedef struct cp_problem {
    const char *model, *dataset, *task, *data_dir, *config, *db;
    int dims[2];          /* in, out */
    int heads;
    size_t mem_limit;     /* 0: none */
    int repeats, warmup;
    int flush_l2;         /* --flush-l2: each timed run starts with a cold L2 */
    int allow_mismatch;   /* --allow-mismatch (with --data-dir) */
} cp_problem;

/* Which of the shared options a command takes (cp_add_options). */
enum {
    CP_MODEL = 1 << 0,
    CP_DATASET = 1 << 1,
    CP_TASK = 1 << 2,
    CP_DIMS = 1 << 3,
    CP_HEADS = 1 << 4,
    CP_DATA_DIR = 1 << 5,
    CP_CONFIG = 1 << 6,
    CP_DB = 1 << 7,
    CP_MEM_LIMIT = 1 << 8,
    CP_REPEATS = 1 << 9,   /* --repeats, --warmup and --flush-l2 */
    CP_PROBLEM = CP_MODEL | CP_DATASET | CP_TASK | CP_DIMS | CP_HEADS | CP_DATA_DIR,
};

/* Defaults: task infer, dims 64,64, one head, database RS_DEFAULT_DB, 10 repeats after 3 warm-up
 * runs, no memory limit, nothing else. */
void cp_init(cp_problem *p);
void cp_add_options(ro_cmd *c, cp_problem *p, unsigned which);
/* The checks that span options (the heads divide the output dim); the limits of each value were
 * applied while parsing. */
int cp_check(const cp_problem *p, rg_err *err);
/* The default config with --config applied, validated. */
int cp_config(const cp_problem *p, cg_config *cfg, rg_err *err);
/* The problem as the backends take it (model and dataset names must fit). */
int cp_to_xb(const cp_problem *p, xb_problem *out, rg_err *err);
/* The problem as the pipeline takes it (model, task and sizes; the strings stay p's). */
pl_problem cp_to_pl(const cp_problem *p);
/* "explore" and the words of argv, to record with a run (caller frees). */
char *cp_command_line(int argc, char **argv);

#endif
