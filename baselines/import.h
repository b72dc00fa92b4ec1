/* `explore import`: loads a baseline results CSV (baselines/pyg_bench.py's columns) into the
 * results store as measurements tagged by system and layer, under a run of its own. */
#ifndef BIM_IMPORT_H
#define BIM_IMPORT_H

#include <stdint.h>
#include "common/util.h"
#include "results/store.h"

/*
 * Columns (by header name, any order, extra columns ignored):
 *   required  system, layer, model, task, dataset, dims, heads, status, median_ms
 *   optional  dim_in, dim_out (override dims), min_ms, max_ms, stddev_ms, repeats,
 *             peak_mem_bytes, gpu, sm, torch_version, pyg_version, cuda_version, error
 * status: a results-store status name (ok, oom, launch_error, ...; "error" = launch_error).
 * task: infer/inference or train/training. Empty numeric fields mean "unknown"; an ok
 * row must have a median. RFC 4180 quoting (python's csv module) and CRLF are accepted.
 */

typedef struct bim_row {
    char *system, *layer, *model, *task, *dataset, *gpu, *evidence;
    int dim_in, dim_out, heads, sm, repeats;
    rs_status status;
    double median_ms, min_ms, max_ms, stddev_ms;
    int64_t peak_mem_bytes;
    char *versions;            /* "torch 2.11.0, pyg 2.8.0, cuda 13.0" (what is known) */
    char *cuda_version;
} bim_row;

typedef struct bim_table {
    bim_row *rows;
    size_t n;
} bim_table;

/* Parses and checks every row; nothing is written. Errors name FILE:LINE. */
int bim_read_csv(const char *path, bim_table *out, rg_err *err);
void bim_table_free(bim_table *t);

typedef struct bim_stats {
    int64_t run_id;
    int64_t rows, ok, oom, failed;
} bim_stats;

/* Reads the CSV, then records every row in `s` under a new run (finished at the end).
 * commit: the code version to record ("unknown" if NULL); command_line may be NULL. */
int bim_import_csv(rs_store *s, const char *path, const char *commit, const char *command_line, bim_stats *st,
                   rg_err *err);

#endif
