/* One point of the design space: the layout and schedule choices of a generated variant,
 * parsed from KEY=VAL lists, printed canonically, hashed, and checked for validity. */
#include "codegen/config.h"
#include "common/json.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int cfg_unroll_factor(const cg_config *c) { return c->unroll ? 1 << (c->unroll - 1) : 0; }

int cfg_col_coarsen(const cg_config *c) { return c->tile >= 32 ? 4 : 2; }

int cfg_block_threads(const cg_config *c) { return c->tile * c->tile / (c->coarsen * cfg_col_coarsen(c)); }

const char *cfg_precision(const cg_config *c)
{
    /* the mma codes run from the finest to the coarsest: a variant is as precise as its coarsest
     * kernel; store=bf16 adds "+bf16-store", so every variant stored before the key keeps its name */
    static const char *const names[3][2] = {{"fp32", "fp32+bf16-store"}, {"tf32", "tf32+bf16-store"},
                                            {"bf16", "bf16+bf16-store"}};
    cfg_mma mma = c->mma;
    for (int i = 0; i < c->noverrides; i++)
        if (!strcmp(cfg_key_at(c->overrides[i].key)->name, "mma") && c->overrides[i].code > (int)mma)
            mma = (cfg_mma)c->overrides[i].code;
    if ((unsigned)mma > CFG_MMA_BF16 || (unsigned)c->store_bf16 > 1)
        RG_DIE("mma code %d, store code %d", (int)mma, c->store_bf16);
    return names[mma][c->store_bf16];
}

/* ---- Validity rules across keys, named by the table ---- */

static int cfg_rule_block_threads(const cg_config *c, rg_err *err)
{
    if (cfg_block_threads(c) > 1024)
        return rg_errf(err, "invalid: tile=%d with coarsen=%d needs %d threads per block (limit 1024)",
                       c->tile, c->coarsen, cfg_block_threads(c));
    return 0;
}

/* The tiles at the ends of the axis. Tile 8's block (8 / coarsen rows x 4 column pairs) is under
 * a warp beyond coarsen 1: lanes of every warp idle, and at most 32 blocks per SM. Tile 16's
 * sub-warp blocks (coarsen 8, 16) stay valid: the committed stores measured them (never the
 * fastest of a problem in session6/9-sizes.db), and a rule must not orphan stored variants.
 * The tensor-core forms need tiles of whole 16 x 16 fragments, and stage the float32 result
 * tile (TILE x TILE + 4) through static shared memory: 66 KB at tile 128. */
static int cfg_rule_tile(const cg_config *c, rg_err *err)
{
    if (c->tile < 16 && cfg_block_threads(c) < 32)
        return rg_errf(err, "invalid: tile=%d with coarsen=%d gives %d threads per block, under a warp (idle lanes)",
                       c->tile, c->coarsen, cfg_block_threads(c));
    if (c->tile > 64 && cfg_block_threads(c) > 512 && cfg_block_threads(c) <= 1024)
        return rg_errf(err, "invalid: tile=%d with coarsen=%d gives %d threads per block: the weight-gradient outer "
                            "product then cannot launch (too many registers per thread on the H100)",
                       c->tile, c->coarsen, cfg_block_threads(c));
    if (c->mma != CFG_MMA_OFF && c->tile < 16)
        return rg_errf(err, "invalid: mma needs tile >= 16: a %d-wide tile is narrower than a 16 x 16 fragment",
                       c->tile);
    if (c->mma != CFG_MMA_OFF && c->tile > 64)
        return rg_errf(err, "invalid: mma stages the %d x %d float32 result tile through shared memory (%d KB), over "
                            "the 48 KB a kernel may declare",
                       c->tile, c->tile + 4, c->tile * (c->tile + 4) * 4 / 1024);
    return 0;
}

static int cfg_rule_gtiles(const cg_config *c, rg_err *err)
{
    if (c->gtiles > 1 && c->mma == CFG_MMA_OFF)
        return rg_errf(err, "invalid: gtiles=%d walks several row tiles per block in the tensor-core products; the "
                            "float32 forms (mma=off) compute one tile a block, so it would duplicate gtiles=1",
                       c->gtiles);
    return 0;
}

