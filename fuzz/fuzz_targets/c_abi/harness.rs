//! What every operation of the `c_abi` target uses: results checked against the header,
//! fuzzed byte arguments, output-buffer calls and their contract, the live handles.

use arbitrary::Arbitrary;
use kubeboot_ffi::csr::kubeboot_str;
use kubeboot_ffi::error::kubeboot_result;
use kubeboot_ffi::key::kubeboot_key;
use kubeboot_ffi::kubeconfig::kubeboot_kubeconfig;
use kubeboot_ffi::token::kubeboot_token;
use std::collections::BTreeSet;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

pub const CANARY: u8 = 0xA5;
pub const SENTINEL: usize = 0xDEAD_BEEF;

pub fn header_codes() -> &'static BTreeSet<u32> {
    static CODES: OnceLock<BTreeSet<u32>> = OnceLock::new();
    CODES.get_or_init(|| {
        let h = include_str!("../../../include/kubeboot.h");
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

pub fn rc(r: kubeboot_result) -> u32 {
    let c = r as u32;
    assert!(header_codes().contains(&c), "result {c} not declared in the header");
    assert_ne!(c, kubeboot_result::Panic as u32, "panic caught at the boundary");
    c
}

pub const OK: u32 = 0;
pub const NULL_PARAMETER: u32 = 1;
pub const INSUFFICIENT: u32 = 3;
pub const INVALID_PARAMETER: u32 = 5;
pub const MALFORMED_KEY: u32 = 200;
pub const INVALID_STATE: u32 = 711;

pub const FIXTURES: &[&[u8]] = &[
    include_bytes!("../../seeds/c_abi/p256.key"),
    include_bytes!("../../seeds/c_abi/client-ca.pem"),
    include_bytes!("../../seeds/c_abi/kubeconfig.yaml"),
    b"abcdef.0123456789abcdef",
    b"node-1",
    b"sha256:d7ca399eb32057ff78e572eb3cf898fb60cecb7f02749d88347bc3eeb5c360e5",
    b"system:bootstrappers:a,system:bootstrappers:b",
    include_bytes!("../../../core/tests/data/recorded/csr-create-201.json"),
    include_bytes!("../../../core/tests/data/ec-leaf.crt"),
    include_bytes!("../../../core/tests/data/ec-ca.crt"),
];

#[derive(Arbitrary, Debug)]
pub enum Bytes {
    Null,
    /// NULL with a non-zero length: must never succeed.
    NullLen(u8),
    Data(Vec<u8>),
    Fixture(u8),
}

/// Resolved bytes: the storage (exact length) and the pointer/length to pass.
pub struct Arg {
    pub store: Box<[u8]>,
    pub null: bool,
    pub len: usize,
}

impl Arg {
    pub fn new(b: &Bytes) -> Arg {
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
    pub fn ptr(&self) -> *const u8 {
        if self.null { null() } else { self.store.as_ptr() }
    }
    pub fn cptr(&self) -> *const core::ffi::c_char {
        self.ptr().cast()
    }
    pub fn bad(&self) -> bool {
        self.null && self.len > 0
    }
}

#[derive(Arbitrary, Debug)]
pub enum Out {
    Null,
    NullLen(u8),
    Sized(u16),
    NullOutLen(u16),
}

/// Call a `(buf, len, out_len)` writer and check the buffer contract. `bad` = some other argument
/// is NULL with a non-zero length (or the call must fail for another known reason). Returns the
/// result and, on OK, the output.
pub fn out_call(
    out: &Out,
    bad: bool,
    f: &mut dyn FnMut(*mut u8, usize, *mut usize) -> kubeboot_result,
) -> (u32, Option<Vec<u8>>) {
    out_call_sized(out, bad, true, f)
}

/// [`out_call`] for the CSR writers, whose short-buffer answer is documented as an upper bound
/// (the DER signature is 70–72 bytes and is only known once signed): a buffer of the reported size
/// suffices and the output is no longer than it, but the exact output length may be smaller.
pub fn out_call_bounded(
    out: &Out,
    bad: bool,
    f: &mut dyn FnMut(*mut u8, usize, *mut usize) -> kubeboot_result,
) -> (u32, Option<Vec<u8>>) {
    out_call_sized(out, bad, false, f)
}

pub fn out_call_sized(
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
pub enum H {
    Null,
    Live(u8),
}

#[derive(Default)]
pub struct Handles {
    pub tokens: Vec<*mut kubeboot_token>,
    pub keys: Vec<*mut kubeboot_key>,
    pub kcs: Vec<*mut kubeboot_kubeconfig>,
}

pub fn pick<T>(v: &[*mut T], h: &H) -> *mut T {
    match h {
        H::Live(i) if !v.is_empty() => v[*i as usize % v.len()],
        _ => null_mut(),
    }
}

/// `*out` handle constructors: written only on success, non-NULL then.
pub fn new_handle<T>(
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

pub fn strs(args: &[Arg]) -> Vec<kubeboot_str> {
    args.iter().map(|a| kubeboot_str { data: a.cptr(), len: a.len }).collect()
}
