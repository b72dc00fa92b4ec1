/* Tests of the config key table: every variant hash stored on the H100 is still what the sweep
 * computes, the canonical forms are unchanged, and bad KEY=VAL lists get one clear message. */
#include "tests/testutil.h"
#include "codegen/config.h"
#include "explorer/space.h"
#include "explorer/sweep.h"
#include "results/store.h"
#include "tests/kcover.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define LEGACY_DEFAULT "compact=direct,reorder=on,tile=32,coarsen=2,lb=off,w=shmem,trav=edge,pagg=on"

/* Recomputes the hash of every generated variant in a store as the sweep does (xs_variant_hash),
 * from its stored JSON parsed, printed canonically and parsed again; returns how many it checked. */
static int check_store_hashes(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT hash, config, model, task, dim_in, dim_out, heads FROM variants"
                                        " WHERE json_extract(config, '$.baseline') IS NULL ORDER BY id",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *hash = (const char *)sqlite3_column_text(st, 0), *json = (const char *)sqlite3_column_text(st, 1);
        cg_config from_json, cfg;
        rg_err err;
        cfg_default(&from_json);
        if (cfg_parse_json(&from_json, json, &err)) fail_msg("%s: %s", path, err.msg);
        char *canon = cfg_to_string(&from_json);
        cfg_default(&cfg);
        if (cfg_parse(&cfg, canon, &err)) fail_msg("%s: %s: %s", path, canon, err.msg);
        xb_problem p = {.dim_in = sqlite3_column_int(st, 4), .dim_out = sqlite3_column_int(st, 5),
                        .heads = sqlite3_column_int(st, 6)};
        snprintf(p.model, sizeof p.model, "%s", (const char *)sqlite3_column_text(st, 2));
        snprintf(p.task, sizeof p.task, "%s", (const char *)sqlite3_column_text(st, 3));
        char hex[17];
        rs_hash_hex(xs_variant_hash(&cfg, &p), hex);
        if (strcmp(hex, hash)) fail_msg("%s: variant %s (%s, %s %s) now hashes to %s", path, hash, canon, p.model, p.task, hex);
        free(canon);
        n++;
    }
    assert_int_equal(rc, SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void test_stored_variant_hashes(void **state)
{
    (void)state;
    const char *stores[] = {"results/h100/results.db", "results/h100/unseen.db"};
    int checked = 0;
    for (int i = 0; i < 2; i++) {
        if (!rg_file_exists(stores[i])) {
            printf("note: %s not present\n", stores[i]);
            continue;
        }
        int n = check_store_hashes(stores[i]);
        printf("%s: %d variant hashes recomputed\n", stores[i], n);
        assert_true(n > 0);
        checked += n;
    }
    if (!checked) {
        printf("skip: results/h100/results.db not present\n");
        skip();
    }
}

static void test_canonical_forms(void **state)
{
    (void)state;
    cg_config c;
    cfg_default(&c);
    char *s = cfg_to_string(&c), *j = cfg_to_json(&c);
    assert_string_equal(s, LEGACY_DEFAULT);
    assert_string_equal(j, "{\"compact\":\"direct\",\"reorder\":true,\"tile\":32,\"coarsen\":2,\"lb\":false,"
                           "\"w\":\"shmem\",\"trav\":\"edge\",\"pagg\":true}");
    free(s);
    free(j);
    rg_err err;
    assert_int_equal(cfg_parse(&c, "compact=bsearch,reorder=off,tile=16,coarsen=4,lb=on,w=reg,trav=node", &err), 0);
    s = cfg_to_string(&c);
    assert_string_equal(s, "compact=bsearch,reorder=off,tile=16,coarsen=4,lb=on,w=reg,trav=node,pagg=on");
    free(s);
}

/* The spellings that parse today keep parsing to the same config. */
static void test_aliases(void **state)
{
    (void)state;
    cg_config a, b;
    rg_err err;
    cfg_default(&a);
    cfg_default(&b);
    assert_int_equal(cfg_parse(&a, "launch_bounds=on,reorder=false,pagg=0,tile=016", &err), 0);
    assert_int_equal(cfg_parse(&b, "lb=true,reorder=0,pagg=off,tile=16", &err), 0);
    assert_true(cfg_hash(&a) == cfg_hash(&b));
    char *s = cfg_to_string(&a);
    assert_string_equal(s, "compact=direct,reorder=off,tile=16,coarsen=2,lb=on,w=shmem,trav=edge,pagg=off");
    free(s);
}

static void expect_parse_error(const char *kv, const char *want)
{
    cg_config c;
    rg_err err = {0};
    cfg_default(&c);
    if (cfg_parse(&c, kv, &err) == 0) fail_msg("'%s' parsed", kv);
    if (!strstr(err.msg, want)) fail_msg("'%s': error \"%s\" lacks \"%s\"", kv, err.msg, want);
}

/* mma is printed only when set (the default keeps every stored hash), round-trips through the
 * string and JSON forms, names the precision, and refuses other values. */
static void test_mma_key(void **state)
{
    (void)state;
    cg_config c, back;
    rg_err err;
    cfg_default(&c);
    uint64_t h_default = cfg_hash(&c);
    assert_string_equal(cfg_precision(&c), "fp32");
    assert_int_equal(cfg_parse(&c, "mma=off", &err), 0);
    assert_true(cfg_hash(&c) == h_default);
    static const char *const vals[] = {"tf32", "bf16"};
    for (int i = 0; i < 2; i++) {
        cfg_default(&c);
        char *kv = rg_xasprintf("mma=%s", vals[i]);
        assert_int_equal(cfg_parse(&c, kv, &err), 0);
        assert_int_equal(cfg_validate(&c, &err), 0);
        assert_string_equal(cfg_precision(&c), vals[i]);
        assert_true(cfg_hash(&c) != h_default);
        char *s = cfg_to_string(&c), *j = cfg_to_json(&c), *want = rg_xasprintf(LEGACY_DEFAULT ",%s", kv);
        assert_string_equal(s, want);
        cfg_default(&back);
        assert_int_equal(cfg_parse_json(&back, j, &err), 0);
        assert_int_equal(back.mma, c.mma);
        assert_true(cfg_hash(&back) == cfg_hash(&c));
        free(s), free(j), free(want), free(kv);
    }
    expect_parse_error("mma=fp16", "config: mma must be off, tf32 or bf16 (got 'fp16')");
}

/* acc: smem (the default) keeps every stored hash; reg prints, parses back (also from JSON and per
 * instance) and is invalid where no partial sums exist (pagg=off edge-centric traversals). */
static void test_acc_key(void **state)
{
    (void)state;
    cg_config c, back;
    rg_err err;
    cfg_default(&c);
    uint64_t h_default = cfg_hash(&c);
    assert_int_equal(cfg_parse(&c, "acc=smem", &err), 0);
    assert_true(cfg_hash(&c) == h_default);
    assert_int_equal(cfg_parse(&c, "acc=reg", &err), 0);
    assert_int_equal(cfg_validate(&c, &err), 0);
    assert_true(cfg_hash(&c) != h_default);
    char *s = cfg_to_string(&c), *j = cfg_to_json(&c);
    assert_string_equal(s, LEGACY_DEFAULT ",acc=reg");
    cfg_default(&back);
    assert_int_equal(cfg_parse_json(&back, j, &err), 0);
    assert_int_equal(back.acc, CFG_ACC_REG);
    assert_true(cfg_hash(&back) == cfg_hash(&c));
    free(s), free(j);
    expect_parse_error("acc=regf", "config: acc must be smem, reg or reg32 (got 'regf')");
    /* reg32: its own point, refused where reg is */
    assert_int_equal(cfg_parse(&c, "acc=reg32", &err), 0);
    assert_true(cfg_hash(&c) != h_default && cfg_hash(&c) != cfg_hash(&back));
    s = cfg_to_string(&c);
    assert_string_equal(s, LEGACY_DEFAULT ",acc=reg32");
    free(s);
    /* both register forms are refused where edge-centric traversals keep no partial sums */
    static const char *const reg_forms[] = {"reg32", "reg"};
    for (int i = 0; i < 2; i++) {
        char kv[32], why[128];
        snprintf(kv, sizeof kv, "acc=%s,pagg=off", reg_forms[i]);
        snprintf(why, sizeof why, "invalid: acc=%s moves the per-destination partial sums into registers; pagg=off",
                 reg_forms[i]);
        assert_int_equal(cfg_parse(&c, kv, &err), 0);
        assert_int_equal(cfg_validate(&c, &err), -1);
        assert_non_null(strstr(err.msg, why));
    }
    /* a schedule key: one traversal instance may have it, and the rule sees that instance's pagg */
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "trav_3.acc=reg", &err), 0);
    assert_int_equal(cfg_validate(&c, &err), 0);
    s = cfg_to_string(&c);
    assert_string_equal(s, LEGACY_DEFAULT ",trav_3.acc=reg");
    free(s);
    assert_int_equal(cfg_parse(&c, "trav_3.pagg=off", &err), 0);
    assert_int_equal(cfg_validate(&c, &err), -1);
    assert_non_null(strstr(err.msg, "trav_3"));
    assert_non_null(strstr(err.msg, "acc=reg"));
}