static int cfg_rule_gvec(const cg_config *c, rg_err *err)
{
    if (c->gvec && c->mma == CFG_MMA_OFF)
        return rg_errf(err, "invalid: gvec=on writes the tensor-core products' staged results 4 floats a thread; the "
                            "float32 forms (mma=off) write theirs from registers, so it would duplicate gvec=off");
    return 0;
}

static int cfg_rule_occ(const cg_config *c, rg_err *err)
{
    int threads = c->occ * 32;
    if (c->occ && (threads % c->tblock || threads / c->tblock > 32))
        return rg_errf(err, "invalid: occ=%d asks for %d threads an SM, which is not a whole number of tblock=%d blocks "
                            "(of at most 32 an SM)", c->occ, threads, c->tblock);
    return 0;
}

static int cfg_rule_w_regs(const cg_config *c, rg_err *err)
{
    if (c->w_regs && c->tile > 32)
        return rg_errf(err, "invalid: w=reg keeps a %d-wide W column per thread; only tiles up to 32 fit in registers",
                       c->tile);
    return 0;
}

static int cfg_rule_partial_agg(const cg_config *c, rg_err *err)
{
    if (c->node_centric && !c->partial_agg)
        return rg_errf(err, "invalid: pagg=off only changes edge-centric traversals (node-centric ones "
                            "aggregate in registers without atomics); it would duplicate pagg=on");
    return 0;
}

static int cfg_rule_acc(const cg_config *c, rg_err *err)
{
    if (c->acc != CFG_ACC_SMEM && !c->node_centric && !c->partial_agg)
        return rg_errf(err, "invalid: acc=%s moves the per-destination partial sums into registers; pagg=off "
                            "edge-centric traversals keep none (each edge adds atomically), so it would duplicate "
                            "acc=smem", c->acc == CFG_ACC_REG32 ? "reg32" : "reg");
    return 0;
}

static int cfg_rule_msg(const cg_config *c, rg_err *err)
{
    if (c->msg && c->compact != CFG_COMPACT_OFF)
        return rg_errf(err, "invalid: msg=trav computes each edge's message in the traversal; compact=%s keeps "
                            "a table of messages per unique (src, etype) row, so it needs compact=off",
                       c->compact == CFG_COMPACT_BSEARCH ? "bsearch" : "direct");
    return 0;
}

static int cfg_rule_nchunk(const cg_config *c, rg_err *err)
{
    if (c->nchunk != 64 && !c->node_centric)
        return rg_errf(err, "invalid: nchunk=%d splits the incoming edges of node-centric traversals; trav=edge "
                            "walks dst runs of fixed length instead, so it would duplicate nchunk=64",
                       c->nchunk);
    return 0;
}

static int cfg_rule_cdot(const cg_config *c, rg_err *err)
{
    if (c->cdot && c->compact == CFG_COMPACT_OFF)
        return rg_errf(err, "invalid: cdot=edge leaves compaction's dot products per edge; compact=off computes every "
                            "value per edge already, so it would duplicate cdot=table");
    return 0;
}

static int cfg_rule_rmax(const cg_config *c, rg_err *err)
{
    if (c->rmax && c->softmax != CFG_SOFTMAX_SINGLE)
        return rg_errf(err, "invalid: rmax=on keeps a running maximum in the single-pass softmax's aggregation; "
                            "softmax=twopass has none, so it needs softmax=single");
    if (c->rmax && !c->node_centric)
        return rg_errf(err, "invalid: rmax=on needs trav=node: an edge-centric aggregation adds each edge into its "
                            "destination's sums from many row groups at once, which cannot rescale one another's sums "
                            "when the maximum grows (a maximum first would be a second pass)");
    return 0;
}

/* ---- The table ---- */

/* Each key's member read and written as an int code. */
#define CFG_KEY(field, ctype, ...) \
    static int get_##field(const cg_config *c) { return (int)c->field; } \
    static void set_##field(cg_config *c, int code) { c->field = (ctype)code; }
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE

