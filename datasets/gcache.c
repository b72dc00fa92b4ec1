/* Binary cache of a finished hg_graph: a versioned header, the names, every array (CSRs and
 * compaction maps included, so loading rebuilds nothing) and a crc32 of the payload.
 * Loading maps the file and points the graph's arrays into the mapping: copying into fresh
 * memory cost more than everything else together, as every first touch of a new page
 * faults and zeroes it (about 3 ms per MB on virtual machines). */
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

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22   /* Linux 5.14; older kernels refuse it with EINVAL */
#endif

#define GC_MAGIC "RGNNHGC"        /* 8 bytes with its NUL */
#define GC_VERSION 2u             /* bump when the layout below changes (2: aligned arrays) */
#define GC_BYTE_ORDER 0x01020304u
#define GC_ALIGN 64               /* file offset of every array: a cache line, and int32-aligned once mapped */
#define GC_CHUNK ((size_t)256 << 10)   /* checking step: large, yet still in L2 between crc32 and checks */
#define GC_MAX_READERS 4
#define GC_SHARE_ALIGN 4096       /* threads' shares start on page boundaries */
#define GC_HUGE ((size_t)2 << 20) /* a transparent huge page */

/* Fixed 64-byte header, native byte order (checked through byte_order).
 * The file: header | names | zeros to GC_ALIGN | array 0 | zeros to GC_ALIGN | array 1 | ...
 * | array 13, which ends the file. Array offsets follow from the counts and names_bytes and
 * are not stored, so no file can misalign them; the checksum covers the padding too. */
typedef struct gc_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint32_t byte_order;
    int32_t num_ntypes, num_nodes, num_etypes, num_edges, num_unique;
    uint64_t names_bytes;         /* graph name, node type names, edge type names, each NUL-ended */
    uint64_t payload_bytes;       /* everything after the header: names, padding, arrays */
    uint32_t payload_crc;
    uint32_t header_crc;          /* of every byte before this field */
} gc_header;
_Static_assert(sizeof(gc_header) == 64, "the cache header must stay 64 bytes");

/* The int32 arrays of the payload, in file order: where each lives in hg_graph, its length,
 * its file offset, and what its values must satisfy on loading (indices within [0, bound),
 * or segment pointers rising from 0 to bound), so that no index read from a file can go
 * out of bounds. */
typedef enum { GC_INDEX, GC_PTR } gc_kind;

typedef struct gc_array {
    const char *what;
    size_t field;                 /* offsetof in hg_graph */
    int64_t count;
    gc_kind kind;
    int32_t bound;
    uint64_t at;                  /* file offset, a multiple of GC_ALIGN */
} gc_array;

enum { GC_ARRAYS = 14 };

#define GC_FIELD(f) #f, offsetof(hg_graph, f)

static uint64_t align_up(uint64_t x)
{
    return (x + GC_ALIGN - 1) & ~(uint64_t)(GC_ALIGN - 1);
}

static uint64_t bytes_of(const gc_array *a)
{
    return (uint64_t)a->count * sizeof(int32_t);
}

/* Fills a[] from the header's counts; returns the file size they imply. names_bytes must be
 * bounded already (by the file size), so that nothing here overflows. */
