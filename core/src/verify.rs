//! Issued-certificate validation: before an agent writes a certificate the signer returned, it
//! checks that the certificate chains to the cluster CA, is valid now, carries *our* public key,
//! names us exactly, and allows the use we asked for.
//!
//! The certificates are read in place (a DER walker that leaves unusual headers to `der`);
//! nothing is copied and, on the ECDSA paths, nothing is allocated. RSA issuers (kubeadm's
//! default CA is RSA-2048) need the `rsa` feature (which needs `alloc`); P-384 issuers need the
//! `p384` feature. Without them such a chain fails with [`Reason::UnsupportedAlgorithm`].
//!
//! Stack: the P-256 verification itself dominates (about 8.9 KiB measured on x86-64 at
//! `opt-level = "z"`); the parsing and path search add about 3 KiB for a leaf signed directly by
//! the CA, plus about 320 bytes per intermediate on the path. The PEM entry point needs no more,
//! the DER it decodes lives in the caller's scratch buffer.
//!
//! # Order of checks
//!
//! The first failing step decides the [`Reason`]:
//!
//! 1. **Parse** the leaf, every intermediate and every CA (sizes and counts are capped by
//!    [`MAX_CERT_LEN`], [`MAX_INTERMEDIATES`], [`MAX_CAS`]) → [`Reason::Malformed`].
//! 2. **Path and signatures**: a depth-first search from the leaf through the intermediates to a
//!    CA of the bundle, matching issuer to subject by exact DER name bytes (at most
//!    [`MAX_DEPTH`] intermediates, at most [`MAX_SIGNATURE_CHECKS`] signature verifications).
//!    Intermediates must have basicConstraints `CA:TRUE`, keyCertSign when keyUsage is present,
//!    a respected pathLenConstraint and no unknown critical extension; a CA of the bundle is a
//!    trust anchor and only its pathLenConstraint is enforced (as Go's `x509.Verify` does).
//!    A signature-valid path whose intermediates or CA are outside their validity at `now` is
//!    skipped in favour of another path; if no path is fully valid the result is, in this order
//!    of preference: that time error ([`Reason::Expired`]/[`Reason::NotYetValid`]),
//!    [`Reason::BadSignature`] (an issuer with the right name did not verify),
//!    [`Reason::UnsupportedAlgorithm`], [`Reason::Untrusted`].
//! 3. **Time** of the leaf: `now < notBefore` → [`Reason::NotYetValid`], `now > notAfter` →
//!    [`Reason::Expired`], both with [`Detail::Validity`].
//! 4. **Key**: the leaf's SubjectPublicKeyInfo DER equals ours → else [`Reason::KeyMismatch`].
//! 5. **Subject**: exactly one `CN=system:node:<node name>` and one `O=system:nodes`, nothing
//!    else (PrintableString or UTF8String) → else [`Reason::SubjectMismatch`] with field
//!    `subject.CN`, `subject.O` or `subject`; then the **SANs**: none for a client certificate,
//!    exactly the requested DNS names (ASCII case-insensitive) and IPs as sets for a serving one
//!    → else [`Reason::SubjectMismatch`] with field `san`.
//! 6. **Usage**: an unknown critical extension on the leaf → [`Reason::WrongUsage`]
//!    (`criticalExtension`), since we cannot honour a constraint we do not understand;
//!    extendedKeyUsage must exist and contain clientAuth (client) / serverAuth (serving)
//!    (`anyExtendedKeyUsage` is not enough: the kubelet signers never issue it) → field
//!    `extendedKeyUsage`; a keyUsage without digitalSignature → field `keyUsage`.
//! 7. **CA**: basicConstraints `CA:TRUE` on the leaf → [`Reason::IsCa`].

use core::fmt::{self, Write as _};
use core::net::IpAddr;

use der::SliceReader;
use der::asn1::ObjectIdentifier;

use crate::backend::{RsaHash, SignatureVerifier, Software, Verdict};
use crate::error::{Detail, Error, Reason, VerifyError};

/// The largest certificate (DER) we look at, in bytes.
pub const MAX_CERT_LEN: usize = 16 * 1024;
/// The most intermediates accepted with a leaf.
pub const MAX_INTERMEDIATES: usize = 8;
/// The most CAs accepted in a CA bundle.
pub const MAX_CAS: usize = 16;
/// The most intermediates on a path from the leaf to a CA.
pub const MAX_DEPTH: usize = 8;
/// The most signature verifications one validation performs (bounds hostile bundles).
pub const MAX_SIGNATURE_CHECKS: usize = 32;
/// Capacity of [`Verified::ca_subject`]; longer renderings are truncated and end in `...`.
pub const CA_SUBJECT_CAP: usize = 256;

const fn oid(s: &str) -> ObjectIdentifier {
    ObjectIdentifier::new_unwrap(s)
}

const OID_ECDSA_SHA256: ObjectIdentifier = oid("1.2.840.10045.4.3.2");
const OID_ECDSA_SHA384: ObjectIdentifier = oid("1.2.840.10045.4.3.3");
const OID_ECDSA_SHA512: ObjectIdentifier = oid("1.2.840.10045.4.3.4");
const OID_RSA_SHA256: ObjectIdentifier = oid("1.2.840.113549.1.1.11");
const OID_RSA_SHA384: ObjectIdentifier = oid("1.2.840.113549.1.1.12");
const OID_RSA_SHA512: ObjectIdentifier = oid("1.2.840.113549.1.1.13");
const OID_EC_PUBLIC_KEY: ObjectIdentifier = oid("1.2.840.10045.2.1");
const OID_RSA_ENCRYPTION: ObjectIdentifier = oid("1.2.840.113549.1.1.1");
const OID_P256: ObjectIdentifier = oid("1.2.840.10045.3.1.7");
const OID_P384: ObjectIdentifier = oid("1.3.132.0.34");
const OID_BASIC_CONSTRAINTS: ObjectIdentifier = oid("2.5.29.19");
const OID_KEY_USAGE: ObjectIdentifier = oid("2.5.29.15");
const OID_EXT_KEY_USAGE: ObjectIdentifier = oid("2.5.29.37");
const OID_SUBJECT_ALT_NAME: ObjectIdentifier = oid("2.5.29.17");
const OID_SUBJECT_KEY_ID: ObjectIdentifier = oid("2.5.29.14");
const OID_AUTHORITY_KEY_ID: ObjectIdentifier = oid("2.5.29.35");
const OID_SERVER_AUTH: ObjectIdentifier = oid("1.3.6.1.5.5.7.3.1");
const OID_CLIENT_AUTH: ObjectIdentifier = oid("1.3.6.1.5.5.7.3.2");
const OID_CN: ObjectIdentifier = oid("2.5.4.3");
const OID_O: ObjectIdentifier = oid("2.5.4.10");

/// keyUsage bit numbers (RFC 5280 §4.2.1.3).
const KU_DIGITAL_SIGNATURE: u16 = 1 << 0;
const KU_KEY_CERT_SIGN: u16 = 1 << 5;

/// Which certificate was requested: the same profile the CSR was built with. A client certificate
/// needs EKU clientAuth and no subject alternative names; a serving certificate needs EKU
/// serverAuth and exactly the requested DNS names and IP addresses as SANs (compared as sets; an
/// IPv4-mapped IPv6 address equals its IPv4 form).
pub use crate::csr::Profile;

/// What the issued certificate must contain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected<'a> {
    /// The node name as put in the CSR; the subject CN must be `system:node:<node_name>`.
    pub node_name: &'a str,
    /// Our public key as SubjectPublicKeyInfo DER (91 bytes for P-256), compared byte for byte.
    pub public_key: &'a [u8],
    /// The requested profile.
    pub profile: Profile<'a>,
}

/// What a successful validation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The leaf's notBefore (unix seconds).
    pub not_before: i64,
    /// The leaf's notAfter (unix seconds).
    pub not_after: i64,
    /// The subject of the CA the path ends at, RFC 4514 style (`CN=kubernetes`; last RDN first).
    pub ca_subject: heapless::String<CA_SUBJECT_CAP>,
    /// The index, in the CA bundle, of that CA.
    pub ca_index: usize,
    /// How many intermediates the path used.
    pub intermediates_used: usize,
}

// ---------------------------------------------------------------------------------------------
// Entry points

/// Validate an issued certificate given as DER: the leaf, the intermediates that came with it
/// (any order, unused ones are ignored) and the CA bundle (one or more CAs, e.g. during CA
/// rotation). See the [module docs](self) for the checks and their order.
///
/// Never allocates on ECDSA paths; RSA issuers allocate (feature `rsa`). Signatures are checked
/// with the portable [`Software`] backend; see [`verify_issued_der_with`] for another one.
pub fn verify_issued_der(
    leaf: &[u8],
    intermediates: &[&[u8]],
    cas: &[&[u8]],
    expected: &Expected<'_>,
    now: i64,
) -> Result<Verified, VerifyError> {
    verify_issued_der_with(&Software, leaf, intermediates, cas, expected, now)
}

/// [`verify_issued_der`] with the signature checks done by `verifier` (for example
/// `crate::backend::ring::Ring`). Every other step is the same code; a conforming backend gives
/// the same result on every input.
///
/// The CAs are parsed on every call; an agent that validates every renewal against the same
/// bundle can parse it once into [`Anchor`]s and call [`verify_issued_der_anchored`] (same
/// search, same verdicts).
pub fn verify_issued_der_with(
    verifier: &dyn SignatureVerifier,
    leaf: &[u8],
    intermediates: &[&[u8]],
    cas: &[&[u8]],
    expected: &Expected<'_>,
    now: i64,
) -> Result<Verified, VerifyError> {
    if cas.len() > MAX_CAS {
        return Err(malformed());
    }
    verify_leaf(verifier, leaf, intermediates, CaSet::Der(cas), expected, now)
}

/// [`verify_issued_der_with`] against CAs parsed beforehand (with [`Anchor::from_der`] or
/// [`TrustedCas`]): the CA bundle is not parsed again, so a renewal costs the leaf's parse, the
/// signature check and the leaf checks only — what webpki does with its `TrustAnchor`s. Gives the
/// same result as [`verify_issued_der_with`] on the CAs' DER for every input. An empty `cas` is
/// [`Reason::Untrusted`], more than [`MAX_CAS`] is [`Reason::Malformed`].
pub fn verify_issued_der_anchored(
    verifier: &dyn SignatureVerifier,
    leaf: &[u8],
    intermediates: &[&[u8]],
    cas: &[Anchor<'_>],
    expected: &Expected<'_>,
    now: i64,
) -> Result<Verified, VerifyError> {
    if cas.len() > MAX_CAS {
        return Err(malformed());
    }
    verify_leaf(verifier, leaf, intermediates, CaSet::Parsed(cas), expected, now)
}

/// The common body of the DER entry points.
fn verify_leaf(
    verifier: &dyn SignatureVerifier,
    leaf: &[u8],
    intermediates: &[&[u8]],
    cas: CaSet<'_>,
    expected: &Expected<'_>,
    now: i64,
) -> Result<Verified, VerifyError> {
    // 1. Parse everything.
    if intermediates.len() > MAX_INTERMEDIATES {
        return Err(malformed());
    }
    // The subject is checked against the node name during the parse (step 5's verdict, kept
    // for its turn), so the name is walked once.
    let mut subject = None;
    let leaf = Cert::parse_leaf(leaf, expected.node_name, &mut subject)?;

    // 1. (the other certificates) and 2. Path and signatures (time of the issuers included).
    let (ca_index, depth, ca_subject_der) =
        find_path(verifier, &leaf, intermediates, cas, now).map_err(|e| no_path(leaf.issuer, e))?;

    // 3.–7. The leaf itself.
    check_leaf(&leaf, subject, expected, now)?;

    let mut verified = Verified {
        not_before: leaf.not_before,
        not_after: leaf.not_after,
        ca_subject: heapless::String::new(),
        ca_index,
        intermediates_used: depth,
    };
    // A parsed CA's subject, when it is one plain CN, was found once by `Anchor::from_der`.
    let plain_cn = match cas {
        CaSet::Parsed(anchors) => anchors.get(ca_index).and_then(|a| a.plain_cn),
        CaSet::Der(_) => None,
    };
    if !plain_cn.is_some_and(|cn| push_plain_cn(cn, &mut verified.ca_subject)) {
        render_name(ca_subject_der, &mut verified.ca_subject);
    }
    Ok(verified)
}

/// One CA certificate of the trust bundle, parsed once and checked for well-formedness (step 1
/// of the [module docs](self)), for [`verify_issued_der_anchored`] / [`verify_issued_anchored`].
/// It borrows the DER it was parsed from and allocates nothing; keep it as long as the CA bundle
/// does not change (the same CA validates every rotation). The CA's validity period and
/// constraints are still checked at each validation, against that call's `now`.
#[derive(Clone, Copy)]
pub struct Anchor<'a> {
    cert: Cert<'a>,
    der: &'a [u8],
    /// The subject's value when it is one plain CN (see [`plain_single_cn`]), for
    /// [`Verified::ca_subject`].
    plain_cn: Option<&'a str>,
}

