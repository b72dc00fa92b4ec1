/* Tests of the NumPy formats: .npy header parsing, the mag_0.1 COO loader (fixtures and the
 * real subsample), and the .npz graph export/import, cross-checked with numpy when present. */
#include "tests/testutil.h"
#include "datasets/loaders.h"
#include "datasets/npz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- .npy headers ---- */

/* A .npy buffer: magic, version, header length, dict text padded with a newline, data. */
static unsigned char *make_npy(int major, const char *dict, size_t data_bytes, size_t *n)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict), hlen = dl + 1;
    *n = pre + hlen + data_bytes;
    unsigned char *b = rg_xcalloc(*n, 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[8] = (unsigned char)(hlen & 0xFF);
    b[9] = (unsigned char)(hlen >> 8);
    memcpy(b + pre, dict, dl);
    b[pre + dl] = '\n';
    for (size_t i = 0; i < data_bytes; i++) b[pre + hlen + i] = (unsigned char)i;
    return b;
}

static void expect_npy_error(int major, const char *dict, size_t data_bytes, const char *want)
{
    size_t n;
    unsigned char *b = make_npy(major, dict, data_bytes, &n);
    npy_array a;
    rg_err err = {0};
    assert_int_equal(npy_parse(b, n, &a, "x.npy", &err), -1);
    if (!strstr(err.msg, want)) fail_msg("for %s: unexpected message: %s", dict, err.msg);
}

static void test_npy_headers(void **state)
{
    (void)state;
    unsigned char hdr[NPY_HEADER_MAX];
    int64_t shape[2] = {2, 3};
    size_t hl = npy_format_header(hdr, "<i4", 2, shape);
    assert_int_equal(hl % 64, 0);
    assert_int_equal(hdr[hl - 1], '\n');
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_memory_equal(hdr + 10, dict, strlen(dict));
    assert_int_equal(hdr[10 + strlen(dict)], ' ');
    hl = npy_format_header(hdr, "<U5", 1, shape);
    assert_non_null(memmem(hdr, hl, "'shape': (2,), }", 16));
    hl = npy_format_header(hdr, "<U5", 0, shape);
    assert_non_null(memmem(hdr, hl, "'shape': (), }", 14));

    size_t n;
    npy_array a;
    rg_err err = {0};
    unsigned char *b = make_npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }", 48, &n);
    assert_int_equal(npy_parse(b, n, &a, "x.npy", &err), 0);
    assert_int_equal(a.kind, NPY_I8);
    assert_int_equal(a.count, 6);
    assert_int_equal(npy_int_at(&a, 0), 0x0706050403020100LL);
    npy_free(&a);
    b = make_npy(2, "{\"shape\": (4,), \"fortran_order\": False, \"descr\": \"<i4\"}", 16, &n);
    assert_int_equal(npy_parse(b, n, &a, "x.npy", &err), 0);
    assert_int_equal(a.ndim, 1);
    assert_int_equal(npy_int_at(&a, 1), 0x07060504);
    npy_free(&a);

    expect_npy_error(3, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", 4, "version 3.0");
    expect_npy_error(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (1,), }", 4, "fortran_order True");
    expect_npy_error(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", 4, "unsupported dtype '>i4'");
    expect_npy_error(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 8, "unsupported dtype '<f8'");
    expect_npy_error(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4, "unexpected key 'x'");
    expect_npy_error(1, "{'descr': '<i4', 'fortran_order': False}", 4, "lacks");
    expect_npy_error(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 20, "truncated .npy data");
    expect_npy_error(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, x), }", 20, "bad or repeated 'shape'");
    expect_npy_error(1, "['descr']", 0, "not a dict");
    b = rg_xcalloc(16, 1);
    assert_int_equal(npy_parse(b, 16, &a, "y.npy", &err), -1);
    assert_non_null(strstr(err.msg, "y.npy: not a .npy file"));
}

