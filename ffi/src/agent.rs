//! The node agent: `kubeboot_agent` handles, the one place a C or Go front-end (or firmware)
//! gets every decision of a kubelet-style node agent from (the core's `kubeboot::agent`).
//!
//! **Memory the caller sizes.** The agent keeps its certificate chains, CA bundles, paths and
//! buffers in one block whose capacities the caller chooses ([`kubeboot_capacities`]; the hosts'
//! are [`kubeboot_capacities_host`]): [`kubeboot_agent_size`] says how many bytes they take, and
//! [`kubeboot_agent_init_in`] builds the agent in the caller's block (a static array on a
//! microcontroller: no allocator, no pool). With `std`, [`kubeboot_agent_new`] allocates the
//! block. A capacity too small for what it must hold is `KUBEBOOT_RESULT_TOO_LARGE` at init, and
//! [`kubeboot_capacities_check`] names it.
//!
//! **Driving it.** [`kubeboot_agent_start`] with a [`kubeboot_agent_config`] (filled by
//! [`kubeboot_agent_config_default`] first), then loop on [`kubeboot_agent_poll`] and do what the
//! [`kubeboot_action`] says (its `kind` names the member of `of` that is meaningful):
//!
//! | `kind` | do | answer |
//! |---|---|---|
//! | `READ` | read the whole file `of.read.path` (≤ `max_len` bytes) | [`kubeboot_agent_on_read`] |
//! | `FILE` | the file step `of.file` (crash-safe, see [`kubeboot_file_step`]) | [`kubeboot_agent_on_file_done`] |
//! | `ENTROPY` | `of.entropy.len` bytes from a CSPRNG | [`kubeboot_agent_on_entropy`] |
//! | `KEY` | the device operation `of.key` (see [`crate::device`]) | `kubeboot_agent_on_key_*` |
//! | `HTTP` | the HTTPS request `of.http` | [`kubeboot_agent_on_http_response`], the stream calls, or [`kubeboot_agent_on_transport_error`] |
//! | `SLEEP` | sleep until `of.sleep.until` | — |
//! | `EVENT` | print `of.event.line` | — |
//! | `DONE` | exit 0 | — |
//! | `FAILED` | print `of.failed.line`, exit 1 | — |
//!
//! With `std`, [`kubeboot_agent_perform_file_action`] does READ and FILE actions with the
//! crate's crash-safe file store and [`kubeboot_agent_perform_entropy`] ENTROPY with the OS RNG,
//! so a hosted front-end only does HTTP, sleeping and printing.

use core::ffi::{c_char, c_void};
use core::mem::{ManuallyDrop, align_of, size_of};

use kb::agent::{
    Agent, Capacities, Config, DiscoveryConfig, LogFormat, Mode, RotateNow, Serving, StreamControl,
};
use kb::error::{Capacity, StoreErrorKind};
use kb::pin::CaPin;
use kb::pushback::Headers;

use crate::action::{action, kubeboot_action};
use crate::csr::kubeboot_str;
use crate::error::kubeboot_result;
use crate::expected::{Sans, strs};
use crate::token::kubeboot_token;

/// The capacities of an agent (see the core's `kubeboot::agent::Capacities`): bytes, but for
/// `serving_dns`, a count.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_capacities {
    /// The work buffer: the largest request, response body or watch event.
    pub response: usize,
    /// Each CA bundle and certificate chain kept (PEM).
    pub pem: usize,
    /// The current client key (PEM) or its device reference.
    pub key: usize,
    /// What one file step writes (a pair, a kubeconfig, the CA file).
    pub file: usize,
    /// Each path.
    pub path: usize,
    /// The serving certificate's DNS names (a count, at most 16).
    pub serving_dns: usize,
}

impl From<&kubeboot_capacities> for Capacities {
    fn from(c: &kubeboot_capacities) -> Self {
        Capacities {
            response: c.response,
            pem: c.pem,
            key: c.key,
            file: c.file,
            path: c.path,
            serving_dns: c.serving_dns,
        }
    }
}

/// A capacity, as [`kubeboot_capacities_check`] names it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum kubeboot_capacity {
    /// None: the capacities are usable.
    None = 0,
    /// `response`.
    Response = 1,
    /// `pem`.
    Pem = 2,
    /// `key`.
    Key = 3,
    /// `file`.
    File = 4,
    /// `path`.
    Path = 5,
    /// `serving_dns`.
    ServingDns = 6,
    /// The memory as a whole (shorter than the capacities take).
    Memory = 7,
}

