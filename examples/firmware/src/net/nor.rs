//! An emulated NOR flash in a host file, through semihosting: the networked image's non-volatile
//! storage (the board, mps2-an386, has none the device could keep across QEMU runs).
//!
//! Flash semantics, enforced: the flash is [`PAGE`]-byte pages that erase to `0xFF`; a write is
//! whole [`WORD`]-byte words at word-aligned offsets and may only clear bits (a write that would
//! set a bit back to 1 is refused with [`NorError::NotErased`], as a real NOR part would leave
//! the bits as they were); every erase is counted per page, in the host file itself, so the count
//! survives the run and a power cut. Each [`NorFlash::write`] and [`NorFlash::erase`] is one
//! sequence of semihosting calls (seek, read back, write; or count, seek, write `0xFF`s), so
//! killing QEMU between two calls cuts the power at that point: a page left half-erased or a word
//! half-written is what a real cut leaves.
//!
//! The host file: `pages * PAGE` bytes of flash, then one little-endian `u32` erase count per
//! page. The harness creates it erased (`0xFF`, counts 0); its length gives the page count.
//! Nothing of the flash is mirrored in RAM: every read goes to the file.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::host;
use embedded_storage::nor_flash::{
    ErrorType, MultiwriteNorFlash, NorFlash, NorFlashError, NorFlashErrorKind, ReadNorFlash,
};

/// The erase unit (a sector of a typical SPI NOR part).
pub const PAGE: usize = 4096;
/// The write unit: aligned 4-byte words (as an STM32L4's or nRF52's internal flash: 8 and 4).
pub const WORD: usize = 4;
/// The fewest pages the store works with (the map needs two).
pub const MIN_PAGES: usize = 2;
/// The most pages (64 KiB of flash: the map's page caches in RAM are sized to it).
pub const MAX_PAGES: usize = 16;
/// Bytes copied through the stack per semihosting call (reads, the read-back of a write, erases).
const CHUNK: usize = 128;

/// Why a flash operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NorError {
    /// The host file could not be opened, or its length is not `pages * (PAGE + 4)` for a page
    /// count in `MIN_PAGES..=MAX_PAGES`.
    NoFlash,
    /// An offset or length not aligned to the operation's unit.
    NotAligned,
    /// Past the end of the flash.
    OutOfBounds,
    /// A write would set a bit that is 0 (the word was not erased first).
    NotErased,
    /// A semihosting call failed (the host file is gone or short).
    Io,
}

impl NorError {
    /// The reason's name, as the device prints it.
    pub fn name(self) -> &'static str {
        match self {
            NorError::NoFlash => "no-flash",
            NorError::NotAligned => "not-aligned",
            NorError::OutOfBounds => "out-of-bounds",
            NorError::NotErased => "not-erased",
            NorError::Io => "io",
        }
    }
}

impl NorFlashError for NorError {
    fn kind(&self) -> NorFlashErrorKind {
        match self {
            NorError::NotAligned => NorFlashErrorKind::NotAligned,
            NorError::OutOfBounds => NorFlashErrorKind::OutOfBounds,
            _ => NorFlashErrorKind::Other,
        }
    }
}

/// Erases done by this run (every handle).
static ERASES: AtomicU32 = AtomicU32::new(0);

/// The page of the last write refused as [`NorError::NotErased`], plus one (0: none).
static NOT_ERASED: AtomicU32 = AtomicU32::new(0);

/// The page of the last write refused because its bits were not erased (and forget it).
pub fn take_not_erased() -> Option<usize> {
    (NOT_ERASED.swap(0, Ordering::Relaxed) as usize).checked_sub(1)
}

/// Erases done by this run.
pub fn erases() -> u32 {
    ERASES.load(Ordering::Relaxed)
}

/// The flash: a host file handle and its page count. A copy is another handle on the same flash
/// (the store keeps one, its figures read through another).
#[derive(Clone, Copy)]
pub struct HostNor {
    fd: usize,
    pages: usize,
}

/// Read exactly `buf.len()` bytes at `at`.
fn read_at(fd: usize, at: usize, buf: &mut [u8]) -> Result<(), NorError> {
    if host::seek(fd, at) && host::read_exact(fd, buf) { Ok(()) } else { Err(NorError::Io) }
}

/// Write all of `buf` at `at`.
fn write_at(fd: usize, at: usize, buf: &[u8]) -> Result<(), NorError> {
    if host::seek(fd, at) && host::write_all(fd, buf) { Ok(()) } else { Err(NorError::Io) }
}

impl HostNor {
    /// Open the host file `path` read-write (it must exist: the harness makes it).
    pub fn open(path: &str) -> Result<Self, NorError> {
        let fd = host::open(path, host::Mode::ReadWrite).ok_or(NorError::NoFlash)?;
        let len = host::len(fd).unwrap_or(0);
        let pages = len / (PAGE + 4);
        if !len.is_multiple_of(PAGE + 4) || !(MIN_PAGES..=MAX_PAGES).contains(&pages) {
            host::close(fd);
            return Err(NorError::NoFlash);
        }
        Ok(HostNor { fd, pages })
    }

    /// The page count.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Page `page`'s erase count, as the file keeps it (every run's erases).
    pub fn erase_count(&self, page: usize) -> Result<u32, NorError> {
        let mut word = [0u8; 4];
        read_at(self.fd, self.pages * PAGE + page * 4, &mut word)?;
        Ok(u32::from_le_bytes(word))
    }

