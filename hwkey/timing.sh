#!/usr/bin/env bash
# Time per signature and per mutual-TLS handshake with a node key in software, in SoftHSM (behind
# p11-kit server, out of process) and in swtpm, side by side (hwkey/examples/timing.rs).
#   hwkey/timing.sh [ROUNDS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/lib.sh
. "$HERE/../e2e/lib.sh"
# shellcheck source=../e2e/devices.sh
. "$HERE/../e2e/devices.sh"
W=$(mktemp -d)
trap 'devices_down; rm -rf "$W"' EXIT
token_up "$W/token"
swtpm_up "$W/tpm"
cd "$HERE/.."
cargo run -q --release -p kubeboot-hwkey --example timing -- "$TOKEN_DEVICE" "$TPM_TCTI" "$W" "${1:-50}"
