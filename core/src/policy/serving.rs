//! Should an approver approve this `kubernetes.io/kubelet-serving` CSR? The checks
//! kubernetes/website#24418 asks of one: the requester is the node, the usages are serving
//! usages, and the SANs belong to that node.
//!
//! kube-controller-manager never approves serving CSRs (kubernetes/kubernetes#62471: the SANs
//! cannot be trusted without checking them), so an approver has to. [`ServingPolicy`] judges a
//! CSR object's fields in two steps, cheapest first, so that a controller fetches the Node only
//! for a CSR that can still be approved:
//!
//! 1. [`ServingPolicy::check_request`], from the CSR object alone, in this order:
//!    - the signer is [`SIGNER_SERVING`] ([`PolicyViolation::Signer`]);
//!    - the requester (`spec.username`, `spec.groups`, which the apiserver fills in from the
//!      authenticated identity) is `system:node:<name>` with a valid node name, in group
//!      `system:nodes` ([`PolicyViolation::Requester`]);
//!    - `spec.request` is exactly one `CERTIFICATE REQUEST` PEM block, nothing else but white
//!      space around it ([`PolicyViolation::ExtraPemData`]; the apiserver only reads the first
//!      block, and attestation formats append more: a serving CSR has no use for them);
//!    - everything [`super::check_kubelet_csr`] checks (self-signature, usages, `expirationSeconds`
//!      ≥ 600, O exactly `system:nodes`, a DNS or IP SAN and no email or URI SAN, the serving
//!      usage set, a `system:node:` CN);
//!    - the CN is exactly `system:node:<requester's node>` ([`PolicyViolation::NodeMismatch`]:
//!      the check KEP-4872's `KubeletCertCNValidation` makes of the certificate when the
//!      apiserver dials the kubelet);
//!    - the key is one the [`KeyPolicy`] allows ([`PolicyViolation::KeyNotAllowed`]);
//!    - `expirationSeconds` is at most the maximum ([`PolicyViolation::ExpirationTooLong`]);
//!    - no subjectAltName of another form than DNS or IP ([`PolicyViolation::OtherSanNotAllowed`];
//!      the signer would drop them, and an approver approves exactly what it judged).
//! 2. [`ServingPolicy::check_sans`], against the Node's `status.addresses`: every IP SAN is one of
//!    its `InternalIP`/`ExternalIP` addresses ([`PolicyViolation::IpSanNotNodeAddress`]); every
//!    DNS SAN is one of its `Hostname`/`InternalDNS`/`ExternalDNS` addresses (ASCII case
//!    ignored, as DNS does) or matches one of the operator's [`DnsPattern`]s for that node
//!    ([`PolicyViolation::DnsSanNotNodeAddress`]); a Node without any address gives
//!    [`PolicyViolation::NodeNoAddresses`] instead, and no Node at all
//!    [`PolicyViolation::NodeNotFound`] ([`ServingPolicy::check`]).
//!
//! What is left to the controller is I/O: reading the Node, the SubjectAccessReview
//! ([`PolicyViolation::NotAuthorized`] when it says no) and writing the decision.

mod config;

pub use config::{DnsPattern, KeyPolicy};

use core::net::IpAddr;

use super::{NODE_CN_PREFIX, NODES_ORGANIZATION, SIGNER_SERVING, check_kubelet_csr_with};
use crate::backend::{SignatureVerifier, Software};
use crate::error::{Error, PolicyViolation, Result};
use crate::request::{CertificateRequest, PEM_LABEL, SubjectAltName};

/// The default maximum `expirationSeconds`: one year (8760 h), kube-controller-manager's default
/// `--cluster-signing-duration`, which its signer never exceeds anyway.
pub const DEFAULT_MAX_EXPIRATION_SECONDS: u32 = 8760 * 3600;

/// The kind of a Node address (`status.addresses[].type`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressType {
    /// `Hostname`.
    Hostname,
    /// `InternalIP`.
    InternalIp,
    /// `ExternalIP`.
    ExternalIp,
    /// `InternalDNS`.
    InternalDns,
    /// `ExternalDNS`.
    ExternalDns,
    /// Any other value (counts for nothing).
    Other,
}

impl AddressType {
    /// The type named by the API string (`InternalIP`, ...); [`AddressType::Other`] otherwise.
    pub fn from_api(s: &str) -> Self {
        match s {
            "Hostname" => AddressType::Hostname,
            "InternalIP" => AddressType::InternalIp,
            "ExternalIP" => AddressType::ExternalIp,
            "InternalDNS" => AddressType::InternalDns,
            "ExternalDNS" => AddressType::ExternalDns,
            _ => AddressType::Other,
        }
    }

    /// Whether an IP SAN may equal an address of this type.
    pub fn is_ip(self) -> bool {
        matches!(self, AddressType::InternalIp | AddressType::ExternalIp)
    }

