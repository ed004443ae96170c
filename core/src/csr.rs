//! PKCS#10 certificate signing requests as the kubelet builds them, written into caller buffers.
//!
//! * **client** profile: subject exactly `O=system:nodes`, `CN=system:node:<node>` (two RDNs in
//!   that order, PrintableString, as Go's `x509.CreateCertificateRequest` writes them), no
//!   extension request, `ecdsa-with-SHA256`, DER signature;
//! * **serving** profile: the same subject plus an extension request holding a subjectAltName
//!   extension with the DNS names, then the IP addresses (Go's order).
//!
//! Signing goes through [`P256Signer`], so the key may live in a secure element, a TPM or a C
//! callback; [`NodeKey`](crate::key::NodeKey) is the software default. For signers that cannot be
//! called synchronously, [`CsrBuilder::write_tbs`] and [`assemble`] split the two halves.

use core::net::IpAddr;

use crate::error::{Error, PolicyViolation, Result};
use crate::key::{P256_SPKI_LEN, P256Signer};
use crate::oid;
use crate::out::Filled;
use crate::pem;

/// The kubelet's certificate subject organization.
pub const NODES_GROUP: &str = "system:nodes";
/// Prefix of the kubelet's certificate common name.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// Longest node name (a DNS-1123 subdomain).
pub const MAX_NODE_NAME: usize = 253;
/// Most subject alternative names (DNS + IP) in a serving CSR.
pub const MAX_SANS: usize = 16;
/// The longest common name, `system:node:` and a node name of [`MAX_NODE_NAME`] bytes.
pub const COMMON_NAME_CAP: usize = NODE_USER_PREFIX.len() + MAX_NODE_NAME;

/// The names of `owned` as string slices in `refs` (for a [`Profile::Serving`] built from owned
/// names); at most [`MAX_SANS`] (`owned` holds at most `C`, which is never more).
pub(crate) fn borrow_names<'r, const L: usize, const C: usize>(
    owned: &'r heapless::Vec<heapless::String<L>, C>,
    refs: &mut heapless::Vec<&'r str, MAX_SANS>,
) {
    refs.clear();
    for name in owned {
        // `owned` holds no more than MAX_SANS: never full.
        let _ = refs.push(name.as_str());
    }
}
/// Largest to-be-signed CertificationRequestInfo we build.
pub const MAX_TBS_LEN: usize = 2048;
/// Largest CSR DER we build: the TBS plus algorithm identifier, signature and headers.
pub const MAX_CSR_DER: usize = MAX_TBS_LEN + 4 + 12 + 3 + 72;
/// PEM label of a CSR.
pub const LABEL_CSR: &str = "CERTIFICATE REQUEST";

const OID_CN: &[u8] = oid::CN.as_bytes();
const OID_O: &[u8] = oid::O.as_bytes();
const OID_SAN: &[u8] = oid::SUBJECT_ALT_NAME.as_bytes();
/// 1.2.840.113549.1.9.14 extensionRequest
const OID_EXTENSION_REQUEST: &[u8] = oid::EXTENSION_REQUEST.as_bytes();
/// `SEQUENCE { OID 1.2.840.10045.4.3.2 ecdsa-with-SHA256 }`
const ALG_ECDSA_SHA256: [u8; 12] =
    [0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];

const TAG_SEQUENCE: u8 = 0x30;
const TAG_INTEGER: u8 = 0x02;
const TAG_SET: u8 = 0x31;
const TAG_OID: u8 = 0x06;
const TAG_PRINTABLE: u8 = 0x13;
const TAG_OCTET_STRING: u8 = 0x04;
const TAG_BIT_STRING: u8 = 0x03;
const TAG_ATTRIBUTES: u8 = 0xa0;
const TAG_SAN_DNS: u8 = 0x82;
const TAG_SAN_IP: u8 = 0x87;

/// Check a node name the way the apiserver checks object names (`IsDNS1123Subdomain`):
/// at most 253 bytes of `[a-z0-9]([-a-z0-9]*[a-z0-9])?` labels joined by `.`.
pub fn validate_node_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NODE_NAME {
        return Err(Error::InvalidNodeName);
    }
    for label in name.split('.') {
        let b = label.as_bytes();
        let ok_inner = b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
        let edge = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !ok_inner || !edge(b.first()) || !edge(b.last()) {
            return Err(Error::InvalidNodeName);
        }
    }
    Ok(())
}

