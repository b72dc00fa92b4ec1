/* Shared helpers for every module: asserts with file:line, checked allocation,
 * recoverable error messages (rg_err), timers, growable strings and hashing. */
#include "common/util.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void rg_fatal(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s:%d: internal error: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void *rg_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) RG_DIE("out of host memory allocating %zu bytes", n);
    return p;
}

void *rg_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) RG_DIE("out of host memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *rg_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) RG_DIE("out of host memory reallocating %zu bytes", n);
    return q;
}

char *rg_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(rg_xmalloc(n), s, n);
}

char *rg_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    RG_ASSERT(n >= 0);
    char *s = rg_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int rg_errf(rg_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = RG_ERR_OTHER;
        err->cuda = 0;
    }
    return -1;
}

int rg_err_classify(rg_err *err, rg_err_class code, int cuda)
{
    RG_ASSERT(code >= RG_ERR_OTHER && code < RG_ERR__COUNT);
    if (err) {
        err->code = code;
        err->cuda = cuda;
    }
    return -1;
}

const char *rg_err_class_name(rg_err_class c)
{
    static const char *names[RG_ERR__COUNT] = {"other", "compile", "launch", "fault", "wrong_answer",
                                               "timeout", "oom", "no_device"};
    RG_ASSERT(c >= RG_ERR_OTHER && c < RG_ERR__COUNT);
    return names[c];
}

void rg_err_prefix(rg_err *err, const char *fmt, ...)
{
    if (!err) return;
    char prefix[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Truncation of an over-long message is acceptable: it stays one readable line. */
    size_t n = strlen(prefix);
    if (n > sizeof err->msg - 3) n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t room = sizeof err->msg - n - 3, m = strlen(old);
    if (m > room) m = room;
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = 0;
}

double rg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

long rg_proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    size_t klen = strlen(key);
    while (kb < 0 && fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0) kb = strtol(line + klen, NULL, 10);
    fclose(f);
    return kb;
}

long rg_peak_rss_kb(void)
{
    return rg_proc_kb("/proc/self/status", "VmHWM:");
}

static void str_reserve(rg_str *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    b->s = rg_xrealloc(b->s, cap);
    b->cap = cap;
}

void rg_str_putc(rg_str *b, char c)
{
    str_reserve(b, 1);
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

void rg_str_puts(rg_str *b, const char *s)
{
    size_t n = strlen(s);
    str_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void rg_str_printf(rg_str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    RG_ASSERT(n >= 0);
    str_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void rg_str_free(rg_str *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

uint64_t rg_fnv1a64(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rg_rng_seed(rg_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rg_rng_next(rg_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rg_rng_uniform(rg_rng *r) { return (double)(rg_rng_next(r) >> 11) * 0x1.0p-53; }

uint64_t rg_rng_below(rg_rng *r, uint64_t n)
{
    RG_ASSERT(n > 0);
    return (uint64_t)(rg_rng_uniform(r) * (double)n) % n;
}

int rg_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int *row = rg_xmalloc((lb + 1) * sizeof *row);
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    int d = row[lb];
    free(row);
    return d;
}

int rg_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int rg_mkdir_p(const char *path, rg_err *err)
{
    char *tmp = rg_xstrdup(path);
    for (char *p = tmp + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char saved = *p;
            *p = 0;
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                rg_errf(err, "cannot create directory %s: %s", tmp, strerror(e));
                free(tmp);
                return -1;
            }
            *p = saved;
            if (!saved) break;
        }
    }
    free(tmp);
    return 0;
}

double rg_median_sort(double *x, size_t n)
{
    RG_ASSERT(n > 0);
    gsl_sort(x, 1, n);
    return gsl_stats_median_from_sorted_data(x, 1, n);
}
