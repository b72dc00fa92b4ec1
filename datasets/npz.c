/* NumPy .npz archives (zip of .npy members, deflated, zlib CRC-32): a streaming writer, a
 * reader, and the export/import of a whole typed graph as arrays numpy can load. */
#include "datasets/npz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG 0x06054b50u
#define ZIP_LOCAL_LEN 30
#define ZIP_CENTRAL_LEN 46
#define ZIP_END_LEN 22
#define ZIP_LIMIT 0xFFFFFFFFull    /* sizes and offsets past this need zip64, which we do not write */
#define ZIP_DOS_DATE 0x0021        /* 1980-01-01: fixed, so the same graph gives the same bytes */
#define CHUNK (1 << 16)

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v & 0xFF);
    p[1] = (unsigned char)(v >> 8 & 0xFF);
}

static void put32(unsigned char *p, uint64_t v)
{
    put16(p, (unsigned)(v & 0xFFFF));
    put16(p + 2, (unsigned)(v >> 16 & 0xFFFF));
}

static unsigned get16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t get32(const unsigned char *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }

/* ==== writer ==== */

typedef struct npz_entry {
    char *name;            /* with .npy */
    uint32_t crc;
    uint64_t csize, usize, offset;
} npz_entry;

struct npz_writer {
    FILE *f;
    char *path, *tmp;
    npz_entry *entries;
    int count, cap;
    z_stream zs;           /* of the member being written */
    int failed;            /* a write failed: finish reports it */
    int saved_errno;
    unsigned char out[CHUNK];
};

static void note_io(npz_writer *w, int ok)
{
    if (!ok && !w->failed) {
        w->failed = 1;
        w->saved_errno = errno;
    }
}

npz_writer *npz_create(const char *path, rg_err *err)
{
    npz_writer *w = rg_xcalloc(1, sizeof *w);
    w->path = rg_xstrdup(path);
    w->tmp = rg_xasprintf("%s.tmp.%ld", path, (long)getpid());
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        rg_errf(err, "cannot write %s: %s", w->tmp, strerror(errno));
        free(w->path);
        free(w->tmp);
        free(w);
        return NULL;
    }
    return w;
}

static void write_local_header(npz_writer *w, const npz_entry *e)
{
    unsigned char h[ZIP_LOCAL_LEN];
    memset(h, 0, sizeof h);
    put32(h, ZIP_LOCAL_SIG);
    put16(h + 4, 20);                 /* version needed: 2.0 (deflate) */
    put16(h + 8, Z_DEFLATED);
    put16(h + 12, ZIP_DOS_DATE);
    put32(h + 14, e->crc);
    put32(h + 18, e->csize);
    put32(h + 22, e->usize);
    put16(h + 26, (unsigned)strlen(e->name));
    note_io(w, fwrite(h, 1, sizeof h, w->f) == sizeof h);
    note_io(w, fwrite(e->name, 1, strlen(e->name), w->f) == strlen(e->name));
}

