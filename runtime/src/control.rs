//! Stopping and waking the agent: from the embedding program ([`crate::Handle::stop`],
//! [`crate::Handle::wake`]) or, for a daemon, from signals (SIGTERM and SIGINT stop, SIGHUP
//! wakes). A stop ends the run at once while the agent waits (a sleep, a request, a watch) and
//! otherwise at its next wait: never between a file write and the step that completes it.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// The requests to stop and to wake.
pub(crate) struct Control {
    stop: watch::Sender<bool>,
    wake: watch::Sender<u64>,
}

impl Control {
    pub(crate) fn new() -> Control {
        Control { stop: watch::Sender::new(false), wake: watch::Sender::new(0) }
    }

    pub(crate) fn stop(&self) {
        self.stop.send_replace(true);
    }

    pub(crate) fn wake(&self) {
        self.wake.send_modify(|n| *n += 1);
    }

    pub(crate) fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Until a stop is asked for.
    pub(crate) async fn stopped(&self) {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// The wake requests so far (a counter: a new value is a new request).
    pub(crate) fn wakes(&self) -> watch::Receiver<u64> {
        self.wake.subscribe()
    }

    /// Take SIGTERM and SIGINT as stop, SIGHUP as wake, until the returned task is aborted.
    pub(crate) fn handle_signals(
        control: std::sync::Arc<Control>,
    ) -> std::io::Result<tokio::task::JoinHandle<()>> {
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut hup = signal(SignalKind::hangup())?;
        Ok(tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = term.recv() => control.stop(),
                    _ = int.recv() => control.stop(),
                    _ = hup.recv() => control.wake(),
                }
            }
        }))
    }
}
