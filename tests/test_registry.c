/* Tests of the dataset registry, ds_open and its cache, and `explore datasets` (run as a
 * child process): suggestions, missing-file messages, cache reuse and repair, info counts. */
#include "tests/testutil.h"
#include "datasets/dataset.h"
#include "datasets/loaders.h"
#include "datasets/npy.h"
#include "datasets/npz.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static ds_options quiet_opts(const char *data_dir, const char *cache_dir)
{
    ds_options o = {data_dir, cache_dir, 0, 1};
    return o;
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_ino;
}

static void assert_same_graph(const hg_graph *a, const hg_graph *b)
{
    assert_int_equal(a->num_nodes, b->num_nodes);
    assert_int_equal(a->num_edges, b->num_edges);
    assert_int_equal(a->num_ntypes, b->num_ntypes);
    assert_int_equal(a->num_etypes, b->num_etypes);
    assert_int_equal(a->num_unique, b->num_unique);
    size_t e = (size_t)a->num_edges * sizeof(int32_t);
    assert_memory_equal(a->src, b->src, e);
    assert_memory_equal(a->dst, b->dst, e);
    assert_memory_equal(a->etype, b->etype, e);
    assert_memory_equal(a->ntype_ptr, b->ntype_ptr, (size_t)(a->num_ntypes + 1) * sizeof(int32_t));
    for (int32_t t = 0; t < a->num_etypes; t++) assert_string_equal(a->etype_names[t], b->etype_names[t]);
    for (int32_t t = 0; t < a->num_ntypes; t++) assert_string_equal(a->ntype_names[t], b->ntype_names[t]);
}

/* A tiny OpenKE set: 4 entities, 2 relations, 5 triples (h t r) over the three splits. */
static char *write_tiny_openke(const char *root, const char *sub)
{
    char *dir = rg_xasprintf("%s/%s", root, sub);
    rg_err err;
    assert_int_equal(rg_mkdir_p(dir, &err), 0);
    free(tu_write_file(dir, "entity2id.txt", "4\na\t0\nb\t1\nc\t2\nd\t3\n"));
    free(tu_write_file(dir, "relation2id.txt", "2\nlikes\t0\nknows\t1\n"));
    free(tu_write_file(dir, "train2id.txt", "3\n0 1 0\n1 2 0\n2 3 1\n"));
    free(tu_write_file(dir, "valid2id.txt", "1\n3 0 1\n"));
    free(tu_write_file(dir, "test2id.txt", "1\n0 2 0\n"));
    return dir;
}

/* Runs a shell command line; returns its stdout and sets *rc to its exit status. */
static char *run_cmd(const char *cmdline, int *rc)
{
    FILE *p = popen(cmdline, "r");
    assert_non_null(p);
    rg_str b = {0};
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
        for (size_t i = 0; i < n; i++) rg_str_putc(&b, buf[i]);
    int status = pclose(p);
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return b.s ? b.s : rg_xstrdup("");
}

/* Removes a directory made by tu_tmpdir (downloads and caches would pile up in /tmp). */
static void remove_tmpdir(char *dir)
{
    RG_ASSERT(!strncmp(dir, "/tmp/rgnn-test-", strlen("/tmp/rgnn-test-")));
    char *cmd = rg_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

static int have_tool(const char *tool)
{
    char *cmd = rg_xasprintf("command -v %s >/dev/null 2>&1", tool);
    int ok = system(cmd) == 0;
    free(cmd);
    return ok;
}

static void require_explore(void)
{
    if (!rg_file_exists("build/explore")) {
        printf("skip: build/explore not built (run from the repository root)\n");
        skip();
    }
}

/* The tiny OpenKE set is named fb15k237 but is not it: tests of the cache on it load it as
 * `--allow-mismatch` does (its counts differ from the registry's). */
static int allow_mismatch_on(void **state)
{
    (void)state;
    ds_set_allow_mismatch(1);
    return 0;
}

static int allow_mismatch_off(void **state)
{
    (void)state;
    ds_set_allow_mismatch(0);
    return 0;
}

/* ---- registry ---- */

static void test_find_and_aliases(void **state)
{
    (void)state;
    int n;
    const ds_entry *reg = ds_registry(&n);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) {
        assert_non_null(reg[i].description);
        assert_non_null(reg[i].files[0]);
        assert_non_null(reg[i].how_to_get);
        assert_non_null(reg[i].load);
        assert_ptr_equal(ds_find(reg[i].name), &reg[i]);
    }
    assert_string_equal(ds_find("fb15k")->name, "fb15k237");
    assert_string_equal(ds_find("ogbn-mag")->name, "mag");
    assert_string_equal(ds_find("ogbl-biokg")->name, "biokg");
    assert_string_equal(ds_find("OGBL-WIKIKG2")->name, "wikikg2");
    assert_null(ds_find("aifbb"));
    assert_int_equal(ds_find("mag_0.1")->expected.unique_pairs, 142074);
}

