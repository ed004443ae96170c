//! The engine driven by responses recorded from a real kube-apiserver v1.35.4 +
//! kube-controller-manager (see `data/recorded/VERSIONS` and `index.tsv`; recorded by the e2e
//! harness), under a simulated clock.

use kubeboot::Error;
use kubeboot::csr::Profile;
use kubeboot::engine::{
    Action, Auth, Config, Engine, Expect, Method, Naming, Phase, RequestKind, StreamControl,
};
use kubeboot::error::Reason;
use kubeboot::key::NodeKey;
use kubeboot::pushback::Headers;
use kubeboot::token::BootstrapToken;

fn rec(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/recorded").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The engine over test memory (leaked: a few hundred engines in all), with the CA its
/// answers are checked against.
struct Rig {
    e: Engine<'static>,
    ca: Vec<u8>,
}

impl Rig {
    fn new(cfg: &Config<'_>, key: &NodeKey, now: i64, seed: u64) -> Result<Rig, Error> {
        let work = Box::leak(vec![0u8; 32 * 1024].into_boxed_slice());
        let cert = Box::leak(vec![0u8; 16 * 1024].into_boxed_slice());
        let mut e = Engine::new(work, cert);
        e.start(cfg, key, now, seed)?;
        Ok(Rig { e, ca: cfg.ca_pem.to_vec() })
    }

    fn on_response(&mut self, now: i64, status: u16, body: &[u8]) {
        self.on_response_with(now, status, &Headers::NONE, body);
    }

    fn on_response_with(&mut self, now: i64, status: u16, headers: &Headers<'_>, body: &[u8]) {
        let expect = Expect { ca_pem: &self.ca, profile: Profile::Client, prove: false };
        self.e.on_response(now, status, headers, body, &expect);
    }

    fn on_stream_data(&mut self, now: i64, chunk: &[u8]) -> StreamControl {
        let expect = Expect { ca_pem: &self.ca, profile: Profile::Client, prove: false };
        self.e.on_stream_data(now, chunk, &expect)
    }

    fn on_stream_end(&mut self, now: i64) {
        let expect = Expect { ca_pem: &self.ca, profile: Profile::Client, prove: false };
        self.e.on_stream_end(now, &expect);
    }
}

impl std::ops::Deref for Rig {
    type Target = Engine<'static>;
    fn deref(&self) -> &Engine<'static> {
        &self.e
    }
}

impl std::ops::DerefMut for Rig {
    fn deref_mut(&mut self) -> &mut Engine<'static> {
        &mut self.e
    }
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.e.fmt(f)
    }
}

/// `on_response` with the engine's verdict as a result, as the tests state it: `Err(InvalidState)`
/// when no request was outstanding (the response is ignored and changes nothing: checked), else
/// the failure it caused, if any.
fn respond(e: &mut Rig, now: i64, status: u16, body: &[u8]) -> Result<(), Error> {
    if !e.request_outstanding() {
        let before = format!("{e:?}");
        e.on_response(now, status, body);
        assert_eq!(format!("{e:?}"), before, "an unexpected response changed the engine");
        return Err(Error::InvalidState);
    }
    e.on_response(now, status, body);
    e.failure().map_or(Ok(()), |(err, _)| Err(err))
}

/// `on_stream_data` likewise: `Err(InvalidState)` when no watch was open (and `Close`), else the
/// failure the chunk caused; `Close` exactly when the engine left the watch.
fn stream(e: &mut Rig, now: i64, chunk: &[u8]) -> Result<(), Error> {
    if e.phase() != Phase::Watching {
        assert_eq!(e.on_stream_data(now, chunk), StreamControl::Close);
        return Err(Error::InvalidState);
    }
    let control = e.on_stream_data(now, chunk);
    assert_eq!(control == StreamControl::Close, e.phase() != Phase::Watching);
    e.failure().map_or(Ok(()), |(err, _)| Err(err))
}

fn t0() -> i64 {
    kubeboot::rfc3339::parse("2026-12-02T10:50:40Z").unwrap()
}

const TOKEN: &str = "hi3rc6.cpoi3m254kzpt12t";
const APPROVED: &str = "kubeboot-rec-approved-105026";

