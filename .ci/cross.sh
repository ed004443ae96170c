#!/usr/bin/env bash
# Every CPU architecture an edge fleet has. For aarch64 (arm64), armv7 (armhf) and s390x (big
# endian: a byte-order assumption in a parser fails there), under qemu-user:
#   tests  the core's tests, every host feature (cargo test -p kubeboot, its unit and integration
#          tests: the cross-checks still call the host's openssl, python3, go and kubectl), and
#          the C ABI tests (examples/c-agent/tests.c built by its Makefile with the cross gcc
#          against that target's libkubeboot.a);
#   static the static `kubeboot` binary (musl for x86-64 and aarch64; glibc with crt-static for
#          armv7, whose musl std the mirror this machine reaches does not serve for Rust 1.95.0,
#          and s390x, where Rust ships no musl std), its sizes, and `kubeboot demo` run on it.
#
#   .ci/cross.sh                     tests and static binaries, every architecture (by hand)
#   .ci/cross.sh --ci                what CI runs, the short form: on s390x (the big-endian
#                                    one) and armv7 (the 32-bit one: usize is 32 bits there) the
#                                    core's unit tests (its parsers' included) with 32 cases per
#                                    property test instead of proptest's 256 (PROPTEST_CASES) and
#                                    the C ABI tests; the integration tests (the corruption sweeps
#                                    take many minutes under qemu-user), aarch64 (64-bit little
#                                    endian, as the host) and the static binaries are by hand
#   .ci/cross.sh tests|static ARCH... one part, some architectures (aarch64 armv7 s390x; static:
#                                    x86_64 too)
#   .ci/cross.sh --sizes             the README's size table (from the static binaries built)
#
# Needs Debian's cross toolchains and the targets' libssl-dev (the core's benchmark peer links
# OpenSSL) through multiarch, qemu-user and the rustup targets: .ci/run installs them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT="$CARGO_TARGET_DIR/cross"
ALL=(aarch64 armv7 s390x)
# The static binaries: the host's architecture too.
STATIC=(x86_64 aarch64 armv7 s390x)
# The core's features in the CLI's build (every host path: RSA, P-384, ring, ...).
FEATURES=std,ring,rsa,p384,sec1-compressed,precomputed-tables,csr-name,sha512

