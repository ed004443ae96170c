//! `kubeboot bootstrap`, `kubeboot rotate`, `kubeboot run`: the node agent.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use kubeboot::csr::Profile;
use kubeboot::engine::{Action, Config, Engine};
use kubeboot::key::{NodeKey, SEC1_PEM_LEN};
use kubeboot::kubeconfig::{NodeKubeconfig, write_node_kubeconfig};
use kubeboot::store::{CertStore, KeyCacheOutcome, KeySource, PREFIX_CLIENT, Timestamp};
use kubeboot::token::BootstrapToken;
use kubeboot::verify::{Expected, scratch_len, verify_issued};
use kubeboot::{Error, rotation};
use zeroize::Zeroizing;

use crate::transport::{TlsSetup, Transport};
use crate::{CmdResult, Rejected, files, kubecfg, rfc, unix_now};

const AGENT: &str = "rust";

/// Arguments shared by bootstrap and run.
#[derive(Args, Clone)]
pub struct BootstrapArgs {
    /// The bootstrap kubeconfig (server, CA, bootstrap token).
    #[arg(long)]
    bootstrap_kubeconfig: PathBuf,
    /// The node kubeconfig to write (and to check first: valid credentials mean nothing to do).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The certificate directory.
    #[arg(long, default_value = "/var/lib/kubelet/pki")]
    cert_dir: PathBuf,
    /// The node name.
    #[arg(long)]
    node_name: String,
    /// CA bundle the issued certificate must chain to (default: the bootstrap kubeconfig's CA;
    /// give the cluster's signing CA when it differs from the apiserver's serving CA).
    #[arg(long)]
    ca_bundle: Option<PathBuf>,
    /// How long to wait for approval and issuance (e.g. 1h, 15m).
    #[arg(long, default_value = "1h")]
    wait: String,
    /// spec.expirationSeconds to request (≥ 600).
    #[arg(long)]
    expiration_seconds: Option<u32>,
    /// Poll the CSR instead of watching it.
    #[arg(long)]
    poll: bool,
    /// Request a kubelet serving certificate (signer kubernetes.io/kubelet-serving, stored as
    /// kubelet-server-*.pem); needs manual approval (`kubectl certificate approve`).
    #[arg(long)]
    serving: bool,
    /// Serving certificate DNS name (repeatable).
    #[arg(long, requires = "serving")]
    dns: Vec<String>,
    /// Serving certificate IP address (repeatable).
    #[arg(long, requires = "serving")]
    ip: Vec<String>,
}

/// Arguments of `kubeboot rotate`.
#[derive(Args)]
pub struct RotateArgs {
    /// The node kubeconfig (its client certificate authenticates the rotation).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The certificate directory.
    #[arg(long, default_value = "/var/lib/kubelet/pki")]
    cert_dir: PathBuf,
    /// Rotate now, even before the rotation deadline.
    #[arg(long)]
    force: bool,
    /// CA bundle the issued certificate must chain to (default: the kubeconfig's CA).
    #[arg(long)]
    ca_bundle: Option<PathBuf>,
    /// How long to wait for approval and issuance.
    #[arg(long, default_value = "15m")]
    wait: String,
    /// spec.expirationSeconds to request (≥ 600).
    #[arg(long)]
    expiration_seconds: Option<u32>,
}

fn seed() -> u64 {
    let mut b = [0u8; 8];
    let _ = files::os_entropy(&mut b);
    u64::from_le_bytes(b)
}

fn jitter() -> u32 {
    let mut b = [0u8; 4];
    let _ = files::os_entropy(&mut b);
    u32::from_le_bytes(b)
}

/// The local UTC offset in seconds (for the kubelet's local-time file names).
fn utc_offset(unix: i64) -> i32 {
    let t: libc::time_t = unix as libc::time_t;
    // SAFETY: `tm` is a plain C struct, fully written by localtime_r on success; both pointers
    // are valid for the call.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff as i32
    }
}

fn store_err(e: kubeboot::store::StoreError) -> Rejected {
    Rejected(e.to_string())
}

/// The node's current credentials, if they still work: the kubeconfig loads, its client
/// certificate and key match, and the certificate validates now (spec §3.1, plus the chain).
struct Current {
    not_before: i64,
    not_after: i64,
}