impl<'a> Anchor<'a> {
    /// Parse one CA certificate (DER). Errors are [`Reason::Malformed`], exactly when
    /// [`verify_issued_der`] would reject the same bytes as a CA.
    pub fn from_der(der: &'a [u8]) -> Result<Self, VerifyError> {
        let cert = Cert::parse(der)?;
        Ok(Anchor { cert, der, plain_cn: plain_single_cn(cert.subject) })
    }

    /// The DER this anchor was parsed from.
    pub fn der(&self) -> &'a [u8] {
        self.der
    }

    /// The CA's notBefore (unix seconds).
    pub fn not_before(&self) -> i64 {
        self.cert.not_before
    }

    /// The CA's notAfter (unix seconds).
    pub fn not_after(&self) -> i64 {
        self.cert.not_after
    }
}

impl fmt::Debug for Anchor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut subject = heapless::String::<CA_SUBJECT_CAP>::new();
        render_name(self.cert.subject, &mut subject);
        f.debug_struct("Anchor")
            .field("subject", &subject.as_str())
            .field("not_before", &self.cert.not_before)
            .field("not_after", &self.cert.not_after)
            .finish()
    }
}

/// A CA bundle parsed once: up to `N` (at most [`MAX_CAS`]) [`Anchor`]s in a fixed-capacity
/// array (no heap; 208 bytes per anchor on 64-bit targets, so pick `N` to fit the bundle on
/// small stacks). Dereferences to `[Anchor]` for [`verify_issued_der_anchored`] and
/// [`verify_issued_anchored`].
pub struct TrustedCas<'a, const N: usize = MAX_CAS> {
    anchors: heapless::Vec<Anchor<'a>, N>,
}

impl<'a, const N: usize> TrustedCas<'a, N> {
    /// Parse every CA of a bundle given as DER. More than `N` or [`MAX_CAS`] CAs, or a CA that
    /// does not parse, is [`Reason::Malformed`]. An empty bundle is accepted here and makes every
    /// validation [`Reason::Untrusted`], as with [`verify_issued_der`].
    pub fn from_der(cas: &[&'a [u8]]) -> Result<Self, VerifyError> {
        if cas.len() > MAX_CAS {
            return Err(malformed());
        }
        let mut anchors = heapless::Vec::new();
        for der in cas {
            anchors.push(Anchor::from_der(der)?).map_err(|_| malformed())?;
        }
        Ok(TrustedCas { anchors })
    }

    /// Parse every `CERTIFICATE` block of a PEM CA bundle (other blocks are ignored), decoding
    /// the DER into `scratch`, which the anchors then borrow ([`scratch_len`]`(b"", ca_pem)` bytes
    /// are enough). No certificate, PEM that does not decode, a CA that does not parse or more
    /// than `N` / [`MAX_CAS`] CAs is [`Error::Verify`] with [`Reason::Malformed`]; a short
    /// `scratch` is [`Error::BufferTooSmall`].
    pub fn from_pem(ca_pem: &[u8], scratch: &'a mut [u8]) -> Result<Self, Error> {
        let needed = scratch_len(b"", ca_pem);
        if scratch.len() < needed {
            return Err(Error::BufferTooSmall { needed });
        }
        let mut ders: [&[u8]; MAX_CAS] = [&[]; MAX_CAS];
        let (n, _) = decode_all(ca_pem, scratch, &mut ders)?;
        let ders = ders.get(..n).unwrap_or(&[]);
        if ders.is_empty() {
            return Err(malformed().into());
        }
        Ok(Self::from_der(ders)?)
    }

    /// The anchors, in bundle order ([`Verified::ca_index`] indexes this slice).
    pub fn anchors(&self) -> &[Anchor<'a>] {
        &self.anchors
    }
}

impl<'a, const N: usize> core::ops::Deref for TrustedCas<'a, N> {
    type Target = [Anchor<'a>];
    fn deref(&self) -> &[Anchor<'a>] {
        &self.anchors
    }
}

impl<const N: usize> fmt::Debug for TrustedCas<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.anchors.iter()).finish()
    }
}

/// Where the search finds its CAs.
#[derive(Clone, Copy)]
enum CaSet<'s> {
    /// DER, parsed in [`find_path`] (the first one's parse is kept for the search).
    Der(&'s [&'s [u8]]),
    /// Parsed beforehand.
    Parsed(&'s [Anchor<'s>]),
}

/// Step 1 for the intermediates and CAs, then the search of step 2; out of line so its state is
/// not in the caller's frame afterwards.
#[inline(never)]
fn find_path<'s>(
    verifier: &'s dyn SignatureVerifier,
    leaf: &Cert<'_>,
    intermediates: &'s [&'s [u8]],
    cas: CaSet<'s>,
    now: i64,
) -> Result<(usize, usize, &'s [u8]), VerifyError> {
    for der in intermediates {
        Cert::parse(der)?;
    }
    // The first CA's parse is kept for the search (usually the only CA: parsed once, not twice).
    let mut first_ca = None;
    if let CaSet::Der(cas) = cas {
        for der in cas {
            let ca = Cert::parse(der)?;
            first_ca.get_or_insert(ca);
        }
    }
    let mut search = Search {
        verifier,
        intermediates,
        cas,
        first_ca,
        now,
        budget: MAX_SIGNATURE_CHECKS,
        ca_subject: &[],
        path: [0; MAX_DEPTH],
        time_error: None,
        bad_signature: false,
        unsupported: false,
        constraint: None,
    };
    match search.extend(leaf, 0)? {
        Some((ca_index, depth)) => Ok((ca_index, depth, search.ca_subject)),
        None => Err(search.failure()),
    }
}

/// Steps 3–7 on the leaf.
#[inline(never)]
fn check_leaf(
    leaf: &Cert<'_>,
    subject_mismatch: Option<&'static str>,
    expected: &Expected<'_>,
    now: i64,
) -> Result<(), VerifyError> {
    // 3. Time of the leaf.
    leaf.check_time(now)?;

    // 4. Key.
    if leaf.spki != expected.public_key {
        return Err(VerifyError::new(Reason::KeyMismatch));
    }

    // 5. Subject (checked by the parse) and SANs.
    if let Some(field) = subject_mismatch {
        return Err(VerifyError::field(Reason::SubjectMismatch, field));
    }
    check_sans(leaf.ext.san, &expected.profile)?;

    // 6. Usage.
    if leaf.ext.unknown_critical {
        return Err(VerifyError::field(Reason::WrongUsage, "criticalExtension"));
    }
    let wanted = match expected.profile {
        Profile::Client => OID_CLIENT_AUTH,
        Profile::Serving { .. } => OID_SERVER_AUTH,
    };
    let eku_ok = match leaf.ext.eku {
        Some(list) => oid_list_contains(list, &wanted)?,
        None => false,
    };
    if !eku_ok {
        return Err(VerifyError::field(Reason::WrongUsage, "extendedKeyUsage"));
    }
    if let Some(ku) = leaf.ext.key_usage {
        if ku & KU_DIGITAL_SIGNATURE == 0 {
            return Err(VerifyError::field(Reason::WrongUsage, "keyUsage"));
        }
    }

    // 7. CA.
    if leaf.ext.is_ca {
        return Err(VerifyError::new(Reason::IsCa));
    }
    Ok(())
}

/// How many bytes of scratch [`verify_issued`] needs for these inputs: the sum over every
/// `CERTIFICATE` block of an upper bound of its decoded size (about ¾ of the PEM text).
pub fn scratch_len(cert_pem: &[u8], ca_pem: &[u8]) -> usize {
    let mut total = 0usize;
    for input in [cert_pem, ca_pem] {
        for block in crate::pem::blocks(input).flatten() {
            if block.label == "CERTIFICATE" {
                total = total.saturating_add(block.text.len() / 4 * 3 + 3);
            }
        }
    }
    total
}

/// Validate an issued certificate given as PEM: `cert_pem` is the signer's answer (leaf first,
/// intermediates may follow; blocks other than `CERTIFICATE` are ignored) and `ca_pem` the CA
/// bundle. `scratch` receives the decoded DER of every certificate; [`scratch_len`] says how
/// much is needed (a little over ¾ of the PEM text; 8 KiB is plenty for a leaf and two CAs).
///
/// Errors are [`Error::Verify`] (see [`verify_issued_der`]; PEM that does not decode, no
/// certificate in either input, or too many certificates are [`Reason::Malformed`]) or
/// [`Error::BufferTooSmall`] when `scratch` is short.
pub fn verify_issued(
    cert_pem: &[u8],
    ca_pem: &[u8],
    expected: &Expected<'_>,
    now: i64,
    scratch: &mut [u8],
) -> Result<Verified, Error> {
    verify_issued_with(&Software, cert_pem, ca_pem, expected, now, scratch)
}

/// [`verify_issued`] with the signature checks done by `verifier`.
pub fn verify_issued_with(
    verifier: &dyn SignatureVerifier,
    cert_pem: &[u8],
    ca_pem: &[u8],
    expected: &Expected<'_>,
    now: i64,
    scratch: &mut [u8],
) -> Result<Verified, Error> {
    let needed = scratch_len(cert_pem, ca_pem);
    if scratch.len() < needed {
        return Err(Error::BufferTooSmall { needed });
    }
    let mut chain: [&[u8]; MAX_INTERMEDIATES + 1] = [&[]; MAX_INTERMEDIATES + 1];
    let mut cas: [&[u8]; MAX_CAS] = [&[]; MAX_CAS];
    let (chain_n, rest) = decode_all(cert_pem, scratch, &mut chain)?;
    let (ca_n, _) = decode_all(ca_pem, rest, &mut cas)?;
    let (leaf, inter) = match chain.get(..chain_n) {
        Some([leaf, inter @ ..]) => (*leaf, inter),
        _ => return Err(malformed().into()),
    };
    let cas = cas.get(..ca_n).unwrap_or(&[]);
    if cas.is_empty() {
        return Err(malformed().into());
    }
    Ok(verify_issued_der_with(verifier, leaf, inter, cas, expected, now)?)
}

/// [`verify_issued_with`] against CAs parsed beforehand ([`TrustedCas::from_pem`]): `cert_pem`
/// is decoded into `scratch` ([`scratch_len`]`(cert_pem, b"")` bytes), the CAs are not parsed
/// again. Same result as [`verify_issued_with`] with the bundle's PEM, except that a short
/// `scratch` reports only what `cert_pem` needs.
pub fn verify_issued_anchored(
    verifier: &dyn SignatureVerifier,
    cert_pem: &[u8],
    cas: &[Anchor<'_>],
    expected: &Expected<'_>,
    now: i64,
    scratch: &mut [u8],
) -> Result<Verified, Error> {
    let needed = scratch_len(cert_pem, b"");
    if scratch.len() < needed {
        return Err(Error::BufferTooSmall { needed });
    }
    let mut chain: [&[u8]; MAX_INTERMEDIATES + 1] = [&[]; MAX_INTERMEDIATES + 1];
    let (chain_n, _) = decode_all(cert_pem, scratch, &mut chain)?;
    let (leaf, inter) = match chain.get(..chain_n) {
        Some([leaf, inter @ ..]) => (*leaf, inter),
        _ => return Err(malformed().into()),
    };
    if cas.is_empty() {
        return Err(malformed().into());
    }
    Ok(verify_issued_der_anchored(verifier, leaf, inter, cas, expected, now)?)
}

/// Decode every CERTIFICATE block of `input` into consecutive pieces of `scratch`.
fn decode_all<'s>(
    input: &[u8],
    scratch: &'s mut [u8],
    out: &mut [&'s [u8]],
) -> Result<(usize, &'s mut [u8]), Error> {
    let mut rest = scratch;
    let mut n = 0;
    for block in crate::pem::blocks(input) {
        let block = block.map_err(|_| malformed())?;
        if block.label != "CERTIFICATE" {
            continue;
        }
        let der_len = block.decode(rest).map_err(|e| match e {
            Error::BufferTooSmall { needed } => Error::BufferTooSmall { needed },
            _ => Error::Verify(malformed()),
        })?;
        let der_len = der_len.len();
        let taken = core::mem::take(&mut rest);
        let (der, tail) = taken.split_at_mut(der_len.min(taken.len()));
        rest = tail;
        let slot = out.get_mut(n).ok_or_else(malformed)?;
        *slot = der;
        n += 1;
    }
    Ok((n, rest))
}

// ---------------------------------------------------------------------------------------------
// Path search

struct Search<'s> {
    verifier: &'s dyn SignatureVerifier,
    intermediates: &'s [&'s [u8]],
    cas: CaSet<'s>,
    /// With [`CaSet::Der`]: the first CA, parsed.
    first_ca: Option<Cert<'s>>,
    now: i64,
    budget: usize,
    /// Subject DER of the CA the path ended at.
    ca_subject: &'s [u8],
    /// Indices (into `intermediates`) of the intermediates on the current path.
    path: [usize; MAX_DEPTH],
    time_error: Option<VerifyError>,
    bad_signature: bool,
    unsupported: bool,
    constraint: Option<&'static str>,
}

