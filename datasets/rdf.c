/* RDF loaders for AIFB, MUTAG, BGS and AM with DGL's conversion rules (dgl/data/rdf.py):
 * serd streams N-Triples (plain or gzip through zlib) and Turtle/N3 into interned terms. */
#include "datasets/loaders.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <serd/serd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/*
 * How a graph is made, and in which order nodes are numbered
 * ----------------------------------------------------------
 * 1. Every .nt, .nt.gz, .n3 and .ttl file of the folder is parsed, in strcmp order of file
 *    names. Terms are interned (hash tables) and each triple is kept as four int32: subject,
 *    predicate, object, file. No file text is held in memory.
 * 2. As in DGL (rdflib parses each file into its own set, then chains the sets), a triple
 *    repeated within one file counts once, while one repeated across files counts per file.
 * 3. As in DGL, all triples are sorted before entities get ids. The order emulates rdflib's
 *    term order used by Python's sort: blank nodes < IRIs < literals; IRIs and blank-node
 *    labels by code point (= UTF-8 byte order); literals of two numeric XSD datatypes by
 *    value, otherwise by datatype IRI (plain = xsd:string), then no language before any
 *    language, then lexical form. Terms rdflib would tie are ordered by their lexical form.
 * 4. Triples are walked in that order with the dataset's rules; an entity is keyed by DGL's
 *    str(Entity) = "<class>/<id>", gets its node type from the first triple that shows it,
 *    and its type-local id in first-seen order. DGL's to_hetero numbers the nodes of a type
 *    by ascending first-seen global id, so the type-local ids are the same as DGL's wherever
 *    the triple order is. Known differences: rdflib names blank nodes with random labels
 *    (only AM keeps blank nodes, so AM's blank-node numbering cannot match), and rdflib
 *    normalises typed literals' lexical forms (e.g. "01"^^xsd:int becomes "1"), which we
 *    do not; neither happens in the shared AIFB and MUTAG files.
 * 5. Edge types are canonical (relation, source type, destination type) in first-seen
 *    order, "type"/"rev-type" renamed "rdftype"/"rev-rdftype", and hgb_finish appends the
 *    reverse type "rev-<rel>" with id r + R for each, as DGL does.
 */

#define RDF_PAGE_SIZE 65536

/* ---------------------------------------------------------------- string interning */

/* Interned byte strings; ids are dense and assigned in first-interned order. */
typedef struct rdf_strtab {
    char *arena;
    size_t used, arena_cap;
    size_t *off;
    uint32_t *len;
    uint64_t *hash;
    int32_t n, cap;
    int32_t *slot;   /* open addressing, -1 = empty; capacity is a power of two */
    size_t nslot;
} rdf_strtab;

static void strtab_free(rdf_strtab *t)
{
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->hash);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

static const char *strtab_get(const rdf_strtab *t, int32_t id, size_t *len)
{
    RG_ASSERT(id >= 0 && id < t->n);
    if (len) *len = t->len[id];
    return t->arena + t->off[id];
}

static void strtab_rehash(rdf_strtab *t, size_t nslot)
{
    free(t->slot);
    t->slot = rg_xmalloc(nslot * sizeof *t->slot);
    memset(t->slot, 0xff, nslot * sizeof *t->slot);
    t->nslot = nslot;
    for (int32_t id = 0; id < t->n; id++) {
        size_t i = t->hash[id] & (nslot - 1);
        while (t->slot[i] >= 0) i = (i + 1) & (nslot - 1);
        t->slot[i] = id;
    }
}

static int32_t strtab_append(rdf_strtab *t, const char *s, size_t n, uint64_t h)
{
    if (t->n == INT32_MAX - 1) RG_DIE("rdf: more than 2^31 distinct strings");
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1024;
        t->off = rg_xrealloc(t->off, (size_t)t->cap * sizeof *t->off);
        t->len = rg_xrealloc(t->len, (size_t)t->cap * sizeof *t->len);
        t->hash = rg_xrealloc(t->hash, (size_t)t->cap * sizeof *t->hash);
    }
    if (t->used + n + 1 > t->arena_cap) {
        while (t->used + n + 1 > t->arena_cap) t->arena_cap = t->arena_cap ? 2 * t->arena_cap : 65536;
        t->arena = rg_xrealloc(t->arena, t->arena_cap);
    }
    memcpy(t->arena + t->used, s, n);
    t->arena[t->used + n] = '\0';   /* NUL-terminated too, for printing and strtod */
    t->off[t->n] = t->used;
    t->len[t->n] = (uint32_t)n;
    t->hash[t->n] = h;
    t->used += n + 1;
    return t->n++;
}

/* Returns the id of s[0..n), adding it if new (*is_new says which, when non-NULL). */
static int32_t strtab_intern(rdf_strtab *t, const char *s, size_t n, int *is_new)
{
    if (n > UINT32_MAX) RG_DIE("rdf: a single term longer than 4 GiB");
    if (2 * ((size_t)t->n + 1) > t->nslot) strtab_rehash(t, t->nslot ? 2 * t->nslot : 4096);
    uint64_t h = rg_fnv1a64(s, n, RG_FNV_SEED);
    size_t i = h & (t->nslot - 1);
    for (; t->slot[i] >= 0; i = (i + 1) & (t->nslot - 1)) {
        int32_t id = t->slot[i];
        if (t->hash[id] == h && t->len[id] == n && memcmp(t->arena + t->off[id], s, n) == 0) {
            if (is_new) *is_new = 0;
            return id;
        }
    }
    int32_t id = strtab_append(t, s, n, h);
    t->slot[i] = id;
    if (is_new) *is_new = 1;
    return id;
}

static int32_t strtab_intern_cstr(rdf_strtab *t, const char *s)
{
    return strtab_intern(t, s, strlen(s), NULL);
}

/* ---------------------------------------------------------------- terms and triples */

/* Kinds in rdflib's order (BNode < URIRef < Literal), so kinds compare as numbers. */
enum { TERM_BNODE = 0, TERM_IRI = 1, TERM_LITERAL = 2 };

