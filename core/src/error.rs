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
    /// A key reference or device name is not one kubeboot can use: not a key PEM, a `tpm:`
    /// name or an RFC 7512 `pkcs11:` URI, or a URI with an unknown or repeated attribute or a
    /// PIN written into it (see [`crate::keyref`]).
    InvalidKeyReference,
    /// The device holding the node key failed: it is unreachable (TPM stopped, module missing),
    /// refuses the PIN, has no such object, cannot load the key (a TPM key blob of another TPM)
    /// or refused to make, use or destroy it. The detail names the device.
    KeyDevice,

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
    /// A serving certificate was asked for with DNS names only: since v1.31 the kubelet requests
    /// one only with at least one IP address (`AllowDNSOnlyNodeCSR`, deprecated, off by default;
    /// `pkg/kubelet/certificate/kubelet.go` `newGetTemplateFn`), and so does the agent.
    ServingNeedsIp,
    /// A DNS name pattern of the serving approver is not a DNS name with `{node}` in it exactly
    /// once, optionally after one leading `*.` label (see [`crate::policy::serving::DnsPattern`]).
    InvalidDnsPattern,
    /// A key policy of the serving approver is not a comma-separated list of `ecdsa-p256`,
    /// `ecdsa-p384` and `rsa-<bits>` (1024 to 4096 bits), each at most once (see
    /// [`crate::policy::serving::KeyPolicy`]).
    InvalidKeyPolicy,

    /// Issued-certificate validation failed; see [`VerifyError`].
    Verify(VerifyError),
    /// A CSR would be rejected by the apiserver, approver or signer; see [`PolicyViolation`].
    Policy(PolicyViolation),
    /// A file of the node (cert dir, kubeconfig, key cache, ...) could not be read or written;
    /// see [`StoreErrorKind`].
    Store(StoreErrorKind),

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
    /// One of the capacities the caller chose for an agent is too small for what it must hold
    /// (or the memory given is shorter than they take): found when the agent is made or started,
    /// before anything runs. A [`Code::TooLarge`] that names the capacity.
    Capacity(Capacity),
    /// The engine was driven out of order (e.g. a response with no request outstanding).
    InvalidState,
    /// kubeadm token discovery: the `cluster-info` ConfigMap could not be authenticated with the
    /// token — its detached JWS (HS256 keyed by the token secret) does not verify (wrong secret
    /// or tampered content), or the copy fetched over verified TLS differs from the signed one.
    JwsInvalid,

    /// The node's credentials are unusable and nothing to bootstrap with was configured (no
    /// bootstrap kubeconfig, no discovery).
    NoBootstrapCredentials,
    /// No CA to trust the apiserver with, or to validate a certificate against (the kubeconfig
    /// has none and no CA bundle was given); system roots are never used for a cluster.
    NoCa,
    /// The agent's configuration is unusable (a missing node name, a path that is not absolute
    /// or too long, an unknown option value).
    InvalidConfig,
    /// A new CA bundle for the apiserver (from `cluster-info` or a ClusterTrustBundle) was not
    /// proven by the apiserver: a TLS handshake that trusts only the new bundle failed, so the
    /// bundle does not contain the CA the connection is trusted with. The CA file is unchanged.
    CaBundleUnproven,
    /// The agent's clock cannot be trusted to judge a certificate: it is before this build's
    /// date or the current certificate's notBefore, or the apiserver still takes a certificate
    /// the clock calls expired. The node keeps its identity and waits for its clock.
    ClockUntrusted,

    /// A duration a user typed is not one ([`crate::grammar::duration`]).
    InvalidDuration,
    /// An address to listen on a user typed is not one ([`crate::grammar::bind_address`]).
    InvalidAddress,
}