static void test_unknown_name_suggests(void **state)
{
    (void)state;
    rg_err err;
    ds_options o = quiet_opts("/nonexistent", "/nonexistent");
    assert_null(ds_open("aifbb", &o, &err));
    assert_string_equal(err.msg, "unknown dataset 'aifbb' (did you mean: aifb?)");
    char *s = ds_suggest("fb15k23");
    assert_non_null(strstr(s, "fb15k237"));
    free(s);
    s = ds_suggest("ogbn-mg");
    assert_non_null(strstr(s, "ogbn-mag"));
    free(s);
    s = ds_suggest("mutga");
    assert_string_equal(s, "mutag");
    free(s);
    s = ds_suggest("qqqqqqqq");
    assert_string_equal(s, "");
    free(s);
    assert_null(ds_open("qqqqqqqq", &o, &err));
    assert_non_null(strstr(err.msg, "known: aifb, mutag"));
}

static void test_data_dir_choice(void **state)
{
    (void)state;
    ds_options none = {0};
    ds_options given = {"/d1", "/c1", 0, 1};
    unsetenv("RGNN_DATA");
    unsetenv("RGNN_CACHE");
    assert_string_equal(ds_data_dir(&none), "datasets/data");
    assert_string_equal(ds_data_dir_origin(&none), "default");
    assert_string_equal(ds_cache_dir(&none), "datasets/cache");
    setenv("RGNN_DATA", "/env/data", 1);
    setenv("RGNN_CACHE", "/env/cache", 1);
    assert_string_equal(ds_data_dir(&none), "/env/data");
    assert_string_equal(ds_data_dir_origin(&none), "$RGNN_DATA");
    assert_string_equal(ds_cache_dir(&none), "/env/cache");
    assert_string_equal(ds_data_dir(&given), "/d1");
    assert_string_equal(ds_data_dir_origin(&given), "--data-dir");
    assert_string_equal(ds_cache_dir(&given), "/c1");
    char *d = ds_entry_dir(ds_find("fb15k"), &given);
    assert_string_equal(d, "/d1/fb15k237");
    free(d);
    unsetenv("RGNN_DATA");
    unsetenv("RGNN_CACHE");
}

static void test_missing_files_message(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    ds_options o = quiet_opts(tmp, tmp);
    rg_err err;
    /* no folder at all */
    assert_null(ds_open("aifb", &o, &err));
    char *want = rg_xasprintf("no folder %s/aifb", tmp);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "--data-dir"));
    assert_non_null(strstr(err.msg, "explore datasets fetch aifb"));
    assert_non_null(strstr(err.msg, "https://data.dgl.ai/dataset/rdf/aifb-hetero.zip"));
    assert_null(strchr(err.msg, '\n'));
    free(want);
    /* a folder that lacks some files: they are named */
    char *dir = write_tiny_openke(tmp, "fb15k237");
    char *gone = rg_xasprintf("%s/valid2id.txt", dir);
    unlink(gone);
    assert_null(ds_open("fb15k237", &o, &err));
    want = rg_xasprintf("%s lacks valid2id.txt", dir);
    assert_non_null(strstr(err.msg, want));
    char *missing = ds_missing_files(ds_find("fb15k237"), dir);
    assert_string_equal(missing, "valid2id.txt");
    free(missing);
    free(want);
    free(gone);
    free(dir);
    remove_tmpdir(tmp);
}

/* ---- ds_open and the cache ---- */

