//! `kubeboot_key_*`: from PEM, DER and entropy, generate, the PEM / SPKI outputs, and signing
//! (the signature verified with the p256 crate).

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::key as fkey;
use std::ptr::null_mut;

/// `kubeboot_key_to_pem` or `kubeboot_key_public_spki_der`.
#[derive(Arbitrary, Debug)]
pub struct KeyText {
    pub pem: bool,
    pub h: H,
    pub out: Out,
}

/// `kubeboot_key_sign`; the signature is verified with the p256 crate.
#[derive(Arbitrary, Debug)]
pub struct KeySign {
    pub h: H,
    pub msg: Bytes,
    pub null_out: bool,
}

/// `kubeboot_key_generate` (OS RNG), or with a NULL `*out`.
#[derive(Arbitrary, Debug)]
pub struct KeyGenerate {
    pub null_out: bool,
}

pub fn from_pem(hs: &mut Handles, b: &Bytes) {
    let a = Arg::new(b);
    new_handle(&mut hs.keys, a.bad(), |o| fkey::kubeboot_key_from_pem(a.ptr(), a.len, o));
}

pub fn from_der(hs: &mut Handles, b: &Bytes) {
    let a = Arg::new(b);
    new_handle(&mut hs.keys, a.bad(), |o| fkey::kubeboot_key_from_der(a.ptr(), a.len, o));
}

pub fn from_entropy(hs: &mut Handles, b: &Bytes) {
    let a = Arg::new(b);
    new_handle(&mut hs.keys, a.bad(), |o| fkey::kubeboot_key_from_entropy(a.ptr(), a.len, o));
}

pub fn text(hs: &mut Handles, op: &KeyText) {
    let KeyText { pem, h, out } = op;
    let k = pick(&hs.keys, h);
    let (_, got) = if *pem {
        out_call(out, k.is_null(), &mut |p, l, ol| fkey::kubeboot_key_to_pem(k, p.cast(), l, ol))
    } else {
        out_call(out, k.is_null(), &mut |p, l, ol| fkey::kubeboot_key_public_spki_der(k, p, l, ol))
    };
    if let Some(g) = got {
        assert_eq!(
            g.len(),
            if *pem { fkey::KUBEBOOT_KEY_SEC1_PEM_LEN } else { fkey::KUBEBOOT_KEY_SPKI_LEN }
        );
    }
}

pub fn sign(hs: &mut Handles, op: &KeySign) {
    let KeySign { h, msg, null_out } = op;
    let k = pick(&hs.keys, h);
    let m = Arg::new(msg);
    let mut sig = [CANARY; 64];
    let sp = if *null_out { null_mut() } else { sig.as_mut_ptr() };
    let r = rc(fkey::kubeboot_key_sign(k, m.ptr(), m.len, sp));
    if k.is_null() || *null_out || m.bad() {
        assert_ne!(r, OK);
    }
    if r != OK {
        assert!(sig.iter().all(|&b| b == CANARY));
        return;
    }
    let mut point = [CANARY; 65];
    assert_eq!(rc(fkey::kubeboot_key_public_point(k, point.as_mut_ptr())), OK);
    use p256::ecdsa::signature::Verifier;
    let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&point).expect("a P-256 point");
    let s = p256::ecdsa::Signature::from_slice(&sig).expect("r||s");
    vk.verify(&m.store[..m.len], &s).expect("kubeboot_key_sign signature verifies");
}

pub fn generate(hs: &mut Handles, op: &KeyGenerate) {
    let KeyGenerate { null_out } = op;
    if *null_out {
        assert_ne!(rc(fkey::kubeboot_key_generate(null_mut())), OK);
    } else {
        new_handle(&mut hs.keys, false, |o| fkey::kubeboot_key_generate(o));
    }
}
