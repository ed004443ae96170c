//! The sans-IO bootstrap / rotation engine: `kubeboot_engine` handles driven by
//! [`kubeboot_engine_poll`] and fed with the outcome of each HTTP request.
//!
//! The C caller owns the transport (HTTPS with the cluster CA, the client certificate for
//! rotation), the clock and the sleeping; the engine owns the protocol: create the
//! CertificateSigningRequest, reuse an existing one on 409, watch (or poll) it, interpret
//! conditions, validate the issued certificate, back off on 429/5xx/transport errors.
//!
//! The engine owns copies of its configuration, so the handle borrows nothing; without `std`
//! it lives in a static pool ([`ENGINE_SLOTS`] handles), with `std` on the heap. Failures have
//! one channel: the `on_*` functions return `KUBEBOOT_RESULT_OK` (or a parameter error) and
//! the failure comes out of the next [`kubeboot_engine_poll`] as `KUBEBOOT_ACTION_FAILED`.

use core::ffi::c_char;
use core::ptr::null;

use kb::engine::{
    Action, Auth, BOOTSTRAP_WAIT_SECS, Config, Engine, Method, Naming, ROTATION_WAIT_SECS,
    RequestKind, StreamControl,
};
use kb::pushback::Headers;

use crate::error::kubeboot_result;
use crate::expected::kubeboot_expected;
use crate::key::kubeboot_key;
use crate::macros::{copy_out, free_box, new_in_place};
use crate::token::kubeboot_token;

/// Engine handles that can be live at once without `std` (the pool's size).
pub const ENGINE_SLOTS: usize = 2;

/// Authenticate with the bootstrap token (`Authorization: Bearer <id>.<secret>`).
pub const KUBEBOOT_AUTH_TOKEN: u32 = 0;
/// Authenticate with the current client certificate, which the transport presents in the TLS
/// handshake (rotation).
pub const KUBEBOOT_AUTH_CLIENT_CERTIFICATE: u32 = 1;
/// Name the CSR `node-csr-<digest>` (the kubelet's bootstrap name: a restart finds its CSR).
pub const KUBEBOOT_NAMING_NODE_CSR: u32 = 0;
/// `generateName: csr-` (rotation: the apiserver picks the name).
pub const KUBEBOOT_NAMING_GENERATE: u32 = 1;

/// Action: send the request described in the action (`request_*` fields).
pub const KUBEBOOT_ACTION_SEND: u32 = 0;
/// Action: a request is outstanding; feed its outcome (`until` is the overall deadline).
pub const KUBEBOOT_ACTION_AWAIT: u32 = 1;
/// Action: nothing to do before `until` (unix seconds); poll again then.
pub const KUBEBOOT_ACTION_WAIT: u32 = 2;
/// Action: the certificate was issued and validated (`cert_pem`, `not_before`, ...).
pub const KUBEBOOT_ACTION_DONE: u32 = 3;
/// Action: failed for good (`result`, `http_status`; see [`kubeboot_engine_failure_message`]).
pub const KUBEBOOT_ACTION_FAILED: u32 = 4;

/// Request: create the CSR (POST, JSON body).
pub const KUBEBOOT_REQUEST_CREATE: u32 = 0;
/// Request: GET the CSR by name.
pub const KUBEBOOT_REQUEST_GET: u32 = 1;
/// Request: watch the CSR; stream the response body into [`kubeboot_engine_on_stream_data`] as it
/// arrives and call [`kubeboot_engine_on_stream_end`] when it ends.
pub const KUBEBOOT_REQUEST_WATCH: u32 = 2;

/// Seconds the apiserver keeps a watch open (`timeoutSeconds` of watch requests); give the
/// transport a little more than this as its timeout.
pub const KUBEBOOT_WATCH_TIMEOUT_SECS: u32 = 300;
const _: () = assert!(KUBEBOOT_WATCH_TIMEOUT_SECS == kb::engine::WATCH_TIMEOUT_SECS);

