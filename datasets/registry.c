/* The registry of known datasets (files, download, expected statistics) and ds_open:
 * resolves a name, synth: spec or folder, finds its files and uses the binary graph cache. */
#include "datasets/dataset.h"
#include "datasets/loaders.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* Bump when a loader's output changes, so caches written by older code are not reused. */
#define DS_CACHE_KEY_VERSION 1

/* ---- The registry ----
 * `files` entries are paths relative to the dataset folder; a '*' or '?' in the last
 * component makes it a pattern that any matching file satisfies (DGL's and kgbench's
 * copies of AIFB name the N3 file differently).
 * `sha256` holds sha256sum-style lines "<hex>  <file>": the downloaded archive and/or files
 * of the dataset folder, computed from known-good copies. `fetch` checks every listed
 * file that its download produced; files another distribution names differently are
 * simply not there to check. */

static const char *const AIFB_FILES[] = {"aifb*.n3", NULL};
static const char *const MUTAG_FILES[] = {"mutag*.nt*", NULL};
static const char *const BGS_FILES[] = {"*.nt*", NULL};
static const char *const AM_FILES[] = {"*.nt*", NULL};
static const char *const FB15K237_FILES[] = {"train2id.txt", "valid2id.txt", "test2id.txt",
                                             "entity2id.txt", "relation2id.txt", NULL};
static const char *const WN18RR_FILES[] = {"train.txt", "valid.txt", "test.txt", NULL};
static const char *const OGB_HETERO_FILES[] = {"raw/num-node-dict.csv.gz",
                                               "raw/triplet-type-list.csv.gz", NULL};
static const char *const WIKIKG2_FILES[] = {"raw/edge.csv.gz", "raw/edge_reltype.csv.gz",
                                            "raw/num-node-list.csv.gz", NULL};
static const char *const MAG_SUB_FILES[] = {"cited_coo_2.npy", "citing_coo_2.npy",
                                            "has_coo_2.npy", "is-about_coo_2.npy",
                                            "writing_coo_2.npy", "written-by_coo_2.npy", NULL};

/* sha256sum of the copies in ../shared/datasets (kgbench's AIFB, DGL's MUTAG file, OpenKE's
 * FB15k-237, the mag_0.1 arrays). mag.zip: the value gomlx's ogbn-mag loader checks. */
static const char AIFB_SHA[] =
    "764d6d5f94e4c6e1666d765a2865a86835d2da7002e6dee96464084da6b6c9f7  aifb_fixed_complete.n3\n";
static const char MUTAG_SHA[] =
    "38bd13f3cfd9ceacfece95e931840412fa2b7a21c27548a184ee05cc221d7b0b  mutag_stripped.nt.gz\n";
static const char FB15K237_SHA[] =
    "5f44223a02b39b8e398e77a787feb4f06e9ffccf1ae87047bbf38fcc8cc08bd2  train2id.txt\n"
    "7d21e778de4369d5348f5cff23a08dc847ab5fce4b5f07c80113297d2dc60a86  valid2id.txt\n"
    "6027e649c1716ac9c1ef2f24672a416aa277aff3e14850ef915ac5a21df70417  test2id.txt\n"
    "e4546cfdcd0b9bd0151cc0f6ef2edee29eb2bb55a3d47e668194999c036fba0d  entity2id.txt\n"
    "fefd26d6cd5ff9d360efe5360c11bf112d019f42b3acf165a5c04aa2b66a42d9  relation2id.txt\n";
static const char MAG_SHA[] =
    "2afe62ead87f2c301a7398796991d347db85b2d01c5442c95169372bf5a9fca4  mag.zip\n";
static const char MAG_SUB_SHA[] =
    "4572f6248d018d11b12dd60fcf665d6c6b84c63755f486b39498a0394eb5d1bf  cited_coo_2.npy\n"
    "d69855a94b91e5adbc2869096e8ab56d0ec8ae2bbcef921c067556a3096a7877  citing_coo_2.npy\n"
    "4bf1ab6b6c545da72b3574985830abc6b9dfbac47110b4afe53dd28dc147b441  has_coo_2.npy\n"
    "350259ccc5d5593de9df7b8dd83d61a6c3d527315fc137412354cde4698c0f7b  is-about_coo_2.npy\n"
    "4ebe94ad9d61853e5990ffd65b1570e74b4dc48841fc4d653ba656767aa57935  writing_coo_2.npy\n"
    "74c021f6949d8ce8a108150c0af5ac934e01b0134e2aaec970d4c402a1f7ae28  written-by_coo_2.npy\n";

