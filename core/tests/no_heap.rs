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

#[test]
fn the_counter_counts() {
    let (n, v) = allocations(|| vec![1u8; 10]);
    assert!(n >= 1);
    drop(v);
}