    /// Whether the first and the last word of page `page` read `0xFF` (where a store keeps its
    /// page's state: both erased is a page it takes as empty).
    pub fn page_marks_erased(&self, page: usize) -> Result<bool, NorError> {
        let (mut first, mut last) = ([0u8; WORD], [0u8; WORD]);
        read_at(self.fd, page * PAGE, &mut first)?;
        read_at(self.fd, (page + 1) * PAGE - WORD, &mut last)?;
        Ok(first.iter().chain(&last).all(|b| *b == 0xFF))
    }

    /// Erase page `page` (a page the store takes as empty that still holds old bits).
    pub fn erase_page(&mut self, page: usize) -> Result<(), NorError> {
        let from = (page * PAGE) as u32;
        NorFlash::erase(self, from, from + PAGE as u32)
    }

    /// Whether page `page` reads all `0xFF` (erased, nothing written since).
    pub fn page_erased(&self, page: usize) -> Result<bool, NorError> {
        let mut buf = [0u8; CHUNK];
        for at in (page * PAGE..(page + 1) * PAGE).step_by(CHUNK) {
            read_at(self.fd, at, &mut buf)?;
            if buf.iter().any(|b| *b != 0xFF) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn check(&self, offset: u32, len: usize, unit: usize) -> Result<usize, NorError> {
        let at = offset as usize;
        if !at.is_multiple_of(unit) || !len.is_multiple_of(unit) {
            return Err(NorError::NotAligned);
        }
        if at.checked_add(len).is_none_or(|end| end > self.pages * PAGE) {
            return Err(NorError::OutOfBounds);
        }
        Ok(at)
    }
}

impl ErrorType for HostNor {
    type Error = NorError;
}

impl ReadNorFlash for HostNor {
    const READ_SIZE: usize = 1;

    fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), NorError> {
        let at = self.check(offset, bytes.len(), 1)?;
        read_at(self.fd, at, bytes)
    }

    fn capacity(&self) -> usize {
        self.pages * PAGE
    }
}

impl NorFlash for HostNor {
    const WRITE_SIZE: usize = WORD;
    const ERASE_SIZE: usize = PAGE;

    /// Erase the pages of `from..to`: count each erase first (a cut during the erase still
    /// counts it), then write `0xFF` over the page in [`CHUNK`]-byte calls.
    fn erase(&mut self, from: u32, to: u32) -> Result<(), NorError> {
        let len = (to as usize).checked_sub(from as usize).ok_or(NorError::OutOfBounds)?;
        let start = self.check(from, len, PAGE)?;
        let ones = [0xFFu8; CHUNK];
        for page in (start / PAGE)..((start + len) / PAGE) {
            let count = self.erase_count(page)?.saturating_add(1);
            write_at(self.fd, self.pages * PAGE + page * 4, &count.to_le_bytes())?;
            ERASES.fetch_add(1, Ordering::Relaxed);
            for at in (page * PAGE..(page + 1) * PAGE).step_by(CHUNK) {
                write_at(self.fd, at, &ones)?;
            }
        }
        Ok(())
    }

    /// Write whole words that may only clear bits: read the old words back, refuse the write if
    /// any bit would go from 0 to 1, else write.
    fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), NorError> {
        let at = self.check(offset, bytes.len(), WORD)?;
        let mut old = [0u8; CHUNK];
        let checked = bytes.chunks(CHUNK).enumerate().try_for_each(|(i, new)| {
            let old = old.get_mut(..new.len()).ok_or(NorError::Io)?;
            read_at(self.fd, at + i * CHUNK, old)?;
            if old.iter().zip(new).any(|(o, n)| o & n != *n) {
                NOT_ERASED.store(((at + i * CHUNK) / PAGE + 1) as u32, Ordering::Relaxed);
                return Err(NorError::NotErased);
            }
            Ok(())
        });
        // The old bits may be a removed item's (a key): wiped either way.
        old.fill(0);
        checked?;
        write_at(self.fd, at, bytes)
    }
}

/// A NOR word may be written more than once while it only clears bits (checked by `write`): the
/// store marks items removed that way.
impl MultiwriteNorFlash for HostNor {}

/// The same flash behind `embedded-storage-async`'s traits, for `sequential-storage`: the host
/// file is synchronous, so every future is ready at its first poll.
pub mod asynch {
    use super::{HostNor, NorError};
    use embedded_storage::nor_flash as b;
    use embedded_storage_async::nor_flash as a;

    impl a::ReadNorFlash for HostNor {
        const READ_SIZE: usize = <HostNor as b::ReadNorFlash>::READ_SIZE;

        async fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), NorError> {
            b::ReadNorFlash::read(self, offset, bytes)
        }

        fn capacity(&self) -> usize {
            b::ReadNorFlash::capacity(self)
        }
    }

    impl a::NorFlash for HostNor {
        const WRITE_SIZE: usize = <HostNor as b::NorFlash>::WRITE_SIZE;
        const ERASE_SIZE: usize = <HostNor as b::NorFlash>::ERASE_SIZE;

        async fn erase(&mut self, from: u32, to: u32) -> Result<(), NorError> {
            b::NorFlash::erase(self, from, to)
        }

        async fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), NorError> {
            b::NorFlash::write(self, offset, bytes)
        }
    }

    impl a::MultiwriteNorFlash for HostNor {}
}