static void test_key_given_twice(void **state)
{
    (void)state;
    cg_config c;
    rg_err err;
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "tile=16,tile=32", &err), -1);
    assert_string_equal(err.msg, "config: key 'tile' given twice");
    expect_parse_error("tile=16,coarsen=1,tile=16", "config: key 'tile' given twice");
    expect_parse_error("lb=on,launch_bounds=off", "config: key 'launch_bounds' given twice (once as 'lb')");
    /* once per list: a second list may set the key again */
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "tile=16", &err), 0);
    assert_int_equal(cfg_parse(&c, "tile=64", &err), 0);
    assert_int_equal(c.tile, 64);
}

static void test_unknown_key_suggestion(void **state)
{
    (void)state;
    expect_parse_error("tiel=16", "config: unknown key 'tiel' (did you mean 'tile'? known: compact, reorder, tile, "
                                   "coarsen, gtiles, lb, w, trav, pagg, softmax, mma, part, vec, lanes, tblock, relabel");
    expect_parse_error("launch_bound=on", "did you mean 'launch_bounds'?");
    cg_config c;
    rg_err err;
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "colour=blue", &err), -1);
    /* every key of the table, in table order (keys added later come after these) */
    assert_non_null(strstr(err.msg, "config: unknown key 'colour' (known: compact, reorder, tile, coarsen, gtiles, lb, w, trav, pagg, softmax, mma, part, vec, lanes, tblock, relabel"));
    expect_parse_error("x=1", "unknown key 'x' (known:");
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_parse_error("tile=48", "config: tile must be 8, 16, 32, 64 or 128 (got '48')");
    expect_parse_error("compact=yes", "config: compact must be off, bsearch or direct (got 'yes')");
    expect_parse_error("w=foo", "config: w must be shmem or reg (got 'foo')");
    expect_parse_error("launch_bounds=2", "config: launch_bounds must be on or off (got '2')");
    expect_parse_error("tile=", "tile must be");
    expect_parse_error("tile", "expected KEY=VAL, got 'tile'");
}

