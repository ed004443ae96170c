//! Loading kubeconfig files the way clientcmd does: current-context, `*-data` over files, relative
//! paths against the kubeconfig's own directory (client-go tools/clientcmd/loader.go
//! ResolveLocalPaths).

use std::path::{Path, PathBuf};

use kubeboot::kubeconfig::{Kubeconfig, Scalar, Source};
use zeroize::Zeroizing;

use crate::{Rejected, files};

/// A resolved kubeconfig: what a client needs to talk to the apiserver.
pub struct Loaded {
    /// The current context's name.
    pub context: String,
    /// `server`.
    pub server: String,
    /// The CA PEM (from data or file), if any.
    pub ca_pem: Option<Vec<u8>>,
    /// The CA file, absolute, when the CA came from a file.
    pub ca_file: Option<PathBuf>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// Bearer token (from `token` or `tokenFile`).
    pub token: Option<Zeroizing<String>>,
    /// Client certificate PEM (from data or file).
    pub client_cert_pem: Option<Vec<u8>>,
    /// Where the client certificate came from, when a file.
    pub client_cert_file: Option<PathBuf>,
    /// The context's namespace.
    pub namespace: Option<String>,
}

fn text(s: Scalar<'_>) -> Result<String, Rejected> {
    let mut buf = vec![0u8; s.decoded_len().max(1)];
    Ok(s.decode_into(&mut buf)
        .map_err(|e| Rejected::from(format!("kubeconfig value: {e}")))?
        .to_owned())
}

fn data(s: Scalar<'_>) -> Result<Vec<u8>, Rejected> {
    let mut buf = vec![0u8; s.decoded_len() + 3];
    let n = s
        .decode_base64_into(&mut buf)
        .map_err(|e| Rejected::from(format!("kubeconfig base64 data: {e}")))?
        .len();
    buf.truncate(n);
    Ok(buf)
}

fn path_of(s: Scalar<'_>, base: &Path) -> Result<PathBuf, Rejected> {
    let p = PathBuf::from(text(s)?);
    Ok(if p.is_relative() { base.join(p) } else { p })
}

/// Load and resolve a kubeconfig file.
pub fn load(path: &Path) -> Result<Loaded, Rejected> {
    let bytes = files::read(path)?;
    let fail = |e: kubeboot::Error| {
        Rejected::from(format!("{}: unusable kubeconfig: {e}", path.display()))
    };
    let kc = Kubeconfig::parse(&bytes).map_err(fail)?;
    let r = kc.resolve().map_err(fail)?;
    let abs = std::path::absolute(path)
        .map_err(|e| Rejected::from(format!("{}: {e}", path.display())))?;
    let base = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
    let (ca_pem, ca_file) = match r.cluster.ca_source() {
        Source::Data(d) => (Some(data(d)?), None),
        Source::File(f) => {
            let p = path_of(f, &base)?;
            (Some(files::read(&p)?), Some(p))
        }
        Source::None => (None, None),
    };
    let insecure = r.cluster.insecure_skip_tls_verify;
    if insecure && ca_pem.is_some() {
        return Err(Rejected::from(format!(
            "{}: specifying a root certificates file with the insecure flag is not allowed",
            path.display()
        )));
    }
    let token = match (r.user.token, r.user.token_file) {
        (Some(t), _) if !t.is_empty() => Some(Zeroizing::new(text(t)?)),
        (_, Some(f)) if !f.is_empty() => {
            let p = path_of(f, &base)?;
            let raw = Zeroizing::new(files::read(&p)?);
            let s = std::str::from_utf8(&raw)
                .map_err(|_| Rejected::from(format!("{}: not UTF-8", p.display())))?;
            Some(Zeroizing::new(s.trim().to_owned()))
        }
        _ => None,
    };
    let (client_cert_pem, client_cert_file) = match r.user.client_cert_source() {
        Source::Data(d) => (Some(data(d)?), None),
        Source::File(f) => {
            let p = path_of(f, &base)?;
            (Some(files::read(&p)?), Some(p))
        }
        Source::None => (None, None),
    };
    let client_key_pem = match r.user.client_key_source() {
        Source::Data(d) => Some(Zeroizing::new(data(d)?)),
        Source::File(f) => Some(Zeroizing::new(files::read(&path_of(f, &base)?)?)),
        Source::None => None,
    };
    if client_cert_pem.is_some() != client_key_pem.is_some() {
        return Err(Rejected::from(format!(
            "{}: client certificate without key (or key without certificate)",
            path.display()
        )));
    }
    Ok(Loaded {
        context: text(r.context_name)?,
        server: text(r.server())?,
        ca_pem,
        ca_file,
        insecure,
        token,
        client_cert_pem,
        client_cert_file,
        namespace: r.namespace().map(text).transpose()?,
    })
}
