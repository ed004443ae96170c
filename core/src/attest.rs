//! An attested join: a node proves that its key lives in its TPM, and an approver checks that
//! proof before a certificate exists.
//!
//! # On the wire
//!
//! The bootstrap CSR object's `spec.request` holds the `CERTIFICATE REQUEST` block, then the
//! evidence as more PEM blocks (kube-apiserver v1.37 stores them and returns them byte for byte;
//! kube-controller-manager's signer reads only the first block):
//!
//! | label | contents |
//! |---|---|
//! | [`LABEL_PUBLIC`] `ATTESTED KEY PUBLIC` | the node key's `TPMT_PUBLIC` ([`crate::tpm::Public`]) |
//! | [`LABEL_DATA`] `ATTESTATION DATA` | the `TPMS_ATTEST` of `TPM2_Certify` ([`crate::tpm::Attest`]) |
//! | [`LABEL_SIGNATURE`] `ATTESTATION SIGNATURE` | its `TPMT_SIGNATURE` by the attestation key |
//! | [`LABEL_CERTIFICATE`] `ATTESTATION CERTIFICATE` | the attestation key's certificate, then its intermediates (1 to [`MAX_CHAIN`] blocks) |
//!
//! Nothing in them is secret. The certify's qualifying data is [`qualifying_data`]: a digest
//! of this CSR's public key and subject, so that an attestation binds one key to one node name
//! and cannot be carried onto another CSR.
//!
//! # The judgement ([`judge`])
//!
//! In this order, the first failure decides the [`AttestError`]: the blocks ([`Evidence::split`]:
//! the CSR first, each evidence block once, nothing else) → the TPM structures parse → the
//! attestation key's chain reaches a device CA ([`crate::verify::verify_device_der`]) → the
//! certify signature verifies with that key → the certified Name is the carried public area's
//! → that public area's point is the CSR's key → its attributes say it never left the TPM
//! ([`REQUIRED_ATTRIBUTES`]) → the qualifying data is this CSR's → the device's serial number is
//! enrolled ([`Enrolment`]) for exactly the CSR's node name.

use core::fmt;

use sha2::{Digest as _, Sha256};

use crate::backend::{SignatureVerifier, Verdict};
use crate::error::VerifyError;
use crate::pem;
use crate::request::{CertificateRequest, KeyAlgorithm};
use crate::tpm::{self, Attest, Public, Signature, TpmError};
use crate::verify::{Anchor, DEVICE_SERIAL_CAP, verify_device_der};

/// The label of the certified key's `TPMT_PUBLIC`.
pub const LABEL_PUBLIC: &str = "ATTESTED KEY PUBLIC";
/// The label of the `TPMS_ATTEST` (as GKE's TPM bootstrap named it).
pub const LABEL_DATA: &str = "ATTESTATION DATA";
/// The label of the `TPMT_SIGNATURE` over it.
pub const LABEL_SIGNATURE: &str = "ATTESTATION SIGNATURE";
/// The label of each certificate of the attestation key's chain.
pub const LABEL_CERTIFICATE: &str = "ATTESTATION CERTIFICATE";
/// The label of the CSR, the first block.
pub const LABEL_REQUEST: &str = "CERTIFICATE REQUEST";
/// The most certificates an attestation key's chain may carry (its own and intermediates).
pub const MAX_CHAIN: usize = 4;
/// The attributes of a key that never left its TPM: `fixedTPM`, `fixedParent` and
/// `sensitiveDataOrigin` (made inside, not imported; bound to this TPM and this parent).
pub const REQUIRED_ATTRIBUTES: u32 =
    tpm::attr::FIXED_TPM | tpm::attr::FIXED_PARENT | tpm::attr::SENSITIVE_DATA_ORIGIN;
/// What [`qualifying_data`] hashes first, so that the digest means nothing else.
pub const DOMAIN: &[u8] = b"kubeboot attested join v1\0";

/// The qualifying data of a CSR's `TPM2_Certify`: SHA-256 of [`DOMAIN`], the CSR's
/// SubjectPublicKeyInfo DER and its subject Name DER.
pub fn qualifying_data(spki: &[u8], subject: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(spki);
    h.update(subject);
    h.finalize().into()
}

