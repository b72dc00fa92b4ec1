/* `explore ir --model M [--dataset D] [--dims IN,OUT] [--heads H] [--reorder] [--compact]
 * [--task infer|train] [--lowered] [--no-fuse]`: the IR of a model after its passes. */
#include "cli/ircli.h"
#include "codegen/lower.h"
#include "codegen/model.h"
#include "codegen/modeldir.h"
#include "datasets/dataset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct irc_args {
    const char *model, *dataset, *task, *data_dir;
    ir_dims dims;
    int reorder, compact, lowered, fuse;
} irc_args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: explore ir --model M [--dataset D [--data-dir DIR]] [--dims IN,OUT] [--heads H] [--reorder]\n"
            "                  [--compact] [--task infer|train] [--lowered] [--no-fuse]\n"
            "Prints the inter-operator IR of model M (a name from models/ or the path of a .rgnn\n"
            "file) after the chosen passes; --lowered also prints the lowered program (GEMM and\n"
            "traversal instances). Reordering decisions count multiply-adds with the statistics of\n"
            "--dataset (any name `explore datasets` opens, e.g. aifb or synth:fb15k237); without it,\n"
            "nominal aifb counts. --no-fuse lowers every traversal statement on its own.\n"
            "Defaults: --dims 64,64 --heads 1 --task infer.\n"
            "models: ");
    char *list = md_list();
    fprintf(f, "%s\n", list);
    free(list);
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || v < 1 || v > 1 << 20) return -1;
    *out = (int)v;
    return (int)(end - s);
}

static int parse_dims(const char *s, ir_dims *d)
{
    int n = parse_int(s, &d->in_dim);
    if (n < 0) return -1;
    if (s[n] == '\0') {
        d->out_dim = d->in_dim;
        return 0;
    }
    if (s[n] != ',') return -1;
    int m = parse_int(s + n + 1, &d->out_dim);
    return m < 0 || s[n + 1 + m] != '\0' ? -1 : 0;
}

static int parse_args(int argc, char **argv, irc_args *a)
{
    memset(a, 0, sizeof *a);
    a->task = "infer";
    a->dims = (ir_dims){64, 64, 1};
    a->fuse = 1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(o, "--reorder")) a->reorder = 1;
        else if (!strcmp(o, "--compact")) a->compact = 1;
        else if (!strcmp(o, "--lowered")) a->lowered = 1;
        else if (!strcmp(o, "--no-fuse")) a->fuse = 0;
        else if ((!strcmp(o, "--model") || !strcmp(o, "--dataset") || !strcmp(o, "--task") || !strcmp(o, "--dims") ||
                  !strcmp(o, "--heads")) && !has_val) {
            fprintf(stderr, "explore ir: %s needs a value\n", o);
            return -1;
        } else if (!strcmp(o, "--model")) a->model = argv[++i];
        else if (!strcmp(o, "--dataset")) a->dataset = argv[++i];
        else if (!strcmp(o, "--data-dir")) a->data_dir = argv[++i];
        else if (!strcmp(o, "--task")) a->task = argv[++i];
        else if (!strcmp(o, "--dims")) {
            if (parse_dims(argv[++i], &a->dims) < 0) {
                fprintf(stderr, "explore ir: --dims takes IN,OUT (positive integers), got '%s'\n", argv[i]);
                return -1;
            }
        } else if (!strcmp(o, "--heads")) {
            if (parse_int(argv[++i], &a->dims.heads) < 0 || argv[i][strspn(argv[i], "0123456789")] != '\0') {
                fprintf(stderr, "explore ir: --heads takes a positive integer, got '%s'\n", argv[i]);
                return -1;
            }
        } else {
            fprintf(stderr, "explore ir: unknown option '%s' (see explore ir --help)\n", o);
            return -1;
        }
    }
    if (!a->model) {
        fprintf(stderr, "explore ir: --model is required (see explore ir --help)\n");
        return -1;
    }
    if (strcmp(a->task, "infer") && strcmp(a->task, "train")) {
        fprintf(stderr, "explore ir: --task is infer or train, got '%s'\n", a->task);
        return -1;
    }
    if (a->dims.out_dim % a->dims.heads) {
        fprintf(stderr, "explore ir: OUT (%d) must be a multiple of --heads (%d)\n", a->dims.out_dim, a->dims.heads);
        return -1;
    }
    return 0;
}

static int load_stats(const irc_args *a, rr_stats *st)
{
    if (!a->dataset) {
        rr_stats_nominal(st);
        return 0;
    }
    ds_options dso = {0};
    dso.quiet = 1;
    dso.data_dir = a->data_dir;
    rg_err err;
    hg_graph *g = ds_open(a->dataset, &dso, &err);
    if (!g) {
        fprintf(stderr, "explore ir: %s\n", err.msg);
        return -1;
    }
    rr_stats_from_graph(st, g, a->dataset);
    hg_free(g);
    return 0;
}

int irc_main(int argc, char **argv)
{
    irc_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc > 0 ? 0 : 2;
    rr_stats st;
    if ((a.reorder || a.dataset) && load_stats(&a, &st) < 0) return 1;
    char *path = md_find(a.model);
    if (!path) {
        char *list = md_list();
        fprintf(stderr, "explore ir: unknown model '%s' (models: %s; or give the path of a .rgnn file)\n", a.model, list);
        free(list);
        return 1;
    }
    printf("model %s (%s), in %d, out %d, heads %d, task %s, passes:%s%s%s\n", a.model, path, a.dims.in_dim,
           a.dims.out_dim, a.dims.heads, a.task, a.reorder ? " reorder" : "", a.compact ? " compact" : "",
           !a.reorder && !a.compact ? " none" : "");
    free(path);
    if (a.reorder && st.nominal)
        printf("(no --dataset: reordering counts use nominal aifb statistics)\n");
    model_options mo = {.task = a.task, .reorder = a.reorder, .compact = a.compact, .stats = &st, .log = stdout};
    if (!a.reorder) mo.stats = NULL;
    rg_err err;
    ir_program *p = model_load_opts(a.model, &a.dims, &mo, &err);
    if (!p) {
        fprintf(stderr, "explore ir: %s\n", err.msg);
        return 1;
    }
    if (!strcmp(a.task, "train") && !model_has_autodiff())
        printf("(this build has no autodiff yet: the training program ends at the loss)\n");
    putchar('\n');
    ir_print(p, stdout);
    if (a.lowered) {
        lw_options lo = {.fuse = a.fuse};
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
