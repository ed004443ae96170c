//! Output into caller buffers: measure first, then write, so a short buffer reports the exact
//! size needed and nothing is written.

use crate::error::{Error, Result};

/// A fixed-capacity byte buffer that carries the length of what was put into it, so that no
/// reader slices it with a length kept beside it. Its bytes are wiped by [`zeroize::Zeroize`]
/// (wrap it in [`zeroize::Zeroizing`] for secrets); `const`-constructible, so it can live in a
/// static engine.
#[derive(Clone)]
pub(crate) struct Filled<const N: usize> {
    bytes: [u8; N],
    /// At most `N` (kept so by every method).
    len: usize,
}

impl<const N: usize> Filled<N> {
    /// An empty buffer.
    pub(crate) const fn new() -> Self {
        Filled { bytes: [0; N], len: 0 }
    }

    /// Let `write` fill the buffer from its start and keep the length it returns. On an error,
    /// or a length over the capacity ([`Error::InvalidState`]: a writer bug), the buffer is left
    /// empty.
    pub(crate) fn fill(&mut self, write: impl FnOnce(&mut [u8]) -> Result<usize>) -> Result<&[u8]> {
        self.len = 0;
        let n = write(&mut self.bytes)?;
        if n > N {
            return Err(Error::InvalidState);
        }
        self.len = n;
        Ok(self.as_slice())
    }

    /// The first `len` bytes of `bytes` (all of them if `len` is larger).
    pub(crate) const fn from_array(bytes: [u8; N], len: usize) -> Self {
        Filled { bytes, len: if len < N { len } else { N } }
    }

    /// What was put in.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // `len <= N` always holds, so this is the whole written part.
        self.bytes.get(..self.len).unwrap_or(&[])
    }

    /// Forget the content (the bytes stay until overwritten or zeroized).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

impl<const N: usize> zeroize::Zeroize for Filled<N> {
    fn zeroize(&mut self) {
        self.bytes.zeroize();
        self.len = 0;
    }
}

/// Where encoders put their bytes: a counter (first pass) or a slice known to be large enough.
pub(crate) trait Sink {
    /// Append bytes.
    fn put(&mut self, bytes: &[u8]);
}

/// Counts bytes.
#[derive(Default)]
pub(crate) struct Counter(pub usize);

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) {
        self.0 = self.0.saturating_add(bytes.len());
    }
}

/// Writes into a slice that was sized by a [`Counter`] pass.
pub(crate) struct SliceSink<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Sink for SliceSink<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let end = self.pos.saturating_add(bytes.len());
        if let Some(dst) = self.buf.get_mut(self.pos..end) {
            dst.copy_from_slice(bytes);
        }
        self.pos = end;
    }
}

/// Run `emit` once to measure and once to write into `buf`; returns the length written, or
/// [`Error::BufferTooSmall`] with the exact size (and `buf` untouched).
pub(crate) fn write_measured(
    buf: &mut [u8],
    mut emit: impl FnMut(&mut dyn Sink) -> Result<()>,
) -> Result<usize> {
    let mut counter = Counter::default();
    emit(&mut counter)?;
    let needed = counter.0;
    if buf.len() < needed {
        return Err(Error::BufferTooSmall { needed });
    }
    let mut sink = SliceSink { buf, pos: 0 };
    emit(&mut sink)?;
    Ok(sink.pos)
}

/// `n` in decimal, written at the end of `buf` (`u64::MAX` has 20 digits): the crate's one decimal
/// writer. No `write!` (that links `core::fmt`'s integer formatting) and no 64-bit division (a
/// runtime routine on 32-bit targets): each digit is split off with 32-bit divisions by 10 over
/// 16-bit pieces, exact for every `u64`.
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut start = buf.len();
    for slot in buf.iter_mut().rev() {
        // n = hi * 2^32 + lo; divide hi, then the remainder with each 16-bit half of lo (every
        // partial dividend is below 10 * 2^16).
        let (hi, lo) = ((n >> 32) as u32, n as u32);
        let mid = (hi % 10) << 16 | lo >> 16;
        let low = (mid % 10) << 16 | (lo & 0xffff);
        *slot = b'0' + (low % 10) as u8;
        n = u64::from(hi / 10) << 32 | u64::from(mid / 10) << 16 | u64::from(low / 10);
        start -= 1;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    core::str::from_utf8(buf.get(start..).unwrap_or(&[])).unwrap_or("")
}

/// Write a decimal integer.
pub(crate) fn put_decimal(sink: &mut dyn Sink, v: u64) {
    sink.put(decimal(v, &mut [0; 20]).as_bytes());
}

/// Write bytes as standard base64 (with padding), streaming in 48-byte chunks.
pub(crate) fn put_base64(sink: &mut dyn Sink, data: &[u8]) {
    put_base64_parts(sink, &[data]);
}

/// Standard base64 (with padding) of the concatenation of `parts`, written in 64-character
/// pieces; no line breaks.
pub(crate) fn put_base64_parts(sink: &mut dyn Sink, parts: &[&[u8]]) {
    use base64ct::{Base64, Encoding};
    let mut out = [0u8; 64];
    let mut chunk = [0u8; 48];
    let mut filled = 0usize;
    for part in parts {
        for &b in *part {
            if let Some(slot) = chunk.get_mut(filled) {
                *slot = b;
            }
            filled += 1;
            if filled == chunk.len() {
                if let Ok(s) = Base64::encode(&chunk, &mut out) {
                    sink.put(s.as_bytes());
                }
                filled = 0;
            }
        }
    }
    if let Some(rest) = chunk.get(..filled).filter(|r| !r.is_empty()) {
        if let Ok(s) = Base64::encode(rest, &mut out) {
            sink.put(s.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_write_is_exact() {
        let mut buf = [0u8; 8];
        let err = write_measured(&mut buf[..3], |s| {
            s.put(b"hello");
            Ok(())
        })
        .unwrap_err();
        assert_eq!(err, Error::BufferTooSmall { needed: 5 });
        assert_eq!(buf, [0u8; 8]);
        let n = write_measured(&mut buf, |s| {
            s.put(b"hello");
            Ok(())
        })
        .unwrap();
        assert_eq!(&buf[..n], b"hello");
    }

    #[test]
    fn decimal_and_base64() {
        let mut buf = [0u8; 64];
        let n = write_measured(&mut buf, |s| {
            put_decimal(s, 0);
            s.put(b",");
            put_decimal(s, 18446744073709551615);
            s.put(b",");
            put_base64(s, b"hello world");
            Ok(())
        })
        .unwrap();
        assert_eq!(&buf[..n], b"0,18446744073709551615,aGVsbG8gd29ybGQ=");
    }

    #[test]
    fn base64_chunking_matches_one_shot() {
        use base64ct::{Base64, Encoding};
        let data: [u8; 200] = core::array::from_fn(|i| (i * 7) as u8);
        let mut a = [0u8; 400];
        let n = write_measured(&mut a, |s| {
            put_base64(s, &data);
            Ok(())
        })
        .unwrap();
        let mut b = [0u8; 400];
        let s = Base64::encode(&data, &mut b).unwrap();
        assert_eq!(&a[..n], s.as_bytes());
    }
}
