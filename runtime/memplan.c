/* Device memory planner: named tensors allocated once through an allocator interface, with
 * current/peak accounting and a byte limit that turns into an OOM status, never a crash. */
#include "runtime/memplan.h"
#include "runtime/rt.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct mp_tensor {
    char *name;
    size_t bytes;
    void *ptr;
    int live;
} mp_tensor;

struct mp_plan {
    mp_allocator allocator;
    size_t limit, current, peak;
    mp_tensor *tensors;
    int count, cap;
};

/* ---- CUDA allocator --------------------------------------------------------------- */

static mp_status cuda_alloc(void *ctx, size_t bytes, void **ptr, rg_err *err)
{
    (void)ctx;
    int r = krt_alloc(ptr, bytes, err);
    return r == 0 ? MP_OK : r == KRT_OOM ? MP_OOM : MP_FAIL;
}

static void cuda_release(void *ctx, void *ptr, size_t bytes)
{
    (void)ctx;
    (void)bytes;
    krt_free(ptr);
}

mp_allocator mp_cuda_allocator(void)
{
    mp_allocator a = {NULL, cuda_alloc, cuda_release};
    return a;
}

/* ---- Plan --------------------------------------------------------------------------- */

mp_plan *mp_new(mp_allocator allocator, size_t limit)
{
    RG_ASSERT(allocator.alloc && allocator.release);
    mp_plan *p = rg_xcalloc(1, sizeof *p);
    p->allocator = allocator;
    p->limit = limit;
    return p;
}

void mp_destroy(mp_plan *p)
{
    if (!p) return;
    for (int i = 0; i < p->count; i++) {
        mp_release(p, i);
        free(p->tensors[i].name);
    }
    free(p->tensors);
    free(p);
}

static mp_tensor *tensor(const mp_plan *p, int id)
{
    RG_ASSERT(p && id >= 0 && id < p->count);
    return &p->tensors[id];
}

int mp_find(const mp_plan *p, const char *name)
{
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->tensors[i].name, name) == 0) return i;
    return -1;
}

int mp_declare(mp_plan *p, const char *name, size_t bytes, rg_err *err)
{
    RG_ASSERT(p && name);
    if (!*name) return rg_errf(err, "memory plan: a tensor needs a name");
    int id = mp_find(p, name);
    if (id >= 0) {
        if (p->tensors[id].bytes == bytes) return id;
        return rg_errf(err, "memory plan: tensor '%s' declared with %zu bytes, then with %zu",
                       name, p->tensors[id].bytes, bytes);
    }
    if (p->count == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->tensors = rg_xrealloc(p->tensors, (size_t)p->cap * sizeof *p->tensors);
    }
    mp_tensor *t = &p->tensors[p->count];
    memset(t, 0, sizeof *t);
    t->name = rg_xstrdup(name);
    t->bytes = bytes;
    return p->count++;
}

int mp_count(const mp_plan *p)
{
    return p->count;
}

const char *mp_name(const mp_plan *p, int id)
{
    return tensor(p, id)->name;
}

size_t mp_bytes(const mp_plan *p, int id)
{
    return tensor(p, id)->bytes;
}

static mp_status over_limit(const mp_plan *p, const mp_tensor *t, rg_err *err)
{
    char need[32], used[32], lim[32];
    rg_errf(err, "out of device memory: tensor '%s' needs %s (%zu bytes) but %s are in use "
            "and the limit is %s (%zu bytes)", t->name, mp_format_bytes(t->bytes, need),
            t->bytes, mp_format_bytes(p->current, used), mp_format_bytes(p->limit, lim), p->limit);
    return MP_OOM;
}

mp_status mp_alloc(mp_plan *p, int id, rg_err *err)
{
    mp_tensor *t = tensor(p, id);
    if (t->live) return MP_OK;
    /* Written as a subtraction so a huge request cannot wrap the sum around. */
    if (p->limit && (t->bytes > p->limit || p->current > p->limit - t->bytes))
        return over_limit(p, t, err);
    void *ptr = NULL;
    if (t->bytes > 0) {
        rg_err aerr = {0};
        mp_status s = p->allocator.alloc(p->allocator.ctx, t->bytes, &ptr, &aerr);
        if (s != MP_OK) {
            char need[32], used[32];
            rg_errf(err, "%s: allocating tensor '%s' (%s, %zu bytes) with %s in use failed: %s",
                    s == MP_OOM ? "out of device memory" : "memory plan", t->name,
                    mp_format_bytes(t->bytes, need), t->bytes, mp_format_bytes(p->current, used),
                    aerr.msg[0] ? aerr.msg : "allocator error");
            return s == MP_OOM ? MP_OOM : MP_FAIL;
        }
    }
    t->ptr = ptr;
    t->live = 1;
    p->current += t->bytes;
    if (p->current > p->peak) p->peak = p->current;
    return MP_OK;
}

