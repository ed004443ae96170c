//! Kubeconfig reader (YAML as `kubectl config` / kubeadm / kubelet write it, and JSON) and writer
//! (the kubelet's node kubeconfig, bootstrap.go writeKubeconfigFromBootstrapping, and kubeadm's
//! bootstrap kubeconfig, util/kubeconfig CreateWithToken).
//!
//! # Reading
//! [`Kubeconfig::parse`] borrows the input: every value is a [`Scalar`], a view of the text as
//! written (plain, single-quoted, double-quoted or JSON string). Plain values and quoted values
//! without escapes are available as `&str` with [`Scalar::as_borrowed`]; anything can be decoded
//! into a caller buffer with [`Scalar::decode_into`], compared with [`Scalar::eq_str`], and
//! `*-data` fields base64-decoded with [`Scalar::decode_base64_into`]. Nothing is allocated.
//!
//! Supported YAML: the block subset tools emit — block mappings and sequences (including
//! `- key: value` compact items and sequences at the parent key's indentation), plain,
//! single-quoted and double-quoted single-line scalars, `{}` and `[]`, comments, `null`/`~`, a
//! leading `---`, CRLF line ends, a leading BOM. Anything else — anchors `&`, aliases `*`, tags
//! `!`, block scalars `|`/`>`, flow collections with content, multi-line scalars, a second
//! document, directives, tabs in indentation — is [`Error::Malformed`], never a guess. A document
//! whose first non-blank byte is `{` is read as strict JSON ([`crate::json`]).
//!
//! Typing follows kubectl (YAML → JSON → Go structs): a string field whose plain value would
//! resolve to a YAML 1.1 bool or number (`token: 123456.1234567890123456`, `name: yes`)
//! is an error, as are duplicate names in `clusters`/`users`/`contexts` and duplicate known keys.
//! `null` (or an empty value) means "absent". Unknown keys (`extensions`, `exec`, `proxy-url`, …)
//! are validated as YAML and ignored.
//!
//! Limits: at most [`MAX_ENTRIES`] clusters, users and contexts each (more is
//! [`Error::Malformed`]); nesting ≤ [`MAX_DEPTH`]; input ≤ [`MAX_INPUT_LEN`]. A [`Kubeconfig`] is
//! about 6.3 KiB on 64-bit targets (about 3.2 KiB on 32-bit); parsing recurses at most a few
//! frames per nesting level.
//!
//! Relative paths (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`) are
//! reported as written; [`Scalar::is_relative_path`] tells the std layer to resolve them against
//! the kubeconfig file's directory (clientcmd loader.go ResolveLocalPaths). `*-data` wins over the
//! file when both are set ([`Cluster::ca_source`], [`User::client_cert_source`],
//! [`User::client_key_source`]).
//!
//! # Writing
//! [`write_node_kubeconfig`] and [`write_bootstrap_kubeconfig`] write YAML into a caller buffer
//! (measure first: a short buffer is [`Error::BufferTooSmall`] with the exact size).

use crate::error::{Error, Result};
use crate::json;
use core::fmt;

mod writer;
mod yaml;

pub use writer::{
    BOOTSTRAP_USER, BootstrapKubeconfig, CLIENT_PEM_FILE, NODE_CLUSTER, NODE_CONTEXT, NODE_USER,
    NodeKubeconfig, write_bootstrap_kubeconfig, write_node_kubeconfig,
};

/// Maximum number of clusters, of users and of contexts in one kubeconfig.
pub const MAX_ENTRIES: usize = 16;
/// Maximum nesting depth of the YAML/JSON document.
pub const MAX_DEPTH: usize = json::MAX_DEPTH;
/// Maximum input size in bytes (the same as [`json::MAX_INPUT_LEN`]).
pub const MAX_INPUT_LEN: usize = json::MAX_INPUT_LEN;

/// How a scalar was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarStyle {
    /// YAML plain scalar (no quotes, no escapes).
    Plain,
    /// YAML `'single quoted'` (`''` is a quote).
    SingleQuoted,
    /// YAML `"double quoted"` (YAML escapes).
    DoubleQuoted,
    /// JSON string (JSON escapes).
    Json,
}

/// A borrowed scalar value; decoding is lazy and heap-free. The raw text was validated when
/// the document was parsed, so decoding can only fail for a short buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Scalar<'a> {
    raw: &'a str,
    style: ScalarStyle,
}