impl Error {
    /// The catalogue entry of this error ([`Code`]): its stable number, name and message.
    pub const fn kind(&self) -> Code {
        match self {
            Error::BufferTooSmall { .. } => Code::InsufficientSize,
            Error::InvalidToken => Code::InvalidToken,
            Error::InvalidTokenId => Code::InvalidTokenId,
            Error::InvalidSecretName => Code::InvalidSecretName,
            Error::InvalidGroup => Code::InvalidGroup,
            Error::InvalidUsage => Code::InvalidUsage,
            Error::InvalidExpiration => Code::InvalidExpiration,
            Error::TokenExpired => Code::TokenExpired,
            Error::TokenNotForAuthentication => Code::TokenNotForAuthentication,
            Error::TokenMismatch => Code::TokenMismatch,
            Error::InvalidAuthFileLine => Code::InvalidAuthFileLine,
            Error::InsufficientEntropy => Code::InsufficientEntropy,
            Error::MalformedKey => Code::MalformedKey,
            Error::UnsupportedKey => Code::UnsupportedKey,
            Error::BadEntropy => Code::BadEntropy,
            Error::InvalidKeyReference => Code::InvalidKeyReference,
            Error::KeyDevice => Code::KeyDevice,
            Error::InvalidNodeName => Code::InvalidNodeName,
            Error::InvalidDnsName => Code::InvalidDnsName,
            Error::InvalidIpAddress => Code::InvalidIpAddress,
            Error::TooManySans => Code::TooManySans,
            Error::InvalidExpirationSeconds => Code::InvalidExpirationSeconds,
            Error::SignerFailed => Code::SignerFailed,
            Error::ServingNeedsIp => Code::ServingNeedsIp,
            Error::InvalidDnsPattern => Code::InvalidDnsPattern,
            Error::InvalidKeyPolicy => Code::InvalidKeyPolicy,
            Error::Malformed => Code::Malformed,
            Error::Verify(v) => v.reason.kind(),
            Error::Policy(p) => p.kind(),
            Error::Store(k) => k.code(),
            Error::InvalidPin => Code::InvalidPin,
            Error::PinMismatch => Code::PinMismatch,
            Error::Unauthorized => Code::Unauthorized,
            Error::Forbidden => Code::Forbidden,
            Error::CsrDenied => Code::CsrDenied,
            Error::CsrFailed => Code::CsrFailed,
            Error::CsrDeleted => Code::CsrDeleted,
            Error::CsrUidChanged => Code::CsrUidChanged,
            Error::CsrIncompatible => Code::CsrIncompatible,
            Error::Timeout => Code::Timeout,
            Error::HttpStatus => Code::HttpStatus,
            Error::MalformedResponse => Code::MalformedResponse,
            Error::TooLarge | Error::Capacity(_) => Code::TooLarge,
            Error::InvalidState => Code::InvalidState,
            Error::JwsInvalid => Code::JwsInvalid,
            Error::NoBootstrapCredentials => Code::NoBootstrapCredentials,
            Error::NoCa => Code::NoCa,
            Error::InvalidConfig => Code::InvalidConfig,
            Error::CaBundleUnproven => Code::CaBundleUnproven,
            Error::ClockUntrusted => Code::ClockUntrusted,
            Error::InvalidDuration => Code::InvalidDuration,
            Error::InvalidAddress => Code::InvalidAddress,
        }
    }

    /// The stable numeric code of this error (also the C ABI's `kubeboot_result`).
    pub const fn code(&self) -> u32 {
        self.kind() as u32
    }

    /// The stable kebab-case name (`invalid-token`, `expired`, `csr-denied`, ...).
    pub const fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// A short, fixed, human-readable description (no detail, no secrets).
    pub const fn message(&self) -> &'static str {
        self.kind().message()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            Error::Verify(v) => fmt::Display::fmt(v, f),
            Error::Capacity(c) => write!(
                f,
                "{}: the agent's {} capacity is too small for what it must hold",
                self.message(),
                c.name()
            ),
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

/// One of an agent's capacities (`kubeboot::agent::Capacities`), as [`Error::Capacity`] names it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capacity {
    /// The work buffer (responses, watch events).
    Response,
    /// Each CA bundle and chain.
    Pem,
    /// The client key or its reference.
    Key,
    /// What one file step writes.
    File,
    /// Each path.
    Path,
    /// The serving certificate's DNS names.
    ServingDns,
    /// The memory block as a whole (shorter than the capacities take).
    Memory,
}