fn capacity(c: Capacity) -> kubeboot_capacity {
    match c {
        Capacity::Response => kubeboot_capacity::Response,
        Capacity::Pem => kubeboot_capacity::Pem,
        Capacity::Key => kubeboot_capacity::Key,
        Capacity::File => kubeboot_capacity::File,
        Capacity::Path => kubeboot_capacity::Path,
        Capacity::ServingDns => kubeboot_capacity::ServingDns,
        _ => kubeboot_capacity::Memory,
    }
}

/// Mode: make the credentials usable once, then DONE (or FAILED).
pub const KUBEBOOT_MODE_ONCE: u32 = 0;
/// Mode: keep them usable, sleeping until each rotation deadline; failures are retried.
pub const KUBEBOOT_MODE_RUN: u32 = 1;
/// Mode: kubeadm token discovery alone: write the bootstrap kubeconfig, then DONE.
pub const KUBEBOOT_MODE_DISCOVER: u32 = 2;

/// Event lines as `agent=<fe> step=<step> key=value ...`.
pub const KUBEBOOT_LOG_TEXT: u32 = 0;
/// Event lines as JSON objects, `{"agent":"<fe>","step":"<step>","key":"value",...}`.
pub const KUBEBOOT_LOG_JSON: u32 = 1;

/// What the agent manages (see `kubeboot::agent::Config`). Fill it with
/// [`kubeboot_agent_config_default`] first, then set what differs. Strings are UTF-8, not
/// NUL-terminated; an optional one is NULL with length 0. Every number means what it says (no
/// value stands for a default: the defaults are what `_default` writes). Only read by
/// [`kubeboot_agent_start`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_agent_config {
    /// The front-end's name (`c`, `go`, ...): the `agent=` of every event line.
    pub front_end: *const c_char,
    /// Its length.
    pub front_end_len: usize,
    /// The absolute directory relative paths are resolved against (the working directory).
    pub working_dir: *const c_char,
    /// Its length.
    pub working_dir_len: usize,
    /// The node name; NULL: from the current client certificate (rotation only).
    pub node_name: *const c_char,
    /// Its length.
    pub node_name_len: usize,
    /// The node kubeconfig.
    pub kubeconfig: *const c_char,
    /// Its length.
    pub kubeconfig_len: usize,
    /// The bootstrap kubeconfig; NULL: the node cannot bootstrap.
    pub bootstrap_kubeconfig: *const c_char,
    /// Its length.
    pub bootstrap_kubeconfig_len: usize,
    /// The cert dir.
    pub cert_dir: *const c_char,
    /// Its length.
    pub cert_dir_len: usize,
    /// The CA bundle issued certificates must chain to; NULL: the kubeconfig's CA.
    pub ca_bundle: *const c_char,
    /// Its length.
    pub ca_bundle_len: usize,
    /// Discovery: the apiserver endpoint `https://host:port`; NULL: no discovery.
    pub discovery_server: *const c_char,
    /// Its length.
    pub discovery_server_len: usize,
    /// Discovery: the bootstrap token (required with a discovery server).
    pub discovery_token: *const kubeboot_token,
    /// Discovery: CA pins as text (`sha256:<hex>`).
    pub discovery_pins: *const kubeboot_str,
    /// Number of `discovery_pins`.
    pub discovery_pin_count: usize,
    /// Discovery: trust the JWS-signed CA without a pin.
    pub discovery_unsafe_skip_ca_verification: bool,
    /// Discovery: give up after this many seconds (default 300).
    pub discovery_timeout_seconds: i64,
    /// Also request and keep a serving certificate.
    pub serving: bool,
    /// Serving DNS names.
    pub serving_dns: *const kubeboot_str,
    /// Number of `serving_dns`.
    pub serving_dns_count: usize,
    /// Serving IP addresses as text.
    pub serving_ips: *const kubeboot_str,
    /// Number of `serving_ips`.
    pub serving_ip_count: usize,
    /// How long a bootstrap waits for its certificate, seconds (default 3600).
    pub bootstrap_wait_seconds: i64,
    /// How long a rotation or serving request waits, seconds (default 900).
    pub rotation_wait_seconds: i64,
    /// `spec.expirationSeconds` of every CSR (≥ 600); 0: none asked (the signer's default).
    pub expiration_seconds: u32,
    /// Poll CSRs with GET instead of watching them.
    pub poll: bool,
    /// `KUBEBOOT_MODE_ONCE`, `KUBEBOOT_MODE_RUN` or `KUBEBOOT_MODE_DISCOVER`.
    pub mode: u32,
    /// With `KUBEBOOT_MODE_RUN`: DONE after this many rotations; 0: no limit.
    pub max_rotations: u32,
    /// Rotate the client certificate right away.
    pub rotate_now_client: bool,
    /// Rotate the serving certificate right away.
    pub rotate_now_serving: bool,
    /// The local time's offset from UTC in seconds (data file names).
    pub utc_offset: i32,
    /// Seed of the deadline and backoff jitter (any unpredictable value).
    pub seed: u64,
    /// `KUBEBOOT_LOG_TEXT` or `KUBEBOOT_LOG_JSON`.
    pub log_format: u32,
    /// `KUBEBOOT_MODE_RUN`: how often to re-read the cluster's CA and keep `<cert_dir>/ca.crt`
    /// current, seconds (default 600); 0: never.
    pub ca_refresh_seconds: i64,
    /// Where new client keys are made (`tpm`, or a `pkcs11:` URI of the token); NULL: in
    /// software (ENTROPY actions).
    pub key_device: *const c_char,
    /// Its length.
    pub key_device_len: usize,
    /// An attested join: the attestation key's certificate chain (PEM file); the bootstrap CSR
    /// carries a `TPM2_Certify` of the node key (`KUBEBOOT_KEY_OP_KIND_CERTIFY`). Needs
    /// `key_device` `tpm`. NULL: none.
    pub attestation: *const c_char,
    /// Its length.
    pub attestation_len: usize,
}