static uint64_t gc_layout(const gc_header *h, gc_array a[GC_ARRAYS])
{
    int32_t nt = h->num_ntypes, n = h->num_nodes, r = h->num_etypes, e = h->num_edges, u = h->num_unique;
    const gc_array layout[GC_ARRAYS] = {
        {GC_FIELD(ntype_ptr), (int64_t)nt + 1, GC_PTR, n, 0},
        {GC_FIELD(etype_src), r, GC_INDEX, nt, 0},
        {GC_FIELD(etype_dst), r, GC_INDEX, nt, 0},
        {GC_FIELD(src), e, GC_INDEX, n, 0},
        {GC_FIELD(dst), e, GC_INDEX, n, 0},
        {GC_FIELD(etype), e, GC_INDEX, r, 0},
        {GC_FIELD(etype_ptr), (int64_t)r + 1, GC_PTR, e, 0},
        {GC_FIELD(in_ptr), (int64_t)n + 1, GC_PTR, e, 0},
        {GC_FIELD(in_eid), e, GC_INDEX, e, 0},
        {GC_FIELD(out_ptr), (int64_t)n + 1, GC_PTR, e, 0},
        {GC_FIELD(out_eid), e, GC_INDEX, e, 0},
        {GC_FIELD(unique_src), u, GC_INDEX, n, 0},
        {GC_FIELD(unique_etype_ptr), (int64_t)r + 1, GC_PTR, u, 0},
        {GC_FIELD(edge_compact), e, GC_INDEX, u, 0},
    };
    memcpy(a, layout, sizeof layout);
    uint64_t end = sizeof *h + h->names_bytes;
    for (int i = 0; i < GC_ARRAYS; i++) {
        a[i].at = align_up(end);
        end = a[i].at + bytes_of(&a[i]);
    }
    return end;
}

static int32_t **array_slot(hg_graph *g, const gc_array *a)
{
    return (int32_t **)((char *)g + a->field);
}

static const int32_t *array_in(const hg_graph *g, const gc_array *a)
{
    return *(int32_t *const *)((const char *)g + a->field);
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

/* ---- The file itself ---- */

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
           : S_ISLNK(m) ? "a symbolic link" : "not a file";
}

/* A cache is a regular file and nothing else: open() of a directory succeeds and its reads
 * fail (it looked "truncated"), open() of a FIFO waits for a writer forever, and writing
 * there would go through the FIFO or fail half-way. */
static int regular_only(const char *path, const struct stat *st, rg_err *err)
{
    if (S_ISREG(st->st_mode)) return 0;
    return rg_errf(err, "cache %s is %s, not a regular file (remove it to let the cache be rebuilt)", path,
                   file_kind(st->st_mode));
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

static int write_padding(FILE *f, uint64_t bytes, uLong *crc)
{
    static const unsigned char zeros[GC_ALIGN];
    RG_ASSERT(bytes < GC_ALIGN);
    return write_block(f, zeros, (size_t)bytes, crc);
}

static int write_payload(FILE *f, const hg_graph *g, gc_header *h)
{
    char *names = names_blob(g, &h->names_bytes);
    gc_array a[GC_ARRAYS];
    uint64_t end = gc_layout(h, a), at = sizeof *h + h->names_bytes;
    uLong crc = crc32_z(0, NULL, 0);
    int rc = write_block(f, names, (size_t)h->names_bytes, &crc);
    free(names);
    for (int i = 0; i < GC_ARRAYS && rc == 0; i++) {
        rc = write_padding(f, a[i].at - at, &crc);
        if (rc == 0) rc = write_block(f, array_in(g, &a[i]), (size_t)bytes_of(&a[i]), &crc);
        at = a[i].at + bytes_of(&a[i]);
    }
    h->payload_bytes = end - sizeof *h;
    h->payload_crc = (uint32_t)crc;
    h->header_crc = header_crc(h);
    return rc;
}

/* The header goes first as a placeholder, then again once the checksums are known. */
static int write_file(FILE *f, const hg_graph *g)
{
    gc_header h = {.magic = GC_MAGIC, .version = GC_VERSION, .header_bytes = sizeof h,
                   .byte_order = GC_BYTE_ORDER, .num_ntypes = g->num_ntypes, .num_nodes = g->num_nodes,
                   .num_etypes = g->num_etypes, .num_edges = g->num_edges, .num_unique = g->num_unique};
    int rc = fwrite(&h, sizeof h, 1, f) == 1 ? write_payload(f, g, &h) : -1;
    if (rc == 0) rc = fseek(f, 0, SEEK_SET) == 0 && fwrite(&h, sizeof h, 1, f) == 1 ? 0 : -1;
    return rc;
}

/* Written to <path>.tmp.<pid> and renamed over path, so readers never see half a file. The
 * rename is also what keeps loaded graphs safe: they map the old file, whose inode lives on
 * until they are freed, whereas rewriting a cache in place would change (or, truncated,
 * SIGBUS) the arrays under them. */
/* The temporary file, created as a regular file: O_NOFOLLOW and O_NONBLOCK so that a
 * link or FIFO found under its name fails at once instead of being written through. */
static FILE *create_tmp(const char *tmp, rg_err *err)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rg_errf(err, "cannot write cache %s: %s", tmp, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    FILE *f = regular_only(tmp, &st, err) == 0 ? fdopen(fd, "wb") : NULL;
    if (!f) close(fd);
    return f;
}

int gcache_write(const char *path, const hg_graph *g, rg_err *err)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) && regular_only(path, &st, err) != 0) return -1;
    char *tmp = rg_xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = create_tmp(tmp, err);
    if (!f) {
        free(tmp);
        return -1;
    }
    /* A 2 MB buffer writes whole 2 MB blocks at 2 MB offsets, so that the page cache holds
     * the file in huge folios, which a reader's mapping maps with one entry each (see
     * map_file). glibc ignores the size unless given the buffer. */
    char *buffer = rg_xmalloc(GC_HUGE);
    setvbuf(f, buffer, _IOFBF, GC_HUGE);
    int rc = write_file(f, g), saved = errno;
    if (fclose(f) != 0 && rc == 0) { rc = -1; saved = errno; }
    free(buffer);
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
        rg_errf(err, "cannot rename %s to %s: %s", tmp, path, strerror(saved));
    } else if (rc != 0) {
        rg_errf(err, "cannot write cache %s: %s", tmp, strerror(saved));
    }
    if (rc != 0) unlink(tmp);
    free(tmp);
    return rc;
}

