//! PKCS#11 tokens (cryptoki): make, open, use and destroy node keys named by RFC 7512 URIs.
//!
//! The module is the URI's `module-path` (SoftHSM, a smart card's module, or `p11-kit-client.so`
//! to reach a token served by `p11-kit server` in another process); the token is found by its
//! `token=` label (and `serial=`, `manufacturer=`, `model=`, `slot-id=` when given); the user PIN
//! is read from `pin-source` (a file, `file:` URI or path), never from a command line.

use std::sync::Mutex;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeInfo, AttributeType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::types::AuthPin;
use kubeboot::key::P256Signer;
use kubeboot::keyref::{self, Pkcs11Uri};
use zeroize::Zeroizing;

use crate::{DeviceError, DeviceResult, NewKey, sha256};

/// DER of the prime256v1 OID (`CKA_EC_PARAMS`).
const P256_PARAMS: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

fn decoded(value: &str) -> DeviceResult<Vec<u8>> {
    let mut buf = vec![0u8; value.len()];
    keyref::decode_value(value, &mut buf)
        .map(<[u8]>::to_vec)
        .map_err(|e| DeviceError(format!("{value}: {e}")))
}

fn text(value: Option<&str>) -> DeviceResult<Option<String>> {
    value.map(|v| decoded(v).map(|b| String::from_utf8_lossy(&b).into_owned())).transpose()
}

/// An open session with the token a URI names.
pub struct Token {
    /// `pkcs11 token=<label>` (for messages).
    pub name: String,
    session: Session,
    // Keeps the module loaded while the session lives.
    _module: Pkcs11,
}

impl Token {
    /// Load the module, find the token, open a read-write session and log in with the PIN of
    /// `pin-source`.
    pub fn open(uri: &Pkcs11Uri<'_>) -> DeviceResult<Token> {
        let label = text(uri.token)?.unwrap_or_default();
        let name = format!("pkcs11 token={label}");
        let err = |what: &str, e: CkError| DeviceError(format!("{name}: {what}: {e}"));
        let module = text(uri.module_path)?
            .ok_or_else(|| DeviceError(format!("{name}: the URI names no module-path")))?;
        if !std::path::Path::new(&module).exists() {
            return Err(DeviceError(format!("{name}: module {module}: no such file")));
        }
        let p11 = Pkcs11::new(&module).map_err(|e| err(&format!("loading {module}"), e))?;
        match p11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
            Ok(()) | Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
            Err(e) => return Err(err("C_Initialize", e)),
        }
        let (serial, model, manufacturer) =
            (text(uri.serial)?, text(uri.model)?, text(uri.manufacturer)?);
        let slot_id = uri.slot_id.and_then(|s| s.parse::<u64>().ok());
        let mut found = None;
        for slot in p11.get_slots_with_token().map_err(|e| err("C_GetSlotList", e))? {
            if slot_id.is_some_and(|id| id != slot.id()) {
                continue;
            }
            let info = p11.get_token_info(slot).map_err(|e| err("C_GetTokenInfo", e))?;
            let same = |want: &Option<String>, have: &str| {
                want.as_deref().is_none_or(|w| w.trim_end() == have.trim_end())
            };
            if same(&Some(label.clone()), info.label())
                && same(&serial, info.serial_number())
                && same(&model, info.model())
                && same(&manufacturer, info.manufacturer_id())
            {
                found = Some(slot);
                break;
            }
        }
        let slot = found.ok_or_else(|| DeviceError(format!("{name}: no such token")))?;
        let session = p11.open_rw_session(slot).map_err(|e| err("C_OpenSession", e))?;
        if let Some(source) = text(uri.pin_source)? {
            let path = source.strip_prefix("file:").unwrap_or(&source);
            let pin = Zeroizing::new(
                std::fs::read_to_string(path)
                    .map_err(|e| DeviceError(format!("{name}: pin-source {path}: {e}")))?,
            );
            let pin = AuthPin::from(pin.trim_end_matches(['\n', '\r']).to_owned());
            match session.login(UserType::User, Some(&pin)) {
                Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {}
                Err(e) => return Err(err("C_Login", e)),
            }
        }
        Ok(Token { name, session, _module: p11 })
    }

    fn find(
        &self,
        class: ObjectClass,
        label: &[u8],
        id: Option<&[u8]>,
    ) -> DeviceResult<ObjectHandle> {
        let mut t = vec![Attribute::Class(class), Attribute::Label(label.to_vec())];
        if let Some(id) = id {
            t.push(Attribute::Id(id.to_vec()));
        }
        let found = self
            .session
            .find_objects(&t)
            .map_err(|e| DeviceError(format!("{}: C_FindObjects: {e}", self.name)))?;
        let what = if class == ObjectClass::PRIVATE_KEY { "private key" } else { "public key" };
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(DeviceError(format!(
                "{}: no {what} object={}",
                self.name,
                String::from_utf8_lossy(label)
            ))),
            _ => Err(DeviceError(format!(
                "{}: more than one {what} object={}",
                self.name,
                String::from_utf8_lossy(label)
            ))),
        }
    }

    /// `CKA_EC_POINT` of a public key object: the DER OCTET STRING most tokens return, or the
    /// raw point some do.
    fn point(&self, public: ObjectHandle) -> DeviceResult<[u8; 65]> {
        let attrs = self
            .session
            .get_attributes(public, &[AttributeType::EcPoint])
            .map_err(|e| DeviceError(format!("{}: C_GetAttributeValue: {e}", self.name)))?;
        let Some(Attribute::EcPoint(raw)) = attrs.into_iter().next() else {
            return Err(DeviceError(format!("{}: the public key has no CKA_EC_POINT", self.name)));
        };
        point_of(&raw).ok_or_else(|| {
            DeviceError(format!("{}: CKA_EC_POINT is not an uncompressed P-256 point", self.name))
        })
    }
}

