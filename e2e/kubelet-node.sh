#!/usr/bin/env bash
# One upstream kubelet (e2e/build.sh's, the release of the control plane) on 127.0.0.1, on a
# machine without a container runtime: the fake CRI of the same release (e2e/cp/cmd/fake-cri)
# serves it, and the kubelet runs as root in a mount namespace of its own.
#
#   e2e/kubelet-node.sh start DIR NODE KUBECONFIG CERT_DIR [BOOTSTRAP_KUBECONFIG]
#   e2e/kubelet-node.sh stop DIR
#   e2e/kubelet-node.sh running DIR        exit 0 if the kubelet of DIR runs
#
# DIR holds everything of this node that is not its credentials: config.yaml, root/ (--root-dir),
# volume-plugins/, var-log/, var-lib/, cri.sock, sysctl/, the pids, fake-cri.log and kubelet.log (a
# start moves the previous kubelet.log to kubelet.log.N). KUBECONFIG, CERT_DIR and
# BOOTSTRAP_KUBECONFIG are passed as --kubeconfig, --cert-dir and --bootstrap-kubeconfig, and
# client certificate rotation is on (rotateCertificates: true). `start` returns once the kubelet
# is started (it does not wait for its registration); `stop` sends TERM (KILL after 10 s) to the
# kubelet, then to the fake CRI.
#
# Why each setting of config.yaml (the rest are the kubelet's defaults) and the namespace: see
# e2e/README.md, "The real kubelet".
#
# Env: E2E_BIN (default: e2e/build.sh --print), KUBELET_VERBOSITY (--v, default 2: the
# certificate manager's "Certificate rotation deadline determined" line is V(2)); for a node the
# apiserver can reach (e2e/approver): KUBELET_NETNS (a network namespace of `ip netns add`: the
# kubelet, not the fake CRI, runs in it), KUBELET_ADDRESS (the kubelet API's address, default
# 127.0.0.1), KUBELET_EXTRA_CONFIG (KubeletConfiguration lines appended to config.yaml) and
# KUBELET_EXTRA_ARGS (more flags, split at white space).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$HERE/lib.sh"

# The kernel settings the kubelet's container manager insists on (pkg/kubelet/cm/
# container_manager_linux.go setupKernelTunables, values from k8s.io/component-helpers/node/util/
# sysctl): it writes them into the host's /proc/sys when they differ (protectKernelDefaults:
# false), or refuses to start (true). They are the machine's, shared with everyone on it
# (kernel.panic_on_oops=1 turns any oops into a reboot), so inside the kubelet's own mount
# namespace each file is a bind mount of a file of DIR/sysctl holding that value: the kubelet
# reads what it wants and the host keeps its own.
SYSCTLS="vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1
kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000"

die() { printf 'kubelet-node: %s\n' "$*" >&2; exit 1; }

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pid() { # PIDFILE: TERM, then KILL after 10 s
  local f=$1 pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    poll 100 0.1 ! kill -0 "$pid" 2>/dev/null || { kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; }
  fi
  rm -f "$f"
}

cmd_start() {
  [[ $# -ge 4 ]] || die "usage: start DIR NODE KUBECONFIG CERT_DIR [BOOTSTRAP_KUBECONFIG]"
  local dir=$1 node=$2 kubeconfig=$3 certdir=$4 bootstrap=${5:-}
  BIN=${E2E_BIN:-$("$HERE/build.sh" --print)} || die "binaries not built (e2e/build.sh)"
  [[ -x $BIN/kubelet && -x $BIN/fake-cri ]] || die "no kubelet or fake-cri in $BIN (run e2e/build.sh)"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  alive "$dir/kubelet.pid" && die "a kubelet already runs for $dir"
  mkdir -p "$dir/root" "$dir/volume-plugins" "$dir/sysctl" "$dir/var-log" "$dir/var-lib"
  local port
  port=$(free_port)
  cat >"$dir/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
rotateCertificates: true
containerRuntimeEndpoint: unix://$dir/cri.sock
address: ${KUBELET_ADDRESS:-127.0.0.1}
port: $port
healthzPort: 0
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
volumePluginDir: $dir/volume-plugins
EOF
  [[ -z ${KUBELET_EXTRA_CONFIG:-} ]] || printf '%s\n' "$KUBELET_EXTRA_CONFIG" >>"$dir/config.yaml"

  if ! alive "$dir/fake-cri.pid"; then
    setsid "$BIN/fake-cri" --listen "$dir/cri.sock" >>"$dir/fake-cri.log" 2>&1 </dev/null &
    echo $! >"$dir/fake-cri.pid"
    poll 100 0.1 test -S "$dir/cri.sock" || die "the fake CRI did not start (see $dir/fake-cri.log)"
  fi

  # /var/log and /var/lib are the node's own (DIR/var-log, DIR/var-lib) in its namespace: the
  # kubelet writes two paths it has no setting for, /var/log/containers (pkg/kubelet/kubelet.go
  # ContainerLogsDir, made in initializeModules) and the device plugin registration socket
  # /var/lib/kubelet/device-plugins/kubelet.sock (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1
  # KubeletSocket), which kubelets side by side would take from each other.
  local mounts="mount --bind '$dir/var-log' /var/log && mount --bind '$dir/var-lib' /var/lib && " s name value
  for s in $SYSCTLS; do
    name=${s%%=*} value=${s#*=}
    echo "$value" >"$dir/sysctl/${name//\//.}"
    mounts+="mount --bind '$dir/sysctl/${name//\//.}' /proc/sys/$name && "
  done
  local args=(--config "$dir/config.yaml" --root-dir "$dir/root" --hostname-override "$node"
    --kubeconfig "$kubeconfig" --cert-dir "$certdir" --v "${KUBELET_VERBOSITY:-2}")
  [[ -z $bootstrap ]] || args+=(--bootstrap-kubeconfig "$bootstrap")
  # shellcheck disable=SC2206 # split at white space, as documented
  [[ -z ${KUBELET_EXTRA_ARGS:-} ]] || args+=($KUBELET_EXTRA_ARGS)
  local netns=()
  # nsenter, not `ip netns exec`: that one also remounts /sys, taking the cgroup mounts away
  [[ -z ${KUBELET_NETNS:-} ]] || netns=(nsenter "--net=/run/netns/$KUBELET_NETNS")
  if [[ -f $dir/kubelet.log ]]; then
    local n=1
    while [[ -e $dir/kubelet.log.$n ]]; do n=$((n + 1)); done
    mv "$dir/kubelet.log" "$dir/kubelet.log.$n"
  fi
  # A private mount namespace: the kubelet's own mounts (setupDataDirs makes --root-dir a shared
  # bind mount of itself) and the sysctl files above go away with it. nsenter, unshare and
  # sh exec, so the pid is the kubelet's.
  # shellcheck disable=SC2016 # $0 and $@ are the inner shell's
  setsid "${netns[@]}" unshare --mount --propagation private \
    sh -c "${mounts}exec \"\$0\" \"\$@\"" "$BIN/kubelet" "${args[@]}" >"$dir/kubelet.log" 2>&1 </dev/null &
  echo $! >"$dir/kubelet.pid"
}

cmd_stop() {
  [[ $# -eq 1 ]] || die "usage: stop DIR"
  stop_pid "$1/kubelet.pid"
  stop_pid "$1/fake-cri.pid"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  running) alive "${2:?DIR}/kubelet.pid" ;;
  *) echo "usage: $0 start DIR NODE KUBECONFIG CERT_DIR [BOOTSTRAP_KUBECONFIG] | stop DIR | running DIR" >&2; exit 2 ;;
esac
