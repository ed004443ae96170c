//! The RISC-V board: QEMU `virt` (riscv32imac, machine mode, one hart, riscv-rt). Exit through
//! the SiFive test device, `minstret` as the instruction counter, the NS16550A UART (the board's
//! only one) as the networked image's link, woken from `WFI` by its receive interrupt (through the
//! PLIC) and a 1 ms CLINT timer, both enabled in `mie` with `mstatus.MIE` clear: they end a `WFI`
//! without a handler (a pending, enabled interrupt wakes the hart whatever the global enable).

use core::arch::asm;
use core::ptr::{read_volatile, write_volatile};

/// Where the image is linked (examples/firmware-riscv/memory.x: DRAM).
pub const FLASH_START: usize = 0x8000_0000;
/// Where RAM begins (memory.x: the second 4 MiB of DRAM).
pub const RAM_START: usize = 0x8040_0000;

/// SiFive test device: `0x5555` ends QEMU with status 0, `(code << 16) | 0x3333` with `code`.
const TEST: usize = 0x0010_0000;

/// End the QEMU run with success (status 0) or failure (status 1).
pub fn exit(ok: bool) -> ! {
    let code: u32 = if ok { 0x5555 } else { (1 << 16) | 0x3333 };
    // SAFETY: the test device's register on QEMU virt.
    unsafe { write_volatile(TEST as *mut u32, code) };
    loop {
        // SAFETY: `wfi` only waits.
        unsafe { asm!("wfi") };
    }
}

/// The stack pointer.
#[inline(always)]
pub fn stack_pointer() -> usize {
    let sp: usize;
    // SAFETY: reads the stack pointer.
    unsafe { asm!("mv {0}, sp", out(reg) sp) };
    sp
}

// ---------------------------------------------------------------------------------------------
// Instruction counting: QEMU counts `minstret` from the virtual clock under `-icount shift=0`
// (1 ns per instruction), so, as the Cortex-M4's timer 0, it also runs while the hart sleeps in
// `WFI`: the link's waiting is measured and left out (net/uart.rs). 32 bits (wraps after 4.3 s
// of virtual time; intervals are taken modulo 2^32).

/// Instructions per tick of [`ticks`].
pub const INSNS_PER_TICK: u32 = 1;

/// Start counting from zero (`minstret` written: machine mode may).
pub fn timer_start() {
    // SAFETY: writes the machine-mode instruction counter.
    unsafe { asm!("csrw minstreth, zero", "csrw minstret, zero") };
}

/// Counter ticks (instructions) since [`timer_start`], modulo 2^32.
pub fn ticks() -> u32 {
    let n: u32;
    // SAFETY: reading a machine-mode counter has no side effect.
    unsafe { asm!("csrr {0}, minstret", out(reg) n) };
    n
}

// ---------------------------------------------------------------------------------------------
// The link: NS16550A UART0 (QEMU `-serial chardev:<id>`), polled, its 16-byte receive FIFO
// interrupting at one byte.

const UART: usize = 0x1000_0000;
const RBR_THR: usize = UART;
const IER: usize = UART + 1;
const FCR: usize = UART + 2;
const LCR: usize = UART + 3;
const LSR: usize = UART + 5;
const LSR_DR: u8 = 1 << 0;
const LSR_THRE: u8 = 1 << 5;
/// The UART's interrupt source on QEMU virt's PLIC.
const UART_IRQ: usize = 10;
const PLIC: usize = 0x0c00_0000;
/// Hart 0, machine mode: context 0.
const PLIC_ENABLE: usize = PLIC + 0x2000;
const PLIC_THRESHOLD: usize = PLIC + 0x20_0000;
const PLIC_CLAIM: usize = PLIC + 0x20_0004;
/// CLINT: hart 0's `mtimecmp` and `mtime` (10 MHz).
const MTIMECMP: usize = 0x0200_4000;
const MTIME: usize = 0x0200_BFF8;
/// The wake-up tick: 10 000 periods of the 10 MHz `mtime`, 1 ms.
const TICK: u32 = 10_000;
/// `mie`: machine external (11) and machine timer (7) interrupts.
const MIE_MEIE_MTIE: usize = (1 << 11) | (1 << 7);

/// 8N1, FIFOs on and cleared, the receive interrupt on; the PLIC routes it to hart 0 at
/// priority 1, threshold 0; `mie` takes it and the timer with `mstatus.MIE` clear.
pub fn link_open() {
    // SAFETY: the UART's, the PLIC's and the CLINT's registers on QEMU virt; `mstatus.MIE` is
    // cleared first, so no trap is ever taken for these interrupts.
    unsafe {
        asm!("csrc mstatus, {0}", in(reg) 1usize << 3);
        write_volatile(LCR as *mut u8, 0x03);
        write_volatile(FCR as *mut u8, 0x07);
        write_volatile(IER as *mut u8, 0x01);
        write_volatile((PLIC + 4 * UART_IRQ) as *mut u32, 1);
        let enable = (PLIC_ENABLE + UART_IRQ / 32 * 4) as *mut u32;
        write_volatile(enable, read_volatile(enable) | 1 << (UART_IRQ % 32));
        write_volatile(PLIC_THRESHOLD as *mut u32, 0);
        asm!("csrs mie, {0}", in(reg) MIE_MEIE_MTIE);
    }
    wake_clear();
}

fn lsr() -> u8 {
    // SAFETY: reads the line status register.
    unsafe { read_volatile(LSR as *const u8) }
}

/// Send one byte (waits while the transmit holding register is full).
pub fn link_send(b: u8) {
    while lsr() & LSR_THRE == 0 {}
    // SAFETY: writes the transmit holding register.
    unsafe { write_volatile(RBR_THR as *mut u8, b) };
}

/// Whether a received byte is waiting.
pub fn link_ready() -> bool {
    lsr() & LSR_DR != 0
}

/// A received byte, if one is waiting.
pub fn link_receive() -> Option<u8> {
    if !link_ready() {
        return None;
    }
    // SAFETY: reads the receive buffer register (the FIFO's next byte).
    Some(unsafe { read_volatile(RBR_THR as *const u8) })
}

/// Clear the wake-up sources, so that only a new event ends the next [`wait`]: the PLIC's
/// pending UART interrupt claimed and completed, the timer set 1 ms ahead.
pub fn wake_clear() {
    // SAFETY: the PLIC's claim/complete register and the CLINT's `mtime` and `mtimecmp`.
    unsafe {
        let id = read_volatile(PLIC_CLAIM as *const u32);
        if id != 0 {
            write_volatile(PLIC_CLAIM as *mut u32, id);
        }
        let (lo, hi) = loop {
            let hi = read_volatile((MTIME + 4) as *const u32);
            let lo = read_volatile(MTIME as *const u32);
            if read_volatile((MTIME + 4) as *const u32) == hi {
                break (lo, hi);
            }
        };
        let (lo, carry) = lo.overflowing_add(TICK);
        let hi = hi.wrapping_add(u32::from(carry));
        // The high word first at its largest, so no smaller comparand is ever seen.
        write_volatile((MTIMECMP + 4) as *mut u32, u32::MAX);
        write_volatile(MTIMECMP as *mut u32, lo);
        write_volatile((MTIMECMP + 4) as *mut u32, hi);
    }
}

/// Sleep until a byte arrives or the 1 ms tick (`WFI`).
pub fn wait() {
    // SAFETY: `wfi` only waits (no trap: `mstatus.MIE` is clear).
    unsafe { asm!("wfi") };
}
