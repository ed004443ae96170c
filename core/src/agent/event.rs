//! The agent's structured events: one `agent=<front-end> step=<step> key=value ...` line per
//! step, formatted here so that every front-end prints exactly the same thing.

use core::fmt::Write;

use crate::rfc3339;

/// Longest event line (longer values are cut at a character boundary, ending in `...`).
pub const EVENT_LEN: usize = 640;

/// A formatted event line.
pub type Line = heapless::String<EVENT_LEN>;

/// Builds one line: `agent=<fe> step=<step>` then ` key=value` pairs. Values that are empty or
/// hold a space, `"`, `=` or a control character are written in double quotes with `"` and `\`
/// escaped and control characters replaced by `?`. Never pass a secret.
pub(crate) struct LineBuilder {
    pub(crate) line: Line,
    full: bool,
}

impl LineBuilder {
    pub(crate) fn new(front_end: &str, step: &str) -> Self {
        let mut b = LineBuilder { line: Line::new(), full: false };
        b.raw("agent=");
        b.raw(front_end);
        b.raw(" step=");
        b.raw(step);
        b
    }

    fn raw(&mut self, s: &str) {
        if self.full {
            return;
        }
        for c in s.chars() {
            // Keep room for the "..." marker.
            if self.line.len() + c.len_utf8() + 3 > EVENT_LEN {
                self.full = true;
                let _ = self.line.push_str("...");
                return;
            }
            let _ = self.line.push(c);
        }
    }

    /// ` key=value` (quoted when needed).
    pub(crate) fn kv(mut self, key: &str, value: &str) -> Self {
        self.raw(" ");
        self.raw(key);
        self.raw("=");
        let quote = value.is_empty()
            || value
                .chars()
                .any(|c| c == ' ' || c == '"' || c == '=' || c == '\\' || c.is_control());
        if !quote {
            self.raw(value);
            return self;
        }
        self.raw("\"");
        for c in value.chars() {
            let mut tmp = [0u8; 4];
            let piece: &str = match c {
                '"' => "\\\"",
                '\\' => "\\\\",
                c if c.is_control() => "?",
                c => c.encode_utf8(&mut tmp),
            };
            self.raw(piece);
        }
        self.raw("\"");
        self
    }

    /// ` key=<decimal>`.
    pub(crate) fn num(self, key: &str, value: i64) -> Self {
        let mut s = heapless::String::<24>::new();
        let _ = write!(s, "{value}");
        self.kv(key, &s)
    }

    /// ` key=<RFC 3339 UTC>` (the decimal seconds if out of range).
    pub(crate) fn time(self, key: &str, unix: i64) -> Self {
        match rfc3339::format(unix) {
            Ok(t) => self.kv(key, t.as_str()),
            Err(_) => self.num(key, unix),
        }
    }

    pub(crate) fn done(self) -> Line {
        self.line
    }
}

/// A duration for people: `45s`, `1m30s`, `2h5m`, `3d4h` (negative as `0s`).
pub(crate) fn duration(secs: i64) -> heapless::String<24> {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut out = heapless::String::new();
    let _ = match (d, h, m) {
        (0, 0, 0) => write!(out, "{sec}s"),
        (0, 0, _) if sec == 0 => write!(out, "{m}m"),
        (0, 0, _) => write!(out, "{m}m{sec}s"),
        (0, _, 0) => write!(out, "{h}h"),
        (0, _, _) => write!(out, "{h}h{m}m"),
        (_, 0, _) => write!(out, "{d}d"),
        _ => write!(out, "{d}d{h}h"),
    };
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_as_people_write_them() {
        for (s, want) in [
            (-5, "0s"),
            (0, "0s"),
            (45, "45s"),
            (60, "1m"),
            (90, "1m30s"),
            (3600, "1h"),
            (7500, "2h5m"),
            (86_400, "1d"),
            (90_000, "1d1h"),
            (i64::MAX, "106751991167300d15h"),
        ] {
            assert_eq!(super::duration(s).as_str(), want, "{s}");
        }
    }

    use super::*;

    #[test]
    fn lines_quote_and_cut() {
        let l = LineBuilder::new("rust", "wait")
            .kv("name", "node-csr-abc")
            .kv("hint", "kubectl certificate approve node-csr-abc")
            .kv("empty", "")
            .kv("odd", "a\"b\\c\nd")
            .time("at", 0)
            .num("n", -3)
            .done();
        assert_eq!(
            l.as_str(),
            "agent=rust step=wait name=node-csr-abc hint=\"kubectl certificate approve node-csr-abc\" \
             empty=\"\" odd=\"a\\\"b\\\\c?d\" at=1970-01-01T00:00:00Z n=-3"
        );
        let long = "é".repeat(EVENT_LEN);
        let l = LineBuilder::new("c", "x").kv("v", &long).done();
        assert!(l.len() <= EVENT_LEN && l.ends_with("..."), "{}", l.len());
    }
}
