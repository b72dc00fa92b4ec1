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

/* The class of a failure, for callers that must tell failures apart without reading the
 * message (the measurement layer turns it into a stored status). */
typedef enum rg_err_class {
    RG_ERR_OTHER = 0,     /* bad input, files, anything not classified below */
    RG_ERR_COMPILE,       /* a kernel did not compile */
    RG_ERR_LAUNCH,        /* a launch or runtime call failed; the device is still usable */
    RG_ERR_FAULT,         /* a fault during execution: sticky, the process must restart */
    RG_ERR_WRONG_ANSWER,  /* results disagree with the reference */
    RG_ERR_TIMEOUT,
    RG_ERR_OOM,           /* device memory exhausted (or over the memory limit) */
    RG_ERR_NO_DEVICE,     /* no usable CUDA device */
    RG_ERR__COUNT
} rg_err_class;

/* A recoverable error: a one-line message for the user (bad input, missing file,
 * compile failure...). Functions that can fail take an rg_err* and return -1/NULL.
 * Zero-initialise with `= {0}`. */
typedef struct rg_err {
    char msg[2048];
    rg_err_class code;    /* RG_ERR_OTHER unless the failing call classified it */
    int cuda;             /* the cudaError_t behind it, 0 when none */
} rg_err;

/* Formats into err (if non-NULL) and returns -1, so callers can `return rg_errf(...)`.
 * The class is reset to RG_ERR_OTHER: a new message is a new error. */
int rg_errf(rg_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends "prefix: " to an existing message (the class and CUDA error stay). */
void rg_err_prefix(rg_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Classifies err (if non-NULL) after its message was written; returns -1. */
int rg_err_classify(rg_err *err, rg_err_class code, int cuda);
/* "other", "compile", "launch", "fault", "wrong_answer", "timeout", "oom", "no_device". */
const char *rg_err_class_name(rg_err_class c);

double rg_now(void);            /* monotonic seconds */
long rg_peak_rss_kb(void);      /* peak resident set size of this process (VmHWM) */
/* The number after the first line starting with key in a /proc file of "Key: N kB" lines
 * ("/proc/self/status", "VmRSS:"; "/proc/meminfo", "MemAvailable:"), or -1 when unreadable. */
long rg_proc_kb(const char *path, const char *key);

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

/* The median of x[0..n) (n > 0), sorting x in place (callers read the extremes at x[0], x[n-1]). */
double rg_median_sort(double *x, size_t n);

int rg_file_exists(const char *path);
int rg_mkdir_p(const char *path, rg_err *err);

#endif
