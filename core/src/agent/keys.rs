//! The node key of an attempt: made in software from the front-end's entropy, or in a device
//! (a PKCS#11 token, a TPM) that never lets it out; for a bootstrap, kept in the key cache
//! `kubelet-client.key.tmp` first (or taken from it), so that a restart finds its own
//! `node-csr-` CSR.
//!
//! The decisions about a device's key, written once for every front-end:
//!
//! * **A new key for every certificate**, as the kubelet makes one for every CSR (client-go's
//!   certificate manager generates a key per rotation): at bootstrap and at every rotation the
//!   key is made in the configured device ([`KeyOp::Generate`], named
//!   `kubelet-client-<timestamp>` like the pair file it will go into). A bootstrap key's
//!   reference goes into the key cache first, as a software key does.
//! * **The CSR is signed by the device** ([`KeyOp::Sign`] over the `CertificationRequestInfo`,
//!   checked against the key's public point before it is used); the engine then builds the same
//!   CSR around that signature.
//! * **The files hold a reference, never the key**: the pair file is the certificate chain and
//!   the key's reference block, so the node kubeconfig names `kubelet-client-current.pem` for
//!   both, as the kubelet's does.
//! * **The replaced key is destroyed only once the new pair is current** ([`KeyOp::Destroy`]
//!   after the swap and the kubeconfig: the file plan asks): a crash at any point leaves a current
//!   pair whose key exists. A failed attempt destroys the key it made, unless its CSR may still
//!   be approved (a bootstrap's timeout: the key cache keeps it) or its pair is already current.
//! * **A device that fails is an error, not a reason to make a key elsewhere**
//!   ([`Error::KeyDevice`] naming the device); a current key in a device with no device
//!   configured for the next one is [`Error::InvalidConfig`]: the next key never silently moves
//!   to software.

use zeroize::Zeroize;

use super::config::Settings;
use super::event::Events;
use super::flow::{Detail, detail, timestamp};
use super::{FileRole, FileStep, KeyOp, Kind, PREFIX_CLIENT};
use crate::buf::Bytes;
use crate::csr::CsrBuilder;
use crate::error::{Error, StoreErrorKind};
use crate::key::{NodeKey, P256Signer, SEC1_PEM_LEN, spki_from_point};
use crate::keyref::{self, Holder, MAX_KEY_REF};
use crate::out::Filled;

/// Attempts at turning entropy into a key before giving up ([`Error::BadEntropy`]).
const KEY_ATTEMPTS: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    /// Read the key cache.
    ReadCache,
    Entropy,
    /// The device: make a key.
    Generate,
    /// The device: the key cache's public point.
    CachePublic,
    /// Create the cert dir (before the key cache).
    MakeDir,
    WriteCache,
    /// The key is there: the attempt goes on.
    Ready,
    /// The device: sign the CSR.
    Sign,
    /// The device signed: the attempt goes on.
    Signed,
    /// The device: destroy the replaced key (its pair is no longer current).
    DestroyOld,
    /// The device: destroy the key a failed attempt made.
    DestroyNew,
    /// Destroyed (or the failure to destroy reported).
    Destroyed,
    Failed,
}