struct Fixture {
    key: NodeKey,
    token: BootstrapToken,
    ca: Vec<u8>,
}

fn fixture(key_file: &str) -> Fixture {
    Fixture {
        key: NodeKey::from_pem(&rec(key_file)).unwrap(),
        token: BootstrapToken::parse(TOKEN).unwrap(),
        ca: rec("client-ca.pem"),
    }
}

fn config<'a>(f: &'a Fixture, node: &'a str) -> Config<'a> {
    Config::bootstrap(node, &f.token, &f.ca)
}

/// Poll and expect a request; return (kind, method, path, authorization, body).
fn expect_send(e: &mut Rig, now: i64) -> (RequestKind, Method, String, Option<String>, Vec<u8>) {
    match e.poll(now) {
        Action::Send(r) => (
            r.kind,
            r.method,
            r.path.to_owned(),
            r.authorization.map(str::to_owned),
            r.body.to_vec(),
        ),
        other => panic!("expected a request, got {other:?}"),
    }
}

fn create_ok(e: &mut Rig, now: i64) {
    let (kind, method, path, auth, body) = expect_send(e, now);
    assert_eq!((kind, method), (RequestKind::Create, Method::Post));
    assert_eq!(path, "/apis/certificates.k8s.io/v1/certificatesigningrequests");
    assert_eq!(auth.as_deref(), Some("Bearer hi3rc6.cpoi3m254kzpt12t"));
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["spec"]["signerName"], "kubernetes.io/kube-apiserver-client-kubelet");
    assert!(v["metadata"]["name"].as_str().unwrap().starts_with("node-csr-"));
    assert!(matches!(e.poll(now), Action::AwaitResponse));
    respond(e, now, 201, &rec("csr-create-201.json")).unwrap();
    assert_eq!(e.csr_name(), APPROVED);
}

fn expect_watch(e: &mut Rig, now: i64, name: &str) {
    let (kind, method, path, _, body) = expect_send(e, now);
    assert_eq!((kind, method), (RequestKind::Watch, Method::Get));
    assert!(body.is_empty());
    assert!(
        path.starts_with(&format!(
            "/apis/certificates.k8s.io/v1/certificatesigningrequests?fieldSelector=metadata.name%3D{name}&watch=true"
        )),
        "{path}"
    );
}

#[test]
fn bootstrap_by_watch_with_any_chunking() {
    let f = fixture("approved.key.pem");
    let watch = rec("watch-approved.json");
    // Every split point of the stream into two chunks, plus byte-by-byte.
    let mut splits: Vec<Vec<usize>> = (0..=watch.len()).step_by(7).map(|i| vec![i]).collect();
    splits.push((1..watch.len()).collect());
    for cuts in splits {
        let now = t0();
        let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 42).unwrap();
        create_ok(&mut e, now);
        expect_watch(&mut e, now, APPROVED);
        let mut last = 0;
        for &c in cuts.iter().chain(std::iter::once(&watch.len())) {
            if e.phase() != Phase::Watching {
                break;
            }
            stream(&mut e, now + 1, &watch[last..c]).unwrap();
            last = c;
        }
        match e.poll(now + 1) {
            Action::Done(issued) => {
                assert!(issued.cert_pem.starts_with(b"-----BEGIN CERTIFICATE-----"));
                assert_eq!(issued.verified.ca_subject.as_str(), "CN=kubeboot-e2e-client-ca");
                let (nb, na) = (issued.verified.not_before, issued.verified.not_after);
                let life = na - nb;
                assert!(life > 0);
                assert_eq!(issued.csr_name, APPROVED);
            }
            other => panic!("cuts {:?}: {other:?}", &cuts[..cuts.len().min(3)]),
        }
    }
}

#[test]
fn already_exists_reuses_a_compatible_csr() {
    let f = fixture("approved.key.pem");
    let now = t0();
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 1).unwrap();
    let (_, _, _, _, _) = expect_send(&mut e, now);
    respond(&mut e, now, 409, &rec("csr-create-409-already-exists.json")).unwrap();
    let (kind, method, path, auth, _) = expect_send(&mut e, now);
    assert_eq!((kind, method), (RequestKind::Get, Method::Get));
    assert!(
        path.starts_with("/apis/certificates.k8s.io/v1/certificatesigningrequests/node-csr-"),
        "{path}"
    );
    assert!(auth.is_some());
    // The object found is ours (same key, same subject) and already issued.
    respond(&mut e, now, 200, &rec("csr-get-approved-issued.json")).unwrap();
    assert!(matches!(e.poll(now), Action::Done(_)));
}

