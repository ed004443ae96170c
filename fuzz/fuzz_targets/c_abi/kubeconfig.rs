//! `kubeboot_kubeconfig_*`: load and view, and the node kubeconfig writer (read back).

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::kubeconfig::{self as fkc, kubeboot_kubeconfig_view};
use std::ptr::null_mut;

/// `kubeboot_kubeconfig_get` of a live or NULL kubeconfig.
#[derive(Arbitrary, Debug)]
pub struct KubeconfigGet {
    pub h: H,
    pub null_out: bool,
}

/// `kubeboot_node_kubeconfig_write`; what it writes loads back.
#[derive(Arbitrary, Debug)]
pub struct NodeKubeconfigWrite {
    pub server: Bytes,
    pub ca_file: Bytes,
    pub ca_pem: Bytes,
    pub insecure: bool,
    pub cert_dir: Bytes,
    pub out: Out,
}

pub fn load(hs: &mut Handles, b: &Bytes) {
    let a = Arg::new(b);
    new_handle(&mut hs.kcs, a.bad(), |o| fkc::kubeboot_kubeconfig_load(a.ptr(), a.len, o));
}

pub fn get(hs: &mut Handles, op: &KubeconfigGet) {
    let KubeconfigGet { h, null_out } = op;
    let k = pick(&hs.kcs, h);
    let mut v: kubeboot_kubeconfig_view = unsafe { std::mem::zeroed() };
    v.ca_source = 0xA5A5_A5A5;
    let vp: *mut kubeboot_kubeconfig_view = if *null_out { null_mut() } else { &mut v };
    let r = rc(fkc::kubeboot_kubeconfig_get(k, vp));
    if r == OK {
        assert!(!k.is_null() && !*null_out);
        assert!(v.ca_source <= fkc::KUBEBOOT_SOURCE_FILE);
        assert!(v.server.len > 0 && !v.server.data.is_null());
    } else {
        assert_eq!(v.ca_source, 0xA5A5_A5A5, "*out written on error {r}");
    }
}

pub fn node_write(op: &NodeKubeconfigWrite) {
    let NodeKubeconfigWrite { server, ca_file, ca_pem, insecure, cert_dir, out } = op;
    let (s, f, c, d) = (Arg::new(server), Arg::new(ca_file), Arg::new(ca_pem), Arg::new(cert_dir));
    let (_, got) = out_call(out, s.bad() || f.bad() || c.bad() || d.bad(), &mut |p, l, ol| {
        fkc::kubeboot_node_kubeconfig_write(
            s.cptr(),
            s.len,
            f.cptr(),
            f.len,
            c.ptr(),
            c.len,
            *insecure,
            d.cptr(),
            d.len,
            p.cast(),
            l,
            ol,
        )
    });
    if let Some(g) = got {
        // What we write, we read (through the ABI as well).
        let mut h = null_mut();
        assert_eq!(
            rc(fkc::kubeboot_kubeconfig_load(g.as_ptr(), g.len(), &mut h)),
            OK,
            "{}",
            String::from_utf8_lossy(&g)
        );
        let mut v: kubeboot_kubeconfig_view = unsafe { std::mem::zeroed() };
        assert_eq!(rc(fkc::kubeboot_kubeconfig_get(h, &mut v)), OK);
        let got_server = unsafe { std::slice::from_raw_parts(v.server.data, v.server.len) };
        assert_eq!(got_server, &s.store[..s.len]);
        fkc::kubeboot_kubeconfig_free(h);
    }
}
