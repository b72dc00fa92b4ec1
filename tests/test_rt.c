/* Tests of the GPU runtime: NVRTC compilation and the cubin disk cache (run anywhere), the
 * "no CUDA device" errors, and launches/buffers/faults (skipped without a GPU). */
#include "tests/testutil.h"
#include "runtime/rt.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Skips a GPU test without a device, unless RGNN_REQUIRE_GPU=1 makes that a failure. */
#define REQUIRE_GPU() \
    do { \
        TU_SKIP_CUPTI_UNDER_ASAN(); \
        if (!krt_have_device()) { \
            if (krt_gpu_required()) fail_msg("RGNN_REQUIRE_GPU=1 but no CUDA device is usable"); \
            printf("skip: no CUDA device\n"); \
            skip(); \
        } \
    } while (0)

static const char *PATTERN_SRC =
    "extern \"C\" __global__ void fill_pattern(float *out, int n, float scale)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = scale * i + 7.0f;\n"
    "}\n";

static krt_source pattern_source(void)
{
    krt_source s = {"pattern.cu", PATTERN_SRC, 0, NULL, 0};
    return s;
}

/* ---- Per-test cache folder ---------------------------------------------------------- */

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = rg_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
        else unlink(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

static int with_cache_dir(void **state)
{
    char *dir = tu_tmpdir();
    setenv("RGNN_KCACHE", dir, 1);
    krt_stats_reset();
    *state = dir;
    return 0;
}

static int drop_cache_dir(void **state)
{
    remove_tree(*state);
    free(*state);
    unsetenv("RGNN_KCACHE");
    return 0;
}

static char *entry_path(const char *dir, const krt_cubin *c)
{
    return rg_xasprintf("%s/%s.cubin", dir, c->key);
}

static int is_elf(const krt_cubin *c)
{
    return c->size > 4 && memcmp(c->data, "\177ELF", 4) == 0;
}

/* ---- Compilation and the cache (no GPU needed) --------------------------------------- */

static void test_compile_sm80_and_sm90(void **state)
{
    (void)state;
    krt_source src = pattern_source();
    int archs[] = {80, 90};
    for (int i = 0; i < 2; i++) {
        krt_cubin c;
        rg_err err;
        int rc = krt_compile(&src, archs[i], &c, &err);
        if (rc) fail_msg("%s", err.msg);
        assert_true(is_elf(&c));
        assert_int_equal(c.sm, archs[i]);
        assert_int_equal(c.from_cache, 0);
        assert_int_equal(strlen(c.key), 32);
        krt_cubin_free(&c);
    }
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.compiles, 2);
    assert_int_equal(st.cache_hits, 0);
}

static void test_syntax_error_carries_log(void **state)
{
    (void)state;
    krt_source src = {"broken.cu",
                      "extern \"C\" __global__ void k(float *o) { o[0] = undefined_name + ; }\n",
                      0, NULL, 0};
    krt_cubin c;
    rg_err err;
    assert_int_equal(krt_compile(&src, 90, &c, &err), -1);
    assert_non_null(strstr(err.msg, "NVRTC failed to compile broken.cu for sm_90"));
    assert_non_null(strstr(err.msg, "undefined_name"));   /* from the program log */
    assert_null(strchr(err.msg, '\n'));
    assert_non_null(c.log);
    assert_non_null(strstr(c.log, "error"));
    assert_null(c.data);
    krt_cubin_free(&c);
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.compile_failures, 1);
    assert_int_equal(st.compiles, 0);
}

