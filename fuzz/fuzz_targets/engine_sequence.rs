//! The agent's CSR sub-machine (`engine::Engine`, internal: `#[doc(hidden)]`, driven here as the
//! agent drives it, over a lent work buffer and issued-chain region, with the CA bundle and
//! profile lent as an `Expect` with every answer) fed arbitrary sequences of events: responses
//! with any status, any `Retry-After` and a body that is a recorded real apiserver body
//! (`core/tests/data/recorded`, embedded), an edited one, a recorded object wrapped as a watch
//! event, or raw bytes; watch stream data split at arbitrary points; stream ends; transport
//! errors; polls and time advancing. The work buffer is the hosts' (32 KiB), a
//! microcontroller's (4 KiB) or the smallest the agent accepts (2 KiB), so bodies and events too
//! large for it are common. The engine uses the key the recorded CSRs were made with, so the
//! recorded approval really validates and `Done` is reachable.
//!
//! Properties:
//! * no panic; input outside a request phase (`on_response`, `on_stream_data`) is ignored and
//!   changes nothing (`on_stream_data` then answers `Close`);
//! * one error channel: a failure is `Phase::Failed` with `failure()` set, and `poll` says
//!   `Failed` with the same error; `on_stream_data` answers `Close` exactly when the watch is over;
//! * after `Done` / `Failed`, every further event is ignored, and `poll` keeps answering the same;
//! * bounded: driving the engine with transport errors from any state ends (`Failed`/`Done`)
//!   within 2000 polls, every `Wait` is in the future and before the deadline;
//! * `Done` only with a certificate that was delivered in a body (its base64 appears in one) and
//!   validates (`verify_issued` again, at the time it was delivered) for our key and node name,
//!   and fits the issued-chain region; unanchored (`Issued::anchored` false) only when the run
//!   lets such a certificate through (`Expect::prove`), and then it chains to no CA of the
//!   bundle but passes every other check (`verify_issued_unanchored`); the CA bundle is the
//!   recorded one or one that did not sign the recorded certificate.
#![no_main]

#[path = "common/agent_rig.rs"]
mod rig;

use arbitrary::Arbitrary;
use base64ct::{Base64, Encoding};
use kubeboot::csr::Profile;
use kubeboot::engine::{Action, Config, Engine, Expect, Naming, Phase, StreamControl};
use kubeboot::key::NodeKey;
use kubeboot::pushback::Headers;
use kubeboot::token::BootstrapToken;
use kubeboot::verify::{self, Expected};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use rig::{BODIES, T0, TOKEN, rec};

const STATUSES: &[u16] =
    &[200, 201, 401, 403, 404, 405, 406, 408, 409, 410, 422, 429, 500, 501, 503];

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
    /// A response with a `Retry-After` value.
    Pushback(Status, Vec<u8>, Body),
    Stream {
        body: Body,
        cuts: Vec<u16>,
    },
    StreamEnd,
    TransportError,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// The work buffer: the hosts', a microcontroller's, the smallest.
    work: u8,
    /// Bit 0: `Expect::prove`; bit 1: the CA is one that did not sign the recorded certificate.
    prove: u8,
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

/// The wait's deadline: the engine starts at `T0` with the bootstrap wait.
const DEADLINE: i64 = T0 + kubeboot::engine::BOOTSTRAP_WAIT_SECS;
/// The issued-chain region (the agent's `pem` capacity, a microcontroller's).
const CERT: usize = 1536;

/// Whether the run lets a certificate that chains to no CA through (`Expect::prove`: the agent
/// then proves it with a review), set once per input.
static PROVE: AtomicBool = AtomicBool::new(false);

fn expect(ca: &[u8]) -> Expect<'_> {
    Expect { ca_pem: ca, profile: Profile::Client, prove: PROVE.load(Ordering::Relaxed) }
}

