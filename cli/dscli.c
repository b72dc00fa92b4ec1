/* `explore datasets list|info|fetch|export|bench|order`: what is registered and present, graph
 * statistics against the registry, downloads, exports, load benchmarks, node orderings compared. */
#include "cli/dscli.h"
#include "datasets/dataset.h"
#include "datasets/dsbench.h"
#include "datasets/npz.h"
#include "datasets/order.h"
#include "common/json.h"
#include "cli/problem.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- Arguments ---- */

typedef struct cli_args {
    const char *name;                  /* the one positional argument */
    cp_problem p;                      /* --data-dir */
    const char *cache_dir, *format, *out, *url;
    int json, no_cache;
} cli_args;

enum { OPT_CACHE_DIR = 1, OPT_JSON = 2, OPT_NO_CACHE = 4, OPT_URL = 8, OPT_EXPORT = 16 };

/* The options of one subcommand (OPT_* bits; --data-dir always) and its NAME when want_name.
 * -1 to go on; else the exit status. */
static int parse_args(int argc, char **argv, const char *cmd, const char *usage, unsigned opts, int want_name,
                      cli_args *a)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    ro_cmd c;
    ro_init(&c, cmd, usage, NULL);
    cp_add_options(&c, &a->p, CP_DATA_DIR);
    if (opts & OPT_CACHE_DIR)
        ro_add(&c, (ro_opt){.name = "cache-dir", .arg = "DIR", .kind = RO_STR, .dst = &a->cache_dir, .help = "cache directory (default $RGNN_CACHE, else datasets/cache)"});
    if (opts & OPT_EXPORT) {
        ro_add(&c, (ro_opt){.name = "format", .arg = "F", .kind = RO_STR, .dst = &a->format, .help = "npz (the only one)"});
        ro_add(&c, (ro_opt){.name = "out", .arg = "FILE", .kind = RO_STR, .dst = &a->out, .help = "where to write (default <name>.npz)"});
    }
    if (opts & OPT_URL) ro_add(&c, (ro_opt){.name = "url", .arg = "URL", .kind = RO_STR, .dst = &a->url, .help = "another source (a mirror, or file:///path/)"});
    if (opts & OPT_JSON) ro_add(&c, (ro_opt){.name = "json", .arg = NULL, .kind = RO_FLAG, .dst = &a->json, .help = "print one JSON object"});
    if (opts & OPT_NO_CACHE)
        ro_add(&c, (ro_opt){.name = "no-cache", .arg = NULL, .kind = RO_FLAG, .dst = &a->no_cache, .help = "parse the source files even if a cache exists; write none"});
    const char *pos[1];
    if (want_name) ro_positional(&c, pos, 1);
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    if (want_name && !c.npos) return ro_bad(cmd, "which dataset? (give a NAME; see --help)");
    a->name = want_name ? pos[0] : NULL;
    return -1;
}

static ds_options options_of(const cli_args *a)
{
    ds_options o = {a->p.data_dir, a->cache_dir, a->no_cache, 0};
    return o;
}

static int fail(const char *cmd, const rg_err *err)
{
    fprintf(stderr, "explore datasets %s: %s\n", cmd, err->msg);
    return 1;
}

/* ---- list ---- */

static const char LIST_HELP[] =
    "usage: explore datasets list [--data-dir DIR] [--cache-dir DIR]\n"
    "Lists the registered datasets: found (files present), cached (a cache of the current\n"
    "files exists) or missing, where each was looked for, and the expected size.\n"
    "Data dir: --data-dir, else $RGNN_DATA, else datasets/data. Cache dir: --cache-dir, else\n"
    "$RGNN_CACHE, else datasets/cache.\n";

static void print_count(int64_t v)
{
    if (v) printf(" %12lld", (long long)v);
    else printf(" %12s", "-");
}

