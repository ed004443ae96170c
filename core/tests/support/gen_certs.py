#!/usr/bin/python3
"""Generate the certificate matrix for core/tests/verify_matrix.rs.

Usage: gen_certs.py OUTDIR NOW_UNIX_SECONDS

OUTDIR must already contain leaf.key and other.key (P-256 keys generated with openssl). Writes
CA bundles `ca_*.pem` and leaf files `case_*.pem` (leaf first, then any intermediates), all PEM.
"""
import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

out, now = sys.argv[1], int(sys.argv[2])
NOW = datetime.datetime.utcfromtimestamp(now)
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


def load(name):
    with open(os.path.join(out, name), "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def write(name, *certs):
    with open(os.path.join(out, name), "wb") as f:
        for c in certs:
            f.write(c.public_bytes(serialization.Encoding.PEM))


def name(*pairs, printable=False):
    attrs = []
    for oid, value in pairs:
        if printable:
            attrs.append(x509.NameAttribute(oid, value, _type=_ASN1Type.PrintableString))
        else:
            attrs.append(x509.NameAttribute(oid, value))
    return x509.Name(attrs)


def default_hash(key):
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp384r1":
        return hashes.SHA384()
    return hashes.SHA256()


def ca(subject, key, issuer=None, issuer_key=None, path_len=None, is_ca=True, ku=True,
       not_before=None, not_after=None, hash_alg=None):
    issuer = issuer or subject
    issuer_key = issuer_key or key
    b = (x509.CertificateBuilder()
         .subject_name(subject).issuer_name(issuer)
         .public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(not_before or NOW - 10 * DAY)
         .not_valid_after(not_after or NOW + 3650 * DAY))
    if is_ca is not None:
        b = b.add_extension(x509.BasicConstraints(ca=is_ca, path_length=path_len), critical=True)
    if ku:
        b = b.add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False),
                            critical=True)
    b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    return b.sign(issuer_key, hash_alg or default_hash(issuer_key))


NODE = "node-1"


def leaf(issuer_cert, issuer_key, pub=None, subject=None, eku=(ExtendedKeyUsageOID.CLIENT_AUTH,),
         ku="ds", is_ca=False, sans=None, not_before=None, not_after=None, hash_alg=None,
         extra=None, printable=True):
    if subject is None:
        subject = name((NameOID.ORGANIZATION_NAME, "system:nodes"),
                       (NameOID.COMMON_NAME, "system:node:" + NODE), printable=printable)
    b = (x509.CertificateBuilder()
         .subject_name(subject).issuer_name(issuer_cert.subject)
         .public_key(pub or LEAF.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(not_before or NOW - datetime.timedelta(minutes=5))
         .not_valid_after(not_after or NOW + 365 * DAY))
    if ku == "ds":
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                            critical=True)
    elif ku == "ke":
        b = b.add_extension(x509.KeyUsage(False, False, True, False, False, False, False, False, False),
                            critical=True)
    if eku:
        b = b.add_extension(x509.ExtendedKeyUsage(list(eku)), critical=False)
    if is_ca is not None:
        b = b.add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if extra:
        b = b.add_extension(extra, critical=True)
    b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                        critical=False)
    return b.sign(issuer_key, hash_alg or default_hash(issuer_key))


LEAF = load("leaf.key")
OTHER = load("other.key")

# --- CAs -----------------------------------------------------------------------------------
k_ec = ec.generate_private_key(ec.SECP256R1())
c_ec = ca(name((NameOID.COMMON_NAME, "kubernetes")), k_ec)
write("ca_ec.pem", c_ec)

k_rsa2 = rsa.generate_private_key(65537, 2048)
c_rsa2 = ca(name((NameOID.COMMON_NAME, "kubernetes")), k_rsa2)
write("ca_rsa2048.pem", c_rsa2)

k_rsa4 = rsa.generate_private_key(65537, 4096)
c_rsa4 = ca(name((NameOID.ORGANIZATION_NAME, "Example, Inc."), (NameOID.COMMON_NAME, "rsa4096 CA")),
            k_rsa4)
write("ca_rsa4096.pem", c_rsa4)

k_rsa1 = rsa.generate_private_key(65537, 1024)
c_rsa1 = ca(name((NameOID.COMMON_NAME, "weak")), k_rsa1)
write("ca_rsa1024.pem", c_rsa1)

k_p384 = ec.generate_private_key(ec.SECP384R1())
c_p384 = ca(name((NameOID.COMMON_NAME, "p384-ca")), k_p384)
write("ca_p384.pem", c_p384)

