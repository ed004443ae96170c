//! rustls, configured the way the agent says (every decision is the agent's; this only builds
//! the configuration): trust exactly the CA it names, verify for `tls-server-name` when set, skip
//! verification only when it says so, and present the client certificate with its key — a
//! software key through ring, a device's through kubeboot-hwkey's signing key (the device signs
//! the handshake; the key never leaves it).

use std::sync::Arc;

use kubeboot::keyref::Holder;
use kubeboot_hwkey::Devices;
use kubeboot_hwkey::tls::DeviceSigningKey;
use rustls::client::ResolvesClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// ring, the provider of every configuration here (one for the process: a program running many
/// agents shares it).
pub(crate) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: std::sync::OnceLock<Arc<CryptoProvider>> = std::sync::OnceLock::new();
    PROVIDER.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider())).clone()
}

/// The first key block of a PEM document (a pair file holds the chain, then the key): a
/// private key, or a device's key reference. Secret when a private key.
pub(crate) fn key_block(pem: &[u8]) -> Option<&[u8]> {
    kubeboot::pem::blocks(pem)
        .map_while(Result::ok)
        .find(|b| Holder::of_label(b.label).is_some())
        .map(|b| b.text)
}

/// The certificate chain and key, ready for a handshake: a software key (ECDSA, RSA, Ed25519
/// as ring loads them) or a device's reference, opened through `devices`.
pub(crate) fn certified_key(
    chain_pem: &[u8],
    key_pem: &[u8],
    devices: &Devices,
) -> Result<Arc<CertifiedKey>, String> {
    let chain = kubeboot_hwkey::tls::certificates(chain_pem)?;
    if chain.is_empty() {
        return Err("no client certificate".into());
    }
    let key_pem = key_block(key_pem).ok_or("no private key or key reference")?;
    let key: Arc<dyn rustls::sign::SigningKey> = match Holder::of_pem(key_pem) {
        Ok(Holder::Software) => {
            let der =
                PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("the key: {e}"))?;
            provider().key_provider.load_private_key(der).map_err(|e| format!("the key: {e}"))?
        }
        Ok(_) => {
            let signer = devices.open(key_pem).map_err(|e| e.to_string())?;
            let name = match Holder::of_pem(key_pem) {
                Ok(Holder::Tpm) => format!("tpm {}", devices.tcti()),
                _ => kubeboot_hwkey::describe(key_pem),
            };
            Arc::new(DeviceSigningKey::new(signer, &name))
        }
        Err(e) => return Err(format!("the key: {e}")),
    };
    Ok(Arc::new(CertifiedKey::new(chain, key)))
}

/// Where to connect and whom to trust, as the agent's [`kubeboot::agent::Connection`] (or a
/// kubeconfig) says.
pub(crate) struct Trust<'a> {
    /// Trust exactly these CAs (PEM).
    pub ca_pem: Option<&'a [u8]>,
    /// Verify nothing (`insecure-skip-tls-verify`, the first discovery fetch).
    pub insecure: bool,
}

/// A client configuration that trusts as `trust` says and presents what `client` resolves.
pub(crate) fn client_config(
    trust: &Trust<'_>,
    client: Option<Arc<dyn ResolvesClientCert>>,
) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if trust.insecure {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(Unverified(provider)))
    } else {
        let pem =
            trust.ca_pem.ok_or("no CA to trust (system roots are never used for a cluster)")?;
        let mut roots = RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(kubeboot_hwkey::tls::certificates(pem)?);
        if added == 0 {
            return Err("the CA bundle holds no certificate".into());
        }
        builder.with_root_certificates(roots)
    };
    Ok(match client {
        Some(r) => builder.with_client_cert_resolver(r),
        None => builder.with_no_client_auth(),
    })
}

/// Always presents one certificate and key.
#[derive(Debug)]
pub(crate) struct Fixed(pub Arc<CertifiedKey>);

impl ResolvesClientCert for Fixed {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// `insecure-skip-tls-verify`: any server certificate, but the handshake's signatures are still
/// checked (the peer must hold the key of the certificate it sent).
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