/// What the engine should ask for and how. All pointers are only read during
/// [`kubeboot_engine_new`]; the engine keeps its own copies.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_engine_config {
    /// The certificate to request: node name, profile and (serving) SANs. The issued certificate
    /// is validated against it and the engine's key.
    pub expected: kubeboot_expected,
    /// `KUBEBOOT_AUTH_TOKEN` or `KUBEBOOT_AUTH_CLIENT_CERTIFICATE`.
    pub auth: u32,
    /// The bootstrap token (required for `KUBEBOOT_AUTH_TOKEN`, ignored otherwise).
    pub token: *const kubeboot_token,
    /// `KUBEBOOT_NAMING_NODE_CSR` or `KUBEBOOT_NAMING_GENERATE`.
    pub naming: u32,
    /// The CA bundle (PEM) the issued certificate must chain to (the cluster's client CA).
    pub ca_pem: *const u8,
    /// Its length (must not be 0).
    pub ca_pem_len: usize,
    /// `spec.expirationSeconds` (≥ 600), or 0 for the signer's default.
    pub expiration_seconds: u32,
    /// How long to wait for issuance from `now` at creation; ≤ 0 means the kubelet's default
    /// (3600 s with `KUBEBOOT_NAMING_NODE_CSR`, 900 s with `KUBEBOOT_NAMING_GENERATE`).
    pub wait_seconds: i64,
    /// Watch the CSR (true, the kubelet's way) or poll it with GET every 5 s.
    pub watch: bool,
}

crate::macros::zero_valid!(kubeboot_engine);

impl crate::macros::Handle for kubeboot_engine {
    #[cfg(not(feature = "std"))]
    fn pool() -> &'static dyn crate::macros::pool::Slots<Self> {
        static POOL: crate::macros::pool::Pool<kubeboot_engine, ENGINE_SLOTS> =
            crate::macros::pool::Pool::new();
        &POOL
    }
}

/// What to do next, from [`kubeboot_engine_poll`]. Pointers point into the engine and stay valid
/// until the next call that takes the engine (or its `_free`); strings are not NUL-terminated
/// unless noted.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_action {
    /// `KUBEBOOT_ACTION_SEND` / `_AWAIT` / `_WAIT` / `_DONE` / `_FAILED`.
    pub kind: u32,
    /// SEND: give up on the request at this time and report a transport error; AWAIT: the same
    /// for the outstanding request; WAIT: poll again at this time (unix seconds); else 0.
    pub until: i64,
    /// SEND: `KUBEBOOT_REQUEST_CREATE` / `_GET` / `_WATCH`.
    pub request_kind: u32,
    /// SEND: `"GET"` or `"POST"` (static, NUL-terminated); NULL otherwise.
    pub method: *const c_char,
    /// SEND: path and query, relative to the server URL (starts with `/`).
    pub path: *const c_char,
    /// Length of `path`.
    pub path_len: usize,
    /// SEND: the `Authorization` header value (`Bearer ...`, secret), or NULL when the transport
    /// authenticates with the client certificate.
    pub authorization: *const c_char,
    /// Length of `authorization`.
    pub authorization_len: usize,
    /// SEND: `Content-Type` of the body (static, NUL-terminated) or NULL without a body.
    pub content_type: *const c_char,
    /// SEND: `Accept` (static, NUL-terminated).
    pub accept: *const c_char,
    /// SEND: the body (JSON), NULL/0 for GET.
    pub body: *const u8,
    /// Length of `body`.
    pub body_len: usize,
    /// DONE: the issued certificate chain (PEM), validated.
    pub cert_pem: *const u8,
    /// Length of `cert_pem`.
    pub cert_pem_len: usize,
    /// DONE: the leaf's notBefore (unix seconds).
    pub not_before: i64,
    /// DONE: the leaf's notAfter (unix seconds).
    pub not_after: i64,
    /// DONE: when to rotate (70–90 % of the lifetime).
    pub rotation_deadline: i64,
    /// DONE: the CSR object's name.
    pub csr_name: *const c_char,
    /// Length of `csr_name`.
    pub csr_name_len: usize,
    /// FAILED: why (a `kubeboot_result`, 700s for the apiserver's answers, 400s for a rejected
    /// certificate); `KUBEBOOT_RESULT_OK` otherwise.
    pub result: kubeboot_result,
    /// FAILED: the HTTP status the failure came with, or 0.
    pub http_status: u16,
}

