/* The results store: one SQLite database (WAL, versioned schema) holding runs, datasets,
 * kernel variants and their measurements; resume lookups, merge, export and regression compare. */
#ifndef RS_STORE_H
#define RS_STORE_H

#include <stdint.h>
#include <stdio.h>
#include "common/util.h"
#include "datasets/hgraph.h"

#define RS_DEFAULT_DB "results/results.db"
#define RS_SCHEMA_VERSION 2
/* PRAGMA application_id of our databases ("RGNN"), to refuse other programs' SQLite files. */
#define RS_APPLICATION_ID 0x52474E4E

typedef struct rs_store rs_store;

/* ---- Opening ---- */
/* Opens for writing (creating directories, file and schema when missing), migrates older
 * schemas, and marks the runs of this host whose process is gone as interrupted. A file that
 * is not an SQLite database, another program's database, a newer schema or a damaged store
 * (a missing table, a failed PRAGMA quick_check) gives a one-line error naming the damage, and
 * the file is never modified. */
rs_store *rs_open(const char *path, rg_err *err);
/* Same, but a missing file is an error (writers of an existing store: fit --store-predictions). */
rs_store *rs_open_existing(const char *path, rg_err *err);
/* For readers (export, compare, report, fit, merge sources): SQLITE_OPEN_READONLY, never
 * writes (an older schema is read as it is, not migrated), works in a read-only folder (the
 * store is then opened immutable unless its write-ahead log holds data), and names damage as
 * rs_open does. */
rs_store *rs_open_read(const char *path, rg_err *err);
/* Frees the store but not its SQLite connection, which the caller now owns (sqlite3_close):
 * for code that runs its own SQL on a store opened with rs_open_read. */
struct sqlite3 *rs_detach(rs_store *s);
void rs_close(rs_store *s);
const char *rs_path(const rs_store *s);

/* ---- Status values ---- */
typedef enum rs_status {
    RS_OK, RS_INVALID, RS_COMPILE_ERROR, RS_LAUNCH_ERROR, RS_RUNTIME_FAULT,
    RS_WRONG_ANSWER, RS_TIMEOUT, RS_OOM, RS_STATUS_COUNT
} rs_status;
const char *rs_status_name(rs_status st);          /* "ok", "compile_error", ... */
int rs_status_parse(const char *name, rs_status *out);   /* 0, or -1 if unknown */

typedef enum rs_run_status { RS_RUN_RUNNING, RS_RUN_FINISHED, RS_RUN_FAILED, RS_RUN_INTERRUPTED } rs_run_status;
const char *rs_run_status_name(rs_run_status st);

/* "NVIDIA H100 80GB HBM3 (sm_90)": the device half of every resume key (caller frees). */
char *rs_device_key(const char *gpu_name, int sm);

/* ---- Runs ---- */
typedef struct rs_run_info {
    const char *commit;        /* git commit of the code measured */
    const char *host;          /* NULL: gethostname() */
    const char *gpu_name;
    int sm;                    /* compute capability as 10*major+minor, e.g. 90 */
    const char *driver_version, *cuda_version, *cupti_version;
    const char *command_line;
    const char *group;         /* runs compared together (a plan's night); NULL: a group of its own */
} rs_run_info;

#define RS_GROUP_MAX 128
/* 0 when GROUP can name a run group (1 to RS_GROUP_MAX - 1 printable characters). */
int rs_check_group(const char *group, rg_err *err);

/* Inserts a run with a fresh uuid, started_at = now and this process's pid; returns its id,
 * or -1. */
/* Groups the writes between them into one transaction (a sweep registers tens of thousands of
 * variants and invalid points: a commit each took most of a one-minute search). The write lock is
 * held until rs_batch_end, which commits; a write that fails inside rolls the whole batch back, the
 * batch's later writes fail, and rs_batch_end says so. Batches do not nest. */
int rs_batch_begin(rs_store *s, rg_err *err);
int rs_batch_end(rs_store *s, rg_err *err);

