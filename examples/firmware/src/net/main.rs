//! The networked kubeboot image (QEMU `mps2-an386`, Cortex-M4): the node agent of the core
//! (`kubeboot::agent::Agent`, the same decisions as the CLI, C and Go agents) joins a real
//! cluster over TLS 1.3 through a UART. This image is only the agent's front-end: it does the
//! I/O — the framed pipe over the UART, TLS (embedded-tls, verified by kubeboot), HTTP/1.1, its
//! files in non-volatile storage (`store`: sequential-storage's map over the emulated NOR flash
//! of `nor`, a host file that outlives the run), entropy and time from the host — and prints.
//!
//! Command line (QEMU `-semihosting-config arg=...`):
//!
//! * `join DIR FLASH`: provisioning from the host directory `DIR` (`bootstrap-kubeconfig`:
//!   server, CA data and bootstrap token; `ca-bundle`: the CA issued certificates chain to;
//!   `node-name`), the node's files in the flash file `FLASH` (`nor`: its length gives the page
//!   count; the harness creates it erased). Credentials from the flash when they are usable,
//!   else bootstrap with the token (a restart resumes its own `node-csr-` CSR from the key
//!   cache), then over mutual TLS with the node's certificate a SelfSubjectReview (`joined
//!   system:node:<name> ...`), then one rotation (`rotated serial=<hex>`): every join rotates
//!   once, so a power-cut test lands cuts in rotations too. The store's figures close the run
//!   (`store: items=... erases-run=...`).
//! * `nv-layout FLASH N`: write the store's layout version item `N` (a store of another
//!   firmware's layout, for the refusal tests).
//! * `echo echo:PORT`: the transport self-test (64 KiB through the relay's echo).
#![no_std]
#![no_main]

mod host;
mod http;
mod modem;
mod nor;
mod phases;
mod record;
mod session;
mod store;
mod tls;
mod uart;

use core::mem::MaybeUninit;
use core::panic::PanicInfo;
use core::ptr::addr_of_mut;

use embedded_io::{Read, Write};
use kubeboot::agent::{Action, Agent, Capacities, Config, Mode, RotateNow};
use kubeboot_firmware::{exit, image_sizes, line, paint_stack, put, put_u32, stack_peak};
use rand_chacha::ChaCha20Rng;
use rand_core_06::{RngCore, SeedableRng};

use modem::Modem;
use nor::HostNor;
use phases::{Phase, Phases};
use session::Net;
use store::{Layout, Store};

#[cfg(target_arch = "arm")]
unsafe extern "C" {
    fn DefaultHandler();
}

/// Interrupt vectors: none is taken (the UART and timer interrupts only wake `WFI`, masked by
/// PRIMASK), so one entry.
#[cfg(target_arch = "arm")]
#[unsafe(link_section = ".vector_table.interrupts")]
#[unsafe(no_mangle)]
static __INTERRUPTS: [unsafe extern "C" fn(); 1] = [DefaultHandler];

/// What the device's agent keeps, checked by `Agent::new` (`Capacities::check`):
/// * `response`: the work buffer, the largest response or watch event the device takes. A real
///   apiserver's largest event for a node's CSR (issued, with managedFields) was 2,174 bytes
///   (core/tests/data/recorded/watch-approved.json); a larger one is a typed failure.
/// * `pem`: each CA bundle and certificate chain: two ECDSA P-256 CAs (about 650 bytes each), or
///   an RSA-2048 CA (about 1,200).
/// * `key`: the node's own key, a software P-256 key as SEC1 PEM (the smallest the rules take).
/// * `file`: what a file step writes: the pair (`pem` + the key) or the node kubeconfig with the
///   CA inline (`pem` / 3 × 4 + its fields, about 600 bytes).
/// * `path`: each path (the kubelet's layout below is at most 59 bytes).
/// * `serving_dns`: none (no serving certificate).
pub const CAPS: Capacities = Capacities {
    response: 4096,
    pem: 1536,
    key: kubeboot::key::SEC1_PEM_LEN,
    file: 3072,
    path: 64,
    serving_dns: 0,
};
/// The agent's memory, a constant size.
pub const MEMORY: usize = CAPS.memory_len();