static void test_cache_roundtrip_aifb(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(aifb, "aifb");
    char *cache = tu_tmpdir();
    ds_options o = quiet_opts(tu_shared_datasets(), cache);
    rg_err err;
    char *path = ds_cache_path("aifb", aifb, &o);
    assert_false(rg_file_exists(path));
    hg_graph *first = ds_open("aifb", &o, &err);
    if (!first) fail_msg("%s", err.msg);
    assert_true(rg_file_exists(path));
    ino_t written = inode_of(path);
    hg_graph *second = ds_open("aifb", &o, &err);
    assert_non_null(second);
    /* a cache hit does not rewrite the file (a parse would rename a new one into place) */
    assert_int_equal(inode_of(path), written);
    assert_same_graph(first, second);
    assert_int_equal(hg_validate(second, &err), 0);
    assert_int_equal(first->num_nodes, 7262);
    assert_int_equal(first->num_edges, 48810);
    hg_free(first);
    hg_free(second);
    free(path);
    remove_tmpdir(cache);
    free(aifb);
}

static void corrupt_middle(const char *path)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 2, SEEK_SET);
    unsigned char junk[64];
    memset(junk, 0xA5, sizeof junk);
    fwrite(junk, 1, sizeof junk, f);
    fclose(f);
}

static void test_corrupt_cache_is_rebuilt(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    char *dir = write_tiny_openke(tmp, "fb15k237");
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    hg_graph *ref = ds_open("fb15k237", &o, &err);
    if (!ref) fail_msg("%s", err.msg);
    assert_int_equal(ref->num_edges, 10);   /* 5 triples + reverse */
    char *path = ds_cache_path("fb15k237", dir, &o);
    assert_true(rg_file_exists(path));

    corrupt_middle(path);
    ino_t bad = inode_of(path);
    assert_null(gcache_read(path, &err));
    hg_graph *g = ds_open("fb15k237", &o, &err);
    assert_non_null(g);
    assert_same_graph(ref, g);
    assert_true(inode_of(path) != bad);   /* rewritten */
    hg_graph *reread = gcache_read(path, &err);
    assert_non_null(reread);
    assert_same_graph(ref, reread);
    hg_free(reread);
    hg_free(g);

    /* truncated too */
    assert_int_equal(truncate(path, 10), 0);
    g = ds_open("fb15k237", &o, &err);
    assert_non_null(g);
    assert_same_graph(ref, g);
    hg_free(g);
    hg_free(ref);
    free(path);
    free(dir);
    free(cache);
    remove_tmpdir(tmp);
}

/* Overwrites the cache format version (the 4 bytes after the 8-byte magic). */
static void set_cache_version(const char *path, uint32_t version)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 8, SEEK_SET), 0);
    assert_int_equal(fwrite(&version, sizeof version, 1, f), 1);
    fclose(f);
}

/* A cache of an older format (version 1: arrays unaligned, not mappable) is refused with
 * its version named, and ds_open replaces it instead of failing. */
static void test_old_format_cache_is_rebuilt(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    char *dir = write_tiny_openke(tmp, "fb15k237");
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    hg_graph *ref = ds_open("fb15k237", &o, &err);
    if (!ref) fail_msg("%s", err.msg);
    char *path = ds_cache_path("fb15k237", dir, &o);
    set_cache_version(path, 1);
    ino_t old = inode_of(path);
    assert_null(gcache_read(path, &err));
    assert_non_null(strstr(err.msg, "format version 1"));
    hg_graph *g = ds_open("fb15k237", &o, &err);
    assert_non_null(g);
    assert_same_graph(ref, g);
    assert_true(inode_of(path) != old);
    hg_graph *reread = gcache_read(path, &err);
    if (!reread) fail_msg("%s", err.msg);
    assert_same_graph(ref, reread);
    hg_free(reread);
    hg_free(g);
    hg_free(ref);
    free(path);
    free(dir);
    free(cache);
    remove_tmpdir(tmp);
}

static void test_changed_source_invalidates(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    char *dir = write_tiny_openke(tmp, "fb15k237");
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    hg_graph *g = ds_open("fb15k237", &o, &err);
    assert_non_null(g);
    assert_int_equal(g->num_edges, 10);
    hg_free(g);
    char *before = ds_cache_path("fb15k237", dir, &o);
    free(tu_write_file(dir, "train2id.txt", "4\n0 1 0\n1 2 0\n2 3 1\n3 1 1\n"));
    char *after = ds_cache_path("fb15k237", dir, &o);
    assert_string_not_equal(before, after);
    g = ds_open("fb15k237", &o, &err);
    assert_non_null(g);
    assert_int_equal(g->num_edges, 12);
    hg_free(g);
    assert_true(rg_file_exists(after));
    /* --no-cache: parsed, and no cache written */
    free(tu_write_file(dir, "test2id.txt", "0\n"));
    char *third = ds_cache_path("fb15k237", dir, &o);
    o.no_cache = 1;
    g = ds_open("fb15k237", &o, &err);
    assert_non_null(g);
    assert_int_equal(g->num_edges, 10);
    assert_false(rg_file_exists(third));
    hg_free(g);
    free(third);
    free(before);
    free(after);
    free(dir);
    free(cache);
    remove_tmpdir(tmp);
}

