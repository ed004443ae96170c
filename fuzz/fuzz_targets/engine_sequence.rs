//! The sans-IO bootstrap engine (`engine::Engine`) fed arbitrary sequences of events: responses
//! with any status and a body that is a recorded real apiserver body (`core/tests/data/recorded`,
//! embedded), an edited one, a recorded object wrapped as a watch event, or raw bytes; watch
//! stream data split at arbitrary points; stream ends; transport errors; polls and time advancing.
//! The engine uses the key the recorded CSRs were made with, so the recorded approval really
//! validates and `Done` is reachable.
//!
//! Properties:
//! * no panic; input outside a request phase (`on_response`, `on_stream_data`) is ignored and
//!   changes nothing (`on_stream_data` then answers `Close`);
//! * one error channel: a failure is `Phase::Failed` with `failure()` set, and `poll` says
//!   `Failed` with the same error; `on_stream_data` answers `Close` exactly when the watch is over;
//! * after `Done` / `Failed`, every further event is ignored, and `poll` keeps answering the same;
//! * bounded: driving the engine with transport errors from any state ends (`Failed`/`Done`)
//!   within 2000 polls, every `Wait` is in the future, `AwaitResponse` is at most the deadline;
//! * `Done` only with a certificate that was delivered in a body (its base64 appears in one) and
//!   validates (`verify_issued` again, at the time it was delivered) for our key and node name,
//!   with a rotation deadline at 70–90 % of its lifetime.
#![no_main]

use arbitrary::Arbitrary;
use base64ct::{Base64, Encoding};
use kubeboot::csr::Profile;
use kubeboot::engine::{Action, Config, Engine, Naming, Phase, StreamControl};
use kubeboot::key::NodeKey;
use kubeboot::token::BootstrapToken;
use kubeboot::verify::{self, Expected};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

macro_rules! rec {
    ($f:literal) => {
        include_bytes!(concat!("../../core/tests/data/recorded/", $f)) as &[u8]
    };
}

const BODIES: &[&[u8]] = &[
    rec!("csr-create-201.json"),
    rec!("csr-create-201-pending.json"),
    rec!("csr-create-201-to-fail.json"),
    rec!("csr-create-401-wrong-secret.json"),
    rec!("csr-create-403-no-binding.json"),
    rec!("csr-create-409-already-exists.json"),
    rec!("csr-create-422-invalid.json"),
    rec!("csr-get-401-wrong-secret.json"),
    rec!("csr-get-404.json"),
    rec!("csr-get-approved-issued.json"),
    rec!("csr-get-denied.json"),
    rec!("csr-get-failed.json"),
    rec!("csr-get-pending.json"),
    rec!("csr-list-fieldselector.json"),
    rec!("watch-approved.json"),
    rec!("watch-denied.json"),
    rec!("watch-failed.json"),
    rec!("secrets-get-403-anonymous.json"),
];
const STATUSES: &[u16] =
    &[200, 201, 401, 403, 404, 405, 406, 408, 409, 410, 422, 429, 500, 501, 503];
const TOKEN: &str = "hi3rc6.cpoi3m254kzpt12t";
const T0: i64 = 1_796_208_640; // 2026-12-02T10:50:40Z, the recording

#[derive(Arbitrary, Debug)]
enum Body {
    Recorded(u8),
    Edited {
        which: u8,
        at: u16,
        with: u8,
    },
    /// A recorded object as one watch event line.
    AsEvent {
        which: u8,
        kind: u8,
    },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Status {
    Known(u8),
    Any(u16),
}

#[derive(Arbitrary, Debug)]
enum Ev {
    Poll,
    Advance(u16),
    Respond(Status, Body),
    Stream { body: Body, cuts: Vec<u16> },
    StreamEnd,
    TransportError,
}

#[derive(Arbitrary, Debug)]
struct Input {
    seed: u64,
    watch: bool,
    generate: bool,
    events: Vec<Ev>,
}

fn body(b: &Body) -> Vec<u8> {
    match b {
        Body::Recorded(i) => BODIES[*i as usize % BODIES.len()].to_vec(),
        Body::Edited { which, at, with } => {
            let mut v = BODIES[*which as usize % BODIES.len()].to_vec();
            let i = *at as usize % v.len();
            v[i] ^= with;
            v
        }
        Body::AsEvent { which, kind } => {
            let obj = String::from_utf8_lossy(BODIES[*which as usize % BODIES.len()]);
            let t = ["ADDED", "MODIFIED", "DELETED", "ERROR", "BOOKMARK"][*kind as usize % 5];
            format!("{{\"type\":\"{t}\",\"object\":{}}}\n", obj.trim()).into_bytes()
        }
        Body::Raw(v) => v.clone(),
    }
}

fn key() -> &'static NodeKey {
    static KEY: OnceLock<NodeKey> = OnceLock::new();
    KEY.get_or_init(|| NodeKey::from_pem(rec!("approved.key.pem")).unwrap())
}

fn terminal(p: Phase) -> bool {
    matches!(p, Phase::Done | Phase::Failed)
}

