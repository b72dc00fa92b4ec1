/* One point of the design space: the layout and schedule choices of a generated variant,
 * parsed from KEY=VAL lists, printed canonically, hashed, and checked for validity. */
#include "codegen/config.h"
#include "common/json.h"

#include <stdlib.h>
#include <string.h>

void cfg_default(cg_config *c)
{
    /* The papers' best fixed strategy (compaction + reordering); edge-centric traversal with
     * dst-sorted partial aggregation, the fastest form on the H100 in docs/perf-notes.md. */
    c->compact = CFG_COMPACT_DIRECT;
    c->reorder = 1;
    c->tile = 32;
    c->coarsen = 2;
    c->launch_bounds = 0;
    c->w_regs = 0;
    c->node_centric = 0;
    c->partial_agg = 1;
}

const char *cfg_compact_name(cfg_compact m)
{
    switch (m) {
    case CFG_COMPACT_OFF: return "off";
    case CFG_COMPACT_BSEARCH: return "bsearch";
    case CFG_COMPACT_DIRECT: return "direct";
    }
    RG_DIE("bad compact mode %d", (int)m);
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true")) { *out = 1; return 0; }
    if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false")) { *out = 0; return 0; }
    return -1;
}

static int parse_int_in(const char *v, const int *allowed, int n, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end) return -1;
    for (int i = 0; i < n; i++)
        if (allowed[i] == x) { *out = (int)x; return 0; }
    return -1;
}

static int apply_key(cg_config *c, const char *key, const char *val, rg_err *err)
{
    static const int tiles[] = {16, 32, 64}, coarsens[] = {1, 2, 4};
    int ok = -1;
    if (!strcmp(key, "compact")) {
        for (int m = CFG_COMPACT_OFF; m <= CFG_COMPACT_DIRECT; m++)
            if (!strcmp(val, cfg_compact_name((cfg_compact)m))) { c->compact = (cfg_compact)m; ok = 0; }
        if (ok) return rg_errf(err, "config: compact must be off, bsearch or direct (got '%s')", val);
    } else if (!strcmp(key, "reorder")) ok = parse_bool(val, &c->reorder);
    else if (!strcmp(key, "tile")) {
        if (parse_int_in(val, tiles, 3, &c->tile)) return rg_errf(err, "config: tile must be 16, 32 or 64 (got '%s')", val);
        ok = 0;
    } else if (!strcmp(key, "coarsen")) {
        if (parse_int_in(val, coarsens, 3, &c->coarsen)) return rg_errf(err, "config: coarsen must be 1, 2 or 4 (got '%s')", val);
        ok = 0;
    } else if (!strcmp(key, "lb") || !strcmp(key, "launch_bounds")) ok = parse_bool(val, &c->launch_bounds);
    else if (!strcmp(key, "w")) {
        if (!strcmp(val, "shmem")) { c->w_regs = 0; ok = 0; }
        else if (!strcmp(val, "reg")) { c->w_regs = 1; ok = 0; }
        else return rg_errf(err, "config: w must be shmem or reg (got '%s')", val);
    } else if (!strcmp(key, "trav")) {
        if (!strcmp(val, "node")) { c->node_centric = 1; ok = 0; }
        else if (!strcmp(val, "edge")) { c->node_centric = 0; ok = 0; }
        else return rg_errf(err, "config: trav must be node or edge (got '%s')", val);
    } else if (!strcmp(key, "pagg")) ok = parse_bool(val, &c->partial_agg);
    else
        return rg_errf(err, "config: unknown key '%s' (known: compact, reorder, tile, coarsen, lb, w, trav, pagg)", key);
    if (ok) return rg_errf(err, "config: %s must be on or off (got '%s')", key, val);
    return 0;
}

int cfg_parse(cg_config *c, const char *kv, rg_err *err)
{
    char *copy = rg_xstrdup(kv), *save = NULL;
    int rc = 0;
    for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            rc = rg_errf(err, "config: expected KEY=VAL, got '%s'", item);
            break;
        }
        *eq = 0;
        rc = apply_key(c, item, eq + 1, err);
    }
    free(copy);
    return rc;
}

char *cfg_to_string(const cg_config *c)
{
    return rg_xasprintf("compact=%s,reorder=%s,tile=%d,coarsen=%d,lb=%s,w=%s,trav=%s,pagg=%s",
                        cfg_compact_name(c->compact), c->reorder ? "on" : "off", c->tile, c->coarsen,
                        c->launch_bounds ? "on" : "off", c->w_regs ? "reg" : "shmem",
                        c->node_centric ? "node" : "edge", c->partial_agg ? "on" : "off");
}

char *cfg_to_json(const cg_config *c)
{
    rgj_writer w = {0};
    rgj_begin_object(&w);
    rgj_kv_string(&w, "compact", cfg_compact_name(c->compact));
    rgj_key(&w, "reorder"); rgj_bool(&w, c->reorder);
    rgj_kv_int(&w, "tile", c->tile);
    rgj_kv_int(&w, "coarsen", c->coarsen);
    rgj_key(&w, "lb"); rgj_bool(&w, c->launch_bounds);
    rgj_kv_string(&w, "w", c->w_regs ? "reg" : "shmem");
    rgj_kv_string(&w, "trav", c->node_centric ? "node" : "edge");
    rgj_key(&w, "pagg"); rgj_bool(&w, c->partial_agg);
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

int cfg_col_coarsen(const cg_config *c) { return c->tile >= 32 ? 4 : 2; }

int cfg_block_threads(const cg_config *c) { return c->tile * c->tile / (c->coarsen * cfg_col_coarsen(c)); }

int cfg_validate(const cg_config *c, rg_err *err)
{
    if (cfg_block_threads(c) > 1024)
        return rg_errf(err, "invalid: tile=%d with coarsen=%d needs %d threads per block (limit 1024)",
                       c->tile, c->coarsen, cfg_block_threads(c));
    if (c->w_regs && c->tile > 32)
        return rg_errf(err, "invalid: w=reg keeps a %d-wide W column per thread; only tiles up to 32 fit in registers",
                       c->tile);
    if (c->node_centric && !c->partial_agg)
        return rg_errf(err, "invalid: pagg=off only changes edge-centric traversals (node-centric ones "
                            "aggregate in registers without atomics); it would duplicate pagg=on");
    return 0;
}