static void member_begin(npz_writer *w, const char *name)
{
    if (w->count == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->entries = rg_xrealloc(w->entries, (size_t)w->cap * sizeof *w->entries);
    }
    npz_entry *e = &w->entries[w->count++];
    memset(e, 0, sizeof *e);
    e->name = rg_xasprintf("%s.npy", name);
    off_t at = ftello(w->f);
    note_io(w, at >= 0);
    e->offset = at < 0 ? 0 : (uint64_t)at;
    write_local_header(w, e);   /* sizes and CRC patched by member_end */
    memset(&w->zs, 0, sizeof w->zs);
    /* raw deflate (no zlib wrapper), as zip wants; level 1: int arrays compress well anyway */
    if (deflateInit2(&w->zs, Z_BEST_SPEED, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        RG_DIE("deflateInit2 failed");
}

/* Deflates all pending input (Z_NO_FLUSH: output is written as it fills up). */
static void deflate_pending(npz_writer *w)
{
    do {
        w->zs.next_out = w->out;
        w->zs.avail_out = CHUNK;
        int rc = deflate(&w->zs, Z_NO_FLUSH);
        RG_ASSERT(rc != Z_STREAM_ERROR);
        size_t have = CHUNK - w->zs.avail_out;
        note_io(w, fwrite(w->out, 1, have, w->f) == have);
    } while (w->zs.avail_out == 0);
}

static void member_write(npz_writer *w, const void *data, size_t n)
{
    npz_entry *e = &w->entries[w->count - 1];
    const unsigned char *p = data;
    while (n > 0) {
        uInt part = n > (1u << 30) ? (1u << 30) : (uInt)n;
        e->crc = (uint32_t)crc32(e->crc, p, part);
        w->zs.next_in = (unsigned char *)p;
        w->zs.avail_in = part;
        deflate_pending(w);
        p += part;
        n -= part;
    }
}

static int member_end(npz_writer *w, rg_err *err)
{
    npz_entry *e = &w->entries[w->count - 1];
    int rc;
    w->zs.next_in = NULL;
    w->zs.avail_in = 0;
    do {
        w->zs.next_out = w->out;
        w->zs.avail_out = CHUNK;
        rc = deflate(&w->zs, Z_FINISH);
        size_t have = CHUNK - w->zs.avail_out;
        note_io(w, fwrite(w->out, 1, have, w->f) == have);
    } while (rc == Z_OK);
    RG_ASSERT(rc == Z_STREAM_END);
    e->csize = w->zs.total_out;
    e->usize = w->zs.total_in;
    deflateEnd(&w->zs);
    if (e->csize >= ZIP_LIMIT || e->usize >= ZIP_LIMIT || e->offset >= ZIP_LIMIT)
        return rg_errf(err, "%s: member %s is past 4 GiB, which needs zip64 (not supported)", w->path, e->name);
    off_t end = ftello(w->f);
    note_io(w, end >= 0 && fseeko(w->f, (off_t)e->offset, SEEK_SET) == 0);
    write_local_header(w, e);
    note_io(w, fseeko(w->f, end, SEEK_SET) == 0);
    return 0;
}

/* One member: the .npy header, then the raw little-endian data. */
static int add_member(npz_writer *w, const char *name, const char *descr, int ndim, const int64_t *shape,
                      const void *data, size_t nbytes, rg_err *err)
{
    unsigned char hdr[NPY_HEADER_MAX];
    size_t hlen = npy_format_header(hdr, descr, ndim, shape);
    member_begin(w, name);
    member_write(w, hdr, hlen);
    if (nbytes) member_write(w, data, nbytes);
    return member_end(w, err);
}

int npz_add_i32(npz_writer *w, const char *name, const int32_t *v, int64_t n, rg_err *err)
{
    int64_t shape[1] = {n};
    return add_member(w, name, "<i4", 1, shape, v, (size_t)n * sizeof *v, err);
}

static int add_string_member(npz_writer *w, const char *name, const char *const *s, int64_t n, int ndim,
                             rg_err *err)
{
    int64_t width = 1;   /* numpy's minimum: np.array('') is '<U1' */
    for (int64_t i = 0; i < n; i++) {
        int64_t len = npy_ucs4_len(s[i]);
        if (len > width) width = len;
    }
    char descr[32];
    snprintf(descr, sizeof descr, "<U%lld", (long long)width);
    size_t item = (size_t)width * 4;
    unsigned char *data = rg_xmalloc(item * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) npy_encode_ucs4(s[i], data + item * (size_t)i, width);
    int64_t shape[1] = {n};
    int rc = add_member(w, name, descr, ndim, shape, data, item * (size_t)n, err);
    free(data);
    return rc;
}

int npz_add_strings(npz_writer *w, const char *name, char *const *s, int64_t n, rg_err *err)
{
    return add_string_member(w, name, (const char *const *)s, n, 1, err);
}

int npz_add_string_scalar(npz_writer *w, const char *name, const char *s, rg_err *err)
{
    return add_string_member(w, name, &s, 1, 0, err);
}

static void free_writer(npz_writer *w)
{
    for (int i = 0; i < w->count; i++) free(w->entries[i].name);
    free(w->entries);
    free(w->path);
    free(w->tmp);
    free(w);
}

void npz_abandon(npz_writer *w)
{
    if (!w) return;
    fclose(w->f);
    unlink(w->tmp);
    free_writer(w);
}

static void write_central(npz_writer *w, const npz_entry *e)
{
    unsigned char h[ZIP_CENTRAL_LEN];
    memset(h, 0, sizeof h);
    put32(h, ZIP_CENTRAL_SIG);
    put16(h + 4, 20);                 /* made by: MS-DOS/FAT attributes, spec 2.0 */
    put16(h + 6, 20);
    put16(h + 10, Z_DEFLATED);
    put16(h + 14, ZIP_DOS_DATE);
    put32(h + 16, e->crc);
    put32(h + 20, e->csize);
    put32(h + 24, e->usize);
    put16(h + 28, (unsigned)strlen(e->name));
    put32(h + 42, e->offset);
    note_io(w, fwrite(h, 1, sizeof h, w->f) == sizeof h);
    note_io(w, fwrite(e->name, 1, strlen(e->name), w->f) == strlen(e->name));
}

static int write_directory(npz_writer *w, rg_err *err)
{
    off_t start = ftello(w->f);
    note_io(w, start >= 0);
    for (int i = 0; i < w->count; i++) write_central(w, &w->entries[i]);
    off_t end = ftello(w->f);
    note_io(w, end >= 0);
    if ((uint64_t)end >= ZIP_LIMIT || w->count >= 0xFFFF)
        return rg_errf(err, "%s: archive past 4 GiB or 65535 members needs zip64 (not supported)", w->path);
    unsigned char h[ZIP_END_LEN];
    memset(h, 0, sizeof h);
    put32(h, ZIP_END_SIG);
    put16(h + 8, (unsigned)w->count);
    put16(h + 10, (unsigned)w->count);
    put32(h + 12, (uint64_t)(end - start));
    put32(h + 16, (uint64_t)start);
    note_io(w, fwrite(h, 1, sizeof h, w->f) == sizeof h);
    return 0;
}

int npz_finish(npz_writer *w, rg_err *err)
{
    int rc = write_directory(w, err);
    if (rc == 0) {
        note_io(w, fflush(w->f) == 0);
        note_io(w, fsync(fileno(w->f)) == 0);
    }
    note_io(w, fclose(w->f) == 0);
    w->f = NULL;
    if (rc == 0 && w->failed) rc = rg_errf(err, "cannot write %s: %s", w->tmp, strerror(w->saved_errno));
    if (rc == 0 && rename(w->tmp, w->path) != 0)
        rc = rg_errf(err, "cannot rename %s to %s: %s", w->tmp, w->path, strerror(errno));
    if (rc) unlink(w->tmp);
    free_writer(w);
    return rc;
}

/* ==== reader ==== */

typedef struct zip_member {
    char *name;
    unsigned method;
    uint32_t crc;
    uint64_t csize, usize, offset;
} zip_member;

/* Reads exactly n bytes at offset; -1 if the file is shorter. */
static int read_at(FILE *f, uint64_t offset, void *buf, size_t n)
{
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0) return -1;
    return fread(buf, 1, n, f) == n ? 0 : -1;
}

/* Finds the end-of-central-directory record in the last 64 KiB + 22 bytes. */
static int find_end_record(FILE *f, const char *path, uint64_t size, unsigned char end[ZIP_END_LEN], rg_err *err)
{
    uint64_t span = size < 65535 + ZIP_END_LEN ? size : 65535 + ZIP_END_LEN;
    if (span < ZIP_END_LEN) return rg_errf(err, "%s: not a zip/.npz archive (too short)", path);
    unsigned char *tail = rg_xmalloc((size_t)span);
    int found = -1;
    if (read_at(f, size - span, tail, (size_t)span) == 0)
        for (int64_t i = (int64_t)span - ZIP_END_LEN; i >= 0; i--)
            if (get32(tail + i) == ZIP_END_SIG && (uint64_t)i + ZIP_END_LEN + get16(tail + i + 20) == span) {
                memcpy(end, tail + i, ZIP_END_LEN);
                found = 0;
                break;
            }
    free(tail);
    if (found) return rg_errf(err, "%s: not a zip/.npz archive, or truncated (no end-of-directory record)", path);
    return 0;
}

static int parse_central(const unsigned char *cd, size_t cd_len, int count, zip_member *m, const char *path,
                         rg_err *err)
{
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        if (at + ZIP_CENTRAL_LEN > cd_len || get32(cd + at) != ZIP_CENTRAL_SIG)
            return rg_errf(err, "%s: corrupt zip central directory (entry %d)", path, i);
        const unsigned char *h = cd + at;
        size_t nl = get16(h + 28), xl = get16(h + 30), cl = get16(h + 32);
        if (at + ZIP_CENTRAL_LEN + nl + xl + cl > cd_len)
            return rg_errf(err, "%s: corrupt zip central directory (entry %d)", path, i);
        m[i].name = rg_xmalloc(nl + 1);
        memcpy(m[i].name, h + ZIP_CENTRAL_LEN, nl);
        m[i].name[nl] = 0;
        m[i].method = get16(h + 10);
        m[i].crc = get32(h + 16);
        m[i].csize = get32(h + 20);
        m[i].usize = get32(h + 24);
        m[i].offset = get32(h + 42);
        if (get16(h + 8) & 1) return rg_errf(err, "%s: member %s is encrypted", path, m[i].name);
        if (m[i].csize == ZIP_LIMIT || m[i].usize == ZIP_LIMIT || m[i].offset == ZIP_LIMIT)
            return rg_errf(err, "%s: member %s needs zip64 (over 4 GiB), which is not supported", path, m[i].name);
        if (m[i].method != 0 && m[i].method != Z_DEFLATED)
            return rg_errf(err, "%s: member %s uses compression method %u (only stored and deflate are supported)",
                           path, m[i].name, m[i].method);
        at += ZIP_CENTRAL_LEN + nl + xl + cl;
    }
    return 0;
}