/* Per-kernel overrides print after the global keys, sorted by instance then key (table order),
 * whatever order they were given in; one equal to the global value is dropped; JSON round-trips. */
static void test_override_canonical_forms(void **state)
{
    (void)state;
    cg_config a, b, plain;
    rg_err err;
    cfg_default(&a);
    cfg_default(&b);
    cfg_default(&plain);
    assert_int_equal(cfg_parse(&a, "tile=64,coarsen=4,gemm_2.tile=32,trav_6.lanes=16,gemm_2.lb=on", &err), 0);
    assert_int_equal(cfg_parse(&b, "trav_6.lanes=16,gemm_2.launch_bounds=true,coarsen=4,gemm_2.tile=32,tile=64", &err), 0);
    assert_int_equal(cfg_parse(&plain, "tile=64,coarsen=4", &err), 0);
    assert_int_equal(cfg_validate(&a, &err), 0);
    char *s = cfg_to_string(&a), *t = cfg_to_string(&b);
    assert_string_equal(s, "compact=direct,reorder=on,tile=64,coarsen=4,lb=off,w=shmem,trav=edge,pagg=on,"
                           "gemm_2.tile=32,gemm_2.lb=on,trav_6.lanes=16");
    assert_string_equal(s, t);
    assert_true(cfg_hash(&a) == cfg_hash(&b));
    assert_true(cfg_hash(&a) != cfg_hash(&plain));
    free(s), free(t);

    /* JSON: flat "inst.key" members of the key's JSON type */
    char *j = cfg_to_json(&a);
    assert_non_null(strstr(j, ",\"pagg\":true,\"gemm_2.tile\":32,\"gemm_2.lb\":true,\"trav_6.lanes\":16}"));
    cg_config back;
    cfg_default(&back);
    assert_int_equal(cfg_parse_json(&back, j, &err), 0);
    assert_true(cfg_hash(&back) == cfg_hash(&a));
    assert_int_equal(back.noverrides, 3);
    free(j);

    /* the instance's effective config */
    cg_config one;
    cfg_for_instance(&a, "gemm_2", &one);
    assert_int_equal(one.tile, 32);
    assert_int_equal(one.launch_bounds, 1);
    assert_int_equal(one.lanes, 32);
    assert_int_equal(one.noverrides, 0);
    cfg_for_instance(&a, "trav_6", &one);
    assert_int_equal(one.tile, 64);
    assert_int_equal(one.lanes, 16);
    cfg_for_instance(&a, "gemm_9", &one);
    assert_true(cfg_hash(&one) == cfg_hash(&plain));

    /* an override equal to the global value is no override, in either order */
    static const char *const same[] = {"tile=64,coarsen=4,gemm_2.tile=64", "gemm_2.tile=64,tile=64,coarsen=4", NULL};
    for (int i = 0; same[i]; i++) {
        cg_config c;
        cfg_default(&c);
        assert_int_equal(cfg_parse(&c, same[i], &err), 0);
        assert_int_equal(c.noverrides, 0);
        assert_true(cfg_hash(&c) == cfg_hash(&plain));
    }
}

