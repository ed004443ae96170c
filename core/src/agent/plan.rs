//! The file plan: the crash-safe order of the file steps that make an issued certificate the
//! node's (write the pair, swap `-current.pem`, write the CA file and the node kubeconfig, have
//! the replaced device key destroyed, remove the key cache), the cleanup after a failed attempt
//! (the key cache, an unused device key, a cert dir this attempt created), the sweep of a key
//! cache a crash left beside valid credentials, and writing a discovered bootstrap kubeconfig.
//! A store ends by pruning the pairs it replaced, so the cert dir stays bounded.
//! Each [`FileStep`] says what crash-safety it must give; the plan's order makes any crash leave
//! working credentials. It owns the three paths of a store.

use super::config::Settings;
use super::event::Events;
use super::flow::{Detail, detail, timestamp};
use super::loader::Cluster;
use super::{FileStep, Kind, PREFIX_CLIENT, PREFIX_SERVER, path};
use crate::buf::{Bytes, Text};
use crate::error::{Error, Result, StoreErrorKind};
use crate::kubeconfig::{NodeKubeconfig, write_node_kubeconfig};

/// What a store does after the pair is current.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Store {
    /// Write the CA file and the node kubeconfig (after a bootstrap, or a rotation of a
    /// kubeconfig that does not name `-current.pem`).
    pub(super) kubeconfig: bool,
    /// Have the replaced device key destroyed.
    pub(super) destroy_old: bool,
    /// Remove the key cache (a bootstrap).
    pub(super) remove_cache: bool,
}

/// What a cleanup undoes, in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Cleanup {
    /// The key cache this attempt wrote.
    pub(super) remove_cache: bool,
    /// The device key this attempt made.
    pub(super) destroy_new: bool,
    /// The cert dir this attempt created (if empty).
    pub(super) remove_dir: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    WritePair,
    Swap,
    WriteCa,
    WriteKubeconfig,
    DestroyOld,
    RemoveCache,
    Prune,
    Stored,
    CleanCache,
    DestroyNew,
    RemoveDir,
    CleanedUp,
    Sweep,
    Swept,
    WriteBootstrap,
    BootstrapWritten,
    Failed,
}

/// What the plan needs next, or where it got to.
pub(super) enum Next<'a> {
    File(FileStep<'a>),
    /// Ask the key machine to destroy the replaced device key.
    DestroyOld,
    /// Ask the key machine to destroy the key this attempt made.
    DestroyNew,
    /// The new pair is stored and current.
    Stored,
    /// The failed attempt is cleaned up.
    CleanedUp,
    /// The stale key cache is gone (or was not there).
    Swept,
    /// The discovered bootstrap kubeconfig is written.
    BootstrapWritten,
    Failed,
}

/// What the plan works with besides its own state.
pub(super) struct PlanCx<'a, 'm> {
    pub(super) s: &'a Settings<'m>,
    pub(super) ev: &'a mut Events,
    /// What the step writes (secret when it is a pair or a key).
    pub(super) out: &'a mut Bytes<'m>,
    pub(super) kind: Kind,
    /// The cluster the node kubeconfig is written for: the bootstrap kubeconfig's after a
    /// bootstrap, the node kubeconfig's after a rotation.
    pub(super) cluster: &'a Cluster<'m>,
}

/// The file plan (see the module docs).
pub(super) struct Plan<'m> {
    st: St,
    /// The new pair file, `-current.pem` and `-updated.pem`.
    paths: [Text<'m>; 3],
    /// The store's prefix (`kubelet-client`, `kubelet-server`).
    prefix: &'static str,
    store: Store,
    cleanup: Cleanup,
    failure: Option<(Error, Detail)>,
}

