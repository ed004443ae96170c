//! kubeadm token discovery: the agent's discovery sub-machine (`discovery::Discovery`, internal:
//! driven as the agent drives it, `Discovery::idle()` + `start`, with the agent's work buffer
//! lent to `poll` and `on_response`) fed cluster-info ConfigMaps, the detached JWS
//! (`compute_detached_jws` / `verify_detached_jws`) and the CA pin check (`pin`).
//!
//! Input: byte 0 selects the mode, byte 1 holds flags, the rest is the payload.
//! * mode bits 1-7 pick the work buffer (modulo 3): the hosts' (32 KiB), a microcontroller's
//!   (4 KiB) or the smallest the agent accepts (2 KiB); discovery keeps the kubeconfig and the CA
//!   in its two halves, so larger ones are `TooLarge`.
//! * mode even, **raw**: the payload is the whole response body (status from the flags).
//! * mode odd, **signed** (structure-aware): the payload is the `kubeconfig` content; the target
//!   wraps it in a ConfigMap with a *valid* `jws-kubeconfig-hi3rc6` computed by its own HMAC-SHA256
//!   (hmac + sha2 + base64ct, not the crate's code), so the kubeconfig parsing, CA extraction, pin
//!   check, confirmation and bootstrap-kubeconfig writing behind the MAC are reached. Flags may
//!   flip one bit of the signature (must be `JwsInvalid`) or change the kubeconfig between the
//!   two fetches (must be `JwsInvalid` at confirmation).
//!
//! Properties: the crate's JWS equals the independent one; success past the MAC implies the
//! independent MAC verifies; `Confirm` implies a certificate in the CA data whose SPKI (found by
//! the target's own DER walk) hashes to the pin; `Done` hands out exactly the cluster's server and
//! CA data, and the bootstrap kubeconfig written from them reads back the same; after `Failed`
//! every further response is `InvalidState`; the state machine ends within a bounded number of
//! polls.
#![no_main]

#[path = "common/der_walk.rs"]
mod der_walk;

use base64ct::{Base64, Base64UrlUnpadded, Encoding};
use hmac::{Hmac, KeyInit, Mac};
use kubeboot::Error;
use kubeboot::discovery::{
    Action, Config, DETACHED_JWS_LEN, Discovery, Phase, Tls, compute_detached_jws,
    verify_detached_jws,
};
use kubeboot::kubeconfig::Kubeconfig;
use kubeboot::pin::CaPin;
use kubeboot::pushback::Headers;
use kubeboot::token::BootstrapToken;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const TOKEN: &str = "hi3rc6.cpoi3m254kzpt12t";
const PIN: &str = "sha256:d7ca399eb32057ff78e572eb3cf898fb60cecb7f02749d88347bc3eeb5c360e5";
const T0: i64 = 1_796_208_640;

/// JWS per RFC 7515 (detached payload), written here from the spec.
fn independent_jws(id: &str, secret: &[u8], content: &[u8]) -> String {
    let header =
        Base64UrlUnpadded::encode_string(format!(r#"{{"alg":"HS256","kid":"{id}"}}"#).as_bytes());
    let payload = Base64UrlUnpadded::encode_string(content);
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).unwrap();
    mac.update(format!("{header}.{payload}").as_bytes());
    let sig = Base64UrlUnpadded::encode_string(&mac.finalize().into_bytes());
    format!("{header}..{sig}")
}

/// The pins (own DER walk + SHA-256) of every CERTIFICATE in a PEM bundle.
fn pins_of(pem: &[u8]) -> Vec<[u8; 32]> {
    let text = String::from_utf8_lossy(pem);
    let mut out = vec![];
    for part in text.split("-----BEGIN CERTIFICATE-----").skip(1) {
        let Some(b64) = part.split("-----END CERTIFICATE-----").next() else { continue };
        let b64: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let Ok(der) = Base64::decode_vec(&b64) else { continue };
        if let Some(p) = der_walk::cert_parts(&der) {
            out.push(Sha256::digest(&der[p.spki]).into());
        }
    }
    out
}

fn configmap(content: &str, jws: Option<&str>) -> Vec<u8> {
    let mut data = json!({ "kubeconfig": content });
    if let Some(j) = jws {
        data["jws-kubeconfig-hi3rc6"] = Value::String(j.to_owned());
    }
    serde_json::to_vec(&json!({ "kind": "ConfigMap", "apiVersion": "v1", "data": data })).unwrap()
}

/// Discovery with the work buffer the agent lends it.
struct D {
    d: Discovery,
    work: Vec<u8>,
}

impl D {
    fn poll(&mut self, now: i64) -> Action<'_> {
        self.d.poll(now, &self.work)
    }

    fn on_response(&mut self, now: i64, status: u16, body: &[u8]) {
        self.d.on_response(now, status, &Headers::NONE, body, &mut self.work);
    }
}

