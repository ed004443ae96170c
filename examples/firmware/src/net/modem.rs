//! The framed byte pipe over the UART (the host side is `e2e/uart-relay`): the device asks for a
//! connection (OPEN "host:port"), the relay opens it to 127.0.0.1 only then and says OPENED, and
//! the bytes go both ways in DATA frames until either side CLOSEs. Every frame is
//! `type, session, length (2 bytes, big endian), payload`; frames of an older session are
//! skipped, so bytes of a connection the device gave up never reach the next one.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::uart::{TimedOut, Uart};

/// When reads give up (unix seconds; u32 lasts until 2106).
static DEADLINE: AtomicU32 = AtomicU32::new(0);

/// Reads on the pipe give up at `t` (unix seconds).
pub fn set_deadline(t: i64) {
    DEADLINE.store(t.clamp(0, i64::from(u32::MAX)) as u32, Ordering::Relaxed);
}

fn deadline() -> i64 {
    i64::from(DEADLINE.load(Ordering::Relaxed))
}

const OPEN: u8 = b'O';
const DATA: u8 = b'D';
const CLOSE: u8 = b'C';
const OPENED: u8 = b'o';
const RDATA: u8 = b'd';
const CLOSED: u8 = b'c';
/// Largest payload the device puts in one DATA frame.
const MAX_FRAME: usize = 1024;

/// What went wrong with the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeError {
    /// Nothing came before the deadline.
    TimedOut,
    /// The relay closed the connection (the server closed it, the link dropped, or it could not
    /// be opened).
    Closed,
    /// No connection is open.
    NotOpen,
    /// A frame the protocol does not have.
    Garbled,
}

impl PipeError {
    /// A short name (`timed-out`, `closed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            PipeError::TimedOut => "timed-out",
            PipeError::Closed => "closed",
            PipeError::NotOpen => "not-open",
            PipeError::Garbled => "garbled",
        }
    }
}

impl core::fmt::Display for PipeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::error::Error for PipeError {}

impl embedded_io::Error for PipeError {
    fn kind(&self) -> embedded_io::ErrorKind {
        match self {
            PipeError::TimedOut => embedded_io::ErrorKind::TimedOut,
            PipeError::Closed => embedded_io::ErrorKind::ConnectionReset,
            PipeError::NotOpen => embedded_io::ErrorKind::NotConnected,
            PipeError::Garbled => embedded_io::ErrorKind::InvalidData,
        }
    }
}

impl From<TimedOut> for PipeError {
    fn from(_: TimedOut) -> Self {
        PipeError::TimedOut
    }
}

/// The pipe: one connection at a time.
pub struct Modem {
    uart: Uart,
    session: u8,
    open: bool,
    /// Bytes of the current DATA frame of our session not read yet.
    remaining: usize,
    /// Bytes of a frame left unread when its connection was given up: skipped before the next
    /// header.
    discard: usize,
    /// Bytes received and sent on the pipe (frames included).
    pub bytes_in: u32,
    /// Bytes sent.
    pub bytes_out: u32,
}

impl Modem {
    /// The pipe over UART1.
    pub fn new(uart: Uart) -> Self {
        Modem { uart, session: 0, open: false, remaining: 0, discard: 0, bytes_in: 0, bytes_out: 0 }
    }

    fn frame(&mut self, kind: u8, payload: &[u8]) {
        let len = payload.len() as u16;
        let [hi, lo] = len.to_be_bytes();
        self.uart.write_all(&[kind, self.session, hi, lo]);
        self.uart.write_all(payload);
        self.bytes_out = self.bytes_out.wrapping_add(4 + u32::from(len));
    }

    fn byte(&mut self) -> Result<u8, PipeError> {
        let b = self.uart.read_byte(deadline())?;
        self.bytes_in = self.bytes_in.wrapping_add(1);
        Ok(b)
    }

    fn skip(&mut self, mut n: usize) -> Result<(), PipeError> {
        while n > 0 {
            self.byte()?;
            n -= 1;
        }
        Ok(())
    }

    /// The next frame header (type, session, length).
    fn header(&mut self) -> Result<(u8, u8, usize), PipeError> {
        while self.discard > 0 {
            self.byte()?;
            self.discard -= 1;
        }
        let (kind, session) = (self.byte()?, self.byte()?);
        let len = usize::from(u16::from_be_bytes([self.byte()?, self.byte()?]));
        Ok((kind, session, len))
    }

    /// Open a connection to `target` (`host:port`, as the URL names it) through the relay; the
    /// previous one is closed first. [`PipeError::Closed`] if the relay could not open it.
    pub fn connect(&mut self, target: &str, deadline: i64) -> Result<(), PipeError> {
        self.close();
        self.session = self.session.wrapping_add(1);
        set_deadline(deadline);
        self.frame(OPEN, target.as_bytes());
        loop {
            let (kind, session, len) = self.header()?;
            if session != self.session {
                self.skip(len)?;
                continue;
            }
            match kind {
                OPENED => {
                    self.skip(len)?;
                    self.open = true;
                    self.remaining = 0;
                    return Ok(());
                }
                CLOSED => {
                    self.skip(len)?;
                    return Err(PipeError::Closed);
                }
                RDATA => self.skip(len)?,
                _ => return Err(PipeError::Garbled),
            }
        }
    }

    /// Close the connection (if one is open).
    pub fn close(&mut self) {
        if self.open {
            self.frame(CLOSE, &[]);
            self.open = false;
        }
        self.discard += self.remaining;
        self.remaining = 0;
    }

    /// Sleep until `t` (unix seconds), the connection closed.
    pub fn sleep_until(&mut self, t: i64) {
        self.close();
        self.uart.sleep_until(t);
    }
}

impl embedded_io::ErrorType for Modem {
    type Error = PipeError;
}

impl embedded_io::Read for Modem {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, PipeError> {
        if buf.is_empty() {
            return Ok(0);
        }
        while self.remaining == 0 {
            if !self.open {
                return Err(PipeError::NotOpen);
            }
            let (kind, session, len) = self.header()?;
            if session != self.session {
                self.skip(len)?;
                continue;
            }
            match kind {
                RDATA => self.remaining = len,
                CLOSED => {
                    self.skip(len)?;
                    self.open = false;
                    return Err(PipeError::Closed);
                }
                _ => return Err(PipeError::Garbled),
            }
        }
        let n = self.remaining.min(buf.len());
        for slot in buf.iter_mut().take(n) {
            *slot = self.byte()?;
        }
        self.remaining -= n;
        Ok(n)
    }
}

impl embedded_io::Write for Modem {
    fn write(&mut self, buf: &[u8]) -> Result<usize, PipeError> {
        if !self.open {
            return Err(PipeError::NotOpen);
        }
        let n = buf.len().min(MAX_FRAME);
        self.frame(DATA, buf.get(..n).unwrap_or(&[]));
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), PipeError> {
        Ok(())
    }
}
