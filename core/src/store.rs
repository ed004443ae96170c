//! (feature `std`, Unix) The kubelet's certificate directory, written crash-safely.
//!
//! The on-disk layout is the one client-go's `certificate.NewFileStore` uses
//! (util/certificate/certificate_store.go), so a kubelet, kubectl or any Go tool reading the same
//! directory sees the same thing:
//!
//! ```text
//! <dir>/<prefix>-YYYY-MM-DD-HH-MM-SS.pem   data files: CERTIFICATE block(s), leaf first, then the key
//! <dir>/<prefix>-current.pem -> /abs/<dir>/<prefix>-<ts>.pem   absolute symlink, what kubeconfigs name
//! <dir>/<prefix>-updated.pem               transient symlink during a swap
//! <dir>/<prefix>.crt + <dir>/<prefix>.key  legacy (pre-1.11) layout, read but never written
//! <dir>/<prefix>.key.tmp                   path-B key cache (`kubelet-client.key.tmp`)
//! ```
//!
//! Prefixes in use upstream are `kubelet-client` and `kubelet-server`. The timestamp is the
//! caller's **local** wall-clock time (Go `time.Now().Format("2006-01-02-15-04-05")`); the crate
//! has no clock, so the caller passes a [`Timestamp`].
//!
//! # Crash safety ([`CertStore::update`])
//!
//! 1. The new certificate chain and key are parsed and checked (≥ 1 certificate, the key matches
//!    the leaf's public key) **before anything on disk changes**.
//! 2. The cert dir is created (mode `0700`) if missing.
//! 3. The combined file is written to a hidden temporary name (`.<prefix>-<ts>.pem.kubeboot-tmp`,
//!    mode `0600`), `fsync`ed, read back and checked again (bytes equal, key matches leaf), then
//!    renamed to `<prefix>-<ts>.pem` and the directory is `fsync`ed.
//! 4. The absolute symlink `<prefix>-updated.pem` is created and atomically renamed over
//!    `<prefix>-current.pem`; the directory is `fsync`ed.
//!
//! A crash or error at any point leaves `-current.pem` pointing at either the old pair or the
//! complete, synced new pair — never at a missing, empty or half-written file (the failure of
//! kubernetes PR #131111). Kubeconfigs should always name [`CertStore::current_path`], never a
//! data file (the v1.10 bug, fixed by kubernetes/kubernetes#62152).
//!
//! # Differences from upstream (all compatible with Go readers)
//!
//! - The cert dir is created `0700`, stricter than upstream's `0755`; an existing dir is left as is.
//! - The symlink swap is `rename(updated, current)` without unlinking `current` first, so there is
//!   no window without `-current.pem`. Recovery of upstream's window is still done at open.
//! - The data file is written under a temporary name and renamed into place, so a second update in
//!   the same second replaces the file atomically instead of truncating the live file.
//! - From the key input, the first private-key block (`* PRIVATE KEY`) is written, not simply the
//!   first block: `openssl ecparam -genkey` output starts with `EC PARAMETERS`.
//! - An empty or corrupt key cache is regenerated instead of failing bootstrap until someone
//!   deletes it (upstream's `error loading key from <path>: <nil>` gotcha in bootstrap.go
//!   LoadClientCert).
//! - The key/certificate match check covers ECDSA P-256 and RSA keys (what kubelets hold); other
//!   key types are refused with [`StoreErrorKind::UnsupportedKey`].
//! - The cert dir is made absolute once, at open (`std::path::absolute`, no symlink resolution,
//!   like Go's `filepath.Abs`), so the symlink target never depends on a later working directory
//!   (kubernetes PR #54979).
//!
//! One writer per directory is assumed (as upstream): [`CertStore::open`] removes this store's
//! stale temporary files.
//!
//! # Fault injection
//!
//! Every filesystem call goes through the [`Fs`] trait; [`StdFs`] is the real one. Tests wrap it
//! to fail or "crash" at the N-th call and check that recovery always finds a working pair.

use crate::agent::FileStep;
use crate::error::Error;
use crate::key::{NodeKey, SEC1_PEM_LEN};
use crate::out::Filled;
use crate::pem::{self, PemBlock};
use core::fmt;
use core::str::FromStr;
use std::borrow::ToOwned;
use std::ffi::OsString;
use std::format;
use std::io;
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec;
use std::vec::Vec;
use zeroize::Zeroizing;

