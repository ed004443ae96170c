//! The agent's certificate metrics through the C ABI: copied out of an agent as data, rendered
//! as the kubelet's Prometheus text (`kubeboot::metrics`), the textfile name checked.

use core::ffi::c_char;

use crate::agent::kubeboot_agent;
use crate::error::kubeboot_result;

/// Bytes that always hold [`kubeboot_metrics_text`]'s output.
pub const KUBEBOOT_METRICS_TEXT_CAP: usize = 4096;
const _: () = assert!(KUBEBOOT_METRICS_TEXT_CAP == kb::metrics::RENDER_CAP);
/// How often a front-end rewrites a metrics textfile while the agent sleeps, seconds.
pub const KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS: i64 = 60;
const _: () = assert!(KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS == kb::metrics::TEXTFILE_REFRESH_SECS);

/// The agent's certificate metrics, as data ([`kubeboot_agent_metrics`]): a front-end that
/// serves them from another thread copies them out after each step and renders the copy with
/// [`kubeboot_metrics_text`] when it is scraped.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kubeboot_metrics {
    /// Whether a usable client certificate was found; then its notAfter (unix seconds).
    pub has_client: bool,
    /// The client certificate's notAfter.
    pub client_not_after: i64,
    /// Whether a usable serving certificate was found; then its notAfter.
    pub has_serving: bool,
    /// The serving certificate's notAfter.
    pub serving_not_after: i64,
    /// Failed attempts at a client certificate (rotation or bootstrap).
    pub client_renew_errors: u64,
    /// Failed attempts at a serving certificate.
    pub serving_renew_errors: u64,
    /// Replaced serving certificates' lifetimes, per bucket (not cumulative; bounds 60 s, 1 h,
    /// 4 h, 1 d, 1 w, 30 d, 90 d, 180 d, 360 d, 1440 d, then above).
    pub serving_rotation_buckets: [u64; 11],
    /// Their sum (seconds).
    pub serving_rotation_sum: u64,
    /// Their number.
    pub serving_rotation_count: u64,
}

impl From<kb::metrics::Metrics> for kubeboot_metrics {
    fn from(m: kb::metrics::Metrics) -> Self {
        kubeboot_metrics {
            has_client: m.client_not_after.is_some(),
            client_not_after: m.client_not_after.unwrap_or(0),
            has_serving: m.serving_not_after.is_some(),
            serving_not_after: m.serving_not_after.unwrap_or(0),
            client_renew_errors: m.client_renew_errors,
            serving_renew_errors: m.serving_renew_errors,
            serving_rotation_buckets: m.serving_rotation.buckets,
            serving_rotation_sum: m.serving_rotation.sum,
            serving_rotation_count: m.serving_rotation.count,
        }
    }
}

impl From<&kubeboot_metrics> for kb::metrics::Metrics {
    fn from(m: &kubeboot_metrics) -> Self {
        kb::metrics::Metrics {
            client_not_after: m.has_client.then_some(m.client_not_after),
            serving_not_after: m.has_serving.then_some(m.serving_not_after),
            client_renew_errors: m.client_renew_errors,
            serving_renew_errors: m.serving_renew_errors,
            serving_rotation: kb::metrics::Histogram {
                buckets: m.serving_rotation_buckets,
                sum: m.serving_rotation_sum,
                count: m.serving_rotation_count,
            },
        }
    }
}

/// Copy the agent's certificate metrics (as of its last step) into `*out`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_metrics(
    agent: *const kubeboot_agent,
    out: *mut kubeboot_metrics,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_ref!(agent);
        let out = try_mut!(out);
        *out = a.agent.metrics().into();
        kubeboot_result::Ok
    }}
}

/// `metrics` at `now` (unix seconds) in the Prometheus text exposition format 0.0.4, with the
/// kubelet's names and meaning (`kubelet_certificate_manager_client_ttl_seconds`,
/// `..._client_expiration_renew_errors`, `..._server_ttl_seconds`, `..._server_rotation_seconds`,
/// `kubelet_server_expiration_renew_errors`; see `kubeboot::metrics`), to serve on an HTTP
/// endpoint or write for node_exporter's textfile collector. Render it when it is read: the
/// TTLs are computed at `now`. [`KUBEBOOT_METRICS_TEXT_CAP`] bytes always suffice; a shorter
/// `buf` is `INSUFFICIENT_SIZE` with the size in `*out_len`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_metrics_text(
    metrics: *const kubeboot_metrics,
    now: i64,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let m: kb::metrics::Metrics = try_ref!(metrics).into();
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        crate::macros::write_with(buf, out_len, |b| kb::metrics::render(&m, now, b))
    }}
}

/// OK when `path` can be a node_exporter textfile (it ends in `.prom`, the only files the
/// collector reads); `INVALID_CONFIG` otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_metrics_check_textfile(
    path: *const c_char,
    len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let p = try_str!(path, len);
        try_kb!(kb::metrics::check_textfile(p));
        kubeboot_result::Ok
    }}
}
