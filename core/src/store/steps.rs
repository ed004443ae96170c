//! The agent's file steps, performed on a real (or test) filesystem.

use super::*;

/// Executes the node agent's reads and [`FileStep`]s ([`crate::agent`]) on a file system, with
/// the crash-safety this module documents: every write through [`write_atomic`], the symlink swap
/// as [`CertStore::update`] does it, recovery as [`CertStore::open`] does it. The Rust CLI and
/// the C ABI's std build (so the C and Go agents) use it; an embedded caller implements the
/// steps over its own flash.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileSteps<F: Fs = StdFs> {
    pub(super) fs: F,
}

impl FileSteps<StdFs> {
    /// On the real file system.
    pub fn new() -> Self {
        FileSteps { fs: StdFs }
    }
}

impl<F: Fs> FileSteps<F> {
    /// Over `fs` (tests inject faults here).
    pub fn with_fs(fs: F) -> Self {
        FileSteps { fs }
    }

    /// Read a whole file for [`crate::agent::Agent::on_read`]: at most `max_len` bytes (else
    /// [`StoreErrorKind::FileTooLarge`]). The buffer is wiped when dropped (the file may hold a
    /// key).
    pub fn read(&self, path: &Path, max_len: usize) -> StoreResult<Zeroizing<Vec<u8>>> {
        match self.fs.metadata(path) {
            Ok(FileKind::File { len }) if len > max_len as u64 => {
                return Err(StoreError::new(StoreErrorKind::FileTooLarge, Some(path)));
            }
            Ok(FileKind::File { .. }) => {}
            Ok(_) => return Err(StoreError::new(StoreErrorKind::Io, Some(path))),
            Err(e) => return Err(StoreError::io(path, &e)),
        }
        let data = Zeroizing::new(self.fs.read(path).map_err(|e| StoreError::io(path, &e))?);
        if data.len() > max_len {
            return Err(StoreError::new(StoreErrorKind::FileTooLarge, Some(path)));
        }
        Ok(data)
    }

    /// Perform the agent's outstanding [`Read`](crate::agent::Action::Read) or
    /// [`File`](crate::agent::Action::File) action and answer it. `None` when neither is
    /// outstanding; else the outcome, whose error (with its path and OS error) is for printing —
    /// the agent already got its kind. A read of a missing file is `Ok` here: the agent was told
    /// [`StoreErrorKind::NotFound`], which is an answer, not a fault.
    pub fn perform(
        &self,
        agent: &mut crate::agent::Agent<'_>,
        now: i64,
    ) -> Option<StoreResult<()>> {
        use crate::agent::Action;
        enum Done {
            Read(StoreResult<Zeroizing<Vec<u8>>>),
            File(StoreResult<()>, bool),
        }
        let done = match agent.outstanding()? {
            Action::Read(r) => Done::Read(self.read(Path::new(r.path), r.max_len)),
            Action::File(step) => {
                Done::File(self.execute(&step), matches!(step, FileStep::Recover { .. }))
            }
            _ => return None,
        };
        Some(match done {
            Done::Read(result) => {
                match &result {
                    Ok(bytes) => agent.on_read(now, Ok(bytes)),
                    Err(e) => agent.on_read(now, Err(e.reported_kind())),
                }
                // A file that is not there is an answer, not an error worth printing.
                match result {
                    Err(e) if e.reported_kind() != StoreErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                }
            }
            Done::File(result, recover) => {
                agent.on_file_done(
                    now,
                    result.as_ref().map(|_| ()).map_err(StoreError::reported_kind),
                );
                // Recovering a store whose directory does not exist yet is an answer too.
                match result {
                    Err(e) if recover && e.reported_kind() == StoreErrorKind::NotFound => Ok(()),
                    r => r,
                }
            }
        })
    }

