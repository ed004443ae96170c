#!/usr/bin/env bash
# The whole test suite: formatting, lints, no_std builds, unit and cross-check tests.
# Needs: cargo (stable), openssl, /usr/bin/python3 with cryptography, go, kubectl.
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
