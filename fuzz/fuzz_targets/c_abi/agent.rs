//! `kubeboot_agent_*`: the capacities (`kubeboot_capacities_host`, `_check`,
//! `kubeboot_agent_size`), an agent made on the heap (`kubeboot_agent_new`) or in caller memory
//! of any length and alignment (`kubeboot_agent_init_in`), started from
//! `kubeboot_agent_config_default` plus any configuration, polled (the tagged
//! `kubeboot_action`) and answered with any of its `on_*` calls; the metrics
//! (`kubeboot_metrics_text`, the textfile check).

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot::agent::Capacities;
use kubeboot_ffi::action::{kubeboot_action, kubeboot_bytes, kubeboot_event};
use kubeboot_ffi::agent::{
    self as fag, kubeboot_agent, kubeboot_agent_config, kubeboot_capacities, kubeboot_capacity,
    kubeboot_http_response,
};
use kubeboot_ffi::csr::kubeboot_str;
use kubeboot_ffi::device as fdev;
use kubeboot_ffi::key as fkey;
use kubeboot_ffi::metrics as fme;
use std::mem::{MaybeUninit, align_of, size_of};
use std::ptr::{null, null_mut};

pub const TOO_LARGE: u32 = kubeboot_ffi::kubeboot_result::TooLarge as u32;

// The action kinds, key operations and holders of the header.
const READ: u32 = 0;
const FILE: u32 = 1;
const ENTROPY: u32 = 2;
const KEY: u32 = 3;
const HTTP: u32 = 4;
const EVENT: u32 = 6;
const DONE: u32 = 7;
const FAILED: u32 = 8;
const OP_PUBLIC: u32 = 0;
const OP_GENERATE: u32 = 1;
const OP_SIGN: u32 = 2;
const OP_DESTROY: u32 = 3;
const HOLDER_SOFTWARE: u32 = 0;

/// How an agent action is answered (whatever it asked for).
#[derive(Arbitrary, Debug)]
pub enum AgentAnswer {
    Read {
        result: u32,
        data: Bytes,
    },
    FileDone(u32),
    Entropy(Bytes),
    PerformEntropy,
    /// `kubeboot_agent_on_http_response` (a NULL response: `NULL_PARAMETER`); `retry_after`
    /// NULL: absent.
    Http {
        null: bool,
        status: u16,
        retry_after: Bytes,
        body: Bytes,
    },
    Stream(Bytes, bool),
    StreamEnd,
    Transport(Bytes),
    UtcOffset(i32),
    Later(u16),
    Wake,
    /// The metrics copied out and rendered at `now` + this into a buffer.
    Metrics(i32, Out),
    /// `kubeboot_agent_on_key_public` with these bytes as the point.
    KeyPublic(Bytes),
    /// `kubeboot_agent_on_key_generated`: a reference (or the fixture of a live key's
    /// `kubeboot_pkcs11_key_reference`) and a point (or the live key's).
    KeyGenerated(Bytes, Result<H, Bytes>),
    /// `kubeboot_agent_on_key_signature` with these bytes as `r || s`.
    KeySignature(Bytes),
    /// `kubeboot_agent_sign_with` a callback that behaves as told (a live key's point).
    SignWith(H, crate::csr::SignBehaviour),
    KeyDestroyed,
    KeyError(Bytes),
    /// `kubeboot_agent_on_stream_idle` (`true`: NULL `keep_reading`).
    StreamIdle(bool),
    /// `kubeboot_agent_next_event` until it has none (bit 0: NULL event, bit 1: NULL `has`).
    NextEvent(u8),
}

/// The device of a [`Call::AgentDevice`](crate::Call) agent's configuration.
#[derive(Arbitrary, Debug)]
pub enum KeyDevice {
    Tpm,
    Pkcs11,
    Any(Bytes),
}

/// `kubeboot_metrics_text` of any metrics.
#[derive(Arbitrary, Debug)]
pub struct MetricsText {
    pub client: Option<i64>,
    pub serving: Option<i64>,
    pub errors: (u64, u64),
    pub buckets: [u64; 11],
    pub sum: u64,
    pub count: u64,
    pub now: i64,
    pub out: Out,
}

/// An agent's capacities.
#[derive(Arbitrary, Debug)]
pub enum Caps {
    /// `kubeboot_capacities_host`.
    Host,
    /// A microcontroller's (the networked firmware image's).
    Mcu,
    /// The smallest the rules accept.
    Smallest,
    /// Any, small enough to allocate.
    Small { response: u16, pem: u16, key: u16, file: u16, path: u16, serving_dns: u8 },
    /// Any at all (never allocated: more than 8 MiB is given a short block).
    Raw([u64; 6]),
}

/// Beyond this an agent is not allocated.
const MAX_ALLOC: usize = 8 << 20;