/// The opaque agent. Made by [`kubeboot_agent_init_in`] (in the caller's memory) or
/// [`kubeboot_agent_new`] (std), released by [`kubeboot_agent_free`].
pub struct kubeboot_agent {
    pub(crate) agent: ManuallyDrop<Agent<'static>>,
    /// The memory [`kubeboot_agent_new`] allocated (freed with the handle); `None` in the
    /// caller's memory.
    #[cfg(feature = "std")]
    owned: Option<(core::ptr::NonNull<kubeboot_agent>, core::alloc::Layout)>,
}

// ---------------------------------------------------------------------------------------------
// Capacities and memory

/// Write the hosts' capacities to `out` (what [`kubeboot_agent_new`] takes when given NULL).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_capacities_host(out: *mut kubeboot_capacities) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let c = Capacities::HOST;
        *out = kubeboot_capacities {
            response: c.response,
            pem: c.pem,
            key: c.key,
            file: c.file,
            path: c.path,
            serving_dns: c.serving_dns,
        };
        kubeboot_result::Ok
    }}
}

/// Check the rules between the capacities (each large enough for the smallest thing it must
/// hold, `file` for a pair): OK with `*which` = `KUBEBOOT_CAPACITY_NONE`, or
/// `KUBEBOOT_RESULT_TOO_LARGE` with `*which` naming the first capacity that is too small.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_capacities_check(
    caps: *const kubeboot_capacities,
    which: *mut kubeboot_capacity,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let caps = Capacities::from(try_ref!(caps));
        let which = try_mut!(which);
        match caps.check() {
            Ok(()) => {
                *which = kubeboot_capacity::None;
                kubeboot_result::Ok
            }
            Err(e) => {
                *which = match e {
                    kb::Error::Capacity(c) => capacity(c),
                    _ => kubeboot_capacity::Memory,
                };
                e.into()
            }
        }
    }}
}

