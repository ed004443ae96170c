//! `kubeboot discover`: kubeadm-style token discovery (cluster-info JWS + CA pin).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kubeboot::discovery::{Action, Config, Discovery, Tls};
use kubeboot::pin::CaPin;
use kubeboot::pushback::Headers;
use kubeboot::token::BootstrapToken;

use crate::transport::{Answer, MAX_BODY, client, retry_after};
use crate::{CmdResult, Rejected, files, unix_now};

/// Arguments of `kubeboot discover`.
#[derive(Args)]
pub struct DiscoverArgs {
    /// The API server, `https://HOST:PORT`.
    #[arg(long)]
    server: String,
    /// The bootstrap token (`id.secret`); its secret verifies the cluster-info signature.
    #[arg(long)]
    token: String,
    /// `sha256:<hex>` pin of the cluster CA's public key (repeatable).
    #[arg(long = "ca-cert-hash", required_unless_present = "unsafe_skip_ca_verification")]
    ca_cert_hash: Vec<String>,
    /// Trust the CA in cluster-info without a pin (authenticated by the token's JWS only).
    #[arg(long)]
    unsafe_skip_ca_verification: bool,
    /// Give up after this long.
    #[arg(long, default_value = "5m")]
    timeout: String,
    /// Where to write the bootstrap kubeconfig (mode 0600).
    #[arg(long)]
    out: PathBuf,
}

/// Run `kubeboot discover`.
pub fn run(a: DiscoverArgs) -> CmdResult {
    let token = BootstrapToken::parse(&a.token)?;
    let pins = a
        .ca_cert_hash
        .iter()
        .map(|p| CaPin::parse(p).map_err(|e| Rejected(format!("--ca-cert-hash {p:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut cfg = Config::new(&token, &pins);
    cfg.allow_unpinned = a.unsafe_skip_ca_verification && pins.is_empty();
    cfg.timeout_secs = crate::cmd_token::parse_duration(&a.timeout)?;
    let mut seed = [0u8; 8];
    files::os_entropy(&mut seed)?;
    cfg.jitter_seed = u64::from_le_bytes(seed);
    let mut d: Box<Discovery> = Box::new(Discovery::new(cfg, unix_now())?);
    let insecure = Transport::new(&a.server, TlsSetup { ca_pem: None, insecure: true })?;
    let mut verified: Option<Transport> = None;
    loop {
        let now = unix_now();
        match d.poll(now) {
            Action::Done(found) => {
                let mut buf = vec![0u8; 64 * 1024];
                let n = found.write_bootstrap_kubeconfig(&mut buf)?;
                files::write_private(&a.out, &buf[..n], true)?;
                println!(
                    "agent=rust step=discovered server={} ca_pinned={} out={}",
                    found.server,
                    found.pinned,
                    a.out.display()
                );
                return Ok(());
            }
            Action::Failed(e) => {
                let why = d.failure().map(|(_, m)| m).unwrap_or("");
                return Err(Rejected(format!("discovery failed: {e}: {why}")));
            }
            Action::Wait { until } | Action::AwaitResponse { until } => {
                std::thread::sleep(Duration::from_secs((until - now).clamp(1, 60) as u64));
            }
            Action::Send(req) => {
                let path = req.path;
                let t = match req.tls {
                    Tls::Insecure => {
                        println!("agent=rust step=fetch-cluster-info tls=unverified");
                        &insecure
                    }
                    Tls::VerifyWith(ca) => {
                        println!("agent=rust step=confirm-cluster-info tls=pinned-ca");
                        if verified.is_none() {
                            verified = Some(Transport::new(
                                &a.server,
                                TlsSetup { ca_pem: Some(ca), insecure: false },
                            )?);
                        }
                        verified.as_ref().ok_or_else(|| Rejected("internal".into()))?
                    }
                };
                match t.get(path, Duration::from_secs(10)) {
                    Ok((status, retry_after, body)) => {
                        let headers = Headers::retry_after(retry_after.as_deref());
                        d.on_response_with(unix_now(), status, &headers, &body);
                    }
                    Err(e) => {
                        println!("agent=rust step=transport-error error=\"{e}\"");
                        d.on_transport_error(unix_now());
                    }
                }
            }
            _ => return Err(Rejected("unknown discovery action".into())),
        }
    }
}

/// A configured HTTPS client for one apiserver.
pub struct Transport {
    agent: ureq::Agent,
    server: String,
}

/// TLS settings of a [`Transport`].
pub struct TlsSetup<'a> {
    /// CA bundle to trust (PEM); `None` with `insecure` false means: refuse.
    pub ca_pem: Option<&'a [u8]>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
}

impl Transport {
    /// Build a client for `server`.
    pub fn new(server: &str, tls: TlsSetup<'_>) -> Result<Transport, Rejected> {
        let agent = client(tls.ca_pem, tls.insecure, None).map_err(Rejected)?;
        Ok(Transport { agent, server: server.trim_end_matches('/').to_owned() })
    }

    /// A plain GET returning (status, its `Retry-After` value, body).
    pub fn get(&self, path: &str, timeout: Duration) -> Result<Answer, String> {
        let url = format!("{}{}", self.server, path);
        let req = self.agent.get(&url).config().timeout_global(Some(timeout)).build();
        let mut resp = req.call().map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| e.to_string())?;
        Ok((status, retry_after, body))
    }
}