mp_status mp_alloc_all(mp_plan *p, rg_err *err)
{
    for (int i = 0; i < p->count; i++) {
        mp_status s = mp_alloc(p, i, err);
        if (s != MP_OK) return s;
    }
    return MP_OK;
}

mp_status mp_request(mp_plan *p, const char *name, size_t bytes, int *id_out, rg_err *err)
{
    int id = mp_declare(p, name, bytes, err);
    if (id_out) *id_out = id;
    if (id < 0) return MP_FAIL;
    return mp_alloc(p, id, err);
}

void *mp_ptr(const mp_plan *p, int id)
{
    return tensor(p, id)->ptr;
}

int mp_is_live(const mp_plan *p, int id)
{
    return tensor(p, id)->live;
}

void mp_release(mp_plan *p, int id)
{
    mp_tensor *t = tensor(p, id);
    if (!t->live) return;
    if (t->ptr) p->allocator.release(p->allocator.ctx, t->ptr, t->bytes);
    p->current -= t->bytes;
    t->ptr = NULL;
    t->live = 0;
}

size_t mp_current_bytes(const mp_plan *p)
{
    return p->current;
}

size_t mp_peak_bytes(const mp_plan *p)
{
    return p->peak;
}

size_t mp_limit_bytes(const mp_plan *p)
{
    return p->limit;
}

size_t mp_declared_bytes(const mp_plan *p)
{
    size_t sum = 0;
    for (int i = 0; i < p->count; i++) sum += p->tensors[i].bytes;
    return sum;
}

/* ---- Sizes ---------------------------------------------------------------------------- */

typedef struct byte_unit {
    const char *name;
    double factor;
} byte_unit;

static const byte_unit units[] = {
    {"", 1}, {"b", 1},
    {"k", 1e3}, {"kb", 1e3}, {"m", 1e6}, {"mb", 1e6},
    {"g", 1e9}, {"gb", 1e9}, {"t", 1e12}, {"tb", 1e12},
    {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
};

static int unit_factor(const char *u, size_t len, double *factor)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == len && strncasecmp(units[i].name, u, len) == 0) {
            *factor = units[i].factor;
            return 0;
        }
    return -1;
}

static int bad_size(const char *text, const char *why, rg_err *err)
{
    return rg_errf(err, "invalid byte count '%s': %s", text, why);
}

int mp_parse_bytes(const char *text, size_t *out, rg_err *err)
{
    RG_ASSERT(text && out);
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    /* strtod would also accept "nan", "inf" and hex; a byte count starts with a digit. */
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
        return bad_size(text, "expected a number such as 24e9, 24GB or 512MiB", err);
    char *end;
    double v = strtod(p, &end);
    if (strspn(p, "0123456789.eE+-") < (size_t)(end - p))   /* strtod also reads hex */
        return bad_size(text, "expected a decimal number", err);
    while (isspace((unsigned char)*end)) end++;
    const char *u = end;
    while (isalpha((unsigned char)*end)) end++;
    size_t ulen = (size_t)(end - u);
    while (isspace((unsigned char)*end)) end++;
    double factor;
    if (*end || unit_factor(u, ulen, &factor))
        return bad_size(text, "unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", err);
    v *= factor;
    if (!isfinite(v) || v >= 18446744073709551616.0 || v > (double)SIZE_MAX)
        return bad_size(text, "too large", err);
    double whole = nearbyint(v);
    /* Decimal fractions such as 1.1KB come out of binary floating point slightly off. */
    if (fabs(v - whole) > 1e-6 * (whole > 1 ? whole : 1))
        return bad_size(text, "not a whole number of bytes", err);
    *out = (size_t)whole;
    return 0;
}

const char *mp_format_bytes(size_t bytes, char buf[32])
{
    static const char *names[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    double v = (double)bytes;
    int i = 0;
    while (v >= 1000.0 && i < 6) {
        v /= 1000.0;
        i++;
    }
    if (i == 0) snprintf(buf, 32, "%zu B", bytes);
    else snprintf(buf, 32, "%.2f %s", v, names[i]);
    return buf;
}