static void test_ucs4_round_trip(void **state)
{
    (void)state;
    const char *s = "a\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80 \xff\xc3";   /* a ü € 😀, then 2 invalid bytes */
    assert_int_equal(npy_ucs4_len(s), 7);
    unsigned char buf[4 * 9];
    npy_encode_ucs4(s, buf, 9);
    npy_array a = {.kind = NPY_U, .itemsize = 36, .ndim = 0, .count = 1, .data = buf};
    char *back = npy_string_at(&a, 0);
    assert_string_equal(back, s);
    free(back);
    assert_int_equal(buf[4], 0xfc);   /* ü = U+00FC */
}

/* ---- mag_0.1 ---- */

static void write_npy_coo(const char *dir, const char *rel, const char *descr, int rows, int cols, const int64_t *v)
{
    char *p = rg_xasprintf("%s/%s_coo_2.npy", dir, rel);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    unsigned char hdr[NPY_HEADER_MAX];
    int64_t shape[2] = {rows, cols};
    fwrite(hdr, 1, npy_format_header(hdr, descr, 2, shape), f);
    for (int i = 0; i < rows * cols; i++) {
        int32_t v32 = (int32_t)v[i];
        if (strcmp(descr, "<i8") == 0) fwrite(&v[i], 8, 1, f);
        else fwrite(&v32, 4, 1, f);
    }
    fclose(f);
    free(p);
}

static const char *const MAG_RELS[] = {"cited", "citing", "has", "is-about", "writing", "written-by"};

static char *mag_sub_fixture(void)
{
    char *d = tu_tmpdir();
    int64_t pp[] = {0, 1, 2, 1, 2, 0}, fp[] = {0, 1, 2, 2}, pf[] = {2, 2, 0, 1}, ap[] = {4, 0, 3, 3};
    write_npy_coo(d, "cited", "<i4", 2, 3, pp);
    write_npy_coo(d, "citing", "<i8", 2, 3, pp);
    write_npy_coo(d, "has", "<i4", 2, 2, fp);
    write_npy_coo(d, "is-about", "<i4", 2, 2, pf);
    write_npy_coo(d, "writing", "<i8", 2, 2, ap);
    write_npy_coo(d, "written-by", "<i4", 2, 2, (int64_t[]){3, 3, 4, 0});
    return d;
}

static void rm_mag_fixture(char *d)
{
    for (int i = 0; i < 6; i++) {
        char *p = rg_xasprintf("%s/%s_coo_2.npy", d, MAG_RELS[i]);
        unlink(p);
        free(p);
    }
    rmdir(d);
    free(d);
}

static void test_mag_sub_fixture(void **state)
{
    (void)state;
    char *d = mag_sub_fixture();
    rg_err err = {0};
    hg_graph *g = npy_load_mag_sub(d, NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    assert_string_equal(g->name, "mag_0.1");
    assert_int_equal(g->num_ntypes, 3);
    assert_string_equal(g->ntype_names[1], "field");
    assert_int_equal(g->ntype_ptr[1], 4);   /* paper: max id 3 (writing, written-by) -> 4 */
    assert_int_equal(g->ntype_ptr[2], 6);   /* field: max id 1 -> 2 */
    assert_int_equal(g->num_nodes, 11);     /* author: max id 4 -> 5 */
    assert_int_equal(g->num_etypes, 6);
    assert_string_equal(g->etype_names[3], "is-about");
    assert_int_equal(g->etype_src[2], 1);
    assert_int_equal(g->etype_dst[2], 0);
    assert_int_equal(g->num_edges, 14);
    /* writing {4, 0, 3, 3}: row 0 = src (authors 4, 0), row 1 = dst (paper 3 twice);
     * sorted by src, author 0 (global 6) comes first */
    assert_int_equal(g->etype_ptr[5] - g->etype_ptr[4], 2);
    assert_int_equal(g->src[g->etype_ptr[4]], 6 + 0);
    assert_int_equal(g->src[g->etype_ptr[4] + 1], 6 + 4);
    assert_int_equal(g->dst[g->etype_ptr[4]], 3);
    /* has {0, 1, 2, 2}: field 0 -> paper 2 */
    assert_int_equal(g->src[g->etype_ptr[2]], 4 + 0);
    assert_int_equal(g->dst[g->etype_ptr[2]], 2);
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);

    int64_t bad[] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
    write_npy_coo(d, "has", "<i4", 3, 3, bad);
    assert_null(npy_load_mag_sub(d, "m", &err));
    assert_non_null(strstr(err.msg, "has_coo_2.npy: expected an integer array of shape (2, E), got integers of shape (3, 3)"));
    int64_t neg[] = {0, -1, 1, 1};
    write_npy_coo(d, "has", "<i8", 2, 2, neg);
    assert_null(npy_load_mag_sub(d, "m", &err));
    assert_non_null(strstr(err.msg, "edge 1 has an invalid id"));
    write_npy_coo(d, "has", "<i4", 2, 2, (int64_t[]){0, 1, 2, 2});
    char *p = rg_xasprintf("%s/written-by_coo_2.npy", d);
    unlink(p);
    free(p);
    assert_null(npy_load_mag_sub(d, "m", &err));
    assert_non_null(strstr(err.msg, "missing written-by_coo_2.npy"));
    rm_mag_fixture(d);
}

