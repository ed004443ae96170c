//! One error type for the whole crate, with stable numeric codes shared by the C ABI.
//!
//! Codes are grouped in ranges: 3 buffer, 100–199 tokens, 200–299 keys, 300–399 CSRs,
//! 400–499 issued-certificate validation (one code per [`Reason`]), 500–599 CSR policy,
//! 600–699 CA pins, 700–799 the bootstrap engine and the apiserver's answers. A code, once published, never changes meaning.
//!
//! No error value ever carries secret material: token secrets and key bytes are never copied
//! into an error, so `Debug` and `Display` of an error are always safe to log.

use core::fmt;

/// Result alias used throughout the crate.
pub type Result<T> = core::result::Result<T, Error>;

/// Everything that can go wrong in kubeboot.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The caller's output buffer is too small; `needed` bytes are required. Nothing was written.
    BufferTooSmall {
        /// The number of bytes the output needs.
        needed: usize,
    },

    /// The token does not match `\A[a-z0-9]{6}\.[a-z0-9]{16}\z`.
    InvalidToken,
    /// A token ID does not match `\A[a-z0-9]{6}\z`.
    InvalidTokenId,
    /// A Secret name is not `bootstrap-token-<id>`.
    InvalidSecretName,
    /// An extra group does not match `\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z`.
    InvalidGroup,
    /// A token usage is not one of `signing`, `authentication`.
    InvalidUsage,
    /// An expiration is not RFC 3339, or a TTL is not a valid duration.
    InvalidExpiration,
    /// The token Secret has expired (or its expiration does not parse, which counts as expired).
    TokenExpired,
    /// The token Secret is not usable for authentication (`usage-bootstrap-authentication` is not `"true"`).
    TokenNotForAuthentication,
    /// The token Secret's `token-id` or `token-secret` is missing or does not match.
    TokenMismatch,
    /// A `--token-auth-file` CSV line is malformed.
    InvalidAuthFileLine,
    /// Not enough entropy was supplied (a generator needs more bytes).
    InsufficientEntropy,

    /// A private key could not be parsed (bad PEM, DER, or curve point).
    MalformedKey,
    /// The key type is not supported here (RSA, P-384, Ed25519, ... node keys are refused).
    UnsupportedKey,
    /// A random scalar was out of range; supply fresh entropy.
    BadEntropy,

    /// The node name is not a DNS-1123 subdomain (≤ 253 bytes, lower case).
    InvalidNodeName,
    /// A DNS subject alternative name is not a valid DNS name.
    InvalidDnsName,
    /// An IP address is not a valid IPv4 or IPv6 literal.
    InvalidIpAddress,
    /// More subject alternative names than [`crate::csr::MAX_SANS`].
    TooManySans,
    /// `expirationSeconds` is below the API minimum of 600.
    InvalidExpirationSeconds,
    /// The external signer refused or failed to sign.
    SignerFailed,
    /// A PEM or DER input (CSR, certificate, bundle) is malformed.
    Malformed,

    /// Issued-certificate validation failed; see [`VerifyError`].
    Verify(VerifyError),
    /// A CSR would be rejected by the apiserver, approver or signer; see [`PolicyViolation`].
    Policy(PolicyViolation),

    /// A CA pin is not `sha256:<64 hex>`.
    InvalidPin,
    /// None of the CA public keys matched a pin.
    PinMismatch,

    /// 401 from the apiserver: the bootstrap token (or client certificate) was not accepted —
    /// invalid, expired, deleted, or not for authentication.
    Unauthorized,
    /// 403 from the apiserver: the identity may not create CSRs (RBAC binding missing).
    Forbidden,
    /// The CSR was denied (`Denied` condition).
    CsrDenied,
    /// The signer failed the CSR (`Failed` condition).
    CsrFailed,
    /// The CSR was deleted while we waited for it.
    CsrDeleted,
    /// The CSR was replaced by another object of the same name (UID changed).
    CsrUidChanged,
    /// An existing CSR of the same name was not made by us for this request (409 AlreadyExists).
    CsrIncompatible,
    /// No certificate was issued before the wait deadline.
    Timeout,
    /// The apiserver answered with an unexpected HTTP status.
    HttpStatus,
    /// The apiserver's answer is not the JSON we expect.
    MalformedResponse,
    /// A response, event or certificate exceeds the engine's buffers.
    TooLarge,
    /// The engine was driven out of order (e.g. a response with no request outstanding).
    InvalidState,
    /// kubeadm token discovery: the `cluster-info` ConfigMap could not be authenticated with the
    /// token — its detached JWS (HS256 keyed by the token secret) does not verify (wrong secret
    /// or tampered content), or the copy fetched over verified TLS differs from the signed one.
    JwsInvalid,
}

