//! The node agent: `kubeboot_agent` handles, the one place a C or Go front-end (or firmware)
//! gets every decision of a kubelet-style node agent from (see the core's `kubeboot::agent`).
//!
//! The front-end loops on [`kubeboot_agent_poll`] and does what the action says:
//!
//! | `kind` | do | answer |
//! |---|---|---|
//! | `KUBEBOOT_AGENT_READ` | read the whole file `path` (≤ `max_len` bytes) | [`kubeboot_agent_on_read`] |
//! | `KUBEBOOT_AGENT_FILE` | the file step `file_step` (crash-safe, see the header) | [`kubeboot_agent_on_file_done`] |
//! | `KUBEBOOT_AGENT_ENTROPY` | `entropy_len` bytes from a CSPRNG | [`kubeboot_agent_on_entropy`] |
//! | `KUBEBOOT_AGENT_HTTP` | the HTTPS request (connection fields, request fields) | [`kubeboot_agent_on_http_response_with_retry_after`] (or [`kubeboot_agent_on_http_response`]), the stream calls, or [`kubeboot_agent_on_transport_error`] |
//! | `KUBEBOOT_AGENT_KEY` | the device operation `key_op` (see [`crate::device`]) | `kubeboot_agent_on_key_*` |
//! | `KUBEBOOT_AGENT_SLEEP` | sleep until `until` | — |
//! | `KUBEBOOT_AGENT_EVENT` | print `line` | — |
//! | `KUBEBOOT_AGENT_DONE` | exit 0 | — |
//! | `KUBEBOOT_AGENT_FAILED` | print `line`, exit 1 | — |
//!
//! With `std`, [`kubeboot_agent_perform_file_action`] does READ and FILE actions with the
//! crate's crash-safe file store and [`kubeboot_agent_perform_entropy`] with the OS RNG, so a
//! hosted front-end only does HTTP, sleeping and printing. Without `std` the agent lives in a
//! static pool of [`AGENT_SLOTS`] handles and the caller implements the file steps over its own
//! storage.

use core::ffi::c_char;
use core::ptr::null;

use kb::agent::{
    Action, Agent, Config, DiscoveryConfig, FileStep, Mode, RequestKind, RotateNow, Serving,
};
use kb::engine::{Method, StreamControl};
use kb::error::StoreErrorKind;
use kb::pin::CaPin;
use kb::pushback::Headers;

use crate::csr::kubeboot_str;
use crate::engine::verifier;
use crate::error::kubeboot_result;
use crate::expected::{Sans, strs};
use crate::macros::{free_box, new_in_place};
use crate::token::kubeboot_token;

/// Agent handles that can be live at once without `std` (the pool's size).
pub const AGENT_SLOTS: usize = 1;

/// Mode: make the credentials usable once, then DONE (or FAILED).
pub const KUBEBOOT_MODE_ONCE: u32 = 0;
/// Mode: keep them usable, sleeping until each rotation deadline; failures are retried.
pub const KUBEBOOT_MODE_RUN: u32 = 1;

/// Event lines as `agent=<fe> step=<step> key=value ...`.
pub const KUBEBOOT_LOG_TEXT: u32 = 0;
/// Event lines as JSON objects, `{"agent":"<fe>","step":"<step>","key":"value",...}`.
pub const KUBEBOOT_LOG_JSON: u32 = 1;

/// Action: read a file (`path`, `role`, `max_len`).
pub const KUBEBOOT_AGENT_READ: u32 = 0;
/// Action: a file step (`file_step`, `path`, `path2`, `path3`, `data`).
pub const KUBEBOOT_AGENT_FILE: u32 = 1;
/// Action: entropy for a new private key (`entropy_len` bytes).
pub const KUBEBOOT_AGENT_ENTROPY: u32 = 2;
/// Action: an HTTPS request (connection and request fields).
pub const KUBEBOOT_AGENT_HTTP: u32 = 3;
/// Action: nothing to do before `until` (unix seconds).
pub const KUBEBOOT_AGENT_SLEEP: u32 = 4;
/// Action: print `line`.
pub const KUBEBOOT_AGENT_EVENT: u32 = 5;
/// Action: done (`client_*`, `serving_*`).
pub const KUBEBOOT_AGENT_DONE: u32 = 6;
/// Action: failed for good (`result`, `detail`, `line`).
pub const KUBEBOOT_AGENT_FAILED: u32 = 7;
/// Action: use the device that holds the node key (`key_op`, `key_holder`, `key_ref`,
/// `key_device`, `key_label`, `data`); answer with the `kubeboot_agent_on_key_*` call the
/// operation names, or `kubeboot_agent_on_key_error`.
pub const KUBEBOOT_AGENT_KEY: u32 = 8;

