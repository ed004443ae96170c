//! The agent's requests over HTTPS (hyper over rustls, HTTP/1.1): one connection per
//! [`Connection::id`], kept alive from one request to the next (the agent sends one request at a
//! time, so a pool would only open more: hyper-util's opened a second connection whenever the
//! first had not gone back to it yet); a new id, a watch the agent closed, a broken or stale
//! connection mean a new one. Responses are read up to [`MAX_RESPONSE`] bytes (a longer one is
//! the transport error [`RESPONSE_TOO_LARGE`], never a truncated body), watches streamed into the
//! agent with its idle wake-ups ([`HttpRequest::idle_at`]): a quiet stream is reported as
//! progress without being ended.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use kubeboot::agent::StreamControl;
use kubeboot::agent::{Action, Agent, Connection, Event, HttpRequest, Method, RequestKind};
use kubeboot::grammar::{MAX_RESPONSE, RESPONSE_TOO_LARGE};
use kubeboot::pushback::Headers;
use kubeboot_hwkey::Devices;
use rustls::pki_types::ServerName;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use crate::clock::{instant_at, unix_now};
use crate::tls::{self, Fixed, Trust};

/// How long connecting (TCP and the TLS handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where one [`Connection`]'s requests go, and how (built once per [`Connection::id`]).
#[derive(Clone)]
struct Target {
    tls: TlsConnector,
    /// The name the server certificate is checked against (`tls-server-name`, else the host).
    name: ServerName<'static>,
    /// `host:port` to connect to, and the `Host` header.
    authority: String,
    host: String,
    port: u16,
    /// The server URL's path, without a trailing `/` (requests' paths go after it).
    base: String,
}

/// The agent's HTTPS client.
pub(crate) struct Http {
    current: Option<(u32, Result<Target, String>)>,
    /// The open connection of the current id, between requests.
    idle: Option<SendRequest<Full<Bytes>>>,
    devices: Devices,
}

/// A request taken out of the agent's action (which borrows the agent), ready to send.
pub(crate) struct Prepared {
    target: Result<Target, String>,
    idle: Option<SendRequest<Full<Bytes>>>,
    request: Option<http::Request<Full<Bytes>>>,
    watch: bool,
    give_up: Instant,
    idle_at: Option<i64>,
}

impl Http {
    /// A client whose device keys are reached through `devices`.
    pub(crate) fn new(devices: Devices) -> Http {
        Http { current: None, idle: None, devices }
    }

    fn target(&mut self, c: &Connection<'_>) -> Result<Target, String> {
        if self.current.as_ref().is_none_or(|(id, _)| *id != c.id) {
            // (the old settings go, and with them the connection made with them)
            self.idle = None;
            self.current = Some((c.id, target(c, &self.devices)));
        }
        self.current.as_ref().map(|(_, t)| t.clone()).unwrap_or_else(|| Err("no client".into()))
    }

    /// Take `req` out of the agent's action (and the open connection with it).
    pub(crate) fn prepare(&mut self, req: &HttpRequest<'_>, now: i64) -> Prepared {
        let target = self.target(&req.connection);
        let method = match req.method {
            Method::Post => http::Method::POST,
            Method::Get => http::Method::GET,
        };
        let request = target.as_ref().ok().and_then(|t| {
            let mut b = http::Request::builder()
                .method(method)
                .uri(format!("{}{}", t.base, req.path))
                .header("Host", &t.authority)
                .header("Accept", req.accept)
                .header("User-Agent", req.user_agent);
            if let Some(a) = req.authorization {
                b = b.header("Authorization", a);
            }
            if let Some(ct) = req.content_type {
                b = b.header("Content-Type", ct);
            }
            b.body(Full::new(Bytes::copy_from_slice(req.body))).ok()
        });
        let secs = (req.give_up_at - now).clamp(1, 600) as u64;
        Prepared {
            target,
            idle: self.idle.take(),
            request,
            watch: req.kind == RequestKind::Watch,
            give_up: Instant::now() + Duration::from_secs(secs),
            idle_at: req.idle_at,
        }
    }