static void test_folder_paths(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    char *dir = write_tiny_openke(tmp, "my-kg");
    hg_graph *g = ds_open(dir, &o, &err);
    if (!g) fail_msg("%s", err.msg);
    assert_string_equal(g->name, "my-kg");
    assert_int_equal(g->num_edges, 10);
    hg_free(g);
    char *rdf = rg_xasprintf("%s/unnamed", tmp);
    assert_int_equal(rg_mkdir_p(rdf, &err), 0);
    free(tu_write_file(rdf, "data.nt", "<http://a/x> <http://a/p> <http://a/y> .\n"));
    assert_null(ds_open(rdf, &o, &err));
    assert_non_null(strstr(err.msg, "name the folder after the dataset"));
    char *nt = rg_xasprintf("%s/data.nt", rdf);
    unlink(nt);
    free(nt);
    free(tu_write_file(rdf, "notes.txt", "hello\n"));
    assert_null(ds_open(rdf, &o, &err));
    assert_non_null(strstr(err.msg, "cannot tell the format"));
    char *nothing = rg_xasprintf("%s/absent/dir", tmp);
    assert_null(ds_open(nothing, &o, &err));
    assert_non_null(strstr(err.msg, "no dataset folder"));
    free(nothing);
    free(rdf);
    free(dir);
    free(cache);
    remove_tmpdir(tmp);
}

static void test_synth_cached(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    ds_options o = quiet_opts(tmp, tmp);
    rg_err err;
    const char *spec = "synth:nodes=200,edges=1000,ntypes=2,etypes=4,ratio=0.5,seed=3";
    hg_graph *a = ds_open(spec, &o, &err);
    if (!a) fail_msg("%s", err.msg);
    hg_graph *b = ds_open(spec, &o, &err);
    assert_non_null(b);
    assert_same_graph(a, b);
    hg_free(a);
    hg_free(b);
    assert_null(ds_open("synth:nodes=oops", &o, &err));
    remove_tmpdir(tmp);
}

/* ---- the CLI ---- */

static char *explore(const char *args, int *rc)
{
    char *cmd = rg_xasprintf("build/explore datasets %s", args);
    char *out = run_cmd(cmd, rc);
    free(cmd);
    return out;
}

/* Values of the loaded graph come before "expected" (which repeats the key names). */
static void assert_json_has(const char *json, const char *kv)
{
    const char *exp = strstr(json, "\"expected\"");
    assert_non_null(exp);
    const char *hit = strstr(json, kv);
    if (!hit || hit > exp) fail_msg("%s not in %s", kv, json);
}

static char *info_json(const char *name)
{
    char *cache = tu_tmpdir();
    char *args = rg_xasprintf("info %s --json --data-dir %s --cache-dir %s 2>/dev/null", name,
                              tu_shared_datasets(), cache);
    int rc;
    char *out = explore(args, &rc);
    assert_int_equal(rc, 0);
    /* exactly one JSON object on one line */
    size_t n = strlen(out);
    assert_true(n > 2 && out[0] == '{' && out[n - 2] == '}' && out[n - 1] == '\n');
    assert_ptr_equal(strchr(out, '\n'), out + n - 1);
    free(args);
    remove_tmpdir(cache);
    return out;
}

static void test_cli_info_json_fb15k237(void **state)
{
    (void)state;
    require_explore();
    TU_REQUIRE_DATASET(dir, "fb15k237");
    char *out = info_json("fb15k237");
    const char *keys[] = {"\"name\":\"fb15k237\"", "\"node_types\":1", "\"edge_types\":474",
                          "\"nodes\":14541", "\"edges\":620232",
                          "\"unique_src_etype_pairs\":161922", "\"compaction_ratio\":0.26",
                          "\"avg_degree\":", "\"density\":", "\"relation_size_min\":",
                          "\"relation_size_median\":", "\"relation_size_max\":",
                          "\"relation_size_skew\":"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) assert_json_has(out, keys[i]);
    assert_non_null(strstr(out, "\"matches_expected\":true"));
    free(out);
    free(dir);
}

