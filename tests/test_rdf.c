/* Tests of the RDF loaders: DGL's per-dataset rules on small synthetic N-Triples/Turtle
 * files, bad input (syntax, truncated gzip, empty folders), and the real AIFB/MUTAG counts. */
#include "tests/testutil.h"
#include "datasets/loaders.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define M "http://dl-learner.org/carcinogenesis#"
#define RDF_TYPE "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
#define XSD_DOUBLE "^^<http://www.w3.org/2001/XMLSchema#double>"
#define AM "http://purl.org/collections/nl/am/"
#define BGS "http://data.bgs.ac.uk/"

typedef hg_graph *(*loader_fn)(const char *dir, const char *name, rg_err *err);

static int32_t ntype_named(const hg_graph *g, const char *name)
{
    for (int32_t t = 0; t < g->num_ntypes; t++)
        if (strcmp(g->ntype_names[t], name) == 0) return t;
    return -1;
}

static int32_t ntype_size(const hg_graph *g, const char *name)
{
    int32_t t = ntype_named(g, name);
    return t < 0 ? -1 : g->ntype_ptr[t + 1] - g->ntype_ptr[t];
}

/* Edges of every canonical type whose relation is `rel`; -1 if there is none. */
static int32_t edges_named(const hg_graph *g, const char *rel)
{
    int32_t n = -1;
    for (int32_t r = 0; r < g->num_etypes; r++)
        if (strcmp(g->etype_names[r], rel) == 0) n = (n < 0 ? 0 : n) + g->etype_ptr[r + 1] - g->etype_ptr[r];
    return n;
}

static hg_graph *load_ok(loader_fn load, const char *dir)
{
    rg_err err = {0};
    hg_graph *g = load(dir, "fixture", &err);
    if (!g) fail_msg("loader failed: %s", err.msg);
    assert_int_equal(hg_validate(g, &err), 0);
    return g;
}

/* Loads a folder that must fail; returns the message (static buffer). */
static const char *load_error(loader_fn load, const char *dir)
{
    static rg_err err;
    memset(&err, 0, sizeof err);
    hg_graph *g = load(dir, "fixture", &err);
    if (g) {
        hg_free(g);
        fail_msg("loader accepted bad input in %s", dir);
    }
    assert_true(strlen(err.msg) > 0);
    return err.msg;
}

/* Removes a fixture folder and frees its name (tests leave nothing in /tmp). */
static void drop_dir(char *dir)
{
    RG_ASSERT(strncmp(dir, "/tmp/", 5) == 0);   /* only folders from tu_tmpdir */
    tu_rm_tree(dir);
}

static void write_fixture(const char *dir, const char *name, const char *text)
{
    free(tu_write_file(dir, name, text));
}

static void write_gz(const char *path, const char *text)
{
    gzFile gz = gzopen(path, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, text, (unsigned)strlen(text)), (int)strlen(text));
    assert_int_equal(gzclose(gz), Z_OK);
}

/* ---------------------------------------------------------------- AIFB (Turtle) */

/* cwm-style N3: CRLF, prefixes, `a`, `;` and `,` lists, a `[ ]` blank node, a `"""` literal
 * spanning lines, `<>` and a relative IRI under @base. */
static const char AIFB_N3[] =
    "# cwm output\r\n"
    "@prefix : <http://swrc.ontoware.org/ontology#> .\r\n"
    "@prefix p: <http://www.aifb.uni-karlsruhe.de/Personen/viewPersonOWL/> .\r\n"
    "@prefix pub: <http://www.aifb.uni-karlsruhe.de/Publikationen/viewPublikationOWL/> .\r\n"
    "@prefix g: <http://www.aifb.uni-karlsruhe.de/Forschungsgruppen/viewForschungsgruppeOWL/> .\r\n"
    "<> a <http://www.w3.org/2002/07/owl#Ontology> .\r\n"
    "p:id1instance a :Person ;\r\n"
    "    :name \"Alice\"^^<http://www.w3.org/2001/XMLSchema#string> ;\r\n"
    "    :publication pub:id8instance, pub:id7instance ;\r\n"
    "    :affiliation g:id3instance ;\r\n"
    "    :note \"\"\"two\r\nlines\"\"\" ;\r\n"
    "    :knows [ :name \"anonymous\" ] .\r\n"
    "g:id3instance :employs p:id1instance ;\r\n"
    "    :head p:id1instance ;\r\n"
    "    <http://example.org/vocab/type> \"group\" .\r\n"
    "@base <http://www.aifb.uni-karlsruhe.de/> .\r\n"
    "<Personen/viewPersonOWL/id2instance> :publication pub:id7instance .\r\n";