    /// Execute one step; see [`FileStep`] for what each must do.
    pub fn execute(&self, step: &FileStep<'_>) -> StoreResult<()> {
        let p = |s: &str| PathBuf::from(s);
        match *step {
            FileStep::Recover { dir, prefix } => {
                let dir = p(dir);
                match self.fs.metadata(&dir) {
                    Ok(FileKind::Dir) => {}
                    Ok(_) => return Err(StoreError::new(StoreErrorKind::Io, Some(&dir))),
                    Err(e) => return Err(StoreError::io(&dir, &e)),
                }
                let store =
                    CertStore { fs: &self.fs, prefix: prefix.to_owned(), dir, explicit: None };
                store.recover()
            }
            FileStep::CreateDir { path } => {
                let path = p(path);
                self.fs.create_dir_all(&path, DIR_MODE).map_err(|e| StoreError::io(&path, &e))
            }
            FileStep::WriteKeyCache { path, pem } => self.write(&p(path), pem, |back| {
                crate::keyref::check_key_pem(back)
                    .map(|_| ())
                    .map_err(|_| StoreErrorKind::MalformedKey)
            }),
            FileStep::WritePair { path, content } => {
                self.write(&p(path), content, |back| load_pair(back, back).map(|_| ()))
            }
            FileStep::SwapCurrent { current, updated, target } => {
                self.swap(&p(current), &p(updated), &p(target))
            }
            FileStep::WriteKubeconfig { path, content }
            | FileStep::WriteBootstrapKubeconfig { path, content } => {
                let path = p(path);
                if let Some(parent) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    self.fs
                        .create_dir_all(parent, 0o755)
                        .map_err(|e| StoreError::io(parent, &e))?;
                }
                self.write(&path, content, |_| Ok(()))
            }
            FileStep::WriteCa { path, content } => self.write(&p(path), content, |back| {
                // Read back: the CA certificates, every one whole.
                let mut blocks = crate::pem::blocks(back);
                match blocks.all(|b| b.is_ok()) && crate::pem::blocks(back).next().is_some() {
                    true => Ok(()),
                    false => Err(StoreErrorKind::NoCertificates),
                }
            }),
            FileStep::RemoveKeyCache { path } => {
                let path = p(path);
                match self.fs.remove_file(&path) {
                    Ok(()) => {
                        let dir = path.parent().unwrap_or(Path::new("/"));
                        self.fs.sync_dir(dir).map_err(|e| StoreError::io(dir, &e))
                    }
                    Err(e) if not_found(&e) => Ok(()),
                    Err(e) => Err(StoreError::io(&path, &e)),
                }
            }
            FileStep::RemoveDir { path } => {
                let path = p(path);
                match self.fs.remove_dir(&path) {
                    Ok(()) => Ok(()),
                    Err(e) if not_found(&e) => Ok(()),
                    Err(e) => Err(StoreError::io(&path, &e)),
                }
            }
            FileStep::PrunePairs { dir, prefix, keep } => self.prune(&p(dir), prefix, &p(keep)),
        }
    }

    /// [`FileStep::PrunePairs`]: every data file of the store but `keep`, then the directory
    /// synced; the first error is returned after the others were tried.
    fn prune(&self, dir: &Path, prefix: &str, keep: &Path) -> StoreResult<()> {
        let names = match self.fs.read_dir(dir) {
            Ok(n) => n,
            Err(e) => return Err(StoreError::io(dir, &e)),
        };
        let mut first = None;
        let mut removed = false;
        for name in names {
            let Some(name) = name.to_str() else { continue };
            let path = dir.join(name);
            if !crate::agent::is_pair_file_name(prefix, name) || path == keep {
                continue;
            }
            // Only regular files: a symlink or a directory of that name is not ours.
            match self.fs.symlink_metadata(&path) {
                Ok(FileKind::File { .. }) => {}
                Ok(_) => continue,
                Err(e) if not_found(&e) => continue,
                Err(e) => {
                    first.get_or_insert(StoreError::io(&path, &e));
                    continue;
                }
            }
            match self.fs.remove_file(&path) {
                Ok(()) => removed = true,
                Err(e) if not_found(&e) => {}
                Err(e) => {
                    first.get_or_insert(StoreError::io(&path, &e));
                }
            }
        }
        if removed {
            if let Err(e) = self.fs.sync_dir(dir) {
                first.get_or_insert(StoreError::io(dir, &e));
            }
        }
        first.map_or(Ok(()), Err)
    }

    pub(super) fn write(
        &self,
        path: &Path,
        data: &[u8],
        check: impl Fn(&[u8]) -> Result<(), StoreErrorKind>,
    ) -> StoreResult<()> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        write_atomic(&self.fs, dir, path, data, check)
    }

    /// `updated` → `target`, renamed over `current`, after checking both are symlinks or absent
    /// and `target` is a file.
    pub(super) fn swap(&self, current: &Path, updated: &Path, target: &Path) -> StoreResult<()> {
        match self.fs.symlink_metadata(current) {
            Ok(FileKind::Symlink) => {}
            Ok(_) => return Err(StoreError::new(StoreErrorKind::CurrentNotSymlink, Some(current))),
            Err(e) if not_found(&e) => {}
            Err(e) => return Err(StoreError::io(current, &e)),
        }
        let updated_exists = match self.fs.symlink_metadata(updated) {
            Ok(FileKind::Symlink) => true,
            Ok(_) => return Err(StoreError::new(StoreErrorKind::UpdatedNotSymlink, Some(updated))),
            Err(e) if not_found(&e) => false,
            Err(e) => return Err(StoreError::io(updated, &e)),
        };
        match self.fs.metadata(target) {
            Ok(FileKind::File { .. }) => {}
            Ok(_) => return Err(StoreError::new(StoreErrorKind::Io, Some(target))),
            Err(e) => return Err(StoreError::io(target, &e)),
        }
        swap_current(&self.fs, current, updated, target, updated_exists)
    }
}

/// The last part of a store update (client-go's `updateSymlink`, without its window): remove a
/// stale `updated` symlink, create `updated` → `target` (absolute), rename it over `current`
/// (atomic: there is always a `current`), fsync the directory.
pub(super) fn swap_current<F: Fs>(
    fs: &F,
    current: &Path,
    updated: &Path,
    target: &Path,
    updated_exists: bool,
) -> StoreResult<()> {
    if updated_exists {
        fs.remove_file(updated).map_err(|e| StoreError::io(updated, &e))?;
    }
    fs.symlink(target, updated).map_err(|e| StoreError::io(updated, &e))?;
    if let Err(e) = fs.rename(updated, current) {
        let _ = fs.remove_file(updated);
        return Err(StoreError::io(current, &e));
    }
    let dir = current.parent().unwrap_or(Path::new("/"));
    fs.sync_dir(dir).map_err(|e| StoreError::io(dir, &e))
}
