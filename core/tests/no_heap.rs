//! The P-256 paths allocate nothing: a counting global allocator watches each operation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kubeboot::api::{CsrObject, ObjectName, SIGNER_CLIENT, USAGES_CLIENT_EC, node_csr_name};
use kubeboot::csr::CsrBuilder;
use kubeboot::key::NodeKey;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: defers to the system allocator; only counts calls made on the current thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Run `f` and return how many allocations it made on this thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = ALLOCS.with(Cell::get);
    let r = f();
    let after = ALLOCS.with(Cell::get);
    (after - before, r)
}

const K1: &[u8] = include_bytes!("data/p256.key");

#[test]
fn key_generation_and_io_allocate_nothing() {
    let (n, key) = allocations(|| NodeKey::from_entropy(&[0x5a; 32]).unwrap());
    assert_eq!(n, 0, "key generation");
    let (n, _) = allocations(|| {
        NodeKey::generate(|b| {
            b.fill(0x33);
            Ok(())
        })
        .unwrap()
    });
    assert_eq!(n, 0, "key generation via callback");
    let mut buf = [0u8; 512];
    let (n, len) = allocations(|| key.to_sec1_pem(&mut buf).unwrap());
    assert_eq!(n, 0, "SEC1 PEM write");
    let (n, _) = allocations(|| NodeKey::from_pem(&buf[..len]).unwrap());
    assert_eq!(n, 0, "SEC1 PEM read");
    let (n, _) = allocations(|| NodeKey::from_pem(K1).unwrap());
    assert_eq!(n, 0, "K1 read");
    let (n, _) = allocations(|| key.public_key_spki());
    assert_eq!(n, 0, "SPKI");
}

#[test]
fn csr_build_and_object_allocate_nothing() {
    let key = NodeKey::from_pem(K1).unwrap();
    let mut der = [0u8; 1024];
    let mut pem = [0u8; 2048];
    let mut json = [0u8; 4096];
    let (n, _) = allocations(|| {
        let b = CsrBuilder::client("node-1").unwrap();
        b.write_der(&key, &mut der).unwrap()
    });
    assert_eq!(n, 0, "CSR DER");
    let (n, pem_len) = allocations(|| {
        let b = CsrBuilder::client("node-1").unwrap();
        b.write_pem(&key, &mut pem).unwrap()
    });
    assert_eq!(n, 0, "CSR PEM");
    let ips = ["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()];
    let (n, _) = allocations(|| {
        let b = CsrBuilder::serving("node-1", &["node-1.example.com"], &ips).unwrap();
        b.write_der(&key, &mut der).unwrap()
    });
    assert_eq!(n, 0, "serving CSR DER");
    let (n, _) = allocations(|| {
        let name = node_csr_name(
            &key.public_key_spki(),
            "system:node:node-1",
            &["system:nodes"],
            &USAGES_CLIENT_EC,
        );
        let obj = CsrObject::new(
            ObjectName::Fixed(name.as_str()),
            &pem[..pem_len],
            SIGNER_CLIENT,
            &USAGES_CLIENT_EC,
            Some(3600),
        )
        .unwrap();
        obj.write_json(&mut json).unwrap()
    });
    assert_eq!(n, 0, "CSR object");
}

const EC_CA: &[u8] = include_bytes!("data/ec-ca.crt");
const EC_LEAF: &[u8] = include_bytes!("data/ec-leaf.crt");
/// 2027-06-01T00:00:00Z, inside the fixtures' validity.
const NOW: i64 = 1_811_808_000;

#[test]
fn token_parse_allocates_nothing() {
    use kubeboot::token::{BootstrapToken, authenticated_groups};
    let (n, t) = allocations(|| BootstrapToken::parse("abcdef.0123456789abcdef").unwrap());
    assert_eq!(n, 0, "token parse");
    let (n, _) = allocations(|| (t.secret_name(), t.user_name(), t.to_wire()));
    assert_eq!(n, 0, "token names");
    let (n, _) = allocations(|| {
        let mut g: heapless::Vec<&str, 16> = heapless::Vec::new();
        authenticated_groups("system:bootstrappers:a,system:bootstrappers:b", &mut g).unwrap();
        g.len()
    });
    assert_eq!(n, 0, "groups");
    let (n, _) = allocations(|| BootstrapToken::parse("nope").unwrap_err());
    assert_eq!(n, 0, "token parse error");
}

#[test]
fn p256_validation_and_pins_allocate_nothing() {
    use kubeboot::pin::{CaPin, check_any_pem};
    use kubeboot::verify::{Expected, Profile, verify_issued};
    let key = NodeKey::from_pem(K1).unwrap();
    let spki = key.public_key_spki();
    let mut scratch = [0u8; 4096];
    let (n, v) = allocations(|| {
        let expected =
            Expected { node_name: "node-1", public_key: &spki, profile: Profile::Client };
        verify_issued(EC_LEAF, EC_CA, &expected, NOW, &mut scratch).unwrap()
    });
    assert_eq!(n, 0, "P-256 validation");
    assert_eq!(v.ca_subject.as_str(), "CN=kubernetes-ec");
    let (n, r) = allocations(|| {
        let expected =
            Expected { node_name: "node-2", public_key: &spki, profile: Profile::Client };
        verify_issued(EC_LEAF, EC_CA, &expected, NOW, &mut scratch).unwrap_err()
    });
    assert_eq!(n, 0, "P-256 validation failure");
    assert!(matches!(r, kubeboot::Error::Verify(_)));
    let mut buf = [0u8; 2048];
    let der = kubeboot::pem::decode_first(EC_CA, "CERTIFICATE", &mut buf).unwrap();
    let (n, pin) = allocations(|| CaPin::from_cert_der(der).unwrap());
    assert_eq!(n, 0, "pin");
    let (n, _) = allocations(|| check_any_pem(&[pin], EC_CA, &mut scratch).unwrap());
    assert_eq!(n, 0, "pin check");
}

#[test]
fn the_counter_counts() {
    let (n, v) = allocations(|| vec![1u8; 10]);
    assert!(n >= 1);
    drop(v);
}
