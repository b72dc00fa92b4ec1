/* Tests of the binary graph cache: exact round trip, the mapping (aligned, read-only arrays
 * that outlive the file), and every way a file can be bad (missing, truncated, flipped byte,
 * other version or magic, bad indices, nonzero padding); real datasets read back as parsed.
 * Load speed is measured by `make bench-datasets`, never asserted here. */
#include "tests/testutil.h"
#include "datasets/loaders.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

typedef struct fixture {
    char *dir, *path;
    hg_graph *g;
} fixture;

static int setup(void **state)
{
    fixture *f = rg_xcalloc(1, sizeof *f);
    rg_err err;
    f->g = synth_generate("aifb,seed=3", &err);
    if (!f->g) fail_msg("synth: %s", err.msg);
    f->dir = tu_tmpdir();
    f->path = rg_xasprintf("%s/g.hgc", f->dir);
    if (gcache_write(f->path, f->g, &err) != 0) fail_msg("gcache_write: %s", err.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    DIR *d = opendir(f->dir);
    for (struct dirent *e; d && (e = readdir(d)); ) {
        if (e->d_name[0] == '.') continue;
        char *p = rg_xasprintf("%s/%s", f->dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d) closedir(d);
    rmdir(f->dir);
    hg_free(f->g);
    free(f->path);
    free(f->dir);
    free(f);
    return 0;
}

static void assert_same_array(const int32_t *a, const int32_t *b, int64_t n)
{
    assert_memory_equal(a, b, (size_t)n * sizeof *a);
}

/* Every field and array of b equals a's. */
static void assert_same_graph(const hg_graph *a, const hg_graph *b)
{
    rg_err err;
    if (hg_validate(b, &err) != 0) fail_msg("hg_validate: %s", err.msg);
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->num_ntypes, b->num_ntypes);
    assert_int_equal(a->num_etypes, b->num_etypes);
    assert_int_equal(a->num_nodes, b->num_nodes);
    assert_int_equal(a->num_edges, b->num_edges);
    assert_int_equal(a->num_unique, b->num_unique);
    for (int32_t t = 0; t < a->num_ntypes; t++) assert_string_equal(a->ntype_names[t], b->ntype_names[t]);
    for (int32_t r = 0; r < a->num_etypes; r++) assert_string_equal(a->etype_names[r], b->etype_names[r]);
    int64_t nt = a->num_ntypes, n = a->num_nodes, r = a->num_etypes, e = a->num_edges, u = a->num_unique;
    assert_same_array(a->ntype_ptr, b->ntype_ptr, nt + 1);
    assert_same_array(a->etype_src, b->etype_src, r);
    assert_same_array(a->etype_dst, b->etype_dst, r);
    assert_same_array(a->src, b->src, e);
    assert_same_array(a->dst, b->dst, e);
    assert_same_array(a->etype, b->etype, e);
    assert_same_array(a->etype_ptr, b->etype_ptr, r + 1);
    assert_same_array(a->in_ptr, b->in_ptr, n + 1);
    assert_same_array(a->in_eid, b->in_eid, e);
    assert_same_array(a->out_ptr, b->out_ptr, n + 1);
    assert_same_array(a->out_eid, b->out_eid, e);
    assert_same_array(a->unique_src, b->unique_src, u);
    assert_same_array(a->unique_etype_ptr, b->unique_etype_ptr, r + 1);
    assert_same_array(a->edge_compact, b->edge_compact, e);
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    rg_err err;
    hg_graph *b = gcache_read(f->path, &err);
    if (!b) fail_msg("gcache_read: %s", err.msg);
    assert_same_graph(f->g, b);
    hg_free(b);
}

/* Only the final file is left: the temporary one was renamed over it. */
static void test_write_is_atomic(void **state)
{
    fixture *f = *state;
    int files = 0;
    DIR *d = opendir(f->dir);
    for (struct dirent *e; (e = readdir(d)); ) {
        if (e->d_name[0] == '.') continue;
        assert_string_equal(e->d_name, "g.hgc");
        files++;
    }
    closedir(d);
    assert_int_equal(files, 1);
    rg_err err;
    char *bad = rg_xasprintf("%s/no/such/dir/g.hgc", f->dir);
    assert_int_equal(gcache_write(bad, f->g, &err), -1);
    assert_non_null(strstr(err.msg, "cannot write cache"));
    free(bad);
}

static void expect_read_error(const char *path, const char *part)
{
    rg_err err = {0};
    hg_graph *g = gcache_read(path, &err);
    if (g) fail_msg("%s was accepted", path);
    if (!strstr(err.msg, part)) fail_msg("message '%s' lacks '%s'", err.msg, part);
    if (!strstr(err.msg, path)) fail_msg("message '%s' does not name the file", err.msg);
}

static long file_size(const char *path)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fclose(fp);
    return n;
}

