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
    "usage: explore perf-tables [--out FILE] [--replay STORE.db[,STORE.db...]] [--loso STORE.db]\n"
    "                           [--transfer STORE.db --transfer-fit FIT.db] STORE.db...\n"
    "       explore perf-tables --query NAME\n"
    "\n"
    "Writes the performance tables of record (docs/perf-tables.md: measurement counts, the best\n"
    "generated variant per problem against its floor, the generated code against every baseline)\n"
    "from the stores, each opened read-only. Each table names its store, its query and the commits of\n"
    "its rows; the output depends only on the stores and the paths as given, so running it twice\n"
    "gives the same bytes. `make perf-tables` runs it on the committed stores results/h100/*.db.\n"
    "--replay adds the search replay of each store (explore replay's summary, fixed seeds and runs, and\n"
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
    "(expected)` is the exact expectation of random search. Ten seeded runs per strategy and problem (one "
    "where a strategy draws no random number, as the model's ranking and `bo` with a model: its runs are all "
    "alike), so the numbers are deterministic. `bo`'s prior is calibrated on the model's held-out errors on "
    "the store's other datasets, each of them predicted without the problem's dataset too; `bo-fixed` is "
    "the same search with one prior for every feature.";

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

enum { SEC_REPLAY, SEC_TRANSFER, SEC_LOSO, NKINDS };
#define MAX_REPLAYS 4
#define NSEC (MAX_REPLAYS + NKINDS - 1)

/* The stores of each section kind: up to MAX_REPLAYS replays, one of each other kind. */
typedef struct section_stores {
    const char *replay[MAX_REPLAYS], *transfer, *loso;
    int nreplay;
} section_stores;

/* --replay's comma-separated stores. */
static int parse_replays(const char *value, void *dst, rg_err *err)
{
    section_stores *ss = dst;
    ss->nreplay = 0;
    for (const char *p = value; *p;) {
        size_t len = strcspn(p, ",");
        if (!len) return rg_errf(err, "an empty store path in '%s'", value);
        if (ss->nreplay == MAX_REPLAYS) return rg_errf(err, "at most %d stores", MAX_REPLAYS);
        ss->replay[ss->nreplay++] = rg_xasprintf("%.*s", (int)len, p);
        p += len + (p[len] == ',');
    }
    return 0;
}

static int add_section(pt_section *sec, char **texts, int *n, int kind, const char *store, const char *transfer_fit,
                       rg_err *err)
{
    static const char *const option[NKINDS] = {"--replay", "--transfer", "--loso"};
    static const char *const title[NKINDS] = {"Search replay: strategies on the recorded measurements",
                                              "Transfer across devices: the cost model fitted on another GPU",
                                              "Leave-one-size-out: the cost model on sizes it never saw"};
    static const char *const about[NKINDS] = {REPLAY_ABOUT, TRANSFER_ABOUT, LOSO_ABOUT};
    size_t len;
    FILE *mem = open_memstream(&texts[*n], &len);
    RG_ASSERT(mem);
    int rc = kind == SEC_LOSO ? cm_cli_loso_markdown(store, mem, err)
                              : sr_cli_replay_markdown(store, kind == SEC_TRANSFER ? transfer_fit : NULL, mem, err);
    fclose(mem);
    (*n)++;
    if (rc) {
        rg_err_prefix(err, "%s %s", option[kind], store);
        return -1;
    }
    sec[*n - 1] = (pt_section){title[kind], about[kind], texts[*n - 1]};
    return 0;
}

/* The explorer's sections, computed before anything is written: the replays, the transfer, the
 * leave-one-size-out table. */
static int sections_of(const section_stores *ss, const char *transfer_fit, pt_section *sec, char **texts, int *n,
                       rg_err *err)
{
    *n = 0;
    for (int k = 0; k < ss->nreplay; k++)
        if (add_section(sec, texts, n, SEC_REPLAY, ss->replay[k], NULL, err)) return -1;
    if (ss->transfer && add_section(sec, texts, n, SEC_TRANSFER, ss->transfer, transfer_fit, err)) return -1;
    if (ss->loso && add_section(sec, texts, n, SEC_LOSO, ss->loso, NULL, err)) return -1;
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
    const char *out = NULL, *query = NULL, *transfer_fit = NULL;
    section_stores ss = {0};
    const char **stores = rg_xcalloc((size_t)argc, sizeof *stores);
    ro_cmd c;
    ro_init(&c, "explore perf-tables", USAGE, NULL);
    ro_add(&c, (ro_opt){.name = "out", .arg = "FILE", .kind = RO_STR, .dst = &out,
                        .help = "write here (atomically); default standard output"});
    ro_add(&c, (ro_opt){.name = "query", .arg = "NAME", .kind = RO_STR, .dst = &query,
                        .help = "print the SQL of one table instead: counts, best, best-span, geomean,\n"
                                "baselines, sizes, transfer, launch or boundary (its last column, next\n"
                                "value invalid, is computed after the SQL and only by perf-tables)"});
    ro_add(&c, (ro_opt){.name = "replay", .arg = "STORE[,STORE...]", .kind = RO_FN, .fn = parse_replays, .dst = &ss,
                        .help = "add the search replay of each store (explore replay's summary), in this order"});
    ro_add(&c, (ro_opt){.name = "loso", .arg = "STORE", .kind = RO_STR, .dst = &ss.loso,
                        .help = "add the leave-one-size-out table of explore fit on this store"});
    ro_add(&c, (ro_opt){.name = "transfer", .arg = "STORE", .kind = RO_STR, .dst = &ss.transfer,
                        .help = "add the replay of this store with models fitted on --transfer-fit's"});
    ro_add(&c, (ro_opt){.name = "transfer-fit", .arg = "STORE", .kind = RO_STR, .dst = &transfer_fit,
                        .help = "the store (another device) whose measurements --transfer's models fit"});
    ro_positional(&c, stores, argc);
    int rc = ro_parse(&c, argc, argv);
    int sections = ss.nreplay || ss.transfer || ss.loso;
    if (!rc && query && (c.npos || out || sections)) rc = ro_bad(c.name, "--query takes no store and no --out");
    else if (!rc && !ss.transfer != !transfer_fit) rc = ro_bad(c.name, "--transfer and --transfer-fit go together");
    else if (!rc && query && !pt_query_sql(query))
        rc = ro_bad(c.name, "unknown table '%s' (one of: %s)", query, pt_query_names());
    else if (!rc && !query && c.npos == 0) rc = ro_bad(c.name, "give at least one STORE.db");
    if (!rc && query) {
        fputs(pt_query_sql(query), stdout);
    } else if (!rc) {
        rg_err err;
        pt_section sec[NSEC];
        char *texts[NSEC] = {NULL};
        int nsec;
        rc = sections_of(&ss, transfer_fit, sec, texts, &nsec, &err);
        if (!rc)
            rc = out ? write_file(out, stores, c.npos, sec, nsec, &err) : pt_write_sections(stores, c.npos, sec, nsec, stdout, &err);
        for (int k = 0; k < NSEC; k++) free(texts[k]);
        if (rc) rc = ro_fail(c.name, &err);
    } else {
        rc = ro_exit(rc);
    }
    for (int k = 0; k < ss.nreplay; k++) free((char *)ss.replay[k]);
    free(stores);
    return rc;
}