/// An uncompressed P-256 point from `CKA_EC_POINT`: DER-wrapped (`04 41 04...`) or raw.
pub fn point_of(raw: &[u8]) -> Option<[u8; 65]> {
    let p = match raw {
        [0x04, 0x41, rest @ ..] if rest.len() == 65 => rest,
        p if p.len() == 65 => p,
        _ => return None,
    };
    (p[0] == 4).then(|| p.try_into().ok()).flatten()
}

/// Make an ECDSA P-256 key pair in the token `device` names, labelled `label` with a random
/// 16-byte id: the private key `CKA_SENSITIVE`, not `CKA_EXTRACTABLE`, `CKA_SIGN` only.
pub fn generate(device: &Pkcs11Uri<'_>, label: &str) -> DeviceResult<NewKey> {
    let token = Token::open(device)?;
    let name = token.name.clone();
    let id = token
        .session
        .generate_random_vec(16)
        .map_err(|e| DeviceError(format!("{name}: C_GenerateRandom: {e}")))?;
    let common = [
        Attribute::Token(true),
        Attribute::Label(label.as_bytes().to_vec()),
        Attribute::Id(id.clone()),
    ];
    let mut public = vec![
        Attribute::Private(false),
        Attribute::Verify(true),
        Attribute::EcParams(P256_PARAMS.to_vec()),
    ];
    public.extend_from_slice(&common);
    let mut private = vec![
        Attribute::Private(true),
        Attribute::Sign(true),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
    ];
    private.extend_from_slice(&common);
    let (pub_handle, _) = token
        .session
        .generate_key_pair(&Mechanism::EccKeyPairGen, &public, &private)
        .map_err(|e| DeviceError(format!("{name}: C_GenerateKeyPair: {e}")))?;
    let point = token.point(pub_handle)?;
    let mut uri = vec![0u8; keyref::MAX_PKCS11_URI];
    let n = keyref::write_key_uri(device, label, &id, &mut uri)
        .map_err(|e| DeviceError(format!("{name}: the key's URI: {e}")))?;
    let uri = std::str::from_utf8(&uri[..n]).map_err(|e| DeviceError(e.to_string()))?;
    let mut pem = vec![0u8; keyref::MAX_KEY_REF];
    let m = keyref::write_pkcs11_uri_pem(uri, &mut pem)
        .map_err(|e| DeviceError(format!("{name}: the key's reference: {e}")))?;
    pem.truncate(m);
    Ok(NewKey { reference: pem, point })
}

