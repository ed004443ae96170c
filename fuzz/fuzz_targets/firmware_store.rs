//! The networked firmware's store as it reads a flash it did not write: sequential-storage's map
//! (the version the firmware links) over a NOR flash in RAM whose pages start as arbitrary bytes
//! (a corrupted, half-erased or foreign flash), with the firmware's item format
//! (`examples/firmware/src/net/record.rs`: path keys, kind-tagged values), then arbitrary
//! fetches, stores, removals and listings.
//!
//! Properties:
//! * nothing panics, in the map or in the item format (every read is checked);
//! * the flash keeps NOR semantics (a write only clears bits; a write that would set one fails,
//!   and the map must cope with the error);
//! * an item stored without an error reads back as stored until it is replaced or removed, and a
//!   removed item no longer reads, as long as no operation in between failed (a failure may leave
//!   the map's view of a corrupted flash changed).
#![no_main]

#[path = "../../examples/firmware/src/net/record.rs"]
#[allow(dead_code)]
mod record;

use std::task::{Context, Poll, Waker};

use arbitrary::Arbitrary;
use embedded_storage_async::nor_flash::{
    ErrorType, MultiwriteNorFlash, NorFlash, NorFlashError, NorFlashErrorKind, ReadNorFlash,
};
use libfuzzer_sys::fuzz_target;
use record::{DIR, FILE, LINK, PathKey, Record, VERSION};
use sequential_storage::cache::Cache;
use sequential_storage::cache::key_pointers::ArrayKeyPointers;
use sequential_storage::cache::page_pointers::ArrayPagePointers;
use sequential_storage::cache::page_states::ArrayPageStates;
use sequential_storage::map::{MapConfig, MapStorage};

const PAGE: usize = 4096;
const WORD: usize = 4;
const MAX_PAGES: usize = 6;

/// NOR flash in RAM: erased to 0xFF, aligned word writes that may only clear bits.
struct RamNor {
    bytes: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NorError {
    Range,
    Align,
    NotErased,
}

impl NorFlashError for NorError {
    fn kind(&self) -> NorFlashErrorKind {
        match self {
            NorError::Range => NorFlashErrorKind::OutOfBounds,
            NorError::Align => NorFlashErrorKind::NotAligned,
            NorError::NotErased => NorFlashErrorKind::Other,
        }
    }
}

impl ErrorType for RamNor {
    type Error = NorError;
}

impl ReadNorFlash for RamNor {
    const READ_SIZE: usize = 1;
    async fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), NorError> {
        let at = offset as usize;
        let src = self.bytes.get(at..at + bytes.len()).ok_or(NorError::Range)?;
        bytes.copy_from_slice(src);
        Ok(())
    }
    fn capacity(&self) -> usize {
        self.bytes.len()
    }
}

impl NorFlash for RamNor {
    const WRITE_SIZE: usize = WORD;
    const ERASE_SIZE: usize = PAGE;
    async fn erase(&mut self, from: u32, to: u32) -> Result<(), NorError> {
        let (from, to) = (from as usize, to as usize);
        if from % PAGE != 0 || to % PAGE != 0 || from > to {
            return Err(NorError::Align);
        }
        self.bytes.get_mut(from..to).ok_or(NorError::Range)?.fill(0xff);
        Ok(())
    }
    async fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), NorError> {
        let at = offset as usize;
        if at % WORD != 0 || bytes.len() % WORD != 0 {
            return Err(NorError::Align);
        }
        let dst = self.bytes.get_mut(at..at + bytes.len()).ok_or(NorError::Range)?;
        if dst.iter().zip(bytes).any(|(old, new)| new & !old != 0) {
            return Err(NorError::NotErased);
        }
        dst.copy_from_slice(bytes);
        Ok(())
    }
}

impl MultiwriteNorFlash for RamNor {}

/// Run a future of the synchronous flash to its end (it never waits).
fn block_on<F: Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

