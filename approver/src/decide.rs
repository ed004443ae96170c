//! One CSR, decided once: the reconciler. Every judgement is the core's
//! ([`kubeboot::policy::serving`]); this module reads the Node, asks the SubjectAccessReview,
//! writes the condition (on the object's `resourceVersion`, so a CSR that changed meanwhile,
//! decided by someone else included, is never decided again), publishes the Event, logs and counts.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Resource, ResourceExt};
use kubeboot::error::{Error as CoreError, PolicyViolation};
use kubeboot::policy::serving::{AddressType, ForeignSan, NodeAddress, ServingCsr};
use kubeboot::policy::{SIGNER_CLIENT, SIGNER_SERVING};
use kubeboot::request::SubjectAltName;

use crate::args::Settings;
use crate::attested::Attested;
use crate::metrics::{Metrics, Outcome};

/// The condition reason of an approval.
pub const APPROVED_REASON: &str = "KubebootApproved";
/// The Event action of every decision.
const ACTION: &str = "Decide";

/// A failed API call: retried with backoff by the controller.
#[derive(Debug, thiserror::Error)]
#[error("{kind}: {source}")]
pub struct ApiError {
    kind: &'static str,
    #[source]
    source: kube::Error,
}

/// What the reconciler shares.
pub struct Ctx {
    /// CertificateSigningRequests.
    pub csrs: Api<CertificateSigningRequest>,
    /// Nodes.
    pub nodes: Api<Node>,
    /// SubjectAccessReviews.
    pub sars: Api<SubjectAccessReview>,
    /// Events about CSRs.
    pub recorder: Recorder,
    /// The checked flags.
    pub settings: Settings,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Whether this replica may decide now.
    pub leader: Arc<AtomicBool>,
    /// This replica's identity (the Events' reportingInstance).
    pub identity: String,
    /// CSRs (by UID) left pending: not judged again until they change.
    settled: Mutex<HashMap<String, String>>,
    /// Failed attempts per CSR (by UID), for the backoff.
    attempts: Mutex<HashMap<String, u32>>,
    /// CSRs (by UID) this process decided: a second decision would be a bug, logged loudly.
    decided: Mutex<HashSet<String>>,
}

impl Ctx {
    /// The shared state of one approver.
    pub fn new(
        client: kube::Client,
        recorder: Recorder,
        settings: Settings,
        metrics: Arc<Metrics>,
        leader: Arc<AtomicBool>,
        identity: String,
    ) -> Self {
        Ctx {
            csrs: Api::all(client.clone()),
            nodes: Api::all(client.clone()),
            sars: Api::all(client),
            recorder,
            settings,
            metrics,
            leader,
            identity,
            settled: Mutex::default(),
            attempts: Mutex::default(),
            decided: Mutex::default(),
        }
    }
}

/// The CSR has a final condition (Approved, Denied or Failed).
fn is_final(csr: &CertificateSigningRequest) -> bool {
    csr.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|cs| {
        cs.iter().any(|c| matches!(c.type_.as_str(), "Approved" | "Denied" | "Failed"))
    })
}

fn seconds_since_creation(csr: &CertificateSigningRequest) -> f64 {
    csr.meta()
        .creation_timestamp
        .as_ref()
        .map(|t| Timestamp::now().duration_since(t.0).as_secs_f64().max(0.0))
        .unwrap_or(0.0)
}

/// `Duration` of the `n`-th retry: 1 s doubling to 64 s, with up to 25 % jitter from the clock.
fn backoff(n: u32) -> Duration {
    let base = 1u64 << n.min(6);
    let jitter = u64::from(Timestamp::now().subsec_nanosecond().unsigned_abs()) % 250;
    Duration::from_millis(base * 1000 + base * jitter)
}

/// A decision to write, with its words.
struct Verdict {
    outcome: Outcome,
    /// The catalogue's name (`policy-...`), or `ok`.
    reason: &'static str,
    /// The catalogue's identifier (`PolicyIpSanNotNodeAddress`), the condition's and Event's reason.
    ident: &'static str,
    message: String,
}

