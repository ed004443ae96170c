//! `kubeboot verify`, `kubeboot ca-hash` and `kubeboot csr check`.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use kubeboot::backend::ring::Ring;
use kubeboot::error::Detail;
use kubeboot::key::NodeKey;
use kubeboot::policy;
use kubeboot::request::CertificateRequest;
use kubeboot::verify::{Expected, Profile, scratch_len, verify_issued_with};
use kubeboot::{Error, rfc3339, rotation};

use crate::{CmdResult, Rejected, files, rfc, unix_now};

/// Output format.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Output {
    /// One line for people.
    Text,
    /// A JSON object.
    Json,
}

/// Arguments of `kubeboot verify`.
#[derive(Args)]
pub struct VerifyArgs {
    /// The issued certificate (PEM; leaf first, intermediates may follow).
    #[arg(long)]
    cert: PathBuf,
    /// The CA bundle (PEM; one or more CAs).
    #[arg(long)]
    ca: PathBuf,
    /// Our private key (the certificate must carry its public key).
    #[arg(long, required_unless_present = "csr", conflicts_with = "csr")]
    key: Option<PathBuf>,
    /// The CSR we sent (its public key must be the certificate's).
    #[arg(long)]
    csr: Option<PathBuf>,
    /// The node name (CN=system:node:<name>).
    #[arg(long)]
    node_name: String,
    /// Validate as a kubelet serving certificate.
    #[arg(long)]
    serving: bool,
    /// Expected DNS SAN (serving; repeatable).
    #[arg(long, requires = "serving")]
    dns: Vec<String>,
    /// Expected IP SAN (serving; repeatable).
    #[arg(long, requires = "serving")]
    ip: Vec<String>,
    /// Check at this time (RFC 3339) instead of now.
    #[arg(long)]
    now: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn detail_text(e: &Error) -> String {
    match e {
        Error::Verify(v) => match v.detail {
            Detail::None => v.reason.name().to_owned(),
            Detail::Field(f) => format!("{}: {f}", v.reason.name()),
            Detail::Validity { not_before, not_after, now } => format!(
                "{}: valid from {} to {}, checked at {}",
                v.reason.name(),
                rfc(not_before),
                rfc(not_after),
                rfc(now)
            ),
            _ => v.to_string(),
        },
        other => other.to_string(),
    }
}

/// Run `kubeboot verify`.
pub fn run(a: VerifyArgs) -> CmdResult {
    let cert = files::read(&a.cert)?;
    let ca = files::read(&a.ca)?;
    let spki: Vec<u8> = match (&a.key, &a.csr) {
        (Some(k), _) => NodeKey::from_pem(&files::read(k)?)
            .map_err(|e| Rejected::from(format!("{}: {e}", k.display())))?
            .public_key_spki()
            .to_vec(),
        (None, Some(c)) => {
            let pem = files::read(c)?;
            let mut scratch = vec![0u8; pem.len()];
            let req = CertificateRequest::from_pem(&pem, &mut scratch)
                .map_err(|e| Rejected::from(format!("{}: {e}", c.display())))?;
            req.spki_der().to_vec()
        }
        (None, None) => return Err(Rejected::from("--key or --csr is required")),
    };
    let ips =
        a.ip.iter()
            .map(|s| kubeboot::csr::parse_ip(s).map_err(|e| Rejected::from(format!("{s}: {e}"))))
            .collect::<Result<Vec<IpAddr>, _>>()?;
    let dns: Vec<&str> = a.dns.iter().map(String::as_str).collect();
    let profile =
        if a.serving { Profile::Serving { dns: &dns, ips: &ips } } else { Profile::Client };
    let now = match &a.now {
        Some(t) => rfc3339::parse(t).map_err(|e| Rejected::from(format!("--now {t:?}: {e}")))?,
        None => unix_now(),
    };
    let expected = Expected { node_name: &a.node_name, public_key: &spki, profile };
    let mut scratch = vec![0u8; scratch_len(&cert, &ca)];
    let result = verify_issued_with(&Ring, &cert, &ca, &expected, now, &mut scratch);
    let mut out = std::io::stdout().lock();
    match result {
        Ok(v) => {
            let mut jitter = [0u8; 4];
            files::os_entropy(&mut jitter)?;
            let deadline =
                rotation::rotation_deadline(v.not_before, v.not_after, u32::from_le_bytes(jitter));
            if a.output == Output::Json {
                writeln!(
                    out,
                    "{{\"valid\":true,\"not_before\":{},\"not_after\":{},\"rotation_deadline\":{},\"ca_subject\":{}}}",
                    json_str(&rfc(v.not_before)),
                    json_str(&rfc(v.not_after)),
                    json_str(&rfc(deadline)),
                    json_str(&v.ca_subject),
                )?;
            } else {
                writeln!(
                    out,
                    "valid: issued by {}, valid {} to {}, rotate at {}",
                    v.ca_subject,
                    rfc(v.not_before),
                    rfc(v.not_after),
                    rfc(deadline)
                )?;
            }
            Ok(())
        }
        Err(e) => {
            let reason = match e {
                Error::Verify(v) => v.reason.name(),
                _ => "malformed",
            };
            let detail = detail_text(&e);
            if a.output == Output::Json {
                writeln!(
                    out,
                    "{{\"valid\":false,\"reason\":{},\"detail\":{}}}",
                    json_str(reason),
                    json_str(&detail)
                )?;
                out.flush()?;
            }
            Err(Rejected::from(format!("certificate rejected: {detail}")))
        }
    }
}

/// Arguments of `kubeboot ca-hash`.
#[derive(Args)]
pub struct CaHashArgs {
    /// The CA bundle (PEM).
    #[arg(long)]
    ca: PathBuf,
}

/// Run `kubeboot ca-hash`: one `sha256:<hex>` line per certificate.
pub fn ca_hash(a: CaHashArgs) -> CmdResult {
    let pem = files::read(&a.ca)?;
    let mut scratch = vec![0u8; pem.len()];
    let mut lines = Vec::new();
    for pin in kubeboot::pin::pins_of_pem(&pem, &mut scratch) {
        let pin = pin.map_err(|e| Rejected::from(format!("{}: {e}", a.ca.display())))?;
        lines.push(pin.to_string());
    }
    if lines.is_empty() {
        return Err(Rejected::from(format!("{}: no CERTIFICATE block", a.ca.display())));
    }
    let mut out = std::io::stdout().lock();
    for l in lines {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// Arguments of `kubeboot csr check`.
#[derive(Args)]
pub struct CsrCheckArgs {
    /// The CSR (PEM).
    file: PathBuf,
    /// The signer the CSR is meant for.
    #[arg(long, default_value = policy::SIGNER_CLIENT)]
    signer: String,
    /// The usages requested, comma-separated (default: the kubelet's for the signer).
    #[arg(long)]
    usages: Option<String>,
    /// spec.expirationSeconds to check.
    #[arg(long)]
    expiration_seconds: Option<u32>,
}

/// Run `kubeboot csr check`.
pub fn csr_check(a: CsrCheckArgs) -> CmdResult {
    let pem = files::read(&a.file)?;
    let default: &[&str] = if a.signer == policy::SIGNER_SERVING {
        &kubeboot::api::USAGES_SERVING_EC
    } else {
        &kubeboot::api::USAGES_CLIENT_EC
    };
    let usages: Vec<&str> = match &a.usages {
        Some(u) => u.split(',').collect(),
        None => default.to_vec(),
    };
    let mut scratch = vec![0u8; pem.len()];
    policy::check_kubelet_csr_with(
        &Ring,
        &pem,
        &a.signer,
        &usages,
        a.expiration_seconds,
        &mut scratch,
    )
    .map_err(|e| Rejected::from(format!("CSR rejected: {e}")))?;
    writeln!(std::io::stdout().lock(), "ok: acceptable for {}", a.signer)?;
    Ok(())
}