/// Why an attestation was refused. Each has a stable [`name`](AttestError::name), the reason an
/// approver writes on the CSR it denies.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttestError {
    /// The request carries the CSR alone.
    Absent,
    /// The blocks are not the CSR followed by the evidence, each once (the field says what).
    Blocks(&'static str),
    /// A TPM structure was refused (which one, and why).
    Tpm(&'static str, TpmError),
    /// The attestation key's chain does not reach a device CA, or its certificate is not an
    /// attestation key's.
    Chain(VerifyError),
    /// The certify signature does not verify with the attestation key.
    Signature,
    /// The certified Name is not the carried public area's.
    NameMismatch,
    /// The carried public area's key is not the CSR's.
    KeyMismatch,
    /// The key's attributes do not say it never left its TPM.
    Duplicable,
    /// The qualifying data is not this CSR's (an attestation made for another CSR).
    Replayed,
    /// The device's serial number is not enrolled.
    NotEnrolled,
    /// The device is enrolled for another node name.
    WrongNode,
}

impl AttestError {
    /// The stable kebab-case name (`attestation-replayed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AttestError::Absent => "attestation-absent",
            AttestError::Blocks(_) => "attestation-blocks",
            AttestError::Tpm(..) => "attestation-malformed",
            AttestError::Chain(_) => "attestation-untrusted",
            AttestError::Signature => "attestation-bad-signature",
            AttestError::NameMismatch => "attestation-name-mismatch",
            AttestError::KeyMismatch => "attestation-key-mismatch",
            AttestError::Duplicable => "attestation-duplicable-key",
            AttestError::Replayed => "attestation-replayed",
            AttestError::NotEnrolled => "attestation-not-enrolled",
            AttestError::WrongNode => "attestation-wrong-node",
        }
    }
}

impl AttestError {
    /// The CamelCase identifier (`AttestationReplayed`, ...): a CSR condition's or Event's
    /// reason.
    pub fn ident(self) -> &'static str {
        match self {
            AttestError::Absent => "AttestationAbsent",
            AttestError::Blocks(_) => "AttestationBlocks",
            AttestError::Tpm(..) => "AttestationMalformed",
            AttestError::Chain(_) => "AttestationUntrusted",
            AttestError::Signature => "AttestationBadSignature",
            AttestError::NameMismatch => "AttestationNameMismatch",
            AttestError::KeyMismatch => "AttestationKeyMismatch",
            AttestError::Duplicable => "AttestationDuplicableKey",
            AttestError::Replayed => "AttestationReplayed",
            AttestError::NotEnrolled => "AttestationNotEnrolled",
            AttestError::WrongNode => "AttestationWrongNode",
        }
    }
}

impl fmt::Display for AttestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttestError::Absent => f.write_str("the request carries no attestation"),
            AttestError::Blocks(what) => write!(f, "the request's PEM blocks: {what}"),
            AttestError::Tpm(which, e) => write!(f, "the {which}: {e}"),
            AttestError::Chain(e) => write!(f, "the attestation key's certificate: {e}"),
            AttestError::Signature => {
                f.write_str("the certify signature does not verify with the attestation key")
            }
            AttestError::NameMismatch => {
                f.write_str("the certified Name is not the carried public area's")
            }
            AttestError::KeyMismatch => f.write_str("the certified key is not the CSR's key"),
            AttestError::Duplicable => f.write_str(
                "the key may have left its TPM (fixedTPM, fixedParent or sensitiveDataOrigin \
                 is not set)",
            ),
            AttestError::Replayed => {
                f.write_str("the qualifying data is not this CSR's (made for another CSR)")
            }
            AttestError::NotEnrolled => f.write_str("the device is not enrolled"),
            AttestError::WrongNode => f.write_str("the device is enrolled for another node name"),
        }
    }
}

/// The evidence blocks of a request, decoded.
#[derive(Clone, Debug)]
pub struct Evidence<'a> {
    /// The certified key's `TPMT_PUBLIC`.
    pub public: &'a [u8],
    /// The `TPMS_ATTEST`.
    pub attest: &'a [u8],
    /// The `TPMT_SIGNATURE`.
    pub signature: &'a [u8],
    /// The attestation key's certificate, then its intermediates (DER).
    pub chain: heapless::Vec<&'a [u8], MAX_CHAIN>,
}