#define DGL_RDF_URL(n) "https://data.dgl.ai/dataset/rdf/" n "-hetero.zip"

/* Expected counts: DGL's documentation for the RDF sets (with reverse edges), the shared
 * README for fb15k237 and mag_0.1, OGB's published training-edge counts for the OGB sets
 * (no reverse types), and the papers' type counts (seed digest §5.2). */
static const ds_entry REGISTRY[] = {
    {"aifb", "AIFB research institute (RDF, DGL rules)", "rdf-n3", "aifb", AIFB_FILES,
     DGL_RDF_URL("aifb"), AIFB_SHA,
     "run `explore datasets fetch aifb` (DGL's aifb-hetero.zip) or copy kgbench's aifb_fixed_complete.n3",
     rdf_load_aifb, {7, 104, 7262, 48810, 0}},
    {"mutag", "MUTAG carcinogenesis molecules (RDF, DGL rules)", "rdf-nt", "mutag", MUTAG_FILES,
     DGL_RDF_URL("mutag"), MUTAG_SHA,
     "run `explore datasets fetch mutag` (DGL's mutag-hetero.zip, mutag_stripped.nt.gz)",
     rdf_load_mutag, {5, 50, 27163, 148100, 0}},
    {"bgs", "British Geological Survey (RDF, DGL rules)", "rdf-nt", "bgs", BGS_FILES,
     DGL_RDF_URL("bgs"), NULL,
     "run `explore datasets fetch bgs` (DGL's bgs-hetero.zip, several .nt files)",
     rdf_load_bgs, {27, 122, 94806, 672884, 0}},
    {"am", "Amsterdam Museum collection (RDF, DGL rules)", "rdf-nt", "am", AM_FILES,
     DGL_RDF_URL("am"), NULL,
     "run `explore datasets fetch am` (DGL's am-hetero.zip)",
     rdf_load_am, {7, 108, 881680, 5668682, 0}},
    {"fb15k237", "FB15k-237 knowledge graph, all splits (OpenKE ids)", "openke", "fb15k237",
     FB15K237_FILES,
     "https://raw.githubusercontent.com/thunlp/OpenKE/OpenKE-PyTorch/benchmarks/FB15K237/",
     FB15K237_SHA,
     "run `explore datasets fetch fb15k237` (OpenKE's benchmarks/FB15K237/*2id.txt)",
     kg_load_openke, {1, 474, 14541, 620232, 161922}},
    {"wn18rr", "WN18RR WordNet knowledge graph, all splits (KGE text)", "kge", "wn18rr",
     WN18RR_FILES,
     "https://raw.githubusercontent.com/DeepGraphLearning/KnowledgeGraphEmbedding/master/data/wn18rr/",
     NULL,
     "run `explore datasets fetch wn18rr` (KnowledgeGraphEmbedding's data/wn18rr/*.txt)",
     kg_load_kge, {1, 22, 40943, 186006, 0}},
    {"mag", "ogbn-mag academic graph (OGB raw CSV)", "ogb-hetero", "mag", OGB_HETERO_FILES,
     "http://snap.stanford.edu/ogb/data/nodeproppred/mag.zip", MAG_SHA,
     "run `explore datasets fetch mag` (OGB's mag.zip, about 0.4 GB) or unzip your copy there",
     ogb_load_hetero, {4, 4, 1939743, 21111007, 0}},
    {"biokg", "ogbl-biokg biomedical knowledge graph (OGB raw CSV)", "ogb-hetero", "biokg",
     OGB_HETERO_FILES, "http://snap.stanford.edu/ogb/data/linkproppred/biokg.zip", NULL,
     "run `explore datasets fetch biokg` (OGB's biokg.zip, about 1 GB) or unzip your copy there",
     ogb_load_hetero, {5, 51, 93773, 4762678, 0}},
    {"wikikg2", "ogbl-wikikg2 Wikidata knowledge graph (OGB raw CSV)", "ogb-wikikg2", "wikikg2",
     WIKIKG2_FILES, "http://snap.stanford.edu/ogb/data/linkproppred/wikikg-v2.zip", NULL,
     "run `explore datasets fetch wikikg2` (OGB's wikikg-v2.zip) or unzip your copy there",
     ogb_load_wikikg2, {1, 535, 2500604, 16109182, 0}},
    {"mag_0.1", "10% subsample of ogbn-mag: paper, author, field (NumPy COO)", "npy-coo",
     "mag_0.1", MAG_SUB_FILES, NULL, MAG_SUB_SHA,
     "no public download: copy the six <relation>_coo_2.npy files of the Hector artifact "
     "(K-Wu/HET, data/ogbn_mag_0.1) there",
     npy_load_mag_sub, {3, 6, 153270, 345172, 142074}},
};
#define REGISTRY_COUNT ((int)(sizeof REGISTRY / sizeof REGISTRY[0]))