mod fs;
mod pair;
mod steps;
mod timestamp;

pub use fs::{FileKind, Fs, StdFs};
use pair::*;
pub use steps::FileSteps;
use steps::*;
pub use timestamp::Timestamp;

/// Mode of the cert dir when this store creates it.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file this store writes (data files and the key cache).
pub const FILE_MODE: u32 = 0o600;
/// Suffix of this store's temporary files (`.<final name>.kubeboot-tmp`).
pub const TMP_SUFFIX: &str = ".kubeboot-tmp";
/// The prefix of the kubelet client certificate store.
pub const PREFIX_CLIENT: &str = "kubelet-client";
/// The prefix of the kubelet serving certificate store.
pub const PREFIX_SERVER: &str = "kubelet-server";

const LABEL_CERTIFICATE: &str = "CERTIFICATE";

// ---------------------------------------------------------------------------------------------
// Errors

pub use crate::error::StoreErrorKind;

/// A certificate store error: the kind, the path involved, the OS error kind and the crate error
/// behind it, if any. Never contains key material.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    kind: StoreErrorKind,
    path: Option<PathBuf>,
    io: Option<io::ErrorKind>,
    cause: Option<Error>,
}

impl StoreError {
    fn new(kind: StoreErrorKind, path: Option<&Path>) -> Self {
        StoreError { kind, path: path.map(Path::to_path_buf), io: None, cause: None }
    }

    fn io(path: &Path, e: &io::Error) -> Self {
        StoreError {
            kind: StoreErrorKind::Io,
            path: Some(path.to_path_buf()),
            io: Some(e.kind()),
            cause: None,
        }
    }

    fn with_cause(mut self, cause: Error) -> Self {
        self.cause = Some(cause);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The file or directory involved.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The OS error kind, for [`StoreErrorKind::Io`].
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        self.io
    }

    /// The crate-level error behind this one (e.g. [`Error::BadEntropy`]), if any.
    pub fn cause(&self) -> Option<Error> {
        self.cause
    }

    /// The kind as the agent is told it: an [`StoreErrorKind::Io`] that is a missing file or a
    /// refused access is [`StoreErrorKind::NotFound`] / [`StoreErrorKind::PermissionDenied`].
    pub fn reported_kind(&self) -> StoreErrorKind {
        match (self.kind, self.io) {
            (StoreErrorKind::Io, Some(io::ErrorKind::NotFound)) => StoreErrorKind::NotFound,
            (StoreErrorKind::Io, Some(io::ErrorKind::PermissionDenied)) => {
                StoreErrorKind::PermissionDenied
            }
            (k, _) => k,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.message())?;
        if let Some(p) = &self.path {
            write!(f, " at {}", p.display())?;
        }
        if let Some(io) = self.io {
            write!(f, ": {io}")?;
        }
        if let Some(c) = self.cause {
            write!(f, ": {c}")?;
        }
        Ok(())
    }
}

impl std::error::Error for StoreError {}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        Error::Store(e.kind)
    }
}

/// Result alias for store operations.
pub type StoreResult<T> = core::result::Result<T, StoreError>;

// ---------------------------------------------------------------------------------------------
// Filesystem abstraction
// ---------------------------------------------------------------------------------------------
// Public result types

/// Where [`CertStore::current`] found the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `<prefix>-current.pem` (combined cert + key).
    Current,
    /// The explicit cert and key files given at open.
    Explicit,
    /// Legacy `<prefix>.crt` + `<prefix>.key`.
    Legacy,
}

/// A loaded certificate/key pair whose key is known to match the leaf. `Debug` omits the key.
pub struct Credentials {
    source: Source,
    cert_path: PathBuf,
    key_path: PathBuf,
    pair: Pair,
}

