//! The node agent driven end to end under a simulated clock: real files in a temp dir through the
//! std file steps (`store::FileSteps`), and kubeboot-sim's simulated apiserver (the CSR API,
//! approval and a signer issuing certificates with rcgen, bootstrap-token and client-certificate
//! authentication, cluster-info, trust bundles, SelfSubjectReviews), the same model the HTTPS
//! front-ends' tests meet over the wire. The real apiserver is `e2e/run`'s; this checks every
//! decision deterministically, including the ones a real cluster makes hard to reach (expiry,
//! crashes between steps, corrupt files).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64ct::{Base64, Encoding};
use common::TempDir;
use kubeboot::Error;
use kubeboot::agent::{
    Action, Agent, Capacities, Config, DiscoveryConfig, FileStep, HttpRequest, KeyOp, Mode,
    RequestKind, RotateNow, Serving, StreamControl,
};
use kubeboot::error::{Reason, StoreErrorKind};
use kubeboot::key::P256Signer;
use kubeboot::keyref;
use kubeboot::pin::CaPin;
use kubeboot::pushback::Headers;
use kubeboot::store::FileSteps;
use kubeboot::token::{BootstrapToken, TokenId};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, PKCS_ECDSA_P256_SHA256};
use serde_json::{Value, json};

/// Memory for one agent with the hosts' capacities.
fn memory() -> Vec<u8> {
    vec![0u8; Capacities::HOST.memory_len()]
}

const T0: i64 = 1_800_000_000; // 2027-01-15T08:00:00Z
const TOKEN: &str = "abcdef.0123456789abcdef";
const NODE: &str = "node-1";

// ---------------------------------------------------------------------------------------------
// The simulated apiserver: kubeboot-sim's model (the one every front-end's tests meet), with the
// agent's request kinds logged beside its routes.

use kubeboot_sim::{Route, Who};

struct Apiserver {
    sim: kubeboot_sim::Apiserver,
    /// (the agent's kind, who the apiserver took it for, path)
    log: Vec<(RequestKind, Who, String)>,
    /// The `Retry-After` value of the last answer.
    retry_after: Option<&'static str>,
}

impl std::ops::Deref for Apiserver {
    type Target = kubeboot_sim::Apiserver;
    fn deref(&self) -> &Self::Target {
        &self.sim
    }
}

impl std::ops::DerefMut for Apiserver {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.sim
    }
}

/// The route the apiserver must see for each of the agent's request kinds.
fn route_of(kind: RequestKind) -> Route {
    match kind {
        RequestKind::Healthz | RequestKind::CaProbe => Route::Healthz,
        RequestKind::ClusterInfo => Route::ClusterInfo,
        RequestKind::Create => Route::CsrCreate,
        RequestKind::Get => Route::CsrGet,
        RequestKind::Watch => Route::CsrWatch,
        RequestKind::TrustBundles => Route::TrustBundles,
        RequestKind::SelfSubjectReview => Route::SelfSubjectReview,
        other => panic!("a request kind the simulation does not know: {other:?}"),
    }
}

impl Apiserver {
    fn new() -> Self {
        Apiserver { sim: kubeboot_sim::Apiserver::new(T0), log: Vec::new(), retry_after: None }
    }

    fn publish_cluster_info(&mut self, ca: &str) {
        self.sim.publish_cluster_info(ca, "https://127.0.0.1:6443");
    }

    /// Answer one request: (status, body), or None for a transport error.
    fn handle(&mut self, req: &HttpRequest<'_>, now: i64) -> Option<(u16, Vec<u8>)> {
        let client = req.connection.client_certificate.map(|c| {
            kubeboot_sim::first_certificate_der(c.chain_pem).expect("a certificate in the chain")
        });
        let r = self.sim.handle(
            &kubeboot_sim::Request {
                method: req.method.as_str(),
                path: req.path,
                authorization: req.authorization,
                client_certificate: client.as_deref(),
                client_trusts: req.connection.ca_pem,
                body: req.body,
            },
            now,
        )?;
        assert_eq!(r.route, route_of(req.kind), "{:?} {}", req.kind, req.path);
        self.log.push((req.kind, r.who, req.path.to_owned()));
        self.retry_after = r.retry_after;
        Some((r.status, r.body))
    }
}

// ---------------------------------------------------------------------------------------------
// The front-end: real files, simulated clock and network

struct Node {
    dir: TempDir,
    clock: i64,
    events: Vec<String>,
    /// The events that were progress updates of the previous line.
    updates: Vec<String>,
    entropy: u8,
    /// Stop before executing a file step with this name (a crash).
    crash_before: Option<&'static str>,
    /// Stop after this many HTTP requests (a crash mid-wait).
    crash_after_requests: Option<usize>,
    /// How far the apiserver's clock is ahead of the node's (seconds; negative: behind).
    api_ahead: i64,
    requests: usize,
    /// Every request's kind and connection id, in order.
    conns: Vec<(RequestKind, u32)>,
    /// The simulated PKCS#11 token (used when the configuration names a key device).
    token: SimToken,
}

#[derive(Debug)]
enum End {
    Done(kubeboot::agent::Outcome),
    Failed(Error, String),
    Crashed,
}

impl Node {
    fn new() -> Self {
        Node {
            dir: TempDir::new("agent-sim"),
            clock: T0,
            events: Vec::new(),
            updates: Vec::new(),
            entropy: 1,
            crash_before: None,
            crash_after_requests: None,
            api_ahead: 0,
            requests: 0,
            conns: Vec::new(),
            token: SimToken::default(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.0.join(rel)
    }

    fn p(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }

    fn write_bootstrap_kubeconfig(&self, api: &Apiserver, token: &str) {
        std::fs::write(self.path("ca.crt"), &api.ca_pem).unwrap();
        let kc = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: https://127.0.0.1:6443/\n    certificate-authority: ca.crt\ncontexts:\n- name: b\n  context:\n    cluster: b\n    user: u\ncurrent-context: b\nusers:\n- name: u\n  user:\n    token: {token}\n"
        );
        std::fs::write(self.path("bootstrap.conf"), kc).unwrap();
    }

    fn config(&self) -> (String, String, String, String) {
        (
            self.p("kubelet.conf"),
            self.p("bootstrap.conf"),
            self.p("pki"),
            self.dir.0.to_string_lossy().into_owned(),
        )
    }

    /// Run an agent with `cfg` to its end.
    fn run(&mut self, api: &mut Apiserver, cfg: &Config<'_>) -> End {
        let mut mem = memory();
        let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
        agent.start(cfg).unwrap();
        self.drive(&mut agent, api)
    }

    fn drive(&mut self, agent: &mut Agent<'_>, api: &mut Apiserver) -> End {
        let files = FileSteps::new();
        for _ in 0..10_000 {
            let now = self.clock;
            match agent.poll(now) {
                Action::Read(r) => {
                    let res =
                        files.read(Path::new(r.path), r.max_len).map_err(|e| e.reported_kind());
                    match res {
                        Ok(b) => agent.on_read(now, Ok(&b)),
                        Err(e) => agent.on_read(now, Err(e)),
                    }
                }
                Action::File(step) => {
                    if self.crash_before == Some(step.name()) {
                        return End::Crashed;
                    }
                    let r = files.execute(&step).map_err(|e| e.reported_kind());
                    agent.on_file_done(now, r);
                }
                Action::Entropy { len } => {
                    let bytes: Vec<u8> = (0..len)
                        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(self.entropy))
                        .collect();
                    self.entropy = self.entropy.wrapping_add(1);
                    agent.on_entropy(&bytes);
                }
                Action::Http(req) => {
                    self.requests += 1;
                    self.conns.push((req.kind, req.connection.id));
                    if self.crash_after_requests.is_some_and(|n| self.requests > n) {
                        return End::Crashed;
                    }
                    assert!(req.user_agent.starts_with("kubeboot-sim/"));
                    assert!(req.connection.ca_pem.is_some() || req.connection.insecure);
                    let kind = req.kind;
                    let first_idle = req.idle_at;
                    let watch_timeout = req
                        .path
                        .split("timeoutSeconds=")
                        .nth(1)
                        .and_then(|t| t.split('&').next())
                        .and_then(|t| t.parse::<i64>().ok());
                    let res = api.handle(&req, now + self.api_ahead);
                    match res {
                        None => agent.on_transport_error(now, "connection refused"),
                        Some((200, body)) if kind == RequestKind::Watch => {
                            // Deliver the stream in small chunks.
                            let mut open = true;
                            for chunk in body.chunks(7) {
                                if agent.on_stream_data(now, chunk) == StreamControl::Close {
                                    open = false;
                                    break;
                                }
                            }
                            if open {
                                // The server ends the watch at its timeoutSeconds; until then the
                                // agent is woken whenever it asked (its progress lines).
                                let timeout =
                                    watch_timeout.expect("a watch names its timeoutSeconds");
                                assert!((1..=300).contains(&timeout), "timeoutSeconds={timeout}");
                                let end = self.clock + timeout;
                                let mut idle_at = first_idle;
                                while let Some(t) = idle_at.filter(|t| *t < end) {
                                    self.clock = t.max(self.clock);
                                    if agent.on_stream_idle(self.clock) == StreamControl::Close {
                                        open = false;
                                        break;
                                    }
                                    while let Some(e) = agent.next_event() {
                                        self.events.push(e.line.to_owned());
                                        if e.update {
                                            self.updates.push(e.line.to_owned());
                                        }
                                    }
                                    idle_at = match agent.outstanding() {
                                        Some(Action::Http(r)) => r.idle_at,
                                        _ => None,
                                    };
                                }
                                if open {
                                    self.clock = end;
                                    agent.on_stream_end(self.clock);
                                }
                            }
                        }
                        Some((status, body)) => {
                            let ra = api.retry_after.map(str::as_bytes);
                            agent.on_http_response(now, status, &Headers::retry_after(ra), &body);
                        }
                    }
                }
                Action::Sleep { until } => {
                    assert!(until >= now, "sleep into the past");
                    self.clock = until.max(now + 1);
                }
                Action::Event(e) => {
                    assert!(!e.line.contains("0123456789abcdef"), "secret in an event: {}", e.line);
                    self.events.push(e.line.to_owned());
                    if e.update {
                        self.updates.push(e.line.to_owned());
                    }
                }
                Action::Key(op) => {
                    let op = Op::from(op);
                    self.token.answer(agent, op, now)
                }
                Action::Done(o) => return End::Done(o),
                Action::Failed(f) => {
                    assert!(!f.line.contains("0123456789abcdef"));
                    self.events.push(f.line.to_owned());
                    return End::Failed(f.error, f.detail.to_owned());
                }
                _ => panic!("unknown action"),
            }
        }
        panic!("the agent did not finish: {:#?}", self.events);
    }

    fn has(&self, needle: &str) -> bool {
        self.events.iter().any(|e| e.contains(needle))
    }

    fn tree(&self) -> Vec<(String, String)> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
            let Ok(rd) = std::fs::read_dir(dir) else { return };
            for e in rd.flatten() {
                let p = e.path();
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                let meta = std::fs::symlink_metadata(&p).unwrap();
                if meta.file_type().is_symlink() {
                    out.push((rel, format!("-> {}", std::fs::read_link(&p).unwrap().display())));
                } else if meta.is_dir() {
                    out.push((rel.clone(), "dir".into()));
                    walk(&p, base, out);
                } else {
                    out.push((rel, format!("{:x?}", std::fs::read(&p).unwrap())));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.dir.0, &self.dir.0, &mut out);
        out.sort();
        out
    }
}

fn base_config<'a>(k: &'a (String, String, String, String)) -> Config<'a> {
    let mut c = Config::new("sim", &k.3, &k.0, &k.2);
    c.node_name = Some(NODE);
    c.bootstrap_kubeconfig = Some(&k.1);
    c.seed = 7;
    c
}

