//! Crash-safety and layout tests of `kubeboot::store` (feature `std`).
//!
//! Certificates and keys are made at test time with `openssl`. The fault tests wrap the real
//! filesystem in [`FaultFs`], which fails (or "crashes": fails this and every later call, and
//! truncates every file that was written but not yet fsynced, as a power loss may) at call N, for
//! N = 1, 2, ... until an update runs to completion. After each run the store is reopened on the
//! real filesystem (which runs recovery) and must load a valid, matching pair: the old one, or the
//! new one once the atomic rename happened. After every single call, a power loss at that instant
//! must not leave `-current.pem` pointing at a missing, empty or unsynced file.

mod common;

use common::{TempDir, ok};
use kubeboot::store::{
    CertStore, FileKind, Fs, KeyCacheOutcome, KeySource, PREFIX_CLIENT, PREFIX_SERVER, Source,
    StdFs, StoreErrorKind, TMP_SUFFIX, Timestamp,
};
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

// ---------------------------------------------------------------------------------------------
// Fixtures made by openssl

struct Fixtures {
    _dir: TempDir,
    ca: Vec<u8>,
    /// Leaf for key A (SEC1 key with an `EC PARAMETERS` block first).
    a_cert: Vec<u8>,
    a_key: Vec<u8>,
    /// Another leaf for the same key A.
    a2_cert: Vec<u8>,
    /// Leaf for key B (PKCS#8 key).
    b_cert: Vec<u8>,
    b_key: Vec<u8>,
    /// RSA leaf, key in PKCS#1 (`RSA PRIVATE KEY`) and PKCS#8 (`PRIVATE KEY`).
    r_cert: Vec<u8>,
    r_key_pkcs1: Vec<u8>,
    r_key_pkcs8: Vec<u8>,
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let d = TempDir::new("store-fixtures");
        let o = |args: &[&str]| {
            ok(&d.0, "openssl", args, None);
        };
        o(&[
            "req",
            "-x509",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=kubeboot-test-ca",
            "-days",
            "2",
        ]);
        o(&["ecparam", "-name", "prime256v1", "-genkey", "-out", "a.key"]);
        o(&["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "b.key"]);
        o(&["genrsa", "-traditional", "-out", "r1.key", "2048"]);
        o(&["pkcs8", "-topk8", "-nocrypt", "-in", "r1.key", "-out", "r8.key"]);
        let sign = |key: &str, out: &str, serial: &str| {
            o(&[
                "req",
                "-new",
                "-key",
                key,
                "-subj",
                "/O=system:nodes/CN=system:node:n1",
                "-out",
                "leaf.csr",
            ]);
            o(&[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-set_serial",
                serial,
                "-days",
                "1",
                "-out",
                out,
            ]);
        };
        sign("a.key", "a.crt", "11");
        sign("a.key", "a2.crt", "12");
        sign("b.key", "b.crt", "13");
        sign("r1.key", "r.crt", "14");
        let rd = |n: &str| std::fs::read(d.path(n)).unwrap();
        let f = Fixtures {
            ca: rd("ca.crt"),
            a_cert: rd("a.crt"),
            a_key: rd("a.key"),
            a2_cert: rd("a2.crt"),
            b_cert: rd("b.crt"),
            b_key: rd("b.key"),
            r_cert: rd("r.crt"),
            r_key_pkcs1: rd("r1.key"),
            r_key_pkcs8: rd("r8.key"),
            _dir: d,
        };
        assert!(String::from_utf8_lossy(&f.a_key).starts_with("-----BEGIN EC PARAMETERS-----"));
        assert!(String::from_utf8_lossy(&f.b_key).starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(String::from_utf8_lossy(&f.r_key_pkcs1).starts_with("-----BEGIN RSA PRIVATE KEY"));
        f
    })
}

/// The leaf DER of a PEM certificate file (via openssl, independent of the crate).
fn leaf_der(pem: &[u8]) -> Vec<u8> {
    let d = TempDir::new("store-der");
    ok(&d.0, "openssl", &["x509", "-outform", "DER"], Some(pem)).stdout
}

/// The private-key block of an openssl key file (skipping `EC PARAMETERS`).
fn key_block(key: &[u8]) -> Vec<u8> {
    let s = String::from_utf8(key.to_vec()).unwrap();
    let start = s.find("-----BEGIN EC PRIVATE KEY").or_else(|| s.find("-----BEGIN PRIVATE KEY"));
    let start = start.or_else(|| s.find("-----BEGIN RSA PRIVATE KEY")).unwrap();
    s.as_bytes()[start..].to_vec()
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn urandom(buf: &mut [u8]) -> kubeboot::Result<()> {
    std::fs::File::open("/dev/urandom").unwrap().read_exact(buf).unwrap();
    Ok(())
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn tmp_leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(TMP_SUFFIX))
        .collect()
}

/// What a Go reader of `-current.pem` would see must be a complete, matching pair; checked here
/// with openssl (not with the crate): the certificate's and the key's public keys agree.
fn openssl_pair_matches(path: &Path) -> bool {
    let d = TempDir::new("store-match");
    let p = path.to_str().unwrap();
    let c = common::run(&d.0, "openssl", &["x509", "-in", p, "-noout", "-pubkey"], None);
    let k = common::run(&d.0, "openssl", &["pkey", "-in", p, "-pubout"], None);
    c.status == 0 && k.status == 0 && !c.stdout.is_empty() && c.stdout == k.stdout
}

// ---------------------------------------------------------------------------------------------
// Fault-injecting filesystem

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Fail call N only; later calls (the store's cleanup) run.
    Error,
    /// Fail call N and every later call, and lose all unsynced file data (power loss).
    Crash,
}

struct FaultFs {
    inner: StdFs,
    mode: Mode,
    fail_at: Cell<usize>,
    calls: Cell<usize>,
    crashed: Cell<bool>,
    hit: Cell<bool>,
    /// Files with data not yet fsynced.
    unsynced: RefCell<HashSet<PathBuf>>,
    /// Names created or renamed into place since the last directory fsync.
    undurable: RefCell<HashSet<PathBuf>>,
    current: PathBuf,
    /// Set when `rename(_, -current.pem)` succeeded.
    swapped: Cell<bool>,
    log: RefCell<Vec<String>>,
    violations: RefCell<Vec<String>>,
}

impl FaultFs {
    fn new(mode: Mode, current: PathBuf) -> Self {
        FaultFs {
            inner: StdFs,
            mode,
            fail_at: Cell::new(usize::MAX),
            calls: Cell::new(0),
            crashed: Cell::new(false),
            hit: Cell::new(false),
            unsynced: RefCell::new(HashSet::new()),
            undurable: RefCell::new(HashSet::new()),
            current,
            swapped: Cell::new(false),
            log: RefCell::new(Vec::new()),
            violations: RefCell::new(Vec::new()),
        }
    }

