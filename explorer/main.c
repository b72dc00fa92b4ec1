/* Entry point of `explore`: dispatches subcommands to the module that owns them.
 * Each module exposes one `<prefix>_cli_main(argc, argv)` returning the exit status. */
#include <stdio.h>
#include <string.h>
#include "results/store.h"
#include "datasets/dataset.h"
#include "codegen/ircli.h"


typedef struct command {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    /* modules add their subcommand here */
    {"export", rs_cli_export, "export measurements of the results store as CSV or JSON"},
    {"merge", rs_cli_merge, "merge results databases into one (skips what is already there)"},
    {"compare", rs_cli_compare, "list regressions of the best times between two runs"},
    {"datasets", ds_cli_main, "list, inspect (info --json), fetch and export the graph datasets"},
    {"ir", irc_main, "print a model's IR after passes (--reorder, --compact) and its lowering"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: explore <command> [options]   (explore <command> --help for details)\n\n"
               "commands:\n");
    for (const command *c = COMMANDS; c->name; c++) fprintf(f, "  %-12s %s\n", c->name, c->summary);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const command *c = COMMANDS; c->name; c++)
        if (!strcmp(argv[1], c->name)) return c->main(argc - 1, argv + 1);
    fprintf(stderr, "explore: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
