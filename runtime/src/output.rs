//! The agent's lines on stdout: one per line, and on a terminal a progress update (a long
//! wait's `step=wait` again) replaces the line before it instead of scrolling.

use std::io::Write;

/// Where the lines go.
#[derive(Default)]
pub(crate) struct Printer {
    /// The terminal rows the last line took (0: not a terminal, or nothing printed).
    rows: usize,
}

impl Printer {
    /// Print a line; on a terminal a progress update replaces the rows the line before took.
    pub(crate) fn line(&mut self, line: &str, update: bool) {
        // SAFETY: a plain C struct that TIOCGWINSZ fills; fd 1 stays open for the call.
        let cols = unsafe {
            let mut ws: libc::winsize = std::mem::zeroed();
            if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0 { usize::from(ws.ws_col) } else { 0 }
        };
        // A closed stdout (a pipe's reader gone, a hung-up terminal) does not stop the agent.
        let mut out = std::io::stdout().lock();
        if cols > 0 && update && self.rows > 0 {
            let _ = write!(out, "\x1b[{}F\x1b[J", self.rows);
        }
        let _ = writeln!(out, "{line}");
        self.rows = if cols > 0 { line.chars().count().div_ceil(cols).max(1) } else { 0 };
    }
}
