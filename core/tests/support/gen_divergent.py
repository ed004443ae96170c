#!/usr/bin/python3
"""Generate the path-validation vectors of core/tests/verify_peers.rs: chains on which X.509
validators are known to differ (Go's crypto/x509, rustls-webpki, OpenSSL, kubeboot).

Usage: gen_divergent.py OUTDIR NOW_UNIX_SECONDS

OUTDIR must already contain leaf.key (the node's P-256 key, generated with openssl). Writes one
directory per case: leaf.pem (the leaf, then the intermediates), ca.pem (the CA bundle) and
profile (`client` or `serving`). Every leaf carries the node's subject, key and usages, so that
only the property under test differs from a plain, valid chain. Certificates that Python
`cryptography` refuses to build (negative serials, unique identifiers, v1) are built from its TBS
edited as DER and signed again with the issuer's key.
"""
import datetime
import ipaddress
import os
import sys
import warnings

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

out, now = sys.argv[1], int(sys.argv[2])
NOW = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).replace(tzinfo=None)
DAY = datetime.timedelta(days=1)
LEAF = serialization.load_pem_private_key(open(os.path.join(out, "leaf.key"), "rb").read(), None)
NODE_SUBJECT = x509.Name([
    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
    x509.NameAttribute(NameOID.COMMON_NAME, "system:node:node-1"),
])
SANS = [x509.DNSName("node-1"), x509.IPAddress(ipaddress.ip_address("10.0.0.1"))]


def cn(value):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, value)])


def key():
    return ec.generate_private_key(ec.SECP256R1())


class Issuer:
    def __init__(self, cert, key):
        self.cert, self.key = cert, key


def build(subject, pub, issuer, *, ca, path_len=None, eku=None, ku=None, nb=None, na=None,
          sans=None, extra=(), aki=True, ski=True, serial=None):
    """A certificate signed by `issuer` (an Issuer, or None: self-signed with key `pub`)."""
    b = (x509.CertificateBuilder()
         .subject_name(subject)
         .issuer_name(issuer.cert.subject if issuer else subject)
         .public_key(pub.public_key())
         .serial_number(serial or x509.random_serial_number())
         .not_valid_before(nb or NOW - 10 * DAY)
         .not_valid_after(na or NOW + 365 * DAY))
    b = b.add_extension(x509.BasicConstraints(ca=ca, path_length=path_len), critical=True)
    if ku is None:
        ku = "ca" if ca else "ds"
    if ku == "ca":
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                            critical=True)
    elif ku == "ds":
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                            critical=True)
    elif ku == "no-cert-sign":
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, False, True, False, False),
                            critical=True)
    if eku:
        b = b.add_extension(x509.ExtendedKeyUsage(eku), critical=False)
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    names = set()
    for ext, critical in extra:
        names.add(type(ext).__name__)
        b = b.add_extension(ext, critical=critical)
    if ski and "SubjectKeyIdentifier" not in names:
        b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(pub.public_key()), critical=False)
    signer = issuer.key if issuer else pub
    if aki and issuer and "AuthorityKeyIdentifier" not in names:
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
                            critical=False)
    return b.sign(signer, hashes.SHA256())


def root(name, **kw):
    k = key()
    return Issuer(build(cn(name), k, None, ca=True, **kw), k)


def inter(name, parent, **kw):
    k = key()
    return Issuer(build(cn(name), k, parent, ca=True, **kw), k)


def leaf(issuer, profile="client", **kw):
    eku = kw.pop("eku", [ExtendedKeyUsageOID.SERVER_AUTH if profile == "serving"
                         else ExtendedKeyUsageOID.CLIENT_AUTH])
    sans = kw.pop("sans", SANS if profile == "serving" else None)
    return build(NODE_SUBJECT, LEAF, issuer, ca=False, eku=eku, sans=sans, **kw)


# --- DER, for the certificates `cryptography` will not build -------------------------------------

def tlv(der, at=0):
    """(tag, header length, content length) of the TLV at `at`."""
    tag, first = der[at], der[at + 1]
    if first < 0x80:
        return tag, 2, first
    n = first & 0x7f
    return tag, 2 + n, int.from_bytes(der[at + 2:at + 2 + n], "big")


def children(der):
    """The TLVs (whole encodings) inside a constructed value's contents."""
    out, at = [], 0
    while at < len(der):
        _, h, n = tlv(der, at)
        out.append(der[at:at + h + n])
        at += h + n
    return out


def encode(tag, content):
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    length = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length)]) + length + content


def contents(whole):
    _, h, n = tlv(whole)
    return whole[h:h + n]


def resign(cert, issuer_key, edit):
    """`cert` with its TBS fields (a list of TLVs) edited by `edit`, signed again."""
    tbs = cert.tbs_certificate_bytes
    fields = edit(children(contents(tbs)))
    new_tbs = encode(0x30, b"".join(fields))
    sig = issuer_key.sign(new_tbs, ec.ECDSA(hashes.SHA256()))
    alg = children(contents(cert.public_bytes(serialization.Encoding.DER)))[1]
    der = encode(0x30, new_tbs + alg + encode(0x03, b"\x00" + sig))
    with warnings.catch_warnings():  # the negative serial: deprecated, still loaded
        warnings.simplefilter("ignore")
        return x509.load_der_x509_certificate(der)


def with_unique_ids(fields):
    # [0] version, serial, signature, issuer, validity, subject, spki, [1] issuerUID, [2]
    # subjectUID, [3] extensions.
    return fields[:7] + [encode(0x81, b"\x00\x01\x02"), encode(0x82, b"\x00\x03\x04")] + fields[7:]