/// Checks on `Done`; returns whether the engine is terminal.
fn check_poll(e: &mut Engine, now: i64, delivered: &[(Vec<u8>, i64)], ca: &[u8]) -> bool {
    let deadline = e.deadline();
    let name = e.csr_name().to_owned();
    match e.poll(now) {
        Action::Done(issued) => {
            let b64 = Base64::encode_string(issued.cert_pem);
            let spki = key().public_key_spki();
            let exp = Expected { node_name: "rec-1", public_key: &spki, profile: Profile::Client };
            let mut scratch = vec![0u8; verify::scratch_len(issued.cert_pem, ca)];
            let mut times =
                delivered.iter().filter(|(b, _)| b.windows(b64.len()).any(|w| w == b64.as_bytes()));
            assert!(times.clone().next().is_some(), "Done with a certificate never delivered");
            // It validates at a time it was delivered.
            let v = times
                .find_map(|(_, t)| {
                    verify::verify_issued(issued.cert_pem, ca, &exp, *t, &mut scratch).ok()
                })
                .expect("Done with a certificate that does not validate");
            assert_eq!(&v, issued.verified);
            let life = v.not_after - v.not_before;
            assert!(issued.rotation_deadline >= v.not_before + life * 7 / 10);
            assert!(issued.rotation_deadline <= v.not_before + life * 9 / 10 + 1);
            assert_eq!(issued.csr_name, name);
            if std::env::var_os("KUBEBOOT_FUZZ_TRACE").is_some() {
                eprintln!("trace: Done");
            }
            true
        }
        Action::Failed(err) => {
            let (e2, _) = e.failure().expect("Failed without a failure");
            assert_eq!(err, e2);
            true
        }
        Action::Wait { until } => {
            assert!(until > now && until <= deadline, "Wait until {until} at {now}");
            false
        }
        Action::AwaitResponse { until } => {
            assert!(until <= deadline, "AwaitResponse until {until} after the deadline {deadline}");
            false
        }
        Action::Send(r) => {
            assert!(r.path.starts_with("/apis/certificates.k8s.io/v1/certificatesigningrequests"));
            assert_eq!(r.authorization, Some(concat!("Bearer ", "hi3rc6.cpoi3m254kzpt12t")));
            assert!(r.give_up_at <= deadline);
            false
        }
        _ => panic!("unknown action"),
    }
}

fn refused_after_terminal(e: &mut Engine, now: i64) {
    let before = format!("{e:?}");
    e.on_response(now, 200, b"{}");
    assert_eq!(e.on_stream_data(now, b"{}\n"), StreamControl::Close);
    e.on_stream_end(now);
    e.on_transport_error(now);
    assert_eq!(format!("{e:?}"), before);
}

fuzz_target!(|input: Input| {
    let token = BootstrapToken::parse(TOKEN).unwrap();
    let ca = rec!("client-ca.pem");
    let mut cfg = Config::bootstrap("rec-1", &token, ca);
    cfg.watch = input.watch;
    if input.generate {
        cfg.naming = Naming::Generate;
    }
    let mut e: Box<Engine> = Box::default();
    e.start(&cfg, key(), T0, input.seed).unwrap();
    let mut now = T0;
    let mut delivered: Vec<(Vec<u8>, i64)> = Vec::new();
    for ev in input.events.iter().take(64) {
        let before = e.phase();
        let in_request = matches!(before, Phase::Creating | Phase::Fetching | Phase::Watching);
        match ev {
            Ev::Poll => {}
            Ev::Advance(s) => now += i64::from(*s),
            Ev::Respond(st, b) => {
                let status = match st {
                    Status::Known(i) => STATUSES[*i as usize % STATUSES.len()],
                    Status::Any(s) => *s,
                };
                let b = body(b);
                let was = format!("{e:?}");
                e.on_response(now, status, &b);
                delivered.push((b, now));
                if !in_request {
                    assert_eq!(format!("{e:?}"), was, "a response out of turn changed the engine");
                }
                assert_eq!(e.failure().is_some(), e.phase() == Phase::Failed);
            }
            Ev::Stream { body: b, cuts } => {
                let b = body(b);
                let mut cuts: Vec<usize> =
                    cuts.iter().take(16).map(|c| *c as usize % (b.len() + 1)).collect();
                cuts.sort_unstable();
                cuts.push(b.len());
                let mut last = 0;
                for c in cuts {
                    let was = format!("{e:?}");
                    let watching = e.phase() == Phase::Watching;
                    let r = e.on_stream_data(now, &b[last..c]);
                    if !watching {
                        assert_eq!(r, StreamControl::Close);
                        assert_eq!(format!("{e:?}"), was);
                        break;
                    }
                    assert_eq!(r == StreamControl::Close, e.phase() != Phase::Watching);
                    last = c;
                    if r == StreamControl::Close {
                        break;
                    }
                }
                delivered.push((b, now));
            }
            Ev::StreamEnd => e.on_stream_end(now),
            Ev::TransportError => e.on_transport_error(now),
        }
        if terminal(before) {
            assert_eq!(e.phase(), before, "left a terminal state");
        }
        if check_poll(&mut e, now, &delivered, ca) {
            refused_after_terminal(&mut e, now);
        }
    }
    // Drive to the end with transport errors: must end in bounded polls.
    for i in 0.. {
        assert!(i < 2000, "engine did not end: {:?}", e.phase());
        if check_poll(&mut e, now, &delivered, ca) {
            refused_after_terminal(&mut e, now);
            break;
        }
        match e.phase() {
            Phase::Creating | Phase::Fetching | Phase::Watching => e.on_transport_error(now),
            Phase::Backoff => now += 1,
            _ => {}
        }
        // Jump to the next interesting time.
        if let Action::Wait { until } = e.poll(now) {
            now = until;
        }
    }
});
