/* Strings interned with dense ids in insertion order: a growable array of copies and an
 * open-addressing table of their ids, kept at most half full. */
#include "common/names.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

void rg_names_free(rg_names *m)
{
    for (int64_t i = 0; i < m->count; i++) free(m->names[i]);
    free(m->names);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static uint64_t slot_of(const rg_names *m, const char *s)
{
    return rg_fnv1a64(s, strlen(s), RG_FNV_SEED) & (uint64_t)(m->cap - 1);
}

int32_t rg_names_find(const rg_names *m, const char *s)
{
    if (!m->cap) return -1;
    for (uint64_t i = slot_of(m, s);; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        int32_t id = m->slots[i] - 1;
        if (id < 0) return -1;
        if (strcmp(m->names[id], s) == 0) return id;
    }
}

static void rehash(rg_names *m)
{
    int64_t cap = m->cap ? 2 * m->cap : 1024;
    free(m->slots);
    m->slots = rg_xcalloc((size_t)cap, sizeof *m->slots);
    m->cap = cap;
    m->names = rg_xrealloc(m->names, (size_t)cap * sizeof *m->names);
    for (int64_t id = 0; id < m->count; id++) {
        uint64_t i = slot_of(m, m->names[id]);
        while (m->slots[i]) i = (i + 1) & (uint64_t)(cap - 1);
        m->slots[i] = (int32_t)id + 1;
    }
}

int32_t rg_names_add(rg_names *m, const char *s)
{
    if (2 * (m->count + 1) > m->cap) rehash(m);
    int32_t id = (int32_t)m->count++;
    m->names[id] = rg_xstrdup(s);
    uint64_t i = slot_of(m, s);
    while (m->slots[i]) i = (i + 1) & (uint64_t)(m->cap - 1);
    m->slots[i] = id + 1;
    return id;
}

int32_t rg_names_intern(rg_names *m, const char *s)
{
    int32_t id = rg_names_find(m, s);
    return id >= 0 ? id : rg_names_add(m, s);
}
