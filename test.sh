#!/usr/bin/env bash
# The whole test suite: formatting, lints, no_std builds, unit and cross-check tests, the C ABI
# (valgrind, ASan/UBSan), the Go binding, short fuzz runs, Miri, the Cortex-M4 firmware in QEMU,
# and the end-to-end run against a real control plane.
# Needs what .ci/run installs: cargo (stable + nightly with miri), openssl, /usr/bin/python3 with
# cryptography, go, kubectl, valgrind, libcurl, qemu-system-arm, gcc-arm-none-eabi.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

step "rustfmt"
cargo fmt --all -- --check

step "clippy (workspace, all targets)"
cargo clippy --workspace --all-targets -- -D warnings

step "no_std builds of the core (feature combinations that make sense without std)"
for feats in "" "csr-name" "alloc" "rsa" "p384" "csr-name,rsa,p384"; do
  echo "  --no-default-features --features '${feats}'"
  cargo build -q -p kubeboot --no-default-features --features "${feats}"
done
cargo clippy -q -p kubeboot --no-default-features --lib -- -D warnings

step "core tests without std (portable paths: no RSA/P-384)"
cargo test -q -p kubeboot

step "workspace tests (std: CLI, RSA/P-384, cross-checks with OpenSSL, Python, Go, kubectl)"
cargo test --workspace

step "C ABI: header matches the code (pinned cbindgen)"
ffi/check-header.sh

step "C ABI: C tests, under valgrind, and with AddressSanitizer + UBSan"
make -s -C examples/c-agent check
make -s -C examples/c-agent check-valgrind
make -s -C examples/c-agent check-asan

step "Go binding and agent over cgo (go test, cross-checks with crypto/x509)"
make -s -C examples/go-agent test

step "fuzzing: every target, short runs (fuzz/README.md has the long-run command)"
# A fixed seed and a fresh work corpus: CI explores the same inputs on every run (new findings come
# from the long runs in fuzz/README.md, not from a coin toss in CI).
FUZZ_SEED=${FUZZ_SEED:-1} KUBEBOOT_FUZZ_WORK=$(mktemp -d) fuzz/run-short.sh "${FUZZ_SECONDS:-20}"

step "Miri over the core's unit tests"
.ci/miri.sh

step "Cortex-M4 firmware in QEMU (Rust and C images, stack/heap/flash gates)"
FLASH_GATE_MODE=${FLASH_GATE_MODE:-report} examples/firmware/run

step "end to end against a real control plane (upstream kube-apiserver, etcd, kube-controller-manager)"
e2e/run
