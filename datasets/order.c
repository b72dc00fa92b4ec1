/* Node orderings for locality: a permutation of node ids within each node type (by degree,
 * breadth-first, RCM, first touch), the graph relabelled by it, and a simulated gather cache. */
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

/* Per node, in + out degree: the key of every degree-ordered choice below. */
static int32_t *degrees(const hg_graph *g)
{
    int32_t *deg = rg_xmalloc(((size_t)g->num_nodes + 1) * sizeof *deg);
    for (int32_t n = 0; n < g->num_nodes; n++) deg[n] = degree(g, n);
    return deg;
}

/* Every node by degree, descending or ascending, ties by ascending id: a stable counting sort,
 * O(N + largest degree). */
static int32_t *by_degree(const hg_graph *g, const int32_t *deg, int descending)
{
    int32_t N = g->num_nodes, maxdeg = 0;
    for (int32_t n = 0; n < N; n++)
        if (deg[n] > maxdeg) maxdeg = deg[n];
    int32_t *key = rg_xmalloc(((size_t)N + 1) * sizeof *key), *count = rg_xcalloc((size_t)maxdeg + 2, sizeof *count);
    for (int32_t n = 0; n < N; n++) key[n] = descending ? maxdeg - deg[n] : deg[n];
    for (int32_t n = 0; n < N; n++) count[key[n] + 1]++;
    for (int32_t d = 0; d <= maxdeg; d++) count[d + 1] += count[d];
    int32_t *seq = rg_xmalloc(((size_t)N + 1) * sizeof *seq);
    for (int32_t n = 0; n < N; n++) seq[count[key[n]]++] = n;
    free(key);
    free(count);
    return seq;
}

/* The k-th neighbour of n in the undirected graph of all edges (0 <= k < degree): its out-edges'
 * destinations, then its in-edges' sources. Self-loops and parallel edges repeat a neighbour. */
static inline int32_t neighbour(const hg_graph *g, int32_t n, int32_t k)
{
    int32_t out = g->out_ptr[n + 1] - g->out_ptr[n];
    return k < out ? g->dst[g->out_eid[g->out_ptr[n] + k]] : g->src[g->in_eid[g->in_ptr[n] + k - out]];
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
            for (int32_t k = 0, d = degree(g, n); k < d; k++) {
                int32_t m = neighbour(g, n, k);
                if (!seen[m]) seen[m] = 1, seq[tail++] = m;
            }
        }
    }
    RG_ASSERT(tail == N);
    free(seen);
    return seq;
}

/* George-Liu's search for a pseudo-peripheral node repeats a breadth-first search while the
 * eccentricity grows; it rarely needs more than a few, and each costs a pass over the
 * component's edges (42M neighbour reads on synth:mag), so a huge graph stops here. */
#define RCM_MAX_SEARCHES 8

typedef struct rcm_state {
    const hg_graph *g;
    int32_t *deg;       /* in + out degree */
    int32_t *mark;      /* per node, the last level search that reached it (no clearing between searches) */
    int32_t stamp;
    int32_t *queue;     /* one level search's nodes in breadth-first order */
    char *done;         /* placed in the Cuthill-McKee sequence */
    uint64_t *keys;     /* one node's new neighbours as (degree, id), to sort */
} rcm_state;

/* Whether node a comes before b: smaller degree, then smaller id. */
static int less_degree(const rcm_state *s, int32_t a, int32_t b)
{
    return s->deg[a] != s->deg[b] ? s->deg[a] < s->deg[b] : a < b;
}

/* A breadth-first search from r over r's component: r's eccentricity (the number of levels
 * after r's), and in *far the node of least degree (then id) in the last level. */
static int32_t level_search(rcm_state *s, int32_t r, int32_t *far)
{
    int32_t head = 0, tail = 0, depth = 0, level = 0, level_end = 1;
    s->stamp++;
    s->mark[r] = s->stamp;
    s->queue[tail++] = r;
    while (head < tail) {
        if (head == level_end) depth++, level = level_end, level_end = tail;
        int32_t n = s->queue[head++];
        for (int32_t k = 0; k < s->deg[n]; k++) {
            int32_t m = neighbour(s->g, n, k);
            if (s->mark[m] != s->stamp) s->mark[m] = s->stamp, s->queue[tail++] = m;
        }
    }
    *far = s->queue[level];
    for (int32_t i = level + 1; i < tail; i++)
        if (less_degree(s, s->queue[i], *far)) *far = s->queue[i];
    return depth;
}

/* George and Liu's pseudo-peripheral node of start's component: search from a node of least
 * degree in the last level while that makes the eccentricity grow. A node far from everything
 * starts a level structure with many narrow levels: the small bandwidth Cuthill-McKee wants. */
static int32_t pseudo_peripheral(rcm_state *s, int32_t start)
{
    int32_t r = start, far;
    int32_t ecc = level_search(s, r, &far);
    for (int i = 1; i < RCM_MAX_SEARCHES && far != r; i++) {
        int32_t next_far, e = level_search(s, far, &next_far);
        if (e <= ecc) break;
        r = far, ecc = e, far = next_far;
    }
    return r;
}

