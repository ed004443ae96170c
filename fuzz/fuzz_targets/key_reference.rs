//! Key references (`kubeboot::keyref`): RFC 7512 PKCS#11 URIs, device names, the
//! `PKCS#11 PROVIDER URI` container and `TSS2 PRIVATE KEY` blobs. Raw bytes in: no panic, and
//! whatever is accepted writes back to what reads the same.
#![no_main]

use kubeboot::keyref::{self, Device, Holder, Pkcs11Uri, Tss2};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut scratch = [0u8; 4096];
    let mut pem = [0u8; 4096];
    if let Ok(text) = core::str::from_utf8(data) {
        if let Ok(u) = Pkcs11Uri::parse(text) {
            // The container carries it unchanged.
            let n = keyref::write_pkcs11_uri_pem(text, &mut pem).expect("a parsed URI fits");
            assert_eq!(keyref::pkcs11_uri_of(&pem[..n], &mut scratch), Ok(text));
            assert_eq!(Holder::of_pem(&pem[..n]), Ok(Holder::Pkcs11));
            if let Some(v) = u.token {
                assert!(keyref::decode_value(v, &mut scratch).is_ok());
            }
        }
        if let Ok(Device::Pkcs11(d)) = Device::parse(text) {
            let mut uri = [0u8; 2048];
            if let Ok(n) = keyref::write_key_uri(&d, "kubelet-client-x", &[0, 255], &mut uri) {
                let k = Pkcs11Uri::parse(core::str::from_utf8(&uri[..n]).unwrap()).unwrap();
                assert_eq!(k.object, Some("kubelet-client-x"));
                assert_eq!(k.token, d.token);
            }
        }
    }
    // Any PEM: the reference readers refuse or read consistently.
    let _ = keyref::check_key_pem(data);
    let _ = keyref::pkcs11_uri_of(data, &mut scratch);
    if let Ok(t) = Tss2::from_der(data) {
        let n = t.write_pem(&mut pem).expect("a read blob writes back");
        let mut again = [0u8; 4096];
        assert_eq!(Tss2::from_pem(&pem[..n], &mut again), Ok(t));
    }
});