static void test_second_compile_is_cache_hit(void **state)
{
    const char *dir = *state;
    krt_source src = pattern_source();
    krt_cubin a, b;
    rg_err err;
    double t0 = rg_now();
    assert_int_equal(krt_compile(&src, 90, &a, &err), 0);
    double t1 = rg_now();
    char *path = entry_path(dir, &a);
    assert_true(rg_file_exists(path));
    assert_int_equal(krt_compile(&src, 90, &b, &err), 0);
    printf("compile (NVRTC + store) %.1f ms, cache hit %.3f ms, cubin %zu bytes\n",
           (t1 - t0) * 1e3, (rg_now() - t1) * 1e3, a.size);
    assert_int_equal(b.from_cache, 1);
    assert_string_equal(a.key, b.key);
    assert_int_equal(a.size, b.size);
    assert_memory_equal(a.data, b.data, a.size);
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.compiles, 1);
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(st.cache_misses, 1);
    free(path);
    krt_cubin_free(&a);
    krt_cubin_free(&b);
}

static void damage(const char *path, long offset, int truncate_to)
{
    if (truncate_to >= 0) {
        assert_int_equal(truncate(path, truncate_to), 0);
        return;
    }
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, -1, SEEK_CUR), 0);
    fputc(ch ^ 0x5A, f);
    fclose(f);
}

/* Compiles src again after the entry was damaged: must recompile the same bytes. */
static void expect_recompiled(const krt_source *src, const krt_cubin *orig, long corrupt_before)
{
    krt_cubin c;
    rg_err err;
    assert_int_equal(krt_compile(src, 90, &c, &err), 0);
    assert_int_equal(c.from_cache, 0);
    assert_int_equal(c.size, orig->size);
    assert_memory_equal(c.data, orig->data, c.size);
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.cache_corrupt, corrupt_before + 1);
    krt_cubin_free(&c);
}

static void test_corrupt_entry_is_recompiled(void **state)
{
    const char *dir = *state;
    krt_source src = pattern_source();
    krt_cubin orig;
    rg_err err;
    assert_int_equal(krt_compile(&src, 90, &orig, &err), 0);
    char *path = entry_path(dir, &orig);
    damage(path, -1, -1);          /* last payload byte: checksum mismatch */
    expect_recompiled(&src, &orig, 0);
    damage(path, 0, -1);           /* magic */
    expect_recompiled(&src, &orig, 1);
    damage(path, 0, 30);           /* truncated inside the header */
    expect_recompiled(&src, &orig, 2);
    damage(path, 0, 100);          /* truncated payload */
    expect_recompiled(&src, &orig, 3);
    damage(path, 12, -1);          /* key inside the header */
    expect_recompiled(&src, &orig, 4);
    /* The rewritten entry is valid again. */
    krt_cubin c;
    assert_int_equal(krt_compile(&src, 90, &c, &err), 0);
    assert_int_equal(c.from_cache, 1);
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.compiles, 6);
    assert_int_equal(st.cache_hits, 1);
    krt_cubin_free(&c);
    krt_cubin_free(&orig);
    free(path);
}

static void test_keys_depend_on_every_input(void **state)
{
    (void)state;
    const char *opt_a[] = {"-DTILE=16"}, *opt_b[] = {"-DTILE=32"};
    const char *opt_ab[] = {"-DA", "-DB"}, *opt_ba[] = {"-DB", "-DA"};
    krt_source base = pattern_source();
    krt_source fast = base, tile16 = base, tile32 = base, ab = base, ba = base, other = base;
    fast.fast_math = 1;
    tile16.options = opt_a, tile16.num_options = 1;
    tile32.options = opt_b, tile32.num_options = 1;
    ab.options = opt_ab, ab.num_options = 2;
    ba.options = opt_ba, ba.num_options = 2;
    other.code = "extern \"C\" __global__ void k(){}\n";
    char keys[8][33];
    krt_cache_key(&base, 90, keys[0]);
    krt_cache_key(&base, 80, keys[1]);
    krt_cache_key(&fast, 90, keys[2]);
    krt_cache_key(&tile16, 90, keys[3]);
    krt_cache_key(&tile32, 90, keys[4]);
    krt_cache_key(&ab, 90, keys[5]);
    krt_cache_key(&ba, 90, keys[6]);
    krt_cache_key(&other, 90, keys[7]);
    for (int i = 0; i < 8; i++)
        for (int j = i + 1; j < 8; j++) assert_string_not_equal(keys[i], keys[j]);
    char again[33];
    krt_source renamed = base;
    renamed.name = "another_name.cu";   /* the name does not change the code */
    krt_cache_key(&renamed, 90, again);
    assert_string_equal(again, keys[0]);
}