impl Caps {
    pub fn resolve(&self) -> kubeboot_capacities {
        let c = |c: Capacities| kubeboot_capacities {
            response: c.response,
            pem: c.pem,
            key: c.key,
            file: c.file,
            path: c.path,
            serving_dns: c.serving_dns,
        };
        match *self {
            Caps::Host => {
                let mut out = MaybeUninit::<kubeboot_capacities>::uninit();
                assert_eq!(rc(fag::kubeboot_capacities_host(out.as_mut_ptr())), OK);
                // SAFETY: written on OK.
                unsafe { out.assume_init() }
            }
            Caps::Mcu => c(Capacities {
                response: 4096,
                pem: 1536,
                key: 512,
                file: 3072,
                path: 64,
                serving_dns: 0,
            }),
            Caps::Smallest => c(Capacities {
                response: kubeboot::agent::MIN_RESPONSE,
                pem: kubeboot::agent::MIN_PEM,
                key: 227,
                file: kubeboot::agent::MIN_PEM + 227,
                path: kubeboot::agent::MIN_PATH,
                serving_dns: 0,
            }),
            Caps::Small { response, pem, key, file, path, serving_dns } => kubeboot_capacities {
                response: usize::from(response),
                pem: usize::from(pem),
                key: usize::from(key),
                file: usize::from(file),
                path: usize::from(path),
                serving_dns: usize::from(serving_dns),
            },
            Caps::Raw([response, pem, key, file, path, serving_dns]) => kubeboot_capacities {
                response: response as usize,
                pem: pem as usize,
                key: key as usize,
                file: file as usize,
                path: path as usize,
                serving_dns: serving_dns as usize,
            },
        }
    }
}

fn core_caps(c: &kubeboot_capacities) -> Capacities {
    Capacities::from(c)
}

/// The capacity the C ABI names for the core's verdict.
fn named(r: &kubeboot::Result<()>) -> u32 {
    use kubeboot::error::Capacity as C;
    match r {
        Ok(()) => kubeboot_capacity::None as u32,
        Err(kubeboot::Error::Capacity(c)) => match c {
            C::Response => kubeboot_capacity::Response as u32,
            C::Pem => kubeboot_capacity::Pem as u32,
            C::Key => kubeboot_capacity::Key as u32,
            C::File => kubeboot_capacity::File as u32,
            C::Path => kubeboot_capacity::Path as u32,
            C::ServingDns => kubeboot_capacity::ServingDns as u32,
            _ => kubeboot_capacity::Memory as u32,
        },
        Err(e) => panic!("the capacities' check answered {e:?}"),
    }
}

/// `kubeboot_capacities_check` and `kubeboot_agent_size` of `caps`: the core's verdict, the
/// capacity it names, a size only on success. Returns the size.
fn checked_size(caps: &kubeboot_capacities) -> Option<usize> {
    let verdict = core_caps(caps).check();
    let mut which = u32::MAX;
    let r = rc(fag::kubeboot_capacities_check(caps, (&raw mut which).cast()));
    assert_eq!(r == OK, verdict.is_ok());
    assert!(r == OK || r == TOO_LARGE, "check: {r}");
    assert_eq!(which, named(&verdict), "the capacity named");
    // Accepted capacities may still leave no room for the handle in the address space.
    let least = size_of::<kubeboot_agent>().checked_add(core_caps(caps).memory_len());
    let fits = least.and_then(|l| l.checked_add(align_of::<kubeboot_agent>() - 1));
    let mut size = SENTINEL;
    let r2 = rc(fag::kubeboot_agent_size(caps, &mut size));
    assert_eq!(r2 == OK, r == OK && fits.is_some(), "size: {r2}, check: {r}");
    if r2 != OK {
        assert_eq!(r2, TOO_LARGE);
        assert_eq!(size, SENTINEL, "size written on error");
        return None;
    }
    let least = least.unwrap_or(usize::MAX);
    assert!(size >= least && size <= least + align_of::<kubeboot_agent>(), "size {size}");
    Some(size)
}

/// `Call::Capacities`: the host's capacities are the core's; any capacities are checked and
/// sized as the core's rules say; NULL arguments are `NULL_PARAMETER` and write nothing.
pub fn capacities(op: &Caps) {
    let mut host = MaybeUninit::<kubeboot_capacities>::uninit();
    assert_eq!(rc(fag::kubeboot_capacities_host(host.as_mut_ptr())), OK);
    // SAFETY: written on OK.
    let host = unsafe { host.assume_init() };
    assert_eq!(core_caps(&host), Capacities::HOST);
    assert_eq!(rc(fag::kubeboot_capacities_host(null_mut())), NULL_PARAMETER);
    let caps = op.resolve();
    checked_size(&caps);
    // The edge: accepted capacities that take all but one byte of the address space.
    let mut edge = caps;
    edge.response = 0;
    if let Some(rest) = (usize::MAX - 1).checked_sub(core_caps(&edge).memory_len()) {
        edge.response = rest;
        checked_size(&edge);
    }
    let mut which = u32::MAX;
    let mut size = SENTINEL;
    assert_eq!(rc(fag::kubeboot_capacities_check(null(), (&raw mut which).cast())), NULL_PARAMETER);
    assert_eq!(rc(fag::kubeboot_capacities_check(&caps, null_mut())), NULL_PARAMETER);
    assert_eq!(rc(fag::kubeboot_agent_size(null(), &mut size)), NULL_PARAMETER);
    assert_eq!(rc(fag::kubeboot_agent_size(&caps, null_mut())), NULL_PARAMETER);
    assert_eq!((which, size), (u32::MAX, SENTINEL), "written on NULL_PARAMETER");
}

