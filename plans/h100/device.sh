#!/bin/bash
# Session 30 (issue 18): the device script of plans/h100 (run on a GPU machine from the repository root, with .debs
# and .dev carried as ../shared/device/README.md says). Each step's explore runs validate every variant first.
#   LABEL=<commit> [TAG=x] [STEPS="check one trace san gput"] [DEADLINE=s] bash plans/h100/device.sh
#   one:   LIST (default plans/h100/targets.txt; lines "model task dataset config"), each config as a one-point
#          space with EXTRA's lines appended (e.g. EXTRA="launch: stream graph dag"); ONLY a regex of "model task
#          dataset", ROUNDS, REPEATS (30), METRICS=1 for CUPTI counters
#   check: CHECK (default plans/small/check29e.txt; lines "model task dataset space" under plans/small)
#   san:   compute-sanitizer memcheck and racecheck of `explore run` on aifb (SAN_MODELS, SAN_TASK, SAN_CFG, SAN_TOOLS)
#   trace: each line of TRACE (default plans/h100/trace.txt; as LIST) run once per launch of TRACE_LAUNCH with
#          RGNN_SPAN_TRACE: every profiler record of 3 timed runs, to see where a span's time goes
#   gput:  build/tests/test_gpu_variants (GPUT_END seconds at most, and no later than 575 s into the call)
#   ncu:   Nsight Compute on kernel NCU_KERNEL (a regex) of one `explore run --validate-only` (NCU_MODEL, NCU_TASK,
#          NCU_DATASET, NCU_CFG): speed of light, occupancy, launch, warp states and memory, in ncu.txt
# The store is $OUT/s30.db; the logs go to $OUT/out$TAG.tgz (the device returns 8 files a call). DEADLINE: seconds
# after which no new explore starts (a call has 600).
set -u
: "${LABEL:?LABEL=<commit>}"
. .dev/device/use-debs.sh
W=/tmp/s30w${TAG:-}; rm -rf "$W"; mkdir -p "$W/sp"; LOG=$W/log.txt; DB=$OUT/s30.db; DL=${DEADLINE:-540}
DD=(--data-dir .dev/datasets)
say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$LOG"; }
late() { [ "$SECONDS" -ge "$DL" ] && { say "deadline: skipping $*"; return 0; }; return 1; }
finish() { sqlite3 "$DB" 'pragma wal_checkpoint(truncate);' >/dev/null 2>&1; tar czf "$OUT/out${TAG:-}.tgz" -C "$W" .; }
trap finish EXIT
say "build"; make -j16 all > "$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv | tee -a "$LOG"
xp() { build/explore "$@" "${DD[@]}" --exhaustive --no-cost-model --commit "$LABEL" --no-progress --db "$DB" >> "$W/explore.log" 2>&1 || say "explore rc=$? $*"; }
for step in ${STEPS:-check one}; do case $step in
check) grep -v '^#' "${CHECK:-plans/small/check29e.txt}" | while read -r m t d s; do
         late "$m $t $d $s" && continue; say "check $m $t $d $s"; xp --model "$m" --task "$t" --dataset "$d" --space "plans/small/$s.space" --repeats 30; done ;;
one)   for r in $(seq "${ROUNDS:-1}"); do grep -v '^#' "${LIST:-plans/h100/targets.txt}" | while read -r m t d cfg; do
         [ -n "${ONLY:-}" ] && ! echo "$m $t $d" | grep -Eq "$ONLY" && continue
         late "$m $t $d" && continue
         sp=$W/sp/$m-$t-${d//:/_}${METRICS:+-metrics}${EXTRA:+-launch}.space; echo "$cfg" | tr ',' '\n' | sed 's/=/: /' > "$sp"
         [ -n "${EXTRA:-}" ] && echo "$EXTRA" >> "$sp"
         say "one r$r $m $t $d ${METRICS:+metrics}"; xp --model "$m" --task "$t" --dataset "$d" --space "$sp" --no-resume --repeats "${REPEATS:-30}" ${METRICS:+--metrics}; done; done ;;
san)   for m in ${SAN_MODELS:-rgat}; do for tool in ${SAN_TOOLS:-memcheck racecheck}; do late "san $m $tool" && continue; say "san $m $tool"
         compute-sanitizer --tool $tool --error-exitcode 9 build/explore run --model $m --task ${SAN_TASK:-infer} --dataset aifb "${DD[@]}" --config "${SAN_CFG}" --validate-only > "$W/san-$m-$tool.log" 2>&1; say "san $m $tool rc=$?"; tail -3 "$W/san-$m-$tool.log" >> "$LOG"; done; done ;;
trace) grep -v '^#' "${TRACE:-plans/h100/trace.txt}" | while read -r m t d cfg; do for l in ${TRACE_LAUNCH:-stream graph dag}; do
         late "trace $m $t $d $l" && continue; f=$W/trace-$m-$t-${d//:/_}-$l.txt; say "trace $m $t $d $l"
         RGNN_SPAN_TRACE=$f build/explore run --model $m --task $t --dataset $d "${DD[@]}" --config "$cfg,launch=$l" --repeats 3 --warmup 2 > "$f.out" 2>&1
         say "trace rc=$?"; done; done ;;
gput)  g=${GPUT_END:-300}; [ $((575 - SECONDS)) -lt "$g" ] && g=$((575 - SECONDS)); [ "$g" -lt 30 ] && { say "no time for gput"; continue; }
       say "gput (${g} s)"; RGNN_REQUIRE_GPU=1 RGNN_TEST_DATA=.dev/datasets timeout "$g" build/tests/test_gpu_variants > "$W/gput.log" 2>&1; say "gput rc=$?"; tail -5 "$W/gput.log" >> "$LOG" ;;
ncu)   late ncu && continue; say "ncu ${NCU_MODEL:-rgat} ${NCU_DATASET:-synth:mag} ${NCU_KERNEL:?NCU_KERNEL=regex}"
       timeout 240 ncu --kernel-name "regex:$NCU_KERNEL" --launch-count 1 --section SpeedOfLight --section Occupancy \
         --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis build/explore run \
         --model "${NCU_MODEL:-rgat}" --task "${NCU_TASK:-infer}" --dataset "${NCU_DATASET:-synth:mag}" "${DD[@]}" \
         --config "${NCU_CFG:?NCU_CFG=config}" --validate-only > "$W/ncu.txt" 2>&1; say "ncu rc=$?" ;;
esac; done
say "done"
