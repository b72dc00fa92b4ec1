/* Streaming line reader over zlib (plain and .gz files alike) with strict field and number
 * parsing, shared by the text loaders; every error names FILE:LINE and the offending text. */
#include "datasets/textio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

char *tio_find(const char *dir, const char *name)
{
    char *p = rg_xasprintf("%s/%s", dir, name);
    if (rg_file_exists(p)) return p;
    free(p);
    p = rg_xasprintf("%s/%s.gz", dir, name);
    if (rg_file_exists(p)) return p;
    free(p);
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".gz") == 0) {
        p = rg_xasprintf("%s/%.*s", dir, (int)(n - 3), name);
        if (rg_file_exists(p)) return p;
        free(p);
    }
    return NULL;
}

char *tio_require(const char *dir, const char *name, const char *what, rg_err *err)
{
    char *p = tio_find(dir, name);
    if (!p) rg_errf(err, "%s: missing %s (or its .gz/plain variant) in %s", what, name, dir);
    return p;
}

tio_reader *tio_open(const char *path, rg_err *err)
{
    errno = 0;
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        rg_errf(err, "cannot open %s: %s", path, errno ? strerror(errno) : "out of memory");
        return NULL;
    }
    /* A large buffer: the loaders read millions of short lines. */
    gzbuffer(gz, 1 << 18);
    tio_reader *r = rg_xcalloc(1, sizeof *r);
    r->gz = gz;
    r->path = rg_xstrdup(path);
    r->cap = 4096;
    r->line = rg_xmalloc(r->cap);
    r->line[0] = 0;
    return r;
}

static void strip_eol(tio_reader *r)
{
    if (r->len && r->line[r->len - 1] == '\n') r->len--;
    if (r->len && r->line[r->len - 1] == '\r') r->len--;
    r->line[r->len] = 0;
}

int tio_next(tio_reader *r, rg_err *err)
{
    r->len = 0;
    r->line[0] = 0;
    for (;;) {
        if (r->cap - r->len < 64) {
            r->cap *= 2;
            r->line = rg_xrealloc(r->line, r->cap);
        }
        size_t room = r->cap - r->len;
        if (room > INT32_MAX) room = INT32_MAX;
        if (!gzgets(r->gz, r->line + r->len, (int)room)) break;
        r->len += strlen(r->line + r->len);
        if (r->len && r->line[r->len - 1] == '\n') {
            strip_eol(r);
            r->line_no++;
            return 1;
        }
    }
    /* gzgets found nothing more: either a clean end, or a gzip stream that stops early
     * (Z_BUF_ERROR "unexpected end of file") or is corrupt (Z_DATA_ERROR). */
    int errnum = Z_OK;
    const char *msg = gzerror(r->gz, &errnum);
    if (errnum != Z_OK)
        return rg_errf(err, "%s: read error after line %lld: %s (truncated or corrupt file)",
                       r->path, (long long)r->line_no, errnum == Z_ERRNO ? strerror(errno) : msg);
    if (r->len == 0) return 0;
    strip_eol(r);   /* a last line without a newline */
    r->line_no++;
    return 1;
}

void tio_close(tio_reader *r)
{
    if (!r) return;
    gzclose(r->gz);
    free(r->path);
    free(r->line);
    free(r->work);
    free(r);
}

int tio_blank(const tio_reader *r)
{
    for (size_t i = 0; i < r->len; i++)
        if (r->line[i] != ' ' && r->line[i] != '\t') return 0;
    return 1;
}

int tio_fail(const tio_reader *r, rg_err *err, const char *expected)
{
    int shown = r->len > 120 ? 120 : (int)r->len;
    return rg_errf(err, "%s:%lld: expected %s, got '%.*s%s'", r->path, (long long)r->line_no,
                   expected, shown, r->line, r->len > 120 ? "..." : "");
}

static int split_blanks(char *s, char **fields, int max)
{
    int n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t') *s++ = 0;
        if (!*s) return n;
        if (n == max) return max + 1;
        fields[n++] = s;
        while (*s && *s != ' ' && *s != '\t') s++;
    }
}

int tio_split(tio_reader *r, char sep, char **fields, int max)
{
    if (r->work_cap < r->len + 1) {
        r->work_cap = r->cap;
        r->work = rg_xrealloc(r->work, r->work_cap);
    }
    memcpy(r->work, r->line, r->len + 1);
    if (sep == ' ') return split_blanks(r->work, fields, max);
    int n = 0;
    char *s = r->work;
    for (;;) {
        if (n == max) return max + 1;
        fields[n++] = s;
        char *next = strchr(s, sep);
        if (!next) return n;
        *next = 0;
        s = next + 1;
    }
}

int tio_parse_u64(const char *s, uint64_t *out)
{
    if (!*s) return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int tio_parse_below(const char *s, int64_t limit, int64_t *out)
{
    uint64_t v;
    if (tio_parse_u64(s, &v) || v >= (uint64_t)limit) return -1;
    *out = (int64_t)v;
    return 0;
}
