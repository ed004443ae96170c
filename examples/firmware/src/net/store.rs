//! The networked image's files in non-volatile storage: `sequential-storage`'s map (power-fail
//! safe, CRC-checked items, pages used in turn) over the emulated NOR flash of [`crate::nor`], with
//! the operations of the agent's [`FileStep`]s.
//!
//! One map item per path, keyed by the path: a file's bytes, a symlink's target or a directory,
//! each behind a kind tag (a directory whose item was lost with a corrupted page still exists
//! while paths under it do). Storing an item is atomic with respect to a power cut (the map finds
//! either the old value or the new one), so a file is never half-written and the
//! `-current.pem` symlink switches in one item write. A removal marks the path's items erased;
//! the map reclaims their pages when it needs room. The store carries its layout version as the
//! item of the empty path (no path is empty): a store of an older layout is a typed reason and is
//! erased (its records do not read), one of a newer layout is refused untouched.
//!
//! RAM: one item buffer, sized to the largest item the agent writes (`CAPS.file` bytes and its
//! path), wiped after every operation (the node key passes through it); nothing of the flash is
//! cached.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use kubeboot::agent::FileStep;
use kubeboot::error::StoreErrorKind;
use kubeboot_firmware::line;
use sequential_storage::Error;
use sequential_storage::cache::Cache;
use sequential_storage::cache::key_pointers::ArrayKeyPointers;
use sequential_storage::cache::page_pointers::ArrayPagePointers;
use sequential_storage::cache::page_states::ArrayPageStates;
use sequential_storage::map::{MapConfig, MapStorage};

use crate::nor::{self, HostNor, NorError, PAGE, WORD};
use crate::record::{DIR, FILE, LAYOUT, LINK, MAX_NAME, PathKey, Record, VERSION};

/// The largest file the store keeps: the most a file step of the agent writes
/// (`Capacities::file`); provisioning files are held to it too.
pub const MAX_FILE: usize = crate::CAPS.file;
/// The item buffer: a key (length byte + path), the kind tag and the largest file, in words.
pub const ITEM: usize = (1 + MAX_NAME + 1 + MAX_FILE).next_multiple_of(WORD);
/// Links followed when resolving a path.
const MAX_LINKS: usize = 4;
/// The most paths one listing collects (a cert dir holds a handful).
const MAX_LIST: usize = 24;

/// Why the store could not do something (printed as `reason=<name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The flash refused or failed (see [`NorError`]).
    Flash(NorError),
    /// No room left for the item, even after reclaiming erased items.
    Full,
    /// The map found its pages inconsistent and its repair did not help.
    Corrupted,
    /// An item larger than the buffer or a page.
    TooBig,
    /// A path longer than [`MAX_NAME`].
    Name,
    /// A record with a kind tag this layout does not have.
    UnknownRecord,
    /// A store future was not ready at its first poll (the flash is synchronous: never).
    Pending,
    /// Any other error of the map.
    Other,
}

impl Fault {
    /// The reason's name.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Flash(e) => e.name(),
            Fault::Full => "full",
            Fault::Corrupted => "corrupted",
            Fault::TooBig => "item-too-big",
            Fault::Name => "path-too-long",
            Fault::UnknownRecord => "record-unknown",
            Fault::Pending => "pending",
            Fault::Other => "store-error",
        }
    }
}

impl From<Error<NorError>> for Fault {
    fn from(e: Error<NorError>) -> Self {
        match e {
            Error::Storage { value, .. } => Fault::Flash(value),
            Error::FullStorage => Fault::Full,
            Error::Corrupted { .. } => Fault::Corrupted,
            Error::ItemTooBig | Error::BufferTooSmall(_) | Error::BufferTooBig => Fault::TooBig,
            _ => Fault::Other,
        }
    }
}

