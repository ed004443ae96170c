//! The node's credentials for the embedding program: the client identity (as a value, a rustls
//! client-certificate resolver and a [`kube::Client`]) and the serving pair (as a rustls
//! server-certificate resolver), each the newest the core has judged usable. Before the first
//! there is none: a clear [`NotReady`], or a future that waits ([`Credentials::wait_client`]) —
//! never a stale or half-written pair: the runtime reads the node's files only after the file
//! plan that changed them is complete, and hands out only what the core's check calls usable.

use std::fmt;
use std::sync::Arc;
#[cfg(feature = "kube")]
use std::sync::Mutex;

use kubeboot::agent::CertStatus;
use rustls::client::ResolvesClientCert;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, SignatureScheme};
use tokio::sync::watch;
use zeroize::Zeroizing;

use crate::clock::unix_now;
use crate::error::NotReady;
#[cfg(feature = "kube")]
use crate::kube_client::Pool;
use crate::tls::{self, Fixed, Trust};

/// The node's client identity at one moment: how to reach the apiserver, whom to trust, and the
/// certificate with its key. A new value replaces it whenever one of them changes.
pub struct Identity {
    pub(crate) generation: u64,
    pub(crate) node: String,
    pub(crate) server: String,
    pub(crate) ca_pem: Option<Vec<u8>>,
    pub(crate) insecure: bool,
    pub(crate) server_name: Option<String>,
    pub(crate) chain_pem: Vec<u8>,
    pub(crate) key_pem: Zeroizing<Vec<u8>>,
    pub(crate) status: CertStatus,
    pub(crate) certified: Arc<CertifiedKey>,
}

impl Identity {
    /// Counts the identities handed out by this runtime (1 for the first).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The node name (`system:node:<name>`).
    pub fn node_name(&self) -> &str {
        &self.node
    }

    /// The apiserver, `https://host:port` (the node kubeconfig's `server`).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The CAs the apiserver is checked against (PEM); `None` with `insecure-skip-tls-verify`.
    pub fn ca_pem(&self) -> Option<&[u8]> {
        self.ca_pem.as_deref()
    }