/// Check a DNS subject alternative name: 1–253 bytes, labels of 1–63 letters, digits, `-`
/// (not at either end) or `_`, optionally a leading `*.` wildcard label.
pub fn validate_dns_name(name: &str) -> Result<()> {
    let rest = name.strip_prefix("*.").unwrap_or(name);
    if name.is_empty() || name.len() > 253 || rest.is_empty() {
        return Err(Error::InvalidDnsName);
    }
    for label in rest.split('.') {
        let b = label.as_bytes();
        let inner = b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_');
        if b.is_empty()
            || b.len() > 63
            || !inner
            || b.first() == Some(&b'-')
            || b.last() == Some(&b'-')
        {
            return Err(Error::InvalidDnsName);
        }
    }
    Ok(())
}

/// Parse an IPv4 or IPv6 literal ([`Error::InvalidIpAddress`] otherwise).
pub fn parse_ip(s: &str) -> Result<IpAddr> {
    s.parse::<IpAddr>().map_err(|_| Error::InvalidIpAddress)
}

/// Which certificate a CSR asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile<'a> {
    /// A kubelet client certificate (signer `kubernetes.io/kube-apiserver-client-kubelet`).
    Client,
    /// A kubelet serving certificate (signer `kubernetes.io/kubelet-serving`).
    Serving {
        /// DNS subject alternative names, in the order given.
        dns: &'a [&'a str],
        /// IP subject alternative names, in the order given.
        ips: &'a [IpAddr],
    },
}

/// Builds a kubelet CSR for one node. All inputs are checked when the builder is made.
#[derive(Clone, Copy, Debug)]
pub struct CsrBuilder<'a> {
    node_name: &'a str,
    profile: Profile<'a>,
}

impl<'a> CsrBuilder<'a> {
    /// A client-certificate CSR for `node_name`.
    pub fn client(node_name: &'a str) -> Result<Self> {
        validate_node_name(node_name)?;
        Ok(CsrBuilder { node_name, profile: Profile::Client })
    }

    /// A serving-certificate CSR for `node_name` with the given SANs (at least one, at most
    /// [`MAX_SANS`]).
    pub fn serving(node_name: &'a str, dns: &'a [&'a str], ips: &'a [IpAddr]) -> Result<Self> {
        validate_node_name(node_name)?;
        for d in dns {
            validate_dns_name(d)?;
        }
        if dns.len().saturating_add(ips.len()) > MAX_SANS {
            return Err(Error::TooManySans);
        }
        if dns.is_empty() && ips.is_empty() {
            return Err(Error::Policy(PolicyViolation::SanRequired));
        }
        let b = CsrBuilder { node_name, profile: Profile::Serving { dns, ips } };
        if b.tbs_len() > MAX_TBS_LEN {
            return Err(Error::TooManySans);
        }
        Ok(b)
    }

    /// The node name.
    pub fn node_name(&self) -> &'a str {
        self.node_name
    }

