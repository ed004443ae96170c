//! The agent's HTTP requests over TLS sessions on the pipe: one session per connection id of
//! the agent (kept alive between requests), opened when the agent names another connection or
//! the previous one broke. With the node's credentials, the first session first proves who the
//! device is with a SelfSubjectReview.

use core::ptr::addr_of_mut;

use embedded_io::BufRead;
use embedded_tls::blocking::{TlsConfig, TlsConnection, TlsContext, TlsError};
use kubeboot::agent::{Connection, HttpRequest, RequestKind, StreamControl};
use kubeboot::error::VerifyError;
use kubeboot::pushback::Headers;
use kubeboot::verify::{ServerName, TrustedCas};
use kubeboot_firmware::line;
use rand_chacha::ChaCha20Rng;

use crate::DeviceAgent;
use crate::host;
use crate::http::{self, Chunked, Head, HttpError};
use crate::modem::{self, Modem};
use crate::phases::{Phase, Phases};
use crate::tls::{self, Provider, Suite, Verifier};

/// TLS record buffers: a whole record of up to 2^14 bytes plus overhead must fit the read buffer
/// (Go sends handshake records that large and negotiates no smaller fragment); the write buffer
/// holds one outgoing record (embedded-tls encodes the handshake in the larger of the two).
pub const TLS_READ: usize = 16_640;
/// See [`TLS_READ`].
pub const TLS_WRITE: usize = 1024;
/// Whole response bodies (the agent's are at most its work buffer).
pub const BODY: usize = crate::CAPS.response;

static mut READ_BUF: [u8; TLS_READ] = [0; TLS_READ];
static mut WRITE_BUF: [u8; TLS_WRITE] = [0; TLS_WRITE];
static mut BODY_BUF: [u8; BODY] = [0; BODY];

type Tls = TlsConnection<'static, &'static mut Modem, Suite>;

// The session (1,272 bytes of TLS state) lives in the one `Net` of `join`'s frame.
#[allow(clippy::large_enum_variant)]
enum Link {
    Idle(&'static mut Modem),
    Tls(Tls),
    Gone,
}

/// Where the request went (for [`Net::finish`]).
pub struct Sent {
    watch: bool,
}

/// Why a request could not be sent.
pub enum NotSent {
    /// The pipe, TLS or HTTP failed.
    Io(&'static str),
    /// The server's certificate or handshake signature was refused, and why.
    Refused(VerifyError),
}

impl From<&'static str> for NotSent {
    fn from(why: &'static str) -> Self {
        NotSent::Io(why)
    }
}

/// The network side of the device.
pub struct Net {
    link: Link,
    /// The agent's connection id the session belongs to.
    id: Option<u32>,
    /// The session failed: the next request opens a new one.
    broken: bool,
    /// Do the identity check on the next session with client credentials.
    pub review_next: bool,
    /// A SelfSubjectReview was answered.
    pub reviewed: bool,
}

/// `https://host:port` → (`host`, `host:port`).
fn authority(server: &str) -> Option<(&str, &str)> {
    let rest = server.strip_prefix("https://")?;
    let hostport = rest.split('/').next()?;
    let host = match hostport.rfind(':') {
        Some(i) if !hostport.ends_with(']') => hostport.get(..i)?,
        _ => hostport,
    };
    Some((host, hostport))
}

impl Net {
    /// Over the pipe.
    pub fn new(modem: &'static mut Modem) -> Self {
        Net {
            link: Link::Idle(modem),
            id: None,
            broken: false,
            review_next: false,
            reviewed: false,
        }
    }

    /// Close the session (a TLS close_notify, then the pipe).
    pub fn close(&mut self) {
        self.link = match core::mem::replace(&mut self.link, Link::Gone) {
            Link::Tls(tls) => {
                let m = match tls.close() {
                    Ok(m) | Err((m, _)) => m,
                };
                m.close();
                Link::Idle(m)
            }
            other => other,
        };
        self.id = None;
    }

    /// Sleep until `t` (unix seconds), with no session open.
    pub fn sleep_until(&mut self, t: i64) {
        self.close();
        if let Link::Idle(m) = &mut self.link {
            m.sleep_until(t);
        }
    }