    /// Count calls from zero again and fail the `n`-th one from now.
    fn arm(&self, n: usize) {
        self.calls.set(0);
        self.fail_at.set(n);
        self.log.borrow_mut().clear();
    }

    fn step(&self, what: String) -> io::Result<()> {
        if self.crashed.get() {
            return Err(io::Error::other("process is dead"));
        }
        let n = self.calls.get() + 1;
        self.calls.set(n);
        self.log.borrow_mut().push(what.clone());
        if n == self.fail_at.get() {
            self.hit.set(true);
            if self.mode == Mode::Crash {
                self.crashed.set(true);
                self.power_loss();
            }
            return Err(io::Error::other(format!("injected failure at call {n}: {what}")));
        }
        Ok(())
    }

    fn power_loss(&self) {
        for p in self.unsynced.borrow().iter() {
            if std::fs::symlink_metadata(p).is_ok() {
                std::fs::OpenOptions::new().write(true).truncate(true).open(p).unwrap();
            }
        }
    }

    /// After every call: if the power failed now, would `-current.pem` still be good?
    fn check(&self) {
        let Ok(meta) = std::fs::symlink_metadata(&self.current) else { return };
        let last = self.log.borrow().last().cloned().unwrap_or_default();
        let bad = |m: String| self.violations.borrow_mut().push(format!("after {last}: {m}"));
        if !meta.file_type().is_symlink() {
            return bad("current is not a symlink".into());
        }
        let target = std::fs::read_link(&self.current).unwrap();
        if !target.is_absolute() {
            bad(format!("relative target {target:?}"));
        }
        match std::fs::metadata(&target) {
            Ok(m) if m.len() > 0 => {}
            other => bad(format!("target {target:?} missing or empty: {other:?}")),
        }
        if self.unsynced.borrow().contains(&target) {
            bad(format!("target {target:?} has unsynced data"));
        }
        if self.undurable.borrow().contains(&target) {
            bad(format!("target {target:?}'s directory entry is not synced"));
        }
    }

