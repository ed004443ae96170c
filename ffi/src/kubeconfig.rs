//! Kubeconfigs: read one and resolve its current context (`kubeboot_kubeconfig` handles), write
//! the kubelet's node kubeconfig.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::ffi::c_char;
use core::ptr::null;

use kb::kubeconfig::{self, Kubeconfig, NodeKubeconfig, Scalar, Source};
use zeroize::Zeroize;

use crate::error::kubeboot_result;
use crate::macros::{box_out, free_box, write_with};

/// A credential is not set.
pub const KUBEBOOT_SOURCE_NONE: u32 = 0;
/// A credential is inline (`*-data`, decoded to PEM in the `_data` field).
pub const KUBEBOOT_SOURCE_DATA: u32 = 1;
/// A credential is a file (the `_file` field; see its `_is_relative` flag).
pub const KUBEBOOT_SOURCE_FILE: u32 = 2;
/// Largest kubeconfig [`kubeboot_kubeconfig_load`] reads.
pub const KUBEBOOT_KUBECONFIG_MAX_LEN: usize = kubeconfig::MAX_INPUT_LEN;

/// A borrowed byte string (not NUL-terminated; `data` is NULL when absent, with `len` 0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_bytes {
    /// The bytes.
    pub data: *const u8,
    /// Their number.
    pub len: usize,
}

/// The current context of a kubeconfig, resolved (from [`kubeboot_kubeconfig_get`]). Every
/// pointer points into the `kubeboot_kubeconfig` handle and is valid until it is freed. Text is
/// UTF-8, already unescaped, not NUL-terminated; absent values are `{NULL, 0}`. `*-data` wins
/// over the file when both are set (as kubectl). Relative paths are reported as written; resolve
/// them against the kubeconfig file's directory when `*_is_relative`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_kubeconfig_view {
    /// The current context's name.
    pub context_name: kubeboot_bytes,
    /// Its cluster's name.
    pub cluster_name: kubeboot_bytes,
    /// Its user's name (absent: anonymous).
    pub user_name: kubeboot_bytes,
    /// The context's namespace.
    pub context_namespace: kubeboot_bytes,
    /// The server URL (never empty).
    pub server: kubeboot_bytes,
    /// `tls-server-name`.
    pub tls_server_name: kubeboot_bytes,
    /// `insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// `KUBEBOOT_SOURCE_NONE` (system roots) / `_DATA` / `_FILE`.
    pub ca_source: u32,
    /// DATA: the CA bundle PEM (base64-decoded `certificate-authority-data`).
    pub ca_data: kubeboot_bytes,
    /// FILE: `certificate-authority`.
    pub ca_file: kubeboot_bytes,
    /// FILE: `ca_file` is relative.
    pub ca_file_is_relative: bool,
    /// The bearer token (secret).
    pub token: kubeboot_bytes,
    /// `tokenFile`.
    pub token_file: kubeboot_bytes,
    /// `token_file` is relative.
    pub token_file_is_relative: bool,
    /// `KUBEBOOT_SOURCE_NONE` / `_DATA` / `_FILE` for the client certificate.
    pub client_cert_source: u32,
    /// DATA: the client certificate PEM.
    pub client_cert_data: kubeboot_bytes,
    /// FILE: `client-certificate`.
    pub client_cert_file: kubeboot_bytes,
    /// FILE: `client_cert_file` is relative.
    pub client_cert_file_is_relative: bool,
    /// `KUBEBOOT_SOURCE_NONE` / `_DATA` / `_FILE` for the client key.
    pub client_key_source: u32,
    /// DATA: the client key PEM (secret).
    pub client_key_data: kubeboot_bytes,
    /// FILE: `client-key`.
    pub client_key_file: kubeboot_bytes,
    /// FILE: `client_key_file` is relative.
    pub client_key_file_is_relative: bool,
}

impl crate::macros::Handle for kubeboot_kubeconfig {}

/// Decoded copies of the resolved context's values.
#[derive(Default)]
struct Values {
    context_name: Option<String>,
    cluster_name: Option<String>,
    user_name: Option<String>,
    namespace: Option<String>,
    server: Option<String>,
    tls_server_name: Option<String>,
    insecure: bool,
    ca: Cred,
    token: Option<String>,
    token_file: Option<(String, bool)>,
    cert: Cred,
    key: Cred,
}

