//! The signers against real devices started here: SoftHSM2 served **out of process** by
//! `p11-kit server` (our process loads only `p11-kit-client.so`, so the key is never in our
//! memory), and swtpm on a Unix socket. What they produce is checked with tools nobody here
//! wrote: pkcs11-tool, tpm2-tools, OpenSSL (`dgst -verify`, the tpm2 provider, `s_server
//! -Verify`).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kubeboot::csr::CsrBuilder;
use kubeboot::key::{P256Signer, spki_from_point};
use kubeboot::keyref;
use kubeboot_hwkey::Devices;

#[path = "support/mtls.rs"]
mod mtls;

const P11_CLIENT: &str = "/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so";
const SOFTHSM: &str = "/usr/lib/softhsm/libsofthsm2.so";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubeboot-hwkey-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A SoftHSM token `kubeboot` (user PIN in `pin`) served by `p11-kit server` on a socket.
struct Token {
    dir: PathBuf,
    server: Child,
}

impl Token {
    fn start(name: &str) -> Token {
        let dir = tmp(name);
        std::fs::create_dir(dir.join("tokens")).unwrap();
        let conf = dir.join("softhsm2.conf");
        std::fs::write(
            &conf,
            format!(
                "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
                dir.join("tokens").display()
            ),
        )
        .unwrap();
        run(Command::new("softhsm2-util").env("SOFTHSM2_CONF", &conf).args([
            "--init-token",
            "--free",
            "--label",
            "kubeboot",
            "--so-pin",
            "5678",
            "--pin",
            "1234",
        ]));
        std::fs::write(dir.join("pin"), "1234\n").unwrap();
        let socket = dir.join("p11.sock");
        let server = Command::new("p11-kit")
            .env("SOFTHSM2_CONF", &conf)
            .env("XDG_RUNTIME_DIR", &dir)
            .args(["server", "-f", "-n"])
            .arg(&socket)
            .args(["--provider", SOFTHSM, "pkcs11:token=kubeboot"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if socket.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(socket.exists(), "p11-kit server did not start");
        Token { dir, server }
    }
}

/// The token's files as a test sees them (its PIN file, its server's socket).
struct TokenDir(PathBuf);

impl TokenDir {
    fn device(&self) -> String {
        format!(
            "pkcs11:token=kubeboot?module-path={P11_CLIENT}&pin-source={}",
            self.0.join("pin").display()
        )
    }

    fn tool(&self) -> Command {
        let mut c = Command::new("pkcs11-tool");
        c.env("P11_KIT_SERVER_ADDRESS", format!("unix:path={}", self.0.join("p11.sock").display()))
            .args(["--module", P11_CLIENT, "--login", "--pin", "1234"]);
        c
    }
}

/// Run `test` with a token of its own: p11-kit-client.so finds its server through
/// P11_KIT_SERVER_ADDRESS in the environment of the process that loads it, so the test runs
/// again in a child process started with it (the test binary, `--exact test`).
fn with_token(test: &str, body: impl FnOnce(&TokenDir)) {
    if let Ok(dir) = std::env::var("KUBEBOOT_TEST_TOKEN") {
        return body(&TokenDir(dir.into()));
    }
    let token = Token::start(test);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env("KUBEBOOT_TEST_TOKEN", &token.dir)
        .env(
            "P11_KIT_SERVER_ADDRESS",
            format!("unix:path={}", token.dir.join("p11.sock").display()),
        )
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

impl Drop for Token {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// swtpm in socket mode on loopback TCP, its state in `dir`. (tss-esapi 7.7's TCTI loader
/// passes only `host=` and `port=` to the swtpm TCTI, so its Unix-socket `path=` is out of reach
/// of the Rust side; tpm2-tools and OpenSSL's provider take either.)
struct Swtpm {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

/// A free port whose next port is free too (the swtpm TCTI finds the control channel there).
fn free_port_pair() -> u16 {
    loop {
        let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = a.local_addr().unwrap().port();
        if port < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

impl Swtpm {
    fn start(dir: &Path) -> Swtpm {
        Self::start_on(dir, free_port_pair())
    }

    /// Start again on the same state and port (a reboot of the machine's TPM).
    fn restart(&mut self) {
        self.stop();
        *self = Self::start_on(&self.dir.clone(), self.port);
    }

    fn start_on(dir: &Path, port: u16) -> Swtpm {
        std::fs::create_dir_all(dir.join("state")).unwrap();
        let ctrl = port + 1;
        let child = Command::new("swtpm")
            .args(["socket", "--tpm2", "--flags", "not-need-init,startup-clear", "--tpmstate"])
            .arg(format!("dir={}", dir.join("state").display()))
            .arg("--server")
            .arg(format!("type=tcp,port={port},bindaddr=127.0.0.1"))
            .arg("--ctrl")
            .arg(format!("type=tcp,port={ctrl},bindaddr=127.0.0.1"))
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", ctrl)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Swtpm { dir: dir.to_owned(), port, child: Some(child) }
    }

    fn tcti(&self) -> String {
        format!("swtpm:host=127.0.0.1,port={}", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Swtpm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// OpenSSL verifies `rs` over `message` with the public point.
fn openssl_verifies(dir: &Path, point: &[u8; 65], message: &[u8], rs: &[u8; 64]) -> bool {
    let spki = spki_from_point(point);
    std::fs::write(dir.join("pub.der"), spki).unwrap();
    std::fs::write(dir.join("msg"), message).unwrap();
    std::fs::write(dir.join("sig.der"), kubeboot::key::der_signature(rs).unwrap().as_bytes())
        .unwrap();
    Command::new("openssl")
        .args(["dgst", "-sha256", "-keyform", "DER", "-verify"])
        .arg(dir.join("pub.der"))
        .arg("-signature")
        .arg(dir.join("sig.der"))
        .arg(dir.join("msg"))
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success()
}

#[test]
fn pkcs11_keys_are_made_used_and_destroyed_in_the_token() {
    with_token("pkcs11_keys_are_made_used_and_destroyed_in_the_token", |token| {
        let devices = Devices::default();
        let k = devices.generate(&token.device(), "kubelet-client-2026-12-06-10-00-00").unwrap();
        let text = String::from_utf8(k.reference.clone()).unwrap();
        assert!(text.starts_with("-----BEGIN PKCS#11 PROVIDER URI-----\n"), "{text}");
        // OpenSSL reads the container as pkcs11-provider writes it.
        std::fs::write(token.0.join("ref.pem"), &k.reference).unwrap();
        let parsed =
            run(Command::new("openssl").args(["asn1parse", "-in"]).arg(token.0.join("ref.pem")));
        assert!(parsed.contains("VISIBLESTRING     :PKCS#11 Provider URI v1.0"), "{parsed}");
        assert!(parsed.contains("UTF8STRING        :pkcs11:token=kubeboot;object=kubelet-client-2026-12-06-10-00-00;id=%"), "{parsed}");
        // pkcs11-tool sees the pair; the private key never was extractable.
        let listed = run(token.tool().arg("--list-objects"));
        assert!(listed.contains("label:      kubelet-client-2026-12-06-10-00-00"), "{listed}");
        assert!(
            listed.contains("Access:     sensitive, always sensitive, never extractable, local"),
            "{listed}"
        );
        let key = kubeboot_hwkey::pkcs11::Pkcs11Key::open_pem(&k.reference).unwrap();
        assert_eq!(key.public_point(), k.point);
        assert_eq!(
            key.protection().unwrap(),
            (true, true, true),
            "ALWAYS_SENSITIVE, NEVER_EXTRACTABLE, CKA_VALUE refused"
        );
        // The token's EC_POINT as pkcs11-tool prints it is our point.
        let hex: String = k.point.iter().map(|b| format!("{b:02x}")).collect();
        assert!(listed.contains(&format!("EC_POINT:   0441{hex}")), "{listed}");
        // Signatures verify with OpenSSL.
        let rs = key.sign_p256_sha256(b"to be signed").unwrap();
        assert!(openssl_verifies(&token.0, &k.point, b"to be signed", &rs));
        assert!(!openssl_verifies(&token.0, &k.point, b"something else", &rs));
        // A CSR signed in the token passes OpenSSL's self-signature check.
        let mut pem = vec![0u8; 2048];
        let n = CsrBuilder::client("node-1").unwrap().write_pem(&key, &mut pem).unwrap();
        std::fs::write(token.0.join("csr.pem"), &pem[..n]).unwrap();
        let checked = run(Command::new("openssl")
            .args(["req", "-verify", "-noout", "-in"])
            .arg(token.0.join("csr.pem")));
        assert!(
            checked.contains("verify OK")
                || checked.contains("Certificate request self-signature verify OK"),
            "{checked}"
        );
        // Destroyed: both objects are gone.
        devices.destroy(&k.reference).unwrap();
        let listed = run(token.tool().arg("--list-objects"));
        assert!(!listed.contains("kubelet-client-2026-12-06-10-00-00"), "{listed}");
        let gone = devices.open(&k.reference).err().unwrap().0;
        assert!(
            gone.contains(
                "pkcs11 token=kubeboot: no private key object=kubelet-client-2026-12-06-10-00-00"
            ),
            "{gone}"
        );
    });
}

#[test]
fn pkcs11_bad_input_is_one_line_naming_what_is_wrong() {
    with_token("pkcs11_bad_input_is_one_line_naming_what_is_wrong", |token| {
        let devices = Devices::default();
        let pin = token.0.join("pin").display().to_string();
        std::fs::write(token.0.join("wrong"), "9999\n").unwrap();
        let wrong = token.0.join("wrong").display().to_string();
        let cases = [
            (
                format!("pkcs11:token=kubeboot?module-path=/nonexistent.so&pin-source={pin}"),
                "module /nonexistent.so: no such file",
            ),
            (
                format!("pkcs11:token=kubeboot?module-path={P11_CLIENT}&pin-source={wrong}"),
                "C_Login",
            ),
            (
                format!("pkcs11:token=other?module-path={P11_CLIENT}&pin-source={pin}"),
                "pkcs11 token=other: no such token",
            ),
            (
                format!("pkcs11:token=kubeboot;colour=blue?module-path={P11_CLIENT}"),
                "not a usable key reference",
            ),
        ];
        for (device, want) in cases {
            let e = devices.generate(&device, "x").err().unwrap().0;
            assert!(e.contains(want), "{device}: {e}");
            assert!(!e.contains('\n') && !e.contains("1234") && !e.contains("9999"), "{e}");
        }
        let listed = run(token.tool().arg("--list-objects"));
        assert!(!listed.contains("label:"), "no key was made: {listed}");
    });
}

#[test]
fn tpm_keys_are_blobs_only_this_tpm_loads() {
    let dir = tmp("tpm");
    let mut tpm = Swtpm::start(&dir.join("a"));
    let devices = Devices { tcti: Some(tpm.tcti()) };
    let k = devices.generate("tpm", "unused").unwrap();
    let text = String::from_utf8(k.reference.clone()).unwrap();
    assert!(text.starts_with("-----BEGIN TSS2 PRIVATE KEY-----\n"), "{text}");
    let pem = dir.join("key.pem");
    std::fs::write(&pem, &k.reference).unwrap();
    // tpm2-tools loads the blob and shows what the TPM enforces.
    let ctx = dir.join("key.ctx");
    let tools = |args: &[&str]| {
        let mut c = Command::new(args[0]);
        c.env("TPM2TOOLS_TCTI", tpm.tcti()).args(&args[1..]);
        c
    };
    run(&mut tools(&["tpm2_load", "-r", pem.to_str().unwrap(), "-c", ctx.to_str().unwrap()]));
    let public = run(&mut tools(&["tpm2_readpublic", "-c", ctx.to_str().unwrap()]));
    assert!(
        public.contains("value: fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign"),
        "{public}"
    );
    run(&mut tools(&["tpm2_flushcontext", "-t"]));
    // OpenSSL's tpm2 provider recreates the same storage key and loads it: the same point.
    let spki = run(Command::new("openssl")
        .env("TPM2OPENSSL_TCTI", tpm.tcti())
        .args([
            "pkey",
            "-provider",
            "tpm2",
            "-provider",
            "default",
            "-pubout",
            "-outform",
            "DER",
            "-out",
        ])
        .arg(dir.join("spki.der"))
        .arg("-in")
        .arg(&pem));
    let _ = spki;
    assert_eq!(std::fs::read(dir.join("spki.der")).unwrap(), spki_from_point(&k.point).to_vec());
    // Signatures verify with OpenSSL; the TPM keeps nothing between them.
    let signer = devices.open(&k.reference).unwrap();
    let rs = signer.sign_p256_sha256(b"to be signed").unwrap();
    assert!(openssl_verifies(&dir, &k.point, b"to be signed", &rs));
    // A TPM restarted on the same state reloads the blob and signs (a saved context would not).
    tpm.stop();
    let e = devices.open(&k.reference).err().unwrap().0;
    assert!(e.starts_with(&format!("tpm {}: cannot connect", tpm.tcti())), "{e}");
    tpm.restart();
    let rs = devices.open(&k.reference).unwrap().sign_p256_sha256(b"after restart").unwrap();
    assert!(openssl_verifies(&dir, &k.point, b"after restart", &rs));
    tpm.stop();
    // Another TPM cannot load it.
    let other = Swtpm::start(&dir.join("b"));
    let e = Devices { tcti: Some(other.tcti()) }.open(&k.reference).err().unwrap().0;
    assert!(e.contains("loading the key (a key of another TPM?)"), "{e}");
    drop(other);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `openssl s_server -Verify` asks for a client certificate and checks it against the CA;
/// rustls presents the device's certificate and the device signs the handshake.
#[test]
fn tls_client_authentication_is_signed_by_the_device() {
    let dir = tmp("tls");
    let mut tpm = Swtpm::start(&dir.join("tpm"));
    let devices = Devices { tcti: Some(tpm.tcti()) };
    let k = devices.generate("tpm", "unused").unwrap();
    let signer = devices.open(&k.reference).unwrap();
    mtls::pki(&dir, "test-ca");
    let chain = mtls::issue(&dir, &signer, "node-1");
    let server = mtls::Server::start(&dir);
    let device = format!("tpm {}", tpm.tcti());
    let config = mtls::client(&dir, &chain, signer, &device).unwrap();
    // -rev: the server answers each line reversed, once the handshake verified our signature.
    assert_eq!(server.ping(&config, "hello\n").unwrap(), "olleh\n");
    // With the TPM stopped the handshake fails, and the error names the device.
    tpm.stop();
    let e = server.ping(&config, "hello\n").unwrap_err();
    assert!(e.contains(&format!("{device}: the handshake signature failed")), "{e}");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = keyref::LABEL_TSS2;
}