/* One corrupted id (mag_0.1's has_coo_2.npy held 536885537) made a graph of a billion
 * nodes; it is refused while reading, naming the file, the edge and the bound. */
static void test_mag_sub_implausible_id(void **state)
{
    (void)state;
    char *d = mag_sub_fixture();
    rg_err err = {0};
    write_npy_coo(d, "has", "<i4", 2, 2, (int64_t[]){0, 536885537, 2, 2});
    assert_null(npy_load_mag_sub(d, "m", &err));
    assert_non_null(strstr(err.msg, "has_coo_2.npy: edge 1 has an implausible id (536885537 -> 2) for a file of 2 "
                                    "edges: ids of max(2^24, 64 x edges) = 16777216 or more"));
    write_npy_coo(d, "has", "<i8", 2, 2, (int64_t[]){0, 1, 2, 1 << 24});   /* a destination too */
    assert_null(npy_load_mag_sub(d, "m", &err));
    assert_non_null(strstr(err.msg, "edge 1 has an implausible id (1 -> 16777216)"));
    rm_mag_fixture(d);
}

static void test_mag_sub_real(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "mag_0.1");
    rg_err err = {0};
    double t0 = rg_now();
    hg_graph *g = npy_load_mag_sub(dir, "mag_0.1", &err);
    double secs = rg_now() - t0;
    if (!g) fail_msg("%s", err.msg);
    printf("mag_0.1 parsed in %.3f s\n", secs);
    assert_int_equal(g->num_ntypes, 3);
    assert_int_equal(g->num_etypes, 6);
    assert_int_equal(g->num_nodes, 153270);
    assert_int_equal(g->ntype_ptr[1] - g->ntype_ptr[0], 73638);
    assert_int_equal(g->ntype_ptr[2] - g->ntype_ptr[1], 6001);
    assert_int_equal(g->ntype_ptr[3] - g->ntype_ptr[2], 73631);
    assert_int_equal(g->num_edges, 345172);
    assert_int_equal(g->num_unique, 142074);
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
    free(dir);
}

/* ---- .npz ---- */

static hg_graph *sample_graph(void)
{
    hg_builder *b = hgb_new("g\xff\xc3\xa9");   /* an invalid byte, then é */
    int32_t paper = hgb_ntype(b, "paper"), autor = hgb_ntype(b, "autor-\xc3\xbc");
    hgb_ntype(b, "empty");   /* a type without nodes */
    int32_t writes = hgb_etype(b, "writes", autor, paper), cites = hgb_etype(b, "cites", paper, paper);
    hgb_add_edge(b, writes, 1, 2);
    hgb_add_edge(b, cites, 2, 0);
    hgb_add_edge(b, writes, 0, 0);
    hgb_add_edge(b, cites, 0, 1);
    hgb_add_edge(b, writes, 1, 0);
    hgb_add_edge(b, cites, 2, 1);
    rg_err err;
    hg_graph *g = hgb_finish(b, 1, &err);
    assert_non_null(g);
    return g;
}

