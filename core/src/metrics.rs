//! The node agent's certificate metrics, with the kubelet's names and meaning, in the Prometheus
//! text exposition format (version 0.0.4), so that the dashboards and alerts written for the
//! kubelet work for a kubeboot node unchanged.
//!
//! The kubelet (v1.35, `pkg/kubelet/certificate/kubelet.go`, `cmd/kubelet/app/server.go`, and
//! client-go's `util/certificate/certificate_manager.go`, which updates them) exports:
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `kubelet_certificate_manager_client_ttl_seconds` | gauge | seconds until the client certificate's notAfter, truncated; `+Inf` when there is no usable one |
//! | `kubelet_certificate_manager_client_expiration_renew_errors` | counter | failed attempts at a new client certificate |
//! | `kubelet_certificate_manager_server_ttl_seconds` | gauge | the same for the serving certificate |
//! | `kubelet_certificate_manager_server_rotation_seconds` | histogram | at each serving rotation, how long the previous certificate had lived (now − its notBefore); buckets 1 min, 1 h, 4 h, 1 d, 1 w, 30 d, 90 d, 180 d, 360 d, 1440 d |
//! | `kubelet_server_expiration_renew_errors` | counter | failed attempts at a new serving certificate |
//!
//! The gauges are computed when the text is rendered (at scrape time), from the notAfter of the
//! certificate the agent last found usable: a certificate that expires while the agent sleeps
//! shows a negative TTL, one the agent found unusable (expired, invalid, absent) shows `+Inf`,
//! as client-go's `Current()` returns no certificate then. kubeboot counts a failed bootstrap
//! as a client renewal error too (the kubelet bootstraps before its metrics exist; for a daemon
//! that falls back to the bootstrap token, a failed bootstrap is a failed renewal).
//!
//! [`Metrics`] is plain data (`Copy`): the agent updates it ([`crate::agent::Agent::metrics`]),
//! a front-end copies it out and renders it wherever it serves it (an HTTP endpoint, a
//! node_exporter textfile). [`render`] writes into a caller buffer, as every writer here.

use crate::error::Result;
use crate::out::{Sink, put_decimal, write_measured};

/// The upper bounds of `kubelet_certificate_manager_server_rotation_seconds`'s buckets (the
/// kubelet's), seconds.
pub const ROTATION_BUCKETS: [u64; 10] =
    [60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000];

/// How often a front-end rewrites a metrics textfile while the agent sleeps (its TTLs are as of
/// the write; node_exporter reads it at every scrape), seconds.
pub const TEXTFILE_REFRESH_SECS: i64 = 60;

/// Whether `path` can be a node_exporter textfile: the collector reads only `*.prom` files, so
/// any other name would be ignored without a word ([`crate::Error::InvalidConfig`]).
pub fn check_textfile(path: &str) -> Result<()> {
    let name = path.rsplit('/').next().unwrap_or("");
    match name.strip_suffix(".prom") {
        Some(stem) if !stem.is_empty() => Ok(()),
        _ => Err(crate::Error::InvalidConfig),
    }
}

/// A size that always holds [`render`]'s output (its longest form is under 3 KiB).
pub const RENDER_CAP: usize = 4096;

/// A histogram with [`ROTATION_BUCKETS`]: non-cumulative counts per bucket (the last one is
/// `+Inf`), the sum and the count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Observations in `(bound[i-1], bound[i]]`; index 10 is above the last bound.
    pub buckets: [u64; ROTATION_BUCKETS.len() + 1],
    /// The sum of the observations (whole seconds).
    pub sum: u64,
    /// The number of observations.
    pub count: u64,
}

impl Histogram {
    /// No observation.
    pub const fn new() -> Self {
        Histogram { buckets: [0; ROTATION_BUCKETS.len() + 1], sum: 0, count: 0 }
    }

    /// Record one observation (negative values count as 0).
    pub fn observe(&mut self, seconds: i64) {
        let v = u64::try_from(seconds).unwrap_or(0);
        let i = ROTATION_BUCKETS.iter().position(|&b| v <= b).unwrap_or(ROTATION_BUCKETS.len());
        if let Some(b) = self.buckets.get_mut(i) {
            *b = b.saturating_add(1);
        }
        self.sum = self.sum.saturating_add(v);
        self.count = self.count.saturating_add(1);
    }
}