#[test]
fn already_exists_refuses_a_csr_made_with_another_key() {
    let f = fixture("denied.key.pem");
    let now = t0();
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 1).unwrap();
    expect_send(&mut e, now);
    respond(&mut e, now, 409, &rec("csr-create-409-already-exists.json")).unwrap();
    expect_send(&mut e, now);
    assert_eq!(
        respond(&mut e, now, 200, &rec("csr-get-approved-issued.json")),
        Err(Error::CsrIncompatible)
    );
    assert_eq!(e.poll(now).failed(), Some(Error::CsrIncompatible));
    let (_, d) = e.failure().unwrap();
    assert!(d.message.contains("not signed by our key"), "{d:?}");
}

trait FailedExt {
    fn failed(self) -> Option<Error>;
}
impl FailedExt for Action<'_> {
    fn failed(self) -> Option<Error> {
        match self {
            Action::Failed(e) => Some(e),
            _ => None,
        }
    }
}

#[test]
fn denied_and_failed_carry_the_servers_reason() {
    for (key, watch, err, reason) in [
        ("denied.key.pem", "watch-denied.json", Error::CsrDenied, ""),
        ("failed.key.pem", "watch-failed.json", Error::CsrFailed, "SignerValidationFailure"),
    ] {
        let f = fixture(key);
        let now = t0();
        let node = if key.starts_with("denied") { "rec-2" } else { "rec-3" };
        let mut e = Rig::new(&config(&f, node), &f.key, now, 7).unwrap();
        expect_send(&mut e, now);
        let created = if key.starts_with("denied") {
            "csr-create-201-pending.json"
        } else {
            "csr-create-201-to-fail.json"
        };
        respond(&mut e, now, 201, &rec(created)).unwrap();
        expect_send(&mut e, now);
        assert_eq!(stream(&mut e, now, &rec(watch)), Err(err));
        assert_eq!(e.poll(now).failed(), Some(err));
        let (_, d) = e.failure().unwrap();
        if !reason.is_empty() {
            assert_eq!(d.reason.as_str(), reason);
        }
        assert!(!d.message.is_empty());
        // Once failed, stays failed; further input is refused.
        assert_eq!(respond(&mut e, now, 200, b"{}"), Err(Error::InvalidState));
    }
}

#[test]
fn get_of_denied_and_failed_objects() {
    let f = fixture("denied.key.pem");
    let now = t0();
    let mut cfg = config(&f, "rec-2");
    cfg.watch = false;
    let mut e = Rig::new(&cfg, &f.key, now, 7).unwrap();
    expect_send(&mut e, now);
    respond(&mut e, now, 201, &rec("csr-create-201-pending.json")).unwrap();
    let (kind, ..) = expect_send(&mut e, now);
    assert_eq!(kind, RequestKind::Get, "poll mode GETs");
    respond(&mut e, now, 200, &rec("csr-get-pending.json")).unwrap();
    // Pending: wait the poll interval, then GET again.
    match e.poll(now) {
        Action::Wait { until } => assert_eq!(until, now + 5),
        other => panic!("{other:?}"),
    }
    let (kind, ..) = expect_send(&mut e, now + 5);
    assert_eq!(kind, RequestKind::Get);
    assert_eq!(respond(&mut e, now + 5, 200, &rec("csr-get-denied.json")), Err(Error::CsrDenied));
}

#[test]
fn unauthorized_forbidden_and_invalid() {
    for (file, status, err, needle) in [
        ("csr-create-401-wrong-secret.json", 401, Error::Unauthorized, "Unauthorized"),
        ("csr-create-403-no-binding.json", 403, Error::Forbidden, "cannot create resource"),
        ("csr-create-422-invalid.json", 422, Error::HttpStatus, "Invalid"),
    ] {
        let f = fixture("approved.key.pem");
        let now = t0();
        let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 3).unwrap();
        expect_send(&mut e, now);
        assert_eq!(respond(&mut e, now, status, &rec(file)), Err(err));
        assert_eq!(e.poll(now).failed(), Some(err));
        let (_, d) = e.failure().unwrap();
        assert_eq!(d.status, Some(status));
        assert!(d.reason.contains(needle) || d.message.contains(needle), "{d:?}");
    }
}

