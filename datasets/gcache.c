/* Binary cache of a finished hg_graph: a versioned header, the names, every array (CSRs and
 * compaction maps included, so loading rebuilds nothing) and a crc32 of the payload. */
#include "datasets/loaders.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define GC_MAGIC "RGNNHGC"        /* 8 bytes with its NUL */
#define GC_VERSION 1u             /* bump when the layout below changes */
#define GC_BYTE_ORDER 0x01020304u
#define GC_CHUNK ((size_t)8 << 20)   /* I/O and checksum step: large, yet still in cache for crc32 */

/* Fixed 64-byte header, native byte order (checked through byte_order). */
typedef struct gc_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint32_t byte_order;
    int32_t num_ntypes, num_nodes, num_etypes, num_edges, num_unique;
    uint64_t names_bytes;         /* graph name, node type names, edge type names, each NUL-ended */
    uint64_t payload_bytes;       /* names + arrays */
    uint32_t payload_crc;
    uint32_t header_crc;          /* of every byte before this field */
} gc_header;
_Static_assert(sizeof(gc_header) == 64, "the cache header must stay 64 bytes");

/* The int32 arrays of the payload, in file order: where each lives in hg_graph, its length. */
typedef struct gc_array {
    size_t offset;
    int64_t count;
} gc_array;

enum { GC_ARRAYS = 14 };

static void gc_layout(const gc_header *h, gc_array a[GC_ARRAYS])
{
    int64_t nt = h->num_ntypes, n = h->num_nodes, r = h->num_etypes, e = h->num_edges, u = h->num_unique;
    const gc_array layout[GC_ARRAYS] = {
        {offsetof(hg_graph, ntype_ptr), nt + 1},  {offsetof(hg_graph, etype_src), r},
        {offsetof(hg_graph, etype_dst), r},       {offsetof(hg_graph, src), e},
        {offsetof(hg_graph, dst), e},             {offsetof(hg_graph, etype), e},
        {offsetof(hg_graph, etype_ptr), r + 1},   {offsetof(hg_graph, in_ptr), n + 1},
        {offsetof(hg_graph, in_eid), e},          {offsetof(hg_graph, out_ptr), n + 1},
        {offsetof(hg_graph, out_eid), e},         {offsetof(hg_graph, unique_src), u},
        {offsetof(hg_graph, unique_etype_ptr), r + 1}, {offsetof(hg_graph, edge_compact), e},
    };
    memcpy(a, layout, sizeof layout);
}

static int32_t *const *array_in(const hg_graph *g, const gc_array *a)
{
    return (int32_t *const *)((const char *)g + a->offset);
}

static uint64_t arrays_bytes(const gc_header *h)
{
    gc_array a[GC_ARRAYS];
    gc_layout(h, a);
    uint64_t bytes = 0;
    for (int i = 0; i < GC_ARRAYS; i++) bytes += (uint64_t)a[i].count * sizeof(int32_t);
    return bytes;
}

static uint32_t header_crc(const gc_header *h)
{
    return (uint32_t)crc32_z(0, (const Bytef *)h, offsetof(gc_header, header_crc));
}

static const char *name_or_empty(const char *s) { return s ? s : ""; }

/* All names, NUL-separated: the graph's, then node types', then edge types'. */
static char *names_blob(const hg_graph *g, uint64_t *bytes)
{
    rg_str b = {0};
    rg_str_puts(&b, name_or_empty(g->name));
    rg_str_putc(&b, 0);
    for (int32_t t = 0; t < g->num_ntypes; t++) {
        rg_str_puts(&b, name_or_empty(g->ntype_names[t]));
        rg_str_putc(&b, 0);
    }
    for (int32_t r = 0; r < g->num_etypes; r++) {
        rg_str_puts(&b, name_or_empty(g->etype_names[r]));
        rg_str_putc(&b, 0);
    }
    *bytes = b.len;
    return b.s;
}

/* ---- Writing ---- */

static int write_block(FILE *f, const void *data, size_t bytes, uLong *crc)
{
    const unsigned char *p = data;
    for (size_t done = 0; done < bytes; ) {
        size_t n = bytes - done < GC_CHUNK ? bytes - done : GC_CHUNK;
        if (fwrite(p + done, 1, n, f) != n) return -1;
        *crc = crc32_z(*crc, p + done, n);
        done += n;
    }
    return 0;
}

