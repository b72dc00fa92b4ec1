/* `explore compare-baselines`: groups the store's measurements by problem, takes the best
 * generated variant and the best attempt of every baseline, and prints speed-ups as markdown. */
#include "baselines/compare.h"
#include "codegen/pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cell_acc {
    bcmp_cell c;
    int any_oom;
    int64_t newest_id;         /* newest attempt, for the status of a baseline that never succeeded */
} cell_acc;

typedef struct row_acc {
    bcmp_row r;
    cell_acc *cells;
    int cap;
} row_acc;

static int same_problem(const bcmp_row *a, const rs_row *m)
{
    return !strcmp(a->device_key, m->device_key) && !strcmp(a->model, m->model) && !strcmp(a->task, m->task) &&
           !strcmp(a->dataset, m->dataset) && a->dim_in == m->dim_in && a->dim_out == m->dim_out &&
           a->heads == m->heads;
}

static row_acc *find_row(row_acc **rows, size_t *n, size_t *cap, const rs_row *m)
{
    for (size_t i = 0; i < *n; i++)
        if (same_problem(&(*rows)[i].r, m)) return &(*rows)[i];
    if (*n == *cap) *rows = rg_xrealloc(*rows, (*cap = *cap ? 2 * *cap : 32) * sizeof **rows);
    row_acc *a = &(*rows)[(*n)++];
    memset(a, 0, sizeof *a);
    a->r.device_key = rg_xstrdup(m->device_key);
    a->r.model = rg_xstrdup(m->model);
    a->r.task = rg_xstrdup(m->task);
    a->r.dataset = rg_xstrdup(m->dataset);
    a->r.dim_in = m->dim_in, a->r.dim_out = m->dim_out, a->r.heads = m->heads;
    a->r.generated_ms = NAN;
    a->r.best = -1;
    a->r.best_speedup = NAN;
    return a;
}

static cell_acc *find_cell(row_acc *a, const rs_row *m)
{
    const char *layer = m->layer ? m->layer : "";
    for (int i = 0; i < a->r.ncells; i++)
        if (!strcmp(a->cells[i].c.system, m->system) && !strcmp(a->cells[i].c.layer, layer)) return &a->cells[i];
    if (a->r.ncells == a->cap) a->cells = rg_xrealloc(a->cells, (size_t)(a->cap = a->cap ? 2 * a->cap : 4) * sizeof *a->cells);
    cell_acc *c = &a->cells[a->r.ncells++];
    memset(c, 0, sizeof *c);
    c->c.system = rg_xstrdup(m->system);
    c->c.layer = rg_xstrdup(layer);
    c->c.best_ms = c->c.speedup = NAN;
    c->c.peak_mem_bytes = -1;
    c->newest_id = -1;
    return c;
}

static void add_measurement(row_acc *a, const rs_row *m)
{
    int ok = m->status == RS_OK && !isnan(m->median_ms);
    if (!strcmp(m->system, "generated")) {
        if (ok && !(m->median_ms >= a->r.generated_ms)) {
            a->r.generated_ms = m->median_ms;
            memcpy(a->r.generated_hash, m->hash, sizeof a->r.generated_hash);
        }
        return;
    }
    cell_acc *c = find_cell(a, m);
    if (ok && !(m->median_ms >= c->c.best_ms)) {
        c->c.best_ms = m->median_ms;
        c->c.peak_mem_bytes = m->peak_mem_bytes;
    }
    if (m->status == RS_OOM) c->any_oom = 1;
    if (m->id > c->newest_id) {
        c->newest_id = m->id;
        if (isnan(c->c.best_ms)) c->c.peak_mem_bytes = m->peak_mem_bytes;
        c->c.status = m->status;
    }
}

static int cmp_cell(const void *x, const void *y)
{
    const bcmp_cell *a = x, *b = y;
    int c = strcmp(a->system, b->system);
    return c ? c : strcmp(a->layer, b->layer);
}

