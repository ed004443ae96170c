//! Issued-certificate validation (`kubeboot_verify_issued`, its caller-scratch variant and
//! `kubeboot_verify_scratch_len`) and the CA pins.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::csr::kubeboot_str;
use kubeboot_ffi::expected::kubeboot_expected;
use kubeboot_ffi::key::{self as fkey, kubeboot_key};
use kubeboot_ffi::verify::{self as fver, kubeboot_ca_pin, kubeboot_verified};
use std::ptr::{null, null_mut};

/// The key's SubjectPublicKeyInfo DER; empty for a NULL or failing key.
pub fn spki_of(k: *mut kubeboot_key) -> Vec<u8> {
    let mut spki = vec![0u8; 91];
    let mut sl = 0usize;
    if k.is_null()
        || rc(fkey::kubeboot_key_public_spki_der(k, spki.as_mut_ptr(), 91, &mut sl)) != OK
    {
        spki.clear();
    }
    spki
}

/// A `kubeboot_verified` filled with CANARY bytes (to see whether anything wrote it).
pub fn canary_verified() -> kubeboot_verified {
    // SAFETY: kubeboot_verified is plain data; all-CANARY bytes are a valid value.
    unsafe { std::mem::transmute([CANARY; std::mem::size_of::<kubeboot_verified>()]) }
}

/// The bytes of a `kubeboot_verified` (plain data without padding: every byte is a field's).
pub fn verified_bytes(v: kubeboot_verified) -> [u8; std::mem::size_of::<kubeboot_verified>()] {
    // SAFETY: same size; plain data.
    unsafe { std::mem::transmute(v) }
}

/// A `kubeboot_expected` for node `n`, `profile` and the SAN arrays `dns` / `ips`.
pub fn expected(
    n: &Arg,
    profile: u32,
    dns: &[kubeboot_str],
    ips: &[kubeboot_str],
) -> kubeboot_expected {
    kubeboot_expected {
        node_name: n.cptr(),
        node_name_len: n.len,
        profile,
        dns_names: dns.as_ptr(),
        dns_count: dns.len(),
        ip_addresses: ips.as_ptr(),
        ip_count: ips.len(),
    }
}

/// `kubeboot_verify_issued`.
#[derive(Arbitrary, Debug)]
pub struct VerifyIssued {
    pub cert: Bytes,
    pub ca: Bytes,
    pub node: Bytes,
    pub h: H,
    pub profile: u32,
    pub dns: Vec<Bytes>,
    pub ips: Vec<Bytes>,
    pub now: i64,
    pub null_out: bool,
}

/// `kubeboot_verify_scratch_len`, then `kubeboot_verify_issued_scratch` and
/// `kubeboot_verify_issued` on the same inputs.
#[derive(Arbitrary, Debug)]
pub struct VerifyScratch {
    pub cert: Bytes,
    pub ca: Bytes,
    pub node: Bytes,
    pub h: H,
    pub profile: u32,
    pub dns: Vec<Bytes>,
    pub ips: Vec<Bytes>,
    pub now: i64,
    /// Scratch bytes: the needed size plus or minus this (clamped at 0).
    pub delta: i8,
    pub null_scratch: bool,
    pub null_needed: bool,
}

/// `kubeboot_ca_pin_parse`.
#[derive(Arbitrary, Debug)]
pub struct CaPinParse {
    pub text: Bytes,
    pub null_out: bool,
}

/// `kubeboot_ca_pin_check` (`None`: a NULL pin array).
#[derive(Arbitrary, Debug)]
pub struct CaPinCheck {
    pub pins: Option<Vec<[u8; 32]>>,
    pub ca: Bytes,
}

/// `kubeboot_ca_pins_of_pem`; every pin listed parses back.
#[derive(Arbitrary, Debug)]
pub struct CaPinsOfPem {
    pub ca: Bytes,
    pub out: Out,
}

pub fn issued(hs: &mut Handles, op: &VerifyIssued) {
    let VerifyIssued { cert, ca, node, h, profile, dns, ips, now, null_out } = op;
    let (c, a, n) = (Arg::new(cert), Arg::new(ca), Arg::new(node));
    let k = pick(&hs.keys, h);
    let spki = spki_of(k);
    let d: Vec<Arg> = dns.iter().take(20).map(Arg::new).collect();
    let i: Vec<Arg> = ips.iter().take(20).map(Arg::new).collect();
    let (ds, is) = (strs(&d), strs(&i));
    let x = expected(&n, *profile, &ds, &is);
    let mut v = canary_verified();
    let vp: *mut kubeboot_verified = if *null_out { null_mut() } else { &mut v };
    let r = rc(fver::kubeboot_verify_issued(
        c.ptr(),
        c.len,
        a.ptr(),
        a.len,
        &x,
        spki.as_ptr(),
        spki.len(),
        *now,
        vp,
    ));
    let bytes = verified_bytes(v);
    if r != OK {
        assert!(bytes.iter().all(|&b| b == CANARY), "*out written on error {r}");
    } else {
        assert!(!*null_out && !c.bad() && !a.bad() && !n.bad());
        assert!(v.not_before <= *now && *now <= v.not_after);
        assert!(v.ca_subject_len <= fver::KUBEBOOT_CA_SUBJECT_CAP);
    }
}

