//! The simulated apiserver over HTTPS on a loopback address: rustls with a serving certificate
//! from the cluster CA, client certificates requested (and judged by the model, as
//! kube-apiserver's x509 authenticator does), HTTP/1.1 keep-alive, and watches that stay open,
//! chunked, sending `MODIFIED` events as the CSR changes until their `timeoutSeconds`.
//! Automatic approvals fall due on the wall clock ([`Apiserver::approve_after`]).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

use crate::{Apiserver, Request, Response, Route};

/// The wall clock in Unix seconds.
pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// A running simulated apiserver; stopped on drop.
pub struct Server {
    addr: SocketAddr,
    api: Arc<Mutex<Apiserver>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Serve `api` on an ephemeral port of 127.0.0.1.
    pub fn start(api: Apiserver) -> io::Result<Server> {
        Server::bind(api, "127.0.0.1:0".parse().expect("an address"))
    }

    /// Serve `api` on `addr`, which must be a loopback address.
    pub fn bind(api: Apiserver, addr: SocketAddr) -> io::Result<Server> {
        if !addr.ip().is_loopback() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "loopback addresses only"));
        }
        let config = Arc::new(tls_config(&api)?);
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let api = Arc::new(Mutex::new(api));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s) = (api.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for tcp in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(tcp) = tcp else { continue };
                let (a, s, c) = (a.clone(), s.clone(), config.clone());
                std::thread::spawn(move || {
                    let _ = connection(tcp, c, &a, &s);
                });
            }
        });
        Ok(Server { addr, api, stop, accept: Some(accept) })
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The model, to read or turn its knobs while serving.
    pub fn api(&self) -> MutexGuard<'_, Apiserver> {
        self.api.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn tls_config(api: &Apiserver) -> io::Result<ServerConfig> {
    let bad = |e: &dyn std::fmt::Display| io::Error::other(e.to_string());
    let (cert, key) = api.serving_identity(unix_now());
    let chain = vec![CertificateDer::from_pem_slice(cert.as_bytes()).map_err(|e| bad(&e))?];
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| bad(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let ca = CertificateDer::from_pem_slice(api.ca_pem.as_bytes()).map_err(|e| bad(&e))?;
    let hint = webpki::anchor_from_trusted_cert(&ca).map_err(|e| bad(&e))?;
    let verifier = AnyClientCert {
        hints: vec![DistinguishedName::in_sequence(hint.subject.as_ref())],
        provider: provider.clone(),
    };
    ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(chain, key)
        .map_err(|e| bad(&e))
}

/// Requests a client certificate and proves possession of its key, leaving the certificate's
/// judgement (chain, validity) to the model, as kube-apiserver leaves it to its authenticator:
/// a certificate it refuses is a 401, not a failed handshake.
#[derive(Debug)]
struct AnyClientCert {
    hints: Vec<DistinguishedName>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }
    fn client_auth_mandatory(&self) -> bool {
        false
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }
    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

type Tls = rustls::StreamOwned<rustls::ServerConnection, TcpStream>;

/// The longest watch: kube-apiserver's default `--min-request-timeout` is 1800 s.
const MAX_WATCH: i64 = 1800;
/// The largest request body read (a CSR object is a few KiB).
const MAX_BODY: usize = 1 << 20;

fn connection(
    tcp: TcpStream,
    config: Arc<ServerConfig>,
    api: &Mutex<Apiserver>,
    stop: &AtomicBool,
) -> io::Result<()> {
    tcp.set_read_timeout(Some(Duration::from_secs(60)))?;
    let conn = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
    let mut tls = Tls::new(conn, tcp);
    let mut buf = Vec::new();
    loop {
        let Some((head, body)) = read_request(&mut tls, &mut buf)? else { return Ok(()) };
        let client = tls.conn.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec());
        let request = Request {
            method: &head.method,
            path: &head.path,
            authorization: head.authorization.as_deref(),
            client_certificate: client.as_deref(),
            client_trusts: None,
            body: &body,
        };
        let reply = api.lock().unwrap_or_else(|p| p.into_inner()).handle(&request, unix_now());
        // Down: the connection ends without an answer.
        let Some(r) = reply else { return Ok(()) };
        if r.route == Route::CsrWatch && r.status == 200 {
            return watch(&mut tls, api, stop, &head.path, &r);
        }
        respond(&mut tls, &r)?;
        if head.close {
            return Ok(());
        }
    }
}

