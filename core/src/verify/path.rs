//! Path search: a depth-first search from the leaf through the intermediates to a CA.

use super::*;

/// What the certificates above the leaf are checked against (see [`Cert::chain_constraint`]).
#[derive(Clone, Copy)]
pub(super) struct Leaf<'a> {
    /// The extendedKeyUsage purpose the leaf is validated for.
    pub(super) purpose: &'a ObjectIdentifier,
    /// The leaf's subjectAltName contents.
    pub(super) san: Option<&'a [u8]>,
}

pub(super) struct Search<'s> {
    pub(super) verifier: &'s dyn SignatureVerifier,
    pub(super) leaf: Leaf<'s>,
    pub(super) intermediates: &'s [&'s [u8]],
    pub(super) cas: CaSet<'s>,
    /// With [`CaSet::Der`]: the first CA, parsed.
    pub(super) first_ca: Option<Cert<'s>>,
    pub(super) now: i64,
    pub(super) budget: usize,
    /// Subject DER of the CA the path ended at.
    pub(super) ca_subject: &'s [u8],
    /// Indices (into `intermediates`) of the intermediates on the current path.
    pub(super) path: [usize; MAX_DEPTH],
    pub(super) time_error: Option<VerifyError>,
    pub(super) bad_signature: bool,
    pub(super) unsupported: bool,
    pub(super) constraint: Option<&'static str>,
}

impl Search<'_> {
    /// Find a CA for `child`, which sits `depth` intermediates above the leaf. Returns the CA
    /// index and the number of intermediates on the path.
    pub(super) fn extend(
        &mut self,
        child: &Cert<'_>,
        depth: usize,
    ) -> Result<Option<(usize, usize)>, VerifyError> {
        if let Some(i) = self.find_ca(child, depth)? {
            return Ok(Some((i, depth)));
        }
        if depth >= MAX_DEPTH {
            return Ok(None);
        }
        for (j, der) in self.intermediates.iter().enumerate() {
            if self.path.get(..depth).is_some_and(|p| p.contains(&j)) {
                continue;
            }
            let inter = Cert::parse(der)?;
            if inter.subject != child.issuer {
                continue;
            }
            if let Some(why) = inter.issuer_constraint(depth, &self.leaf) {
                self.constraint.get_or_insert(why);
                continue;
            }
            if !self.check(&inter, child) {
                continue;
            }
            if let Err(e) = inter.check_time(self.now) {
                self.time_error.get_or_insert(e);
                continue;
            }
            if let Some(slot) = self.path.get_mut(depth) {
                *slot = j;
            }
            if let Some(found) = self.extend(&inter, depth + 1)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// A CA of the bundle that issued `child` (`depth` intermediates above the leaf) and is
    /// valid now. Kept out of line so the CA's parse does not sit in every recursion frame.
    #[inline(never)]
    pub(super) fn find_ca(
        &mut self,
        child: &Cert<'_>,
        depth: usize,
    ) -> Result<Option<usize>, VerifyError> {
        let count = match self.cas {
            CaSet::Der(cas) => cas.len(),
            CaSet::Parsed(cas) => cas.len(),
        };
        for i in 0..count {
            let parsed;
            // Anchors are borrowed, not copied.
            let ca: &Cert<'_> = match self.cas {
                CaSet::Parsed(cas) => match cas.get(i) {
                    Some(anchor) => &anchor.cert,
                    None => break,
                },
                CaSet::Der(cas) => {
                    parsed = match self.first_ca {
                        Some(ca) if i == 0 => ca,
                        _ => Cert::parse(cas.get(i).ok_or_else(malformed)?)?,
                    };
                    &parsed
                }
            };
            if ca.subject != child.issuer {
                continue;
            }
            if ca.ext.path_len.is_some_and(|max| depth > max as usize) {
                self.constraint.get_or_insert("issuer.pathLenConstraint");
                continue;
            }
            if let Some(why) = ca.chain_constraint(&self.leaf) {
                self.constraint.get_or_insert(why);
                continue;
            }
            if !self.check(ca, child) {
                continue;
            }
            if let Err(e) = ca.check_time(self.now) {
                self.time_error.get_or_insert(e);
                continue;
            }
            // Kept for `Verified::ca_subject` (saves parsing the CA a third time).
            self.ca_subject = ca.subject;
            return Ok(Some(i));
        }
        Ok(None)
    }

    /// Verify `child`'s signature with `issuer`'s key, within the budget.
    #[inline(never)]
    pub(super) fn check(&mut self, issuer: &Cert<'_>, child: &Cert<'_>) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        match signature_verdict(
            self.verifier,
            issuer.key,
            child.sig_alg,
            child.tbs,
            child.signature,
            CA_RSA_MIN_BITS,
        ) {
            Verdict::Valid => true,
            Verdict::Invalid => {
                self.bad_signature = true;
                false
            }
            Verdict::Unsupported => {
                self.unsupported = true;
                false
            }
        }
    }

    pub(super) fn failure(&self) -> VerifyError {
        if let Some(e) = self.time_error {
            e
        } else if self.bad_signature {
            VerifyError::new(Reason::BadSignature)
        } else if self.unsupported {
            VerifyError::new(Reason::UnsupportedAlgorithm)
        } else if let Some(field) = self.constraint {
            VerifyError::field(Reason::Untrusted, field)
        } else {
            VerifyError::new(Reason::Untrusted)
        }
    }
}