static int inflate_member(const unsigned char *in, const zip_member *m, unsigned char *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) RG_DIE("inflateInit2 failed");
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)m->csize;
    zs.next_out = out;
    zs.avail_out = (uInt)m->usize;
    int rc = inflate(&zs, Z_FINISH);
    int ok = rc == Z_STREAM_END && zs.total_out == m->usize;
    inflateEnd(&zs);
    return ok ? 0 : -1;
}

/* The uncompressed bytes of one member, CRC checked (caller frees). */
static unsigned char *read_member(FILE *f, const char *path, const zip_member *m, uint64_t cd_offset, rg_err *err)
{
    unsigned char h[ZIP_LOCAL_LEN];
    if (read_at(f, m->offset, h, sizeof h) || get32(h) != ZIP_LOCAL_SIG) {
        rg_errf(err, "%s: member %s: bad local header (corrupt archive)", path, m->name);
        return NULL;
    }
    uint64_t data_at = m->offset + ZIP_LOCAL_LEN + get16(h + 26) + get16(h + 28);
    if (data_at + m->csize > cd_offset || (m->method == 0 && m->csize != m->usize)) {
        rg_errf(err, "%s: member %s: sizes run past the directory (corrupt archive)", path, m->name);
        return NULL;
    }
    unsigned char *raw = rg_xmalloc((size_t)m->csize), *out = raw;
    int bad = read_at(f, data_at, raw, (size_t)m->csize);
    if (!bad && m->method == Z_DEFLATED) {
        out = rg_xmalloc((size_t)m->usize);
        bad = inflate_member(raw, m, out);
        free(raw);
    }
    if (!bad && (uint32_t)crc32(0, out, (uInt)m->usize) != m->crc) bad = 1;
    if (bad) {
        rg_errf(err, "%s: member %s: bad compressed data or CRC (corrupt archive)", path, m->name);
        free(out);
        return NULL;
    }
    return out;
}

