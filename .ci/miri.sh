#!/usr/bin/env bash
# Runs kubeboot's unit tests and the FFI's Rust-side unit tests under Miri (UB / out-of-bounds /
# uninitialised-memory / aliasing checks on the interpreter).
#
# Usage: .ci/miri.sh [extra libtest args]     (e.g. -Z unstable-options --report-time)
#   MIRI_JOBS=N   parallel Miri processes for the core tests (default: 2, one per core here).
#   Exits non-zero if any part fails (build, any shard, the FFI run) or runs no test.
#
# Miri interprets every instruction, so elliptic-curve and RSA arithmetic is ~10^4-10^5x slower
# than native: a single P-256 scalar multiplication takes minutes. The tests that do that math
# carry `#[cfg_attr(miri, ignore = "why")]` beside their code (they are safe-Rust wrappers around
# RustCrypto, `#![forbid(unsafe_code)]` in kubeboot); the parsing, encoding, token, time and
# policy logic that kubeboot itself implements runs. Proptests run with 8 cases (PROPTEST_CASES)
# instead of 256.
#
# Miri is single-threaded, so the core test list is dealt round-robin into MIRI_JOBS shards, each
# run by its own `cargo miri test -- --exact <names>` process (one build, shared target dir); the
# FFI run goes beside them. Every test of `--list` is in exactly one shard.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
rustup +nightly component add miri rust-src >/dev/null 2>&1 || true
jobs=${MIRI_JOBS:-2}

# Proptest looks up its failure-persistence file (getcwd, open): let isolated calls fail
# with an error instead of aborting, so it falls back to no persistence.
export MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-env-set=PROPTEST_CASES=8 -Zmiri-isolation-error=warn-nobacktrace"
start=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# cargo-miri's test "binaries" are JSON files that record the directory they were built in. The
# target dir is shared between checkouts (~/.cache/kubeboot), and cargo finds them fresh for a
# checkout at another path with the same sources: running them then fails ("failed to run `cd
# <old checkout> ...`: No such file or directory", exit 101). Our two crates are rebuilt every
# time (seconds); the dependencies stay cached.
rm -rf "$CARGO_TARGET_DIR"/miri/*/debug/build/kubeboot "$CARGO_TARGET_DIR"/miri/*/debug/build/kubeboot-ffi \
  "$CARGO_TARGET_DIR"/miri/*/debug/deps/kubeboot-* "$CARGO_TARGET_DIR"/miri/*/debug/deps/libkubeboot* \
  "$CARGO_TARGET_DIR"/miri/*/debug/.fingerprint/kubeboot-*

# Build first (the parallel runs below then only take the target dir's lock briefly). One cargo
# call per package: together they would unify features into a third build.
cargo +nightly miri test -p kubeboot --lib --no-run
cargo +nightly miri test -p kubeboot-ffi --lib --no-run
echo "miri: built in $(( $(date +%s) - start ))s"

# Shard the core tests: the names of `--list`, dealt round-robin (the ignored ones report
# themselves as ignored).
cargo +nightly miri test -q -p kubeboot --lib -- --list --format terse 2>/dev/null \
  | sed -n 's/: test$//p' >"$logs/all"
total=$(wc -l <"$logs/all")
if [ "$total" -eq 0 ]; then
  echo "miri: could not list the core tests" >&2
  exit 1
fi
awk -v n="$jobs" -v dir="$logs" '
  BEGIN { for (s = 0; s < n; s++) printf "" > (dir "/shard" s) }
  { print > (dir "/shard" ((NR - 1) % n)) }' "$logs/all"

pids=()
names=()
outs=()
for ((j = 0; j < jobs; j++)); do
  mapfile -t tests <"$logs/shard$j"
  [ "${#tests[@]}" -gt 0 ] || continue
  cargo +nightly miri test -p kubeboot --lib -- --exact "${tests[@]}" "$@" >"$logs/out$j" 2>&1 &
  pids+=($!)
  names+=("core shard $((j + 1))/$jobs (${#tests[@]} tests)")
  outs+=("$logs/out$j")
done
cargo +nightly miri test -p kubeboot-ffi --lib -- "$@" >"$logs/outffi" 2>&1 &
pids+=($!)
names+=("ffi")
outs+=("$logs/outffi")

failed=0
passed_total=0
failed_total=0
for i in "${!pids[@]}"; do
  rc=0
  wait "${pids[$i]}" || rc=$?
  out=${outs[$i]}
  echo "===== miri: ${names[$i]}: exit $rc after $(( $(date +%s) - start ))s ====="
  cat "$out"
  result=$(grep -E '^test result: ' "$out" | tail -1 || true)
  p=$(sed -n 's/.* \([0-9]\+\) passed.*/\1/p' <<<"$result")
  f=$(sed -n 's/.* \([0-9]\+\) failed.*/\1/p' <<<"$result")
  passed_total=$(( passed_total + ${p:-0} ))
  failed_total=$(( failed_total + ${f:-0} ))
  if [ "$rc" -ne 0 ] || [ -z "$result" ] || [ "${p:-0}" -eq 0 ]; then
    echo "miri: ${names[$i]} FAILED (exit $rc)" >&2
    failed=1
  fi
done

echo "miri: core: $total tests in $jobs shards (the slow ones ignored where they are written)"
echo "miri: $passed_total passed, $failed_total failed"
echo "miri: finished in $(( $(date +%s) - start ))s"
exit "$failed"