impl<'m> Plan<'m> {
    pub(super) fn new(paths: [Text<'m>; 3]) -> Self {
        Plan {
            st: St::Idle,
            paths,
            prefix: PREFIX_CLIENT,
            store: Store { kubeconfig: false, destroy_old: false, remove_cache: false },
            cleanup: Cleanup { remove_cache: false, destroy_new: false, remove_dir: false },
            failure: None,
        }
    }

    /// Every field as [`Plan::new`] has it.
    pub(super) fn reset(&mut self) {
        let Plan { st, paths, prefix, store, cleanup, failure } = self;
        *st = St::Idle;
        for p in paths {
            p.clear();
        }
        *prefix = PREFIX_CLIENT;
        *store = Store::default();
        *cleanup = Cleanup::default();
        *failure = None;
    }

    /// What it needs now.
    pub(super) fn next<'a>(&'a self, s: &'a Settings<'_>, out: &'a [u8]) -> Next<'a> {
        let [pair, current, updated] = &self.paths;
        match self.st {
            St::Idle | St::Failed => Next::Failed,
            St::WritePair => Next::File(FileStep::WritePair { path: pair, content: out }),
            St::Swap => Next::File(FileStep::SwapCurrent { current, updated, target: pair }),
            St::WriteCa => Next::File(FileStep::WriteCa { path: &s.ca_file, content: out }),
            St::WriteKubeconfig => {
                Next::File(FileStep::WriteKubeconfig { path: &s.kubeconfig, content: out })
            }
            St::DestroyOld => Next::DestroyOld,
            St::RemoveCache | St::CleanCache | St::Sweep => {
                Next::File(FileStep::RemoveKeyCache { path: &s.key_cache })
            }
            St::Prune => Next::File(FileStep::PrunePairs {
                dir: &s.cert_dir,
                prefix: self.prefix,
                keep: pair,
            }),
            St::Stored => Next::Stored,
            St::DestroyNew => Next::DestroyNew,
            St::RemoveDir => Next::File(FileStep::RemoveDir { path: &s.cert_dir }),
            St::CleanedUp => Next::CleanedUp,
            St::Swept => Next::Swept,
            St::WriteBootstrap => {
                Next::File(FileStep::WriteBootstrapKubeconfig { path: &s.bootstrap, content: out })
            }
            St::BootstrapWritten => Next::BootstrapWritten,
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

    // -----------------------------------------------------------------------------------------
    // Beginning

    /// Store the pair in `out` (the chain, then the key or its reference) as the `kind`'s new
    /// certificate, named by `now`; then what `store` says.
    pub(super) fn begin_store(
        &mut self,
        s: &Settings<'_>,
        kind: Kind,
        now: i64,
        store: Store,
    ) -> Result<()> {
        self.reset();
        let prefix = if kind == Kind::Serving { PREFIX_SERVER } else { PREFIX_CLIENT };
        let ts = timestamp(now, s.utc_offset);
        let [pair, current, updated] = &mut self.paths;
        path::child_into(&s.cert_dir, &[prefix, "-", &ts, ".pem"], pair)?;
        path::child_into(&s.cert_dir, &[prefix, "-current.pem"], current)?;
        path::child_into(&s.cert_dir, &[prefix, "-updated.pem"], updated)?;
        self.prefix = prefix;
        self.store = store;
        self.st = St::WritePair;
        Ok(())
    }

    /// Undo what a failed attempt made, as `cleanup` says.
    pub(super) fn begin_cleanup(&mut self, cleanup: Cleanup) {
        self.reset();
        self.cleanup = cleanup;
        self.st = St::CleanCache;
        self.next_cleanup();
    }

    /// Remove a key cache a crash left beside valid credentials (a later bootstrap must not
    /// reuse its key: its CSR is done).
    pub(super) fn begin_sweep(&mut self) {
        self.reset();
        self.st = St::Sweep;
    }

    /// Write the discovered bootstrap kubeconfig in `out`.
    pub(super) fn begin_bootstrap_kubeconfig(&mut self) {
        self.reset();
        self.st = St::WriteBootstrap;
    }

    // -----------------------------------------------------------------------------------------
    // Answers

    /// The outcome of a file step. Returns whether it made the new pair current.
    pub(super) fn on_file_done(
        &mut self,
        cx: &mut PlanCx<'_, '_>,
        result: core::result::Result<(), StoreErrorKind>,
    ) -> bool {
        let failed = |plan: &mut Self, e: StoreErrorKind, what: &str| {
            plan.fail(Error::Store(e), detail(format_args!("{what}: {}", e.message())));
        };
        match (self.st, result) {
            (St::WritePair, Ok(())) => self.st = St::Swap,
            (St::WritePair, Err(e)) => failed(self, e, "writing the new pair"),
            (St::Swap, Ok(())) => {
                let line = cx
                    .ev
                    .ev("stored")
                    .kv("kind", cx.kind.as_str())
                    .kv("file", &self.paths[0])
                    .kv("current", &self.paths[1])
                    .done();
                cx.ev.push(line);
                cx.out.wipe();
                if self.store.kubeconfig {
                    // The CA file first: the kubeconfig names it.
                    self.store_ca(cx);
                } else {
                    self.after_store();
                }
                return true;
            }
            (St::Swap, Err(e)) => failed(self, e, "swapping -current.pem"),
            (St::WriteCa, Ok(())) => {
                cx.out.clear();
                match node_kubeconfig(cx.cluster, cx.s, cx.out) {
                    Ok(()) => self.st = St::WriteKubeconfig,
                    Err(e) => self.fail(e, detail(format_args!("writing the node kubeconfig"))),
                }
            }
            (St::WriteCa, Err(e)) => failed(self, e, "writing the CA file"),
            (St::WriteKubeconfig, Ok(())) => {
                let line = cx.ev.ev("kubeconfig").kv("path", &cx.s.kubeconfig).done();
                cx.ev.push(line);
                cx.out.clear();
                self.after_store();
            }
            (St::WriteKubeconfig, Err(e)) => failed(self, e, "writing the node kubeconfig"),
            (St::RemoveCache, r) => {
                if let Err(e) = r.filter_not_found() {
                    warn(cx.ev, "could not remove the key cache", e, &cx.s.key_cache);
                }
                self.st = St::Prune;
            }
            (St::Prune, r) => {
                // The new pair is current either way: a replaced pair left behind is a
                // warning, and the next store removes it.
                if let Err(e) = r {
                    warn(cx.ev, "could not remove the replaced pairs", e, &cx.s.cert_dir);
                }
                self.st = St::Stored;
            }
            (St::CleanCache, _) => {
                let line = cx.ev.ev("cleanup").kv("removed", &cx.s.key_cache).done();
                cx.ev.push(line);
                self.cleanup.remove_cache = false;
                self.next_cleanup();
            }
            (St::RemoveDir, _) => {
                self.cleanup.remove_dir = false;
                self.st = St::CleanedUp;
            }
            // Removed or absent: nothing to report either way.
            (St::Sweep, _) => self.st = St::Swept,
            (St::WriteBootstrap, Ok(())) => {
                cx.out.wipe();
                self.st = St::BootstrapWritten;
            }
            (St::WriteBootstrap, Err(e)) => failed(self, e, "writing the bootstrap kubeconfig"),
            _ => {}
        }
        false
    }

    /// The key machine is done with [`Next::DestroyOld`] or [`Next::DestroyNew`].
    pub(super) fn on_destroyed(&mut self) {
        match self.st {
            St::DestroyOld => {
                self.store.destroy_old = false;
                self.after_destroy();
            }
            St::DestroyNew => {
                self.cleanup.destroy_new = false;
                self.next_cleanup();
            }
            _ => {}
        }
    }

    /// After a bootstrap (or the rotation of a kubeconfig that was not the agent's): the CA the
    /// node trusts the apiserver with goes into the CA file, then the kubeconfig naming it.
    fn store_ca(&mut self, cx: &mut PlanCx<'_, '_>) {
        if cx.cluster.ca.is_empty() {
            // insecure-skip-tls-verify: no CA to keep.
            return match node_kubeconfig(cx.cluster, cx.s, cx.out) {
                Ok(()) => self.st = St::WriteKubeconfig,
                Err(e) => self.fail(e, detail(format_args!("writing the node kubeconfig"))),
            };
        }
        match cx.out.set(&cx.cluster.ca) {
            Ok(()) => self.st = St::WriteCa,
            Err(_) => self.fail(Error::TooLarge, detail(format_args!("the CA file"))),
        }
    }

    fn after_store(&mut self) {
        if self.store.destroy_old {
            self.st = St::DestroyOld;
        } else {
            self.after_destroy();
        }
    }

    fn after_destroy(&mut self) {
        self.st = if self.store.remove_cache { St::RemoveCache } else { St::Prune };
    }

    fn next_cleanup(&mut self) {
        let c = self.cleanup;
        self.st = if c.remove_cache {
            St::CleanCache
        } else if c.destroy_new {
            St::DestroyNew
        } else if c.remove_dir {
            St::RemoveDir
        } else {
            St::CleanedUp
        };
    }
}

/// A file step that failed without failing the store: `step=warning what=... reason=... path=...`.
fn warn(ev: &mut Events, what: &str, e: StoreErrorKind, path: &str) {
    let line =
        ev.ev("warning").kv("what", what).kv("reason", e.code().name()).kv("path", path).done();
    ev.push(line);
}

/// A missing file is success for a removal.
trait FilterNotFound {
    fn filter_not_found(self) -> core::result::Result<(), StoreErrorKind>;
}

impl FilterNotFound for core::result::Result<(), StoreErrorKind> {
    fn filter_not_found(self) -> core::result::Result<(), StoreErrorKind> {
        match self {
            Err(StoreErrorKind::NotFound) => Ok(()),
            r => r,
        }
    }
}

/// The node kubeconfig for `cluster` into `out`: its server and TLS settings, the cert dir's
/// CA file for the apiserver (never inline data, so that a CA rotation can be followed: see
/// [the CA refresh](super#the-ca-refresh)), `kubelet-client-current.pem` for the certificate and
/// the key.
pub(super) fn node_kubeconfig(
    cluster: &Cluster<'_>,
    s: &Settings<'_>,
    out: &mut Bytes<'_>,
) -> Result<()> {
    let cfg = NodeKubeconfig {
        server: &cluster.server,
        certificate_authority: if cluster.ca.is_empty() { None } else { Some(&s.ca_file) },
        certificate_authority_data: None,
        insecure_skip_tls_verify: cluster.insecure,
        cert_dir: &s.cert_dir,
    };
    out.fill(|b| write_node_kubeconfig(&cfg, b))
}
