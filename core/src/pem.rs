//! PEM in and out without a heap: a block iterator for bundles, decoding into a caller buffer,
//! and encoding the way Go's `pem.EncodeToMemory` does (64-column base64, `\n` line ends,
//! trailing newline).

use crate::error::{Error, Result};
use pem_rfc7468::LineEnding;

/// The largest PEM document (one block) we will look at, in bytes. Anything longer is malformed.
pub const MAX_PEM_BLOCK: usize = 64 * 1024;

const BEGIN: &[u8] = b"-----BEGIN ";
const END: &[u8] = b"-----END ";
const DASHES: &[u8] = b"-----";

/// One PEM block found in a bundle: its label and the bytes from `-----BEGIN` to the end of the
/// `-----END ...-----` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PemBlock<'a> {
    /// The type label, e.g. `CERTIFICATE`.
    pub label: &'a str,
    /// The whole encapsulated block, boundaries included.
    pub text: &'a [u8],
}

impl<'a> PemBlock<'a> {
    /// Decode this block's base64 body into `buf`, returning the DER bytes.
    ///
    /// Blocks with RFC 1421 headers (`Proc-Type:` ...) are refused as [`Error::Malformed`].
    pub fn decode<'o>(&self, buf: &'o mut [u8]) -> Result<&'o [u8]> {
        let (_, der) = pem_rfc7468::decode(self.text, buf).map_err(|e| match e {
            pem_rfc7468::Error::Length => {
                Error::BufferTooSmall { needed: decoded_len_upper_bound(self.text.len()) }
            }
            _ => Error::Malformed,
        })?;
        Ok(der)
    }
}

fn decoded_len_upper_bound(text_len: usize) -> usize {
    text_len / 4 * 3 + 3
}

/// Iterate over the PEM blocks of a bundle. Text outside blocks is skipped, as Go's `pem.Decode`
/// does. A `BEGIN` line without its matching `END` line ends the iteration with an error item.
#[derive(Clone, Debug)]
pub struct PemBlocks<'a> {
    rest: &'a [u8],
    /// Whether `rest` starts at the beginning of a line of the input.
    at_line_start: bool,
    failed: bool,
}

/// Iterate over the PEM blocks in `input`.
pub fn blocks(input: &[u8]) -> PemBlocks<'_> {
    PemBlocks { rest: input, at_line_start: true, failed: false }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

impl<'a> Iterator for PemBlocks<'a> {
    type Item = Result<PemBlock<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        // A BEGIN marker must start a line.
        let start = loop {
            let at = find(self.rest, BEGIN)?;
            let line_start = match at.checked_sub(1) {
                None => self.at_line_start,
                Some(prev) => self.rest.get(prev) == Some(&b'\n'),
            };
            if line_start {
                break at;
            }
            self.rest = self.rest.get(at + 1..).unwrap_or(&[]);
            self.at_line_start = false;
        };
        let block = self.rest.get(start..).unwrap_or(&[]);
        let mut fail = || {
            self.failed = true;
            Some(Err(Error::Malformed))
        };
        let after_begin = match block.get(BEGIN.len()..) {
            Some(b) => b,
            None => return fail(),
        };
        let label_end = match find(after_begin, DASHES) {
            Some(i) => i,
            None => return fail(),
        };
        let label_bytes = after_begin.get(..label_end).unwrap_or(&[]);
        let label = match core::str::from_utf8(label_bytes) {
            Ok(l) if !l.contains('\n') => l,
            _ => return fail(),
        };
        // Find "-----END <label>-----".
        let mut search_from = BEGIN.len() + label_end + DASHES.len();
        let end_of_block = loop {
            let tail = match block.get(search_from..) {
                Some(t) => t,
                None => return fail(),
            };
            let rel = match find(tail, END) {
                Some(i) => i,
                None => return fail(),
            };
            let end_at = search_from + rel;
            let after_end = block.get(end_at + END.len()..).unwrap_or(&[]);
            if after_end.starts_with(label_bytes)
                && after_end.get(label_bytes.len()..).is_some_and(|t| t.starts_with(DASHES))
            {
                let mut stop = end_at + END.len() + label_bytes.len() + DASHES.len();
                // Include the line ending, if any.
                if block.get(stop) == Some(&b'\r') {
                    stop += 1;
                }
                if block.get(stop) == Some(&b'\n') {
                    stop += 1;
                }
                break stop;
            }
            search_from = end_at + END.len();
        };
        if end_of_block > MAX_PEM_BLOCK {
            return fail();
        }
        let text = block.get(..end_of_block).unwrap_or(&[]);
        self.rest = block.get(end_of_block..).unwrap_or(&[]);
        self.at_line_start = text.last() == Some(&b'\n');
        Some(Ok(PemBlock { label, text }))
    }
}

/// The first block of `input` with the given label, decoded into `buf`.
///
/// Returns [`Error::Malformed`] when no such block exists or it does not decode.
pub fn decode_first<'o>(input: &[u8], label: &str, buf: &'o mut [u8]) -> Result<&'o [u8]> {
    for block in blocks(input) {
        let block = block?;
        if block.label == label {
            return block.decode(buf);
        }
    }
    Err(Error::Malformed)
}

/// Whether `label` is a label we write and read back: RFC 7468 `label` characters (printable
/// ASCII except `-`), words separated by single spaces, no blank at either end, not empty.
fn label_ok(label: &str) -> bool {
    let b = label.as_bytes();
    !b.is_empty()
        && b.iter().all(|&c| (0x21..=0x7e).contains(&c) && c != b'-' || c == b' ')
        && !b.windows(2).any(|w| w == b"  ")
        && b.first() != Some(&b' ')
        && b.last() != Some(&b' ')
}