impl kubeboot_action {
    fn empty(kind: u32) -> Self {
        kubeboot_action {
            kind,
            until: 0,
            request_kind: 0,
            method: null(),
            path: null(),
            path_len: 0,
            authorization: null(),
            authorization_len: 0,
            content_type: null(),
            accept: null(),
            body: null(),
            body_len: 0,
            cert_pem: null(),
            cert_pem_len: 0,
            not_before: 0,
            not_after: 0,
            rotation_deadline: 0,
            csr_name: null(),
            csr_name_len: 0,
            result: kubeboot_result::Ok,
            http_status: 0,
        }
    }
}

/// A bootstrap / rotation engine. Opaque; not thread-safe (use from one thread at a time); free
/// with [`kubeboot_engine_free`].
pub struct kubeboot_engine {
    engine: Engine,
}

/// Who checks the issued certificate's signatures: ring on std hosts built with it, else the
/// portable (or, on a Cortex-M4 with `p256-cortex-m4`, the assembly) backend.
pub(crate) fn verifier() -> &'static (dyn kb::backend::SignatureVerifier + Sync) {
    #[cfg(feature = "ring")]
    {
        &kb::backend::ring::Ring
    }
    #[cfg(not(feature = "ring"))]
    {
        kb::engine::SOFTWARE
    }
}

/// Create an engine: copy the configuration, build and sign the CSR with `key` (not kept), and
/// get ready to create it. `now` is the current unix time (the wait deadline counts from it);
/// `seed` drives backoff and rotation-deadline jitter (take it from any unpredictable source).
/// All pointers are only read during the call.
///
/// Errors: `KUBEBOOT_RESULT_INVALID_PARAMETER` for an unknown profile, auth or naming;
/// `KUBEBOOT_RESULT_NULL_PARAMETER` for a missing token with token auth; the CSR errors
/// (`INVALID_NODE_NAME`, `INVALID_DNS_NAME`, `TOO_MANY_SANS`, `INVALID_EXPIRATION_SECONDS`, ...);
/// `INVALID_PARAMETER` for an empty CA bundle and `TOO_LARGE` for one over 16 KiB; without `std`,
/// `UNKNOWN_ERROR` when [`ENGINE_SLOTS`] engines are live.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_new(
    cfg: *const kubeboot_engine_config,
    key: *const kubeboot_key,
    now: i64,
    seed: u64,
    out: *mut *mut kubeboot_engine,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let cfg = try_ref!(cfg);
        let key = try_ref!(key);
        let expected = match cfg.expected.read() {
            Ok(x) => x,
            Err(e) => return e,
        };
        let ca_pem = try_slice!(cfg.ca_pem, cfg.ca_pem_len);
        if ca_pem.is_empty() {
            return kubeboot_result::InvalidParameter;
        }
        let auth = match cfg.auth {
            KUBEBOOT_AUTH_TOKEN => Auth::Token(&try_ref!(cfg.token).inner),
            KUBEBOOT_AUTH_CLIENT_CERTIFICATE => Auth::ClientCertificate,
            _ => return kubeboot_result::InvalidParameter,
        };
        let naming = match cfg.naming {
            KUBEBOOT_NAMING_NODE_CSR => Naming::NodeCsr,
            KUBEBOOT_NAMING_GENERATE => Naming::Generate,
            _ => return kubeboot_result::InvalidParameter,
        };
        let wait_secs = match (cfg.wait_seconds, naming) {
            (w, _) if w > 0 => w,
            (_, Naming::NodeCsr) => BOOTSTRAP_WAIT_SECS,
            (_, Naming::Generate) => ROTATION_WAIT_SECS,
        };
        let config = Config {
            node_name: expected.node_name,
            profile: expected.profile(),
            auth,
            naming,
            ca_pem,
            expiration_seconds: (cfg.expiration_seconds != 0).then_some(cfg.expiration_seconds),
            wait_secs,
            watch: cfg.watch,
            verifier: verifier(),
        };
        new_in_place(out, |e| {
            match e.engine.start(&config, &key.inner, now, seed) {
                Ok(()) => kubeboot_result::Ok,
                Err(err) => err.into(),
            }
        })
    }}
}

