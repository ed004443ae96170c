"""The soak's moving part (e2e/soak sets up and tears down; this runs): the agents as supervised
daemons, the faults at random from a printed seed, the invariants checked continuously, the
report. Python 3 standard library, plus `cryptography` (as e2e/lib.sh's csr_rows) to match a
certificate with its key.

    /usr/bin/python3 e2e/soak.py CONFIG.json

CONFIG (written by e2e/soak): work dir, cluster env, the nodes (agent, name, dir, command line,
proxy), the tools, the durations, the seed. Output: `soak ...` lines (faults, rotations,
violations, each with its time), then the summary; `WORK/result.json` and `WORK/record.md`.
Exit 0 when no invariant was violated (pending ones are reported, see SOAK_PENDING in e2e/soak).
"""

import base64
import collections
import concurrent.futures
import datetime
import glob
import json
import os
import random
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

CFG = json.load(open(sys.argv[1]))
W = CFG["work"]
T0 = time.time()
LOCK = threading.Lock()
STOP = threading.Event()


def now():
    return time.time()


def stamp(t=None):
    t = now() if t is None else t
    return "+%6.1fs %s" % (t - T0, datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S"))


def say(*parts):
    with LOCK:
        print("soak [%s]" % stamp(), *parts, flush=True)


# ------------------------------------------------------------------------------------------------
# Invariants: a violation is printed at once with its time and evidence, and fails the run.

VIOLATIONS = []
PENDING = set(CFG["pending"])  # invariants whose core rule has not landed: reported, not failing


def violation(inv, node, evidence):
    pending = inv in PENDING
    with LOCK:
        VIOLATIONS.append({"t": now() - T0, "invariant": inv, "node": node, "evidence": evidence, "pending": pending})
        tag = "PENDING" if pending else "VIOLATION"
        print("soak %s [%s] %s node=%s: %s" % (tag, stamp(), inv, node, evidence), flush=True)


# ------------------------------------------------------------------------------------------------
# The nodes: each agent runs as a daemon (run mode, --log-format json) under clockshift, and is
# started again 2 s after it exits, as systemd's Restart=always would.

class Node:
    def __init__(self, spec, index):
        self.__dict__.update(spec)
        self.index = index
        self.pki = os.path.join(self.fs, "pki")
        self.kubeconfig = os.path.join(self.fs, "kubelet.conf")
        self.proc = None  # clockshift
        self.pid = None  # the agent under it
        self.started = []  # (t, pid)
        self.exits = []  # (t, status, expected)
        self.expect_kill = 0.0  # until when an exit by SIGKILL is ours
        self.stopped = False  # SIGSTOPped by a fault
        self.lock = threading.Lock()  # one node fault at a time
        # what the agent's log said
        self.log_pos = 0
        self.events = collections.Counter()
        self.creates = 0
        self.rotations = 0
        self.bootstraps = 0
        self.last_step = ""
        self.last_line = 0.0  # when the harness read the agent's last line
        self.step_times = collections.defaultdict(list)
        self.bad_bootstraps = []  # bootstrap decisions while the apiserver still took the certificate
        # invariant state
        self.first_ok = None
        self.expired_since = None
        self.cur_target = None
        self.window = None  # (notBefore, notAfter) of the current pair, sampled every second
        self.tmp_seen = {}
        self.cache_seen_sleeping = 0
        self.whoami = collections.Counter()
        self.samples = []  # (t, pid, rss_kib, fds)
        self.clock = 0

    def start(self):
        with open(self.log, "ab") as out, open(self.err, "ab") as err:
            self.proc = subprocess.Popen([CFG["clockshift"], self.clockfile] + self.cmd, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.dir)
        self.pid = None
        for _ in range(100):
            try:
                kids = open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)).read().split()
            except OSError:
                kids = []
            if kids:
                self.pid = int(kids[0])
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.started.append((now(), self.pid))

    def supervise(self):
        while not STOP.is_set():
            self.start()
            while self.proc.poll() is None and not STOP.is_set():
                time.sleep(0.2)
            if STOP.is_set():
                return
            st = self.proc.returncode
            expected = st == -signal.SIGKILL and now() <= self.expect_kill
            self.exits.append((now(), st, expected))
            if not expected:
                tail = open(self.err, errors="replace").read()[-600:].strip().replace("\n", " | ")
                lines = open(self.log, errors="replace").read().splitlines()[-3:]
                # an exit while its clock is stepped is the clock rule's (not in the core yet)
                clocked = any(f["class"].startswith("clock-") for f in faults_touching(self, now() - 5, now()))
                violation("clock-keeps-identity" if clocked else "no-unexpected-exit", self.name,
                          "the agent exited with status %s; stderr: %s; last events: %s" % (st, tail or "-", " | ".join(lines)))
            time.sleep(2)

    def signal(self, sig):
        if self.pid:
            try:
                os.kill(self.pid, sig)
                return True
            except ProcessLookupError:
                return False
        return False

    def stop(self):
        self.signal(signal.SIGCONT)
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # clockshift forwards it
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.kill()
                self.proc.wait()

    def set_clock(self, offset):
        self.clock = offset
        tmp = self.clockfile + ".new"
        with open(tmp, "w") as f:
            f.write("%+d\n" % offset)
        os.rename(tmp, self.clockfile)

    def read_log(self):
        """New JSON events of the agent: counters, and the decisions the invariants look at."""
        try:
            with open(self.log, "rb") as f:
                f.seek(self.log_pos)
                data = f.read()
        except OSError:
            return
        cut = data.rfind(b"\n") + 1
        self.log_pos += cut
        t = now()
        for line in data[:cut].decode(errors="replace").splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            step = e.get("step", "?")
            self.events[step] += 1
            self.last_step = step
            self.last_line = t
            self.step_times[step].append(t)
            if step == "create":
                self.creates += 1
            elif step == "stored" and e.get("kind") == "rotate":
                self.rotations += 1
            elif step == "stored" and e.get("kind") == "bootstrap":
                self.bootstraps += 1
            elif step == "bootstrap" and e.get("reason") and self.first_ok is not None:
                # A fall back to the token by a node whose certificate the apiserver still takes
                # (real time inside its validity, with 2 s to spare: the line was written within
                # the last second, about the pair sampled then): the identity is thrown away on
                # the local clock's word. (rotation-unauthorized: the apiserver refused it.)
                nb_na = self.window
                if e["reason"] != "rotation-unauthorized" and nb_na and nb_na[0] + 2 <= t and t + 2 < nb_na[1]:
                    self.bad_bootstraps.append((t, e["reason"]))
                    violation("clock-keeps-identity", self.name,
                              "step=bootstrap reason=%s while the certificate is valid (notAfter %s, real now %s, agent clock %+ds)"
                              % (e["reason"], iso(nb_na[1]), iso(t), self.clock))

    def current_pem(self):
        return os.path.join(self.pki, "kubelet-client-current.pem")


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cert_window(path):
    try:
        c = x509.load_pem_x509_certificate(open(path, "rb").read())
    except (OSError, ValueError):
        return None
    utc = datetime.timezone.utc
    return (c.not_valid_before.replace(tzinfo=utc).timestamp(), c.not_valid_after.replace(tzinfo=utc).timestamp())