/* ---- Reading: checks of the header ---- */

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
    gc_array a[GC_ARRAYS];
    if (h->num_ntypes < 1 || h->num_nodes < 0 || h->num_etypes < 0 || h->num_edges < 0 ||
        h->num_unique < 0 || h->num_unique > h->num_edges ||
        h->names_bytes < 1 + (uint64_t)h->num_ntypes + (uint64_t)h->num_etypes ||
        h->names_bytes > (uint64_t)file_bytes || h->payload_bytes != gc_layout(h, a) - sizeof *h)
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

/* The header read and checked against the file's size; the file's size in *bytes. */
static int read_header(int fd, const char *path, gc_header *h, size_t *bytes, rg_err *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return rg_errf(err, "cannot stat cache %s: %s", path, strerror(errno));
    if (regular_only(path, &st, err) != 0) return -1;
    if (st.st_size < (off_t)sizeof *h || pread_full(fd, h, sizeof *h, 0) != 0)
        return rg_errf(err, "%s is truncated: %lld bytes, shorter than the %zu-byte header", path,
                       (long long)st.st_size, sizeof *h);
    *bytes = (size_t)st.st_size;
    return check_header(path, h, (int64_t)st.st_size, err);
}

/* ---- Reading: checks of the payload, in place in the mapping ---- */

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

/* The first index array with a value out of range in the file bytes [from, to), or -1.
 * Every bound there is a multiple of 4: shares and chunks start 4-aligned, arrays start
 * GC_ALIGN-aligned and end where their int32s do. */
static int bad_indices_in(const unsigned char *base, const gc_array *a, uint64_t from, uint64_t to)
{
    for (int i = 0; i < GC_ARRAYS; i++) {
        uint64_t end = a[i].at + bytes_of(&a[i]);
        uint64_t lo = from > a[i].at ? from : a[i].at, hi = to < end ? to : end;
        if (a[i].kind != GC_INDEX || lo >= hi) continue;
        RG_ASSERT(lo % sizeof(int32_t) == 0 && hi % sizeof(int32_t) == 0);
        if (!indices_ok((const int32_t *)(base + lo), (int64_t)((hi - lo) / sizeof(int32_t)), a[i].bound))
            return i;
    }
    return -1;
}

/* One checker thread's share: the file bytes [from, to), checksummed and bounds-checked
 * chunk by chunk, so that the checks read what crc32 has just brought into the cache. */