/// The agent as the device keeps it, over its memory block.
pub type DeviceAgent = Agent<'static>;

/// The agent's memory, in `.bss`.
static mut AGENT_MEMORY: [u8; MEMORY] = [0; MEMORY];
/// The agent itself, in `.bss`, made once by `join`.
static mut AGENT: MaybeUninit<DeviceAgent> = MaybeUninit::uninit();
/// The node's files, over the flash (made once by `join`).
static mut STORE: MaybeUninit<Store> = MaybeUninit::uninit();
static mut MODEM: MaybeUninit<Modem> = MaybeUninit::uninit();

const BOOTSTRAP_KUBECONFIG: &str = "/etc/kubernetes/bootstrap-kubelet.conf";
const CA_BUNDLE: &str = "/etc/kubernetes/pki/ca.crt";
const KUBECONFIG: &str = "/etc/kubernetes/kubelet.conf";
const CERT_DIR: &str = "/var/lib/kubelet/pki";

// The same image on RISC-V (QEMU `virt`, riscv32imac): built from examples/firmware-riscv, what
// differs per board in `kubeboot_firmware::board`.
#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    paint_stack();
    kubeboot_firmware::timer_start();
    let mut cmd = [0u8; 512];
    let cmd = host::cmdline(&mut cmd);
    let mut words = cmd.split(' ').filter(|w| !w.is_empty());
    let _program = words.next();
    // SAFETY: `main` runs once: this is the only reference to the modem.
    let modem = unsafe { (*addr_of_mut!(MODEM)).write(Modem::new(uart::Uart::open())) };
    let (ok, stack) = match (words.next(), words.next()) {
        (Some("echo"), target) => (echo(modem, target.unwrap_or("echo:0")), stack_peak() as u32),
        (Some("join"), Some(dir)) => match words.next() {
            Some(nv) => join(modem, dir, nv),
            None => {
                line(&["usage: kubeboot-net join DIR FLASH"], None);
                (false, 0)
            }
        },
        (Some("nv-layout"), Some(nv)) => (set_layout(nv, words.next()), stack_peak() as u32),
        _ => {
            line(
                &["usage: kubeboot-net join DIR FLASH | nv-layout FLASH N | echo echo:PORT"],
                None,
            );
            (false, 0)
        }
    };
    let (flash, ram) = image_sizes();
    put(b"footprint: flash=");
    put_u32(flash as u32);
    put(b" ram=");
    put_u32(ram as u32);
    line(&[" stack="], Some(stack));
    exit(ok)
}

/// Read a provisioning file of the host into the store (written only when it changed).
#[inline(never)] // its locals stay out of the caller's frame
fn provision(store: &mut Store, dir: &str, name: &str, to: &str) -> bool {
    let mut path = heapless::String::<256>::new();
    let mut buf = [0u8; store::MAX_FILE];
    let ok = path.push_str(dir).is_ok() && path.push('/').is_ok() && path.push_str(name).is_ok();
    let r = if ok { host::read_file(&path, &mut buf).ok() } else { None };
    let stored = r.map(|bytes| store.provision(to, bytes));
    // The bootstrap kubeconfig holds the token.
    buf.fill(0);
    match stored {
        Some(Ok(())) => true,
        _ => {
            line(&["provisioning: cannot read ", &path], None);
            false
        }
    }
}

/// Bootstrap, prove the identity over mutual TLS, rotate once. Returns whether all of it
/// succeeded, and the peak stack.
#[inline(never)] // its locals stay out of the caller's frame
fn join(modem: &'static mut Modem, dir: &str, nv: &str) -> (bool, u32) {
    let mut phases = Phases::start();
    let ok = join_with(modem, dir, nv, &mut phases);
    (ok, phases.peak_stack())
}