    /// The profile.
    pub fn profile(&self) -> Profile<'a> {
        self.profile
    }

    /// The subject's common name, `system:node:<node>`.
    pub fn common_name(&self) -> heapless::String<COMMON_NAME_CAP> {
        let mut cn = heapless::String::new();
        // The node name was checked against MAX_NODE_NAME: both fit.
        let _ = cn.push_str(NODE_USER_PREFIX);
        let _ = cn.push_str(self.node_name);
        cn
    }

    /// Exact length of the to-be-signed `CertificationRequestInfo`.
    pub fn tbs_len(&self) -> usize {
        let mut w = Rev::counter();
        self.emit_tbs(&mut w, &[0u8; P256_SPKI_LEN]);
        w.len
    }

    /// Upper bound of the CSR DER length (ECDSA signatures vary by a few bytes).
    pub fn max_der_len(&self) -> usize {
        max_der_len_for(self.tbs_len())
    }

    /// Upper bound of the CSR PEM length.
    pub fn max_pem_len(&self) -> usize {
        pem::encoded_len(LABEL_CSR, self.max_der_len()).unwrap_or(usize::MAX)
    }

    /// Write the DER `CertificationRequestInfo` for the public key `spki` (to be signed by an
    /// external signer; finish with [`assemble`]). A short buffer is [`Error::BufferTooSmall`]
    /// with the exact size, and nothing is written.
    pub fn write_tbs(&self, spki: &[u8; P256_SPKI_LEN], buf: &mut [u8]) -> Result<usize> {
        let needed = self.tbs_len();
        let dst = buf.get_mut(..needed).ok_or(Error::BufferTooSmall { needed })?;
        let mut w = Rev::new(dst);
        self.emit_tbs(&mut w, spki);
        Ok(w.len)
    }

    /// Build and sign the CSR, writing DER into `buf`. A short buffer is
    /// [`Error::BufferTooSmall`] carrying [`max_der_len`](Self::max_der_len), which always
    /// suffices, and nothing is written.
    pub fn write_der(&self, signer: &(impl P256Signer + ?Sized), buf: &mut [u8]) -> Result<usize> {
        let tbs_len = self.tbs_len();
        let needed = max_der_len_for(tbs_len);
        if buf.len() < needed {
            return Err(Error::BufferTooSmall { needed });
        }
        let spki = signer.public_key_spki();
        // Write the TBS back to front where the finished CSR will hold it: after the outer
        // header, whose length is known for the longest signature (nearly always the real one).
        let hlen = header_len(content_len(tbs_len, MAX_ECDSA_DER_SIG));
        let tbs = buf.get_mut(hlen..hlen + tbs_len).ok_or(Error::BufferTooSmall { needed })?;
        self.emit_tbs(&mut Rev::new(&mut *tbs), &spki);
        let rs = signer.sign_p256_sha256(tbs)?;
        let mut sig = [0u8; MAX_ECDSA_DER_SIG];
        let sig = ecdsa_sig_value(&rs, &mut sig)?;
        let content = content_len(tbs_len, sig.len());
        if header_len(content) != hlen {
            // A shorter signature moved the content length across a DER length boundary: write
            // the (deterministic) TBS again at its final offset instead of moving it (no memmove).
            let at = header_len(content);
            let tbs = buf.get_mut(at..at + tbs_len).ok_or(Error::BufferTooSmall { needed })?;
            self.emit_tbs(&mut Rev::new(tbs), &spki);
        }
        finish_in_place(buf, tbs_len, content, sig)
    }

    /// Build and sign the CSR, writing a `CERTIFICATE REQUEST` PEM block into `buf`
    /// (64-column base64, trailing newline, as Go writes it).
    pub fn write_pem(&self, signer: &(impl P256Signer + ?Sized), buf: &mut [u8]) -> Result<usize> {
        let needed = self.max_pem_len();
        if buf.len() < needed {
            return Err(Error::BufferTooSmall { needed });
        }
        let mut der = Filled::<MAX_CSR_DER>::new();
        pem::encode(LABEL_CSR, der.fill(|b| self.write_der(signer, b))?, buf)
    }

    // The emitters write back to front (see [`Rev`]): the last field of a structure first.

    fn emit_tbs(&self, w: &mut Rev<'_>, spki: &[u8; P256_SPKI_LEN]) {
        w.tlv(TAG_SEQUENCE, |w| {
            w.tlv(TAG_ATTRIBUTES, |w| self.emit_attributes(w));
            w.put(spki);
            self.emit_subject(w);
            w.put(&[0x02, 0x01, 0x00]); // version 0
        });
    }

    fn emit_subject(&self, w: &mut Rev<'_>) {
        w.tlv(TAG_SEQUENCE, |w| {
            rdn(w, OID_CN, |w| {
                w.put(self.node_name.as_bytes());
                w.put(NODE_USER_PREFIX.as_bytes());
            });
            rdn(w, OID_O, |w| w.put(NODES_GROUP.as_bytes()));
        });
    }

    fn emit_attributes(&self, w: &mut Rev<'_>) {
        let Profile::Serving { dns, ips } = self.profile else {
            return;
        };
        w.tlv(TAG_SEQUENCE, |w| {
            w.tlv(TAG_SET, |w| {
                w.tlv(TAG_SEQUENCE, |w| {
                    // Extensions ::= SEQUENCE OF Extension; one subjectAltName extension.
                    w.tlv(TAG_SEQUENCE, |w| {
                        w.tlv(TAG_OCTET_STRING, |w| {
                            w.tlv(TAG_SEQUENCE, |w| emit_general_names(w, dns, ips));
                        });
                        w.oid(OID_SAN);
                    });
                });
            });
            w.oid(OID_EXTENSION_REQUEST);
        });
    }
}

