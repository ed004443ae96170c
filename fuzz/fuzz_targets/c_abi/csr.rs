//! The CSR functions: `kubeboot_csr_write` (client and serving CSRs by key and through a C sign
//! callback), the `node-csr-` name, the CertificateSigningRequest object and the policy check.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::csr::{self as fcsr, kubeboot_csr_spec, kubeboot_signer, kubeboot_str};
use kubeboot_ffi::key::{self as fkey, kubeboot_key};
use std::ptr::{null, null_mut};

/// What the C sign callback does.
#[derive(Arbitrary, Debug, Clone)]
pub enum SignBehaviour {
    /// Return this non-zero status.
    Fail(u32),
    /// Return OK with these 64 bytes as `r || s`.
    Bytes([u8; 32], [u8; 32]),
    /// Sign with the live key of `h` (kubeboot_key_sign); no key: fail.
    Key,
}

/// What `sign_cb` does, passed as its userdata.
pub struct SignerState {
    pub behaviour: SignBehaviour,
    pub key: *mut kubeboot_key,
}

/// The C sign callback of [`CsrWrite`] and the agent's `kubeboot_agent_sign_with`.
pub unsafe extern "C" fn sign_cb(
    ud: *mut core::ffi::c_void,
    msg: *const u8,
    len: usize,
    rs: *mut u8,
) -> u32 {
    // SAFETY: `ud` is the SignerState of the call that passed it; `msg`/`rs` per the ABI.
    let st = unsafe { &*(ud as *const SignerState) };
    assert!(!msg.is_null() && len > 0 && !rs.is_null());
    match &st.behaviour {
        SignBehaviour::Fail(c) => (*c).max(1),
        SignBehaviour::Bytes(r, s) => {
            // SAFETY: the ABI hands 64 writable bytes at `rs`.
            let out = unsafe { std::slice::from_raw_parts_mut(rs, 64) };
            out[..32].copy_from_slice(r);
            out[32..].copy_from_slice(s);
            0
        }
        SignBehaviour::Key if st.key.is_null() => 7,
        SignBehaviour::Key => fkey::kubeboot_key_sign(st.key, msg, len, rs) as u32,
    }
}

/// Who signs a [`CsrWrite`].
#[derive(Arbitrary, Debug)]
pub enum Signs {
    /// A live key (NULL when there is none).
    Key(H),
    /// A C callback that behaves as told, with a live key's public point (NULL: these bytes as
    /// the point).
    Callback { h: H, point: Vec<u8>, null_callback: bool, behaviour: SignBehaviour },
    /// Both a key and a callback (`INVALID_PARAMETER`).
    Both(H),
    /// Neither (`INVALID_PARAMETER`).
    Neither,
}

/// `kubeboot_csr_write` of any spec (NULL spec too); a client PEM CSR a key made passes
/// `kubeboot_csr_check`.
#[derive(Arbitrary, Debug)]
pub struct CsrWrite {
    pub null_spec: bool,
    pub profile: u32,
    pub node: Bytes,
    pub dns: Option<Vec<Bytes>>,
    pub ips: Option<Vec<Bytes>>,
    /// NULL arrays with these counts (when `dns` / `ips` are `None`).
    pub null_counts: (u8, u8),
    pub format: u32,
    pub signs: Signs,
    pub out: Out,
}

/// `kubeboot_key_node_csr_name`, the same as `kubeboot_node_csr_name` of its point.
#[derive(Arbitrary, Debug)]
pub struct NodeCsrName {
    pub h: H,
    pub node: Bytes,
    pub out: Out,
}

/// `kubeboot_csr_object_json`; its output is JSON.
#[derive(Arbitrary, Debug)]
pub struct CsrObjectJson {
    pub pem: Bytes,
    pub name: Bytes,
    pub profile: u32,
    pub exp: u32,
    pub out: Out,
}

/// `kubeboot_csr_check`.
#[derive(Arbitrary, Debug)]
pub struct CsrCheck {
    pub pem: Bytes,
    pub signer: Bytes,
    pub usages: Vec<Bytes>,
    pub exp: u32,
}

/// A client CSR passes our own policy check.
fn check_client_csr(pem: &[u8]) {
    let signer = b"kubernetes.io/kube-apiserver-client-kubelet";
    let u = [
        kubeboot_str { data: b"digital signature".as_ptr().cast(), len: 17 },
        kubeboot_str { data: b"client auth".as_ptr().cast(), len: 11 },
    ];
    let r = fcsr::kubeboot_csr_check(
        pem.as_ptr(),
        pem.len(),
        signer.as_ptr().cast(),
        signer.len(),
        u.as_ptr(),
        2,
        0,
    );
    assert_eq!(rc(r), OK);
}