int64_t rs_begin_run(rs_store *s, const rs_run_info *info, rg_err *err);
int rs_finish_run(rs_store *s, int64_t run_id, rs_run_status status, rg_err *err);

typedef struct rs_run_row {
    int64_t id;
    char uuid[40], started_at[32], finished_at[32], status[16];
    char commit[64], gpu_name[128];
    int sm;
    int64_t measurements;
    char group[RS_GROUP_MAX], host[256];
    int64_t pid;               /* 0: unknown (a run of schema version 1) */
} rs_run_row;
/* status reads "interrupted" for a run still 'running' whose process (on this host) is gone. */
int rs_get_run(rs_store *s, int64_t run_id, rs_run_row *out, rg_err *err);
/* RUN spec: a numeric id, a uuid prefix (unique), "latest" or "previous" (by start time). */
int rs_resolve_run(rs_store *s, const char *spec, int64_t *run_id, rg_err *err);

/* ---- Datasets and variants ---- */
/* Finds or inserts the dataset; with stats, its statistic columns are (re)written.
 * Returns its id, or -1. */
int64_t rs_upsert_dataset(rs_store *s, const char *name, const hg_stats *stats, rg_err *err);

typedef struct rs_variant {
    const char *config_json;   /* the full configuration, valid JSON */
    uint64_t hash;             /* 64-bit config hash; 0: FNV-1a of config_json */
    const char *model, *task;  /* "rgat", "inference" ... */
    int dim_in, dim_out, heads;
} rs_variant;
/* Finds (by hash) or inserts the variant; returns its id, or -1. A hash already stored
 * with a different config or problem is reported as a collision, not overwritten. */
int64_t rs_upsert_variant(rs_store *s, const rs_variant *v, rg_err *err);
/* Hash as stored: 16 lowercase hex digits plus NUL. */
void rs_hash_hex(uint64_t hash, char out[17]);

/* ---- Measurements ---- */
typedef struct rs_measurement {
    int64_t run_id, dataset_id, variant_id;
    const char *device_key;    /* rs_device_key() */
    const char *system;        /* NULL: "generated"; baselines: "pyg", "cublas-seg", ... */
    const char *layer;         /* NULL: "" */
    rs_status status;
    const char *evidence;      /* compile log, error message; NULL if none */
    double validation_error;   /* max error vs the reference; NaN: not validated */
    double median_ms, min_ms, max_ms, stddev_ms;   /* NaN: not measured */
    int repeats;
    int64_t peak_mem_bytes;    /* -1: unknown */
    double gemm_ms, traversal_ms, other_ms;        /* NaN: unknown */
    const char *commit;        /* NULL: the run's commit */
} rs_measurement;
/* Sets every optional field to "unknown" (NaN / -1 / NULL) and status to RS_OK. */
void rs_measurement_init(rs_measurement *m);

typedef struct rs_kernel_time {
    const char *kernel, *category;   /* category: "gemm", "traversal", "copy", "other" ... */
    double median_ns, spread_ns;     /* spread: max - min over repeats; NaN unknown */
} rs_kernel_time;

typedef struct rs_metric {
    const char *kernel;        /* NULL or "": the whole measurement */
    const char *name, *unit;
    double value;
} rs_metric;

/* Writes the measurement, its kernel times and metrics in ONE transaction: concurrent
 * writers never interleave partial rows and a killed process leaves nothing half written.
 * Returns the measurement id, or -1. */
int64_t rs_record(rs_store *s, const rs_measurement *m, const rs_kernel_time *kernels, size_t n_kernels,
                  const rs_metric *metrics, size_t n_metrics, rg_err *err);

/* What makes two measurements "the same work" for resuming a sweep. */
typedef struct rs_resume_key {
    const char *device_key, *dataset, *commit;
    uint64_t config_hash;
    const char *model, *task;
    int dim_in, dim_out, heads;
    const char *system;        /* NULL: "generated" */
} rs_resume_key;
/* 1 (and *status of the newest such row, if status != NULL) when already measured,
 * 0 when not, -1 on error. Failed attempts count too: the caller decides to retry. */
