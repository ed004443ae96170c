//! The TLS server's certificate, as a client checks it: the apiserver a node dialed must present
//! a chain to the CA the node trusts, valid now, for serverAuth, naming the host it dialed — and
//! then prove its key in the handshake. For clients that bring their own TLS (a microcontroller's
//! TLS 1.3 stack); the same parser, path search and signature dispatch as [`verify_issued`].
//!
//! Order of checks ([`verify_server_der`]); the first failing step decides the [`Reason`]:
//!
//! 1. **Parse** the leaf and the intermediates (at most [`MAX_INTERMEDIATES`]) →
//!    [`Reason::Malformed`].
//! 2. **Path and signatures** to one of the anchors, exactly as for an issued certificate (see
//!    the [module docs](super)).
//! 3. **Time** of the leaf → [`Reason::NotYetValid`] / [`Reason::Expired`].
//! 4. **Name**: the dialed IP address among the iPAddress SANs, or the dialed DNS name among the
//!    dNSName SANs (ASCII case-insensitive; a `*.` wildcard stands for exactly one leftmost
//!    label, as Go's `crypto/x509` matches them; the subject CN is never used) →
//!    [`Reason::SubjectMismatch`] with field `san`.
//! 5. **Usage**: an unknown critical extension → [`Reason::WrongUsage`] (`criticalExtension`);
//!    extendedKeyUsage must exist and contain serverAuth (`extendedKeyUsage`; stricter than Go,
//!    which also takes a leaf without the extension); a keyUsage without digitalSignature
//!    (`keyUsage`: the key signs the handshake).
//! 6. **Key**: a P-256 (or, with feature `p384`, P-384) public key, to check the handshake's
//!    signature with ([`ServerKey::verify_signature`]) → else [`Reason::UnsupportedAlgorithm`].

use super::*;

/// The host a client dialed, which the server certificate must name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerName<'a> {
    /// A DNS name (without a trailing dot).
    Dns(&'a str),
    /// An IP address.
    Ip(IpAddr),
}

impl<'a> ServerName<'a> {
    /// The host part of a URL's authority: an IPv4 literal, an IPv6 literal in brackets (or
    /// bare), or a DNS name of letters, digits, `-` and `.` (at most 253 bytes, labels of 1 to 63
    /// bytes; a trailing dot is dropped). Anything else is [`Error::InvalidDnsName`].
    pub fn parse(host: &'a str) -> Result<Self, Error> {
        let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(ServerName::Ip(ip));
        }
        let name = host.strip_suffix('.').unwrap_or(host);
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(Error::InvalidDnsName);
        }
        Ok(ServerName::Dns(name))
    }

    /// Whether the subjectAltName contents `san` name this host.
    fn matched_by(&self, san: &[u8]) -> Result<bool, VerifyError> {
        match *self {
            ServerName::Ip(ip) => {
                let want = Some(ip.to_canonical());
                san_contains(san, |tag, v| tag == 7 && ip_of(v) == want)
            }
            ServerName::Dns(host) => {
                san_contains(san, |tag, v| tag == 2 && dns_matches(v, host.as_bytes()))
            }
        }
    }
}

/// Whether a dNSName SAN `pattern` matches `host` (ASCII case-insensitive; a leading `*.`
/// matches one whole leftmost label of a host with at least as many labels).
fn dns_matches(pattern: &[u8], host: &[u8]) -> bool {
    let pattern = pattern.strip_suffix(b".").unwrap_or(pattern);
    match pattern.strip_prefix(b"*.") {
        Some(rest) => match host.iter().position(|&b| b == b'.') {
            Some(dot) => {
                dot > 0
                    && !rest.is_empty()
                    && host.get(dot + 1..).is_some_and(|h| h.eq_ignore_ascii_case(rest))
            }
            None => false,
        },
        None => pattern.eq_ignore_ascii_case(host),
    }
}

/// The server's public key, from a certificate that passed [`verify_server_der`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ServerKey {
    /// Uncompressed SEC1 point (65 bytes for P-256, 97 for P-384).
    point: [u8; 97],
    len: u8,
    /// The leaf's notAfter (unix seconds).
    pub not_after: i64,
}

impl fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let curve = if self.len == 65 { "P-256" } else { "P-384" };
        f.debug_struct("ServerKey")
            .field("curve", &curve)
            .field("not_after", &self.not_after)
            .finish()
    }
}

/// TLS 1.3 SignatureScheme `ecdsa_secp256r1_sha256` (RFC 8446 §4.2.3).
pub const ECDSA_SECP256R1_SHA256: u16 = 0x0403;
/// TLS 1.3 SignatureScheme `ecdsa_secp384r1_sha384`.
pub const ECDSA_SECP384R1_SHA384: u16 = 0x0503;

