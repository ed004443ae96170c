//! What the runtime runs: the agent's configuration as owned values ([`Settings`], turned into
//! the core's borrowed [`kubeboot::agent::Config`] when the agent starts), and what the runtime
//! itself does around it ([`Options`]: metrics, signals, systemd, printing).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use kubeboot::agent::{Capacities, Config, DiscoveryConfig, LogFormat, Mode, RotateNow, Serving};
use kubeboot::pin::CaPin;
use kubeboot::token::BootstrapToken;

/// kubeadm-style token discovery ([`kubeboot::agent::DiscoveryConfig`], owned).
#[derive(Clone)]
pub struct Discovery {
    /// `https://host:port` of the apiserver.
    pub server: String,
    /// The bootstrap token (its secret checks the cluster-info signature; wiped when dropped).
    pub token: BootstrapToken,
    /// `sha256:` pins of the cluster CA.
    pub pins: Vec<CaPin>,
    /// Trust the token-signed CA without a pin.
    pub allow_unpinned: bool,
    /// Give up after this many seconds.
    pub timeout_secs: i64,
}

/// The agent's configuration, owned ([`kubeboot::agent::Config`] field by field; the same
/// meaning and defaults). Paths may be relative to [`Settings::working_dir`].
#[derive(Clone)]
pub struct Settings {
    /// The front-end's name: `agent=` of every line, part of the User-Agent.
    pub front_end: String,
    /// Where relative paths are resolved (default: the process's working directory).
    pub working_dir: PathBuf,
    /// The node name (`None`: the current client certificate's).
    pub node_name: Option<String>,
    /// The node kubeconfig.
    pub kubeconfig: PathBuf,
    /// The bootstrap kubeconfig.
    pub bootstrap_kubeconfig: Option<PathBuf>,
    /// Discover the cluster with a token first (writes the bootstrap kubeconfig).
    pub discovery: Option<Discovery>,
    /// The certificate directory.
    pub cert_dir: PathBuf,
    /// The CA bundle issued certificates must chain to.
    pub ca_bundle: Option<PathBuf>,
    /// Request and keep a serving certificate with these SANs (DNS names, IP addresses).
    pub serving: Option<(Vec<String>, Vec<IpAddr>)>,
    /// How long a bootstrap waits for its certificate (seconds).
    pub bootstrap_wait_secs: i64,
    /// How long a rotation or serving request waits (seconds).
    pub rotation_wait_secs: i64,
    /// `spec.expirationSeconds` of every CSR.
    pub expiration_seconds: Option<u32>,
    /// Watch CSRs (else poll them).
    pub watch: bool,
    /// Once, as a daemon, discovery only, or look only.
    pub mode: Mode,
    /// Rotate right away.
    pub rotate_now: RotateNow,
    /// Text or JSON lines.
    pub log_format: LogFormat,
    /// Where new client keys are made (`tpm`, a `pkcs11:` token URI; [`kubeboot::grammar::key_device`]).
    pub key_device: Option<String>,
    /// How often a daemon re-reads the cluster's CA (seconds; `0`: never).
    pub ca_refresh_secs: i64,
    /// An attested join: the attestation key's certificate chain
    /// ([`kubeboot::agent::Config::attestation`]; needs `key_device` `tpm`).
    pub attestation: Option<PathBuf>,
}

impl Settings {
    /// The kubelet's defaults ([`kubeboot::agent::Config::new`]) for the node kubeconfig and cert
    /// dir, as front-end `front_end`, relative to the process's working directory.
    pub fn new(
        front_end: &str,
        kubeconfig: impl Into<PathBuf>,
        cert_dir: impl Into<PathBuf>,
    ) -> Settings {
        let c = Config::new("", "", "", "");
        Settings {
            front_end: front_end.into(),
            working_dir: std::env::current_dir().unwrap_or_default(),
            node_name: None,
            kubeconfig: kubeconfig.into(),
            bootstrap_kubeconfig: None,
            discovery: None,
            cert_dir: cert_dir.into(),
            ca_bundle: None,
            serving: None,
            bootstrap_wait_secs: c.bootstrap_wait_secs,
            rotation_wait_secs: c.rotation_wait_secs,
            expiration_seconds: None,
            watch: true,
            mode: Mode::Once,
            rotate_now: RotateNow::default(),
            log_format: LogFormat::Text,
            key_device: None,
            ca_refresh_secs: c.ca_refresh_secs,
            attestation: None,
        }
    }

