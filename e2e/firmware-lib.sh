# shellcheck shell=bash
# What e2e/firmware-join and e2e/firmware-powercut share: the networked image's provisioning, the
# UART relay, QEMU, the device's flash file. Sourced after lib.sh and the control plane's env.sh
# (it reads ROOT, HERE, WORK, ELF, TIMEOUT, E2E_CLIENT_CA and IMAGE), never run.
#
# IMAGE: which networked image ELF is: `m4` (the default: examples/firmware, QEMU mps2-an386,
# Cortex-M4, the UART is UART1) or `riscv` (examples/firmware-riscv, QEMU virt, riscv32imac, the
# UART is its only NS16550A). The same source, the same command line and output, the same flash file.

# provision DIR NODE SERVER CA TOKEN [WAIT]: what the host gives the device at start (read by
# semihosting): the bootstrap kubeconfig (server, CA embedded, token), the CA issued certificates
# chain to (the cluster's client CA), the node name, and how long a bootstrap may wait
provision() {
  local dir=$1 node=$2 server=$3 ca=$4 token=$5 wait=${6:-}
  mkdir -p "$dir"
  local k="$dir/bootstrap-kubeconfig"
  kc_as "$k" config set-cluster bootstrap --server="$server" --certificate-authority="$ca" --embed-certs=true >/dev/null
  kc_as "$k" config set-credentials kubelet-bootstrap --token="$token" >/dev/null
  kc_as "$k" config set-context bootstrap --user=kubelet-bootstrap --cluster=bootstrap >/dev/null
  kc_as "$k" config use-context bootstrap >/dev/null
  cp "$E2E_CLIENT_CA" "$dir/ca-bundle"
  echo "$node" >"$dir/node-name"
  [[ -z $wait ]] || echo "$wait" >"$dir/bootstrap-wait"
}

# new_flash FILE [PAGES]: the device's NOR flash (examples/firmware/src/net/nor.rs), erased:
# PAGES (default 16) pages of 4096 bytes of 0xFF, then one u32 erase count per page (0)
new_flash() {
  python3 - "$1" "${2:-16}" <<'PY'
import sys
path, pages = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    f.write(b"\xff" * (4096 * pages) + b"\0" * (4 * pages))
PY
}

# relay NAME [ARGS...]: start e2e/uart-relay on a free port (RELAY_PORT, RELAY_PID, log NAME.relay)
relay() {
  local name=$1; shift
  RELAY_PORT=$(free_port)
  rm -f "$WORK/$name.relay"
  "$HERE/uart-relay" --listen "127.0.0.1:$RELAY_PORT" --log "$WORK/$name.relay" "$@" &
  RELAY_PID=$!
  poll 50 0.1 grep -q "listening on" "$WORK/$name.relay" 2>/dev/null
}
stop_relay() { kill "$RELAY_PID" 2>/dev/null; wait "$RELAY_PID" 2>/dev/null; RELAY_PID=""; }

# qemu_cmd ARGS...: QEMU_CMD, the command that runs the image (IMAGE) with its command line; the
# UART on the relay (if one runs); no NIC; the plugin QEMU_PLUGIN names, if any
qemu_cmd() {
  local args="" a serial=() link=()
  for a in kubeboot-net "$@"; do args+=",arg=$a"; done
  [[ -z ${RELAY_PID:-} ]] || link=(-chardev "socket,id=uart,host=127.0.0.1,port=$RELAY_PORT" -serial chardev:uart)
  case ${IMAGE:-m4} in
    m4) # UART0 unused, UART1 the link
      [[ -n ${link[*]} ]] && serial=(-serial null "${link[@]}") || serial=(-serial null)
      QEMU_CMD=(qemu-system-arm -M mps2-an386) ;;
    riscv) # its one UART the link; -bios none: riscv-rt's _start at the reset vector
      [[ -n ${link[*]} ]] && serial=("${link[@]}") || serial=(-serial null)
      QEMU_CMD=(qemu-system-riscv32 -M virt -bios none) ;;
    *) echo "firmware-lib: IMAGE=$IMAGE is neither m4 nor riscv" >&2; return 2 ;;
  esac
  QEMU_CMD+=(-nographic -nic none -monitor none -icount shift=0
    -semihosting-config "enable=on,target=native$args" "${serial[@]}" -kernel "$ELF")
  # QEMU_PLUGIN: a TCG plugin and its arguments (examples/firmware/profile's insn-profile.so).
  [[ -z ${QEMU_PLUGIN:-} ]] || QEMU_CMD+=(-plugin "$QEMU_PLUGIN")
}

# qemu ARGS...: run it (TIMEOUT seconds at most)
qemu() {
  qemu_cmd "$@"
  timeout "$TIMEOUT" "${QEMU_CMD[@]}" 2> >(grep -v 'has no peer' >&2)
}

# run_join NAME DIR [relay args...]: relay + the join on the flash WORK/NAME.nv (made erased when
# it does not exist); output in WORK/NAME.log; QEMU's exit status
run_join() {
  local name=$1 dir=$2; shift 2
  [[ -f $WORK/$name.nv ]] || new_flash "$WORK/$name.nv"
  relay "$name" "$@"
  qemu join "$dir" "$WORK/$name.nv" >"$WORK/$name.log" 2>&1
  local rc=$?
  stop_relay
  return $rc
}