static void test_aifb_rules(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "aifb.n3", AIFB_N3);
    hg_graph *g = load_ok(rdf_load_aifb, dir);
    /* Sorted triples meet Forschungsgruppen first (its IRI sorts before Personen's). */
    assert_int_equal(g->num_ntypes, 4);
    assert_string_equal(g->ntype_names[0], "Forschungsgruppen");
    assert_string_equal(g->ntype_names[1], "_Literal");
    assert_string_equal(g->ntype_names[2], "Personen");
    assert_string_equal(g->ntype_names[3], "Publikationen");
    assert_int_equal(ntype_size(g, "Personen"), 2);        /* id1, and id2 via @base */
    assert_int_equal(ntype_size(g, "_Literal"), 3);        /* group, Alice, two\r\nlines */
    assert_int_equal(ntype_size(g, "Publikationen"), 2);
    /* employs/affiliation, rdf:type to a non-AIFB class, blank nodes and <> are dropped */
    assert_int_equal(edges_named(g, "ontology#employs"), -1);
    assert_int_equal(edges_named(g, "ontology#affiliation"), -1);
    assert_int_equal(edges_named(g, "ontology#knows"), -1);
    assert_int_equal(edges_named(g, "22-rdf-syntax-ns#type"), -1);
    assert_int_equal(edges_named(g, "ontology#publication"), 3);
    assert_int_equal(edges_named(g, "ontology#note"), 1);
    /* a relation outside swrc is named by its last path segment; "type" becomes rdftype */
    assert_int_equal(edges_named(g, "rdftype"), 1);
    assert_int_equal(edges_named(g, "rev-rdftype"), 1);
    assert_int_equal(edges_named(g, "type"), -1);
    /* 5 relations and their reverses, reverse r + R with swapped endpoints */
    assert_int_equal(g->num_etypes, 10);
    assert_int_equal(g->num_edges, 14);
    for (int32_t r = 0; r < 5; r++) {
        char want[128];
        snprintf(want, sizeof want, "rev-%s", g->etype_names[r]);
        assert_string_equal(g->etype_names[r + 5], want);
        assert_int_equal(g->etype_src[r + 5], g->etype_dst[r]);
        assert_int_equal(g->etype_dst[r + 5], g->etype_src[r]);
    }
    /* pub:id7instance sorts before id8 although written after it: local id 0 */
    int32_t pubs = g->ntype_ptr[ntype_named(g, "Publikationen")];
    int32_t id7_in = 0;
    for (int32_t e = 0; e < g->num_edges; e++)
        id7_in += g->dst[e] == pubs && strcmp(g->etype_names[g->etype[e]], "ontology#publication") == 0;
    assert_int_equal(id7_in, 2);
    hg_free(g);
    drop_dir(dir);
}

/* ---------------------------------------------------------------- MUTAG (N-Triples) */

static const char MUTAG_A[] =
    "<" M "d1> <" M "hasAtom> <" M "d1_1> .\n"
    "<" M "d1> <" M "hasAtom> <" M "d1_1> .\n"           /* repeated in one file: once */
    "<" M "d1> <" M "isMutagenic> \"true\"^^<http://www.w3.org/2001/XMLSchema#boolean> .\n"
    "<" M "d1_1> <" M "charge> \"10\"" XSD_DOUBLE " .\n"
    "<" M "d1_1> <" M "charge> \"9\"" XSD_DOUBLE " .\n"
    "<" M "d2> <" M "charge> \"10\"" XSD_DOUBLE " .\n"
    "<" M "d1> " RDF_TYPE " <" M "Compound> .\n"
    "<" M "Compound> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <" M "Thing> .\n"
    "<" M "d1> <" M "hasStructure> <" M "amino> .\n"
    "<" M "bond3> <" M "inBond> <" M "d1_1> .\n"
    "_:b1 <" M "charge> \"1\"" XSD_DOUBLE " .\n"
    "<http://other.org/x> <" M "charge> \"5\" .\n"
    "\n# a comment\n";
static const char MUTAG_B[] = "<" M "d1> <" M "hasAtom> <" M "d1_1> .\n";   /* again, other file */

