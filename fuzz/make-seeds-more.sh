#!/usr/bin/env bash
# Seeds (and embedded fixtures) of the kubeconfig_read, api_response, jws_discovery,
# verify_issued, engine_sequence, c_abi, grammar and agent_http targets. Needs kubectl, openssl and python3.
# Called by make-seeds.sh; may be run alone (it only rewrites these eight directories).
# kubectl / openssl make new random keys each run; the verify_issued fixtures are embedded by the
# target with include_bytes!, so regenerating them changes what that target mutates.
set -euo pipefail
cd "$(dirname "$0")"
S=seeds
R=../core/tests/data/recorded
rm -rf "$S"/{kubeconfig_read,api_response,jws_discovery,verify_issued,engine_sequence,c_abi}
mkdir -p "$S"/{kubeconfig_read,api_response,jws_discovery,verify_issued,engine_sequence,c_abi}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# ---- kubeconfig_read: real kubectl output (YAML, and `view --raw -o json`), kubeadm's
# cluster-info kubeconfig, and the committed core test kubeconfigs.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -subj /CN=fuzz-ca -keyout "$T/ca.key" -out "$T/ca.crt" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -subj "/O=system:nodes/CN=system:node:n1" -keyout "$T/client.key" -out "$T/client.crt" 2>/dev/null
k() { kubectl config --kubeconfig "$T/$1" "${@:2}" >/dev/null; }
# embedded data
k embedded.yaml set-cluster kubernetes --server=https://10.0.0.1:6443 --certificate-authority="$T/ca.crt" --embed-certs=true
k embedded.yaml set-credentials kubelet --client-certificate="$T/client.crt" --client-key="$T/client.key" --embed-certs=true
k embedded.yaml set-credentials tok --token=07401b.f395accd246ae52d
k embedded.yaml set-context default --cluster=kubernetes --user=kubelet --namespace=kube-system
k embedded.yaml set-context boot --cluster=kubernetes --user=tok
k embedded.yaml use-context default
# file paths (absolute and relative), insecure, tls-server-name, names that need quoting
k paths.yaml set-cluster 'c: 1' --server=https://[fd00::1]:6443 --certificate-authority=ca.crt --tls-server-name=api.example
k paths.yaml set-cluster insecure --server=https://h.example --insecure-skip-tls-verify=true
k paths.yaml set-credentials "yes" --client-certificate=/var/lib/kubelet/pki/kubelet-client-current.pem --client-key=/var/lib/kubelet/pki/kubelet-client-current.pem
k paths.yaml set-credentials '#u' --token='a"b\c'
k paths.yaml set-context 'c: 1' --cluster='c: 1' --user="yes"
k paths.yaml set-context anon --cluster=insecure
k paths.yaml use-context 'c: 1'
for f in embedded paths; do
  cp "$T/$f.yaml" "$S/kubeconfig_read/kubectl-$f.yaml"
  kubectl config view --raw -o json --kubeconfig "$T/$f.yaml" > "$S/kubeconfig_read/kubectl-$f.json"