static const struct {
    const char *alias, *name;
} ALIASES[] = {
    {"fb15k", "fb15k237"}, {"fb15k-237", "fb15k237"}, {"ogbn-mag", "mag"},
    {"ogbl-biokg", "biokg"}, {"ogbl-wikikg2", "wikikg2"},
};
#define ALIAS_COUNT ((int)(sizeof ALIASES / sizeof ALIASES[0]))

const ds_entry *ds_registry(int *count)
{
    if (count) *count = REGISTRY_COUNT;
    return REGISTRY;
}

const ds_entry *ds_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < REGISTRY_COUNT; i++)
        if (!strcasecmp(name, REGISTRY[i].name)) return &REGISTRY[i];
    for (int i = 0; i < ALIAS_COUNT; i++)
        if (!strcasecmp(name, ALIASES[i].alias)) return ds_find(ALIASES[i].name);
    return NULL;
}

/* Close enough to be a typo: a few edits (more for long names), or a prefix of at least 3. */
static int is_close(const char *typed, const char *known)
{
    size_t lt = strlen(typed), lk = strlen(known);
    int limit = lk >= 8 ? 3 : 2;
    if (lt >= 3 && lt < lk && !strncasecmp(typed, known, lt)) return 1;
    char *a = rg_xstrdup(typed), *b = rg_xstrdup(known);
    for (char *p = a; *p; p++) *p = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
    int d = rg_edit_distance(a, b);
    free(a);
    free(b);
    return d <= limit && d < (int)lk;
}

static void add_suggestion(rg_str *out, const char *s)
{
    if (out->s) {
        /* no duplicates: each candidate is a whole comma-separated item */
        for (const char *p = out->s; (p = strstr(p, s)); p++) {
            size_t n = strlen(s);
            int starts = p == out->s || p[-1] == ' ';
            if (starts && (p[n] == ',' || p[n] == 0)) return;
        }
        rg_str_puts(out, ", ");
    }
    rg_str_puts(out, s);
}

char *ds_suggest(const char *name)
{
    rg_str out = {0};
    for (int i = 0; name && i < REGISTRY_COUNT; i++)
        if (is_close(name, REGISTRY[i].name)) add_suggestion(&out, REGISTRY[i].name);
    for (int i = 0; name && i < ALIAS_COUNT; i++)
        if (is_close(name, ALIASES[i].alias)) add_suggestion(&out, ALIASES[i].alias);
    return out.s ? out.s : rg_xstrdup("");
}

/* ---- Directories ---- */

static const char *env_nonempty(const char *var)
{
    const char *v = getenv(var);
    return v && *v ? v : NULL;
}

const char *ds_data_dir(const ds_options *opt)
{
    if (opt && opt->data_dir && *opt->data_dir) return opt->data_dir;
    const char *env = env_nonempty("RGNN_DATA");
    return env ? env : "datasets/data";
}

const char *ds_data_dir_origin(const ds_options *opt)
{
    if (opt && opt->data_dir && *opt->data_dir) return "--data-dir";
    return env_nonempty("RGNN_DATA") ? "$RGNN_DATA" : "default";
}

const char *ds_cache_dir(const ds_options *opt)
{
    if (opt && opt->cache_dir && *opt->cache_dir) return opt->cache_dir;
    const char *env = env_nonempty("RGNN_CACHE");
    return env ? env : "datasets/cache";
}

