//! kubeadm token discovery driven by the `cluster-info` GET recorded from a real kube-apiserver
//! v1.35.4 (signed by the real bootstrapsigner controller; see `data/recorded/VERSIONS`), under a
//! simulated clock; the detached JWS is cross-checked against Python's `hmac`, and the bootstrap
//! kubeconfig is read back by the real `kubectl`.

mod common;

use base64ct::{Base64, Encoding};
use common::{TempDir, ok, python};
use kubeboot::Error;
use kubeboot::agent::Method;
use kubeboot::discovery::{
    Action, CLUSTER_INFO_PATH, Config, DETACHED_JWS_LEN, Discovery, Phase, Retry, Tls,
    compute_detached_jws, verify_detached_jws,
};
use kubeboot::pin::CaPin;
use kubeboot::pushback::Headers;
use kubeboot::token::{BootstrapToken, TokenId};
use serde_json::Value;

fn rec(name: &str) -> Vec<u8> {
    std::fs::read(common::data("recorded").join(name)).unwrap()
}

fn version(key: &str) -> String {
    let v = String::from_utf8(rec("VERSIONS")).unwrap();
    v.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in VERSIONS"))
        .to_owned()
}

fn token() -> BootstrapToken {
    BootstrapToken::parse(&version("bootstrap_token")).unwrap()
}

fn pin() -> CaPin {
    CaPin::parse(&version("serving_ca_sha256_pin")).unwrap()
}

/// The pin of an unrelated certificate (the upstream pubkeypin test certificate).
fn other_pin() -> CaPin {
    CaPin::parse("sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3").unwrap()
}

fn body() -> Vec<u8> {
    rec("cluster-info-get.json")
}

/// The recorded ConfigMap's `data`, read with serde_json (independent of our JSON reader).
fn data() -> serde_json::Map<String, Value> {
    let v: Value = serde_json::from_slice(&body()).unwrap();
    v["data"].as_object().unwrap().clone()
}

/// The recorded ConfigMap with `data` replaced.
fn with_data(data: &serde_json::Map<String, Value>) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&body()).unwrap();
    v["data"] = Value::Object(data.clone());
    serde_json::to_vec(&v).unwrap()
}

fn jws_key(id: &str) -> String {
    format!("jws-kubeconfig-{id}")
}

fn sign(token: &BootstrapToken, content: &str) -> String {
    let mut out = [0u8; DETACHED_JWS_LEN];
    let n =
        compute_detached_jws(&token.token_id(), token.secret_bytes(), content.as_bytes(), &mut out)
            .unwrap();
    String::from_utf8(out[..n].to_vec()).unwrap()
}

const T0: i64 = 1_796_208_640; // 2026-12-02T10:50:40Z

/// `on_response` with its outcome as a result (as the tests state it): `Err(InvalidState)` when
/// no request was outstanding (ignored, nothing changes: checked), else the failure it caused.
fn respond(d: &mut D, now: i64, status: u16, body: &[u8]) -> Result<(), Error> {
    if !d.request_outstanding() {
        let before = format!("{d:?}");
        d.on_response(now, status, body);
        assert_eq!(format!("{d:?}"), before, "an unexpected response changed discovery");
        return Err(Error::InvalidState);
    }
    d.on_response(now, status, body);
    d.failure().map_or(Ok(()), |(e, _)| Err(e))
}

/// Discovery with the work buffer the agent lends it.
struct D {
    d: Discovery,
    work: Vec<u8>,
}

impl D {
    fn start(config: Config<'_>, now: i64, work: usize) -> Result<Box<D>, Error> {
        let mut d = Box::new(D { d: Discovery::idle(), work: vec![0; work] });
        d.d.start(config, now)?;
        Ok(d)
    }

    fn poll(&mut self, now: i64) -> Action<'_> {
        self.d.poll(now, &self.work)
    }

    fn on_response(&mut self, now: i64, status: u16, body: &[u8]) {
        self.on_response_with(now, status, &Headers::NONE, body);
    }

    fn on_response_with(&mut self, now: i64, status: u16, headers: &Headers<'_>, body: &[u8]) {
        self.d.on_response(now, status, headers, body, &mut self.work);
    }
}

