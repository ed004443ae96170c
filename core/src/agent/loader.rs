//! The loader: reads the node's files and judges them. It owns what it read — the node
//! kubeconfig's cluster and what it names (the CA, the client certificate and key, or the
//! public point of a key a device holds), the configured CA bundle, the serving pair's verdict,
//! and, when the node must bootstrap, the bootstrap kubeconfig and its token — and the verdict on
//! each certificate: the kubelet's `isClientConfigStillValid` plus client-go's
//! `certSatisfiesTemplate` and the chain to the CA.
//!
//! It runs twice per attempt at most: [`Loader::begin`] reads the node's own files (the store's
//! recovery first, as client-go's `NewFileStore` does, except in [`Mode::Check`], which changes
//! nothing), then [`Loader::begin_bootstrap`] reads the bootstrap kubeconfig when the agent
//! decides to bootstrap. A file that cannot be read or does not validate is a verdict
//! ([`Verdict::Unusable`] with the typed reason and the part), never a panic.

use zeroize::{Zeroize, Zeroizing};

use super::config::{Mode, Settings};
use super::event::Events;
use super::flow::{Detail, detail};
use super::probe::Proven;
use super::verdict::{self, Against, Key, Part, Verdict};
use super::{
    CertCheck, CertStatus, FileRole, MAX_URL, Origin, PREFIX_CLIENT, PREFIX_SERVER, Status,
    Unusable, path,
};
use crate::buf::{Bytes, Text};
use crate::csr::MAX_NODE_NAME;
use crate::error::{Error, Result, StoreErrorKind};
use crate::key::{LABEL_EC_PRIVATE_KEY, NodeKey, SEC1_DER_LEN};
use crate::keyref::{self, Holder};
use crate::kubeconfig::{Kubeconfig, Scalar, Source};
use crate::metrics::Metrics;
use crate::pem;
use crate::token::BootstrapToken;

/// A kubeconfig's cluster, as loaded.
pub(super) struct Cluster<'m> {
    pub(super) server: heapless::String<MAX_URL>,
    pub(super) insecure: bool,
    pub(super) server_name: heapless::String<MAX_NODE_NAME>,
    /// The CA (PEM), from data or the file.
    pub(super) ca: Bytes<'m>,
    /// The CA file (absolute), when the CA came from a file.
    pub(super) ca_file: Text<'m>,
    /// Whether `ca_file` was read.
    ca_file_read: bool,
}

impl<'m> Cluster<'m> {
    fn new(ca: Bytes<'m>, ca_file: Text<'m>) -> Self {
        Cluster {
            server: heapless::String::new(),
            insecure: false,
            server_name: heapless::String::new(),
            ca,
            ca_file,
            ca_file_read: false,
        }
    }

    fn clear(&mut self) {
        let Cluster { server, insecure, server_name, ca, ca_file, ca_file_read } = self;
        server.clear();
        *insecure = false;
        server_name.clear();
        ca.clear();
        ca_file.clear();
        *ca_file_read = false;
    }