/* seq[0 .. n) by ascending degree, ties by id: one sort of packed keys. */
static void sort_by_degree(rcm_state *s, int32_t *seq, int32_t n)
{
    if (n < 2) return;
    for (int32_t i = 0; i < n; i++) s->keys[i] = (uint64_t)(uint32_t)s->deg[seq[i]] << 32 | (uint32_t)seq[i];
    qsort(s->keys, (size_t)n, sizeof *s->keys, cmp_u64);
    for (int32_t i = 0; i < n; i++) seq[i] = (int32_t)(s->keys[i] & 0xffffffffu);
}

/* The Cuthill-McKee order of r's component appended to seq at *tail: breadth-first from r,
 * each node's neighbours not placed yet by ascending degree (ties by id). Sorting only each
 * node's new neighbours keeps it O(E log d). */
static void cuthill_mckee(rcm_state *s, int32_t r, int32_t *seq, int32_t *tail)
{
    int32_t head = *tail;
    s->done[r] = 1;
    seq[(*tail)++] = r;
    while (head < *tail) {
        int32_t n = seq[head++], first = *tail;
        for (int32_t k = 0; k < s->deg[n]; k++) {
            int32_t m = neighbour(s->g, n, k);
            if (!s->done[m]) s->done[m] = 1, seq[(*tail)++] = m;
        }
        sort_by_degree(s, seq + first, *tail - first);
    }
}

/* Every node in reverse Cuthill-McKee order over the undirected graph of all edges. The
 * components are taken in the order of their least-degree node (ties by id): George-Liu starts
 * each search from such a node anyway, so one ascending-degree list gives both, and nodes
 * without edges, each a component of its own, come first, so last after the reversal, out of
 * the way of every other node's ids. */
static int32_t *reverse_cuthill_mckee(const hg_graph *g)
{
    int32_t N = g->num_nodes, tail = 0;
    rcm_state s = {.g = g, .deg = degrees(g)};
    s.mark = rg_xcalloc((size_t)N + 1, sizeof *s.mark);
    s.queue = rg_xmalloc(((size_t)N + 1) * sizeof *s.queue);
    s.done = rg_xcalloc((size_t)N + 1, 1);
    s.keys = rg_xmalloc(((size_t)N + 1) * sizeof *s.keys);
    int32_t *starts = by_degree(g, s.deg, 0), *seq = rg_xmalloc(((size_t)N + 1) * sizeof *seq);
    for (int32_t i = 0; i < N; i++)
        if (!s.done[starts[i]]) cuthill_mckee(&s, s.deg[starts[i]] ? pseudo_peripheral(&s, starts[i]) : starts[i], seq, &tail);
    RG_ASSERT(tail == N);
    for (int32_t i = 0, j = N - 1; i < j; i++, j--) {
        int32_t t = seq[i];
        seq[i] = seq[j], seq[j] = t;
    }
    free(starts);
    free(s.deg);
    free(s.mark);
    free(s.queue);
    free(s.done);
    free(s.keys);
    return seq;
}

typedef struct touch_state {
    const hg_graph *g;
    int32_t *old_of;    /* the result: new id -> old id */
    int32_t *new_of;    /* old id -> new id, -1 until touched */
    int32_t *next;      /* per node type, its next free id */
} touch_state;

/* Gives n the next id of its type unless it has one. */
static void touch(touch_state *t, int32_t n)
{
    if (t->new_of[n] >= 0) return;
    int32_t id = t->next[hg_ntype_of(t->g, n)]++;
    t->new_of[n] = id;
    t->old_of[id] = n;
}

/* Cache-blocked by destination ranges: the dst-sorted traversals walk destinations in id order
 * and gather each in-neighbour's row, so sources numbered in the order the destinations first
 * read them sit next to each other: the rows any block of consecutive destinations gathers for
 * the first time form a few narrow id ranges (one per node type) instead of spanning the whole
 * feature matrix, so they share cache lines, DRAM pages and TLB entries. Destinations are walked
 * in the BFS order (neighbours near each other), each numbered just before its own sources
 * unless a destination before it read it already. The walk is one pass: numbering by first touch
 * gives the same ids whatever blocks the walk is cut into (numbering a block's destinations
 * before its sources, which would make the block size matter, changed the simulated misses by
 * under 4% either way on aifb, mutag, fb15k237, mag_0.1 and synth:mag). Nodes without in-edges
 * that nobody reads (isolated ones) follow, in BFS order, at the end of their type. Still a
 * permutation within node types: each type numbers its own. */