fn bootstrapped(api: &mut Apiserver) -> Node {
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(api, TOKEN);
    let k = n.config();
    let end = n.run(api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    n.events.clear();
    n
}

// ---------------------------------------------------------------------------------------------
// Scenarios

#[test]
fn bootstrap_from_nothing_writes_the_kubelet_layout() {
    let mut api = Apiserver::new();
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let end = n.run(&mut api, &base_config(&k));
    let End::Done(o) = end else { panic!("{end:?} {:#?}", n.events) };
    let c = o.client.unwrap();
    assert_eq!(c.not_after, T0 + 3600);
    assert!(c.rotation_deadline >= c.not_before + (c.not_after - c.not_before) * 7 / 10);
    assert!(c.rotation_deadline <= c.not_before + (c.not_after - c.not_before) * 9 / 10);
    // One CSR, named node-csr-<digest>, created with the token.
    assert_eq!(api.csrs.len(), 1);
    let name = api.csrs.keys().next().unwrap().clone();
    assert!(name.starts_with("node-csr-") && name.len() == 52, "{name}");
    assert_eq!(api.csrs[&name].username, "system:bootstrap:abcdef");
    // The kubelet's layout: an absolute -current.pem link to a 0600 data file, no key cache.
    let current = n.path("pki/kubelet-client-current.pem");
    let target = std::fs::read_link(&current).unwrap();
    assert!(target.is_absolute() && target.starts_with(n.path("pki")), "{target:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(n.path("pki")).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(!n.path("pki/kubelet-client.key.tmp").exists());
    let kc = std::fs::read_to_string(n.path("kubelet.conf")).unwrap();
    assert!(kc.contains(&format!("client-certificate: {}", current.display())), "{kc}");
    // The CA is the cert dir's own copy of the bootstrap kubeconfig's (kept current by the CA
    // refresh), named as a file.
    assert!(
        kc.contains(&format!("certificate-authority: {}", n.path("pki/ca.crt").display())),
        "{kc}"
    );
    assert!(!kc.contains("certificate-authority-data"), "{kc}");
    assert_eq!(std::fs::read_to_string(n.path("pki/ca.crt")).unwrap(), api.ca_pem);
    // The events, in order.
    let steps: Vec<&str> = n
        .events
        .iter()
        .map(|e| e.split(" step=").nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    let want = [
        "credentials",
        "bootstrap",
        "bootstrap",
        "key",
        "create",
        "created",
        "wait",
        "issued",
        "stored",
        "kubeconfig",
        "credentials",
        "done",
    ];
    assert_eq!(steps, want, "{:#?}", n.events);
    // The client signer: kube-controller-manager approves it, no command to type.
    assert!(n.has(&format!("step=wait kind=bootstrap name={name} signer=kubernetes.io/kube-apiserver-client-kubelet approver=kube-controller-manager")));
    assert!(n.events[0].starts_with("agent=sim step=credentials kind=client state=unusable reason=store-not-found what=kubeconfig"), "{}", n.events[0]);
    // `/healthz`, the create and the wait go over one connection: the engine keeps the one
    // `/healthz` answered over (same settings), so a bootstrap costs one TLS handshake.
    let kinds: Vec<RequestKind> = n.conns.iter().map(|c| c.0).collect();
    assert_eq!(kinds[..2], [RequestKind::Healthz, RequestKind::Create], "{:?}", n.conns);
    assert!(n.conns.iter().all(|c| c.1 == n.conns[0].1), "{:?}", n.conns);
}

#[test]
fn valid_credentials_send_nothing() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let before = n.tree();
    let log = api.log.len();
    let k = n.config();
    n.clock += 60;
    let end = n.run(&mut api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?}");
    assert_eq!(api.log.len(), log, "no request");
    assert_eq!(n.tree(), before, "no file changed");
    assert!(n.has("step=credentials kind=client state=valid"));
}

#[test]
fn rotation_uses_the_client_certificate_and_keeps_the_kubeconfig() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let kc = std::fs::read(n.path("kubelet.conf")).unwrap();
    let old = std::fs::read(n.path("pki/kubelet-client-current.pem")).unwrap();
    let k = n.config();
    // Past the deadline (90 % of the lifetime at the latest).
    n.clock += 3600 * 95 / 100;
    let end = n.run(&mut api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert_eq!(api.csrs.len(), 2);
    let rotated = api.csrs.values().find(|c| c.name.starts_with("csr-")).unwrap();
    assert_eq!(rotated.username, format!("system:node:{NODE}"));
    assert_eq!(
        std::fs::read(n.path("kubelet.conf")).unwrap(),
        kc,
        "the kubeconfig was not touched"
    );
    assert_ne!(std::fs::read(n.path("pki/kubelet-client-current.pem")).unwrap(), old);
    assert!(n.has("step=rotate kind=client reason=due"));
    let (kind, who, _) = api.log.iter().rev().find(|l| l.0 == RequestKind::Create).unwrap();
    assert_eq!((*kind, *who), (RequestKind::Create, Who::Node));
    // The rotation's requests (no `/healthz`) go over one connection with the node's
    // certificate, not the bootstrap's.
    let boot = n.conns[0].1;
    let rotation: Vec<&(RequestKind, u32)> = n.conns.iter().filter(|c| c.1 != boot).collect();
    assert_eq!(rotation.first().map(|c| c.0), Some(RequestKind::Create), "{:?}", n.conns);
    assert!(rotation.iter().all(|c| c.1 == rotation[0].1), "{:?}", n.conns);
    assert!(n.conns.iter().all(|c| c.0 != RequestKind::Healthz || c.1 == boot), "{:?}", n.conns);
}

/// One agent value started three times (a bootstrap, then two forced rotations, as a device
/// does): no start's connection ids are another's, so a front-end that still holds a session of
/// an earlier start (no client certificate, or the certificate since replaced) is never handed it.
#[test]
fn connection_ids_never_repeat_across_starts() {
    let mut api = Apiserver::new();
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    let mut seen: Vec<u32> = Vec::new();
    for run in 0..3 {
        let mut c = base_config(&k);
        if run > 0 {
            c.rotate_now = RotateNow { client: true, serving: false };
        }
        agent.start(&c).unwrap();
        assert!(matches!(n.drive(&mut agent, &mut api), End::Done(_)), "{:#?}", n.events);
        let ids: Vec<u32> = n.conns.drain(..).map(|c| c.1).collect();
        assert!(!ids.is_empty(), "run {run}");
        assert!(ids.iter().all(|id| !seen.contains(id)), "run {run}: {ids:?} after {seen:?}");
        seen.extend(ids);
    }
    assert_eq!(api.csrs.len(), 3);
}

#[test]
fn forced_rotation_and_run_mode() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let mut c = base_config(&k);
    c.rotate_now = RotateNow { client: true, serving: false };
    assert!(matches!(n.run(&mut api, &c), End::Done(_)));
    assert!(n.has("step=rotate kind=client reason=forced"));
    assert_eq!(api.csrs.len(), 2);
    // Files that only look like the store's are not the prune's to remove.
    for name in ["kubelet-client-2020-01-01-00-00-00.pem.bak", "kubelet-client-notes.pem"] {
        std::fs::write(n.path(&format!("pki/{name}")), b"operator's").unwrap();
    }
    std::fs::create_dir(n.path("pki/kubelet-client-2020-01-01-00-00-01.pem")).unwrap();
    // Run mode: sleeps until each deadline, rotates, three times (no CA refresh in between).
    let mut c = base_config(&k);
    c.mode = Mode::Run { max_rotations: Some(3) };
    c.ca_refresh_secs = 0;
    let start = n.clock;
    n.events.clear();
    assert!(matches!(n.run(&mut api, &c), End::Done(_)), "{:#?}", n.events);
    assert_eq!(api.csrs.len(), 5);
    assert_eq!(n.events.iter().filter(|e| e.contains("step=sleep")).count(), 3);
    // Each rotation happened between 70 % and 90 % of the lifetime of the previous certificate.
    assert!(n.clock - start >= 3 * (3600 + 300) * 7 / 10 - 3600, "{}", n.clock - start);
    // Five pairs were stored; each store removed the ones it replaced: one data file is left,
    // the one -current.pem names, and nothing that was not the store's went with them.
    let current = std::fs::read_link(n.path("pki/kubelet-client-current.pem")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(n.path("pki"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.starts_with("kubelet-client-"))
        .collect();
    names.sort();
    let kept = current.file_name().unwrap().to_str().unwrap().to_owned();
    assert_eq!(
        names,
        [
            "kubelet-client-2020-01-01-00-00-00.pem.bak",
            "kubelet-client-2020-01-01-00-00-01.pem",
            "kubelet-client-current.pem",
            "kubelet-client-notes.pem",
            &kept,
        ]
        .map(String::from)
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
}

#[test]
fn expired_certificate_falls_back_to_bootstrap() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    n.clock += 2 * 3600;
    let end = n.run(&mut api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert!(n.has("step=credentials kind=client state=unusable reason=expired"), "{:#?}", n.events);
    assert!(n.has("step=bootstrap reason=expired"));
    assert_eq!(api.csrs.len(), 2);
    assert!(api.csrs.values().all(|c| c.username == "system:bootstrap:abcdef"));
    // Without a bootstrap kubeconfig the same node fails with the typed reason.
    n.clock += 2 * 3600;
    let mut c = base_config(&k);
    c.bootstrap_kubeconfig = None;
    let before = n.tree();
    match n.run(&mut api, &c) {
        End::Failed(Error::Verify(v), d) => {
            assert_eq!(v.reason, Reason::Expired);
            assert!(d.contains("no bootstrap kubeconfig"), "{d}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(n.tree(), before);
}

/// A bootstrap that crashes while waiting for approval (after healthz and create), with
/// `config` made from the node's paths.
fn crash_mid_wait(
    config: fn(&(String, String, String, String)) -> Config<'_>,
) -> (Apiserver, Node) {
    let mut api = Apiserver::new();
    api.auto_approve_client = false;
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    n.crash_after_requests = Some(2);
    assert!(matches!(n.run(&mut api, &config(&k)), End::Crashed));
    (api, n)
}

#[test]
fn restart_mid_wait_reuses_the_node_csr() {
    let (mut api, mut n) = crash_mid_wait(base_config);
    let k = n.config();
    assert_eq!(api.csrs.len(), 1);
    assert!(n.path("pki/kubelet-client.key.tmp").exists(), "the key cache survives");
    let name = api.csrs.keys().next().unwrap().clone();
    api.approve(&name, n.clock);
    n.crash_after_requests = None;
    n.events.clear();
    let end = n.run(&mut api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert_eq!(api.csrs.len(), 1, "the same CSR, found by name");
    assert!(n.has("step=key kind=bootstrap source=cache"));
    assert!(api.log.iter().any(|l| l.0 == RequestKind::Get), "409 then GET");
    assert!(!n.path("pki/kubelet-client.key.tmp").exists());
}

#[test]
fn crash_between_file_steps_leaves_working_or_no_credentials() {
    for step in ["write-pair", "swap-current", "write-kubeconfig", "remove-key-cache"] {
        let mut api = Apiserver::new();
        let mut n = Node::new();
        n.write_bootstrap_kubeconfig(&api, TOKEN);
        let k = n.config();
        n.crash_before = Some(step);
        assert!(matches!(n.run(&mut api, &base_config(&k)), End::Crashed), "{step}");
        // The restart converges with no new CSR: the key cache finds the issued one.
        n.crash_before = None;
        n.events.clear();
        let end = n.run(&mut api, &base_config(&k));
        assert!(matches!(end, End::Done(_)), "{step}: {end:?} {:#?}", n.events);
        assert_eq!(api.csrs.len(), 1, "{step}: {:#?}", n.events);
        assert!(!n.path("pki/kubelet-client.key.tmp").exists(), "{step}");
    }
}

#[test]
fn refusals_are_typed_and_change_nothing() {
    // (setup, expected error)
    type Setup = Box<dyn Fn(&mut Apiserver)>;
    let cases: Vec<(&str, Setup, Error)> = vec![
        ("bad token", Box::new(|a| a.token_valid = false), Error::Unauthorized),
        ("no binding", Box::new(|a| a.rbac_create = false), Error::Forbidden),
        ("denied", Box::new(|a| a.deny_next = true), Error::CsrDenied),
    ];
    for (what, setup, want) in cases {
        let mut api = Apiserver::new();
        setup(&mut api);
        let mut n = Node::new();
        n.write_bootstrap_kubeconfig(&api, TOKEN);
        let before = n.tree();
        let k = n.config();
        match n.run(&mut api, &base_config(&k)) {
            End::Failed(e, _) => assert_eq!(e, want, "{what}"),
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(n.tree(), before, "{what}: the cert dir and the kubeconfig are as before");
        let last = n.events.last().unwrap();
        assert!(
            last.contains(&format!("step=failed reason={} code={}", want.name(), want.code())),
            "{last}"
        );
    }
}

/// A node that bootstraps against an apiserver that never approves, waiting `wait_secs`: it
/// must end in a timeout.
fn never_approved(wait_secs: i64) -> (Apiserver, Node) {
    let mut api = Apiserver::new();
    api.auto_approve_client = false;
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let mut c = base_config(&k);
    c.bootstrap_wait_secs = wait_secs;
    match n.run(&mut api, &c) {
        End::Failed(Error::Timeout, _) => {}
        other => panic!("{other:?} {:#?}", n.events),
    }
    (api, n)
}

#[test]
fn timeout_after_create_keeps_the_key_cache() {
    let (_, n) = never_approved(60);
    assert!(n.path("pki/kubelet-client.key.tmp").exists());
    assert!(n.has("step=cleanup kept="));
}

#[test]
fn a_long_wait_says_what_unblocks_it_at_growing_intervals() {
    let (api, n) = never_approved(600);
    let name = api.csrs.keys().next().unwrap().clone();
    let waits: Vec<&String> = n.events.iter().filter(|e| e.contains(" step=wait ")).collect();
    let elapsed: Vec<&str> = waits
        .iter()
        .map(|w| w.split(" elapsed=").nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    // Announced, then after 30 s, then at doubling intervals.
    assert_eq!(elapsed, ["0s", "30s", "1m30s", "3m30s", "7m30s"], "{waits:#?}");
    let signer = "kubernetes.io/kube-apiserver-client-kubelet";
    assert!(waits[0].contains(&format!(
        "msg=\"waiting for approval of {name} (signer {signer}): approved by kube-controller-manager (csrapproving)\""
    )));
    assert!(waits[2].contains("(waited 1m30s)"), "{}", waits[2]);
    // The first is a new line, every later one updates it.
    assert_eq!(n.updates.len(), 4);
    assert!(!n.updates.contains(waits[0]));
    // The progress lines came while the watch stayed open (the agent woken when a line was
    // due): one create, then a watch per server timeout only (600 s: two).
    let watches: Vec<&str> = api
        .log
        .iter()
        .filter(|l| l.0 == RequestKind::Watch)
        .map(|l| l.2.split("timeoutSeconds=").nth(1).unwrap())
        .collect();
    assert_eq!(watches, ["300", "300"], "{watches:?}");
    assert!(api.log.iter().filter(|l| l.0 == RequestKind::Create).count() == 1);
    assert!(api.log.iter().all(|l| l.0 != RequestKind::Get));
}

#[test]
fn bad_files_are_typed_reasons() {
    let mut api = Apiserver::new();
    let n0 = bootstrapped(&mut api);
    let pair = std::fs::read(n0.path("pki/kubelet-client-current.pem")).unwrap();
    let kc = std::fs::read_to_string(n0.path("kubelet.conf")).unwrap();
    let other = kubeboot::key::NodeKey::from_entropy(&[7u8; 32]).unwrap();
    let mut buf = [0u8; kubeboot::key::SEC1_PEM_LEN];
    let n_key = other.to_sec1_pem(&mut buf).unwrap();
    let other_key = std::str::from_utf8(&buf[..n_key]).unwrap().to_owned();
    let other_key = other_key.as_str();
    let certs_only: String = String::from_utf8_lossy(&pair)
        .split("-----BEGIN EC PRIVATE KEY-----")
        .next()
        .unwrap()
        .to_owned();
    let cases: Vec<(&str, Vec<u8>, Option<String>, &str)> = vec![
        (
            "corrupt kubeconfig",
            pair.clone(),
            Some("clusters: [\n".into()),
            "reason=malformed-input what=kubeconfig",
        ),
        (
            "cert and key differ",
            format!("{certs_only}{other_key}").into_bytes(),
            None,
            "reason=key-mismatch",
        ),
        (
            "truncated in the certificate",
            pair[..pair.len() / 3].to_vec(),
            None,
            "reason=store-no-certificates",
        ),
        (
            "truncated in the key",
            pair[..pair.len() - 40].to_vec(),
            None,
            "reason=malformed-key what=client-key",
        ),
        (
            "not a key",
            format!(
                "{certs_only}-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"
            )
            .into_bytes(),
            None,
            "reason=malformed-key",
        ),
        ("no certificate", other_key.as_bytes().to_vec(), None, "reason=store-no-certificates"),
    ];
    for (what, pem, kubeconfig, reason) in cases {
        let mut n = Node::new();
        n.clock = T0 + 10;
        n.write_bootstrap_kubeconfig(&api, TOKEN);
        std::fs::create_dir_all(n.path("pki")).unwrap();
        let target = n.path("pki/kubelet-client-2027-01-15-08-00-00.pem");
        std::fs::write(&target, &pem).unwrap();
        std::os::unix::fs::symlink(&target, n.path("pki/kubelet-client-current.pem")).unwrap();
        std::fs::write(n.path("pki/ca.crt"), &api.ca_pem).unwrap();
        let kc_text = kubeconfig.unwrap_or_else(|| {
            kc.replace(&*n0.dir.0.to_string_lossy(), &n.dir.0.to_string_lossy())
        });
        std::fs::write(n.path("kubelet.conf"), kc_text).unwrap();
        let k = n.config();
        // Without a bootstrap kubeconfig: the typed reason, nothing changed.
        let before = n.tree();
        let mut c = base_config(&k);
        c.bootstrap_kubeconfig = None;
        let end = n.run(&mut api, &c);
        assert!(matches!(end, End::Failed(..)), "{what}: {end:?}");
        assert!(n.has(reason), "{what}: {:#?}", n.events);
        assert_eq!(n.tree(), before, "{what}");
        // With one: bootstrap replaces them.
        n.events.clear();
        let end = n.run(&mut api, &base_config(&k));
        assert!(matches!(end, End::Done(_)), "{what}: {end:?} {:#?}", n.events);
    }
    // A key cache that is not a key is replaced.
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    std::fs::create_dir_all(n.path("pki")).unwrap();
    std::fs::write(n.path("pki/kubelet-client.key.tmp"), b"garbage").unwrap();
    let k = n.config();
    assert!(matches!(n.run(&mut api, &base_config(&k)), End::Done(_)));
    assert!(
        n.has("step=key kind=bootstrap source=regenerate reason=malformed-key"),
        "{:#?}",
        n.events
    );
}

#[test]
fn serving_certificate_requested_with_the_client_certificate() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let dns = ["node-1.example.com"];
    let ips = ["10.0.0.7".parse().unwrap()];
    let mut c = base_config(&k);
    c.serving = Some(Serving { dns: &dns, ips: &ips });
    c.rotation_wait_secs = 120;
    // Not auto-approved: the wait times out, saying what to approve; nothing is stored.
    match n.run(&mut api, &c) {
        End::Failed(Error::Timeout, _) => {}
        other => panic!("{other:?} {:#?}", n.events),
    }
    let serving = "kubernetes.io/kubelet-serving";
    let name = api.csrs.values().find(|c| c.signer == serving).unwrap().name.clone();
    assert!(name.starts_with("csr-"));
    assert!(n.has(&format!("step=wait kind=serving name={name} signer={serving} hint=\"kubectl certificate approve {name}\"")));
    assert_eq!(api.csrs[&name].username, format!("system:node:{NODE}"));
    assert!(!n.path("pki/kubelet-server-current.pem").exists());
    // Approved (an approver, or kubectl, right after the create): stored as kubelet-server-*.
    api.approve_serving = true;
    n.events.clear();
    assert!(matches!(n.run(&mut api, &c), End::Done(_)), "{:#?}", n.events);
    let current = n.path("pki/kubelet-server-current.pem");
    assert!(std::fs::read_link(&current).unwrap().is_absolute());
    assert!(n.has("step=stored kind=serving"));
    // Valid now: nothing sent; then forced rotation of the serving certificate only.
    let before = api.csrs.len();
    n.events.clear();
    assert!(matches!(n.run(&mut api, &c), End::Done(o) if o.serving.is_some()));
    assert_eq!(api.csrs.len(), before);
    c.rotate_now = RotateNow { client: false, serving: true };
    assert!(matches!(n.run(&mut api, &c), End::Done(_)));
    assert_eq!(api.csrs.len(), before + 1);
    assert_eq!(api.csrs_for(serving), 3);
    // Other SANs than the certificate's: requested again.
    let dns2 = ["node-1.example.org"];
    c.rotate_now = RotateNow::default();
    c.serving = Some(Serving { dns: &dns2, ips: &ips });
    n.events.clear();
    assert!(matches!(n.run(&mut api, &c), End::Done(_)));
    assert!(n.has("step=serving reason=subject-mismatch"), "{:#?}", n.events);
    assert_eq!(api.csrs_for(serving), 4);
}

/// The base configuration with discovery (unpinned when `pins` is empty).
fn discovery_config<'a>(
    k: &'a (String, String, String, String),
    token: &'a BootstrapToken,
    pins: &'a [CaPin],
) -> Config<'a> {
    let mut c = base_config(k);
    c.discovery = Some(DiscoveryConfig {
        server: "https://127.0.0.1:6443",
        token,
        pins,
        allow_unpinned: pins.is_empty(),
        timeout_secs: 60,
    });
    c
}

/// Publish kubeadm's `kube-public/cluster-info` for the token: the CA and the server, signed.
fn serve_cluster_info(api: &mut Apiserver) {
    let kc = format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://127.0.0.1:6443\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nkind: Config\nusers: null\n",
        Base64::encode_string(api.ca_pem.as_bytes())
    );
    let mut jws = [0u8; kubeboot::discovery::DETACHED_JWS_LEN];
    kubeboot::discovery::compute_detached_jws(
        &TokenId::parse("abcdef").unwrap(),
        b"0123456789abcdef",
        kc.as_bytes(),
        &mut jws,
    )
    .unwrap();
    api.cluster_info = Some(
        json!({"kind": "ConfigMap", "data": {"kubeconfig": kc, "jws-kubeconfig-abcdef": String::from_utf8(jws.to_vec()).unwrap()}}),
    );
}

#[test]
fn discovery_then_bootstrap() {
    let mut api = Apiserver::new();
    let token = BootstrapToken::parse(TOKEN).unwrap();
    serve_cluster_info(&mut api);
    let mut ca_der = vec![0u8; 4096];
    let der =
        kubeboot::pem::decode_first(api.ca_pem.as_bytes(), "CERTIFICATE", &mut ca_der).unwrap();
    let pin = CaPin::from_cert_der(der).unwrap();
    for (pins, ok) in [
        (vec![pin], true),
        (vec![CaPin::parse(&format!("sha256:{}", "0".repeat(64))).unwrap()], false),
    ] {
        let mut n = Node::new();
        let k = n.config();
        let c = discovery_config(&k, &token, &pins);
        let end = n.run(&mut api, &c);
        if ok {
            assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
            assert!(n.has("step=discovered"));
            assert!(n.path("bootstrap.conf").exists());
        } else {
            assert!(matches!(end, End::Failed(Error::PinMismatch, _)), "{end:?}");
            assert!(
                !n.path("bootstrap.conf").exists()
                    && !n.path("pki").exists()
                    && !n.path("kubelet.conf").exists()
            );
        }
    }
}

#[test]
fn unanswered_actions_count_as_failed() {
    let mut api = Apiserver::new();
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    agent.start(&base_config(&k)).unwrap();
    // The first action is the recovery step; skipping it is an I/O error: it fails.
    assert!(matches!(agent.poll(T0), Action::File(FileStep::Recover { .. })));
    match agent.poll(T0) {
        Action::Failed(f) => assert_eq!(f.error, Error::Store(StoreErrorKind::Io)),
        other => panic!("{other:?}"),
    }
    let _ = n.run(&mut api, &base_config(&k));
}

/// API Priority and Fairness pushes back (429, `Retry-After: 1`) on cluster-info, the create and
/// the watch: every wait is the server's ask (2 or 3 s of the whole-second clock for 1 s asked,
/// not the kubelet's backoff), the retry lines say so, and the node still makes exactly one CSR.
#[test]
fn pushback_is_waited_out_as_the_server_asks() {
    let mut api = Apiserver::new();
    let token = BootstrapToken::parse(TOKEN).unwrap();
    serve_cluster_info(&mut api);
    let mut n = Node::new();
    let k = n.config();
    let c = discovery_config(&k, &token, &[]);
    // Unpinned discovery is one GET: 2 pushed back, then the create twice, then the watch twice.
    use Route::{ClusterInfo, CsrCreate, CsrWatch};
    api.throttle = [ClusterInfo, ClusterInfo, CsrCreate, CsrCreate, CsrWatch, CsrWatch].into();
    let end = n.run(&mut api, &c);
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert!(api.throttle.is_empty());
    assert_eq!(api.csrs.len(), 1, "one CSR, whatever the pushback");
    let asked: Vec<&String> =
        n.events.iter().filter(|e| e.contains("reason=server-asked")).collect();
    assert_eq!(asked.len(), 6, "{:#?}", n.events);
    for (i, request) in
        ["cluster-info", "cluster-info", "csr", "csr", "csr", "csr"].iter().enumerate()
    {
        let want = format!(
            "step=retry kind=bootstrap request={request} reason=server-asked retry_after=1 at="
        );
        assert!(asked[i].contains(&want), "{}\n{:#?}", asked[i], n.events);
    }
    // 6 waits of 2 or 3 s each (1 s asked, on a whole-second clock).
    assert!((12..=18).contains(&(n.clock - T0)), "{}", n.clock - T0);
}

#[test]
fn apiserver_down_then_up() {
    let mut api = Apiserver::new();
    api.down = true;
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    agent.start(&base_config(&k)).unwrap();
    // Drive until a few transport errors were seen, then bring it up.
    n.crash_after_requests = Some(6);
    assert!(matches!(n.drive(&mut agent, &mut api), End::Crashed));
    api.down = false;
    n.crash_after_requests = None;
    n.requests = 0;
    let end = n.drive(&mut agent, &mut api);
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert!(n.has("step=transport-error"));
    assert!(n.has("step=healthz state=not-ready"));
}

/// What [`Mode::Check`] found, owned.
#[derive(Debug)]
struct Checked {
    client: Result<kubeboot::agent::CertStatus, (Error, &'static str)>,
    serving: Result<kubeboot::agent::CertStatus, (Error, &'static str)>,
    client_chain: usize,
    serving_chain: usize,
    key: String,
    serving_key: String,
    ca: String,
    node: String,
}

impl Node {
    /// Run the agent in check mode: it must end in `Done` with a status, having sent nothing and
    /// changed nothing.
    fn check(&mut self, api: &mut Apiserver, mut cfg: Config<'_>) -> Checked {
        cfg.mode = Mode::Check;
        cfg.bootstrap_kubeconfig = None;
        let before = (self.tree(), api.log.len(), self.requests);
        let mut mem = memory();
        let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
        agent.start(&cfg).unwrap();
        let end = self.drive(&mut agent, api);
        assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", self.events);
        assert_eq!((self.tree(), api.log.len(), self.requests), before, "check changed something");
        let s = agent.status().expect("a status after a check");
        let v = |c: &kubeboot::agent::CertCheck<'_>| c.verdict.map_err(|u| (u.error, u.what));
        Checked {
            client: v(&s.client),
            serving: v(&s.serving),
            client_chain: s.client.chain_pem.len(),
            serving_chain: s.serving.chain_pem.len(),
            key: format!("{:?}", s.client.key),
            serving_key: format!("{:?}", s.serving.key),
            ca: format!("{:?}", s.ca),
            node: s.node.to_owned(),
        }
    }
}

#[test]
fn check_mode_reports_and_changes_nothing() {
    let mut api = Apiserver::new();
    // Nothing there yet: the kubeconfig is missing.
    let mut n = Node::new();
    let k = n.config();
    let c = n.check(&mut api, base_config(&k));
    assert_eq!(c.client, Err((Error::Store(StoreErrorKind::NotFound), "kubeconfig")));
    assert_eq!(c.serving, Err((Error::Store(StoreErrorKind::NotFound), "serving-certificate")));
    assert_eq!((c.client_chain, c.serving_chain, c.key.as_str()), (0, 0, "None"));
    // Bootstrapped: valid, the key in the cert dir's pair, the CA from the kubeconfig's file.
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let mut cfg = base_config(&k);
    cfg.node_name = None;
    let c = n.check(&mut api, cfg);
    let current = n.p("pki/kubelet-client-current.pem");
    let st = c.client.expect("valid");
    assert!(
        st.not_before < n.clock
            && n.clock < st.rotation_deadline
            && st.rotation_deadline < st.not_after
    );
    assert!(c.client_chain > 0);
    assert_eq!(c.key, format!("File({current:?})"));
    assert!(c.ca.starts_with("File(") || c.ca == "Data", "{}", c.ca);
    assert_eq!(c.node, NODE, "learnt from the certificate");
    assert_eq!(c.serving, Err((Error::Store(StoreErrorKind::NotFound), "serving-certificate")));
    assert_eq!(c.serving_key, "None");
    // Expired: still a status (not a failure), the chain kept to be described.
    n.clock += 2 * 3600;
    let c = n.check(&mut api, base_config(&k));
    match c.client {
        Err((Error::Verify(v), "client-certificate")) => assert_eq!(v.reason, Reason::Expired),
        other => panic!("{other:?}"),
    }
    assert!(c.client_chain > 0);
    // A serving pair: checked with its own SANs when none are configured, and against the
    // configured ones otherwise.
    n.clock -= 2 * 3600;
    let dns = ["node-1.example.com"];
    let ips = ["10.0.0.7".parse().unwrap()];
    let mut cfg = base_config(&k);
    cfg.serving = Some(Serving { dns: &dns, ips: &ips });
    api.approve_serving = true;
    assert!(matches!(n.run(&mut api, &cfg), End::Done(o) if o.serving.is_some()));
    let c = n.check(&mut api, base_config(&k));
    assert!(c.serving.is_ok(), "{:?}", c.serving);
    assert!(c.serving_chain > 0 && c.serving_key.starts_with("File("));
    let other = ["node-2.example.com"];
    cfg.serving = Some(Serving { dns: &other, ips: &ips });
    let c = n.check(&mut api, cfg);
    match c.serving {
        Err((Error::Verify(v), "serving-certificate")) => {
            assert_eq!(v.reason, Reason::SubjectMismatch)
        }
        other => panic!("{other:?}"),
    }
    assert!(c.client.is_ok());
}

#[test]
fn metrics_follow_the_kubelets_meaning() {
    use kubeboot::metrics::{self, RENDER_CAP};
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    // A rotation denied once, then retried: one client renewal error; the TTL is the new
    // certificate's, computed at render time.
    let mut c = base_config(&k);
    c.mode = Mode::Run { max_rotations: Some(1) };
    c.rotate_now = RotateNow { client: true, serving: false };
    api.deny_next = true;
    agent.start(&c).unwrap();
    let end = n.drive(&mut agent, &mut api);
    let End::Done(o) = end else { panic!("{end:?} {:#?}", n.events) };
    assert!(n.has("step=retry kind=rotate reason=csr-denied"), "{:#?}", n.events);
    let m = agent.metrics();
    let client = o.client.unwrap();
    assert_eq!(m.client_renew_errors, 1);
    assert_eq!(m.client_not_after, Some(client.not_after));
    assert_eq!(
        (m.serving_not_after, m.serving_renew_errors, m.serving_rotation.count),
        (None, 0, 0)
    );
    let mut buf = [0u8; RENDER_CAP];
    let len = metrics::render(&m, n.clock, &mut buf).unwrap();
    let text = std::str::from_utf8(&buf[..len]).unwrap();
    assert!(
        text.contains(&format!(
            "\nkubelet_certificate_manager_client_ttl_seconds {}\n",
            client.not_after - n.clock
        )),
        "{text}"
    );
    assert!(text.contains("\nkubelet_certificate_manager_client_expiration_renew_errors 1\n"));
    assert!(text.contains("\nkubelet_certificate_manager_server_ttl_seconds +Inf\n"));
    // The serving certificate: its first issue is no rotation; the next one observes how long
    // the first had lived. A refused serving request counts as a serving renewal error.
    let dns = ["node-1.example.com"];
    let ips = ["10.0.0.7".parse().unwrap()];
    let mut c = base_config(&k);
    c.serving = Some(Serving { dns: &dns, ips: &ips });
    api.approve_serving = true;
    agent.start(&c).unwrap();
    let End::Done(o) = n.drive(&mut agent, &mut api) else { panic!("{:#?}", n.events) };
    let first = o.serving.unwrap();
    let m = agent.metrics();
    assert_eq!((m.serving_not_after, m.serving_rotation.count), (Some(first.not_after), 0));
    n.clock += 1000;
    c.rotate_now = RotateNow { client: false, serving: true };
    agent.start(&c).unwrap();
    let End::Done(o) = n.drive(&mut agent, &mut api) else { panic!("{:#?}", n.events) };
    let m = agent.metrics();
    assert_eq!(m.serving_not_after, Some(o.serving.unwrap().not_after));
    assert_eq!(m.serving_rotation.count, 1);
    let lived = i64::try_from(m.serving_rotation.sum).unwrap();
    assert!(lived >= 1000 && lived <= n.clock - first.not_before, "{lived}");
    assert_eq!((m.client_renew_errors, m.serving_renew_errors), (0, 0), "a new run starts at zero");
    api.deny_next = true;
    c.mode = Mode::Once;
    agent.start(&c).unwrap();
    assert!(matches!(n.drive(&mut agent, &mut api), End::Failed(Error::CsrDenied, _)));
    let m = agent.metrics();
    assert_eq!((m.client_renew_errors, m.serving_renew_errors), (0, 1));
    // An expired client certificate is no usable one: +Inf, as client-go's Current() is nil.
    n.clock += 10 * 3600;
    let mut c = base_config(&k);
    c.bootstrap_kubeconfig = None;
    agent.start(&c).unwrap();
    assert!(matches!(n.drive(&mut agent, &mut api), End::Failed(Error::Verify(_), _)));
    let m = agent.metrics();
    assert_eq!((m.client_not_after, m.client_renew_errors), (None, 1));
}

/// `key=value` pairs of a text event line (values unquoted and unescaped).
fn logfmt(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=').unwrap();
        let (value, next) = if let Some(q) = after.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => v.push(chars.next().unwrap().1),
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => v.push(c),
                }
            }
            (v, &q[end..])
        } else {
            let end = after.find(' ').unwrap_or(after.len());
            (after[..end].to_owned(), &after[end..])
        };
        out.push((key.to_owned(), value));
        rest = next.trim_start();
    }
    out
}

#[test]
fn json_events_carry_what_the_text_lines_say() {
    use kubeboot::agent::LogFormat;
    let run = |format: LogFormat| {
        let mut lines = Vec::new();
        // A bootstrap, then one refused (its failed line: a detail with quotes and spaces).
        for refused in [false, true] {
            let mut api = Apiserver::new();
            api.token_valid = !refused;
            let mut n = Node::new();
            n.write_bootstrap_kubeconfig(&api, TOKEN);
            let k = n.config();
            let mut c = base_config(&k);
            c.log_format = format;
            let end = n.run(&mut api, &c);
            assert_eq!(matches!(end, End::Failed(..)), refused, "{end:?} {:#?}", n.events);
            let root = n.path("").display().to_string();
            lines.extend(n.events.iter().map(|l| l.replace(&root, "<root>/")));
        }
        lines
    };
    let (text, json) = (run(LogFormat::Text), run(LogFormat::Json));
    assert_eq!(text.len(), json.len());
    assert!(text.len() > 10, "{text:#?}");
    assert!(
        json.last().unwrap().contains("\"step\":\"failed\",\"reason\":\"unauthorized\""),
        "{json:#?}"
    );
    for (t, j) in text.iter().zip(&json) {
        let obj: serde_json::Map<String, Value> =
            serde_json::from_str(j).unwrap_or_else(|e| panic!("not JSON ({e}): {j}"));
        let pairs: Vec<(String, String)> =
            obj.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect();
        // (the times drawn with jitter differ between the two runs: the issued certificates do)
        let jittered = ["rotation_deadline", "client_rotation_deadline", "until", "at", "deadline"];
        let norm = |mut v: Vec<(String, String)>| {
            v.iter_mut()
                .filter(|(k, _)| jittered.contains(&k.as_str()))
                .for_each(|(_, v)| v.clear());
            v.sort();
            v
        };
        let (got, want) = (norm(pairs), norm(logfmt(t)));
        assert_eq!(got, want, "\n{t}\n{j}");
        assert!(j.starts_with("{\"agent\":\"sim\",\"step\":\""), "{j}");
    }
}

#[test]
fn wake_ends_a_sleep_and_reads_everything_again() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let mut c = base_config(&k);
    c.mode = Mode::Run { max_rotations: None };
    c.ca_refresh_secs = 0;
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    agent.start(&c).unwrap();
    assert!(!agent.wake(), "not sleeping yet");
    let files = FileSteps::new();
    // Up to the sleep until the rotation deadline.
    let until = loop {
        match agent.poll(n.clock) {
            Action::Read(_) | Action::File(_) => {
                files.perform(&mut agent, n.clock);
            }
            Action::Event(_) => {}
            Action::Sleep { until } => break until,
            other => panic!("{other:?}"),
        }
    };
    assert!(until > n.clock + 600);
    // The node kubeconfig goes away: woken, the agent reads everything again, finds no
    // credentials and reads the bootstrap kubeconfig at once (not at the deadline).
    std::fs::remove_file(n.path("kubelet.conf")).unwrap();
    n.clock += 5;
    assert!(agent.wake());
    assert!(!agent.wake(), "once");
    let mut steps = Vec::new();
    let mut reads = Vec::new();
    loop {
        match agent.poll(n.clock) {
            Action::Read(r) => {
                reads.push(r.role.as_str());
                if r.role.as_str() == "bootstrap-kubeconfig" {
                    break;
                }
                files.perform(&mut agent, n.clock);
            }
            Action::Event(e) => steps.push(e.step),
            Action::File(_) => {
                files.perform(&mut agent, n.clock);
            }
            other => panic!("{other:?} {steps:?}"),
        }
    }
    assert_eq!(steps[0], "wake", "{steps:?}");
    assert!(steps.contains(&"credentials") && steps.contains(&"bootstrap"), "{steps:?}");
    assert_eq!(reads.first(), Some(&"kubeconfig"), "{reads:?}");
}

#[test]
fn a_certificate_issued_while_the_clock_is_off_is_kept() {
    // The node's clock is a day behind the apiserver's (an edge device before NTP answers, or
    // a clock stepped back during the wait): by it, every certificate the cluster issues is not
    // yet valid. What was just issued for the node's new key is stored all the same, and the
    // agent waits for its clock instead of throwing the pair away or stopping.
    let mut api = Apiserver::new();
    let mut n = Node::new();
    n.api_ahead = 86_400;
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    match n.run(&mut api, &base_config(&k)) {
        End::Failed(Error::ClockUntrusted, d) => assert!(d.contains("which is off"), "{d}"),
        other => panic!("{other:?} {:#?}", n.events),
    }
    assert!(n.has("step=warning what=\"the clock disagrees with the certificate just issued\""));
    assert!(n.has("step=credentials kind=client state=kept reason=clock-untrusted"));
    assert_eq!(api.csrs.len(), 1, "one CSR: its certificate was not thrown away");
    assert!(std::fs::read_link(n.path("pki/kubelet-client-current.pem")).is_ok());
    assert!(n.path("kubelet.conf").exists());
    // Once the clock is right, the pair is the node's: nothing to do.
    n.api_ahead = 0;
    n.clock += 86_400;
    n.events.clear();
    assert!(matches!(n.run(&mut api, &base_config(&k)), End::Done(_)), "{:#?}", n.events);
    assert!(n.has("step=credentials kind=client state=valid"));
    assert_eq!(api.csrs.len(), 1);
}

/// Poll `agent` until it sleeps, answering files, entropy and events, and HTTP with a refused
/// connection (the apiserver is down); the sleep's end.
fn until_sleep_with_the_apiserver_down(n: &mut Node, agent: &mut Agent<'_>) -> i64 {
    for _ in 0..1000 {
        let now = n.clock;
        match agent.poll(now) {
            Action::Read(_) | Action::File(_) => {
                FileSteps::new().perform(agent, now);
            }
            Action::Event(e) => n.events.push(e.line.to_owned()),
            Action::Entropy { len } => {
                let bytes: Vec<u8> =
                    (0..len).map(|i| (i as u8).wrapping_mul(29).wrapping_add(n.entropy)).collect();
                n.entropy = n.entropy.wrapping_add(1);
                agent.on_entropy(&bytes);
            }
            Action::Http(_) => agent.on_transport_error(now, "connection refused"),
            Action::Sleep { until } => return until,
            other => panic!("{other:?}"),
        }
    }
    panic!("no sleep: {:#?}", n.events);
}

#[test]
fn a_wake_during_an_attempt_is_kept_and_a_clock_stepped_back_ends_a_sleep() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let mut c = base_config(&k);
    c.mode = Mode::Run { max_rotations: Some(2) };
    c.rotate_now = RotateNow { client: true, serving: false };
    c.ca_refresh_secs = 0;
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    agent.start(&c).unwrap();
    // The forced rotation's create is refused: the request's backoff, inside the attempt.
    let until = until_sleep_with_the_apiserver_down(&mut n, &mut agent);
    assert!(until > n.clock && until <= n.clock + 40, "{until} {}", n.clock);
    // SIGHUP: no sleep between attempts to end, but the backoff ends now...
    assert!(!agent.wake());
    loop {
        match agent.poll(n.clock) {
            Action::Event(e) => n.events.push(e.line.to_owned()),
            Action::Http(r) => break assert_eq!(r.kind, RequestKind::Create),
            other => panic!("the retry at once, not {other:?}"),
        }
    }
    agent.on_transport_error(n.clock, "connection refused");
    // ... and the wake is remembered: once the rotation is done, the sleep until the next
    // deadline ends at once, every file read again.
    api.down = false;
    let mark = n.events.len();
    let end = n.drive(&mut agent, &mut api);
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    let after: Vec<&String> = n.events[mark..].iter().collect();
    let stored = after.iter().position(|e| e.contains("step=stored")).expect("stored");
    let woken = after.iter().position(|e| e.contains("step=wake reason=asked")).expect("woken");
    assert!(stored < woken, "{after:#?}");
    assert_eq!(after.iter().filter(|e| e.contains("step=wake")).count(), 1, "{after:#?}");
    assert_eq!(api.csrs.len(), 3, "the forced rotation and the one at the deadline");

    // A clock stepped back (here 200 s: still after the certificate's notBefore) while the
    // agent sleeps until a deadline: the sleep would last the step longer; the agent judges
    // everything again by the new clock instead.
    let mut c = base_config(&k);
    c.mode = Mode::Run { max_rotations: None };
    c.ca_refresh_secs = 0;
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    agent.start(&c).unwrap();
    let until = until_sleep_with_the_apiserver_down(&mut n, &mut agent);
    assert!(until > n.clock + 600, "asleep until the deadline");
    let mark = n.events.len();
    n.clock -= 200;
    let next = until_sleep_with_the_apiserver_down(&mut n, &mut agent);
    let after = &n.events[mark..];
    assert!(after[0].contains("step=wake reason=clock-stepped-back"), "{after:#?}");
    assert!(
        after.iter().any(|e| e.contains("step=credentials kind=client state=valid")),
        "{after:#?}"
    );
    assert_eq!(next, until, "the same deadline: it is the certificate's");
    // A step of a few seconds is not a step.
    let mark = n.events.len();
    n.clock -= kubeboot::agent::CLOCK_STEP_SECS;
    assert!(matches!(agent.poll(n.clock), Action::Sleep { .. }));
    assert_eq!(n.events.len(), mark);
}

// ---------------------------------------------------------------------------------------------
// The CA refresh

/// Another cluster CA: its key, parameters and certificate.
fn new_ca(cn: &str) -> (KeyPair, CertificateParams, String) {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.not_before = time::OffsetDateTime::from_unix_timestamp(T0 - 86_400).unwrap();
    p.not_after = time::OffsetDateTime::from_unix_timestamp(T0 + 86_400 * 3650).unwrap();
    let pem = p.self_signed(&key).unwrap().pem();
    (key, p, pem)
}

fn other_ca(cn: &str) -> String {
    new_ca(cn).2
}

/// Run mode with a refresh every 600 s, until the next sleep (the agent's `Sleep`).
fn refresh_once(n: &mut Node, api: &mut Apiserver, agent: &mut Agent<'_>) {
    let before = n.events.len();
    let until = loop {
        let now = n.clock;
        match agent.poll(now) {
            Action::Read(_) | Action::File(_) => {
                FileSteps::new().perform(agent, now);
            }
            Action::Event(e) => n.events.push(e.line.to_owned()),
            Action::Entropy { len } => {
                let bytes: Vec<u8> =
                    (0..len).map(|i| (i as u8).wrapping_mul(29).wrapping_add(n.entropy)).collect();
                n.entropy = n.entropy.wrapping_add(1);
                agent.on_entropy(&bytes);
            }
            Action::Http(req) if req.kind == RequestKind::Watch => match api.handle(&req, now) {
                Some((200, body)) => {
                    for chunk in body.chunks(7) {
                        if agent.on_stream_data(now, chunk) == StreamControl::Close {
                            break;
                        }
                    }
                }
                Some((status, body)) => agent.on_http_response(now, status, &Headers::NONE, &body),
                None => agent.on_transport_error(now, "connection refused"),
            },
            Action::Http(req) => match api.handle(&req, now) {
                None => {
                    agent.on_transport_error(now, "x509: certificate signed by unknown authority")
                }
                Some((status, body)) => agent.on_http_response(now, status, &Headers::NONE, &body),
            },
            Action::Sleep { until } => {
                let refreshed = n.events[before..].iter().any(|e| e.contains("step=ca "));
                if refreshed && until > now + 1 {
                    break until;
                }
                assert!(until < now + 3600, "a refresh every 600 s ± 10 %: {until} {now}");
                n.clock = until.max(now + 1);
            }
            other => panic!("{other:?} {:#?}", n.events),
        }
    };
    n.clock = until;
}

#[test]
fn ca_rotation_is_followed_and_a_bundle_without_the_connected_ca_is_refused() {
    let mut api = Apiserver::new();
    api.lifetime = 30 * 86_400;
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let mut c = base_config(&k);
    c.mode = Mode::Run { max_rotations: None };
    c.ca_refresh_secs = 600;
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    agent.start(&c).unwrap();
    let ca1 = api.ca_pem.clone();
    let (ca2_key, ca2_params, ca2) = new_ca("sim-cluster-ca-2");
    let ca_path = n.path("pki/ca.crt");
    let file = || std::fs::read_to_string(&ca_path).unwrap();
    let kc_before = std::fs::read(n.path("kubelet.conf")).unwrap();

    // 0. Nothing published: the first refresh (an interval after start) changes nothing.
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(n.has("step=ca state=unchanged sources=none"), "{:#?}", n.events);
    assert_eq!(std::fs::read_to_string(n.path("pki/ca.crt")).unwrap(), ca1);

    // 1. CA1 in cluster-info, the API not served: the same set, unchanged.
    api.publish_cluster_info(&ca1);
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(n.has("step=ca state=unchanged sources=cluster-info cas=1"), "{:#?}", n.events);

    // 2. CA1+CA2 in both sources: proven (the server still presents CA1), written.
    let both = format!("{ca1}{ca2}");
    api.publish_cluster_info(&both);
    api.trust_bundles = Some(vec![both.clone()]);
    let probes = api.log.iter().filter(|l| l.0 == RequestKind::CaProbe).count();
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(
        n.has("step=ca state=updated sources=cluster-info,trust-bundles path="),
        "{:#?}",
        n.events
    );
    assert!(n.has("cas=2 added=1 removed=0"), "{:#?}", n.events);
    assert_eq!(api.log.iter().filter(|l| l.0 == RequestKind::CaProbe).count(), probes + 1);
    assert!(api.trusted_by(file().as_bytes()));
    let (_, who, _) = api.log.iter().rev().find(|l| l.0 == RequestKind::ClusterInfo).unwrap();
    assert_eq!(*who, Who::Anonymous, "cluster-info is read anonymously (kubeadm's RBAC)");

    // 2b. cluster-info, read before, is forbidden for a moment while the bundles say CA1 only:
    //     skipped (the bundles alone would drop CA2, which cluster-info still publishes).
    api.anonymous_forbidden = true;
    api.trust_bundles = Some(vec![ca1.clone()]);
    let written = file();
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(
        n.has("step=ca state=skipped sources=none request=cluster-info status=403"),
        "{:#?}",
        n.events
    );
    assert_eq!(file(), written);
    api.anonymous_forbidden = false;
    api.trust_bundles = Some(vec![both.clone()]);

    // 3. CA2 only, while the server still presents CA1: refused, nothing changes.
    api.publish_cluster_info(&ca2);
    api.trust_bundles = Some(vec![ca2.clone()]);
    let written = file();
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(
        n.has("step=ca state=refused sources=cluster-info,trust-bundles reason=ca-bundle-unproven"),
        "{:#?}",
        n.events
    );
    assert_eq!(file(), written);

    // 4. The server now presents a certificate from CA2 (the file, CA1+CA2, trusts it), and the
    //    signer signs with CA2, as after a kubeadm CA rotation (one CA for both).
    api.presents = ca2.clone();
    (api.ca_key, api.ca_params) = (ca2_key, ca2_params);
    // kube-apiserver's --client-ca-file holds both while the nodes move over.
    api.client_cas = both.clone();
    // 5. CA2 only: the client certificate (from CA1) does not chain to it, so it is rotated
    //    first (over the connection that trusts CA1+CA2), then CA2 only is proven: CA1 dropped.
    let csrs = api.csrs.len();
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(
        n.has("step=ca state=deferred sources=cluster-info,trust-bundles reason=untrusted"),
        "{:#?}",
        n.events
    );
    assert!(n.has("step=rotate kind=client reason=forced"), "{:#?}", n.events);
    assert_eq!(api.csrs.len(), csrs + 1, "one rotation");
    assert!(n.has("cas=1 added=0 removed=1"), "{:#?}", n.events);
    assert_eq!(file(), ca2);
    assert!(!n.has("step=bootstrap"), "never stranded: {:#?}", n.events);
    // The kubeconfig already named the file: untouched all along.
    assert_eq!(std::fs::read(n.path("kubelet.conf")).unwrap(), kc_before);

    // 6. A bundle with a certificate that is not a CA is refused as malformed.
    api.publish_cluster_info(&format!("{ca2}{}", other_leaf()));
    api.trust_bundles = None;
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(n.has("step=ca state=refused sources=none reason=malformed-input"), "{:#?}", n.events);
    assert_eq!(file(), ca2);
}

/// A self-signed end-entity certificate (not a CA).
fn other_leaf() -> String {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut p = CertificateParams::new(vec!["leaf.example".to_owned()]).unwrap();
    p.is_ca = IsCa::ExplicitNoCa;
    p.self_signed(&key).unwrap().pem()
}

#[test]
fn ca_refresh_names_the_file_in_a_kubeconfig_with_inline_data() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    // A kubeconfig as the kubelet writes it from a bootstrap kubeconfig with inline CA data.
    let kc = std::fs::read_to_string(n.path("kubelet.conf")).unwrap();
    let inline = kc.replace(
        &format!("certificate-authority: {}", n.path("pki/ca.crt").display()),
        &format!("certificate-authority-data: {}", Base64::encode_string(api.ca_pem.as_bytes())),
    );
    assert_ne!(inline, kc);
    std::fs::write(n.path("kubelet.conf"), &inline).unwrap();
    std::fs::remove_file(n.path("pki/ca.crt")).unwrap();
    let ca2 = other_ca("sim-serving-ca-2");
    api.publish_cluster_info(&format!("{}{ca2}", api.ca_pem));
    let k = n.config();
    let mut c = base_config(&k);
    c.mode = Mode::Run { max_rotations: None };
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    agent.start(&c).unwrap();
    refresh_once(&mut n, &mut api, &mut agent);
    assert!(n.has("step=ca state=updated"), "{:#?}", n.events);
    assert!(n.has("step=kubeconfig path="), "{:#?}", n.events);
    let kc = std::fs::read_to_string(n.path("kubelet.conf")).unwrap();
    assert!(
        kc.contains(&format!("certificate-authority: {}", n.path("pki/ca.crt").display())),
        "{kc}"
    );
    assert!(kc.contains("client-certificate: "), "{kc}");
}

#[test]
fn once_mode_never_refreshes_the_ca() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    api.publish_cluster_info(&other_ca("elsewhere"));
    let log = api.log.len();
    let k = n.config();
    assert!(matches!(n.run(&mut api, &base_config(&k)), End::Done(_)));
    assert_eq!(api.log.len(), log, "no request");
}