typedef struct rdf_term {
    int32_t str;    /* IRI, blank-node label or lexical form, in ctx->strings */
    int32_t dt;     /* literal datatype: term id of an IRI, or -1 */
    int32_t lang;   /* literal language (lower case), in ctx->strings, or -1 */
    int32_t kind;
} rdf_term;

typedef struct rdf_triple {
    int32_t s, p, o, file;
} rdf_triple;

/* What one dataset's rules make of a term (DGL's parse_entity / parse_relation). */
enum { RULE_KEEP = 0, RULE_DROP = 1, RULE_ERROR = 2 };
#define CLS_NONE (-1)   /* MUTAG: an entity whose class process_tuple decides */

typedef struct rdf_ctx rdf_ctx;
typedef struct rdf_rules {
    const char *dataset;
    /* Sets *cls (names id or CLS_NONE) and *id (names id); on RULE_ERROR sets *why. */
    int (*entity)(rdf_ctx *c, int32_t term, int32_t *cls, int32_t *id, const char **why);
    int (*relation)(rdf_ctx *c, int32_t term, int32_t *rel, const char **why);
    int mutag_fixup;    /* MUTAG's process_tuple: SCHEMA classes and relation-named classes */
} rdf_rules;

struct rdf_ctx {
    const rdf_rules *rules;
    rg_err *err;
    int failed;
    char **files;
    int nfiles;
    /* parsing */
    rdf_strtab strings;     /* IRIs, labels, lexical forms, languages */
    rdf_strtab term_keys;   /* (kind, str, dt, lang) packed: the term index */
    rdf_term *terms;
    int32_t nterms, terms_cap;
    rdf_triple *triples;
    int64_t ntriples, triples_cap;
    int cur_file;
    SerdSyntax cur_syntax;
    SerdEnv *env;
    /* rules */
    rdf_strtab names;       /* classes, entity ids, relation names */
    rdf_strtab ent_keys;    /* "<class>/<id>": the id of a key is the entity's global id */
    rdf_strtab etype_keys;  /* (relation, src ntype, dst ntype) packed */
};

static int32_t term_add(rdf_ctx *c, int32_t kind, int32_t str, int32_t dt, int32_t lang)
{
    int32_t key[4] = {kind, str, dt, lang};
    int is_new;
    int32_t id = strtab_intern(&c->term_keys, (const char *)key, sizeof key, &is_new);
    if (!is_new) return id;
    if (c->nterms == c->terms_cap) {
        c->terms_cap = c->terms_cap ? 2 * c->terms_cap : 4096;
        c->terms = rg_xrealloc(c->terms, (size_t)c->terms_cap * sizeof *c->terms);
    }
    RG_ASSERT(id == c->nterms);
    c->terms[c->nterms++] = (rdf_term){.str = str, .dt = dt, .lang = lang, .kind = kind};
    return id;
}

static const char *term_str(const rdf_ctx *c, int32_t term, size_t *len)
{
    return strtab_get(&c->strings, c->terms[term].str, len);
}