impl Capacity {
    /// The stable name (the field of `Capacities`: `response`, `pem`, ..., and `memory`).
    pub const fn name(self) -> &'static str {
        match self {
            Capacity::Response => "response",
            Capacity::Pem => "pem",
            Capacity::Key => "key",
            Capacity::File => "file",
            Capacity::Path => "path",
            Capacity::ServingDns => "serving_dns",
            Capacity::Memory => "memory",
        }
    }

    /// The stable number (the C ABI's `KUBEBOOT_CAPACITY_*`).
    pub const fn number(self) -> u32 {
        self as u32
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

    /// The catalogue entry.
    pub const fn kind(self) -> Code {
        match self {
            Reason::Malformed => Code::VerifyMalformed,
            Reason::Untrusted => Code::VerifyUntrusted,
            Reason::BadSignature => Code::VerifyBadSignature,
            Reason::Expired => Code::VerifyExpired,
            Reason::NotYetValid => Code::VerifyNotYetValid,
            Reason::KeyMismatch => Code::VerifyKeyMismatch,
            Reason::SubjectMismatch => Code::VerifySubjectMismatch,
            Reason::WrongUsage => Code::VerifyWrongUsage,
            Reason::IsCa => Code::VerifyIsCa,
            Reason::UnsupportedAlgorithm => Code::VerifyUnsupportedAlgorithm,
        }
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
    /// The serving approver: the requester is not a node (username `system:node:<name>` with a
    /// valid node name, in group `system:nodes`).
    Requester,
    /// The serving approver: the subject's CN is not `system:node:<name>` of the requesting node
    /// (a CSR for node B sent by node A).
    NodeMismatch,
    /// The serving approver: `spec.request` holds more than the one `CERTIFICATE REQUEST` block
    /// (a second block, or text around it).
    ExtraPemData,
    /// The serving approver: the key type or size is not one the approver's key policy allows.
    KeyNotAllowed,
    /// The serving approver: `expirationSeconds` above the approver's maximum.
    ExpirationTooLong,
    /// The serving approver: a subjectAltName of another form than DNS or IP (otherName,
    /// directoryName, registeredID, ...).
    OtherSanNotAllowed,
    /// The serving approver: an IP subjectAltName is not one of the Node's `InternalIP` or
    /// `ExternalIP` addresses.
    IpSanNotNodeAddress,
    /// The serving approver: a DNS subjectAltName is neither one of the Node's `Hostname`,
    /// `InternalDNS` or `ExternalDNS` addresses nor matched by a pattern for that node.
    DnsSanNotNodeAddress,
    /// The serving approver: the Node has no addresses, so no SAN can be one of them.
    NodeNoAddresses,
    /// The serving approver: there is no Node object of the requester's name (yet).
    NodeNotFound,
    /// The serving approver: a SubjectAccessReview says the requester may not create
    /// CertificateSigningRequests.
    NotAuthorized,
}

impl PolicyViolation {
    /// Every violation, in code order.
    pub const ALL: [PolicyViolation; 28] = [
        PolicyViolation::NotCertificateRequest,
        PolicyViolation::BadSignature,
        PolicyViolation::UnsupportedKey,
        PolicyViolation::Organization,
        PolicyViolation::CommonName,
        PolicyViolation::DnsSanNotAllowed,
        PolicyViolation::EmailSanNotAllowed,
        PolicyViolation::IpSanNotAllowed,
        PolicyViolation::UriSanNotAllowed,
        PolicyViolation::SanRequired,
        PolicyViolation::ClientUsages,
        PolicyViolation::ServingUsages,
        PolicyViolation::UnknownUsage,
        PolicyViolation::DuplicateUsage,
        PolicyViolation::UsagesRequired,
        PolicyViolation::Signer,
        PolicyViolation::ExpirationTooShort,
        PolicyViolation::Requester,
        PolicyViolation::NodeMismatch,
        PolicyViolation::ExtraPemData,
        PolicyViolation::KeyNotAllowed,
        PolicyViolation::ExpirationTooLong,
        PolicyViolation::OtherSanNotAllowed,
        PolicyViolation::IpSanNotNodeAddress,
        PolicyViolation::DnsSanNotNodeAddress,
        PolicyViolation::NodeNoAddresses,
        PolicyViolation::NodeNotFound,
        PolicyViolation::NotAuthorized,
    ];

    /// The stable numeric code (500–599).
    pub const fn code(self) -> u32 {
        500 + self as u32
    }

    /// The stable kebab-case name (`policy-ip-san-not-node-address`, ...).
    pub const fn name(self) -> &'static str {
        self.kind().name()
    }

    /// The catalogue entry.
    pub const fn kind(self) -> Code {
        match self {
            PolicyViolation::NotCertificateRequest => Code::PolicyNotCertificateRequest,
            PolicyViolation::BadSignature => Code::PolicyBadSignature,
            PolicyViolation::UnsupportedKey => Code::PolicyUnsupportedKey,
            PolicyViolation::Organization => Code::PolicyOrganization,
            PolicyViolation::CommonName => Code::PolicyCommonName,
            PolicyViolation::DnsSanNotAllowed => Code::PolicyDnsSanNotAllowed,
            PolicyViolation::EmailSanNotAllowed => Code::PolicyEmailSanNotAllowed,
            PolicyViolation::IpSanNotAllowed => Code::PolicyIpSanNotAllowed,
            PolicyViolation::UriSanNotAllowed => Code::PolicyUriSanNotAllowed,
            PolicyViolation::SanRequired => Code::PolicySanRequired,
            PolicyViolation::ClientUsages => Code::PolicyClientUsages,
            PolicyViolation::ServingUsages => Code::PolicyServingUsages,
            PolicyViolation::UnknownUsage => Code::PolicyUnknownUsage,
            PolicyViolation::DuplicateUsage => Code::PolicyDuplicateUsage,
            PolicyViolation::UsagesRequired => Code::PolicyUsagesRequired,
            PolicyViolation::Signer => Code::PolicySigner,
            PolicyViolation::ExpirationTooShort => Code::PolicyExpirationTooShort,
            PolicyViolation::Requester => Code::PolicyRequester,
            PolicyViolation::NodeMismatch => Code::PolicyNodeMismatch,
            PolicyViolation::ExtraPemData => Code::PolicyExtraPemData,
            PolicyViolation::KeyNotAllowed => Code::PolicyKeyNotAllowed,
            PolicyViolation::ExpirationTooLong => Code::PolicyExpirationTooLong,
            PolicyViolation::OtherSanNotAllowed => Code::PolicyOtherSanNotAllowed,
            PolicyViolation::IpSanNotNodeAddress => Code::PolicyIpSanNotNodeAddress,
            PolicyViolation::DnsSanNotNodeAddress => Code::PolicyDnsSanNotNodeAddress,
            PolicyViolation::NodeNoAddresses => Code::PolicyNodeNoAddresses,
            PolicyViolation::NodeNotFound => Code::PolicyNodeNotFound,
            PolicyViolation::NotAuthorized => Code::PolicyNotAuthorized,
        }
    }

    /// Upstream's message for this violation.
    pub const fn message(self) -> &'static str {
        self.kind().message()
    }
}

