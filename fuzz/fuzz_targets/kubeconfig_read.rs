//! `kubeconfig::Kubeconfig::parse` (YAML and JSON) on raw bytes, and every accessor.
//!
//! Properties:
//! * every scalar decodes into a buffer of exactly `decoded_len()` bytes; one byte less is
//!   `BufferTooSmall { needed: decoded_len }`; `as_borrowed`, `bytes`, `eq_str`, `eq_scalar`
//!   and `is_relative_path` agree with the decoded text; `*-data` base64 decoding agrees with
//!   an independent decoder (base64ct `Base64::decode_vec` on the decoded text);
//! * a JSON kubeconfig that parses is valid JSON for serde_json, with the same cluster / user /
//!   context names in the same order;
//! * round trip: the parsed model written back as JSON (serde_json) parses to the same model;
//! * `resolve()` success means the context, its cluster (with a non-empty server) and its user
//!   exist; failure means one of them is missing.
#![no_main]

use base64ct::{Base64, Encoding};
use kubeboot::Error;
use kubeboot::kubeconfig::{Cluster, Context, Format, Kubeconfig, Scalar, Source, User};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fn decoded(s: &Scalar<'_>) -> String {
    let n = s.decoded_len();
    let mut buf = vec![0u8; n];
    let text = s.decode_into(&mut buf).expect("exact buffer").to_owned();
    assert_eq!(text.len(), n, "decoded_len is exact: {s:?}");
    if n > 0 {
        let mut short = vec![0u8; n - 1];
        assert_eq!(s.decode_into(&mut short), Err(Error::BufferTooSmall { needed: n }));
    }
    assert_eq!(s.bytes().collect::<Vec<u8>>(), text.as_bytes());
    if let Some(b) = s.as_borrowed() {
        assert_eq!(b, text);
    }
    assert!(s.eq_str(&text));
    assert!(s.eq_scalar(s));
    assert_eq!(s.is_empty(), text.is_empty());
    assert_eq!(s.is_relative_path(), !text.is_empty() && !text.starts_with('/'));
    text
}

fn check_data(s: &Scalar<'_>) {
    let text = decoded(s);
    let want = Base64::decode_vec(&text).ok();
    let mut buf = vec![0u8; text.len() + 4];
    match s.decode_base64_into(&mut buf) {
        Ok(got) => assert_eq!(Some(got.to_vec()), want, "base64 of {text:?}"),
        Err(Error::Malformed) => assert!(want.is_none(), "rejected valid base64 {text:?}"),
        Err(e) => panic!("{e:?}"),
    }
}

fn opt(v: &mut Map<String, Value>, key: &str, s: &Option<Scalar<'_>>) {
    if let Some(s) = s {
        v.insert(key.to_owned(), Value::String(decoded(s)));
    }
}

fn cluster_json(c: &Cluster<'_>) -> Value {
    let mut m = Map::new();
    opt(&mut m, "server", &c.server);
    opt(&mut m, "certificate-authority", &c.certificate_authority);
    opt(&mut m, "certificate-authority-data", &c.certificate_authority_data);
    opt(&mut m, "tls-server-name", &c.tls_server_name);
    if c.insecure_skip_tls_verify {
        m.insert("insecure-skip-tls-verify".into(), Value::Bool(true));
    }
    if let Some(d) = &c.certificate_authority_data {
        check_data(d);
    }
    match c.ca_source() {
        Source::Data(d) => assert!(!d.is_empty()),
        Source::File(f) => {
            assert!(!f.is_empty());
            assert!(c.certificate_authority_data.is_none_or(|d| d.is_empty()));
        }
        Source::None => {}
    }
    Value::Object(m)
}

fn user_json(u: &User<'_>) -> Value {
    let mut m = Map::new();
    opt(&mut m, "token", &u.token);
    opt(&mut m, "tokenFile", &u.token_file);
    opt(&mut m, "client-certificate", &u.client_certificate);
    opt(&mut m, "client-certificate-data", &u.client_certificate_data);
    opt(&mut m, "client-key", &u.client_key);
    opt(&mut m, "client-key-data", &u.client_key_data);
    for d in [&u.client_certificate_data, &u.client_key_data].into_iter().flatten() {
        check_data(d);
    }
    let _ = (u.client_cert_source(), u.client_key_source());
    // Debug redacts the token and the key data: it is the Debug of the same user without them,
    // except that these fields read `Some("<redacted>")`, so it cannot depend on their values.
    // (A plain "the token's text is not in Debug" check is wrong: another field, e.g. a key file
    // path, may contain the same text; the long run found such an input.)
    let dbg = format!("{u:?}");
    let mut bare = format!("{:?}", User { token: None, client_key_data: None, ..*u });
    let redacted = |field: &str| format!("{field}: Some(\"<redacted>\")");
    if u.token.is_some() {
        // `token` is the first field: its `None` is the first occurrence.
        bare = bare.replacen("token: None", &redacted("token"), 1);
    }
    if u.client_key_data.is_some() {
        // `client_key_data` is the last field: its `None` is the last occurrence.
        let at = bare.rfind("client_key_data: None").expect("the field is printed");
        bare.replace_range(at..at + "client_key_data: None".len(), &redacted("client_key_data"));
    }
    assert_eq!(dbg, bare, "Debug depends on a secret");
    Value::Object(m)
}

