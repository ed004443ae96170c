//! `kubeboot run` as a service: the signals (SIGTERM/SIGINT stop, SIGHUP wakes) and systemd's
//! notification socket (`Type=notify`). I/O only: when the agent is ready is its own word
//! (`Event::ready`).

use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering};

/// SIGTERM or SIGINT arrived.
static STOP: AtomicBool = AtomicBool::new(false);
/// SIGHUP arrived and was not taken yet.
static HANGUP: AtomicBool = AtomicBool::new(false);
/// A request is in flight (nothing is being written).
static IN_HTTP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    if IN_HTTP.load(Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe; mid-request no file is being written, and the
        // lines printed so far are flushed (stdout is line-buffered).
        unsafe { libc::_exit(0) }
    }
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_hangup(_: libc::c_int) {
    HANGUP.store(true, Ordering::SeqCst);
}

/// SIGTERM and SIGINT end the agent cleanly: at once during a request or a sleep, else after
/// the file steps under way (never between a write and what completes it). SIGHUP ends a sleep
/// between attempts: the agent reads its files again (the bootstrap kubeconfig included).
pub fn handle_signals() {
    let stop = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let hangup = on_hangup as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing handlers that only touch atomics and call `_exit`.
    unsafe {
        libc::signal(libc::SIGTERM, stop);
        libc::signal(libc::SIGINT, stop);
        libc::signal(libc::SIGHUP, hangup);
    }
}

/// Whether a stop signal arrived.
pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Whether a SIGHUP arrived since the last call.
pub fn take_hangup() -> bool {
    HANGUP.swap(false, Ordering::SeqCst)
}

/// Whether a hangup is waiting (to end a sleep early, without taking it).
pub fn hangup_pending() -> bool {
    HANGUP.load(Ordering::SeqCst)
}

/// Mark a request in flight (a stop signal then exits at once) or done.
pub fn in_http(on: bool) {
    IN_HTTP.store(on, Ordering::SeqCst);
}

/// systemd's notification socket (`$NOTIFY_SOCKET`, sd_notify(3)): `READY=1` once, `STATUS=`
/// the latest event line, `STOPPING=1`. Absent: nothing is sent.
pub struct Notifier {
    socket: Option<(UnixDatagram, std::os::unix::net::SocketAddr)>,
    ready: bool,
}

impl Notifier {
    /// From the environment (systemd sets `NOTIFY_SOCKET` for `Type=notify` units).
    pub fn from_env() -> Self {
        let socket = std::env::var_os("NOTIFY_SOCKET").and_then(|p| {
            let p = p.to_string_lossy().into_owned();
            let addr = match p.strip_prefix('@') {
                Some(name) => {
                    use std::os::linux::net::SocketAddrExt;
                    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).ok()?
                }
                None => std::os::unix::net::SocketAddr::from_pathname(&p).ok()?,
            };
            Some((UnixDatagram::unbound().ok()?, addr))
        });
        Notifier { socket, ready: false }
    }

    fn send(&self, msg: &str) {
        if let Some((s, addr)) = &self.socket
            && let Err(e) = s.send_to_addr(msg.as_bytes(), addr)
        {
            eprintln!("kubeboot: NOTIFY_SOCKET: {e}");
        }
    }

    /// An event: its line becomes the status; the first ready one also says `READY=1`.
    pub fn event(&mut self, line: &str, ready: bool) {
        // One line per message: the status is what follows `STATUS=` up to the newline.
        let status = line.replace('\n', " ");
        if ready && !self.ready {
            self.ready = true;
            self.send(&format!("READY=1\nSTATUS={status}"));
        } else {
            self.send(&format!("STATUS={status}"));
        }
    }

    /// The agent stops.
    pub fn stopping(&self) {
        self.send("STOPPING=1");
    }
}
