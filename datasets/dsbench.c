/* `explore datasets bench`: times parsing (mutag, fb15k237), the binary cache (write, load)
 * and synth:mag (generate, preprocess, cache load, peak RSS), one row per measurement. */
#include "datasets/dsbench.h"
#include "datasets/dataset.h"
#include "datasets/loaders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char *const REAL_SETS[] = {"mutag", "fb15k237"};
#define REAL_SET_COUNT ((int)(sizeof REAL_SETS / sizeof REAL_SETS[0]))

static void row(const char *dataset, const char *measure, double value, const char *unit, const char *note)
{
    printf("%s\t%s\t%.4g\t%s\t%s\n", dataset, measure, value, unit, note ? note : "");
    fflush(stdout);
}

/* A time row in ms below a second, else in s. */
static void time_row(const char *dataset, const char *measure, double secs, const char *note)
{
    if (secs < 1) row(dataset, measure, 1e3 * secs, "ms", note);
    else row(dataset, measure, secs, "s", note);
}

static void rss_row(const char *phase)
{
    char note[64];
    snprintf(note, sizeof note, "whole process, phase %s", phase);
    row("-", "peak RSS", rg_peak_rss_kb() / 1024.0, "MB", note);
}

static double mb(double bytes) { return bytes / (1 << 20); }

/* The dataset's folder under the data dir, or NULL (reported as a skip row) when absent. */
static char *dataset_dir(const dsbench_options *o, const char *name, const char *measure)
{
    ds_options opt = {.data_dir = o->data_dir, .no_cache = 1, .quiet = 1};
    const ds_entry *e = ds_find(name);
    RG_ASSERT(e != NULL);
    char *dir = ds_entry_dir(e, &opt);
    char *missing = ds_missing_files(e, dir);
    if (!missing) return dir;
    printf("%s\t%s\t-\t-\tskipped: %s lacks %s\n", name, measure, dir, missing);
    free(missing);
    free(dir);
    return NULL;
}

/* Parses `repeat` times with the registry's loader; returns the last graph and the best time. */
static hg_graph *parse_best(const dsbench_options *o, const char *name, const char *dir, double *best)
{
    const ds_entry *e = ds_find(name);
    hg_graph *g = NULL;
    *best = 1e30;
    for (int i = 0; i < o->repeat; i++) {
        rg_err err;
        hg_free(g);   /* keep one parsed graph alive at a time */
        double t0 = rg_now();
        g = e->load(dir, name, &err);
        double t = rg_now() - t0;
        if (!g) {
            fprintf(stderr, "explore datasets bench: %s: %s\n", name, err.msg);
            return NULL;
        }
        if (t < *best) *best = t;
    }
    return g;
}

static int phase_parse(const dsbench_options *o)
{
    for (int i = 0; i < REAL_SET_COUNT; i++) {
        char *dir = dataset_dir(o, REAL_SETS[i], "parse");
        if (!dir) continue;
        double best;
        hg_graph *g = parse_best(o, REAL_SETS[i], dir, &best);
        free(dir);
        if (!g) return 1;
        char note[128];
        snprintf(note, sizeof note, "best of %d; %d nodes, %d edges", o->repeat, g->num_nodes, g->num_edges);
        time_row(REAL_SETS[i], "parse", best, note);
        hg_free(g);
    }
    rss_row("parse");
    return 0;
}

static char *bench_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *tmpl = rg_xasprintf("%s/rgnn-bench-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpl)) {
        perror("explore datasets bench: mkdtemp");
        free(tmpl);
        return NULL;
    }
    return tmpl;
}

/* Checksum of the arrays a reload must reproduce (edges, CSR, compaction map). */
static uint32_t graph_digest(const hg_graph *g)
{
    size_t bytes = (size_t)g->num_edges * sizeof(int32_t);
    uLong crc = crc32_z(0, NULL, 0);
    crc = crc32_z(crc, (const Bytef *)g->src, bytes);
    crc = crc32_z(crc, (const Bytef *)g->dst, bytes);
    crc = crc32_z(crc, (const Bytef *)g->in_eid, bytes);
    crc = crc32_z(crc, (const Bytef *)g->edge_compact, bytes);
    return (uint32_t)crc ^ (uint32_t)g->num_unique;
}

/* Writes g to dir/bench.hgc and frees it (so a load's memory is its own), then loads the
 * file `repeat` times, checking it reads back the same; rows for both, with the speed-up
 * over parse_s when that is known (> 0). */
