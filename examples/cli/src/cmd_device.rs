//! `kubeboot device provision`: a device's identity for an attested join, as a factory station
//! would give it (docs/attestation.md). The TPM's attestation key (derived from its endorsement
//! seed: the same key at every use, nothing stored in the TPM) is certified by the factory CA in
//! the shape of a TCG IAK certificate — the device's serial number in the subject's
//! serialNumber, extendedKeyUsage tcg-kp-AIKCertificate, keyUsage digitalSignature, not a CA —
//! and the TPM's EK certificate is saved beside it.
//!
//! The station trusts the TPM it is connected to (a real factory would first check the EK
//! certificate's chain to the TPM maker and activate a credential for the attestation key).

use std::path::PathBuf;

use clap::Subcommand;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber, SubjectPublicKeyInfo,
};

use crate::{CmdResult, Rejected, files};

/// Device subcommands.
#[derive(Subcommand)]
pub enum DeviceCommand {
    /// Certify this device's TPM attestation key with the factory CA: writes
    /// DIR/attestation.pem (the certificate the node's `--attestation` names) and, when the TPM
    /// holds one, DIR/ek.pem (its endorsement key certificate).
    Provision {
        /// The device's serial number (the certificate's subject serialNumber; what the
        /// operator enrols: `kubeboot approver --enrolment`). Printable ASCII, at most 64 bytes.
        #[arg(long)]
        serial: String,
        /// The factory CA's certificate (PEM).
        #[arg(long, value_name = "FILE")]
        ca_cert: PathBuf,
        /// The factory CA's private key (PKCS#8 PEM, `BEGIN PRIVATE KEY`, as `openssl genpkey`
        /// writes it; P-256 or P-384).
        #[arg(long, value_name = "FILE")]
        ca_key: PathBuf,
        /// Where to write attestation.pem and ek.pem.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// How long the certificate is valid.
        #[arg(long, default_value = "3650")]
        days: u32,
        /// The TPM's TCTI (default: TPM2TOOLS_TCTI, then device:/dev/tpmrm0).
        #[arg(long)]
        tcti: Option<String>,
        /// Replace existing files.
        #[arg(long)]
        force: bool,
    },
}

/// Run a device subcommand.
pub fn run(cmd: DeviceCommand) -> CmdResult {
    match cmd {
        DeviceCommand::Provision { serial, ca_cert, ca_key, out, days, tcti, force } => {
            provision(&serial, &ca_cert, &ca_key, &out, days, tcti, force)
        }
    }
}

fn provision(
    serial: &str,
    ca_cert: &std::path::Path,
    ca_key: &std::path::Path,
    out: &std::path::Path,
    days: u32,
    tcti: Option<String>,
    force: bool,
) -> CmdResult {
    if let Err(why) = kubeboot::attest::check_serial(serial) {
        return Err(Rejected::usage(format!("kubeboot: --serial {serial:?}: {why}")));
    }
    let text = |p: &std::path::Path| -> Result<String, Rejected> {
        String::from_utf8(files::read(p)?)
            .map_err(|_| Rejected::from(format!("{}: not PEM text", p.display())))
    };
    let key = KeyPair::from_pem(&text(ca_key)?)
        .map_err(|e| Rejected::from(format!("{}: {e}", ca_key.display())))?;
    let issuer = Issuer::from_ca_cert_pem(&text(ca_cert)?, key)
        .map_err(|e| Rejected::from(format!("{}: {e}", ca_cert.display())))?;

    let devices = kubeboot_hwkey::Devices { tcti };
    let mut tpm = kubeboot_hwkey::tpm::Tpm::connect(&devices.tcti())?;
    let point = tpm.attestation_key_point()?;
    let ek = tpm.ek_certificate()?;
    drop(tpm);

    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "TPM attestation key");
    dn.push(DnType::CustomDnType(vec![2, 5, 4, 5]), serial);
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::Other(vec![2, 23, 133, 8, 3])];
    params.use_authority_key_identifier_extension = true;
    let mut number = [0u8; 16];
    files::os_entropy(&mut number)?;
    number[0] &= 0x7f;
    params.serial_number = Some(SerialNumber::from_slice(&number));
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + time::Duration::days(i64::from(days));
    let spki = kubeboot::key::spki_from_point(&point);
    let public = SubjectPublicKeyInfo::from_der(&spki)
        .map_err(|e| Rejected::from(format!("the attestation key: {e}")))?;
    let cert = params
        .signed_by(&public, &issuer)
        .map_err(|e| Rejected::from(format!("issuing the certificate: {e}")))?;

    std::fs::create_dir_all(out).map_err(|e| Rejected::from(format!("{}: {e}", out.display())))?;
    let attestation = out.join("attestation.pem");
    files::write_public(&attestation, cert.pem().as_bytes(), force)?;
    let ek_line = match ek {
        Some((index, der)) => {
            let mut pem = vec![0u8; kubeboot::pem::encoded_len("CERTIFICATE", der.len())?];
            let n = kubeboot::pem::encode("CERTIFICATE", &der, &mut pem)?;
            let path = out.join("ek.pem");
            files::write_public(&path, &pem[..n], force)?;
            format!("{} (NV index {index:#010x})", path.display())
        }
        None => "none (the TPM holds no EK certificate)".into(),
    };
    println!("serial={serial}");
    println!("attestation={}", attestation.display());
    println!("ek={ek_line}");
    println!("enrol: {serial} <node-name>   (a line of the approver's --enrolment file)");
    Ok(())
}
