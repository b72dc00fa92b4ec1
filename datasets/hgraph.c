/* The typed heterogeneous graph every module works on: node types presorted into
 * segments, COO sorted by edge type, CSR both ways, and the compact-materialization maps. */
#include "datasets/hgraph.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct { int32_t *v; int64_t n, cap; } i32vec;

static void i32vec_reserve(i32vec *a, int64_t cap)
{
    if (cap <= a->cap) return;
    a->v = rg_xrealloc(a->v, (size_t)cap * sizeof *a->v);
    a->cap = cap;
}

static void i32vec_push(i32vec *a, int32_t x)
{
    if (a->n == a->cap) i32vec_reserve(a, a->cap ? a->cap * 2 : 1024);
    a->v[a->n++] = x;
}

struct hg_builder {
    char *name;
    int32_t num_ntypes, ntype_cap;
    char **ntype_names;
    int64_t *ntype_count;
    int32_t num_etypes, etype_cap;
    char **etype_names;
    int32_t *etype_src, *etype_dst;
    i32vec e_type, e_src, e_dst;   /* type-local ids until hgb_finish */
};

hg_builder *hgb_new(const char *name)
{
    hg_builder *b = rg_xcalloc(1, sizeof *b);
    b->name = rg_xstrdup(name);
    return b;
}

int32_t hgb_ntype(hg_builder *b, const char *name)
{
    for (int32_t i = 0; i < b->num_ntypes; i++)
        if (strcmp(b->ntype_names[i], name) == 0) return i;
    if (b->num_ntypes == b->ntype_cap) {
        b->ntype_cap = b->ntype_cap ? 2 * b->ntype_cap : 8;
        b->ntype_names = rg_xrealloc(b->ntype_names, (size_t)b->ntype_cap * sizeof(char *));
        b->ntype_count = rg_xrealloc(b->ntype_count, (size_t)b->ntype_cap * sizeof(int64_t));
    }
    b->ntype_names[b->num_ntypes] = rg_xstrdup(name);
    b->ntype_count[b->num_ntypes] = 0;
    return b->num_ntypes++;
}

void hgb_ntype_count_at_least(hg_builder *b, int32_t ntype, int64_t count)
{
    RG_ASSERT(ntype >= 0 && ntype < b->num_ntypes);
    if (b->ntype_count[ntype] < count) b->ntype_count[ntype] = count;
}

int32_t hgb_etype(hg_builder *b, const char *rel, int32_t src_ntype, int32_t dst_ntype)
{
    RG_ASSERT(src_ntype >= 0 && src_ntype < b->num_ntypes);
    RG_ASSERT(dst_ntype >= 0 && dst_ntype < b->num_ntypes);
    for (int32_t i = 0; i < b->num_etypes; i++)
        if (b->etype_src[i] == src_ntype && b->etype_dst[i] == dst_ntype &&
            strcmp(b->etype_names[i], rel) == 0)
            return i;
    if (b->num_etypes == b->etype_cap) {
        b->etype_cap = b->etype_cap ? 2 * b->etype_cap : 16;
        b->etype_names = rg_xrealloc(b->etype_names, (size_t)b->etype_cap * sizeof(char *));
        b->etype_src = rg_xrealloc(b->etype_src, (size_t)b->etype_cap * sizeof(int32_t));
        b->etype_dst = rg_xrealloc(b->etype_dst, (size_t)b->etype_cap * sizeof(int32_t));
    }
    b->etype_names[b->num_etypes] = rg_xstrdup(rel);
    b->etype_src[b->num_etypes] = src_ntype;
    b->etype_dst[b->num_etypes] = dst_ntype;
    return b->num_etypes++;
}

void hgb_reserve(hg_builder *b, int64_t edges)
{
    i32vec_reserve(&b->e_type, edges);
    i32vec_reserve(&b->e_src, edges);
    i32vec_reserve(&b->e_dst, edges);
}

void hgb_add_edge(hg_builder *b, int32_t etype, int64_t src_local, int64_t dst_local)
{
    RG_ASSERT(etype >= 0 && etype < b->num_etypes);
    RG_ASSERT(src_local >= 0 && src_local < INT32_MAX && dst_local >= 0 && dst_local < INT32_MAX);
    i32vec_push(&b->e_type, etype);
    i32vec_push(&b->e_src, (int32_t)src_local);
    i32vec_push(&b->e_dst, (int32_t)dst_local);
    hgb_ntype_count_at_least(b, b->etype_src[etype], src_local + 1);
    hgb_ntype_count_at_least(b, b->etype_dst[etype], dst_local + 1);
}

