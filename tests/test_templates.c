/* Tests of the device helpers put in front of each generated kernel: every helper a .cu file
 * defines is called in it (nvcc warns, #177, about the others), checked on the default space
 * by reading the text, and by nvcc itself where it is installed. */
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "codegen/pipeline.h"
#include "explorer/space.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MAX_HELPERS 32

static int is_ident(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* Names of the __device__ functions a source defines (the identifier before the first '('
 * after each `__device__`). Returns how many. */
static int device_functions(const char *src, char names[][64], int max)
{
    int n = 0;
    for (const char *p = strstr(src, "__device__"); p; p = strstr(p + 1, "__device__")) {
        const char *paren = strchr(p, '(');
        if (!paren) break;
        const char *end = paren;
        while (end > p && end[-1] == ' ') end--;
        const char *start = end;
        while (start > p && is_ident(start[-1])) start--;
        if (end == start || end - start >= 64) fail_msg("cannot read a helper's name in:\n%.200s", p);
        if (n == max) fail_msg("more than %d device functions", max);
        snprintf(names[n++], 64, "%.*s", (int)(end - start), start);
    }
    return n;
}

/* Occurrences of `name` as a whole identifier. */
static int mentions(const char *src, const char *name)
{
    int count = 0;
    size_t len = strlen(name);
    for (const char *p = strstr(src, name); p; p = strstr(p + 1, name))
        if ((p == src || !is_ident(p[-1])) && !is_ident(p[len])) count++;
    return count;
}

/* Each unique kernel source of the default space of one model and task, with fn applied. */
static int for_each_kernel(const char *model, const char *task, const ir_dims *dims,
                           void (*fn)(const kp_kernel *k, void *ctx), void *ctx)
{
    sp_space sp;
    sp_point *pts;
    int n, seen_n = 0, seen_cap = 0, kernels = 0;
    uint64_t *seen = NULL;
    rg_err err;
    assert_int_equal(sp_load("default", &sp, &err), 0);
    assert_int_equal(sp_enumerate(&sp, &pts, &n, &err), 0);
    pl_problem p = {.model = model, .task = task, .dims = *dims};
    for (int i = 0; i < n; i++) {
        if (!pts[i].valid) continue;
        ir_program *ir;
        lw_program *lp;
        cg_variant v;
        int rc = pl_build(&p, &pts[i].cfg, NULL, NULL, &ir, &lp, &err);
        if (rc == PL_INAPPLICABLE) continue;   /* softmax=single for rgcn */
        if (rc || cg_build(ir, lp, &pts[i].cfg, &v, &err))
            fail_msg("%s %s variant %d: %s", model, task, i, err.msg);
        for (int k = 0; k < v.plan.nkernels; k++) {
            const char *src = v.plan.kernels[k].source;
            uint64_t h = rg_fnv1a64(src, strlen(src), RG_FNV_SEED);
            int dup = 0;
            for (int j = 0; j < seen_n && !dup; j++) dup = seen[j] == h;
            if (dup) continue;
            if (seen_n == seen_cap) seen = rg_xrealloc(seen, (size_t)(seen_cap = 2 * seen_cap + 64) * sizeof *seen);
            seen[seen_n++] = h;
            fn(&v.plan.kernels[k], ctx);
            kernels++;
        }
        cg_variant_free(&v);
        lw_free(lp);
        ir_free(ir);
    }
    free(seen);
    free(pts);
    return kernels;
}

static void check_helpers_called(const kp_kernel *k, void *ctx)
{
    int *helpers = ctx;
    char names[MAX_HELPERS][64];
    int n = device_functions(k->source, names, MAX_HELPERS);
    for (int i = 0; i < n; i++)
        if (mentions(k->source, names[i]) < 2)
            fail_msg("%s defines the helper %s but never calls it:\n%s", k->name, names[i], k->source);
    *helpers += n;
}

#define MODELS tu_models
static const char *TASKS[] = {"infer", "train"};
static const ir_dims DIMS[] = {{64, 64, 1}, {32, 16, 4}};

static void test_every_helper_is_called(void **state)
{
    (void)state;
    int kernels = 0, helpers = 0;
    for (int m = 0; m < tu_nmodels; m++)
        for (int t = 0; t < 2; t++)
            for (int d = 0; d < 2; d++) {
                ir_dims md = tu_model_dims(MODELS[m], &DIMS[d]);
                kernels += for_each_kernel(MODELS[m], TASKS[t], &md, check_helpers_called, &helpers);
            }
    printf("%d unique kernels, %d helper definitions, each called\n", kernels, helpers);
    /* the traversals of RGAT call lrelu, compact forms call compact_find: helpers do appear */
    assert_true(kernels > 0 && helpers > 0);
}

/* ---- nvcc's own verdict, on one kernel of each category and set of helpers ---- */

typedef struct by_helpers {
    int n;
    char keys[64][256];   /* category and the helper names a source defines */
    char *sources[64];
} by_helpers;

static void keep_one_per_helper_set(const kp_kernel *k, void *ctx)
{
    by_helpers *b = ctx;
    char names[MAX_HELPERS][64], key[256];
    snprintf(key, sizeof key, "%s: ", kp_category_name(k->category));
    int n = device_functions(k->source, names, MAX_HELPERS);
    for (int i = 0; i < n; i++) {
        if (strlen(key) + strlen(names[i]) + 2 > sizeof key) fail_msg("too many helpers in %s", k->name);
        strcat(strcat(key, names[i]), " ");
    }
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->keys[i], key)) return;
    if (b->n == 64) return;
    snprintf(b->keys[b->n], sizeof b->keys[b->n], "%s", key);
    b->sources[b->n++] = rg_xstrdup(k->source);
}