fn refusal(v: PolicyViolation, detail: Option<String>) -> Verdict {
    let kind = v.kind();
    let mut message = format!("{}: {}", kind.name(), kind.message());
    if let Some(d) = detail {
        message.push_str(" (");
        message.push_str(&d);
        message.push(')');
    }
    Verdict { outcome: Outcome::Denied, reason: kind.name(), ident: kind.ident(), message }
}

fn san_text(san: &SubjectAltName<'_>) -> String {
    match san {
        SubjectAltName::Dns(d) => format!("DNS:{d}"),
        SubjectAltName::Ip(b) => match <[u8; 4]>::try_from(*b) {
            Ok(v4) => format!("IP:{}", std::net::Ipv4Addr::from(v4)),
            Err(_) => match <[u8; 16]>::try_from(*b) {
                Ok(v6) => format!("IP:{}", std::net::Ipv6Addr::from(v6)),
                Err(_) => "IP:?".to_owned(),
            },
        },
        SubjectAltName::Email(e) => format!("email:{e}"),
        SubjectAltName::Uri(u) => format!("URI:{u}"),
        other => format!("{other:?}"),
    }
}

fn core_refusal(e: CoreError) -> Verdict {
    match e {
        CoreError::Policy(v) => refusal(v, None),
        // A scratch buffer as large as the PEM always holds its DER; anything else the core
        // reports is a request it cannot vouch for.
        other => refusal(PolicyViolation::NotCertificateRequest, Some(other.to_string())),
    }
}

/// The reconciler: decide `csr` once, if it is ours and pending and we may decide.
pub async fn reconcile(
    csr: Arc<CertificateSigningRequest>,
    ctx: Arc<Ctx>,
) -> Result<Action, ApiError> {
    let uid = csr.uid().unwrap_or_default();
    let attested = csr.spec.signer_name == SIGNER_CLIENT && ctx.settings.attestation.is_some();
    if csr.spec.signer_name != SIGNER_SERVING && !attested {
        return Ok(Action::await_change());
    }
    if is_final(&csr) {
        lock(&ctx.settled).remove(&uid);
        lock(&ctx.attempts).remove(&uid);
        return Ok(Action::await_change());
    }
    if !ctx.leader.load(Ordering::Acquire) {
        return Ok(Action::await_change());
    }
    let rv = csr.resource_version().unwrap_or_default();
    if lock(&ctx.settled).get(&uid) == Some(&rv) {
        return Ok(Action::await_change());
    }
    let result = if attested { Ok(judge_attested(&csr, &ctx)) } else { judge(&csr, &ctx).await };
    match result {
        Ok(Judged::Verdict(v)) => {
            lock(&ctx.attempts).remove(&uid);
            write(&csr, &ctx, v).await
        }
        Ok(Judged::Retry(after)) => Ok(Action::requeue(after)),
        Ok(Judged::NotOurs) => Ok(Action::await_change()),
        Err(e) => Err(e),
    }
}