/// Free an engine (zeroizing the token and key copies). NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_free(engine: *mut kubeboot_engine) {
    ffi_panic_boundary! { (), {
        // SAFETY: the caller passes NULL or a handle from `kubeboot_engine_new` not yet freed.
        unsafe { free_box(engine) }
    }}
}

const GET: &[u8] = b"GET\0";
const POST: &[u8] = b"POST\0";
const JSON: &[u8] = b"application/json\0";

/// What to do now (see [`kubeboot_action`]). Writes `*out` and returns `KUBEBOOT_RESULT_OK`,
/// also for `KUBEBOOT_ACTION_FAILED` (whose `result` says why).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_poll(
    engine: *mut kubeboot_engine,
    now: i64,
    out: *mut kubeboot_action,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let e = try_mut!(engine);
        let action = match e.engine.poll(now) {
            Action::Send(r) => {
                let mut a = kubeboot_action::empty(KUBEBOOT_ACTION_SEND);
                a.request_kind = match r.kind {
                    RequestKind::Create => KUBEBOOT_REQUEST_CREATE,
                    RequestKind::Get => KUBEBOOT_REQUEST_GET,
                    _ => KUBEBOOT_REQUEST_WATCH,
                };
                a.until = r.give_up_at;
                a.method = match r.method {
                    Method::Get => GET.as_ptr().cast(),
                    Method::Post => POST.as_ptr().cast(),
                };
                a.path = r.path.as_ptr().cast();
                a.path_len = r.path.len();
                if let Some(h) = r.authorization {
                    a.authorization = h.as_ptr().cast();
                    a.authorization_len = h.len();
                }
                if r.content_type.is_some() {
                    a.content_type = JSON.as_ptr().cast();
                }
                a.accept = JSON.as_ptr().cast();
                if !r.body.is_empty() {
                    a.body = r.body.as_ptr();
                    a.body_len = r.body.len();
                }
                a
            }
            Action::AwaitResponse { until } => {
                let mut a = kubeboot_action::empty(KUBEBOOT_ACTION_AWAIT);
                a.until = until;
                a
            }
            Action::Wait { until } => {
                let mut a = kubeboot_action::empty(KUBEBOOT_ACTION_WAIT);
                a.until = until;
                a
            }
            Action::Done(issued) => {
                let mut a = kubeboot_action::empty(KUBEBOOT_ACTION_DONE);
                a.cert_pem = issued.cert_pem.as_ptr();
                a.cert_pem_len = issued.cert_pem.len();
                a.not_before = issued.verified.not_before;
                a.not_after = issued.verified.not_after;
                a.rotation_deadline = issued.rotation_deadline;
                a.csr_name = issued.csr_name.as_ptr().cast();
                a.csr_name_len = issued.csr_name.len();
                a
            }
            Action::Failed(err) => {
                let mut a = kubeboot_action::empty(KUBEBOOT_ACTION_FAILED);
                a.result = err.into();
                a
            }
            _ => {
                let mut a = kubeboot_action::empty(KUBEBOOT_ACTION_FAILED);
                a.result = kubeboot_result::InvalidState;
                a
            }
        };
        let mut action = action;
        if action.kind == KUBEBOOT_ACTION_FAILED {
            if let Some((_, detail)) = e.engine.failure() {
                action.http_status = detail.status.unwrap_or(0);
            }
        }
        *out = action;
        kubeboot_result::Ok
    }}
}

/// The complete response (`status`, body) to the outstanding request. For a watch this may be
/// the whole stream (transports that cannot stream). Returns `KUBEBOOT_RESULT_OK` (a failure it
/// causes comes out of the next [`kubeboot_engine_poll`]); a response when no request is
/// outstanding is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_on_response(
    engine: *mut kubeboot_engine,
    now: i64,
    status: u16,
    body: *const u8,
    body_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let e = try_mut!(engine);
        let body = try_slice!(body, body_len);
        e.engine.on_response(now, status, body);
        kubeboot_result::Ok
    }}
}

