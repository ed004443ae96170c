//! Rust-side tests of the agent's C ABI: memory the caller sizes, the capacities' rules, the
//! tagged action, the answers.

use core::ffi::{c_char, c_void};
use core::ptr::{null, null_mut};

use crate::action::*;
use crate::agent::*;
use crate::error::kubeboot_result;

fn s(x: &str) -> (*const c_char, usize) {
    (x.as_ptr().cast(), x.len())
}

fn host() -> kubeboot_capacities {
    let mut c =
        kubeboot_capacities { response: 0, pem: 0, key: 0, file: 0, path: 0, serving_dns: 0 };
    assert_eq!(kubeboot_capacities_host(&mut c), kubeboot_result::Ok);
    c
}

/// A microcontroller's capacities.
fn small() -> kubeboot_capacities {
    kubeboot_capacities {
        response: 4096,
        pem: 1536,
        key: 512,
        file: 3072,
        path: 64,
        serving_dns: 0,
    }
}

fn bytes_of(b: kubeboot_bytes) -> &'static [u8] {
    if b.len == 0 {
        return &[];
    }
    // SAFETY: the agent's borrowed bytes, read before the next call on it.
    unsafe { core::slice::from_raw_parts(b.data, b.len) }
}

fn text_of(t: crate::csr::kubeboot_str) -> &'static str {
    core::str::from_utf8(bytes_of(kubeboot_bytes { data: t.data.cast(), len: t.len })).unwrap()
}

fn base64(input: &[u8]) -> String {
    use base64ct::{Base64, Encoding};
    Base64::encode_string(input)
}

/// Drive the agent `a` from start to its create request, answering every file from memory (no
/// node kubeconfig; a bootstrap kubeconfig with `token` and the CA `ca`), the key's entropy with
/// `entropy` and `/healthz` with 200. Returns the create request's `Authorization` header. The
/// secrets stay on the stack (a heap copy would be freed holding them: see
/// `wiped_before_free`).
pub(crate) fn bootstrap_to_create(
    a: *mut kubeboot_agent,
    token: &str,
    ca: &[u8],
    entropy: &[u8; 32],
) -> heapless::Vec<u8, 64> {
    use core::fmt::Write;
    let mut kc = heapless::String::<8192>::new();
    write!(
        kc,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority-data: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
        base64(ca)
    )
    .unwrap();
    let mut cfg = unsafe { core::mem::zeroed::<kubeboot_agent_config>() };
    assert_eq!(kubeboot_agent_config_default(&mut cfg), kubeboot_result::Ok);
    (cfg.front_end, cfg.front_end_len) = s("c");
    (cfg.working_dir, cfg.working_dir_len) = s("/");
    (cfg.node_name, cfg.node_name_len) = s("wipe-1");
    (cfg.kubeconfig, cfg.kubeconfig_len) = s("/n/kubelet.conf");
    (cfg.bootstrap_kubeconfig, cfg.bootstrap_kubeconfig_len) = s("/n/bootstrap.conf");
    (cfg.cert_dir, cfg.cert_dir_len) = s("/n/pki");
    assert_eq!(kubeboot_agent_start(a, &cfg), kubeboot_result::Ok);
    let now = 1_796_208_640;
    for _ in 0..100 {
        let mut x = unsafe { core::mem::zeroed::<kubeboot_action>() };
        assert_eq!(kubeboot_agent_poll(a, now, &mut x), kubeboot_result::Ok);
        // SAFETY (each arm): the member `kind` names.
        match x.kind {
            kubeboot_action_kind::Read => {
                let path = text_of(unsafe { x.of.read.path });
                if path == "/n/bootstrap.conf" {
                    let r = kubeboot_agent_on_read(a, now, 0, kc.as_ptr(), kc.len());
                    assert_eq!(r, kubeboot_result::Ok);
                } else {
                    let nf = kubeboot_result::StoreNotFound as u32;
                    assert_eq!(kubeboot_agent_on_read(a, now, nf, null(), 0), kubeboot_result::Ok);
                }
            }
            kubeboot_action_kind::File => {
                let step = unsafe { x.of.file };
                let r = if step.step == kubeboot_file_step_kind::Recover {
                    kubeboot_result::StoreNotFound as u32
                } else {
                    0
                };
                assert_eq!(kubeboot_agent_on_file_done(a, now, r), kubeboot_result::Ok);
            }
            kubeboot_action_kind::Entropy => {
                assert_eq!(unsafe { x.of.entropy.len }, 32);
                let r = kubeboot_agent_on_entropy(a, entropy.as_ptr(), entropy.len());
                assert_eq!(r, kubeboot_result::Ok);
            }
            kubeboot_action_kind::Http => {
                let h = unsafe { x.of.http };
                match h.kind {
                    kubeboot_request_kind::Healthz => {
                        let resp = kubeboot_http_response {
                            status: 200,
                            retry_after: null(),
                            retry_after_len: 0,
                            body: b"ok".as_ptr(),
                            body_len: 2,
                        };
                        assert_eq!(
                            kubeboot_agent_on_http_response(a, now, &resp),
                            kubeboot_result::Ok
                        );
                    }
                    kubeboot_request_kind::Create => {
                        assert_eq!(text_of(h.method), "POST");
                        assert_eq!(text_of(h.connection.server), "https://127.0.0.1:6443");
                        assert_eq!(bytes_of(h.connection.ca_pem), ca);
                        return heapless::Vec::from_slice(text_of(h.authorization).as_bytes())
                            .unwrap();
                    }
                    k => panic!("unexpected request {k:?}"),
                }
            }
            kubeboot_action_kind::Event => {}
            k => panic!("unexpected action {k:?}"),
        }
    }
    panic!("no create request");
}

