//! `--token-auth-file` lines: `AuthFileLine::parse`, `AuthFileLines`, `write_auth_file_line`.
//!
//! Input: first byte even → the rest is text parsed as a file/line (parse → write → parse must
//! give the same fields); odd → the rest drives `arbitrary` field values (write → parse must give
//! the same fields, and writer errors only for the documented reasons).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use kubeboot::Error;
use kubeboot::token::{AuthFileLine, AuthFileLines, CsvField, write_auth_file_line};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq, Eq)]
struct Fields {
    token: String,
    user: String,
    uid: String,
    groups: Vec<String>,
}

fn text(f: CsvField<'_>) -> String {
    let s = String::from_utf8(f.bytes().collect()).expect("unquoting keeps UTF-8");
    assert_eq!(f.len(), s.len());
    assert!(f.eq_str(&s));
    if let Some(direct) = f.as_str() {
        assert_eq!(direct, s);
    }
    let mut buf = vec![0u8; s.len()];
    assert_eq!(f.write(&mut buf), Ok(s.len()));
    assert_eq!(buf, s.as_bytes());
    if !s.is_empty() {
        let mut short = vec![0u8; s.len() - 1];
        assert!(matches!(f.write(&mut short), Err(Error::BufferTooSmall { .. })));
    }
    s
}

fn fields(l: &AuthFileLine<'_>) -> Fields {
    assert!(l.columns() >= 3);
    assert_eq!(l.group_column().is_some(), l.columns() >= 4);
    let groups: Vec<String> = l.groups().map(text).collect();
    if l.group_column().is_some() {
        assert!(!groups.is_empty());
    }
    Fields { token: text(l.token()), user: text(l.user()), uid: text(l.uid()), groups }
}

/// Writes `f` and parses it back; returns the written line when the writer accepted it.
fn write_and_reparse(f: &Fields, small: usize) -> Option<String> {
    let groups: Vec<&str> = f.groups.iter().map(String::as_str).collect();
    let bad = |s: &str| s.contains(['\r', '\n']);
    let must_fail = f.token.is_empty()
        || bad(&f.token)
        || bad(&f.user)
        || bad(&f.uid)
        || groups.iter().any(|g| bad(g) || g.contains(','));
    let mut buf = vec![
        0u8;
        8 * (f.token.len() + f.user.len() + f.uid.len())
            + 8 * groups.iter().map(|g| g.len() + 1).sum::<usize>()
            + 16
    ];
    let n = match write_auth_file_line(&f.token, &f.user, &f.uid, &groups, &mut buf) {
        Ok(n) => {
            assert!(!must_fail, "writer accepted {f:?}");
            n
        }
        Err(e) => {
            assert!(must_fail, "writer refused {f:?}: {e:?}");
            assert_eq!(e, Error::InvalidAuthFileLine);
            assert!(buf.iter().all(|&b| b == 0), "buffer not wiped on error");
            return None;
        }
    };
    let line = std::str::from_utf8(&buf[..n]).expect("writer output is UTF-8").to_owned();
    assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
    let back =
        AuthFileLine::parse(&line).unwrap_or_else(|e| panic!("{line:?} does not re-parse: {e:?}"));
    let mut expect_groups = f.groups.clone();
    if !expect_groups.is_empty() {
        // Column 4 is re-split on ','; the writer refused commas inside groups.
        expect_groups = expect_groups.join(",").split(',').map(str::to_owned).collect();
    }
    let got = fields(&back);
    assert_eq!(got, Fields { groups: expect_groups, ..f_clone(f) }, "line {line:?}");
    assert_eq!(back.columns(), if f.groups.is_empty() { 3 } else { 4 });
    // The whole-file reader sees the same single line.
    let mut it = AuthFileLines::new(&line);
    let (no, first) = it.next().expect("one line");
    assert_eq!(no, 1);
    assert_eq!(fields(&first.unwrap()), got);
    assert!(it.next().is_none());
    // A short buffer: BufferTooSmall with the exact size, buffer wiped.
    if small < n {
        let mut short = vec![0xaau8; small];
        match write_auth_file_line(&f.token, &f.user, &f.uid, &groups, &mut short) {
            Err(Error::BufferTooSmall { needed }) => assert_eq!(needed, n),
            other => panic!("short buffer gave {other:?}"),
        }
        assert!(short.iter().all(|&b| b == 0), "short buffer not wiped");
    }
    Some(line)
}

fn f_clone(f: &Fields) -> Fields {
    Fields {
        token: f.token.clone(),
        user: f.user.clone(),
        uid: f.uid.clone(),
        groups: f.groups.clone(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        let Ok(s) = std::str::from_utf8(rest) else { return };
        // The whole-file reader: never panics; line numbers increase.
        let mut last = 0;
        for (no, line) in AuthFileLines::new(s) {
            assert!(no > last);
            last = no;
            if let Ok(l) = line {
                let _ = format!("{l:?}");
                let _ = fields(&l);
            }
        }
        // One line: parse -> write -> parse.
        if let Ok(l) = AuthFileLine::parse(s) {
            let f = fields(&l);
            // Debug redacts the token (when it is long enough to be recognisable).
            // The other fields are printed with Debug escapes (`\t` ...), which can spell the token
            // by themselves: only check when they cannot.
            let others = format!("{:?}{:?}{:?}{:?}", f.user, f.uid, f.groups, l.group_column());
            if f.token.len() >= 8
                && f.token.bytes().all(|b| b.is_ascii_alphanumeric())
                && s.matches(f.token.as_str()).count() == 1
                && !others.contains(f.token.as_str())
            {
                let dbg = format!("{l:?}");
                assert!(!dbg.contains(&f.token), "token leaked: {dbg}");
            }
            let _ = write_and_reparse(&f, usize::from(mode >> 1));
        }
    } else {
        let mut u = Unstructured::new(rest);
        let Ok((token, user, uid, groups)) =
            <(String, String, String, Vec<String>)>::arbitrary(&mut u)
        else {
            return;
        };
        let f = Fields { token, user, uid, groups };
        let _ = write_and_reparse(&f, usize::from(mode >> 1));
    }
});
