//! Secrets are wiped when their owner is dropped, checked by reading the owner's memory.
//!
//! Each value is built in a `MaybeUninit` slot owned by the test, dropped in place with
//! `ptr::drop_in_place`, and the slot's bytes are then read back with `read_volatile` and searched
//! for the secret (known, from fixed input). Every check first runs the same detector on the live
//! value (the secret must be found there, in the representation searched for) and on a plain
//! byte-array copy after it goes out of scope, so a detector that could never fire fails the test.
//!
//! What this does not cover: copies the compiler left in stack temporaries while the value was
//! built or moved (Rust gives no handle on those), and buffers owned by callers.
//!
//! Native only: reading padding bytes after a drop is fine on real hardware but not in Miri's
//! abstract machine, and the key checks need P-256 arithmetic.

use core::mem::MaybeUninit;
use core::ptr;

use kubeboot::key::NodeKey;
use kubeboot::token::{BootstrapToken, TokenSecret};

/// The bytes of `slot`, read one by one with volatile loads (so the reads are not folded into
/// what the compiler knows was last written).
fn slot_bytes<T>(slot: &MaybeUninit<T>) -> Vec<u8> {
    let base = slot.as_ptr().cast::<u8>();
    (0..size_of::<T>())
        // SAFETY: `base + i` lies inside `slot`, which is live and was fully written (zeroed,
        // then the value); a byte read has no alignment requirement.
        .map(|i| unsafe { ptr::read_volatile(base.add(i)) })
        .collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Does any of `needles` occur in `hay`? Returns the index of the first that does.
fn find_any(hay: &[u8], needles: &[Vec<u8>]) -> Option<usize> {
    needles.iter().position(|n| contains(hay, n))
}

/// Build `make()` in a zeroed slot, check that one of `needles` is visible while it is alive, drop
/// it in place and return the slot's bytes afterwards.
fn after_drop<T>(what: &str, make: impl FnOnce() -> T, needles: &[Vec<u8>]) -> Vec<u8> {
    let mut slot = MaybeUninit::<T>::zeroed();
    slot.write(make());
    let live = slot_bytes(&slot);
    assert!(
        find_any(&live, needles).is_some(),
        "{what}: the detector does not see the secret in the live value ({} bytes)",
        live.len()
    );
    // SAFETY: the slot holds a live `T` (written above) and is dropped exactly once; it is never
    // read as a `T` again.
    unsafe { ptr::drop_in_place(slot.as_mut_ptr()) };
    slot_bytes(&slot)
}

fn assert_wiped<T>(what: &str, make: impl FnOnce() -> T, needles: &[Vec<u8>]) {
    let dead = after_drop(what, make, needles);
    if let Some(i) = find_any(&dead, needles) {
        panic!("{what}: secret encoding #{i} still in memory after drop: {dead:02x?}");
    }
}

/// Control: a plain array is not wiped, and the detector must say so.
#[test]
fn detector_finds_an_unwiped_copy() {
    let secret = *b"0123456789abcdef";
    let dead = after_drop("[u8; 16]", || secret, &[secret.to_vec()]);
    assert!(contains(&dead, &secret), "the control should still hold the secret: {dead:02x?}");
    // And a type with a no-op drop that owns the bytes inline.
    struct Plain(#[allow(dead_code)] [u8; 32]);
    let d = [0x5au8; 32];
    let dead = after_drop("Plain", || Plain(d), &[d.to_vec()]);
    assert!(contains(&dead, &d));
}

const TOKEN: &str = "q7x2kd.m3v9t0w1p8z4r6yn";
const SECRET: &[u8; 16] = b"m3v9t0w1p8z4r6yn";

#[test]
fn token_secret_is_wiped() {
    let needles = [SECRET.to_vec()];
    assert_wiped("TokenSecret", || TokenSecret::from_bytes(SECRET).unwrap(), &needles);
    assert_wiped("BootstrapToken", || BootstrapToken::parse(TOKEN).unwrap(), &needles);
    let token = BootstrapToken::parse(TOKEN).unwrap();
    assert_wiped("WireToken", || token.to_wire(), &[TOKEN.as_bytes().to_vec(), needles[0].clone()]);
    assert_wiped("BootstrapToken clone", || token.clone(), &needles);
    assert_wiped(
        "BootstrapToken::from_entropy",
        || BootstrapToken::from_entropy(&[7u8; 32]).unwrap(),
        &[BootstrapToken::from_entropy(&[7u8; 32]).unwrap().secret_bytes().to_vec()],
    );
}

/// A fixed private scalar (below the P-256 group order n).
const D: [u8; 32] = [
    0x3c, 0x1f, 0x9a, 0x44, 0x0e, 0x7b, 0xd2, 0x65, 0x81, 0x2c, 0xf3, 0x5e, 0x17, 0xa8, 0x6d, 0x90,
    0x4b, 0xe1, 0x02, 0x73, 0xc6, 0x38, 0x9f, 0x5d, 0xaa, 0x11, 0x64, 0xb7, 0x2e, 0xd9, 0x80, 0x4f,
];

/// The encodings of a scalar a key type may hold: big-endian bytes, and the machine's words
/// least significant first (p256's `Scalar` keeps the canonical value in limbs of the target's
/// word size, least significant limb first, each in native byte order: on a little-endian machine
/// the reversed bytes, on a big-endian one such as s390x the 8-byte groups in reverse order).
fn scalar_needles(d: &[u8; 32]) -> Vec<Vec<u8>> {
    let limbs = |width: usize| -> Vec<u8> {
        d.rchunks(width)
            .flat_map(|w| match width {
                8 => u64::from_be_bytes(w.try_into().unwrap()).to_ne_bytes().to_vec(),
                _ => u32::from_be_bytes(w.try_into().unwrap()).to_ne_bytes().to_vec(),
            })
            .collect()
    };
    vec![d.to_vec(), limbs(8), limbs(4)]
}

#[test]
fn node_key_is_wiped() {
    let needles = scalar_needles(&D);
    assert_wiped("NodeKey::from_entropy", || NodeKey::from_entropy(&D).unwrap(), &needles);
    assert_wiped(
        "NodeKey::from_scalar_bytes",
        || NodeKey::from_scalar_bytes(&D).unwrap(),
        &needles,
    );
    let key = NodeKey::from_scalar_bytes(&D).unwrap();
    let mut pem = [0u8; kubeboot::key::SEC1_PEM_LEN];
    let n = key.to_sec1_pem(&mut pem).unwrap();
    assert_wiped("NodeKey::from_pem", || NodeKey::from_pem(&pem[..n]).unwrap(), &needles);
    assert_wiped(
        "NodeKey::generate",
        || {
            NodeKey::generate(|b| {
                b.copy_from_slice(&D);
                Ok(())
            })
            .unwrap()
        },
        &needles,
    );
}

#[cfg(feature = "ring")]
mod ring {
    use super::*;
    use kubeboot::backend::ring::RingSigner;
    use p256::elliptic_curve::PrimeField as _;

    /// The P-256 group order n, big endian.
    const N: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63,
        0x25, 0x51,
    ];

    /// 2²⁵⁶ − x, big endian.
    fn neg(x: &[u8; 32]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let v = -i16::from(x[i]) - borrow;
            out[i] = v.rem_euclid(256) as u8;
            borrow = i16::from(v < 0);
        }
        out
    }

    /// ring keeps the scalar in Montgomery form, `d·R mod n` with R = 2²⁵⁶ (so R mod n is
    /// 2²⁵⁶ − n), as little-endian limbs.
    fn montgomery(d: &[u8; 32]) -> [u8; 32] {
        let d = p256::Scalar::from_repr((*d).into()).unwrap();
        let r = p256::Scalar::from_repr(neg(&N).into()).unwrap();
        let mut out: [u8; 32] = (d * r).to_repr().into();
        out.reverse();
        out
    }

    #[test]
    fn group_order_constant_is_n() {
        // n itself is not a canonical scalar, n − 1 is.
        assert!(bool::from(p256::Scalar::from_repr(N.into()).is_none()));
        let mut n1 = N;
        n1[31] -= 1;
        assert!(bool::from(p256::Scalar::from_repr(n1.into()).is_some()));
        // 1·R mod n is R mod n.
        let mut one = [0u8; 32];
        one[31] = 1;
        let mut r = neg(&N);
        r.reverse();
        assert_eq!(montgomery(&one), r);
    }

    /// The scalar copies `RingSigner` keeps for `to_node_key` (raw scalar, or ring's PKCS#8
    /// document for generated keys) are `Zeroizing` arrays.
    #[test]
    fn ring_signer_own_scalar_copy_is_wiped() {
        let point = NodeKey::from_scalar_bytes(&D).unwrap().public_point();
        let needles = scalar_needles(&D);
        assert_wiped(
            "RingSigner::from_parts",
            || RingSigner::from_parts(&D, &point).unwrap(),
            &needles,
        );
        let g = RingSigner::generate().unwrap();
        let mut der = [0u8; kubeboot::key::SEC1_DER_LEN];
        g.to_node_key().unwrap().to_sec1_der(&mut der).unwrap();
        // SEC1: 30 77 02 01 01 04 20 <d>.
        assert_eq!(der[..7], [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
        let d: [u8; 32] = der[7..39].try_into().unwrap();
        assert_wiped("RingSigner::generate", move || g, &[d.to_vec()]);
    }

    /// Known gap: ring's `EcdsaKeyPair` has no `Drop` and keeps `d` (Montgomery form) and its
    /// nonce key after the drop; kubeboot forbids `unsafe`, so it cannot wipe ring's private
    /// fields itself.
    #[test]
    #[ignore = "known gap: ring's EcdsaKeyPair keeps d·R mod n after drop (ring does not zeroize)"]
    fn ring_key_pair_is_wiped() {
        let point = NodeKey::from_scalar_bytes(&D).unwrap().public_point();
        let needles = [montgomery(&D).to_vec()];
        assert_wiped(
            "RingSigner (ring's d)",
            || RingSigner::from_parts(&D, &point).unwrap(),
            &needles,
        );
    }
}