/// DER writer that fills a slice from its end: a TLV's content is written before its header, so
/// every length is known when its header is written and nothing is measured twice. With an empty
/// slice it only counts (bytes that do not fit are counted, not written).
struct Rev<'b> {
    buf: &'b mut [u8],
    /// Bytes written so far; they end `buf`.
    len: usize,
}

impl<'b> Rev<'b> {
    fn new(buf: &'b mut [u8]) -> Self {
        Rev { buf, len: 0 }
    }

    fn counter() -> Rev<'static> {
        Rev { buf: &mut [], len: 0 }
    }

    /// Prepend `bytes`.
    fn put(&mut self, bytes: &[u8]) {
        let len = self.len.saturating_add(bytes.len());
        if let Some(start) = self.buf.len().checked_sub(len) {
            if let Some(dst) = self.buf.get_mut(start..start + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
        }
        self.len = len;
    }

    /// Prepend a TLV whose content `content` prepends.
    fn tlv(&mut self, tag: u8, content: impl FnOnce(&mut Self)) {
        let end = self.len;
        content(self);
        self.put(encode_header(tag, self.len - end).as_slice());
    }

    fn oid(&mut self, arcs: &[u8]) {
        self.tlv(TAG_OID, |w| w.put(arcs));
    }
}

/// The DNS names, then the IP addresses (Go's order), written back to front.
fn emit_general_names(w: &mut Rev<'_>, dns: &[&str], ips: &[IpAddr]) {
    for ip in ips.iter().rev() {
        match ip {
            IpAddr::V4(v4) => w.tlv(TAG_SAN_IP, |w| w.put(&v4.octets())),
            IpAddr::V6(v6) => w.tlv(TAG_SAN_IP, |w| w.put(&v6.octets())),
        }
    }
    for d in dns.iter().rev() {
        w.tlv(TAG_SAN_DNS, |w| w.put(d.as_bytes()));
    }
}

/// Upper bound of the CSR DER for a TBS of `tbs_len` bytes.
fn max_der_len_for(tbs_len: usize) -> usize {
    tlv_len(tbs_len + ALG_ECDSA_SHA256.len() + tlv_len(1 + MAX_ECDSA_DER_SIG))
}

/// Longest DER `ECDSA-Sig-Value` for P-256.
const MAX_ECDSA_DER_SIG: usize = 72;

/// Encode `r || s` as the DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }`, the bytes
/// [`crate::key::der_signature`] gives (the unit tests compare them), written with this module's
/// DER writer instead of `der`'s encoder (about 1 KiB less flash on a Cortex-M). Zero or ≥ n is
/// [`Error::SignerFailed`].
fn ecdsa_sig_value<'o>(rs: &[u8; 64], out: &'o mut [u8; MAX_ECDSA_DER_SIG]) -> Result<&'o [u8]> {
    p256::ecdsa::Signature::from_slice(rs).map_err(|_| Error::SignerFailed)?;
    let (r, s) = rs.split_at(32);
    // A positive INTEGER: the magnitude without leading zero octets, after a 0x00 if its top bit
    // is set. (r and s are not zero: checked above.)
    fn magnitude(x: &[u8]) -> &[u8] {
        x.get(x.iter().position(|&b| b != 0).unwrap_or(0)..).unwrap_or(x)
    }
    let int_len = |m: &[u8]| m.len() + usize::from(m.first().is_some_and(|&b| b >= 0x80));
    let (r, s) = (magnitude(r), magnitude(s));
    let content = tlv_len(int_len(r)) + tlv_len(int_len(s)); // at most 70: short-form lengths
    let total = tlv_len(content);
    let der = out.get_mut(..total).ok_or(Error::SignerFailed)?;
    let mut w = Rev::new(der);
    w.tlv(TAG_SEQUENCE, |w| {
        for m in [s, r] {
            w.tlv(TAG_INTEGER, |w| {
                w.put(m);
                if m.first().is_some_and(|&b| b >= 0x80) {
                    w.put(&[0]);
                }
            });
        }
    });
    Ok(out.get(..total).unwrap_or(&[]))
}

