//! The approver's judgement on real CSRs (OpenSSL's), each refusal with its reason.

extern crate std;

use super::*;
use crate::policy::{
    USAGE_CLIENT_AUTH, USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, USAGE_SERVER_AUTH,
};
use crate::request::fixtures::{ALLSANS, CLIENT, SERVING};
use std::string::String;
use std::vec::Vec;

use super::fixtures::*;

const SERVING_USAGES: &[&str] = &[USAGE_DIGITAL_SIGNATURE, USAGE_SERVER_AUTH];
const NODES: &[&str] = &["system:nodes", "system:authenticated"];
const NODE_1: &str = "system:node:node-1";

fn csr<'a>(pem: &'a str) -> ServingCsr<'a> {
    ServingCsr {
        signer: SIGNER_SERVING,
        username: NODE_1,
        groups: NODES,
        request: pem.as_bytes(),
        usages: SERVING_USAGES,
        expiration_seconds: None,
    }
}

const NODE_1_ADDRESSES: &[NodeAddress<'static>] = &[
    NodeAddress { kind: AddressType::InternalIp, address: "10.0.0.7" },
    NodeAddress { kind: AddressType::Hostname, address: "node-1.example.com" },
];

fn judge(
    policy: &ServingPolicy<'_>,
    c: &ServingCsr<'_>,
    node: Option<&[NodeAddress<'_>]>,
) -> Result<String> {
    let mut scratch = [0u8; 2048];
    policy.check(c, node, &mut scratch).map(String::from)
}

fn refused(p: PolicyViolation) -> Result<String> {
    Err(Error::Policy(p))
}

#[cfg_attr(miri, ignore = "ECDSA signature checks: minutes each")]
#[test]
fn approves_a_node_asking_for_its_own_addresses() {
    let p = ServingPolicy::default();
    assert_eq!(judge(&p, &csr(SERVING), Some(NODE_1_ADDRESSES)), Ok(String::from("node-1")));
    // ExternalIP and ExternalDNS / InternalDNS count too; case is ignored for names.
    let other_kinds = [
        NodeAddress { kind: AddressType::ExternalIp, address: "10.0.0.7" },
        NodeAddress { kind: AddressType::ExternalDns, address: "NODE-1.example.COM" },
    ];
    assert_eq!(judge(&p, &csr(SERVING), Some(&other_kinds)), Ok(String::from("node-1")));
    let rsa_usages = [USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, USAGE_SERVER_AUTH];
    let c = ServingCsr { usages: &rsa_usages, expiration_seconds: Some(3600), ..csr(SERVING) };
    assert_eq!(judge(&p, &c, Some(NODE_1_ADDRESSES)), Ok(String::from("node-1")));
    // A pattern stands in for a DNS name the Node does not list.
    let patterns = [DnsPattern::parse("{node}.example.com").unwrap()];
    let with = ServingPolicy { dns_patterns: &patterns, ..p };
    let ip_only = [NodeAddress { kind: AddressType::InternalIp, address: "10.0.0.7" }];
    assert_eq!(
        judge(&p, &csr(SERVING), Some(&ip_only)),
        refused(PolicyViolation::DnsSanNotNodeAddress)
    );
    assert_eq!(judge(&with, &csr(SERVING), Some(&ip_only)), Ok(String::from("node-1")));
}

#[cfg_attr(miri, ignore = "ECDSA signature checks: minutes each")]
#[test]
fn refuses_sans_that_are_not_the_nodes() {
    use PolicyViolation::*;
    let p = ServingPolicy::default();
    let other_ip = [
        NodeAddress { kind: AddressType::InternalIp, address: "10.0.0.8" },
        NodeAddress { kind: AddressType::Hostname, address: "node-1.example.com" },
    ];
    assert_eq!(judge(&p, &csr(SERVING), Some(&other_ip)), refused(IpSanNotNodeAddress));
    let other_name = [
        NodeAddress { kind: AddressType::InternalIp, address: "10.0.0.7" },
        NodeAddress { kind: AddressType::Hostname, address: "node-2.example.com" },
    ];
    assert_eq!(judge(&p, &csr(SERVING), Some(&other_name)), refused(DnsSanNotNodeAddress));
    // An address of the wrong kind does not count: the IP as a Hostname, the name as an IP (the
    // DNS SAN comes first in SERVING).
    let wrong_kinds = [
        NodeAddress { kind: AddressType::Hostname, address: "10.0.0.7" },
        NodeAddress { kind: AddressType::InternalIp, address: "node-1.example.com" },
        NodeAddress { kind: AddressType::Other, address: "10.0.0.7" },
    ];
    assert_eq!(judge(&p, &csr(SERVING), Some(&wrong_kinds)), refused(DnsSanNotNodeAddress));
    let ip_as_hostname = [
        NodeAddress { kind: AddressType::Hostname, address: "10.0.0.7" },
        NodeAddress { kind: AddressType::InternalDns, address: "node-1.example.com" },
    ];
    assert_eq!(judge(&p, &csr(SERVING), Some(&ip_as_hostname)), refused(IpSanNotNodeAddress));
    assert_eq!(judge(&p, &csr(SERVING), Some(&[])), refused(NodeNoAddresses));
    assert_eq!(judge(&p, &csr(SERVING), None), refused(NodeNotFound));
    // Another node's pattern does not help.
    let patterns = [DnsPattern::parse("node-1.{node}").unwrap()];
    let with = ServingPolicy { dns_patterns: &patterns, ..p };
    assert_eq!(judge(&with, &csr(SERVING), Some(&other_name)), refused(DnsSanNotNodeAddress));
    // The offending SAN is named.
    let mut scratch = [0u8; 2048];
    let req = p.check_request(&csr(SERVING), &mut scratch).unwrap();
    let f = p.foreign_san(req.node_name, &req.request, &other_name).unwrap();
    assert_eq!(f.violation, DnsSanNotNodeAddress);
    assert_eq!(f.san, SubjectAltName::Dns("node-1.example.com"));
}

#[cfg_attr(miri, ignore = "ECDSA signature checks: minutes each")]
#[test]
fn ip_families_are_not_mixed() {
    use PolicyViolation::*;
    let p = ServingPolicy::default();
    let v4_only = [
        NodeAddress { kind: AddressType::InternalIp, address: "fd00::7" },
        NodeAddress { kind: AddressType::InternalIp, address: "10.0.0.7" },
        NodeAddress { kind: AddressType::Hostname, address: "node-1.example.com" },
    ];
    // V6 holds fd00::7, ::ffff:10.0.0.7 (an IPv4-mapped address: not the node's IPv4 address).
    assert_eq!(judge(&p, &csr(V6), Some(&v4_only)), refused(IpSanNotNodeAddress));
    let mapped = [
        NodeAddress { kind: AddressType::InternalIp, address: "fd00:0::7" },
        NodeAddress { kind: AddressType::ExternalIp, address: "::ffff:10.0.0.7" },
        NodeAddress { kind: AddressType::InternalDns, address: "node-1.example.com" },
    ];
    assert_eq!(judge(&p, &csr(V6), Some(&mapped)), Ok(String::from("node-1")));
    let bad_literal = [NodeAddress { kind: AddressType::InternalIp, address: "fd00::7/64" }];
    assert_eq!(judge(&p, &csr(V6), Some(&bad_literal)), refused(IpSanNotNodeAddress));
}

#[cfg_attr(miri, ignore = "ECDSA signature checks: minutes each")]
#[test]
fn refuses_requesters_that_are_not_that_node() {
    use PolicyViolation::*;
    let p = ServingPolicy::default();
    let a = Some(NODE_1_ADDRESSES);
    // A CSR for node-1 sent by node-2.
    let c = ServingCsr { username: "system:node:node-2", ..csr(SERVING) };
    assert_eq!(judge(&p, &c, a), refused(NodeMismatch));
    // system:node:node-1 is a prefix of system:node:node-10's CN, not the same node.
    let c = ServingCsr { username: "system:node:node-10", ..csr(SERVING) };
    assert_eq!(judge(&p, &c, a), refused(NodeMismatch));
    for (user, groups) in [
        ("kubernetes-admin", NODES),
        ("system:bootstrap:abcdef", &["system:bootstrappers", "system:nodes"][..]),
        (NODE_1, &["system:authenticated"][..]),
        ("system:node:", NODES),
        ("system:node:Node_1", NODES),
        ("system:serviceaccount:kube-system:x", NODES),
    ] {
        let c = ServingCsr { username: user, groups, ..csr(SERVING) };
        assert_eq!(judge(&p, &c, a), refused(Requester), "{user}");
    }
}

#[cfg_attr(miri, ignore = "ECDSA signature checks: minutes each")]
#[test]
fn refuses_what_the_shape_rules_refuse() {
    use PolicyViolation::*;
    let p = ServingPolicy::default();
    let a = Some(NODE_1_ADDRESSES);
    let client = [USAGE_DIGITAL_SIGNATURE, USAGE_CLIENT_AUTH];
    assert_eq!(
        judge(&p, &ServingCsr { usages: &client, ..csr(SERVING) }, a),
        refused(ServingUsages)
    );
    let both = [USAGE_DIGITAL_SIGNATURE, USAGE_SERVER_AUTH, USAGE_CLIENT_AUTH];
    assert_eq!(judge(&p, &ServingCsr { usages: &both, ..csr(SERVING) }, a), refused(ServingUsages));
    assert_eq!(judge(&p, &csr(CLIENT), a), refused(SanRequired));
    assert_eq!(judge(&p, &csr(ALLSANS), a), refused(EmailSanNotAllowed));
    let other_signer = ServingCsr { signer: crate::policy::SIGNER_CLIENT, ..csr(SERVING) };
    assert_eq!(judge(&p, &other_signer, a), refused(Signer));
    assert_eq!(
        judge(&p, &ServingCsr { expiration_seconds: Some(599), ..csr(SERVING) }, a),
        refused(ExpirationTooShort)
    );
    assert_eq!(
        judge(&p, &ServingCsr { expiration_seconds: Some(-1), ..csr(SERVING) }, a),
        refused(ExpirationTooShort)
    );
    assert_eq!(judge(&p, &csr(OTHER_SAN), a), refused(OtherSanNotAllowed));
}

#[cfg_attr(miri, ignore = "ECDSA signature checks: minutes each")]
#[test]
fn expiration_maximum() {
    use PolicyViolation::*;
    let p = ServingPolicy::default();
    let a = Some(NODE_1_ADDRESSES);
    let at = |s| ServingCsr { expiration_seconds: Some(s), ..csr(SERVING) };
    assert!(judge(&p, &at(i64::from(DEFAULT_MAX_EXPIRATION_SECONDS)), a).is_ok());
    assert_eq!(
        judge(&p, &at(i64::from(DEFAULT_MAX_EXPIRATION_SECONDS) + 1), a),
        refused(ExpirationTooLong)
    );
    assert_eq!(judge(&p, &at(i64::MAX), a), refused(ExpirationTooLong));
    let short = ServingPolicy { max_expiration_seconds: 3600, ..p };
    assert!(judge(&short, &at(3600), a).is_ok());
    assert_eq!(judge(&short, &at(3601), a), refused(ExpirationTooLong));
}

#[cfg_attr(miri, ignore = "ECDSA signature checks: minutes each")]
#[test]
fn request_bytes() {
    use PolicyViolation::*;
    let p = ServingPolicy::default();
    let a = Some(NODE_1_ADDRESSES);
    let twice = std::format!("{SERVING}{SERVING}");
    assert_eq!(judge(&p, &csr(&twice), a), refused(ExtraPemData));
    let trailing = std::format!("{SERVING}trailing text\n");
    assert_eq!(judge(&p, &csr(&trailing), a), refused(ExtraPemData));
    let leading = std::format!("leading text\n{SERVING}");
    assert_eq!(judge(&p, &csr(&leading), a), refused(ExtraPemData));
    let other_block = std::format!("{SERVING}-----BEGIN X-----\nAAAA\n-----END X-----\n");
    assert_eq!(judge(&p, &csr(&other_block), a), refused(ExtraPemData));
    // White space around the one block is fine.
    let spaced = std::format!("\n\n{SERVING}\n  \n");
    assert!(judge(&p, &csr(&spaced), a).is_ok());
    // Not a PEM CSR at all.
    for bad in ["", "garbage", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"] {
        assert_eq!(judge(&p, &csr(bad), a), refused(NotCertificateRequest), "{bad:?}");
    }
    // A signature that does not verify: one bit of the signed body flipped.
    let mut der = [0u8; 1024];
    let der = crate::pem::decode_first(SERVING.as_bytes(), PEM_LABEL, &mut der).unwrap().to_vec();
    let mut flipped: Vec<u8> = der.clone();
    flipped[60] ^= 1;
    let mut pem = [0u8; 2048];
    let n = crate::pem::encode(PEM_LABEL, &flipped, &mut pem).unwrap();
    let text = core::str::from_utf8(&pem[..n]).unwrap();
    assert!(matches!(
        judge(&p, &csr(text), a),
        Err(Error::Policy(BadSignature | NotCertificateRequest))
    ));
}

#[cfg(all(feature = "p384", feature = "rsa"))]
#[cfg_attr(miri, ignore = "ECDSA/RSA signature checks: minutes each")]
#[test]
fn key_types_and_sizes() {
    use PolicyViolation::*;
    let p = ServingPolicy::default();
    let a = Some(NODE_1_ADDRESSES);
    let rsa_usages = [USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, USAGE_SERVER_AUTH];
    let rsa = |pem| ServingCsr { usages: &rsa_usages, ..csr(pem) };
    assert!(judge(&p, &csr(P384), a).is_ok());
    assert!(judge(&p, &rsa(RSA2048), a).is_ok());
    assert_eq!(judge(&p, &rsa(RSA1024), a), refused(KeyNotAllowed));
    let p256_only = ServingPolicy { keys: KeyPolicy::parse("ecdsa-p256").unwrap(), ..p };
    assert!(judge(&p256_only, &csr(SERVING), a).is_ok());
    assert_eq!(judge(&p256_only, &csr(P384), a), refused(KeyNotAllowed));
    assert_eq!(judge(&p256_only, &rsa(RSA2048), a), refused(KeyNotAllowed));
    let rsa1024 = ServingPolicy { keys: KeyPolicy::parse("rsa-1024").unwrap(), ..p };
    assert!(judge(&rsa1024, &rsa(RSA1024), a).is_ok());
    let mut scratch = [0u8; 2048];
    let req = p.check_request(&rsa(RSA2048), &mut scratch).unwrap();
    assert_eq!(req.request.rsa_modulus_bits(), Some(2048));
}

#[test]
fn address_types() {
    for (s, t) in [
        ("Hostname", AddressType::Hostname),
        ("InternalIP", AddressType::InternalIp),
        ("ExternalIP", AddressType::ExternalIp),
        ("InternalDNS", AddressType::InternalDns),
        ("ExternalDNS", AddressType::ExternalDns),
        ("internalip", AddressType::Other),
        ("", AddressType::Other),
    ] {
        assert_eq!(AddressType::from_api(s), t, "{s}");
    }
    assert!(AddressType::InternalIp.is_ip() && !AddressType::InternalIp.is_dns());
    assert!(
        AddressType::Hostname.is_dns()
            && !AddressType::Other.is_ip()
            && !AddressType::Other.is_dns()
    );
}

#[test]
fn requester_nodes() {
    assert_eq!(requester_node("system:node:n.example", &["system:nodes"]), Ok("n.example"));
    assert!(requester_node("system:node:n", &[]).is_err());
    assert!(requester_node("system:node:N", &["system:nodes"]).is_err());
    let long = std::format!("system:node:{}", "a".repeat(254));
    assert!(requester_node(&long, &["system:nodes"]).is_err());
}
