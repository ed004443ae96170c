//! Private key readers: `NodeKey::from_pem` / `from_der` / `from_sec1_der` / `from_pkcs8_der`
//! (and `from_entropy` / `from_scalar_bytes`). A key that parses must write back (SEC1 DER and
//! PEM), re-parse to the same public key, and sign verifiably.
#![no_main]

use kubeboot::Error;
use kubeboot::key::{self, NodeKey, SEC1_DER_LEN, SEC1_PEM_LEN};
use kubeboot::pem;
use libfuzzer_sys::fuzz_target;
use p256::ecdsa::signature::Verifier;

fn check_key(k: &NodeKey, msg: &[u8]) {
    let point = k.public_point();
    assert_eq!(point[0], 4);
    let spki = k.public_key_spki();
    assert_eq!(&spki[spki.len() - 65..], &point[..]);
    assert_eq!(key::spki_from_point(&point), spki);

    let mut der = [0u8; SEC1_DER_LEN];
    assert_eq!(k.to_sec1_der(&mut der), Ok(SEC1_DER_LEN));
    assert_eq!(
        k.to_sec1_der(&mut [0u8; SEC1_DER_LEN - 1]),
        Err(Error::BufferTooSmall { needed: SEC1_DER_LEN })
    );
    let back = NodeKey::from_der(&der).expect("own SEC1 DER re-parses");
    assert_eq!(back.public_point(), point);
    let back = NodeKey::from_sec1_der(&der).expect("own SEC1 DER re-parses");
    assert_eq!(back.public_point(), point);

    let mut pem_buf = [0u8; SEC1_PEM_LEN + 8];
    let n = k.to_sec1_pem(&mut pem_buf).expect("PEM fits");
    assert_eq!(n, SEC1_PEM_LEN);
    let back = NodeKey::from_pem(&pem_buf[..n]).expect("own PEM re-parses");
    assert_eq!(back.public_point(), point);

    let dbg = format!("{k:?}");
    assert!(!dbg.contains(&format!("{:02x}{:02x}{:02x}", der[7], der[8], der[9])));

    let rs = k.sign(msg);
    let sig = p256::ecdsa::Signature::from_slice(&rs).expect("valid r||s");
    k.verifying_key().verify(msg, &sig).expect("signature verifies");
    assert!(key::der_signature(&rs).is_ok());
}

fn wrap(label: &str, der: &[u8]) -> Option<Vec<u8>> {
    let len = pem::encoded_len(label, der.len()).ok()?;
    let mut buf = vec![0u8; len];
    let n = pem::encode(label, der, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

fn expected_error(e: Error) {
    assert!(matches!(e, Error::MalformedKey | Error::UnsupportedKey), "undocumented error {e:?}");
}

fuzz_target!(|data: &[u8]| {
    let msg = data.get(..16).unwrap_or(data);
    let sec1 = NodeKey::from_sec1_der(data);
    let pkcs8 = NodeKey::from_pkcs8_der(data);
    let any = NodeKey::from_der(data);
    match &any {
        Ok(k) => {
            let via = sec1.as_ref().or(pkcs8.as_ref()).expect("from_der ok ⇒ one of the forms ok");
            assert_eq!(via.public_point(), k.public_point());
            check_key(k, msg);
        }
        Err(e) => {
            expected_error(*e);
            assert!(sec1.is_err() && pkcs8.is_err());
        }
    }
    for r in [&sec1, &pkcs8] {
        if let Err(e) = r {
            expected_error(*e);
        }
    }
    match NodeKey::from_pem(data) {
        Ok(k) => check_key(&k, msg),
        Err(e) => expected_error(e),
    }
    // The same DER inside PEM gives the same answer.
    if let (Ok(k), Some(p)) = (&sec1, wrap(key::LABEL_EC_PRIVATE_KEY, data)) {
        assert_eq!(
            NodeKey::from_pem(&p).expect("EC PEM of a SEC1 key").public_point(),
            k.public_point()
        );
    }
    if let (Ok(k), Some(p)) = (&pkcs8, wrap(key::LABEL_PRIVATE_KEY, data)) {
        assert_eq!(
            NodeKey::from_pem(&p).expect("PKCS#8 PEM of a key").public_point(),
            k.public_point()
        );
    }
    // Raw scalar and entropy constructors: only for scalar-sized inputs, so that every other
    // input does not pay for point multiplications.
    if data.len() != 32 && data.len() != 64 {
        assert!(NodeKey::from_entropy(data.get(..31).unwrap_or(data)).is_err());
        return;
    }
    if let Some(d) = data.get(..32) {
        let d: &[u8; 32] = d.try_into().unwrap();
        if let Ok(k) = NodeKey::from_scalar_bytes(d) {
            check_key(&k, msg);
        }
    }
    match NodeKey::from_entropy(data) {
        Ok(k) => {
            // The first chunk that is a valid scalar is the key.
            let first = data
                .chunks_exact(key::ENTROPY_LEN)
                .find_map(|c| NodeKey::from_scalar_bytes(c.try_into().unwrap()).ok())
                .expect("some chunk is a valid scalar");
            assert_eq!(first.public_point(), k.public_point());
        }
        Err(Error::InsufficientEntropy) => assert!(data.len() < key::ENTROPY_LEN),
        Err(Error::BadEntropy) => assert!(
            data.chunks_exact(key::ENTROPY_LEN)
                .all(|c| NodeKey::from_scalar_bytes(c.try_into().unwrap()).is_err())
        ),
        Err(e) => panic!("undocumented error {e:?}"),
    }
});