impl<'a> Evidence<'a> {
    /// Split a CSR object's request (PEM) into its CSR and the evidence after it, decoding into
    /// `scratch` (as long as `request` is enough). The CSR alone is `Ok((csr, None))`; text
    /// between blocks is skipped, as Go's `pem.Decode` does.
    pub fn split(
        request: &[u8],
        scratch: &'a mut [u8],
    ) -> Result<(CertificateRequest<'a>, Option<Evidence<'a>>), AttestError> {
        let blocks = |what| AttestError::Blocks(what);
        let mut rest: &'a mut [u8] = scratch;
        let mut csr = None;
        let (mut public, mut attest, mut signature) = (None, None, None);
        let mut chain = heapless::Vec::new();
        for block in pem::blocks(request) {
            let block = block.map_err(|_| blocks("a block is not PEM"))?;
            let len = block.decode(rest).map_err(|_| blocks("a block's base64"))?.len();
            let (der, tail) = core::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            let der: &'a [u8] = der;
            let slot = match (block.label, csr.is_some()) {
                (LABEL_REQUEST, false) => {
                    let parsed = CertificateRequest::from_der(der)
                        .map_err(|_| blocks("the CERTIFICATE REQUEST does not parse"))?;
                    csr = Some(parsed);
                    continue;
                }
                (_, false) => return Err(blocks("the first block is not the CERTIFICATE REQUEST")),
                (LABEL_PUBLIC, true) => &mut public,
                (LABEL_DATA, true) => &mut attest,
                (LABEL_SIGNATURE, true) => &mut signature,
                (LABEL_CERTIFICATE, true) => {
                    chain
                        .push(der)
                        .map_err(|_| blocks("too many ATTESTATION CERTIFICATE blocks"))?;
                    continue;
                }
                (LABEL_REQUEST, true) => return Err(blocks("a second CERTIFICATE REQUEST")),
                _ => return Err(blocks("a block of an unknown label")),
            };
            if slot.replace(der).is_some() {
                return Err(blocks("an evidence block twice"));
            }
        }
        let csr = csr.ok_or(blocks("no CERTIFICATE REQUEST"))?;
        if public.is_none() && attest.is_none() && signature.is_none() && chain.is_empty() {
            return Ok((csr, None));
        }
        let public = public.ok_or(blocks("no ATTESTED KEY PUBLIC"))?;
        let attest = attest.ok_or(blocks("no ATTESTATION DATA"))?;
        let signature = signature.ok_or(blocks("no ATTESTATION SIGNATURE"))?;
        if chain.is_empty() {
            return Err(blocks("no ATTESTATION CERTIFICATE"));
        }
        Ok((csr, Some(Evidence { public, attest, signature, chain })))
    }
}

/// Write the evidence blocks a node appends after its CSR: the key's `TPMT_PUBLIC`, the
/// `TPMS_ATTEST` and `TPMT_SIGNATURE` of its certify, and each `CERTIFICATE` of `chain_pem` (the
/// attestation key's certificate first, as provisioning wrote it) relabelled
/// `ATTESTATION CERTIFICATE` (its base64 lines copied as they are). Returns the bytes written
/// into `out`. No certificate, more than [`MAX_CHAIN`], a block of another label or one with
/// headers is [`crate::Error::Malformed`].
pub fn write_evidence(
    public: &[u8],
    attest: &[u8],
    signature: &[u8],
    chain_pem: &[u8],
    out: &mut [u8],
) -> crate::Result<usize> {
    let mut at = 0usize;
    for (label, der) in [(LABEL_PUBLIC, public), (LABEL_DATA, attest), (LABEL_SIGNATURE, signature)]
    {
        let room = out.get_mut(at..).unwrap_or_default();
        at += pem::encode(label, der, room).map_err(|e| match e {
            crate::Error::BufferTooSmall { needed } => {
                crate::Error::BufferTooSmall { needed: at + needed }
            }
            e => e,
        })?;
    }
    let mut raw = |bytes: &[u8], out: &mut [u8]| -> crate::Result<()> {
        let end = at + bytes.len();
        out.get_mut(at..end)
            .ok_or(crate::Error::BufferTooSmall { needed: end })?
            .copy_from_slice(bytes);
        at = end;
        Ok(())
    };
    let mut certs = 0usize;
    for block in pem::blocks(chain_pem) {
        let block = block?;
        certs += 1;
        if block.label != "CERTIFICATE" || certs > MAX_CHAIN {
            return Err(crate::Error::Malformed);
        }
        let text = core::str::from_utf8(block.text).map_err(|_| crate::Error::Malformed)?;
        let mut lines = text.lines();
        lines.next(); // -----BEGIN CERTIFICATE-----
        raw(b"-----BEGIN ATTESTATION CERTIFICATE-----\n", out)?;
        for line in lines {
            let line = line.trim_end_matches('\r');
            if line.starts_with("-----END") {
                break;
            }
            if !line.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')) {
                return Err(crate::Error::Malformed);
            }
            raw(line.as_bytes(), out)?;
            raw(b"\n", out)?;
        }
        raw(b"-----END ATTESTATION CERTIFICATE-----\n", out)?;
    }
    if certs == 0 {
        return Err(crate::Error::Malformed);
    }
    Ok(at)
}