/// Run a store future to its end: the flash never makes it wait, so one poll with a no-op waker
/// finishes it (a future that is not ready is [`Fault::Pending`], never a spin).
fn block_on<T>(f: impl Future<Output = Result<T, Error<NorError>>>) -> Result<T, Fault> {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(r) => r.map_err(Fault::from),
        Poll::Pending => Err(Fault::Pending),
    }
}

/// What the layout check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Erased flash: the version item was written.
    Fresh,
    /// This layout.
    Current,
    /// Records without the version item (lost with a corrupted page): it was written again.
    Lost,
    /// Records of an older layout.
    Older(u8),
    /// A newer layout (a later firmware's): not touched.
    Newer(u8),
}

/// The figures of the store (printed at the end of a run).
#[derive(Clone, Copy, Debug, Default)]
pub struct Figures {
    /// Live paths (the version item included).
    pub items: u32,
    /// Their bytes (keys and values).
    pub bytes: u32,
    /// Pages not erased.
    pub pages_used: u32,
    /// Erases of every page over the flash's life (the file's counters).
    pub erases_total: u32,
    /// The most erases of one page.
    pub erases_max: u32,
}

/// Paths whose item addresses the map remembers (a cert dir, its kubeconfigs and the layout item
/// are about 14): a lookup then reads its item alone instead of every item before it, each
/// CRC-checked.
const KEY_POINTERS: usize = 16;
/// The map's caches in RAM (page states, page pointers, key pointers): rebuilt from the flash at
/// every start, and thrown away whenever the flash changes behind the map ([`Store::remap`]).
type StoreCache = Cache<
    ArrayPageStates<{ nor::MAX_PAGES }>,
    ArrayPagePointers<{ nor::MAX_PAGES }>,
    ArrayKeyPointers<PathKey, KEY_POINTERS>,
    PathKey,
>;
type Map = MapStorage<PathKey, HostNor, StoreCache>;

/// Empty caches.
fn cache() -> StoreCache {
    Cache::new(ArrayPageStates::new(), ArrayPagePointers::new(), ArrayKeyPointers::new())
}
type R<T> = Result<T, StoreErrorKind>;

/// The store.
pub struct Store {
    map: Map,
    /// The flash again, for the figures.
    nor: HostNor,
    buf: [u8; ITEM],
    /// The largest item stored by this run (key + value, bytes).
    largest: usize,
    /// Items stored by this run.
    stores: u32,
}

/// The directory of an absolute path (`/a/b` → `/a`, `/a` → `/`).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => path.get(..i).unwrap_or("/"),
    }
}

/// Print a store failure and give the agent the store error it understands.
fn report(op: &str, path: &str, f: Fault) -> StoreErrorKind {
    line(&["store: ", op, " failed reason=", f.name(), " path=", path], None);
    StoreErrorKind::Io
}

impl Store {
    /// The store over `nor` (its whole range).
    pub fn new(nor: HostNor) -> Result<Self, Fault> {
        let end = (nor.pages() * PAGE) as u32;
        let config = MapConfig::try_new(0..end).map_err(|_| Fault::Flash(NorError::NoFlash))?;
        let map = MapStorage::new(nor, config, cache());
        Ok(Store { map, nor, buf: [0; ITEM], largest: 0, stores: 0 })
    }

    /// The map again with empty caches, after the flash changed behind it (a page erased here,
    /// the whole store erased): its cached states and addresses no longer hold.
    fn remap(&mut self) {
        // The range was accepted when the store was made, so it is accepted again.
        if let Ok(config) = MapConfig::try_new(self.map.flash_range()) {
            self.map = MapStorage::new(self.nor, config, cache());
        }
    }

    /// The largest item stored by this run, and how many items it stored.
    pub fn written(&self) -> (usize, u32) {
        (self.largest, self.stores)
    }

