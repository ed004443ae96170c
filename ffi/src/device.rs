//! Node keys held by a device (a PKCS#11 token, a TPM): the agent's `KUBEBOOT_AGENT_KEY`
//! action, its answers, and what a C or Go front-end needs to name a PKCS#11 key the way the
//! agent does (see the core's `kubeboot::keyref`).
//!
//! With `kubeboot_agent_config.key_device` set, the agent asks for every device operation
//! through [`crate::agent::kubeboot_agent_poll`] (`KUBEBOOT_ACTION_KIND_KEY`, `of.key`); the
//! front-end does the device I/O and answers:
//!
//! | `of.key.op` | do | answer |
//! |---|---|---|
//! | `KUBEBOOT_KEY_OP_KIND_PUBLIC` | load the key `key_ref` names | [`kubeboot_agent_on_key_public`] (its 65-byte point) |
//! | `KUBEBOOT_KEY_OP_KIND_GENERATE` | make a P-256 signing key that never leaves `device`, named `label` | [`kubeboot_agent_on_key_generated`] (its reference and point) |
//! | `KUBEBOOT_KEY_OP_KIND_SIGN` | ECDSA P-256 over SHA-256 of `message` with `key_ref`'s key | [`kubeboot_agent_on_key_signature`] (`r ‖ s`) or [`kubeboot_agent_sign_with`] (a `kubeboot_signer`) |
//! | `KUBEBOOT_KEY_OP_KIND_DESTROY` | destroy `key_ref`'s key (PKCS#11: both objects; TPM: nothing) | [`kubeboot_agent_on_key_destroyed`] |
//! | `KUBEBOOT_KEY_OP_KIND_CERTIFY` | `TPM2_Certify` of `key_ref`'s TPM key by the TPM's attestation key over `message` (32 bytes) | [`kubeboot_agent_on_key_certified`] (`TPMS_ATTEST`, `TPMT_SIGNATURE`) |
//!
//! Any operation that fails is answered with [`kubeboot_agent_on_key_error`] and a one-line
//! reason naming the device (never a secret): the agent decides what it means. A PKCS#11 key's
//! reference is made by [`kubeboot_pkcs11_key_reference`] from the device, the label and the
//! `CKA_ID` the front-end chose; [`kubeboot_key_reference_uri`] and
//! [`kubeboot_pkcs11_uri_attribute`] read one back (the module, the token, the PIN file).

use core::ffi::c_char;

use kb::agent::{Action, KeyOp};
use kb::key::P256Signer;
use kb::keyref::{self, Pkcs11Uri};

use crate::action::kubeboot_key_op_kind;
use crate::agent::{kubeboot_agent, why_text};
use crate::csr::{callback_signer, kubeboot_signer};
use crate::error::kubeboot_result;
use crate::macros::{copy_out, write_with};

/// The longest key reference the agent keeps (a `TSS2 PRIVATE KEY` or `PKCS#11 PROVIDER URI`
/// PEM block).
pub const KUBEBOOT_KEY_REF_MAX_LEN: usize = 1536;
const _: () = assert!(KUBEBOOT_KEY_REF_MAX_LEN == keyref::MAX_KEY_REF);
/// The longest PKCS#11 URI.
pub const KUBEBOOT_PKCS11_URI_MAX_LEN: usize = 1024;
const _: () = assert!(KUBEBOOT_PKCS11_URI_MAX_LEN == keyref::MAX_PKCS11_URI);

fn too_large(e: kb::Error, as_: kubeboot_result) -> kubeboot_result {
    match e {
        kb::Error::BufferTooSmall { .. } => as_,
        e => e.into(),
    }
}

/// The operation outstanding, as its `KUBEBOOT_KEY_OP_*` code.
fn outstanding(a: &kubeboot_agent) -> Option<kubeboot_key_op_kind> {
    match a.agent.outstanding()? {
        Action::Key(op) => Some(crate::action::key_action(&op).op),
        _ => None,
    }
}

/// `(ptr, len)` as exactly `N` bytes (`INVALID_PARAMETER` for another length).
fn exact<const N: usize>(bytes: &[u8]) -> Result<&[u8; N], kubeboot_result> {
    bytes.try_into().map_err(|_| kubeboot_result::InvalidParameter)
}

/// The answer to a PUBLIC: the key's public point (`point_len` =
/// [`crate::key::KUBEBOOT_KEY_POINT_LEN`], uncompressed). `INVALID_STATE` when no PUBLIC is outstanding,
/// `INVALID_PARAMETER` for another length (the operation stays unanswered).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_key_public(
    agent: *mut kubeboot_agent,
    now: i64,
    point: *const u8,
    point_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let point = match exact::<65>(try_slice!(point, point_len)) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if outstanding(a) != Some(kubeboot_key_op_kind::Public) {
            return kubeboot_result::InvalidState;
        }
        a.agent.on_key_public(now, Ok(point));
        kubeboot_result::Ok
    }}
}