static int cmd_list(int argc, char **argv)
{
    cli_args a;
    int rc = parse_args(argc, argv, "explore datasets list", LIST_HELP, OPT_CACHE_DIR, 0, &a);
    if (rc >= 0) return rc;
    ds_options opt = options_of(&a);
    const char *origin = ds_data_dir_origin(&opt);
    printf("data dir:  %s (%s)\ncache dir: %s\n\n", ds_data_dir(&opt),
           !strcmp(origin, "default") ? "the default; change with --data-dir or $RGNN_DATA" : origin,
           ds_cache_dir(&opt));
    printf("%-9s %-8s %12s %12s  %-11s %s\n", "name", "status", "nodes", "edges", "format",
           "folder");
    int n;
    const ds_entry *reg = ds_registry(&n);
    for (int i = 0; i < n; i++) {
        char *dir = ds_entry_dir(&reg[i], &opt);
        char *missing = ds_missing_files(&reg[i], dir);
        char *cache = missing ? NULL : ds_cache_path(reg[i].name, dir, &opt);
        const char *status = missing ? "missing" : rg_file_exists(cache) ? "cached" : "found";
        printf("%-9s %-8s", reg[i].name, status);
        print_count(reg[i].expected.nodes);
        print_count(reg[i].expected.edges);
        printf("  %-11s %s\n", reg[i].format, dir);
        free(cache);
        free(missing);
        free(dir);
    }
    printf("\nnodes/edges: expected after preprocessing (- = not published). "
           "`explore datasets fetch NAME` downloads one.\n");
    return 0;
}

/* ---- info ---- */

static const char INFO_HELP[] =
    "usage: explore datasets info NAME [--data-dir DIR] [--cache-dir DIR] [--json] [--no-cache]\n"
    "Loads NAME (a registered name or alias, synth:SPEC, or a dataset folder) and prints its\n"
    "statistics next to the registry's expected counts. --json prints one JSON object;\n"
    "--no-cache parses the source files even if a cache exists and writes none.\n";

typedef struct check {
    const char *what;
    int64_t got, want;   /* want 0: not published */
} check;

static int fill_checks(const hg_stats *s, const ds_entry *e, check c[5])
{
    ds_expected x = e ? e->expected : (ds_expected){0, 0, 0, 0, 0};
    check all[5] = {{"node_types", s->node_types, x.node_types},
                    {"edge_types", s->edge_types, x.edge_types},
                    {"nodes", s->nodes, x.nodes},
                    {"edges", s->edges, x.edges},
                    {"unique_src_etype_pairs", s->unique_pairs, x.unique_pairs}};
    memcpy(c, all, sizeof all);
    int mismatches = 0;
    for (int i = 0; i < 5; i++) mismatches += c[i].want && c[i].want != c[i].got;
    return mismatches;
}

static void info_json(const hg_graph *g, const hg_stats *s, const ds_entry *e)
{
    rgj_writer w = {0};
    check c[5];
    int mismatches = fill_checks(s, e, c);
    rgj_begin_object(&w);
    rgj_kv_string(&w, "name", g->name ? g->name : "");
    for (int i = 0; i < 5; i++) rgj_kv_int(&w, c[i].what, c[i].got);
    rgj_kv_double(&w, "compaction_ratio", s->compaction_ratio);
    rgj_kv_double(&w, "avg_degree", s->avg_degree);
    rgj_kv_double(&w, "density", s->density);
    rgj_kv_int(&w, "relation_size_min", s->rel_min);
    rgj_kv_double(&w, "relation_size_median", s->rel_median);
    rgj_kv_int(&w, "relation_size_max", s->rel_max);
    rgj_kv_double(&w, "relation_size_skew", s->rel_skew);
    rgj_kv_int(&w, "max_in_degree", s->max_in_degree);
    rgj_kv_double(&w, "in_degree_skew", s->in_degree_skew);
    rgj_key(&w, "node_type_counts");
    rgj_begin_object(&w);
    for (int32_t t = 0; t < g->num_ntypes; t++)
        rgj_kv_int(&w, g->ntype_names[t], g->ntype_ptr[t + 1] - g->ntype_ptr[t]);
    rgj_end_object(&w);
    rgj_key(&w, "expected");
    if (e) {
        rgj_begin_object(&w);
        for (int i = 0; i < 5; i++) {
            rgj_key(&w, c[i].what);
            if (c[i].want) rgj_int(&w, c[i].want);
            else rgj_null(&w);
        }
        rgj_end_object(&w);
        rgj_key(&w, "matches_expected");
        rgj_bool(&w, mismatches == 0);
    } else {
        rgj_null(&w);
        rgj_key(&w, "matches_expected");
        rgj_null(&w);
    }
    rgj_end_object(&w);
    char *text = rgj_finish(&w);
    printf("%s\n", text);
    free(text);
}

