#!/usr/bin/env python3
"""bench/fleet's figures, from what nobody here wrote: the apiserver's audit log, the cluster's
CSR objects (read with kubectl, the requests decoded by Python's cryptography), the node files
(certificates checked against the client CA with cryptography), /proc.

  analyze.py side  --side kubeboot|upstream --n N --mode M --dir D --prefix P --audit LOG
                   --offset BYTES --client-ca CA --summary FILE --cpu SECONDS --t0 T --t1 T
                   --csrs CSRS_JSON
      one JSON line (the run's figures) on stdout; exit 1 when a node is not credentialed or
      has other than exactly one CSR
  analyze.py table RESULTS.jsonl [--markdown]
      the figures side by side, kubeboot ÷ upstream
"""
import argparse
import base64
import datetime
import json
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# (each kubeboot node says its own front-end: kubeboot-fleet-<i>/...)
UA = {"kubeboot": "kubeboot-fleet-", "upstream": "kubelet-bootstrap-fleet/"}


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def audit(path, offset, ua, t0, t1):
    """Requests of one side: by verb, 429s, the creates answered 201 (CSRs made), and each user
    agent's requests in the order received: (received, code)."""
    seen = {}
    with open(path, "rb") as f:
        f.seek(offset)
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if not e.get("userAgent", "").startswith(ua):
                continue
            t = ts(e["requestReceivedTimestamp"])
            if not t0 - 1 <= t <= t1 + 1:
                continue
            code = (e.get("responseStatus") or {}).get("code")
            prev = seen.get(e["auditID"])
            # ResponseStarted (watches) then ResponseComplete: keep the last word on it.
            if prev is None or e.get("stage") == "ResponseComplete":
                seen[e["auditID"]] = (e["verb"], code, e["userAgent"].split("/")[0], t)
    verbs, codes, by_ua = {}, {}, {}
    for verb, code, agent, t in seen.values():
        verbs[verb] = verbs.get(verb, 0) + 1
        codes[code] = codes.get(code, 0) + 1
        by_ua.setdefault(agent, []).append((t, code))
    for reqs in by_ua.values():
        reqs.sort()
    created = sum(1 for v, c, _, _ in seen.values() if v == "create" and c == 201)
    return len(seen), verbs, codes, created, by_ua


def retry_after_honoured(report, by_ua):
    """The apiserver's word on each node's waits: the k-th 429 the audit log shows for a node is
    the k-th `retry reason=server-asked` its runtime said (`retry_at` in the report: the second it
    would try again, its answer's second + Retry-After); the node's next request must be received
    no sooner. Returns (requests sooner than asked, 429s and lines that did not pair up)."""
    early = unpaired = 0
    for l in open(report):
        f = dict(kv.partition("=")[::2] for kv in l.split() if "=" in kv)
        due = [ts(x) for x in f.get("retry_at", "-").split(",") if x != "-"]
        reqs = by_ua.get(f.get("ua", "").rstrip("/"), [])
        pushed = [k for k, (_, code) in enumerate(reqs) if code == 429]
        unpaired += abs(len(pushed) - len(due))
        for k, at in zip(pushed, due):
            if k + 1 < len(reqs) and reqs[k + 1][0] < at:
                early += 1
    return early, unpaired


def csrs_per_node(csrs_json, prefix, n):
    """CSR objects per node name of this run (the CN of each request, read by cryptography)."""
    per = {f"{prefix}-{i}": 0 for i in range(n)}
    for o in json.load(open(csrs_json))["items"]:
        req = x509.load_pem_x509_csr(base64.b64decode(o["spec"]["request"]))
        cns = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        if len(cns) != 1 or not cns[0].value.startswith("system:node:"):
            continue
        name = cns[0].value[len("system:node:"):]
        if name in per:
            per[name] += 1
    return per


def credentialed(d, name, ca, now):
    """The node's kubelet-client-current.pem: issued by the client CA (signature checked), valid
    now, for system:node:<name> in system:nodes, with the key in the same file; and a node
    kubeconfig naming it."""
    pem = open(os.path.join(d, name, "pki", "kubelet-client-current.pem"), "rb").read()
    cert = x509.load_pem_x509_certificate(pem)
    key = serialization.load_pem_private_key(pem[pem.index(b"-----BEGIN", pem.index(b"-----END")):], None)
    ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
    assert cert.issuer == ca.subject
    assert cert.not_valid_before_utc.timestamp() <= now <= cert.not_valid_after_utc.timestamp()
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == [f"system:node:{name}"]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:nodes"]
    pub = serialization.PublicFormat.SubjectPublicKeyInfo
    enc = serialization.Encoding.DER
    assert key.public_key().public_bytes(enc, pub) == cert.public_key().public_bytes(enc, pub)
    kc = open(os.path.join(d, name, "kubelet.conf")).read()
    assert "kubelet-client-current.pem" in kc