typedef struct gc_checker {
    const unsigned char *base;    /* the mapped file */
    const gc_array *arrays;
    uint64_t from, to;
    uLong crc;
    int bad_array;                /* first array holding an out-of-range index, or -1 */
} gc_checker;

static void *check_share(void *arg)
{
    gc_checker *c = arg;
    for (uint64_t at = c->from; at < c->to; at += GC_CHUNK) {
        uint64_t end = c->to - at < GC_CHUNK ? c->to : at + GC_CHUNK;
        c->crc = crc32_z(c->crc, c->base + at, (size_t)(end - at));
        if (c->bad_array < 0) c->bad_array = bad_indices_in(c->base, c->arrays, at, end);
    }
    return NULL;
}

/* Large caches are checked by up to 4 threads, each with a contiguous share; their
 * checksums are joined with crc32_combine. */
static int checker_count(uint64_t bytes)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cpus < 1 ? 1 : cpus > GC_MAX_READERS ? GC_MAX_READERS : (int)cpus;
    while (n > 1 && bytes / (uint64_t)n < ((uint64_t)4 << 20)) n--;
    return n;
}

/* Where share w of n begins in [from, to): page-aligned inside, rising with w. */
static uint64_t share_cut(uint64_t from, uint64_t to, int w, int n)
{
    if (w == 0) return from;
    if (w == n) return to;
    uint64_t cut = (from + (to - from) * (uint64_t)w / (uint64_t)n) & ~(uint64_t)(GC_SHARE_ALIGN - 1);
    return cut > from ? cut : from;
}

/* crc32 of the whole payload, and the index arrays' bounds, in parallel. */
static int check_payload(const char *path, const unsigned char *base, const gc_header *h,
                         const gc_array a[GC_ARRAYS], rg_err *err)
{
    uint64_t from = sizeof *h, to = sizeof *h + h->payload_bytes;
    int n = checker_count(to - from);
    gc_checker c[GC_MAX_READERS];
    pthread_t tid[GC_MAX_READERS];
    int started[GC_MAX_READERS] = {0};
    for (int w = 0; w < n; w++) {
        c[w] = (gc_checker){base, a, share_cut(from, to, w, n), share_cut(from, to, w + 1, n),
                            crc32_z(0, NULL, 0), -1};
        if (w > 0) started[w] = pthread_create(&tid[w], NULL, check_share, &c[w]) == 0;
        if (w > 0 && !started[w]) check_share(&c[w]);   /* no thread: check it here */
    }
    check_share(&c[0]);
    uLong crc = crc32_z(0, NULL, 0);
    int bad = -1;
    for (int w = 0; w < n; w++) {
        if (started[w]) pthread_join(tid[w], NULL);
        crc = crc32_combine(crc, c[w].crc, (z_off_t)(c[w].to - c[w].from));
        if (bad < 0) bad = c[w].bad_array;
    }
    if ((uint32_t)crc != h->payload_crc) return rg_errf(err, "%s: checksum mismatch (corrupt file)", path);
    if (bad >= 0)
        return rg_errf(err, "%s: array %s holds values out of range (written by a faulty writer?)", path, a[bad].what);
    return 0;
}

/* After the checksum: what a faulty writer could still get wrong. Padding must be zeros (one
 * byte form per graph), segment pointers must rise from 0 to their bound. */
static int check_structure(const char *path, const unsigned char *base, const gc_header *h,
                           const gc_array a[GC_ARRAYS], rg_err *err)
{
    uint64_t at = sizeof *h + h->names_bytes;
    for (int i = 0; i < GC_ARRAYS; at = a[i].at + bytes_of(&a[i]), i++) {
        for (uint64_t p = at; p < a[i].at; p++)
            if (base[p] != 0)
                return rg_errf(err, "%s: nonzero padding before array %s (written by a faulty writer?)",
                               path, a[i].what);
        if (a[i].kind == GC_PTR && !pointers_ok((const int32_t *)(base + a[i].at), a[i].count, a[i].bound))
            return rg_errf(err, "%s: array %s holds values out of range (written by a faulty writer?)",
                           path, a[i].what);
    }
    return 0;
}