    fn done<T>(&self, r: io::Result<T>) -> io::Result<T> {
        self.check();
        r
    }
}

impl Fs for FaultFs {
    fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()> {
        self.step(format!("mkdir {path:?}"))?;
        self.done(self.inner.create_dir_all(path, mode))
    }
    fn create(&self, path: &Path, mode: u32) -> io::Result<()> {
        self.step(format!("create {path:?}"))?;
        let r = self.inner.create(path, mode);
        if r.is_ok() {
            self.unsynced.borrow_mut().insert(path.to_path_buf());
            self.undurable.borrow_mut().insert(path.to_path_buf());
        }
        self.done(r)
    }
    fn write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.step(format!("write {path:?}"))?;
        self.unsynced.borrow_mut().insert(path.to_path_buf());
        self.done(self.inner.write(path, data))
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.step(format!("fsync {path:?}"))?;
        let r = self.inner.sync_file(path);
        if r.is_ok() {
            self.unsynced.borrow_mut().remove(path);
        }
        self.done(r)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.step(format!("fsync-dir {path:?}"))?;
        let r = self.inner.sync_dir(path);
        if r.is_ok() {
            self.undurable.borrow_mut().retain(|p| p.parent() != Some(path));
        }
        self.done(r)
    }
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        self.step(format!("symlink {link:?} -> {target:?}"))?;
        self.done(self.inner.symlink(target, link))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.step(format!("rename {from:?} {to:?}"))?;
        // Replacing a durable entry is atomic across a power loss (old or new inode, both
        // complete when the new one was fsynced); a new name is only durable after fsync-dir.
        let replaces_durable =
            std::fs::symlink_metadata(to).is_ok() && !self.undurable.borrow().contains(to);
        let r = self.inner.rename(from, to);
        if r.is_ok() {
            let mut u = self.unsynced.borrow_mut();
            let was = u.remove(from);
            u.remove(to);
            if was {
                u.insert(to.to_path_buf());
            }
            if !replaces_durable {
                self.undurable.borrow_mut().insert(to.to_path_buf());
            }
            if to == self.current {
                self.swapped.set(true);
            }
        }
        self.done(r)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.step(format!("remove {path:?}"))?;
        let r = self.inner.remove_file(path);
        if r.is_ok() {
            self.unsynced.borrow_mut().remove(path);
        }
        self.done(r)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.step(format!("read {path:?}"))?;
        self.done(self.inner.read(path))
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.step(format!("readlink {path:?}"))?;
        self.done(self.inner.read_link(path))
    }
    fn metadata(&self, path: &Path) -> io::Result<FileKind> {
        self.step(format!("stat {path:?}"))?;
        self.done(self.inner.metadata(path))
    }
    fn symlink_metadata(&self, path: &Path) -> io::Result<FileKind> {
        self.step(format!("lstat {path:?}"))?;
        self.done(self.inner.symlink_metadata(path))
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.step(format!("readdir {path:?}"))?;
        self.done(self.inner.read_dir(path))
    }
}

// ---------------------------------------------------------------------------------------------
// Fault loops

/// After a (possibly failed) run: restart on the real fs and check the invariants. Returns
/// whether the new pair is current.
fn restart_and_check(dir: &Path, old_leaf: &[u8], new_leaf: &[u8], ctx: &str) -> bool {
    let store =
        CertStore::open(PREFIX_CLIENT, dir).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
    assert!(tmp_leftovers(dir).is_empty(), "{ctx}: temp files survive recovery");
    let creds = store.current().unwrap_or_else(|e| panic!("{ctx}: current(): {e}"));
    assert_eq!(creds.source(), Source::Current, "{ctx}");
    let target = store.current_target().unwrap();
    assert!(target.is_absolute(), "{ctx}: {target:?}");
    assert!(std::fs::metadata(&target).unwrap().len() > 0, "{ctx}: empty target");
    assert!(openssl_pair_matches(&store.current_path()), "{ctx}: openssl rejects current pair");
    let is_new = creds.leaf_der() == new_leaf;
    assert!(is_new || creds.leaf_der() == old_leaf, "{ctx}: unknown leaf");
    is_new
}