static void test_mutag_rules(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "a.nt", MUTAG_A);
    write_fixture(dir, "b.nt", MUTAG_B);
    hg_graph *g = load_ok(rdf_load_mutag, dir);
    /* first-seen order over sorted triples: Compound, bond3, d1, d1_1, d2 */
    assert_int_equal(g->num_ntypes, 5);
    const char *order[] = {"SCHEMA", "bond", "d", "hasStructure", "_Literal"};
    for (int t = 0; t < 5; t++) assert_string_equal(g->ntype_names[t], order[t]);
    assert_int_equal(ntype_size(g, "SCHEMA"), 2);          /* Compound, Thing */
    assert_int_equal(ntype_size(g, "d"), 3);               /* d1_1, d1, d2 */
    assert_int_equal(ntype_size(g, "hasStructure"), 1);    /* object class = relation */
    assert_int_equal(ntype_size(g, "_Literal"), 2);        /* 9, 10 */
    assert_int_equal(edges_named(g, "isMutagenic"), -1);
    assert_int_equal(edges_named(g, "hasAtom"), 2);        /* one per file */
    assert_int_equal(edges_named(g, "charge"), 3);         /* blank node, foreign IRI dropped */
    assert_int_equal(edges_named(g, "22-rdf-syntax-ns#type"), 1);
    assert_int_equal(edges_named(g, "rdf-schema#subClassOf"), 1);
    assert_int_equal(g->num_edges, 2 * 9);
    /* rdflib sorts the doubles by value: "9" before "10", so "10" is literal 1 and has
     * two charge edges (from d1_1 and d2). A lexical sort would make it literal 0. */
    int32_t ten = g->ntype_ptr[ntype_named(g, "_Literal")] + 1;
    int32_t into_ten = 0;
    for (int32_t e = 0; e < g->num_edges; e++)
        into_ten += g->dst[e] == ten && strcmp(g->etype_names[g->etype[e]], "charge") == 0;
    assert_int_equal(into_ten, 2);
    hg_free(g);
    drop_dir(dir);
}

static void test_gzip_equals_plain(void **state)
{
    (void)state;
    char *plain = tu_tmpdir(), *zipped = tu_tmpdir();
    write_fixture(plain, "m.nt", MUTAG_A);
    char *gz = rg_xasprintf("%s/m.nt.gz", zipped);
    write_gz(gz, MUTAG_A);
    hg_graph *a = load_ok(rdf_load_mutag, plain), *b = load_ok(rdf_load_mutag, zipped);
    assert_int_equal(a->num_nodes, b->num_nodes);
    assert_int_equal(a->num_edges, b->num_edges);
    assert_int_equal(a->num_etypes, b->num_etypes);
    assert_memory_equal(a->src, b->src, (size_t)a->num_edges * sizeof *a->src);
    assert_memory_equal(a->dst, b->dst, (size_t)a->num_edges * sizeof *a->dst);
    hg_free(a);
    hg_free(b);
    free(gz);
    drop_dir(plain);
    drop_dir(zipped);
}

/* ---------------------------------------------------------------- BGS and AM */

static const char BGS_NT[] =
    "<" BGS "id/Lexicon/NamedRockUnit/ABC> <" BGS "ref/Lexicon/hasTheme> <" BGS "id/Lexicon/Theme/T1> .\n"
    "<" BGS "id/Lexicon/NamedRockUnit/ABC> <http://www.w3.org/2004/02/skos/core#broader> <" BGS "id/Lexicon/NamedRockUnit/XYZ> .\n"
    "<" BGS "id/Lexicon/NamedRockUnit/ABC> <" BGS "ref/Lexicon/hasLithogenesis> <" BGS "id/Lexicon/Litho/L1> .\n"
    "<" BGS "id/Lexicon/NamedRockUnit/ABC> <" BGS "ref/Lexicon/hasStatus> <" BGS "ref/CurrentStatus/x/Current> .\n"
    "<" BGS "id/Lexicon/NamedRockUnit/ABC> <" BGS "ref/Lexicon/hasTheme> \"a literal\" .\n"
    "<" BGS "id/Lexicon/NamedRockUnit/ABC> <" BGS "ref/short> <" BGS "id/Lexicon/Theme/T2> .\n"
    "<" BGS "id/Lexicon/NamedRockUnit/ABC> <" BGS "ref/Lexicon/hasTheme> <" BGS "id/Too/Short> .\n"
    "_:x <" BGS "ref/Lexicon/hasTheme> <" BGS "id/Lexicon/Theme/T1> .\n";