static int str_has_prefix(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

static int term_is_iri(const rdf_ctx *c, int32_t term, const char *iri)
{
    size_t n;
    const char *s = term_str(c, term, &n);
    return c->terms[term].kind == TERM_IRI && n == strlen(iri) && memcmp(s, iri, n) == 0;
}

/* ---------------------------------------------------------------- serd callbacks */

static int fail(rdf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(rdf_ctx *c, const char *fmt, ...)
{
    if (c->failed) return -1;   /* the first error is the one worth reading */
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rg_errf(c->err, "%s", msg);
    c->failed = 1;
    return -1;
}

static SerdStatus on_serd_error(void *handle, const SerdError *e)
{
    rdf_ctx *c = handle;
    char msg[1024];
    va_list ap;
    va_copy(ap, *e->args);
    vsnprintf(msg, sizeof msg, e->fmt, ap);
    va_end(ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    fail(c, "%s:%u:%u: %s", c->files[c->cur_file], e->line, e->col, msg);
    return e->status;
}

static SerdStatus on_base(void *handle, const SerdNode *uri)
{
    rdf_ctx *c = handle;
    return serd_env_set_base_uri(c->env, uri);
}

static SerdStatus on_prefix(void *handle, const SerdNode *name, const SerdNode *uri)
{
    rdf_ctx *c = handle;
    return serd_env_set_prefix(c->env, name, uri);
}

/* An IRI node as an absolute IRI: N-Triples IRIs are absolute already; Turtle's may be
 * relative (resolved against the base) or prefixed names (expanded with @prefix). */
static int32_t intern_iri(rdf_ctx *c, const SerdNode *node)
{
    int absolute = node->type == SERD_URI &&
                   (c->cur_syntax == SERD_NTRIPLES || serd_uri_string_has_scheme(node->buf));
    if (absolute) {
        int32_t s = strtab_intern(&c->strings, (const char *)node->buf, node->n_bytes, NULL);
        return term_add(c, TERM_IRI, s, -1, -1);
    }
    SerdNode full = serd_env_expand_node(c->env, node);
    if (!full.buf) {
        return fail(c, "%s: cannot expand '%s' to an IRI (%s)", c->files[c->cur_file],
                    (const char *)node->buf,
                    node->type == SERD_CURIE ? "undefined prefix" : "no base IRI");
    }
    int32_t s = strtab_intern(&c->strings, (const char *)full.buf, full.n_bytes, NULL);
    serd_node_free(&full);
    return term_add(c, TERM_IRI, s, -1, -1);
}

static int32_t intern_literal(rdf_ctx *c, const SerdNode *node, const SerdNode *dt, const SerdNode *lang)
{
    int32_t dt_term = -1, lang_str = -1;
    if (dt && dt->buf) {
        dt_term = intern_iri(c, dt);
        if (dt_term < 0) return -1;
    }
    if (lang && lang->buf) {
        /* rdflib lower-cases language tags, so "EN" and "en" are one literal */
        char tag[64];
        size_t n = lang->n_bytes < sizeof tag ? lang->n_bytes : sizeof tag - 1;
        for (size_t i = 0; i < n; i++) tag[i] = (char)tolower(lang->buf[i]);
        lang_str = strtab_intern(&c->strings, tag, n, NULL);
    }
    int32_t s = strtab_intern(&c->strings, (const char *)node->buf, node->n_bytes, NULL);
    return term_add(c, TERM_LITERAL, s, dt_term, lang_str);
}

static int32_t intern_node(rdf_ctx *c, const SerdNode *node, const SerdNode *dt, const SerdNode *lang)
{
    switch (node->type) {
    case SERD_BLANK: {
        int32_t s = strtab_intern(&c->strings, (const char *)node->buf, node->n_bytes, NULL);
        return term_add(c, TERM_BNODE, s, -1, -1);
    }
    case SERD_URI:
    case SERD_CURIE:
        return intern_iri(c, node);
    case SERD_LITERAL:
        return intern_literal(c, node, dt, lang);
    default:
        return fail(c, "%s: unexpected RDF node of serd type %d", c->files[c->cur_file], (int)node->type);
    }
}

static SerdStatus on_statement(void *handle, SerdStatementFlags flags, const SerdNode *graph,
                               const SerdNode *subject, const SerdNode *predicate,
                               const SerdNode *object, const SerdNode *object_datatype,
                               const SerdNode *object_lang)
{
    (void)flags;
    (void)graph;
    rdf_ctx *c = handle;
    int32_t s = intern_node(c, subject, NULL, NULL);
    int32_t p = s < 0 ? -1 : intern_node(c, predicate, NULL, NULL);
    int32_t o = p < 0 ? -1 : intern_node(c, object, object_datatype, object_lang);
    if (o < 0) return SERD_ERR_BAD_ARG;
    if (c->ntriples == c->triples_cap) {
        c->triples_cap = c->triples_cap ? 2 * c->triples_cap : 65536;
        c->triples = rg_xrealloc(c->triples, (size_t)c->triples_cap * sizeof *c->triples);
    }
    c->triples[c->ntriples++] = (rdf_triple){s, p, o, c->cur_file};
    return SERD_SUCCESS;
}

/* ---------------------------------------------------------------- reading files */

/* zlib stream for serd's source API; gzread also passes plain (uncompressed) files through. */
typedef struct gz_source {
    gzFile gz;
    const char *path;
    int failed;
    char msg[256];
} gz_source;

static size_t gz_read(void *buf, size_t size, size_t nmemb, void *stream)
{
    gz_source *src = stream;
    if (src->failed) return 0;
    int n = gzread(src->gz, buf, (unsigned)(size * nmemb));
    int errnum = Z_OK;
    const char *msg = gzerror(src->gz, &errnum);
    /* A truncated gzip member reads as a short read with Z_BUF_ERROR, not as -1. */
    if (n < 0 || errnum != Z_OK) {
        src->failed = 1;
        /* zlib's message starts with "<path>: ", which our message already says */
        size_t np = strlen(src->path);
        if (strncmp(msg, src->path, np) == 0 && strncmp(msg + np, ": ", 2) == 0) msg += np + 2;
        snprintf(src->msg, sizeof src->msg, "%s", errnum == Z_ERRNO ? strerror(errno) : msg);
        return 0;
    }
    return (size_t)n / (size ? size : 1);
}

static int gz_failed(void *stream)
{
    return ((gz_source *)stream)->failed;
}

static SerdSyntax syntax_of(const char *path)
{
    size_t n = strlen(path);
    if ((n >= 3 && strcmp(path + n - 3, ".n3") == 0) || (n >= 4 && strcmp(path + n - 4, ".ttl") == 0))
        return SERD_TURTLE;
    return SERD_NTRIPLES;
}

/* Turtle's relative IRIs (like cwm's "<>") resolve against the file's own URI, as in rdflib. */
static SerdEnv *env_for_file(const char *path)
{
    char *abs = realpath(path, NULL);
    SerdNode base = serd_node_new_file_uri((const uint8_t *)(abs ? abs : path), NULL, NULL, true);
    SerdEnv *env = serd_env_new(&base);
    serd_node_free(&base);
    free(abs);
    return env;
}

/* After a syntax error in a gzip file, reads on to the end: corrupt deflate data often
 * decodes to garbage first and fails its CRC only at the end, and that is the real cause. */
static void drain_gzip(gz_source *src)
{
    if (gzdirect(src->gz)) return;
    char scratch[RDF_PAGE_SIZE];
    while (gz_read(scratch, 1, sizeof scratch, src) == sizeof scratch) {}
}

static int read_with_serd(rdf_ctx *c, SerdReader *reader, gz_source *src)
{
    const char *path = c->files[c->cur_file];
    SerdStatus st = serd_reader_start_source_stream(reader, gz_read, gz_failed, src,
                                                    (const uint8_t *)path, RDF_PAGE_SIZE);
    while (st == SERD_SUCCESS && !c->failed && !src->failed) st = serd_reader_read_chunk(reader);
    serd_reader_end_stream(reader);
    if (c->failed && !src->failed) drain_gzip(src);
    if (src->failed) {
        /* The decompression error explains any syntax error the cut-off text caused. */
        c->failed = 0;
        return fail(c, "%s: truncated or corrupt gzip data (zlib: %s)", path, src->msg);
    }
    if (c->failed) return -1;
    if (st != SERD_SUCCESS && st != SERD_FAILURE)   /* SERD_FAILURE = end of input */
        return fail(c, "%s: %s", path, (const char *)serd_strerror(st));
    return 0;
}

static int parse_file(rdf_ctx *c, int file)
{
    const char *path = c->files[file];
    gz_source src = {.path = path};
    src.gz = gzopen(path, "rb");
    if (!src.gz) return fail(c, "%s: cannot open: %s", path, strerror(errno));
    gzbuffer(src.gz, 1 << 17);
    c->cur_file = file;
    c->cur_syntax = syntax_of(path);
    c->env = env_for_file(path);
    SerdReader *reader = serd_reader_new(c->cur_syntax, c, NULL, on_base, on_prefix, on_statement, NULL);
    serd_reader_set_strict(reader, true);
    serd_reader_set_error_sink(reader, on_serd_error, c);
    /* Blank-node labels are local to a file: keep them apart across files. */
    char blank_prefix[32];
    snprintf(blank_prefix, sizeof blank_prefix, "f%d_", file);
    serd_reader_add_blank_prefix(reader, (const uint8_t *)blank_prefix);
    int rc = read_with_serd(c, reader, &src);
    serd_reader_free(reader);
    serd_env_free(c->env);
    c->env = NULL;
    gzclose(src.gz);
    return rc;
}

static int is_rdf_name(const char *name)
{
    static const char *const exts[] = {".nt", ".nt.gz", ".n3", ".ttl"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        size_t k = strlen(exts[i]);
        if (n > k && strcmp(name + n - k, exts[i]) == 0) return 1;
    }
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The RDF files of dir, sorted by name (strcmp, independent of the locale). */
static int list_rdf_files(rdf_ctx *c, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return fail(c, "%s: cannot open the dataset folder: %s", dir, strerror(errno));
    int cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!is_rdf_name(e->d_name)) continue;
        char *path = rg_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (c->nfiles == cap) {
            cap = cap ? 2 * cap : 8;
            c->files = rg_xrealloc(c->files, (size_t)cap * sizeof *c->files);
        }
        c->files[c->nfiles++] = path;
    }
    closedir(d);
    if (c->nfiles == 0)
        return fail(c, "%s: no RDF files found (looked for *.nt, *.nt.gz, *.n3, *.ttl)", dir);
    qsort(c->files, (size_t)c->nfiles, sizeof *c->files, cmp_names);
    return 0;
}

/* ---------------------------------------------------------------- rdflib's order */

static const char XSD[] = "http://www.w3.org/2001/XMLSchema#";

static int is_numeric_datatype(const char *iri, size_t n)
{
    static const char *const numeric[] = {
        "integer", "decimal", "double", "float", "byte", "int", "long", "short",
        "negativeInteger", "nonNegativeInteger", "nonPositiveInteger", "positiveInteger",
        "unsignedByte", "unsignedInt", "unsignedLong", "unsignedShort"};
    size_t k = sizeof XSD - 1;
    if (n <= k || memcmp(iri, XSD, k) != 0) return 0;
    for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++)
        if (strlen(numeric[i]) == n - k && memcmp(iri + k, numeric[i], n - k) == 0) return 1;
    return 0;
}

typedef struct term_order {
    const rdf_ctx *c;
    double *value;       /* numeric value of numeric literals */
    uint8_t *numeric;    /* 1 when value is meaningful */
    int32_t xsd_string;  /* strings id of xsd:string, the datatype of plain literals */
} term_order;

static int cmp_bytes(const rdf_strtab *t, int32_t a, int32_t b)
{
    size_t na, nb;
    const char *sa = strtab_get(t, a, &na), *sb = strtab_get(t, b, &nb);
    int r = memcmp(sa, sb, na < nb ? na : nb);
    if (r) return r;
    return (na > nb) - (na < nb);
}

static int32_t datatype_str(const term_order *o, int32_t term)
{
    int32_t dt = o->c->terms[term].dt;
    return dt < 0 ? o->xsd_string : o->c->terms[dt].str;
}

static int cmp_literals(const term_order *o, int32_t a, int32_t b)
{
    const rdf_term *ta = &o->c->terms[a], *tb = &o->c->terms[b];
    const rdf_strtab *s = &o->c->strings;
    if (o->numeric[a] && o->numeric[b] && o->value[a] != o->value[b])
        return o->value[a] < o->value[b] ? -1 : 1;
    int32_t da = datatype_str(o, a), db = datatype_str(o, b);
    if (da != db) return cmp_bytes(s, da, db);
    if (ta->lang != tb->lang) {
        if (ta->lang < 0 || tb->lang < 0) return ta->lang < 0 ? -1 : 1;
        return cmp_bytes(s, ta->lang, tb->lang);
    }
    if (ta->str != tb->str) return cmp_bytes(s, ta->str, tb->str);
    return (ta->dt > tb->dt) - (ta->dt < tb->dt);   /* plain vs explicit xsd:string */
}

static int cmp_terms(const void *pa, const void *pb, void *arg)
{
    const term_order *o = arg;
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    if (a == b) return 0;
    const rdf_term *ta = &o->c->terms[a], *tb = &o->c->terms[b];
    if (ta->kind != tb->kind) return ta->kind < tb->kind ? -1 : 1;
    if (ta->kind != TERM_LITERAL) return cmp_bytes(&o->c->strings, ta->str, tb->str);
    return cmp_literals(o, a, b);
}

static void literal_values(rdf_ctx *c, term_order *o)
{
    o->value = rg_xcalloc((size_t)c->nterms, sizeof *o->value);
    o->numeric = rg_xcalloc((size_t)c->nterms, 1);
    for (int32_t t = 0; t < c->nterms; t++) {
        if (c->terms[t].kind != TERM_LITERAL || c->terms[t].dt < 0) continue;
        size_t n;
        const char *dt = term_str(c, c->terms[t].dt, &n);
        if (!is_numeric_datatype(dt, n)) continue;
        const char *lex = term_str(c, t, NULL);
        char *end;
        o->value[t] = serd_strtod(lex, &end);
        o->numeric[t] = end != lex && *end == '\0';
    }
}

/* rank[t] = position of term t in rdflib's order (a bijection). */
static int32_t *term_ranks(rdf_ctx *c)
{
    term_order o = {.c = c};
    char xsd_string[64];
    snprintf(xsd_string, sizeof xsd_string, "%sstring", XSD);
    o.xsd_string = strtab_intern_cstr(&c->strings, xsd_string);
    literal_values(c, &o);
    int32_t *order = rg_xmalloc((size_t)c->nterms * sizeof *order);
    for (int32_t t = 0; t < c->nterms; t++) order[t] = t;
    qsort_r(order, (size_t)c->nterms, sizeof *order, cmp_terms, &o);
    int32_t *rank = rg_xmalloc((size_t)c->nterms * sizeof *rank);
    for (int32_t i = 0; i < c->nterms; i++) rank[order[i]] = i;
    free(order);
    free(o.value);
    free(o.numeric);
    return rank;
}

static int cmp_triples(const void *pa, const void *pb)
{
    const rdf_triple *a = pa, *b = pb;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->p != b->p) return a->p < b->p ? -1 : 1;
    if (a->o != b->o) return a->o < b->o ? -1 : 1;
    return (a->file > b->file) - (a->file < b->file);
}

