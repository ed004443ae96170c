#!/usr/bin/env bash
# Runs kubeboot's unit tests under Miri (UB / out-of-bounds / uninitialised-memory checks on
# the interpreter). Usage: .ci/miri.sh [extra libtest args]
#
# Miri interprets every instruction, so elliptic-curve and RSA arithmetic is ~10^4-10^5x slower
# than native: a single P-256 scalar multiplication takes minutes. Core is not edited to add
# `#[cfg_attr(miri, ignore)]`, so the tests that do EC/RSA math are skipped here by name. They
# are all safe-Rust wrappers around RustCrypto (`#![forbid(unsafe_code)]` in kubeboot); the
# parsing, encoding, token, time and policy logic that kubeboot itself implements still runs.
# Proptests run with 8 cases (PROPTEST_CASES) instead of 256.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
rustup +nightly component add miri rust-src >/dev/null 2>&1 || true

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
  # statistical test over 20 000 generated tokens (tens of minutes under Miri)
  token::tests::generation_is_unbiased
)
args=()
for s in "${SKIP[@]}"; do args+=(--skip "$s"); done

# Proptest looks up its failure-persistence file (getcwd, open): let isolated calls fail
# with an error instead of aborting, so it falls back to no persistence.
export MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-env-set=PROPTEST_CASES=8 -Zmiri-isolation-error=warn-nobacktrace"
start=$(date +%s)
cargo +nightly miri test -p kubeboot --lib -- "${args[@]}" "$@"
echo "miri: passed in $(( $(date +%s) - start ))s (${#SKIP[@]} tests skipped, see $0)"