fn fault_loop(mode: Mode, ts_a: &str, ts_b: &str, new_cert: &[u8], new_key: &[u8]) -> usize {
    let f = fixtures();
    let old_leaf = leaf_der(&f.a_cert);
    let new_leaf = leaf_der(new_cert);
    let mut n = 1;
    loop {
        let d = TempDir::new("store-fault");
        let dir = d.path("pki");
        let base = CertStore::open(PREFIX_CLIENT, &dir).unwrap();
        base.update(&ts(ts_a), &f.a_cert, &f.a_key).unwrap();
        let fs = FaultFs::new(mode, base.current_path());
        let store = CertStore::open_with(fs, PREFIX_CLIENT, &dir, None).unwrap();
        store.fs().arm(n);
        let r = store.update(&ts(ts_b), new_cert, new_key);
        let fs = store.fs();
        let ctx =
            format!("{mode:?} {ts_a}->{ts_b} fail at {n} ({:?}); log {:?}", r, fs.log.borrow());
        assert!(fs.violations.borrow().is_empty(), "{ctx}: {:?}", fs.violations.borrow());
        let hit = fs.hit.get();
        let swapped = fs.swapped.get();
        if hit {
            assert!(r.is_err(), "{ctx}: an injected failure must surface");
        } else {
            assert!(r.is_ok(), "{ctx}");
        }
        let is_new = restart_and_check(&dir, &old_leaf, &new_leaf, &ctx);
        if swapped || r.is_ok() {
            assert!(is_new, "{ctx}: the swap happened, the new pair must be current");
        }
        if ts_a != ts_b {
            // A distinct data file: until the swap, the old pair stays.
            assert_eq!(is_new, swapped, "{ctx}");
        }
        // The store is not wedged: the next update works and is current.
        let store = CertStore::open(PREFIX_CLIENT, &dir).unwrap();
        store.update(&ts("2031-01-01-00-00-00"), &f.a2_cert, &f.a_key).unwrap();
        assert_eq!(store.current().unwrap().leaf_der(), leaf_der(&f.a2_cert), "{ctx}");
        if !hit {
            return n;
        }
        n += 1;
    }
}

#[test]
fn faults_error_at_every_step() {
    let f = fixtures();
    let n =
        fault_loop(Mode::Error, "2030-01-01-00-00-00", "2030-01-01-00-00-01", &f.b_cert, &f.b_key);
    assert!(n > 10, "update made suspiciously few calls: {n}");
}

#[test]
fn faults_crash_with_power_loss_at_every_step() {
    let f = fixtures();
    fault_loop(Mode::Crash, "2030-01-01-00-00-00", "2030-01-01-00-00-01", &f.b_cert, &f.b_key);
}

#[test]
fn faults_same_second_overwrite() {
    let f = fixtures();
    for mode in [Mode::Error, Mode::Crash] {
        fault_loop(mode, "2030-01-01-00-00-00", "2030-01-01-00-00-00", &f.b_cert, &f.b_key);
    }
}

#[test]
fn faults_same_key_new_cert() {
    let f = fixtures();
    fault_loop(Mode::Crash, "2030-01-01-00-00-00", "2030-01-01-00-00-05", &f.a2_cert, &f.a_key);
}

