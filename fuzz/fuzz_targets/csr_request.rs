//! PKCS#10 reader and kubelet CSR policy: `request::CertificateRequest::from_der` / `from_pem`,
//! every accessor, `verify_signature`, and `policy::check_kubelet_csr{,_der}` with arbitrary
//! signer / usages / expirationSeconds.
//!
//! Input layout (so that seed files are a small header + a real CSR):
//! - byte 0, flags: bit 0 = the CSR is PEM text (else DER); bits 1–2 = signer (0 client,
//!   1 serving, 2 legacy-unknown, 3 custom); bit 3 = expirationSeconds present;
//! - byte 1: number of usages (mod 8), then that many bytes indexing `USAGES` (mod len);
//! - custom signer: one length byte (mod 64) and that many bytes (lossy UTF-8);
//! - expirationSeconds: 4 bytes little endian;
//! - the rest: the CSR.
#![no_main]

use der::Tag;
use kubeboot::error::PolicyViolation;
use kubeboot::policy::{self, KubeletSigner};
use kubeboot::request::{AttributeKind, CertificateRequest, SubjectAltName};
use kubeboot::{Error, pem};
use libfuzzer_sys::fuzz_target;

const USAGES: [&str; 26] = [
    policy::USAGE_DIGITAL_SIGNATURE,
    policy::USAGE_CLIENT_AUTH,
    policy::USAGE_SERVER_AUTH,
    policy::USAGE_KEY_ENCIPHERMENT,
    policy::USAGE_SIGNING,
    policy::USAGE_CONTENT_COMMITMENT,
    policy::USAGE_KEY_AGREEMENT,
    policy::USAGE_DATA_ENCIPHERMENT,
    policy::USAGE_CERT_SIGN,
    policy::USAGE_CRL_SIGN,
    policy::USAGE_ENCIPHER_ONLY,
    policy::USAGE_DECIPHER_ONLY,
    policy::USAGE_ANY,
    policy::USAGE_CODE_SIGNING,
    policy::USAGE_EMAIL_PROTECTION,
    policy::USAGE_SMIME,
    policy::USAGE_IPSEC_END_SYSTEM,
    policy::USAGE_IPSEC_TUNNEL,
    policy::USAGE_IPSEC_USER,
    policy::USAGE_TIMESTAMPING,
    policy::USAGE_OCSP_SIGNING,
    policy::USAGE_MICROSOFT_SGC,
    policy::USAGE_NETSCAPE_SGC,
    "bogus",
    "",
    "Digital Signature",
];

struct Input<'a> {
    pem: bool,
    signer: String,
    usages: Vec<&'static str>,
    expiration: Option<u32>,
    csr: &'a [u8],
}

fn split(data: &[u8]) -> Option<Input<'_>> {
    let (&flags, rest) = data.split_first()?;
    let (&n, mut rest) = rest.split_first()?;
    let mut usages = Vec::new();
    for _ in 0..n % 8 {
        let (&i, r) = rest.split_first()?;
        usages.push(USAGES[usize::from(i) % USAGES.len()]);
        rest = r;
    }
    let signer = match (flags >> 1) & 3 {
        0 => policy::SIGNER_CLIENT.to_owned(),
        1 => policy::SIGNER_SERVING.to_owned(),
        2 => policy::SIGNER_LEGACY_UNKNOWN.to_owned(),
        _ => {
            let (&l, r) = rest.split_first()?;
            let l = usize::from(l % 64).min(r.len());
            let s = String::from_utf8_lossy(&r[..l]).into_owned();
            rest = &r[l..];
            s
        }
    };
    let expiration = if flags & 8 != 0 {
        let b = rest.get(..4)?;
        rest = &rest[4..];
        Some(u32::from_le_bytes(b.try_into().unwrap()))
    } else {
        None
    };
    Some(Input { pem: flags & 1 != 0, signer, usages, expiration, csr: rest })
}

fn within(outer: &[u8], inner: &[u8]) -> bool {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    i >= o && i + inner.len() <= o + outer.len()
}

fn exercise(req: &CertificateRequest<'_>) {
    let der = req.der();
    for part in
        [req.info_der(), req.subject_der(), req.spki_der(), req.public_key(), req.signature()]
    {
        assert!(within(der, part));
    }
    assert_eq!(CertificateRequest::from_der(der).as_ref(), Ok(req));
    let _ = (req.key_algorithm(), req.signature_algorithm());

    let mut last_cn = None;
    for a in req.subject() {
        let _ = (a.oid_bytes(), a.tag(), a.value_bytes(), a.kind());
        let chars: String = a.chars().collect();
        let t61_not_utf8 =
            a.tag() == Tag::TeletexString && core::str::from_utf8(a.value_bytes()).is_err();
        if t61_not_utf8 {
            // Go keeps the bytes (string(value)): equal to no UTF-8 text; `range` reads U+FFFD
            // for each byte of an ill-formed sequence (std's utf8_chunks finds them).
            let mut go = String::new();
            for chunk in a.value_bytes().utf8_chunks() {
                go.push_str(chunk.valid());
                go.extend(chunk.invalid().iter().map(|_| char::REPLACEMENT_CHARACTER));
            }
            assert_eq!(chars, go);
            assert!(!a.eq_str(&chars) && a.starts_with(""));
            let ascii: String = chars.chars().take_while(char::is_ascii).collect();
            assert!(a.starts_with(&ascii));
        } else if a.is_string() {
            assert!(a.eq_str(&chars));
            assert!(a.starts_with(""));
            assert!(a.starts_with(&chars));
            if let Some(s) = a.as_str() {
                assert_eq!(s, chars);
            }
        } else {
            assert!(!a.eq_str(&chars));
        }
        if a.kind() == AttributeKind::CommonName && a.is_string() {
            last_cn = Some(a);
        }
    }
    assert_eq!(req.common_name(), last_cn);
    for o in req.organizations() {
        assert_eq!(o.kind(), AttributeKind::Organization);
        assert!(o.is_string());
    }
    for san in req.sans() {
        match san {
            SubjectAltName::Ip(b) => assert!(b.len() == 4 || b.len() == 16),
            SubjectAltName::Dns(s) | SubjectAltName::Email(s) | SubjectAltName::Uri(s) => {
                assert!(s.is_ascii())
            }
            _ => {}
        }
    }
    match req.verify_signature() {
        Ok(()) => {}
        Err(Error::Policy(
            PolicyViolation::BadSignature
            | PolicyViolation::UnsupportedKey
            | PolicyViolation::NotCertificateRequest,
        )) => {}
        Err(e) => panic!("undocumented verify error {e:?}"),
    }
}

