/* `explore export`, `merge`, `compare` and `prune`: command-line front ends of the
 * results store (option parsing, help texts, atomic output files, human-readable tables). */
#include "cli/rscli.h"
#include "cli/problem.h"
#include "results/store.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exit statuses: 0 success, 1 failure (or regressions found by compare), 2 bad usage (ro_bad). */

static int fail(const char *cmd, const rg_err *err)
{
    fprintf(stderr, "explore %s: %s\n", cmd, err->msg);
    return 1;
}

/* ---------------------------------------------------------------- export ---- */

static const char EXPORT_USAGE[] =
    "usage: explore export [--db PATH] --format csv|json [--out FILE] [filters]\n"
    "\n"
    "Writes one row per measurement with its run, configuration and dataset columns.\n"
    "CSV has a header line and RFC 4180 quoting; JSON is an array of objects with the\n"
    "configuration as a nested object plus per-kernel times and metrics.\n"
    "Filters (--model, --dataset, --task, --system, --device, --commit, --run) are all optional,\n"
    "combined with AND.\n"
    "\n";

static int export_to_file(rs_store *s, rs_format fmt, const char *out, const rs_filter *f, int64_t *rows, rg_err *err)
{
    char *tmp = rg_xasprintf("%s.tmp.%ld", out, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    *rows = rs_export(s, fmt, fp, f, err);
    int rc = *rows < 0 ? -1 : 0;
    if (fclose(fp) != 0 && !rc) rc = rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, out) != 0) rc = rg_errf(err, "cannot rename %s to %s: %s", tmp, out, strerror(errno));
    if (rc) remove(tmp);
    free(tmp);
    return rc;
}

static int format_from_name(const char *format, const char *out, rs_format *fmt)
{
    if (format) return rs_format_parse(format, fmt);
    const char *dot = out ? strrchr(out, '.') : NULL;
    return dot ? rs_format_parse(dot + 1, fmt) : -1;
}