/// The operator's allowlist of devices: one line per device, `<serial number> <node name>`
/// (spaces or tabs between; a serial number is printable ASCII; `#` starts a comment; blank
/// lines are skipped). One device, one name: a
/// serial number or a node name on two lines is refused when the list is read.
#[derive(Clone, Copy, Debug)]
pub struct Enrolment<'a> {
    text: &'a str,
}

/// What a device serial number may be, wherever one is typed (the allowlist, `kubeboot device
/// provision`): 1 to [`DEVICE_SERIAL_CAP`] bytes of printable ASCII without spaces.
pub fn check_serial(serial: &str) -> Result<(), &'static str> {
    if serial.is_empty() {
        Err("an empty serial number")
    } else if !serial.bytes().all(|b| b.is_ascii_graphic()) {
        Err("a serial number of other than printable ASCII")
    } else if serial.len() > DEVICE_SERIAL_CAP {
        Err("a serial number longer than 64 bytes")
    } else {
        Ok(())
    }
}

/// Why an allowlist was refused: the line (counting from 1) and what is wrong with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnrolmentError {
    /// The line, counting from 1.
    pub line: usize,
    /// What is wrong.
    pub what: &'static str,
}

impl fmt::Display for EnrolmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl<'a> Enrolment<'a> {
    /// Read an allowlist (see the [type docs](Enrolment)); every line is checked here.
    pub fn parse(text: &'a str) -> Result<Self, EnrolmentError> {
        let list = Enrolment { text };
        for (i, entry) in list.lines() {
            let err = |what| EnrolmentError { line: i, what };
            let (serial, node) = entry.map_err(err)?;
            crate::csr::validate_node_name(node).map_err(|_| err("not a node name"))?;
            for (_, other) in list.lines().take_while(|(j, _)| *j < i) {
                let Ok((s, n)) = other else { continue };
                if s == serial {
                    return Err(err("a serial number enrolled twice (one device, one name)"));
                }
                if n == node {
                    return Err(err("a node name enrolled twice (one device, one name)"));
                }
            }
        }
        Ok(list)
    }

    /// The entries: (line number, `Ok((serial, node))` or what is wrong), comments and blank
    /// lines skipped.
    fn lines(&self) -> impl Iterator<Item = (usize, Result<(&'a str, &'a str), &'static str>)> {
        self.text.lines().enumerate().filter_map(|(i, line)| {
            let line = line.split('#').next().unwrap_or("");
            let mut fields = line.split([' ', '\t', '\r']).filter(|f| !f.is_empty());
            let entry = match (fields.next(), fields.next(), fields.next()) {
                (None, ..) => return None,
                (Some(serial), Some(node), None) => check_serial(serial).map(|()| (serial, node)),
                _ => Err("want `<serial number> <node name>`"),
            };
            Some((i + 1, entry))
        })
    }

    /// The node name `serial` is enrolled for.
    pub fn node_of(&self, serial: &str) -> Option<&'a str> {
        self.lines().find_map(|(_, e)| e.ok().filter(|(s, _)| *s == serial).map(|(_, n)| n))
    }

    /// How many devices are enrolled.
    pub fn len(&self) -> usize {
        self.lines().count()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What an accepted attestation proved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attested<'a> {
    /// The device's serial number (from its attestation key's certificate).
    pub serial: heapless::String<DEVICE_SERIAL_CAP>,
    /// The node name it is enrolled for, the CSR's.
    pub node: &'a str,
    /// The certified key's TPM Name (`000b` ‖ SHA-256 of its `TPMT_PUBLIC`), as
    /// `tpm2_readpublic` prints it.
    pub key_name: [u8; 34],
}

