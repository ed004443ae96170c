extern crate std;
use super::fixtures::*;
use super::*;
use std::{format, string::String, vec::Vec};

fn der_of(pem: &str, buf: &mut [u8]) -> usize {
    crate::pem::decode_first(pem.as_bytes(), PEM_LABEL, buf).unwrap().len()
}

#[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
#[test]
fn reads_client_csr() {
    let mut buf = [0u8; 1024];
    let req = CertificateRequest::from_pem(CLIENT.as_bytes(), &mut buf).unwrap();
    assert_eq!(req.key_algorithm(), KeyAlgorithm::EcP256);
    assert_eq!(req.signature_algorithm(), SignatureAlgorithm::EcdsaSha256);
    let cn = req.common_name().unwrap();
    assert_eq!(cn.as_str(), Some("system:node:node-1"));
    assert!(cn.starts_with("system:node:"));
    assert!(!cn.starts_with("system:node:node-12"));
    let orgs: Vec<_> = req.organizations().map(|o| o.as_str().unwrap()).collect();
    assert_eq!(orgs, ["system:nodes"]);
    let kinds: Vec<_> = req.subject().map(|a| a.kind()).collect();
    assert_eq!(kinds, [AttributeKind::Organization, AttributeKind::CommonName]);
    assert_eq!(req.sans().count(), 0);
    // SPKI of key K1 (docs/test-vectors.md, the hash input, base64url).
    use base64ct::{Base64UrlUnpadded, Encoding};
    let mut b64 = [0u8; 200];
    let spki = Base64UrlUnpadded::encode(req.spki_der(), &mut b64).unwrap();
    assert_eq!(
        spki,
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE3wsRu9elE0goTwfLycqOCWwP4YCurXH61SN6kZB_XNw569fHfFH2a9AKDIgLcIl3WIEJ8NMDy2ANvLrpuvVJqw"
    );
    assert_eq!(req.public_key().len(), 65);
    req.verify_signature().unwrap();
}

#[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
#[test]
fn reads_sans_in_order() {
    let mut buf = [0u8; 1024];
    let req = CertificateRequest::from_pem(ALLSANS.as_bytes(), &mut buf).unwrap();
    let sans: Vec<_> = req.sans().collect();
    let mut v6 = [0u8; 16];
    v6[15] = 1;
    assert_eq!(
        sans,
        [
            SubjectAltName::Dns("a.example"),
            SubjectAltName::Email("x@example.com"),
            SubjectAltName::Uri("spiffe://x/y"),
            SubjectAltName::Ip(&v6),
        ]
    );
    req.verify_signature().unwrap();
    let req = CertificateRequest::from_pem(SERVING.as_bytes(), &mut buf).unwrap();
    let sans: Vec<_> = req.sans().collect();
    assert_eq!(
        sans,
        [SubjectAltName::Dns("node-1.example.com"), SubjectAltName::Ip(&[10, 0, 0, 7])]
    );
}

#[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
#[test]
fn key_types() {
    let mut buf = [0u8; 1024];
    let cases = [
        (P384, KeyAlgorithm::EcP384, SignatureAlgorithm::EcdsaSha384, cfg!(feature = "p384")),
        (ED, KeyAlgorithm::Ed25519, SignatureAlgorithm::Ed25519, false),
        (RSA, KeyAlgorithm::Rsa, SignatureAlgorithm::RsaSha256, cfg!(feature = "rsa")),
    ];
    for (pem, key, sig, supported) in cases {
        let req = CertificateRequest::from_pem(pem.as_bytes(), &mut buf).unwrap();
        assert_eq!(req.key_algorithm(), key);
        assert_eq!(req.signature_algorithm(), sig);
        if supported {
            req.verify_signature().unwrap();
        } else {
            assert_eq!(req.verify_signature(), Err(Error::Policy(PolicyViolation::UnsupportedKey)));
        }
    }
}

/// A backend that answers every check with one verdict and counts the calls.
struct Fixed(Verdict, core::cell::Cell<u32>);

