//! PKCS#10 CSRs (software key or C sign callback), the CertificateSigningRequest object, the
//! kubelet's `node-csr-<digest>` name and the apiserver / approver policy check.

use core::ffi::{c_char, c_void};
use core::net::IpAddr;

use kb::api::{self, CsrObject, ObjectName};
use kb::csr::{self, CsrBuilder};
use kb::key::{P256Signer, spki_from_point};
use kb::{Error, pem, policy};

use crate::error::kubeboot_result;
use crate::key::{KUBEBOOT_KEY_POINT_LEN, kubeboot_key};
use crate::macros::write_with;

/// A borrowed string: `len` bytes of UTF-8 at `data` (not NUL-terminated; `data` may be NULL
/// when `len` is 0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_str {
    /// The bytes.
    pub data: *const c_char,
    /// Their number.
    pub len: usize,
}

/// Signs `msg_len` bytes at `msg` with ECDSA P-256 / SHA-256 (the callback hashes) and writes the
/// raw signature `r || s` (two 32-byte big-endian integers) to the 64 bytes at `sig_rs`.
/// Returns `KUBEBOOT_RESULT_OK` (0) on success; anything else aborts the CSR with
/// `KUBEBOOT_RESULT_SIGNER_FAILED`. `msg` is only valid during the call.
pub type kubeboot_sign_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        msg: *const u8,
        msg_len: usize,
        sig_rs: *mut u8,
    ) -> u32,
>;

/// An external P-256 signer (secure element, TPM, HSM, another library).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_signer {
    /// The signing function; NULL is `KUBEBOOT_RESULT_NULL_PARAMETER`.
    pub sign: kubeboot_sign_callback,
    /// Passed unchanged to `sign`.
    pub userdata: *mut c_void,
    /// The signer's public key as an uncompressed point `04 || X || Y`.
    pub public_point: [u8; 65],
}

/// Output format: PEM (`CERTIFICATE REQUEST`, LF line endings).
pub const KUBEBOOT_FORMAT_PEM: u32 = 0;
/// Output format: DER.
pub const KUBEBOOT_FORMAT_DER: u32 = 1;
/// Kubelet client certificate (`kubernetes.io/kube-apiserver-client-kubelet`).
pub const KUBEBOOT_PROFILE_CLIENT: u32 = 0;
/// Kubelet serving certificate (`kubernetes.io/kubelet-serving`).
pub const KUBEBOOT_PROFILE_SERVING: u32 = 1;
/// Most subject alternative names (DNS + IP) of a serving CSR.
pub const KUBEBOOT_CSR_MAX_SANS: usize = 16;
const _: () = assert!(KUBEBOOT_CSR_MAX_SANS == csr::MAX_SANS);
/// A CSR buffer of this size always suffices (PEM or DER).
pub const KUBEBOOT_CSR_MAX_LEN: usize = 4096;
/// Length of a `node-csr-<digest>` name.
pub const KUBEBOOT_NODE_CSR_NAME_LEN: usize = 52;
const _: () = assert!(KUBEBOOT_NODE_CSR_NAME_LEN == api::NODE_CSR_NAME_LEN);
/// Usages checked by [`kubeboot_csr_check`] beyond this count are ignored (the check fails
/// anyway: there are only 23 distinct usages).
pub const KUBEBOOT_CSR_CHECK_MAX_USAGES: usize = 64;

/// A [`kubeboot_signer`] seen from Rust.
pub(crate) struct CallbackSigner {
    sign: unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut u8) -> u32,
    userdata: *mut c_void,
    point: [u8; 65],
    key: p256::ecdsa::VerifyingKey,
}

impl P256Signer for CallbackSigner {
    fn public_point(&self) -> [u8; 65] {
        self.point
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> kb::Result<[u8; 64]> {
        use p256::ecdsa::signature::Verifier as _;
        let mut rs = [0u8; 64];
        // SAFETY: `sign` is a non-NULL C function pointer supplied by the caller with the
        // documented signature; `message` is valid for reads of its length and `rs` for 64
        // bytes of writes during the call; `userdata` is passed through untouched.
        let rc =
            unsafe { (self.sign)(self.userdata, message.as_ptr(), message.len(), rs.as_mut_ptr()) };
        if rc != kubeboot_result::Ok as u32 {
            return Err(Error::SignerFailed);
        }
        // A callback that signs with the wrong key (or garbage) must not produce a CSR.
        let sig = p256::ecdsa::Signature::from_slice(&rs).map_err(|_| Error::SignerFailed)?;
        self.key.verify(message, &sig).map_err(|_| Error::SignerFailed)?;
        Ok(rs)
    }
}

pub(crate) fn callback_signer(s: &kubeboot_signer) -> Result<CallbackSigner, kubeboot_result> {
    let sign = s.sign.ok_or(kubeboot_result::NullParameter)?;
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&s.public_point)
        .map_err(|_| kubeboot_result::MalformedKey)?;
    Ok(CallbackSigner { sign, userdata: s.userdata, point: s.public_point, key })
}