fn current_credentials(
    kubeconfig: &Path,
    ca_bundle: Option<&[u8]>,
    node: Option<&str>,
) -> Option<Current> {
    if !kubeconfig.exists() {
        return None;
    }
    let kc = kubecfg::load(kubeconfig).ok()?;
    let cert = kc.client_cert_pem.as_ref()?;
    let key = NodeKey::from_pem(kc.client_key_pem.as_ref()?).ok()?;
    let ca = ca_bundle.or(kc.ca_pem.as_deref())?;
    let spki = key.public_key_spki();
    let node_name = match node {
        Some(n) => n.to_owned(),
        None => node_name_of(cert)?,
    };
    let expected = Expected { node_name: &node_name, public_key: &spki, profile: Profile::Client };
    let mut scratch = vec![0u8; scratch_len(cert, ca)];
    let v = verify_issued(cert, ca, &expected, unix_now(), &mut scratch).ok()?;
    Some(Current { not_before: v.not_before, not_after: v.not_after })
}

/// The node name in the leaf's subject CN (`system:node:<name>`); the subject itself is checked
/// by `verify_issued` against that name.
fn node_name_of(cert_pem: &[u8]) -> Option<String> {
    use der::Decode;
    let mut der = vec![0u8; cert_pem.len()];
    let der = kubeboot::pem::decode_first(cert_pem, "CERTIFICATE", &mut der).ok()?;
    let cert = x509_cert::Certificate::from_der(der).ok()?;
    let cn = cert
        .tbs_certificate()
        .subject()
        .iter()
        .find(|atv| atv.oid == const_oid::db::rfc4519::CN)?;
    let value = der::asn1::PrintableStringRef::try_from(&cn.value)
        .map(|s| s.to_string())
        .or_else(|_| der::asn1::Utf8StringRef::try_from(&cn.value).map(|s| s.to_string()))
        .ok()?;
    value.strip_prefix("system:node:").map(str::to_owned)
}

/// Write the node kubeconfig (spec §3.5) with `bootstrap`'s server and CA (file path made absolute,
/// or the data copied), pointing at `<cert_dir>/kubelet-client-current.pem` with the cert dir made
/// absolute; 0600, replaced atomically.
pub fn write_kubeconfig(
    path: &Path,
    bootstrap: &kubecfg::Loaded,
    cert_dir: &Path,
) -> Result<(), Rejected> {
    let cert_dir = std::path::absolute(cert_dir).map_err(|e| Rejected(e.to_string()))?;
    let ca_file = bootstrap.ca_file.as_ref().map(|p| p.to_string_lossy().into_owned());
    let cfg = NodeKubeconfig {
        server: &bootstrap.server,
        certificate_authority: ca_file.as_deref(),
        certificate_authority_data: if ca_file.is_some() {
            None
        } else {
            bootstrap.ca_pem.as_deref()
        },
        insecure_skip_tls_verify: bootstrap.insecure,
        cert_dir: &cert_dir.to_string_lossy(),
    };
    let mut buf = vec![0u8; 64 * 1024];
    let n = write_node_kubeconfig(&cfg, &mut buf)?;
    files::write_private(path, &buf[..n], true)
}

/// A failed engine run: the error, the server's detail, and whether the CSR exists on the server.
type EngineFailure = (Error, String, bool);

