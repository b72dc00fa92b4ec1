/* Shared helpers for every module: asserts with file:line, checked allocation,
 * recoverable error messages (rg_err), timers, growable strings and hashing. */
#ifndef RG_UTIL_H
#define RG_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Programmer errors: abort with the location. Bad input must use rg_err instead. */
#define RG_ASSERT(cond) \
    do { if (!(cond)) rg_fatal(__FILE__, __LINE__, "assertion failed: %s", #cond); } while (0)
#define RG_DIE(...) rg_fatal(__FILE__, __LINE__, __VA_ARGS__)

_Noreturn void rg_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void *rg_xmalloc(size_t n);
void *rg_xcalloc(size_t count, size_t size);
void *rg_xrealloc(void *p, size_t n);
char *rg_xstrdup(const char *s);
char *rg_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A recoverable error: a one-line message for the user (bad input, missing file,
 * compile failure...). Functions that can fail take an rg_err* and return -1/NULL. */
typedef struct rg_err {
    char msg[2048];
} rg_err;

/* Formats into err (if non-NULL) and returns -1, so callers can `return rg_errf(...)`. */
int rg_errf(rg_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends "prefix: " to an existing message. */
void rg_err_prefix(rg_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

double rg_now(void);            /* monotonic seconds */
long rg_peak_rss_kb(void);      /* peak resident set size of this process (VmHWM) */

/* Growable string. */
typedef struct rg_str {
    char *s;
    size_t len, cap;
} rg_str;
void rg_str_putc(rg_str *b, char c);
void rg_str_puts(rg_str *b, const char *s);
void rg_str_printf(rg_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rg_str_free(rg_str *b);

uint64_t rg_fnv1a64(const void *data, size_t n, uint64_t seed);
#define RG_FNV_SEED 1469598103934665603ULL

/* Deterministic PRNG (splitmix64 + xoshiro256**), so generated data depends only on a seed. */
typedef struct rg_rng {
    uint64_t s[4];
} rg_rng;
void rg_rng_seed(rg_rng *r, uint64_t seed);
uint64_t rg_rng_next(rg_rng *r);
double rg_rng_uniform(rg_rng *r);              /* [0, 1) */
uint64_t rg_rng_below(rg_rng *r, uint64_t n);  /* [0, n) */

/* Levenshtein distance, for "did you mean" suggestions. */
int rg_edit_distance(const char *a, const char *b);

int rg_file_exists(const char *path);
int rg_mkdir_p(const char *path, rg_err *err);

#endif
