//! Heap-free JSON pull reader (RFC 8259, strict).
//!
//! Used for apiserver responses (CertificateSigningRequest objects, watch events, `Status`
//! errors, the `cluster-info` ConfigMap) and JSON kubeconfigs. Nothing is allocated: strings are
//! borrowed raw slices ([`Str`]) that can be compared with a `&str` or unescaped into a caller
//! buffer.
//!
//! Limits: nesting depth ≤ [`MAX_DEPTH`], input ≤ [`MAX_INPUT_LEN`] bytes. Work is linear in the
//! input for a full pass; [`Value`] containers keep their raw span, and walking into a container
//! re-reads that span, so a lookup `n` levels deep costs at most `n` passes (`n ≤ MAX_DEPTH`).
//!
//! Strictness: exactly one top-level value surrounded by optional whitespace (space, tab, CR, LF);
//! no trailing commas, comments, leading zeros, `NaN`, single quotes or control characters in
//! strings; strings must be valid UTF-8 and `\u` escapes must not be lone surrogates.
//! Every error is [`Error::Malformed`].
//!
//! ```
//! use kubeboot::json;
//! let doc = br#"{"status":{"certificate":"TFMwdA=="}}"#;
//! let v = json::find(doc, &["status", "certificate"]).unwrap().unwrap();
//! assert!(v.as_str().unwrap().eq_str("TFMwdA=="));
//! ```

use crate::error::{Error, Result};

/// Maximum nesting depth of arrays and objects.
pub const MAX_DEPTH: usize = 32;
/// Maximum input size in bytes (16 MiB).
pub const MAX_INPUT_LEN: usize = 16 * 1024 * 1024;

/// A JSON string as it appears in the input (between the quotes, escapes not yet decoded).
///
/// The raw text has been validated: it is UTF-8, every escape is well-formed, and `\u` escapes
/// form valid scalar values, so decoding cannot fail except for a short buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Str<'a> {
    raw: &'a str,
    escaped: bool,
}

impl core::fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Str({:?})", self.raw)
    }
}

impl<'a> Str<'a> {
    /// The raw text between the quotes (escapes not decoded).
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The string itself when it contains no escapes (then raw == decoded).
    pub fn as_borrowed(&self) -> Option<&'a str> {
        if self.escaped { None } else { Some(self.raw) }
    }

    /// Decoded bytes (UTF-8), one at a time.
    pub fn bytes(&self) -> DecodedBytes<'a> {
        DecodedBytes { raw: self.raw.as_bytes(), pos: 0, pending: [0; 4], plen: 0, pidx: 0 }
    }

    /// Length in bytes of the decoded string.
    pub fn decoded_len(&self) -> usize {
        if self.escaped { self.bytes().count() } else { self.raw.len() }
    }

    /// Whether the decoded string equals `s` (no allocation).
    pub fn eq_str(&self, s: &str) -> bool {
        if !self.escaped {
            return self.raw == s;
        }
        self.bytes().eq(s.bytes())
    }

    /// Whether the decoded string is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Unescape into `buf`; returns the decoded string. A short buffer is
    /// [`Error::BufferTooSmall`] and leaves `buf` in an unspecified state.
    pub fn decode_into<'b>(&self, buf: &'b mut [u8]) -> Result<&'b str> {
        let needed = self.decoded_len();
        if buf.len() < needed {
            return Err(Error::BufferTooSmall { needed });
        }
        let mut n = 0;
        for (dst, b) in buf.iter_mut().zip(self.bytes()) {
            *dst = b;
            n += 1;
        }
        let out = buf.get(..n).ok_or(Error::Malformed)?;
        core::str::from_utf8(out).map_err(|_| Error::Malformed)
    }
}

/// Iterator over the decoded UTF-8 bytes of a [`Str`].
#[derive(Clone, Debug)]
pub struct DecodedBytes<'a> {
    raw: &'a [u8],
    pos: usize,
    pending: [u8; 4],
    plen: u8,
    pidx: u8,
}

