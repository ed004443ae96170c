//! The grammar of what users type: `kubeboot_parse_duration`, `kubeboot_parse_key_device`,
//! `kubeboot_check_ip`, `kubeboot_check_bind_address` and `kubeboot_flag_refusal` give the
//! core's verdicts (`kubeboot::grammar`) on the same text; NULL with a length and text that is
//! not UTF-8 never pass.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot::grammar;
use kubeboot_ffi::grammar as fgr;

/// Which function, the text, and the output.
#[derive(Arbitrary, Debug)]
pub struct Grammar {
    pub which: u8,
    pub text: Bytes,
    /// `kubeboot_flag_refusal`: the flag and the result code.
    pub flag: Bytes,
    pub code: u32,
    /// `kubeboot_parse_duration`: NULL `secs`.
    pub null_secs: bool,
    pub out: Out,
}

/// The text as the core sees it (`None`: the ABI must refuse it before the grammar does).
fn core_text(a: &Arg) -> Option<&str> {
    if a.bad() {
        return None;
    }
    std::str::from_utf8(&a.store[..a.len]).ok()
}

pub fn grammar(op: &Grammar) {
    let t = Arg::new(&op.text);
    let text = core_text(&t);
    match op.which % 5 {
        0 => {
            let mut secs = i64::MIN;
            let sp: *mut i64 = if op.null_secs { std::ptr::null_mut() } else { &mut secs };
            let r = rc(fgr::kubeboot_parse_duration(t.cptr(), t.len, sp));
            let want = text.map(grammar::duration);
            match want {
                Some(Ok(n)) if !op.null_secs => assert_eq!((r, secs), (OK, n)),
                _ => {
                    assert_ne!(r, OK, "{:?}", op.text);
                    assert_eq!(secs, i64::MIN, "secs written on {r}");
                }
            }
        }
        1 => {
            let (r, got) = out_call(&op.out, t.bad(), &mut |p, l, ol| {
                fgr::kubeboot_parse_key_device(t.cptr(), t.len, p.cast(), l, ol)
            });
            if r == OK || r == INSUFFICIENT {
                let device = text.map(grammar::key_device);
                assert!(matches!(device, Some(Ok(_))), "{r} for {:?}", op.text);
                if let (Some(Ok(d)), Some(g)) = (device, got) {
                    assert_eq!(g, d.as_bytes());
                }
            } else if matches!(op.out, Out::Sized(_)) {
                assert!(!matches!(text.map(grammar::key_device), Some(Ok(_))), "{r}");
            }
        }
        2 => {
            let r = rc(fgr::kubeboot_check_ip(t.cptr(), t.len));
            assert_eq!(r == OK, text.is_some_and(|x| grammar::ip(x).is_ok()), "{r}");
        }
        3 => {
            let r = rc(fgr::kubeboot_check_bind_address(t.cptr(), t.len));
            assert_eq!(r == OK, text.is_some_and(|x| grammar::bind_address(x).is_ok()), "{r}");
        }
        _ => {
            let f = Arg::new(&op.flag);
            let bad = t.bad() || f.bad();
            let (r, got) = out_call(&op.out, bad, &mut |p, l, ol| {
                fgr::kubeboot_flag_refusal(
                    f.cptr(),
                    f.len,
                    t.cptr(),
                    t.len,
                    op.code,
                    p.cast(),
                    l,
                    ol,
                )
            });
            if let (OK, Some(g)) = (r, got) {
                let line = String::from_utf8(g).expect("the refusal line is UTF-8");
                let (flag, value) = (core_text(&f).unwrap(), text.unwrap());
                assert!(line.starts_with(&format!("{flag} {value:?}: ")), "{line}");
                assert!(!line[flag.len()..].contains('\n'), "not one line: {line:?}");
            }
        }
    }
}