/// File step: open the store `<path>/<path2>-*.pem` (client-go's recovery of an interrupted
/// swap, stale temporary files removed); a missing directory is `STORE_NOT_FOUND`.
pub const KUBEBOOT_FILE_RECOVER: u32 = 0;
/// File step: create the directory `path` (mode 0700).
pub const KUBEBOOT_FILE_CREATE_DIR: u32 = 1;
/// File step: write the key cache `path` (`data`: a secret key) atomically, mode 0600.
pub const KUBEBOOT_FILE_WRITE_KEY_CACHE: u32 = 2;
/// File step: write the data file `path` (`data`: chain + key, secret) atomically, mode 0600,
/// and check it reads back equal.
pub const KUBEBOOT_FILE_WRITE_PAIR: u32 = 3;
/// File step: symlink `path2` (`-updated.pem`) → `path3` (the data file), renamed over `path`
/// (`-current.pem`).
pub const KUBEBOOT_FILE_SWAP_CURRENT: u32 = 4;
/// File step: write the node kubeconfig `path` (`data`) atomically, mode 0600.
pub const KUBEBOOT_FILE_WRITE_KUBECONFIG: u32 = 5;
/// File step: write the discovered bootstrap kubeconfig `path` (`data`, holds the token)
/// atomically, mode 0600.
pub const KUBEBOOT_FILE_WRITE_BOOTSTRAP_KUBECONFIG: u32 = 6;
/// File step: remove the key cache `path` (missing is success).
pub const KUBEBOOT_FILE_REMOVE_KEY_CACHE: u32 = 7;
/// File step: remove the directory `path` if it is empty.
pub const KUBEBOOT_FILE_REMOVE_DIR: u32 = 8;
/// File step: write the node's CA file for the apiserver `path` (`data`: PEM certificates, not
/// secret) atomically (after bootstrap, and when the CA refresh proved a new bundle).
pub const KUBEBOOT_FILE_WRITE_CA: u32 = 9;

/// Request: `GET /healthz` before bootstrapping.
pub const KUBEBOOT_AGENT_REQUEST_HEALTHZ: u32 = 0;
/// Request: `GET` of `kube-public/cluster-info` (discovery, anonymous).
pub const KUBEBOOT_AGENT_REQUEST_CLUSTER_INFO: u32 = 1;
/// Request: create the CSR.
pub const KUBEBOOT_AGENT_REQUEST_CREATE: u32 = 2;
/// Request: GET the CSR.
pub const KUBEBOOT_AGENT_REQUEST_GET: u32 = 3;
/// Request: watch the CSR; with status 200 stream the body into
/// [`kubeboot_agent_on_stream_data`].
pub const KUBEBOOT_AGENT_REQUEST_WATCH: u32 = 4;
/// Request: list the ClusterTrustBundles of the apiserver's serving signer (the CA refresh).
pub const KUBEBOOT_AGENT_REQUEST_TRUST_BUNDLES: u32 = 5;
/// Request: `GET /healthz` trusting only a new CA bundle (the CA refresh): any HTTP answer
/// proves it, a failed handshake is `kubeboot_agent_on_transport_error`.
pub const KUBEBOOT_AGENT_REQUEST_CA_PROBE: u32 = 6;

/// What the agent manages (see `kubeboot::agent::Config`). Strings are UTF-8, not
/// NUL-terminated; an optional one is NULL with length 0. Only read by [`kubeboot_agent_new`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_agent_config {
    /// The front-end's name (`c`, `go`, ...): the `agent=` of every event line.
    pub front_end: *const c_char,
    /// Its length.
    pub front_end_len: usize,
    /// The absolute directory relative paths are resolved against (the working directory).
    pub working_dir: *const c_char,
    /// Its length.
    pub working_dir_len: usize,
    /// The node name; NULL: from the current client certificate (rotation only).
    pub node_name: *const c_char,
    /// Its length.
    pub node_name_len: usize,
    /// The node kubeconfig.
    pub kubeconfig: *const c_char,
    /// Its length.
    pub kubeconfig_len: usize,
    /// The bootstrap kubeconfig; NULL: the node cannot bootstrap.
    pub bootstrap_kubeconfig: *const c_char,
    /// Its length.
    pub bootstrap_kubeconfig_len: usize,
    /// The cert dir.
    pub cert_dir: *const c_char,
    /// Its length.
    pub cert_dir_len: usize,
    /// The CA bundle issued certificates must chain to; NULL: the kubeconfig's CA.
    pub ca_bundle: *const c_char,
    /// Its length.
    pub ca_bundle_len: usize,
    /// Discovery: the apiserver endpoint `https://host:port`; NULL: no discovery.
    pub discovery_server: *const c_char,
    /// Its length.
    pub discovery_server_len: usize,
    /// Discovery: the bootstrap token (required with a discovery server).
    pub discovery_token: *const kubeboot_token,
    /// Discovery: CA pins as text (`sha256:<hex>`).
    pub discovery_pins: *const kubeboot_str,
    /// Number of `discovery_pins`.
    pub discovery_pin_count: usize,
    /// Discovery: trust the JWS-signed CA without a pin.
    pub discovery_unsafe_skip_ca_verification: bool,
    /// Discovery: timeout in seconds (0: 300).
    pub discovery_timeout_seconds: i64,
    /// Also request and keep a serving certificate.
    pub serving: bool,
    /// Serving DNS names.
    pub serving_dns: *const kubeboot_str,
    /// Number of `serving_dns`.
    pub serving_dns_count: usize,
    /// Serving IP addresses as text.
    pub serving_ips: *const kubeboot_str,
    /// Number of `serving_ips`.
    pub serving_ip_count: usize,
    /// Bootstrap wait in seconds (0: 3600).
    pub bootstrap_wait_seconds: i64,
    /// Rotation / serving wait in seconds (0: 900).
    pub rotation_wait_seconds: i64,
    /// `spec.expirationSeconds` of every CSR (0: the signer's default; else ≥ 600).
    pub expiration_seconds: u32,
    /// Poll CSRs with GET instead of watching them.
    pub poll: bool,
    /// `KUBEBOOT_MODE_ONCE` or `KUBEBOOT_MODE_RUN`.
    pub mode: u32,
    /// With `KUBEBOOT_MODE_RUN`: DONE after this many rotations (0: never).
    pub max_rotations: u32,
    /// Rotate the client certificate right away.
    pub rotate_now_client: bool,
    /// Rotate the serving certificate right away.
    pub rotate_now_serving: bool,
    /// The local time's offset from UTC in seconds (data file names).
    pub utc_offset: i32,
    /// Seed of the deadline and backoff jitter (any unpredictable value).
    pub seed: u64,
    /// `KUBEBOOT_LOG_TEXT` (0: `agent=c step=... key=value`) or `KUBEBOOT_LOG_JSON` (one JSON
    /// object per line).
    pub log_format: u32,
    /// `KUBEBOOT_MODE_RUN`: how often to re-read the cluster's CA and keep `<cert_dir>/ca.crt`
    /// current (seconds; 0: the default, 600; negative: never).
    pub ca_refresh_seconds: i64,
    /// Where new client keys are made: `tpm`, or a `pkcs11:` URI of the token with its
    /// `module-path` and `pin-source` (no object); NULL: in software (ENTROPY actions). With a
    /// device every new key is made there (KEY actions), the CSR is signed there, and the cert
    /// dir and the node kubeconfig hold the key's reference instead of the key. Not with
    /// `serving` (`INVALID_CONFIG`); a bad name is `INVALID_KEY_REFERENCE`.
    pub key_device: *const c_char,
    /// Its length.
    pub key_device_len: usize,
}