enum SigCheck {
    Valid,
    Invalid,
    Unsupported,
}

impl Search<'_> {
    /// Find a CA for `child`, which sits `depth` intermediates above the leaf. Returns the CA
    /// index and the number of intermediates on the path.
    fn extend(
        &mut self,
        child: &Cert<'_>,
        depth: usize,
    ) -> Result<Option<(usize, usize)>, VerifyError> {
        if let Some(i) = self.find_ca(child, depth)? {
            return Ok(Some((i, depth)));
        }
        if depth >= MAX_DEPTH {
            return Ok(None);
        }
        for (j, der) in self.intermediates.iter().enumerate() {
            if self.path.get(..depth).is_some_and(|p| p.contains(&j)) {
                continue;
            }
            let inter = Cert::parse(der)?;
            if inter.subject != child.issuer {
                continue;
            }
            if let Some(why) = inter.issuer_constraint(depth) {
                self.constraint.get_or_insert(why);
                continue;
            }
            if !self.check(&inter, child) {
                continue;
            }
            if let Err(e) = inter.check_time(self.now) {
                self.time_error.get_or_insert(e);
                continue;
            }
            if let Some(slot) = self.path.get_mut(depth) {
                *slot = j;
            }
            if let Some(found) = self.extend(&inter, depth + 1)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// A CA of the bundle that issued `child` (`depth` intermediates above the leaf) and is
    /// valid now. Kept out of line so the CA's parse does not sit in every recursion frame.
    #[inline(never)]
    fn find_ca(&mut self, child: &Cert<'_>, depth: usize) -> Result<Option<usize>, VerifyError> {
        let count = match self.cas {
            CaSet::Der(cas) => cas.len(),
            CaSet::Parsed(cas) => cas.len(),
        };
        for i in 0..count {
            let parsed;
            // Anchors are borrowed, not copied.
            let ca: &Cert<'_> = match self.cas {
                CaSet::Parsed(cas) => match cas.get(i) {
                    Some(anchor) => &anchor.cert,
                    None => break,
                },
                CaSet::Der(cas) => {
                    parsed = match self.first_ca {
                        Some(ca) if i == 0 => ca,
                        _ => Cert::parse(cas.get(i).ok_or_else(malformed)?)?,
                    };
                    &parsed
                }
            };
            if ca.subject != child.issuer {
                continue;
            }
            if ca.ext.path_len.is_some_and(|max| depth > max as usize) {
                self.constraint.get_or_insert("issuer.pathLenConstraint");
                continue;
            }
            if !self.check(ca, child) {
                continue;
            }
            if let Err(e) = ca.check_time(self.now) {
                self.time_error.get_or_insert(e);
                continue;
            }
            // Kept for `Verified::ca_subject` (saves parsing the CA a third time).
            self.ca_subject = ca.subject;
            return Ok(Some(i));
        }
        Ok(None)
    }

    /// Verify `child`'s signature with `issuer`'s key, within the budget.
    #[inline(never)]
    fn check(&mut self, issuer: &Cert<'_>, child: &Cert<'_>) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        match check_signature(self.verifier, issuer.key, child.sig_alg, child.tbs, child.signature)
        {
            SigCheck::Valid => true,
            SigCheck::Invalid => {
                self.bad_signature = true;
                false
            }
            SigCheck::Unsupported => {
                self.unsupported = true;
                false
            }
        }
    }

    fn failure(&self) -> VerifyError {
        if let Some(e) = self.time_error {
            e
        } else if self.bad_signature {
            VerifyError::new(Reason::BadSignature)
        } else if self.unsupported {
            VerifyError::new(Reason::UnsupportedAlgorithm)
        } else if let Some(field) = self.constraint {
            VerifyError::field(Reason::Untrusted, field)
        } else {
            VerifyError::new(Reason::Untrusted)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Signatures

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SigAlg {
    EcdsaSha256,
    EcdsaSha384,
    EcdsaSha512,
    RsaSha256,
    RsaSha384,
    RsaSha512,
    Other,
}

#[derive(Clone, Copy)]
enum IssuerKey<'a> {
    P256(&'a [u8]),
    P384(&'a [u8]),
    Rsa(&'a [u8]),
    Other,
}

fn issuer_key<'a>(spki: &Spki<'a>) -> IssuerKey<'a> {
    if is_oid(&spki.algorithm, &OID_EC_PUBLIC_KEY) {
        match spki.parameters {
            Some(curve) if is_oid(&curve, &OID_P256) => IssuerKey::P256(spki.key),
            Some(curve) if is_oid(&curve, &OID_P384) => IssuerKey::P384(spki.key),
            _ => IssuerKey::Other,
        }
    } else if is_oid(&spki.algorithm, &OID_RSA_ENCRYPTION) {
        // RFC 3279 §2.3.1: the parameters MUST be NULL (Go's x509 refuses anything else: "RSA key
        // missing NULL parameters"); found by the verify_issued fuzz target.
        if spki.parameters.is_some_and(|p| p.is_null()) {
            IssuerKey::Rsa(spki.key)
        } else {
            IssuerKey::Other
        }
    } else {
        IssuerKey::Other
    }
}

/// A borrowed SubjectPublicKeyInfo. (Parsed by hand: `spki::SubjectPublicKeyInfoRef` costs
/// about 1.8 KiB of stack to decode, too much next to the ECDSA verification on a Cortex-M.)
struct Spki<'a> {
    algorithm: Tlv<'a>,
    parameters: Option<Tlv<'a>>,
    /// The subjectPublicKey BIT STRING's bytes (no unused bits).
    key: &'a [u8],
}

impl<'a> Spki<'a> {
    /// SubjectPublicKeyInfo ::= SEQUENCE { algorithm AlgorithmIdentifier, subjectPublicKey BIT STRING }
    fn parse(tlv: &'a [u8]) -> Result<Self, VerifyError> {
        let seq = single(tlv, tag::SEQUENCE)?;
        let mut r = reader(seq.value())?;
        let (alg, _) = next(&mut r)?;
        let (bits, _) = next(&mut r)?;
        r.finish()?;
        expect_tag(&alg, tag::SEQUENCE)?;
        let mut a = reader(alg.value())?;
        let (algorithm, _) = next(&mut a)?;
        expect_tag(&algorithm, tag::OID)?;
        let parameters = if a.is_finished() { None } else { Some(next(&mut a)?.0) };
        a.finish()?;
        expect_tag(&bits, tag::BIT_STRING)?;
        let key = whole_bytes(&bits).ok_or_else(malformed)?;
        Ok(Spki { algorithm, parameters, key })
    }
}

#[inline(never)] // keep its locals out of the caller's frame during the path search
fn check_signature(
    verifier: &dyn SignatureVerifier,
    issuer_key: IssuerKey<'_>,
    alg: SigAlg,
    tbs: &[u8],
    sig: &[u8],
) -> SigCheck {
    let verdict = match (issuer_key, alg) {
        (IssuerKey::P256(point), SigAlg::EcdsaSha256) => {
            let mut buf = [0u8; 96];
            match ecdsa_raw(sig, 32, &mut buf).and_then(|raw| <&[u8; 64]>::try_from(raw).ok()) {
                Some(rs) => verifier.p256_sha256(point, tbs, rs),
                None => Verdict::Invalid,
            }
        }
        // The other digests with either curve, as Go's crypto/x509 and OpenSSL accept them
        // (e.g. openssl signs with SHA-256 by default whatever the key): the digest is computed
        // here and checked with the software backend's prehash verification.
        (IssuerKey::P256(point), SigAlg::EcdsaSha384 | SigAlg::EcdsaSha512) => {
            p256_prehashed(point, alg, tbs, sig)
        }
        // Without the features the algorithm is unsupported whatever the backend (as before
        // backends existed: no parse, no `BadSignature`).
        (IssuerKey::P384(_), SigAlg::EcdsaSha256 | SigAlg::EcdsaSha384 | SigAlg::EcdsaSha512)
            if !cfg!(feature = "p384") =>
        {
            Verdict::Unsupported
        }
        (IssuerKey::P384(point), SigAlg::EcdsaSha384) => {
            let mut buf = [0u8; 96];
            match ecdsa_raw(sig, 48, &mut buf).and_then(|raw| <&[u8; 96]>::try_from(raw).ok()) {
                Some(rs) => verifier.p384_sha384(point, tbs, rs),
                None => Verdict::Invalid,
            }
        }
        (IssuerKey::P384(point), SigAlg::EcdsaSha256 | SigAlg::EcdsaSha512) => {
            p384_prehashed(point, alg, tbs, sig)
        }
        (IssuerKey::Rsa(key), SigAlg::RsaSha256 | SigAlg::RsaSha384 | SigAlg::RsaSha512) => {
            verify_rsa(verifier, key, alg, tbs, sig)
        }
        _ => Verdict::Unsupported,
    };
    match verdict {
        Verdict::Valid => SigCheck::Valid,
        Verdict::Invalid => SigCheck::Invalid,
        Verdict::Unsupported => SigCheck::Unsupported,
    }
}

/// Which digests ECDSA P-256 is checked with besides SHA-256: SHA-384 and SHA-512 need SHA-512's
/// compression function (about 10.8 KiB of flash on a Cortex-M4), so they are accepted only in
/// builds that link it anyway (features `csr-name` — on by default — or `p384`); otherwise such
/// a certificate stays [`Reason::UnsupportedAlgorithm`].
#[cfg(any(feature = "csr-name", feature = "p384"))]
fn p256_prehashed(point: &[u8], alg: SigAlg, tbs: &[u8], sig: &[u8]) -> Verdict {
    use sha2::Digest;
    let mut buf = [0u8; 96];
    let Some(rs) = ecdsa_raw(sig, 32, &mut buf) else {
        return Verdict::Invalid;
    };
    let ok = match alg {
        SigAlg::EcdsaSha384 => p256_verify_digest(point, &sha2::Sha384::digest(tbs), rs),
        SigAlg::EcdsaSha512 => p256_verify_digest(point, &sha2::Sha512::digest(tbs), rs),
        _ => return Verdict::Unsupported,
    };
    if ok { Verdict::Valid } else { Verdict::Invalid }
}

/// ECDSA P-256 over a digest longer than 32 bytes (its leftmost 32 bytes count, as ECDSA
/// prescribes). With the `p256-cortex-m4` backend on a bare-metal Arm target the check runs in
/// its assembly, so RustCrypto's P-256 verification is not linked there.
#[cfg(all(
    any(feature = "csr-name", feature = "p384"),
    feature = "p256-cortex-m4",
    target_arch = "arm",
    target_os = "none"
))]
fn p256_verify_digest(point: &[u8], digest: &[u8], rs: &[u8]) -> bool {
    crate::backend::cortex_m4::verify_p256_prehashed(point, digest, rs)
}

#[cfg(all(
    any(feature = "csr-name", feature = "p384"),
    not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))
))]
fn p256_verify_digest(point: &[u8], digest: &[u8], rs: &[u8]) -> bool {
    use p256::ecdsa::signature::hazmat::PrehashVerifier;
    let (Some(key), Ok(sig)) =
        (crate::backend::p256_point(point), p256::ecdsa::Signature::from_slice(rs))
    else {
        return false;
    };
    key.verify_prehash(digest, &sig).is_ok()
}

