//! HTTPS over rustls (through ureq): trusting only the CA the agent names, presenting the client
//! certificate it names, streaming watch responses into the agent. A client key held by a device
//! (a PKCS#11 token, a TPM) is presented through rustls directly ([`DeviceTls`], a ureq
//! connector): ureq's own TLS settings take only a private key's DER, and the device's key never
//! leaves it — the device signs the handshake.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use kubeboot::keyref::Holder;
use kubeboot_hwkey::Devices;
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, TcpConnector,
    Transport, TransportAdapter,
};

use kubeboot::agent::{Agent, Connection, HttpRequest, RequestKind};
use kubeboot::agent::{Method, StreamControl};
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

/// A ureq agent whose TLS is rustls with the device's key: TCP, then [`DeviceTls`].
fn device_client(
    ca: Option<&[u8]>,
    insecure: bool,
    chain_pem: &[u8],
    key_pem: &[u8],
    devices: &Devices,
) -> Result<ureq::Agent, String> {
    if insecure {
        return Err("insecure-skip-tls-verify with a device's key is not supported".into());
    }
    let ca = ca.ok_or("no CA to trust (system roots are never used for a cluster)")?;
    let signer = devices.open(key_pem).map_err(|e| e.to_string())?;
    let name = kubeboot_hwkey::describe(key_pem);
    let name = match Holder::of_pem(key_pem) {
        Ok(Holder::Tpm) => format!("tpm {}", devices.tcti()),
        _ => name,
    };
    let key = kubeboot_hwkey::tls::DeviceSigningKey::new(signer, &name);
    let config = kubeboot_hwkey::tls::client_config(ca, chain_pem, key)?;
    let connector = ().chain(TcpConnector::default()).chain(DeviceTls(Arc::new(config)));
    let cfg = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .build();
    Ok(ureq::Agent::with_parts(cfg, connector, DefaultResolver::default()))
}

/// Wraps the TCP connection in rustls with a fixed client configuration.
#[derive(Debug)]
struct DeviceTls(Arc<rustls::ClientConfig>);

impl<In: Transport> Connector<In> for DeviceTls {
    type Out = Either<In, DeviceTlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else { return Ok(None) };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details.uri.host().ok_or(ureq::Error::Tls("no host to verify"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        let name = rustls::pki_types::ServerName::try_from(host)
            .map_err(|_| ureq::Error::Tls("the server name is not a DNS name or IP address"))?;
        let mut conn = rustls::ClientConnection::new(self.0.clone(), name)?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        conn.complete_io(&mut sock)?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(DeviceTlsTransport {
            buffers,
            stream: rustls::StreamOwned::new(conn, sock),
        })))
    }
}

/// A TLS connection made by [`DeviceTls`].
struct DeviceTlsTransport {
    buffers: LazyBuffers,
    stream: rustls::StreamOwned<rustls::ClientConnection, TransportAdapter>,
}

impl std::fmt::Debug for DeviceTlsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceTlsTransport")
    }
}

impl Transport for DeviceTlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = self.buffers.output().get(..amount).unwrap_or_default().to_vec();
        self.stream.write_all(&output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// The agent's HTTPS client: one ureq agent per connection id.
#[derive(Default)]
pub struct Http {
    current: Option<(u32, Result<ureq::Agent, String>)>,
    /// The devices a client key may live in.
    pub devices: Devices,
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
            let in_device = c
                .client_certificate
                .is_some_and(|cc| !matches!(Holder::of_pem(cc.key_pem), Ok(Holder::Software)));
            let made = if c.server_name.is_some() {
                Err("tls-server-name is not supported by this front-end's TLS client".into())
            } else if let (true, Some(cc)) = (in_device, c.client_certificate) {
                device_client(c.ca_pem, c.insecure, cc.chain_pem, cc.key_pem, &self.devices)
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
    pub fn feed(self, agent: &mut Agent<'_>) {
        match self {
            Exchange::Failed(why) => agent.on_transport_error(unix_now(), &why),
            Exchange::Response((status, ra, body)) => {
                let headers = Headers::retry_after(ra.as_deref());
                agent.on_http_response(unix_now(), status, &headers, &body)
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
