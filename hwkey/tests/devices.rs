//! The signers against real devices started here: SoftHSM2 served **out of process** by
//! `p11-kit server` (our process loads only `p11-kit-client.so`, so the key is never in our
//! memory), and swtpm on a Unix socket. What they produce is checked with tools nobody here
//! wrote: pkcs11-tool, tpm2-tools, OpenSSL (`dgst -verify`, the tpm2 provider, `s_server
//! -Verify`).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kubeboot::attest;
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

    /// A tpm2-tools command (`args[0]`) on this TPM.
    fn tools(&self, args: &[&str]) -> Command {
        let mut c = Command::new(args[0]);
        c.env("TPM2TOOLS_TCTI", self.tcti()).args(&args[1..]);
        c
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
    let tools = |args: &[&str]| tpm.tools(args);
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
    // The same blob saying it has an authorization value is refused (never tried with an empty
    // one), as the Go agent refuses it.
    let mut scratch = vec![0u8; k.reference.len()];
    let blob = keyref::Tss2::from_pem(&k.reference, &mut scratch).unwrap();
    let mut with_auth = vec![0u8; keyref::MAX_KEY_REF];
    let n = keyref::Tss2 { empty_auth: false, ..blob }.write_pem(&mut with_auth).unwrap();
    let e = devices.open(&with_auth[..n]).err().unwrap().0;
    assert!(e.contains("has an authorization value"), "{e}");
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

/// A TPM as its manufacturer leaves it: `swtpm_setup` made its endorsement key and wrote the
/// EK certificate (signed by swtpm's local CA) into its NV memory.
fn manufactured_swtpm(dir: &Path) -> Swtpm {
    std::fs::create_dir_all(dir.join("state")).unwrap();
    run(Command::new("swtpm_setup")
        .args(["--tpm2", "--ecc", "--create-ek-cert", "--overwrite", "--tpmstate"])
        .arg(dir.join("state")));
    Swtpm::start(dir)
}

/// A factory CA (OpenSSL) and the attestation key certificate it issues for `point`, shaped like
/// a TCG IAK certificate: the serial number in the subject, EKU tcg-kp-AIKCertificate.
fn factory_certifies(dir: &Path, ca: &str, serial: &str, point: &[u8; 65]) -> Vec<u8> {
    let key = dir.join(format!("{ca}.key"));
    let crt = dir.join(format!("{ca}.crt"));
    if !crt.exists() {
        run(Command::new("openssl")
            .args(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out"])
            .arg(&key));
        run(Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-new",
                "-days",
                "3650",
                "-subj",
                &format!("/O=kubeboot test/CN={ca}"),
                "-key",
            ])
            .arg(&key)
            .arg("-out")
            .arg(&crt));
    }
    let public = dir.join(format!("ak-{serial}.der"));
    std::fs::write(&public, spki_from_point(point)).unwrap();
    let ext = dir.join("ak.cnf");
    std::fs::write(
        &ext,
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=2.23.133.8.3\nbasicConstraints=critical,CA:FALSE\n",
    )
    .unwrap();
    let out = dir.join(format!("ak-{serial}.pem"));
    run(Command::new("openssl")
        .args([
            "x509",
            "-new",
            "-days",
            "365",
            "-subj",
            &format!("/CN=kubeboot test TPM/serialNumber={serial}"),
        ])
        .args(["-force_pubkey"])
        .arg(&public)
        .args(["-keyform", "DER", "-CA"])
        .arg(&crt)
        .arg("-CAkey")
        .arg(&key)
        .arg("-extfile")
        .arg(&ext)
        .arg("-out")
        .arg(&out));
    std::fs::read(out).unwrap()
}

/// A node key made in the TPM, its CSR for `node`, and the request with the evidence after it.
fn attested_request(devices: &Devices, node: &str, chain: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let k = devices.generate("tpm", "unused").unwrap();
    let signer = devices.open(&k.reference).unwrap();
    let mut csr = vec![0u8; 2048];
    let n = CsrBuilder::client(node).unwrap().write_pem(&*signer, &mut csr).unwrap();
    csr.truncate(n);
    (request_for(devices, &k.reference, &csr, chain), k.reference)
}