#[test]
fn unauthorized_while_waiting_is_retried_a_few_times() {
    // A restarted apiserver answers 401 until its token cache has synced: retried, then it works.
    let f = fixture("approved.key.pem");
    let now = t0();
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 4).unwrap();
    create_ok(&mut e, now);
    let mut t = now;
    for _ in 0..kubeboot::engine::UNAUTHORIZED_RETRIES {
        expect_watch(&mut e, t, APPROVED);
        respond(&mut e, t, 401, &rec("csr-create-401-wrong-secret.json")).unwrap();
        let Action::Wait { until } = e.poll(t) else { panic!("a 401 while waiting backs off") };
        assert!(until > t);
        t = until;
    }
    // One more in a row is a failure naming the cause.
    expect_watch(&mut e, t, APPROVED);
    assert_eq!(
        respond(&mut e, t, 401, &rec("csr-create-401-wrong-secret.json")),
        Err(Error::Unauthorized)
    );
    assert_eq!(e.poll(t).failed(), Some(Error::Unauthorized));

    // A good answer in between resets the count.
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 4).unwrap();
    create_ok(&mut e, now);
    let mut cfg_t = now;
    for round in 0..2 {
        for _ in 0..kubeboot::engine::UNAUTHORIZED_RETRIES {
            expect_watch(&mut e, cfg_t, APPROVED);
            respond(&mut e, cfg_t, 401, b"{}").unwrap();
            let Action::Wait { until } = e.poll(cfg_t) else { panic!("round {round}") };
            cfg_t = until;
        }
        expect_watch(&mut e, cfg_t, APPROVED);
        let watch = rec("watch-approved.json");
        let first_line = watch.split(|&b| b == b'\n').next().unwrap();
        let mut line = first_line.to_vec();
        line.push(b'\n');
        stream(&mut e, cfg_t, &line).unwrap(); // a pending event: the token works again
        e.on_stream_end(cfg_t);
    }
    expect_watch(&mut e, cfg_t, APPROVED);
    respond(&mut e, cfg_t, 200, &rec("watch-approved.json")).unwrap();
    assert!(e.poll(cfg_t).failed().is_none());
}

#[test]
fn server_errors_back_off_like_the_kubelet() {
    let f = fixture("approved.key.pem");
    let now = t0();
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 9).unwrap();
    let mut t = now;
    let mut waits = Vec::new();
    for _ in 0..7 {
        expect_send(&mut e, t);
        respond(&mut e, t, 503, b"{\"kind\":\"Status\"}").unwrap();
        match e.poll(t) {
            Action::Wait { until } => {
                waits.push(until - t);
                t = until;
            }
            other => panic!("{other:?}"),
        }
    }
    // 2, 4, 8, 16 s (+0–10 %, rounded up to whole seconds), then every 32 s.
    assert!((2..=3).contains(&waits[0]), "{waits:?}");
    assert!((4..=5).contains(&waits[1]), "{waits:?}");
    assert!((8..=9).contains(&waits[2]), "{waits:?}");
    assert!((16..=18).contains(&waits[3]), "{waits:?}");
    assert_eq!(&waits[4..], &[32, 32, 32], "{waits:?}");
    // Transport errors too; and the server recovers.
    expect_send(&mut e, t);
    e.on_transport_error(t);
    let Action::Wait { until } = e.poll(t) else { panic!() };
    expect_send(&mut e, until);
    respond(&mut e, until, 201, &rec("csr-create-201.json")).unwrap();
    expect_watch(&mut e, until, APPROVED);
}