def side(a):
    summary = {}
    line = open(a.summary).read().strip().splitlines()
    line = next((l for l in line if l.startswith("fleet: ")), "")
    for kv in line.split()[1:]:
        k, _, v = kv.partition("=")
        summary[k] = v
    ca = x509.load_pem_x509_certificate(open(a.client_ca, "rb").read())
    now = datetime.datetime.now(datetime.timezone.utc).timestamp()
    ok, bad = 0, []
    for i in range(a.n):
        name = f"{a.prefix}-{i}"
        try:
            credentialed(a.dir, name, ca, now)
            ok += 1
        except Exception as e:  # noqa: BLE001 - any failure means: not credentialed
            bad.append(f"{name}: {type(e).__name__} {e}")
    per = csrs_per_node(a.csrs, a.prefix, a.n)
    one_each = sum(1 for c in per.values() if c == 1)
    total_csrs = sum(per.values())
    reqs, verbs, codes, created, by_ua = audit(a.audit, a.offset, UA[a.side], a.t0, a.t1)
    report = os.path.join(os.path.dirname(a.summary), "report")
    early = unpaired = restarts = 0
    if os.path.exists(report):
        for l in open(report):
            f = dict(kv.partition("=")[::2] for kv in l.split() if "=" in kv)
            restarts += int(f.get("restarts", 0))
        if a.side == "kubeboot":
            early, unpaired = retry_after_honoured(report, by_ua)
    hwm = int(summary.get("vmhwm_kib", 0))
    r = {
        "side": a.side, "n": a.n, "mode": a.mode,
        "credentialed": ok, "csrs": total_csrs, "one_csr_each": one_each, "csrs_created_201": created,
        "requests": reqs, "requests_per_node": round(reqs / a.n, 2), "verbs": verbs,
        "status": {str(k): v for k, v in codes.items()},
        "status_429": codes.get(429, 0),
        "last_s": int(summary.get("last_ms", 0)) / 1000, "wall_s": int(summary.get("wall_ms", 0)) / 1000,
        "p50_s": int(summary.get("p50_ms", 0)) / 1000, "p90_s": int(summary.get("p90_ms", 0)) / 1000,
        "p99_s": int(summary.get("p99_ms", 0)) / 1000,
        "peak_rss_kib": hwm, "rss_per_node_kib": round(hwm / a.n, 1),
        "apiserver_cpu_s": a.cpu,
        "early_retries": early if a.side == "kubeboot" else None,
        "unpaired_429s": unpaired if a.side == "kubeboot" else None,
        "restarts": restarts if a.side == "upstream" else None,
        "driver": summary,
        "failures": bad[:5],
    }
    print(json.dumps(r))
    # (a kubeboot node that tried sooner than the server asked fails the run too)
    return 0 if ok == a.n and one_each == a.n and total_csrs == a.n and not early else 1


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.2f}" if v < 100 else f"{v:,.0f}"
    return f"{v:,}"


def ratio(k, u):
    if k is None or u is None or not u:
        return "–"
    return f"{k / u:.2f}"


ROWS = [
    ("nodes with valid credentials", "credentialed", True),
    ("CSR objects (exactly one per node)", "csrs", True),
    ("apiserver requests per node (audit, all verbs)", "requests_per_node", True),
    ("  by verb", "verbs", False),
    ("429 answers (audit)", "status_429", True),
    ("time from start to the last node credentialed, s", "last_s", True),
    ("time to credentials p50, s", "p50_s", True),
    ("time to credentials p90, s", "p90_s", True),
    ("time to credentials p99, s", "p99_s", True),
    ("peak RSS of the agent side, MiB", "peak_rss_mib", True),
    ("peak RSS per node, KiB", "rss_per_node_kib", True),
    ("apiserver CPU during the run, s", "apiserver_cpu_s", True),
]


def table(a):
    runs = [json.loads(l) for l in open(a.results) if l.strip()]
    keys = []
    for r in runs:
        r["peak_rss_mib"] = round(r["peak_rss_kib"] / 1024, 1)
        k = (r["n"], r["mode"])
        if k not in keys:
            keys.append(k)
    out = []
    for n, mode in keys:
        kb = next((r for r in runs if (r["n"], r["mode"], r["side"]) == (n, mode, "kubeboot")), None)
        up = next((r for r in runs if (r["n"], r["mode"], r["side"]) == (n, mode, "upstream")), None)
        title = {"plain": "", "restart": ", apiserver restarted when half the nodes were credentialed",
                 "pushback": ", APF tightened (429s)"}.get(mode, mode)
        out.append(f"#### N = {n}{title}")
        out.append("")
        out.append("| | kubeboot | upstream (kubelet code) | kubeboot ÷ upstream |")
        out.append("|---|---:|---:|---:|")
        for label, key, numeric in ROWS:
            kv = kb.get(key) if kb else None
            uv = up.get(key) if up else None
            if not numeric:
                show = lambda d: " ".join(f"{k}={v}" for k, v in sorted(d.items())) if d else "–"
                out.append(f"| {label} | {show(kv)} | {show(uv)} | |")
                continue
            out.append(f"| {label} | {fmt(kv)} | {fmt(uv)} | {ratio(kv, uv)} |")
        if mode == "pushback" or any(r and r.get("status_429") for r in (kb, up)):
            early = kb.get("early_retries") if kb else None
            unpaired = kb.get("unpaired_429s") if kb else None
            said = 'yes: 0 tries sooner than asked' if early == 0 else f'{fmt(early)} tries sooner than asked'
            if unpaired:
                said += f' ({fmt(unpaired)} 429s without a matching line)'
            out.append(f"| Retry-After honoured (audit: each node's next request after a 429) | {said} "
                       f"| by client-go's with_retry.go (not observable per node) | |")
        if up and up.get("restarts"):
            out.append(f"| LoadClientCert restarted after an error (as systemd restarts the kubelet) | – | {up['restarts']} | |")
        out.append("")
    print("\n".join(out))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("side")
    for f in ("side", "mode", "dir", "prefix", "audit", "client_ca", "summary", "csrs"):
        s.add_argument("--" + f.replace("_", "-"), dest=f, required=True)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--offset", type=int, required=True)
    s.add_argument("--cpu", type=float, required=True)
    s.add_argument("--t0", type=float, required=True)
    s.add_argument("--t1", type=float, required=True)
    t = sub.add_parser("table")
    t.add_argument("results")
    a = p.parse_args()
    if a.cmd == "side":
        sys.exit(side(a))
    table(a)


if __name__ == "__main__":
    main()