impl fmt::Debug for Scalar<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}({:?})", self.style, self.raw)
    }
}

impl<'a> Scalar<'a> {
    pub(crate) const fn new(raw: &'a str, style: ScalarStyle) -> Self {
        Scalar { raw, style }
    }

    /// A plain scalar (used in tests and by callers building comparisons).
    pub const fn plain(raw: &'a str) -> Self {
        Scalar { raw, style: ScalarStyle::Plain }
    }

    /// The text as written, without the surrounding quotes.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// How it was written.
    pub fn style(&self) -> ScalarStyle {
        self.style
    }

    fn needs_decoding(&self) -> bool {
        match self.style {
            ScalarStyle::Plain => false,
            ScalarStyle::SingleQuoted => self.raw.contains('\''),
            ScalarStyle::DoubleQuoted | ScalarStyle::Json => self.raw.contains('\\'),
        }
    }

    /// The value as a borrowed `&str` when no unescaping is needed.
    pub fn as_borrowed(&self) -> Option<&'a str> {
        if self.needs_decoding() { None } else { Some(self.raw) }
    }

    /// The decoded bytes (UTF-8), one at a time.
    pub fn bytes(&self) -> ScalarBytes<'a> {
        ScalarBytes {
            raw: self.raw.as_bytes(),
            style: self.style,
            pos: 0,
            buf: [0; 4],
            len: 0,
            idx: 0,
        }
    }

    /// Length of the decoded value in bytes.
    pub fn decoded_len(&self) -> usize {
        if self.needs_decoding() { self.bytes().count() } else { self.raw.len() }
    }

    /// Whether the decoded value is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Whether the decoded value equals `s`.
    pub fn eq_str(&self, s: &str) -> bool {
        if self.needs_decoding() { self.bytes().eq(s.bytes()) } else { self.raw == s }
    }

    /// Whether two scalars decode to the same value.
    pub fn eq_scalar(&self, other: &Scalar<'_>) -> bool {
        self.bytes().eq(other.bytes())
    }

    /// Decode into `buf`; returns the value. Short buffer → [`Error::BufferTooSmall`].
    pub fn decode_into<'b>(&self, buf: &'b mut [u8]) -> Result<&'b str> {
        let needed = self.decoded_len();
        let dst = buf.get_mut(..needed).ok_or(Error::BufferTooSmall { needed })?;
        for (d, b) in dst.iter_mut().zip(self.bytes()) {
            *d = b;
        }
        core::str::from_utf8(dst).map_err(|_| Error::Malformed)
    }

    /// A non-empty path that does not start with `/`: the std layer must join it to the
    /// kubeconfig file's directory (clientcmd ResolveLocalPaths).
    pub fn is_relative_path(&self) -> bool {
        let mut b = self.bytes();
        matches!(b.next(), Some(c) if c != b'/')
    }

    /// Base64-decode (standard alphabet, padded — what Go writes for `[]byte`) a `*-data` value
    /// into `buf`; returns the decoded bytes (PEM for CA and client data). Line breaks are not
    /// accepted. If the scalar needs unescaping, `buf` must also hold the decoded text.
    pub fn decode_base64_into<'b>(&self, buf: &'b mut [u8]) -> Result<&'b [u8]> {
        use base64ct::{Base64, Encoding};
        match self.as_borrowed() {
            Some(text) => {
                let needed = base64_decoded_len(text.as_bytes()).ok_or(Error::Malformed)?;
                if buf.len() < needed {
                    return Err(Error::BufferTooSmall { needed });
                }
                let out = Base64::decode(text.as_bytes(), buf).map_err(|_| Error::Malformed)?;
                Ok(out)
            }
            None => {
                let n = self.decode_into(buf)?.len();
                let text = buf.get_mut(..n).ok_or(Error::Malformed)?;
                base64_decoded_len(text).ok_or(Error::Malformed)?;
                Base64::decode_in_place(text).map_err(|_| Error::Malformed)
            }
        }
    }

    /// Whether this is a YAML null (`null`, `Null`, `NULL`, `~` or empty, plain only).
    fn is_null(&self) -> bool {
        self.style == ScalarStyle::Plain && is_yaml_null(self.raw)
    }
}

