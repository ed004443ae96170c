#!/usr/bin/env bash
# Runs kubeboot's unit tests and the FFI's Rust-side unit tests under Miri (UB / out-of-bounds /
# uninitialised-memory / aliasing checks on the interpreter).
#
# Usage: .ci/miri.sh [extra libtest args]     (e.g. -Z unstable-options --report-time)
#   MIRI_JOBS=N   parallel Miri processes for the core tests (default: 2, one per core here).
#   Exits non-zero if any part fails (build, any shard, the FFI run) or runs no test.
#
# Miri interprets every instruction, so elliptic-curve and RSA arithmetic is ~10^4-10^5x slower
# than native: a single P-256 scalar multiplication takes minutes. Core is not edited to add
# `#[cfg_attr(miri, ignore)]`, so the tests that do EC/RSA math are skipped here by name. They
# are all safe-Rust wrappers around RustCrypto (`#![forbid(unsafe_code)]` in kubeboot); the
# parsing, encoding, token, time and policy logic that kubeboot itself implements still runs.
# Proptests run with 8 cases (PROPTEST_CASES) instead of 256.
#
# Miri is single-threaded, so the core test list is split into MIRI_JOBS shards, each run by its
# own `cargo miri test -- --exact <names>` process (one build, shared target dir); the FFI run
# goes beside them. Every test of `--list` that is not skipped is in exactly one shard.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
rustup +nightly component add miri rust-src >/dev/null 2>&1 || true
jobs=${MIRI_JOBS:-2}

SKIP=(
  # P-256 key derivation / signing (scalar multiplications)
  api::tests::spec_table_k1
  csr::tests::client_csr_structure
  csr::tests::assemble_matches_write_der
  csr::tests::short_buffers_report_size_and_write_nothing
  csr::tests::serving_requires_and_bounds_sans
  key::tests::k1_round_trips_byte_exact
  key::tests::k1_spki_matches_spec_hash_input
  key::tests::entropy_rules
  key::tests::generate_retries_until_valid
  key::tests::debug_is_redacted
  key::tests::signature_verifies
  key::tests::pkcs8_with_mismatched_public_key_is_refused
  # CSR signature verification (P-256 / P-384 ECDSA, RSA-2048 PKCS#1 v1.5)
  policy::tests::accepts_kubelet_client_and_serving
  policy::tests::der_entry_point
  policy::tests::generic_validation
  policy::tests::client_shape
  policy::tests::serving_shape
  policy::tests::signer_names
  request::tests::reads_client_csr
  request::tests::reads_sans_in_order
  request::tests::key_types
  request::tests::tampering_breaks_signature
  request::tests::truncation_and_trailing_data
  request::tests::mutated_fixture_never_panics
  # P-256 keygen, signing and verification with valid and malformed points (160 s under Miri)
  backend::tests::p256_points
  # statistical test over 20 000 generated tokens (tens of minutes under Miri)
  token::tests::generation_is_unbiased
  # 40 000 headers through the DER walker and `der` (more than 14 min under Miri even with every
  # 5th first octet): a logic check of safe code; the walker itself runs under Miri in every
  # other verify test
  verify::tests::next_agrees_with_der
)

FFI_SKIP=(
  # Load K1 (the public key is derived: a P-256 scalar multiplication) and sign CSRs with it
  tests::k1_node_csr_name_vector
  tests::callback_signer_and_policy
  tests::csr_max_len_suffices
  # Loads a key, signs the CSR and verifies the issued certificate (ECDSA)
  engine::tests::recorded_bootstrap_through_the_abi
  # Two ECDSA verifications of the fixture (240 s under Miri); the short-scratch test beside it
  # still runs the scratch handling up to the size check
  verify::tests::scratch_variant_matches_heap_variant
)

