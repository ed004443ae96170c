//! # kubeboot — kubelet-style TLS bootstrapping for node agents
//!
//! A node starts with a *bootstrap token* (`abcdef.0123456789abcdef`) and the cluster CA. It:
//!
//! 1. parses and checks the token ([`token::BootstrapToken`]);
//! 2. generates its own P-256 key from caller entropy ([`key::NodeKey`]);
//! 3. builds a PKCS#10 CSR with `CN=system:node:<name>`, `O=system:nodes` ([`csr`]);
//! 4. wraps it in a `certificates.k8s.io/v1` CertificateSigningRequest body named like the kubelet's
//!    `node-csr-<digest>` ([`api`]);
//! 5. submits it (the caller does the HTTP), waits for approval and issuance, and validates the
//!    issued certificate before writing anything.
//!
//! The crate is `#![no_std]` and allocation-free on the P-256 paths: every writer takes a caller
//! buffer and returns the used length; a short buffer is [`Error::BufferTooSmall`] carrying the
//! needed size. Clocks, randomness and transport come from the caller.
//!
//! [`agent::Agent`] puts the steps together as the kubelet does, sans-IO: it decides (are the
//! current credentials usable, bootstrap or rotate, which files to write in which crash-safe
//! order, when to retry, what to print) and asks its caller for the I/O. [`metrics`] has the
//! kubelet's certificate metrics, `store` (feature `std`) the file steps on Unix.
//!
//! # Example: a node's whole TLS bootstrap
//!
//! A node agent on a std host: it bootstraps with the bootstrap kubeconfig (or finds the
//! credentials usable and does nothing), leaving the kubelet's cert dir and node kubeconfig.
//! Files and entropy are the crate's and the OS's; HTTPS is [ureq](https://docs.rs/ureq) over
//! rustls, trusting exactly the CA the agent names and presenting the client certificate it
//! names. With `config.watch = false` the CSR is polled, so every response is a whole body (a
//! watch streams: see [`agent`]). The CLI (`examples/cli`) is this with a watch, a daemon
//! loop, metrics and signals.
//!
//! ```no_run
//! # #[cfg(feature = "std")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//!
//! use kubeboot::agent::{Action, Agent, Capacities, Config, HttpRequest, Method};
//! use kubeboot::pushback::Headers;
//! use kubeboot::store::FileSteps;
//! use ureq::tls::{ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
//!
//! /// One request over TLS, as the agent describes it: (status, body) or why not.
//! fn send(req: &HttpRequest<'_>) -> Result<(u16, Vec<u8>), String> {
//!     let certs = |pem: &[u8]| -> Vec<_> {
//!         ureq::tls::parse_pem(pem)
//!             .filter_map(|i| match i {
//!                 Ok(PemItem::Certificate(c)) => Some(c),
//!                 _ => None,
//!             })
//!             .collect()
//!     };
//!     let c = &req.connection;
//!     let mut tls = TlsConfig::builder();
//!     tls = match c.ca_pem {
//!         Some(ca) => tls.root_certs(RootCerts::new_with_certs(&certs(ca))),
//!         None => tls.disable_verification(c.insecure),
//!     };
//!     if let Some(cc) = c.client_certificate {
//!         let key = PrivateKey::from_pem(cc.key_pem).map_err(|e| e.to_string())?;
//!         tls = tls.client_cert(Some(ClientCert::new_with_certs(&certs(cc.chain_pem), key)));
//!     }
//!     let http: ureq::Agent = ureq::Agent::config_builder()
//!         .tls_config(tls.build())
//!         .http_status_as_error(false)
//!         .build()
//!         .into();
//!     let url = format!("{}{}", c.server, req.path);
//!     let sent = match req.method {
//!         Method::Post => {
//!             let mut b = http.post(&url).header("User-Agent", req.user_agent);
//!             b = b.header("Accept", req.accept);
//!             if let Some(a) = req.authorization {
//!                 b = b.header("Authorization", a);
//!             }
//!             if let Some(t) = req.content_type {
//!                 b = b.header("Content-Type", t);
//!             }
//!             b.send(req.body)
//!         }
//!         Method::Get => {
//!             let mut b = http.get(&url).header("User-Agent", req.user_agent);
//!             b = b.header("Accept", req.accept);
//!             if let Some(a) = req.authorization {
//!                 b = b.header("Authorization", a);
//!             }
//!             b.call()
//!         }
//!     };
//!     let mut resp = sent.map_err(|e| e.to_string())?;
//!     let status = resp.status().as_u16();
//!     let body = resp.body_mut().read_to_vec().map_err(|e| e.to_string())?;
//!     Ok((status, body))
//! }
//!
//! let now = || SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
//! let mut config = Config::new("example", "/", "/etc/kubernetes/kubelet.conf", "/var/lib/kubelet/pki");
//! config.node_name = Some("node-1");
//! config.bootstrap_kubeconfig = Some("/etc/kubernetes/bootstrap-kubelet.conf");
//! config.watch = false;
//! let mut seed = [0u8; 8];
//! getrandom::fill(&mut seed)?;
//! config.seed = u64::from_le_bytes(seed); // the rotation deadline's and backoff's jitter
//!
//! // The agent's memory, sized by its capacities (the hosts' here; a microcontroller picks
//! // its own and hands the agent a static array).
//! let mut memory = vec![0u8; Capacities::HOST.memory_len()];
//! let agent = &mut Agent::new(&mut memory, &Capacities::HOST)?;
//! agent.start(&config)?;
//! let files = FileSteps::new();
//! loop {
//!     let t = now();
//!     match agent.poll(t) {
//!         // Read a file or change one (atomically, durably), answering the agent.
//!         Action::Read(_) | Action::File(_) => {
//!             if let Some(Err(e)) = files.perform(agent, t) {
//!                 eprintln!("{e}"); // the agent has the typed reason and decides
//!             }
//!         }
//!         Action::Entropy { len } => {
//!             let mut bytes = zeroize::Zeroizing::new(vec![0u8; len]); // the new key's
//!             getrandom::fill(&mut bytes)?;
//!             agent.on_entropy(&bytes);
//!         }
//!         Action::Http(req) => match send(&req) {
//!             Ok((status, body)) => agent.on_http_response(t, status, &Headers::NONE, &body),
//!             Err(why) => agent.on_transport_error(t, &why),
//!         },
//!         Action::Sleep { until } => std::thread::sleep(Duration::from_secs((until - t).max(1) as u64)),
//!         Action::Event(e) => println!("{}", e.line), // agent=example step=... key=value
//!         Action::Done(outcome) => {
//!             println!("usable until {:?}", outcome.client.map(|c| c.not_after));
//!             return Ok(());
//!         }
//!         Action::Failed(f) => return Err(format!("{}: {}", f.error, f.detail).into()),
//!         _ => return Err("an action this example does not know".into()),
//!     }
//! }
//! # }
//! # #[cfg(not(feature = "std"))]
//! # fn main() {}
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// Hostile input must never panic: no unwrap/expect/panic/unchecked indexing outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod agent;
pub mod api;
pub mod attest;
pub mod backend;
mod buf;
mod calendar;
pub mod csr;
mod der_walk;
pub mod discovery;
#[doc(hidden)]
pub mod engine;
pub mod error;
pub mod grammar;
pub mod json;
pub mod key;
pub mod keyref;
pub mod kubeconfig;
pub mod metrics;
mod oid;
mod out;
pub mod pem;
pub mod pin;
pub mod policy;
pub mod pushback;
pub mod request;
pub mod rotation;
#[cfg(all(feature = "std", unix))]
pub mod store;
pub mod token;
pub mod tpm;
pub mod verify;

/// RFC 3339 parsing/formatting (Go `time.RFC3339` semantics), shared by all modules.
pub use token::rfc3339;

pub use error::{Error, Result};