#define SAME_ARRAY(a, b, field, n) assert_memory_equal((a)->field, (b)->field, (size_t)(n) * sizeof(int32_t))

static void assert_graphs_equal(const hg_graph *a, const hg_graph *b)
{
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->num_ntypes, b->num_ntypes);
    assert_int_equal(a->num_etypes, b->num_etypes);
    assert_int_equal(a->num_nodes, b->num_nodes);
    assert_int_equal(a->num_edges, b->num_edges);
    assert_int_equal(a->num_unique, b->num_unique);
    for (int32_t t = 0; t < a->num_ntypes; t++) assert_string_equal(a->ntype_names[t], b->ntype_names[t]);
    for (int32_t r = 0; r < a->num_etypes; r++) assert_string_equal(a->etype_names[r], b->etype_names[r]);
    SAME_ARRAY(a, b, ntype_ptr, a->num_ntypes + 1);
    SAME_ARRAY(a, b, etype_src, a->num_etypes);
    SAME_ARRAY(a, b, etype_dst, a->num_etypes);
    SAME_ARRAY(a, b, etype_ptr, a->num_etypes + 1);
    SAME_ARRAY(a, b, src, a->num_edges);
    SAME_ARRAY(a, b, dst, a->num_edges);
    SAME_ARRAY(a, b, etype, a->num_edges);
    SAME_ARRAY(a, b, in_ptr, a->num_nodes + 1);
    SAME_ARRAY(a, b, in_eid, a->num_edges);
    SAME_ARRAY(a, b, out_ptr, a->num_nodes + 1);
    SAME_ARRAY(a, b, out_eid, a->num_edges);
    SAME_ARRAY(a, b, unique_src, a->num_unique);
    SAME_ARRAY(a, b, unique_etype_ptr, a->num_etypes + 1);
    SAME_ARRAY(a, b, edge_compact, a->num_edges);
}

/* Files in dir other than `keep` (a leftover temporary file would show here). */
static int other_files(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && strcmp(e->d_name, keep) != 0) n++;
    closedir(d);
    return n;
}

static void test_npz_round_trip(void **state)
{
    (void)state;
    hg_graph *g = sample_graph();
    char *d = tu_tmpdir(), *path = rg_xasprintf("%s/g.npz", d);
    rg_err err = {0};
    assert_int_equal(npz_export_graph(g, path, &err), 0);
    assert_int_equal(other_files(d, "g.npz"), 0);
    hg_graph *h = npz_import_graph(path, &err);
    if (!h) fail_msg("%s", err.msg);
    assert_graphs_equal(g, h);
    assert_int_equal(hg_validate(h, &err), 0);
    hg_free(h);

    npz_file *z = npz_read(path, &err);
    assert_non_null(z);
    assert_int_equal(z->count, 13);
    const npy_array *src = npz_get(z, "edge_compact"), *nm = npz_get(z, "name"), *nt = npz_get(z, "ntype_names");
    assert_int_equal(src->kind, NPY_I4);
    assert_int_equal(src->ndim, 1);
    assert_int_equal(src->shape[0], g->num_edges);
    assert_int_equal(npz_get(z, "unique_src")->count, g->num_unique);
    assert_int_equal(nm->ndim, 0);
    assert_int_equal(nm->itemsize, 4 * 3);
    assert_int_equal(nt->itemsize, 4 * 7);   /* "autor-ü": 7 code points */
    char *s = npy_string_at(nt, 1);
    assert_string_equal(s, "autor-\xc3\xbc");
    free(s);
    npz_free(z);
    unlink(path);
    rmdir(d);
    free(path);
    free(d);
    hg_free(g);
}

