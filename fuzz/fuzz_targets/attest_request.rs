//! An attested join's request as an approver reads it (`kubeboot::attest`): the blocks after
//! the CSR (`Evidence::split`), the operator's allowlist (`Enrolment::parse`) and the judgement
//! (`judge`) against the device CA of `seeds/attest_request/` (a swtpm's attestation key
//! certified by it, the request `hwkey/tests/devices.rs` made with `KUBEBOOT_ATTEST_SEEDS`).
//! Structure-aware: raw bytes, or byte edits of the real request.
//!
//! Properties:
//! * no panic, whatever the bytes;
//! * the untouched request is accepted for its enrolled node, refused as not enrolled or for
//!   another node otherwise;
//! * an accepted judgement names the node of the CSR's CN and of the allowlist, and the key's
//!   Name is SHA-256's (`000b` first);
//! * an allowlist that parses never maps one serial number to two names.
#![no_main]

use arbitrary::Arbitrary;
use kubeboot::attest::{AttestError, Enrolment, Evidence, judge};
use kubeboot::backend::Software;
use kubeboot::verify::Anchor;
use libfuzzer_sys::fuzz_target;

const REQUEST: &[u8] = include_bytes!("../seeds/attest_request/request.pem");
const FACTORY: &[u8] = include_bytes!("../seeds/attest_request/factory.der");
/// 2027-06-01, inside the attestation key certificate's validity.
const LATER: i64 = 1_811_808_000;
const ENROLLED: &str = "SN-A1 edge-1\n";

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(Vec<u8>),
    Edits(Vec<(u16, u8)>),
    List(String),
}

fn judged(request: &[u8], list: &Enrolment<'_>) -> Result<(), AttestError> {
    let mut scratch = vec![0u8; request.len()];
    let (csr, evidence) = Evidence::split(request, &mut scratch)?;
    let evidence = evidence.ok_or(AttestError::Absent)?;
    let ca = Anchor::from_der(FACTORY).expect("the seed CA");
    let ok = judge(&Software, &csr, &evidence, &[ca], list, LATER)?;
    let cn = csr.common_name().and_then(|c| c.as_str()).expect("an accepted CSR has a CN");
    assert_eq!(cn.strip_prefix("system:node:"), Some(ok.node));
    assert_eq!(list.node_of(&ok.serial), Some(ok.node));
    assert_eq!(ok.key_name[..2], [0, 0x0b]);
    Ok(())
}

fuzz_target!(|input: Input| {
    let list = Enrolment::parse(ENROLLED).unwrap();
    match input {
        Input::Raw(bytes) => {
            let _ = judged(&bytes, &list);
        }
        Input::Edits(edits) => {
            let mut request = REQUEST.to_vec();
            for (at, b) in &edits {
                if let Some(slot) = request.get_mut(usize::from(*at)) {
                    *slot = *b;
                }
            }
            let r = judged(&request, &list);
            if edits.is_empty() {
                assert_eq!(r, Ok(()));
                let other = Enrolment::parse("SN-A1 edge-2\n").unwrap();
                assert_eq!(judged(&request, &other), Err(AttestError::WrongNode));
                let none = Enrolment::parse("").unwrap();
                assert_eq!(judged(&request, &none), Err(AttestError::NotEnrolled));
            }
        }
        Input::List(text) => {
            if let Ok(list) = Enrolment::parse(&text) {
                for line in text.lines() {
                    let line = line.split('#').next().unwrap_or("");
                    let mut fields = line.split([' ', '\t', '\r']).filter(|f| !f.is_empty());
                    if let Some(serial) = fields.next() {
                        let node = list.node_of(serial).expect("a listed serial is found");
                        assert_eq!(fields.next(), Some(node));
                    }
                }
                let _ = judged(REQUEST, &list);
            }
        }
    }
});
