//! A tiny file system in RAM for the cert dir and the kubeconfigs, with the operations of the
//! agent's [`FileStep`]s: the RISC-V image's (examples/firmware-riscv includes this file). The
//! networked image keeps its files in non-volatile storage instead (`store.rs` over `nor.rs`). Files,
//! symlinks (their target in the data) and directories live in a table of entries over one
//! arena; a write appends the new bytes and then switches the entry (so a file is never
//! half-written), a removal compacts the arena. Secrets are wiped when they are overwritten or
//! removed.

use kubeboot::agent::FileStep;
use kubeboot::error::StoreErrorKind;

/// Entries (files, links, directories).
pub const MAX_ENTRIES: usize = 16;
/// Bytes of file data and link targets.
pub const ARENA: usize = 6 * 1024;
/// Longest path.
pub const MAX_NAME: usize = 64;
/// Links followed when resolving a path.
const MAX_LINKS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    Link,
    Dir,
}

struct Entry {
    kind: Kind,
    path: heapless::String<MAX_NAME>,
    start: usize,
    len: usize,
}

/// The file system.
pub struct Flash {
    entries: heapless::Vec<Entry, MAX_ENTRIES>,
    arena: [u8; ARENA],
    top: usize,
    /// The most bytes and entries ever in use.
    peak: (usize, usize),
}

type R<T> = Result<T, StoreErrorKind>;

/// The directory of an absolute path (`/a/b` → `/a`, `/a` → `/`).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => path.get(..i).unwrap_or("/"),
    }
}

impl Flash {
    /// Empty (all zero: it lives in `.bss`).
    pub const fn new() -> Self {
        Flash { entries: heapless::Vec::new(), arena: [0; ARENA], top: 0, peak: (0, 0) }
    }

    /// The most arena bytes and entries ever in use.
    pub fn peak(&self) -> (usize, usize) {
        self.peak
    }

