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