static int load_members(FILE *f, const char *path, zip_member *m, int count, uint64_t cd_offset, npz_file *z,
                        rg_err *err)
{
    for (int i = 0; i < count; i++) {
        size_t nl = strlen(m[i].name);
        if (nl < 5 || strcmp(m[i].name + nl - 4, ".npy") != 0) continue;   /* not an array */
        char *key = rg_xasprintf("%.*s", (int)(nl - 4), m[i].name);
        if (npz_get(z, key)) {
            rg_errf(err, "%s: member %s appears twice", path, m[i].name);
            free(key);
            return -1;
        }
        unsigned char *bytes = read_member(f, path, &m[i], cd_offset, err);
        char *what = rg_xasprintf("%s:%s", path, m[i].name);
        int rc = bytes ? npy_parse(bytes, (size_t)m[i].usize, &z->arrays[z->count], what, err) : -1;
        free(what);
        if (rc) {
            free(key);
            return -1;
        }
        z->names[z->count++] = key;
    }
    return 0;
}

static int read_archive(FILE *f, const char *path, npz_file *z, rg_err *err)
{
    if (fseeko(f, 0, SEEK_END) != 0) return rg_errf(err, "%s: cannot seek: %s", path, strerror(errno));
    uint64_t size = (uint64_t)ftello(f);
    unsigned char end[ZIP_END_LEN] = {0};
    if (find_end_record(f, path, size, end, err)) return -1;
    int count = (int)get16(end + 10);
    uint64_t cd_len = get32(end + 12), cd_offset = get32(end + 16);
    if (count == 0xFFFF || cd_len == ZIP_LIMIT || cd_offset == ZIP_LIMIT)
        return rg_errf(err, "%s: zip64 archive (over 4 GiB), which is not supported", path);
    if (cd_offset + cd_len > size)
        return rg_errf(err, "%s: truncated or corrupt archive (directory past the end)", path);
    unsigned char *cd = rg_xmalloc((size_t)cd_len + 1);
    zip_member *m = rg_xcalloc((size_t)count + 1, sizeof *m);
    int rc = read_at(f, cd_offset, cd, (size_t)cd_len) ? rg_errf(err, "%s: cannot read the zip directory", path)
                                                        : parse_central(cd, (size_t)cd_len, count, m, path, err);
    if (rc == 0) {
        z->names = rg_xcalloc((size_t)count + 1, sizeof *z->names);
        z->arrays = rg_xcalloc((size_t)count + 1, sizeof *z->arrays);
        rc = load_members(f, path, m, count, cd_offset, z, err);
    }
    for (int i = 0; i < count; i++) free(m[i].name);
    free(m);
    free(cd);
    return rc;
}

