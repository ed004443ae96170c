//! Node keys held by a device: the PKCS#11 reference writer and readers
//! (`kubeboot_pkcs11_key_reference`, `kubeboot_key_reference_uri`,
//! `kubeboot_pkcs11_uri_attribute`), and the agent's KEY answers (in `agent`).

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::device as fdev;

/// The attribute names `kubeboot_pkcs11_uri_attribute` takes, and one it refuses.
const NAMES: [&str; 12] = [
    "token",
    "manufacturer",
    "model",
    "serial",
    "object",
    "id",
    "type",
    "slot-id",
    "module-path",
    "module-name",
    "pin-source",
    "pin-value",
];

/// `kubeboot_pkcs11_key_reference`; an OK reference reads back through
/// `kubeboot_key_reference_uri` and names `label` as its object.
#[derive(Arbitrary, Debug)]
pub struct KeyReference {
    pub device: Bytes,
    pub label: Bytes,
    pub id: Bytes,
    pub out: Out,
}

/// `kubeboot_key_reference_uri` of any bytes.
#[derive(Arbitrary, Debug)]
pub struct ReferenceUri {
    pub pem: Bytes,
    pub out: Out,
}

/// `kubeboot_pkcs11_uri_attribute` of any URI and one of [`NAMES`] (or any bytes).
#[derive(Arbitrary, Debug)]
pub struct UriAttribute {
    pub uri: Bytes,
    pub name: Result<u8, Bytes>,
    pub null_found: bool,
    pub out: Out,
}

fn uri_of(pem: &[u8]) -> (u32, Vec<u8>) {
    let mut buf = vec![0u8; fdev::KUBEBOOT_PKCS11_URI_MAX_LEN];
    let mut n = 0usize;
    let r = rc(fdev::kubeboot_key_reference_uri(
        pem.as_ptr(),
        pem.len(),
        buf.as_mut_ptr().cast(),
        buf.len(),
        &mut n,
    ));
    buf.truncate(if r == OK { n } else { 0 });
    (r, buf)
}

fn attribute(uri: &[u8], name: &str) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; fdev::KUBEBOOT_PKCS11_URI_MAX_LEN];
    let (mut n, mut found) = (0usize, false);
    let r = rc(fdev::kubeboot_pkcs11_uri_attribute(
        uri.as_ptr().cast(),
        uri.len(),
        name.as_ptr().cast(),
        name.len(),
        buf.as_mut_ptr(),
        buf.len(),
        &mut n,
        &mut found,
    ));
    assert_eq!(r, OK, "a URI the agent wrote reads back");
    found.then(|| buf[..n].to_vec())
}

pub fn key_reference(op: &KeyReference) {
    let KeyReference { device, label, id, out } = op;
    let (d, l, i) = (Arg::new(device), Arg::new(label), Arg::new(id));
    let (r, got) = out_call(out, d.bad() || l.bad() || i.bad(), &mut |p, n, ol| {
        fdev::kubeboot_pkcs11_key_reference(
            d.cptr(),
            d.len,
            l.cptr(),
            l.len,
            i.ptr(),
            i.len,
            p,
            n,
            ol,
        )
    });
    if let (OK, Some(pem)) = (r, got) {
        assert!(pem.len() <= fdev::KUBEBOOT_KEY_REF_MAX_LEN, "{}", pem.len());
        let (r, uri) = uri_of(&pem);
        assert_eq!(r, OK, "the reference written reads back");
        assert_eq!(attribute(&uri, "object").as_deref(), Some(&l.store[..l.len]));
        assert_eq!(attribute(&uri, "id").as_deref(), Some(&i.store[..i.len]));
        assert_eq!(attribute(&uri, "type").as_deref(), Some(&b"private"[..]));
    }
}

pub fn reference_uri(op: &ReferenceUri) {
    let ReferenceUri { pem, out } = op;
    let p = Arg::new(pem);
    let (r, got) = out_call(out, p.bad(), &mut |b, n, ol| {
        fdev::kubeboot_key_reference_uri(p.ptr(), p.len, b.cast(), n, ol)
    });
    if let (OK, Some(uri)) = (r, got) {
        assert!(uri.starts_with(b"pkcs11:") && std::str::from_utf8(&uri).is_ok());
    }
}

pub fn uri_attribute(op: &UriAttribute) {
    let UriAttribute { uri, name, null_found, out } = op;
    let u = Arg::new(uri);
    let name_arg = match name {
        Ok(i) => Arg::new(&Bytes::Data(NAMES[*i as usize % NAMES.len()].as_bytes().to_vec())),
        Err(b) => Arg::new(b),
    };
    let known = NAMES[..11].iter().any(|n| name_arg.store[..] == *n.as_bytes() && !name_arg.null);
    let mut found = false;
    let found_ptr: *mut bool = if *null_found { std::ptr::null_mut() } else { &mut found };
    let bad = u.bad() || name_arg.bad() || *null_found || !known;
    let (r, got) = out_call(out, bad, &mut |b, n, ol| {
        fdev::kubeboot_pkcs11_uri_attribute(
            u.cptr(),
            u.len,
            name_arg.cptr(),
            name_arg.len,
            b,
            n,
            ol,
            found_ptr,
        )
    });
    if let (OK, Some(v)) = (r, got) {
        assert!(found || v.is_empty());
    }
}