done
# kubectl made the relative CA path absolute (the working directory): keep the seeds portable.
sed -i "s|$(pwd)/ca.crt|/etc/kubernetes/pki/ca.crt|" "$S"/kubeconfig_read/kubectl-paths.*
cp ../core/tests/data/kubeconfig/*.yaml ../core/tests/data/kubeconfig/*.json "$S/kubeconfig_read/"
python3 - "$R/cluster-info-get.json" "$S/kubeconfig_read/kubeadm-cluster-info.yaml" <<'PY'
import json, sys
open(sys.argv[2], "w").write(json.load(open(sys.argv[1]))["data"]["kubeconfig"])
PY

# ---- api_response / engine_sequence: the recorded apiserver bodies (JSON objects and watch
# streams). engine_sequence embeds them too (include_bytes!); these files only start its corpus.
for f in "$R"/*.json; do
  case $f in *.req.json) continue ;; esac
  cp "$f" "$S/api_response/"
done
for f in csr-create-201 csr-get-approved-issued watch-approved watch-denied csr-create-409-already-exists; do
  cp "$R/$f.json" "$S/engine_sequence/$f.bin"
done

# ---- jws_discovery: the recorded cluster-info (mode byte 0 = raw body), and its kubeconfig
# (mode byte 1 = re-signed by the target).
{ printf '\x00\x00'; cat "$R/cluster-info-get.json"; } > "$S/jws_discovery/raw-cluster-info.bin"
{ printf '\x01\x00'; cat "$S/kubeconfig_read/kubeadm-cluster-info.yaml"; } > "$S/jws_discovery/signed-cluster-info.bin"
{ printf '\x01\x00'; cat "$S/kubeconfig_read/kubectl-embedded.yaml"; } > "$S/jws_discovery/signed-kubectl.bin"
{ printf '\x01\x02'; cat "$S/kubeconfig_read/kubeadm-cluster-info.yaml"; } > "$S/jws_discovery/signed-changed-at-confirm.bin"
{ printf '\x01\xc0'; cat "$S/kubeconfig_read/kubectl-embedded.yaml"; } > "$S/jws_discovery/signed-unpinned.bin"

# ---- verify_issued: OpenSSL-made CAs, intermediates and kubelet leaves (DER), embedded by the
# target. The leaves are for the public key of core/tests/data/p256.key (K1).
V="$S/verify_issued"
openssl pkey -in ../core/tests/data/p256.key -pubout -out "$T/k1.pub" 2>/dev/null
ext() { printf '%s\n' "$@" > "$T/ext.cnf"; }
# P-256 root, P-256 intermediate, serving leaf with SANs
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj /CN=fuzz-root \
  -keyout "$T/root.key" -out "$T/root.crt" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=fuzz-intermediate \
  -keyout "$T/int.key" -out "$T/int.csr" 2>/dev/null
# The intermediate constrains the leaf's names and usages (nameConstraints, extendedKeyUsage), so
# the targets reach those checks on a chain that verifies.
ext basicConstraints=critical,CA:TRUE,pathlen:0 keyUsage=critical,keyCertSign \
  extendedKeyUsage=serverAuth,clientAuth \
  "nameConstraints=critical,permitted;DNS:node-1.example,permitted;IP:10.0.0.0/255.0.0.0,excluded;DNS:evil.node-1.example"
openssl x509 -req -in "$T/int.csr" -CA "$T/root.crt" -CAkey "$T/root.key" -days 3650 -extfile "$T/ext.cnf" \
  -out "$T/int.crt" 2>/dev/null
ext basicConstraints=critical,CA:FALSE keyUsage=critical,digitalSignature extendedKeyUsage=serverAuth \
  subjectAltName=DNS:node-1.example,IP:10.0.0.7
openssl x509 -new -force_pubkey "$T/k1.pub" -subj "/O=system:nodes/CN=system:node:node-1" -CA "$T/int.crt" \
  -CAkey "$T/int.key" -days 3650 -extfile "$T/ext.cnf" -out "$T/serving.crt" 2>/dev/null
# P-384 root signing a client leaf directly
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:secp384r1 -nodes -days 3650 -subj /CN=fuzz-p384 \
  -keyout "$T/p384.key" -out "$T/p384.crt" 2>/dev/null
ext basicConstraints=critical,CA:FALSE keyUsage=critical,digitalSignature extendedKeyUsage=clientAuth
openssl x509 -new -force_pubkey "$T/k1.pub" -subj "/O=system:nodes/CN=system:node:node-1" -CA "$T/p384.crt" \
  -CAkey "$T/p384.key" -sha384 -days 3650 -extfile "$T/ext.cnf" -out "$T/p384-leaf.crt" 2>/dev/null
der() { openssl x509 -in "$1" -outform DER -out "$2"; }
der ../core/tests/data/ec-ca.crt "$V/ec-ca.der"
der ../core/tests/data/ec-leaf.crt "$V/ec-leaf.der"
der ../core/tests/data/rsa-ca.crt "$V/rsa-ca.der"
der ../core/tests/data/rsa-leaf.crt "$V/rsa-leaf.der"
der "$T/root.crt" "$V/p256-root.der"
der "$T/int.crt" "$V/p256-intermediate.der"
der "$T/serving.crt" "$V/p256-serving-leaf.der"
der "$T/p384.crt" "$V/p384-ca.der"
der "$T/p384-leaf.crt" "$V/p384-client-leaf.der"
# the engine's recorded issued certificate and its CA
python3 - "$R/csr-get-approved-issued.json" "$T/rec.pem" <<'PY'
import json, sys, base64
open(sys.argv[2], "wb").write(base64.b64decode(json.load(open(sys.argv[1]))["status"]["certificate"]))
PY
der "$T/rec.pem" "$V/recorded-leaf.der"
der "$R/client-ca.pem" "$V/recorded-ca.der"

# ---- c_abi: a PEM key, a CA bundle, a kubeconfig (as inputs the call script can draw from).
cp ../core/tests/data/p256.key "$S/c_abi/p256.key"
cp "$R/client-ca.pem" "$S/c_abi/client-ca.pem"
cp "$S/kubeconfig_read/kubectl-embedded.yaml" "$S/c_abi/kubeconfig.yaml"

# ---- grammar: byte 0 picks the function (0 duration, 1 --key, 2 --ip, 3 listening address),
# the rest is what a user typed (the values of the grammar's own table, taken and refused).
rm -rf "$S/grammar"; mkdir -p "$S/grammar"
i=0
while IFS= read -r v; do
  i=$((i + 1))
  printf "$v" > "$S/grammar/value-$i"
done <<'VALUES'
\0000
\00090s
\0001h30m
\00024h
\0005x
\0001.5h
\0009223372036854775807s
\001tpm:
\001tpm:/var/lib/kubeboot/key
\001pkcs11:token=kubeboot;module-path=/usr/lib/softhsm/libsofthsm2.so?pin-source=file:/etc/kubeboot/pin
\001pkcs11:token=kubeboot;object=node
\001/etc/kubeboot/key.pem
\00210.0.0.7
\002fd00::7
\002010.0.0.7
\003127.0.0.1:9101
\003[::1]:9101
\003localhost:9101
VALUES

# ---- agent_http: the calm inputs (every request answered as recorded): byte 0 the
# configuration (0 hosts' capacities, 1 a microcontroller's, 2 the smallest), byte 1 bit 0 an
# unanchored node (trust by proof).
rm -rf "$S/agent_http"; mkdir -p "$S/agent_http"
for c in 0 1 2; do
  printf "\\$(printf '%03o' $c)" > "$S/agent_http/recorded-$c"
  printf "\\$(printf '%03o' $c)\\001" > "$S/agent_http/recorded-$c-unanchored"
done