static void test_cli_info_json_mag_sub(void **state)
{
    (void)state;
    require_explore();
    TU_REQUIRE_DATASET(dir, "mag_0.1");
    char *out = info_json("mag_0.1");
    const char *keys[] = {"\"node_types\":3", "\"edge_types\":6", "\"nodes\":153270",
                          "\"edges\":345172", "\"unique_src_etype_pairs\":142074",
                          "\"paper\":73638", "\"field\":6001", "\"author\":73631"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) assert_json_has(out, keys[i]);
    assert_non_null(strstr(out, "\"matches_expected\":true"));
    free(out);
    free(dir);
}

static void test_cli_missing_data_dir(void **state)
{
    (void)state;
    require_explore();
    int rc;
    char *out = explore("info aifb --data-dir /nonexistent/rgnn-data 2>&1", &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "explore datasets info: dataset aifb not found: no folder "
                                "/nonexistent/rgnn-data/aifb"));
    assert_non_null(strstr(out, "--data-dir"));
    assert_non_null(strstr(out, "explore datasets fetch aifb"));
    const char *newline = strchr(out, '\n');
    assert_non_null(newline);
    assert_int_equal(newline[1], 0);   /* one line */
    free(out);
    out = explore("info aifbb 2>&1", &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "did you mean: aifb?"));
    free(out);
}

static void test_cli_list_and_help(void **state)
{
    (void)state;
    require_explore();
    int rc;
    char *out = explore("list --data-dir /nonexistent/x --cache-dir /nonexistent/c", &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "data dir:  /nonexistent/x (--data-dir)"));
    assert_non_null(strstr(out, "mag_0.1   missing"));
    assert_non_null(strstr(out, "/nonexistent/x/wikikg2"));
    free(out);
    if (tu_shared_datasets()) {
        char *args = rg_xasprintf("list --data-dir %s --cache-dir /nonexistent/c", tu_shared_datasets());
        out = explore(args, &rc);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(out, "fb15k237  found"));
        assert_non_null(strstr(out, "bgs       missing"));
        free(out);
        free(args);
    }
    const char *subs[] = {"--help", "list --help", "info --help", "fetch --help", "export --help"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        out = explore(subs[i], &rc);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(out, "usage: explore datasets"));
        free(out);
    }
    out = explore("frobnicate 2>&1", &rc);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "unknown subcommand 'frobnicate'"));
    free(out);
    out = explore("info aifb --bogus 2>&1", &rc);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "unknown option '--bogus'"));
    free(out);
    out = explore("export fb15k237 --format csv 2>&1", &rc);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "unsupported format 'csv'"));
    free(out);
}

static void test_cli_export_npz(void **state)
{
    (void)state;
    require_explore();
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    free(write_tiny_openke(tmp, "fb15k237"));
    char *args = rg_xasprintf("export fb15k --data-dir %s --cache-dir %s --out %s/g.npz --allow-mismatch 2>&1",
                              tmp, cache, tmp);
    int rc;
    char *out = explore(args, &rc);
    if (rc != 0) fail_msg("%s", out);
    assert_non_null(strstr(out, "(4 nodes, 10 edges)"));
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    hg_graph *g = ds_open("fb15k237", &o, &err);
    char *npz = rg_xasprintf("%s/g.npz", tmp);
    hg_graph *back = npz_import_graph(npz, &err);
    if (!back) fail_msg("%s", err.msg);
    assert_same_graph(g, back);
    hg_free(g);
    hg_free(back);
    free(npz);
    free(out);
    free(args);
    free(cache);
    remove_tmpdir(tmp);
}

static void test_cli_fetch_offline_fails_cleanly(void **state)
{
    (void)state;
    require_explore();
    if (!have_tool("curl")) {
        printf("skip: curl not installed\n");
        skip();
    }
    char *tmp = tu_tmpdir();
    char *args = rg_xasprintf("fetch aifb --data-dir %s --url http://rgnn.invalid/aifb-hetero.zip "
                              "2>&1", tmp);
    int rc;
    char *out = explore(args, &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "explore datasets fetch: cannot download aifb from "
                                "http://rgnn.invalid/aifb-hetero.zip: "));
    assert_null(strstr(out, "curl: ("));
    char *dest = rg_xasprintf("%s/aifb", tmp);
    assert_false(rg_file_exists(dest));
    free(dest);
    free(out);
    free(args);
    out = explore("fetch mag_0.1 --data-dir /nonexistent/x 2>&1", &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "no public download"));
    free(out);
    remove_tmpdir(tmp);
}

