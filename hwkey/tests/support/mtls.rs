//! A mutual-TLS peer nobody here wrote, for a device key's handshake: OpenSSL makes a CA and a
//! server certificate for 127.0.0.1, issues a client certificate for a CSR the device signed, and
//! `openssl s_server -Verify 1 -verify_return_error -rev` checks the client certificate and
//! answers each line reversed; rustls with kubeboot-hwkey's client key connects to it. Shared by
//! `tests/devices.rs` and `examples/timing.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use kubeboot::csr::CsrBuilder;
use kubeboot_hwkey::SharedSigner;
use kubeboot_hwkey::tls::{DeviceSigningKey, client_config};

/// `openssl ARGS` in `dir`; panics with OpenSSL's message if it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("openssl {args:?}: {e}"));
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// In `dir`: a P-256 CA named `ca_cn` (`ca.crt`, `ca.key`) and a server certificate for the IP
/// 127.0.0.1 issued by it (`srv.crt`, `srv.key`), each valid two days.
pub fn pki(dir: &Path, ca_cn: &str) {
    let subject = format!("/CN={ca_cn}");
    openssl(
        dir,
        &[
            "req",
            "-x509",
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
            &subject,
            "-days",
            "2",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.crt",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
    );
}

/// A client certificate (PEM) for node `node`, issued by the CA of [`pki`] in `dir` for a CSR
/// that `signer` signed (`<node>.csr`, `<node>.crt`).
pub fn issue(dir: &Path, signer: &SharedSigner, node: &str) -> Vec<u8> {
    let mut csr = vec![0u8; 2048];
    let n = CsrBuilder::client(node).unwrap().write_pem(&**signer, &mut csr).unwrap();
    let (csr_file, crt_file) = (format!("{node}.csr"), format!("{node}.crt"));
    std::fs::write(dir.join(&csr_file), &csr[..n]).unwrap();
    openssl(
        dir,
        &[
            "x509", "-req", "-in", &csr_file, "-CA", "ca.crt", "-CAkey", "ca.key", "-out",
            &crt_file, "-days", "2",
        ],
    );
    std::fs::read(dir.join(&crt_file)).unwrap()
}

/// A rustls client that trusts the CA of [`pki`] in `dir` and presents `chain` with `signer`'s
/// key (`device` names it in errors). Resumption is off: every handshake is a full one, with a
/// CertificateVerify the device signs.
pub fn client(
    dir: &Path,
    chain: &[u8],
    signer: SharedSigner,
    device: &str,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let ca = std::fs::read(dir.join("ca.crt")).unwrap();
    let mut config = client_config(&ca, chain, DeviceSigningKey::new(signer, device))?;
    config.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(config))
}

/// `openssl s_server -Verify 1 -verify_return_error -rev` on a free port of 127.0.0.1 with the
/// certificates of [`pki`] in `dir`: it requires a client certificate from that CA and answers
/// each line reversed. Listening when `start` returns; stopped when dropped.
pub struct Server {
    child: Child,
    /// The port it accepts on.
    pub port: u16,
}

impl Server {
    /// Starts it and waits until it prints `ACCEPT` (it listens).
    pub fn start(dir: &Path) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new("openssl")
            .current_dir(dir)
            .args(["s_server", "-accept", &format!("127.0.0.1:{port}")])
            .args(["-cert", "srv.crt", "-key", "srv.key", "-CAfile", "ca.crt"])
            .args(["-Verify", "1", "-verify_return_error", "-rev"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while line.trim_end() != "ACCEPT" {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "openssl s_server exited before ACCEPT");
        }
        // The rest of its output is read and dropped, so that it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Server { child, port }
    }

    /// One connection with `config`: the handshake, `line` (ending in a newline) written, the
    /// server's answer of the same length read back.
    pub fn ping(&self, config: &Arc<rustls::ClientConfig>, line: &str) -> Result<String, String> {
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut conn =
            rustls::ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
        let mut sock = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        let mut tls = rustls::Stream::new(&mut conn, &mut sock);
        tls.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
        let mut back = vec![0u8; line.len()];
        tls.read_exact(&mut back).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&back).into_owned())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
