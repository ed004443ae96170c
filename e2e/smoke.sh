#!/usr/bin/env bash
# Smoke test of the running e2e control plane (e2e/cluster.sh up) using only
# openssl, kubectl and curl -- no kubeboot code. Proves that the control plane
# does the real kubelet TLS bootstrap protocol:
#   bootstrap token -> CSR create -> auto-approve (nodeclient) -> signed cert
#   -> the cert authenticates as system:node:<name> -> renewal CSR with the
#   node cert is auto-approved (selfnodeclient); bootstrapsigner JWS in
#   kube-public/cluster-info verifies with the token secret.
#
#   e2e/smoke.sh [node-name]      (default smoke-1)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$HERE/lib.sh"
eval "$("$HERE/cluster.sh" env)"
NODE=${1:-smoke-1}
S="$E2E_WORK/smoke-$NODE"
rm -rf "$S"; mkdir -p "$S"

pass() { printf 'ok   %s\n' "$*"; }
boot() { kc_as "$E2E_BOOTSTRAP_KUBECONFIG" "$@"; }

# csr_object NAME_PREFIX CSR_PEM_FILE -> CertificateSigningRequest YAML
csr_object() {
  cat <<EOF
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  generateName: $1
spec:
  request: $(base64 -w0 <"$2")
  signerName: kubernetes.io/kube-apiserver-client-kubelet
  usages:
  - digital signature
  - client auth
EOF
}

# csr_issued KUBECTL_FN NAME: `get csr` says Approved,Issued (printed; sets cond); Denied/Failed: fail
csr_issued() {
  cond=$("$1" get csr "$2" --no-headers 2>/dev/null | awk '{print $NF}') || true
  case $cond in
    Approved,Issued) echo "$cond" ;;
    *Denied*|*Failed*) fail "csr $2: $cond" ;;
    *) return 1 ;;
  esac
}

# wait_issued KUBECTL_FN NAME: until `kubectl get csr` shows Approved,Issued
wait_issued() {
  local cond=""
  poll 120 0.5 csr_issued "$1" "$2" || fail "csr $2 not Approved,Issued after 60s (last: ${cond:-none})"
}

check_cert() { # cert_file expected_cn
  local crt=$1 cn=$2 text
  openssl verify -CAfile "$E2E_CLIENT_CA" "$crt" >/dev/null || fail "openssl verify $crt"
  text=$(openssl x509 -in "$crt" -noout -text)
  grep -q "Subject: O = system:nodes, CN = $cn\$" <<<"$text" || fail "subject: $(grep Subject: <<<"$text")"
  grep -A1 'X509v3 Extended Key Usage' <<<"$text" | grep -q 'TLS Web Client Authentication' || fail "EKU"
  grep -A1 'X509v3 Key Usage: critical' <<<"$text" | grep -qx ' *Digital Signature' || fail "KU"
  grep -q 'CA:FALSE' <<<"$text" || fail "basicConstraints"
  if grep -q 'Subject Alternative Name' <<<"$text"; then fail "unexpected SAN"; fi
}

# --- 1. bootstrap identity
who=$(boot auth whoami -o jsonpath='{.status.userInfo.username} {.status.userInfo.groups}')
[[ $who == "system:bootstrap:$E2E_TOKEN_ID "* && $who == *'"system:bootstrappers"'* && $who == *"\"$E2E_TOKEN_GROUPS\""* ]] \
  || fail "bootstrap whoami: $who"
pass "bootstrap token authenticates: $who"

# --- 2. key + CSR with openssl, CSR object created with the bootstrap token
key_and_csr "$S/node.key" "$S/node.csr" "/O=system:nodes/CN=system:node:$NODE"
name=$(csr_object csr- "$S/node.csr" | boot create -f - -o jsonpath='{.metadata.name}')
[[ -n $name ]] || fail "no CSR name"
pass "created CSR $name with the bootstrap kubeconfig"
kc get csr "$name"
cond=$(wait_issued boot "$name")
kc get csr "$name"
pass "CSR $name is $cond"
reason=$(kc get csr "$name" -o jsonpath='{.status.conditions[?(@.type=="Approved")].reason}')
[[ $reason == AutoApproved ]] || fail "approval reason $reason"
requestor=$(kc get csr "$name" -o jsonpath='{.spec.username}')
[[ $requestor == "system:bootstrap:$E2E_TOKEN_ID" ]] || fail "requestor $requestor"

