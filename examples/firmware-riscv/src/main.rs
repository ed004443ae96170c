//! kubeboot's node agent on RISC-V (`riscv32imac`, QEMU `virt`, machine mode, no allocator):
//! the core's `kubeboot::agent::Agent` in memory this image sizes, its files in a RAM file system,
//! driven through a bootstrap by the recorded apiserver's answers (core/tests/data/recorded:
//! healthz, the create, the watch in 64-byte pieces) to its `done` line, then started again
//! from what the file system holds (valid credentials: nothing sent). The same agent, the same
//! answers and the same expectations as the Cortex-M4 C image (examples/firmware/c/main.c),
//! through the Rust API on a second instruction set. Output on the board's NS16550A UART; the
//! exit status through its SiFive test device; no network device (`-nic none`).
//!
//! Printed for `run`: each line of the agent, `stack: agent=` (the peak, by stack painting),
//! `instructions: agent=` (`minstret`, exact under `-icount`), `agent ok` or `agent FAILED`.
#![no_std]
#![no_main]

#[path = "../../firmware/src/net/flash.rs"]
mod flash;

use core::mem::MaybeUninit;
use core::panic::PanicInfo;
use core::ptr::{addr_of, addr_of_mut, read_volatile, write_volatile};

use flash::Flash;
use kubeboot::agent::{Action, Agent, Capacities, Config, Method, RequestKind, StreamControl};
use kubeboot::pushback::Headers;

// ---------------------------------------------------------------------------------------------
// The board: QEMU virt's UART and test device

/// NS16550A UART0: transmit holding register at +0, line status at +5 (bit 5: room to send).
const UART: usize = 0x1000_0000;
/// SiFive test device: `0x5555` ends QEMU with status 0, `(code << 16) | 0x3333` with `code`.
const TEST: usize = 0x0010_0000;

fn put(bytes: &[u8]) {
    for &b in bytes {
        // SAFETY: the UART's registers on QEMU virt (device memory, byte accesses).
        unsafe {
            while read_volatile((UART + 5) as *const u8) & 0x20 == 0 {}
            write_volatile(UART as *mut u8, b);
        }
    }
}

fn put_u64(mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(d) = buf.get_mut(i) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    put(buf.get(i..).unwrap_or(&[]));
}

/// `parts`, then `n` if any, then a newline.
fn line(parts: &[&str], n: Option<u64>) {
    for p in parts {
        put(p.as_bytes());
    }
    if let Some(n) = n {
        put_u64(n);
    }
    put(b"\n");
}

fn exit(ok: bool) -> ! {
    let code: u32 = if ok { 0x5555 } else { (1 << 16) | 0x3333 };
    // SAFETY: the test device's register on QEMU virt.
    unsafe { write_volatile(TEST as *mut u32, code) };
    loop {
        core::hint::spin_loop();
    }
}