#[derive(Default)]
enum Cred {
    #[default]
    None,
    Data(Vec<u8>),
    File(String, bool),
}

/// A kubeconfig resolved to its current context. Opaque; free with
/// [`kubeboot_kubeconfig_free`], which zeroizes the token and key data.
pub struct kubeboot_kubeconfig {
    v: Values,
}

impl Drop for kubeboot_kubeconfig {
    fn drop(&mut self) {
        if let Some(t) = &mut self.v.token {
            t.zeroize();
        }
        if let Cred::Data(d) = &mut self.v.key {
            d.zeroize();
        }
    }
}

fn text(s: Scalar<'_>) -> Result<String, kb::Error> {
    // The decoded text may be the user's token: wipe the scratch copy before it is freed.
    let mut buf = zeroize::Zeroizing::new(vec![0u8; s.decoded_len()]);
    let t = s.decode_into(&mut buf)?;
    Ok(String::from(t))
}

fn opt_text(s: Option<Scalar<'_>>) -> Result<Option<String>, kb::Error> {
    s.filter(|s| !s.is_empty()).map(text).transpose()
}

fn cred(src: Source<'_>) -> Result<Cred, kb::Error> {
    Ok(match src {
        Source::None => Cred::None,
        Source::File(f) => Cred::File(text(f)?, f.is_relative_path()),
        Source::Data(d) => {
            // The raw text bounds the unescaped text, which bounds the decoded bytes.
            let mut buf = vec![0u8; d.raw().len() + 4];
            let pem = d.decode_base64_into(&mut buf).map(<[u8]>::to_vec);
            buf.zeroize();
            let pem = pem?;
            Cred::Data(pem)
        }
    })
}

fn load(input: &[u8]) -> Result<Values, kb::Error> {
    let kc = Kubeconfig::parse(input)?;
    let r = kc.resolve()?;
    let mut token = opt_text(r.user.token)?;
    let result = (|| {
        Ok(Values {
            context_name: Some(text(r.context_name)?),
            cluster_name: Some(text(r.cluster_name)?),
            user_name: opt_text(r.user_name)?,
            namespace: opt_text(r.namespace())?,
            server: Some(text(r.server())?),
            tls_server_name: opt_text(r.cluster.tls_server_name)?,
            insecure: r.cluster.insecure_skip_tls_verify,
            ca: cred(r.cluster.ca_source())?,
            token: token.take(),
            token_file: match r.user.token_file.filter(|f| !f.is_empty()) {
                Some(f) => Some((text(f)?, f.is_relative_path())),
                None => None,
            },
            cert: cred(r.user.client_cert_source())?,
            key: cred(r.user.client_key_source())?,
        })
    })();
    if let Some(t) = &mut token {
        t.zeroize();
    }
    result
}

/// Parse a kubeconfig (YAML as kubectl writes it, or JSON) from `(input, len)` and resolve its
/// `current-context` to the cluster and user; values are decoded and copied into the new handle.
/// `KUBEBOOT_RESULT_MALFORMED` for unsupported YAML, a missing current context, context, cluster,
/// user or server, or bad base64 in a `*-data` field.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_kubeconfig_load(
    input: *const u8,
    len: usize,
    out: *mut *mut kubeboot_kubeconfig,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let input = try_slice!(input, len);
        let v = try_kb!(load(input));
        box_out(out, kubeboot_kubeconfig { v })
    }}
}

/// Free a kubeconfig handle (zeroizing the token and key data). NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_kubeconfig_free(kc: *mut kubeboot_kubeconfig) {
    ffi_panic_boundary! { (), {
        // SAFETY: the caller passes NULL or a live handle from `kubeboot_kubeconfig_load`.
        unsafe { free_box(kc) }
    }}
}

fn b(s: &Option<String>) -> kubeboot_bytes {
    match s {
        Some(s) => kubeboot_bytes { data: s.as_ptr(), len: s.len() },
        None => kubeboot_bytes { data: null(), len: 0 },
    }
}

