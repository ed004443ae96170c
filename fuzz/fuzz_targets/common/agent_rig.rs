//! What the agent targets (`agent_files`, `agent_http`) share: the capacities they run the agent
//! over (the hosts', a microcontroller's, the smallest the rules allow), the recorded cluster,
//! an in-memory node the file steps change and the reads see, and one driver that answers the
//! agent from a [`Script`] and checks, on every action, the properties every run must keep:
//!
//! * no panic; `outstanding()` repeats exactly the I/O action `poll` handed out;
//! * a watch quiet past its `idle_at` (`on_stream_idle`) keeps its lines coming through
//!   `next_event`, which runs dry;
//! * the token secret and private keys never appear in an event or failure line, a read's or a
//!   file step's path, a request's path or user agent; JSON event lines are JSON objects;
//! * a `WritePair` is whole: every block decodes, certificates describe, the key parses, and its
//!   certificate was delivered (its base64 is in a body the agent was given); a `SwapCurrent`
//!   follows a successful `WritePair` of the same target;
//! * `Done` names a client certificate valid now whose rotation deadline is at 70–90 % of its
//!   lifetime; `Failed` / `Done` are sticky;
//! * a `step=retry reason=server-asked` line follows an answer whose `Retry-After` the core
//!   honours (`pushback::asked`), with that value;
//! * a sleep is never in the past; in `Once` mode the agent ends within the actions a run is
//!   given once the script is exhausted (every answer then fails).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use base64ct::{Base64, Encoding};
use kubeboot::agent::{
    Action, Agent, Capacities, Config, FileStep, HttpRequest, LogFormat, MIN_PATH, MIN_PEM,
    MIN_RESPONSE, Mode, Read, StreamControl,
};
use kubeboot::error::StoreErrorKind;
use kubeboot::pushback::{self, Headers};

macro_rules! rec {
    ($f:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../core/tests/data/recorded/", $f))
            as &[u8]
    };
}
pub(crate) use rec;

/// 2026-12-02T10:50:40Z, the recording.
pub const T0: i64 = 1_796_208_640;
/// The recorded bootstrap token and its secret (which must never be printed).
pub const TOKEN: &str = "hi3rc6.cpoi3m254kzpt12t";
pub const SECRET: &str = "cpoi3m254kzpt12t";
/// The node the recorded certificate was issued to.
pub const NODE_NAME: &str = "rec-1";

/// A microcontroller's capacities (the networked firmware image's).
pub const MCU: Capacities =
    Capacities { response: 4096, pem: 1536, key: 512, file: 3072, path: 64, serving_dns: 0 };
/// The smallest capacities the rules accept (a key PEM of 227 bytes: SEC1, P-256).
pub const SMALLEST: Capacities = Capacities {
    response: MIN_RESPONSE,
    pem: MIN_PEM,
    key: 227,
    file: MIN_PEM + 227,
    path: MIN_PATH,
    serving_dns: 0,
};

/// The capacities of a run: the hosts', a microcontroller's, or the smallest.
pub fn capacities(pick: u8) -> Capacities {
    match pick % 3 {
        0 => Capacities::HOST,
        1 => MCU,
        _ => SMALLEST,
    }
}

/// Start `agent` with `config`; a work buffer too small for the CA refresh must be refused with
/// the capacity named (then the run goes on without the refresh).
pub fn start(agent: &mut Agent<'_>, caps: &Capacities, config: &mut Config<'_>) {
    let refresh = matches!(config.mode, Mode::Run { .. }) && config.ca_refresh_secs > 0;
    if refresh && caps.response < kubeboot::agent::CA_REFRESH_RESPONSE {
        assert_eq!(
            agent.start(config),
            Err(kubeboot::Error::Capacity(kubeboot::error::Capacity::Response))
        );
        config.ca_refresh_secs = 0;
    }
    agent.start(config).unwrap();
}

