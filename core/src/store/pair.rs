//! Reading a certificate and key pair the way Go's `tls.X509KeyPair` does.

use super::*;

/// A certificate's SubjectPublicKeyInfo DER, notBefore and notAfter, read with validation's
/// parser ([`crate::verify`]); `None` if it does not parse.
pub(super) fn parse_cert(der_bytes: &[u8]) -> Option<(&[u8], i64, i64)> {
    crate::verify::cert_key_and_validity(der_bytes).ok()
}

/// Go's `tls.X509KeyPair`: a block is a private key if its type is `PRIVATE KEY` or ends in
/// ` PRIVATE KEY`.
/// A key a device holds stands in its reference's block ([`crate::keyref`]).
pub(super) fn is_private_key_label(label: &str) -> bool {
    crate::keyref::is_key_label(label)
}

/// The DER of every decodable `CERTIFICATE` block (blocks with headers or bad base64 are skipped,
/// as Go's `pem.Decode` + type check does). A broken trailing block ends the scan, like Go.
pub(super) fn certificate_ders(input: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for block in pem::blocks(input) {
        let Ok(block) = block else { break };
        if block.label != LABEL_CERTIFICATE {
            continue;
        }
        let mut buf = vec![0u8; block.text.len()];
        if let Ok(der_bytes) = block.decode(&mut buf) {
            out.push(der_bytes.to_vec());
        }
    }
    out
}

pub(super) fn first_private_key_block(input: &[u8]) -> Option<PemBlock<'_>> {
    pem::blocks(input).map_while(|b| b.ok()).find(|b| is_private_key_label(b.label))
}

/// `(n, e)` of a PKCS#1 `RSAPrivateKey`.
pub(super) fn rsa_private_n_e(der_bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    use der::{Decode, Reader, SliceReader, asn1::UintRef};
    let mut r = SliceReader::new(der_bytes).ok()?;
    let ne = r
        .sequence(|k| {
            UintRef::decode(k)?; // version
            let n = UintRef::decode(k)?;
            let e = UintRef::decode(k)?;
            while !k.is_finished() {
                k.tlv_bytes()?;
            }
            Ok::<_, der::Error>((n.as_bytes(), e.as_bytes()))
        })
        .ok()?;
    r.finish().ok()?;
    Some(ne)
}

/// `(n, e)` of an RSA SubjectPublicKeyInfo.
pub(super) fn rsa_spki_n_e(spki_der: &[u8]) -> Option<(&[u8], &[u8])> {
    use der::{Decode, Reader, SliceReader, asn1::UintRef};
    let info = spki::SubjectPublicKeyInfoRef::from_der(spki_der).ok()?;
    if info.algorithm.oid != crate::oid::RSA_ENCRYPTION {
        return None;
    }
    let bits = info.subject_public_key.as_bytes()?;
    let mut r = SliceReader::new(bits).ok()?;
    let ne = r
        .sequence(|k| {
            let n = UintRef::decode(k)?;
            let e = UintRef::decode(k)?;
            Ok::<_, der::Error>((n.as_bytes(), e.as_bytes()))
        })
        .ok()?;
    r.finish().ok()?;
    Some(ne)
}

/// Check that the private key in `block` belongs to the certificate with `leaf_spki`.
pub(super) fn check_key_matches(
    block: &PemBlock<'_>,
    leaf_spki: &[u8],
) -> Result<(), StoreErrorKind> {
    use der::Decode;
    if crate::keyref::Holder::of_label(block.label) != Some(crate::keyref::Holder::Software) {
        // A device's key: the reference must be one; whether it matches is the device's to say
        // (the agent compared the device's public point with the certificate before storing).
        return crate::keyref::check_key_pem(block.text)
            .map(|_| ())
            .map_err(|_| StoreErrorKind::MalformedKey);
    }
    let mut buf = Zeroizing::new(vec![0u8; block.text.len()]);
    let key_der = block.decode(&mut buf).map_err(|_| StoreErrorKind::MalformedKey)?;
    match NodeKey::from_der(key_der) {
        Ok(k) => {
            return if k.public_key_spki()[..] == *leaf_spki {
                Ok(())
            } else {
                Err(StoreErrorKind::KeyMismatch)
            };
        }
        Err(Error::UnsupportedKey) => {}
        Err(_) => return Err(StoreErrorKind::MalformedKey),
    }
    // RSA: PKCS#1, or PKCS#8 wrapping PKCS#1. Go compares N and E.
    let pkcs1 = match pkcs8::PrivateKeyInfoRef::from_der(key_der) {
        Ok(info) if info.algorithm.oid == crate::oid::RSA_ENCRYPTION => info.private_key.as_bytes(),
        Ok(_) => return Err(StoreErrorKind::UnsupportedKey),
        Err(_) => key_der,
    };
    let (n, e) = rsa_private_n_e(pkcs1).ok_or(StoreErrorKind::UnsupportedKey)?;
    match rsa_spki_n_e(leaf_spki) {
        Some((pn, pe)) if pn == n && pe == e => Ok(()),
        _ => Err(StoreErrorKind::KeyMismatch),
    }
}

/// The crate error closest to an input-check failure (for [`StoreError::cause`]).
pub(super) fn crate_error(kind: StoreErrorKind) -> Error {
    match kind {
        StoreErrorKind::KeyMismatch => {
            Error::Verify(crate::error::VerifyError::new(crate::error::Reason::KeyMismatch))
        }
        StoreErrorKind::UnsupportedKey => Error::UnsupportedKey,
        StoreErrorKind::MalformedKey => Error::MalformedKey,
        _ => Error::Malformed,
    }
}

/// A parsed and checked pair (Go `tls.X509KeyPair(certPEM, keyPEM)`).
pub(super) struct Pair {
    pub(super) chain_pem: Vec<u8>,
    pub(super) leaf_der: Vec<u8>,
    pub(super) leaf_spki: Vec<u8>,
    pub(super) not_before: i64,
    pub(super) not_after: i64,
    pub(super) key_pem: Zeroizing<Vec<u8>>,
}

pub(super) fn load_pair(cert_input: &[u8], key_input: &[u8]) -> Result<Pair, StoreErrorKind> {
    let ders = certificate_ders(cert_input);
    let leaf_der = ders.first().ok_or(StoreErrorKind::NoCertificates)?;
    let mut chain_pem = Vec::new();
    for d in &ders {
        if parse_cert(d).is_none() {
            return Err(StoreErrorKind::MalformedCertificate);
        }
        let len = pem::encoded_len(LABEL_CERTIFICATE, d.len())
            .map_err(|_| StoreErrorKind::MalformedCertificate)?;
        let start = chain_pem.len();
        chain_pem.resize(start + len, 0);
        let out = chain_pem.get_mut(start..).unwrap_or(&mut []);
        pem::encode(LABEL_CERTIFICATE, d, out).map_err(|_| StoreErrorKind::MalformedCertificate)?;
    }
    let (spki, not_before, not_after) =
        parse_cert(leaf_der).ok_or(StoreErrorKind::MalformedCertificate)?;
    let key_block = first_private_key_block(key_input).ok_or(StoreErrorKind::MalformedKey)?;
    check_key_matches(&key_block, spki)?;
    let mut key_pem = Zeroizing::new(key_block.text.to_vec());
    if key_pem.last() != Some(&b'\n') {
        key_pem.push(b'\n');
    }
    Ok(Pair {
        leaf_spki: spki.to_vec(),
        not_before,
        not_after,
        leaf_der: leaf_der.clone(),
        chain_pem,
        key_pem,
    })
}