impl std::ops::Deref for D {
    type Target = Discovery;
    fn deref(&self) -> &Discovery {
        &self.d
    }
}

impl std::ops::DerefMut for D {
    fn deref_mut(&mut self) -> &mut Discovery {
        &mut self.d
    }
}

/// Drive until the first request and check it.
fn expect_send(d: &mut D, now: i64, insecure: bool) -> Option<Vec<u8>> {
    match d.poll(now) {
        Action::Send(r) => {
            assert_eq!(r.path, kubeboot::discovery::CLUSTER_INFO_PATH);
            match r.tls {
                Tls::Insecure => assert!(insecure),
                Tls::VerifyWith(ca) => {
                    assert!(!insecure);
                    return Some(ca.to_vec());
                }
            }
            None
        }
        other => panic!("expected a request, got {other:?}"),
    }
}

/// `on_response` with its outcome as a result: the failure it caused, if any (one error channel:
/// the failure is also what `poll` reports).
fn respond(d: &mut D, now: i64, status: u16, body: &[u8]) -> Result<(), Error> {
    d.on_response(now, status, body);
    match d.failure() {
        Some((e, _)) => {
            assert_eq!(d.phase(), Phase::Failed);
            Err(e)
        }
        None => Ok(()),
    }
}

fn after_failure(d: &mut D, now: i64, e: Error) {
    assert_eq!(d.phase(), Phase::Failed);
    assert!(matches!(d.poll(now), Action::Failed(x) if x == e));
    let before = format!("{:?}", d.d);
    d.on_response(now, 200, b"{}");
    assert_eq!(format!("{:?}", d.d), before, "a response after the failure changed discovery");
    d.on_transport_error(now);
    assert!(matches!(d.poll(now + 100_000), Action::Failed(x) if x == e));
}