pub const BOOTSTRAP: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: /w/ca.crt\ncontexts:\n- name: b\n  context:\n    cluster: b\n    user: u\ncurrent-context: b\nusers:\n- name: u\n  user:\n    token: hi3rc6.cpoi3m254kzpt12t\n";
pub const BOOTSTRAP_FILE: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: https://127.0.0.1:6443/\n    insecure-skip-tls-verify: true\ncontexts:\n- name: b\n  context:\n    cluster: b\n    user: u\ncurrent-context: b\nusers:\n- name: u\n  user:\n    tokenFile: token\n";
pub const NODE: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: default-cluster\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: /w/ca.crt\ncontexts:\n- name: default-context\n  context:\n    cluster: default-cluster\n    user: default-auth\ncurrent-context: default-context\nusers:\n- name: default-auth\n  user:\n    client-certificate: /w/pki/kubelet-client-current.pem\n    client-key: /w/pki/kubelet-client-current.pem\n";

/// A CA that did not sign the recorded certificate (the seeds' OpenSSL P-256 root), as PEM: the
/// kubeconfig's CA of an unanchored node, whose new pair the agent proves by review.
pub fn other_ca_pem() -> &'static [u8] {
    static PEM: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    PEM.get_or_init(|| {
        let der = include_bytes!("../../seeds/verify_issued/p256-root.der");
        let b64 = Base64::encode_string(der);
        let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
        for line in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).unwrap());
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
        pem.into_bytes()
    })
}

/// The certificate the recorded apiserver issued (PEM), for the key `approved.key.pem`.
pub fn issued_cert() -> Vec<u8> {
    let v: serde_json::Value =
        serde_json::from_slice(rec!("csr-get-approved-issued.json")).unwrap();
    Base64::decode_vec(v["status"]["certificate"].as_str().unwrap()).unwrap()
}

/// Every recorded answer of the apiserver.
pub const BODIES: &[&[u8]] = &[
    rec!("csr-create-201.json"),
    rec!("csr-create-201-pending.json"),
    rec!("csr-create-201-to-fail.json"),
    rec!("csr-create-401-wrong-secret.json"),
    rec!("csr-create-403-no-binding.json"),
    rec!("csr-create-409-already-exists.json"),
    rec!("csr-create-422-invalid.json"),
    rec!("csr-get-401-wrong-secret.json"),
    rec!("csr-get-approved-issued.json"),
    rec!("csr-get-denied.json"),
    rec!("csr-get-failed.json"),
    rec!("csr-get-pending.json"),
    rec!("csr-get-404.json"),
    rec!("csr-list-fieldselector.json"),
    rec!("watch-approved.json"),
    rec!("watch-denied.json"),
    rec!("watch-failed.json"),
    rec!("cluster-info-get.json"),
    rec!("trust-bundles-list.json"),
    rec!("secrets-get-403-anonymous.json"),
];
/// The statuses a real apiserver answers.
pub const STATUSES: &[u16] = &[200, 201, 401, 403, 404, 409, 410, 422, 429, 500, 503, 504];

/// A node's files in memory: regular files and symlinks by absolute path, and directories. The
/// file steps change it as [`FileStep`] specifies; reads follow symlinks.
#[derive(Default, Debug)]
pub struct Node {
    pub files: BTreeMap<String, Vec<u8>>,
    pub links: BTreeMap<String, String>,
    pub dirs: BTreeSet<String>,
}

impl Node {
    /// A node provisioned for bootstrap with the recorded cluster: the bootstrap kubeconfig,
    /// the CA files and the key cache holding the key the recorded certificate was issued for.
    pub fn provisioned() -> Node {
        let mut n = Node::default();
        n.dirs.insert("/w".into());
        n.files.insert("/w/bootstrap.conf".into(), BOOTSTRAP.into());
        n.files.insert("/w/ca.crt".into(), rec!("client-ca.pem").into());
        n.files.insert("/w/client-ca.pem".into(), rec!("client-ca.pem").into());
        n.files.insert("/w/pki/kubelet-client.key.tmp".into(), rec!("approved.key.pem").into());
        n.dirs.insert("/w/pki".into());
        n
    }

    fn resolve<'a>(&'a self, mut path: &'a str) -> &'a str {
        for _ in 0..8 {
            match self.links.get(path) {
                Some(t) => path = t,
                None => break,
            }
        }
        path
    }

    /// The agent's read of `r.path`.
    pub fn read(&self, r: &Read<'_>) -> Result<Vec<u8>, StoreErrorKind> {
        match self.files.get(self.resolve(r.path)) {
            None => Err(StoreErrorKind::NotFound),
            Some(v) if v.len() > r.max_len => Err(StoreErrorKind::FileTooLarge),
            Some(v) => Ok(v.clone()),
        }
    }

