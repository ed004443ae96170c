//! The node agent (`agent::Agent`) on a node provisioned for bootstrap with the recorded cluster
//! (its bootstrap kubeconfig, CA files and the key cache of the key the recorded certificate was
//! issued for, in memory; the file steps change it), answered over HTTP by the input: every
//! request gets the answer a real apiserver gave to that kind of request (a create's 201, the
//! issued CSR, the approved watch, cluster-info, the trust bundles), any recorded answer with any
//! status, an edited or spliced body, raw bytes, a body larger than the agent's work buffer, a
//! watch stream cut anywhere (recorded events, a recorded object wrapped as an event, raw
//! chunks; quiet past its `idle_at` now and then: `on_stream_idle`, then `next_event` until it
//! has none; ended or broken off), a `SelfSubjectReview` answered for this node or another one
//! with any status, a transport error, or no answer; any `Retry-After` value (none,
//! delta-seconds, arbitrary bytes) with any status. Configurations: watch or poll, once or as a
//! daemon (with the CA refresh where the capacities allow it), text or JSON lines, a serving
//! certificate, kubeadm discovery first, a forced rotation, an unanchored node (byte 1: the
//! kubeconfig's CA did not sign what the cluster issues and no CA bundle is given, so the agent
//! proves a new pair with a review over a new connection presenting it); over the hosts' capacities, a
//! microcontroller's (response 4096, pem 1536, key 512, file 3072, path 64, no serving DNS
//! names) or the smallest the rules accept.
//!
//! Properties: those of `common/agent_rig.rs` (no panic; `outstanding` repeats `poll`; no secret
//! in events, failures or paths; JSON lines are objects; a `WritePair` is whole and holds a
//! delivered certificate, a `SwapCurrent` follows its pair; `server-asked` retries follow an
//! honoured `Retry-After` with its value; `Done` valid with a 70–90 % deadline; sticky ends;
//! bounded: 1000 actions once, 300 as a daemon), and a node whose cluster answers every request
//! as the recording did (an input of one or two bytes) ends `Done`, unanchored too (with the smallest capacities: a typed `TooLarge`, the real
//! watch event being larger than their work buffer).
#![no_main]

#[path = "common/agent_rig.rs"]
mod rig;

use arbitrary::{Arbitrary, Unstructured};
use kubeboot::agent::{
    Agent, Capacities, Config, DiscoveryConfig, FileStep, HttpRequest, LogFormat, Mode, Read,
    RequestKind, RotateNow, Serving,
};
use kubeboot::error::StoreErrorKind;
use kubeboot::pin::CaPin;
use kubeboot::token::BootstrapToken;
use libfuzzer_sys::fuzz_target;
use rig::{End, HttpAnswer, Node, Piece, rec};

const WATCHES: &[&[u8]] =
    &[rec!("watch-approved.json"), rec!("watch-denied.json"), rec!("watch-failed.json")];
const PIN: &str = "sha256:d7ca399eb32057ff78e572eb3cf898fb60cecb7f02749d88347bc3eeb5c360e5";
/// What kube-apiserver v1.37 answers to a SelfSubjectReview presenting the recorded node's
/// certificate (the shape `kubectl auth whoami -o json` shows).
const REVIEW_NODE: &[u8] = br#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"status":{"userInfo":{"username":"system:node:rec-1","groups":["system:nodes","system:authenticated"],"extra":{"authentication.kubernetes.io/credential-id":["X509SHA256=ab"]}}}}"#;
/// The same for someone else.
const REVIEW_OTHER: &[u8] = br#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"status":{"userInfo":{"username":"system:node:rec-2","groups":["system:nodes","system:authenticated"]}}}"#;

/// What the recorded apiserver answered to a request of this kind.
fn recorded(kind: RequestKind) -> (u16, &'static [u8]) {
    match kind {
        RequestKind::Healthz | RequestKind::CaProbe => (200, b"ok"),
        RequestKind::ClusterInfo => (200, rec!("cluster-info-get.json")),
        RequestKind::TrustBundles => (200, rec!("trust-bundles-list.json")),
        RequestKind::Create => (201, rec!("csr-create-201.json")),
        RequestKind::Get => (200, rec!("csr-get-approved-issued.json")),
        RequestKind::SelfSubjectReview => (201, REVIEW_NODE),
        _ => (200, rec!("watch-approved.json")),
    }
}

/// A `Retry-After` value: none, delta-seconds (with the blanks the rules allow), or any bytes.
fn retry_after(u: &mut Unstructured<'_>) -> arbitrary::Result<Option<Vec<u8>>> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => None,
        1 => Some(u.int_in_range(0..=400u32)?.to_string().into_bytes()),
        2 => Some(format!(" {}\t", u.arbitrary::<u32>()?).into_bytes()),
        _ => Some(Vec::<u8>::arbitrary(u)?),
    })
}

fn status(u: &mut Unstructured<'_>) -> arbitrary::Result<u16> {
    if u.arbitrary::<bool>()? {
        Ok(rig::STATUSES[u.choose_index(rig::STATUSES.len())?])
    } else {
        u.arbitrary()
    }
}

