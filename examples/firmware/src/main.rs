//! kubeboot on a Cortex-M4 (QEMU `mps2-an386`): parse a bootstrap token, derive a node key,
//! build the client CSR, verify an issued certificate (the flash-gated image), and with feature
//! `full` also build the CertificateSigningRequest object, verify a certificate signed with
//! SHA-384 and compute the rotation deadline; with `refusals` refuse malformed inputs. With feature
//! `m4` every P-256 operation (key, CSR signature, verification) runs in the `p256-cortex-m4`
//! assembly, as firmware built for this core does; without it in RustCrypto's portable `p256`. Reports the footprint (flash and static RAM from the linker
//! symbols, peak stack measured by painting the stack).
//!
//! No allocator is linked and nothing formats: output is plain semihosting writes of strings and
//! decimal integers (no `core::fmt`), so the flash figures are kubeboot's, not the printer's. The
//! exit status tells QEMU whether every check passed.
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use cortex_m_rt::entry;
use kubeboot_firmware::{
    exit, image_sizes, line, paint_stack, put, put_u32, stack_peak, timed, timer_start,
};

#[cfg(feature = "refusals")]
use kubeboot::Error;
#[cfg(feature = "csr-name")]
use kubeboot::api::USAGES_CLIENT_EC;
#[cfg(feature = "full")]
use kubeboot::api::{CsrObject, ObjectName, SIGNER_CLIENT};
use kubeboot::csr::CsrBuilder;
#[cfg(feature = "refusals")]
use kubeboot::error::Reason;
#[cfg(any(feature = "refusals", not(feature = "m4")))]
use kubeboot::key::NodeKey;
use kubeboot::key::P256Signer;
#[cfg(feature = "full")]
use kubeboot::rotation::{needs_rotation, rotation_deadline};
use kubeboot::token::BootstrapToken;
use kubeboot::verify::{Expected, Profile, verify_issued};

const EC_CA: &[u8] = include_bytes!("../../../core/tests/data/ec-ca.crt");
const EC_LEAF: &[u8] = include_bytes!("../../../core/tests/data/ec-leaf.crt");
/// A P-256 CA that signs with ecdsa-with-SHA384, and the leaf it issued for the same key.
#[cfg(feature = "full")]
const EC384_CA: &[u8] = include_bytes!("../../../core/tests/data/ec-sha384-ca.crt");
#[cfg(feature = "full")]
const EC384_LEAF: &[u8] = include_bytes!("../../../core/tests/data/ec-sha384-leaf.crt");
#[cfg(feature = "refusals")]
const K1: &[u8] = include_bytes!("../../../core/tests/data/p256.key");
#[cfg(feature = "refusals")]
const RSA_KEY: &[u8] = include_bytes!("../../../core/tests/data/rsa2048.key");
/// 2027-06-01T00:00:00Z, inside the fixtures' validity (2026-12-02 .. 2036-11-29).
const NOW: i64 = 1_811_808_000;
/// Fixed test entropy for the node key (a real device reads its TRNG).
/// This is SHA-256("k8s-bootstrap-spec-test-vector-p256"), the scalar of the spec's key K1, so the
/// derived key is K1, for which the fixture leaf certificate was issued.
const ENTROPY: [u8; 32] = [
    0x14, 0x1c, 0xe7, 0x4a, 0x3e, 0x4b, 0x20, 0x5f, 0x7e, 0x9c, 0xdf, 0x46, 0x3c, 0x9f, 0x50, 0xba,
    0x3e, 0xc8, 0x91, 0x81, 0xec, 0x50, 0xf1, 0x2d, 0x26, 0x10, 0xcd, 0x43, 0xa7, 0x4a, 0x8f, 0xbc,
];
const NODE: &str = "node-1";

/// The node key: the assembly backend when the firmware is built for it (feature `m4`; then
/// RustCrypto's P-256 arithmetic is not linked unless `full` cross-checks against it), the
/// portable RustCrypto `p256` otherwise.
#[cfg(feature = "m4")]
type Key = kubeboot::backend::cortex_m4::M4Key;
#[cfg(not(feature = "m4"))]
type Key = NodeKey;