    /// Perform one file step.
    pub fn perform(&mut self, step: &FileStep<'_>) -> Result<(), StoreErrorKind> {
        match *step {
            FileStep::Recover { dir, .. } => {
                if !self.dirs.contains(dir) {
                    return Err(StoreErrorKind::NotFound);
                }
            }
            FileStep::CreateDir { path } => {
                self.dirs.insert(path.into());
            }
            FileStep::WriteKeyCache { path, pem: data }
            | FileStep::WritePair { path, content: data }
            | FileStep::WriteKubeconfig { path, content: data }
            | FileStep::WriteCa { path, content: data }
            | FileStep::WriteBootstrapKubeconfig { path, content: data } => {
                self.links.remove(path);
                self.files.insert(path.into(), data.to_vec());
            }
            FileStep::SwapCurrent { current, target, .. } => {
                if self.files.contains_key(current) {
                    return Err(StoreErrorKind::CurrentNotSymlink);
                }
                self.links.insert(current.into(), target.into());
            }
            FileStep::RemoveKeyCache { path } => {
                self.files.remove(path);
            }
            FileStep::PrunePairs { dir, prefix, keep } => {
                let old: Vec<String> = self
                    .files
                    .keys()
                    .filter(|p| {
                        p.strip_prefix(dir).and_then(|r| r.strip_prefix('/')).is_some_and(|n| {
                            kubeboot::agent::is_pair_file_name(prefix, n) && p.as_str() != keep
                        })
                    })
                    .cloned()
                    .collect();
                for p in old {
                    self.files.remove(&p);
                }
            }
            FileStep::RemoveDir { path } => {
                let prefix = format!("{path}/");
                let empty =
                    !self.files.keys().chain(self.links.keys()).any(|p| p.starts_with(&prefix));
                if empty {
                    self.dirs.remove(path);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// How an HTTP request is answered.
#[derive(Debug)]
pub enum HttpAnswer {
    /// `on_transport_error`.
    Transport,
    /// No answer: the next poll counts the request as lost.
    Nothing,
    /// `on_http_response`.
    Response { status: u16, retry_after: Option<Vec<u8>>, body: Vec<u8> },
    /// A 200 watch stream, fed piece by piece (`on_stream_data`, `on_stream_idle`), then ended
    /// unless `cut`.
    Stream { chunks: Vec<Piece>, cut: bool },
}

/// A piece of a watch stream.
#[derive(Debug)]
pub enum Piece {
    /// Bytes (`on_stream_data`).
    Data(Vec<u8>),
    /// Nothing arrived by the request's `idle_at` (`on_stream_idle` at `idle_at` or later, then
    /// every line `next_event` has).
    Idle,
}

impl Piece {
    /// The stream's pieces of `bytes`, as one piece each.
    pub fn data(chunks: impl IntoIterator<Item = Vec<u8>>) -> Vec<Piece> {
        chunks.into_iter().map(Piece::Data).collect()
    }
}

/// Where a run's answers come from.
pub trait Script {
    /// The outcome of a read.
    fn read(&mut self, r: &Read<'_>, node: &Node) -> Result<Vec<u8>, StoreErrorKind>;
    /// Whether a file step fails, and how (`None`: it is performed on the node).
    fn file_fault(&mut self, step: &FileStep<'_>) -> Option<StoreErrorKind>;
    /// The answer to a request.
    fn http(&mut self, r: &HttpRequest<'_>) -> HttpAnswer;
    /// Seconds past a sleep's end to wake up at.
    fn oversleep(&mut self) -> i64;
    /// Whether the input is used up (every answer from now on fails).
    fn exhausted(&self) -> bool;
}

fn no_secret(s: &str) {
    assert!(!s.contains(SECRET), "the token secret leaked: {s}");
    assert!(!s.contains("PRIVATE KEY"), "a private key leaked: {s}");
}

/// An event line (from `poll` or `next_event`): no secret, a JSON object when JSON is asked.
fn event_line(line: &str, json: bool) {
    no_secret(line);
    if json {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|x| panic!("{x}: {line}"));
        assert!(v.is_object() && v["step"].is_string(), "{line}");
    }
}

/// Every block of a written pair decodes, its certificates describe, its key parses; returns
/// the first certificate's PEM.
fn whole_pair(content: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(content);
    assert!(text.starts_with("-----BEGIN CERTIFICATE-----"), "pair: {text}");
    let mut first = None;
    let mut keys = 0;
    let mut der = vec![0u8; content.len()];
    for block in kubeboot::pem::blocks(content) {
        let block = block.expect("a pair's PEM blocks read");
        let d = block.decode(&mut der).expect("a pair's PEM block decodes");
        if block.label == "CERTIFICATE" {
            kubeboot::verify::describe(d).expect("a pair's certificate describes");
            first.get_or_insert_with(|| block.text.to_vec());
        } else {
            assert!(block.label.ends_with("PRIVATE KEY"), "a {} block in a pair", block.label);
            kubeboot::key::NodeKey::from_pem(block.text).expect("a pair's key parses");
            keys += 1;
        }
    }
    assert_eq!(keys, 1, "a pair without exactly one key");
    first.expect("a pair without a certificate")
}

/// The answer to an I/O action, given once `outstanding` was checked.
enum Answer {
    Read(Result<Vec<u8>, StoreErrorKind>),
    File(Result<(), StoreErrorKind>),
    Entropy(Vec<u8>),
    Http(HttpAnswer),
}

/// How a run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    Done(String),
    Failed(String),
    /// Out of actions (only in `Run` mode, or while the script still answered).
    Running,
}

/// Drive `agent` (started with `config`) until it ends or `actions` pass, answering from
/// `script` over `node`, checking the properties in the module docs.
pub fn drive(
    agent: &mut Agent<'_>,
    config: &Config<'_>,
    script: &mut dyn Script,
    node: &mut Node,
    actions: usize,
) -> End {
    let mut now = T0;
    let mut delivered: Vec<Vec<u8>> = Vec::new();
    let mut written_pair: Option<String> = None;
    let mut asked: Option<u32> = None;
    let mut idle_at: Option<i64> = None;
    let json = config.log_format == LogFormat::Json;
    let mut end = End::Running;
    for i in 0..actions {
        let a = agent.poll(now);
        // What `outstanding` must repeat.
        let io = match &a {
            Action::Read(_)
            | Action::File(_)
            | Action::Entropy { .. }
            | Action::Http(_)
            | Action::Key(_) => Some(format!("{a:?}")),
            _ => None,
        };
        let answer = match a {
            Action::Read(r) => {
                no_secret(r.path);
                Some(Answer::Read(script.read(&r, node)))
            }
            Action::File(step) => {
                no_secret(step.path());
                let fault = script.file_fault(&step);
                match step {
                    FileStep::WritePair { path, content } => {
                        let first = whole_pair(content);
                        // The engine took the certificate from a base64 `status.certificate` of a
                        // delivered body: its first block's base64 is in that body (up to the
                        // last, partial 4-character group).
                        let b64 = Base64::encode_string(&first);
                        let probe = &b64.as_bytes()[..b64.len().saturating_sub(4)];
                        assert!(
                            delivered.iter().any(|d| d.windows(probe.len()).any(|w| w == probe)),
                            "a pair with a certificate never delivered"
                        );
                        written_pair = fault.is_none().then(|| path.to_owned());
                    }
                    FileStep::SwapCurrent { target, .. } => {
                        assert_eq!(written_pair.as_deref(), Some(target), "swap without its pair");
                    }
                    _ => {}
                }
                Some(Answer::File(match fault {
                    Some(k) => Err(k),
                    None => node.perform(&step),
                }))
            }
            Action::Entropy { len } => {
                Some(Answer::Entropy((0..len).map(|j| (j as u8).wrapping_mul(29) | 1).collect()))
            }
            Action::Key(_) => panic!("a key operation without a key device"),
            Action::Http(r) => {
                no_secret(r.path);
                no_secret(r.user_agent);
                assert!(r.connection.ca_pem.is_some() || r.connection.insecure);
                let http = script.http(&r);
                idle_at = r.idle_at;
                asked = None;
                match &http {
                    HttpAnswer::Response { status, retry_after, body } => {
                        delivered.push(body.clone());
                        let h = Headers::retry_after(retry_after.as_deref());
                        asked = pushback::asked(*status, &h);
                    }
                    HttpAnswer::Stream { chunks, .. } => delivered.push(
                        chunks
                            .iter()
                            .flat_map(|p| match p {
                                Piece::Data(d) => d.as_slice(),
                                Piece::Idle => &[],
                            })
                            .copied()
                            .collect(),
                    ),
                    _ => {}
                }
                Some(Answer::Http(http))
            }
            Action::Sleep { until } => {
                assert!(until >= now - 1, "sleep into the past: {until} < {now}");
                now = until.max(now + 1) + script.oversleep();
                None
            }
            Action::Event(e) => {
                event_line(e.line, json);
                if e.line.contains("server-asked") {
                    let n = asked.unwrap_or_else(|| panic!("not asked: {}", e.line));
                    assert!(
                        e.line.contains(&format!("retry_after={n} "))
                            || e.line.contains(&format!("\"retry_after\":\"{n}\"")),
                        "asked {n}: {}",
                        e.line
                    );
                }
                None
            }
            Action::Done(o) => {
                let c = o.client.expect("Done without a client certificate");
                assert!(c.not_after > now - 1, "Done with an expired certificate");
                let life = i128::from(c.not_after) - i128::from(c.not_before);
                let at = i128::from(c.rotation_deadline) - i128::from(c.not_before);
                assert!(at * 10 >= life * 7 - 10 && at * 10 <= life * 9 + 10, "deadline {o:?}");
                end = End::Done(format!("{o:?}"));
                break;
            }
            Action::Failed(f) => {
                no_secret(f.line);
                no_secret(f.detail);
                end = End::Failed(format!("{:?} {}", f.error, f.detail));
                break;
            }
            _ => panic!("unknown action"),
        };
        let again = agent.outstanding().map(|o| format!("{o:?}"));
        assert_eq!(again, io, "outstanding() is not what poll handed out");
        match answer {
            Some(Answer::Read(Ok(v))) => agent.on_read(now, Ok(&v)),
            Some(Answer::Read(Err(k))) => agent.on_read(now, Err(k)),
            Some(Answer::File(r)) => agent.on_file_done(now, r),
            Some(Answer::Entropy(e)) => agent.on_entropy(&e),
            Some(Answer::Http(h)) => now = answer_http(agent, now, idle_at, json, h),
            None => {}
        }
        if i + 1 == actions && config.mode == Mode::Once && script.exhausted() {
            panic!("the agent did not end in Once mode");
        }
    }
    if end != End::Running {
        // Terminal: the same answer again.
        let again = match agent.poll(now + 100) {
            Action::Done(o) => End::Done(format!("{o:?}")),
            Action::Failed(f) => End::Failed(format!("{:?} {}", f.error, f.detail)),
            other => panic!("left a terminal state: {other:?}"),
        };
        assert_eq!(again, end);
    }
    end
}

/// Answer the request; returns the time after the answer (an idle watch waits until `idle_at`).
fn answer_http(
    ag: &mut Agent<'_>,
    mut now: i64,
    idle_at: Option<i64>,
    json: bool,
    http: HttpAnswer,
) -> i64 {
    match http {
        HttpAnswer::Transport => ag.on_transport_error(now, "fuzz"),
        HttpAnswer::Nothing => {}
        HttpAnswer::Response { status, retry_after, body } => {
            ag.on_http_response(now, status, &Headers::retry_after(retry_after.as_deref()), &body)
        }
        HttpAnswer::Stream { chunks, cut } => {
            for p in &chunks {
                let c = match p {
                    Piece::Data(d) => ag.on_stream_data(now, d),
                    Piece::Idle => {
                        // Quiet until `idle_at` (or a second on, when asked again).
                        now = idle_at.map_or(now + 1, |t| t.max(now + 1));
                        let c = ag.on_stream_idle(now);
                        let mut lines = 0;
                        while let Some(e) = ag.next_event() {
                            event_line(e.line, json);
                            lines += 1;
                            assert!(lines < 64, "next_event does not run dry");
                        }
                        c
                    }
                };
                if c == StreamControl::Close {
                    return now;
                }
            }
            if !cut {
                ag.on_stream_end(now);
            }
        }
    }
    now
}
