/* OGB raw-layout loaders (gzip CSV, read per ogb/io/read_graph_raw.py): heterogeneous
 * ogbn-mag / ogbl-biokg and homogeneous-plus-reltype ogbl-wikikg2, training edges, no reverse. */
#include "datasets/loaders.h"
#include "datasets/textio.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define OGB_MAX_NTYPES 256
/* wikikg2 has 535 relations; the bound only stops a stray id from making millions of types. */
#define OGB_MAX_RELATIONS (1 << 20)

/* dir/SUB/raw for the one SUB that has it: OGB's zips unzip to a folder of their own
 * (mag/, wikikg-v2/), so a user may point at the folder they unzipped into. */
static char *raw_below(const char *dir, const char *probe)
{
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char *found = NULL;
    int matches = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char *raw = rg_xasprintf("%s/%s/raw", dir, e->d_name);
        char *p = tio_find(raw, probe);
        if (p && ++matches == 1) found = rg_xstrdup(raw);
        free(p);
        free(raw);
    }
    closedir(d);
    if (matches == 1) return found;
    free(found);
    return NULL;
}

/* The raw/ folder: dir/raw, dir itself when it holds the raw files, or dir/SUB/raw. */
static char *raw_dir(const char *dir, const char *probe, rg_err *err)
{
    char *raw = rg_xasprintf("%s/raw", dir);
    if (rg_file_exists(raw)) return raw;
    free(raw);
    char *p = tio_find(dir, probe);
    if (p) {
        free(p);
        return rg_xstrdup(dir);
    }
    if ((raw = raw_below(dir, probe))) return raw;
    rg_errf(err, "ogb: no raw/ folder in %s (give the dataset root, the folder that holds raw/%s)", dir, probe);
    return NULL;
}

/* The next non-blank line: 1, or 0 at the end, or -1 on a read error. */
static int next_data_line(tio_reader *r, rg_err *err)
{
    int got;
    while ((got = tio_next(r, err)) == 1)
        if (!tio_blank(r)) return 1;
    return got;
}

/* Only blank lines may follow what a file is expected to hold. */
static int expect_end(tio_reader *r, rg_err *err, const char *expected)
{
    int got = next_data_line(r, err);
    if (got < 0) return -1;
    return got ? tio_fail(r, err, expected) : 0;
}

/* A file holding one integer on one line (num-node-list, num-edge-list). */
static int read_single_count(const char *path, int64_t *out, rg_err *err)
{
    tio_reader *r = tio_open(path, err);
    if (!r) return -1;
    int rc = next_data_line(r, err);
    if (rc == 0) rc = rg_errf(err, "%s: empty file, expected one integer", path);
    if (rc == 1) {
        char *f[2];
        rc = tio_split(r, ' ', f, 1) != 1 || tio_parse_below(f[0], INT32_MAX, out)
                 ? tio_fail(r, err, "one integer") : expect_end(r, err, "the end of the file after one integer");
    }
    tio_close(r);
    return rc;
}

/* The node types of num-node-dict, in header order (= their type ids), with their counts. */
typedef struct ogb_types {
    int n;
    char *names[OGB_MAX_NTYPES];
    int64_t counts[OGB_MAX_NTYPES];
} ogb_types;

static int type_index(const ogb_types *ty, const char *name)
{
    for (int i = 0; i < ty->n; i++)
        if (strcmp(ty->names[i], name) == 0) return i;
    return -1;
}

static void types_free(ogb_types *ty)
{
    for (int i = 0; i < ty->n; i++) free(ty->names[i]);
    ty->n = 0;
}

static int parse_node_dict_header(tio_reader *r, ogb_types *ty, rg_err *err)
{
    char *names[OGB_MAX_NTYPES + 1];
    int n = tio_split(r, ',', names, OGB_MAX_NTYPES);
    if (n > OGB_MAX_NTYPES) return tio_fail(r, err, "at most 256 node type names");
    for (int i = 0; i < n; i++) {
        if (!*names[i] || type_index(ty, names[i]) >= 0)
            return tio_fail(r, err, "a header of distinct, non-empty node type names");
        ty->names[ty->n++] = rg_xstrdup(names[i]);
    }
    return 0;
}

static int parse_node_dict_counts(tio_reader *r, ogb_types *ty, rg_err *err)
{
    char *vals[OGB_MAX_NTYPES + 1];
    if (tio_split(r, ',', vals, OGB_MAX_NTYPES) != ty->n) return tio_fail(r, err, "one count per node type");
    for (int i = 0; i < ty->n; i++)
        if (tio_parse_below(vals[i], INT32_MAX, &ty->counts[i])) return tio_fail(r, err, "one count per node type");
    return 0;
}