/// Convert a C array of [`kubeboot_str`] into `&str`s (at most `N`, else `too_many`).
fn strs<const N: usize>(
    items: &[kubeboot_str],
    too_many: kubeboot_result,
) -> Result<heapless::Vec<&str, N>, kubeboot_result> {
    let mut out = heapless::Vec::new();
    for item in items {
        // SAFETY: the caller guarantees each non-NULL `data` points to `len` initialised bytes
        // valid for the call.
        let bytes = unsafe { crate::macros::slice_from(item.data.cast::<u8>(), item.len) }?;
        let s = core::str::from_utf8(bytes).map_err(|_| kubeboot_result::InvalidUtf8)?;
        out.push(s).map_err(|_| too_many)?;
    }
    Ok(out)
}

/// Build, sign and write a CSR. `buf` is only written on success; a short buffer reports the
/// profile's upper bound (the DER signature length varies by a few bytes).
fn write_csr(
    builder: &CsrBuilder<'_>,
    signer: &impl P256Signer,
    format: u32,
    buf: &mut [u8],
    out_len: &mut usize,
) -> kubeboot_result {
    let needed = match format {
        KUBEBOOT_FORMAT_PEM => builder.max_pem_len(),
        KUBEBOOT_FORMAT_DER => builder.max_der_len(),
        _ => return kubeboot_result::InvalidParameter,
    };
    if buf.len() < needed {
        *out_len = needed;
        return kubeboot_result::InsufficientSize;
    }
    let mut tbs = [0u8; csr::MAX_TBS_LEN];
    let n = try_kb!(builder.write_tbs(&signer.public_key_spki(), &mut tbs));
    let tbs = tbs.get(..n).unwrap_or(&[]);
    let rs = try_kb!(signer.sign_p256_sha256(tbs));
    if format == KUBEBOOT_FORMAT_DER {
        return write_with(buf, out_len, |b| csr::assemble(tbs, &rs, b));
    }
    let mut der = [0u8; csr::MAX_CSR_DER];
    let n = try_kb!(csr::assemble(tbs, &rs, &mut der));
    write_with(buf, out_len, |b| pem::encode(csr::LABEL_CSR, der.get(..n).unwrap_or(&[]), b))
}

/// What [`kubeboot_csr_write`] builds: the profile, the node, the SANs, the format, and who
/// signs (exactly one of `key` and `signer`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_csr_spec {
    /// `KUBEBOOT_PROFILE_CLIENT` or `KUBEBOOT_PROFILE_SERVING`.
    pub profile: u32,
    /// The node name (`CN=system:node:<node_name>`).
    pub node_name: *const c_char,
    /// Its length.
    pub node_name_len: usize,
    /// Serving: the DNS names.
    pub dns_names: *const kubeboot_str,
    /// Their number.
    pub dns_count: usize,
    /// Serving: the IP addresses as text (`"10.0.0.1"`, `"fd00::1"`).
    pub ip_addresses: *const kubeboot_str,
    /// Their number.
    pub ip_count: usize,
    /// `KUBEBOOT_FORMAT_PEM` or `KUBEBOOT_FORMAT_DER`.
    pub format: u32,
    /// Sign with this key; NULL: with `signer`.
    pub key: *const kubeboot_key,
    /// Sign through this C callback (checked against its public point before the CSR is
    /// written: `KUBEBOOT_RESULT_SIGNER_FAILED`); NULL: with `key`.
    pub signer: *const kubeboot_signer,
}