#[test]
fn ca_refresh_is_an_interval_after_start_jittered_and_wake_refreshes_at_once() {
    let mut api = Apiserver::new();
    api.lifetime = 30 * 86_400;
    let mut n = bootstrapped(&mut api);
    api.publish_cluster_info(&api.ca_pem.clone());
    let k = n.config();
    let mut firsts = std::collections::BTreeSet::new();
    for seed in 0..8 {
        let mut c = base_config(&k);
        c.mode = Mode::Run { max_rotations: None };
        c.seed = seed;
        let mut mem = memory();
        let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
        agent.start(&c).unwrap();
        let start = n.clock;
        let log = api.log.len();
        // Up to the first sleep: no request at start.
        let until = loop {
            match agent.poll(n.clock) {
                Action::Read(_) | Action::File(_) => {
                    FileSteps::new().perform(&mut agent, n.clock);
                }
                Action::Event(_) => {}
                Action::Sleep { until } => break until,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(api.log.len(), log, "no request at start");
        let gap = until - start;
        assert!((540..=660).contains(&gap), "the first refresh 600 s ± 10 % after start: {gap}");
        firsts.insert(gap);
        if seed == 0 {
            // SIGHUP: the refresh happens now, not at `until`.
            n.clock += 5;
            assert!(agent.wake());
            let woke = n.clock;
            n.events.clear();
            refresh_once(&mut n, &mut api, &mut agent);
            assert!(n.has("step=ca state=unchanged sources=cluster-info cas=1"), "{:#?}", n.events);
            let (_, _, path) =
                api.log.iter().rev().find(|l| l.0 == RequestKind::ClusterInfo).unwrap();
            assert_eq!(path, "/api/v1/namespaces/kube-public/configmaps/cluster-info");
            assert!(woke < until);
        }
    }
    assert!(firsts.len() > 1, "jittered: {firsts:?}");
}

// ---------------------------------------------------------------------------------------------
// Node keys held by a device (a simulated PKCS#11 token: the real token is e2e's SoftHSM)

const DEVICE: &str = "pkcs11:token=sim?module-path=/usr/lib/sim.so&pin-source=/etc/pin";

/// A [`KeyOp`] copied out of the agent's borrow.
#[derive(Debug)]
enum Op {
    Generate { device: String, label: String },
    Public { key: Vec<u8> },
    Sign { key: Vec<u8>, message: Vec<u8> },
    Certify { key: Vec<u8>, qualifying: [u8; 32] },
    Destroy { key: Vec<u8> },
}

impl From<KeyOp<'_>> for Op {
    fn from(op: KeyOp<'_>) -> Op {
        match op {
            KeyOp::Generate { device, label } => {
                Op::Generate { device: device.into(), label: label.into() }
            }
            KeyOp::Public { key } => Op::Public { key: key.into() },
            KeyOp::Sign { key, message } => Op::Sign { key: key.into(), message: message.into() },
            KeyOp::Destroy { key } => Op::Destroy { key: key.into() },
            KeyOp::Certify { key, qualifying } => {
                Op::Certify { key: key.into(), qualifying: *qualifying }
            }
            other => panic!("unknown key operation {other:?}"),
        }
    }
}

/// A token that makes keys, signs and destroys them; no key ever leaves it.
#[derive(Default)]
struct SimToken {
    keys: BTreeMap<String, kubeboot::key::NodeKey>,
    down: bool,
    made: Vec<String>,
    destroyed: Vec<String>,
    signed: usize,
    /// Sign with another key than the reference's (a broken device or front-end).
    wrong_key: bool,
    /// What the simulated TPM answers to a certify.
    certify: Certify,
    certified: usize,
}

/// A simulated TPM's answer to [`KeyOp::Certify`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Certify {
    #[default]
    Good,
    /// Over other qualifying data (an attestation made for another CSR).
    OtherQualifying,
    /// Of another key.
    OtherKey,
    /// Not a TPMS_ATTEST.
    Garbage,
    /// The device fails.
    Fails,
}

