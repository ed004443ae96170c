//! `kubeboot_agent_*`: an agent from any configuration, polled and answered with any of its
//! `on_*` calls; the metrics (`kubeboot_metrics_text`, the textfile check).

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::agent::{
    self as fag, kubeboot_agent, kubeboot_agent_action, kubeboot_agent_config,
};
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
    /// A response with a `Retry-After` value (NULL: absent).
    HttpRetryAfter {
        status: u16,
        retry_after: Bytes,
        body: Bytes,
    },
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

pub fn run(hs: &mut Handles, op: &Agent) {
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
    };
    let mut ag: *mut kubeboot_agent = 0x10 as *mut _;
    let r = rc(fag::kubeboot_agent_new(&cfg, &mut ag));
    if r != OK {
        assert_eq!(ag, 0x10 as *mut _, "*out written on error");
        return;
    }
    assert!(a.iter().chain(&pa).chain(&da).chain(&ia).all(|x| !x.bad()));
    let mut now = 1_796_208_640i64;
    let mut ended = false;
    for answer in answers.iter().take(64) {
        // SAFETY: plain data.
        let mut act: kubeboot_agent_action = unsafe { std::mem::zeroed() };
        assert_eq!(rc(fag::kubeboot_agent_poll(ag, now, &mut act)), OK);
        assert!(act.kind <= fag::KUBEBOOT_AGENT_FAILED, "kind {}", act.kind);
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
        }
    }
    assert_eq!(rc(fag::kubeboot_agent_poll(null_mut(), now, null_mut())), NULL_PARAMETER);
    fag::kubeboot_agent_free(ag);
}
