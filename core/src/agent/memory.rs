//! The agent's memory: one block the caller owns and sizes, carved into the regions each
//! sub-machine owns. The caller picks the [`Capacities`] (the hosts' defaults are
//! [`Capacities::HOST`]; a microcontroller picks what it can prove enough), asks how many bytes
//! they take ([`Capacities::memory_len`]) and hands the agent that block ([`super::Agent::new`]).
//! The rules between the capacities are checked there, by [`Capacities::check`], never left to
//! prose: a capacity too small for what the agent must hold in it is
//! [`Error::Capacity`] naming it, before anything runs. At run time, anything larger than its
//! region is a typed [`Error::TooLarge`], never a truncation.

use crate::buf::{Bytes, Carver, Text};
use crate::csr::{MAX_NODE_NAME, MAX_SANS};
use crate::error::{Capacity, Error, Result};
use crate::key::SEC1_PEM_LEN;

/// How much the agent keeps of each kind of data (bytes, but for [`Capacities::serving_dns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacities {
    /// The work buffer: the largest request body, response body or single watch event (the CSR
    /// engine's and discovery's; also the scratch the agent validates certificates in).
    pub response: usize,
    /// Each CA bundle and certificate chain kept (PEM): the node kubeconfig's CA, the bootstrap
    /// kubeconfig's, the configured CA bundle, the current client chain, the issued chain.
    pub pem: usize,
    /// The current client key (PEM), or its reference when a device holds it.
    pub key: usize,
    /// What one file step writes: a pair (chain and key), a kubeconfig, the CA file.
    pub file: usize,
    /// Each path.
    pub path: usize,
    /// The serving certificate's DNS names (a count, at most [`MAX_SANS`]); `0`: a serving
    /// certificate with IP addresses only.
    pub serving_dns: usize,
}

/// The paths the agent keeps: seven of its configuration, eight the loader finds, three of the
/// file plan.
pub(crate) const PATHS: usize = 7 + 8 + 3;
/// The CA bundles and chains the agent keeps: four the loader reads, the issued chain.
pub(crate) const PEMS: usize = 5;
/// Room for one DNS name and its separator.
const DNS_SLOT: usize = MAX_NODE_NAME + 1;
/// The smallest work buffer: a create request's body and a watch event carrying one
/// certificate fit in it.
pub const MIN_RESPONSE: usize = 2048;
/// The smallest CA bundle or chain region: one P-256 certificate.
pub const MIN_PEM: usize = 1024;
/// The smallest path region: room for the cert dir's file names under a short directory.
pub const MIN_PATH: usize = 48;
/// What the work buffer must hold for the CA refresh ([`super::Config::ca_refresh_secs`]): a
/// decoded answer and two certificates' DER side by side.
pub const CA_REFRESH_RESPONSE: usize = 3 * 4096;

impl Capacities {
    /// The hosts' capacities (the CLI, the C ABI's `kubeboot_agent_new`, the Go agent): every
    /// limit of the kubelet's inputs comfortably met.
    pub const HOST: Capacities = Capacities {
        response: 32 * 1024,
        pem: 16 * 1024,
        key: 4096,
        file: 16 * 1024 + 4096 + 8 * 1024,
        path: 1024,
        serving_dns: MAX_SANS,
    };

    /// How many bytes of memory these capacities take (saturating: absurd capacities never
    /// overflow; [`Capacities::check`] refuses them).
    pub const fn memory_len(&self) -> usize {
        let paths = self.path.saturating_mul(PATHS);
        let pems = self.pem.saturating_mul(PEMS);
        let dns = self.serving_dns.saturating_mul(DNS_SLOT);
        paths
            .saturating_add(pems)
            .saturating_add(self.key)
            .saturating_add(self.file)
            .saturating_add(self.response)
            .saturating_add(dns)
    }

    /// The rules between the capacities: each one large enough for the smallest thing it must
    /// hold, and `file` for a pair (the chain and the key). [`Error::Capacity`] names the first
    /// one that is not.
    pub fn check(&self) -> Result<()> {
        let too_small = |c, ok: bool| if ok { Ok(()) } else { Err(Error::Capacity(c)) };
        too_small(Capacity::Response, self.response >= MIN_RESPONSE)?;
        too_small(Capacity::Pem, self.pem >= MIN_PEM)?;
        too_small(Capacity::Key, self.key >= SEC1_PEM_LEN)?;
        too_small(Capacity::Path, self.path >= MIN_PATH)?;
        too_small(Capacity::ServingDns, self.serving_dns <= MAX_SANS)?;
        too_small(Capacity::File, self.file >= self.pem.saturating_add(self.key))?;
        too_small(Capacity::Memory, self.memory_len() < usize::MAX)
    }
}