static int cmp_row(const void *x, const void *y)
{
    const bcmp_row *a = x, *b = y;
    int c;
    if ((c = strcmp(a->device_key, b->device_key)) || (c = strcmp(a->model, b->model)) ||
        (c = strcmp(a->task, b->task)) || (c = strcmp(a->dataset, b->dataset)))
        return c;
    if (a->dim_in != b->dim_in) return a->dim_in - b->dim_in;
    if (a->dim_out != b->dim_out) return a->dim_out - b->dim_out;
    return a->heads - b->heads;
}

/* Cells' final status, speed-ups and the best baseline of a problem. */
static void finish_row(row_acc *a)
{
    bcmp_row *r = &a->r;
    r->cells = rg_xcalloc((size_t)(r->ncells ? r->ncells : 1), sizeof *r->cells);
    for (int i = 0; i < r->ncells; i++) {
        bcmp_cell *c = &a->cells[i].c;
        if (!isnan(c->best_ms)) c->status = RS_OK;
        else if (a->cells[i].any_oom) c->status = RS_OOM;
        c->speedup = c->best_ms / r->generated_ms;   /* NaN propagates */
        r->cells[i] = *c;
    }
    free(a->cells);
    qsort(r->cells, (size_t)r->ncells, sizeof *r->cells, cmp_cell);
    for (int i = 0; i < r->ncells; i++)
        if (r->cells[i].status == RS_OK && (r->best < 0 || r->cells[i].best_ms < r->cells[r->best].best_ms)) r->best = i;
    if (r->best >= 0) r->best_speedup = r->cells[r->best].speedup;
}

static void free_row(bcmp_row *r)
{
    for (int i = 0; i < r->ncells; i++) free(r->cells[i].system), free(r->cells[i].layer);
    free(r->cells), free(r->device_key), free(r->model), free(r->task), free(r->dataset);
}

static int wanted(const bcmp_filter *f, const rs_row *m)
{
    if (f->dims && (m->dim_in != f->dims || m->dim_out != f->dims)) return 0;
    return !f->gpu || strcasestr(m->device_key, f->gpu) != NULL;
}

int bcmp_build(rs_store *s, const bcmp_filter *f, bcmp_table *out, rg_err *err)
{
    static const bcmp_filter any;
    if (!f) f = &any;
    memset(out, 0, sizeof *out);
    const char *task = NULL;
    if (f->task && pl_parse_task(f->task, &task, err)) return -1;
    rs_filter q = {.model = f->model, .task = task, .dataset = f->dataset};
    rs_row *ms;
    size_t nm;
    if (rs_query_measurements(s, &q, &ms, &nm, err)) return -1;
    row_acc *rows = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < nm; i++)
        if (wanted(f, &ms[i])) add_measurement(find_row(&rows, &n, &cap, &ms[i]), &ms[i]);
    rs_rows_free(ms, nm);
    out->rows = rg_xcalloc(n ? n : 1, sizeof *out->rows);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].r.ncells == 0) {   /* generated only: nothing to compare with */
            free(rows[i].cells);
            free_row(&rows[i].r);
            continue;
        }
        finish_row(&rows[i]);
        out->rows[out->n++] = rows[i].r;
    }
    free(rows);
    qsort(out->rows, out->n, sizeof *out->rows, cmp_row);
    return 0;
}

