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

# poll TRIES INTERVAL [!] CMD...: CMD until it succeeds (!: fails), TRIES tries INTERVAL s apart; else 1
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

# wait_jws: until cluster-info has the bootstrapsigner's jws-kubeconfig-$E2E_TOKEN_ID, 30 s at most
wait_jws() {
  poll 60 0.5 has_output kc -n kube-public get configmap cluster-info -o jsonpath="{.data.jws-kubeconfig-$E2E_TOKEN_ID}"
}

# fail MESSAGE...: `FAIL MESSAGE` on stderr, and the script ends with status 1
fail() { printf 'FAIL %s\n' "$*" >&2; exit 1; }

# show [FILE...]: the files (default: stdin) with every line indented by four spaces
show() { sed 's/^/    /' "$@"; }

# csr_rows NODE [SIGNER]: NODE's CSRs [SIGNER's], oldest first: "created name conditions issued(0|1) user"
CSR_ROWS_PY='
import base64, json, sys
from cryptography import x509
from cryptography.x509.oid import NameOID
cn, signer = sys.argv[1], sys.argv[2]
rows = []
for o in json.load(sys.stdin)["items"]:
    req = x509.load_pem_x509_csr(base64.b64decode(o["spec"]["request"]))
    cns = [a.value for a in req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if cns != [cn] or (signer and o["spec"]["signerName"] != signer):
        continue
    st = o.get("status", {})
    conds = ",".join(c["type"] for c in st.get("conditions", [])) or "Pending"
    rows.append((o["metadata"]["creationTimestamp"], o["metadata"]["name"], conds, 1 if st.get("certificate") else 0, o["spec"]["username"]))
for r in sorted(rows):
    print(*r)
'
csr_rows() { kc get csr -o json | /usr/bin/python3 -c "$CSR_ROWS_PY" "system:node:$1" "${2:-}"; }

# free_port: a TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick)
free_port() {
  python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

# new_key [FILE]: a new P-256 private key (SEC1 PEM) in FILE, or on stdout
new_key() {
  if [ $# -gt 0 ]; then set -- -out "$1"; fi
  openssl ecparam -name prime256v1 -genkey -noout "$@" 2>/dev/null
}

# key_and_csr KEY CSR SUBJECT: new_key KEY, and in CSR its request for SUBJECT (/O=../CN=..)
key_and_csr() { new_key "$1" && openssl req -new -key "$1" -subj "$3" -out "$2"; }

# bootstrap_kubeconfig FILE SERVER CA TOKEN: FILE by kubectl config set-*, as the guides do it
bootstrap_kubeconfig() {
  kc_as "$1" config set-cluster bootstrap --server="$2" --certificate-authority="$3"
  kc_as "$1" config set-credentials kubelet-bootstrap --token="$4"
  kc_as "$1" config set-context bootstrap --user=kubelet-bootstrap --cluster=bootstrap
  kc_as "$1" config use-context bootstrap
}