#[test]
fn faults_key_cache() {
    for mode in [Mode::Error, Mode::Crash] {
        let mut n = 1;
        loop {
            let d = TempDir::new("store-keyfault");
            let dir = d.path("pki");
            let fs = FaultFs::new(mode, dir.join("kubelet-client-current.pem"));
            let store = CertStore::open_with(fs, PREFIX_CLIENT, &dir, None).unwrap();
            store.fs().arm(n);
            let r = store.load_or_generate_key_cache(urandom);
            let hit = store.fs().hit.get();
            assert_eq!(r.is_err(), hit, "{mode:?} {n}");
            let path = store.key_cache_path();
            // Restart: the cache is absent or a valid key, never empty or partial.
            let store = CertStore::open(PREFIX_CLIENT, &dir).unwrap();
            if dir.exists() {
                assert!(tmp_leftovers(&dir).is_empty());
            }
            if let Ok(bytes) = std::fs::read(&path) {
                assert!(
                    kubeboot::key::NodeKey::from_pem(&bytes).is_ok(),
                    "{mode:?} {n}: bad cache"
                );
                let (_, o) = store.load_or_generate_key_cache(urandom).unwrap();
                assert_eq!(o, KeyCacheOutcome::Loaded);
            } else {
                assert!(r.is_err());
            }
            if !hit {
                break;
            }
            n += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Layout and behaviour

#[test]
fn update_writes_upstream_layout() {
    let f = fixtures();
    let d = TempDir::new("store-layout");
    let dir = d.path("a/b/pki");
    let store = CertStore::open(PREFIX_CLIENT, &dir).unwrap();
    assert!(!dir.exists(), "open does not create the dir");
    // Leaf, an intermediate, junk and a non-certificate block in between.
    let mut certs = f.a_cert.clone();
    certs.extend_from_slice(b"junk\n-----BEGIN X509 CRL-----\nAQID\n-----END X509 CRL-----\n");
    certs.extend_from_slice(&f.ca);
    let path = store.update(&ts("2024-01-04-22-29-37"), &certs, &f.a_key).unwrap();
    assert_eq!(path, dir.join("kubelet-client-2024-01-04-22-29-37.pem"));
    let mut want = f.a_cert.clone();
    want.extend_from_slice(&f.ca);
    want.extend_from_slice(&key_block(&f.a_key));
    assert_eq!(std::fs::read(&path).unwrap(), want, "certs (leaf, intermediates), then key");
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir), 0o700);
    let current = dir.join("kubelet-client-current.pem");
    assert!(std::fs::symlink_metadata(&current).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_link(&current).unwrap(), path);
    assert!(!dir.join("kubelet-client-updated.pem").exists());
    assert!(openssl_pair_matches(&current));
    let creds = store.current().unwrap();
    assert_eq!(creds.source(), Source::Current);
    assert_eq!(creds.chain_pem().len(), f.a_cert.len() + f.ca.len());
    assert_eq!(creds.key_pem(), key_block(&f.a_key).as_slice());
    assert!(creds.not_after() - creds.not_before() >= 86_400 - 1);
    // Debug never shows the key.
    let dbg = format!("{creds:?}");
    assert!(!dbg.contains("PRIVATE") && dbg.contains("redacted"), "{dbg}");
    // Only the data file and the link.
    let mut names: Vec<_> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["kubelet-client-2024-01-04-22-29-37.pem", "kubelet-client-current.pem"]);
}

#[test]
fn relative_cert_dir_gives_absolute_symlink() {
    let f = fixtures();
    let d = TempDir::new("store-rel");
    // A relative path from the test's working directory to the temp dir.
    let cwd = std::env::current_dir().unwrap();
    let mut rel = PathBuf::new();
    for _ in cwd.components().skip(1) {
        rel.push("..");
    }
    rel.push(d.0.strip_prefix("/").unwrap());
    rel.push("pki");
    assert!(rel.is_relative());
    let store = CertStore::open(PREFIX_SERVER, &rel).unwrap();
    assert!(store.dir().is_absolute());
    store.update(&ts("2024-01-04-22-29-37"), &f.a_cert, &f.a_key).unwrap();
    let target = std::fs::read_link(d.path("pki/kubelet-server-current.pem")).unwrap();
    assert!(target.is_absolute(), "{target:?}");
    assert_eq!(
        std::fs::canonicalize(&target).unwrap(),
        std::fs::canonicalize(d.path("pki/kubelet-server-2024-01-04-22-29-37.pem")).unwrap()
    );
}

#[test]
fn same_second_update_overwrites() {
    let f = fixtures();
    let d = TempDir::new("store-same");
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    let t = ts("2024-01-04-22-29-37");
    let p1 = store.update(&t, &f.a_cert, &f.a_key).unwrap();
    let p2 = store.update(&t, &f.b_cert, &f.b_key).unwrap();
    assert_eq!(p1, p2);
    assert_eq!(store.current().unwrap().leaf_der(), leaf_der(&f.b_cert));
    let count = std::fs::read_dir(&d.0).unwrap().count();
    assert_eq!(count, 2, "one data file and the link");
}

