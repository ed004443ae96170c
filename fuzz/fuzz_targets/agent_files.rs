//! The node agent (`agent::Agent`) fed whatever it asks for, chosen by the input: every file it
//! reads is absent, unreadable, too large, or one of a pool of contents (real kubeconfigs of the
//! layouts kubectl and kubeboot write, the recorded apiserver's CA, key and issued certificate,
//! mixed, truncated or mutated, or raw bytes); every file step succeeds or fails with any kind;
//! every HTTP request gets any status with a recorded, edited or raw body (a watch gets the
//! recorded streams, split anywhere), a transport error, or no answer at all; the clock jumps.
//!
//! Properties:
//! * no panic, whatever the files and answers;
//! * the token secret and the private keys never appear in an event or failure line, nor in a
//!   request path or a file step's path;
//! * a `WritePair` carries exactly a delivered certificate (its base64 was in a body the engine
//!   was given) followed by a key block, and a `SwapCurrent` only follows a successful `WritePair`
//!   of the same target;
//! * after `Failed` or `Done` the agent keeps answering the same;
//! * bounded: in `Once` mode the agent ends within 3000 actions when every request fails.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use base64ct::{Base64, Encoding};
use kubeboot::agent::{Action, Agent, Config, FileStep, Mode, RequestKind, RotateNow};
use kubeboot::engine::StreamControl;
use kubeboot::error::StoreErrorKind;
use libfuzzer_sys::fuzz_target;

macro_rules! rec {
    ($f:literal) => {
        include_bytes!(concat!("../../core/tests/data/recorded/", $f)) as &[u8]
    };
}

const T0: i64 = 1_796_208_640; // 2026-12-02T10:50:40Z, the recording
const SECRET: &str = "cpoi3m254kzpt12t";

const BOOTSTRAP: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: /w/ca.crt\ncontexts:\n- name: b\n  context:\n    cluster: b\n    user: u\ncurrent-context: b\nusers:\n- name: u\n  user:\n    token: hi3rc6.cpoi3m254kzpt12t\n";
const BOOTSTRAP_FILE: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: https://127.0.0.1:6443/\n    insecure-skip-tls-verify: true\ncontexts:\n- name: b\n  context:\n    cluster: b\n    user: u\ncurrent-context: b\nusers:\n- name: u\n  user:\n    tokenFile: token\n";
const NODE: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: default-cluster\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: /w/ca.crt\ncontexts:\n- name: default-context\n  context:\n    cluster: default-cluster\n    user: default-auth\ncurrent-context: default-context\nusers:\n- name: default-auth\n  user:\n    client-certificate: /w/pki/kubelet-client-current.pem\n    client-key: /w/pki/kubelet-client-current.pem\n";

fn issued_cert() -> Vec<u8> {
    let v: serde_json::Value = serde_json::from_slice(rec!("csr-get-approved-issued.json")).unwrap();
    Base64::decode_vec(v["status"]["certificate"].as_str().unwrap()).unwrap()
}

const BODIES: &[&[u8]] = &[
    rec!("csr-create-201.json"),
    rec!("csr-create-201-pending.json"),
    rec!("csr-create-401-wrong-secret.json"),
    rec!("csr-create-403-no-binding.json"),
    rec!("csr-create-409-already-exists.json"),
    rec!("csr-get-approved-issued.json"),
    rec!("csr-get-denied.json"),
    rec!("csr-get-404.json"),
    rec!("watch-approved.json"),
    rec!("watch-denied.json"),
    rec!("cluster-info-get.json"),
    rec!("trust-bundles-list.json"),
];
const STATUSES: &[u16] = &[200, 201, 401, 403, 404, 409, 410, 429, 500, 503];