/* fetch from a folder URL (file://), per file, with the recorded sha256 checked. */
static void test_cli_fetch_files(void **state)
{
    (void)state;
    require_explore();
    TU_REQUIRE_DATASET(src, "fb15k237");
    if (!have_tool("curl") || !have_tool("sha256sum")) {
        printf("skip: curl or sha256sum not installed\n");
        skip();
    }
    char real[4096];
    assert_non_null(realpath(src, real));
    char *tmp = tu_tmpdir();
    char *args = rg_xasprintf("fetch fb15k237 --data-dir %s --url file://%s/ 2>&1", tmp, real);
    int rc;
    char *out = explore(args, &rc);
    if (rc != 0) fail_msg("%s", out);
    assert_non_null(strstr(out, "sha256 of 5 file(s) checked"));
    char *dest = rg_xasprintf("%s/fb15k237/train2id.txt", tmp);
    assert_true(rg_file_exists(dest));
    free(out);
    out = explore(args, &rc);   /* second time: already there */
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "already in"));
    free(out);
    free(dest);
    free(args);
    remove_tmpdir(tmp);
    free(src);
}

/* fetch of a .zip whose dataset sits one folder down; a damaged file is refused. */
static void test_cli_fetch_zip(void **state)
{
    (void)state;
    require_explore();
    TU_REQUIRE_DATASET(src, "mag_0.1");
    if (!have_tool("curl") || !have_tool("unzip") || !have_tool("zip") || !have_tool("sha256sum")) {
        printf("skip: curl, zip, unzip or sha256sum not installed\n");
        skip();
    }
    char *tmp = tu_tmpdir();
    char *cmd = rg_xasprintf("mkdir -p %s/pack/mag_0.1 && cp %s/*.npy %s/pack/mag_0.1/ && "
                             "cd %s/pack && zip -qr ../good.zip mag_0.1 && "
                             "printf 'x' >> mag_0.1/cited_coo_2.npy && zip -qr ../bad.zip mag_0.1",
                             tmp, src, tmp, tmp);
    assert_int_equal(system(cmd), 0);
    int rc;
    char *args = rg_xasprintf("fetch mag_0.1 --data-dir %s/data --url file://%s/bad.zip 2>&1", tmp, tmp);
    char *out = explore(args, &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "sha256 mismatch for cited_coo_2.npy"));
    char *dest = rg_xasprintf("%s/data/mag_0.1", tmp);
    assert_false(rg_file_exists(dest));   /* nothing half-done left in place */
    free(out);
    free(args);
    args = rg_xasprintf("fetch mag_0.1 --data-dir %s/data --url file://%s/good.zip 2>&1", tmp, tmp);
    out = explore(args, &rc);
    if (rc != 0) fail_msg("%s", out);
    assert_non_null(strstr(out, "sha256 of 6 file(s) checked"));
    char *missing = ds_missing_files(ds_find("mag_0.1"), dest);
    assert_null(missing);
    free(out);
    free(args);
    free(dest);
    free(cmd);
    remove_tmpdir(tmp);
    free(src);
}

/* ---- hostile data: corrupt ids, counts that differ from the registry, odd cache files ---- */

/* dir/mag_0.1: a copy of the shared mag_0.1 arrays (never written in place). */
static char *copy_mag_sub(const char *src, const char *root)
{
    char *dir = rg_xasprintf("%s/mag_0.1", root);
    char *cmd = rg_xasprintf("mkdir -p '%s' && cp '%s'/*.npy '%s'/", dir, src, dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return dir;
}

/* Overwrites element `index` (row-major) of an integer .npy file. */
static void set_npy_int(const char *dir, const char *file, int64_t index, int64_t value)
{
    char *path = rg_xasprintf("%s/%s", dir, file);
    npy_array a;
    rg_err err;
    if (npy_read_file(path, &a, &err) != 0) fail_msg("%s", err.msg);
    long at = (long)(a.data - a.buf) + (long)(a.itemsize * index);
    int64_t size = a.itemsize;
    npy_free(&a);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    int32_t v32 = (int32_t)value;
    assert_int_equal(size == 4 ? fwrite(&v32, 4, 1, f) : fwrite(&value, 8, 1, f), 1);
    fclose(f);
    free(path);
}

/* Graph caches (*.hgc) in dir; 0 when dir does not exist. */
static int caches_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".hgc") != NULL;
    if (d) closedir(d);
    return n;
}

