# shellcheck shell=bash
# Devices that hold node keys, for e2e/run's pkcs11 and tpm scenarios (sourced; each function's
# contract on one line). Both run out of our process: SoftHSM2 behind `p11-kit server` (the agent
# loads only p11-kit-client.so), swtpm in socket mode on loopback.

P11_CLIENT=/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so
SOFTHSM_MODULE=/usr/lib/softhsm/libsofthsm2.so
DEVICE_PIDS=()

# token_up DIR -> a SoftHSM token "kubeboot" (user PIN 1234 in DIR/pin) served by p11-kit server
# on DIR/p11.sock; exports P11_KIT_SERVER_ADDRESS; sets TOKEN_DEVICE (the --key device URI)
token_up() {
  local d=$1
  mkdir -p "$d/tokens"
  printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' "$d" >"$d/softhsm2.conf"
  SOFTHSM2_CONF="$d/softhsm2.conf" softhsm2-util --init-token --free --label kubeboot --so-pin 5678 --pin 1234 >/dev/null || return 1
  printf '1234\n' >"$d/pin"
  SOFTHSM2_CONF="$d/softhsm2.conf" XDG_RUNTIME_DIR="$d" p11-kit server -f -n "$d/p11.sock" \
    --provider "$SOFTHSM_MODULE" "pkcs11:token=kubeboot" >/dev/null 2>&1 &
  DEVICE_PIDS+=($!)
  poll 100 0.05 test -S "$d/p11.sock" || return 1
  export P11_KIT_SERVER_ADDRESS="unix:path=$d/p11.sock"
  TOKEN_DEVICE="pkcs11:token=kubeboot?module-path=$P11_CLIENT&pin-source=$d/pin"
}

# p11tool ARGS... -> pkcs11-tool logged in to the token through p11-kit's client module
p11tool() { pkcs11-tool --module "$P11_CLIENT" --login --pin 1234 "$@" 2>&1; }

# token_protection LABEL -> "always_sensitive never_extractable value" of the private key, as
# PyKCS11 (an independent PKCS#11 client) reads them: True True refused when the key can't leave
TOKEN_PROTECTION_PY='
import sys, PyKCS11
from PyKCS11.LowLevel import CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE, CKA_VALUE, CKA_CLASS, CKA_LABEL, CKO_PRIVATE_KEY
lib = PyKCS11.PyKCS11Lib(); lib.load(sys.argv[1])
s = lib.openSession(lib.getSlotList(tokenPresent=True)[0]); s.login("1234")
k = s.findObjects([(CKA_CLASS, CKO_PRIVATE_KEY), (CKA_LABEL, sys.argv[2])])[0]
a, n = s.getAttributeValue(k, [CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE])
# C_GetAttributeValue of CKA_VALUE itself, through the PyKCS11 low level: the token return code
t = PyKCS11.LowLevel.ckattrlist(1); t[0].SetType(CKA_VALUE)
rv = s.lib.C_GetAttributeValue(s.session, k, t)
v = "refused" if rv == PyKCS11.LowLevel.CKR_ATTRIBUTE_SENSITIVE else "rv=%#x" % rv
print(bool(a), bool(n), v)
'
token_protection() { /usr/bin/python3 -c "$TOKEN_PROTECTION_PY" "$P11_CLIENT" "$1" 2>&1; }

# engine_conf DIR -> DIR/openssl-pkcs11.cnf: OpenSSL's pkcs11 engine (libp11) on p11-kit's client
engine_conf() {
  cat >"$1/openssl-pkcs11.cnf" <<EOF
openssl_conf = openssl_init
[openssl_init]
engines = engine_section
[engine_section]
pkcs11 = pkcs11_section
[pkcs11_section]
engine_id = pkcs11
dynamic_path = /usr/lib/x86_64-linux-gnu/engines-3/pkcs11.so
MODULE_PATH = $P11_CLIENT
PIN = 1234
init = 0
EOF
}