/// [`kubeboot_engine_on_response`] with the response's `Retry-After` header: its raw value
/// (`retry_after`, `retry_after_len` bytes, not NUL-terminated), or NULL with 0 when the response
/// has none. A 429 or 5xx with a `Retry-After` of delta-seconds waits as the server asked, with
/// jitter, before the next attempt.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_on_response_with_retry_after(
    engine: *mut kubeboot_engine,
    now: i64,
    status: u16,
    retry_after: *const c_char,
    retry_after_len: usize,
    body: *const u8,
    body_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let e = try_mut!(engine);
        let headers = Headers::retry_after(try_opt_slice!(retry_after.cast::<u8>(), retry_after_len));
        let body = try_slice!(body, body_len);
        e.engine.on_response_with(now, status, &headers, body);
        kubeboot_result::Ok
    }}
}

/// A chunk of the watch response body (a 200 watch stream), split anywhere. `*keep_reading`
/// says whether to go on reading the stream: false once the engine needs no more of it (the
/// certificate arrived, the CSR failed, or it wants another request) — then drop the connection
/// and do not call [`kubeboot_engine_on_stream_end`] (the apiserver would keep the stream open
/// until its timeout).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_on_stream_data(
    engine: *mut kubeboot_engine,
    now: i64,
    chunk: *const u8,
    chunk_len: usize,
    keep_reading: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let e = try_mut!(engine);
        let keep = try_mut!(keep_reading);
        let chunk = try_slice!(chunk, chunk_len);
        *keep = e.engine.on_stream_data(now, chunk) == StreamControl::Continue;
        kubeboot_result::Ok
    }}
}

/// The watch stream ended (server timeout, closed connection, or a broken read). Call it after
/// the last [`kubeboot_engine_on_stream_data`]; a no-op when no watch is open.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_on_stream_end(
    engine: *mut kubeboot_engine,
    now: i64,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let e = try_mut!(engine);
        e.engine.on_stream_end(now);
        kubeboot_result::Ok
    }}
}

/// The request could not be sent or no (complete) response arrived: connection refused, TLS
/// error, timeout, or a watch response with a non-200 status that you could not read. Retried
/// with backoff until the deadline.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_on_transport_error(
    engine: *mut kubeboot_engine,
    now: i64,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let e = try_mut!(engine);
        e.engine.on_transport_error(now);
        kubeboot_result::Ok
    }}
}

/// The failure's detail once poll said FAILED: `"<reason>: <message>"` (the server's condition or
/// Status reason and message, e.g. `"AutoDenied: ..."`), or just the message, into `buf` (not
/// NUL-terminated). Empty (`*out_len` = 0) when the engine has not failed. Never contains the
/// token.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_failure_message(
    engine: *const kubeboot_engine,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let e = try_ref!(engine);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let mut text: heapless::String<600> = heapless::String::new();
        if let Some((_, d)) = e.engine.failure() {
            if !d.reason.is_empty() {
                let _ = text.push_str(&d.reason);
                let _ = text.push_str(": ");
            }
            let _ = text.push_str(&d.message);
        }
        copy_out(buf, out_len, text.as_bytes())
    }}
}

/// The CSR object's name into `buf`: known from the start with `KUBEBOOT_NAMING_NODE_CSR`, after
/// the create response with `KUBEBOOT_NAMING_GENERATE` (empty before).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_csr_name(
    engine: *const kubeboot_engine,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let e = try_ref!(engine);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        copy_out(buf, out_len, e.engine.csr_name().as_bytes())
    }}
}

/// Whether a request is outstanding (create, get or watch sent, outcome not yet fed). A
/// streaming transport must stop reading a watch response as soon as this turns false after
/// [`kubeboot_engine_on_stream_data`] (the certificate arrived or the CSR failed): the apiserver
/// keeps the stream open until its timeout. False for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_request_outstanding(engine: *const kubeboot_engine) -> bool {
    ffi_panic_boundary! { false, {
        // SAFETY: the caller passes NULL or a live engine handle.
        match unsafe { engine.as_ref() } {
            Some(e) => e.engine.request_outstanding(),
            None => false,
        }
    }}
}

