//! Property tests: whatever valid inputs we build a CSR from, an independent parser (x509-cert)
//! reads back the same subject, key, SANs and a signature that verifies.

use der::{Decode, Encode};
use p256::ecdsa::{DerSignature, VerifyingKey, signature::Verifier};
use proptest::prelude::*;
use std::net::IpAddr;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::request::CertReq;

use kubeboot::csr::CsrBuilder;
use kubeboot::key::NodeKey;

fn label() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?"
}

fn node_name() -> impl Strategy<Value = String> {
    prop::collection::vec(label(), 1..4)
        .prop_map(|v| v.join("."))
        .prop_filter("≤253", |s| s.len() <= 253)
}

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![any::<[u8; 4]>().prop_map(IpAddr::from), any::<[u8; 16]>().prop_map(IpAddr::from),]
}

struct Parsed {
    cn: String,
    o: Vec<String>,
    dns: Vec<String>,
    ips: Vec<IpAddr>,
}

fn parse(der: &[u8], key: &NodeKey) -> Parsed {
    let req = CertReq::from_der(der).expect("x509-cert parses our CSR");
    // Signature over the re-encoded info verifies with our key.
    let tbs = req.info.to_der().unwrap();
    let sig = DerSignature::from_bytes(req.signature.raw_bytes()).unwrap();
    let vk =
        VerifyingKey::from_sec1_bytes(req.info.public_key.subject_public_key.raw_bytes()).unwrap();
    assert_eq!(vk, *key.verifying_key());
    vk.verify(&tbs, &sig).expect("signature verifies");
    assert_eq!(req.info.public_key.to_der().unwrap(), key.public_key_spki());

    let mut cn = String::new();
    let mut o = Vec::new();
    let rdns: Vec<_> = req.info.subject.iter_rdn().collect();
    assert_eq!(rdns.len(), 2, "two RDNs");
    for rdn in rdns {
        for atv in rdn.iter() {
            let v = der::asn1::PrintableStringRef::try_from(&atv.value).expect("PrintableString");
            match atv.oid.to_string().as_str() {
                "2.5.4.3" => cn = v.to_string(),
                "2.5.4.10" => o.push(v.to_string()),
                other => panic!("unexpected attribute {other}"),
            }
        }
    }
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    for attr in req.info.attributes.iter() {
        assert_eq!(attr.oid.to_string(), "1.2.840.113549.1.9.14");
        for v in attr.values.iter() {
            let exts: x509_cert::ext::Extensions = v.decode_as().unwrap();
            for ext in exts {
                assert_eq!(ext.extn_id.to_string(), "2.5.29.17");
                assert!(!ext.critical);
                let san = SubjectAltName::from_der(ext.extn_value.as_bytes()).unwrap();
                for gn in san.0 {
                    match gn {
                        GeneralName::DnsName(d) => dns.push(d.to_string()),
                        GeneralName::IpAddress(b) => {
                            let b = b.as_bytes();
                            ips.push(match b.len() {
                                4 => IpAddr::from(<[u8; 4]>::try_from(b).unwrap()),
                                16 => IpAddr::from(<[u8; 16]>::try_from(b).unwrap()),
                                n => panic!("ip of {n} bytes"),
                            });
                        }
                        other => panic!("unexpected SAN {other:?}"),
                    }
                }
            }
        }
    }
    Parsed { cn, o, dns, ips }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn client_csr_round_trips(node in node_name(), seed in any::<[u8; 32]>()) {
        let Ok(key) = NodeKey::from_entropy(&seed) else { return Ok(()); };
        let b = CsrBuilder::client(&node).unwrap();
        let mut buf = vec![0u8; b.max_der_len()];
        let n = b.write_der(&key, &mut buf).unwrap();
        let p = parse(&buf[..n], &key);
        prop_assert_eq!(p.cn, format!("system:node:{node}"));
        prop_assert_eq!(p.o, vec!["system:nodes".to_string()]);
        prop_assert!(p.dns.is_empty() && p.ips.is_empty());
    }

    #[test]
    fn serving_csr_round_trips(
        node in node_name(),
        dns in prop::collection::vec(node_name(), 0..5),
        ips in prop::collection::vec(ip(), 0..5),
        seed in any::<[u8; 32]>(),
    ) {
        prop_assume!(!dns.is_empty() || !ips.is_empty());
        let Ok(key) = NodeKey::from_entropy(&seed) else { return Ok(()); };
        let dns_refs: Vec<&str> = dns.iter().map(String::as_str).collect();
        let b = match CsrBuilder::serving(&node, &dns_refs, &ips) {
            Ok(b) => b,
            Err(kubeboot::Error::TooManySans) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        let mut buf = vec![0u8; b.max_pem_len()];
        let n = b.write_pem(&key, &mut buf).unwrap();
        let mut der = vec![0u8; n];
        let der = kubeboot::pem::decode_first(&buf[..n], "CERTIFICATE REQUEST", &mut der).unwrap();
        let p = parse(der, &key);
        prop_assert_eq!(p.cn, format!("system:node:{node}"));
        prop_assert_eq!(p.dns, dns);
        prop_assert_eq!(p.ips, ips);
    }
}
