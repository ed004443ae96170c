//! A device's attestation-key certificate, as an approver checks it: the certificate a factory
//! CA issued for the attestation key of a device's TPM (shaped like a TCG IAK certificate: the
//! device's serial number in the subject) must chain to the device CA the operator configured,
//! be valid now and be meant for attestation — and then its key checks the TPM's signature.
//! The same parser, path search and signature dispatch as [`verify_issued`].
//!
//! The order of checks is [`verify_device_der`]'s.

use super::*;

/// The longest device serial number [`DeviceCert::serial`] holds (RFC 5280's upper bound for
/// `X520SerialNumber`).
pub const DEVICE_SERIAL_CAP: usize = 64;

/// What a device certificate that passed [`verify_device_der`] says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCert {
    /// The attestation key: an uncompressed P-256 point.
    pub point: [u8; 65],
    /// The device's serial number (the subject's serialNumber attribute).
    pub serial: heapless::String<DEVICE_SERIAL_CAP>,
    /// The leaf's notAfter (unix seconds).
    pub not_after: i64,
}

/// Check an attestation key's certificate chain (`chain`: the key's certificate first, then
/// intermediates in any order, unused ones ignored) against the device CAs parsed beforehand
/// ([`Anchor`]) at `now`; the first failing step decides the [`Reason`]:
///
/// 1. **Parse** the leaf and the intermediates (at most [`MAX_INTERMEDIATES`]) →
///    [`Reason::Malformed`].
/// 2. **Path and signatures** to one of the anchors, as for an issued certificate (see
///    [`verify_issued_der`]), for the purpose tcg-kp-AIKCertificate (2.23.133.8.3): a CA whose
///    extendedKeyUsage is present must list it or anyExtendedKeyUsage.
/// 3. **Time** of the leaf → [`Reason::NotYetValid`] / [`Reason::Expired`].
/// 4. **Usage**: an unknown critical extension → [`Reason::WrongUsage`] (`criticalExtension`);
///    an extendedKeyUsage without tcg-kp-AIKCertificate (`extendedKeyUsage`; an IDevID-style
///    certificate without the extension is taken); a keyUsage without digitalSignature
///    (`keyUsage`); basicConstraints `CA:TRUE` → [`Reason::IsCa`].
/// 5. **Identity**: exactly one subject serialNumber (PrintableString or UTF8String, 1 to
///    [`DEVICE_SERIAL_CAP`] bytes of printable ASCII) → else [`Reason::SubjectMismatch`] with
///    field `subject.serialNumber`.
/// 6. **Key**: a P-256 public key → else [`Reason::UnsupportedAlgorithm`].
pub fn verify_device_der(
    verifier: &dyn SignatureVerifier,
    chain: &[&[u8]],
    cas: &[Anchor<'_>],
    now: i64,
) -> Result<DeviceCert, VerifyError> {
    let (leaf, intermediates) = chain.split_first().ok_or_else(malformed)?;
    if intermediates.len() > MAX_INTERMEDIATES || cas.len() > MAX_CAS {
        return Err(malformed());
    }
    let mut ignored = None;
    let leaf = Cert::parse_leaf(leaf, "", &mut ignored)?;
    find_path(
        verifier,
        &leaf,
        &oid::TCG_KP_AIK_CERTIFICATE,
        intermediates,
        CaSet::Parsed(cas),
        now,
    )
    .map_err(|e| no_path(leaf.issuer, e))?;
    check_device_leaf(&leaf, now)
}

/// Steps 3–6 on the leaf.
#[inline(never)]
fn check_device_leaf(leaf: &Cert<'_>, now: i64) -> Result<DeviceCert, VerifyError> {
    leaf.check_time(now)?;
    if leaf.ext.unknown_critical {
        return Err(VerifyError::field(Reason::WrongUsage, "criticalExtension"));
    }
    if let Some(list) = leaf.ext.eku {
        if !oid_list_contains(list, &oid::TCG_KP_AIK_CERTIFICATE)? {
            return Err(VerifyError::field(Reason::WrongUsage, "extendedKeyUsage"));
        }
    }
    if leaf.ext.key_usage.is_some_and(|ku| ku & KU_DIGITAL_SIGNATURE == 0) {
        return Err(VerifyError::field(Reason::WrongUsage, "keyUsage"));
    }
    if leaf.ext.is_ca {
        return Err(VerifyError::new(Reason::IsCa));
    }
    let serial = device_serial(leaf.subject)?;
    let point = match leaf.key {
        IssuerKey::P256(p) if p.len() == 65 && p.first() == Some(&4) => p,
        _ => return Err(VerifyError::new(Reason::UnsupportedAlgorithm)),
    };
    let mut out = DeviceCert { point: [0; 65], serial, not_after: leaf.not_after };
    out.point.copy_from_slice(point);
    Ok(out)
}

/// The one serialNumber attribute of a subject Name (its DER).
fn device_serial(subject: &[u8]) -> Result<heapless::String<DEVICE_SERIAL_CAP>, VerifyError> {
    let mismatch = VerifyError::field(Reason::SubjectMismatch, "subject.serialNumber");
    let name = single(subject, tag::SEQUENCE)?;
    let mut found: Option<Option<&[u8]>> = None;
    let mut count = 0usize;
    for_each_attribute(name.value(), |ty, value| {
        if is_oid(&ty, &oid::SERIAL_NUMBER) {
            count += 1;
            found = Some(attribute_bytes(&value));
        }
        Ok(())
    })?;
    let bytes = match (count, found) {
        (1, Some(Some(b))) => b,
        _ => return Err(mismatch),
    };
    let printable = |b: &u8| (0x21..0x7f).contains(b) || *b == b' ';
    if bytes.is_empty() || !bytes.iter().all(printable) {
        return Err(mismatch);
    }
    let text = core::str::from_utf8(bytes).map_err(|_| mismatch)?;
    heapless::String::try_from(text).map_err(|_| mismatch)
}
