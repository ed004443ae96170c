//! Time per signature and per TLS handshake with a node key in software, in a PKCS#11 token and
//! in a TPM, side by side in one run (medians; the devices' figures also as ratios to software).
//! Run by `hwkey/timing.sh`, which starts SoftHSM behind `p11-kit server` and swtpm:
//!
//!   timing PKCS11_DEVICE_URI TCTI WORK_DIR [ROUNDS]
//!
//! The handshake is rustls (kubeboot-hwkey's client key) against `openssl s_server -Verify 1`
//! (TLS 1.3, the client certificate checked), fresh connection each time.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeboot::key::NodeKey;
use kubeboot_hwkey::{Devices, SharedSigner};

#[path = "../tests/support/mtls.rs"]
mod mtls;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
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
    mtls::pki(dir, "timing-ca");
    let server = mtls::Server::start(dir);
    let mut base = (Duration::ZERO, Duration::ZERO);
    println!("{rounds} rounds each, medians");
    for (i, (name, signer)) in keys.iter().enumerate() {
        let mut sign = Vec::new();
        for r in 0..rounds {
            let t = Instant::now();
            signer.sign_p256_sha256(format!("message {r}").as_bytes()).unwrap();
            sign.push(t.elapsed());
        }
        let chain = mtls::issue(dir, signer, "timing");
        let config = mtls::client(dir, &chain, signer.clone(), name).unwrap();
        let mut hs = Vec::new();
        for _ in 0..rounds.min(30) {
            let t = Instant::now();
            // -rev: the server answers the line reversed, once it verified the handshake.
            assert_eq!(server.ping(&config, "ping\n").unwrap(), "gnip\n");
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
    drop(server);
    devices.destroy(&token.reference).unwrap();
}