int64_t hgb_num_edges(const hg_builder *b) { return b->e_type.n; }

void hgb_free(hg_builder *b)
{
    if (!b) return;
    for (int32_t i = 0; i < b->num_ntypes; i++) free(b->ntype_names[i]);
    for (int32_t i = 0; i < b->num_etypes; i++) free(b->etype_names[i]);
    free(b->ntype_names);
    free(b->ntype_count);
    free(b->etype_names);
    free(b->etype_src);
    free(b->etype_dst);
    free(b->e_type.v);
    free(b->e_src.v);
    free(b->e_dst.v);
    free(b->name);
    free(b);
}

/* Stable counting sort of `perm` by key[perm[i]] in [0, nkeys); `tmp` is scratch. */
static void counting_sort(int32_t *perm, int32_t *tmp, int64_t n, const int32_t *key, int32_t nkeys)
{
    int64_t *count = rg_xcalloc((size_t)nkeys + 1, sizeof *count);
    for (int64_t i = 0; i < n; i++) count[key[perm[i]] + 1]++;
    for (int32_t k = 0; k < nkeys; k++) count[k + 1] += count[k];
    for (int64_t i = 0; i < n; i++) tmp[count[key[perm[i]]]++] = perm[i];
    memcpy(perm, tmp, (size_t)n * sizeof *perm);
    free(count);
}

static void apply_perm(int32_t *a, const int32_t *perm, int32_t *tmp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) tmp[i] = a[perm[i]];
    memcpy(a, tmp, (size_t)n * sizeof *a);
}

/* CSR of edge ids grouped by key (dst or src), ascending edge id inside a row. */
static void build_csr(int32_t n_rows, int32_t n_edges, const int32_t *key, int32_t **ptr_out, int32_t **eid_out)
{
    int32_t *ptr = rg_xcalloc((size_t)n_rows + 1, sizeof *ptr);
    int32_t *eid = rg_xmalloc((size_t)n_edges * sizeof *eid);
    for (int32_t e = 0; e < n_edges; e++) ptr[key[e] + 1]++;
    for (int32_t v = 0; v < n_rows; v++) ptr[v + 1] += ptr[v];
    int32_t *fill = rg_xmalloc((size_t)n_rows * sizeof *fill);
    memcpy(fill, ptr, (size_t)n_rows * sizeof *fill);
    for (int32_t e = 0; e < n_edges; e++) eid[fill[key[e]]++] = e;
    free(fill);
    *ptr_out = ptr;
    *eid_out = eid;
}

/* Edges are sorted by (etype, src), so unique pairs are contiguous runs. */
static void build_compaction(hg_graph *g)
{
    int32_t n = 0;
    g->edge_compact = rg_xmalloc((size_t)g->num_edges * sizeof(int32_t));
    g->unique_etype_ptr = rg_xcalloc((size_t)g->num_etypes + 1, sizeof(int32_t));
    for (int32_t e = 0; e < g->num_edges; e++) {
        if (e == 0 || g->etype[e] != g->etype[e - 1] || g->src[e] != g->src[e - 1]) n++;
        g->edge_compact[e] = n - 1;
    }
    g->num_unique = n;
    g->unique_src = rg_xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    for (int32_t e = 0; e < g->num_edges; e++) {
        g->unique_src[g->edge_compact[e]] = g->src[e];
    }
    for (int32_t r = 0; r < g->num_etypes; r++) {
        int32_t end = g->etype_ptr[r + 1];
        g->unique_etype_ptr[r + 1] = end > g->etype_ptr[r] ? g->edge_compact[end - 1] + 1
                                                          : g->unique_etype_ptr[r];
    }
}

void hg_build_derived(hg_graph *g)
{
    RG_ASSERT(g->mapping == NULL);
    build_csr(g->num_nodes, g->num_edges, g->dst, &g->in_ptr, &g->in_eid);
    build_csr(g->num_nodes, g->num_edges, g->src, &g->out_ptr, &g->out_eid);
    build_compaction(g);
}