/// A recorded body edited: bytes flipped, or arbitrary bytes spliced in.
fn edited(u: &mut Unstructured<'_>, mut b: Vec<u8>) -> arbitrary::Result<Vec<u8>> {
    if u.arbitrary::<bool>()? {
        for _ in 0..u.int_in_range(1..=4u8)? {
            let i = u.choose_index(b.len().max(1))?;
            if let Some(x) = b.get_mut(i) {
                *x ^= u.arbitrary::<u8>()? | 1;
            }
        }
    } else {
        let at = u.int_in_range(0..=b.len())?;
        let end = u.int_in_range(at..=b.len())?;
        let with = Vec::<u8>::arbitrary(u)?;
        b.splice(at..end, with);
    }
    Ok(b)
}

/// A watch stream: recorded events (or a recorded object as one event), perhaps edited, cut
/// into chunks anywhere, perhaps with raw chunks among them.
fn stream(u: &mut Unstructured<'_>) -> arbitrary::Result<HttpAnswer> {
    let mut b = if u.arbitrary::<bool>()? {
        WATCHES[u.choose_index(WATCHES.len())?].to_vec()
    } else {
        let obj = String::from_utf8_lossy(rig::BODIES[u.choose_index(rig::BODIES.len())?]);
        let t = ["ADDED", "MODIFIED", "DELETED", "ERROR", "BOOKMARK"][u.choose_index(5)?];
        format!("{{\"type\":\"{t}\",\"object\":{}}}\n", obj.trim()).into_bytes()
    };
    if u.ratio(1, 4)? {
        b = edited(u, b)?;
    }
    let mut chunks = Vec::new();
    let mut rest = &b[..];
    while !rest.is_empty() {
        let n = u.int_in_range(1..=rest.len()).unwrap_or(rest.len());
        chunks.push(Piece::Data(rest[..n].to_vec()));
        rest = &rest[n..];
        if u.ratio(1, 16).unwrap_or(false) {
            chunks.push(Piece::Data(Vec::<u8>::arbitrary(u)?));
        }
        // Quiet past `idle_at`, once or more.
        for _ in 0..u.int_in_range(0..=2u8).unwrap_or(0) {
            if u.ratio(1, 4).unwrap_or(false) {
                chunks.push(Piece::Idle);
            }
        }
    }
    Ok(HttpAnswer::Stream { chunks, cut: u.ratio(1, 4)? })
}

/// Files from the node; file steps fail now and then; HTTP answers from the input. Once the
/// input is used up every file step succeeds and every request is a transport error.
struct Http<'a> {
    u: Unstructured<'a>,
    caps: Capacities,
}

impl Http<'_> {
    fn answer(&mut self, r: &HttpRequest<'_>) -> arbitrary::Result<HttpAnswer> {
        let u = &mut self.u;
        let watch = r.kind == RequestKind::Watch;
        Ok(match u.int_in_range(0..=11u8)? {
            0 => HttpAnswer::Transport,
            1 => HttpAnswer::Nothing,
            2..=4 if watch => stream(u)?,
            2..=4 => {
                // As recorded, perhaps with pushback.
                let (status, body) = recorded(r.kind);
                HttpAnswer::Response { status, retry_after: retry_after(u)?, body: body.to_vec() }
            }
            5 => {
                let body = rig::BODIES[u.choose_index(rig::BODIES.len())?].to_vec();
                HttpAnswer::Response { status: status(u)?, retry_after: retry_after(u)?, body }
            }
            6 | 7 => {
                let (status, body) = recorded(r.kind);
                let body = edited(u, body.to_vec())?;
                HttpAnswer::Response { status, retry_after: retry_after(u)?, body }
            }
            8 => {
                let body = Vec::<u8>::arbitrary(u)?;
                HttpAnswer::Response { status: status(u)?, retry_after: retry_after(u)?, body }
            }
            9 => {
                // Larger than the work buffer (JSON still: blanks after the object).
                let (status, body) = recorded(r.kind);
                let mut body = body.to_vec();
                let over = self.caps.response + usize::from(u.arbitrary::<u8>()?) + 1;
                body.resize(body.len().max(over), b' ');
                HttpAnswer::Response { status, retry_after: None, body }
            }
            10 if watch => {
                let mut chunks = Vec::new();
                for _ in 0..u.arbitrary_len::<u8>()?.min(16) {
                    chunks.push(match u.arbitrary::<bool>()? {
                        true => Piece::Data(Vec::<u8>::arbitrary(u)?),
                        false => Piece::Idle,
                    });
                }
                HttpAnswer::Stream { chunks, cut: u.arbitrary()? }
            }
            10 if r.kind == RequestKind::SelfSubjectReview => {
                let body = [REVIEW_NODE, REVIEW_OTHER][u.choose_index(2)?].to_vec();
                HttpAnswer::Response { status: status(u)?, retry_after: retry_after(u)?, body }
            }
            _ => {
                // Pushback.
                let status = [429u16, 500, 503][u.choose_index(3)?];
                let body = rec!("secrets-get-403-anonymous.json").to_vec();
                HttpAnswer::Response { status, retry_after: retry_after(u)?, body }
            }
        })
    }
}

