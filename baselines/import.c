/* `explore import`: parses a baseline CSV (RFC 4180, header-named columns), checks every
 * row, then records them as measurements of their system/layer under a run of their own. */
#include "baselines/import.h"
#include "codegen/pipeline.h"
#include "common/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------- CSV reading ---- */

typedef struct csv_record {
    char **f;
    int n, cap;
    int line;                  /* line the record starts on */
} csv_record;

static void record_clear(csv_record *r)
{
    for (int i = 0; i < r->n; i++) free(r->f[i]);
    r->n = 0;
}

static void record_push(csv_record *r, rg_str *field)
{
    if (r->n == r->cap) r->f = rg_xrealloc(r->f, (size_t)(r->cap = r->cap ? 2 * r->cap : 16) * sizeof *r->f);
    r->f[r->n++] = field->s ? field->s : rg_xstrdup("");
    *field = (rg_str){0};
}

/* Reads one record starting at *pos (quoted fields may span lines). Returns 1 when a record
 * was read, 0 at the end of the text, -1 on a malformed quote. *line counts newlines. */
static int csv_next(const char *text, size_t len, size_t *pos, int *line, csv_record *r, const char *path,
                    rg_err *err)
{
    record_clear(r);
    size_t i = *pos;
    if (i >= len) return 0;
    r->line = *line;
    rg_str field = {0};
    int quoted = 0, field_started = 0;
    for (;;) {
        if (i >= len) {
            if (quoted) {
                rg_str_free(&field);
                return rg_errf(err, "%s:%d: unterminated quoted field", path, r->line);
            }
            record_push(r, &field);
            break;
        }
        char ch = text[i++];
        if (quoted) {
            if (ch == '"' && i < len && text[i] == '"') rg_str_putc(&field, '"'), i++;
            else if (ch == '"') quoted = 0;
            else {
                if (ch == '\n') (*line)++;
                rg_str_putc(&field, ch);
            }
            continue;
        }
        if (ch == '"' && !field_started) {
            quoted = field_started = 1;
            if (!field.s) rg_str_puts(&field, "");
        } else if (ch == '"') {
            rg_str_free(&field);
            return rg_errf(err, "%s:%d: a quote inside an unquoted field", path, r->line);
        } else if (ch == ',') {
            record_push(r, &field);
            field_started = 0;
        } else if (ch == '\n' || ch == '\r') {
            if (ch == '\r' && i < len && text[i] == '\n') i++;
            (*line)++;
            record_push(r, &field);
            break;
        } else {
            rg_str_putc(&field, ch);
            field_started = 1;
        }
    }
    *pos = i;
    return 1;
}

static char *read_text(const char *path, size_t *len, rg_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        rg_errf(err, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    rg_str b = {0};
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < got; i++) rg_str_putc(&b, buf[i]);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        rg_str_free(&b);
        rg_errf(err, "cannot read %s", path);
        return NULL;
    }
    *len = b.len;
    return b.s ? b.s : rg_xstrdup("");
}

/* --------------------------------------------------------------- columns ---- */

enum {
    C_SYSTEM, C_LAYER, C_MODEL, C_TASK, C_DATASET, C_DIMS, C_HEADS, C_STATUS, C_MEDIAN,   /* required */
    C_DIM_IN, C_DIM_OUT, C_MIN, C_MAX, C_STDDEV, C_REPEATS, C_PEAK, C_GPU, C_SM, C_TORCH, C_PYG, C_CUDA, C_ERROR,
    C_COUNT
};
#define C_REQUIRED (C_MEDIAN + 1)

static const char *const COLUMNS[C_COUNT] = {
    "system", "layer", "model", "task", "dataset", "dims", "heads", "status", "median_ms",
    "dim_in", "dim_out", "min_ms", "max_ms", "stddev_ms", "repeats", "peak_mem_bytes", "gpu", "sm",
    "torch_version", "pyg_version", "cuda_version", "error",
};

typedef struct row_ctx {
    const char *path;
    int line;
    const csv_record *rec;
    const int *col;            /* [C_COUNT]: field index or -1 */
    rg_err *err;
} row_ctx;

static const char *field(const row_ctx *x, int c)
{
    int i = x->col[c];
    return i >= 0 && i < x->rec->n ? x->rec->f[i] : "";
}

/* An integer field in [lo, hi]; empty gives `dflt` unless required. */
static int int_field(const row_ctx *x, int c, long long lo, long long hi, int required, long long dflt, long long *out)
{
    const char *s = field(x, c);
    if (!*s) {
        if (required) return rg_errf(x->err, "%s:%d: column %s is empty", x->path, x->line, COLUMNS[c]);
        *out = dflt;
        return 0;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end == '.' && strspn(end + 1, "0") == strlen(end + 1)) end += strlen(end);   /* "64.0" from pandas */
    if (errno || *end || v < lo || v > hi)
        return rg_errf(x->err, "%s:%d: column %s: '%s' is not an integer in [%lld, %lld]", x->path, x->line,
                       COLUMNS[c], s, lo, hi);
    *out = v;
    return 0;
}