static void expect_dir(const char *want)
{
    char *d = krt_cache_dir();
    if (!want) {
        assert_null(d);
        return;
    }
    assert_non_null(d);
    assert_string_equal(d, want);
    free(d);
}

static void test_cache_dir_from_environment(void **state)
{
    (void)state;
    char *home = getenv("HOME") ? rg_xstrdup(getenv("HOME")) : NULL;
    char *xdg = getenv("XDG_CACHE_HOME") ? rg_xstrdup(getenv("XDG_CACHE_HOME")) : NULL;
    setenv("RGNN_KCACHE", "/k/cache", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    expect_dir("/k/cache");
    unsetenv("RGNN_KCACHE");
    expect_dir("/xdg/rgnn/cubin");
    unsetenv("XDG_CACHE_HOME");
    expect_dir("/home/u/.cache/rgnn/cubin");
    setenv("RGNN_KCACHE", "off", 1);
    expect_dir(NULL);
    unsetenv("RGNN_KCACHE");
    if (home) setenv("HOME", home, 1);
    else unsetenv("HOME");
    if (xdg) setenv("XDG_CACHE_HOME", xdg, 1);
    free(home);
    free(xdg);
}

static void test_cache_off_still_compiles(void **state)
{
    (void)state;
    setenv("RGNN_KCACHE", "off", 1);
    krt_source src = pattern_source();
    krt_cubin a, b;
    rg_err err;
    assert_int_equal(krt_compile(&src, 90, &a, &err), 0);
    assert_int_equal(krt_compile(&src, 90, &b, &err), 0);
    assert_int_equal(b.from_cache, 0);
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.compiles, 2);
    assert_int_equal(st.cache_hits + st.cache_misses, 0);
    krt_cubin_free(&a);
    krt_cubin_free(&b);
}

static void test_unwritable_cache_is_not_fatal(void **state)
{
    const char *dir = *state;
    char *file = tu_write_file(dir, "plain_file", "x");
    char *below = rg_xasprintf("%s/sub", file);   /* a folder under a file cannot exist */
    setenv("RGNN_KCACHE", below, 1);
    krt_source src = pattern_source();
    krt_cubin c;
    rg_err err;
    assert_int_equal(krt_compile(&src, 90, &c, &err), 0);
    assert_true(is_elf(&c));
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.cache_write_errors, 1);
    krt_cubin_free(&c);
    free(below);
    free(file);
}

static void test_unsupported_arch(void **state)
{
    (void)state;
    krt_source src = pattern_source();
    krt_cubin c;
    rg_err err;
    assert_int_equal(krt_compile(&src, 12, &c, &err), -1);
    assert_non_null(strstr(err.msg, "cannot compile for sm_12"));
    assert_non_null(strstr(err.msg, " 90"));
    assert_false(krt_arch_supported(12));
    assert_true(krt_arch_supported(90));
    krt_cubin_free(&c);
}

typedef struct worker {
    int first, count, failures;
    unsigned char first_byte_sum;
} worker;

static void *compile_variants(void *arg)
{
    worker *w = arg;
    for (int i = w->first; i < w->first + w->count; i++) {
        char def[32];
        snprintf(def, sizeof def, "-DVARIANT=%d", i);
        const char *opts[] = {def};
        krt_source src = {"variant.cu",
                          "extern \"C\" __global__ void v(int *o) { o[0] = VARIANT; }\n", 0,
                          opts, 1};
        krt_cubin c;
        rg_err err;
        if (krt_compile(&src, 90, &c, &err) || !is_elf(&c)) w->failures++;
        krt_cubin_free(&c);
    }
    return NULL;
}