/// `TPM2B` of `v`.
fn tpm2b(v: &[u8]) -> Vec<u8> {
    [&(v.len() as u16).to_be_bytes()[..], v].concat()
}

/// A P-256 ECDSA signing key's `TPMT_PUBLIC` with attributes `attrs`.
fn tpmt_public(point: &[u8; 65], attrs: u32) -> Vec<u8> {
    let mut p = vec![0x00, 0x23, 0x00, 0x0b];
    p.extend_from_slice(&attrs.to_be_bytes());
    p.extend_from_slice(&[0, 0]); // authPolicy
    p.extend_from_slice(&[0x00, 0x10, 0x00, 0x18, 0x00, 0x0b, 0x00, 0x03, 0x00, 0x10]);
    p.extend(tpm2b(&point[1..33]));
    p.extend(tpm2b(&point[33..]));
    p
}

/// The simulated TPM's attestation key.
fn sim_ak() -> kubeboot::key::NodeKey {
    kubeboot::key::NodeKey::from_entropy(&[0xA4; 32]).unwrap()
}

impl SimToken {
    fn label(reference: &[u8]) -> Result<String, String> {
        let mut scratch = [0u8; 2048];
        if let Ok(blob) = keyref::Tss2::from_pem(reference, &mut scratch) {
            let public = kubeboot::tpm::Public::parse_sized(blob.public).unwrap();
            return Ok(public.point.iter().map(|b| format!("{b:02x}")).collect());
        }
        let uri = keyref::pkcs11_uri_of(reference, &mut scratch).map_err(|e| e.to_string())?;
        Ok(keyref::Pkcs11Uri::parse(uri).unwrap().object.unwrap().to_owned())
    }