    /// The core's configuration over these values (paths must be UTF-8). `dns` holds the
    /// serving DNS names borrowed ([`Settings::dns_names`]).
    pub(crate) fn config<'a>(
        &'a self,
        dns: &'a [&'a str],
        utc_offset: i32,
        seed: u64,
    ) -> Result<Config<'a>, crate::Error> {
        let mut c = Config::new(
            &self.front_end,
            utf8(&self.working_dir)?,
            utf8(&self.kubeconfig)?,
            utf8(&self.cert_dir)?,
        );
        c.node_name = self.node_name.as_deref();
        c.bootstrap_kubeconfig = self.bootstrap_kubeconfig.as_deref().map(utf8).transpose()?;
        c.discovery = self.discovery.as_ref().map(|d| DiscoveryConfig {
            server: &d.server,
            token: &d.token,
            pins: &d.pins,
            allow_unpinned: d.allow_unpinned,
            timeout_secs: d.timeout_secs,
        });
        c.ca_bundle = self.ca_bundle.as_deref().map(utf8).transpose()?;
        c.serving = self.serving.as_ref().map(|(_, ips)| Serving { dns, ips });
        c.bootstrap_wait_secs = self.bootstrap_wait_secs;
        c.rotation_wait_secs = self.rotation_wait_secs;
        c.expiration_seconds = self.expiration_seconds;
        c.watch = self.watch;
        c.mode = self.mode;
        c.rotate_now = self.rotate_now;
        c.utc_offset = utc_offset;
        c.seed = seed;
        c.verifier = &kubeboot::backend::ring::Ring;
        c.log_format = self.log_format;
        c.key_device = self.key_device.as_deref();
        c.ca_refresh_secs = self.ca_refresh_secs;
        c.attestation = self.attestation.as_deref().map(utf8).transpose()?;
        Ok(c)
    }

    /// The serving DNS names, borrowed for [`Settings::config`].
    pub(crate) fn dns_names(&self) -> Vec<&str> {
        self.serving
            .as_ref()
            .map(|(d, _)| d.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// A path as the core takes it.
fn utf8(p: &std::path::Path) -> Result<&str, crate::Error> {
    p.to_str().ok_or_else(|| crate::Error::Setup(format!("{}: not UTF-8", p.display())))
}

/// What the runtime does around the agent. The defaults suit a program that embeds it: nothing
/// printed, no signal handler installed, no metrics served; systemd is told when
/// `NOTIFY_SOCKET` is set.
#[derive(Clone, Debug)]
pub struct Options {
    /// Serve the kubelet's certificate metrics at `http://ADDR/metrics` (and `/healthz`).
    pub metrics_bind_address: Option<SocketAddr>,
    /// Also write them for node_exporter's textfile collector (a `*.prom` file).
    pub metrics_textfile: Option<PathBuf>,
    /// SIGTERM and SIGINT stop the agent (at once while it waits or sleeps, never between a
    /// file write and the step that completes it), SIGHUP wakes it (a daemon's habits; off for
    /// an embedding program, which calls [`crate::Handle::stop`] and [`crate::Handle::wake`]).
    pub signals: bool,
    /// Print every line on stdout; on a terminal a progress line replaces the one before.
    pub print: bool,
    /// Tell systemd (`NOTIFY_SOCKET`): `READY=1` at the first ready line, `STATUS=` the latest
    /// line, `STOPPING=1`.
    pub notify: bool,
    /// The TPM's TCTI (default: `TPM2TOOLS_TCTI`, then `device:/dev/tpmrm0`).
    pub tcti: Option<String>,
    /// Keep the node's current credentials for the embedding program ([`crate::Credentials`]):
    /// after every change of the node's files the runtime reads them as the core judges them.
    /// Off for a program that only runs the agent (the `kubeboot` CLI).
    pub credentials: bool,
    /// How much the agent keeps of each kind of data (the core's [`Capacities`]; default
    /// [`Capacities::HOST`], 251 KiB). A program running many agents sizes them to what its nodes
    /// need: larger input is then the agent's typed `too-large`, never a truncation.
    pub capacities: Capacities,
    /// How many lines a reader of [`crate::Handle::events`] may fall behind before it loses the
    /// oldest (default 256; the buffer is allocated when the runtime is made).
    pub event_buffer: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            metrics_bind_address: None,
            metrics_textfile: None,
            signals: false,
            print: false,
            notify: true,
            tcti: None,
            credentials: true,
            capacities: Capacities::HOST,
            event_buffer: 256,
        }
    }
}