/* A non-negative time in ms; empty (or "nan") gives NaN. */
static int ms_field(const row_ctx *x, int c, double *out)
{
    const char *s = field(x, c);
    if (!*s || !strcasecmp(s, "nan")) {
        *out = NAN;
        return 0;
    }
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v) || v < 0)
        return rg_errf(x->err, "%s:%d: column %s: '%s' is not a time in ms", x->path, x->line, COLUMNS[c], s);
    *out = v;
    return 0;
}

static int text_field(const row_ctx *x, int c, int required, char **out)
{
    const char *s = field(x, c);
    if (required && !*s) return rg_errf(x->err, "%s:%d: column %s is empty", x->path, x->line, COLUMNS[c]);
    *out = rg_xstrdup(s);
    return 0;
}

static char *versions_of(const row_ctx *x)
{
    rg_str b = {0};
    const char *names[] = {"torch", "pyg", "cuda"};
    int cols[] = {C_TORCH, C_PYG, C_CUDA};
    for (int i = 0; i < 3; i++)
        if (*field(x, cols[i])) rg_str_printf(&b, "%s%s %s", b.len ? ", " : "", names[i], field(x, cols[i]));
    return b.s ? b.s : rg_xstrdup("");
}

static void row_free(bim_row *r)
{
    free(r->system), free(r->layer), free(r->model), free(r->task), free(r->dataset), free(r->gpu);
    free(r->evidence), free(r->versions), free(r->cuda_version);
}

static int parse_row(const row_ctx *x, bim_row *r)
{
    memset(r, 0, sizeof *r);
    long long dims, din, dout, heads, sm, reps, peak;
    const char *task;
    rg_err terr;
    if (text_field(x, C_SYSTEM, 1, &r->system) || text_field(x, C_LAYER, 0, &r->layer) ||
        text_field(x, C_MODEL, 1, &r->model) || text_field(x, C_DATASET, 1, &r->dataset) ||
        text_field(x, C_GPU, 0, &r->gpu) || text_field(x, C_CUDA, 0, &r->cuda_version))
        return -1;
    if (!strcmp(r->system, "generated"))
        return rg_errf(x->err, "%s:%d: system 'generated' is reserved for the explorer's own variants", x->path, x->line);
    if (pl_parse_task(field(x, C_TASK), &task, &terr))
        return rg_errf(x->err, "%s:%d: %s", x->path, x->line, terr.msg);
    r->task = rg_xstrdup(task);
    if (int_field(x, C_DIMS, 1, 65536, 1, 0, &dims) || int_field(x, C_DIM_IN, 1, 65536, 0, dims, &din) ||
        int_field(x, C_DIM_OUT, 1, 65536, 0, dims, &dout) || int_field(x, C_HEADS, 1, 1024, 1, 0, &heads) ||
        int_field(x, C_SM, 0, 1000, 0, 0, &sm) || int_field(x, C_REPEATS, 0, 1 << 30, 0, 0, &reps) ||
        int_field(x, C_PEAK, 0, INT64_MAX, 0, -1, &peak))
        return -1;
    r->dim_in = (int)din, r->dim_out = (int)dout, r->heads = (int)heads, r->sm = (int)sm, r->repeats = (int)reps;
    r->peak_mem_bytes = peak;
    const char *st = field(x, C_STATUS);
    if (!strcmp(st, "error")) r->status = RS_LAUNCH_ERROR;
    else if (rs_status_parse(st, &r->status))
        return rg_errf(x->err, "%s:%d: unknown status '%s' (ok, oom, launch_error, runtime_fault, timeout, ...)",
                       x->path, x->line, st);
    if (ms_field(x, C_MEDIAN, &r->median_ms) || ms_field(x, C_MIN, &r->min_ms) || ms_field(x, C_MAX, &r->max_ms) ||
        ms_field(x, C_STDDEV, &r->stddev_ms))
        return -1;
    if (r->status == RS_OK && isnan(r->median_ms))
        return rg_errf(x->err, "%s:%d: status ok needs a median_ms", x->path, x->line);
    r->versions = versions_of(x);
    const char *e = field(x, C_ERROR);
    r->evidence = *e ? rg_xasprintf("%s%s%s", e, *r->versions ? "; " : "", r->versions) : rg_xstrdup(r->versions);
    return 0;
}

/* Maps header names to columns; every required column must be there, once. */
static int map_header(const csv_record *h, const char *path, int col[C_COUNT], rg_err *err)
{
    for (int c = 0; c < C_COUNT; c++) col[c] = -1;
    for (int i = 0; i < h->n; i++)
        for (int c = 0; c < C_COUNT; c++)
            if (!strcmp(h->f[i], COLUMNS[c])) {
                if (col[c] >= 0) return rg_errf(err, "%s:%d: column %s appears twice", path, h->line, COLUMNS[c]);
                col[c] = i;
            }
    for (int c = 0; c < C_REQUIRED; c++)
        if (col[c] < 0) return rg_errf(err, "%s:%d: the header has no '%s' column", path, h->line, COLUMNS[c]);
    return 0;
}

