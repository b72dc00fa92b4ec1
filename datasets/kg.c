/* Knowledge-graph triple loaders: OpenKE's *2id.txt integer files and KGE-style
 * head<TAB>relation<TAB>tail text, all splits in one entity-typed graph with reverse types. */
#include "datasets/loaders.h"
#include "datasets/textio.h"
#include "common/names.h"

#include <stdlib.h>
#include <string.h>

static const char *const SPLITS_OPENKE[] = {"train2id.txt", "valid2id.txt", "test2id.txt"};
#define OPENKE_MAX_RELATIONS (1 << 20)
static const char *const SPLITS_KGE[] = {"train.txt", "valid.txt", "test.txt"};

static const char *default_name(const char *name, const char *fallback)
{
    return name && *name ? name : fallback;
}

/* ---- OpenKE ---- */

/* Reads the count on the first line of an OpenKE file. */
static int read_count_line(tio_reader *r, int64_t *count, rg_err *err)
{
    int got = tio_next(r, err);
    if (got < 0) return -1;
    if (got == 0) return rg_errf(err, "%s: empty file, expected a count on line 1", r->path);
    char *f[2];
    if (tio_split(r, ' ', f, 1) != 1 || tio_parse_below(f[0], INT32_MAX, count))
        return tio_fail(r, err, "the number of lines that follow");
    return 0;
}

/* name<TAB>id lines of entity2id.txt/relation2id.txt: the name is everything before the
 * last tab (or blank), so names with spaces survive. Fills names_by_id[count] if non-NULL. */
static int read_openke_map(const char *path, int64_t *count_out, char ***names_by_id, rg_err *err)
{
    tio_reader *r = tio_open(path, err);
    if (!r) return -1;
    int64_t count = 0, seen = 0;
    char **names = NULL;
    unsigned char *have = NULL;
    int rc = read_count_line(r, &count, err);
    if (rc == 0) {
        names = rg_xcalloc((size_t)count + 1, sizeof *names);
        have = rg_xcalloc((size_t)count + 1, 1);
    }
    while (rc == 0 && (rc = tio_next(r, err)) == 1) {
        rc = 0;
        if (tio_blank(r)) continue;
        char *cut = strrchr(r->line, '\t');
        if (!cut) cut = strrchr(r->line, ' ');
        int64_t id;
        if (!cut || cut == r->line || tio_parse_below(cut + 1, count, &id)) {
            rc = tio_fail(r, err, "'name<TAB>id' with an id below the count on line 1");
            break;
        }
        if (have[id]) {
            rc = rg_errf(err, "%s:%lld: id %lld appears twice", r->path, (long long)r->line_no, (long long)id);
            break;
        }
        *cut = 0;
        have[id] = 1;
        names[id] = rg_xstrdup(r->line);
        seen++;
    }
    if (rc == 0 && seen != count)
        rc = rg_errf(err, "%s: line 1 says %lld entries but the file has %lld", path, (long long)count, (long long)seen);
    tio_close(r);
    free(have);
    if (rc == 0 && names_by_id) {
        *names_by_id = names;
    } else if (names) {
        for (int64_t i = 0; i < count; i++) free(names[i]);
        free(names);
    }
    *count_out = count;
    return rc;
}

typedef struct openke_ctx {
    hg_builder *b;
    int32_t entity;
    int64_t entity_limit;    /* ids must be below this (entity2id count, or any int32) */
    int64_t relation_limit;  /* relation2id count, or -1: relation types are made on demand */
    int64_t etypes_made;     /* in the on-demand case */
} openke_ctx;

/* Without relation2id.txt relation r is edge type r, named "rel<r>": make types up to r. */
static int32_t openke_etype(openke_ctx *c, int64_t rel)
{
    if (c->relation_limit < 0)
        for (; c->etypes_made <= rel; c->etypes_made++) {
            char nm[32];
            snprintf(nm, sizeof nm, "rel%lld", (long long)c->etypes_made);
            hgb_etype(c->b, nm, c->entity, c->entity);
        }
    return (int32_t)rel;
}