/// What went wrong with a file of the node: the certificate store (cert dir), the kubeconfig, the
/// key cache, a CA bundle. The std file store (`store`, feature `std`) reports these with the path and
/// the OS error; a front-end reports them to the agent as the outcome of a file step.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreErrorKind {
    /// A filesystem call failed (permissions, I/O error, no space).
    Io,
    /// Neither `-current.pem`, the explicit files nor the legacy `.crt`/`.key` exist.
    NoCertKeyFiles,
    /// The certificate input holds no usable `CERTIFICATE` block.
    NoCertificates,
    /// A `CERTIFICATE` block is not an X.509 certificate we can read.
    MalformedCertificate,
    /// No private-key block, or it does not parse.
    MalformedKey,
    /// The private key is neither ECDSA P-256 nor RSA.
    UnsupportedKey,
    /// The private key does not belong to the leaf certificate.
    KeyMismatch,
    /// `<prefix>-current.pem` exists and is not a symlink.
    CurrentNotSymlink,
    /// `<prefix>-updated.pem` exists and is not a symlink.
    UpdatedNotSymlink,
    /// A file read back after writing differs from what was written.
    ReadBackMismatch,
    /// The store prefix is empty or contains `/`, NUL, or starts with `.`.
    InvalidPrefix,
    /// A timestamp is out of range or not `YYYY-MM-DD-HH-MM-SS`.
    InvalidTimestamp,
    /// Generating a key failed (the entropy callback failed or gave bad entropy).
    KeyGeneration,
    /// The file (or its directory) does not exist.
    NotFound,
    /// The file is larger than the agent reads (see the read request's limit).
    FileTooLarge,
    /// The operating system refused access to the file or directory.
    PermissionDenied,
}

impl StoreErrorKind {
    /// Every kind, in code order.
    pub const ALL: [StoreErrorKind; 16] = [
        StoreErrorKind::Io,
        StoreErrorKind::NoCertKeyFiles,
        StoreErrorKind::NoCertificates,
        StoreErrorKind::MalformedCertificate,
        StoreErrorKind::MalformedKey,
        StoreErrorKind::UnsupportedKey,
        StoreErrorKind::KeyMismatch,
        StoreErrorKind::CurrentNotSymlink,
        StoreErrorKind::UpdatedNotSymlink,
        StoreErrorKind::ReadBackMismatch,
        StoreErrorKind::InvalidPrefix,
        StoreErrorKind::InvalidTimestamp,
        StoreErrorKind::KeyGeneration,
        StoreErrorKind::NotFound,
        StoreErrorKind::FileTooLarge,
        StoreErrorKind::PermissionDenied,
    ];