/// The error policy: a failed API call (429, 5xx, a dropped connection) is retried with backoff.
pub fn on_error(csr: Arc<CertificateSigningRequest>, err: &ApiError, ctx: Arc<Ctx>) -> Action {
    ctx.metrics.error(err.kind);
    let uid = csr.uid().unwrap_or_default();
    let n = {
        let mut a = lock(&ctx.attempts);
        let n = a.entry(uid).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let after = backoff(n);
    tracing::warn!(csr = %csr.name_any(), error = %err, retry_in_ms = after.as_millis() as u64, "api call failed; retrying");
    Action::requeue(after)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

enum Judged {
    Verdict(Verdict),
    Retry(Duration),
    /// Not a CSR this approver decides.
    NotOurs,
}

/// A bootstrap client CSR's attestation ([`crate::attested`]).
fn judge_attested(csr: &CertificateSigningRequest, ctx: &Ctx) -> Judged {
    let Some(att) = &ctx.settings.attestation else { return Judged::NotOurs };
    let now = Timestamp::now().as_second();
    match crate::attested::judge(csr, att, now) {
        Attested::NotOurs => Judged::NotOurs,
        Attested::Approve(message) => Judged::Verdict(Verdict {
            outcome: Outcome::Approved,
            reason: "ok",
            ident: crate::attested::ATTESTED_REASON,
            message,
        }),
        Attested::Deny(e, message) => Judged::Verdict(Verdict {
            outcome: Outcome::Denied,
            reason: e.name(),
            ident: e.ident(),
            message,
        }),
        Attested::Unreadable(why) => {
            tracing::warn!(csr = %csr.name_any(), why = %why, "the enrolment cannot be read; the CSR stays pending");
            Judged::Retry(Duration::from_secs(10))
        }
    }
}

async fn judge(csr: &CertificateSigningRequest, ctx: &Ctx) -> Result<Judged, ApiError> {
    let spec = &csr.spec;
    let groups: Vec<&str> = spec.groups.iter().flatten().map(String::as_str).collect();
    let usages: Vec<&str> = spec.usages.iter().flatten().map(String::as_str).collect();
    let input = ServingCsr {
        signer: &spec.signer_name,
        username: spec.username.as_deref().unwrap_or(""),
        groups: &groups,
        request: &spec.request.0,
        usages: &usages,
        expiration_seconds: spec.expiration_seconds.map(i64::from),
    };
    let policy = &ctx.settings.policy;
    let mut scratch = vec![0u8; spec.request.0.len()];
    let req = match policy.check_request_with(&kubeboot::backend::ring::Ring, &input, &mut scratch)
    {
        Ok(r) => r,
        Err(e) => return Ok(Judged::Verdict(core_refusal(e))),
    };
    let node_name = req.node_name;
    let node =
        ctx.nodes.get_opt(node_name).await.map_err(|source| ApiError { kind: "node", source })?;
    let Some(node) = node else {
        let age = Duration::from_secs_f64(seconds_since_creation(csr));
        if age < ctx.settings.node_wait {
            let n = {
                let mut a = lock(&ctx.attempts);
                let n = a.entry(csr.uid().unwrap_or_default()).or_insert(0);
                *n = n.saturating_add(1);
                *n
            };
            let after =
                backoff(n).min(ctx.settings.node_wait.saturating_sub(age) + Duration::from_secs(1));
            tracing::info!(csr = %csr.name_any(), node = node_name, retry_in_ms = after.as_millis() as u64, "no Node yet; retrying");
            return Ok(Judged::Retry(after));
        }
        let mut v = refusal(
            PolicyViolation::NodeNotFound,
            Some(format!("no Node {node_name} after {}s", ctx.settings.node_wait.as_secs())),
        );
        v.outcome = Outcome::Pending;
        return Ok(Judged::Verdict(v));
    };
    let api_addresses = node.status.as_ref().and_then(|s| s.addresses.as_ref());
    let addresses: Vec<NodeAddress<'_>> = api_addresses
        .iter()
        .flat_map(|a| a.iter())
        .map(|a| NodeAddress { kind: AddressType::from_api(&a.type_), address: &a.address })
        .collect();
    if let Some(ForeignSan { violation, san }) =
        policy.foreign_san(node_name, &req.request, &addresses)
    {
        let listed: Vec<String> =
            addresses.iter().map(|a| format!("{:?}={}", a.kind, a.address)).collect();
        let detail = format!(
            "{} is not an address of Node {node_name} [{}]",
            san_text(&san),
            listed.join(", ")
        );
        return Ok(Judged::Verdict(refusal(violation, Some(detail))));
    }
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: spec.username.clone(),
            groups: spec.groups.clone(),
            uid: spec.uid.clone(),
            extra: spec.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".to_owned()),
                resource: Some("certificatesigningrequests".to_owned()),
                verb: Some("create".to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = ctx
        .sars
        .create(&PostParams::default(), &review)
        .await
        .map_err(|source| ApiError { kind: "sar", source })?;
    let status = answer.status.unwrap_or_default();
    if !status.allowed || status.denied == Some(true) {
        let why = status
            .reason
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "no rule allows it".to_owned());
        return Ok(Judged::Verdict(refusal(PolicyViolation::NotAuthorized, Some(why))));
    }
    let sans: Vec<String> = req.request.sans().map(|s| san_text(&s)).collect();
    Ok(Judged::Verdict(Verdict {
        outcome: Outcome::Approved,
        reason: "ok",
        ident: APPROVED_REASON,
        message: format!(
            "kubeboot-approver: requested by node {node_name}; every SAN is the Node's ({})",
            sans.join(", ")
        ),
    }))
}

async fn write(
    csr: &CertificateSigningRequest,
    ctx: &Ctx,
    mut v: Verdict,
) -> Result<Action, ApiError> {
    let name = csr.name_any();
    let uid = csr.uid().unwrap_or_default();
    if v.outcome == Outcome::Denied && ctx.settings.skip_deny {
        v.outcome = Outcome::Pending;
    }
    let seconds = seconds_since_creation(csr);
    if ctx.settings.dry_run {
        let outcome =
            if v.outcome == Outcome::Approved { Outcome::WouldApprove } else { Outcome::WouldDeny };
        log(&name, outcome, &v, seconds, true);
        ctx.metrics.decided(&csr.spec.signer_name, outcome, v.reason, seconds);
        lock(&ctx.settled).insert(uid, csr.resource_version().unwrap_or_default());
        return Ok(Action::await_change());
    }
    if v.outcome == Outcome::Pending {
        log(&name, v.outcome, &v, seconds, false);
        ctx.metrics.decided(&csr.spec.signer_name, v.outcome, v.reason, seconds);
        event(ctx, csr, EventType::Warning, v.ident, &v.message).await;
        lock(&ctx.settled).insert(uid, csr.resource_version().unwrap_or_default());
        return Ok(Action::await_change());
    }
    // The leader may have changed while we judged.
    if !ctx.leader.load(Ordering::Acquire) {
        return Ok(Action::await_change());
    }
    let (type_, event_type) = match v.outcome {
        Outcome::Approved => ("Approved", EventType::Normal),
        _ => ("Denied", EventType::Warning),
    };
    let now = Time(Timestamp::now());
    let mut obj = csr.clone();
    obj.status
        .get_or_insert_with(CertificateSigningRequestStatus::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(CertificateSigningRequestCondition {
            type_: type_.to_owned(),
            status: "True".to_owned(),
            reason: Some(v.ident.to_owned()),
            message: Some(v.message.clone()),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(now),
        });
    match ctx.csrs.replace_subresource("approval", &name, &PostParams::default(), &obj).await {
        Ok(_) => {}
        // Changed since we read it (decided by someone else, or updated): judge the new version.
        Err(kube::Error::Api(s)) if s.code == 409 => {
            tracing::info!(csr = %name, "changed while judged (409 Conflict); judging it again");
            return Ok(Action::requeue(Duration::from_millis(200)));
        }
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Action::await_change()),
        Err(source) => return Err(ApiError { kind: "decide", source }),
    }
    if !lock(&ctx.decided).insert(uid) {
        tracing::error!(csr = %name, "BUG: this CSR was decided twice by this process");
    }
    log(&name, v.outcome, &v, seconds, false);
    ctx.metrics.decided(&csr.spec.signer_name, v.outcome, v.reason, seconds);
    event(ctx, csr, event_type, v.ident, &v.message).await;
    Ok(Action::await_change())
}

fn log(name: &str, outcome: Outcome, v: &Verdict, seconds: f64, dry_run: bool) {
    tracing::info!(
        csr = name,
        decision = outcome.as_str(),
        reason = v.reason,
        message = %v.message,
        seconds_since_creation = seconds,
        dry_run,
        "decided"
    );
}

async fn event(
    ctx: &Ctx,
    csr: &CertificateSigningRequest,
    type_: EventType,
    reason: &str,
    note: &str,
) {
    let ev = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: ACTION.to_owned(),
        secondary: None,
    };
    let name = csr.name_any();
    let r = if is_subdomain(&name) {
        ctx.recorder.publish(&ev, &csr.object_ref(&())).await.map(drop)
    } else {
        // kube-runtime's Recorder names the Event `<object name>.<suffix>`, which the apiserver
        // refuses for a name that is not a DNS subdomain (the bootstrap path's
        // `node-csr-<base64url>`): create it under a name of our own.
        publish_named(ctx, csr, &ev).await
    };
    if let Err(e) = r {
        ctx.metrics.error("event");
        tracing::warn!(csr = %name, error = %e, "could not publish the Event");
    }
}

/// Whether `name` is an RFC 1123 subdomain (lowercase letters, digits, `-` and `.`).
fn is_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// The Event the Recorder would publish, named `kubeboot-approver-<random>` in `default`.
async fn publish_named(
    ctx: &Ctx,
    csr: &CertificateSigningRequest,
    ev: &Event,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::events::v1::Event as ApiEvent;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
    let api: Api<ApiEvent> = Api::namespaced(ctx.csrs.clone().into_client(), "default");
    let obj = ApiEvent {
        metadata: ObjectMeta {
            generate_name: Some("kubeboot-approver-".to_owned()),
            namespace: Some("default".to_owned()),
            ..Default::default()
        },
        event_time: Some(MicroTime(Timestamp::now())),
        action: Some(ev.action.clone()),
        reason: Some(ev.reason.clone()),
        note: ev.note.clone(),
        type_: Some(match ev.type_ {
            EventType::Normal => "Normal".to_owned(),
            EventType::Warning => "Warning".to_owned(),
        }),
        regarding: Some(csr.object_ref(&())),
        reporting_controller: Some("kubeboot-approver".to_owned()),
        reporting_instance: Some(ctx.identity.clone()),
        ..Default::default()
    };
    api.create(&PostParams::default(), &obj).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap_with_bounded_jitter() {
        for n in 0..20 {
            let b = backoff(n);
            let base = 1u64 << n.min(6);
            assert!(
                b >= Duration::from_secs(base) && b < Duration::from_millis(base * 1250),
                "{n}: {b:?}"
            );
        }
    }

    #[test]
    fn refusals_carry_the_catalogue_name_first() {
        let v =
            refusal(PolicyViolation::IpSanNotNodeAddress, Some("IP:192.0.2.9 is not ...".into()));
        assert_eq!(v.reason, "policy-ip-san-not-node-address");
        assert_eq!(v.ident, "PolicyIpSanNotNodeAddress");
        assert!(v.message.starts_with("policy-ip-san-not-node-address: "));
        assert!(v.message.ends_with("(IP:192.0.2.9 is not ...)"));
        assert_eq!(core_refusal(CoreError::Malformed).reason, "policy-not-certificate-request");
    }

    #[test]
    fn event_names_must_be_subdomains() {
        assert!(is_subdomain("csr-8f2kq"));
        assert!(!is_subdomain("node-csr-WUnGKBV6s1MG6px3Wum_WyGh0CFiDwNuxZIj-AXS8VA"));
        assert!(!is_subdomain("-a") && !is_subdomain("a..b") && !is_subdomain(""));
    }

    #[test]
    fn sans_as_openssl_writes_them() {
        assert_eq!(san_text(&SubjectAltName::Ip(&[192, 0, 2, 9])), "IP:192.0.2.9");
        let v6 = std::net::Ipv6Addr::LOCALHOST.octets();
        assert_eq!(san_text(&SubjectAltName::Ip(&v6)), "IP:::1");
        assert_eq!(san_text(&SubjectAltName::Dns("a.example")), "DNS:a.example");
    }
}