    fn index(&self, path: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.path == path)
    }

    fn bytes(&self, i: usize) -> &[u8] {
        match self.entries.get(i) {
            Some(e) => self.arena.get(e.start..e.start + e.len).unwrap_or(&[]),
            None => &[],
        }
    }

    fn kind(&self, path: &str) -> Option<Kind> {
        self.index(path).and_then(|i| self.entries.get(i)).map(|e| e.kind)
    }

    fn is_dir(&self, path: &str) -> bool {
        path == "/" || self.kind(path) == Some(Kind::Dir)
    }

    /// Follow links from `path` to an entry that is not one.
    fn resolve(&self, path: &str) -> Option<usize> {
        let mut i = self.index(path)?;
        for _ in 0..MAX_LINKS {
            if self.entries.get(i)?.kind != Kind::Link {
                return Some(i);
            }
            let target = core::str::from_utf8(self.bytes(i)).ok()?;
            i = self.index(target)?;
        }
        None
    }

    /// Remove entry `i`: wipe its bytes and close the gap.
    fn drop_entry(&mut self, i: usize) {
        let e = self.entries.swap_remove(i);
        let (start, end) = (e.start, e.start + e.len);
        if let Some(tail) = self.arena.get_mut(start..self.top) {
            tail.copy_within(e.len..tail.len(), 0);
        }
        let new_top = self.top - e.len;
        if let Some(freed) = self.arena.get_mut(new_top..self.top) {
            freed.fill(0);
        }
        self.top = new_top;
        for other in self.entries.iter_mut() {
            if other.start >= end {
                other.start -= e.len;
            }
        }
    }

    /// Create or replace `path` with `bytes` of `kind`; its directory must exist.
    fn put(&mut self, path: &str, kind: Kind, bytes: &[u8]) -> R<()> {
        if !self.is_dir(parent(path)) {
            return Err(StoreErrorKind::NotFound);
        }
        let old = self.index(path);
        let freed = old.and_then(|i| self.entries.get(i)).map_or(0, |e| e.len);
        let room = ARENA - self.top + freed;
        let full = old.is_none() && self.entries.is_full();
        if bytes.len() > room || full {
            return Err(StoreErrorKind::Io); // no space
        }
        if let Some(i) = old {
            self.drop_entry(i);
        }
        let start = self.top;
        self.arena
            .get_mut(start..start + bytes.len())
            .ok_or(StoreErrorKind::Io)?
            .copy_from_slice(bytes);
        self.top += bytes.len();
        let path = heapless::String::try_from(path).map_err(|_| StoreErrorKind::Io)?;
        self.entries
            .push(Entry { kind, path, start, len: bytes.len() })
            .map_err(|_| StoreErrorKind::Io)?;
        self.peak = (self.peak.0.max(self.top), self.peak.1.max(self.entries.len()));
        Ok(())
    }

    /// Write a whole file (a provisioning file, or an agent's write).
    pub fn write(&mut self, path: &str, bytes: &[u8]) -> R<()> {
        if self.kind(path) == Some(Kind::Dir) {
            return Err(StoreErrorKind::Io);
        }
        self.put(path, Kind::File, bytes)
    }

    /// Create a directory (and its parents).
    pub fn mkdir(&mut self, path: &str) -> R<()> {
        if self.is_dir(path) {
            return Ok(());
        }
        if self.index(path).is_some() {
            return Err(StoreErrorKind::Io);
        }
        self.mkdir(parent(path))?;
        self.put(path, Kind::Dir, &[])
    }

    /// The agent's read: the file `path` (links followed), at most `max_len` bytes.
    pub fn read(&self, path: &str, max_len: usize) -> R<&[u8]> {
        let i = self.resolve(path).ok_or(StoreErrorKind::NotFound)?;
        if self.entries.get(i).map(|e| e.kind) != Some(Kind::File) {
            return Err(StoreErrorKind::Io);
        }
        let data = self.bytes(i);
        if data.len() > max_len {
            return Err(StoreErrorKind::FileTooLarge);
        }
        Ok(data)
    }

    fn remove(&mut self, path: &str) {
        if let Some(i) = self.index(path) {
            self.drop_entry(i);
        }
    }

    fn symlink(&mut self, path: &str, target: &str) -> R<()> {
        self.put(path, Kind::Link, target.as_bytes())
    }

    fn rename(&mut self, from: &str, to: &str) -> R<()> {
        if from == to {
            return Ok(());
        }
        self.remove(to);
        let i = self.index(from).ok_or(StoreErrorKind::NotFound)?;
        let entry = self.entries.get_mut(i).ok_or(StoreErrorKind::Io)?;
        entry.path = heapless::String::try_from(to).map_err(|_| StoreErrorKind::Io)?;
        Ok(())
    }

    /// Perform one of the agent's file steps, as [`FileStep`] specifies it.
    pub fn perform(&mut self, step: &FileStep<'_>) -> R<()> {
        match *step {
            FileStep::Recover { dir, .. } => {
                if !self.is_dir(dir) {
                    return Err(StoreErrorKind::NotFound);
                }
                let (current, updated) =
                    step.recover_paths::<MAX_NAME>().ok_or(StoreErrorKind::Io)?;
                match self.kind(&updated) {
                    Some(Kind::Link) if self.resolve(&current).is_none() => {
                        self.rename(&updated, &current)
                    }
                    Some(Kind::Link) | None => Ok(()),
                    Some(_) => Err(StoreErrorKind::UpdatedNotSymlink),
                }
            }
            FileStep::CreateDir { path } => self.mkdir(path),
            FileStep::WriteKeyCache { path, pem } => self.write(path, pem),
            FileStep::WritePair { path, content } => {
                self.write(path, content)?;
                if self.read(path, usize::MAX)? == content {
                    Ok(())
                } else {
                    Err(StoreErrorKind::ReadBackMismatch)
                }
            }
            FileStep::SwapCurrent { current, updated, target } => {
                match (self.kind(current), self.kind(updated)) {
                    (Some(Kind::File | Kind::Dir), _) => {
                        return Err(StoreErrorKind::CurrentNotSymlink);
                    }
                    (_, Some(Kind::File | Kind::Dir)) => {
                        return Err(StoreErrorKind::UpdatedNotSymlink);
                    }
                    _ => {}
                }
                self.remove(updated);
                self.symlink(updated, target)?;
                self.rename(updated, current)
            }
            FileStep::WriteKubeconfig { path, content }
            | FileStep::WriteCa { path, content }
            | FileStep::WriteBootstrapKubeconfig { path, content } => self.write(path, content),
            FileStep::RemoveKeyCache { path } => {
                self.remove(path);
                Ok(())
            }
            FileStep::PrunePairs { dir, prefix, keep } => {
                let replaced = |e: &Entry| {
                    e.kind == Kind::File
                        && e.path.as_str() != keep
                        && parent(&e.path) == dir
                        && e.path
                            .rsplit('/')
                            .next()
                            .is_some_and(|name| kubeboot::agent::is_pair_file_name(prefix, name))
                };
                while let Some(i) = self.entries.iter().position(replaced) {
                    self.drop_entry(i);
                }
                Ok(())
            }
            FileStep::RemoveDir { path } => {
                let prefix_len = path.len();
                let empty = !self.entries.iter().any(|e| {
                    e.path.len() > prefix_len
                        && e.path.starts_with(path)
                        && e.path.as_bytes().get(prefix_len) == Some(&b'/')
                });
                if empty {
                    self.remove(path);
                }
                Ok(())
            }
            _ => Err(StoreErrorKind::Io),
        }
    }
}
