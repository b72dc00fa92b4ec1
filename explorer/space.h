/* The design space as data: named value lists per config key (built-in "default" and
 * "full", or a file), enumerated into configs, with invalid points pruned and explained. */
#ifndef SP_SPACE_H
#define SP_SPACE_H

#include "codegen/config.h"

/* Room for every global key and CFG_MAX_OVERRIDES per-instance keys (a per-kernel combined config
 * written as a one-point space file). */
#define SP_MAX_DIMS 64
#define SP_MAX_POINTS 16000000   /* what sp_enumerate takes: 16 bytes each, validated in ~7 s */
#define SP_MAX_VALS 16   /* at least any key's value count (nchunk has 9; config.c holds each key to 16) */

typedef struct sp_dim {
    char key[32];
    int nvals;
    char vals[SP_MAX_VALS][16];
    /* a global key's table entry and its values' codes (sp_load fills them), so that sp_config_at
     * sets codes instead of parsing text; NULL for per-instance keys and hand-built dimensions */
    const cfg_key *k;
    int code[SP_MAX_VALS];
} sp_dim;

typedef struct sp_space {
    char name[256];
    int ndims;
    sp_dim dims[SP_MAX_DIMS];
} sp_space;

/* Point k of a space: its config is sp_config_at(space, k), rebuilt where it is needed, so that a
 * point is 16 bytes and a space of ten million points enumerates in a few seconds. */
typedef struct sp_point {
    int valid;
    const char *reason;   /* why it is invalid (sp_intern's copy, shared by the points with the same
                           * reason); NULL when valid */
} sp_point;

/* "default", "full" (both from the key table, codegen/config_keys.def), or a file of lines
 * `key: v1 v2 ...` (# comments). Keys and values are checked against the config parser, with
 * file:line in the message. */
int sp_load(const char *spec, sp_space *out, rg_err *err);
/* Every combination, in a stable order (last key fastest), validated. Caller frees *points. */
int sp_enumerate(const sp_space *s, sp_point **points, int *n, rg_err *err);
/* The configs of the valid points, in order (when cfgs is not NULL), and each one's point number (when
 * index is not NULL); returns their count. Caller frees both. */
int sp_valid_configs(const sp_space *s, const sp_point *points, int n, cg_config **cfgs, int **index);
/* A process-lifetime copy of a reason line, one per distinct text (points share it). */
const char *sp_intern(const char *reason);
int sp_count_valid(const sp_point *p, int n);
/* The config of point k (0 <= k < the product of the value counts) in sp_enumerate's order. */
void sp_config_at(const sp_space *s, long k, cg_config *cfg);
/* The space as text (what `--space FILE` accepts). */
void sp_print(const sp_space *s, FILE *f);

#endif