# Same name as ca_ec, other key: "issuer matches but signature fails".
k_same = ec.generate_private_key(ec.SECP256R1())
c_same = ca(name((NameOID.COMMON_NAME, "kubernetes")), k_same)
write("ca_same_name.pem", c_same)

# Unrelated CA.
k_un = ec.generate_private_key(ec.SECP256R1())
c_un = ca(name((NameOID.COMMON_NAME, "unrelated")), k_un)
write("ca_unrelated.pem", c_un)

# Rotation bundle: old CA first, the issuing one second.
k_new = ec.generate_private_key(ec.SECP256R1())
c_new = ca(name((NameOID.COMMON_NAME, "kubernetes-2")), k_new)
with open(os.path.join(out, "ca_rotation.pem"), "wb") as f:
    f.write(b"# old CA\n")
    f.write(c_un.public_bytes(serialization.Encoding.PEM))
    f.write(b"-----BEGIN X509 CRL-----\nAQID\n-----END X509 CRL-----\n")
    f.write(c_new.public_bytes(serialization.Encoding.PEM))

# Expired and not-yet-valid CAs.
k_old = ec.generate_private_key(ec.SECP256R1())
c_old = ca(name((NameOID.COMMON_NAME, "old")), k_old, not_before=NOW - 400 * DAY,
           not_after=NOW - DAY)
write("ca_expired.pem", c_old)

# Root -> intermediate -> leaf.
k_root = ec.generate_private_key(ec.SECP256R1())
c_root = ca(name((NameOID.COMMON_NAME, "root")), k_root)
write("ca_root.pem", c_root)
k_int = ec.generate_private_key(ec.SECP256R1())
c_int = ca(name((NameOID.COMMON_NAME, "intermediate")), k_int, issuer=c_root.subject,
           issuer_key=k_root, path_len=0)
c_int_notca = ca(name((NameOID.COMMON_NAME, "intermediate")), k_int, issuer=c_root.subject,
                 issuer_key=k_root, is_ca=False)
c_int_expired = ca(name((NameOID.COMMON_NAME, "intermediate")), k_int, issuer=c_root.subject,
                   issuer_key=k_root, not_after=NOW - HOUR)
# Root with pathLen 0 cannot have an intermediate below it.
k_root0 = ec.generate_private_key(ec.SECP256R1())
c_root0 = ca(name((NameOID.COMMON_NAME, "root0")), k_root0, path_len=0)
write("ca_root0.pem", c_root0)
c_int0 = ca(name((NameOID.COMMON_NAME, "intermediate0")), k_int, issuer=c_root0.subject,
            issuer_key=k_root0)

# Hostile: MAX_INTERMEDIATES intermediates with the same name and key, each able to sign every
# other, and no CA that issued them: an unbounded search would try every permutation.
k_loop = ec.generate_private_key(ec.SECP256R1())
n_loop = name((NameOID.COMMON_NAME, "loop"))
c_loops = [ca(n_loop, k_loop) for _ in range(8)]

# --- leaves --------------------------------------------------------------------------------
write("case_ok_ec.pem", leaf(c_ec, k_ec))
write("case_ok_utf8.pem", leaf(c_ec, k_ec, printable=False))
write("case_ok_rsa2048.pem", leaf(c_rsa2, k_rsa2))
write("case_ok_rsa2048_sha384.pem", leaf(c_rsa2, k_rsa2, hash_alg=hashes.SHA384()))
write("case_ok_rsa2048_sha512.pem", leaf(c_rsa2, k_rsa2, hash_alg=hashes.SHA512()))
write("case_ok_rsa4096.pem", leaf(c_rsa4, k_rsa4))
write("case_rsa1024.pem", leaf(c_rsa1, k_rsa1))
write("case_ok_p384.pem", leaf(c_p384, k_p384))
write("case_p256_sha384.pem", leaf(c_ec, k_ec, hash_alg=hashes.SHA384()))
write("case_ok_rotation.pem", leaf(c_new, k_new))
write("case_ok_chain.pem", leaf(c_int, k_int), c_int)
write("case_ok_chain_extra.pem", leaf(c_int, k_int), c_un, c_int_expired, c_int)
write("case_chain_notca.pem", leaf(c_int, k_int), c_int_notca)
write("case_chain_expired.pem", leaf(c_int, k_int), c_int_expired)
write("case_chain_pathlen.pem", leaf(c_int0, k_int), c_int0)
write("case_loop.pem", leaf(c_loops[0], k_loop), *c_loops)
write("case_chain_missing.pem", leaf(c_int, k_int))
write("case_ok_long.pem", leaf(c_ec, k_ec, not_after=datetime.datetime(2051, 2, 3, 4, 5, 6)))
write("case_expired.pem", leaf(c_ec, k_ec, not_before=NOW - 30 * DAY, not_after=NOW - DAY))
write("case_not_yet_valid.pem", leaf(c_ec, k_ec, not_before=NOW + HOUR, not_after=NOW + 30 * DAY))
write("case_by_expired_ca.pem", leaf(c_old, k_old, not_before=NOW - 30 * DAY))
write("case_key_mismatch.pem", leaf(c_ec, k_ec, pub=OTHER.public_key()))
write("case_wrong_cn.pem", leaf(c_ec, k_ec, subject=name(
    (NameOID.ORGANIZATION_NAME, "system:nodes"), (NameOID.COMMON_NAME, "system:node:node-2"))))