    /// Keep `conn` for the next request (an exchange that left it reusable).
    pub(crate) fn keep(&mut self, conn: Option<SendRequest<Full<Bytes>>>) {
        self.idle = conn;
    }
}

/// The settings of one connection id: its TLS client (CA, client certificate) and address.
fn target(c: &Connection<'_>, devices: &Devices) -> Result<Target, String> {
    let client = match c.client_certificate {
        Some(cc) => {
            let key = tls::certified_key(cc.chain_pem, cc.key_pem, devices)?;
            Some(Arc::new(Fixed(key)) as Arc<dyn rustls::client::ResolvesClientCert>)
        }
        None => None,
    };
    let mut config = tls::client_config(&Trust { ca_pem: c.ca_pem, insecure: c.insecure }, client)?;
    // No session cache: the agent talks to one server per id over one kept-alive connection
    // (rustls's default cache of 256 sessions is allocated with the configuration).
    config.resumption = rustls::client::Resumption::disabled();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let uri: http::Uri = c.server.parse().map_err(|e| format!("the server URL: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("the server URL is not https://".into());
    }
    let authority = uri.authority().ok_or("the server URL has no host")?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = authority.port_u16().unwrap_or(443);
    let checked = c.server_name.unwrap_or(&host).trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(checked.to_owned())
        .map_err(|_| "tls-server-name is not a DNS name or an IP address")?;
    Ok(Target {
        tls: TlsConnector::from(Arc::new(config)),
        name,
        authority: authority.as_str().to_owned(),
        host,
        port,
        base: uri.path().trim_end_matches('/').to_owned(),
    })
}

impl Target {
    /// A new connection: TCP, the TLS handshake, HTTP/1.1 (its task runs beside the agent).
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let setup = async {
            let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| format!("tcp connect error: {e}"))?;
            let _ = tcp.set_nodelay(true);
            let tls = self.tls.connect(self.name.clone(), tcp).await.map_err(|e| e.to_string())?;
            hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .map_err(|e| error_chain(&e))
        };
        let (send, conn) = tokio::time::timeout(CONNECT_TIMEOUT, setup)
            .await
            .map_err(|_| "connect timed out".to_owned())??;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(send)
    }
}

