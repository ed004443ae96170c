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
//!    [`MAX_CERT_LEN`], [`MAX_INTERMEDIATES`], [`MAX_CAS`]) → [`Reason::Malformed`]. What Go's
//!    `x509.ParseCertificate` refuses is malformed here too: a negative or non-minimal serial
//!    number, a critical subjectKeyIdentifier or authorityKeyIdentifier, a nameConstraints
//!    extension that is empty or has an unparsable DNS or IP constraint.
//! 2. **Path and signatures**: a depth-first search from the leaf through the intermediates to a
//!    CA of the bundle, matching issuer to subject by exact DER name bytes (at most
//!    [`MAX_DEPTH`] intermediates, at most [`MAX_SIGNATURE_CHECKS`] signature verifications).
//!    Intermediates must have basicConstraints `CA:TRUE`, keyCertSign when keyUsage is present,
//!    a respected pathLenConstraint and no unknown critical extension; a CA of the bundle is a
//!    trust anchor and only its pathLenConstraint is enforced (as Go's `x509.Verify` does). On
//!    every certificate above the leaf, the CA included (as Go checks a chain): its
//!    extendedKeyUsage, when present, lists the leaf's purpose or anyExtendedKeyUsage, and the
//!    leaf's DNS and IP SANs are within its nameConstraints (Go's rules, `verify/constraints.rs`).
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
//!
//! A TLS client that brings its own TLS stack checks the *server's* certificate with the same
//! parser, path search and signature dispatch: [`verify_server_der`] (chain, time, the dialed
//! name, serverAuth) and [`ServerKey::verify_signature`] (the handshake's signature).
//!
//! The path validation is kubeboot's own, not rustls-webpki's: docs/x509-validation.md has the
//! measurements (flash, stack, instructions) and the chains on which the two, Go's `crypto/x509`
//! and OpenSSL differ (`tests/verify_peers.rs` checks that table).

use core::fmt::{self, Write as _};
use core::net::IpAddr;

use der::asn1::ObjectIdentifier;

use crate::backend::{RsaHash, SignatureVerifier, Software, Verdict};
use crate::der_walk::*;
use crate::error::{Detail, Error, Reason, VerifyError};
use crate::oid;

mod cert;
mod constraints;
mod device;
mod names;
mod path;
mod render;
mod server;
mod signature;
#[cfg(test)]
mod tests;

#[cfg(all(feature = "std", unix))]
pub(crate) use cert::cert_key_and_validity;
pub(crate) use cert::cert_spki;
use cert::*;
use constraints::*;
pub use device::{DEVICE_SERIAL_CAP, DeviceCert, verify_device_der};
use names::*;
pub use names::{Described, SERIAL_HEX_CAP, San, describe, for_each_san, subject_node_name};
use path::*;
use render::*;
pub use server::{
    ECDSA_SECP256R1_SHA256, ECDSA_SECP384R1_SHA384, ServerKey, ServerName, verify_server_der,
};
use signature::*;
pub(crate) use signature::{IssuerKey, rsa_key_decodes, rsa_modulus_bits, signature_verdict};

/// The verification error for DER that does not parse.
fn malformed() -> VerifyError {
    VerifyError::new(Reason::Malformed)
}

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
    let purpose = match expected.profile {
        Profile::Client => &oid::CLIENT_AUTH,
        Profile::Serving { .. } => &oid::SERVER_AUTH,
    };
    let (ca_index, depth, ca_subject_der) =
        find_path(verifier, &leaf, purpose, intermediates, cas, now)
            .map_err(|e| no_path(leaf.issuer, e))?;

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
        let (ders, _) = decode_all(ca_pem, scratch, &mut ders)?;
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
    leaf: &Cert<'s>,
    purpose: &'s ObjectIdentifier,
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
        leaf: Leaf { purpose, san: leaf.ext.san },
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
        Profile::Client => oid::CLIENT_AUTH,
        Profile::Serving { .. } => oid::SERVER_AUTH,
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
    let (chain, rest) = decode_all(cert_pem, scratch, &mut chain)?;
    let (cas, _) = decode_all(ca_pem, rest, &mut cas)?;
    let (leaf, inter) = chain.split_first().ok_or_else(malformed)?;
    if cas.is_empty() {
        return Err(malformed().into());
    }
    Ok(verify_issued_der_with(verifier, leaf, inter, cas, expected, now)?)
}

/// Every check of [`verify_issued_with`] except the path to a CA: the leaf alone (well-formed,
/// its time, its key, subject and SANs, usages, not a CA). For a certificate whose issuer its
/// caller establishes another way — the agent's proof: a request the apiserver authenticates
/// with the new pair — and never enough on its own. [`Verified::ca_subject`] is the leaf's
/// issuer; `ca_index` and `intermediates_used` are 0. `scratch` as for [`verify_issued_with`]
/// with an empty CA bundle.
pub fn verify_issued_unanchored(
    cert_pem: &[u8],
    expected: &Expected<'_>,
    now: i64,
    scratch: &mut [u8],
) -> Result<Verified, Error> {
    let needed = scratch_len(cert_pem, b"");
    if scratch.len() < needed {
        return Err(Error::BufferTooSmall { needed });
    }
    let mut chain: [&[u8]; MAX_INTERMEDIATES + 1] = [&[]; MAX_INTERMEDIATES + 1];
    let (chain, _) = decode_all(cert_pem, scratch, &mut chain)?;
    let leaf = chain.first().ok_or_else(malformed)?;
    let mut subject = None;
    let leaf = Cert::parse_leaf(leaf, expected.node_name, &mut subject)?;
    // The path search is where the issuer Name is otherwise checked.
    let issuer = single(leaf.issuer, tag::SEQUENCE).map_err(VerifyError::from)?;
    check_name(&issuer)?;
    check_leaf(&leaf, subject, expected, now)?;
    let mut verified = Verified {
        not_before: leaf.not_before,
        not_after: leaf.not_after,
        ca_subject: heapless::String::new(),
        ca_index: 0,
        intermediates_used: 0,
    };
    render_name(leaf.issuer, &mut verified.ca_subject);
    Ok(verified)
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
    let (chain, _) = decode_all(cert_pem, scratch, &mut chain)?;
    let (leaf, inter) = chain.split_first().ok_or_else(malformed)?;
    if cas.is_empty() {
        return Err(malformed().into());
    }
    Ok(verify_issued_der_anchored(verifier, leaf, inter, cas, expected, now)?)
}

/// Decode every CERTIFICATE block of `input` into consecutive pieces of `scratch`.
/// Returns the filled front of `out` (one DER per block, in order) and the unused scratch.
fn decode_all<'s, 'o>(
    input: &[u8],
    scratch: &'s mut [u8],
    out: &'o mut [&'s [u8]],
) -> Result<(&'o [&'s [u8]], &'s mut [u8]), Error> {
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
    // `n` slots were written, so this is the written front.
    let (filled, _) = out.split_at_checked(n).ok_or_else(malformed)?;
    Ok((filled, rest))
}