/// `Retry-After` on a 429 or 5xx: the wait is what the server asked, spread by the seed's jitter
/// (not the kubelet's 2, 4, 8 ... s), the engine says so, and its deadline still cuts it.
#[test]
fn pushback_waits_as_the_server_asked() {
    let f = fixture("approved.key.pem");
    let now = t0();
    let apf = b"Too many requests, please try again later.\n";
    let mut waits = Vec::new();
    for seed in 0..64 {
        let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, seed).unwrap();
        let mut t = now;
        for asked in [1u32, 1, 1, 1, 1, 1, 8] {
            expect_send(&mut e, t);
            let value = asked.to_string();
            e.on_response_with(t, 429, &Headers::retry_after(Some(value.as_bytes())), apf);
            assert_eq!(e.retry_after(), Some(asked));
            let Action::Wait { until } = e.poll(t) else { panic!("{e:?}") };
            waits.push((asked, until - t));
            t = until;
        }
        // A 503 without the header: the kubelet's backoff (its 8th attempt: 32 s), said so.
        expect_send(&mut e, t);
        respond(&mut e, t, 503, b"{}").unwrap();
        assert_eq!(e.retry_after(), None);
        let Action::Wait { until } = e.poll(t) else { panic!() };
        assert_eq!(until - t, 32);
        // The create succeeds; the watch is pushed back too, and it stays a watch (no polling).
        expect_send(&mut e, until);
        respond(&mut e, until, 201, &rec("csr-create-201.json")).unwrap();
        let mut t = until;
        for _ in 0..4 {
            expect_watch(&mut e, t, APPROVED);
            e.on_response_with(t, 503, &Headers::retry_after(Some(b"2")), b"{}");
            assert_eq!(e.retry_after(), Some(2));
            let Action::Wait { until } = e.poll(t) else { panic!() };
            assert!((3..=4).contains(&(until - t)), "{}", until - t);
            t = until;
        }
        expect_watch(&mut e, t, APPROVED);
        assert_eq!(e.retry_after(), None);
        respond(&mut e, t, 200, &rec("watch-approved.json")).unwrap();
        assert!(matches!(e.poll(t), Action::Done(_)));
    }
    // Told 1 s: 2 or 3 s of the whole-second clock (never less than 1 real second), both seen;
    // told 8 s: 9 to 13 s.
    let ones: Vec<i64> = waits.iter().filter(|w| w.0 == 1).map(|w| w.1).collect();
    assert!(ones.iter().all(|w| (2..=3).contains(w)), "{ones:?}");
    assert!(ones.contains(&2) && ones.contains(&3), "{ones:?}");
    assert!(waits.iter().filter(|w| w.0 == 8).all(|w| (9..=13).contains(&w.1)), "{waits:?}");
    // A header that is no delta-seconds, and one on a status that is no pushback: our own
    // schedule (the first backoff step, 2 s).
    for (status, value) in [(429, &b"Wed, 21 Oct 2015 07:28:00 GMT"[..]), (408, b"1")] {
        let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 7).unwrap();
        expect_send(&mut e, now);
        e.on_response_with(now, status, &Headers::retry_after(Some(value)), b"{}");
        assert_eq!(e.retry_after(), None);
        let Action::Wait { until } = e.poll(now) else { panic!() };
        assert!((2..=3).contains(&(until - now)));
    }
    // The wait's deadline cuts a long ask: at the deadline the engine times out.
    let mut cfg = config(&f, "rec-1");
    cfg.wait_secs = 60;
    let mut e = Rig::new(&cfg, &f.key, now, 3).unwrap();
    expect_send(&mut e, now);
    e.on_response_with(now, 429, &Headers::retry_after(Some(b"120")), b"{}");
    assert!(matches!(e.poll(now), Action::Wait { until } if until == now + 60));
    assert_eq!(e.poll(now + 60).failed(), Some(Error::Timeout));
    // A response when nothing is outstanding changes nothing, header or not.
    let before = format!("{e:?}");
    e.on_response_with(now, 429, &Headers::retry_after(Some(b"1")), b"{}");
    assert_eq!(format!("{e:?}"), before);
}

#[test]
fn the_wait_has_a_deadline() {
    let f = fixture("approved.key.pem");
    let now = t0();
    let mut cfg = config(&f, "rec-1");
    cfg.wait_secs = 60;
    let mut e = Rig::new(&cfg, &f.key, now, 3).unwrap();
    create_ok(&mut e, now);
    expect_watch(&mut e, now, APPROVED);
    assert!(matches!(e.poll(now + 59), Action::AwaitResponse));
    assert_eq!(e.poll(now + 60).failed(), Some(Error::Timeout));
}