fn base64_decoded_len(t: &[u8]) -> Option<usize> {
    if t.len() % 4 != 0 {
        return None;
    }
    let pad = t.iter().rev().take(2).filter(|&&b| b == b'=').count();
    Some(t.len() / 4 * 3 - pad)
}

/// Iterator over a [`Scalar`]'s decoded bytes.
#[derive(Clone, Debug)]
pub struct ScalarBytes<'a> {
    raw: &'a [u8],
    style: ScalarStyle,
    pos: usize,
    buf: [u8; 4],
    len: u8,
    idx: u8,
}

impl Iterator for ScalarBytes<'_> {
    type Item = u8;
    fn next(&mut self) -> Option<u8> {
        if self.idx < self.len {
            let b = self.buf.get(usize::from(self.idx)).copied();
            self.idx += 1;
            return b;
        }
        let b = *self.raw.get(self.pos)?;
        let rest = self.raw.get(self.pos..)?;
        let (c, used) = match (self.style, b) {
            (ScalarStyle::SingleQuoted, b'\'') => {
                self.pos += 2;
                return Some(b'\'');
            }
            (ScalarStyle::DoubleQuoted, b'\\') => yaml::decode_escape(rest)?,
            (ScalarStyle::Json, b'\\') => json::decode_escape(rest)?,
            _ => {
                self.pos += 1;
                return Some(b);
            }
        };
        self.pos += used;
        self.len = c.encode_utf8(&mut self.buf).len() as u8;
        self.idx = 1;
        self.buf.first().copied()
    }
}

/// YAML 1.1 null spellings (go-yaml v2).
fn is_yaml_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

/// YAML 1.1 bool spellings accepted by go-yaml v2, with their value.
fn yaml_bool(s: &str) -> Option<bool> {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Some(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Some(false)
        }
        _ => None,
    }
}

/// Whether a plain scalar would be read by kubectl (go-yaml v2 → JSON) as something other than a
/// string: null, bool, int or float. (Timestamps stay strings there, so they are strings here;
/// the writer quotes them anyway.)
pub(crate) fn plain_is_not_string(s: &str) -> bool {
    if is_yaml_null(s) || yaml_bool(s).is_some() {
        return true;
    }
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if matches!(body, ".inf" | ".Inf" | ".INF") || matches!(s, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let body = body.as_bytes();
    // Integers with a base prefix.
    if let Some(rest) = body.strip_prefix(b"0x").or_else(|| body.strip_prefix(b"0X")) {
        return !rest.is_empty() && rest.iter().all(|c| c.is_ascii_hexdigit() || *c == b'_');
    }
    for p in [b"0b", b"0o"] {
        if let Some(rest) = body.strip_prefix(p) {
            return !rest.is_empty() && rest.iter().all(|c| c.is_ascii_digit() || *c == b'_');
        }
    }
    // Decimal ints and floats: [0-9_]* (. [0-9_]*)? ([eE][-+]?[0-9]+)? with at least one digit.
    let mut i = 0;
    let mut digits = 0;
    while let Some(c) = body.get(i) {
        if c.is_ascii_digit() {
            digits += 1;
        } else if *c != b'_' {
            break;
        }
        i += 1;
    }
    if body.get(i) == Some(&b'.') {
        i += 1;
        while let Some(c) = body.get(i) {
            if c.is_ascii_digit() {
                digits += 1;
            } else if *c != b'_' {
                break;
            }
            i += 1;
        }
    }
    if digits == 0 {
        return false;
    }
    if matches!(body.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(body.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        while body.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == body.len()
}

/// Where a credential comes from, after applying "`*-data` wins over the file" (client-go
/// transport/transport.go dataFromSliceOrFile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source<'a> {
    /// Inline base64 data (`*-data`); decode with [`Scalar::decode_base64_into`].
    Data(Scalar<'a>),
    /// A file path (maybe relative: see [`Scalar::is_relative_path`]).
    File(Scalar<'a>),
    /// Not set.
    None,
}

fn source<'a>(data: Option<Scalar<'a>>, file: Option<Scalar<'a>>) -> Source<'a> {
    match (data.filter(|d| !d.is_empty()), file.filter(|f| !f.is_empty())) {
        (Some(d), _) => Source::Data(d),
        (None, Some(f)) => Source::File(f),
        (None, None) => Source::None,
    }
}

/// A `clusters[].cluster` entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cluster<'a> {
    /// `server` (URL).
    pub server: Option<Scalar<'a>>,
    /// `certificate-authority` (file path, maybe relative).
    pub certificate_authority: Option<Scalar<'a>>,
    /// `certificate-authority-data` (base64 of PEM).
    pub certificate_authority_data: Option<Scalar<'a>>,
    /// `insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// `tls-server-name`.
    pub tls_server_name: Option<Scalar<'a>>,
}

impl<'a> Cluster<'a> {
    /// The CA: data if set, else the file, else none (system roots).
    pub fn ca_source(&self) -> Source<'a> {
        source(self.certificate_authority_data, self.certificate_authority)
    }
}

/// A `users[].user` entry. `Debug` redacts the token and the client key data.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct User<'a> {
    /// `token` (bearer token; secret).
    pub token: Option<Scalar<'a>>,
    /// `tokenFile` (path, maybe relative).
    pub token_file: Option<Scalar<'a>>,
    /// `client-certificate` (path, maybe relative).
    pub client_certificate: Option<Scalar<'a>>,
    /// `client-certificate-data` (base64 of PEM).
    pub client_certificate_data: Option<Scalar<'a>>,
    /// `client-key` (path, maybe relative; may be the same combined PEM file as the cert).
    pub client_key: Option<Scalar<'a>>,
    /// `client-key-data` (base64 of PEM; secret).
    pub client_key_data: Option<Scalar<'a>>,
}

impl<'a> User<'a> {
    /// The client certificate: data if set, else the file.
    pub fn client_cert_source(&self) -> Source<'a> {
        source(self.client_certificate_data, self.client_certificate)
    }

    /// The client key: data if set, else the file.
    pub fn client_key_source(&self) -> Source<'a> {
        source(self.client_key_data, self.client_key)
    }
}