/// What the key machine needs next, or where it got to.
pub(super) enum Next<'a> {
    Read(FileRole, usize, &'a str),
    File(FileStep<'a>),
    Entropy,
    Key(KeyOp<'a>),
    /// The key is there.
    Ready,
    /// The device signed the CSR.
    Signed,
    /// A destruction is over.
    Destroyed,
    Failed,
}

/// What the key machine works with besides its own state.
pub(super) struct KeysCx<'a, 'm> {
    pub(super) s: &'a Settings<'m>,
    pub(super) ev: &'a mut Events,
    /// The key cache's content on its way to the file, or the bytes the device signs.
    pub(super) out: &'a mut Bytes<'m>,
    pub(super) kind: Kind,
}

/// This attempt's key (see the module docs).
pub(super) struct Keys {
    st: St,
    /// A software key.
    pub(super) key: Option<NodeKey>,
    /// A device's key: its reference (empty: `key` is the key) and public point.
    pub(super) new_ref: heapless::Vec<u8, MAX_KEY_REF>,
    pub(super) new_point: [u8; 65],
    /// The name of the key being made in the device.
    label: heapless::String<48>,
    /// The device's signature of the CSR's `CertificationRequestInfo`.
    signature: Option<[u8; 64]>,
    /// Made by this attempt (a failed attempt forgets or destroys it).
    pub(super) generated: bool,
    tries: u32,
    /// The cert dir existed when the attempt began (else the key cache needs it created).
    dir_exists: bool,
    /// This attempt created the cert dir.
    pub(super) dir_created: bool,
    /// The holder of the current pair's key when a device holds it (then the next key must be
    /// a device's too).
    current_in_device: Option<Holder>,
    failure: Option<(Error, Detail)>,
}

impl Keys {
    pub(super) const fn new() -> Self {
        Keys {
            st: St::Idle,
            key: None,
            new_ref: heapless::Vec::new(),
            new_point: [0u8; 65],
            label: heapless::String::new(),
            signature: None,
            generated: false,
            tries: 0,
            dir_exists: false,
            dir_created: false,
            current_in_device: None,
            failure: None,
        }
    }

    /// Forget the attempt's key (wiped by its drop): every field as [`Keys::new`] has it.
    pub(super) fn reset(&mut self) {
        let Keys {
            st,
            key,
            new_ref,
            new_point,
            label,
            signature,
            generated,
            tries,
            dir_exists,
            dir_created,
            current_in_device,
            failure,
        } = self;
        *st = St::Idle;
        *key = None;
        new_ref.clear();
        *new_point = [0u8; 65];
        label.clear();
        *signature = None;
        *generated = false;
        *tries = 0;
        *dir_exists = false;
        *dir_created = false;
        *current_in_device = None;
        *failure = None;
    }

    /// What it needs now; `old_key` is the current pair's key (the one [`Keys::destroy_old`]
    /// destroys).
    pub(super) fn next<'a>(
        &'a self,
        s: &'a Settings<'_>,
        out: &'a [u8],
        old_key: &'a [u8],
    ) -> Next<'a> {
        match self.st {
            St::Idle | St::Failed => Next::Failed,
            St::ReadCache => Next::Read(FileRole::KeyCache, 8192, &s.key_cache),
            St::Entropy => Next::Entropy,
            St::Generate => Next::Key(KeyOp::Generate { device: &s.device, label: &self.label }),
            St::CachePublic => Next::Key(KeyOp::Public { key: &self.new_ref }),
            St::MakeDir => Next::File(FileStep::CreateDir { path: &s.cert_dir }),
            St::WriteCache => Next::File(FileStep::WriteKeyCache { path: &s.key_cache, pem: out }),
            St::Ready => Next::Ready,
            St::Sign => Next::Key(KeyOp::Sign { key: &self.new_ref, message: out }),
            St::Signed => Next::Signed,
            St::DestroyOld => Next::Key(KeyOp::Destroy { key: old_key }),
            St::DestroyNew => Next::Key(KeyOp::Destroy { key: &self.new_ref }),
            St::Destroyed => Next::Destroyed,
        }
    }

    /// Why it failed.
    pub(super) fn failure(&self) -> Option<(Error, &str)> {
        self.failure.as_ref().map(|(e, d)| (*e, d.as_str()))
    }

    fn fail(&mut self, e: Error, d: Detail) {
        self.failure = Some((e, d));
        self.st = St::Failed;
    }

    /// Whether a device holds this attempt's key.
    pub(super) fn in_device(&self) -> bool {
        !self.new_ref.is_empty()
    }

    /// Whether a failed attempt made a device key nobody will use.
    pub(super) fn unused_device_key(&self) -> bool {
        self.generated && self.in_device()
    }

    fn device_name(s: &Settings<'_>) -> &'static str {
        match keyref::Device::parse(&s.device) {
            Ok(d) => d.holder().as_str(),
            Err(_) => "software",
        }
    }

    // -----------------------------------------------------------------------------------------
    // Beginning

    /// A bootstrap's key: from the key cache when the cert dir exists, else a new one.
    pub(super) fn begin_bootstrap(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        now: i64,
        dir_exists: bool,
        current_key_in_device: Option<Holder>,
    ) {
        self.reset();
        self.dir_exists = dir_exists;
        self.current_in_device = current_key_in_device;
        if dir_exists {
            self.st = St::ReadCache;
        } else {
            self.make(cx, now);
        }
    }

    /// A rotation's (or the serving certificate's) key: a new one. `current_key_in_device`:
    /// the holder of the current pair's key when a device holds it.
    pub(super) fn begin(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        now: i64,
        current_key_in_device: Option<Holder>,
    ) {
        self.reset();
        self.dir_exists = true;
        self.current_in_device = current_key_in_device;
        self.make(cx, now);
    }

    /// Make a key: in the device, or from entropy.
    fn make(&mut self, cx: &mut KeysCx<'_, '_>, now: i64) {
        self.key = None;
        self.new_ref.clear();
        self.signature = None;
        self.generated = false;
        self.tries = 0;
        if cx.s.device.is_empty() {
            if let Some(holder) = self.current_in_device {
                let d = detail(format_args!(
                    "the current client key is held by a {} device: name the device for the \
                     next key (the agent never moves it to software by itself)",
                    holder.as_str()
                ));
                return self.fail(Error::InvalidConfig, d);
            }
            self.st = St::Entropy;
            return;
        }
        self.label.clear();
        let _ = self.label.push_str(PREFIX_CLIENT);
        let _ = self.label.push('-');
        let _ = self.label.push_str(&timestamp(now, cx.s.utc_offset));
        self.st = St::Generate;
    }

    // -----------------------------------------------------------------------------------------
    // Answers

    /// The key cache as read.
    pub(super) fn on_read(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        now: i64,
        result: core::result::Result<&[u8], StoreErrorKind>,
    ) {
        if self.st != St::ReadCache {
            return;
        }
        if self.device_cache(cx, now, result) {
            return;
        }
        let reason = match result.map(NodeKey::from_pem) {
            Ok(Ok(k)) => {
                self.key = Some(k);
                self.generated = false;
                let line = cx
                    .ev
                    .ev("key")
                    .kv("kind", "bootstrap")
                    .kv("source", "cache")
                    .kv("path", &cx.s.key_cache)
                    .done();
                cx.ev.push(line);
                self.st = St::Ready;
                return;
            }
            Ok(Err(e)) => e.name(),
            Err(StoreErrorKind::NotFound) => "",
            Err(e) => e.code().name(),
        };
        if !reason.is_empty() {
            // Upstream fails until someone deletes a corrupt cache; we replace it.
            let line = cx
                .ev
                .ev("key")
                .kv("kind", "bootstrap")
                .kv("source", "regenerate")
                .kv("reason", reason)
                .kv("path", &cx.s.key_cache)
                .done();
            cx.ev.push(line);
        }
        self.make(cx, now);
    }

    /// The key cache holds a reference (or the agent makes keys in a device): what to do with
    /// it. Returns whether this handled the read.
    fn device_cache(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        now: i64,
        result: core::result::Result<&[u8], StoreErrorKind>,
    ) -> bool {
        let Ok(bytes) = result else { return false };
        let holder = Holder::of_pem(bytes).ok();
        let in_device = matches!(holder, Some(Holder::Tpm | Holder::Pkcs11));
        if cx.s.device.is_empty() && !in_device {
            return false;
        }
        let wanted = keyref::Device::parse(&cx.s.device).ok().map(|d| d.holder());
        self.new_ref.clear();
        if in_device && holder == wanted && self.new_ref.extend_from_slice(bytes).is_ok() {
            self.st = St::CachePublic;
            return true;
        }
        self.new_ref.clear();
        let line = cx
            .ev
            .ev("key")
            .kv("kind", "bootstrap")
            .kv("source", "regenerate")
            .kv("reason", "other-holder")
            .kv("holder", holder.map_or("none", Holder::as_str))
            .kv("path", &cx.s.key_cache)
            .done();
        cx.ev.push(line);
        self.make(cx, now);
        true
    }

    /// Entropy for a software key.
    pub(super) fn on_entropy(&mut self, cx: &mut KeysCx<'_, '_>, bytes: &[u8]) {
        if self.st != St::Entropy {
            return;
        }
        match NodeKey::from_entropy(bytes) {
            Ok(k) => {
                if cx.kind == Kind::Bootstrap {
                    let mut pem = Filled::<SEC1_PEM_LEN>::new();
                    let r = pem.fill(|b| k.to_sec1_pem(b)).and_then(|pem| cx.out.set(pem));
                    pem.zeroize();
                    self.key = Some(k);
                    self.generated = true;
                    match r {
                        Ok(()) => self.st = self.cache_step(),
                        Err(e) => self.fail(e, detail(format_args!("encoding the key"))),
                    }
                } else {
                    self.key = Some(k);
                    let line = cx
                        .ev
                        .ev("key")
                        .kv("kind", cx.kind.as_str())
                        .kv("source", "generated")
                        .done();
                    cx.ev.push(line);
                    self.st = St::Ready;
                }
            }
            Err(Error::BadEntropy) if self.tries + 1 < KEY_ATTEMPTS => self.tries += 1,
            Err(e) => self.fail(e, detail(format_args!("generating a key"))),
        }
    }

    /// Where a bootstrap's new key goes first: the key cache, after creating the cert dir.
    fn cache_step(&self) -> St {
        if self.dir_exists { St::WriteCache } else { St::MakeDir }
    }

    /// The outcome of the key cache's file steps.
    pub(super) fn on_file_done(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        result: core::result::Result<(), StoreErrorKind>,
    ) {
        let failed = |keys: &mut Self, e: StoreErrorKind, what: &str| {
            keys.fail(Error::Store(e), detail(format_args!("{what}: {}", e.message())));
        };
        match (self.st, result) {
            (St::MakeDir, Ok(())) => {
                self.dir_created = true;
                self.dir_exists = true;
                self.st = St::WriteCache;
            }
            (St::MakeDir, Err(e)) => failed(self, e, "creating the cert dir"),
            (St::WriteCache, Ok(())) => {
                let line = cx
                    .ev
                    .ev("key")
                    .kv("kind", "bootstrap")
                    .kv("source", "generated")
                    .kv("path", &cx.s.key_cache)
                    .done();
                cx.ev.push(line);
                cx.out.wipe();
                self.st = St::Ready;
            }
            (St::WriteCache, Err(e)) => failed(self, e, "writing the key cache"),
            _ => {}
        }
    }

    /// The device's answer to [`KeyOp::Public`] of the key cache.
    pub(super) fn on_key_public(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        now: i64,
        result: core::result::Result<[u8; 65], &str>,
    ) {
        if self.st != St::CachePublic {
            return;
        }
        match result {
            Ok(p) => {
                self.new_point = p;
                self.generated = false;
                let line = cx
                    .ev
                    .ev("key")
                    .kv("kind", "bootstrap")
                    .kv("source", "cache")
                    .kv("holder", Self::device_name(cx.s))
                    .kv("path", &cx.s.key_cache)
                    .done();
                cx.ev.push(line);
                self.st = St::Ready;
            }
            Err(why) => {
                // As with a software cache that is not a key: replace it.
                let line = cx
                    .ev
                    .ev("key")
                    .kv("kind", "bootstrap")
                    .kv("source", "regenerate")
                    .kv("reason", Error::KeyDevice.name())
                    .kv("detail", why)
                    .kv("path", &cx.s.key_cache)
                    .done();
                cx.ev.push(line);
                self.make(cx, now);
            }
        }
    }

    /// The device's answer to [`KeyOp::Generate`]: the new key's reference and public point.
    pub(super) fn on_key_generated(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        result: core::result::Result<(&[u8], [u8; 65]), &str>,
    ) {
        if self.st != St::Generate {
            return;
        }
        let holder = keyref::Device::parse(&cx.s.device).ok().map(|d| d.holder());
        self.new_ref.clear();
        let checked = result.and_then(|(reference, point)| {
            if Holder::of_pem(reference).ok() != holder {
                Err("the device answered with another kind of key reference")
            } else if self.new_ref.extend_from_slice(reference).is_err() {
                Err("the key reference is larger than the agent keeps")
            } else {
                Ok(point)
            }
        });
        let name = Self::device_name(cx.s);
        match checked {
            Ok(point) => {
                self.new_point = point;
                self.generated = true;
                let line = cx
                    .ev
                    .ev("key")
                    .kv("kind", cx.kind.as_str())
                    .kv("source", "device")
                    .kv("holder", name)
                    .kv("label", &self.label)
                    .done();
                cx.ev.push(line);
                if cx.kind == Kind::Bootstrap {
                    match cx.out.set(&self.new_ref) {
                        Ok(()) => self.st = self.cache_step(),
                        Err(e) => self.fail(e, detail(format_args!("keeping the key reference"))),
                    }
                } else {
                    self.st = St::Ready;
                }
            }
            Err(why) => {
                self.new_ref.clear();
                let d = detail(format_args!("making a key in the {name} device: {why}"));
                self.fail(Error::KeyDevice, d);
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Signing

    /// With a device's key: put its CSR's `CertificationRequestInfo` in `out` for the device to
    /// sign ([`KeyOp::Sign`]); returns whether it did (else the key signs by itself: software,
    /// or the device has signed already).
    pub(super) fn prepare_signature(&mut self, cx: &mut KeysCx<'_, '_>, node: &str) -> bool {
        if !self.in_device() || self.signature.is_some() {
            return false;
        }
        if cx.kind == Kind::Serving {
            self.fail(
                Error::InvalidConfig,
                detail(format_args!("a serving key is never a device's")),
            );
            return true;
        }
        let spki = spki_from_point(&self.new_point);
        let r = cx.out.fill(|b| CsrBuilder::client(node).and_then(|c| c.write_tbs(&spki, b)));
        match r {
            Ok(()) => self.st = St::Sign,
            Err(e) => self.fail(e, detail(format_args!("building the CSR"))),
        }
        true
    }

    /// The device's answer to [`KeyOp::Sign`]: `r || s`, checked against the key's public point
    /// (a device, or a front-end's callback, that signs with another key fails here with a
    /// typed reason, not as a CSR the apiserver refuses).
    pub(super) fn on_signature(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        result: core::result::Result<&[u8; 64], &str>,
    ) {
        if self.st != St::Sign {
            return;
        }
        let checked =
            result.and_then(|rs| match cx.s.verifier().p256_sha256(&self.new_point, cx.out, rs) {
                crate::backend::Verdict::Valid => Ok(rs),
                _ => Err("the signature does not verify with the key's public point"),
            });
        match checked {
            Ok(rs) => {
                self.signature = Some(*rs);
                self.st = St::Signed;
            }
            Err(why) => {
                cx.out.clear();
                let d = detail(format_args!(
                    "signing the CSR in the {} device: {why}",
                    Self::device_name(cx.s)
                ));
                self.fail(Error::KeyDevice, d);
            }
        }
    }

    /// The key signs the CSR: the device's signature over exactly `message` (the
    /// `CertificationRequestInfo` in `out`), or the software key. `None` when there is neither.
    pub(super) fn signer<'a>(&'a self, message: &'a [u8]) -> Option<Signer<'a>> {
        match (&self.key, self.signature) {
            (_, Some(rs)) => Some(Signer::Presigned { point: self.new_point, message, rs }),
            (Some(k), None) => Some(Signer::Key(k)),
            (None, None) => None,
        }
    }

    /// After the engine took the signature: the bytes signed are spent.
    pub(super) fn signature_used(&mut self) -> bool {
        self.signature.take().is_some()
    }

    /// The key in the pair file: the key's PEM into `pem` (software), or the device's reference.
    pub(super) fn pair_key<'a>(
        &'a self,
        pem: &'a mut Filled<SEC1_PEM_LEN>,
    ) -> crate::Result<&'a [u8]> {
        match &self.key {
            Some(k) => pem.fill(|b| k.to_sec1_pem(b)),
            None if self.in_device() => Ok(&self.new_ref),
            None => Err(Error::InvalidState),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Destroying

    /// Destroy the replaced key (the file plan asks, once the new pair is current).
    pub(super) fn destroy_old(&mut self) {
        self.failure = None;
        self.st = St::DestroyOld;
    }

    /// Destroy the key this failed attempt made.
    pub(super) fn destroy_new(&mut self) {
        self.st = St::DestroyNew;
    }

    /// The device's answer to [`KeyOp::Destroy`] (a key already gone is success). A failure is
    /// reported (`step=warning`) and changes nothing else: the key is left behind.
    pub(super) fn on_key_destroyed(
        &mut self,
        cx: &mut KeysCx<'_, '_>,
        old_key: &[u8],
        result: core::result::Result<(), &str>,
    ) {
        let old = match self.st {
            St::DestroyOld => true,
            St::DestroyNew => false,
            _ => return,
        };
        let (which, holder) = if old {
            ("replaced", Holder::of_pem(old_key).map_or("device", Holder::as_str))
        } else {
            ("unused", Self::device_name(cx.s))
        };
        let line = match result {
            Ok(()) => cx
                .ev
                .ev("key")
                .kv("kind", cx.kind.as_str())
                .kv("source", "destroyed")
                .kv("which", which)
                .kv("holder", holder)
                .done(),
            Err(why) => cx
                .ev
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
        cx.ev.push(line);
        if !old {
            self.new_ref.clear();
            self.generated = false;
        }
        self.st = St::Destroyed;
    }

    /// The new pair is current: a device's key made by this attempt is never destroyed as
    /// unused from now on.
    pub(super) fn made_current(&mut self) {
        if self.in_device() {
            self.generated = false;
        }
    }
}

/// Who signs this attempt's CSR.
pub(super) enum Signer<'a> {
    /// The software key.
    Key(&'a NodeKey),
    /// The device signed exactly `message` already: the engine builds the CSR around it (any
    /// other message is [`Error::SignerFailed`]).
    Presigned { point: [u8; 65], message: &'a [u8], rs: [u8; 64] },
}

impl P256Signer for Signer<'_> {
    fn public_point(&self) -> [u8; 65] {
        match self {
            Signer::Key(k) => k.public_point(),
            Signer::Presigned { point, .. } => *point,
        }
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> crate::Result<[u8; 64]> {
        match self {
            Signer::Key(k) => k.sign_p256_sha256(message),
            Signer::Presigned { message: m, rs, .. } => {
                if message == *m {
                    Ok(*rs)
                } else {
                    Err(Error::SignerFailed)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_presigned_signer_signs_only_its_message() {
        let s = Signer::Presigned { point: [4; 65], message: b"tbs", rs: [7; 64] };
        assert_eq!(s.sign_p256_sha256(b"tbs"), Ok([7; 64]));
        assert_eq!(s.sign_p256_sha256(b"other"), Err(Error::SignerFailed));
        assert_eq!(s.public_point(), [4; 65]);
    }
}
