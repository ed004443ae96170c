//! The agent as a service: systemd's notification socket (`Type=notify`). I/O only: when the
//! agent is ready is its own word (`Event::ready`).

use std::os::unix::net::UnixDatagram;

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

    /// One that sends nothing.
    pub fn none() -> Self {
        Notifier { socket: None, ready: false }
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
