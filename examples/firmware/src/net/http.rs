//! HTTP/1.1 over the TLS session, no heap: the request as the agent describes it (keep-alive,
//! `Content-Length`), the response head (status, `Content-Length`, `Transfer-Encoding:
//! chunked`, `Connection: close`, and `Retry-After` for the agent), whole bodies into a caller
//! buffer, and a chunked decoder that hands a watch's bytes over as they arrive.

use embedded_io::{BufRead, Write};

/// What can go wrong with an HTTP exchange (the transport's errors included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The TLS session or the pipe failed.
    Transport,
    /// The connection ended before the message did.
    Eof,
    /// The response does not parse.
    Malformed,
    /// The body does not fit the buffer.
    TooLarge,
}

impl HttpError {
    /// A short reason, printed by the agent as the transport error's detail.
    pub fn name(self) -> &'static str {
        match self {
            HttpError::Transport => "tls/transport error",
            HttpError::Eof => "connection closed mid-response",
            HttpError::Malformed => "malformed HTTP response",
            HttpError::TooLarge => "response body too large",
        }
    }
}

/// The longest `Retry-After` value kept (an HTTP-date is 29 bytes; the agent reads only
/// delta-seconds, and a longer value is passed on as absent).
pub const RETRY_AFTER_MAX: usize = 32;

/// The response's status line, the headers that frame its body, and the one the agent reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Head {
    /// Status code.
    pub status: u16,
    /// `Content-Length`.
    pub length: Option<usize>,
    /// `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// `Connection: close` (the session ends with this response).
    pub close: bool,
    /// The last `Retry-After` value, without surrounding spaces and tabs (`retry_after_len`
    /// bytes).
    retry_after: [u8; RETRY_AFTER_MAX],
    retry_after_len: Option<u8>,
}

impl Head {
    /// The `Retry-After` value as received, spaces and tabs trimmed (`None`: absent, or longer than
    /// [`RETRY_AFTER_MAX`]), for the agent's `Headers`.
    pub fn retry_after(&self) -> Option<&[u8]> {
        self.retry_after.get(..usize::from(self.retry_after_len?))
    }
}

/// The request line and headers, then the body. `headers` are name/value pairs.
pub fn write_request<W: Write>(
    w: &mut W,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<(), HttpError> {
    let mut put = |b: &[u8]| w.write_all(b).map_err(|_| HttpError::Transport);
    put(method.as_bytes())?;
    put(b" ")?;
    put(path.as_bytes())?;
    put(b" HTTP/1.1\r\n")?;
    for (name, value) in headers {
        put(name.as_bytes())?;
        put(b": ")?;
        put(value.as_bytes())?;
        put(b"\r\n")?;
    }
    if !body.is_empty() || method == "POST" {
        // (Digits by hand: no `core::fmt` in the request path.)
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = body.len();
        loop {
            i -= 1;
            if let Some(d) = digits.get_mut(i) {
                *d = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 || i == 0 {
                break;
            }
        }
        put(b"Content-Length: ")?;
        put(digits.get(i..).unwrap_or(b"0"))?;
        put(b"\r\n")?;
    }
    put(b"\r\n")?;
    put(body)?;
    w.flush().map_err(|_| HttpError::Transport)
}

/// Take one byte.
fn byte<R: BufRead>(r: &mut R) -> Result<u8, HttpError> {
    let b = {
        let buf = r.fill_buf().map_err(|_| HttpError::Transport)?;
        *buf.first().ok_or(HttpError::Eof)?
    };
    r.consume(1);
    Ok(b)
}

/// One header line (without CRLF) into `line`; lines longer than it are [`HttpError::Malformed`].
fn read_line<'l, R: BufRead>(r: &mut R, line: &'l mut [u8]) -> Result<&'l [u8], HttpError> {
    let mut n = 0;
    loop {
        match byte(r)? {
            b'\n' => break,
            b => {
                *line.get_mut(n).ok_or(HttpError::Malformed)? = b;
                n += 1;
            }
        }
    }
    let l = line.get(..n).ok_or(HttpError::Malformed)?;
    Ok(l.strip_suffix(b"\r").unwrap_or(l))
}

/// `value` without the optional whitespace (spaces and tabs) around it.
pub fn trim_ows(value: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    value.get(start..end).unwrap_or(&[])
}

/// A decimal number (`1*DIGIT`, surrounding ASCII whitespace allowed), by hand (no `core::fmt`
/// or `from_str_radix` linked for it); `None` for anything else or an overflow.
pub fn decimal(text: &[u8]) -> Option<usize> {
    let digits = text.trim_ascii();
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0usize, |n, &b| {
        let d = if b.is_ascii_digit() { usize::from(b - b'0') } else { return None };
        n.checked_mul(10)?.checked_add(d)
    })
}