enum {
#define CFG_KEY(field, ...) KEY_##field,
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
};

static const cfg_key KEYS[CFG_NKEYS] = {
#define CFG_KEY(field, ctype, name, alias, kind, values, dflt, printed, rule, space_default, space_full) \
    {name, alias, kind, values, dflt, printed, rule, space_default, space_full, get_##field, set_##field},
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
};

/* One value of one key, for features and simulation factors; a last entry with key -1 ends each list. */
typedef struct key_value {
    int key;
    const char *value, *name;
    double gemm, trav;
} key_value;

static const key_value FEATURES[] = {
#define CFG_KEY(...)
#define CFG_FEATURE(field, value, name) {KEY_##field, value, name, 1, 1},
#define CFG_SIM(...)
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
    {-1, NULL, NULL, 1, 1}};

static const key_value SIMS[] = {
#define CFG_KEY(...)
#define CFG_FEATURE(...)
#define CFG_SIM(field, value, gemm, trav) {KEY_##field, value, NULL, gemm, trav},
#define CFG_SCHEDULE(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
    {-1, NULL, NULL, 1, 1}};

/* The per-kernel-capable keys and the kernel categories each changes. */
static const struct {
    int key;
    unsigned kernels;
} SCHEDULE[] = {
#define CFG_KEY(...)
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#define CFG_SCHEDULE(field, kernels) {KEY_##field, kernels},
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
#undef CFG_SCHEDULE
    {-1, 0}};

int cfg_key_index(const cfg_key *k)
{
    RG_ASSERT(k >= KEYS && k < KEYS + CFG_NKEYS);
    return (int)(k - KEYS);
}

unsigned cfg_key_kernels(const cfg_key *k)
{
    for (int i = 0; SCHEDULE[i].key >= 0; i++)
        if (SCHEDULE[i].key == cfg_key_index(k)) return SCHEDULE[i].kernels;
    return 0;
}

const cfg_key *cfg_key_at(int i)
{
    RG_ASSERT(i >= 0 && i < CFG_NKEYS);
    return &KEYS[i];
}

const cfg_key *cfg_find_key(const char *name)
{
    for (int i = 0; i < CFG_NKEYS; i++)
        if (!strcmp(name, KEYS[i].name) || (KEYS[i].alias && !strcmp(name, KEYS[i].alias))) return &KEYS[i];
    return NULL;
}

/* ---- Values: codes and their text ---- */

static const char *values_of(const cfg_key *k) { return k->values ? k->values : "off on"; }

/* Word i of a space-separated list into out; 0 when there is no such word. */
static int word_at(const char *list, int i, char *out, size_t cap)
{
    for (const char *p = list;; i--) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (n == 0) return 0;
        if (i == 0) {
            RG_ASSERT(n < cap);
            memcpy(out, p, n);
            out[n] = 0;
            return 1;
        }
        p += n;
    }
}

/* Each key's allowed codes, read from the table's text once per process: cfg_validate checks every
 * key of every point a space enumerates. 16 a key at most, as a space dimension (SP_MAX_VALS). */
enum { MAX_KEY_VALUES = 16 };
static struct { int n, code[MAX_KEY_VALUES]; } allowed_codes[CFG_NKEYS];
static pthread_once_t allowed_once = PTHREAD_ONCE_INIT;

static void read_allowed_codes(void)
{
    for (int k = 0; k < CFG_NKEYS; k++) {
        char w[CFG_VALUE_MAX];
        for (int i = 0; word_at(values_of(&KEYS[k]), i, w, sizeof w); i++) {
            RG_ASSERT(i < MAX_KEY_VALUES);
            allowed_codes[k].code[allowed_codes[k].n++] = KEYS[k].kind == CFG_INT ? atoi(w) : i;
        }
    }
}

/* Whether a code is one of the key's values (allowed_codes read: code_allowed). */
static int code_listed(const cfg_key *k, int code)
{
    int i = (int)(k - KEYS);
    RG_ASSERT(i >= 0 && i < CFG_NKEYS);   /* a key of the table, not a copy */
    for (int j = 0; j < allowed_codes[i].n; j++)
        if (allowed_codes[i].code[j] == code) return 1;
    return 0;
}

