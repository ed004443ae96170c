#!/usr/bin/env bash
# Run build/kubeboot-agent against a real control plane (e2e/cluster.sh: kube-apiserver,
# etcd, kube-controller-manager on 127.0.0.1 with a bootstrap token and the auto-approval RBAC)
# and check what it did:
#
#   1. a wrong token fails with `agent=c error=unauthorized` and changes no file but the key cache;
#   2. bootstrap: node-csr-<digest> created, auto-approved, issued, validated against the client
#      CA, stored, node kubeconfig written (0600, absolute paths);
#      `kubectl auth whoami` with it is system:node:<name> in system:nodes;
#   3. the cert dir has kubelet-client-<ts>.pem (0600) and the absolute -current.pem symlink, no
#      key cache, no temp files;
#   4. a second run finds the kubeconfig valid and does nothing;
#   5. --rotate-now: a csr-xxxxx CSR authenticated with the client certificate, a new data file,
#      -current.pem moved, the kubeconfig unchanged and still working;
#   6. (VALGRIND=1, the default when valgrind is installed) step 2 for a second node under
#      valgrind: no errors, no leaks.
#
# Usage: examples/c-agent/e2e-check.sh     (builds the agent; needs e2e/build.sh's cache)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KUBECTL=${KUBECTL:-kubectl}
AGENT=$HERE/build/kubeboot-agent
NODE=${NODE:-c-agent-e2e-$$}
if [[ -z ${VALGRIND+x} ]]; then VALGRIND=$(command -v valgrind >/dev/null && echo 1 || echo 0); fi

