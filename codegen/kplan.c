/* A variant's launch plan: the generated kernels in order, with each parameter bound to a
 * program variable, a graph array or a constant, and the grid derived from graph sizes. */
#include "codegen/kplan.h"

#include <stdlib.h>
#include <string.h>

kp_kernel *kp_add_kernel(kp_plan *p)
{
    if (p->nkernels == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 8;
        p->kernels = rg_xrealloc(p->kernels, (size_t)p->cap * sizeof *p->kernels);
    }
    kp_kernel *k = &p->kernels[p->nkernels++];
    memset(k, 0, sizeof *k);
    k->grid_y = k->grid_z = 1;
    k->block_y = 1;
    k->inst = k->phase = -1;
    return k;
}

kp_param *kp_add_param(kp_kernel *k, kp_param_kind kind, int id, int64_t ival, const char *name)
{
    RG_ASSERT(k->nparams < KP_MAX_PARAMS);
    kp_param *p = &k->params[k->nparams++];
    p->kind = kind;
    p->id = id;
    p->ival = ival;
    p->written = 0;
    p->work_node = p->work_row = 0;
    snprintf(p->name, sizeof p->name, "%s", name);
    return p;
}

/* Whether k binds variable var (in either order of rows), and *written whether it stores into it. */
static int binds_var(const kp_kernel *k, int var, int *written)
{
    int bound = 0;
    *written = 0;
    for (int i = 0; i < k->nparams; i++) {
        const kp_param *p = &k->params[i];
        if ((p->kind != KP_VAR && p->kind != KP_VAR_IN) || p->id != var) continue;
        bound = 1;
        *written |= p->written;
    }
    return bound;
}

int64_t kp_work_values(const kp_param *p, int64_t nodes, int64_t edges)
{
    RG_ASSERT(p->kind == KP_WORK && p->ival > 0);
    return nodes * p->work_node + (edges / p->ival + 1) * p->work_row;
}

static int binds_work(const kp_kernel *k, int id)
{
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i].kind == KP_WORK && k->params[i].id == id) return 1;
    return 0;
}

int kp_kernels_conflict(const kp_kernel *a, const kp_kernel *b)
{
    for (int i = 0; i < a->nparams; i++) {
        const kp_param *p = &a->params[i];
        if (p->kind == KP_WORK && binds_work(b, p->id)) return 1;   /* both read and write it */
        if (p->kind != KP_VAR && p->kind != KP_VAR_IN) continue;
        int b_writes;
        if (binds_var(b, p->id, &b_writes) && (p->written || b_writes)) return 1;
    }
    return 0;
}

static int binds_zero_filled(const kp_plan *p, const kp_kernel *k)
{
    int written;
    for (int z = 0; z < p->nzero; z++)
        if (binds_var(k, p->zero_vars[z], &written)) return 1;
    return 0;
}

int kp_dag_waits_on_zero(const kp_plan *p, int i, const int *deps, int n)
{
    RG_ASSERT(i >= 0 && i < p->nkernels);
    if (!binds_zero_filled(p, &p->kernels[i])) return 0;
    for (int d = 0; d < n; d++)
        if (binds_zero_filled(p, &p->kernels[deps[d]])) return 0;
    return 1;
}

int kp_dag_deps(const kp_plan *p, int i, const int *present, int *deps)
{
    RG_ASSERT(i >= 0 && i < p->nkernels);
    /* before[j][k]: kernel k is ordered before kernel j through conflicts among the present kernels */
    unsigned char *before = rg_xcalloc((size_t)i * (size_t)i + 1, 1);
    int n = 0;
    for (int j = 0; j <= i; j++) {
        if (present && !present[j]) continue;
        int nd = 0;
        for (int k = j - 1; k >= 0; k--) {
            if ((present && !present[k]) || !kp_kernels_conflict(&p->kernels[k], &p->kernels[j])) continue;
            if (j < i && before[(size_t)j * (size_t)i + (size_t)k]) continue;
            if (j == i) {
                int implied = 0;
                for (int d = 0; d < nd && !implied; d++) implied = before[(size_t)deps[d] * (size_t)i + (size_t)k];
                if (!implied) deps[nd++] = k;
                continue;
            }
            /* k and everything before k is before j */
            before[(size_t)j * (size_t)i + (size_t)k] = 1;
            for (int m = 0; m < k; m++)
                if (before[(size_t)k * (size_t)i + (size_t)m]) before[(size_t)j * (size_t)i + (size_t)m] = 1;
        }
        if (j == i) n = nd;
    }
    free(before);
    /* deps were found from the latest down: ascending order for the reader */
    for (int a = 0, b = n - 1; a < b; a++, b--) {
        int t = deps[a];
        deps[a] = deps[b], deps[b] = t;
    }
    return n;
}

void kp_kernel_covers(kp_kernel *k, int var)
{
    for (int i = 0; i < k->ncovers; i++)
        if (k->covers[i] == var) return;
    RG_ASSERT(k->ncovers < KP_MAX_COVERS);
    k->covers[k->ncovers++] = var;
}

