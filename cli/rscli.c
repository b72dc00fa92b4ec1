/* `explore export`, `merge`, `compare` and `prune`: command-line front ends of the
 * results store (option parsing, help texts, atomic output files, human-readable tables). */
#include "results/store.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exit statuses: 0 success, 1 failure (or regressions found by compare), 2 bad usage. */
enum { EXIT_USAGE = 2 };

typedef struct cli_opt {
    const char *name;          /* without the leading "--" */
    const char **value;        /* option with a value */
    int *flag;                 /* option without a value */
} cli_opt;

static void suggest_option(const char *cmd, const char *arg, const cli_opt *opts, size_t n)
{
    const char *name = arg + strspn(arg, "-");
    const char *best = NULL;
    int best_d = 3;
    for (size_t i = 0; i < n; i++) {
        int d = rg_edit_distance(name, opts[i].name);
        if (d < best_d) best_d = d, best = opts[i].name;
    }
    if (best) fprintf(stderr, "explore %s: unknown option '%s' (did you mean --%s?)\n", cmd, arg, best);
    else fprintf(stderr, "explore %s: unknown option '%s' (see explore %s --help)\n", cmd, arg, cmd);
}

/* Parses --name VALUE, --name=VALUE and flags; other words go to pos[] (may be NULL when the
 * command takes none). Returns 0, 1 for --help, or EXIT_USAGE after printing why. */
static int parse_args(const char *cmd, int argc, char **argv, const cli_opt *opts, size_t n, char **pos, int *npos)
{
    if (npos) *npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 1;
        if (a[0] != '-' || a[1] == 0) {
            if (!pos) {
                fprintf(stderr, "explore %s: unexpected argument '%s' (see explore %s --help)\n", cmd, a, cmd);
                return EXIT_USAGE;
            }
            pos[(*npos)++] = argv[i];
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const cli_opt *o = NULL;
        for (size_t k = 0; k < n && !o; k++)
            if (a[0] == '-' && a[1] == '-' && strlen(opts[k].name) == len - 2 && !strncmp(a + 2, opts[k].name, len - 2))
                o = &opts[k];
        if (!o) {
            suggest_option(cmd, a, opts, n);
            return EXIT_USAGE;
        }
        if (o->flag) {
            if (eq) {
                fprintf(stderr, "explore %s: --%s takes no value\n", cmd, o->name);
                return EXIT_USAGE;
            }
            *o->flag = 1;
        } else if (eq) {
            *o->value = eq + 1;
        } else if (i + 1 < argc) {
            *o->value = argv[++i];
        } else {
            fprintf(stderr, "explore %s: --%s needs a value\n", cmd, o->name);
            return EXIT_USAGE;
        }
    }
    return 0;
}

static int fail(const char *cmd, const rg_err *err)
{
    fprintf(stderr, "explore %s: %s\n", cmd, err->msg);
    return 1;
}

/* ---------------------------------------------------------------- export ---- */

static const char EXPORT_HELP[] =
    "usage: explore export [--db PATH] --format csv|json [--out FILE] [filters]\n"
    "\n"
    "Writes one row per measurement with its run, configuration and dataset columns.\n"
    "CSV has a header line and RFC 4180 quoting; JSON is an array of objects with the\n"
    "configuration as a nested object plus per-kernel times and metrics.\n"
    "\n"
    "options:\n"
    "  --db PATH        results database (default " RS_DEFAULT_DB ")\n"
    "  --format F       csv or json (default: from the --out extension)\n"
    "  --out FILE       write here (atomically: FILE appears complete or not at all);\n"
    "                   default standard output\n"
    "filters (all optional, combined with AND):\n"
    "  --model M  --dataset D  --task T  --system S  --device KEY  --commit C\n"
    "  --run RUN        a run id, a uuid prefix, 'latest' or 'previous'\n";

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
    const char *db = RS_DEFAULT_DB, *format = NULL, *out = NULL, *run = NULL;
    rs_filter f = {0};
    const cli_opt opts[] = {
        {"db", &db, NULL}, {"format", &format, NULL}, {"out", &out, NULL}, {"model", &f.model, NULL},
        {"dataset", &f.dataset, NULL}, {"task", &f.task, NULL}, {"system", &f.system, NULL},
        {"device", &f.device_key, NULL}, {"commit", &f.commit, NULL}, {"run", &run, NULL},
    };
    int rc = parse_args("export", argc, argv, opts, sizeof opts / sizeof opts[0], NULL, NULL);
    if (rc == 1) fputs(EXPORT_HELP, stdout);
    if (rc) return rc == 1 ? 0 : rc;
    rs_format fmt;
    if (format_from_name(format, out, &fmt)) {
        if (format) fprintf(stderr, "explore export: unknown format '%s' (csv or json)\n", format);
        else fprintf(stderr, "explore export: --format csv|json is required\n");
        return EXIT_USAGE;
    }
    rg_err err;
    rs_store *s = rs_open_existing(db, &err);
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

static const char MERGE_HELP[] =
    "usage: explore merge --into DB SRC.db...\n"
    "\n"
    "Copies every run, measurement, kernel time and metric of each SRC into DB (created\n"
    "if missing), remapping ids. Runs and measurements already in DB (same uuid) are\n"
    "skipped, so merging the same file twice adds nothing. Each SRC is merged in one\n"
    "transaction and opened read-only.\n";

