#!/usr/bin/env bash
# The whole test suite: formatting, lints, no_std builds, unit and cross-check tests, the C ABI
# (valgrind, ASan/UBSan), the Go binding, the Debian packages, short fuzz runs, other CPU
# architectures under qemu-user, Miri, the Cortex-M4 and RISC-V firmware in QEMU, and the
# end-to-end run against a real control plane (the package in a Debian VM with systemd included).
# Needs what .ci/run installs: cargo (stable + nightly with miri), openssl, /usr/bin/python3 with
# cryptography, go, kubectl, valgrind, libcurl, qemu-system-arm, gcc-arm-none-eabi,
# qemu-system-riscv32 (qemu-system-misc), llvm.
set -euo pipefail
cd "$(dirname "$0")"

t_start=$(date +%s)
step() { printf '\n==> [%4ds] %s\n' "$(( $(date +%s) - t_start ))" "$*"; }

# The control plane for the e2e stage (upstream Kubernetes built from the Go module proxy, about
# 20 minutes cold) is cached by version outside the clone. When it is missing, build it now in the
# background at the lowest priority: it then overlaps the stages that leave a core idle (fuzzing,
# Miri, QEMU, valgrind) instead of running alone at the end. The e2e stage waits for it.
cp_pid=""
fw_pid=""
cp_log="${TMPDIR:-/tmp}/kubeboot-e2e-build.$$.log"
if ! e2e/build.sh --print >/dev/null 2>&1; then
  step "control plane not cached: building it in the background (log: $cp_log)"
  NICE="nice -n 19" setsid e2e/build.sh >"$cp_log" 2>&1 &
  cp_pid=$!
fi
# The Debian 12 VM's root file system (e2e/vm/image.sh: debootstrap, a few minutes, mostly
# downloads) is cached by version too: when missing it is made in the background from now on
# (e2e/vm/run waits for it).
vm_pid=""
if ! e2e/vm/image.sh --print >/dev/null 2>&1; then
  step "VM image not cached: building it in the background"
  setsid e2e/vm/image.sh >"${TMPDIR:-/tmp}/kubeboot-vm-image.$$.log" 2>&1 &
  vm_pid=$!
fi
e2e_pid=""
# Background stages (their process groups) are killed if the run stops early.
trap '[ -n "$cp_pid" ] && kill -- "-$cp_pid" 2>/dev/null; [ -n "$vm_pid" ] && kill -- "-$vm_pid" 2>/dev/null; [ -n "$fw_pid" ] && kill -- "-$fw_pid" 2>/dev/null; [ -n "$e2e_pid" ] && kill -- "-$e2e_pid" 2>/dev/null; true' EXIT

step "rustfmt"
cargo fmt --all -- --check

step "clippy (workspace, all targets)"
cargo clippy --workspace --all-targets -- -D warnings

step "one concept per file: no file in core/src or ffi/src over 1,000 lines"
long=$(find core/src ffi/src -name '*.rs' -exec wc -l {} + | awk '$2 != "total" && $1 > 1000')
[ -z "$long" ] || { echo "$long"; echo "error: split these files" >&2; exit 1; }

step "the core's features alone and in pairs, host and thumbv7em-none-eabihf (cargo hack --feature-powerset --depth 2; FEATURES_DEPTH=full .ci/features.sh for all 176)"
.ci/features.sh
cargo clippy -q -p kubeboot --no-default-features --lib -- -D warnings

step "core tests without std (portable paths: no RSA/P-384)"
cargo test -q -p kubeboot

step "workspace tests (std: CLI, RSA/P-384, cross-checks with OpenSSL, Python, Go, kubectl)"
cargo test --workspace

step "publishable crate: cargo package -p kubeboot (built from the packaged files), cargo doc without a warning"
pkg_log=$(cargo package -p kubeboot --allow-dirty 2>&1) || { echo "$pkg_log"; exit 1; }
echo "$pkg_log" | grep -E "Packaged|Verifying"
if echo "$pkg_log" | grep -i "^warning"; then echo "error: cargo package warned" >&2; exit 1; fi
for feats in "" "--no-default-features" "--features std,ring"; do
  RUSTDOCFLAGS="-D warnings" cargo doc -q -p kubeboot --no-deps $feats
done

step "C ABI: header matches the code (pinned cbindgen)"
ffi/check-header.sh

step "C ABI: C tests, under valgrind, and with AddressSanitizer + UBSan"
make -s -C examples/c-agent check
make -s -C examples/c-agent check-valgrind
make -s -C examples/c-agent check-asan

