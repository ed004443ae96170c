//! `kubeboot_result`: stable numeric result codes, their names and messages.

use core::ffi::c_char;

use kb::error::{Error, PolicyViolation, Reason, VerifyError};

use crate::macros::copy_out;

/// Result of every fallible kubeboot function. Numbers are stable and shared with
/// `kubeboot::Error::code()`: 0–99 ABI-level, 100s tokens, 200s keys, 300s CSRs, 400s
/// issued-certificate verification reasons, 500s CSR policy violations, 600s CA pins, 700s the
/// engine and the apiserver's answers. 10–22 are ABI-level certificate-store (std) errors.
/// In C this is a `uint32_t`; compare against the `KUBEBOOT_RESULT_*` constants.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum kubeboot_result {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullParameter = 1,
    /// kubeboot panicked internally (a bug); the operation was abandoned.
    Panic = 2,
    /// The output buffer is too small; the needed size was written to `*out_len`.
    InsufficientSize = 3,
    /// A text argument is not valid UTF-8.
    InvalidUtf8 = 4,
    /// An argument is out of range (unknown flag bits, format or profile, oversized length).
    InvalidParameter = 5,
    /// An error of a newer core this ABI does not know yet.
    UnknownError = 6,
    /// Certificate store (std): `StoreErrorKind::Io` (`store-io`).
    StoreIo = 10,
    /// Certificate store (std): `StoreErrorKind::NoCertKeyFiles` (`store-no-cert-key-files`).
    StoreNoCertKeyFiles = 11,
    /// Certificate store (std): `StoreErrorKind::NoCertificates` (`store-no-certificates`).
    StoreNoCertificates = 12,
    /// Certificate store (std): `StoreErrorKind::MalformedCertificate` (`store-malformed-certificate`).
    StoreMalformedCertificate = 13,
    /// Certificate store (std): `StoreErrorKind::MalformedKey` (`store-malformed-key`).
    StoreMalformedKey = 14,
    /// Certificate store (std): `StoreErrorKind::UnsupportedKey` (`store-unsupported-key`).
    StoreUnsupportedKey = 15,
    /// Certificate store (std): `StoreErrorKind::KeyMismatch` (`store-key-mismatch`).
    StoreKeyMismatch = 16,
    /// Certificate store (std): `StoreErrorKind::CurrentNotSymlink` (`store-current-not-symlink`).
    StoreCurrentNotSymlink = 17,
    /// Certificate store (std): `StoreErrorKind::UpdatedNotSymlink` (`store-updated-not-symlink`).
    StoreUpdatedNotSymlink = 18,
    /// Certificate store (std): `StoreErrorKind::ReadBackMismatch` (`store-read-back-mismatch`).
    StoreReadBackMismatch = 19,
    /// Certificate store (std): `StoreErrorKind::InvalidPrefix` (`store-invalid-prefix`).
    StoreInvalidPrefix = 20,
    /// Certificate store (std): `StoreErrorKind::InvalidTimestamp` (`store-invalid-timestamp`).
    StoreInvalidTimestamp = 21,
    /// Certificate store (std): `StoreErrorKind::KeyGeneration` (`store-key-generation`).
    StoreKeyGeneration = 22,
    /// `kubeboot::Error::InvalidToken` (`invalid-token`).
    InvalidToken = 100,
    /// `kubeboot::Error::InvalidTokenId` (`invalid-token-id`).
    InvalidTokenId = 101,
    /// `kubeboot::Error::InvalidSecretName` (`invalid-secret-name`).
    InvalidSecretName = 102,
    /// `kubeboot::Error::InvalidGroup` (`invalid-group`).
    InvalidGroup = 103,
    /// `kubeboot::Error::InvalidUsage` (`invalid-usage`).
    InvalidUsage = 104,
    /// `kubeboot::Error::InvalidExpiration` (`invalid-expiration`).
    InvalidExpiration = 105,
    /// `kubeboot::Error::TokenExpired` (`token-expired`).
    TokenExpired = 106,
    /// `kubeboot::Error::TokenNotForAuthentication` (`token-not-for-authentication`).
    TokenNotForAuthentication = 107,
    /// `kubeboot::Error::TokenMismatch` (`token-mismatch`).
    TokenMismatch = 108,
    /// `kubeboot::Error::InvalidAuthFileLine` (`invalid-auth-file-line`).
    InvalidAuthFileLine = 109,
    /// `kubeboot::Error::InsufficientEntropy` (`insufficient-entropy`).
    InsufficientEntropy = 110,
    /// `kubeboot::Error::MalformedKey` (`malformed-key`).
    MalformedKey = 200,
    /// `kubeboot::Error::UnsupportedKey` (`unsupported-key`).
    UnsupportedKey = 201,
    /// `kubeboot::Error::BadEntropy` (`bad-entropy`).
    BadEntropy = 202,
    /// `kubeboot::Error::InvalidNodeName` (`invalid-node-name`).
    InvalidNodeName = 300,
    /// `kubeboot::Error::InvalidDnsName` (`invalid-dns-name`).
    InvalidDnsName = 301,
    /// `kubeboot::Error::InvalidIpAddress` (`invalid-ip-address`).
    InvalidIpAddress = 302,
    /// `kubeboot::Error::TooManySans` (`too-many-sans`).
    TooManySans = 303,
    /// `kubeboot::Error::InvalidExpirationSeconds` (`invalid-expiration-seconds`).
    InvalidExpirationSeconds = 304,
    /// `kubeboot::Error::SignerFailed` (`signer-failed`).
    SignerFailed = 305,
    /// `kubeboot::Error::Malformed` (`malformed-input`).
    Malformed = 306,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::Malformed))` (`malformed`).
    VerifyMalformed = 400,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::Untrusted))` (`untrusted`).
    VerifyUntrusted = 401,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::BadSignature))` (`bad-signature`).
    VerifyBadSignature = 402,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::Expired))` (`expired`).
    VerifyExpired = 403,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::NotYetValid))` (`not-yet-valid`).
    VerifyNotYetValid = 404,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::KeyMismatch))` (`key-mismatch`).
    VerifyKeyMismatch = 405,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::SubjectMismatch))` (`subject-mismatch`).
    VerifySubjectMismatch = 406,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::WrongUsage))` (`wrong-usage`).
    VerifyWrongUsage = 407,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::IsCa))` (`is-ca`).
    VerifyIsCa = 408,
    /// `kubeboot::Error::Verify(VerifyError::new(Reason::UnsupportedAlgorithm))` (`unsupported-algorithm`).
    VerifyUnsupportedAlgorithm = 409,
    /// `kubeboot::Error::Policy(PolicyViolation::NotCertificateRequest)` (`policy-not-certificate-request`).
    PolicyNotCertificateRequest = 500,
    /// `kubeboot::Error::Policy(PolicyViolation::BadSignature)` (`policy-bad-signature`).
    PolicyBadSignature = 501,
    /// `kubeboot::Error::Policy(PolicyViolation::UnsupportedKey)` (`policy-unsupported-key`).
    PolicyUnsupportedKey = 502,
    /// `kubeboot::Error::Policy(PolicyViolation::Organization)` (`policy-organization`).
    PolicyOrganization = 503,
    /// `kubeboot::Error::Policy(PolicyViolation::CommonName)` (`policy-common-name`).
    PolicyCommonName = 504,
    /// `kubeboot::Error::Policy(PolicyViolation::DnsSanNotAllowed)` (`policy-dns-san-not-allowed`).
    PolicyDnsSanNotAllowed = 505,
    /// `kubeboot::Error::Policy(PolicyViolation::EmailSanNotAllowed)` (`policy-email-san-not-allowed`).
    PolicyEmailSanNotAllowed = 506,
    /// `kubeboot::Error::Policy(PolicyViolation::IpSanNotAllowed)` (`policy-ip-san-not-allowed`).
    PolicyIpSanNotAllowed = 507,
    /// `kubeboot::Error::Policy(PolicyViolation::UriSanNotAllowed)` (`policy-uri-san-not-allowed`).
    PolicyUriSanNotAllowed = 508,
    /// `kubeboot::Error::Policy(PolicyViolation::SanRequired)` (`policy-san-required`).
    PolicySanRequired = 509,
    /// `kubeboot::Error::Policy(PolicyViolation::ClientUsages)` (`policy-client-usages`).
    PolicyClientUsages = 510,
    /// `kubeboot::Error::Policy(PolicyViolation::ServingUsages)` (`policy-serving-usages`).
    PolicyServingUsages = 511,
    /// `kubeboot::Error::Policy(PolicyViolation::UnknownUsage)` (`policy-unknown-usage`).
    PolicyUnknownUsage = 512,
    /// `kubeboot::Error::Policy(PolicyViolation::DuplicateUsage)` (`policy-duplicate-usage`).
    PolicyDuplicateUsage = 513,
    /// `kubeboot::Error::Policy(PolicyViolation::UsagesRequired)` (`policy-usages-required`).
    PolicyUsagesRequired = 514,
    /// `kubeboot::Error::Policy(PolicyViolation::Signer)` (`policy-signer`).
    PolicySigner = 515,
    /// `kubeboot::Error::Policy(PolicyViolation::ExpirationTooShort)` (`policy-expiration-too-short`).
    PolicyExpirationTooShort = 516,
    /// `kubeboot::Error::InvalidPin` (`invalid-pin`).
    InvalidPin = 600,
    /// `kubeboot::Error::PinMismatch` (`pin-mismatch`).
    PinMismatch = 601,
    /// `kubeboot::Error::Unauthorized` (`unauthorized`).
    Unauthorized = 700,
    /// `kubeboot::Error::Forbidden` (`forbidden`).
    Forbidden = 701,
    /// `kubeboot::Error::CsrDenied` (`csr-denied`).
    CsrDenied = 702,
    /// `kubeboot::Error::CsrFailed` (`csr-failed`).
    CsrFailed = 703,
    /// `kubeboot::Error::CsrDeleted` (`csr-deleted`).
    CsrDeleted = 704,
    /// `kubeboot::Error::CsrUidChanged` (`csr-uid-changed`).
    CsrUidChanged = 705,
    /// `kubeboot::Error::CsrIncompatible` (`csr-incompatible`).
    CsrIncompatible = 706,
    /// `kubeboot::Error::Timeout` (`timeout`).
    Timeout = 707,
    /// `kubeboot::Error::HttpStatus` (`http-status`).
    HttpStatus = 708,
    /// `kubeboot::Error::MalformedResponse` (`malformed-response`).
    MalformedResponse = 709,
    /// `kubeboot::Error::TooLarge` (`too-large`).
    TooLarge = 710,
    /// `kubeboot::Error::InvalidState` (`invalid-state`).
    InvalidState = 711,
    /// `kubeboot::Error::JwsInvalid` (`jws-invalid`).
    JwsInvalid = 712,
}

/// Every result: the variant, its stable kebab-case name and its fixed message.
pub(crate) const RESULTS: &[(kubeboot_result, &str, &str)] = &[
    (kubeboot_result::Ok, "ok", "success"),
    (kubeboot_result::NullParameter, "null-parameter", "a required pointer argument was NULL"),
    (kubeboot_result::Panic, "panic", "internal panic (a bug in kubeboot)"),
    (kubeboot_result::InsufficientSize, "insufficient-size", "output buffer too small"),
    (kubeboot_result::InvalidUtf8, "invalid-utf8", "text argument is not valid UTF-8"),
    (kubeboot_result::InvalidParameter, "invalid-parameter", "argument out of range"),
    (kubeboot_result::UnknownError, "unknown-error", "unknown error"),
    (kubeboot_result::StoreIo, "store-io", "certificate store: a filesystem call failed"),
    (
        kubeboot_result::StoreNoCertKeyFiles,
        "store-no-cert-key-files",
        "certificate store: no certificate/key pair in the store",
    ),
    (
        kubeboot_result::StoreNoCertificates,
        "store-no-certificates",
        "certificate store: no certificates found in certificate input",
    ),
    (
        kubeboot_result::StoreMalformedCertificate,
        "store-malformed-certificate",
        "certificate store: malformed certificate",
    ),
    (
        kubeboot_result::StoreMalformedKey,
        "store-malformed-key",
        "certificate store: no parseable private key",
    ),
    (
        kubeboot_result::StoreUnsupportedKey,
        "store-unsupported-key",
        "certificate store: unsupported private key type",
    ),
    (
        kubeboot_result::StoreKeyMismatch,
        "store-key-mismatch",
        "certificate store: private key does not match public key in certificate",
    ),
    (
        kubeboot_result::StoreCurrentNotSymlink,
        "store-current-not-symlink",
        "certificate store: <prefix>-current.pem is not a symlink",
    ),
    (
        kubeboot_result::StoreUpdatedNotSymlink,
        "store-updated-not-symlink",
        "certificate store: <prefix>-updated.pem is not a symlink",
    ),
    (
        kubeboot_result::StoreReadBackMismatch,
        "store-read-back-mismatch",
        "certificate store: file read back differs from what was written",
    ),
    (
        kubeboot_result::StoreInvalidPrefix,
        "store-invalid-prefix",
        "certificate store: invalid store prefix",
    ),
    (
        kubeboot_result::StoreInvalidTimestamp,
        "store-invalid-timestamp",
        "certificate store: invalid timestamp",
    ),
    (
        kubeboot_result::StoreKeyGeneration,
        "store-key-generation",
        "certificate store: key generation failed",
    ),
    (kubeboot_result::InvalidToken, "invalid-token", Error::InvalidToken.message()),
    (kubeboot_result::InvalidTokenId, "invalid-token-id", Error::InvalidTokenId.message()),
    (kubeboot_result::InvalidSecretName, "invalid-secret-name", Error::InvalidSecretName.message()),
    (kubeboot_result::InvalidGroup, "invalid-group", Error::InvalidGroup.message()),
    (kubeboot_result::InvalidUsage, "invalid-usage", Error::InvalidUsage.message()),
    (kubeboot_result::InvalidExpiration, "invalid-expiration", Error::InvalidExpiration.message()),
    (kubeboot_result::TokenExpired, "token-expired", Error::TokenExpired.message()),
    (
        kubeboot_result::TokenNotForAuthentication,
        "token-not-for-authentication",
        Error::TokenNotForAuthentication.message(),
    ),
    (kubeboot_result::TokenMismatch, "token-mismatch", Error::TokenMismatch.message()),
    (
        kubeboot_result::InvalidAuthFileLine,
        "invalid-auth-file-line",
        Error::InvalidAuthFileLine.message(),
    ),
    (
        kubeboot_result::InsufficientEntropy,
        "insufficient-entropy",
        Error::InsufficientEntropy.message(),
    ),
    (kubeboot_result::MalformedKey, "malformed-key", Error::MalformedKey.message()),
    (kubeboot_result::UnsupportedKey, "unsupported-key", Error::UnsupportedKey.message()),
    (kubeboot_result::BadEntropy, "bad-entropy", Error::BadEntropy.message()),
    (kubeboot_result::InvalidNodeName, "invalid-node-name", Error::InvalidNodeName.message()),
    (kubeboot_result::InvalidDnsName, "invalid-dns-name", Error::InvalidDnsName.message()),
    (kubeboot_result::InvalidIpAddress, "invalid-ip-address", Error::InvalidIpAddress.message()),
    (kubeboot_result::TooManySans, "too-many-sans", Error::TooManySans.message()),
    (
        kubeboot_result::InvalidExpirationSeconds,
        "invalid-expiration-seconds",
        Error::InvalidExpirationSeconds.message(),
    ),
    (kubeboot_result::SignerFailed, "signer-failed", Error::SignerFailed.message()),
    (kubeboot_result::Malformed, "malformed-input", Error::Malformed.message()),
    (
        kubeboot_result::VerifyMalformed,
        "malformed",
        Error::Verify(VerifyError::new(Reason::Malformed)).message(),
    ),
    (
        kubeboot_result::VerifyUntrusted,
        "untrusted",
        Error::Verify(VerifyError::new(Reason::Untrusted)).message(),
    ),
    (
        kubeboot_result::VerifyBadSignature,
        "bad-signature",
        Error::Verify(VerifyError::new(Reason::BadSignature)).message(),
    ),
    (
        kubeboot_result::VerifyExpired,
        "expired",
        Error::Verify(VerifyError::new(Reason::Expired)).message(),
    ),
    (
        kubeboot_result::VerifyNotYetValid,
        "not-yet-valid",
        Error::Verify(VerifyError::new(Reason::NotYetValid)).message(),
    ),
    (
        kubeboot_result::VerifyKeyMismatch,
        "key-mismatch",
        Error::Verify(VerifyError::new(Reason::KeyMismatch)).message(),
    ),
    (
        kubeboot_result::VerifySubjectMismatch,
        "subject-mismatch",
        Error::Verify(VerifyError::new(Reason::SubjectMismatch)).message(),
    ),
    (
        kubeboot_result::VerifyWrongUsage,
        "wrong-usage",
        Error::Verify(VerifyError::new(Reason::WrongUsage)).message(),
    ),
    (kubeboot_result::VerifyIsCa, "is-ca", Error::Verify(VerifyError::new(Reason::IsCa)).message()),
    (
        kubeboot_result::VerifyUnsupportedAlgorithm,
        "unsupported-algorithm",
        Error::Verify(VerifyError::new(Reason::UnsupportedAlgorithm)).message(),
    ),
    (
        kubeboot_result::PolicyNotCertificateRequest,
        "policy-not-certificate-request",
        Error::Policy(PolicyViolation::NotCertificateRequest).message(),
    ),
    (
        kubeboot_result::PolicyBadSignature,
        "policy-bad-signature",
        Error::Policy(PolicyViolation::BadSignature).message(),
    ),
    (
        kubeboot_result::PolicyUnsupportedKey,
        "policy-unsupported-key",
        Error::Policy(PolicyViolation::UnsupportedKey).message(),
    ),
    (
        kubeboot_result::PolicyOrganization,
        "policy-organization",
        Error::Policy(PolicyViolation::Organization).message(),
    ),
    (
        kubeboot_result::PolicyCommonName,
        "policy-common-name",
        Error::Policy(PolicyViolation::CommonName).message(),
    ),
    (
        kubeboot_result::PolicyDnsSanNotAllowed,
        "policy-dns-san-not-allowed",
        Error::Policy(PolicyViolation::DnsSanNotAllowed).message(),
    ),
    (
        kubeboot_result::PolicyEmailSanNotAllowed,
        "policy-email-san-not-allowed",
        Error::Policy(PolicyViolation::EmailSanNotAllowed).message(),
    ),
    (
        kubeboot_result::PolicyIpSanNotAllowed,
        "policy-ip-san-not-allowed",
        Error::Policy(PolicyViolation::IpSanNotAllowed).message(),
    ),
    (
        kubeboot_result::PolicyUriSanNotAllowed,
        "policy-uri-san-not-allowed",
        Error::Policy(PolicyViolation::UriSanNotAllowed).message(),
    ),
    (
        kubeboot_result::PolicySanRequired,
        "policy-san-required",
        Error::Policy(PolicyViolation::SanRequired).message(),
    ),
    (
        kubeboot_result::PolicyClientUsages,
        "policy-client-usages",
        Error::Policy(PolicyViolation::ClientUsages).message(),
    ),
    (
        kubeboot_result::PolicyServingUsages,
        "policy-serving-usages",
        Error::Policy(PolicyViolation::ServingUsages).message(),
    ),
    (
        kubeboot_result::PolicyUnknownUsage,
        "policy-unknown-usage",
        Error::Policy(PolicyViolation::UnknownUsage).message(),
    ),
    (
        kubeboot_result::PolicyDuplicateUsage,
        "policy-duplicate-usage",
        Error::Policy(PolicyViolation::DuplicateUsage).message(),
    ),
    (
        kubeboot_result::PolicyUsagesRequired,
        "policy-usages-required",
        Error::Policy(PolicyViolation::UsagesRequired).message(),
    ),
    (
        kubeboot_result::PolicySigner,
        "policy-signer",
        Error::Policy(PolicyViolation::Signer).message(),
    ),
    (
        kubeboot_result::PolicyExpirationTooShort,
        "policy-expiration-too-short",
        Error::Policy(PolicyViolation::ExpirationTooShort).message(),
    ),
    (kubeboot_result::InvalidPin, "invalid-pin", Error::InvalidPin.message()),
    (kubeboot_result::PinMismatch, "pin-mismatch", Error::PinMismatch.message()),
    (kubeboot_result::Unauthorized, "unauthorized", Error::Unauthorized.message()),
    (kubeboot_result::Forbidden, "forbidden", Error::Forbidden.message()),
    (kubeboot_result::CsrDenied, "csr-denied", Error::CsrDenied.message()),
    (kubeboot_result::CsrFailed, "csr-failed", Error::CsrFailed.message()),
    (kubeboot_result::CsrDeleted, "csr-deleted", Error::CsrDeleted.message()),
    (kubeboot_result::CsrUidChanged, "csr-uid-changed", Error::CsrUidChanged.message()),
    (kubeboot_result::CsrIncompatible, "csr-incompatible", Error::CsrIncompatible.message()),
    (kubeboot_result::Timeout, "timeout", Error::Timeout.message()),
    (kubeboot_result::HttpStatus, "http-status", Error::HttpStatus.message()),
    (kubeboot_result::MalformedResponse, "malformed-response", Error::MalformedResponse.message()),
    (kubeboot_result::TooLarge, "too-large", Error::TooLarge.message()),
    (kubeboot_result::InvalidState, "invalid-state", Error::InvalidState.message()),
    (kubeboot_result::JwsInvalid, "jws-invalid", Error::JwsInvalid.message()),
];

/// Every core error value with a code, for the mapping test.
#[cfg(test)]
pub(crate) const CORE_ERRORS: &[(Error, kubeboot_result)] = &[
    (Error::BufferTooSmall { needed: 0 }, kubeboot_result::InsufficientSize),
    (Error::InvalidToken, kubeboot_result::InvalidToken),
    (Error::InvalidTokenId, kubeboot_result::InvalidTokenId),
    (Error::InvalidSecretName, kubeboot_result::InvalidSecretName),
    (Error::InvalidGroup, kubeboot_result::InvalidGroup),
    (Error::InvalidUsage, kubeboot_result::InvalidUsage),
    (Error::InvalidExpiration, kubeboot_result::InvalidExpiration),
    (Error::TokenExpired, kubeboot_result::TokenExpired),
    (Error::TokenNotForAuthentication, kubeboot_result::TokenNotForAuthentication),
    (Error::TokenMismatch, kubeboot_result::TokenMismatch),
    (Error::InvalidAuthFileLine, kubeboot_result::InvalidAuthFileLine),
    (Error::InsufficientEntropy, kubeboot_result::InsufficientEntropy),
    (Error::MalformedKey, kubeboot_result::MalformedKey),
    (Error::UnsupportedKey, kubeboot_result::UnsupportedKey),
    (Error::BadEntropy, kubeboot_result::BadEntropy),
    (Error::InvalidNodeName, kubeboot_result::InvalidNodeName),
    (Error::InvalidDnsName, kubeboot_result::InvalidDnsName),
    (Error::InvalidIpAddress, kubeboot_result::InvalidIpAddress),
    (Error::TooManySans, kubeboot_result::TooManySans),
    (Error::InvalidExpirationSeconds, kubeboot_result::InvalidExpirationSeconds),
    (Error::SignerFailed, kubeboot_result::SignerFailed),
    (Error::Malformed, kubeboot_result::Malformed),
    (Error::Verify(VerifyError::new(Reason::Malformed)), kubeboot_result::VerifyMalformed),
    (Error::Verify(VerifyError::new(Reason::Untrusted)), kubeboot_result::VerifyUntrusted),
    (Error::Verify(VerifyError::new(Reason::BadSignature)), kubeboot_result::VerifyBadSignature),
    (Error::Verify(VerifyError::new(Reason::Expired)), kubeboot_result::VerifyExpired),
    (Error::Verify(VerifyError::new(Reason::NotYetValid)), kubeboot_result::VerifyNotYetValid),
    (Error::Verify(VerifyError::new(Reason::KeyMismatch)), kubeboot_result::VerifyKeyMismatch),
    (
        Error::Verify(VerifyError::new(Reason::SubjectMismatch)),
        kubeboot_result::VerifySubjectMismatch,
    ),
    (Error::Verify(VerifyError::new(Reason::WrongUsage)), kubeboot_result::VerifyWrongUsage),
    (Error::Verify(VerifyError::new(Reason::IsCa)), kubeboot_result::VerifyIsCa),
    (
        Error::Verify(VerifyError::new(Reason::UnsupportedAlgorithm)),
        kubeboot_result::VerifyUnsupportedAlgorithm,
    ),
    (
        Error::Policy(PolicyViolation::NotCertificateRequest),
        kubeboot_result::PolicyNotCertificateRequest,
    ),
    (Error::Policy(PolicyViolation::BadSignature), kubeboot_result::PolicyBadSignature),
    (Error::Policy(PolicyViolation::UnsupportedKey), kubeboot_result::PolicyUnsupportedKey),
    (Error::Policy(PolicyViolation::Organization), kubeboot_result::PolicyOrganization),
    (Error::Policy(PolicyViolation::CommonName), kubeboot_result::PolicyCommonName),
    (Error::Policy(PolicyViolation::DnsSanNotAllowed), kubeboot_result::PolicyDnsSanNotAllowed),
    (Error::Policy(PolicyViolation::EmailSanNotAllowed), kubeboot_result::PolicyEmailSanNotAllowed),
    (Error::Policy(PolicyViolation::IpSanNotAllowed), kubeboot_result::PolicyIpSanNotAllowed),
    (Error::Policy(PolicyViolation::UriSanNotAllowed), kubeboot_result::PolicyUriSanNotAllowed),
    (Error::Policy(PolicyViolation::SanRequired), kubeboot_result::PolicySanRequired),
    (Error::Policy(PolicyViolation::ClientUsages), kubeboot_result::PolicyClientUsages),
    (Error::Policy(PolicyViolation::ServingUsages), kubeboot_result::PolicyServingUsages),
    (Error::Policy(PolicyViolation::UnknownUsage), kubeboot_result::PolicyUnknownUsage),
    (Error::Policy(PolicyViolation::DuplicateUsage), kubeboot_result::PolicyDuplicateUsage),
    (Error::Policy(PolicyViolation::UsagesRequired), kubeboot_result::PolicyUsagesRequired),
    (Error::Policy(PolicyViolation::Signer), kubeboot_result::PolicySigner),
    (Error::Policy(PolicyViolation::ExpirationTooShort), kubeboot_result::PolicyExpirationTooShort),
    (Error::InvalidPin, kubeboot_result::InvalidPin),
    (Error::PinMismatch, kubeboot_result::PinMismatch),
    (Error::Unauthorized, kubeboot_result::Unauthorized),
    (Error::Forbidden, kubeboot_result::Forbidden),
    (Error::CsrDenied, kubeboot_result::CsrDenied),
    (Error::CsrFailed, kubeboot_result::CsrFailed),
    (Error::CsrDeleted, kubeboot_result::CsrDeleted),
    (Error::CsrUidChanged, kubeboot_result::CsrUidChanged),
    (Error::CsrIncompatible, kubeboot_result::CsrIncompatible),
    (Error::Timeout, kubeboot_result::Timeout),
    (Error::HttpStatus, kubeboot_result::HttpStatus),
    (Error::MalformedResponse, kubeboot_result::MalformedResponse),
    (Error::TooLarge, kubeboot_result::TooLarge),
    (Error::InvalidState, kubeboot_result::InvalidState),
    (Error::JwsInvalid, kubeboot_result::JwsInvalid),
];

impl kubeboot_result {
    /// The result with numeric `code`, if there is one.
    pub fn from_code(code: u32) -> Option<Self> {
        RESULTS.iter().map(|r| r.0).find(|r| *r as u32 == code)
    }

    fn entry(code: u32) -> Option<&'static (kubeboot_result, &'static str, &'static str)> {
        RESULTS.iter().find(|r| r.0 as u32 == code)
    }
}

impl From<Error> for kubeboot_result {
    fn from(e: Error) -> Self {
        match e {
            Error::BufferTooSmall { .. } => kubeboot_result::InsufficientSize,
            other => {
                kubeboot_result::from_code(other.code()).unwrap_or(kubeboot_result::UnknownError)
            }
        }
    }
}

const UNKNOWN_MESSAGE: &str = "unknown result code";
const UNKNOWN_NAME: &str = "unknown";

/// Write the fixed, human-readable message of `result` into `buf` (not NUL-terminated) and its
/// length into `*out_len`. Verification results (400–409) give their reason name; an unknown
/// code gives `"unknown result code"`.
///
/// Returns `KUBEBOOT_RESULT_INSUFFICIENT_SIZE` (with the needed length in `*out_len`) when `len`
/// is too small, `KUBEBOOT_RESULT_NULL_PARAMETER` when `out_len` is NULL or `buf` is NULL with a
/// non-zero `len`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_message(
    result: u32,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let msg = kubeboot_result::entry(result).map_or(UNKNOWN_MESSAGE, |e| e.2);
        copy_out(buf, out_len, msg.as_bytes())
    }}
}

/// Write the stable kebab-case name of `result` into `buf` (not NUL-terminated): `"ok"`,
/// `"invalid-token"`, the verification reason names for 400–409 (`"expired"`,
/// `"not-yet-valid"`, ...), `"policy-organization"`, ...; `"unknown"` for an unknown code.
/// Buffer rules as for [`kubeboot_result_message`].
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_name(
    result: u32,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let name = kubeboot_result::entry(result).map_or(UNKNOWN_NAME, |e| e.1);
        copy_out(buf, out_len, name.as_bytes())
    }}
}

/// Whether `result` is an issued-certificate verification failure (400–499).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_is_verify_error(result: u32) -> bool {
    ffi_panic_boundary! { false, { (400..500).contains(&result) } }
}

/// Whether `result` is a CSR policy violation (500–599).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_is_policy_error(result: u32) -> bool {
    ffi_panic_boundary! { false, { (500..600).contains(&result) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_error_maps_to_its_code() {
        for (e, r) in CORE_ERRORS {
            assert_eq!(kubeboot_result::from(*e), *r, "{e:?}");
            if !matches!(e, Error::BufferTooSmall { .. }) {
                assert_eq!(e.code(), *r as u32, "{e:?}");
            }
        }
        // Every verification reason and policy violation is covered.
        for reason in Reason::ALL {
            let r = kubeboot_result::from(Error::Verify(VerifyError::new(reason)));
            assert_eq!(r as u32, reason.code());
            let e = RESULTS.iter().find(|x| x.0 == r).unwrap();
            assert_eq!(e.1, reason.name());
        }
        for code in 500..517u32 {
            let r = kubeboot_result::from_code(code).unwrap();
            let (_, _, msg) = RESULTS.iter().find(|x| x.0 == r).unwrap();
            let core = CORE_ERRORS.iter().find(|(_, x)| *x == r).unwrap().0;
            assert_eq!(core, Error::Policy(policy_of(core)));
            assert_eq!(*msg, core.message());
        }
        assert_eq!(kubeboot_result::from_code(517), None);
        // Every engine/discovery code 700–712 exists, with the core message.
        for code in 700..713u32 {
            let r = kubeboot_result::from_code(code).unwrap();
            let core = CORE_ERRORS.iter().find(|(_, x)| *x == r).unwrap().0;
            assert_eq!(core.code(), code);
            let (_, _, msg) = RESULTS.iter().find(|x| x.0 == r).unwrap();
            assert_eq!(*msg, core.message());
        }
        assert_eq!(kubeboot_result::from_code(713), None);
        // Every RESULTS entry with a core code (≥ 100) has a core error.
        for (r, _, _) in RESULTS {
            if *r as u32 >= 100 {
                assert!(CORE_ERRORS.iter().any(|(_, x)| x == r), "{r:?}");
            }
        }
    }

    fn policy_of(e: Error) -> PolicyViolation {
        match e {
            Error::Policy(p) => p,
            _ => panic!("not a policy error"),
        }
    }

    #[test]
    fn codes_and_names_are_unique() {
        for (i, a) in RESULTS.iter().enumerate() {
            for b in &RESULTS[i + 1..] {
                assert_ne!(a.0 as u32, b.0 as u32);
                assert_ne!(a.1, b.1);
            }
        }
    }
}