    /// The record of `path` (its data borrows the item buffer), or `None`.
    fn fetch(&mut self, path: &str) -> Result<Option<Record<'_>>, Fault> {
        let key = PathKey::new(path).ok_or(Fault::Name)?;
        block_on(self.map.fetch_item::<Record<'_>>(&mut self.buf, &key))
    }

    fn kind(&mut self, path: &str) -> Result<Option<u8>, Fault> {
        if path == "/" {
            return Ok(Some(DIR));
        }
        let kind = self.fetch(path)?.map(|r| r.kind);
        self.buf.fill(0);
        match kind {
            Some(FILE | LINK | DIR) | None => Ok(kind),
            Some(_) => Err(Fault::UnknownRecord),
        }
    }

    /// Store `bytes` of `kind` at `path` (one item: atomic), then wipe the buffer.
    ///
    /// A write refused because its bits were not erased fell where the map takes the page as
    /// free but old bits remain: an erase cut short (the emulated flash erases a page from its
    /// start, so a page the map had half-filled reads as free up to the old bits), or bits the
    /// flash lost. The map cannot see it (its repair re-erases only pages whose state words
    /// disagree), and every later write there would fail: the page is erased — with the items
    /// the map had in it, when its state word says it had any (printed) — and the item stored
    /// again, once.
    fn put_item(&mut self, path: &str, kind: u8, bytes: &[u8]) -> Result<(), Fault> {
        let key = PathKey::new(path).ok_or(Fault::Name)?;
        let record = Record { kind, data: bytes };
        let mut r = block_on(self.map.store_item(&mut self.buf, &key, &record));
        if let (Err(Fault::Flash(NorError::NotErased)), Some(page)) = (r, nor::take_not_erased()) {
            let empty = self.nor.page_marks_erased(page) == Ok(true);
            line(
                &[
                    "store: reason=not-erased: old bits in free space, erasing the page",
                    if empty { " (empty)" } else { " (its items are lost)" },
                    " page=",
                ],
                Some(page as u32),
            );
            let erased = self.nor.erase_page(page).map_err(Fault::Flash);
            self.remap();
            r = erased.and_then(|()| block_on(self.map.store_item(&mut self.buf, &key, &record)));
        }
        self.buf.fill(0);
        r
    }

    /// Store `bytes` of `kind` at `path` ([`Store::put_item`]), and count it.
    ///
    /// When the map finds its pages inconsistent and its own repair does not help, it can store
    /// nothing more: every later start would fail the same way (and erase a page each time,
    /// for nothing). The store then starts over: every page erased, the layout item, this item
    /// again; the files it held are lost (the line says so), the agent goes on from what it
    /// holds, and a start that finds no usable credentials bootstraps.
    fn put(&mut self, path: &str, kind: u8, bytes: &[u8]) -> Result<(), Fault> {
        let mut r = self.put_item(path, kind, bytes);
        if r == Err(Fault::Corrupted) {
            line(
                &[
                    "store: reason=corrupted: the map cannot store; erasing the store (its files are lost) pages=",
                ],
                Some(self.nor.pages() as u32),
            );
            r = self.erase_all().and_then(|()| self.put_item(path, kind, bytes));
        }
        r?;
        self.largest = self.largest.max(1 + path.len() + 1 + bytes.len());
        self.stores += 1;
        Ok(())
    }

    /// Remove `path`'s items (nothing is written when it has none).
    fn remove(&mut self, path: &str) -> Result<(), Fault> {
        if self.kind(path)?.is_none() {
            return Ok(());
        }
        let key = PathKey::new(path).ok_or(Fault::Name)?;
        let r = block_on(self.map.remove_item(&mut self.buf, &key));
        self.buf.fill(0);
        r
    }

