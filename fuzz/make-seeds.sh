#!/usr/bin/env bash
# Regenerates the committed seed corpora in fuzz/seeds/<target>/ from real artifacts:
# OpenSSL-generated keys and CSRs, the key vectors in core/tests/data/, and the token / time /
# token-file vectors of the spec. Keys are throwaway test keys. Needs openssl and python3.
# Seeds are committed; re-running changes the OpenSSL-generated files (new random keys).
set -euo pipefail
cd "$(dirname "$0")"
S=seeds
rm -rf "$S"
mkdir -p "$S"/{token_parse,rfc3339,token_authfile,token_secret,secret_manifest,key_parse,csr_request,csr_build,pem_blocks,csr_object,rotation}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# ---- keys (OpenSSL) + the core test keys
openssl ecparam -name prime256v1 -genkey -noout -out "$T/p256.sec1.pem" 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$T/p256.sec1.pem" -out "$T/p256.p8.pem"
openssl ec -in "$T/p256.sec1.pem" -outform DER -out "$T/p256.sec1.der" 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$T/p256.sec1.pem" -outform DER -out "$T/p256.p8.der"
openssl ecparam -name prime256v1 -genkey -param_enc explicit -noout -out "$T/p256.explicit.pem" 2>/dev/null
openssl ecparam -name secp384r1 -genkey -out "$T/p384.withparams.pem" 2>/dev/null
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out "$T/rsa1024.p8.pem" 2>/dev/null
openssl rsa -in "$T/rsa1024.p8.pem" -traditional -out "$T/rsa1024.pkcs1.pem" 2>/dev/null
openssl rsa -in "$T/rsa1024.p8.pem" -traditional -outform DER -out "$T/rsa1024.pkcs1.der" 2>/dev/null
openssl genpkey -algorithm ED25519 -out "$T/ed25519.pem" 2>/dev/null
for f in p256.sec1.pem p256.p8.pem p256.sec1.der p256.p8.der p256.explicit.pem p384.withparams.pem \
         rsa1024.p8.pem rsa1024.pkcs1.pem rsa1024.pkcs1.der ed25519.pem; do
  cp "$T/$f" "$S/key_parse/$f"
done
cp ../core/tests/data/p256.key "$S/key_parse/core-p256.key"
cp ../core/tests/data/dontUseThisKey.pem "$S/key_parse/core-p384.pem"

# ---- CSRs (OpenSSL)
req() { # name key subj [addext]
  local name=$1 key=$2 subj=$3; shift 3
  openssl req -new -key "$T/$key" -subj "$subj" "$@" -out "$T/$name.pem" 2>/dev/null
  openssl req -in "$T/$name.pem" -outform DER -out "$T/$name.der"
}
req client p256.sec1.pem "/O=system:nodes/CN=system:node:node-1"
req serving p256.sec1.pem "/O=system:nodes/CN=system:node:node-1" \
    -addext "subjectAltName=DNS:node-1.example.com,IP:10.0.0.7,IP:fd00::7"
req badsans p256.sec1.pem "/O=system:nodes/CN=system:node:node-1" \
    -addext "subjectAltName=email:a@b.c,URI:https://x.example/,DNS:*.example.com" \
    -addext "keyUsage=digitalSignature"
req multi p256.sec1.pem "/O=system:nodes/O=other/OU=x/CN=first/CN=system:node:n2"
req utf8 p256.sec1.pem "/O=system:nodes/CN=system:node:nöde" -utf8
req p384 p384.withparams.pem "/O=system:nodes/CN=system:node:node-1"
req p384sha512 p384.withparams.pem "/O=system:nodes/CN=system:node:node-1" -sha512
req rsa rsa1024.p8.pem "/O=system:nodes/CN=system:node:node-1"
req rsasha1 rsa1024.p8.pem "/O=system:nodes/CN=system:node:node-1" -sha1
req ed25519 ed25519.pem "/O=system:nodes/CN=system:node:node-1"
# Header bytes: see fuzz_targets/csr_request.rs (flags, usage count, usage indices).
# 0 = digital signature, 1 = client auth, 2 = server auth, 3 = key encipherment.
for n in client serving badsans multi utf8 p384 p384sha512 rsa rsasha1 ed25519; do
  { printf '\x00\x02\x00\x01'; cat "$T/$n.der"; } > "$S/csr_request/$n.client.der.bin"
  { printf '\x02\x03\x00\x02\x03'; cat "$T/$n.der"; } > "$S/csr_request/$n.serving.der.bin"
  { printf '\x09\x02\x00\x01\x58\x02\x00\x00'; cat "$T/$n.pem"; } > "$S/csr_request/$n.client.pem.bin"
  { printf '\x00'; cat "$T/$n.pem"; } > "$S/pem_blocks/csr-$n.pem.bin"
done
{ printf '\x06\x02\x00\x01\x1dkubernetes.io/legacy-unknown'; cat "$T/client.der"; } > "$S/csr_request/custom-signer.bin"