gnu_target() { case $1 in aarch64) echo aarch64-unknown-linux-gnu ;; armv7) echo armv7-unknown-linux-gnueabihf ;; s390x) echo s390x-unknown-linux-gnu ;; *) echo "unknown: $1" >&2; return 1 ;; esac; }
static_target() { case $1 in x86_64) echo x86_64-unknown-linux-musl ;; aarch64) echo aarch64-unknown-linux-musl ;; armv7) echo armv7-unknown-linux-gnueabihf ;; s390x) echo s390x-unknown-linux-gnu ;; esac; }
prefix() { case $1 in x86_64) echo x86_64-linux-gnu ;; aarch64) echo aarch64-linux-gnu ;; armv7) echo arm-linux-gnueabihf ;; s390x) echo s390x-linux-gnu ;; esac; }
qemu() { case $1 in x86_64) echo env ;; aarch64) echo qemu-aarch64 ;; armv7) echo qemu-arm ;; s390x) echo qemu-s390x ;; esac; }
step() { printf '\n--> [%4ds cross] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }
t0=$(date +%s)

# sysroot ARCH: where qemu-user finds the target's loader and libraries. The target's multiarch
# libc (libc6:<arch>, installed with its libssl-dev) when there is one: the host's ld.so.cache
# sends the loader to it anyway, and a loader from the cross sysroot (libc6-<arch>-cross,
# 2.36-8cross1) with Debian's libc (2.36-9+deb12u14) is two builds of glibc in one process:
# on armhf, every pthread_create then faults (si_addr 0x8). Else the cross sysroot.
sysroot() {
  local p
  p=$(prefix "$1")
  if [[ -e /lib/$p/libc.so.6 ]]; then echo /; else echo "/usr/$p"; fi
}

# cross_env ARCH TARGET: the linker, the runner, pkg-config and the C compiler for TARGET
cross_env() {
  local p T
  p=$(prefix "$1"); T=${2^^}; T=${T//-/_}
  export "CARGO_TARGET_${T}_LINKER=$p-gcc"
  [[ $1 == x86_64 ]] || export "CARGO_TARGET_${T}_RUNNER=$(qemu "$1") -L $(sysroot "$1")"
  export PKG_CONFIG_ALLOW_CROSS=1 PKG_CONFIG_LIBDIR="/usr/lib/$p/pkgconfig:/usr/share/pkgconfig" PKG_CONFIG_SYSROOT_DIR=/
  export "CC_${2//-/_}=$p-gcc" "AR_${2//-/_}=$p-ar"
  rustup target list --installed | grep -qx "$2" || rustup target add "$2" >/dev/null
}

tests() {
  local arch=$1 t p
  t=$(gnu_target "$arch"); p=$(prefix "$arch")
  (
    cross_env "$arch" "$t"
    local which=(--lib --tests)
    [[ -z ${CROSS_SHORT:-} ]] || which=(--lib)
    step "$arch: the core's tests under $(qemu "$arch") (cargo test -p kubeboot --target $t --features $FEATURES ${which[*]}${PROPTEST_CASES:+, PROPTEST_CASES=$PROPTEST_CASES})"
    nice cargo test -q -p kubeboot --target "$t" --features "$FEATURES" "${which[@]}"
    step "$arch: the C ABI tests (examples/c-agent/tests.c against the $t libkubeboot.a) under $(qemu "$arch")"
    nice cargo build -q --release -p kubeboot-ffi --target "$t"
    local b="$OUT/$arch/c"
    mkdir -p "$b"
    make -s -C examples/c-agent "$b/kubeboot-c-tests" "$b/k1.der" CC="$p-gcc" CARGO=true BUILD="$b" \
      LIB="$CARGO_TARGET_DIR/$t/release/libkubeboot.a"
    (cd examples/c-agent && KUBEBOOT_DATA="$ROOT/core/tests/data" \
      "$(qemu "$arch")" -L "$(sysroot "$arch")" "$b/kubeboot-c-tests" "$ROOT/core/tests/data/p256.key" "$b/k1.der")
  )
}

static() {
  local arch=$1 t p bin
  t=$(static_target "$arch"); p=$(prefix "$arch")
  (
    cross_env "$arch" "$t"
    step "$arch: the static kubeboot ($t, no TPM: Debian has no static libtss2)"
    if [[ $t == *-gnu* ]]; then export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static"; fi
    nice cargo build -q --release --locked -p kubeboot-cli --no-default-features --target "$t"
    bin="$CARGO_TARGET_DIR/$t/release/kubeboot"
    mkdir -p "$OUT/$arch"
    cp "$bin" "$OUT/$arch/kubeboot"
    "$p-strip" -o "$OUT/$arch/kubeboot.stripped" "$bin"
    # (musl's x86-64 and aarch64 binaries are static PIE: `file` says "static-pie linked")
    file -b "$OUT/$arch/kubeboot" | grep -Eq "statically linked|static-pie linked" || { file "$OUT/$arch/kubeboot"; echo "error: not static" >&2; exit 1; }
    # Runs on the target: the whole node side offline (key, CSR, CertificateSigningRequest).
    $(qemu "$arch") "$OUT/$arch/kubeboot.stripped" demo --node-name "edge-${arch//_/-}" | tail -n 3
    printf '%s %s %s %s\n' "$arch" "$t" "$(stat -c %s "$OUT/$arch/kubeboot")" "$(stat -c %s "$OUT/$arch/kubeboot.stripped")" >"$OUT/$arch/size"
    cat "$OUT/$arch/size"
  )
}

# grouped N: N with thousands separators (whatever the locale)
grouped() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

sizes() {
  echo "| architecture | target | release binary (bytes) | stripped (bytes) |"
  echo "|---|---|---:|---:|"
  local arch
  for arch in "${STATIC[@]}"; do
    [[ -f $OUT/$arch/size ]] || { echo "no static binary for $arch: run .ci/cross.sh static $arch" >&2; return 1; }
    read -r a t full stripped <"$OUT/$arch/size"
    printf '| %s | `%s` | %s | %s |\n' "$a" "$t" "$(grouped "$full")" "$(grouped "$stripped")"
  done
}

case ${1:-} in
  --sizes) sizes ;;
  --ci)
    export PROPTEST_CASES=${PROPTEST_CASES:-32} CROSS_SHORT=1
    tests s390x
    tests armv7 ;;
  tests)
    shift
    for a in "${@:-${ALL[@]}}"; do tests "$a"; done ;;
  static)
    shift
    for a in "${@:-${STATIC[@]}}"; do static "$a"; done ;;
  "")
    for a in "${ALL[@]}"; do tests "$a"; done
    for a in "${STATIC[@]}"; do static "$a"; done
    sizes ;;
  *) echo "usage: .ci/cross.sh [--ci | --sizes | tests|static ARCH...]" >&2; exit 2 ;;
esac
step "cross: done"
