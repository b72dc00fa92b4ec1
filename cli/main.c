/* Entry point of `explore`: dispatches subcommands to the module that owns them.
 * Each module exposes one `<prefix>_cli_main(argc, argv)` returning the exit status. */
#include <stdio.h>
#include <string.h>
#include "results/store.h"
#include "datasets/dataset.h"
#include "cli/dscli.h"
#include "cli/ircli.h"
#include "cli/rscli.h"
#include "cli/blcli.h"
#include "cli/runcli.h"
#include "measure/backend.h"
#include "cli/sweepcli.h"
#include "cli/cmcli.h"
#include "cli/rpcli.h"
#include "cli/ptcli.h"
#include "cli/replaycli.h"
#include "cli/pkcli.h"
#include "common/opts.h"


/* The sweep commands get the GPU backend from here, so that the library and the CPU tests
 * link without it. */
static int sweep_main(int argc, char **argv) { return sc_sweep_main(argc, argv, xb_gpu_backend); }
static int plan_main(int argc, char **argv) { return sc_plan_main(argc, argv, xb_gpu_backend); }
static int pick_main(int argc, char **argv) { return cm_cli_pick(argc, argv, xb_gpu_backend); }

typedef struct command {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    /* modules add their subcommand here */
    {"export", rs_cli_export, "export measurements of the results store as CSV or JSON"},
    {"merge", rs_cli_merge, "merge results databases into one (skips what is already there)"},
    {"compare", rs_cli_compare, "list regressions of the best times between two run groups (nights) or runs"},
    {"prune", rs_cli_prune, "drop superseded commits' rows from a store of record (--keep-latest-commit)"},
    {"datasets", ds_cli_main, "list, inspect (info --json), fetch and export the graph datasets"},
    {"ir", irc_main, "print a model's IR after passes (--reorder, --compact) and its lowering"},
    {"import", blcli_import_main, "load baseline measurements (pyg_bench.py's CSV) into the results store"},
    {"baselines", blcli_baselines_main, "measure the cuBLAS-built baseline layers (seg, bmm, grouped) and record them"},
    {"compare-baselines", blcli_compare_main, "best generated variant against each baseline: speed-ups, OOMs (markdown)"},
    {"perf-tables", ptc_main, "the docs' tables of record (docs/perf-tables.md) from results stores, read-only"},
    {"run", xr_run_main, "build, validate against the CPU reference and time one variant"},
    {"gen", xr_gen_main, "write the generated CUDA sources and launch plan of a variant or a space"},
    {"sweep", plan_main, "sweep a plan (models x datasets x tasks x dims), optionally one shard of it"},
    {"report", rp_cli_main, "draw the paper-style figures of the results store (gnuplot) with an index.md"},
    {"fit", cm_cli_fit, "fit the cost models on the results store; leave-one-dataset-out table"},
    {"replay", sr_cli_replay, "replay search strategies on a store's measurements (no GPU): found/oracle, P-score"},
    {"perkernel", pk_cli_main, "the exact per-kernel optimum from a store's uniform sweeps; the per-kernel space's size"},
    {"pick", pick_main, "rank a dataset's configs with the cost model; measure the top K (--measure-top)"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: explore --model M [--dataset D] [--task infer|train] [--dims IN,OUT] [--heads H] [sweep options]\n"
               "       explore <command> [options]   (explore <command> --help for details)\n\n"
               "commands:\n");
    for (const command *c = COMMANDS; c->name; c++) fprintf(f, "  %-12s %s\n", c->name, c->summary);
    fprintf(f, "\nsweep options (explore --model ... and explore sweep; explore --model M --help has more):\n");
    sc_print_options(f);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    /* `explore --model M ...` (and a bare `explore`) is the sweep itself */
    if (argc < 2 || argv[1][0] == '-') return sweep_main(argc, argv);
    const char *best = NULL;
    int best_d = 3;
    for (const command *c = COMMANDS; c->name; c++) {
        if (!strcmp(argv[1], c->name)) return c->main(argc - 1, argv + 1);
        int d = rg_edit_distance(argv[1], c->name);
        if (d < best_d) best_d = d, best = c->name;
    }
    if (best) return ro_bad("explore", "unknown command '%s' (did you mean %s?)", argv[1], best);
    return ro_bad("explore", "unknown command '%s' (explore --help lists the commands)", argv[1]);
}
