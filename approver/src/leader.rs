//! `--leader-elect`: decide only while this replica holds the Lease (kube-lease-manager: a
//! coordination.k8s.io/v1 Lease renewed `--leader-elect-renew-grace` before it runs out, taken
//! over only once it has run out).
//!
//! Leadership alone does not make a decision unique: a replica that lost its Lease may still be
//! writing. Every decision is therefore written on the `resourceVersion` the judgement read
//! (`decide.rs`), and a CSR decided meanwhile answers 409 Conflict and is never decided twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::channel::mpsc;
use kube_lease_manager::{LeaseCreateMode, LeaseManagerBuilder};

use crate::args::{Args, Settings};
use crate::metrics::Metrics;

/// What the controller needs from the election: the flag it reads before every decision, and a
/// stream that says "judge every CSR again" each time this replica becomes the leader.
pub struct Leadership {
    /// Whether this replica may decide now.
    pub leader: Arc<AtomicBool>,
    /// One item each time leadership is gained.
    pub gained: mpsc::UnboundedReceiver<()>,
    held: Option<Held>,
}

struct Held {
    mirror: tokio::task::JoinHandle<()>,
    lease: tokio::task::JoinHandle<
        Result<kube_lease_manager::LeaseManager, kube_lease_manager::LeaseManagerError>,
    >,
}

impl Leadership {
    /// At shutdown: stop deciding and give the Lease up, so that another replica takes over at
    /// once instead of after the Lease runs out.
    pub async fn release(self) {
        self.leader.store(false, Ordering::Release);
        if let Some(held) = self.held {
            held.mirror.abort();
            // The manager releases the Lease once no receiver is left, then ends.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), held.lease).await;
        }
    }
}

/// Without `--leader-elect`: always the leader.
pub fn always() -> Leadership {
    let (_tx, gained) = mpsc::unbounded();
    Leadership { leader: Arc::new(AtomicBool::new(true)), gained, held: None }
}

/// Join the election of `args`' Lease.
pub async fn elect(
    client: kube::Client,
    args: &Args,
    settings: &Settings,
    metrics: Arc<Metrics>,
) -> Result<Leadership, kube_lease_manager::LeaseManagerError> {
    let identity = args.identity();
    let namespace = args.lease_namespace();
    let manager = LeaseManagerBuilder::new(client, &args.leader_elect_lease_name)
        .with_namespace(&namespace)
        .with_identity(&identity)
        .with_duration(settings.lease_duration)
        .with_grace(settings.renew_grace)
        .with_create_mode(LeaseCreateMode::AutoCreate)
        .build()
        .await?;
    let (mut rx, lease) = manager.watch().await;
    let leader = Arc::new(AtomicBool::new(false));
    let (tx, gained) = mpsc::unbounded();
    let flag = Arc::clone(&leader);
    let lease_name = args.leader_elect_lease_name.clone();
    let mirror = tokio::spawn(async move {
        loop {
            let now = *rx.borrow_and_update();
            if flag.swap(now, Ordering::AcqRel) != now {
                metrics.set_leader(now);
                if now {
                    tracing::info!(identity = %identity, lease = %format!("{namespace}/{lease_name}"), "became the leader; judging every pending CSR");
                    let _ = tx.unbounded_send(());
                } else {
                    tracing::warn!(identity = %identity, "lost the Lease; deciding nothing");
                }
            }
            if rx.changed().await.is_err() {
                flag.store(false, Ordering::Release);
                metrics.set_leader(false);
                return;
            }
        }
    });
    Ok(Leadership { leader, gained, held: Some(Held { mirror, lease }) })
}
