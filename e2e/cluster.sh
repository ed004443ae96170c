#!/usr/bin/env bash
# Run a real Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager; upstream binaries from e2e/build.sh) on 127.0.0.1
# and set it up for kubelet TLS bootstrapping the way the usual guides do.
#
#   e2e/cluster.sh up     start everything; prints the work dir and env file
#   e2e/cluster.sh env    print `export ...` lines (eval "$(e2e/cluster.sh env)")
#   e2e/cluster.sh down   stop everything, check that no port is left listening
#   e2e/cluster.sh status show pids/ports and whether /readyz answers
#   e2e/cluster.sh restart-apiserver [SECONDS]  stop the apiserver, wait, start it again
#   e2e/cluster.sh restart-controller-manager   the same for kube-controller-manager (it reads
#                         --root-ca-file, which it publishes as a ClusterTrustBundle, at start)
#   e2e/cluster.sh restart-etcd [SECONDS]       the same for etcd (same data dir)
#
# Env:
#   E2E_WORK              work dir (default for `up`: a new mktemp dir under
#                         ${TMPDIR:-/tmp}; `env`/`down` default to the last one
#                         started, recorded in $KUBEBOOT_CACHE/e2e-last-work)
#   E2E_SIGNING_DURATION  --cluster-signing-duration (default 1h)
#   E2E_TOKEN             bootstrap token id.secret (default: random)
#   E2E_TOKEN_GROUPS      auth-extra-groups (default system:bootstrappers:kubeboot:e2e)
#   E2E_NODECLIENT        0: no nodeclient binding for system:bootstrappers (kube-controller-manager
#                         then never approves a bootstrap CSR by itself; e2e/attest)
#   E2E_TOKEN_SECRET_CMD  command printing the token Secret YAML, called as
#                         `$E2E_TOKEN_SECRET_CMD ID SECRET GROUPS EXPIRATION`
#                         (default: the heredoc in token_secret_yaml below)
#   E2E_KEEP=1            `down` keeps the work dir (default: removed if we created it)
#   E2E_VERBOSITY         --v for the control plane components (default 2)
#   E2E_AUDIT_CSR_APPROVAL=1  the audit log also has every write of a CSR's approval subresource
#                         (who approved or denied it, with the response code: e2e/approver)
#   E2E_APISERVER_EXTRA_ARGS  more kube-apiserver flags, split at white space (e2e/approver:
#                         --kubelet-certificate-authority, --kubelet-client-certificate/-key with
#                         pki/apiserver-kubelet-client.{crt,key}, --feature-gates=...)
#   E2E_PKI_BACKDATE      seconds: the CAs' and the apiserver's certificates start this long before
#                         now (made by openssl under e2e/clockshift), as a cluster's do that was
#                         set up before its nodes: a node clock stepped back by less still
#                         validates them (e2e/soak, e2e/run's clock scenarios). Default 0
set -euo pipefail
set -E

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$HERE/lib.sh"
CACHE=${KUBEBOOT_CACHE:-$HOME/.cache/kubeboot}
LAST="$CACHE/e2e-last-work"

log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --------------------------------------------------------------------------
# helpers

port_listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds (its output discarded), a try
# every 0.5 s; an error after SECONDS, and at once when a component died (check_alive says which)
wait_for() {
  local t=$1 what=$2; shift 2
  poll $((t * 2)) 0.5 up_or_dead "$@" >/dev/null 2>&1 || { log "timed out after ${t}s waiting for $what"; return 1; }
  check_alive
}
# up_or_dead COMMAND...: COMMAND succeeded, or a component has died
up_or_dead() { "$@" || ! check_alive; }

