//! Routing: which sub-machine has the turn, its internal steps, and its needs turned into the
//! [`Action`] the front-end sees (and the answer back to the one that asked).

use super::attestation;
use super::keys::{self, KeysCx};
use super::loader::{self, LoadCx, Loader};
use super::plan::{self, PlanCx};
use super::trust::{self, Trust, TrustCx};
use super::{
    Action, Agent, ClientCertificate, Conn, Connection, Failure, FileStep, HttpRequest, Kind,
    Method, Pending, Phase, Read, RequestKind,
};
use crate::discovery;
use crate::engine;
use crate::error::{Error, StoreErrorKind};

impl<'m> Agent<'m> {
    /// Advance by internal steps until the turn's sub-machine needs the front-end; returns
    /// whether it does (else call again: an internal step was made).
    pub(super) fn advance(&mut self, now: i64) -> bool {
        match self.phase {
            Phase::Idle | Phase::Done | Phase::Failed | Phase::Healthz | Phase::Probe => true,
            Phase::Start => {
                self.begin(now);
                false
            }
            Phase::Decide => {
                self.decide(now);
                false
            }
            Phase::Prepare => {
                self.prepare_bootstrap(now);
                false
            }
            Phase::StartEngine => {
                self.start_engine(now);
                false
            }
            Phase::Load | Phase::Boot => match self.loader.next(&self.settings) {
                loader::Next::Step => {
                    let (loader, mut cx) = self.load_cx();
                    loader.step(&mut cx, now);
                    false
                }
                // The load is over: the previous attempt's key, kept for it, goes.
                loader::Next::Loaded => {
                    self.keys.reset();
                    self.phase = Phase::Decide;
                    false
                }
                loader::Next::BootLoaded => {
                    self.keys.reset();
                    self.phase = Phase::Prepare;
                    false
                }
                loader::Next::Failed => {
                    self.keys.reset();
                    self.load_failed(now);
                    false
                }
                loader::Next::Read(..) | loader::Next::Recover(_) | loader::Next::KeyPublic(_) => {
                    true
                }
            },
            Phase::Key | Phase::Sign => {
                match self.keys.next(&self.settings, &self.out, &self.loader.client_key) {
                    keys::Next::Ready => {
                        self.phase = if self.attempt.kind == Kind::Bootstrap {
                            Phase::Healthz
                        } else {
                            Phase::StartEngine
                        };
                        false
                    }
                    keys::Next::Signed => {
                        self.phase = Phase::StartEngine;
                        false
                    }
                    keys::Next::Failed | keys::Next::Destroyed => {
                        self.keys_failed(now);
                        false
                    }
                    _ => true,
                }
            }
            Phase::Store | Phase::Cleanup | Phase::Sweep | Phase::WriteBootstrap => {
                self.advance_plan(now)
            }
            Phase::Trust => match self.trust.next(&self.settings, &self.out) {
                trust::Next::Http | trust::Next::File(_) => true,
                trust::Next::Step => {
                    let (trust, mut cx) = self.trust_cx();
                    trust.step(&mut cx, now);
                    false
                }
                trust::Next::Done => {
                    self.io.conn_id = self.io.conn_id.wrapping_add(4);
                    self.phase = Phase::Decide;
                    false
                }
                trust::Next::Deferred => {
                    self.schedule.rotate_now.client = true;
                    self.io.conn_id = self.io.conn_id.wrapping_add(4);
                    self.trust.reset_turn();
                    self.phase = Phase::Decide;
                    false
                }
            },
            Phase::Discover => self.io.pending == Pending::Discovery || self.drive_discovery(now),
            Phase::Engine => self.io.pending == Pending::Engine || self.drive_engine(now),
            Phase::Attest => {
                match self.attestation.next(&self.settings, &self.out, &self.keys.new_ref) {
                    attestation::Next::Done => {
                        self.phase = Phase::Engine;
                        false
                    }
                    attestation::Next::Failed => {
                        let (e, why) =
                            self.attestation.failure().unwrap_or((Error::InvalidState, ""));
                        let path = self.settings.attestation.as_str();
                        let d = super::flow::detail(format_args!("{why} ({path})"));
                        self.attempt_failed(now, e, &d);
                        false
                    }
                    _ => true,
                }
            }
        }
    }