    /// Load `cluster` of a resolved kubeconfig at `dir`: server, TLS settings, the CA from data
    /// or the name of its file (to read next).
    fn load(&mut self, r: &crate::kubeconfig::Resolved<'_, '_>, dir: &str) -> Result<()> {
        scalar_into(r.server(), &mut self.server)?;
        while self.server.ends_with('/') {
            self.server.pop();
        }
        self.insecure = r.cluster.insecure_skip_tls_verify;
        if let Some(n) = r.cluster.tls_server_name.filter(|n| !n.is_empty()) {
            scalar_into(n, &mut self.server_name)?;
        }
        match r.cluster.ca_source() {
            Source::Data(d) => data_into(d, &mut self.ca)?,
            Source::File(f) => resolve_scalar(f, dir, &mut self.ca_file)?,
            Source::None => {}
        }
        if self.insecure && !matches!(r.cluster.ca_source(), Source::None) {
            // clientcmd: "specifying a root certificates file with the insecure flag is not
            // allowed".
            return Err(Error::Malformed);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    RecoverClient,
    ReadKubeconfig,
    ReadNodeCa,
    ReadClientCert,
    ReadClientKey,
    /// The device: the current client key's public point.
    KeyPublic,
    ReadBundle,
    CheckClient,
    RecoverServer,
    ReadServing,
    /// The node's files are judged.
    Loaded,
    ReadBootKc,
    ReadBootCa,
    ReadTokenFile,
    /// The bootstrap kubeconfig is loaded.
    BootLoaded,
    Failed,
}

/// What the loader needs next, or where it got to.
pub(super) enum Next<'a> {
    /// Read this file.
    Read(FileRole, usize, &'a str),
    /// Open the store of this prefix (client-go's recovery).
    Recover(&'static str),
    /// Ask the device for the public point of the current client key.
    KeyPublic(&'a [u8]),
    /// An internal step ([`Loader::step`]).
    Step,
    /// The node's files are judged: decide.
    Loaded,
    /// The bootstrap kubeconfig is loaded: prepare the bootstrap.
    BootLoaded,
    /// Failed: [`Loader::failure`].
    Failed,
}

/// How a loader failure ends things.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fail {
    /// The node's own files could not be opened at all: the attempt cannot start.
    Stop,
    /// The bootstrap kubeconfig is unusable: the attempt fails.
    Attempt,
}

/// The loader (see the module docs). Its regions: eight paths, four PEM regions, the key.
pub(super) struct Loader<'m> {
    st: St,
    /// The node name (configured, or learnt from the client certificate; empty until known).
    pub(super) node: heapless::String<MAX_NODE_NAME>,
    pub(super) node_kc: Cluster<'m>,
    node_kc_dir: Text<'m>,
    cert_path: Text<'m>,
    key_path: Text<'m>,
    /// `kubelet-server-current.pem`.
    serving_path: Text<'m>,
    need_node_ca: bool,
    need_cert: bool,
    need_key: bool,
    /// The node kubeconfig names `kubelet-client-current.pem` for the certificate and the key.
    pub(super) kc_points_at_current: bool,
    /// The node kubeconfig names the cert dir's CA file.
    pub(super) kc_names_ca_file: bool,
    pub(super) client_chain: Bytes<'m>,
    /// The client key PEM, or its reference when a device holds it (secret).
    pub(super) client_key: Bytes<'m>,
    /// The public point of the current client key when a device holds it (from the device).
    pub(super) client_point: Option<[u8; 65]>,
    /// The configured CA bundle.
    pub(super) bundle: Bytes<'m>,
    bundle_loaded: bool,
    pub(super) client: Verdict,
    pub(super) serving: Verdict,
    /// The cert dir exists (its store opened).
    pub(super) client_dir_exists: bool,
    pub(super) boot: Cluster<'m>,
    boot_dir: Text<'m>,
    token_path: Text<'m>,
    pub(super) token: Option<BootstrapToken>,
    failure: Option<(Error, Detail, Fail)>,
    /// The pairs the apiserver took as the node though they chain to no CA the agent has: kept
    /// across readings (its word outlives one reading), forgotten by [`Loader::forget_proofs`].
    pub(super) proven: Proven,
}

/// The bytes of a pair file the loader reads at most (the chain and the key).
fn pair_len(chain: &Bytes<'_>, key: &Bytes<'_>) -> usize {
    chain.capacity().saturating_add(key.capacity())
}

impl<'m> Loader<'m> {
    /// A loader over its regions: eight paths, four PEM regions (the node CA, the client chain,
    /// the CA bundle, the bootstrap CA) and the key.
    pub(super) fn new(paths: [Text<'m>; 8], pems: [Bytes<'m>; 4], key: Bytes<'m>) -> Self {
        let [
            node_ca_file,
            node_kc_dir,
            cert_path,
            key_path,
            serving_path,
            boot_ca_file,
            boot_dir,
            token_path,
        ] = paths;
        let [node_ca, client_chain, bundle, boot_ca] = pems;
        Loader {
            st: St::Idle,
            node: heapless::String::new(),
            node_kc: Cluster::new(node_ca, node_ca_file),
            node_kc_dir,
            cert_path,
            key_path,
            serving_path,
            need_node_ca: false,
            need_cert: false,
            need_key: false,
            kc_points_at_current: false,
            kc_names_ca_file: false,
            client_chain,
            client_key: key,
            client_point: None,
            bundle,
            bundle_loaded: false,
            client: Verdict::Unknown,
            serving: Verdict::Unknown,
            client_dir_exists: false,
            boot: Cluster::new(boot_ca, boot_ca_file),
            boot_dir,
            token_path,
            token: None,
            failure: None,
            proven: Proven::new(),
        }
    }

    /// Forget everything read (the key and the token wiped): every field as [`Loader::new`]
    /// has it (the destructuring makes a new field a compile error until it is reset here).
    pub(super) fn reset(&mut self) {
        let Loader {
            st,
            node,
            node_kc,
            node_kc_dir,
            cert_path,
            key_path,
            serving_path,
            need_node_ca,
            need_cert,
            need_key,
            kc_points_at_current,
            kc_names_ca_file,
            client_chain,
            client_key,
            client_point,
            bundle,
            bundle_loaded,
            client,
            serving,
            client_dir_exists,
            boot,
            boot_dir,
            token_path,
            token,
            failure,
            proven: _,
        } = self;
        *st = St::Idle;
        node.clear();
        node_kc.clear();
        for t in [node_kc_dir, cert_path, key_path, serving_path, boot_dir, token_path] {
            t.clear();
        }
        *need_node_ca = false;
        *need_cert = false;
        *need_key = false;
        *kc_points_at_current = false;
        *kc_names_ca_file = false;
        client_chain.clear();
        client_key.wipe();
        *client_point = None;
        bundle.clear();
        *bundle_loaded = false;
        *client = Verdict::Unknown;
        *serving = Verdict::Unknown;
        *client_dir_exists = false;
        boot.clear();
        *token = None;
        *failure = None;
    }

    /// Forget what the apiserver proved (a new start).
    pub(super) fn forget_proofs(&mut self) {
        self.proven.clear();
    }

    /// Start reading the node's files (everything read before is forgotten; the node name is
    /// the configured one again, or unknown).
    pub(super) fn begin(&mut self, s: &Settings<'_>) {
        self.reset();
        if let Some(n) = &s.node_name {
            let _ = self.node.push_str(n);
        }
        // Check mode changes nothing, not even an interrupted swap (it reads what is there).
        self.st = if s.mode == Mode::Check { St::ReadKubeconfig } else { St::RecoverClient };
    }

    /// Read the bootstrap kubeconfig (and the CA file and token file it names).
    pub(super) fn begin_bootstrap(&mut self) {
        self.boot.clear();
        self.boot_dir.clear();
        self.token_path.clear();
        self.token = None;
        self.failure = None;
        self.st = St::ReadBootKc;
    }

    /// What the loader needs now.
    pub(super) fn next<'a>(&'a self, s: &'a Settings<'_>) -> Next<'a> {
        let pair = pair_len(&self.client_chain, &self.client_key);
        let pem = self.bundle.capacity();
        match self.st {
            St::Idle | St::Failed => Next::Failed,
            St::RecoverClient => Next::Recover(PREFIX_CLIENT),
            St::RecoverServer => Next::Recover(PREFIX_SERVER),
            St::ReadKubeconfig => {
                Next::Read(FileRole::Kubeconfig, crate::kubeconfig::MAX_INPUT_LEN, &s.kubeconfig)
            }
            St::ReadNodeCa => Next::Read(FileRole::ClusterCa, pem, &self.node_kc.ca_file),
            St::ReadClientCert => Next::Read(FileRole::ClientCertificate, pair, &self.cert_path),
            St::ReadClientKey => Next::Read(FileRole::ClientKey, pair, &self.key_path),
            St::KeyPublic => Next::KeyPublic(&self.client_key),
            St::ReadBundle => Next::Read(FileRole::CaBundle, pem, &s.bundle),
            St::ReadServing => Next::Read(FileRole::ServingPair, pair, &self.serving_path),
            St::ReadBootKc => Next::Read(
                FileRole::BootstrapKubeconfig,
                crate::kubeconfig::MAX_INPUT_LEN,
                &s.bootstrap,
            ),
            St::ReadBootCa => Next::Read(FileRole::ClusterCa, pem, &self.boot.ca_file),
            St::ReadTokenFile => Next::Read(FileRole::TokenFile, 4096, &self.token_path),
            St::CheckClient => Next::Step,
            St::Loaded => Next::Loaded,
            St::BootLoaded => Next::BootLoaded,
        }
    }