/// Judge a bootstrap CSR's attestation (see the [module docs](self) for the order): `csr` and
/// `evidence` from [`Evidence::split`], the device CAs, the operator's allowlist, `now` in unix
/// seconds.
pub fn judge<'e>(
    verifier: &dyn SignatureVerifier,
    csr: &CertificateRequest<'_>,
    evidence: &Evidence<'_>,
    device_cas: &[Anchor<'_>],
    enrolment: &Enrolment<'e>,
    now: i64,
) -> Result<Attested<'e>, AttestError> {
    let public =
        Public::parse(evidence.public).map_err(|e| AttestError::Tpm("key's public area", e))?;
    let attest = Attest::parse(evidence.attest).map_err(|e| AttestError::Tpm("attestation", e))?;
    let signature =
        Signature::parse(evidence.signature).map_err(|e| AttestError::Tpm("signature", e))?;
    let device = verify_device_der(verifier, &evidence.chain, device_cas, now)
        .map_err(AttestError::Chain)?;
    if verifier.p256_sha256(&device.point, evidence.attest, &signature.rs) != Verdict::Valid {
        return Err(AttestError::Signature);
    }
    let key_name = public.name();
    if attest.name != key_name.as_slice() {
        return Err(AttestError::NameMismatch);
    }
    if csr.key_algorithm() != KeyAlgorithm::EcP256 || csr.public_key() != public.point.as_slice() {
        return Err(AttestError::KeyMismatch);
    }
    if !public.has(REQUIRED_ATTRIBUTES) {
        return Err(AttestError::Duplicable);
    }
    if attest.extra_data != qualifying_data(csr.spki_der(), csr.subject_der()).as_slice() {
        return Err(AttestError::Replayed);
    }
    let enrolled = enrolment.node_of(&device.serial).ok_or(AttestError::NotEnrolled)?;
    let cn = csr.common_name().ok_or(AttestError::WrongNode)?;
    if !cn.starts_with("system:node:")
        || cn.as_str().and_then(|s| s.strip_prefix("system:node:")) != Some(enrolled)
    {
        return Err(AttestError::WrongNode);
    }
    Ok(Attested { serial: device.serial, node: enrolled, key_name })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enrolment_is_one_device_one_name() {
        let list =
            Enrolment::parse("# factory batch 7\nSN-1 edge-1\n\n  SN-2\tedge-2 # spare\n").unwrap();
        assert_eq!(list.node_of("SN-1"), Some("edge-1"));
        assert_eq!(list.node_of("SN-2"), Some("edge-2"));
        assert_eq!(list.node_of("SN-3"), None);
        assert_eq!(list.len(), 2);
        let refused = |t| Enrolment::parse(t).unwrap_err();
        assert_eq!(refused("SN-1 a\nSN-1 b\n").line, 2);
        assert_eq!(
            refused("SN-1 a\nSN-2 a\n").what,
            "a node name enrolled twice (one device, one name)"
        );
        assert_eq!(refused("SN-1\n").line, 1);
        assert_eq!(refused("SN-1 a b\n").line, 1);
        assert_eq!(refused("SN-1 Not_A_Name\n").what, "not a node name");
        assert_eq!(refused(&alloc_free_long()).what, "a serial number longer than 64 bytes");
    }

    fn alloc_free_long() -> heapless::String<128> {
        let mut s = heapless::String::new();
        for _ in 0..65 {
            s.push('x').unwrap();
        }
        s.push_str(" n").unwrap();
        s
    }

    /// A PEM block of `label` around `der`.
    fn block(label: &str, der: &[u8]) -> std::vec::Vec<u8> {
        let mut out = std::vec![0u8; pem::encoded_len(label, der.len()).unwrap()];
        let n = pem::encode(label, der, &mut out).unwrap();
        out.truncate(n);
        out
    }

    fn csr() -> std::vec::Vec<u8> {
        let key = crate::key::NodeKey::from_entropy(&[3u8; 32]).unwrap();
        let mut pem = std::vec![0u8; 2048];
        let n =
            crate::csr::CsrBuilder::client("edge-1").unwrap().write_pem(&key, &mut pem).unwrap();
        pem.truncate(n);
        pem
    }

    fn split_err(parts: &[&[u8]]) -> AttestError {
        let request = parts.concat();
        let mut scratch = std::vec![0u8; request.len()];
        match Evidence::split(&request, &mut scratch) {
            Err(e) => e,
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn the_blocks_are_the_csr_then_each_evidence_block_once() {
        let (csr, p, d, s, c) = (
            csr(),
            block(LABEL_PUBLIC, b"p"),
            block(LABEL_DATA, b"d"),
            block(LABEL_SIGNATURE, b"s"),
            block(LABEL_CERTIFICATE, b"c"),
        );
        let request = [&csr[..], &p, &d, &s, &c, &c].concat();
        let mut scratch = std::vec![0u8; request.len()];
        let (_, e) = Evidence::split(&request, &mut scratch).unwrap();
        let e = e.unwrap();
        assert_eq!((e.public, e.attest, e.signature), (&b"p"[..], &b"d"[..], &b"s"[..]));
        assert_eq!(e.chain.len(), 2);
        let mut scratch = std::vec![0u8; csr.len()];
        assert!(Evidence::split(&csr, &mut scratch).unwrap().1.is_none(), "the CSR alone");
        let blocks = |what| AttestError::Blocks(what);
        assert_eq!(
            split_err(&[&p, &csr]),
            blocks("the first block is not the CERTIFICATE REQUEST")
        );
        assert_eq!(split_err(&[&csr, &p, &p, &d, &s, &c]), blocks("an evidence block twice"));
        assert_eq!(split_err(&[&csr, &d, &s, &c]), blocks("no ATTESTED KEY PUBLIC"));
        assert_eq!(split_err(&[&csr, &p, &s, &c]), blocks("no ATTESTATION DATA"));
        assert_eq!(split_err(&[&csr, &p, &d, &c]), blocks("no ATTESTATION SIGNATURE"));
        assert_eq!(split_err(&[&csr, &p, &d, &s]), blocks("no ATTESTATION CERTIFICATE"));
        assert_eq!(
            split_err(&[&csr, &p, &d, &s, &c, &c, &c, &c, &c]),
            blocks("too many ATTESTATION CERTIFICATE blocks")
        );
        assert_eq!(split_err(&[&csr, &csr]), blocks("a second CERTIFICATE REQUEST"));
        assert_eq!(
            split_err(&[&csr, &block("VM IDENTITY", b"{}")]),
            blocks("a block of an unknown label")
        );
        assert_eq!(split_err(&[&csr[..csr.len() - 10]]), blocks("a block is not PEM"));
        assert_eq!(
            split_err(&[
                b"-----BEGIN CERTIFICATE REQUEST-----\n!!!!\n-----END CERTIFICATE REQUEST-----\n"
            ]),
            blocks("a block's base64")
        );
        assert_eq!(
            split_err(&[&block(LABEL_REQUEST, b"junk")]),
            blocks("the CERTIFICATE REQUEST does not parse")
        );
        assert_eq!(split_err(&[b""]), blocks("no CERTIFICATE REQUEST"));
    }

    #[test]
    fn the_node_writes_what_the_approver_reads() {
        let cert = block("CERTIFICATE", &[0x30, 0x03, 0x02, 0x01, 0x01]);
        let mut out = std::vec![0u8; 4096];
        let n =
            write_evidence(b"pub", b"att", b"sig", &[&cert[..], &cert].concat(), &mut out).unwrap();
        let request = [&csr()[..], &out[..n]].concat();
        let mut scratch = std::vec![0u8; request.len()];
        let e = Evidence::split(&request, &mut scratch).unwrap().1.unwrap();
        assert_eq!((e.public, e.attest, e.signature), (&b"pub"[..], &b"att"[..], &b"sig"[..]));
        assert_eq!(e.chain.as_slice(), &[&[0x30, 0x03, 0x02, 0x01, 0x01][..]; 2]);
        // What a chain file must be.
        let mut refused = |chain: &[u8]| write_evidence(b"p", b"a", b"s", chain, &mut out).err();
        assert_eq!(refused(b""), Some(crate::Error::Malformed));
        assert_eq!(refused(&block("PRIVATE KEY", b"k")), Some(crate::Error::Malformed));
        assert_eq!(
            refused(&[&cert[..], &cert, &cert, &cert, &cert].concat()),
            Some(crate::Error::Malformed)
        );
        let headers = b"-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\nMAM=\n-----END CERTIFICATE-----\n";
        assert_eq!(refused(headers), Some(crate::Error::Malformed));
        assert!(matches!(
            write_evidence(b"p", b"a", b"s", &cert, &mut [0u8; 40]),
            Err(crate::Error::BufferTooSmall { .. })
        ));
    }

    #[test]
    fn qualifying_data_binds_key_and_subject() {
        let a = qualifying_data(b"key-a", b"name-1");
        assert_ne!(a, qualifying_data(b"key-b", b"name-1"));
        assert_ne!(a, qualifying_data(b"key-a", b"name-2"));
        assert_eq!(a, qualifying_data(b"key-a", b"name-1"));
    }
}
