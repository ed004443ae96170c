//! `kubeboot_store_*` in per-process certificate directories: a failing operation changes no
//! file.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::store as fstore;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::ptr::null_mut;
use std::sync::OnceLock;

/// The per-process certificate directories: `<tmp>/d0` .. `<tmp>/d2` exist, `<tmp>/missing/x`
/// does not.
pub fn store_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("kubeboot-fuzz-store-{}", std::process::id()));
        for d in ["d0", "d1", "d2"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        root
    })
}

/// Empty the certificate directories (`missing` included) for a new input.
pub fn reset() {
    let root = store_root();
    for d in ["d0", "d1", "d2", "missing"] {
        let _ = std::fs::remove_dir_all(root.join(d));
    }
    for d in ["d0", "d1", "d2"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
}

/// Every file under the store root: path -> (symlink target or contents).
pub fn snapshot() -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_symlink() {
                let t = std::fs::read_link(&p).unwrap_or_default();
                out.insert(p, t.into_os_string().into_encoded_bytes());
            } else if ft.is_dir() {
                walk(&p, out);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(store_root(), &mut out);
    out
}

/// `kubeboot_store_open` in one of the certificate directories (`dir`).
#[derive(Arbitrary, Debug)]
pub struct StoreOpen {
    pub prefix: Bytes,
    pub dir: u8,
}

/// `kubeboot_store_update`.
#[derive(Arbitrary, Debug)]
pub struct StoreUpdate {
    pub s: H,
    pub now: i64,
    pub offset: i32,
    pub cert: Bytes,
    pub key: Bytes,
}

/// `kubeboot_store_current` / `_current_path` / `_last_error` (by `which`).
#[derive(Arbitrary, Debug)]
pub struct StoreText {
    pub s: H,
    pub which: u8,
    pub out: Out,
}

/// `kubeboot_store_bootstrap_key`.
#[derive(Arbitrary, Debug)]
pub struct StoreBootstrapKey {
    pub s: H,
    pub null_out: bool,
}

/// `kubeboot_store_remove_key_cache`.
#[derive(Arbitrary, Debug)]
pub struct StoreRemoveKeyCache {
    pub s: H,
}

/// `kubeboot_store_free` of a live store (dropped from the handles).
#[derive(Arbitrary, Debug)]
pub struct StoreFree {
    pub s: H,
}

pub fn open(hs: &mut Handles, op: &StoreOpen) {
    let StoreOpen { prefix, dir } = op;
    let p = Arg::new(prefix);
    let sub = ["d0", "d1", "d2", "missing/x"][*dir as usize % 4];
    let d = store_root().join(sub).into_os_string().into_encoded_bytes();
    new_handle(&mut hs.stores, p.bad(), |o| {
        fstore::kubeboot_store_open(p.cptr(), p.len, d.as_ptr().cast(), d.len(), o)
    });
}

pub fn update(hs: &mut Handles, op: &StoreUpdate) {
    let StoreUpdate { s, now, offset, cert, key } = op;
    let st = pick(&hs.stores, s);
    let (c, k) = (Arg::new(cert), Arg::new(key));
    let before = snapshot();
    let r = rc(fstore::kubeboot_store_update(st, *now, *offset, c.ptr(), c.len, k.ptr(), k.len));
    if st.is_null() || c.bad() || k.bad() {
        assert_ne!(r, OK);
    }
    if r != OK {
        assert_eq!(before, snapshot(), "a failed store update ({r}) changed files");
    }
}

pub fn text(hs: &mut Handles, op: &StoreText) {
    let StoreText { s, which, out } = op;
    let st = pick(&hs.stores, s);
    let before = snapshot();
    let (r, _) = out_call(out, st.is_null(), &mut |p, l, ol| match which % 3 {
        0 => fstore::kubeboot_store_current(st, p.cast(), l, ol),
        1 => fstore::kubeboot_store_current_path(st, p.cast(), l, ol),
        _ => fstore::kubeboot_store_last_error(st, p.cast(), l, ol),
    });
    if r != OK {
        assert_eq!(before, snapshot(), "a failed store read ({r}) changed files");
    }
}

pub fn bootstrap_key(hs: &mut Handles, op: &StoreBootstrapKey) {
    let StoreBootstrapKey { s, null_out } = op;
    let st = pick(&hs.stores, s);
    if *null_out {
        assert_ne!(rc(fstore::kubeboot_store_bootstrap_key(st, null_mut())), OK);
    } else {
        new_handle(&mut hs.keys, st.is_null(), |o| fstore::kubeboot_store_bootstrap_key(st, o));
    }
}

pub fn remove_key_cache(hs: &mut Handles, op: &StoreRemoveKeyCache) {
    let StoreRemoveKeyCache { s } = op;
    let st = pick(&hs.stores, s);
    let before = snapshot();
    let r = rc(fstore::kubeboot_store_remove_key_cache(st));
    if st.is_null() {
        assert_ne!(r, OK);
    }
    if r != OK {
        assert_eq!(before, snapshot(), "a failed key-cache removal ({r}) changed files");
    }
}

pub fn free(hs: &mut Handles, op: &StoreFree) {
    let StoreFree { s } = op;
    if let H::Live(i) = s {
        if !hs.stores.is_empty() {
            let st = hs.stores.remove(*i as usize % hs.stores.len());
            fstore::kubeboot_store_free(st);
        }
    }
}