static int32_t *first_touch(const hg_graph *g)
{
    int32_t N = g->num_nodes;
    int32_t *bfs = ord_compute(g, ORD_BFS);
    touch_state t = {.g = g, .old_of = rg_xmalloc(((size_t)N + 1) * sizeof *t.old_of)};
    t.new_of = rg_xmalloc(((size_t)N + 1) * sizeof *t.new_of);
    for (int32_t n = 0; n < N; n++) t.new_of[n] = -1;
    t.next = rg_xmalloc(((size_t)g->num_ntypes + 1) * sizeof *t.next);
    memcpy(t.next, g->ntype_ptr, (size_t)g->num_ntypes * sizeof *t.next);
    for (int32_t p = 0; p < N; p++) {
        int32_t d = bfs[p];
        if (g->in_ptr[d] == g->in_ptr[d + 1]) continue;
        touch(&t, d);
        for (int32_t q = g->in_ptr[d]; q < g->in_ptr[d + 1]; q++) touch(&t, g->src[g->in_eid[q]]);
    }
    for (int32_t p = 0; p < N; p++) touch(&t, bfs[p]);
    free(bfs);
    free(t.new_of);
    free(t.next);
    return t.old_of;
}

/* A global sequence of every node dealt into each type's id range, keeping its order. */
static int32_t *deal(const hg_graph *g, const int32_t *seq)
{
    int32_t *old_of = rg_xmalloc(((size_t)g->num_nodes + 1) * sizeof *old_of);
    int32_t *next = rg_xmalloc(((size_t)g->num_ntypes + 1) * sizeof *next);
    memcpy(next, g->ntype_ptr, (size_t)g->num_ntypes * sizeof *next);
    for (int32_t i = 0; i < g->num_nodes; i++) old_of[next[hg_ntype_of(g, seq[i])]++] = seq[i];
    free(next);
    return old_of;
}

int32_t *ord_compute(const hg_graph *g, ord_kind kind)
{
    int32_t N = g->num_nodes;
    if (kind == ORD_ORIG) {
        int32_t *old_of = rg_xmalloc(((size_t)N + 1) * sizeof *old_of);
        for (int32_t n = 0; n < N; n++) old_of[n] = n;
        return old_of;
    }
    if (kind == ORD_BLOCK) return first_touch(g);
    RG_ASSERT(kind == ORD_DEGREE || kind == ORD_BFS || kind == ORD_RCM);
    int32_t *seq;
    if (kind == ORD_RCM) {
        seq = reverse_cuthill_mckee(g);
    } else {
        int32_t *deg = degrees(g);
        seq = by_degree(g, deg, 1);
        free(deg);
        if (kind == ORD_BFS) {
            int32_t *bfs = breadth_first(g, seq);
            free(seq);
            seq = bfs;
        }
    }
    int32_t *old_of = deal(g, seq);
    free(seq);
    return old_of;
}

const char *ord_kind_name(ord_kind kind)
{
    static const char *const names[ORD_NKINDS] = {"orig", "degree", "bfs", "rcm", "block"};
    RG_ASSERT((int)kind >= 0 && (int)kind < ORD_NKINDS);
    return names[kind];
}

/* ---- The locality proxy ---- */

/* A fully associative LRU cache of node rows: a doubly linked list through arrays indexed by
 * node id (ids are below num_nodes), most recent first, so a hit or a miss is O(1), no hash. */
typedef struct lru {
    int32_t *prev, *next;   /* list links, -1 at the ends */
    char *cached;
    int32_t first, last;
    int64_t size, cap;
} lru;

static void lru_unlink(lru *c, int32_t v)
{
    if (c->prev[v] >= 0) c->next[c->prev[v]] = c->next[v];
    else c->first = c->next[v];
    if (c->next[v] >= 0) c->prev[c->next[v]] = c->prev[v];
    else c->last = c->prev[v];
}

static void lru_push_front(lru *c, int32_t v)
{
    c->prev[v] = -1;
    c->next[v] = c->first;
    if (c->first >= 0) c->prev[c->first] = v;
    else c->last = v;
    c->first = v;
}

/* Reads row v: 1 on a miss (v is brought in, the least recent row out when full), 0 on a hit. */
static int lru_read(lru *c, int32_t v)
{
    if (c->cached[v]) {
        lru_unlink(c, v);
        lru_push_front(c, v);
        return 0;
    }
    if (c->size == c->cap) {
        int32_t old = c->last;
        lru_unlink(c, old);
        c->cached[old] = 0;
        c->size--;
    }
    lru_push_front(c, v);
    c->cached[v] = 1;
    c->size++;
    return 1;
}

double ord_gather_miss_rate(const hg_graph *g, int64_t cache_rows)
{
    RG_ASSERT(cache_rows >= 1);
    size_t N = (size_t)g->num_nodes + 1;
    lru c = {.prev = rg_xmalloc(N * sizeof *c.prev), .next = rg_xmalloc(N * sizeof *c.next),
             .cached = rg_xcalloc(N, 1), .first = -1, .last = -1, .cap = cache_rows};
    int64_t misses = 0;
    for (int32_t d = 0; d < g->num_nodes; d++)
        for (int32_t q = g->in_ptr[d]; q < g->in_ptr[d + 1]; q++) misses += lru_read(&c, g->src[g->in_eid[q]]);
    free(c.prev);
    free(c.next);
    free(c.cached);
    return g->num_edges ? (double)misses / g->num_edges : 0;
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