#[cfg(not(any(feature = "csr-name", feature = "p384")))]
fn p256_prehashed(_point: &[u8], _alg: SigAlg, _tbs: &[u8], _sig: &[u8]) -> Verdict {
    Verdict::Unsupported
}

/// ECDSA P-384 with SHA-256 or SHA-512 (feature `p384`).
#[cfg(feature = "p384")]
fn p384_prehashed(point: &[u8], alg: SigAlg, tbs: &[u8], sig: &[u8]) -> Verdict {
    use p384::ecdsa::signature::hazmat::PrehashVerifier;
    use sha2::Digest;
    let mut buf = [0u8; 96];
    let Some(rs) = ecdsa_raw(sig, 48, &mut buf) else {
        return Verdict::Invalid;
    };
    let (Ok(key), Ok(sig)) =
        (p384::ecdsa::VerifyingKey::from_sec1_bytes(point), p384::ecdsa::Signature::from_slice(rs))
    else {
        return Verdict::Invalid;
    };
    let ok = match alg {
        SigAlg::EcdsaSha256 => key.verify_prehash(&sha2::Sha256::digest(tbs), &sig).is_ok(),
        SigAlg::EcdsaSha512 => key.verify_prehash(&sha2::Sha512::digest(tbs), &sig).is_ok(),
        _ => return Verdict::Unsupported,
    };
    if ok { Verdict::Valid } else { Verdict::Invalid }
}

#[cfg(not(feature = "p384"))]
fn p384_prehashed(_point: &[u8], _alg: SigAlg, _tbs: &[u8], _sig: &[u8]) -> Verdict {
    Verdict::Unsupported
}

/// Parse an ECDSA-Sig-Value into `r || s`, each left-padded to `n` bytes, in `out`.
fn ecdsa_raw<'o>(sig: &[u8], n: usize, out: &'o mut [u8; 96]) -> Option<&'o [u8]> {
    let (a, b) = two_uints(sig)?;
    let raw = out.get_mut(..2 * n)?;
    for (k, bytes) in [a, b].iter().enumerate() {
        if bytes.len() > n {
            return None;
        }
        let start = k * n + (n - bytes.len());
        raw.get_mut(start..(k + 1) * n)?.copy_from_slice(bytes);
    }
    Some(raw)
}

/// `SEQUENCE { INTEGER, INTEGER }` with non-negative integers (ECDSA-Sig-Value, RSAPublicKey),
/// nothing after it: their magnitudes (see [`uint`]).
fn two_uints(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let seq = single(der, tag::SEQUENCE).ok()?;
    let mut r = Der(seq.value());
    let a = uint(&next(&mut r).ok()?.0)?;
    let b = uint(&next(&mut r).ok()?.0)?;
    r.finish().ok()?;
    Some((a, b))
}

// The three primitive values below are decoded by hand, under the rules `der` decodes them with
// (its `UintRef`, `BitStringRef` and `bool`; the unit tests compare the two on every short
// input): this keeps `der`'s value decoders, about 1.5 KiB of flash, out of the Cortex-M image.

/// A non-negative DER INTEGER's magnitude: shortest form, no sign bit set; one leading 0x00 (the
/// sign octet) removed, the value zero kept as `[0]`.
fn uint<'a>(any: &Tlv<'a>) -> Option<&'a [u8]> {
    if any.tag() != tag::INTEGER {
        return None;
    }
    let v = any.value();
    match v {
        [] => None,
        [0] => Some(v),
        [0, b, ..] if *b < 0x80 => None,
        [0, rest @ ..] => Some(rest),
        [b, ..] if *b >= 0x80 => None,
        _ => Some(v),
    }
}

/// A DER BIT STRING as (unused bits, bytes): the first octet counts the unused bits of the last
/// byte (at most 7, and 0 when there is no byte).
fn bit_string<'a>(any: &Tlv<'a>) -> Option<(u8, &'a [u8])> {
    if any.tag() != tag::BIT_STRING {
        return None;
    }
    let (&unused, bytes) = any.value().split_first()?;
    if unused > 7 || (unused != 0 && bytes.is_empty()) {
        return None;
    }
    Some((unused, bytes))
}

/// A BIT STRING of whole bytes (signatures, public keys): no unused bits.
fn whole_bytes<'a>(any: &Tlv<'a>) -> Option<&'a [u8]> {
    match bit_string(any)? {
        (0, bytes) => Some(bytes),
        _ => None,
    }
}

/// A DER BOOLEAN: one octet, 0x00 or 0xFF.
fn boolean(any: &Tlv<'_>) -> Option<bool> {
    match (any.tag(), any.value()) {
        (tag::BOOLEAN, [0x00]) => Some(false),
        (tag::BOOLEAN, [0xff]) => Some(true),
        _ => None,
    }
}

/// Parse the RSAPublicKey, enforce the 2048–4096-bit range (else unsupported), then let the
/// backend check the signature.
fn verify_rsa(
    verifier: &dyn SignatureVerifier,
    key: &[u8],
    alg: SigAlg,
    tbs: &[u8],
    sig: &[u8],
) -> Verdict {
    let hash = match alg {
        SigAlg::RsaSha256 => RsaHash::Sha256,
        SigAlg::RsaSha384 => RsaHash::Sha384,
        SigAlg::RsaSha512 => RsaHash::Sha512,
        _ => return Verdict::Unsupported,
    };
    if !cfg!(feature = "rsa") {
        return Verdict::Unsupported;
    }
    // RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }
    let Some((n, e)) = two_uints(key) else {
        return Verdict::Invalid;
    };
    let bits = (n.len() * 8).saturating_sub(n.first().map_or(8, |b| b.leading_zeros() as usize));
    if !(2048..=4096).contains(&bits) {
        return Verdict::Unsupported;
    }
    verifier.rsa_pkcs1(n, e, hash, tbs, sig)
}

// ---------------------------------------------------------------------------------------------
// Certificate parsing

fn malformed() -> VerifyError {
    VerifyError::new(Reason::Malformed)
}

/// A cursor over the contents of a DER structure.
struct Der<'a>(&'a [u8]);

impl Der<'_> {
    fn is_finished(&self) -> bool {
        self.0.is_empty()
    }

    /// Nothing may follow the last element.
    fn finish(self) -> Result<(), VerifyError> {
        if self.is_finished() { Ok(()) } else { Err(malformed()) }
    }
}

fn reader(input: &[u8]) -> Result<Der<'_>, VerifyError> {
    Ok(Der(input))
}

/// A DER element as [`next`] reads it: the first identifier octet and the contents.
///
/// The identifier's first octet stands for the tag: for the one-octet tags (every tag below 31)
/// the two are the same thing, and a tag of number 31 or more (which `der` reads for
/// application, context-specific and private tags) keeps its first octet, whose number bits are
/// `0x1f`, so it never equals a [`tag`] constant nor a context number below 31.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tlv<'a> {
    tag: u8,
    value: &'a [u8],
}

impl<'a> Tlv<'a> {
    fn tag(&self) -> u8 {
        self.tag
    }

    fn value(&self) -> &'a [u8] {
        self.value
    }

    /// A NULL with no contents (DER's only NULL).
    fn is_null(&self) -> bool {
        self.tag == tag::NULL && self.value.is_empty()
    }
}

/// Identifier octets of the universal types read here (X.690 §8.1.2).
mod tag {
    pub const BOOLEAN: u8 = 0x01;
    pub const INTEGER: u8 = 0x02;
    pub const BIT_STRING: u8 = 0x03;
    pub const OCTET_STRING: u8 = 0x04;
    pub const NULL: u8 = 0x05;
    pub const OID: u8 = 0x06;
    pub const UTF8_STRING: u8 = 0x0c;
    pub const PRINTABLE_STRING: u8 = 0x13;
    pub const TELETEX_STRING: u8 = 0x14;
    pub const IA5_STRING: u8 = 0x16;
    pub const UTC_TIME: u8 = 0x17;
    pub const GENERALIZED_TIME: u8 = 0x18;
    pub const SEQUENCE: u8 = 0x30;
    pub const SET: u8 = 0x31;
}

/// Read the next element as (element, whole TLV bytes). This is the hot loop of certificate
/// parsing: the headers certificates are made of (one-octet tags, lengths below 64 KiB) are
/// decoded here by hand, anything else by the `der` crate, which sets the rules: both accept
/// and reject the same headers (`next_agrees_with_der` checks every one-octet tag with every
/// length form).
// Hosts inline the common case into each of the ~50 call sites (the walk is most of kubeboot's
// own time in a validation); microcontrollers keep one copy (flash).
#[cfg_attr(not(target_os = "none"), inline(always))]
#[cfg_attr(target_os = "none", inline(never))]
fn next<'a>(r: &mut Der<'a>) -> Result<(Tlv<'a>, &'a [u8]), VerifyError> {
    let input = r.0;
    let (header_len, len) = match common_header(input) {
        Some(h) => h,
        None => rare_header(input)?,
    };
    let total = header_len.checked_add(len).ok_or_else(malformed)?;
    let (tlv, rest) = input.split_at_checked(total).ok_or_else(malformed)?;
    let (&tag, _) = tlv.split_first().ok_or_else(malformed)?;
    let value = tlv.get(header_len..).ok_or_else(malformed)?;
    r.0 = rest;
    Ok((Tlv { tag, value }, tlv))
}

/// (header length, content length) of the headers [`common_header`] leaves to `der` (out of
/// line: [`next`] is inlined on hosts).
#[cold]
#[inline(never)]
fn rare_header(input: &[u8]) -> Result<(usize, usize), VerifyError> {
    let header = der::Header::peek(&SliceReader::new(input).map_err(|_| malformed())?)
        .map_err(|_| malformed())?;
    let header_len = der::Encode::encoded_len(&header).map_err(|_| malformed())?;
    let header_len = usize::try_from(header_len).map_err(|_| malformed())?;
    let len = usize::try_from(header.length()).map_err(|_| malformed())?;
    Ok((header_len, len))
}

/// The one-octet identifiers `der` reads as a tag: its universal types, and every application,
/// context-specific and private tag of number below 31.
const fn is_one_octet_tag(t: u8) -> bool {
    match t {
        0x01..=0x06 | 0x09 | 0x0a | 0x0c | 0x0d | 0x12..=0x18 | 0x1a | 0x1b | 0x1e => true,
        0x30 | 0x31 => true,
        0x40..=0xff => t & 0x1f != 0x1f,
        _ => false,
    }
}

/// [`is_one_octet_tag`] in the hot loop: a table lookup on hosts (about 390 fewer instructions
/// per validation than the match), the match on microcontrollers (256 bytes less flash).
#[cfg_attr(not(target_os = "none"), inline(always))]
fn one_octet_tag(t: u8) -> bool {
    #[cfg(not(target_os = "none"))]
    {
        static TABLE: [bool; 256] = {
            let mut table = [false; 256];
            let mut i = 0;
            while i < 256 {
                #[allow(clippy::indexing_slicing)] // compile time, `i < 256`
                {
                    table[i] = is_one_octet_tag(i as u8);
                }
                i += 1;
            }
            table
        };
        TABLE.get(usize::from(t)) == Some(&true)
    }
    #[cfg(target_os = "none")]
    {
        is_one_octet_tag(t)
    }
}

/// (header length, content length) of a header with a one-octet tag and a length in its common
/// form, the way `der` decodes it; `None` for anything else (rare or invalid: `der` decides).
#[cfg_attr(not(target_os = "none"), inline(always))]
fn common_header(input: &[u8]) -> Option<(usize, usize)> {
    let (&t, rest) = input.split_first()?;
    if !one_octet_tag(t) {
        return None;
    }
    match *rest {
        [l @ 0..=0x7f, ..] => Some((2, usize::from(l))),
        // Shortest form only, as DER (and `der`) require.
        [0x81, l @ 0x80..=0xff, ..] => Some((3, usize::from(l))),
        [0x82, hi @ 0x01..=0xff, lo, ..] => Some((4, usize::from(hi) << 8 | usize::from(lo))),
        _ => None,
    }
}

fn expect_tag(any: &Tlv<'_>, tag: u8) -> Result<(), VerifyError> {
    if any.tag() == tag { Ok(()) } else { Err(malformed()) }
}