    fn tls(&mut self) -> Option<&mut Tls> {
        match &mut self.link {
            Link::Tls(t) => Some(t),
            _ => None,
        }
    }

    /// Open a TLS session for `conn`: the pipe to its server, the handshake verified by kubeboot,
    /// the client certificate when it has one.
    #[inline(never)] // its locals stay out of the caller's frame
    fn open(
        &mut self,
        conn: &Connection<'_>,
        now: i64,
        rng: &mut ChaCha20Rng,
        phases: &mut Phases,
    ) -> Result<(), NotSent> {
        self.close();
        let (host, target) = authority(conn.server).ok_or("the server is not an https URL")?;
        let name = ServerName::parse(host).map_err(|_| "the server's host is not a name")?;
        let ca_pem = conn.ca_pem.ok_or("no CA to verify the server with (insecure is refused)")?;
        let mut ca_der = [0u8; crate::CAPS.pem / 4 * 3 + 8];
        let cas = TrustedCas::<{ tls::MAX_CAS }>::from_pem(ca_pem, &mut ca_der)
            .map_err(|_| "the CA bundle does not read")?;
        let mut client_der = [0u8; crate::CAPS.pem / 4 * 3 + 8];
        let mut client_key = None;
        let mut client_cert: &[u8] = &[];
        if let Some(c) = conn.client_certificate {
            client_cert = kubeboot::pem::decode_first(c.chain_pem, "CERTIFICATE", &mut client_der)
                .map_err(|_| "the client certificate does not read")?;
            client_key = Some(
                tls::ClientKey::from_pem(c.key_pem).map_err(|_| "the client key does not read")?,
            );
        }
        let Link::Idle(m) = core::mem::replace(&mut self.link, Link::Gone) else {
            return Err(NotSent::Io("the pipe is gone"));
        };
        if let Err(e) = m.connect(target, now + 30) {
            self.link = Link::Idle(m);
            line(&["pipe: open ", target, " failed: ", e.name()], None);
            return Err(NotSent::Io("the relay could not open the connection"));
        }
        modem::set_deadline(now + 30);
        // SAFETY: the record buffers are only ever lent to the one session in `self.link`, which
        // was closed (dropped) above, so no other reference to them exists.
        let (rb, wb) = unsafe { (&mut *addr_of_mut!(READ_BUF), &mut *addr_of_mut!(WRITE_BUF)) };
        let mut tls = TlsConnection::new(m, rb, wb);
        let mut config = TlsConfig::new();
        if let ServerName::Dns(h) = name {
            config = config.with_server_name(h);
        }
        let verifier = Verifier::new(&cas, name, now);
        let client = client_key.as_ref().map(|k| (client_cert, k));
        let mut provider = Provider { rng, verifier, client };
        let back = phases.current();
        phases.enter(Phase::Handshake);
        let r = tls.open(TlsContext::new(&config, &mut provider));
        phases.enter(back);
        match r {
            Ok(()) => {
                line(
                    &[
                        "tls: session to ",
                        target,
                        if client_key.is_some() { " (mutual)" } else { "" },
                    ],
                    None,
                );
                self.link = Link::Tls(tls);
                self.id = Some(conn.id);
                self.broken = false;
                Ok(())
            }
            Err(e) => {
                if let Some(v) = provider.verifier.refused {
                    let mut detail = heapless::String::<96>::new();
                    let _ = core::fmt::write(&mut detail, format_args!("{v}"));
                    line(
                        &[
                            "tls: refused the server: reason=",
                            v.reason.name(),
                            " detail=\"",
                            &detail,
                            "\"",
                        ],
                        None,
                    );
                } else {
                    line(&["tls: handshake failed: ", tls_error(&e)], None);
                }
                let m = match tls.close() {
                    Ok(m) | Err((m, _)) => m,
                };
                m.close();
                self.link = Link::Idle(m);
                Err(match provider.verifier.refused {
                    Some(v) => NotSent::Refused(v),
                    None => NotSent::Io("the TLS handshake failed"),
                })
            }
        }
    }

