//! The approver's metrics (Prometheus / OpenMetrics text through `prometheus-client`) and the
//! HTTP endpoints: `/metrics`, `/healthz` (the process answers), `/readyz` (the CSR watch has
//! listed once).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// What a decision was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The Approved condition was written.
    Approved,
    /// The Denied condition was written.
    Denied,
    /// Left pending for a person (`--skip-deny-step`, or no Node after `--node-wait`).
    Pending,
    /// `--dry-run`: it would have been approved.
    WouldApprove,
    /// `--dry-run`: it would have been denied (or left pending).
    WouldDeny,
}

impl Outcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Approved => "approved",
            Outcome::Denied => "denied",
            Outcome::Pending => "pending",
            Outcome::WouldApprove => "would-approve",
            Outcome::WouldDeny => "would-deny",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    signer: String,
    result: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    kind: String,
}

/// The approver's metrics.
pub struct Metrics {
    registry: Registry,
    decisions: Family<DecisionLabels, Counter>,
    latency: Family<ResultLabels, Histogram>,
    errors: Family<ErrorLabels, Counter>,
    leader: Gauge,
    ready: AtomicBool,
}

/// Buckets of the creation-to-decision histogram, in seconds.
const LATENCY_BUCKETS: [f64; 14] =
    [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 3600.0];

impl Metrics {
    /// Fresh metrics, registered.
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("kubeboot_approver");
        let decisions = Family::<DecisionLabels, Counter>::default();
        registry.register(
            "decisions",
            "CSR decisions by signer, result (approved, denied, pending, would-approve, would-deny) and reason (the catalogue's name; ok when approved)",
            decisions.clone(),
        );
        let latency = Family::<ResultLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(LATENCY_BUCKETS)
        });
        registry.register(
            "decision_seconds",
            "Time from a CSR's creation to its decision, by result",
            latency.clone(),
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "errors",
            "Failed API calls while deciding (retried with backoff), by kind: node, sar, decide, event",
            errors.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica may decide (holds the Lease, or no --leader-elect)",
            leader.clone(),
        );
        Arc::new(Metrics {
            registry,
            decisions,
            latency,
            errors,
            leader,
            ready: AtomicBool::new(false),
        })
    }

    /// Count one decision.
    pub fn decided(&self, signer: &str, outcome: Outcome, reason: &str, seconds: f64) {
        let labels = DecisionLabels {
            signer: signer.to_owned(),
            result: outcome.as_str().to_owned(),
            reason: reason.to_owned(),
        };
        self.decisions.get_or_create(&labels).inc();
        self.latency
            .get_or_create(&ResultLabels { result: outcome.as_str().to_owned() })
            .observe(seconds);
    }

    /// Count one failed API call.
    pub fn error(&self, kind: &str) {
        self.errors.get_or_create(&ErrorLabels { kind: kind.to_owned() }).inc();
    }

    /// Whether this replica may decide.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// The CSR watch has listed once.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// The OpenMetrics text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    fn answer(&self, path: &str) -> Response<Full<Bytes>> {
        let (status, ctype, body) = match path {
            "/metrics" => (
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                self.text(),
            ),
            "/healthz" | "/livez" => (StatusCode::OK, "text/plain", "ok\n".to_owned()),
            "/readyz" if self.ready.load(Ordering::Acquire) => {
                (StatusCode::OK, "text/plain", "ok\n".to_owned())
            }
            "/readyz" => {
                (StatusCode::SERVICE_UNAVAILABLE, "text/plain", "watch not synced\n".to_owned())
            }
            _ => (StatusCode::NOT_FOUND, "text/plain", "not found\n".to_owned()),
        };
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
        }
        r
    }
}

/// Serve the endpoints on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "metrics listener: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let m = Arc::clone(&metrics);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let m = Arc::clone(&m);
                async move { Ok::<_, Infallible>(m.answer(req.uri().path())) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}

/// Bind `addr` (an error names the address).
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_has_the_series() {
        let m = Metrics::new();
        m.decided(
            "kubernetes.io/kubelet-serving",
            Outcome::Denied,
            "policy-ip-san-not-node-address",
            1.5,
        );
        m.decided("kubernetes.io/kubelet-serving", Outcome::Approved, "ok", 0.2);
        m.error("sar");
        m.set_leader(true);
        let t = m.text();
        assert!(t.contains(r#"kubeboot_approver_decisions_total{signer="kubernetes.io/kubelet-serving",result="denied",reason="policy-ip-san-not-node-address"} 1"#), "{t}");
        assert!(
            t.contains(
                r#"kubeboot_approver_decision_seconds_bucket{le="0.25",result="approved"} 1"#
            ),
            "{t}"
        );
        assert!(t.contains(r#"kubeboot_approver_errors_total{kind="sar"} 1"#), "{t}");
        assert!(t.contains("kubeboot_approver_leader 1"), "{t}");
        assert_eq!(m.answer("/readyz").status(), StatusCode::SERVICE_UNAVAILABLE);
        m.set_ready();
        assert_eq!(m.answer("/readyz").status(), StatusCode::OK);
        assert_eq!(m.answer("/healthz").status(), StatusCode::OK);
        assert_eq!(m.answer("/nope").status(), StatusCode::NOT_FOUND);
    }
}