/// (constructed, number) of a context-specific tag (a number of 31 or more reads as 31).
fn context_tag(any: &Tlv<'_>) -> Option<(bool, u32)> {
    match any.tag() {
        t @ 0x80..=0xbf => Some((t & 0x20 != 0, u32::from(t & 0x1f))),
        _ => None,
    }
}

fn is_oid(any: &Tlv<'_>, oid: &ObjectIdentifier) -> bool {
    any.tag() == tag::OID && any.value() == oid.as_bytes()
}

/// Extensions of a certificate that matter here.
#[derive(Clone, Copy, Default)]
struct Extensions<'a> {
    is_ca: bool,
    has_basic_constraints: bool,
    path_len: Option<u32>,
    key_usage: Option<u16>,
    /// Contents of the ExtKeyUsageSyntax SEQUENCE (OIDs).
    eku: Option<&'a [u8]>,
    /// Contents of the GeneralNames SEQUENCE.
    san: Option<&'a [u8]>,
    unknown_critical: bool,
}

/// A parsed, borrowed X.509 certificate.
#[derive(Clone, Copy)]
struct Cert<'a> {
    tbs: &'a [u8],
    sig_alg: SigAlg,
    signature: &'a [u8],
    issuer: &'a [u8],
    subject: &'a [u8],
    not_before: i64,
    not_after: i64,
    spki: &'a [u8],
    /// The public key in `spki`, as an issuer's key.
    key: IssuerKey<'a>,
    ext: Extensions<'a>,
}

/// The SubjectPublicKeyInfo DER of a certificate, exactly as it appears in it (used for kubeadm
/// CA pins). The certificate's frame is checked as Go's `x509.ParseCertificate` checks it
/// (TBSCertificate, signatureAlgorithm equal to the TBS's `signature` field, a BIT STRING
/// signatureValue, nothing after it); the TBS fields before the key are walked without being
/// interpreted, so a CA with a key type [`verify_issued`] does not support can still be pinned.
pub(crate) fn cert_spki(der: &[u8]) -> Result<&[u8], VerifyError> {
    if der.len() > MAX_CERT_LEN {
        return Err(malformed());
    }
    let mut outer = reader(der)?;
    let (cert, _) = next(&mut outer)?;
    outer.finish()?;
    expect_tag(&cert, tag::SEQUENCE)?;
    let mut c = reader(cert.value())?;
    let (tbs, _) = next(&mut c)?;
    expect_tag(&tbs, tag::SEQUENCE)?;
    let (alg, alg_tlv) = next(&mut c)?;
    expect_tag(&alg, tag::SEQUENCE)?;
    let (sig, _) = next(&mut c)?;
    bit_string(&sig).ok_or_else(malformed)?;
    c.finish()?;
    let mut t = reader(tbs.value())?;
    let (first, _) = next(&mut t)?;
    // [0] version (optional), serial, signature, issuer, validity, subject, spki
    if context_tag(&first) == Some((true, 0)) {
        next(&mut t)?; // serialNumber
    }
    let (_, inner_alg) = next(&mut t)?;
    if inner_alg != alg_tlv {
        return Err(malformed());
    }
    for _ in 0..3 {
        next(&mut t)?; // issuer, validity, subject
    }
    let (spki, spki_tlv) = next(&mut t)?;
    expect_tag(&spki, tag::SEQUENCE)?;
    Spki::parse(spki_tlv)?;
    Ok(spki_tlv)
}

impl<'a> Cert<'a> {
    /// Parse an intermediate or a CA (step 1).
    fn parse(der: &'a [u8]) -> Result<Self, VerifyError> {
        Self::parse_as(der, None)
    }

    /// Parse the leaf (step 1), and check its subject against `node_name` on the way: the
    /// verdict of step 5 goes to `subject` (the field of a [`Reason::SubjectMismatch`], if any). The issuer Name is left to the caller (see
    /// [`verify_leaf`]): it matters only if it equals a subject checked by another parse.
    fn parse_leaf(
        der: &'a [u8],
        node_name: &str,
        subject: &mut Option<&'static str>,
    ) -> Result<Self, VerifyError> {
        Self::parse_as(der, Some((node_name, subject)))
    }

    #[inline(never)] // keep its locals out of the caller's frame during the path search
    fn parse_as(
        der: &'a [u8],
        leaf: Option<(&str, &mut Option<&'static str>)>,
    ) -> Result<Self, VerifyError> {
        if der.len() > MAX_CERT_LEN {
            return Err(malformed());
        }
        let mut outer = reader(der)?;
        let (cert, _) = next(&mut outer)?;
        outer.finish()?;
        expect_tag(&cert, tag::SEQUENCE)?;

        let mut c = reader(cert.value())?;
        let (tbs_any, tbs) = next(&mut c)?;
        expect_tag(&tbs_any, tag::SEQUENCE)?;
        let (alg_any, alg_tlv) = next(&mut c)?;
        let (sig_any, _) = next(&mut c)?;
        c.finish()?;
        let sig_alg = parse_sig_alg(&alg_any)?;
        let signature = whole_bytes(&sig_any).ok_or_else(malformed)?;

        let mut t = reader(tbs_any.value())?;
        let (mut item, _) = next(&mut t)?;
        if context_tag(&item) == Some((true, 0)) {
            // version [0] EXPLICIT INTEGER
            let mut v = reader(item.value())?;
            let (version, _) = next(&mut v)?;
            v.finish()?;
            expect_tag(&version, tag::INTEGER)?;
            item = next(&mut t)?.0;
        }
        expect_tag(&item, tag::INTEGER)?; // serialNumber
        let (_, inner_alg) = next(&mut t)?;
        if inner_alg != alg_tlv {
            return Err(malformed());
        }
        let (issuer_any, issuer) = next(&mut t)?;
        if leaf.is_none() {
            check_name(&issuer_any)?;
        }
        let (validity, _) = next(&mut t)?;
        expect_tag(&validity, tag::SEQUENCE)?;
        let mut v = reader(validity.value())?;
        let not_before = parse_time(&next(&mut v)?.0)?;
        let not_after = parse_time(&next(&mut v)?.0)?;
        v.finish()?;
        let (subject_any, subject) = next(&mut t)?;
        match leaf {
            Some((node_name, verdict)) => *verdict = subject_verdict(&subject_any, node_name)?,
            None if subject != issuer => check_name(&subject_any)?,
            None => {} // a self-signed CA's was just checked
        }
        let (spki_any, spki) = next(&mut t)?;
        expect_tag(&spki_any, tag::SEQUENCE)?;
        let key = issuer_key(&Spki::parse(spki)?);

        let mut ext = Extensions::default();
        let mut last = 0u32;
        while !t.is_finished() {
            let (item, _) = next(&mut t)?;
            let number = match context_tag(&item) {
                Some((_, n @ (1 | 2))) if n > last => n, // issuer/subject unique IDs
                Some((true, 3)) if last < 3 => 3,
                _ => return Err(malformed()),
            };
            last = number;
            if number == 3 {
                ext = parse_extensions(item.value())?;
            }
        }
        Ok(Cert { tbs, sig_alg, signature, issuer, subject, not_before, not_after, spki, key, ext })
    }

    fn check_time(&self, now: i64) -> Result<(), VerifyError> {
        let detail =
            Detail::Validity { not_before: self.not_before, not_after: self.not_after, now };
        if now < self.not_before {
            Err(VerifyError { reason: Reason::NotYetValid, detail })
        } else if now > self.not_after {
            Err(VerifyError { reason: Reason::Expired, detail })
        } else {
            Ok(())
        }
    }

    /// Why this certificate cannot issue a certificate `depth` intermediates above the leaf.
    fn issuer_constraint(&self, depth: usize) -> Option<&'static str> {
        if !self.ext.is_ca {
            Some("issuer.basicConstraints")
        } else if self.ext.key_usage.is_some_and(|ku| ku & KU_KEY_CERT_SIGN == 0) {
            Some("issuer.keyUsage")
        } else if self.ext.path_len.is_some_and(|max| depth > max as usize) {
            Some("issuer.pathLenConstraint")
        } else if self.ext.unknown_critical {
            Some("issuer.criticalExtension")
        } else {
            None
        }
    }
}

fn parse_sig_alg(any: &Tlv<'_>) -> Result<SigAlg, VerifyError> {
    expect_tag(any, tag::SEQUENCE)?;
    let mut r = reader(any.value())?;
    let (id, _) = next(&mut r)?;
    expect_tag(&id, tag::OID)?;
    let params = if r.is_finished() { None } else { Some(next(&mut r)?.0) };
    r.finish()?;
    let rsa_params_ok = params.is_none_or(|p| p.is_null());
    Ok(if is_oid(&id, &OID_ECDSA_SHA256) && params.is_none() {
        SigAlg::EcdsaSha256
    } else if is_oid(&id, &OID_ECDSA_SHA384) && params.is_none() {
        SigAlg::EcdsaSha384
    } else if is_oid(&id, &OID_ECDSA_SHA512) && params.is_none() {
        SigAlg::EcdsaSha512
    } else if is_oid(&id, &OID_RSA_SHA256) && rsa_params_ok {
        SigAlg::RsaSha256
    } else if is_oid(&id, &OID_RSA_SHA384) && rsa_params_ok {
        SigAlg::RsaSha384
    } else if is_oid(&id, &OID_RSA_SHA512) && rsa_params_ok {
        SigAlg::RsaSha512
    } else {
        SigAlg::Other
    })
}

/// Name ::= SEQUENCE OF SET OF SEQUENCE { type OID, value ANY }
fn check_name(any: &Tlv<'_>) -> Result<(), VerifyError> {
    expect_tag(any, tag::SEQUENCE)?;
    for_each_attribute(any.value(), |_, _| Ok(()))
}

/// The error of a validation whose path search failed with `e`. The leaf's parse skipped its
/// issuer Name: a path is found only if it equals, byte for byte, the subject of an
/// intermediate or a CA (each checked by its own parse). Without a path it is checked here, so a
/// malformed one is still step 1's [`Reason::Malformed`]. (Out of line and cold: its locals stay
/// out of [`verify_leaf`]'s frame, which is live during the signature checks.)
#[cold]
#[inline(never)]
fn no_path(leaf_issuer: &[u8], e: VerifyError) -> VerifyError {
    match single(leaf_issuer, tag::SEQUENCE).and_then(|name| check_name(&name)) {
        Ok(()) => e,
        Err(malformed) => malformed,
    }
}

/// Call `f(type, value)` for every attribute of every RDN of a Name's contents, in order.
fn for_each_attribute<'a>(
    name_contents: &'a [u8],
    mut f: impl FnMut(Tlv<'a>, Tlv<'a>) -> Result<(), VerifyError>,
) -> Result<(), VerifyError> {
    let mut rdns = reader(name_contents)?;
    while !rdns.is_finished() {
        let (set, _) = next(&mut rdns)?;
        expect_tag(&set, tag::SET)?;
        let mut atvs = reader(set.value())?;
        if atvs.is_finished() {
            return Err(malformed());
        }
        while !atvs.is_finished() {
            let (atv, _) = next(&mut atvs)?;
            expect_tag(&atv, tag::SEQUENCE)?;
            let mut a = reader(atv.value())?;
            let (ty, _) = next(&mut a)?;
            expect_tag(&ty, tag::OID)?;
            let (value, _) = next(&mut a)?;
            a.finish()?;
            f(ty, value)?;
        }
    }
    Ok(())
}

/// The extensions [`parse_extensions`] reads, by the last arc of their OID: all six are under
/// id-ce (2.5.29, DER `55 1d`), so one byte tells them apart (checked at compile time).
static KNOWN_EXTENSIONS: [u8; 6] = [
    id_ce_arc(&OID_BASIC_CONSTRAINTS),
    id_ce_arc(&OID_KEY_USAGE),
    id_ce_arc(&OID_EXT_KEY_USAGE),
    id_ce_arc(&OID_SUBJECT_ALT_NAME),
    id_ce_arc(&OID_SUBJECT_KEY_ID),
    id_ce_arc(&OID_AUTHORITY_KEY_ID),
];

/// The DER encoding of id-ce (2.5.29).
const ID_CE: [u8; 2] = [0x55, 0x1d];