static void patch_byte(const char *path, long offset, unsigned char value)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, offset, SEEK_SET), 0);
    assert_int_equal(fputc(value, fp), value);
    fclose(fp);
}

static unsigned char byte_at(const char *path, long offset)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, offset, SEEK_SET);
    int c = fgetc(fp);
    fclose(fp);
    return (unsigned char)c;
}

static void test_missing_file(void **state)
{
    fixture *f = *state;
    char *p = rg_xasprintf("%s/absent.hgc", f->dir);
    expect_read_error(p, "does not exist");
    free(p);
}

static void test_truncated(void **state)
{
    fixture *f = *state;
    long n = file_size(f->path);
    assert_int_equal(truncate(f->path, n - 100), 0);
    expect_read_error(f->path, "truncated");
    assert_int_equal(truncate(f->path, 10), 0);
    expect_read_error(f->path, "truncated");
}

/* A FIFO test that hangs fails instead of stalling the suite. */
static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_gcache: timed out: a cache operation blocked on a FIFO\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}

/* A directory where the cache file should be was reported as "truncated: 4096 bytes";
 * it is named for what it is, and a write neither goes into it nor replaces it. */
static void test_cache_path_is_directory(void **state)
{
    fixture *f = *state;
    char *p = rg_xasprintf("%s/dir.hgc", f->dir);
    assert_int_equal(mkdir(p, 0755), 0);
    expect_read_error(p, "is a directory, not a regular file");
    rg_err err;
    assert_int_equal(gcache_write(p, f->g, &err), -1);
    assert_non_null(strstr(err.msg, "is a directory, not a regular file"));
    assert_int_equal(rmdir(p), 0);   /* still a directory, and still empty */
    char *tmp = rg_xasprintf("%s.tmp.%ld", p, (long)getpid());
    assert_false(rg_file_exists(tmp));
    free(tmp);
    free(p);
}

/* A FIFO there made reading wait forever for a writer; reading and writing now refuse it at
 * once, and the FIFO is left as it was. */
static void test_cache_path_is_fifo(void **state)
{
    fixture *f = *state;
    char *p = rg_xasprintf("%s/fifo.hgc", f->dir);
    assert_int_equal(mkfifo(p, 0644), 0);
    signal(SIGALRM, on_alarm);
    alarm(20);
    expect_read_error(p, "is a FIFO, not a regular file");
    rg_err err;
    assert_int_equal(gcache_write(p, f->g, &err), -1);
    assert_non_null(strstr(err.msg, "is a FIFO, not a regular file"));
    /* a FIFO under the temporary name is not written through either */
    char *tmp = rg_xasprintf("%s/g2.hgc.tmp.%ld", f->dir, (long)getpid());
    assert_int_equal(mkfifo(tmp, 0644), 0);
    char *target = rg_xasprintf("%s/g2.hgc", f->dir);
    assert_int_equal(gcache_write(target, f->g, &err), -1);
    assert_false(rg_file_exists(target));
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    free(target);
    free(tmp);
    free(p);
}

static void test_flipped_payload_byte(void **state)
{
    fixture *f = *state;
    long at = file_size(f->path) / 2;
    patch_byte(f->path, at, (unsigned char)(byte_at(f->path, at) ^ 0x10));
    expect_read_error(f->path, "checksum mismatch");
}

static void test_flipped_header_byte(void **state)
{
    fixture *f = *state;
    long at = 24;   /* inside the sizes */
    patch_byte(f->path, at, (unsigned char)(byte_at(f->path, at) ^ 0x01));
    expect_read_error(f->path, "header checksum mismatch");
}