#[test]
fn capacities_are_checked_and_named() {
    let mut which = kubeboot_capacity::Memory;
    assert_eq!(kubeboot_capacities_check(&host(), &mut which), kubeboot_result::Ok);
    assert_eq!(which, kubeboot_capacity::None);
    let mut c = small();
    c.file = c.pem;
    assert_eq!(kubeboot_capacities_check(&c, &mut which), kubeboot_result::TooLarge);
    assert_eq!(which, kubeboot_capacity::File);
    let mut size = 0;
    assert_eq!(kubeboot_agent_size(&c, &mut size), kubeboot_result::TooLarge);
    assert_eq!(size, 0, "nothing written on failure");
    assert_eq!(kubeboot_agent_size(null(), &mut size), kubeboot_result::NullParameter);
    assert_eq!(kubeboot_agent_size(&small(), &mut size), kubeboot_result::Ok);
    let caps = kb::agent::Capacities::from(&small());
    assert!(size >= caps.memory_len() + core::mem::size_of::<kubeboot_agent>());
    // Capacities the rules accept whose memory leaves no room for the handle in the address
    // space: too large, not an overflow (found by fuzz/c_abi).
    let mut huge = small();
    huge.response = 0;
    huge.response = usize::MAX - 1 - kb::agent::Capacities::from(&huge).memory_len();
    assert_eq!(kubeboot_capacities_check(&huge, &mut which), kubeboot_result::Ok);
    let mut size = 0;
    assert_eq!(kubeboot_agent_size(&huge, &mut size), kubeboot_result::TooLarge);
    assert_eq!(size, 0, "nothing written on failure");
    let mut a = null_mut();
    assert_eq!(kubeboot_agent_new(&huge, &mut a), kubeboot_result::TooLarge);
    assert!(a.is_null());
}