/// Where an agent lives.
#[derive(Arbitrary, Debug)]
pub enum Memory {
    /// `kubeboot_agent_new` (`None`: NULL capacities, the hosts').
    Heap(Option<Caps>),
    /// `kubeboot_agent_init_in` at `offset` bytes into a block `kubeboot_agent_size` long,
    /// shorter or longer.
    Caller { caps: Caps, len: Len, offset: u8 },
}

#[derive(Arbitrary, Debug)]
pub enum Len {
    Exact,
    Shorter(u16),
    Longer(u8),
}

/// A block of caller memory: `offset` canary bytes, then the agent's `len`.
struct Block {
    bytes: Box<[u8]>,
    offset: usize,
}

const MEM_CANARY: u8 = 0x5A;

/// Make an agent as `memory` says, checking the contract of its constructor.
fn make(memory: &Memory) -> Option<(*mut kubeboot_agent, Option<Block>)> {
    let marker = 0x10 as *mut kubeboot_agent;
    let mut ag = marker;
    match memory {
        Memory::Heap(caps) => {
            let c = caps.as_ref().map(Caps::resolve);
            let size = match &c {
                Some(c) => checked_size(c),
                None => Some(1),
            };
            if size.is_some_and(|s| s > MAX_ALLOC) {
                return None;
            }
            let cp: *const kubeboot_capacities = c.as_ref().map_or(null(), |c| c);
            let r = rc(fag::kubeboot_agent_new(cp, &mut ag));
            assert_eq!(r == OK, size.is_some(), "new: {r}");
            assert_eq!(rc(fag::kubeboot_agent_new(cp, null_mut())), NULL_PARAMETER);
            if r != OK {
                assert_eq!(r, TOO_LARGE);
                assert_eq!(ag, marker, "*out written on error");
                return None;
            }
            assert!(!ag.is_null() && ag != marker);
            Some((ag, None))
        }
        Memory::Caller { caps, len, offset } => {
            let c = caps.resolve();
            let size = checked_size(&c);
            let len = match (size, len) {
                (Some(s), _) if s > MAX_ALLOC => 4096,
                (None, _) => 4096,
                (Some(s), Len::Exact) => s,
                (Some(s), Len::Shorter(n)) => s.saturating_sub(usize::from(*n) + 1),
                (Some(s), Len::Longer(n)) => s + usize::from(*n),
            };
            let offset = usize::from(*offset);
            let mut block =
                Block { bytes: vec![MEM_CANARY; offset + len].into_boxed_slice(), offset };
            let mem = block.bytes[offset..].as_mut_ptr();
            let r = rc(fag::kubeboot_agent_init_in(mem.cast(), len, &c, &mut ag));
            assert_eq!(
                rc(fag::kubeboot_agent_init_in(null_mut(), len, &c, &mut ag)),
                NULL_PARAMETER
            );
            assert_eq!(
                rc(fag::kubeboot_agent_init_in(mem.cast(), len, null(), &mut ag)),
                NULL_PARAMETER
            );
            let need = size_of::<kubeboot_agent>().saturating_add(core_caps(&c).memory_len());
            if size.is_some_and(|s| len >= s) {
                assert_eq!(r, OK, "init_in with kubeboot_agent_size bytes");
            }
            if size.is_none() || len < need {
                assert_eq!(r, TOO_LARGE, "init_in without room");
            }
            assert!(block.bytes[..offset].iter().all(|&b| b == MEM_CANARY), "written before mem");
            if r != OK {
                assert_eq!(r, TOO_LARGE);
                assert_eq!(ag, marker, "*out written on error");
                assert!(block.bytes.iter().all(|&b| b == MEM_CANARY), "memory written on error");
                return None;
            }
            let inside = (ag as usize) >= mem as usize && (ag as usize) < mem as usize + len;
            assert!(inside && ag as usize % align_of::<kubeboot_agent>() == 0, "handle placement");
            Some((ag, Some(block)))
        }
    }
}

pub fn metrics_check_textfile(b: &Bytes) {
    let a = Arg::new(b);
    let r = rc(fme::kubeboot_metrics_check_textfile(a.cptr(), a.len));
    if a.bad() {
        assert_ne!(r, OK);
    }
}

