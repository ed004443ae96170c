//! The C ABI (`kubeboot-ffi`, the `extern "C" fn kubeboot_*` functions) called as a C program
//! could: an `arbitrary` script of calls with arbitrary bytes and lengths, NULL pointers (also
//! NULL with a non-zero length), zero lengths, short and exact output buffers, NULL or live
//! handles, out-of-range enum values. (Lengths larger than the buffer are UB by contract and are
//! never passed; every buffer is allocated at exactly its length so ASan sees overruns.) The
//! `kubeboot_store_*` functions work in a fresh temporary directory per process (one of a few
//! subdirectories, some missing); the `*_generate` functions use the OS RNG; the external-signer
//! CSR functions get a callback that fails, writes arbitrary bytes, or signs with a live key.
//! An agent (`kubeboot_agent_new` with any configuration) is polled and each action answered
//! with any of its `on_*` calls, whatever it asked for (`kubeboot_agent_perform_file_action` is
//! left out: it writes wherever the fuzzed configuration points).
//!
//! Properties:
//! * no panic (libfuzzer-sys aborts on any panic, even one `catch_unwind` would catch), and every
//!   result is one of the codes `include/kubeboot.h` declares, never `KUBEBOOT_RESULT_PANIC`;
//! * output buffers: on `OK`, `*out_len ≤ len` and nothing after it is written; on
//!   `INSUFFICIENT_SIZE`, `*out_len > len` is the exact size (a buffer of that size succeeds with
//!   that length) and the buffer is untouched; on any other error the buffer and `*out_len` are
//!   untouched; an `OK` output is reproduced exactly with a buffer of exactly `*out_len` bytes
//!   and one byte less is `INSUFFICIENT_SIZE`;
//! * out-parameters (`*out` handle, `kubeboot_verified`, `kubeboot_ca_pin`, points, signatures)
//!   are written only on success; a NULL with a non-zero length never succeeds;
//! * `kubeboot_key_sign` signatures verify with the p256 crate against `kubeboot_key_public_point`;
//!   `kubeboot_result_name` is `"unknown"` exactly for codes the header does not declare;
//! * `kubeboot_verify_issued_scratch` gives the verdict of `kubeboot_verify_issued` whenever its
//!   scratch holds `kubeboot_verify_scratch_len` bytes, and `INSUFFICIENT_SIZE` with that size
//!   when it does not;
//! * a store operation that fails changes no file of the certificate directory;
//! * the agent's one error channel: its `on_*` calls are `OK` unless given NULL with a length;
//!   every pointer of a polled action is readable for its length (ASan), its static strings
//!   are NUL-terminated UTF-8, `FAILED` carries a declared non-`OK` result, and it stays
//!   answering after `DONE` / `FAILED`.
#![no_main]

use arbitrary::Arbitrary;
use kubeboot_ffi::agent::{self as fag, kubeboot_agent, kubeboot_agent_action, kubeboot_agent_config};
use kubeboot_ffi::csr::kubeboot_signer;
use kubeboot_ffi::csr::{self as fcsr, kubeboot_str};
use kubeboot_ffi::engine::{
    self as feng, kubeboot_action, kubeboot_engine, kubeboot_engine_config,
};
use kubeboot_ffi::error::{self as ferr, kubeboot_result};
use kubeboot_ffi::expected::kubeboot_expected;
use kubeboot_ffi::key::{self as fkey, kubeboot_key};
use kubeboot_ffi::kubeconfig::{self as fkc, kubeboot_kubeconfig, kubeboot_kubeconfig_view};
use kubeboot_ffi::rotation as frot;
use kubeboot_ffi::store::{self as fstore, kubeboot_store};
use kubeboot_ffi::token::{self as ftok, kubeboot_token};
use kubeboot_ffi::verify::{self as fver, kubeboot_ca_pin, kubeboot_verified};
use libfuzzer_sys::fuzz_target;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

const CANARY: u8 = 0xA5;
const SENTINEL: usize = 0xDEAD_BEEF;

fn header_codes() -> &'static BTreeSet<u32> {
    static CODES: OnceLock<BTreeSet<u32>> = OnceLock::new();
    CODES.get_or_init(|| {
        let h = include_str!("../../include/kubeboot.h");
        let set: BTreeSet<u32> = h
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let rest = l.strip_prefix("KUBEBOOT_RESULT_")?;
                let (_, v) = rest.split_once(" = ")?;
                v.trim_end_matches(',').parse().ok()
            })
            .collect();
        assert!(set.len() > 50 && set.contains(&0) && set.contains(&3));
        set
    })
}

fn rc(r: kubeboot_result) -> u32 {
    let c = r as u32;
    assert!(header_codes().contains(&c), "result {c} not declared in the header");
    assert_ne!(c, kubeboot_result::Panic as u32, "panic caught at the boundary");
    c
}

const OK: u32 = 0;
const NULL_PARAMETER: u32 = 1;
const INSUFFICIENT: u32 = 3;

const FIXTURES: &[&[u8]] = &[
    include_bytes!("../seeds/ffi_abi/p256.key"),
    include_bytes!("../seeds/ffi_abi/client-ca.pem"),
    include_bytes!("../seeds/ffi_abi/kubeconfig.yaml"),
    b"abcdef.0123456789abcdef",
    b"node-1",
    b"sha256:d7ca399eb32057ff78e572eb3cf898fb60cecb7f02749d88347bc3eeb5c360e5",
    b"system:bootstrappers:a,system:bootstrappers:b",
    include_bytes!("../../core/tests/data/recorded/csr-create-201.json"),
    include_bytes!("../../core/tests/data/ec-leaf.crt"),
    include_bytes!("../../core/tests/data/ec-ca.crt"),
];