struct Head {
    method: String,
    path: String,
    authorization: Option<String>,
    close: bool,
}

/// The next request on the connection: `None` when the client closed it.
fn read_request(tls: &mut Tls, buf: &mut Vec<u8>) -> io::Result<Option<(Head, Vec<u8>)>> {
    let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_owned());
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf).map_err(|e| invalid(&e.to_string()))? {
            httparse::Status::Complete(n) => {
                let header = |name: &str| {
                    req.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .and_then(|h| std::str::from_utf8(h.value).ok())
                        .map(str::to_owned)
                };
                if header("transfer-encoding").is_some() {
                    return Err(invalid("chunked request bodies are not served"));
                }
                let len: usize = header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
                if len > MAX_BODY {
                    return Err(invalid("request body too large"));
                }
                let head = Head {
                    method: req.method.unwrap_or_default().to_owned(),
                    path: req.path.unwrap_or_default().to_owned(),
                    authorization: header("authorization"),
                    close: header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close")),
                };
                buf.drain(..n);
                while buf.len() < len {
                    let got = tls.read(&mut chunk)?;
                    if got == 0 {
                        return Err(invalid("body cut short"));
                    }
                    buf.extend_from_slice(&chunk[..got]);
                }
                let body = buf.drain(..len).collect();
                return Ok(Some((head, body)));
            }
            httparse::Status::Partial => {
                let got = match tls.read(&mut chunk) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
                    Err(e) => return Err(e),
                };
                if got == 0 {
                    return Ok(None);
                }
                if buf.len() > 64 * 1024 {
                    return Err(invalid("request head too large"));
                }
                buf.extend_from_slice(&chunk[..got]);
            }
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        _ => "Status",
    }
}

fn respond(tls: &mut Tls, r: &Response) -> io::Result<()> {
    let kind = if r.body.starts_with(b"{") { "application/json" } else { "text/plain" };
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n",
        r.status,
        reason(r.status),
        r.body.len()
    );
    if let Some(ra) = r.retry_after {
        head.push_str(&format!("Retry-After: {ra}\r\n"));
    }
    head.push_str("\r\n");
    tls.write_all(head.as_bytes())?;
    tls.write_all(&r.body)?;
    tls.flush()
}

fn chunk(tls: &mut Tls, data: &[u8]) -> io::Result<()> {
    tls.write_all(format!("{:x}\r\n", data.len()).as_bytes())?;
    tls.write_all(data)?;
    tls.write_all(b"\r\n")?;
    tls.flush()
}

/// A watch: the first answer's events, then a `MODIFIED` event whenever the CSR's
/// resourceVersion grows, until `timeoutSeconds` (the stream then ends cleanly).
fn watch(
    tls: &mut Tls,
    api: &Mutex<Apiserver>,
    stop: &AtomicBool,
    path: &str,
    first: &Response,
) -> io::Result<()> {
    tls.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    )?;
    if !first.body.is_empty() {
        chunk(tls, &first.body)?;
    }
    let timeout = Apiserver::timeout_seconds(path).unwrap_or(MAX_WATCH).clamp(1, MAX_WATCH);
    let end = Instant::now() + Duration::from_secs(timeout as u64);
    let name = Apiserver::selected_name(path).map(str::to_owned);
    let version = |api: &Apiserver| {
        name.as_deref().and_then(|n| api.csrs.get(n)).map_or(0, |c| c.resource_version)
    };
    let mut seen = version(&api.lock().unwrap_or_else(|p| p.into_inner()));
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let event = {
            let mut api = api.lock().unwrap_or_else(|p| p.into_inner());
            if api.down {
                // The apiserver went away: the stream breaks without its last chunk.
                return Ok(());
            }
            api.tick(unix_now());
            let now = version(&api);
            (now > seen).then(|| {
                let kind = if seen == 0 { "ADDED" } else { "MODIFIED" };
                seen = now;
                let c = &api.csrs[name.as_deref().unwrap_or_default()];
                Apiserver::event(kind, c)
            })
        };
        if let Some(e) = event {
            chunk(tls, &e)?;
        }
    }
    tls.write_all(b"0\r\n\r\n")?;
    tls.flush()
}