/* num-node-dict.csv.gz: a header row of type names and one row of counts. */
static int read_node_dict(const char *raw, ogb_types *ty, rg_err *err)
{
    char *path = tio_require(raw, "num-node-dict.csv.gz", "ogb", err);
    if (!path) return -1;
    tio_reader *r = tio_open(path, err);
    free(path);
    if (!r) return -1;
    int got = next_data_line(r, err), rc = -1;
    if (got == 1 && parse_node_dict_header(r, ty, err) == 0 && (got = next_data_line(r, err)) == 1 &&
        parse_node_dict_counts(r, ty, err) == 0)
        rc = expect_end(r, err, "nothing after the row of counts");
    if (got == 0) rg_errf(err, "%s: expected a header row of node types and a row of counts", r->path);
    tio_close(r);
    return rc;
}

/* Rows "src,dst" of one relation, checked against the node counts of both end types. */
static int read_edge_csv(hg_builder *b, int32_t etype, const char *path, int64_t src_limit,
                         int64_t dst_limit, int64_t *rows, rg_err *err)
{
    tio_reader *r = tio_open(path, err);
    if (!r) return -1;
    int rc;
    *rows = 0;
    while ((rc = next_data_line(r, err)) == 1) {
        char *f[3];
        int64_t s, d;
        if (tio_split(r, ',', f, 2) != 2 || tio_parse_below(f[0], src_limit, &s) ||
            tio_parse_below(f[1], dst_limit, &d)) {
            rc = tio_fail(r, err, "'src,dst' with ids below the node counts of num-node-dict");
            break;
        }
        hgb_add_edge(b, etype, s, d);
        (*rows)++;
    }
    tio_close(r);
    return rc;
}

/* num-edge-list.csv.gz beside an edge file, when present (*want = -1 when absent): used to
 * reserve room up front, and the row count must match it. */
static int published_edge_count(const char *dir, int64_t *want, rg_err *err)
{
    *want = -1;
    char *path = tio_find(dir, "num-edge-list.csv.gz");
    if (!path) return 0;
    int rc = read_single_count(path, want, err);
    free(path);
    return rc;
}

static int check_edge_count(const char *dir, int64_t want, int64_t rows, rg_err *err)
{
    if (want < 0 || want == rows) return 0;
    return rg_errf(err, "%s/num-edge-list.csv.gz says %lld edges but the edge file has %lld rows", dir,
                   (long long)want, (long long)rows);
}

static int read_relation(hg_builder *b, const char *raw, char *const f[3], const ogb_types *ty, int32_t etype,
                         rg_err *err)
{
    int ht = type_index(ty, f[0]), tt = type_index(ty, f[2]);
    char *dir = rg_xasprintf("%s/relations/%s___%s___%s", raw, f[0], f[1], f[2]);
    char *path = tio_require(dir, "edge.csv.gz", "ogb", err);
    int64_t rows = 0, want = -1;
    int rc = path ? published_edge_count(dir, &want, err) : -1;
    if (rc == 0 && want > 0) hgb_reserve(b, hgb_num_edges(b) + want);
    if (rc == 0) rc = read_edge_csv(b, etype, path, ty->counts[ht], ty->counts[tt], &rows, err);
    if (rc == 0) rc = check_edge_count(dir, want, rows, err);
    free(path);
    free(dir);
    return rc;
}

/* triplet-type-list.csv.gz rows "head_type,relation,tail_type", each one relation folder. */
static int read_triplets(const char *raw, hg_builder *b, const ogb_types *ty, rg_err *err)
{
    char *path = tio_require(raw, "triplet-type-list.csv.gz", "ogb", err);
    if (!path) return -1;
    tio_reader *r = tio_open(path, err);
    free(path);
    if (!r) return -1;
    int rc, triplets = 0;
    while ((rc = next_data_line(r, err)) == 1) {
        char *f[4];
        if (tio_split(r, ',', f, 3) != 3 || !*f[1]) {
            rc = tio_fail(r, err, "'head_type,relation,tail_type'");
            break;
        }
        if (type_index(ty, f[0]) < 0 || type_index(ty, f[2]) < 0) {
            rc = rg_errf(err, "%s:%lld: node type '%s' is not in num-node-dict", r->path, (long long)r->line_no,
                         type_index(ty, f[0]) < 0 ? f[0] : f[2]);
            break;
        }
        /* edge type ids follow the list order; a repeated triplet would find an older id */
        int32_t etype = hgb_etype(b, f[1], type_index(ty, f[0]), type_index(ty, f[2]));
        if (etype != triplets) {
            rc = tio_fail(r, err, "each triplet listed once");
            break;
        }
        if ((rc = read_relation(b, raw, f, ty, etype, err)) != 0) break;
        triplets++;
    }
    if (rc == 0 && triplets == 0) rc = rg_errf(err, "%s: no relation triplets", r->path);
    tio_close(r);
    return rc;
}