static void run_workers(int nthreads, int per_thread)
{
    pthread_t t[8];
    worker w[8];
    for (int i = 0; i < nthreads; i++) {
        w[i] = (worker){i * per_thread, per_thread, 0, 0};
        assert_int_equal(pthread_create(&t[i], NULL, compile_variants, &w[i]), 0);
    }
    for (int i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
}

static void test_parallel_compiles_share_counters(void **state)
{
    const char *dir = *state;
    run_workers(4, 2);
    krt_stats st;
    krt_stats_get(&st);
    assert_int_equal(st.compiles, 8);
    assert_int_equal(st.cache_misses, 8);
    run_workers(4, 2);
    krt_stats_get(&st);
    assert_int_equal(st.compiles, 8);
    assert_int_equal(st.cache_hits, 8);
    /* Only the 8 entries: no temporary file was left behind. */
    DIR *d = opendir(dir);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) files += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(files, 8);
}

/* ---- Without a device ------------------------------------------------------------------ */

static void expect_no_device(const rg_err *err)
{
    assert_int_equal(strncmp(err->msg, "no CUDA device: ", 16), 0);
    assert_null(strchr(err->msg, '\n'));
}

static void test_init_without_device(void **state)
{
    (void)state;
    rg_err err;
    krt_device dev;
    if (krt_have_device()) {
        assert_int_equal(krt_init(0, &dev, &err), 0);
        assert_true(dev.sm >= 50);
        assert_true(dev.sm_count > 0);
        assert_true(dev.total_mem > 0);
        assert_true(dev.name[0] != 0);
        assert_int_equal(krt_init(4096, &dev, &err), -1);
        assert_non_null(strstr(err.msg, "does not exist"));
        return;
    }
    assert_int_equal(krt_init(0, &dev, &err), -1);
    expect_no_device(&err);
    void *p = (void *)1;
    assert_int_equal(krt_alloc(&p, 64, &err), -1);
    assert_null(p);
    expect_no_device(&err);
    assert_int_equal(krt_sync(&err), -1);
    expect_no_device(&err);
    krt_source src = pattern_source();
    krt_cubin c;
    krt_module *m;
    assert_int_equal(krt_compile(&src, 90, &c, &err), 0);   /* compiling needs no device */
    assert_int_equal(krt_module_load(&c, &m, &err), -1);
    expect_no_device(&err);
    krt_cubin_free(&c);
}

/* ---- With a device ----------------------------------------------------------------------- */

static krt_device gpu;

/* Compiles `code` for the device and returns the kernel `name` (module in *mod). */
static void load_kernel(const char *code, const char *name, krt_module **mod, krt_kernel *k)
{
    rg_err err;
    if (krt_init(0, &gpu, &err)) fail_msg("%s", err.msg);
    krt_source src = {"test.cu", code, 0, NULL, 0};
    krt_cubin c;
    if (krt_compile(&src, gpu.sm, &c, &err)) fail_msg("%s", err.msg);
    if (krt_module_load(&c, mod, &err)) fail_msg("%s", err.msg);
    krt_cubin_free(&c);
    if (krt_get_kernel(*mod, name, k, &err)) fail_msg("%s", err.msg);
}

static void test_launch_writes_pattern(void **state)
{
    (void)state;
    REQUIRE_GPU();
    krt_module *m;
    krt_kernel k;
    load_kernel(PATTERN_SRC, "fill_pattern", &m, &k);
    assert_true(k.num_regs > 0);
    enum { N = 1000, PAD = 24 };
    float *dev, host[N + PAD];
    rg_err err;
    assert_int_equal(krt_alloc((void **)&dev, sizeof host, &err), 0);
    assert_int_equal(krt_poison(dev, sizeof host, &err), 0);
    int n = N;
    float scale = 3.0f;
    void *args[] = {&dev, &n, &scale};
    krt_dim3 grid = {(N + 127) / 128, 1, 1}, block = {128, 1, 1};
    if (krt_launch(&k, grid, block, 0, args, &err)) fail_msg("%s", err.msg);
    if (krt_sync(&err)) fail_msg("%s", err.msg);
    assert_int_equal(krt_download(host, dev, sizeof host, &err), 0);
    for (int i = 0; i < N; i++) assert_float_equal(host[i], 3.0f * i + 7.0f, 0.0);
    for (int i = N; i < N + PAD; i++) assert_true(isnan(host[i]));   /* never written */
    krt_free(dev);
    krt_module_unload(m);
}