    /// Why it failed, and how that ends things.
    pub(super) fn failure(&self) -> Option<(Error, &str, Fail)> {
        self.failure.as_ref().map(|(e, d, f)| (*e, d.as_str(), *f))
    }

    fn fail(&mut self, e: Error, d: Detail, how: Fail) {
        self.failure = Some((e, d, how));
        self.st = St::Failed;
    }

    // -----------------------------------------------------------------------------------------
    // Answers

    /// The outcome of the read [`Loader::next`] asked for.
    pub(super) fn on_read(
        &mut self,
        cx: &mut LoadCx<'_, '_>,
        now: i64,
        result: core::result::Result<&[u8], StoreErrorKind>,
    ) {
        match self.st {
            St::ReadKubeconfig => {
                match result {
                    Ok(bytes) => {
                        if let Err(e) = self.load_node_kubeconfig(cx, bytes) {
                            self.unusable(e, Part::Kubeconfig);
                        }
                    }
                    Err(e) => self.unusable(Error::Store(e), Part::Kubeconfig),
                }
                self.next_client_read(cx.s);
            }
            St::ReadNodeCa => {
                self.need_node_ca = false;
                match result {
                    Ok(b) => {
                        if let Err(e) = self.node_kc.ca.set(b) {
                            self.unusable(e, Part::CertificateAuthority);
                        }
                    }
                    Err(e) => self.unusable(Error::Store(e), Part::CertificateAuthority),
                }
                self.next_client_read(cx.s);
            }
            St::ReadClientCert => {
                self.need_cert = false;
                let same = self.key_path == self.cert_path;
                match result {
                    Ok(b) => {
                        let key = if same { Some(&mut self.client_key) } else { None };
                        if let Err(e) = split_pair(b, Some(&mut self.client_chain), key) {
                            self.unusable(e, Part::ClientCertificate);
                        }
                    }
                    Err(e) => self.unusable(Error::Store(e), Part::ClientCertificate),
                }
                self.next_client_read(cx.s);
            }
            St::ReadClientKey => {
                self.need_key = false;
                match result {
                    Ok(b) => {
                        if let Err(e) = key_block(b, &mut self.client_key) {
                            self.unusable(e, Part::ClientKey);
                        }
                    }
                    Err(e) => self.unusable(Error::Store(e), Part::ClientKey),
                }
                self.next_client_read(cx.s);
            }
            St::ReadBundle => {
                self.bundle_loaded = true;
                let r = match result {
                    Ok(b) => self.bundle.set(b),
                    Err(e) => Err(Error::Store(e)),
                };
                match r {
                    Ok(()) => self.st = St::CheckClient,
                    Err(e) => {
                        let d = detail(format_args!("reading the CA bundle {}", cx.s.bundle));
                        self.fail(e, d, Fail::Stop);
                    }
                }
            }
            St::ReadServing => {
                self.serving = match result {
                    Ok(b) => {
                        if cx.s.mode == Mode::Check {
                            // `out` keeps the serving chain (no file step uses it in this mode).
                            if split_pair(b, Some(&mut *cx.out), None).is_err() {
                                cx.out.clear();
                            }
                        }
                        self.validate(cx, Some(b), now)
                    }
                    Err(e) => Verdict::Unusable(Error::Store(e), Part::ServingCertificate),
                };
                self.report(cx, true);
                self.st = St::Loaded;
            }
            St::ReadBootKc => {
                let r = match result {
                    Ok(b) => self.load_bootstrap_kubeconfig(cx.s, b),
                    Err(e) => Err(Error::Store(e)),
                };
                match r {
                    Ok(()) => self.next_bootstrap_read(),
                    Err(e) => {
                        let d = detail(format_args!("the bootstrap kubeconfig {}", cx.s.bootstrap));
                        self.fail(e, d, Fail::Attempt);
                    }
                }
            }
            St::ReadBootCa => {
                self.boot.ca_file_read = true;
                let r = match result {
                    Ok(b) => self.boot.ca.set(b),
                    Err(e) => Err(Error::Store(e)),
                };
                match r {
                    Ok(()) => self.next_bootstrap_read(),
                    Err(e) => {
                        let d = detail(format_args!("certificate-authority {}", self.boot.ca_file));
                        self.fail(e, d, Fail::Attempt);
                    }
                }
            }
            St::ReadTokenFile => {
                let r = match result {
                    Ok(b) => core::str::from_utf8(b)
                        .map_err(|_| Error::InvalidToken)
                        .and_then(|s| BootstrapToken::parse(s.trim())),
                    Err(e) => Err(Error::Store(e)),
                };
                match r {
                    Ok(t) => {
                        self.token = Some(t);
                        self.st = St::BootLoaded;
                    }
                    Err(e) => {
                        let d = detail(format_args!("the token file {}", self.token_path));
                        self.fail(e, d, Fail::Attempt);
                    }
                }
            }
            _ => {}
        }
    }

