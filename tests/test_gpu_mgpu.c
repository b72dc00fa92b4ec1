/* GPU test of layers over several GPUs (runtime/mgpu.h): RGAT and HGT, inference and training,
 * over every rank count the machine has (1 included: the same code path), validated. */
#include "tests/testutil.h"
#include "measure/mgpu_backend.h"
#include "runtime/rt.h"

#include <stdlib.h>
#include <string.h>

static void measure(xb_backend *b, const char *model, const char *task, const char *cfgs, rs_status want)
{
    rg_err err;
    char *dir = tu_tmpdir();
    setenv("RGNN_CACHE", dir, 1);
    xb_problem p = {.dim_in = 16, .dim_out = 16, .heads = 2};
    snprintf(p.model, sizeof p.model, "%s", model);
    snprintf(p.dataset, sizeof p.dataset, "synth:nodes=3000,edges=40000,ntypes=3,etypes=9,ratio=0.4,seed=2");
    snprintf(p.task, sizeof p.task, "%s", task);
    if (b->prepare(b, &p, NULL, &err)) fail_msg("prepare: %s", err.msg);
    cg_config cfg;
    cfg_default(&cfg);
    if (cfg_parse(&cfg, cfgs, &err)) fail_msg("%s: %s", cfgs, err.msg);
    xb_options o = {.warmup = 1, .repeats = 3};
    xb_result *r = rg_xmalloc(sizeof *r);
    if (b->measure(b, &cfg, &o, r, &err)) fail_msg("measure: %s", err.msg);
    if (r->status != want) fail_msg("%s %s %s: status %s: %s", model, task, cfgs, rs_status_name(r->status), r->evidence);
    if (want == RS_OK) assert_true(r->median_ms > 0);
    free(r);
    tu_rm_tree(dir);
}

static void test_partitioned_layers_validate(void **state)
{
    (void)state;
    if (!tu_gpu_present()) {
        printf("skip: no CUDA device\n");
        skip();
    }
    int n = krt_device_count();
    for (int ranks = 1; ranks <= n && ranks <= 4; ranks *= 2) {
        rg_err err;
        xb_backend *b = xb_mgpu_backend(ranks, &err);
        if (!b) fail_msg("%d ranks: %s", ranks, err.msg);
        static const char *const models[] = {"rgat", "hgt"}, *const tasks[] = {"infer", "train"};
        for (int m = 0; m < 2; m++)
            for (int t = 0; t < 2; t++) {
                measure(b, models[m], tasks[t], "softmax=single,part=edges", RS_OK);
                measure(b, models[m], tasks[t], "softmax=twopass,trav=edge,part=rows", RS_OK);
            }
        measure(b, "rgat", "infer", "softmax=twopass,trav=node", RS_INVALID);
        b->close(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partitioned_layers_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
