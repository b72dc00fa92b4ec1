/* Device memory planner: a program declares named tensors, each is allocated once through a
 * pluggable allocator, and current/peak bytes are tracked against an optional limit. */
#ifndef MP_MEMPLAN_H
#define MP_MEMPLAN_H

#include <stddef.h>
#include "common/util.h"

typedef enum mp_status {
    MP_FAIL = -1,   /* an error other than memory exhaustion (err says which) */
    MP_OK = 0,
    MP_OOM = 1      /* over the limit or the allocator ran out (err names tensor and sizes) */
} mp_status;

/* Where bytes come from: the CUDA allocator in production, a fake one in CPU tests. */
typedef struct mp_allocator {
    void *ctx;
    /* MP_OK with *ptr set, MP_OOM when memory is exhausted, MP_FAIL otherwise (err set). */
    mp_status (*alloc)(void *ctx, size_t bytes, void **ptr, rg_err *err);
    void (*release)(void *ctx, void *ptr, size_t bytes);
} mp_allocator;

/* cudaMalloc/cudaFree through runtime/rt (fails with "no CUDA device: ..." without one). */
mp_allocator mp_cuda_allocator(void);

typedef struct mp_plan mp_plan;

/* limit: the most bytes live at once, 0 for none (e.g. 24e9 to mimic an RTX 3090). */
mp_plan *mp_new(mp_allocator allocator, size_t limit);
/* Releases every live tensor and the plan. */
void mp_destroy(mp_plan *p);

/* Declares a tensor; returns its id. Declaring an existing name with the same size returns
 * the same id; with another size, or an empty name, it is an error (-1). */
int mp_declare(mp_plan *p, const char *name, size_t bytes, rg_err *err);
int mp_find(const mp_plan *p, const char *name);   /* id or -1 */
int mp_count(const mp_plan *p);
const char *mp_name(const mp_plan *p, int id);
size_t mp_bytes(const mp_plan *p, int id);

/* Allocates tensor `id` unless it is live already (then a no-op). A zero-byte tensor is
 * live with a NULL pointer. Exceeding the limit or an allocator OOM gives MP_OOM, the
 * accounting unchanged. */
mp_status mp_alloc(mp_plan *p, int id, rg_err *err);
/* Allocates every declared tensor, in declaration order; stops at the first failure. */
mp_status mp_alloc_all(mp_plan *p, rg_err *err);
/* Declare + allocate in one call; *id_out (may be NULL) receives the id. */
mp_status mp_request(mp_plan *p, const char *name, size_t bytes, int *id_out, rg_err *err);
void *mp_ptr(const mp_plan *p, int id);              /* NULL unless live */
int mp_is_live(const mp_plan *p, int id);
/* Frees a live tensor early (a temporary no longer needed); it may be allocated again. */
void mp_release(mp_plan *p, int id);

size_t mp_current_bytes(const mp_plan *p);
size_t mp_peak_bytes(const mp_plan *p);
size_t mp_limit_bytes(const mp_plan *p);
size_t mp_declared_bytes(const mp_plan *p);   /* sum over declared tensors */

/* Parses a byte count: "24e9", "24GB", "512MiB", "1.5 KiB", "100", case-insensitive.
 * K/M/G/T[B] are powers of 1000, KiB/MiB/GiB/TiB powers of 1024. The result must be a
 * whole number of bytes that fits in size_t. */
int mp_parse_bytes(const char *text, size_t *out, rg_err *err);
/* "23.84 GB" style (decimal units) into buf; returns buf. */
const char *mp_format_bytes(size_t bytes, char buf[32]);

#endif