#[test]
fn rotation_keeps_kubeconfig_path_valid_seed_003() {
    // Seed 003 (k8s 1.10): the kubeconfig named kubelet-client.crt/.key, rotation wrote new
    // files elsewhere and the kubeconfig kept the stale cert. Here the only path a kubeconfig can
    // be given is current_path(), which follows every rotation; .crt/.key are never written.
    let f = fixtures();
    let d = TempDir::new("store-seed003");
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    store.update(&ts("2024-01-04-22-29-37"), &f.a_cert, &f.a_key).unwrap();
    let kubeconfig_path = store.current_path();
    assert_eq!(kubeconfig_path, d.0.join("kubelet-client-current.pem"));
    store.update(&ts("2024-01-05-10-00-00"), &f.b_cert, &f.b_key).unwrap();
    assert_eq!(store.current_path(), kubeconfig_path);
    // A Go-style reader of the kubeconfig path gets the rotated pair.
    let d2 = TempDir::new("store-seed003-read");
    let got = ok(
        &d2.0,
        "openssl",
        &["x509", "-in", kubeconfig_path.to_str().unwrap(), "-outform", "DER"],
        None,
    )
    .stdout;
    assert_eq!(got, leaf_der(&f.b_cert));
    assert!(openssl_pair_matches(&kubeconfig_path));
    let (crt, key) = store.legacy_paths();
    assert!(!crt.exists() && !key.exists());
}

#[test]
fn legacy_and_explicit_fallback() {
    let f = fixtures();
    let d = TempDir::new("store-legacy");
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    let e = store.current().unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::NoCertKeyFiles);
    assert!(e.to_string().starts_with("no cert/key files read at "), "{e}");
    // Only one legacy file: still nothing.
    d.write("kubelet-client.crt", &f.a_cert);
    assert_eq!(store.current().unwrap_err().kind(), StoreErrorKind::NoCertKeyFiles);
    d.write("kubelet-client.key", &f.a_key);
    let c = store.current().unwrap();
    assert_eq!(c.source(), Source::Legacy);
    assert_eq!(c.leaf_der(), leaf_der(&f.a_cert));
    // Explicit files win over legacy.
    d.write("tls.crt", &f.b_cert);
    d.write("tls.key", &f.b_key);
    let ex = CertStore::open_with(
        StdFs,
        PREFIX_CLIENT,
        &d.0,
        Some((d.path("tls.crt"), d.path("tls.key"))),
    )
    .unwrap();
    assert_eq!(ex.current().unwrap().source(), Source::Explicit);
    assert_eq!(ex.current().unwrap().leaf_der(), leaf_der(&f.b_cert));
    // Mismatched legacy pair is an error, not a fallback.
    d.write("kubelet-client.key", &f.b_key);
    assert_eq!(store.current().unwrap_err().kind(), StoreErrorKind::KeyMismatch);
    d.write("kubelet-client.key", &f.a_key);
    // -current.pem wins once written; legacy files are left alone.
    store.update(&ts("2024-01-04-22-29-37"), &f.b_cert, &f.b_key).unwrap();
    assert_eq!(store.current().unwrap().source(), Source::Current);
    assert_eq!(std::fs::read(d.path("kubelet-client.crt")).unwrap(), f.a_cert);
    // A dangling -current.pem does not "exist": back to legacy.
    std::fs::remove_file(d.path("kubelet-client-2024-01-04-22-29-37.pem")).unwrap();
    assert_eq!(store.current().unwrap().source(), Source::Legacy);
}

