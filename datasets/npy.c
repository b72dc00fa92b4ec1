/* NumPy .npy arrays: strict v1/v2 header parsing, header writing, UCS4 strings, and the
 * mag_0.1 loader (one <relation>_coo_2.npy of shape (2, E) per relation, no reverse types). */
#include "datasets/npy.h"
#include "datasets/loaders.h"
#include "datasets/textio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy readers copy little-endian data as is: a big-endian host needs byte swapping"
#endif

static const unsigned char NPY_MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* ---- header dict: {'descr': '<i4', 'fortran_order': False, 'shape': (2, 52670), } ---- */

typedef struct hdr_cursor {
    const char *p, *end;
} hdr_cursor;

static void skip_blanks(hdr_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* Consumes ch (after blanks); 0 if it is there. */
static int expect_char(hdr_cursor *c, char ch)
{
    skip_blanks(c);
    if (c->p >= c->end || *c->p != ch) return -1;
    c->p++;
    return 0;
}

/* A Python string literal without escapes ('x' or "x"), copied into out[cap]. */
static int parse_pystr(hdr_cursor *c, char *out, size_t cap)
{
    skip_blanks(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= cap) return -1;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return -1;
    c->p++;
    out[n] = 0;
    return 0;
}

static int parse_bool(hdr_cursor *c, int *out)
{
    skip_blanks(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        c->p += 4;
        *out = 1;
        return 0;
    }
    if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        c->p += 5;
        *out = 0;
        return 0;
    }
    return -1;
}

static int parse_dim(hdr_cursor *c, int64_t *out)
{
    skip_blanks(c);
    int64_t v = 0;
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*c->p++ - '0');
    }
    if (c->p == start) return -1;
    if (c->p < c->end && *c->p == 'L') c->p++;   /* Python 2 longs, as old numpy wrote them */
    *out = v;
    return 0;
}

/* (), (n,), (a, b), ... with an optional trailing comma. */
static int parse_shape(hdr_cursor *c, npy_array *a)
{
    if (expect_char(c, '(')) return -1;
    a->ndim = 0;
    for (;;) {
        skip_blanks(c);
        if (c->p < c->end && *c->p == ')') break;
        if (a->ndim == NPY_MAX_DIMS || parse_dim(c, &a->shape[a->ndim])) return -1;
        a->ndim++;
        skip_blanks(c);
        if (c->p < c->end && *c->p == ',') c->p++;
        else if (c->p >= c->end || *c->p != ')') return -1;
    }
    c->p++;
    /* a 1-tuple needs its comma in Python, "(5)" would be an int: numpy never writes it */
    return 0;
}

static int set_dtype(npy_array *a, const char *descr, int floats)
{
    if (floats && (strcmp(descr, "<f4") == 0 || strcmp(descr, "<f8") == 0)) {
        a->kind = descr[2] == '4' ? NPY_F4 : NPY_F8;
        a->itemsize = descr[2] == '4' ? 4 : 8;
        return 0;
    }
    if (strcmp(descr, "<i4") == 0) {
        a->kind = NPY_I4;
        a->itemsize = 4;
        return 0;
    }
    if (strcmp(descr, "<i8") == 0) {
        a->kind = NPY_I8;
        a->itemsize = 8;
        return 0;
    }
    uint64_t chars;
    if (strncmp(descr, "<U", 2) == 0 && tio_parse_u64(descr + 2, &chars) == 0 && chars >= 1 && chars < (1u << 24)) {
        a->kind = NPY_U;
        a->itemsize = 4 * (int64_t)chars;
        return 0;
    }
    return -1;
}