impl std::ops::Deref for D {
    type Target = Discovery;
    fn deref(&self) -> &Discovery {
        &self.d
    }
}

impl std::ops::DerefMut for D {
    fn deref_mut(&mut self) -> &mut Discovery {
        &mut self.d
    }
}

impl std::fmt::Debug for D {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.d.fmt(f)
    }
}

/// The agent's default work buffer: each half bounds the signed kubeconfig and the CA.
const WORK: usize = 32 * 1024;

fn new(token: &BootstrapToken, pins: &[CaPin]) -> Box<D> {
    D::start(Config::new(token, pins), T0, WORK).unwrap()
}

/// Poll and expect a GET of cluster-info; returns the CA PEM when TLS must be verified.
fn expect_get(d: &mut D, now: i64) -> Option<Vec<u8>> {
    match d.poll(now) {
        Action::Send(r) => {
            assert_eq!(r.method, Method::Get);
            assert_eq!(r.path, CLUSTER_INFO_PATH);
            assert_eq!(r.path, "/api/v1/namespaces/kube-public/configmaps/cluster-info");
            match r.tls {
                Tls::Insecure => None,
                Tls::VerifyWith(ca) => Some(ca.to_vec()),
            }
        }
        other => panic!("expected a GET, got {other:?}"),
    }
}

fn expect_failed(d: &mut D, now: i64, e: Error) {
    match d.poll(now) {
        Action::Failed(got) => assert_eq!(got, e, "{:?}", d.failure()),
        other => panic!("expected Failed({e:?}), got {other:?}"),
    }
    assert_eq!(d.phase(), Phase::Failed);
    assert_eq!(d.failure().map(|f| f.0), Some(e));
}

#[test]
fn recorded_cluster_info_pinned() {
    let token = token();
    let pins = [other_pin(), pin()];
    let mut d = new(&token, &pins);
    assert_eq!(expect_get(&mut d, T0), None, "first fetch is not TLS-verified");
    assert!(matches!(d.poll(T0), Action::AwaitResponse { .. }));
    respond(&mut d, T0, 200, &body()).unwrap();
    let ca = expect_get(&mut d, T0).expect("second fetch verifies TLS");
    assert_eq!(ca, rec("serving-ca.pem"), "the CA to verify with is the recorded serving CA");
    respond(&mut d, T0 + 1, 200, &body()).unwrap();
    let kubeconfig = data()["kubeconfig"].as_str().unwrap().to_owned();
    match d.poll(T0 + 1) {
        Action::Done(found) => {
            assert_eq!(found.server, version("server"));
            assert_eq!(found.ca_pem, &rec("serving-ca.pem")[..]);
            assert!(found.pinned);
            assert_eq!(found.cluster_info, kubeconfig.as_bytes());
        }
        other => panic!("expected Done, got {other:?}"),
    }
    assert_eq!(d.attempts(), 2);
    // Done is sticky; a stray response is refused.
    assert!(matches!(d.poll(T0 + 2), Action::Done(_)));
    assert_eq!(respond(&mut d, T0 + 2, 200, &body()), Err(Error::InvalidState));
}

/// Our JWS reproduces the real bootstrapsigner's value byte for byte.
#[test]
fn recorded_jws_reproduced() {
    let token = token();
    let data = data();
    let kubeconfig = data["kubeconfig"].as_str().unwrap();
    let recorded = data[&jws_key(token.id())].as_str().unwrap();
    assert_eq!(sign(&token, kubeconfig), recorded);
    assert!(verify_detached_jws(
        &token.token_id(),
        token.secret_bytes(),
        kubeconfig.as_bytes(),
        recorded.as_bytes()
    ));
    // The full `id.secret` is not the key.
    assert!(!verify_detached_jws(
        &token.token_id(),
        token.to_wire().as_bytes(),
        kubeconfig.as_bytes(),
        recorded.as_bytes()
    ));
}

