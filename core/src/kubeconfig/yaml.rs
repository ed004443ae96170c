//! The block-YAML subset reader behind [`super::Kubeconfig::parse`].
//!
//! Line-oriented: a cursor walks lines; block mappings and sequences are identified by the
//! column of their first key or dash. Every construct outside the subset is an error.

use super::{Builder, Item, Leaf, MAX_DEPTH, Scalar, ScalarStyle, Section};
use crate::error::{Error, Result};

/// Decode one YAML double-quoted escape at the start of `s` (which begins with `\`).
pub(super) fn decode_escape(s: &[u8]) -> Option<(char, usize)> {
    let (c, n) = match *s.get(1)? {
        b'0' => ('\0', 2),
        b'a' => ('\u{7}', 2),
        b'b' => ('\u{8}', 2),
        b't' | b'\t' => ('\t', 2),
        b'n' => ('\n', 2),
        b'v' => ('\u{b}', 2),
        b'f' => ('\u{c}', 2),
        b'r' => ('\r', 2),
        b'e' => ('\u{1b}', 2),
        b' ' => (' ', 2),
        b'"' => ('"', 2),
        b'/' => ('/', 2),
        b'\\' => ('\\', 2),
        b'N' => ('\u{85}', 2),
        b'_' => ('\u{a0}', 2),
        b'L' => ('\u{2028}', 2),
        b'P' => ('\u{2029}', 2),
        b'x' => (hex_char(s.get(2..4)?)?, 4),
        b'u' => (hex_char(s.get(2..6)?)?, 6),
        b'U' => (hex_char(s.get(2..10)?)?, 10),
        _ => return None,
    };
    Some((c, n))
}

fn hex_char(b: &[u8]) -> Option<char> {
    let mut v = 0u32;
    for &c in b {
        v = v.checked_mul(16)?.checked_add((c as char).to_digit(16)?)?;
    }
    char::from_u32(v)
}

/// A scanned flow token.
#[derive(Clone, Copy, Debug)]
enum Tok<'a> {
    Scalar(Scalar<'a>),
    EmptyMap,
    EmptySeq,
}

/// A node found at the cursor.
#[derive(Clone, Copy, Debug)]
enum Node<'a> {
    /// A scalar (an empty plain scalar means null).
    Scalar(Scalar<'a>),
    /// `{}`
    EmptyMap,
    /// `[]`
    EmptySeq,
    /// A block mapping whose keys are at this column; not consumed yet.
    Map(usize),
    /// A block sequence whose dashes are at this column; not consumed yet.
    Seq(usize),
}

const NULL: Node<'static> = Node::Scalar(Scalar::plain(""));

fn is_dash(rest: &str) -> bool {
    rest == "-" || rest.starts_with("- ") || rest.starts_with("-\t")
}

fn is_ws(b: Option<&u8>) -> bool {
    matches!(b, None | Some(b' ' | b'\t'))
}