/// What to do next, from [`kubeboot_agent_poll`]. Pointers point into the agent and stay valid
/// until the next call that takes the agent; strings are not NUL-terminated unless noted; fields
/// not used by `kind` are NULL / 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_agent_action {
    /// `KUBEBOOT_AGENT_READ` ... `KUBEBOOT_AGENT_FAILED`.
    pub kind: u32,
    /// READ, FILE: the file (absolute); HTTP: the request path and query.
    pub path: *const c_char,
    /// Length of `path`.
    pub path_len: usize,
    /// READ: what the file is (`kubeconfig`, `key-cache`, ...; static, NUL-terminated).
    pub role: *const c_char,
    /// READ: the largest size accepted (answer `STORE_FILE_TOO_LARGE` beyond).
    pub max_len: usize,
    /// FILE: `KUBEBOOT_FILE_*`.
    pub file_step: u32,
    /// FILE: the step's name (`write-pair`, ...; static, NUL-terminated).
    pub step_name: *const c_char,
    /// FILE: RECOVER: the store prefix; SWAP_CURRENT: the `-updated.pem` path.
    pub path2: *const c_char,
    /// Length of `path2`.
    pub path2_len: usize,
    /// FILE: SWAP_CURRENT: the target data file.
    pub path3: *const c_char,
    /// Length of `path3`.
    pub path3_len: usize,
    /// FILE: what to write (secret for keys and pairs); HTTP: the request body.
    pub data: *const u8,
    /// Length of `data`.
    pub data_len: usize,
    /// ENTROPY: how many bytes.
    pub entropy_len: usize,
    /// HTTP: changes whenever the connection settings change (keep one client per id).
    pub conn_id: u32,
    /// HTTP: `https://host:port`.
    pub server: *const c_char,
    /// Length of `server`.
    pub server_len: usize,
    /// HTTP: trust exactly these CAs (PEM); NULL with `insecure`.
    pub ca_pem: *const u8,
    /// Length of `ca_pem`.
    pub ca_pem_len: usize,
    /// HTTP: do not verify the server.
    pub insecure: bool,
    /// HTTP: verify the server for this name instead of the URL's host; NULL: the host.
    pub server_name: *const c_char,
    /// Length of `server_name`.
    pub server_name_len: usize,
    /// HTTP: the client certificate chain to present (PEM); NULL: none.
    pub client_cert_pem: *const u8,
    /// Length of `client_cert_pem`.
    pub client_cert_pem_len: usize,
    /// HTTP: its private key (PEM; secret), or the reference of the key a device holds
    /// (`key_holder` says which).
    pub client_key_pem: *const u8,
    /// Length of `client_key_pem`.
    pub client_key_pem_len: usize,
    /// HTTP: `KUBEBOOT_AGENT_REQUEST_*`.
    pub request_kind: u32,
    /// HTTP: `"GET"` / `"POST"` (static, NUL-terminated).
    pub method: *const c_char,
    /// HTTP: the `Authorization` header value (secret), or NULL.
    pub authorization: *const c_char,
    /// Length of `authorization`.
    pub authorization_len: usize,
    /// HTTP: `Content-Type` (static, NUL-terminated) or NULL.
    pub content_type: *const c_char,
    /// HTTP: `Accept` (static, NUL-terminated).
    pub accept: *const c_char,
    /// HTTP: `User-Agent`.
    pub user_agent: *const c_char,
    /// Length of `user_agent`.
    pub user_agent_len: usize,
    /// HTTP: give up at this time (report a transport error); SLEEP: sleep until then.
    pub until: i64,
    /// EVENT, FAILED: the line to print.
    pub line: *const c_char,
    /// Length of `line`.
    pub line_len: usize,
    /// EVENT: the line is progress on the previous one (a long wait, with the time waited): on
    /// a terminal overwrite the previous line with it, in a log print it as any other.
    pub line_update: bool,
    /// EVENT: the credentials are usable and the agent sleeps until the next deadline or is
    /// done: a service is ready (systemd's `READY=1`) at the first such event.
    pub line_ready: bool,
    /// FAILED: why.
    pub result: kubeboot_result,
    /// FAILED: what the agent was doing, and the server's reason and message.
    pub detail: *const c_char,
    /// Length of `detail`.
    pub detail_len: usize,
    /// DONE: the client certificate's notBefore.
    pub client_not_before: i64,
    /// DONE: its notAfter.
    pub client_not_after: i64,
    /// DONE: its rotation deadline.
    pub client_rotation_deadline: i64,
    /// DONE: whether a serving certificate is kept.
    pub has_serving: bool,
    /// DONE: the serving certificate's notAfter.
    pub serving_not_after: i64,
    /// DONE: its rotation deadline.
    pub serving_rotation_deadline: i64,
    /// KEY: `KUBEBOOT_KEY_OP_*`.
    pub key_op: u32,
    /// KEY: who holds the key (`KUBEBOOT_KEY_HOLDER_TPM`, `..._PKCS11`); HTTP with a client
    /// certificate: who holds its key (`..._SOFTWARE`: `client_key_pem` is the key itself).
    pub key_holder: u32,
    /// KEY: PUBLIC, SIGN, DESTROY: the key's reference (PEM: `TSS2 PRIVATE KEY` or
    /// `PKCS#11 PROVIDER URI`; not secret).
    pub key_ref: *const u8,
    /// Length of `key_ref`.
    pub key_ref_len: usize,
    /// KEY: GENERATE: the device (`tpm`, or the token's `pkcs11:` URI).
    pub key_device: *const c_char,
    /// Length of `key_device`.
    pub key_device_len: usize,
    /// KEY: GENERATE: the new key's name (`kubelet-client-<timestamp>`; PKCS#11 `CKA_LABEL`).
    pub key_label: *const c_char,
    /// Length of `key_label`.
    pub key_label_len: usize,
}