static void test_poison_and_memset(void **state)
{
    (void)state;
    REQUIRE_GPU();
    rg_err err;
    assert_int_equal(krt_init(0, NULL, &err), 0);
    enum { BYTES = 4096 };
    unsigned char *dev, host[BYTES];
    assert_int_equal(krt_alloc((void **)&dev, BYTES, &err), 0);
    assert_int_equal(krt_poison(dev, BYTES, &err), 0);
    assert_int_equal(krt_download(host, dev, BYTES, &err), 0);
    for (int i = 0; i < BYTES; i++) assert_int_equal(host[i], 0xFF);
    float f;
    memcpy(&f, host, sizeof f);
    assert_true(isnan(f));
    assert_int_equal(krt_memset(dev + 100, 0, 200, &err), 0);
    for (int i = 0; i < BYTES; i++) host[i] = 0x11;
    assert_int_equal(krt_upload(dev + 1000, host, 10, &err), 0);
    assert_int_equal(krt_download(host, dev, BYTES, &err), 0);
    for (int i = 0; i < BYTES; i++) {
        int want = i >= 100 && i < 300 ? 0 : i >= 1000 && i < 1010 ? 0x11 : 0xFF;
        assert_int_equal(host[i], want);
    }
    krt_free(dev);
}

static void test_missing_kernel_and_bad_launch(void **state)
{
    (void)state;
    REQUIRE_GPU();
    krt_module *m;
    krt_kernel k, missing;
    load_kernel(PATTERN_SRC, "fill_pattern", &m, &k);
    rg_err err;
    assert_int_equal(krt_get_kernel(m, "no_such_kernel", &missing, &err), -1);
    assert_non_null(strstr(err.msg, "no_such_kernel"));
    assert_non_null(strstr(err.msg, "cudaError"));
    float *dev;
    assert_int_equal(krt_alloc((void **)&dev, 64 * sizeof(float), &err), 0);
    int n = 64;
    float scale = 1.0f;
    void *args[] = {&dev, &n, &scale};
    krt_dim3 one = {1, 1, 1}, too_big = {4096, 1, 1}, empty = {0, 1, 1};
    assert_int_equal(krt_launch(&k, one, too_big, 0, args, &err), -1);
    /* CUDA 13 on an H100 says cudaErrorInvalidValue; older releases InvalidConfiguration. */
    if (!strstr(err.msg, "cudaErrorInvalidConfiguration") && !strstr(err.msg, "cudaErrorInvalidValue"))
        fail_msg("unexpected: %s", err.msg);
    assert_int_equal(krt_launch(&k, empty, one, 0, args, &err), -1);
    /* Neither failure is sticky: a correct launch still runs. */
    krt_dim3 block = {64, 1, 1};
    if (krt_launch(&k, one, block, 0, args, &err)) fail_msg("%s", err.msg);
    if (krt_sync(&err)) fail_msg("%s", err.msg);
    float host[64];
    assert_int_equal(krt_download(host, dev, sizeof host, &err), 0);
    assert_float_equal(host[63], 63.0f + 7.0f, 0.0);
    krt_free(dev);
    krt_module_unload(m);
}

static void test_cubin_for_other_arch_is_refused(void **state)
{
    (void)state;
    REQUIRE_GPU();
    rg_err err;
    assert_int_equal(krt_init(0, &gpu, &err), 0);
    /* Cubins run only within one major version: pick one this device cannot run. */
    int other = gpu.cc_major == 8 ? 90 : 80;
    krt_source src = pattern_source();
    krt_cubin c;
    krt_module *m;
    assert_int_equal(krt_compile(&src, other, &c, &err), 0);
    if (krt_module_load(&c, &m, &err) == 0) fail_msg("an sm_%d cubin loaded on sm_%d", other, gpu.sm);
    if (!strstr(err.msg, "cannot load a cubin for sm_")) fail_msg("unexpected: %s", err.msg);
    krt_cubin_free(&c);
    assert_int_equal(krt_sync(&err), 0);
}

