/* One point of the design space: the layout and schedule choices of a generated variant,
 * parsed from KEY=VAL lists, printed canonically, hashed, and checked for validity. */
#ifndef CFG_CONFIG_H
#define CFG_CONFIG_H

#include <stdint.h>
#include "common/util.h"

/* The key table; a test builds a second copy of this module with a file that adds keys. */
#ifndef CFG_KEYS_FILE
#define CFG_KEYS_FILE "codegen/config_keys.def"
#endif

typedef enum cfg_compact {
    CFG_COMPACT_OFF,      /* edgewise values materialized per edge */
    CFG_COMPACT_BSEARCH,  /* per unique (src, etype); edges find their row by binary search */
    CFG_COMPACT_DIRECT    /* per unique (src, etype); edges read a precomputed per-edge index */
} cfg_compact;

typedef enum cfg_softmax {
    CFG_SOFTMAX_TWOPASS,  /* edge_softmax normalises per edge, then a second edge pass aggregates */
    CFG_SOFTMAX_SINGLE    /* one edge pass aggregates unnormalised; one node-wise division (pass_softmax) */
} cfg_softmax;

typedef enum cfg_mma {
    CFG_MMA_OFF,   /* GEMM instances in float32 FMAs */
    CFG_MMA_TF32,  /* on tensor cores, operands rounded to tf32, float32 accumulation */
    CFG_MMA_BF16   /* on tensor cores, operands rounded to bf16, float32 accumulation */
} cfg_mma;

typedef enum cfg_order {
    CFG_ORDER_ORIG,    /* node ids as the dataset gives them */
    CFG_ORDER_DEGREE,  /* within each node type, by descending degree (in + out) */
    CFG_ORDER_BFS,     /* within each node type, breadth-first from the highest-degree node */
    CFG_ORDER_RCM,     /* within each node type, reverse Cuthill-McKee (small bandwidth) */
    CFG_ORDER_BLOCK    /* within each node type, by first touch in a BFS-ordered walk of the destinations */
} cfg_order;

typedef enum cfg_acc {
    CFG_ACC_SMEM,  /* traversal partial sums in a shared-memory scratch row per row group */
    CFG_ACC_REG,   /* in registers, each lane its own elements (codegen/emit_trav.c), float64 */
    CFG_ACC_REG32  /* ... float32 where the accumulated variable is stored float32 */
} cfg_acc;

typedef enum cfg_crsum {
    CFG_CRSUM_ATOMIC, /* sums into compact (src, etype) rows: one atomic per edge, in the traversal's own walk */
    CFG_CRSUM_RUN,    /* the traversal walks the (etype, src)-sorted edge order, summing per compact row */
    CFG_CRSUM_SPLIT,  /* ... and its other sums go to a second kernel in the traversal's own walk */
    CFG_CRSUM_DEFER   /* run, with the sums over destinations in a second, dst-sorted kernel that reads
                       * the per-edge values the first stores (lw_options.defer_dst_sums) */
} cfg_crsum;

typedef enum cfg_scalars {
    CFG_SCALARS_GROUP,      /* a traversal's per-edge scalars by the row group, through the shared scratch */
    CFG_SCALARS_LANE,       /* by each lane for an edge of its own, ahead of the group's loop */
    CFG_SCALARS_REPLICATED  /* by every lane of the group for the current edge, in registers */
} cfg_scalars;

/* rowpf: where each lane prefetches its own edge's gathered rows (codegen/emit_trav.c, plan_rowpf). */
enum { CFG_ROWPF_OFF, CFG_ROWPF_L2, CFG_ROWPF_L1 };

/* The kernel categories a per-kernel-capable key changes (CFG_SCHEDULE in config_keys.def). */
enum { CFG_ON_GEMM = 1, CFG_ON_TRAV = 2 };

/* Per-kernel overrides: INSTANCE.KEY=VAL gives one lowered instance (gemm_2, trav_6_bwd: every
 * kernel it launches) its own value of a per-kernel-capable key. A fixed array keeps cg_config a
 * plain value type (copied, stored in arrays); a plan has at most about 20 instances of which a
 * handful differ from the global schedule in a few keys. An override names its instance by an
 * interned id, so that the array costs 192 bytes a config: searches hold configs by the million. */
#define CFG_MAX_OVERRIDES 32
#define CFG_INSTANCE_MAX 16   /* bytes of an instance name with its NUL (lower.c's are at most ~13) */
typedef struct cfg_override {
    unsigned short inst;   /* the instance's name, interned by config.c (a per-process id, never stored) */
    short key;     /* index in the key table */
    short code;    /* the value as cfg_key.get returns it */
} cfg_override;

/* One member per key of codegen/config_keys.def, where each is described, then the overrides. */
typedef struct cg_config {
#define CFG_KEY(field, ctype, ...) ctype field;
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
    int noverrides;
    cfg_override overrides[CFG_MAX_OVERRIDES];   /* [noverrides], sorted by instance then key */
} cg_config;

/* Counts of the table's entries. */
enum {
    CFG_NKEYS = 0
#define CFG_KEY(...) + 1
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
};
enum {
    CFG_NFEATURES = 0
#define CFG_KEY(...)
#define CFG_FEATURE(...) + 1
#define CFG_SIM(...)
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
};