impl kubeboot_agent_action {
    fn empty(kind: u32) -> Self {
        kubeboot_agent_action {
            kind,
            path: null(),
            path_len: 0,
            role: null(),
            max_len: 0,
            file_step: 0,
            step_name: null(),
            path2: null(),
            path2_len: 0,
            path3: null(),
            path3_len: 0,
            data: null(),
            data_len: 0,
            entropy_len: 0,
            conn_id: 0,
            server: null(),
            server_len: 0,
            ca_pem: null(),
            ca_pem_len: 0,
            insecure: false,
            server_name: null(),
            server_name_len: 0,
            client_cert_pem: null(),
            client_cert_pem_len: 0,
            client_key_pem: null(),
            client_key_pem_len: 0,
            request_kind: 0,
            method: null(),
            authorization: null(),
            authorization_len: 0,
            content_type: null(),
            accept: null(),
            user_agent: null(),
            user_agent_len: 0,
            until: 0,
            line: null(),
            line_len: 0,
            line_update: false,
            line_ready: false,
            result: kubeboot_result::Ok,
            detail: null(),
            detail_len: 0,
            client_not_before: 0,
            client_not_after: 0,
            client_rotation_deadline: 0,
            has_serving: false,
            serving_not_after: 0,
            serving_rotation_deadline: 0,
            key_op: 0,
            key_holder: 0,
            key_ref: null(),
            key_ref_len: 0,
            key_device: null(),
            key_device_len: 0,
            key_label: null(),
            key_label_len: 0,
        }
    }
}

/// A node agent. Opaque; use from one thread at a time; free with [`kubeboot_agent_free`].
pub struct kubeboot_agent {
    pub(crate) agent: Agent,
}

crate::macros::zero_valid!(kubeboot_agent);

impl crate::macros::Handle for kubeboot_agent {
    #[cfg(not(feature = "std"))]
    fn pool() -> &'static dyn crate::macros::pool::Slots<Self> {
        static POOL: crate::macros::pool::Pool<kubeboot_agent, AGENT_SLOTS> =
            crate::macros::pool::Pool::new();
        &POOL
    }
}

pub(crate) fn str_ptr(s: &str) -> (*const c_char, usize) {
    (s.as_ptr().cast(), s.len())
}

