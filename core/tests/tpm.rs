//! `kubeboot::tpm` against what swtpm and tpm2-tools made (`tests/data/tpm/make.sh`): the
//! certified key's Name as tpm2-tools printed it, the attestation key's point as it exported it,
//! the signature checked by Python's cryptography, and every malformed form refused by type.

mod common;

use kubeboot::tpm::{Attest, Public, Signature, TpmError, attr};

fn vector(name: &str) -> Vec<u8> {
    std::fs::read(common::data(&format!("tpm/{name}"))).unwrap()
}

#[test]
fn the_certified_keys_name_is_tpm2_tools() {
    let pub_bytes = vector("key.pub");
    let key = Public::parse_sized(&pub_bytes).unwrap();
    assert_eq!(key.name().as_slice(), vector("key.name").as_slice());
    let never_left = attr::FIXED_TPM | attr::FIXED_PARENT | attr::SENSITIVE_DATA_ORIGIN;
    assert!(key.has(never_left | attr::SIGN));
    assert!(!key.has(attr::RESTRICTED));
    // The duplicable one says so.
    let dup_bytes = vector("dup.pub");
    let dup = Public::parse_sized(&dup_bytes).unwrap();
    assert!(!dup.has(attr::FIXED_TPM) && !dup.has(attr::FIXED_PARENT));
    assert!(dup.has(attr::SENSITIVE_DATA_ORIGIN | attr::SIGN));
}

#[test]
fn the_attestation_names_the_key_and_its_signature_verifies() {
    let key_bytes = vector("key.pub");
    let key = Public::parse_sized(&key_bytes).unwrap();
    let attest_bytes = vector("attest.out");
    let a = Attest::parse(&attest_bytes).unwrap();
    assert_eq!(a.name, key.name().as_slice());
    // (tpm2-tools 5.4's tpm2_certify takes no qualifying data from its caller: it passes its own
    // four bytes)
    assert_eq!(a.extra_data, [0x00, 0xff, 0x55, 0xaa]);
    let ak_bytes = vector("ak.pub");
    let ak = Public::parse_sized(&ak_bytes).unwrap();
    assert!(ak.has(attr::RESTRICTED | attr::SIGN | attr::FIXED_TPM | attr::FIXED_PARENT));
    assert_eq!(a.qualified_signer.len(), 34);
    let dup_attest = vector("dup-attest.out");
    let dup_bytes = vector("dup.pub");
    let dup = Public::parse_sized(&dup_bytes).unwrap();
    assert_eq!(Attest::parse(&dup_attest).unwrap().name, dup.name().as_slice());

    // The attestation key's point is the one tpm2_readpublic exported, and the r || s read here
    // verifies over the attestation with it (Python's cryptography; a flipped bit does not).
    let sig = Signature::parse(&vector("sig.out")).unwrap();
    let dir = common::data("tpm");
    let script = r#"
import sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
ak = serialization.load_pem_public_key(open("ak.pem", "rb").read())
print(ak.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint).hex())
rs = bytes.fromhex(sys.argv[1])
der = encode_dss_signature(int.from_bytes(rs[:32], "big"), int.from_bytes(rs[32:], "big"))
attest = bytearray(open("attest.out", "rb").read())
ak.verify(der, bytes(attest), ec.ECDSA(hashes.SHA256()))
attest[-1] ^= 1
try:
    ak.verify(der, bytes(attest), ec.ECDSA(hashes.SHA256()))
    print("forged-accepted")
except Exception:
    print("forged-refused")
"#;
    let rs: String = sig.rs.iter().map(|b| format!("{b:02x}")).collect();
    let out = common::python(&dir, script, &[&rs]);
    let out = String::from_utf8(out.stdout).unwrap();
    let mut lines = out.lines();
    let point: String = ak.point.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(lines.next(), Some(point.as_str()));
    assert_eq!(lines.next(), Some("forged-refused"));
}

#[test]
fn other_structures_are_refused_by_type() {
    // A quote is a TPMS_ATTEST too, but not a certify.
    assert_eq!(Attest::parse(&vector("quote-attest.out")), Err(TpmError::NotCertify));
    let attest = vector("attest.out");
    let mut not_tpm = attest.clone();
    not_tpm[0] ^= 0x80;
    assert_eq!(Attest::parse(&not_tpm), Err(TpmError::NotGenerated));
    let mut longer = attest.clone();
    longer.push(0);
    assert_eq!(Attest::parse(&longer), Err(TpmError::TrailingBytes));
    // Every truncation of each structure is refused, never read past its end.
    for whole in [&attest, &vector("sig.out"), &vector("key.pub"), &vector("ak.pub")] {
        for n in 0..whole.len() {
            let cut = &whole[..n];
            assert!(Attest::parse(cut).is_err());
            assert!(Signature::parse(cut).is_err());
            assert!(Public::parse_sized(cut).is_err());
        }
    }
    // The key's public area with another curve, or an RSA key, is not one of ours.
    let key = vector("key.pub");
    let mut rsa = key.clone();
    rsa[2..4].copy_from_slice(&0x0001u16.to_be_bytes());
    assert_eq!(Public::parse_sized(&rsa), Err(TpmError::Unsupported));
    let sig = vector("sig.out");
    let mut rsassa = sig.clone();
    rsassa[..2].copy_from_slice(&0x0014u16.to_be_bytes());
    assert_eq!(Signature::parse(&rsassa), Err(TpmError::Unsupported));
}
