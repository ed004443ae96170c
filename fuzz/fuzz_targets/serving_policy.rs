//! The serving approver's judgement: `policy::serving::ServingPolicy::{check, check_request,
//! check_request_with, foreign_san, check_sans}`, `requester_node`, `AddressType::from_api`.
//!
//! Input layout (so that seed files are a small header + a real CSR):
//! - byte 0, flags: bits 0–1 = requester (`system:node:node-1`, `system:node:node-2`, the admin,
//!   `system:node:` + the text of byte 2's pool); bit 2 = in `system:nodes`; bit 3 =
//!   expirationSeconds present; bit 4 = the pattern `{node}.example.com`; bit 5 = no Node;
//! - byte 1: usages (0 serving, 1 serving with key encipherment, 2 client, 3 none);
//! - byte 2: number of Node addresses (mod 6), then two bytes each: type, value (from pools);
//! - expirationSeconds: 4 bytes little endian (`i32`);
//! - the rest: `spec.request`.
#![no_main]

use std::net::IpAddr;

use kubeboot::backend::ring::Ring;
use kubeboot::error::PolicyViolation;
use kubeboot::policy::serving::{AddressType, DnsPattern, NodeAddress, ServingCsr, ServingPolicy};
use kubeboot::policy::{self, SIGNER_SERVING};
use kubeboot::request::SubjectAltName;
use kubeboot::{Error, pem};
use libfuzzer_sys::fuzz_target;

const TYPES: [&str; 7] =
    ["InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS", "Other", ""];
const VALUES: [&str; 10] = [
    "10.0.0.7",
    "10.0.0.8",
    "node-1.example.com",
    "NODE-1.EXAMPLE.COM",
    "node-2.example.com",
    "fd00::7",
    "::ffff:10.0.0.7",
    "",
    "10.0.0.7/32",
    "node-1",
];
const NAMES: [&str; 4] = ["node-1", "Node_1", "", "node-1.example.com"];

fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = data.split_at_checked(n)?;
    *data = rest;
    Some(head)
}

fuzz_target!(|data: &[u8]| {
    let mut d = data;
    let Some(&[flags, usage_choice, count]) =
        take(&mut d, 3).map(|h| <&[u8; 3]>::try_from(h).unwrap())
    else {
        return;
    };
    let mut addresses = Vec::new();
    for _ in 0..count % 6 {
        let Some(&[t, v]) = take(&mut d, 2).map(|h| <&[u8; 2]>::try_from(h).unwrap()) else {
            return;
        };
        let kind = AddressType::from_api(TYPES[usize::from(t) % TYPES.len()]);
        addresses.push(NodeAddress { kind, address: VALUES[usize::from(v) % VALUES.len()] });
    }
    let expiration = if flags & 8 != 0 {
        let Some(b) = take(&mut d, 4) else { return };
        Some(i64::from(i32::from_le_bytes(b.try_into().unwrap())))
    } else {
        None
    };
    let custom = format!("system:node:{}", NAMES[usize::from(count) % NAMES.len()]);
    let username = match flags & 3 {
        0 => "system:node:node-1",
        1 => "system:node:node-2",
        2 => "kubernetes-admin",
        _ => custom.as_str(),
    };
    let groups: &[&str] = if flags & 4 != 0 {
        &["system:authenticated", "system:nodes"]
    } else {
        &["system:authenticated"]
    };
    let usages: &[&str] = match usage_choice % 4 {
        0 => &[policy::USAGE_DIGITAL_SIGNATURE, policy::USAGE_SERVER_AUTH],
        1 => &[
            policy::USAGE_KEY_ENCIPHERMENT,
            policy::USAGE_DIGITAL_SIGNATURE,
            policy::USAGE_SERVER_AUTH,
        ],
        2 => &[policy::USAGE_DIGITAL_SIGNATURE, policy::USAGE_CLIENT_AUTH],
        _ => &[],
    };
    let patterns = [DnsPattern::parse("{node}.example.com").unwrap()];
    let policy = ServingPolicy {
        dns_patterns: if flags & 16 != 0 { &patterns } else { &[] },
        ..ServingPolicy::default()
    };
    let csr = ServingCsr {
        signer: SIGNER_SERVING,
        username,
        groups,
        request: d,
        usages,
        expiration_seconds: expiration,
    };
    let node = if flags & 32 != 0 { None } else { Some(addresses.as_slice()) };

    let mut scratch = vec![0u8; d.len()];
    let soft =
        policy.check_request(&csr, &mut scratch).map(|r| (r.node_name, r.request.der().to_vec()));
    let mut scratch2 = vec![0u8; d.len()];
    let ring = policy
        .check_request_with(&Ring, &csr, &mut scratch2)
        .map(|r| (r.node_name, r.request.der().to_vec()));
    assert_eq!(soft, ring, "the backends agree");

    let mut scratch3 = vec![0u8; d.len()];
    let verdict = policy.check(&csr, node, &mut scratch3);
    match verdict {
        Ok(name) => {
            // Everything the module promises, read independently where we can.
            assert_eq!(Some(name), username.strip_prefix("system:node:"));
            assert!(groups.contains(&"system:nodes"));
            let blocks: Vec<_> = pem::blocks(d).collect();
            assert_eq!(blocks.len(), 1);
            let block = blocks[0].unwrap();
            assert_eq!(block.label, "CERTIFICATE REQUEST");
            assert_eq!(block.text.trim_ascii(), d.trim_ascii());
            assert!(
                expiration
                    .is_none_or(|e| (600..=i64::from(policy.max_expiration_seconds)).contains(&e))
            );
            assert!(usages.contains(&policy::USAGE_SERVER_AUTH));
            let addresses = node.unwrap();
            let mut buf = vec![0u8; d.len()];
            let req = kubeboot::request::CertificateRequest::from_pem(d, &mut buf).unwrap();
            let cn = req.common_name().unwrap();
            assert!(cn.eq_str(&format!("system:node:{name}")));
            let mut sans = 0;
            for san in req.sans() {
                sans += 1;
                match san {
                    SubjectAltName::Ip(ip) => assert!(addresses.iter().any(|a| {
                        matches!(a.kind, AddressType::InternalIp | AddressType::ExternalIp)
                            && match a.address.parse::<IpAddr>() {
                                Ok(IpAddr::V4(v)) => ip == v.octets(),
                                Ok(IpAddr::V6(v)) => ip == v.octets(),
                                Err(_) => false,
                            }
                    })),
                    SubjectAltName::Dns(n) => assert!(
                        addresses.iter().any(|a| {
                            matches!(
                                a.kind,
                                AddressType::Hostname
                                    | AddressType::InternalDns
                                    | AddressType::ExternalDns
                            ) && a.address.eq_ignore_ascii_case(n)
                        }) || (flags & 16 != 0
                            && n.eq_ignore_ascii_case(&format!("{name}.example.com")))
                    ),
                    other => panic!("approved with {other:?}"),
                }
            }
            assert!(sans > 0);
        }
        Err(Error::Policy(v)) => {
            if v == PolicyViolation::NodeNotFound {
                assert!(node.is_none() && soft.is_ok());
            }
            if v == PolicyViolation::NodeNoAddresses {
                assert!(node.is_some_and(|a| a.is_empty()));
            }
            if matches!(
                v,
                PolicyViolation::IpSanNotNodeAddress | PolicyViolation::DnsSanNotNodeAddress
            ) {
                assert!(soft.is_ok());
            }
        }
        Err(Error::BufferTooSmall { .. }) => {
            panic!("the scratch as long as the PEM always holds its DER")
        }
        Err(_) => {}
    }
});
