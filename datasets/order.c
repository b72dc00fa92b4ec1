/* Node orderings for locality: a permutation of node ids within each node type (by degree, or
 * breadth-first), and the graph relabelled by it, every array rebuilt to the same invariants. */
#include "datasets/order.h"

#include <stdlib.h>
#include <string.h>

static int32_t degree(const hg_graph *g, int32_t n)
{
    return g->in_ptr[n + 1] - g->in_ptr[n] + g->out_ptr[n + 1] - g->out_ptr[n];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every node, by descending degree then ascending id: one sort of packed keys. */
static int32_t *by_degree(const hg_graph *g)
{
    int32_t N = g->num_nodes, maxdeg = 0;
    for (int32_t n = 0; n < N; n++)
        if (degree(g, n) > maxdeg) maxdeg = degree(g, n);
    uint64_t *key = rg_xmalloc(((size_t)N + 1) * sizeof *key);
    for (int32_t n = 0; n < N; n++) key[n] = (uint64_t)(uint32_t)(maxdeg - degree(g, n)) << 32 | (uint32_t)n;
    qsort(key, (size_t)N, sizeof *key, cmp_u64);
    int32_t *seq = rg_xmalloc(((size_t)N + 1) * sizeof *seq);
    for (int32_t i = 0; i < N; i++) seq[i] = (int32_t)(key[i] & 0xffffffffu);
    free(key);
    return seq;
}

/* Every node in breadth-first order over both edge directions; each search starts from the
 * first node of `starts` (by degree) not reached yet. */
static int32_t *breadth_first(const hg_graph *g, const int32_t *starts)
{
    int32_t N = g->num_nodes, head = 0, tail = 0;
    int32_t *seq = rg_xmalloc(((size_t)N + 1) * sizeof *seq);
    char *seen = rg_xcalloc((size_t)N + 1, 1);
    for (int32_t s = 0; s < N; s++) {
        if (seen[starts[s]]) continue;
        seen[starts[s]] = 1;
        seq[tail++] = starts[s];
        while (head < tail) {
            int32_t n = seq[head++];
            for (int32_t q = g->out_ptr[n]; q < g->out_ptr[n + 1]; q++) {
                int32_t m = g->dst[g->out_eid[q]];
                if (!seen[m]) seen[m] = 1, seq[tail++] = m;
            }
            for (int32_t q = g->in_ptr[n]; q < g->in_ptr[n + 1]; q++) {
                int32_t m = g->src[g->in_eid[q]];
                if (!seen[m]) seen[m] = 1, seq[tail++] = m;
            }
        }
    }
    RG_ASSERT(tail == N);
    free(seen);
    return seq;
}

int32_t *ord_compute(const hg_graph *g, ord_kind kind)
{
    int32_t N = g->num_nodes;
    int32_t *old_of = rg_xmalloc(((size_t)N + 1) * sizeof *old_of);
    if (kind == ORD_ORIG) {
        for (int32_t n = 0; n < N; n++) old_of[n] = n;
        return old_of;
    }
    RG_ASSERT(kind == ORD_DEGREE || kind == ORD_BFS);
    int32_t *seq = by_degree(g);
    if (kind == ORD_BFS) {
        int32_t *bfs = breadth_first(g, seq);
        free(seq);
        seq = bfs;
    }
    /* the global sequence dealt into each type's id range, keeping its order */
    int32_t *next = rg_xmalloc(((size_t)g->num_ntypes + 1) * sizeof *next);
    memcpy(next, g->ntype_ptr, (size_t)g->num_ntypes * sizeof *next);
    for (int32_t i = 0; i < N; i++) old_of[next[hg_ntype_of(g, seq[i])]++] = seq[i];
    free(next);
    free(seq);
    return old_of;
}

int ord_check(const hg_graph *g, const int32_t *old_of, rg_err *err)
{
    char *hit = rg_xcalloc((size_t)g->num_nodes + 1, 1);
    int rc = 0;
    for (int32_t n = 0; n < g->num_nodes && !rc; n++) {
        int32_t o = old_of[n];
        if (o < 0 || o >= g->num_nodes || hit[o])
            rc = rg_errf(err, "node order: new node %d carries node %d, %s", n, o,
                         o < 0 || o >= g->num_nodes ? "not a node" : "which another node carries too");
        else if (hg_ntype_of(g, o) != hg_ntype_of(g, n))
            rc = rg_errf(err, "node order: new node %d (type %d) carries node %d of type %d", n, hg_ntype_of(g, n), o,
                         hg_ntype_of(g, o));
        else
            hit[o] = 1;
    }
    free(hit);
    return rc;
}

static char **copy_names(char *const *names, int32_t n)
{
    char **out = rg_xcalloc((size_t)n + 1, sizeof *out);
    for (int32_t i = 0; i < n; i++) out[i] = rg_xstrdup(names[i] ? names[i] : "");
    return out;
}

static int32_t *copy_ints(const int32_t *a, int64_t n)
{
    int32_t *out = rg_xmalloc(((size_t)n + 1) * sizeof *out);
    memcpy(out, a, (size_t)n * sizeof *out);
    return out;
}

/* The edge order of the relabelled graph (new position -> old edge id): within each etype
 * segment, a stable counting sort by the new source id, whose range is the source type's. */
static int32_t *edge_order(const hg_graph *g, const int32_t *new_of)
{
    int32_t widest = 0;
    for (int32_t t = 0; t < g->num_ntypes; t++)
        if (g->ntype_ptr[t + 1] - g->ntype_ptr[t] > widest) widest = g->ntype_ptr[t + 1] - g->ntype_ptr[t];
    int32_t *count = rg_xmalloc(((size_t)widest + 1) * sizeof *count);
    int32_t *order = rg_xmalloc(((size_t)g->num_edges + 1) * sizeof *order);
    for (int32_t r = 0; r < g->num_etypes; r++) {
        int32_t lo = g->etype_ptr[r], hi = g->etype_ptr[r + 1], base = g->ntype_ptr[g->etype_src[r]];
        int32_t width = g->ntype_ptr[g->etype_src[r] + 1] - base;
        memset(count, 0, ((size_t)width + 1) * sizeof *count);
        for (int32_t e = lo; e < hi; e++) count[new_of[g->src[e]] - base + 1]++;
        for (int32_t k = 0; k < width; k++) count[k + 1] += count[k];
        for (int32_t e = lo; e < hi; e++) order[lo + count[new_of[g->src[e]] - base]++] = e;
    }
    free(count);
    return order;
}

hg_graph *ord_relabel(const hg_graph *g, const int32_t *old_of, int32_t **edge_old_of)
{
    int32_t N = g->num_nodes, E = g->num_edges;
    int32_t *new_of = rg_xmalloc(((size_t)N + 1) * sizeof *new_of);
    for (int32_t n = 0; n < N; n++) new_of[old_of[n]] = n;
    hg_graph *r = rg_xcalloc(1, sizeof *r);
    r->name = rg_xstrdup(g->name ? g->name : "");
    r->num_ntypes = g->num_ntypes;
    r->ntype_names = copy_names(g->ntype_names, g->num_ntypes);
    r->ntype_ptr = copy_ints(g->ntype_ptr, (int64_t)g->num_ntypes + 1);
    r->num_nodes = N;
    r->num_etypes = g->num_etypes;
    r->etype_names = copy_names(g->etype_names, g->num_etypes);
    r->etype_src = copy_ints(g->etype_src, g->num_etypes);
    r->etype_dst = copy_ints(g->etype_dst, g->num_etypes);
    r->etype_ptr = copy_ints(g->etype_ptr, (int64_t)g->num_etypes + 1);   /* segments keep their edges */
    r->num_edges = E;
    int32_t *order = edge_order(g, new_of);
    r->src = rg_xmalloc(((size_t)E + 1) * sizeof *r->src);
    r->dst = rg_xmalloc(((size_t)E + 1) * sizeof *r->dst);
    r->etype = rg_xmalloc(((size_t)E + 1) * sizeof *r->etype);
    for (int32_t e = 0; e < E; e++) {
        r->src[e] = new_of[g->src[order[e]]];
        r->dst[e] = new_of[g->dst[order[e]]];
        r->etype[e] = g->etype[order[e]];
    }
    free(new_of);
    hg_build_derived(r);
    if (edge_old_of) *edge_old_of = order;
    else free(order);
    return r;
}
