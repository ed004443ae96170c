//! Judging a certificate of the node: the kubelet's `isClientConfigStillValid` plus client-go's
//! `certSatisfiesTemplate` and the chain to the CA, as a [`Verdict`] with the typed reason and
//! the file it is about; the verdict in the metrics and as a `step=credentials` line. Pure: what
//! is judged is given, nothing is read.

use core::net::IpAddr;

use super::CertStatus;
use super::config::Settings;
use super::event::Events;
use super::flow::detail;
use super::probe::{Proven, leaf_digest};
use crate::csr::{MAX_NODE_NAME, MAX_SANS, Profile};
use crate::error::{Error, Reason, StoreErrorKind, VerifyError};
use crate::key::NodeKey;
use crate::metrics::Metrics;
use crate::verify::{self, Expected};
use crate::{pem, rotation};

/// The verdict on one certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Unknown,
    Valid(CertStatus),
    Unusable(Error, Part),
    /// A client certificate that passes every check but the chain: it chains to no CA the
    /// agent has, no CA bundle is configured, and the apiserver has not yet been asked whether
    /// it takes the pair as the node ([`super::probe::Doubt::Unanchored`]).
    Unanchored(CertStatus),
}

impl Verdict {
    pub(super) fn valid(self) -> Option<CertStatus> {
        if let Verdict::Valid(c) = self { Some(c) } else { None }
    }
}

/// Which file made a verdict unusable (named as in the events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Kubeconfig,
    CertificateAuthority,
    ClientCertificate,
    ClientKey,
    ServingCertificate,
}

impl Part {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Part::Kubeconfig => "kubeconfig",
            Part::CertificateAuthority => "certificate-authority",
            Part::ClientCertificate => "client-certificate",
            Part::ClientKey => "client-key",
            Part::ServingCertificate => "serving-certificate",
        }
    }
}

impl core::fmt::Display for Part {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The key a certificate must match.
pub(super) enum Key<'a> {
    /// A key PEM (or a pair file holding one).
    Pem(&'a [u8]),
    /// The public point a device answered for its key.
    Point([u8; 65]),
}

/// What a certificate is judged against besides its own bytes.
pub(super) struct Against<'a> {
    /// The CA bundle it must chain to.
    pub(super) ca: &'a [u8],
    /// Its key.
    pub(super) key: Key<'a>,
    /// The serving profile (else the client's).
    pub(super) serving: bool,
    /// A chain to none of `ca` may be proven by the apiserver (a client certificate, no CA
    /// bundle configured): such a certificate is [`Verdict::Unanchored`], or valid when it is
    /// in `proven`.
    pub(super) may_prove: bool,
    /// The certificates the apiserver took as the node.
    pub(super) proven: &'a Proven,
}

/// Judge the certificate chain `chain` (PEM) against `against` for the node `node` (learnt from
/// the certificate's subject when empty) with the settings' SANs, at `now`; `work` is scratch.
#[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
pub(super) fn judge(
    chain: &[u8],
    against: Against<'_>,
    node: &mut heapless::String<MAX_NODE_NAME>,
    s: &Settings<'_>,
    work: &mut [u8],
    now: i64,
) -> Verdict {
    let serving = against.serving;
    let what = if serving { Part::ServingCertificate } else { Part::ClientCertificate };
    if !pem::blocks(chain).any(|b| b.is_ok_and(|b| b.label == "CERTIFICATE")) {
        return Verdict::Unusable(Error::Store(StoreErrorKind::NoCertificates), what);
    }
    let spki = match against.key {
        // The device's key: its public point is the device's answer.
        Key::Point(p) => crate::key::spki_from_point(&p),
        Key::Pem(key) => match NodeKey::from_pem(key) {
            Ok(k) => k.public_key_spki(),
            Err(e) => return Verdict::Unusable(e, if serving { what } else { Part::ClientKey }),
        },
    };
    if node.is_empty() {
        let name = pem::decode_first(chain, "CERTIFICATE", work)
            .ok()
            .and_then(verify::subject_node_name)
            .and_then(|n| heapless::String::<MAX_NODE_NAME>::try_from(n).ok());
        match name {
            Some(n) if crate::csr::validate_node_name(&n).is_ok() => *node = n,
            _ => {
                let e = VerifyError::field(Reason::SubjectMismatch, "subject.CN");
                return Verdict::Unusable(Error::Verify(e), what);
            }
        }
    }
    if against.ca.is_empty() {
        return Verdict::Unusable(Error::NoCa, what);
    }
    // Check mode without configured SANs: the certificate's own are taken as requested.
    let mut own = OwnSans::new();
    let mut refs = heapless::Vec::<&str, MAX_SANS>::new();
    let ips: &[IpAddr] = if serving && !s.serving {
        own.read(chain, work);
        own.borrow(&mut refs);
        &own.ips
    } else {
        s.dns_names(&mut refs);
        &s.ips
    };
    let profile = if serving { Profile::Serving { dns: &refs, ips } } else { Profile::Client };
    let expected = Expected { node_name: node, public_key: &spki, profile };
    let status = |v: verify::Verified| CertStatus {
        not_before: v.not_before,
        not_after: v.not_after,
        rotation_deadline: rotation::rotation_deadline(
            v.not_before,
            v.not_after,
            cert_jitter(s.seed, chain),
        ),
    };
    match verify::verify_issued_with(s.verifier(), chain, against.ca, &expected, now, work) {
        Ok(v) => Verdict::Valid(status(v)),
        Err(Error::Verify(e)) if e.reason == Reason::Untrusted && against.may_prove => {
            match verify::verify_issued_unanchored(chain, &expected, now, work) {
                Ok(v) if leaf_digest(chain, work).is_some_and(|d| against.proven.contains(&d)) => {
                    Verdict::Valid(status(v))
                }
                Ok(v) => Verdict::Unanchored(status(v)),
                Err(_) => Verdict::Unusable(Error::Verify(e), what),
            }
        }
        Err(Error::BufferTooSmall { .. }) => Verdict::Unusable(Error::TooLarge, what),
        Err(e) => Verdict::Unusable(e, what),
    }
}

