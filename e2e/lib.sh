# shellcheck shell=bash
# What the e2e scripts share: the kubectl wrapper, the wait, and the checks and reports that more
# than one of them makes. Sourced (`. "$HERE/lib.sh"`), never run. Every script that sources it
# is bash; it is written in POSIX sh plus `local` all the same.

KUBECTL=${KUBECTL:-kubectl}

# kc_as KUBECONFIG ARGS...: $KUBECTL with that kubeconfig
kc_as() {
  local kubeconfig=$1
  shift
  "$KUBECTL" --kubeconfig "$kubeconfig" "$@"
}

# kc ARGS...: $KUBECTL as the cluster admin ($E2E_ADMIN_KUBECONFIG)
kc() { kc_as "$E2E_ADMIN_KUBECONFIG" "$@"; }