pub(crate) fn bytes_ptr(b: &[u8]) -> (*const u8, usize) {
    if b.is_empty() { (null(), 0) } else { (b.as_ptr(), b.len()) }
}

/// A static name as a NUL-terminated C string.
macro_rules! cstr {
    ($s:expr) => {
        concat!($s, "\0").as_ptr().cast::<c_char>()
    };
}

fn role_name(r: kb::agent::FileRole) -> *const c_char {
    use kb::agent::FileRole as R;
    match r {
        R::Kubeconfig => cstr!("kubeconfig"),
        R::BootstrapKubeconfig => cstr!("bootstrap-kubeconfig"),
        R::ClusterCa => cstr!("certificate-authority"),
        R::CaBundle => cstr!("ca-bundle"),
        R::ClientCertificate => cstr!("client-certificate"),
        R::ClientKey => cstr!("client-key"),
        R::TokenFile => cstr!("token-file"),
        R::KeyCache => cstr!("key-cache"),
        R::ServingPair => cstr!("serving-pair"),
        _ => cstr!("file"),
    }
}

fn file_step(a: &mut kubeboot_agent_action, step: &FileStep<'_>) {
    let (code, name) = match step {
        FileStep::Recover { .. } => (KUBEBOOT_FILE_RECOVER, cstr!("recover")),
        FileStep::CreateDir { .. } => (KUBEBOOT_FILE_CREATE_DIR, cstr!("create-dir")),
        FileStep::WriteKeyCache { .. } => (KUBEBOOT_FILE_WRITE_KEY_CACHE, cstr!("write-key-cache")),
        FileStep::WritePair { .. } => (KUBEBOOT_FILE_WRITE_PAIR, cstr!("write-pair")),
        FileStep::SwapCurrent { .. } => (KUBEBOOT_FILE_SWAP_CURRENT, cstr!("swap-current")),
        FileStep::WriteKubeconfig { .. } => {
            (KUBEBOOT_FILE_WRITE_KUBECONFIG, cstr!("write-kubeconfig"))
        }
        FileStep::WriteBootstrapKubeconfig { .. } => {
            (KUBEBOOT_FILE_WRITE_BOOTSTRAP_KUBECONFIG, cstr!("write-bootstrap-kubeconfig"))
        }
        FileStep::RemoveKeyCache { .. } => {
            (KUBEBOOT_FILE_REMOVE_KEY_CACHE, cstr!("remove-key-cache"))
        }
        FileStep::RemoveDir { .. } => (KUBEBOOT_FILE_REMOVE_DIR, cstr!("remove-dir")),
        FileStep::WriteCa { .. } => (KUBEBOOT_FILE_WRITE_CA, cstr!("write-ca")),
        _ => (u32::MAX, cstr!("unknown")),
    };
    a.file_step = code;
    a.step_name = name;
    (a.path, a.path_len) = str_ptr(step.path());
    match *step {
        FileStep::Recover { prefix, .. } => (a.path2, a.path2_len) = str_ptr(prefix),
        FileStep::SwapCurrent { updated, target, .. } => {
            (a.path2, a.path2_len) = str_ptr(updated);
            (a.path3, a.path3_len) = str_ptr(target);
        }
        FileStep::WriteKeyCache { pem: data, .. }
        | FileStep::WritePair { content: data, .. }
        | FileStep::WriteKubeconfig { content: data, .. }
        | FileStep::WriteCa { content: data, .. }
        | FileStep::WriteBootstrapKubeconfig { content: data, .. } => {
            (a.data, a.data_len) = bytes_ptr(data);
        }
        _ => {}
    }
}