/// Drive one engine to its end and store the result. Returns the validity window.
fn run_engine(
    cfg: Config<'_>,
    key: &NodeKey,
    transport: &Transport,
    store: &CertStore,
) -> Result<(i64, i64, i64), EngineFailure> {
    let now = unix_now();
    let mut engine: Box<Engine<'_, NodeKey>> = match Engine::new(cfg, key, now, seed()) {
        Ok(e) => Box::new(e),
        Err(e) => return Err((e, e.to_string(), false)),
    };
    if !engine.csr_name().is_empty() {
        println!("agent={AGENT} step=csr name={}", engine.csr_name());
    }
    match transport.drive(&mut engine, AGENT) {
        Ok(()) => {}
        Err(e) => {
            let detail = engine
                .failure()
                .map(|(_, d)| {
                    let mut s = String::new();
                    if let Some(st) = d.status {
                        s.push_str(&format!("status={st} "));
                    }
                    if !d.reason.is_empty() {
                        s.push_str(&format!("reason={} ", d.reason));
                    }
                    s.push_str(&d.message);
                    s
                })
                .unwrap_or_default();
            return Err((e, detail, engine.created()));
        }
    }
    let Action::Done(issued) = engine.poll(unix_now()) else {
        return Err((Error::InvalidState, "engine did not finish".into(), true));
    };
    println!(
        "agent={AGENT} step=issued csr={} not_before={} not_after={} issuer=\"{}\"",
        issued.csr_name,
        rfc(issued.verified.not_before),
        rfc(issued.verified.not_after),
        issued.verified.ca_subject
    );
    let mut key_pem = Zeroizing::new([0u8; SEC1_PEM_LEN]);
    let kn = key.to_sec1_pem(&mut key_pem[..]).map_err(|e| (e, e.to_string(), true))?;
    let now = unix_now();
    let ts = Timestamp::from_unix(now, utc_offset(now))
        .map_err(|e| (Error::InvalidState, e.to_string(), true))?;
    let path = store
        .update(&ts, issued.cert_pem, &key_pem[..kn])
        .map_err(|e| (Error::InvalidState, format!("storing credentials: {e}"), true))?;
    println!(
        "agent={AGENT} step=stored file={} current={}",
        path.display(),
        store.current_path().display()
    );
    Ok((issued.verified.not_before, issued.verified.not_after, issued.rotation_deadline))
}

fn wait_secs(s: &str) -> Result<i64, Rejected> {
    let secs = crate::cmd_token::parse_duration(s)?;
    if secs <= 0 {
        return Err(Rejected("--wait must be positive".into()));
    }
    Ok(secs)
}

/// `kubeboot bootstrap --serving`: a kubelet-serving certificate, requested with the bootstrap
/// token, stored as `kubelet-server-*.pem`.
fn bootstrap_serving(a: &BootstrapArgs) -> CmdResult {
    let ca_bundle = a.ca_bundle.as_ref().map(|p| files::read(p)).transpose()?;
    let boot = kubecfg::load(&a.bootstrap_kubeconfig)?;
    let token_text = boot
        .token
        .as_ref()
        .ok_or_else(|| Rejected(format!("{}: no token", a.bootstrap_kubeconfig.display())))?;
    let token = BootstrapToken::parse(token_text)
        .map_err(|e| Rejected(format!("bootstrap kubeconfig token: {e}")))?;
    let ca_for_issued = ca_bundle
        .as_deref()
        .or(boot.ca_pem.as_deref())
        .ok_or_else(|| Rejected("no CA bundle".into()))?;
    let ips = parse_ips(&a.ip)?;
    let dns: Vec<&str> = a.dns.iter().map(String::as_str).collect();
    let transport = Transport::new(
        &boot.server,
        TlsSetup { ca_pem: boot.ca_pem.as_deref(), insecure: boot.insecure, client: None },
    )?;
    let store = CertStore::open(kubeboot::store::PREFIX_SERVER, &a.cert_dir).map_err(store_err)?;
    let key = NodeKey::generate(files::os_entropy)?;
    let mut cfg = Config::bootstrap(&a.node_name, &token, ca_for_issued);
    cfg.profile = Profile::Serving { dns: &dns, ips: &ips };
    cfg.naming = kubeboot::engine::Naming::Generate;
    cfg.wait_secs = wait_secs(&a.wait)?;
    cfg.expiration_seconds = a.expiration_seconds;
    cfg.watch = !a.poll;
    println!("agent={AGENT} step=start-serving node={} server={}", a.node_name, boot.server);
    let (_, na, deadline) =
        run_engine(cfg, &key, &transport, &store).map_err(|(e, detail, _)| {
            println!(
                "agent={AGENT} error={} code={} detail=\"{}\"",
                e,
                e.code(),
                detail.replace('"', "'")
            );
            Rejected(format!("serving bootstrap failed: {e} ({detail})"))
        })?;
    println!(
        "agent={AGENT} step=done-serving not_after={} rotation_deadline={}",
        rfc(na),
        rfc(deadline)
    );
    Ok(())
}