static int code_allowed(const cfg_key *k, int code)
{
    pthread_once(&allowed_once, read_allowed_codes);
    return code_listed(k, code);
}

/* The code of a value's text, or -1 when the key does not allow it. */
static int value_code(const cfg_key *k, const char *v, int *code)
{
    char w[CFG_VALUE_MAX];
    if (k->kind == CFG_BOOL) {
        if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true")) return *code = 1, 0;
        if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false")) return *code = 0, 0;
        return -1;
    }
    if (k->kind == CFG_ENUM) {
        for (int i = 0; word_at(k->values, i, w, sizeof w); i++)
            if (!strcmp(v, w)) return *code = i, 0;
        return -1;
    }
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end) return -1;
    if (x < INT_MIN || x > INT_MAX || !code_allowed(k, (int)x)) return -1;
    return *code = (int)x, 0;
}

/* A code the table itself names (default, feature, simulation): a bad one is a programmer error. */
static int table_code(const cfg_key *k, const char *v)
{
    int code;
    if (value_code(k, v, &code)) RG_DIE("config_keys.def: '%s' is not a value of key %s", v, k->name);
    return code;
}

const char *cfg_value(const cfg_key *k, const cg_config *c, char buf[CFG_VALUE_MAX])
{
    int code = k->get(c);
    if (k->kind == CFG_INT) snprintf(buf, CFG_VALUE_MAX, "%d", code);
    else if (!word_at(values_of(k), code, buf, CFG_VALUE_MAX)) RG_DIE("config key %s has no value %d", k->name, code);
    return buf;
}

/* The defaults from the table's text, once per process: enumerating a space copies them per point,
 * and every canonical string compares with them. */
static cg_config default_config;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void make_default_config(void)
{
    memset(&default_config, 0, sizeof default_config);
    for (int i = 0; i < CFG_NKEYS; i++) KEYS[i].set(&default_config, table_code(&KEYS[i], KEYS[i].dflt));
}

int cfg_printed(const cfg_key *k, const cg_config *c)
{
    pthread_once(&default_once, make_default_config);
    return k->printed == CFG_ALWAYS || k->get(c) != k->get(&default_config);
}

void cfg_default(cg_config *c)
{
    pthread_once(&default_once, make_default_config);
    *c = default_config;
}

/* ---- Parsing ---- */

/* "a, b or c" from a value list. */
static void say_values(const cfg_key *k, rg_str *out)
{
    if (k->kind == CFG_BOOL) {
        rg_str_puts(out, "on or off");
        return;
    }
    char w[CFG_VALUE_MAX];
    int n = 0;
    while (word_at(k->values, n, w, sizeof w)) n++;
    for (int i = 0; i < n; i++) {
        word_at(k->values, i, w, sizeof w);
        rg_str_printf(out, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", w);
    }
}

static int unknown_key(const char *key, rg_err *err)
{
    rg_str known = {0};
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; i < CFG_NKEYS; i++) {
        rg_str_printf(&known, "%s%s", i ? ", " : "", KEYS[i].name);
        const char *names[2] = {KEYS[i].name, KEYS[i].alias};
        for (int j = 0; j < 2 && names[j]; j++) {
            int d = rg_edit_distance(key, names[j]);
            /* a one-letter key is one edit from every other one-letter key: no suggestion there */
            if (d < best_d && d < (int)strlen(key)) best_d = d, best = names[j];
        }
    }
    if (best) rg_errf(err, "config: unknown key '%s' (did you mean '%s'? known: %s)", key, best, known.s);
    else rg_errf(err, "config: unknown key '%s' (known: %s)", key, known.s);
    rg_str_free(&known);
    return -1;
}

/* The code of val for key k (named `spelled` in the message, with its instance when an override). */
static int parse_value(const cfg_key *k, const char *spelled, const char *val, int *code, rg_err *err)
{
    if (!value_code(k, val, code)) return 0;
    rg_str s = {0};
    say_values(k, &s);
    rg_errf(err, "config: %s must be %s (got '%s')", spelled, s.s, val);
    rg_str_free(&s);
    return -1;
}