int rs_cli_merge(int argc, char **argv)
{
    const char *into = NULL;
    const cli_opt opts[] = {{"into", &into, NULL}};
    char **srcs = rg_xcalloc((size_t)argc, sizeof *srcs);
    int nsrc = 0;
    int rc = parse_args("merge", argc, argv, opts, 1, srcs, &nsrc);
    if (rc == 1) fputs(MERGE_HELP, stdout);
    else if (!rc && !into) rc = EXIT_USAGE, fputs("explore merge: --into DB is required\n", stderr);
    else if (!rc && nsrc == 0) rc = EXIT_USAGE, fputs("explore merge: give at least one SRC.db to merge\n", stderr);
    if (rc) {
        free(srcs);
        return rc == 1 ? 0 : rc;
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

static const char COMPARE_HELP[] =
    "usage: explore compare [--db PATH] [--base RUN] [--head RUN] [--threshold 0.05] [--all]\n"
    "\n"
    "Compares the best time per (system, model, dataset, task, dims, heads) of two runs\n"
    "and lists regressions (head slower than base by more than the threshold), problems\n"
    "that failed in head although they worked in base, and improvements.\n"
    "\n"
    "options:\n"
    "  --db PATH        results database (default " RS_DEFAULT_DB ")\n"
    "  --base RUN       run id, uuid prefix, 'latest' or 'previous' (default previous)\n"
    "  --head RUN       same (default latest)\n"
    "  --threshold T    relative change that counts, as a fraction or percent: 0.05, 5%\n"
    "  --all            also list unchanged, missing and new problems\n"
    "exit status: 0 none, 1 regressions or failures found (or an error), 2 bad usage\n";

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
    printf("%s: run %lld (%.8s, %s, commit %.12s, %s sm_%d, %s, %lld measurements)\n", label, (long long)r->id,
           r->uuid, r->started_at, r->commit[0] ? r->commit : "?", r->gpu_name[0] ? r->gpu_name : "?", r->sm,
           r->status, (long long)r->measurements);
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

static int run_compare(rs_store *s, const char *base_spec, const char *head_spec, double threshold, int all, rg_err *err)
{
    int64_t base, head;
    rs_run_row rb, rh;
    if (rs_resolve_run(s, base_spec, &base, err) || rs_resolve_run(s, head_spec, &head, err) ||
        rs_get_run(s, base, &rb, err) || rs_get_run(s, head, &rh, err))
        return -1;
    rs_comparison c;
    if (rs_compare(s, base, head, threshold, &c, err)) return -1;
    print_run("base", &rb);
    print_run("head", &rh);
    printf("threshold %.3g%%%s\n", threshold * 100, base == head ? " (base and head are the same run)" : "");
    print_comparison(&c, all);
    int bad = c.count[RS_CMP_REGRESSION] + c.count[RS_CMP_FAILED];
    rs_comparison_free(&c);
    return bad ? 1 : 0;
}

int rs_cli_compare(int argc, char **argv)
{
    const char *db = RS_DEFAULT_DB, *base = "previous", *head = "latest", *thr = "0.05";
    int all = 0;
    const cli_opt opts[] = {
        {"db", &db, NULL}, {"base", &base, NULL}, {"head", &head, NULL}, {"threshold", &thr, NULL}, {"all", NULL, &all},
    };
    int rc = parse_args("compare", argc, argv, opts, sizeof opts / sizeof opts[0], NULL, NULL);
    if (rc == 1) fputs(COMPARE_HELP, stdout);
    if (rc) return rc == 1 ? 0 : rc;
    double threshold;
    if (parse_threshold(thr, &threshold)) {
        fprintf(stderr, "explore compare: bad --threshold '%s' (a non-negative fraction like 0.05, or 5%%)\n", thr);
        return EXIT_USAGE;
    }
    rg_err err;
    rs_store *s = rs_open_existing(db, &err);
    if (!s) return fail("compare", &err);
    rc = run_compare(s, base, head, threshold, all, &err);
    rs_close(s);
    return rc < 0 ? fail("compare", &err) : rc;
}

/* ---------------------------------------------------------------- prune ---- */

static const char PRUNE_HELP[] =
    "usage: explore prune [--db PATH] --keep-latest-commit\n"
    "\n"
    "Keeps, per problem (device, dataset, system, model, task, dims, heads), only the rows of\n"
    "the commit that measured most of its configs (ties: the newest), the rows `explore fit`\n"
    "reads, plus every row with per-kernel CUPTI counters (profiles are not repeated), and\n"
    "deletes the other rows of superseded commits with their kernel times and metrics, then\n"
    "compacts the file. For stores of record (results/<gpu>/results.db) that no sweep\n"
    "is writing to.\n"
    "\n"
    "options:\n"
    "  --db PATH             results database (default " RS_DEFAULT_DB ")\n"
    "  --keep-latest-commit  required: the one pruning rule there is, named so that a\n"
    "                        deleting command is never run by accident\n";

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int rs_cli_prune(int argc, char **argv)
{
    const char *db = RS_DEFAULT_DB;
    int keep_latest = 0;
    const cli_opt opts[] = {{"db", &db, NULL}, {"keep-latest-commit", NULL, &keep_latest}};
    int rc = parse_args("prune", argc, argv, opts, sizeof opts / sizeof opts[0], NULL, NULL);
    if (rc == 1) fputs(PRUNE_HELP, stdout);
    if (rc) return rc == 1 ? 0 : rc;
    if (!keep_latest) {
        fputs("explore prune: --keep-latest-commit is required (see explore prune --help)\n", stderr);
        return EXIT_USAGE;
    }
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
