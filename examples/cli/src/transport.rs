//! HTTPS over rustls (through ureq): trusting only the CA the agent names, presenting the client
//! certificate it names, streaming watch responses into the agent.

use std::io::Read;
use std::time::Duration;

use kubeboot::agent::{Agent, Connection, HttpRequest, RequestKind};
use kubeboot::engine::{Method, StreamControl};
use kubeboot::pushback::Headers;
use ureq::tls::{ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};

use crate::unix_now;

/// Largest non-watch response body we accept.
pub(crate) const MAX_BODY: u64 = 1024 * 1024;

fn certs(pem: &[u8]) -> Vec<ureq::tls::Certificate<'static>> {
    ureq::tls::parse_pem(pem)
        .filter_map(|i| match i {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect()
}

/// A ureq agent for one connection's settings.
pub(crate) fn client(
    ca: Option<&[u8]>,
    insecure: bool,
    cert: Option<(&[u8], &[u8])>,
) -> Result<ureq::Agent, String> {
    let mut cfg = TlsConfig::builder();
    if insecure {
        cfg = cfg.disable_verification(true);
    } else {
        let roots = certs(ca.ok_or("no CA to trust (system roots are never used for a cluster)")?);
        if roots.is_empty() {
            return Err("the CA bundle holds no certificate".into());
        }
        cfg = cfg.root_certs(RootCerts::new_with_certs(&roots));
    }
    if let Some((chain_pem, key_pem)) = cert {
        let chain = certs(chain_pem);
        let key = PrivateKey::from_pem(key_pem).map_err(|e| format!("client key: {e}"))?;
        if chain.is_empty() {
            return Err("no client certificate".into());
        }
        cfg = cfg.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
    }
    Ok(ureq::Agent::config_builder()
        .tls_config(cfg.build())
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .build()
        .into())
}

/// The agent's HTTPS client: one ureq agent per connection id.
#[derive(Default)]
pub struct Http {
    current: Option<(u32, Result<ureq::Agent, String>)>,
}

/// A whole response: status, its `Retry-After` value, body.
pub type Answer = (u16, Option<Vec<u8>>, Vec<u8>);

/// The raw `Retry-After` value of a response (the first one), for the core to read.
pub(crate) fn retry_after(headers: &ureq::http::HeaderMap) -> Option<Vec<u8>> {
    headers.get("Retry-After").map(|v| v.as_bytes().to_vec())
}

/// The outcome of one request, to feed to the agent.
pub enum Exchange {
    /// No (complete) response.
    Failed(String),
    /// A whole response.
    Response(Answer),
    /// A 200 watch stream.
    Stream(ureq::BodyReader<'static>),
}

impl Http {
    fn agent_for(&mut self, c: &Connection<'_>) -> &Result<ureq::Agent, String> {
        if self.current.as_ref().is_none_or(|(id, _)| *id != c.id) {
            let cert = c.client_certificate.map(|cc| (cc.chain_pem, cc.key_pem));
            let made = if c.server_name.is_some() {
                Err("tls-server-name is not supported by this front-end's TLS client".into())
            } else {
                client(c.ca_pem, c.insecure, cert)
            };
            self.current = Some((c.id, made));
        }
        &self.current.as_ref().expect("just set").1
    }

    /// Send `req` and read its response (a watch: open the stream).
    pub fn send(&mut self, req: &HttpRequest<'_>, now: i64) -> Exchange {
        let agent = match self.agent_for(&req.connection) {
            Ok(a) => a.clone(),
            Err(e) => return Exchange::Failed(e.clone()),
        };
        let url = format!("{}{}", req.connection.server, req.path);
        let timeout = Some(Duration::from_secs((req.give_up_at - now).clamp(1, 600) as u64));
        let result = match req.method {
            Method::Post => {
                let mut b = agent
                    .post(&url)
                    .header("Accept", req.accept)
                    .header("User-Agent", req.user_agent);
                if let Some(a) = req.authorization {
                    b = b.header("Authorization", a);
                }
                if let Some(ct) = req.content_type {
                    b = b.header("Content-Type", ct);
                }
                b.config().timeout_global(timeout).build().send(req.body)
            }
            Method::Get => {
                let mut b = agent
                    .get(&url)
                    .header("Accept", req.accept)
                    .header("User-Agent", req.user_agent);
                if let Some(a) = req.authorization {
                    b = b.header("Authorization", a);
                }
                b.config().timeout_global(timeout).build().call()
            }
        };
        let resp = match result {
            Ok(r) => r,
            Err(e) => return Exchange::Failed(e.to_string()),
        };
        let status = resp.status().as_u16();
        if req.kind == RequestKind::Watch && status == 200 {
            return Exchange::Stream(resp.into_body().into_reader());
        }
        let ra = retry_after(resp.headers());
        match resp.into_body().with_config().limit(MAX_BODY).read_to_vec() {
            Ok(b) => Exchange::Response((status, ra, b)),
            Err(e) => Exchange::Failed(e.to_string()),
        }
    }
}

impl Exchange {
    /// Give the outcome to the agent.
    pub fn feed<const N: usize>(self, agent: &mut Agent<N>) {
        match self {
            Exchange::Failed(why) => agent.on_transport_error(unix_now(), &why),
            Exchange::Response((status, ra, body)) => {
                let headers = Headers::retry_after(ra.as_deref());
                agent.on_http_response_with(unix_now(), status, &headers, &body)
            }
            Exchange::Stream(mut reader) => {
                let mut chunk = [0u8; 8192];
                loop {
                    match reader.read(&mut chunk) {
                        Ok(0) | Err(_) => return agent.on_stream_end(unix_now()),
                        Ok(n) => {
                            if agent.on_stream_data(unix_now(), &chunk[..n]) == StreamControl::Close
                            {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }
}