impl fmt::Debug for User<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let red = |s: &Option<Scalar<'_>>| s.map(|_| "<redacted>");
        f.debug_struct("User")
            .field("token", &red(&self.token))
            .field("token_file", &self.token_file)
            .field("client_certificate", &self.client_certificate)
            .field("client_certificate_data", &self.client_certificate_data)
            .field("client_key", &self.client_key)
            .field("client_key_data", &red(&self.client_key_data))
            .finish()
    }
}

/// A `contexts[].context` entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Context<'a> {
    /// `cluster` (a cluster name).
    pub cluster: Option<Scalar<'a>>,
    /// `user` (a user name).
    pub user: Option<Scalar<'a>>,
    /// `namespace`.
    pub namespace: Option<Scalar<'a>>,
}

/// A named list entry (`- name: ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named<'a, T> {
    /// `name` (may be empty: kubeadm's cluster-info uses `""`).
    pub name: Scalar<'a>,
    /// The entry.
    pub value: T,
}

/// Which syntax the kubeconfig was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Block YAML.
    Yaml,
    /// JSON.
    Json,
}

/// A parsed kubeconfig, borrowing the input.
#[derive(Clone, Debug)]
pub struct Kubeconfig<'a> {
    format: Format,
    clusters: heapless::Vec<Named<'a, Cluster<'a>>, MAX_ENTRIES>,
    users: heapless::Vec<Named<'a, User<'a>>, MAX_ENTRIES>,
    contexts: heapless::Vec<Named<'a, Context<'a>>, MAX_ENTRIES>,
    current_context: Option<Scalar<'a>>,
}

/// The current (or a named) context resolved to its cluster and user.
#[derive(Clone, Copy, Debug)]
pub struct Resolved<'k, 'a> {
    /// The context's name.
    pub context_name: Scalar<'a>,
    /// The context.
    pub context: &'k Context<'a>,
    /// The cluster's name.
    pub cluster_name: Scalar<'a>,
    /// The cluster (its `server` is non-empty).
    pub cluster: &'k Cluster<'a>,
    /// The user's name (`None` when the context names no user: anonymous).
    pub user_name: Option<Scalar<'a>>,
    /// The user (all fields empty when anonymous).
    pub user: &'k User<'a>,
}

impl<'a> Resolved<'_, 'a> {
    /// The context's namespace, if set and non-empty.
    pub fn namespace(&self) -> Option<Scalar<'a>> {
        self.context.namespace.filter(|n| !n.is_empty())
    }

    /// The cluster's server URL (non-empty).
    pub fn server(&self) -> Scalar<'a> {
        self.cluster.server.unwrap_or(Scalar::plain(""))
    }
}