/// Checks on `Done`; returns whether the engine is terminal.
fn check_poll(e: &mut Engine, now: i64, delivered: &[(Vec<u8>, i64)], ca: &[u8]) -> bool {
    let deadline = DEADLINE;
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
            // It validates at a time it was delivered (unanchored: all but the path, and only
            // when asked to let such a certificate through).
            assert!(issued.anchored || PROVE.load(Ordering::Relaxed), "unanchored, not asked");
            let v = times
                .find_map(|(_, t)| {
                    if issued.anchored {
                        verify::verify_issued(issued.cert_pem, ca, &exp, *t, &mut scratch).ok()
                    } else {
                        assert!(
                            verify::verify_issued(issued.cert_pem, ca, &exp, *t, &mut scratch)
                                .is_err(),
                            "a certificate that chains to the CA handed over as unanchored"
                        );
                        verify::verify_issued_unanchored(issued.cert_pem, &exp, *t, &mut scratch)
                            .ok()
                    }
                })
                .expect("Done with a certificate that does not validate");
            assert_eq!(&v, issued.verified);
            assert!(issued.cert_pem.len() <= CERT);
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
        Action::AwaitResponse => false,
        Action::Send(r) => {
            assert!(r.path.starts_with("/apis/certificates.k8s.io/v1/certificatesigningrequests"));
            assert_eq!(r.authorization, Some(concat!("Bearer ", "hi3rc6.cpoi3m254kzpt12t")));
            assert!(r.give_up_at <= deadline);
            false
        }
        _ => panic!("unknown action"),
    }
}

fn refused_after_terminal(e: &mut Engine, now: i64, ca: &[u8]) {
    let before = format!("{e:?}");
    e.on_response(now, 200, &Headers::NONE, b"{}", &expect(ca));
    assert_eq!(e.on_stream_data(now, b"{}\n", &expect(ca)), StreamControl::Close);
    e.on_stream_end(now, &expect(ca));
    e.on_transport_error(now);
    assert_eq!(format!("{e:?}"), before);
}

fuzz_target!(|input: Input| {
    let token = BootstrapToken::parse(TOKEN).unwrap();
    PROVE.store(input.prove & 1 != 0, Ordering::Relaxed);
    let ca = if input.prove & 2 != 0 { rig::other_ca_pem() } else { rec!("client-ca.pem") };
    let mut cfg = Config::bootstrap("rec-1", &token, ca);
    cfg.watch = input.watch;
    if input.generate {
        cfg.naming = Naming::Generate;
    }
    let mut work =
        vec![0u8; [32 * 1024, 4096, kubeboot::agent::MIN_RESPONSE][input.work as usize % 3]];
    let mut cert = vec![0u8; CERT];
    let mut e = Box::new(Engine::new(&mut work, &mut cert));
    e.start(&cfg, key(), T0, input.seed).unwrap();
    let mut now = T0;
    let mut delivered: Vec<(Vec<u8>, i64)> = Vec::new();
    for ev in input.events.iter().take(64) {
        let before = e.phase();
        let in_request = matches!(before, Phase::Creating | Phase::Fetching | Phase::Watching);
        match ev {
            Ev::Poll => {}
            Ev::Advance(s) => now += i64::from(*s),
            Ev::Respond(st, b) | Ev::Pushback(st, _, b) => {
                let status = match st {
                    Status::Known(i) => STATUSES[*i as usize % STATUSES.len()],
                    Status::Any(s) => *s,
                };
                let headers = match ev {
                    Ev::Pushback(_, ra, _) => Headers::retry_after(Some(ra)),
                    _ => Headers::NONE,
                };
                let b = body(b);
                let was = format!("{e:?}");
                e.on_response(now, status, &headers, &b, &expect(ca));
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
                    let r = e.on_stream_data(now, &b[last..c], &expect(ca));
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
            Ev::StreamEnd => e.on_stream_end(now, &expect(ca)),
            Ev::TransportError => e.on_transport_error(now),
        }
        if terminal(before) {
            assert_eq!(e.phase(), before, "left a terminal state");
        }
        if check_poll(&mut e, now, &delivered, ca) {
            refused_after_terminal(&mut e, now, ca);
        }
    }
    // Drive to the end with transport errors: must end in bounded polls.
    for i in 0.. {
        assert!(i < 2000, "engine did not end: {:?}", e.phase());
        if check_poll(&mut e, now, &delivered, ca) {
            refused_after_terminal(&mut e, now, ca);
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