# --- 3. fetch + check certificate
boot get csr "$name" -o jsonpath='{.status.certificate}' | base64 -d >"$S/node.crt"
[[ $(grep -c 'BEGIN CERTIFICATE' "$S/node.crt") == 1 ]] || fail "expected exactly one PEM block"
check_cert "$S/node.crt" "system:node:$NODE"
openssl x509 -in "$S/node.crt" -noout -subject -issuer -dates
pass "certificate verifies against the client CA (KU digitalSignature, EKU clientAuth, no SAN)"

# --- 4. node kubeconfig; whoami as the node
nk="$S/node.kubeconfig"
"$KUBECTL" config --kubeconfig="$nk" set-cluster default-cluster --server="$E2E_SERVER" --certificate-authority="$E2E_CA" >/dev/null
"$KUBECTL" config --kubeconfig="$nk" set-credentials default-auth \
  --client-certificate="$S/node.crt" --client-key="$S/node.key" --embed-certs=true >/dev/null
"$KUBECTL" config --kubeconfig="$nk" set-context default-context --cluster=default-cluster --user=default-auth >/dev/null
"$KUBECTL" config --kubeconfig="$nk" use-context default-context >/dev/null
kc_as "$nk" auth whoami
who=$(kc_as "$nk" auth whoami -o jsonpath='{.status.userInfo.username} {.status.userInfo.groups}')
[[ $who == "system:node:$NODE "* && $who == *'"system:nodes"'* ]] || fail "node whoami: $who"
pass "node certificate authenticates as: $who"

# --- 5. renewal: new key, CSR created with the node cert -> selfnodeclient
key_and_csr "$S/node2.key" "$S/node2.csr" "/O=system:nodes/CN=system:node:$NODE"
name2=$(csr_object csr- "$S/node2.csr" | kc_as "$nk" create -f - -o jsonpath='{.metadata.name}')
wait_issued kc "$name2" >/dev/null
msg=$(kc get csr "$name2" -o jsonpath='{.status.conditions[?(@.type=="Approved")].message}')
[[ $msg == *"self kubelet client certificate"* ]] || fail "renewal approval message: $msg"
kc_as "$nk" get csr "$name2" -o jsonpath='{.status.certificate}' | base64 -d >"$S/node2.crt"
check_cert "$S/node2.crt" "system:node:$NODE"
pass "renewal CSR $name2 (authenticated with the node cert) approved: $msg"

# --- 6. cluster-info: anonymous GET + bootstrapsigner JWS
wait_jws || fail "bootstrapsigner did not add jws-kubeconfig-$E2E_TOKEN_ID within 30s"
curl -fsS --cacert "$E2E_CA" "$E2E_SERVER/api/v1/namespaces/kube-public/configmaps/cluster-info" >"$S/cluster-info.json" \
  || fail "anonymous GET cluster-info"
python3 - "$S/cluster-info.json" "$E2E_TOKEN_ID" "$E2E_TOKEN_SECRET" <<'EOF' || fail "JWS check"
import base64, hashlib, hmac, json, sys
cm = json.load(open(sys.argv[1])); tid, secret = sys.argv[2], sys.argv[3]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
header = b64(json.dumps({"alg": "HS256", "kid": tid}, separators=(",", ":")).encode())
payload = b64(cm["data"]["kubeconfig"].encode())
sig = b64(hmac.new(secret.encode(), (header + "." + payload).encode(), hashlib.sha256).digest())
want, got = header + ".." + sig, cm["data"]["jws-kubeconfig-" + tid]
if not hmac.compare_digest(want, got):
    sys.exit(f"JWS mismatch: want {want} got {got}")
print(f"jws-kubeconfig-{tid} = {got}")
EOF
pass "anonymous GET cluster-info works; jws-kubeconfig-$E2E_TOKEN_ID verifies (HS256, key = token secret)"
echo "SMOKE OK"
