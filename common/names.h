/* Strings interned with dense ids in insertion order (open addressing on their FNV-1a hash): a
 * knowledge graph's entity and relation names, a design space's reasons for invalid points. */
#ifndef RG_NAMES_H
#define RG_NAMES_H

#include <stdint.h>

typedef struct rg_names {
    char **names;          /* [count] by id; each string stays where it is until rg_names_free */
    int32_t *slots;        /* [cap] id + 1, 0 = empty */
    int64_t count, cap;
} rg_names;

void rg_names_free(rg_names *m);
/* The id of s, or -1. */
int32_t rg_names_find(const rg_names *m, const char *s);
/* Adds s with the next id; the caller has checked that it is absent. */
int32_t rg_names_add(rg_names *m, const char *s);
/* The id of s, added when absent. */
int32_t rg_names_intern(rg_names *m, const char *s);

#endif