impl Iterator for DecodedBytes<'_> {
    type Item = u8;
    fn next(&mut self) -> Option<u8> {
        if self.pidx < self.plen {
            let b = self.pending.get(usize::from(self.pidx)).copied();
            self.pidx += 1;
            return b;
        }
        let b = *self.raw.get(self.pos)?;
        if b != b'\\' {
            self.pos += 1;
            return Some(b);
        }
        let (c, used) = decode_escape(self.raw.get(self.pos..)?)?;
        self.pos += used;
        let s = c.encode_utf8(&mut self.pending);
        self.plen = s.len() as u8;
        self.pidx = 1;
        self.pending.first().copied()
    }
}

fn hex4(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b.get(..4)? {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Decode one escape at the start of `s` (which begins with `\`); returns the char and the
/// number of input bytes used. `None` if the escape is invalid.
pub(crate) fn decode_escape(s: &[u8]) -> Option<(char, usize)> {
    let c = match *s.get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(s.get(2..)?)?;
            if (0xD800..0xDC00).contains(&hi) {
                if s.get(6) != Some(&b'\\') || s.get(7) != Some(&b'u') {
                    return None;
                }
                let lo = hex4(s.get(8..)?)?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return None;
                }
                let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return Some((char::from_u32(cp)?, 12));
            }
            return Some((char::from_u32(hi)?, 6));
        }
        _ => return None,
    };
    Some((c, 2))
}

/// One event of the pull reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// `{`
    BeginObject,
    /// `}`
    EndObject,
    /// `[`
    BeginArray,
    /// `]`
    EndArray,
    /// An object member name (the following event is its value).
    Key(Str<'a>),
    /// A string value.
    String(Str<'a>),
    /// A number, as its raw (validated) text.
    Number(&'a str),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Expecting a value (top level, after `:`, or after `,` in an array).
    Value,
    /// Just after `[`: a value or `]`.
    ArrayStart,
    /// Just after `{`: a key or `}`.
    ObjectStart,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:` then a value.
    Colon,
    /// After a complete value.
    AfterValue,
    /// Top-level value complete and trailing whitespace checked.
    Done,
    /// An error occurred; the reader stays failed.
    Failed,
}

/// Strict streaming JSON reader over a byte slice.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    depth: usize,
    /// Bit i set = the container at depth i+1 is an object.
    stack: u64,
    state: State,
    token_start: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `input`. Input longer than [`MAX_INPUT_LEN`] fails on the first event.
    pub fn new(input: &'a [u8]) -> Self {
        let state = if input.len() > MAX_INPUT_LEN { State::Failed } else { State::Value };
        Reader { input, pos: 0, depth: 0, stack: 0, state, token_start: 0 }
    }

    /// Current nesting depth (0 at top level).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Byte offset just past the last event.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn skip_ws(&mut self) {
        while let Some(&b) = self.input.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn in_object(&self) -> bool {
        self.depth > 0 && (self.stack >> (self.depth - 1)) & 1 == 1
    }

    /// The next event, `Ok(None)` at the end of a valid document.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Event<'a>>> {
        let r = self.step();
        if r.is_err() {
            self.state = State::Failed;
        }
        r
    }

    fn step(&mut self) -> Result<Option<Event<'a>>> {
        loop {
            self.skip_ws();
            self.token_start = self.pos;
            let b = self.input.get(self.pos).copied();
            match self.state {
                State::Failed => return Err(Error::Malformed),
                State::Done => {
                    return if b.is_none() { Ok(None) } else { Err(Error::Malformed) };
                }
                State::AfterValue => {
                    if self.depth == 0 {
                        self.state = State::Done;
                        continue;
                    }
                    let obj = self.in_object();
                    match b {
                        Some(b',') => {
                            self.pos += 1;
                            self.state = if obj { State::Key } else { State::Value };
                        }
                        Some(b'}') if obj => return Ok(Some(self.close(Event::EndObject))),
                        Some(b']') if !obj => return Ok(Some(self.close(Event::EndArray))),
                        _ => return Err(Error::Malformed),
                    }
                }
                State::ObjectStart | State::Key => match b {
                    Some(b'}') if self.state == State::ObjectStart => {
                        return Ok(Some(self.close(Event::EndObject)));
                    }
                    Some(b'"') => {
                        let s = self.string()?;
                        self.state = State::Colon;
                        return Ok(Some(Event::Key(s)));
                    }
                    _ => return Err(Error::Malformed),
                },
                State::Colon => {
                    if b != Some(b':') {
                        return Err(Error::Malformed);
                    }
                    self.pos += 1;
                    self.state = State::Value;
                }
                State::ArrayStart if b == Some(b']') => {
                    return Ok(Some(self.close(Event::EndArray)));
                }
                State::Value | State::ArrayStart => return self.value(b).map(Some),
            }
        }
    }

    fn close(&mut self, ev: Event<'a>) -> Event<'a> {
        self.pos += 1;
        self.depth -= 1;
        self.state = State::AfterValue;
        ev
    }

    fn open(&mut self, object: bool) -> Result<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::Malformed);
        }
        if object {
            self.stack |= 1 << self.depth;
        } else {
            self.stack &= !(1 << self.depth);
        }
        self.depth += 1;
        self.pos += 1;
        self.state = if object { State::ObjectStart } else { State::ArrayStart };
        Ok(())
    }

    fn value(&mut self, b: Option<u8>) -> Result<Event<'a>> {
        let ev = match b.ok_or(Error::Malformed)? {
            b'{' => {
                self.open(true)?;
                return Ok(Event::BeginObject);
            }
            b'[' => {
                self.open(false)?;
                return Ok(Event::BeginArray);
            }
            b'"' => Event::String(self.string()?),
            b't' => self.literal(b"true", Event::Bool(true))?,
            b'f' => self.literal(b"false", Event::Bool(false))?,
            b'n' => self.literal(b"null", Event::Null)?,
            b'-' | b'0'..=b'9' => Event::Number(self.number()?),
            _ => return Err(Error::Malformed),
        };
        self.state = State::AfterValue;
        Ok(ev)
    }

    fn literal(&mut self, word: &[u8], ev: Event<'a>) -> Result<Event<'a>> {
        let end = self.pos + word.len();
        if self.input.get(self.pos..end) != Some(word) {
            return Err(Error::Malformed);
        }
        self.pos = end;
        Ok(ev)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.input.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<&'a str> {
        let start = self.pos;
        if self.input.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.input.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Error::Malformed),
        }
        if self.input.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Error::Malformed);
            }
        }
        if matches!(self.input.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.input.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Error::Malformed);
            }
        }
        let raw = self.input.get(start..self.pos).ok_or(Error::Malformed)?;
        core::str::from_utf8(raw).map_err(|_| Error::Malformed)
    }

    /// Scan a string starting at the opening quote.
    fn string(&mut self) -> Result<Str<'a>> {
        let start = self.pos + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            match *self.input.get(i).ok_or(Error::Malformed)? {
                b'"' => break,
                b'\\' => {
                    let (_, used) = decode_escape(self.input.get(i..).ok_or(Error::Malformed)?)
                        .ok_or(Error::Malformed)?;
                    escaped = true;
                    i += used;
                }
                0..=0x1f => return Err(Error::Malformed),
                _ => i += 1,
            }
        }
        let raw = self.input.get(start..i).ok_or(Error::Malformed)?;
        let raw = core::str::from_utf8(raw).map_err(|_| Error::Malformed)?;
        self.pos = i + 1;
        Ok(Str { raw, escaped })
    }

    /// Read the next value as a [`Value`], skipping over containers (their raw span is kept).
    /// Must be called where a value is expected (after a `Key` event, at the top level, or
    /// inside an array).
    pub fn read_value(&mut self) -> Result<Value<'a>> {
        let ev = self.next()?.ok_or(Error::Malformed)?;
        let start = self.token_start;
        let v = match ev {
            Event::String(s) => Value::String(s),
            Event::Number(n) => Value::Number(n),
            Event::Bool(b) => Value::Bool(b),
            Event::Null => Value::Null,
            Event::BeginObject | Event::BeginArray => {
                let target = self.depth - 1;
                while self.depth > target {
                    self.next()?.ok_or(Error::Malformed)?;
                }
                let raw = self.input.get(start..self.pos).ok_or(Error::Malformed)?;
                if matches!(ev, Event::BeginObject) {
                    Value::Object(Object { raw })
                } else {
                    Value::Array(Array { raw })
                }
            }
            _ => {
                self.state = State::Failed;
                return Err(Error::Malformed);
            }
        };
        Ok(v)
    }

    /// Skip the next value (of any type).
    pub fn skip_value(&mut self) -> Result<()> {
        self.read_value().map(|_| ())
    }
}