fn to_pem(der: &[u8]) -> Vec<u8> {
    let len = pem::encoded_len("CERTIFICATE REQUEST", der.len()).unwrap();
    let mut buf = vec![0u8; len];
    let n = pem::encode("CERTIFICATE REQUEST", der, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn check_policy(input: &Input<'_>, der: &[u8]) {
    let via_der =
        policy::check_kubelet_csr_der(der, &input.signer, &input.usages, input.expiration);
    if der.is_empty() {
        // No PEM form: the encoder refuses empty bodies (it could not read them back).
        assert!(via_der.is_err());
        return;
    }
    let pem_text = to_pem(der);
    let mut scratch = vec![0u8; der.len() + 3];
    let via_pem = policy::check_kubelet_csr(
        &pem_text,
        &input.signer,
        &input.usages,
        input.expiration,
        &mut scratch,
    );
    assert_eq!(via_der.as_ref().map(|c| c.signer), via_pem.as_ref().map(|c| c.signer));
    assert_eq!(via_der.as_ref().err(), via_pem.as_ref().err());
    match via_der {
        Ok(checked) => {
            let req = checked.request;
            assert_eq!(req.verify_signature(), Ok(()));
            assert!(policy::validate_usages(&input.usages).is_ok());
            assert!(policy::validate_signer_name(&input.signer).is_ok());
            assert_eq!(KubeletSigner::from_name(&input.signer), Some(checked.signer));
            assert_eq!(checked.signer.name(), input.signer);
            let orgs: Vec<_> = req.organizations().collect();
            assert!(orgs.len() == 1 && orgs[0].eq_str(policy::NODES_ORGANIZATION));
            assert!(req.common_name().is_some_and(|cn| cn.starts_with(policy::NODE_CN_PREFIX)));
            assert!(input.expiration.is_none_or(|e| e >= policy::MIN_EXPIRATION_SECONDS));
            let auth = match checked.signer {
                KubeletSigner::Client => {
                    assert!(req.sans().all(|s| matches!(s, SubjectAltName::Other { .. })));
                    policy::USAGE_CLIENT_AUTH
                }
                KubeletSigner::Serving => {
                    assert!(
                        req.sans()
                            .any(|s| matches!(s, SubjectAltName::Dns(_) | SubjectAltName::Ip(_)))
                    );
                    assert!(
                        !req.sans().any(|s| matches!(
                            s,
                            SubjectAltName::Email(_) | SubjectAltName::Uri(_)
                        ))
                    );
                    policy::USAGE_SERVER_AUTH
                }
            };
            assert!(input.usages.contains(&policy::USAGE_DIGITAL_SIGNATURE));
            assert!(input.usages.contains(&auth));
            assert!(input.usages.iter().all(|u| {
                [policy::USAGE_DIGITAL_SIGNATURE, policy::USAGE_KEY_ENCIPHERMENT, auth].contains(u)
            }));
        }
        Err(Error::Policy(_) | Error::Malformed) => {}
        Err(e) => panic!("undocumented policy error {e:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = split(data) else { return };
    // Whatever the flags say, the bytes are tried as DER and as PEM.
    let direct = CertificateRequest::from_der(input.csr);
    if let Ok(req) = &direct {
        exercise(req);
        // PEM of the same DER parses to the same thing.
        let p = to_pem(input.csr);
        let mut scratch = vec![0u8; input.csr.len() + 3];
        let via = CertificateRequest::from_pem(&p, &mut scratch).expect("PEM of a parsing CSR");
        assert_eq!(via.der(), input.csr);
        // A scratch buffer one byte short fails cleanly.
        let mut short = vec![0u8; input.csr.len() - 1];
        assert!(matches!(
            CertificateRequest::from_pem(&p, &mut short),
            Err(Error::BufferTooSmall { .. })
        ));
    } else if let Err(e) = direct {
        assert_eq!(e, Error::Malformed);
    }
    let mut scratch = vec![0u8; input.csr.len()];
    let from_pem = CertificateRequest::from_pem(input.csr, &mut scratch);
    match &from_pem {
        Ok(req) => exercise(req),
        Err(
            Error::Malformed
            | Error::BufferTooSmall { .. }
            | Error::Policy(PolicyViolation::NotCertificateRequest),
        ) => {}
        Err(e) => panic!("undocumented from_pem error {e:?}"),
    }
    let der_owned;
    let der: &[u8] = if input.pem {
        match from_pem {
            Ok(req) => {
                der_owned = req.der().to_vec();
                &der_owned
            }
            Err(_) => return,
        }
    } else {
        input.csr
    };
    check_policy(&input, der);
});