    /// Send the agent's request (opening a session first if needed).
    #[inline(never)] // its locals stay out of the caller's frame
    pub fn send(
        &mut self,
        req: &HttpRequest<'_>,
        now: i64,
        rng: &mut ChaCha20Rng,
        phases: &mut Phases,
    ) -> Result<Sent, NotSent> {
        let conn = &req.connection;
        if self.broken || self.id != Some(conn.id) || self.tls().is_none() {
            self.open(conn, now, rng, phases)?;
            if self.review_next && conn.client_certificate.is_some() {
                self.review_next = false;
                self.review(conn, req.user_agent).map_err(NotSent::Io)?;
            }
        }
        let (_, hostport) = authority(conn.server).ok_or("the server is not an https URL")?;
        let mut headers: heapless::Vec<(&str, &str), 6> = heapless::Vec::new();
        let _ = headers.push(("Host", hostport));
        let _ = headers.push(("User-Agent", req.user_agent));
        let _ = headers.push(("Accept", req.accept));
        if let Some(a) = req.authorization {
            let _ = headers.push(("Authorization", a));
        }
        if let Some(c) = req.content_type {
            let _ = headers.push(("Content-Type", c));
        }
        modem::set_deadline(req.give_up_at);
        let tls = self.tls().ok_or("no session")?;
        if let Err(e) = http::write_request(tls, req.method.as_str(), req.path, &headers, req.body)
        {
            self.broken = true;
            return Err(NotSent::Io(e.name()));
        }
        Ok(Sent { watch: req.kind == RequestKind::Watch })
    }

    /// Read the answer to what [`Net::send`] sent and give it to the agent.
    #[inline(never)] // its locals stay out of the caller's frame
    pub fn finish(
        &mut self,
        agent: &mut DeviceAgent,
        sent: Result<Sent, NotSent>,
        now: i64,
        phases: &mut Phases,
    ) {
        let sent = match sent {
            Ok(s) => s,
            Err(e) => return self.not_sent(agent, e, now),
        };
        let head = match self.tls().map(http::read_head) {
            Some(Ok(h)) => h,
            Some(Err(e)) => return self.failed(agent, now, e.name()),
            None => return self.failed(agent, now, "no session"),
        };
        if sent.watch && head.status == 200 {
            if phases.current() == Phase::Csr {
                phases.enter(Phase::Watch);
            }
            self.stream(agent, &head, phases);
        } else {
            self.respond(agent, &head);
        }
    }

    /// The request failed: the session is of no more use, the agent is told why.
    #[inline(never)] // its locals stay out of the caller's frame
    fn failed(&mut self, agent: &mut DeviceAgent, now: i64, why: &str) {
        self.broken = true;
        agent.on_transport_error(now, why);
    }

    #[inline(never)] // its locals stay out of the caller's frame
    fn not_sent(&mut self, agent: &mut DeviceAgent, e: NotSent, now: i64) {
        match e {
            NotSent::Io(why) => self.failed(agent, now, why),
            NotSent::Refused(v) => {
                let mut why = heapless::String::<128>::new();
                let _ = core::fmt::write(&mut why, format_args!("server refused: {v}"));
                self.failed(agent, now, &why);
            }
        }
    }

    /// A whole response: its body to the agent.
    #[inline(never)] // its locals stay out of the caller's frame
    fn respond(&mut self, agent: &mut DeviceAgent, head: &Head) {
        let Some(tls) = self.tls() else { return };
        // SAFETY: the body buffer is used only here and in `review`, never at the same time.
        let buf = unsafe { &mut *addr_of_mut!(BODY_BUF) };
        match http::read_body(tls, head, buf) {
            Ok(body) => {
                let headers = Headers::retry_after(head.retry_after());
                agent.on_http_response(host::now(), head.status, &headers, body);
                if head.close {
                    self.broken = true;
                }
            }
            Err(e) => self.failed(agent, host::now(), e.name()),
        }
    }