static ANONYMOUS: User<'static> = User {
    token: None,
    token_file: None,
    client_certificate: None,
    client_certificate_data: None,
    client_key: None,
    client_key_data: None,
};

impl<'a> Kubeconfig<'a> {
    /// Parse a kubeconfig (YAML, or JSON when the first non-blank byte is `{`).
    pub fn parse(input: &'a [u8]) -> Result<Self> {
        if input.len() > MAX_INPUT_LEN {
            return Err(Error::Malformed);
        }
        let text = core::str::from_utf8(input).map_err(|_| Error::Malformed)?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut b = Builder::new();
        if text.trim_start_matches([' ', '\t', '\r', '\n']).starts_with('{') {
            b.kc.format = Format::Json;
            read_json(text.as_bytes(), &mut b)?;
        } else {
            yaml::read(text, &mut b)?;
        }
        Ok(b.kc)
    }

    /// The syntax it was written in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// All clusters, in document order.
    pub fn clusters(&self) -> &[Named<'a, Cluster<'a>>] {
        &self.clusters
    }

    /// All users, in document order.
    pub fn users(&self) -> &[Named<'a, User<'a>>] {
        &self.users
    }

    /// All contexts, in document order.
    pub fn contexts(&self) -> &[Named<'a, Context<'a>>] {
        &self.contexts
    }