NODES = [Node(s, i) for i, s in enumerate(CFG["nodes"])]
BY_NAME = {n.name: n for n in NODES}
LIFE = CFG["life"]  # a node certificate's lifetime (signing duration + the signer's 5 min backdate)

# ------------------------------------------------------------------------------------------------
# Faults. Each is logged when it starts and ends; `ACTIVE` says which are on (for the outage
# allowances and the request rates).

ACTIVE = []  # dicts: class, node (None: every node), start, end (None: on)
HISTORY = []
FAULT_COUNTS = collections.Counter()


def fault_begin(cls, node, detail):
    f = {"class": cls, "node": node.name if node else None, "start": now(), "end": None, "detail": detail}
    with LOCK:
        ACTIVE.append(f)
        HISTORY.append(f)
        FAULT_COUNTS[cls] += 1
    say("fault start %s %s%s" % (cls, "node=%s " % node.name if node else "", detail))
    return f


def fault_end(f):
    f["end"] = now()
    with LOCK:
        ACTIVE.remove(f)
    say("fault end   %s %s(%.0fs)" % (f["class"], "node=%s " % f["node"] if f["node"] else "", f["end"] - f["start"]))


def faults_touching(node, t0, t1):
    """Faults on `node` or on every node that overlap [t0, t1]."""
    return [f for f in HISTORY if (f["node"] in (None, node.name)) and f["start"] <= t1 and (f["end"] or now()) >= t0]


