//! The networked firmware's HTTP/1.1 reader (`examples/firmware/src/net/http.rs`: the response
//! head, whole bodies, the chunked decoder of watches) on arbitrary bytes delivered in arbitrary
//! pieces (as TLS records cut them).
//!
//! Properties:
//! * nothing panics; a head that reads has a three-digit status; a body that reads fits the
//!   buffer and has the announced length;
//! * a head keeps the `Retry-After` value it carried, spaces and tabs trimmed, up to `RETRY_AFTER_MAX`
//!   bytes (longer: absent), and the agent reads it as it reads the raw value;
//! * a payload chunked with arbitrary chunk sizes and extensions decodes to itself, however the
//!   bytes are cut, and the decoder says when the last chunk and trailer went by;
//! * a request written by `write_request` announces its body's length.
#![no_main]

#[path = "../../examples/firmware/src/net/http.rs"]
#[allow(dead_code)]
mod http;

use arbitrary::Arbitrary;
use embedded_io::{BufRead, ErrorKind, ErrorType, Read};
use libfuzzer_sys::fuzz_target;

/// Bytes handed out in pieces of the given sizes (cycled).
struct Pieces<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
    at: usize,
    piece: usize,
    left: usize,
}

impl<'a> Pieces<'a> {
    fn new(data: &'a [u8], sizes: &'a [u8]) -> Self {
        let mut p = Pieces { data, sizes, at: 0, piece: 0, left: 0 };
        p.next_piece();
        p
    }

    fn next_piece(&mut self) {
        let s = if self.sizes.is_empty() { 64 } else { self.sizes[self.piece % self.sizes.len()] };
        self.piece += 1;
        self.left = usize::from(s).max(1);
    }
}

impl ErrorType for Pieces<'_> {
    type Error = ErrorKind;
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        let n = {
            let d = self.fill_buf()?;
            let n = d.len().min(buf.len());
            buf[..n].copy_from_slice(&d[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Pieces<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], ErrorKind> {
        let end = (self.at + self.left).min(self.data.len());
        Ok(&self.data[self.at..end])
    }

    fn consume(&mut self, amt: usize) {
        self.at = (self.at + amt).min(self.data.len());
        self.left -= amt.min(self.left);
        if self.left == 0 {
            self.next_piece();
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    raw: Vec<u8>,
    sizes: Vec<u8>,
    payload: Vec<u8>,
    chunks: Vec<(u8, bool)>,
    body_cap: u16,
}

fuzz_target!(|input: Input| {
    // Arbitrary responses.
    let mut r = Pieces::new(&input.raw, &input.sizes);
    if let Ok(head) = http::read_head(&mut r) {
        assert!((100..=999).contains(&head.status));
        if let Some(v) = head.retry_after() {
            assert!(v.len() <= http::RETRY_AFTER_MAX && http::trim_ows(v) == v);
        }
        let mut buf = vec![0u8; usize::from(input.body_cap % 8192)];
        if let Ok(body) = http::read_body(&mut r, &head, &mut buf) {
            let n = body.len();
            assert!(n <= buf.len());
            if !head.chunked {
                assert_eq!(Some(n), head.length.or(Some(0)));
            }
        }
    }
    let mut c = http::Chunked::default();
    let mut rest: &[u8] = &input.raw;
    while !rest.is_empty() && !c.done() {
        match c.feed(rest) {
            Ok((used, out)) => {
                assert!(used <= rest.len() && out.len() <= used);
                if used == 0 {
                    break;
                }
                rest = &rest[used..];
            }
            Err(_) => break,
        }
    }

    // A chunked payload decodes to itself, however the bytes are cut.
    let mut wire = Vec::new();
    let mut at = 0;
    for (size, ext) in &input.chunks {
        if at >= input.payload.len() {
            break;
        }
        let n = usize::from(*size).max(1).min(input.payload.len() - at);
        wire.extend_from_slice(format!("{n:x}").as_bytes());
        if *ext {
            wire.extend_from_slice(b";name=value");
        }
        wire.extend_from_slice(b"\r\n");
        wire.extend_from_slice(&input.payload[at..at + n]);
        wire.extend_from_slice(b"\r\n");
        at += n;
    }
    wire.extend_from_slice(b"0\r\nX-Trailer: 1\r\n\r\n");
    let sent = &input.payload[..at];
    let mut r = Pieces::new(&wire, &input.sizes);
    let mut c = http::Chunked::default();
    let mut got = Vec::new();
    while !c.done() {
        let (used, out) = {
            let data = r.fill_buf().unwrap();
            assert!(!data.is_empty(), "the decoder wants more than the wire has");
            let (used, out) = c.feed(data).expect("a well-formed chunked stream");
            got.extend_from_slice(out);
            (used, out.len())
        };
        let _ = out;
        r.consume(used);
    }
    assert_eq!(got, sent);

    // The Retry-After value the agent is given.
    // (Within the head's 512-byte line.)
    let value: Vec<u8> =
        input.payload.iter().copied().filter(|b| *b != b'\r' && *b != b'\n').take(256).collect();
    let mut wire = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After:".to_vec();
    wire.extend_from_slice(&value);
    wire.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
    let head = http::read_head(&mut Pieces::new(&wire, &input.sizes)).expect("a well-formed head");
    let trimmed = http::trim_ows(&value);
    if trimmed.len() <= http::RETRY_AFTER_MAX {
        assert_eq!(head.retry_after(), Some(trimmed));
        let parse = kubeboot::pushback::parse_retry_after;
        assert_eq!(parse(head.retry_after().unwrap()), parse(&value));
    } else {
        assert_eq!(head.retry_after(), None);
    }

    // A request announces its body's length.
    let mut req = Vec::new();
    http::write_request(&mut req, "POST", "/x", &[("Host", "h")], sent).unwrap();
    let text = String::from_utf8_lossy(&req);
    assert!(text.contains(&format!("Content-Length: {}\r\n", sent.len())));
    assert!(req.ends_with(sent));
});
