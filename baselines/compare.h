/* `explore compare-baselines`: per problem (device, model, dataset, task, dims, heads) the
 * best generated variant against each baseline (system, layer), speed-ups and OOMs. */
#ifndef BCMP_COMPARE_H
#define BCMP_COMPARE_H

#include <stdio.h>
#include "common/util.h"
#include "results/store.h"

typedef struct bcmp_filter {
    const char *model, *task, *dataset;   /* NULL: any (task: infer/train or their long forms) */
    const char *gpu;                      /* case-insensitive substring of the device key; NULL: any */
    int dims;                             /* in = out = dims; 0: any */
} bcmp_filter;

/* One baseline (system, layer) on one problem. */
typedef struct bcmp_cell {
    char *system, *layer;
    double best_ms;        /* lowest median of its ok measurements; NaN when none is ok */
    rs_status status;      /* RS_OK when one is ok; else RS_OOM if any attempt ran out of memory,
                              else the status of the newest attempt */
    double speedup;        /* best_ms / generated_ms (> 1: the generated code is faster); NaN if either is missing */
    int64_t peak_mem_bytes;   /* of the best (or the newest failed) measurement; -1 unknown */
} bcmp_cell;

typedef struct bcmp_row {
    char *device_key, *model, *task, *dataset;
    int dim_in, dim_out, heads;
    double generated_ms;   /* best ok generated variant; NaN when none */
    char generated_hash[17];
    int ncells;
    bcmp_cell *cells;      /* sorted by system, then layer */
    int best;              /* index of the fastest ok baseline, -1 when none is ok */
    double best_speedup;   /* cells[best].best_ms / generated_ms, NaN when either is missing */
} bcmp_row;

typedef struct bcmp_table {
    bcmp_row *rows;        /* sorted by device, model, task, dataset, dims, heads */
    size_t n;
} bcmp_table;

/* Problems that have at least one baseline measurement (generated-only ones are left out). */
int bcmp_build(rs_store *s, const bcmp_filter *f, bcmp_table *out, rg_err *err);
void bcmp_free(bcmp_table *t);

/* Markdown: one section per (device, model, task), a row per dataset, a column per baseline
 * ("12.3 ms (4.1x)", "OOM", "failed: runtime_fault", "-" when not measured), then the
 * best baseline and the speed-up over it. */
void bcmp_print_markdown(const bcmp_table *t, FILE *out);

#endif
