/* Binary cache of a finished hg_graph: a versioned header, the names, every array (CSRs and
 * compaction maps included, so loading rebuilds nothing) and a crc32 of the payload. */
#include "datasets/loaders.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define GC_MAGIC "RGNNHGC"        /* 8 bytes with its NUL */
#define GC_VERSION 1u             /* bump when the layout below changes */
#define GC_BYTE_ORDER 0x01020304u
#define GC_CHUNK ((size_t)256 << 10)   /* read step: large, yet still in L2 for crc32 and checks */
#define GC_MAX_READERS 4

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

/* The int32 arrays of the payload, in file order: where each lives in hg_graph, its length,
 * and what its values must satisfy on loading (indices within [0, bound), or segment
 * pointers rising from 0 to bound), so that no index read from a file can go out of bounds. */
typedef enum { GC_INDEX, GC_PTR } gc_kind;

typedef struct gc_array {
    const char *what;
    size_t offset;
    int64_t count;
    gc_kind kind;
    int32_t bound;
} gc_array;

enum { GC_ARRAYS = 14 };

#define GC_FIELD(f) #f, offsetof(hg_graph, f)

static void gc_layout(const gc_header *h, gc_array a[GC_ARRAYS])
{
    int32_t nt = h->num_ntypes, n = h->num_nodes, r = h->num_etypes, e = h->num_edges, u = h->num_unique;
    const gc_array layout[GC_ARRAYS] = {
        {GC_FIELD(ntype_ptr), (int64_t)nt + 1, GC_PTR, n},
        {GC_FIELD(etype_src), r, GC_INDEX, nt},
        {GC_FIELD(etype_dst), r, GC_INDEX, nt},
        {GC_FIELD(src), e, GC_INDEX, n},
        {GC_FIELD(dst), e, GC_INDEX, n},
        {GC_FIELD(etype), e, GC_INDEX, r},
        {GC_FIELD(etype_ptr), (int64_t)r + 1, GC_PTR, e},
        {GC_FIELD(in_ptr), (int64_t)n + 1, GC_PTR, e},
        {GC_FIELD(in_eid), e, GC_INDEX, e},
        {GC_FIELD(out_ptr), (int64_t)n + 1, GC_PTR, e},
        {GC_FIELD(out_eid), e, GC_INDEX, e},
        {GC_FIELD(unique_src), u, GC_INDEX, n},
        {GC_FIELD(unique_etype_ptr), (int64_t)r + 1, GC_PTR, u},
        {GC_FIELD(edge_compact), e, GC_INDEX, u},
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

/* Reads exactly n bytes at offset (pread may return less). */
static int pread_full(int fd, void *data, size_t n, int64_t offset)
{
    for (size_t done = 0; done < n; ) {
        ssize_t got = pread(fd, (char *)data + done, n - done, (off_t)(offset + (int64_t)done));
        if (got <= 0) {
            if (got < 0 && errno == EINTR) continue;
            if (got == 0) errno = 0;
            return -1;
        }
        done += (size_t)got;
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

/* Sign bit set iff 0 <= v < bound. Branch-free uint32 arithmetic, so that the checks below
 * vectorize with baseline SSE2 (which has no 32-bit integer min/max). */
static inline uint32_t below(int32_t v, uint32_t bound)
{
    return ~(uint32_t)v & ((uint32_t)v - bound);
}

/* Every a[i] in [0, bound). Blocks of 8 with separate accumulators: a fixed inner loop
 * that GCC vectorizes at -O2. */
static int indices_ok(const int32_t *a, int64_t n, int32_t bound)
{
    uint32_t acc[8] = {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u}, all = ~0u;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] &= below(a[i + k], (uint32_t)bound);
    for (; i < n; i++) all &= below(a[i], (uint32_t)bound);
    for (int k = 0; k < 8; k++) all &= acc[k];
    return (int)(all >> 31);
}

/* A segment pointer array: rises from 0 to bound, never decreasing (values in [0, bound]
 * first, so the differences cannot overflow). */
static int pointers_ok(const int32_t *a, int64_t count, int32_t bound)
{
    uint32_t all = ~0u;
    for (int64_t i = 1; i < count; i++)
        all &= below(a[i], (uint32_t)bound + 1) & ~((uint32_t)a[i] - (uint32_t)a[i - 1]);
    return (all >> 31) && a[0] == 0 && a[count - 1] == bound;
}

/* One reader thread's share: the byte range [from, to) of the arrays region, read in
 * cache-sized chunks that are checksummed and checked while still hot. */
typedef struct gc_reader {
    int fd;
    const gc_array *arrays;
    hg_graph *g;
    int64_t region_offset;    /* file offset of the first array */
    int64_t from, to;
    uLong crc;
    int failed_errno;         /* -1: fine; 0: unexpected end of file; else errno */
    int bad_array;            /* first array holding an out-of-range index, or -1 */
} gc_reader;

static int32_t *array_of(hg_graph *g, const gc_array *a)
{
    return *(int32_t **)((char *)g + a->offset);
}

static void *read_share(void *arg)
{
    gc_reader *r = arg;
    int64_t base = 0;
    for (int i = 0; i < GC_ARRAYS; base += r->arrays[i].count * (int64_t)sizeof(int32_t), i++) {
        const gc_array *spec = &r->arrays[i];
        int64_t end = base + spec->count * (int64_t)sizeof(int32_t);
        int64_t lo = r->from > base ? r->from : base, hi = r->to < end ? r->to : end;
        for (int64_t at = lo; at < hi; at += (int64_t)GC_CHUNK) {
            size_t n = (size_t)(hi - at < (int64_t)GC_CHUNK ? hi - at : (int64_t)GC_CHUNK);
            int32_t *chunk = array_of(r->g, spec) + (at - base) / (int64_t)sizeof(int32_t);
            if (pread_full(r->fd, chunk, n, r->region_offset + at) != 0) {
                r->failed_errno = errno;
                return NULL;
            }
            r->crc = crc32_z(r->crc, (const Bytef *)chunk, n);
            if (spec->kind == GC_INDEX && r->bad_array < 0 &&
                !indices_ok(chunk, (int64_t)(n / sizeof(int32_t)), spec->bound))
                r->bad_array = i;
        }
    }
    return NULL;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older kernels refuse it, which is harmless */
#endif

/* Page-aligned part of [p, p + bytes). */
static void advise_pages(void *p, size_t bytes, int advice)
{
    const uintptr_t page = 4096;
    uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1), to = ((uintptr_t)p + bytes) & ~(page - 1);
    if (to > from) madvise((void *)from, to - from, advice);
}

/* An array about to be filled. First touches of fresh memory fault one 4 KB page at a time,
 * which dominates loading where faults are dear (about 3 ms per MB on virtual machines). So
 * large arrays are 2 MB-aligned with transparent huge pages over their whole 2 MB blocks,
 * and the remaining 4 KB pages are mapped up front in one call. Both are hints: if refused,
 * only speed changes. */
static void *alloc_for_fill(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    void *p = NULL;
    size_t body = 0;   /* the huge-page part, faulted (and zeroed) by the reader threads */
    if (bytes < huge) {
        p = rg_xmalloc(bytes);
    } else {
        if (posix_memalign(&p, huge, bytes) != 0) RG_DIE("out of host memory allocating %zu bytes", bytes);
        body = bytes / huge * huge;
#ifdef MADV_HUGEPAGE
        madvise(p, body, MADV_HUGEPAGE);
#endif
    }
    if (bytes - body >= ((size_t)64 << 10)) advise_pages((char *)p + body, bytes - body, MADV_POPULATE_WRITE);
    return p;
}

static hg_graph *graph_shell(const gc_header *h, const gc_array a[GC_ARRAYS])
{
    hg_graph *g = rg_xcalloc(1, sizeof *g);
    g->num_ntypes = h->num_ntypes;
    g->num_nodes = h->num_nodes;
    g->num_etypes = h->num_etypes;
    g->num_edges = h->num_edges;
    g->num_unique = h->num_unique;
    g->ntype_names = rg_xcalloc((size_t)h->num_ntypes, sizeof(char *));
    g->etype_names = rg_xcalloc((size_t)h->num_etypes, sizeof(char *));
    for (int i = 0; i < GC_ARRAYS; i++)
        *(int32_t **)((char *)g + a[i].offset) = alloc_for_fill((size_t)a[i].count * sizeof(int32_t));
    return g;
}

/* Large caches are read by up to 4 threads, each with a contiguous share (4 KB-aligned);
 * their checksums are joined with crc32_combine. */
static int reader_count(uint64_t bytes)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cpus < 1 ? 1 : cpus > GC_MAX_READERS ? GC_MAX_READERS : (int)cpus;
    while (n > 1 && bytes / (uint64_t)n < ((uint64_t)4 << 20)) n--;
    return n;
}

static int read_arrays(int fd, const char *path, const gc_header *h, const gc_array a[GC_ARRAYS],
                       hg_graph *g, uLong *crc, rg_err *err)
{
    uint64_t total = arrays_bytes(h);
    int n = reader_count(total);
    gc_reader r[GC_MAX_READERS];
    pthread_t tid[GC_MAX_READERS];
    int started[GC_MAX_READERS] = {0};
    for (int w = 0; w < n; w++) {
        int64_t cut0 = (int64_t)(total * (uint64_t)w / (uint64_t)n) & ~(int64_t)4095;
        int64_t cut1 = w == n - 1 ? (int64_t)total : (int64_t)(total * (uint64_t)(w + 1) / (uint64_t)n) & ~(int64_t)4095;
        r[w] = (gc_reader){fd, a, g, (int64_t)(sizeof *h + h->names_bytes), cut0, cut1,
                           crc32_z(0, NULL, 0), -1, -1};
        if (w > 0) started[w] = pthread_create(&tid[w], NULL, read_share, &r[w]) == 0;
        if (w > 0 && !started[w]) read_share(&r[w]);   /* no thread: read it here */
    }
    read_share(&r[0]);
    int bad = -1;
    for (int w = 0; w < n; w++) {
        if (started[w]) pthread_join(tid[w], NULL);
        if (r[w].failed_errno >= 0)
            return rg_errf(err, "%s: read error: %s", path,
                           r[w].failed_errno ? strerror(r[w].failed_errno) : "unexpected end of file");
        *crc = crc32_combine(*crc, r[w].crc, (z_off_t)(r[w].to - r[w].from));
        if (bad < 0) bad = r[w].bad_array;
    }
    if ((uint32_t)*crc != h->payload_crc) return rg_errf(err, "%s: checksum mismatch (corrupt file)", path);
    for (int i = 0; i < GC_ARRAYS && bad < 0; i++)
        if (a[i].kind == GC_PTR && !pointers_ok(array_of(g, &a[i]), a[i].count, a[i].bound)) bad = i;
    if (bad >= 0)
        return rg_errf(err, "%s: array %s holds values out of range (written by a faulty writer?)", path, a[bad].what);
    return 0;
}

/* Names, then the arrays; the checksum is compared before any value is trusted. Values are
 * checked against their bounds too (a faulty writer can checksum bad data); the full
 * structural check (sortedness, CSR contents) is hg_validate's. */
static hg_graph *read_graph(int fd, const char *path, const gc_header *h, rg_err *err)
{
    gc_array a[GC_ARRAYS];
    gc_layout(h, a);
    char *blob = rg_xmalloc((size_t)h->names_bytes);
    if (pread_full(fd, blob, (size_t)h->names_bytes, (int64_t)sizeof *h) != 0) {
        rg_errf(err, "%s: read error: %s", path, errno ? strerror(errno) : "unexpected end of file");
        free(blob);
        return NULL;
    }
    uLong crc = crc32_z(crc32_z(0, NULL, 0), (const Bytef *)blob, (size_t)h->names_bytes);
    hg_graph *g = graph_shell(h, a);
    int rc = read_arrays(fd, path, h, a, g, &crc, err);
    if (rc == 0 && unpack_names(g, blob, h->names_bytes) != 0)
        rc = rg_errf(err, "%s: malformed names block (corrupt file)", path);
    free(blob);
    if (rc != 0) {
        hg_free(g);
        return NULL;
    }
    return g;
}

hg_graph *gcache_read(const char *path, rg_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) rg_errf(err, "cache %s does not exist", path);
        else rg_errf(err, "cannot open cache %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    gc_header h;
    hg_graph *g = NULL;
    if (fstat(fd, &st) != 0) {
        rg_errf(err, "cannot stat cache %s: %s", path, strerror(errno));
    } else if (st.st_size < (off_t)sizeof h || pread_full(fd, &h, sizeof h, 0) != 0) {
        rg_errf(err, "%s is truncated: %lld bytes, shorter than the %zu-byte header", path,
                (long long)st.st_size, sizeof h);
    } else if (check_header(path, &h, (int64_t)st.st_size, err) == 0) {
        g = read_graph(fd, path, &h, err);
    }
    close(fd);
    return g;
}