impl Credentials {
    /// Where the pair came from.
    pub fn source(&self) -> Source {
        self.source
    }
    /// The file the certificates were read from (for [`Source::Current`], the symlink path).
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }
    /// The file the key was read from.
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }
    /// All `CERTIFICATE` blocks, leaf first, re-encoded as PEM.
    pub fn chain_pem(&self) -> &[u8] {
        &self.pair.chain_pem
    }
    /// The leaf certificate's DER.
    pub fn leaf_der(&self) -> &[u8] {
        &self.pair.leaf_der
    }
    /// The leaf's SubjectPublicKeyInfo DER.
    pub fn leaf_spki(&self) -> &[u8] {
        &self.pair.leaf_spki
    }
    /// The leaf's notBefore (unix seconds).
    pub fn not_before(&self) -> i64 {
        self.pair.not_before
    }
    /// The leaf's notAfter (unix seconds). The store does not check expiry (like upstream).
    pub fn not_after(&self) -> i64 {
        self.pair.not_after
    }
    /// The private-key PEM block, as stored. Secret: do not log.
    pub fn key_pem(&self) -> &[u8] {
        &self.pair.key_pem
    }
    /// The key as a P-256 [`NodeKey`] ([`Error::UnsupportedKey`] for RSA).
    pub fn node_key(&self) -> crate::Result<NodeKey> {
        NodeKey::from_pem(&self.pair.key_pem)
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("source", &self.source)
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .field("not_before", &self.pair.not_before)
            .field("not_after", &self.pair.not_after)
            .field("key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// What [`CertStore::load_or_generate_key_cache`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCacheOutcome {
    /// An existing cache file held a P-256 key; it was reused.
    Loaded,
    /// There was no cache file; a key was generated and written.
    Generated,
    /// The cache file was empty, corrupt or not a P-256 key; a new key replaced it.
    Regenerated,
}

/// Where [`CertStore::bootstrap_key`] got the key (bootstrap.go LoadClientCert's key cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// The key of the pair [`CertStore::current`] loads (reused even if the cert has expired).
    CurrentPair,
    /// The path-B key cache.
    Cache(KeyCacheOutcome),
}

// ---------------------------------------------------------------------------------------------
// The store

/// A kubelet-style certificate directory for one prefix. See the [module docs](self).
#[derive(Debug)]
pub struct CertStore<F: Fs = StdFs> {
    fs: F,
    prefix: String,
    dir: PathBuf,
    explicit: Option<(PathBuf, PathBuf)>,
}

impl CertStore<StdFs> {
    /// Open the store `<cert_dir>/<prefix>-*.pem` on the real filesystem and run recovery.
    pub fn open(prefix: &str, cert_dir: impl AsRef<Path>) -> StoreResult<Self> {
        CertStore::open_with(StdFs, prefix, cert_dir.as_ref(), None)
    }
}

fn not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

impl<F: Fs> CertStore<F> {
    /// Open a store over `fs`. `explicit` is an optional `(cert_file, key_file)` pair consulted
    /// after `-current.pem` (the kubelet's `tlsCertFile`/`tlsPrivateKeyFile` for the serving
    /// store). `cert_dir` is made absolute against the current directory now.
    ///
    /// Recovery: if `-current.pem` does not resolve and `-updated.pem` is a symlink, it is renamed
    /// to `-current.pem`; if `-updated.pem` is anything else, [`StoreErrorKind::UpdatedNotSymlink`].
    /// This store's stale temporary files are removed. A missing cert dir is not an error.
    pub fn open_with(
        fs: F,
        prefix: &str,
        cert_dir: &Path,
        explicit: Option<(PathBuf, PathBuf)>,
    ) -> StoreResult<Self> {
        let bad_prefix = prefix.is_empty()
            || prefix.starts_with('.')
            || prefix.contains('/')
            || prefix.contains('\0');
        if bad_prefix {
            return Err(StoreError::new(StoreErrorKind::InvalidPrefix, None));
        }
        let dir = std::path::absolute(cert_dir).map_err(|e| StoreError::io(cert_dir, &e))?;
        let store = CertStore { fs, prefix: prefix.to_owned(), dir, explicit };
        store.recover()?;
        Ok(store)
    }

    /// The filesystem implementation.
    pub fn fs(&self) -> &F {
        &self.fs
    }