impl SignatureVerifier for Fixed {
    fn p256_sha256(&self, _: &[u8], _: &[u8], _: &[u8; 64]) -> Verdict {
        self.1.set(self.1.get() + 1);
        self.0
    }
    fn p384_sha384(&self, _: &[u8], _: &[u8], _: &[u8; 96]) -> Verdict {
        self.1.set(self.1.get() + 1);
        self.0
    }
    fn rsa_pkcs1(
        &self,
        _: &[u8],
        _: &[u8],
        _: crate::backend::RsaHash,
        _: &[u8],
        _: &[u8],
    ) -> Verdict {
        self.1.set(self.1.get() + 1);
        self.0
    }
}

#[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
#[test]
fn self_signature_goes_through_the_given_backend() {
    let mut buf = [0u8; 1024];
    let req = CertificateRequest::from_pem(CLIENT.as_bytes(), &mut buf).unwrap();
    req.verify_signature().unwrap();
    let invalid = Fixed(Verdict::Invalid, Default::default());
    assert_eq!(
        req.verify_signature_with(&invalid),
        Err(Error::Policy(PolicyViolation::BadSignature))
    );
    let unsupported = Fixed(Verdict::Unsupported, Default::default());
    assert_eq!(
        req.verify_signature_with(&unsupported),
        Err(Error::Policy(PolicyViolation::UnsupportedKey))
    );
    assert_eq!((invalid.1.get(), unsupported.1.get()), (1, 1));
    // The policy entry points pass their backend down.
    let n = der_of(CLIENT, &mut buf);
    let usages = ["digital signature", "client auth"];
    let signer = "kubernetes.io/kube-apiserver-client-kubelet";
    assert_eq!(
        crate::policy::check_kubelet_csr_der_with(&invalid, &buf[..n], signer, &usages, None)
            .map(|_| ()),
        Err(Error::Policy(PolicyViolation::BadSignature))
    );
    assert_eq!(invalid.1.get(), 2);
}

#[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
#[test]
fn tampering_breaks_signature() {
    for pem in [CLIENT, SERVING, P384, RSA] {
        let mut buf = [0u8; 1024];
        let n = der_of(pem, &mut buf);
        let req = CertificateRequest::from_der(&buf[..n]).unwrap();
        if req.verify_signature().is_err() {
            continue; // unsupported in this build
        }
        // Flip a bit in the CN's last character (inside the signed info).
        let info = req.info_der();
        let pos = buf[..n].windows(6).position(|w| w == b"node-1").unwrap() + 5;
        assert!(pos < info.len());
        let mut copy = buf;
        copy[pos] ^= 0x01;
        let bad = CertificateRequest::from_der(&copy[..n]).unwrap();
        assert_eq!(bad.verify_signature(), Err(Error::Policy(PolicyViolation::BadSignature)));
        // And in the signature's last byte.
        let mut copy = buf;
        copy[n - 1] ^= 0x01;
        let bad = CertificateRequest::from_der(&copy[..n]).unwrap();
        assert_eq!(bad.verify_signature(), Err(Error::Policy(PolicyViolation::BadSignature)));
    }
}

#[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
#[test]
fn truncation_and_trailing_data() {
    for pem in [CLIENT, SERVING, ALLSANS, P384, ED, RSA] {
        let mut buf = [0u8; 1024];
        let n = der_of(pem, &mut buf);
        for len in 0..n {
            assert!(CertificateRequest::from_der(&buf[..len]).is_err(), "len {len}");
        }
        assert_eq!(CertificateRequest::from_der(&buf[..n + 1]), Err(Error::Malformed));
        // Flipping any single byte must never panic.
        for i in 0..n {
            let mut copy = buf;
            copy[i] ^= 0xff;
            if let Ok(req) = CertificateRequest::from_der(&copy[..n]) {
                let _ = req.verify_signature();
                let _ = req.subject().count();
                let _ = req.sans().count();
                let _ = req.common_name().map(|c| c.chars().count());
            }
        }
    }
}