static const char *SMEM_SRC =
    "extern \"C\" __global__ void smem_sum(float *out, int n)\n"
    "{\n"
    "    extern __shared__ float buf[];\n"
    "    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = (float)i;\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) { float s = 0; for (int i = 0; i < n; i++) s += buf[i]; out[0] = s; }\n"
    "}\n";

static void test_large_dynamic_shared_memory(void **state)
{
    (void)state;
    REQUIRE_GPU();
    krt_module *m;
    krt_kernel k;
    load_kernel(SMEM_SRC, "smem_sum", &m, &k);
    size_t shmem = 96 * 1024;   /* above the 48 KiB default: needs the opt-in */
    if ((size_t)gpu.max_smem_per_block_optin < shmem) {
        krt_module_unload(m);
        printf("skip: device allows only %d bytes of shared memory\n", gpu.max_smem_per_block_optin);
        skip();
    }
    rg_err err;
    float *dev, result = 0;
    assert_int_equal(krt_alloc((void **)&dev, sizeof(float), &err), 0);
    int n = (int)(shmem / sizeof(float));
    void *args[] = {&dev, &n};
    krt_dim3 one = {1, 1, 1}, block = {256, 1, 1};
    if (krt_launch(&k, one, block, shmem, args, &err)) fail_msg("%s", err.msg);
    if (krt_sync(&err)) fail_msg("%s", err.msg);
    assert_int_equal(krt_download(&result, dev, sizeof result, &err), 0);
    assert_float_equal(result, (double)n * (n - 1) / 2, 1e-3 * n * n);
    krt_free(dev);
    krt_module_unload(m);
}

/* Writes a terabyte past its buffer: an illegal address the sync must report. Sticky, so
 * this test runs last in the binary. */
static void test_out_of_bounds_fault_is_reported(void **state)
{
    (void)state;
    REQUIRE_GPU();
    krt_module *m;
    krt_kernel k;
    load_kernel("extern \"C\" __global__ void write_far(float *out)\n"
                "{ out[(1ull << 38) + threadIdx.x] = 1.0f; }\n",
                "write_far", &m, &k);
    rg_err err;
    float *dev;
    assert_int_equal(krt_alloc((void **)&dev, 256, &err), 0);
    void *args[] = {&dev};
    krt_dim3 one = {1, 1, 1}, block = {32, 1, 1};
    int rc = krt_launch(&k, one, block, 0, args, &err);
    if (rc == 0) rc = krt_sync(&err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err.msg, "cudaErrorIllegalAddress"));
    assert_non_null(strstr(err.msg, "sticky"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compile_sm80_and_sm90, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_syntax_error_carries_log, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_second_compile_is_cache_hit, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_corrupt_entry_is_recompiled, with_cache_dir, drop_cache_dir),
        cmocka_unit_test(test_keys_depend_on_every_input),
        cmocka_unit_test(test_cache_dir_from_environment),
        cmocka_unit_test_setup_teardown(test_cache_off_still_compiles, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_unwritable_cache_is_not_fatal, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_unsupported_arch, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_parallel_compiles_share_counters, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_init_without_device, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_launch_writes_pattern, with_cache_dir, drop_cache_dir),
        cmocka_unit_test(test_poison_and_memset),
        cmocka_unit_test_setup_teardown(test_missing_kernel_and_bad_launch, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_cubin_for_other_arch_is_refused, with_cache_dir, drop_cache_dir),
        cmocka_unit_test_setup_teardown(test_large_dynamic_shared_memory, with_cache_dir, drop_cache_dir),
        /* Must stay last: the fault it provokes leaves the CUDA context unusable. */
        cmocka_unit_test_setup_teardown(test_out_of_bounds_fault_is_reported, with_cache_dir, drop_cache_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
