//! `kube-apiserver --token-auth-file` lines: `token,user,uid[,"group1,group2"]`, read with Go
//! `encoding/csv` rules and written so that Go reads them back unchanged.
//!
//! Reading (one record per line):
//! - a field that starts with `"` is quoted: it ends at a `"` followed by `,` or the end of the
//!   line, and `""` inside stands for one `"`; any other character after the closing quote, or
//!   a missing closing quote, is an error;
//! - an unquoted field may not contain `"`;
//! - no trimming, no comments; one trailing `\n`, `\r\n` or `\r` is the line terminator;
//! - at least 3 columns; column 4, if present, is split on `,` into groups (an empty column 4 is
//!   one empty group, as in Go); further columns are checked for syntax and ignored.
//!
//! Not supported: quoted fields spanning lines (a `\n` inside a line is an error).

use core::fmt;

use super::Sink;
use crate::{Error, Result};

/// One CSV field, borrowed from the line. Quoted fields keep their `""` escapes until read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CsvField<'a> {
    /// The field's characters, between the quotes if quoted, with `""` still doubled.
    raw: &'a str,
    /// Whether `raw` contains `""` escapes.
    escaped: bool,
}

impl<'a> CsvField<'a> {
    fn new(raw: &'a str) -> Self {
        CsvField { raw, escaped: raw.contains('"') }
    }

    /// The value as a borrowed `&str` when it contains no escaped quote (the common case).
    pub fn as_str(&self) -> Option<&'a str> {
        if self.escaped { None } else { Some(self.raw) }
    }

    /// The value's bytes, with `""` read as `"`.
    pub fn bytes(&self) -> impl Iterator<Item = u8> + 'a {
        let mut skip = false;
        self.raw.bytes().filter(move |&b| {
            if b == b'"' {
                skip = !skip;
                !skip
            } else {
                true
            }
        })
    }

    /// The value's length in bytes.
    pub fn len(&self) -> usize {
        self.bytes().count()
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Whether the value equals `s`.
    pub fn eq_str(&self, s: &str) -> bool {
        self.bytes().eq(s.bytes())
    }

    /// Copies the value into `buf`, returning its length.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize> {
        let mut out = Sink::new(buf);
        for b in self.bytes() {
            out.put(&[b]);
        }
        out.finish()
    }
}

impl fmt::Debug for CsvField<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.raw, f)
    }
}

/// The groups of column 4, split on `,`.
#[derive(Clone, Debug)]
pub struct CsvGroups<'a> {
    rest: Option<core::str::Split<'a, char>>,
}

impl<'a> Iterator for CsvGroups<'a> {
    type Item = CsvField<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rest.as_mut()?.next().map(CsvField::new)
    }
}

/// A parsed `--token-auth-file` line. `Debug` redacts the token.
#[derive(Clone, Copy)]
pub struct AuthFileLine<'a> {
    token: CsvField<'a>,
    user: CsvField<'a>,
    uid: CsvField<'a>,
    groups: Option<CsvField<'a>>,
    columns: usize,
}

impl<'a> AuthFileLine<'a> {
    /// Parses one line (see the module docs); [`Error::InvalidAuthFileLine`] on a quoting error,
    /// an embedded newline, fewer than 3 columns, or an empty line.
    pub fn parse(line: &'a str) -> Result<Self> {
        let line = strip_terminator(line);
        if line.is_empty() || line.contains('\n') {
            return Err(Error::InvalidAuthFileLine);
        }
        let mut fields = Fields { rest: Some(line) };
        let token = fields.next().ok_or(Error::InvalidAuthFileLine)??;
        let user = fields.next().ok_or(Error::InvalidAuthFileLine)??;
        let uid = fields.next().ok_or(Error::InvalidAuthFileLine)??;
        let groups = fields.next().transpose()?;
        let mut columns = 3 + usize::from(groups.is_some());
        for f in fields {
            f?;
            columns += 1;
        }
        Ok(AuthFileLine { token, user, uid, groups, columns })
    }