/// The request for `csr` (PEM) with the certify of `key` over its qualifying data.
fn request_for(devices: &Devices, key: &[u8], csr: &[u8], chain: &[u8]) -> Vec<u8> {
    let mut scratch = vec![0u8; csr.len()];
    let parsed = kubeboot::request::CertificateRequest::from_pem(csr, &mut scratch).unwrap();
    let q = attest::qualifying_data(parsed.spki_der(), parsed.subject_der());
    let certified = devices.certify(key, &q).unwrap();
    let mut blob_scratch = vec![0u8; key.len()];
    let blob = keyref::Tss2::from_pem(key, &mut blob_scratch).unwrap();
    let public = &blob.public[2..];
    let mut out = vec![0u8; 8192];
    let n =
        attest::write_evidence(public, &certified.attest, &certified.signature, chain, &mut out)
            .unwrap();
    [csr, &out[..n]].concat()
}

fn judged(
    request: &[u8],
    device_ca: &Path,
    enrolled: &str,
) -> Result<(String, String, String), attest::AttestError> {
    let mut scratch = vec![0u8; request.len()];
    let (csr, evidence) = attest::Evidence::split(request, &mut scratch)?;
    let evidence = evidence.ok_or(attest::AttestError::Absent)?;
    let ca_pem = std::fs::read(device_ca).unwrap();
    let mut ca_scratch = vec![0u8; ca_pem.len()];
    let cas: kubeboot::verify::TrustedCas<'_> =
        kubeboot::verify::TrustedCas::from_pem(&ca_pem, &mut ca_scratch).unwrap();
    let list = attest::Enrolment::parse(enrolled).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
        as i64;
    let ok =
        attest::judge(&kubeboot::backend::Software, &csr, &evidence, cas.anchors(), &list, now)?;
    let hex: String = ok.key_name.iter().map(|b| format!("{b:02x}")).collect();
    Ok((ok.serial.to_string(), ok.node.to_owned(), hex))
}