/// Combine a `CertificationRequestInfo` (from [`CsrBuilder::write_tbs`]) and an `r || s` P-256
/// signature over it into the CSR DER. An out-of-range signature is [`Error::SignerFailed`].
pub fn assemble(tbs: &[u8], rs: &[u8; 64], buf: &mut [u8]) -> Result<usize> {
    let mut sig = [0u8; MAX_ECDSA_DER_SIG];
    let sig = ecdsa_sig_value(rs, &mut sig)?;
    let needed = tlv_len(tbs.len() + ALG_ECDSA_SHA256.len() + tlv_len(1 + sig.len()));
    let out = buf.get_mut(..needed).ok_or(Error::BufferTooSmall { needed })?;
    let mut w = Rev::new(out);
    w.tlv(TAG_SEQUENCE, |w| {
        w.tlv(TAG_BIT_STRING, |w| {
            w.put(sig);
            w.put(&[0]);
        });
        w.put(&ALG_ECDSA_SHA256);
        w.put(tbs);
    });
    Ok(w.len)
}

/// Content length of the outer CSR `SEQUENCE` for a TBS of `tbs_len` bytes and a DER signature
/// of `sig_len` bytes.
fn content_len(tbs_len: usize, sig_len: usize) -> usize {
    tbs_len + ALG_ECDSA_SHA256.len() + tlv_len(1 + sig_len)
}

/// Length of a DER `SEQUENCE` header for `content` bytes.
fn header_len(content: usize) -> usize {
    1 + len_len(content)
}

