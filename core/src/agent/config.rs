//! How an agent is configured (the mode, the files, discovery, serving), and the agent's own
//! copy of it, [`Settings`], which every sub-machine reads.

use core::net::IpAddr;

use super::{CA_FILE, DEFAULT_CA_REFRESH_SECS, MAX_URL, PREFIX_CLIENT, path};
use crate::backend::SignatureVerifier;
use crate::buf::Text;
use crate::csr::MAX_SANS;
use crate::engine;
use crate::error::{Error, Result};
use crate::keyref::{self, MAX_DEVICE};
use crate::pin::CaPin;
use crate::token::BootstrapToken;

pub use super::event::LogFormat;

/// Run once or as a daemon.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Make the credentials usable (bootstrap, rotate when due, request the serving certificate
    /// when configured), then [`super::Action::Done`]. A failure is [`super::Action::Failed`].
    Once,
    /// Keep them usable: after each success sleep until the next rotation deadline; a failure is
    /// retried with the kubelet's backoff. `max_rotations`: stop with [`super::Action::Done`] after
    /// that many successful rotations (tests), `None`: forever.
    Run {
        /// Stop after this many rotations.
        max_rotations: Option<u32>,
    },
    /// Only discover: kubeadm token discovery ([`Config::discovery`]) writes the bootstrap
    /// kubeconfig, then [`super::Action::Done`] (`kubeboot discover`). Nothing else is read or
    /// written.
    Discover,
    /// Only look: read the node kubeconfig, the client credentials, the CA and the serving pair
    /// (`kubelet-server-current.pem`, whether or not [`Config::serving`] is set), validate them
    /// as [`Mode::Once`] would, and stop with [`super::Action::Done`] whatever the verdicts: no request,
    /// no file step (not even the store recovery), no entropy. [`super::Agent::status`] then has the
    /// verdicts and what they were made from (`kubeboot status`). Without [`Config::serving`],
    /// the serving certificate's SANs are taken as requested (every other check applies).
    Check,
}

/// What to rotate right away, whatever the deadline (once; `kubeboot rotate --force`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RotateNow {
    /// The client certificate.
    pub client: bool,
    /// The serving certificate (when configured).
    pub serving: bool,
}

/// kubeadm-style token discovery: where the bootstrap kubeconfig comes from when the node has
/// only a token, an endpoint and CA pins (see [`crate::discovery`]). The discovered kubeconfig
/// is written to [`Config::bootstrap_kubeconfig`].
#[derive(Clone, Copy)]
pub struct DiscoveryConfig<'a> {
    /// `https://host:port` of the apiserver (the join endpoint).
    pub server: &'a str,
    /// The bootstrap token.
    pub token: &'a BootstrapToken,
    /// CA pins (`sha256:...`), at most [`crate::discovery::MAX_PINS`].
    pub pins: &'a [CaPin],
    /// Trust the JWS-signed CA without a pin (kubeadm's unsafe skip).
    pub allow_unpinned: bool,
    /// Give up discovery after this many seconds.
    pub timeout_secs: i64,
}

/// The serving certificate's SANs (the kubelet's `serverTLSBootstrap`). At least one IP address,
/// as the kubelet requires since v1.31 (`AllowDNSOnlyNodeCSR` off): [`super::Agent::start`] refuses DNS
/// names alone with [`Error::ServingNeedsIp`].
#[derive(Clone, Copy, Debug)]
pub struct Serving<'a> {
    /// DNS names.
    pub dns: &'a [&'a str],
    /// IP addresses.
    pub ips: &'a [IpAddr],
}