pub fn metrics_text(op: &MetricsText) {
    let MetricsText { client, serving, errors, buckets, sum, count, now, out } = op;
    let m = fme::kubeboot_metrics {
        has_client: client.is_some(),
        client_not_after: client.unwrap_or(0),
        has_serving: serving.is_some(),
        serving_not_after: serving.unwrap_or(0),
        client_renew_errors: errors.0,
        serving_renew_errors: errors.1,
        serving_rotation_buckets: *buckets,
        serving_rotation_sum: *sum,
        serving_rotation_count: *count,
    };
    let (r, text) =
        out_call(out, false, &mut |p, l, ol| fme::kubeboot_metrics_text(&m, *now, p.cast(), l, ol));
    if let (OK, Some(t)) = (r, text) {
        assert!(t.len() <= fme::KUBEBOOT_METRICS_TEXT_CAP, "{}", t.len());
        assert!(std::str::from_utf8(&t).is_ok());
    }
}

/// `kubeboot_agent_config_default`, then any configuration, `kubeboot_agent_start`, then polls,
/// each answered by one of `answers` (whatever the action asked for).
#[derive(Arbitrary, Debug)]
pub struct Agent {
    pub memory: Memory,
    pub t: H,
    /// front end, working dir, node, kubeconfig, bootstrap kubeconfig, cert dir, CA bundle,
    /// discovery server.
    pub text: [Bytes; 8],
    pub pins: Vec<Bytes>,
    pub dns: Vec<Bytes>,
    pub ips: Vec<Bytes>,
    /// unpinned, serving, poll, rotate client, rotate serving, NULL configuration.
    pub flags: u8,
    pub waits: (i64, i64, i64),
    pub exp: u32,
    pub mode: u32,
    pub max_rotations: u32,
    pub utc_offset: i32,
    pub log_format: u32,
    pub ca_refresh_seconds: i64,
    pub answers: Vec<AgentAnswer>,
}

/// The token URI of a device agent.
const DEVICE: &str = "pkcs11:token=fuzz;serial=1?module-path=/opt/fuzz.so&pin-source=/etc/pin";

/// A text view of an action: NULL exactly when empty, readable for its length (ASan), UTF-8.
fn text(s: kubeboot_str) -> String {
    let b = bytes(kubeboot_bytes { data: s.data.cast(), len: s.len });
    String::from_utf8(b).expect("action text is UTF-8")
}

/// A byte view of an action: NULL exactly when empty, readable for its length (ASan).
fn bytes(b: kubeboot_bytes) -> Vec<u8> {
    assert_eq!(b.data.is_null(), b.len == 0, "NULL is the empty view, and only it");
    if b.data.is_null() {
        return Vec::new();
    }
    // SAFETY: the ABI promises `len` readable bytes at `data` until the next call.
    unsafe { std::slice::from_raw_parts(b.data, b.len) }.to_vec()
}

/// What the checks of an answer need to know of the action it answers.
#[derive(Clone, Copy)]
struct Asked {
    kind: u32,
    key_op: u32,
    /// GENERATE: the device and label (borrowed from the agent until the next call).
    device: kubeboot_str,
    label: kubeboot_str,
}