    /// The catalogue entry (codes 10–25).
    pub const fn code(self) -> Code {
        match self {
            StoreErrorKind::Io => Code::StoreIo,
            StoreErrorKind::NoCertKeyFiles => Code::StoreNoCertKeyFiles,
            StoreErrorKind::NoCertificates => Code::StoreNoCertificates,
            StoreErrorKind::MalformedCertificate => Code::StoreMalformedCertificate,
            StoreErrorKind::MalformedKey => Code::StoreMalformedKey,
            StoreErrorKind::UnsupportedKey => Code::StoreUnsupportedKey,
            StoreErrorKind::KeyMismatch => Code::StoreKeyMismatch,
            StoreErrorKind::CurrentNotSymlink => Code::StoreCurrentNotSymlink,
            StoreErrorKind::UpdatedNotSymlink => Code::StoreUpdatedNotSymlink,
            StoreErrorKind::ReadBackMismatch => Code::StoreReadBackMismatch,
            StoreErrorKind::InvalidPrefix => Code::StoreInvalidPrefix,
            StoreErrorKind::InvalidTimestamp => Code::StoreInvalidTimestamp,
            StoreErrorKind::KeyGeneration => Code::StoreKeyGeneration,
            StoreErrorKind::NotFound => Code::StoreNotFound,
            StoreErrorKind::FileTooLarge => Code::StoreFileTooLarge,
            StoreErrorKind::PermissionDenied => Code::StorePermissionDenied,
        }
    }

    /// The kind with catalogue code `code`, if any.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.code() as u32 == code)
    }

    /// A short fixed description.
    pub const fn message(self) -> &'static str {
        self.code().message()
    }
}

impl From<StoreErrorKind> for Error {
    fn from(k: StoreErrorKind) -> Self {
        Error::Store(k)
    }
}

/// The one catalogue of results: every code with its stable kebab-case name and fixed message.
/// It generates [`Code`] (its discriminants are the codes), [`Code::name`], [`Code::message`] and
/// [`CATALOGUE`]; the C ABI's `kubeboot_result` enum and `kubeboot_result_name` /
/// `kubeboot_result_message` are generated from it too (`ffi/src/result.rs`, checked against
/// this table by the FFI's tests).
macro_rules! catalogue {
    ($( $code:literal $ident:ident $name:literal $msg:literal; )*) => {
        /// Every result code of kubeboot, as numbered in the C ABI (`KUBEBOOT_RESULT_*`). Ranges:
        /// 0–9 ABI-level, 10–25 files and the certificate store, 100s tokens, 200s keys, 300s CSR
        /// input, 400s issued-certificate validation ([`Reason`]), 500s CSR policy
        /// ([`PolicyViolation`]), 600s CA pins, 700s the engine and the apiserver's answers, 800s
        /// the node agent, 900s what users type. A code, once published, never changes meaning.
        #[non_exhaustive]
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        // The messages are plain text (`bootstrap-token-<id>`, `[IPv6]:port`), not Markdown.
        #[allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]
        pub enum Code {
            $( #[doc = $msg] $ident = $code, )*
        }

        /// `(code, name, message)` for every [`Code`], in code order.
        pub const CATALOGUE: &[(Code, &str, &str)] = &[ $( (Code::$ident, $name, $msg), )* ];

        impl Code {
            /// The stable kebab-case name.
            pub const fn name(self) -> &'static str {
                match self { $( Code::$ident => $name, )* }
            }

            /// The fixed message (no detail, no secrets).
            pub const fn message(self) -> &'static str {
                match self { $( Code::$ident => $msg, )* }
            }

            /// The code with number `code`, if there is one.
            pub const fn from_u32(code: u32) -> Option<Code> {
                match code { $( $code => Some(Code::$ident), )* _ => None }
            }

            /// The Rust identifier of the code (`InvalidToken`), for generated bindings.
            pub const fn ident(self) -> &'static str {
                match self { $( Code::$ident => stringify!($ident), )* }
            }
        }
    };
}