static void test_bgs_rules(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "Lexicon_NamedRockUnit.nt", BGS_NT);
    hg_graph *g = load_ok(rdf_load_bgs, dir);
    assert_int_equal(g->num_ntypes, 2);
    assert_int_equal(ntype_size(g, "Lexicon/NamedRockUnit"), 2);
    assert_int_equal(ntype_size(g, "Lexicon/Theme"), 1);
    assert_int_equal(edges_named(g, "Lexicon/hasTheme"), 1);
    assert_int_equal(edges_named(g, "http://www_w3_org/2004/02/skos/core#broader"), 1);
    assert_int_equal(edges_named(g, "Lexicon/hasLithogenesis"), -1);
    assert_int_equal(edges_named(g, "Lexicon/hasStatus"), -1);
    assert_int_equal(g->num_edges, 4);
    hg_free(g);
    /* a relation under .../ref with more than 6 parts trips DGL's assertion: an error */
    write_fixture(dir, "z_bad.nt", "<" BGS "id/a/b/c> <" BGS "ref/a/b/c> <" BGS "id/a/b/d> .\n");
    const char *msg = load_error(rdf_load_bgs, dir);
    assert_non_null(strstr(msg, "z_bad.nt"));
    assert_non_null(strstr(msg, "ref/a/b/c"));
    drop_dir(dir);
}

static const char AM_A[] =
    "<" AM "proxy-1> <" AM "producer> <" AM "person-7> .\n"
    "<" AM "proxy-1> <" AM "producer> _:b1 .\n"
    "<" AM "proxy-1> <" AM "objectCategory> <" AM "term-3> .\n"
    "<" AM "proxy-1> <" AM "material> <" AM "term-4> .\n"
    "<" AM "proxy-1> <" AM "title> \"a literal\" .\n"
    "<" AM "proxy-1> <http://www.europeana.eu/schemas/edm/aggregatedCHO> <" AM "a-b-c> .\n"
    "<" AM "proxy-1> <" AM "producer> <http://elsewhere.org/x> .\n";
static const char AM_B[] = "<" AM "proxy-2> <" AM "producer> _:b1 .\n";   /* another b1 */

static void test_am_rules(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "a.nt", AM_A);
    write_fixture(dir, "b.nt", AM_B);
    hg_graph *g = load_ok(rdf_load_am, dir);
    assert_int_equal(ntype_size(g, "proxy"), 2);
    assert_int_equal(ntype_size(g, "person"), 1);
    assert_int_equal(ntype_size(g, "_BNode"), 2);          /* _:b1 of each file */
    assert_int_equal(ntype_size(g, "TYPE"), 1);            /* a-b-c does not split in two */
    assert_int_equal(ntype_named(g, "term"), -1);          /* objectCategory, material dropped */
    assert_int_equal(edges_named(g, "producer"), 3);
    assert_int_equal(edges_named(g, "http://www_europeana_eu/schemas/edm/aggregatedCHO"), 1);
    assert_int_equal(g->num_edges, 8);
    hg_free(g);
    write_fixture(dir, "c.nt", "<" AM "proxy-1> <" AM "producer> <" AM "x/y-1> .\n");
    const char *msg = load_error(rdf_load_am, dir);
    assert_non_null(strstr(msg, "c.nt"));
    assert_non_null(strstr(msg, "x/y-1"));
    drop_dir(dir);
}

/* ---------------------------------------------------------------- bad input */

static void test_malformed_triple(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "bad.nt",
                  "<" M "d1> <" M "hasAtom> <" M "d1_1> .\n"
                  "<" M "d1> <" M "charge> \"unterminated .\n");
    const char *msg = load_error(rdf_load_mutag, dir);
    assert_non_null(strstr(msg, "bad.nt:2:"));   /* file:line:col from serd */
    drop_dir(dir);
}

static void test_malformed_turtle(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "bad.ttl", "@prefix : <http://x/> .\r\n:a :b :c ;\r\n  :d .\r\n");
    const char *msg = load_error(rdf_load_aifb, dir);
    assert_non_null(strstr(msg, "bad.ttl:3:"));
    /* an undefined prefix is not a syntax error for serd, but cannot become an IRI */
    write_fixture(dir, "bad.ttl", "nope:a <http://x/b> <http://x/c> .\n");
    msg = load_error(rdf_load_aifb, dir);
    assert_non_null(strstr(msg, "bad.ttl"));
    assert_non_null(strstr(msg, "undefined prefix"));
    drop_dir(dir);
}