#[derive(Arbitrary, Debug)]
enum Bytes {
    Null,
    /// NULL with a non-zero length: must never succeed.
    NullLen(u8),
    Data(Vec<u8>),
    Fixture(u8),
}

/// Resolved bytes: the storage (exact length) and the pointer/length to pass.
struct Arg {
    store: Box<[u8]>,
    null: bool,
    len: usize,
}

impl Arg {
    fn new(b: &Bytes) -> Arg {
        match b {
            Bytes::Null => Arg { store: Box::new([]), null: true, len: 0 },
            Bytes::NullLen(n) => Arg { store: Box::new([]), null: true, len: *n as usize + 1 },
            Bytes::Data(v) => {
                Arg { store: v.clone().into_boxed_slice(), null: false, len: v.len() }
            }
            Bytes::Fixture(i) => {
                let v = FIXTURES[*i as usize % FIXTURES.len()];
                Arg { store: v.to_vec().into_boxed_slice(), null: false, len: v.len() }
            }
        }
    }
    fn ptr(&self) -> *const u8 {
        if self.null { null() } else { self.store.as_ptr() }
    }
    fn cptr(&self) -> *const core::ffi::c_char {
        self.ptr().cast()
    }
    fn bad(&self) -> bool {
        self.null && self.len > 0
    }
}

#[derive(Arbitrary, Debug)]
enum Out {
    Null,
    NullLen(u8),
    Sized(u16),
    NullOutLen(u16),
}

/// Call a `(buf, len, out_len)` writer and check the buffer contract. `bad` = some other argument
/// is NULL with a non-zero length (or the call must fail for another known reason). Returns the
/// result and, on OK, the output.
fn out_call(
    out: &Out,
    bad: bool,
    f: &mut dyn FnMut(*mut u8, usize, *mut usize) -> kubeboot_result,
) -> (u32, Option<Vec<u8>>) {
    out_call_sized(out, bad, true, f)
}

/// [`out_call`] for the CSR writers, whose short-buffer answer is documented as an upper bound
/// (the DER signature is 70–72 bytes and is only known once signed): a buffer of the reported size
/// suffices and the output is no longer than it, but the exact output length may be smaller.
fn out_call_bounded(
    out: &Out,
    bad: bool,
    f: &mut dyn FnMut(*mut u8, usize, *mut usize) -> kubeboot_result,
) -> (u32, Option<Vec<u8>>) {
    out_call_sized(out, bad, false, f)
}

fn out_call_sized(
    out: &Out,
    bad: bool,
    exact_size: bool,
    f: &mut dyn FnMut(*mut u8, usize, *mut usize) -> kubeboot_result,
) -> (u32, Option<Vec<u8>>) {
    let (null_buf, len, null_len) = match *out {
        Out::Null => (true, 0, false),
        Out::NullLen(n) => (true, n as usize + 1, false),
        Out::Sized(n) => (false, n as usize % 8192, false),
        Out::NullOutLen(n) => (false, n as usize % 8192, true),
    };
    let mut buf = vec![CANARY; len].into_boxed_slice();
    let mut out_len = SENTINEL;
    let p = if null_buf { null_mut() } else { buf.as_mut_ptr() };
    let ol: *mut usize = if null_len { null_mut() } else { &mut out_len };
    let r = rc(f(p, len, ol));
    if bad || null_len || (null_buf && len > 0) {
        assert_ne!(r, OK, "success with a NULL pointer");
    }
    match r {
        OK => {
            assert!(out_len <= len, "out_len {out_len} > len {len}");
            assert!(buf[out_len..].iter().all(|&b| b == CANARY), "wrote past out_len");
            let got = buf[..out_len].to_vec();
            if !exact_size {
                // The size query answers a bound that covers this output.
                let mut n = SENTINEL;
                assert_eq!(rc(f(null_mut(), 0, &mut n)), INSUFFICIENT);
                assert!(n >= out_len && n != SENTINEL, "bound {n} < output {out_len}");
                return (r, Some(got));
            }
            // Exactness: the same call into exactly out_len bytes, and one less.
            let mut exact = vec![CANARY; out_len].into_boxed_slice();
            let mut n = SENTINEL;
            let ep = if out_len == 0 { null_mut() } else { exact.as_mut_ptr() };
            assert_eq!(rc(f(ep, out_len, &mut n)), OK);
            assert_eq!(n, out_len);
            assert_eq!(&exact[..], &got[..], "output differs with an exact buffer");
            if out_len > 0 {
                let mut short = vec![CANARY; out_len - 1].into_boxed_slice();
                let mut n = SENTINEL;
                let sp = if out_len == 1 { null_mut() } else { short.as_mut_ptr() };
                assert_eq!(rc(f(sp, out_len - 1, &mut n)), INSUFFICIENT);
                assert_eq!(n, out_len, "needed size differs");
                assert!(short.iter().all(|&b| b == CANARY), "short buffer written");
            }
            (r, Some(got))
        }
        INSUFFICIENT => {
            assert!(out_len != SENTINEL && out_len > len, "needed {out_len} for len {len}");
            assert!(buf.iter().all(|&b| b == CANARY), "buffer written on INSUFFICIENT_SIZE");
            if out_len <= 1 << 20 {
                let mut big = vec![CANARY; out_len].into_boxed_slice();
                let mut n = SENTINEL;
                let again = rc(f(big.as_mut_ptr(), out_len, &mut n));
                if bad {
                    // The size is known before a failing step (e.g. a signer callback that fails
                    // or returns a signature that does not verify) runs: that step now fails,
                    // and the buffer is untouched.
                    assert!(again != OK && again != INSUFFICIENT, "{again} after the size query");
                    assert!(big.iter().all(|&b| b == CANARY), "buffer written on error {again}");
                } else {
                    assert_eq!(again, OK, "the reported size is not enough");
                    if exact_size {
                        assert_eq!(n, out_len, "reported size is not exact");
                    } else {
                        assert!(n <= out_len, "output {n} longer than the bound {out_len}");
                    }
                }
            }
            (r, None)
        }
        _ => {
            assert!(buf.iter().all(|&b| b == CANARY), "buffer written on error {r}");
            assert_eq!(out_len, SENTINEL, "out_len written on error {r}");
            (r, None)
        }
    }
}

