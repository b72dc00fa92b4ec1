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

/* The two schedule classes of a config: its structure keys (no CFG_SCHEDULE; but relabel, which
 * changes the graph, not the kernels) with its GEMM schedule keys, and with its traversal schedule
 * keys. Within one structure a GEMM kernel's
 * text depends only on the GEMM keys and a traversal's only on the traversal keys (the premise
 * of per-kernel configs, docs/architecture.md), so the points that bring a new class give every
 * kernel of the space; the tests that use this check the premise on a sample of the others. */
void kc_schedule_classes(const cg_config *c, uint64_t cls[2]);

/* What NVRTC sees of a kernel, as items in a set: with KC_LINES each line of its source, with
 * KC_LINE_PAIRS each pair of consecutive lines, and with KC_NO_LITERALS every numeric literal read
 * as "#" (comments and the kernel's own name are always left out). Returns how many of the items
 * are not in `seen`, and adds them when add != 0. */
enum { KC_LINES = 1, KC_LINE_PAIRS = 2, KC_NO_LITERALS = 4 };
int kc_text_items(kc_set *seen, const kp_kernel *k, unsigned what, int add);

/* The valid points of a built-in space (or space file) with their schedule classes, enumerated
 * once per binary: sp_enumerate builds every config from strings (seconds for the default space,
 * more under ASan) and its result is the same for every problem, and a walk visits most points. The
 * last space asked for is kept (reachable until exit, so LeakSanitizer does not count it: about 300 MB
 * for the default space); the test fails when it does not load. */
typedef struct kc_space {
    char spec[256];
    sp_space sp;
    int n, nvalid;          /* points, valid or not, in sp_enumerate's order; valid ones */
    int *slot;              /* [n]: the point's index among the valid ones, or -1 */
    int *point;             /* [nvalid]: the valid point's index in sp_enumerate's order */
    uint64_t (*cls)[2];     /* [nvalid]: kc_schedule_classes */
    uint64_t *structure;    /* [nvalid]: a hash of the structure keys (those of cfg_structure) */
} kc_space;
const kc_space *kc_space_get(const char *space);
/* Valid point v's config (points keep no config: the default space's would be 1.5 GB). */
cg_config kc_config(const kc_space *s, int v);

/* Whether pl_build takes valid point v's structure (the point with every schedule key at its default)
 * for p on graph g (NULL: nominal sizes), decided once per structure: verdicts kept in ok and bad. A
 * structure it refuses is refused at every schedule (kc_space_kernels checks it on a sample). */
int kc_structure_applies(const kc_space *s, const pl_problem *p, const hg_graph *g, int v, kc_set *ok, kc_set *bad);

/* 1 when RGNN_TEST_COVER=pairwise (`make asan`): the covering walks take the pairwise points. */
int kc_cover_pairwise(void);

/* What a covering walk did. */
typedef struct kc_walk {
    int points;         /* valid points of the space */
    int built;          /* points built because they bring a new schedule class (or pair) */
    int inapplicable;   /* of those, PL_INAPPLICABLE to the problem */
    int kernels;        /* distinct kernel sources given to fn */
    int sampled;        /* other points built to check the premise */
    int refused;        /* points left out unbuilt: their structure or schedule does not apply */
} kc_walk;

/* built[v] of a point the walk left out unbuilt, as one whose structure or schedule does not apply. */
enum { KC_REFUSED = 2 };

/* A covering walk over the valid points of a space for one problem: each point it picks (v, its
 * index among the valid ones) goes to visit, which builds it and returns 0, or 1 when the point does
 * not apply to the problem (PL_INAPPLICABLE). It picks the points that bring a schedule class no
 * applicable point brought yet, which gives every kernel of the space (within a structure a kernel's
 * text depends only on its own schedule keys, the premise kc_space_kernels checks). With
 * RGNN_TEST_COVER=pairwise it picks, in a fixed-seed random order, the points that bring a pair of
 * values of two keys no applicable point had, leaving out those pl_schedule_applies refuses for p and
 * giving a pair up after 32 inapplicable points had it: under ASan a walk is several times slower,
 * the plain `make test` walks every class already (and sees every refusal), and what ASan looks for
 * are the memory errors of the code paths, which every value of every key next to every value of
 * every other key reaches. built[v] is set for each point given to visit (*out is reset;
 * out->built and out->inapplicable count them); classes gets those of the applicable ones. */
void kc_cover_walk(const kc_space *s, const pl_problem *p, int (*visit)(int v, void *ctx), void *ctx,
                   kc_set *classes, unsigned char *built, kc_walk *out);

/* kc_cover_walk's pairwise walk whatever RGNN_TEST_COVER says: `make gpu-test` validates these points
 * of a space too large to run whole, so that its sample covers every pair of values that valid points
 * applicable to the problem have, but a pair given up after PAIR_TRIES inapplicable points held it (a
 * covering array over the raw product leaves most of its points to the rules and the model: 5 to 10
 * valid variants per problem for the default space). */
void kc_pairs_walk(const kc_space *s, const pl_problem *p, int (*visit)(int v, void *ctx), void *ctx,
                   kc_set *classes, unsigned char *built, kc_walk *out);

/* Every distinct kernel source of the points kc_cover_walk picks in a built-in space (or space file)
 * for a problem, each given once to fn; then `sample` other points, drawn with a fixed seed among
 * those both of whose classes an applicable point brought, and the test fails when one of those has
 * a kernel fn was not given (the premise). A point that fails to build fails the test, unless it is
 * PL_INAPPLICABLE and inapplicable_ok (NULL: any) accepts it. */
void kc_space_kernels(const char *space, const pl_problem *p, int sample,
                      int (*inapplicable_ok)(const pl_problem *p, const cg_config *c, const rg_err *why),
                      void (*fn)(const kp_kernel *k, void *ctx), void *ctx, kc_walk *out);

/* The value index of each key at point i of the space (sp_config_at's order: the last key fastest). */
void kc_point_values(const sp_space *sp, long i, int *val);

/* Indices (in sp_enumerate's order) of points of the space covering every pair of values of
 * every two keys (so every value of every key), then `extra` more drawn with a fixed seed.
 * Returns how many; caller frees *idx. */
int kc_pairwise(const sp_space *sp, int extra, uint64_t seed, long **idx);

#endif
