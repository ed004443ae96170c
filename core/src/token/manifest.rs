//! The token Secret as a YAML manifest (`kubectl apply -f`), in the shape kubeadm creates and
//! the Kubernetes docs show: `stringData` with the token's keys.

use super::{
    BootstrapToken, KEY_AUTH_EXTRA_GROUPS, KEY_DESCRIPTION, KEY_EXPIRATION, KEY_TOKEN_ID,
    KEY_TOKEN_SECRET, SECRET_NAMESPACE, SECRET_TYPE, Sink, Usages, rfc3339, validate_group,
};
use crate::Result;

/// What goes into a token Secret.
#[derive(Clone, Copy, Debug)]
pub struct SecretSpec<'a> {
    /// The token.
    pub token: &'a BootstrapToken,
    /// Free-text `description` (any text; written as an escaped YAML double-quoted string).
    pub description: Option<&'a str>,
    /// `expiration`, unix seconds, written as `YYYY-MM-DDTHH:MM:SSZ`.
    pub expiration: Option<i64>,
    /// One `usage-bootstrap-<usage>: "true"` per usage.
    pub usages: Usages,
    /// `auth-extra-groups` entries (each must pass [`super::validate_group`]), joined with `,`;
    /// omitted when empty.
    pub extra_groups: &'a [&'a str],
}

impl<'a> SecretSpec<'a> {
    /// A spec with kubeadm's defaults: usages `signing,authentication`, group
    /// `system:bootstrappers:kubeadm:default-node-token`, expiration `now + 24h`, no
    /// description.
    pub const fn kubeadm_default(token: &'a BootstrapToken, now: i64) -> Self {
        SecretSpec {
            token,
            description: None,
            expiration: Some(now.saturating_add(super::KUBEADM_DEFAULT_TTL_SECS)),
            usages: Usages::KUBEADM_DEFAULT,
            extra_groups: &[super::KUBEADM_DEFAULT_GROUP],
        }
    }
}

/// Writes the token Secret manifest into `buf`, returning the length:
///
/// ```yaml
/// apiVersion: v1
/// kind: Secret
/// metadata:
///   name: bootstrap-token-abcdef
///   namespace: kube-system
/// type: bootstrap.kubernetes.io/token
/// stringData:
///   token-id: "abcdef"
///   token-secret: "0123456789abcdef"
///   description: "..."
///   expiration: "2026-01-03T03:04:05Z"
///   usage-bootstrap-authentication: "true"
///   usage-bootstrap-signing: "true"
///   auth-extra-groups: "system:bootstrappers:kubeadm:default-node-token"
/// ```
///
/// Every `stringData` value is double-quoted, so IDs such as `123456` or `12e456` stay strings.
/// Errors: [`crate::Error::InvalidGroup`], [`crate::Error::InvalidExpiration`] (year outside
/// 0000–9999), [`crate::Error::BufferTooSmall`]. The output holds the token secret; on any error
/// the whole buffer is wiped.
pub fn write_secret_manifest(spec: &SecretSpec<'_>, buf: &mut [u8]) -> Result<usize> {
    // Validate everything before writing a byte.
    for g in spec.extra_groups {
        validate_group(g)?;
    }
    let expiration = spec.expiration.map(rfc3339::format).transpose()?;

    let mut out = Sink::new(buf);
    out.put_str("apiVersion: v1\nkind: Secret\nmetadata:\n  name: ");
    out.put_str(spec.token.secret_name().as_str());
    out.put_str("\n  namespace: ");
    out.put_str(SECRET_NAMESPACE);
    out.put_str("\ntype: ");
    out.put_str(SECRET_TYPE);
    out.put_str("\nstringData:\n");
    entry(&mut out, KEY_TOKEN_ID, spec.token.id());
    entry(&mut out, KEY_TOKEN_SECRET, spec.token.expose_secret());
    if let Some(d) = spec.description {
        entry(&mut out, KEY_DESCRIPTION, d);
    }
    if let Some(e) = &expiration {
        entry(&mut out, KEY_EXPIRATION, e.as_str());
    }
    for u in spec.usages.iter() {
        entry(&mut out, u.data_key(), "true");
    }
    if !spec.extra_groups.is_empty() {
        out.put_str("  ");
        out.put_str(KEY_AUTH_EXTRA_GROUPS);
        out.put_str(": \"");
        for (i, g) in spec.extra_groups.iter().enumerate() {
            if i > 0 {
                out.put(b",");
            }
            out.put_str(g); // validated: [a-z0-9:-] only, nothing to escape
        }
        out.put(b"\"\n");
    }
    out.finish()
}

