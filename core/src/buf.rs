//! Buffers over caller memory: the agent's variable-size storage (certificate chains, CA bundles,
//! paths, the file-step output, the work buffer) is carved out of one block the caller owns and
//! sized ([`crate::agent::Capacities`]), so that one agent type serves a host (a `Vec`), a
//! microcontroller (a static array) and a C caller (its own memory).
//!
//! [`Bytes`] and [`Text`] are the two shapes: a byte buffer with a length, and the same holding
//! UTF-8 only. Neither ever grows past its region: an append that does not fit is
//! [`Error::TooLarge`] and leaves the content as it was.

use zeroize::Zeroize;

use crate::error::{Error, Result};

/// A byte buffer over a fixed region of caller memory: `len` bytes used.
pub(crate) struct Bytes<'m> {
    buf: &'m mut [u8],
    /// At most `buf.len()` (kept so by every method).
    len: usize,
}

impl<'m> Bytes<'m> {
    /// An empty buffer over `buf`.
    pub(crate) fn new(buf: &'m mut [u8]) -> Self {
        Bytes { buf, len: 0 }
    }

    /// The bytes in use.
    pub(crate) fn as_slice(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// The region's size.
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forget the content (the bytes stay until overwritten or wiped).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Keep the first `n` bytes (no effect if `n` is not shorter).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    /// Replace the content with `data`; [`Error::TooLarge`] (content cleared) if it does not fit.
    pub(crate) fn set(&mut self, data: &[u8]) -> Result<()> {
        self.len = 0;
        self.extend(data)
    }

    /// Append `data`; [`Error::TooLarge`] (content unchanged) if it does not fit.
    pub(crate) fn extend(&mut self, data: &[u8]) -> Result<()> {
        let end = self.len.checked_add(data.len()).ok_or(Error::TooLarge)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(Error::TooLarge)?;
        dst.copy_from_slice(data);
        self.len = end;
        Ok(())
    }

    /// Append one byte.
    pub(crate) fn push(&mut self, b: u8) -> Result<()> {
        self.extend(&[b])
    }

    /// Let `write` fill the region from its start and keep the length it returns. A short region
    /// ([`Error::BufferTooSmall`]) is [`Error::TooLarge`]; on any error the content is cleared.
    pub(crate) fn fill(&mut self, write: impl FnOnce(&mut [u8]) -> Result<usize>) -> Result<()> {
        self.len = 0;
        match write(self.buf) {
            Ok(n) if n <= self.buf.len() => {
                self.len = n;
                Ok(())
            }
            Ok(_) => Err(Error::InvalidState),
            Err(Error::BufferTooSmall { .. }) => Err(Error::TooLarge),
            Err(e) => Err(e),
        }
    }

    /// Wipe the whole region (secrets) and forget the content.
    pub(crate) fn wipe(&mut self) {
        self.buf.zeroize();
        self.len = 0;
    }
}

impl core::ops::Deref for Bytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// UTF-8 text over a fixed region of caller memory (paths, names).
pub(crate) struct Text<'m>(Bytes<'m>);

impl<'m> Text<'m> {
    /// An empty text over `buf`.
    pub(crate) fn new(buf: &'m mut [u8]) -> Self {
        Text(Bytes::new(buf))
    }

    /// The text (only whole `str`s are ever put in, so it is UTF-8).
    pub(crate) fn as_str(&self) -> &str {
        core::str::from_utf8(self.0.as_slice()).unwrap_or("")
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// The region's size.
    pub(crate) fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// Replace the text; [`Error::TooLarge`] (cleared) if it does not fit.
    pub(crate) fn set(&mut self, s: &str) -> Result<()> {
        self.0.set(s.as_bytes())
    }

    /// Append; [`Error::TooLarge`] (unchanged) if it does not fit.
    pub(crate) fn push_str(&mut self, s: &str) -> Result<()> {
        self.0.extend(s.as_bytes())
    }

    pub(crate) fn push(&mut self, c: char) -> Result<()> {
        self.push_str(c.encode_utf8(&mut [0; 4]))
    }

    /// Keep the first `n` bytes (`n` on a character boundary: paths are cut at a `/`).
    pub(crate) fn truncate(&mut self, n: usize) {
        if self.as_str().is_char_boundary(n) {
            self.0.truncate(n);
        }
    }
}

impl core::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Text<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq for Text<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl core::fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Hands out consecutive regions of one block of caller memory.
pub(crate) struct Carver<'m> {
    rest: &'m mut [u8],
}

impl<'m> Carver<'m> {
    pub(crate) fn new(mem: &'m mut [u8]) -> Self {
        Carver { rest: mem }
    }

    /// The next `n` bytes (fewer if the block is exhausted: the caller checked the size first).
    pub(crate) fn take(&mut self, n: usize) -> &'m mut [u8] {
        let rest = core::mem::take(&mut self.rest);
        let n = n.min(rest.len());
        let (head, tail) = rest.split_at_mut(n);
        self.rest = tail;
        head
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Bytes<'m> {
        Bytes::new(self.take(n))
    }

    pub(crate) fn text(&mut self, n: usize) -> Text<'m> {
        Text::new(self.take(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_never_grow_past_their_region() {
        let mut mem = [0u8; 8];
        let mut b = Bytes::new(&mut mem);
        b.set(b"abcd").unwrap();
        assert_eq!(b.extend(b"efghi"), Err(Error::TooLarge));
        assert_eq!(b.as_slice(), b"abcd");
        b.extend(b"efgh").unwrap();
        assert_eq!(b.push(b'!'), Err(Error::TooLarge));
        assert_eq!(b.set(b"123456789"), Err(Error::TooLarge));
        assert!(b.is_empty());
        assert_eq!(b.fill(|_| Err(Error::BufferTooSmall { needed: 9 })), Err(Error::TooLarge));
        b.fill(|r| {
            r[..2].copy_from_slice(b"ok");
            Ok(2)
        })
        .unwrap();
        assert_eq!(&*b, b"ok");
        b.wipe();
        assert!(b.is_empty());
        assert_eq!(mem, [0; 8]);
    }

    #[test]
    fn text_and_carving() {
        let mut mem = [0u8; 10];
        let mut c = Carver::new(&mut mem);
        let mut t = c.text(4);
        let mut rest = c.bytes(100);
        assert_eq!(rest.capacity(), 6);
        t.set("é").unwrap();
        t.push('a').unwrap();
        assert_eq!(t.push_str("bc"), Err(Error::TooLarge));
        assert_eq!(t.as_str(), "éa");
        // Never cut inside a character.
        t.truncate(1);
        assert_eq!(t.as_str(), "éa");
        t.truncate(2);
        assert_eq!(t.as_str(), "é");
        rest.set(b"xyz").unwrap();
        assert_eq!(rest.len(), 3);
    }
}