static int write_payload(FILE *f, const hg_graph *g, gc_header *h)
{
    uint64_t nb;
    char *names = names_blob(g, &nb);
    uLong crc = crc32_z(0, NULL, 0);
    int rc = write_block(f, names, nb, &crc);
    free(names);
    gc_array a[GC_ARRAYS];
    gc_layout(h, a);
    for (int i = 0; i < GC_ARRAYS && rc == 0; i++)
        rc = write_block(f, *array_in(g, &a[i]), (size_t)a[i].count * sizeof(int32_t), &crc);
    h->names_bytes = nb;
    h->payload_bytes = nb + arrays_bytes(h);
    h->payload_crc = (uint32_t)crc;
    h->header_crc = header_crc(h);
    return rc;
}

/* Written to <path>.tmp.<pid> and renamed over path, so readers never see half a file. */
int gcache_write(const char *path, const hg_graph *g, rg_err *err)
{
    char *tmp = rg_xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        rg_errf(err, "cannot write cache %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    gc_header h = {.magic = GC_MAGIC, .version = GC_VERSION, .header_bytes = sizeof h,
                   .byte_order = GC_BYTE_ORDER, .num_ntypes = g->num_ntypes, .num_nodes = g->num_nodes,
                   .num_etypes = g->num_etypes, .num_edges = g->num_edges, .num_unique = g->num_unique};
    /* The header goes first as a placeholder, then again once the checksums are known. */
    int rc = fwrite(&h, sizeof h, 1, f) == 1 ? write_payload(f, g, &h) : -1;
    if (rc == 0) rc = fseek(f, 0, SEEK_SET) == 0 && fwrite(&h, sizeof h, 1, f) == 1 ? 0 : -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) { rc = -1; saved = errno; }
    if (rc == 0 && rename(tmp, path) != 0) {
        rg_errf(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    if (rc != 0) {
        rg_errf(err, "cannot write cache %s: %s", tmp, strerror(saved));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

/* ---- Reading ---- */

static int check_header(const char *path, const gc_header *h, int64_t file_bytes, rg_err *err)
{
    if (memcmp(h->magic, GC_MAGIC, sizeof h->magic) != 0)
        return rg_errf(err, "%s is not a graph cache (wrong magic)", path);
    if (h->byte_order != GC_BYTE_ORDER)
        return rg_errf(err, "%s was written on a machine of the other byte order", path);
    if (h->version != GC_VERSION)
        return rg_errf(err, "%s has cache format version %u; this build reads version %u (delete it to rebuild)",
                       path, h->version, GC_VERSION);
    if (h->header_bytes != sizeof *h || h->header_crc != header_crc(h))
        return rg_errf(err, "%s: header checksum mismatch (corrupt file)", path);
    if (h->num_ntypes < 1 || h->num_nodes < 0 || h->num_etypes < 0 || h->num_edges < 0 ||
        h->num_unique < 0 || h->num_unique > h->num_edges ||
        h->names_bytes < 1 + (uint64_t)h->num_ntypes + (uint64_t)h->num_etypes ||
        h->payload_bytes != h->names_bytes + arrays_bytes(h))
        return rg_errf(err, "%s: inconsistent sizes in the header (corrupt file)", path);
    int64_t want = (int64_t)sizeof *h + (int64_t)h->payload_bytes;
    if (file_bytes < want)
        return rg_errf(err, "%s is truncated: %lld bytes, the header announces %lld", path,
                       (long long)file_bytes, (long long)want);
    if (file_bytes > want)
        return rg_errf(err, "%s has %lld bytes after the announced end (corrupt file)", path,
                       (long long)(file_bytes - want));
    return 0;
}

static int read_block(FILE *f, void *data, size_t bytes, uLong *crc)
{
    unsigned char *p = data;
    for (size_t done = 0; done < bytes; ) {
        size_t n = bytes - done < GC_CHUNK ? bytes - done : GC_CHUNK;
        if (fread(p + done, 1, n, f) != n) return -1;
        *crc = crc32_z(*crc, p + done, n);
        done += n;
    }
    return 0;
}

/* Splits the names blob; the header guarantees enough bytes for the empty names. */
static int unpack_names(hg_graph *g, const char *blob, uint64_t bytes)
{
    if (blob[bytes - 1] != 0) return -1;
    const char *p = blob, *end = blob + bytes;
    g->name = rg_xstrdup(p);
    p += strlen(p) + 1;
    for (int32_t t = 0; t < g->num_ntypes; t++) {
        if (p >= end) return -1;
        g->ntype_names[t] = rg_xstrdup(p);
        p += strlen(p) + 1;
    }
    for (int32_t r = 0; r < g->num_etypes; r++) {
        if (p >= end) return -1;
        g->etype_names[r] = rg_xstrdup(p);
        p += strlen(p) + 1;
    }
    return p == end ? 0 : -1;
}

static int in_range(const int32_t *a, int64_t n, int32_t lo, int32_t hi_excl)
{
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    for (int64_t i = 0; i < n; i++) {
        mn = a[i] < mn ? a[i] : mn;
        mx = a[i] > mx ? a[i] : mx;
    }
    return n == 0 || (mn >= lo && mx < hi_excl);
}

/* A segment pointer array: starts at 0, never decreases, ends at total. */
static int is_ptr(const int32_t *a, int64_t n_rows, int32_t total)
{
    if (a[0] != 0 || a[n_rows] != total) return 0;
    int ok = 1;
    for (int64_t i = 0; i < n_rows; i++) ok &= a[i] <= a[i + 1];
    return ok;
}

/* Every index is in bounds, so nothing downstream can read outside an array; the full
 * structural check (sortedness, CSR contents) is hg_validate. */
static const char *bounds_violation(const hg_graph *g)
{
    int32_t nt = g->num_ntypes, n = g->num_nodes, r = g->num_etypes, e = g->num_edges, u = g->num_unique;
    if (!is_ptr(g->ntype_ptr, nt, n)) return "ntype_ptr";
    if (!in_range(g->etype_src, r, 0, nt) || !in_range(g->etype_dst, r, 0, nt)) return "edge type endpoints";
    if (!is_ptr(g->etype_ptr, r, e)) return "etype_ptr";
    if (!in_range(g->src, e, 0, n) || !in_range(g->dst, e, 0, n)) return "edge endpoints";
    if (!in_range(g->etype, e, 0, r)) return "edge types";
    if (!is_ptr(g->in_ptr, n, e) || !in_range(g->in_eid, e, 0, e)) return "incoming CSR";
    if (!is_ptr(g->out_ptr, n, e) || !in_range(g->out_eid, e, 0, e)) return "outgoing CSR";
    if (!is_ptr(g->unique_etype_ptr, r, u) || !in_range(g->unique_src, u, 0, n) ||
        !in_range(g->edge_compact, e, 0, u))
        return "compaction maps";
    return NULL;
}

static hg_graph *graph_shell(const gc_header *h)
{
    hg_graph *g = rg_xcalloc(1, sizeof *g);
    g->num_ntypes = h->num_ntypes;
    g->num_nodes = h->num_nodes;
    g->num_etypes = h->num_etypes;
    g->num_edges = h->num_edges;
    g->num_unique = h->num_unique;
    g->ntype_names = rg_xcalloc((size_t)h->num_ntypes, sizeof(char *));
    g->etype_names = rg_xcalloc((size_t)h->num_etypes, sizeof(char *));
    return g;
}

static int read_payload(FILE *f, const char *path, const gc_header *h, hg_graph *g, rg_err *err)
{
    uLong crc = crc32_z(0, NULL, 0);
    char *blob = rg_xmalloc((size_t)h->names_bytes);
    int rc = read_block(f, blob, (size_t)h->names_bytes, &crc);
    gc_array a[GC_ARRAYS];
    gc_layout(h, a);
    for (int i = 0; i < GC_ARRAYS && rc == 0; i++) {
        int32_t **field = (int32_t **)((char *)g + a[i].offset);
        *field = rg_xmalloc((size_t)a[i].count * sizeof(int32_t));
        rc = read_block(f, *field, (size_t)a[i].count * sizeof(int32_t), &crc);
    }
    if (rc != 0) {
        free(blob);
        return rg_errf(err, "%s: read error: %s", path, ferror(f) ? strerror(errno) : "unexpected end of file");
    }
    if ((uint32_t)crc != h->payload_crc) {
        free(blob);
        return rg_errf(err, "%s: checksum mismatch (corrupt file)", path);
    }
    rc = unpack_names(g, blob, h->names_bytes);
    free(blob);
    if (rc != 0) return rg_errf(err, "%s: malformed names block (corrupt file)", path);
    const char *bad = bounds_violation(g);
    if (bad) return rg_errf(err, "%s: %s out of range (written by a faulty writer?)", path, bad);
    return 0;
}

hg_graph *gcache_read(const char *path, rg_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) rg_errf(err, "cache %s does not exist", path);
        else rg_errf(err, "cannot open cache %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    gc_header h;
    hg_graph *g = NULL;
    if (fstat(fileno(f), &st) != 0) {
        rg_errf(err, "cannot stat cache %s: %s", path, strerror(errno));
    } else if (st.st_size < (off_t)sizeof h || fread(&h, sizeof h, 1, f) != 1) {
        rg_errf(err, "%s is truncated: %lld bytes, shorter than the %zu-byte header", path,
                (long long)st.st_size, sizeof h);
    } else if (check_header(path, &h, (int64_t)st.st_size, err) == 0) {
        g = graph_shell(&h);
        if (read_payload(f, path, &h, g, err) != 0) {
            hg_free(g);
            g = NULL;
        }
    }
    fclose(f);
    return g;
}
