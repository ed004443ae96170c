//! Where the device's work goes: instructions (under `-icount shift=0`, from timer 0, minus the
//! time asleep waiting for bytes) and peak stack, per phase of the join.

use kubeboot_firmware::{INSNS_PER_TICK, line, paint_stack, put, put_u32, stack_peak, ticks};

use crate::uart::waited_ticks;

/// The phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// TLS handshakes (key share, server check, client signature).
    Handshake,
    /// The agent until its create request: files, key, CSR, the object; and the request.
    Csr,
    /// The wait: requests, TLS records, the watch stream's events.
    Watch,
    /// The call that validated the issued certificate (the event's JSON, PEM, chain check).
    Validation,
    /// Storing the files, the identity check, everything else.
    Other,
}

const NAMES: [&str; 5] = ["handshake", "csr", "watch", "validation", "other"];

/// Instructions and peak stack per phase.
pub struct Phases {
    current: Phase,
    mark: u32,
    waited: u32,
    insns: [u32; 5],
    stack: [u32; 5],
    /// `insns` when the last run was reported ([`Phases::report_run`]).
    run_start: [u32; 5],
}

impl Phases {
    /// Start counting (in [`Phase::Other`]).
    pub fn start() -> Self {
        Phases {
            current: Phase::Other,
            mark: ticks(),
            waited: waited_ticks(),
            insns: [0; 5],
            stack: [0; 5],
            run_start: [0; 5],
        }
    }

    /// Count what ran since the last switch for the current phase; go on in `phase`. Returns
    /// the instructions counted.
    #[inline(always)]
    pub fn enter(&mut self, phase: Phase) -> u32 {
        let (t, w) = (ticks(), waited_ticks());
        let busy = t.wrapping_sub(self.mark).wrapping_sub(w.wrapping_sub(self.waited));
        let i = self.current as usize;
        let insns = busy.saturating_mul(INSNS_PER_TICK);
        if let Some(n) = self.insns.get_mut(i) {
            *n = n.saturating_add(insns);
        }
        if let Some(s) = self.stack.get_mut(i) {
            *s = (*s).max(stack_peak() as u32);
        }
        paint_stack();
        self.current = phase;
        self.mark = ticks();
        self.waited = waited_ticks();
        insns
    }

    /// Count `insns` instructions counted for `from` for `to` instead.
    pub fn shift(&mut self, from: Phase, to: Phase, insns: u32) {
        if let Some(f) = self.insns.get_mut(from as usize) {
            *f = f.saturating_sub(insns);
        }
        if let Some(t) = self.insns.get_mut(to as usize) {
            *t = t.saturating_add(insns);
        }
    }

    /// The peak stack of every phase so far.
    pub fn peak_stack(&self) -> u32 {
        self.stack.iter().copied().max().unwrap_or(0)
    }

    /// The phase being counted.
    pub fn current(&self) -> Phase {
        self.current
    }

    /// Print `instructions <run>: handshake=... csr=...`: what ran since the previous run was
    /// reported (the bootstrap, then the rotation, each on its own).
    pub fn report_run(&mut self, run: &str) {
        let _ = self.enter(self.current);
        put(b"instructions ");
        put(run.as_bytes());
        put(b":");
        for ((name, v), s) in NAMES.iter().zip(self.insns.iter()).zip(self.run_start.iter()) {
            put(b" ");
            put(name.as_bytes());
            put(b"=");
            put_u32(v.saturating_sub(*s));
        }
        line(&[], None);
        self.run_start = self.insns;
    }

    /// Print `instructions: handshake=... csr=...` (every run) and `stack: handshake=...`.
    pub fn report(&mut self) {
        let _ = self.enter(self.current);
        for (title, values) in [("instructions:", &self.insns), ("stack:", &self.stack)] {
            put(title.as_bytes());
            for (name, v) in NAMES.iter().zip(values.iter()) {
                put(b" ");
                put(name.as_bytes());
                put(b"=");
                put_u32(*v);
            }
            line(&[], None);
        }
    }
}