/// Write the kubelet CSR `spec` describes into `buf`: a **client** CSR (`O=system:nodes`,
/// `CN=system:node:<node_name>`, no SANs), or a **serving** one (the same subject and a
/// subjectAltName with the DNS names, then the IP addresses: at least one and at most
/// [`KUBEBOOT_CSR_MAX_SANS`]). [`KUBEBOOT_CSR_MAX_LEN`] bytes always suffice; a short buffer
/// gets an upper bound in `*out_len` (and no signature is made). Both or neither of `key` and
/// `signer` is `INVALID_PARAMETER`; an invalid signer point is `MALFORMED_KEY`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_csr_write(
    spec: *const kubeboot_csr_spec,
    buf: *mut u8,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let spec = try_ref!(spec);
        let out_len = try_mut!(out_len);
        let node = try_str!(spec.node_name, spec.node_name_len);
        let buf = try_out_buf!(buf, len);
        // SAFETY: non-NULL pointers point to live values (the ABI's contract).
        let (key, signer) = unsafe { (spec.key.as_ref(), spec.signer.as_ref()) };
        match (key, signer) {
            (Some(key), None) => {
                #[cfg(feature = "ring")]
                let signer = &match kb::backend::ring::RingSigner::from_node_key(&key.inner) {
                    Ok(s) => s,
                    Err(e) => return e.into(),
                };
                #[cfg(not(feature = "ring"))]
                let signer = &key.inner;
                csr_for(spec, node, signer, buf, out_len)
            }
            (None, Some(s)) => match callback_signer(s) {
                Ok(signer) => csr_for(spec, node, &signer, buf, out_len),
                Err(e) => e,
            },
            _ => kubeboot_result::InvalidParameter,
        }
    }}
}

fn csr_for(
    spec: &kubeboot_csr_spec,
    node: &str,
    signer: &impl P256Signer,
    buf: &mut [u8],
    out_len: &mut usize,
) -> kubeboot_result {
    match spec.profile {
        KUBEBOOT_PROFILE_CLIENT => {
            let builder = try_kb!(CsrBuilder::client(node));
            write_csr(&builder, signer, spec.format, buf, out_len)
        }
        KUBEBOOT_PROFILE_SERVING => {
            let dns = try_slice!(spec.dns_names, spec.dns_count);
            let ips = try_slice!(spec.ip_addresses, spec.ip_count);
            let dns = match strs::<{ csr::MAX_SANS }>(dns, kubeboot_result::TooManySans) {
                Ok(v) => v,
                Err(e) => return e,
            };
            let ip_strs = match strs::<{ csr::MAX_SANS }>(ips, kubeboot_result::TooManySans) {
                Ok(v) => v,
                Err(e) => return e,
            };
            let mut ips: heapless::Vec<IpAddr, { csr::MAX_SANS }> = heapless::Vec::new();
            for s in &ip_strs {
                let ip = try_kb!(csr::parse_ip(s));
                if ips.push(ip).is_err() {
                    return kubeboot_result::TooManySans;
                }
            }
            let builder = try_kb!(CsrBuilder::serving(node, &dns, &ips));
            write_csr(&builder, signer, spec.format, buf, out_len)
        }
        _ => kubeboot_result::InvalidParameter,
    }
}

fn node_csr_name_common(
    point: &[u8; 65],
    node_name: *const c_char,
    node_name_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    let out_len = try_mut!(out_len);
    let node = try_str!(node_name, node_name_len);
    let buf = try_out_buf!(buf, len);
    try_kb!(csr::validate_node_name(node));
    let mut cn = [0u8; csr::NODE_USER_PREFIX.len() + csr::MAX_NODE_NAME];
    let n = csr::NODE_USER_PREFIX.len() + node.len();
    let (prefix, rest) = cn.split_at_mut(csr::NODE_USER_PREFIX.len());
    prefix.copy_from_slice(csr::NODE_USER_PREFIX.as_bytes());
    if let Some(dst) = rest.get_mut(..node.len()) {
        dst.copy_from_slice(node.as_bytes());
    }
    let cn = core::str::from_utf8(cn.get(..n).unwrap_or(&[])).unwrap_or("");
    let spki = spki_from_point(point);
    let name = api::node_csr_name(&spki, cn, &[csr::NODES_GROUP], &api::USAGES_CLIENT_EC);
    crate::macros::copy_out(buf, out_len, name.as_str().as_bytes())
}

/// The kubelet's bootstrap CSR object name `node-csr-<digest>` (52 characters) for `key`'s
/// client CSR for `node_name` with the EC client usages `["digital signature", "client auth"]`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_node_csr_name(
    key: *const kubeboot_key,
    node_name: *const c_char,
    node_name_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let key = try_ref!(key);
        node_csr_name_common(&key.inner.public_point(), node_name, node_name_len, buf, len, out_len)
    }}
}