static int parse_dict(const char *text, size_t n, npy_array *a, int floats, const char *what, rg_err *err)
{
    hdr_cursor c = {text, text + n};
    char key[32], descr[32] = "";
    int have_descr = 0, have_fortran = 0, have_shape = 0, fortran = 0;
    if (expect_char(&c, '{')) return rg_errf(err, "%s: .npy header is not a dict", what);
    for (;;) {
        skip_blanks(&c);
        if (c.p < c.end && *c.p == '}') break;
        if (parse_pystr(&c, key, sizeof key) || expect_char(&c, ':'))
            return rg_errf(err, "%s: malformed .npy header dict", what);
        int bad, *seen;
        if (strcmp(key, "descr") == 0) bad = parse_pystr(&c, descr, sizeof descr), seen = &have_descr;
        else if (strcmp(key, "fortran_order") == 0) bad = parse_bool(&c, &fortran), seen = &have_fortran;
        else if (strcmp(key, "shape") == 0) bad = parse_shape(&c, a), seen = &have_shape;
        else return rg_errf(err, "%s: unexpected key '%s' in the .npy header", what, key);
        if (bad || *seen) return rg_errf(err, "%s: bad or repeated '%s' in the .npy header", what, key);
        *seen = 1;
        skip_blanks(&c);
        if (c.p < c.end && *c.p == ',') c.p++;
        else if (c.p >= c.end || *c.p != '}') return rg_errf(err, "%s: malformed .npy header dict", what);
    }
    c.p++;
    skip_blanks(&c);
    if (c.p != c.end) return rg_errf(err, "%s: text after the .npy header dict", what);
    if (!have_descr || !have_fortran || !have_shape)
        return rg_errf(err, "%s: .npy header lacks 'descr', 'fortran_order' or 'shape'", what);
    if (set_dtype(a, descr, floats))
        return rg_errf(err, "%s: unsupported dtype '%s' (expected '<i4', '<i8'%s)", what, descr,
                       floats ? ", '<f4' or '<f8'" : " or '<U<n>'");
    if (fortran) return rg_errf(err, "%s: fortran_order True is not supported (C order only)", what);
    return 0;
}

/* count = product of the shape; -1 when count * itemsize would overflow. */
static int compute_count(npy_array *a)
{
    int64_t count = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] && count > INT64_MAX / a->shape[d]) return -1;
        count *= a->shape[d];
    }
    if (count && a->itemsize > INT64_MAX / count) return -1;
    a->count = count;
    return 0;
}

static int parse_header(const unsigned char *buf, size_t n, npy_array *a, int floats, const char *what, rg_err *err)
{
    if (n < 10 || memcmp(buf, NPY_MAGIC, 6) != 0) return rg_errf(err, "%s: not a .npy file (bad magic)", what);
    if ((buf[6] != 1 && buf[6] != 2) || buf[7] != 0)
        return rg_errf(err, "%s: .npy format version %d.%d is not supported (1.0 and 2.0 are)", what, buf[6], buf[7]);
    size_t pre = buf[6] == 1 ? 10 : 12;
    if (n < pre) return rg_errf(err, "%s: truncated .npy header", what);
    size_t hlen = buf[6] == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                              : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    if (hlen > n - pre) return rg_errf(err, "%s: truncated .npy header (%zu bytes promised)", what, hlen);
    const char *text = (const char *)buf + pre;
    if (hlen == 0 || text[hlen - 1] != '\n') return rg_errf(err, "%s: .npy header does not end with a newline", what);
    if (memchr(text, 0, hlen)) return rg_errf(err, "%s: NUL byte in the .npy header", what);
    if (parse_dict(text, hlen, a, floats, what, err)) return -1;
    if (compute_count(a)) return rg_errf(err, "%s: .npy shape is too large", what);
    uint64_t need = (uint64_t)a->count * (uint64_t)a->itemsize, have = n - pre - hlen;
    if (need > have)
        return rg_errf(err, "%s: truncated .npy data: the header promises %llu bytes, the file holds %llu", what,
                       (unsigned long long)need, (unsigned long long)have);
    a->data = buf + pre + hlen;
    return 0;
}

/* floats: also accept '<f4' and '<f8' (only for readers that handle them, see npy.h). */
static int parse_any(unsigned char *buf, size_t n, npy_array *a, int floats, const char *what, rg_err *err)
{
    memset(a, 0, sizeof *a);
    a->buf = buf;
    if (parse_header(buf, n, a, floats, what, err) == 0) return 0;
    npy_free(a);
    return -1;
}

