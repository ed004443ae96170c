//! Heap-free PEM: `pem::blocks` + `PemBlock::decode`, `pem::decode_first`, and
//! `pem::encode` / `encoded_len` round trips.
//!
//! Input: first byte selects: even → the rest is a PEM bundle to scan; odd → the rest is
//! `label \n der` to encode and read back.
#![no_main]

use kubeboot::{Error, pem};
use libfuzzer_sys::fuzz_target;

fn within(outer: &[u8], inner: &[u8]) -> bool {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    i >= o && i + inner.len() <= o + outer.len()
}

fn scan(input: &[u8]) {
    let mut big = vec![0u8; pem::MAX_PEM_BLOCK];
    let mut failed = false;
    let mut count = 0usize;
    let mut first: Option<(String, Result<Vec<u8>, Error>)> = None;
    let mut prev_end = 0usize;
    for item in pem::blocks(input) {
        assert!(!failed, "an item after an error");
        count += 1;
        assert!(count <= input.len() / 20 + 1, "more blocks than the input can hold");
        let block = match item {
            Ok(b) => b,
            Err(e) => {
                assert_eq!(e, Error::Malformed);
                failed = true;
                continue;
            }
        };
        assert!(within(input, block.text));
        let start = block.text.as_ptr() as usize - input.as_ptr() as usize;
        assert!(start >= prev_end, "blocks overlap or go backwards");
        assert!(start == 0 || input[start - 1] == b'\n', "BEGIN not at line start");
        prev_end = start + block.text.len();
        assert!(block.text.len() <= pem::MAX_PEM_BLOCK);
        assert!(!block.label.contains('\n'));
        let begin = format!("-----BEGIN {}-----", block.label);
        assert!(block.text.starts_with(begin.as_bytes()));
        let end = format!("-----END {}-----", block.label);
        let trimmed = block.text.strip_suffix(b"\n").unwrap_or(block.text);
        let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
        assert!(trimmed.ends_with(end.as_bytes()));

        let decoded = block.decode(&mut big).map(<[u8]>::to_vec);
        match &decoded {
            Ok(der) => {
                // Smaller buffers: a clean BufferTooSmall whose `needed` suffices.
                if !der.is_empty() {
                    let mut small = vec![0u8; der.len() - 1];
                    match block.decode(&mut small) {
                        Err(Error::BufferTooSmall { needed }) => {
                            assert!(needed >= der.len());
                            let mut enough = vec![0u8; needed];
                            assert_eq!(block.decode(&mut enough).map(<[u8]>::to_vec), decoded);
                        }
                        other => panic!("short buffer gave {other:?}"),
                    }
                }
                // Re-encode and read back.
                reencode(block.label, der);
            }
            Err(Error::Malformed) => {}
            Err(e) => panic!("undocumented decode error {e:?}"),
        }
        if first.is_none() {
            first = Some((block.label.to_owned(), decoded));
        }
    }
    if let Some((label, decoded)) = first {
        let got = pem::decode_first(input, &label, &mut big).map(<[u8]>::to_vec);
        assert_eq!(got, decoded);
    }
}

/// RFC 7468 `label`: `labelchar` (printable ASCII except `-`) with single spaces/tabs between.
fn label_ok(label: &str) -> bool {
    let b = label.as_bytes();
    b.iter().all(|&c| (0x21..=0x7e).contains(&c) && c != b'-' || c == b' ' || c == b'\t')
        && !b.windows(2).any(|w| matches!(w[0], b' ' | b'\t') && matches!(w[1], b' ' | b'\t'))
}

fn reencode(label: &str, der: &[u8]) {
    // Fixed (fuzz/regressions/pem_blocks/*): invalid labels, labels with blanks at either end
    // and empty bodies are refused by both `encoded_len` and `encode`.
    let blank_edge =
        label.starts_with([' ', '\t']) || label.ends_with([' ', '\t']) || label.contains('\t');
    if !label_ok(label) || blank_edge || der.is_empty() {
        assert_eq!(pem::encoded_len(label, der.len()), Err(Error::Malformed));
        let mut buf = vec![0u8; 4096];
        assert_eq!(pem::encode(label, der, &mut buf), Err(Error::Malformed));
        return;
    }
    let len = match pem::encoded_len(label, der.len()) {
        Ok(l) => l,
        Err(e) => {
            assert_eq!(e, Error::Malformed);
            let mut buf = vec![0u8; 64];
            assert!(pem::encode(label, der, &mut buf).is_err());
            return;
        }
    };
    let mut buf = vec![0u8; len];
    let n = pem::encode(label, der, &mut buf).expect("encoded_len suffices");
    assert_eq!(n, len);
    if len > 0 {
        let mut short = vec![0u8; len - 1];
        assert_eq!(pem::encode(label, der, &mut short), Err(Error::BufferTooSmall { needed: len }));
    }
    let text = &buf[..n];
    assert!(text.ends_with(b"\n"));
    for line in text.split(|&b| b == b'\n') {
        assert!(line.len() <= 64 || line.starts_with(b"-----"));
    }
    let mut it = pem::blocks(text);
    let block = it.next().expect("one block").expect("own encoding scans");
    assert_eq!(block.label, label);
    assert_eq!(block.text, text);
    assert!(it.next().is_none());
    let mut out = vec![0u8; der.len() + 3];
    match block.decode(&mut out) {
        Ok(back) => assert_eq!(back, der),
        Err(e) => panic!("own encoding does not decode: {e:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        scan(rest);
    } else {
        let (label, der) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        let Ok(label) = std::str::from_utf8(label) else { return };
        reencode(label, der);
    }
});
