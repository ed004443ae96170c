//! Structure-aware: arbitrary `api::CsrObject` fields → `write_json` never panics; when it
//! succeeds the output is valid JSON (serde_json) holding exactly the given values, and a short
//! buffer reports the exact size. Also `api::node_csr_name` on arbitrary inputs.
#![no_main]

use arbitrary::Arbitrary;
use base64ct::Encoding;
use kubeboot::Error;
use kubeboot::api::{self, CsrObject, ObjectName};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Arbitrary, Debug)]
enum Name<'a> {
    Fixed(&'a str),
    Generate,
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    name: Name<'a>,
    request_pem: &'a [u8],
    signer: &'a str,
    usages: Vec<&'a str>,
    expiration: Option<u32>,
    short_by: u16,
    orgs: Vec<&'a str>,
}

fuzz_target!(|input: Input<'_>| {
    let name = match input.name {
        Name::Fixed(n) => ObjectName::Fixed(n),
        Name::Generate => ObjectName::Generate,
    };
    let obj = match CsrObject::new(
        name,
        input.request_pem,
        input.signer,
        &input.usages,
        input.expiration,
    ) {
        Ok(o) => o,
        Err(e) => {
            assert_eq!(e, Error::InvalidExpirationSeconds);
            let x = input.expiration.expect("only expirationSeconds is checked");
            assert!(x < api::MIN_EXPIRATION_SECONDS || x > i32::MAX as u32);
            return;
        }
    };
    // Size first with an empty buffer: BufferTooSmall carries the exact size.
    let needed = match obj.write_json(&mut []) {
        Err(Error::BufferTooSmall { needed }) => needed,
        other => panic!("empty buffer gave {other:?}"),
    };
    let mut buf = vec![0u8; needed];
    let n = obj.write_json(&mut buf).expect("needed suffices");
    assert_eq!(n, needed);
    if let Some(short) = needed.checked_sub(usize::from(input.short_by).max(1)) {
        let mut small = vec![0u8; short];
        assert_eq!(obj.write_json(&mut small), Err(Error::BufferTooSmall { needed }));
    }

    let text = std::str::from_utf8(&buf).expect("JSON output is UTF-8");
    let v: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("invalid JSON {e}: {text}"));
    assert_eq!(v["apiVersion"], "certificates.k8s.io/v1");
    assert_eq!(v["kind"], "CertificateSigningRequest");
    match name {
        ObjectName::Fixed(n) => {
            assert_eq!(v["metadata"]["name"], n);
            assert!(v["metadata"].get("generateName").is_none());
        }
        ObjectName::Generate => {
            assert_eq!(v["metadata"]["generateName"], api::GENERATE_NAME_PREFIX);
            assert!(v["metadata"].get("name").is_none());
        }
    }
    let spec = &v["spec"];
    let req = spec["request"].as_str().expect("request is a string");
    assert_eq!(base64ct::Base64::decode_vec(req).expect("standard base64"), input.request_pem);
    assert_eq!(spec["signerName"], input.signer);
    let usages: Vec<&str> = spec["usages"]
        .as_array()
        .expect("usages array")
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert_eq!(usages, input.usages);
    match input.expiration {
        Some(e) => assert_eq!(spec["expirationSeconds"].as_u64(), Some(u64::from(e))),
        None => assert!(spec.get("expirationSeconds").is_none()),
    }

    // node-csr-<digest>: fixed length, URL-safe alphabet, deterministic.
    let cn = match name {
        ObjectName::Fixed(n) => n,
        ObjectName::Generate => input.signer,
    };
    let a = api::node_csr_name(input.request_pem, cn, &input.orgs, &input.usages);
    let b = api::node_csr_name(input.request_pem, cn, &input.orgs, &input.usages);
    assert_eq!(a, b);
    let s = a.as_str();
    assert_eq!(s.len(), api::NODE_CSR_NAME_LEN);
    assert!(s.starts_with("node-csr-"));
    assert!(s[9..].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
});