static void add_reverse_types(hg_builder *b)
{
    int32_t nrel = b->num_etypes;
    int64_t ne = b->e_type.n;
    for (int32_t r = 0; r < nrel; r++) {
        char *name = rg_xasprintf("rev-%s", b->etype_names[r]);
        /* Appended directly (not via hgb_etype) so that a relation already named rev-x
         * in the data still gets its own reverse id r + R, as in DGL. */
        if (b->num_etypes == b->etype_cap) {
            b->etype_cap *= 2;
            b->etype_names = rg_xrealloc(b->etype_names, (size_t)b->etype_cap * sizeof(char *));
            b->etype_src = rg_xrealloc(b->etype_src, (size_t)b->etype_cap * sizeof(int32_t));
            b->etype_dst = rg_xrealloc(b->etype_dst, (size_t)b->etype_cap * sizeof(int32_t));
        }
        b->etype_names[b->num_etypes] = name;
        b->etype_src[b->num_etypes] = b->etype_dst[r];
        b->etype_dst[b->num_etypes] = b->etype_src[r];
        b->num_etypes++;
    }
    hgb_reserve(b, 2 * ne);
    for (int64_t i = 0; i < ne; i++) {
        b->e_type.v[ne + i] = b->e_type.v[i] + nrel;
        b->e_src.v[ne + i] = b->e_dst.v[i];
        b->e_dst.v[ne + i] = b->e_src.v[i];
    }
    b->e_type.n = b->e_src.n = b->e_dst.n = 2 * ne;
}

int64_t hg_plausible_nodes(int64_t edges)
{
    RG_ASSERT(edges >= 0);
    int64_t per_edge = edges > INT64_MAX / HG_PLAUSIBLE_IDS_PER_EDGE ? INT64_MAX : edges * HG_PLAUSIBLE_IDS_PER_EDGE;
    return per_edge > HG_PLAUSIBLE_IDS_MIN ? per_edge : HG_PLAUSIBLE_IDS_MIN;
}

/* Every node type within hg_plausible_nodes of the edges read; -1 with a message naming the
 * first that is not. */
static int check_plausible(const hg_builder *b, rg_err *err)
{
    int64_t limit = hg_plausible_nodes(b->e_type.n);
    for (int32_t t = 0; t < b->num_ntypes; t++)
        if (b->ntype_count[t] > limit)
            return rg_errf(err, "graph '%s': node type '%s' would have %lld nodes for %lld edges, more than "
                           "max(2^24, %d x edges) = %lld: an id or a node count in the input must be corrupt",
                           b->name, b->ntype_names[t], (long long)b->ntype_count[t], (long long)b->e_type.n,
                           HG_PLAUSIBLE_IDS_PER_EDGE, (long long)limit);
    return 0;
}

hg_graph *hgb_finish(hg_builder *b, int add_reverse, rg_err *err)
{
    if (check_plausible(b, err) != 0) {
        hgb_free(b);
        return NULL;
    }
    if (add_reverse && b->num_etypes > 0) add_reverse_types(b);
    int64_t total_nodes = 0;
    for (int32_t t = 0; t < b->num_ntypes; t++) total_nodes += b->ntype_count[t];
    int64_t ne = b->e_type.n;
    if (ne == 0 || total_nodes == 0) {
        rg_errf(err, "graph '%s' is empty (%lld nodes, %lld edges): nothing to run on",
                b->name, (long long)total_nodes, (long long)ne);
        hgb_free(b);
        return NULL;
    }
    if (total_nodes >= INT32_MAX || ne >= INT32_MAX) {
        rg_errf(err, "graph '%s' is too large for 32-bit ids (%lld nodes, %lld edges)",
                b->name, (long long)total_nodes, (long long)ne);
        hgb_free(b);
        return NULL;
    }
    hg_graph *g = rg_xcalloc(1, sizeof *g);
    g->name = b->name;
    b->name = NULL;
    g->num_ntypes = b->num_ntypes;
    g->ntype_names = b->ntype_names;
    g->ntype_ptr = rg_xcalloc((size_t)g->num_ntypes + 1, sizeof(int32_t));
    for (int32_t t = 0; t < g->num_ntypes; t++)
        g->ntype_ptr[t + 1] = g->ntype_ptr[t] + (int32_t)b->ntype_count[t];
    g->num_nodes = g->ntype_ptr[g->num_ntypes];
    g->num_etypes = b->num_etypes;
    g->etype_names = b->etype_names;
    g->etype_src = b->etype_src;
    g->etype_dst = b->etype_dst;
    g->num_edges = (int32_t)ne;
    g->src = b->e_src.v;
    g->dst = b->e_dst.v;
    g->etype = b->e_type.v;
    /* local -> global ids */
    for (int64_t i = 0; i < ne; i++) {
        g->src[i] += g->ntype_ptr[g->etype_src[g->etype[i]]];
        g->dst[i] += g->ntype_ptr[g->etype_dst[g->etype[i]]];
    }
    /* LSD radix: by src, then stably by etype. */
    int32_t *perm = rg_xmalloc((size_t)ne * sizeof *perm), *tmp = rg_xmalloc((size_t)ne * sizeof *tmp);
    for (int64_t i = 0; i < ne; i++) perm[i] = (int32_t)i;
    counting_sort(perm, tmp, ne, g->src, g->num_nodes);
    counting_sort(perm, tmp, ne, g->etype, g->num_etypes);
    apply_perm(g->src, perm, tmp, ne);
    apply_perm(g->dst, perm, tmp, ne);
    apply_perm(g->etype, perm, tmp, ne);
    free(perm);
    free(tmp);
    g->etype_ptr = rg_xcalloc((size_t)g->num_etypes + 1, sizeof(int32_t));
    for (int64_t i = 0; i < ne; i++) g->etype_ptr[g->etype[i] + 1]++;
    for (int32_t r = 0; r < g->num_etypes; r++) g->etype_ptr[r + 1] += g->etype_ptr[r];
    /* hand ownership over, then drop the builder shell */
    b->ntype_names = NULL;
    b->etype_names = NULL;
    b->etype_src = b->etype_dst = NULL;
    b->e_src.v = b->e_dst.v = b->e_type.v = NULL;
    b->num_ntypes = b->num_etypes = 0;
    hgb_free(b);
    hg_build_derived(g);
    return g;
}

