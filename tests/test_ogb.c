/* Tests of the OGB raw-layout loaders on small gzip fixture trees built here: a tiny
 * ogbn-mag-like hetero graph and a wikikg2-like one, plus malformed and truncated inputs. */
#include "tests/testutil.h"
#include "datasets/loaders.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static void write_gz(const char *root, const char *rel, const char *text)
{
    char *p = rg_xasprintf("%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = 0;
    assert_int_equal(rg_mkdir_p(p, NULL), 0);
    *slash = '/';
    gzFile gz = gzopen(p, "wb");
    assert_non_null(gz);
    assert_int_equal(gzputs(gz, text), (int)strlen(text));
    assert_int_equal(gzclose(gz), Z_OK);
    free(p);
}

#define REL "raw/relations/"

/* author 3, field_of_study 2, institution 1, paper 4; the four mag relations. */
static char *mag_fixture(void)
{
    char *d = tu_tmpdir();
    write_gz(d, "raw/num-node-dict.csv.gz", "author,field_of_study,institution,paper\n3,2,1,4\n");
    write_gz(d, "raw/triplet-type-list.csv.gz",
             "author,affiliated_with,institution\nauthor,writes,paper\npaper,cites,paper\n"
             "paper,has_topic,field_of_study\n");
    write_gz(d, REL "author___affiliated_with___institution/edge.csv.gz", "0,0\n2,0\n");
    write_gz(d, REL "author___affiliated_with___institution/num-edge-list.csv.gz", "2\n");
    write_gz(d, REL "author___writes___paper/edge.csv.gz", "0,0\n1,1\n2,3\n");
    write_gz(d, REL "paper___cites___paper/edge.csv.gz", "0,1\n1,2\n3,0\n");
    write_gz(d, REL "paper___has_topic___field_of_study/edge.csv.gz", "0,0\n3,1\n");
    return d;
}

static int has_edge(const hg_graph *g, int32_t src, int32_t dst, int32_t etype)
{
    for (int32_t e = g->etype_ptr[etype]; e < g->etype_ptr[etype + 1]; e++)
        if (g->src[e] == src && g->dst[e] == dst) return 1;
    return 0;
}

static void check_mag_fixture(const hg_graph *g)
{
    assert_int_equal(g->num_ntypes, 4);
    assert_string_equal(g->ntype_names[0], "author");
    assert_string_equal(g->ntype_names[3], "paper");
    assert_int_equal(g->num_nodes, 10);
    assert_int_equal(g->ntype_ptr[3], 6);
    assert_int_equal(g->num_etypes, 4);   /* no reverse types */
    assert_string_equal(g->etype_names[1], "writes");
    assert_int_equal(g->etype_src[1], 0);
    assert_int_equal(g->etype_dst[1], 3);
    assert_int_equal(g->num_edges, 10);
    assert_true(has_edge(g, 2, 6 + 3, 1));   /* author 2 writes paper 3 */
    assert_true(has_edge(g, 6 + 3, 6 + 0, 2));   /* paper 3 cites paper 0 */
    assert_true(has_edge(g, 6 + 3, 3 + 1, 3));   /* paper 3 has_topic field 1 */
    assert_false(has_edge(g, 6 + 0, 3 + 0, 2));
    rg_err err;
    assert_int_equal(hg_validate(g, &err), 0);
}

static void test_hetero_fixture(void **state)
{
    (void)state;
    char *d = mag_fixture();
    rg_err err = {0};
    hg_graph *g = ogb_load_hetero(d, "mini-mag", &err);
    if (!g) fail_msg("%s", err.msg);
    check_mag_fixture(g);
    hg_free(g);
    /* dir may also be raw/ itself */
    char *raw = rg_xasprintf("%s/raw", d);
    g = ogb_load_hetero(raw, "mini-mag", &err);
    if (!g) fail_msg("%s", err.msg);
    check_mag_fixture(g);
    hg_free(g);
    free(raw);
    /* or the folder the zip was unzipped into, holding mag/raw */
    char *outer = tu_tmpdir(), *moved = rg_xasprintf("%s/mag", outer);
    assert_int_equal(rename(d, moved), 0);
    g = ogb_load_hetero(outer, "mini-mag", &err);
    if (!g) fail_msg("%s", err.msg);
    check_mag_fixture(g);
    hg_free(g);
    free(moved);
    free(d);
    tu_rm_tree(outer);
}

static void expect_hetero_error(const char *rel, const char *text, const char *want1, const char *want2)
{
    char *d = mag_fixture();
    if (text) write_gz(d, rel, text);
    else {
        char *p = rg_xasprintf("%s/%s", d, rel);
        assert_int_equal(unlink(p), 0);
        free(p);
    }
    rg_err err = {0};
    assert_null(ogb_load_hetero(d, "bad", &err));
    if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2))) fail_msg("unexpected message: %s", err.msg);
    tu_rm_tree(d);
}

