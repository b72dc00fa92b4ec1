/* `explore perf-tables`: option parsing, the atomic output file and --query for results/perftab
 * (the markdown tables of docs/perf-tables.md, from stores opened read-only), and the sections the
 * explorer computes: the search replay, its transfer across devices and the leave-one-size-out fit. */
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
    "usage: explore perf-tables [--out FILE] [--replay STORE.db] [--loso STORE.db]\n"
    "                           [--transfer STORE.db --transfer-fit FIT.db] STORE.db...\n"
    "       explore perf-tables --query NAME\n"
    "\n"
    "Writes the performance tables of record (docs/perf-tables.md: measurement counts, the best\n"
    "generated variant per problem against its floor, the generated code against every baseline)\n"
    "from the stores, each opened read-only. Each table names its store, its query and the commits of\n"
    "its rows; the output depends only on the stores and the paths as given, so running it twice\n"
    "gives the same bytes. `make perf-tables` runs it on the committed stores results/h100/*.db.\n"
    "--replay adds the search replay of a store (explore replay's summary, fixed seeds and runs, and\n"
    "each problem's oracle); --loso the leave-one-size-out table of explore fit on a store;\n"
    "--transfer the replay of a store (one device) with cost models fitted on --transfer-fit's store\n"
    "(another device) without each problem's dataset.\n"
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

static const char TRANSFER_ABOUT[] =
    "The replay above on another device's store, with the cost models fitted on the first device's store "
    "(`explore replay --fit-db`): for each problem, the models are fitted on the other store's measurements "
    "of the OTHER datasets, so each pick is on a device and a graph the fit never saw. Both stores were "
    "measured at one commit on the same space. The static list is built from the target device's other "
    "datasets (it sees the target device's times; the model does not).";

enum { SEC_REPLAY, SEC_TRANSFER, SEC_LOSO, NSEC };

/* The explorer's sections, computed before anything is written. */
static int sections_of(const char *const store[NSEC], const char *transfer_fit, pt_section *sec, char **texts, int *n,
                       rg_err *err)
{
    static const char *const option[NSEC] = {"--replay", "--transfer", "--loso"};
    static const char *const title[NSEC] = {"Search replay: strategies on the recorded measurements",
                                            "Transfer across devices: the cost model fitted on another GPU",
                                            "Leave-one-size-out: the cost model on sizes it never saw"};
    static const char *const about[NSEC] = {REPLAY_ABOUT, TRANSFER_ABOUT, LOSO_ABOUT};
    *n = 0;
    for (int k = 0; k < NSEC; k++) {
        if (!store[k]) continue;
        size_t len;
        FILE *mem = open_memstream(&texts[*n], &len);
        RG_ASSERT(mem);
        int rc = k == SEC_LOSO ? cm_cli_loso_markdown(store[k], mem, err)
                               : sr_cli_replay_markdown(store[k], k == SEC_TRANSFER ? transfer_fit : NULL, mem, err);
        fclose(mem);
        (*n)++;
        if (rc) {
            rg_err_prefix(err, "%s", option[k]);
            return -1;
        }
        sec[*n - 1] = (pt_section){title[k], about[k], texts[*n - 1]};
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
    const char *out = NULL, *query = NULL, *store[NSEC] = {NULL}, *transfer_fit = NULL;
    const char **stores = rg_xcalloc((size_t)argc, sizeof *stores);
    ro_cmd c;
    ro_init(&c, "explore perf-tables", USAGE, NULL);
    ro_add(&c, (ro_opt){.name = "out", .arg = "FILE", .kind = RO_STR, .dst = &out,
                        .help = "write here (atomically); default standard output"});
    ro_add(&c, (ro_opt){.name = "query", .arg = "NAME", .kind = RO_STR, .dst = &query,
                        .help = "print the SQL of one table instead: counts, best, geomean or baselines"});
    ro_add(&c, (ro_opt){.name = "replay", .arg = "STORE", .kind = RO_STR, .dst = &store[SEC_REPLAY],
                        .help = "add the search replay of this store (explore replay's summary)"});
    ro_add(&c, (ro_opt){.name = "loso", .arg = "STORE", .kind = RO_STR, .dst = &store[SEC_LOSO],
                        .help = "add the leave-one-size-out table of explore fit on this store"});
    ro_add(&c, (ro_opt){.name = "transfer", .arg = "STORE", .kind = RO_STR, .dst = &store[SEC_TRANSFER],
                        .help = "add the replay of this store with models fitted on --transfer-fit's"});
    ro_add(&c, (ro_opt){.name = "transfer-fit", .arg = "STORE", .kind = RO_STR, .dst = &transfer_fit,
                        .help = "the store (another device) whose measurements --transfer's models fit"});
    ro_positional(&c, stores, argc);
    int rc = ro_parse(&c, argc, argv);
    int sections = store[SEC_REPLAY] || store[SEC_TRANSFER] || store[SEC_LOSO];
    if (!rc && query && (c.npos || out || sections)) rc = ro_bad(c.name, "--query takes no store and no --out");
    else if (!rc && !store[SEC_TRANSFER] != !transfer_fit) rc = ro_bad(c.name, "--transfer and --transfer-fit go together");
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
    pt_section sec[NSEC];
    char *texts[NSEC] = {NULL};
    int nsec;
    rc = sections_of(store, transfer_fit, sec, texts, &nsec, &err);
    if (!rc) rc = out ? write_file(out, stores, c.npos, sec, nsec, &err) : pt_write_sections(stores, c.npos, sec, nsec, stdout, &err);
    for (int k = 0; k < NSEC; k++) free(texts[k]);
    free(stores);
    return rc ? ro_fail(c.name, &err) : 0;
}
