//! TLS 1.3 to the apiserver with embedded-tls (TLS_AES_128_GCM_SHA256, P-256 key share, no
//! heap), verified by kubeboot: the server's chain must lead to the CA the agent trusts, be valid
//! now, be for serverAuth and name the host dialed ([`kubeboot::verify::verify_server_der`]),
//! and the server must sign the handshake with that certificate's key. With the node's
//! credentials the client presents its certificate and signs the handshake with its key
//! ([`ClientKey`]: in the `p256-cortex-m4` assembly on the Cortex-M4, RustCrypto's portable
//! P-256 elsewhere).

use digest010::Digest;
use embedded_tls::SignatureScheme;
use embedded_tls::blocking::{
    Aes128GcmSha256, Certificate, CertificateEntryRef, CertificateRef, CertificateVerifyRef,
    CryptoProvider, TlsCipherSuite, TlsError, TlsVerifier,
};
use kubeboot::backend::Software;
use kubeboot::error::VerifyError;
use kubeboot::verify::{self, ServerKey, ServerName, TrustedCas};
use rand_chacha::ChaCha20Rng;

/// The node's key as the handshake signs with it: the `p256-cortex-m4` assembly's on the
/// Cortex-M4 (thumbv7em), kubeboot's portable `NodeKey` on other instruction sets (the same
/// `from_pem` rules and deterministic `r || s` signatures).
#[cfg(target_arch = "arm")]
pub type ClientKey = kubeboot::backend::cortex_m4::M4Key;
/// See the Cortex-M4 definition.
#[cfg(not(target_arch = "arm"))]
pub type ClientKey = kubeboot::key::NodeKey;

/// The one suite offered.
pub type Suite = Aes128GcmSha256;
type Transcript = <Suite as TlsCipherSuite>::Hash;

/// The most certificates taken from the server's Certificate message (leaf + intermediates).
const MAX_CHAIN: usize = 1 + verify::MAX_INTERMEDIATES;
/// The most CAs in the trusted bundle.
pub const MAX_CAS: usize = 2;
/// TLS 1.3's server CertificateVerify context (RFC 8446 §4.4.3).
const SERVER_CONTEXT: &[u8] = b"TLS 1.3, server CertificateVerify\0";

/// The server check: what kubeboot verifies, and why it refused.
pub struct Verifier<'a> {
    cas: &'a TrustedCas<'a, MAX_CAS>,
    name: ServerName<'a>,
    now: i64,
    key: Option<ServerKey>,
    transcript: Option<Transcript>,
    /// Why the server was refused (the typed reason), if it was.
    pub refused: Option<VerifyError>,
}

impl<'a> Verifier<'a> {
    /// Check servers for `name` against `cas` at `now`.
    pub fn new(cas: &'a TrustedCas<'a, MAX_CAS>, name: ServerName<'a>, now: i64) -> Self {
        Verifier { cas, name, now, key: None, transcript: None, refused: None }
    }

    fn refuse(&mut self, e: VerifyError) -> TlsError {
        self.refused = Some(e);
        TlsError::InvalidCertificate
    }
}

impl TlsVerifier<Suite> for Verifier<'_> {
    fn set_hostname_verification(&mut self, _hostname: &str) -> Result<(), TlsError> {
        // The name is the one the connection dialed, given at construction (also for IP
        // addresses, which have no SNI).
        Ok(())
    }

    fn verify_certificate(
        &mut self,
        transcript: &Transcript,
        cert: CertificateRef,
    ) -> Result<(), TlsError> {
        let mut chain = heapless::Vec::<&[u8], MAX_CHAIN>::new();
        for entry in &cert.entries {
            let CertificateEntryRef::X509(der) = entry else {
                return Err(
                    self.refuse(VerifyError::new(kubeboot::error::Reason::UnsupportedAlgorithm))
                );
            };
            if chain.push(der).is_err() {
                return Err(self.refuse(VerifyError::new(kubeboot::error::Reason::Malformed)));
            }
        }
        match verify::verify_server_der(&Software, &chain, self.cas, &self.name, self.now) {
            Ok(key) => {
                self.key = Some(key);
                self.transcript = Some(transcript.clone());
                Ok(())
            }
            Err(e) => Err(self.refuse(e)),
        }
    }

    fn verify_signature(&mut self, verify: CertificateVerifyRef) -> Result<(), TlsError> {
        let (Some(key), Some(transcript)) = (self.key.take(), self.transcript.take()) else {
            return Err(TlsError::InvalidHandshake);
        };
        let mut message = heapless::Vec::<u8, 130>::new();
        let hash = transcript.finalize();
        let ok = message.resize(64, 0x20).is_ok()
            && message.extend_from_slice(SERVER_CONTEXT).is_ok()
            && message.extend_from_slice(&hash).is_ok();
        if !ok {
            return Err(TlsError::EncodeError);
        }
        let scheme = verify.signature_scheme.as_u16();
        match key.verify_signature(&Software, scheme, &message, verify.signature) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.refused = Some(e);
                Err(TlsError::InvalidSignature)
            }
        }
    }
}

/// A DER ECDSA signature (what embedded-tls puts in the CertificateVerify).
pub struct DerSignature(heapless::Vec<u8, 72>);

impl AsRef<[u8]> for DerSignature {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The client key, signing the handshake.
pub struct Signer<'k>(&'k ClientKey);

impl signature2::SignerMut<DerSignature> for Signer<'_> {
    fn try_sign(&mut self, msg: &[u8]) -> Result<DerSignature, signature2::Error> {
        let rs = self.0.sign(msg);
        let der = kubeboot::key::der_signature(&rs).map_err(|_| signature2::Error::new())?;
        heapless::Vec::from_slice(der.as_bytes())
            .map(DerSignature)
            .map_err(|_| signature2::Error::new())
    }
}

/// What one handshake uses: the randomness, the server check and, with the node's credentials,
/// the client certificate and its key.
pub struct Provider<'a> {
    /// The device's CSPRNG.
    pub rng: &'a mut ChaCha20Rng,
    /// The server check.
    pub verifier: Verifier<'a>,
    /// The client certificate (DER) and its key, for mutual TLS.
    pub client: Option<(&'a [u8], &'a ClientKey)>,
}

impl CryptoProvider for Provider<'_> {
    type CipherSuite = Suite;
    type Signature = DerSignature;

    fn rng(&mut self) -> impl embedded_tls::CryptoRngCore {
        &mut *self.rng
    }

    fn verifier(&mut self) -> Result<&mut impl TlsVerifier<Suite>, TlsError> {
        Ok(&mut self.verifier)
    }

    fn signer(
        &mut self,
    ) -> Result<(impl signature2::SignerMut<DerSignature>, SignatureScheme), TlsError> {
        match self.client {
            Some((_, key)) => Ok((Signer(key), SignatureScheme::EcdsaSecp256r1Sha256)),
            None => Err(TlsError::InvalidPrivateKey),
        }
    }

    fn client_cert(&mut self) -> Option<Certificate<impl AsRef<[u8]>>> {
        self.client.map(|(der, _)| Certificate::X509(der))
    }
}