void cfg_default(cg_config *c);
/* Applies "key=val,key=val" on top of *c; "inst.key=val" sets an override (of a per-kernel-capable
 * key; an override equal to the global value is dropped, so a variant has one form). Unknown keys,
 * a key given twice, bad values, a structure key given per instance, or more than
 * CFG_MAX_OVERRIDES overrides give an error naming them. */
int cfg_parse(cg_config *c, const char *kv, rg_err *err);
/* Applies a flat JSON object as cfg_to_json writes it (the store's form of a variant). */
int cfg_parse_json(cg_config *c, const char *json, rg_err *err);
/* Canonical text, stable across versions (keys in table order; keys added later only when not
 * at their default; then the overrides, by instance then key in table order): caller frees. A
 * config without overrides prints exactly as before they existed, so stored hashes stay. */
char *cfg_to_string(const cg_config *c);
char *cfg_to_json(const cg_config *c);   /* the same keys as cfg_to_string */
uint64_t cfg_hash(const cg_config *c);
/* Rejects invalid combinations before anything is compiled, saying why: of the global values, and of
 * every overridden instance's effective config (named in the message). */
int cfg_validate(const cg_config *c, rg_err *err);
/* The config instance `inst` is built with: the global values with its overrides applied (none left). */
void cfg_for_instance(const cg_config *c, const char *inst, cg_config *out);
/* c's structure: its structure keys, every per-kernel-capable key at its default, no overrides.
 * Two configs of one structure launch the same kernels on the same variables (CFG_SCHEDULE). */
void cfg_structure(const cg_config *c, cg_config *out);
struct cfg_key;
/* Sets (or replaces) inst's override of key k; one equal to the global value removes it. Fails when
 * k is not per-kernel-capable, code is not one of its values, the name is not an instance name, or
 * the array is full. */
int cfg_set_override(cg_config *c, const char *inst, const struct cfg_key *k, int code, rg_err *err);
/* Whether `name` has the form of a lowered instance's name (letters, digits, '_'; shorter than
 * CFG_INSTANCE_MAX). */
int cfg_instance_name_ok(const char *name);
/* The instance name of an override of a config (one cfg_parse or cfg_set_override made). */
const char *cfg_override_instance(const cfg_override *o);
int cfg_block_threads(const cg_config *c);   /* GEMM threads per block */
/* Output columns per GEMM thread (register tiling across columns): 4, or 2 for tile 16. */
int cfg_col_coarsen(const cg_config *c);
/* The traversals' edge-loop unroll factor: 0 for auto (the compiler's), else N of `unroll=N`. */
int cfg_unroll_factor(const cg_config *c);
/* The arithmetic precision of the variant's GEMM operands: "fp32", or "tf32" / "bf16" on
 * tensor cores (mma), followed by "+bf16-store" under store=bf16 (features and messages stored
 * in bfloat16); what its validation tolerance and the store's precision column follow.
 * With per-instance mma overrides, the coarsest of the global value and theirs. */
const char *cfg_precision(const cg_config *c);

/* ---- The key table, for the modules that list keys (spaces, cost model, report, simulation) ---- */
typedef enum cfg_kind { CFG_BOOL, CFG_INT, CFG_ENUM } cfg_kind;
enum { CFG_IF_SET, CFG_ALWAYS };
#define CFG_VALUE_MAX 32

typedef struct cfg_key {
    const char *name, *alias;
    cfg_kind kind;
    const char *values;                 /* allowed values, space-separated (booleans: "off on") */
    const char *dflt;
    int printed;                        /* CFG_ALWAYS or CFG_IF_SET */
    int (*rule)(const cg_config *c, rg_err *err);
    const char *space_default, *space_full;   /* NULL: not a dimension of that built-in space */
    int (*get)(const cg_config *c);     /* the member as a code: the number, 0/1, or the enum's code */
    void (*set)(cg_config *c, int code);
} cfg_key;

const cfg_key *cfg_key_at(int i);   /* 0 <= i < CFG_NKEYS, in table order */
int cfg_key_index(const cfg_key *k);
/* The kernel categories a key may be overridden for (CFG_ON_GEMM | CFG_ON_TRAV), 0 for a structure key. */
unsigned cfg_key_kernels(const cfg_key *k);
const cfg_key *cfg_find_key(const char *name);   /* by name or alias; NULL when unknown */
/* The key's value in c as text, in buf. */
const char *cfg_value(const cfg_key *k, const cg_config *c, char buf[CFG_VALUE_MAX]);
/* Whether the canonical string and JSON carry the key (always, or when not at its default). */
int cfg_printed(const cfg_key *k, const cg_config *c);

/* Cost-model encoding: x[CFG_NFEATURES] one-hot bits, named as in the model file (of the global
 * values: overrides are not features). */
const char *cfg_feature_name(int i);
void cfg_features(const cg_config *c, double *x);
/* The simulated backend's time factors of the keys that declare some (1 when none apply; global values). */
void cfg_sim_factors(const cg_config *c, double *gemm, double *trav);

#endif
