//! A node key held by a device (a PKCS#11 token, a TPM): when the agent asks the device for a
//! key, a public point, a signature or a destruction, and what each answer means.
//!
//! The decisions, written once for every front-end:
//!
//! * **A new key for every certificate**, as the kubelet makes one for every CSR (client-go's
//!   certificate manager generates a key per rotation): at bootstrap and at every rotation the
//!   key is made in the configured device ([`KeyOp::Generate`], named
//!   `kubelet-client-<timestamp>` like the pair file it will go into). A bootstrap key's
//!   reference goes into the key cache first, so that a restart reuses it and finds its own
//!   `node-csr-` object, as with a software key.
//! * **The CSR is signed by the device** ([`KeyOp::Sign`] over the `CertificationRequestInfo`);
//!   the engine then builds the same CSR around that signature.
//! * **The files hold a reference, never the key**: the pair file is the certificate chain and
//!   the key's reference block, so the node kubeconfig names `kubelet-client-current.pem` for
//!   both, as the kubelet's does.
//! * **The replaced key is destroyed only once the new pair is current** ([`KeyOp::Destroy`]
//!   after the swap and the kubeconfig): a crash at any point leaves a current pair whose key
//!   exists. A crash between the swap and the destruction leaves the old key behind (a leak,
//!   never a loss). A failed attempt destroys the key it made, unless its CSR may still be
//!   approved (a bootstrap's timeout: the key cache keeps it) or its pair is already current.
//! * **A device that fails is an error, not a reason to bootstrap**: the current key's device
//!   not answering ([`KeyOp::Public`]) fails the attempt with [`Error::KeyDevice`] naming the
//!   device (retried with backoff by a daemon) instead of making a new key elsewhere; a key
//!   that answers but does not match its certificate is unusable as a software key would be.
//! * A current key in a device with no device configured for the next one is
//!   [`Error::InvalidConfig`]: the next key never silently moves to software.

use super::flow::*;
use super::*;

use crate::csr::CsrBuilder;
use crate::key::{P256Signer, spki_from_point};
use crate::keyref::{MAX_DEVICE, MAX_KEY_REF};

/// The device holding the node key and this attempt's key in it (the agent's `dk`).
pub(super) struct DeviceKeys {
    /// Where new client keys are made (empty: in software).
    pub(super) device: heapless::String<MAX_DEVICE>,
    /// The public point of the current client key when a device holds it (from the device).
    pub(super) client_point: Option<[u8; 65]>,
    /// The reference of this attempt's key when a device holds it (empty: `key` is the key).
    pub(super) new_ref: heapless::Vec<u8, MAX_KEY_REF>,
    /// Its public point.
    pub(super) new_point: [u8; 65],
    /// The name of the key being made in the device.
    pub(super) key_label: heapless::String<48>,
    /// The device's signature of the CSR's `CertificationRequestInfo`.
    pub(super) signature: Option<[u8; 64]>,
}

impl DeviceKeys {
    pub(super) const fn idle() -> Self {
        DeviceKeys {
            device: heapless::String::new(),
            client_point: None,
            new_ref: heapless::Vec::new(),
            new_point: [0u8; 65],
            key_label: heapless::String::new(),
            signature: None,
        }
    }

    /// Every field as [`DeviceKeys::idle`] has it (a new field is a compile error until reset).
    pub(super) fn reset(&mut self) {
        let DeviceKeys { device, client_point, new_ref, new_point, key_label, signature } = self;
        device.clear();
        *client_point = None;
        new_ref.clear();
        *new_point = [0u8; 65];
        key_label.clear();
        *signature = None;
    }
}

/// The signature the device made over exactly `message`, for the engine to build the CSR
/// around (any other message is [`Error::SignerFailed`]).
pub(super) struct Presigned<'a> {
    pub(super) point: [u8; 65],
    pub(super) message: &'a [u8],
    pub(super) rs: [u8; 64],
}

impl P256Signer for Presigned<'_> {
    fn public_point(&self) -> [u8; 65] {
        self.point
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> Result<[u8; 64]> {
        if message == self.message { Ok(self.rs) } else { Err(Error::SignerFailed) }
    }
}

