"""Bulk serving-CSR work for e2e/approver and bench/approver/run, straight over HTTPS with the
admin's client certificate (one keep-alive connection, Python's stdlib), the CSRs made by Python's
`cryptography` (not ours); a node's requests are the admin's impersonating it.

    kubeapi.py nodes PREFIX N BASE        N Nodes PREFIX-i, InternalIP BASE + i, Hostname PREFIX-i
    kubeapi.py node NAME ADDRESSES_JSON   one Node with those status.addresses
    kubeapi.py csrs PREFIX N NODEPREFIX BASE  N serving CSRs PREFIX-i, each created as the node
                                          NODEPREFIX-i for its IP BASE + i
    kubeapi.py stream PREFIX N NODE IP KILL_AT PID  N serving CSRs PREFIX-1..N of NODE for IP; after
                                          the KILL_AT-th, SIGKILL to PID; prints the kill's unix time
    kubeapi.py set NAME REFUSED_FILE      bench/approver's CSR set (SET below), names NAME-<case>;
                                          what the apiserver refuses at creation goes to REFUSED_FILE
    kubeapi.py describe                   the set's cases and what each spoofs
    kubeapi.py decided PREFIX             "decided total" over the CSRs whose name starts with PREFIX
    kubeapi.py outcomes PREFIX            one line per CSR: name, Approved/Denied/Pending, message
    kubeapi.py audit AUDIT_LOG PREFIX     one line per successful approval write: name, unix time
    kubeapi.py delete PREFIX              delete those CSRs

Env: E2E_SERVER, E2E_CA, E2E_WORK (the admin's pki/admin.{crt,key}).
"""

import base64
import datetime
import http.client
import ipaddress
import json
import os
import signal
import ssl
import sys
import time
import urllib.parse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

SIGNER = "kubernetes.io/kubelet-serving"
SERVING = ["digital signature", "server auth"]