static void test_npz_real_graph(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "mag_0.1");
    rg_err err = {0};
    hg_graph *g = npy_load_mag_sub(dir, "mag_0.1", &err);
    assert_non_null(g);
    char *d = tu_tmpdir(), *path = rg_xasprintf("%s/mag.npz", d);
    double t0 = rg_now();
    assert_int_equal(npz_export_graph(g, path, &err), 0);
    double t1 = rg_now();
    hg_graph *h = npz_import_graph(path, &err);
    if (!h) fail_msg("%s", err.msg);
    printf("mag_0.1 npz export %.3f s, import %.3f s\n", t1 - t0, rg_now() - t1);
    assert_graphs_equal(g, h);
    hg_free(h);
    hg_free(g);
    unlink(path);
    rmdir(d);
    free(path);
    free(d);
    free(dir);
}

static void flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "rb+");
    assert_non_null(f);
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x5A, f);
    fclose(f);
}

static void test_npz_bad_files(void **state)
{
    (void)state;
    hg_graph *g = sample_graph();
    char *d = tu_tmpdir(), *path = rg_xasprintf("%s/g.npz", d);
    rg_err err = {0};
    /* the first member, src.npy, starts at 0: its deflate data at 30 + 7 */
    assert_int_equal(npz_export_graph(g, path, &err), 0);
    flip_byte(path, 30 + 7 + 5);
    assert_null(npz_import_graph(path, &err));
    assert_non_null(strstr(err.msg, "src.npy: bad compressed data or CRC"));
    /* truncated */
    assert_int_equal(npz_export_graph(g, path, &err), 0);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, size / 2), 0);
    assert_null(npz_import_graph(path, &err));
    assert_non_null(strstr(err.msg, "truncated"));
    /* a missing array, and a stored derived array that does not match */
    npz_writer *w = npz_create(path, &err);
    assert_non_null(w);
    int32_t E = g->num_edges;
    assert_int_equal(npz_add_i32(w, "src", g->src, E, &err), 0);
    assert_int_equal(npz_add_i32(w, "dst", g->dst, E, &err), 0);
    assert_int_equal(npz_add_i32(w, "etype", g->etype, E, &err), 0);
    assert_int_equal(npz_add_strings(w, "ntype_names", g->ntype_names, g->num_ntypes, &err), 0);
    assert_int_equal(npz_add_strings(w, "etype_names", g->etype_names, g->num_etypes, &err), 0);
    assert_int_equal(npz_add_string_scalar(w, "name", "x", &err), 0);
    assert_int_equal(npz_add_i32(w, "ntype_ptr", g->ntype_ptr, g->num_ntypes + 1, &err), 0);
    assert_int_equal(npz_add_i32(w, "etype_dst", g->etype_dst, g->num_etypes, &err), 0);
    assert_int_equal(npz_finish(w, &err), 0);
    assert_null(npz_import_graph(path, &err));
    assert_non_null(strstr(err.msg, "no 'etype_src' array"));
    w = npz_create(path, &err);
    int32_t *compact = rg_xmalloc((size_t)E * sizeof *compact);
    memcpy(compact, g->edge_compact, (size_t)E * sizeof *compact);
    compact[E - 1] = 0;
    assert_int_equal(npz_add_i32(w, "src", g->src, E, &err), 0);
    assert_int_equal(npz_add_i32(w, "dst", g->dst, E, &err), 0);
    assert_int_equal(npz_add_i32(w, "etype", g->etype, E, &err), 0);
    assert_int_equal(npz_add_strings(w, "ntype_names", g->ntype_names, g->num_ntypes, &err), 0);
    assert_int_equal(npz_add_strings(w, "etype_names", g->etype_names, g->num_etypes, &err), 0);
    assert_int_equal(npz_add_string_scalar(w, "name", "x", &err), 0);
    assert_int_equal(npz_add_i32(w, "ntype_ptr", g->ntype_ptr, g->num_ntypes + 1, &err), 0);
    assert_int_equal(npz_add_i32(w, "etype_src", g->etype_src, g->num_etypes, &err), 0);
    assert_int_equal(npz_add_i32(w, "etype_dst", g->etype_dst, g->num_etypes, &err), 0);
    assert_int_equal(npz_add_i32(w, "edge_compact", compact, E, &err), 0);
    assert_int_equal(npz_finish(w, &err), 0);
    free(compact);
    assert_null(npz_import_graph(path, &err));
    assert_non_null(strstr(err.msg, "'edge_compact' differs"));
    /* not an archive at all; no file */
    free(tu_write_file(d, "g.npz", "hello"));
    assert_null(npz_import_graph(path, &err));
    assert_non_null(strstr(err.msg, "not a zip"));
    unlink(path);
    assert_null(npz_import_graph(path, &err));
    assert_non_null(strstr(err.msg, "cannot open"));
    /* a failed export leaves nothing behind */
    char *nodir = rg_xasprintf("%s/no/such/dir/g.npz", d);
    assert_int_equal(npz_export_graph(g, nodir, &err), -1);
    assert_non_null(strstr(err.msg, "cannot write"));
    free(nodir);
    assert_int_equal(other_files(d, ""), 0);
    rmdir(d);
    free(path);
    free(d);
    hg_free(g);
}