npz_file *npz_read(const char *path, rg_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        rg_errf(err, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    npz_file *z = rg_xcalloc(1, sizeof *z);
    int rc = read_archive(f, path, z, err);
    fclose(f);
    if (rc) {
        npz_free(z);
        return NULL;
    }
    return z;
}

const npy_array *npz_get(const npz_file *f, const char *name)
{
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->names[i], name) == 0) return &f->arrays[i];
    return NULL;
}

void npz_free(npz_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->count; i++) {
        free(f->names[i]);
        npy_free(&f->arrays[i]);
    }
    free(f->names);
    free(f->arrays);
    free(f);
}

/* ==== graph export / import ==== */

int npz_export_graph(const hg_graph *g, const char *path, rg_err *err)
{
    npz_writer *w = npz_create(path, err);
    if (!w) return -1;
    int32_t T = g->num_ntypes, R = g->num_etypes, E = g->num_edges;
    int rc = npz_add_i32(w, "src", g->src, E, err) || npz_add_i32(w, "dst", g->dst, E, err) ||
             npz_add_i32(w, "etype", g->etype, E, err) || npz_add_i32(w, "ntype_ptr", g->ntype_ptr, T + 1, err) ||
             npz_add_i32(w, "etype_ptr", g->etype_ptr, R + 1, err) ||
             npz_add_i32(w, "etype_src", g->etype_src, R, err) || npz_add_i32(w, "etype_dst", g->etype_dst, R, err) ||
             npz_add_i32(w, "unique_src", g->unique_src, g->num_unique, err) ||
             npz_add_i32(w, "unique_etype_ptr", g->unique_etype_ptr, R + 1, err) ||
             npz_add_i32(w, "edge_compact", g->edge_compact, E, err) ||
             npz_add_strings(w, "ntype_names", g->ntype_names, T, err) ||
             npz_add_strings(w, "etype_names", g->etype_names, R, err) ||
             npz_add_string_scalar(w, "name", g->name, err);
    if (rc) {
        npz_abandon(w);
        return -1;
    }
    return npz_finish(w, err);
}