/// Scan one flow token at the start of `rest`; returns it and the bytes used (trailing
/// spaces of a plain scalar are not included).
fn scan(rest: &str) -> Result<(Tok<'_>, usize)> {
    let b = rest.as_bytes();
    let first = *b.first().ok_or(Error::Malformed)?;
    match first {
        b'"' => {
            let mut i = 1;
            loop {
                match b.get(i) {
                    None => return Err(Error::Malformed),
                    Some(b'"') => break,
                    Some(b'\\') => {
                        let (_, used) = decode_escape(b.get(i..).ok_or(Error::Malformed)?)
                            .ok_or(Error::Malformed)?;
                        i += used;
                    }
                    Some(_) => i += 1,
                }
            }
            let raw = rest.get(1..i).ok_or(Error::Malformed)?;
            Ok((Tok::Scalar(Scalar::new(raw, ScalarStyle::DoubleQuoted)), i + 1))
        }
        b'\'' => {
            let mut i = 1;
            loop {
                match b.get(i) {
                    None => return Err(Error::Malformed),
                    Some(b'\'') if b.get(i + 1) == Some(&b'\'') => i += 2,
                    Some(b'\'') => break,
                    Some(_) => i += 1,
                }
            }
            let raw = rest.get(1..i).ok_or(Error::Malformed)?;
            Ok((Tok::Scalar(Scalar::new(raw, ScalarStyle::SingleQuoted)), i + 1))
        }
        b'{' | b'[' => {
            let inner = rest.get(1..).ok_or(Error::Malformed)?.trim_start_matches([' ', '\t']);
            let close = if first == b'{' { '}' } else { ']' };
            if !inner.starts_with(close) {
                return Err(Error::Malformed); // flow collections with content
            }
            let used = rest.len() - inner.len() + 1;
            Ok((if first == b'{' { Tok::EmptyMap } else { Tok::EmptySeq }, used))
        }
        // Anchors, aliases, tags, block scalars, directives, reserved, stray flow indicators.
        b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b',' | b']' | b'}' | b'#' => {
            Err(Error::Malformed)
        }
        b'-' | b'?' | b':' if is_ws(b.get(1)) => Err(Error::Malformed),
        _ => {
            let mut i = 0;
            loop {
                match b.get(i) {
                    None => break,
                    Some(b':') if is_ws(b.get(i + 1)) => break,
                    Some(b'#') if i > 0 && matches!(b.get(i - 1), Some(b' ' | b'\t')) => break,
                    Some(_) => i += 1,
                }
            }
            let raw = rest.get(..i).ok_or(Error::Malformed)?.trim_end_matches([' ', '\t']);
            Ok((Tok::Scalar(Scalar::new(raw, ScalarStyle::Plain)), raw.len()))
        }
    }
}

struct Cursor<'a> {
    src: &'a str,
    pos: usize,
    line_start: usize,
    /// The cursor is inside a line (`pos` is at content, not at a line start).
    mid: bool,
    seen_content: bool,
}

impl<'a> Cursor<'a> {
    fn line_end(&self, from: usize) -> usize {
        match self.src.get(from..).and_then(|s| s.find('\n')) {
            Some(i) => from + i,
            None => self.src.len(),
        }
    }