int rs_cli_export(int argc, char **argv)
{
    const char *format = NULL, *out = NULL, *run = NULL;
    cp_problem p;
    cp_init(&p);
    rs_filter f = {0};
    ro_cmd c;
    ro_init(&c, "explore export", EXPORT_USAGE, NULL);
    cp_add_options(&c, &p, CP_DB);
    ro_add(&c, (ro_opt){.name = "format", .arg = "F", .kind = RO_STR, .dst = &format, .help = "csv or json (default: from the --out extension)"});
    ro_add(&c, (ro_opt){.name = "out", .arg = "FILE", .kind = RO_STR, .dst = &out,
                        .help = "write here (atomically: FILE appears complete or not at all);\ndefault standard output"});
    cp_add_options(&c, &p, CP_MODEL | CP_DATASET);
    /* a filter on the stored name, as it is (older stores hold "inference") */
    ro_add(&c, (ro_opt){.name = "task", .arg = "T", .kind = RO_STR, .dst = &f.task, .help = "a task as the store names it"});
    ro_add(&c, (ro_opt){.name = "system", .arg = "S", .kind = RO_STR, .dst = &f.system, .help = "generated, or a baseline's system"});
    ro_add(&c, (ro_opt){.name = "device", .arg = "KEY", .kind = RO_STR, .dst = &f.device_key, .help = "a device key"});
    ro_add(&c, (ro_opt){.name = "commit", .arg = "C", .kind = RO_STR, .dst = &f.commit, .help = "a code version"});
    ro_add(&c, (ro_opt){.name = "run", .arg = "RUN", .kind = RO_STR, .dst = &run, .help = "a run id, a uuid prefix, 'latest' or 'previous'"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    const char *db = p.db;
    f.model = p.model, f.dataset = p.dataset;
    rs_format fmt;
    if (format_from_name(format, out, &fmt)) {
        if (format) return ro_bad(c.name, "unknown format '%s' (csv or json)", format);
        return ro_bad(c.name, "--format csv|json is required");
    }
    rg_err err;
    rs_store *s = rs_open_read(db, &err);
    if (!s) return fail("export", &err);
    int64_t rows = 0;
    rc = run ? rs_resolve_run(s, run, &f.run_id, &err) : 0;
    if (!rc && out) rc = export_to_file(s, fmt, out, &f, &rows, &err);
    else if (!rc) rc = (rows = rs_export(s, fmt, stdout, &f, &err)) < 0 ? -1 : 0;
    rs_close(s);
    if (rc) return fail("export", &err);
    if (out) fprintf(stderr, "exported %lld measurements to %s\n", (long long)rows, out);
    return 0;
}

/* ---------------------------------------------------------------- merge ---- */

static const char MERGE_USAGE[] =
    "usage: explore merge --into DB SRC.db...\n"
    "\n"
    "Copies every run, measurement, kernel time and metric of each SRC into DB (created\n"
    "if missing), remapping ids. Runs and measurements already in DB (same uuid) are\n"
    "skipped, so merging the same file twice adds nothing. Each SRC is merged in one\n"
    "transaction and opened read-only. Runs keep their group (explore compare).\n"
    "\n";

int rs_cli_merge(int argc, char **argv)
{
    const char *into = NULL;
    const char **srcs = rg_xcalloc((size_t)argc, sizeof *srcs);
    ro_cmd c;
    ro_init(&c, "explore merge", MERGE_USAGE, NULL);
    ro_add(&c, (ro_opt){.name = "into", .arg = "DB", .kind = RO_STR, .dst = &into, .help = "the database to merge into (required)"});
    ro_positional(&c, srcs, argc);
    int rc = ro_parse(&c, argc, argv), nsrc = c.npos;
    if (!rc && !into) rc = ro_bad(c.name, "--into DB is required");
    else if (!rc && nsrc == 0) rc = ro_bad(c.name, "give at least one SRC.db to merge");
    if (rc) {
        free(srcs);
        return ro_exit(rc);
    }
    rg_err err;
    rs_store *dst = rs_open(into, &err);
    if (!dst) {
        free(srcs);
        return fail("merge", &err);
    }
    for (int i = 0; i < nsrc; i++) {
        rs_merge_stats st;
        if (rs_merge(dst, srcs[i], &st, &err)) {
            rc = fail("merge", &err);
            continue;
        }
        printf("%s: %lld runs added (%lld already present), %lld measurements added (%lld already present), "
               "%lld datasets and %lld variants added\n",
               srcs[i], (long long)st.runs_added, (long long)st.runs_known, (long long)st.measurements_added,
               (long long)st.measurements_skipped, (long long)st.datasets_added, (long long)st.variants_added);
    }
    rs_close(dst);
    free(srcs);
    return rc;
}

/* ---------------------------------------------------------------- compare ---- */

static const char COMPARE_USAGE[] =
    "usage: explore compare [--db PATH] [--base RUN] [--head RUN] [--threshold 0.05] [--all]\n"
    "\n"
    "Compares the best time per (system, model, dataset, task, dims, heads) of two runs or\n"
    "run groups and lists regressions (head slower than base by more than the threshold),\n"
    "problems that failed in head although they worked in base, and improvements. A group\n"
    "is the runs of one plan and night (all shards, merged or not; explore sweep --group).\n"
    "\n";

static const char COMPARE_EPILOG[] = "exit status: 0 none, 1 regressions or failures found, no problem in common, or an\n"
                                     "error, 2 bad usage\n";

static int parse_threshold(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno) return -1;
    if (*end == '%') v /= 100, end++;
    if (*end || !isfinite(v) || v < 0) return -1;
    *out = v;
    return 0;
}

static void print_run(const char *label, const rs_run_row *r)
{
    printf("%s: run %lld (%.8s, %s, commit %.12s, %s sm_%d, %s, %lld measurements, group %s)\n", label,
           (long long)r->id, r->uuid, r->started_at, r->commit[0] ? r->commit : "?", r->gpu_name[0] ? r->gpu_name : "?",
           r->sm, r->status, (long long)r->measurements, r->group);
}

/* A group side: how many runs (shards) and measurements it has. */
static int print_selection(rs_store *s, const char *label, const rs_selection *sel, rg_err *err)
{
    if (sel->run_id) {
        rs_run_row r;
        if (rs_get_run(s, sel->run_id, &r, err)) return -1;
        print_run(label, &r);
        return 0;
    }
    int64_t runs, meas;
    if (rs_selection_summary(s, sel, &runs, &meas, err)) return -1;
    printf("%s: group %s (%lld run%s, %lld measurements)\n", label, sel->group, (long long)runs, runs == 1 ? "" : "s",
           (long long)meas);
    return 0;
}

static void print_ms(double v)
{
    if (isnan(v)) printf(" %10s", "-");
    else printf(" %10.4f", v);
}

static void print_comparison(const rs_comparison *c, int all)
{
    printf("%-11s %-10s %-6s %-9s %-12s %-10s %10s %10s %7s\n", "verdict", "system", "model", "task", "dataset",
           "dims", "base ms", "head ms", "ratio");
    for (size_t i = 0; i < c->n; i++) {
        const rs_cmp_row *r = &c->rows[i];
        if (!all && r->kind != RS_CMP_REGRESSION && r->kind != RS_CMP_FAILED && r->kind != RS_CMP_IMPROVEMENT) continue;
        char dims[40];
        snprintf(dims, sizeof dims, "%dx%dx%d", r->dim_in, r->dim_out, r->heads);
        printf("%-11s %-10s %-6s %-9s %-12s %-10s", rs_cmp_kind_name(r->kind), r->system, r->model, r->task,
               r->dataset, dims);
        print_ms(r->base_ms);
        print_ms(r->head_ms);
        if (isnan(r->ratio)) printf(" %7s\n", "-");
        else printf(" %6.3fx\n", r->ratio);
    }
    printf("%d regressions, %d failed, %d improvements, %d unchanged, %d missing in head, %d new in head\n",
           c->count[RS_CMP_REGRESSION], c->count[RS_CMP_FAILED], c->count[RS_CMP_IMPROVEMENT],
           c->count[RS_CMP_SAME], c->count[RS_CMP_MISSING], c->count[RS_CMP_NEW]);
}

static int same_selection(const rs_selection *a, const rs_selection *b)
{
    return a->run_id == b->run_id && (a->run_id || !strcmp(a->group, b->group));
}

static int run_compare(rs_store *s, const char *base_spec, const char *head_spec, double threshold, int all, rg_err *err)
{
    rs_selection base, head;
    if (rs_resolve_selection(s, base_spec, &base, err) || rs_resolve_selection(s, head_spec, &head, err)) return -1;
    rs_comparison c;
    if (rs_compare_selections(s, &base, &head, threshold, &c, err)) return -1;
    if (print_selection(s, "base", &base, err) || print_selection(s, "head", &head, err)) {
        rs_comparison_free(&c);
        return -1;
    }
    int same = same_selection(&base, &head);
    printf("threshold %.3g%%%s\n", threshold * 100, same ? " (base and head are the same)" : "");
    print_comparison(&c, all);
    int bad = c.count[RS_CMP_REGRESSION] + c.count[RS_CMP_FAILED], common = rs_comparison_common(&c);
    rs_comparison_free(&c);
    /* nothing in common is no evidence of "no regression": a nightly check must not pass on it */
    if (!common) fprintf(stderr, "explore compare: base and head have no problem in common: nothing was compared\n");
    return bad || !common ? 1 : 0;
}

int rs_cli_compare(int argc, char **argv)
{
    const char *base = "previous", *head = "latest", *thr = "0.05";
    int all = 0;
    cp_problem p;
    cp_init(&p);
    ro_cmd c;
    ro_init(&c, "explore compare", COMPARE_USAGE, COMPARE_EPILOG);
    cp_add_options(&c, &p, CP_DB);
    ro_add(&c, (ro_opt){.name = "base", .arg = "RUN", .kind = RO_STR, .dst = &base, .help = "'previous' (default) or 'latest' group, group:NAME, a run id or a run uuid prefix"});
    ro_add(&c, (ro_opt){.name = "head", .arg = "RUN", .kind = RO_STR, .dst = &head, .help = "same (default latest)"});
    ro_add(&c, (ro_opt){.name = "threshold", .arg = "T", .kind = RO_STR, .dst = &thr, .help = "relative change that counts, as a fraction or percent: 0.05, 5%"});
    ro_add(&c, (ro_opt){.name = "all", .arg = NULL, .kind = RO_FLAG, .dst = &all, .help = "also list unchanged, missing and new problems"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    const char *db = p.db;
    double threshold;
    if (parse_threshold(thr, &threshold))
        return ro_bad(c.name, "bad --threshold '%s' (a non-negative fraction like 0.05, or 5%%)", thr);
    rg_err err;
    rs_store *s = rs_open_read(db, &err);
    if (!s) return fail("compare", &err);
    rc = run_compare(s, base, head, threshold, all, &err);
    rs_close(s);
    return rc < 0 ? fail("compare", &err) : rc;
}

/* ---------------------------------------------------------------- prune ---- */

static const char PRUNE_USAGE[] =
    "usage: explore prune [--db PATH] --keep-latest-commit\n"
    "\n"
    "Keeps, per problem (device, dataset, system, model, task, dims, heads), only the rows of\n"
    "the commit that measured most of its configs (ties: the newest), the rows `explore fit`\n"
    "reads, plus every row with per-kernel CUPTI counters (profiles are not repeated), and\n"
    "deletes the other rows of superseded commits with their kernel times and metrics, then\n"
    "compacts the file. For stores of record (results/<gpu>/results.db) that no sweep\n"
    "is writing to.\n"
    "\n";

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int rs_cli_prune(int argc, char **argv)
{
    int keep_latest = 0;
    cp_problem p;
    cp_init(&p);
    ro_cmd c;
    ro_init(&c, "explore prune", PRUNE_USAGE, NULL);
    cp_add_options(&c, &p, CP_DB);
    ro_add(&c, (ro_opt){.name = "keep-latest-commit", .kind = RO_FLAG, .dst = &keep_latest,
                        .help = "required: the one pruning rule there is, named so that a\n"
                                "deleting command is never run by accident"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    if (!keep_latest) return ro_bad(c.name, "--keep-latest-commit is required (see explore prune --help)");
    const char *db = p.db;
    rg_err err;
    rs_store *s = rs_open_existing(db, &err);
    if (!s) return fail("prune", &err) + 1;   /* a missing or foreign file is bad input */
    long long before = file_size(db);
    rs_prune_stats st;
    rc = rs_prune_superseded(s, &st, &err);
    rs_close(s);
    if (rc) return fail("prune", &err);
    printf("%s: %lld measurements kept, %lld removed (with %lld kernel times, %lld metrics), %lld empty runs "
           "removed; %.1f MB -> %.1f MB\n",
           db, (long long)st.measurements_kept, (long long)st.measurements_removed,
           (long long)st.kernel_times_removed, (long long)st.metrics_removed, (long long)st.runs_removed,
           before / 1e6, file_size(db) / 1e6);
    return 0;
}