fn entry(out: &mut Sink<'_>, key: &str, value: &str) {
    out.put_str("  ");
    out.put_str(key);
    out.put_str(": ");
    yaml_double_quoted(out, value);
    out.put(b"\n");
}

/// Writes `s` as a YAML double-quoted scalar that every YAML 1.1/1.2 reader (go-yaml as used
/// by kubectl, PyYAML) reads back as exactly `s`: `"` and `\` escaped, C0/C1 controls, DEL,
/// NEL, the Unicode line/paragraph separators, the BOM and the non-characters U+FFFE/U+FFFF
/// escaped, everything else verbatim UTF-8.
pub(crate) fn yaml_double_quoted(out: &mut Sink<'_>, s: &str) {
    out.put(b"\"");
    for c in s.chars() {
        let cp = u32::from(c);
        match c {
            '"' => out.put(b"\\\""),
            '\\' => out.put(b"\\\\"),
            '\n' => out.put(b"\\n"),
            '\t' => out.put(b"\\t"),
            '\r' => out.put(b"\\r"),
            '\0' => out.put(b"\\0"),
            _ if cp < 0x20 || (0x7f..=0x9f).contains(&cp) => {
                out.put(b"\\x");
                out.put(&hex2(cp as u8));
            }
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}' => {
                out.put(b"\\u");
                out.put(&hex2((cp >> 8) as u8));
                out.put(&hex2(cp as u8));
            }
            _ => {
                let mut tmp = [0u8; 4];
                out.put(c.encode_utf8(&mut tmp).as_bytes());
            }
        }
    }
    out.put(b"\"");
}

fn hex2(b: u8) -> [u8; 2] {
    let digit = |n: u8| if n < 10 { b'0' + n } else { b'a' + (n - 10) };
    [digit(b >> 4), digit(b & 15)]
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::Error;
    use crate::token::Usage;
    use std::str;

    #[test]
    fn kubeadm_default_layout() {
        let t = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let spec = SecretSpec::kubeadm_default(&t, 1_767_323_045);
        let mut buf = [0u8; 1024];
        let n = write_secret_manifest(&spec, &mut buf).unwrap();
        let expect = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bootstrap-token-abcdef\n  namespace: kube-system\ntype: bootstrap.kubernetes.io/token\nstringData:\n  token-id: \"abcdef\"\n  token-secret: \"0123456789abcdef\"\n  expiration: \"2026-01-03T03:04:05Z\"\n  usage-bootstrap-authentication: \"true\"\n  usage-bootstrap-signing: \"true\"\n  auth-extra-groups: \"system:bootstrappers:kubeadm:default-node-token\"\n";
        assert_eq!(str::from_utf8(&buf[..n]).unwrap(), expect);
        // Every shorter buffer fails with the exact size and leaves nothing behind.
        for len in [0, 1, n / 2, n - 1] {
            let mut small = std::vec![0x55u8; len];
            assert_eq!(
                write_secret_manifest(&spec, &mut small),
                Err(Error::BufferTooSmall { needed: n })
            );
            assert!(small.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn minimal_and_description() {
        let t = BootstrapToken::parse("123456.0123456789abcdef").unwrap();
        let spec = SecretSpec {
            token: &t,
            description: Some("a \"b\" \\ c\nd\te\u{7f}\u{85}\u{2028}é\u{1}"),
            expiration: None,
            usages: Usages::NONE.with(Usage::Authentication),
            extra_groups: &[],
        };
        let mut buf = [0u8; 1024];
        let n = write_secret_manifest(&spec, &mut buf).unwrap();
        let text = str::from_utf8(&buf[..n]).unwrap();
        assert!(
            text.contains("  description: \"a \\\"b\\\" \\\\ c\\nd\\te\\x7f\\x85\\u2028é\\x01\"\n")
        );
        assert!(text.contains("  token-id: \"123456\"\n"));
        assert!(!text.contains("signing"));
        assert!(!text.contains("expiration"));
        assert!(!text.contains("auth-extra-groups"));
    }

    #[test]
    fn validation_first() {
        let t = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let mut buf = [0x55u8; 1024];
        let spec = SecretSpec {
            extra_groups: &["system:bootstrappers:ok", "bad"],
            ..SecretSpec::kubeadm_default(&t, 0)
        };
        assert_eq!(write_secret_manifest(&spec, &mut buf), Err(Error::InvalidGroup));
        let spec = SecretSpec { expiration: Some(i64::MAX), ..SecretSpec::kubeadm_default(&t, 0) };
        assert_eq!(write_secret_manifest(&spec, &mut buf), Err(Error::InvalidExpiration));
        assert!(buf.iter().all(|&b| b == 0x55));
    }
}
