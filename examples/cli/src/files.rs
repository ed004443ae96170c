//! File helpers: private files are created 0600, replaced atomically, never half-written.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::Rejected;

/// Fill `buf` from the operating system's CSPRNG.
pub fn os_entropy(buf: &mut [u8]) -> kubeboot::Result<()> {
    getrandom::fill(buf).map_err(|_| kubeboot::Error::InsufficientEntropy)
}

/// Read a whole file, naming it in the error.
pub fn read(path: &Path) -> Result<Vec<u8>, Rejected> {
    fs::read(path).map_err(|e| Rejected::from(format!("{}: {e}", path.display())))
}

/// Write `data` to `path` with mode 0600. Without `force` an existing file is an error and is
/// left alone; with `force` the new content replaces it atomically (temp file, fsync, rename).
pub fn write_private(path: &Path, data: &[u8], force: bool) -> Result<(), Rejected> {
    write_mode(path, data, force, 0o600)
}

/// [`write_private`] for what is not secret (a certificate): mode 0644.
pub fn write_public(path: &Path, data: &[u8], force: bool) -> Result<(), Rejected> {
    write_mode(path, data, force, 0o644)
}

fn write_mode(path: &Path, data: &[u8], force: bool, mode: u32) -> Result<(), Rejected> {
    let fail = |e: std::io::Error| Rejected::from(format!("{}: {e}", path.display()));
    if !force {
        let mut f =
            OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(|e| {
                match e.kind() {
                    std::io::ErrorKind::AlreadyExists => Rejected::from(format!(
                        "{}: exists (use --force to replace it)",
                        path.display()
                    )),
                    _ => fail(e),
                }
            })?;
        if let Err(e) = f.write_all(data).and_then(|()| f.sync_all()) {
            let _ = fs::remove_file(path);
            return Err(fail(e));
        }
        return Ok(());
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| Rejected::from(format!("{}: not a file path", path.display())))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f: File = OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok::<(), std::io::Error>(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(())
}