#[derive(Arbitrary, Debug)]
enum H {
    Null,
    Live(u8),
}

#[derive(Arbitrary, Debug)]
enum Call {
    TokenParse(Bytes),
    TokenFromEntropy(Bytes),
    TokenText {
        which: u8,
        h: H,
        out: Out,
    },
    TokenValidateExtraGroups(Bytes),
    TokenSecretManifest {
        h: H,
        desc: Bytes,
        has_exp: bool,
        exp: i64,
        usages: u32,
        groups: Bytes,
        out: Out,
    },
    KeyFromPem(Bytes),
    KeyFromDer(Bytes),
    KeyFromEntropy(Bytes),
    KeyText {
        pem: bool,
        h: H,
        out: Out,
    },
    KeySign {
        h: H,
        msg: Bytes,
        null_out: bool,
    },
    CsrClient {
        h: H,
        node: Bytes,
        format: u32,
        out: Out,
    },
    CsrServing {
        h: H,
        node: Bytes,
        dns: Vec<Bytes>,
        ips: Vec<Bytes>,
        format: u32,
        out: Out,
    },
    NodeCsrName {
        h: H,
        node: Bytes,
        out: Out,
    },
    CsrObjectJson {
        pem: Bytes,
        name: Bytes,
        profile: u32,
        exp: u32,
        out: Out,
    },
    CsrCheck {
        pem: Bytes,
        signer: Bytes,
        usages: Vec<Bytes>,
        exp: u32,
    },
    ResultText {
        name: bool,
        code: u32,
        out: Out,
    },
    VerifyIssued {
        cert: Bytes,
        ca: Bytes,
        node: Bytes,
        h: H,
        profile: u32,
        dns: Vec<Bytes>,
        ips: Vec<Bytes>,
        now: i64,
        null_out: bool,
    },
    CaPinParse {
        text: Bytes,
        null_out: bool,
    },
    CaPinCheck {
        pins: Option<Vec<[u8; 32]>>,
        ca: Bytes,
    },
    CaPinsOfPem {
        ca: Bytes,
        out: Out,
    },
    KubeconfigLoad(Bytes),
    KubeconfigGet {
        h: H,
        null_out: bool,
    },
    NodeKubeconfigWrite {
        server: Bytes,
        ca_file: Bytes,
        ca_pem: Bytes,
        insecure: bool,
        cert_dir: Bytes,
        out: Out,
    },
    Rotation {
        a: i64,
        b: i64,
        jitter: u32,
        attempt: u32,
        has_cert: bool,
    },
    TokenGenerate {
        null_out: bool,
    },
    KeyGenerate {
        null_out: bool,
    },
    Version,
    CsrWithSigner {
        /// The signer's key (its public point goes in the signer); NULL: an arbitrary point.
        h: H,
        point: Vec<u8>,
        null_signer: bool,
        null_callback: bool,
        behaviour: SignBehaviour,
        serving: bool,
        node: Bytes,
        dns: Vec<Bytes>,
        ips: Vec<Bytes>,
        format: u32,
        out: Out,
    },
    VerifyScratch {
        cert: Bytes,
        ca: Bytes,
        node: Bytes,
        h: H,
        profile: u32,
        dns: Vec<Bytes>,
        ips: Vec<Bytes>,
        now: i64,
        /// Scratch bytes: the needed size plus or minus this (clamped at 0).
        delta: i8,
        null_scratch: bool,
        null_needed: bool,
    },
    StoreOpen {
        prefix: Bytes,
        dir: u8,
    },
    StoreUpdate {
        s: H,
        now: i64,
        offset: i32,
        cert: Bytes,
        key: Bytes,
    },
    StoreText {
        s: H,
        which: u8,
        out: Out,
    },
    StoreBootstrapKey {
        s: H,
        null_out: bool,
    },
    StoreRemoveKeyCache {
        s: H,
    },
    StoreFree {
        s: H,
    },
    Engine {
        h: H,
        t: H,
        node: Bytes,
        profile: u32,
        auth: u32,
        naming: u32,
        ca: Bytes,
        exp: u32,
        wait: i64,
        watch: bool,
        status: u16,
        body: Bytes,
        out: Out,
    },
    /// `kubeboot_agent_new` with any configuration, then polls, each answered by one of
    /// `answers` (whatever the action asked for).
    MetricsCheckTextfile(Bytes),
    MetricsText {
        client: Option<i64>,
        serving: Option<i64>,
        errors: (u64, u64),
        buckets: [u64; 11],
        sum: u64,
        count: u64,
        now: i64,
        out: Out,
    },
    Agent {
        t: H,
        /// front end, working dir, node, kubeconfig, bootstrap kubeconfig, cert dir, CA bundle,
        /// discovery server.
        text: [Bytes; 8],
        pins: Vec<Bytes>,
        dns: Vec<Bytes>,
        ips: Vec<Bytes>,
        /// unpinned, serving, poll, rotate client, rotate serving.
        flags: u8,
        waits: (i64, i64, i64),
        exp: u32,
        mode: u32,
        max_rotations: u32,
        utc_offset: i32,
        answers: Vec<AgentAnswer>,
    },
}