int rs_already_measured(rs_store *s, const rs_resume_key *key, rs_status *status, rg_err *err);
/* The config hashes (hex, sorted, each once) already measured for key's problem, device, commit
 * and system, key->config_hash ignored: one query where rs_already_measured takes one per point.
 * *hashes is freed by the caller; 0, or -1 on error. */
int rs_measured_hashes(rs_store *s, const rs_resume_key *key, char (**hashes)[17], size_t *n, rg_err *err);

/* ---- Claims: concurrent sweeps of one store measure each variant once ---- */
typedef struct rs_claim_key {
    int64_t run_id;            /* the claiming run (rs_begin_run) */
    int64_t variant_id, dataset_id;
    const char *device_key, *commit;
    const char *system;        /* NULL: "generated" */
} rs_claim_key;
enum { RS_CLAIMED, RS_CLAIM_MEASURED, RS_CLAIM_HELD };
/* In one IMMEDIATE transaction: RS_CLAIM_MEASURED when the store has a measurement of this
 * work (unless remeasure); RS_CLAIM_HELD when another run holds the claim and may still
 * measure it (running, and on this host its process alive); else RS_CLAIMED, the work is this
 * run's (a claim of a finished, interrupted or dead run is taken over). -1 on error. */
int rs_claim(rs_store *s, const rs_claim_key *k, int remeasure, rg_err *err);

/* ---- Queries ---- */
/* Every field optional (NULL / 0 = any). */
typedef struct rs_filter {
    int64_t run_id;
    const char *model, *dataset, *task, *device_key, *system, *commit;
    const char *group;         /* the runs of this group */
} rs_filter;

/* Sets the measurement-level metric NAME of each measurement ids[i] to values[i] (a NaN value
 * only removes it), in ONE transaction. For derived values that are recomputed over and over
 * (the cost model's predictions): they replace instead of piling up, and with a scope, NAME is
 * first removed from every measurement the filter matches, so that rows a new fit no longer
 * covers keep no stale value. An unknown id is an error and then nothing is written. */
int rs_set_metric(rs_store *s, const char *name, const char *unit, const rs_filter *scope, const int64_t *ids,
                  const double *values, size_t n, rg_err *err);

/* Best (lowest median) ok measurement of one problem: (device, system, model, task,
 * dataset, dims, heads). best_ms is NaN when every attempt failed. */
typedef struct rs_best {
    char *device_key, *system, *model, *task, *dataset;
    int dim_in, dim_out, heads;
    double best_ms;
    int64_t measurement_id, run_id;
    char hash[17];
    char *config_json;
    int64_t n_ok, n_total;
} rs_best;
int rs_query_best(rs_store *s, const rs_filter *f, rs_best **rows, size_t *n, rg_err *err);
void rs_best_free(rs_best *rows, size_t n);

/* One measurement with its variant and dataset names (for listings and tests). */
typedef struct rs_row {
    int64_t id, run_id;
    char *device_key, *system, *layer, *model, *task, *dataset, *evidence, *commit;
    char hash[17];
    int dim_in, dim_out, heads, repeats;
    rs_status status;
    double median_ms, min_ms, max_ms, stddev_ms, validation_error;
    double gemm_ms, traversal_ms, other_ms;
    int64_t peak_mem_bytes;
    int64_t n_kernels, n_metrics;
    double span_ms;         /* the run's span (metric span_ms of the whole run), NaN when none stored */
} rs_row;
int rs_query_measurements(rs_store *s, const rs_filter *f, rs_row **rows, size_t *n, rg_err *err);
void rs_rows_free(rs_row *rows, size_t n);

/* ---- Merge, export, compare ---- */
typedef struct rs_merge_stats {
    int64_t runs_added, runs_known, measurements_added, measurements_skipped;
    int64_t datasets_added, variants_added;
} rs_merge_stats;
/* Copies every run, measurement, kernel time and metric of src_path into dst (ids
 * remapped) in one transaction; runs and measurements already present (same uuid) are
 * skipped, so merging twice adds nothing. src is opened read-only. */
