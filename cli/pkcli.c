/* `explore perkernel`: the exact per-kernel optimum of a problem from its stored uniform-schedule
 * measurements, and the size of a design space once per-kernel choices are counted. */
#include "cli/pkcli.h"
#include "cli/problem.h"
#include "datasets/dataset.h"
#include "explorer/perkernel.h"

#include <stdlib.h>
#include <string.h>

typedef struct pk_args {
    cp_problem p;
    const char *device, *space;
    int emit_config;
    int db_given;
} pk_args;

static const char USAGE[] =
    "usage: explore perkernel [--db STORE] --model M --dataset D [--task T] [--dims IN,OUT] [--heads H]\n"
    "                         [--device KEY] [--emit-config] [--space default|full|FILE]\n"
    "The best per-kernel schedules of a problem from its stored uniform-schedule measurements (the\n"
    "store is only read). Within a structure (the values of the keys that are not per-kernel:\n"
    "compact, reorder, trav, softmax, part, relabel) every variant launches the same kernels, and each\n"
    "instance's kernels depend only on its own schedule keys (GEMMs: tile, coarsen, lb, w, mma;\n"
    "traversals: lb, pagg, vec, lanes, tblock). Per structure, each instance takes the schedule with\n"
    "the smallest median stored time (over the variants sharing that schedule); the combined config\n"
    "is the best uniform variant with an override INSTANCE.KEY=VAL where an instance's best differs,\n"
    "and its predicted time the sum of the kernels' (plus the best uniform variant's non-kernel\n"
    "overhead when the store has its span). --emit-config prints only the best combined config, for\n"
    "explore run --config '...'. Where the store has the dataset's counts, each variant's kernels are\n"
    "generated again, and schedules that generate the same kernel (a key it does not read) count as\n"
    "one choice with their times pooled. --space S counts the space S's per-kernel points for the problem\n"
    "(structures x product over the plan's instances of each one's schedules), without a store\n"
    "unless --db is given too.\n";

static int parse(int argc, char **argv, pk_args *a)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    ro_cmd c;
    ro_init(&c, "explore perkernel", USAGE, NULL);
    cp_add_options(&c, &a->p, CP_DB | CP_MODEL | CP_TASK | CP_DATASET | CP_DIMS | CP_HEADS | CP_DATA_DIR);
    ro_add(&c, (ro_opt){.name = "device", .arg = "KEY", .kind = RO_STR, .dst = &a->device,
                        .help = "device key (default: the device and commit that measured the most variants)"});
    ro_add(&c, (ro_opt){.name = "emit-config", .kind = RO_FLAG, .dst = &a->emit_config,
                        .help = "print only the best combined config (KEY=VAL,...,INSTANCE.KEY=VAL)"});
    ro_add(&c, (ro_opt){.name = "space", .arg = "S", .kind = RO_STR, .dst = &a->space,
                        .help = "count the per-kernel points of space S (default, full or a file)"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    a->db_given = ro_given(&c, "db");
    rg_err err;
    if (!a->p.model) return ro_bad(c.name, "--model is required");
    if (cp_check(&a->p, &err)) return ro_fail(c.name, &err);
    if ((a->db_given || !a->space) && !a->p.dataset) return ro_bad(c.name, "--dataset is required with a store");
    if (a->emit_config && a->space && !a->db_given) return ro_bad(c.name, "--emit-config needs a store (--db)");
    return -1;
}

static int space_size(const pk_args *a)
{
    rg_err err;
    hg_graph *g = NULL;
    if (a->p.dataset) {
        ds_options dso = {.data_dir = a->p.data_dir};
        if (!(g = ds_open(a->p.dataset, &dso, &err))) return ro_fail("explore perkernel", &err);
    }
    pl_problem p = cp_to_pl(&a->p);
    pk_space_count n;
    int rc = pk_space_size(a->space, &p, g, &n, &err);
    hg_free(g);
    if (rc) return ro_fail("explore perkernel", &err);
    printf("space %s for %s %s at dims %d,%d heads %d (%s): %d uniform points in %d structures; "
           "%.0f per-kernel points (%.3g)\n", a->space, a->p.model, a->p.task, a->p.dims[0], a->p.dims[1], a->p.heads,
           a->p.dataset ? a->p.dataset : "nominal sizes", n.uniform, n.nstructures, n.points, n.points);
    return 0;
}

int pk_cli_main(int argc, char **argv)
{
    pk_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;
    if (a.space && (rc = space_size(&a))) return rc;
    if (a.space && !a.db_given) return 0;
    pk_query q = {.db = a.p.db, .model = a.p.model, .task = a.p.task, .dataset = a.p.dataset,
                  .dim_in = a.p.dims[0], .dim_out = a.p.dims[1], .heads = a.p.heads, .device = a.device};
    pk_result r;
    rg_err err;
    if (pk_solve_store(&q, &r, &err)) return ro_fail("explore perkernel", &err);
    if (a.emit_config) {
        if (r.best < 0) {
            pk_result_free(&r);
            return ro_bad("explore perkernel", "no structure of the problem could be solved (run without --emit-config to see why)");
        }
        char *c = cfg_to_string(&r.s[r.best].combined);
        printf("%s\n", c);
        free(c);
    } else {
        pk_print(&r, stdout);
    }
    pk_result_free(&r);
    return 0;
}