/* A variant is as precise as its coarsest GEMM (the tolerance and the store's precision column). */
static void test_override_precision(void **state)
{
    (void)state;
    static const struct {
        const char *kv, *precision;
    } cases[] = {{"gemm_2.mma=bf16", "bf16"}, {"mma=tf32,gemm_2.mma=bf16", "bf16"}, {"mma=bf16,gemm_2.mma=tf32", "bf16"},
                 {"gemm_2.mma=tf32,gemm_5.mma=off", "tf32"}, {"mma=tf32,gemm_2.mma=off", "tf32"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cg_config c;
        rg_err err;
        cfg_default(&c);
        assert_int_equal(cfg_parse(&c, cases[i].kv, &err), 0);
        if (strcmp(cfg_precision(&c), cases[i].precision))
            fail_msg("%s: precision %s, not %s", cases[i].kv, cfg_precision(&c), cases[i].precision);
    }
}

static void test_override_errors(void **state)
{
    (void)state;
    expect_parse_error("gemm_2.compact=off", "config: gemm_2.compact: compact is not per-kernel");
    expect_parse_error("trav_3.trav=node", "trav is not per-kernel (it decides which kernels the plan has or what they "
                                           "store, codegen/config_keys.def says why); per-kernel keys: tile, coarsen, gtiles, lb, "
                                           "w, pagg, mma, vec, lanes, tblock");
    expect_parse_error("trav_3.relabel=bfs", "relabel is not per-kernel");
    expect_parse_error("gemm_2.tile=48", "config: gemm_2.tile must be 8, 16, 32, 64 or 128 (got '48')");
    expect_parse_error("trav_3.tblock=96", "config: trav_3.tblock must be 32, 64, 128, 256, 512 or 1024 (got '96')");
    expect_parse_error("gemm_2.tile=16,gemm_2.tile=32", "config: gemm_2.tile given twice");
    expect_parse_error("gemm_2.lb=on,gemm_2.launch_bounds=off", "config: gemm_2.lb given twice");
    expect_parse_error("gemm_2.tiel=16", "unknown key 'tiel' (did you mean 'tile'?");
    expect_parse_error("gemm-2.tile=16", "'gemm-2' is not an instance name");
    expect_parse_error("a_very_long_instance.tile=16", "'a_very_long_instance' is not an instance name");
    expect_parse_error(".tile=16", "'' is not an instance name");
    /* one tile of the global value per instance would pass; the array is bounded */
    rg_str kv = {0};
    for (int i = 1; i <= CFG_MAX_OVERRIDES + 1; i++) rg_str_printf(&kv, "%sgemm_%d.tile=16", i > 1 ? "," : "", i);
    expect_parse_error(kv.s, "more than 32 per-kernel overrides");
    rg_str_free(&kv);
    /* each overridden instance's effective config obeys the rules, named */
    cg_config c;
    rg_err err;
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "tile=64,gemm_2.w=reg", &err), 0);
    assert_int_equal(cfg_validate(&c, &err), -1);
    assert_non_null(strstr(err.msg, "gemm_2: invalid: w=reg keeps a 64-wide W column"));
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "w=reg,tile=16,gemm_2.tile=64", &err), 0);
    assert_int_equal(cfg_validate(&c, &err), -1);
    assert_non_null(strstr(err.msg, "gemm_2: invalid: w=reg"));
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "w=reg,tile=16,gemm_2.tile=64,gemm_2.w=shmem", &err), 0);
    assert_int_equal(cfg_validate(&c, &err), 0);
}