    /// Column 1, the bearer token. A secret: compare it, don't log it. (The apiserver skips
    /// lines whose token is empty.)
    pub fn token(&self) -> CsvField<'a> {
        self.token
    }

    /// Column 2, the user name.
    pub fn user(&self) -> CsvField<'a> {
        self.user
    }

    /// Column 3, the user UID.
    pub fn uid(&self) -> CsvField<'a> {
        self.uid
    }

    /// Column 4 as written (unsplit), if present.
    pub fn group_column(&self) -> Option<CsvField<'a>> {
        self.groups
    }

    /// Column 4 split on `,`; empty when there is no column 4.
    pub fn groups(&self) -> CsvGroups<'a> {
        CsvGroups { rest: self.groups.map(|g| g.raw.split(',')) }
    }

    /// The number of columns on the line (≥ 3).
    pub fn columns(&self) -> usize {
        self.columns
    }
}

impl fmt::Debug for AuthFileLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthFileLine")
            .field("token", &"<redacted>")
            .field("user", &self.user)
            .field("uid", &self.uid)
            .field("groups", &self.groups)
            .field("columns", &self.columns)
            .finish()
    }
}

/// The records of a whole token file, skipping blank lines like Go's `encoding/csv`.
/// `Debug` shows only the line number (the text holds tokens).
#[derive(Clone)]
pub struct AuthFileLines<'a> {
    rest: &'a str,
    line_no: usize,
}

impl<'a> AuthFileLines<'a> {
    /// Iterates over the lines of `file`.
    pub fn new(file: &'a str) -> Self {
        AuthFileLines { rest: file, line_no: 0 }
    }
}

impl fmt::Debug for AuthFileLines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthFileLines").field("line_no", &self.line_no).finish_non_exhaustive()
    }
}

impl<'a> Iterator for AuthFileLines<'a> {
    /// `(1-based line number, parse result)`.
    type Item = (usize, Result<AuthFileLine<'a>>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let (line, rest) = match self.rest.find('\n') {
                Some(i) => self.rest.split_at(i + 1),
                None => (self.rest, ""),
            };
            self.rest = rest;
            self.line_no += 1;
            if strip_terminator(line).is_empty() {
                continue;
            }
            return Some((self.line_no, AuthFileLine::parse(line)));
        }
    }
}

fn strip_terminator(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Splits a line (without terminator) into fields.
struct Fields<'a> {
    rest: Option<&'a str>,
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<CsvField<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.rest.take()?;
        if let Some(body) = s.strip_prefix('"') {
            // Quoted: find the closing quote, skipping "" pairs.
            let bytes = body.as_bytes();
            let mut i = 0;
            loop {
                let Some(q) = bytes.get(i..).and_then(|t| t.iter().position(|&b| b == b'"')) else {
                    return Some(Err(Error::InvalidAuthFileLine));
                };
                let q = i + q;
                match bytes.get(q + 1) {
                    Some(b'"') => i = q + 2,
                    None => return Some(Ok(CsvField::new(body.get(..q)?))),
                    Some(b',') => {
                        self.rest = body.get(q + 2..);
                        return Some(Ok(CsvField::new(body.get(..q)?)));
                    }
                    Some(_) => return Some(Err(Error::InvalidAuthFileLine)),
                }
            }
        }
        let (field, rest) = match s.find(',') {
            Some(i) => (s.get(..i)?, s.get(i + 1..)),
            None => (s, None),
        };
        if field.contains('"') {
            return Some(Err(Error::InvalidAuthFileLine));
        }
        self.rest = rest;
        Some(Ok(CsvField { raw: field, escaped: false }))
    }
}

/// Writes one token-file line `token,user,uid[,groups]` + `\n` into `buf`, quoting each field
/// the way Go's `csv.Writer` does (when it contains `,` `"` CR or LF, starts with white space,
/// or is `\.`; `"` doubled). The groups are joined with `,` into column 4, omitted when
/// `groups` is empty.
///
/// [`Error::InvalidAuthFileLine`] for an empty token, a CR/LF in any field, or a `,` inside a
/// group name (neither would read back the same); [`Error::BufferTooSmall`] otherwise. The
/// output holds the token; on error the whole buffer is wiped.
pub fn write_auth_file_line(
    token: &str,
    user: &str,
    uid: &str,
    groups: &[&str],
    buf: &mut [u8],
) -> Result<usize> {
    let bad = |s: &str| s.contains(['\r', '\n']);
    if token.is_empty()
        || bad(token)
        || bad(user)
        || bad(uid)
        || groups.iter().any(|g| bad(g) || g.contains(','))
    {
        buf.iter_mut().for_each(|b| *b = 0);
        return Err(Error::InvalidAuthFileLine);
    }
    let mut out = Sink::new(buf);
    csv_field(&mut out, [token].into_iter());
    out.put(b",");
    csv_field(&mut out, [user].into_iter());
    out.put(b",");
    csv_field(&mut out, [uid].into_iter());
    if !groups.is_empty() {
        out.put(b",");
        csv_field(&mut out, groups.iter().copied());
    }
    out.put(b"\n");
    out.finish()
}

