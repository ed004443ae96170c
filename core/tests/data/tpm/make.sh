#!/usr/bin/env bash
# The TPM vectors of core/tests/tpm.rs, made by what nobody here wrote: swtpm (a software TPM
# 2.0) and tpm2-tools. Regenerate with: core/tests/data/tpm/make.sh (writes beside itself).
#
#   ak.pub, ak.pem     an ECC P-256 attestation key (tpm2_createak: restricted, signing, ECDSA
#                      SHA-256) under the endorsement key, as TPM2B_PUBLIC and as PEM
#   key.pub, key.name  a P-256 signing key made in the TPM (fixedTPM, fixedParent,
#                      sensitiveDataOrigin) as TPM2B_PUBLIC, and its Name as tpm2_load prints it
#   attest.out, sig.out  tpm2_certify of the key by the attestation key: TPMS_ATTEST and
#                      TPMT_SIGNATURE
#   qualifying.bin, quote-attest.out  32 random bytes, and a tpm2_quote with them (a TPMS_ATTEST
#                      that is not a certify)
#   dup.pub, dup-attest.out, dup-sig.out  the same for a key that may leave the TPM (no
#                      fixedTPM, no fixedParent)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$W"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$W/state"
swtpm socket --tpm2 --flags not-need-init,startup-clear --tpmstate "dir=$W/state" \
  --server "type=tcp,port=$port,bindaddr=127.0.0.1" --ctrl "type=tcp,port=$((port + 1)),bindaddr=127.0.0.1" &
pid=$!
export TPM2TOOLS_TCTI="swtpm:host=127.0.0.1,port=$port"
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
cd "$W"
# (no resource manager: every transient object is flushed once saved, a TPM has few slots)
tpm2_createek -c ek.ctx -G ecc -u ek.pub >/dev/null
tpm2_flushcontext -t
tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pub -n ak.name >/dev/null
tpm2_flushcontext -t
tpm2_flushcontext -s
tpm2_readpublic -c ak.ctx -f pem -o ak.pem >/dev/null
tpm2_flushcontext -t
tpm2_createprimary -C o -g sha256 -G ecc -c prim.ctx >/dev/null
tpm2_flushcontext -t
head -c 32 /dev/urandom >qualifying.bin
certify() { # NAME ATTRIBUTES
  tpm2_create -C prim.ctx -G ecc256:ecdsa-sha256 -a "$2" -u "$1.pub" -r "$1.priv" >/dev/null
  tpm2_flushcontext -t
  tpm2_load -C prim.ctx -u "$1.pub" -r "$1.priv" -c "$1.ctx" -n "$1.name" >/dev/null
  tpm2_flushcontext -t
  # (tpm2-tools 5.4's tpm2_certify takes no qualifying data from its caller: it passes the
  # fixed 00 ff 55 aa; the node's own certify passes what binds its CSR)
  tpm2_certify -c "$1.ctx" -C ak.ctx -g sha256 -o "$1-attest.out" -s "$1-sig.out" >/dev/null
  tpm2_flushcontext -t
}
certify key "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign"
certify dup "sensitivedataorigin|userwithauth|sign"
mv key-attest.out attest.out
mv key-sig.out sig.out
# Another kind of TPMS_ATTEST (a quote of PCR 0, with the qualifying data): not a certify.
tpm2_quote -c ak.ctx -l sha256:0 -q "$(od -An -tx1 qualifying.bin | tr -d ' \n')" -g sha256 \
  -m quote-attest.out -s quote-sig.out >/dev/null
cp ak.pub ak.pem key.pub key.name qualifying.bin attest.out sig.out dup.pub dup-attest.out \
  dup-sig.out quote-attest.out "$HERE/"
echo "tpm vectors written to $HERE"