    fn key(&self, reference: &[u8]) -> Result<&kubeboot::key::NodeKey, String> {
        if self.down {
            return Err("pkcs11 token=sim: the token is unreachable".into());
        }
        let label = Self::label(reference)?;
        self.keys.get(&label).ok_or_else(|| format!("pkcs11 token=sim: no object {label}"))
    }

    fn answer(&mut self, agent: &mut Agent<'_>, op: Op, now: i64) {
        match op {
            Op::Generate { device, label } => {
                let (device, label) = (device.as_str(), label.as_str());
                if self.down {
                    return agent.on_key_generated(now, Err("pkcs11 token=sim: unreachable"));
                }
                let seed = [self.made.len() as u8 + 0x40; 32];
                let key = kubeboot::key::NodeKey::from_entropy(&seed).unwrap();
                let d = match keyref::Device::parse(device).unwrap() {
                    keyref::Device::Pkcs11(d) => d,
                    keyref::Device::Tpm => {
                        // A TSS2 blob: the key's public area and a private area only the
                        // simulated TPM would read.
                        let point = key.public_point();
                        let attrs = kubeboot::attest::REQUIRED_ATTRIBUTES | (1 << 6) | (1 << 18);
                        let public = tpm2b(&tpmt_public(&point, attrs));
                        let private = tpm2b(b"sealed by the sim tpm");
                        let blob = keyref::Tss2 {
                            empty_auth: true,
                            parent: keyref::TPM_RH_OWNER,
                            public: &public,
                            private: &private,
                        };
                        let mut pem = [0u8; 2048];
                        let m = blob.write_pem(&mut pem).unwrap();
                        let label = Self::label(&pem[..m]).unwrap();
                        self.keys.insert(label.clone(), key);
                        self.made.push(label);
                        return agent.on_key_generated(now, Ok((&pem[..m], &point)));
                    }
                };
                let mut uri = [0u8; 1024];
                let n = keyref::write_key_uri(&d, label, &[0x42, self.made.len() as u8], &mut uri)
                    .unwrap();
                let mut pem = [0u8; 2048];
                let uri = std::str::from_utf8(&uri[..n]).unwrap();
                let m = keyref::write_pkcs11_uri_pem(uri, &mut pem).unwrap();
                let point = key.public_point();
                assert!(self.keys.insert(label.to_owned(), key).is_none(), "a label is unique");
                self.made.push(label.to_owned());
                agent.on_key_generated(now, Ok((&pem[..m], &point)));
            }
            Op::Public { key } => match self.key(&key) {
                Ok(k) => agent.on_key_public(now, Ok(&k.public_point())),
                Err(e) => agent.on_key_public(now, Err(&e)),
            },
            Op::Sign { key, message } => {
                let other = kubeboot::key::NodeKey::from_entropy(&[0x77; 32]).unwrap();
                let r = self.key(&key).map(|k| {
                    let k = if self.wrong_key { &other } else { k };
                    k.sign_p256_sha256(&message).unwrap()
                });
                self.signed += 1;
                match r {
                    Ok(rs) => agent.on_signature(now, Ok(&rs)),
                    Err(e) => agent.on_signature(now, Err(&e)),
                }
            }
            Op::Certify { key, qualifying } => {
                self.certified += 1;
                let k = match (self.key(&key), self.certify) {
                    (_, Certify::Fails) | (Err(_), _) => {
                        return agent
                            .on_certified(now, Err("tpm sim: TPM2_Certify: TPM_RC_FAILURE"));
                    }
                    (Ok(k), _) => k,
                };
                let other = kubeboot::key::NodeKey::from_entropy(&[0x55; 32]).unwrap();
                let certified = if self.certify == Certify::OtherKey { &other } else { k };
                let attrs = kubeboot::attest::REQUIRED_ATTRIBUTES | (1 << 6) | (1 << 18);
                let public = tpmt_public(&certified.public_point(), attrs);
                let name = kubeboot::tpm::Public::parse(&public).unwrap().name();
                let q =
                    if self.certify == Certify::OtherQualifying { [9u8; 32] } else { qualifying };
                let mut attest = vec![0xff, 0x54, 0x43, 0x47, 0x80, 0x17];
                attest.extend(tpm2b(
                    &[0x00, 0x0b].iter().chain(&[0xAA; 32]).copied().collect::<Vec<_>>(),
                ));
                attest.extend(tpm2b(&q));
                attest.extend_from_slice(&[0; 8]); // clock
                attest.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 1]); // resets, restarts, safe
                attest.extend_from_slice(&[0; 8]); // firmwareVersion
                attest.extend(tpm2b(&name));
                attest.extend(tpm2b(&name));
                if self.certify == Certify::Garbage {
                    attest = b"not a TPMS_ATTEST".to_vec();
                }
                let rs = sim_ak().sign_p256_sha256(&attest).unwrap();
                let mut sig = vec![0x00, 0x18, 0x00, 0x0b];
                sig.extend(tpm2b(&rs[..32]));
                sig.extend(tpm2b(&rs[32..]));
                agent.on_certified(now, Ok((&attest, &sig)))
            }
            Op::Destroy { key } => {
                let r = self.key(&key).map(|_| ());
                if r.is_ok() {
                    let label = Self::label(&key).unwrap();
                    self.keys.remove(&label);
                    self.destroyed.push(label);
                }
                match r {
                    Ok(()) => agent.on_key_destroyed(now, Ok(())),
                    Err(e) => agent.on_key_destroyed(now, Err(&e)),
                }
            }
        }
    }

    fn point(&self, label: &str) -> [u8; 65] {
        self.keys[label].public_point()
    }
}