/* ---- cross-check with numpy, when this machine has it ---- */

static const char *numpy_python(void)
{
    static const char *const candidates[] = {"python3", "/usr/bin/python3"};
    for (size_t i = 0; i < 2; i++) {
        char *cmd = rg_xasprintf("%s -c 'import numpy' >/dev/null 2>&1", candidates[i]);
        int rc = system(cmd);
        free(cmd);
        if (rc == 0) return candidates[i];
    }
    return NULL;
}

static char *run_capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    rg_str out = {0};
    rg_str_puts(&out, "");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf - 1, p)) > 0) {
        buf[n] = 0;
        rg_str_puts(&out, buf);
    }
    int rc = pclose(p);
    if (rc != 0) fail_msg("`%s` failed (%d): %s", cmd, rc, out.s);
    return out.s;
}

static const char NUMPY_READ[] =
    "import numpy as np, sys\n"
    "z = np.load(sys.argv[1])\n"
    "out = [','.join(sorted(z.files))]\n"
    "for k in ['src','dst','etype','ntype_ptr','etype_ptr','etype_src','etype_dst','unique_src',"
    "'unique_etype_ptr','edge_compact']:\n"
    "    a = z[k]; out.append('%s %s %d %d' % (k, a.dtype.str, a.shape[0], int(a.astype('int64').sum())))\n"
    "for k in ['ntype_names','etype_names']:\n"
    "    out.append(k + ' ' + '|'.join(z[k].tolist()))\n"
    "out.append('name %r %s' % (z['name'].shape, str(z['name'])))\n"
    "sys.stdout.buffer.write(('\\n'.join(out) + '\\n').encode('utf-8', 'surrogateescape'))\n";

static void append_sum(rg_str *s, const char *key, const int32_t *v, int64_t n)
{
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) sum += v[i];
    rg_str_printf(s, "%s <i4 %lld %lld\n", key, (long long)n, (long long)sum);
}

static char *expected_summary(const hg_graph *g)
{
    rg_str s = {0};
    /* the member names in Python's sorted() order */
    rg_str_puts(&s, "dst,edge_compact,etype,etype_dst,etype_names,etype_ptr,etype_src,name,ntype_names,ntype_ptr,"
                    "src,unique_etype_ptr,unique_src\n");
    append_sum(&s, "src", g->src, g->num_edges);
    append_sum(&s, "dst", g->dst, g->num_edges);
    append_sum(&s, "etype", g->etype, g->num_edges);
    append_sum(&s, "ntype_ptr", g->ntype_ptr, g->num_ntypes + 1);
    append_sum(&s, "etype_ptr", g->etype_ptr, g->num_etypes + 1);
    append_sum(&s, "etype_src", g->etype_src, g->num_etypes);
    append_sum(&s, "etype_dst", g->etype_dst, g->num_etypes);
    append_sum(&s, "unique_src", g->unique_src, g->num_unique);
    append_sum(&s, "unique_etype_ptr", g->unique_etype_ptr, g->num_etypes + 1);
    append_sum(&s, "edge_compact", g->edge_compact, g->num_edges);
    rg_str_puts(&s, "ntype_names ");
    for (int32_t t = 0; t < g->num_ntypes; t++) rg_str_printf(&s, "%s%s", t ? "|" : "", g->ntype_names[t]);
    rg_str_puts(&s, "\netype_names ");
    for (int32_t r = 0; r < g->num_etypes; r++) rg_str_printf(&s, "%s%s", r ? "|" : "", g->etype_names[r]);
    rg_str_printf(&s, "\nname () %s\n", g->name);
    return s.s;
}

