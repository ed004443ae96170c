#!/usr/bin/env bash
# E2E_TOKEN_SECRET_CMD adapter for cluster.sh: `ID SECRET GROUPS EXPIRATION` -> the token Secret
# manifest written by `kubeboot token secret` ($KUBEBOOT_BIN).
set -euo pipefail
id=$1 secret=$2 groups=${3:-} exp=${4:-}
args=(token secret "$id.$secret" --groups "$groups" --description "kubeboot e2e bootstrap token")
if [[ -n $exp ]]; then args+=(--expiration "$exp"); else args+=(--ttl 0); fi
exec "${KUBEBOOT_BIN:?set KUBEBOOT_BIN to the kubeboot binary}" "${args[@]}"