#[test]
fn watch_end_rewatches_and_broken_watch_falls_back_to_polling() {
    let f = fixture("approved.key.pem");
    let now = t0();
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 5).unwrap();
    create_ok(&mut e, now);
    expect_watch(&mut e, now, APPROVED);
    // The first event (pending ADDED) then the server closes the stream: watch again at once.
    let watch = rec("watch-approved.json");
    let first_line = watch.split(|&b| b == b'\n').next().unwrap();
    let mut line = first_line.to_vec();
    line.push(b'\n');
    stream(&mut e, now, &line).unwrap();
    e.on_stream_end(now);
    expect_watch(&mut e, now, APPROVED);
    // Three failed watches without any event: switch to GET polling.
    let mut t = now;
    for _ in 0..3 {
        e.on_transport_error(t);
        match e.poll(t) {
            Action::Wait { until } => t = until,
            Action::Send(_) => panic!("should back off"),
            other => panic!("{other:?}"),
        }
        if let Action::Send(r) = e.poll(t) {
            if r.kind == RequestKind::Get {
                break;
            }
        }
    }
    assert_eq!(e.phase(), Phase::Fetching);
    respond(&mut e, t, 200, &rec("csr-get-approved-issued.json")).unwrap();
    assert!(matches!(e.poll(t), Action::Done(_)));
}

#[test]
fn deletion_and_uid_change_are_failures() {
    let f = fixture("approved.key.pem");
    let watch = String::from_utf8(rec("watch-approved.json")).unwrap();
    let first = watch.lines().next().unwrap().to_owned();
    for (event, err) in [
        (first.replacen("\"ADDED\"", "\"DELETED\"", 1), Error::CsrDeleted),
        (
            first.replacen(
                "077a2a73-a540-4159-987f-49d7d0ec0c1d",
                "00000000-0000-0000-0000-000000000000",
                1,
            ),
            Error::CsrUidChanged,
        ),
        ("{\"type\":\"ADDED\",\"object\":{\"kind\":".to_owned(), Error::MalformedResponse),
    ] {
        let now = t0();
        let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 5).unwrap();
        create_ok(&mut e, now);
        expect_watch(&mut e, now, APPROVED);
        assert_eq!(
            stream(&mut e, now, format!("{event}\n").as_bytes()),
            Err(err),
            "{}",
            &event[..40]
        );
        assert_eq!(e.poll(now).failed(), Some(err));
    }
}

#[test]
fn issued_certificate_is_validated_before_it_is_accepted() {
    // Wrong CA bundle: the real certificate does not chain to it.
    let mut f = fixture("approved.key.pem");
    f.ca = rec("serving-ca.pem");
    let now = t0();
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 5).unwrap();
    create_ok(&mut e, now);
    expect_watch(&mut e, now, APPROVED);
    let r = stream(&mut e, now, &rec("watch-approved.json"));
    assert!(matches!(r, Err(Error::Verify(v)) if v.reason == Reason::Untrusted), "{r:?}");
    // Wrong node name: the CSR we would send differs, and the certificate is refused.
    let f = fixture("approved.key.pem");
    let mut e = Rig::new(&config(&f, "rec-9"), &f.key, now, 5).unwrap();
    create_ok(&mut e, now);
    expect_watch(&mut e, now, APPROVED);
    let r = stream(&mut e, now, &rec("watch-approved.json"));
    assert!(matches!(r, Err(Error::Verify(v)) if v.reason == Reason::SubjectMismatch), "{r:?}");
    // Checked by a clock past its expiry, the certificate just issued is the clock's fault, not
    // the certificate's: it is judged in the middle of its validity and handed over, saying so.
    let later = kubeboot::rfc3339::parse("2026-12-02T12:00:00Z").unwrap();
    let mut e2 =
        Rig::new(&Config { wait_secs: 86400, ..config(&f, "rec-1") }, &f.key, now, 5).unwrap();
    create_ok(&mut e2, now);
    expect_watch(&mut e2, now, APPROVED);
    stream(&mut e2, later, &rec("watch-approved.json")).unwrap();
    match e2.poll(later) {
        Action::Done(i) => {
            assert!(i.clock_off && i.anchored);
            assert!(i.verified.not_after < later);
        }
        other => panic!("{other:?}"),
    }
    // Only its time: a certificate that fails anything else as well is refused for that.
    let mut e3 =
        Rig::new(&Config { wait_secs: 86400, ..config(&f, "rec-9") }, &f.key, now, 5).unwrap();
    create_ok(&mut e3, now);
    expect_watch(&mut e3, now, APPROVED);
    let r = stream(&mut e3, later, &rec("watch-approved.json"));
    assert!(matches!(r, Err(Error::Verify(v)) if v.reason == Reason::SubjectMismatch), "{r:?}");
}