impl Error {
    /// The stable numeric code of this error (also the C ABI's `kubeboot_result`).
    pub const fn code(&self) -> u32 {
        match self {
            Error::BufferTooSmall { .. } => 3,
            Error::InvalidToken => 100,
            Error::InvalidTokenId => 101,
            Error::InvalidSecretName => 102,
            Error::InvalidGroup => 103,
            Error::InvalidUsage => 104,
            Error::InvalidExpiration => 105,
            Error::TokenExpired => 106,
            Error::TokenNotForAuthentication => 107,
            Error::TokenMismatch => 108,
            Error::InvalidAuthFileLine => 109,
            Error::InsufficientEntropy => 110,
            Error::MalformedKey => 200,
            Error::UnsupportedKey => 201,
            Error::BadEntropy => 202,
            Error::InvalidNodeName => 300,
            Error::InvalidDnsName => 301,
            Error::InvalidIpAddress => 302,
            Error::TooManySans => 303,
            Error::InvalidExpirationSeconds => 304,
            Error::SignerFailed => 305,
            Error::Malformed => 306,
            Error::Verify(v) => v.reason.code(),
            Error::Policy(p) => p.code(),
            Error::InvalidPin => 600,
            Error::PinMismatch => 601,
            Error::Unauthorized => 700,
            Error::Forbidden => 701,
            Error::CsrDenied => 702,
            Error::CsrFailed => 703,
            Error::CsrDeleted => 704,
            Error::CsrUidChanged => 705,
            Error::CsrIncompatible => 706,
            Error::Timeout => 707,
            Error::HttpStatus => 708,
            Error::MalformedResponse => 709,
            Error::TooLarge => 710,
            Error::InvalidState => 711,
            Error::JwsInvalid => 712,
        }
    }

    /// A short, fixed, human-readable description (no detail, no secrets).
    pub const fn message(&self) -> &'static str {
        match self {
            Error::BufferTooSmall { .. } => "output buffer too small",
            Error::InvalidToken => "token does not match [a-z0-9]{6}.[a-z0-9]{16}",
            Error::InvalidTokenId => "token id does not match [a-z0-9]{6}",
            Error::InvalidSecretName => "secret name is not bootstrap-token-<id>",
            Error::InvalidGroup => {
                "group does not match system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]"
            }
            Error::InvalidUsage => "unknown token usage (allowed: signing, authentication)",
            Error::InvalidExpiration => "expiration is not an RFC 3339 time or valid duration",
            Error::TokenExpired => "token has expired",
            Error::TokenNotForAuthentication => {
                "token secret lacks usage-bootstrap-authentication: \"true\""
            }
            Error::TokenMismatch => "token secret's token-id/token-secret missing or mismatched",
            Error::InvalidAuthFileLine => "malformed token auth file line",
            Error::InsufficientEntropy => "not enough entropy supplied",
            Error::MalformedKey => "malformed private key",
            Error::UnsupportedKey => "unsupported key type (only ECDSA P-256 node keys)",
            Error::BadEntropy => "entropy produced an invalid key; supply fresh entropy",
            Error::InvalidNodeName => "node name is not a lower-case DNS-1123 subdomain",
            Error::InvalidDnsName => "invalid DNS name",
            Error::InvalidIpAddress => "invalid IP address",
            Error::TooManySans => "too many subject alternative names",
            Error::InvalidExpirationSeconds => {
                "expirationSeconds may not be less than 600 seconds (10 minutes)"
            }
            Error::SignerFailed => "signer failed",
            Error::Malformed => "malformed PEM/DER input",
            Error::Verify(v) => v.reason.name(),
            Error::Policy(p) => p.message(),
            Error::InvalidPin => "invalid hash, expected \"sha256:<64 hex digits>\"",
            Error::PinMismatch => "none of the CA public keys are pinned",
            Error::Unauthorized => {
                "unauthorized: the bootstrap token is invalid, expired or deleted (or the client certificate is not accepted)"
            }
            Error::Forbidden => {
                "forbidden: bind system:node-bootstrapper to the token's group (e.g. kubectl create clusterrolebinding create-csrs-for-bootstrapping --clusterrole=system:node-bootstrapper --group=system:bootstrappers)"
            }
            Error::CsrDenied => "certificate signing request is denied",
            Error::CsrFailed => "certificate signing request failed",
            Error::CsrDeleted => "certificate signing request was deleted",
            Error::CsrUidChanged => "certificate signing request changed UIDs",
            Error::CsrIncompatible => "retrieved csr is not compatible",
            Error::Timeout => "timed out waiting for the certificate",
            Error::HttpStatus => "unexpected HTTP status from the apiserver",
            Error::MalformedResponse => "malformed response from the apiserver",
            Error::TooLarge => "response too large for the engine's buffers",
            Error::InvalidState => "engine driven out of order",
            Error::JwsInvalid => "failed to verify JWS signature of the cluster-info ConfigMap",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            Error::Verify(v) => fmt::Display::fmt(v, f),
            other => f.write_str(other.message()),
        }
    }
}

