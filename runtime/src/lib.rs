//! kubeboot's node agent on a host, as a library: the core's agent ([`kubeboot::agent`], every
//! decision) driven over tokio, hyper and rustls, with the daemon's habits each decided once
//! here — HTTPS with the agent's connection settings, streamed watches with progress while they
//! stay open, the 1 MiB response limit, crash-safe file steps, OS entropy, keys in a TPM or a
//! PKCS#11 token, sleeping, signals, systemd readiness and status, the kubelet's certificate
//! metrics, the progress line on a terminal — and the node's identity handed to the program
//! that embeds it.
//!
//! # Embedding
//!
//! ```no_run
//! # #[cfg(feature = "kube")]
//! # mod x {
//! use kubeboot_runtime::{Options, Runtime, Settings};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut settings = Settings::new("my-agent", "/var/lib/my-agent/kubelet.conf", "/var/lib/my-agent/pki");
//! settings.bootstrap_kubeconfig = Some("/etc/my-agent/bootstrap.conf".into());
//! settings.node_name = Some("node-7".into());
//! settings.mode = kubeboot::agent::Mode::Run { max_rotations: None };
//! let runtime = Runtime::new(settings, Options::default());
//! let handle = runtime.handle();
//! let agent = tokio::spawn(runtime.run());
//!
//! let credentials = handle.credentials();
//! credentials.wait_client().await?; // or credentials.client(): NotReady until the first
//! let client = credentials.kube_client(); // system:node:node-7, follows every rotation
//! let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
//! # let _ = nodes; let _ = agent;
//! # Ok(())
//! # }
//! # }
//! ```
//!
//! * [`Credentials::kube_client`]: a [`kube::Client`] as `system:node:<name>` that sends every
//!   request with the client certificate current when it is sent (no restart, no minutes on the
//!   old certificate: the connections pooled with it are dropped when a new one is current);
//! * [`Credentials::client_cert_resolver`] / [`Credentials::server_cert_resolver`]: rustls
//!   resolvers presenting the newest client certificate and the newest serving certificate
//!   (the kubelet's `serverTLSBootstrap` pair) at every handshake;
//! * [`Handle::events`] (or [`Runtime::on_event`]): every line of the agent; [`Handle::status`]:
//!   the latest line, readiness, the certificates and the kubelet's metrics;
//! * [`Runtime::run_blocking`] for a program without an async runtime.
//!
//! Before the first usable credentials there are none: [`NotReady`], or a future that waits —
//! never a stale or half-written pair. Errors are the agent's typed reasons ([`Error`]).

#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod clock;
mod control;
mod credentials;
mod current;
mod driver;
mod error;
#[cfg(feature = "flags")]
pub mod flags;
mod http;
#[cfg(feature = "kube")]
mod kube_client;
mod metrics;
mod notify;
mod output;
mod settings;
mod tls;

use std::sync::Arc;

use kubeboot::agent::{CertStatus, Outcome};
use kubeboot::metrics::Metrics;
use tokio::sync::{broadcast, watch};

pub use clock::unix_now;
pub use credentials::{Credentials, Identity, ServingPair};
pub use error::{Error, NotReady};
pub use settings::{Discovery, Options, Settings};

/// One line of the agent ([`kubeboot::agent::Event`], owned), or its failure line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The step (`create`, `wait`, `issued`, `sleep`, `failed`, ...).
    pub step: &'static str,
    /// The whole line (text or JSON, as configured).
    pub line: String,
    /// Progress on the line before (a terminal overwrites it).
    pub update: bool,
    /// The credentials are usable and the agent sleeps or is done.
    pub ready: bool,
}

/// Where the run is.
#[derive(Clone, Debug, Default)]
pub struct RuntimeStatus {
    /// The latest line.
    pub line: String,
    /// A ready line has been said (systemd's `READY=1`).
    pub ready: bool,
    /// The current client certificate's validity, once there is one.
    pub client: Option<CertStatus>,
    /// The current serving certificate's, once there is one.
    pub serving: Option<CertStatus>,
    /// The kubelet's certificate metrics, as of the last step.
    pub metrics: Metrics,
    /// The run has ended.
    pub ended: bool,
}