# Tests that are slow under Miri, with their time in seconds on Miri's clock (`--report-time`;
# 1 s there took about 3 s of wall clock with the machine loaded). The shards are balanced on
# these (longest first, each to the least loaded shard); unlisted tests count 1. Only a hint for
# the split: a stale or missing entry makes the shards end less close together, nothing else.
HEAVY=(
  # measured in the cold CI run of 2026-12-02 (f41acca), seconds on Miri's clock
  "kubeconfig::tests::prop::writer_roundtrips_any_strings 81"
  "kubeconfig::tests::prop::never_panics_yamlish 32"
  "token::authfile::tests::parse_never_panics 28"    # proptest, \PC regex strategy
  "discovery::tests::streaming_matches_one_shot 26"  # HMAC-SHA256 of the prefixes near the 48-byte chunk edges
  "token::tests::parse_never_panics 24"
  "request::tests::arbitrary_bytes_never_panic 23"
  "kubeconfig::tests::node_kubeconfig_roundtrip 22"
  "token::rfc3339::tests::never_panics 22"
  "kubeconfig::tests::prop::never_panics 20"
  "json::tests::prop::never_panics_jsonish 18"
  "policy::tests::usages 16"
  "kubeconfig::tests::prop::truncated_never_panics 13"
  "token::authfile::tests::round_trip 13"
  "json::tests::prop::never_panics 11"
  "discovery::tests::upstream_vectors 10"
  "verify::tests::decimal_without_64_bit_division_matches_core_fmt 7"  # 300 values under Miri
  "token::tests::generate_parse_round_trip 7"
  "kubeconfig::tests::bootstrap_kubeconfig_roundtrip 5"
  # new since: measured alone under Miri
  "csr::tests::signature_encoding_matches_ecdsa_crate 38"
  "verify::tests::single_cn_fast_path_renders_as_the_general_path 16"
  "verify::tests::hand_decoded_primitives_agree_with_der 13"
  "csr::tests::write_der_matches_assemble_across_length_boundaries 8"
)

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

# Shard the core tests: the non-skipped names of `--list`, balanced on the HEAVY weights.
cargo +nightly miri test -q -p kubeboot --lib -- --list --format terse 2>/dev/null \
  | sed -n 's/: test$//p' >"$logs/all"
total=$(wc -l <"$logs/all")
if [ "$total" -eq 0 ]; then
  echo "miri: could not list the core tests" >&2
  exit 1
fi
printf '%s\n' "${SKIP[@]}" | sort >"$logs/skip"
for s in "${SKIP[@]}"; do
  grep -qxF "$s" "$logs/all" || echo "miri: warning: skipped test $s no longer exists" >&2
done
grep -vxFf "$logs/skip" "$logs/all" >"$logs/run" || true
run=$(wc -l <"$logs/run")
printf '%s\n' "${HEAVY[@]}" >"$logs/heavy"
awk -v n="$jobs" -v dir="$logs" '
  NR == FNR { w[$1] = $2; next }
  { k++; name[k] = $1; wt[k] = ($1 in w) ? w[$1] : 1; order[k] = k }
  END {
    for (i = 1; i <= k; i++)
      for (j = i + 1; j <= k; j++)
        if (wt[order[j]] > wt[order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
    for (s = 0; s < n; s++) { load[s] = 0; printf "" >(dir "/shard" s) }
    for (i = 1; i <= k; i++) {
      b = 0
      for (s = 1; s < n; s++) if (load[s] < load[b]) b = s
      load[b] += wt[order[i]]
      print name[order[i]] >>(dir "/shard" b)
    }
  }' "$logs/heavy" "$logs/run"

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
ffi_args=()
for s in "${FFI_SKIP[@]}"; do ffi_args+=(--skip "$s"); done
cargo +nightly miri test -p kubeboot-ffi --lib -- "${ffi_args[@]}" "$@" >"$logs/outffi" 2>&1 &
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

echo "miri: core: $run of $total tests in $jobs shards (${#SKIP[@]} skipped); ffi: ${#FFI_SKIP[@]} skipped; see $0"
echo "miri: $passed_total passed, $failed_total failed"
echo "miri: finished in $(( $(date +%s) - start ))s"
exit "$failed"