#[derive(Arbitrary, Debug)]
enum AgentAnswer {
    Read { result: u32, data: Bytes },
    FileDone(u32),
    Entropy(Bytes),
    PerformEntropy,
    Http { status: u16, body: Bytes },
    Stream(Bytes),
    StreamEnd,
    Transport(Bytes),
    UtcOffset(i32),
    Later(u16),
    Wake,
    /// The metrics copied out and rendered at `now` + this into a buffer.
    Metrics(i32, Out),
}

#[derive(Arbitrary, Debug, Clone)]
enum SignBehaviour {
    /// Return this non-zero status.
    Fail(u32),
    /// Return OK with these 64 bytes as `r || s`.
    Bytes([u8; 32], [u8; 32]),
    /// Sign with the live key of `h` (kubeboot_key_sign); no key: fail.
    Key,
}

struct SignerState {
    behaviour: SignBehaviour,
    key: *mut kubeboot_key,
}

unsafe extern "C" fn sign_cb(
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

/// The per-process certificate directories: `<tmp>/d0` .. `<tmp>/d2` exist, `<tmp>/missing/x`
/// does not.
fn store_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("kubeboot-fuzz-store-{}", std::process::id()));
        for d in ["d0", "d1", "d2"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        root
    })
}

/// Every file under the store root: path -> (symlink target or contents).
fn snapshot() -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_symlink() {
                let t = std::fs::read_link(&p).unwrap_or_default();
                out.insert(p, t.into_os_string().into_encoded_bytes());
            } else if ft.is_dir() {
                walk(&p, out);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(store_root(), &mut out);
    out
}

#[derive(Default)]
struct Handles {
    tokens: Vec<*mut kubeboot_token>,
    keys: Vec<*mut kubeboot_key>,
    kcs: Vec<*mut kubeboot_kubeconfig>,
    stores: Vec<*mut kubeboot_store>,
}

fn pick<T>(v: &[*mut T], h: &H) -> *mut T {
    match h {
        H::Live(i) if !v.is_empty() => v[*i as usize % v.len()],
        _ => null_mut(),
    }
}

/// `*out` handle constructors: written only on success, non-NULL then.
fn new_handle<T>(
    list: &mut Vec<*mut T>,
    bad: bool,
    f: impl FnOnce(*mut *mut T) -> kubeboot_result,
) {
    let marker = 0x10 as *mut T;
    let mut out = marker;
    let r = rc(f(&mut out));
    if bad {
        assert_ne!(r, OK);
    }
    if r == OK {
        assert!(!out.is_null() && out != marker);
        list.push(out);
    } else {
        assert_eq!(out, marker, "*out written on error {r}");
    }
}