/// The answer to a GENERATE: the new key's reference (PEM, at most
/// [`KUBEBOOT_KEY_REF_MAX_LEN`] bytes: a `TSS2 PRIVATE KEY` from a TPM, the block of
/// [`kubeboot_pkcs11_key_reference`] from a token) and its public point. `INVALID_STATE` when no
/// GENERATE is outstanding, `INVALID_PARAMETER` for a point of another length. A reference of
/// another holder than the device's, or a point not on the curve, fails the attempt
/// (`KEY_DEVICE`): the agent checks.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_key_generated(
    agent: *mut kubeboot_agent,
    now: i64,
    reference: *const u8,
    reference_len: usize,
    point: *const u8,
    point_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let reference = try_slice!(reference, reference_len);
        let point = match exact::<65>(try_slice!(point, point_len)) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if outstanding(a) != Some(kubeboot_key_op_kind::Generate) {
            return kubeboot_result::InvalidState;
        }
        a.agent.on_key_generated(now, Ok((reference, point)));
        kubeboot_result::Ok
    }}
}

/// The answer to a SIGN: the signature `r ‖ s` (`rs_len` = [`crate::key::KUBEBOOT_SIGNATURE_LEN`]).
/// `INVALID_STATE` when no SIGN is outstanding, `INVALID_PARAMETER` for another length. A
/// signature that does not verify with the key's public point fails the attempt (`KEY_DEVICE`).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_key_signature(
    agent: *mut kubeboot_agent,
    now: i64,
    rs: *const u8,
    rs_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let rs = match exact::<64>(try_slice!(rs, rs_len)) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if outstanding(a) != Some(kubeboot_key_op_kind::Sign) {
            return kubeboot_result::InvalidState;
        }
        a.agent.on_signature(now, Ok(rs));
        kubeboot_result::Ok
    }}
}

/// Answer the outstanding SIGN through a C sign callback (the signer of
/// `kubeboot_csr_client_with_signer`): `signer->sign` signs the action's `data`; its answer must
/// verify with `signer->public_point`. A callback that fails or signs with another key fails the
/// attempt (`KEY_DEVICE`, the agent decides). `INVALID_STATE` when no SIGN is outstanding,
/// `NULL_PARAMETER` for a signer without a function, `MALFORMED_KEY` for a public point that is
/// not one.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_sign_with(
    agent: *mut kubeboot_agent,
    now: i64,
    signer: *const kubeboot_signer,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let signer = match callback_signer(try_ref!(signer)) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let signed = match a.agent.outstanding() {
            Some(Action::Key(KeyOp::Sign { message, .. })) => signer.sign_p256_sha256(message),
            _ => return kubeboot_result::InvalidState,
        };
        match signed {
            Ok(rs) => a.agent.on_signature(now, Ok(&rs)),
            Err(_) => a.agent.on_signature(
                now,
                Err("the sign callback failed or its signature does not verify with its public point"),
            ),
        }
        kubeboot_result::Ok
    }}
}

/// The answer to a DESTROY: the key is gone. `INVALID_STATE` when no DESTROY is outstanding.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_key_destroyed(
    agent: *mut kubeboot_agent,
    now: i64,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        if outstanding(a) != Some(kubeboot_key_op_kind::Destroy) {
            return kubeboot_result::InvalidState;
        }
        a.agent.on_key_destroyed(now, Ok(()));
        kubeboot_result::Ok
    }}
}

/// The answer to a CERTIFY: the `TPMS_ATTEST` and the `TPMT_SIGNATURE` the TPM returned, as it
/// marshals them. `INVALID_STATE` when no CERTIFY is outstanding. An answer that is not a
/// certify of that key over that qualifying data fails the attempt (`KEY_DEVICE`).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_key_certified(
    agent: *mut kubeboot_agent,
    now: i64,
    attest: *const u8,
    attest_len: usize,
    signature: *const u8,
    signature_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let attest = try_slice!(attest, attest_len);
        let signature = try_slice!(signature, signature_len);
        if outstanding(a) != Some(kubeboot_key_op_kind::Certify) {
            return kubeboot_result::InvalidState;
        }
        a.agent.on_certified(now, Ok((attest, signature)));
        kubeboot_result::Ok
    }}
}

/// The outstanding KEY operation failed: `why` (UTF-8, one line naming the device and what
/// failed, e.g. `pkcs11 token=node: C_Login: CKR_PIN_INCORRECT`; never a secret; may be NULL
/// with 0; cut at 256 bytes) goes into the agent's event or failure. `INVALID_STATE` when no KEY
/// operation is outstanding.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_agent_on_key_error(
    agent: *mut kubeboot_agent,
    now: i64,
    why: *const c_char,
    why_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let a = try_mut!(agent);
        let text = why_text(try_slice!(why.cast::<u8>(), why_len), "the device failed");
        let why = if text.is_empty() { "the device failed" } else { text.as_str() };
        match outstanding(a) {
            Some(kubeboot_key_op_kind::Public) => a.agent.on_key_public(now, Err(why)),
            Some(kubeboot_key_op_kind::Generate) => a.agent.on_key_generated(now, Err(why)),
            Some(kubeboot_key_op_kind::Sign) => a.agent.on_signature(now, Err(why)),
            Some(kubeboot_key_op_kind::Destroy) => a.agent.on_key_destroyed(now, Err(why)),
            Some(kubeboot_key_op_kind::Certify) => a.agent.on_certified(now, Err(why)),
            _ => return kubeboot_result::InvalidState,
        }
        kubeboot_result::Ok
    }}
}

