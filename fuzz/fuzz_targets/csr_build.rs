//! Structure-aware CSR builder: arbitrary node name / DNS / IPs / entropy → `CsrBuilder`
//! (`write_der`, `write_pem`, `write_tbs` + `assemble`) never panics; every CSR it writes
//! re-parses with `request::CertificateRequest`, verifies, carries exactly the requested
//! subject and SANs, and passes the kubelet policy for its profile.
#![no_main]

use std::net::IpAddr;

use arbitrary::Arbitrary;
use kubeboot::csr::{self, CsrBuilder, MAX_CSR_DER, Profile};
use kubeboot::key::{NodeKey, P256Signer};
use kubeboot::policy::{self, KubeletSigner};
use kubeboot::request::{CertificateRequest, SubjectAltName};
use kubeboot::{Error, api, pem};
use libfuzzer_sys::fuzz_target;

/// A name: usually built from DNS-ish labels so that the builder accepts it, sometimes raw.
#[derive(Arbitrary, Debug)]
enum Name<'a> {
    Labels(Vec<&'a [u8]>),
    Raw(&'a str),
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    node: Name<'a>,
    serving: bool,
    dns: Vec<Name<'a>>,
    ips: Vec<IpAddr>,
    entropy: [u8; 32],
    /// Extra/short buffer sizes to try.
    slack: i16,
    /// An arbitrary "signature" for `assemble`.
    rs: [u8; 64],
}

fn render(n: &Name<'_>, node: bool) -> String {
    match n {
        Name::Raw(s) => (*s).to_owned(),
        Name::Labels(labels) => {
            let alpha: &[u8] = if node {
                b"abcdefghijklmnopqrstuvwxyz0123456789-"
            } else {
                b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
            };
            let mut parts = Vec::new();
            for l in labels.iter().take(8) {
                let mut s: String = l
                    .iter()
                    .take(70)
                    .map(|&b| alpha[usize::from(b) % alpha.len()] as char)
                    .collect();
                if s.is_empty() || s.starts_with('-') {
                    s.insert(0, 'a');
                }
                if s.ends_with('-') || (node && s.ends_with('_')) {
                    s.push('z');
                }
                parts.push(s);
            }
            if parts.is_empty() {
                parts.push("n".into());
            }
            parts.join(".")
        }
    }
}

fn check_csr(der: &[u8], node: &str, dns: &[&str], ips: &[IpAddr], serving: bool, key: &NodeKey) {
    let req = CertificateRequest::from_der(der).expect("builder output parses");
    req.verify_signature().expect("builder output verifies");
    assert_eq!(req.spki_der(), &key.public_key_spki()[..]);
    let cn = req.common_name().expect("CN");
    assert!(cn.eq_str(&format!("system:node:{node}")));
    let orgs: Vec<_> = req.organizations().collect();
    assert_eq!(orgs.len(), 1);
    assert!(orgs[0].eq_str(csr::NODES_GROUP));
    let mut want: Vec<SubjectAltName<'_>> = dns.iter().map(|d| SubjectAltName::Dns(d)).collect();
    let octets: Vec<Vec<u8>> = ips
        .iter()
        .map(|ip| match ip {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        })
        .collect();
    want.extend(octets.iter().map(|o| SubjectAltName::Ip(o)));
    let got: Vec<_> = req.sans().collect();
    assert_eq!(got, want);

    // The kubelet policy accepts what the builder writes, with the kubelet's EC usages.
    let (signer, usages) = if serving {
        (policy::SIGNER_SERVING, api::USAGES_SERVING_EC)
    } else {
        (policy::SIGNER_CLIENT, api::USAGES_CLIENT_EC)
    };
    let checked = policy::check_kubelet_csr_der(der, signer, &usages, Some(3600))
        .unwrap_or_else(|e| panic!("policy refused builder output for {node:?} {dns:?}: {e:?}"));
    assert_eq!(
        checked.signer,
        if serving { KubeletSigner::Serving } else { KubeletSigner::Client }
    );
}

fuzz_target!(|input: Input<'_>| {
    let Ok(key) = NodeKey::from_entropy(&input.entropy) else { return };
    let node = render(&input.node, true);
    let dns_s: Vec<String> = input.dns.iter().take(24).map(|d| render(d, false)).collect();
    let dns: Vec<&str> = dns_s.iter().map(String::as_str).collect();
    let ips: Vec<IpAddr> = input.ips.iter().take(24).copied().collect();

    let built = if input.serving {
        CsrBuilder::serving(&node, &dns, &ips)
    } else {
        CsrBuilder::client(&node)
    };
    let b = match built {
        Ok(b) => b,
        Err(e) => {
            assert!(
                matches!(
                    e,
                    Error::InvalidNodeName
                        | Error::InvalidDnsName
                        | Error::TooManySans
                        | Error::Policy(kubeboot::error::PolicyViolation::SanRequired)
                ),
                "undocumented builder error {e:?}"
            );
            if e == Error::InvalidNodeName {
                assert!(csr::validate_node_name(&node).is_err());
            }
            return;
        }
    };
    assert!(csr::validate_node_name(&node).is_ok());
    assert_eq!(b.node_name(), node);
    let (dns, ips): (&[&str], &[IpAddr]) = match b.profile() {
        Profile::Client => (&[], &[]),
        Profile::Serving { dns, ips } => (dns, ips),
    };
    assert_eq!(b.common_name().as_str(), format!("system:node:{node}"));

    // DER.
    let max = b.max_der_len();
    assert!(max <= MAX_CSR_DER);
    let mut der = vec![0u8; max];
    let n = b.write_der(&key, &mut der).expect("max_der_len suffices");
    assert!(n <= max);
    let der = &der[..n];
    check_csr(der, &node, dns, ips, input.serving, &key);
    if max > 0 {
        let short = max.saturating_sub(usize::from(input.slack.unsigned_abs()).max(1));
        let mut small = vec![0u8; short];
        assert_eq!(b.write_der(&key, &mut small), Err(Error::BufferTooSmall { needed: max }));
    }

    // PEM: same DER (RFC 6979 signatures are deterministic).
    let pmax = b.max_pem_len();
    let mut p = vec![0u8; pmax];
    let pn = b.write_pem(&key, &mut p).expect("max_pem_len suffices");
    let mut back = vec![0u8; MAX_CSR_DER];
    let block = pem::blocks(&p[..pn]).next().expect("one block").expect("block ok");
    assert_eq!(block.label, csr::LABEL_CSR);
    assert_eq!(block.decode(&mut back).expect("decodes"), der);
    let mut small = vec![0u8; pmax - 1];
    assert_eq!(b.write_pem(&key, &mut small), Err(Error::BufferTooSmall { needed: pmax }));

    // External-signer path: write_tbs + assemble gives the same CSR.
    let spki = key.public_key_spki();
    let mut tbs = vec![0u8; b.tbs_len()];
    let tn = b.write_tbs(&spki, &mut tbs).expect("tbs_len suffices");
    assert_eq!(tn, b.tbs_len());
    if tn > 0 {
        let mut short = vec![0u8; tn - 1];
        assert!(matches!(b.write_tbs(&spki, &mut short), Err(Error::BufferTooSmall { .. })));
    }
    let rs = key.sign_p256_sha256(&tbs).unwrap();
    let mut out = vec![0u8; max];
    let an = csr::assemble(&tbs, &rs, &mut out).expect("assemble fits");
    assert_eq!(&out[..an], der);

    // assemble with an arbitrary signature: never panics; when it accepts, it parses (but does
    // not verify unless we were astronomically lucky).
    match csr::assemble(&tbs, &input.rs, &mut out) {
        Ok(n) => {
            let req = CertificateRequest::from_der(&out[..n]).expect("assembled CSR parses");
            assert_eq!(req.info_der(), &tbs[..]);
        }
        Err(e) => assert!(matches!(e, Error::SignerFailed | Error::BufferTooSmall { .. }), "{e:?}"),
    }
});
