//! HTTPS for the engine: rustls (through ureq), trusting only the kubeconfig's CA, presenting
//! the client certificate when rotating, streaming watch responses into the engine.

use std::io::Read;
use std::time::Duration;

use kubeboot::engine::{Action, Engine, Method, RequestKind};
use kubeboot::key::NodeKey;
use ureq::tls::{ClientCert, PrivateKey, RootCerts, TlsConfig};

use crate::{Rejected, unix_now};

/// Largest non-watch response body we accept.
const MAX_BODY: u64 = 1024 * 1024;

/// A configured HTTPS client for one apiserver.
pub struct Transport {
    agent: ureq::Agent,
    server: String,
    /// Where log lines go (`agent=rust step=...`).
    pub verbose: bool,
}

/// TLS settings.
pub struct TlsSetup<'a> {
    /// CA bundle to trust (PEM). `None` with `insecure` false means: refuse (we never fall back to
    /// system roots for a cluster).
    pub ca_pem: Option<&'a [u8]>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// Client certificate chain + key PEM (rotation).
    pub client: Option<(&'a [u8], &'a [u8])>,
}

impl Transport {
    /// Build a client for `server`.
    pub fn new(server: &str, tls: TlsSetup<'_>) -> Result<Transport, Rejected> {
        let mut cfg = TlsConfig::builder();
        if tls.insecure {
            cfg = cfg.disable_verification(true);
        } else {
            let ca = tls.ca_pem.ok_or_else(|| {
                Rejected("the kubeconfig has no CA (certificate-authority[-data]); refusing to trust system roots".into())
            })?;
            let mut roots = Vec::new();
            for item in ureq::tls::parse_pem(ca) {
                if let Ok(ureq::tls::PemItem::Certificate(c)) = item {
                    roots.push(c);
                }
            }
            if roots.is_empty() {
                return Err(Rejected("the CA bundle holds no certificate".into()));
            }
            cfg = cfg.root_certs(RootCerts::new_with_certs(&roots));
        }
        if let Some((chain_pem, key_pem)) = tls.client {
            let mut chain = Vec::new();
            for item in ureq::tls::parse_pem(chain_pem) {
                if let Ok(ureq::tls::PemItem::Certificate(c)) = item {
                    chain.push(c);
                }
            }
            let key =
                PrivateKey::from_pem(key_pem).map_err(|e| Rejected(format!("client key: {e}")))?;
            if chain.is_empty() {
                return Err(Rejected("client certificate file holds no certificate".into()));
            }
            cfg = cfg.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .tls_config(cfg.build())
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .user_agent("kubeboot/0.1")
            .build()
            .into();
        Ok(Transport { agent, server: server.trim_end_matches('/').to_owned(), verbose: true })
    }

    /// A plain GET returning (status, body); used for `/healthz` and discovery.
    pub fn get(&self, path: &str, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
        let url = format!("{}{}", self.server, path);
        let req = self.agent.get(&url).config().timeout_global(Some(timeout)).build();
        let mut resp = req.call().map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    /// Drive `engine` to its end: every request it asks for is sent; waits are slept.
    pub fn drive<const N: usize>(
        &self,
        engine: &mut Engine<'_, NodeKey, N>,
        agent_name: &str,
    ) -> Result<(), kubeboot::Error> {
        let mut announced_wait = false;
        loop {
            let now = unix_now();
            let deadline = engine.deadline();
            match engine.poll(now) {
                Action::Done(_) => return Ok(()),
                Action::Failed(e) => return Err(e),
                Action::Wait { until } => {
                    let secs = (until - now).clamp(0, 3600) as u64;
                    if self.verbose {
                        println!("agent={agent_name} step=backoff seconds={secs}");
                    }
                    std::thread::sleep(Duration::from_secs(secs.max(1)));
                }
                Action::AwaitResponse { .. } => {
                    // We always complete a request before polling again; this cannot happen.
                    return Err(kubeboot::Error::InvalidState);
                }
                Action::Send(req) => {
                    let kind = req.kind;
                    let url = format!("{}{}", self.server, req.path);
                    if self.verbose {
                        match kind {
                            RequestKind::Create => println!("agent={agent_name} step=create-csr"),
                            RequestKind::Get => {
                                println!("agent={agent_name} step=get-csr path={}", req.path)
                            }
                            RequestKind::Watch => {
                                if !announced_wait {
                                    let name = engine_name_from_path(req.path);
                                    println!(
                                        "agent={agent_name} step=wait-approval csr={name} hint=\"kubectl certificate approve {name}\""
                                    );
                                    announced_wait = true;
                                }
                            }
                        }
                    }
                    let budget = (deadline - now).clamp(1, 330) as u64;
                    let timeout = if kind == RequestKind::Watch {
                        Duration::from_secs(budget)
                    } else {
                        Duration::from_secs(budget.min(30))
                    };
                    let result = match req.method {
                        Method::Post => {
                            let mut b = self.agent.post(&url).header("Accept", req.accept);
                            if let Some(a) = req.authorization {
                                b = b.header("Authorization", a);
                            }
                            if let Some(ct) = req.content_type {
                                b = b.header("Content-Type", ct);
                            }
                            b.config().timeout_global(Some(timeout)).build().send(req.body)
                        }
                        Method::Get => {
                            let mut b = self.agent.get(&url).header("Accept", req.accept);
                            if let Some(a) = req.authorization {
                                b = b.header("Authorization", a);
                            }
                            b.config().timeout_global(Some(timeout)).build().call()
                        }
                    };
                    let now = unix_now();
                    let mut resp = match result {
                        Ok(r) => r,
                        Err(e) => {
                            if self.verbose {
                                println!("agent={agent_name} step=transport-error error=\"{e}\"");
                            }
                            engine.on_transport_error(now);
                            continue;
                        }
                    };
                    let status = resp.status().as_u16();
                    if kind == RequestKind::Watch && status == 200 {
                        let mut reader = resp.body_mut().as_reader();
                        let mut chunk = [0u8; 8192];
                        loop {
                            match reader.read(&mut chunk) {
                                Ok(0) => {
                                    engine.on_stream_end(unix_now());
                                    break;
                                }
                                Ok(n) => {
                                    if engine.on_stream_data(unix_now(), &chunk[..n]).is_err() {
                                        break;
                                    }
                                    if engine.phase() != kubeboot::engine::Phase::Watching {
                                        break;
                                    }
                                }
                                Err(_) => {
                                    engine.on_stream_end(unix_now());
                                    break;
                                }
                            }
                        }
                        continue;
                    }
                    let body = match resp.body_mut().with_config().limit(MAX_BODY).read_to_vec() {
                        Ok(b) => b,
                        Err(_) => {
                            engine.on_transport_error(now);
                            continue;
                        }
                    };
                    if self.verbose && matches!(status, 500..=599 | 429) {
                        println!("agent={agent_name} step=server-error status={status}");
                    }
                    if self.verbose && status == 401 {
                        // Retried a few times while waiting (a restarted apiserver), else final.
                        println!("agent={agent_name} step=unauthorized status=401");
                    }
                    let _ = engine.on_response(now, status, &body);
                }
            }
        }
    }
}

fn engine_name_from_path(path: &str) -> &str {
    path.split("metadata.name%3D").nth(1).and_then(|s| s.split('&').next()).unwrap_or(path)
}