impl core::error::Error for Error {}

impl From<VerifyError> for Error {
    fn from(v: VerifyError) -> Self {
        Error::Verify(v)
    }
}

impl From<PolicyViolation> for Error {
    fn from(p: PolicyViolation) -> Self {
        Error::Policy(p)
    }
}

/// Why an issued certificate was rejected. The names are stable: the C ABI and the CLI use them.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Garbage, truncated, oversized or otherwise undecodable input.
    Malformed,
    /// No signature path from the leaf to any CA of the bundle.
    Untrusted,
    /// A signature on the path does not verify.
    BadSignature,
    /// A certificate on the path has expired at `now`.
    Expired,
    /// A certificate on the path is not yet valid at `now`.
    NotYetValid,
    /// The leaf's public key is not ours.
    KeyMismatch,
    /// The subject (or serving SANs) differ from what was requested.
    SubjectMismatch,
    /// The extended key usage / key usage do not allow the profile's use.
    WrongUsage,
    /// The leaf is a CA certificate.
    IsCa,
    /// A signature or key algorithm we do not support.
    UnsupportedAlgorithm,
}

impl Reason {
    /// All reasons, in code order.
    pub const ALL: [Reason; 10] = [
        Reason::Malformed,
        Reason::Untrusted,
        Reason::BadSignature,
        Reason::Expired,
        Reason::NotYetValid,
        Reason::KeyMismatch,
        Reason::SubjectMismatch,
        Reason::WrongUsage,
        Reason::IsCa,
        Reason::UnsupportedAlgorithm,
    ];

    /// The stable kebab-case name (`malformed`, `untrusted`, `bad-signature`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Reason::Malformed => "malformed",
            Reason::Untrusted => "untrusted",
            Reason::BadSignature => "bad-signature",
            Reason::Expired => "expired",
            Reason::NotYetValid => "not-yet-valid",
            Reason::KeyMismatch => "key-mismatch",
            Reason::SubjectMismatch => "subject-mismatch",
            Reason::WrongUsage => "wrong-usage",
            Reason::IsCa => "is-ca",
            Reason::UnsupportedAlgorithm => "unsupported-algorithm",
        }
    }

    /// The stable numeric code (400–409).
    pub const fn code(self) -> u32 {
        400 + self as u32
    }
}

/// Context attached to a [`VerifyError`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// No further context.
    None,
    /// The validity window of the offending certificate and the time it was checked at
    /// (unix seconds).
    Validity {
        /// The certificate's notBefore.
        not_before: i64,
        /// The certificate's notAfter.
        not_after: i64,
        /// The time of the check.
        now: i64,
    },
    /// The offending field or check, e.g. `"subject.O"`, `"extendedKeyUsage"`, `"san.dns"`.
    Field(&'static str),
}

/// A named validation failure with context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The stable reason.
    pub reason: Reason,
    /// Context: times for expired/not-yet-valid, the field for mismatches.
    pub detail: Detail,
}

impl VerifyError {
    /// A failure with no further context.
    pub const fn new(reason: Reason) -> Self {
        VerifyError { reason, detail: Detail::None }
    }

    /// A failure naming the offending field.
    pub const fn field(reason: Reason, field: &'static str) -> Self {
        VerifyError { reason, detail: Detail::Field(field) }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason.name())?;
        match self.detail {
            Detail::None => Ok(()),
            Detail::Field(field) => write!(f, ": {field}"),
            Detail::Validity { not_before, not_after, now } => write!(
                f,
                ": valid from {not_before} to {not_after} (unix seconds), checked at {now}"
            ),
        }
    }
}

