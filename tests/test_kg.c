/* Tests of the knowledge-graph loaders: OpenKE *2id.txt and KGE text, on fixtures written
 * here (plain and gzip, malformed, truncated) and on the real FB15k-237 when present. */
#include "tests/testutil.h"
#include "datasets/loaders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Index of the edge (src, dst, etype) in g, or -1. */
static int32_t find_edge(const hg_graph *g, int32_t src, int32_t dst, int32_t etype)
{
    for (int32_t e = g->etype_ptr[etype]; e < g->etype_ptr[etype + 1]; e++)
        if (g->src[e] == src && g->dst[e] == dst) return e;
    return -1;
}

static void write_gz(const char *dir, const char *name, const char *text)
{
    char *p = rg_xasprintf("%s/%s", dir, name);
    gzFile gz = gzopen(p, "wb");
    assert_non_null(gz);
    assert_int_equal(gzputs(gz, text), (int)strlen(text));
    assert_int_equal(gzclose(gz), Z_OK);
    free(p);
}

static void rm_files(const char *dir, const char *const *names)
{
    for (; *names; names++) {
        char *p = rg_xasprintf("%s/%s", dir, *names);
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

static const char *const OPENKE_FILES[] = {"train2id.txt", "valid2id.txt", "test2id.txt", "entity2id.txt",
                                           "relation2id.txt", "train2id.txt.gz", NULL};

/* 5 entities, 2 relations; h t r order. */
static char *openke_fixture(int with_maps)
{
    char *d = tu_tmpdir();
    free(tu_write_file(d, "train2id.txt", "3\n0 2 1\n1 2 0\n0 3 1\n"));
    free(tu_write_file(d, "valid2id.txt", "1\r\n3 4 0\r\n"));
    free(tu_write_file(d, "test2id.txt", "1\n4 0 1"));   /* no final newline */
    if (with_maps) {
        free(tu_write_file(d, "entity2id.txt", "6\na\t0\nb\t1\nc\t2\nd\t3\ne\t4\nf g\t5\n"));
        free(tu_write_file(d, "relation2id.txt", "2\n/r/likes\t1\n/r/knows\t0\n"));
    }
    return d;
}

static void test_openke_fixture_with_maps(void **state)
{
    (void)state;
    char *d = openke_fixture(1);
    rg_err err = {0};
    hg_graph *g = kg_load_openke(d, "fx", &err);
    assert_non_null(g);
    assert_string_equal(g->name, "fx");
    assert_int_equal(g->num_ntypes, 1);
    assert_string_equal(g->ntype_names[0], "entity");
    assert_int_equal(g->num_nodes, 6);   /* entity2id count, though entity 5 has no edge */
    assert_int_equal(g->num_etypes, 4);
    assert_string_equal(g->etype_names[0], "/r/knows");
    assert_string_equal(g->etype_names[1], "/r/likes");
    assert_string_equal(g->etype_names[3], "rev-/r/likes");
    assert_int_equal(g->num_edges, 10);
    /* "0 2 1": head 0, tail 2, relation 1 */
    assert_true(find_edge(g, 0, 2, 1) >= 0);
    assert_true(find_edge(g, 2, 0, 3) >= 0);
    assert_true(find_edge(g, 4, 0, 1) >= 0);
    assert_true(find_edge(g, 3, 4, 0) >= 0);
    assert_int_equal(find_edge(g, 2, 0, 1), -1);
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
    rm_files(d, OPENKE_FILES);
    free(d);
}

static void test_openke_without_maps_and_gz(void **state)
{
    (void)state;
    char *d = openke_fixture(0);
    char *plain = rg_xasprintf("%s/train2id.txt", d);
    unlink(plain);
    free(plain);
    write_gz(d, "train2id.txt.gz", "3\n0 2 1\n1 2 0\n0 3 1\n");
    rg_err err = {0};
    hg_graph *g = kg_load_openke(d, NULL, &err);
    assert_non_null(g);
    assert_int_equal(g->num_nodes, 5);   /* max id + 1 */
    assert_int_equal(g->num_etypes, 4);
    assert_string_equal(g->etype_names[0], "rel0");
    assert_string_equal(g->etype_names[2], "rev-rel0");
    assert_int_equal(g->num_edges, 10);
    assert_true(find_edge(g, 1, 2, 0) >= 0);
    hg_free(g);
    rm_files(d, OPENKE_FILES);
    free(d);
}

static void expect_openke_error(const char *file, const char *text, const char *want1, const char *want2)
{
    char *d = openke_fixture(1);
    free(tu_write_file(d, file, text));
    rg_err err = {0};
    assert_null(kg_load_openke(d, "bad", &err));
    if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2)))
        fail_msg("unexpected message: %s", err.msg);
    rm_files(d, OPENKE_FILES);
    free(d);
}