#[test]
fn rotation_uses_generate_name_and_no_token() {
    let f = fixture("approved.key.pem");
    let now = t0();
    let cfg = Config::rotation("rec-1", &f.ca);
    assert_eq!(cfg.naming, Naming::Generate);
    assert!(matches!(cfg.auth, Auth::ClientCertificate));
    let mut e = Rig::new(&cfg, &f.key, now, 5).unwrap();
    let (kind, _, _, auth, body) = expect_send(&mut e, now);
    assert_eq!(kind, RequestKind::Create);
    assert_eq!(auth, None);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["metadata"]["generateName"], "csr-");
    assert!(v["metadata"].get("name").is_none());
    // 409 cannot happen with generateName; if it does, it is an error, not a reuse.
    assert_eq!(
        respond(&mut e, now, 409, &rec("csr-create-409-already-exists.json")),
        Err(Error::HttpStatus)
    );
}

#[test]
fn a_rotation_refused_while_waiting_fails_at_once() {
    // A 401 to the client certificate is not a token cache still syncing: no retries, so the
    // agent can fall back to its bootstrap kubeconfig without waiting out the backoff.
    let f = fixture("approved.key.pem");
    let now = t0();
    let mut e = Rig::new(&Config::rotation("rec-1", &f.ca), &f.key, now, 5).unwrap();
    let (kind, ..) = expect_send(&mut e, now);
    assert_eq!(kind, RequestKind::Create);
    assert!(matches!(e.poll(now), Action::AwaitResponse));
    respond(&mut e, now, 201, &rec("csr-create-201.json")).unwrap();
    expect_watch(&mut e, now, APPROVED);
    assert_eq!(
        respond(&mut e, now, 401, &rec("csr-create-401-wrong-secret.json")),
        Err(Error::Unauthorized)
    );
    assert_eq!(e.poll(now).failed(), Some(Error::Unauthorized));
}

#[test]
fn debug_never_shows_the_token() {
    let f = fixture("approved.key.pem");
    let mut e = Rig::new(&config(&f, "rec-1"), &f.key, t0(), 5).unwrap();
    let dbg = format!("{e:?}");
    assert!(!dbg.contains("cpoi3m254kzpt12t"), "{dbg}");
    if let Action::Send(r) = e.poll(t0()) {
        let dbg = format!("{r:?}");
        assert!(!dbg.contains("cpoi3m254kzpt12t"), "{dbg}");
    }
}

#[test]
fn hostile_responses_never_panic() {
    let f = fixture("approved.key.pem");
    let now = t0();
    let bodies: Vec<Vec<u8>> = vec![
        vec![],
        b"null".to_vec(),
        b"{\"kind\":\"CertificateSigningRequest\"}".to_vec(),
        b"{\"metadata\":{\"name\":\"x\",\"uid\":\"u\"},\"status\":{\"conditions\":[{\"type\":\"Approved\"}],\"certificate\":\"!!\"}}".to_vec(),
        vec![b'['; 10_000],
        vec![0xff; 100],
    ];
    for b in bodies {
        for status in [200u16, 201, 409, 500] {
            let mut e = Rig::new(&config(&f, "rec-1"), &f.key, now, 5).unwrap();
            expect_send(&mut e, now);
            let _ = respond(&mut e, now, status, &b);
            let _ = e.poll(now);
            if let Action::Send(_) = e.poll(now) {
                let _ = respond(&mut e, now, 200, &b);
                let _ = stream(&mut e, now, &b);
                e.on_stream_end(now);
            }
        }
    }
}
