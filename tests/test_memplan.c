/* Tests of the memory planner: accounting, peak, the byte limit and allocator failures as
 * OOM statuses (with a fake allocator on the CPU), size parsing, and real cudaMalloc. */
#include "tests/testutil.h"
#include "runtime/memplan.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE_GPU() \
    do { \
        TU_SKIP_CUPTI_UNDER_ASAN(); \
        if (!krt_have_device()) { \
            if (krt_gpu_required()) fail_msg("RGNN_REQUIRE_GPU=1 but no CUDA device is usable"); \
            printf("skip: no CUDA device\n"); \
            skip(); \
        } \
    } while (0)

/* A fake device: `capacity` bytes, hands out distinct addresses, counts calls. */
typedef struct fake_device {
    size_t capacity, used;
    int allocs, releases, live;
    int fail_other;          /* 1: the next allocation fails with a non-OOM error */
    uintptr_t next_addr;
} fake_device;

static mp_status fake_alloc(void *ctx, size_t bytes, void **ptr, rg_err *err)
{
    fake_device *d = ctx;
    assert_true(bytes > 0);   /* the planner never asks for zero bytes */
    if (d->fail_other) {
        d->fail_other = 0;
        rg_errf(err, "fake device lost");
        return MP_FAIL;
    }
    if (bytes > d->capacity - d->used) {
        rg_errf(err, "fake cudaMalloc: out of memory");
        return MP_OOM;
    }
    d->used += bytes;
    d->allocs++;
    d->live++;
    *ptr = (void *)(d->next_addr += 4096);
    return MP_OK;
}

static void fake_release(void *ctx, void *ptr, size_t bytes)
{
    fake_device *d = ctx;
    assert_non_null(ptr);
    assert_true(d->used >= bytes);
    d->used -= bytes;
    d->releases++;
    d->live--;
}

static mp_allocator fake_allocator(fake_device *d)
{
    memset(d, 0, sizeof *d);
    d->capacity = (size_t)-1;
    mp_allocator a = {d, fake_alloc, fake_release};
    return a;
}

static void test_accounting_and_peak(void **state)
{
    (void)state;
    fake_device dev;
    mp_plan *p = mp_new(fake_allocator(&dev), 0);
    rg_err err;
    int x = mp_declare(p, "x", 1000, &err), w = mp_declare(p, "w", 300, &err);
    int msg = mp_declare(p, "msg", 5000, &err);
    assert_true(x >= 0 && w >= 0 && msg >= 0);
    assert_int_equal(mp_count(p), 3);
    assert_int_equal(mp_declared_bytes(p), 6300);
    assert_int_equal(mp_current_bytes(p), 0);
    assert_int_equal(mp_alloc(p, x, &err), MP_OK);
    assert_int_equal(mp_alloc(p, msg, &err), MP_OK);
    assert_int_equal(mp_current_bytes(p), 6000);
    assert_non_null(mp_ptr(p, msg));
    assert_ptr_not_equal(mp_ptr(p, x), mp_ptr(p, msg));
    /* Allocated once: asking again changes nothing. */
    void *before = mp_ptr(p, x);
    assert_int_equal(mp_alloc(p, x, &err), MP_OK);
    assert_ptr_equal(mp_ptr(p, x), before);
    assert_int_equal(dev.allocs, 2);
    mp_release(p, msg);
    assert_false(mp_is_live(p, msg));
    assert_null(mp_ptr(p, msg));
    assert_int_equal(mp_current_bytes(p), 1000);
    assert_int_equal(mp_alloc(p, w, &err), MP_OK);
    assert_int_equal(mp_current_bytes(p), 1300);
    assert_int_equal(mp_peak_bytes(p), 6000);
    assert_int_equal(dev.used, 1300);
    mp_destroy(p);
    assert_int_equal(dev.live, 0);
    assert_int_equal(dev.used, 0);
}

static void test_declare_rules(void **state)
{
    (void)state;
    fake_device dev;
    mp_plan *p = mp_new(fake_allocator(&dev), 0);
    rg_err err;
    int a = mp_declare(p, "a", 64, &err);
    assert_int_equal(mp_declare(p, "a", 64, &err), a);
    assert_int_equal(mp_declare(p, "a", 65, &err), -1);
    assert_non_null(strstr(err.msg, "'a'"));
    assert_int_equal(mp_declare(p, "", 8, &err), -1);
    assert_int_equal(mp_find(p, "a"), a);
    assert_int_equal(mp_find(p, "b"), -1);
    assert_string_equal(mp_name(p, a), "a");
    assert_int_equal(mp_bytes(p, a), 64);
    /* A zero-byte tensor (an empty relation) is live without touching the allocator. */
    int empty;
    assert_int_equal(mp_request(p, "empty", 0, &empty, &err), MP_OK);
    assert_true(mp_is_live(p, empty));
    assert_null(mp_ptr(p, empty));
    assert_int_equal(dev.allocs, 0);
    assert_int_equal(mp_request(p, "a", 99, NULL, &err), MP_FAIL);
    mp_destroy(p);
}

