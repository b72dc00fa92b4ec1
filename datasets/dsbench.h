/* `explore datasets bench`: times parsing, binary-cache writing and loading, and synth:mag
 * generation/preprocessing with peak memory, one phase per process (datasets/bench.sh). */
#ifndef DS_BENCH_H
#define DS_BENCH_H

/* argv[0] is "bench"; options: [--data-dir DIR] [--phase parse|cache|synth-mag] [--repeat N].
 * Prints one tab-separated row per measurement: dataset, measure, value, unit, note. */
int dsbench_main(int argc, char **argv);

#endif
