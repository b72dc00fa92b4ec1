/* One point of the design space: the layout and schedule choices of a generated variant,
 * parsed from KEY=VAL lists, printed canonically, hashed, and checked for validity. */
#include "codegen/config.h"
#include "common/json.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int cfg_col_coarsen(const cg_config *c) { return c->tile >= 32 ? 4 : 2; }

int cfg_block_threads(const cg_config *c) { return c->tile * c->tile / (c->coarsen * cfg_col_coarsen(c)); }

const char *cfg_precision(const cg_config *c)
{
    /* store=bf16 adds "+bf16-store": every variant stored before the key keeps its name */
    static const char *const names[3][2] = {{"fp32", "fp32+bf16-store"}, {"tf32", "tf32+bf16-store"},
                                            {"bf16", "bf16+bf16-store"}};
    if ((unsigned)c->mma > CFG_MMA_BF16 || (unsigned)c->store_bf16 > 1)
        RG_DIE("mma code %d, store code %d", (int)c->mma, c->store_bf16);
    return names[c->mma][c->store_bf16];
}

/* ---- Validity rules across keys, named by the table ---- */

static int cfg_rule_block_threads(const cg_config *c, rg_err *err)
{
    if (cfg_block_threads(c) > 1024)
        return rg_errf(err, "invalid: tile=%d with coarsen=%d needs %d threads per block (limit 1024)",
                       c->tile, c->coarsen, cfg_block_threads(c));
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

/* ---- The table ---- */

/* Each key's member read and written as an int code. */
#define CFG_KEY(field, ctype, ...) \
    static int get_##field(const cg_config *c) { return (int)c->field; } \
    static void set_##field(cg_config *c, int code) { c->field = (ctype)code; }
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM

enum {
#define CFG_KEY(field, ...) KEY_##field,
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
};

static const cfg_key KEYS[CFG_NKEYS] = {
#define CFG_KEY(field, ctype, name, alias, kind, values, dflt, printed, rule, space_default, space_full) \
    {name, alias, kind, values, dflt, printed, rule, space_default, space_full, get_##field, set_##field},
#define CFG_FEATURE(...)
#define CFG_SIM(...)
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
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
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
    {-1, NULL, NULL, 1, 1}};

static const key_value SIMS[] = {
#define CFG_KEY(...)
#define CFG_FEATURE(...)
#define CFG_SIM(field, value, gemm, trav) {KEY_##field, value, NULL, gemm, trav},
#include CFG_KEYS_FILE
#undef CFG_KEY
#undef CFG_FEATURE
#undef CFG_SIM
    {-1, NULL, NULL, 1, 1}};

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

/* Whether a code is one of the key's values. */
static int code_allowed(const cfg_key *k, int code)
{
    char w[CFG_VALUE_MAX];
    for (int i = 0; word_at(values_of(k), i, w, sizeof w); i++)
        if ((k->kind == CFG_INT ? atoi(w) : i) == code) return 1;
    return 0;
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

int cfg_printed(const cfg_key *k, const cg_config *c)
{
    return k->printed == CFG_ALWAYS || k->get(c) != table_code(k, k->dflt);
}

void cfg_default(cg_config *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < CFG_NKEYS; i++) KEYS[i].set(c, table_code(&KEYS[i], KEYS[i].dflt));
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
    if (value_code(k, val, &code)) {
        rg_str s = {0};
        say_values(k, &s);
        rg_errf(err, "config: %s must be %s (got '%s')", key, s.s, val);
        rg_str_free(&s);
        return -1;
    }
    k->set(c, code);
    return 0;
}

int cfg_parse(cg_config *c, const char *kv, rg_err *err)
{
    char *copy = rg_xstrdup(kv), *save = NULL;
    const char *given[CFG_NKEYS] = {0};   /* how each key was spelled, once seen */
    int rc = 0;
    for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            rc = rg_errf(err, "config: expected KEY=VAL, got '%s'", item);
            break;
        }
        *eq = 0;
        rc = apply_key(c, item, eq + 1, given, err);
    }
    free(copy);
    return rc;
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

char *cfg_to_string(const cg_config *c)
{
    rg_str s = {0};
    char v[CFG_VALUE_MAX];
    for (int i = 0; i < CFG_NKEYS; i++)
        if (cfg_printed(&KEYS[i], c)) rg_str_printf(&s, "%s%s=%s", s.len ? "," : "", KEYS[i].name, cfg_value(&KEYS[i], c, v));
    return s.s ? s.s : rg_xstrdup("");
}

char *cfg_to_json(const cg_config *c)
{
    rgj_writer w = {0};
    char v[CFG_VALUE_MAX];
    rgj_begin_object(&w);
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = &KEYS[i];
        if (!cfg_printed(k, c)) continue;
        if (k->kind == CFG_BOOL) rgj_key(&w, k->name), rgj_bool(&w, k->get(c));
        else if (k->kind == CFG_INT) rgj_kv_int(&w, k->name, k->get(c));
        else rgj_kv_string(&w, k->name, cfg_value(k, c, v));
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

int cfg_validate(const cg_config *c, rg_err *err)
{
    /* a config set member by member may hold what no KEY=VAL could */
    for (int i = 0; i < CFG_NKEYS; i++)
        if (!code_allowed(&KEYS[i], KEYS[i].get(c)))
            return rg_errf(err, "invalid: %s has code %d, not one of its values (%s)", KEYS[i].name,
                           KEYS[i].get(c), values_of(&KEYS[i]));
    for (int i = 0; i < CFG_NKEYS; i++)
        if (KEYS[i].rule && KEYS[i].rule(c, err)) return -1;
    return 0;
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