    /// The store prefix (`kubelet-client`, ...).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The absolute cert dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, qualifier: &str) -> PathBuf {
        self.dir.join(format!("{}-{}.pem", self.prefix, qualifier))
    }

    /// `<dir>/<prefix>-current.pem` (absolute): what a kubeconfig's `client-certificate` and
    /// `client-key` should both name.
    pub fn current_path(&self) -> PathBuf {
        self.file("current")
    }

    /// `<dir>/<prefix>-updated.pem`, the transient symlink.
    pub fn updated_path(&self) -> PathBuf {
        self.file("updated")
    }

    /// `<dir>/<prefix>-<ts>.pem`, the data file an update at `ts` writes.
    pub fn data_path(&self, ts: &Timestamp) -> PathBuf {
        self.file(&format!("{ts}"))
    }

    /// The legacy `(<dir>/<prefix>.crt, <dir>/<prefix>.key)` pair.
    pub fn legacy_paths(&self) -> (PathBuf, PathBuf) {
        (
            self.dir.join(format!("{}.crt", self.prefix)),
            self.dir.join(format!("{}.key", self.prefix)),
        )
    }

    /// `<dir>/<prefix>.key.tmp`, the path-B key cache (`kubelet-client.key.tmp`).
    pub fn key_cache_path(&self) -> PathBuf {
        self.dir.join(format!("{}.key.tmp", self.prefix))
    }

    fn recover(&self) -> StoreResult<()> {
        let current = self.current_path();
        match self.fs.metadata(&current) {
            Ok(_) => {}
            Err(e) if not_found(&e) => {
                let updated = self.updated_path();
                match self.fs.symlink_metadata(&updated) {
                    Ok(FileKind::Symlink) => {
                        self.fs
                            .rename(&updated, &current)
                            .map_err(|e| StoreError::io(&updated, &e))?;
                        self.fs.sync_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, &e))?;
                    }
                    Ok(_) => {
                        return Err(StoreError::new(
                            StoreErrorKind::UpdatedNotSymlink,
                            Some(&updated),
                        ));
                    }
                    Err(e) if not_found(&e) => {}
                    Err(e) => return Err(StoreError::io(&updated, &e)),
                }
            }
            Err(e) => return Err(StoreError::io(&current, &e)),
        }
        self.remove_stale_temps()
    }

    fn remove_stale_temps(&self) -> StoreResult<()> {
        let names = match self.fs.read_dir(&self.dir) {
            Ok(n) => n,
            Err(e) if not_found(&e) => return Ok(()),
            Err(e) => return Err(StoreError::io(&self.dir, &e)),
        };
        let ours = format!(".{}", self.prefix);
        for name in names {
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(&ours) && name.ends_with(TMP_SUFFIX) {
                let p = self.dir.join(name);
                match self.fs.remove_file(&p) {
                    Err(e) if !not_found(&e) => return Err(StoreError::io(&p, &e)),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn read_opt(&self, path: &Path) -> StoreResult<Option<Vec<u8>>> {
        match self.fs.read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(StoreError::io(path, &e)),
        }
    }

    fn exists(&self, path: &Path) -> StoreResult<bool> {
        match self.fs.metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(StoreError::io(path, &e)),
        }
    }

    fn load_files(&self, source: Source, cert: &Path, key: &Path) -> StoreResult<Credentials> {
        // `-current.pem` holds the key too: both buffers are wiped when dropped.
        let cert_bytes = Zeroizing::new(self.fs.read(cert).map_err(|e| StoreError::io(cert, &e))?);
        let key_bytes = Zeroizing::new(self.fs.read(key).map_err(|e| StoreError::io(key, &e))?);
        let pair = load_pair(&cert_bytes, &key_bytes).map_err(|k| {
            let at = if matches!(
                k,
                StoreErrorKind::NoCertificates | StoreErrorKind::MalformedCertificate
            ) {
                cert
            } else {
                key
            };
            StoreError::new(k, Some(at))
        })?;
        Ok(Credentials { source, cert_path: cert.to_path_buf(), key_path: key.to_path_buf(), pair })
    }

    /// The current pair, looked up as upstream's `Current()`: `-current.pem` if it resolves, else
    /// the explicit files if both exist, else legacy `<prefix>.crt` + `<prefix>.key` if both
    /// exist, else [`StoreErrorKind::NoCertKeyFiles`]. The first existing candidate must load
    /// (certificates, a private key matching the leaf), otherwise its error is returned. Expiry is
    /// not checked.
    pub fn current(&self) -> StoreResult<Credentials> {
        let current = self.current_path();
        if self.exists(&current)? {
            return self.load_files(Source::Current, &current, &current);
        }
        if let Some((c, k)) = &self.explicit {
            if self.exists(c)? && self.exists(k)? {
                return self.load_files(Source::Explicit, c, k);
            }
        }
        let (c, k) = self.legacy_paths();
        if self.exists(&c)? && self.exists(&k)? {
            return self.load_files(Source::Legacy, &c, &k);
        }
        Err(StoreError::new(StoreErrorKind::NoCertKeyFiles, Some(&self.dir)))
    }

    /// Write `data` to `path` crash-safely (see [`write_atomic`]).
    fn write_atomic(
        &self,
        path: &Path,
        data: &[u8],
        check: impl Fn(&[u8]) -> Result<(), StoreErrorKind>,
    ) -> StoreResult<()> {
        write_atomic(&self.fs, &self.dir, path, data, check)
    }

    /// Store a new pair (upstream `Update(certPEM, keyPEM)`) and point `-current.pem` at it.
    ///
    /// `cert_pem`'s `CERTIFICATE` blocks (leaf first, then intermediates in order; other blocks
    /// and blocks with headers skipped) are re-encoded, followed by the first private-key block
    /// of `key_pem` unchanged, into `<dir>/<prefix>-<ts>.pem` (0600). The input is checked first
    /// (≥ 1 certificate, the key matches the leaf): on failure nothing is written. See the
    /// [module docs](self) for the crash-safe sequence. Returns the data file path.
    ///
    /// If `-current.pem` exists and is not a symlink ([`StoreErrorKind::CurrentNotSymlink`]) or
    /// `-updated.pem` exists and is not a symlink ([`StoreErrorKind::UpdatedNotSymlink`]), nothing
    /// is written. A later error may leave an orphaned data file (old data files are never
    /// deleted, as upstream); `-current.pem` then still names the previous pair, unless the error
    /// came after the final rename, in which case it names the new one.
    pub fn update(&self, ts: &Timestamp, cert_pem: &[u8], key_pem: &[u8]) -> StoreResult<PathBuf> {
        let pair = load_pair(cert_pem, key_pem)
            .map_err(|k| StoreError::new(k, None).with_cause(crate_error(k)))?;
        let mut content =
            Zeroizing::new(Vec::with_capacity(pair.chain_pem.len() + pair.key_pem.len()));
        content.extend_from_slice(&pair.chain_pem);
        content.extend_from_slice(&pair.key_pem);

        self.fs.create_dir_all(&self.dir, DIR_MODE).map_err(|e| StoreError::io(&self.dir, &e))?;
        let current = self.current_path();
        let updated = self.updated_path();
        match self.fs.symlink_metadata(&current) {
            Ok(FileKind::Symlink) => {}
            Ok(_) => {
                return Err(StoreError::new(StoreErrorKind::CurrentNotSymlink, Some(&current)));
            }
            Err(e) if not_found(&e) => {}
            Err(e) => return Err(StoreError::io(&current, &e)),
        }
        let updated_exists = match self.fs.symlink_metadata(&updated) {
            Ok(FileKind::Symlink) => true,
            Ok(_) => {
                return Err(StoreError::new(StoreErrorKind::UpdatedNotSymlink, Some(&updated)));
            }
            Err(e) if not_found(&e) => false,
            Err(e) => return Err(StoreError::io(&updated, &e)),
        };

        let data_path = self.data_path(ts);
        let expect_leaf = pair.leaf_der;
        self.write_atomic(&data_path, &content, |back| {
            let p = load_pair(back, back)?;
            if p.leaf_der == expect_leaf { Ok(()) } else { Err(StoreErrorKind::ReadBackMismatch) }
        })?;

        // `data_path` is absolute because `self.dir` is.
        swap_current(&self.fs, &current, &updated, &data_path, updated_exists)?;
        Ok(data_path)
    }

    /// Path B's key cache (`LoadOrGenerateKeyFile(<dir>/<prefix>.key.tmp)`): reuse the P-256 key
    /// in the cache file, or generate one with `fill` (entropy callback, see
    /// [`NodeKey::generate`]) and write it as `EC PRIVATE KEY` PEM, mode 0600, atomically.
    ///
    /// Unlike upstream, an empty, corrupt or non-P-256 cache file is replaced by a new key
    /// ([`KeyCacheOutcome::Regenerated`]) instead of failing until someone deletes it.
    pub fn load_or_generate_key_cache(
        &self,
        fill: impl FnMut(&mut [u8]) -> crate::Result<()>,
    ) -> StoreResult<(NodeKey, KeyCacheOutcome)> {
        let path = self.key_cache_path();
        let outcome = match self.read_opt(&path)? {
            Some(bytes) => {
                let bytes = Zeroizing::new(bytes);
                if let Ok(key) = NodeKey::from_pem(&bytes) {
                    return Ok((key, KeyCacheOutcome::Loaded));
                }
                KeyCacheOutcome::Regenerated
            }
            None => KeyCacheOutcome::Generated,
        };
        let key = NodeKey::generate(fill).map_err(|e| {
            StoreError::new(StoreErrorKind::KeyGeneration, Some(&path)).with_cause(e)
        })?;
        let mut buf = Zeroizing::new(Filled::<SEC1_PEM_LEN>::new());
        let pem_bytes = buf.fill(|b| key.to_sec1_pem(b)).map_err(|e| {
            StoreError::new(StoreErrorKind::KeyGeneration, Some(&path)).with_cause(e)
        })?;
        self.fs.create_dir_all(&self.dir, DIR_MODE).map_err(|e| StoreError::io(&self.dir, &e))?;
        self.write_atomic(&path, pem_bytes, |back| {
            NodeKey::from_pem(back).map(|_| ()).map_err(|_| StoreErrorKind::MalformedKey)
        })?;
        Ok((key, outcome))
    }

    /// Delete the key cache (after a successful [`update`](Self::update)); a missing file is fine.
    pub fn remove_key_cache(&self) -> StoreResult<()> {
        let path = self.key_cache_path();
        match self.fs.remove_file(&path) {
            Ok(()) => self.fs.sync_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, &e)),
            Err(e) if not_found(&e) => Ok(()),
            Err(e) => Err(StoreError::io(&path, &e)),
        }
    }

    /// The key selection of bootstrap.go LoadClientCert: the key of the [`current`](Self::current)
    /// pair if it loads and is P-256 (even if the certificate has expired), else
    /// [`load_or_generate_key_cache`](Self::load_or_generate_key_cache).
    pub fn bootstrap_key(
        &self,
        fill: impl FnMut(&mut [u8]) -> crate::Result<()>,
    ) -> StoreResult<(NodeKey, KeySource)> {
        if let Ok(creds) = self.current() {
            if let Ok(key) = creds.node_key() {
                return Ok((key, KeySource::CurrentPair));
            }
        }
        let (key, outcome) = self.load_or_generate_key_cache(fill)?;
        Ok((key, KeySource::Cache(outcome)))
    }

    /// Read the target of `-current.pem` (absolute for links this store wrote).
    pub fn current_target(&self) -> StoreResult<PathBuf> {
        let current = self.current_path();
        self.fs.read_link(&current).map_err(|e| StoreError::io(&current, &e))
    }
}

