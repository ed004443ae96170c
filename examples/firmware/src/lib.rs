//! What the kubeboot firmware images share: output by semihosting without formatting, stack
//! painting, and instruction counting under `-icount`, over one small board interface chosen by
//! target ([`board`]): `board/cortex_m.rs` (QEMU `mps2-an386`, Cortex-M4) and `board/riscv.rs`
//! (QEMU `virt`, riscv32imac). What differs per board lives there and nowhere else: the link UART's
//! registers and its wake-up sources, the counter, sleeping, the exit, the stack pointer and the
//! memory map. The semihosting crate is named `cortex_m_semihosting` on both (on RISC-V it is
//! riscv-semihosting under that name, the same API: examples/firmware-riscv/Cargo.toml).
//!
//! No allocator is linked and nothing formats: output is plain semihosting writes of strings and
//! decimal integers (no `core::fmt`), so the flash figures are kubeboot's, not the printer's.
#![no_std]

use core::ptr::{addr_of, read_volatile, write_volatile};
use core::sync::atomic::{AtomicUsize, Ordering};

use cortex_m_semihosting::syscall;

/// The board: what differs per target.
#[cfg_attr(target_arch = "arm", path = "board/cortex_m.rs")]
#[cfg_attr(target_arch = "riscv32", path = "board/riscv.rs")]
pub mod board;

pub use board::{INSNS_PER_TICK, exit, ticks, timer_start};
/// The semihosting crate of the target (`syscall!`, `nr`), for the host calls of the images.
pub use cortex_m_semihosting as semihosting;

// ---------------------------------------------------------------------------------------------
// Output: semihosting SYS_WRITE of bytes to the host's ":tt" (stdout); no formatting machinery.

/// The host file handle of ":tt" plus one, opened on first use (0: not yet opened; zero-initialised
/// so it lives in .bss, not in flash-backed .data).
static STDOUT: AtomicUsize = AtomicUsize::new(0);

/// Write bytes to the host's stdout (errors are ignored: there is nowhere to report them).
pub fn put(bytes: &[u8]) {
    let mut fd = STDOUT.load(Ordering::Relaxed).wrapping_sub(1);
    if fd == usize::MAX {
        // SAFETY: SYS_OPEN of the NUL-terminated ":tt" in mode 4 ("w"), as hio::hstdout does.
        fd = unsafe { syscall!(OPEN, c":tt".as_ptr(), 4, 3) };
        STDOUT.store(fd.wrapping_add(1), Ordering::Relaxed);
    }
    // SAFETY: SYS_WRITE reads `bytes.len()` bytes from `bytes`; partial writes are not retried.
    unsafe { syscall!(WRITE, fd, bytes.as_ptr(), bytes.len()) };
}

/// Write an unsigned integer in decimal (u32: division by a constant, no division routine).
pub fn put_u32(mut n: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    put(buf.get(i..).unwrap_or(b"?"));
}

/// One output line: the parts (strings), then an optional number, then a newline.
pub fn line(parts: &[&str], n: Option<u32>) {
    for p in parts {
        put(p.as_bytes());
    }
    if let Some(n) = n {
        put_u32(n);
    }
    put(b"\n");
}

// ---------------------------------------------------------------------------------------------
// Stack painting

const PAINT: u32 = 0xC0FF_EE11;
/// How much stack below the top we paint and scan (the gates are 16 KiB offline, and the
/// networked image's RAM gate is 96 KiB in all).
const PROBE: usize = 96 * 1024;

unsafe extern "C" {
    static _stack_start: u32;
    static __sheap: u32;
    static __sidata: u32;
    static __sdata: u32;
    static __edata: u32;
}

fn stack_top() -> usize {
    addr_of!(_stack_start) as usize
}

fn paint_bottom() -> usize {
    let heap = addr_of!(__sheap) as usize;
    stack_top().saturating_sub(PROBE).max(heap).next_multiple_of(4)
}

/// Paint the free stack below the current frame. Inlined into the caller, so it runs in the
/// caller's frame and only writes below the stack pointer (minus a margin for this code's own
/// spills).
#[inline(always)]
pub fn paint_stack() {
    let sp = board::stack_pointer();
    let mut p = paint_bottom();
    while p < sp - 128 {
        // SAFETY: [paint_bottom, sp - 128) is unused RAM between the statics and the live stack.
        unsafe { write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// Peak stack use: from the top of the stack down to the lowest word no longer painted.
pub fn stack_peak() -> usize {
    let mut p = paint_bottom();
    let top = stack_top();
    // SAFETY: reads of RAM in [paint_bottom, top).
    while p < top && unsafe { read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    top - p
}

/// Flash (`.vector_table` / `.init` + `.text` + `.rodata` + `.data`'s load image) and static RAM
/// (`.data` + `.bss`), from the linker symbols and the board's memory map.
pub fn image_sizes() -> (usize, usize) {
    let end =
        addr_of!(__sidata) as usize + (addr_of!(__edata) as usize - addr_of!(__sdata) as usize);
    let ram = addr_of!(__sheap) as usize - board::RAM_START;
    (end - board::FLASH_START, ram)
}

// ---------------------------------------------------------------------------------------------
// Instruction counting

/// Run `f` and return its result and how many instructions it took (counter ticks ×
/// [`INSNS_PER_TICK`], saturating at `u32::MAX`, 4.3e9 instructions).
pub fn timed<R>(f: impl FnOnce() -> R) -> (R, u32) {
    let t0 = ticks();
    let r = f();
    let t1 = ticks();
    (r, t1.wrapping_sub(t0).saturating_mul(INSNS_PER_TICK))
}