void bcmp_free(bcmp_table *t)
{
    for (size_t i = 0; i < t->n; i++) free_row(&t->rows[i]);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- printing ---- */

static int same_section(const bcmp_row *a, const bcmp_row *b)
{
    return !strcmp(a->device_key, b->device_key) && !strcmp(a->model, b->model) && !strcmp(a->task, b->task);
}

typedef struct column {
    const char *system, *layer;
} column;

static int cmp_cell_column(const void *x, const void *y)
{
    const column *a = x, *b = y;
    int c = strcmp(a->system, b->system);
    return c ? c : strcmp(a->layer, b->layer);
}

/* The union of the baselines measured in rows [first, last), sorted. */
static column *section_columns(const bcmp_table *t, size_t first, size_t last, int *ncols)
{
    column *cols = NULL;
    int n = 0;
    for (size_t i = first; i < last; i++)
        for (int j = 0; j < t->rows[i].ncells; j++) {
            const bcmp_cell *c = &t->rows[i].cells[j];
            int k = 0;
            while (k < n && (strcmp(cols[k].system, c->system) || strcmp(cols[k].layer, c->layer))) k++;
            if (k < n) continue;
            cols = rg_xrealloc(cols, (size_t)(n + 1) * sizeof *cols);
            cols[n++] = (column){c->system, c->layer};
        }
    qsort(cols, (size_t)n, sizeof *cols, cmp_cell_column);
    *ncols = n;
    return cols;
}

static void print_cell(FILE *out, const bcmp_cell *c)
{
    if (!c) fprintf(out, " - |");
    else if (c->status == RS_OK && !isnan(c->speedup)) fprintf(out, " %.3f ms (%.2fx) |", c->best_ms, c->speedup);
    else if (c->status == RS_OK) fprintf(out, " %.3f ms |", c->best_ms);
    else if (c->status == RS_OOM) fprintf(out, " OOM |");
    else fprintf(out, " failed: %s |", rs_status_name(c->status));
}

static const bcmp_cell *cell_of(const bcmp_row *r, const column *col)
{
    for (int i = 0; i < r->ncells; i++)
        if (!strcmp(r->cells[i].system, col->system) && !strcmp(r->cells[i].layer, col->layer)) return &r->cells[i];
    return NULL;
}

static void print_row(FILE *out, const bcmp_row *r, const column *cols, int ncols)
{
    fprintf(out, "| %s | %d,%d/%d |", r->dataset, r->dim_in, r->dim_out, r->heads);
    if (isnan(r->generated_ms)) fprintf(out, " n/a |");
    else fprintf(out, " %.3f ms |", r->generated_ms);
    for (int k = 0; k < ncols; k++) print_cell(out, cell_of(r, &cols[k]));
    if (r->best < 0) {
        fprintf(out, " none ok | - |\n");
        return;
    }
    const bcmp_cell *b = &r->cells[r->best];
    fprintf(out, " %s%s%s %.3f ms |", b->system, *b->layer ? " " : "", b->layer, b->best_ms);
    if (isnan(r->best_speedup)) fprintf(out, " - |\n");
    else fprintf(out, " %.2fx |\n", r->best_speedup);
}

void bcmp_print_markdown(const bcmp_table *t, FILE *out)
{
    if (t->n == 0) {
        fprintf(out, "No baseline measurements match (import PyG results with `explore import`, measure the cuBLAS "
                     "baselines with `explore baselines`).\n");
        return;
    }
    fprintf(out, "Speed-up = baseline time / best generated variant's time (> 1: the generated code is faster).\n"
                 "Times are medians of timed repeats; each cell is the best attempt of that baseline.\n");
    for (size_t first = 0; first < t->n;) {
        size_t last = first + 1;
        while (last < t->n && same_section(&t->rows[first], &t->rows[last])) last++;
        const bcmp_row *r0 = &t->rows[first];
        fprintf(out, "\n### %s, %s, %s\n\n| dataset | dims/heads | generated |", r0->model, r0->task, r0->device_key);
        int ncols;
        column *cols = section_columns(t, first, last, &ncols);
        for (int k = 0; k < ncols; k++) fprintf(out, " %s%s%s |", cols[k].system, *cols[k].layer ? " " : "", cols[k].layer);
        fprintf(out, " best baseline | speed-up over best |\n|---|---|---|");
        for (int k = 0; k < ncols; k++) fprintf(out, "---|");
        fprintf(out, "---|---|\n");
        for (size_t i = first; i < last; i++) print_row(out, &t->rows[i], cols, ncols);
        free(cols);
        first = last;
    }
}