    /// The outcome of the store's recovery ([`Next::Recover`]).
    pub(super) fn on_recovered(
        &mut self,
        cx: &mut LoadCx<'_, '_>,
        result: core::result::Result<(), StoreErrorKind>,
    ) {
        match (self.st, result) {
            (St::RecoverClient, Ok(())) => {
                self.client_dir_exists = true;
                self.st = St::ReadKubeconfig;
            }
            (St::RecoverClient, Err(StoreErrorKind::NotFound)) => {
                self.client_dir_exists = false;
                self.st = St::ReadKubeconfig;
            }
            (St::RecoverClient, Err(e)) => {
                let d = detail(format_args!(
                    "opening the cert dir {} ({PREFIX_CLIENT})",
                    cx.s.cert_dir
                ));
                self.fail(Error::Store(e), d, Fail::Stop);
            }
            (St::RecoverServer, Ok(()) | Err(StoreErrorKind::NotFound)) => self.read_serving(cx),
            (St::RecoverServer, Err(e)) => {
                self.serving = Verdict::Unusable(Error::Store(e), Part::ServingCertificate);
                self.report(cx, true);
                self.st = St::Loaded;
            }
            _ => {}
        }
    }

    /// The device's answer to [`Next::KeyPublic`]. A device that does not answer makes the
    /// client key unusable in [`Mode::Check`]; otherwise the attempt cannot start
    /// ([`Error::KeyDevice`] naming the device, retried by a daemon) — never a reason to
    /// bootstrap a key elsewhere.
    pub(super) fn on_key_public(
        &mut self,
        cx: &mut LoadCx<'_, '_>,
        result: core::result::Result<[u8; 65], &str>,
    ) {
        if self.st != St::KeyPublic {
            return;
        }
        match result {
            Ok(p) => {
                self.client_point = Some(p);
                self.next_client_read(cx.s);
            }
            Err(why) => {
                if cx.s.mode == Mode::Check {
                    self.unusable(Error::KeyDevice, Part::ClientKey);
                    self.next_client_read(cx.s);
                } else {
                    let holder = Holder::of_pem(&self.client_key).map_or("device", Holder::as_str);
                    let d = detail(format_args!("the client key's {holder} device: {why}"));
                    self.fail(Error::KeyDevice, d, Fail::Stop);
                }
            }
        }
    }