    /// Whether a DNS SAN may equal an address of this type.
    pub fn is_dns(self) -> bool {
        matches!(self, AddressType::Hostname | AddressType::InternalDns | AddressType::ExternalDns)
    }
}

/// One entry of a Node's `status.addresses`, as the API gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeAddress<'a> {
    /// `type`.
    pub kind: AddressType,
    /// `address`, as written in the Node object (an IP literal for the IP types).
    pub address: &'a str,
}

/// The fields of a CertificateSigningRequest object that the judgement reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServingCsr<'a> {
    /// `spec.signerName`.
    pub signer: &'a str,
    /// `spec.username` (set by the apiserver: who created the object).
    pub username: &'a str,
    /// `spec.groups` (set by the apiserver).
    pub groups: &'a [&'a str],
    /// `spec.request`: the PEM text (the API's base64 already decoded).
    pub request: &'a [u8],
    /// `spec.usages`.
    pub usages: &'a [&'a str],
    /// `spec.expirationSeconds` (the API's `int32`).
    pub expiration_seconds: Option<i64>,
}

/// A CSR that passed [`ServingPolicy::check_request`]: the requesting node and the parsed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServingRequest<'a, 's> {
    /// The requester's node name (`system:node:<node_name>`), also the CSR's CN.
    pub node_name: &'a str,
    /// The parsed PKCS#10 request (borrows the caller's scratch buffer).
    pub request: CertificateRequest<'s>,
}

/// The SAN that [`ServingPolicy::check_sans`] refused, with the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForeignSan<'r> {
    /// [`PolicyViolation::IpSanNotNodeAddress`], [`PolicyViolation::DnsSanNotNodeAddress`] or
    /// [`PolicyViolation::NodeNoAddresses`].
    pub violation: PolicyViolation,
    /// The first SAN that is not the node's.
    pub san: SubjectAltName<'r>,
}

/// The operator's rules for approving kubelet serving certificates.
#[derive(Clone, Copy, Debug)]
pub struct ServingPolicy<'p> {
    /// The longest `expirationSeconds` approved.
    pub max_expiration_seconds: u32,
    /// The key types and sizes approved.
    pub keys: KeyPolicy,
    /// DNS names a node may have beyond its Node addresses (each bound to the node's name).
    pub dns_patterns: &'p [DnsPattern<'p>],
}

impl Default for ServingPolicy<'_> {
    /// A one-year maximum, [`KeyPolicy::DEFAULT`], no patterns.
    fn default() -> Self {
        ServingPolicy {
            max_expiration_seconds: DEFAULT_MAX_EXPIRATION_SECONDS,
            keys: KeyPolicy::DEFAULT,
            dns_patterns: &[],
        }
    }
}

const fn violation(v: PolicyViolation) -> Error {
    Error::Policy(v)
}

/// The node name of a requester that is a node: `username` is `system:node:<name>` with a valid
/// node name (a DNS-1123 subdomain) and `groups` contains `system:nodes`; else
/// [`PolicyViolation::Requester`].
pub fn requester_node<'a>(username: &'a str, groups: &[&str]) -> Result<&'a str> {
    let name =
        username.strip_prefix(NODE_CN_PREFIX).ok_or(violation(PolicyViolation::Requester))?;
    crate::csr::validate_node_name(name).map_err(|_| violation(PolicyViolation::Requester))?;
    if !groups.contains(&NODES_ORGANIZATION) {
        return Err(violation(PolicyViolation::Requester));
    }
    Ok(name)
}

/// `spec.request` is one PEM block and nothing but white space around it.
fn single_block(pem: &[u8]) -> Result<()> {
    let mut blocks = crate::pem::blocks(pem);
    let first = match blocks.next() {
        Some(Ok(b)) if b.label == PEM_LABEL => b,
        // No block, a bad one or another label: the request reader says which.
        _ => return Ok(()),
    };
    if blocks.next().is_some() || pem.trim_ascii().len() != first.text.trim_ascii().len() {
        return Err(violation(PolicyViolation::ExtraPemData));
    }
    Ok(())
}

/// Whether `san` (a DNS SAN) names `address`, ASCII case ignored.
fn same_dns(san: &str, address: &str) -> bool {
    san.eq_ignore_ascii_case(address)
}

/// Whether `san` (4 or 16 network-order bytes) is `address` (an IP literal). Only the same family
/// counts: an IPv4-mapped IPv6 SAN is not the node's IPv4 address.
fn same_ip(san: &[u8], address: &str) -> bool {
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => san == a.octets(),
        Ok(IpAddr::V6(a)) => san == a.octets(),
        Err(_) => false,
    }
}

