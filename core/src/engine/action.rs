//! What the engine asks its caller to do, and what it reports: requests, actions, phases.

use super::*;

/// HTTP method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// POST
    Post,
}

impl Method {
    /// `GET` / `POST`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// What a request is for. A [`RequestKind::Watch`] response with status 200 is a stream: feed
/// it with [`Engine::on_stream_data`] as it arrives.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// Create the CSR.
    Create,
    /// GET the CSR by name (409 follow-up or polling).
    Get,
    /// Watch the CSR: a streaming response.
    Watch,
}

impl RequestKind {
    /// `create` / `get` / `watch`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Create => "create",
            RequestKind::Get => "get",
            RequestKind::Watch => "watch",
        }
    }
}

/// A request to send now.
pub struct Request<'e> {
    /// What the request is for.
    pub kind: RequestKind,
    /// The method.
    pub method: Method,
    /// Path and query, relative to the server URL.
    pub path: &'e str,
    /// The `Authorization` header value (`Bearer ...`) when the engine authenticates with a
    /// token; with [`Auth::ClientCertificate`] the transport presents the certificate instead.
    pub authorization: Option<&'e str>,
    /// `Content-Type` of the body, if any.
    pub content_type: Option<&'static str>,
    /// `Accept`.
    pub accept: &'static str,
    /// The body (empty for GET).
    pub body: &'e [u8],
    /// When the transport should give up on this request and report
    /// [`Engine::on_transport_error`] (unix seconds): the engine's deadline, and for a watch
    /// the server's `timeoutSeconds` plus a margin.
    pub give_up_at: i64,
}

impl fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("kind", &self.kind)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("authorization", &self.authorization.map(|_| "<redacted>"))
            .field("body_len", &self.body.len())
            .field("give_up_at", &self.give_up_at)
            .finish()
    }
}

/// The validated result.
#[derive(Debug)]
pub struct Issued<'e> {
    /// The issued certificate chain as PEM (what the apiserver returned, validated).
    pub cert_pem: &'e [u8],
    /// Validation result: validity window and the CA that issued it.
    pub verified: &'e Verified,
    /// The CSR object's name.
    pub csr_name: &'e str,
    /// It chains to a CA of [`Expect::ca_pem`]; false only with [`Expect::prove`]: every other
    /// check passed, and its issuer ([`Verified::ca_subject`]) is for the caller to establish.
    pub anchored: bool,
    /// Valid, but not at the `now` it was checked at: judged at its own notBefore instead (only
    /// its time disagreed; just issued for our key, it is the local clock that is off).
    pub clock_off: bool,
}

/// What to do next.
#[non_exhaustive]
#[derive(Debug)]
pub enum Action<'e> {
    /// Send this request; report its outcome with `on_response` / `on_stream_*` /
    /// `on_transport_error`.
    Send(Request<'e>),
    /// A request is outstanding: feed its outcome first (a transport that gives up reports
    /// [`Engine::on_transport_error`]).
    AwaitResponse,
    /// Nothing to send before `until` (backoff or poll interval): call `poll` again then.
    Wait {
        /// Unix seconds.
        until: i64,
    },
    /// Done: the certificate was issued and validated.
    Done(Issued<'e>),
    /// The attempt failed for good; see [`Engine::failure`] for the server's reason and message.
    Failed(Error),
}

/// Whether a streaming transport should keep reading the watch response.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamControl {
    /// Keep feeding chunks as they arrive.
    Continue,
    /// Stop reading and drop the connection: the certificate arrived, the CSR failed, or the
    /// engine wants another request. Do not call [`Engine::on_stream_end`] (it would be ignored).
    Close,
}

/// What the engine is waiting on / doing.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started ([`Engine::new`], or after [`Engine::reset`]).
    Idle,
    /// About to create the CSR.
    Create,
    /// Create sent.
    Creating,
    /// About to GET the CSR.
    Fetch,
    /// GET sent.
    Fetching,
    /// About to watch.
    Watch,
    /// Watch stream open.
    Watching,
    /// Waiting before the next attempt (`until`).
    Backoff,
    /// Certificate issued and validated.
    Done,
    /// Failed for good.
    Failed,
}

/// Server-provided detail of a failure: the condition's or Status's reason and message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureDetail {
    /// HTTP status, when the failure came from one.
    pub status: Option<u16>,
    /// `reason` (condition reason or Status reason).
    pub reason: heapless::String<MAX_MESSAGE>,
    /// `message`.
    pub message: heapless::String<MAX_MESSAGE>,
}

impl FailureDetail {
    pub(super) const fn empty() -> Self {
        FailureDetail {
            status: None,
            reason: heapless::String::new(),
            message: heapless::String::new(),
        }
    }

    /// Back to [`FailureDetail::empty`], in place.
    pub(super) fn clear(&mut self) {
        let FailureDetail { status, reason, message } = self;
        *status = None;
        reason.clear();
        message.clear();
    }
}

pub(super) fn push_lossy<const M: usize>(dst: &mut heapless::String<M>, s: &str) {
    dst.clear();
    for c in s.chars() {
        if dst.push(c).is_err() {
            break;
        }
    }
}