def toxi(method, path, body=None):
    req = urllib.request.Request(CFG["toxiproxy_api"] + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def cluster(*args):
    env = dict(os.environ, E2E_WORK=CFG["cluster_work"])
    r = subprocess.run([CFG["cluster_sh"]] + list(args), env=env, capture_output=True, text=True)
    if r.returncode != 0:
        say("cluster.sh %s failed: %s" % (" ".join(args), r.stderr.strip()[-400:]))
    return r.returncode == 0


def sleep(secs):
    STOP.wait(secs)


NET_TOXICS = {
    "net-latency": lambda r: {"type": "latency", "attributes": {"latency": r.randint(300, 3000), "jitter": r.randint(0, 1000)}},
    "net-bandwidth": lambda r: {"type": "bandwidth", "attributes": {"rate": r.choice([1, 2, 5])}},
    "net-cut": lambda r: {"type": "limit_data", "attributes": {"bytes": r.randint(200, 8000)}},
    "net-reset": lambda r: {"type": "reset_peer", "attributes": {"timeout": r.randint(0, 2000)}},
    "net-half-open": lambda r: {"type": "timeout", "attributes": {"timeout": 0}},
}


def run_fault(cls, node, dur, r):
    """Inject one fault, hold it, undo it; the undo runs whatever happened in between."""
    f = None
    undo = []
    try:
        if cls in NET_TOXICS:
            toxic = dict(NET_TOXICS[cls](r), name="soak", stream="downstream", toxicity=1.0)
            f = fault_begin(cls, node, "toxic=%s %s for %ds" % (toxic["type"], json.dumps(toxic["attributes"]), dur))
            undo.append(lambda: toxi("DELETE", "/proxies/%s/toxics/soak" % node.proxy))
            toxi("POST", "/proxies/%s/toxics" % node.proxy, toxic)
            sleep(dur)
        elif cls == "net-refused":
            f = fault_begin(cls, node, "proxy disabled (connections refused) for %ds" % dur)
            undo.append(lambda: toxi("PATCH", "/proxies/%s" % node.proxy, {"enabled": True}))
            toxi("PATCH", "/proxies/%s" % node.proxy, {"enabled": False})
            sleep(dur)
        elif cls == "cp-apiserver-restart":
            f = fault_begin(cls, None, "kube-apiserver stopped for %ds" % dur)
            cluster("restart-apiserver", str(dur))
        elif cls == "cp-etcd-restart":
            f = fault_begin(cls, None, "etcd stopped for %ds" % dur)
            cluster("restart-etcd", str(dur))
        elif cls == "cp-kcm-restart":
            f = fault_begin(cls, None, "kube-controller-manager restarted (%ds down)" % dur)
            cluster("restart-controller-manager", str(dur))
        elif cls == "cp-kcm-outage":
            f = fault_begin(cls, None, "kube-controller-manager stopped for %ds (no approvals; a certificate lives %ds, "
                            "its rotation window is %ds)" % (dur, LIFE, LIFE // 5))
            cluster("restart-controller-manager", str(dur))
        elif cls == "node-sigkill":
            f = fault_begin(cls, node, "SIGKILL (pid %s); restarted 2 s later" % node.pid)
            node.expect_kill = now() + 30
            node.signal(signal.SIGKILL)
            sleep(3)
        elif cls == "node-sigstop":
            f = fault_begin(cls, node, "SIGSTOP (pid %s) for %ds, then SIGCONT" % (node.pid, dur))
            pid = node.pid
            node.stopped = True
            undo.append(lambda: (cont(pid), setattr(node, "stopped", False)))
            if pid:
                os.kill(pid, signal.SIGSTOP)
            sleep(dur)
        elif cls == "node-disk-full":
            filler = os.path.join(node.fs, "soak-filler")
            f = fault_begin(cls, node, "the cert dir's file system (tmpfs %s) filled for %ds" % (CFG["tmpfs_size"], dur))
            undo.append(lambda: os.path.exists(filler) and os.unlink(filler))
            fill(filler)
            sleep(dur)
        elif cls in ("clock-forward", "clock-back"):
            if cls == "clock-forward":
                off = LIFE + r.randint(60, 7200)  # past any current certificate's notAfter
            else:
                off = -r.randint(LIFE + 600, 86400)  # before any current certificate's notBefore
            # (SIGHUP after each step: the agent wakes and judges its files at the new clock, as
            # it would at its next deadline; the cluster's CAs start 2 days back: TLS validates)
            f = fault_begin(cls, node, "clock stepped %+ds for %ds, then back (SIGHUP after each step)" % (off, dur))
            undo.append(lambda: (node.set_clock(0), node.signal(signal.SIGHUP)))
            node.set_clock(off)
            node.signal(signal.SIGHUP)
            sleep(dur)
        else:
            raise ValueError(cls)
    finally:
        for u in undo:
            u()
        if f:
            fault_end(f)


def cont(pid):
    if pid:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def fill(path):
    """Write zeros to `path` until the file system is full (ENOSPC), to the last byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (65536, 512, 1):
            while True:
                try:
                    if os.write(fd, b"\0" * size) < size:
                        break
                except OSError:
                    break
    finally:
        os.close(fd)


# The classes, their scope and durations (seconds; the kube-controller-manager outage from the
# certificate lifetime: longer than the rotation window, the long form also past expiry).
CLASSES = ["net-latency", "net-bandwidth", "net-cut", "net-reset", "net-half-open", "net-refused",
           "cp-apiserver-restart", "cp-etcd-restart", "cp-kcm-restart", "cp-kcm-outage",
           "node-sigkill", "node-sigstop", "node-disk-full", "clock-forward", "clock-back"]
WEIGHTS = {"cp-kcm-outage": 0.25, "cp-apiserver-restart": 0.5, "cp-etcd-restart": 0.5, "cp-kcm-restart": 0.5}


def duration(cls, r, short):
    k = 0.5 if short else 1.0
    if cls == "cp-kcm-outage":
        # longer than the rotation window (70–90 % of the life: LIFE/5); the long form's also
        # past the expiry of a certificate issued just before it (a certificate lives LIFE − 300 s
        # after its issue)
        return LIFE // 5 + 30 if short else int(LIFE * 0.3) + 60
    if cls in ("cp-apiserver-restart", "cp-etcd-restart"):
        return r.randint(3, 12)
    if cls == "cp-kcm-restart":
        return 1
    if cls == "node-sigkill":
        return 3
    return int(r.randint(20, 90) * k)


def plan(seed, seconds, short):
    """Every class once, then (the long form) more at random, about one per 20 s; each at a random
    time where its resource (the control plane, or its node) is free: the longest first."""
    r = random.Random(seed)
    items = list(CLASSES)
    if not short:
        n = int(seconds / 20)
        pool = [c for c in CLASSES for _ in range(int(WEIGHTS.get(c, 1.0) * 4))]
        items += [r.choice(pool) for _ in range(max(0, n - len(CLASSES)))]
    items = [(cls, duration(cls, r, short)) for cls in items]
    items.sort(key=lambda x: -x[1])
    busy = collections.defaultdict(list)  # resource -> [(start, end)]
    out = []
    for cls, dur in items:
        # a control-plane fault holds the control plane while the component starts again too
        need = dur + (20 if cls.startswith("cp-") else 5)
        if cls.startswith("cp-"):
            cands = [None]
        else:
            cands = [n for n in NODES if not (cls == "node-sigkill" and n.index_in_agent == 0)]
        latest = max(5.0, seconds - need - 5)
        placed = None
        for _ in range(200):
            at, node = r.uniform(5, latest), r.choice(cands)
            key = node.name if node else "cp"
            if all(at + need <= a or at >= b for a, b in busy[key]):
                placed = (at, node)
                break
        if placed is None:  # no free slot drawn: the earliest gap that fits (else after the last)
            node = r.choice(cands)
            key = node.name if node else "cp"
            ends = sorted([5.0] + [b for _, b in busy[key]])
            fits = [e for e in ends if all(e + need <= a or e >= b for a, b in busy[key]) and e + need <= seconds]
            placed = ((fits or ends[-1:])[0], node)
        at, node = placed
        busy[node.name if node else "cp"].append((at, at + need))
        out.append((at, cls, node, dur, r.randint(0, 2**31)))
    out.sort(key=lambda x: x[0])
    return out


CP_LOCK = threading.Lock()


def fault_thread(at, cls, node, dur, fseed):
    r = random.Random(fseed)
    lock = CP_LOCK if node is None else node.lock
    sleep(max(0, FAULT_T0 + at - now()))
    if STOP.is_set():
        return
    with lock:  # one control-plane fault at a time; one fault per node at a time
        if STOP.is_set():
            return
        try:
            run_fault(cls, node, dur, r)
        except Exception as e:  # noqa: BLE001 (a harness error is reported, not hidden)
            say("fault %s failed: %r" % (cls, e))
            HARNESS_ERRORS.append("%s: %r" % (cls, e))


HARNESS_ERRORS = []

# ------------------------------------------------------------------------------------------------
# Checks


def whoami(node):
    """kubectl auth whoami with the node's kubeconfig (its credentials and CA; the apiserver's own
    address, not the node's fault-injecting proxy): ok, wrong-user, unauthorized, local (the
    credentials cannot be loaded) or unavailable (the apiserver did not answer)."""
    try:
        r = subprocess.run([CFG["kubectl"], "--kubeconfig", node.kubeconfig, "--server", CFG["server"],
                            "--request-timeout", "5s", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
                           capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "unavailable", "timeout"
    if r.returncode == 0:
        return ("ok" if r.stdout.strip() == "system:node:" + node.name else "wrong-user"), r.stdout.strip()
    err = r.stderr.strip()
    if "Unauthorized" in err or "must be logged in" in err:
        return "unauthorized", err
    if any(s in err for s in ("unable to read", "no such file", "private key", "PEM", "tls: failed to find",
                              "could not load", "failed to load", "does not match")):
        return "local", err
    return "unavailable", err


def check_whoami(node):
    if not os.path.exists(node.kubeconfig):
        return
    try:
        before = os.readlink(node.current_pem())
    except OSError:
        before = None
    state, detail = whoami(node)
    try:
        after = os.readlink(node.current_pem())
    except OSError:
        after = None
    if state != "ok" and before != after:
        node.whoami["changed"] += 1
        return  # the agent swapped its pair while kubectl read it: judged again in a second
    node.whoami[state] += 1
    t = now()
    if state == "ok":
        if node.first_ok is None:
            node.first_ok = t
            say("node %s credentialed (kubectl auth whoami = system:node:%s)" % (node.name, node.name))
        if node.expired_since is not None:
            say("node %s recovered after %.0fs with expired credentials" % (node.name, t - node.expired_since))
            node.expired_since = None
        return
    if node.first_ok is None or state == "unavailable":
        return
    if state in ("wrong-user", "local"):
        violation("keeps-credentials", node.name, "kubectl auth whoami: %s: %s" % (state, detail[:300]))
        return
    # 401: allowed only while the certificate has truly expired (real time) after an outage that
    # kept it from rotating, and for a bounded time after that outage ended.
    w = cert_window(node.current_pem())
    if not w or t < w[1]:
        violation("keeps-credentials", node.name, "401 for a certificate valid until %s: %s"
                  % (iso(w[1]) if w else "?", detail[:200]))
        return
    if node.expired_since is None:
        node.expired_since = t
        cause = faults_touching(node, w[1] - LIFE * 0.3, w[1])
        say("node %s: its certificate expired at %s (real time) during: %s" % (
            node.name, iso(w[1]), ", ".join(sorted({f["class"] for f in cause})) or "no fault"))
        if not cause:
            violation("keeps-credentials", node.name, "certificate expired at %s with no outage in its rotation window" % iso(w[1]))
    # Without credentials, nothing in its way for a minute, the agent must be trying (its longest
    # retry step is 32 s, each attempt writes lines): an agent asleep then waits on a time it
    # should not (e.g. one taken from a clock that has since stepped back).
    quiet = t - max(node.last_line, node.expired_since)
    calm = not faults_touching(node, t - 60, t)
    if calm and quiet > 60 and not node.stopped and getattr(node, "idle_reported", None) != node.expired_since:
        node.idle_reported = node.expired_since
        violation("no-idle-without-credentials", node.name,
                  "expired since %s, no fault for 60 s, no line from the agent for %.0fs (last: step=%s)"
                  % (iso(node.expired_since), quiet, node.last_step))
    open_faults = [f for f in faults_touching(node, t, t) if f["end"] is None]
    last_end = max([f["end"] for f in faults_touching(node, node.expired_since - LIFE, t) if f["end"]] or [node.expired_since])
    if not open_faults and t - max(last_end, node.expired_since) > CFG["recover_bound"]:
        violation("recovers-after-outage", node.name, "credentials expired since %s, outage over for %.0fs (bound %ds)"
                  % (iso(node.expired_since), t - last_end, CFG["recover_bound"]))
        node.expired_since = t  # report again only after another bound


PAIR_RE = re.compile(r"^kubelet-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$")


def check_files(node):
    try:
        names = os.listdir(node.pki)
    except FileNotFoundError:
        return
    t = now()
    # no temporary file left: a .kubeboot-tmp or the swap's -updated.pem seen in two samples 1 s apart
    for n in names:
        if n.endswith(".kubeboot-tmp") or n == "kubelet-client-updated.pem":
            p = os.path.join(node.pki, n)
            try:
                ino = os.lstat(p).st_ino
            except FileNotFoundError:
                continue
            first = node.tmp_seen.setdefault((n, ino), t)
            if t - first >= 5 and not node.stopped:
                violation("no-stray-temp", node.name, "%s present for %.0fs" % (n, t - first))
                node.tmp_seen[(n, ino)] = t + 3600
    live = set()
    for n in names:
        try:
            live.add((n, os.lstat(os.path.join(node.pki, n)).st_ino))
        except FileNotFoundError:
            pass
    node.tmp_seen = {k: v for k, v in node.tmp_seen.items() if k in live}
    # the key cache outlives a bootstrap only while one is under way
    if "kubelet-client.key.tmp" in names and node.last_step == "sleep" and node.first_ok is not None:
        node.cache_seen_sleeping += 1
        if node.cache_seen_sleeping == 5:
            violation("no-stray-temp", node.name, "kubelet-client.key.tmp beside valid credentials while the agent sleeps")
    else:
        node.cache_seen_sleeping = 0
    pairs = sorted(n for n in names if PAIR_RE.match(n))
    if len(pairs) > CFG["max_pairs"]:
        if not getattr(node, "pairs_reported", 0) or len(pairs) >= node.pairs_reported * 2:
            node.pairs_reported = len(pairs)
            violation("old-pairs-bounded", node.name, "%d pairs in the cert dir (bound %d): %s ... %s"
                      % (len(pairs), CFG["max_pairs"], pairs[0], pairs[-1]))
    # the current pair: a certificate for this node that matches its key
    cur = node.current_pem()
    try:
        target = os.readlink(cur)
    except OSError:
        if node.first_ok is not None:
            violation("keeps-credentials", node.name, "kubelet-client-current.pem is gone")
        return
    if target != node.cur_target:
        node.cur_target = target
        node.window = cert_window(cur)
        problem = pair_problem(cur, node.name)
        if problem:
            violation("pair-matches-key", node.name, "%s: %s" % (os.path.basename(target), problem))


def pair_problem(path, name):
    try:
        data = open(path, "rb").read()
    except OSError as e:
        return "unreadable: %s" % e
    blocks = re.findall(rb"-----BEGIN ([A-Z ]+)-----.*?-----END \1-----", data, re.S)
    certs = re.findall(rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", data, re.S)
    keys = re.findall(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", data, re.S)
    if not certs or len(keys) != 1:
        return "%d certificates, %d keys (%s)" % (len(certs), len(keys), [b.decode() for b in blocks])
    try:
        c = x509.load_pem_x509_certificate(certs[0])
        k = serialization.load_pem_private_key(keys[0], None)
    except ValueError as e:
        return "does not parse: %s" % e
    pub = lambda x: x.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if pub(c.public_key()) != pub(k.public_key()):
        return "the certificate does not match the key"
    cn = c.subject.rfc4514_string()
    if "CN=system:node:%s" % name not in cn:
        return "subject %s" % cn
    return None


def sample(node):
    pid = node.pid
    # (not in its first 10 s: clockshift's child is sampled before its exec otherwise)
    if not pid or not node.started or now() - node.started[-1][0] < 10:
        return
    try:
        status = open("/proc/%d/status" % pid).read()
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        fds = len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, AttributeError):
        return
    node.samples.append((now(), pid, rss, fds))
    # continuously: a process that grew far past its own warm-up figures
    base = warm_base(node, pid)
    if base and (rss > base[0] * 1.5 + 8192 or fds > base[1] + 10) and not getattr(node, "grew_reported", False):
        node.grew_reported = True
        violation("flat-rss-fds", node.name, "pid %d: RSS %d KiB, %d fds; after warm-up %d KiB, %d fds" % (pid, rss, fds, *base))


def warm_base(node, pid):
    """Max RSS and fds of `pid` in the warm-up window (20–40 % of the fault phase)."""
    lo, hi = FAULT_T0 + 0.2 * CFG["seconds"], FAULT_T0 + 0.4 * CFG["seconds"]
    s = [(r, f) for (t, p, r, f) in node.samples if p == pid and lo <= t <= hi]
    if not s or now() < hi:
        return None
    return (max(r for r, _ in s), max(f for _, f in s))


# CSRs: every one seen in the API (polled; the controller manager's cleaner removes issued ones
# after an hour), against the creates each agent logged.
CSRS = {}


def api_get(path):
    ctx = ssl.create_default_context(cafile=CFG["ca"])
    ctx.load_cert_chain(CFG["admin_cert"], CFG["admin_key"])
    with urllib.request.urlopen(urllib.request.Request(CFG["server"] + path), context=ctx, timeout=10) as r:
        return json.load(r)


def poll_csrs():
    try:
        items = api_get("/apis/certificates.k8s.io/v1/certificatesigningrequests")["items"]
    except Exception:  # noqa: BLE001 (the apiserver may be restarting)
        return False
    for o in items:
        name = o["metadata"]["name"]
        if name in CSRS:
            CSRS[name]["issued"] = bool(o.get("status", {}).get("certificate"))
            continue
        try:
            req = x509.load_pem_x509_csr(base64.b64decode(o["spec"]["request"]))
            cn = ",".join(a.value for a in req.subject.get_attributes_for_oid(NameOID.COMMON_NAME))
        except ValueError:
            cn = "?"
        CSRS[name] = {"cn": cn, "user": o["spec"].get("username"), "created": o["metadata"]["creationTimestamp"],
                      "issued": bool(o.get("status", {}).get("certificate"))}
    return True


def csrs_of(node):
    return [n for n, c in CSRS.items() if c["cn"] == "system:node:" + node.name]


def check_csrs():
    # The API first, then the logs: an agent logs its create before it sends it, so every CSR the
    # poll returned has its line in the log by now.
    if not poll_csrs():
        return
    for node in NODES:
        node.read_log()
    for node in NODES:
        n = len(csrs_of(node))
        if n > node.creates and n > getattr(node, "csr_reported", 0):
            node.csr_reported = n
            violation("one-csr-per-attempt", node.name, "%d CSRs in the API, %d creates logged by the agent" % (n, node.creates))


# Requests per minute per node: connections its proxy accepted (toxiproxy's log) and requests
# the apiserver saw from its certificate (the audit log).
RATE = {"proxy": collections.defaultdict(collections.deque), "audit": collections.defaultdict(collections.deque)}
RATE_MAX = collections.defaultdict(lambda: {"proxy": 0, "audit": 0, "proxy_outage": 0, "audit_outage": 0})
LOGPOS = {"proxy": 0, "audit": 0}
PROXY_NODE = {}


def tail(path, key):
    try:
        with open(path, "rb") as f:
            f.seek(LOGPOS[key])
            data = f.read()
    except OSError:
        return []
    cut = data.rfind(b"\n") + 1
    LOGPOS[key] += cut
    return data[:cut].decode(errors="replace").splitlines()


def check_rates():
    t = now()
    for line in tail(CFG["toxiproxy_log"], "proxy"):
        if "Accepted client" in line:
            try:
                name = json.loads(line)["name"]
            except (ValueError, KeyError):
                continue
            if name in PROXY_NODE:
                RATE["proxy"][PROXY_NODE[name]].append(t)
    for line in tail(CFG["audit_log"], "audit"):
        if '"ResponseComplete"' not in line or '"userAgent":"kubeboot-' not in line:
            continue  # (kubectl auth whoami with the node's credentials is the soak's, not the agent's)
        m = re.search(r'"username":"system:node:([^"]+)"', line)
        if m and m.group(1) in BY_NAME:
            RATE["audit"][m.group(1)].append(t)
    for node in NODES:
        for src in ("proxy", "audit"):
            q = RATE[src][node.name]
            while q and q[0] < t - 60:
                q.popleft()
            n = len(q)
            m = RATE_MAX[node.name]
            m[src] = max(m[src], n)
            outage = any(f["end"] is None for f in faults_touching(node, t - 60, t))
            if outage:
                m[src + "_outage"] = max(m[src + "_outage"], n)
            if n > CFG["rate_bound"] and not getattr(node, "rate_reported_" + src, False):
                setattr(node, "rate_reported_" + src, True)
                violation("bounded-request-rate", node.name, "%d %s in the last 60 s (bound %d)"
                          % (n, "connections at its proxy" if src == "proxy" else "requests from its certificate (audit)", CFG["rate_bound"]))


def check_panics():
    for node in NODES:
        try:
            err = open(node.err, errors="replace").read()
        except OSError:
            continue
        for pat in ("panicked at", "panic:", "SIGSEGV", "AddressSanitizer", "fatal error:", "double free"):
            if pat in err and not getattr(node, "panic_reported", False):
                node.panic_reported = True
                i = err.index(pat)
                violation("no-panic", node.name, err[max(0, i - 200):i + 300].replace("\n", " | "))


def monitor():
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    tick = 0
    while not STOP.is_set():
        t = now()
        try:
            checks(pool, tick)
        except Exception as e:  # noqa: BLE001 (a harness error is reported, and the checks go on)
            import traceback
            say("harness error in the checks: %r" % e)
            traceback.print_exc()
            HARNESS_ERRORS.append("checks: %r" % e)
        tick += 1
        STOP.wait(max(0, 1 - (now() - t)))


def checks(pool, tick):
    """One second of checks: whoami (every whoami_interval s) and the files; every 5 s RSS/fds,
    CSRs and panics; every 10 s the request rates."""
    for node in NODES:
        node.read_log()  # judged against the pair of the previous second (node.window)
        check_files(node)  # then the pair of this second
    if tick % CFG["whoami_interval"] == 0:
        list(pool.map(check_whoami, NODES))
    if tick % 5 == 0:
        for node in NODES:
            sample(node)
        check_csrs()
        check_panics()
    if tick % 10 == 0:
        check_rates()


# ------------------------------------------------------------------------------------------------


def main():
    global FAULT_T0, FAULT_END
    for n in NODES:
        PROXY_NODE[n.proxy] = n.name
    say("seed %d; %d nodes (%s); certificates live %ds; faults for %ds; %s" % (
        CFG["seed"], len(NODES), ", ".join(n.name for n in NODES), LIFE, CFG["seconds"],
        "pending (reported, not failing): " + " ".join(sorted(PENDING)) if PENDING else "no pending invariant"))
    for n in NODES:
        n.set_clock(0)
        threading.Thread(target=n.supervise, daemon=True).start()
    mon = threading.Thread(target=monitor, daemon=True)
    mon.start()
    # every node bootstraps first (its first credentials), then the faults
    deadline = now() + 180
    while now() < deadline and any(n.first_ok is None for n in NODES):
        time.sleep(1)
    missing = [n.name for n in NODES if n.first_ok is None]
    if missing:
        violation("bootstraps", ",".join(missing), "no credentials 180 s after start")
    FAULT_T0 = now()
    FAULT_END = FAULT_T0 + CFG["seconds"]
    schedule = plan(CFG["seed"], CFG["seconds"], CFG["short"])
    say("plan (seed %d): %d faults: %s" % (CFG["seed"], len(schedule), ", ".join(
        "%s@%.0fs%s" % (c, a, "/" + n.name if n else "") for a, c, n, _, _ in schedule)))
    threads = [threading.Thread(target=fault_thread, args=s, daemon=True) for s in schedule]
    for th in threads:
        th.start()
    while now() < FAULT_END:
        time.sleep(1)
    # the faults end; then a quiet tail in which every node must be (or become) credentialed
    for th in threads:
        th.join()  # a fault whose resource was busy may end after the phase
    say("faults over; quiet for %ds" % CFG["tail"])
    time.sleep(CFG["tail"])
    # a node still without usable credentials has until the recovery bound after its last fault
    # (the tail may be shorter than the bound: the short form's)
    late = {}
    for n in NODES:
        last = max([f["end"] for f in faults_touching(n, 0, now()) if f["end"]] or [FAULT_T0])
        late[n.name] = last + CFG["recover_bound"]
    pending = list(NODES)
    while pending:
        again = []
        for n in pending:
            st, d = whoami(n)
            if st == "ok":
                continue
            if now() < late[n.name]:
                again.append(n)
                continue
            violation("keeps-credentials", n.name, "at the end: kubectl auth whoami: %s %s" % (st, d[:200]))
        if again and again != pending:
            say("waiting for %s (the recovery bound after their last fault)" % ", ".join(n.name for n in again))
        pending = again
        if pending:
            time.sleep(2)
    STOP.set()
    mon.join(timeout=30)
    for n in NODES:
        n.stop()
        n.read_log()
    check_csrs_final()
    report()
    return 0 if not [v for v in VIOLATIONS if not v["pending"]] and not HARNESS_ERRORS else 1


def check_csrs_final():
    poll_csrs()
    for node in NODES:
        node.read_log()
    for node in NODES:
        n = len(csrs_of(node))
        if n > node.creates:
            violation("one-csr-per-attempt", node.name, "at the end: %d CSRs, %d creates logged" % (n, node.creates))


def flatness(node):
    """RSS and fds of the node's longest-lived process: at its first sample, after warm-up
    (max over 20–40 % of the fault phase) and at the end (max over the last 20 %)."""
    by_pid = collections.defaultdict(list)
    for s in node.samples:
        by_pid[s[1]].append(s)
    if not by_pid:
        return None
    pid, s = max(by_pid.items(), key=lambda kv: kv[1][-1][0] - kv[1][0][0])
    span = s[-1][0] - s[0][0]
    lo, hi = FAULT_T0 + 0.2 * CFG["seconds"], FAULT_T0 + 0.4 * CFG["seconds"]
    end_lo = s[-1][0] - 0.2 * CFG["seconds"]
    warm = [x for x in s if lo <= x[0] <= hi]
    last = [x for x in s if x[0] >= end_lo]
    out = {"pid": pid, "lived": round(span), "start": (s[0][2], s[0][3]), "end": (s[-1][2], s[-1][3])}
    if warm and last and s[0][0] <= lo and s[-1][0] >= FAULT_END:
        out["warm"] = (max(x[2] for x in warm), max(x[3] for x in warm))
        out["last"] = (max(x[2] for x in last), max(x[3] for x in last))
    return out


def report():
    t_end = now()
    rss_lines = []
    for node in NODES:
        fl = flatness(node)
        node.flat = fl
        if fl and "warm" in fl:
            (wr, wf), (lr, lf) = fl["warm"], fl["last"]
            ok = lr <= wr * (1 + CFG["rss_tolerance"]) + CFG["rss_slack_kib"] and lf <= wf + CFG["fd_slack"]
            if not ok:
                violation("flat-rss-fds", node.name, "pid %d: after warm-up %d KiB / %d fds, at the end %d KiB / %d fds"
                          % (fl["pid"], wr, wf, lr, lf))
    total_rot = sum(n.rotations for n in NODES)
    per_agent = collections.Counter()
    for n in NODES:
        per_agent[n.agent] += n.rotations
    hard = [v for v in VIOLATIONS if not v["pending"]]
    pend = [v for v in VIOLATIONS if v["pending"]]
    lines = []
    lines.append("| | %s |" % " | ".join(n.name for n in NODES))
    lines.append("|---|%s|" % "|".join("---" for _ in NODES))
    def row(label, f):
        lines.append("| %s | %s |" % (label, " | ".join(str(f(n)) for n in NODES)))
    row("rotations (stored kind=rotate)", lambda n: n.rotations)
    row("bootstraps (stored kind=bootstrap)", lambda n: n.bootstraps)
    row("creates logged / CSRs in the API", lambda n: "%d / %d" % (n.creates, len(csrs_of(n))))
    row("CSRs issued but never stored by the node", lambda n: sum(1 for c in csrs_of(n) if CSRS[c]["issued"]) - n.rotations - n.bootstraps)
    row("retries logged", lambda n: n.events["retry"])
    row("exits (ours: SIGKILL)", lambda n: "%d (%d)" % (len(n.exits), sum(1 for e in n.exits if e[2])))
    row("whoami ok / 401 / unavailable", lambda n: "%d / %d / %d" % (n.whoami["ok"], n.whoami["unauthorized"], n.whoami["unavailable"]))
    row("max conn/min at its proxy (in an outage)", lambda n: "%d (%d)" % (RATE_MAX[n.name]["proxy"], RATE_MAX[n.name]["proxy_outage"]))
    row("max req/min from its cert, audit (in an outage)", lambda n: "%d (%d)" % (RATE_MAX[n.name]["audit"], RATE_MAX[n.name]["audit_outage"]))
    row("pairs in the cert dir at the end", lambda n: len([x for x in os.listdir(n.pki) if PAIR_RE.match(x)]) if os.path.isdir(n.pki) else 0)
    def rf(n):
        fl = n.flat
        if not fl:
            return "-"
        s = "%d KiB/%d fds → %d KiB/%d fds (pid %d, %ds)" % (fl["start"][0], fl["start"][1], fl["end"][0], fl["end"][1], fl["pid"], fl["lived"])
        if "warm" in fl:
            s += "; warm %d/%d, last %d/%d" % (fl["warm"][0], fl["warm"][1], fl["last"][0], fl["last"][1])
        return s
    row("RSS/fds start → end", rf)
    faults = ", ".join("%s %d" % (c, FAULT_COUNTS[c]) for c in CLASSES)
    missing = [c for c in CLASSES if not FAULT_COUNTS[c]]
    if missing and CFG["short"]:
        HARNESS_ERRORS.append("fault classes never injected: %s" % " ".join(missing))
    summary = {
        "seed": CFG["seed"], "seconds": round(t_end - T0), "fault_seconds": CFG["seconds"], "nodes": len(NODES),
        "life": LIFE, "rotations": total_rot, "rotations_per_agent": dict(per_agent),
        "faults": dict(FAULT_COUNTS), "faults_total": sum(FAULT_COUNTS.values()),
        "violations": hard, "pending": pend, "harness_errors": HARNESS_ERRORS,
        "whoami_interval": CFG["whoami_interval"],
    }
    json.dump(summary, open(os.path.join(W, "result.json"), "w"), indent=1, default=str)
    md = []
    md.append("Faults (%d): %s." % (sum(FAULT_COUNTS.values()), faults))
    md.append("")
    md.append("Rotations: %d (%s); invariant violations: %d; pending (core rule not landed): %d."
              % (total_rot, ", ".join("%s %d" % kv for kv in sorted(per_agent.items())), len(hard), len(pend)))
    md.append("")
    md += lines
    if hard:
        md.append("")
        for v in hard:
            md.append("- VIOLATION +%.0fs %s %s: %s" % (v["t"], v["invariant"], v["node"], v["evidence"][:400]))
    by_inv = collections.defaultdict(list)
    for v in pend:
        by_inv[v["invariant"]].append(v)
    for inv, vs in sorted(by_inv.items()):
        md.append("")
        md.append("PENDING `%s` (the core rule has not landed): %d times on %d nodes; the first:" % (
            inv, len(vs), len({v["node"] for v in vs})))
        for v in vs[:3]:
            md.append("- +%.0fs %s: %s" % (v["t"], v["node"], v["evidence"][:300]))
    if HARNESS_ERRORS:
        md.append("")
        md += ["- harness error: %s" % e for e in HARNESS_ERRORS]
    open(os.path.join(W, "record.md"), "w").write("\n".join(md) + "\n")
    print()
    print("\n".join(md))
    print()
    for e in HARNESS_ERRORS:
        print("soak harness error: %s" % e)
    print("soak: seed %d, %d faults, %d rotations, %d violations, %d pending" % (
        CFG["seed"], sum(FAULT_COUNTS.values()), total_rot, len(hard), len(pend)))


if __name__ == "__main__":
    FAULT_T0 = FAULT_END = 0.0
    # SIGTERM (test.sh ending its background stages) stops the agents too: they run in sessions
    # of their own
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rc = 1
    try:
        rc = main()
    finally:
        STOP.set()
        for n in NODES:
            try:
                n.stop()
            except Exception:  # noqa: BLE001
                pass
    sys.exit(rc)