char *ds_entry_dir(const ds_entry *e, const ds_options *opt)
{
    RG_ASSERT(e);
    return rg_xasprintf("%s/%s", ds_data_dir(opt), e->subdir);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether dir/<pattern> names an existing file; globbing only in the last component. */
static int required_present(const char *dir, const char *pattern)
{
    const char *slash = strrchr(pattern, '/');
    const char *leaf = slash ? slash + 1 : pattern;
    if (!strpbrk(leaf, "*?[")) {
        char *p = rg_xasprintf("%s/%s", dir, pattern);
        struct stat st;
        int ok = stat(p, &st) == 0 && S_ISREG(st.st_mode);
        free(p);
        return ok;
    }
    char *sub = slash ? rg_xasprintf("%s/%.*s", dir, (int)(slash - pattern), pattern)
                      : rg_xstrdup(dir);
    DIR *d = opendir(sub);
    int found = 0;
    for (struct dirent *de; d && !found && (de = readdir(d));)
        found = de->d_name[0] != '.' && fnmatch(leaf, de->d_name, 0) == 0;
    if (d) closedir(d);
    free(sub);
    return found;
}

char *ds_missing_files(const ds_entry *e, const char *dir)
{
    RG_ASSERT(e && dir);
    rg_str out = {0};
    for (const char *const *f = e->files; *f; f++) {
        if (required_present(dir, *f)) continue;
        if (out.s) rg_str_puts(&out, ", ");
        rg_str_puts(&out, *f);
    }
    return out.s;
}

/* ---- Cache keys ---- */

typedef struct source_key {
    uint64_t sum;     /* order-independent: readdir order is not stable across copies */
    int64_t files;
} source_key;

/* Adds every regular file under dir (hidden ones excepted: fetch staging, editor files). */
static void key_walk(const char *dir, const char *rel, int depth, source_key *k)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        char *path = rg_xasprintf("%s/%s", dir, de->d_name);
        char *relpath = rel ? rg_xasprintf("%s/%s", rel, de->d_name) : rg_xstrdup(de->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth < 6) {
            key_walk(path, relpath, depth + 1, k);
        } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            int64_t meta[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
                               (int64_t)st.st_mtim.tv_nsec};
            uint64_t h = rg_fnv1a64(relpath, strlen(relpath), RG_FNV_SEED);
            k->sum += rg_fnv1a64(meta, sizeof meta, h);
            k->files++;
        }
        free(path);
        free(relpath);
    }
    closedir(d);
}

/* File names keep only portable characters: names come from user paths and specs. */
static char *sanitize(const char *name)
{
    char *s = rg_xstrdup(name);
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-' || *p == '_'))
            *p = '_';
    if (strlen(s) > 64) s[64] = 0;
    return s;
}

static char *cache_file(const char *name, uint64_t key, const ds_options *opt)
{
    char *safe = sanitize(name);
    char *p = rg_xasprintf("%s/%s-%016llx.hgc", ds_cache_dir(opt), safe, (unsigned long long)key);
    free(safe);
    return p;
}

char *ds_cache_path(const char *name, const char *dir, const ds_options *opt)
{
    source_key k = {0, 0};
    key_walk(dir, NULL, 0, &k);
    char real[PATH_MAX];
    const char *where = realpath(dir, real) ? real : dir;
    int version = DS_CACHE_KEY_VERSION;
    uint64_t h = rg_fnv1a64(name, strlen(name), RG_FNV_SEED);
    h = rg_fnv1a64(where, strlen(where), h);
    h = rg_fnv1a64(&k, sizeof k, h);
    h = rg_fnv1a64(&version, sizeof version, h);
    return cache_file(name, h, opt);
}

static char *synth_cache_path(const char *spec, const ds_options *opt)
{
    int version = DS_CACHE_KEY_VERSION;
    uint64_t h = rg_fnv1a64(spec, strlen(spec), RG_FNV_SEED);
    h = rg_fnv1a64(&version, sizeof version, h);
    return cache_file("synth", h, opt);
}

/* ---- Opening with the cache ---- */