fuzz_target!(|data: &[u8]| {
    let (mode, flags, payload) = match data {
        [m, f, rest @ ..] => (*m, *f, rest),
        _ => return,
    };
    let token = BootstrapToken::parse(TOKEN).unwrap();
    let pins = [CaPin::parse(PIN).unwrap()];
    let mut cfg = Config::new(&token, &pins);
    cfg.allow_unpinned = flags & 0x40 != 0;
    let pins_used: &[CaPin] = if cfg.allow_unpinned && flags & 0x80 != 0 { &[] } else { &pins };
    cfg.pins = pins_used;
    let work = [32 * 1024, 4096, kubeboot::agent::MIN_RESPONSE][usize::from(mode >> 1) % 3];
    let mut d = Box::new(D { d: Discovery::idle(), work: vec![0; work] });
    d.d.start(cfg, T0).unwrap();

    let (body, content, sig_ok) = if mode % 2 == 0 {
        (payload.to_vec(), None, None)
    } else {
        let content = String::from_utf8_lossy(payload).into_owned();
        let mut jws = independent_jws(token.id(), token.secret_bytes(), content.as_bytes());
        // The crate's JWS is the same string.
        let mut out = [0u8; DETACHED_JWS_LEN];
        let n = compute_detached_jws(
            &token.token_id(),
            token.secret_bytes(),
            content.as_bytes(),
            &mut out,
        )
        .unwrap();
        assert_eq!(&out[..n], jws.as_bytes());
        assert!(verify_detached_jws(
            &token.token_id(),
            token.secret_bytes(),
            content.as_bytes(),
            jws.as_bytes()
        ));
        let flip = flags & 0x01 != 0;
        if flip {
            let mut b = jws.into_bytes();
            let i = (flags as usize >> 1) % b.len();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            jws = String::from_utf8(b).unwrap();
            assert!(!verify_detached_jws(
                &token.token_id(),
                token.secret_bytes(),
                content.as_bytes(),
                jws.as_bytes()
            ));
        }
        (configmap(&content, Some(&jws)), Some(content), Some(!flip))
    };

    expect_send(&mut d, T0, true);
    let status = if mode % 2 == 0 && flags & 0x20 != 0 {
        [404u16, 401, 403, 500, 302][(flags & 3) as usize]
    } else {
        200
    };
    let r = respond(&mut d, T0, status, &body);
    if status != 200 {
        match r {
            Ok(()) => assert_eq!(d.phase(), Phase::Backoff),
            Err(e) => after_failure(&mut d, T0, e),
        }
        return;
    }
    let phase = d.phase();
    match &r {
        Err(e) => {
            // (An empty kubeconfig is refused before the MAC is looked at, one larger than
            // half the work buffer is kept nowhere.)
            if sig_ok == Some(false) && content.as_ref().is_some_and(|c| !c.is_empty()) {
                let large = content.as_ref().is_some_and(|c| c.len() > work / 2);
                assert!(
                    *e == Error::JwsInvalid || (large && *e == Error::TooLarge),
                    "a bad MAC must be JwsInvalid: {e:?}"
                );
            }
            after_failure(&mut d, T0, *e);
            return;
        }
        Ok(()) => assert_ne!(sig_ok, Some(false), "accepted a flipped signature"),
    }
    if phase == Phase::Backoff {
        // No signature for us (or no data): retried until the deadline, in bounded polls.
        assert!(sig_ok.is_none());
        let mut now = T0;
        for i in 0.. {
            assert!(i < 1000, "discovery did not end");
            match d.poll(now) {
                Action::Wait { until } => now = until,
                Action::Send(_) => d.on_transport_error(now),
                Action::Failed(e) => {
                    assert_eq!(e, Error::Timeout);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        return;
    }

    // Past the MAC: check it independently on what was received.
    let v: Value = serde_json::from_slice(&body).expect("accepted body is JSON");
    let kc = v["data"]["kubeconfig"].as_str().expect("kubeconfig string").to_owned();
    let jws = v["data"]["jws-kubeconfig-hi3rc6"].as_str().expect("jws string");
    assert_eq!(jws, independent_jws("hi3rc6", token.secret_bytes(), kc.as_bytes()), "MAC bypassed");
    if let Some(c) = &content {
        assert_eq!(c, &kc);
    }
    // The cluster the crate took the server and CA from (an unnamed one, else the last).
    let parsed = Kubeconfig::parse(kc.as_bytes()).expect("signed kubeconfig parses");
    let cl = parsed
        .clusters()
        .iter()
        .rev()
        .find(|c| c.name.is_empty())
        .or(parsed.clusters().last())
        .unwrap();
    let mut sbuf = vec![0u8; 2048];
    let server = cl.value.server.unwrap().decode_into(&mut sbuf).unwrap().to_owned();
    let ca = match cl.value.certificate_authority_data.filter(|s| !s.is_empty()) {
        Some(s) => {
            let mut t = vec![0u8; s.decoded_len()];
            Base64::decode_vec(s.decode_into(&mut t).unwrap()).unwrap()
        }
        None => vec![],
    };

    let confirm_body = if flags & 0x02 != 0 && content.is_some() {
        let other = format!("{kc} ");
        configmap(&other, Some(&independent_jws("hi3rc6", token.secret_bytes(), other.as_bytes())))
    } else {
        body.clone()
    };
    match phase {
        Phase::Confirm => {
            assert!(!pins_used.is_empty());
            assert!(pins_of(&ca).contains(pins[0].as_bytes()), "Confirm without a pinned CA");
            let verify_with = expect_send(&mut d, T0 + 1, false).unwrap();
            assert_eq!(verify_with, ca);
            let r = respond(&mut d, T0 + 1, 200, &confirm_body);
            if confirm_body != body {
                assert_eq!(r, Err(Error::JwsInvalid), "changed cluster-info confirmed");
                after_failure(&mut d, T0 + 1, Error::JwsInvalid);
                return;
            }
            assert_eq!(r, Ok(()));
        }
        Phase::Done => assert!(pins_used.is_empty(), "Done without the pin step"),
        p => panic!("unexpected phase {p:?}"),
    }
    assert_eq!(d.phase(), Phase::Done);
    if std::env::var_os("KUBEBOOT_FUZZ_TRACE").is_some() {
        eprintln!("trace: Done");
    }
    let Action::Done(found) = d.poll(T0 + 2) else { panic!("not done") };
    assert_eq!(found.server, server);
    assert_eq!(found.ca_pem, &ca[..]);
    assert_eq!(found.cluster_info, kc.as_bytes());
    let mut out = vec![0u8; 64 * 1024];
    match found.write_bootstrap_kubeconfig(&mut out) {
        Ok(n) => {
            let back = Kubeconfig::parse(&out[..n]).expect("written bootstrap kubeconfig parses");
            let r = back.resolve().expect("resolves");
            let mut b = vec![0u8; n];
            assert_eq!(r.server().decode_into(&mut b).unwrap(), server);
            let tok = r.user.token.unwrap();
            assert!(tok.eq_str(TOKEN));
            match r.cluster.certificate_authority_data {
                Some(d) => {
                    let mut t = vec![0u8; d.decoded_len()];
                    assert_eq!(Base64::decode_vec(d.decode_into(&mut t).unwrap()).unwrap(), ca);
                }
                None => assert!(ca.is_empty()),
            }
        }
        Err(e) => panic!("writing the bootstrap kubeconfig: {e:?}"),
    }
});