/// What the agent manages and how. Only read by [`super::Agent::start`], which copies what it needs.
/// Paths may be relative to [`Config::working_dir`].
#[derive(Clone, Copy)]
pub struct Config<'a> {
    /// The front-end's name (`rust`, `c`, `go`, ...): the `agent=` of every event and part of the
    /// User-Agent. At most 16 bytes of `[a-z0-9-]`.
    pub front_end: &'a str,
    /// The absolute directory relative paths of this configuration are resolved against (the
    /// process's working directory).
    pub working_dir: &'a str,
    /// The node name. `None`: taken from the current client certificate's subject (rotation
    /// only; bootstrapping needs it).
    pub node_name: Option<&'a str>,
    /// The node kubeconfig: checked first, written after bootstrap.
    pub kubeconfig: &'a str,
    /// The bootstrap kubeconfig (server, CA, bootstrap token); `None`: the node cannot
    /// bootstrap (rotation only).
    pub bootstrap_kubeconfig: Option<&'a str>,
    /// Discover the cluster with a token first (writes `bootstrap_kubeconfig`, which must be set).
    pub discovery: Option<DiscoveryConfig<'a>>,
    /// The certificate directory (`/var/lib/kubelet/pki`).
    pub cert_dir: &'a str,
    /// The CA bundle issued certificates must chain to. `None`: the kubeconfig's CA (the
    /// bootstrap kubeconfig's for bootstrap).
    pub ca_bundle: Option<&'a str>,
    /// Request and keep a serving certificate too.
    pub serving: Option<Serving<'a>>,
    /// How long a bootstrap waits for its certificate (the kubelet: one hour).
    pub bootstrap_wait_secs: i64,
    /// How long a rotation or serving request waits (the certificate manager: 15 minutes).
    pub rotation_wait_secs: i64,
    /// `spec.expirationSeconds` of every CSR (≥ 600), or `None` for the signer's default.
    pub expiration_seconds: Option<u32>,
    /// Watch CSRs (the kubelet's way) or poll them.
    pub watch: bool,
    /// Once or as a daemon.
    pub mode: Mode,
    /// Rotate right away.
    pub rotate_now: RotateNow,
    /// The local time's offset from UTC in seconds (data files are named by local time, as the
    /// kubelet's); update it with [`super::Agent::set_utc_offset`].
    pub utc_offset: i32,
    /// Seed of the rotation-deadline and backoff jitter (any unpredictable value; not secret).
    pub seed: u64,
    /// Who checks certificate signatures.
    pub verifier: &'static (dyn SignatureVerifier + Sync),
    /// How event lines are written (text or JSON).
    pub log_format: LogFormat,
    /// Where new client keys are made ([`crate::keyref::Device`]: `tpm`, or a `pkcs11:` URI of
    /// the token with its `module-path` and `pin-source`); `None`: in software, from
    /// [`super::Action::Entropy`]. With a device every new key is made there ([`super::KeyOp::Generate`]), the
    /// CSR is signed there ([`super::KeyOp::Sign`]), the cert dir and the node kubeconfig hold its
    /// reference instead of the key, and a rotation destroys the replaced key once the new pair
    /// is current ([`super::KeyOp::Destroy`]). Not with [`Config::serving`] (the serving key stays in
    /// software: [`Error::InvalidConfig`]).
    pub key_device: Option<&'a str>,
    /// [`Mode::Run`]: how often (seconds) to re-read the cluster's CA for the apiserver and keep
    /// the node's CA file (`<cert_dir>/ca.crt`, which the node kubeconfig names) current; `0`:
    /// never. Also at start and at [`super::Agent::wake`]. See [the CA refresh](super#the-ca-refresh).
    pub ca_refresh_secs: i64,
    /// An attested join ([`crate::attest`]): the attestation key's certificate chain (PEM, the
    /// key's certificate first, as `kubeboot device provision` writes it). The bootstrap CSR then
    /// carries, after the CSR, a `TPM2_Certify` of the node key by the device's attestation key
    /// over the CSR's [`crate::attest::qualifying_data`] ([`super::KeyOp::Certify`]), the key's
    /// public area and this chain. Needs [`Config::key_device`] `tpm` ([`Error::InvalidConfig`]
    /// otherwise). Rotations are not attested (the node's certificate authenticates them).
    pub attestation: Option<&'a str>,
}