/// Instructions retired (`minstret`/`minstreth`; QEMU counts them exactly under `-icount`).
fn instret() -> u64 {
    loop {
        let (hi, lo, hi2): (u32, u32, u32);
        // SAFETY: reading machine-mode counters has no side effect.
        unsafe {
            core::arch::asm!("csrr {0}, minstreth", "csrr {1}, minstret", "csrr {2}, minstreth",
                out(reg) hi, out(reg) lo, out(reg) hi2);
        }
        if hi == hi2 {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Stack painting (as the Cortex-M4 images): paint the free stack, run, scan for the lowest
// word no longer painted.

const PAINT: u32 = 0xC0FF_EE11;
/// How far below the top the stack is painted and scanned.
const PROBE: usize = 64 * 1024;

unsafe extern "C" {
    /// The top of the stack (memory.x).
    static _fw_stack_top: u32;
}

fn stack_top() -> usize {
    addr_of!(_fw_stack_top) as usize
}

/// Paint below the current frame (inlined: it writes only below its caller's stack pointer,
/// minus a margin for its own spills).
#[inline(always)]
fn paint_stack() {
    let sp: usize;
    // SAFETY: reads the stack pointer.
    unsafe { core::arch::asm!("mv {0}, sp", out(reg) sp) };
    let mut p = stack_top() - PROBE;
    while p < sp - 128 {
        // SAFETY: [top - PROBE, sp - 128) is free stack (RAM above the statics: memory.x).
        unsafe { write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

fn stack_peak() -> usize {
    let top = stack_top();
    let mut p = top - PROBE;
    // SAFETY: reads of RAM in [top - PROBE, top).
    while p < top && unsafe { read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    top - p
}

// ---------------------------------------------------------------------------------------------
// The node and the recorded apiserver

/// A microcontroller's capacities, the C image's: a 4 KiB work buffer (a watch event with its
/// certificate), 1.5 KiB per CA bundle or chain, a 512-byte key, 3 KiB per file written,
/// 64-byte paths, a client certificate only.
const CAPS: Capacities =
    Capacities { response: 4096, pem: 1536, key: 512, file: 3072, path: 64, serving_dns: 0 };
/// The agent's memory, exactly what the capacities take.
static mut MEMORY: [u8; CAPS.memory_len()] = [0; CAPS.memory_len()];
/// The agent value itself (its regions are in `MEMORY`), off the stack.
static mut AGENT: MaybeUninit<Agent<'static>> = MaybeUninit::uninit();
static mut FLASH: Flash = Flash::new();

/// 2026-12-02T10:50:40Z, when the recording was made (the issued certificate is valid then).
const REC_NOW: i64 = 1_796_208_640;

macro_rules! recorded {
    ($file:literal) => {
        include_bytes!(concat!("../../../core/tests/data/recorded/", $file))
    };
}
static REC_KEY: &[u8] = recorded!("approved.key.pem");
static REC_CA: &[u8] = recorded!("client-ca.pem");
static REC_SERVING_CA: &[u8] = recorded!("serving-ca.pem");
static REC_CREATED: &[u8] = recorded!("csr-create-201.json");
static REC_WATCH: &[u8] = recorded!("watch-approved.json");

/// The node's bootstrap kubeconfig, as provisioned (the C image's).
const BOOTSTRAP: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: serving-ca.pem\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: hi3rc6.cpoi3m254kzpt12t\n";

/// The node's files as provisioned: the bootstrap kubeconfig, the cluster's CA, the CA bundle
/// issued certificates must chain to, and the key cache with the key the recording's approval
/// is for (the key a device made on its first boot, before it lost power).
fn provision(flash: &mut Flash) -> bool {
    flash.mkdir("/node/pki").is_ok()
        && flash.write("/node/bootstrap.conf", BOOTSTRAP.as_bytes()).is_ok()
        && flash.write("/node/serving-ca.pem", REC_SERVING_CA).is_ok()
        && flash.write("/node/client-ca.pem", REC_CA).is_ok()
        && flash.write("/node/pki/kubelet-client.key.tmp", REC_KEY).is_ok()
}

fn node_config() -> Config<'static> {
    let mut c = Config::new("riscv-firmware", "/node", "kubelet.conf", "pki");
    c.node_name = Some("rec-1");
    c.bootstrap_kubeconfig = Some("bootstrap.conf");
    c.ca_bundle = Some("client-ca.pem");
    c.seed = 42;
    c
}

/// The apiserver as recorded: `/healthz`, the create, the watch in 64-byte pieces (as a UART
/// or a TLS record boundary would cut it); anything else was not recorded.
fn serve(agent: &mut Agent<'_>, now: i64, kind: RequestKind, method: Method) {
    match (kind, method) {
        (RequestKind::Healthz, Method::Get) => {
            agent.on_http_response(now, 200, &Headers::NONE, b"ok")
        }
        (RequestKind::Create, Method::Post) => {
            agent.on_http_response(now, 201, &Headers::NONE, REC_CREATED)
        }
        (RequestKind::Watch, Method::Get) => {
            for chunk in REC_WATCH.chunks(64) {
                if agent.on_stream_data(now, chunk) == StreamControl::Close {
                    return;
                }
            }
            agent.on_stream_end(now);
        }
        _ => agent.on_transport_error(now, "not recorded"),
    }
}

/// The client certificate's validity and rotation deadline at `Done`.
type Client = (i64, i64, i64);

/// Drive the agent to `Done` (its client certificate) or not, counting the requests.
fn drive(
    agent: &mut Agent<'_>,
    flash: &mut Flash,
    now: &mut i64,
    requests: &mut u32,
) -> Option<Client> {
    for _ in 0..200 {
        match agent.poll(*now) {
            Action::Read(r) => {
                let result = flash.read(r.path, r.max_len);
                agent.on_read(*now, result);
            }
            Action::File(step) => {
                let result = flash.perform(&step);
                agent.on_file_done(*now, result);
            }
            Action::Http(h) => {
                *requests += 1;
                let (kind, method) = (h.kind, h.method);
                serve(agent, *now, kind, method);
            }
            Action::Sleep { until } => *now = until,
            Action::Event(e) => line(&[e.line], None),
            Action::Done(outcome) => {
                let c = outcome.client?;
                return Some((c.not_before, c.not_after, c.rotation_deadline));
            }
            Action::Failed(f) => {
                line(&[f.line], None);
                return None;
            }
            // Entropy and a key device: not on this board (the key is the cached one).
            _ => {
                line(&["agent: an action this board does not serve"], None);
                return None;
            }
        }
    }
    None
}

/// Bootstrap against the recording, then start again from the file system.
#[inline(never)] // its locals are in the painted stack
fn run_agent() -> bool {
    // SAFETY: `main` runs once and no interrupt is enabled: these are the only references.
    let (memory, slot, flash) = unsafe {
        (&mut *addr_of_mut!(MEMORY), &mut *addr_of_mut!(AGENT), &mut *addr_of_mut!(FLASH))
    };
    line(&["agent: memory="], Some(CAPS.memory_len() as u64));
    if !provision(flash) {
        line(&["provisioning: the file system is full"], None);
        return false;
    }
    let agent = match Agent::new(memory, &CAPS) {
        Ok(a) => slot.write(a),
        Err(e) => {
            line(&["agent: ", e.name()], None);
            return false;
        }
    };
    let config = node_config();
    let mut now = REC_NOW;
    let mut requests = 0;
    let first =
        agent.start(&config).ok().and_then(|()| drive(agent, flash, &mut now, &mut requests));
    // healthz, create, watch; the certificate valid then; the deadline at 70-90 % of its life.
    let ok = first.is_some_and(|(nb, na, deadline)| {
        let life = na - nb;
        requests == 3
            && nb <= REC_NOW
            && na > REC_NOW
            && deadline >= nb + life * 7 / 10
            && deadline <= nb + life * 9 / 10
    });
    // Again, from what the file system holds now: valid credentials, nothing sent.
    requests = 0;
    let again = ok
        && agent.start(&config).is_ok()
        && drive(agent, flash, &mut now, &mut requests).is_some()
        && requests == 0;
    // SAFETY: written above; dropped once (its Drop wipes the secrets it holds).
    unsafe { slot.assume_init_drop() };
    let (bytes, _) = flash.peak();
    line(&["flash: peak="], Some(bytes as u64));
    ok && again
}

#[riscv_rt::entry]
fn main() -> ! {
    paint_stack();
    let i0 = instret();
    let ok = run_agent();
    let insns = instret().wrapping_sub(i0);
    line(&["stack: agent="], Some(stack_peak() as u64));
    line(&["instructions: agent="], Some(insns));
    line(&["agent ", if ok { "ok" } else { "FAILED" }], None);
    exit(ok)
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    put(b"panic");
    if let Some(l) = info.location() {
        put(b" at ");
        put(l.file().as_bytes());
        put(b":");
        put_u64(u64::from(l.line()));
    }
    put(b"\n");
    exit(false)
}