/// `kubeboot bootstrap`: path B of the kubelet.
pub fn bootstrap(a: &BootstrapArgs) -> CmdResult {
    if a.serving {
        return bootstrap_serving(a);
    }
    let ca_bundle = a.ca_bundle.as_ref().map(|p| files::read(p)).transpose()?;
    if let Some(c) = current_credentials(&a.kubeconfig, ca_bundle.as_deref(), Some(&a.node_name)) {
        let deadline = rotation::rotation_deadline(c.not_before, c.not_after, jitter());
        println!(
            "agent={AGENT} step=valid kubeconfig={} not_after={} rotation_deadline={}",
            a.kubeconfig.display(),
            rfc(c.not_after),
            rfc(deadline)
        );
        return Ok(());
    }
    let boot = kubecfg::load(&a.bootstrap_kubeconfig)?;
    if boot.tls_server_name.is_some() {
        return Err(Rejected(
            "tls-server-name in the bootstrap kubeconfig is not supported".into(),
        ));
    }
    let token_text = boot
        .token
        .as_ref()
        .ok_or_else(|| Rejected(format!("{}: no token", a.bootstrap_kubeconfig.display())))?;
    let token = BootstrapToken::parse(token_text)
        .map_err(|e| Rejected(format!("bootstrap kubeconfig token: {e}")))?;
    let ca_for_issued = ca_bundle.as_deref().or(boot.ca_pem.as_deref()).ok_or_else(|| {
        Rejected("no CA to validate the issued certificate against (give --ca-bundle)".into())
    })?;
    let wait = wait_secs(&a.wait)?;
    let transport = Transport::new(
        &boot.server,
        TlsSetup { ca_pem: boot.ca_pem.as_deref(), insecure: boot.insecure, client: None },
    )?;
    println!(
        "agent={AGENT} step=start node={} server={} token_id={}",
        a.node_name,
        boot.server,
        token.id()
    );

    let cert_dir_existed = a.cert_dir.exists();
    let store = CertStore::open(PREFIX_CLIENT, &a.cert_dir).map_err(store_err)?;
    let (key, source) = store.bootstrap_key(files::os_entropy).map_err(store_err)?;
    let generated = matches!(
        source,
        KeySource::Cache(KeyCacheOutcome::Generated | KeyCacheOutcome::Regenerated)
    );
    println!("agent={AGENT} step=key source={source:?}");

    // Upstream waits up to a minute for /healthz, only logging failures.
    for _ in 0..5 {
        match transport.get("/healthz", Duration::from_secs(1)) {
            Ok((200, _)) => break,
            _ => std::thread::sleep(Duration::from_secs(2)),
        }
    }
    let mut cfg = Config::bootstrap(&a.node_name, &token, ca_for_issued);
    cfg.wait_secs = wait;
    cfg.expiration_seconds = a.expiration_seconds;
    cfg.watch = !a.poll;
    match run_engine(cfg, &key, &transport, &store) {
        Ok((_nb, na, deadline)) => {
            write_kubeconfig(&a.kubeconfig, &boot, &a.cert_dir)?;
            let _ = store.remove_key_cache();
            println!(
                "agent={AGENT} step=done kubeconfig={} not_after={} rotation_deadline={}",
                a.kubeconfig.display(),
                rfc(na),
                rfc(deadline)
            );
            Ok(())
        }
        Err((e, detail, created)) => {
            // Change nothing: a key cache we created for this attempt goes again, unless a CSR
            // signed by it exists and may still be approved (timeout): then a restart must reuse
            // the key, so that it finds its own `node-csr-` object.
            if generated && !(e == Error::Timeout && created) {
                let _ = store.remove_key_cache();
                if !cert_dir_existed {
                    let _ = std::fs::remove_dir(&a.cert_dir);
                }
            }
            println!(
                "agent={AGENT} error={} code={} detail=\"{}\"",
                e,
                e.code(),
                detail.replace('"', "'")
            );
            Err(Rejected(format!(
                "bootstrap failed: {e}{}",
                if detail.is_empty() { String::new() } else { format!(" ({detail})") }
            )))
        }
    }
}

