#!/usr/bin/python3
"""The host's side of qemu-guest-agent (QEMU's guest agent protocol: JSON over the VM's virtio
serial port, here a Unix socket of QEMU's): the only way e2e/vm/run reaches into the VM.

  qga.py SOCKET wait SECONDS          until the agent answers (boot, reboot)
  qga.py SOCKET exec 'SHELL COMMAND'  run it with /bin/sh -c in the guest: its stdout and stderr
                                      are printed, its exit status is this command's
  qga.py SOCKET put FILE GUEST-PATH   copy a file into the guest
  qga.py SOCKET reboot | poweroff     guest-shutdown

Standard library only.
"""
import base64
import json
import random
import socket
import sys
import time


class Agent:
    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        # Resynchronise: anything a former client left half-read is skipped up to the 0xff the
        # agent sends before its answer to guest-sync-delimited.
        token = random.randrange(1, 2**31)
        self.sock.sendall(b"\xff" + json.dumps({"execute": "guest-sync-delimited", "arguments": {"id": token}}).encode())
        while True:
            self._fill()
            i = self.buf.rfind(b"\xff")
            if i >= 0:
                self.buf = self.buf[i + 1:]
                break
        # (an error about the 0xff itself may come first: the agent reports the byte it skipped)
        while True:
            try:
                if self._answer() == token:
                    break
            except RuntimeError:
                pass

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the guest agent closed the connection")
        self.buf += chunk

    def _answer(self):
        while b"\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line)
        if "error" in msg:
            raise RuntimeError(msg["error"].get("desc", str(msg["error"])))
        return msg.get("return")

    def call(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        return self._answer()

    def send_only(self, command, **arguments):
        """Commands that do not answer when they succeed (guest-shutdown)."""
        self.sock.sendall(json.dumps({"execute": command, "arguments": arguments}).encode() + b"\n")


def wait(path, seconds):
    end = time.time() + seconds
    while True:
        try:
            Agent(path, timeout=5).call("guest-ping")
            return 0
        except (OSError, ConnectionError, RuntimeError, ValueError):
            if time.time() > end:
                print(f"qga: no answer from the guest agent in {seconds} s", file=sys.stderr)
                return 1
            time.sleep(0.5)


def run(path, command, timeout=600):
    agent = Agent(path)
    pid = agent.call("guest-exec", path="/bin/sh", arg=["-c", command], **{"capture-output": True})["pid"]
    end = time.time() + timeout
    while True:
        st = agent.call("guest-exec-status", pid=pid)
        if st.get("exited"):
            break
        if time.time() > end:
            print(f"qga: timed out after {timeout} s: {command}", file=sys.stderr)
            return 124
        time.sleep(0.1)
    sys.stdout.buffer.write(base64.b64decode(st.get("out-data", "")))
    sys.stderr.buffer.write(base64.b64decode(st.get("err-data", "")))
    if st.get("out-truncated") or st.get("err-truncated"):
        print("qga: output truncated by the guest agent", file=sys.stderr)
    if "signal" in st:
        return 128 + st["signal"]
    return st.get("exitcode", 1)


def put(path, src, dst):
    agent = Agent(path)
    with open(src, "rb") as f:
        data = f.read()
    handle = agent.call("guest-file-open", path=dst, mode="w")
    try:
        for i in range(0, len(data), 48 * 1024):
            agent.call("guest-file-write", handle=handle, **{"buf-b64": base64.b64encode(data[i:i + 48 * 1024]).decode()})
    finally:
        agent.call("guest-file-close", handle=handle)
    return 0


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, what = argv[1], argv[2]
    if what == "wait":
        return wait(path, float(argv[3]))
    if what == "exec":
        return run(path, argv[3])
    if what == "put":
        return put(path, argv[3], argv[4])
    if what in ("reboot", "poweroff"):
        Agent(path).send_only("guest-shutdown", mode=what if what == "reboot" else "powerdown")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
