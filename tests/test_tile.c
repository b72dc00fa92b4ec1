/* Tests of the GEMM tile axis (8 to 128): the validity rules of each value, the emitted text of
 * tiles 16/32/64 as it was before the K step was decoupled, and NVRTC compiling the new tiles. */
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "codegen/pipeline.h"
#include "runtime/exec.h"
#include "tests/kcover.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

static int build_dims(const char *model, const char *task, const ir_dims *d, const char *kv, cg_variant *v,
                      rg_err *err)
{
    cg_config cfg;
    cfg_default(&cfg);
    if (cfg_parse(&cfg, kv, err) || cfg_validate(&cfg, err)) return -1;
    pl_problem p = {.model = model, .task = task, .dims = *d};
    ir_program *ir;
    lw_program *lp;
    int rc = pl_build(&p, &cfg, NULL, NULL, &ir, &lp, err);
    if (rc) return rc;
    rc = cg_build(ir, lp, &cfg, v, err);
    lw_free(lp);
    ir_free(ir);
    return rc;
}

/* The validity verdict of a config string and, when invalid, whether the reason names `why`. */
static void expect_rule(const char *kv, const char *why)
{
    cg_config c;
    rg_err err;
    cfg_default(&c);
    if (cfg_parse(&c, kv, &err)) fail_msg("%s does not parse: %s", kv, err.msg);
    int rc = cfg_validate(&c, &err);
    if (!why && rc) fail_msg("%s: %s", kv, err.msg);
    if (why && !rc) fail_msg("%s is valid; expected: %s", kv, why);
    if (why && !strstr(err.msg, why)) fail_msg("%s: \"%s\" does not say \"%s\"", kv, err.msg, why);
}

/* Tile 128 fits a block only with 4 or more rows per thread, tile 8 only with one (a full warp);
 * neither runs on tensor cores; the sub-warp blocks of tile 16 stay valid (they were measured). */
static void test_tile_rules(void **state)
{
    (void)state;
    expect_rule("tile=128,coarsen=1", "needs 4096 threads per block (limit 1024)");
    expect_rule("tile=128,coarsen=2", "needs 2048 threads per block (limit 1024)");
    expect_rule("tile=128,coarsen=4", "1024 threads per block: the weight-gradient outer product then cannot launch");
    expect_rule("tile=128,coarsen=8", NULL);
    expect_rule("tile=128,coarsen=16", NULL);
    expect_rule("tile=128,coarsen=8,w=reg", "only tiles up to 32 fit in registers");
    expect_rule("tile=128,coarsen=8,mma=tf32", "over the 48 KB");
    expect_rule("tile=128,coarsen=8,mma=bf16", "over the 48 KB");
    expect_rule("tile=8,coarsen=1", NULL);
    expect_rule("tile=8,coarsen=1,w=reg,lb=on", NULL);
    expect_rule("tile=8,coarsen=2", "16 threads per block, under a warp");
    expect_rule("tile=8,coarsen=8", "4 threads per block, under a warp");
    expect_rule("tile=8,coarsen=16", "under a warp");
    expect_rule("tile=8,coarsen=1,mma=tf32", "16 x 16 fragment");
    expect_rule("tile=8,coarsen=1,mma=bf16", "16 x 16 fragment");
    expect_rule("tile=16,coarsen=8", NULL);
    expect_rule("tile=16,coarsen=16", NULL);
    expect_rule("tile=64,coarsen=1,mma=tf32", NULL);
    /* per instance: the rule sees each instance's effective config */
    expect_rule("tile=32,gemm_2.tile=8,gemm_2.coarsen=4", "under a warp");
    expect_rule("mma=tf32,gemm_2.tile=128,gemm_2.coarsen=8", "over the 48 KB");
    expect_rule("tile=8,coarsen=1,gemm_2.tile=32,gemm_2.mma=bf16", NULL);
}

/* FNV-1a of the emitter's own text of every GEMM kernel of a variant (from its comment line on:
 * the device helpers in front are templates.c's), in plan order. */
