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
#[cfg(feature = "std")]
extern crate std;

pub mod agent;
pub mod api;
pub mod backend;
pub mod csr;
pub mod discovery;
pub mod engine;
pub mod error;
pub mod json;
pub mod key;
pub mod kubeconfig;
pub mod metrics;
mod out;
pub mod pem;
pub mod pin;
pub mod policy;
pub mod request;
pub mod rotation;
#[cfg(all(feature = "std", unix))]
pub mod store;
pub mod token;
pub mod verify;

/// RFC 3339 parsing/formatting (Go `time.RFC3339` semantics), shared by all modules.
pub use token::rfc3339;

pub use error::{Error, Result};