/* Points of the full space survive JSON and back: those covering every pair of values of every
 * two keys, and 4096 more drawn with a fixed seed (all 14,929,920 take seconds, minutes under ASan);
 * JSON that is not a flat config object is refused. */
static void test_json_round_trip(void **state)
{
    (void)state;
    sp_space sp;
    rg_err err;
    assert_int_equal(sp_load("full", &sp, &err), 0);
    long points = 1;
    for (int d = 0; d < sp.ndims; d++) points *= sp.dims[d].nvals;
    assert_int_equal(points, 3840 * 36 * 3 * 3 * 3 * 2 * 2);   /* 2880 with coarsen 8, x vec 3, lanes 3, tblock 2, relabel 3,
                                                                 * mma 3, store 2, acc 2; w 1, scalars 3, epi 2, cdot 2 */
    long *idx;
    int n = kc_pairwise(&sp, 4096, 11, &idx);
    for (int i = 0; i < n; i++) {
        cg_config c, back;
        sp_config_at(&sp, idx[i], &c);
        char *j = cfg_to_json(&c);
        cfg_default(&back);
        if (cfg_parse_json(&back, j, &err)) fail_msg("%s: %s", j, err.msg);
        char *diff = tu_config_diff(&c, &back);
        if (diff) fail_msg("%s parses back with %s", j, diff);
        assert_true(cfg_hash(&back) == cfg_hash(&c));
        free(j);
    }
    free(idx);
    const char *bad[] = {"", "[]", "{\"tile\":16", "{\"tile\":{\"x\":1}}", "{\"compact\":\"o\\\"ff\"}",
                         "{\"tile\":16}x", "{tile:16}", "{\"tile\":16,}", "{\"w\":\"reg,tile=64\"}", NULL};
    for (int i = 0; bad[i]; i++) {
        cg_config c;
        cfg_default(&c);
        if (cfg_parse_json(&c, bad[i], &err) == 0) fail_msg("'%s' parsed", bad[i]);
        assert_non_null(strstr(err.msg, "config: not a flat JSON object"));
    }
    cg_config c;
    cfg_default(&c);
    assert_int_equal(cfg_parse_json(&c, " { \"tile\" : 16 , \"lb\" : true } ", &err), 0);
    assert_int_equal(c.tile, 16);
    assert_int_equal(c.launch_bounds, 1);
    assert_int_equal(cfg_parse_json(&c, "{\"tile\":16,\"tile\":32}", &err), -1);
    assert_string_equal(err.msg, "config: key 'tile' given twice");
}