# swtpm_up DIR [PORT] -> swtpm on 127.0.0.1:PORT (control PORT+1), state in DIR/state; sets
# SWTPM_PORT, SWTPM_PID and TPM_TCTI (tss-esapi 7.7 reaches swtpm by host and port only)
swtpm_up() {
  local d=$1 p=${2:-}
  if [[ -z $p ]]; then
    while :; do p=$(free_port); python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]) + 1))' "$p" 2>/dev/null && break; done
  fi
  mkdir -p "$d/state"
  swtpm socket --tpm2 --flags not-need-init,startup-clear --tpmstate "dir=$d/state" \
    --server "type=tcp,port=$p,bindaddr=127.0.0.1" --ctrl "type=tcp,port=$((p + 1)),bindaddr=127.0.0.1" >/dev/null 2>&1 &
  SWTPM_PID=$!
  DEVICE_PIDS+=("$SWTPM_PID")
  SWTPM_PORT=$p
  TPM_TCTI="swtpm:host=127.0.0.1,port=$p"
  poll 100 0.05 bash -c "exec 3<>/dev/tcp/127.0.0.1/$((p + 1))" 2>/dev/null
}

# abrmd_up -> tpm2-abrmd (a resource manager: OpenSSL's tpm2 provider needs more object slots
# than a bare TPM has) on a private D-Bus session bus, in front of the last swtpm_up's swtpm;
# sets ABRMD_TCTI. abrmd_down stops both (swtpm takes one client at a time).
abrmd_up() {
  local out
  out=$(dbus-daemon --session --fork --print-address=1 --print-pid=1) || return 1
  ABRMD_BUS=$(sed -n 1p <<<"$out"); ABRMD_DBUS_PID=$(sed -n 2p <<<"$out")
  DBUS_SESSION_BUS_ADDRESS=$ABRMD_BUS tpm2-abrmd --session --allow-root --tcti "$TPM_TCTI" --flush-all >/dev/null 2>&1 &
  ABRMD_PID=$!
  ABRMD_TCTI="tabrmd:bus_type=session"
  poll 40 0.25 bash -c 'DBUS_SESSION_BUS_ADDRESS=$1 TPM2TOOLS_TCTI=$2 tpm2_getcap properties-fixed >/dev/null 2>&1' _ "$ABRMD_BUS" "$ABRMD_TCTI"
}
abrmd_down() {
  kill "$ABRMD_PID" "$ABRMD_DBUS_PID" 2>/dev/null; wait "$ABRMD_PID" 2>/dev/null; true
}

# swtpm_down -> stop the last swtpm_up's swtpm
swtpm_down() { kill "$SWTPM_PID" 2>/dev/null; wait "$SWTPM_PID" 2>/dev/null; true; }

# devices_down -> stop every server these functions started
devices_down() {
  local p
  for p in "${DEVICE_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
  DEVICE_PIDS=()
}

# key_block FILE LABEL -> the PEM block of FILE with that label
key_block() { sed -n "/-----BEGIN $2-----/,/-----END $2-----/p" "$1"; }

# pair_uri FILE -> the pkcs11: URI of the PKCS#11 PROVIDER URI block of FILE (read by OpenSSL)
pair_uri() { key_block "$1" 'PKCS#11 PROVIDER URI' | openssl asn1parse | sed -n 's/.*UTF8STRING *://p'; }

# cert_spki FILE -> hex of the first certificate's SubjectPublicKeyInfo DER (OpenSSL's reading)
cert_spki() { openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform DER | od -An -tx1 | tr -d ' \n'; }

# no_private_key FILES... -> no PEM private key in them, TSS2 blobs aside
no_private_key() { ! grep -h -- '-----BEGIN .*PRIVATE KEY-----' "$@" | grep -qv 'TSS2 PRIVATE KEY'; }

# self_subject_review_json -> the body of a SelfSubjectReview
SSR_BODY='{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'

# ssr_user JSON -> "username groups..." of a SelfSubjectReview answer
ssr_user() {
  python3 -c 'import json,sys; u=json.loads(sys.argv[1])["status"]["userInfo"]; print(u["username"], *u.get("groups", []))' "$1"
}