/// The reference (a `PKCS#11 PROVIDER URI` PEM block, at most [`KUBEBOOT_KEY_REF_MAX_LEN`]
/// bytes) of the private key labelled `label` with `CKA_ID` `id` that a GENERATE made in the
/// token `device` names: its URI is the device's token attributes, `object=<label>`,
/// `id=<id>`, `type=private` and the device's query (`module-path`, `pin-source`), so the same
/// URI opens it (OpenSSL's pkcs11-provider reads the block too). `INVALID_KEY_REFERENCE` when
/// `device` is not a token's URI, `INSUFFICIENT_SIZE` (with the size needed) for a short `buf`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_pkcs11_key_reference(
    device: *const c_char,
    device_len: usize,
    label: *const c_char,
    label_len: usize,
    id: *const u8,
    id_len: usize,
    buf: *mut u8,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let device = try_str!(device, device_len);
        let label = try_str!(label, label_len);
        let id = try_slice!(id, id_len);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let uri = match try_kb!(keyref::Device::parse(device)) {
            keyref::Device::Pkcs11(u) => u,
            _ => return kubeboot_result::InvalidKeyReference,
        };
        let mut text = [0u8; keyref::MAX_PKCS11_URI];
        let n = match keyref::write_key_uri(&uri, label, id, &mut text) {
            Ok(n) => n,
            Err(e) => return too_large(e, kubeboot_result::InvalidKeyReference),
        };
        let Some(Ok(text)) = text.get(..n).map(core::str::from_utf8) else {
            return kubeboot_result::InvalidKeyReference;
        };
        write_with(buf, out_len, |b| keyref::write_pkcs11_uri_pem(text, b))
    }}
}

/// The `pkcs11:` URI inside a `PKCS#11 PROVIDER URI` reference (the first such block of
/// `pem`), checked as the agent checks it. `MALFORMED_KEY` when there is no such block or it is
/// not the container, `INVALID_KEY_REFERENCE` for a URI kubeboot does not use,
/// `INSUFFICIENT_SIZE` (with the size needed) for a short `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_reference_uri(
    pem: *const u8,
    pem_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let pem = try_slice!(pem, pem_len);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let mut scratch = [0u8; keyref::MAX_KEY_REF];
        let uri = match keyref::pkcs11_uri_of(pem, &mut scratch) {
            Ok(u) => u,
            Err(e) => return too_large(e, kubeboot_result::MalformedKey),
        };
        copy_out(buf, out_len, uri.as_bytes())
    }}
}

/// One attribute of an RFC 7512 `pkcs11:` URI, percent-decoded into `buf`: `name` is one of
/// `token`, `manufacturer`, `model`, `serial`, `object`, `id` (bytes), `type`, `slot-id`,
/// `module-path`, `module-name`, `pin-source`. `*found` says whether the URI has it (`*out_len`
/// is then its length, else 0). `INVALID_KEY_REFERENCE` for a URI kubeboot refuses (an unknown
/// or repeated attribute, `pin-value`, ...), `INVALID_PARAMETER` for another `name`,
/// `INSUFFICIENT_SIZE` (with the size needed) for a short `buf`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_pkcs11_uri_attribute(
    uri: *const c_char,
    uri_len: usize,
    name: *const c_char,
    name_len: usize,
    buf: *mut u8,
    len: usize,
    out_len: *mut usize,
    found: *mut bool,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let uri = try_str!(uri, uri_len);
        let name = try_str!(name, name_len);
        let out_len = try_mut!(out_len);
        let found = try_mut!(found);
        let buf = try_out_buf!(buf, len);
        let u = try_kb!(Pkcs11Uri::parse(uri));
        let value = match name {
            "token" => u.token,
            "manufacturer" => u.manufacturer,
            "model" => u.model,
            "serial" => u.serial,
            "object" => u.object,
            "id" => u.id,
            "type" => u.object_type,
            "slot-id" => u.slot_id,
            "module-path" => u.module_path,
            "module-name" => u.module_name,
            "pin-source" => u.pin_source,
            _ => return kubeboot_result::InvalidParameter,
        };
        let Some(value) = value else {
            *out_len = 0;
            *found = false;
            return kubeboot_result::Ok;
        };
        let mut scratch = [0u8; keyref::MAX_PKCS11_URI];
        let decoded = match keyref::decode_value(value, &mut scratch) {
            Ok(d) => d,
            Err(e) => return too_large(e, kubeboot_result::InvalidKeyReference),
        };
        let r = copy_out(buf, out_len, decoded);
        if r == kubeboot_result::Ok {
            *found = true;
        }
        r
    }}
}
