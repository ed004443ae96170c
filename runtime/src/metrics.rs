//! Where the agent's metrics go ([`crate::Options::metrics_bind_address`],
//! [`crate::Options::metrics_textfile`]): I/O only. The names, values and text are the core's
//! (`kubeboot::metrics`); this serves them over HTTP, as the kubelet's `/metrics`, and writes them
//! for node_exporter's textfile collector.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeboot::metrics::{self, Metrics, RENDER_CAP};

use crate::Error;
use crate::clock::unix_now;

/// The rendered text at `now`.
fn text(m: &Metrics, now: i64) -> Vec<u8> {
    let mut buf = vec![0u8; RENDER_CAP];
    let n = metrics::render(m, now, &mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// The metrics outputs of one agent run.
pub struct MetricsOut {
    shared: Arc<Mutex<Metrics>>,
    textfile: Option<PathBuf>,
    written: Option<(Metrics, i64)>,
}

impl MetricsOut {
    /// Start serving on `bind` (if given) and writing `textfile` (if given).
    pub fn start(bind: Option<SocketAddr>, textfile: Option<PathBuf>) -> Result<Self, Error> {
        let shared = Arc::new(Mutex::new(Metrics::default()));
        if let Some(addr) = bind {
            let listener = TcpListener::bind(addr)
                .map_err(|e| Error::Setup(format!("--metrics-bind-address {addr}: {e}")))?;
            let m = Arc::clone(&shared);
            std::thread::spawn(move || serve(&listener, &m));
        }
        if let Some(p) = &textfile
            && metrics::check_textfile(&p.to_string_lossy()).is_err()
        {
            return Err(Error::Setup(format!(
                "--metrics-textfile {}: node_exporter reads only *.prom files",
                p.display()
            )));
        }
        Ok(MetricsOut { shared, textfile, written: None })
    }

    /// The longest sleep between two looks at the outputs: the textfile's TTLs are as of its
    /// last write, so it is rewritten at least this often.
    pub fn max_sleep_secs(&self) -> i64 {
        if self.textfile.is_some() { metrics::TEXTFILE_REFRESH_SECS } else { 3600 }
    }

    /// The agent's metrics as of now: to the HTTP endpoint, and to the textfile when they
    /// changed or its refresh is due. A failed write is reported, never fatal.
    pub fn update(&mut self, m: Metrics, now: i64) {
        if let Ok(mut s) = self.shared.lock() {
            *s = m;
        }
        let Some(path) = &self.textfile else { return };
        let due = match self.written {
            Some((old, at)) => old != m || now - at >= metrics::TEXTFILE_REFRESH_SECS,
            None => true,
        };
        if !due {
            return;
        }
        if let Err(e) = write_textfile(path, &text(&m, now)) {
            eprintln!("kubeboot: --metrics-textfile {}: {e}", path.display());
        }
        // (tried: a failed write is retried at the next change or refresh, not at once)
        self.written = Some((m, now));
    }
}

/// Atomically (a temporary file in the same directory, renamed into place), mode 0644: the
/// collector reads whole files only, often as another user.
fn write_textfile(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let r = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn serve(listener: &TcpListener, m: &Mutex<Metrics>) {
    for conn in listener.incoming().flatten() {
        let snapshot = m.lock().map(|g| *g).unwrap_or_default();
        let _ = answer(conn, &snapshot);
    }
}

/// One HTTP/1.1 exchange, then close: `GET /metrics` gets the text, `/healthz` `ok`, anything
/// else 404 (405 for another method).
fn answer(mut conn: TcpStream, m: &Metrics) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = head.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", text(m, unix_now()))
        }
        ("GET" | "HEAD", "/healthz") => ("200 OK", "text/plain; charset=utf-8", b"ok".to_vec()),
        ("GET" | "HEAD", _) => {
            ("404 Not Found", "text/plain; charset=utf-8", b"not found\n".to_vec())
        }
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", b"GET only\n".to_vec()),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(&body);
    }
    conn.write_all(&out)?;
    conn.flush()
}
