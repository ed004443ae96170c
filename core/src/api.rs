//! The `certificates.k8s.io/v1` CertificateSigningRequest object the node submits.
//!
//! * [`CsrObject::write_json`] writes the request body into a caller buffer (no heap);
//! * `node_csr_name` (feature `csr-name`) computes the kubelet's `node-csr-<digest>` object name byte for byte
//!   (feature `csr-name`: SHA-512/256 costs ~11 KiB of flash on a Cortex-M);
//! * rotation requests use `metadata.generateName: csr-` instead ([`ObjectName::Generate`]).

use crate::error::{Error, Result};
use crate::out::{Sink, put_base64_parts, put_decimal, write_measured};

/// The API path CSRs are created at.
pub const CSR_PATH: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/// Signer of kubelet client certificates.
pub const SIGNER_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Signer of kubelet serving certificates.
pub const SIGNER_SERVING: &str = "kubernetes.io/kubelet-serving";
/// Usage `digital signature`.
pub const USAGE_DIGITAL_SIGNATURE: &str = "digital signature";
/// Usage `key encipherment` (RSA keys only since Kubernetes 1.27).
pub const USAGE_KEY_ENCIPHERMENT: &str = "key encipherment";
/// Usage `client auth`.
pub const USAGE_CLIENT_AUTH: &str = "client auth";
/// Usage `server auth`.
pub const USAGE_SERVER_AUTH: &str = "server auth";
/// The current kubelet's usages for an EC client key, in its order.
pub const USAGES_CLIENT_EC: [&str; 2] = [USAGE_DIGITAL_SIGNATURE, USAGE_CLIENT_AUTH];
/// The current kubelet's usages for an EC serving key, in its order.
pub const USAGES_SERVING_EC: [&str; 2] = [USAGE_DIGITAL_SIGNATURE, USAGE_SERVER_AUTH];
/// The smallest `spec.expirationSeconds` the API accepts.
pub const MIN_EXPIRATION_SECONDS: u32 = 600;
/// Length of a `node-csr-<digest>` name.
pub const NODE_CSR_NAME_LEN: usize = 52;
/// The `generateName` prefix of rotation CSRs.
pub const GENERATE_NAME_PREFIX: &str = "csr-";

/// A computed `node-csr-<digest>` name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NodeCsrName([u8; NODE_CSR_NAME_LEN]);

impl NodeCsrName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl core::fmt::Debug for NodeCsrName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::fmt::Display for NodeCsrName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kubelet's CSR object name (path B, `digestedName` in `pkg/kubelet/certificate/bootstrap`):
/// `node-csr-` + base64url-unpadded(SHA-512/256 over `enc(item) || "|"` for the SPKI DER, the
/// common name, each organization and each usage, in that order), where `enc` is base64url
/// without padding.
#[cfg(feature = "csr-name")]
pub fn node_csr_name(
    spki_der: &[u8],
    common_name: &str,
    organizations: &[&str],
    usages: &[&str],
) -> NodeCsrName {
    use sha2::{Digest, Sha512_256};
    let mut h = Sha512_256::new();
    let mut item = |bytes: &[u8]| {
        // base64url without padding, streamed in 48-byte (multiple of 3) chunks.
        let mut out = [0u8; 64];
        for chunk in bytes.chunks(48) {
            if let Ok(s) =
                <base64ct::Base64UrlUnpadded as base64ct::Encoding>::encode(chunk, &mut out)
            {
                h.update(s.as_bytes());
            }
        }
        h.update(b"|");
    };
    item(spki_der);
    item(common_name.as_bytes());
    for o in organizations {
        item(o.as_bytes());
    }
    for u in usages {
        item(u.as_bytes());
    }
    let digest = h.finalize();
    let mut name = [0u8; NODE_CSR_NAME_LEN];
    let (prefix, rest) = name.split_at_mut(9);
    prefix.copy_from_slice(b"node-csr-");
    // 32 bytes encode to exactly 43 unpadded characters.
    let _ = <base64ct::Base64UrlUnpadded as base64ct::Encoding>::encode(&digest, rest);
    NodeCsrName(name)
}