static void test_trailing_bytes(void **state)
{
    fixture *f = *state;
    FILE *fp = fopen(f->path, "ab");
    fputs("junk", fp);
    fclose(fp);
    expect_read_error(f->path, "after the announced end");
}

/* Version 1 (arrays right after the names, unaligned) is an older build's file. */
static void test_wrong_version(void **state)
{
    fixture *f = *state;
    patch_byte(f->path, 8, 1);   /* version is the first field after the 8-byte magic */
    expect_read_error(f->path, "format version 1; this build reads version 2");
}

static void test_wrong_magic(void **state)
{
    fixture *f = *state;
    patch_byte(f->path, 0, 'X');
    expect_read_error(f->path, "not a graph cache");
}

/* A faulty writer's out-of-range index is refused even with a correct checksum. */
static void test_bad_index_with_good_checksum(void **state)
{
    fixture *f = *state;
    int32_t saved = f->g->dst[0];
    f->g->dst[0] = f->g->num_nodes + 5;
    rg_err err;
    assert_int_equal(gcache_write(f->path, f->g, &err), 0);
    f->g->dst[0] = saved;
    expect_read_error(f->path, "array dst holds values out of range");
}

/* Header fields the tests below patch (see gc_header in datasets/gcache.c). */
enum { HDR_NAMES_BYTES = 40, HDR_PAYLOAD_CRC = 56, HDR_CRC = 60, HDR_BYTES = 64 };

/* Every array of a loaded graph lies in its mapping, 64-byte aligned. */
static void test_arrays_mapped_and_aligned(void **state)
{
    fixture *f = *state;
    rg_err err;
    hg_graph *g = gcache_read(f->path, &err);
    if (!g) fail_msg("gcache_read: %s", err.msg);
    assert_non_null(g->mapping);
    assert_int_equal(g->mapping_bytes, file_size(f->path));
    int32_t *arrays[] = {g->ntype_ptr, g->etype_src, g->etype_dst, g->src, g->dst, g->etype, g->etype_ptr,
                         g->in_ptr, g->in_eid, g->out_ptr, g->out_eid, g->unique_src, g->unique_etype_ptr,
                         g->edge_compact};
    const char *lo = g->mapping, *hi = lo + g->mapping_bytes;
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        assert_int_equal((uintptr_t)arrays[i] % 64, 0);
        assert_true((const char *)arrays[i] > lo && (const char *)arrays[i] < hi);
    }
    hg_free(g);
}

/* A loaded graph owns its mapping: replacing the file (as gcache_write does, by rename) or
 * deleting it leaves the graph intact. */
static void test_graph_outlives_its_file(void **state)
{
    fixture *f = *state;
    rg_err err;
    hg_graph *g = gcache_read(f->path, &err), *other = synth_generate("aifb,seed=4", &err);
    assert_non_null(g);
    assert_non_null(other);
    assert_int_equal(gcache_write(f->path, other, &err), 0);
    hg_free(other);
    assert_int_equal(hg_validate(g, &err), 0);
    assert_memory_equal(g->src, f->g->src, (size_t)g->num_edges * sizeof(int32_t));
    assert_int_equal(unlink(f->path), 0);
    assert_memory_equal(g->edge_compact, f->g->edge_compact, (size_t)g->num_edges * sizeof(int32_t));
    hg_free(g);
}

/* The mapping is read-only: code writing into a loaded graph crashes at the write (in a
 * child process here) instead of silently changing a private copy. */
static void test_mapped_arrays_are_read_only(void **state)
{
    fixture *f = *state;
    rg_err err;
    hg_graph *g = gcache_read(f->path, &err);
    assert_non_null(g);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);   /* cmocka's handler would report and exit instead */
        volatile int32_t *p = g->src;
        p[0] = 1;
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    hg_free(g);
}