    /// `current-context`, if set and non-empty.
    pub fn current_context(&self) -> Option<Scalar<'a>> {
        self.current_context.filter(|c| !c.is_empty())
    }

    /// The cluster named `name`.
    pub fn cluster(&self, name: &str) -> Option<&Cluster<'a>> {
        self.clusters.iter().find(|c| c.name.eq_str(name)).map(|c| &c.value)
    }

    /// The user named `name`.
    pub fn user(&self, name: &str) -> Option<&User<'a>> {
        self.users.iter().find(|c| c.name.eq_str(name)).map(|c| &c.value)
    }

    /// The context named `name`.
    pub fn context(&self, name: &str) -> Option<&Context<'a>> {
        self.contexts.iter().find(|c| c.name.eq_str(name)).map(|c| &c.value)
    }

    /// Resolve `current-context`. Errors ([`Error::Malformed`]): no current context, the
    /// context, its cluster or its (named) user missing, or the cluster has no server.
    pub fn resolve(&self) -> Result<Resolved<'_, 'a>> {
        let name = self.current_context().ok_or(Error::Malformed)?;
        self.resolve_scalar(name)
    }

    /// Resolve the context named `name` (like `kubectl --context`).
    pub fn resolve_context(&self, name: &str) -> Result<Resolved<'_, 'a>> {
        let ctx = self.contexts.iter().find(|c| c.name.eq_str(name)).ok_or(Error::Malformed)?;
        self.resolve_scalar(ctx.name)
    }

    fn resolve_scalar(&self, name: Scalar<'a>) -> Result<Resolved<'_, 'a>> {
        let ctx = self.contexts.iter().find(|c| c.name.eq_scalar(&name)).ok_or(Error::Malformed)?;
        let cname = ctx.value.cluster.filter(|c| !c.is_empty()).ok_or(Error::Malformed)?;
        let cluster =
            self.clusters.iter().find(|c| c.name.eq_scalar(&cname)).ok_or(Error::Malformed)?;
        if cluster.value.server.is_none_or(|s| s.is_empty()) {
            return Err(Error::Malformed);
        }
        let (user_name, user) = match ctx.value.user.filter(|u| !u.is_empty()) {
            None => (None, &ANONYMOUS),
            Some(u) => {
                let found =
                    self.users.iter().find(|x| x.name.eq_scalar(&u)).ok_or(Error::Malformed)?;
                (Some(u), &found.value)
            }
        };
        Ok(Resolved {
            context_name: ctx.name,
            context: &ctx.value,
            cluster_name: cluster.name,
            cluster: &cluster.value,
            user_name,
            user,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Schema: shared by the YAML and JSON readers.

/// A value as seen by the schema.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Leaf<'a> {
    /// A string, or a plain YAML scalar (typed by the schema).
    Scalar(Scalar<'a>),
    /// JSON `true`/`false`.
    Bool(bool),
    /// JSON null.
    Null,
    /// A JSON number.
    Number,
    /// A mapping / object (contents already consumed, not type-checked).
    Map,
    /// A sequence / array (contents already consumed, not type-checked).
    Seq,
}

/// The Go type of a kubeconfig field we do not read but must type-check like kubectl does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Str,
    Bool,
    Map,
    Seq,
}

/// Fields of `Config` (top level) and of `Cluster`/`AuthInfo`/`Context` that we ignore, with
/// their Go types (client-go `tools/clientcmd/api/v1/types.go`).
fn ignored_shape(section: Option<Section>, key: &Scalar<'_>) -> Option<Shape> {
    let table: &[(&str, Shape)] = match section {
        None => &[("preferences", Shape::Map), ("extensions", Shape::Seq)],
        Some(Section::Clusters) => &[
            ("proxy-url", Shape::Str),
            ("disable-compression", Shape::Bool),
            ("extensions", Shape::Seq),
        ],
        Some(Section::Users) => &[
            ("username", Shape::Str),
            ("password", Shape::Str),
            ("as", Shape::Str),
            ("as-uid", Shape::Str),
            ("as-groups", Shape::Seq),
            ("as-user-extra", Shape::Map),
            ("auth-provider", Shape::Map),
            ("exec", Shape::Map),
            ("extensions", Shape::Seq),
        ],
        Some(Section::Contexts) => &[("extensions", Shape::Seq)],
    };
    table.iter().find(|(n, _)| key.eq_str(n)).map(|(_, t)| *t)
}

/// Type-check a field we ignore (unknown fields are accepted, as kubectl does).
pub(crate) fn check_ignored(section: Option<Section>, key: &Scalar<'_>, v: Leaf<'_>) -> Result<()> {
    let null = matches!(v, Leaf::Null) || matches!(v, Leaf::Scalar(s) if s.is_null());
    match ignored_shape(section, key) {
        None => Ok(()),
        Some(Shape::Str) => v.string().map(|_| ()),
        Some(Shape::Bool) => v.boolean().map(|_| ()),
        Some(Shape::Map) if null || matches!(v, Leaf::Map) => Ok(()),
        Some(Shape::Seq) if null || matches!(v, Leaf::Seq) => Ok(()),
        Some(_) => Err(Error::Malformed),
    }
}

impl<'a> Leaf<'a> {
    /// Read as an optional string (null → None).
    fn string(self) -> Result<Option<Scalar<'a>>> {
        match self {
            Leaf::Null => Ok(None),
            Leaf::Scalar(s) if s.is_null() => Ok(None),
            Leaf::Scalar(s) if s.style == ScalarStyle::Plain && plain_is_not_string(s.raw) => {
                Err(Error::Malformed)
            }
            Leaf::Scalar(s) => Ok(Some(s)),
            _ => Err(Error::Malformed),
        }
    }

    /// Read as a bool (null → false).
    fn boolean(self) -> Result<bool> {
        match self {
            Leaf::Null => Ok(false),
            Leaf::Bool(b) => Ok(b),
            Leaf::Scalar(s) if s.is_null() => Ok(false),
            Leaf::Scalar(s) if s.style == ScalarStyle::Plain => {
                yaml_bool(s.raw).ok_or(Error::Malformed)
            }
            _ => Err(Error::Malformed),
        }
    }
}

/// Which list a top-level key introduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Section {
    Clusters,
    Users,
    Contexts,
}

impl Section {
    /// The top-level key for a section, or `None`.
    pub(crate) fn from_key(k: &Scalar<'_>) -> Option<Section> {
        if k.eq_str("clusters") {
            Some(Section::Clusters)
        } else if k.eq_str("users") {
            Some(Section::Users)
        } else if k.eq_str("contexts") {
            Some(Section::Contexts)
        } else {
            None
        }
    }

    /// The key of the inner mapping of an item (`cluster`, `user`, `context`).
    pub(crate) fn item_key(self) -> &'static str {
        match self {
            Section::Clusters => "cluster",
            Section::Users => "user",
            Section::Contexts => "context",
        }
    }
}

/// An entry being filled.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Item<'a> {
    name: Option<Scalar<'a>>,
    cluster: Cluster<'a>,
    user: User<'a>,
    context: Context<'a>,
    seen: u32,
}