impl rig::Script for Http<'_> {
    fn read(&mut self, r: &Read<'_>, node: &Node) -> Result<Vec<u8>, StoreErrorKind> {
        node.read(r)
    }

    fn file_fault(&mut self, _: &FileStep<'_>) -> Option<StoreErrorKind> {
        let fail = self.u.ratio(1, 32).unwrap_or(false);
        fail.then_some(StoreErrorKind::Io)
    }

    fn http(&mut self, r: &HttpRequest<'_>) -> HttpAnswer {
        self.answer(r).unwrap_or(HttpAnswer::Transport)
    }

    fn oversleep(&mut self) -> i64 {
        i64::from(self.u.arbitrary::<u8>().unwrap_or(0) % 8)
    }

    fn exhausted(&self) -> bool {
        self.u.is_empty()
    }
}

/// Answers every request as the recording did.
struct AsRecorded;

impl rig::Script for AsRecorded {
    fn read(&mut self, r: &Read<'_>, node: &Node) -> Result<Vec<u8>, StoreErrorKind> {
        node.read(r)
    }
    fn file_fault(&mut self, _: &FileStep<'_>) -> Option<StoreErrorKind> {
        None
    }
    fn http(&mut self, r: &HttpRequest<'_>) -> HttpAnswer {
        let (status, body) = recorded(r.kind);
        if r.kind == RequestKind::Watch {
            return HttpAnswer::Stream { chunks: Piece::data([body.to_vec()]), cut: false };
        }
        HttpAnswer::Response { status, retry_after: None, body: body.to_vec() }
    }
    fn oversleep(&mut self) -> i64 {
        0
    }
    fn exhausted(&self) -> bool {
        true
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(flags) = u.arbitrary::<u8>() else { return };
    // Byte 1, bit 0: an unanchored node (the kubeconfig's CA did not sign what the cluster
    // issues, no --ca-bundle: trust by proof, a SelfSubjectReview presenting the new pair).
    let unanchored = u.arbitrary::<u8>().unwrap_or(0) & 1 != 0;
    let token = BootstrapToken::parse(rig::TOKEN).unwrap();
    let pins = [CaPin::parse(PIN).unwrap()];
    let ips = ["10.0.0.7".parse().unwrap()];
    let caps = rig::capacities(flags);
    let mut c = Config::new("fz", "/w", "kubelet.conf", "pki");
    c.node_name = Some(rig::NODE_NAME);
    c.bootstrap_kubeconfig = Some("bootstrap.conf");
    c.ca_bundle = (!unanchored).then_some("client-ca.pem");
    c.watch = flags & 4 == 0;
    c.mode = if flags & 8 == 0 { Mode::Once } else { Mode::Run { max_rotations: Some(1) } };
    c.log_format = if flags & 16 == 0 { LogFormat::Text } else { LogFormat::Json };
    c.serving = (flags & 32 != 0).then_some(Serving { dns: &[], ips: &ips });
    c.discovery = (flags & 64 != 0).then_some(DiscoveryConfig {
        server: "https://127.0.0.1:33101",
        token: &token,
        pins: &pins,
        allow_unpinned: false,
        timeout_secs: 120,
    });
    c.rotate_now = RotateNow { client: flags & 128 != 0, serving: false };
    c.bootstrap_wait_secs = 600;
    c.rotation_wait_secs = 300;
    c.seed = 7;
    let mut node = Node::provisioned();
    if unanchored {
        node.files.insert("/w/ca.crt".into(), rig::other_ca_pem().to_vec());
    }
    if c.discovery.is_some() {
        node.files.remove("/w/bootstrap.conf");
    }
    let mut memory = vec![0u8; caps.memory_len()];
    let mut agent = Agent::new(&mut memory, &caps).unwrap();
    rig::start(&mut agent, &caps, &mut c);
    // (A daemon rotates with new keys, the costly part of a run: fewer actions for one.)
    let actions = if c.mode == Mode::Once { 1000 } else { 300 };
    let calm = data.len() <= 2;
    let end = if calm {
        rig::drive(&mut agent, &c, &mut AsRecorded, &mut node, actions)
    } else {
        rig::drive(&mut agent, &c, &mut Http { u, caps }, &mut node, actions)
    };
    if std::env::var_os("KUBEBOOT_FUZZ_TRACE").is_some() {
        eprintln!("trace: {end:?}");
    }
    if calm && c.mode == Mode::Once && c.serving.is_none() && !c.rotate_now.client {
        if caps == rig::SMALLEST {
            // A real apiserver's watch event (2,174 bytes) is larger than the smallest work
            // buffer the rules accept: a typed too-large, not a truncation.
            assert!(matches!(&end, End::Failed(f) if f.starts_with("TooLarge")), "{end:?}");
        } else {
            assert!(matches!(end, End::Done(_)), "as recorded, the agent did not finish: {end:?}");
        }
    }
});