/// One file content.
fn content(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let cert = issued_cert();
    let key = rec!("approved.key.pem").to_vec();
    let mut pair = cert.clone();
    pair.extend_from_slice(&key);
    let pool: [Vec<u8>; 8] = [
        BOOTSTRAP.as_bytes().to_vec(),
        BOOTSTRAP_FILE.as_bytes().to_vec(),
        NODE.as_bytes().to_vec(),
        rec!("client-ca.pem").to_vec(),
        key,
        pair,
        b"hi3rc6.cpoi3m254kzpt12t\n".to_vec(),
        cert,
    ];
    let mut v = match u.int_in_range(0..=3u8)? {
        0 => pool[usize::from(u.int_in_range(0..=7u8)?)].clone(),
        1 => {
            // Truncated.
            let mut v = pool[usize::from(u.int_in_range(0..=7u8)?)].clone();
            let n = u.int_in_range(0..=v.len())?;
            v.truncate(n);
            v
        }
        2 => {
            // Mutated bytes.
            let mut v = pool[usize::from(u.int_in_range(0..=7u8)?)].clone();
            for _ in 0..u.int_in_range(1..=4u8)? {
                let i = u.int_in_range(0..=v.len().saturating_sub(1))?;
                if let Some(b) = v.get_mut(i) {
                    *b ^= u.arbitrary::<u8>()? | 1;
                }
            }
            v
        }
        _ => Vec::<u8>::arbitrary(u)?,
    };
    v.truncate(64 * 1024);
    Ok(v)
}

fn body(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let mut b = BODIES[usize::from(u.int_in_range(0..=(BODIES.len() - 1) as u8)?)].to_vec();
    if u.arbitrary::<bool>()? && !b.is_empty() {
        let i = u.int_in_range(0..=b.len() - 1)?;
        b[i] ^= u.arbitrary::<u8>()? | 1;
    }
    Ok(b)
}