/* Sorts the triples in rdflib's order and drops repeats within one file. */
static void sort_triples(rdf_ctx *c)
{
    int32_t *rank = term_ranks(c);
    int32_t *term_at = rg_xmalloc((size_t)c->nterms * sizeof *term_at);
    for (int32_t t = 0; t < c->nterms; t++) term_at[rank[t]] = t;
    rdf_triple *tr = c->triples;
    for (int64_t i = 0; i < c->ntriples; i++)
        tr[i] = (rdf_triple){rank[tr[i].s], rank[tr[i].p], rank[tr[i].o], tr[i].file};
    qsort(tr, (size_t)c->ntriples, sizeof *tr, cmp_triples);
    int64_t kept = 0;
    for (int64_t i = 0; i < c->ntriples; i++) {
        if (kept > 0 && cmp_triples(&tr[kept - 1], &tr[i]) == 0) continue;
        tr[kept++] = tr[i];
    }
    for (int64_t i = 0; i < kept; i++)
        tr[i] = (rdf_triple){term_at[tr[i].s], term_at[tr[i].p], term_at[tr[i].o], tr[i].file};
    c->ntriples = kept;
    free(rank);
    free(term_at);
}

/* ---------------------------------------------------------------- Python string helpers */

/* Number of parts of Python's s.split('/'). */
static int split_count(const char *s, size_t n)
{
    int parts = 1;
    for (size_t i = 0; i < n; i++) parts += s[i] == '/';
    return parts;
}