/// As [`kubeboot_key_node_csr_name`] for an external signer's public point (65 bytes,
/// `04 || X || Y`; an invalid point is `KUBEBOOT_RESULT_MALFORMED_KEY`).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_node_csr_name(
    public_point: *const u8,
    node_name: *const c_char,
    node_name_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        if public_point.is_null() {
            return kubeboot_result::NullParameter;
        }
        let p = try_slice!(public_point, KUBEBOOT_KEY_POINT_LEN);
        let mut point = [0u8; 65];
        point.copy_from_slice(p);
        if p256::ecdsa::VerifyingKey::from_sec1_bytes(&point).is_err() {
            return kubeboot_result::MalformedKey;
        }
        node_csr_name_common(&point, node_name, node_name_len, buf, len, out_len)
    }}
}

/// Write the `certificates.k8s.io/v1` CertificateSigningRequest JSON body into `buf`.
///
/// * `request_pem`: the CSR PEM (base64-encoded again into `spec.request`);
/// * `name`: `metadata.name` (e.g. the `node-csr-<digest>` name), or NULL with `name_len` 0 for
///   `metadata.generateName: "csr-"` (the rotation path); NULL with a non-zero length is
///   `KUBEBOOT_RESULT_NULL_PARAMETER`;
/// * `profile`: `KUBEBOOT_PROFILE_CLIENT` / `_SERVING`, selecting `spec.signerName` and the EC
///   usages (`digital signature` + `client auth` / `server auth`);
/// * `expiration_seconds`: `spec.expirationSeconds`, 0 for none; 1–599 is
///   `KUBEBOOT_RESULT_INVALID_EXPIRATION_SECONDS`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_csr_object_json(
    request_pem: *const u8,
    request_pem_len: usize,
    name: *const c_char,
    name_len: usize,
    profile: u32,
    expiration_seconds: u32,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let request_pem = try_slice!(request_pem, request_pem_len);
        let name = match try_opt_str!(name, name_len) {
            None => ObjectName::Generate,
            Some(n) => ObjectName::Fixed(n),
        };
        let buf = try_out_buf!(buf, len);
        let (signer, usages): (&str, &[&str]) = match profile {
            KUBEBOOT_PROFILE_CLIENT => (api::SIGNER_CLIENT, &api::USAGES_CLIENT_EC),
            KUBEBOOT_PROFILE_SERVING => (api::SIGNER_SERVING, &api::USAGES_SERVING_EC),
            _ => return kubeboot_result::InvalidParameter,
        };
        let expiration = (expiration_seconds != 0).then_some(expiration_seconds);
        let obj = try_kb!(CsrObject::new(name, request_pem, signer, usages, expiration));
        write_with(buf, out_len, |b| obj.write_json(b))
    }}
}

/// Check a CSR (PEM, as in `spec.request`) the way the apiserver, the csrapproving controller
/// and the kubelet signers would: self-signature, usages, signer name, `expiration_seconds`
/// (0 for none), then the kubelet client or serving rules for `signer`. Returns
/// `KUBEBOOT_RESULT_OK` or the first violation (`KUBEBOOT_RESULT_POLICY_*`, 500–516).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_csr_check(
    csr_pem: *const u8,
    csr_pem_len: usize,
    signer_name: *const c_char,
    signer_name_len: usize,
    usages: *const kubeboot_str,
    usage_count: usize,
    expiration_seconds: u32,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let pem = try_slice!(csr_pem, csr_pem_len);
        let signer = try_str!(signer_name, signer_name_len);
        let usages = try_slice!(usages, usage_count);
        let usages = usages.get(..KUBEBOOT_CSR_CHECK_MAX_USAGES).unwrap_or(usages);
        let usages = match strs::<KUBEBOOT_CSR_CHECK_MAX_USAGES>(usages, kubeboot_result::PolicyDuplicateUsage) {
            Ok(v) => v,
            Err(e) => return e,
        };
        let expiration = (expiration_seconds != 0).then_some(expiration_seconds);
        #[cfg(feature = "std")]
        let mut scratch = alloc::vec![0u8; pem.len() / 4 * 3 + 3];
        #[cfg(not(feature = "std"))]
        let mut scratch = [0u8; 4096];
        try_kb!(policy::check_kubelet_csr(pem, signer, &usages, expiration, &mut scratch));
        kubeboot_result::Ok
    }}
}