static int cache_rows(const dsbench_options *o, const char *label, const char *dir, hg_graph *g, double parse_s)
{
    char *path = rg_xasprintf("%s/bench.hgc", dir);
    rg_err err;
    double t0 = rg_now();
    int rc = gcache_write(path, g, &err);
    double write_s = rg_now() - t0, best = 1e30;
    uint32_t digest = graph_digest(g);
    hg_free(g);
    if (rc != 0) {
        fprintf(stderr, "explore datasets bench: %s: %s\n", label, err.msg);
        free(path);
        return 1;
    }
    struct stat st;
    char note[160];
    snprintf(note, sizeof note, "%.1f MB file", stat(path, &st) == 0 ? mb((double)st.st_size) : 0.0);
    time_row(label, "cache write", write_s, note);
    for (int i = 0; i < o->repeat && rc == 0; i++) {
        t0 = rg_now();
        hg_graph *back = gcache_read(path, &err);
        double t = rg_now() - t0;
        if (!back || graph_digest(back) != digest) {
            fprintf(stderr, "explore datasets bench: %s: cache read back %s\n", label,
                    back ? "differs from the graph written" : err.msg);
            rc = 1;
        }
        if (t < best) best = t;
        hg_free(back);
    }
    if (rc == 0) {
        if (parse_s > 0) snprintf(note, sizeof note, "best of %d; %.0fx faster than parsing", o->repeat, parse_s / best);
        else snprintf(note, sizeof note, "best of %d; %.1f GB/s", o->repeat, (double)st.st_size / best / 1e9);
        time_row(label, "cache load", best, note);
    }
    unlink(path);
    free(path);
    return rc;
}

static int phase_cache(const dsbench_options *o)
{
    char *tmp = bench_tmpdir();
    if (!tmp) return 1;
    int rc = 0;
    for (int i = 0; i < REAL_SET_COUNT && rc == 0; i++) {
        char *dir = dataset_dir(o, REAL_SETS[i], "cache");
        if (!dir) continue;
        double parse_s;
        hg_graph *g = parse_best(o, REAL_SETS[i], dir, &parse_s);
        free(dir);
        if (!g) { rc = 1; break; }
        rc = cache_rows(o, REAL_SETS[i], tmp, g, parse_s);
    }
    rmdir(tmp);
    free(tmp);
    if (rc == 0) rss_row("cache");
    return rc;
}

static int phase_synth_mag(const dsbench_options *o)
{
    rg_err err;
    int add_reverse;
    double t0 = rg_now();
    hg_builder *b = synth_build("synth:mag", &add_reverse, &err);
    double t1 = rg_now();
    hg_graph *g = b ? hgb_finish(b, add_reverse, &err) : NULL;
    double t2 = rg_now();
    if (!g) {
        fprintf(stderr, "explore datasets bench: synth:mag: %s\n", err.msg);
        return 1;
    }
    double peak = rg_peak_rss_kb() / 1024.0, edge_mb = mb(12.0 * g->num_edges);
    char note[160];
    snprintf(note, sizeof note, "%d nodes, %d edges", g->num_nodes, g->num_edges);
    time_row("synth:mag", "generate", t1 - t0, note);
    time_row("synth:mag", "preprocess", t2 - t1, "hgb_finish: sort, CSRs, compaction maps");
    snprintf(note, sizeof note, "generate + preprocess: %.2fx the edge arrays (%.0f MB)", peak / edge_mb, edge_mb);
    row("synth:mag", "peak RSS", peak, "MB", note);
    char *tmp = bench_tmpdir();
    int rc = 1;
    if (tmp) rc = cache_rows(o, "synth:mag", tmp, g, 0);
    else hg_free(g);
    if (tmp) rmdir(tmp);
    free(tmp);
    if (rc == 0) rss_row("synth-mag");
    return rc;
}

int dsbench_run(const dsbench_options *o)
{
    RG_ASSERT(o->repeat >= 1);
    int all = !o->phase, rc = 0;
    if (all || !strcmp(o->phase, "parse")) rc |= phase_parse(o);
    if (rc == 0 && (all || !strcmp(o->phase, "cache"))) rc |= phase_cache(o);
    if (rc == 0 && (all || !strcmp(o->phase, "synth-mag"))) rc |= phase_synth_mag(o);
    return rc ? 1 : 0;
}
