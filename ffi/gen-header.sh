#!/bin/sh
# Regenerate include/kubeboot.h from ffi/src with the pinned cbindgen.
#   cargo install cbindgen --version 0.29.4 --locked
# Usage: ffi/gen-header.sh [output]   (default: include/kubeboot.h)
set -eu
CBINDGEN_VERSION=0.29.4
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/include/kubeboot.h}
have=$(cbindgen --version 2>/dev/null | awk '{print $2}') || true
if [ "$have" != "$CBINDGEN_VERSION" ]; then
    echo "gen-header: need cbindgen $CBINDGEN_VERSION (found '${have:-none}'):" >&2
    echo "  cargo install cbindgen --version $CBINDGEN_VERSION --locked" >&2
    exit 2
fi
cd "$root/ffi"
cbindgen --quiet --config cbindgen.toml --crate kubeboot-ffi --output "$out" .
