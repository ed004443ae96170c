#!/usr/bin/env bash
# The core's features compile without a warning alone and in every pair (or, by hand, in every
# combination): `cargo hack --feature-powerset` over the features of core/Cargo.toml (nothing
# hand-picked), for the host and for the Cortex-M4
# (thumbv7em-none-eabihf: every feature but the ones that need the standard library). Then the
# targets without compare-and-swap, Cortex-M0+ (thumbv6m-none-eabi) and RISC-V without the A
# extension (riscv32imc-unknown-none-elf, ESP32-C3 class): the core without std and
# libkubeboot.a (the ffi crate without std) check there without a warning.
#
# Usage: .ci/features.sh          (needs cargo-hack on PATH; .ci/run installs it)
#   FEATURES_DEPTH=2 (CI's default): every feature alone and every pair of features, with none
#   and with the defaults (64 combinations: the features are cfg switches whose interactions
#   are pairs, rsa+sha512, p384+sha512, std+ring, ...). FEATURES_DEPTH=full: the whole powerset
#   (176 combinations, about three times as long), run by hand before a release and on any
#   change to [features].
#   Checks (no codegen) go to their own target dir, $CARGO_TARGET_DIR-features, so the
#   `-D warnings` flags do not rebuild the main target dir.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-hack >/dev/null || { echo "features: cargo-hack not found (cargo install cargo-hack)" >&2; exit 2; }
base="${CARGO_TARGET_DIR:-$PWD/target}-features"
export RUSTFLAGS="-D warnings"
thumb=thumbv7em-none-eabihf
small=(thumbv6m-none-eabi riscv32imc-unknown-none-elf)
for t in "$thumb" "${small[@]}"; do
  rustup target list --installed 2>/dev/null | grep -qx "$t" || rustup target add "$t"
done

# Needs std: the platform itself, ring, and p256's tables (they are built lazily behind std's
# lock). The assembly backend has an effect on Arm only. `default` is only a name for
# csr-name + sha512, which the powerset has anyway.
host_only=std,ring,precomputed-tables
# The two targets side by side, each in its own target dir (a check compiles the core on one core
# mostly, so two of them use the machine's two): about half the time of one after the other.
pids=()
for target in host "$thumb"; do
  if [ "$target" = host ]; then
    args=(--exclude-features default,p256-cortex-m4)
  else
    args=(--target "$target" --exclude-features "default,$host_only")
  fi
  depth=${FEATURES_DEPTH:-2}
  [ "$depth" = full ] || args+=(--depth "$depth")
  n=$(cargo hack check -p kubeboot --feature-powerset "${args[@]}" --print-command-list 2>/dev/null | grep -c '^cargo check')
  echo "features: $target: $n combinations"
  CARGO_TARGET_DIR="$base-$target" nice cargo hack check -q -p kubeboot --feature-powerset "${args[@]}" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
[ "$rc" = 0 ] || { echo "features: a combination failed (see above)" >&2; exit 1; }
echo "features: every combination compiles without a warning"
for t in "${small[@]}"; do
  CARGO_TARGET_DIR="$base-small" nice cargo check -q -p kubeboot --no-default-features --target "$t"
  # The pools' flags take a critical section there (portable-atomic); cdylib is dropped.
  CARGO_TARGET_DIR="$base-small" nice cargo check -q -p kubeboot-ffi --no-default-features --target "$t" 2>&1 |
    { grep -v "dropping unsupported crate type .cdylib.\|^$" || true; }
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "features: $t failed" >&2; exit 1; }
  # And for a C image, whose critical section is kubeboot_critical_section_enter/_exit.
  CARGO_TARGET_DIR="$base-small" nice cargo check -q -p kubeboot-ffi --no-default-features \
    --features critical-section-c --target "$t" 2>&1 | { grep -v "dropping unsupported crate type .cdylib.\|^$" || true; }
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "features: $t (critical-section-c) failed" >&2; exit 1; }
  echo "features: $t: the core and libkubeboot.a (no std; and critical-section-c) check without a warning"
done