    /// The rest of the current line (without the line break).
    fn rest(&self) -> &'a str {
        let end = self.line_end(self.pos);
        let s = self.src.get(self.pos..end).unwrap_or("");
        s.strip_suffix('\r').unwrap_or(s)
    }

    fn skip_ws(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start_matches([' ', '\t']).len();
    }

    /// Finish the current line: only spaces and a comment may remain.
    fn end_line(&mut self) -> Result<()> {
        self.skip_ws();
        let r = self.rest();
        if !r.is_empty() {
            // Only a comment, separated from the token by white space.
            let prev = self.pos.checked_sub(1).and_then(|i| self.src.as_bytes().get(i));
            let sep = self.pos == self.line_start || matches!(prev, Some(b' ' | b'\t'));
            if !r.starts_with('#') || !sep {
                return Err(Error::Malformed);
            }
        }
        let end = self.line_end(self.pos);
        self.pos = (end + 1).min(self.src.len());
        self.mid = false;
        Ok(())
    }

    /// The column and rest of the next content, skipping blank and comment lines.
    fn peek(&mut self) -> Result<Option<(usize, &'a str)>> {
        if self.mid {
            return Ok(Some((self.pos - self.line_start, self.rest())));
        }
        loop {
            if self.pos >= self.src.len() {
                return Ok(None);
            }
            let start = self.pos;
            let end = self.line_end(start);
            let next = (end + 1).min(self.src.len());
            let raw = self.src.get(start..end).ok_or(Error::Malformed)?;
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
                return Err(Error::Malformed);
            }
            let indent = line.bytes().take_while(|&b| b == b' ').count();
            let content = line.get(indent..).ok_or(Error::Malformed)?;
            let trimmed = content.trim_start_matches([' ', '\t']);
            if trimmed.is_empty() || trimmed.starts_with('#') {
                self.pos = next;
                continue;
            }
            if content.starts_with('\t') {
                return Err(Error::Malformed); // tab indentation
            }
            if indent == 0 {
                let marker =
                    |m: &str| line.strip_prefix(m).is_some_and(|r| is_ws(r.as_bytes().first()));
                if marker("---") {
                    let after = line.get(3..).unwrap_or("").trim_start_matches([' ', '\t']);
                    if self.seen_content || !(after.is_empty() || after.starts_with('#')) {
                        return Err(Error::Malformed); // second document / content after ---
                    }
                    self.pos = next;
                    continue;
                }
                if marker("...") || line.starts_with('%') {
                    return Err(Error::Malformed);
                }
            }
            self.seen_content = true;
            self.line_start = start;
            self.pos = start + indent;
            self.mid = true;
            return Ok(Some((indent, content)));
        }
    }

    /// The node starting at the cursor (which is at content). With `block == false` (a value
    /// on its key's line) only a scalar or an empty flow collection is allowed.
    fn node(&mut self, block: bool) -> Result<Node<'a>> {
        let (col, rest) = self.peek()?.ok_or(Error::Malformed)?;
        if is_dash(rest) {
            return if block { Ok(Node::Seq(col)) } else { Err(Error::Malformed) };
        }
        let (tok, used) = scan(rest)?;
        let after = rest.get(used..).ok_or(Error::Malformed)?.trim_start_matches([' ', '\t']);
        if after.starts_with(':') && is_ws(after.as_bytes().get(1)) {
            return match tok {
                Tok::Scalar(_) if block => Ok(Node::Map(col)),
                _ => Err(Error::Malformed),
            };
        }
        self.pos += used;
        self.end_line()?;
        Ok(match tok {
            Tok::Scalar(s) => Node::Scalar(s),
            Tok::EmptyMap => Node::EmptyMap,
            Tok::EmptySeq => Node::EmptySeq,
        })
    }

    /// After `key:` (cursor just past the colon): the value.
    fn value_after_key(&mut self, key_col: usize) -> Result<Node<'a>> {
        self.skip_ws();
        let r = self.rest();
        if !(r.is_empty() || r.starts_with('#')) {
            return self.node(false);
        }
        self.end_line()?;
        match self.peek()? {
            Some((c, _)) if c > key_col => self.node(true),
            Some((c, r)) if c == key_col && is_dash(r) => Ok(Node::Seq(c)),
            _ => Ok(NULL),
        }
    }

    /// A block mapping with keys at `col`; `f` must consume each value.
    fn map(
        &mut self,
        col: usize,
        depth: usize,
        f: &mut dyn FnMut(&mut Self, Scalar<'a>, usize) -> Result<()>,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::Malformed);
        }
        while let Some((c, rest)) = self.peek()? {
            if c < col {
                break;
            }
            if c > col {
                return Err(Error::Malformed);
            }
            let (Tok::Scalar(key), used) = scan(rest)? else { return Err(Error::Malformed) };
            self.pos += used;
            self.skip_ws();
            let r = self.rest().as_bytes();
            if r.first() != Some(&b':') || !is_ws(r.get(1)) {
                return Err(Error::Malformed);
            }
            self.pos += 1;
            f(self, key, col)?;
        }
        Ok(())
    }

    /// A block sequence with dashes at `col`; `f` must consume each item.
    fn seq(
        &mut self,
        col: usize,
        depth: usize,
        f: &mut dyn FnMut(&mut Self, Node<'a>) -> Result<()>,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::Malformed);
        }
        while let Some((c, rest)) = self.peek()? {
            if c < col || (c == col && !is_dash(rest)) {
                break;
            }
            if c > col {
                return Err(Error::Malformed);
            }
            self.pos += 1;
            self.skip_ws();
            let r = self.rest();
            let item = if r.is_empty() || r.starts_with('#') {
                self.end_line()?;
                match self.peek()? {
                    Some((c2, _)) if c2 > col => self.node(true)?,
                    _ => NULL,
                }
            } else {
                self.node(true)?
            };
            f(self, item)?;
        }
        Ok(())
    }

    /// Consume (and validate) a node.
    fn skip(&mut self, node: Node<'a>, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::Malformed);
        }
        match node {
            Node::Map(c) => self.map(c, depth + 1, &mut |s, _k, kc| {
                let v = s.value_after_key(kc)?;
                s.skip(v, depth + 1)
            }),
            Node::Seq(c) => self.seq(c, depth + 1, &mut |s, n| s.skip(n, depth + 1)),
            _ => Ok(()),
        }
    }

    /// Consume a node as a schema leaf.
    fn leaf(&mut self, node: Node<'a>, depth: usize) -> Result<Leaf<'a>> {
        match node {
            Node::Scalar(s) => Ok(Leaf::Scalar(s)),
            Node::EmptyMap => Ok(Leaf::Map),
            Node::EmptySeq => Ok(Leaf::Seq),
            Node::Map(_) => self.skip(node, depth).map(|()| Leaf::Map),
            Node::Seq(_) => self.skip(node, depth).map(|()| Leaf::Seq),
        }
    }
}