int npy_parse(unsigned char *buf, size_t n, npy_array *a, const char *what, rg_err *err)
{
    return parse_any(buf, n, a, 0, what, err);
}

static int read_file(const char *path, npy_array *a, int floats, rg_err *err)
{
    memset(a, 0, sizeof *a);
    errno = 0;
    gzFile gz = gzopen(path, "rb");
    if (!gz) return rg_errf(err, "cannot open %s: %s", path, errno ? strerror(errno) : "out of memory");
    size_t n = 0, cap = 1 << 20;
    unsigned char *buf = rg_xmalloc(cap);
    for (;;) {
        if (n == cap) buf = rg_xrealloc(buf, cap *= 2);
        size_t want = cap - n > (1u << 30) ? (1u << 30) : cap - n;
        int got = gzread(gz, buf + n, (unsigned)want);
        if (got <= 0) {
            int errnum = Z_OK;
            const char *msg = gzerror(gz, &errnum);
            if (got == 0 && errnum == Z_OK) break;
            rg_errf(err, "%s: read error: %s (truncated or corrupt file)", path, errnum == Z_ERRNO ? strerror(errno) : msg);
            gzclose(gz);
            free(buf);
            return -1;
        }
        n += (size_t)got;
    }
    gzclose(gz);
    return parse_any(buf, n, a, floats, path, err);
}

int npy_read_file(const char *path, npy_array *a, rg_err *err) { return read_file(path, a, 0, err); }

int npy_read_numeric_file(const char *path, npy_array *a, rg_err *err)
{
    if (read_file(path, a, 1, err)) return -1;
    if (a->kind != NPY_U) return 0;
    rg_errf(err, "%s: a string array where numbers were expected", path);
    npy_free(a);
    return -1;
}

double npy_value_at(const npy_array *a, int64_t i)
{
    RG_ASSERT(i >= 0 && i < a->count && a->kind != NPY_U);
    if (a->kind == NPY_F8) {
        double v;
        memcpy(&v, a->data + 8 * i, 8);
        return v;
    }
    if (a->kind == NPY_F4) {
        float v;
        memcpy(&v, a->data + 4 * i, 4);
        return v;
    }
    return (double)npy_int_at(a, i);
}

/* One whole .npy file: header, then n items of `size` bytes (little-endian hosts only, as
 * every reader here assumes). */
static int write_file(const char *path, const char *descr, int ndim, const int64_t *shape, const void *data,
                      size_t size, rg_err *err)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    unsigned char hdr[NPY_HEADER_MAX];
    size_t hlen = npy_format_header(hdr, descr, ndim, shape);
    FILE *f = fopen(path, "wb");
    if (!f) return rg_errf(err, "cannot create %s: %s", path, strerror(errno));
    int ok = fwrite(hdr, 1, hlen, f) == hlen && (n == 0 || fwrite(data, size, (size_t)n, f) == (size_t)n);
    if (fclose(f) != 0) ok = 0;
    if (!ok) return rg_errf(err, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

int npy_write_f64(const char *path, int ndim, const int64_t *shape, const double *data, rg_err *err)
{
    return write_file(path, "<f8", ndim, shape, data, sizeof *data, err);
}

int npy_write_i64(const char *path, int ndim, const int64_t *shape, const int64_t *data, rg_err *err)
{
    return write_file(path, "<i8", ndim, shape, data, sizeof *data, err);
}

void npy_free(npy_array *a)
{
    free(a->buf);
    memset(a, 0, sizeof *a);
}

int64_t npy_int_at(const npy_array *a, int64_t i)
{
    RG_ASSERT(i >= 0 && i < a->count);
    if (a->kind == NPY_I4) {
        int32_t v;
        memcpy(&v, a->data + 4 * i, 4);
        return v;
    }
    RG_ASSERT(a->kind == NPY_I8);
    int64_t v;
    memcpy(&v, a->data + 8 * i, 8);
    return v;
}

/* ---- UTF-8 <-> UCS4 ---- */

/* Decodes one UTF-8 sequence at s; invalid bytes decode alone to U+DC80+byte. */
static int utf8_next(const unsigned char *s, uint32_t *cp)
{
    unsigned char b = s[0];
    int len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    uint32_t v = len == 1 ? b : len == 2 ? b & 0x1Fu : len == 3 ? b & 0x0Fu : b & 0x07u;
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) {
            len = 0;
            break;
        }
        v = v << 6 | (s[k] & 0x3Fu);
    }
    static const uint32_t min_of_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (len == 0 || v < min_of_len[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = 0xDC00u + b;
        return 1;
    }
    *cp = v;
    return len;
}