impl Default for Capacities {
    fn default() -> Self {
        Capacities::HOST
    }
}

/// The regions of one agent's memory, by owner.
pub(crate) struct Regions<'m> {
    /// The configuration's seven paths and its DNS names.
    pub(crate) settings: [Text<'m>; 7],
    pub(crate) dns: Text<'m>,
    /// The loader's eight paths, its four PEM regions and the client key.
    pub(crate) loader_paths: [Text<'m>; 8],
    pub(crate) loader_pems: [Bytes<'m>; 4],
    pub(crate) key: Bytes<'m>,
    /// The file plan's three paths.
    pub(crate) plan: [Text<'m>; 3],
    /// The issued chain (the engine's).
    pub(crate) cert: &'m mut [u8],
    /// What a file step writes.
    pub(crate) out: Bytes<'m>,
    /// The work buffer.
    pub(crate) work: &'m mut [u8],
}

impl<'m> Regions<'m> {
    /// Carve `mem` for `caps` ([`Capacities::check`]ed, and [`Error::Capacity`] with
    /// [`Capacity::Memory`] if `mem` is shorter than [`Capacities::memory_len`]).
    pub(crate) fn carve(mem: &'m mut [u8], caps: &Capacities) -> Result<Self> {
        caps.check()?;
        if mem.len() < caps.memory_len() {
            return Err(Error::Capacity(Capacity::Memory));
        }
        let mut c = Carver::new(mem);
        let p = caps.path;
        Ok(Regions {
            settings: core::array::from_fn(|_| c.text(p)),
            dns: c.text(caps.serving_dns * DNS_SLOT),
            loader_paths: core::array::from_fn(|_| c.text(p)),
            loader_pems: core::array::from_fn(|_| c.bytes(caps.pem)),
            key: c.bytes(caps.key),
            plan: core::array::from_fn(|_| c.text(p)),
            cert: c.take(caps.pem),
            out: c.bytes(caps.file),
            work: c.take(caps.response),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_the_capacity() {
        assert_eq!(Capacities::HOST.check(), Ok(()));
        let small = |f: fn(&mut Capacities)| {
            let mut c = Capacities::HOST;
            f(&mut c);
            c.check()
        };
        assert_eq!(small(|c| c.response = 100), Err(Error::Capacity(Capacity::Response)));
        assert_eq!(small(|c| c.pem = 10), Err(Error::Capacity(Capacity::Pem)));
        assert_eq!(small(|c| c.key = 10), Err(Error::Capacity(Capacity::Key)));
        assert_eq!(small(|c| c.path = 10), Err(Error::Capacity(Capacity::Path)));
        assert_eq!(small(|c| c.serving_dns = 99), Err(Error::Capacity(Capacity::ServingDns)));
        assert_eq!(small(|c| c.file = c.pem), Err(Error::Capacity(Capacity::File)));
        assert_eq!(small(|c| c.response = usize::MAX), Err(Error::Capacity(Capacity::Memory)));
    }

    #[test]
    fn carving_fills_the_block_exactly() {
        let caps = Capacities {
            response: 2048,
            pem: 1024,
            key: 512,
            file: 2048,
            path: 64,
            serving_dns: 1,
        };
        let mut mem = [0u8; 12_000];
        assert_eq!(caps.memory_len(), 64 * 18 + 1024 * 5 + 512 + 2048 + 2048 + 254);
        let r = Regions::carve(&mut mem[..caps.memory_len()], &caps).unwrap();
        assert_eq!(r.work.len(), 2048);
        assert_eq!(r.out.capacity(), 2048);
        assert_eq!(r.dns.capacity(), 254);
        assert!(r.settings.iter().all(|t| t.capacity() == 64));
        let short = caps.memory_len() - 1;
        assert_eq!(
            Regions::carve(&mut mem[..short], &caps).err(),
            Some(Error::Capacity(Capacity::Memory))
        );
    }
}