/// One rotation: new key, CSR authenticated by the current client certificate.
fn rotate_once(
    kubeconfig: &Path,
    cert_dir: &Path,
    ca_bundle: Option<&[u8]>,
    wait: i64,
    expiration_seconds: Option<u32>,
) -> Result<(i64, i64, i64), Rejected> {
    let kc = kubecfg::load(kubeconfig)?;
    let chain = kc
        .client_cert_pem
        .as_deref()
        .ok_or_else(|| Rejected("the kubeconfig has no client certificate".into()))?;
    let old_key = kc
        .client_key_pem
        .as_deref()
        .ok_or_else(|| Rejected("the kubeconfig has no client key".into()))?;
    let node = node_name_of(chain)
        .ok_or_else(|| Rejected("the client certificate is not a node certificate".into()))?;
    let ca_for_issued =
        ca_bundle.or(kc.ca_pem.as_deref()).ok_or_else(|| Rejected("no CA bundle".into()))?.to_vec();
    let transport = Transport::new(
        &kc.server,
        TlsSetup {
            ca_pem: kc.ca_pem.as_deref(),
            insecure: kc.insecure,
            client: Some((chain, old_key)),
        },
    )?;
    let store = CertStore::open(PREFIX_CLIENT, cert_dir).map_err(store_err)?;
    let key = NodeKey::generate(files::os_entropy)?;
    let mut cfg = Config::rotation(&node, &ca_for_issued);
    cfg.wait_secs = wait;
    cfg.expiration_seconds = expiration_seconds;
    println!("agent={AGENT} step=rotate node={node} server={}", kc.server);
    run_engine(cfg, &key, &transport, &store).map_err(|(e, detail, _)| {
        println!(
            "agent={AGENT} error={} code={} detail=\"{}\"",
            e,
            e.code(),
            detail.replace('"', "'")
        );
        Rejected(format!("rotation failed: {e} ({detail})"))
    })
}

/// `kubeboot rotate`.
pub fn rotate(a: RotateArgs) -> CmdResult {
    let ca_bundle = a.ca_bundle.as_ref().map(|p| files::read(p)).transpose()?;
    if !a.force {
        if let Some(c) = current_credentials(&a.kubeconfig, ca_bundle.as_deref(), None) {
            let deadline = rotation::rotation_deadline(c.not_before, c.not_after, jitter());
            if unix_now() < deadline {
                println!("agent={AGENT} step=not-due rotation_deadline={}", rfc(deadline));
                return Ok(());
            }
        }
    }
    let (_, na, deadline) = rotate_once(
        &a.kubeconfig,
        &a.cert_dir,
        ca_bundle.as_deref(),
        wait_secs(&a.wait)?,
        a.expiration_seconds,
    )?;
    println!(
        "agent={AGENT} step=rotated not_after={} rotation_deadline={}",
        rfc(na),
        rfc(deadline)
    );
    Ok(())
}

/// `kubeboot run`: bootstrap, then rotate at every deadline, forever (or `--rotations N` times).
pub fn run(a: BootstrapArgs, rotations: Option<u32>) -> CmdResult {
    bootstrap(&a)?;
    let ca_bundle = a.ca_bundle.as_ref().map(|p| files::read(p)).transpose()?;
    let mut done = 0u32;
    let mut attempt = 0u32;
    loop {
        if rotations.is_some_and(|n| done >= n) {
            return Ok(());
        }
        let deadline =
            match current_credentials(&a.kubeconfig, ca_bundle.as_deref(), Some(&a.node_name)) {
                Some(c) => rotation::rotation_deadline(c.not_before, c.not_after, jitter()),
                None => unix_now(),
            };
        let now = unix_now();
        if deadline > now {
            println!("agent={AGENT} step=sleep until={}", rfc(deadline));
            std::thread::sleep(Duration::from_secs((deadline - now) as u64));
        }
        match rotate_once(
            &a.kubeconfig,
            &a.cert_dir,
            ca_bundle.as_deref(),
            kubeboot::engine::ROTATION_WAIT_SECS,
            a.expiration_seconds,
        ) {
            Ok(_) => {
                done += 1;
                attempt = 0;
            }
            Err(Rejected(why)) => {
                let ms = rotation::backoff_delay_ms(attempt, jitter());
                attempt = attempt.saturating_add(1);
                println!("agent={AGENT} step=retry in_ms={ms} after=\"{why}\"");
                std::thread::sleep(Duration::from_millis(ms));
            }
        }
    }
}

/// Parse `--ip` values.
pub fn parse_ips(v: &[String]) -> Result<Vec<IpAddr>, Rejected> {
    v.iter()
        .map(|s| kubeboot::csr::parse_ip(s).map_err(|e| Rejected(format!("{s}: {e}"))))
        .collect()
}