/// Bytes of memory an agent with `caps` needs at [`kubeboot_agent_init_in`] (any alignment
/// allowed: room for it is included). The capacities are checked (`TOO_LARGE`, see
/// [`kubeboot_capacities_check`]).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_size(
    caps: *const kubeboot_capacities,
    out_size: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let caps = Capacities::from(try_ref!(caps));
        let out_size = try_mut!(out_size);
        try_kb!(caps.check());
        // (Capacities the rules accept can still take nearly all of the address space.)
        let head = size_of::<kubeboot_agent>() + align_of::<kubeboot_agent>() - 1;
        let Some(size) = head.checked_add(caps.memory_len()) else {
            return kubeboot_result::TooLarge;
        };
        *out_size = size;
        kubeboot_result::Ok
    }}
}

/// Build an idle agent with `caps` in the caller's `len` bytes at `mem` (at least
/// [`kubeboot_agent_size`]; the agent takes the first aligned part for itself and carves the rest
/// into its regions) and write its handle — a pointer into `mem` — to `*out`. Nothing is
/// allocated. The memory is the agent's until [`kubeboot_agent_free`]: do not move, read or
/// write it meanwhile. `TOO_LARGE` for capacities too small ([`kubeboot_capacities_check`] names
/// one) or memory too short.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_init_in(
    mem: *mut c_void,
    len: usize,
    caps: *const kubeboot_capacities,
    out: *mut *mut kubeboot_agent,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let caps = Capacities::from(try_ref!(caps));
        if mem.is_null() {
            return kubeboot_result::NullParameter;
        }
        // SAFETY: the caller hands over `len` writable bytes at `mem` until the handle is freed.
        match unsafe { place(mem.cast::<u8>(), len, &caps) } {
            Ok(handle) => {
                *out = handle;
                kubeboot_result::Ok
            }
            Err(e) => e,
        }
    }}
}

/// Place an agent for `caps` in `len` bytes at `mem`: the handle at the first aligned address,
/// the regions after it.
///
/// # Safety
/// `mem` is valid for reads and writes of `len` bytes, exclusively the agent's until the handle
/// is dropped in place (its `'static` regions point into it).
unsafe fn place(
    mem: *mut u8,
    len: usize,
    caps: &Capacities,
) -> Result<*mut kubeboot_agent, kubeboot_result> {
    caps.check().map_err(kubeboot_result::from)?;
    let skip = mem.align_offset(align_of::<kubeboot_agent>());
    let head = skip.checked_add(size_of::<kubeboot_agent>()).ok_or(kubeboot_result::TooLarge)?;
    let rest = len.checked_sub(head).ok_or(kubeboot_result::TooLarge)?;
    if rest < caps.memory_len() {
        return Err(kubeboot_result::TooLarge);
    }
    // SAFETY: `head <= len`: both pointers stay in the caller's block; the regions' bytes do
    // not overlap the handle's, and nobody else touches them while the handle lives.
    let (handle, regions) = unsafe {
        (
            mem.add(skip).cast::<kubeboot_agent>(),
            core::slice::from_raw_parts_mut(mem.add(head), rest),
        )
    };
    // The agent goes straight into the block, field by field: a whole `kubeboot_agent` built
    // first would be one more copy of the agent on the stack (on a Cortex-M4 the agent is about
    // 20 KB: two copies were 40 KB of stack at init).
    match Agent::new(regions, caps) {
        // SAFETY: `handle` is aligned and valid for writes of the handle (checked above); each
        // field is written once, through a raw pointer (no reference to uninitialised memory).
        Ok(agent) => unsafe {
            core::ptr::addr_of_mut!((*handle).agent).write(ManuallyDrop::new(agent));
            #[cfg(feature = "std")]
            core::ptr::addr_of_mut!((*handle).owned).write(None);
        },
        Err(e) => return Err(e.into()),
    }
    Ok(handle)
}

