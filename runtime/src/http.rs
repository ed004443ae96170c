//! The agent's requests over HTTPS (hyper over rustls, HTTP/1.1): one client per
//! [`Connection::id`] (a new id drops the old client and its pooled connections), responses
//! read up to [`MAX_RESPONSE`] bytes (a longer one is the transport error
//! [`RESPONSE_TOO_LARGE`], never a truncated body), watches streamed into the agent with its
//! idle wake-ups ([`HttpRequest::idle_at`]): a quiet stream is reported as progress without
//! being ended.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kubeboot::agent::StreamControl;
use kubeboot::agent::{Action, Agent, Connection, Event, HttpRequest, Method, RequestKind};
use kubeboot::grammar::{MAX_RESPONSE, RESPONSE_TOO_LARGE};
use kubeboot::pushback::Headers;
use kubeboot_hwkey::Devices;
use tokio::time::Instant;

use crate::clock::{instant_at, unix_now};
use crate::tls::{self, Fixed, Trust};

type Https = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The agent's HTTPS client.
pub(crate) struct Http {
    current: Option<(u32, Result<Https, String>)>,
    devices: Devices,
}

/// A request taken out of the agent's action (which borrows the agent), ready to send.
pub(crate) struct Prepared {
    client: Result<Https, String>,
    request: Option<http::Request<Full<Bytes>>>,
    watch: bool,
    give_up: Instant,
    idle_at: Option<i64>,
}

impl Http {
    /// A client whose device keys are reached through `devices`.
    pub(crate) fn new(devices: Devices) -> Http {
        Http { current: None, devices }
    }

    fn client(&mut self, c: &Connection<'_>) -> Result<Https, String> {
        if self.current.as_ref().is_none_or(|(id, _)| *id != c.id) {
            // (the old client goes, and with it the connections it pooled)
            self.current = Some((c.id, build(c, &self.devices)));
        }
        self.current.as_ref().map(|(_, c)| c.clone()).unwrap_or_else(|| Err("no client".into()))
    }

    /// Take `req` out of the agent's action.
    pub(crate) fn prepare(&mut self, req: &HttpRequest<'_>, now: i64) -> Prepared {
        let client = self.client(&req.connection);
        let method = match req.method {
            Method::Post => http::Method::POST,
            Method::Get => http::Method::GET,
        };
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("{}{}", req.connection.server, req.path))
            .header("Accept", req.accept)
            .header("User-Agent", req.user_agent);
        if let Some(a) = req.authorization {
            b = b.header("Authorization", a);
        }
        if let Some(ct) = req.content_type {
            b = b.header("Content-Type", ct);
        }
        let request = b.body(Full::new(Bytes::copy_from_slice(req.body))).ok();
        let secs = (req.give_up_at - now).clamp(1, 600) as u64;
        Prepared {
            client,
            request,
            watch: req.kind == RequestKind::Watch,
            give_up: Instant::now() + Duration::from_secs(secs),
            idle_at: req.idle_at,
        }
    }
}

/// A client for one connection's settings.
fn build(c: &Connection<'_>, devices: &Devices) -> Result<Https, String> {
    let client = match c.client_certificate {
        Some(cc) => {
            let key = tls::certified_key(cc.chain_pem, cc.key_pem, devices)?;
            Some(Arc::new(Fixed(key)) as Arc<dyn rustls::client::ResolvesClientCert>)
        }
        None => None,
    };
    let mut config = tls::client_config(&Trust { ca_pem: c.ca_pem, insecure: c.insecure }, client)?;
    // No session cache: the agent talks to one server per client, keeps its connection alive,
    // and a new Connection::id is a new client anyway (rustls's default cache of 256 sessions is
    // allocated with the configuration: kilobytes per agent for nothing).
    config.resumption = rustls::client::Resumption::disabled();
    let connector = tls::connector(config, c.server_name)?;
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

impl Prepared {
    /// Send it and give the agent the outcome: a whole response, a watch's stream, or a transport
    /// error. Every line the agent has to say while a watch stays open goes to `say`.
    pub(crate) async fn exchange(
        self,
        agent: &mut Agent<'_>,
        say: &mut (dyn FnMut(&Event<'_>) + Send),
    ) {
        let client = match self.client {
            Ok(c) => c,
            Err(why) => return agent.on_transport_error(unix_now(), &why),
        };
        let Some(request) = self.request else {
            return agent.on_transport_error(unix_now(), "the request is not valid HTTP");
        };
        let response = match tokio::time::timeout_at(self.give_up, client.request(request)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return agent.on_transport_error(unix_now(), &error_chain(&e)),
            Err(_) => return agent.on_transport_error(unix_now(), "timed out"),
        };
        let status = response.status().as_u16();
        let retry_after = response.headers().get("Retry-After").map(|v| v.as_bytes().to_vec());
        let mut body = response.into_body();
        if self.watch && status == 200 {
            return stream(body, agent, self.give_up, self.idle_at, say).await;
        }
        let mut whole = Vec::new();
        let read = tokio::time::timeout_at(self.give_up, async {
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
        .await;
        match read {
            Ok(Ok(())) => {
                let headers = Headers::retry_after(retry_after.as_deref());
                agent.on_http_response(unix_now(), status, &headers, &whole);
            }
            Ok(Err(why)) => agent.on_transport_error(unix_now(), &why),
            Err(_) => agent.on_transport_error(unix_now(), "timed out"),
        }
    }
}

/// Feed a 200 watch into the agent until it closes it, the server ends it, or the request's time
/// is up; wake the agent whenever the stream is quiet until its `idle_at`.
async fn stream(
    mut body: hyper::body::Incoming,
    agent: &mut Agent<'_>,
    give_up: Instant,
    mut idle_at: Option<i64>,
    say: &mut (dyn FnMut(&Event<'_>) + Send),
) {
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
                            return agent.on_transport_error(unix_now(), RESPONSE_TOO_LARGE);
                        }
                        agent.on_stream_data(unix_now(), &data)
                    }
                    Err(_) => StreamControl::Continue,
                },
                // (the end, or a broken read)
                _ => return agent.on_stream_end(unix_now()),
            },
            () = idle => {
                let woke = idle_at.unwrap_or_default();
                let c = agent.on_stream_idle(unix_now());
                // (a wake-up time that does not move on is taken a second later)
                idle_at = next_idle(agent).map(|t| t.max(woke + 1));
                c
            }
            () = tokio::time::sleep_until(give_up) => return agent.on_stream_end(unix_now()),
        };
        while let Some(e) = agent.next_event() {
            say(&e);
        }
        if control == StreamControl::Close {
            return;
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