/* The built-in spaces from the table, line for line. */
static void test_builtin_spaces(void **state)
{
    (void)state;
    static const char *const want[2] = {
        "# design space default\ncompact: off bsearch direct\nreorder: off on\ntile: 8 16 32 64 128\ncoarsen: 1 2 4 8\n"
        "lb: off on\nw: shmem\ntrav: node edge\npagg: on\nsoftmax: twopass single\nmma: off tf32 bf16\nvec: 1 4\nlanes: 8 16 32\n"
        "relabel: orig degree bfs\nacc: smem reg32\nwrun: 32 128\ncrsum: atomic run defer\nrecompute: off on\nnchunk: 64 8\nepi: off on\ncdot: table edge\n",
        "# design space full\ncompact: off bsearch direct\nreorder: off on\ntile: 8 16 32 64 128\ncoarsen: 1 2 4 8\n"
        "lb: off on\nw: shmem\ntrav: node edge\npagg: on off\nsoftmax: twopass single\nmma: off tf32 bf16\nvec: 1 2 4\n"
        "lanes: 8 16 32\ntblock: 128 256\nrelabel: orig degree bfs\nstore: f32 bf16\nacc: smem reg32\nscalars: group lane replicated\nepi: off on\n"
        "cdot: table edge\n"};
    const char *names[2] = {"default", "full"};
    for (int i = 0; i < 2; i++) {
        sp_space sp;
        rg_err err;
        assert_int_equal(sp_load(names[i], &sp, &err), 0);
        char *text;
        size_t len;
        FILE *f = open_memstream(&text, &len);
        sp_print(&sp, f);
        fclose(f);
        assert_string_equal(text, want[i]);
        free(text);
    }
}

/* A space file may name a key by its alias; naming it twice, either way, is refused. */
static void test_space_alias_twice(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = tu_write_file(dir, "s.space", "launch_bounds: on\nlb: off\n");
    sp_space sp;
    rg_err err;
    assert_int_equal(sp_load(path, &sp, &err), -1);
    assert_non_null(strstr(err.msg, ":2: key 'lb' given twice"));
    free(path);
    path = tu_write_file(dir, "t.space", "launch_bounds: on off\n");
    assert_int_equal(sp_load(path, &sp, &err), 0);
    assert_string_equal(sp.dims[0].key, "lb");
    free(path);
    tu_rm_tree(dir);
}

/* A space file may list every value of every key (nchunk has nine), and a point set from the codes
 * is the config its "key=value" text parses to, per-instance keys among them. */
static void test_space_takes_every_value(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = tu_write_file(dir, "all.space", "trav: node\nsoftmax: single\nnchunk: 1 2 4 8 16 32 64 256 1024\n"
                                                 "tblock: 32 64 128 256 512 1024\n");
    sp_space sp;
    sp_point *pts;
    int n;
    rg_err err;
    assert_int_equal(sp_load(path, &sp, &err), 0);
    assert_int_equal(sp_enumerate(&sp, &pts, &n, &err), 0);
    assert_int_equal(n, 9 * 6);
    cg_config want;
    cfg_default(&want);
    assert_int_equal(cfg_parse(&want, "trav=node,softmax=single,nchunk=1024,tblock=64", &err), 0);
    cg_config got;
    sp_config_at(&sp, 8 * 6 + 1, &got);
    assert_int_equal(cfg_hash(&got), cfg_hash(&want));
    free(pts);
    free(path);
    path = tu_write_file(dir, "inst.space", "tile: 16 64\ngemm_2.tile: 32 128\n");
    assert_int_equal(sp_load(path, &sp, &err), 0);
    sp_config_at(&sp, 2, &got);   /* tile 64, gemm_2 at 32 */
    cfg_default(&want);
    assert_int_equal(cfg_parse(&want, "tile=64,gemm_2.tile=32", &err), 0);
    assert_int_equal(cfg_hash(&got), cfg_hash(&want));
    free(path);
    tu_rm_tree(dir);
}