/* Part k of Python's s.split('/'); the caller has checked k < split_count. */
static int32_t split_part(rdf_ctx *c, const char *s, size_t n, int k)
{
    size_t start = 0;
    for (int part = 0; part < k; part++) {
        const char *slash = memchr(s + start, '/', n - start);
        RG_ASSERT(slash);
        start = (size_t)(slash - s) + 1;
    }
    const char *end = memchr(s + start, '/', n - start);
    size_t len = end ? (size_t)(end - s) - start : n - start;
    return strtab_intern(&c->names, s + start, len, NULL);
}

/* Python's s.split('/')[-1]. */
static int32_t last_part(rdf_ctx *c, const char *s, size_t n)
{
    size_t start = n;
    while (start > 0 && s[start - 1] != '/') start--;
    return strtab_intern(&c->names, s + start, n - start, NULL);
}

/* "<a>/<b>" from two names, as DGL's '%s/%s' % (sp[4], sp[5]). */
static int32_t join_parts(rdf_ctx *c, const char *s, size_t n, int k)
{
    size_t la, lb;
    const char *a = strtab_get(&c->names, split_part(c, s, n, k), &la);
    rg_str buf = {0};
    rg_str_printf(&buf, "%.*s/", (int)la, a);
    const char *b = strtab_get(&c->names, split_part(c, s, n, k + 1), &lb);
    rg_str_printf(&buf, "%.*s", (int)lb, b);
    int32_t id = strtab_intern(&c->names, buf.s, buf.len, NULL);
    rg_str_free(&buf);
    return id;
}

/* Python's s.replace('.', '_'). */
static int32_t dots_to_underscores(rdf_ctx *c, const char *s, size_t n)
{
    char *copy = rg_xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) copy[i] = s[i] == '.' ? '_' : s[i];
    int32_t id = strtab_intern(&c->names, copy, n, NULL);
    free(copy);
    return id;
}

static int32_t name_of_term(rdf_ctx *c, int32_t term)
{
    size_t n;
    const char *s = term_str(c, term, &n);
    return strtab_intern(&c->names, s, n, NULL);
}

/* ---------------------------------------------------------------- AIFB rules */

static const char AIFB_ENTITY[] = "http://www.aifb.uni-karlsruhe.de/";
static const char AIFB_RELATION[] = "http://swrc.ontoware.org/";

static int aifb_entity(rdf_ctx *c, int32_t term, int32_t *cls, int32_t *id, const char **why)
{
    int kind = c->terms[term].kind;
    if (kind == TERM_LITERAL) {
        *cls = strtab_intern_cstr(&c->names, "_Literal");
        *id = name_of_term(c, term);
        return RULE_KEEP;
    }
    size_t n;
    const char *s = term_str(c, term, &n);
    if (kind == TERM_BNODE || !str_has_prefix(s, n, AIFB_ENTITY)) return RULE_DROP;
    if (split_count(s, n) < 6) {
        *why = "DGL takes the class from split('/')[3] and the id from split('/')[5]";
        return RULE_ERROR;
    }
    *cls = split_part(c, s, n, 3);
    *id = split_part(c, s, n, 5);
    return RULE_KEEP;
}

static int aifb_relation(rdf_ctx *c, int32_t term, int32_t *rel, const char **why)
{
    (void)why;
    if (term_is_iri(c, term, "http://swrc.ontoware.org/ontology#employs") ||
        term_is_iri(c, term, "http://swrc.ontoware.org/ontology#affiliation"))
        return RULE_DROP;   /* the labels (affiliation) and their inverse */
    size_t n;
    const char *s = term_str(c, term, &n);
    *rel = str_has_prefix(s, n, AIFB_RELATION) ? split_part(c, s, n, 3) : last_part(c, s, n);
    return RULE_KEEP;
}

/* ---------------------------------------------------------------- MUTAG rules */

static const char MUTAG_PREFIX[] = "http://dl-learner.org/carcinogenesis#";

