//! The link UART, polled: no interrupt handler runs. QEMU connects it to a TCP socket on
//! 127.0.0.1 (`-chardev socket`): a raw byte pipe. Its registers and wake-up sources are the
//! board's (`kubeboot_firmware::board`: the CMSDK APB UART1 of `mps2-an386`, the NS16550A of
//! RISC-V `virt`).
//!
//! Waiting for a byte sleeps in `WFI` instead of spinning: the UART's receive interrupt and a
//! 1 ms tick are enabled but masked, so they end the `WFI` without a handler. QEMU then delivers
//! the next byte at once (a spinning loop gets one byte per main-loop turn, about 4 KiB/s), and
//! under `-icount` no instruction runs while waiting. The virtual time spent asleep is kept in
//! [`waited_ticks`], so a phase's instruction count leaves the waiting out.

use core::sync::atomic::{AtomicU32, Ordering};

use kubeboot_firmware::{board, ticks};

use crate::host;

/// Wake-ups between looks at the host clock (about 100 ms).
const WAKES_PER_CLOCK: u32 = 100;

static WAITED: AtomicU32 = AtomicU32::new(0);

/// Counter ticks spent asleep waiting for bytes so far.
pub fn waited_ticks() -> u32 {
    WAITED.load(Ordering::Relaxed)
}

/// The polled UART.
pub struct Uart(());

/// No byte arrived before the deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

impl Uart {
    /// Enable the board's link UART and its wake-up sources.
    pub fn open() -> Self {
        board::link_open();
        Uart(())
    }

    /// Sleep until the host clock reaches `t` (unix seconds); bytes that arrive meanwhile stay in
    /// the receiver.
    pub fn sleep_until(&mut self, t: i64) {
        while host::now() < t {
            for _ in 0..WAKES_PER_CLOCK {
                self.sleep(false);
            }
        }
    }

    /// Sleep until the UART has received a byte (`for_byte`) or the tick, whichever comes first.
    fn sleep(&mut self, for_byte: bool) {
        board::wake_clear();
        if for_byte && board::link_ready() {
            return; // arrived in the meantime
        }
        let t0 = ticks();
        board::wait();
        WAITED.fetch_add(ticks().wrapping_sub(t0), Ordering::Relaxed);
    }

    /// Send one byte (waits while the transmitter is full).
    pub fn write_byte(&mut self, b: u8) {
        board::link_send(b);
    }

    /// Send bytes.
    pub fn write_all(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_byte(*b);
        }
    }

    /// A received byte, if one is waiting.
    pub fn try_read(&mut self) -> Option<u8> {
        board::link_receive()
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
