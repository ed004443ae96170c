//! Time per signature and per TLS handshake with a node key in software, in a PKCS#11 token and
//! in a TPM, side by side in one run (medians; the devices' figures also as ratios to software).
//! Run by `hwkey/timing.sh`, which starts SoftHSM behind `p11-kit server` and swtpm:
//!
//!   timing PKCS11_DEVICE_URI TCTI WORK_DIR [ROUNDS]
//!
//! The handshake is rustls (kubeboot-hwkey's client key) against `openssl s_server -Verify 1`
//! (TLS 1.3, the client certificate checked), fresh connection each time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeboot::csr::CsrBuilder;
use kubeboot::key::NodeKey;
use kubeboot_hwkey::{Devices, SharedSigner};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn openssl(dir: &Path, args: &[&str]) {
    let ok = Command::new("openssl").current_dir(dir).args(args).stderr(Stdio::null()).status();
    assert!(ok.is_ok_and(|s| s.success()), "openssl {args:?}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (p11, tcti, dir) = (&args[1], &args[2], Path::new(&args[3]));
    let rounds: usize = args.get(4).and_then(|r| r.parse().ok()).unwrap_or(50);
    let devices = Devices { tcti: Some(tcti.clone()) };
    let software: SharedSigner = Arc::new(NodeKey::from_entropy(&[7u8; 32]).unwrap());
    let token = devices.generate(p11, "timing").unwrap();
    let tpm = devices.generate("tpm", "timing").unwrap();
    let keys: Vec<(&str, SharedSigner)> = vec![
        ("software (p256, in process)", software),
        ("pkcs11 (SoftHSM via p11-kit server)", devices.open(&token.reference).unwrap()),
        ("tpm (swtpm, TCP)", devices.open(&tpm.reference).unwrap()),
    ];
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
            "/CN=timing-ca",
            "-days",
            "2",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
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
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Command::new("openssl")
        .current_dir(dir)
        .args([
            "s_server",
            "-accept",
            &format!("127.0.0.1:{port}"),
            "-cert",
            "srv.crt",
            "-key",
            "srv.key",
        ])
        .args([
            "-CAfile",
            "ca.crt",
            "-Verify",
            "1",
            "-verify_return_error",
            "-rev",
            "-naccept",
            "100000",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let ca = std::fs::read(dir.join("ca.crt")).unwrap();
    let mut base = (Duration::ZERO, Duration::ZERO);
    println!("{rounds} rounds each, medians");
    for (i, (name, signer)) in keys.iter().enumerate() {
        let mut sign = Vec::new();
        for r in 0..rounds {
            let t = Instant::now();
            signer.sign_p256_sha256(format!("message {r}").as_bytes()).unwrap();
            sign.push(t.elapsed());
        }
        let mut csr = vec![0u8; 2048];
        let n = CsrBuilder::client("timing").unwrap().write_pem(&**signer, &mut csr).unwrap();
        std::fs::write(dir.join("c.csr"), &csr[..n]).unwrap();
        openssl(
            dir,
            &[
                "x509", "-req", "-in", "c.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-out",
                "c.crt", "-days", "2",
            ],
        );
        let chain = std::fs::read(dir.join("c.crt")).unwrap();
        let key = kubeboot_hwkey::tls::DeviceSigningKey::new(signer.clone(), name);
        let mut config = kubeboot_hwkey::tls::client_config(&ca, &chain, key).unwrap();
        // A full handshake every time (a resumed one sends no CertificateVerify).
        config.resumption = rustls::client::Resumption::disabled();
        let config = Arc::new(config);
        let mut hs = Vec::new();
        for _ in 0..rounds.min(30) {
            let t = Instant::now();
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let mut conn = rustls::ClientConnection::new(config.clone(), name).unwrap();
            let mut sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let mut tls = rustls::Stream::new(&mut conn, &mut sock);
            tls.write_all(b"ping\n").unwrap();
            let mut back = [0u8; 5];
            tls.read_exact(&mut back).unwrap();
            assert_eq!(&back, b"gnip\n");
            hs.push(t.elapsed());
        }
        let (s, h) = (median(sign), median(hs));
        if i == 0 {
            base = (s, h);
            println!(
                "{name:40} sign {:>9.3} ms   handshake {:>8.2} ms",
                s.as_secs_f64() * 1e3,
                h.as_secs_f64() * 1e3
            );
        } else {
            println!(
                "{name:40} sign {:>9.3} ms ({:>6.2}x software)   handshake {:>8.2} ms ({:+.2} ms over software)",
                s.as_secs_f64() * 1e3,
                s.as_secs_f64() / base.0.as_secs_f64(),
                h.as_secs_f64() * 1e3,
                (h.as_secs_f64() - base.1.as_secs_f64()) * 1e3
            );
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    devices.destroy(&token.reference).unwrap();
}
