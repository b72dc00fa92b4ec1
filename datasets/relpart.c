/* Relation partitioning for layers spread over several GPUs: balanced ownership of edge
 * types (longest-processing-time-first) and the per-rank subgraph with its edge-id map. */
#include "datasets/relpart.h"

#include <stdlib.h>
#include <string.h>

static const char *const method_names[RLP__COUNT] = {"edges", "count", "rows"};

const char *rlp_method_name(rlp_method m)
{
    RG_ASSERT(m >= 0 && m < RLP__COUNT);
    return method_names[m];
}

int rlp_parse_method(const char *s, rlp_method *out, rg_err *err)
{
    for (int m = 0; m < RLP__COUNT; m++)
        if (strcmp(s, method_names[m]) == 0) {
            *out = (rlp_method)m;
            return 0;
        }
    return rg_errf(err, "unknown partition method '%s' (edges, count or rows)", s);
}

static int64_t relation_edges(const hg_graph *g, int32_t r) { return g->etype_ptr[r + 1] - g->etype_ptr[r]; }

static int64_t relation_unique(const hg_graph *g, int32_t r)
{
    return g->unique_etype_ptr[r + 1] - g->unique_etype_ptr[r];
}

static double relation_weight(const hg_graph *g, int32_t r, rlp_method m)
{
    if (relation_edges(g, r) == 0) return 0;
    switch (m) {
    case RLP_COUNT: return 1;
    case RLP_EDGES: return (double)relation_edges(g, r);
    case RLP_ROWS: return (double)(relation_edges(g, r) + relation_unique(g, r));
    default: RG_DIE("bad partition method %d", (int)m);
    }
}

typedef struct weighted_rel {
    double w;
    int32_t r;
} weighted_rel;

static int by_weight_desc(const void *a, const void *b)
{
    const weighted_rel *x = a, *y = b;
    if (x->w != y->w) return x->w > y->w ? -1 : 1;
    return x->r < y->r ? -1 : x->r > y->r;
}

int rlp_partition(const hg_graph *g, int nranks, rlp_method m, int32_t *owner, rg_err *err)
{
    if (nranks < 1) return rg_errf(err, "a partition needs at least one rank (got %d)", nranks);
    int32_t with_edges = 0;
    for (int32_t r = 0; r < g->num_etypes; r++) with_edges += relation_edges(g, r) > 0;
    if (with_edges < nranks)
        return rg_errf(err, "%s has %d relations with edges, fewer than the %d ranks asked for", g->name,
                       (int)with_edges, nranks);
    weighted_rel *order = rg_xmalloc((size_t)(g->num_etypes ? g->num_etypes : 1) * sizeof *order);
    for (int32_t r = 0; r < g->num_etypes; r++) order[r] = (weighted_rel){relation_weight(g, r, m), r};
    qsort(order, (size_t)g->num_etypes, sizeof *order, by_weight_desc);
    double *load = rg_xcalloc((size_t)nranks, sizeof *load);
    int *count = rg_xcalloc((size_t)nranks, sizeof *count);
    for (int32_t i = 0; i < g->num_etypes; i++) {
        int best = 0;
        /* an empty relation goes to rank 0; among equal loads the rank with fewer relations
         * wins, so that every rank gets one relation before any gets a second */
        for (int k = 1; k < nranks && order[i].w > 0; k++)
            if (load[k] < load[best] || (load[k] == load[best] && count[k] < count[best])) best = k;
        owner[order[i].r] = best;
        load[best] += order[i].w;
        count[best] += order[i].w > 0;
    }
    free(order);
    free(load);
    free(count);
    return 0;
}

void rlp_loads(const hg_graph *g, const int32_t *owner, int nranks, rlp_method m, double *load)
{
    memset(load, 0, (size_t)nranks * sizeof *load);
    for (int32_t r = 0; r < g->num_etypes; r++) {
        RG_ASSERT(owner[r] >= 0 && owner[r] < nranks);
        load[owner[r]] += relation_weight(g, r, m);
    }
}

static char **copy_names(char *const *names, int32_t n)
{
    char **out = rg_xcalloc((size_t)(n ? n : 1), sizeof *out);
    for (int32_t i = 0; i < n; i++) out[i] = rg_xstrdup(names[i]);
    return out;
}

static int32_t *copy_ints(const int32_t *v, int64_t n)
{
    int32_t *out = rg_xmalloc((size_t)(n ? n : 1) * sizeof *out);
    if (n) memcpy(out, v, (size_t)n * sizeof *out);
    return out;
}

/* The owned edges of g in their order (g's COO is sorted by (etype, src), so the subset is
 * too), with the per-relation segments. */
static void copy_owned_edges(const hg_graph *g, const int32_t *owner, int rank, hg_graph *s, int32_t *orig)
{
    int32_t n = 0;
    s->etype_ptr = rg_xcalloc((size_t)g->num_etypes + 1, sizeof(int32_t));
    for (int32_t r = 0; r < g->num_etypes; r++) {
        if (owner[r] == rank)
            for (int32_t e = g->etype_ptr[r]; e < g->etype_ptr[r + 1]; e++) {
                s->src[n] = g->src[e];
                s->dst[n] = g->dst[e];
                s->etype[n] = r;
                orig[n++] = e;
            }
        s->etype_ptr[r + 1] = n;
    }
}

hg_graph *rlp_subgraph(const hg_graph *g, const int32_t *owner, int rank, int32_t **orig_eid, rg_err *err)
{
    int64_t ne = 0;
    for (int32_t r = 0; r < g->num_etypes; r++)
        if (owner[r] == rank) ne += relation_edges(g, r);
    if (ne == 0) {
        rg_errf(err, "rank %d owns no edge of %s", rank, g->name);
        return NULL;
    }
    hg_graph *s = rg_xcalloc(1, sizeof *s);
    s->name = rg_xasprintf("%s[rank %d]", g->name, rank);
    s->num_ntypes = g->num_ntypes;
    s->ntype_names = copy_names(g->ntype_names, g->num_ntypes);
    s->ntype_ptr = copy_ints(g->ntype_ptr, (int64_t)g->num_ntypes + 1);
    s->num_nodes = g->num_nodes;
    s->num_etypes = g->num_etypes;
    s->etype_names = copy_names(g->etype_names, g->num_etypes);
    s->etype_src = copy_ints(g->etype_src, g->num_etypes);
    s->etype_dst = copy_ints(g->etype_dst, g->num_etypes);
    s->num_edges = (int32_t)ne;
    s->src = rg_xmalloc((size_t)ne * sizeof(int32_t));
    s->dst = rg_xmalloc((size_t)ne * sizeof(int32_t));
    s->etype = rg_xmalloc((size_t)ne * sizeof(int32_t));
    int32_t *orig = rg_xmalloc((size_t)ne * sizeof *orig);
    copy_owned_edges(g, owner, rank, s, orig);
    hg_build_derived(s);
    *orig_eid = orig;
    return s;
}