    /// The internal step of [`Next::Step`]: judge the client credentials.
    #[inline(never)] // its locals stay out of poll's frame (firmware stacks)
    pub(super) fn step(&mut self, cx: &mut LoadCx<'_, '_>, now: i64) {
        if self.st != St::CheckClient {
            return;
        }
        if self.client == Verdict::Unknown {
            self.client = self.validate(cx, None, now);
        }
        self.report(cx, false);
        let usable = matches!(self.client, Verdict::Valid(_));
        if cx.s.mode == Mode::Check {
            cx.out.wipe();
            self.read_serving(cx);
        } else {
            self.st = if usable && cx.s.serving { St::RecoverServer } else { St::Loaded };
        }
    }

    // -----------------------------------------------------------------------------------------
    // Reading

    fn unusable(&mut self, e: Error, what: Part) {
        if self.client == Verdict::Unknown {
            self.client = Verdict::Unusable(e, what);
        }
    }

    /// Whether the current client key (as read) is a device's reference.
    pub(super) fn client_key_in_device(&self) -> bool {
        matches!(Holder::of_pem(&self.client_key), Ok(Holder::Tpm | Holder::Pkcs11))
    }

    /// The next file to read for the client credentials, or the check.
    fn next_client_read(&mut self, s: &Settings<'_>) {
        let usable = self.client == Verdict::Unknown;
        self.st = if usable && self.need_node_ca {
            St::ReadNodeCa
        } else if usable && self.need_cert {
            St::ReadClientCert
        } else if usable && self.need_key {
            St::ReadClientKey
        } else if usable && self.client_point.is_none() && self.client_key_in_device() {
            St::KeyPublic
        } else if !s.bundle.is_empty() && !self.bundle_loaded {
            St::ReadBundle
        } else {
            St::CheckClient
        };
    }

