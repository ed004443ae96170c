#!/usr/bin/env bash
# Side by side with the kubelet: the upstream kubelet's path-B bootstrap code
# (k8s.io/kubernetes/pkg/kubelet/certificate/bootstrap.LoadClientCert, driven by
# e2e/cp/cmd/kubelet-bootstrap, built and cached by e2e/build.sh) and
# `kubeboot bootstrap` bootstrap the same node name with the same P-256 key,
# one after the other, against the running e2e cluster.
#
#   e2e/cluster.sh up && e2e/kubelet-compare.sh && e2e/cluster.sh down
#
# Checks and figures (every line starts with `compare: `; the last one is
# `compare: ok` or `compare: FAIL <reasons>`, exit 0 only for ok):
#   * CSR name: the kubelet's node-csr-<digest> (from the cluster), kubeboot's
#     (from the cluster) and `kubeboot csr --object` offline must be equal.
#     Between the runs the kubelet's CSR is deleted, so kubeboot creates its own
#     object under the same name (a fresh 201, not a 409 reuse).
#   * both CSRs Approved+Issued, both issued certificates carry the shared key.
#   * time to credentials: wall clock from exec to exit 0 with the kubeconfig
#     and kubelet-client-current.pem written.
#   * apiserver requests on certificatesigningrequests, from the audit log
#     ($E2E_WORK/logs/audit.log; the cluster's audit policy logs only CSRs at
#     Metadata level), per run: by user agent (kubelet-bootstrap/... and
#     kubeboot-rust/...), by the bootstrap token's user, on the node's CSR name
#     (objectRef.name) and inside the run's time window; counted per auditID,
#     grouped by verb. (The kubelet code and kubeboot both GET /healthz once before the
#     CSR (waitForServer); that request is not audited and not counted.)
#   * memory: max RSS of both (GNU time -v); kubeboot under
#     valgrind --tool=massif --stacks=yes (a third, unmeasured-for-time run):
#     peak heap (useful + allocator overhead) and peak stack; for the Go
#     program, whose heap and goroutine stacks are the Go runtime's own mmap'd
#     arenas (invisible to massif), RSS and the runtime's MemStats.
#
# Verdict (FAIL if any):
#   kubeboot makes more CSR requests than the kubelet code;
#   kubeboot is slower by more than COMPARE_TOLERANCE_S (default 1.0 s): both
#     runs wait for the same controller-manager approver/signer, whose latency
#     (informer resync, work queue) is ~0.1–1 s and varies between runs, so
#     smaller differences are noise;
#   the names differ, or either run fails.
#
# Env: E2E_WORK (default: the last cluster started by e2e/cluster.sh; its
#      env.sh is sourced unless E2E_SERVER is already set), KUBEBOOT_BIN
#      (default target/release/kubeboot), COMPARE_NODE (default
#      node-compare-<random>), COMPARE_TOLERANCE_S (1.0), COMPARE_MASSIF=0 to
#      skip valgrind.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$HERE/lib.sh"

say() { printf 'compare: %s\n' "$*"; }
FAILS=()
fail_later() { FAILS+=("$*"); say "FAIL: $*"; } # REASON: said now; the verdict at the end fails
die() { say "FAIL setup: $*"; exit 1; }

if [[ -z ${E2E_SERVER:-} ]]; then
  if [[ -n ${E2E_WORK:-} && -f $E2E_WORK/env.sh ]]; then
    # shellcheck disable=SC1091
    source "$E2E_WORK/env.sh"
  else
    envs=$("$HERE/cluster.sh" env) || die "no running cluster (e2e/cluster.sh up)"
    eval "$envs"
  fi
