//! TLS client authentication with any [`kubeboot::key::P256Signer`]: the handshake's `CertificateVerify` is
//! signed by the signer (a PKCS#11 token, a TPM, or a software key alike), so the certificate
//! the agent stored is presented with a key that never leaves its device.
//!
//! rustls hands [`rustls::sign::Signer::sign`] the message unhashed; the signer hashes it with
//! SHA-256 and returns `r || s`, which goes on the wire as a DER `ECDSA-Sig-Value`. Only
//! `ecdsa_secp256r1_sha256` is offered: that is what a P-256 node key can do.

use std::sync::Arc;

use kubeboot::key::der_signature;
use rustls::client::ResolvesClientCert;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::sign::{CertifiedKey, Signer, SigningKey};
use rustls::{ClientConfig, RootCertStore, SignatureAlgorithm, SignatureScheme};

use crate::SharedSigner;

/// A rustls signing key over a [`P256Signer`]; `name` says which device in errors.
#[derive(Clone)]
pub struct DeviceSigningKey {
    signer: SharedSigner,
    name: Arc<str>,
}

impl DeviceSigningKey {
    /// Wrap `signer`, named `name` in errors (`tpm swtpm:path=...`, `pkcs11 token=...`).
    pub fn new(signer: SharedSigner, name: &str) -> Self {
        DeviceSigningKey { signer, name: name.into() }
    }
}

impl std::fmt::Debug for DeviceSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSigningKey").field("name", &self.name).finish_non_exhaustive()
    }
}

impl SigningKey for DeviceSigningKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        offered
            .contains(&SignatureScheme::ECDSA_NISTP256_SHA256)
            .then(|| Box::new(self.clone()) as Box<dyn Signer>)
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        SignatureAlgorithm::ECDSA
    }
}

impl Signer for DeviceSigningKey {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        let rs = self.signer.sign_p256_sha256(message).map_err(|e| {
            rustls::Error::General(format!("{}: the handshake signature failed: {e}", self.name))
        })?;
        let der = der_signature(&rs)
            .map_err(|e| rustls::Error::General(format!("{}: {e}", self.name)))?;
        Ok(der.as_bytes().to_vec())
    }

    fn scheme(&self) -> SignatureScheme {
        SignatureScheme::ECDSA_NISTP256_SHA256
    }
}

/// The `CERTIFICATE` blocks of a PEM chain.
pub fn certificates(chain_pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the certificate chain: {e}"))
}

/// Always presents the one certificate and key.
#[derive(Debug)]
struct Always(Arc<CertifiedKey>);

impl ResolvesClientCert for Always {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// A rustls client configuration trusting exactly the CAs of `ca_pem` and presenting
/// `chain_pem` with `key` (ring's provider for everything else).
pub fn client_config(
    ca_pem: &[u8],
    chain_pem: &[u8],
    key: DeviceSigningKey,
) -> Result<ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certificates(ca_pem)?);
    if added == 0 {
        return Err("the CA bundle holds no certificate".into());
    }
    let chain = certificates(chain_pem)?;
    if chain.is_empty() {
        return Err("no client certificate".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certified = Arc::new(CertifiedKey::new(chain, Arc::new(key)));
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_cert_resolver(Arc::new(Always(certified))))
}
