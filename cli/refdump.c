/* `explore run --dump DIR` / `--weights DIR`: writes the CPU reference's tensors as .npy files
 * with a manifest.json, and loads inputs and weights back from such a directory. */
#include "cli/refdump.h"
#include "codegen/emit_loss.h"
#include "common/json.h"
#include "datasets/npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rd_shape(const ir_var *v, int64_t rows, int64_t *shape)
{
    switch (v->kind) {
    case IR_VAR_NODE:
    case IR_VAR_EDGE:
        shape[0] = rows, shape[1] = v->heads, shape[2] = v->dim;
        return 3;
    case IR_VAR_WEIGHT:
        shape[0] = rows, shape[1] = v->heads;
        if (v->rows_dim <= 0) return shape[2] = v->dim, 3;
        shape[2] = v->rows_dim, shape[3] = v->dim;
        return 4;
    case IR_VAR_SCALAR: return 0;
    }
    RG_DIE("bad variable kind %d", (int)v->kind);
}

static const char *role_name(ir_role r)
{
    static const char *const names[] = {"temp", "input", "graph", "param", "output", "loss", "label"};
    RG_ASSERT((int)r >= 0 && (int)r < (int)(sizeof names / sizeof *names));
    return names[r];
}

/* A gradient worth exchanging: of an input or a weight (the others are internal). */
static int exchanged_grad(const ir_program *p, const ir_var *v)
{
    if (v->grad_of < 0) return 0;
    ir_role r = p->vars[v->grad_of].role;
    return r == IR_ROLE_INPUT || r == IR_ROLE_PARAM;
}

static int dumped(const ir_program *p, const ir_var *v)
{
    return v->role != IR_ROLE_TEMP || exchanged_grad(p, v);
}

static void manifest_entry(rgj_writer *w, const char *file, const ir_var *v, const char *role, const char *of,
                           int ndim, const int64_t *shape, const char *dtype)
{
    rgj_begin_object(w);
    rgj_kv_string(w, "file", file);
    rgj_kv_string(w, "variable", v->name);
    rgj_kv_string(w, "role", role);
    if (of) rgj_kv_string(w, "of", of);
    rgj_key(w, "shape");
    rgj_begin_array(w);
    for (int d = 0; d < ndim; d++) rgj_int(w, shape[d]);
    rgj_end_array(w);
    rgj_kv_string(w, "dtype", dtype);
    rgj_end_object(w);
}

/* Labels go out as int64 class ids (the reference keeps them as doubles). */
static int write_labels(const char *path, int ndim, const int64_t *shape, const double *v, int64_t n, rg_err *err)
{
    int64_t *ids = rg_xmalloc(((size_t)n + 1) * sizeof *ids);
    for (int64_t i = 0; i < n; i++) ids[i] = (int64_t)v[i];
    int rc = npy_write_i64(path, ndim, shape, ids, err);
    free(ids);
    return rc;
}

/* The weight after the training plan's closing SGD step. */
static int write_updated(const char *path, int ndim, const int64_t *shape, const double *w, const double *dw, int64_t n,
                         rg_err *err)
{
    double *u = rg_xmalloc(((size_t)n + 1) * sizeof *u);
    for (int64_t i = 0; i < n; i++) u[i] = w[i] - EL_SGD_LR * dw[i];
    int rc = npy_write_f64(path, ndim, shape, u, err);
    free(u);
    return rc;
}

/* One variable's file(s) and manifest entries. */
static int dump_var(ref_exec *x, const ir_program *p, int id, const char *dir, rgj_writer *w, rg_err *err)
{
    const ir_var *v = &p->vars[id];
    int64_t shape[4], n = ref_count(x, id);
    int ndim = rd_shape(v, ref_rows(x, id), shape);
    const double *val = ref_values(x, id);
    char *file = rg_xasprintf("%s.npy", v->name), *path = rg_xasprintf("%s/%s", dir, file);
    int label = v->role == IR_ROLE_LABEL, grad = v->role == IR_ROLE_TEMP;
    int rc = label ? write_labels(path, ndim, shape, val, n, err) : npy_write_f64(path, ndim, shape, val, err);
    if (rc == 0)
        manifest_entry(w, file, v, grad ? "grad" : role_name(v->role), grad ? p->vars[v->grad_of].name : NULL, ndim,
                       shape, label ? "int64" : "float64");
    free(file), free(path);
    if (rc || !(v->role == IR_ROLE_PARAM && v->grad >= 0 && el_sgd_updates(v))) return rc;
    file = rg_xasprintf("%s.sgd.npy", v->name), path = rg_xasprintf("%s/%s", dir, file);
    rc = write_updated(path, ndim, shape, val, ref_values(x, v->grad), n, err);
    if (rc == 0) manifest_entry(w, file, v, "updated", v->name, ndim, shape, "float64");
    free(file), free(path);
    return rc;
}