const PATHS: [&str; 8] = [
    "",
    "/var/lib/kubelet/pki",
    "/var/lib/kubelet/pki/kubelet-client-current.pem",
    "/var/lib/kubelet/pki/kubelet-client-2026-12-08-00-00-00.pem",
    "/var/lib/kubelet/pki/kubelet-client.key.tmp",
    "/etc/kubernetes/kubelet.conf",
    "/etc/kubernetes/bootstrap-kubeconfig",
    "/var/lib/kubelet/pki/ca.crt",
];

#[derive(Arbitrary, Debug)]
enum Op {
    Fetch(u8),
    Store { path: u8, kind: u8, len: u16, fill: u8 },
    Remove(u8),
    List,
}

#[derive(Arbitrary, Debug)]
struct Input {
    pages: u8,
    /// Bytes the flash starts with (the rest of it erased).
    flash: Vec<u8>,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let pages = 2 + usize::from(input.pages) % (MAX_PAGES - 1);
    let mut bytes = vec![0xffu8; pages * PAGE];
    let n = input.flash.len().min(bytes.len());
    bytes[..n].copy_from_slice(&input.flash[..n]);
    let Ok(config) = MapConfig::try_new(0..(pages * PAGE) as u32) else { return };
    let cache = Cache::new(
        ArrayPageStates::<MAX_PAGES>::new(),
        ArrayPagePointers::<MAX_PAGES>::new(),
        ArrayKeyPointers::<PathKey, 8>::new(),
    );
    let mut map = MapStorage::new(RamNor { bytes }, config, cache);
    let mut buf = vec![0u8; 1 + 64 + 1 + 3072 + WORD];
    // What each path holds, when known: Some(Some((kind, bytes))) stored, Some(None) removed.
    let mut known: Vec<Option<Option<(u8, Vec<u8>)>>> = vec![None; PATHS.len()];
    for op in input.ops.iter().take(64) {
        match op {
            Op::Fetch(p) => {
                let i = usize::from(*p) % PATHS.len();
                let Some(key) = PathKey::new(PATHS[i]) else { continue };
                let got = block_on(map.fetch_item::<Record<'_>>(&mut buf, &key)).expect("ready");
                match (&known[i], got) {
                    (Some(Some((kind, data))), Ok(Some(r))) => {
                        assert_eq!((r.kind, r.data), (*kind, &data[..]), "{}", PATHS[i]);
                    }
                    (Some(Some(_)), other) => panic!("{}: stored, read {other:?}", PATHS[i]),
                    (Some(None), Ok(Some(r))) => panic!("{}: removed, read {r:?}", PATHS[i]),
                    (_, Err(_)) => known.iter_mut().for_each(|k| *k = None),
                    _ => {}
                }
            }
            Op::Store { path, kind, len, fill } => {
                let i = usize::from(*path) % PATHS.len();
                let kind = [FILE, LINK, DIR, VERSION, *kind][usize::from(*kind) % 5];
                let data = vec![*fill; usize::from(*len) % 3072];
                let Some(key) = PathKey::new(PATHS[i]) else { continue };
                let record = Record { kind, data: &data };
                match block_on(map.store_item(&mut buf, &key, &record)).expect("ready") {
                    Ok(()) => known[i] = Some(Some((kind, data))),
                    Err(_) => known.iter_mut().for_each(|k| *k = None),
                }
            }
            Op::Remove(p) => {
                let i = usize::from(*p) % PATHS.len();
                let Some(key) = PathKey::new(PATHS[i]) else { continue };
                match block_on(map.remove_item(&mut buf, &key)).expect("ready") {
                    Ok(()) => known[i] = Some(None),
                    Err(_) => known.iter_mut().for_each(|k| *k = None),
                }
            }
            Op::List => {
                let Ok(mut items) = block_on(map.fetch_all_items(&mut buf)).expect("ready") else {
                    known.iter_mut().for_each(|k| *k = None);
                    continue;
                };
                let mut seen = 0;
                while let Ok(Some((key, record))) =
                    block_on(items.next::<Record<'_>>(&mut buf)).expect("ready")
                {
                    let _ = (key.as_str(), record.kind, record.data.len());
                    seen += 1;
                    if seen > 10_000 {
                        panic!("a listing that does not end");
                    }
                }
            }
        }
    }
});