say() { printf '[c-agent e2e] %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }

make -C "$HERE" agent >/dev/null

T=$(mktemp -d "${TMPDIR:-/tmp}/kubeboot-c-agent-e2e.XXXXXX")
E2E_WORK=""
cleanup() {
  local rc=$?
  if [[ -n $E2E_WORK ]]; then
    E2E_WORK=$E2E_WORK "$ROOT/e2e/cluster.sh" down >/dev/null 2>&1 || { say "cluster down failed"; rc=1; }
  fi
  rm -rf "$T"
  if ((rc == 0)); then say "PASS"; else say "FAILED (exit $rc)"; fi
  exit $rc
}
trap cleanup EXIT

say "starting the control plane"
up_out=$("$ROOT/e2e/cluster.sh" up 2>"$T/up.log") || { tail -20 "$T/up.log" >&2; die "cluster up"; }
E2E_WORK=$(sed -n 's/^E2E_WORK=//p' <<<"$up_out" | tail -1)
[[ -n $E2E_WORK && -f $E2E_WORK/env.sh ]] || die "no E2E_WORK from cluster up"
# shellcheck disable=SC1091
source "$E2E_WORK/env.sh"

run_agent() { # node dir [extra args...]
  local node=$1 dir=$2; shift 2
  timeout 300 "$AGENT" --bootstrap-kubeconfig "${BK:-$E2E_BOOTSTRAP_KUBECONFIG}" \
    --kubeconfig "$dir/kubelet.kubeconfig" --cert-dir "$dir/pki" --node-name "$node" \
    --ca-bundle "$E2E_CLIENT_CA" "$@"
}

# 1. wrong token secret: 401, nothing written but the key cache.
say "1. wrong token"
# Next to the real one: its certificate-authority path is relative to the kubeconfig's directory.
bad_kc=$E2E_WORK/c-agent-bad-token.kubeconfig
sed "s/token: ${E2E_TOKEN_ID}\..*/token: ${E2E_TOKEN_ID}.0000000000000000/" "$E2E_BOOTSTRAP_KUBECONFIG" >"$bad_kc"
grep -q "${E2E_TOKEN_ID}.0000000000000000" "$bad_kc" || die "could not make the bad kubeconfig"
set +e
BK=$bad_kc run_agent "$NODE-bad" "$T/bad" --once >"$T/bad.out"
rc=$?
set -e
cat "$T/bad.out"
((rc == 1)) || die "wrong token: exit $rc, want 1"
grep -q '^agent=c error=unauthorized detail=' "$T/bad.out" || die "wrong token: no error=unauthorized line"
[[ ! -e $T/bad/kubelet.kubeconfig ]] || die "wrong token: kubeconfig written"
[[ -z $(find "$T/bad/pki" -name 'kubelet-client-*.pem') ]] || die "wrong token: cert files written"

# 2. bootstrap.
say "2. bootstrap $NODE"
run_agent "$NODE" "$T/n1" --once | tee "$T/n1.out"
grep -q "^agent=c step=create-csr name=node-csr-" "$T/n1.out" || die "no create-csr step"
grep -q "^agent=c step=wait-approval csr=node-csr-.* hint=\"kubectl certificate approve node-csr-" "$T/n1.out" || die "no wait-approval step"
grep -q "^agent=c step=issued " "$T/n1.out" || die "no issued step"
grep -q "^agent=c step=kubeconfig-written " "$T/n1.out" || die "no kubeconfig-written step"
kc=$T/n1/kubelet.kubeconfig
[[ $(stat -c %a "$kc") == 600 ]] || die "kubeconfig mode $(stat -c %a "$kc")"
grep -q "client-certificate: $T/n1/pki/kubelet-client-current.pem\$" "$kc" || die "kubeconfig cert path"
grep -q "certificate-authority: /" "$kc" || die "kubeconfig CA path not absolute"
who=$("$KUBECTL" auth whoami --kubeconfig "$kc" -o jsonpath='{.status.userInfo.username} {.status.userInfo.groups}')
say "whoami: $who"
[[ $who == "system:node:$NODE "*system:nodes* ]] || die "whoami: $who"
csr=$(sed -n 's/^agent=c step=create-csr name=//p' "$T/n1.out")
"$KUBECTL" --kubeconfig "$E2E_ADMIN_KUBECONFIG" get csr "$csr" --no-headers | grep -q 'Approved,Issued' || die "csr $csr not Approved,Issued"

# 3. cert dir layout.
say "3. cert dir layout"
pki=$T/n1/pki
ls -la "$pki" >&2
data=$(find "$pki" -maxdepth 1 -name 'kubelet-client-20*.pem')
[[ $(wc -l <<<"$data") == 1 ]] || die "want one data file: $data"
[[ $(basename "$data") =~ ^kubelet-client-[0-9]{4}(-[0-9]{2}){5}\.pem$ ]] || die "data file name $(basename "$data")"
[[ $(stat -c %a "$data") == 600 ]] || die "data file mode"
[[ $(stat -c %a "$pki") == 700 ]] || die "cert dir mode"
[[ -L $pki/kubelet-client-current.pem && $(readlink "$pki/kubelet-client-current.pem") == "$data" ]] || die "current symlink"
[[ ! -e $pki/kubelet-client.key.tmp ]] || die "key cache left behind"
[[ -z $(find "$pki" -name '.*') ]] || die "temp files left behind"
openssl verify -CAfile "$E2E_CLIENT_CA" "$pki/kubelet-client-current.pem" >/dev/null || die "openssl verify"
openssl x509 -in "$pki/kubelet-client-current.pem" -noout -subject | grep -q "CN *= *system:node:$NODE" || die "subject"
openssl pkey -in "$pki/kubelet-client-current.pem" -pubout >"$T/k.pub" 2>/dev/null
openssl x509 -in "$pki/kubelet-client-current.pem" -noout -pubkey | cmp -s - "$T/k.pub" || die "key does not match cert"

# 4. second run: kubeconfig valid, nothing to do.
say "4. second run"
run_agent "$NODE" "$T/n1" --once | tee "$T/n1b.out"
grep -q "^agent=c step=kubeconfig-valid " "$T/n1b.out" || die "second run did not find the kubeconfig valid"
! grep -q "step=create-csr" "$T/n1b.out" || die "second run created a CSR"

# 5. rotation with the client certificate.
say "5. rotation"
kc_before=$(sha256sum <"$kc")
sleep 1 # a new data file name (one-second timestamps)
run_agent "$NODE" "$T/n1" --once --rotate-now | tee "$T/n1r.out"
grep -q "^agent=c step=create-csr name=(generateName:csr-)" "$T/n1r.out" || die "rotation: no generateName create"
grep -q "^agent=c step=issued csr=csr-" "$T/n1r.out" || die "rotation: not issued"
[[ $(find "$pki" -maxdepth 1 -name 'kubelet-client-20*.pem' | wc -l) == 2 ]] || die "rotation: want two data files"
[[ $(readlink "$pki/kubelet-client-current.pem") != "$data" ]] || die "rotation: current not moved"
[[ $(sha256sum <"$kc") == "$kc_before" ]] || die "rotation rewrote the kubeconfig"
rcsr=$(sed -n 's/^agent=c step=issued csr=\(csr-[^ ]*\).*/\1/p' "$T/n1r.out")
"$KUBECTL" --kubeconfig "$E2E_ADMIN_KUBECONFIG" get csr "$rcsr" -o jsonpath='{.spec.username}' | grep -qx "system:node:$NODE" ||
  die "rotation CSR $rcsr not requested by the node"
"$KUBECTL" auth whoami --kubeconfig "$kc" -o jsonpath='{.status.userInfo.username}' | grep -qx "system:node:$NODE" ||
  die "whoami after rotation"

# 6. under valgrind.
if [[ $VALGRIND == 1 ]]; then
  say "6. bootstrap $NODE-vg under valgrind"
  AGENT_REAL=$AGENT
  AGENT="valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible $AGENT_REAL"
  # shellcheck disable=SC2086
  timeout 300 $AGENT --bootstrap-kubeconfig "$E2E_BOOTSTRAP_KUBECONFIG" --kubeconfig "$T/n2/kubelet.kubeconfig" \
    --cert-dir "$T/n2/pki" --node-name "$NODE-vg" --ca-bundle "$E2E_CLIENT_CA" --once | tee "$T/n2.out" ||
    die "valgrind run failed"
  "$KUBECTL" auth whoami --kubeconfig "$T/n2/kubelet.kubeconfig" -o jsonpath='{.status.userInfo.username}' |
    grep -qx "system:node:$NODE-vg" || die "whoami (valgrind run)"
fi