fn is_null(n: &Node<'_>) -> bool {
    matches!(n, Node::Scalar(s) if s.is_null())
}

fn read_item<'a>(
    s: &mut Cursor<'a>,
    b: &mut Builder<'a>,
    section: Section,
    item: Node<'a>,
) -> Result<()> {
    let mut it = Item::default();
    match item {
        Node::EmptyMap => {}
        Node::Map(c) => s.map(c, 3, &mut |s, k, kc| {
            let v = s.value_after_key(kc)?;
            if k.eq_str("name") {
                let l = s.leaf(v, 4)?;
                it.set_name(l)
            } else if k.eq_str(section.item_key()) {
                it.begin_inner()?;
                match v {
                    Node::EmptyMap => Ok(()),
                    n if is_null(&n) => Ok(()),
                    Node::Map(c2) => s.map(c2, 4, &mut |s, fk, fkc| {
                        let fv = s.value_after_key(fkc)?;
                        let l = s.leaf(fv, 5)?;
                        it.field(section, &fk, l)
                    }),
                    _ => Err(Error::Malformed),
                }
            } else {
                s.skip(v, 4)
            }
        })?,
        _ => return Err(Error::Malformed),
    }
    b.push(section, it)
}

/// Read a YAML kubeconfig into `b`.
pub(super) fn read<'a>(src: &'a str, b: &mut Builder<'a>) -> Result<()> {
    let mut cur = Cursor { src, pos: 0, line_start: 0, mid: false, seen_content: false };
    if cur.peek()?.is_none() {
        return Ok(()); // empty document: an empty config
    }
    match cur.node(true)? {
        Node::Map(col) => cur.map(col, 1, &mut |s, k, kc| {
            b.top_key(&k)?;
            let v = s.value_after_key(kc)?;
            if let Some(section) = Section::from_key(&k) {
                match v {
                    Node::EmptySeq => Ok(()),
                    n if is_null(&n) => Ok(()),
                    Node::Seq(c) => s.seq(c, 2, &mut |s, item| read_item(s, b, section, item)),
                    _ => Err(Error::Malformed),
                }
            } else if k.eq_str("current-context") {
                let l = s.leaf(v, 2)?;
                b.set_current_context(l)
            } else if k.eq_str("apiVersion") || k.eq_str("kind") {
                let l = s.leaf(v, 2)?;
                b.check_string(l)
            } else {
                let l = s.leaf(v, 1)?;
                super::check_ignored(None, &k, l)
            }
        })?,
        Node::EmptyMap => {}
        n if is_null(&n) => {}
        _ => return Err(Error::Malformed),
    }
    if cur.peek()?.is_some() {
        return Err(Error::Malformed);
    }
    Ok(())
}
