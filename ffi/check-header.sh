#!/bin/sh
# Fail when include/kubeboot.h differs from what ffi/gen-header.sh would produce (CI check).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/ffi/gen-header.sh" "$tmp/kubeboot.h"
if ! diff -u "$root/include/kubeboot.h" "$tmp/kubeboot.h"; then
    echo "check-header: include/kubeboot.h is stale; run ffi/gen-header.sh and commit it" >&2
    exit 1
fi
echo "check-header: include/kubeboot.h is up to date"