// ---------------------------------------------------------------------------------------------
// Interrupt vectors: none is enabled, so one entry (the table must extend past the 16 exception
// vectors) instead of cortex-m-rt's generic 240.

unsafe extern "C" {
    fn DefaultHandler();
}

#[unsafe(link_section = ".vector_table.interrupts")]
#[unsafe(no_mangle)]
static __INTERRUPTS: [unsafe extern "C" fn(); 1] = [DefaultHandler];

fn dwt_probe(mut cp: cortex_m::Peripherals) -> u32 {
    cp.DCB.enable_trace();
    cp.DWT.enable_cycle_counter();
    let a = cortex_m::peripheral::DWT::cycle_count();
    cortex_m::asm::delay(10_000);
    cortex_m::peripheral::DWT::cycle_count().wrapping_sub(a)
}

// ---------------------------------------------------------------------------------------------
// Checks

struct Report {
    failed: bool,
    stack: usize,
}

impl Report {
    fn check(&mut self, ok: bool, what: &str) {
        self.failed |= !ok;
        line(&[what, if ok { " ok" } else { " FAILED" }], None);
    }

    /// Paint the stack, run one step, and record its peak stack (inlined: the painting runs in
    /// `main`'s frame).
    #[inline(always)]
    fn step<R>(&mut self, what: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        paint_stack();
        let r = f(self);
        let peak = stack_peak();
        line(&["stack: ", what, "="], Some(peak as u32));
        self.stack = self.stack.max(peak);
        r
    }
}

#[cfg(feature = "refusals")]
fn is_verify(r: &Result<kubeboot::verify::Verified, Error>, reason: Reason) -> bool {
    matches!(r, Err(Error::Verify(e)) if e.reason == reason)
}

#[entry]
fn main() -> ! {
    paint_stack();
    let mut rep = Report { failed: false, stack: 0 };
    if let Some(cp) = cortex_m::Peripherals::take() {
        line(&["dwt: cyccnt delta over 10000 cycles = "], Some(dwt_probe(cp)));
    }
    timer_start();
    let (_, n) = timed(|| cortex_m::asm::delay(1_000_000));
    // cortex_m::asm::delay(n) runs n + 1 iterations of `subs; bne`: 2 000 002 instructions.
    put(b"calibration: delay(1000000)=");
    put_u32(n);
    put(b" instructions\n");

    rep.step("token", step_token);
    let key = rep.step("key", step_key);
    let Some(key) = key else { fail() };
    let mut csr = [0u8; 512];
    let csr_len = rep.step("csr", |rep| step_csr(rep, &key, &mut csr));
    let csr_pem = csr.get(..csr_len).unwrap_or(&[]);
    #[cfg(all(feature = "m4", feature = "full"))]
    rep.step("m4 = p256", |rep| cross_check(rep, &key, csr_pem));
    #[cfg(feature = "csr-name")]
    rep.step("name", |rep| step_name(rep, &key));
    #[cfg(feature = "full")]
    rep.step("object", |rep| step_object(rep, csr_pem));
    #[cfg(not(feature = "full"))]
    let _ = csr_pem;
    let spki = P256Signer::public_key_spki(&key);
    rep.step("verify", |rep| step_verify(rep, &spki));
    #[cfg(feature = "full")]
    rep.step("verify sha384", |rep| step_verify_sha384(rep, &spki));
    #[cfg(feature = "ecdh")]
    rep.step("ecdh", step_ecdh);
    #[cfg(feature = "refusals")]
    {
        rep.step("refuse-token", refuse_tokens);
        rep.step("refuse-cert", |rep| refuse_certs(rep, &spki));
        rep.step("refuse-key", refuse_keys);
    }
    let (flash, ram) = image_sizes();
    put(b"footprint: flash=");
    put_u32(flash as u32);
    put(b" ram=");
    put_u32(ram as u32);
    line(&[" stack="], Some(rep.stack as u32));
    exit(!rep.failed)
}