static void info_text(const hg_graph *g, const hg_stats *s, const ds_entry *e)
{
    check c[5];
    int mismatches = fill_checks(s, e, c);
    printf("dataset %s%s%s\n\n", g->name ? g->name : "", e ? ": " : "", e ? e->description : "");
    printf("%-24s %12s %12s\n", "", "loaded", "expected");
    for (int i = 0; i < 5; i++) {
        printf("%-24s %12lld", c[i].what, (long long)c[i].got);
        if (c[i].want) printf(" %12lld  %s\n", (long long)c[i].want, c[i].want == c[i].got ? "ok" : "DIFFERS");
        else printf(" %12s\n", "-");
    }
    printf("\ncompaction ratio         %.4f   (unique (src, etype) pairs / edges)\n",
           s->compaction_ratio);
    printf("average degree           %.2f\n", s->avg_degree);
    printf("density                  %.4g   (edges / nodes^2)\n", s->density);
    printf("relation sizes           min %lld, median %.1f, max %lld, skew %.2f\n",
           (long long)s->rel_min, s->rel_median, (long long)s->rel_max, s->rel_skew);
    printf("in-degrees               max %lld, skew %.2f\n", (long long)s->max_in_degree,
           s->in_degree_skew);
    printf("node types              ");
    for (int32_t t = 0; t < g->num_ntypes; t++)
        printf("%s %s %d", t ? "," : "", g->ntype_names[t], g->ntype_ptr[t + 1] - g->ntype_ptr[t]);
    printf("\n\n%s\n", !e ? "no registry entry: nothing to compare with"
                          : mismatches ? "DIFFERS from the registry's expected counts"
                                       : "matches the registry's expected counts");
}

static int cmd_info(int argc, char **argv)
{
    cli_args a;
    int rc = parse_args(argc, argv, "explore datasets info", INFO_HELP, OPT_CACHE_DIR | OPT_JSON | OPT_NO_CACHE, 1, &a);
    if (rc >= 0) return rc;
    rg_err err;
    ds_options opt = options_of(&a);
    hg_graph *g = ds_open(a.name, &opt, &err);
    if (!g) return fail("info", &err);
    hg_stats s;
    hg_stats_compute(g, &s);
    /* a folder named after a registered set is compared with it; a synth: graph is not */
    int synth = !strncmp(a.name, "synth:", strlen("synth:"));
    const ds_entry *e = synth ? NULL : ds_find(a.name);
    if (!e && !synth && g->name) e = ds_find(g->name);
    if (a.json) info_json(g, &s, e);
    else info_text(g, &s, e);
    hg_free(g);
    return 0;
}

/* ---- Child processes (curl, unzip, sha256sum) ---- */

typedef enum { CHILD_PLAIN, CHILD_STDOUT, CHILD_CURL } child_mode;

/* curl's stderr mixes its progress bar with "curl: (N) ..." errors: the bar is passed
 * through, the error kept so that the caller can say it in its own single line. Blank
 * segments only end a bar line that was drawn (else they would leave an empty line). */
static void relay_segment(rg_str *seg, rg_str *captured, int *bar_drawn)
{
    if (!seg->len) return;
    if (!strncmp(seg->s, "curl: ", 6)) {
        while (seg->len && (seg->s[seg->len - 1] == '\n' || seg->s[seg->len - 1] == '\r'))
            seg->s[--seg->len] = 0;
        captured->len = 0;
        rg_str_puts(captured, seg->s);
    } else if (strspn(seg->s, " \t\r\n") < seg->len) {
        fwrite(seg->s, 1, seg->len, stderr);
        *bar_drawn = seg->s[seg->len - 1] != '\n';
    } else if (*bar_drawn && strchr(seg->s, '\n')) {
        fputc('\n', stderr);
        *bar_drawn = 0;
    }
    seg->len = 0;
    seg->s[0] = 0;
}