/// Writes the parts joined with `,` as one CSV field.
fn csv_field<'s>(out: &mut Sink<'_>, parts: impl Iterator<Item = &'s str> + Clone) {
    let mut all = parts.clone().enumerate().flat_map(|(i, p)| {
        let sep: &'static str = if i > 0 { "," } else { "" };
        sep.chars().chain(p.chars())
    });
    let first = all.clone().next();
    let needs_quotes = all.clone().any(|c| matches!(c, ',' | '"' | '\r' | '\n'))
        || first.is_some_and(char::is_whitespace)
        || {
            let mut it = all.clone();
            it.next() == Some('\\') && it.next() == Some('.') && it.next().is_none()
        };
    if needs_quotes {
        out.put(b"\"");
    }
    for c in all.by_ref() {
        if c == '"' {
            out.put(b"\"\"");
        } else {
            let mut tmp = [0u8; 4];
            out.put(c.encode_utf8(&mut tmp).as_bytes());
        }
    }
    if needs_quotes {
        out.put(b"\"");
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;
    use std::string::String;
    use std::vec::Vec;

    fn groups(l: &AuthFileLine<'_>) -> Vec<String> {
        l.groups().map(|g| String::from_utf8(g.bytes().collect()).unwrap()).collect()
    }

    #[test]
    fn spec_example() {
        let l = AuthFileLine::parse(
            "02b50b05283e98dd0fd71db496ef01e8,kubelet-bootstrap,10001,\"system:bootstrappers,system:foo\"\n",
        )
        .unwrap();
        assert_eq!(l.token().as_str(), Some("02b50b05283e98dd0fd71db496ef01e8"));
        assert_eq!(l.user().as_str(), Some("kubelet-bootstrap"));
        assert_eq!(l.uid().as_str(), Some("10001"));
        assert_eq!(groups(&l), ["system:bootstrappers", "system:foo"]);
        assert_eq!(l.columns(), 4);
        let dbg = format!("{l:?}");
        assert!(!dbg.contains("02b50b05"), "{dbg}");
    }

    #[test]
    fn csv_rules() {
        let l = AuthFileLine::parse("tok,user,uid").unwrap();
        assert_eq!(l.groups().count(), 0);
        assert_eq!(l.columns(), 3);
        let l = AuthFileLine::parse("tok,user,uid,").unwrap();
        assert_eq!(groups(&l), [""]);
        let l = AuthFileLine::parse("tok,user,uid,g1,extra,\"more\"\r\n").unwrap();
        assert_eq!(groups(&l), ["g1"]);
        assert_eq!(l.columns(), 6);
        let l = AuthFileLine::parse("\"a\"\"b\",\"\",\"x,y\",\"q\"\"1,q2\"").unwrap();
        assert_eq!(l.token().as_str(), None);
        assert!(l.token().eq_str("a\"b"));
        assert_eq!(l.token().len(), 3);
        assert_eq!(l.user().as_str(), Some(""));
        assert_eq!(l.uid().as_str(), Some("x,y"));
        assert_eq!(groups(&l), ["q\"1", "q2"]);
        let mut buf = [0u8; 8];
        assert_eq!(l.token().write(&mut buf), Ok(3));
        assert_eq!(&buf[..3], b"a\"b");
        let l = AuthFileLine::parse(" tok, user ,uid\r").unwrap();
        assert_eq!(l.token().as_str(), Some(" tok"));
        assert_eq!(l.user().as_str(), Some(" user "));
        let l = AuthFileLine::parse("t\rk,u,i").unwrap();
        assert_eq!(l.token().as_str(), Some("t\rk"));
        for bad in [
            "",
            "\n",
            "\r\n",
            "tok,user",
            "tok",
            "tok,us\"er,uid",
            "\"tok,user,uid",
            "\"tok\"x,user,uid",
            "\"tok\" ,user,uid",
            "tok,user,uid,\"g",
            "tok,user,uid\nb,c,d",
            "tok,user,uid,g,\"x\"y",
            " \"tok\",user,uid",
        ] {
            assert_eq!(
                AuthFileLine::parse(bad).map(|_| ()),
                Err(Error::InvalidAuthFileLine),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn file_iterator_skips_blank_lines() {
        let file = "a,b,c\n\n\r\nd,e,f,\"g,h\"\nbad\nlast,x,y";
        let v: Vec<_> =
            AuthFileLines::new(file).map(|(n, r)| (n, r.map(|l| l.columns()))).collect();
        assert_eq!(v, [(1, Ok(3)), (4, Ok(4)), (5, Err(Error::InvalidAuthFileLine)), (6, Ok(3))]);
        let dbg = format!("{:?}", AuthFileLines::new(file));
        assert!(!dbg.contains("a,b,c"), "{dbg}");
    }

    #[test]
    fn write_and_read_back() {
        let mut buf = [0u8; 256];
        let n = write_auth_file_line(
            "02b50b05283e98dd0fd71db496ef01e8",
            "kubelet-bootstrap",
            "10001",
            &["system:bootstrappers", "system:foo"],
            &mut buf,
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&buf[..n]).unwrap(),
            "02b50b05283e98dd0fd71db496ef01e8,kubelet-bootstrap,10001,\"system:bootstrappers,system:foo\"\n"
        );
        let n = write_auth_file_line("t", "u\"ser", " uid", &["one"], &mut buf).unwrap();
        let text = std::str::from_utf8(&buf[..n]).unwrap();
        assert_eq!(text, "t,\"u\"\"ser\",\" uid\",one\n");
        let l = AuthFileLine::parse(text).unwrap();
        assert!(l.user().eq_str("u\"ser"));
        assert!(l.uid().eq_str(" uid"));
        let n = write_auth_file_line("t", "\\.", "", &[], &mut buf).unwrap();
        assert_eq!(&buf[..n], b"t,\"\\.\",\n");
        for (t, u, g) in [("", "u", "g"), ("t\n", "u", "g"), ("t", "u\r", "g"), ("t", "u", "a,b")] {
            let mut buf = [0x55u8; 64];
            assert_eq!(
                write_auth_file_line(t, u, "1", &[g], &mut buf),
                Err(Error::InvalidAuthFileLine)
            );
            assert!(buf.iter().all(|&b| b == 0));
        }
        let mut small = [0x55u8; 10];
        assert_eq!(
            write_auth_file_line("tokentoken", "u", "1", &[], &mut small),
            Err(Error::BufferTooSmall { needed: 15 })
        );
        assert!(small.iter().all(|&b| b == 0));
    }

    proptest::proptest! {
        #[test]
        fn round_trip(token in "[^\r\n]{1,12}", user in "[^\r\n]{0,12}", uid in "[^\r\n]{0,6}",
                      gs in proptest::collection::vec("[^\r\n,]{0,8}", 0..4)) {
            let gs: Vec<&str> = gs.iter().map(String::as_str).collect();
            let mut buf = [0u8; 512];
            let n = write_auth_file_line(&token, &user, &uid, &gs, &mut buf).unwrap();
            let text = std::str::from_utf8(&buf[..n]).unwrap();
            let l = AuthFileLine::parse(text).unwrap();
            proptest::prop_assert!(l.token().eq_str(&token));
            proptest::prop_assert!(l.user().eq_str(&user));
            proptest::prop_assert!(l.uid().eq_str(&uid));
            if gs.is_empty() {
                proptest::prop_assert_eq!(l.columns(), 3);
            } else {
                proptest::prop_assert_eq!(groups(&l), gs);
            }
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = AuthFileLine::parse(&s).map(|l| l.groups().count());
        }
    }
}