#[test]
fn bad_input_changes_nothing() {
    let f = fixtures();
    let d = TempDir::new("store-bad");
    let dir = d.path("pki");
    let store = CertStore::open(PREFIX_CLIENT, &dir).unwrap();
    let t = ts("2024-01-04-22-29-37");
    let cases: [(&[u8], &[u8], StoreErrorKind); 5] = [
        (b"", &f.a_key, StoreErrorKind::NoCertificates),
        (&f.a_key, &f.a_key, StoreErrorKind::NoCertificates),
        (&f.a_cert, &f.b_key, StoreErrorKind::KeyMismatch),
        (&f.a_cert, b"no key here", StoreErrorKind::MalformedKey),
        (
            b"-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n",
            &f.a_key,
            StoreErrorKind::MalformedCertificate,
        ),
    ];
    for (c, k, want) in cases {
        assert_eq!(store.update(&t, c, k).unwrap_err().kind(), want);
        assert!(!dir.exists(), "nothing may be written for {want:?}");
    }
    // RSA key against an EC certificate, and an EC key against an RSA certificate.
    assert_eq!(
        store.update(&t, &f.a_cert, &f.r_key_pkcs1).unwrap_err().kind(),
        StoreErrorKind::KeyMismatch
    );
    assert_eq!(
        store.update(&t, &f.r_cert, &f.a_key).unwrap_err().kind(),
        StoreErrorKind::KeyMismatch
    );
    assert!(!dir.exists());
    let e = store.update(&t, &f.a_cert, &f.b_key).unwrap_err();
    assert_eq!(e.cause().map(|c| c.code()), Some(405), "key-mismatch code: {e}");
    assert!(!e.to_string().contains("PRIVATE"), "{e}");
}

#[test]
fn rsa_pairs() {
    let f = fixtures();
    let d = TempDir::new("store-rsa");
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    for (i, key) in [&f.r_key_pkcs1, &f.r_key_pkcs8].into_iter().enumerate() {
        let t = ts(&format!("2024-01-04-22-29-3{i}"));
        store.update(&t, &f.r_cert, key).unwrap();
        let c = store.current().unwrap();
        assert_eq!(c.key_pem(), key.as_slice());
        assert!(c.node_key().is_err(), "RSA is not a NodeKey");
        assert!(openssl_pair_matches(&store.current_path()));
    }
}

#[test]
fn recovery_at_open() {
    let f = fixtures();
    let d = TempDir::new("store-recover");
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    let a = store.update(&ts("2024-01-04-22-29-37"), &f.a_cert, &f.a_key).unwrap();
    // Upstream's window: -current.pem unlinked, -updated.pem points at the new file.
    let b = store.update(&ts("2024-01-04-22-29-38"), &f.b_cert, &f.b_key).unwrap();
    std::fs::remove_file(store.current_path()).unwrap();
    std::os::unix::fs::symlink(&b, store.updated_path()).unwrap();
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    assert_eq!(std::fs::read_link(store.current_path()).unwrap(), b);
    assert!(!store.updated_path().exists());
    assert_eq!(store.current().unwrap().leaf_der(), leaf_der(&f.b_cert));
    // With -current.pem present, a leftover -updated.pem is left for update() to replace.
    std::os::unix::fs::symlink(&a, store.updated_path()).unwrap();
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    assert_eq!(store.current().unwrap().leaf_der(), leaf_der(&f.b_cert));
    store.update(&ts("2024-01-04-22-29-39"), &f.a2_cert, &f.a_key).unwrap();
    assert_eq!(store.current().unwrap().leaf_der(), leaf_der(&f.a2_cert));
    // Stale temp files of this store are removed; other files are not.
    d.write(".kubelet-client-2024-01-04-22-29-40.pem.kubeboot-tmp", b"");
    d.write(".kubelet-server-2024-01-04-22-29-40.pem.kubeboot-tmp", b"");
    d.write("kubelet-client.key.tmp", b"");
    let _ = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    assert!(!d.path(".kubelet-client-2024-01-04-22-29-40.pem.kubeboot-tmp").exists());
    assert!(d.path(".kubelet-server-2024-01-04-22-29-40.pem.kubeboot-tmp").exists());
    assert!(d.path("kubelet-client.key.tmp").exists());
}