int rs_merge(rs_store *dst, const char *src_path, rs_merge_stats *stats, rg_err *err);

typedef enum rs_format { RS_CSV, RS_JSON } rs_format;
int rs_format_parse(const char *name, rs_format *out);
/* One row per measurement with its run, config and dataset columns. CSV: RFC 4180 quoting,
 * header line. JSON: an array of objects, config as a nested object, plus kernel times and
 * metrics. Returns the number of rows written, or -1. */
int64_t rs_export(rs_store *s, rs_format fmt, FILE *out, const rs_filter *f, rg_err *err);

typedef enum rs_cmp_kind {
    RS_CMP_REGRESSION,      /* head slower than base by more than the threshold */
    RS_CMP_FAILED,          /* ok in base; measured in head but no attempt ok */
    RS_CMP_IMPROVEMENT,     /* head faster by more than the threshold */
    RS_CMP_SAME,
    RS_CMP_MISSING,         /* ok in base, not measured in head */
    RS_CMP_NEW              /* ok in head, no ok measurement in base */
} rs_cmp_kind;
const char *rs_cmp_kind_name(rs_cmp_kind k);

typedef struct rs_cmp_row {
    rs_cmp_kind kind;
    char *system, *model, *task, *dataset;
    int dim_in, dim_out, heads;
    double base_ms, head_ms, ratio;     /* ratio = head / base; NaN where one side is missing */
    char base_hash[17], head_hash[17];
} rs_cmp_row;

typedef struct rs_comparison {
    rs_cmp_row *rows;        /* sorted: regressions (worst first), failed, improvements, rest */
    size_t n;
    int count[RS_CMP_NEW + 1];
} rs_comparison;
/* What a side of a comparison is: one run, or every run of a group. */
typedef struct rs_selection {
    int64_t run_id;                /* 0: the group */
    char group[RS_GROUP_MAX];
} rs_selection;
/* "latest" / "previous": the newest / second newest group (by the start of its first run: a
 * nightly plan's shards are one group, merged or not); "group:NAME"; else a run as
 * rs_resolve_run takes it. */
int rs_resolve_selection(rs_store *s, const char *spec, rs_selection *out, rg_err *err);
int rs_selection_summary(rs_store *s, const rs_selection *sel, int64_t *runs, int64_t *measurements, rg_err *err);

/* Compares the best time per (system, model, dataset, task, dims, heads) of two selections.
 * threshold 0.05: head > 1.05 x base is a regression, head < base / 1.05 an improvement. */
int rs_compare_selections(rs_store *s, const rs_selection *base, const rs_selection *head, double threshold,
                          rs_comparison *out, rg_err *err);
/* The same for two runs. */
int rs_compare(rs_store *s, int64_t base_run, int64_t head_run, double threshold,
               rs_comparison *out, rg_err *err);
/* Problems measured on both sides (regressions, failures, improvements, unchanged): 0 means
 * the two sides cannot be compared at all. */
int rs_comparison_common(const rs_comparison *c);
void rs_comparison_free(rs_comparison *c);

/* ---- Pruning ---- */
typedef struct rs_prune_stats {
    int64_t measurements_kept, measurements_removed, kernel_times_removed, metrics_removed, runs_removed;
} rs_prune_stats;
/* Keeps, per problem (device, dataset, system, layer, model, task, dims, heads), only the rows
 * of the commit whose ok rows cover the most configs (ties: the newest), which is what the
 * cost-model fit reads, and every row with per-kernel counters (CUPTI profiles are not
 * repeated by later sweeps); superseded commits' other measurements go with their kernel times and
 * metrics, then finished runs left without measurements, and the file is compacted (VACUUM).
 * Deleting is one transaction: an error leaves the store as it was. For stores of record that
 * no sweep is writing to (a sweep's commit still measuring would lose its rows). */
int rs_prune_superseded(rs_store *s, rs_prune_stats *stats, rg_err *err);

#endif
