/* Loop canonicalization and fusion: canonical loop nests per statement and a legal
 * ordering of scheduling units that groups traversal units sharing a nest. */
#include "codegen/pass_fuse.h"

#include <stdlib.h>
#include <string.h>

pf_nest pf_nest_of(const ir_program *p, int stmt)
{
    const ir_stmt *s = &p->stmts[stmt];
    switch (s->dom) {
    case IR_DOM_EDGE: return ir_stmt_per_unique(p, s) ? PF_NEST_UNIQUE : PF_NEST_EDGE;
    case IR_DOM_NODE: return PF_NEST_NODE;
    case IR_DOM_TYPE: return PF_NEST_TYPE;
    case IR_DOM_GLOBAL: return PF_NEST_GLOBAL;
    }
    RG_DIE("bad domain %d", (int)s->dom);
}

const char *pf_nest_name(pf_nest n)
{
    switch (n) {
    case PF_NEST_EDGE: return "edges (== dst nodes x incoming edges)";
    case PF_NEST_UNIQUE: return "unique (src, etype) rows";
    case PF_NEST_NODE: return "nodes";
    case PF_NEST_TYPE: return "edge types";
    case PF_NEST_GLOBAL: return "once";
    }
    return "?";
}

static int touches(const ir_stmt *s, int var) { return ir_stmt_reads(s, var) || ir_stmt_writes(s, var); }

int pf_depends(const ir_stmt *earlier, const ir_stmt *later)
{
    /* later reads or writes what earlier writes, or writes what earlier reads */
    if (touches(later, earlier->out.var)) return 1;
    if (ir_stmt_reads(earlier, later->out.var)) return 1;
    return 0;
}

static int unit_first(const pf_unit *u) { return u->stmts[0]; }

static int unit_backward(const ir_program *p, const pf_unit *u) { return unit_first(u) >= p->nforward; }

/* deps[a * n + b]: unit a must run after unit b. */
static char *unit_dependences(const ir_program *p, const pf_unit *units, int n)
{
    int *owner = rg_xmalloc(((size_t)p->nstmts + 1) * sizeof *owner);
    for (int i = 0; i < p->nstmts; i++) owner[i] = -1;
    for (int u = 0; u < n; u++)
        for (int k = 0; k < units[u].nstmts; k++) {
            int s = units[u].stmts[k];
            RG_ASSERT(s >= 0 && s < p->nstmts && owner[s] < 0);
            owner[s] = u;
        }
    char *deps = rg_xcalloc((size_t)n * (size_t)n + 1, 1);
    for (int j = 0; j < p->nstmts; j++) {
        if (owner[j] < 0) continue;
        for (int i = 0; i < j; i++)
            if (owner[i] >= 0 && owner[i] != owner[j] && pf_depends(&p->stmts[i], &p->stmts[j]))
                deps[(size_t)owner[j] * n + owner[i]] = 1;
    }
    free(owner);
    return deps;
}

typedef struct sched {
    const ir_program *p;
    const pf_unit *units;
    int n;
    char *deps;
    char *state;            /* 0 waiting, 1 in the open group, 2 done */
    int *order;             /* units sorted by first statement */
    pf_schedule *out;
    pf_group open;
    int has_open;
} sched;

static int ready(const sched *s, int u, int allow_open)
{
    for (int v = 0; v < s->n; v++)
        if (s->deps[(size_t)u * s->n + v] && s->state[v] != 2 && !(allow_open && s->state[v] == 1)) return 0;
    return 1;
}

static void push_group(sched *s, const pf_group *g)
{
    s->out->groups = rg_xrealloc(s->out->groups, (size_t)(s->out->ngroups + 1) * sizeof *s->out->groups);
    s->out->groups[s->out->ngroups++] = *g;
}

static void group_add(pf_group *g, int u)
{
    g->units = rg_xrealloc(g->units, (size_t)(g->nunits + 1) * sizeof *g->units);
    g->units[g->nunits++] = u;
}

static void emit_single(sched *s, int u)
{
    pf_group g = {0};
    g.nest = pf_nest_of(s->p, unit_first(&s->units[u]));
    g.segment = s->units[u].segment;
    g.backward = unit_backward(s->p, &s->units[u]);
    g.fused = s->units[u].fusible;
    group_add(&g, u);
    push_group(s, &g);
    s->state[u] = 2;
}

