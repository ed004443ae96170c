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

# poll TRIES INTERVAL [!] CMD...: runs CMD until it succeeds (after `!`: until it fails), at most
# TRIES times, sleeping INTERVAL seconds after each miss; 0 once it did, 1 if it never did
poll() {
  local poll_tries=$1 poll_interval=$2 poll_want=0 poll_got
  shift 2
  if [ "$1" = "!" ]; then poll_want=1; shift; fi
  while [ "$poll_tries" -gt 0 ]; do
    if "$@"; then poll_got=0; else poll_got=1; fi
    [ "$poll_got" != "$poll_want" ] || return 0
    sleep "$poll_interval"
    poll_tries=$((poll_tries - 1))
  done
  return 1
}

# has_output CMD...: CMD printed something on stdout (its exit status is not looked at)
has_output() { [ -n "$("$@")" ]; }

# wait_jws: until the bootstrapsigner has signed kube-public/cluster-info for $E2E_TOKEN_ID
# (jws-kubeconfig-<id>), 30 s at most; 1 if it has not
wait_jws() {
  poll 60 0.5 has_output kc -n kube-public get configmap cluster-info -o jsonpath="{.data.jws-kubeconfig-$E2E_TOKEN_ID}"
}