/* mag_0.1 with the id 536885537 found in a corrupted has_coo_2.npy: it built 1.07 billion
 * nodes (17 GB) and was cached; now it fails while reading, and leaves no cache. A mere
 * mismatch may be allowed, an implausible id may not. */
static void test_corrupt_id_fails_fast(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(src, "mag_0.1");
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    char *dir = copy_mag_sub(src, tmp);
    set_npy_int(dir, "has_coo_2.npy", 5, 536885537);   /* row 0 is the source: a field id */
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    for (int allow = 0; allow < 2; allow++) {
        ds_set_allow_mismatch(allow);
        assert_null(ds_open("mag_0.1", &o, &err));
        assert_non_null(strstr(err.msg, "has_coo_2.npy: edge 5 has an implausible id (536885537 -> "));
        assert_non_null(strstr(err.msg, "for a file of 64620 edges: ids of max(2^24, 64 x edges) = 16777216 or more"));
        assert_int_equal(caches_in(cache), 0);
    }
    ds_set_allow_mismatch(0);
    free(dir);
    free(cache);
    remove_tmpdir(tmp);
    free(src);
}

/* A plausible id that adds one field node: the counts differ from the registry, which is an
 * error (nothing cached) unless allowed; allowed, the graph loads with a warning, and its
 * cache is refused again without the flag. The CLI takes --allow-mismatch. */
static void test_count_mismatch(void **state)
{
    (void)state;
    require_explore();
    TU_REQUIRE_DATASET(src, "mag_0.1");
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    char *dir = copy_mag_sub(src, tmp);
    set_npy_int(dir, "has_coo_2.npy", 5, 6001);   /* fields are 0..6000 */
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    assert_null(ds_open("mag_0.1", &o, &err));
    char *want = rg_xasprintf("dataset mag_0.1 in %s differs from the registry: 153271 nodes (expected 153270)", dir);
    if (!strstr(err.msg, want)) fail_msg("'%s' lacks '%s'", err.msg, want);
    assert_non_null(strstr(err.msg, "--allow-mismatch"));
    assert_int_equal(caches_in(cache), 0);

    ds_set_allow_mismatch(1);
    hg_graph *g = ds_open("mag_0.1", &o, &err);
    ds_set_allow_mismatch(0);
    if (!g) fail_msg("%s", err.msg);
    assert_int_equal(g->num_nodes, 153271);
    hg_free(g);
    assert_int_equal(caches_in(cache), 1);
    assert_null(ds_open("mag_0.1", &o, &err));   /* from that cache, still refused */
    assert_non_null(strstr(err.msg, want));

    char *args = rg_xasprintf("info mag_0.1 --data-dir %s --cache-dir %s/c2 2>&1", tmp, tmp);
    int rc;
    char *out = explore(args, &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "differs from the registry: 153271 nodes (expected 153270)"));
    free(out);
    free(args);
    args = rg_xasprintf("info mag_0.1 --allow-mismatch --data-dir %s --cache-dir %s/c2 2>&1", tmp, tmp);
    out = explore(args, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "warning: dataset mag_0.1"));
    assert_non_null(strstr(out, "DIFFERS from the registry's expected counts"));
    free(out);
    free(args);
    free(want);
    free(dir);
    free(cache);
    remove_tmpdir(tmp);
    free(src);
}

/* The generator refuses, before allocating per node, a spec that is almost all isolated
 * nodes: the same bound as for ids read from files. */
static void test_synth_implausible(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir();
    ds_options o = quiet_opts(tmp, tmp);
    rg_err err;
    assert_null(ds_open("synth:nodes=2000000000,edges=20,ntypes=1,etypes=1,ratio=0.5", &o, &err));
    assert_non_null(strstr(err.msg, "nodes=2000000000 for edges=20: more than max(2^24, 64 x 10 edges) = 16777216"));
    remove_tmpdir(tmp);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_registry: timed out: ds_open blocked on a FIFO\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}

/* A FIFO or a directory where the cache file goes: ds_open parses the source as for a
 * corrupt cache, does not hang, and leaves the FIFO or directory as it was. */