static void close_open(sched *s)
{
    for (int k = 0; k < s->open.nunits; k++) s->state[s->open.units[k]] = 2;
    push_group(s, &s->open);
    memset(&s->open, 0, sizeof s->open);
    s->has_open = 0;
}

/* One region (forward or backward): greedy list scheduling with fusion preference. */
static void schedule_region(sched *s, int backward)
{
    for (;;) {
        int progressed = 0;
        if (s->has_open)   /* 1. extend the open traversal group */
            for (int k = 0; k < s->n && !progressed; k++) {
                int u = s->order[k];
                const pf_unit *un = &s->units[u];
                if (s->state[u] || unit_backward(s->p, un) != backward || !un->fusible) continue;
                if (pf_nest_of(s->p, unit_first(un)) != s->open.nest || un->segment != s->open.segment ||
                    !ready(s, u, 1))
                    continue;
                group_add(&s->open, u);
                s->state[u] = 1;
                progressed = 1;
            }
        if (progressed) continue;
        for (int k = 0; k < s->n && !progressed; k++) {   /* 2. hoist ready non-traversal units */
            int u = s->order[k];
            if (s->state[u] || unit_backward(s->p, &s->units[u]) != backward || s->units[u].fusible) continue;
            if (!ready(s, u, 0)) continue;
            emit_single(s, u);
            progressed = 1;
        }
        if (progressed) continue;
        if (s->has_open) {   /* 3. nothing more can join: the group is complete */
            close_open(s);
            continue;
        }
        for (int k = 0; k < s->n && !progressed; k++) {   /* 4. open a new group */
            int u = s->order[k];
            if (s->state[u] || unit_backward(s->p, &s->units[u]) != backward || !ready(s, u, 0)) continue;
            memset(&s->open, 0, sizeof s->open);
            s->open.nest = pf_nest_of(s->p, unit_first(&s->units[u]));
            s->open.segment = s->units[u].segment;
            s->open.fused = 1;
            s->open.backward = backward;
            group_add(&s->open, u);
            s->state[u] = 1;
            s->has_open = 1;
            progressed = 1;
        }
        if (!progressed) return;
    }
}

static const pf_unit *sort_units;
static int cmp_unit(const void *a, const void *b)
{
    return unit_first(&sort_units[*(const int *)a]) - unit_first(&sort_units[*(const int *)b]);
}

pf_schedule *pf_schedule_units(const ir_program *p, const pf_unit *units, int nunits, int fuse)
{
    pf_schedule *out = rg_xcalloc(1, sizeof *out);
    sched s = {p, units, nunits, NULL, NULL, NULL, out, {0}, 0};
    s.order = rg_xmalloc(((size_t)nunits + 1) * sizeof *s.order);
    for (int u = 0; u < nunits; u++) s.order[u] = u;
    sort_units = units;
    qsort(s.order, (size_t)nunits, sizeof *s.order, cmp_unit);
    s.state = rg_xcalloc((size_t)nunits + 1, 1);
    s.deps = unit_dependences(p, units, nunits);
    for (int backward = 0; backward < 2; backward++) {
        if (fuse) {
            schedule_region(&s, backward);
            continue;
        }
        /* no fusion: program order, except that a unit waits for what it depends on */
        for (int progressed = 1; progressed;) {
            progressed = 0;
            for (int k = 0; k < nunits && !progressed; k++) {
                int u = s.order[k];
                if (s.state[u] || unit_backward(p, &units[u]) != backward || !ready(&s, u, 0)) continue;
                emit_single(&s, u);
                progressed = 1;
            }
        }
    }
    for (int u = 0; u < nunits; u++)
        if (s.state[u] != 2) RG_DIE("fusion scheduling left unit %d (dependence cycle between units)", u);
    free(s.deps);
    free(s.state);
    free(s.order);
    return out;
}

void pf_free(pf_schedule *s)
{
    if (!s) return;
    for (int g = 0; g < s->ngroups; g++) free(s->groups[g].units);
    free(s->groups);
    free(s);
}
