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

/// Read the whole host file `path` (relative to QEMU's working directory) into `buf`.
pub fn read_file<'b>(path: &str, buf: &'b mut [u8]) -> Result<&'b [u8], HostError> {
    let mut name = [0u8; 256];
    let n = path.len();
    if n >= name.len() {
        return Err(HostError::NotFound);
    }
    name.get_mut(..n).ok_or(HostError::NotFound)?.copy_from_slice(path.as_bytes());
    // SAFETY: SYS_OPEN of a NUL-terminated name (`name[n]` is 0) of length `n`, read-only binary.
    let fd = unsafe { syscall!(OPEN, name.as_ptr(), nr::open::R_BINARY, n) };
    if fd == usize::MAX {
        return Err(HostError::NotFound);
    }
    // SAFETY: SYS_FLEN of the handle just opened.
    let len = unsafe { syscall!(FLEN, fd) };
    let r = if len == usize::MAX {
        Err(HostError::Io)
    } else if len > buf.len() {
        Err(HostError::TooLarge)
    } else {
        fill(fd, buf.get_mut(..len).unwrap_or(&mut []))
    };
    // SAFETY: SYS_CLOSE of the handle just opened.
    unsafe { syscall!(CLOSE, fd) };
    r.map(|()| &buf[..len])
}

/// Read exactly `buf.len()` bytes from the host handle `fd`.
fn fill(fd: usize, buf: &mut [u8]) -> Result<(), HostError> {
    // SAFETY: SYS_READ writes at most `buf.len()` bytes to `buf` and returns how many it did not.
    let left = unsafe { syscall!(READ, fd, buf.as_mut_ptr(), buf.len()) };
    if left == 0 { Ok(()) } else { Err(HostError::Io) }
}

/// Fill `buf` from the host's `/dev/urandom` (the seed of the device's CSPRNG).
pub fn entropy(buf: &mut [u8]) -> Result<(), HostError> {
    let name = b"/dev/urandom\0";
    // SAFETY: SYS_OPEN of a NUL-terminated name, read-only binary.
    let fd = unsafe { syscall!(OPEN, name.as_ptr(), nr::open::R_BINARY, name.len() - 1) };
    if fd == usize::MAX {
        return Err(HostError::NotFound);
    }
    let r = fill(fd, buf);
    // SAFETY: SYS_CLOSE of the handle just opened.
    unsafe { syscall!(CLOSE, fd) };
    r
}