pub fn write(hs: &mut Handles, op: &CsrWrite) {
    let CsrWrite { null_spec, profile, node, dns, ips, null_counts, format, signs, out } = op;
    let n = Arg::new(node);
    let d: Vec<Arg> = dns.iter().flatten().take(20).map(Arg::new).collect();
    let i: Vec<Arg> = ips.iter().flatten().take(20).map(Arg::new).collect();
    let (ds, is) = (strs(&d), strs(&i));
    let (dns_ptr, dns_count) = match dns {
        Some(_) => (ds.as_ptr(), ds.len()),
        None => (null(), usize::from(null_counts.0)),
    };
    let (ip_ptr, ip_count) = match ips {
        Some(_) => (is.as_ptr(), is.len()),
        None => (null(), usize::from(null_counts.1)),
    };
    let (mut key, mut cb) = (std::ptr::null_mut::<kubeboot_key>(), None);
    let mut public_point = [0u8; 65];
    let mut behaviour = SignBehaviour::Key;
    let mut null_callback = false;
    match signs {
        Signs::Key(h) => key = pick(&hs.keys, h),
        Signs::Callback { h, point, null_callback: nc, behaviour: b } => {
            let k = pick(&hs.keys, h);
            if k.is_null() {
                for (d, s) in public_point.iter_mut().zip(point) {
                    *d = *s;
                }
            } else {
                assert_eq!(rc(fkey::kubeboot_key_public_point(k, public_point.as_mut_ptr())), OK);
            }
            cb = Some(k);
            behaviour = b.clone();
            null_callback = *nc;
        }
        Signs::Both(h) => {
            key = pick(&hs.keys, h);
            cb = Some(key);
        }
        Signs::Neither => {}
    }
    let mut st = SignerState { behaviour: behaviour.clone(), key: cb.unwrap_or(null_mut()) };
    let signer = kubeboot_signer {
        sign: if null_callback { None } else { Some(sign_cb) },
        userdata: (&mut st as *mut SignerState).cast(),
        public_point,
    };
    let spec = kubeboot_csr_spec {
        profile: *profile,
        node_name: n.cptr(),
        node_name_len: n.len,
        dns_names: dns_ptr,
        dns_count,
        ip_addresses: ip_ptr,
        ip_count,
        format: *format,
        key,
        signer: if cb.is_some() { &signer } else { null() },
    };
    let sp: *const kubeboot_csr_spec = if *null_spec { null() } else { &spec };
    let serving = *profile == fcsr::KUBEBOOT_PROFILE_SERVING;
    // Only the serving profile reads the SANs: a client CSR has none.
    let bad_sans = serving
        && (d.iter().chain(&i).any(Arg::bad)
            || (dns.is_none() && null_counts.0 > 0)
            || (ips.is_none() && null_counts.1 > 0));
    let one_signer = match signs {
        Signs::Key(_) => !key.is_null(),
        Signs::Callback { .. } => true,
        _ => false,
    };
    let bad = *null_spec
        || n.bad()
        || *format > 1
        || *profile > 1
        || bad_sans
        || !one_signer
        || (cb.is_some() && null_callback)
        || matches!(behaviour, SignBehaviour::Fail(_))
        // Fuzzed `r || s` bytes are not a signature under the key: the library checks
        // what the callback returns, so the call ends in SIGNER_FAILED.
        || matches!(behaviour, SignBehaviour::Bytes(..))
        || (cb.is_some() && matches!(behaviour, SignBehaviour::Key) && st.key.is_null());
    let (_, got) =
        out_call_bounded(out, bad, &mut |p, l, ol| fcsr::kubeboot_csr_write(sp, p, l, ol));
    if let (Some(g), false, Signs::Key(_)) = (got, serving, signs) {
        if *format == fcsr::KUBEBOOT_FORMAT_PEM {
            check_client_csr(&g);
        }
    }
}

pub fn node_csr_name(hs: &mut Handles, op: &NodeCsrName) {
    let NodeCsrName { h, node, out } = op;
    let k = pick(&hs.keys, h);
    let n = Arg::new(node);
    let (_, a) = out_call(out, k.is_null() || n.bad(), &mut |p, l, ol| {
        fcsr::kubeboot_key_node_csr_name(k, n.cptr(), n.len, p.cast(), l, ol)
    });
    if !k.is_null() {
        let mut point = [0u8; 65];
        assert_eq!(rc(fkey::kubeboot_key_public_point(k, point.as_mut_ptr())), OK);
        let (_, b) = out_call(out, n.bad(), &mut |p, l, ol| {
            fcsr::kubeboot_node_csr_name(point.as_ptr(), n.cptr(), n.len, p.cast(), l, ol)
        });
        assert_eq!(a, b, "by key and by point differ");
        if let Some(a) = a {
            assert_eq!(a.len(), fcsr::KUBEBOOT_NODE_CSR_NAME_LEN);
        }
    }
}

pub fn object_json(op: &CsrObjectJson) {
    let CsrObjectJson { pem, name, profile, exp, out } = op;
    let (p_, n) = (Arg::new(pem), Arg::new(name));
    let (_, got) = out_call(out, p_.bad() || n.bad(), &mut |p, l, ol| {
        fcsr::kubeboot_csr_object_json(
            p_.ptr(),
            p_.len,
            n.cptr(),
            n.len,
            *profile,
            *exp,
            p.cast(),
            l,
            ol,
        )
    });
    if let Some(g) = got {
        serde_json::from_slice::<serde_json::Value>(&g).expect("CSR object is JSON");
    }
}

pub fn check(op: &CsrCheck) {
    let CsrCheck { pem, signer, usages, exp } = op;
    let (p_, s) = (Arg::new(pem), Arg::new(signer));
    let u: Vec<Arg> = usages.iter().take(70).map(Arg::new).collect();
    let us = strs(&u);
    let r = rc(fcsr::kubeboot_csr_check(
        p_.ptr(),
        p_.len,
        s.cptr(),
        s.len,
        us.as_ptr(),
        us.len(),
        *exp,
    ));
    if p_.bad() || s.bad() || u.iter().any(Arg::bad) {
        assert_ne!(r, OK);
    }
}