static int apply_key(cg_config *c, const char *key, const char *val, const char **given, rg_err *err)
{
    const cfg_key *k = cfg_find_key(key);
    if (!k) return unknown_key(key, err);
    int i = (int)(k - KEYS), code;
    if (given[i]) {
        if (!strcmp(given[i], key)) return rg_errf(err, "config: key '%s' given twice", key);
        return rg_errf(err, "config: key '%s' given twice (once as '%s')", key, given[i]);
    }
    given[i] = key;
    if (parse_value(k, key, val, &code, err)) return -1;
    k->set(c, code);
    return 0;
}

/* "tile, coarsen, ...": the per-kernel-capable keys. */
static void say_schedule_keys(rg_str *out)
{
    for (int i = 0; SCHEDULE[i].key >= 0; i++) rg_str_printf(out, "%s%s", i ? ", " : "", KEYS[SCHEDULE[i].key].name);
}

static int put_override(cg_config *c, const char *inst, const cfg_key *k, int code, rg_err *err);

/* INST.KEY=VAL. `seen` lists "\ninst.key\n" per override of this parse (given twice is an error,
 * also under the key's other spelling). */
static int apply_override(cg_config *c, const char *inst, const char *key, const char *val, rg_str *seen, rg_err *err)
{
    if (!cfg_instance_name_ok(inst))
        return rg_errf(err, "config: '%s.%s': '%s' is not an instance name (letters, digits and '_', at most %d; "
                            "explore ir --lowered lists a plan's instances)", inst, key, inst, CFG_INSTANCE_MAX - 1);
    const cfg_key *k = cfg_find_key(key);
    if (!k) return unknown_key(key, err);
    if (!cfg_key_kernels(k)) {
        rg_str keys = {0};
        say_schedule_keys(&keys);
        rg_errf(err, "config: %s.%s: %s is not per-kernel (it decides which kernels the plan has or what they "
                     "store, codegen/config_keys.def says why); per-kernel keys: %s", inst, key, k->name, keys.s);
        rg_str_free(&keys);
        return -1;
    }
    char *id = rg_xasprintf("\n%s.%s\n", inst, k->name);
    int twice = seen->s && strstr(seen->s, id);
    rg_str_puts(seen, id + (seen->len ? 1 : 0));
    free(id);
    if (twice) return rg_errf(err, "config: %s.%s given twice", inst, k->name);
    char *spelled = rg_xasprintf("%s.%s", inst, key);
    int code, rc = parse_value(k, spelled, val, &code, err);
    free(spelled);
    return rc ? rc : put_override(c, inst, k, code, err);
}

/* Overrides equal to the global value change nothing: dropped, so a variant has one canonical form
 * whichever order its KEY=VAL items came in. */
static void drop_redundant_overrides(cg_config *c)
{
    int n = 0;
    for (int i = 0; i < c->noverrides; i++)
        if (KEYS[c->overrides[i].key].get(c) != c->overrides[i].code) c->overrides[n++] = c->overrides[i];
    c->noverrides = n;
}

int cfg_parse(cg_config *c, const char *kv, rg_err *err)
{
    char *copy = rg_xstrdup(kv), *save = NULL;
    const char *given[CFG_NKEYS] = {0};   /* how each key was spelled, once seen */
    rg_str seen = {0};
    int rc = 0;
    for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            rc = rg_errf(err, "config: expected KEY=VAL, got '%s'", item);
            break;
        }
        *eq = 0;
        char *dot = strchr(item, '.');
        if (dot) {
            *dot = 0;
            rc = apply_override(c, item, dot + 1, eq + 1, &seen, err);
        } else {
            rc = apply_key(c, item, eq + 1, given, err);
        }
    }
    rg_str_free(&seen);
    free(copy);
    if (!rc) drop_redundant_overrides(c);
    return rc;
}

/* ---- Per-kernel overrides ---- */

int cfg_instance_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= CFG_INSTANCE_MAX || !isalpha((unsigned char)name[0])) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_') return 0;
    return 1;
}

