// Generated from kubeboot::error::CATALOGUE (core/src/error.rs) by the test
// `result_enum_is_the_catalogue`; regenerate with
// `KUBEBOOT_BLESS=1 cargo test -p kubeboot-ffi result_enum_is_the_catalogue`. Do not edit.

/// Result of every fallible kubeboot function. Numbers are stable and shared with
/// `kubeboot::Error::code()`: 0–9 ABI-level, 10–25 files and the certificate store,
/// 100s tokens, 200s keys, 300s CSRs, 400s issued-certificate verification reasons, 500s
/// CSR policy violations, 600s CA pins, 700s the engine and the apiserver's answers, 800s
/// the node agent. In C this is a `uint32_t`; compare against the `KUBEBOOT_RESULT_*`
/// constants; `kubeboot_result_name` / `kubeboot_result_message` give the name and text.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
#[allow(rustdoc::invalid_html_tags)] // the messages are plain text: `bootstrap-token-<id>`
pub enum kubeboot_result {
    /// success (`ok`).
    Ok = 0,
    /// a required pointer argument was NULL (`null-parameter`).
    NullParameter = 1,
    /// internal panic (a bug in kubeboot) (`panic`).
    Panic = 2,
    /// output buffer too small (`insufficient-size`).
    InsufficientSize = 3,
    /// text argument is not valid UTF-8 (`invalid-utf8`).
    InvalidUtf8 = 4,
    /// argument out of range (`invalid-parameter`).
    InvalidParameter = 5,
    /// unknown error (`unknown-error`).
    UnknownError = 6,
    /// no free handle: every slot of the static pool is in use (free one; builds with std allocate instead) (`pool-exhausted`).
    PoolExhausted = 7,
    /// filesystem error (`store-io`).
    StoreIo = 10,
    /// no cert/key files read (`store-no-cert-key-files`).
    StoreNoCertKeyFiles = 11,
    /// no certificates found in certificate input (`store-no-certificates`).
    StoreNoCertificates = 12,
    /// malformed certificate (`store-malformed-certificate`).
    StoreMalformedCertificate = 13,
    /// no parseable private key (`store-malformed-key`).
    StoreMalformedKey = 14,
    /// unsupported private key type (`store-unsupported-key`).
    StoreUnsupportedKey = 15,
    /// private key does not match public key in certificate (`store-key-mismatch`).
    StoreKeyMismatch = 16,
    /// expected a symlink but it is a file (`store-current-not-symlink`).
    StoreCurrentNotSymlink = 17,
    /// expected a symlink but it is a file (`store-updated-not-symlink`).
    StoreUpdatedNotSymlink = 18,
    /// file read back differs from what was written (`store-read-back-mismatch`).
    StoreReadBackMismatch = 19,
    /// invalid store prefix (`store-invalid-prefix`).
    StoreInvalidPrefix = 20,
    /// invalid timestamp (want YYYY-MM-DD-HH-MM-SS) (`store-invalid-timestamp`).
    StoreInvalidTimestamp = 21,
    /// key generation failed (`store-key-generation`).
    StoreKeyGeneration = 22,
    /// no such file or directory (`store-not-found`).
    StoreNotFound = 23,
    /// file larger than the agent reads (`store-file-too-large`).
    StoreFileTooLarge = 24,
    /// permission denied (`store-permission-denied`).
    StorePermissionDenied = 25,
    /// token does not match [a-z0-9]{6}.[a-z0-9]{16} (`invalid-token`).
    InvalidToken = 100,
    /// token id does not match [a-z0-9]{6} (`invalid-token-id`).
    InvalidTokenId = 101,
    /// secret name is not bootstrap-token-<id> (`invalid-secret-name`).
    InvalidSecretName = 102,
    /// group does not match system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9] (`invalid-group`).
    InvalidGroup = 103,
    /// unknown token usage (allowed: signing, authentication) (`invalid-usage`).
    InvalidUsage = 104,
    /// expiration is not an RFC 3339 time or valid duration (`invalid-expiration`).
    InvalidExpiration = 105,
    /// token has expired (`token-expired`).
    TokenExpired = 106,
    /// token secret lacks usage-bootstrap-authentication: "true" (`token-not-for-authentication`).
    TokenNotForAuthentication = 107,
    /// token secret's token-id/token-secret missing or mismatched (`token-mismatch`).
    TokenMismatch = 108,
    /// malformed token auth file line (`invalid-auth-file-line`).
    InvalidAuthFileLine = 109,
    /// not enough entropy supplied (`insufficient-entropy`).
    InsufficientEntropy = 110,
    /// malformed private key (`malformed-key`).
    MalformedKey = 200,
    /// unsupported key type (only ECDSA P-256 node keys) (`unsupported-key`).
    UnsupportedKey = 201,
    /// entropy produced an invalid key; supply fresh entropy (`bad-entropy`).
    BadEntropy = 202,
    /// not a usable key reference (a PEM key, tpm:, or an RFC 7512 pkcs11: URI without unknown attributes or a PIN in it) (`invalid-key-reference`).
    InvalidKeyReference = 203,
    /// the device holding the node key failed (unreachable, wrong PIN, no such object, or a key of another device) (`key-device`).
    KeyDevice = 204,
    /// node name is not a lower-case DNS-1123 subdomain (`invalid-node-name`).
    InvalidNodeName = 300,
    /// invalid DNS name (`invalid-dns-name`).
    InvalidDnsName = 301,
    /// invalid IP address (`invalid-ip-address`).
    InvalidIpAddress = 302,
    /// too many subject alternative names (`too-many-sans`).
    TooManySans = 303,
    /// expirationSeconds may not be less than 600 seconds (10 minutes) (`invalid-expiration-seconds`).
    InvalidExpirationSeconds = 304,
    /// signer failed (`signer-failed`).
    SignerFailed = 305,
    /// malformed input (PEM, DER, kubeconfig or JSON) (`malformed-input`).
    Malformed = 306,
    /// a kubelet serving certificate needs at least one IP address (since v1.31 the kubelet asks for none with DNS names only: AllowDNSOnlyNodeCSR is off) (`serving-needs-ip`).
    ServingNeedsIp = 307,
    /// DNS name pattern is not a DNS name with {node} in it exactly once (after an optional leading *. label) (`invalid-dns-pattern`).
    InvalidDnsPattern = 308,
    /// key policy is not a list of ecdsa-p256, ecdsa-p384, rsa-<1024..4096>, each at most once (`invalid-key-policy`).
    InvalidKeyPolicy = 309,
    /// malformed (`malformed`).
    VerifyMalformed = 400,
    /// untrusted (`untrusted`).
    VerifyUntrusted = 401,
    /// bad-signature (`bad-signature`).
    VerifyBadSignature = 402,
    /// expired (`expired`).
    VerifyExpired = 403,
    /// not-yet-valid (`not-yet-valid`).
    VerifyNotYetValid = 404,
    /// key-mismatch (`key-mismatch`).
    VerifyKeyMismatch = 405,
    /// subject-mismatch (`subject-mismatch`).
    VerifySubjectMismatch = 406,
    /// wrong-usage (`wrong-usage`).
    VerifyWrongUsage = 407,
    /// is-ca (`is-ca`).
    VerifyIsCa = 408,
    /// unsupported-algorithm (`unsupported-algorithm`).
    VerifyUnsupportedAlgorithm = 409,
    /// PEM block type must be CERTIFICATE REQUEST (`policy-not-certificate-request`).
    PolicyNotCertificateRequest = 500,
    /// CSR signature does not verify (`policy-bad-signature`).
    PolicyBadSignature = 501,
    /// unsupported CSR key type (`policy-unsupported-key`).
    PolicyUnsupportedKey = 502,
    /// subject organization is not system:nodes (`policy-organization`).
    PolicyOrganization = 503,
    /// subject common name does not begin with system:node: (`policy-common-name`).
    PolicyCommonName = 504,
    /// DNS subjectAltNames are not allowed (`policy-dns-san-not-allowed`).
    PolicyDnsSanNotAllowed = 505,
    /// Email subjectAltNames are not allowed (`policy-email-san-not-allowed`).
    PolicyEmailSanNotAllowed = 506,
    /// IP subjectAltNames are not allowed (`policy-ip-san-not-allowed`).
    PolicyIpSanNotAllowed = 507,
    /// URI subjectAltNames are not allowed (`policy-uri-san-not-allowed`).
    PolicyUriSanNotAllowed = 508,
    /// DNS or IP subjectAltName is required (`policy-san-required`).
    PolicySanRequired = 509,
    /// usages did not match [client auth digital signature key encipherment] (`policy-client-usages`).
    PolicyClientUsages = 510,
    /// usages did not match [digital signature key encipherment server auth] (`policy-serving-usages`).
    PolicyServingUsages = 511,
    /// unsupported usage (`policy-unknown-usage`).
    PolicyUnknownUsage = 512,
    /// duplicate usage (`policy-duplicate-usage`).
    PolicyDuplicateUsage = 513,
    /// usages: Required value (`policy-usages-required`).
    PolicyUsagesRequired = 514,
    /// signerName is not a kubelet signer (`policy-signer`).
    PolicySigner = 515,
    /// may not specify a duration less than 600 seconds (10 minutes) (`policy-expiration-too-short`).
    PolicyExpirationTooShort = 516,
    /// the requester is not a node (username system:node:<name> in group system:nodes) (`policy-requester`).
    PolicyRequester = 517,
    /// subject common name is not the requesting node's system:node:<name> (`policy-node-mismatch`).
    PolicyNodeMismatch = 518,
    /// spec.request holds more than one CERTIFICATE REQUEST PEM block (`policy-extra-pem-data`).
    PolicyExtraPemData = 519,
    /// key type or size not allowed by the approver's key policy (`policy-key-not-allowed`).
    PolicyKeyNotAllowed = 520,
    /// expirationSeconds above the approver's maximum (`policy-expiration-too-long`).
    PolicyExpirationTooLong = 521,
    /// subjectAltNames other than DNS and IP are not allowed (`policy-other-san-not-allowed`).
    PolicyOtherSanNotAllowed = 522,
    /// an IP subjectAltName is not one of the Node's InternalIP/ExternalIP addresses (`policy-ip-san-not-node-address`).
    PolicyIpSanNotNodeAddress = 523,
    /// a DNS subjectAltName is not one of the Node's Hostname/InternalDNS/ExternalDNS addresses nor matched by a pattern (`policy-dns-san-not-node-address`).
    PolicyDnsSanNotNodeAddress = 524,
    /// the Node has no addresses in status.addresses (`policy-node-no-addresses`).
    PolicyNodeNoAddresses = 525,
    /// no Node object of the requester's name (`policy-node-not-found`).
    PolicyNodeNotFound = 526,
    /// a SubjectAccessReview says the requester may not create certificatesigningrequests (`policy-not-authorized`).
    PolicyNotAuthorized = 527,
    /// invalid hash, expected "sha256:<64 hex digits>" (`invalid-pin`).
    InvalidPin = 600,
    /// none of the CA public keys are pinned (`pin-mismatch`).
    PinMismatch = 601,
    /// unauthorized: the bootstrap token is invalid, expired or deleted (or the client certificate is not accepted) (`unauthorized`).
    Unauthorized = 700,
    /// forbidden: bind system:node-bootstrapper to the token's group (e.g. kubectl create clusterrolebinding create-csrs-for-bootstrapping --clusterrole=system:node-bootstrapper --group=system:bootstrappers) (`forbidden`).
    Forbidden = 701,
    /// certificate signing request is denied (`csr-denied`).
    CsrDenied = 702,
    /// certificate signing request failed (`csr-failed`).
    CsrFailed = 703,
    /// certificate signing request was deleted (`csr-deleted`).
    CsrDeleted = 704,
    /// certificate signing request changed UIDs (`csr-uid-changed`).
    CsrUidChanged = 705,
    /// retrieved csr is not compatible (`csr-incompatible`).
    CsrIncompatible = 706,
    /// timed out waiting for the certificate (`timeout`).
    Timeout = 707,
    /// unexpected HTTP status from the apiserver (`http-status`).
    HttpStatus = 708,
    /// malformed response from the apiserver (`malformed-response`).
    MalformedResponse = 709,
    /// input too large for the fixed buffers (`too-large`).
    TooLarge = 710,
    /// driven out of order (`invalid-state`).
    InvalidState = 711,
    /// failed to verify JWS signature of the cluster-info ConfigMap (`jws-invalid`).
    JwsInvalid = 712,
    /// the node's credentials are unusable and no bootstrap kubeconfig (or discovery) is configured (`no-bootstrap-credentials`).
    NoBootstrapCredentials = 800,
    /// no CA to trust (the kubeconfig has none and no CA bundle was given); system roots are never used for a cluster (`no-ca`).
    NoCa = 801,
    /// unusable agent configuration (`invalid-config`).
    InvalidConfig = 802,
    /// the apiserver did not prove a CA of the new bundle (a TLS handshake trusting only the new bundle failed): the CA file is unchanged (`ca-bundle-unproven`).
    CaBundleUnproven = 803,
    /// the clock cannot be trusted to judge the certificate (before this build, before its notBefore, or the apiserver still accepts what it calls expired): the node keeps its identity and waits (`clock-untrusted`).
    ClockUntrusted = 804,
    /// not a duration (like 90s, 10m, 1h30m, 0) (`invalid-duration`).
    InvalidDuration = 900,
    /// not an address to listen on (IPv4:port or [IPv6]:port) (`invalid-address`).
    InvalidAddress = 901,
}