impl<'p> ServingPolicy<'p> {
    /// Step 1: everything the CSR object alone decides (see the module docs for the order).
    /// `scratch` receives the request's DER (3/4 of the PEM's length is enough).
    pub fn check_request<'a, 's>(
        &self,
        csr: &ServingCsr<'a>,
        scratch: &'s mut [u8],
    ) -> Result<ServingRequest<'a, 's>> {
        self.check_request_with(&Software, csr, scratch)
    }

    /// [`ServingPolicy::check_request`] with the self-signature checked by `verifier`.
    pub fn check_request_with<'a, 's>(
        &self,
        verifier: &dyn SignatureVerifier,
        csr: &ServingCsr<'a>,
        scratch: &'s mut [u8],
    ) -> Result<ServingRequest<'a, 's>> {
        if csr.signer != SIGNER_SERVING {
            return Err(violation(PolicyViolation::Signer));
        }
        let node_name = requester_node(csr.username, csr.groups)?;
        single_block(csr.request)?;
        let expiration = match csr.expiration_seconds {
            None => None,
            // Below the API's minimum (and so refused by the apiserver): the generic check says so.
            Some(s) if s < 0 => Some(0),
            Some(s) => Some(u32::try_from(s).unwrap_or(u32::MAX)),
        };
        let checked = check_kubelet_csr_with(
            verifier,
            csr.request,
            csr.signer,
            csr.usages,
            expiration,
            scratch,
        )?;
        let request = checked.request;
        let cn_is_node = request.common_name().is_some_and(|cn| {
            let mut chars = cn.chars();
            NODE_CN_PREFIX.chars().chain(node_name.chars()).all(|c| chars.next() == Some(c))
                && chars.next().is_none()
        });
        if !cn_is_node {
            return Err(violation(PolicyViolation::NodeMismatch));
        }
        if !self.keys.allows(request.key_algorithm(), request.rsa_modulus_bits()) {
            return Err(violation(PolicyViolation::KeyNotAllowed));
        }
        if expiration.is_some_and(|s| s > self.max_expiration_seconds) {
            return Err(violation(PolicyViolation::ExpirationTooLong));
        }
        if request.sans().any(|s| !matches!(s, SubjectAltName::Dns(_) | SubjectAltName::Ip(_))) {
            return Err(violation(PolicyViolation::OtherSanNotAllowed));
        }
        Ok(ServingRequest { node_name, request })
    }

    /// Step 2: the first SAN of `request` that is not node `node_name`'s, judged against its
    /// `addresses` and the policy's patterns; `None` when every SAN is the node's.
    pub fn foreign_san<'r>(
        &self,
        node_name: &str,
        request: &CertificateRequest<'r>,
        addresses: &[NodeAddress<'_>],
    ) -> Option<ForeignSan<'r>> {
        let refuse = |san, v| {
            let violation = if addresses.is_empty() { PolicyViolation::NodeNoAddresses } else { v };
            Some(ForeignSan { violation, san })
        };
        for san in request.sans() {
            match san {
                SubjectAltName::Ip(ip) => {
                    let known = addresses.iter().any(|a| a.kind.is_ip() && same_ip(ip, a.address));
                    if !known {
                        return refuse(san, PolicyViolation::IpSanNotNodeAddress);
                    }
                }
                SubjectAltName::Dns(name) => {
                    let known =
                        addresses.iter().any(|a| a.kind.is_dns() && same_dns(name, a.address))
                            || self.dns_patterns.iter().any(|p| p.matches(node_name, name));
                    if !known {
                        return refuse(san, PolicyViolation::DnsSanNotNodeAddress);
                    }
                }
                // Refused by `check_request` (and by the kubelet-serving shape for email, URI).
                _ => {
                    return Some(ForeignSan {
                        violation: PolicyViolation::OtherSanNotAllowed,
                        san,
                    });
                }
            }
        }
        None
    }

    /// Step 2 as a result: [`ServingPolicy::foreign_san`]'s reason, if any.
    pub fn check_sans(
        &self,
        node_name: &str,
        request: &CertificateRequest<'_>,
        addresses: &[NodeAddress<'_>],
    ) -> Result<()> {
        match self.foreign_san(node_name, request, addresses) {
            Some(f) => Err(violation(f.violation)),
            None => Ok(()),
        }
    }

    /// Both steps: `node` is the requester's Node's addresses, `None` when there is no such Node
    /// ([`PolicyViolation::NodeNotFound`]). Returns the node name on approval.
    pub fn check<'a>(
        &self,
        csr: &ServingCsr<'a>,
        node: Option<&[NodeAddress<'_>]>,
        scratch: &mut [u8],
    ) -> Result<&'a str> {
        let req = self.check_request(csr, scratch)?;
        let addresses = node.ok_or(violation(PolicyViolation::NodeNotFound))?;
        self.check_sans(req.node_name, &req.request, addresses)?;
        Ok(req.node_name)
    }
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests;