/// The node key is certified by the TPM's attestation key over its CSR's digest; the core's
/// judgement accepts exactly that and refuses each forgery with its reason. Checked against
/// tools nobody here wrote: OpenSSL issues the attestation key's certificate and verifies the
/// TPM's signature with it, tpm2-tools prints the key's Name, swtpm's local CA made the EK
/// certificate the TPM hands out.
#[test]
fn tpm_certify_binds_the_node_key_to_its_csr() {
    use kubeboot::attest::AttestError;
    let dir = tmp("attest");
    let tpm = manufactured_swtpm(&dir.join("a"));
    let devices = Devices { tcti: Some(tpm.tcti()) };
    let mut t = kubeboot_hwkey::tpm::Tpm::connect(&tpm.tcti()).unwrap();
    let ak = t.attestation_key_point().unwrap();
    // The same TPM derives the same attestation key every time.
    assert_eq!(t.attestation_key_point().unwrap(), ak);
    // The EK certificate swtpm_setup stored (ECC P-384 with --ecc): OpenSSL reads it.
    let (index, ek) = t.ek_certificate().unwrap().expect("an EK certificate in NV");
    assert_eq!(index, kubeboot_hwkey::tpm::NV_EK_CERT_ECC_P384);
    std::fs::write(dir.join("ek.der"), &ek).unwrap();
    let text = run(Command::new("openssl")
        .args(["x509", "-inform", "DER", "-noout", "-text", "-in"])
        .arg(dir.join("ek.der")));
    assert!(text.contains("swtpm-localca"), "{text}");
    drop(t);
    let chain = factory_certifies(&dir, "factory", "SN-A1", &ak);
    let device_ca = dir.join("factory.crt");

    let (request, key) = attested_request(&devices, "edge-1", &chain);
    let (serial, node, name) = judged(&request, &device_ca, "SN-A1 edge-1\n").unwrap();
    // The fuzz target's seed (fuzz/seeds/attest_request): KUBEBOOT_ATTEST_SEEDS=<dir>.
    if let Some(seeds) = std::env::var_os("KUBEBOOT_ATTEST_SEEDS") {
        let seeds = PathBuf::from(seeds);
        std::fs::write(seeds.join("request.pem"), &request).unwrap();
        run(Command::new("openssl")
            .args(["x509", "-outform", "DER", "-in"])
            .arg(&device_ca)
            .arg("-out")
            .arg(seeds.join("factory.der")));
    }
    assert_eq!((serial.as_str(), node.as_str()), ("SN-A1", "edge-1"));
    // tpm2-tools names the same key.
    let pem = dir.join("key.pem");
    std::fs::write(&pem, &key).unwrap();
    let ctx = dir.join("key.ctx");
    let tools = |args: &[&str]| tpm.tools(args);
    run(&mut tools(&["tpm2_load", "-r", pem.to_str().unwrap(), "-c", ctx.to_str().unwrap()]));
    let public = run(&mut tools(&["tpm2_readpublic", "-c", ctx.to_str().unwrap()]));
    run(&mut tools(&["tpm2_flushcontext", "-t"]));
    assert!(public.contains(&format!("name: {name}")), "{public}\nwant {name}");
    // OpenSSL verifies the TPM's signature over the attestation with the certified key.
    let mut scratch = vec![0u8; request.len()];
    let (_, evidence) = attest::Evidence::split(&request, &mut scratch).unwrap();
    let evidence = evidence.unwrap();
    let sig = kubeboot::tpm::Signature::parse(evidence.signature).unwrap();
    assert!(openssl_verifies(&dir, &ak, evidence.attest, &sig.rs));

    // The refusals, each with its reason.
    assert_eq!(judged(&request, &device_ca, "SN-B2 edge-1\n"), Err(AttestError::NotEnrolled));
    assert_eq!(judged(&request, &device_ca, "SN-A1 edge-2\n"), Err(AttestError::WrongNode));
    // Carried onto another CSR of the same key (another node name): not this CSR's digest.
    let signer = devices.open(&key).unwrap();
    let mut csr2 = vec![0u8; 2048];
    let n = CsrBuilder::client("edge-2").unwrap().write_pem(&*signer, &mut csr2).unwrap();
    let first_end = b"-----END CERTIFICATE REQUEST-----\n";
    let cut =
        request.windows(first_end.len()).position(|w| w == first_end).unwrap() + first_end.len();
    let replayed = [&csr2[..n], &request[cut..]].concat();
    assert_eq!(judged(&replayed, &device_ca, "SN-A1 edge-2\n"), Err(AttestError::Replayed));
    // A software key's CSR with the TPM key's evidence: not the CSR's key.
    let soft = kubeboot::key::NodeKey::from_entropy(&[7u8; 48]).unwrap();
    let n = CsrBuilder::client("edge-1").unwrap().write_pem(&soft, &mut csr2).unwrap();
    let forged = [&csr2[..n], &request[cut..]].concat();
    assert_eq!(judged(&forged, &device_ca, "SN-A1 edge-1\n"), Err(AttestError::KeyMismatch));
    // An attestation key certified by another CA.
    let rogue = factory_certifies(&dir, "rogue", "SN-A1", &ak);
    let (request3, _) = attested_request(&devices, "edge-1", &rogue);
    assert!(matches!(judged(&request3, &device_ca, "SN-A1 edge-1\n"), Err(AttestError::Chain(_))));
    // Another TPM's attestation presented with this TPM's certificate.
    let other = manufactured_swtpm(&dir.join("b"));
    let (request4, _) = attested_request(&Devices { tcti: Some(other.tcti()) }, "edge-1", &chain);
    assert_eq!(judged(&request4, &device_ca, "SN-A1 edge-1\n"), Err(AttestError::Signature));
    // A PKCS#11 or software key cannot be attested.
    let mut soft_pem = vec![0u8; 512];
    let n = soft.to_sec1_pem(&mut soft_pem).unwrap();
    let e = devices.certify(&soft_pem[..n], &[0; 32]).err().unwrap().0;
    assert!(e.contains("cannot be attested"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