static void free_arrays(hg_graph *g)
{
    free(g->ntype_ptr);
    free(g->etype_src);
    free(g->etype_dst);
    free(g->src);
    free(g->dst);
    free(g->etype);
    free(g->etype_ptr);
    free(g->in_ptr);
    free(g->in_eid);
    free(g->out_ptr);
    free(g->out_eid);
    free(g->unique_src);
    free(g->unique_etype_ptr);
    free(g->edge_compact);
}

void hg_free(hg_graph *g)
{
    if (!g) return;
    for (int32_t i = 0; i < g->num_ntypes; i++) free(g->ntype_names[i]);
    for (int32_t i = 0; i < g->num_etypes; i++) free(g->etype_names[i]);
    free(g->ntype_names);
    free(g->etype_names);
    free(g->name);
    if (!g->mapping) free_arrays(g);
    else if (munmap(g->mapping, g->mapping_bytes) != 0) RG_DIE("munmap of a graph cache mapping failed");
    free(g);
}

static double skewness(double *x, size_t n)
{
    if (n < 3) return 0.0;
    double sd = gsl_stats_sd(x, 1, n);
    return sd > 0 ? gsl_stats_skew(x, 1, n) : 0.0;
}

void hg_stats_compute(const hg_graph *g, hg_stats *s)
{
    memset(s, 0, sizeof *s);
    s->nodes = g->num_nodes;
    s->edges = g->num_edges;
    s->unique_pairs = g->num_unique;
    s->node_types = g->num_ntypes;
    s->edge_types = g->num_etypes;
    s->avg_degree = g->num_nodes ? (double)g->num_edges / g->num_nodes : 0;
    s->density = g->num_nodes ? (double)g->num_edges / ((double)g->num_nodes * g->num_nodes) : 0;
    s->compaction_ratio = g->num_edges ? (double)g->num_unique / g->num_edges : 0;
    double *rel = rg_xmalloc((size_t)g->num_etypes * sizeof *rel);
    for (int32_t r = 0; r < g->num_etypes; r++) rel[r] = g->etype_ptr[r + 1] - g->etype_ptr[r];
    gsl_sort(rel, 1, (size_t)g->num_etypes);
    s->rel_min = (int64_t)rel[0];
    s->rel_max = (int64_t)rel[g->num_etypes - 1];
    s->rel_median = gsl_stats_median_from_sorted_data(rel, 1, (size_t)g->num_etypes);
    s->rel_skew = skewness(rel, (size_t)g->num_etypes);
    free(rel);
    double *deg = rg_xmalloc((size_t)g->num_nodes * sizeof *deg);
    for (int32_t v = 0; v < g->num_nodes; v++) {
        deg[v] = g->in_ptr[v + 1] - g->in_ptr[v];
        if (deg[v] > s->max_in_degree) s->max_in_degree = (int64_t)deg[v];
    }
    s->in_degree_skew = skewness(deg, (size_t)g->num_nodes);
    free(deg);
}

