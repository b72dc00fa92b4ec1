/* `explore datasets bench`: times parsing, binary-cache writing and loading, and synth:mag
 * generation/preprocessing with peak memory, one phase per process (datasets/bench.sh). */
#ifndef DS_BENCH_H
#define DS_BENCH_H

typedef struct dsbench_options {
    const char *data_dir;   /* NULL: the default */
    const char *phase;      /* "parse", "cache", "synth-mag", or NULL for all three */
    int repeat;             /* best of this many (>= 1) */
} dsbench_options;

/* Prints one tab-separated row per measurement: dataset, measure, value, unit, note.
 * 0, or 1 when a phase failed (said on stderr). */
int dsbench_run(const dsbench_options *o);

#endif