    /// Feed a watch's chunks to the agent until it has what it waited for or the stream ends.
    #[inline(never)] // its locals stay out of the caller's frame
    fn stream(&mut self, agent: &mut DeviceAgent, head: &Head, phases: &mut Phases) {
        let Some(tls) = self.tls() else { return };
        let mut chunks = Chunked::default();
        let end = loop {
            let (used, control) = {
                let data = match tls.fill_buf() {
                    Ok(d) if !d.is_empty() => d,
                    _ => break true, // the stream broke or the server closed it
                };
                let (used, out) = if head.chunked {
                    match chunks.feed(data) {
                        Ok(x) => x,
                        Err(_) => break true,
                    }
                } else {
                    (data.len(), data)
                };
                let control = if out.is_empty() {
                    StreamControl::Continue
                } else {
                    phases.enter(Phase::Validation);
                    let c = agent.on_stream_data(host::now(), out);
                    let busy = phases.enter(Phase::Watch);
                    if c == StreamControl::Continue {
                        // Only the call that ends the wait validated a certificate.
                        phases.shift(Phase::Validation, Phase::Watch, busy);
                    }
                    c
                };
                (used, control)
            };
            tls.consume(used);
            if control == StreamControl::Close {
                break false;
            }
            if chunks.done() {
                break true;
            }
        };
        if end {
            agent.on_stream_end(host::now());
        }
        // A watch is never read to its end when the agent closes it, and a broken one is gone:
        // either way the next request needs a new session.
        self.close();
    }

    /// `POST .../selfsubjectreviews` on the new session: who the apiserver says we are.
    #[inline(never)] // its locals stay out of the caller's frame
    fn review(&mut self, conn: &Connection<'_>, user_agent: &str) -> Result<(), &'static str> {
        let (_, hostport) = authority(conn.server).ok_or("the server is not an https URL")?;
        let body = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
        let headers = [
            ("Host", hostport),
            ("User-Agent", user_agent),
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
        ];
        modem::set_deadline(host::now() + 30);
        let tls = self.tls().ok_or("no session")?;
        let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
        http::write_request(tls, "POST", path, &headers, body).map_err(HttpError::name)?;
        let head = http::read_head(tls).map_err(HttpError::name)?;
        // SAFETY: see `finish`.
        let buf = unsafe { &mut *addr_of_mut!(BODY_BUF) };
        let body = http::read_body(tls, &head, buf).map_err(HttpError::name)?;
        if head.status != 201 && head.status != 200 {
            line(&["review: status ", core::str::from_utf8(body).unwrap_or("")], None);
            return Err("the SelfSubjectReview was refused");
        }
        print_identity(body).ok_or("the SelfSubjectReview does not read")?;
        self.reviewed = true;
        Ok(())
    }
}

/// `joined <username> groups=<g1>,<g2>` from a SelfSubjectReview.
fn print_identity(body: &[u8]) -> Option<()> {
    use kubeboot::json;
    let doc = json::parse(body).ok()?;
    let user =
        doc.as_object()?.get("status").ok()??.as_object()?.get("userInfo").ok()??.as_object()?;
    let name = user.get("username").ok()??.as_str()?.as_borrowed()?;
    let mut groups = heapless::String::<256>::new();
    if let Some(list) = user.get("groups").ok().flatten().and_then(|g| g.as_array()) {
        for item in list.items() {
            let g = item.ok()?.as_str()?.as_borrowed()?;
            if !groups.is_empty() {
                groups.push(',').ok()?;
            }
            groups.push_str(g).ok()?;
        }
    }
    line(&["joined ", name, " groups=", &groups], None);
    Some(())
}

fn tls_error(e: &TlsError) -> &'static str {
    match e {
        TlsError::Io(_) | TlsError::IoError => "the pipe failed",
        TlsError::ConnectionClosed => "the server closed the connection",
        TlsError::HandshakeAborted(..) => "the server sent an alert",
        TlsError::InvalidCertificate => "the server certificate was refused",
        TlsError::InvalidSignature => "a handshake signature did not verify",
        TlsError::InvalidKeyShare => "the server's key share is not P-256",
        _ => "a TLS protocol error",
    }
}