static int read_openke_split(openke_ctx *c, const char *path, rg_err *err)
{
    tio_reader *r = tio_open(path, err);
    if (!r) return -1;
    int64_t count = 0, seen = 0;
    int rc = read_count_line(r, &count, err);
    if (rc == 0) hgb_reserve(c->b, hgb_num_edges(c->b) + count);
    /* Without relation2id.txt, ids are bounded so a stray huge id cannot make millions of types. */
    int64_t rel_limit = c->relation_limit < 0 ? OPENKE_MAX_RELATIONS : c->relation_limit;
    while (rc == 0 && (rc = tio_next(r, err)) == 1) {
        rc = 0;
        if (tio_blank(r)) continue;
        char *f[4];
        int64_t h, t, rel;
        if (tio_split(r, ' ', f, 3) != 3 || tio_parse_below(f[0], c->entity_limit, &h) ||
            tio_parse_below(f[1], c->entity_limit, &t) || tio_parse_below(f[2], rel_limit, &rel)) {
            rc = tio_fail(r, err, "'head tail relation' (ids below the entity/relation counts)");
            break;
        }
        hgb_add_edge(c->b, openke_etype(c, rel), h, t);
        seen++;
    }
    if (rc == 0 && seen != count)
        rc = rg_errf(err, "%s: line 1 says %lld triples but the file has %lld", path, (long long)count, (long long)seen);
    tio_close(r);
    return rc;
}

/* Optional entity2id/relation2id: counts and relation names. */
static int openke_maps(const char *dir, openke_ctx *c, rg_err *err)
{
    char *ent = tio_find(dir, "entity2id.txt"), *rel = tio_find(dir, "relation2id.txt");
    int rc = 0;
    if (ent) {
        rc = read_openke_map(ent, &c->entity_limit, NULL, err);
        if (rc == 0) hgb_ntype_count_at_least(c->b, c->entity, c->entity_limit);
    }
    if (rc == 0 && rel) {
        char **names = NULL;
        rc = read_openke_map(rel, &c->relation_limit, &names, err);
        for (int64_t k = 0; rc == 0 && k < c->relation_limit; k++)
            if (hgb_etype(c->b, names[k], c->entity, c->entity) != k)
                rc = rg_errf(err, "%s: relation name '%s' appears twice", rel, names[k]);
        for (int64_t k = 0; names && k < c->relation_limit; k++) free(names[k]);
        free(names);
    }
    free(ent);
    free(rel);
    return rc;
}

hg_graph *kg_load_openke(const char *dir, const char *name, rg_err *err)
{
    openke_ctx c = {hgb_new(default_name(name, "openke")), 0, INT32_MAX, -1, 0};
    c.entity = hgb_ntype(c.b, "entity");
    int rc = openke_maps(dir, &c, err);
    for (int s = 0; rc == 0 && s < 3; s++) {
        char *path = tio_require(dir, SPLITS_OPENKE[s], "openke", err);
        rc = path ? read_openke_split(&c, path, err) : -1;
        free(path);
    }
    if (rc) {
        hgb_free(c.b);
        return NULL;
    }
    return hgb_finish(c.b, 1, err);
}

/* ---- KGE text ---- */

/* id<TAB>name lines: ids must be exactly 0..n-1 in some order. */
static int read_kge_dict(const char *path, rg_names *m, rg_err *err)
{
    tio_reader *r = tio_open(path, err);
    if (!r) return -1;
    int64_t n = 0, cap = 0;
    int64_t *ids = NULL;
    char **names = NULL;
    int rc;
    while ((rc = tio_next(r, err)) == 1) {
        rc = 0;
        if (tio_blank(r)) continue;
        char *f[2];
        int64_t id;
        if (tio_split(r, '\t', f, 2) != 2 || tio_parse_below(f[0], INT32_MAX, &id) || !*f[1]) {
            rc = tio_fail(r, err, "'id<TAB>name'");
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            ids = rg_xrealloc(ids, (size_t)cap * sizeof *ids);
            names = rg_xrealloc(names, (size_t)cap * sizeof *names);
        }
        ids[n] = id;
        names[n++] = rg_xstrdup(f[1]);
    }
    tio_close(r);
    /* place names by id; every id below n exactly once */
    char **by_id = rg_xcalloc((size_t)n + 1, sizeof *by_id);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        if (ids[i] >= n || by_id[ids[i]])
            rc = rg_errf(err, "%s: ids must be 0..%lld each once, but id %lld is %s", path, (long long)n - 1,
                         (long long)ids[i], ids[i] >= n ? "out of range" : "repeated");
        else
            by_id[ids[i]] = names[i];
    }
    for (int64_t id = 0; rc == 0 && id < n; id++) {
        if (rg_names_find(m, by_id[id]) >= 0)
            rc = rg_errf(err, "%s: name '%s' appears twice", path, by_id[id]);
        else
            rg_names_add(m, by_id[id]);
    }
    for (int64_t i = 0; i < n; i++) free(names[i]);
    free(names);
    free(ids);
    free(by_id);
    return rc;
}

