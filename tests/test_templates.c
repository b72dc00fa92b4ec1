/* Tests of the device helpers put in front of each generated kernel: every helper a .cu file
 * defines is called in it (nvcc warns, #177, about the others), checked on the default space
 * by reading the text, and by nvcc itself where it is installed. */
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "codegen/pipeline.h"
#include "tests/kcover.h"

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

/* ---- the default space's kernels, walked once for both tests ---- */

/* One kernel of each category and set of helpers, for nvcc. */
typedef struct by_helpers {
    int n;
    char keys[64][256];   /* category and the helper names a source defines */
    char *sources[64];
} by_helpers;

static void keep_one_per_helper_set(const kp_kernel *k, by_helpers *b)
{
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

/* What a walk over one problem size found: the text check runs on each kernel as it comes. */
typedef struct walked {
    int done;             /* 1 once every model and task was walked */
    int kernels, helpers;
    by_helpers nvcc;
} walked;

static void check_helpers_called(const kp_kernel *k, void *ctx)
{
    walked *w = ctx;
    char names[MAX_HELPERS][64];
    int n = device_functions(k->source, names, MAX_HELPERS);
    for (int i = 0; i < n; i++)
        if (mentions(k->source, names[i]) < 2)
            fail_msg("%s defines the helper %s but never calls it:\n%s", k->name, names[i], k->source);
    w->helpers += n;
    w->kernels++;
    keep_one_per_helper_set(k, &w->nvcc);
}

#define MODELS tu_models
static const char *TASKS[] = {"infer", "train"};
static const ir_dims DIMS[] = {{64, 64, 1}, {32, 16, 4}};
static walked WALKS[2];   /* per DIMS: the second test reuses what the first walked */

/* Each distinct kernel source of the default space of every model and task at DIMS[d], checked
 * (tests/kcover.h: the points of a new schedule class, the premise checked on 64 others, the space
 * enumerated once for the 24 walks; under `make asan` the pairwise points; PL_INAPPLICABLE points,
 * softmax=single for rgcn, are left out). Once per run. */
static const walked *walk(int d)
{
    walked *w = &WALKS[d];
    if (w->done) return w;
    for (int i = 0; i < w->nvcc.n; i++) free(w->nvcc.sources[i]);   /* an earlier walk that failed */
    *w = (walked){0};
    for (int m = 0; m < tu_nmodels; m++)
        for (int t = 0; t < 2; t++) {
            pl_problem p = {.model = MODELS[m], .task = TASKS[t], .dims = tu_model_dims(MODELS[m], &DIMS[d])};
            kc_walk kw;
            kc_space_kernels("default", &p, 64, NULL, check_helpers_called, w, &kw);
            printf("%s %s: %d of %d points built, %d left out unbuilt (not for this problem)\n", p.model, p.task,
                   kw.built, kw.points, kw.refused);
        }
    w->done = 1;
    return w;
}

static void test_every_helper_is_called(void **state)
{
    (void)state;
    int kernels = 0, helpers = 0;
    for (int d = 0; d < 2; d++) {
        kernels += walk(d)->kernels;
        helpers += walk(d)->helpers;
    }
    printf("%d unique kernels, %d helper definitions, each called\n", kernels, helpers);
    /* the traversals of RGAT call lrelu, compact forms call compact_find: helpers do appear */
    assert_true(kernels > 0 && helpers > 0);
}

/* ---- nvcc's own verdict, on one kernel of each category and set of helpers ---- */

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
    const by_helpers *b = &walk(1)->nvcc;
    char *dir = tu_tmpdir();
    for (int i = 0; i < b->n; i++) {
        char name[32];
        snprintf(name, sizeof name, "k%d.cu", i);
        free(tu_write_file(dir, name, b->sources[i]));
    }
    /* two at a time (CI has two cores); each writes its log and exit status beside its source */
    char *cmd = rg_xasprintf("cd '%s' && ls k*.cu | xargs -P 2 -I{} sh -c \"'%s' -cubin -arch=sm_90 -std=c++17 "
                             "-o /dev/null {} > {}.log 2>&1; echo \\$? > {}.rc\"", dir, nvcc);
    if (system(cmd) != 0) fail_msg("%s failed", cmd);
    free(cmd);
    int bad = 0;
    for (int i = 0; i < b->n; i++) {
        char *logpath = rg_xasprintf("%s/k%d.cu.log", dir, i), *rcpath = rg_xasprintf("%s/k%d.cu.rc", dir, i);
        char *log = tu_read_file(logpath, NULL), *rc = tu_read_file(rcpath, NULL);
        if (!rc || atoi(rc) != 0 || !log || helper_warning(log)) {
            printf("nvcc on %s/k%d.cu (%s) exit %d:\n%s\n", dir, i, b->keys[i], rc ? atoi(rc) : -1, log ? log : "(no log)");
            bad++;
        }
        free(log);
        free(rc);
        free(logpath);
        free(rcpath);
    }
    tu_rm_tree(dir);
    if (bad) fail_msg("%d of %d kernels draw nvcc errors or warnings about functions (above)", bad, b->n);
    printf("nvcc: %d kernels (one per category and set of helpers), no warning about a function\n", b->n);
}

static int free_walks(void **state)
{
    (void)state;
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < WALKS[d].nvcc.n; i++) free(WALKS[d].nvcc.sources[i]);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_helper_is_called),
        cmocka_unit_test(test_nvcc_warns_about_no_helper),
    };
    return cmocka_run_group_tests_name("templates", tests, NULL, free_walks);
}
