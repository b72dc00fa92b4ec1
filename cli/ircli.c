/* `explore ir --model M [--dataset D] [--dims IN,OUT] [--heads H] [--reorder] [--compact]
 * [--single-softmax] [--recompute] [--task infer|train] [--lowered] [--no-fuse]
 * [--msg-trav] [--defer-dst-sums]`: the IR of a model after its passes. */
#include "cli/ircli.h"
#include "cli/problem.h"
#include "codegen/lower.h"
#include "codegen/model.h"
#include "codegen/modeldir.h"
#include "datasets/dataset.h"

#include <stdlib.h>
#include <string.h>

typedef struct irc_args {
    cp_problem p;
    ir_dims dims;
    int reorder, compact, softmax_single, recompute, lowered, no_fuse, msg_trav, defer;
} irc_args;

static const char USAGE[] =
    "usage: explore ir --model M [--dataset D [--data-dir DIR]] [--dims IN,OUT] [--heads H] [--reorder]\n"
    "                  [--compact] [--single-softmax] [--recompute] [--task infer|train] [--lowered] [--no-fuse]\n"
    "                  [--msg-trav] [--defer-dst-sums]\n"
    "Prints the inter-operator IR of model M (a name from models/ or the path of a .rgnn\n"
    "file) after the chosen passes; --lowered also prints the lowered program (GEMM and\n"
    "traversal instances). Reordering decisions count multiply-adds with the statistics of\n"
    "--dataset (any name `explore datasets` opens, e.g. aifb or synth:fb15k237); without it,\n"
    "nominal aifb counts. --no-fuse lowers every traversal statement on its own; --msg-trav computes\n"
    "the forward per-edge typed linears in the traversals that read them (msg=trav); --defer-dst-sums\n"
    "lowers the backward pass's per-edge sums over destinations apart (crsum=defer).\n"
    "Defaults: --dims 64,64 --heads 1 --task infer.\n";

/* -1 to go on; else the exit status. */
static int parse_args(int argc, char **argv, irc_args *a)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    char *list = md_list(), *epilog = rg_xasprintf("models: %s\n", list);
    ro_cmd c;
    ro_init(&c, "explore ir", USAGE, epilog);
    cp_add_options(&c, &a->p, CP_PROBLEM);
    ro_add(&c, (ro_opt){.name = "reorder", .arg = NULL, .kind = RO_FLAG, .dst = &a->reorder, .help = "apply the reordering pass"});
    ro_add(&c, (ro_opt){.name = "compact", .arg = NULL, .kind = RO_FLAG, .dst = &a->compact, .help = "apply the compaction pass"});
    ro_add(&c, (ro_opt){.name = "single-softmax", .arg = NULL, .kind = RO_FLAG, .dst = &a->softmax_single, .help = "apply the single-pass softmax pass (softmax=single)"});
    ro_add(&c, (ro_opt){.name = "recompute", .arg = NULL, .kind = RO_FLAG, .dst = &a->recompute, .help = "training: the backward pass computes the per-edge forward values again (recompute=on)"});
    ro_add(&c, (ro_opt){.name = "lowered", .arg = NULL, .kind = RO_FLAG, .dst = &a->lowered, .help = "also print the lowered program"});
    ro_add(&c, (ro_opt){.name = "no-fuse", .arg = NULL, .kind = RO_FLAG, .dst = &a->no_fuse, .help = "lower every traversal statement on its own"});
    ro_add(&c, (ro_opt){.name = "msg-trav", .arg = NULL, .kind = RO_FLAG, .dst = &a->msg_trav, .help = "compute the forward per-edge typed linears (messages) in the traversals that read them (msg=trav)"});
    ro_add(&c, (ro_opt){.name = "defer-dst-sums", .arg = NULL, .kind = RO_FLAG, .dst = &a->defer, .help = "training: lower the backward per-edge sums over destinations in an instance of their own (crsum=defer)"});
    int rc = ro_parse(&c, argc, argv);
    free(list);
    free(epilog);
    if (rc) return ro_exit(rc);
    rg_err err;
    if (!a->p.model) return ro_bad(c.name, "--model is required (see explore ir --help)");
    if (cp_check(&a->p, &err)) return ro_fail(c.name, &err);
    a->dims = (ir_dims){a->p.dims[0], a->p.dims[1], a->p.heads};
    return -1;
}

static int load_stats(const irc_args *a, rr_stats *st)
{
    if (!a->p.dataset) {
        rr_stats_nominal(st);
        return 0;
    }
    ds_options dso = {0};
    dso.quiet = 1;
    dso.data_dir = a->p.data_dir;
    rg_err err;
    hg_graph *g = ds_open(a->p.dataset, &dso, &err);
    if (!g) {
        fprintf(stderr, "explore ir: %s\n", err.msg);
        return -1;
    }
    rr_stats_from_graph(st, g, a->p.dataset);
    hg_free(g);
    return 0;
}

int irc_main(int argc, char **argv)
{
    irc_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    rr_stats st;
    if ((a.reorder || a.p.dataset) && load_stats(&a, &st) < 0) return 1;
    char *path = md_find(a.p.model);
    if (!path) {
        char *list = md_list();
        fprintf(stderr, "explore ir: unknown model '%s' (models: %s; or give the path of a .rgnn file)\n", a.p.model, list);
        free(list);
        return 1;
    }
    printf("model %s (%s), in %d, out %d, heads %d, task %s, passes:%s%s%s%s%s\n", a.p.model, path, a.dims.in_dim,
           a.dims.out_dim, a.dims.heads, a.p.task, a.reorder ? " reorder" : "", a.compact ? " compact" : "",
           a.softmax_single ? " single-softmax" : "", a.recompute ? " recompute" : "",
           !a.reorder && !a.compact && !a.softmax_single && !a.recompute ? " none" : "");
    free(path);
    if (a.reorder && st.nominal)
        printf("(no --dataset: reordering counts use nominal aifb statistics)\n");
    model_options mo = {.task = a.p.task, .reorder = a.reorder, .compact = a.compact, .stats = &st, .log = stdout,
                        .softmax_single = a.softmax_single, .recompute = a.recompute};
    if (!a.reorder) mo.stats = NULL;
    rg_err err;
    ir_program *p = model_load_opts(a.p.model, &a.dims, &mo, &err);
    if (!p) {
        fprintf(stderr, "explore ir: %s\n", err.msg);
        return 1;
    }
    if (!strcmp(a.p.task, "train") && !model_has_autodiff())
        printf("(this build has no autodiff yet: the training program ends at the loss)\n");
    putchar('\n');
    ir_print(p, stdout);
    if (a.lowered) {
        lw_options lo = {.fuse = !a.no_fuse, .msg_in_trav = a.msg_trav, .defer_dst_sums = a.defer};
        lw_program *lp = lw_lower_opts(p, &lo, &err);
        if (!lp) {
            fprintf(stderr, "explore ir: lowering: %s\n", err.msg);
            ir_free(p);
            return 1;
        }
        putchar('\n');
        lw_print(lp, stdout);
        lw_free(lp);
    }
    ir_free(p);
    return 0;
}