/// Why a CSR would be refused by the apiserver, kube-controller-manager's approver or signer.
///
/// Messages follow upstream's wording (`pkg/apis/certificates/helpers.go`, `validation.go`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyViolation {
    /// The request is not a single parseable `CERTIFICATE REQUEST` PEM block.
    NotCertificateRequest,
    /// The CSR's self-signature does not verify.
    BadSignature,
    /// The CSR's key type is not acceptable.
    UnsupportedKey,
    /// `subject.O` is not exactly `["system:nodes"]`.
    Organization,
    /// `subject.CN` does not begin with `system:node:`.
    CommonName,
    /// A DNS SAN on a client CSR.
    DnsSanNotAllowed,
    /// An email SAN.
    EmailSanNotAllowed,
    /// An IP SAN on a client CSR.
    IpSanNotAllowed,
    /// A URI SAN.
    UriSanNotAllowed,
    /// A serving CSR with neither a DNS nor an IP SAN.
    SanRequired,
    /// The usage set is not allowed for a kubelet client certificate.
    ClientUsages,
    /// The usage set is not allowed for a kubelet serving certificate.
    ServingUsages,
    /// A usage string outside the API's 23-item enum.
    UnknownUsage,
    /// The same usage twice.
    DuplicateUsage,
    /// No usages at all.
    UsagesRequired,
    /// The signer name is not a kubelet signer (or is malformed).
    Signer,
    /// `expirationSeconds` < 600.
    ExpirationTooShort,
}

impl PolicyViolation {
    /// The stable numeric code (500–599).
    pub const fn code(self) -> u32 {
        500 + self as u32
    }

    /// Upstream's message for this violation.
    pub const fn message(self) -> &'static str {
        match self {
            PolicyViolation::NotCertificateRequest => "PEM block type must be CERTIFICATE REQUEST",
            PolicyViolation::BadSignature => "CSR signature does not verify",
            PolicyViolation::UnsupportedKey => "unsupported CSR key type",
            PolicyViolation::Organization => "subject organization is not system:nodes",
            PolicyViolation::CommonName => "subject common name does not begin with system:node:",
            PolicyViolation::DnsSanNotAllowed => "DNS subjectAltNames are not allowed",
            PolicyViolation::EmailSanNotAllowed => "Email subjectAltNames are not allowed",
            PolicyViolation::IpSanNotAllowed => "IP subjectAltNames are not allowed",
            PolicyViolation::UriSanNotAllowed => "URI subjectAltNames are not allowed",
            PolicyViolation::SanRequired => "DNS or IP subjectAltName is required",
            PolicyViolation::ClientUsages => {
                "usages did not match [client auth digital signature key encipherment]"
            }
            PolicyViolation::ServingUsages => {
                "usages did not match [digital signature key encipherment server auth]"
            }
            PolicyViolation::UnknownUsage => "unsupported usage",
            PolicyViolation::DuplicateUsage => "duplicate usage",
            PolicyViolation::UsagesRequired => "usages: Required value",
            PolicyViolation::Signer => "signerName is not a kubelet signer",
            PolicyViolation::ExpirationTooShort => {
                "may not specify a duration less than 600 seconds (10 minutes)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_codes_and_names_are_stable() {
        let names: [&str; 10] = [
            "malformed",
            "untrusted",
            "bad-signature",
            "expired",
            "not-yet-valid",
            "key-mismatch",
            "subject-mismatch",
            "wrong-usage",
            "is-ca",
            "unsupported-algorithm",
        ];
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(r.code(), 400 + i as u32);
            assert_eq!(r.name(), names[i]);
        }
    }

    #[test]
    fn codes_are_unique() {
        let samples = [
            Error::BufferTooSmall { needed: 1 },
            Error::InvalidToken,
            Error::InvalidTokenId,
            Error::InvalidSecretName,
            Error::InvalidGroup,
            Error::InvalidUsage,
            Error::InvalidExpiration,
            Error::TokenExpired,
            Error::TokenNotForAuthentication,
            Error::TokenMismatch,
            Error::InvalidAuthFileLine,
            Error::InsufficientEntropy,
            Error::MalformedKey,
            Error::UnsupportedKey,
            Error::BadEntropy,
            Error::InvalidNodeName,
            Error::InvalidDnsName,
            Error::InvalidIpAddress,
            Error::TooManySans,
            Error::InvalidExpirationSeconds,
            Error::SignerFailed,
            Error::Malformed,
            Error::Verify(VerifyError::new(Reason::Expired)),
            Error::Policy(PolicyViolation::Organization),
            Error::Policy(PolicyViolation::ExpirationTooShort),
            Error::InvalidPin,
            Error::PinMismatch,
            Error::Unauthorized,
            Error::Forbidden,
            Error::CsrDenied,
            Error::CsrFailed,
            Error::CsrDeleted,
            Error::CsrUidChanged,
            Error::CsrIncompatible,
            Error::Timeout,
            Error::HttpStatus,
            Error::MalformedResponse,
            Error::TooLarge,
            Error::InvalidState,
            Error::JwsInvalid,
        ];
        for (i, a) in samples.iter().enumerate() {
            for b in &samples[i + 1..] {
                assert_ne!(a.code(), b.code(), "{a:?} vs {b:?}");
            }
        }
    }
}
