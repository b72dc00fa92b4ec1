/* `explore perf-tables`: option parsing, the atomic output file and --query for results/perftab
 * (the markdown tables of docs/perf-tables.md, from stores opened read-only), and the sections the
 * explorer computes: the search replay and the leave-one-size-out fit. */
#include "cli/ptcli.h"
#include "cli/cmcli.h"
#include "cli/replaycli.h"
#include "common/opts.h"
#include "results/perftab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: explore perf-tables [--out FILE] [--replay STORE.db] [--loso STORE.db] STORE.db...\n"
    "       explore perf-tables --query NAME\n"
    "\n"
    "Writes the performance tables of record (docs/perf-tables.md: measurement counts, the best\n"
    "generated variant per problem against its floor, the generated code against every baseline)\n"
    "from the stores, each opened read-only. Each table names its store, its query and the commits of\n"
    "its rows; the output depends only on the stores and the paths as given, so running it twice\n"
    "gives the same bytes. `make perf-tables` runs it on the committed stores results/h100/*.db.\n"
    "--replay adds the search replay of a store (explore replay's summary, fixed seeds and runs, and\n"
    "each problem's oracle); --loso the leave-one-size-out table of explore fit on a store.\n"
    "--query prints one table's SQL, to run it yourself: explore perf-tables --query best | sqlite3\n"
    "-header -markdown results/h100/results.db\n"
    "\n";

static const char REPLAY_ABOUT[] =
    "Search strategies replayed on the recorded measurements of a store (`explore replay`, no GPU): a "
    "problem's space is its stored points, a config the store lacks or whose attempts failed costs a unit "
    "and finds nothing. Per strategy, the geometric mean over problems of the best found / the oracle "
    "after 1, 2, 5 and 10% of each space, and the mean P-score over the budget (10% of the space), "
    "P = (random(t) - found(t)) / (random(t) - oracle) (Willemsen et al., FGCS 2024): 0 is random "
    "search, 1 finds the oracle first. The model-guided strategies use cost models fitted without the "
    "problem's dataset, the static list the configs with the best geomean on the other datasets; `random "
    "(expected)` is the exact expectation of random search. Ten seeded runs per strategy and problem, so "
    "the numbers are deterministic.";

static const char LOSO_ABOUT[] =
    "The cost model on sizes it never saw (`explore fit`'s leave-one-size-out table): for each size "
    "(dims, heads), the model is fitted on every other size of the same model and task (all datasets) "
    "and ranks the held-out size's measured configs; the static list is built from the other sizes too. "
    "Per held-out size, the geometric mean over its problems of the model's top-1 / oracle and the "
    "static list's first config / oracle (`-`: not measured there), the best of the first K of each "
    "(K: 10% of the configs, floor) and random search's exact expectation at the same K.";

/* The explorer's sections, computed before anything is written. */
static int sections_of(const char *replay, const char *loso, pt_section *sec, char **texts, int *n, rg_err *err)
{
    const char *store[2] = {replay, loso};
    *n = 0;
    for (int k = 0; k < 2; k++) {
        if (!store[k]) continue;
        size_t len;
        FILE *mem = open_memstream(&texts[*n], &len);
        RG_ASSERT(mem);
        int rc = k == 0 ? sr_cli_replay_markdown(store[k], mem, err) : cm_cli_loso_markdown(store[k], mem, err);
        fclose(mem);
        (*n)++;
        if (rc) {
            rg_err_prefix(err, "%s", k == 0 ? "--replay" : "--loso");
            return -1;
        }
        sec[*n - 1] = (pt_section){k == 0 ? "Search replay: strategies on the recorded measurements"
                                          : "Leave-one-size-out: the cost model on sizes it never saw",
                                   k == 0 ? REPLAY_ABOUT : LOSO_ABOUT, texts[*n - 1]};
    }
    return 0;
}

/* FILE appears complete or not at all: a failed run leaves the committed tables as they were. */
static int write_file(const char *path, const char *const *stores, int n, const pt_section *sec, int nsec, rg_err *err)
{
    char *tmp = rg_xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    int rc = pt_write_sections(stores, n, sec, nsec, fp, err);
    if (fclose(fp) != 0 && !rc) rc = rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path) != 0) rc = rg_errf(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc) remove(tmp);
    free(tmp);
    return rc;
}

int ptc_main(int argc, char **argv)
{
    const char *out = NULL, *query = NULL, *replay = NULL, *loso = NULL;
    const char **stores = rg_xcalloc((size_t)argc, sizeof *stores);
    ro_cmd c;
    ro_init(&c, "explore perf-tables", USAGE, NULL);
    ro_add(&c, (ro_opt){.name = "out", .arg = "FILE", .kind = RO_STR, .dst = &out,
                        .help = "write here (atomically); default standard output"});
    ro_add(&c, (ro_opt){.name = "query", .arg = "NAME", .kind = RO_STR, .dst = &query,
                        .help = "print the SQL of one table instead: counts, best, geomean or baselines"});
    ro_add(&c, (ro_opt){.name = "replay", .arg = "STORE", .kind = RO_STR, .dst = &replay,
                        .help = "add the search replay of this store (explore replay's summary)"});
    ro_add(&c, (ro_opt){.name = "loso", .arg = "STORE", .kind = RO_STR, .dst = &loso,
                        .help = "add the leave-one-size-out table of explore fit on this store"});
    ro_positional(&c, stores, argc);
    int rc = ro_parse(&c, argc, argv);
    if (!rc && query && (c.npos || out || replay || loso)) rc = ro_bad(c.name, "--query takes no store and no --out");
    else if (!rc && query && !pt_query_sql(query))
        rc = ro_bad(c.name, "unknown table '%s' (one of: %s)", query, pt_query_names());
    else if (!rc && !query && c.npos == 0) rc = ro_bad(c.name, "give at least one STORE.db");
    if (rc) {
        free(stores);
        return ro_exit(rc);
    }
    if (query) {
        fputs(pt_query_sql(query), stdout);
        free(stores);
        return 0;
    }
    rg_err err;
    pt_section sec[2];
    char *texts[2] = {NULL, NULL};
    int nsec;
    rc = sections_of(replay, loso, sec, texts, &nsec, &err);
    if (!rc) rc = out ? write_file(out, stores, c.npos, sec, nsec, &err) : pt_write_sections(stores, c.npos, sec, nsec, stdout, &err);
    for (int k = 0; k < 2; k++) free(texts[k]);
    free(stores);
    return rc ? ro_fail(c.name, &err) : 0;
}