/// A JSON value; containers keep their raw text and are read lazily.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// An object.
    Object(Object<'a>),
    /// An array.
    Array(Array<'a>),
    /// A string.
    String(Str<'a>),
    /// A number (raw text).
    Number(&'a str),
    /// A boolean.
    Bool(bool),
    /// `null`.
    Null,
}

impl<'a> Value<'a> {
    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<Str<'a>> {
        if let Value::String(s) = self { Some(*s) } else { None }
    }

    /// The object, if this is an object.
    pub fn as_object(&self) -> Option<Object<'a>> {
        if let Value::Object(o) = self { Some(*o) } else { None }
    }

    /// The array, if this is an array.
    pub fn as_array(&self) -> Option<Array<'a>> {
        if let Value::Array(a) = self { Some(*a) } else { None }
    }

    /// The boolean, if this is a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        if let Value::Bool(b) = self { Some(*b) } else { None }
    }

    /// The number as an `i64`, if it is an integer literal (no fraction or exponent) in range.
    pub fn as_i64(&self) -> Option<i64> {
        if let Value::Number(n) = self { parse_i64(n) } else { None }
    }
}

/// Parse an integer JSON number (no fraction/exponent) into an `i64`.
pub fn parse_i64(n: &str) -> Option<i64> {
    let (neg, digits) = match n.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, n),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        let d = i64::from(b - b'0');
        v = v.checked_mul(10)?;
        v = if neg { v.checked_sub(d)? } else { v.checked_add(d)? };
    }
    Some(v)
}

