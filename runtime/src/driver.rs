//! The loop: poll the core's agent and do what it asks — files through the core's crash-safe
//! `store::FileSteps`, requests through [`crate::http`], keys through kubeboot-hwkey, entropy
//! from the OS, sleeping until its time or a wake-up — and say every line it has to say.

use std::sync::Arc;
use std::time::Duration;

use kubeboot::agent::{Action, Agent, Event, FileStep};
use kubeboot::store::FileSteps;
use kubeboot_hwkey::Devices;
use tokio::sync::{broadcast, watch};
use zeroize::Zeroizing;

use crate::clock::{self, unix_now, utc_offset};
use crate::control::Control;
use crate::credentials::Shared;
use crate::current::Current;
use crate::http::Http;
use crate::metrics::MetricsOut;
use crate::notify::Notifier;
use crate::output::Printer;
use crate::{Error, Finished, Options, RuntimeStatus, Settings};

/// Where the agent's lines go, and what they set off.
pub(crate) struct Outputs {
    pub(crate) printer: Option<Printer>,
    pub(crate) notify: Notifier,
    pub(crate) events: broadcast::Sender<crate::Event>,
    pub(crate) status: Arc<watch::Sender<RuntimeStatus>>,
    pub(crate) on_event: Option<crate::OnEvent>,
    /// Look at the node's credentials before the next action that is not a line or a file step.
    pub(crate) look: bool,
    pub(crate) credentials: bool,
}

impl Outputs {
    fn say(&mut self, step: &'static str, line: &str, update: bool, ready: bool) {
        if let Some(p) = &mut self.printer {
            p.line(line, update);
        }
        self.notify.event(line, ready);
        let event = crate::Event { step, line: line.to_owned(), update, ready };
        self.status.send_modify(|s| {
            s.line.clone_from(&event.line);
            s.ready |= ready;
        });
        if let Some(f) = &mut self.on_event {
            f(&event);
        }
        // (no subscriber is no error)
        let _ = self.events.send(event);
        // The agent has judged the node's files again: so does the runtime.
        self.look |= self.credentials && step == "credentials";
    }

    fn event(&mut self, e: &Event<'_>) {
        self.say(e.step, e.line, e.update, e.ready);
    }
}

/// The longest sleep across which the agent's connection is kept (a Retry-After or a backoff
/// between two requests of one attempt); a longer one closes it.
const KEEP_ACROSS_SLEEP_SECS: i64 = 60;

/// What a run uses besides the agent.
pub(crate) struct Parts<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) options: &'a Options,
    pub(crate) shared: &'a Shared,
    pub(crate) control: &'a Arc<Control>,
    pub(crate) outputs: Outputs,
}