/// Read the status line and the headers.
pub fn read_head<R: BufRead>(r: &mut R) -> Result<Head, HttpError> {
    let mut line = [0u8; 512];
    let status = read_line(r, &mut line)?;
    let code = match status.strip_prefix(b"HTTP/1.1 ").or_else(|| status.strip_prefix(b"HTTP/1.0 "))
    {
        Some(rest) => rest
            .get(..3)
            .filter(|c| matches!(c, [b'1'..=b'9', b'0'..=b'9', b'0'..=b'9']))
            .and_then(decimal),
        None => None,
    };
    let mut head = Head { status: code.ok_or(HttpError::Malformed)? as u16, ..Head::default() };
    for _ in 0..64 {
        let l = read_line(r, &mut line)?;
        if l.is_empty() {
            return Ok(head);
        }
        let Some(colon) = l.iter().position(|&b| b == b':') else {
            return Err(HttpError::Malformed);
        };
        let (name, value) = (&l[..colon], l.get(colon + 1..).unwrap_or(&[]));
        let value_is = |v: &[u8]| value.trim_ascii().eq_ignore_ascii_case(v);
        if name.eq_ignore_ascii_case(b"content-length") {
            head.length = Some(decimal(value).ok_or(HttpError::Malformed)?);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            head.chunked = value_is(b"chunked");
        } else if name.eq_ignore_ascii_case(b"connection") {
            head.close = value_is(b"close");
        } else if name.eq_ignore_ascii_case(b"retry-after") {
            let v = trim_ows(value);
            head.retry_after_len = None;
            if let Some(dst) = head.retry_after.get_mut(..v.len()) {
                dst.copy_from_slice(v);
                head.retry_after_len = Some(v.len() as u8);
            }
        }
    }
    Err(HttpError::Malformed)
}

/// The whole body of a response (not a stream) into `buf`.
pub fn read_body<'b, R: BufRead>(
    r: &mut R,
    head: &Head,
    buf: &'b mut [u8],
) -> Result<&'b [u8], HttpError> {
    let mut n = 0;
    if head.chunked {
        let mut chunks = Chunked::default();
        loop {
            let data = r.fill_buf().map_err(|_| HttpError::Transport)?;
            if data.is_empty() {
                return Err(HttpError::Eof);
            }
            let (used, out) = chunks.feed(data)?;
            let dst = buf.get_mut(n..n + out.len()).ok_or(HttpError::TooLarge)?;
            dst.copy_from_slice(out);
            n += out.len();
            r.consume(used);
            if chunks.done() {
                break;
            }
        }
    } else {
        let want = head.length.unwrap_or(0);
        let dst = buf.get_mut(..want).ok_or(HttpError::TooLarge)?;
        while n < want {
            let data = r.fill_buf().map_err(|_| HttpError::Transport)?;
            if data.is_empty() {
                return Err(HttpError::Eof);
            }
            let take = data.len().min(want - n);
            dst.get_mut(n..n + take).ok_or(HttpError::TooLarge)?.copy_from_slice(&data[..take]);
            n += take;
            r.consume(take);
        }
    }
    buf.get(..n).ok_or(HttpError::TooLarge)
}

/// Where the chunked decoder is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ChunkState {
    /// Reading the hex size (and any extension) up to LF.
    #[default]
    Size,
    /// Inside a chunk's data.
    Data,
    /// The CRLF after a chunk's data.
    DataEnd,
    /// The trailer after the last chunk, up to the empty line.
    Trailer,
    /// Done.
    Done,
}

/// A `Transfer-Encoding: chunked` decoder over the bytes as they come.
#[derive(Clone, Copy, Debug, Default)]
pub struct Chunked {
    state: ChunkState,
    size: usize,
    digits: usize,
    in_extension: bool,
    line_empty: bool,
}

impl Chunked {
    /// Whether the last chunk and its trailer went by.
    pub fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Decode from the front of `input`: how many bytes were used, and the data they carried (a
    /// slice of `input`: at most one chunk's data per call).
    pub fn feed<'i>(&mut self, input: &'i [u8]) -> Result<(usize, &'i [u8]), HttpError> {
        let mut i = 0;
        while let Some(&b) = input.get(i) {
            match self.state {
                ChunkState::Size => {
                    i += 1;
                    match b {
                        b'\n' => {
                            if self.digits == 0 {
                                return Err(HttpError::Malformed);
                            }
                            self.state =
                                if self.size == 0 { ChunkState::Trailer } else { ChunkState::Data };
                            self.line_empty = true;
                            self.digits = 0;
                            self.in_extension = false;
                        }
                        b'\r' => {}
                        b';' => self.in_extension = true,
                        _ if self.in_extension => {}
                        _ => {
                            let d = (b as char).to_digit(16).ok_or(HttpError::Malformed)?;
                            self.size = self
                                .size
                                .checked_mul(16)
                                .and_then(|s| s.checked_add(d as usize))
                                .ok_or(HttpError::Malformed)?;
                            self.digits += 1;
                        }
                    }
                }
                ChunkState::Data => {
                    let take = self.size.min(input.len() - i);
                    let data = input.get(i..i + take).ok_or(HttpError::Malformed)?;
                    self.size -= take;
                    if self.size == 0 {
                        self.state = ChunkState::DataEnd;
                    }
                    return Ok((i + take, data));
                }
                ChunkState::DataEnd => {
                    i += 1;
                    match b {
                        b'\r' => {}
                        b'\n' => self.state = ChunkState::Size,
                        _ => return Err(HttpError::Malformed),
                    }
                }
                ChunkState::Trailer => {
                    i += 1;
                    match b {
                        b'\r' => {}
                        b'\n' if self.line_empty => {
                            self.state = ChunkState::Done;
                            return Ok((i, &[]));
                        }
                        b'\n' => self.line_empty = true,
                        _ => self.line_empty = false,
                    }
                }
                ChunkState::Done => return Ok((i, &[])),
            }
        }
        Ok((i, &[]))
    }
}