impl<'a> Item<'a> {
    fn mark(&mut self, bit: u32) -> Result<()> {
        if self.seen & bit != 0 {
            return Err(Error::Malformed);
        }
        self.seen |= bit;
        Ok(())
    }

    /// Set `name`.
    pub(crate) fn set_name(&mut self, v: Leaf<'a>) -> Result<()> {
        self.mark(1 << 31)?;
        self.name = v.string()?;
        Ok(())
    }

    /// Mark the inner mapping key (`cluster:` …) as seen (duplicates are errors).
    pub(crate) fn begin_inner(&mut self) -> Result<()> {
        self.mark(1 << 30)
    }

    /// Set a field of the inner mapping; unknown fields are ignored (the caller has already
    /// consumed the value).
    pub(crate) fn field(&mut self, section: Section, key: &Scalar<'_>, v: Leaf<'a>) -> Result<()> {
        let names: &[&str] = match section {
            Section::Clusters => &[
                "server",
                "certificate-authority",
                "certificate-authority-data",
                "insecure-skip-tls-verify",
                "tls-server-name",
            ],
            Section::Users => &[
                "token",
                "tokenFile",
                "client-certificate",
                "client-certificate-data",
                "client-key",
                "client-key-data",
            ],
            Section::Contexts => &["cluster", "user", "namespace"],
        };
        let Some(i) = names.iter().position(|n| key.eq_str(n)) else {
            return check_ignored(Some(section), key, v);
        };
        self.mark(1 << i)?;
        let c = &mut self.cluster;
        let u = &mut self.user;
        let x = &mut self.context;
        match (section, i) {
            (Section::Clusters, 0) => c.server = v.string()?,
            (Section::Clusters, 1) => c.certificate_authority = v.string()?,
            (Section::Clusters, 2) => c.certificate_authority_data = v.string()?,
            (Section::Clusters, 3) => c.insecure_skip_tls_verify = v.boolean()?,
            (Section::Clusters, _) => c.tls_server_name = v.string()?,
            (Section::Users, 0) => u.token = v.string()?,
            (Section::Users, 1) => u.token_file = v.string()?,
            (Section::Users, 2) => u.client_certificate = v.string()?,
            (Section::Users, 3) => u.client_certificate_data = v.string()?,
            (Section::Users, 4) => u.client_key = v.string()?,
            (Section::Users, _) => u.client_key_data = v.string()?,
            (Section::Contexts, 0) => x.cluster = v.string()?,
            (Section::Contexts, 1) => x.user = v.string()?,
            (Section::Contexts, _) => x.namespace = v.string()?,
        }
        Ok(())
    }
}

/// Collects entries into a [`Kubeconfig`].
pub(crate) struct Builder<'a> {
    kc: Kubeconfig<'a>,
    seen: u8,
}

impl<'a> Builder<'a> {
    fn new() -> Self {
        Builder {
            kc: Kubeconfig {
                format: Format::Yaml,
                clusters: heapless::Vec::new(),
                users: heapless::Vec::new(),
                contexts: heapless::Vec::new(),
                current_context: None,
            },
            seen: 0,
        }
    }

    /// Mark a top-level key as seen; duplicates are errors.
    pub(crate) fn top_key(&mut self, k: &Scalar<'_>) -> Result<()> {
        let keys = [
            "clusters",
            "users",
            "contexts",
            "current-context",
            "apiVersion",
            "kind",
            "preferences",
            "extensions",
        ];
        if let Some(i) = keys.iter().position(|n| k.eq_str(n)) {
            let bit = 1u8 << i;
            if self.seen & bit != 0 {
                return Err(Error::Malformed);
            }
            self.seen |= bit;
        }
        Ok(())
    }

    /// Set `current-context`.
    pub(crate) fn set_current_context(&mut self, v: Leaf<'a>) -> Result<()> {
        self.kc.current_context = v.string()?;
        Ok(())
    }

    /// Check that a string-typed top-level value (`apiVersion`, `kind`) is a string.
    pub(crate) fn check_string(&mut self, v: Leaf<'a>) -> Result<()> {
        v.string().map(|_| ())
    }

