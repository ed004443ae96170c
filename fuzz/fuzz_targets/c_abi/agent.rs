//! `kubeboot_agent_*`: an agent from any configuration, polled and answered with any of its
//! `on_*` calls; the metrics (`kubeboot_metrics_text`, the textfile check).

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::agent::{
    self as fag, kubeboot_agent, kubeboot_agent_action, kubeboot_agent_config,
};
use kubeboot_ffi::device as fdev;
use kubeboot_ffi::key as fkey;
use kubeboot_ffi::metrics as fme;
use std::ptr::{null, null_mut};

/// How an agent action is answered (whatever it asked for).
#[derive(Arbitrary, Debug)]
pub enum AgentAnswer {
    Read {
        result: u32,
        data: Bytes,
    },
    FileDone(u32),
    Entropy(Bytes),
    PerformEntropy,
    Http {
        status: u16,
        body: Bytes,
    },
    Stream(Bytes),
    StreamEnd,
    Transport(Bytes),
    UtcOffset(i32),
    Later(u16),
    Wake,
    /// The metrics copied out and rendered at `now` + this into a buffer.
    Metrics(i32, Out),
    /// `kubeboot_agent_on_key_public` with these bytes as the point.
    KeyPublic(Bytes),
    /// `kubeboot_agent_on_key_generated`: a reference (or the fixture of a live key's
    /// `kubeboot_pkcs11_key_reference`) and a point (or the live key's).
    KeyGenerated(Bytes, Result<H, Bytes>),
    /// `kubeboot_agent_on_key_signature` with these bytes as `r || s`.
    KeySignature(Bytes),
    /// `kubeboot_agent_sign_with` a callback that behaves as told (a live key's point).
    SignWith(H, crate::csr::SignBehaviour),
    KeyDestroyed,
    KeyError(Bytes),
    /// A response with a `Retry-After` value (NULL: absent).
    HttpRetryAfter {
        status: u16,
        retry_after: Bytes,
        body: Bytes,
    },
}

/// The device of a [`Call::AgentDevice`](crate::Call) agent's configuration.
#[derive(Arbitrary, Debug)]
pub enum KeyDevice {
    Tpm,
    Pkcs11,
    Any(Bytes),
}

/// `kubeboot_metrics_text` of any metrics.
#[derive(Arbitrary, Debug)]
pub struct MetricsText {
    pub client: Option<i64>,
    pub serving: Option<i64>,
    pub errors: (u64, u64),
    pub buckets: [u64; 11],
    pub sum: u64,
    pub count: u64,
    pub now: i64,
    pub out: Out,
}

/// `kubeboot_agent_new` with any configuration, then polls, each answered by one of
/// `answers` (whatever the action asked for).
#[derive(Arbitrary, Debug)]
pub struct Agent {
    pub t: H,
    /// front end, working dir, node, kubeconfig, bootstrap kubeconfig, cert dir, CA bundle,
    /// discovery server.
    pub text: [Bytes; 8],
    pub pins: Vec<Bytes>,
    pub dns: Vec<Bytes>,
    pub ips: Vec<Bytes>,
    /// unpinned, serving, poll, rotate client, rotate serving.
    pub flags: u8,
    pub waits: (i64, i64, i64),
    pub exp: u32,
    pub mode: u32,
    pub max_rotations: u32,
    pub utc_offset: i32,
    pub answers: Vec<AgentAnswer>,
}

pub fn metrics_check_textfile(b: &Bytes) {
    let a = Arg::new(b);
    let r = rc(fme::kubeboot_metrics_check_textfile(a.cptr(), a.len));
    if a.bad() {
        assert_ne!(r, OK);
    }
}

