#!/usr/bin/env bash
# End-to-end check of kubeboot-go-agent against a real kube-apiserver + kube-controller-manager
# (e2e/cluster.sh; binaries cached by e2e/build.sh):
#   1. wrong bootstrap token      → exit 1, error=unauthorized, no file left behind;
#   2. bootstrap (--once)         → node-csr-… CSR auto-approved, cert stored, kubeconfig written
#                                   (0600); `kubectl auth whoami` = system:node:<node>;
#   3. second run (--once)        → kubeconfig-valid, nothing changes;
#   4. rotation (--rotate-now-and-exit --expiration-seconds 600) → csr-… CSR authenticated with
#      the client certificate, new key + cert behind kubelet-client-current.pem, kubeconfig
#      untouched, whoami still the node.
# The cluster is always torn down (trap). Uses its own work dir (E2E_WORK, default /tmp/kb-go-e2e).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export E2E_WORK=${E2E_WORK:-/tmp/kb-go-e2e}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
T=$(mktemp -d "${TMPDIR:-/tmp}/kb-go-agent.XXXXXX")
AGENT=$T/kubeboot-go-agent

say() { printf '[go-e2e] %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }

# Remove the work dir if it is a cluster.sh work dir (or empty).
rm_work() {
  if [[ -d $E2E_WORK ]] && { [[ -f $E2E_WORK/env.sh || -f $E2E_WORK/ports ]] || [[ -z $(ls -A "$E2E_WORK") ]]; }; then
    rm -rf "$E2E_WORK"
  fi
}

cleanup() {
  rc=$?
  "$ROOT/e2e/cluster.sh" down >/dev/null 2>&1 || say "cluster down reported a problem"
  # cluster.sh keeps a work dir it was given; ours is throwaway (etcd data must not be reused).
  rm_work
  rm -rf "$T"
  if [[ $rc -eq 0 ]]; then say "PASS"; else say "FAILED (rc=$rc)"; fi
}
trap cleanup EXIT

say "building libkubeboot.a and the agent"
(cd "$ROOT" && CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target} cargo build --release -q -p kubeboot-ffi)
(cd "$HERE" && "$GO" build -o "$AGENT" ./cmd/kubeboot-go-agent)

if [[ -d $E2E_WORK ]]; then "$ROOT/e2e/cluster.sh" down >/dev/null 2>&1 || true; rm_work; fi
"$ROOT/e2e/cluster.sh" up >/dev/null
eval "$("$ROOT/e2e/cluster.sh" env)"
export KUBECONFIG=$E2E_ADMIN_KUBECONFIG

NODE=go-e2e-$(date +%s)
KC=$T/node/kubelet.kubeconfig
PKI=$T/pki
run_agent() { "$AGENT" --bootstrap-kubeconfig "$BOOT" --kubeconfig "$KC" --cert-dir "$PKI" --node-name "$NODE" --ca-bundle "$E2E_CLIENT_CA" "$@"; }

# 1. Wrong token secret: 401, exit 1, nothing written.
# (next to the real one: kubectl wrote the CA path relative to the kubeconfig's directory)
BOOT=$(dirname "$E2E_BOOTSTRAP_KUBECONFIG")/go-e2e-bad-bootstrap.kubeconfig
sed "s/${E2E_TOKEN_SECRET}/0000000000000000/" "$E2E_BOOTSTRAP_KUBECONFIG" > "$BOOT"
grep -q 0000000000000000 "$BOOT" || die "could not forge a wrong token"
set +e; run_agent --once --wait 30s 2> "$T/bad.log"; rc=$?; set -e
cat "$T/bad.log" >&2
[[ $rc -eq 1 ]] || die "wrong token: exit $rc, want 1"
grep -q '^agent=go error=unauthorized ' "$T/bad.log" || die "wrong token: no error=unauthorized line"
[[ ! -e $PKI && ! -e $KC ]] || die "wrong token: files were left behind: $(ls -la "$PKI" "$KC" 2>&1)"
say "1/4 wrong token → error=unauthorized, exit 1, no file changed"

# 2. Bootstrap.
BOOT=$E2E_BOOTSTRAP_KUBECONFIG
run_agent --once 2> "$T/boot.log" || { cat "$T/boot.log" >&2; die "bootstrap failed"; }
cat "$T/boot.log" >&2
for step in create-csr wait-approval issued stored kubeconfig-written; do
  grep -q "^agent=go step=$step" "$T/boot.log" || die "bootstrap: no step=$step line"
