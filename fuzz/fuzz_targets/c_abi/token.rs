//! `kubeboot_token_*`: parse, from entropy, generate, the text outputs, the extra groups and
//! the Secret manifest.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::token as ftok;
use std::ptr::null_mut;

/// `kubeboot_token_id` / `_secret_name` / `_user_name` / `_wire` (by `which`) of a live or NULL
/// token.
#[derive(Arbitrary, Debug)]
pub struct TokenText {
    pub which: u8,
    pub h: H,
    pub out: Out,
}

/// `kubeboot_token_secret_manifest`.
#[derive(Arbitrary, Debug)]
pub struct TokenSecretManifest {
    pub h: H,
    pub desc: Bytes,
    pub has_exp: bool,
    pub exp: i64,
    pub usages: u32,
    pub groups: Bytes,
    pub out: Out,
}

/// `kubeboot_token_generate` (OS RNG), or with a NULL `*out`.
#[derive(Arbitrary, Debug)]
pub struct TokenGenerate {
    pub null_out: bool,
}

pub fn parse(hs: &mut Handles, b: &Bytes) {
    let a = Arg::new(b);
    new_handle(&mut hs.tokens, a.bad(), |o| ftok::kubeboot_token_parse(a.cptr(), a.len, o));
    assert_ne!(rc(ftok::kubeboot_token_parse(a.cptr(), a.len, null_mut())), OK);
}

pub fn from_entropy(hs: &mut Handles, b: &Bytes) {
    let a = Arg::new(b);
    new_handle(&mut hs.tokens, a.bad(), |o| ftok::kubeboot_token_from_entropy(a.ptr(), a.len, o));
}

pub fn text(hs: &mut Handles, op: &TokenText) {
    let TokenText { which, h, out } = op;
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

pub fn validate_extra_groups(b: &Bytes) {
    let a = Arg::new(b);
    let r = rc(ftok::kubeboot_token_validate_extra_groups(a.cptr(), a.len));
    if a.bad() {
        assert_ne!(r, OK);
    }
}

pub fn secret_manifest(hs: &mut Handles, op: &TokenSecretManifest) {
    let TokenSecretManifest { h, desc, has_exp, exp, usages, groups, out } = op;
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

pub fn generate(hs: &mut Handles, op: &TokenGenerate) {
    let TokenGenerate { null_out } = op;
    if *null_out {
        assert_ne!(rc(ftok::kubeboot_token_generate(null_mut())), OK);
    } else {
        new_handle(&mut hs.tokens, false, |o| ftok::kubeboot_token_generate(o));
    }
}
