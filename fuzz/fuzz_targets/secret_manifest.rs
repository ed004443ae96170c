//! Structure-aware: arbitrary `SecretSpec` → `write_secret_manifest` never panics; when it
//! succeeds the output is UTF-8, has exactly the expected lines (no injection through the
//! description), and every double-quoted value decodes (YAML escapes) back to its input.
#![no_main]

use arbitrary::Arbitrary;
use kubeboot::Error;
use kubeboot::token::{self, BootstrapToken, SecretSpec, Usage, Usages, write_secret_manifest};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Group<'a> {
    /// A valid name: `system:bootstrappers:` + mapped bytes + `x`.
    Valid(&'a [u8]),
    Raw(&'a str),
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    token: [u8; 22],
    description: Option<&'a str>,
    expiration: Option<i64>,
    /// Pull the expiration into the formattable range most of the time.
    clamp_expiration: bool,
    usages: u8,
    groups: Vec<Group<'a>>,
    buf_len: u16,
}

fn group_name(raw: &[u8]) -> String {
    const OK: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789:-";
    let mut s = String::from("system:bootstrappers:");
    for &b in raw.iter().take(300) {
        s.push(OK[usize::from(b) % OK.len()] as char);
    }
    s.push('x');
    s
}

/// Decodes a YAML double-quoted scalar written by the manifest writer (`"..."`, escapes
/// `\" \\ \n \t \r \0 \xHH \uHHHH`). Panics on anything else: the writer must not emit it.
fn unquote(v: &str) -> String {
    let inner = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).expect("quoted value");
    let mut out = String::new();
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        match c {
            '"' => panic!("unescaped quote in {v:?}"),
            '\\' => {
                let e = it.next().expect("dangling backslash");
                let hex = |n: usize, it: &mut std::str::Chars<'_>| {
                    let h: String = it.by_ref().take(n).collect();
                    u32::from_str_radix(&h, 16).expect("hex escape")
                };
                out.push(match e {
                    '"' => '"',
                    '\\' => '\\',
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    'x' => char::from_u32(hex(2, &mut it)).unwrap(),
                    'u' => char::from_u32(hex(4, &mut it)).expect("valid \\u escape"),
                    other => panic!("unknown escape \\{other}"),
                });
            }
            c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => {
                panic!("raw control character {c:?} in {v:?}")
            }
            '\u{2028}' | '\u{2029}' | '\u{feff}' => panic!("raw {c:?} in {v:?}"),
            c => out.push(c),
        }
    }
    out
}

fuzz_target!(|input: Input<'_>| {
    let mut entropy = [0u8; 22];
    for (o, b) in entropy.iter_mut().zip(input.token) {
        *o = b % 252;
    }
    let t = BootstrapToken::from_entropy(&entropy).expect("22 accepted bytes");
    let expiration = input.expiration.map(|e| {
        if input.clamp_expiration {
            let span = token::rfc3339::MAX_FORMATTABLE - token::rfc3339::MIN_FORMATTABLE + 1;
            token::rfc3339::MIN_FORMATTABLE + e.rem_euclid(span)
        } else {
            e
        }
    });
    let mut usages = Usages::NONE;
    if input.usages & 1 != 0 {
        usages = usages.with(Usage::Authentication);
    }
    if input.usages & 2 != 0 {
        usages = usages.with(Usage::Signing);
    }
    let group_strings: Vec<String> = input
        .groups
        .iter()
        .map(|g| match g {
            Group::Valid(b) => group_name(b),
            Group::Raw(s) => (*s).to_owned(),
        })
        .collect();
    let groups: Vec<&str> = group_strings.iter().map(String::as_str).collect();
    let spec = SecretSpec {
        token: &t,
        description: input.description,
        expiration,
        usages,
        extra_groups: &groups,
    };
    let _ = format!("{spec:?}");

    let groups_ok = groups.iter().all(|g| token::validate_group(g).is_ok());
    let exp_ok = expiration.is_none_or(|e| token::rfc3339::format(e).is_ok());

    let mut buf = vec![0x55u8; usize::from(input.buf_len)];
    let n = match write_secret_manifest(&spec, &mut buf) {
        Ok(n) => n,
        Err(Error::BufferTooSmall { needed }) => {
            assert!(groups_ok && exp_ok);
            assert!(needed > buf.len());
            assert!(buf.iter().all(|&b| b == 0), "buffer not wiped");
            buf = vec![0u8; needed];
            let n = write_secret_manifest(&spec, &mut buf).expect("needed suffices");
            assert_eq!(n, needed, "needed is exact");
            n
        }
        Err(Error::InvalidGroup) => {
            assert!(!groups_ok);
            return;
        }
        Err(Error::InvalidExpiration) => {
            assert!(groups_ok && !exp_ok);
            return;
        }
        Err(e) => panic!("undocumented error {e:?}"),
    };
    assert!(groups_ok && exp_ok);
    let text = std::str::from_utf8(&buf[..n]).expect("manifest is UTF-8");
    assert!(text.ends_with('\n'));

    let mut expect: Vec<(String, String)> =
        vec![("token-id".into(), t.id().into()), ("token-secret".into(), t.expose_secret().into())];
    if let Some(d) = input.description {
        expect.push(("description".into(), d.into()));
    }
    if let Some(e) = expiration {
        expect.push(("expiration".into(), token::rfc3339::format(e).unwrap().as_str().into()));
    }
    for u in usages.iter() {
        expect.push((u.data_key().into(), "true".into()));
    }
    if !groups.is_empty() {
        expect.push(("auth-extra-groups".into(), groups.join(",")));
    }

    let lines: Vec<&str> = text.lines().collect();
    let header = [
        "apiVersion: v1".to_owned(),
        "kind: Secret".to_owned(),
        "metadata:".to_owned(),
        format!("  name: bootstrap-token-{}", t.id()),
        "  namespace: kube-system".to_owned(),
        "type: bootstrap.kubernetes.io/token".to_owned(),
        "stringData:".to_owned(),
    ];
    assert_eq!(lines.len(), header.len() + expect.len(), "{text}");
    for (l, h) in lines.iter().zip(&header) {
        assert_eq!(l, h);
    }
    for (l, (k, v)) in lines[header.len()..].iter().zip(&expect) {
        let (key, value) = l.strip_prefix("  ").and_then(|l| l.split_once(": ")).expect("entry");
        assert_eq!(key, k);
        assert_eq!(&unquote(value), v, "line {l:?}");
    }
});
