//! Turning the agent's state into the next action for the front-end.

use super::*;

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> Agent<N, PEM, OUT, PATH, SANS, DISC>
{
    /// Whether the current state is an external action (made by [`Agent::emit`]), or internal
    /// (made by [`Agent::step`]).
    pub(super) fn needs_io(&mut self, now: i64) -> bool {
        if let Some(t) = self.sleep_until {
            if now < t {
                return true;
            }
            self.sleep_until = None;
        }
        match self.st {
            St::Start
            | St::CheckClient
            | St::Decide
            | St::PrepareBootstrap
            | St::StartEngine
            | St::CaCompare => false,
            St::DiscoverRun => self.pending == Pending::Discovery,
            St::EngineRun => self.pending == Pending::Engine,
            _ => true,
        }
    }

    /// What file the current state reads, and how much at most.
    pub(super) fn read_spec(&self) -> Option<(FileRole, usize, &str)> {
        let pair = PEM + MAX_KEY_PEM;
        Some(match self.st {
            St::ReadKubeconfig => (FileRole::Kubeconfig, MAX_KUBECONFIG, &self.kubeconfig_path),
            St::ReadNodeCa => (FileRole::ClusterCa, PEM, &self.node_kc.ca_file),
            St::ReadClientCert => (FileRole::ClientCertificate, pair, &self.cert_path),
            St::ReadClientKey => (FileRole::ClientKey, pair, &self.key_path),
            St::ReadBundle => (FileRole::CaBundle, PEM, &self.bundle_path),
            St::ReadServing => (FileRole::ServingPair, pair, &self.step_paths[0]),
            St::ReadBootKc => (FileRole::BootstrapKubeconfig, MAX_KUBECONFIG, &self.bootstrap_path),
            St::ReadBootCa => (FileRole::ClusterCa, PEM, &self.boot.ca_file),
            St::ReadTokenFile => (FileRole::TokenFile, 4096, &self.token_path),
            St::ReadKeyCache => (FileRole::KeyCache, 8192, &self.key_cache_path),
            _ => return None,
        })
    }

    /// The external action of the current state.
    pub(super) fn emit(&mut self, now: i64) -> Action<'_> {
        if let Some(until) = self.sleep_until {
            return Action::Sleep { until };
        }
        if let Some((role, max_len, _)) = self.read_spec() {
            self.pending = Pending::Read;
            self.read_role = role;
            let path = self.read_spec().map_or("", |r| r.2);
            return Action::Read(Read { path, role, max_len });
        }
        match self.st {
            St::Idle => Action::Failed(Failure {
                error: Error::InvalidState,
                detail: "the agent was not started",
                line: "",
            }),
            St::Done => Action::Done(self.outcome),
            St::Failed => {
                let e = self.failure.unwrap_or(Error::InvalidState);
                self.shown = self
                    .ev("failed")
                    .kv("reason", e.name())
                    .num("code", i64::from(e.code()))
                    .kv("detail", &self.detail)
                    .done();
                Action::Failed(Failure { error: e, detail: &self.detail, line: &self.shown })
            }
            St::KeyEntropy => {
                self.pending = Pending::Entropy;
                Action::Entropy { len: crate::key::ENTROPY_LEN }
            }
            St::KeyPublic
            | St::CachePublic
            | St::KeyGenerate
            | St::KeySign
            | St::DestroyOld
            | St::DestroyNew => {
                self.pending = Pending::Key;
                match self.key_op() {
                    Some(op) => Action::Key(op),
                    None => Action::Sleep { until: now },
                }
            }
            St::Healthz => {
                self.pending = Pending::Healthz;
                Action::Http(HttpRequest {
                    connection: self.connection(Conn::Bootstrap),
                    kind: RequestKind::Healthz,
                    method: Method::Get,
                    path: "/healthz",
                    authorization: None,
                    content_type: None,
                    accept: "*/*",
                    body: &[],
                    user_agent: &self.user_agent,
                    give_up_at: now.saturating_add(2),
                })
            }
            St::DiscoverRun => match self.discovery.outstanding_request() {
                Some(r) => {
                    let (ca_pem, insecure) = match r.tls {
                        discovery::Tls::Insecure => (None, true),
                        discovery::Tls::VerifyWith(ca) => (Some(ca), false),
                    };
                    Action::Http(HttpRequest {
                        connection: Connection {
                            id: self.conn_id.wrapping_add(u32::from(!insecure)),
                            server: &self.discovery_server,
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
                        user_agent: &self.user_agent,
                        give_up_at: now.saturating_add(10).min(self.discovery.deadline()),
                    })
                }
                None => Action::Sleep { until: now },
            },
            St::CaInfo | St::CaBundles | St::CaProbe => {
                self.pending = Pending::Trust;
                Action::Http(self.ca_request(now))
            }
            St::EngineRun => match self.engine.outstanding_request() {
                Some(r) => {
                    let kind = match r.kind {
                        engine::RequestKind::Create => RequestKind::Create,
                        engine::RequestKind::Get => RequestKind::Get,
                        _ => RequestKind::Watch,
                    };
                    Action::Http(HttpRequest {
                        connection: self.connection(self.conn),
                        kind,
                        method: r.method,
                        path: r.path,
                        authorization: r.authorization,
                        content_type: r.content_type,
                        accept: r.accept,
                        body: r.body,
                        user_agent: &self.user_agent,
                        give_up_at: r.give_up_at,
                    })
                }
                None => Action::Sleep { until: now },
            },
            _ => {
                self.pending = Pending::File;
                Action::File(self.file_step())
            }
        }
    }

    /// The file step of the current state.
    pub(super) fn file_step(&self) -> FileStep<'_> {
        match self.st {
            St::RecoverServer => FileStep::Recover { dir: &self.cert_dir, prefix: PREFIX_SERVER },
            St::MakeDir => FileStep::CreateDir { path: &self.cert_dir },
            St::WriteKeyCache => {
                FileStep::WriteKeyCache { path: &self.key_cache_path, pem: &self.out }
            }
            St::WriteBootKc => FileStep::WriteBootstrapKubeconfig {
                path: &self.bootstrap_path,
                content: &self.out,
            },
            St::StorePair => FileStep::WritePair { path: &self.step_paths[0], content: &self.out },
            St::StoreSwap => FileStep::SwapCurrent {
                current: &self.step_paths[1],
                updated: &self.step_paths[2],
                target: &self.step_paths[0],
            },
            St::StoreKubeconfig | St::CaKubeconfig => {
                FileStep::WriteKubeconfig { path: &self.kubeconfig_path, content: &self.out }
            }
            St::StoreCa | St::CaWrite => {
                FileStep::WriteCa { path: &self.ca_file_path, content: &self.out }
            }
            St::StoreRemoveCache | St::CleanupCache | St::SweepCache => {
                FileStep::RemoveKeyCache { path: &self.key_cache_path }
            }
            St::CleanupDir => FileStep::RemoveDir { path: &self.cert_dir },
            _ => FileStep::Recover { dir: &self.cert_dir, prefix: PREFIX_CLIENT },
        }
    }

    pub(super) fn connection(&self, which: Conn) -> Connection<'_> {
        let (c, client) = match which {
            Conn::Bootstrap => (&self.boot, None),
            Conn::Node => (
                &self.node_kc,
                Some(ClientCertificate {
                    chain_pem: &self.client_chain,
                    key_pem: &self.client_key,
                }),
            ),
        };
        Connection {
            id: self.conn_id,
            server: &c.server,
            ca_pem: if c.insecure || c.ca.is_empty() { None } else { Some(&c.ca) },
            insecure: c.insecure,
            server_name: if c.server_name.is_empty() { None } else { Some(&c.server_name) },
            client_certificate: client,
        }
    }
}

/// The `step=` of a line.
pub(super) fn step_of(line: &str) -> &'static str {
    const STEPS: &[&str] = &[
        "start",
        "credentials",
        "bootstrap",
        "rotate",
        "serving",
        "discovery",
        "discovered",
        "key",
        "healthz",
        "create",
        "created",
        "wait",
        "http",
        "transport-error",
        "retry",
        "issued",
        "stored",
        "kubeconfig",
        "cleanup",
        "sleep",
        "done",
        "warning",
        "wake",
        "ca",
    ];
    let s = if line.starts_with('{') {
        line.split("\"step\":\"").nth(1).and_then(|r| r.split('"').next())
    } else {
        line.split(" step=").nth(1).and_then(|r| r.split(' ').next())
    };
    let s = s.unwrap_or("");
    STEPS.iter().copied().find(|x| *x == s).unwrap_or("event")
}