    /// The key machine failed: the attempt fails with its reason.
    fn keys_failed(&mut self, now: i64) {
        let (e, d) = self.keys.failure().map_or((Error::InvalidState, ""), |(e, d)| (e, d));
        let d = super::flow::detail(format_args!("{d}"));
        self.attempt_failed(now, e, &d);
    }

    /// The file plan's turn (with the key machine when a device key is destroyed).
    fn advance_plan(&mut self, now: i64) -> bool {
        let destroy = match self.plan.next(&self.settings, &self.out) {
            plan::Next::File(_) => return true,
            plan::Next::DestroyOld => true,
            plan::Next::DestroyNew => false,
            plan::Next::Stored => {
                self.attempt_succeeded(now);
                return false;
            }
            plan::Next::CleanedUp => {
                self.cleaned_up(now);
                return false;
            }
            plan::Next::Swept => {
                self.phase = Phase::Decide;
                return false;
            }
            plan::Next::BootstrapWritten => {
                if self.settings.mode == super::Mode::Discover {
                    let line = self.events.ev("done").done();
                    self.events.push(line);
                    self.phase = Phase::Done;
                } else {
                    self.loader.begin_bootstrap();
                    self.phase = Phase::Boot;
                }
                return false;
            }
            plan::Next::Failed => {
                let (e, d) = self.plan.failure().map_or((Error::InvalidState, ""), |x| x);
                let d = super::flow::detail(format_args!("{d}"));
                self.attempt_failed(now, e, &d);
                return false;
            }
        };
        match self.keys.next(&self.settings, &self.out, &self.loader.client_key) {
            keys::Next::Key(_) => true,
            keys::Next::Destroyed => {
                if destroy {
                    // Not again for this attempt.
                    self.loader.client_key.wipe();
                }
                self.plan.on_destroyed();
                false
            }
            _ => {
                if destroy {
                    self.keys.destroy_old();
                } else {
                    self.keys.destroy_new();
                }
                false
            }
        }
    }

    /// The outcome of one of the plan's file steps; returns whether it made the pair current.
    pub(super) fn plan_file_done(
        &mut self,
        result: core::result::Result<(), StoreErrorKind>,
    ) -> bool {
        let Agent { plan, settings, events, out, loader, attempt, .. } = self;
        let cluster = if attempt.kind == Kind::Bootstrap { &loader.boot } else { &loader.node_kc };
        let mut cx = PlanCx { s: settings, ev: events, out, kind: attempt.kind, cluster };
        plan.on_file_done(&mut cx, result)
    }

    // -----------------------------------------------------------------------------------------
    // Contexts: the turn's sub-machine and what it works with, borrowed side by side.

    pub(super) fn load_cx(&mut self) -> (&mut Loader<'m>, LoadCx<'_, 'm>) {
        let Agent { loader, settings, events, metrics, out, engine, keys, .. } = self;
        let held = keys.key.as_ref();
        let cx = LoadCx { s: settings, ev: events, metrics, out, work: engine.scratch(), held };
        (loader, cx)
    }

    pub(super) fn keys_cx(&mut self) -> (&mut keys::Keys, KeysCx<'_, 'm>) {
        let Agent { keys, settings, events, out, attempt, .. } = self;
        (keys, KeysCx { s: settings, ev: events, out, kind: attempt.kind })
    }

    pub(super) fn trust_cx(&mut self) -> (&mut Trust, TrustCx<'_, 'm>) {
        let Agent { trust, settings, events, out, engine, loader, schedule, .. } = self;
        let cx = TrustCx {
            s: settings,
            ev: events,
            out,
            work: engine.scratch(),
            loader,
            jitter: &mut schedule.jitter,
        };
        (trust, cx)
    }