pub fn scratch(hs: &mut Handles, op: &VerifyScratch) {
    let VerifyScratch {
        cert,
        ca,
        node,
        h,
        profile,
        dns,
        ips,
        now,
        delta,
        null_scratch,
        null_needed,
    } = op;
    let (c, a, n) = (Arg::new(cert), Arg::new(ca), Arg::new(node));
    let k = pick(&hs.keys, h);
    let spki = spki_of(k);
    let d: Vec<Arg> = dns.iter().take(20).map(Arg::new).collect();
    let i: Vec<Arg> = ips.iter().take(20).map(Arg::new).collect();
    let (ds, is) = (strs(&d), strs(&i));
    let x = expected(&n, *profile, &ds, &is);
    let mut needed = SENTINEL;
    let rl = rc(fver::kubeboot_verify_scratch_len(c.ptr(), c.len, a.ptr(), a.len, &mut needed));
    if rl != OK {
        assert_eq!(needed, SENTINEL, "scratch length written on error {rl}");
        assert!(c.bad() || a.bad(), "scratch_len failed ({rl}) without a NULL");
        return;
    }
    let len = (needed as i64 + i64::from(*delta)).max(0) as usize;
    let mut scratch = vec![CANARY; len].into_boxed_slice();
    let sp = if *null_scratch { null_mut() } else { scratch.as_mut_ptr() };
    let mut got_needed = SENTINEL;
    let np: *mut usize = if *null_needed { null_mut() } else { &mut got_needed };
    let mut v = canary_verified();
    let r = rc(fver::kubeboot_verify_issued_scratch(
        c.ptr(),
        c.len,
        a.ptr(),
        a.len,
        &x,
        spki.as_ptr(),
        spki.len(),
        *now,
        sp,
        len,
        np,
        &mut v,
    ));
    let mut w = canary_verified();
    let rw = rc(fver::kubeboot_verify_issued(
        c.ptr(),
        c.len,
        a.ptr(),
        a.len,
        &x,
        spki.as_ptr(),
        spki.len(),
        *now,
        &mut w,
    ));
    let vb = verified_bytes(v);
    if r == OK {
        assert!(!*null_scratch || len == 0);
        assert_eq!(rw, OK, "scratch verify OK, heap verify {rw}");
        let wb = verified_bytes(w);
        assert_eq!(vb, wb, "the two entry points report differently");
    } else {
        assert!(vb.iter().all(|&b| b == CANARY), "*out written on error {r}");
        if r == INSUFFICIENT {
            assert!(len < needed, "INSUFFICIENT_SIZE with {len} >= {needed} bytes");
            if !*null_needed {
                assert_eq!(got_needed, needed);
            }
        } else if len >= needed && !*null_scratch && !*null_needed {
            assert_eq!(r, rw, "scratch verify {r}, heap verify {rw}");
        }
    }
}

pub fn pin_parse(op: &CaPinParse) {
    let CaPinParse { text, null_out } = op;
    let t = Arg::new(text);
    let mut pin = kubeboot_ca_pin { sha256: [CANARY; 32] };
    let pp: *mut kubeboot_ca_pin = if *null_out { null_mut() } else { &mut pin };
    let r = rc(fver::kubeboot_ca_pin_parse(t.cptr(), t.len, pp));
    if r != OK {
        assert_eq!(pin.sha256, [CANARY; 32]);
    } else {
        assert!(!*null_out && !t.bad());
        // The pin is the hex in the text.
        let s = std::str::from_utf8(&t.store[..t.len]).unwrap();
        let hex: String = pin.sha256.iter().map(|b| format!("{b:02x}")).collect();
        assert!(s.to_ascii_lowercase().ends_with(&hex), "{s} vs {hex}");
    }
}

pub fn pin_check(op: &CaPinCheck) {
    let CaPinCheck { pins, ca } = op;
    let a = Arg::new(ca);
    let ps: Vec<kubeboot_ca_pin> =
        pins.iter().flatten().take(70).map(|p| kubeboot_ca_pin { sha256: *p }).collect();
    let pp = if pins.is_none() { null() } else { ps.as_ptr() };
    let r = rc(fver::kubeboot_ca_pin_check(pp, ps.len(), a.ptr(), a.len));
    if a.bad() || ps.is_empty() {
        assert_ne!(r, OK);
    }
}

pub fn pins_of_pem(op: &CaPinsOfPem) {
    let CaPinsOfPem { ca, out } = op;
    let a = Arg::new(ca);
    let (_, got) = out_call(out, a.bad(), &mut |p, l, ol| {
        fver::kubeboot_ca_pins_of_pem(a.ptr(), a.len, p.cast(), l, ol)
    });
    if let Some(g) = got {
        // Every pin listed parses back.
        for line in String::from_utf8(g).unwrap().split_whitespace() {
            let mut pin = kubeboot_ca_pin { sha256: [0; 32] };
            assert_eq!(
                rc(fver::kubeboot_ca_pin_parse(line.as_ptr().cast(), line.len(), &mut pin)),
                OK,
                "{line}"
            );
        }
    }
}