/// Allocate an idle agent with `caps` (NULL: [`kubeboot_capacities_host`]) and write its handle
/// to `*out`. Errors as [`kubeboot_agent_init_in`].
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_new(
    caps: *const kubeboot_capacities,
    out: *mut *mut kubeboot_agent,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        // SAFETY: a non-NULL `caps` points to a live value (the ABI's contract).
        let caps = match unsafe { caps.as_ref() } {
            Some(c) => Capacities::from(c),
            None => Capacities::HOST,
        };
        try_kb!(caps.check());
        let Some(size) = size_of::<kubeboot_agent>().checked_add(caps.memory_len()) else {
            return kubeboot_result::TooLarge;
        };
        let Ok(layout) = core::alloc::Layout::from_size_align(size, align_of::<kubeboot_agent>())
        else {
            return kubeboot_result::TooLarge;
        };
        // SAFETY: a non-zero size (the handle is not zero-sized).
        let mem = unsafe { alloc::alloc::alloc_zeroed(layout) };
        if mem.is_null() {
            alloc::alloc::handle_alloc_error(layout);
        }
        // SAFETY: a fresh allocation of `size` bytes, the agent's until `kubeboot_agent_free`.
        match unsafe { place(mem, size, &caps) } {
            Ok(handle) => {
                // SAFETY: `place` wrote a live handle there.
                unsafe { (*handle).owned = core::ptr::NonNull::new(handle).map(|p| (p, layout)) };
                *out = handle;
                kubeboot_result::Ok
            }
            Err(e) => {
                // SAFETY: allocated above with `layout`, never handed out.
                unsafe { alloc::alloc::dealloc(mem, layout) };
                e
            }
        }
    }}
}

/// Release an agent: its secrets wiped, the memory [`kubeboot_agent_new`] allocated freed
/// (memory given to [`kubeboot_agent_init_in`] is the caller's again, zeroed where secrets
/// were). NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_free(agent: *mut kubeboot_agent) {
    ffi_panic_boundary! { (), {
        // SAFETY: the caller passes NULL or a live handle, freed once, here.
        if let Some(a) = unsafe { agent.as_mut() } {
            #[cfg(feature = "std")]
            let owned = a.owned;
            // SAFETY: dropped once, here (its drop wipes the secrets in the regions); then the
            // handle's own bytes are wiped (copies a move may have left in padding) and are no
            // value any more.
            unsafe {
                ManuallyDrop::drop(&mut a.agent);
                crate::macros::wipe_bytes(agent);
            }
            #[cfg(feature = "std")]
            if let Some((p, layout)) = owned {
                // SAFETY: the allocation of `kubeboot_agent_new` with this layout; the agent in
                // it is gone.
                unsafe { alloc::alloc::dealloc(p.as_ptr().cast::<u8>(), layout) };
            }
        }
    }}
}

// ---------------------------------------------------------------------------------------------
// Configuration

/// Fill `cfg` with the defaults (the kubelet's): everything empty or false, once, text lines,
/// watch, 3600 s bootstrap wait, 900 s rotation wait, discovery timeout 300 s, CA refresh every
/// 600 s.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_config_default(
    cfg: *mut kubeboot_agent_config,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let cfg = try_mut!(cfg);
        let null = core::ptr::null::<c_char>();
        *cfg = kubeboot_agent_config {
            front_end: null,
            front_end_len: 0,
            working_dir: null,
            working_dir_len: 0,
            node_name: null,
            node_name_len: 0,
            kubeconfig: null,
            kubeconfig_len: 0,
            bootstrap_kubeconfig: null,
            bootstrap_kubeconfig_len: 0,
            cert_dir: null,
            cert_dir_len: 0,
            ca_bundle: null,
            ca_bundle_len: 0,
            discovery_server: null,
            discovery_server_len: 0,
            discovery_token: core::ptr::null(),
            discovery_pins: core::ptr::null(),
            discovery_pin_count: 0,
            discovery_unsafe_skip_ca_verification: false,
            discovery_timeout_seconds: kb::discovery::DEFAULT_TIMEOUT_SECS,
            serving: false,
            serving_dns: core::ptr::null(),
            serving_dns_count: 0,
            serving_ips: core::ptr::null(),
            serving_ip_count: 0,
            bootstrap_wait_seconds: kb::agent::DEFAULT_BOOTSTRAP_WAIT_SECS,
            rotation_wait_seconds: kb::agent::DEFAULT_ROTATION_WAIT_SECS,
            expiration_seconds: 0,
            poll: false,
            mode: KUBEBOOT_MODE_ONCE,
            max_rotations: 0,
            rotate_now_client: false,
            rotate_now_serving: false,
            utc_offset: 0,
            seed: 0,
            log_format: KUBEBOOT_LOG_TEXT,
            ca_refresh_seconds: kb::agent::DEFAULT_CA_REFRESH_SECS,
            key_device: null,
            key_device_len: 0,
            attestation: null,
            attestation_len: 0,
        };
        kubeboot_result::Ok
    }}
}