step "Go binding and agent over cgo (go test, cross-checks with crypto/x509)"
make -s -C examples/go-agent test

step "packaging: make -C ffi install into a temp prefix; C consumers by pkg-config and CMake (shared, static), a Go module by replace + pkg-config"
ffi/test-install.sh

# Everything end to end (e2e/all: the early-answer server, e2e/run's scenario list against a real
# control plane for every agent, the firmware's join over its UART, the Debian packages just built
# in a VM with systemd as PID 1, the fleet correctness run)
# mostly waits for an apiserver, an approval or a rotation: it runs in the background from here,
# beside the CPU-bound stages below (fuzzing, the firmware images, Miri), after the control-plane
# build; its log is printed at the end.
step "end to end, in the background from now on (e2e/all; its log follows at the end)"
e2e_log="${TMPDIR:-/tmp}/kubeboot-e2e.$$.log"
# The VM test (late in e2e/all's second lane) takes the packages built just below: it waits for
# their status file.
deb_dir=$(realpath -m "${CARGO_TARGET_DIR:-target}/deb/amd64")
deb_status="${TMPDIR:-/tmp}/kubeboot-debs.$$.status"
rm -f "$deb_status"
VM_DEBS="$deb_dir" VM_DEBS_STATUS="$deb_status" E2E_WAIT_PID="$cp_pid" setsid e2e/all >"$e2e_log" 2>&1 &
e2e_pid=$!

step "Debian packages (packaging/build-deb amd64: cargo auditable, debhelper, lintian without error); supply chain (.ci/supply-chain.sh: cargo deny licenses/bans/sources, the crates inside the packaged binaries)"
if packaging/build-deb amd64 && .ci/supply-chain.sh "$deb_dir"; then
  echo ok >"$deb_status"
else
  echo failed >"$deb_status"
  echo "error: the Debian packages or the supply chain check failed" >&2
  exit 1
fi

# The fuzzing runs one target at a time (one core) and the firmware stage is mostly one core too
# (LTO links, QEMU): run them side by side. The firmware's log is printed once both are done.
step "fuzzing: every target, short runs (fuzz/README.md has the long-run command); beside it, the Cortex-M4 and RISC-V firmware"
fw_log="${TMPDIR:-/tmp}/kubeboot-firmware.$$.log"
# The RISC-V image after the Cortex-M4 ones (both write examples/firmware/FOOTPRINT.md).
FLASH_GATE_MODE=${FLASH_GATE_MODE:-enforce} setsid sh -c 'examples/firmware/run && examples/firmware-riscv/run' >"$fw_log" 2>&1 &
fw_pid=$!
# A fixed seed and a fresh work corpus: CI explores the same inputs on every run (new findings come
# from the long runs in fuzz/README.md, not from a coin toss in CI).
fuzz_rc=0
FUZZ_SEED=${FUZZ_SEED:-1} KUBEBOOT_FUZZ_WORK=$(mktemp -d) fuzz/run-short.sh "${FUZZ_SECONDS:-20}" || fuzz_rc=$?
fw_rc=0
wait "$fw_pid" || fw_rc=$?
fw_pid=""

step "Cortex-M4 and RISC-V firmware in QEMU (Rust and C images, stack/heap/flash gates; ran beside the fuzzing)"
cat "$fw_log"
rm -f "$fw_log"
[ "$fuzz_rc" -eq 0 ] || { echo "error: fuzzing failed (exit $fuzz_rc)" >&2; exit 1; }
[ "$fw_rc" -eq 0 ] || { echo "error: the firmware stage failed (exit $fw_rc)" >&2; exit 1; }

step "other CPU architectures (.ci/cross.sh --ci, the short form): the core's unit tests and the C ABI tests on s390x (big-endian) and armv7 (32-bit) under qemu-user (the integration tests, aarch64 and the static binaries: .ci/cross.sh by hand)"
.ci/cross.sh --ci

step "Miri over the core's unit tests"
# --report-time: each test's time on Miri's clock, for the shard weights in .ci/miri.sh.
.ci/miri.sh -Z unstable-options --report-time

step "end to end (e2e/all, started in the background before the fuzzing)"
e2e_rc=0
wait "$e2e_pid" || e2e_rc=$?
e2e_pid=""
cp_pid=""
cat "$e2e_log"
rm -f "$e2e_log" "$deb_status"
[ "$e2e_rc" -eq 0 ] || { echo "error: end to end failed (exit $e2e_rc)" >&2; exit 1; }

step "all passed"
