/* Graph-semantic loop canonicalization and fusion: gives every statement its canonical
 * loop nest and orders statements legally so that traversals sharing a nest fuse. */
#ifndef PF_PASS_FUSE_H
#define PF_PASS_FUSE_H

#include <stdio.h>
#include "codegen/ir.h"

/*
 * Canonical loop nests. `for e in g.edges()` and `for n in g.dst_nodes(): for e in
 * n.incoming_edges()` are the same nest (the front end emits both as DOM_EDGE); so is
 * g.src_nodes() x outgoing_edges(). Edge statements that run once per unique (src, etype)
 * row (ir_stmt_per_unique) have their own nest, as do node, type and global statements.
 */
typedef enum pf_nest { PF_NEST_EDGE, PF_NEST_UNIQUE, PF_NEST_NODE, PF_NEST_TYPE, PF_NEST_GLOBAL } pf_nest;

pf_nest pf_nest_of(const ir_program *p, int stmt);
const char *pf_nest_name(pf_nest n);

/* A scheduling unit: one statement, or statements the lowering binds together (a GEMM
 * and the per-row scalar multiply it absorbs), listed in program order. */
#define PF_UNIT_MAX 2
typedef struct pf_unit {
    int nstmts;
    int stmts[PF_UNIT_MAX];
    int fusible;        /* a traversal statement: may share a loop nest with others */
    int segment;        /* fusible units share a nest only with units of the same segment (0, or 1 for
                         * the sums over destinations lw_options.defer_dst_sums moves to their own kernel) */
} pf_unit;

typedef struct pf_group {
    int nunits;
    int *units;         /* unit ids, in execution order */
    pf_nest nest;
    int segment;        /* its units' segment */
    int fused;          /* fusible units sharing one loop nest (a traversal instance) */
    int backward;
} pf_group;

typedef struct pf_schedule {
    int ngroups;
    pf_group *groups;
} pf_schedule;

/* Orders the units so that every dependence between their statements (read after write,
 * write after read, write after write) is kept, the forward part (statements before
 * p->nforward) comes first, and fusible units of one nest, segment and pass are grouped as long as
 * dependences allow (GEMM and other units are hoisted ahead of an open group when they do
 * not depend on it). Units must cover each statement at most once. fuse == 0 keeps program
 * order with one group per unit. */
pf_schedule *pf_schedule_units(const ir_program *p, const pf_unit *units, int nunits, int fuse);
void pf_free(pf_schedule *s);

/* 1 when statement j (later) must stay after statement i (earlier). */
int pf_depends(const ir_stmt *earlier, const ir_stmt *later);

#endif