    fn next_bootstrap_read(&mut self) {
        self.st = if !self.boot.ca_file.is_empty() && !self.boot.ca_file_read {
            St::ReadBootCa
        } else if self.token.is_none() && !self.token_path.is_empty() {
            St::ReadTokenFile
        } else {
            St::BootLoaded
        };
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    fn load_node_kubeconfig(&mut self, cx: &mut LoadCx<'_, '_>, bytes: &[u8]) -> Result<()> {
        let kc = Kubeconfig::parse(bytes)?;
        let r = kc.resolve()?;
        self.node_kc_dir.set(path::dir(&cx.s.kubeconfig))?;
        self.node_kc.load(&r, &self.node_kc_dir)?;
        if !self.node_kc.ca_file.is_empty() {
            self.need_node_ca = true;
            self.kc_names_ca_file = self.node_kc.ca_file == cx.s.ca_file;
        }
        match r.user.client_cert_source() {
            Source::Data(d) => {
                // (`out` is free while the loader runs: the decoded chain passes through it)
                data_into(d, cx.out)?;
                split_pair(cx.out, Some(&mut self.client_chain), None)?;
                cx.out.clear();
            }
            Source::File(f) => {
                resolve_scalar(f, &self.node_kc_dir, &mut self.cert_path)?;
                self.need_cert = true;
            }
            Source::None => return Err(Error::Store(StoreErrorKind::NoCertKeyFiles)),
        }
        match r.user.client_key_source() {
            Source::Data(d) => {
                let r = data_into(d, cx.out).and_then(|()| key_block(cx.out, &mut self.client_key));
                cx.out.wipe();
                r?;
            }
            Source::File(f) => {
                resolve_scalar(f, &self.node_kc_dir, &mut self.key_path)?;
                self.need_key = self.key_path != self.cert_path || !self.need_cert;
            }
            Source::None => return Err(Error::Store(StoreErrorKind::NoCertKeyFiles)),
        }
        self.kc_points_at_current =
            is_current(&self.cert_path, &cx.s.cert_dir) && self.key_path == self.cert_path;
        Ok(())
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    fn load_bootstrap_kubeconfig(&mut self, s: &Settings<'_>, bytes: &[u8]) -> Result<()> {
        let kc = Kubeconfig::parse(bytes)?;
        let r = kc.resolve()?;
        self.boot_dir.set(path::dir(&s.bootstrap))?;
        self.boot.load(&r, &self.boot_dir)?;
        match (r.user.token.filter(|t| !t.is_empty()), r.user.token_file.filter(|t| !t.is_empty()))
        {
            (Some(t), _) => {
                let mut buf = [0u8; 64];
                let text = t.decode_into(&mut buf).map_err(|_| Error::InvalidToken);
                let token = text.and_then(|s| BootstrapToken::parse(s.trim()));
                buf.zeroize();
                self.token = Some(token?);
            }
            (None, Some(f)) => resolve_scalar(f, &self.boot_dir, &mut self.token_path)?,
            (None, None) => return Err(Error::InvalidToken),
        }
        Ok(())
    }

    /// Read `kubelet-server-current.pem` next.
    fn read_serving(&mut self, cx: &mut LoadCx<'_, '_>) {
        match path::child_into(
            &cx.s.cert_dir,
            &[PREFIX_SERVER, "-current.pem"],
            &mut self.serving_path,
        ) {
            Ok(()) => self.st = St::ReadServing,
            Err(e) => {
                self.serving = Verdict::Unusable(e, Part::ServingCertificate);
                self.st = St::Loaded;
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Judging

    /// Judge the client credentials as read (`None`), or a pair file (chain then key) as the
    /// serving certificate ([`verdict::judge`]).
    pub(super) fn validate(
        &mut self,
        cx: &mut LoadCx<'_, '_>,
        pair: Option<&[u8]>,
        now: i64,
    ) -> Verdict {
        let ca: &[u8] = if !self.bundle.is_empty() { &self.bundle } else { &self.node_kc.ca };
        let (chain, key) = match (pair, self.client_point) {
            (Some(both), _) => (both, Key::Pem(both)),
            (None, Some(p)) if self.client_key_in_device() => {
                (&self.client_chain[..], Key::Point(p))
            }
            // The key this attempt made and still holds (the pair it just stored): its public
            // point is known, and deriving it again costs a scalar multiplication.
            (None, _) => match cx.held.filter(|k| holds(k, &self.client_key)) {
                Some(k) => (&self.client_chain[..], Key::Point(k.public_point())),
                None => (&self.client_chain[..], Key::Pem(&self.client_key)),
            },
        };
        let serving = pair.is_some();
        let may_prove = !serving && self.bundle.is_empty();
        let against = Against { ca, key, serving, may_prove, proven: &self.proven };
        verdict::judge(chain, against, &mut self.node, cx.s, cx.work, now)
    }

    fn report(&mut self, cx: &mut LoadCx<'_, '_>, serving: bool) {
        let v = if serving { self.serving } else { self.client };
        verdict::report(cx.ev, cx.metrics, serving, v);
    }

    /// After [`Mode::Check`]: the verdicts and what they were made from (`out` holds the
    /// serving chain).
    pub(super) fn status<'a>(&'a self, s: &'a Settings<'_>, out: &'a [u8]) -> Status<'a> {
        fn verdict(v: Verdict) -> core::result::Result<CertStatus, Unusable> {
            match v {
                Verdict::Valid(c) => Ok(c),
                Verdict::Unusable(error, what) => Err(Unusable { error, what: what.as_str() }),
                Verdict::Unanchored(_) => Err(Unusable {
                    error: Error::Verify(crate::error::VerifyError::new(
                        crate::error::Reason::Untrusted,
                    )),
                    what: Part::ClientCertificate.as_str(),
                }),
                Verdict::Unknown => Err(Unusable {
                    error: Error::Store(StoreErrorKind::NotFound),
                    what: Part::Kubeconfig.as_str(),
                }),
            }
        }
        fn file_or(path: &str, inline: bool) -> Origin<'_> {
            if !path.is_empty() {
                Origin::File(path)
            } else if inline {
                Origin::Data
            } else {
                Origin::None
            }
        }
        let client = CertCheck {
            verdict: verdict(self.client),
            chain_pem: &self.client_chain,
            certificate: file_or(&self.cert_path, !self.client_chain.is_empty()),
            key: file_or(&self.key_path, !self.client_key.is_empty()),
        };
        let missing =
            Verdict::Unusable(Error::Store(StoreErrorKind::NotFound), Part::ServingCertificate);
        let serving_file = if self.serving == missing || self.serving_path.is_empty() {
            Origin::None
        } else {
            Origin::File(&self.serving_path)
        };
        let serving = CertCheck {
            verdict: verdict(self.serving),
            chain_pem: out,
            certificate: serving_file,
            key: serving_file,
        };
        let (ca_pem, ca): (&[u8], Origin<'_>) = if !s.bundle.is_empty() {
            (&self.bundle, file_or(&s.bundle, false))
        } else if !self.node_kc.ca_file.is_empty() {
            (&self.node_kc.ca, file_or(&self.node_kc.ca_file, false))
        } else {
            (&self.node_kc.ca, if self.node_kc.ca.is_empty() { Origin::None } else { Origin::Data })
        };
        Status { node: &self.node, client, serving, ca_pem, ca }
    }

    /// The CA certificates are checked against: the configured bundle, else the bootstrap
    /// kubeconfig's (bootstrap) or the node kubeconfig's.
    pub(super) fn validation_ca(&self, bootstrap: bool) -> &[u8] {
        if !self.bundle.is_empty() {
            &self.bundle
        } else if bootstrap {
            &self.boot.ca
        } else {
            &self.node_kc.ca
        }
    }
}

/// What the loader works with besides its own regions.
pub(super) struct LoadCx<'a, 'm> {
    pub(super) s: &'a Settings<'m>,
    pub(super) ev: &'a mut Events,
    pub(super) metrics: &'a mut Metrics,
    /// The file-step output, free while the loader runs (and the serving chain in check mode).
    pub(super) out: &'a mut Bytes<'m>,
    /// The work buffer, idle while the loader runs: scratch for validation.
    pub(super) work: &'a mut [u8],
    /// The software key the agent holds from this start's attempt, if any.
    pub(super) held: Option<&'a NodeKey>,
}

/// Whether the key file `pem` (an `EC PRIVATE KEY` block) is `key`: their SEC1 DER compared, so
/// no public key is derived.
fn holds(key: &NodeKey, pem: &[u8]) -> bool {
    let mut ours = Zeroizing::new([0u8; SEC1_DER_LEN]);
    let mut theirs = Zeroizing::new([0u8; SEC1_DER_LEN + 1]);
    match (
        key.to_sec1_der(&mut ours[..]),
        pem::decode_first(pem, LABEL_EC_PRIVATE_KEY, &mut theirs[..]),
    ) {
        (Ok(n), Ok(t)) => ours.get(..n) == Some(t),
        _ => false,
    }
}

/// A scalar's text into `dst`.
pub(super) fn scalar_into<const M: usize>(
    s: Scalar<'_>,
    dst: &mut heapless::String<M>,
) -> Result<()> {
    dst.clear();
    let mut buf = [0u8; M];
    let text = s.decode_into(&mut buf).map_err(|e| match e {
        Error::BufferTooSmall { .. } => Error::TooLarge,
        e => e,
    })?;
    dst.push_str(text).map_err(|_| Error::TooLarge)
}

/// A path scalar of a kubeconfig at `dir`, made absolute into `dst`.
fn resolve_scalar(s: Scalar<'_>, dir: &str, dst: &mut Text<'_>) -> Result<()> {
    match s.as_borrowed() {
        Some(rel) => path::resolve_into(dir, rel, dst),
        None => resolve_escaped(s, dir, dst),
    }
}

/// A quoted path with escapes (rare): decoded on the stack first (at most 1 KiB).
#[inline(never)] // its buffer is on the stack only when such a path is read
fn resolve_escaped(s: Scalar<'_>, dir: &str, dst: &mut Text<'_>) -> Result<()> {
    let mut rel = heapless::String::<1024>::new();
    scalar_into(s, &mut rel)?;
    path::resolve_into(dir, &rel, dst)
}

/// Whether `p` is `<cert_dir>/kubelet-client-current.pem`.
fn is_current(p: &str, cert_dir: &str) -> bool {
    let Some(rest) = p.strip_prefix(cert_dir) else { return false };
    let rest = if cert_dir.ends_with('/') { Some(rest) } else { rest.strip_prefix('/') };
    rest.and_then(|r| r.strip_prefix(PREFIX_CLIENT)) == Some("-current.pem")
}

/// A `*-data` scalar's decoded bytes into `dst`.
pub(super) fn data_into(s: Scalar<'_>, dst: &mut Bytes<'_>) -> Result<()> {
    dst.fill(|b| s.decode_base64_into(b).map(|d| d.len()))
}

/// The first private-key block of `input` (a key, or a device's reference), verbatim, into
/// `key` (left empty when there is none; a block over `key`'s capacity is [`Error::TooLarge`]).
fn key_block(input: &[u8], key: &mut Bytes<'_>) -> Result<()> {
    split_pair(input, None, Some(key))
}

/// The `CERTIFICATE` blocks of `input` into `chain` (when given), and the first private-key
/// block into `key` (when given), verbatim.
pub(super) fn split_pair(
    input: &[u8],
    mut chain: Option<&mut Bytes<'_>>,
    mut key: Option<&mut Bytes<'_>>,
) -> Result<()> {
    for block in pem::blocks(input) {
        let Ok(block) = block else { break };
        if block.label == "CERTIFICATE" {
            if let Some(chain) = chain.as_deref_mut() {
                chain.extend(block.text)?;
                if !block.text.ends_with(b"\n") {
                    chain.push(b'\n')?;
                }
            }
        } else if keyref::is_key_label(block.label) {
            if let Some(k) = key.as_deref_mut() {
                if k.is_empty() {
                    k.extend(block.text)?;
                    if !block.text.ends_with(b"\n") {
                        k.push(b'\n')?;
                    }
                }
            }
        }
    }
    Ok(())
}
