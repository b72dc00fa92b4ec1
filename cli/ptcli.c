/* `explore perf-tables`: option parsing, the atomic output file and --query for results/perftab
 * (the markdown tables of docs/perf-tables.md, from stores opened read-only). */
#include "cli/ptcli.h"
#include "common/opts.h"
#include "results/perftab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: explore perf-tables [--out FILE] STORE.db...\n"
    "       explore perf-tables --query NAME\n"
    "\n"
    "Writes the performance tables of record (docs/perf-tables.md: measurement counts, the best\n"
    "generated variant per problem against its floor, the generated code against every baseline)\n"
    "from the stores, each opened read-only. Each table names its store, its query and the commits of\n"
    "its rows; the output depends only on the stores and the paths as given, so running it twice\n"
    "gives the same bytes. `make perf-tables` runs it on the committed stores results/h100/*.db.\n"
    "--query prints one table's SQL, to run it yourself: explore perf-tables --query best | sqlite3\n"
    "-header -markdown results/h100/results.db\n"
    "\n";

/* FILE appears complete or not at all: a failed run leaves the committed tables as they were. */
static int write_file(const char *path, const char *const *stores, int n, rg_err *err)
{
    char *tmp = rg_xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    int rc = pt_write(stores, n, fp, err);
    if (fclose(fp) != 0 && !rc) rc = rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path) != 0) rc = rg_errf(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc) remove(tmp);
    free(tmp);
    return rc;
}

int ptc_main(int argc, char **argv)
{
    const char *out = NULL, *query = NULL;
    const char **stores = rg_xcalloc((size_t)argc, sizeof *stores);
    ro_cmd c;
    ro_init(&c, "explore perf-tables", USAGE, NULL);
    ro_add(&c, (ro_opt){.name = "out", .arg = "FILE", .kind = RO_STR, .dst = &out,
                        .help = "write here (atomically); default standard output"});
    ro_add(&c, (ro_opt){.name = "query", .arg = "NAME", .kind = RO_STR, .dst = &query,
                        .help = "print the SQL of one table instead: counts, best, geomean or baselines"});
    ro_positional(&c, stores, argc);
    int rc = ro_parse(&c, argc, argv);
    if (!rc && query && (c.npos || out)) rc = ro_bad(c.name, "--query takes no store and no --out");
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
    rc = out ? write_file(out, stores, c.npos, &err) : pt_write(stores, c.npos, stdout, &err);
    free(stores);
    return rc ? ro_fail(c.name, &err) : 0;
}