fi
: "${E2E_WORK:?}" "${E2E_BIN:?}" "${E2E_BOOTSTRAP_KUBECONFIG:?}" "${E2E_ADMIN_KUBECONFIG:?}" "${E2E_CLIENT_CA:?}" "${E2E_TOKEN_ID:?}"
KB=${KUBEBOOT_BIN:-$ROOT/target/release/kubeboot}
[[ $KB == /* ]] || KB="$ROOT/$KB"
[[ -x $KB ]] || die "kubeboot binary $KB missing (cargo build --release --bin kubeboot)"
UP="$E2E_BIN/kubelet-bootstrap"
if [[ ! -x $UP ]]; then "$HERE/build.sh" >/dev/null || die "e2e/build.sh (kubelet-bootstrap)"; fi
[[ -x $UP ]] || die "$UP missing"
AUDIT="$E2E_WORK/logs/audit.log"
[[ -f $AUDIT ]] || die "no audit log $AUDIT"
TOL=${COMPARE_TOLERANCE_S:-1.0}
NODE=${COMPARE_NODE:-node-compare-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}
GNUTIME=/usr/bin/time
if [[ ! -x $GNUTIME ]] && ((EUID == 0)); then apt-get install -y -q time >/dev/null 2>&1 || true; fi

now() { date +%s.%N; }
sub() { python3 -c "import sys; print(f'{float(sys.argv[1])-float(sys.argv[2]):.3f}')" "$1" "$2"; }

D="$E2E_WORK/kubelet-compare"
rm -rf "$D"
mkdir -p "$D"
say "node $NODE; kubelet code $UP; kubeboot $KB; work dir $D"

# The CSR objects for this node: name, conditions, issued, username, one per line (oldest first).
node_csrs() { csr_rows "$NODE" | cut -d' ' -f2-; }

# --------------------------------------------------------------------------
# One key for both.
KEY="$D/node.key"
"$KB" key generate --out "$KEY" || die "kubeboot key generate"
openssl pkey -in "$KEY" -noout 2>/dev/null || die "the generated key does not parse"
head -1 "$KEY" | grep -q 'BEGIN EC PRIVATE KEY' || die "key is not SEC1 PEM"
KEYPUB=$(openssl pkey -in "$KEY" -pubout 2>/dev/null)
for who in kubelet kubeboot; do
  mkdir -p -m 0755 "$D/$who/pki"
  install -m 0600 "$KEY" "$D/$who/pki/kubelet-client.key.tmp"
done
offline=$("$KB" csr --key "$KEY" --node-name "$NODE" --object |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["name"])') || die "kubeboot csr --object"

# run WHO CMD... : timed run under GNU time -v; sets T_<who> (seconds), W0_/W1_<who> (window)
declare -A T W0 W1 RC
run() {
  local who=$1; shift
  local pre=()
  [[ -x $GNUTIME ]] && pre=("$GNUTIME" -v -o "$D/$who.time")
  W0[$who]=$(date -u +%s.%N)
  local t0; t0=$(now)
  timeout 300 "${pre[@]}" "$@" >"$D/$who.log" 2>&1
  RC[$who]=$?
  T[$who]=$(sub "$(now)" "$t0")
  W1[$who]=$(date -u +%s.%N)
}

creds_ok() { # who
  local p="$D/$1/pki"
  [[ -f $D/$1/kubelet.conf && -L $p/kubelet-client-current.pem ]] || return 1
  [[ $(openssl x509 -in "$p/kubelet-client-current.pem" -noout -pubkey 2>/dev/null) == "$KEYPUB" ]]
}

# --------------------------------------------------------------------------
# 1. the upstream kubelet code
run kubelet "$UP" --bootstrap-kubeconfig "$E2E_BOOTSTRAP_KUBECONFIG" --kubeconfig "$D/kubelet/kubelet.conf" \
  --cert-dir "$D/kubelet/pki" --node-name "$NODE" --timeout 4m --memstats --v=2
if ((RC[kubelet] != 0)); then fail_later "kubelet code exited ${RC[kubelet]}"; show "$D/kubelet.log"; fi
creds_ok kubelet || fail_later "kubelet code: no kubeconfig/kubelet-client-current.pem with the shared key"
mapfile -t rows < <(node_csrs)
((${#rows[@]} == 1)) || fail_later "expected 1 CSR for $NODE after the kubelet run, found ${#rows[@]}: ${rows[*]}"
read -r name_kubelet conds issued user <<<"${rows[0]:-}"
say "kubelet  CSR ${name_kubelet:-none} ${conds:-} issued=${issued:-0} by ${user:-}"
[[ ${conds:-} == Approved && ${issued:-0} == 1 && ${user:-} == "system:bootstrap:$E2E_TOKEN_ID" ]] ||
  fail_later "kubelet CSR not Approved+Issued for the bootstrap token user"
[[ -n ${name_kubelet:-} ]] && kc delete csr "$name_kubelet" --wait=true >/dev/null || fail_later "kubectl delete csr ${name_kubelet:-}"

# 2. kubeboot, same node name, same key (its key cache has the same file name)
run kubeboot "$KB" bootstrap --bootstrap-kubeconfig "$E2E_BOOTSTRAP_KUBECONFIG" --kubeconfig "$D/kubeboot/kubelet.conf" \
  --cert-dir "$D/kubeboot/pki" --node-name "$NODE" --ca-bundle "$E2E_CLIENT_CA" --wait 4m
if ((RC[kubeboot] != 0)); then fail_later "kubeboot exited ${RC[kubeboot]}"; show "$D/kubeboot.log"; fi
creds_ok kubeboot || fail_later "kubeboot: no kubeconfig/kubelet-client-current.pem with the shared key"
mapfile -t rows < <(node_csrs)
((${#rows[@]} == 1)) || fail_later "expected 1 CSR for $NODE after the kubeboot run, found ${#rows[@]}: ${rows[*]}"
read -r name_kubeboot conds issued user <<<"${rows[0]:-}"
say "kubeboot CSR ${name_kubeboot:-none} ${conds:-} issued=${issued:-0} by ${user:-}"
[[ ${conds:-} == Approved && ${issued:-0} == 1 && ${user:-} == "system:bootstrap:$E2E_TOKEN_ID" ]] ||
  fail_later "kubeboot CSR not Approved+Issued for the bootstrap token user"

say "name kubelet=${name_kubelet:-none}"
say "name kubeboot=${name_kubeboot:-none}"
say "name offline=$offline (kubeboot csr --object)"
if [[ -n ${name_kubelet:-} && ${name_kubelet:-} == "${name_kubeboot:-}" && $offline == "${name_kubelet:-}" ]]; then
  say "names equal: yes"
else
  fail_later "CSR names differ"
fi
for who in kubelet kubeboot; do
  [[ -e $D/$who/pki/kubelet-client.key.tmp ]] && say "note: $who left kubelet-client.key.tmp behind"
done

# --------------------------------------------------------------------------
# Requests from the audit log (the watch's ResponseComplete is written when the client hangs up).
sleep 1
AUDIT_PY='
import json, sys
from datetime import datetime
path, user, name = sys.argv[1], sys.argv[2], sys.argv[3]
runs = {}
for spec in sys.argv[4:]:
    who, ua, w0, w1 = spec.split("|")
    runs[who] = (ua, float(w0), float(w1))
def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
seen = {who: {} for who in runs}
with open(path) as f:
    for line in f:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if (e.get("objectRef") or {}).get("resource") != "certificatesigningrequests":
            continue
        if (e.get("user") or {}).get("username") != user:
            continue
        # Only the CSR of this node (the name is in objectRef for the create and for the watch/list
        # on metadata.name): requests of other agents with the same token inside the window
        # are not counted (a cold CI run once counted 6 for kubeboot that way).
        if (e.get("objectRef") or {}).get("name") != name:
            continue
        t = ts(e["requestReceivedTimestamp"])
        for who, (ua, w0, w1) in runs.items():
            if e.get("userAgent", "").startswith(ua) and w0 - 0.5 <= t <= w1 + 0.5:
                code = (e.get("responseStatus") or {}).get("code", "")
                seen[who][e["auditID"]] = (e["verb"], e["userAgent"], code)
for who, reqs in seen.items():
    verbs = {}
    for verb, ua, code in reqs.values():
        verbs.setdefault(verb, []).append(str(code))
    uas = sorted({ua for _, ua, _ in reqs.values()})
    by_verb = " ".join("%s=%d(%s)" % (v, len(c), "/".join(sorted(c))) for v, c in sorted(verbs.items()))
    print(who, len(reqs), by_verb, "|", " ; ".join(uas))
'
declare -A NREQ
while read -r who n rest; do
  NREQ[$who]=$n
  say "requests $who: $n  ${rest%%|*}  ua: ${rest#*| }"
done < <(python3 -c "$AUDIT_PY" "$AUDIT" "system:bootstrap:$E2E_TOKEN_ID" "${name_kubelet:-}" \
  "kubelet|kubelet-bootstrap/|${W0[kubelet]}|${W1[kubelet]}" "kubeboot|kubeboot-rust/|${W0[kubeboot]}|${W1[kubeboot]}")

# --------------------------------------------------------------------------
# Memory.
maxrss() { sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$1" 2>/dev/null; }
rss_kubelet=$(maxrss "$D/kubelet.time"); rss_kubeboot=$(maxrss "$D/kubeboot.time")
if [[ -x $GNUTIME ]]; then
  say "maxrss_kib kubelet=${rss_kubelet:-?} kubeboot=${rss_kubeboot:-?} (GNU time -v)"
else
  say "maxrss: /usr/bin/time missing, not measured"
fi
ms=$(sed -n 's/^memstats: //p' "$D/kubelet.log")
[[ -n $ms ]] && say "go runtime kubelet: $ms (heap/stacks are Go-managed mmap arenas: massif does not see them; heap_sys and stack_sys bound the peaks)"

if [[ ${COMPARE_MASSIF:-1} != 0 ]] && command -v valgrind >/dev/null; then
  # A third run (kubeboot only; not timed, not counted): fresh CSR under the same name.
  [[ -n ${name_kubeboot:-} ]] && kc delete csr "$name_kubeboot" --wait=true >/dev/null
  mkdir -p -m 0755 "$D/massif/pki"
  install -m 0600 "$KEY" "$D/massif/pki/kubelet-client.key.tmp"
  if timeout 600 valgrind --tool=massif --stacks=yes --massif-out-file="$D/massif.out" \
    "$KB" bootstrap --bootstrap-kubeconfig "$E2E_BOOTSTRAP_KUBECONFIG" --kubeconfig "$D/massif/kubelet.conf" \
    --cert-dir "$D/massif/pki" --node-name "$NODE" --ca-bundle "$E2E_CLIENT_CA" --wait 4m >"$D/massif.log" 2>&1; then
    ms_print "$D/massif.out" >"$D/massif.txt" 2>&1 || true
    read -r heap extra stacks total < <(python3 - "$D/massif.out" <<'EOF'
import re, sys
snaps, cur = [], {}
for line in open(sys.argv[1]):
    m = re.match(r"(mem_heap_B|mem_heap_extra_B|mem_stacks_B)=(\d+)", line)
    if m:
        cur[m.group(1)] = int(m.group(2))
        if len(cur) == 3:
            snaps.append(cur); cur = {}
print(max(s["mem_heap_B"] for s in snaps), max(s["mem_heap_B"] + s["mem_heap_extra_B"] for s in snaps),
      max(s["mem_stacks_B"] for s in snaps),
      max(s["mem_heap_B"] + s["mem_heap_extra_B"] + s["mem_stacks_B"] for s in snaps))
EOF
    )
    say "massif kubeboot: peak_heap_B=$heap peak_heap_with_overhead_B=$extra peak_stack_B=$stacks peak_total_B=$total (ms_print: $D/massif.txt)"
    say "massif kubelet code: not meaningful (Go runtime allocates with mmap, not malloc); RSS and Go memstats above"
  else
    fail_later "kubeboot under valgrind massif failed"; tail -n 20 "$D/massif.log" | show
  fi
fi

# --------------------------------------------------------------------------
# Verdicts.
say "requests kubelet=${NREQ[kubelet]:-?} kubeboot=${NREQ[kubeboot]:-?}"
say "seconds kubelet=${T[kubelet]} kubeboot=${T[kubeboot]} (tolerance ${TOL}s)"
if [[ -z ${NREQ[kubelet]:-} || -z ${NREQ[kubeboot]:-} || ${NREQ[kubelet]} == 0 || ${NREQ[kubeboot]} == 0 ]]; then
  fail_later "no audited requests found for one of the runs"
elif ((NREQ[kubeboot] > NREQ[kubelet])); then
  fail_later "kubeboot made more CSR requests (${NREQ[kubeboot]}) than the kubelet code (${NREQ[kubelet]})"
fi
if python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) > float(sys.argv[1]) + float(sys.argv[3]) else 1)" \
  "${T[kubelet]}" "${T[kubeboot]}" "$TOL"; then
  fail_later "kubeboot slower than the kubelet code by more than ${TOL}s"
fi
if ((${#FAILS[@]})); then
  say "FAIL $(IFS=';'; echo "${FAILS[*]}")"
  exit 1
fi
say ok