/// Python's hmac/hashlib/base64 agree on contents of many sizes (several streaming chunks).
#[test]
fn jws_matches_python() {
    let dir = TempDir::new("jws");
    let script = r#"
import sys, hmac, hashlib, base64, json
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=")
out = []
for kid, secret, content in json.load(open(sys.argv[1])):
    h = b(json.dumps({"alg": "HS256", "kid": kid}, separators=(",", ":")).encode())
    sig = hmac.new(secret.encode(), h + b"." + b(content.encode()), hashlib.sha256).digest()
    out.append((h + b".." + b(sig)).decode())
print(json.dumps(out))
"#;
    let mut cases = Vec::new();
    let mut x: u32 = 12345;
    for len in [0usize, 1, 2, 3, 47, 48, 49, 95, 96, 97, 1000, 4099] {
        let content: String = (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                char::from(b' ' + ((x >> 16) % 95) as u8)
            })
            .collect();
        let id = format!("{:06x}", x & 0xff_ffff);
        let secret = format!("{:016x}", u64::from(x) * 0x9e37_79b9);
        cases.push((id, secret, content));
    }
    let input = dir.write("cases.json", &serde_json::to_vec(&cases).unwrap());
    let o = python(&dir.0, script, &[input.to_str().unwrap()]);
    let expected: Vec<String> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(expected.len(), cases.len());
    for ((id, secret, content), want) in cases.iter().zip(&expected) {
        let tid = TokenId::parse(id).unwrap();
        let mut out = [0u8; DETACHED_JWS_LEN];
        let n =
            compute_detached_jws(&tid, secret.as_bytes(), content.as_bytes(), &mut out).unwrap();
        assert_eq!(std::str::from_utf8(&out[..n]).unwrap(), want, "len {}", content.len());
        assert!(verify_detached_jws(&tid, secret.as_bytes(), content.as_bytes(), want.as_bytes()));
    }
}

#[test]
fn wrong_pin_is_pin_mismatch() {
    let token = token();
    let pins = [other_pin()];
    let mut d = new(&token, &pins);
    expect_get(&mut d, T0);
    assert_eq!(respond(&mut d, T0, 200, &body()), Err(Error::PinMismatch));
    expect_failed(&mut d, T0, Error::PinMismatch);
    assert_eq!(d.attempts(), 1, "no second fetch");
}

#[test]
fn wrong_secret_same_id_fails_jws() {
    let real = token();
    let token = BootstrapToken::from_parts(real.id(), "0123456789abcdef").unwrap();
    let pins = [pin()];
    let mut d = new(&token, &pins);
    expect_get(&mut d, T0);
    assert_eq!(respond(&mut d, T0, 200, &body()), Err(Error::JwsInvalid));
    expect_failed(&mut d, T0, Error::JwsInvalid);
    assert_eq!(Error::JwsInvalid.code(), 712);
}

