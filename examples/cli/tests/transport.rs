//! `kubeboot bootstrap` against servers that fail at the transport level (the protocol itself is
//! proven against the real apiserver in e2e/): a port that drops every connection, and a TLS
//! server whose certificate the bootstrap kubeconfig's CA did not issue. The agent retries with
//! backoff, gives up at `--wait`, says why, and leaves no file behind.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_kubeboot");

struct Dir(PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("kubeboot-tr-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ossl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl").args(args).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn kubectl(dir: &Path, args: &[&str]) {
    let o = Command::new("kubectl").args(args).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// A bootstrap kubeconfig written by the real kubectl, pointing at `server` and trusting `ca`.
fn bootstrap_kubeconfig(dir: &Path, server: &str, ca: &str) -> PathBuf {
    let kc = dir.join("bootstrap.kubeconfig");
    let k = kc.to_str().unwrap();
    kubectl(
        dir,
        &[
            "config",
            "set-cluster",
            "kubernetes",
            "--server",
            server,
            "--certificate-authority",
            ca,
            "--embed-certs=true",
            "--kubeconfig",
            k,
        ],
    );
    kubectl(
        dir,
        &[
            "config",
            "set-credentials",
            "kubelet-bootstrap",
            "--token",
            "abcdef.0123456789abcdef",
            "--kubeconfig",
            k,
        ],
    );
    kubectl(
        dir,
        &[
            "config",
            "set-context",
            "default",
            "--cluster",
            "kubernetes",
            "--user",
            "kubelet-bootstrap",
            "--kubeconfig",
            k,
        ],
    );
    kubectl(dir, &["config", "use-context", "default", "--kubeconfig", k]);
    kc
}

fn run_bootstrap(dir: &Path, kc: &Path) -> (i32, String, String, Duration) {
    let start = Instant::now();
    let o = Command::new(BIN)
        .args([
            "bootstrap",
            "--bootstrap-kubeconfig",
            kc.to_str().unwrap(),
            "--kubeconfig",
            dir.join("kubelet.conf").to_str().unwrap(),
            "--cert-dir",
            dir.join("pki").to_str().unwrap(),
            "--node-name",
            "node-t",
            "--wait",
            "8s",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        start.elapsed(),
    )
}

fn assert_nothing_written(dir: &Path) {
    assert!(
        !dir.join("pki").exists(),
        "cert dir left behind: {:?}",
        std::fs::read_dir(dir.join("pki")).map(|d| d.count())
    );
    assert!(!dir.join("kubelet.conf").exists(), "kubeconfig written");
}

#[test]
fn connection_dropped_retries_then_times_out_and_changes_nothing() {
    let d = Dir::new("drop");
    ossl(&d.0, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"]);
    ossl(
        &d.0,
        &[
            "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=ca", "-days", "2", "-out",
            "ca.crt",
        ],
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(s);
        }
    });
    let kc = bootstrap_kubeconfig(&d.0, &format!("https://127.0.0.1:{port}"), "ca.crt");
    let (code, out, err, took) = run_bootstrap(&d.0, &kc);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("step=transport-error"), "{out}");
    assert!(out.contains("step=retry"), "{out}");
    assert!(err.contains("timed out waiting for the certificate"), "{err}");
    assert!(took >= Duration::from_secs(7), "gave up too early: {took:?}");
    // Retried (health checks plus CSR creation attempts with backoff), but boundedly.
    let n = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!((3..200).contains(&n), "{n} connections");
    assert!(
        !err.contains("0123456789abcdef") && !out.contains("0123456789abcdef"),
        "token secret printed"
    );
    assert_nothing_written(&d.0);
}

#[test]
fn untrusted_server_certificate_is_refused() {
    let d = Dir::new("tls");
    // The kubeconfig trusts ca.crt; the server presents a certificate from other.crt.
    ossl(&d.0, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"]);
    ossl(
        &d.0,
        &[
            "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=ca", "-days", "2", "-out",
            "ca.crt",
        ],
    );
    ossl(&d.0, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "srv.key"]);
    ossl(
        &d.0,
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            "srv.key",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-days",
            "2",
            "-out",
            "srv.crt",
        ],
    );
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Kill(
        Command::new("openssl")
            .args([
                "s_server",
                "-quiet",
                "-www",
                "-accept",
                &port.to_string(),
                "-cert",
                "srv.crt",
                "-key",
                "srv.key",
            ])
            .current_dir(&d.0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Wait until it listens.
    for _ in 0..50 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let kc = bootstrap_kubeconfig(&d.0, &format!("https://127.0.0.1:{port}"), "ca.crt");
    let (code, out, err, _) = run_bootstrap(&d.0, &kc);
    drop(server);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("step=transport-error"), "{out}");
    assert!(
        out.to_lowercase().contains("certificate") || out.to_lowercase().contains("tls"),
        "{out}"
    );
    assert_nothing_written(&d.0);
}