/// Every result, in code order.
pub(crate) const ALL: &[kubeboot_result] = &[
    kubeboot_result::Ok,
    kubeboot_result::NullParameter,
    kubeboot_result::Panic,
    kubeboot_result::InsufficientSize,
    kubeboot_result::InvalidUtf8,
    kubeboot_result::InvalidParameter,
    kubeboot_result::UnknownError,
    kubeboot_result::PoolExhausted,
    kubeboot_result::StoreIo,
    kubeboot_result::StoreNoCertKeyFiles,
    kubeboot_result::StoreNoCertificates,
    kubeboot_result::StoreMalformedCertificate,
    kubeboot_result::StoreMalformedKey,
    kubeboot_result::StoreUnsupportedKey,
    kubeboot_result::StoreKeyMismatch,
    kubeboot_result::StoreCurrentNotSymlink,
    kubeboot_result::StoreUpdatedNotSymlink,
    kubeboot_result::StoreReadBackMismatch,
    kubeboot_result::StoreInvalidPrefix,
    kubeboot_result::StoreInvalidTimestamp,
    kubeboot_result::StoreKeyGeneration,
    kubeboot_result::StoreNotFound,
    kubeboot_result::StoreFileTooLarge,
    kubeboot_result::StorePermissionDenied,
    kubeboot_result::InvalidToken,
    kubeboot_result::InvalidTokenId,
    kubeboot_result::InvalidSecretName,
    kubeboot_result::InvalidGroup,
    kubeboot_result::InvalidUsage,
    kubeboot_result::InvalidExpiration,
    kubeboot_result::TokenExpired,
    kubeboot_result::TokenNotForAuthentication,
    kubeboot_result::TokenMismatch,
    kubeboot_result::InvalidAuthFileLine,
    kubeboot_result::InsufficientEntropy,
    kubeboot_result::MalformedKey,
    kubeboot_result::UnsupportedKey,
    kubeboot_result::BadEntropy,
    kubeboot_result::InvalidKeyReference,
    kubeboot_result::KeyDevice,
    kubeboot_result::InvalidNodeName,
    kubeboot_result::InvalidDnsName,
    kubeboot_result::InvalidIpAddress,
    kubeboot_result::TooManySans,
    kubeboot_result::InvalidExpirationSeconds,
    kubeboot_result::SignerFailed,
    kubeboot_result::Malformed,
    kubeboot_result::ServingNeedsIp,
    kubeboot_result::InvalidDnsPattern,
    kubeboot_result::InvalidKeyPolicy,
    kubeboot_result::VerifyMalformed,
    kubeboot_result::VerifyUntrusted,
    kubeboot_result::VerifyBadSignature,
    kubeboot_result::VerifyExpired,
    kubeboot_result::VerifyNotYetValid,
    kubeboot_result::VerifyKeyMismatch,
    kubeboot_result::VerifySubjectMismatch,
    kubeboot_result::VerifyWrongUsage,
    kubeboot_result::VerifyIsCa,
    kubeboot_result::VerifyUnsupportedAlgorithm,
    kubeboot_result::PolicyNotCertificateRequest,
    kubeboot_result::PolicyBadSignature,
    kubeboot_result::PolicyUnsupportedKey,
    kubeboot_result::PolicyOrganization,
    kubeboot_result::PolicyCommonName,
    kubeboot_result::PolicyDnsSanNotAllowed,
    kubeboot_result::PolicyEmailSanNotAllowed,
    kubeboot_result::PolicyIpSanNotAllowed,
    kubeboot_result::PolicyUriSanNotAllowed,
    kubeboot_result::PolicySanRequired,
    kubeboot_result::PolicyClientUsages,
    kubeboot_result::PolicyServingUsages,
    kubeboot_result::PolicyUnknownUsage,
    kubeboot_result::PolicyDuplicateUsage,
    kubeboot_result::PolicyUsagesRequired,
    kubeboot_result::PolicySigner,
    kubeboot_result::PolicyExpirationTooShort,
    kubeboot_result::PolicyRequester,
    kubeboot_result::PolicyNodeMismatch,
    kubeboot_result::PolicyExtraPemData,
    kubeboot_result::PolicyKeyNotAllowed,
    kubeboot_result::PolicyExpirationTooLong,
    kubeboot_result::PolicyOtherSanNotAllowed,
    kubeboot_result::PolicyIpSanNotNodeAddress,
    kubeboot_result::PolicyDnsSanNotNodeAddress,
    kubeboot_result::PolicyNodeNoAddresses,
    kubeboot_result::PolicyNodeNotFound,
    kubeboot_result::PolicyNotAuthorized,
    kubeboot_result::InvalidPin,
    kubeboot_result::PinMismatch,
    kubeboot_result::Unauthorized,
    kubeboot_result::Forbidden,
    kubeboot_result::CsrDenied,
    kubeboot_result::CsrFailed,
    kubeboot_result::CsrDeleted,
    kubeboot_result::CsrUidChanged,
    kubeboot_result::CsrIncompatible,
    kubeboot_result::Timeout,
    kubeboot_result::HttpStatus,
    kubeboot_result::MalformedResponse,
    kubeboot_result::TooLarge,
    kubeboot_result::InvalidState,
    kubeboot_result::JwsInvalid,
    kubeboot_result::NoBootstrapCredentials,
    kubeboot_result::NoCa,
    kubeboot_result::InvalidConfig,
    kubeboot_result::CaBundleUnproven,
    kubeboot_result::ClockUntrusted,
    kubeboot_result::InvalidDuration,
    kubeboot_result::InvalidAddress,
];