/// Every member of a polled action as the header declares it; what its answers need.
/// `started`: `kubeboot_agent_start` succeeded (an agent never started fails every poll with
/// `INVALID_STATE` and no line: it has said nothing yet).
fn check_action(act: &kubeboot_action, device: bool, started: bool) -> Asked {
    // SAFETY: `kind` is a u32 enum the ABI writes; read as its integer.
    let kind = unsafe { *(&raw const act.kind).cast::<u32>() };
    assert!(kind <= FAILED, "kind {kind}");
    let mut asked = Asked { kind, key_op: 0, device: null_str(), label: null_str() };
    // SAFETY: `kind` names the member of `of` that is meaningful.
    unsafe {
        match kind {
            READ => {
                let r = act.of.read;
                assert!(text(r.path).starts_with('/'));
                assert!(*(&raw const r.role).cast::<u32>() <= 8, "role");
            }
            FILE => {
                let f = act.of.file;
                let step = *(&raw const f.step).cast::<u32>();
                assert!(step <= 9, "file step {step}");
                assert!(!text(f.name).is_empty() && text(f.path).starts_with('/'));
                let data = bytes(f.data);
                let writes = matches!(step, 2 | 3 | 5 | 6 | 9);
                assert!(writes || data.is_empty(), "data for step {step}");
                assert_eq!(f.secret, matches!(step, 2 | 3 | 6), "secret for step {step}");
                assert_eq!(!text(f.prefix).is_empty(), step == 0, "prefix for step {step}");
                assert_eq!(!text(f.updated).is_empty(), step == 4, "updated for step {step}");
                assert_eq!(!text(f.target).is_empty(), step == 4, "target for step {step}");
            }
            ENTROPY => assert!((1..=64).contains(&act.of.entropy.len)),
            KEY => {
                assert!(device, "a KEY action without a device");
                let k = act.of.key;
                let op = *(&raw const k.op).cast::<u32>();
                let holder = *(&raw const k.holder).cast::<u32>();
                assert!(op <= OP_DESTROY, "key op {op}");
                assert!(holder <= 2 && holder != HOLDER_SOFTWARE, "a KEY action for software");
                assert_eq!(bytes(k.key_ref).is_empty(), op == OP_GENERATE, "key_ref for {op}");
                assert_eq!(!text(k.device).is_empty(), op == OP_GENERATE, "device for {op}");
                assert_eq!(!text(k.label).is_empty(), op == OP_GENERATE, "label for {op}");
                assert_eq!(!bytes(k.message).is_empty(), op == OP_SIGN, "message for {op}");
                asked.key_op = op;
                asked.device = k.device;
                asked.label = k.label;
            }
            HTTP => {
                let h = act.of.http;
                let c = h.connection;
                let kind = *(&raw const h.kind).cast::<u32>();
                assert!(kind <= 7, "request kind {kind}");
                // Only a watch waits for `on_stream_idle` (WATCH = 6; 0 when none).
                assert!(h.idle_at == 0 || kind == 6, "idle_at {} for kind {kind}", h.idle_at);
                assert!(text(c.server).starts_with("https://"));
                assert!(!bytes(c.ca_pem).is_empty() || c.insecure, "no CA and not insecure");
                let _ = text(c.server_name);
                let (cert, key) = (bytes(c.client_cert_pem), bytes(c.client_key_pem));
                assert_eq!(cert.is_empty(), key.is_empty(), "a client certificate without key");
                assert!(*(&raw const c.client_key_holder).cast::<u32>() <= 2);
                let method = text(h.method);
                assert!(method == "GET" || method == "POST", "method {method}");
                assert!(text(h.path).starts_with('/'));
                let _ = text(h.authorization);
                let body = bytes(h.body);
                assert!(body.is_empty() || method == "POST", "a body with {method}");
                assert!(body.is_empty() || !text(h.content_type).is_empty());
                assert!(!text(h.accept).is_empty() && !text(h.user_agent).is_empty());
            }
            EVENT => {
                let e = act.of.event;
                assert!(!text(e.step).is_empty() && !text(e.line).is_empty());
            }
            DONE => {}
            FAILED => {
                let f = act.of.failed;
                let r = rc(f.result);
                assert_ne!(r, OK, "FAILED with OK");
                let _ = text(f.detail);
                let line = text(f.line);
                assert!(
                    !line.is_empty() || (!started && r == INVALID_STATE),
                    "FAILED {r} without a line"
                );
            }
            _ => {}
        }
    }
    asked
}

fn null_str() -> kubeboot_str {
    kubeboot_str { data: null(), len: 0 }
}