static void test_limit_gives_oom_status(void **state)
{
    (void)state;
    fake_device dev;
    mp_plan *p = mp_new(fake_allocator(&dev), 10000);
    rg_err err;
    int a, b;
    assert_int_equal(mp_request(p, "feat", 6000, &a, &err), MP_OK);
    assert_int_equal(mp_request(p, "edge_msg", 4001, &b, &err), MP_OOM);
    assert_non_null(strstr(err.msg, "out of device memory"));
    assert_non_null(strstr(err.msg, "'edge_msg'"));
    assert_non_null(strstr(err.msg, "4001 bytes"));
    assert_non_null(strstr(err.msg, "10000 bytes"));   /* the limit */
    assert_false(mp_is_live(p, b));
    assert_int_equal(mp_current_bytes(p), 6000);
    assert_int_equal(dev.allocs, 1);   /* refused before reaching the allocator */
    /* Exactly at the limit is allowed; after a release the tensor fits. */
    int c;
    assert_int_equal(mp_request(p, "fits", 4000, &c, &err), MP_OK);
    assert_int_equal(mp_current_bytes(p), 10000);
    mp_release(p, c);
    mp_release(p, a);
    assert_int_equal(mp_alloc(p, b, &err), MP_OK);
    assert_int_equal(mp_peak_bytes(p), 10000);
    /* A request near SIZE_MAX must not wrap the arithmetic around. */
    assert_int_equal(mp_request(p, "huge", (size_t)-1, NULL, &err), MP_OOM);
    assert_int_equal(mp_limit_bytes(p), 10000);
    mp_destroy(p);
}

static void test_allocator_failures(void **state)
{
    (void)state;
    fake_device dev;
    mp_plan *p = mp_new(fake_allocator(&dev), 0);
    dev.capacity = 5000;
    rg_err err;
    assert_int_equal(mp_declare(p, "x", 3000, &err), 0);
    assert_int_equal(mp_declare(p, "y", 3000, &err), 1);
    assert_int_equal(mp_declare(p, "z", 10, &err), 2);
    assert_int_equal(mp_alloc_all(p, &err), MP_OOM);   /* stops at y */
    assert_non_null(strstr(err.msg, "out of device memory"));
    assert_non_null(strstr(err.msg, "'y'"));
    assert_non_null(strstr(err.msg, "fake cudaMalloc: out of memory"));
    assert_true(mp_is_live(p, 0));
    assert_false(mp_is_live(p, 1));
    assert_false(mp_is_live(p, 2));
    assert_int_equal(mp_current_bytes(p), 3000);
    dev.fail_other = 1;
    assert_int_equal(mp_alloc(p, 2, &err), MP_FAIL);
    assert_non_null(strstr(err.msg, "fake device lost"));
    assert_int_equal(mp_alloc(p, 2, &err), MP_OK);
    mp_destroy(p);
    assert_int_equal(dev.live, 0);
}

static void expect_bytes(const char *text, size_t want)
{
    size_t got = 0;
    rg_err err;
    if (mp_parse_bytes(text, &got, &err)) fail_msg("'%s': %s", text, err.msg);
    if (got != want) fail_msg("'%s' parsed as %zu, want %zu", text, got, want);
}

static void expect_bad_bytes(const char *text)
{
    size_t got = 12345;
    rg_err err;
    if (mp_parse_bytes(text, &got, &err) == 0) fail_msg("'%s' accepted as %zu", text, got);
    assert_non_null(strstr(err.msg, "invalid byte count"));
    assert_int_equal(got, 12345);
}

static void test_parse_bytes(void **state)
{
    (void)state;
    expect_bytes("24GB", 24000000000ULL);
    expect_bytes("24e9", 24000000000ULL);
    expect_bytes("512MiB", 512ULL << 20);
    expect_bytes("1.5KiB", 1536);
    expect_bytes("1.1KB", 1100);
    expect_bytes(" 7 gib ", 7ULL << 30);
    expect_bytes("100", 100);
    expect_bytes("100B", 100);
    expect_bytes("0", 0);
    expect_bytes("2T", 2000000000000ULL);
    expect_bytes(".5MB", 500000);
    expect_bad_bytes("");
    expect_bad_bytes("GB");
    expect_bad_bytes("-1GB");
    expect_bad_bytes("12XB");
    expect_bad_bytes("12 GB extra");
    expect_bad_bytes("0.5B");
    expect_bad_bytes("1e30");
    expect_bad_bytes("nan");
    expect_bad_bytes("inf");
    expect_bad_bytes("0x10");
    char buf[32];
    assert_string_equal(mp_format_bytes(999, buf), "999 B");
    assert_string_equal(mp_format_bytes(24000000000ULL, buf), "24.00 GB");
    assert_string_equal(mp_format_bytes(1536, buf), "1.54 KB");
}

static void test_cuda_allocator(void **state)
{
    (void)state;
    mp_plan *p = mp_new(mp_cuda_allocator(), 0);
    rg_err err;
    int id;
    if (!krt_have_device()) {
        assert_int_equal(mp_request(p, "x", 1024, &id, &err), MP_FAIL);
        assert_non_null(strstr(err.msg, "no CUDA device: "));
        mp_destroy(p);
        REQUIRE_GPU();
    }
    assert_int_equal(krt_init(0, NULL, &err), 0);
    size_t free_bytes, total;
    assert_int_equal(krt_mem_info(&free_bytes, &total, &err), 0);
    assert_int_equal(mp_request(p, "x", 1 << 20, &id, &err), MP_OK);
    assert_non_null(mp_ptr(p, id));
    assert_int_equal(krt_memset(mp_ptr(p, id), 0, 1 << 20, &err), 0);
    /* More than the device has: an OOM status and a usable device afterwards. */
    int big;
    assert_int_equal(mp_request(p, "too_big", total * 2, &big, &err), MP_OOM);
    assert_non_null(strstr(err.msg, "'too_big'"));
    assert_non_null(strstr(err.msg, "cudaErrorMemoryAllocation"));
    int y;
    assert_int_equal(mp_request(p, "y", 4096, &y, &err), MP_OK);
    assert_int_equal(krt_sync(&err), 0);
    assert_int_equal(mp_current_bytes(p), (1 << 20) + 4096);
    mp_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accounting_and_peak),
        cmocka_unit_test(test_declare_rules),
        cmocka_unit_test(test_limit_gives_oom_status),
        cmocka_unit_test(test_allocator_failures),
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_cuda_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