static void test_openke_bad_input(void **state)
{
    (void)state;
    expect_openke_error("train2id.txt", "3\n0 2 1\n1 2 0\n", "says 3 triples but the file has 2", NULL);
    expect_openke_error("train2id.txt", "2\n0 2 1\n1 x 0\n", "train2id.txt:3: expected", "got '1 x 0'");
    expect_openke_error("train2id.txt", "2\n0 2 1\n1 2 0 7\n", "train2id.txt:3: expected", NULL);
    expect_openke_error("train2id.txt", "1\n0 9 1\n", "train2id.txt:2:", "got '0 9 1'");   /* entity >= 6 */
    expect_openke_error("train2id.txt", "1\n0 1 2\n", "train2id.txt:2:", NULL);            /* relation >= 2 */
    expect_openke_error("train2id.txt", "1\n-1 1 0\n", "train2id.txt:2:", NULL);
    expect_openke_error("train2id.txt", "three\n", "train2id.txt:1: expected", NULL);
    expect_openke_error("train2id.txt", "", "empty file", NULL);
    expect_openke_error("relation2id.txt", "2\n/r/a\t0\n/r/b\t0\n", "id 0 appears twice", NULL);
    expect_openke_error("relation2id.txt", "2\n/r/a\t0\n/r/a\t1\n", "appears twice", NULL);
    expect_openke_error("entity2id.txt", "3\na\t0\n", "says 3 entries but the file has 1", NULL);
}

static void test_openke_missing_split(void **state)
{
    (void)state;
    char *d = openke_fixture(1);
    char *p = rg_xasprintf("%s/valid2id.txt", d);
    unlink(p);
    free(p);
    rg_err err = {0};
    assert_null(kg_load_openke(d, "x", &err));
    assert_non_null(strstr(err.msg, "missing valid2id.txt"));
    assert_non_null(strstr(err.msg, d));
    rm_files(d, OPENKE_FILES);
    free(d);
}

static void test_truncated_gz_is_an_error(void **state)
{
    (void)state;
    char *d = openke_fixture(1);
    /* a gz file large enough that cutting it leaves whole lines to parse before the cut */
    rg_str text = {0};
    rg_str_printf(&text, "%d\n", 20000);
    for (int i = 0; i < 20000; i++) rg_str_printf(&text, "%d %d %d\n", i % 5, (i * 7) % 5, i % 2);
    write_gz(d, "train2id.txt.gz", text.s);
    rg_str_free(&text);
    char *plain = rg_xasprintf("%s/train2id.txt", d), *gzp = rg_xasprintf("%s/train2id.txt.gz", d);
    unlink(plain);
    rg_err err = {0};
    hg_graph *g = kg_load_openke(d, "whole", &err);
    assert_non_null(g);   /* the complete file loads */
    assert_int_equal(g->num_edges, 2 * (20000 + 2));
    hg_free(g);
    FILE *f = fopen(gzp, "rb+");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(gzp, size / 2), 0);
    assert_null(kg_load_openke(d, "cut", &err));
    assert_non_null(strstr(err.msg, "train2id.txt.gz"));
    assert_non_null(strstr(err.msg, "truncated"));
    free(plain);
    free(gzp);
    rm_files(d, OPENKE_FILES);
    free(d);
}

static void test_fb15k237(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "fb15k237");
    rg_err err = {0};
    double t0 = rg_now();
    hg_graph *g = kg_load_openke(dir, "fb15k237", &err);
    double secs = rg_now() - t0;
    if (!g) fail_msg("%s", err.msg);
    printf("fb15k237 parsed in %.3f s\n", secs);
    assert_int_equal(g->num_ntypes, 1);
    assert_int_equal(g->num_etypes, 474);
    assert_int_equal(g->num_nodes, 14541);
    assert_int_equal(g->num_edges, 620232);
    assert_int_equal(g->num_unique, 161922);
    assert_string_equal(g->etype_names[0], "/location/country/form_of_government");
    assert_string_equal(g->etype_names[237], "rev-/location/country/form_of_government");
    /* first training triple "0 1 0" */
    assert_true(find_edge(g, 0, 1, 0) >= 0);
    assert_true(find_edge(g, 1, 0, 237) >= 0);
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
    free(dir);
}

static const char *const KGE_FILES[] = {"train.txt", "valid.txt", "test.txt", "entities.dict",
                                        "relations.dict", NULL};

