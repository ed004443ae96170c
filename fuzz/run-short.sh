#!/usr/bin/env bash
# Short fuzzing pass over every target: build all once, replay the committed regression inputs,
# then fuzz each target for SECONDS (default 20) starting from the committed seeds.
#
#   fuzz/run-short.sh [SECONDS]
#
# Environment:
#   KUBEBOOT_FUZZ_WORK  where generated corpora go (default: ${TMPDIR:-/tmp}/kubeboot-fuzz);
#                       never inside the repository, so seeds stay the only committed inputs
#   FUZZ_TARGETS        space-separated subset of targets (default: all of `cargo fuzz list`)
#   FUZZ_NICE           nice level for the fuzzing processes (default 10)
#   FUZZ_SEED           libFuzzer -seed (CI sets it, with a fresh work dir, so that a run explores
#                       the same inputs every time; unset for exploratory runs)
#
# Exits non-zero if any target crashes, times out, leaks or fails to build. Crash inputs are
# written to fuzz/artifacts/<target>/ (git-ignored); minimise one with
# `cargo +nightly fuzz tmin <target> <file>` and commit it under fuzz/regressions/<target>/.
set -uo pipefail

SECONDS_PER_TARGET=${1:-20}
CARGO_FUZZ_VERSION=0.13.2
cd "$(dirname "$0")"
FUZZ_DIR=$(pwd)
WORK=${KUBEBOOT_FUZZ_WORK:-${TMPDIR:-/tmp}/kubeboot-fuzz}
NICE=${FUZZ_NICE:-10}

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "error: a nightly toolchain is required (rustup toolchain install nightly)" >&2
  exit 2
fi
if [ "$(cargo fuzz --version 2>/dev/null | awk '{print $2}')" != "$CARGO_FUZZ_VERSION" ]; then
  echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked || exit 2
fi

TARGETS=${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}
HOST=$(rustc +nightly -vV | sed -n 's/^host: //p')

echo "== building all targets (release, debug assertions, ASan)"
if ! cargo +nightly fuzz build; then
  echo "error: build failed" >&2
  exit 1
fi
# cargo-fuzz honours CARGO_TARGET_DIR (CI keeps builds outside the clone); default fuzz/target.
BIN_DIR="${CARGO_TARGET_DIR:-$FUZZ_DIR/target}/$HOST/release"

mkdir -p "$WORK/logs"
failed=()
printf '%-16s %12s %10s %8s %8s  %s\n' target execs exec/s cov ft result > "$WORK/logs/summary.txt"
for t in $TARGETS; do
  bin="$BIN_DIR/$t"
  corpus="$WORK/corpus/$t"
  artifacts="$FUZZ_DIR/artifacts/$t/"
  mkdir -p "$corpus" "$artifacts"
  log="$WORK/logs/$t.log"
  result=ok

  # 1. Replay committed regression inputs (each must pass).
  if [ -d "regressions/$t" ] && [ -n "$(ls -A "regressions/$t" 2>/dev/null)" ]; then
    if ! "$bin" -artifact_prefix="$artifacts" "regressions/$t"/* > "$WORK/logs/$t.regressions.log" 2>&1; then
      result=REGRESSION
    fi
  fi

  # 2. Fuzz from the seeds (read-only) into the work corpus.
  seeds=()
  [ -d "seeds/$t" ] && seeds=("seeds/$t")
  echo "== $t: ${SECONDS_PER_TARGET}s"
  mkdir -p "$WORK/tmp/$t"
  # TMPDIR: whatever a target writes to a temporary directory goes under the work dir, not /tmp.
  if ! TMPDIR="$WORK/tmp/$t" nice -n "$NICE" "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" \
      "$corpus" "${seeds[@]}" > "$log" 2>&1; then
    [ "$result" = ok ] && result=CRASH
  fi
  [ "$result" = ok ] || failed+=("$t")

  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-16s %12s %10s %8s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result" \
    | tee -a "$WORK/logs/summary.txt"
  if [ "$result" != ok ]; then
    grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written|artifact' "$log" "$WORK/logs/$t.regressions.log" 2>/dev/null | head -20
  fi
done

echo
cat "$WORK/logs/summary.txt"
echo "logs: $WORK/logs/   corpora: $WORK/corpus/"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
