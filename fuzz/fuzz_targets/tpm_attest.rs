//! TPM structures of an attested join (`kubeboot::tpm`): `TPMS_ATTEST`, `TPM2B_PUBLIC` /
//! `TPMT_PUBLIC` and `TPMT_SIGNATURE` from raw bytes. No panic; what is accepted is read to its
//! last byte (one more byte is refused).
#![no_main]

use kubeboot::tpm::{Attest, Public, Signature, TpmError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut longer = data.to_vec();
    longer.push(0);
    if let Ok(a) = Attest::parse(data) {
        assert!(a.name.len() <= kubeboot::tpm::MAX_NAME);
        assert_eq!(Attest::parse(&longer), Err(TpmError::TrailingBytes));
    }
    let _ = Attest::parse_sized(data);
    if let Ok(p) = Public::parse(data) {
        assert_eq!(p.point[0], 4);
        assert_eq!(p.name()[..2], [0, 0x0b]);
        assert_eq!(Public::parse(&longer), Err(TpmError::TrailingBytes));
    }
    let _ = Public::parse_sized(data);
    if Signature::parse(data).is_ok() {
        assert_eq!(Signature::parse(&longer), Err(TpmError::TrailingBytes));
    }
});