impl<'a> Config<'a> {
    /// A configuration with the kubelet's defaults: no bootstrap kubeconfig, watch, one-hour
    /// bootstrap wait, fifteen-minute rotation wait, [`Mode::Once`], UTC, software verifier; the
    /// CA refreshed every [`DEFAULT_CA_REFRESH_SECS`] in [`Mode::Run`].
    pub fn new(
        front_end: &'a str,
        working_dir: &'a str,
        kubeconfig: &'a str,
        cert_dir: &'a str,
    ) -> Self {
        Config {
            front_end,
            working_dir,
            node_name: None,
            kubeconfig,
            bootstrap_kubeconfig: None,
            discovery: None,
            cert_dir,
            ca_bundle: None,
            serving: None,
            bootstrap_wait_secs: engine::BOOTSTRAP_WAIT_SECS,
            rotation_wait_secs: engine::ROTATION_WAIT_SECS,
            expiration_seconds: None,
            watch: true,
            mode: Mode::Once,
            rotate_now: RotateNow::default(),
            utc_offset: 0,
            seed: 0,
            verifier: crate::backend::SOFTWARE,
            log_format: LogFormat::Text,
            key_device: None,
            ca_refresh_secs: DEFAULT_CA_REFRESH_SECS,
            attestation: None,
        }
    }
}

/// kubeadm discovery as configured (the agent's copy).
pub(super) struct DiscoverySettings {
    pub(super) server: heapless::String<MAX_URL>,
    pub(super) token: BootstrapToken,
    pub(super) pins: heapless::Vec<CaPin, { crate::discovery::MAX_PINS }>,
    pub(super) allow_unpinned: bool,
    pub(super) timeout_secs: i64,
}

/// The agent's copy of its [`Config`]: what every sub-machine reads, set at
/// [`super::Agent::start`] and never changed by a run. Paths are absolute and clean; the serving
/// DNS names are one region of the agent's memory, a name per line.
pub(super) struct Settings<'m> {
    pub(super) user_agent: heapless::String<64>,
    /// The configured node name (`None`: learnt from the client certificate).
    pub(super) node_name: Option<heapless::String<{ crate::csr::MAX_NODE_NAME }>>,
    pub(super) kubeconfig: Text<'m>,
    pub(super) bootstrap: Text<'m>,
    pub(super) cert_dir: Text<'m>,
    pub(super) key_cache: Text<'m>,
    pub(super) ca_file: Text<'m>,
    pub(super) bundle: Text<'m>,
    /// The attestation key's chain (empty: no attestation).
    pub(super) attestation: Text<'m>,
    pub(super) discovery: Option<DiscoverySettings>,
    pub(super) serving: bool,
    pub(super) dns: Text<'m>,
    pub(super) ips: heapless::Vec<IpAddr, MAX_SANS>,
    pub(super) bootstrap_wait: i64,
    pub(super) rotation_wait: i64,
    pub(super) expiration_seconds: Option<u32>,
    pub(super) watch: bool,
    pub(super) mode: Mode,
    pub(super) rotate_now: RotateNow,
    pub(super) utc_offset: i32,
    pub(super) seed: u64,
    /// `None` is the software verifier (no reference in the idle state).
    pub(super) verifier: Option<&'static (dyn SignatureVerifier + Sync)>,
    pub(super) ca_refresh_secs: i64,
    /// Where new client keys are made (empty: in software).
    pub(super) device: heapless::String<MAX_DEVICE>,
}

