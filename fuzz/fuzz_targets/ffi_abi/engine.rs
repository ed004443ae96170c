//! `kubeboot_engine_*`: an engine from any configuration, polled and fed any response, stream
//! data, stream end and transport error.

use crate::harness::*;
use crate::verify::expected;
use arbitrary::Arbitrary;
use kubeboot_ffi::engine::{
    self as feng, kubeboot_action, kubeboot_engine, kubeboot_engine_config,
};
use std::ptr::null_mut;

/// `kubeboot_engine_new` with any configuration (any profile, no SANs), then four
/// rounds of poll and every `on_*` call with `status` and `body`.
#[derive(Arbitrary, Debug)]
pub struct Engine {
    pub h: H,
    pub t: H,
    pub node: Bytes,
    pub profile: u32,
    pub auth: u32,
    pub naming: u32,
    pub ca: Bytes,
    pub exp: u32,
    pub wait: i64,
    pub watch: bool,
    pub status: u16,
    pub body: Bytes,
    pub out: Out,
}

pub fn run(hs: &mut Handles, op: &Engine) {
    let Engine { h, t, node, profile, auth, naming, ca, exp, wait, watch, status, body, out } = op;
    let (k, tok) = (pick(&hs.keys, h), pick(&hs.tokens, t));
    let (n, c, b) = (Arg::new(node), Arg::new(ca), Arg::new(body));
    let cfg = kubeboot_engine_config {
        expected: expected(&n, *profile, &[], &[]),
        auth: *auth,
        token: tok,
        naming: *naming,
        ca_pem: c.ptr(),
        ca_pem_len: c.len,
        expiration_seconds: *exp,
        wait_seconds: *wait,
        watch: *watch,
    };
    let mut e: *mut kubeboot_engine = 0x10 as *mut _;
    let r = rc(feng::kubeboot_engine_new(&cfg, k, 1_796_208_640, 7, &mut e));
    if r != OK {
        assert_eq!(e, 0x10 as *mut _, "*out written on error");
        assert_eq!(rc(feng::kubeboot_engine_poll(null_mut(), 0, null_mut())), NULL_PARAMETER);
        return;
    }
    assert!(!n.bad() && !c.bad() && !k.is_null());
    // SAFETY: plain data.
    let mut act: kubeboot_action = unsafe { std::mem::zeroed() };
    for step in 0..4 {
        let r = rc(feng::kubeboot_engine_poll(e, 1_796_208_640 + step, &mut act));
        assert_eq!(r, OK);
        assert!(act.kind <= feng::KUBEBOOT_ACTION_FAILED);
        let t = 1_796_208_640 + step;
        // Odd steps: the answer carries `Retry-After: 1` (the same contract, pushback honoured).
        let r = if step % 2 == 1 {
            let ra = c"1";
            let ra_ptr = ra.as_ptr();
            rc(feng::kubeboot_engine_on_response_with_retry_after(
                e,
                t,
                *status,
                ra_ptr,
                1,
                b.ptr(),
                b.len,
            ))
        } else {
            rc(feng::kubeboot_engine_on_response(e, t, *status, b.ptr(), b.len))
        };
        if b.bad() {
            assert_ne!(r, OK);
        } else {
            assert_eq!(r, OK, "one error channel: on_response is OK");
        }
        let mut keep = true;
        let r =
            rc(feng::kubeboot_engine_on_stream_data(e, 1_796_208_640, b.ptr(), b.len, &mut keep));
        if b.bad() {
            assert_ne!(r, OK);
        } else {
            assert_eq!(r, OK, "one error channel: on_stream_data is OK");
            assert!(!keep || feng::kubeboot_engine_request_outstanding(e));
        }
        let _ = rc(feng::kubeboot_engine_on_stream_end(e, 1_796_208_640));
        let _ = rc(feng::kubeboot_engine_on_transport_error(e, 1_796_208_640));
    }
    out_call(out, false, &mut |p, l, ol| feng::kubeboot_engine_failure_message(e, p.cast(), l, ol));
    out_call(out, false, &mut |p, l, ol| feng::kubeboot_engine_csr_name(e, p.cast(), l, ol));
    let _ = feng::kubeboot_engine_request_outstanding(e);
    let _ = feng::kubeboot_engine_deadline(e);
    feng::kubeboot_engine_free(e);
}