fn bv(s: &[u8]) -> kubeboot_bytes {
    kubeboot_bytes { data: s.as_ptr(), len: s.len() }
}

const NONE: kubeboot_bytes = kubeboot_bytes { data: null(), len: 0 };

/// `(source, data, file, is_relative)` of a credential.
fn cred_view(c: &Cred) -> (u32, kubeboot_bytes, kubeboot_bytes, bool) {
    match c {
        Cred::None => (KUBEBOOT_SOURCE_NONE, NONE, NONE, false),
        Cred::Data(d) => (KUBEBOOT_SOURCE_DATA, bv(d), NONE, false),
        Cred::File(f, rel) => (KUBEBOOT_SOURCE_FILE, NONE, bv(f.as_bytes()), *rel),
    }
}

/// Describe the resolved context in `*out` (pointers into `kc`, valid until it is freed).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_kubeconfig_get(
    kc: *const kubeboot_kubeconfig,
    out: *mut kubeboot_kubeconfig_view,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let kc = try_ref!(kc);
        let out = try_mut!(out);
        let v = &kc.v;
        let (ca_source, ca_data, ca_file, ca_file_is_relative) = cred_view(&v.ca);
        let (client_cert_source, client_cert_data, client_cert_file, client_cert_file_is_relative) =
            cred_view(&v.cert);
        let (client_key_source, client_key_data, client_key_file, client_key_file_is_relative) =
            cred_view(&v.key);
        let (token_file, token_file_is_relative) = match &v.token_file {
            Some((f, rel)) => (bv(f.as_bytes()), *rel),
            None => (NONE, false),
        };
        *out = kubeboot_kubeconfig_view {
            context_name: b(&v.context_name),
            cluster_name: b(&v.cluster_name),
            user_name: b(&v.user_name),
            context_namespace: b(&v.namespace),
            server: b(&v.server),
            tls_server_name: b(&v.tls_server_name),
            insecure_skip_tls_verify: v.insecure,
            ca_source,
            ca_data,
            ca_file,
            ca_file_is_relative,
            token: b(&v.token),
            token_file,
            token_file_is_relative,
            client_cert_source,
            client_cert_data,
            client_cert_file,
            client_cert_file_is_relative,
            client_key_source,
            client_key_data,
            client_key_file,
            client_key_file_is_relative,
        };
        kubeboot_result::Ok
    }}
}

/// Write the kubelet's node kubeconfig (pkg/kubelet/certificate/bootstrap/bootstrap.go
/// writeKubeconfigFromBootstrapping) into `buf`: cluster `default-cluster` with `server`, the CA as
/// a file path (`ca_file`, make it absolute first) or, without a file, as
/// `certificate-authority-data` from `ca_pem`, `insecure-skip-tls-verify` when `insecure`; user
/// `default-auth` with `client-certificate` and `client-key` both
/// `<cert_dir>/kubelet-client-current.pem`; context `default-context` (namespace `default`).
/// `ca_file` and `ca_pem` may be NULL/0. Returns the YAML length in `*out_len`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_node_kubeconfig_write(
    server: *const c_char,
    server_len: usize,
    ca_file: *const c_char,
    ca_file_len: usize,
    ca_pem: *const u8,
    ca_pem_len: usize,
    insecure: bool,
    cert_dir: *const c_char,
    cert_dir_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let server = try_str!(server, server_len);
        let ca_file = try_str!(ca_file, ca_file_len);
        let ca_pem = try_slice!(ca_pem, ca_pem_len);
        let cert_dir = try_str!(cert_dir, cert_dir_len);
        let buf = try_out_buf!(buf, len);
        if server.is_empty() || cert_dir.is_empty() {
            return kubeboot_result::InvalidParameter;
        }
        let cfg = NodeKubeconfig {
            server,
            certificate_authority: Some(ca_file),
            certificate_authority_data: Some(ca_pem),
            insecure_skip_tls_verify: insecure,
            cert_dir,
        };
        write_with(buf, out_len, |b| kubeconfig::write_node_kubeconfig(&cfg, b))
    }}
}