impl<'m> Settings<'m> {
    /// Settings over the configuration's regions: seven paths and the DNS names.
    pub(super) fn new(paths: [Text<'m>; 7], dns: Text<'m>) -> Self {
        let [kubeconfig, bootstrap, cert_dir, key_cache, ca_file, bundle, attestation] = paths;
        Settings {
            user_agent: heapless::String::new(),
            node_name: None,
            kubeconfig,
            bootstrap,
            cert_dir,
            key_cache,
            ca_file,
            bundle,
            attestation,
            discovery: None,
            serving: false,
            dns,
            ips: heapless::Vec::new(),
            bootstrap_wait: engine::BOOTSTRAP_WAIT_SECS,
            rotation_wait: engine::ROTATION_WAIT_SECS,
            expiration_seconds: None,
            watch: true,
            mode: Mode::Once,
            rotate_now: RotateNow { client: false, serving: false },
            utc_offset: 0,
            seed: 0,
            verifier: None,
            ca_refresh_secs: 0,
            device: heapless::String::new(),
        }
    }

    /// Back to [`Settings::new`], in place (the destructuring makes a new field a compile error
    /// until it is reset here); the discovery token's secret is wiped by its drop.
    pub(super) fn reset(&mut self) {
        let Settings {
            user_agent,
            node_name,
            kubeconfig,
            bootstrap,
            cert_dir,
            key_cache,
            ca_file,
            bundle,
            attestation,
            discovery,
            serving,
            dns,
            ips,
            bootstrap_wait,
            rotation_wait,
            expiration_seconds,
            watch,
            mode,
            rotate_now,
            utc_offset,
            seed,
            verifier,
            ca_refresh_secs,
            device,
        } = self;
        user_agent.clear();
        *node_name = None;
        for t in [kubeconfig, bootstrap, cert_dir, key_cache, ca_file, bundle, attestation, dns] {
            t.clear();
        }
        *discovery = None;
        *serving = false;
        ips.clear();
        *bootstrap_wait = engine::BOOTSTRAP_WAIT_SECS;
        *rotation_wait = engine::ROTATION_WAIT_SECS;
        *expiration_seconds = None;
        *watch = true;
        *mode = Mode::Once;
        *rotate_now = RotateNow { client: false, serving: false };
        *utc_offset = 0;
        *seed = 0;
        *verifier = None;
        *ca_refresh_secs = 0;
        device.clear();
    }

    /// Copy `c` (by [`super::Agent::start`], on reset settings). Errors: [`Error::InvalidConfig`],
    /// [`Error::TooLarge`] for a path over the `path` capacity, [`Error::TooManySans`] for more
    /// DNS names than the `serving_dns` capacity, the SAN checks' errors.
    pub(super) fn configure(&mut self, c: &Config<'_>) -> Result<()> {
        if !path::is_absolute(c.working_dir) {
            return Err(Error::InvalidConfig);
        }
        let _ = self.user_agent.push_str("kubeboot-");
        let _ = self.user_agent.push_str(c.front_end);
        let _ = self.user_agent.push('/');
        let _ = self.user_agent.push_str(env!("CARGO_PKG_VERSION"));
        if let Some(n) = c.node_name {
            crate::csr::validate_node_name(n)?;
            self.node_name =
                Some(heapless::String::try_from(n).map_err(|_| Error::InvalidNodeName)?);
        }
        let wd = c.working_dir;
        path::resolve_into(wd, c.kubeconfig, &mut self.kubeconfig)?;
        path::resolve_into(wd, c.cert_dir, &mut self.cert_dir)?;
        path::child_into(&self.cert_dir, &[PREFIX_CLIENT, ".key.tmp"], &mut self.key_cache)?;
        path::child_into(&self.cert_dir, &[CA_FILE], &mut self.ca_file)?;
        if let Some(b) = c.bootstrap_kubeconfig {
            path::resolve_into(wd, b, &mut self.bootstrap)?;
        }
        if let Some(b) = c.ca_bundle {
            path::resolve_into(wd, b, &mut self.bundle)?;
        }
        if let Some(d) = c.discovery {
            if c.bootstrap_kubeconfig.is_none() {
                return Err(Error::InvalidConfig);
            }
            if d.pins.is_empty() && !d.allow_unpinned {
                return Err(Error::PinMismatch);
            }
            let mut server = heapless::String::new();
            server.push_str(d.server.trim_end_matches('/')).map_err(|_| Error::TooLarge)?;
            let mut pins = heapless::Vec::new();
            pins.extend_from_slice(d.pins).map_err(|_| Error::InvalidPin)?;
            self.discovery = Some(DiscoverySettings {
                server,
                token: d.token.clone(),
                pins,
                allow_unpinned: d.allow_unpinned,
                timeout_secs: d.timeout_secs,
            });
        } else if c.mode == Mode::Discover {
            return Err(Error::InvalidConfig);
        }
        if let Some(d) = c.key_device {
            keyref::Device::parse(d)?;
            if c.serving.is_some() {
                return Err(Error::InvalidConfig);
            }
            self.device.push_str(d).map_err(|_| Error::InvalidKeyReference)?;
        }
        if let Some(a) = c.attestation {
            // Only a TPM's key can be certified by the TPM's attestation key.
            let tpm = c.key_device.and_then(|d| keyref::Device::parse(d).ok());
            if !matches!(tpm, Some(keyref::Device::Tpm)) {
                return Err(Error::InvalidConfig);
            }
            path::resolve_into(wd, a, &mut self.attestation)?;
        }
        if let Some(s) = c.serving {
            // As the kubelet since v1.31: no serving certificate without an IP address.
            if s.ips.is_empty() {
                return Err(Error::ServingNeedsIp);
            }
            // The same checks as the CSR builder's (a CSR is built only later).
            crate::csr::CsrBuilder::serving(c.node_name.unwrap_or("node"), s.dns, s.ips)?;
            for (i, d) in s.dns.iter().enumerate() {
                // One name per line: a name over the region is more names than it holds.
                let room = if i == 0 { d.len() } else { d.len() + 1 };
                if self.dns.len() + room > self.dns.capacity() {
                    return Err(Error::TooManySans);
                }
                if i > 0 {
                    self.dns.push('\n')?;
                }
                self.dns.push_str(d)?;
            }
            self.ips.extend_from_slice(s.ips).map_err(|_| Error::TooManySans)?;
            self.serving = true;
        }
        if c.expiration_seconds.is_some_and(|e| e < crate::api::MIN_EXPIRATION_SECONDS) {
            return Err(Error::InvalidExpirationSeconds);
        }
        if c.ca_refresh_secs < 0 {
            return Err(Error::InvalidConfig);
        }
        self.ca_refresh_secs = c.ca_refresh_secs;
        self.bootstrap_wait = c.bootstrap_wait_secs;
        self.rotation_wait = c.rotation_wait_secs;
        self.expiration_seconds = c.expiration_seconds;
        self.watch = c.watch;
        self.mode = c.mode;
        self.rotate_now = c.rotate_now;
        self.utc_offset = c.utc_offset;
        self.seed = c.seed;
        self.verifier = Some(c.verifier);
        Ok(())
    }

    /// Who checks signatures.
    pub(super) fn verifier(&self) -> &'static (dyn SignatureVerifier + Sync) {
        self.verifier.unwrap_or(crate::backend::SOFTWARE)
    }

    /// Whether the node can bootstrap (a bootstrap kubeconfig, or discovery to write one).
    pub(super) fn can_bootstrap(&self) -> bool {
        self.discovery.is_some() || !self.bootstrap.is_empty()
    }

    /// The serving DNS names, borrowed into `refs`.
    pub(super) fn dns_names<'s>(&'s self, refs: &mut heapless::Vec<&'s str, MAX_SANS>) {
        refs.clear();
        if self.dns.is_empty() {
            return;
        }
        for name in self.dns.as_str().split('\n') {
            // At most MAX_SANS names were put in: never full.
            let _ = refs.push(name);
        }
    }

    /// Whether the agent runs as a daemon.
    pub(super) fn runs(&self) -> bool {
        matches!(self.mode, Mode::Run { .. })
    }
}