static const char NUMPY_WRITE[] =
    "import numpy as np, sys\n"
    "a = dict(src=np.array([5, 0, 2, 1], dtype=np.int64), dst=np.array([0, 3, 4, 4], dtype=np.int64),\n"
    "         etype=np.array([1, 0, 0, 0], dtype=np.int64), ntype_ptr=np.array([0, 3, 6], dtype=np.int32),\n"
    "         etype_src=np.array([0, 1], dtype=np.int32), etype_dst=np.array([1, 0], dtype=np.int32),\n"
    "         ntype_names=np.array(['user', 'item']), etype_names=np.array(['buys', 'bought-by']), name='py')\n"
    "np.savez(sys.argv[1], **a)\n"
    "np.savez_compressed(sys.argv[2], **a)\n";

static void check_numpy_written(const char *path)
{
    rg_err err = {0};
    hg_graph *g = npz_import_graph(path, &err);
    if (!g) fail_msg("%s", err.msg);
    assert_string_equal(g->name, "py");
    assert_string_equal(g->ntype_names[1], "item");
    assert_string_equal(g->etype_names[1], "bought-by");
    assert_int_equal(g->num_nodes, 6);
    assert_int_equal(g->num_edges, 4);
    /* edges were given unsorted: buys (etype 0) first, by src */
    int32_t want_src[] = {0, 1, 2, 5}, want_dst[] = {3, 4, 4, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(g->src[i], want_src[i]);
        assert_int_equal(g->dst[i], want_dst[i]);
    }
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
}

static void test_numpy_compat(void **state)
{
    (void)state;
    const char *py = numpy_python();
    if (!py) {
        printf("skip: numpy is not importable by python3 here\n");
        skip();
    }
    char *d = tu_tmpdir();
    char *rd = tu_write_file(d, "read.py", NUMPY_READ), *wr = tu_write_file(d, "write.py", NUMPY_WRITE);
    char *path = rg_xasprintf("%s/g.npz", d);
    hg_graph *g = sample_graph();
    rg_err err = {0};
    assert_int_equal(npz_export_graph(g, path, &err), 0);
    char *cmd = rg_xasprintf("%s %s %s", py, rd, path);
    char *got = run_capture(cmd), *want = expected_summary(g);
    assert_string_equal(got, want);
    free(got);
    free(want);
    free(cmd);
    hg_free(g);
    char *p1 = rg_xasprintf("%s/plain.npz", d), *p2 = rg_xasprintf("%s/compressed.npz", d);
    cmd = rg_xasprintf("%s %s %s %s", py, wr, p1, p2);
    free(run_capture(cmd));
    check_numpy_written(p1);
    check_numpy_written(p2);
    const char *paths[] = {rd, wr, path, p1, p2};
    for (int i = 0; i < 5; i++) unlink(paths[i]);
    rmdir(d);
    free(cmd);
    free(p1);
    free(p2);
    free(rd);
    free(wr);
    free(path);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npy_headers),
        cmocka_unit_test(test_ucs4_round_trip),
        cmocka_unit_test(test_mag_sub_fixture),
        cmocka_unit_test(test_mag_sub_implausible_id),
        cmocka_unit_test(test_mag_sub_real),
        cmocka_unit_test(test_npz_round_trip),
        cmocka_unit_test(test_npz_real_graph),
        cmocka_unit_test(test_npz_bad_files),
        cmocka_unit_test(test_numpy_compat),
    };
    return cmocka_run_group_tests_name("npz", tests, NULL, NULL);
}
