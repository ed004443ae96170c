//! The probe: ask the apiserver who it takes a certificate for, with one `SelfSubjectReview`
//! (`authentication.k8s.io/v1`, GA since v1.28) over mutual TLS with that certificate. The
//! server's answer is what the agent believes when its own judgement cannot be trusted:
//!
//! * the node's current certificate looks **expired** to the agent: if the apiserver still takes
//!   it as `system:node:<name>`, the agent's clock is ahead of the world (a step forward, an RTC
//!   set wrong), not the certificate: the node keeps its identity
//!   ([`crate::Error::ClockUntrusted`]) and waits for its clock; only a refusal (401) makes it
//!   fall back to the bootstrap credential;
//! * an **issued certificate that does not chain** to the kubeconfig's CA (no CA bundle
//!   configured; a cluster whose client-certificate signer is not the CA its apiserver serves
//!   with): if the apiserver takes the new pair as the node, the signer is the cluster's and the
//!   pair becomes current (the kubelet checks no chain at all); a refusal keeps it from ever
//!   being current, and names `--ca-bundle`.

use sha2::{Digest, Sha256};

use super::{Connection, HttpRequest, Method, RequestKind};
use crate::csr::NODES_GROUP;
use crate::json::{self, Value};

/// Why the apiserver is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Doubt {
    /// The current client certificate, which the clock calls expired.
    Expired,
    /// The current client certificate, which chains to no CA the agent has (and no bundle is
    /// configured) though every other check passes.
    Unanchored,
    /// The pair just issued, the same way unanchored, before it becomes current.
    Issued,
}

/// The certificates (SHA-256 of the leaf's DER) the apiserver took as the node though they
/// chain to no CA the agent has: the record later judgements use, so that a proven pair is not
/// asked about again. The current pair and the one replacing it.
pub(super) struct Proven {
    leaves: [Option<[u8; 32]>; 2],
}

impl Proven {
    pub(super) const fn new() -> Self {
        Proven { leaves: [None; 2] }
    }

    /// Remember `leaf` (the oldest record goes).
    pub(super) fn record(&mut self, leaf: [u8; 32]) {
        if !self.contains(&leaf) {
            self.leaves = [Some(leaf), self.leaves[0]];
        }
    }

    pub(super) fn contains(&self, leaf: &[u8; 32]) -> bool {
        self.leaves.iter().any(|l| l.as_ref() == Some(leaf))
    }

    /// Forget everything (a new start).
    pub(super) fn clear(&mut self) {
        self.leaves = [None; 2];
    }
}

/// SHA-256 of the first certificate of `chain_pem` (DER), decoded in `scratch`.
pub(super) fn leaf_digest(chain_pem: &[u8], scratch: &mut [u8]) -> Option<[u8; 32]> {
    let der = crate::pem::decode_first(chain_pem, "CERTIFICATE", scratch).ok()?;
    Some(Sha256::digest(der).into())
}

/// The path of the review.
pub const SELF_SUBJECT_REVIEWS_PATH: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
/// Its body.
pub(super) const SELF_SUBJECT_REVIEW: &[u8] =
    br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;

/// What the apiserver said of the certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// It took the certificate as `system:node:<name>` in `system:nodes`.
    TheNode,
    /// It refused it (401), or took it for someone else (another user, no `system:nodes`).
    Refused,
    /// Another answer (403 without a user, a 5xx, 429, something unreadable): it said nothing
    /// about the certificate.
    Unknown,
}

/// The review request over `connection` (which presents the certificate to prove).
pub(super) fn request<'a>(
    connection: Connection<'a>,
    user_agent: &'a str,
    now: i64,
) -> HttpRequest<'a> {
    HttpRequest {
        connection,
        kind: RequestKind::SelfSubjectReview,
        method: Method::Post,
        path: SELF_SUBJECT_REVIEWS_PATH,
        authorization: None,
        content_type: Some("application/json"),
        accept: "application/json",
        body: SELF_SUBJECT_REVIEW,
        user_agent,
        give_up_at: now.saturating_add(10),
        idle_at: None,
    }
}

/// What an answer of `status` with `body` says of the certificate for `node`.
pub(super) fn answer(status: u16, body: &[u8], node: &str) -> Answer {
    match status {
        401 => Answer::Refused,
        200 | 201 => match reviewed(body, node) {
            Some((true, true)) => Answer::TheNode,
            Some(_) => Answer::Refused,
            None => Answer::Unknown,
        },
        _ => Answer::Unknown,
    }
}

/// `status.userInfo` of a review: (the username is `system:node:<node>`, it is in
/// `system:nodes`); `None` when there is no user.
fn reviewed(body: &[u8], node: &str) -> Option<(bool, bool)> {
    let info = user_info(body)?;
    let name = info.get("username").ok()??.as_str()?;
    let mut buf = [0u8; crate::csr::COMMON_NAME_CAP];
    let is_node = name
        .decode_into(&mut buf)
        .is_ok_and(|n| n.strip_prefix(crate::csr::NODE_USER_PREFIX) == Some(node));
    let in_nodes = match info.get("groups").ok()? {
        Some(Value::Array(a)) => a
            .items()
            .any(|g| g.ok().and_then(|g| g.as_str()).is_some_and(|g| g.eq_str(NODES_GROUP))),
        _ => false,
    };
    Some((is_node, in_nodes))
}

fn user_info(body: &[u8]) -> Option<json::Object<'_>> {
    let doc = json::parse(body).ok()?;
    let status = doc.as_object()?.get("status").ok()??.as_object()?;
    status.get("userInfo").ok()??.as_object()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &[u8] = br#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"status":{"userInfo":{"username":"system:node:node-1","groups":["system:nodes","system:authenticated"],"extra":{"authentication.kubernetes.io/credential-id":["X509SHA256=ab"]}}}}"#;

    #[test]
    fn the_node_and_nobody_else() {
        assert_eq!(answer(201, NODE, "node-1"), Answer::TheNode);
        assert_eq!(answer(200, NODE, "node-1"), Answer::TheNode);
        // Another node's certificate, another user, no system:nodes.
        assert_eq!(answer(201, NODE, "node-2"), Answer::Refused);
        let anon = br#"{"status":{"userInfo":{"username":"system:anonymous","groups":["system:unauthenticated"]}}}"#;
        assert_eq!(answer(201, anon, "node-1"), Answer::Refused);
        let no_group =
            br#"{"status":{"userInfo":{"username":"system:node:node-1","groups":["x"]}}}"#;
        assert_eq!(answer(201, no_group, "node-1"), Answer::Refused);
        assert_eq!(answer(401, b"{}", "node-1"), Answer::Refused);
        // Nothing said of the certificate.
        for (status, body) in [(403, &b"{}"[..]), (500, b"{}"), (429, b""), (201, b"not json")] {
            assert_eq!(answer(status, body, "node-1"), Answer::Unknown, "{status}");
        }
        assert_eq!(answer(201, br#"{"status":{}}"#, "node-1"), Answer::Unknown);
    }
}