/* Override instance names, interned: an override holds a 2-byte id instead of a 16-byte name. Names
 * are never removed, and a lowering has a few dozen, so the table fills only from input that names
 * thousands of instances (an error then). */
#define INSTANCE_NAMES_MAX 4096
static char instance_names[INSTANCE_NAMES_MAX][CFG_INSTANCE_MAX];
static int ninstance_names;
static pthread_mutex_t instance_lock = PTHREAD_MUTEX_INITIALIZER;

/* The id of a well-formed name, added when new; -1 when the table is full. */
static int intern_instance(const char *name)
{
    pthread_mutex_lock(&instance_lock);
    int id = 0;
    while (id < ninstance_names && strcmp(instance_names[id], name)) id++;
    if (id == ninstance_names) {
        if (id < INSTANCE_NAMES_MAX) snprintf(instance_names[ninstance_names++], CFG_INSTANCE_MAX, "%s", name);
        else id = -1;
    }
    pthread_mutex_unlock(&instance_lock);
    return id;
}

/* The name of an interned id; NULL for one never given out (a config set member by member). */
static const char *instance_name(unsigned id)
{
    pthread_mutex_lock(&instance_lock);
    const char *name = id < (unsigned)ninstance_names ? instance_names[id] : NULL;
    pthread_mutex_unlock(&instance_lock);
    return name;
}

const char *cfg_override_instance(const cfg_override *o)
{
    const char *name = instance_name(o->inst);
    RG_ASSERT(name);
    return name;
}

static int override_cmp(const cfg_override *a, const char *inst, int key)
{
    int d = strcmp(cfg_override_instance(a), inst);
    return d ? d : a->key - key;
}

/* Stores the override in its sorted place, also when it equals the global value: while a list is
 * parsed the global value may still change ("gemm_2.tile=32,tile=64"). */
static int put_override(cg_config *c, const char *inst, const cfg_key *k, int code, rg_err *err)
{
    if (!cfg_instance_name_ok(inst)) return rg_errf(err, "config: '%s' is not an instance name", inst);
    if (!cfg_key_kernels(k)) return rg_errf(err, "config: %s.%s: %s is not per-kernel", inst, k->name, k->name);
    if (!code_allowed(k, code)) return rg_errf(err, "config: %s.%s: %d is not one of its values", inst, k->name, code);
    int key = cfg_key_index(k), at = 0;
    while (at < c->noverrides && override_cmp(&c->overrides[at], inst, key) < 0) at++;
    int found = at < c->noverrides && override_cmp(&c->overrides[at], inst, key) == 0;
    if (!found) {
        if (c->noverrides == CFG_MAX_OVERRIDES)
            return rg_errf(err, "config: more than %d per-kernel overrides (CFG_MAX_OVERRIDES in codegen/config.h)",
                           CFG_MAX_OVERRIDES);
        int id = intern_instance(inst);
        if (id < 0)
            return rg_errf(err, "config: %s.%s: more than %d distinct instance names in one process", inst, k->name,
                           INSTANCE_NAMES_MAX);
        memmove(&c->overrides[at + 1], &c->overrides[at], (size_t)(c->noverrides++ - at) * sizeof *c->overrides);
        c->overrides[at].inst = (unsigned short)id;
        c->overrides[at].key = (short)key;
    }
    c->overrides[at].code = (short)code;
    return 0;
}

int cfg_set_override(cg_config *c, const char *inst, const cfg_key *k, int code, rg_err *err)
{
    if (put_override(c, inst, k, code, err)) return -1;
    drop_redundant_overrides(c);
    return 0;
}

void cfg_for_instance(const cg_config *c, const char *inst, cg_config *out)
{
    *out = *c;
    out->noverrides = 0;
    for (int i = 0; i < c->noverrides; i++)
        if (!strcmp(cfg_override_instance(&c->overrides[i]), inst)) KEYS[c->overrides[i].key].set(out, c->overrides[i].code);
}

