/* Covering a design space's kernels and keys without visiting every point, for the tests that
 * check a property per generated kernel or per config (compiles, helpers called, round trips). */
#ifndef KC_KCOVER_H
#define KC_KCOVER_H

#include <stdint.h>
#include "codegen/config.h"
#include "codegen/kplan.h"
#include "codegen/pipeline.h"
#include "explorer/space.h"

/* A set of 64-bit hashes (open addressing; 0 is stored like any other value). */
typedef struct kc_set {
    int n, cap;
    uint64_t *slot;
    unsigned char *used;
} kc_set;

/* 1 when h was not in the set (it is now), 0 when it was. */
int kc_set_add(kc_set *s, uint64_t h);
int kc_set_has(const kc_set *s, uint64_t h);
void kc_set_free(kc_set *s);

/* A kernel's source up to what cannot change NVRTC's verdict on it: comments and the kernel's own
 * name. Kernels of different instances that share a template and schedule differ only there. */
uint64_t kc_kernel_class(const kp_kernel *k);
/* kc_kernel_class, with the values of #define lines and of __launch_bounds__ left out too:
 * kernels that differ only in their schedule macros share it. */
uint64_t kc_kernel_shape(const kp_kernel *k);

/* The two schedule classes of a config: its structure keys (no CFG_SCHEDULE) with its GEMM
 * schedule keys, and with its traversal schedule keys. Within one structure a GEMM kernel's
 * text depends only on the GEMM keys and a traversal's only on the traversal keys (the premise
 * of per-kernel configs, docs/architecture.md), so the points that bring a new class give every
 * kernel of the space; the tests that use this check the premise on a sample of the others. */
void kc_schedule_classes(const cg_config *c, uint64_t cls[2]);

/* What kc_space_kernels did. */
typedef struct kc_walk {
    int points;         /* valid points of the space */
    int built;          /* points built because they bring a new schedule class */
    int inapplicable;   /* of those, PL_INAPPLICABLE to the problem */
    int kernels;        /* distinct kernel sources given to fn */
    int sampled;        /* other points built to check the premise */
} kc_walk;

/* Every distinct kernel source of the valid points of a built-in space (or space file) for a
 * problem, each given once to fn: builds the points that bring a new schedule class, then
 * `sample` others drawn with a fixed seed, and fails the test when one of those has a kernel fn
 * was not given. A point that fails to build fails the test, unless it is PL_INAPPLICABLE and
 * inapplicable_ok (NULL: any) accepts it. */
void kc_space_kernels(const char *space, const pl_problem *p, int sample,
                      int (*inapplicable_ok)(const pl_problem *p, const cg_config *c, const rg_err *why),
                      void (*fn)(const kp_kernel *k, void *ctx), void *ctx, kc_walk *out);

/* Indices (in sp_enumerate's order) of points of the space covering every pair of values of
 * every two keys (so every value of every key), then `extra` more drawn with a fixed seed.
 * Returns how many; caller frees *idx. */
int kc_pairwise(const sp_space *sp, int extra, uint64_t seed, long **idx);

#endif