pub fn run(hs: &mut Handles, op: &Agent, device: Option<&KeyDevice>) {
    let Agent {
        memory,
        t,
        text,
        pins,
        dns,
        ips,
        flags,
        waits,
        exp,
        mode,
        max_rotations,
        utc_offset,
        log_format,
        ca_refresh_seconds,
        answers,
    } = op;
    let Some((ag, block)) = make(memory) else { return };
    let a: Vec<Arg> = text.iter().map(Arg::new).collect();
    let (pa, da, ia): (Vec<Arg>, Vec<Arg>, Vec<Arg>) = (
        pins.iter().take(10).map(Arg::new).collect(),
        dns.iter().take(20).map(Arg::new).collect(),
        ips.iter().take(20).map(Arg::new).collect(),
    );
    let (ps, ds, is) = (strs(&pa), strs(&da), strs(&ia));
    let dev = match device {
        None => Arg::new(&Bytes::Null),
        Some(KeyDevice::Tpm) => Arg::new(&Bytes::Data(b"tpm".to_vec())),
        Some(KeyDevice::Pkcs11) => Arg::new(&Bytes::Data(DEVICE.as_bytes().to_vec())),
        Some(KeyDevice::Any(b)) => Arg::new(b),
    };
    let mut cfg = MaybeUninit::<kubeboot_agent_config>::uninit();
    assert_eq!(rc(fag::kubeboot_agent_config_default(cfg.as_mut_ptr())), OK);
    assert_eq!(rc(fag::kubeboot_agent_config_default(null_mut())), NULL_PARAMETER);
    // SAFETY: written on OK.
    let mut cfg = unsafe { cfg.assume_init() };
    assert_eq!(
        (cfg.bootstrap_wait_seconds, cfg.rotation_wait_seconds, cfg.discovery_timeout_seconds),
        (3600, 900, 300)
    );
    assert_eq!((cfg.ca_refresh_seconds, cfg.mode, cfg.log_format), (600, 0, 0));
    (cfg.front_end, cfg.front_end_len) = (a[0].cptr(), a[0].len);
    (cfg.working_dir, cfg.working_dir_len) = (a[1].cptr(), a[1].len);
    (cfg.node_name, cfg.node_name_len) = (a[2].cptr(), a[2].len);
    (cfg.kubeconfig, cfg.kubeconfig_len) = (a[3].cptr(), a[3].len);
    (cfg.bootstrap_kubeconfig, cfg.bootstrap_kubeconfig_len) = (a[4].cptr(), a[4].len);
    (cfg.cert_dir, cfg.cert_dir_len) = (a[5].cptr(), a[5].len);
    (cfg.ca_bundle, cfg.ca_bundle_len) = (a[6].cptr(), a[6].len);
    (cfg.discovery_server, cfg.discovery_server_len) = (a[7].cptr(), a[7].len);
    cfg.discovery_token = pick(&hs.tokens, t);
    cfg.discovery_pins = if pa.is_empty() { null() } else { ps.as_ptr() };
    cfg.discovery_pin_count = ps.len();
    cfg.discovery_unsafe_skip_ca_verification = flags & 1 != 0;
    cfg.discovery_timeout_seconds = waits.0;
    cfg.serving = flags & 2 != 0;
    cfg.serving_dns = if da.is_empty() { null() } else { ds.as_ptr() };
    cfg.serving_dns_count = ds.len();
    cfg.serving_ips = if ia.is_empty() { null() } else { is.as_ptr() };
    cfg.serving_ip_count = is.len();
    cfg.bootstrap_wait_seconds = waits.1;
    cfg.rotation_wait_seconds = waits.2;
    cfg.expiration_seconds = *exp;
    cfg.poll = flags & 4 != 0;
    cfg.mode = *mode;
    cfg.max_rotations = *max_rotations;
    cfg.rotate_now_client = flags & 8 != 0;
    cfg.rotate_now_serving = flags & 16 != 0;
    cfg.utc_offset = *utc_offset;
    cfg.seed = 7;
    cfg.log_format = *log_format;
    cfg.ca_refresh_seconds = *ca_refresh_seconds;
    cfg.key_device = dev.cptr();
    cfg.key_device_len = dev.len;
    let cp: *const kubeboot_agent_config = if flags & 32 != 0 { null() } else { &cfg };
    let r = rc(fag::kubeboot_agent_start(ag, cp));
    assert_eq!(rc(fag::kubeboot_agent_start(null_mut(), &cfg)), NULL_PARAMETER);
    if r == OK {
        assert!(!cp.is_null());
        assert!(a.iter().chain(&pa).chain(&da).chain(&ia).chain([&dev]).all(|x| !x.bad()));
    }
    // (Polled idle when the start failed: the agent answers all the same.)
    let mut now = 1_796_208_640i64;
    let mut ended = false;
    for answer in answers.iter().take(64) {
        let mut act = MaybeUninit::<kubeboot_action>::uninit();
        // SAFETY: filled with canary bytes, compared below as bytes.
        unsafe {
            std::ptr::write_bytes(
                act.as_mut_ptr().cast::<u8>(),
                CANARY,
                size_of::<kubeboot_action>(),
            )
        };
        let untouched = |a: &MaybeUninit<kubeboot_action>| {
            // SAFETY: the bytes of the action, all initialised (canary or written).
            let b = unsafe {
                std::slice::from_raw_parts(a.as_ptr().cast::<u8>(), size_of::<kubeboot_action>())
            };
            b.iter().all(|&x| x == CANARY)
        };
        assert_eq!(rc(fag::kubeboot_agent_poll(null_mut(), now, act.as_mut_ptr())), NULL_PARAMETER);
        assert!(untouched(&act), "action written on NULL_PARAMETER");
        assert_eq!(rc(fag::kubeboot_agent_poll(ag, now, act.as_mut_ptr())), OK);
        // SAFETY: written on OK.
        let act = unsafe { act.assume_init() };
        let asked = check_action(&act, !dev.null, r == OK);
        if matches!(asked.kind, DONE | FAILED) {
            if ended {
                break;
            }
            ended = true;
        }
        match answer {
            AgentAnswer::Read { result, data } => {
                let d = Arg::new(data);
                let r = rc(fag::kubeboot_agent_on_read(ag, now, *result, d.ptr(), d.len));
                assert!(r != OK || !(d.bad() && *result == OK), "NULL data read OK");
            }
            AgentAnswer::FileDone(result) => {
                rc(fag::kubeboot_agent_on_file_done(ag, now, *result));
            }
            AgentAnswer::Entropy(data) => {
                let d = Arg::new(data);
                let r = rc(fag::kubeboot_agent_on_entropy(ag, d.ptr(), d.len));
                assert!(r != OK || !d.bad());
            }
            AgentAnswer::PerformEntropy => {
                let r = rc(fag::kubeboot_agent_perform_entropy(ag));
                assert!(r == OK || asked.kind != ENTROPY, "entropy asked for, not given: {r}");
            }
            AgentAnswer::Http { null: null_resp, status, retry_after, body } => {
                let (ra, b) = (Arg::new(retry_after), Arg::new(body));
                let resp = kubeboot_http_response {
                    status: *status,
                    retry_after: ra.cptr(),
                    retry_after_len: ra.len,
                    body: b.ptr(),
                    body_len: b.len,
                };
                let rp: *const kubeboot_http_response = if *null_resp { null() } else { &resp };
                let r = rc(fag::kubeboot_agent_on_http_response(ag, now, rp));
                assert_eq!(r == OK, !null_resp && !ra.bad() && !b.bad(), "one error channel: {r}");
            }
            AgentAnswer::Stream(chunk, null_keep) => {
                let c = Arg::new(chunk);
                let mut keep = 2u8;
                let kp: *mut bool = if *null_keep { null_mut() } else { (&raw mut keep).cast() };
                let r = rc(fag::kubeboot_agent_on_stream_data(ag, now, c.ptr(), c.len, kp));
                assert_eq!(r == OK, !c.bad() && !null_keep, "one error channel: {r}");
                assert!(if r == OK { keep <= 1 } else { keep == 2 }, "keep_reading {keep} on {r}");
            }
            AgentAnswer::StreamIdle(null_keep) => {
                let mut keep = 2u8;
                let kp: *mut bool = if *null_keep { null_mut() } else { (&raw mut keep).cast() };
                let r = rc(fag::kubeboot_agent_on_stream_idle(ag, now, kp));
                assert_eq!(r == OK, !null_keep, "one error channel: {r}");
                assert!(if r == OK { keep <= 1 } else { keep == 2 }, "keep_reading {keep} on {r}");
            }
            AgentAnswer::NextEvent(nulls) => {
                for _ in 0..64 {
                    let mut e = kubeboot_event {
                        step: null_str(),
                        line: null_str(),
                        update: false,
                        ready: false,
                    };
                    let mut has = 2u8;
                    let ep: *mut kubeboot_event = if nulls & 1 != 0 { null_mut() } else { &mut e };
                    let hp: *mut bool =
                        if nulls & 2 != 0 { null_mut() } else { (&raw mut has).cast() };
                    let r = rc(fag::kubeboot_agent_next_event(ag, ep, hp));
                    assert_eq!(r == OK, nulls & 3 == 0, "one error channel: {r}");
                    if r != OK {
                        assert!(has == 2 && e.line.data.is_null(), "written on {r}");
                        break;
                    }
                    assert!(has <= 1, "has {has}");
                    if has == 0 {
                        assert!(e.line.data.is_null(), "an event written with has = false");
                        break;
                    }
                    assert!(!self::text(e.step).is_empty() && !self::text(e.line).is_empty());
                }
            }
            AgentAnswer::StreamEnd => {
                assert_eq!(rc(fag::kubeboot_agent_on_stream_end(ag, now)), OK);
            }
            AgentAnswer::Transport(why) => {
                let w = Arg::new(why);
                let r = rc(fag::kubeboot_agent_on_transport_error(ag, now, w.cptr(), w.len));
                assert!(r != OK || !w.bad());
            }
            AgentAnswer::UtcOffset(o) => {
                assert_eq!(rc(fag::kubeboot_agent_set_utc_offset(ag, *o)), OK);
            }
            AgentAnswer::Later(s) => now += i64::from(*s),
            AgentAnswer::Wake => {
                let mut woken = true;
                assert_eq!(rc(fag::kubeboot_agent_wake(ag, &mut woken)), OK);
            }
            AgentAnswer::Metrics(at, out) => {
                let mut m = fme::kubeboot_metrics::default();
                assert_eq!(rc(fme::kubeboot_agent_metrics(ag, &mut m)), OK);
                let at = now.saturating_add(i64::from(*at));
                let (r, text) = out_call(out, false, &mut |p, l, ol| {
                    fme::kubeboot_metrics_text(&m, at, p.cast(), l, ol)
                });
                if let (OK, Some(t)) = (r, text) {
                    let t = std::str::from_utf8(&t).expect("metrics are UTF-8");
                    assert!(t.len() <= fme::KUBEBOOT_METRICS_TEXT_CAP);
                    assert!(t.lines().all(|l| l.starts_with("# ") || l.starts_with("kubelet_")));
                }
            }
            AgentAnswer::KeyPublic(p) => {
                let p = Arg::new(p);
                let r = rc(fdev::kubeboot_agent_on_key_public(ag, now, p.ptr(), p.len));
                key_answer_checked(r, &asked, OP_PUBLIC, p.bad(), p.len == 65);
            }
            AgentAnswer::KeyGenerated(reference, point) => {
                let live = match point {
                    Ok(h) => pick(&hs.keys, h),
                    Err(_) => null_mut(),
                };
                let mut live_point = [0u8; 65];
                let pt = match point {
                    Err(b) => Arg::new(b),
                    Ok(_) if live.is_null() => Arg::new(&Bytes::NullLen(64)),
                    Ok(_) => {
                        assert_eq!(
                            rc(fkey::kubeboot_key_public_point(live, live_point.as_mut_ptr())),
                            OK
                        );
                        Arg::new(&Bytes::Data(live_point.to_vec()))
                    }
                };
                // A well-formed reference for the device asked for, when the fuzzer gives none.
                let reference = match reference {
                    Bytes::Null if asked.kind == KEY && !asked.device.data.is_null() => {
                        let mut pem = vec![0u8; fdev::KUBEBOOT_KEY_REF_MAX_LEN];
                        let mut n = 0usize;
                        let r = rc(fdev::kubeboot_pkcs11_key_reference(
                            asked.device.data,
                            asked.device.len,
                            asked.label.data,
                            asked.label.len,
                            b"\x01\x02".as_ptr(),
                            2,
                            pem.as_mut_ptr(),
                            pem.len(),
                            &mut n,
                        ));
                        pem.truncate(if r == OK { n } else { 0 });
                        Arg::new(&Bytes::Data(pem))
                    }
                    b => Arg::new(b),
                };
                let r = rc(fdev::kubeboot_agent_on_key_generated(
                    ag,
                    now,
                    reference.ptr(),
                    reference.len,
                    pt.ptr(),
                    pt.len,
                ));
                let bad = reference.bad() || pt.bad();
                key_answer_checked(r, &asked, OP_GENERATE, bad, pt.len == 65);
            }
            AgentAnswer::KeySignature(rs) => {
                let rs = Arg::new(rs);
                let r = rc(fdev::kubeboot_agent_on_key_signature(ag, now, rs.ptr(), rs.len));
                key_answer_checked(r, &asked, OP_SIGN, rs.bad(), rs.len == 64);
            }
            AgentAnswer::SignWith(h, behaviour) => {
                let key = pick(&hs.keys, h);
                let st = crate::csr::SignerState { behaviour: behaviour.clone(), key };
                let mut signer = kubeboot_ffi::csr::kubeboot_signer {
                    sign: Some(crate::csr::sign_cb),
                    userdata: &st as *const _ as *mut core::ffi::c_void,
                    public_point: [0u8; 65],
                };
                if !key.is_null() {
                    assert_eq!(
                        rc(fkey::kubeboot_key_public_point(key, signer.public_point.as_mut_ptr())),
                        OK
                    );
                }
                let r = rc(fdev::kubeboot_agent_sign_with(ag, now, &signer));
                if key.is_null() {
                    assert_eq!(r, MALFORMED_KEY, "an all-zero point is no key");
                } else {
                    key_answer_checked(r, &asked, OP_SIGN, false, true);
                }
            }
            AgentAnswer::KeyDestroyed => {
                let r = rc(fdev::kubeboot_agent_on_key_destroyed(ag, now));
                key_answer_checked(r, &asked, OP_DESTROY, false, true);
            }
            AgentAnswer::KeyError(why) => {
                let w = Arg::new(why);
                let r = rc(fdev::kubeboot_agent_on_key_error(ag, now, w.cptr(), w.len));
                if w.bad() {
                    assert_eq!(r, NULL_PARAMETER);
                } else {
                    assert_eq!(r == OK, asked.kind == KEY, "{r}");
                }
            }
        }
    }
    assert_eq!(rc(fag::kubeboot_agent_poll(ag, now, null_mut())), NULL_PARAMETER);
    assert_eq!(rc(fdev::kubeboot_agent_on_key_destroyed(null_mut(), now)), NULL_PARAMETER);
    fag::kubeboot_agent_free(ag);
    if let Some(b) = block {
        // The caller's memory is the caller's again: nothing written outside it.
        assert!(b.bytes[..b.offset].iter().all(|&x| x == MEM_CANARY), "written before mem");
    }
}

/// A KEY answer's result: NULL with a length is `NULL_PARAMETER`, a wrong length
/// `INVALID_PARAMETER`, an answer to another operation (or to none) `INVALID_STATE`, else OK.
fn key_answer_checked(r: u32, act: &Asked, op: u32, bad: bool, sized: bool) {
    let asked = act.kind == KEY && act.key_op == op;
    let want = if bad {
        NULL_PARAMETER
    } else if !sized {
        INVALID_PARAMETER
    } else if !asked {
        INVALID_STATE
    } else {
        OK
    };
    assert_eq!(r, want, "KEY answer for op {op} to {} / {}", act.kind, act.key_op);
}
