/* `explore perf-tables`: the headline tables the docs quote (measurement counts, best variant
 * against its floor, generated code against every baseline), regenerated from results stores. */
#ifndef PT_PERFTAB_H
#define PT_PERFTAB_H

#include <stdio.h>
#include "common/util.h"

/* Writes the markdown of docs/perf-tables.md for the stores, in the order given, each opened
 * read-only. Every table names its store (the path as given), its query and the commits of its
 * rows. The text depends only on the stores' contents and the paths as given (sorted rows, fixed
 * number formats, no dates, no host), so writing it twice gives the same bytes. A store that
 * cannot be opened, or a query that fails on it, is an error naming the store; nothing is
 * written to out before every store has been read. */
int pt_write(const char *const *stores, int nstores, FILE *out, rg_err *err);

/* A section computed by the caller rather than by a query (the search replay and the
 * leave-one-size-out fit, which need the explorer): a title, a paragraph and markdown text. */
typedef struct pt_section {
    const char *title, *about, *text;
} pt_section;
/* pt_write with the sections after the query tables, in the order given. */
int pt_write_sections(const char *const *stores, int nstores, const pt_section *extra, int nextra, FILE *out,
                      rg_err *err);

/* The SQL of the table NAME (what `explore perf-tables --query NAME` prints), or NULL. */
const char *pt_query_sql(const char *name);
/* The tables' names, space-separated (for messages and the help). */
const char *pt_query_names(void);

#endif