done
CSR=$(sed -n 's/^agent=go step=wait-approval csr=\([^ ]*\).*/\1/p' "$T/boot.log" | head -1)
[[ $CSR == node-csr-* ]] || die "bootstrap CSR name '$CSR'"
[[ $(stat -c %a "$KC") == 600 ]] || die "kubeconfig mode $(stat -c %a "$KC")"
[[ -L $PKI/kubelet-client-current.pem ]] || die "no kubelet-client-current.pem symlink"
[[ ! -e $PKI/kubelet-client.key.tmp ]] || die "key cache left behind"
WHO=$(kubectl --kubeconfig "$KC" auth whoami -o jsonpath='{.status.userInfo.username}')
[[ $WHO == "system:node:$NODE" ]] || die "whoami: '$WHO'"
COND=$(kubectl get csr "$CSR" -o jsonpath='{.status.conditions[0].type}/{.spec.username}')
[[ $COND == "Approved/system:bootstrap:$E2E_TOKEN_ID" ]] || die "csr $CSR: $COND"
openssl verify -CAfile "$E2E_CLIENT_CA" "$PKI/kubelet-client-current.pem" >/dev/null || die "openssl verify"
say "2/4 bootstrap → $CSR approved, whoami=$WHO"

# 3. Second run: the kubeconfig works, nothing changes.
SUM=$(sha256sum "$KC" "$PKI"/kubelet-client-current.pem | sha256sum)
run_agent --once 2> "$T/again.log" || { cat "$T/again.log" >&2; die "second run failed"; }
cat "$T/again.log" >&2
grep -q '^agent=go step=kubeconfig-valid' "$T/again.log" || die "second run did not find the kubeconfig valid"
! grep -q 'step=create-csr' "$T/again.log" || die "second run created a CSR"
[[ $(sha256sum "$KC" "$PKI"/kubelet-client-current.pem | sha256sum) == "$SUM" ]] || die "second run changed files"
say "3/4 second run → kubeconfig-valid, no change"

# 4. Rotation, authenticated with the client certificate.
sleep 1 # a new timestamped data file
OLD_TARGET=$(readlink "$PKI/kubelet-client-current.pem")
OLD_SERIAL=$(openssl x509 -noout -serial -in "$PKI/kubelet-client-current.pem")
OLD_PUB=$(openssl pkey -pubout -in "$PKI/kubelet-client-current.pem" | sha256sum)
KC_SUM=$(sha256sum < "$KC")
run_agent --rotate-now-and-exit --expiration-seconds 600 2> "$T/rot.log" || { cat "$T/rot.log" >&2; die "rotation failed"; }
cat "$T/rot.log" >&2
grep -q '^agent=go step=rotated' "$T/rot.log" || die "no step=rotated"
RCSR=$(sed -n 's/^agent=go step=wait-approval csr=\([^ ]*\).*/\1/p' "$T/rot.log" | head -1)
[[ $RCSR == csr-* ]] || die "rotation CSR name '$RCSR'"
RCOND=$(kubectl get csr "$RCSR" -o jsonpath='{.status.conditions[0].type}/{.spec.username}/{.spec.expirationSeconds}')
[[ $RCOND == "Approved/system:node:$NODE/600" ]] || die "rotation csr $RCSR: $RCOND"
NEW_TARGET=$(readlink "$PKI/kubelet-client-current.pem")
[[ $NEW_TARGET != "$OLD_TARGET" ]] || die "current.pem still points at $OLD_TARGET"
[[ $(openssl x509 -noout -serial -in "$PKI/kubelet-client-current.pem") != "$OLD_SERIAL" ]] || die "same certificate"
[[ $(openssl pkey -pubout -in "$PKI/kubelet-client-current.pem" | sha256sum) != "$OLD_PUB" ]] || die "same key"
[[ $(sha256sum < "$KC") == "$KC_SUM" ]] || die "rotation rewrote the kubeconfig"
NA=$(date -d "$(openssl x509 -noout -enddate -in "$PKI/kubelet-client-current.pem" | cut -d= -f2)" +%s)
LEFT=$(( NA - $(date +%s) ))
(( LEFT > 0 && LEFT <= 610 )) || die "rotated cert lifetime left ${LEFT}s, want <= 600s"
WHO=$(kubectl --kubeconfig "$KC" auth whoami -o jsonpath='{.status.userInfo.username}')
[[ $WHO == "system:node:$NODE" ]] || die "whoami after rotation: '$WHO'"
say "4/4 rotation → $RCSR by system:node:$NODE, new key+cert (${LEFT}s left), kubeconfig unchanged, whoami=$WHO"