    /// `tls-server-name`, if the node kubeconfig sets it.
    pub fn tls_server_name(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    /// The client certificate chain (PEM).
    pub fn chain_pem(&self) -> &[u8] {
        &self.chain_pem
    }

    /// The private key (PEM; secret: never print it), or the reference of the key a device holds
    /// (a `TSS2 PRIVATE KEY` or `PKCS#11 PROVIDER URI` block).
    pub fn key_pem(&self) -> &[u8] {
        &self.key_pem
    }

    /// The certificate's validity and rotation deadline, as the core judged it.
    pub fn status(&self) -> CertStatus {
        self.status
    }

    /// The certificate and its key for rustls (a device's key signs in the device).
    pub fn certified_key(&self) -> Arc<CertifiedKey> {
        self.certified.clone()
    }

    /// A rustls client configuration for the apiserver: it trusts exactly [`Identity::ca_pem`]
    /// (nothing with `insecure-skip-tls-verify`) and presents this certificate. To follow
    /// rotations, use [`Credentials::client_cert_resolver`] instead of this fixed certificate.
    pub fn rustls_client_config(&self) -> Result<ClientConfig, String> {
        let trust = Trust { ca_pem: self.ca_pem.as_deref(), insecure: self.insecure };
        tls::client_config(&trust, Some(Arc::new(Fixed(self.certified.clone()))))
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("generation", &self.generation)
            .field("node", &self.node)
            .field("server", &self.server)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// The node's serving certificate (the kubelet's `serverTLSBootstrap` pair) at one moment.
pub struct ServingPair {
    pub(crate) generation: u64,
    pub(crate) chain_pem: Vec<u8>,
    pub(crate) status: CertStatus,
    pub(crate) certified: Arc<CertifiedKey>,
}

impl ServingPair {
    /// Counts the serving pairs handed out by this runtime (1 for the first).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The certificate chain (PEM).
    pub fn chain_pem(&self) -> &[u8] {
        &self.chain_pem
    }

    /// Its validity and rotation deadline, as the core judged it.
    pub fn status(&self) -> CertStatus {
        self.status
    }

    /// The certificate and its key for rustls.
    pub fn certified_key(&self) -> Arc<CertifiedKey> {
        self.certified.clone()
    }
}

impl fmt::Debug for ServingPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServingPair")
            .field("generation", &self.generation)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// One credential as published: the newest value, and whether the runtime has ended.
pub(crate) struct Slot<T> {
    pub(crate) current: Option<Arc<T>>,
    pub(crate) ended: bool,
}

impl<T> Slot<T> {
    fn empty() -> Self {
        Slot { current: None, ended: false }
    }
}

/// What the runtime publishes and every [`Credentials`] reads.
pub(crate) struct Shared {
    pub(crate) client: watch::Sender<Slot<Identity>>,
    pub(crate) serving: watch::Sender<Slot<ServingPair>>,
    pub(crate) serving_configured: bool,
    /// The [`kube::Client`]s' connections, made with the current identity.
    #[cfg(feature = "kube")]
    pub(crate) pool: Mutex<Option<Pool>>,
}

impl Shared {
    pub(crate) fn new(serving_configured: bool) -> Arc<Shared> {
        Arc::new(Shared {
            client: watch::Sender::new(Slot::empty()),
            serving: watch::Sender::new(Slot::empty()),
            serving_configured,
            #[cfg(feature = "kube")]
            pool: Mutex::new(None),
        })
    }

    /// A new client identity is current: the kube clients' pooled connections, made with the
    /// old one, are dropped at once (those in use end with their request).
    pub(crate) fn publish_client(&self, identity: Identity) {
        self.client.send_modify(|s| s.current = Some(Arc::new(identity)));
        #[cfg(feature = "kube")]
        if let Ok(mut p) = self.pool.lock() {
            *p = None;
        }
    }

    pub(crate) fn publish_serving(&self, pair: ServingPair) {
        self.serving.send_modify(|s| s.current = Some(Arc::new(pair)));
    }

    /// The run is over: waiters without credentials stop waiting.
    pub(crate) fn end(&self) {
        self.client.send_modify(|s| s.ended = true);
        self.serving.send_modify(|s| s.ended = true);
    }
}

/// Usable now: present and not expired.
fn usable<T>(slot: &Slot<T>, not_after: impl Fn(&T) -> i64) -> Result<Arc<T>, NotReady> {
    match &slot.current {
        Some(c) if unix_now() < not_after(c) => Ok(c.clone()),
        Some(_) => Err(NotReady::Expired),
        None if slot.ended => Err(NotReady::Ended),
        None => Err(NotReady::NotYet),
    }
}

/// The node's current credentials, for the embedding program (cheap to clone; every clone sees
/// the same, newest values).
#[derive(Clone)]
pub struct Credentials {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("client", &self.shared.client.borrow().current)
            .field("serving", &self.shared.serving.borrow().current)
            .finish()
    }
}

impl Credentials {
    /// The current client identity, or why there is none.
    pub fn client(&self) -> Result<Arc<Identity>, NotReady> {
        usable(&self.shared.client.borrow(), |i| i.status.not_after)
    }

    /// The current client identity, once there is one ([`NotReady::Ended`] if the run ends
    /// first; [`NotReady::Expired`] when the one there is has expired).
    pub async fn wait_client(&self) -> Result<Arc<Identity>, NotReady> {
        let mut rx = self.shared.client.subscribe();
        let slot = rx.wait_for(|s| s.current.is_some() || s.ended).await;
        match slot {
            Ok(s) => usable(&s, |i| i.status.not_after),
            Err(_) => Err(NotReady::Ended),
        }
    }

    /// The first client identity newer than generation `after` (`0`: the first one), once it is
    /// current: the way to follow rotations.
    pub async fn next_client(&self, after: u64) -> Result<Arc<Identity>, NotReady> {
        let mut rx = self.shared.client.subscribe();
        let newer = |s: &Slot<Identity>| s.current.as_ref().is_some_and(|i| i.generation > after);
        match rx.wait_for(|s| newer(s) || s.ended).await {
            Ok(s) if newer(&s) => Ok(s.current.clone().expect("newer")),
            _ => Err(NotReady::Ended),
        }
    }

    /// The current serving pair, or why there is none ([`NotReady::NotConfigured`] without
    /// [`crate::Settings::serving`]).
    pub fn serving(&self) -> Result<Arc<ServingPair>, NotReady> {
        if !self.shared.serving_configured {
            return Err(NotReady::NotConfigured);
        }
        usable(&self.shared.serving.borrow(), |p| p.status.not_after)
    }

    /// The current serving pair, once there is one.
    pub async fn wait_serving(&self) -> Result<Arc<ServingPair>, NotReady> {
        if !self.shared.serving_configured {
            return Err(NotReady::NotConfigured);
        }
        let mut rx = self.shared.serving.subscribe();
        match rx.wait_for(|s| s.current.is_some() || s.ended).await {
            Ok(s) => usable(&s, |p| p.status.not_after),
            Err(_) => Err(NotReady::Ended),
        }
    }

    /// [`Credentials::wait_client`] for a program without an async runtime (do not call it from
    /// inside one): `None` when `timeout` passes first.
    pub fn wait_client_blocking(
        &self,
        timeout: std::time::Duration,
    ) -> Option<Result<Arc<Identity>, NotReady>> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().ok()?;
        rt.block_on(async { tokio::time::timeout(timeout, self.wait_client()).await.ok() })
    }

    /// A rustls client-certificate resolver that presents the current client certificate at
    /// every handshake (none before the first, or once it has expired).
    pub fn client_cert_resolver(&self) -> Arc<dyn ResolvesClientCert> {
        Arc::new(ClientResolver(self.clone()))
    }

    /// A rustls server-certificate resolver that presents the newest serving pair at every
    /// handshake (none before the first, or once it has expired: the handshake fails).
    pub fn server_cert_resolver(&self) -> Arc<dyn ResolvesServerCert> {
        Arc::new(ServerResolver(self.clone()))
    }

    /// A [`kube::Client`] for the apiserver as this node (`system:node:<name>`), which moves to
    /// a new client identity as soon as it is current: requests after that go over new
    /// connections made with it, the connections pooled with the old one are dropped (a request
    /// already under way on one, a watch for example, ends as it would). Before the first
    /// identity every request fails with [`NotReady`]. Call it inside a tokio runtime.
    #[cfg(feature = "kube")]
    pub fn kube_client(&self) -> kube::Client {
        kube::Client::new(crate::kube_client::Switch { shared: self.shared.clone() }, "default")
    }
}

#[derive(Debug)]
struct ClientResolver(Credentials);

impl ResolvesClientCert for ClientResolver {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.0.client().ok().map(|i| i.certified.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

#[derive(Debug)]
struct ServerResolver(Credentials);

impl ResolvesServerCert for ServerResolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.serving().ok().map(|p| p.certified.clone())
    }
}
