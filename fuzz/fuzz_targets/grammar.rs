//! The grammar of what users type (`kubeboot::grammar`): `duration`, `key_device`, `ip`,
//! `bind_address` and `write_refusal`, on any text.
//!
//! Properties: no panic; `duration` accepts exactly `0` or one or more `<digits><h|m|s>` and
//! gives their sum in seconds (an independent reading in 128-bit arithmetic; a sum past
//! `i64::MAX` is refused), a refusal is `InvalidDuration`; `key_device` gives `tpm` for exactly
//! `tpm:` and the text itself for a `pkcs11:` URI `keyref::Device::parse` takes, and refuses
//! everything else (a file, `tpm:<anything>`) with a typed error; `ip` and `bind_address` agree
//! with the standard library's readings (the grammar writes no address parser of its own) and
//! refuse as `InvalidIpAddress` / `InvalidAddress`; the refusal line is
//! `<flag> "<value>": <name>: <how>` on one line, whatever the value holds.
#![no_main]

use std::net::{IpAddr, SocketAddr};

use kubeboot::Error;
use kubeboot::grammar;
use kubeboot::keyref::Device;
use libfuzzer_sys::fuzz_target;

/// `0`, or `(<digits><unit>)+`, summed in 128 bits (saturating: far past `i64::MAX` anyway).
fn duration_model(text: &str) -> Option<i128> {
    if text == "0" {
        return Some(0);
    }
    let b = text.as_bytes();
    let (mut total, mut i) = (0i128, 0);
    if b.is_empty() {
        return None;
    }
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start || i == b.len() {
            return None;
        }
        let mut n = 0i128;
        for &d in &b[start..i] {
            n = n.saturating_mul(10).saturating_add(i128::from(d - b'0'));
        }
        let unit = match b[i] {
            b'h' => 3600,
            b'm' => 60,
            b's' => 1,
            _ => return None,
        };
        total = total.saturating_add(n.saturating_mul(unit));
        i += 1;
    }
    Some(total)
}

fn refusal_line(flag: &str, value: &str, e: Error) {
    let mut line = String::new();
    grammar::write_refusal(&mut line, flag, value, e).unwrap();
    let head = format!("{flag} {value:?}: {}: ", e.name());
    assert!(line.starts_with(&head), "{line}");
    assert!(line.len() > head.len(), "a refusal without how to write it: {line}");
    assert!(!line[flag.len()..].contains(['\n', '\r']), "not one line: {line:?}");
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let text = text.as_ref();
    match which % 4 {
        0 => {
            let got = grammar::duration(text);
            match duration_model(text) {
                Some(n) if n <= i128::from(i64::MAX) => {
                    assert_eq!(got, Ok(n as i64), "{text:?}")
                }
                _ => assert_eq!(got, Err(Error::InvalidDuration), "{text:?}"),
            }
            if let Ok(n) = got {
                assert!(n >= 0);
            } else {
                refusal_line("--wait", text, Error::InvalidDuration);
            }
        }
        1 => match grammar::key_device(text) {
            Ok(d) => {
                if text == "tpm:" {
                    assert_eq!(d, "tpm");
                } else {
                    assert!(text.starts_with("pkcs11:"), "{text:?}");
                    assert_eq!(d, text);
                }
                assert!(Device::parse(d).is_ok(), "{d:?}");
            }
            Err(e) => {
                let pkcs11 = text.starts_with("pkcs11:");
                if pkcs11 {
                    assert!(Device::parse(text).is_err(), "{text:?} refused: {e:?}");
                } else {
                    assert_eq!(e, Error::InvalidKeyReference, "{text:?}");
                    assert_ne!(text, "tpm:");
                }
                refusal_line("--key", text, e);
            }
        },
        2 => match grammar::ip(text) {
            Ok(ip) => assert_eq!(text.parse::<IpAddr>(), Ok(ip)),
            Err(e) => {
                assert_eq!(e, Error::InvalidIpAddress);
                assert!(text.parse::<IpAddr>().is_err(), "{text:?}");
                refusal_line("--ip", text, e);
            }
        },
        _ => match grammar::bind_address(text) {
            Ok(a) => {
                assert_eq!(text.parse::<SocketAddr>(), Ok(a));
                // What it reads back as is the same address.
                assert_eq!(grammar::bind_address(&a.to_string()), Ok(a));
            }
            Err(e) => {
                assert_eq!(e, Error::InvalidAddress);
                assert!(text.parse::<SocketAddr>().is_err(), "{text:?}");
                refusal_line("--metrics-bind-address", text, e);
            }
        },
    }
});
