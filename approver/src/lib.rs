//! `kubeboot approver`: approves `kubernetes.io/kubelet-serving` CertificateSigningRequests only
//! for the addresses the node really has.
//!
//! kube-controller-manager approves node *client* CSRs but never serving ones (their SANs cannot
//! be trusted without checking them, kubernetes/kubernetes#62471). This controller watches the
//! serving signer's CSRs and decides each pending one once: every judgement of the request is
//! the core's ([`kubeboot::policy::serving`]: the requester is the node, one PEM block, CN and
//! O, serving usages, key type and size, `expirationSeconds`, and every IP/DNS SAN one of the
//! Node's `status.addresses` or an operator pattern for that node); this crate does the I/O:
//! the watch (kube-runtime's controller, which backs off when the apiserver drops the watch or
//! answers 429), the Node lookup, a SubjectAccessReview (may the requester create CSRs?), the
//! Approved or Denied condition with the typed reason, an Event, metrics, health endpoints and,
//! with `--leader-elect`, a Lease so that of several replicas one decides at a time.
//!
//! Runs in a cluster (deploy/) or from a kubeconfig (`--kubeconfig`) for clusters whose nodes
//! cannot run pods. docs/approver.md has the checks, flags, metrics and installation.

mod args;
mod attested;
mod decide;
mod leader;
mod metrics;

pub use args::{Args, LogFormat};

use std::process::ExitCode;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client};

/// Why the approver could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag value that cannot be used.
    #[error(transparent)]
    Flag(#[from] args::BadFlag),
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// The metrics address could not be bound.
    #[error("--metrics-bind-address {0}: {1}")]
    Bind(std::net::SocketAddr, std::io::Error),
    /// The Lease could not be set up.
    #[error("--leader-elect: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    /// The async runtime could not start.
    #[error("runtime: {0}")]
    Runtime(std::io::Error),
}

/// The process entry point of both `kubeboot-approver` and `kubeboot approver`: run until
/// SIGTERM or SIGINT; exit 0 then; with a one-line reason on stderr, 2 for a flag value that
/// cannot be used (a usage error, as the core's grammar asks of every front-end) and 1 when it
/// cannot run.
pub fn main(args: Args) -> ExitCode {
    match run_blocking(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubeboot approver: {e}");
            ExitCode::from(if matches!(e, Error::Flag(_)) { 2 } else { 1 })
        }
    }
}

/// [`run`] on a new multi-threaded tokio runtime.
pub fn run_blocking(args: Args) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    rt.block_on(run(args))
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second initialisation (a library caller's own subscriber) is not an error.
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
        LogFormat::Text => builder.with_ansi(false).try_init(),
    };
}

async fn client(args: &Args) -> Result<Client, Error> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display())))?
        }
        None => kube::Config::infer().await.map_err(|e| Error::Kubeconfig(e.to_string()))?,
    };
    Client::try_from(config).map_err(|e| Error::Kubeconfig(e.to_string()))
}

/// Run the approver until SIGTERM or SIGINT.
pub async fn run(args: Args) -> Result<(), Error> {
    let settings = args.settings()?;
    init_logging(args.log_format);
    let client = client(&args).await?;
    let metrics = metrics::Metrics::new();
    if let Some(addr) = settings.bind {
        let listener = metrics::bind(addr).await.map_err(|e| Error::Bind(addr, e))?;
        tokio::spawn(metrics::serve(listener, Arc::clone(&metrics)));
    }
    let mut leadership = if args.leader_elect {
        leader::elect(client.clone(), &args, &settings, Arc::clone(&metrics)).await?
    } else {
        metrics.set_leader(true);
        leader::always()
    };
    let identity = args.identity();
    let recorder = Recorder::new(
        client.clone(),
        Reporter { controller: "kubeboot-approver".into(), instance: Some(identity.clone()) },
    );
    tracing::info!(
        identity = %identity,
        leader_elect = args.leader_elect,
        dry_run = settings.dry_run,
        skip_deny_step = settings.skip_deny,
        allowed_key_types = %settings.policy.keys,
        max_expiration_seconds = settings.policy.max_expiration_seconds,
        dns_patterns = ?args.dns_patterns,
        attestation_ca = ?args.attestation_ca,
        enrolment = ?args.enrolment,
        "kubeboot approver starting"
    );
    let settings_attested = settings.attestation.is_some();
    let ctx = Arc::new(decide::Ctx::new(
        client.clone(),
        recorder,
        settings,
        Arc::clone(&metrics),
        Arc::clone(&leadership.leader),
        identity.clone(),
    ));
    let csrs: Api<CertificateSigningRequest> = Api::all(client);
    // With attested joins, the client signer's CSRs too (a field selector takes one value).
    let selector = match settings_attested {
        false => format!("spec.signerName={}", kubeboot::policy::SIGNER_SERVING),
        true => String::new(),
    };
    let gained = std::mem::replace(&mut leadership.gained, futures::channel::mpsc::unbounded().1);
    let watch = match selector.as_str() {
        "" => watcher::Config::default(),
        s => watcher::Config::default().fields(s),
    };
    let controller = Controller::new(csrs, watch)
        .with_config(ControllerConfig::default().concurrency(args.concurrency))
        .reconcile_all_on(gained)
        .shutdown_on_signal();
    let store = controller.store();
    let ready = Arc::clone(&metrics);
    tokio::spawn(async move {
        // kube-runtime's readiness wakes only the last task that waited on it (the controller's
        // own runner), so look again every 100 ms instead of waiting once.
        loop {
            let wait = store.wait_until_ready();
            match tokio::time::timeout(std::time::Duration::from_millis(100), wait).await {
                Ok(Ok(())) => break,
                Ok(Err(_)) => return,
                Err(_) => continue,
            }
        }
        ready.set_ready();
        tracing::info!("watching kubelet-serving CSRs");
    });
    controller
        .run(decide::reconcile, decide::on_error, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "controller");
            }
        })
        .await;
    tracing::info!("shutting down");
    leadership.release().await;
    Ok(())
}