static const char *default_name(const char *name, const char *fallback)
{
    return name && *name ? name : fallback;
}

hg_graph *ogb_load_hetero(const char *dir, const char *name, rg_err *err)
{
    char *raw = raw_dir(dir, "num-node-dict.csv.gz", err);
    if (!raw) return NULL;
    hg_builder *b = hgb_new(default_name(name, "ogb"));
    ogb_types ty = {0};
    int rc = read_node_dict(raw, &ty, err);
    /* node type ids follow the header order, counts as published (isolated nodes included) */
    for (int i = 0; rc == 0 && i < ty.n; i++) {
        hgb_ntype(b, ty.names[i]);
        hgb_ntype_count_at_least(b, i, ty.counts[i]);
    }
    if (rc == 0) rc = read_triplets(raw, b, &ty, err);
    types_free(&ty);
    free(raw);
    if (rc) {
        hgb_free(b);
        return NULL;
    }
    return hgb_finish(b, 0, err);
}

/* ---- wikikg2: edge.csv.gz rows "head,tail" and edge_reltype.csv.gz rows in lockstep ---- */

typedef struct wiki_ctx {
    hg_builder *b;
    int32_t entity;
    int64_t num_nodes, etypes_made, rows;
} wiki_ctx;

/* Relation r is edge type r, named "rel<r>" (the raw files carry no relation names). */
static int32_t wiki_etype(wiki_ctx *c, int64_t rel)
{
    for (; c->etypes_made <= rel; c->etypes_made++) {
        char nm[32];
        snprintf(nm, sizeof nm, "rel%lld", (long long)c->etypes_made);
        hgb_etype(c->b, nm, c->entity, c->entity);
    }
    return (int32_t)rel;
}

static int wiki_edges(wiki_ctx *c, tio_reader *edges, tio_reader *types, rg_err *err)
{
    for (;;) {
        int ge = next_data_line(edges, err);
        if (ge < 0) return -1;
        int gt = next_data_line(types, err);
        if (gt < 0) return -1;
        if (ge != gt)
            return rg_errf(err, "%s and %s differ in length: one ends after %lld rows", edges->path, types->path,
                           (long long)c->rows);
        if (!ge) return 0;
        char *f[3], *g[2];
        int64_t h, t, rel;
        if (tio_split(edges, ',', f, 2) != 2 || tio_parse_below(f[0], c->num_nodes, &h) ||
            tio_parse_below(f[1], c->num_nodes, &t))
            return tio_fail(edges, err, "'head,tail' with ids below num-node-list");
        if (tio_split(types, ' ', g, 1) != 1 || tio_parse_below(g[0], OGB_MAX_RELATIONS, &rel))
            return tio_fail(types, err, "one relation id");
        hgb_add_edge(c->b, wiki_etype(c, rel), h, t);
        c->rows++;
    }
}

static int wiki_load(const char *raw, wiki_ctx *c, rg_err *err)
{
    char *nodes = tio_require(raw, "num-node-list.csv.gz", "ogb-wikikg2", err);
    int rc = nodes ? read_single_count(nodes, &c->num_nodes, err) : -1;
    free(nodes);
    if (rc) return -1;
    hgb_ntype_count_at_least(c->b, c->entity, c->num_nodes);
    char *ep = tio_require(raw, "edge.csv.gz", "ogb-wikikg2", err);
    char *tp = ep ? tio_require(raw, "edge_reltype.csv.gz", "ogb-wikikg2", err) : NULL;
    int64_t want = -1;
    rc = tp ? published_edge_count(raw, &want, err) : -1;
    if (rc == 0 && want > 0) hgb_reserve(c->b, want);
    tio_reader *edges = rc == 0 ? tio_open(ep, err) : NULL;
    tio_reader *types = edges ? tio_open(tp, err) : NULL;
    rc = types ? wiki_edges(c, edges, types, err) : -1;
    if (rc == 0) rc = check_edge_count(raw, want, c->rows, err);
    tio_close(edges);
    tio_close(types);
    free(ep);
    free(tp);
    return rc;
}

hg_graph *ogb_load_wikikg2(const char *dir, const char *name, rg_err *err)
{
    char *raw = raw_dir(dir, "edge.csv.gz", err);
    if (!raw) return NULL;
    wiki_ctx c = {hgb_new(default_name(name, "wikikg2")), 0, 0, 0, 0};
    c.entity = hgb_ntype(c.b, "entity");
    int rc = wiki_load(raw, &c, err);
    free(raw);
    if (rc) {
        hgb_free(c.b);
        return NULL;
    }
    return hgb_finish(c.b, 0, err);
}
