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

# apf_tighten reject | apf_tighten queue QUEUES HAND_SIZE QUEUE_LENGTH: API Priority and Fairness
# for the bootstrap token's requests on CSRs (group system:bootstrappers) on a priority level of
# their own, kubeboot-bootstrappers, that borrows and lends nothing and
#   reject: has no nominal share (a concurrency limit of 0: APF then runs one request only when
#           none runs) and answers every other one 429 with Retry-After at once;
#   queue:  has one share (3 seats of this apiserver's 600) and queues what cannot run in QUEUES
#           queues of QUEUE_LENGTH (shuffle sharding, hands of HAND_SIZE) before answering 429;
# with a FlowSchema of the same name at precedence 300 (before the suggested system-nodes, 500).
apf_tighten() {
  local limit="type: Reject" shares=0
  if [[ $1 == queue ]]; then
    shares=1
    limit="type: Queue
      queuing: {queues: $2, handSize: $3, queueLengthLimit: $4}"
  fi
  kc apply -f - >/dev/null <<YAML
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: kubeboot-bootstrappers}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: $shares
    borrowingLimitPercent: 0
    lendablePercent: 0
    limitResponse:
      $limit
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: kubeboot-bootstrappers}
spec:
  priorityLevelConfiguration: {name: kubeboot-bootstrappers}
  matchingPrecedence: 300
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:bootstrappers}}]
    resourceRules:
    - {verbs: ["*"], apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], clusterScope: true}
YAML
}

# apf_relax: the FlowSchema and priority level of apf_tighten gone (the suggested ones apply)
apf_relax() {
  kc delete flowschema/kubeboot-bootstrappers prioritylevelconfiguration/kubeboot-bootstrappers \
    --ignore-not-found >/dev/null
}

# apf_hold_seat SERVER CA TOKEN SECONDS: for SECONDS, keep the one seat of apf_tighten's level
# taken by a CSR create whose body never comes (HTTP/1.1 over TLS with the token; a new one as
# soon as the apiserver drops the last), so that every other bootstrap-token request on CSRs is
# answered 429 with Retry-After. Prints "holding" once the first is sent.
apf_hold_seat() {
  /usr/bin/python3 - "$@" <<'PY'
import socket, ssl, sys, time, urllib.parse
server, ca, token, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
u = urllib.parse.urlparse(server)
ctx = ssl.create_default_context(cafile=ca)
ctx.set_alpn_protocols(["http/1.1"])
end, said = time.monotonic() + secs, False
while time.monotonic() < end:
    s = ctx.wrap_socket(socket.create_connection((u.hostname, u.port)), server_hostname=u.hostname)
    s.sendall(("POST /apis/certificates.k8s.io/v1/certificatesigningrequests HTTP/1.1\r\n"
               "Host: %s\r\nAuthorization: Bearer %s\r\nUser-Agent: kubeboot-e2e-seat-holder\r\n"
               "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{" % (u.netloc, token)).encode())
    if not said:
        print("holding", flush=True)
        said = True
    s.settimeout(max(0.1, end - time.monotonic()))
    try:
        s.recv(1)  # returns when the apiserver gives up on the body (or at the end)
    except (socket.timeout, OSError):
        pass
    s.close()
PY
}

# clockshift_bin: the path of e2e/clockshift.c ($HERE/clockshift.c) built from this tree's source (cc; cached under
# $KUBEBOOT_CACHE/clockshift/<source digest>/): `clockshift OFFSET_FILE PROGRAM ARGS...` runs
# PROGRAM with its wall clock shifted by the seconds OFFSET_FILE holds, read again when it changes
clockshift_bin() {
  local src dir
  src="${HERE:?}/clockshift.c"
  dir="${KUBEBOOT_CACHE:-$HOME/.cache/kubeboot}/clockshift/$(sha256sum <"$src" | cut -c1-16)"
  if [ ! -x "$dir/clockshift" ]; then
    mkdir -p "$dir" && cc -O2 -Wall -Wextra -Werror -o "$dir/clockshift.$$" "$src" || return 1
    # It must shift what a program reads (date: the C library's clock_gettime through the vDSO):
    # a day back, within 5 s.
    printf -- '-86400\n' >"$dir/check.offset"
    local got want
    got=$("$dir/clockshift.$$" "$dir/check.offset" date +%s) want=$(($(date +%s) - 86400))
    if [ -z "$got" ] || [ $((got - want)) -gt 5 ] || [ $((want - got)) -gt 5 ]; then
      echo "clockshift: date under a -86400 s offset said ${got:-nothing}, not about $want" >&2
      rm -f "$dir/clockshift.$$"
      return 1
    fi
    mv "$dir/clockshift.$$" "$dir/clockshift"
  fi
  echo "$dir/clockshift"
}