/* Python's re.match("<word>[0-9]", s): s starts with word and then a digit. */
static int starts_word_digit(const char *s, size_t n, const char *word)
{
    size_t k = strlen(word);
    return n > k && memcmp(s, word, k) == 0 && s[k] >= '0' && s[k] <= '9';
}

static int mutag_entity(rdf_ctx *c, int32_t term, int32_t *cls, int32_t *id, const char **why)
{
    (void)why;
    int kind = c->terms[term].kind;
    if (kind == TERM_LITERAL) {
        *cls = strtab_intern_cstr(&c->names, "_Literal");
        *id = name_of_term(c, term);
        return RULE_KEEP;
    }
    size_t n;
    const char *s = term_str(c, term, &n);
    if (kind == TERM_BNODE || !str_has_prefix(s, n, MUTAG_PREFIX)) return RULE_DROP;
    const char *inst = s + strlen(MUTAG_PREFIX);
    size_t ni = n - strlen(MUTAG_PREFIX);
    if (starts_word_digit(inst, ni, "d")) *cls = strtab_intern_cstr(&c->names, "d");
    else if (starts_word_digit(inst, ni, "bond")) *cls = strtab_intern_cstr(&c->names, "bond");
    else *cls = CLS_NONE;
    *id = strtab_intern(&c->names, inst, ni, NULL);
    return RULE_KEEP;
}

static int mutag_relation(rdf_ctx *c, int32_t term, int32_t *rel, const char **why)
{
    (void)why;
    if (term_is_iri(c, term, "http://dl-learner.org/carcinogenesis#isMutagenic"))
        return RULE_DROP;   /* the label */
    size_t n;
    const char *s = term_str(c, term, &n);
    if (str_has_prefix(s, n, MUTAG_PREFIX))
        *rel = strtab_intern(&c->names, s + strlen(MUTAG_PREFIX), n - strlen(MUTAG_PREFIX), NULL);
    else
        *rel = last_part(c, s, n);
    return RULE_KEEP;
}

/* ---------------------------------------------------------------- BGS rules */

static const char BGS_ENTITY[] = "http://data.bgs.ac.uk/";
static const char BGS_STATUS[] = "http://data.bgs.ac.uk/ref/CurrentStatus";
static const char BGS_RELATION[] = "http://data.bgs.ac.uk/ref";

static int bgs_entity(rdf_ctx *c, int32_t term, int32_t *cls, int32_t *id, const char **why)
{
    (void)why;
    if (c->terms[term].kind != TERM_IRI) return RULE_DROP;   /* literals and blank nodes */
    size_t n;
    const char *s = term_str(c, term, &n);
    if (str_has_prefix(s, n, BGS_STATUS) || !str_has_prefix(s, n, BGS_ENTITY)) return RULE_DROP;
    if (split_count(s, n) != 7) return RULE_DROP;
    *cls = join_parts(c, s, n, 4);
    *id = split_part(c, s, n, 6);
    return RULE_KEEP;
}

static int bgs_relation(rdf_ctx *c, int32_t term, int32_t *rel, const char **why)
{
    if (term_is_iri(c, term, "http://data.bgs.ac.uk/ref/Lexicon/hasLithogenesis"))
        return RULE_DROP;   /* the label */
    size_t n;
    const char *s = term_str(c, term, &n);
    if (!str_has_prefix(s, n, BGS_RELATION)) {
        *rel = dots_to_underscores(c, s, n);
        return RULE_KEEP;
    }
    int parts = split_count(s, n);
    if (parts < 6) return RULE_DROP;
    if (parts > 6) {
        *why = "DGL asserts that relations under http://data.bgs.ac.uk/ref have 6 '/'-parts";
        return RULE_ERROR;
    }
    *rel = join_parts(c, s, n, 4);
    return RULE_KEEP;
}

/* ---------------------------------------------------------------- AM rules */

static const char AM_PREFIX[] = "http://purl.org/collections/nl/am/";

/* DGL keeps Python's list repr as the id when "<type>-<id>" does not split in two;
 * it only serves as an identity key, so a repr-like join is enough. */
static int32_t am_list_id(rdf_ctx *c, const char *s, size_t n)
{
    rg_str buf = {0};
    rg_str_puts(&buf, "['");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '-') rg_str_puts(&buf, "', '");
        else rg_str_putc(&buf, s[i]);
    }
    rg_str_puts(&buf, "']");
    int32_t id = strtab_intern(&c->names, buf.s, buf.len, NULL);
    rg_str_free(&buf);
    return id;
}

static int am_entity(rdf_ctx *c, int32_t term, int32_t *cls, int32_t *id, const char **why)
{
    int kind = c->terms[term].kind;
    if (kind == TERM_LITERAL) return RULE_DROP;
    if (kind == TERM_BNODE) {
        *cls = strtab_intern_cstr(&c->names, "_BNode");
        *id = name_of_term(c, term);
        return RULE_KEEP;
    }
    size_t n;
    const char *s = term_str(c, term, &n);
    if (!str_has_prefix(s, n, AM_PREFIX)) return RULE_DROP;
    if (split_count(s, n) != 7) {
        *why = "DGL asserts that entities under http://purl.org/collections/nl/am/ have 7 '/'-parts";
        return RULE_ERROR;
    }
    const char *last = s + strlen(AM_PREFIX);
    size_t nl = n - strlen(AM_PREFIX);
    const char *dash = memchr(last, '-', nl);
    if (dash && !memchr(dash + 1, '-', nl - (size_t)(dash + 1 - last))) {
        *cls = strtab_intern(&c->names, last, (size_t)(dash - last), NULL);
        *id = strtab_intern(&c->names, dash + 1, nl - (size_t)(dash + 1 - last), NULL);
    } else {
        *cls = strtab_intern_cstr(&c->names, "TYPE");
        *id = am_list_id(c, last, nl);
    }
    return RULE_KEEP;
}