void cfg_structure(const cg_config *c, cg_config *out)
{
    cg_config d;
    cfg_default(&d);
    *out = *c;
    out->noverrides = 0;
    for (int i = 0; i < CFG_NKEYS; i++)
        if (cfg_key_kernels(&KEYS[i])) KEYS[i].set(out, KEYS[i].get(&d));
}

/* A JSON string without escapes (config names and values never need them) into out. */
static const char *json_word(const char *p, rg_str *out)
{
    if (*p != '"') return NULL;
    const char *end = strpbrk(p + 1, "\"\\,=");
    if (!end || *end != '"') return NULL;
    rg_str_printf(out, "%.*s", (int)(end - p - 1), p + 1);
    return end + 1;
}

/* A number, true or false, as the KEY=VAL value cfg_parse reads. */
static const char *json_scalar(const char *p, rg_str *out)
{
    if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        int on = *p == 't';
        rg_str_puts(out, on ? "on" : "off");
        return p + (on ? 4 : 5);
    }
    size_t n = strspn(p, "-+0123456789");
    if (n == 0) return NULL;
    rg_str_printf(out, "%.*s", (int)n, p);
    return p + n;
}

static const char *skip_ws(const char *p)
{
    while (isspace((unsigned char)*p)) p++;
    return p;
}

/* The flat object as a KEY=VAL list in kv: NULL, or where the text stops being such an object. */
static const char *json_to_kv(const char *p, rg_str *kv)
{
    p = skip_ws(p);
    if (*p++ != '{') return p - 1;
    p = skip_ws(p);
    for (int first = 1; *p != '}'; first = 0) {
        if (!first && *p++ != ',') return p - 1;
        if (kv->len) rg_str_putc(kv, ',');
        const char *q = json_word(skip_ws(p), kv);
        if (!q) return skip_ws(p);
        p = skip_ws(q);
        if (*p++ != ':') return p - 1;
        rg_str_putc(kv, '=');
        p = skip_ws(p);
        q = *p == '"' ? json_word(p, kv) : json_scalar(p, kv);
        if (!q) return p;
        p = skip_ws(q);
    }
    p = skip_ws(p + 1);
    return *p ? p : NULL;
}

int cfg_parse_json(cg_config *c, const char *json, rg_err *err)
{
    rg_str kv = {0};
    const char *bad = json_to_kv(json, &kv);
    int rc = bad ? rg_errf(err, "config: not a flat JSON object of config keys at '%.40s' in %.200s", bad, json)
                 : cfg_parse(c, kv.s ? kv.s : "", err);
    rg_str_free(&kv);
    return rc;
}

/* ---- Printing ---- */

/* Override i's value as text in buf; NULL when it equals the global value (never printed). */
static const char *override_value(const cg_config *c, int i, char buf[CFG_VALUE_MAX])
{
    const cfg_override *o = &c->overrides[i];
    const cfg_key *k = &KEYS[o->key];
    if (k->get(c) == o->code) return NULL;
    cg_config one = *c;
    k->set(&one, o->code);
    return cfg_value(k, &one, buf);
}

char *cfg_to_string(const cg_config *c)
{
    rg_str s = {0};
    char v[CFG_VALUE_MAX];
    for (int i = 0; i < CFG_NKEYS; i++) {   /* puts, not printf: searches print millions of these */
        if (!cfg_printed(&KEYS[i], c)) continue;
        if (s.len) rg_str_putc(&s, ',');
        rg_str_puts(&s, KEYS[i].name);
        rg_str_putc(&s, '=');
        rg_str_puts(&s, cfg_value(&KEYS[i], c, v));
    }
    for (int i = 0; i < c->noverrides; i++)
        if (override_value(c, i, v))
            rg_str_printf(&s, "%s%s.%s=%s", s.len ? "," : "", cfg_override_instance(&c->overrides[i]), KEYS[c->overrides[i].key].name, v);
    return s.s ? s.s : rg_xstrdup("");
}

/* "key": value in the JSON form of key k (booleans, numbers, names). */
static void json_value(rgj_writer *w, const char *name, const cfg_key *k, int code, const char *text)
{
    if (k->kind == CFG_BOOL) rgj_key(w, name), rgj_bool(w, code);
    else if (k->kind == CFG_INT) rgj_kv_int(w, name, code);
    else rgj_kv_string(w, name, text);
}

