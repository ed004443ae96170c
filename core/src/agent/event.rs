//! The agent's structured events: one `agent=<front-end> step=<step> key=value ...` line per
//! step (or, with [`LogFormat::Json`], one JSON object per line with the same keys in the same
//! order), formatted here so that every front-end prints exactly the same thing.

use crate::rfc3339;

/// Longest event line (longer values are cut at a character boundary, ending in `...`).
pub const EVENT_LEN: usize = 640;

/// A formatted event line.
pub type Line = heapless::String<EVENT_LEN>;

/// How event lines are written.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `agent=<fe> step=<step> key=value ...` (logfmt).
    #[default]
    Text,
    /// `{"agent":"<fe>","step":"<step>","key":"value",...}`: one JSON object per line, every
    /// value a string (times in RFC 3339), the keys in the text form's order.
    Json,
}

/// The longest front-end name (`rust`, `c`, `go`, ...).
pub(super) const MAX_FRONT_END: usize = 16;

/// The agent's event lines on their way out: formatted with the front-end's name in the
/// configured format, queued until [`super::Agent::poll`] hands them out one by one.
pub(super) struct Events {
    front_end: heapless::String<MAX_FRONT_END>,
    format: LogFormat,
    /// Lines not yet handed out, each with whether it updates the previous one.
    queue: heapless::Deque<(Line, bool), 4>,
    /// The line handed out last (an action borrows it).
    pub(super) shown: Line,
}

impl Events {
    pub(super) const fn new() -> Self {
        Events {
            front_end: heapless::String::new(),
            format: LogFormat::Text,
            queue: heapless::Deque::new(),
            shown: Line::new(),
        }
    }

    /// Back to [`Events::new`], in place.
    pub(super) fn reset(&mut self) {
        let Events { front_end, format, queue, shown } = self;
        front_end.clear();
        *format = LogFormat::Text;
        queue.clear();
        shown.clear();
    }

    /// Name the front-end (at most [`MAX_FRONT_END`] bytes of `[a-z0-9-]`, else
    /// [`crate::Error::InvalidConfig`]) and pick the format.
    pub(super) fn configure(&mut self, front_end: &str, format: LogFormat) -> crate::Result<()> {
        let ok = !front_end.is_empty()
            && front_end.len() <= MAX_FRONT_END
            && front_end.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        self.front_end.clear();
        if !ok || self.front_end.push_str(front_end).is_err() {
            return Err(crate::Error::InvalidConfig);
        }
        self.format = format;
        Ok(())
    }

    /// A line for `step`, to fill and [`Events::push`].
    pub(super) fn ev(&self, step: &str) -> LineBuilder {
        LineBuilder::new(&self.front_end, step, self.format)
    }

    /// Queue a line (the oldest is dropped if four wait: a front-end that never polls loses
    /// history, never the agent's state).
    pub(super) fn push(&mut self, line: Line) {
        self.push_as(line, false);
    }

    /// Queue a line that is progress on the previous one ([`super::Event::update`]).
    pub(super) fn update(&mut self, line: Line) {
        self.push_as(line, true);
    }

    fn push_as(&mut self, line: Line, update: bool) {
        if self.queue.is_full() {
            let _ = self.queue.pop_front();
        }
        let _ = self.queue.push_back((line, update));
    }

    /// Whether a line waits to be handed out.
    pub(super) fn pending(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The next line to hand out, kept as [`Events::shown`]; whether it is an update.
    pub(super) fn next(&mut self) -> Option<bool> {
        let (line, update) = self.queue.pop_front()?;
        self.shown = line;
        Some(update)
    }
}

/// Builds one line: `agent=<fe> step=<step>` then ` key=value` pairs. Values that are empty or
/// hold a space, `"`, `=` or a control character are written in double quotes with `"` and `\`
/// escaped and control characters replaced by `?`. In JSON, values are JSON strings (`"` and
/// `\` escaped, control characters as `\u00XX`). A line cut at [`EVENT_LEN`] ends its value
/// in `...` (and stays valid JSON). Never pass a secret.
pub(crate) struct LineBuilder {
    pub(crate) line: Line,
    full: bool,
    json: bool,
}

/// Room kept at the end of a JSON line for `..."}`.
const JSON_TAIL: usize = 5;

impl LineBuilder {
    pub(crate) fn new(front_end: &str, step: &str, format: LogFormat) -> Self {
        let json = format == LogFormat::Json;
        let mut b = LineBuilder { line: Line::new(), full: false, json };
        if json {
            let _ = b.line.push('{');
            b.json_pair(false, "agent", front_end);
            b.json_pair(true, "step", step);
        } else {
            b.raw("agent=");
            b.raw(front_end);
            b.raw(" step=");
            b.raw(step);
        }
        b
    }