/* ---- Reading: the graph ---- */

/* Splits the names block; the header guarantees enough bytes for the empty names. */
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

/* A graph whose arrays point into the mapping, which it then owns (hg_free unmaps it). */
static hg_graph *mapped_graph(const gc_header *h, const gc_array a[GC_ARRAYS], unsigned char *base, size_t bytes)
{
    hg_graph *g = rg_xcalloc(1, sizeof *g);
    g->num_ntypes = h->num_ntypes;
    g->num_nodes = h->num_nodes;
    g->num_etypes = h->num_etypes;
    g->num_edges = h->num_edges;
    g->num_unique = h->num_unique;
    g->ntype_names = rg_xcalloc((size_t)h->num_ntypes, sizeof(char *));
    g->etype_names = rg_xcalloc((size_t)h->num_etypes, sizeof(char *));
    g->mapping = base;
    g->mapping_bytes = bytes;
    for (int i = 0; i < GC_ARRAYS; i++) *array_slot(g, &a[i]) = (int32_t *)(void *)(base + a[i].at);
    return g;
}

/* The whole file, read-only and private. Read-only matters twice: a writable private
 * mapping would be populated by write faults, copying every page, and code that wrote into
 * a loaded graph would silently get private copies instead of crashing at its bug (no code
 * does: graphs are built by hgb_finish and only read afterwards).
 * Speed: on virtual machines the first touch of every mapped 4 KB page is dear (about
 * 0.5 ms per MB), of a 2 MB one not. The file is mapped by 2 MB entries where the page cache
 * holds it in huge folios: gcache_write writes it so, and MADV_HUGEPAGE makes reading a
 * cold file ahead do so. MADV_POPULATE_READ then maps it all in one call (it fails instead
 * of raising SIGBUS if the file shrank since fstat). Both are hints older kernels refuse. */
static unsigned char *map_file(int fd, const char *path, size_t bytes, rg_err *err)
{
    void *p = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        rg_errf(err, "cannot map cache %s: %s", path, strerror(errno));
        return NULL;
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    if (madvise(p, bytes, MADV_POPULATE_READ) != 0 && errno != EINVAL) {
        rg_errf(err, "cannot read cache %s: %s", path, strerror(errno));
        munmap(p, bytes);
        return NULL;
    }
    return p;
}

/* Checksum and value checks before any value is trusted (a faulty writer can checksum bad
 * data, hence the bounds); the full structural check (sortedness, CSR contents) is
 * hg_validate's. Takes the mapping over: the graph's on success, unmapped on failure. */
static hg_graph *graph_of_mapping(const char *path, unsigned char *base, size_t bytes, const gc_header *h,
                                  rg_err *err)
{
    gc_array a[GC_ARRAYS];
    gc_layout(h, a);
    if (check_payload(path, base, h, a, err) != 0 || check_structure(path, base, h, a, err) != 0) {
        munmap(base, bytes);
        return NULL;
    }
    hg_graph *g = mapped_graph(h, a, base, bytes);
    if (unpack_names(g, (const char *)base + sizeof *h, h->names_bytes) != 0) {
        rg_errf(err, "%s: malformed names block (corrupt file)", path);
        hg_free(g);
        return NULL;
    }
    return g;
}

/* Checked with stat before opening, so that nothing is opened that is not a regular file
 * (opening a device may act on it); O_NONBLOCK in case it became a FIFO since. */
hg_graph *gcache_read(const char *path, rg_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && regular_only(path, &st, err) != 0) return NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) rg_errf(err, "cache %s does not exist", path);
        else rg_errf(err, "cannot open cache %s: %s", path, strerror(errno));
        return NULL;
    }
    gc_header h;
    size_t bytes = 0;
    unsigned char *base = read_header(fd, path, &h, &bytes, err) == 0 ? map_file(fd, path, bytes, err) : NULL;
    close(fd);   /* the mapping keeps the file */
    return base ? graph_of_mapping(path, base, bytes, &h, err) : NULL;
}