static void drain(int fd, child_mode mode, rg_str *captured)
{
    rg_str seg = {0};
    int bar_drawn = 0;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (mode == CHILD_STDOUT) {
                rg_str_putc(captured, buf[i]);
                continue;
            }
            rg_str_putc(&seg, buf[i]);
            if (buf[i] == '\n' || buf[i] == '\r') relay_segment(&seg, captured, &bar_drawn);
        }
    }
    if (mode == CHILD_CURL && seg.s) relay_segment(&seg, captured, &bar_drawn);
    if (bar_drawn) fputc('\n', stderr);
    fflush(stderr);
    rg_str_free(&seg);
}

/* Runs argv (no shell: names and URLs are passed as they are). Returns the exit status,
 * 127 when the program cannot be started, 128 + signal when it was killed. */
static int run_child(char *const argv[], child_mode mode, rg_str *captured)
{
    int fds[2] = {-1, -1};
    if (mode != CHILD_PLAIN && pipe(fds) != 0) return 127;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 127;
    if (pid == 0) {
        if (mode != CHILD_PLAIN) {
            dup2(fds[1], mode == CHILD_STDOUT ? 1 : 2);
            close(fds[0]);
            close(fds[1]);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    if (mode != CHILD_PLAIN) {
        close(fds[1]);
        drain(fds[0], mode, captured);
        close(fds[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static int download(const char *name, const char *url, const char *path, rg_err *err)
{
    fprintf(stderr, "downloading %s\n", url);
    char *argv[] = {"curl", "-fL", "--progress-bar", "--connect-timeout", "30", "-o",
                    (char *)path, (char *)url, NULL};
    rg_str msg = {0};
    int rc = run_child(argv, CHILD_CURL, &msg);
    if (rc != 0) {
        /* "curl: (6) Could not resolve host: x" -> "Could not resolve host: x" */
        const char *why = msg.s ? msg.s + strlen("curl: ") : NULL;
        if (why && why[0] == '(' && strchr(why, ')')) why = strchr(why, ')') + 1;
        while (why && *why == ' ') why++;
        if (rc == 127) rg_errf(err, "cannot download %s from %s: curl is not installed", name, url);
        else if (why && *why) rg_errf(err, "cannot download %s from %s: %s", name, url, why);
        else rg_errf(err, "cannot download %s from %s: curl exit status %d", name, url, rc);
    }
    rg_str_free(&msg);
    return rc ? -1 : 0;
}

static int sha256_of(const char *path, char hex[65], rg_err *err)
{
    char *argv[] = {"sha256sum", "--", (char *)path, NULL};
    rg_str out = {0};
    int rc = run_child(argv, CHILD_STDOUT, &out);
    int ok = rc == 0 && out.len >= 64 && strspn(out.s, "0123456789abcdef") == 64;
    if (ok) snprintf(hex, 65, "%.64s", out.s);
    else rg_errf(err, "cannot compute the sha256 of %s (%s)", path,
                 rc == 127 ? "sha256sum is not installed" : "sha256sum failed");
    rg_str_free(&out);
    return ok ? 0 : -1;
}

/* Checks every "<hex>  <file>" of the registry found as a download (in stage) or in the
 * unpacked dataset folder (root). Returns the number checked, or -1 on a mismatch. */
static int verify_sums(const ds_entry *e, const char *url, const char *stage, const char *root,
                       rg_err *err)
{
    int checked = 0;
    for (const char *line = e->sha256; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > 66) {
            char *file = rg_xasprintf("%.*s", (int)(len - 66), line + 66);
            char *in_stage = rg_xasprintf("%s/%s", stage, file);
            char *in_root = rg_xasprintf("%s/%s", root, file);
            const char *path = rg_file_exists(in_root) ? in_root
                             : rg_file_exists(in_stage) ? in_stage : NULL;
            char got[65];
            int rc = 0;
            if (path && sha256_of(path, got, err) != 0) rc = -1;
            else if (path && strncmp(got, line, 64) != 0)
                rc = rg_errf(err, "sha256 mismatch for %s from %s: expected %.64s, got %s "
                                  "(damaged download, or the file changed upstream)",
                             file, url, line, got);
            checked += path != NULL;
            free(file);
            free(in_stage);
            free(in_root);
            if (rc) return -1;
        }
        line += end ? len + 1 : len;
    }
    return checked;
}

/* The folder of an unpacked archive that holds the dataset (archives differ in nesting). */
static char *locate_root(const ds_entry *e, const char *dir, int depth)
{
    char *missing = ds_missing_files(e, dir);
    if (!missing) return rg_xstrdup(dir);
    free(missing);
    if (depth >= 3) return NULL;
    DIR *d = opendir(dir);
    char *found = NULL;
    for (struct dirent *de; d && !found && (de = readdir(d));) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "__MACOSX")) continue;
        char *sub = rg_xasprintf("%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) found = locate_root(e, sub, depth + 1);
        free(sub);
    }
    if (d) closedir(d);
    return found;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/* Downloads into stage and returns the folder holding the dataset's files (caller frees). */
static char *fetch_into(const ds_entry *e, const char *url, const char *stage, int *checked,
                        rg_err *err)
{
    if (ends_with(url, ".zip")) {
        const char *slash = strrchr(url, '/');
        char *zip = rg_xasprintf("%s/%s", stage, slash ? slash + 1 : url);
        char *unpacked = rg_xasprintf("%s/unpacked", stage);
        char *root = NULL;
        if (download(e->name, url, zip, err) == 0 &&
            (*checked = verify_sums(e, url, stage, stage, err)) >= 0) {
            fprintf(stderr, "unpacking %s\n", zip);
            char *argv[] = {"unzip", "-q", "-o", zip, "-d", unpacked, NULL};   /* -o: never prompt */
            int rc = run_child(argv, CHILD_PLAIN, NULL);
            if (rc != 0)
                rg_errf(err, "cannot unpack %s: %s", zip,
                        rc == 127 ? "unzip is not installed" : "unzip failed");
            else if (!(root = locate_root(e, unpacked, 0)))
                rg_errf(err, "the archive from %s has no folder with %s", url, e->files[0]);
            remove(zip);
        }
        free(zip);
        free(unpacked);
        return root;
    }
    if (!ends_with(url, "/")) {
        rg_errf(err, "cannot tell how to fetch %s: expected a .zip archive or a folder URL ending "
                     "in '/'", url);
        return NULL;
    }
    char *root = rg_xasprintf("%s/files", stage);
    for (const char *const *f = e->files; *f; f++) {
        if (strpbrk(*f, "*?[")) continue;   /* patterns name no single file to download */
        char *path = rg_xasprintf("%s/%s", root, *f), *file_url = rg_xasprintf("%s%s", url, *f);
        char *parent = rg_xstrdup(path);
        *strrchr(parent, '/') = 0;
        int rc = rg_mkdir_p(parent, err) != 0 || download(e->name, file_url, path, err) != 0;
        free(parent);
        free(path);
        free(file_url);
        if (rc) return free(root), NULL;
    }
    return root;
}

static const char FETCH_HELP[] =
    "usage: explore datasets fetch NAME [--data-dir DIR] [--url URL]\n"
    "Downloads a registered dataset with curl into <data dir>/<NAME>: a .zip archive is\n"
    "unpacked with unzip; a folder URL (ending in '/') gives each required file. Checks the\n"
    "sha256 of every file the registry records one for, and moves the result into place only\n"
    "when complete. --url takes another source (a mirror, or file:///path/ of a local copy).\n";

static int finish_fetch(const ds_entry *e, const char *url, const char *stage, const char *dest,
                        rg_err *err)
{
    int archive_checked = 0;
    char *root = fetch_into(e, url, stage, &archive_checked, err);
    int rc = -1;
    if (root) {
        int checked = verify_sums(e, url, stage, root, err);
        if (checked >= 0) checked += archive_checked;
        char *missing = checked < 0 ? NULL : ds_missing_files(e, root);
        if (checked < 0) {
            rc = -1;
        } else if (missing) {
            rc = rg_errf(err, "the download from %s lacks %s", url, missing);
        } else if (rename(root, dest) != 0) {
            rc = rg_errf(err, "cannot move the download into %s: %s", dest, strerror(errno));
        } else {
            if (checked) fprintf(stderr, "sha256 of %d file(s) checked\n", checked);
            else fprintf(stderr, "no sha256 recorded for what was downloaded: not checked\n");
            printf("fetched %s into %s\n", e->name, dest);
            rc = 0;
        }
        free(missing);
        free(root);
    }
    return rc;
}

static int cmd_fetch(int argc, char **argv)
{
    cli_args a;
    int rc = parse_args(argc, argv, "explore datasets fetch", FETCH_HELP, OPT_URL, 1, &a);
    if (rc >= 0) return rc;
    rg_err err;
    const ds_entry *e = ds_find(a.name);
    if (!e) {
        char *close = ds_suggest(a.name);
        rg_errf(&err, "unknown dataset '%s'%s%s%s", a.name, *close ? " (did you mean: " : "",
                close, *close ? "?)" : " (see `explore datasets list`)");
        free(close);
        return fail("fetch", &err);
    }
    const char *url = a.url ? a.url : e->url;
    if (!url) {
        rg_errf(&err, "cannot download %s: no public download; %s", e->name, e->how_to_get);
        return fail("fetch", &err);
    }
    ds_options opt = options_of(&a);
    char *dest = ds_entry_dir(e, &opt), *missing = ds_missing_files(e, dest);
    rc = 1;
    struct stat st;
    if (!missing) {
        printf("%s is already in %s\n", e->name, dest);
        rc = 0;
    } else if (stat(dest, &st) == 0) {
        rg_errf(&err, "%s exists but lacks %s: move it away and fetch again", dest, missing);
    } else if (rg_mkdir_p(ds_data_dir(&opt), &err) == 0) {
        char *stage = rg_xasprintf("%s/.fetch-%s-XXXXXX", ds_data_dir(&opt), e->name);
        if (!mkdtemp(stage)) {
            rg_errf(&err, "cannot create a folder in %s: %s", ds_data_dir(&opt), strerror(errno));
        } else {
            rc = finish_fetch(e, url, stage, dest, &err) == 0 ? 0 : 1;
            remove_tree(stage);
        }
        free(stage);
    }
    free(missing);
    free(dest);
    return rc ? fail("fetch", &err) : 0;
}

/* ---- export ---- */

static const char EXPORT_HELP[] =
    "usage: explore datasets export NAME [--format npz] [--out FILE] [--data-dir DIR]\n"
    "                               [--cache-dir DIR] [--no-cache]\n"
    "Writes the loaded graph (COO by edge type, type names and offsets) as a NumPy .npz\n"
    "archive, FILE by default <name>.npz in the current directory.\n";

static int cmd_export(int argc, char **argv)
{
    cli_args a;
    int rc = parse_args(argc, argv, "explore datasets export", EXPORT_HELP, OPT_CACHE_DIR | OPT_EXPORT | OPT_NO_CACHE, 1, &a);
    if (rc >= 0) return rc;
    if (a.format && strcmp(a.format, "npz") != 0)
        return ro_bad("explore datasets export", "unsupported format '%s' (supported: npz)", a.format);
    rg_err err;
    ds_options opt = options_of(&a);
    hg_graph *g = ds_open(a.name, &opt, &err);
    if (!g) return fail("export", &err);
    char *out = a.out ? rg_xstrdup(a.out) : NULL;
    if (!out) {
        out = rg_xasprintf("%s.npz", g->name && *g->name ? g->name : "graph");
        for (char *p = out; *p; p++) if (*p == '/' || *p == ':' || *p == ',' || *p == '=') *p = '_';
    }
    rc = npz_export_graph(g, out, &err);
    if (rc == 0) printf("wrote %s (%d nodes, %d edges)\n", out, g->num_nodes, g->num_edges);
    free(out);
    hg_free(g);
    return rc == 0 ? 0 : fail("export", &err);
}

/* ---- bench ---- */

static const char BENCH_HELP[] =
    "usage: explore datasets bench [--data-dir DIR] [--phase parse|cache|synth-mag] [--repeat N]\n\n"
    "  parse      parse time of mutag and fb15k237 from the data dir (best of N)\n"
    "  cache      binary cache write and load time of the same, and the speed-up over parsing\n"
    "  synth-mag  synth:mag generate and preprocess time, peak RSS against the edge arrays\n"
    "             (src + dst + etype, 12 B/edge), cache write and load time\n"
    "Without --phase all three run in this process (peak RSS is then the largest of them;\n"
    "datasets/bench.sh runs each phase in its own process). N defaults to 3.\n"
    "Output: one tab-separated row per measurement: dataset, measure, value, unit, note.\n\n";

static int cmd_bench(int argc, char **argv)
{
    cp_problem p;
    cp_init(&p);
    dsbench_options o = {.repeat = 3};
    ro_cmd c;
    ro_init(&c, "explore datasets bench", BENCH_HELP, NULL);
    cp_add_options(&c, &p, CP_DATA_DIR);
    ro_add(&c, (ro_opt){.name = "phase", .arg = "P", .kind = RO_STR, .dst = &o.phase, .help = "parse, cache or synth-mag (default: all three)"});
    ro_add(&c, (ro_opt){.name = "repeat", .arg = "N", .kind = RO_INT, .dst = &o.repeat, .help = "best of N (default 3)", .lo = 1, .hi = 100});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    if (o.phase && strcmp(o.phase, "parse") && strcmp(o.phase, "cache") && strcmp(o.phase, "synth-mag"))
        return ro_bad(c.name, "unknown phase '%s' (parse, cache, synth-mag)", o.phase);
    o.data_dir = p.data_dir;
    return dsbench_run(&o);
}

/* ---- order ---- */

static const char ORDER_HELP[] =
    "usage: explore datasets order NAME [--orders LIST] [--l2-mb MB] [--data-dir DIR]\n"
    "                              [--cache-dir DIR] [--no-cache]\n"
    "Compares the node orderings of the config key relabel on NAME without a GPU: which could\n"
    "pay off before any is measured. Per ordering (LIST: comma-separated, default\n"
    "orig,degree,bfs,rcm,block) one row:\n"
    "  compute_s, relabel_s  seconds to compute the ordering and to rebuild the graph under it\n"
    "                        (their sum is what a measurement stores as its metric order_s)\n"
    "  miss_128B, miss_256B  simulated share of gathered source rows that miss the cache: a\n"
    "                        fully associative LRU cache of MB MiB (default 50, an H100's L2)\n"
    "                        over the gathers of the dst-sorted traversals (destinations in id\n"
    "                        order, each one's in-edges in CSR order), rows of 128 bytes (bf16,\n"
    "                        dims 64) or 256 bytes (float32, dims 64). Lower is better.\n"
    "  sim_s                 seconds the two simulations took\n"
    "The floor printed above the rows is the compulsory misses (nodes with out-edges / edges),\n"
    "the same under every ordering. The simulation counts whole rows reused across destinations,\n"
    "not rows sharing a page, nor destination and edge traffic: it ranks orderings, it does not\n"
    "predict a layer's time.\n";

/* --orders: a bit per ord_kind. */
static int parse_orders(const char *value, void *dst, rg_err *err)
{
    unsigned *mask = dst;
    char *list = rg_xstrdup(value), *save = NULL;
    *mask = 0;
    for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < ORD_NKINDS && strcmp(w, ord_kind_name((ord_kind)k))) k++;
        if (k == ORD_NKINDS) {
            rg_errf(err, "unknown ordering '%s' (orig, degree, bfs, rcm, block)", w);
            free(list);
            return -1;
        }
        *mask |= 1u << k;
    }
    free(list);
    return *mask ? 0 : rg_errf(err, "no ordering given");
}

/* Rows of row_bytes in a cache of mb MiB (at least one). */
static int64_t cache_rows(double mb, int row_bytes)
{
    int64_t rows = (int64_t)(mb * 1048576.0 / row_bytes);
    return rows > 0 ? rows : 1;
}

/* One ordering's row: its cost, and the simulated gather misses of the graph it gives. */
static void order_row(const hg_graph *g, ord_kind kind, int64_t rows128, int64_t rows256)
{
    double t0 = rg_now();
    int32_t *old_of = ord_compute(g, kind);
    double t1 = rg_now();
    hg_graph *r = ord_relabel(g, old_of, NULL);
    double t2 = rg_now();
    double m128 = ord_gather_miss_rate(r, rows128), m256 = ord_gather_miss_rate(r, rows256);
    printf("%-9s %10.3f %10.3f %10.4f %10.4f %8.3f\n", ord_kind_name(kind), t1 - t0, t2 - t1, m128, m256,
           rg_now() - t2);
    fflush(stdout);
    hg_free(r);
    free(old_of);
}

static int cmd_order(int argc, char **argv)
{
    cli_args a;
    memset(&a, 0, sizeof a);
    cp_init(&a.p);
    unsigned mask = (1u << ORD_NKINDS) - 1;
    double l2_mb = 50;
    ro_cmd c;
    const char *pos[1];
    ro_init(&c, "explore datasets order", ORDER_HELP, NULL);
    cp_add_options(&c, &a.p, CP_DATA_DIR);
    ro_add(&c, (ro_opt){.name = "cache-dir", .arg = "DIR", .kind = RO_STR, .dst = &a.cache_dir, .help = "cache directory (default $RGNN_CACHE, else datasets/cache)"});
    ro_add(&c, (ro_opt){.name = "no-cache", .arg = NULL, .kind = RO_FLAG, .dst = &a.no_cache, .help = "parse the source files even if a cache exists; write none"});
    ro_add(&c, (ro_opt){.name = "orders", .arg = "LIST", .kind = RO_FN, .fn = parse_orders, .dst = &mask, .help = "orderings to compare (default orig,degree,bfs,rcm,block)"});
    ro_add(&c, (ro_opt){.name = "l2-mb", .arg = "MB", .kind = RO_REAL, .dst = &l2_mb, .lo = 0.001, .hi = 1e6, .help = "simulated cache size in MiB (default 50)"});
    ro_positional(&c, pos, 1);
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    if (!c.npos) return ro_bad(c.name, "which dataset? (give a NAME; see --help)");
    rg_err err;
    ds_options opt = options_of(&a);
    hg_graph *g = ds_open(pos[0], &opt, &err);
    if (!g) return fail("order", &err);
    int64_t rows128 = cache_rows(l2_mb, 128), rows256 = cache_rows(l2_mb, 256), sources = 0;
    for (int32_t n = 0; n < g->num_nodes; n++) sources += g->out_ptr[n + 1] > g->out_ptr[n];
    printf("%s: %d nodes, %d edges; cache %g MiB = %lld rows of 128 B, %lld of 256 B; floor %.4f\n\n", pos[0],
           g->num_nodes, g->num_edges, l2_mb, (long long)rows128, (long long)rows256,
           g->num_edges ? (double)sources / g->num_edges : 0.0);
    printf("%-9s %10s %10s %10s %10s %8s\n", "ordering", "compute_s", "relabel_s", "miss_128B", "miss_256B", "sim_s");
    for (int k = 0; k < ORD_NKINDS; k++)
        if (mask & 1u << k) order_row(g, (ord_kind)k, rows128, rows256);
    hg_free(g);
    return 0;
}

/* ---- entry point ---- */

static const char DATASETS_HELP[] =
    "usage: explore datasets <subcommand> [options]   (each takes --help)\n\n"
    "  list                 registered datasets, whether present or cached, expected sizes\n"
    "  info NAME [--json]   statistics of a loaded graph against the registry\n"
    "  fetch NAME           download a registered dataset into the data dir\n"
    "  export NAME          write a graph as .npz\n"
    "  bench ...            time loading, caching and statistics per dataset\n"
    "  order NAME           node orderings (relabel=): their cost and simulated L2 misses\n\n"
    "NAME: a registered name or alias (aifb, mutag, bgs, am, fb15k237/fb15k, wn18rr,\n"
    "mag/ogbn-mag, biokg/ogbl-biokg, wikikg2/ogbl-wikikg2, mag_0.1), synth:SPEC, or a folder.\n"
    "Data dir: --data-dir DIR, else $RGNN_DATA, else datasets/data; cache: $RGNN_CACHE, else\n"
    "datasets/cache.\n";

int ds_cli_main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(DATASETS_HELP, stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help"))
        return fputs(DATASETS_HELP, stdout), 0;
    if (!strcmp(sub, "list")) return cmd_list(argc - 1, argv + 1);
    if (!strcmp(sub, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(sub, "fetch")) return cmd_fetch(argc - 1, argv + 1);
    if (!strcmp(sub, "export")) return cmd_export(argc - 1, argv + 1);
    if (!strcmp(sub, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(sub, "order")) return cmd_order(argc - 1, argv + 1);
    fprintf(stderr, "explore datasets: unknown subcommand '%s' (list, info, fetch, export, bench, order; "
                    "see --help)\n", sub);
    return 2;
}