/* Enough distinct triples that the compressed stream is several KiB, then cut in half. */
static void test_truncated_gzip(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *cut_dir = tu_tmpdir();
    rg_str text = {0};
    for (int i = 0; i < 4000; i++)
        rg_str_printf(&text, "<" M "d%d> <" M "charge> \"%d.%03d\"" XSD_DOUBLE " .\n", i, i % 7, i);
    char *full = rg_xasprintf("%s/m.nt.gz", dir);
    write_gz(full, text.s);
    hg_graph *g = load_ok(rdf_load_mutag, dir);   /* the whole file is fine */
    assert_int_equal(g->num_edges, 2 * 4000);
    hg_free(g);

    FILE *f = fopen(full, "rb");
    assert_non_null(f);
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 2000 && n < sizeof buf);
    char *cut = rg_xasprintf("%s/m.nt.gz", cut_dir);
    f = fopen(cut, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n / 2, f), n / 2);
    fclose(f);
    const char *msg = load_error(rdf_load_mutag, cut_dir);
    assert_non_null(strstr(msg, "m.nt.gz"));
    assert_non_null(strstr(msg, "truncated or corrupt gzip"));

    /* Bytes overwritten mid-stream: zlib may only notice at the CRC, after serd has seen
     * garbage; the message must still name the gzip damage, not the garbage. */
    memset(buf + n / 2, 'x', 64);
    f = fopen(cut, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    msg = load_error(rdf_load_mutag, cut_dir);
    assert_non_null(strstr(msg, "truncated or corrupt gzip"));
    rg_str_free(&text);
    free(full);
    free(cut);
    drop_dir(dir);
    drop_dir(cut_dir);
}

static void test_no_rdf_files(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "readme.txt", "not RDF\n");
    write_fixture(dir, "data.nt.bak", "<a> <b> <c> .\n");
    const char *msg = load_error(rdf_load_aifb, dir);
    assert_non_null(strstr(msg, dir));
    assert_non_null(strstr(msg, ".nt.gz"));
    assert_non_null(strstr(msg, ".ttl"));
    char *missing = rg_xasprintf("%s/absent", dir);
    msg = load_error(rdf_load_aifb, missing);
    assert_non_null(strstr(msg, "absent"));
    free(missing);
    drop_dir(dir);
}

static void test_only_dropped_triples(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    write_fixture(dir, "x.nt",
                  "<http://example.org/a> <http://example.org/b> <http://example.org/c> .\n"
                  "<http://www.aifb.uni-karlsruhe.de/Personen/viewPersonOWL/id1instance> "
                  "<http://swrc.ontoware.org/ontology#employs> "
                  "<http://www.aifb.uni-karlsruhe.de/Personen/viewPersonOWL/id2instance> .\n");
    const char *msg = load_error(rdf_load_aifb, dir);
    assert_non_null(strstr(msg, "empty"));
    assert_non_null(strstr(msg, "aifb"));
    drop_dir(dir);
}

/* ---------------------------------------------------------------- real data */

static void check_real(loader_fn load, const char *dir, int32_t nt, int32_t et, int32_t nodes, int32_t edges)
{
    double t0 = rg_now();
    hg_graph *g = load_ok(load, dir);
    printf("loaded %s in %.3f s\n", dir, rg_now() - t0);
    assert_int_equal(g->num_ntypes, nt);
    assert_int_equal(g->num_etypes, et);
    assert_int_equal(g->num_nodes, nodes);
    assert_int_equal(g->num_edges, edges);
    hg_free(g);
}

static void test_real_aifb(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "aifb");
    check_real(rdf_load_aifb, dir, 7, 104, 7262, 48810);
    free(dir);
}

static void test_real_mutag(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "mutag");
    check_real(rdf_load_mutag, dir, 5, 50, 27163, 148100);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aifb_rules),
        cmocka_unit_test(test_mutag_rules),
        cmocka_unit_test(test_gzip_equals_plain),
        cmocka_unit_test(test_bgs_rules),
        cmocka_unit_test(test_am_rules),
        cmocka_unit_test(test_malformed_triple),
        cmocka_unit_test(test_malformed_turtle),
        cmocka_unit_test(test_truncated_gzip),
        cmocka_unit_test(test_no_rdf_files),
        cmocka_unit_test(test_only_dropped_triples),
        cmocka_unit_test(test_real_aifb),
        cmocka_unit_test(test_real_mutag),
    };
    return cmocka_run_group_tests_name("rdf", tests, NULL, NULL);
}