char *cfg_to_json(const cg_config *c)
{
    rgj_writer w = {0};
    char v[CFG_VALUE_MAX];
    rgj_begin_object(&w);
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = &KEYS[i];
        if (cfg_printed(k, c)) json_value(&w, k->name, k, k->get(c), cfg_value(k, c, v));
    }
    /* overrides as "inst.key" members: the object stays flat, as cfg_parse_json reads it */
    for (int i = 0; i < c->noverrides; i++) {
        if (!override_value(c, i, v)) continue;
        const cfg_key *k = &KEYS[c->overrides[i].key];
        char name[CFG_INSTANCE_MAX + 40];
        snprintf(name, sizeof name, "%s.%s", cfg_override_instance(&c->overrides[i]), k->name);
        json_value(&w, name, k, c->overrides[i].code, v);
    }
    rgj_end_object(&w);
    return rgj_finish(&w);
}

uint64_t cfg_hash(const cg_config *c)
{
    char *s = cfg_to_string(c);
    uint64_t h = rg_fnv1a64(s, strlen(s), RG_FNV_SEED);
    free(s);
    return h;
}

/* ---- Validity, features, simulation ---- */

/* Each override well formed, and each overridden instance's effective config valid by the rules. */
static int validate_overrides(const cg_config *c, rg_err *err)
{
    if (c->noverrides < 0 || c->noverrides > CFG_MAX_OVERRIDES)
        return rg_errf(err, "invalid: %d overrides (0 to %d)", c->noverrides, CFG_MAX_OVERRIDES);
    for (int i = 0; i < c->noverrides; i++) {
        const cfg_override *o = &c->overrides[i];
        const char *inst = instance_name(o->inst);
        if (o->key < 0 || o->key >= CFG_NKEYS || !cfg_key_kernels(&KEYS[o->key]) || !inst ||
            !code_allowed(&KEYS[o->key], o->code))
            return rg_errf(err, "invalid: override %d (instance id %u, key %d, code %d) is not a per-kernel key's value",
                           i, o->inst, o->key, o->code);
        if (i > 0 && o->inst == c->overrides[i - 1].inst) continue;   /* instance checked already */
        cg_config one;
        cfg_for_instance(c, inst, &one);
        for (int k = 0; k < CFG_NKEYS; k++)
            if (KEYS[k].rule && KEYS[k].rule(&one, err)) {
                rg_err_prefix(err, "%s", inst);
                return -1;
            }
    }
    return 0;
}

int cfg_validate(const cg_config *c, rg_err *err)
{
    /* a config set member by member may hold what no KEY=VAL could */
    pthread_once(&allowed_once, read_allowed_codes);
    for (int i = 0; i < CFG_NKEYS; i++)
        if (!code_listed(&KEYS[i], KEYS[i].get(c)))
            return rg_errf(err, "invalid: %s has code %d, not one of its values (%s)", KEYS[i].name,
                           KEYS[i].get(c), values_of(&KEYS[i]));
    for (int i = 0; i < CFG_NKEYS; i++)
        if (KEYS[i].rule && KEYS[i].rule(c, err)) return -1;
    return validate_overrides(c, err);
}

const char *cfg_feature_name(int i)
{
    RG_ASSERT(i >= 0 && i < CFG_NFEATURES);
    return FEATURES[i].name;
}

void cfg_features(const cg_config *c, double *x)
{
    for (int i = 0; i < CFG_NFEATURES; i++) {
        const cfg_key *k = &KEYS[FEATURES[i].key];
        x[i] = k->get(c) == table_code(k, FEATURES[i].value);
    }
}

void cfg_sim_factors(const cg_config *c, double *gemm, double *trav)
{
    *gemm = *trav = 1;
    for (const key_value *s = SIMS; s->key >= 0; s++) {
        const cfg_key *k = &KEYS[s->key];
        if (k->get(c) == table_code(k, s->value)) *gemm *= s->gemm, *trav *= s->trav;
    }
}
