//! Reading the node's current credentials the way the core judges them: the core's agent in
//! [`Mode::Check`] reads the node kubeconfig, the client pair, the CA and the serving pair and
//! gives its verdicts ([`kubeboot::agent::Status`]); the runtime keeps the bytes it read for
//! that verdict, so what it hands out is exactly what was judged usable (a file replaced
//! meanwhile is judged again at the next read, never mixed in).

use std::path::Path;
use std::sync::Arc;

use kubeboot::agent::{Action, Agent, Capacities, FileRole, Mode, Origin, RotateNow, Status};
use kubeboot::kubeconfig::{Kubeconfig, Scalar, Source};
use kubeboot::store::FileSteps;
use kubeboot_hwkey::Devices;
use zeroize::Zeroizing;

use crate::Settings;
use crate::credentials::{Identity, ServingPair, Shared};
use crate::tls;

/// One file as the check read it.
struct Read {
    role: FileRole,
    path: String,
    bytes: Zeroizing<Vec<u8>>,
}

/// What the last look found, to tell a change from the same credentials read again.
#[derive(Default)]
pub(crate) struct Current {
    client: Option<Vec<u8>>,
    serving: Option<Vec<u8>>,
    generation: (u64, u64),
}

impl Current {
    /// Look at the node's files now and publish what is new and usable. A look that fails (a
    /// file being replaced by another program, a device that does not answer) changes
    /// nothing: what was published stays until it expires.
    pub(crate) fn refresh(&mut self, settings: &Settings, devices: &Devices, shared: &Shared) {
        let now = crate::clock::unix_now();
        let mut memory = vec![0u8; Capacities::HOST.memory_len()];
        let Ok(mut agent) = Agent::new(&mut memory, &Capacities::HOST) else { return };
        let dns = settings.dns_names();
        let Ok(mut c) = settings.config(&dns, 0, 0) else { return };
        c.mode = Mode::Check;
        c.discovery = None;
        c.bootstrap_kubeconfig = None;
        c.rotate_now = RotateNow::default();
        if agent.start(&c).is_err() {
            return;
        }
        let files = FileSteps::new();
        let mut reads = Vec::new();
        loop {
            match agent.poll(now) {
                Action::Read(r) => {
                    let (role, path) = (r.role, r.path.to_owned());
                    match files.read(Path::new(&path), r.max_len) {
                        Ok(bytes) => {
                            agent.on_read(now, Ok(&bytes));
                            reads.push(Read { role, path, bytes });
                        }
                        Err(e) => agent.on_read(now, Err(e.reported_kind())),
                    }
                }
                Action::Key(_) => {
                    let _ = devices.perform(&mut agent, now);
                }
                Action::Event(_) => {}
                Action::Done(_) => break,
                // (the check mode asks for nothing else)
                _ => return,
            }
        }
        let Some(status) = agent.status() else { return };
        if let Some(identity) = self.client(&status, &reads, devices) {
            shared.publish_client(identity);
        }
        if shared.serving_configured
            && let Some(pair) = self.serving(&status, &reads, devices)
        {
            shared.publish_serving(pair);
        }
    }

    /// The client identity, when usable and not the one published last.
    fn client(&mut self, s: &Status<'_>, reads: &[Read], devices: &Devices) -> Option<Identity> {
        let verdict = s.client.verdict.ok()?;
        let kubeconfig = &reads.iter().find(|r| r.role == FileRole::Kubeconfig)?.bytes;
        let kc = Kubeconfig::parse(kubeconfig).ok()?;
        let resolved = kc.resolve().ok()?;
        let cluster = resolved.cluster;
        let ca_pem = match cluster.ca_source() {
            Source::Data(d) => Some(base64(d)?.to_vec()),
            Source::File(_) => {
                Some(reads.iter().find(|r| r.role == FileRole::ClusterCa)?.bytes.to_vec())
            }
            Source::None => None,
        };
        let key_pem = match s.client.key {
            Origin::File(p) => {
                Zeroizing::new(tls::key_block(&reads.iter().find(|r| r.path == p)?.bytes)?.to_vec())
            }
            Origin::Data => match resolved.user.client_key_source() {
                Source::Data(d) => Zeroizing::new(tls::key_block(&base64(d)?)?.to_vec()),
                _ => return None,
            },
            _ => return None,
        };
        let server = text(resolved.server())?;
        let server_name = cluster.tls_server_name.filter(|n| !n.is_empty()).and_then(text);
        let insecure = cluster.insecure_skip_tls_verify;
        // The same credentials read again are not a new identity.
        let mut seen = Vec::new();
        for part in [server.as_bytes(), ca_pem.as_deref().unwrap_or_default(), s.client.chain_pem] {
            seen.extend_from_slice(part);
            seen.push(0);
        }
        seen.extend_from_slice(server_name.as_deref().unwrap_or_default().as_bytes());
        seen.push(u8::from(insecure));
        if self.client.as_ref() == Some(&seen) {
            return None;
        }
        let certified = tls::certified_key(s.client.chain_pem, &key_pem, devices).ok()?;
        self.client = Some(seen);
        self.generation.0 += 1;
        Some(Identity {
            generation: self.generation.0,
            node: s.node.to_owned(),
            server,
            ca_pem,
            insecure,
            server_name,
            chain_pem: s.client.chain_pem.to_vec(),
            key_pem,
            status: verdict,
            certified,
        })
    }

    /// The serving pair, when usable and not the one published last.
    fn serving(
        &mut self,
        s: &Status<'_>,
        reads: &[Read],
        devices: &Devices,
    ) -> Option<ServingPair> {
        let verdict = s.serving.verdict.ok()?;
        let pair = &reads.iter().find(|r| r.role == FileRole::ServingPair)?.bytes;
        if self.serving.as_deref() == Some(s.serving.chain_pem) {
            return None;
        }
        let certified = tls::certified_key(s.serving.chain_pem, pair, devices).ok()?;
        self.serving = Some(s.serving.chain_pem.to_vec());
        self.generation.1 += 1;
        Some(ServingPair {
            generation: self.generation.1,
            chain_pem: s.serving.chain_pem.to_vec(),
            status: verdict,
            certified: Arc::clone(&certified),
        })
    }
}

/// A kubeconfig's `*-data` value, decoded (secret when a key).
fn base64(d: Scalar<'_>) -> Option<Zeroizing<Vec<u8>>> {
    let mut buf = Zeroizing::new(vec![0u8; d.decoded_len()]);
    let n = d.decode_base64_into(&mut buf).ok()?.len();
    buf.truncate(n);
    Some(buf)
}

/// A kubeconfig's text value, unquoted.
fn text(s: Scalar<'_>) -> Option<String> {
    let mut buf = vec![0u8; s.raw().len()];
    s.decode_into(&mut buf).ok().map(str::to_owned)
}
