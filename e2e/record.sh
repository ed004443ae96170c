#!/usr/bin/env bash
# Record real kube-apiserver responses (exact bodies) into core/tests/data/recorded/,
# the one home of recorded apiserver answers (core tests, fuzz seeds, firmware images). Needs a running control plane (e2e/cluster.sh up).
#
#   e2e/record.sh [out-dir]      (default: core/tests/data/recorded)
#
# Every recording NAME gets:
#   NAME.json      the response body, byte for byte as received (curl -o)
#   NAME.headers   status line and response headers (curl -D)
#   NAME.req.json  the request body, when there is one
# Watches additionally get NAME.raw: the same stream captured with
# `curl --raw`, i.e. still in HTTP/1.1 chunked framing. Keys and CSRs used are
# kept as *.key.pem / *.csr.pem. All requests use HTTP/1.1 with
# User-Agent kubeboot-e2e-record/1.0 (compact JSON, chunked watches). index.tsv lists name, status, method, path,
# credential, description. Nothing is edited after capture.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$HERE/lib.sh"
eval "$("$HERE/cluster.sh" env)"
R=${1:-$HERE/../core/tests/data/recorded}
mkdir -p "$R"
rm -f "$R"/*.json "$R"/*.headers "$R"/*.raw "$R"/*.pem "$R"/index.tsv "$R"/VERSIONS
CSR_PATH=/apis/certificates.k8s.io/v1/certificatesigningrequests
# HTTP/1.1 (so watches are really chunked) and a non-curl User-Agent: the
# apiserver pretty-prints JSON for User-Agents starting with curl/wget, which
# no real client gets.
CURL=(curl -sS --http1.1 -A "kubeboot-e2e-record/1.0" --cacert "$E2E_CA" -H "Accept: application/json")
BOOT="$E2E_TOKEN"
BAD="$E2E_TOKEN_ID.0000000000000000"
NOBIND="$E2E_STATIC_TOKEN_NOBIND"
SUFFIX=$(date -u +%H%M%S)


# cred_name TOKEN -> label for index.tsv
cred_name() {
  case "$1" in
    "") echo anonymous ;;
    "$BOOT") echo bootstrap-token ;;
    "$BAD") echo bootstrap-token-wrong-secret ;;
    "$NOBIND") echo static-token-no-bootstrap-binding ;;
    *) echo other ;;
  esac
}

# rec NAME EXPECTED_STATUS METHOD PATH TOKEN DESCRIPTION [REQUEST_BODY_FILE]
rec() {
  local name=$1 want=$2 method=$3 path=$4 tok=$5 desc=$6 body=${7:-}
  local args=(-X "$method" -D "$R/$name.headers" -o "$R/$name.json" -w '%{http_code}')
  [[ -n $tok ]] && args+=(-H "Authorization: Bearer $tok")
  if [[ -n $body ]]; then
    cp "$body" "$R/$name.req.json"
    args+=(-H "Content-Type: application/json" --data-binary "@$body")
  fi
  local got
  got=$("${CURL[@]}" "${args[@]}" "$E2E_SERVER$path")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$got" "$method" "$path" "$(cred_name "$tok")" "$desc" >>"$R/index.tsv"
  [[ $got == "$want" ]] || fail "$name: HTTP $got, expected $want: $(cat "$R/$name.json")"
  echo "recorded $name ($got)"
}

# new_csr BASENAME CN O -> writes BASENAME.key.pem / BASENAME.csr.pem in $R
new_csr() {
  key_and_csr "$R/$1.key.pem" "$R/$1.csr.pem" "/O=$3/CN=$2"
}

# csr_json NAME CSR_PEM_FILE [SIGNER] -> CSR object JSON on stdout (like client-go: name, request, signerName, usages)
csr_json() {
  python3 - "$1" "$2" "${3:-kubernetes.io/kube-apiserver-client-kubelet}" <<'EOF'
import base64, json, sys
name, pem, signer = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
print(json.dumps({"kind": "CertificateSigningRequest", "apiVersion": "certificates.k8s.io/v1",
                  "metadata": {"name": name},
                  "spec": {"request": base64.b64encode(pem).decode(), "signerName": signer,
                           "usages": ["digital signature", "client auth"]}}, separators=(",", ":")))
EOF
}

# start_watch NAME CSR_NAME SECONDS: two concurrent watches (decoded + raw chunked)
start_watch() {
  local name=$1 csr=$2 secs=$3
  local q="$CSR_PATH?fieldSelector=metadata.name%3D$csr&watch=true&timeoutSeconds=$secs"
  "${CURL[@]}" -N -H "Authorization: Bearer $BOOT" \
    -D "$R/$name.headers" -o "$R/$name.json" "$E2E_SERVER$q" &
  WATCH_PIDS=("$!")
  "${CURL[@]}" -N --raw -H "Authorization: Bearer $BOOT" \
    -o "$R/$name.raw" "$E2E_SERVER$q" &
  WATCH_PIDS+=("$!")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" 200 GET "$q" bootstrap-token "watch stream ($secs s), see $name.raw for chunked framing" >>"$R/index.tsv"
  sleep 1 # let both watches be established before the CSR is created
}
end_watch() { wait "${WATCH_PIDS[@]}"; echo "recorded watch $1"; }

wait_cond() { # CSR_NAME jsonpath-condition-type
  poll 120 0.5 has_output kc get csr "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].type}" ||
    fail "csr $1 never got condition $2"
}
wait_issued() { # CSR_NAME
  poll 120 0.5 has_output kc get csr "$1" -o jsonpath='{.status.certificate}' || fail "csr $1 never issued"
}

WATCH_SECS=${E2E_WATCH_SECONDS:-8}

# ---- 1. approved + issued: watch, create 201, create again 409, GET, LIST
ok=kubeboot-rec-approved-$SUFFIX
new_csr approved "system:node:rec-1" system:nodes
csr_json "$ok" "$R/approved.csr.pem" >"$R/.approved.req"
start_watch watch-approved "$ok" "$WATCH_SECS"
rec csr-create-201 201 POST "$CSR_PATH" "$BOOT" "create kubelet client CSR with bootstrap token" "$R/.approved.req"
rec csr-create-409-already-exists 409 POST "$CSR_PATH" "$BOOT" "same create again: AlreadyExists" "$R/.approved.req"
wait_issued "$ok"
rec csr-get-approved-issued 200 GET "$CSR_PATH/$ok" "$BOOT" "GET of auto-approved and issued CSR"
rec csr-list-fieldselector 200 GET "$CSR_PATH?fieldSelector=metadata.name%3D$ok" "$BOOT" "LIST with field selector (client-go WaitForCertificate probe)"
end_watch watch-approved

# ---- 2. denied: kubelet-client CSR with wrong O is not auto-approved; deny it
den=kubeboot-rec-denied-$SUFFIX
new_csr denied "system:node:rec-2" acme
csr_json "$den" "$R/denied.csr.pem" >"$R/.denied.req"
start_watch watch-denied "$den" "$WATCH_SECS"
rec csr-create-201-pending 201 POST "$CSR_PATH" "$BOOT" "create CSR (wrong O, will not be auto-approved)" "$R/.denied.req"
sleep 2
rec csr-get-pending 200 GET "$CSR_PATH/$den" "$BOOT" "GET of pending CSR (no conditions)"
kc certificate deny "$den" >/dev/null
wait_cond "$den" Denied
rec csr-get-denied 200 GET "$CSR_PATH/$den" "$BOOT" "GET of CSR denied with kubectl certificate deny"
end_watch watch-denied

# ---- 3. failed: kubelet-client CSR with wrong O approved by admin -> signer sets Failed
fl=kubeboot-rec-failed-$SUFFIX
new_csr failed "system:node:rec-3" acme
csr_json "$fl" "$R/failed.csr.pem" >"$R/.failed.req"
start_watch watch-failed "$fl" "$WATCH_SECS"
rec csr-create-201-to-fail 201 POST "$CSR_PATH" "$BOOT" "create CSR (wrong O, approved manually below)" "$R/.failed.req"
kc certificate approve "$fl" >/dev/null
wait_cond "$fl" Failed
rec csr-get-failed 200 GET "$CSR_PATH/$fl" "$BOOT" "GET of approved CSR the signer marked Failed (SignerValidationFailure)"
end_watch watch-failed

# ---- 4. errors
rec csr-create-401-wrong-secret 401 POST "$CSR_PATH" "$BAD" "bootstrap token with right id, wrong secret" "$R/.approved.req"
rec csr-get-401-wrong-secret 401 GET "$CSR_PATH/$ok" "$BAD" "GET with wrong token secret"
rec csr-create-403-no-binding 403 POST "$CSR_PATH" "$NOBIND" "static token user whose group has no node-bootstrapper binding" "$R/.approved.req"
rec secrets-list-403-bootstrap 403 GET "/api/v1/namespaces/kube-system/secrets" "$BOOT" "bootstrap token listing secrets"
rec csr-get-404 404 GET "$CSR_PATH/kubeboot-rec-does-not-exist" "$BOOT" "GET of a CSR that does not exist"
printf '{"kind":"CertificateSigningRequest","apiVersion":"certificates.k8s.io/v1","metadata":{"name":"kubeboot-rec-invalid-%s"},"spec":{"request":"%s","signerName":"kubernetes.io/kube-apiserver-client-kubelet","usages":["digital signature","client auth"]}}' \
  "$SUFFIX" "$(printf -- '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n' | base64 -w0)" >"$R/.invalid.req"
rec csr-create-422-invalid 422 POST "$CSR_PATH" "$BOOT" "CSR whose spec.request does not parse" "$R/.invalid.req"

# ---- 5. cluster-info (anonymous), after the bootstrapsigner added the JWS
wait_jws || true
rec cluster-info-get 200 GET /api/v1/namespaces/kube-public/configmaps/cluster-info "" "anonymous GET of kube-public/cluster-info with jws-kubeconfig-$E2E_TOKEN_ID"
rec secrets-get-403-anonymous 403 GET "/api/v1/namespaces/kube-system/secrets/bootstrap-token-$E2E_TOKEN_ID" "" "anonymous GET of the token Secret"

# ---- 6. the ClusterTrustBundles of the apiserver's serving signer (certificates.k8s.io/v1, served
# from v1.37: what the agent's CA refresh lists), with the client certificate issued to rec-1 (a
# bootstrap token may not list them)
if kc get --raw /apis/certificates.k8s.io/v1 2>/dev/null | grep -q '"clustertrustbundles"'; then
  poll 60 0.5 has_output kc get clustertrustbundles -o name || true
  kc get csr "$ok" -o jsonpath='{.status.certificate}' | base64 -d >"$R/.approved.crt"
  CURL+=(--cert "$R/.approved.crt" --key "$R/approved.key.pem")
  rec trust-bundles-list 200 GET "/apis/certificates.k8s.io/v1/clustertrustbundles?fieldSelector=spec.signerName%3Dkubernetes.io%2Fkube-apiserver-serving" \
    "" "LIST of the kube-apiserver-serving ClusterTrustBundles (the controller manager's --root-ca-file) as system:node:rec-1"
  cp "$E2E_CA" "$R/trust-bundles-serving-ca.pem"
  rm -f "$R/.approved.crt"
fi

rm -f "$R"/.*.req
# the token is needed to check the JWS in cluster-info-get.json; it is a throwaway
{
  echo "kubernetes=$(sed -n 's/^k8s=//p' "$E2E_BIN/.complete")"
  echo "etcd=$(sed -n 's/^etcd=//p' "$E2E_BIN/.complete")"
  echo "go=$(sed -n 's/^go=//p' "$E2E_BIN/.complete")"
  echo "recorded_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "server=$E2E_SERVER"
  echo "bootstrap_token=$E2E_TOKEN"
  echo "token_groups=$E2E_TOKEN_GROUPS"
  echo "signing_duration=$E2E_SIGNING_DURATION"
  echo "serving_ca_sha256_pin=sha256:$(openssl x509 -in "$E2E_CA" -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1)"
} >"$R/VERSIONS"
cp "$E2E_CA" "$R/serving-ca.pem"
cp "$E2E_CLIENT_CA" "$R/client-ca.pem"
echo "recordings in $R"