static void test_hetero_bad_input(void **state)
{
    (void)state;
    expect_hetero_error(REL "paper___cites___paper/edge.csv.gz", "0,1\n1,4\n", "edge.csv.gz:2: expected", "got '1,4'");
    expect_hetero_error(REL "paper___cites___paper/edge.csv.gz", "0,1\n1;2\n", "edge.csv.gz:2: expected", NULL);
    expect_hetero_error(REL "paper___cites___paper/edge.csv.gz", "0,1,2\n", "edge.csv.gz:1: expected", NULL);
    expect_hetero_error(REL "paper___cites___paper/edge.csv.gz", NULL, "missing edge.csv.gz", "paper___cites___paper");
    expect_hetero_error(REL "author___affiliated_with___institution/num-edge-list.csv.gz", "3\n", "says 3 edges", NULL);
    expect_hetero_error("raw/triplet-type-list.csv.gz", "paper,cites,venue\n", "node type 'venue' is not in num-node-dict", NULL);
    expect_hetero_error("raw/triplet-type-list.csv.gz", "paper,cites,paper\nauthor,writes,paper\npaper,cites,paper\n",
                        "triplet-type-list.csv.gz:3: expected each triplet listed once", NULL);
    expect_hetero_error("raw/num-node-dict.csv.gz", "author,paper\n3,x\n", "num-node-dict.csv.gz:2: expected one count", NULL);
    expect_hetero_error("raw/num-node-dict.csv.gz", "author,author\n3,4\n", "num-node-dict.csv.gz:1: expected", NULL);
    expect_hetero_error("raw/num-node-dict.csv.gz", "author,paper\n", "expected a header row", NULL);
    expect_hetero_error("raw/triplet-type-list.csv.gz", NULL, "missing triplet-type-list.csv.gz", NULL);
}

static void test_hetero_truncated_and_missing_root(void **state)
{
    (void)state;
    char *d = mag_fixture();
    rg_str text = {0};
    for (int i = 0; i < 30000; i++) rg_str_printf(&text, "%d,%d\n", i % 4, (i * 3) % 4);
    write_gz(d, REL "paper___cites___paper/edge.csv.gz", text.s);
    rg_str_free(&text);
    rg_err err = {0};
    hg_graph *g = ogb_load_hetero(d, "big", &err);
    if (!g) fail_msg("%s", err.msg);
    assert_int_equal(g->num_edges, 7 + 30000);
    hg_free(g);
    char *p = rg_xasprintf("%s/" REL "paper___cites___paper/edge.csv.gz", d);
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    /* first only part of the gzip trailer (CRC, length) is cut, then some deflate data too */
    assert_int_equal(truncate(p, size - 3), 0);
    assert_null(ogb_load_hetero(d, "cut", &err));
    assert_non_null(strstr(err.msg, "truncated"));
    assert_int_equal(truncate(p, size - 20), 0);
    assert_null(ogb_load_hetero(d, "cut", &err));
    assert_non_null(strstr(err.msg, "truncated"));
    free(p);
    char *empty = tu_tmpdir();
    assert_null(ogb_load_hetero(empty, "none", &err));
    assert_non_null(strstr(err.msg, "no raw/ folder"));
    assert_non_null(strstr(err.msg, empty));
    tu_rm_tree(empty);
    tu_rm_tree(d);
}

static char *wiki_fixture(void)
{
    char *d = tu_tmpdir();
    write_gz(d, "raw/num-node-list.csv.gz", "5\n");
    write_gz(d, "raw/num-edge-list.csv.gz", "4\n");
    write_gz(d, "raw/edge.csv.gz", "0,1\n1,2\n2,0\n3,1\n");
    write_gz(d, "raw/edge_reltype.csv.gz", "0\n2\n0\n1\n");
    return d;
}

static void test_wikikg2_fixture(void **state)
{
    (void)state;
    char *d = wiki_fixture();
    rg_err err = {0};
    hg_graph *g = ogb_load_wikikg2(d, "mini-wiki", &err);
    if (!g) fail_msg("%s", err.msg);
    assert_int_equal(g->num_ntypes, 1);
    assert_int_equal(g->num_nodes, 5);   /* node 4 is isolated but counted */
    assert_int_equal(g->num_etypes, 3);
    assert_string_equal(g->etype_names[2], "rel2");
    assert_int_equal(g->num_edges, 4);
    assert_true(has_edge(g, 1, 2, 2));
    assert_true(has_edge(g, 3, 1, 1));
    assert_true(has_edge(g, 2, 0, 0));
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
    tu_rm_tree(d);
}

static void test_wikikg2_bad_input(void **state)
{
    (void)state;
    char *d = wiki_fixture();
    rg_err err = {0};
    write_gz(d, "raw/edge_reltype.csv.gz", "0\n2\n0\n");
    assert_null(ogb_load_wikikg2(d, "w", &err));
    assert_non_null(strstr(err.msg, "differ in length"));
    write_gz(d, "raw/edge_reltype.csv.gz", "0\n2\n0\n1\n");
    write_gz(d, "raw/edge.csv.gz", "0,1\n1,2\n2,5\n3,1\n");
    assert_null(ogb_load_wikikg2(d, "w", &err));
    assert_non_null(strstr(err.msg, "edge.csv.gz:3: expected 'head,tail'"));
    write_gz(d, "raw/edge.csv.gz", "0,1\n1,2\n2,0\n3,1\n");
    write_gz(d, "raw/num-edge-list.csv.gz", "5\n");
    assert_null(ogb_load_wikikg2(d, "w", &err));
    assert_non_null(strstr(err.msg, "says 5 edges"));
    write_gz(d, "raw/num-node-list.csv.gz", "five\n");
    assert_null(ogb_load_wikikg2(d, "w", &err));
    assert_non_null(strstr(err.msg, "num-node-list.csv.gz:1: expected one integer"));
    tu_rm_tree(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hetero_fixture),
        cmocka_unit_test(test_hetero_bad_input),
        cmocka_unit_test(test_hetero_truncated_and_missing_root),
        cmocka_unit_test(test_wikikg2_fixture),
        cmocka_unit_test(test_wikikg2_bad_input),
    };
    return cmocka_run_group_tests_name("ogb", tests, NULL, NULL);
}
