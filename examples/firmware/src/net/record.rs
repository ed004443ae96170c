//! The store's items as they lie on the flash (layout 1): the map key is a path, the value a
//! kind tag and bytes. Pure data, no flash access: fuzz/fuzz_targets/firmware_store.rs reads
//! arbitrary flash through these types with sequential-storage.
//!
//! * key: one length byte, then the path's bytes (at most [`MAX_NAME`]; the empty path is the
//!   layout version item);
//! * value: the kind tag ([`FILE`], [`LINK`]: the target path, [`DIR`]: no bytes, [`VERSION`]:
//!   one byte, [`LAYOUT`]), then the bytes.

use sequential_storage::map::{Key, SerializationError, Value};

/// Longest path.
pub const MAX_NAME: usize = 64;
/// The layout of the items: version 1 (kind tags F/L/D, the version item `V`).
pub const LAYOUT: u8 = 1;

/// A file's item.
pub const FILE: u8 = b'F';
/// A symbolic link's item (its target).
pub const LINK: u8 = b'L';
/// A directory's item.
pub const DIR: u8 = b'D';
/// The layout version's item (the empty path).
pub const VERSION: u8 = b'V';

/// A map key: a path (the empty path is the layout version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathKey(pub heapless::Vec<u8, MAX_NAME>);

impl PathKey {
    /// The key of `path`; `None` when it is longer than [`MAX_NAME`].
    pub fn new(path: &str) -> Option<Self> {
        heapless::Vec::from_slice(path.as_bytes()).map(PathKey).ok()
    }

    /// The path (empty when the bytes are not UTF-8: no path the store writes).
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl Key for PathKey {
    fn serialize_into(&self, buffer: &mut [u8]) -> Result<usize, SerializationError> {
        let n = self.0.len();
        let out = buffer.get_mut(..n + 1).ok_or(SerializationError::BufferTooSmall)?;
        let (len, rest) = out.split_first_mut().ok_or(SerializationError::BufferTooSmall)?;
        // At most MAX_NAME (64): it fits the byte.
        *len = n as u8;
        rest.copy_from_slice(&self.0);
        Ok(n + 1)
    }

    fn deserialize_from(buffer: &[u8]) -> Result<(Self, usize), SerializationError> {
        let n = usize::from(*buffer.first().ok_or(SerializationError::BufferTooSmall)?);
        let bytes = buffer.get(1..n + 1).ok_or(SerializationError::BufferTooSmall)?;
        let key =
            heapless::Vec::from_slice(bytes).map_err(|_| SerializationError::InvalidFormat)?;
        Ok((PathKey(key), n + 1))
    }

    fn get_len(buffer: &[u8]) -> Result<usize, SerializationError> {
        buffer.first().map(|n| usize::from(*n) + 1).ok_or(SerializationError::BufferTooSmall)
    }
}

/// A map value: the kind tag and the bytes (a file's content, a link's target, a version).
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// [`FILE`], [`LINK`], [`DIR`] or [`VERSION`] (another tag is an unknown record).
    pub kind: u8,
    /// The bytes.
    pub data: &'a [u8],
}

impl<'a> Value<'a> for Record<'a> {
    fn serialize_into(&self, buffer: &mut [u8]) -> Result<usize, SerializationError> {
        let out =
            buffer.get_mut(..self.data.len() + 1).ok_or(SerializationError::BufferTooSmall)?;
        let (kind, rest) = out.split_first_mut().ok_or(SerializationError::BufferTooSmall)?;
        *kind = self.kind;
        rest.copy_from_slice(self.data);
        Ok(self.data.len() + 1)
    }

    fn deserialize_from(buffer: &'a [u8]) -> Result<(Self, usize), SerializationError> {
        let (kind, data) = buffer.split_first().ok_or(SerializationError::InvalidFormat)?;
        Ok((Record { kind: *kind, data }, buffer.len()))
    }
}