fn context_json(c: &Context<'_>) -> Value {
    let mut m = Map::new();
    opt(&mut m, "cluster", &c.cluster);
    opt(&mut m, "user", &c.user);
    opt(&mut m, "namespace", &c.namespace);
    Value::Object(m)
}

/// The model as a kubectl-style JSON document.
fn model_json(kc: &Kubeconfig<'_>) -> Value {
    let list = |items: Vec<(String, &str, Value)>| {
        Value::Array(items.into_iter().map(|(n, k, v)| json!({ "name": n, (k): v })).collect())
    };
    let clusters =
        kc.clusters().iter().map(|c| (decoded(&c.name), "cluster", cluster_json(&c.value)));
    let users = kc.users().iter().map(|c| (decoded(&c.name), "user", user_json(&c.value)));
    let contexts =
        kc.contexts().iter().map(|c| (decoded(&c.name), "context", context_json(&c.value)));
    let mut doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": list(clusters.collect()),
        "users": list(users.collect()),
        "contexts": list(contexts.collect()),
    });
    if let Some(c) = kc.current_context() {
        doc["current-context"] = Value::String(decoded(&c));
    }
    doc
}

fn names(v: &Value, list: &str) -> Option<Vec<Option<String>>> {
    match v.get(list) {
        None | Some(Value::Null) => Some(vec![]),
        Some(Value::Array(a)) => {
            // A missing or null name is Go's zero value, "".
            Some(
                a.iter()
                    .map(|e| match e.get("name") {
                        None | Some(Value::Null) => Some(String::new()),
                        Some(n) => n.as_str().map(str::to_owned),
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// `json` with every number outside strings replaced by `0` (the input is JSON our reader accepted,
/// so its strings are well formed).
fn zero_numbers(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len());
    let (mut in_string, mut escaped, mut in_number) = (false, false, false);
    for &b in json {
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if in_number && matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
        } else if b == b'-' || b.is_ascii_digit() {
            in_number = true;
            out.push(b'0');
        } else {
            in_number = false;
            in_string = b == b'"';
            out.push(b);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(kc) = Kubeconfig::parse(data) else { return };
    let model = model_json(&kc);

    if kc.format() == Format::Json {
        // A leading BOM is accepted (as YAML, hence kubectl, does); serde_json does not.
        let json = data.strip_prefix("\u{feff}".as_bytes()).unwrap_or(data);
        let v: Value = match serde_json::from_slice(json) {
            Ok(v) => v,
            // Numbers beyond f64's range: serde_json refuses them, kubectl (Go) skips them by
            // syntax in the fields it ignores, and so do we (`kubeconfig_kubectl` tests it).
            // Re-parse with every number made 0 to still check the rest of the document.
            Err(e) if e.to_string().starts_with("number out of range") => {
                serde_json::from_slice(&zero_numbers(json))
                    .expect("accepted JSON that serde_json rejects")
            }
            Err(e) => panic!("accepted JSON that serde_json rejects: {e}"),
        };
        for list in ["clusters", "users", "contexts"] {
            let ours: Vec<Option<String>> = model[list]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().map(str::to_owned))
                .collect();
            if let Some(theirs) = names(&v, list) {
                assert_eq!(ours, theirs, "{list} names differ from serde_json's");
            }
        }
    }

    // Round trip through JSON.
    let text = serde_json::to_vec(&model).unwrap();
    let again = Kubeconfig::parse(&text).unwrap_or_else(|e| {
        panic!("re-encoded model does not parse ({e:?}): {}", String::from_utf8_lossy(&text))
    });
    assert_eq!(again.format(), Format::Json);
    assert_eq!(model_json(&again), model, "JSON round trip changed the model");

    // Lookups and resolution.
    for c in kc.contexts() {
        let name = decoded(&c.name);
        assert!(kc.context(&name).is_some());
        let r = kc.resolve_context(&name);
        let cluster =
            c.value.cluster.filter(|s| !s.is_empty()).and_then(|s| kc.cluster(&decoded(&s)));
        let user_ok = match c.value.user.filter(|s| !s.is_empty()) {
            None => true,
            Some(u) => kc.user(&decoded(&u)).is_some(),
        };
        let server_ok = cluster.is_some_and(|cl| cl.server.is_some_and(|s| !s.is_empty()));
        // A duplicate-name-free model: the first context with this name is the one resolved.
        if kc.contexts().iter().filter(|x| x.name.eq_scalar(&c.name)).count() == 1 {
            assert_eq!(r.is_ok(), server_ok && user_ok, "resolve_context({name:?}) = {r:?}");
        }
        if let Ok(r) = r {
            assert!(!r.server().is_empty());
            assert!(r.context_name.eq_scalar(&c.name));
        }
    }
    match kc.resolve() {
        Ok(r) => {
            assert!(kc.current_context().is_some_and(|c| c.eq_scalar(&r.context_name)));
        }
        Err(e) => assert_eq!(e, Error::Malformed),
    }
});