/// Open the store on the flash file `nv` and check its layout: a store of an older layout, or
/// one the map cannot read, is erased (its credentials are unusable: the agent bootstraps
/// afresh); one of a newer layout is refused untouched. Each case prints its reason.
#[inline(never)] // its locals stay out of the caller's frame
fn open_store(nv: &str) -> Option<&'static mut Store> {
    let nor = match HostNor::open(nv) {
        Ok(n) => n,
        Err(e) => {
            line(&["store: refused reason=", e.name(), " flash=", nv], None);
            return None;
        }
    };
    // SAFETY: `main` runs once and calls this once: the only reference to the static.
    let slot = unsafe { &mut *addr_of_mut!(STORE) };
    let store = match Store::new(nor) {
        Ok(s) => slot.write(s),
        Err(f) => {
            line(&["store: refused reason=", f.name()], None);
            return None;
        }
    };
    let pages = nor.pages() as u32;
    let erase = match store.layout() {
        Ok(Layout::Fresh) => {
            line(&["store: fresh layout=1 pages="], Some(pages));
            false
        }
        Ok(Layout::Current) => {
            line(&["store: layout=1 pages="], Some(pages));
            false
        }
        Ok(Layout::Lost) => {
            line(&["store: reason=layout-item-lost: written again layout=1 pages="], Some(pages));
            false
        }
        Ok(Layout::Newer(v)) => {
            line(&["store: refused reason=layout-newer expected=1 found="], Some(u32::from(v)));
            return None;
        }
        Ok(Layout::Older(v)) => {
            line(&["store: reason=layout-older expected=1 found="], Some(u32::from(v)));
            true
        }
        Err(f) => {
            line(&["store: reason=", f.name(), " (the layout item)"], None);
            true
        }
    };
    if erase {
        line(&["store: no usable credentials: erasing the store pages="], Some(pages));
        if let Err(f) = store.erase_all() {
            line(&["store: refused reason=", f.name(), " (erasing)"], None);
            return None;
        }
    }
    Some(store)
}

/// The maintenance command `nv-layout FLASH N`: the store's layout version item set to `N`.
#[inline(never)] // its locals stay out of the caller's frame
fn set_layout(nv: &str, version: Option<&str>) -> bool {
    let v = version.and_then(|v| http::decimal(v.as_bytes())).and_then(|v| u8::try_from(v).ok());
    let r = match (HostNor::open(nv), v) {
        (Ok(nor), Some(v)) => Store::new(nor).and_then(|mut s| s.set_layout(v)),
        (Err(e), _) => Err(store::Fault::Flash(e)),
        (_, None) => {
            line(&["usage: kubeboot-net nv-layout FLASH N (0-255)"], None);
            return false;
        }
    };
    match r {
        Ok(()) => line(&["store: layout item written"], None),
        Err(f) => line(&["store: refused reason=", f.name()], None),
    }
    r.is_ok()
}

/// The store's figures: live items and bytes, pages in use, erases (this run, the flash's life,
/// the most of one page), the largest item this run stored.
#[inline(never)] // its locals stay out of the caller's frame
fn print_figures(store: &mut Store) {
    match store.figures() {
        Ok(f) => {
            let (largest, stores) = store.written();
            put(b"store: items=");
            put_u32(f.items);
            put(b" bytes=");
            put_u32(f.bytes);
            put(b" pages-used=");
            put_u32(f.pages_used);
            put(b" stores-run=");
            put_u32(stores);
            put(b" largest-item=");
            put_u32(largest as u32);
            put(b" erases-run=");
            put_u32(nor::erases());
            put(b" erases-total=");
            put_u32(f.erases_total);
            line(&[" erases-max-page="], Some(f.erases_max));
        }
        Err(f) => line(&["store: figures failed reason=", f.name()], None),
    }
}

fn join_with(modem: &'static mut Modem, dir: &str, nv: &str, phases: &mut Phases) -> bool {
    let Some(flash) = open_store(nv) else {
        line(&["store: erases-run="], Some(nor::erases()));
        return false;
    };
    let ok = join_store(modem, dir, flash, phases);
    print_figures(flash);
    ok
}