static int blank_record(const csv_record *r)
{
    return r->n == 1 && r->f[0][0] == 0;
}

int bim_read_csv(const char *path, bim_table *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    size_t len, pos = 0;
    char *text = read_text(path, &len, err);
    if (!text) return -1;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) pos = 3;   /* a UTF-8 byte-order mark */
    csv_record rec = {0};
    int line = 1, col[C_COUNT], rc;
    size_t cap = 0;
    rc = csv_next(text, len, &pos, &line, &rec, path, err);
    if (rc == 0) rc = rg_errf(err, "%s: empty file (expected a header line)", path);
    else if (rc > 0) rc = map_header(&rec, path, col, err);
    while (rc >= 0 && (rc = csv_next(text, len, &pos, &line, &rec, path, err)) > 0) {
        if (blank_record(&rec)) continue;
        if (out->n == cap) out->rows = rg_xrealloc(out->rows, (cap = cap ? 2 * cap : 64) * sizeof *out->rows);
        row_ctx x = {.path = path, .line = rec.line, .rec = &rec, .col = col, .err = err};
        if (parse_row(&x, &out->rows[out->n])) {
            row_free(&out->rows[out->n]);
            rc = -1;
            break;
        }
        out->n++;
    }
    record_clear(&rec);
    free(rec.f);
    free(text);
    if (rc < 0) {
        bim_table_free(out);
        return -1;
    }
    return 0;
}

void bim_table_free(bim_table *t)
{
    for (size_t i = 0; i < t->n; i++) row_free(&t->rows[i]);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- writing ---- */

/* A baseline's "variant": its identity as JSON, so the FNV hash is unique per problem. */
static char *variant_json(const bim_row *r)
{
    rgj_writer w = {0};
    rgj_begin_object(&w);
    rgj_kv_string(&w, "baseline", r->system);
    rgj_kv_string(&w, "layer", r->layer);
    rgj_kv_string(&w, "model", r->model);
    rgj_kv_string(&w, "task", r->task);
    rgj_kv_int(&w, "dim_in", r->dim_in);
    rgj_kv_int(&w, "dim_out", r->dim_out);
    rgj_kv_int(&w, "heads", r->heads);
    rgj_end_object(&w);
    return rgj_finish(&w);
}

static int64_t record_row(rs_store *s, int64_t run_id, const bim_row *r, rg_err *err)
{
    int64_t ds = rs_upsert_dataset(s, r->dataset, NULL, err);
    if (ds < 0) return -1;
    char *json = variant_json(r);
    rs_variant v = {.config_json = json, .model = r->model, .task = r->task, .dim_in = r->dim_in,
                    .dim_out = r->dim_out, .heads = r->heads};
    int64_t var = rs_upsert_variant(s, &v, err);
    free(json);
    if (var < 0) return -1;
    char *device = rs_device_key(*r->gpu ? r->gpu : "unknown GPU", r->sm);
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = run_id, m.dataset_id = ds, m.variant_id = var;
    m.device_key = device;
    m.system = r->system, m.layer = r->layer, m.status = r->status;
    m.evidence = *r->evidence ? r->evidence : NULL;
    m.median_ms = r->median_ms, m.min_ms = r->min_ms, m.max_ms = r->max_ms, m.stddev_ms = r->stddev_ms;
    m.repeats = r->repeats, m.peak_mem_bytes = r->peak_mem_bytes;
    int64_t id = rs_record(s, &m, NULL, 0, NULL, 0, err);
    free(device);
    return id;
}

int bim_import_csv(rs_store *s, const char *path, const char *commit, const char *command_line, bim_stats *st,
                   rg_err *err)
{
    bim_stats local = {0};
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    bim_table t;
    if (bim_read_csv(path, &t, err)) return -1;
    if (t.n == 0) {
        bim_table_free(&t);
        return rg_errf(err, "%s: no data rows", path);
    }
    const bim_row *first = &t.rows[0];
    rs_run_info info = {.commit = commit ? commit : "unknown", .gpu_name = *first->gpu ? first->gpu : "unknown GPU",
                        .sm = first->sm, .cuda_version = *first->cuda_version ? first->cuda_version : NULL,
                        .command_line = command_line};
    st->run_id = rs_begin_run(s, &info, err);
    int rc = st->run_id < 0 ? -1 : 0;
    for (size_t i = 0; i < t.n && !rc; i++) {
        if (record_row(s, st->run_id, &t.rows[i], err) < 0) {
            rg_err_prefix(err, "%s row %zu", path, i + 1);
            rc = -1;
            break;
        }
        st->rows++;
        if (t.rows[i].status == RS_OK) st->ok++;
        else if (t.rows[i].status == RS_OOM) st->oom++;
        else st->failed++;
    }
    if (st->run_id >= 0) {
        rg_err ferr;
        if (rs_finish_run(s, st->run_id, rc ? RS_RUN_FAILED : RS_RUN_FINISHED, &ferr) && !rc)
            rc = rg_errf(err, "%s", ferr.msg);
    }
    bim_table_free(&t);
    return rc;
}
