//! The networked kubeboot image (QEMU `mps2-an386`, Cortex-M4): the node agent of the core
//! (`kubeboot::agent::Agent`, the same decisions as the CLI, C and Go agents) joins a real
//! cluster over TLS 1.3 through a UART. This image is only the agent's front-end: it does the
//! I/O — the framed pipe over the UART, TLS (embedded-tls, verified by kubeboot), HTTP/1.1, a
//! file system in RAM for the cert dir, entropy and time from the host — and prints.
//!
//! Command line (QEMU `-semihosting-config arg=...`):
//!
//! * `join DIR`: provisioning from the host directory `DIR` (`bootstrap-kubeconfig`: server,
//!   CA data and bootstrap token; `ca-bundle`: the CA issued certificates chain to;
//!   `node-name`). Bootstrap with the token, then over mutual TLS
//!   with the issued certificate a SelfSubjectReview (`joined system:node:<name> ...`), then one
//!   rotation (`rotated serial=<hex>`).
//! * `echo echo:PORT`: the transport self-test (64 KiB through the relay's echo).
#![no_std]
#![no_main]

mod flash;
mod host;
mod http;
mod modem;
mod phases;
mod session;
mod tls;
mod uart;

use core::mem::MaybeUninit;
use core::panic::PanicInfo;
use core::ptr::addr_of_mut;

use cortex_m_rt::entry;
use embedded_io::{Read, Write};
use kubeboot::agent::{Action, Agent, Capacities, Config, Mode, RotateNow};
use kubeboot_firmware::{exit, image_sizes, line, paint_stack, put, put_u32, stack_peak};
use rand_chacha::ChaCha20Rng;
use rand_core_06::{RngCore, SeedableRng};

use flash::Flash;
use modem::Modem;
use phases::{Phase, Phases};
use session::Net;

unsafe extern "C" {
    fn DefaultHandler();
}

/// Interrupt vectors: none is taken (the UART and timer interrupts only wake `WFI`, masked by
/// PRIMASK), so one entry.
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
static mut FLASH: Flash = Flash::new();
static mut MODEM: MaybeUninit<Modem> = MaybeUninit::uninit();

const BOOTSTRAP_KUBECONFIG: &str = "/etc/kubernetes/bootstrap-kubelet.conf";
const CA_BUNDLE: &str = "/etc/kubernetes/pki/ca.crt";
const KUBECONFIG: &str = "/etc/kubernetes/kubelet.conf";
const CERT_DIR: &str = "/var/lib/kubelet/pki";

#[entry]
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
        (Some("join"), Some(dir)) => join(modem, dir),
        _ => {
            line(&["usage: kubeboot-net join DIR | echo echo:PORT"], None);
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

/// Read a provisioning file of the host into the device's flash.
#[inline(never)] // its locals stay out of the caller's frame
fn provision(flash: &mut Flash, dir: &str, name: &str, to: &str) -> bool {
    let mut path = heapless::String::<256>::new();
    let mut buf = [0u8; 4096];
    let ok = path.push_str(dir).is_ok() && path.push('/').is_ok() && path.push_str(name).is_ok();
    let r = if ok { host::read_file(&path, &mut buf).ok() } else { None };
    match r.map(|bytes| flash.write(to, bytes)) {
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
fn join(modem: &'static mut Modem, dir: &str) -> (bool, u32) {
    let mut phases = Phases::start();
    let ok = join_with(modem, dir, &mut phases);
    (ok, phases.peak_stack())
}

fn join_with(modem: &'static mut Modem, dir: &str, phases: &mut Phases) -> bool {
    // SAFETY: `main` runs once, `join` once, and no interrupt handler runs: these are the only
    // references to the three statics, ever (the agent borrows its memory for `'static`).
    let (memory, slot, flash) = unsafe {
        (&mut *addr_of_mut!(AGENT_MEMORY), &mut *addr_of_mut!(AGENT), &mut *addr_of_mut!(FLASH))
    };
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
    let (bytes, entries) = flash.peak();
    line(&["flash: peak bytes="], Some(bytes as u32));
    line(&["flash: peak entries="], Some(entries as u32));
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
fn print_serial(flash: &Flash) {
    let mut der = [0u8; 2048];
    let path = "/var/lib/kubelet/pki/kubelet-client-current.pem";
    let described = flash
        .read(path, usize::MAX)
        .ok()
        .and_then(|pem| kubeboot::pem::decode_first(pem, "CERTIFICATE", &mut der).ok())
        .and_then(|der| kubeboot::verify::describe(der).ok());
    match described {
        Some(d) => line(&["rotated serial=", &d.serial, " subject=", &d.subject], None),
        None => line(&["rotated: the new certificate does not read"], None),
    }
}

/// Drive the agent once (`Mode::Once`) to `Done` (true) or `Failed` (false).
fn run_agent(
    agent: &mut DeviceAgent,
    config: &Config<'_>,
    flash: &mut Flash,
    net: &mut Net,
    rng: &mut ChaCha20Rng,
    phases: &mut Phases,
) -> bool {
    let mut config = *config;
    config.mode = Mode::Once;
    config.verifier = kubeboot::backend::SOFTWARE;
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