/// The key's SubjectPublicKeyInfo DER; empty for a NULL or failing key.
fn spki_of(k: *mut kubeboot_key) -> Vec<u8> {
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
fn canary_verified() -> kubeboot_verified {
    // SAFETY: kubeboot_verified is plain data; all-CANARY bytes are a valid value.
    unsafe { std::mem::transmute([CANARY; std::mem::size_of::<kubeboot_verified>()]) }
}

/// The bytes of a `kubeboot_verified` (plain data without padding: every byte is a field's).
fn verified_bytes(v: kubeboot_verified) -> [u8; std::mem::size_of::<kubeboot_verified>()] {
    // SAFETY: same size; plain data.
    unsafe { std::mem::transmute(v) }
}

fn strs(args: &[Arg]) -> Vec<kubeboot_str> {
    args.iter().map(|a| kubeboot_str { data: a.cptr(), len: a.len }).collect()
}

/// A `kubeboot_expected` for node `n`, `profile` and the SAN arrays `dns` / `ips`.
fn expected(n: &Arg, profile: u32, dns: &[kubeboot_str], ips: &[kubeboot_str]) -> kubeboot_expected {
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

fuzz_target!(|calls: Vec<Call>| {
    let mut hs = Handles::default();
    // Each input starts from empty certificate directories (successful updates add files).
    if calls.iter().take(24).any(|c| matches!(c, Call::StoreOpen { .. })) {
        let root = store_root();
        for d in ["d0", "d1", "d2", "missing"] {
            let _ = std::fs::remove_dir_all(root.join(d));
        }
        for d in ["d0", "d1", "d2"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
    }
    for call in calls.iter().take(24) {
        match call {
            Call::TokenParse(b) => {
                let a = Arg::new(b);
                new_handle(&mut hs.tokens, a.bad(), |o| {
                    ftok::kubeboot_token_parse(a.cptr(), a.len, o)
                });
                assert_ne!(rc(ftok::kubeboot_token_parse(a.cptr(), a.len, null_mut())), OK);
            }
            Call::TokenFromEntropy(b) => {
                let a = Arg::new(b);
                new_handle(&mut hs.tokens, a.bad(), |o| {
                    ftok::kubeboot_token_from_entropy(a.ptr(), a.len, o)
                });
            }
            Call::TokenText { which, h, out } => {
                let t = pick(&hs.tokens, h);
                let f = [
                    ftok::kubeboot_token_id,
                    ftok::kubeboot_token_secret_name,
                    ftok::kubeboot_token_user_name,
                    ftok::kubeboot_token_wire,
                ][*which as usize % 4];
                let (r, got) = out_call(out, false, &mut |p, l, ol| f(t, p.cast(), l, ol));
                if t.is_null() {
                    assert_eq!(r, NULL_PARAMETER);
                }
                if let Some(g) = got {
                    let want = [
                        ftok::KUBEBOOT_TOKEN_ID_LEN,
                        ftok::KUBEBOOT_TOKEN_SECRET_NAME_LEN,
                        ftok::KUBEBOOT_TOKEN_USER_NAME_LEN,
                        ftok::KUBEBOOT_TOKEN_LEN,
                    ][*which as usize % 4];
                    assert_eq!(g.len(), want);
                }
            }
            Call::MetricsCheckTextfile(b) => {
                let a = Arg::new(b);
                let r = rc(fag::kubeboot_metrics_check_textfile(a.cptr(), a.len));
                if a.bad() {
                    assert_ne!(r, OK);
                }
            }
            Call::MetricsText { client, serving, errors, buckets, sum, count, now, out } => {
                let m = fag::kubeboot_metrics {
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
                let (r, text) = out_call(out, false, &mut |p, l, ol| {
                    fag::kubeboot_metrics_text(&m, *now, p.cast(), l, ol)
                });
                if let (OK, Some(t)) = (r, text) {
                    assert!(t.len() <= fag::KUBEBOOT_METRICS_TEXT_CAP, "{}", t.len());
                    assert!(std::str::from_utf8(&t).is_ok());
                }
            }
            Call::TokenValidateExtraGroups(b) => {
                let a = Arg::new(b);
                let r = rc(ftok::kubeboot_token_validate_extra_groups(a.cptr(), a.len));
                if a.bad() {
                    assert_ne!(r, OK);
                }
            }
            Call::TokenSecretManifest { h, desc, has_exp, exp, usages, groups, out } => {
                let t = pick(&hs.tokens, h);
                let (d, g) = (Arg::new(desc), Arg::new(groups));
                let (_, got) = out_call(out, d.bad() || g.bad() || t.is_null(), &mut |p, l, ol| {
                    ftok::kubeboot_token_secret_manifest(
                        t,
                        d.cptr(),
                        d.len,
                        *has_exp,
                        *exp,
                        *usages,
                        g.cptr(),
                        g.len,
                        p.cast(),
                        l,
                        ol,
                    )
                });
                if let Some(m) = got {
                    assert!(std::str::from_utf8(&m).is_ok());
                }
            }
            Call::KeyFromPem(b) => {
                let a = Arg::new(b);
                new_handle(&mut hs.keys, a.bad(), |o| {
                    fkey::kubeboot_key_from_pem(a.ptr(), a.len, o)
                });
            }
            Call::KeyFromDer(b) => {
                let a = Arg::new(b);
                new_handle(&mut hs.keys, a.bad(), |o| {
                    fkey::kubeboot_key_from_der(a.ptr(), a.len, o)
                });
            }
            Call::KeyFromEntropy(b) => {
                let a = Arg::new(b);
                new_handle(&mut hs.keys, a.bad(), |o| {
                    fkey::kubeboot_key_from_entropy(a.ptr(), a.len, o)
                });
            }
            Call::KeyText { pem, h, out } => {
                let k = pick(&hs.keys, h);
                let (_, got) = if *pem {
                    out_call(out, k.is_null(), &mut |p, l, ol| {
                        fkey::kubeboot_key_to_pem(k, p.cast(), l, ol)
                    })
                } else {
                    out_call(out, k.is_null(), &mut |p, l, ol| {
                        fkey::kubeboot_key_public_spki_der(k, p, l, ol)
                    })
                };
                if let Some(g) = got {
                    assert_eq!(
                        g.len(),
                        if *pem {
                            fkey::KUBEBOOT_KEY_SEC1_PEM_LEN
                        } else {
                            fkey::KUBEBOOT_KEY_SPKI_LEN
                        }
                    );
                }
            }
            Call::KeySign { h, msg, null_out } => {
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
                    continue;
                }
                let mut point = [CANARY; 65];
                assert_eq!(rc(fkey::kubeboot_key_public_point(k, point.as_mut_ptr())), OK);
                use p256::ecdsa::signature::Verifier;
                let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&point).expect("a P-256 point");
                let s = p256::ecdsa::Signature::from_slice(&sig).expect("r||s");
                vk.verify(&m.store[..m.len], &s).expect("kubeboot_key_sign signature verifies");
            }
            Call::CsrClient { h, node, format, out } => {
                let k = pick(&hs.keys, h);
                let n = Arg::new(node);
                let (_, got) = out_call_bounded(
                    out,
                    k.is_null() || n.bad() || *format > 1,
                    &mut |p, l, ol| {
                        fcsr::kubeboot_csr_client(k, n.cptr(), n.len, *format, p, l, ol)
                    },
                );
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
            Call::CsrServing { h, node, dns, ips, format, out } => {
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
            Call::NodeCsrName { h, node, out } => {
                let k = pick(&hs.keys, h);
                let n = Arg::new(node);
                let (_, a) = out_call(out, k.is_null() || n.bad(), &mut |p, l, ol| {
                    fcsr::kubeboot_key_node_csr_name(k, n.cptr(), n.len, p.cast(), l, ol)
                });
                if !k.is_null() {
                    let mut point = [0u8; 65];
                    assert_eq!(rc(fkey::kubeboot_key_public_point(k, point.as_mut_ptr())), OK);
                    let (_, b) = out_call(out, n.bad(), &mut |p, l, ol| {
                        fcsr::kubeboot_node_csr_name(
                            point.as_ptr(),
                            n.cptr(),
                            n.len,
                            p.cast(),
                            l,
                            ol,
                        )
                    });
                    assert_eq!(a, b, "by key and by point differ");
                    if let Some(a) = a {
                        assert_eq!(a.len(), fcsr::KUBEBOOT_NODE_CSR_NAME_LEN);
                    }
                }
            }
            Call::CsrObjectJson { pem, name, profile, exp, out } => {
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
            Call::CsrCheck { pem, signer, usages, exp } => {
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
            Call::ResultText { name, code, out } => {
                let f =
                    if *name { ferr::kubeboot_result_name } else { ferr::kubeboot_result_message };
                let (_, got) = out_call(out, false, &mut |p, l, ol| f(*code, p.cast(), l, ol));
                if let (true, Some(g)) = (*name, got) {
                    assert_eq!(
                        g == b"unknown",
                        !header_codes().contains(code),
                        "name of {code}: {:?}",
                        String::from_utf8_lossy(&g)
                    );
                }
                let _ = (
                    ferr::kubeboot_result_is_verify_error(*code),
                    ferr::kubeboot_result_is_policy_error(*code),
                );
            }
            Call::VerifyIssued { cert, ca, node, h, profile, dns, ips, now, null_out } => {
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
            Call::CaPinParse { text, null_out } => {
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
            Call::CaPinCheck { pins, ca } => {
                let a = Arg::new(ca);
                let ps: Vec<kubeboot_ca_pin> = pins
                    .iter()
                    .flatten()
                    .take(70)
                    .map(|p| kubeboot_ca_pin { sha256: *p })
                    .collect();
                let pp = if pins.is_none() { null() } else { ps.as_ptr() };
                let r = rc(fver::kubeboot_ca_pin_check(pp, ps.len(), a.ptr(), a.len));
                if a.bad() || ps.is_empty() {
                    assert_ne!(r, OK);
                }
            }
            Call::CaPinsOfPem { ca, out } => {
                let a = Arg::new(ca);
                let (_, got) = out_call(out, a.bad(), &mut |p, l, ol| {
                    fver::kubeboot_ca_pins_of_pem(a.ptr(), a.len, p.cast(), l, ol)
                });
                if let Some(g) = got {
                    // Every pin listed parses back.
                    for line in String::from_utf8(g).unwrap().split_whitespace() {
                        let mut pin = kubeboot_ca_pin { sha256: [0; 32] };
                        assert_eq!(
                            rc(fver::kubeboot_ca_pin_parse(
                                line.as_ptr().cast(),
                                line.len(),
                                &mut pin
                            )),
                            OK,
                            "{line}"
                        );
                    }
                }
            }
            Call::KubeconfigLoad(b) => {
                let a = Arg::new(b);
                new_handle(&mut hs.kcs, a.bad(), |o| {
                    fkc::kubeboot_kubeconfig_load(a.ptr(), a.len, o)
                });
            }
            Call::KubeconfigGet { h, null_out } => {
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
            Call::NodeKubeconfigWrite { server, ca_file, ca_pem, insecure, cert_dir, out } => {
                let (s, f, c, d) =
                    (Arg::new(server), Arg::new(ca_file), Arg::new(ca_pem), Arg::new(cert_dir));
                let (_, got) =
                    out_call(out, s.bad() || f.bad() || c.bad() || d.bad(), &mut |p, l, ol| {
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
                    let got_server =
                        unsafe { std::slice::from_raw_parts(v.server.data, v.server.len) };
                    assert_eq!(got_server, &s.store[..s.len]);
                    fkc::kubeboot_kubeconfig_free(h);
                }
            }
            Call::Rotation { a, b, jitter, attempt, has_cert } => {
                let d = frot::kubeboot_rotation_deadline(*a, *b, *jitter);
                if a < b {
                    assert!(d >= *a && d <= *b, "deadline {d} outside [{a}, {b}]");
                }
                assert_eq!(
                    frot::kubeboot_needs_rotation(d, *a),
                    kubeboot::rotation::needs_rotation(d, *a)
                );
                let _ = frot::kubeboot_rotation_due(*has_cert, *a, *b, *jitter, *b);
                let ms = frot::kubeboot_backoff_delay_ms(*attempt, *jitter);
                let base = [2_000u64, 4_000, 8_000, 16_000].get(*attempt as usize).copied();
                match base {
                    Some(b) => {
                        assert!(ms >= b && ms < b + b / 10 + 1, "{ms} for attempt {attempt}")
                    }
                    None => assert_eq!(ms, frot::KUBEBOOT_POLL_INTERVAL_MS),
                }
            }
            Call::TokenGenerate { null_out } => {
                if *null_out {
                    assert_ne!(rc(ftok::kubeboot_token_generate(null_mut())), OK);
                } else {
                    new_handle(&mut hs.tokens, false, |o| ftok::kubeboot_token_generate(o));
                }
            }
            Call::KeyGenerate { null_out } => {
                if *null_out {
                    assert_ne!(rc(fkey::kubeboot_key_generate(null_mut())), OK);
                } else {
                    new_handle(&mut hs.keys, false, |o| fkey::kubeboot_key_generate(o));
                }
            }
            Call::Version => {
                let v = kubeboot_ffi::kubeboot_version();
                assert!(!v.is_null());
                // SAFETY: a NUL-terminated static string per the ABI.
                let v = unsafe { std::ffi::CStr::from_ptr(v) }.to_str().unwrap();
                assert!(v.split('.').count() >= 3 && v.starts_with(|c: char| c.is_ascii_digit()));
            }
            Call::CsrWithSigner {
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
            } => {
                let k = pick(&hs.keys, h);
                let mut public_point = [0u8; 65];
                if k.is_null() {
                    for (d, s) in public_point.iter_mut().zip(point) {
                        *d = *s;
                    }
                } else {
                    assert_eq!(
                        rc(fkey::kubeboot_key_public_point(k, public_point.as_mut_ptr())),
                        OK
                    );
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
                        fcsr::kubeboot_csr_client_with_signer(
                            sp,
                            n.cptr(),
                            n.len,
                            *format,
                            p,
                            l,
                            ol,
                        )
                    }
                });
                let _ = r;
            }
            Call::VerifyScratch {
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
            } => {
                let (c, a, n) = (Arg::new(cert), Arg::new(ca), Arg::new(node));
                let k = pick(&hs.keys, h);
                let spki = spki_of(k);
                let d: Vec<Arg> = dns.iter().take(20).map(Arg::new).collect();
                let i: Vec<Arg> = ips.iter().take(20).map(Arg::new).collect();
                let (ds, is) = (strs(&d), strs(&i));
                let x = expected(&n, *profile, &ds, &is);
                let mut needed = SENTINEL;
                let rl = rc(fver::kubeboot_verify_scratch_len(
                    c.ptr(),
                    c.len,
                    a.ptr(),
                    a.len,
                    &mut needed,
                ));
                if rl != OK {
                    assert_eq!(needed, SENTINEL, "scratch length written on error {rl}");
                    assert!(c.bad() || a.bad(), "scratch_len failed ({rl}) without a NULL");
                    continue;
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
            Call::StoreOpen { prefix, dir } => {
                let p = Arg::new(prefix);
                let sub = ["d0", "d1", "d2", "missing/x"][*dir as usize % 4];
                let d = store_root().join(sub).into_os_string().into_encoded_bytes();
                new_handle(&mut hs.stores, p.bad(), |o| {
                    fstore::kubeboot_store_open(p.cptr(), p.len, d.as_ptr().cast(), d.len(), o)
                });
            }
            Call::StoreUpdate { s, now, offset, cert, key } => {
                let st = pick(&hs.stores, s);
                let (c, k) = (Arg::new(cert), Arg::new(key));
                let before = snapshot();
                let r = rc(fstore::kubeboot_store_update(
                    st,
                    *now,
                    *offset,
                    c.ptr(),
                    c.len,
                    k.ptr(),
                    k.len,
                ));
                if st.is_null() || c.bad() || k.bad() {
                    assert_ne!(r, OK);
                }
                if r != OK {
                    assert_eq!(before, snapshot(), "a failed store update ({r}) changed files");
                }
            }
            Call::StoreText { s, which, out } => {
                let st = pick(&hs.stores, s);
                let before = snapshot();
                let (r, _) = out_call(out, st.is_null(), &mut |p, l, ol| match which % 3 {
                    0 => fstore::kubeboot_store_current(st, p.cast(), l, ol),
                    1 => fstore::kubeboot_store_current_path(st, p.cast(), l, ol),
                    _ => fstore::kubeboot_store_last_error(st, p.cast(), l, ol),
                });
                if r != OK {
                    assert_eq!(before, snapshot(), "a failed store read ({r}) changed files");
                }
            }
            Call::StoreBootstrapKey { s, null_out } => {
                let st = pick(&hs.stores, s);
                if *null_out {
                    assert_ne!(rc(fstore::kubeboot_store_bootstrap_key(st, null_mut())), OK);
                } else {
                    new_handle(&mut hs.keys, st.is_null(), |o| {
                        fstore::kubeboot_store_bootstrap_key(st, o)
                    });
                }
            }
            Call::StoreRemoveKeyCache { s } => {
                let st = pick(&hs.stores, s);
                let before = snapshot();
                let r = rc(fstore::kubeboot_store_remove_key_cache(st));
                if st.is_null() {
                    assert_ne!(r, OK);
                }
                if r != OK {
                    assert_eq!(
                        before,
                        snapshot(),
                        "a failed key-cache removal ({r}) changed files"
                    );
                }
            }
            Call::StoreFree { s } => {
                if let H::Live(i) = s {
                    if !hs.stores.is_empty() {
                        let st = hs.stores.remove(*i as usize % hs.stores.len());
                        fstore::kubeboot_store_free(st);
                    }
                }
            }
            Call::Engine {
                h,
                t,
                node,
                profile,
                auth,
                naming,
                ca,
                exp,
                wait,
                watch,
                status,
                body,
                out,
            } => {
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
                    assert_eq!(
                        rc(feng::kubeboot_engine_poll(null_mut(), 0, null_mut())),
                        NULL_PARAMETER
                    );
                    continue;
                }
                assert!(!n.bad() && !c.bad() && !k.is_null());
                // SAFETY: plain data.
                let mut act: kubeboot_action = unsafe { std::mem::zeroed() };
                for step in 0..4 {
                    let r = rc(feng::kubeboot_engine_poll(e, 1_796_208_640 + step, &mut act));
                    assert_eq!(r, OK);
                    assert!(act.kind <= feng::KUBEBOOT_ACTION_FAILED);
                    let r = rc(feng::kubeboot_engine_on_response(
                        e,
                        1_796_208_640 + step,
                        *status,
                        b.ptr(),
                        b.len,
                    ));
                    if b.bad() {
                        assert_ne!(r, OK);
                    } else {
                        assert_eq!(r, OK, "one error channel: on_response is OK");
                    }
                    let mut keep = true;
                    let r = rc(feng::kubeboot_engine_on_stream_data(
                        e,
                        1_796_208_640,
                        b.ptr(),
                        b.len,
                        &mut keep,
                    ));
                    if b.bad() {
                        assert_ne!(r, OK);
                    } else {
                        assert_eq!(r, OK, "one error channel: on_stream_data is OK");
                        assert!(!keep || feng::kubeboot_engine_request_outstanding(e));
                    }
                    let _ = rc(feng::kubeboot_engine_on_stream_end(e, 1_796_208_640));
                    let _ = rc(feng::kubeboot_engine_on_transport_error(e, 1_796_208_640));
                }
                out_call(out, false, &mut |p, l, ol| {
                    feng::kubeboot_engine_failure_message(e, p.cast(), l, ol)
                });
                out_call(out, false, &mut |p, l, ol| {
                    feng::kubeboot_engine_csr_name(e, p.cast(), l, ol)
                });
                let _ = feng::kubeboot_engine_request_outstanding(e);
                let _ = feng::kubeboot_engine_deadline(e);
                feng::kubeboot_engine_free(e);
            }
            Call::Agent {
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
            } => {
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
                };
                let mut ag: *mut kubeboot_agent = 0x10 as *mut _;
                let r = rc(fag::kubeboot_agent_new(&cfg, &mut ag));
                if r != OK {
                    assert_eq!(ag, 0x10 as *mut _, "*out written on error");
                    continue;
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
                            let r = rc(fag::kubeboot_agent_on_http_response(
                                ag, now, *status, b.ptr(), b.len,
                            ));
                            assert_eq!(r == OK, !b.bad(), "one error channel: {r}");
                        }
                        AgentAnswer::Stream(chunk) => {
                            let c = Arg::new(chunk);
                            let mut keep = false;
                            let r = rc(fag::kubeboot_agent_on_stream_data(
                                ag, now, c.ptr(), c.len, &mut keep,
                            ));
                            assert_eq!(r == OK, !c.bad(), "one error channel: {r}");
                        }
                        AgentAnswer::StreamEnd => {
                            assert_eq!(rc(fag::kubeboot_agent_on_stream_end(ag, now)), OK);
                        }
                        AgentAnswer::Transport(why) => {
                            let w = Arg::new(why);
                            let r = rc(fag::kubeboot_agent_on_transport_error(
                                ag, now, w.cptr(), w.len,
                            ));
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
                            let mut m = fag::kubeboot_metrics::default();
                            assert_eq!(rc(fag::kubeboot_agent_metrics(ag, &mut m)), OK);
                            let at = now.saturating_add(i64::from(*at));
                            let (r, text) = out_call(out, false, &mut |p, l, ol| {
                                fag::kubeboot_metrics_text(&m, at, p.cast(), l, ol)
                            });
                            if let (OK, Some(t)) = (r, text) {
                                let t = std::str::from_utf8(&t).expect("metrics are UTF-8");
                                assert!(t.len() <= fag::KUBEBOOT_METRICS_TEXT_CAP);
                                assert!(t.lines().all(|l| l.starts_with("# ") || l.starts_with("kubelet_")));
                            }
                        }
                    }
                }
                assert_eq!(
                    rc(fag::kubeboot_agent_poll(null_mut(), now, null_mut())),
                    NULL_PARAMETER
                );
                fag::kubeboot_agent_free(ag);
            }
        }
    }
    for t in hs.tokens {
        ftok::kubeboot_token_free(t);
    }
    for k in hs.keys {
        fkey::kubeboot_key_free(k);
    }
    for k in hs.kcs {
        fkc::kubeboot_kubeconfig_free(k);
    }
    for st in hs.stores {
        fstore::kubeboot_store_free(st);
    }
    fstore::kubeboot_store_free(null_mut());
    ftok::kubeboot_token_free(null_mut());
    fkey::kubeboot_key_free(null_mut());
    fkc::kubeboot_kubeconfig_free(null_mut());
    feng::kubeboot_engine_free(null_mut());
    fag::kubeboot_agent_free(null_mut());
});
