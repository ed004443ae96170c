//! Shared helpers for the cross-check tests: temp dirs and running external tools.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "kubeboot-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    pub fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, data).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Output of a finished command.
pub struct Out {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Out {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Run `prog args...` in `dir` with optional stdin; panics if the program cannot start.
pub fn run(dir: &Path, prog: &str, args: &[&str], stdin: Option<&[u8]>) -> Out {
    let mut child = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {prog}: {e}"));
    if let Some(data) = stdin {
        child.stdin.take().unwrap().write_all(data).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    Out {
        status: o.status.code().unwrap_or(-1),
        stdout: o.stdout,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Run and require success.
pub fn ok(dir: &Path, prog: &str, args: &[&str], stdin: Option<&[u8]>) -> Out {
    let o = run(dir, prog, args, stdin);
    assert_eq!(o.status, 0, "{prog} {args:?} failed: {}", o.stderr);
    o
}

/// Run a Python snippet with the system interpreter (Debian's python3-cryptography).
pub fn python(dir: &Path, script: &str, args: &[&str]) -> Out {
    let mut all = vec!["-c", script];
    all.extend_from_slice(args);
    ok(dir, "/usr/bin/python3", &all, None)
}

/// A file of `core/tests/data/`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// Run `cmd`, require success, return its stdout.
pub fn output(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Certificates generated for a test by a script of `tests/support/` (`script DIR NOW`), in a
/// directory of the build's scratch space that is replaced on every run: the node's key
/// `leaf.key` and another one `other.key` (P-256, made by OpenSSL) are there first.
pub struct Generated {
    pub dir: PathBuf,
    /// The time the certificates were made for (now, unix seconds).
    pub now: i64,
    /// `leaf.key`'s SubjectPublicKeyInfo DER.
    pub spki: Vec<u8>,
}

pub fn generate(name: &str, script: &str) -> Generated {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
        as i64;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for key in ["leaf.key", "other.key"] {
        output(
            Command::new("openssl")
                .args(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
                .arg("-out")
                .arg(dir.join(key)),
        );
    }
    let spki = output(
        Command::new("openssl")
            .args(["pkey", "-pubout", "-outform", "der", "-in"])
            .arg(dir.join("leaf.key")),
    );
    assert_eq!(spki.len(), 91);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support").join(script);
    output(Command::new("/usr/bin/python3").arg(script).arg(&dir).arg(now.to_string()));
    Generated { dir, now, spki }
}