/// Run the agent to its end: its outcome, a stop, or why it failed.
pub(crate) async fn drive(mut p: Parts<'_>) -> Result<Finished, Error> {
    let mut metrics_out =
        MetricsOut::start(p.options.metrics_bind_address, p.options.metrics_textfile.clone())?;
    let devices = Devices { tcti: p.options.tcti.clone() };
    let mut seed = [0u8; 8];
    getrandom::fill(&mut seed).map_err(|e| Error::Setup(format!("OS randomness: {e}")))?;
    let dns = p.settings.dns_names();
    let config = p.settings.config(&dns, utc_offset(unix_now()), u64::from_le_bytes(seed))?;
    let caps = p.options.capacities;
    let mut memory = vec![0u8; caps.memory_len()];
    let mut agent = Agent::new(&mut memory, &caps).map_err(Error::Config)?;
    agent.start(&config).map_err(Error::Config)?;
    let _signals = match p.options.signals {
        true => Some(Abort(
            Control::handle_signals(p.control.clone())
                .map_err(|e| Error::Setup(format!("signals: {e}")))?,
        )),
        false => None,
    };
    let (files, mut http, mut current) =
        (FileSteps::new(), Http::new(devices.clone()), Current::default());
    let mut wakes = p.control.wakes();
    let end = loop {
        let now = unix_now();
        agent.set_utc_offset(utc_offset(now));
        if wakes.has_changed().unwrap_or(false) {
            wakes.borrow_and_update();
            agent.wake();
        }
        let metrics = agent.metrics();
        metrics_out.update(metrics, now);
        p.outputs.status.send_modify(|s| s.metrics = metrics);
        let action = agent.poll(now);
        if p.control.stopping() && matches!(action, Action::Sleep { .. } | Action::Http(_)) {
            break Ok(Finished::Stopped);
        }
        // Once a file plan is complete (the next action is not one of its steps), and after the
        // agent's verdict on the files: the credentials the embedding program gets.
        if p.outputs.look && !matches!(action, Action::File(_) | Action::Event(_)) {
            p.outputs.look = false;
            current.refresh(p.settings, &devices, p.shared);
            publish_status(p.shared, &p.outputs.status);
        }
        match action {
            Action::Read(_) => report(files.perform(&mut agent, now)),
            Action::File(step) => {
                let changes = matches!(
                    step,
                    FileStep::SwapCurrent { .. }
                        | FileStep::WriteKubeconfig { .. }
                        | FileStep::WriteCa { .. }
                );
                let r = files.perform(&mut agent, now);
                p.outputs.look |= p.outputs.credentials && changes && matches!(r, Some(Ok(())));
                report(r);
            }
            Action::Key(_) => {
                if let Some(e) = devices.perform(&mut agent, now) {
                    // The agent decides what it means; the device's words are for the operator.
                    eprintln!("kubeboot: {e}");
                }
            }
            Action::Entropy { len } => {
                let mut bytes = Zeroizing::new(vec![0u8; len]);
                getrandom::fill(&mut bytes)
                    .map_err(|e| Error::Setup(format!("OS randomness: {e}")))?;
                agent.on_entropy(&bytes);
            }
            Action::Http(req) => {
                let prepared = http.prepare(&req, now);
                let outputs = &mut p.outputs;
                let mut say = |e: &Event<'_>| outputs.event(e);
                // The request and its answer (a watch's whole stream) write nothing: a stop
                // meanwhile ends the run at once.
                tokio::select! {
                    kept = prepared.exchange(&mut agent, &mut say) => http.keep(kept),
                    () = p.control.stopped() => break Ok(Finished::Stopped),
                }
            }
            Action::Sleep { until } => {
                if until - now > KEEP_ACROSS_SLEEP_SECS {
                    // (a daemon's sleep until its rotation deadline holds no connection open)
                    http.keep(None);
                }
                // (the textfile's TTLs are as of its last write: it is rewritten in time)
                let until = until.min(now + metrics_out.max_sleep_secs());
                let nap = clock::until(until).max(Duration::from_millis(100));
                tokio::select! {
                    () = tokio::time::sleep(nap) => {}
                    // (changed() takes the request: it is handed to the agent here)
                    _ = wakes.changed() => {
                        agent.wake();
                    }
                    () = p.control.stopped() => break Ok(Finished::Stopped),
                }
            }
            Action::Event(e) => p.outputs.event(&e),
            Action::Done(outcome) => break Ok(Finished::Done(outcome)),
            Action::Failed(f) => {
                p.outputs.say("failed", f.line, false, false);
                let (error, detail, line) = (f.error, f.detail.to_owned(), f.line.to_owned());
                break Err(Error::Failed { error, detail, line });
            }
            _ => break Err(Error::Setup("an action this runtime does not know".into())),
        }
    };
    if matches!(end, Ok(Finished::Stopped)) {
        p.outputs.notify.stopping();
    }
    if p.outputs.look {
        current.refresh(p.settings, &devices, p.shared);
        publish_status(p.shared, &p.outputs.status);
    }
    metrics_out.update(agent.metrics(), unix_now());
    end
}

/// What the OS said of a file the agent was told about (the agent decides what it means; the
/// OS's words are for the operator).
fn report(r: Option<kubeboot::store::StoreResult<()>>) {
    if let Some(Err(e)) = r {
        eprintln!("kubeboot: {e}");
    }
}

/// The published certificates' state, in the status.
fn publish_status(shared: &Shared, status: &watch::Sender<RuntimeStatus>) {
    let client = shared.client.borrow().current.as_ref().map(|i| i.status);
    let serving = shared.serving.borrow().current.as_ref().map(|p| p.status);
    status.send_modify(|s| {
        s.client = client.or(s.client);
        s.serving = serving.or(s.serving);
    });
}

/// A task that ends with the run.
struct Abort(tokio::task::JoinHandle<()>);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}