fn fail() -> ! {
    exit(false)
}

/// 1. Parse the bootstrap token.
#[inline(never)]
fn step_token(rep: &mut Report) {
    let token = BootstrapToken::parse("abcdef.0123456789abcdef");
    let ok = match &token {
        Ok(t) => t.id() == "abcdef" && t.user_name().as_str() == "system:bootstrap:abcdef",
        Err(_) => false,
    };
    rep.check(ok, "token");
}

/// 2. Derive the node key from the fixed entropy (which is K1's scalar, so the fixture leaf
///    certificate was issued for this key).
#[inline(never)]
fn step_key(rep: &mut Report) -> Option<Key> {
    let (key, n) = timed(|| Key::from_entropy(&ENTROPY));
    line(&["instructions: keygen="], Some(n));
    let ok = matches!(&key, Ok(k) if P256Signer::public_key_spki(k).starts_with(&[0x30, 0x59]));
    rep.check(ok, "key");
    key.ok()
}

/// 3. Build the client CSR (PEM).
#[inline(never)]
fn step_csr(rep: &mut Report, key: &Key, csr: &mut [u8]) -> usize {
    let (r, n) = timed(|| CsrBuilder::client(NODE).and_then(|b| b.write_pem(key, csr)));
    line(&["instructions: csr="], Some(n));
    let len = r.unwrap_or(0);
    let ok =
        csr.get(..len).is_some_and(|p| p.starts_with(b"-----BEGIN CERTIFICATE REQUEST-----\n"));
    rep.check(ok, "csr");
    len
}

/// The `node-csr-<digest>` object name (SHA-512/256 of the key and the request's attributes).
#[cfg(feature = "csr-name")]
#[inline(never)]
fn step_name(rep: &mut Report, key: &Key) {
    let name = kubeboot::api::node_csr_name(
        &P256Signer::public_key_spki(key),
        "system:node:node-1",
        &[kubeboot::csr::NODES_GROUP],
        &USAGES_CLIENT_EC,
    );
    let ok = name.as_str().starts_with("node-csr-") && name.as_str().len() == 52;
    line(&["name: ", name.as_str()], None);
    rep.check(ok, "name");
}

/// 4. The CertificateSigningRequest object (`generateName`; the digest name has its own step).
#[cfg(feature = "full")]
#[inline(never)]
fn step_object(rep: &mut Report, csr_pem: &[u8]) {
    let mut json = [0u8; 1024];
    let usages = &kubeboot::api::USAGES_CLIENT_EC;
    let r = CsrObject::new(ObjectName::Generate, csr_pem, SIGNER_CLIENT, usages, Some(86_400))
        .and_then(|o| o.write_json(&mut json));
    let body = json.get(..r.unwrap_or(0)).unwrap_or(&[]);
    let ok =
        body.starts_with(b"{\"apiVersion\":\"certificates.k8s.io/v1\"") && body.ends_with(b"}");
    rep.check(ok, "object");
}

/// 5. Verify the issued certificate; with `full`, 6. compute its rotation deadline.
#[inline(never)]
fn step_verify(rep: &mut Report, spki: &[u8]) {
    let expected = Expected { node_name: NODE, public_key: spki, profile: Profile::Client };
    let mut scratch = [0u8; 1024];
    let (v, n) = timed(|| verify_issued(EC_LEAF, EC_CA, &expected, NOW, &mut scratch));
    line(&["instructions: verify="], Some(n));
    let ok = matches!(&v, Ok(v) if v.ca_subject.as_str() == "CN=kubernetes-ec");
    rep.check(ok, "verify");
    #[cfg(feature = "full")]
    step_rotation(rep, &v);
}