impl Prepared {
    /// Send it and give the agent the outcome: a whole response, a watch's stream, or a transport
    /// error. Every line the agent has to say while a watch stays open goes to `say`. Returns the
    /// connection when it can carry the next request.
    pub(crate) async fn exchange(
        self,
        agent: &mut Agent<'_>,
        say: &mut (dyn FnMut(&Event<'_>) + Send),
    ) -> Option<SendRequest<Full<Bytes>>> {
        match self.answer(agent, say).await {
            Ok(kept) => kept,
            Err(why) => {
                agent.on_transport_error(unix_now(), &why);
                None
            }
        }
    }

    /// [`Prepared::exchange`] up to its transport error, which the caller hands to the agent.
    async fn answer(
        self,
        agent: &mut Agent<'_>,
        say: &mut (dyn FnMut(&Event<'_>) + Send),
    ) -> Result<Option<SendRequest<Full<Bytes>>>, String> {
        let target = self.target?;
        let request = self.request.ok_or("the request is not valid HTTP")?;
        let sent = tokio::time::timeout_at(self.give_up, send(&target, self.idle, request)).await;
        let (conn, response) = sent.map_err(|_| "timed out")??;
        let status = response.status().as_u16();
        let retry_after = response.headers().get("Retry-After").map(|v| v.as_bytes().to_vec());
        let mut body = response.into_body();
        if self.watch && status == 200 {
            // (reusable only when the server ended the stream: one the agent closed is dropped)
            let ended = stream(body, agent, self.give_up, self.idle_at, say).await;
            return Ok(ended.then_some(conn));
        }
        let mut whole = Vec::new();
        tokio::time::timeout_at(self.give_up, async {
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| error_chain(&e))?;
                if let Ok(data) = frame.into_data() {
                    if whole.len() + data.len() > MAX_RESPONSE {
                        return Err(RESPONSE_TOO_LARGE.to_owned());
                    }
                    whole.extend_from_slice(&data);
                }
            }
            Ok(())
        })
        .await
        .map_err(|_| "timed out")??;
        let headers = Headers::retry_after(retry_after.as_deref());
        agent.on_http_response(unix_now(), status, &headers, &whole);
        Ok(Some(conn))
    }
}

/// Send `request` on the kept connection, or a new one when there is none or it is closed; a
/// request the kept connection closed before sending (`is_canceled`: the server had hung up on
/// it while idle) goes once more on a new connection.
async fn send(
    target: &Target,
    idle: Option<SendRequest<Full<Bytes>>>,
    request: http::Request<Full<Bytes>>,
) -> Result<(SendRequest<Full<Bytes>>, http::Response<hyper::body::Incoming>), String> {
    // (after a whole response the connection is ready at once; a wait means it is not usable)
    if let Some(mut conn) = idle.filter(|c| !c.is_closed())
        && matches!(tokio::time::timeout(Duration::from_secs(2), conn.ready()).await, Ok(Ok(())))
    {
        let again = copy(&request);
        return match conn.send_request(request).await {
            Ok(r) => Ok((conn, r)),
            Err(e) if e.is_canceled() => send_new(target, again).await,
            Err(e) => Err(error_chain(&e)),
        };
    }
    send_new(target, request).await
}

/// Send `request` on a new connection.
async fn send_new(
    target: &Target,
    request: http::Request<Full<Bytes>>,
) -> Result<(SendRequest<Full<Bytes>>, http::Response<hyper::body::Incoming>), String> {
    let mut conn = target.connect().await?;
    let r = conn.send_request(request).await.map_err(|e| error_chain(&e))?;
    Ok((conn, r))
}

/// The same request again (`http::Request` is not `Clone`; these carry no extensions).
fn copy(r: &http::Request<Full<Bytes>>) -> http::Request<Full<Bytes>> {
    let mut again = http::Request::new(r.body().clone());
    *again.method_mut() = r.method().clone();
    *again.uri_mut() = r.uri().clone();
    *again.headers_mut() = r.headers().clone();
    again
}

/// Feed a 200 watch into the agent until it closes it, the server ends it, or the request's time
/// is up; wake the agent whenever the stream is quiet until its `idle_at`. True when the server
/// ended it cleanly (the connection can carry another request).
async fn stream(
    mut body: hyper::body::Incoming,
    agent: &mut Agent<'_>,
    give_up: Instant,
    mut idle_at: Option<i64>,
    say: &mut (dyn FnMut(&Event<'_>) + Send),
) -> bool {
    let mut total = 0usize;
    loop {
        let idle = async {
            match idle_at {
                Some(t) => tokio::time::sleep_until(instant_at(t)).await,
                None => std::future::pending().await,
            }
        };
        let control = tokio::select! {
            frame = body.frame() => match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        total += data.len();
                        if total > MAX_RESPONSE {
                            agent.on_transport_error(unix_now(), RESPONSE_TOO_LARGE);
                            return false;
                        }
                        agent.on_stream_data(unix_now(), &data)
                    }
                    Err(_) => StreamControl::Continue,
                },
                None => {
                    agent.on_stream_end(unix_now());
                    return true;
                }
                // (a broken read)
                Some(Err(_)) => {
                    agent.on_stream_end(unix_now());
                    return false;
                }
            },
            () = idle => {
                let woke = idle_at.unwrap_or_default();
                let c = agent.on_stream_idle(unix_now());
                // (a wake-up time that does not move on is taken a second later)
                idle_at = next_idle(agent).map(|t| t.max(woke + 1));
                c
            }
            () = tokio::time::sleep_until(give_up) => {
                agent.on_stream_end(unix_now());
                return false;
            }
        };
        while let Some(e) = agent.next_event() {
            say(&e);
        }
        if control == StreamControl::Close {
            return false;
        }
        if let Some(t) = next_idle(agent) {
            idle_at = Some(idle_at.map_or(t, |old| t.max(old)));
        }
    }
}

/// The open watch's next wake-up time, as the agent has it now.
fn next_idle(agent: &Agent<'_>) -> Option<i64> {
    match agent.outstanding() {
        Some(Action::Http(r)) => r.idle_at,
        _ => None,
    }
}

/// An error and its causes, one line (hyper's own message is often only "client error").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}
