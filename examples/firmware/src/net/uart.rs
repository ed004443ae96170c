//! The CMSDK APB UART of the mps2-an386 board, polled: no interrupt handler runs (CMSDK receive
//! interrupts have been seen to stall under QEMU). QEMU connects it to a TCP socket on 127.0.0.1
//! (`-chardev socket`): a raw byte pipe, one byte in the receive register at a time.
//!
//! Waiting for a byte sleeps in `WFI` instead of spinning: the UART's receive interrupt and a
//! 1 ms tick of timer 1 are enabled in the NVIC but masked by PRIMASK, so they end the `WFI`
//! without a handler. QEMU then delivers the next byte at once (a spinning loop gets one byte
//! per main-loop turn, about 4 KiB/s), and under `-icount` no instruction runs while waiting.
//! The virtual time spent asleep is kept in [`waited_ticks`], so a phase's instruction count
//! leaves the waiting out.

use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{AtomicU32, Ordering};

use kubeboot_firmware::ticks;

use crate::host;

/// UART1 (UART0 is `-serial null`): `-serial null -serial chardev:<id>`.
const UART1: usize = 0x4000_5000;
const DATA: usize = 0x000;
const STATE: usize = 0x004;
const CTRL: usize = 0x008;
const BAUDDIV: usize = 0x010;
const INTSTATUS: usize = 0x00c;
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
/// Wake-ups between looks at the host clock (about 100 ms).
const WAKES_PER_CLOCK: u32 = 100;

static WAITED: AtomicU32 = AtomicU32::new(0);

/// Timer-0 ticks spent asleep waiting for bytes so far.
pub fn waited_ticks() -> u32 {
    WAITED.load(Ordering::Relaxed)
}

/// The polled UART.
pub struct Uart {
    base: usize,
}

/// No byte arrived before the deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

impl Uart {
    /// Enable UART1's transmitter and receiver (the smallest divisor QEMU accepts; it ignores the
    /// rate).
    pub fn open() -> Self {
        let u = Uart { base: UART1 };
        cortex_m::interrupt::disable();
        // SAFETY: the CMSDK UART's BAUDDIV and CTRL registers, timer 1's RELOAD, VALUE and CTRL
        // (enable, interrupt enable), and the NVIC's set-enable register for both interrupts
        // (masked by PRIMASK, set just above: they only wake `WFI`).
        unsafe {
            write_volatile((u.base + BAUDDIV) as *mut u32, 16);
            write_volatile((u.base + CTRL) as *mut u32, CTRL_TX_RX_RXINT);
            write_volatile((TIMER1 + 8) as *mut u32, TICK_RELOAD);
            write_volatile((TIMER1 + 4) as *mut u32, TICK_RELOAD);
            write_volatile(TIMER1 as *mut u32, 0b1001);
            write_volatile(NVIC_ISER0 as *mut u32, (1 << IRQ_UART1_RX) | (1 << IRQ_TIMER1));
        }
        u
    }

    /// Sleep until the host clock reaches `t` (unix seconds); bytes that arrive meanwhile stay in
    /// the receive register.
    pub fn sleep_until(&mut self, t: i64) {
        while host::now() < t {
            for _ in 0..WAKES_PER_CLOCK {
                self.sleep(false);
            }
        }
    }

    /// Sleep until the UART has received a byte (`for_byte`) or timer 1 ticks, whichever comes
    /// first.
    fn sleep(&mut self, for_byte: bool) {
        // SAFETY: clears the UART's and timer 1's interrupt flags (write 1 to clear) and both
        // pending bits in the NVIC, so that only a new event ends the `WFI`.
        unsafe {
            write_volatile((self.base + INTSTATUS) as *mut u32, 0b10);
            write_volatile((TIMER1 + 0xc) as *mut u32, 1);
            write_volatile(NVIC_ICPR0 as *mut u32, (1 << IRQ_UART1_RX) | (1 << IRQ_TIMER1));
        }
        if for_byte && self.state() & RX_FULL != 0 {
            return; // arrived in the meantime
        }
        let t0 = ticks();
        cortex_m::asm::wfi();
        WAITED.fetch_add(ticks().wrapping_sub(t0), Ordering::Relaxed);
    }

    fn state(&self) -> u32 {
        // SAFETY: reads the STATE register.
        unsafe { read_volatile((self.base + STATE) as *const u32) }
    }

    /// Send one byte (waits while the one-byte transmit register is full).
    pub fn write_byte(&mut self, b: u8) {
        while self.state() & TX_FULL != 0 {}
        // SAFETY: writes the DATA register.
        unsafe { write_volatile((self.base + DATA) as *mut u32, u32::from(b)) };
    }

    /// Send bytes.
    pub fn write_all(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_byte(*b);
        }
    }

    /// A received byte, if one is waiting.
    pub fn try_read(&mut self) -> Option<u8> {
        if self.state() & RX_FULL == 0 {
            return None;
        }
        // SAFETY: reads the DATA register (which clears RX_FULL).
        Some(unsafe { read_volatile((self.base + DATA) as *const u32) } as u8)
    }

    /// The next received byte, or [`TimedOut`] once the host clock reaches `deadline` (unix
    /// seconds).
    pub fn read_byte(&mut self, deadline: i64) -> Result<u8, TimedOut> {
        loop {
            for _ in 0..WAKES_PER_CLOCK {
                if let Some(b) = self.try_read() {
                    return Ok(b);
                }
                self.sleep(true);
            }
            if host::now() >= deadline {
                return Err(TimedOut);
            }
        }
    }
}