#[test]
fn updated_regular_file_is_an_error() {
    let f = fixtures();
    let d = TempDir::new("store-updated-file");
    d.write("kubelet-client-updated.pem", &f.a_cert);
    let e = CertStore::open(PREFIX_CLIENT, &d.0).unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::UpdatedNotSymlink);
    assert_eq!(e.path(), Some(d.path("kubelet-client-updated.pem").as_path()));
    assert!(e.to_string().contains("kubelet-client-updated.pem"), "{e}");
    // With a valid -current.pem, open succeeds but update refuses and writes nothing.
    std::fs::remove_file(d.path("kubelet-client-updated.pem")).unwrap();
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    store.update(&ts("2024-01-04-22-29-37"), &f.a_cert, &f.a_key).unwrap();
    d.write("kubelet-client-updated.pem", &f.a_cert);
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    let e = store.update(&ts("2024-01-04-22-29-38"), &f.b_cert, &f.b_key).unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::UpdatedNotSymlink);
    assert!(!d.path("kubelet-client-2024-01-04-22-29-38.pem").exists());
    // -current.pem as a regular file: refused too.
    std::fs::remove_file(d.path("kubelet-client-updated.pem")).unwrap();
    std::fs::remove_file(d.path("kubelet-client-current.pem")).unwrap();
    d.write("kubelet-client-current.pem", &f.a_cert);
    let e = store.update(&ts("2024-01-04-22-29-38"), &f.b_cert, &f.b_key).unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::CurrentNotSymlink);
    assert!(!d.path("kubelet-client-2024-01-04-22-29-38.pem").exists());
}

#[test]
fn key_cache_load_generate_regenerate_remove() {
    let f = fixtures();
    let d = TempDir::new("store-keycache");
    let dir = d.path("pki");
    let store = CertStore::open(PREFIX_CLIENT, &dir).unwrap();
    let path = store.key_cache_path();
    assert_eq!(path, dir.join("kubelet-client.key.tmp"));
    let (k1, o) = store.load_or_generate_key_cache(urandom).unwrap();
    assert_eq!(o, KeyCacheOutcome::Generated);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir), 0o700);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
    // openssl reads it as a P-256 key.
    let o2 = ok(&d.0, "openssl", &["ec", "-in", path.to_str().unwrap(), "-noout", "-text"], None);
    assert!(
        o2.text().contains("prime256v1")
            || o2.stderr.contains("prime256v1")
            || o2.text().contains("P-256")
    );
    let (k2, o) = store.load_or_generate_key_cache(|_| panic!("must not generate")).unwrap();
    assert_eq!(o, KeyCacheOutcome::Loaded);
    assert_eq!(k1.public_key_spki(), k2.public_key_spki());
    // Empty (PR #131111-style) and corrupt caches are regenerated, not fatal.
    for junk in [
        &b""[..],
        b"-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
        &f.r_key_pkcs1,
    ] {
        std::fs::write(&path, junk).unwrap();
        let (k3, o) = store.load_or_generate_key_cache(urandom).unwrap();
        assert_eq!(o, KeyCacheOutcome::Regenerated);
        assert_ne!(k3.public_key_spki(), k1.public_key_spki());
        assert_eq!(mode(&path), 0o600);
    }
    // A failing entropy source is an error with the crate cause, and writes nothing.
    std::fs::remove_file(&path).unwrap();
    let e = store
        .load_or_generate_key_cache(|_| Err(kubeboot::Error::InsufficientEntropy))
        .unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::KeyGeneration);
    assert_eq!(e.cause(), Some(kubeboot::Error::InsufficientEntropy));
    assert!(!path.exists());
    store.load_or_generate_key_cache(urandom).unwrap();
    store.remove_key_cache().unwrap();
    assert!(!path.exists());
    store.remove_key_cache().unwrap();
}

#[test]
fn bootstrap_key_prefers_current_pair() {
    let f = fixtures();
    let d = TempDir::new("store-bootkey");
    let store = CertStore::open(PREFIX_CLIENT, &d.0).unwrap();
    let (k, src) = store.bootstrap_key(urandom).unwrap();
    assert_eq!(src, KeySource::Cache(KeyCacheOutcome::Generated));
    let (k2, src) = store.bootstrap_key(urandom).unwrap();
    assert_eq!(src, KeySource::Cache(KeyCacheOutcome::Loaded));
    assert_eq!(k.public_key_spki(), k2.public_key_spki());
    store.update(&ts("2024-01-04-22-29-37"), &f.b_cert, &f.b_key).unwrap();
    let (k3, src) = store.bootstrap_key(|_| panic!("no generation")).unwrap();
    assert_eq!(src, KeySource::CurrentPair);
    assert_eq!(k3.public_key_spki().as_slice(), store.current().unwrap().leaf_spki());
}