# A component that died while we wait is an error right away.
check_alive() {
  local f name
  for f in "$W"/pids/*.pid; do
    [[ -e $f ]] || continue
    name=$(basename "$f" .pid)
    kill -0 "$(cat "$f")" 2>/dev/null || { log "$name exited; last log lines:"; tail -n 30 "$W/logs/$name.log" >&2 || true; return 1; }
  done
}

start_bg() { # name cmd...
  local name=$1; shift
  log "starting $name"
  # setsid: own session, so it outlives this script and never gets our signals.
  setsid "$@" >"$W/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$W/pids/$name.pid"
}

stop_all() {
  local f pid name
  for name in kube-controller-manager kube-apiserver etcd; do
    f="$W/pids/$name.pid"
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      poll 50 0.2 ! kill -0 "$pid" 2>/dev/null || true
      if kill -0 "$pid" 2>/dev/null; then log "$name did not exit, SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; fi
    fi
    rm -f "$f"
  done
  local left=0 p
  if [[ -f "$W/ports" ]]; then
    while read -r p; do
      [[ -n $p ]] || continue
      if port_listening "$p"; then log "port $p is still listening"; left=1; fi
    done < <(sed -n 's/^[A-Z_]*PORT=//p' "$W/ports")
  fi
  return $left
}

on_error() {
  local rc=$?
  # set -E makes command substitutions inherit this trap: only the main shell cleans up.
  ((BASH_SUBSHELL == 0)) || exit "$rc"
  trap - ERR INT TERM
  log "setup failed (exit $rc); cleaning up. Logs kept in $W/logs"
  for f in "$W"/logs/*.log; do [[ -e $f ]] && { echo "---- tail $f" >&2; tail -n 15 "$f" >&2; }; done
  stop_all || true
  exit "$rc"
}

# --------------------------------------------------------------------------
# PKI (openssl)

# pki_openssl ARGS...: openssl, with its clock E2E_PKI_BACKDATE seconds behind when that is set
# (the certificates it makes start then)
pki_openssl() {
  if [[ ${E2E_PKI_BACKDATE:-0} != 0 ]]; then
    printf -- '-%s\n' "$E2E_PKI_BACKDATE" >"$W/pki/.backdate"
    "$(clockshift_bin)" "$W/pki/.backdate" openssl "$@"
  else
    openssl "$@"
  fi
}

gen_pki() {
  local p="$W/pki"
  mkdir -p "$p"
  [[ ${E2E_PKI_BACKDATE:-0} =~ ^[0-9]+$ ]] || die "E2E_PKI_BACKDATE must be a number of seconds"
  (
    cd "$p"
    # Serving CA: signs the apiserver's serving certificate; this is the CA
    # that clients (bootstrap kubeconfig, cluster-info) trust.
    new_key ca.key
    pki_openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=kubeboot-e2e-serving-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
      -out ca.crt
    # Client CA: --client-ca-file of the apiserver and the csrsigning CA of
    # the controller manager (so issued node certs authenticate).
    new_key client-ca.key
    pki_openssl req -x509 -new -key client-ca.key -sha256 -days 3650 -subj "/CN=kubeboot-e2e-client-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
      -out client-ca.crt
    # apiserver serving cert
    key_and_csr apiserver.key apiserver.csr "/CN=kube-apiserver"
    cat >apiserver.ext <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
    pki_openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -sha256 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    # admin client cert (system:masters)
    key_and_csr admin.key admin.csr "/O=system:masters/CN=kubeboot-e2e-admin"
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >client.ext
    pki_openssl x509 -req -in admin.csr -CA client-ca.crt -CAkey client-ca.key -CAcreateserial -days 365 -sha256 \
      -extfile client.ext -out admin.crt 2>/dev/null
    # the apiserver's client certificate towards kubelets (--kubelet-client-certificate, used only
    # when E2E_APISERVER_EXTRA_ARGS names it)
    key_and_csr apiserver-kubelet-client.key apiserver-kubelet-client.csr "/O=kubeboot:e2e:apiservers/CN=kube-apiserver-kubelet-client"
    pki_openssl x509 -req -in apiserver-kubelet-client.csr -CA client-ca.crt -CAkey client-ca.key -CAcreateserial -days 365 -sha256 \
      -extfile client.ext -out apiserver-kubelet-client.crt 2>/dev/null
    # service-account key pair
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
    openssl pkey -in sa.key -pubout -out sa.pub
    chmod 600 ./*.key
    rm -f .backdate
  )
}

# --------------------------------------------------------------------------
# bootstrap objects

random_alnum() { # n -> n chars of [a-z0-9]
  local out=""
  while ((${#out} < $1)); do out+=$(head -c 256 /dev/urandom | LC_ALL=C tr -dc 'a-z0-9'); done
  printf '%s' "${out:0:$1}"
}

# token_secret_yaml ID SECRET GROUPS EXPIRATION: the bootstrap token Secret,
# written exactly like the guides do (stringData). Replace with
# E2E_TOKEN_SECRET_CMD="kubeboot token secret ..." once that exists.
token_secret_yaml() {
  local id=$1 secret=$2 groups=${3:-} exp=${4:-}
  cat <<EOF
apiVersion: v1
kind: Secret
metadata:
  # Name MUST be of form "bootstrap-token-<token id>"
  name: bootstrap-token-$id
  namespace: kube-system
# Type MUST be 'bootstrap.kubernetes.io/token'
type: bootstrap.kubernetes.io/token
stringData:
  description: "kubeboot e2e bootstrap token"
  token-id: $id
  token-secret: $secret
EOF
  [[ -n $exp ]] && printf '  expiration: "%s"\n' "$exp"
  printf '  usage-bootstrap-authentication: "true"\n  usage-bootstrap-signing: "true"\n'
  [[ -n $groups ]] && printf '  auth-extra-groups: "%s"\n' "$groups"
  return 0
}

# create_token_secret ID SECRET [GROUPS] [EXPIRATION]
create_token_secret() {
  local id=$1 secret=$2 groups=${3:-} exp=${4:-}
  local gen=${E2E_TOKEN_SECRET_CMD:-token_secret_yaml}
  local yaml
  # shellcheck disable=SC2086 # E2E_TOKEN_SECRET_CMD may carry arguments
  yaml=$($gen "$id" "$secret" "$groups" "$exp")
  printf '%s\n' "$yaml" >"$W/bootstrap-token-$id.yaml"
  printf '%s\n' "$yaml" | kc create -f - >&2
}

setup_bootstrap() {
  log "creating bootstrap RBAC, cluster-info and token"
  # The three ClusterRoleBindings (as in Kubernetes The Hard Way / the TLS
  # bootstrapping docs).
  kc create clusterrolebinding create-csrs-for-bootstrapping \
    --clusterrole=system:node-bootstrapper --group=system:bootstrappers >&2
  # (E2E_NODECLIENT=0: none, as a cluster whose bootstrap CSRs an attestation approver decides)
  [[ ${E2E_NODECLIENT:-1} == 0 ]] || kc create clusterrolebinding auto-approve-csrs-for-group \
    --clusterrole=system:certificates.k8s.io:certificatesigningrequests:nodeclient --group=system:bootstrappers >&2
  kc create clusterrolebinding auto-approve-renewals-for-nodes \
    --clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient --group=system:nodes >&2

  # kube-public/cluster-info, like kubeadm: a kubeconfig with one cluster
  # named "", server and certificate-authority-data, nothing else.
  local cadata
  cadata=$(base64 -w0 <"$W/pki/ca.crt")
  cat >"$W/cluster-info.kubeconfig" <<EOF
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: $cadata
    server: $SERVER
  name: ""
contexts: null
current-context: ""
kind: Config
users: null
EOF
  kc -n kube-public create configmap cluster-info --from-file=kubeconfig="$W/cluster-info.kubeconfig" >&2
  kc -n kube-public create role kubeadm:bootstrap-signer-clusterinfo \
    --verb=get --resource=configmaps --resource-name=cluster-info >&2
  kc -n kube-public create rolebinding kubeadm:bootstrap-signer-clusterinfo \
    --role=kubeadm:bootstrap-signer-clusterinfo --user=system:anonymous >&2

  # Bootstrap token Secret.
  local exp
  exp=$(date -u -d '+24 hours' +%Y-%m-%dT%H:%M:%SZ)
  create_token_secret "$TOKEN_ID" "$TOKEN_SECRET" "$TOKEN_GROUPS" "$exp"

  # Bootstrap kubeconfig, with real kubectl config set-* (CA by path, as the guides do).
  bootstrap_kubeconfig "$W/bootstrap.kubeconfig" "$SERVER" "$W/pki/ca.crt" "$TOKEN_ID.$TOKEN_SECRET" >&2
}

write_env() {
  cat >"$W/env.sh" <<EOF
export E2E_WORK='$W'
export E2E_BIN='$BIN'
export E2E_SERVER='$SERVER'
export E2E_CA='$W/pki/ca.crt'
export E2E_CLIENT_CA='$W/pki/client-ca.crt'
export E2E_ADMIN_KUBECONFIG='$W/admin.kubeconfig'
export E2E_BOOTSTRAP_KUBECONFIG='$W/bootstrap.kubeconfig'
export E2E_TOKEN_ID='$TOKEN_ID'
export E2E_TOKEN_SECRET='$TOKEN_SECRET'
export E2E_TOKEN='$TOKEN_ID.$TOKEN_SECRET'
export E2E_TOKEN_GROUPS='$TOKEN_GROUPS'
export E2E_STATIC_TOKEN_NOBIND='$STATIC_NOBIND'
export E2E_SIGNING_DURATION='$SIGNING_DURATION'
export E2E_APISERVER_PORT='$APISERVER_PORT'
export E2E_ETCD_PORT='$ETCD_PORT'
EOF
}

# --------------------------------------------------------------------------

cmd_up() {
  BIN=$("$HERE/build.sh" --print) || die "binaries not built; run e2e/build.sh first"
  local owned=0
  if [[ -z ${E2E_WORK:-} ]]; then
    W=$(mktemp -d "${TMPDIR:-/tmp}/kubeboot-e2e.XXXXXX"); owned=1
  else
    W=$E2E_WORK; mkdir -p "$W"
  fi
  W=$(cd "$W" && pwd)
  E2E_ADMIN_KUBECONFIG="$W/admin.kubeconfig" # kc's (written below)
  if compgen -G "$W/pids/*.pid" >/dev/null; then die "$W already has a running cluster (run down first)"; fi
  mkdir -p "$W/pids" "$W/logs" "$CACHE"
  ((owned)) && touch "$W/.e2e-owned"
  echo "$W" >"$LAST"
  trap on_error ERR INT TERM

  local t0=$SECONDS
  SIGNING_DURATION=${E2E_SIGNING_DURATION:-1h}
  TOKEN_GROUPS=${E2E_TOKEN_GROUPS-system:bootstrappers:kubeboot:e2e}
  if [[ -n ${E2E_TOKEN:-} ]]; then
    [[ $E2E_TOKEN =~ ^([a-z0-9]{6})\.([a-z0-9]{16})$ ]] || die "E2E_TOKEN must be [a-z0-9]{6}.[a-z0-9]{16}"
    TOKEN_ID=${BASH_REMATCH[1]}; TOKEN_SECRET=${BASH_REMATCH[2]}
  else
    TOKEN_ID=$(random_alnum 6); TOKEN_SECRET=$(random_alnum 16)
  fi
  STATIC_NOBIND=$(random_alnum 32)

  ETCD_PORT=$(free_port); ETCD_PEER_PORT=$(free_port)
  APISERVER_PORT=$(free_port); KCM_PORT=$(free_port)
  printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nAPISERVER_PORT=%s\nKCM_PORT=%s\n' \
    "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KCM_PORT" >"$W/ports"
  SERVER="https://127.0.0.1:$APISERVER_PORT"
  local v=${E2E_VERBOSITY:-2}

  log "work dir $W; binaries $BIN"
  gen_pki

  # Static token file (apiserver tokenfile.go NewCSV): one user whose group has no bootstrap
  # binding (for 403 recordings).
  printf '%s,kubeboot-e2e-nobind,kubeboot-e2e-nobind,"kubeboot:e2e-no-bootstrap"\n' "$STATIC_NOBIND" >"$W/pki/tokens.csv"
  chmod 600 "$W/pki/tokens.csv"

  ETCD_CMD=("$BIN/etcd" --name e2e --data-dir "$W/etcd"
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT"
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT"
    --initial-cluster "e2e=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new
    --unsafe-no-fsync --log-level warn)
  printf '%q ' "${ETCD_CMD[@]}" >"$W/etcd.cmd"
  start_bg etcd "${ETCD_CMD[@]}"
  wait_for 60 "etcd /health" curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

  # Audit: one Metadata line per CSR / cluster-info request (e2e/run counts requests per agent),
  # per request on Node objects (who registered a kubelet's Node, with which credentials), and
  # per SelfSubjectReview (e2e/firmware-join: who the apiserver took the device for).
  cat >"$W/audit-policy.yaml" <<'EOF2'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: certificates.k8s.io
    resources: ["certificatesigningrequests"]
- level: Metadata
  resources:
  - group: ""
    resources: ["nodes", "nodes/status"]
  - group: authentication.k8s.io
    resources: ["selfsubjectreviews"]
- level: None
EOF2
  if [[ ${E2E_AUDIT_CSR_APPROVAL:-0} == 1 ]]; then
    sed -i 's|resources: \["certificatesigningrequests"\]|resources: ["certificatesigningrequests", "certificatesigningrequests/approval"]|' "$W/audit-policy.yaml"
  fi
  APISERVER_CMD=("$BIN/kube-apiserver"
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT"
    --etcd-servers="http://127.0.0.1:$ETCD_PORT"
    --tls-cert-file="$W/pki/apiserver.crt" --tls-private-key-file="$W/pki/apiserver.key"
    --client-ca-file="$W/pki/client-ca.crt"
    --enable-bootstrap-token-auth=true --anonymous-auth=true
    --enable-admission-plugins=NodeRestriction
    --token-auth-file="$W/pki/tokens.csv"
    --authorization-mode=Node,RBAC
    --service-account-issuer=https://kubernetes.default.svc.cluster.local
    --service-account-key-file="$W/pki/sa.pub" --service-account-signing-key-file="$W/pki/sa.key"
    --service-cluster-ip-range=10.0.0.0/24
    --endpoint-reconciler-type=none
    --cert-dir="$W/apiserver-certs"
    --audit-policy-file="$W/audit-policy.yaml" --audit-log-path="$W/logs/audit.log" --audit-log-format=json
    --profiling=false --v="$v")
  # shellcheck disable=SC2206 # split at white space, as documented
  [[ -z ${E2E_APISERVER_EXTRA_ARGS:-} ]] || APISERVER_CMD+=($E2E_APISERVER_EXTRA_ARGS)
  # Saved so that `restart-apiserver` can bring the same apiserver back.
  printf '%q ' "${APISERVER_CMD[@]}" >"$W/kube-apiserver.cmd"
  start_bg kube-apiserver "${APISERVER_CMD[@]}"
  wait_for 180 "kube-apiserver /readyz" curl -fsS --cacert "$W/pki/ca.crt" \
    --cert "$W/pki/admin.crt" --key "$W/pki/admin.key" "$SERVER/readyz"

  # admin kubeconfig with real kubectl config set-*
  local ak=$E2E_ADMIN_KUBECONFIG
  "$KUBECTL" config --kubeconfig="$ak" set-cluster e2e --server="$SERVER" \
    --certificate-authority="$W/pki/ca.crt" --embed-certs=true >&2
  "$KUBECTL" config --kubeconfig="$ak" set-credentials admin \
    --client-certificate="$W/pki/admin.crt" --client-key="$W/pki/admin.key" --embed-certs=true >&2
  "$KUBECTL" config --kubeconfig="$ak" set-context e2e --cluster=e2e --user=admin >&2
  "$KUBECTL" config --kubeconfig="$ak" use-context e2e >&2

  KCM_CMD=("$BIN/kube-controller-manager"
    --kubeconfig="$ak" --authentication-kubeconfig="$ak" --authorization-kubeconfig="$ak" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$W/kcm-certs" \
    --leader-elect=false \
    --controllers='*,bootstrapsigner,tokencleaner' \
    --cluster-signing-cert-file="$W/pki/client-ca.crt" --cluster-signing-key-file="$W/pki/client-ca.key" \
    --cluster-signing-duration="$SIGNING_DURATION" \
    --use-service-account-credentials=true \
    --root-ca-file="$W/pki/ca.crt" \
    --service-account-private-key-file="$W/pki/sa.key" \
    --profiling=false --v="$v")
  printf '%q ' "${KCM_CMD[@]}" >"$W/kube-controller-manager.cmd"
  start_bg kube-controller-manager "${KCM_CMD[@]}"
  wait_for 120 "kube-controller-manager /healthz" curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz"

  setup_bootstrap
  write_env
  trap - ERR INT TERM
  log "control plane up in $((SECONDS - t0))s: $SERVER (work dir $W)"
  echo "E2E_WORK=$W"
  echo "env: source $W/env.sh"
}

resolve_work() {
  if [[ -n ${E2E_WORK:-} ]]; then W=$E2E_WORK
  elif [[ -f $LAST ]]; then W=$(cat "$LAST")
  else die "no E2E_WORK and no last work dir recorded"; fi
  [[ -d $W ]] || die "work dir $W does not exist"
}

cmd_down() {
  resolve_work
  local rc=0
  stop_all || rc=1
  if ((rc)); then die "something is still listening (work dir $W kept)"; fi
  log "all components stopped, no ports left listening"
  if [[ -f "$W/.e2e-owned" && ${E2E_KEEP:-0} != 1 ]]; then
    rm -rf "$W"; log "removed $W"
    [[ -f $LAST && $(cat "$LAST") == "$W" ]] && rm -f "$LAST"
  fi
  return 0
}

# Stop component $1 (SIGTERM), wait $2 seconds (default 5), start it again with the same command
# line (its files read again: certificates, CA files) and wait until it is healthy: for
# "apiserver gone mid-wait" and CA-rotation tests.
cmd_restart() {
  resolve_work
  local name=$1 pause=${2:-5} f="$W/pids/$1.pid" pid
  [[ -f $f && -f $W/$name.cmd ]] || die "no $name in $W"
  pid=$(cat "$f")
  log "stopping $name (pid $pid) for ${pause}s"
  kill -TERM "$pid" 2>/dev/null || true
  poll 100 0.1 ! kill -0 "$pid" 2>/dev/null || true
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  sleep "$pause"
  start_saved "$name"
  # A controller manager still starting its controllers exits when the apiserver goes away (it
  # retries once it runs): start it again, as its supervisor would.
  if [[ $name == kube-apiserver && -f $W/kube-controller-manager.cmd ]] &&
    ! kill -0 "$(cat "$W/pids/kube-controller-manager.pid" 2>/dev/null)" 2>/dev/null; then
    log "kube-controller-manager exited while the apiserver was away; starting it again"
    start_saved kube-controller-manager
  fi
}

# start_saved NAME: start component NAME with its saved command line, wait until it is healthy
start_saved() {
  # shellcheck disable=SC1090 # the saved, %q-quoted command line
  eval "start_bg $1 $(cat "$W/$1.cmd")"
  # shellcheck disable=SC1091
  source "$W/env.sh"
  if [[ $1 == etcd ]]; then
    local port; port=$(sed -n 's/^ETCD_PORT=//p' "$W/ports")
    poll 120 0.5 curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 || die "etcd is not healthy after 60 s"
  elif [[ $1 == kube-apiserver ]]; then
    # (-k: the serving CA may be rotating; the admin client certificate still authenticates)
    poll 360 0.5 curl -fsSk --cert "$W/pki/admin.crt" --key "$W/pki/admin.key" "$E2E_SERVER/readyz" >/dev/null 2>&1 ||
      die "kube-apiserver is not ready after 180 s"
  else
    local port; port=$(sed -n 's/^KCM_PORT=//p' "$W/ports")
    poll 240 0.5 curl -fsSk "https://127.0.0.1:$port/healthz" >/dev/null 2>&1 ||
      die "kube-controller-manager is not healthy after 120 s"
  fi
  kill -0 "$(cat "$W/pids/$1.pid")" 2>/dev/null || die "$1 exited"
}

cmd_env() {
  resolve_work
  [[ -f "$W/env.sh" ]] || die "$W/env.sh missing (cluster not up?)"
  cat "$W/env.sh"
}

cmd_status() {
  resolve_work
  local f
  for f in "$W"/pids/*.pid; do
    [[ -e $f ]] || continue
    if kill -0 "$(cat "$f")" 2>/dev/null; then echo "$(basename "$f" .pid): running (pid $(cat "$f"))"
    else echo "$(basename "$f" .pid): DEAD"; fi
  done
  cat "$W/ports"
  # shellcheck disable=SC1091
  source "$W/env.sh"
  curl -fsS --cacert "$E2E_CA" "$E2E_SERVER/readyz" && echo
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  restart-apiserver) shift; cmd_restart kube-apiserver "$@" ;;
  restart-controller-manager) shift; cmd_restart kube-controller-manager "$@" ;;
  restart-etcd) shift; cmd_restart etcd "$@" ;;
  status) cmd_status ;;
  random-alnum) random_alnum "$2" ;;
  *) echo "usage: $0 up|down|env|status|restart-apiserver [SECONDS]|restart-controller-manager [SECONDS]|restart-etcd [SECONDS]|random-alnum N" >&2; exit 2 ;;
esac