typedef struct kge_ctx {
    hg_builder *b;
    int32_t entity;
    rg_names ents, rels;
    int fixed_ents, fixed_rels;   /* a .dict gave the ids: unknown names are errors */
} kge_ctx;

/* Maps a name to its id: from the dict, or first-seen order without one. */
static int32_t kge_id(rg_names *m, int fixed, const char *s)
{
    return fixed ? rg_names_find(m, s) : rg_names_intern(m, s);
}

static int read_kge_split(kge_ctx *c, const char *path, rg_err *err)
{
    tio_reader *r = tio_open(path, err);
    if (!r) return -1;
    int rc;
    while ((rc = tio_next(r, err)) == 1) {
        rc = 0;
        if (tio_blank(r)) continue;
        char *f[4];
        if (tio_split(r, '\t', f, 3) != 3 || !*f[0] || !*f[1] || !*f[2]) {
            rc = tio_fail(r, err, "'head<TAB>relation<TAB>tail'");
            break;
        }
        int32_t h = kge_id(&c->ents, c->fixed_ents, f[0]), t = kge_id(&c->ents, c->fixed_ents, f[2]);
        int64_t nrel_before = c->rels.count;
        int32_t rel = kge_id(&c->rels, c->fixed_rels, f[1]);
        if (h < 0 || t < 0 || rel < 0) {
            rc = rg_errf(err, "%s:%lld: %s '%s' is not in %s", path, (long long)r->line_no,
                         rel < 0 ? "relation" : "entity", rel < 0 ? f[1] : h < 0 ? f[0] : f[2],
                         rel < 0 ? "relations.dict" : "entities.dict");
            break;
        }
        if (c->rels.count > nrel_before) hgb_etype(c->b, f[1], c->entity, c->entity);
        hgb_add_edge(c->b, rel, h, t);
    }
    tio_close(r);
    return rc;
}

static int kge_dicts(const char *dir, kge_ctx *c, rg_err *err)
{
    char *ent = tio_find(dir, "entities.dict"), *rel = tio_find(dir, "relations.dict");
    int rc = 0;
    if (ent) {
        rc = read_kge_dict(ent, &c->ents, err);
        c->fixed_ents = 1;
        hgb_ntype_count_at_least(c->b, c->entity, c->ents.count);
    }
    if (rc == 0 && rel) {
        rc = read_kge_dict(rel, &c->rels, err);
        c->fixed_rels = 1;
        for (int64_t k = 0; rc == 0 && k < c->rels.count; k++)
            hgb_etype(c->b, c->rels.names[k], c->entity, c->entity);
    }
    free(ent);
    free(rel);
    return rc;
}

hg_graph *kg_load_kge(const char *dir, const char *name, rg_err *err)
{
    kge_ctx c;
    memset(&c, 0, sizeof c);
    c.b = hgb_new(default_name(name, "kge"));
    c.entity = hgb_ntype(c.b, "entity");
    int rc = kge_dicts(dir, &c, err);
    for (int s = 0; rc == 0 && s < 3; s++) {
        char *path = tio_require(dir, SPLITS_KGE[s], "kge", err);
        rc = path ? read_kge_split(&c, path, err) : -1;
        free(path);
    }
    rg_names_free(&c.ents);
    rg_names_free(&c.rels);
    if (rc) {
        hgb_free(c.b);
        return NULL;
    }
    return hgb_finish(c.b, 1, err);
}
