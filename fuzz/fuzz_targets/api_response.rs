//! The heap-free JSON reader (`kubeboot::json`) as the engine and discovery use it on apiserver
//! bodies: `Reader` events, `parse`, `validate`, `parse_prefix` (watch streams), `find`,
//! `Object::get` / `members`, `Array::items`, `Str` decoding, `parse_i64`.
//!
//! Properties, checked against serde_json as the independent parser:
//! * verdict: accepted ⇒ serde_json accepts (or only rejects a number out of f64 range);
//!   serde_json accepts and nesting ≤ `MAX_DEPTH` ⇒ accepted; `validate` ⇔ `parse` ⇔ events;
//! * values: the same tree (strings decoded byte-exactly with an exact `decoded_len`, objects
//!   with last-wins duplicate keys as in Go and serde_json, integers via `as_i64`);
//! * `find` follows the same path as serde_json's `pointer`; the CSR / Status fields the engine
//!   reads (`status.certificate`, `status.conditions[].type`, `reason`, `message`, `code`) agree;
//! * `parse_prefix` on a newline-separated stream (a watch response) consumes exactly one value
//!   and the whitespace after it, and each consumed prefix re-parses on its own.
#![no_main]

use kubeboot::Error;
use kubeboot::json::{self, Event, MAX_DEPTH, Reader, Str, Value};
use libfuzzer_sys::fuzz_target;
use serde_json::Value as J;

fn dec(s: &Str<'_>) -> String {
    let n = s.decoded_len();
    let mut buf = vec![0u8; n];
    let out = s.decode_into(&mut buf).expect("exact buffer").to_owned();
    assert_eq!(out.len(), n);
    if n > 0 {
        assert_eq!(s.decode_into(&mut vec![0u8; n - 1]), Err(Error::BufferTooSmall { needed: n }));
    }
    assert!(s.eq_str(&out));
    assert_eq!(s.is_empty(), out.is_empty());
    if let Some(b) = s.as_borrowed() {
        assert_eq!(b, out);
    }
    out
}

fn depth(v: &J) -> usize {
    match v {
        J::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        J::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Compare our lazy value with serde_json's tree.
fn same(ours: &Value<'_>, theirs: &J) {
    match (ours, theirs) {
        (Value::Null, J::Null) => {}
        (Value::Bool(a), J::Bool(b)) => assert_eq!(a, b),
        (Value::Number(n), J::Number(m)) => {
            if let Some(i) = json::parse_i64(n) {
                let exact = m.as_i64() == Some(i) || m.as_f64() == Some(i as f64);
                assert!(exact, "{n} vs {m}");
            } else if let Some(i) = m.as_i64() {
                // serde_json reads `1.0`/`1e2` as floats; an integer literal must fit in i64.
                assert!(n.contains(['.', 'e', 'E']), "{n} vs {i}");
            }
            assert_eq!(ours.as_i64(), json::parse_i64(n));
        }
        (Value::String(s), J::String(t)) => assert_eq!(&dec(s), t),
        (Value::Array(a), J::Array(b)) => {
            let items: Vec<Value<'_>> = a.items().map(|r| r.expect("validated")).collect();
            assert_eq!(items.len(), b.len());
            for (x, y) in items.iter().zip(b) {
                same(x, y);
            }
        }
        (Value::Object(o), J::Object(m)) => {
            let mut keys = std::collections::BTreeSet::new();
            for r in o.members() {
                let (k, _) = r.expect("validated");
                keys.insert(dec(&k));
            }
            assert_eq!(keys.len(), m.len(), "distinct keys");
            for (k, v) in m {
                let got = o.get(k).expect("validated").expect("member present");
                same(&got, v);
            }
        }
        _ => panic!("kind differs: {ours:?} vs {theirs:?}"),
    }
}

fn events_ok(data: &[u8]) -> bool {
    let mut r = Reader::new(data);
    let mut n = 0usize;
    loop {
        match r.next() {
            Ok(Some(ev)) => {
                n += 1;
                assert!(r.depth() <= MAX_DEPTH);
                assert!(r.position() <= data.len());
                if let Event::Key(s) | Event::String(s) = ev {
                    dec(&s);
                }
                assert!(n <= data.len(), "more events than bytes");
            }
            Ok(None) => {
                // The reader stays at the end.
                assert_eq!(r.next(), Ok(None));
                return true;
            }
            Err(e) => {
                assert_eq!(e, Error::Malformed);
                // A failed reader stays failed.
                assert!(r.next().is_err());
                return false;
            }
        }
    }
}

fn check_engine_fields(data: &[u8], theirs: &J) {
    for path in [
        &["status", "certificate"][..],
        &["metadata", "name"],
        &["metadata", "uid"],
        &["spec", "request"],
        &["spec", "signerName"],
        &["reason"],
        &["message"],
        &["code"],
        &["type"],
        &["object", "status"],
        &["data", "kubeconfig"],
    ] {
        let ours = json::find(data, path).expect("validated");
        let pointer = format!("/{}", path.join("/"));
        match (ours, theirs.pointer(&pointer)) {
            (None, None) => {}
            (Some(v), Some(t)) => same(&v, t),
            // A non-object on the way: `find` says None, `pointer` may index an array.
            (None, Some(_)) => {}
            (Some(v), None) => panic!("find {path:?} = {v:?}, serde_json has nothing"),
        }
    }
    if let Some(J::Array(conds)) = theirs.pointer("/status/conditions") {
        let ours = json::find(data, &["status", "conditions"]).unwrap().unwrap();
        let items: Vec<_> = ours.as_array().unwrap().items().collect();
        assert_eq!(items.len(), conds.len());
    }
}

fuzz_target!(|data: &[u8]| {
    let ev = events_ok(data);
    let parsed = json::parse(data);
    let valid = json::validate(data);
    assert_eq!(ev, parsed.is_ok());
    assert_eq!(ev, valid.is_ok());
    let theirs = serde_json::from_slice::<J>(data);
    match (&parsed, &theirs) {
        (Ok(v), Ok(t)) => {
            same(v, t);
            check_engine_fields(data, t);
        }
        (Ok(_), Err(e)) => {
            assert!(e.to_string().contains("number out of range"), "serde_json rejects: {e}");
        }
        (Err(_), Ok(t)) => assert!(depth(t) > MAX_DEPTH, "serde_json accepts, we reject"),
        (Err(_), Err(_)) => {}
    }

    // Watch stream: concatenated values, one per line.
    let mut rest = data;
    let mut rounds = 0;
    while !rest.is_empty() && rounds < 64 {
        rounds += 1;
        match json::parse_prefix(rest) {
            Ok((v, used)) => {
                assert!(used > 0 && used <= rest.len());
                let (head, tail) = rest.split_at(used);
                // The whitespace after the value is consumed, nothing more.
                assert!(!tail.first().is_some_and(|b| b" \t\r\n".contains(b)));
                let again = json::parse(head).expect("a consumed prefix parses alone");
                assert_eq!(again, v);
                rest = tail;
            }
            Err(e) => {
                assert_eq!(e, Error::Malformed);
                break;
            }
        }
    }
});