typedef struct import_ctx {
    const char *path;
    const npz_file *z;
    int64_t T, R, E;
    int32_t *ntype_ptr, *etype_src, *etype_dst, *src, *dst, *etype;
    char **ntype_names, **etype_names, *name;
} import_ctx;

/* A required 1-d integer array of length `want` (-1: any), as int32. */
static int32_t *get_ints(import_ctx *c, const char *key, int64_t want, int64_t *len, rg_err *err)
{
    const npy_array *a = npz_get(c->z, key);
    if (!a) {
        rg_errf(err, "%s: no '%s' array", c->path, key);
        return NULL;
    }
    if (a->kind == NPY_U || a->ndim != 1 || (want >= 0 && a->count != want)) {
        rg_errf(err, "%s: '%s' must be a 1-d integer array%s", c->path, key, want >= 0 ? " of the matching length" : "");
        return NULL;
    }
    int32_t *v = rg_xmalloc((size_t)(a->count ? a->count : 1) * sizeof *v);
    for (int64_t i = 0; i < a->count; i++) {
        int64_t x = npy_int_at(a, i);
        if (x < INT32_MIN || x > INT32_MAX) {
            rg_errf(err, "%s: '%s'[%lld] = %lld does not fit in int32", c->path, key, (long long)i, (long long)x);
            free(v);
            return NULL;
        }
        v[i] = (int32_t)x;
    }
    if (len) *len = a->count;
    return v;
}

/* A required unicode array: 1-d (scalar = 0: its length goes to *len) or one string. */
static char **get_strings(import_ctx *c, const char *key, int scalar, int64_t *len, rg_err *err)
{
    const npy_array *a = npz_get(c->z, key);
    if (!a) {
        rg_errf(err, "%s: no '%s' array", c->path, key);
        return NULL;
    }
    int ok = a->kind == NPY_U && (scalar ? a->count == 1 && a->ndim <= 1 : a->ndim == 1);
    if (!ok) {
        rg_errf(err, "%s: '%s' must be %s", c->path, key, scalar ? "one unicode string" : "a 1-d unicode array");
        return NULL;
    }
    char **s = rg_xmalloc((size_t)(a->count + 1) * sizeof *s);
    for (int64_t i = 0; i < a->count; i++) s[i] = npy_string_at(a, i);
    if (len) *len = a->count;
    return s;
}

static int check_ranges(import_ctx *c, rg_err *err)
{
    if (c->ntype_ptr[0] != 0) return rg_errf(err, "%s: ntype_ptr[0] must be 0", c->path);
    for (int64_t t = 0; t < c->T; t++)
        if (c->ntype_ptr[t + 1] < c->ntype_ptr[t]) return rg_errf(err, "%s: ntype_ptr decreases at %lld", c->path, (long long)t);
    for (int64_t r = 0; r < c->R; r++)
        if (c->etype_src[r] < 0 || c->etype_src[r] >= c->T || c->etype_dst[r] < 0 || c->etype_dst[r] >= c->T)
            return rg_errf(err, "%s: edge type %lld has a node type out of range", c->path, (long long)r);
    for (int64_t e = 0; e < c->E; e++) {
        int32_t r = c->etype[e];
        if (r < 0 || r >= c->R) return rg_errf(err, "%s: etype[%lld] = %d is out of range", c->path, (long long)e, r);
        int32_t s = c->etype_src[r], d = c->etype_dst[r];
        if (c->src[e] < c->ntype_ptr[s] || c->src[e] >= c->ntype_ptr[s + 1] || c->dst[e] < c->ntype_ptr[d] ||
            c->dst[e] >= c->ntype_ptr[d + 1])
            return rg_errf(err, "%s: edge %lld joins nodes of the wrong types for its relation", c->path, (long long)e);
    }
    return 0;
}

