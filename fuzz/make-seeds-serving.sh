#!/usr/bin/env bash
# Seeds of the serving_config and serving_policy targets (the serving approver). Needs openssl.
# Called by make-seeds.sh; may be run alone (it only rewrites these two directories).
set -euo pipefail
cd "$(dirname "$0")"
S=seeds
rm -rf "$S"/{serving_config,serving_policy}
mkdir -p "$S"/{serving_config,serving_policy}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# ---- serving_config: pattern (also read as a key policy), node, name
printf '{node}.nodes.example.com\nnode-1\nnode-1.nodes.example.com' > "$S/serving_config/pattern"
printf '*.{node}.example.com\nn1\nx.N1.Example.com' > "$S/serving_config/wildcard"
printf 'ip-{node}.ec2.internal\n10-0-0-1.zone\nip-10-0-0-1.zone.internal' > "$S/serving_config/multi-label"
printf '{node}.{node}\nn\nn.n' > "$S/serving_config/twice"
printf 'ecdsa-p256,ecdsa-p384,rsa-2048\n\n' > "$S/serving_config/key-policy"
printf 'rsa-4096,ecdsa-p256\n\n' > "$S/serving_config/key-policy-rsa"

# ---- serving_policy: header (see fuzz_targets/serving_policy.rs) + spec.request
csr() { # name keyspec subject san
  case $2 in
    p256) openssl ecparam -name prime256v1 -genkey -noout -out "$T/$1.key" 2>/dev/null ;;
    p384) openssl ecparam -name secp384r1 -genkey -noout -out "$T/$1.key" 2>/dev/null ;;
    rsa) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/$1.key" 2>/dev/null ;;
  esac
  openssl req -new -key "$T/$1.key" -subj "$3" -addext "subjectAltName=$4" -out "$T/$1.pem" 2>/dev/null
}
csr good p256 "/O=system:nodes/CN=system:node:node-1" "DNS:node-1.example.com,IP:10.0.0.7"
csr v6 p256 "/O=system:nodes/CN=system:node:node-1" "IP:fd00::7,IP:::ffff:10.0.0.7"
csr p384 p384 "/O=system:nodes/CN=system:node:node-1" "IP:10.0.0.7"
csr rsa rsa "/O=system:nodes/CN=system:node:node-1" "IP:10.0.0.7"
csr other p256 "/O=system:nodes/CN=system:node:node-2" "DNS:node-2.example.com,IP:10.0.0.8"
# flags: 0x04 node-1 in system:nodes; 0x14 with the pattern; 0x0c with expirationSeconds 3600
# addresses: (InternalIP 10.0.0.7) = 00 00, (Hostname node-1.example.com) = 02 02
{ printf '\x04\x00\x02\x00\x00\x02\x02'; cat "$T/good.pem"; } > "$S/serving_policy/approved"
{ printf '\x14\x00\x01\x00\x00'; cat "$T/good.pem"; } > "$S/serving_policy/pattern"
{ printf '\x0c\x00\x02\x00\x00\x02\x02\x10\x0e\x00\x00'; cat "$T/good.pem"; } > "$S/serving_policy/expiration"
{ printf '\x04\x00\x02\x00\x05\x01\x06'; cat "$T/v6.pem"; } > "$S/serving_policy/v6"
{ printf '\x04\x00\x01\x00\x00'; cat "$T/p384.pem"; } > "$S/serving_policy/p384"
{ printf '\x04\x01\x01\x00\x00'; cat "$T/rsa.pem"; } > "$S/serving_policy/rsa"
{ printf '\x05\x00\x02\x00\x01\x02\x04'; cat "$T/other.pem"; } > "$S/serving_policy/node-2"
{ printf '\x04\x00\x02\x00\x00\x02\x02'; cat "$T/good.pem" "$T/good.pem"; } > "$S/serving_policy/two-blocks"
{ printf '\x24\x00\x00'; cat "$T/good.pem"; } > "$S/serving_policy/no-node"