static uint64_t gemm_text_hash(const cg_variant *v, int *ngemm)
{
    uint64_t h = RG_FNV_SEED;
    *ngemm = 0;
    for (int i = 0; i < v->plan.nkernels; i++) {
        const kp_kernel *k = &v->plan.kernels[i];
        if (k->category != KC_GEMM) continue;
        char head[160];
        snprintf(head, sizeof head, "\n/* %s: ", k->name);
        const char *own = strstr(k->source, head);
        if (!own) fail_msg("%s: no comment line naming the kernel", k->name);
        h = rg_fnv1a64(own, strlen(own), h);
        ++*ngemm;
    }
    return h;
}

/* The GEMM kernels of tiles 16, 32 and 64 as the emitter wrote them before the K step was
 * decoupled from the tile (commit a9ce2b7): every form (scalar and vectorized products, W in
 * registers, outer products, tensor cores staged in scalars and in vectors, bfloat16 storage),
 * so stored variants' kernels, cubin cache entries and times stay those of the same text. */
static void test_text_unchanged(void **state)
{
    (void)state;
    static const struct {
        const char *model, *task;
        ir_dims dims;
        const char *config;
        uint64_t hash;
    } golden[] = {
        {"rgat", "train", {64, 64, 1}, "tile=32,coarsen=2", 0xf9b02afab8822b89ull},
        {"rgat", "train", {64, 64, 1}, "tile=16,coarsen=1,lb=on", 0x77e93f1ea2257452ull},
        {"rgat", "train", {64, 64, 1}, "tile=64,coarsen=4", 0xfa9647c887a152d8ull},
        {"rgat", "train", {64, 64, 1}, "tile=64,coarsen=8,store=bf16", 0x6e0e7c4987a19023ull},
        {"rgat", "train", {64, 64, 1}, "tile=16,coarsen=2,w=reg", 0x2023b8ca71e52845ull},
        {"rgat", "train", {64, 64, 1}, "tile=32,coarsen=4,w=reg,compact=off,reorder=off", 0xcf658f989edb91f9ull},
        {"rgat", "train", {64, 64, 1}, "tile=64,coarsen=2,mma=tf32", 0xbbe6209756f93f86ull},
        {"rgat", "train", {64, 64, 1}, "tile=16,coarsen=1,mma=bf16,store=bf16", 0x37d2212a7c148825ull},
        {"hgt", "train", {64, 64, 8}, "tile=16,coarsen=4", 0x9a701e05ac6bfceeull},
        {"hgt", "train", {64, 64, 8}, "tile=32,coarsen=1,mma=bf16", 0x261aa223d8f25365ull},
        {"hgt", "infer", {256, 256, 1}, "tile=64,coarsen=4,mma=tf32,store=bf16", 0xc673437f6ddb0176ull},
        {"rgcn", "train", {30, 30, 1}, "tile=32,coarsen=2", 0x70cdb3a637f9ddf4ull},
        {"rgcn", "train", {30, 30, 1}, "tile=16,coarsen=2,mma=tf32", 0xbab7bcd9b60394baull},
        {"rgcn", "train", {30, 30, 1}, "tile=64,coarsen=8,mma=bf16,store=bf16", 0xd430589ef4806073ull},
    };
    int print = getenv("RGNN_PRINT_GOLDEN") != NULL, bad = 0;
    for (size_t i = 0; i < sizeof golden / sizeof golden[0]; i++) {
        cg_variant v;
        rg_err err;
        if (build_dims(golden[i].model, golden[i].task, &golden[i].dims, golden[i].config, &v, &err))
            fail_msg("%s %s %s: %s", golden[i].model, golden[i].task, golden[i].config, err.msg);
        int n;
        uint64_t h = gemm_text_hash(&v, &n);
        assert_true(n > 0);
        if (print) printf("        {\"%s\", \"%s\", {%d, %d, %d}, \"%s\", 0x%016llxull},\n", golden[i].model,
                          golden[i].task, golden[i].dims.in_dim, golden[i].dims.out_dim, golden[i].dims.heads,
                          golden[i].config, (unsigned long long)h);
        if (h != golden[i].hash) {
            printf("%s %s %s: %d GEMM kernels hash to %016llx, not %016llx\n", golden[i].model, golden[i].task,
                   golden[i].config, n, (unsigned long long)h, (unsigned long long)golden[i].hash);
            bad++;
        }
        cg_variant_free(&v);
    }
    assert_int_equal(bad, 0);
}

/* Static shared memory of kernel `name` in a cubin (an ELF image): the size of its section
 * .nv.shared.<name>, where the linker places the __shared__ variables; 0 when it has none. */