pub fn metrics_text(op: &MetricsText) {
    let MetricsText { client, serving, errors, buckets, sum, count, now, out } = op;
    let m = fme::kubeboot_metrics {
        has_client: client.is_some(),
        client_not_after: client.unwrap_or(0),
        has_serving: serving.is_some(),
        serving_not_after: serving.unwrap_or(0),
        client_renew_errors: errors.0,
        serving_renew_errors: errors.1,
        serving_rotation_buckets: *buckets,
        serving_rotation_sum: *sum,
        serving_rotation_count: *count,
    };
    let (r, text) =
        out_call(out, false, &mut |p, l, ol| fme::kubeboot_metrics_text(&m, *now, p.cast(), l, ol));
    if let (OK, Some(t)) = (r, text) {
        assert!(t.len() <= fme::KUBEBOOT_METRICS_TEXT_CAP, "{}", t.len());
        assert!(std::str::from_utf8(&t).is_ok());
    }
}

/// The token URI of a device agent.
const DEVICE: &str = "pkcs11:token=fuzz;serial=1?module-path=/opt/fuzz.so&pin-source=/etc/pin";

pub fn run(hs: &mut Handles, op: &Agent, device: Option<&KeyDevice>) {
    let Agent {
        t,
        text,
        pins,
        dns,
        ips,
        flags,
        waits,
        exp,
        mode,
        max_rotations,
        utc_offset,
        answers,
    } = op;
    let a: Vec<Arg> = text.iter().map(Arg::new).collect();
    let (pa, da, ia): (Vec<Arg>, Vec<Arg>, Vec<Arg>) = (
        pins.iter().take(10).map(Arg::new).collect(),
        dns.iter().take(20).map(Arg::new).collect(),
        ips.iter().take(20).map(Arg::new).collect(),
    );
    let (ps, ds, is) = (strs(&pa), strs(&da), strs(&ia));
    let dev = match device {
        None => Arg::new(&Bytes::Null),
        Some(KeyDevice::Tpm) => Arg::new(&Bytes::Data(b"tpm".to_vec())),
        Some(KeyDevice::Pkcs11) => Arg::new(&Bytes::Data(DEVICE.as_bytes().to_vec())),
        Some(KeyDevice::Any(b)) => Arg::new(b),
    };
    let cfg = kubeboot_agent_config {
        front_end: a[0].cptr(),
        front_end_len: a[0].len,
        working_dir: a[1].cptr(),
        working_dir_len: a[1].len,
        node_name: a[2].cptr(),
        node_name_len: a[2].len,
        kubeconfig: a[3].cptr(),
        kubeconfig_len: a[3].len,
        bootstrap_kubeconfig: a[4].cptr(),
        bootstrap_kubeconfig_len: a[4].len,
        cert_dir: a[5].cptr(),
        cert_dir_len: a[5].len,
        ca_bundle: a[6].cptr(),
        ca_bundle_len: a[6].len,
        discovery_server: a[7].cptr(),
        discovery_server_len: a[7].len,
        discovery_token: pick(&hs.tokens, t),
        discovery_pins: if pa.is_empty() { null() } else { ps.as_ptr() },
        discovery_pin_count: ps.len(),
        discovery_unsafe_skip_ca_verification: flags & 1 != 0,
        discovery_timeout_seconds: waits.0,
        serving: flags & 2 != 0,
        serving_dns: if da.is_empty() { null() } else { ds.as_ptr() },
        serving_dns_count: ds.len(),
        serving_ips: if ia.is_empty() { null() } else { is.as_ptr() },
        serving_ip_count: is.len(),
        bootstrap_wait_seconds: waits.1,
        rotation_wait_seconds: waits.2,
        expiration_seconds: *exp,
        poll: flags & 4 != 0,
        mode: *mode,
        max_rotations: *max_rotations,
        rotate_now_client: flags & 8 != 0,
        rotate_now_serving: flags & 16 != 0,
        utc_offset: *utc_offset,
        seed: 7,
        // 0 text, 1 JSON, 2 and 3 refused.
        log_format: u32::from(flags >> 5 & 3),
        // never, the default, every 5 minutes
        ca_refresh_seconds: i64::from(*max_rotations % 3) * 300 - 300,
        key_device: dev.cptr(),
        key_device_len: dev.len,
    };
    let mut ag: *mut kubeboot_agent = 0x10 as *mut _;
    let r = rc(fag::kubeboot_agent_new(&cfg, &mut ag));
    if r != OK {
        assert_eq!(ag, 0x10 as *mut _, "*out written on error");
        return;
    }
    assert!(a.iter().chain(&pa).chain(&da).chain(&ia).chain([&dev]).all(|x| !x.bad()));
    let mut now = 1_796_208_640i64;
    let mut ended = false;
    for answer in answers.iter().take(64) {
        // SAFETY: plain data.
        let mut act: kubeboot_agent_action = unsafe { std::mem::zeroed() };
        assert_eq!(rc(fag::kubeboot_agent_poll(ag, now, &mut act)), OK);
        assert!(act.kind <= fag::KUBEBOOT_AGENT_KEY, "kind {}", act.kind);
        assert!(act.kind != fag::KUBEBOOT_AGENT_KEY || !dev.null, "a KEY action without a device");
        if act.kind == fag::KUBEBOOT_AGENT_KEY {
            assert!(act.key_op <= fdev::KUBEBOOT_KEY_OP_DESTROY, "key op {}", act.key_op);
            assert!(
                act.key_holder != fdev::KUBEBOOT_KEY_HOLDER_SOFTWARE,
                "a KEY action for software"
            );
        }
        // Every pointer the action hands out is readable for its length (ASan).
        for (p, l) in [
            (act.path.cast::<u8>(), act.path_len),
            (act.path2.cast(), act.path2_len),
            (act.path3.cast(), act.path3_len),
            (act.data, act.data_len),
            (act.server.cast(), act.server_len),
            (act.ca_pem, act.ca_pem_len),
            (act.client_cert_pem, act.client_cert_pem_len),
            (act.client_key_pem, act.client_key_pem_len),
            (act.authorization.cast(), act.authorization_len),
            (act.user_agent.cast(), act.user_agent_len),
            (act.line.cast(), act.line_len),
            (act.detail.cast(), act.detail_len),
            (act.key_ref, act.key_ref_len),
            (act.key_device.cast(), act.key_device_len),
            (act.key_label.cast(), act.key_label_len),
        ] {
            assert!(!p.is_null() || l == 0, "NULL with a length");
            if !p.is_null() {
                // SAFETY: the ABI promises `l` readable bytes at `p`.
                let v = unsafe { std::slice::from_raw_parts(p, l) }.to_vec();
                std::hint::black_box(v);
            }
        }
        for c in [act.role, act.step_name, act.method, act.content_type, act.accept] {
            if !c.is_null() {
                // SAFETY: the ABI promises static NUL-terminated strings.
                let c = unsafe { std::ffi::CStr::from_ptr(c) };
                assert!(c.to_str().is_ok());
            }
        }
        if act.kind == fag::KUBEBOOT_AGENT_FAILED {
            assert_ne!(act.result as u32, OK, "FAILED with OK");
            rc(act.result);
        }
        if matches!(act.kind, fag::KUBEBOOT_AGENT_DONE | fag::KUBEBOOT_AGENT_FAILED) {
            if ended {
                break;
            }
            ended = true;
        }
        match answer {
            AgentAnswer::Read { result, data } => {
                let d = Arg::new(data);
                let r = rc(fag::kubeboot_agent_on_read(ag, now, *result, d.ptr(), d.len));
                assert!(r != OK || !(d.bad() && *result == OK), "NULL data read OK");
            }
            AgentAnswer::FileDone(result) => {
                rc(fag::kubeboot_agent_on_file_done(ag, now, *result));
            }
            AgentAnswer::Entropy(data) => {
                let d = Arg::new(data);
                let r = rc(fag::kubeboot_agent_on_entropy(ag, d.ptr(), d.len));
                assert!(r != OK || !d.bad());
            }
            AgentAnswer::PerformEntropy => {
                let r = rc(fag::kubeboot_agent_perform_entropy(ag));
                let asked = act.kind == fag::KUBEBOOT_AGENT_ENTROPY;
                assert!(r == OK || !asked, "entropy asked for, not given: {r}");
            }
            AgentAnswer::Http { status, body } => {
                let b = Arg::new(body);
                let r = rc(fag::kubeboot_agent_on_http_response(ag, now, *status, b.ptr(), b.len));
                assert_eq!(r == OK, !b.bad(), "one error channel: {r}");
            }
            AgentAnswer::HttpRetryAfter { status, retry_after, body } => {
                let (ra, b) = (Arg::new(retry_after), Arg::new(body));
                let r = rc(fag::kubeboot_agent_on_http_response_with_retry_after(
                    ag,
                    now,
                    *status,
                    ra.cptr(),
                    ra.len,
                    b.ptr(),
                    b.len,
                ));
                assert_eq!(r == OK, !ra.bad() && !b.bad(), "one error channel: {r}");
            }
            AgentAnswer::Stream(chunk) => {
                let c = Arg::new(chunk);
                let mut keep = false;
                let r = rc(fag::kubeboot_agent_on_stream_data(ag, now, c.ptr(), c.len, &mut keep));
                assert_eq!(r == OK, !c.bad(), "one error channel: {r}");
            }
            AgentAnswer::StreamEnd => {
                assert_eq!(rc(fag::kubeboot_agent_on_stream_end(ag, now)), OK);
            }
            AgentAnswer::Transport(why) => {
                let w = Arg::new(why);
                let r = rc(fag::kubeboot_agent_on_transport_error(ag, now, w.cptr(), w.len));
                assert!(r != OK || !w.bad());
            }
            AgentAnswer::UtcOffset(o) => {
                assert_eq!(rc(fag::kubeboot_agent_set_utc_offset(ag, *o)), OK);
            }
            AgentAnswer::Later(s) => now += i64::from(*s),
            AgentAnswer::Wake => {
                let mut woken = true;
                assert_eq!(rc(fag::kubeboot_agent_wake(ag, &mut woken)), OK);
            }
            AgentAnswer::Metrics(at, out) => {
                let mut m = fme::kubeboot_metrics::default();
                assert_eq!(rc(fme::kubeboot_agent_metrics(ag, &mut m)), OK);
                let at = now.saturating_add(i64::from(*at));
                let (r, text) = out_call(out, false, &mut |p, l, ol| {
                    fme::kubeboot_metrics_text(&m, at, p.cast(), l, ol)
                });
                if let (OK, Some(t)) = (r, text) {
                    let t = std::str::from_utf8(&t).expect("metrics are UTF-8");
                    assert!(t.len() <= fme::KUBEBOOT_METRICS_TEXT_CAP);
                    assert!(t.lines().all(|l| l.starts_with("# ") || l.starts_with("kubelet_")));
                }
            }
            AgentAnswer::KeyPublic(p) => {
                let p = Arg::new(p);
                let r = rc(fdev::kubeboot_agent_on_key_public(ag, now, p.ptr(), p.len));
                key_answer_checked(r, &act, fdev::KUBEBOOT_KEY_OP_PUBLIC, p.bad(), p.len == 65);
            }
            AgentAnswer::KeyGenerated(reference, point) => {
                let live = match point {
                    Ok(h) => pick(&hs.keys, h),
                    Err(_) => null_mut(),
                };
                let mut live_point = [0u8; 65];
                let pt = match point {
                    Err(b) => Arg::new(b),
                    Ok(_) if live.is_null() => Arg::new(&Bytes::NullLen(64)),
                    Ok(_) => {
                        assert_eq!(
                            rc(fkey::kubeboot_key_public_point(live, live_point.as_mut_ptr())),
                            OK
                        );
                        Arg::new(&Bytes::Data(live_point.to_vec()))
                    }
                };
                // A well-formed reference for the device asked for, when the fuzzer gives none.
                let reference = match reference {
                    Bytes::Null
                        if act.kind == fag::KUBEBOOT_AGENT_KEY && !act.key_device.is_null() =>
                    {
                        let mut pem = vec![0u8; fdev::KUBEBOOT_KEY_REF_MAX_LEN];
                        let mut n = 0usize;
                        let r = rc(fdev::kubeboot_pkcs11_key_reference(
                            act.key_device,
                            act.key_device_len,
                            act.key_label,
                            act.key_label_len,
                            b"\x01\x02".as_ptr(),
                            2,
                            pem.as_mut_ptr(),
                            pem.len(),
                            &mut n,
                        ));
                        pem.truncate(if r == OK { n } else { 0 });
                        Arg::new(&Bytes::Data(pem))
                    }
                    b => Arg::new(b),
                };
                let r = rc(fdev::kubeboot_agent_on_key_generated(
                    ag,
                    now,
                    reference.ptr(),
                    reference.len,
                    pt.ptr(),
                    pt.len,
                ));
                let bad = reference.bad() || pt.bad();
                key_answer_checked(r, &act, fdev::KUBEBOOT_KEY_OP_GENERATE, bad, pt.len == 65);
            }
            AgentAnswer::KeySignature(rs) => {
                let rs = Arg::new(rs);
                let r = rc(fdev::kubeboot_agent_on_key_signature(ag, now, rs.ptr(), rs.len));
                key_answer_checked(r, &act, fdev::KUBEBOOT_KEY_OP_SIGN, rs.bad(), rs.len == 64);
            }
            AgentAnswer::SignWith(h, behaviour) => {
                let key = pick(&hs.keys, h);
                let st = crate::csr::SignerState { behaviour: behaviour.clone(), key };
                let mut signer = kubeboot_ffi::csr::kubeboot_signer {
                    sign: Some(crate::csr::sign_cb),
                    userdata: &st as *const _ as *mut core::ffi::c_void,
                    public_point: [0u8; 65],
                };
                if !key.is_null() {
                    assert_eq!(
                        rc(fkey::kubeboot_key_public_point(key, signer.public_point.as_mut_ptr())),
                        OK
                    );
                }
                let r = rc(fdev::kubeboot_agent_sign_with(ag, now, &signer));
                if key.is_null() {
                    assert_eq!(r, MALFORMED_KEY, "an all-zero point is no key");
                } else {
                    key_answer_checked(r, &act, fdev::KUBEBOOT_KEY_OP_SIGN, false, true);
                }
            }
            AgentAnswer::KeyDestroyed => {
                let r = rc(fdev::kubeboot_agent_on_key_destroyed(ag, now));
                key_answer_checked(r, &act, fdev::KUBEBOOT_KEY_OP_DESTROY, false, true);
            }
            AgentAnswer::KeyError(why) => {
                let w = Arg::new(why);
                let r = rc(fdev::kubeboot_agent_on_key_error(ag, now, w.cptr(), w.len));
                if w.bad() {
                    assert_eq!(r, NULL_PARAMETER);
                } else {
                    assert_eq!(r == OK, act.kind == fag::KUBEBOOT_AGENT_KEY, "{r}");
                }
            }
        }
    }
    assert_eq!(rc(fag::kubeboot_agent_poll(null_mut(), now, null_mut())), NULL_PARAMETER);
    assert_eq!(rc(fdev::kubeboot_agent_on_key_destroyed(null_mut(), now)), NULL_PARAMETER);
    fag::kubeboot_agent_free(ag);
}

/// A KEY answer's result: NULL with a length is `NULL_PARAMETER`, a wrong length
/// `INVALID_PARAMETER`, an answer to another operation (or to none) `INVALID_STATE`, else OK.
fn key_answer_checked(r: u32, act: &kubeboot_agent_action, op: u32, bad: bool, sized: bool) {
    let asked = act.kind == fag::KUBEBOOT_AGENT_KEY && act.key_op == op;
    let want = if bad {
        NULL_PARAMETER
    } else if !sized {
        INVALID_PARAMETER
    } else if !asked {
        INVALID_STATE
    } else {
        OK
    };
    assert_eq!(r, want, "KEY answer for op {op} to {} / {}", act.kind, act.key_op);
}