int64_t npy_ucs4_len(const char *s)
{
    int64_t n = 0;
    uint32_t cp;
    for (const unsigned char *p = (const unsigned char *)s; *p; p += utf8_next(p, &cp)) n++;
    return n;
}

void npy_encode_ucs4(const char *s, unsigned char *out, int64_t width)
{
    int64_t i = 0;
    uint32_t cp;
    for (const unsigned char *p = (const unsigned char *)s; *p; i++) {
        RG_ASSERT(i < width);
        p += utf8_next(p, &cp);
        memcpy(out + 4 * i, &cp, 4);
    }
    memset(out + 4 * i, 0, (size_t)(4 * (width - i)));
}

static void put_utf8(rg_str *b, uint32_t cp)
{
    if (cp >= 0xDC80 && cp <= 0xDCFF) {   /* an escaped raw byte */
        rg_str_putc(b, (char)(cp - 0xDC00));
        return;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x80) {
        rg_str_putc(b, (char)cp);
    } else if (cp < 0x800) {
        rg_str_putc(b, (char)(0xC0 | cp >> 6));
        rg_str_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        rg_str_putc(b, (char)(0xE0 | cp >> 12));
        rg_str_putc(b, (char)(0x80 | (cp >> 6 & 0x3F)));
        rg_str_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else {
        rg_str_putc(b, (char)(0xF0 | cp >> 18));
        rg_str_putc(b, (char)(0x80 | (cp >> 12 & 0x3F)));
        rg_str_putc(b, (char)(0x80 | (cp >> 6 & 0x3F)));
        rg_str_putc(b, (char)(0x80 | (cp & 0x3F)));
    }
}

char *npy_string_at(const npy_array *a, int64_t i)
{
    RG_ASSERT(a->kind == NPY_U && i >= 0 && i < a->count);
    rg_str b = {0};
    rg_str_puts(&b, "");
    const unsigned char *p = a->data + a->itemsize * i;
    for (int64_t k = 0; k < a->itemsize / 4; k++) {
        uint32_t cp;
        memcpy(&cp, p + 4 * k, 4);
        if (cp == 0) break;
        put_utf8(&b, cp);
    }
    return b.s;
}

size_t npy_format_header(unsigned char *out, const char *descr, int ndim, const int64_t *shape)
{
    RG_ASSERT(ndim >= 0 && ndim <= NPY_MAX_DIMS);
    rg_str dict = {0};
    rg_str_printf(&dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int d = 0; d < ndim; d++) rg_str_printf(&dict, d ? ", %lld" : "%lld", (long long)shape[d]);
    rg_str_puts(&dict, ndim == 1 ? ",), }" : "), }");
    /* magic(6) + version(2) + length(2) + dict + padding + '\n' is a multiple of 64 */
    size_t total = (10 + dict.len + 1 + 63) / 64 * 64, hlen = total - 10;
    RG_ASSERT(total <= NPY_HEADER_MAX);
    memcpy(out, NPY_MAGIC, 6);
    out[6] = 1;
    out[7] = 0;
    out[8] = (unsigned char)(hlen & 0xFF);
    out[9] = (unsigned char)(hlen >> 8);
    memcpy(out + 10, dict.s, dict.len);
    memset(out + 10 + dict.len, ' ', hlen - dict.len - 1);
    out[total - 1] = '\n';
    rg_str_free(&dict);
    return total;
}

/* ---- mag_0.1: <relation>_coo_2.npy, shape (2, E): row 0 = src, row 1 = dst, local ids ---- */

static const struct {
    const char *rel, *src, *dst;
} MAG_SUB_RELATIONS[] = {
    {"cited", "paper", "paper"},      {"citing", "paper", "paper"},       {"has", "field", "paper"},
    {"is-about", "paper", "field"},   {"writing", "author", "paper"},     {"written-by", "paper", "author"},
};

/* "(2, 5)" for messages */
static void format_shape(const npy_array *a, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "(");
    for (int d = 0; d < a->ndim && n < cap; d++)
        n += (size_t)snprintf(out + n, cap - n, d ? ", %lld" : "%lld", (long long)a->shape[d]);
    if (n < cap) snprintf(out + n, cap - n, a->ndim == 1 ? ",)" : ")");
}