    // -----------------------------------------------------------------------------------------
    // Actions

    /// The external action of the current phase (after [`Agent::advance`] said one is needed).
    pub(super) fn emit(&mut self, now: i64) -> Action<'_> {
        self.io.handed_out = true;
        self.io.now = now;
        match self.phase {
            Phase::Idle => {
                self.io.handed_out = false;
                Action::Failed(Failure {
                    error: Error::InvalidState,
                    detail: "the agent was not started",
                    line: "",
                })
            }
            Phase::Done => {
                self.io.handed_out = false;
                Action::Done(self.outcome)
            }
            Phase::Failed => {
                self.io.handed_out = false;
                let e = self.failure.unwrap_or(Error::InvalidState);
                self.events.shown = self
                    .events
                    .ev("failed")
                    .kv("reason", e.name())
                    .num("code", i64::from(e.code()))
                    .kv("detail", &self.detail)
                    .done();
                Action::Failed(Failure { error: e, detail: &self.detail, line: &self.events.shown })
            }
            _ => {
                self.io.pending = self.pending_kind();
                if self.io_action(now).is_none() {
                    self.io.pending = Pending::None;
                    self.io.handed_out = false;
                    return Action::Sleep { until: now };
                }
                self.io_action(now).unwrap_or(Action::Sleep { until: now })
            }
        }
    }

    /// Which kind of answer the current phase's action expects.
    fn pending_kind(&self) -> Pending {
        match self.phase {
            Phase::Healthz => Pending::Healthz,
            Phase::Probe => Pending::Probe,
            Phase::Discover => Pending::Discovery,
            Phase::Engine => Pending::Engine,
            _ => match self.io_action(self.io.now) {
                Some(Action::Read(_)) => Pending::Read,
                Some(Action::File(_)) => Pending::File,
                Some(Action::Entropy { .. }) => Pending::Entropy,
                Some(Action::Key(_)) => Pending::Key,
                Some(Action::Http(_)) => Pending::Trust,
                _ => Pending::None,
            },
        }
    }

    /// The I/O action the current phase needs (a read, a file step, entropy, a device
    /// operation, a request), built from the sub-machine that has the turn.
    pub(super) fn io_action(&self, now: i64) -> Option<Action<'_>> {
        let s = &self.settings;
        Some(match self.phase {
            Phase::Load | Phase::Boot => match self.loader.next(s) {
                loader::Next::Read(role, max_len, path) => {
                    Action::Read(Read { path, role, max_len })
                }
                loader::Next::Recover(prefix) => {
                    Action::File(FileStep::Recover { dir: &s.cert_dir, prefix })
                }
                loader::Next::KeyPublic(key) => Action::Key(super::KeyOp::Public { key }),
                _ => return None,
            },
            Phase::Key
            | Phase::Sign
            | Phase::Store
            | Phase::Cleanup
            | Phase::Sweep
            | Phase::WriteBootstrap => {
                if matches!(
                    self.phase,
                    Phase::Store | Phase::Cleanup | Phase::Sweep | Phase::WriteBootstrap
                ) {
                    if let plan::Next::File(step) = self.plan.next(s, &self.out) {
                        return Some(Action::File(step));
                    }
                }
                match self.keys.next(s, &self.out, &self.loader.client_key) {
                    keys::Next::Read(role, max_len, path) => {
                        Action::Read(Read { path, role, max_len })
                    }
                    keys::Next::File(step) => Action::File(step),
                    keys::Next::Entropy => Action::Entropy { len: crate::key::ENTROPY_LEN },
                    keys::Next::Key(op) => Action::Key(op),
                    _ => return None,
                }
            }
            Phase::Attest => match self.attestation.next(s, &self.out, &self.keys.new_ref) {
                attestation::Next::Read(role, max_len, path) => {
                    Action::Read(Read { path, role, max_len })
                }
                attestation::Next::Key(op) => Action::Key(op),
                _ => return None,
            },
            Phase::Trust => match self.trust.next(s, &self.out) {
                trust::Next::Http => Action::Http(self.trust.request(
                    s,
                    &self.loader,
                    &self.out,
                    self.io.conn_id,
                    now,
                )),
                trust::Next::File(step) => Action::File(step),
                _ => return None,
            },
            // The pair in doubt presented: who the apiserver takes it for.
            Phase::Probe => {
                let conn = if self.attempt.doubt == super::probe::Doubt::Issued {
                    Conn::Issued
                } else {
                    Conn::Node
                };
                Action::Http(super::probe::request(self.connection(conn), &s.user_agent, now))
            }
            Phase::Healthz => Action::Http(HttpRequest {
                connection: self.connection(Conn::Bootstrap),
                kind: RequestKind::Healthz,
                method: Method::Get,
                path: "/healthz",
                authorization: None,
                content_type: None,
                accept: "*/*",
                body: &[],
                user_agent: &s.user_agent,
                give_up_at: now.saturating_add(2),
                idle_at: None,
            }),
            Phase::Discover => {
                let r = self.discovery.outstanding_request(self.engine.work())?;
                let (ca_pem, insecure) = match r.tls {
                    discovery::Tls::Insecure => (None, true),
                    discovery::Tls::VerifyWith(ca) => (Some(ca), false),
                };
                let server = s.discovery.as_ref().map_or("", |d| d.server.as_str());
                Action::Http(HttpRequest {
                    connection: Connection {
                        id: self.io.conn_id.wrapping_add(u32::from(!insecure)),
                        server,
                        ca_pem,
                        insecure,
                        server_name: None,
                        client_certificate: None,
                    },
                    kind: RequestKind::ClusterInfo,
                    method: r.method,
                    path: r.path,
                    authorization: None,
                    content_type: None,
                    accept: r.accept,
                    body: &[],
                    user_agent: &s.user_agent,
                    give_up_at: now.saturating_add(10).min(self.discovery.deadline()),
                    idle_at: None,
                })
            }
            Phase::Engine => {
                let r = self.engine.outstanding_request()?;
                let kind = match r.kind {
                    engine::RequestKind::Create => RequestKind::Create,
                    engine::RequestKind::Get => RequestKind::Get,
                    _ => RequestKind::Watch,
                };
                Action::Http(HttpRequest {
                    connection: self.connection(self.io.conn),
                    kind,
                    method: r.method,
                    path: r.path,
                    authorization: r.authorization,
                    content_type: r.content_type,
                    accept: r.accept,
                    body: r.body,
                    user_agent: &s.user_agent,
                    give_up_at: r.give_up_at,
                    // A quiet watch wakes the agent when the next progress line is due.
                    idle_at: (kind == RequestKind::Watch && self.wait.progress_at > 0)
                        .then_some(self.wait.progress_at),
                })
            }
            Phase::Idle
            | Phase::Start
            | Phase::Decide
            | Phase::Prepare
            | Phase::StartEngine
            | Phase::Done
            | Phase::Failed => return None,
        })
    }

    fn connection(&self, which: Conn) -> Connection<'_> {
        let (c, client) = match which {
            Conn::Bootstrap => (&self.loader.boot, None),
            Conn::Node => (
                &self.loader.node_kc,
                Some(ClientCertificate {
                    chain_pem: &self.loader.client_chain,
                    key_pem: &self.loader.client_key,
                }),
            ),
            Conn::Issued => {
                let (chain, key) = self.out.split_at(self.attempt.cert_len.min(self.out.len()));
                let c = if self.attempt.kind == Kind::Bootstrap {
                    &self.loader.boot
                } else {
                    &self.loader.node_kc
                };
                (c, Some(ClientCertificate { chain_pem: chain, key_pem: key }))
            }
        };
        Connection {
            id: self.io.conn_id,
            server: &c.server,
            ca_pem: if c.insecure || c.ca.is_empty() { None } else { Some(&c.ca) },
            insecure: c.insecure,
            server_name: if c.server_name.is_empty() { None } else { Some(&c.server_name) },
            client_certificate: client,
        }
    }
}