/// Create an agent from `cfg` (copied; pointers are only read during the call).
///
/// Errors: `NULL_PARAMETER`, `INVALID_UTF8`; `INVALID_CONFIG` (an empty or odd front-end name, a
/// relative working dir, discovery without a bootstrap kubeconfig, an unknown mode);
/// `INVALID_NODE_NAME`, the serving SANs' errors, `INVALID_PIN`, `PIN_MISMATCH` (discovery with
/// no pin and no unsafe skip), `INVALID_EXPIRATION_SECONDS`, `TOO_LARGE` (a path over 1024
/// bytes), `INVALID_KEY_REFERENCE` (a `key_device` that is neither `tpm` nor a token's
/// `pkcs11:` URI with `token=` and `module-path=` and no object), `INVALID_CONFIG` (a
/// `key_device` with `serving`); without `std`, `UNKNOWN_ERROR` when [`AGENT_SLOTS`] agents are
/// live.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_new(
    cfg: *const kubeboot_agent_config,
    out: *mut *mut kubeboot_agent,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let c = try_ref!(cfg);
        let front_end = try_str!(c.front_end, c.front_end_len);
        let working_dir = try_str!(c.working_dir, c.working_dir_len);
        let kubeconfig = try_str!(c.kubeconfig, c.kubeconfig_len);
        let cert_dir = try_str!(c.cert_dir, c.cert_dir_len);
        let node_name = try_opt_str!(c.node_name, c.node_name_len);
        let bootstrap = try_opt_str!(c.bootstrap_kubeconfig, c.bootstrap_kubeconfig_len);
        let ca_bundle = try_opt_str!(c.ca_bundle, c.ca_bundle_len);
        let discovery_server = try_opt_str!(c.discovery_server, c.discovery_server_len);
        let key_device = try_opt_str!(c.key_device, c.key_device_len);
        let mut pin_text = heapless::Vec::new();
        if let Err(e) = strs(try_slice!(c.discovery_pins, c.discovery_pin_count), &mut pin_text) {
            return if e == kubeboot_result::TooManySans { kubeboot_result::InvalidPin } else { e };
        }
        let mut pins: heapless::Vec<CaPin, { kb::discovery::MAX_PINS }> = heapless::Vec::new();
        for p in pin_text {
            let pin = try_kb!(CaPin::parse(p));
            if pins.push(pin).is_err() {
                return kubeboot_result::InvalidPin;
            }
        }
        let serving = if c.serving {
            match Sans::read(c.serving_dns, c.serving_dns_count, c.serving_ips, c.serving_ip_count) {
                Ok(sans) => Some(sans),
                Err(e) => return e,
            }
        } else {
            None
        };
        let mut config = Config::new(front_end, working_dir, kubeconfig, cert_dir);
        config.node_name = node_name;
        config.bootstrap_kubeconfig = bootstrap;
        config.ca_bundle = ca_bundle;
        config.discovery = match discovery_server {
            Some(server) => Some(DiscoveryConfig {
                server,
                token: &try_ref!(c.discovery_token).inner,
                pins: &pins,
                allow_unpinned: c.discovery_unsafe_skip_ca_verification,
                timeout_secs: if c.discovery_timeout_seconds > 0 {
                    c.discovery_timeout_seconds
                } else {
                    kb::discovery::DEFAULT_TIMEOUT_SECS
                },
            }),
            None => None,
        };
        config.serving = serving.as_ref().map(|s| Serving { dns: &s.dns, ips: &s.ips });
        if c.bootstrap_wait_seconds > 0 {
            config.bootstrap_wait_secs = c.bootstrap_wait_seconds;
        }
        if c.rotation_wait_seconds > 0 {
            config.rotation_wait_secs = c.rotation_wait_seconds;
        }
        config.expiration_seconds = (c.expiration_seconds != 0).then_some(c.expiration_seconds);
        config.watch = !c.poll;
        config.mode = match c.mode {
            KUBEBOOT_MODE_ONCE => Mode::Once,
            KUBEBOOT_MODE_RUN => {
                Mode::Run { max_rotations: (c.max_rotations != 0).then_some(c.max_rotations) }
            }
            _ => return kubeboot_result::InvalidConfig,
        };
        config.rotate_now = RotateNow { client: c.rotate_now_client, serving: c.rotate_now_serving };
        config.utc_offset = c.utc_offset;
        config.seed = c.seed;
        config.log_format = match c.log_format {
            KUBEBOOT_LOG_TEXT => kb::agent::LogFormat::Text,
            KUBEBOOT_LOG_JSON => kb::agent::LogFormat::Json,
            _ => return kubeboot_result::InvalidConfig,
        };
        config.ca_refresh_secs = match c.ca_refresh_seconds {
            0 => kb::agent::DEFAULT_CA_REFRESH_SECS,
            n => n.max(0),
        };
        config.key_device = key_device;
        config.verifier = verifier();
        new_in_place(out, |a| {
            match a.agent.start(&config) {
                Ok(()) => kubeboot_result::Ok,
                Err(e) => e.into(),
            }
        })
    }}
}

/// Free an agent (its secrets are wiped). NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_free(agent: *mut kubeboot_agent) {
    ffi_panic_boundary! { (), {
        // SAFETY: the caller passes NULL or a handle from `kubeboot_agent_new` not yet freed.
        unsafe { free_box(agent) }
    }}
}