fn join_store(
    modem: &'static mut Modem,
    dir: &str,
    flash: &mut Store,
    phases: &mut Phases,
) -> bool {
    // SAFETY: `main` runs once, `join` once, and no interrupt handler runs: these are the only
    // references to the two statics, ever (the agent borrows its memory for `'static`).
    let (memory, slot) = unsafe { (&mut *addr_of_mut!(AGENT_MEMORY), &mut *addr_of_mut!(AGENT)) };
    let agent = match Agent::new(memory, &CAPS) {
        Ok(a) => slot.write(a),
        Err(e) => {
            line(&["agent: ", e.name()], None);
            return false;
        }
    };
    let mut node = [0u8; 64];
    let mut path = heapless::String::<256>::new();
    let _ = path.push_str(dir).and_then(|()| path.push_str("/node-name"));
    let node = match host::read_file(&path, &mut node).map(core::str::from_utf8) {
        Ok(Ok(n)) => n.trim(),
        _ => {
            line(&["provisioning: cannot read ", &path], None);
            return false;
        }
    };
    if flash.mkdir("/etc/kubernetes/pki").is_err()
        || !provision(flash, dir, "bootstrap-kubeconfig", BOOTSTRAP_KUBECONFIG)
        || !provision(flash, dir, "ca-bundle", CA_BUNDLE)
    {
        return false;
    }
    let mut seed = [0u8; 32];
    if host::entropy(&mut seed).is_err() {
        line(&["entropy: the host gave none"], None);
        return false;
    }
    let mut rng = ChaCha20Rng::from_seed(seed);
    seed.fill(0);
    let mut net = Net::new(modem);

    let mut config = Config::new("firmware", "/", KUBECONFIG, CERT_DIR);
    config.node_name = Some(node);
    config.bootstrap_kubeconfig = Some(BOOTSTRAP_KUBECONFIG);
    config.ca_bundle = Some(CA_BUNDLE);
    config.seed = rng.next_u64();
    let mut wait = [0u8; 16];
    path.clear();
    let _ = path.push_str(dir).and_then(|()| path.push_str("/bootstrap-wait"));
    if let Some(secs) = host::read_file(&path, &mut wait).ok().and_then(http::decimal) {
        config.bootstrap_wait_secs = secs as i64;
    }
    line(&["join: node ", node, " bootstrap"], None);
    if !run_agent(agent, &config, flash, &mut net, &mut rng, phases) {
        phases.report();
        return false;
    }
    phases.report_run("bootstrap");
    // The identity check comes first on the next session with the node's credentials.
    net.review_next = true;
    config.rotate_now = RotateNow { client: true, serving: false };
    line(&["join: rotate"], None);
    let rotated = run_agent(agent, &config, flash, &mut net, &mut rng, phases);
    net.close();
    phases.report_run("rotation");
    phases.report();
    if !net.reviewed {
        line(&["join: no SelfSubjectReview answered"], None);
        return false;
    }
    if rotated {
        print_serial(flash);
    }
    rotated
}

/// The serial of `kubelet-client-current.pem`.
#[inline(never)] // its locals stay out of the caller's frame
fn print_serial(flash: &mut Store) {
    let mut der = [0u8; 2048];
    let path = "/var/lib/kubelet/pki/kubelet-client-current.pem";
    let described = flash
        .read(path, usize::MAX)
        .ok()
        .and_then(|pem| kubeboot::pem::decode_first(pem, "CERTIFICATE", &mut der).ok())
        .and_then(|der| kubeboot::verify::describe(der).ok());
    flash.wipe();
    match described {
        Some(d) => line(&["rotated serial=", &d.serial, " subject=", &d.subject], None),
        None => line(&["rotated: the new certificate does not read"], None),
    }
}