static int am_relation(rdf_ctx *c, int32_t term, int32_t *rel, const char **why)
{
    if (term_is_iri(c, term, "http://purl.org/collections/nl/am/objectCategory") ||
        term_is_iri(c, term, "http://purl.org/collections/nl/am/material"))
        return RULE_DROP;   /* the label and a near-copy of it */
    size_t n;
    const char *s = term_str(c, term, &n);
    if (!str_has_prefix(s, n, AM_PREFIX)) {
        *rel = dots_to_underscores(c, s, n);
        return RULE_KEEP;
    }
    if (split_count(s, n) != 7) {
        *why = "DGL asserts that relations under http://purl.org/collections/nl/am/ have 7 '/'-parts";
        return RULE_ERROR;
    }
    *rel = split_part(c, s, n, 6);
    return RULE_KEEP;
}

static const rdf_rules AIFB_RULES = {"aifb", aifb_entity, aifb_relation, 0};
static const rdf_rules MUTAG_RULES = {"mutag", mutag_entity, mutag_relation, 1};
static const rdf_rules BGS_RULES = {"bgs", bgs_entity, bgs_relation, 0};
static const rdf_rules AM_RULES = {"am", am_entity, am_relation, 0};

/* ---------------------------------------------------------------- building the graph */

/* Per-term caches of the rules, and the ids handed to the builder. */
typedef struct graph_state {
    hg_builder *b;
    int8_t *ent_state, *rel_state;    /* -1 = not evaluated yet, else RULE_* */
    int32_t *ent_cls, *ent_id, *rel_name;
    int32_t *class_ntype;             /* names id -> node type, -1 = none yet */
    int32_t class_cap;
    int32_t *ntype_size;              /* nodes per type so far */
    int32_t *node_ntype, *node_local; /* per entity (ent_keys id) */
    int32_t node_cap;
    int32_t *etype_of_key;            /* per etype_keys id */
    int32_t etype_cap;
    rg_str key;
} graph_state;

typedef struct triple_view {
    int32_t scls, sid, rel, ocls, oid;
} triple_view;

static int rule_error(rdf_ctx *c, int file, int32_t term, const char *why)
{
    return fail(c, "%s: IRI <%s> does not fit DGL's %s rules: %s", c->files[file],
                term_str(c, term, NULL), c->rules->dataset, why);
}

static int eval_entity(rdf_ctx *c, graph_state *g, int32_t term, int file)
{
    if (g->ent_state[term] < 0) {
        const char *why = "";
        g->ent_state[term] = (int8_t)c->rules->entity(c, term, &g->ent_cls[term], &g->ent_id[term], &why);
        if (g->ent_state[term] == RULE_ERROR) return rule_error(c, file, term, why);
    }
    return g->ent_state[term] == RULE_ERROR ? -1 : g->ent_state[term];
}

static int eval_relation(rdf_ctx *c, graph_state *g, int32_t term, int file)
{
    if (g->rel_state[term] < 0) {
        const char *why = "";
        g->rel_state[term] = (int8_t)c->rules->relation(c, term, &g->rel_name[term], &why);
        if (g->rel_state[term] == RULE_ERROR) return rule_error(c, file, term, why);
    }
    return g->rel_state[term] == RULE_ERROR ? -1 : g->rel_state[term];
}

/* MUTAG's process_tuple: classes of schema triples and of relation-named objects. */
static int mutag_fixup(rdf_ctx *c, const rdf_triple *t, triple_view *v)
{
    size_t n;
    const char *pred = term_str(c, t->p, &n);
    if (!str_has_prefix(pred, n, MUTAG_PREFIX)) {
        v->ocls = strtab_intern_cstr(&c->names, "SCHEMA");
        if (v->scls == CLS_NONE) v->scls = v->ocls;
    }
    if (v->ocls == CLS_NONE) v->ocls = v->rel;
    if (v->scls == CLS_NONE)
        return fail(c, "%s: subject <%s> of a %s triple has no class under DGL's mutag rules "
                    "(neither d<digit> nor bond<digit>); DGL asserts here too",
                    c->files[t->file], term_str(c, t->s, NULL), pred);
    return 0;
}

/* DGL's parse_entity(s), parse_relation(p), parse_entity(o), then process_tuple.
 * Returns 1 to keep, 0 to drop, -1 on error. */
static int view_triple(rdf_ctx *c, graph_state *g, const rdf_triple *t, triple_view *v)
{
    int se = eval_entity(c, g, t->s, t->file);
    int pr = eval_relation(c, g, t->p, t->file);
    int oe = eval_entity(c, g, t->o, t->file);
    if (se < 0 || pr < 0 || oe < 0) return -1;
    if (se != RULE_KEEP || pr != RULE_KEEP || oe != RULE_KEEP) return 0;
    *v = (triple_view){g->ent_cls[t->s], g->ent_id[t->s], g->rel_name[t->p],
                       g->ent_cls[t->o], g->ent_id[t->o]};
    if (c->rules->mutag_fixup && mutag_fixup(c, t, v) < 0) return -1;
    return 1;
}

static void grow_i32(int32_t **a, int32_t *cap, int32_t need)
{
    if (need <= *cap) return;
    int32_t old = *cap, n = old ? old : 256;
    while (n < need) n *= 2;
    *a = rg_xrealloc(*a, (size_t)n * sizeof **a);
    for (int32_t i = old; i < n; i++) (*a)[i] = -1;
    *cap = n;
}

static int32_t ntype_of_class(rdf_ctx *c, graph_state *g, int32_t cls)
{
    int32_t old_cap = g->class_cap;
    grow_i32(&g->class_ntype, &g->class_cap, cls + 1);
    if (g->class_cap != old_cap) {
        g->ntype_size = rg_xrealloc(g->ntype_size, (size_t)g->class_cap * sizeof *g->ntype_size);
    }
    if (g->class_ntype[cls] < 0) {
        int32_t nt = hgb_ntype(g->b, strtab_get(&c->names, cls, NULL));
        /* one node type per distinct class name, so nt <= cls < class_cap */
        RG_ASSERT(nt < g->class_cap);
        g->class_ntype[cls] = nt;
        g->ntype_size[nt] = 0;
    }
    return g->class_ntype[cls];
}