/// The last arc of an OID `2.5.29.n` with n < 128 (one content byte after [`ID_CE`]). Only
/// evaluated at compile time (in [`KNOWN_EXTENSIONS`]): the panic is a build error.
#[allow(clippy::panic)]
const fn id_ce_arc(oid: &ObjectIdentifier) -> u8 {
    match oid.as_bytes() {
        [0x55, 0x1d, n] if *n < 0x80 => *n,
        _ => panic!("not an id-ce OID with a one-byte last arc"),
    }
}

/// The index in [`KNOWN_EXTENSIONS`] of an extension's OID contents, if it is one of them.
fn known_extension(oid: &[u8]) -> Option<usize> {
    match oid {
        [a, b, n] if [*a, *b] == ID_CE => KNOWN_EXTENSIONS.iter().position(|k| k == n),
        _ => None,
    }
}

#[inline(never)] // keep its locals out of the caller's frame during the path search
fn parse_extensions(explicit: &[u8]) -> Result<Extensions<'_>, VerifyError> {
    let mut wrapper = reader(explicit)?;
    let (seq, _) = next(&mut wrapper)?;
    wrapper.finish()?;
    expect_tag(&seq, tag::SEQUENCE)?;
    let mut list = reader(seq.value())?;
    let mut ext = Extensions::default();
    let mut seen = [false; 6];
    let mut count = 0usize;
    while !list.is_finished() {
        count += 1;
        if count > 64 {
            return Err(malformed());
        }
        let (e, _) = next(&mut list)?;
        expect_tag(&e, tag::SEQUENCE)?;
        let mut r = reader(e.value())?;
        let (id, _) = next(&mut r)?;
        expect_tag(&id, tag::OID)?;
        let (mut item, _) = next(&mut r)?;
        let mut critical = false;
        if item.tag() == tag::BOOLEAN {
            critical = boolean(&item).ok_or_else(malformed)?;
            item = next(&mut r)?.0;
        }
        expect_tag(&item, tag::OCTET_STRING)?;
        r.finish()?;
        let value = item.value();

        let Some(k) = known_extension(id.value()) else {
            // Duplicates of unknown extensions are not detected (no heap to remember them).
            ext.unknown_critical |= critical;
            continue;
        };
        let slot = seen.get_mut(k).ok_or_else(malformed)?;
        if *slot {
            return Err(malformed()); // RFC 5280: an extension appears at most once
        }
        *slot = true;
        match k {
            0 => parse_basic_constraints(value, &mut ext)?,
            1 => ext.key_usage = Some(parse_key_usage(value)?),
            2 => ext.eku = Some(parse_eku(value)?),
            3 => ext.san = Some(parse_san(value)?),
            _ => {} // SKI / AKI: not needed (names are matched by bytes)
        }
    }
    Ok(ext)
}

fn single<'a>(value: &'a [u8], tag: u8) -> Result<Tlv<'a>, VerifyError> {
    let mut r = reader(value)?;
    let (any, _) = next(&mut r)?;
    r.finish()?;
    expect_tag(&any, tag)?;
    Ok(any)
}

/// BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }
fn parse_basic_constraints(value: &[u8], ext: &mut Extensions<'_>) -> Result<(), VerifyError> {
    let seq = single(value, tag::SEQUENCE)?;
    let mut r = reader(seq.value())?;
    ext.has_basic_constraints = true;
    if r.is_finished() {
        return Ok(());
    }
    let (mut item, _) = next(&mut r)?;
    if item.tag() == tag::BOOLEAN {
        ext.is_ca = boolean(&item).ok_or_else(malformed)?;
        if r.is_finished() {
            return Ok(());
        }
        item = next(&mut r)?.0;
    }
    let n = uint(&item).ok_or_else(malformed)?;
    let mut v: u32 = 0;
    for b in n {
        v = v.saturating_mul(256).saturating_add(u32::from(*b));
    }
    ext.path_len = Some(v);
    r.finish()
}

/// KeyUsage ::= BIT STRING; bit i (RFC 5280 numbering) → bit i of the result.
fn parse_key_usage(value: &[u8]) -> Result<u16, VerifyError> {
    let any = single(value, tag::BIT_STRING)?;
    let (unused, bytes) = bit_string(&any).ok_or_else(malformed)?;
    let bit_len = (bytes.len() * 8).saturating_sub(usize::from(unused));
    let mut out = 0u16;
    for i in 0..bit_len.min(16) {
        if bytes.get(i / 8).is_some_and(|b| b & (0x80 >> (i % 8)) != 0) {
            out |= 1 << i;
        }
    }
    Ok(out)
}

/// ExtKeyUsageSyntax ::= SEQUENCE SIZE (1..MAX) OF KeyPurposeId
fn parse_eku(value: &[u8]) -> Result<&[u8], VerifyError> {
    let seq = single(value, tag::SEQUENCE)?;
    let mut r = reader(seq.value())?;
    while !r.is_finished() {
        expect_tag(&next(&mut r)?.0, tag::OID)?;
    }
    Ok(seq.value())
}

fn oid_list_contains(list: &[u8], wanted: &ObjectIdentifier) -> Result<bool, VerifyError> {
    let mut r = reader(list)?;
    while !r.is_finished() {
        if is_oid(&next(&mut r)?.0, wanted) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// GeneralNames ::= SEQUENCE SIZE (1..MAX) OF GeneralName; dNSName [2] IA5String and
/// iPAddress [7] OCTET STRING (4 or 16 bytes) are checked, the others only framed.
fn parse_san(value: &[u8]) -> Result<&[u8], VerifyError> {
    let seq = single(value, tag::SEQUENCE)?;
    let mut r = reader(seq.value())?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        match context_tag(&gn) {
            Some((false, 2)) if gn.value().is_ascii() => {}
            Some((false, 7)) if matches!(gn.value().len(), 4 | 16) => {}
            Some((_, n)) if n <= 8 && n != 2 && n != 7 => {}
            _ => return Err(malformed()),
        }
    }
    Ok(seq.value())
}

// ---------------------------------------------------------------------------------------------
// Time

/// At most 4 ASCII digits (callers pass 2 or 4) as a number.
fn digits(bytes: &[u8]) -> Option<i32> {
    let mut v = 0i32;
    for b in bytes {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i32::from(b - b'0');
    }
    Some(v)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (years 0..=9999: fits an `i32`, and 32-bit
/// arithmetic needs no 64-bit division routine on 32-bit targets).
fn days_from_civil(y: i32, m: i32, d: i32) -> i32 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i32, m: i32) -> i32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// UTCTime `YYMMDDHHMMSSZ` (1950–2049) or GeneralizedTime `YYYYMMDDHHMMSSZ` → unix seconds.
fn parse_time(any: &Tlv<'_>) -> Result<i64, VerifyError> {
    let v = any.value();
    let (year, rest) = match any.tag() {
        tag::UTC_TIME if v.len() == 13 => {
            let yy = digits(v.get(..2).ok_or_else(malformed)?).ok_or_else(malformed)?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, v.get(2..).ok_or_else(malformed)?)
        }
        tag::GENERALIZED_TIME if v.len() == 15 => (
            digits(v.get(..4).ok_or_else(malformed)?).ok_or_else(malformed)?,
            v.get(4..).ok_or_else(malformed)?,
        ),
        _ => return Err(malformed()),
    };
    let field = |i: usize| rest.get(i..i + 2).and_then(digits).ok_or_else(malformed);
    let (mo, d, h, mi, s) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if rest.get(10) != Some(&b'Z')
        || !(1..=12).contains(&mo)
        || d < 1
        || d > days_in_month(year, mo)
        || h > 23
        || mi > 59
        || s > 59
    {
        return Err(malformed());
    }
    Ok(i64::from(days_from_civil(year, mo, d)) * 86_400 + i64::from(h * 3600 + mi * 60 + s))
}

// ---------------------------------------------------------------------------------------------
// Subject and SANs

/// The bytes of a PrintableString or UTF8String attribute value.
fn attribute_bytes<'a>(value: &Tlv<'a>) -> Option<&'a [u8]> {
    match value.tag() {
        tag::PRINTABLE_STRING | tag::UTF8_STRING => Some(value.value()),
        _ => None,
    }
}

/// The node name in a certificate's subject: the value of its one `CN`, PrintableString or
/// UTF8String, when that is `system:node:<name>` (`None` otherwise, or when the certificate does
/// not parse). Used to learn the node name from a node's own credentials; it checks nothing else
/// (use [`verify_issued`]).
pub fn subject_node_name(der: &[u8]) -> Option<&str> {
    let cert = Cert::parse(der).ok()?;
    let name = single(cert.subject, tag::SEQUENCE).ok()?;
    let mut found: Option<&[u8]> = None;
    let mut cns = 0usize;
    for_each_attribute(name.value(), |ty, value| {
        if is_oid(&ty, &OID_CN) {
            cns += 1;
            found = attribute_bytes(&value);
        }
        Ok(())
    })
    .ok()?;
    if cns != 1 {
        return None;
    }
    let node = found?.strip_prefix(b"system:node:")?;
    core::str::from_utf8(node).ok().filter(|n| !n.is_empty())
}

/// Capacity of [`Described::serial`]: a serial number of up to 20 octets (RFC 5280) in hex.
pub const SERIAL_HEX_CAP: usize = 40;

/// What a certificate says about itself, for display (`kubeboot status`). [`describe`] checks the
/// certificate's structure as [`verify_issued`] parses it, and nothing else: no signature, no
/// time, no profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    /// The subject, RFC 4514 style (`CN=system:node:n1,O=system:nodes`; last RDN first).
    pub subject: heapless::String<CA_SUBJECT_CAP>,
    /// The issuer, in the same style.
    pub issuer: heapless::String<CA_SUBJECT_CAP>,
    /// The serial number in lowercase hex, leading zero octets dropped (as `openssl x509
    /// -serial` prints it, in lowercase).
    pub serial: heapless::String<SERIAL_HEX_CAP>,
    /// notBefore (unix seconds).
    pub not_before: i64,
    /// notAfter (unix seconds).
    pub not_after: i64,
    /// Whether basicConstraints says it is a CA.
    pub is_ca: bool,
}

/// A subject alternative name, as [`for_each_san`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum San<'a> {
    /// A dNSName.
    Dns(&'a str),
    /// An iPAddress (an IPv4-mapped IPv6 address as its IPv4 form).
    Ip(IpAddr),
}

/// Describe the certificate `der`; [`Reason::Malformed`] if it does not parse.
pub fn describe(der: &[u8]) -> Result<Described, VerifyError> {
    let cert = Cert::parse(der)?;
    let mut d = Described {
        subject: heapless::String::new(),
        issuer: heapless::String::new(),
        serial: heapless::String::new(),
        not_before: cert.not_before,
        not_after: cert.not_after,
        is_ca: cert.ext.is_ca,
    };
    render_name(cert.subject, &mut d.subject);
    render_name(cert.issuer, &mut d.issuer);
    // The TBS as parsed above: [0] version (optional), then serialNumber.
    let mut t = reader(single(cert.tbs, tag::SEQUENCE)?.value())?;
    let (mut item, _) = next(&mut t)?;
    if context_tag(&item) == Some((true, 0)) {
        item = next(&mut t)?.0;
    }
    let serial = item.value();
    let first = serial.iter().position(|&b| b != 0).unwrap_or(serial.len().saturating_sub(1));
    for b in serial.get(first..).unwrap_or(&[]).iter().take(SERIAL_HEX_CAP / 2) {
        let _ = write_hex(&mut d.serial, *b);
    }
    Ok(d)
}