int32_t hg_ntype_of(const hg_graph *g, int32_t node)
{
    int32_t lo = 0, hi = g->num_ntypes - 1;
    while (lo < hi) {
        int32_t mid = (lo + hi + 1) / 2;
        if (g->ntype_ptr[mid] <= node) lo = mid; else hi = mid - 1;
    }
    return lo;
}

int32_t hg_compact_lookup(const hg_graph *g, int32_t src, int32_t etype)
{
    int32_t lo = g->unique_etype_ptr[etype], hi = g->unique_etype_ptr[etype + 1] - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (g->unique_src[mid] == src) return mid;
        if (g->unique_src[mid] < src) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

static int check_csr(const hg_graph *g, const int32_t *ptr, const int32_t *eid, const int32_t *key,
                     const char *what, rg_err *err)
{
    if (ptr[0] != 0 || ptr[g->num_nodes] != g->num_edges)
        return rg_errf(err, "%s CSR does not cover all edges", what);
    for (int32_t v = 0; v < g->num_nodes; v++) {
        if (ptr[v + 1] < ptr[v]) return rg_errf(err, "%s CSR row pointer decreases at node %d", what, v);
        for (int32_t i = ptr[v]; i < ptr[v + 1]; i++) {
            int32_t e = eid[i];
            if (e < 0 || e >= g->num_edges || key[e] != v)
                return rg_errf(err, "%s CSR row %d holds edge %d of another node", what, v, e);
            if (i > ptr[v] && eid[i - 1] >= e)
                return rg_errf(err, "%s CSR row %d is not ascending", what, v);
        }
    }
    return 0;
}

int hg_validate(const hg_graph *g, rg_err *err)
{
    if (g->num_nodes <= 0 || g->num_edges <= 0) return rg_errf(err, "empty graph");
    if (g->ntype_ptr[0] != 0 || g->ntype_ptr[g->num_ntypes] != g->num_nodes)
        return rg_errf(err, "node type segments do not cover all nodes");
    if (g->etype_ptr[0] != 0 || g->etype_ptr[g->num_etypes] != g->num_edges)
        return rg_errf(err, "edge type segments do not cover all edges");
    for (int32_t r = 0; r < g->num_etypes; r++) {
        if (g->etype_src[r] < 0 || g->etype_src[r] >= g->num_ntypes ||
            g->etype_dst[r] < 0 || g->etype_dst[r] >= g->num_ntypes)
            return rg_errf(err, "edge type %d has an invalid node type", r);
        for (int32_t e = g->etype_ptr[r]; e < g->etype_ptr[r + 1]; e++) {
            if (g->etype[e] != r) return rg_errf(err, "edge %d is outside its type segment", e);
            if (g->src[e] < g->ntype_ptr[g->etype_src[r]] || g->src[e] >= g->ntype_ptr[g->etype_src[r] + 1] ||
                g->dst[e] < g->ntype_ptr[g->etype_dst[r]] || g->dst[e] >= g->ntype_ptr[g->etype_dst[r] + 1])
                return rg_errf(err, "edge %d joins nodes of the wrong types for its relation", e);
            if (e > g->etype_ptr[r] && g->src[e] < g->src[e - 1])
                return rg_errf(err, "edge %d breaks the (etype, src) order", e);
        }
    }
    if (check_csr(g, g->in_ptr, g->in_eid, g->dst, "incoming", err)) return -1;
    if (check_csr(g, g->out_ptr, g->out_eid, g->src, "outgoing", err)) return -1;
    if (g->unique_etype_ptr[0] != 0 || g->unique_etype_ptr[g->num_etypes] != g->num_unique)
        return rg_errf(err, "compact segments do not cover all unique pairs");
    for (int32_t e = 0; e < g->num_edges; e++) {
        int32_t u = g->edge_compact[e];
        if (u < g->unique_etype_ptr[g->etype[e]] || u >= g->unique_etype_ptr[g->etype[e] + 1] ||
            g->unique_src[u] != g->src[e])
            return rg_errf(err, "edge %d has a wrong compact row", e);
    }
    for (int32_t r = 0; r < g->num_etypes; r++)
        for (int32_t u = g->unique_etype_ptr[r] + 1; u < g->unique_etype_ptr[r + 1]; u++)
            if (g->unique_src[u] <= g->unique_src[u - 1])
                return rg_errf(err, "compact group %d is not strictly ascending", r);
    return 0;
}