static char *kge_fixture(void)
{
    char *d = tu_tmpdir();
    free(tu_write_file(d, "train.txt", "/m/a\t/r/x\t/m/b\n/m/b\t/r/y\t/m/c\n\n"));
    free(tu_write_file(d, "valid.txt", "/m/c\t/r/x\t/m/a\r\n"));
    free(tu_write_file(d, "test.txt", "/m/d e\t/r/y\t/m/a\n"));
    return d;
}

static void test_kge_first_seen_order(void **state)
{
    (void)state;
    char *d = kge_fixture();
    rg_err err = {0};
    hg_graph *g = kg_load_kge(d, "kge", &err);
    if (!g) fail_msg("%s", err.msg);
    assert_int_equal(g->num_nodes, 4);   /* a=0 b=1 c=2 "d e"=3 */
    assert_int_equal(g->num_etypes, 4);
    assert_string_equal(g->etype_names[0], "/r/x");
    assert_string_equal(g->etype_names[1], "/r/y");
    assert_string_equal(g->etype_names[2], "rev-/r/x");
    assert_int_equal(g->num_edges, 8);
    assert_true(find_edge(g, 0, 1, 0) >= 0);
    assert_true(find_edge(g, 1, 2, 1) >= 0);
    assert_true(find_edge(g, 2, 0, 0) >= 0);
    assert_true(find_edge(g, 3, 0, 1) >= 0);
    assert_true(find_edge(g, 0, 3, 3) >= 0);
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
    rm_files(d, KGE_FILES);
    free(d);
}

static void test_kge_with_dicts(void **state)
{
    (void)state;
    char *d = kge_fixture();
    free(tu_write_file(d, "entities.dict", "4\t/m/a\n0\t/m/b\n1\t/m/c\n2\t/m/d e\n3\t/m/unused\n"));
    free(tu_write_file(d, "relations.dict", "1\t/r/x\n0\t/r/y\n"));
    rg_err err = {0};
    hg_graph *g = kg_load_kge(d, "kge", &err);
    if (!g) fail_msg("%s", err.msg);
    assert_int_equal(g->num_nodes, 5);
    assert_string_equal(g->etype_names[0], "/r/y");
    assert_string_equal(g->etype_names[1], "/r/x");
    assert_true(find_edge(g, 4, 0, 1) >= 0);   /* a -x-> b */
    assert_true(find_edge(g, 2, 4, 0) >= 0);   /* "d e" -y-> a */
    hg_free(g);
    /* a name missing from the dict */
    free(tu_write_file(d, "test.txt", "/m/zz\t/r/y\t/m/a\n"));
    assert_null(kg_load_kge(d, "kge", &err));
    assert_non_null(strstr(err.msg, "test.txt:1: entity '/m/zz' is not in entities.dict"));
    /* ids that skip a number */
    free(tu_write_file(d, "relations.dict", "0\t/r/x\n2\t/r/y\n"));
    assert_null(kg_load_kge(d, "kge", &err));
    assert_non_null(strstr(err.msg, "relations.dict"));
    rm_files(d, KGE_FILES);
    free(d);
}

static void test_kge_bad_lines(void **state)
{
    (void)state;
    char *d = kge_fixture();
    free(tu_write_file(d, "valid.txt", "/m/a /r/x /m/b\n"));
    rg_err err = {0};
    assert_null(kg_load_kge(d, "kge", &err));
    assert_non_null(strstr(err.msg, "valid.txt:1: expected 'head<TAB>relation<TAB>tail', got '/m/a /r/x /m/b'"));
    free(tu_write_file(d, "valid.txt", "/m/a\t\t/m/b\n"));
    assert_null(kg_load_kge(d, "kge", &err));
    assert_non_null(strstr(err.msg, "valid.txt:1: expected"));
    free(tu_write_file(d, "valid.txt", "/m/a\t/r/x\t/m/b\n"));
    char *p = rg_xasprintf("%s/test.txt", d);
    unlink(p);
    free(p);
    assert_null(kg_load_kge(d, "kge", &err));
    assert_non_null(strstr(err.msg, "missing test.txt"));
    rm_files(d, KGE_FILES);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openke_fixture_with_maps),
        cmocka_unit_test(test_openke_without_maps_and_gz),
        cmocka_unit_test(test_openke_bad_input),
        cmocka_unit_test(test_openke_missing_split),
        cmocka_unit_test(test_truncated_gz_is_an_error),
        cmocka_unit_test(test_fb15k237),
        cmocka_unit_test(test_kge_first_seen_order),
        cmocka_unit_test(test_kge_with_dicts),
        cmocka_unit_test(test_kge_bad_lines),
    };
    return cmocka_run_group_tests_name("kg", tests, NULL, NULL);
}