write("case_missing_o.pem", leaf(c_ec, k_ec, subject=name(
    (NameOID.COMMON_NAME, "system:node:" + NODE))))
write("case_extra_o.pem", leaf(c_ec, k_ec, subject=name(
    (NameOID.ORGANIZATION_NAME, "system:masters"), (NameOID.ORGANIZATION_NAME, "system:nodes"),
    (NameOID.COMMON_NAME, "system:node:" + NODE))))
write("case_extra_ou.pem", leaf(c_ec, k_ec, subject=name(
    (NameOID.ORGANIZATION_NAME, "system:nodes"), (NameOID.ORGANIZATIONAL_UNIT_NAME, "x"),
    (NameOID.COMMON_NAME, "system:node:" + NODE))))
write("case_two_cn.pem", leaf(c_ec, k_ec, subject=name(
    (NameOID.ORGANIZATION_NAME, "system:nodes"), (NameOID.COMMON_NAME, "system:node:evil"),
    (NameOID.COMMON_NAME, "system:node:" + NODE))))
write("case_server_eku.pem", leaf(c_ec, k_ec, eku=(ExtendedKeyUsageOID.SERVER_AUTH,)))
write("case_no_eku.pem", leaf(c_ec, k_ec, eku=()))
write("case_ku_no_ds.pem", leaf(c_ec, k_ec, ku="ke"))
write("case_no_ku.pem", leaf(c_ec, k_ec, ku=None))
write("case_is_ca.pem", leaf(c_ec, k_ec, is_ca=True))
write("case_unknown_critical.pem", leaf(c_ec, k_ec, extra=x509.UnrecognizedExtension(
    x509.ObjectIdentifier("1.3.6.1.4.1.99999.1"), b"\x05\x00")))
write("case_client_with_san.pem", leaf(c_ec, k_ec, sans=[x509.DNSName("node-1")]))
SANS = [x509.DNSName("node-1.example"), x509.DNSName("node-1"),
        x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("fd00::1"))]
SERVING = (ExtendedKeyUsageOID.SERVER_AUTH,)
write("case_ok_serving.pem", leaf(c_ec, k_ec, eku=SERVING, sans=SANS))
write("case_serving_extra_dns.pem", leaf(c_ec, k_ec, eku=SERVING,
                                         sans=SANS + [x509.DNSName("evil.example")]))
write("case_serving_missing_ip.pem", leaf(c_ec, k_ec, eku=SERVING, sans=SANS[:3]))
write("case_serving_extra_ip.pem", leaf(c_ec, k_ec, eku=SERVING,
                                        sans=SANS + [x509.IPAddress(ipaddress.ip_address("10.9.9.9"))]))
write("case_serving_email.pem", leaf(c_ec, k_ec, eku=SERVING,
                                     sans=SANS + [x509.RFC822Name("a@example.com")]))
write("case_serving_client_eku.pem", leaf(c_ec, k_ec, sans=SANS))

# Tampered: flip a bit in the last byte of the signature (keeps the DER framing intact).
good = leaf(c_ec, k_ec).public_bytes(serialization.Encoding.DER)
bad = bytearray(good)
bad[-1] ^= 0x01
with open(os.path.join(out, "case_tampered.der"), "wb") as f:
    f.write(bytes(bad))
good = leaf(c_rsa2, k_rsa2).public_bytes(serialization.Encoding.DER)
bad = bytearray(good)
bad[-1] ^= 0x01
with open(os.path.join(out, "case_tampered_rsa.der"), "wb") as f:
    f.write(bytes(bad))
# Tampered TBS: change a byte inside the subject CN (node-1 -> node-2).
good = leaf(c_ec, k_ec).public_bytes(serialization.Encoding.DER)
i = good.index(b"system:node:node-1") + len(b"system:node:node-")
bad = bytearray(good)
bad[i] = ord("2")
with open(os.path.join(out, "case_tampered_tbs.der"), "wb") as f:
    f.write(bytes(bad))