fn valid_point(p: &[u8; 65]) -> bool {
    p256::ecdsa::VerifyingKey::from_sec1_bytes(p).is_ok()
}

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> Agent<N, PEM, OUT, PATH, SANS, DISC>
{
    /// Whether the current client key (as read) is a device's reference.
    pub(super) fn client_key_in_device(&self) -> bool {
        matches!(Holder::of_pem(&self.client_key), Ok(Holder::Tpm | Holder::Pkcs11))
    }

    fn device_name(&self) -> &'static str {
        match keyref::Device::parse(&self.dk.device) {
            Ok(d) => d.holder().as_str(),
            Err(_) => "software",
        }
    }

    /// Make this attempt's key: in the device, or from entropy.
    pub(super) fn make_key(&mut self, now: i64) {
        self.key = None;
        self.dk.new_ref.clear();
        self.dk.signature = None;
        self.key_generated = false;
        self.key_tries = 0;
        if self.dk.device.is_empty() {
            if self.kc_points_at_current && self.client_key_in_device() {
                let holder = Holder::of_pem(&self.client_key).map_or("device", Holder::as_str);
                let d = detail(format_args!(
                    "the current client key is held by a {holder} device: name the device for \
                     the next key (the agent never moves it to software by itself)"
                ));
                return self.attempt_failed(now, Error::InvalidConfig, &d);
            }
            self.st = St::KeyEntropy;
            return;
        }
        self.dk.key_label.clear();
        let _ = self.dk.key_label.push_str(PREFIX_CLIENT);
        let _ = self.dk.key_label.push('-');
        let _ = self.dk.key_label.push_str(&timestamp(now, self.utc_offset));
        self.st = St::KeyGenerate;
    }

    /// The key cache holds a reference (or the agent makes keys in a device): what to do with it.
    /// Returns whether this handled the read.
    pub(super) fn device_cache(
        &mut self,
        now: i64,
        result: core::result::Result<&[u8], StoreErrorKind>,
    ) -> bool {
        let Ok(bytes) = result else { return false };
        let holder = Holder::of_pem(bytes).ok();
        let in_device = matches!(holder, Some(Holder::Tpm | Holder::Pkcs11));
        if self.dk.device.is_empty() && !in_device {
            return false;
        }
        let wanted = keyref::Device::parse(&self.dk.device).ok().map(|d| d.holder());
        if in_device && holder == wanted && put_bytes(&mut self.dk.new_ref, bytes).is_ok() {
            self.st = St::CachePublic;
            return true;
        }
        let line = self
            .ev("key")
            .kv("kind", "bootstrap")
            .kv("source", "regenerate")
            .kv("reason", "other-holder")
            .kv("holder", holder.map_or("none", Holder::as_str))
            .kv("path", &self.key_cache_path)
            .done();
        self.event(line);
        self.make_key(now);
        true
    }

    /// The device operation of the current state.
    pub(super) fn key_op(&self) -> Option<KeyOp<'_>> {
        Some(match self.st {
            St::KeyPublic => KeyOp::Public { key: &self.client_key },
            St::CachePublic => KeyOp::Public { key: &self.dk.new_ref },
            St::KeyGenerate => {
                KeyOp::Generate { device: &self.dk.device, label: &self.dk.key_label }
            }
            St::KeySign => KeyOp::Sign { key: &self.dk.new_ref, message: &self.out },
            St::DestroyOld => KeyOp::Destroy { key: &self.client_key },
            St::DestroyNew => KeyOp::Destroy { key: &self.dk.new_ref },
            _ => return None,
        })
    }

    /// An outstanding device operation was not answered: it failed.
    pub(super) fn key_abandoned(&mut self, now: i64) {
        const WHY: &str = "no answer before the next poll";
        match self.st {
            St::KeyPublic | St::CachePublic => self.on_key_public(now, Err(WHY)),
            St::KeyGenerate => self.on_key_generated(now, Err(WHY)),
            St::KeySign => self.on_signature(now, Err(WHY)),
            St::DestroyOld | St::DestroyNew => self.on_key_destroyed(now, Err(WHY)),
            _ => self.pending = Pending::None,
        }
    }

    /// The answer to [`KeyOp::Public`]: the key's public point (65-byte uncompressed SEC1), or
    /// why the device could not load the key. Ignored when no such operation is outstanding.
    pub fn on_key_public(&mut self, now: i64, result: core::result::Result<&[u8; 65], &str>) {
        if self.pending != Pending::Key || !matches!(self.st, St::KeyPublic | St::CachePublic) {
            return;
        }
        self.pending = Pending::None;
        let point = result.and_then(|p| {
            if valid_point(p) { Ok(*p) } else { Err("the device's answer is not a P-256 point") }
        });
        match (self.st, point) {
            (St::KeyPublic, Ok(p)) => {
                self.dk.client_point = Some(p);
                self.next_client_read();
            }
            (St::KeyPublic, Err(why)) => {
                let holder = Holder::of_pem(&self.client_key).map_or("device", Holder::as_str);
                if self.mode == Mode::Check {
                    self.unusable(Error::KeyDevice, Part::ClientKey);
                    self.next_client_read();
                } else {
                    self.failure = Some(Error::KeyDevice);
                    self.detail = detail(format_args!("the client key's {holder} device: {why}"));
                    self.finish_failure(now);
                }
            }
            (_, Ok(p)) => {
                self.dk.new_point = p;
                self.key_generated = false;
                let line = self
                    .ev("key")
                    .kv("kind", "bootstrap")
                    .kv("source", "cache")
                    .kv("holder", self.device_name())
                    .kv("path", &self.key_cache_path)
                    .done();
                self.event(line);
                self.st = St::Healthz;
            }
            (_, Err(why)) => {
                // As with a software cache that is not a key: replace it.
                let line = self
                    .ev("key")
                    .kv("kind", "bootstrap")
                    .kv("source", "regenerate")
                    .kv("reason", Error::KeyDevice.name())
                    .kv("detail", why)
                    .kv("path", &self.key_cache_path)
                    .done();
                self.event(line);
                self.make_key(now);
            }
        }
    }

    /// The answer to [`KeyOp::Generate`]: the new key's reference (a `TSS2 PRIVATE KEY` or
    /// `PKCS#11 PROVIDER URI` PEM block, at most [`MAX_KEY_REF`] bytes) and its public point,
    /// or why the device could not make it. Ignored when no such operation is outstanding.
    pub fn on_key_generated(
        &mut self,
        now: i64,
        result: core::result::Result<(&[u8], &[u8; 65]), &str>,
    ) {
        if self.pending != Pending::Key || self.st != St::KeyGenerate {
            return;
        }
        self.pending = Pending::None;
        let holder = keyref::Device::parse(&self.dk.device).ok().map(|d| d.holder());
        let checked = result.and_then(|(reference, point)| {
            if Holder::of_pem(reference).ok() != holder {
                Err("the device answered with another kind of key reference")
            } else if !valid_point(point) {
                Err("the device's answer is not a P-256 point")
            } else if put_bytes(&mut self.dk.new_ref, reference).is_err() {
                Err("the key reference is larger than the agent keeps")
            } else {
                Ok(*point)
            }
        });
        let name = self.device_name();
        match checked {
            Ok(point) => {
                self.dk.new_point = point;
                self.key_generated = true;
                let line = self
                    .ev("key")
                    .kv("kind", self.kind.as_str())
                    .kv("source", "device")
                    .kv("holder", name)
                    .kv("label", &self.dk.key_label)
                    .done();
                self.event(line);
                if self.kind == Kind::Bootstrap {
                    match put_bytes(&mut self.out, &self.dk.new_ref) {
                        Ok(()) => {
                            self.st =
                                if self.client_dir_exists { St::WriteKeyCache } else { St::MakeDir }
                        }
                        Err(e) => self.attempt_failed(now, e, "keeping the key reference"),
                    }
                } else {
                    self.st = St::StartEngine;
                }
            }
            Err(why) => {
                self.dk.new_ref.clear();
                let d = detail(format_args!("making a key in the {name} device: {why}"));
                self.attempt_failed(now, Error::KeyDevice, &d);
            }
        }
    }

    /// The answer to [`KeyOp::Sign`]: the signature as `r || s`, or why the device could not
    /// sign. Ignored when no such operation is outstanding.
    pub fn on_signature(&mut self, now: i64, result: core::result::Result<&[u8; 64], &str>) {
        if self.pending != Pending::Key || self.st != St::KeySign {
            return;
        }
        self.pending = Pending::None;
        // A device (or a front-end's callback) that signs with another key, or answers garbage,
        // fails here with a typed reason rather than as a CSR the apiserver refuses.
        let checked = result.and_then(|rs| {
            match self.verifier().p256_sha256(&self.dk.new_point, &self.out, rs) {
                crate::backend::Verdict::Valid => Ok(rs),
                _ => Err("the signature does not verify with the key's public point"),
            }
        });
        match checked {
            Ok(rs) => {
                self.dk.signature = Some(*rs);
                self.st = St::StartEngine;
            }
            Err(why) => {
                self.out.clear();
                let d = detail(format_args!(
                    "signing the CSR in the {} device: {why}",
                    self.device_name()
                ));
                self.attempt_failed(now, Error::KeyDevice, &d);
            }
        }
    }

    /// The answer to [`KeyOp::Destroy`] (a key already gone is success). A failure is reported
    /// (`step=warning`) and changes nothing else: the key is left behind. Ignored when no such
    /// operation is outstanding.
    pub fn on_key_destroyed(&mut self, now: i64, result: core::result::Result<(), &str>) {
        if self.pending != Pending::Key || !matches!(self.st, St::DestroyOld | St::DestroyNew) {
            return;
        }
        self.pending = Pending::None;
        let old = self.st == St::DestroyOld;
        let (which, holder) = if old {
            ("replaced", Holder::of_pem(&self.client_key).map_or("device", Holder::as_str))
        } else {
            ("unused", self.device_name())
        };
        let line = match result {
            Ok(()) => self
                .ev("key")
                .kv("kind", self.kind.as_str())
                .kv("source", "destroyed")
                .kv("which", which)
                .kv("holder", holder)
                .done(),
            Err(why) => self
                .ev("warning")
                .kv(
                    "what",
                    if old {
                        "could not destroy the replaced key"
                    } else {
                        "could not destroy the unused key"
                    },
                )
                .kv("reason", Error::KeyDevice.name())
                .kv("holder", holder)
                .kv("detail", why)
                .done(),
        };
        self.event(line);
        if old {
            // Not again for this attempt (`after_store` looks at it).
            self.client_key.as_mut_slice().zeroize();
            self.client_key.clear();
            self.after_store(now);
            return;
        }
        self.dk.new_ref.clear();
        self.key_generated = false;
        if self.failure.is_none() {
            // A refused rotation falling back to bootstrap.
            self.st = St::Start;
        } else if self.dir_created {
            self.st = St::CleanupDir;
        } else {
            self.finish_failure(now);
        }
    }

    /// After the new pair is current: whether a replaced key of this node's pair is held by a
    /// device and must be destroyed now.
    pub(super) fn replaced_key_in_device(&self) -> bool {
        self.kc_points_at_current
            && self.client_key_in_device()
            && self.client_key.as_slice() != self.dk.new_ref.as_slice()
    }

    /// Whether a failed attempt made a device key nobody will use.
    pub(super) fn unused_device_key(&self) -> bool {
        self.key_generated && !self.dk.new_ref.is_empty()
    }

    /// With a device key: its CSR's `CertificationRequestInfo` to sign first, or the signer over
    /// the signature the device made.
    pub(super) fn prepare_device_signature(&mut self, now: i64) -> bool {
        if self.dk.new_ref.is_empty() || self.dk.signature.is_some() {
            return false;
        }
        if self.kind == Kind::Serving {
            self.attempt_failed(now, Error::InvalidConfig, "a serving key is never a device's");
            return true;
        }
        let spki = spki_from_point(&self.dk.new_point);
        let _ = self.out.resize_default(OUT);
        let r = CsrBuilder::client(&self.node).and_then(|b| b.write_tbs(&spki, &mut self.out));
        match r {
            Ok(n) => {
                self.out.truncate(n);
                self.st = St::KeySign;
            }
            Err(e) => {
                self.out.clear();
                self.attempt_failed(now, e, "building the CSR");
            }
        }
        true
    }
}