/* The cost model's config features keep their names and order (the model file's coefficients). */
static void test_feature_encoding(void **state)
{
    (void)state;
    static const char *const names[] = {"compact_bsearch", "compact_direct", "reorder", "tile8", "tile16", "tile64",
                                        "tile128", "coarsen1", "coarsen4", "lb", "w_reg", "trav_edge", "pagg_off",
                                        "acc_reg", "acc_reg32", "wrun128", "wrun512", "crsum_run", "crsum_split",
                                        "crsum_defer", "recompute", "nchunk8", "softmax_single", "mma_tf32",
                                        "mma_bf16", "vec2", "vec4", "vec8", "lanes8", "lanes16",
                                        "tblock128", "relabel_degree", "relabel_bfs", "store_bf16",
                                        "scalars_lane", "scalars_replicated", "epi", "cdot_edge"};
    assert_int_equal(CFG_NFEATURES, 38);
    for (int i = 0; i < CFG_NFEATURES; i++) assert_string_equal(cfg_feature_name(i), names[i]);
    cg_config c;
    rg_err err;
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "compact=bsearch,reorder=off,tile=64,coarsen=1,lb=on,w=reg,trav=node,pagg=off", &err), 0);
    double x[CFG_NFEATURES];
    cfg_features(&c, x);
    static const double want[] = {1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < CFG_NFEATURES; i++) assert_true(x[i] == want[i]);
    double g, t;
    cfg_sim_factors(&c, &g, &t);
    assert_true(g == 1 && t == 1);   /* the first keys have their effects in the simulator's own model */
    /* acc=reg: its feature, and the simulator's guess for traversals without a barrier per edge */
    assert_int_equal(cfg_parse(&c, "acc=reg", &err), 0);
    cfg_features(&c, x);
    assert_true(x[13] == 1);
    cfg_sim_factors(&c, &g, &t);
    assert_true(g == 1 && t == 0.9);
    assert_int_equal(cfg_parse(&c, "acc=reg32", &err), 0);
    cfg_features(&c, x);
    assert_true(x[13] == 0 && x[14] == 1);
    /* the features appended in session 27: softmax, mma, vec and lanes */
    assert_int_equal(cfg_parse(&c, "softmax=single,mma=bf16,vec=4,lanes=16", &err), 0);
    cfg_features(&c, x);
    assert_true(x[22] == 1 && x[23] == 0 && x[24] == 1 && x[25] == 0 && x[26] == 1 && x[27] == 0 && x[28] == 0 &&
                x[29] == 1);
    cfg_sim_factors(&c, &g, &t);
    assert_true(g == 1 && t == 0.855);
    /* the features appended in session 32: a key in the built-in spaces, each value but its default */
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "tblock=128,relabel=bfs,store=bf16,scalars=lane,epi=on", &err), 0);
    cfg_features(&c, x);
    assert_true(x[30] == 1 && x[31] == 0 && x[32] == 1 && x[33] == 1 && x[34] == 1 && x[35] == 0 && x[36] == 1 &&
                x[37] == 0);
}

/* Names are SQL column names in the report and KEY=VAL keys: lower-case identifiers. */
static void test_key_names(void **state)
{
    (void)state;
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        assert_true(strspn(k->name, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(k->name));
        /* a column of the report's SQL (results/report.c): "order" would be a syntax error there */
        if (sqlite3_keyword_check(k->name, (int)strlen(k->name))) fail_msg("key %s is an SQL keyword", k->name);
        assert_true(cfg_find_key(k->name) == k);
        if (k->alias) assert_true(cfg_find_key(k->alias) == k);
    }
    assert_null(cfg_find_key("colour"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stored_variant_hashes), cmocka_unit_test(test_canonical_forms),
        cmocka_unit_test(test_aliases),               cmocka_unit_test(test_key_given_twice),
        cmocka_unit_test(test_unknown_key_suggestion), cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_json_round_trip),       cmocka_unit_test(test_builtin_spaces),
        cmocka_unit_test(test_space_alias_twice),     cmocka_unit_test(test_space_takes_every_value),     cmocka_unit_test(test_feature_encoding),
        cmocka_unit_test(test_key_names),             cmocka_unit_test(test_mma_key),
        cmocka_unit_test(test_acc_key),
        cmocka_unit_test(test_override_canonical_forms), cmocka_unit_test(test_override_precision),
        cmocka_unit_test(test_override_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