/// The agent's metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    /// The notAfter (unix seconds) of the client certificate last found usable; `None`: none.
    pub client_not_after: Option<i64>,
    /// The same for the serving certificate.
    pub serving_not_after: Option<i64>,
    /// Failed attempts at a client certificate (rotation or bootstrap).
    pub client_renew_errors: u64,
    /// Failed attempts at a serving certificate.
    pub serving_renew_errors: u64,
    /// Lifetimes of replaced serving certificates.
    pub serving_rotation: Histogram,
}

impl Metrics {
    /// No certificate, nothing counted (`Default`, for `const` contexts).
    pub const fn new() -> Self {
        Metrics {
            client_not_after: None,
            serving_not_after: None,
            client_renew_errors: 0,
            serving_renew_errors: 0,
            serving_rotation: Histogram::new(),
        }
    }
}

/// Write the exposition text of `m` at `now` (unix seconds) into `buf`; returns its length, or
/// [`crate::Error::BufferTooSmall`] with the size needed ([`RENDER_CAP`] always suffices).
pub fn render(m: &Metrics, now: i64, buf: &mut [u8]) -> Result<usize> {
    write_measured(buf, |s| {
        emit(s, m, now);
        Ok(())
    })
}

/// `# HELP <name> <help...>` and `# TYPE <name> <kind>`.
fn head(s: &mut dyn Sink, name: &str, kind: &str, help: &[&str]) {
    for part in ["# HELP ", name, " "] {
        s.put(part.as_bytes());
    }
    for part in help {
        s.put(part.as_bytes());
    }
    for part in ["\n# TYPE ", name, " ", kind, "\n"] {
        s.put(part.as_bytes());
    }
}

/// `<name><suffix> <value>`.
fn sample(s: &mut dyn Sink, name: &str, suffix: &str, value: impl FnOnce(&mut dyn Sink)) {
    s.put(name.as_bytes());
    s.put(suffix.as_bytes());
    s.put(b" ");
    value(s);
    s.put(b"\n");
}

fn put_signed(s: &mut dyn Sink, v: i64) {
    if v < 0 {
        s.put(b"-");
    }
    put_decimal(s, v.unsigned_abs());
}

fn ttl(s: &mut dyn Sink, name: &str, which: &str, not_after: Option<i64>, now: i64) {
    let help = [
        "[ALPHA] Seconds until the node's ",
        which,
        " certificate expires (negative once expired), +Inf when it has no usable one.",
    ];
    head(s, name, "gauge", &help);
    sample(s, name, "", |s| match not_after {
        Some(t) => put_signed(s, t.saturating_sub(now)),
        None => s.put(b"+Inf"),
    });
}

fn counter(s: &mut dyn Sink, name: &str, which: &str, v: u64) {
    head(s, name, "counter", &["[ALPHA] Failed attempts at a new ", which, " certificate."]);
    sample(s, name, "", |s| put_decimal(s, v));
}