def negative_serial(fields):
    return fields[:1] + [encode(0x02, b"\xff\x01")] + fields[2:]


def as_v1(fields):
    # No version (v1), no extensions.
    return fields[1:7]


# --- cases ---------------------------------------------------------------------------------------

def write(case, profile, chain, cas):
    d = os.path.join(out, case)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "leaf.pem"), "wb") as f:
        for c in chain:
            f.write(c.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(d, "ca.pem"), "wb") as f:
        for c in cas:
            f.write(c.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(d, "profile"), "w") as f:
        f.write(profile)


r = root("root")
write("plain", "client", [leaf(r)], [r.cert])
i = inter("intermediate", r)
write("plain_chain", "client", [leaf(i), i.cert], [r.cert])

# Intermediates' extendedKeyUsage (Go: each certificate of the chain must allow the usage;
# anyExtendedKeyUsage allows every usage).
i_any = inter("intermediate-any", r, eku=[ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE])
write("inter_eku_any", "client", [leaf(i_any), i_any.cert], [r.cert])
i_srv = inter("intermediate-server", r, eku=[ExtendedKeyUsageOID.SERVER_AUTH])
write("inter_eku_server_only", "client", [leaf(i_srv), i_srv.cert], [r.cert])
i_cli = inter("intermediate-client", r, eku=[ExtendedKeyUsageOID.CLIENT_AUTH])
write("inter_eku_client", "client", [leaf(i_cli), i_cli.cert], [r.cert])

# The leaf's own extendedKeyUsage.
write("leaf_no_eku", "client", [leaf(r, eku=None)], [r.cert])
write("leaf_eku_any", "client", [leaf(r, eku=[ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE])], [r.cert])

# Times before 1970 (UTCTime 19xx).
old = datetime.datetime(1969, 6, 1)
write("leaf_not_before_1969", "client", [leaf(r, nb=old)], [r.cert])
i_old = inter("intermediate-1969", r, nb=old)
write("inter_not_before_1969", "client", [leaf(i_old), i_old.cert], [r.cert])
r_old = root("root-1969", nb=old)
write("ca_not_before_1969", "client", [leaf(r_old)], [r_old.cert])

# The CA's validity and pathLenConstraint (a trust anchor of webpki has neither).
r_exp = root("root-expired", nb=NOW - 400 * DAY, na=NOW - DAY)
write("ca_expired", "client", [leaf(r_exp, nb=NOW - 30 * DAY)], [r_exp.cert])
r0 = root("root-pathlen0", path_len=0)
i0 = inter("intermediate-under-pathlen0", r0)
write("ca_pathlen0_with_intermediate", "client", [leaf(i0), i0.cert], [r0.cert])

# Structure: unique identifiers, a negative serial, a v1 CA.
write("leaf_unique_ids", "client", [resign(leaf(r), r.key, with_unique_ids)], [r.cert])
write("leaf_negative_serial", "client", [resign(leaf(r), r.key, negative_serial)], [r.cert])
r_v1 = Issuer(resign(build(cn("root-v1"), (k := key()), None, ca=True), k, as_v1), k)
write("ca_v1", "client", [leaf(r_v1)], [r_v1.cert])

# Critical extensions that one validator knows and another does not.
ski_crit = lambda k: (x509.SubjectKeyIdentifier.from_public_key(k.public_key()), True)
k_ski = key()
i_ski = Issuer(build(cn("intermediate-critical-ski"), k_ski, r, ca=True, extra=[ski_crit(k_ski)]),
               k_ski)
write("inter_critical_ski", "client", [leaf(i_ski), i_ski.cert], [r.cert])
aki_crit = (x509.AuthorityKeyIdentifier.from_issuer_public_key(r.key.public_key()), True)
write("leaf_critical_aki", "client", [leaf(r, extra=[aki_crit])], [r.cert])
policies = (x509.CertificatePolicies([x509.PolicyInformation(ObjectIdentifier("2.5.29.32.0"), None)]),
            True)
i_pol = inter("intermediate-critical-policies", r, extra=[policies])
write("inter_critical_policies", "client", [leaf(i_pol), i_pol.cert], [r.cert])

# keyUsage without keyCertSign on an intermediate.
i_ku = inter("intermediate-no-cert-sign", r, ku="no-cert-sign")
write("inter_ku_no_cert_sign", "client", [leaf(i_ku), i_ku.cert], [r.cert])

# Name constraints on the CA (serving certificates: the SANs).
nc = (x509.NameConstraints(permitted_subtrees=[x509.DNSName("allowed.example")],
                           excluded_subtrees=None), True)
r_nc = root("root-name-constrained", extra=[nc])
write("ca_name_constraints_violated", "serving", [leaf(r_nc, "serving")], [r_nc.cert])
nc_ok = (x509.NameConstraints(permitted_subtrees=[x509.DNSName("node-1"),
                                                  x509.IPAddress(ipaddress.ip_network("10.0.0.0/8"))],
                              excluded_subtrees=None), True)
r_nc_ok = root("root-name-constrained-ok", extra=[nc_ok])
write("ca_name_constraints_met", "serving", [leaf(r_nc_ok, "serving")], [r_nc_ok.cert])

# Depth: 6 and 7 intermediates.
for depth in (6, 7):
    chain, parent = [], r
    for n in range(depth):
        parent = inter(f"intermediate-{depth}-{n}", parent)
        chain.insert(0, parent.cert)
    write(f"depth_{depth}", "client", [leaf(parent)] + chain, [r.cert])
