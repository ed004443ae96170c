//! Reading a CertificateSigningRequest object (JSON) far enough for the engine's decisions.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EventKind {
    Object,
    Deleted,
    Error,
    Other,
}

pub(super) enum ObjectOutcome {
    Pending,
    Issued,
    Fail(Error),
}

#[derive(Clone, Copy)]
pub(super) enum Condition<'a> {
    None,
    Approved,
    Denied { reason: Option<json::Str<'a>>, message: Option<json::Str<'a>> },
    Failed { reason: Option<json::Str<'a>>, message: Option<json::Str<'a>> },
}

pub(super) struct CsrView<'a> {
    pub(super) name: Option<json::Str<'a>>,
    pub(super) uid: Option<json::Str<'a>>,
    pub(super) request: Option<json::Str<'a>>,
    pub(super) signer: Option<json::Str<'a>>,
    pub(super) condition: Condition<'a>,
    pub(super) certificate: Option<json::Str<'a>>,
}

pub(super) fn get_str<'a>(o: Object<'a>, key: &str) -> Result<Option<json::Str<'a>>> {
    Ok(o.get(key).map_err(|_| Error::MalformedResponse)?.and_then(|v| v.as_str()))
}

pub(super) fn get_obj<'a>(o: Object<'a>, key: &str) -> Result<Option<Object<'a>>> {
    Ok(o.get(key).map_err(|_| Error::MalformedResponse)?.and_then(|v| v.as_object()))
}

/// Pull the fields we need out of a CertificateSigningRequest.
pub(super) fn read_csr_object(o: Object<'_>) -> Result<CsrView<'_>> {
    if let Some(kind) = get_str(o, "kind")? {
        if !kind.eq_str("CertificateSigningRequest") {
            return Err(Error::MalformedResponse);
        }
    }
    let meta = get_obj(o, "metadata")?.ok_or(Error::MalformedResponse)?;
    let spec = get_obj(o, "spec")?;
    let status = get_obj(o, "status")?;
    let mut condition = Condition::None;
    let mut certificate = None;
    if let Some(st) = status {
        if let Some(conds) =
            st.get("conditions").map_err(|_| Error::MalformedResponse)?.and_then(|v| v.as_array())
        {
            // Denied or Failed wins over Approved, wherever it appears.
            for c in conds.items() {
                let c = c.map_err(|_| Error::MalformedResponse)?;
                let Some(c) = c.as_object() else { continue };
                let Some(t) = get_str(c, "type")? else { continue };
                let reason = get_str(c, "reason")?;
                let message = get_str(c, "message")?;
                if t.eq_str("Denied") {
                    condition = Condition::Denied { reason, message };
                } else if t.eq_str("Failed") {
                    if !matches!(condition, Condition::Denied { .. }) {
                        condition = Condition::Failed { reason, message };
                    }
                } else if t.eq_str("Approved") && matches!(condition, Condition::None) {
                    condition = Condition::Approved;
                }
            }
        }
        certificate = get_str(st, "certificate")?.filter(|s| !s.is_empty());
    }
    Ok(CsrView {
        name: get_str(meta, "name")?,
        uid: get_str(meta, "uid")?,
        request: match spec {
            Some(s) => get_str(s, "request")?,
            None => None,
        },
        signer: match spec {
            Some(s) => get_str(s, "signerName")?,
            None => None,
        },
        condition,
        certificate,
    })
}

pub(super) fn decode_lossy<'b>(s: json::Str<'_>, buf: &'b mut [u8]) -> &'b str {
    let mut n = 0;
    for b in s.bytes() {
        match buf.get_mut(n) {
            Some(slot) => *slot = b,
            None => break,
        }
        n += 1;
    }
    // Cut at a character boundary.
    let mut bytes = buf.get(..n).unwrap_or(&[]);
    loop {
        match core::str::from_utf8(bytes) {
            Ok(s) => return s,
            Err(e) => bytes = bytes.get(..e.valid_up_to()).unwrap_or(&[]),
        }
    }
}

/// Decode a JSON string holding standard base64 (a Go `[]byte`) into `out`.
pub(super) fn decode_base64_str(s: json::Str<'_>, out: &mut [u8]) -> Result<usize> {
    use base64ct::{Base64, Encoding};
    let raw = s.as_borrowed().ok_or(Error::MalformedResponse)?;
    if raw.len() / 4 * 3 > out.len() + 3 {
        return Err(Error::TooLarge);
    }
    Base64::decode(raw.as_bytes(), out).map(|d| d.len()).map_err(|e| match e {
        base64ct::Error::InvalidLength => Error::TooLarge,
        _ => Error::MalformedResponse,
    })
}
