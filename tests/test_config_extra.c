/* A config key added through the key table alone: a second copy of the config and space modules,
 * built with tests/config_extra_keys.def, parses, prints, validates, enumerates and encodes it. */
#define CFG_KEYS_FILE "tests/config_extra_keys.def"
#include "codegen/config.h"

/* The test key's rule, which the table names. */
static int cfg_rule_probe(const cg_config *c, rg_err *err)
{
    if (c->probe == 4 && c->tile < 32) return rg_errf(err, "invalid: probe=4 needs tile 32 or 64 (got %d)", c->tile);
    return 0;
}

/* The modules themselves, compiled here with the extra key; nothing else of the library is linked
 * that uses cg_config, whose layout differs from the library's. */
#include "codegen/config.c"
#include "explorer/space.c"

#include "tests/testutil.h"

/* The library's built-in spaces (tests/test_config.c prints them) */
#define DEFAULT_POINTS (960 * 2 * 3 * 3 * 3 * 2 * 2 * 3 * 2 * 2 * 2 * 2)   /* 720 with coarsen 8, x vec 1 4, lanes 8 16
                                                                         * 32, relabel orig degree bfs, mma 3, acc smem
                                                                         * reg32, wrun 32 128, crsum atomic run defer,
                                                                         * recompute off on, nchunk 64 8, epi off on, cdot
                                                                         * table edge */
#define FULL_POINTS (3840 * 3 * 3 * 2 * 3 * 3 * 2 * 3 * 2 * 2)   /* 2880 with coarsen 8, x vec 1 2 4, lanes 8 16 32, tblock
                                                                 * 128 256, relabel orig degree bfs, mma 3, store f32 bf16,
                                                                 * acc smem reg32, scalars group lane replicated, epi off on,
                                                                 * cdot table edge */

#define LEGACY_DEFAULT "compact=direct,reorder=on,tile=32,coarsen=2,lb=off,w=shmem,trav=edge,pagg=on"

static void test_printed_only_when_set(void **state)
{
    (void)state;
    cg_config c;
    cfg_default(&c);
    assert_int_equal(c.probe, 1);
    char *s = cfg_to_string(&c), *j = cfg_to_json(&c);
    assert_string_equal(s, LEGACY_DEFAULT);   /* so every stored variant keeps its hash */
    assert_null(strstr(j, "probe"));
    free(s);
    free(j);
    rg_err err;
    assert_int_equal(cfg_parse(&c, "probe_width=2", &err), 0);
    assert_int_equal(c.probe, 2);
    s = cfg_to_string(&c);
    j = cfg_to_json(&c);
    assert_string_equal(s, LEGACY_DEFAULT ",probe=2");
    assert_non_null(strstr(j, ",\"probe\":2}"));
    cg_config back;
    cfg_default(&back);
    assert_int_equal(cfg_parse_json(&back, j, &err), 0);
    assert_int_equal(back.probe, 2);
    cfg_default(&back);
    assert_int_equal(cfg_parse(&back, s, &err), 0);
    assert_true(cfg_hash(&back) == cfg_hash(&c));
    free(s);
    free(j);
}

static void test_rejected_when_invalid(void **state)
{
    (void)state;
    cg_config c;
    rg_err err;
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "probe=3", &err), -1);
    assert_string_equal(err.msg, "config: probe must be 1, 2 or 4 (got '3')");
    assert_int_equal(cfg_parse(&c, "probe=2,probe=4", &err), -1);
    assert_string_equal(err.msg, "config: key 'probe' given twice");
    assert_int_equal(cfg_parse(&c, "prove=2", &err), -1);
    assert_non_null(strstr(err.msg, "did you mean 'probe'?"));
    assert_non_null(strstr(err.msg, "known: compact, reorder, tile, coarsen, gtiles, lb, w, trav, pagg, softmax, mma, part, vec, lanes, tblock, relabel, store, acc, wrun, crsum, recompute, dinit, msg, scalars, nchunk, epi, rmax, cdot, unroll, farith, pfetch, rowpf, wacc, occ, launch, gvec, probe)"));
    cfg_default(&c);
    assert_int_equal(cfg_parse(&c, "probe=4,tile=16", &err), 0);
    assert_int_equal(cfg_validate(&c, &err), -1);
    assert_string_equal(err.msg, "invalid: probe=4 needs tile 32 or 64 (got 16)");
    c.probe = 3;   /* set as a member, not through the parser */
    c.tile = 32;
    assert_int_equal(cfg_validate(&c, &err), -1);
    assert_non_null(strstr(err.msg, "probe"));
}

/* "full" lists the key's value, "default" leaves it at its default. */
static void test_enumerated_by_space(void **state)
{
    (void)state;
    sp_space sp;
    sp_point *pts;
    int n;
    rg_err err;
    assert_int_equal(sp_load("default", &sp, &err), 0);
    assert_int_equal(sp_enumerate(&sp, &pts, &n, &err), 0);
    assert_int_equal(n, DEFAULT_POINTS);
    for (int i = 0; i < n; i += 997) {   /* a sample: rebuilding all 10M configs takes seconds */
        cg_config c;
        sp_config_at(&sp, i, &c);
        assert_int_equal(c.probe, 1);
    }
    /* a reason exactly where a point is invalid, one copy per distinct text */
    const char *first = NULL;
    for (int i = 0; i < n; i++) {
        assert_true(!pts[i].valid == (pts[i].reason != NULL));
        if (!pts[i].reason) continue;
        if (!first) first = pts[i].reason;
        else if (!strcmp(first, pts[i].reason)) assert_ptr_equal(first, pts[i].reason);
    }
    assert_non_null(first);
    char copy[320];
    snprintf(copy, sizeof copy, "%s", first);
    assert_ptr_equal(sp_intern(copy), first);
    free(pts);
    assert_int_equal(sp_load("full", &sp, &err), 0);
    assert_string_equal(sp.dims[sp.ndims - 1].key, "probe");
    assert_int_equal(sp_enumerate(&sp, &pts, &n, &err), 0);
    assert_int_equal(n, FULL_POINTS);
    int seen[5] = {0}, rejected = 0;
    for (int i = 0; i < n; i++) {
        cg_config c;
        sp_config_at(&sp, i, &c);
        seen[c.probe]++;
        if (pts[i].reason && strstr(pts[i].reason, "probe=4 needs tile")) {
            rejected++;
            assert_true(c.tile < 32);
        }
    }
    assert_int_equal(seen[1], 0);
    assert_int_equal(seen[4], FULL_POINTS);
    assert_true(rejected > 0);
    free(pts);
}

/* The cost model gets one more bit, the simulator the declared factors. */
static void test_features_and_simulation(void **state)
{
    (void)state;
    assert_int_equal(CFG_NFEATURES, 39);
    assert_string_equal(cfg_feature_name(38), "probe4");
    assert_string_equal(cfg_feature_name(13), "acc_reg");
    cg_config c;
    rg_err err;
    double x[CFG_NFEATURES], g, t;
    cfg_default(&c);
    cfg_features(&c, x);
    assert_true(x[38] == 0);
    cfg_sim_factors(&c, &g, &t);
    assert_true(g == 1 && t == 1);
    assert_int_equal(cfg_parse(&c, "probe=4", &err), 0);
    cfg_features(&c, x);
    assert_true(x[38] == 1);
    cfg_sim_factors(&c, &g, &t);
    assert_true(g == 1 && t == 0.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printed_only_when_set),
        cmocka_unit_test(test_rejected_when_invalid),
        cmocka_unit_test(test_enumerated_by_space),
        cmocka_unit_test(test_features_and_simulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