static int add_coo_relation(hg_builder *b, int32_t etype, const char *path, rg_err *err)
{
    npy_array a;
    if (npy_read_file(path, &a, err)) return -1;
    int rc = 0;
    if (a.kind == NPY_U || a.ndim != 2 || a.shape[0] != 2) {
        char shape[128];
        format_shape(&a, shape, sizeof shape);
        rc = rg_errf(err, "%s: expected an integer array of shape (2, E), got %s of shape %s", path,
                     a.kind == NPY_U ? "strings" : "integers", shape);
    }
    int64_t e_count = rc ? 0 : a.shape[1];
    /* ids are type-local: one far beyond what the file's edges make plausible is corrupt,
     * and refusing it here names the file and the edge */
    int64_t limit = hg_plausible_nodes(e_count);
    hgb_reserve(b, hgb_num_edges(b) + e_count);
    for (int64_t i = 0; rc == 0 && i < e_count; i++) {
        int64_t s = npy_int_at(&a, i), d = npy_int_at(&a, e_count + i);
        if (s < 0 || d < 0 || s >= INT32_MAX || d >= INT32_MAX)
            rc = rg_errf(err, "%s: edge %lld has an invalid id (%lld -> %lld)", path, (long long)i, (long long)s,
                         (long long)d);
        else if (s >= limit || d >= limit)
            rc = rg_errf(err, "%s: edge %lld has an implausible id (%lld -> %lld) for a file of %lld edges: ids of "
                         "max(2^24, %d x edges) = %lld or more are taken for corruption", path, (long long)i,
                         (long long)s, (long long)d, (long long)e_count, HG_PLAUSIBLE_IDS_PER_EDGE,
                         (long long)limit);
        else
            hgb_add_edge(b, etype, s, d);
    }
    npy_free(&a);
    return rc;
}

hg_graph *npy_load_mag_sub(const char *dir, const char *name, rg_err *err)
{
    hg_builder *b = hgb_new(name && *name ? name : "mag_0.1");
    /* node types in a fixed order, whatever the relation order */
    hgb_ntype(b, "paper");
    hgb_ntype(b, "field");
    hgb_ntype(b, "author");
    int rc = 0;
    for (size_t r = 0; rc == 0 && r < sizeof MAG_SUB_RELATIONS / sizeof MAG_SUB_RELATIONS[0]; r++) {
        char *file = rg_xasprintf("%s_coo_2.npy", MAG_SUB_RELATIONS[r].rel);
        char *path = tio_require(dir, file, "mag_0.1", err);
        int32_t etype = hgb_etype(b, MAG_SUB_RELATIONS[r].rel, hgb_ntype(b, MAG_SUB_RELATIONS[r].src),
                                  hgb_ntype(b, MAG_SUB_RELATIONS[r].dst));
        rc = path ? add_coo_relation(b, etype, path, err) : -1;
        free(path);
        free(file);
    }
    if (rc) {
        hgb_free(b);
        return NULL;
    }
    return hgb_finish(b, 0, err);
}