#[test]
fn pem_errors() {
    let mut buf = [0u8; 1024];
    let cert = CLIENT.replace("CERTIFICATE REQUEST", "CERTIFICATE");
    assert_eq!(
        CertificateRequest::from_pem(cert.as_bytes(), &mut buf),
        Err(Error::Policy(PolicyViolation::NotCertificateRequest))
    );
    assert_eq!(
        CertificateRequest::from_pem(b"no pem here", &mut buf),
        Err(Error::Policy(PolicyViolation::NotCertificateRequest))
    );
    // Leading junk is skipped, as Go's pem.Decode does.
    let junk = format!("hello\n{CLIENT}");
    assert!(CertificateRequest::from_pem(junk.as_bytes(), &mut buf).is_ok());
    let mut small = [0u8; 16];
    assert!(matches!(
        CertificateRequest::from_pem(CLIENT.as_bytes(), &mut small),
        Err(Error::BufferTooSmall { .. })
    ));
}

proptest::proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
        if let Ok(req) = CertificateRequest::from_der(&bytes) {
            let _ = req.verify_signature();
            let _ = req.subject().count();
            let _ = req.sans().count();
        }
    }

    #[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
    #[test]
    fn mutated_fixture_never_panics(i in 0usize..1024, x in 1u8..=255, cut in 0usize..1024) {
        let mut buf = [0u8; 1024];
        let n = der_of(ALLSANS, &mut buf);
        buf[i % n] ^= x;
        if let Ok(req) = CertificateRequest::from_der(&buf[..n.min(cut.max(1))]) {
            let _ = req.verify_signature();
            let _ = req.subject().map(|a| a.chars().count()).sum::<usize>();
            let _ = req.sans().count();
        }
    }
}

#[test]
fn bmp_and_teletex_chars() {
    let bmp = NameAttribute {
        oid: oid::O.as_bytes(),
        tag: Tag::BmpString,
        value: b"\0s\0y\xd8\x3d\xde\x00",
    };
    assert_eq!(bmp.chars().collect::<String>(), "sy\u{1F600}");
    assert!(bmp.eq_str("sy\u{1F600}"));
    assert_eq!(bmp.as_str(), None);
    let t61 =
        NameAttribute { oid: oid::CN.as_bytes(), tag: Tag::TeletexString, value: b"system:node:x" };
    assert!(t61.starts_with("system:node:"));
    // UTF-8 in a TeletexString reads as that UTF-8 (Go: string(value)); found by the
    // csr_request long fuzz run, where `chars` read it byte-wise and disagreed with `as_str`.
    let utf8 = NameAttribute {
        oid: oid::CN.as_bytes(),
        tag: Tag::TeletexString,
        value: "n\u{f6}de".as_bytes(),
    };
    assert_eq!(utf8.chars().collect::<String>(), "n\u{f6}de");
    assert!(utf8.eq_str("n\u{f6}de") && utf8.as_str() == Some("n\u{f6}de"));
    // Not UTF-8: Go's string(value) keeps the bytes, so it equals no UTF-8 text, and
    // `range` reads U+FFFD for each byte that does not start a valid sequence.
    let latin1 =
        NameAttribute { oid: oid::CN.as_bytes(), tag: Tag::TeletexString, value: b"n\xf6de" };
    assert_eq!(latin1.chars().collect::<String>(), "n\u{FFFD}de");
    assert!(!latin1.eq_str("n\u{f6}de") && !latin1.eq_str("n\u{FFFD}de"));
    assert!(latin1.starts_with("n") && !latin1.starts_with("n\u{f6}"));
    let cut = NameAttribute {
        oid: oid::CN.as_bytes(),
        tag: Tag::TeletexString,
        // A truncated 4-byte sequence, an overlong '/', a surrogate, then valid UTF-8.
        value: b"\xf0\x9f\x98A\xc0\xafB\xed\xa0\x80\xc3\xb6",
    };
    assert_eq!(
        cut.chars().collect::<String>(),
        "\u{FFFD}\u{FFFD}\u{FFFD}A\u{FFFD}\u{FFFD}B\u{FFFD}\u{FFFD}\u{FFFD}\u{f6}"
    );
    let int = NameAttribute { oid: oid::CN.as_bytes(), tag: Tag::Integer, value: b"\x01" };
    assert!(!int.is_string() && !int.eq_str("\u{1}"));
}