#[test]
fn other_token_id_polls_until_timeout() {
    let real = token();
    let token = BootstrapToken::from_parts("abcdef", real.expose_secret()).unwrap();
    let pins = [pin()];
    let mut d = new(&token, &pins);
    let mut now = T0;
    let mut gets = 0;
    loop {
        match d.poll(now) {
            Action::Send(r) => {
                assert_eq!(r.tls, Tls::Insecure);
                gets += 1;
                respond(&mut d, now, 200, &body()).unwrap();
                assert_eq!(d.last_retry(), Some(Retry::NoSignature));
                assert_eq!(d.phase(), Phase::Backoff);
            }
            Action::Wait { until } => {
                assert_eq!(until, now + 5, "kubeadm's DiscoveryRetryInterval");
                // Polling early changes nothing.
                assert!(matches!(d.poll(until - 1), Action::Wait { .. }));
                now = until;
            }
            Action::Failed(e) => {
                assert_eq!(e, Error::Timeout);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(now, T0 + 300, "default timeout is 5 minutes");
    assert_eq!(gets, 60);
    assert_eq!(d.last_retry(), Some(Retry::NoSignature));
    assert!(d.failure().unwrap().1.contains("invalid for this cluster"));
}

#[test]
fn signature_added_later_is_picked_up() {
    let token = token();
    let pins = [pin()];
    let mut unsigned = data();
    unsigned.remove(&jws_key(token.id()));
    let mut d = new(&token, &pins);
    expect_get(&mut d, T0);
    respond(&mut d, T0, 200, &with_data(&unsigned)).unwrap();
    assert!(matches!(d.poll(T0 + 4), Action::Wait { until } if until == T0 + 5));
    expect_get(&mut d, T0 + 5);
    respond(&mut d, T0 + 5, 200, &body()).unwrap();
    assert!(expect_get(&mut d, T0 + 5).is_some());
    respond(&mut d, T0 + 6, 200, &body()).unwrap();
    assert!(matches!(d.poll(T0 + 6), Action::Done(_)));
}

#[test]
fn tampered_content_fails_jws() {
    let token = token();
    let pins = [pin()];
    let mut tampered = data();
    let kc = tampered["kubeconfig"].as_str().unwrap().replace("127.0.0.1:33101", "127.0.0.1:33102");
    tampered.insert("kubeconfig".into(), Value::String(kc));
    let mut d = new(&token, &pins);
    expect_get(&mut d, T0);
    assert_eq!(respond(&mut d, T0, 200, &with_data(&tampered)), Err(Error::JwsInvalid));
    expect_failed(&mut d, T0, Error::JwsInvalid);

    // A tampered signature (one character changed, or "foo" appended) fails as well.
    let key = jws_key(token.id());
    let good = data()[&key].as_str().unwrap().to_owned();
    let mut flipped = good.clone().into_bytes();
    let last = flipped.len() - 1;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    for bad in [String::from_utf8(flipped).unwrap(), format!("{good}foo")] {
        let mut m = data();
        m.insert(key.clone(), Value::String(bad));
        let mut d = new(&token, &pins);
        expect_get(&mut d, T0);
        assert_eq!(respond(&mut d, T0, 200, &with_data(&m)), Err(Error::JwsInvalid));
    }
}

#[test]
fn second_fetch_must_be_identical() {
    let token = token();
    let pins = [pin()];
    let mut changed = data();
    let kc = format!("{}\n", changed["kubeconfig"].as_str().unwrap());
    let sig = sign(&token, &kc);
    changed.insert("kubeconfig".into(), Value::String(kc));
    changed.insert(jws_key(token.id()), Value::String(sig));
    let mut d = new(&token, &pins);
    expect_get(&mut d, T0);
    respond(&mut d, T0, 200, &body()).unwrap();
    assert!(expect_get(&mut d, T0).is_some());
    // Even correctly signed, different content on the verified connection is refused.
    assert_eq!(respond(&mut d, T0, 200, &with_data(&changed)), Err(Error::JwsInvalid));
    expect_failed(&mut d, T0, Error::JwsInvalid);
    assert!(d.failure().unwrap().1.contains("differs"));

    // The same string escaped differently in JSON is the same content.
    let mut d = new(&token, &pins);
    expect_get(&mut d, T0);
    respond(&mut d, T0, 200, &body()).unwrap();
    expect_get(&mut d, T0);
    let escaped = String::from_utf8(body()).unwrap().replace("https://", "https:\\u002f/");
    assert_ne!(escaped.as_bytes(), &body()[..]);
    respond(&mut d, T0, 200, escaped.as_bytes()).unwrap();
    assert!(matches!(d.poll(T0), Action::Done(_)));
}

#[test]
fn unpinned_needs_explicit_opt_in() {
    let token = token();
    assert_eq!(D::start(Config::new(&token, &[]), T0, WORK).err(), Some(Error::PinMismatch));
    let mut cfg = Config::new(&token, &[]);
    cfg.allow_unpinned = true;
    let mut d = D::start(cfg, T0, WORK).unwrap();
    expect_get(&mut d, T0);
    respond(&mut d, T0, 200, &body()).unwrap();
    match d.poll(T0) {
        Action::Done(found) => {
            assert!(!found.pinned);
            assert_eq!(found.ca_pem, &rec("serving-ca.pem")[..]);
            assert_eq!(found.server, version("server"));
        }
        other => panic!("expected Done, got {other:?}"),
    }
    assert_eq!(d.attempts(), 1, "kubeadm skips the verified re-fetch when unpinned");
}

#[test]
fn retries_and_http_errors() {
    let token = token();
    let pins = [pin()];
    let mut d = new(&token, &pins);
    // 404 (no cluster-info yet), 503, transport error: retried every 5 s.
    let mut now = T0;
    for outcome in [Some(404u16), Some(503), None, Some(429)] {
        assert_eq!(expect_get(&mut d, now), None);
        match outcome {
            Some(s) => {
                respond(&mut d, now, s, b"{}").unwrap();
                assert_eq!(d.last_retry(), Some(Retry::Status(s)));
            }
            None => {
                d.on_transport_error(now);
                assert_eq!(d.last_retry(), Some(Retry::Transport));
            }
        }
        assert!(matches!(d.poll(now), Action::Wait { until } if until == now + 5));
        now += 5;
    }
    expect_get(&mut d, now);
    respond(&mut d, now, 200, &body()).unwrap();
    // The verified re-fetch is retried as such.
    assert!(expect_get(&mut d, now).is_some());
    d.on_transport_error(now);
    now += 5;
    assert!(expect_get(&mut d, now).is_some());
    respond(&mut d, now, 200, &body()).unwrap();
    assert!(matches!(d.poll(now), Action::Done(_)));

    for (status, e) in
        [(401, Error::Unauthorized), (403, Error::Forbidden), (400, Error::HttpStatus)]
    {
        let mut d = new(&token, &pins);
        expect_get(&mut d, T0);
        assert_eq!(respond(&mut d, T0, status, b"{}"), Err(e));
        expect_failed(&mut d, T0, e);
    }
    // Out of order.
    let mut d = new(&token, &pins);
    assert_eq!(respond(&mut d, T0, 200, &body()), Err(Error::InvalidState));
    assert_eq!(d.phase(), Phase::Fetch);
}

/// A 429 or 5xx with `Retry-After`: retried when the server asked (with jitter from the seed),
/// not after the 5 s interval; a 404 with the header, or a header that is no delta-seconds,
/// keeps the interval.
#[test]
fn pushback_waits_as_the_server_asked() {
    let token = token();
    let pins = [pin()];
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..32 {
        let mut cfg = Config::new(&token, &pins);
        cfg.jitter_seed = seed;
        let mut d = D::start(cfg, T0, WORK).unwrap();
        let mut now = T0;
        for (status, value, waits) in [
            (429u16, Some(&b"1"[..]), 2..=3),
            (503, Some(b"20"), 21..=31),
            (404, Some(b"1"), 5..=5),
            (429, Some(b"later"), 5..=5),
            (500, None, 5..=5),
        ] {
            expect_get(&mut d, now);
            d.on_response_with(now, status, &Headers::retry_after(value), b"{}");
            assert_eq!(d.last_retry(), Some(Retry::Status(status)));
            let honoured = waits.start() != &5;
            assert_eq!(d.retry_after().is_some(), honoured);
            let Action::Wait { until } = d.poll(now) else { panic!() };
            assert!(waits.contains(&(until - now)), "{status} {value:?}: {}", until - now);
            if status == 429 && honoured {
                seen.insert(until - now);
            }
            now = until;
        }
        expect_get(&mut d, now);
        respond(&mut d, now, 200, &body()).unwrap();
        assert_eq!(d.retry_after(), None);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [2, 3], "the jitter spreads a fleet");
}

#[test]
fn malformed_cluster_info() {
    let token = token();
    let pins = [pin()];
    let key = jws_key(token.id());
    let first = |body: &[u8]| {
        let mut d = new(&token, &pins);
        expect_get(&mut d, T0);
        let r = respond(&mut d, T0, 200, body);
        (r, d.last_retry())
    };
    assert_eq!(first(b"<html>").0, Err(Error::MalformedResponse));
    assert_eq!(first(b"[]").0, Err(Error::MalformedResponse));
    // No data at all: not signed yet.
    assert_eq!(first(br#"{"kind":"ConfigMap"}"#), (Ok(()), Some(Retry::NoSignature)));
    let mut m = data();
    m.remove("kubeconfig");
    assert_eq!(first(&with_data(&m)).0, Err(Error::MalformedResponse));
    let mut m = data();
    m.insert(key.clone(), Value::String(String::new()));
    assert_eq!(first(&with_data(&m)).0, Err(Error::TokenMismatch));
    let mut m = data();
    m.insert(key.clone(), Value::from(7));
    assert_eq!(first(&with_data(&m)).0, Err(Error::MalformedResponse));

    // Correctly signed but unusable kubeconfigs.
    for kc in [
        "not: [a kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters: []\n",
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://x\n  name: \"\"\n",
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: \
         bm90IGEgY2VydA==\n    server: https://x\n  name: \"\"\n",
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: \
         LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1BQT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n    \
         server: https://x\n  name: \"\"\n",
    ] {
        let mut m = data();
        m.insert(key.clone(), Value::String(sign(&token, kc)));
        m.insert("kubeconfig".into(), Value::String(kc.into()));
        assert_eq!(first(&with_data(&m)).0, Err(Error::MalformedResponse), "{kc}");
    }
    // The cluster without a server is unusable.
    let kc =
        data()["kubeconfig"].as_str().unwrap().replace("    server: https://127.0.0.1:33101\n", "");
    let mut m = data();
    m.insert(key.clone(), Value::String(sign(&token, &kc)));
    m.insert("kubeconfig".into(), Value::String(kc));
    assert_eq!(first(&with_data(&m)).0, Err(Error::MalformedResponse));
}

#[test]
fn small_buffers_are_too_large_not_panics() {
    let token = token();
    let pins = [pin()];
    let mut d = D::start(Config::new(&token, &pins), T0, 1024).unwrap();
    assert!(matches!(d.poll(T0), Action::Send(_)));
    assert_eq!(respond(&mut d, T0, 200, &body()), Err(Error::TooLarge));
}

#[test]
fn bootstrap_kubeconfig_read_by_kubectl() {
    let token = token();
    let pins = [pin()];
    let mut d = new(&token, &pins);
    expect_get(&mut d, T0);
    respond(&mut d, T0, 200, &body()).unwrap();
    expect_get(&mut d, T0);
    respond(&mut d, T0, 200, &body()).unwrap();
    let mut out = vec![0u8; 8192];
    let n = match d.poll(T0) {
        Action::Done(found) => {
            let mut small = [0u8; 64];
            assert!(matches!(
                found.write_bootstrap_kubeconfig(&mut small),
                Err(Error::BufferTooSmall { .. })
            ));
            found.write_bootstrap_kubeconfig(&mut out).unwrap()
        }
        other => panic!("expected Done, got {other:?}"),
    };
    let dir = TempDir::new("discovery-kubectl");
    let f = dir.write("bootstrap-kubelet.conf", &out[..n]);
    let o = ok(
        &dir.0,
        "kubectl",
        &["config", "view", "--raw", "-o", "json", "--kubeconfig", f.to_str().unwrap()],
        None,
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["current-context"], "tls-bootstrap-token-user@kubernetes");
    let cluster = &v["clusters"][0];
    assert_eq!(cluster["name"], "kubernetes");
    assert_eq!(cluster["cluster"]["server"], version("server").as_str());
    let ca_b64 = cluster["cluster"]["certificate-authority-data"].as_str().unwrap();
    let mut ca = vec![0u8; ca_b64.len()];
    assert_eq!(Base64::decode(ca_b64, &mut ca).unwrap(), &rec("serving-ca.pem")[..]);
    let user = &v["users"][0];
    assert_eq!(user["name"], "tls-bootstrap-token-user");
    assert_eq!(user["user"]["token"], version("bootstrap_token").as_str());
    let ctx = &v["contexts"][0];
    assert_eq!(ctx["name"], "tls-bootstrap-token-user@kubernetes");
    assert_eq!(ctx["context"]["cluster"], "kubernetes");
    assert_eq!(ctx["context"]["user"], "tls-bootstrap-token-user");
    assert_eq!(v["clusters"].as_array().unwrap().len(), 1);
    assert_eq!(v["users"].as_array().unwrap().len(), 1);
}