    fn raw(&mut self, s: &str) {
        if self.full {
            return;
        }
        if self.json {
            // Whole pieces only (never half an escape), room kept for `..."}`.
            if self.line.len() + s.len() + JSON_TAIL > EVENT_LEN {
                self.full = true;
                let _ = self.line.push_str("...\"");
            } else {
                let _ = self.line.push_str(s);
            }
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

    /// `,"key":"value"` (no comma first), the value escaped for JSON. A pair whose key does
    /// not fit is left out; a value that does not fit is cut, ending in `...`.
    fn json_pair(&mut self, comma: bool, key: &str, value: &str) {
        if self.full {
            return;
        }
        // (keys are the agent's own: plain ASCII, nothing to escape)
        if self.line.len() + usize::from(comma) + key.len() + 4 + JSON_TAIL > EVENT_LEN {
            self.full = true;
            return;
        }
        for part in [if comma { ",\"" } else { "\"" }, key, "\":\""] {
            let _ = self.line.push_str(part);
        }
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for c in value.chars() {
            let mut tmp = [0u8; 6];
            let piece: &str = match c {
                '"' => "\\\"",
                '\\' => "\\\\",
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    let n = c as usize;
                    let digit = |i: usize| HEX.get(i & 15).copied().unwrap_or(b'0');
                    tmp = [b'\\', b'u', b'0', b'0', digit(n >> 4), digit(n)];
                    core::str::from_utf8(&tmp).unwrap_or("?")
                }
                c => c.encode_utf8(&mut tmp),
            };
            self.raw(piece);
        }
        if !self.full {
            let _ = self.line.push('"');
        }
    }

    /// ` key=value` (quoted when needed).
    pub(crate) fn kv(mut self, key: &str, value: &str) -> Self {
        if self.json {
            self.json_pair(true, key, value);
            return self;
        }
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
        if value < 0 {
            let _ = s.push('-');
        }
        let _ = s.push_str(crate::out::decimal(value.unsigned_abs(), &mut [0; 20]));
        self.kv(key, &s)
    }

    /// ` key=<RFC 3339 UTC>` (the decimal seconds if out of range).
    pub(crate) fn time(self, key: &str, unix: i64) -> Self {
        match rfc3339::format(unix) {
            Ok(t) => self.kv(key, t.as_str()),
            Err(_) => self.num(key, unix),
        }
    }

    pub(crate) fn done(mut self) -> Line {
        if self.json {
            // (room was kept for it)
            let _ = self.line.push('}');
        }
        self.line
    }
}

/// A duration for people: `45s`, `1m30s`, `2h5m`, `3d4h` (negative as `0s`).
pub(crate) fn duration(secs: i64) -> heapless::String<24> {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut out = heapless::String::new();
    let mut part = |n: i64, unit: char| {
        let _ = out.push_str(crate::out::decimal(n.unsigned_abs(), &mut [0; 20]));
        let _ = out.push(unit);
    };
    match (d, h, m) {
        (0, 0, 0) => part(sec, 's'),
        (0, 0, _) if sec == 0 => part(m, 'm'),
        (0, 0, _) => {
            part(m, 'm');
            part(sec, 's');
        }
        (0, _, 0) => part(h, 'h'),
        (0, _, _) => {
            part(h, 'h');
            part(m, 'm');
        }
        (_, 0, _) => part(d, 'd'),
        _ => {
            part(d, 'd');
            part(h, 'h');
        }
    }
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
        let l = LineBuilder::new("rust", "wait", LogFormat::Text)
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
        let l = LineBuilder::new("c", "x", LogFormat::Text).kv("v", &long).done();
        assert!(l.len() <= EVENT_LEN && l.ends_with("..."), "{}", l.len());
    }

    #[test]
    fn json_lines_escape_and_cut_and_stay_json() {
        let l = LineBuilder::new("rust", "wait", LogFormat::Json)
            .kv("name", "node-csr-abc")
            .kv("odd", "a\"b\\c\nd\u{7f}é")
            .time("at", 0)
            .num("n", -3)
            .done();
        assert_eq!(
            l.as_str(),
            r#"{"agent":"rust","step":"wait","name":"node-csr-abc","odd":"a\"b\\c\u000ad\u007fé","at":"1970-01-01T00:00:00Z","n":"-3"}"#
        );
        // Around the cut: the value fits whole, then is cut, then the next pair is left out
        // (every length up to EVENT_LEN took 11 minutes under Miri).
        let (mut cut, mut whole) = (false, false);
        for n in (0..4).chain(290..320) {
            let v = "\"".repeat(n);
            let l = LineBuilder::new("c", "x", LogFormat::Json).kv("v", &v).kv("w", "1").done();
            assert!(l.len() <= EVENT_LEN, "{n}: {}", l.len());
            assert!(
                l.starts_with(r#"{"agent":"c","step":"x","v":""#) && l.ends_with("\"}"),
                "{n}: {l}"
            );
            // Valid JSON: parsed by serde_json in the agent's tests; here, balanced quotes.
            let unescaped = l.replace("\\\\", "").replace("\\\"", "");
            assert_eq!(unescaped.matches('"').count() % 2, 0, "{n}: {l}");
            cut |= l.ends_with("...\"}");
            whole |= l.ends_with(",\"w\":\"1\"}");
        }
        assert!(cut && whole, "the range crosses the cut");
    }
}
