//! Attested joins ([`kubeboot::attest`], docs/attestation.md): with `--attestation-ca` and
//! `--enrolment`, the approver also decides bootstrap client CSRs — signer
//! `kubernetes.io/kube-apiserver-client-kubelet`, requested by `system:bootstrap:<token id>` —
//! and approves one only if the core's judgement accepts its attestation: the attestation key's
//! chain reaches a device CA, the TPM's certify of the CSR's key verifies, binds this CSR, says
//! the key never left the TPM, and the device is enrolled for exactly the CSR's node name.
//! Anything else is denied with the typed reason (`attestation-replayed`, ...). A node's own
//! rotation (requested by `system:node:<name>`) is not ours: kube-controller-manager's
//! `selfnodeclient` approval stays as it is. The allowlist is read at every decision, so the
//! operator's edits count at once; one that no longer parses leaves CSRs pending.

use std::path::PathBuf;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kubeboot::attest::{self, AttestError, Enrolment, Evidence};
use kubeboot::policy::check_kubelet_client;
use kubeboot::verify::TrustedCas;

use crate::args::BadFlag;

/// The bootstrap requester's prefix.
const BOOTSTRAP_USER: &str = "system:bootstrap:";
/// The condition reason of an approval.
pub const ATTESTED_REASON: &str = "KubebootAttested";

/// `--attestation-ca` and `--enrolment`, checked.
#[derive(Clone, Debug)]
pub struct Attestation {
    /// The device CAs (PEM).
    pub ca_pem: Vec<u8>,
    /// The allowlist's file.
    pub enrolment: PathBuf,
}

impl Attestation {
    /// Read and check both files (a CA bundle that does not parse, or an allowlist with a bad
    /// line, is the flag's one line).
    pub fn read(ca: &std::path::Path, enrolment: &std::path::Path) -> Result<Self, BadFlag> {
        let flag = |f: &str, p: &std::path::Path, why: String| {
            BadFlag::line(format!("{f} {:?}: {why}", p.display().to_string()))
        };
        let ca_pem = std::fs::read(ca).map_err(|e| flag("--attestation-ca", ca, e.to_string()))?;
        let mut scratch = vec![0u8; ca_pem.len()];
        TrustedCas::<'_, { kubeboot::verify::MAX_CAS }>::from_pem(&ca_pem, &mut scratch)
            .map_err(|e| flag("--attestation-ca", ca, e.to_string()))?;
        let att = Attestation { ca_pem, enrolment: enrolment.to_owned() };
        let text = att.enrolment_text().map_err(|why| flag("--enrolment", enrolment, why))?;
        Enrolment::parse(&text).map_err(|e| flag("--enrolment", enrolment, e.to_string()))?;
        Ok(att)
    }

    /// The allowlist's text (parsed by the caller, which borrows it).
    fn enrolment_text(&self) -> Result<String, String> {
        std::fs::read_to_string(&self.enrolment).map_err(|e| e.to_string())
    }
}

/// What became of a CSR.
pub enum Attested {
    /// Not a bootstrap client CSR: not ours.
    NotOurs,
    /// Approve, with the message (serial number, node, key Name).
    Approve(String),
    /// Deny with the reason.
    Deny(AttestError, String),
    /// The allowlist cannot be read now: leave it pending, look again later.
    Unreadable(String),
}

/// Judge `csr` at `now` (unix seconds).
pub fn judge(csr: &CertificateSigningRequest, att: &Attestation, now: i64) -> Attested {
    let spec = &csr.spec;
    let user = spec.username.as_deref().unwrap_or("");
    if spec.signer_name != kubeboot::policy::SIGNER_CLIENT || !user.starts_with(BOOTSTRAP_USER) {
        return Attested::NotOurs;
    }
    let text = match att.enrolment_text() {
        Ok(t) => t,
        Err(why) => return Attested::Unreadable(format!("{}: {why}", att.enrolment.display())),
    };
    let list = match Enrolment::parse(&text) {
        Ok(list) => list,
        Err(e) => return Attested::Unreadable(format!("{}: {e}", att.enrolment.display())),
    };
    let mut ca_scratch = vec![0u8; att.ca_pem.len()];
    let Ok(cas) =
        TrustedCas::<'_, { kubeboot::verify::MAX_CAS }>::from_pem(&att.ca_pem, &mut ca_scratch)
    else {
        return Attested::Unreadable("--attestation-ca".into());
    };
    let request = &spec.request.0;
    let mut scratch = vec![0u8; request.len()];
    let deny = |e: AttestError| Attested::Deny(e, format!("{}: {e}", e.name()));
    let (req, evidence) = match Evidence::split(request, &mut scratch) {
        Ok(v) => v,
        Err(e) => return deny(e),
    };
    let usages: Vec<&str> = spec.usages.iter().flatten().map(String::as_str).collect();
    if let Err(e) = check_kubelet_client(&req, &usages) {
        return Attested::Deny(
            AttestError::Blocks("not a kubelet client CSR"),
            format!("attestation-blocks: not a kubelet client CSR ({e})"),
        );
    }
    let Some(evidence) = evidence else { return deny(AttestError::Absent) };
    let backend = kubeboot::backend::ring::Ring;
    match attest::judge(&backend, &req, &evidence, cas.anchors(), &list, now) {
        Ok(ok) => {
            let name: String = ok.key_name.iter().map(|b| format!("{b:02x}")).collect();
            Attested::Approve(format!(
                "kubeboot-approver: attested by TPM device serial={} for node {} (key name {name}, requested by {user})",
                ok.serial, ok.node
            ))
        }
        Err(e) => deny(e),
    }
}
