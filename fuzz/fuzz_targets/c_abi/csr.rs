//! The CSR functions: client and serving CSRs by key and through a C sign callback, the
//! `node-csr-` name, the CertificateSigningRequest object and the policy check.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::csr::{self as fcsr, kubeboot_signer, kubeboot_str};
use kubeboot_ffi::key::{self as fkey, kubeboot_key};
use std::ptr::null;

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

/// The C sign callback of [`CsrWithSigner`].
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

/// `kubeboot_csr_client`; a PEM CSR passes `kubeboot_csr_check`.
#[derive(Arbitrary, Debug)]
pub struct CsrClient {
    pub h: H,
    pub node: Bytes,
    pub format: u32,
    pub out: Out,
}

/// `kubeboot_csr_serving`.
#[derive(Arbitrary, Debug)]
pub struct CsrServing {
    pub h: H,
    pub node: Bytes,
    pub dns: Vec<Bytes>,
    pub ips: Vec<Bytes>,
    pub format: u32,
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

/// `kubeboot_csr_client_with_signer` / `kubeboot_csr_serving_with_signer` with a callback that
/// behaves as `behaviour` says.
#[derive(Arbitrary, Debug)]
pub struct CsrWithSigner {
    /// The signer's key (its public point goes in the signer); NULL: an arbitrary point.
    pub h: H,
    pub point: Vec<u8>,
    pub null_signer: bool,
    pub null_callback: bool,
    pub behaviour: SignBehaviour,
    pub serving: bool,
    pub node: Bytes,
    pub dns: Vec<Bytes>,
    pub ips: Vec<Bytes>,
    pub format: u32,
    pub out: Out,
}

pub fn client(hs: &mut Handles, op: &CsrClient) {
    let CsrClient { h, node, format, out } = op;
    let k = pick(&hs.keys, h);
    let n = Arg::new(node);
    let (_, got) = out_call_bounded(out, k.is_null() || n.bad() || *format > 1, &mut |p, l, ol| {
        fcsr::kubeboot_csr_client(k, n.cptr(), n.len, *format, p, l, ol)
    });
    if let Some(g) = got {
        // Our own checker accepts what we build.
        if *format == fcsr::KUBEBOOT_FORMAT_PEM {
            let signer = b"kubernetes.io/kube-apiserver-client-kubelet";
            let u = [
                kubeboot_str { data: b"digital signature".as_ptr().cast(), len: 17 },
                kubeboot_str { data: b"client auth".as_ptr().cast(), len: 11 },
            ];
            assert_eq!(
                rc(fcsr::kubeboot_csr_check(
                    g.as_ptr(),
                    g.len(),
                    signer.as_ptr().cast(),
                    signer.len(),
                    u.as_ptr(),
                    2,
                    0
                )),
                OK
            );
        }
    }
}

pub fn serving(hs: &mut Handles, op: &CsrServing) {
    let CsrServing { h, node, dns, ips, format, out } = op;
    let k = pick(&hs.keys, h);
    let n = Arg::new(node);
    let d: Vec<Arg> = dns.iter().take(20).map(Arg::new).collect();
    let i: Vec<Arg> = ips.iter().take(20).map(Arg::new).collect();
    let (ds, is) = (strs(&d), strs(&i));
    let bad = k.is_null() || n.bad() || d.iter().chain(&i).any(Arg::bad);
    out_call_bounded(out, bad, &mut |p, l, ol| {
        fcsr::kubeboot_csr_serving(
            k,
            n.cptr(),
            n.len,
            ds.as_ptr(),
            ds.len(),
            is.as_ptr(),
            is.len(),
            *format,
            p,
            l,
            ol,
        )
    });
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

pub fn with_signer(hs: &mut Handles, op: &CsrWithSigner) {
    let CsrWithSigner {
        h,
        point,
        null_signer,
        null_callback,
        behaviour,
        serving,
        node,
        dns,
        ips,
        format,
        out,
    } = op;
    let k = pick(&hs.keys, h);
    let mut public_point = [0u8; 65];
    if k.is_null() {
        for (d, s) in public_point.iter_mut().zip(point) {
            *d = *s;
        }
    } else {
        assert_eq!(rc(fkey::kubeboot_key_public_point(k, public_point.as_mut_ptr())), OK);
    }
    let mut st = SignerState { behaviour: behaviour.clone(), key: k };
    let signer = kubeboot_signer {
        sign: if *null_callback { None } else { Some(sign_cb) },
        userdata: (&mut st as *mut SignerState).cast(),
        public_point,
    };
    let sp: *const kubeboot_signer = if *null_signer { null() } else { &signer };
    let n = Arg::new(node);
    let d: Vec<Arg> = dns.iter().take(20).map(Arg::new).collect();
    let i: Vec<Arg> = ips.iter().take(20).map(Arg::new).collect();
    let (ds, is) = (strs(&d), strs(&i));
    let bad = *null_signer
        || *null_callback
        || n.bad()
        || *format > 1
        // Only the serving CSR takes the SANs (a client CSR has none).
        || (*serving && d.iter().chain(&i).any(Arg::bad))
        || matches!(behaviour, SignBehaviour::Fail(_))
        // Fuzzed `r || s` bytes are not a signature under the key: the library checks
        // what the callback returns, so the call ends in SIGNER_FAILED.
        || matches!(behaviour, SignBehaviour::Bytes(..))
        || (matches!(behaviour, SignBehaviour::Key) && k.is_null());
    let (r, _) = out_call_bounded(out, bad, &mut |p, l, ol| {
        if *serving {
            fcsr::kubeboot_csr_serving_with_signer(
                sp,
                n.cptr(),
                n.len,
                ds.as_ptr(),
                ds.len(),
                is.as_ptr(),
                is.len(),
                *format,
                p,
                l,
                ol,
            )
        } else {
            fcsr::kubeboot_csr_client_with_signer(sp, n.cptr(), n.len, *format, p, l, ol)
        }
    });
    let _ = r;
}
