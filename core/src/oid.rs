//! The object identifiers kubeboot reads and writes, in one table (one representation: `der`'s
//! [`ObjectIdentifier`]; the DER content bytes are [`ObjectIdentifier::as_bytes`], a `const fn`,
//! so a module that compares or writes bytes takes them at compile time).

use der::asn1::ObjectIdentifier;

const fn oid(s: &str) -> ObjectIdentifier {
    ObjectIdentifier::new_unwrap(s)
}

// Signature algorithms (RFC 5758 §3.2, RFC 4055 §5, RFC 8410 §3).
/// ecdsa-with-SHA256.
pub(crate) const ECDSA_SHA256: ObjectIdentifier = oid("1.2.840.10045.4.3.2");
/// ecdsa-with-SHA384.
pub(crate) const ECDSA_SHA384: ObjectIdentifier = oid("1.2.840.10045.4.3.3");
/// ecdsa-with-SHA512.
pub(crate) const ECDSA_SHA512: ObjectIdentifier = oid("1.2.840.10045.4.3.4");
/// sha256WithRSAEncryption.
pub(crate) const RSA_SHA256: ObjectIdentifier = oid("1.2.840.113549.1.1.11");
/// sha384WithRSAEncryption.
pub(crate) const RSA_SHA384: ObjectIdentifier = oid("1.2.840.113549.1.1.12");
/// sha512WithRSAEncryption.
pub(crate) const RSA_SHA512: ObjectIdentifier = oid("1.2.840.113549.1.1.13");
/// RSASSA-PSS.
pub(crate) const RSA_PSS: ObjectIdentifier = oid("1.2.840.113549.1.1.10");
/// Ed25519 (key and signature algorithm).
pub(crate) const ED25519: ObjectIdentifier = oid("1.3.101.112");

// Public key algorithms and curves (RFC 5480 §2.1.1, RFC 3279 §2.3.1).
/// id-ecPublicKey.
pub(crate) const EC_PUBLIC_KEY: ObjectIdentifier = oid("1.2.840.10045.2.1");
/// rsaEncryption.
pub(crate) const RSA_ENCRYPTION: ObjectIdentifier = oid("1.2.840.113549.1.1.1");
/// secp256r1 (P-256).
pub(crate) const P256: ObjectIdentifier = oid("1.2.840.10045.3.1.7");
/// secp384r1 (P-384).
pub(crate) const P384: ObjectIdentifier = oid("1.3.132.0.34");
/// secp521r1 (P-521).
pub(crate) const P521: ObjectIdentifier = oid("1.3.132.0.35");

// Certificate extensions (RFC 5280 §4.2.1) and the CSR's extension request (RFC 2985 §5.4.2).
/// basicConstraints.
pub(crate) const BASIC_CONSTRAINTS: ObjectIdentifier = oid("2.5.29.19");
/// keyUsage.
pub(crate) const KEY_USAGE: ObjectIdentifier = oid("2.5.29.15");
/// extKeyUsage.
pub(crate) const EXT_KEY_USAGE: ObjectIdentifier = oid("2.5.29.37");
/// subjectAltName.
pub(crate) const SUBJECT_ALT_NAME: ObjectIdentifier = oid("2.5.29.17");
/// subjectKeyIdentifier.
pub(crate) const SUBJECT_KEY_ID: ObjectIdentifier = oid("2.5.29.14");
/// authorityKeyIdentifier.
pub(crate) const AUTHORITY_KEY_ID: ObjectIdentifier = oid("2.5.29.35");
/// nameConstraints.
pub(crate) const NAME_CONSTRAINTS: ObjectIdentifier = oid("2.5.29.30");
/// anyExtendedKeyUsage.
pub(crate) const ANY_EXT_KEY_USAGE: ObjectIdentifier = oid("2.5.29.37.0");
/// id-kp-serverAuth.
pub(crate) const SERVER_AUTH: ObjectIdentifier = oid("1.3.6.1.5.5.7.3.1");
/// id-kp-clientAuth.
pub(crate) const CLIENT_AUTH: ObjectIdentifier = oid("1.3.6.1.5.5.7.3.2");
/// tcg-kp-AIKCertificate (TCG EK Credential Profile): the purpose of an attestation key's
/// certificate (a TCG IAK certificate carries it).
pub(crate) const TCG_KP_AIK_CERTIFICATE: ObjectIdentifier = oid("2.23.133.8.3");
/// PKCS#9 extensionRequest.
pub(crate) const EXTENSION_REQUEST: ObjectIdentifier = oid("1.2.840.113549.1.9.14");

// Name attributes (RFC 4519, RFC 4514 §3).
/// commonName (CN).
pub(crate) const CN: ObjectIdentifier = oid("2.5.4.3");
/// serialNumber.
pub(crate) const SERIAL_NUMBER: ObjectIdentifier = oid("2.5.4.5");
/// countryName (C).
pub(crate) const C: ObjectIdentifier = oid("2.5.4.6");
/// localityName (L).
pub(crate) const L: ObjectIdentifier = oid("2.5.4.7");
/// stateOrProvinceName (ST).
pub(crate) const ST: ObjectIdentifier = oid("2.5.4.8");
/// streetAddress (STREET).
pub(crate) const STREET: ObjectIdentifier = oid("2.5.4.9");
/// organizationName (O).
pub(crate) const O: ObjectIdentifier = oid("2.5.4.10");
/// organizationalUnitName (OU).
pub(crate) const OU: ObjectIdentifier = oid("2.5.4.11");
/// domainComponent (DC).
pub(crate) const DC: ObjectIdentifier = oid("0.9.2342.19200300.100.1.25");
/// userId (UID).
pub(crate) const UID: ObjectIdentifier = oid("0.9.2342.19200300.100.1.1");
