//! The node agent (`agent::Agent`) fed whatever it asks for, chosen by the input: every file it
//! reads is absent, unreadable, too large, what the node's own file steps left there, or one of
//! a pool of contents (real kubeconfigs of the layouts kubectl and kubeboot write, the recorded
//! apiserver's CA, key and issued certificate, mixed, truncated or mutated, or raw bytes); every
//! file step succeeds or fails with any kind; every HTTP request gets any status with a recorded,
//! edited or raw body (a watch gets the recorded streams, split anywhere), a transport error, or
//! no answer at all; the clock jumps. The agent runs over the hosts' capacities, a
//! microcontroller's (response 4096, pem 1536, key 512, file 3072, path 64) or the smallest the
//! rules accept, so files and bodies too large for it are common.
//!
//! Properties: those of `common/agent_rig.rs` (no panic; `outstanding` repeats `poll`; no secret
//! in events, failures or paths; a `WritePair` is whole and holds a delivered certificate, a
//! `SwapCurrent` follows its pair; `Done` valid with a 70–90 % deadline; sticky ends; bounded).
#![no_main]

#[path = "common/agent_rig.rs"]
mod rig;

use arbitrary::{Arbitrary, Unstructured};
use kubeboot::agent::{
    Agent, Config, FileStep, HttpRequest, LogFormat, Mode, Read, RequestKind, RotateNow,
};
use kubeboot::error::StoreErrorKind;
use libfuzzer_sys::fuzz_target;
use rig::{BOOTSTRAP, BOOTSTRAP_FILE, HttpAnswer, NODE, Node, Piece, rec};

/// One file content.
fn content(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let cert = rig::issued_cert();
    let key = rec!("approved.key.pem").to_vec();
    let mut pair = cert.clone();
    pair.extend_from_slice(&key);
    let pool: [Vec<u8>; 8] = [
        BOOTSTRAP.as_bytes().to_vec(),
        BOOTSTRAP_FILE.as_bytes().to_vec(),
        NODE.as_bytes().to_vec(),
        rec!("client-ca.pem").to_vec(),
        key,
        pair,
        b"hi3rc6.cpoi3m254kzpt12t\n".to_vec(),
        cert,
    ];
    let mut v = match u.int_in_range(0..=3u8)? {
        0 => pool[usize::from(u.int_in_range(0..=7u8)?)].clone(),
        1 => {
            // Truncated.
            let mut v = pool[usize::from(u.int_in_range(0..=7u8)?)].clone();
            let n = u.int_in_range(0..=v.len())?;
            v.truncate(n);
            v
        }
        2 => {
            // Mutated bytes.
            let mut v = pool[usize::from(u.int_in_range(0..=7u8)?)].clone();
            for _ in 0..u.int_in_range(1..=4u8)? {
                let i = u.int_in_range(0..=v.len().saturating_sub(1))?;
                if let Some(b) = v.get_mut(i) {
                    *b ^= u.arbitrary::<u8>()? | 1;
                }
            }
            v
        }
        _ => Vec::<u8>::arbitrary(u)?,
    };
    v.truncate(64 * 1024);
    Ok(v)
}

/// A recorded body, perhaps with one byte changed.
fn body(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let mut b = rig::BODIES[u.choose_index(rig::BODIES.len())?].to_vec();
    if u.arbitrary::<bool>()? && !b.is_empty() {
        let i = u.int_in_range(0..=b.len() - 1)?;
        b[i] ^= u.arbitrary::<u8>()? | 1;
    }
    Ok(b)
}

/// Answers drawn from the input; once it is used up, every read is `NotFound`, every file step
/// fails and every request is a transport error.
struct Files<'a> {
    u: Unstructured<'a>,
}

impl rig::Script for Files<'_> {
    fn read(&mut self, r: &Read<'_>, node: &Node) -> Result<Vec<u8>, StoreErrorKind> {
        match self.u.int_in_range(0..=5u8).unwrap_or(0) {
            0 => Err(StoreErrorKind::NotFound),
            1 => Err(StoreErrorKind::Io),
            2 => Err(StoreErrorKind::FileTooLarge),
            3 => node.read(r),
            _ => content(&mut self.u).map_err(|_| StoreErrorKind::NotFound),
        }
    }

    fn file_fault(&mut self, _: &FileStep<'_>) -> Option<StoreErrorKind> {
        let ok = self.u.int_in_range(0..=7u8).unwrap_or(0) != 0;
        let kind = StoreErrorKind::ALL[usize::from(self.u.int_in_range(0..=15u8).unwrap_or(0))];
        (!ok).then_some(kind)
    }

    fn http(&mut self, r: &HttpRequest<'_>) -> HttpAnswer {
        match self.u.int_in_range(0..=5u8).unwrap_or(0) {
            0 => HttpAnswer::Transport,
            1 => HttpAnswer::Nothing,
            2 if r.kind == RequestKind::Watch => {
                let b = body(&mut self.u).unwrap_or_default();
                let mut chunks = Vec::new();
                let mut rest = &b[..];
                while !rest.is_empty() {
                    let n = self.u.int_in_range(1..=rest.len()).unwrap_or(rest.len());
                    chunks.push(Piece::Data(rest[..n].to_vec()));
                    rest = &rest[n..];
                    if self.u.ratio(1, 8).unwrap_or(false) {
                        chunks.push(Piece::Idle);
                    }
                }
                HttpAnswer::Stream { chunks, cut: false }
            }
            _ => {
                let status = rig::STATUSES[self.u.choose_index(rig::STATUSES.len()).unwrap_or(0)];
                let body = body(&mut self.u).unwrap_or_default();
                HttpAnswer::Response { status, retry_after: None, body }
            }
        }
    }

    fn oversleep(&mut self) -> i64 {
        i64::from(self.u.arbitrary::<u8>().unwrap_or(0))
    }

    fn exhausted(&self) -> bool {
        self.u.is_empty()
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(flags) = u.arbitrary::<u8>() else { return };
    let mut c = Config::new("fz", "/w", "kubelet.conf", "pki");
    c.node_name = (flags & 1 == 0).then_some(rig::NODE_NAME);
    c.bootstrap_kubeconfig = (flags & 2 == 0).then_some("bootstrap.conf");
    c.ca_bundle = (flags & 4 == 0).then_some("client-ca.pem");
    c.watch = flags & 8 == 0;
    c.mode = if flags & 16 == 0 { Mode::Once } else { Mode::Run { max_rotations: Some(2) } };
    c.rotate_now = RotateNow { client: flags & 32 != 0, serving: false };
    c.bootstrap_wait_secs = 600;
    c.rotation_wait_secs = 300;
    c.seed = 7;
    // The hosts' capacities, a microcontroller's, the smallest; JSON lines with the hosts'.
    let caps = rig::capacities(flags >> 6);
    if flags >> 6 == 3 {
        c.log_format = LogFormat::Json;
    }
    let mut memory = vec![0u8; caps.memory_len()];
    let mut agent = Agent::new(&mut memory, &caps).unwrap();
    rig::start(&mut agent, &caps, &mut c);
    let mut node = Node::default();
    rig::drive(&mut agent, &c, &mut Files { u }, &mut node, 3000);
});