static int write_text(const char *path, const char *text, rg_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return rg_errf(err, "cannot create %s", path);
    int ok = fputs(text, f) >= 0;
    if (fclose(f) != 0 || !ok) return rg_errf(err, "cannot write %s", path);
    return 0;
}

int rd_dump(ref_exec *x, const ir_program *p, const hg_graph *g, const rd_meta *m, const char *dir, rg_err *err)
{
    if (rg_mkdir_p(dir, err)) return -1;
    rgj_writer w = {0};
    rgj_begin_object(&w);
    rgj_kv_string(&w, "format", "rgnn-tensors 1");
    rgj_kv_string(&w, "model", m->model);
    rgj_kv_string(&w, "task", m->task);
    rgj_kv_string(&w, "dataset", m->dataset);
    rgj_kv_int(&w, "dim_in", m->dim_in);
    rgj_kv_int(&w, "dim_out", m->dim_out);
    rgj_kv_int(&w, "heads", m->heads);
    rgj_kv_int(&w, "nodes", g->num_nodes);
    rgj_kv_int(&w, "edges", g->num_edges);
    rgj_kv_int(&w, "node_types", g->num_ntypes);
    rgj_kv_int(&w, "edge_types", g->num_etypes);
    rgj_kv_double(&w, "sgd_lr", EL_SGD_LR);
    rgj_kv_double(&w, "loss", ref_loss(x));   /* null without one */
    rgj_key(&w, "tensors");
    rgj_begin_array(&w);
    int rc = 0;
    for (int i = 0; i < p->nvars && rc == 0; i++)
        if (dumped(p, &p->vars[i])) rc = dump_var(x, p, i, dir, &w, err);
    rgj_end_array(&w);
    rgj_end_object(&w);
    char *json = rgj_finish(&w);
    if (rc == 0) {
        char *path = rg_xasprintf("%s/manifest.json", dir);
        rc = write_text(path, json, err);
        free(path);
    }
    free(json);
    return rc;
}

/* ------------------------------------------------------------------ loading */

static void format_shape(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, "%lld%s", (long long)shape[d], ndim == 1 || d + 1 < ndim ? "," : "");
    if (len < n) snprintf(buf + len, n - len, ")");
}

/* The number of classes labels index: the row width of the loss's input. */
static int label_classes(const ir_program *p, int var)
{
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        if (s->op == IR_OP_NLL_LOSS && s->nin > 1 && s->in[1].var == var && s->in[0].var >= 0)
            return (int)ir_var_row_width(&p->vars[s->in[0].var]);
    }
    return INT32_MAX;
}

static int check_values(const ir_program *p, int id, const npy_array *a, const char *path, rg_err *err)
{
    int classes = p->vars[id].role == IR_ROLE_LABEL ? label_classes(p, id) : 0;
    for (int64_t i = 0; i < a->count; i++) {
        double v = npy_value_at(a, i);
        if (!isfinite(v)) return rg_errf(err, "%s: value %lld is not finite", path, (long long)i);
        if (classes && (v != floor(v) || v < 0 || v >= classes))
            return rg_errf(err, "%s: label %lld is %g, not a class id in [0, %d)", path, (long long)i, v, classes);
    }
    return 0;
}

static int load_var(ref_exec *x, const ir_program *p, int id, const char *dir, rg_err *err)
{
    const ir_var *v = &p->vars[id];
    char *path = rg_xasprintf("%s/%s.npy", dir, v->name);
    npy_array a;
    int rc = npy_read_numeric_file(path, &a, err);
    if (rc) {
        if (!rg_file_exists(path))
            rg_errf(err, "%s: missing (--weights needs every input, weight and label of %s)", path, p->name);
        free(path);
        return -1;
    }
    int64_t want[4];
    int ndim = rd_shape(v, ref_rows(x, id), want);
    int same = a.ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = a.shape[d] == want[d];
    if (!same) {
        char have_s[128], want_s[128];
        format_shape(have_s, sizeof have_s, a.ndim, a.shape);
        format_shape(want_s, sizeof want_s, ndim, want);
        rc = rg_errf(err, "%s: shape %s, but %s's '%s' on this graph has shape %s", path, have_s, p->name, v->name,
                     want_s);
    } else {
        rc = check_values(p, id, &a, path, err);
    }
    if (rc == 0) {
        double *dst = ref_values(x, id);
        for (int64_t i = 0; i < a.count; i++) dst[i] = npy_value_at(&a, i);
    }
    npy_free(&a);
    free(path);
    return rc;
}

int rd_load(ref_exec *x, const ir_program *p, const char *dir, rg_err *err)
{
    for (int i = 0; i < p->nvars; i++) {
        ir_role r = p->vars[i].role;
        if ((r == IR_ROLE_INPUT || r == IR_ROLE_PARAM || r == IR_ROLE_LABEL) && load_var(x, p, i, dir, err)) return -1;
    }
    return 0;
}