/// How the object is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectName<'a> {
    /// `metadata.name` (e.g. the `node-csr-<digest>` name of the bootstrap path).
    Fixed(&'a str),
    /// `metadata.generateName: csr-` (the rotation path; the apiserver picks the suffix).
    Generate,
}

/// A CertificateSigningRequest body.
#[derive(Clone, Copy, Debug)]
pub struct CsrObject<'a> {
    name: ObjectName<'a>,
    request_pem: &'a [u8],
    /// PEM blocks after the CSR in `spec.request` (an attested join's evidence).
    evidence: &'a [u8],
    signer_name: &'a str,
    usages: &'a [&'a str],
    expiration_seconds: Option<u32>,
}

impl<'a> CsrObject<'a> {
    /// Describe a CSR object. `request_pem` is the `CERTIFICATE REQUEST` PEM (it is base64-encoded
    /// once more into `spec.request`, as the API's `[]byte` field wants). An `expiration_seconds`
    /// below 600 is [`Error::InvalidExpirationSeconds`].
    pub fn new(
        name: ObjectName<'a>,
        request_pem: &'a [u8],
        signer_name: &'a str,
        usages: &'a [&'a str],
        expiration_seconds: Option<u32>,
    ) -> Result<Self> {
        if let Some(e) = expiration_seconds {
            if e < MIN_EXPIRATION_SECONDS {
                return Err(Error::InvalidExpirationSeconds);
            }
            if e > i32::MAX as u32 {
                return Err(Error::InvalidExpirationSeconds);
            }
        }
        Ok(CsrObject { name, request_pem, evidence: &[], signer_name, usages, expiration_seconds })
    }

    /// Carry `evidence` (PEM blocks, [`crate::attest`]) after the CSR in `spec.request`.
    pub fn with_evidence(mut self, evidence: &'a [u8]) -> Self {
        self.evidence = evidence;
        self
    }

    /// Write the JSON body into `buf`; a short buffer is [`Error::BufferTooSmall`] with the exact
    /// size and nothing written.
    pub fn write_json(&self, buf: &mut [u8]) -> Result<usize> {
        write_measured(buf, |s| {
            self.emit(s);
            Ok(())
        })
    }

    fn emit(&self, s: &mut dyn Sink) {
        s.put(b"{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\",\"metadata\":{");
        match self.name {
            ObjectName::Fixed(n) => {
                s.put(b"\"name\":");
                put_json_string(s, n);
            }
            ObjectName::Generate => {
                s.put(b"\"generateName\":\"csr-\"");
            }
        }
        s.put(b"},\"spec\":{\"request\":\"");
        put_base64_parts(s, &[self.request_pem, self.evidence]);
        s.put(b"\",\"signerName\":");
        put_json_string(s, self.signer_name);
        s.put(b",\"usages\":[");
        for (i, u) in self.usages.iter().enumerate() {
            if i > 0 {
                s.put(b",");
            }
            put_json_string(s, u);
        }
        s.put(b"]");
        if let Some(e) = self.expiration_seconds {
            s.put(b",\"expirationSeconds\":");
            put_decimal(s, u64::from(e));
        }
        s.put(b"}}");
    }
}