static int read_core(import_ctx *c, rg_err *err)
{
    int64_t n;
    if (!(c->ntype_names = get_strings(c, "ntype_names", 0, &c->T, err))) return -1;
    if (!(c->etype_names = get_strings(c, "etype_names", 0, &c->R, err))) return -1;
    char **name = get_strings(c, "name", 1, NULL, err);
    if (!name) return -1;
    c->name = name[0];
    free(name);
    if (!(c->ntype_ptr = get_ints(c, "ntype_ptr", c->T + 1, NULL, err))) return -1;
    if (!(c->etype_src = get_ints(c, "etype_src", c->R, NULL, err))) return -1;
    if (!(c->etype_dst = get_ints(c, "etype_dst", c->R, NULL, err))) return -1;
    if (!(c->src = get_ints(c, "src", -1, &c->E, err))) return -1;
    if (!(c->dst = get_ints(c, "dst", c->E, &n, err))) return -1;
    if (!(c->etype = get_ints(c, "etype", c->E, &n, err))) return -1;
    return check_ranges(c, err);
}

static hg_graph *build_graph(import_ctx *c, rg_err *err)
{
    hg_builder *b = hgb_new(c->name);
    for (int64_t t = 0; t < c->T; t++) {
        if (hgb_ntype(b, c->ntype_names[t]) != t) {
            rg_errf(err, "%s: node type name '%s' appears twice", c->path, c->ntype_names[t]);
            hgb_free(b);
            return NULL;
        }
        hgb_ntype_count_at_least(b, (int32_t)t, c->ntype_ptr[t + 1] - c->ntype_ptr[t]);
    }
    for (int64_t r = 0; r < c->R; r++)
        if (hgb_etype(b, c->etype_names[r], c->etype_src[r], c->etype_dst[r]) != r) {
            rg_errf(err, "%s: edge type '%s' appears twice", c->path, c->etype_names[r]);
            hgb_free(b);
            return NULL;
        }
    hgb_reserve(b, c->E);
    for (int64_t e = 0; e < c->E; e++) {
        int32_t r = c->etype[e];
        hgb_add_edge(b, r, c->src[e] - c->ntype_ptr[c->etype_src[r]], c->dst[e] - c->ntype_ptr[c->etype_dst[r]]);
    }
    return hgb_finish(b, 0, err);
}

/* Stored derived arrays are optional, but when present they must be what we rebuilt. */
static int check_derived(import_ctx *c, const hg_graph *g, rg_err *err)
{
    const struct {
        const char *key;
        const int32_t *v;
        int64_t n;
    } derived[] = {
        {"etype_ptr", g->etype_ptr, g->num_etypes + 1}, {"unique_src", g->unique_src, g->num_unique},
        {"unique_etype_ptr", g->unique_etype_ptr, g->num_etypes + 1}, {"edge_compact", g->edge_compact, g->num_edges},
    };
    for (size_t k = 0; k < sizeof derived / sizeof derived[0]; k++) {
        const npy_array *a = npz_get(c->z, derived[k].key);
        if (!a) continue;
        int same = a->kind != NPY_U && a->ndim == 1 && a->count == derived[k].n;
        for (int64_t i = 0; same && i < a->count; i++) same = npy_int_at(a, i) == derived[k].v[i];
        if (!same)
            return rg_errf(err, "%s: '%s' differs from the one rebuilt from the edges (edges not sorted by "
                           "(etype, src), or a stale or corrupt file)", c->path, derived[k].key);
    }
    return 0;
}

static void free_names(char **s, int64_t n)
{
    for (int64_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

hg_graph *npz_import_graph(const char *path, rg_err *err)
{
    npz_file *z = npz_read(path, err);
    if (!z) return NULL;
    import_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.z = z;
    hg_graph *g = read_core(&c, err) == 0 ? build_graph(&c, err) : NULL;
    if (g && check_derived(&c, g, err)) {
        hg_free(g);
        g = NULL;
    }
    free_names(c.ntype_names, c.T);
    free_names(c.etype_names, c.R);
    free(c.name);
    free(c.ntype_ptr);
    free(c.etype_src);
    free(c.etype_dst);
    free(c.src);
    free(c.dst);
    free(c.etype);
    npz_free(z);
    return g;
}
