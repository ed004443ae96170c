#!/bin/sh
# Build the kubeboot core crate for thumbv7em-none-eabihf (Cortex-M4F, no_std) with each sensible
# no_std feature combination; fail on the first error.
#   examples/firmware/check-features.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
target=thumbv7em-none-eabihf
rustup target list --installed 2>/dev/null | grep -qx "$target" || rustup target add "$target"
fail=0
for features in "" "csr-name" "alloc" "alloc,rsa" "p384" "csr-name,p384" "p256-cortex-m4" "csr-name,p256-cortex-m4"; do
    printf 'check-features: [%s] ... ' "$features"
    if nice cargo build -q -p kubeboot --no-default-features --features "$features" --target "$target" 2>/tmp/check-features.$$; then
        echo ok
    else
        echo FAILED
        cat /tmp/check-features.$$
        fail=1
    fi
done
rm -f /tmp/check-features.$$
[ "$fail" = 0 ] && echo "check-features: all combinations build" || { echo "check-features: FAILED" >&2; exit 1; }
