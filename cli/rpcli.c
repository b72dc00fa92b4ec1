/* `explore report [--db PATH] --out DIR [--gpu NAME] [--plots DIR] [--quiet]`: the command-line
 * front end of the paper-style figures (results/report.c draws them). */
#include "cli/rpcli.h"
#include "cli/problem.h"
#include "results/report.h"

#include <stdio.h>

static const char USAGE[] =
    "usage: explore report [--db PATH] --out DIR [--gpu NAME] [--plots DIR] [--quiet]\n"
    "  Draws the paper-style figures of the results store (PNG and SVG, gnuplot) into DIR with\n"
    "  DIR/index.md (every figure with a one-line reading) and DIR/data/*.csv (the tables behind them).\n";

int rp_cli_main(int argc, char **argv)
{
    cp_problem p;
    cp_init(&p);
    rp_options o = {0};
    ro_cmd c;
    ro_init(&c, "explore report", USAGE, NULL);
    cp_add_options(&c, &p, CP_DB);
    ro_add(&c, (ro_opt){.name = "out", .arg = "DIR", .kind = RO_STR, .dst = &o.out_dir, .help = "output directory (created; required)"});
    ro_add(&c, (ro_opt){.name = "gpu", .arg = "NAME", .kind = RO_STR, .dst = &o.gpu, .help = "the device whose name contains NAME (default: the one with the most\nmeasurements)"});
    ro_add(&c, (ro_opt){.name = "plots", .arg = "DIR", .kind = RO_STR, .dst = &o.plots_dir, .help = "the gnuplot scripts (default: plots/ of the source tree)"});
    ro_add(&c, (ro_opt){.name = "quiet", .arg = NULL, .kind = RO_FLAG, .dst = &o.quiet, .help = "no summary line"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    if (!o.out_dir) return ro_bad(c.name, "--out DIR is required (see explore report --help)");
    o.db_path = p.db;
    rg_err err;
    rp_summary s;
    if (rp_build(&o, &s, &err)) {
        fprintf(stderr, "explore report: %s\n", err.msg);
        return 1;
    }
    if (!o.quiet)
        printf("explore report: %d figure%s drawn, %d skipped (device %s) -> %s/index.md\n", s.drawn,
               s.drawn == 1 ? "" : "s", s.skipped, s.device[0] ? s.device : "none", o.out_dir);
    return 0;
}