catalogue! {
    0 Ok "ok" "success";
    1 NullParameter "null-parameter" "a required pointer argument was NULL";
    2 Panic "panic" "internal panic (a bug in kubeboot)";
    3 InsufficientSize "insufficient-size" "output buffer too small";
    4 InvalidUtf8 "invalid-utf8" "text argument is not valid UTF-8";
    5 InvalidParameter "invalid-parameter" "argument out of range";
    6 UnknownError "unknown-error" "unknown error";
    7 PoolExhausted "pool-exhausted" "no free handle: every slot of the static pool is in use (free one; builds with std allocate instead)";
    10 StoreIo "store-io" "filesystem error";
    11 StoreNoCertKeyFiles "store-no-cert-key-files" "no cert/key files read";
    12 StoreNoCertificates "store-no-certificates" "no certificates found in certificate input";
    13 StoreMalformedCertificate "store-malformed-certificate" "malformed certificate";
    14 StoreMalformedKey "store-malformed-key" "no parseable private key";
    15 StoreUnsupportedKey "store-unsupported-key" "unsupported private key type";
    16 StoreKeyMismatch "store-key-mismatch" "private key does not match public key in certificate";
    17 StoreCurrentNotSymlink "store-current-not-symlink" "expected a symlink but it is a file";
    18 StoreUpdatedNotSymlink "store-updated-not-symlink" "expected a symlink but it is a file";
    19 StoreReadBackMismatch "store-read-back-mismatch" "file read back differs from what was written";
    20 StoreInvalidPrefix "store-invalid-prefix" "invalid store prefix";
    21 StoreInvalidTimestamp "store-invalid-timestamp" "invalid timestamp (want YYYY-MM-DD-HH-MM-SS)";
    22 StoreKeyGeneration "store-key-generation" "key generation failed";
    23 StoreNotFound "store-not-found" "no such file or directory";
    24 StoreFileTooLarge "store-file-too-large" "file larger than the agent reads";
    25 StorePermissionDenied "store-permission-denied" "permission denied";
    100 InvalidToken "invalid-token" "token does not match [a-z0-9]{6}.[a-z0-9]{16}";
    101 InvalidTokenId "invalid-token-id" "token id does not match [a-z0-9]{6}";
    102 InvalidSecretName "invalid-secret-name" "secret name is not bootstrap-token-<id>";
    103 InvalidGroup "invalid-group" "group does not match system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]";
    104 InvalidUsage "invalid-usage" "unknown token usage (allowed: signing, authentication)";
    105 InvalidExpiration "invalid-expiration" "expiration is not an RFC 3339 time or valid duration";
    106 TokenExpired "token-expired" "token has expired";
    107 TokenNotForAuthentication "token-not-for-authentication" "token secret lacks usage-bootstrap-authentication: \"true\"";
    108 TokenMismatch "token-mismatch" "token secret's token-id/token-secret missing or mismatched";
    109 InvalidAuthFileLine "invalid-auth-file-line" "malformed token auth file line";
    110 InsufficientEntropy "insufficient-entropy" "not enough entropy supplied";
    200 MalformedKey "malformed-key" "malformed private key";
    201 UnsupportedKey "unsupported-key" "unsupported key type (only ECDSA P-256 node keys)";
    202 BadEntropy "bad-entropy" "entropy produced an invalid key; supply fresh entropy";
    203 InvalidKeyReference "invalid-key-reference" "not a usable key reference (a PEM key, tpm:, or an RFC 7512 pkcs11: URI without unknown attributes or a PIN in it)";
    204 KeyDevice "key-device" "the device holding the node key failed (unreachable, wrong PIN, no such object, or a key of another device)";
    300 InvalidNodeName "invalid-node-name" "node name is not a lower-case DNS-1123 subdomain";
    301 InvalidDnsName "invalid-dns-name" "invalid DNS name";
    302 InvalidIpAddress "invalid-ip-address" "invalid IP address";
    303 TooManySans "too-many-sans" "too many subject alternative names";
    304 InvalidExpirationSeconds "invalid-expiration-seconds" "expirationSeconds may not be less than 600 seconds (10 minutes)";
    305 SignerFailed "signer-failed" "signer failed";
    306 Malformed "malformed-input" "malformed input (PEM, DER, kubeconfig or JSON)";
    307 ServingNeedsIp "serving-needs-ip" "a kubelet serving certificate needs at least one IP address (since v1.31 the kubelet asks for none with DNS names only: AllowDNSOnlyNodeCSR is off)";
    308 InvalidDnsPattern "invalid-dns-pattern" "DNS name pattern is not a DNS name with {node} in it exactly once (after an optional leading *. label)";
    309 InvalidKeyPolicy "invalid-key-policy" "key policy is not a list of ecdsa-p256, ecdsa-p384, rsa-<1024..4096>, each at most once";
    400 VerifyMalformed "malformed" "malformed";
    401 VerifyUntrusted "untrusted" "untrusted";
    402 VerifyBadSignature "bad-signature" "bad-signature";
    403 VerifyExpired "expired" "expired";
    404 VerifyNotYetValid "not-yet-valid" "not-yet-valid";
    405 VerifyKeyMismatch "key-mismatch" "key-mismatch";
    406 VerifySubjectMismatch "subject-mismatch" "subject-mismatch";
    407 VerifyWrongUsage "wrong-usage" "wrong-usage";
    408 VerifyIsCa "is-ca" "is-ca";
    409 VerifyUnsupportedAlgorithm "unsupported-algorithm" "unsupported-algorithm";
    500 PolicyNotCertificateRequest "policy-not-certificate-request" "PEM block type must be CERTIFICATE REQUEST";
    501 PolicyBadSignature "policy-bad-signature" "CSR signature does not verify";
    502 PolicyUnsupportedKey "policy-unsupported-key" "unsupported CSR key type";
    503 PolicyOrganization "policy-organization" "subject organization is not system:nodes";
    504 PolicyCommonName "policy-common-name" "subject common name does not begin with system:node:";
    505 PolicyDnsSanNotAllowed "policy-dns-san-not-allowed" "DNS subjectAltNames are not allowed";
    506 PolicyEmailSanNotAllowed "policy-email-san-not-allowed" "Email subjectAltNames are not allowed";
    507 PolicyIpSanNotAllowed "policy-ip-san-not-allowed" "IP subjectAltNames are not allowed";
    508 PolicyUriSanNotAllowed "policy-uri-san-not-allowed" "URI subjectAltNames are not allowed";
    509 PolicySanRequired "policy-san-required" "DNS or IP subjectAltName is required";
    510 PolicyClientUsages "policy-client-usages" "usages did not match [client auth digital signature key encipherment]";
    511 PolicyServingUsages "policy-serving-usages" "usages did not match [digital signature key encipherment server auth]";
    512 PolicyUnknownUsage "policy-unknown-usage" "unsupported usage";
    513 PolicyDuplicateUsage "policy-duplicate-usage" "duplicate usage";
    514 PolicyUsagesRequired "policy-usages-required" "usages: Required value";
    515 PolicySigner "policy-signer" "signerName is not a kubelet signer";
    516 PolicyExpirationTooShort "policy-expiration-too-short" "may not specify a duration less than 600 seconds (10 minutes)";
    517 PolicyRequester "policy-requester" "the requester is not a node (username system:node:<name> in group system:nodes)";
    518 PolicyNodeMismatch "policy-node-mismatch" "subject common name is not the requesting node's system:node:<name>";
    519 PolicyExtraPemData "policy-extra-pem-data" "spec.request holds more than one CERTIFICATE REQUEST PEM block";
    520 PolicyKeyNotAllowed "policy-key-not-allowed" "key type or size not allowed by the approver's key policy";
    521 PolicyExpirationTooLong "policy-expiration-too-long" "expirationSeconds above the approver's maximum";
    522 PolicyOtherSanNotAllowed "policy-other-san-not-allowed" "subjectAltNames other than DNS and IP are not allowed";
    523 PolicyIpSanNotNodeAddress "policy-ip-san-not-node-address" "an IP subjectAltName is not one of the Node's InternalIP/ExternalIP addresses";
    524 PolicyDnsSanNotNodeAddress "policy-dns-san-not-node-address" "a DNS subjectAltName is not one of the Node's Hostname/InternalDNS/ExternalDNS addresses nor matched by a pattern";
    525 PolicyNodeNoAddresses "policy-node-no-addresses" "the Node has no addresses in status.addresses";
    526 PolicyNodeNotFound "policy-node-not-found" "no Node object of the requester's name";
    527 PolicyNotAuthorized "policy-not-authorized" "a SubjectAccessReview says the requester may not create certificatesigningrequests";
    600 InvalidPin "invalid-pin" "invalid hash, expected \"sha256:<64 hex digits>\"";
    601 PinMismatch "pin-mismatch" "none of the CA public keys are pinned";
    700 Unauthorized "unauthorized" "unauthorized: the bootstrap token is invalid, expired or deleted (or the client certificate is not accepted)";
    701 Forbidden "forbidden" "forbidden: bind system:node-bootstrapper to the token's group (e.g. kubectl create clusterrolebinding create-csrs-for-bootstrapping --clusterrole=system:node-bootstrapper --group=system:bootstrappers)";
    702 CsrDenied "csr-denied" "certificate signing request is denied";
    703 CsrFailed "csr-failed" "certificate signing request failed";
    704 CsrDeleted "csr-deleted" "certificate signing request was deleted";
    705 CsrUidChanged "csr-uid-changed" "certificate signing request changed UIDs";
    706 CsrIncompatible "csr-incompatible" "retrieved csr is not compatible";
    707 Timeout "timeout" "timed out waiting for the certificate";
    708 HttpStatus "http-status" "unexpected HTTP status from the apiserver";
    709 MalformedResponse "malformed-response" "malformed response from the apiserver";
    710 TooLarge "too-large" "input too large for the fixed buffers";
    711 InvalidState "invalid-state" "driven out of order";
    712 JwsInvalid "jws-invalid" "failed to verify JWS signature of the cluster-info ConfigMap";
    800 NoBootstrapCredentials "no-bootstrap-credentials" "the node's credentials are unusable and no bootstrap kubeconfig (or discovery) is configured";
    801 NoCa "no-ca" "no CA to trust (the kubeconfig has none and no CA bundle was given); system roots are never used for a cluster";
    802 InvalidConfig "invalid-config" "unusable agent configuration";
    803 CaBundleUnproven "ca-bundle-unproven" "the apiserver did not prove a CA of the new bundle (a TLS handshake trusting only the new bundle failed): the CA file is unchanged";
    804 ClockUntrusted "clock-untrusted" "the clock cannot be trusted to judge the certificate (before this build, before its notBefore, or the apiserver still accepts what it calls expired): the node keeps its identity and waits";
    900 InvalidDuration "invalid-duration" "not a duration (like 90s, 10m, 1h30m, 0)";
    901 InvalidAddress "invalid-address" "not an address to listen on (IPv4:port or [IPv6]:port)";
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
            Error::InvalidKeyReference,
            Error::KeyDevice,
            Error::InvalidNodeName,
            Error::InvalidDnsName,
            Error::InvalidIpAddress,
            Error::TooManySans,
            Error::InvalidExpirationSeconds,
            Error::SignerFailed,
            Error::ServingNeedsIp,
            Error::InvalidDnsPattern,
            Error::InvalidKeyPolicy,
            Error::Malformed,
            Error::Verify(VerifyError::new(Reason::Expired)),
            Error::Policy(PolicyViolation::Organization),
            Error::Policy(PolicyViolation::ExpirationTooShort),
            Error::Policy(PolicyViolation::NotAuthorized),
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
            Error::Store(StoreErrorKind::Io),
            Error::Store(StoreErrorKind::NotFound),
            Error::NoBootstrapCredentials,
            Error::NoCa,
            Error::InvalidConfig,
            Error::CaBundleUnproven,
            Error::ClockUntrusted,
            Error::InvalidDuration,
            Error::InvalidAddress,
        ];
        for (i, a) in samples.iter().enumerate() {
            for b in &samples[i + 1..] {
                assert_ne!(a.code(), b.code(), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn catalogue_is_one_consistent_table() {
        for (i, (code, name, message)) in CATALOGUE.iter().enumerate() {
            assert_eq!(Code::from_u32(*code as u32), Some(*code));
            assert_eq!(code.name(), *name);
            assert_eq!(code.message(), *message);
            assert!(!message.is_empty());
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
            for (other, other_name, _) in &CATALOGUE[i + 1..] {
                assert!((*code as u32) < (*other as u32), "codes in order");
                assert_ne!(name, other_name);
            }
        }
        for r in Reason::ALL {
            assert_eq!(r.kind() as u32, r.code());
            assert_eq!(r.kind().name(), r.name());
            assert_eq!(Error::Verify(VerifyError::new(r)).message(), r.name());
        }
        for (i, p) in PolicyViolation::ALL.iter().enumerate() {
            assert_eq!(p.code(), 500 + i as u32);
            assert_eq!(p.kind() as u32, p.code());
            assert!(p.name().starts_with("policy-"));
        }
        assert_eq!(Code::from_u32(500 + PolicyViolation::ALL.len() as u32), None);
        for k in StoreErrorKind::ALL {
            assert_eq!(StoreErrorKind::from_code(k.code() as u32), Some(k));
            assert_eq!(Error::Store(k).code(), k.code() as u32);
            assert!((10..26).contains(&(k.code() as u32)));
        }
        assert_eq!(Error::BufferTooSmall { needed: 9 }.name(), "insufficient-size");
    }
}