fn device_config<'a>(k: &'a (String, String, String, String)) -> Config<'a> {
    let mut c = base_config(k);
    c.key_device = Some(DEVICE);
    c
}

/// No private key anywhere in the node's files: only certificates and key references.
fn assert_no_private_key(n: &Node) {
    for (rel, _) in n.tree() {
        let p = n.path(&rel);
        if !p.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        for line in text.lines().filter(|l| l.starts_with("-----BEGIN ")) {
            assert!(
                !line.contains("PRIVATE KEY") || line.contains("TSS2"),
                "{rel} holds a private key: {line}"
            );
        }
    }
}

/// The public point of the certificate in the node's current pair.
fn current_point(n: &Node) -> Vec<u8> {
    let pem = std::fs::read(n.path("pki/kubelet-client-current.pem")).unwrap();
    let mut der = vec![0u8; 8192];
    let der = kubeboot::pem::decode_first(&pem, "CERTIFICATE", &mut der).unwrap().to_vec();
    let cert = <x509_cert::Certificate as der::Decode>::from_der(&der).unwrap();
    cert.tbs_certificate().subject_public_key_info().subject_public_key.raw_bytes().to_vec()
}

fn device_bootstrapped(api: &mut Apiserver) -> Node {
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(api, TOKEN);
    let k = n.config();
    let end = n.run(api, &device_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    n.events.clear();
    n
}

#[test]
fn device_key_bootstrap_and_rotation_keep_only_references() {
    let mut api = Apiserver::new();
    let mut n = device_bootstrapped(&mut api);
    assert_eq!(n.token.made.len(), 1);
    let first = n.token.made[0].clone();
    assert!(first.starts_with("kubelet-client-2027-01-15-08-00-00"), "{first}");
    assert_eq!(n.token.signed, 1, "the CSR was signed by the token");
    assert_eq!(current_point(&n), n.token.point(&first).to_vec());
    // The pair file and the kubeconfig hold the certificate and the reference only.
    assert_no_private_key(&n);
    let pair = std::fs::read_to_string(n.path("pki/kubelet-client-current.pem")).unwrap();
    assert!(pair.contains("-----BEGIN PKCS#11 PROVIDER URI-----"), "{pair}");
    let kc = std::fs::read_to_string(n.path("kubelet.conf")).unwrap();
    let current = n.path("pki/kubelet-client-current.pem");
    assert!(kc.contains(&format!("client-key: {}", current.display())), "{kc}");
    assert!(!n.path("pki/kubelet-client.key.tmp").exists());
    // Rotation: a new key in the token, the CSR over mutual TLS, the old key destroyed after
    // the swap.
    let k = n.config();
    n.clock += 3600 * 95 / 100;
    let end = n.run(&mut api, &device_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert_eq!(n.token.made.len(), 2);
    let second = n.token.made[1].clone();
    assert_eq!(n.token.destroyed, vec![first.clone()]);
    assert_eq!(n.token.keys.keys().collect::<Vec<_>>(), vec![&second]);
    assert_eq!(current_point(&n), n.token.point(&second).to_vec());
    assert_no_private_key(&n);
    let steps: Vec<&str> = n
        .events
        .iter()
        .map(|e| e.split(" step=").nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    let stored = steps.iter().position(|s| *s == "stored").unwrap();
    let destroyed = n.events.iter().position(|e| e.contains("source=destroyed")).unwrap();
    assert!(destroyed > stored, "destroyed only after the swap: {:#?}", n.events);
    assert!(n.has("which=replaced holder=pkcs11"));
    let (kind, who, _) = api.log.iter().rev().find(|l| l.0 == RequestKind::Create).unwrap();
    assert_eq!((*kind, *who), (RequestKind::Create, Who::Node));
    // The credentials check reads the key's public point from the token.
    let before = n.tree();
    n.events.clear();
    assert!(matches!(n.run(&mut api, &device_config(&k)), End::Done(_)));
    assert!(n.has("step=credentials kind=client state=valid"), "{:#?}", n.events);
    assert_eq!(n.tree(), before);
}

#[test]
fn device_failures_are_typed_and_change_nothing() {
    let mut api = Apiserver::new();
    let mut n = device_bootstrapped(&mut api);
    let k = n.config();
    let mut c = device_config(&k);
    c.rotate_now = RotateNow { client: true, serving: false };
    n.clock += 60;
    // The token is unreachable: a typed error naming the device; no bootstrap elsewhere.
    n.token.down = true;
    let before = n.tree();
    let csrs = api.csrs.len();
    match n.run(&mut api, &c) {
        End::Failed(Error::KeyDevice, d) => assert!(d.contains("pkcs11"), "{d}"),
        other => panic!("{other:?} {:#?}", n.events),
    }
    assert_eq!(n.tree(), before);
    assert_eq!(api.csrs.len(), csrs);
    assert!(n.events.last().unwrap().contains("step=failed reason=key-device code=204"));
    // The object is gone from the token: the same.
    n.token.down = false;
    let label = n.token.made[0].clone();
    let kept = n.token.keys.remove(&label).unwrap();
    assert!(matches!(n.run(&mut api, &c), End::Failed(Error::KeyDevice, _)));
    assert_eq!(n.tree(), before);
    assert_eq!(n.token.made.len(), 1, "no key made");
    n.token.keys.insert(label.clone(), kept);
    // The token signs the CSR with another key: refused before any CSR is sent, the key it
    // made destroyed.
    n.token.wrong_key = true;
    match n.run(&mut api, &c) {
        End::Failed(Error::KeyDevice, d) => assert!(d.contains("does not verify"), "{d}"),
        other => panic!("{other:?} {:#?}", n.events),
    }
    n.token.wrong_key = false;
    assert_eq!(n.tree(), before);
    assert_eq!(api.csrs.len(), csrs);
    assert_eq!(n.token.made.len(), 2);
    assert_eq!(n.token.destroyed, vec![n.token.made[1].clone()]);
    n.token.destroyed.clear();
    // A denied rotation destroys the key it made and keeps the current one.
    api.deny_next = true;
    n.events.clear();
    assert!(matches!(n.run(&mut api, &c), End::Failed(Error::CsrDenied, _)), "{:#?}", n.events);
    assert_eq!(n.tree(), before);
    assert_eq!(n.token.made.len(), 3);
    assert_eq!(n.token.destroyed, vec![n.token.made[2].clone()]);
    assert!(n.token.keys.contains_key(&label));
    assert!(n.has("which=unused holder=pkcs11"));
    // The current key is in a device and none is named for the next one.
    let mut soft = base_config(&k);
    soft.rotate_now = RotateNow { client: true, serving: false };
    match n.run(&mut api, &soft) {
        End::Failed(Error::InvalidConfig, d) => assert!(d.contains("pkcs11"), "{d}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(n.tree(), before);
}

#[test]
fn device_bootstrap_restart_reuses_the_cached_reference() {
    let (mut api, mut n) = crash_mid_wait(device_config);
    let k = n.config();
    let cache = std::fs::read_to_string(n.path("pki/kubelet-client.key.tmp")).unwrap();
    assert!(cache.starts_with("-----BEGIN PKCS#11 PROVIDER URI-----"), "{cache}");
    let name = api.csrs.keys().next().unwrap().clone();
    api.approve(&name, n.clock);
    n.crash_after_requests = None;
    n.events.clear();
    let end = n.run(&mut api, &device_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert_eq!(api.csrs.len(), 1, "the same node-csr, found by name");
    assert_eq!(n.token.made.len(), 1, "the same key");
    assert!(n.has("step=key kind=bootstrap source=cache holder=pkcs11"), "{:#?}", n.events);
    assert!(!n.path("pki/kubelet-client.key.tmp").exists());
    assert_no_private_key(&n);
    // A bootstrap that fails before its CSR exists removes the cache, then destroys the key.
    let mut api = Apiserver::new();
    api.rbac_create = false;
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let before = n.tree();
    let k = n.config();
    assert!(matches!(n.run(&mut api, &device_config(&k)), End::Failed(Error::Forbidden, _)));
    assert_eq!(n.tree(), before);
    assert_eq!(n.token.destroyed, n.token.made);
    assert!(n.token.keys.is_empty());
}

#[test]
fn device_configuration_is_checked_at_start() {
    let n = Node::new();
    let k = n.config();
    for (device, want) in [
        ("pkcs11:token=a;colour=blue?module-path=/m.so", Error::InvalidKeyReference),
        ("pkcs11:token=a?module-path=/m.so&pin-value=1234", Error::InvalidKeyReference),
        ("pkcs11:token=a;object=k?module-path=/m.so", Error::InvalidKeyReference),
        ("tpm:/var/lib/node.pem", Error::InvalidKeyReference),
    ] {
        let mut c = base_config(&k);
        c.key_device = Some(device);
        let mut mem = memory();
        let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
        assert_eq!(agent.start(&c).err(), Some(want), "{device}");
    }
    let mut c = device_config(&k);
    let dns = ["node-1.example"];
    let ip = ["10.0.0.7".parse().unwrap()];
    c.serving = Some(Serving { dns: &dns, ips: &ip });
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    assert_eq!(agent.start(&c).err(), Some(Error::InvalidConfig));
}

#[test]
fn a_serving_certificate_needs_an_ip_as_the_kubelets_does() {
    let n = Node::new();
    let k = n.config();
    let mut c = base_config(&k);
    c.serving = Some(Serving { dns: &["node-1.example"], ips: &[] });
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    assert_eq!(agent.start(&c), Err(Error::ServingNeedsIp));
    assert_eq!(Error::ServingNeedsIp.name(), "serving-needs-ip");
    let ip = ["10.0.0.7".parse().unwrap()];
    c.serving = Some(Serving { dns: &[], ips: &ip });
    assert_eq!(agent.start(&c), Ok(()));
}

/// A clock the agent cannot trust never costs the node its identity: before this build's date
/// (no RTC: 1970 until NTP answers), before the certificate's notBefore, or past its notAfter
/// while the apiserver still takes it (a step forward and back). Nothing is written, no CSR is
/// made, and the reason is typed; once the clock is right the certificate is valid again.
#[test]
fn a_clock_it_cannot_trust_keeps_the_identity() {
    let mut api = Apiserver::new();
    let mut n = bootstrapped(&mut api);
    let k = n.config();
    let before = n.tree();
    let right = n.clock;
    for (clock, skew, says) in [
        (0, right, "the clock says 1970-01-01T00:00:00Z, before 2026-12-01T00:00:00Z"),
        (right - 3600, 3600, "before the certificate's notBefore"),
        (right + 2 * 3600, -2 * 3600, "the apiserver takes the certificate as system:node:node-1"),
    ] {
        n.events.clear();
        n.clock = clock;
        api.skew = skew;
        match n.run(&mut api, &base_config(&k)) {
            End::Failed(Error::ClockUntrusted, d) => assert!(d.contains(says), "{d}"),
            other => panic!("{clock}: {other:?} {:#?}", n.events),
        }
        assert!(n.has("step=credentials kind=client state=kept reason=clock-untrusted"));
        assert_eq!(n.tree(), before, "{clock}: a file changed");
        assert_eq!(api.csrs.len(), 1, "{clock}: a CSR was made");
    }
    // The step forward was asked about: one review, with the node's certificate.
    assert!(n.has("step=probe kind=client answer=the-node status=201"));
    let reviews = api.log.iter().filter(|l| l.0 == RequestKind::SelfSubjectReview).count();
    assert_eq!(reviews, 1);
    // The clock right again: valid, nothing to do.
    n.events.clear();
    (n.clock, api.skew) = (right + 60, 0);
    assert!(matches!(n.run(&mut api, &base_config(&k)), End::Done(_)), "{:#?}", n.events);
    assert!(n.has("step=credentials kind=client state=valid"));
    assert_eq!(n.tree(), before);
    // Truly expired (the apiserver agrees): it falls back to the bootstrap token, as before.
    n.events.clear();
    n.clock = right + 2 * 3600;
    assert!(matches!(n.run(&mut api, &base_config(&k)), End::Done(_)), "{:#?}", n.events);
    assert!(n.has("step=probe kind=client answer=refused status=401"));
    assert!(n.has("step=bootstrap reason=expired"));
    assert_eq!(api.csrs.len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Trust by proof: a cluster whose client-certificate signer is not the CA in the kubeconfig

/// An apiserver whose client signer is another CA than the one it serves with (the bootstrap
/// kubeconfig's): kube-controller-manager's `--cluster-signing-kube-apiserver-client-kubelet-*`
/// apart from the cluster CA. `takes_them`: its `--client-ca-file` holds the signer's CA.
fn separate_client_signer(takes_them: bool) -> (Apiserver, String) {
    let mut api = Apiserver::new();
    let (key, params, signer) = new_ca("sim-client-signer");
    (api.ca_key, api.ca_params) = (key, params);
    api.client_cas = if takes_them { signer.clone() } else { api.ca_pem.clone() };
    (api, signer)
}

fn reviews(api: &Apiserver) -> usize {
    api.log.iter().filter(|l| l.0 == RequestKind::SelfSubjectReview).count()
}

#[test]
fn a_pair_from_another_signer_is_proven_by_the_apiserver_before_it_becomes_current() {
    let (mut api, _) = separate_client_signer(true);
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let end = n.run(&mut api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert!(n.has("step=issued kind=bootstrap"), "{:#?}", n.events);
    assert!(n.has("issuer=\"CN=sim-client-signer\" chain=unanchored"), "{:#?}", n.events);
    assert!(n.has("step=probe kind=bootstrap reason=untrusted name=node-csr-"), "{:#?}", n.events);
    assert!(n.has("step=probe kind=bootstrap answer=the-node status=201"), "{:#?}", n.events);
    // The review went out with the new pair, before anything was stored.
    let (_, who, _) = api.log.iter().find(|l| l.0 == RequestKind::SelfSubjectReview).unwrap();
    assert_eq!(*who, Who::Node);
    let probe = n.events.iter().position(|e| e.contains("answer=the-node")).unwrap();
    let stored = n.events.iter().position(|e| e.contains("step=stored")).unwrap();
    assert!(probe < stored, "{:#?}", n.events);
    assert!(n.path("kubelet.conf").exists());
    assert!(!n.path("pki/kubelet-client.key.tmp").exists(), "the key cache went");
    assert_eq!(api.csrs.len(), 1);

    // A restart judges the pair by everything but its chain and asks once more; then it is
    // valid (no new CSR, no bootstrap).
    n.events.clear();
    let before = reviews(&api);
    let end = n.run(&mut api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert!(n.has("step=credentials kind=client state=unanchored"), "{:#?}", n.events);
    assert!(n.has("step=probe kind=client answer=the-node"), "{:#?}", n.events);
    assert!(n.has("step=credentials kind=client state=valid"), "{:#?}", n.events);
    assert!(!n.has("step=bootstrap"), "{:#?}", n.events);
    assert_eq!(reviews(&api), before + 1);
    assert_eq!(api.csrs.len(), 1);

    // A rotation: the new pair is proven the same way; the proof is remembered, so the
    // rereading after the store asks nothing more.
    n.events.clear();
    let mut c = base_config(&k);
    c.rotate_now = RotateNow { client: true, serving: false };
    let before = reviews(&api);
    let end = n.run(&mut api, &c);
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert!(n.has("step=probe kind=rotate answer=the-node"), "{:#?}", n.events);
    assert_eq!(reviews(&api), before + 2, "the current pair at start, the new one once");
    assert_eq!(api.csrs.len(), 2);
}

#[test]
fn a_pair_the_apiserver_refuses_is_never_current_and_the_refusal_names_the_flag() {
    let (mut api, _) = separate_client_signer(false);
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let end = n.run(&mut api, &base_config(&k));
    let End::Failed(e, detail) = end else { panic!("{end:?} {:#?}", n.events) };
    assert_eq!(e.name(), "untrusted");
    assert!(detail.contains("--ca-bundle"), "{detail}");
    assert!(n.has("step=probe kind=bootstrap answer=refused status=401"), "{:#?}", n.events);
    assert!(!n.path("kubelet.conf").exists());
    assert!(!n.path("pki/kubelet-client-current.pem").exists());
    // The key stays: its CSR was issued, and a restart finds it again.
    assert!(n.path("pki/kubelet-client.key.tmp").exists());
    assert!(n.has("step=cleanup kept="), "{:#?}", n.events);
}

#[test]
fn a_probe_without_an_answer_keeps_the_key_and_asks_again() {
    let (mut api, _) = separate_client_signer(true);
    api.throttle = [Route::SelfSubjectReview].into();
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    let end = n.run(&mut api, &base_config(&k));
    let End::Failed(e, detail) = end else { panic!("{end:?} {:#?}", n.events) };
    assert_eq!(e.name(), "untrusted");
    assert!(detail.contains("could not say"), "{detail}");
    assert!(n.has("answer=unknown status=429"), "{:#?}", n.events);
    assert!(n.path("pki/kubelet-client.key.tmp").exists());
    // Again: the same key finds its CSR (409, then GET), and the answer comes.
    n.events.clear();
    let end = n.run(&mut api, &base_config(&k));
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert_eq!(api.csrs.len(), 1, "the one CSR, not a second");
    assert!(n.has("answer=the-node"), "{:#?}", n.events);
}

#[test]
fn a_configured_ca_bundle_is_the_only_trust() {
    // The signer's CA given: anchored, nothing asked.
    let (mut api, signer) = separate_client_signer(true);
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    std::fs::write(n.path("signer.crt"), &signer).unwrap();
    let bundle = n.p("signer.crt");
    let k = n.config();
    let mut c = base_config(&k);
    c.ca_bundle = Some(&bundle);
    let end = n.run(&mut api, &c);
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert_eq!(reviews(&api), 0);
    assert!(!n.has("chain=unanchored"));

    // Another CA given: the explicit bundle is not second-guessed.
    let (mut api, _) = separate_client_signer(true);
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    std::fs::write(n.path("other.crt"), other_ca("elsewhere")).unwrap();
    let bundle = n.p("other.crt");
    let k = n.config();
    let mut c = base_config(&k);
    c.ca_bundle = Some(&bundle);
    let end = n.run(&mut api, &c);
    let End::Failed(e, _) = end else { panic!("{end:?} {:#?}", n.events) };
    assert_eq!(e.name(), "untrusted");
    assert_eq!(reviews(&api), 0);
}

// ---------------------------------------------------------------------------------------------
// An attested bootstrap (a simulated TPM; the real one is e2e/attest's swtpm)

/// A device CA and the simulated TPM's attestation key certificate (serial SN-SIM), as
/// `kubeboot device provision` issues it: (device CA PEM, chain PEM).
fn sim_device_ca() -> (String, String) {
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, "sim device factory");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.not_before = rcgen::date_time_ymd(2026, 1, 1);
    ca.not_after = rcgen::date_time_ymd(2036, 1, 1);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, &ca_key);
    let mut ak = CertificateParams::new(Vec::<String>::new()).unwrap();
    ak.distinguished_name.push(DnType::CustomDnType(vec![2, 5, 4, 5]), "SN-SIM");
    ak.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::Other(vec![2, 23, 133, 8, 3])];
    ak.not_before = rcgen::date_time_ymd(2026, 1, 1);
    ak.not_after = rcgen::date_time_ymd(2036, 1, 1);
    let spki = kubeboot::key::spki_from_point(&sim_ak().public_point());
    let public = rcgen::SubjectPublicKeyInfo::from_der(&spki).unwrap();
    (ca_cert.pem(), ak.signed_by(&public, &issuer).unwrap().pem())
}

/// Bootstrap with the key in the simulated TPM and `attestation` configured; the TPM answers
/// certifies as `certify` says.
fn attested_run(certify: Certify) -> (Apiserver, Node, End, String) {
    let mut api = Apiserver::new();
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let (ca, chain) = sim_device_ca();
    std::fs::write(n.path("attestation.pem"), chain).unwrap();
    n.token.certify = certify;
    let k = n.config();
    let chain_path = n.p("attestation.pem");
    let mut c = base_config(&k);
    c.key_device = Some("tpm");
    c.attestation = Some(&chain_path);
    let end = n.run(&mut api, &c);
    (api, n, end, ca)
}

#[test]
fn an_attested_bootstrap_sends_the_tpms_certify_of_its_csr() {
    let (api, n, end, ca) = attested_run(Certify::Good);
    assert!(matches!(end, End::Done(_)), "{end:?} {:#?}", n.events);
    assert_eq!(n.token.certified, 1, "one certify, for the bootstrap CSR");
    let csrs: Vec<_> = api.csrs.values().collect();
    assert_eq!(csrs.len(), 1);
    let request = Base64::decode_vec(&csrs[0].request_b64).unwrap();
    // What the approver reads: the CSR first, the evidence after it; the core's judgement
    // accepts it for the enrolled node.
    let mut scratch = vec![0u8; request.len()];
    let (csr, evidence) = kubeboot::attest::Evidence::split(&request, &mut scratch).unwrap();
    let evidence = evidence.expect("the evidence after the CSR");
    assert_eq!(evidence.chain.len(), 1);
    let mut ca_scratch = vec![0u8; ca.len()];
    let cas: kubeboot::verify::TrustedCas<'_> =
        kubeboot::verify::TrustedCas::from_pem(ca.as_bytes(), &mut ca_scratch).unwrap();
    let line = format!("SN-SIM {NODE}\n");
    let list = kubeboot::attest::Enrolment::parse(&line).unwrap();
    let ok = kubeboot::attest::judge(
        &kubeboot::backend::Software,
        &csr,
        &evidence,
        cas.anchors(),
        &list,
        T0,
    )
    .unwrap();
    assert_eq!((ok.serial.as_str(), ok.node), ("SN-SIM", NODE));
    // The CSR's key is the TPM's, and the pair file holds its reference.
    assert_eq!(current_point(&n), n.token.point(&n.token.made[0]).to_vec());
    let pair = std::fs::read_to_string(n.path("pki/kubelet-client-current.pem")).unwrap();
    assert!(pair.contains("-----BEGIN TSS2 PRIVATE KEY-----"), "{pair}");
}

#[test]
fn a_wrong_certify_fails_the_attempt_before_any_csr() {
    for (certify, why) in [
        (Certify::OtherQualifying, "not over this CSR's qualifying data"),
        (Certify::OtherKey, "not of this key"),
        (Certify::Garbage, "the answer is not a TPM's certify"),
        (Certify::Fails, "TPM_RC_FAILURE"),
    ] {
        let (api, n, end, _) = attested_run(certify);
        match &end {
            End::Failed(Error::KeyDevice, detail) => {
                assert!(detail.contains(why), "{certify:?}: {detail}")
            }
            other => panic!("{certify:?}: {other:?} {:#?}", n.events),
        }
        assert!(api.csrs.is_empty(), "{certify:?}: no CSR was created");
        assert!(!n.path("pki/kubelet-client-current.pem").exists());
    }
}

#[test]
fn attestation_needs_a_tpm_key_and_a_chain_file() {
    // Not with a software key, nor with a PKCS#11 token: refused at start.
    let mut mem = memory();
    let mut agent = Agent::new(&mut mem, &Capacities::HOST).unwrap();
    let n = Node::new();
    let k = n.config();
    for device in [None, Some(DEVICE)] {
        let mut c = base_config(&k);
        c.key_device = device;
        c.attestation = Some("/etc/kubeboot/attestation.pem");
        assert_eq!(agent.start(&c), Err(Error::InvalidConfig), "{device:?}");
    }
    // A chain file that is missing, or not certificates: a typed failure, no CSR.
    let mut api = Apiserver::new();
    let mut n = Node::new();
    n.write_bootstrap_kubeconfig(&api, TOKEN);
    let k = n.config();
    for (content, want) in [
        (None, "reading the attestation chain"),
        (Some("not a certificate\n"), "not 1 to 4 CERTIFICATE blocks"),
    ] {
        let chain_path = n.p("attestation.pem");
        match content {
            Some(text) => std::fs::write(&chain_path, text).unwrap(),
            None => {
                let _ = std::fs::remove_file(&chain_path);
            }
        }
        let mut c = base_config(&k);
        c.key_device = Some("tpm");
        c.attestation = Some(&chain_path);
        match n.run(&mut api, &c) {
            End::Failed(_, detail) => assert!(detail.contains(want), "{detail}"),
            other => panic!("{other:?}"),
        }
        assert!(api.csrs.is_empty());
    }
}