/// Write `data` to `path` (in `dir`) crash-safely: a hidden temporary file
/// `.<name>.kubeboot-tmp` (mode 0600) in `dir`, fsync, read back (the bytes must equal `data`,
/// then `check` must accept them), rename into place, fsync `dir`. On error the temporary file is
/// removed (best effort) and `path` is untouched.
pub fn write_atomic<F: Fs>(
    fs: &F,
    dir: &Path,
    path: &Path,
    data: &[u8],
    check: impl Fn(&[u8]) -> Result<(), StoreErrorKind>,
) -> StoreResult<()> {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}{TMP_SUFFIX}"));
    let result = (|| {
        fs.create(&tmp, FILE_MODE).map_err(|e| StoreError::io(&tmp, &e))?;
        fs.write(&tmp, data).map_err(|e| StoreError::io(&tmp, &e))?;
        fs.sync_file(&tmp).map_err(|e| StoreError::io(&tmp, &e))?;
        let back = Zeroizing::new(fs.read(&tmp).map_err(|e| StoreError::io(&tmp, &e))?);
        if back.as_slice() != data {
            return Err(StoreError::new(StoreErrorKind::ReadBackMismatch, Some(&tmp)));
        }
        check(&back).map_err(|k| StoreError::new(k, Some(&tmp)))?;
        fs.rename(&tmp, path).map_err(|e| StoreError::io(path, &e))
    })();
    if result.is_err() {
        let _ = fs.remove_file(&tmp);
        return result;
    }
    fs.sync_dir(dir).map_err(|e| StoreError::io(dir, &e))
}