# ---- PEM bundles
{ printf '\x00'; cat "$T/p256.sec1.pem" "$T/client.pem" ../core/tests/data/pin_test.crt; } > "$S/pem_blocks/bundle.bin"
{ printf '\x00junk\r\n'; sed 's/$/\r/' "$T/p384.withparams.pem"; } > "$S/pem_blocks/crlf.bin"
{ printf '\x00'; printf -- '-----BEGIN X-----\nProc-Type: 4,ENCRYPTED\n\nAQID\n-----END X-----\n'; } > "$S/pem_blocks/headers.bin"
{ printf '\x00'; printf -- '-----BEGIN A-----\nAQID\n-----END B-----\n-----END A-----\n'; } > "$S/pem_blocks/nested-end.bin"
{ printf '\x01CERTIFICATE REQUEST\n'; cat "$T/client.der"; } > "$S/pem_blocks/encode-csr.bin"
{ printf '\x01EC PRIVATE KEY\n'; cat "$T/p256.sec1.der"; } > "$S/pem_blocks/encode-key.bin"

# ---- tokens, secret names, groups, usages (cluster-bootstrap token/util/helpers.go:
# IsValidBootstrapToken, ValidateBootstrapGroupName, ValidateUsages, and their upstream test
# vectors)
i=0
while IFS= read -r line; do
  printf '%s' "$line" > "$S/token_parse/t$i"; i=$((i+1))
done <<'TOK'
abcdef.1234567890123456
123456.aabbccddeeffgghh
abcdef.abcdef0123456789
123456.1234560123456789
abcdef.0123456789abcdef
.
1234567890123456789012
12345.1234567890123456
.1234567890123456
123456.
123456:1234567890.123456
abcdef:1234567890123456
Abcdef.1234567890123456
123456.AABBCCDDEEFFGGHH
123456.AABBCCD-EEFFGGHH
abc*ef.1234567890123456
ABCDEF.abcdef0123456789
bootstrap-token-abc123
bootstrap-token-
bootstrap-token-abc123ghi
bootstrap-token-ABC123
abc123
system:bootstrappers:foo
system:bootstrappers:foo:bar:baz
system:bootstrappers:foo-bar-42
system:bootstrappers:foo,system:bootstrappers:bar,system:bootstrappers:bar
system:bootstrappers:Foo
system:bootstrappers:
system:bootstrappers: 
system:bootstrappers:*
system:bootstrappers:foo:
system:bootstrappers:foo-
system:bootstrappers:kubeadm:default-node-token
signing,authentication
authentication
signing,
TOK
printf 'abcdef.0123456789abcdef\n' > "$S/token_parse/trailing-newline"
python3 -c 'import sys; sys.stdout.write("system:bootstrappers:" + "x"*300)' > "$S/token_parse/long-group"
python3 -c 'import sys; sys.stdout.write(",".join("system:bootstrappers:g%d" % i for i in range(20)))' > "$S/token_parse/many-groups"
head -c 64 /dev/urandom > "$S/token_parse/entropy"

# ---- RFC 3339 (a token Secret's expiration, cluster-bootstrap util/secrets/secrets.go HasExpired,
# and the Go cross-check corner cases)
i=0
while IFS= read -r line; do
  printf '%s' "$line" > "$S/rfc3339/r$i"; i=$((i+1))
done <<'TIME'
2026-01-02T03:04:05Z
2026-01-02T3:04:05Z
2026-01-02T03:04:05,5Z
2026-01-02T03:04:05.Z
2026-01-02t03:04:05Z
2026-01-02T03:04:05z
2024-02-29T00:00:00Z
2100-02-29T00:00:00Z
2000-02-29T23:59:59.999999999999-24:00
0000-01-01T00:00:00+24:60
9999-12-31T23:59:59-24:60
2026-01-02T03:04:05+25:00
2026-01-02T03:04:05+00:61
1970-01-01T00:00:00Z
TIME

# ---- token file lines (apiserver authentication/token/tokenfile/tokenfile.go NewCSV); first byte 0
# = text mode
i=0
while IFS= read -r line; do
  printf '\x00%s\n' "$line" > "$S/token_authfile/a$i"; i=$((i+1))
done <<'CSV'
02b50b05283e98dd0fd71db496ef01e8,kubelet-bootstrap,10001,"system:bootstrappers,system:foo"
tok,user,uid
tok,user,uid,
tok,user,uid,g1,extra,"more"
"a""b","","x,y","q""1,q2"
 tok, user ,uid
"tok,user,uid
"tok"x,user,uid
tok,us"er,uid
\.,u,i
CSV
printf '\x00a,b,c\r\n\r\n"d",e,f\n\ng,"h""",i,"j,k"\r\n' > "$S/token_authfile/file"
printf '\x01\x05token\x04user\x03uid\x01\x03grp\x00' > "$S/token_authfile/fields"

# ---- structure-aware targets: a few small byte strings to start from
for t in token_secret secret_manifest csr_build csr_object rotation; do
  for n in 0 1 2; do head -c $((32 + 48 * n)) /dev/urandom > "$S/$t/rand$n"; done
done
echo "seeds written to $(pwd)/$S"

# Seeds of the targets added later (kubeconfig_read ... c_abi).
./make-seeds-more.sh

# Seeds of the serving approver's targets (serving_config, serving_policy).
./make-seeds-serving.sh
