//! The filesystem the store writes through (`Fs`), and the real one (`StdFs`).

use super::*;

/// What `stat`/`lstat` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file of `len` bytes.
    File {
        /// Size in bytes.
        len: u64,
    },
    /// A directory.
    Dir,
    /// A symbolic link (only from [`Fs::symlink_metadata`]).
    Symlink,
    /// Anything else (socket, device, fifo).
    Other,
}

/// The filesystem calls the store makes, one method per operation so that tests can fail or
/// "crash" at any single step. [`StdFs`] is the real implementation.
pub trait Fs {
    /// `mkdir -p` with `mode` for created directories.
    fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()>;
    /// Create or truncate `path` and set its permissions to `mode`.
    fn create(&self, path: &Path, mode: u32) -> io::Result<()>;
    /// Append `data` to the existing file `path`.
    fn write(&self, path: &Path, data: &[u8]) -> io::Result<()>;
    /// `fsync` the file `path` (data and metadata).
    fn sync_file(&self, path: &Path) -> io::Result<()>;
    /// `fsync` the directory `path`, making created/renamed/removed entries durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Create a symlink `link` holding `target`.
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()>;
    /// `rename(2)`: atomically replace `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Remove a file or symlink (not following it).
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Read a whole file (following symlinks).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Read a symlink's target.
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
    /// `stat`, following symlinks.
    fn metadata(&self, path: &Path) -> io::Result<FileKind>;
    /// `lstat`, not following symlinks.
    fn symlink_metadata(&self, path: &Path) -> io::Result<FileKind>;
    /// The entry names of a directory.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>>;
    /// Remove an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }
}

/// The real filesystem (`std::fs`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

pub(super) fn kind_of(m: &std::fs::Metadata) -> FileKind {
    let t = m.file_type();
    if t.is_symlink() {
        FileKind::Symlink
    } else if t.is_file() {
        FileKind::File { len: m.len() }
    } else if t.is_dir() {
        FileKind::Dir
    } else {
        FileKind::Other
    }
}

impl Fs for StdFs {
    fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(mode).create(path)
    }

    fn create(&self, path: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(path)?;
        // O_CREAT's mode is masked by the umask and ignored for an existing file.
        f.set_permissions(std::fs::Permissions::from_mode(mode))
    }

    fn write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
        f.write_all(data)
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        std::fs::OpenOptions::new().write(true).open(path)?.sync_all()
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::File::open(path)?.sync_all()
    }

    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }

    fn metadata(&self, path: &Path) -> io::Result<FileKind> {
        std::fs::metadata(path).map(|m| kind_of(&m))
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<FileKind> {
        std::fs::symlink_metadata(path).map(|m| kind_of(&m))
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            out.push(entry?.file_name());
        }
        Ok(out)
    }
}

/// [`Fs`] through a reference.
impl<F: Fs + ?Sized> Fs for &F {
    fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()> {
        (**self).create_dir_all(path, mode)
    }
    fn create(&self, path: &Path, mode: u32) -> io::Result<()> {
        (**self).create(path, mode)
    }
    fn write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        (**self).write(path, data)
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        (**self).sync_file(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        (**self).sync_dir(path)
    }
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        (**self).symlink(target, link)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        (**self).rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        (**self).remove_file(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        (**self).read(path)
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        (**self).read_link(path)
    }
    fn metadata(&self, path: &Path) -> io::Result<FileKind> {
        (**self).metadata(path)
    }
    fn symlink_metadata(&self, path: &Path) -> io::Result<FileKind> {
        (**self).symlink_metadata(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        (**self).read_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        (**self).remove_dir(path)
    }
}