// ---------------------------------------------------------------------------------------------
// The agent's file steps
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_format_and_parse() {
        let ts = Timestamp::new(2024, 1, 4, 22, 29, 37).unwrap();
        assert_eq!(format!("{ts}"), "2024-01-04-22-29-37");
        assert_eq!(Timestamp::parse("2024-01-04-22-29-37").unwrap(), ts);
        assert_eq!("0999-12-31-00-00-00".parse::<Timestamp>().unwrap().year, 999);
        for bad in [
            "2024-01-04-22-29-3",
            "2024-01-04 22-29-37",
            "2024-13-04-22-29-37",
            "2023-02-29-00-00-00",
            "2024-01-04-24-00-00",
            "2024-01-04-23-60-00",
            "2024-01-04-23-00-60",
            "2024-01-00-23-00-00",
            "+024-01-04-22-29-37",
        ] {
            assert_eq!(
                Timestamp::parse(bad).unwrap_err().kind(),
                StoreErrorKind::InvalidTimestamp,
                "{bad}"
            );
        }
        assert!(Timestamp::parse("2024-02-29-00-00-00").is_ok());
    }

    #[test]
    fn timestamp_from_unix() {
        // 2024-01-04T22:29:37Z = 1704407377.
        let ts = Timestamp::from_unix(1_704_407_377, 0).unwrap();
        assert_eq!(format!("{ts}"), "2024-01-04-22-29-37");
        // Local time UTC+01:00 crosses midnight.
        let ts = Timestamp::from_unix(1_704_407_377, 3600 + 1800).unwrap();
        assert_eq!(format!("{ts}"), "2024-01-04-23-59-37");
        let ts = Timestamp::from_unix(1_704_407_377, 2 * 3600).unwrap();
        assert_eq!(format!("{ts}"), "2024-01-05-00-29-37");
        assert_eq!(format!("{}", Timestamp::from_unix(0, -1).unwrap()), "1969-12-31-23-59-59");
        assert_eq!(
            format!("{}", Timestamp::from_unix(951_782_400, 0).unwrap()),
            "2000-02-29-00-00-00"
        );
        assert!(Timestamp::from_unix(i64::MAX, 1).is_err());
        assert!(Timestamp::from_unix(253_402_300_800, 0).is_err()); // year 10000
    }

    #[test]
    fn store_error_display_names_path_and_io() {
        let e =
            StoreError::io(Path::new("/x/y"), &io::Error::from(io::ErrorKind::PermissionDenied));
        let s = format!("{e}");
        assert!(s.contains("/x/y") && s.contains("denied"), "{s}");
        let e = StoreError::new(StoreErrorKind::NoCertKeyFiles, Some(Path::new("/d")));
        assert_eq!(format!("{e}"), "no cert/key files read at /d");
    }

    #[test]
    fn bad_prefixes_refused() {
        for p in ["", ".x", "a/b", "a\0b"] {
            let e = CertStore::open(p, std::env::temp_dir()).unwrap_err();
            assert_eq!(e.kind(), StoreErrorKind::InvalidPrefix);
        }
    }

    #[test]
    fn garbage_certificates_do_not_parse() {
        assert!(parse_cert(&[]).is_none());
        assert!(parse_cert(&[0x30, 0x03, 0x02, 0x01, 0x01]).is_none());
        assert!(parse_cert(&[0x30, 0x80]).is_none());
        assert!(rsa_private_n_e(&[0x30, 0x00]).is_none());
        assert!(rsa_spki_n_e(&[0xff; 10]).is_none());
    }

    #[test]
    fn private_key_labels() {
        assert!(is_private_key_label("PRIVATE KEY"));
        assert!(is_private_key_label("EC PRIVATE KEY"));
        assert!(is_private_key_label("RSA PRIVATE KEY"));
        assert!(!is_private_key_label("EC PARAMETERS"));
        assert!(!is_private_key_label("ENCRYPTED PRIVATE KEYS"));
    }
}
