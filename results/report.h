/* `explore report`: paper-style figures from the results store. SQL exports one CSV per figure,
 * the gnuplot scripts of plots/ draw it (PNG + SVG), and index.md shows every figure with a one-line reading. */
#ifndef RP_REPORT_H
#define RP_REPORT_H

#include "common/util.h"

#define RP_NFIGURES 9

typedef struct rp_options {
    const char *db_path;     /* NULL: RS_DEFAULT_DB */
    const char *out_dir;     /* created if missing; figures, index.md and data/ go there */
    const char *gpu;         /* NULL: the device with the most measurements; else part of its name */
    const char *plots_dir;   /* NULL: plots/ of the source tree the executable was built in, else ./plots */
    int quiet;               /* no progress line on stdout */
} rp_options;

typedef struct rp_summary {
    char device[256];        /* device key the figures describe ("" when the store has no measurement) */
    int drawn, skipped;      /* figures drawn / skipped for lack of data */
    int figure_drawn[RP_NFIGURES];
} rp_summary;

/* File stem of figure i (0-based), e.g. "03_ablation": DIR/<stem>.png, .svg, data/<stem>.csv. */
const char *rp_figure_stem(int i);
/* Figure i's title as index.md heads it. */
const char *rp_figure_title(int i);

/* Builds the whole report. Missing data only skips a figure (index.md says what it needs);
 * a store lacking a table or column the report reads, an unusable plot script or a failing
 * gnuplot is an error, with a message naming it. */
int rp_build(const rp_options *o, rp_summary *out, rg_err *err);

#endif