/// The engine's overall deadline (unix seconds): creation time plus the wait. 0 for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_engine_deadline(engine: *const kubeboot_engine) -> i64 {
    ffi_panic_boundary! { 0, {
        // SAFETY: the caller passes NULL or a live engine handle.
        match unsafe { engine.as_ref() } {
            Some(e) => e.engine.deadline(),
            None => 0,
        }
    }}
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr::null_mut;

    fn rec(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../core/tests/data/recorded")
            .join(name);
        std::fs::read(p).unwrap()
    }

    #[cfg_attr(miri, ignore = "key load, CSR signature, ECDSA verification: minutes")]
    #[test]
    fn recorded_bootstrap_through_the_abi() {
        let key_pem = rec("approved.key.pem");
        let ca = rec("client-ca.pem");
        let mut key = null_mut();
        assert_eq!(
            crate::key::kubeboot_key_from_pem(key_pem.as_ptr(), key_pem.len(), &mut key),
            kubeboot_result::Ok
        );
        let tok = "hi3rc6.cpoi3m254kzpt12t";
        let mut token = null_mut();
        assert_eq!(
            crate::token::kubeboot_token_parse(tok.as_ptr().cast(), tok.len(), &mut token),
            kubeboot_result::Ok
        );
        let node = "rec-1";
        let cfg = kubeboot_engine_config {
            expected: kubeboot_expected {
                node_name: node.as_ptr().cast(),
                node_name_len: node.len(),
                profile: crate::csr::KUBEBOOT_PROFILE_CLIENT,
                dns_names: null(),
                dns_count: 0,
                ip_addresses: null(),
                ip_count: 0,
            },
            auth: KUBEBOOT_AUTH_TOKEN,
            token,
            naming: KUBEBOOT_NAMING_NODE_CSR,
            ca_pem: ca.as_ptr(),
            ca_pem_len: ca.len(),
            expiration_seconds: 0,
            wait_seconds: 0,
            watch: true,
        };
        let now = 1_796_208_640; // 2026-12-02T10:50:40Z
        let mut e = null_mut();
        assert_eq!(kubeboot_engine_new(&cfg, key, now, 42, &mut e), kubeboot_result::Ok);
        // The engine keeps its own copies: free the inputs now.
        crate::key::kubeboot_key_free(key);
        crate::token::kubeboot_token_free(token);
        let mut a = kubeboot_action::empty(99);
        assert_eq!(kubeboot_engine_poll(e, now, &mut a), kubeboot_result::Ok);
        assert_eq!((a.kind, a.request_kind), (KUBEBOOT_ACTION_SEND, KUBEBOOT_REQUEST_CREATE));
        // SAFETY: pointers from the action, valid until the next engine call.
        let auth = unsafe {
            core::slice::from_raw_parts(a.authorization.cast::<u8>(), a.authorization_len)
        };
        assert_eq!(auth, b"Bearer hi3rc6.cpoi3m254kzpt12t");
        let body = rec("csr-create-201.json");
        assert_eq!(
            kubeboot_engine_on_response(e, now, 201, body.as_ptr(), body.len()),
            kubeboot_result::Ok
        );
        assert_eq!(kubeboot_engine_poll(e, now, &mut a), kubeboot_result::Ok);
        assert_eq!((a.kind, a.request_kind), (KUBEBOOT_ACTION_SEND, KUBEBOOT_REQUEST_WATCH));
        let mut fed = 0;
        for chunk in rec("watch-approved.json").chunks(13) {
            let mut keep = true;
            let rc =
                kubeboot_engine_on_stream_data(e, now + 1, chunk.as_ptr(), chunk.len(), &mut keep);
            assert_eq!(rc, kubeboot_result::Ok);
            fed += 1;
            if !keep {
                // Once the certificate is in, the watch is over.
                break;
            }
        }
        assert!(fed > 10);
        assert_eq!(kubeboot_engine_poll(e, now + 1, &mut a), kubeboot_result::Ok);
        assert_eq!(a.kind, KUBEBOOT_ACTION_DONE);
        assert!(a.not_after > a.not_before && a.rotation_deadline > a.not_before);
        // SAFETY: as above.
        let name = unsafe { core::slice::from_raw_parts(a.csr_name.cast::<u8>(), a.csr_name_len) };
        assert_eq!(name, b"kubeboot-rec-approved-105026");
        kubeboot_engine_free(e);
    }
}
