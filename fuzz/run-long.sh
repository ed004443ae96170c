#!/usr/bin/env bash
# Long fuzzing runs: each target until it has executed RUNS inputs or run for SECONDS, whichever
# comes first (the long-run goal: >= 10 million executions or 1 hour per target).
#
#   fuzz/run-long.sh [RUNS] [SECONDS]          # defaults: 10000000 3600
#
# Environment: FUZZ_TARGETS (subset), KUBEBOOT_FUZZ_WORK (corpora/logs; default
# ${TMPDIR:-/tmp}/kubeboot-fuzz-long; corpora are kept between runs, so a second run continues),
# FUZZ_NICE (default 19), FUZZ_SANITIZER (default address; `none` runs the targets 2-3x faster,
# for targets with no unsafe code of ours: kubeboot is #![forbid(unsafe_code)], so only c_abi
# needs ASan for our own code; panics, timeouts and OOMs are caught either way). The summary
# table (target, execs, exec/s, cov, ft, seconds, result) is written to
# $KUBEBOOT_FUZZ_WORK/logs/summary.txt and printed at the end. Exit non-zero if any
# target crashed, timed out, leaked or failed its regression replay.
set -uo pipefail
RUNS=${1:-10000000}
MAX_SECONDS=${2:-3600}
cd "$(dirname "$0")"
WORK=${KUBEBOOT_FUZZ_WORK:-${TMPDIR:-/tmp}/kubeboot-fuzz-long}
NICE=${FUZZ_NICE:-19}
HOST=$(rustc +nightly -vV | sed -n 's/^host: //p')
SANITIZER=${FUZZ_SANITIZER:-address}
cargo +nightly fuzz build -s "$SANITIZER" || { echo "error: build failed" >&2; exit 1; }
BIN_DIR="${CARGO_TARGET_DIR:-$PWD/target}/$HOST/release"
TARGETS=${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}
mkdir -p "$WORK/logs"
summary="$WORK/logs/summary.txt"
printf '%-16s %12s %10s %8s %8s %8s  %s\n' target execs exec/s cov ft seconds result > "$summary"
failed=()
for t in $TARGETS; do
  corpus="$WORK/corpus/$t"; artifacts="$PWD/artifacts/$t/"; log="$WORK/logs/$t.log"
  mkdir -p "$corpus" "$artifacts"
  result=ok
  if [ -d "regressions/$t" ] && [ -n "$(ls -A "regressions/$t")" ]; then
    "$BIN_DIR/$t" "regressions/$t"/* > "$WORK/logs/$t.regressions.log" 2>&1 || result=REGRESSION
  fi
  seeds=(); [ -d "seeds/$t" ] && seeds=("seeds/$t")
  echo "== $t: up to $RUNS execs or ${MAX_SECONDS}s, sanitizer $SANITIZER ($(date -u +%H:%M:%S))"
  t0=$(date +%s)
  mkdir -p "$WORK/tmp/$t"
  # TMPDIR: whatever a target writes to a temporary directory goes under the work dir, not /tmp.
  TMPDIR="$WORK/tmp/$t" nice -n "$NICE" "$BIN_DIR/$t" -runs="$RUNS" -max_total_time="$MAX_SECONDS" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" \
      "$corpus" "${seeds[@]}" > "$log" 2>&1 || { [ "$result" = ok ] && result=CRASH; }
  secs=$(( $(date +%s) - t0 ))
  [ "$result" = ok ] || failed+=("$t")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-16s %12s %10s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$secs" "$result" | tee -a "$summary"
  [ "$result" = ok ] || grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -10
done
cat "$summary"
[ ${#failed[@]} -eq 0 ] || { echo "FAILED: ${failed[*]}" >&2; exit 1; }