/// The TBS is at `buf[header_len(content)..][..tbs_len]`; write the outer header before it and
/// the algorithm and signature after it, making the final CSR at `buf[0..]`.
fn finish_in_place(buf: &mut [u8], tbs_len: usize, content: usize, sig: &[u8]) -> Result<usize> {
    let total = tlv_len(content);
    let header = encode_header(TAG_SEQUENCE, content);
    let header = header.as_slice();
    if buf.len() < total {
        return Err(Error::BufferTooSmall { needed: total });
    }
    buf.get_mut(..header.len())
        .ok_or(Error::BufferTooSmall { needed: total })?
        .copy_from_slice(header);
    let mut pos = header.len() + tbs_len;
    let mut put = |bytes: &[u8]| {
        if let Some(dst) = buf.get_mut(pos..pos + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        pos += bytes.len();
    };
    put(&ALG_ECDSA_SHA256);
    put(encode_header(TAG_BIT_STRING, 1 + sig.len()).as_slice());
    put(&[0]);
    put(sig);
    Ok(pos)
}

/// Length of a DER length field for `n`.
fn len_len(n: usize) -> usize {
    match n {
        0..=0x7f => 1,
        0x80..=0xff => 2,
        0x100..=0xffff => 3,
        _ => 4,
    }
}

/// Total length of a TLV with `n` content bytes.
fn tlv_len(n: usize) -> usize {
    1 + len_len(n) + n
}

fn encode_header(tag: u8, n: usize) -> Filled<4> {
    match len_len(n) {
        1 => Filled::from_array([tag, n as u8, 0, 0], 2),
        2 => Filled::from_array([tag, 0x81, n as u8, 0], 3),
        _ => Filled::from_array([tag, 0x82, (n >> 8) as u8, n as u8], 4),
    }
}

/// `SET { SEQUENCE { oid, PrintableString value } }`, back to front.
fn rdn(w: &mut Rev<'_>, attr: &[u8], value: impl FnOnce(&mut Rev<'_>)) {
    w.tlv(TAG_SET, |w| {
        w.tlv(TAG_SEQUENCE, |w| {
            w.tlv(TAG_PRINTABLE, value);
            w.oid(attr);
        });
    });
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::key::NodeKey;
    use std::string::String;

    fn k1() -> NodeKey {
        NodeKey::from_pem(crate::key::tests_support::K1_PEM.as_bytes()).unwrap()
    }

    /// Scalars on the DER edges: 0 to 31 leading zero octets, then a first octet with the top bit
    /// clear or set; and the range ends (0, 1, n - 1, n, 2^256 - 1).
    fn edge_scalars() -> std::vec::Vec<[u8; 32]> {
        let n = hex_literal("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
        let mut out = std::vec::Vec::new();
        for zeros in 0..32 {
            for first in [0x01u8, 0x7f, 0x80, 0xfe] {
                let mut x = [0x5au8; 32];
                x[..zeros].fill(0);
                x[zeros] = first;
                out.push(x);
            }
        }
        let mut n_minus_1 = n;
        n_minus_1[31] -= 1;
        let mut one = [0u8; 32];
        one[31] = 1;
        out.extend([[0u8; 32], one, n_minus_1, n, [0xff; 32]]);
        out
    }

    fn hex_literal(h: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    #[test]
    fn signature_encoding_matches_ecdsa_crate() {
        let scalars = edge_scalars();
        let mut checked = 0;
        for (i, r) in scalars.iter().enumerate() {
            for (j, s) in scalars.iter().enumerate() {
                // all pairs natively; under Miri (an interpreter) each scalar as both r and s
                if cfg!(miri) && i != j {
                    continue;
                }
                let mut rs = [0u8; 64];
                rs[..32].copy_from_slice(r);
                rs[32..].copy_from_slice(s);
                let mut buf = [0u8; MAX_ECDSA_DER_SIG];
                let ours = ecdsa_sig_value(&rs, &mut buf).map(<[u8]>::to_vec);
                let theirs = crate::key::der_signature(&rs).map(|d| d.as_bytes().to_vec());
                assert_eq!(ours, theirs, "r {r:02x?} s {s:02x?}");
                checked += usize::from(ours.is_ok());
            }
        }
        assert!(checked > if cfg!(miri) { 100 } else { 10_000 }, "{checked}");
    }

    #[test]
    fn node_names() {
        for ok in ["node-1", "a", "worker-a.example.com", "0", "a.b.c"] {
            validate_node_name(ok).unwrap();
        }
        let long = [b'a'; 254];
        for bad in ["", "Node-1", "-a", "a-", "a..b", ".a", "a.", "a_b", "a b", "ä"] {
            assert_eq!(validate_node_name(bad), Err(Error::InvalidNodeName), "{bad}");
        }
        assert!(validate_node_name(core::str::from_utf8(&long).unwrap()).is_err());
        assert!(validate_node_name(core::str::from_utf8(&long[..253]).unwrap()).is_ok());
    }

    #[test]
    fn dns_names() {
        for ok in ["a", "*.example.com", "Node-1.Example.COM", "a_b"] {
            validate_dns_name(ok).unwrap();
        }
        for bad in ["", "*.", "a..b", "-a", "a-", "a b", "*", "a.*.b"] {
            assert_eq!(validate_dns_name(bad), Err(Error::InvalidDnsName), "{bad}");
        }
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn client_csr_structure() {
        let key = k1();
        let b = CsrBuilder::client("node-1").unwrap();
        let mut buf = [0u8; 1024];
        let n = b.write_der(&key, &mut buf).unwrap();
        assert!(n <= b.max_der_len());
        let der = &buf[..n];
        // SEQUENCE { SEQUENCE { INTEGER 0, SEQUENCE { SET { SEQUENCE { OID O, PrintableString
        assert_eq!(der[0], 0x30);
        let tbs_len = b.tbs_len();
        let mut tbs = [0u8; 512];
        assert_eq!(b.write_tbs(&key.public_key_spki(), &mut tbs).unwrap(), tbs_len);
        let hl = if der[1] == 0x81 { 3 } else { 2 };
        assert_eq!(&der[hl..hl + tbs_len], &tbs[..tbs_len]);
        // Attributes are an empty [0].
        assert_eq!(&tbs[tbs_len - 2..tbs_len], &[0xa0, 0x00]);
        // Deterministic signature (RFC 6979): same bytes every time.
        let mut buf2 = [0u8; 1024];
        let n2 = b.write_der(&key, &mut buf2).unwrap();
        assert_eq!(&buf[..n], &buf2[..n2]);
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn assemble_matches_write_der() {
        let key = k1();
        let b = CsrBuilder::client("worker-a.example.com").unwrap();
        let mut tbs = [0u8; 512];
        let t = b.write_tbs(&key.public_key_spki(), &mut tbs).unwrap();
        let rs = key.sign(&tbs[..t]);
        let mut a = [0u8; 1024];
        let na = assemble(&tbs[..t], &rs, &mut a).unwrap();
        let mut d = [0u8; 1024];
        let nd = b.write_der(&key, &mut d).unwrap();
        assert_eq!(&a[..na], &d[..nd]);
    }

    /// A fixed public point and a fixed, possibly short, signature: no curve arithmetic (the TBS
    /// is not really signed; the encoding is what is tested).
    struct FixedSig([u8; 64]);

    impl P256Signer for FixedSig {
        fn public_point(&self) -> [u8; 65] {
            let mut point = [0x5a; 65];
            point[0] = 0x04;
            point
        }
        fn sign_p256_sha256(&self, _message: &[u8]) -> Result<[u8; 64]> {
            Ok(self.0)
        }
    }

    #[test]
    fn write_der_matches_assemble_across_length_boundaries() {
        // Node names of every length from 1 to 200 move the outer length across 0x7f/0x80 and
        // 0xff/0x100; an 8-byte signature (r = s = 1) and a full one (high bits set, 72 bytes)
        // make the real header shorter than, or as long as, the one assumed before signing.
        let mut short = [0u8; 64];
        short[31] = 1;
        short[63] = 1;
        let mut long = [0u8; 64];
        long[0] = 0x80;
        long[32] = 0x80;
        long[63] = 1;
        let mut crossings = 0;
        // Under Miri (an interpreter) every 10th length: the crossings are at name lengths 22-84.
        for len in (1..=200).filter(|len| !cfg!(miri) || len % 10 == 0) {
            let name_bytes = [b'a'; 200];
            let name = core::str::from_utf8(&name_bytes[..len]).unwrap();
            let b = CsrBuilder::client(name).unwrap();
            for sig in [short, long] {
                let signer = FixedSig(sig);
                let mut tbs = [0u8; 512];
                let t = b.write_tbs(&signer.public_key_spki(), &mut tbs).unwrap();
                let mut a = [0u8; 1024];
                let na = assemble(&tbs[..t], &sig, &mut a).unwrap();
                let mut d = [0xeeu8; 1024];
                let nd = b.write_der(&signer, &mut d).unwrap();
                assert_eq!(&a[..na], &d[..nd], "name length {len}");
                let max_header = header_len(content_len(t, MAX_ECDSA_DER_SIG));
                if header_len(content_len(t, 8)) != max_header && sig == short {
                    crossings += 1;
                }
            }
        }
        assert!(crossings >= 2, "the re-emission path was exercised {crossings} times");
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn short_buffers_report_size_and_write_nothing() {
        let key = k1();
        let b = CsrBuilder::client("node-1").unwrap();
        let mut small = [0u8; 100];
        let need = match b.write_der(&key, &mut small) {
            Err(Error::BufferTooSmall { needed }) => needed,
            other => panic!("{other:?}"),
        };
        assert_eq!(small, [0u8; 100]);
        let mut exact = [0u8; 1024];
        assert!(b.write_der(&key, &mut exact[..need]).is_ok());
        let mut pem_small = [0u8; 300];
        let need = match b.write_pem(&key, &mut pem_small) {
            Err(Error::BufferTooSmall { needed }) => needed,
            other => panic!("{other:?}"),
        };
        let mut pem = [0u8; 1024];
        let n = b.write_pem(&key, &mut pem[..need]).unwrap();
        assert!(pem[..n].starts_with(b"-----BEGIN CERTIFICATE REQUEST-----\n"));
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn serving_requires_and_bounds_sans() {
        let none: [&str; 0] = [];
        assert_eq!(
            CsrBuilder::serving("n", &none, &[]).unwrap_err(),
            Error::Policy(PolicyViolation::SanRequired)
        );
        let many = ["a"; MAX_SANS + 1];
        assert_eq!(CsrBuilder::serving("n", &many, &[]).unwrap_err(), Error::TooManySans);
        assert_eq!(
            CsrBuilder::serving("n", &["bad name"], &[]).unwrap_err(),
            Error::InvalidDnsName
        );
        let label = |c: &str, n: usize| -> String { c.repeat(n) };
        let big = [label("a", 63), label("b", 63), label("c", 63), label("d", 61)].join(".");
        let big: [&str; 16] = core::array::from_fn(|_| big.as_str());
        assert_eq!(CsrBuilder::serving("n", &big, &[]).unwrap_err(), Error::TooManySans);
        let ips = [parse_ip("10.0.0.1").unwrap(), parse_ip("fd00::1").unwrap()];
        let b = CsrBuilder::serving("node-1", &["node-1.example.com"], &ips).unwrap();
        let mut buf = [0u8; 2048];
        assert!(b.write_pem(&k1(), &mut buf).is_ok());
        assert_eq!(parse_ip("10.0.0"), Err(Error::InvalidIpAddress));
    }
}