static void test_cache_path_not_a_file(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir(), *cache = rg_xasprintf("%s/cache", tmp);
    char *dir = write_tiny_openke(tmp, "kg");
    ds_options o = quiet_opts(tmp, cache);
    rg_err err;
    assert_int_equal(rg_mkdir_p(cache, &err), 0);
    char *path = ds_cache_path("kg", dir, &o);
    for (int fifo = 1; fifo >= 0; fifo--) {
        assert_int_equal(fifo ? mkfifo(path, 0644) : mkdir(path, 0755), 0);
        signal(SIGALRM, on_alarm);
        alarm(20);
        hg_graph *g = ds_open(dir, &o, &err);
        alarm(0);
        signal(SIGALRM, SIG_DFL);
        if (!g) fail_msg("%s", err.msg);
        assert_int_equal(g->num_edges, 10);
        hg_free(g);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true(fifo ? S_ISFIFO(st.st_mode) : S_ISDIR(st.st_mode));
        assert_int_equal(fifo ? unlink(path) : rmdir(path), 0);   /* a directory: still empty */
    }
    free(path);
    free(dir);
    free(cache);
    remove_tmpdir(tmp);
}

/* `explore datasets order`: one row per ordering asked for, miss rates between the compulsory
 * floor it prints and 1; bad lists are refused. */
static void test_cli_order(void **state)
{
    (void)state;
    int rc;
    char *out = explore("order synth:nodes=400,edges=6000,ntypes=3,etypes=5,ratio=0.2,seed=9 --orders orig,rcm "
                        "--l2-mb 0.01 --no-cache 2>&1", &rc);
    assert_int_equal(rc, 0);
    const char *f = strstr(out, "floor ");
    assert_non_null(f);
    double floor = atof(f + 6);
    assert_true(floor > 0 && floor <= 1);
    const char *names[2] = {"\norig ", "\nrcm "};
    for (int i = 0; i < 2; i++) {
        const char *row = strstr(out, names[i]);
        if (!row) fail_msg("no row %s in:\n%s", names[i] + 1, out);
        double cs, rs, m128, m256;
        char name[16];
        assert_int_equal(sscanf(row + 1, "%15s %lf %lf %lf %lf", name, &cs, &rs, &m128, &m256), 5);
        assert_true(m128 >= floor - 1e-4 && m128 <= 1 && m256 >= m128 - 1e-4 && m256 <= 1);
    }
    assert_null(strstr(out, "\nblock "));
    free(out);
    out = explore("order aifb --orders orig,nope 2>&1", &rc);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "unknown ordering 'nope'"));
    free(out);
    out = explore("order 2>&1", &rc);
    assert_int_equal(rc, 2);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_and_aliases),
        cmocka_unit_test(test_unknown_name_suggests),
        cmocka_unit_test(test_data_dir_choice),
        cmocka_unit_test(test_missing_files_message),
        cmocka_unit_test(test_cache_roundtrip_aifb),
        cmocka_unit_test_setup_teardown(test_corrupt_cache_is_rebuilt, allow_mismatch_on, allow_mismatch_off),
        cmocka_unit_test_setup_teardown(test_old_format_cache_is_rebuilt, allow_mismatch_on, allow_mismatch_off),
        cmocka_unit_test_setup_teardown(test_changed_source_invalidates, allow_mismatch_on, allow_mismatch_off),
        cmocka_unit_test(test_folder_paths),
        cmocka_unit_test(test_synth_cached),
        cmocka_unit_test(test_cli_info_json_fb15k237),
        cmocka_unit_test(test_cli_info_json_mag_sub),
        cmocka_unit_test(test_cli_missing_data_dir),
        cmocka_unit_test(test_cli_list_and_help),
        cmocka_unit_test_setup_teardown(test_cli_export_npz, allow_mismatch_on, allow_mismatch_off),
        cmocka_unit_test(test_cli_fetch_offline_fails_cleanly),
        cmocka_unit_test(test_cli_fetch_files),
        cmocka_unit_test(test_cli_fetch_zip),
        cmocka_unit_test(test_corrupt_id_fails_fast),
        cmocka_unit_test(test_count_mismatch),
        cmocka_unit_test(test_synth_implausible),
        cmocka_unit_test(test_cache_path_not_a_file),
        cmocka_unit_test(test_cli_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