static long cubin_static_smem(const unsigned char *elf, size_t size, const char *name)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
    assert_true(size >= sizeof *eh && !memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64);
    assert_true(eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= size && eh->e_shstrndx < eh->e_shnum);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(elf + eh->e_shoff);
    const char *names = (const char *)elf + sh[eh->e_shstrndx].sh_offset;
    char want[160];
    snprintf(want, sizeof want, ".nv.shared.%s", name);
    long bytes = 0;
    for (int i = 0; i < eh->e_shnum; i++)
        if (!strcmp(names + sh[i].sh_name, want)) bytes += (long)sh[i].sh_size;
    return bytes;
}

/* Tiles 8 and 128 for every model and task (every GEMM form: products with W and W^T, staged in
 * float4s or in scalars, outer products), with the coarsenings the rules allow and W in shared
 * memory or (tile 8) in registers alternating over the six, launch bounds and bfloat16 storage in
 * rotation, and dims 64 and 256 at heads 1 and 8 in rotation: every GEMM kernel is emitted,
 * compiled by NVRTC for sm_90 (ptxas refuses a kernel over 48 KB of static shared memory), and its
 * cubin's shared memory is read back and is under 48 KB. The tensor-core forms are invalid at
 * these tiles (test_tile_rules), so the float32 forms are all there is; the default-space compile
 * tests (test_codegen) add every default-space schedule at dims 64. */
static void test_new_tiles_compile(void **state)
{
    (void)state;
    static const char *const models[] = {"rgcn", "rgat", "hgt"}, *const tasks[] = {"infer", "train"};
    static const ir_dims sizes[] = {{64, 64, 1}, {256, 256, 8}, {64, 64, 8}, {256, 256, 1}};
    static const char *const tiles[2][2] = {{"tile=8,coarsen=1", "tile=8,coarsen=1,w=reg"},
                                            {"tile=128,coarsen=8", "tile=128,coarsen=16"}};
    static const char *const extras[] = {"", ",lb=on,store=bf16", ",store=bf16", ",lb=on"};
    kp_plan plan = {0};
    kc_set seen = {0};
    int variants = 0, inapplicable = 0;
    for (int t = 0; t < 2; t++)
        for (int q = 0; q < 6; q++) {
            const char *model = models[q / 2], *task = tasks[q % 2];
            const ir_dims *d = &sizes[(q + t) % 4];
            char kv[96];
            snprintf(kv, sizeof kv, "%s%s", tiles[t][(q / 2 + q % 2 + t) % 2], extras[(q + 2 * t) % 4]);
            cg_variant v;
            rg_err err;
            int rc = build_dims(model, task, d, kv, &v, &err);
            if (rc == PL_INAPPLICABLE) {
                inapplicable++;
                continue;
            }
            if (rc) fail_msg("%s %s dims %d heads %d %s: %s", model, task, d->in_dim, d->heads, kv, err.msg);
            variants++;
            for (int i = 0; i < v.plan.nkernels; i++) {
                const kp_kernel *kk = &v.plan.kernels[i];
                if (kk->category != KC_GEMM || !kc_set_add(&seen, kc_kernel_class(kk))) continue;
                kp_kernel *c = kp_add_kernel(&plan);
                *c = *kk;
                c->source = rg_xstrdup(kk->source);
            }
            cg_variant_free(&v);
        }
    assert_int_equal(variants, 12);
    kx_compiled c;
    rg_err err;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    long most = 0;
    for (int i = 0; i < c.n; i++) {
        long smem = cubin_static_smem(c.cubins[i].data, c.cubins[i].size, plan.kernels[i].name);
        if (smem > 48 * 1024) fail_msg("%s: %ld bytes of static shared memory", plan.kernels[i].name, smem);
        if (smem > most) most = smem;
    }
    assert_true(most > 32 * 1024);   /* the tile-128 forms: two 35 KB tiles were read back */
    printf("tiles 8 and 128: %d variants (%d not for the model), %d distinct GEMM kernels compiled for sm_90 "
           "(%d from the cache), at most %ld bytes of static shared memory\n",
           variants, inapplicable, plan.nkernels, c.cache_hits, most);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
    kc_set_free(&seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile_rules),
        cmocka_unit_test(test_text_unchanged),
        cmocka_unit_test(test_new_tiles_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