/// Write `v` as a JSON string literal (quotes, backslashes and control characters escaped).
pub(crate) fn put_json_string(s: &mut dyn Sink, v: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    s.put(b"\"");
    let bytes = v.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            _ => None,
        };
        if esc.is_some() || b < 0x20 {
            s.put(bytes.get(start..i).unwrap_or(&[]));
            match esc {
                Some(e) => s.put(e),
                None => s.put(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0'),
                    HEX.get(usize::from(b & 0xf)).copied().unwrap_or(b'0'),
                ]),
            }
            start = i + 1;
        }
    }
    s.put(bytes.get(start..).unwrap_or(&[]));
    s.put(b"\"");
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::key::NodeKey;
    use std::string::String;

    const K1: &str = crate::key::tests_support::K1_PEM;

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[cfg(feature = "csr-name")]
    #[test]
    fn spec_table_k1() {
        let key = NodeKey::from_pem(K1.as_bytes()).unwrap();
        let spki = key.public_key_spki();
        let legacy = ["digital signature", "key encipherment", "client auth"];
        let cases: [(&str, &[&str], &str); 4] = [
            ("node-1", &USAGES_CLIENT_EC, "node-csr-n8Gs_E-Z9L7aSxQqzzA00Csg_R1hDXOPVUFrdIQkVzo"),
            ("node-1", &legacy, "node-csr-R-IXJPCz2Q_Fb46JHu923Uag9Vr8kP_9zZKpB_cKb_o"),
            (
                "worker-a.example.com",
                &USAGES_CLIENT_EC,
                "node-csr-o8Hoe6OLrh1HbJkDczyoHirTociXreM6Y1I3ugsSvvs",
            ),
            (
                "worker-a.example.com",
                &legacy,
                "node-csr-FMiWeGEreLw9ppZtrCcfY1ZOp3YfNbSME-cVxI53cbU",
            ),
        ];
        for (node, usages, want) in cases {
            let cn = String::from("system:node:") + node;
            let name = node_csr_name(&spki, &cn, &["system:nodes"], usages);
            assert_eq!(name.as_str(), want, "{node} {usages:?}");
        }
    }

    #[test]
    fn json_body() {
        let obj = CsrObject::new(
            ObjectName::Fixed("node-csr-abc"),
            b"PEM",
            SIGNER_CLIENT,
            &USAGES_CLIENT_EC,
            Some(600),
        )
        .unwrap();
        let mut buf = [0u8; 512];
        let n = obj.write_json(&mut buf).unwrap();
        assert_eq!(
            core::str::from_utf8(&buf[..n]).unwrap(),
            "{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\",\"metadata\":{\"name\":\"node-csr-abc\"},\"spec\":{\"request\":\"UEVN\",\"signerName\":\"kubernetes.io/kube-apiserver-client-kubelet\",\"usages\":[\"digital signature\",\"client auth\"],\"expirationSeconds\":600}}"
        );
        let gen_obj =
            CsrObject::new(ObjectName::Generate, b"", SIGNER_SERVING, &USAGES_SERVING_EC, None)
                .unwrap();
        let n = gen_obj.write_json(&mut buf).unwrap();
        let s = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(s.contains("\"generateName\":\"csr-\""));
        assert!(!s.contains("expirationSeconds"));
    }

    #[test]
    fn expiration_floor() {
        for bad in [0, 1, 599] {
            assert_eq!(
                CsrObject::new(ObjectName::Generate, b"", SIGNER_CLIENT, &[], Some(bad))
                    .unwrap_err(),
                Error::InvalidExpirationSeconds
            );
        }
        assert!(CsrObject::new(ObjectName::Generate, b"", SIGNER_CLIENT, &[], Some(600)).is_ok());
    }

    #[test]
    fn json_escaping_and_short_buffer() {
        let obj = CsrObject::new(ObjectName::Fixed("a\"b\\c\u{1}"), b"", "s", &[], None).unwrap();
        let mut buf = [0u8; 512];
        let n = obj.write_json(&mut buf).unwrap();
        let s = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(s.contains(r#""name":"a\"b\\c\u0001""#), "{s}");
        let mut small = [0u8; 10];
        assert_eq!(obj.write_json(&mut small).unwrap_err(), Error::BufferTooSmall { needed: n });
        assert_eq!(small, [0u8; 10]);
    }
}