/// Copy `cfg` into the agent and get it ready (whatever it held before is forgotten, secrets
/// wiped); the first [`kubeboot_agent_poll`] starts reading. Errors (the agent is then idle):
/// `INVALID_CONFIG`, `TOO_LARGE` (a path over the `path` capacity, a work buffer too small for
/// the CA refresh), the token, pin and SAN checks' errors.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_start(
    agent: *mut kubeboot_agent,
    cfg: *const kubeboot_agent_config,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        // Whatever it held before is forgotten first, so that a configuration refused below
        // (before the core's `start`) also leaves it idle, as documented.
        a.agent.reset();
        let c = try_ref!(cfg);
        let front_end = try_str!(c.front_end, c.front_end_len);
        let working_dir = try_str!(c.working_dir, c.working_dir_len);
        let kubeconfig = try_str!(c.kubeconfig, c.kubeconfig_len);
        let cert_dir = try_str!(c.cert_dir, c.cert_dir_len);
        let node_name = try_opt_str!(c.node_name, c.node_name_len);
        let bootstrap = try_opt_str!(c.bootstrap_kubeconfig, c.bootstrap_kubeconfig_len);
        let ca_bundle = try_opt_str!(c.ca_bundle, c.ca_bundle_len);
        let discovery_server = try_opt_str!(c.discovery_server, c.discovery_server_len);
        let key_device = try_opt_str!(c.key_device, c.key_device_len);
        let attestation = try_opt_str!(c.attestation, c.attestation_len);
        let mut pin_text = heapless::Vec::new();
        if let Err(e) = strs(try_slice!(c.discovery_pins, c.discovery_pin_count), &mut pin_text) {
            return if e == kubeboot_result::TooManySans { kubeboot_result::InvalidPin } else { e };
        }
        let mut pins: heapless::Vec<CaPin, { kb::discovery::MAX_PINS }> = heapless::Vec::new();
        for p in pin_text {
            let pin = try_kb!(CaPin::parse(p));
            if pins.push(pin).is_err() {
                return kubeboot_result::InvalidPin;
            }
        }
        let serving = if c.serving {
            match Sans::read(c.serving_dns, c.serving_dns_count, c.serving_ips, c.serving_ip_count) {
                Ok(sans) => Some(sans),
                Err(e) => return e,
            }
        } else {
            None
        };
        let mut config = Config::new(front_end, working_dir, kubeconfig, cert_dir);
        config.node_name = node_name;
        config.bootstrap_kubeconfig = bootstrap;
        config.ca_bundle = ca_bundle;
        config.discovery = match discovery_server {
            Some(server) => Some(DiscoveryConfig {
                server,
                token: &try_ref!(c.discovery_token).inner,
                pins: &pins,
                allow_unpinned: c.discovery_unsafe_skip_ca_verification,
                timeout_secs: c.discovery_timeout_seconds,
            }),
            None => None,
        };
        config.serving = serving.as_ref().map(|s| Serving { dns: &s.dns, ips: &s.ips });
        config.bootstrap_wait_secs = c.bootstrap_wait_seconds;
        config.rotation_wait_secs = c.rotation_wait_seconds;
        config.expiration_seconds = (c.expiration_seconds != 0).then_some(c.expiration_seconds);
        config.watch = !c.poll;
        config.mode = match c.mode {
            KUBEBOOT_MODE_ONCE => Mode::Once,
            KUBEBOOT_MODE_RUN => {
                Mode::Run { max_rotations: (c.max_rotations != 0).then_some(c.max_rotations) }
            }
            KUBEBOOT_MODE_DISCOVER => Mode::Discover,
            _ => return kubeboot_result::InvalidConfig,
        };
        config.rotate_now = RotateNow { client: c.rotate_now_client, serving: c.rotate_now_serving };
        config.utc_offset = c.utc_offset;
        config.seed = c.seed;
        config.log_format = match c.log_format {
            KUBEBOOT_LOG_TEXT => LogFormat::Text,
            KUBEBOOT_LOG_JSON => LogFormat::Json,
            _ => return kubeboot_result::InvalidConfig,
        };
        config.ca_refresh_secs = c.ca_refresh_seconds;
        config.key_device = key_device;
        config.attestation = attestation;
        config.verifier = crate::verify::verifier();
        match a.agent.start(&config) {
            Ok(()) => kubeboot_result::Ok,
            Err(e) => e.into(),
        }
    }}
}