static void progress(const ds_options *opt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const ds_options *opt, const char *fmt, ...)
{
    if (opt->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* A cache that cannot be read is a warning, never an error: the source is still there. */
static hg_graph *try_cache(const char *path, const ds_options *opt)
{
    if (opt->no_cache || !rg_file_exists(path)) return NULL;
    rg_err err;
    hg_graph *g = gcache_read(path, &err);
    if (g) {
        progress(opt, "loaded %s from cache %s", g->name ? g->name : "graph", path);
        return g;
    }
    fprintf(stderr, "warning: rebuilding an unusable graph cache: %s\n", err.msg);
    return NULL;
}

/* gcache_write writes a temporary file and renames it: a crash never leaves a half cache. */
static void store_cache(const char *path, const hg_graph *g, const ds_options *opt)
{
    if (opt->no_cache) return;
    rg_err err;
    if (rg_mkdir_p(ds_cache_dir(opt), &err) != 0 || gcache_write(path, g, &err) != 0)
        fprintf(stderr, "warning: not cached: %s\n", err.msg);
    else
        progress(opt, "cached to %s", path);
}

static int allow_mismatch;   /* ds_set_allow_mismatch: the whole process */

void ds_set_allow_mismatch(int on) { allow_mismatch = on; }

/* Counts that differ from the registry's expected statistics (0: not published) mean
 * corrupt files or another version of the dataset: an error, or a warning when allowed.
 * Returns 0 when the graph may be used. */
static int check_expected(const ds_entry *e, const hg_graph *g, const char *dir, rg_err *err)
{
    const ds_expected *x = &e->expected;
    const struct { const char *what; int64_t got, want; } c[] = {
        {"node types", g->num_ntypes, x->node_types}, {"edge types", g->num_etypes, x->edge_types},
        {"nodes", g->num_nodes, x->nodes}, {"edges", g->num_edges, x->edges},
        {"unique (src, edge type) pairs", g->num_unique, x->unique_pairs}};
    rg_str diff = {0};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (c[i].want && c[i].want != c[i].got)
            rg_str_printf(&diff, "%s%lld %s (expected %lld)", diff.s ? ", " : "", (long long)c[i].got, c[i].what,
                          (long long)c[i].want);
    int rc = 0;
    if (diff.s && allow_mismatch)
        fprintf(stderr, "warning: dataset %s in %s differs from the registry: %s; used anyway (--allow-mismatch)\n",
                e->name, dir, diff.s);
    else if (diff.s)
        rc = rg_errf(err, "dataset %s in %s differs from the registry: %s; its files are corrupt or another "
                     "version (--allow-mismatch uses them anyway)", e->name, dir, diff.s);
    rg_str_free(&diff);
    return rc;
}

/* `expect`: the registry entry the graph must match, or NULL. A graph that does not match
 * is never cached unless allowed, so a corrupt source leaves no cache behind. */
static hg_graph *load_cached(const char *name, const char *dir, ds_loader_fn load, const ds_entry *expect,
                             const ds_options *opt, rg_err *err)
{
    char *path = ds_cache_path(name, dir, opt);
    hg_graph *g = try_cache(path, opt);
    int parsed = !g;
    if (!g) {
        progress(opt, "parsing %s from %s...", name, dir);
        double t0 = rg_now();
        g = load(dir, name, err);
        if (g)
            progress(opt, "parsed %s in %.2f s: %d nodes, %d edges", name, rg_now() - t0,
                     g->num_nodes, g->num_edges);
    }
    if (g && expect && check_expected(expect, g, dir, err) != 0) {
        hg_free(g);
        g = NULL;
    }
    if (g && parsed) store_cache(path, g, opt);
    free(path);
    return g;
}

static hg_graph *open_synth(const char *spec, const ds_options *opt, rg_err *err)
{
    char *path = synth_cache_path(spec, opt);
    hg_graph *g = try_cache(path, opt);
    if (!g) {
        progress(opt, "generating %s...", spec);
        g = synth_generate(spec + strlen("synth:"), err);
        if (g) store_cache(path, g, opt);
    }
    free(path);
    return g;
}

static hg_graph *open_entry(const ds_entry *e, const ds_options *opt, rg_err *err)
{
    char *dir = ds_entry_dir(e, opt);
    char *missing = ds_missing_files(e, dir);
    hg_graph *g = NULL;
    if (!missing) {
        g = load_cached(e->name, dir, e->load, e, opt, err);
    } else {
        const char *origin = ds_data_dir_origin(opt);
        char *what = is_dir(dir) ? rg_xasprintf("%s lacks %s", dir, missing)
                                 : rg_xasprintf("no folder %s", dir);
        rg_errf(err, "dataset %s not found: %s (data dir %s, %s; change it with --data-dir DIR or "
                     "$RGNN_DATA); to get it: %s%s%s",
                e->name, what, ds_data_dir(opt), !strcmp(origin, "default") ? "the default" : origin,
                e->how_to_get, e->url ? "; URL: " : "", e->url ? e->url : "");
        free(what);
    }
    free(missing);
    free(dir);
    return g;
}

/* ---- Folders given by path ---- */

static char *base_name(const char *path)
{
    char *s = rg_xstrdup(path);
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/') s[--n] = 0;
    const char *slash = strrchr(s, '/');
    char *b = rg_xstrdup(slash && slash[1] ? slash + 1 : s);
    free(s);
    return b;
}

/* The registered entry a folder is named after ("aifb", "aifb-hetero", "ogbn_mag", ...). */
static const ds_entry *entry_named_like(const char *base)
{
    char *norm = rg_xstrdup(base);
    for (char *p = norm; *p; p++) if (*p == '_') *p = '-';
    const ds_entry *found = ds_find(base);
    if (!found) found = ds_find(norm);
    char *dash = strstr(norm, "-hetero");
    if (!found && dash) {
        *dash = 0;
        found = ds_find(norm);
    }
    free(norm);
    return found;
}

static int dir_has_suffix(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int found = 0;
    size_t ls = strlen(suffix);
    for (struct dirent *de; d && !found && (de = readdir(d));) {
        size_t ln = strlen(de->d_name);
        found = de->d_name[0] != '.' && ln > ls && !strcmp(de->d_name + ln - ls, suffix);
    }
    if (d) closedir(d);
    return found;
}

static int has_rdf(const char *dir)
{
    return dir_has_suffix(dir, ".nt") || dir_has_suffix(dir, ".nt.gz") ||
           dir_has_suffix(dir, ".n3") || dir_has_suffix(dir, ".ttl");
}

/* Loader for a folder from its files; RDF needs the dataset's own rules, hence the name. */
static ds_loader_fn guess_loader(const char *dir, const char *base, rg_err *err)
{
    const ds_entry *named = entry_named_like(base);
    char *missing = named ? ds_missing_files(named, dir) : NULL;
    if (named && !missing) return named->load;
    free(missing);
    int n;
    const ds_entry *reg = ds_registry(&n);
    for (int i = 0; i < n; i++) {
        /* entries whose files name them (not bare "*.nt*") identify a folder by themselves */
        if (reg[i].files[0][0] == '*') continue;
        char *m = ds_missing_files(&reg[i], dir);
        free(m);
        if (!m) return reg[i].load;
    }
    if (has_rdf(dir))
        rg_errf(err, "%s holds RDF files, but which dataset's rules apply (aifb, mutag, bgs, am) "
                     "cannot be told: name the folder after the dataset", dir);
    else
        rg_errf(err, "cannot tell the format of %s: expected OpenKE *2id.txt, KGE train.txt, "
                     "OGB raw/ CSVs, *_coo_2.npy or RDF files", dir);
    return NULL;
}

static hg_graph *open_folder(const char *dir, const ds_options *opt, rg_err *err)
{
    char *base = base_name(dir);
    ds_loader_fn load = guess_loader(dir, base, err);
    const ds_entry *named = entry_named_like(base);
    /* a folder named like a registered set keeps that name (and its expected counts) */
    const ds_entry *expect = named && load == named->load ? named : NULL;
    hg_graph *g = load ? load_cached(expect ? expect->name : base, dir, load, expect, opt, err) : NULL;
    free(base);
    return g;
}

static hg_graph *unknown_name(const char *spec, rg_err *err)
{
    char *close = ds_suggest(spec);
    if (*close) {
        rg_errf(err, "unknown dataset '%s' (did you mean: %s?)", spec, close);
    } else {
        rg_str known = {0};
        for (int i = 0; i < REGISTRY_COUNT; i++)
            rg_str_printf(&known, "%s%s", i ? ", " : "", REGISTRY[i].name);
        rg_errf(err, "unknown dataset '%s' (known: %s; or synth:..., or a dataset folder)", spec,
                known.s);
        rg_str_free(&known);
    }
    free(close);
    return NULL;
}

hg_graph *ds_open(const char *spec, const ds_options *opt, rg_err *err)
{
    static const ds_options defaults;
    if (!opt) opt = &defaults;
    if (!spec || !*spec) {
        rg_errf(err, "no dataset given");
        return NULL;
    }
    if (!strncmp(spec, "synth:", strlen("synth:"))) return open_synth(spec, opt, err);
    const ds_entry *e = ds_find(spec);
    if (e) return open_entry(e, opt, err);
    if (is_dir(spec)) return open_folder(spec, opt, err);
    if (strchr(spec, '/')) {
        rg_errf(err, "no dataset folder at %s: %s", spec,
                rg_file_exists(spec) ? "not a directory" : strerror(ENOENT));
        return NULL;
    }
    return unknown_name(spec, err);
}