static uint32_t u32_at(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

/* Recomputes both checksums of a cache image in memory, as a faulty writer would have. */
static void reseal(unsigned char *file, size_t len)
{
    put_u32(file + HDR_PAYLOAD_CRC, (uint32_t)crc32_z(0, file + HDR_BYTES, len - HDR_BYTES));
    put_u32(file + HDR_CRC, (uint32_t)crc32_z(0, file, HDR_CRC));
}

static void write_file(const char *path, const unsigned char *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

/* The padding after the names block, with the fixture's graph renamed until there is some. */
static long names_padding(fixture *f)
{
    for (;;) {
        unsigned char nb[8];
        FILE *fp = fopen(f->path, "rb");
        assert_non_null(fp);
        assert_int_equal(fseek(fp, HDR_NAMES_BYTES, SEEK_SET), 0);
        assert_int_equal(fread(nb, 1, sizeof nb, fp), sizeof nb);
        fclose(fp);
        uint64_t names;
        memcpy(&names, nb, sizeof names);
        if ((HDR_BYTES + names) % 64 != 0) return (long)(HDR_BYTES + names);
        char *longer = rg_xasprintf("%s+", f->g->name);
        free(f->g->name);
        f->g->name = longer;
        rg_err err;
        assert_int_equal(gcache_write(f->path, f->g, &err), 0);
    }
}

/* Padding bytes are covered by the checksum, and must be zeros even under a good one. */
static void test_padding_checked(void **state)
{
    fixture *f = *state;
    long at = names_padding(f);
    size_t len;
    unsigned char *file = (unsigned char *)tu_read_file(f->path, &len);
    assert_non_null(file);
    assert_int_equal(file[at], 0);
    file[at] = 0x5a;
    write_file(f->path, file, len);
    expect_read_error(f->path, "checksum mismatch");
    uint32_t crc = u32_at(file + HDR_PAYLOAD_CRC);
    reseal(file, len);
    assert_true(u32_at(file + HDR_PAYLOAD_CRC) != crc);
    write_file(f->path, file, len);
    expect_read_error(f->path, "nonzero padding before array ntype_ptr");
    free(file);
}

static hg_graph *parse_mutag(const char *dir, rg_err *err)
{
    return rdf_load_mutag(dir, "mutag", err);
}

static hg_graph *parse_fb15k237(const char *dir, rg_err *err)
{
    return kg_load_openke(dir, "fb15k237", err);
}

/* A real dataset parsed, written to the cache and loaded back is the graph it was. */
static void real_round_trip(const fixture *f, const char *name, hg_graph *(*parse)(const char *, rg_err *))
{
    TU_REQUIRE_DATASET(dir, name);
    rg_err err;
    hg_graph *g = parse(dir, &err);
    if (!g) fail_msg("%s: %s", name, err.msg);
    assert_int_equal(gcache_write(f->path, g, &err), 0);
    hg_graph *back = gcache_read(f->path, &err);
    if (!back) fail_msg("%s: gcache_read: %s", name, err.msg);
    assert_same_graph(g, back);
    hg_free(back);
    hg_free(g);
    free(dir);
}

/* MUTAG (RDF: string names, many types). */
static void test_real_round_trip_mutag(void **state)
{
    real_round_trip(*state, "mutag", parse_mutag);
}

/* FB15k-237 (reverse edges, CSRs and compaction maps make its cache 4x the text). */
static void test_real_round_trip_fb15k237(void **state)
{
    real_round_trip(*state, "fb15k237", parse_fb15k237);
}

#define FIXTURE_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_round_trip),
        FIXTURE_TEST(test_write_is_atomic),
        FIXTURE_TEST(test_missing_file),
        FIXTURE_TEST(test_truncated),
        FIXTURE_TEST(test_cache_path_is_directory),
        FIXTURE_TEST(test_cache_path_is_fifo),
        FIXTURE_TEST(test_flipped_payload_byte),
        FIXTURE_TEST(test_flipped_header_byte),
        FIXTURE_TEST(test_trailing_bytes),
        FIXTURE_TEST(test_wrong_version),
        FIXTURE_TEST(test_wrong_magic),
        FIXTURE_TEST(test_bad_index_with_good_checksum),
        FIXTURE_TEST(test_arrays_mapped_and_aligned),
        FIXTURE_TEST(test_graph_outlives_its_file),
        FIXTURE_TEST(test_mapped_arrays_are_read_only),
        FIXTURE_TEST(test_padding_checked),
        FIXTURE_TEST(test_real_round_trip_mutag),
        FIXTURE_TEST(test_real_round_trip_fb15k237),
    };
    return cmocka_run_group_tests_name("gcache", tests, NULL, NULL);
}