/// A (syntactically valid) JSON object's raw text, `{` to `}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Object<'a> {
    raw: &'a [u8],
}

impl<'a> Object<'a> {
    /// The raw text.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterate over `(key, value)` members in document order.
    pub fn members(&self) -> Members<'a> {
        let mut r = Reader::new(self.raw);
        let ok = matches!(r.next(), Ok(Some(Event::BeginObject)));
        Members { r, done: !ok }
    }

    /// The value of member `key`; with duplicate keys the **last** one wins (as in Go's
    /// `encoding/json`).
    pub fn get(&self, key: &str) -> Result<Option<Value<'a>>> {
        let mut found = None;
        for m in self.members() {
            let (k, v) = m?;
            if k.eq_str(key) {
                found = Some(v);
            }
        }
        Ok(found)
    }
}

/// Iterator over an object's members.
#[derive(Clone, Debug)]
pub struct Members<'a> {
    r: Reader<'a>,
    done: bool,
}

impl<'a> Iterator for Members<'a> {
    type Item = Result<(Str<'a>, Value<'a>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = (|| match self.r.next()? {
            Some(Event::Key(k)) => Ok(Some((k, self.r.read_value()?))),
            Some(Event::EndObject) => Ok(None),
            _ => Err(Error::Malformed),
        })();
        match r {
            Ok(Some(m)) => Some(Ok(m)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A (syntactically valid) JSON array's raw text, `[` to `]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array<'a> {
    raw: &'a [u8],
}

impl<'a> Array<'a> {
    /// The raw text.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterate over the items.
    pub fn items(&self) -> Items<'a> {
        let mut r = Reader::new(self.raw);
        let ok = matches!(r.next(), Ok(Some(Event::BeginArray)));
        Items { r, done: !ok }
    }
}

/// Iterator over an array's items.
#[derive(Clone, Debug)]
pub struct Items<'a> {
    r: Reader<'a>,
    done: bool,
}

impl<'a> Iterator for Items<'a> {
    type Item = Result<Value<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // Peek: an `]` ends the array; otherwise read a value.
        let save = self.r.clone();
        match self.r.next() {
            Ok(Some(Event::EndArray)) => {
                self.done = true;
                None
            }
            Ok(Some(_)) => {
                self.r = save;
                match self.r.read_value() {
                    Ok(v) => Some(Ok(v)),
                    Err(e) => {
                        self.done = true;
                        Some(Err(e))
                    }
                }
            }
            Ok(None) => {
                self.done = true;
                Some(Err(Error::Malformed))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Check that `input` is exactly one valid JSON document.
pub fn validate(input: &[u8]) -> Result<()> {
    let mut r = Reader::new(input);
    while r.next()?.is_some() {}
    Ok(())
}

/// Parse a whole document into its top-level [`Value`] (validating all of it).
pub fn parse(input: &[u8]) -> Result<Value<'_>> {
    let mut r = Reader::new(input);
    let v = r.read_value()?;
    match r.next()? {
        None => Ok(v),
        Some(_) => Err(Error::Malformed),
    }
}

/// Parse the first value of a stream of concatenated documents (a watch response:
/// `{"type":"ADDED","object":{...}}\n{...}`); returns the value and the number of bytes used
/// (the value plus following whitespace). An incomplete value is [`Error::Malformed`]: wait for
/// more bytes and call again.
pub fn parse_prefix(input: &[u8]) -> Result<(Value<'_>, usize)> {
    let mut r = Reader::new(input);
    let v = r.read_value()?;
    r.skip_ws();
    Ok((v, r.pos))
}

/// Validate `doc`, then follow `path` through nested objects: `find(doc, &["status",
/// "certificate"])`. `Ok(None)` when a member is missing or a non-object is in the way.
pub fn find<'a>(doc: &'a [u8], path: &[&str]) -> Result<Option<Value<'a>>> {
    let mut v = parse(doc)?;
    for key in path {
        let Value::Object(o) = v else { return Ok(None) };
        match o.get(key)? {
            Some(next) => v = next,
            None => return Ok(None),
        }
    }
    Ok(Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(s: &str) -> Result<usize> {
        let mut r = Reader::new(s.as_bytes());
        let mut n = 0;
        while r.next()?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    #[test]
    fn accepts_valid() {
        for s in [
            "0",
            "-0",
            "1.5e10",
            "-12.0E-3",
            "\"\"",
            "true",
            "null",
            " [ ] ",
            "{}",
            "{\"a\":[1,{\"b\":null}],\"c\":\"\\u00e9\\ud83d\\ude00\"}",
            "\"\u{e9}\"",
        ] {
            assert!(events(s).is_ok(), "{s}");
        }
    }

    #[test]
    fn rejects_invalid() {
        for s in [
            "",
            " ",
            "01",
            "1.",
            ".5",
            "1e",
            "+1",
            "-",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "[1 2]",
            "{\"a\":1}}",
            "[",
            "]",
            "\"\\ud83d\"",
            "\"\\ude00\"",
            "\"\\x\"",
            "\"a\nb\"",
            "'a'",
            "tru",
            "nulll",
            "1 2",
            "NaN",
            "{\"a\":1]",
            "[1}",
            "\"abc",
            "[\"\\u12\"]",
        ] {
            assert_eq!(events(s), Err(Error::Malformed), "{s:?}");
        }
        assert_eq!(validate(b"\"\xff\""), Err(Error::Malformed));
    }

    #[test]
    fn depth_limit() {
        let mut s = [b'['; MAX_DEPTH + 1];
        assert_eq!(validate(&s), Err(Error::Malformed));
        let mut ok = [0u8; 2 * MAX_DEPTH];
        for (i, b) in ok.iter_mut().enumerate() {
            *b = if i < MAX_DEPTH { b'[' } else { b']' };
        }
        assert_eq!(validate(&ok), Ok(()));
        s[MAX_DEPTH] = b']';
        assert!(validate(&s).is_err());
    }

    #[test]
    fn unescape_and_compare() {
        let doc = br#"{"k\u0041y":"a\"b\\c\/\b\f\n\r\t\u00e9\ud83d\ude00"}"#;
        let o = parse(doc).unwrap().as_object().unwrap();
        let (k, v) = o.members().next().unwrap().unwrap();
        assert!(k.eq_str("kAy"));
        assert!(!k.eq_str("kAz"));
        let s = v.as_str().unwrap();
        let mut buf = [0u8; 64];
        let d = s.decode_into(&mut buf).unwrap();
        assert_eq!(d, "a\"b\\c/\u{8}\u{c}\n\r\t\u{e9}\u{1F600}");
        assert!(s.eq_str("a\"b\\c/\u{8}\u{c}\n\r\t\u{e9}\u{1F600}"));
        assert_eq!(s.decoded_len(), d.len());
        let mut small = [0u8; 3];
        assert_eq!(s.decode_into(&mut small), Err(Error::BufferTooSmall { needed: d.len() }));
        assert_eq!(s.as_borrowed(), None);
    }

    #[test]
    fn find_paths() {
        let doc = br#"{"type":"ADDED","object":{"status":{"conditions":[{"type":"Approved"}],
            "certificate":"QUJD"},"metadata":{"name":"csr-1"}},"n":-42}"#;
        let cert = find(doc, &["object", "status", "certificate"]).unwrap().unwrap();
        assert_eq!(cert.as_str().unwrap().as_borrowed(), Some("QUJD"));
        assert_eq!(find(doc, &["object", "missing"]).unwrap(), None);
        assert_eq!(find(doc, &["type", "x"]).unwrap(), None);
        assert_eq!(find(doc, &["n"]).unwrap().unwrap().as_i64(), Some(-42));
        let conds = find(doc, &["object", "status", "conditions"]).unwrap().unwrap();
        let items: heapless::Vec<Value<'_>, 4> =
            conds.as_array().unwrap().items().map(|v| v.unwrap()).collect();
        assert_eq!(items.len(), 1);
        let t = items[0].as_object().unwrap().get("type").unwrap().unwrap();
        assert!(t.as_str().unwrap().eq_str("Approved"));
        // Last duplicate wins.
        assert_eq!(find(br#"{"a":1,"a":2}"#, &["a"]).unwrap().unwrap().as_i64(), Some(2));
        // Malformed anywhere is an error, even after the match.
        assert_eq!(find(br#"{"a":1,"b":}"#, &["a"]), Err(Error::Malformed));
    }

    #[test]
    fn watch_stream() {
        let s = b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n{\"type\":\"MODIFIED\"}\n{\"ty";
        let (v, n) = parse_prefix(s).unwrap();
        let t = v.as_object().unwrap().get("type").unwrap().unwrap();
        assert!(t.as_str().unwrap().eq_str("ADDED"));
        let (v, m) = parse_prefix(&s[n..]).unwrap();
        assert!(
            v.as_object()
                .unwrap()
                .get("type")
                .unwrap()
                .unwrap()
                .as_str()
                .unwrap()
                .eq_str("MODIFIED")
        );
        assert_eq!(parse_prefix(&s[n + m..]), Err(Error::Malformed));
    }

    #[test]
    fn parse_i64_bounds() {
        assert_eq!(parse_i64("9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64("9223372036854775808"), None);
        assert_eq!(parse_i64("1.0"), None);
    }

    #[test]
    fn empty_containers_iterate() {
        let a = parse(b"[]").unwrap().as_array().unwrap();
        assert_eq!(a.items().count(), 0);
        let o = parse(b"{ }").unwrap().as_object().unwrap();
        assert_eq!(o.members().count(), 0);
        let a = parse(b"[1, \"x\", [2]]").unwrap().as_array().unwrap();
        assert_eq!(a.items().count(), 3);
    }

    mod prop {
        extern crate std;
        use super::super::*;
        use proptest::prelude::*;
        use std::string::String;
        use std::vec::Vec;

        fn to_serde(v: Value<'_>) -> serde_json::Value {
            match v {
                Value::Null => serde_json::Value::Null,
                Value::Bool(b) => serde_json::Value::Bool(b),
                Value::Number(n) => serde_json::from_str(n).unwrap(),
                Value::String(s) => {
                    let mut buf = std::vec![0u8; s.decoded_len()];
                    let d = s.decode_into(&mut buf).unwrap();
                    assert!(s.eq_str(d));
                    serde_json::Value::String(String::from(d))
                }
                Value::Array(a) => {
                    serde_json::Value::Array(a.items().map(|i| to_serde(i.unwrap())).collect())
                }
                Value::Object(o) => {
                    let mut m = serde_json::Map::new();
                    for kv in o.members() {
                        let (k, v) = kv.unwrap();
                        let mut buf = std::vec![0u8; k.decoded_len()];
                        m.insert(String::from(k.decode_into(&mut buf).unwrap()), to_serde(v));
                    }
                    serde_json::Value::Object(m)
                }
            }
        }

        fn arb_json() -> impl Strategy<Value = serde_json::Value> {
            let leaf = prop_oneof![
                Just(serde_json::Value::Null),
                any::<bool>().prop_map(serde_json::Value::Bool),
                any::<i64>().prop_map(serde_json::Value::from),
                any::<u64>().prop_map(serde_json::Value::from),
                (-1e300f64..1e300).prop_map(serde_json::Value::from),
                any::<String>().prop_map(serde_json::Value::String),
            ];
            leaf.prop_recursive(6, 64, 8, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..8)
                        .prop_map(serde_json::Value::Array),
                    proptest::collection::btree_map(any::<String>(), inner, 0..8)
                        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #[test]
            fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
                let _ = validate(&bytes);
                let _ = find(&bytes, &["a", "b"]);
                if let Ok(v) = parse(&bytes) {
                    let _ = to_serde(v);
                }
            }

            #[test]
            fn never_panics_jsonish(s in "[\\[\\]{}\":,0-9a-z\\\\ .eE+-]{0,64}") {
                let _ = validate(s.as_bytes());
                if let Ok(v) = parse(s.as_bytes()) {
                    prop_assert!(serde_json::from_str::<serde_json::Value>(&s).is_ok());
                    let _ = to_serde(v);
                }
            }

            #[test]
            fn agrees_with_serde(v in arb_json(), pretty in any::<bool>()) {
                let text: Vec<u8> = if pretty {
                    serde_json::to_vec_pretty(&v).unwrap()
                } else {
                    serde_json::to_vec(&v).unwrap()
                };
                let ours = parse(&text).unwrap();
                // Compare with serde_json's own reading of the text (its float parsing is
                // not exactly round-tripping without the float_roundtrip feature).
                let expected: serde_json::Value = serde_json::from_slice(&text).unwrap();
                prop_assert_eq!(to_serde(ours), expected);
            }

            #[test]
            fn escaped_strings_roundtrip(s in any::<String>()) {
                // serde_json escapes only what it must; force \u escapes for everything too.
                let mut forced = String::from("\"");
                for u in s.encode_utf16() {
                    forced.push_str(&std::format!("\\u{u:04x}"));
                }
                forced.push('"');
                let v = parse(forced.as_bytes()).unwrap();
                let st = v.as_str().unwrap();
                prop_assert!(st.eq_str(&s));
                let mut buf = std::vec![0u8; s.len()];
                prop_assert_eq!(st.decode_into(&mut buf).unwrap(), s.as_str());
            }
        }
    }
}