/* 1 when nvcc's log warns about a function (an unused helper is #177 "function ... was
 * declared but never referenced"). Warnings about a kernel's own variables are not this
 * test's subject. */
static int helper_warning(const char *log)
{
    for (const char *p = strstr(log, "warning"); p; p = strstr(p + 1, "warning")) {
        const char *eol = strchr(p, '\n'), *f = strstr(p, ": function \"");
        if (f && (!eol || f < eol)) return 1;
    }
    return 0;
}

static const char *nvcc_path(void)
{
    const char *env = getenv("NVCC");
    if (env && *env) return env;
    return rg_file_exists("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : NULL;
}

static void test_nvcc_warns_about_no_helper(void **state)
{
    (void)state;
    const char *nvcc = nvcc_path();
    if (!nvcc) {
        printf("skip: no nvcc (/usr/local/cuda/bin/nvcc or $NVCC)\n");
        skip();
    }
    by_helpers b = {0};
    for (int m = 0; m < tu_nmodels; m++)
        for (int t = 0; t < 2; t++) {
            ir_dims md = tu_model_dims(MODELS[m], &DIMS[1]);
            for_each_kernel(MODELS[m], TASKS[t], &md, keep_one_per_helper_set, &b);
        }
    char *dir = tu_tmpdir();
    int bad = 0;
    for (int i = 0; i < b.n; i++) {
        char name[32];
        snprintf(name, sizeof name, "k%d.cu", i);
        char *path = tu_write_file(dir, name, b.sources[i]);
        char *cmd = rg_xasprintf("'%s' -cubin -arch=sm_90 -std=c++17 -o /dev/null '%s' > '%s.log' 2>&1", nvcc, path, path);
        int rc = system(cmd);
        char *logpath = rg_xasprintf("%s.log", path);
        char *log = tu_read_file(logpath, NULL);
        if (rc != 0 || !log || helper_warning(log)) {
            printf("nvcc on %s (%s) exit %d:\n%s\n", path, b.keys[i], WIFEXITED(rc) ? WEXITSTATUS(rc) : -1,
                   log ? log : "(no log)");
            bad++;
        }
        free(log);
        free(logpath);
        free(cmd);
        free(path);
        free(b.sources[i]);
    }
    tu_rm_tree(dir);
    if (bad) fail_msg("%d of %d kernels draw nvcc errors or warnings about functions (above)", bad, b.n);
    printf("nvcc: %d kernels (one per category and set of helpers), no warning about a function\n", b.n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_helper_is_called),
        cmocka_unit_test(test_nvcc_warns_about_no_helper),
    };
    return cmocka_run_group_tests_name("templates", tests, NULL, NULL);
}