/// What to do now: writes `*out` (see [`kubeboot_agent_action`]) and returns OK, also for
/// `KUBEBOOT_AGENT_FAILED` (whose `result` says why). Every action but SLEEP, EVENT, DONE and
/// FAILED must be answered before the next poll; a poll with one unanswered counts it as failed.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_poll(
    agent: *mut kubeboot_agent,
    now: i64,
    out: *mut kubeboot_agent_action,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let a = try_mut!(agent);
        let action = match a.agent.poll(now) {
            Action::Read(r) => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_READ);
                (x.path, x.path_len) = str_ptr(r.path);
                x.role = role_name(r.role);
                x.max_len = r.max_len;
                x
            }
            Action::File(step) => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_FILE);
                file_step(&mut x, &step);
                x
            }
            Action::Entropy { len } => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_ENTROPY);
                x.entropy_len = len;
                x
            }
            Action::Http(r) => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_HTTP);
                let c = r.connection;
                x.conn_id = c.id;
                (x.server, x.server_len) = str_ptr(c.server);
                if let Some(ca) = c.ca_pem {
                    (x.ca_pem, x.ca_pem_len) = bytes_ptr(ca);
                }
                x.insecure = c.insecure;
                if let Some(n) = c.server_name {
                    (x.server_name, x.server_name_len) = str_ptr(n);
                }
                if let Some(cc) = c.client_certificate {
                    (x.client_cert_pem, x.client_cert_pem_len) = bytes_ptr(cc.chain_pem);
                    (x.client_key_pem, x.client_key_pem_len) = bytes_ptr(cc.key_pem);
                    x.key_holder = crate::device::holder_of(cc.key_pem);
                }
                x.request_kind = match r.kind {
                    RequestKind::Healthz => KUBEBOOT_AGENT_REQUEST_HEALTHZ,
                    RequestKind::ClusterInfo => KUBEBOOT_AGENT_REQUEST_CLUSTER_INFO,
                    RequestKind::Create => KUBEBOOT_AGENT_REQUEST_CREATE,
                    RequestKind::Get => KUBEBOOT_AGENT_REQUEST_GET,
                    RequestKind::TrustBundles => KUBEBOOT_AGENT_REQUEST_TRUST_BUNDLES,
                    RequestKind::CaProbe => KUBEBOOT_AGENT_REQUEST_CA_PROBE,
                    RequestKind::Watch => KUBEBOOT_AGENT_REQUEST_WATCH,
                    _ => u32::MAX,
                };
                x.method = match r.method {
                    Method::Get => cstr!("GET"),
                    Method::Post => cstr!("POST"),
                };
                (x.path, x.path_len) = str_ptr(r.path);
                if let Some(h) = r.authorization {
                    (x.authorization, x.authorization_len) = str_ptr(h);
                }
                if r.content_type.is_some() {
                    x.content_type = cstr!("application/json");
                }
                x.accept = if r.accept == "application/json" { cstr!("application/json") } else { cstr!("*/*") };
                (x.data, x.data_len) = bytes_ptr(r.body);
                (x.user_agent, x.user_agent_len) = str_ptr(r.user_agent);
                x.until = r.give_up_at;
                x
            }
            Action::Key(op) => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_KEY);
                crate::device::key_action(&mut x, &op);
                x
            }
            Action::Sleep { until } => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_SLEEP);
                x.until = until;
                x
            }
            Action::Event(e) => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_EVENT);
                (x.line, x.line_len) = str_ptr(e.line);
                x.line_update = e.update;
                x.line_ready = e.ready;
                x
            }
            Action::Done(o) => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_DONE);
                if let Some(c) = o.client {
                    x.client_not_before = c.not_before;
                    x.client_not_after = c.not_after;
                    x.client_rotation_deadline = c.rotation_deadline;
                }
                if let Some(s) = o.serving {
                    x.has_serving = true;
                    x.serving_not_after = s.not_after;
                    x.serving_rotation_deadline = s.rotation_deadline;
                }
                x
            }
            Action::Failed(f) => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_FAILED);
                x.result = f.error.into();
                (x.detail, x.detail_len) = str_ptr(f.detail);
                (x.line, x.line_len) = str_ptr(f.line);
                x
            }
            _ => {
                let mut x = kubeboot_agent_action::empty(KUBEBOOT_AGENT_FAILED);
                x.result = kubeboot_result::InvalidState;
                x
            }
        };
        *out = action;
        kubeboot_result::Ok
    }}
}

/// A front-end's reason (UTF-8, cut at 256 bytes on a character boundary; `otherwise` when it is
/// not UTF-8) for the agent's event.
pub(crate) fn why_text(bytes: &[u8], otherwise: &str) -> heapless::String<256> {
    let mut text = heapless::String::new();
    for c in core::str::from_utf8(bytes).unwrap_or(otherwise).chars() {
        if text.push(c).is_err() {
            break;
        }
    }
    text
}

/// A store code from a C result (anything else is an I/O error).
fn store_kind(result: u32) -> StoreErrorKind {
    StoreErrorKind::from_code(result).unwrap_or(StoreErrorKind::Io)
}

/// The outcome of a READ: `result` OK with the file's bytes, or a store code
/// (`KUBEBOOT_RESULT_STORE_NOT_FOUND`, `..._PERMISSION_DENIED`, `..._FILE_TOO_LARGE`,
/// `..._IO`; any other code counts as `..._IO`).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_read(
    agent: *mut kubeboot_agent,
    now: i64,
    result: u32,
    data: *const u8,
    len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        if result == kubeboot_result::Ok as u32 {
            let data = try_slice!(data, len);
            a.agent.on_read(now, Ok(data));
        } else {
            a.agent.on_read(now, Err(store_kind(result)));
        }
        kubeboot_result::Ok
    }}
}

/// The outcome of a FILE step: OK, or a store code (as for [`kubeboot_agent_on_read`]).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_file_done(
    agent: *mut kubeboot_agent,
    now: i64,
    result: u32,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let r = if result == kubeboot_result::Ok as u32 { Ok(()) } else { Err(store_kind(result)) };
        a.agent.on_file_done(now, r);
        kubeboot_result::Ok
    }}
}

/// Entropy for an ENTROPY action (`len` ≥ the action's `entropy_len`).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_entropy(
    agent: *mut kubeboot_agent,
    data: *const u8,
    len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let data = try_slice!(data, len);
        a.agent.on_entropy(data);
        kubeboot_result::Ok
    }}
}