    /// Add a finished entry.
    pub(crate) fn push(&mut self, section: Section, it: Item<'a>) -> Result<()> {
        let name = it.name.unwrap_or(Scalar::plain(""));
        let dup = match section {
            Section::Clusters => self.kc.clusters.iter().any(|e| e.name.eq_scalar(&name)),
            Section::Users => self.kc.users.iter().any(|e| e.name.eq_scalar(&name)),
            Section::Contexts => self.kc.contexts.iter().any(|e| e.name.eq_scalar(&name)),
        };
        if dup {
            return Err(Error::Malformed);
        }
        let full = match section {
            Section::Clusters => self.kc.clusters.push(Named { name, value: it.cluster }).is_err(),
            Section::Users => self.kc.users.push(Named { name, value: it.user }).is_err(),
            Section::Contexts => self.kc.contexts.push(Named { name, value: it.context }).is_err(),
        };
        if full { Err(Error::Malformed) } else { Ok(()) }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON

fn json_leaf(v: json::Value<'_>) -> Leaf<'_> {
    match v {
        json::Value::String(s) => Leaf::Scalar(Scalar::new(s.raw(), ScalarStyle::Json)),
        json::Value::Bool(b) => Leaf::Bool(b),
        json::Value::Null => Leaf::Null,
        json::Value::Number(_) => Leaf::Number,
        json::Value::Object(_) => Leaf::Map,
        json::Value::Array(_) => Leaf::Seq,
    }
}

fn json_key(k: json::Str<'_>) -> Scalar<'_> {
    Scalar::new(k.raw(), ScalarStyle::Json)
}

/// The next event, which must be a key (returned) or the end of the object (`None`).
fn json_next_key<'a>(r: &mut json::Reader<'a>) -> Result<Option<Scalar<'a>>> {
    match r.next()? {
        Some(json::Event::Key(k)) => Ok(Some(json_key(k))),
        Some(json::Event::EndObject) => Ok(None),
        _ => Err(Error::Malformed),
    }
}

/// The next event opens a container (`open`: `true`) or is `null` (`false`); anything else is
/// malformed.
fn json_open_or_null(r: &mut json::Reader<'_>, open: json::Event<'_>) -> Result<bool> {
    match r.next()? {
        Some(json::Event::Null) => Ok(false),
        Some(e) if e == open => Ok(true),
        _ => Err(Error::Malformed),
    }
}

fn read_json<'a>(input: &'a [u8], b: &mut Builder<'a>) -> Result<()> {
    // Validate the whole document first (a syntax error anywhere is `Malformed`, before any
    // check of the content), then build in one streaming pass: reading the lazy `json::Value`
    // containers level by level scanned the CA data string five times.
    json::parse(input)?.as_object().ok_or(Error::Malformed)?;
    let mut r = json::Reader::new(input);
    if r.next()? != Some(json::Event::BeginObject) {
        return Err(Error::Malformed);
    }
    while let Some(k) = json_next_key(&mut r)? {
        b.top_key(&k)?;
        if let Some(section) = Section::from_key(&k) {
            if !json_open_or_null(&mut r, json::Event::BeginArray)? {
                continue;
            }
            loop {
                match r.next()? {
                    Some(json::Event::EndArray) => break,
                    Some(json::Event::BeginObject) => {}
                    _ => return Err(Error::Malformed),
                }
                let mut it = Item::default();
                while let Some(ik) = json_next_key(&mut r)? {
                    if ik.eq_str("name") {
                        it.set_name(json_leaf(r.read_value()?))?;
                    } else if ik.eq_str(section.item_key()) {
                        it.begin_inner()?;
                        if !json_open_or_null(&mut r, json::Event::BeginObject)? {
                            continue;
                        }
                        while let Some(fk) = json_next_key(&mut r)? {
                            it.field(section, &fk, json_leaf(r.read_value()?))?;
                        }
                    } else {
                        r.skip_value()?;
                    }
                }
                b.push(section, it)?;
            }
        } else if k.eq_str("current-context") {
            b.set_current_context(json_leaf(r.read_value()?))?;
        } else if k.eq_str("apiVersion") || k.eq_str("kind") {
            b.check_string(json_leaf(r.read_value()?))?;
        } else {
            check_ignored(None, &k, json_leaf(r.read_value()?))?;
        }
    }
    match r.next()? {
        None => Ok(()),
        Some(_) => Err(Error::Malformed),
    }
}

#[cfg(test)]
mod tests;