// ---------------------------------------------------------------------------------------------
// Polling and answers

/// What to do now: the action is written to `*out` (its strings borrow the agent until the next
/// call on it).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_poll(
    agent: *mut kubeboot_agent,
    now: i64,
    out: *mut kubeboot_action,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let a = try_mut!(agent);
        *out = action(&a.agent.poll(now));
        kubeboot_result::Ok
    }}
}

pub(crate) fn why_text(bytes: &[u8], otherwise: &str) -> heapless::String<256> {
    let mut text = heapless::String::new();
    for c in core::str::from_utf8(bytes).unwrap_or(otherwise).chars() {
        if text.push(c).is_err() {
            break;
        }
    }
    text
}

fn store_kind(result: u32) -> StoreErrorKind {
    StoreErrorKind::from_code(result).unwrap_or(StoreErrorKind::Io)
}

/// The outcome of a READ action (`result`, a `kubeboot_result`): `KUBEBOOT_RESULT_OK` with the file's `len` bytes at `data`, or
/// a `KUBEBOOT_RESULT_STORE_*` (`STORE_NOT_FOUND`, `STORE_FILE_TOO_LARGE`, `STORE_IO`, ...).
/// Ignored when no read is outstanding.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_read(
    agent: *mut kubeboot_agent,
    now: i64,
    result: u32,
    data: *const u8,
    len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        if result == kubeboot_result::Ok as u32 {
            let data = try_slice!(data, len);
            a.agent.on_read(now, Ok(data));
        } else {
            a.agent.on_read(now, Err(store_kind(result)));
        }
        kubeboot_result::Ok
    }}
}

/// The outcome of a FILE action (`result`, a `kubeboot_result`): `KUBEBOOT_RESULT_OK` or a `KUBEBOOT_RESULT_STORE_*`. Ignored
/// when no file step is outstanding.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_file_done(
    agent: *mut kubeboot_agent,
    now: i64,
    result: u32,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let r = if result == kubeboot_result::Ok as u32 { Ok(()) } else { Err(store_kind(result)) };
        a.agent.on_file_done(now, r);
        kubeboot_result::Ok
    }}
}

/// The bytes an ENTROPY action asked for. Ignored when none is outstanding.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_entropy(
    agent: *mut kubeboot_agent,
    data: *const u8,
    len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let data = try_slice!(data, len);
        a.agent.on_entropy(data);
        kubeboot_result::Ok
    }}
}

/// A complete HTTP response, as the agent reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_http_response {
    /// The status code.
    pub status: u16,
    /// The `Retry-After` header's raw value; NULL with 0: none (a 429 or 5xx carrying one is
    /// retried when the server asked).
    pub retry_after: *const c_char,
    /// Its length.
    pub retry_after_len: usize,
    /// The body (for a watch that could not be streamed, the whole stream).
    pub body: *const u8,
    /// Its length.
    pub body_len: usize,
}

/// The whole response to an HTTP action. Ignored when no request is outstanding.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_http_response(
    agent: *mut kubeboot_agent,
    now: i64,
    response: *const kubeboot_http_response,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let r = try_ref!(response);
        let retry_after = try_opt_slice!(r.retry_after.cast::<u8>(), r.retry_after_len);
        let body = try_slice!(r.body, r.body_len);
        a.agent.on_http_response(now, r.status, &Headers::retry_after(retry_after), body);
        kubeboot_result::Ok
    }}
}

/// A chunk of a watch response with status 200. `*keep_reading`: false when the agent needs no
/// more of the stream (drop the connection; do not call [`kubeboot_agent_on_stream_end`]).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_stream_data(
    agent: *mut kubeboot_agent,
    now: i64,
    chunk: *const u8,
    chunk_len: usize,
    keep_reading: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let keep = try_mut!(keep_reading);
        let chunk = try_slice!(chunk, chunk_len);
        *keep = a.agent.on_stream_data(now, chunk) == StreamControl::Continue;
        kubeboot_result::Ok
    }}
}