fn emit(s: &mut dyn Sink, m: &Metrics, now: i64) {
    counter(
        s,
        "kubelet_certificate_manager_client_expiration_renew_errors",
        "client",
        m.client_renew_errors,
    );
    ttl(s, "kubelet_certificate_manager_client_ttl_seconds", "client", m.client_not_after, now);
    let h = "kubelet_certificate_manager_server_rotation_seconds";
    let help = "[ALPHA] At each serving certificate rotation, the seconds the previous certificate \
                had lived.";
    head(s, h, "histogram", &[help]);
    // `<h>_bucket{le="<bound>"} <cumulative count>`; `None`: the `+Inf` bucket.
    let bucket = |s: &mut dyn Sink, le: Option<u64>, n: u64| {
        s.put(h.as_bytes());
        s.put(b"_bucket{le=\"");
        match le {
            Some(b) => put_decimal(s, b),
            None => s.put(b"+Inf"),
        }
        s.put(b"\"} ");
        put_decimal(s, n);
        s.put(b"\n");
    };
    let mut cumulative = 0u64;
    for (bound, n) in ROTATION_BUCKETS.iter().zip(m.serving_rotation.buckets) {
        cumulative = cumulative.saturating_add(n);
        bucket(s, Some(*bound), cumulative);
    }
    bucket(s, None, m.serving_rotation.count);
    sample(s, h, "_sum", |s| put_decimal(s, m.serving_rotation.sum));
    sample(s, h, "_count", |s| put_decimal(s, m.serving_rotation.count));
    ttl(s, "kubelet_certificate_manager_server_ttl_seconds", "serving", m.serving_not_after, now);
    counter(s, "kubelet_server_expiration_renew_errors", "serving", m.serving_renew_errors);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn text(m: &Metrics, now: i64) -> heapless::String<RENDER_CAP> {
        let mut buf = [0u8; RENDER_CAP];
        let n = render(m, now, &mut buf).unwrap();
        heapless::String::try_from(core::str::from_utf8(&buf[..n]).unwrap()).unwrap()
    }

    fn value<'a>(t: &'a str, series: &str) -> &'a str {
        t.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("{series} missing from {t}"))
    }

    #[test]
    fn textfiles_end_in_prom() {
        assert_eq!(check_textfile("/var/lib/node_exporter/kubeboot.prom"), Ok(()));
        assert_eq!(check_textfile("kubeboot.prom"), Ok(()));
        for bad in ["kubeboot.txt", "/x/.prom", "/x.prom/", "", "kubeboot.prom.tmp"] {
            assert_eq!(check_textfile(bad), Err(Error::InvalidConfig), "{bad}");
        }
    }

    #[test]
    fn fresh_agent_has_no_certificate() {
        let t = text(&Metrics::default(), 1000);
        assert_eq!(value(&t, "kubelet_certificate_manager_client_ttl_seconds"), "+Inf");
        assert_eq!(value(&t, "kubelet_certificate_manager_server_ttl_seconds"), "+Inf");
        assert_eq!(value(&t, "kubelet_certificate_manager_client_expiration_renew_errors"), "0");
        assert_eq!(value(&t, "kubelet_server_expiration_renew_errors"), "0");
        assert_eq!(
            value(&t, "kubelet_certificate_manager_server_rotation_seconds_bucket{le=\"+Inf\"}"),
            "0"
        );
        assert!(
            t.contains("# TYPE kubelet_certificate_manager_server_rotation_seconds histogram\n")
        );
    }

    #[test]
    fn ttl_is_computed_at_render_and_goes_negative() {
        let m = Metrics {
            client_not_after: Some(5000),
            serving_not_after: Some(400),
            ..Metrics::default()
        };
        let t = text(&m, 1000);
        assert_eq!(value(&t, "kubelet_certificate_manager_client_ttl_seconds"), "4000");
        assert_eq!(value(&t, "kubelet_certificate_manager_server_ttl_seconds"), "-600");
    }

    #[test]
    fn histogram_buckets_are_cumulative_with_upper_bounds_inclusive() {
        let mut m = Metrics::default();
        for v in [60, 61, 3600, 200_000_000, -5] {
            m.serving_rotation.observe(v);
        }
        let t = text(&m, 0);
        let b = |le: &str| {
            let series = alloc_free_series(le);
            value(&t, &series).parse::<u64>().unwrap()
        };
        assert_eq!(b("60"), 2); // -5 (as 0) and 60
        assert_eq!(b("3600"), 4);
        assert_eq!(b("124416000"), 4);
        assert_eq!(b("+Inf"), 5);
        assert_eq!(value(&t, "kubelet_certificate_manager_server_rotation_seconds_count"), "5");
        assert_eq!(
            value(&t, "kubelet_certificate_manager_server_rotation_seconds_sum"),
            "200003721"
        );
    }

    fn alloc_free_series(le: &str) -> heapless::String<96> {
        let mut s = heapless::String::new();
        for p in ["kubelet_certificate_manager_server_rotation_seconds_bucket{le=\"", le, "\"}"] {
            s.push_str(p).unwrap();
        }
        s
    }

    #[test]
    fn longest_text_fits_render_cap_and_short_buffers_are_refused() {
        let mut m = Metrics {
            client_not_after: Some(i64::MIN),
            serving_not_after: Some(i64::MIN),
            client_renew_errors: u64::MAX,
            serving_renew_errors: u64::MAX,
            ..Metrics::default()
        };
        m.serving_rotation = Histogram { buckets: [u64::MAX; 11], sum: u64::MAX, count: u64::MAX };
        let mut buf = [0u8; RENDER_CAP];
        let n = render(&m, i64::MAX, &mut buf).unwrap();
        assert!(n < 3 * 1024, "{n}");
        let mut short = [0u8; 100];
        assert_eq!(render(&m, i64::MAX, &mut short), Err(Error::BufferTooSmall { needed: n }));
        assert_eq!(short, [0u8; 100]);
    }
}