fn no_secret(s: &str) {
    assert!(!s.contains(SECRET), "the token secret leaked: {s}");
    assert!(!s.contains("PRIVATE KEY"), "a private key leaked: {s}");
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(flags) = u.arbitrary::<u8>() else { return };
    let mut c = Config::new("fz", "/w", "kubelet.conf", "pki");
    c.node_name = (flags & 1 == 0).then_some("rec-1");
    c.bootstrap_kubeconfig = (flags & 2 == 0).then_some("bootstrap.conf");
    c.ca_bundle = (flags & 4 == 0).then_some("client-ca.pem");
    c.watch = flags & 8 == 0;
    c.mode = if flags & 16 == 0 { Mode::Once } else { Mode::Run { max_rotations: Some(2) } };
    c.rotate_now = RotateNow { client: flags & 32 != 0, serving: false };
    c.bootstrap_wait_secs = 600;
    c.rotation_wait_secs = 300;
    c.seed = 7;
    let mut agent: Box<Agent> = Box::default();
    agent.start(&c).unwrap();
    let mut now = T0;
    let mut delivered: Vec<Vec<u8>> = Vec::new();
    let mut written_pair: Option<String> = None;
    let mut ended = None;
    for i in 0..3000 {
        let a = agent.poll(now);
        match a {
            Action::Read(r) => {
                no_secret(r.path);
                let pick = u.int_in_range(0..=4u8).unwrap_or(0);
                let kind = match pick {
                    0 => Some(StoreErrorKind::NotFound),
                    1 => Some(StoreErrorKind::Io),
                    2 => Some(StoreErrorKind::FileTooLarge),
                    _ => None,
                };
                match kind {
                    Some(k) => agent.on_read(now, Err(k)),
                    None => {
                        let Ok(v) = content(&mut u) else {
                            agent.on_read(now, Err(StoreErrorKind::NotFound));
                            continue;
                        };
                        agent.on_read(now, Ok(&v));
                    }
                }
            }
            Action::File(step) => {
                no_secret(step.path());
                let ok = u.int_in_range(0..=7u8).unwrap_or(0) != 0;
                match step {
                    FileStep::WritePair { path, content } => {
                        let text = String::from_utf8_lossy(content);
                        assert!(text.starts_with("-----BEGIN CERTIFICATE-----"), "pair: {text}");
                        assert!(text.contains("PRIVATE KEY-----"), "a pair without its key");
                        // The engine took the certificate PEM from a base64 `status.certificate`
                        // of a delivered body: its first block's base64 is in that body (up to the
                        // last, partial 4-character group).
                        let first = kubeboot::pem::blocks(content).next().unwrap().unwrap();
                        let b64 = Base64::encode_string(first.text);
                        let probe = &b64.as_bytes()[..b64.len().saturating_sub(4)];
                        assert!(
                            delivered.iter().any(|d| d.windows(probe.len()).any(|w| w == probe)),
                            "a pair with a certificate never delivered"
                        );
                        written_pair = ok.then(|| path.to_owned());
                    }
                    FileStep::SwapCurrent { target, .. } => {
                        assert_eq!(written_pair.as_deref(), Some(target), "swap without its pair");
                    }
                    _ => {}
                }
                let kind = StoreErrorKind::ALL[usize::from(u.int_in_range(0..=15u8).unwrap_or(0))];
                agent.on_file_done(now, if ok { Ok(()) } else { Err(kind) });
            }
            Action::Entropy { len } => {
                let mut e = vec![0u8; len];
                for (j, b) in e.iter_mut().enumerate() {
                    *b = (j as u8).wrapping_mul(29).wrapping_add(flags) | 1;
                }
                agent.on_entropy(&e);
            }
            Action::Http(r) => {
                no_secret(r.path);
                assert!(r.connection.ca_pem.is_some() || r.connection.insecure);
                let pick = u.int_in_range(0..=5u8).unwrap_or(0);
                match pick {
                    0 => agent.on_transport_error(now, "fuzz"),
                    1 => {} // no answer: the next poll counts it as lost
                    2 if r.kind == RequestKind::Watch => {
                        let b = body(&mut u).unwrap_or_default();
                        delivered.push(b.clone());
                        let mut rest = &b[..];
                        let mut open = true;
                        while !rest.is_empty() {
                            let n = u.int_in_range(1..=rest.len()).unwrap_or(rest.len());
                            if agent.on_stream_data(now, &rest[..n]) == StreamControl::Close {
                                open = false;
                                break;
                            }
                            rest = &rest[n..];
                        }
                        if open {
                            agent.on_stream_end(now);
                        }
                    }
                    _ => {
                        let status = STATUSES[usize::from(u.int_in_range(0..=9u8).unwrap_or(0))];
                        let b = body(&mut u).unwrap_or_default();
                        delivered.push(b.clone());
                        agent.on_http_response(now, status, &b);
                    }
                }
            }
            Action::Sleep { until } => {
                assert!(until >= now - 1, "sleep into the past: {until} < {now}");
                now = until.max(now + 1) + i64::from(u.arbitrary::<u8>().unwrap_or(0));
            }
            Action::Event(e) => no_secret(e.line),
            Action::Done(o) => {
                assert!(o.client.is_some_and(|c| c.not_after > now - 1));
                ended = Some(format!("{o:?}"));
                break;
            }
            Action::Failed(f) => {
                no_secret(f.line);
                no_secret(f.detail);
                ended = Some(format!("{:?} {}", f.error, f.detail));
                break;
            }
            _ => panic!("unknown action"),
        }
        if i == 2999 && matches!(c.mode, Mode::Once) && u.is_empty() {
            panic!("the agent did not end in Once mode");
        }
    }
    if let Some(end) = ended {
        // Terminal: the same answer again.
        let again = match agent.poll(now + 100) {
            Action::Done(o) => format!("{o:?}"),
            Action::Failed(f) => format!("{:?} {}", f.error, f.detail),
            other => panic!("left a terminal state: {other:?}"),
        };
        assert_eq!(again, end);
    }
});