#[test]
fn an_agent_lives_in_the_callers_memory() {
    let mut size = 0;
    assert_eq!(kubeboot_agent_size(&small(), &mut size), kubeboot_result::Ok);
    // Any alignment: the agent aligns itself inside the block.
    let mut block = vec![0u8; size + 1];
    let mem = block.as_mut_ptr().wrapping_add(1).cast::<c_void>();
    let mut a = null_mut();
    // Too short by one byte: too large, nothing made.
    let r = kubeboot_agent_init_in(
        mem,
        size - 1 - core::mem::align_of::<kubeboot_agent>(),
        &small(),
        &mut a,
    );
    assert_eq!(r, kubeboot_result::TooLarge);
    assert!(a.is_null());
    assert_eq!(kubeboot_agent_init_in(mem, size, &small(), &mut a), kubeboot_result::Ok);
    assert!(!a.is_null());
    let start = block.as_ptr() as usize;
    assert!((start..start + size + 1).contains(&(a as usize)), "the handle is in the block");
    // Not started: FAILED, invalid state.
    let mut x = unsafe { core::mem::zeroed::<kubeboot_action>() };
    assert_eq!(kubeboot_agent_poll(a, 0, &mut x), kubeboot_result::Ok);
    assert_eq!(x.kind, kubeboot_action_kind::Failed);
    assert_eq!(unsafe { x.of.failed.result }, kubeboot_result::InvalidState);
    // A bad configuration leaves it idle.
    let mut cfg = unsafe { core::mem::zeroed::<kubeboot_agent_config>() };
    assert_eq!(kubeboot_agent_config_default(&mut cfg), kubeboot_result::Ok);
    assert_eq!(cfg.ca_refresh_seconds, 600);
    assert_eq!(cfg.bootstrap_wait_seconds, 3600);
    (cfg.front_end, cfg.front_end_len) = s("c");
    (cfg.working_dir, cfg.working_dir_len) = s("/");
    (cfg.kubeconfig, cfg.kubeconfig_len) = s("kubelet.conf");
    (cfg.cert_dir, cfg.cert_dir_len) = s("pki");
    cfg.mode = 9;
    assert_eq!(kubeboot_agent_start(a, &cfg), kubeboot_result::InvalidConfig);
    // A path over the path capacity is too large.
    cfg.mode = KUBEBOOT_MODE_ONCE;
    let long = "/x".repeat(40);
    (cfg.cert_dir, cfg.cert_dir_len) = s(&long);
    assert_eq!(kubeboot_agent_start(a, &cfg), kubeboot_result::TooLarge);
    // The CA refresh needs a larger work buffer than this device's: named at start.
    (cfg.cert_dir, cfg.cert_dir_len) = s("pki");
    cfg.mode = KUBEBOOT_MODE_RUN;
    assert_eq!(kubeboot_agent_start(a, &cfg), kubeboot_result::TooLarge);
    cfg.ca_refresh_seconds = 0;
    assert_eq!(kubeboot_agent_start(a, &cfg), kubeboot_result::Ok);
    assert_eq!(kubeboot_agent_poll(a, 0, &mut x), kubeboot_result::Ok);
    assert_eq!(x.kind, kubeboot_action_kind::File);
    let step = unsafe { x.of.file };
    assert_eq!(step.step, kubeboot_file_step_kind::Recover);
    assert_eq!(text_of(step.path), "/pki");
    assert_eq!(text_of(step.prefix), "kubelet-client");
    assert_eq!(text_of(step.name), "recover");
    kubeboot_agent_free(a);
    kubeboot_agent_free(null_mut());
}

#[test]
fn a_c_callers_agent_bootstraps_to_its_create_request() {
    let ca = include_bytes!("../../core/tests/data/recorded/client-ca.pem");
    let mut size = 0;
    assert_eq!(kubeboot_agent_size(&small(), &mut size), kubeboot_result::Ok);
    let mut block = vec![0u8; size];
    let mut a = null_mut();
    let r = kubeboot_agent_init_in(block.as_mut_ptr().cast(), size, &small(), &mut a);
    assert_eq!(r, kubeboot_result::Ok);
    let auth = bootstrap_to_create(a, "abcdef.0123456789abcdef", ca, &[7u8; 32]);
    assert_eq!(&auth[..], b"Bearer abcdef.0123456789abcdef");
    kubeboot_agent_free(a);
    // The caller's block no longer holds the token's secret.
    assert!(!block.windows(16).any(|w| w == b"0123456789abcdef"));
}