/// A key in a token, open for signing (thread-safe: one session behind a lock).
pub struct Pkcs11Key {
    token: Mutex<Token>,
    name: String,
    private: ObjectHandle,
    public: ObjectHandle,
    point: [u8; 65],
}

impl Pkcs11Key {
    /// Open the private key a URI names (`object=` and, when given, `id=`), with its public key.
    pub fn open(uri: &Pkcs11Uri<'_>) -> DeviceResult<Pkcs11Key> {
        let token = Token::open(uri)?;
        let label = decoded(
            uri.object
                .ok_or_else(|| DeviceError(format!("{}: the URI names no object", token.name)))?,
        )?;
        let id = uri.id.map(decoded).transpose()?;
        if uri.object_type.is_some_and(|t| t != "private") {
            return Err(DeviceError(format!(
                "{}: the URI names a {} object, not a private key",
                token.name,
                uri.object_type.unwrap_or("")
            )));
        }
        let private = token.find(ObjectClass::PRIVATE_KEY, &label, id.as_deref())?;
        let public = token.find(ObjectClass::PUBLIC_KEY, &label, id.as_deref())?;
        let point = token.point(public)?;
        let name = format!("{} object={}", token.name, String::from_utf8_lossy(&label));
        Ok(Pkcs11Key { token: Mutex::new(token), name, private, public, point })
    }

    /// Open the key a `PKCS#11 PROVIDER URI` reference names.
    pub fn open_pem(reference: &[u8]) -> DeviceResult<Pkcs11Key> {
        let mut scratch = vec![0u8; reference.len()];
        let uri = keyref::pkcs11_uri_of(reference, &mut scratch)
            .map_err(|e| DeviceError(format!("the PKCS#11 key reference: {e}")))?;
        let parsed = Pkcs11Uri::parse(uri).map_err(|e| DeviceError(format!("{uri}: {e}")))?;
        Self::open(&parsed)
    }

    /// `pkcs11 token=<label> object=<label>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Destroy the private and the public key objects.
    pub fn destroy(self) -> DeviceResult<()> {
        let token = self.token.into_inner().map_err(|_| DeviceError("poisoned".into()))?;
        for h in [self.private, self.public] {
            token
                .session
                .destroy_object(h)
                .map_err(|e| DeviceError(format!("{}: C_DestroyObject: {e}", self.name)))?;
        }
        Ok(())
    }

    /// What the token says of the private key's protection: (`CKA_ALWAYS_SENSITIVE`,
    /// `CKA_NEVER_EXTRACTABLE`, whether reading `CKA_VALUE` is refused as sensitive).
    pub fn protection(&self) -> DeviceResult<(bool, bool, bool)> {
        let token = self.token.lock().map_err(|_| DeviceError("poisoned".into()))?;
        let err = |e: CkError| DeviceError(format!("{}: C_GetAttributeValue: {e}", self.name));
        let attrs = token
            .session
            .get_attributes(
                self.private,
                &[AttributeType::AlwaysSensitive, AttributeType::NeverExtractable],
            )
            .map_err(err)?;
        let (mut always, mut never) = (false, false);
        for a in attrs {
            match a {
                Attribute::AlwaysSensitive(b) => always = b,
                Attribute::NeverExtractable(b) => never = b,
                _ => {}
            }
        }
        let info =
            token.session.get_attribute_info(self.private, &[AttributeType::Value]).map_err(err)?;
        let refused = matches!(info.first(), Some(AttributeInfo::Sensitive));
        Ok((always, never, refused))
    }
}

impl P256Signer for Pkcs11Key {
    fn public_point(&self) -> [u8; 65] {
        self.point
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> kubeboot::Result<[u8; 64]> {
        let digest = sha256(message);
        let token = self.token.lock().map_err(|_| kubeboot::Error::SignerFailed)?;
        let sig = token
            .session
            .sign(&Mechanism::Ecdsa, self.private, &digest)
            .map_err(|_| kubeboot::Error::KeyDevice)?;
        sig.try_into().map_err(|_| kubeboot::Error::KeyDevice)
    }
}

impl std::fmt::Debug for Pkcs11Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkcs11Key").field("name", &self.name).finish_non_exhaustive()
    }
}