/// The open watch has been quiet until the request's `idle_at` (or later): the agent reports
/// progress on the wait (fetch the line with [`kubeboot_agent_next_event`]) without ending the
/// watch. `*keep_reading`: false when no watch is open.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_stream_idle(
    agent: *mut kubeboot_agent,
    now: i64,
    keep_reading: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let keep = try_mut!(keep_reading);
        *keep = a.agent.on_stream_idle(now) == StreamControl::Continue;
        kubeboot_result::Ok
    }}
}

/// The next line the agent has to say, now (also while a watch stream is open, between the
/// stream calls): written to `*event` with `*has` = true, or `*has` = false when there is none.
/// [`kubeboot_agent_poll`] hands out the same lines first, so nothing is lost without it.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_next_event(
    agent: *mut kubeboot_agent,
    event: *mut crate::action::kubeboot_event,
    has: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let event = try_mut!(event);
        let has = try_mut!(has);
        match a.agent.next_event() {
            Some(e) => {
                *event = crate::action::event(&e);
                *has = true;
            }
            None => *has = false,
        }
        kubeboot_result::Ok
    }}
}

/// The watch stream ended (server timeout, closed connection, or a broken read).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_stream_end(
    agent: *mut kubeboot_agent,
    now: i64,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        a.agent.on_stream_end(now);
        kubeboot_result::Ok
    }}
}

/// The HTTP action could not be sent, or no (complete) response arrived. `why` (UTF-8, may be
/// NULL with 0) is printed in the agent's event; never put a secret in it.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_transport_error(
    agent: *mut kubeboot_agent,
    now: i64,
    why: *const c_char,
    why_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let text = why_text(try_slice!(why.cast::<u8>(), why_len), "transport error");
        a.agent.on_transport_error(now, &text);
        kubeboot_result::Ok
    }}
}

/// End a sleep between attempts now (a daemon's SIGHUP): the next poll starts over, reading
/// every file again (`step=wake`). `*woken`: whether it was sleeping between attempts (an
/// attempt under way is not disturbed).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_wake(
    agent: *mut kubeboot_agent,
    woken: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let woken = try_mut!(woken);
        *woken = a.agent.wake();
        kubeboot_result::Ok
    }}
}

/// Update the local time's offset from UTC (seconds east), used to name data files.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_set_utc_offset(
    agent: *mut kubeboot_agent,
    utc_offset: i32,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        a.agent.set_utc_offset(utc_offset);
        kubeboot_result::Ok
    }}
}

/// Perform the outstanding READ or FILE action with kubeboot's own crash-safe file store and
/// answer it (what `kubeboot::store::FileSteps` does for the Rust CLI). Returns OK, or
/// `INVALID_STATE` when no READ or FILE action is outstanding. A failed file operation is
/// reported to the agent (it decides), and its text — path and OS error — is written to
/// `buf` (not NUL-terminated; `*out_len` = 0 when it succeeded) for printing.
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_perform_file_action(
    agent: *mut kubeboot_agent,
    now: i64,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let steps = kb::store::FileSteps::new();
        match steps.perform(&mut a.agent, now) {
            None => kubeboot_result::InvalidState,
            Some(Ok(())) => {
                *out_len = 0;
                kubeboot_result::Ok
            }
            Some(Err(e)) => {
                let text = alloc::format!("{e}");
                let n = text.len().min(buf.len());
                let cut = (0..=n).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
                if let (Some(dst), Some(src)) = (buf.get_mut(..cut), text.as_bytes().get(..cut)) {
                    dst.copy_from_slice(src);
                }
                *out_len = cut;
                kubeboot_result::Ok
            }
        }
    }}
}

/// Answer the outstanding ENTROPY action from the operating system's RNG. Returns OK, or
/// `INVALID_STATE` when none is outstanding, `INSUFFICIENT_ENTROPY` when the RNG fails.
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_perform_entropy(agent: *mut kubeboot_agent) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        if !matches!(a.agent.outstanding(), Some(kb::agent::Action::Entropy { .. })) {
            return kubeboot_result::InvalidState;
        }
        let mut bytes = zeroize::Zeroizing::new([0u8; kb::key::ENTROPY_LEN]);
        if getrandom::fill(&mut bytes[..]).is_err() {
            return kubeboot_result::InsufficientEntropy;
        }
        a.agent.on_entropy(&bytes[..]);
        kubeboot_result::Ok
    }}
}