/// The verdict on the client (or the serving) certificate: in the metrics, and as a line.
#[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
pub(super) fn report(ev: &mut Events, metrics: &mut Metrics, serving: bool, v: Verdict) {
    let kind = if serving { "serving" } else { "client" };
    let not_after = match v {
        Verdict::Valid(c) | Verdict::Unanchored(c) => Some(c.not_after),
        Verdict::Unusable(..) => None,
        Verdict::Unknown => return,
    };
    if serving {
        metrics.serving_not_after = not_after;
    } else {
        metrics.client_not_after = not_after;
    }
    let line = match v {
        Verdict::Valid(c) => ev
            .ev("credentials")
            .kv("kind", kind)
            .kv("state", "valid")
            .time("not_after", c.not_after)
            .time("rotation_deadline", c.rotation_deadline)
            .done(),
        Verdict::Unusable(e, what) => ev
            .ev("credentials")
            .kv("kind", kind)
            .kv("state", "unusable")
            .kv("reason", e.name())
            .kv("what", what.as_str())
            .kv("detail", &detail(format_args!("{e}")))
            .done(),
        Verdict::Unanchored(c) => ev
            .ev("credentials")
            .kv("kind", kind)
            .kv("state", "unanchored")
            .time("not_after", c.not_after)
            .kv("detail", "it chains to no CA of the kubeconfig: the apiserver is asked")
            .done(),
        Verdict::Unknown => return,
    };
    ev.push(line);
}

/// A serving certificate's own SANs (check mode without configured ones).
struct OwnSans {
    dns: heapless::Vec<heapless::String<MAX_NODE_NAME>, MAX_SANS>,
    ips: heapless::Vec<IpAddr, MAX_SANS>,
}

impl OwnSans {
    fn new() -> Self {
        OwnSans { dns: heapless::Vec::new(), ips: heapless::Vec::new() }
    }

    #[inline(never)] // its locals stay out of validate's frame
    fn read(&mut self, pair: &[u8], scratch: &mut [u8]) {
        let Ok(der) = pem::decode_first(pair, "CERTIFICATE", scratch) else { return };
        let (dns, ips) = (&mut self.dns, &mut self.ips);
        let _ = verify::for_each_san(der, |san| match san {
            verify::San::Dns(d) => {
                if let Ok(d) = heapless::String::try_from(d) {
                    let _ = dns.push(d);
                }
            }
            verify::San::Ip(ip) => {
                let _ = ips.push(ip);
            }
        });
    }

    fn borrow<'s>(&'s self, refs: &mut heapless::Vec<&'s str, MAX_SANS>) {
        crate::csr::borrow_names(&self.dns, refs);
    }
}

/// A jitter value that depends only on the seed and the certificate, so that every evaluation
/// of the same certificate finds the same rotation deadline (the kubelet draws it once per
/// certificate).
pub(super) fn cert_jitter(seed: u64, cert_pem: &[u8]) -> u32 {
    // FNV-1a over the PEM, mixed with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in cert_pem {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    crate::engine::Jitter(h).next_u32()
}