    /// Check the layout version: write it on erased flash; see [`Layout`].
    #[inline(never)] // the store's futures stay out of the caller's frame
    pub fn layout(&mut self) -> Result<Layout, Fault> {
        let found = match self.fetch("")? {
            Some(Record { kind: VERSION, data: [v] }) => Some(*v),
            Some(_) => Some(0),
            None => None,
        };
        match found {
            Some(LAYOUT) => Ok(Layout::Current),
            Some(v) if v > LAYOUT => Ok(Layout::Newer(v)),
            Some(v) => Ok(Layout::Older(v)),
            None if self.any_item()? => {
                // Layout 1 is the first: every store with items has the version item, unless
                // the item was lost (a corrupted page). The other records are this layout's.
                self.put("", VERSION, &[LAYOUT])?;
                Ok(Layout::Lost)
            }
            None => {
                self.put("", VERSION, &[LAYOUT])?;
                Ok(Layout::Fresh)
            }
        }
    }

    /// Write the layout version item `v` (the maintenance command `nv-layout`).
    pub fn set_layout(&mut self, v: u8) -> Result<(), Fault> {
        self.put("", VERSION, &[v])
    }

    /// Erase every page (a store whose records cannot be read), then write the layout version.
    pub fn erase_all(&mut self) -> Result<(), Fault> {
        let r = block_on(self.map.erase_all());
        self.remap();
        r?;
        self.put_item("", VERSION, &[LAYOUT])
    }