/// Drive the agent once (`Mode::Once`) to `Done` (true) or `Failed` (false).
fn run_agent(
    agent: &mut DeviceAgent,
    config: &Config<'_>,
    flash: &mut Store,
    net: &mut Net,
    rng: &mut ChaCha20Rng,
    phases: &mut Phases,
) -> bool {
    let mut config = *config;
    config.mode = Mode::Once;
    config.verifier = kubeboot::backend::SOFTWARE;
    // A start numbers the agent's connections from the beginning again: a session kept from the
    // last run could carry the id of this run's first connection with other credentials (a
    // bootstrap that resumed its CSR ended on the id the rotation then began with, and the
    // rotation's request went out without the client certificate). Each run opens its own.
    net.close();
    if let Err(e) = agent.start(&config) {
        line(&["agent: start failed: ", e.name()], None);
        return false;
    }
    let _ = phases.enter(Phase::Csr);
    loop {
        let now = host::now();
        match agent.poll(now) {
            Action::Read(r) => {
                let result = flash.read(r.path, r.max_len);
                agent.on_read(now, result);
                flash.wipe();
            }
            Action::File(step) => {
                let result = flash.perform(&step);
                agent.on_file_done(now, result);
            }
            Action::Entropy { len } => {
                let mut buf = [0u8; 64];
                let buf = buf.get_mut(..len).unwrap_or(&mut []);
                rng.fill_bytes(buf);
                agent.on_entropy(buf);
                buf.fill(0);
            }
            Action::Http(request) => {
                let sent = net.send(&request, now, rng, phases);
                net.finish(agent, sent, now, phases);
            }
            Action::Sleep { until } => net.sleep_until(until),
            Action::Event(e) => line(&[e.line], None),
            Action::Done(_) => return true,
            Action::Failed(f) => {
                line(&[f.line], None);
                return false;
            }
            _ => {
                line(&["agent: an action this front-end does not know"], None);
                return false;
            }
        }
    }
}

/// The transport self-test: 64 KiB through the relay's echo and back, compared.
#[inline(never)] // its locals stay out of the caller's frame
fn echo(modem: &mut Modem, target: &str) -> bool {
    const TOTAL: usize = 64 * 1024;
    if modem.connect(target, host::now() + 10).is_err() {
        line(&["echo: connect failed"], None);
        return false;
    }
    modem::set_deadline(host::now() + 120);
    let t0 = host::now();
    let (k0, w0) = (kubeboot_firmware::ticks(), uart::waited_ticks());
    let mut sent = 0usize;
    let mut got = 0usize;
    let mut buf = [0u8; 256];
    let mut exchange = || {
        while got < TOTAL {
            if sent < TOTAL {
                let mut chunk = [0u8; 256];
                for (i, b) in chunk.iter_mut().enumerate() {
                    *b = ((sent + i) % 251) as u8;
                }
                if modem.write(&chunk).is_err() {
                    return false;
                }
                sent += chunk.len();
            }
            while got < sent {
                match modem.read(&mut buf) {
                    Ok(n) => {
                        for (i, b) in buf.iter().take(n).enumerate() {
                            if *b != ((got + i) % 251) as u8 {
                                return false;
                            }
                        }
                        got += n;
                    }
                    Err(_) => return false,
                }
            }
        }
        true
    };
    let r = exchange();
    let busy = kubeboot_firmware::ticks()
        .wrapping_sub(k0)
        .wrapping_sub(uart::waited_ticks().wrapping_sub(w0));
    let insns = busy.saturating_mul(kubeboot_firmware::INSNS_PER_TICK);
    modem.close();
    line(&["echo: bytes="], Some(got as u32));
    line(&["echo: seconds="], Some((host::now() - t0) as u32));
    line(&["instructions: echo="], Some(insns));
    line(&["echo ", if r { "ok" } else { "FAILED" }], None);
    r
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    put(b"panic");
    if let Some(l) = info.location() {
        put(b" at ");
        put(l.file().as_bytes());
        put(b":");
        put_u32(l.line());
    }
    put(b"\n");
    exit(false)
}