class Api:
    def __init__(self):
        u = urllib.parse.urlparse(os.environ["E2E_SERVER"])
        ctx = ssl.create_default_context(cafile=os.environ["E2E_CA"])
        pki = os.path.join(os.environ["E2E_WORK"], "pki")
        ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)

    def call(self, method, path, body=None, headers=None, ok=(200, 201), status=False):
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        h.update(headers or {})
        self.conn.request(method, path, json.dumps(body) if body is not None else None, h)
        r = self.conn.getresponse()
        data = r.read()
        if status:
            return r.status, (json.loads(data) if data else None)
        if r.status not in ok:
            raise SystemExit("%s %s: %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data) if data else None


def key(kind):
    if kind == "p256":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "p521":
        return ec.generate_private_key(ec.SECP521R1())
    if kind == "rsa1024":
        return rsa.generate_private_key(public_exponent=65537, key_size=1024)
    raise ValueError(kind)


def csr_pem(cn, ips=(), dns=(), emails=(), kind="p256"):
    names = [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    names += [x509.DNSName(d) for d in dns] + [x509.RFC822Name(e) for e in emails]
    b = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                   x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
    if names:
        b = b.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return b.sign(key(kind), hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def create_csr(api, name, pem, requester, usages=SERVING, expiration=None, ok=(201,), refusals=None):
    """Create the CSR; with `refusals` (a dict), a refusal by the apiserver is recorded there
    under `name` (its status message) instead of ending the run."""
    spec = {"request": base64.b64encode(pem).decode(), "signerName": SIGNER, "usages": usages}
    if expiration:
        spec["expirationSeconds"] = expiration
    headers = {}
    if requester:
        headers = {"Impersonate-User": "system:node:" + requester, "Impersonate-Group": "system:nodes"}
    return api.call("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                    {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                     "metadata": {"name": name}, "spec": spec}, headers, ok, status=refusals is not None)


def create_node(api, name, addresses):
    api.call("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    api.call("PATCH", "/api/v1/nodes/%s/status" % name, {"status": {"addresses": addresses}},
             {"Content-Type": "application/merge-patch+json"})


def ip_plus(base, i):
    return str(ipaddress.ip_address(base) + i)


# The comparison's CSR set: node kbn-a (192.0.2.21, Hostname kbn-a) asks, unless said otherwise.
# (case, what it spoofs, requester, CN, IPs, DNS names, emails, key, usages, expirationSeconds)
A, B = "kbn-a", "kbn-b"
SET = [
    ("own", "nothing: its own InternalIP and Hostname", A, A, ["192.0.2.21"], [A], [], "p256", SERVING, None),
    ("pattern", "nothing: its name under the operator's domain", A, A, ["192.0.2.21"], [A + ".nodes.kubeboot.test"], [], "p256", SERVING, None),
    ("ip-of-b", "the IP of node kbn-b", A, A, ["192.0.2.22"], [], [], "p256", SERVING, None),
    ("ip-unused", "an unused IP of the node subnet", A, A, ["192.0.2.99"], [], [], "p256", SERVING, None),
    ("ip-outside", "an IP outside the node subnet", A, A, ["10.1.2.3"], [], [], "p256", SERVING, None),
    ("dns-of-a2", "the Hostname of node kbn-a2 (it starts with kbn-a)", A, A, ["192.0.2.21"], ["kbn-a2"], [], "p256", SERVING, None),
    ("dns-of-b", "the Hostname of node kbn-b", A, A, ["192.0.2.21"], [B], [], "p256", SERVING, None),
    ("dns-foreign", "a name outside the operator's domain that starts with the node's", A, A, ["192.0.2.21"], [A + ".evil.example"], [], "p256", SERVING, None),
    ("cn-of-b", "node kbn-b's CN, sent by kbn-a", A, B, ["192.0.2.22"], [], [], "p256", SERVING, None),
    ("not-a-node", "a requester that is not a node (the admin)", None, A, ["192.0.2.21"], [], [], "p256", SERVING, None),
    ("client-usages", "client usages on the serving signer", A, A, ["192.0.2.21"], [], [], "p256", ["digital signature", "client auth"], None),
    ("email", "an email SAN", A, A, ["192.0.2.21"], [], ["root@kbn-a"], "p256", SERVING, None),
    ("two-blocks", "a second PEM block after the CSR", A, A, ["192.0.2.21"], [], [], "p256", SERVING, None),
    ("rsa1024", "an RSA-1024 key", A, A, ["192.0.2.21"], [], [], "rsa1024", ["digital signature", "key encipherment", "server auth"], None),
    ("p521", "a P-521 key", A, A, ["192.0.2.21"], [], [], "p521", SERVING, None),
    ("400-days", "expirationSeconds of 400 days", A, A, ["192.0.2.21"], [], [], "p256", SERVING, 400 * 86400),
    ("no-addresses", "a Node without addresses (kbn-none)", "kbn-none", "kbn-none", ["192.0.2.23"], [], [], "p256", SERVING, None),
    ("no-node", "a node without a Node object (kbn-ghost)", "kbn-ghost", "kbn-ghost", ["192.0.2.24"], [], [], "p256", SERVING, None),
]


def csrs(api, prefix, prefix_of_names):
    items = api.call("GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests")["items"]
    return [o for o in items if o["metadata"]["name"].startswith(prefix_of_names)]


def state(o):
    conds = (o.get("status") or {}).get("conditions") or []
    for c in conds:
        if c["type"] in ("Approved", "Denied"):
            return c["type"], c.get("message", "")
    return "Pending", ""


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    api = Api()
    if cmd == "nodes":
        prefix, n, base = args[0], int(args[1]), args[2]
        for i in range(n):
            name = "%s-%d" % (prefix, i)
            create_node(api, name, [{"type": "InternalIP", "address": ip_plus(base, i)},
                                    {"type": "Hostname", "address": name}])
    elif cmd == "node":
        create_node(api, args[0], json.loads(args[1]))
    elif cmd == "csrs":
        prefix, n, nodes, base = args[0], int(args[1]), args[2], args[3]
        pems = [csr_pem("system:node:%s-%d" % (nodes, i), [ip_plus(base, i)]) for i in range(n)]
        for i, pem in enumerate(pems):
            create_csr(api, "%s-%d" % (prefix, i), pem, "%s-%d" % (nodes, i))
    elif cmd == "stream":
        prefix, n, node, ip, kill_at, pid = args[0], int(args[1]), args[2], args[3], int(args[4]), int(args[5])
        pem = csr_pem("system:node:" + node, [ip])
        for i in range(1, n + 1):
            create_csr(api, "%s-%d" % (prefix, i), pem, node)
            if i == kill_at:
                os.kill(pid, signal.SIGKILL)
                print("%.6f" % time.time(), flush=True)
    elif cmd == "set":
        prefix, refused = args[0], {}
        for case, _, requester, cn, ips, dns, emails, kind, usages, exp in SET:
            pem = csr_pem("system:node:" + cn, ips, dns, emails, kind)
            if case == "two-blocks":
                pem += csr_pem("system:node:" + B, ["192.0.2.22"])
            code, body = create_csr(api, "%s-%s" % (prefix, case), pem, requester, usages, exp, refusals=refused)
            if code != 201:
                refused[case] = (body or {}).get("message", str(code))
        # What the apiserver refused at creation never reaches an approver.
        with open(args[1], "w") as f:
            for case, msg in refused.items():
                f.write("%s\tRefused\t%s\n" % (case, msg.replace("\t", " ")))
    elif cmd == "describe":
        for case, what, *_ in SET:
            print("%s\t%s" % (case, what))
    elif cmd == "decided":
        items = csrs(api, None, args[0])
        print(sum(1 for o in items if state(o)[0] != "Pending"), len(items))
    elif cmd == "outcomes":
        for o in sorted(csrs(api, None, args[0]), key=lambda o: o["metadata"]["name"]):
            s, msg = state(o)
            print("%s\t%s\t%s" % (o["metadata"]["name"][len(args[0]):], s, msg.replace("\t", " ")))
    elif cmd == "audit":
        path, prefix = args
        for line in open(path):
            e = json.loads(line)
            o = e.get("objectRef") or {}
            if (o.get("subresource") == "approval" and e["verb"] == "update" and e["stage"] == "ResponseComplete"
                    and (e.get("responseStatus") or {}).get("code") == 200 and o.get("name", "").startswith(prefix)):
                t = datetime.datetime.fromisoformat(e["stageTimestamp"].replace("Z", "+00:00")).timestamp()
                print(o["name"], "%.6f" % t)
    elif cmd == "delete":
        for o in csrs(api, None, args[0]):
            api.call("DELETE", "/apis/certificates.k8s.io/v1/certificatesigningrequests/" + o["metadata"]["name"])
    else:
        raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    main()