/// The whole response to an HTTP action (for a watch that could not be streamed, the whole
/// stream).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_http_response(
    agent: *mut kubeboot_agent,
    now: i64,
    status: u16,
    body: *const u8,
    body_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let body = try_slice!(body, body_len);
        a.agent.on_http_response(now, status, body);
        kubeboot_result::Ok
    }}
}

/// [`kubeboot_agent_on_http_response`] with the response's `Retry-After` header: its raw value
/// (`retry_after`, `retry_after_len` bytes, not NUL-terminated), or NULL with 0 when the response
/// has none. A 429 or 5xx with a `Retry-After` of delta-seconds is retried when the server asked,
/// with jitter (the agent decides; its `step=retry` line says `reason=server-asked`).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_http_response_with_retry_after(
    agent: *mut kubeboot_agent,
    now: i64,
    status: u16,
    retry_after: *const c_char,
    retry_after_len: usize,
    body: *const u8,
    body_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let headers = Headers::retry_after(try_opt_slice!(retry_after.cast::<u8>(), retry_after_len));
        let body = try_slice!(body, body_len);
        a.agent.on_http_response_with(now, status, &headers, body);
        kubeboot_result::Ok
    }}
}

/// A chunk of a watch response with status 200. `*keep_reading` false: stop reading, drop the
/// connection, and do not call [`kubeboot_agent_on_stream_end`].
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_stream_data(
    agent: *mut kubeboot_agent,
    now: i64,
    chunk: *const u8,
    chunk_len: usize,
    keep_reading: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let keep = try_mut!(keep_reading);
        let chunk = try_slice!(chunk, chunk_len);
        *keep = a.agent.on_stream_data(now, chunk) == StreamControl::Continue;
        kubeboot_result::Ok
    }}
}

/// The watch stream ended (server timeout, closed connection, or a broken read).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_stream_end(
    agent: *mut kubeboot_agent,
    now: i64,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        a.agent.on_stream_end(now);
        kubeboot_result::Ok
    }}
}

/// The HTTP action could not be sent, or no (complete) response arrived. `why` (UTF-8, may be
/// NULL with 0) is printed in the agent's event; never put a secret in it.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_transport_error(
    agent: *mut kubeboot_agent,
    now: i64,
    why: *const c_char,
    why_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let text = why_text(try_slice!(why.cast::<u8>(), why_len), "transport error");
        a.agent.on_transport_error(now, &text);
        kubeboot_result::Ok
    }}
}

/// End a sleep between attempts now (a daemon's SIGHUP): the next poll starts over, reading
/// every file again (`step=wake`). `*woken`: whether it was sleeping between attempts (an
/// attempt under way is not disturbed).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_wake(
    agent: *mut kubeboot_agent,
    woken: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let woken = try_mut!(woken);
        *woken = a.agent.wake();
        kubeboot_result::Ok
    }}
}

/// Update the local time's offset from UTC (seconds east), used to name data files.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_set_utc_offset(
    agent: *mut kubeboot_agent,
    utc_offset: i32,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        a.agent.set_utc_offset(utc_offset);
        kubeboot_result::Ok
    }}
}

/// Perform the outstanding READ or FILE action with kubeboot's own crash-safe file store and
/// answer it (what `kubeboot::store::FileSteps` does for the Rust CLI). Returns OK, or
/// `INVALID_STATE` when no READ or FILE action is outstanding. A failed file operation is
/// reported to the agent (it decides), and its text — path and OS error — is written to
/// `buf` (not NUL-terminated; `*out_len` = 0 when it succeeded) for printing.
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_perform_file_action(
    agent: *mut kubeboot_agent,
    now: i64,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let steps = kb::store::FileSteps::new();
        match steps.perform(&mut a.agent, now) {
            None => kubeboot_result::InvalidState,
            Some(Ok(())) => {
                *out_len = 0;
                kubeboot_result::Ok
            }
            Some(Err(e)) => {
                let text = alloc::format!("{e}");
                let n = text.len().min(buf.len());
                let cut = (0..=n).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
                if let (Some(dst), Some(src)) = (buf.get_mut(..cut), text.as_bytes().get(..cut)) {
                    dst.copy_from_slice(src);
                }
                *out_len = cut;
                kubeboot_result::Ok
            }
        }
    }}
}

/// Answer the outstanding ENTROPY action from the operating system's RNG. Returns OK, or
/// `INVALID_STATE` when none is outstanding, `INSUFFICIENT_ENTROPY` when the RNG fails.
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_perform_entropy(agent: *mut kubeboot_agent) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        if !a.agent.entropy_outstanding() {
            return kubeboot_result::InvalidState;
        }
        let mut bytes = zeroize::Zeroizing::new([0u8; kb::key::ENTROPY_LEN]);
        if getrandom::fill(&mut bytes[..]).is_err() {
            return kubeboot_result::InsufficientEntropy;
        }
        a.agent.on_entropy(&bytes[..]);
        kubeboot_result::Ok
    }}
}
