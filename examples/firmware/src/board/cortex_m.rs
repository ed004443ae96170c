//! The Cortex-M4 board: QEMU `mps2-an386` (AN386). Exit by semihosting, the CMSDK APB timer 0 as
//! the instruction counter, the CMSDK APB UART1 as the networked image's link (polled, woken from
//! `WFI` by its receive interrupt and timer 1, masked by PRIMASK).

use core::ptr::{read_volatile, write_volatile};

use cortex_m_semihosting::debug;

/// Where the image is linked (memory.x: `mps.ssram1`).
pub const FLASH_START: usize = 0x0000_0000;
/// Where RAM begins (memory.x: `mps.ssram23`).
pub const RAM_START: usize = 0x2000_0000;

/// End the QEMU run with success or failure.
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}

/// The stack pointer (MSP: the images run in thread mode on the main stack).
#[inline(always)]
pub fn stack_pointer() -> usize {
    cortex_m::register::msp::read() as usize
}

// ---------------------------------------------------------------------------------------------
// Instruction counting
//
// QEMU 7.2 does not emulate the DWT cycle counter (CYCCNT stays 0; probed and printed by the
// offline image). Under `-icount shift=0` the virtual clock advances exactly 1 ns per
// instruction, and the CMSDK APB timer 0 of the mps2 board counts down at the 25 MHz peripheral
// clock of that virtual clock: one tick = 40 instructions, 32 bits wide (no wrap for 171 s of
// virtual time). The run script checks the calibration (a 1 000 000-iteration loop = 50 000
// ticks).

const TIMER0: usize = 0x4000_0000;
/// Instructions per timer tick under `-icount shift=0` (1 ns per instruction, 25 MHz).
pub const INSNS_PER_TICK: u32 = 40;

/// Start timer 0 counting down from its maximum.
pub fn timer_start() {
    // SAFETY: the CMSDK APB timer 0 registers (CTRL, VALUE, RELOAD) of the mps2-an386 board.
    unsafe {
        write_volatile((TIMER0 + 8) as *mut u32, u32::MAX);
        write_volatile((TIMER0 + 4) as *mut u32, u32::MAX);
        write_volatile(TIMER0 as *mut u32, 1);
    }
}

/// Timer ticks since [`timer_start`].
pub fn ticks() -> u32 {
    // SAFETY: reads the VALUE register of timer 0 (a down counter).
    u32::MAX - unsafe { read_volatile((TIMER0 + 4) as *const u32) }
}

// ---------------------------------------------------------------------------------------------
// The link: the CMSDK APB UART1 (UART0 is `-serial null`: `-serial null -serial chardev:<id>`),
// polled (CMSDK receive interrupts have been seen to stall under QEMU). Its receive interrupt and
// a 1 ms tick of timer 1 are enabled in the NVIC but masked by PRIMASK, so they end a `WFI`
// without a handler.

const UART1: usize = 0x4000_5000;
const DATA: usize = UART1;
const STATE: usize = UART1 + 0x004;
const CTRL: usize = UART1 + 0x008;
const INTSTATUS: usize = UART1 + 0x00c;
const BAUDDIV: usize = UART1 + 0x010;
const TX_FULL: u32 = 1 << 0;
const RX_FULL: u32 = 1 << 1;
/// CTRL: transmitter, receiver, receive interrupt.
const CTRL_TX_RX_RXINT: u32 = 0b1011;
/// UART1's receive interrupt (AN385/AN386: UARTs 0, 1, 2 at 0, 2, 4; TX one above).
const IRQ_UART1_RX: u32 = 2;
/// Timer 1 (CMSDK APB timer at 0x40001000).
const TIMER1: usize = 0x4000_1000;
const IRQ_TIMER1: u32 = 9;
/// Timer 1 reload: 25 000 ticks of the 25 MHz peripheral clock, 1 ms.
const TICK_RELOAD: u32 = 25_000;
const NVIC_ISER0: usize = 0xE000_E100;
const NVIC_ICPR0: usize = 0xE000_E280;

/// Enable UART1's transmitter and receiver (the smallest divisor QEMU accepts; it ignores the
/// rate) and the two wake-up sources, masked.
pub fn link_open() {
    cortex_m::interrupt::disable();
    // SAFETY: the CMSDK UART's BAUDDIV and CTRL registers, timer 1's RELOAD, VALUE and CTRL
    // (enable, interrupt enable), and the NVIC's set-enable register for both interrupts
    // (masked by PRIMASK, set just above: they only wake `WFI`).
    unsafe {
        write_volatile(BAUDDIV as *mut u32, 16);
        write_volatile(CTRL as *mut u32, CTRL_TX_RX_RXINT);
        write_volatile((TIMER1 + 8) as *mut u32, TICK_RELOAD);
        write_volatile((TIMER1 + 4) as *mut u32, TICK_RELOAD);
        write_volatile(TIMER1 as *mut u32, 0b1001);
        write_volatile(NVIC_ISER0 as *mut u32, (1 << IRQ_UART1_RX) | (1 << IRQ_TIMER1));
    }
}

fn state() -> u32 {
    // SAFETY: reads the STATE register.
    unsafe { read_volatile(STATE as *const u32) }
}

/// Send one byte (waits while the one-byte transmit register is full).
pub fn link_send(b: u8) {
    while state() & TX_FULL != 0 {}
    // SAFETY: writes the DATA register.
    unsafe { write_volatile(DATA as *mut u32, u32::from(b)) };
}

/// Whether a received byte is waiting.
pub fn link_ready() -> bool {
    state() & RX_FULL != 0
}

/// A received byte, if one is waiting.
pub fn link_receive() -> Option<u8> {
    if !link_ready() {
        return None;
    }
    // SAFETY: reads the DATA register (which clears RX_FULL).
    Some(unsafe { read_volatile(DATA as *const u32) } as u8)
}

/// Clear the wake-up sources (the UART's and timer 1's interrupt flags, write 1 to clear, and
/// both pending bits in the NVIC), so that only a new event ends the next [`wait`].
pub fn wake_clear() {
    // SAFETY: the interrupt-clear registers named above.
    unsafe {
        write_volatile(INTSTATUS as *mut u32, 0b10);
        write_volatile((TIMER1 + 0xc) as *mut u32, 1);
        write_volatile(NVIC_ICPR0 as *mut u32, (1 << IRQ_UART1_RX) | (1 << IRQ_TIMER1));
    }
}

/// Sleep until a byte arrives or the 1 ms tick (`WFI`).
pub fn wait() {
    cortex_m::asm::wfi();
}