#[test]
fn answers_out_of_turn_change_nothing_and_nulls_are_refused() {
    let mut a = null_mut();
    assert_eq!(kubeboot_agent_new(&small(), &mut a), kubeboot_result::Ok);
    let resp = kubeboot_http_response {
        status: 200,
        retry_after: null(),
        retry_after_len: 0,
        body: null(),
        body_len: 0,
    };
    assert_eq!(kubeboot_agent_on_http_response(a, 0, &resp), kubeboot_result::Ok);
    assert_eq!(kubeboot_agent_on_read(a, 0, 0, null(), 0), kubeboot_result::Ok);
    assert_eq!(kubeboot_agent_on_file_done(a, 0, 0), kubeboot_result::Ok);
    assert_eq!(kubeboot_agent_on_http_response(a, 0, null()), kubeboot_result::NullParameter);
    assert_eq!(kubeboot_agent_poll(null_mut(), 0, null_mut()), kubeboot_result::NullParameter);
    assert_eq!(kubeboot_agent_start(a, null()), kubeboot_result::NullParameter);
    let mut x = unsafe { core::mem::zeroed::<kubeboot_action>() };
    assert_eq!(kubeboot_agent_poll(a, 0, &mut x), kubeboot_result::Ok);
    assert_eq!(x.kind, kubeboot_action_kind::Failed);
    kubeboot_agent_free(a);
}

#[test]
fn the_grammar_refuses_with_one_line() {
    use crate::grammar::*;
    let mut secs = 0;
    let (t, n) = s("1h30m");
    assert_eq!(kubeboot_parse_duration(t, n, &mut secs), kubeboot_result::Ok);
    assert_eq!(secs, 5400);
    let (t, n) = s("5x");
    assert_eq!(kubeboot_parse_duration(t, n, &mut secs), kubeboot_result::InvalidDuration);
    let mut line = [0u8; 200];
    let mut len = 0;
    let (f, fl) = s("--wait");
    let r = kubeboot_flag_refusal(
        f,
        fl,
        t,
        n,
        kubeboot_result::InvalidDuration as u32,
        line.as_mut_ptr().cast(),
        line.len(),
        &mut len,
    );
    assert_eq!(r, kubeboot_result::Ok);
    assert_eq!(
        core::str::from_utf8(&line[..len]).unwrap(),
        "--wait \"5x\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)"
    );
    let (t, n) = s("tpm:");
    let mut dev = [0u8; 8];
    assert_eq!(
        kubeboot_parse_key_device(t, n, dev.as_mut_ptr().cast(), dev.len(), &mut len),
        kubeboot_result::Ok
    );
    assert_eq!(&dev[..len], b"tpm");
    let (t, n) = s("key.pem");
    assert_eq!(
        kubeboot_parse_key_device(t, n, dev.as_mut_ptr().cast(), dev.len(), &mut len),
        kubeboot_result::InvalidKeyReference
    );
    let (t, n) = s("300.1.1.1");
    assert_eq!(kubeboot_check_ip(t, n), kubeboot_result::InvalidIpAddress);
    let (t, n) = s("127.0.0.1:9101");
    assert_eq!(kubeboot_check_bind_address(t, n), kubeboot_result::Ok);
    // Not one of the grammar's refusals.
    let r = kubeboot_flag_refusal(f, fl, t, n, 0, line.as_mut_ptr().cast(), line.len(), &mut len);
    assert_eq!(r, kubeboot_result::InvalidParameter);
}