/// How a run ended, when the agent did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// The agent finished ([`kubeboot::agent::Mode::Once`], or a daemon after its rotations).
    Done(Outcome),
    /// It was asked to stop ([`Handle::stop`], SIGTERM, SIGINT).
    Stopped,
}

/// The agent and its runtime, ready to run.
pub struct Runtime {
    settings: Settings,
    options: Options,
    shared: Arc<credentials::Shared>,
    control: Arc<control::Control>,
    events: broadcast::Sender<Event>,
    status: Arc<watch::Sender<RuntimeStatus>>,
    on_event: Option<OnEvent>,
}

/// What [`Runtime::on_event`] calls.
pub(crate) type OnEvent = Box<dyn FnMut(&Event) + Send>;

/// What the embedding program keeps while the runtime runs (cheap to clone).
#[derive(Clone)]
pub struct Handle {
    credentials: Credentials,
    control: Arc<control::Control>,
    events: broadcast::Sender<Event>,
    status: Arc<watch::Sender<RuntimeStatus>>,
}

impl Runtime {
    /// The agent configured by `settings`, run as `options` say.
    pub fn new(settings: Settings, options: Options) -> Runtime {
        let shared = credentials::Shared::new(settings.serving.is_some());
        Runtime {
            events: broadcast::Sender::new(options.event_buffer.max(1)),
            settings,
            options,
            shared,
            control: Arc::new(control::Control::new()),
            status: Arc::new(watch::Sender::new(RuntimeStatus::default())),
            on_event: None,
        }
    }

    /// Call `f` with every line, in order, as the agent says it.
    pub fn on_event(mut self, f: impl FnMut(&Event) + Send + 'static) -> Runtime {
        self.on_event = Some(Box::new(f));
        self
    }

    /// A handle on the run: credentials, events, status, stop and wake.
    pub fn handle(&self) -> Handle {
        Handle {
            credentials: Credentials { shared: self.shared.clone() },
            control: self.control.clone(),
            events: self.events.clone(),
            status: self.status.clone(),
        }
    }

    /// Run the agent to its end (inside a tokio runtime with time and I/O enabled).
    pub async fn run(self) -> Result<Finished, Error> {
        let Runtime { settings, options, shared, control, events, status, on_event } = self;
        let outputs = driver::Outputs {
            printer: options.print.then(output::Printer::default),
            notify: if options.notify {
                notify::Notifier::from_env()
            } else {
                notify::Notifier::none()
            },
            events,
            status: status.clone(),
            on_event,
            look: false,
            credentials: options.credentials,
        };
        let parts = driver::Parts {
            settings: &settings,
            options: &options,
            shared: &shared,
            control: &control,
            outputs,
        };
        let end = driver::drive(parts).await;
        shared.end();
        status.send_modify(|s| s.ended = true);
        end
    }

    /// [`Runtime::run`] for a program without an async runtime: one is made for the run (do not
    /// call it from inside one).
    pub fn run_blocking(self) -> Result<Finished, Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Setup(format!("tokio runtime: {e}")))?;
        rt.block_on(self.run())
    }
}

impl Handle {
    /// The node's current credentials.
    pub fn credentials(&self) -> Credentials {
        self.credentials.clone()
    }

    /// Every line from now on (a slow reader loses the oldest: `RecvError::Lagged`).
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Where the run is now.
    pub fn status(&self) -> RuntimeStatus {
        self.status.borrow().clone()
    }

    /// Every change of the status.
    pub fn status_changes(&self) -> watch::Receiver<RuntimeStatus> {
        self.status.subscribe()
    }

    /// Stop the run: at once while the agent waits, else at its next wait (never between a
    /// file write and the step that completes it); [`Runtime::run`] then returns
    /// [`Finished::Stopped`].
    pub fn stop(&self) {
        self.control.stop();
    }

    /// End a sleep between attempts now (a daemon's SIGHUP): the agent reads its files again.
    pub fn wake(&self) {
        self.control.wake();
    }
}
