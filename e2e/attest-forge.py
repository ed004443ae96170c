#!/usr/bin/python3
"""A forged attestation, made with Python's cryptography (nothing of kubeboot's): a software
P-256 key, its kubelet client CSR for NODE, and evidence that claims the key lives in the TPM
whose attestation key certificate is CHAIN: a TPMT_PUBLIC of the software key with fixedTPM,
fixedParent and sensitiveDataOrigin, a TPMS_ATTEST of TPM2_Certify naming it over this CSR's
qualifying data (docs/attestation.md), signed by a key the factory never certified.

    attest-forge.py NODE CHAIN OUT   writes OUT (the CSR, then the evidence blocks)
"""
import base64
import hashlib
import struct
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

node, chain, out = sys.argv[1:4]


def b2(v: bytes) -> bytes:
    return struct.pack(">H", len(v)) + v


def pem(label: str, der: bytes) -> bytes:
    body = base64.b64encode(der)
    lines = b"\n".join(body[i:i + 64] for i in range(0, len(body), 64))
    return b"-----BEGIN " + label.encode() + b"-----\n" + lines + b"\n-----END " + label.encode() + b"-----\n"


key = ec.generate_private_key(ec.SECP256R1())
subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                     x509.NameAttribute(NameOID.COMMON_NAME, "system:node:" + node)])
csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)

# TPMT_PUBLIC: ECC, SHA-256 name, fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|sign, no
# policy, no symmetric, ECDSA/SHA-256, NIST P-256, no KDF, the point.
attrs = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 18)
public = struct.pack(">HHI", 0x0023, 0x000B, attrs) + b2(b"") + struct.pack(">HHHHH", 0x0010, 0x0018, 0x000B, 0x0003, 0x0010)
public += b2(point[1:33]) + b2(point[33:])
name = b"\x00\x0b" + hashlib.sha256(public).digest()
qualifying = hashlib.sha256(b"kubeboot attested join v1\x00" + spki + csr.subject.public_bytes()).digest()

# TPMS_ATTEST of a certify: magic, type, signer name, extra data, clock info, firmware, the
# certified name twice (name, qualified name).
attest = struct.pack(">IH", 0xFF544347, 0x8017) + b2(b"\x00\x0b" + b"\x11" * 32) + b2(qualifying)
attest += struct.pack(">QIIB", 1000, 1, 0, 1) + struct.pack(">Q", 0) + b2(name) + b2(name)
fake_ak = ec.generate_private_key(ec.SECP256R1())
r, s = decode_dss_signature(fake_ak.sign(attest, ec.ECDSA(hashes.SHA256())))
signature = struct.pack(">HH", 0x0018, 0x000B) + b2(r.to_bytes(32, "big")) + b2(s.to_bytes(32, "big"))

END = b"-----END CERTIFICATE-----\n"
certs = [x509.load_pem_x509_certificate(b + END) for b in open(chain, "rb").read().split(END) if b.strip()]
request = csr.public_bytes(serialization.Encoding.PEM)
request += pem("ATTESTED KEY PUBLIC", public) + pem("ATTESTATION DATA", attest) + pem("ATTESTATION SIGNATURE", signature)
request += b"".join(pem("ATTESTATION CERTIFICATE", c.public_bytes(serialization.Encoding.DER)) for c in certs)
open(out, "wb").write(request)