    fn any_item(&mut self) -> Result<bool, Fault> {
        let mut iter = block_on(self.map.fetch_all_items(&mut self.buf))?;
        let first = block_on(iter.next::<Record<'_>>(&mut self.buf))?.is_some();
        self.buf.fill(0);
        Ok(first)
    }

    /// The live paths under `dir` (`dir` itself excluded) that `keep` accepts, at most
    /// [`MAX_LIST`] (the rest are left for a later call).
    fn list(
        &mut self,
        dir: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<heapless::Vec<PathKey, MAX_LIST>, Fault> {
        let mut found = heapless::Vec::<PathKey, MAX_LIST>::new();
        let mut iter = block_on(self.map.fetch_all_items(&mut self.buf))?;
        while let Some((key, _)) = block_on(iter.next::<Record<'_>>(&mut self.buf))? {
            let p = key.as_str();
            let under = (dir.is_empty() && !p.is_empty())
                || (p.len() > dir.len()
                    && p.starts_with(dir)
                    && (dir == "/" || p.as_bytes().get(dir.len()) == Some(&b'/')));
            if under && keep(p) && !found.contains(&key) && found.push(key).is_err() {
                break;
            }
        }
        self.buf.fill(0);
        // The iteration also yields superseded and removed items' keys: keep the live ones.
        let mut live = heapless::Vec::new();
        for key in found {
            if self.kind(key.as_str())?.is_some() {
                let _ = live.push(key);
            }
        }
        Ok(live)
    }

    /// The store's figures: live items and bytes, pages in use, erases.
    #[inline(never)] // the store's futures stay out of the caller's frame
    pub fn figures(&mut self) -> Result<Figures, Fault> {
        let mut f = Figures::default();
        let paths = self.list("", |_| true)?;
        for key in paths.iter().chain(core::iter::once(&PathKey(heapless::Vec::new()))) {
            let len = self.fetch(key.as_str())?.map(|r| r.data.len() + 1);
            self.buf.fill(0);
            if let Some(len) = len {
                f.items += 1;
                f.bytes += (len + 1 + key.0.len()) as u32;
            }
        }
        for page in 0..self.nor.pages() {
            if !self.nor.page_erased(page).map_err(Fault::Flash)? {
                f.pages_used += 1;
            }
            let n = self.nor.erase_count(page).map_err(Fault::Flash)?;
            f.erases_total = f.erases_total.saturating_add(n);
            f.erases_max = f.erases_max.max(n);
        }
        Ok(f)
    }

    /// Whether `path` is a directory: its directory item, or (that item lost with a corrupted
    /// page) a live path under it.
    fn is_dir(&mut self, path: &str) -> Result<bool, Fault> {
        match self.kind(path)? {
            Some(DIR) => Ok(true),
            Some(_) => Ok(false),
            None => Ok(!self.list(path, |_| true)?.is_empty()),
        }
    }

    /// Write a whole file; its directory must exist.
    fn write_file(&mut self, path: &str, bytes: &[u8]) -> R<()> {
        let op = "write";
        if !self.is_dir(parent(path)).map_err(|f| report(op, path, f))? {
            return Err(StoreErrorKind::NotFound);
        }
        if self.kind(path).map_err(|f| report(op, path, f))? == Some(DIR) {
            return Err(StoreErrorKind::Io);
        }
        if bytes.len() > MAX_FILE {
            return Err(report(op, path, Fault::TooBig));
        }
        self.put(path, FILE, bytes).map_err(|f| report(op, path, f))
    }

    /// Write a provisioning file unless the store holds it already (no flash write at each
    /// start).
    #[inline(never)] // the store's futures stay out of the caller's frame
    pub fn provision(&mut self, path: &str, bytes: &[u8]) -> R<()> {
        let same = matches!(self.fetch(path), Ok(Some(r)) if r.kind == FILE && r.data == bytes);
        self.buf.fill(0);
        if same { Ok(()) } else { self.write_file(path, bytes) }
    }

    /// Create a directory (and its parents).
    #[inline(never)] // the store's futures stay out of the caller's frame
    pub fn mkdir(&mut self, path: &str) -> R<()> {
        match self.kind(path).map_err(|f| report("mkdir", path, f))? {
            Some(DIR) => return Ok(()),
            Some(_) => return Err(StoreErrorKind::Io),
            None => {}
        }
        self.mkdir(parent(path))?;
        self.put(path, DIR, &[]).map_err(|f| report("mkdir", path, f))
    }

    /// The file `path` (links followed), at most `max_len` bytes; it borrows the item buffer:
    /// the caller copies it, then calls [`Store::wipe`].
    #[inline(never)] // the store's futures stay out of the caller's frame
    pub fn read(&mut self, path: &str, max_len: usize) -> R<&[u8]> {
        let mut at =
            heapless::String::<MAX_NAME>::try_from(path).map_err(|_| StoreErrorKind::Io)?;
        for _ in 0..=MAX_LINKS {
            let target = match self.fetch(&at).map_err(|f| report("read", path, f))? {
                None => return Err(StoreErrorKind::NotFound),
                Some(Record { kind: LINK, data }) => core::str::from_utf8(data)
                    .ok()
                    .and_then(|t| heapless::String::<MAX_NAME>::try_from(t).ok()),
                Some(Record { kind: FILE, .. }) => break,
                Some(Record { kind: DIR, .. }) => return Err(StoreErrorKind::Io),
                Some(_) => return Err(report("read", path, Fault::UnknownRecord)),
            };
            at = target.ok_or(StoreErrorKind::Io)?;
        }
        self.buf.fill(0);
        let data = match self.fetch(&at).map_err(|f| report("read", path, f))? {
            Some(Record { kind: FILE, data }) => data,
            _ => return Err(StoreErrorKind::NotFound),
        };
        if data.len() > max_len { Err(StoreErrorKind::FileTooLarge) } else { Ok(data) }
    }

    /// Wipe the item buffer (after a read's bytes were copied).
    pub fn wipe(&mut self) {
        self.buf.fill(0);
    }

    fn link_target(&mut self, path: &str) -> Result<Option<heapless::String<MAX_NAME>>, Fault> {
        let t = match self.fetch(path)? {
            Some(Record { kind: LINK, data }) => core::str::from_utf8(data)
                .ok()
                .and_then(|t| heapless::String::<MAX_NAME>::try_from(t).ok()),
            _ => None,
        };
        self.buf.fill(0);
        Ok(t)
    }

    /// Perform one of the agent's file steps, as [`FileStep`] specifies it.
    #[inline(never)] // the store's futures stay out of the caller's frame
    pub fn perform(&mut self, step: &FileStep<'_>) -> R<()> {
        let r = self.perform_inner(step);
        self.buf.fill(0);
        r
    }

    fn perform_inner(&mut self, step: &FileStep<'_>) -> R<()> {
        match *step {
            FileStep::Recover { dir, .. } => {
                if !self.is_dir(dir).map_err(|f| report("recover", dir, f))? {
                    return Err(StoreErrorKind::NotFound);
                }
                let (current, updated) =
                    step.recover_paths::<MAX_NAME>().ok_or(StoreErrorKind::Io)?;
                let kind = self.kind(&updated).map_err(|f| report("recover", &updated, f))?;
                match kind {
                    Some(LINK) => {
                        // A rename cut short: the `updated` link is kept only while `current`
                        // does not resolve.
                        let resolves = self.read(&current, usize::MAX).is_ok();
                        self.buf.fill(0);
                        if resolves {
                            return Ok(());
                        }
                        let target = self
                            .link_target(&updated)
                            .map_err(|f| report("recover", &updated, f))?
                            .ok_or(StoreErrorKind::Io)?;
                        self.put(&current, LINK, target.as_bytes())
                            .and_then(|()| self.remove(&updated))
                            .map_err(|f| report("recover", &current, f))
                    }
                    None => Ok(()),
                    Some(_) => Err(StoreErrorKind::UpdatedNotSymlink),
                }
            }
            FileStep::CreateDir { path } => self.mkdir(path),
            FileStep::WriteKeyCache { path, pem } => self.write_file(path, pem),
            FileStep::WritePair { path, content } => {
                self.write_file(path, content)?;
                let same = self.read(path, usize::MAX)? == content;
                self.buf.fill(0);
                if same { Ok(()) } else { Err(StoreErrorKind::ReadBackMismatch) }
            }
            FileStep::SwapCurrent { current, updated, target } => {
                let op = "swap";
                if let Some(FILE | DIR) = self.kind(current).map_err(|f| report(op, current, f))? {
                    return Err(StoreErrorKind::CurrentNotSymlink);
                }
                if let Some(FILE | DIR) = self.kind(updated).map_err(|f| report(op, updated, f))? {
                    return Err(StoreErrorKind::UpdatedNotSymlink);
                }
                // One item write switches `current` (a symlink's atomic rename); a stale
                // `updated` link goes after.
                self.put(current, LINK, target.as_bytes()).map_err(|f| report(op, current, f))?;
                self.remove(updated).map_err(|f| report(op, updated, f))
            }
            FileStep::WriteKubeconfig { path, content }
            | FileStep::WriteCa { path, content }
            | FileStep::WriteBootstrapKubeconfig { path, content } => {
                self.write_file(path, content)
            }
            FileStep::RemoveKeyCache { path } => {
                self.remove(path).map_err(|f| report("remove", path, f))
            }
            FileStep::PrunePairs { dir, prefix, keep } => {
                let old = self
                    .list(dir, |p| {
                        p != keep
                            && parent(p) == dir
                            && p.rsplit('/').next().is_some_and(|name| {
                                kubeboot::agent::is_pair_file_name(prefix, name)
                            })
                    })
                    .map_err(|f| report("prune", dir, f))?;
                for key in old {
                    if self.kind(key.as_str()).ok().flatten() == Some(FILE) {
                        self.remove(key.as_str()).map_err(|f| report("prune", key.as_str(), f))?;
                    }
                }
                Ok(())
            }
            FileStep::RemoveDir { path } => {
                let inside = self.list(path, |_| true).map_err(|f| report("rmdir", path, f))?;
                if inside.is_empty() {
                    self.remove(path).map_err(|f| report("rmdir", path, f))?;
                }
                Ok(())
            }
            _ => Err(StoreErrorKind::Io),
        }
    }
}