/// 6. The rotation deadline: between 70 % and 90 % of the lifetime; not due at NOW, due at notAfter.
#[cfg(feature = "full")]
fn step_rotation(rep: &mut Report, v: &Result<kubeboot::verify::Verified, kubeboot::Error>) {
    let ok = match v {
        Ok(v) => {
            let life = v.not_after - v.not_before;
            let d = rotation_deadline(v.not_before, v.not_after, 0x8000_0000);
            d >= v.not_before + life * 7 / 10
                && d <= v.not_before + life * 9 / 10
                && !needs_rotation(d, NOW)
                && needs_rotation(d, v.not_after)
        }
        Err(_) => false,
    };
    rep.check(ok, "rotation");
}

/// RustCrypto's `p256` directly (with `m4`, `NodeKey` itself is the assembly's key).
#[cfg(all(feature = "m4", feature = "full"))]
struct Portable(p256::ecdsa::SigningKey);

#[cfg(all(feature = "m4", feature = "full"))]
impl P256Signer for Portable {
    fn public_point(&self) -> [u8; 65] {
        let mut out = [0u8; 65];
        out.copy_from_slice(self.0.verifying_key().to_sec1_point(false).as_bytes());
        out
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> kubeboot::Result<[u8; 64]> {
        use p256::ecdsa::signature::Signer;
        let sig: p256::ecdsa::Signature = self.0.sign(message);
        let mut out = [0u8; 64];
        out.copy_from_slice(&sig.to_bytes());
        Ok(out)
    }
}

/// With `m4`: RustCrypto's `p256` derives the same key from the same entropy and builds a
/// byte-identical CSR (its own signer: RFC 6979 nonces on both sides). (`NodeKey` itself is the
/// assembly on this target.)
#[cfg(all(feature = "m4", feature = "full"))]
#[inline(never)]
fn cross_check(rep: &mut Report, key: &Key, csr_m4: &[u8]) {
    let Ok(portable) = p256::ecdsa::SigningKey::from_slice(&ENTROPY).map(Portable) else {
        rep.check(false, "m4 = p256 key");
        return;
    };
    rep.check(portable.public_point() == key.public_point(), "m4 = p256 key");
    let mut csr = [0u8; 1024];
    let r = CsrBuilder::client(NODE).and_then(|b| b.write_pem(&portable, &mut csr));
    let ok = matches!(r, Ok(n) if csr.get(..n) == Some(csr_m4));
    rep.check(ok, "m4 = p256 csr");
}

/// The P-256 operations of a join, one at a time: the TLS key exchange (an ephemeral key pair
/// and the shared secret with the server's share) in RustCrypto's portable `p256` (0.14; the 0.13
/// that embedded-tls 0.19 hard-codes is patched to the assembly, `p256-m4/`) and in the assembly
/// (both must agree on the secret), and the assembly's bare signature and verification (a
/// SHA-256 digest given).
/// These are the floor figures of examples/firmware/FOOTPRINT.md. The scalars are fixed (a
/// handshake draws them from its RNG; the arithmetic is the same).
#[cfg(feature = "ecdh")]
#[inline(never)]
fn step_ecdh(rep: &mut Report) {
    use p256::elliptic_curve::sec1::ToSec1Point;
    let (ours, theirs) = (ENTROPY, [0x5a_u8; 32]);
    let peer = p256::SecretKey::from_slice(&theirs).map(|k| k.public_key());
    let (rc, rc_keygen) = timed(|| {
        p256::SecretKey::from_slice(&ours).map(|k| (k.public_key().to_sec1_point(false), k))
    });
    let (rc_secret, rc_agree) = timed(|| match (&rc, &peer) {
        (Ok((_, k)), Ok(p)) => {
            let s = p256::ecdh::diffie_hellman(k.to_nonzero_scalar(), p.as_affine());
            let mut out = [0u8; 32];
            out.copy_from_slice(s.raw_secret_bytes());
            Some(out)
        }
        _ => None,
    });
    let m4_peer = peer.as_ref().ok().and_then(|p| {
        p256_cortex_m4::PublicKey::from_sec1_bytes(p.to_sec1_point(false).as_bytes()).ok()
    });
    let (m4, m4_keygen) = timed(|| {
        p256_cortex_m4::SecretKey::from_bytes(ours)
            .map(|k| (k.public_key().to_uncompressed_sec1_bytes(), k))
    });
    let (m4_secret, m4_agree) = timed(|| match (&m4, &m4_peer) {
        (Ok((_, k)), Some(p)) => Some(*k.agree(p).as_bytes()),
        _ => None,
    });
    // The bare signature and verification over a digest (the nonce from a fixed-seed RNG).
    let digest = [0x42_u8; 32];
    let (sig, m4_sign) =
        timed(|| m4.as_ref().ok().map(|(_, k)| k.sign_prehashed(&digest, FixedRng(0x5eed))));
    let public =
        m4.as_ref().ok().and_then(|(p, _)| p256_cortex_m4::PublicKey::from_sec1_bytes(p).ok());
    let (valid, m4_verify) = timed(|| match (&public, &sig) {
        (Some(p), Some(s)) => p.verify_prehashed(&digest, s),
        _ => false,
    });
    line(&["instructions: ecdh rustcrypto keygen="], Some(rc_keygen));
    line(&["instructions: ecdh rustcrypto agree="], Some(rc_agree));
    line(&["instructions: m4 keygen="], Some(m4_keygen));
    line(&["instructions: m4 agree="], Some(m4_agree));
    line(&["instructions: m4 sign="], Some(m4_sign));
    line(&["instructions: m4 verify="], Some(m4_verify));
    let same_share = match (&rc, &m4) {
        (Ok((a, _)), Ok((b, _))) => a.as_bytes() == b.as_slice(),
        _ => false,
    };
    rep.check(same_share && rc_secret.is_some() && rc_secret == m4_secret, "ecdh m4 = p256");
    rep.check(valid, "m4 sign/verify");
    rep.check(tls_key_exchange(), "p256-m4 = p256");
}

/// embedded-tls's key exchange as patched (`p256-m4/`, over the assembly) against RustCrypto's:
/// its key share is a point RustCrypto accepts, both sides compute the same secret, and the
/// server shares it must refuse (empty, truncated, another tag, off the curve) are refused.
#[cfg(feature = "ecdh")]
#[inline(never)]
fn tls_key_exchange() -> bool {
    use p256::elliptic_curve::sec1::ToSec1Point;
    let Ok(server) = p256::SecretKey::from_slice(&[0x5a_u8; 32]) else { return false };
    let server_share = server.public_key().to_sec1_point(false);
    let ours = p256_m4::ecdh::EphemeralSecret::random(&mut FixedRng(0x7e5));
    let our_share = p256_m4::EncodedPoint::from(&ours.public_key());
    let Ok(our_point) = p256::PublicKey::from_sec1_bytes(our_share.as_ref()) else { return false };
    let theirs = p256::ecdh::diffie_hellman(server.to_nonzero_scalar(), our_point.as_affine());
    let Ok(peer) = p256_m4::PublicKey::from_sec1_bytes(server_share.as_bytes()) else {
        return false;
    };
    let same = ours.diffie_hellman(&peer).raw_secret_bytes()[..] == theirs.raw_secret_bytes()[..];
    let compressed = server.public_key().to_sec1_point(true);
    let compressed_ok = p256_m4::PublicKey::from_sec1_bytes(compressed.as_bytes()).is_ok();
    let mut off_curve = [0u8; 65];
    off_curve.copy_from_slice(server_share.as_bytes());
    off_curve[64] ^= 1;
    let refused = [&[][..], &server_share.as_bytes()[..64], &[4u8; 65][..], &off_curve[..]]
        .iter()
        .all(|b| p256_m4::PublicKey::from_sec1_bytes(b).is_err());
    let mut hybrid = off_curve;
    hybrid[0] = 6;
    same && compressed_ok && refused && p256_m4::PublicKey::from_sec1_bytes(&hybrid).is_err()
}

/// A fixed-seed generator for the measured signature's nonce (xorshift; not for keys).
#[cfg(feature = "ecdh")]
struct FixedRng(u64);

#[cfg(feature = "ecdh")]
impl rand_core_06::RngCore for FixedRng {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        rand_core_06::impls::fill_bytes_via_next(self, dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

#[cfg(feature = "ecdh")]
impl rand_core_06::CryptoRng for FixedRng {}

/// A leaf signed with ecdsa-with-SHA384 by a P-256 CA (what `openssl` makes with `-sha384`):
/// accepted when SHA-512's compression function is linked (the digest feature `csr-name`; through
/// the assembly backend with `m4`), refused as an unsupported algorithm otherwise.
#[cfg(feature = "full")]
#[inline(never)]
fn step_verify_sha384(rep: &mut Report, spki: &[u8]) {
    let expected = Expected { node_name: NODE, public_key: spki, profile: Profile::Client };
    let mut scratch = [0u8; 1024];
    let (v, n) = timed(|| verify_issued(EC384_LEAF, EC384_CA, &expected, NOW, &mut scratch));
    line(&["instructions: verify sha384="], Some(n));
    let ok = if cfg!(feature = "csr-name") {
        matches!(&v, Ok(v) if v.ca_subject.as_str() == "CN=kubernetes-ec-sha384")
    } else {
        matches!(&v, Err(kubeboot::Error::Verify(e))
            if e.reason == kubeboot::error::Reason::UnsupportedAlgorithm)
    };
    rep.check(ok, "verify sha384");
}

#[cfg(feature = "refusals")]
#[inline(never)]
fn refuse_tokens(rep: &mut Report) {
    let cases: [(&str, Error); 6] = [
        ("", Error::InvalidToken),
        ("abcdef0123456789abcdef", Error::InvalidToken),
        ("abcdef.0123456789ABCDEF", Error::InvalidToken),
        ("abcde.0123456789abcdef", Error::InvalidToken),
        ("abcdef.0123456789abcdef0", Error::InvalidToken),
        ("abcdef.0123456789abcde\u{e9}", Error::InvalidToken),
    ];
    let mut ok = true;
    for (input, want) in cases {
        let got = BootstrapToken::parse(input).err();
        if got != Some(want) {
            ok = false;
            line(&["  token case of length "], Some(input.len() as u32));
        }
    }
    rep.check(ok, "refuse token");
}

#[cfg(feature = "refusals")]
#[inline(never)]
fn refuse_certs(rep: &mut Report, spki: &[u8]) {
    let expected = Expected { node_name: NODE, public_key: spki, profile: Profile::Client };
    let mut scratch = [0u8; 1024];
    let mut ok = true;
    let mut case = |good: bool, what: &str| {
        if !good {
            ok = false;
            line(&["  cert case ", what, " not refused as expected"], None);
        }
    };
    // Truncated PEM.
    let r = verify_issued(EC_LEAF.get(..300).unwrap_or(&[]), EC_CA, &expected, NOW, &mut scratch);
    case(is_verify(&r, Reason::Malformed), "truncated");
    // Garbage in the base64.
    let garbage = b"-----BEGIN CERTIFICATE-----\nMIIB!!!!\n-----END CERTIFICATE-----\n";
    let r = verify_issued(garbage, EC_CA, &expected, NOW, &mut scratch);
    case(is_verify(&r, Reason::Malformed), "garbage");
    // A flipped bit in the signature (last base64 character before the footer).
    let mut leaf = [0u8; 1024];
    let n = EC_LEAF.len().min(leaf.len());
    if let (Some(dst), Some(src)) = (leaf.get_mut(..n), EC_LEAF.get(..n)) {
        dst.copy_from_slice(src);
    }
    let footer = b"-----END CERTIFICATE-----";
    let pos = leaf.get(..n).and_then(|l| l.windows(footer.len()).position(|w| w == footer));
    // Walk back over "\n" and any "=" padding to the last data character; change one bit.
    if let Some(mut i) = pos {
        i = i.saturating_sub(2);
        while leaf.get(i) == Some(&b'=') {
            i -= 1;
        }
        i = i.saturating_sub(4);
        if let Some(c) = leaf.get_mut(i) {
            *c = if *c == b'A' { b'B' } else { b'A' };
        }
    }
    let r = verify_issued(leaf.get(..n).unwrap_or(&[]), EC_CA, &expected, NOW, &mut scratch);
    case(is_verify(&r, Reason::BadSignature) || is_verify(&r, Reason::Malformed), "tampered");
    // The leaf as its own CA: untrusted.
    let r = verify_issued(EC_LEAF, EC_LEAF, &expected, NOW, &mut scratch);
    case(is_verify(&r, Reason::Untrusted), "self-anchored");
    // Expired (2040) and not yet valid (2025).
    let r = verify_issued(EC_LEAF, EC_CA, &expected, 2_208_988_800, &mut scratch);
    case(is_verify(&r, Reason::Expired), "expired");
    let r = verify_issued(EC_LEAF, EC_CA, &expected, 1_735_689_600, &mut scratch);
    case(is_verify(&r, Reason::NotYetValid), "not yet valid");
    // Another node's name, another key.
    let other = Expected { node_name: "node-2", ..expected };
    let r = verify_issued(EC_LEAF, EC_CA, &other, NOW, &mut scratch);
    case(is_verify(&r, Reason::SubjectMismatch), "other node");
    let other_spki = NodeKey::from_entropy(&[0x42; 32]).map(|k| k.public_key_spki());
    if let Ok(other_spki) = other_spki {
        let other = Expected { public_key: &other_spki, ..expected };
        let r = verify_issued(EC_LEAF, EC_CA, &other, NOW, &mut scratch);
        case(is_verify(&r, Reason::KeyMismatch), "other key");
    }
    // Scratch too small.
    let r = verify_issued(EC_LEAF, EC_CA, &expected, NOW, &mut scratch[..100]);
    case(matches!(r, Err(Error::BufferTooSmall { .. })), "short scratch");
    rep.check(ok, "refuse certificate");
}

#[cfg(feature = "refusals")]
#[inline(never)]
fn refuse_keys(rep: &mut Report) {
    let mut ok = true;
    let mut case = |good: bool, what: &str| {
        if !good {
            ok = false;
            line(&["  key/csr case ", what, " not refused as expected"], None);
        }
    };
    case(
        NodeKey::from_entropy(&[7u8; 31]).err() == Some(Error::InsufficientEntropy),
        "short entropy",
    );
    case(NodeKey::from_entropy(&[0u8; 32]).err() == Some(Error::BadEntropy), "zero scalar");
    case(NodeKey::from_entropy(&[0xffu8; 64]).err() == Some(Error::BadEntropy), "scalar >= n");
    case(NodeKey::from_pem(b"not a key").err() == Some(Error::MalformedKey), "garbage key");
    let k1 = NodeKey::from_pem(K1).map(|k| k.public_key_spki());
    case(k1.ok() == NodeKey::from_entropy(&ENTROPY).ok().map(|k| k.public_key_spki()), "k1 pem");
    case(NodeKey::from_pem(RSA_KEY).err() == Some(Error::UnsupportedKey), "rsa key");
    let bad = b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n";
    case(NodeKey::from_pem(bad).err() == Some(Error::MalformedKey), "truncated key");
    case(CsrBuilder::client("Node_1!").err() == Some(Error::InvalidNodeName), "bad node name");
    case(CsrBuilder::client("").err() == Some(Error::InvalidNodeName), "empty node name");
    if let (Ok(key), Ok(b)) = (NodeKey::from_entropy(&ENTROPY), CsrBuilder::client(NODE)) {
        let mut small = [0u8; 64];
        case(
            matches!(b.write_pem(&key, &mut small), Err(Error::BufferTooSmall { .. })),
            "short buffer",
        );
    }
    let usages = &kubeboot::api::USAGES_CLIENT_EC;
    let r = CsrObject::new(ObjectName::Generate, b"x", SIGNER_CLIENT, usages, Some(60));
    case(r.err() == Some(Error::InvalidExpirationSeconds), "short expiration");
    rep.check(ok, "refuse key/csr");
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    put(b"panic\n");
    exit(false)
}