int kp_plan_covers(const kp_plan *p, int var)
{
    for (int i = 0; i < p->nkernels; i++)
        for (int j = 0; j < p->kernels[i].ncovers; j++)
            if (p->kernels[i].covers[j] == var) return 1;
    return 0;
}

void kp_plan_free(kp_plan *p)
{
    for (int i = 0; i < p->nkernels; i++) free(p->kernels[i].source);
    free(p->kernels);
    free(p->zero_vars);
    memset(p, 0, sizeof *p);
}

const char *kp_graph_array_name(kp_graph_array a)
{
    static const char *names[KG__COUNT] = {
        "src", "dst", "etype", "etype_ptr", "in_ptr", "in_eid", "out_ptr", "out_eid",
        "unique_src", "unique_etype_ptr", "edge_compact", "ntype_ptr",
        "etype_src_ntype", "etype_dst_ntype", "node_ntype", "unique_etype",
        "in_src", "in_etype", "in_dst", "in_compact"};
    RG_ASSERT(a >= 0 && a < KG__COUNT);
    return names[a];
}

int kp_graph_array_in_order(kp_graph_array a) { return a >= KG_IN_SRC && a <= KG_IN_COMPACT; }

const char *kp_category_name(kp_category c)
{
    return c == KC_GEMM ? "gemm" : c == KC_TRAVERSAL ? "traversal" : "other";
}

static const char *rowset_name(int r)
{
    static const char *names[KR__COUNT] = {"edges", "unique", "nodes-by-ntype", "nodes", "in-edges-by-node"};
    return (r >= 0 && r < KR__COUNT) ? names[r] : "?";
}

static const char *size_name(int s)
{
    static const char *names[] = {"nodes", "edges", "unique", "ntypes", "etypes", "tiles"};
    return (s >= 0 && s <= KS_NTILES) ? names[s] : "?";
}

static void print_dag_deps(const kp_plan *p, int i, FILE *f)
{
    int *deps = rg_xmalloc((size_t)(i ? i : 1) * sizeof *deps);
    int n = kp_dag_deps(p, i, NULL, deps), zero = kp_dag_waits_on_zero(p, i, deps, n);
    fputs("     after:", f);
    if (zero) fputs(" zero-fill", f);
    for (int d = 0; d < n; d++) fprintf(f, " %s", p->kernels[deps[d]].name);
    fputs(n || zero ? "\n" : " (a root of the graph)\n", f);
    free(deps);
}

void kp_print(const kp_plan *p, const char *const *var_names, FILE *f)
{
    if (p->launch != KP_LAUNCH_STREAM)
        fprintf(f, "launch: %s\n", p->launch == KP_LAUNCH_GRAPH ? "one CUDA graph, kernels in plan order"
                                                                 : "one CUDA graph, edges only where kernels share a written variable");
    if (p->nzero) {
        fprintf(f, "zero-fill:");
        for (int i = 0; i < p->nzero; i++) fprintf(f, " %s", var_names[p->zero_vars[i]]);
        fputc('\n', f);
    }
    for (int i = 0; i < p->nkernels; i++) {
        const kp_kernel *k = &p->kernels[i];
        fprintf(f, "%2d. %-28s %-9s %s grid=", i + 1, k->name, kp_category_name(k->category),
                k->backward ? "bwd" : "fwd");
        if (k->grid_kind == KGRID_TILES)
            fprintf(f, "tiles(%s/%d)/%d", rowset_name(k->tile_rowset), k->tile_rows,
                    k->rows_per_block > 0 ? k->rows_per_block : 1);
        else if (k->grid_kind == KGRID_ROWS) fprintf(f, "ceil(%s/%d)", size_name(k->grid_rows_size), k->rows_per_block);
        else fprintf(f, "%d", k->grid_x_fixed);
        fprintf(f, "x%dx%d block=%dx%d shmem=%d\n", k->grid_y, k->grid_z, k->block_x, k->block_y, k->shmem_bytes);
        if (p->launch == KP_LAUNCH_DAG) print_dag_deps(p, i, f);
        fputs("     args:", f);
        for (int j = 0; j < k->nparams; j++) {
            const kp_param *q = &k->params[j];
            switch (q->kind) {
            case KP_VAR: fprintf(f, " %s=%s", q->name, var_names[q->id]); break;
            case KP_VAR_IN: fprintf(f, " %s=%s@in", q->name, var_names[q->id]); break;
            case KP_GRAPH: fprintf(f, " %s=graph.%s", q->name, kp_graph_array_name((kp_graph_array)q->id)); break;
            case KP_WORK:
                fprintf(f, " %s=work(%s: %d a node, %d a slot of %lld edges)", q->name, var_names[q->id], q->work_node,
                        q->work_row, (long long)q->ival);
                break;
            case KP_TILE_TYPE: case KP_TILE_ROW0:
                fprintf(f, " %s=tiles(%s/%lld)", q->name, rowset_name(q->id), (long long)q->ival); break;
            case KP_INT:
                if (q->id >= 0) fprintf(f, " %s=#%s", q->name, size_name(q->id));
                else fprintf(f, " %s=%lld", q->name, (long long)q->ival);
                break;
            }
        }
        fputc('\n', f);
    }
}