/* The entity keyed "<class>/<id>" (DGL's str(Entity)), numbered at first sight. */
static int32_t entity_of(rdf_ctx *c, graph_state *g, int32_t cls, int32_t id, int32_t ntype)
{
    size_t lc, li;
    const char *cs = strtab_get(&c->names, cls, &lc), *is = strtab_get(&c->names, id, &li);
    g->key.len = 0;
    for (size_t i = 0; i < lc; i++) rg_str_putc(&g->key, cs[i]);
    rg_str_putc(&g->key, '/');
    for (size_t i = 0; i < li; i++) rg_str_putc(&g->key, is[i]);
    int is_new;
    int32_t node = strtab_intern(&c->ent_keys, g->key.s, g->key.len, &is_new);
    if (is_new) {
        int32_t cap = g->node_cap;
        grow_i32(&g->node_ntype, &g->node_cap, node + 1);
        if (g->node_cap != cap)
            g->node_local = rg_xrealloc(g->node_local, (size_t)g->node_cap * sizeof *g->node_local);
        g->node_ntype[node] = ntype;
        g->node_local[node] = g->ntype_size[ntype]++;
    }
    return node;
}

static int32_t etype_of(rdf_ctx *c, graph_state *g, int32_t rel, int32_t src_nt, int32_t dst_nt)
{
    int32_t key[3] = {rel, src_nt, dst_nt};
    int is_new;
    int32_t k = strtab_intern(&c->etype_keys, (const char *)key, sizeof key, &is_new);
    if (is_new) {
        grow_i32(&g->etype_of_key, &g->etype_cap, k + 1);
        const char *name = strtab_get(&c->names, rel, NULL);
        /* DGL's RENAME_DICT: "type" cannot be a key of nn.ModuleDict */
        if (strcmp(name, "type") == 0) name = "rdftype";
        else if (strcmp(name, "rev-type") == 0) name = "rev-rdftype";
        g->etype_of_key[k] = hgb_etype(g->b, name, src_nt, dst_nt);
    }
    return g->etype_of_key[k];
}

static int add_triple(rdf_ctx *c, graph_state *g, const rdf_triple *t)
{
    triple_view v;
    int keep = view_triple(c, g, t, &v);
    if (keep <= 0) return keep;
    int32_t snt = ntype_of_class(c, g, v.scls), ont = ntype_of_class(c, g, v.ocls);
    int32_t src = entity_of(c, g, v.scls, v.sid, snt);
    int32_t dst = entity_of(c, g, v.ocls, v.oid, ont);
    if (c->ent_keys.n >= INT32_MAX - 2) return fail(c, "rdf: more than 2^31 entities");
    int32_t et = etype_of(c, g, v.rel, g->node_ntype[src], g->node_ntype[dst]);
    hgb_add_edge(g->b, et, g->node_local[src], g->node_local[dst]);
    return 1;
}

static void graph_state_free(graph_state *g)
{
    free(g->ent_state);
    free(g->rel_state);
    free(g->ent_cls);
    free(g->ent_id);
    free(g->rel_name);
    free(g->class_ntype);
    free(g->ntype_size);
    free(g->node_ntype);
    free(g->node_local);
    free(g->etype_of_key);
    rg_str_free(&g->key);
}

static hg_graph *build_graph(rdf_ctx *c, const char *name, const char *dir)
{
    graph_state g = {0};
    size_t nt = (size_t)c->nterms;
    g.b = hgb_new(name);
    g.ent_state = rg_xmalloc(nt ? nt : 1);
    g.rel_state = rg_xmalloc(nt ? nt : 1);
    memset(g.ent_state, 0xff, nt);
    memset(g.rel_state, 0xff, nt);
    g.ent_cls = rg_xmalloc((nt ? nt : 1) * sizeof(int32_t));
    g.ent_id = rg_xmalloc((nt ? nt : 1) * sizeof(int32_t));
    g.rel_name = rg_xmalloc((nt ? nt : 1) * sizeof(int32_t));
    int rc = 0;
    for (int64_t i = 0; i < c->ntriples && rc >= 0; i++) rc = add_triple(c, &g, &c->triples[i]);
    graph_state_free(&g);
    if (rc < 0) {
        hgb_free(g.b);
        return NULL;
    }
    hg_graph *graph = hgb_finish(g.b, 1, c->err);
    if (!graph) rg_err_prefix(c->err, "%s: no triple survives DGL's %s rules", dir, c->rules->dataset);
    return graph;
}

/* ---------------------------------------------------------------- entry points */

static void ctx_free(rdf_ctx *c)
{
    for (int i = 0; i < c->nfiles; i++) free(c->files[i]);
    free(c->files);
    strtab_free(&c->strings);
    strtab_free(&c->term_keys);
    strtab_free(&c->names);
    strtab_free(&c->ent_keys);
    strtab_free(&c->etype_keys);
    free(c->terms);
    free(c->triples);
}

static hg_graph *rdf_load(const rdf_rules *rules, const char *dir, const char *name, rg_err *err)
{
    rdf_ctx c = {.rules = rules, .err = err};
    hg_graph *g = NULL;
    if (list_rdf_files(&c, dir) == 0) {
        int rc = 0;
        for (int f = 0; f < c.nfiles && rc == 0; f++) rc = parse_file(&c, f);
        if (rc == 0) {
            sort_triples(&c);
            g = build_graph(&c, name ? name : rules->dataset, dir);
        }
    }
    ctx_free(&c);
    return g;
}

hg_graph *rdf_load_aifb(const char *dir, const char *name, rg_err *err)
{
    return rdf_load(&AIFB_RULES, dir, name, err);
}

hg_graph *rdf_load_mutag(const char *dir, const char *name, rg_err *err)
{
    return rdf_load(&MUTAG_RULES, dir, name, err);
}

hg_graph *rdf_load_bgs(const char *dir, const char *name, rg_err *err)
{
    return rdf_load(&BGS_RULES, dir, name, err);
}

hg_graph *rdf_load_am(const char *dir, const char *name, rg_err *err)
{
    return rdf_load(&AM_RULES, dir, name, err);
}
