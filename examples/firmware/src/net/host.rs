//! What the host gives the device through semihosting: the command line, the provisioning files
//! the harness wrote, entropy (the host's `/dev/urandom`) and the wall-clock time.

use kubeboot_firmware::semihosting::{nr, syscall, syscall1};

/// Why a host file could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostError {
    /// It could not be opened.
    NotFound,
    /// It is larger than the buffer.
    TooLarge,
    /// A read came back short.
    Io,
}

/// Unix seconds, from the host's clock (SYS_TIME).
pub fn now() -> i64 {
    // SAFETY: SYS_TIME takes no argument block.
    unsafe { syscall!(TIME) as i64 }
}

/// The command line QEMU passes (`-semihosting-config arg=...`), as words: QEMU joins the
/// `arg=` values with spaces.
pub fn cmdline(buf: &mut [u8]) -> &str {
    let mut block = [buf.as_mut_ptr() as usize, buf.len()];
    // SAFETY: SYS_GET_CMDLINE's parameter block is `block` itself: the host writes at most
    // `buf.len()` bytes to `buf` and their count to `block[1]`.
    let r = unsafe { syscall1!(GET_CMDLINE, block.as_mut_ptr()) };
    let len = if r == 0 { block[1].min(buf.len()) } else { 0 };
    core::str::from_utf8(buf.get(..len).unwrap_or(&[])).unwrap_or("")
}

/// How a host file is opened ([`open`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Read-only, binary ("rb").
    Read,
    /// Read and write an existing file, binary ("r+b").
    ReadWrite,
}

/// Open the host file `path` (relative to QEMU's working directory); its handle, or `None` (no
/// such file, or a name of 256 bytes or more).
pub fn open(path: &str, mode: Mode) -> Option<usize> {
    let mut name = [0u8; 256];
    let n = path.len();
    if n >= name.len() {
        return None;
    }
    name.get_mut(..n)?.copy_from_slice(path.as_bytes());
    let mode = match mode {
        Mode::Read => nr::open::R_BINARY,
        Mode::ReadWrite => nr::open::RW_BINARY,
    };
    // SAFETY: SYS_OPEN of a NUL-terminated name (`name[n]` is 0) of length `n`.
    let fd = unsafe { syscall!(OPEN, name.as_ptr(), mode, n) };
    (fd != usize::MAX).then_some(fd)
}

/// Close a handle [`open`] gave.
pub fn close(fd: usize) {
    // SAFETY: SYS_CLOSE of an open handle.
    unsafe { syscall!(CLOSE, fd) };
}

/// The length of the open file `fd`, or `None`.
pub fn len(fd: usize) -> Option<usize> {
    // SAFETY: SYS_FLEN of an open handle.
    let len = unsafe { syscall!(FLEN, fd) };
    (len != usize::MAX).then_some(len)
}

/// Move the handle `fd` to the absolute position `at`; false if the host refused.
pub fn seek(fd: usize, at: usize) -> bool {
    // SAFETY: SYS_SEEK of an open handle to an absolute position; it returns 0 on success.
    unsafe { syscall!(SEEK, fd, at) == 0 }
}

/// Read exactly `buf.len()` bytes at the handle's position; false if fewer came.
pub fn read_exact(fd: usize, buf: &mut [u8]) -> bool {
    // SAFETY: SYS_READ writes at most `buf.len()` bytes to `buf` and returns how many it did not.
    unsafe { syscall!(READ, fd, buf.as_mut_ptr(), buf.len()) == 0 }
}

/// Write all of `buf` at the handle's position; false if the host wrote less.
pub fn write_all(fd: usize, buf: &[u8]) -> bool {
    // SAFETY: SYS_WRITE reads `buf.len()` bytes from `buf` and returns how many it did not write.
    unsafe { syscall!(WRITE, fd, buf.as_ptr(), buf.len()) == 0 }
}

/// Read the whole host file `path` (relative to QEMU's working directory) into `buf`.
pub fn read_file<'b>(path: &str, buf: &'b mut [u8]) -> Result<&'b [u8], HostError> {
    let fd = open(path, Mode::Read).ok_or(HostError::NotFound)?;
    let r = match len(fd) {
        None => Err(HostError::Io),
        Some(n) if n > buf.len() => Err(HostError::TooLarge),
        Some(n) => match buf.get_mut(..n).map(|b| read_exact(fd, b)) {
            Some(true) => Ok(n),
            _ => Err(HostError::Io),
        },
    };
    close(fd);
    r.map(|n| &buf[..n])
}

/// Fill `buf` from the host's `/dev/urandom` (the seed of the device's CSPRNG).
pub fn entropy(buf: &mut [u8]) -> Result<(), HostError> {
    let fd = open("/dev/urandom", Mode::Read).ok_or(HostError::NotFound)?;
    let r = if read_exact(fd, buf) { Ok(()) } else { Err(HostError::Io) };
    close(fd);
    r
}