/// Call `f` with each DNS name and IP address in the certificate's subjectAltName, in order
/// (other kinds of name are skipped); [`Reason::Malformed`] if the certificate does not parse.
pub fn for_each_san(der: &[u8], mut f: impl FnMut(San<'_>)) -> Result<(), VerifyError> {
    let cert = Cert::parse(der)?;
    let mut r = reader(cert.ext.san.unwrap_or(&[]))?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        match context_tag(&gn) {
            Some((false, 2)) => {
                if let Ok(name) = core::str::from_utf8(gn.value()) {
                    f(San::Dns(name));
                }
            }
            Some((false, 7)) => {
                if let Some(ip) = ip_of(gn.value()) {
                    f(San::Ip(ip.to_canonical()));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Check a Name's structure (`Err`: [`Reason::Malformed`]) and whether it is the node's subject
/// (`Ok(Some(field))`: the field of a [`Reason::SubjectMismatch`], for step 5).
fn subject_verdict(name: &Tlv<'_>, node_name: &str) -> Result<Option<&'static str>, VerifyError> {
    expect_tag(name, tag::SEQUENCE)?;
    let (mut cn_count, mut cn_ok, mut o_count, mut o_ok, mut other) = (0, false, 0, false, false);
    for_each_attribute(name.value(), |ty, value| {
        // Compared as bytes: equal to a `str` means valid UTF-8 too.
        let text = attribute_bytes(&value);
        if is_oid(&ty, &OID_CN) {
            cn_count += 1;
            cn_ok = text
                .and_then(|t| t.strip_prefix(b"system:node:"))
                .is_some_and(|n| n == node_name.as_bytes());
        } else if is_oid(&ty, &OID_O) {
            o_count += 1;
            o_ok = text == Some(b"system:nodes".as_slice());
        } else {
            other = true;
        }
        Ok(())
    })?;
    Ok(if cn_count != 1 || !cn_ok {
        Some("subject.CN")
    } else if o_count != 1 || !o_ok {
        Some("subject.O")
    } else if other {
        Some("subject")
    } else {
        None
    })
}

fn ip_of(bytes: &[u8]) -> Option<IpAddr> {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        Some(IpAddr::from(v4))
    } else {
        <[u8; 16]>::try_from(bytes).ok().map(|v6| IpAddr::from(v6).to_canonical())
    }
}

#[inline(never)] // keep its locals out of the caller's frame during the path search
fn check_sans(san: Option<&[u8]>, profile: &Profile<'_>) -> Result<(), VerifyError> {
    let mismatch = VerifyError::field(Reason::SubjectMismatch, "san");
    let (dns, ips) = match profile {
        Profile::Client => return if san.is_some() { Err(mismatch) } else { Ok(()) },
        Profile::Serving { dns, ips } => (*dns, *ips),
    };
    let list = san.unwrap_or(&[]);
    // Every SAN of the certificate was requested...
    let mut r = reader(list)?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        let ok = match context_tag(&gn) {
            Some((false, 2)) => dns.iter().any(|d| d.as_bytes().eq_ignore_ascii_case(gn.value())),
            Some((false, 7)) => {
                let got = ip_of(gn.value());
                ips.iter().any(|ip| Some(ip.to_canonical()) == got)
            }
            _ => false,
        };
        if !ok {
            return Err(mismatch);
        }
    }
    // ...and every requested name is in the certificate.
    for d in dns {
        if !san_contains(list, |tag, v| tag == 2 && d.as_bytes().eq_ignore_ascii_case(v))? {
            return Err(mismatch);
        }
    }
    for ip in ips {
        let want = Some(ip.to_canonical());
        if !san_contains(list, |tag, v| tag == 7 && ip_of(v) == want)? {
            return Err(mismatch);
        }
    }
    Ok(())
}

fn san_contains(list: &[u8], f: impl Fn(u32, &[u8]) -> bool) -> Result<bool, VerifyError> {
    let mut r = reader(list)?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        if let Some((false, n)) = context_tag(&gn) {
            if f(n, gn.value()) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

// ---------------------------------------------------------------------------------------------
// RFC 4514-ish rendering of a Name

/// Writes into a fixed string; once full, stops and ends the text with `...`.
struct Capped<'s, const N: usize> {
    out: &'s mut heapless::String<N>,
    full: bool,
}

impl<const N: usize> fmt::Write for Capped<'_, N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Whole when it fits (the usual case), else char by char up to the cap.
        if !self.full && self.out.len() + s.len() <= N.saturating_sub(3) {
            let _ = self.out.push_str(s);
            return Ok(());
        }
        for ch in s.chars() {
            if self.full || self.out.len() + ch.len_utf8() > N.saturating_sub(3) {
                if !self.full {
                    self.full = true;
                    let _ = self.out.push_str("...");
                }
                return Ok(());
            }
            let _ = self.out.push(ch);
        }
        Ok(())
    }
}

const SHORT_NAMES: [(ObjectIdentifier, &str); 10] = [
    (OID_CN, "CN"),
    (oid("2.5.4.5"), "SERIALNUMBER"),
    (oid("2.5.4.6"), "C"),
    (oid("2.5.4.7"), "L"),
    (oid("2.5.4.8"), "ST"),
    (oid("2.5.4.9"), "STREET"),
    (OID_O, "O"),
    (oid("2.5.4.11"), "OU"),
    (oid("0.9.2342.19200300.100.1.25"), "DC"),
    (oid("0.9.2342.19200300.100.1.1"), "UID"),
];

/// `n` in decimal. No `write!` (that links `core::fmt`'s integer formatting) and no 64-bit
/// division (a runtime routine on 32-bit targets): each digit is split off with 32-bit divisions by
/// 10 over 16-bit pieces, exact for every `u64`.
fn write_decimal(w: &mut impl fmt::Write, mut n: u64) -> fmt::Result {
    let mut buf = [0u8; 20]; // u64::MAX has 20 digits
    let mut start = buf.len();
    for slot in buf.iter_mut().rev() {
        // n = hi * 2^32 + lo; divide hi, then the remainder with each 16-bit half of lo (every
        // partial dividend is below 10 * 2^16).
        let (hi, lo) = ((n >> 32) as u32, n as u32);
        let mid = (hi % 10) << 16 | lo >> 16;
        let low = (mid % 10) << 16 | (lo & 0xffff);
        *slot = b'0' + (low % 10) as u8;
        n = u64::from(hi / 10) << 32 | u64::from(mid / 10) << 16 | u64::from(low / 10);
        start -= 1;
        if n == 0 {
            break;
        }
    }
    for &b in buf.get(start..).unwrap_or(&[]) {
        w.write_char(char::from(b))?;
    }
    Ok(())
}

/// Lowercase hex of one byte (two characters).
fn write_hex(w: &mut impl fmt::Write, b: u8) -> fmt::Result {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for nibble in [b >> 4, b & 0x0f] {
        w.write_char(char::from(HEX.get(usize::from(nibble)).copied().unwrap_or(b'0')))?;
    }
    Ok(())
}

fn write_oid(w: &mut impl fmt::Write, body: &[u8]) -> fmt::Result {
    let mut arc: u64 = 0;
    let mut first = true;
    for b in body {
        arc = arc.saturating_mul(128).saturating_add(u64::from(b & 0x7f));
        if b & 0x80 != 0 {
            continue;
        }
        if first {
            let (x, y) = if arc < 40 {
                (0, arc)
            } else if arc < 80 {
                (1, arc - 40)
            } else {
                (2, arc - 80)
            };
            write_decimal(w, x)?;
            w.write_char('.')?;
            write_decimal(w, y)?;
            first = false;
        } else {
            w.write_char('.')?;
            write_decimal(w, arc)?;
        }
        arc = 0;
    }
    Ok(())
}

/// `type=value` of one attribute, RFC 4514 style. `value_der` is the value's whole encoding
/// (`value` with its header), written as `#hex` when the value is not a string, as RFC 4514 §2.4
/// says and Go's `pkix.Name.String` and OpenSSL do.
fn write_attribute(
    w: &mut impl fmt::Write,
    ty: &Tlv<'_>,
    value: &Tlv<'_>,
    value_der: &[u8],
) -> fmt::Result {
    let short = SHORT_NAMES.iter().find(|(o, _)| is_oid(ty, o));
    match short {
        Some((_, name)) => w.write_str(name)?,
        None => write_oid(w, ty.value())?,
    }
    w.write_char('=')?;
    let text = match value.tag() {
        tag::PRINTABLE_STRING | tag::UTF8_STRING | tag::IA5_STRING | tag::TELETEX_STRING => {
            core::str::from_utf8(value.value()).ok()
        }
        _ => None,
    };
    let Some(text) = text else {
        w.write_char('#')?;
        for &b in value_der {
            write_hex(w, b)?;
        }
        return Ok(());
    };
    let last = text.chars().count().saturating_sub(1);
    // Runs of characters that need no escape are written as one slice.
    let mut run = 0;
    for (i, (at, ch)) in text.char_indices().enumerate() {
        let escape = matches!(ch, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (ch == '#' || ch == ' '))
            || (i == last && ch == ' ');
        if !escape && !ch.is_control() {
            continue;
        }
        w.write_str(text.get(run..at).unwrap_or(""))?;
        run = at + ch.len_utf8();
        if escape {
            w.write_char('\\')?;
        }
        if ch.is_control() {
            // Control characters are C0 (< 0x20), DEL or C1 (0x80..=0x9f): one byte of hex.
            w.write_char('\\')?;
            write_hex(w, ch as u8)?;
        } else {
            w.write_char(ch)?;
        }
    }
    w.write_str(text.get(run..).unwrap_or(""))
}

/// Render a Name DER (already validated) RFC 4514 style: RDNs last-first, `,` between RDNs, `+`
/// inside multi-valued RDNs.
#[inline(never)] // keep its locals out of the caller's frame during the path search
fn render_name<const N: usize>(name_der: &[u8], out: &mut heapless::String<N>) {
    // Most cluster CAs are named by one plain CN (`CN=kubernetes`): written directly, the same
    // text as below (the unit tests compare the two).
    if !plain_single_cn(name_der).is_some_and(|cn| push_plain_cn(cn, out)) {
        render_name_general(name_der, out)
    }
}

/// Write `CN=<cn>` for a [`plain_single_cn`] value if it fits without truncation (else `false`,
/// nothing written).
fn push_plain_cn<const N: usize>(cn: &str, out: &mut heapless::String<N>) -> bool {
    3 + cn.len() <= N.saturating_sub(3) && out.push_str("CN=").is_ok() && out.push_str(cn).is_ok()
}

/// The value of a Name that is exactly one CN attribute, PrintableString or UTF8String, made of
/// characters RFC 4514 writes as they are (printable ASCII but `,+"\<>;`, no leading `#` or
/// space, no trailing space); `None` for anything else.
fn plain_single_cn(name_der: &[u8]) -> Option<&str> {
    let name = single(name_der, tag::SEQUENCE).ok()?;
    let rdn = single(name.value(), tag::SET).ok()?;
    let atv = single(rdn.value(), tag::SEQUENCE).ok()?;
    let mut r = Der(atv.value());
    let (ty, _) = next(&mut r).ok()?;
    let (value, _) = next(&mut r).ok()?;
    if !r.is_finished()
        || !is_oid(&ty, &OID_CN)
        || !matches!(value.tag(), tag::PRINTABLE_STRING | tag::UTF8_STRING)
    {
        return None;
    }
    let v = value.value();
    let plain = v.iter().all(|&b| {
        (b.is_ascii_graphic() || b == b' ')
            && !matches!(b, b',' | b'+' | b'"' | b'\\' | b'<' | b'>' | b';')
    });
    let edges_ok = !matches!(v.first(), Some(b'#' | b' ')) && v.last() != Some(&b' ');
    if plain && edges_ok { core::str::from_utf8(v).ok() } else { None }
}

/// [`render_name`] for any Name.
fn render_name_general<const N: usize>(name_der: &[u8], out: &mut heapless::String<N>) {
    let mut w = Capped { out, full: false };
    let Ok(name) = single(name_der, tag::SEQUENCE) else {
        return;
    };
    // Count RDNs, then emit them from the last to the first (RDN counts are small).
    let mut count = 0usize;
    let _ = for_each_rdn(name.value(), |_| {
        count += 1;
    });
    for wanted in (0..count).rev() {
        let mut index = 0usize;
        let _ = for_each_rdn(name.value(), |set| {
            if index == wanted {
                if wanted + 1 != count {
                    let _ = w.write_char(',');
                }
                let mut first = true;
                let _ = (|| -> Result<(), VerifyError> {
                    let mut atvs = reader(set)?;
                    while !atvs.is_finished() {
                        let (atv, _) = next(&mut atvs)?;
                        let mut a = reader(atv.value())?;
                        let (ty, _) = next(&mut a)?;
                        let (value, value_der) = next(&mut a)?;
                        if !first {
                            let _ = w.write_char('+');
                        }
                        first = false;
                        let _ = write_attribute(&mut w, &ty, &value, value_der);
                    }
                    Ok(())
                })();
            }
            index += 1;
        });
    }
}

fn for_each_rdn<'a>(
    name_contents: &'a [u8],
    mut f: impl FnMut(&'a [u8]),
) -> Result<(), VerifyError> {
    let mut rdns = reader(name_contents)?;
    while !rdns.is_finished() {
        let (set, _) = next(&mut rdns)?;
        f(set.value());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// Every value of up to 3 octets over bytes that sit on the rules' edges.
    fn short_values() -> impl Iterator<Item = Vec<u8>> {
        const EDGE: [u8; 8] = [0x00, 0x01, 0x07, 0x08, 0x7f, 0x80, 0xfe, 0xff];
        (0..=3u32).flat_map(|len| {
            (0..EDGE.len().pow(len)).map(move |mut i| {
                (0..len)
                    .map(|_| {
                        let b = EDGE[i % EDGE.len()];
                        i /= EDGE.len();
                        b
                    })
                    .collect()
            })
        })
    }

    /// A Name of one RDN with one attribute (type OID body, string tag, value).
    fn name_der(oid_body: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
            let mut v = vec![tag];
            match content.len() {
                n @ 0..=0x7f => v.push(n as u8),
                n @ 0x80..=0xff => v.extend([0x81, n as u8]),
                n => v.extend([0x82, (n >> 8) as u8, n as u8]),
            }
            v.extend_from_slice(content);
            v
        }
        let atv = [tlv(0x06, oid_body), tlv(tag, value)].concat();
        tlv(0x30, &tlv(0x31, &tlv(0x30, &atv)))
    }

    #[test]
    fn single_cn_fast_path_renders_as_the_general_path() {
        let cn = OID_CN.as_bytes();
        let long = "k".repeat(300);
        let values: [&[u8]; 16] = [
            b"kubernetes",
            b"kubernetes-ec",
            b"",
            b" lead",
            b"trail ",
            b"#hash",
            b"mid#dle sp",
            b"a,b",
            b"a+b",
            b"q\"q",
            b"back\\slash",
            b"<>;",
            b"tab\there",
            "caf\u{e9}".as_bytes(),
            b"\xff\xfe",
            long.as_bytes(),
        ];
        let mut fast = 0;
        for v in values {
            for (tag, oid) in [(0x13, cn), (0x0c, cn), (0x16, cn), (0x13, OID_O.as_bytes())] {
                let der = name_der(oid, tag, v);
                let mut a = heapless::String::<CA_SUBJECT_CAP>::new();
                let mut b = heapless::String::<CA_SUBJECT_CAP>::new();
                render_name(&der, &mut a);
                render_name_general(&der, &mut b);
                assert_eq!(a, b, "{v:?} tag {tag:#x}");
                let mut small = heapless::String::<12>::new();
                let mut small_b = heapless::String::<12>::new();
                render_name(&der, &mut small);
                render_name_general(&der, &mut small_b);
                assert_eq!(small, small_b, "{v:?} tag {tag:#x} (capped)");
                fast += usize::from(plain_single_cn(&der).is_some());
            }
        }
        assert_eq!(fast, 2 * 5, "the fast path takes the plain CNs only");
        let two = [name_der(cn, 0x13, b"a"), name_der(cn, 0x13, b"b")].concat();
        assert_eq!(plain_single_cn(&two), None);
    }

    #[test]
    fn hand_decoded_primitives_agree_with_der() {
        use der::Tag;
        use der::asn1::{AnyRef, BitStringRef, UintRef};
        let mut checked = 0;
        for v in short_values() {
            for tag in [Tag::Integer, Tag::BitString, Tag::Boolean, Tag::OctetString] {
                let theirs_any = AnyRef::new(tag, &v).unwrap();
                let any = Tlv { tag: tag.number().value() as u8, value: &v };
                let theirs = UintRef::try_from(theirs_any).ok().map(|u| u.as_bytes());
                assert_eq!(uint(&any), theirs, "INTEGER {tag:?} {v:02x?}");
                let theirs = BitStringRef::try_from(theirs_any).ok();
                let ours = bit_string(&any);
                assert_eq!(
                    ours,
                    theirs.map(|b| (b.unused_bits(), b.raw_bytes())),
                    "BIT STRING {tag:?} {v:02x?}"
                );
                assert_eq!(whole_bytes(&any), theirs.and_then(|b| b.as_bytes()));
                if let Some(b) = theirs {
                    let mut want = 0u16;
                    for (i, set) in b.bits().enumerate().take(16) {
                        want |= u16::from(set) << i;
                    }
                    let mut tlv = vec![0x03, v.len() as u8];
                    tlv.extend_from_slice(&v);
                    assert_eq!(parse_key_usage(&tlv), Ok(want), "{v:02x?}");
                }
                let theirs = theirs_any.decode_as::<bool>().ok();
                assert_eq!(boolean(&any), theirs, "BOOLEAN {tag:?} {v:02x?}");
                checked += 1;
            }
        }
        assert_eq!(checked, 4 * (1 + 8 + 64 + 512));
    }

    #[test]
    fn civil_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
    }

    fn time(tag: u8, s: &str) -> Result<i64, VerifyError> {
        parse_time(&Tlv { tag, value: s.as_bytes() })
    }

    /// `next` against `der` (tag, header and contents) on every first octet, with every length
    /// form: short, one- and two-octet long forms (shortest and not), longer forms, indefinite,
    /// a length past the input, and a high tag number.
    #[test]
    fn next_agrees_with_der() {
        use der::{Decode, Reader, Tag};
        let lengths: [&[u8]; 13] = [
            &[0x00],
            &[0x05],
            &[0x7f],
            &[0x80],
            &[0x81, 0x05],
            &[0x81, 0x80],
            &[0x81, 0xff],
            &[0x82, 0x00, 0x90],
            &[0x82, 0x01, 0x00],
            &[0x82, 0x01, 0x2c],
            &[0x83, 0x00, 0x01, 0x2c],
            &[0x84, 0x00, 0x00, 0x01, 0x2c],
            &[0xff],
        ];
        let mut compared = 0;
        for first in 0..=255u8 {
            for tag_tail in [&[][..], &[0x1f], &[0x81, 0x00], &[0x80, 0x1f]] {
                for len in lengths {
                    for content in [0usize, 4, 300] {
                        let mut input = vec![first];
                        input.extend_from_slice(tag_tail);
                        input.extend_from_slice(len);
                        input.extend(core::iter::repeat_n(0xa5, content));
                        input.push(0x00); // something after the element
                        let ours = next(&mut Der(&input))
                            .map(|(tlv, whole)| (tlv.tag, tlv.value, whole.len()));
                        let theirs = (|| {
                            let mut r = der::SliceReader::new(&input).ok()?;
                            let header = der::Header::decode(&mut r).ok()?;
                            let header_len = usize::try_from(r.position()).ok()?;
                            let len = usize::try_from(header.length()).ok()?;
                            let value = r.read_slice(header.length()).ok()?;
                            let tag: Tag = header.tag();
                            Some((tag, value, header_len + len))
                        })();
                        match (ours, theirs) {
                            (Err(e), None) => assert_eq!(e, malformed()),
                            (Ok((ours_tag, value, n)), Some((tag, v, m))) => {
                                assert_eq!((value, n), (v, m), "{input:02x?}");
                                assert_eq!(ours_tag, first, "{input:02x?}");
                                // Equal to a one-octet constant exactly when `der` says so.
                                let single = tag.number().value() < 31;
                                assert_eq!(single, first & 0x1f != 0x1f, "{input:02x?}");
                                if single {
                                    let mut enc = [0u8; 6];
                                    let e = der::Encode::encode_to_slice(&tag, &mut enc).unwrap();
                                    assert_eq!(e, &[first][..], "{input:02x?}");
                                } else {
                                    assert_eq!(first & 0x1f, 0x1f, "{input:02x?}");
                                }
                                compared += 1;
                            }
                            (ours, theirs) => {
                                panic!("{input:02x?}: ours {ours:?}, der {:?}", theirs.is_some())
                            }
                        }
                    }
                }
            }
        }
        assert!(compared > 4_000, "{compared}"); // 4,976 accepted with der 0.8.3
    }

    #[test]
    fn times() {
        assert_eq!(time(tag::UTC_TIME, "700101000000Z"), Ok(0));
        assert_eq!(time(tag::UTC_TIME, "491231235959Z"), Ok(2_524_607_999));
        assert_eq!(time(tag::UTC_TIME, "500101000000Z"), Ok(-631_152_000));
        assert_eq!(time(tag::GENERALIZED_TIME, "20500101000000Z"), Ok(2_524_608_000));
        assert_eq!(time(tag::GENERALIZED_TIME, "20240229120000Z"), Ok(1_709_208_000));
        for bad in ["20230229120000Z", "20241301000000Z", "20240101240000Z", "2024010100000Z"] {
            assert_eq!(time(tag::GENERALIZED_TIME, bad), Err(malformed()), "{bad}");
        }
        assert_eq!(time(tag::UTC_TIME, "7001010000000"), Err(malformed()));
        assert_eq!(time(tag::UTC_TIME, "700101000000+0000"), Err(malformed()));
        assert_eq!(time(tag::UTF8_STRING, "700101000000Z"), Err(malformed()));
    }

    #[test]
    fn garbage_is_malformed() {
        let exp = Expected { node_name: "n", public_key: &[], profile: Profile::Client };
        for input in [&[][..], &[0x30], &[0x30, 0x03, 0x02, 0x01, 0x00], &[0xff; 40]] {
            assert_eq!(verify_issued_der(input, &[], &[], &exp, 0).unwrap_err(), malformed());
        }
        let big = [0x30u8; MAX_CERT_LEN + 1];
        assert_eq!(verify_issued_der(&big, &[], &[], &exp, 0).unwrap_err(), malformed());
    }

    #[test]
    fn oid_rendering() {
        let mut s: heapless::String<64> = heapless::String::new();
        write_oid(&mut s, OID_P256.as_bytes()).unwrap();
        assert_eq!(s.as_str(), "1.2.840.10045.3.1.7");
    }

    #[test]
    fn decimal_without_64_bit_division_matches_core_fmt() {
        let check = |v: u64| {
            let (mut got, mut want) =
                (heapless::String::<32>::new(), heapless::String::<32>::new());
            write_decimal(&mut got, v).unwrap();
            write!(want, "{v}").unwrap();
            assert_eq!(got, want, "{v}");
        };
        for v in [0, 1, 9, 10, 99, 100, 0xffff_ffff, 1 << 32, 42_949_672_959, 42_949_672_960] {
            check(v);
        }
        for v in [9_999_999_999_999_999_999, 10_000_000_000_000_000_000, u64::MAX - 1, u64::MAX] {
            check(v);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        // (300 under Miri: each `write!` takes about 20 ms there.)
        for _ in 0..if cfg!(miri) { 300 } else { 5000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(x >> (x % 64));
        }
    }

    #[test]
    fn large_oid_arcs_are_exact() {
        // 2.999 (first octets 0x88 0x37), then arcs of 2^32, 2^63 and a saturated one (> u64).
        let body = [
            0x88, 0x37, 0x90, 0x80, 0x80, 0x80, 0x00, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
            0x80, 0x80, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ];
        let mut s: heapless::String<128> = heapless::String::new();
        write_oid(&mut s, &body).unwrap();
        assert_eq!(s.as_str(), "2.999.4294967296.9223372036854775808.18446744073709551615");
    }

    #[test]
    fn attribute_hex_and_control_escapes() {
        let mut s: heapless::String<128> = heapless::String::new();
        let ty = Tlv { tag: tag::OID, value: OID_P256.as_bytes() };
        // The whole encoding, as Go 1.26's pkix.RDNSequence.String() writes this attribute.
        let der = [0x04, 0x04, 0x00, 0x0f, 0xa5, 0xff];
        let value = Tlv { tag: tag::OCTET_STRING, value: &der[2..] };
        write_attribute(&mut s, &ty, &value, &der).unwrap();
        assert_eq!(s.as_str(), "1.2.840.10045.3.1.7=#0404000fa5ff");
        s.clear();
        let cn = Tlv { tag: tag::OID, value: OID_CN.as_bytes() };
        let value = Tlv { tag: tag::UTF8_STRING, value: " a\x01,\u{7f}\u{9f} ".as_bytes() };
        write_attribute(&mut s, &cn, &value, &[]).unwrap();
        assert_eq!(s.as_str(), "CN=\\ a\\01\\,\\7f\\9f\\ ");
    }

    #[test]
    fn capped_writer_truncates() {
        let mut s: heapless::String<8> = heapless::String::new();
        let mut w = Capped { out: &mut s, full: false };
        w.write_str("abcdefghijk").unwrap();
        assert_eq!(s.as_str(), "abcde...");
    }
}