/// The exact length of the PEM encoding of `der_len` bytes under `label`
/// (Go layout: 64-column lines, `\n`, trailing newline). An invalid label or an empty body is
/// [`Error::Malformed`]: we only write what we can read back.
pub fn encoded_len(label: &str, der_len: usize) -> Result<usize> {
    if !label_ok(label) || der_len == 0 {
        return Err(Error::Malformed);
    }
    pem_rfc7468::encapsulated_len(label, LineEnding::LF, der_len).map_err(|_| Error::Malformed)
}

/// Encode `der` as a PEM block with `label` into `buf`, returning the used length.
///
/// The output matches Go's `pem.EncodeToMemory` byte for byte. A short buffer is
/// [`Error::BufferTooSmall`] and leaves `buf` untouched in its semantics (nothing usable written).
pub fn encode(label: &str, der: &[u8], buf: &mut [u8]) -> Result<usize> {
    let needed = encoded_len(label, der.len())?;
    if buf.len() < needed {
        return Err(Error::BufferTooSmall { needed });
    }
    let n =
        pem_rfc7468::encode(label, LineEnding::LF, der, buf).map_err(|_| Error::Malformed)?.len();
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT_A: &str = "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n";

    #[test]
    fn encode_matches_go_layout() {
        let der = [0x30u8; 100];
        let mut buf = [0u8; 512];
        let n = encode("CERTIFICATE REQUEST", &der, &mut buf).unwrap();
        let s = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(s.starts_with("-----BEGIN CERTIFICATE REQUEST-----\n"));
        assert!(s.ends_with("-----END CERTIFICATE REQUEST-----\n"));
        for line in s.lines() {
            assert!(line.len() <= 64 || line.starts_with("-----"));
        }
        assert_eq!(n, encoded_len("CERTIFICATE REQUEST", 100).unwrap());
    }

    #[test]
    fn encode_refuses_what_it_could_not_read_back() {
        // Found by fuzzing (fuzz/regressions/pem_blocks): bad labels and empty bodies.
        let mut buf = [0u8; 256];
        for label in ["EC P-----END Y", "\tN E", "N E ", " X", "A  B", ""] {
            assert_eq!(encoded_len(label, 3), Err(Error::Malformed), "{label:?}");
            assert_eq!(encode(label, &[1, 2, 3], &mut buf), Err(Error::Malformed), "{label:?}");
        }
        assert_eq!(encode("CERTIFICATE", &[], &mut buf), Err(Error::Malformed));
        assert_eq!(
            encode("A", &[1], &mut [0u8; 1]),
            Err(Error::BufferTooSmall { needed: encoded_len("A", 1).unwrap() })
        );
    }

    #[test]
    fn encode_short_buffer_reports_size() {
        let mut buf = [0u8; 10];
        let err = encode("X", &[1, 2, 3], &mut buf).unwrap_err();
        assert_eq!(err, Error::BufferTooSmall { needed: encoded_len("X", 3).unwrap() });
    }

    #[test]
    fn blocks_skip_junk_and_find_all() {
        let bundle = alloc_free_concat();
        let mut it = blocks(bundle.as_bytes());
        let a = it.next().unwrap().unwrap();
        assert_eq!(a.label, "CERTIFICATE");
        let b = it.next().unwrap().unwrap();
        assert_eq!(b.label, "EC PRIVATE KEY");
        assert!(it.next().is_none());
        let mut buf = [0u8; 16];
        assert_eq!(a.decode(&mut buf).unwrap(), &[1, 2, 3]);
    }

    fn alloc_free_concat() -> &'static str {
        "junk before\n-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\nmiddle\n-----BEGIN EC PRIVATE KEY-----\nBAUG\n-----END EC PRIVATE KEY-----\n"
    }

    #[test]
    fn begin_must_start_a_line() {
        // Found by fuzzing (fuzz/regressions/pem_blocks/begin-not-at-line-start): a BEGIN right
        // after a skipped, mid-line BEGIN or right after an END line without a newline.
        let mut it = blocks(b"x-----BEGIN A----------BEGIN B-----\nAQID\n-----END B-----\n");
        assert!(it.next().is_none());
        let two =
            b"-----BEGIN A-----\nAQID\n-----END A----------BEGIN B-----\nAQID\n-----END B-----\n";
        let mut it = blocks(two);
        assert_eq!(it.next().unwrap().unwrap().label, "A");
        assert!(it.next().is_none());
        let ok =
            b"-----BEGIN A-----\nAQID\n-----END A-----\n-----BEGIN B-----\nAQID\n-----END B-----\n";
        let labels: [&str; 2] = {
            let mut it = blocks(ok);
            [it.next().unwrap().unwrap().label, it.next().unwrap().unwrap().label]
        };
        assert_eq!(labels, ["A", "B"]);
    }

    #[test]
    fn unterminated_block_is_malformed() {
        let mut it = blocks(b"-----BEGIN CERTIFICATE-----\nAQID\n");
        assert_eq!(it.next(), Some(Err(Error::Malformed)));
        assert_eq!(it.next(), None);
    }

    #[test]
    fn mismatched_end_label_is_malformed() {
        let mut it = blocks(b"-----BEGIN CERTIFICATE-----\nAQID\n-----END KEY-----\n");
        assert_eq!(it.next(), Some(Err(Error::Malformed)));
    }

    #[test]
    fn decode_first_by_label() {
        let mut buf = [0u8; 16];
        assert_eq!(decode_first(CERT_A.as_bytes(), "CERTIFICATE", &mut buf).unwrap(), &[1, 2, 3]);
        assert_eq!(decode_first(CERT_A.as_bytes(), "X", &mut buf).unwrap_err(), Error::Malformed);
    }
}