impl ServerKey {
    /// Check the server's handshake signature: `signature` (an ECDSA-Sig-Value, DER) over
    /// `message` with the TLS 1.3 SignatureScheme `scheme`, whose curve must be the key's
    /// ([`ECDSA_SECP256R1_SHA256`] for P-256, [`ECDSA_SECP384R1_SHA384`] for P-384, as RFC 8446
    /// §4.2.3 pairs them). Another scheme is [`Reason::UnsupportedAlgorithm`], a signature that
    /// does not verify [`Reason::BadSignature`].
    pub fn verify_signature(
        &self,
        verifier: &dyn SignatureVerifier,
        scheme: u16,
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), VerifyError> {
        let point = self.point.get(..usize::from(self.len)).ok_or_else(malformed)?;
        let (key, alg) = match (scheme, self.len) {
            (ECDSA_SECP256R1_SHA256, 65) => {
                (IssuerKey::P256(point), SignatureAlgorithm::EcdsaSha256)
            }
            (ECDSA_SECP384R1_SHA384, 97) => {
                (IssuerKey::P384(point), SignatureAlgorithm::EcdsaSha384)
            }
            _ => return Err(VerifyError::new(Reason::UnsupportedAlgorithm)),
        };
        match signature_verdict(verifier, key, alg, message, signature, CA_RSA_MIN_BITS) {
            Verdict::Valid => Ok(()),
            Verdict::Invalid => Err(VerifyError::new(Reason::BadSignature)),
            Verdict::Unsupported => Err(VerifyError::new(Reason::UnsupportedAlgorithm)),
        }
    }
}

/// Check a TLS server's certificate chain as sent in its Certificate message (`chain`: the leaf
/// first, then intermediates in any order, unused ones ignored) against CAs parsed beforehand
/// ([`TrustedCas`], [`Anchor`]), for the host the client dialed, at `now`: parse → path and
/// signatures (as for an issued certificate) → time → the dialed IP or DNS name among the SANs
/// (never the CN) → serverAuth in extendedKeyUsage, digitalSignature in keyUsage, no unknown
/// critical extension → a P-256 (or P-384) key; the first failing step decides the [`Reason`].
/// The result holds the key the handshake signature must verify with.
pub fn verify_server_der(
    verifier: &dyn SignatureVerifier,
    chain: &[&[u8]],
    cas: &[Anchor<'_>],
    name: &ServerName<'_>,
    now: i64,
) -> Result<ServerKey, VerifyError> {
    let (leaf, intermediates) = chain.split_first().ok_or_else(malformed)?;
    if intermediates.len() > MAX_INTERMEDIATES || cas.len() > MAX_CAS {
        return Err(malformed());
    }
    // 1. Parse (the leaf's issuer Name is checked only if no path is found, as for issued
    //    certificates).
    let mut ignored = None;
    let leaf = Cert::parse_leaf(leaf, "", &mut ignored)?;
    // 2. Path and signatures.
    find_path(verifier, &leaf, &oid::SERVER_AUTH, intermediates, CaSet::Parsed(cas), now)
        .map_err(|e| no_path(leaf.issuer, e))?;
    check_server_leaf(&leaf, name, now)
}

/// Steps 3–6 on the leaf.
#[inline(never)]
fn check_server_leaf(
    leaf: &Cert<'_>,
    name: &ServerName<'_>,
    now: i64,
) -> Result<ServerKey, VerifyError> {
    // 3. Time.
    leaf.check_time(now)?;
    // 4. Name.
    let mismatch = VerifyError::field(Reason::SubjectMismatch, "san");
    if !name.matched_by(leaf.ext.san.ok_or(mismatch)?)? {
        return Err(mismatch);
    }
    // 5. Usage.
    if leaf.ext.unknown_critical {
        return Err(VerifyError::field(Reason::WrongUsage, "criticalExtension"));
    }
    let eku_ok = match leaf.ext.eku {
        Some(list) => oid_list_contains(list, &oid::SERVER_AUTH)?,
        None => false,
    };
    if !eku_ok {
        return Err(VerifyError::field(Reason::WrongUsage, "extendedKeyUsage"));
    }
    if leaf.ext.key_usage.is_some_and(|ku| ku & KU_DIGITAL_SIGNATURE == 0) {
        return Err(VerifyError::field(Reason::WrongUsage, "keyUsage"));
    }
    // 6. Key.
    let point = match leaf.key {
        IssuerKey::P256(p) if p.len() == 65 && p.first() == Some(&4) => p,
        IssuerKey::P384(p) if cfg!(feature = "p384") && p.len() == 97 && p.first() == Some(&4) => p,
        _ => return Err(VerifyError::new(Reason::UnsupportedAlgorithm)),
    };
    let mut key = ServerKey { point: [0; 97], len: point.len() as u8, not_after: leaf.not_after };
    key.point.get_mut(..point.len()).ok_or_else(malformed)?.copy_from_slice(point);
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        assert_eq!(ServerName::parse("127.0.0.1"), Ok(ServerName::Ip([127, 0, 0, 1].into())));
        assert_eq!(ServerName::parse("[::1]"), Ok(ServerName::Ip("::1".parse().unwrap())));
        assert_eq!(ServerName::parse("Kube-API.example."), Ok(ServerName::Dns("Kube-API.example")));
        for bad in ["", ".", "a..b", "-a", "a-", "a_b", "[1.2.3.4", "a b", &"a".repeat(64)] {
            assert_eq!(ServerName::parse(bad), Err(Error::InvalidDnsName), "{bad:?}");
        }
    }

    #[test]
    fn wildcards_match_one_label() {
        assert!(dns_matches(b"*.example.com", b"api.EXAMPLE.com"));
        assert!(dns_matches(b"API.example.com.", b"api.example.com"));
        assert!(!dns_matches(b"*.example.com", b"example.com"));
        assert!(!dns_matches(b"*.example.com", b"a.b.example.com"));
        assert!(!dns_matches(b"*.", b"a."));
        assert!(!dns_matches(b"a*.example.com", b"ab.example.com"));
        assert!(!dns_matches(b"*.example.com", b".example.com"));
    }
}
