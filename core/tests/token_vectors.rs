//! Cross-checks of `kubeboot::token` against independent implementations run at test time:
//! Python's `re` (token / ID / group / Secret-name regexes), Python's `yaml` and kubectl's YAML
//! reader (the Secret manifest), and Go's `time.Parse(time.RFC3339, …)` and `encoding/csv`
//! (expiration and `--token-auth-file` lines). A missing tool skips its test with a note.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kubeboot::Error;
use kubeboot::rfc3339;
use kubeboot::token::{
    AuthFileLine, BootstrapToken, SecretSpec, TokenId, Usage, Usages, parse_secret_name,
    validate_group, write_secret_manifest,
};

const PYTHON: &str = "/usr/bin/python3";

/// SplitMix64: deterministic inputs, no extra dependencies.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir =
        std::env::temp_dir().join(format!("kubeboot-token-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

/// Runs `cmd args` with `stdin`, returning stdout, or `None` when the tool is missing.
fn run(cmd: &str, args: &[&str], stdin: &[u8], dir: Option<&Path>) -> Option<String> {
    let mut c = Command::new(cmd);
    c.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(d) = dir {
        c.current_dir(d);
    }
    let mut child = match c.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("note: skipping, cannot run {cmd}: {e}");
            return None;
        }
    };
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

// ---------------------------------------------------------------------------------------------
// Regexes vs Python `re`

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    const INTERESTING: &[u8] = b"aZz09A.-:_ \n\r\t*\x00\x7f\xc3\xa9\xff,";
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = *rng.pick(INTERESTING);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, *rng.pick(INTERESTING));
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.remove(i);
            }
            3 => v.push(b'\n'),
            4 => v.truncate(rng.below(v.len() + 1)),
            _ => {
                let i = rng.below(v.len() + 1);
                v.insert(i, b'a' + rng.below(26) as u8);
            }
        }
    }
    v
}

#[test]
fn python_regexes_agree_with_parsers() {
    let mut rng = Rng(0x0070_c311);
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for i in 0..4000 {
        let token = BootstrapToken::from_entropy(&rng.bytes(40)).unwrap();
        let wire = token.to_wire().as_bytes().to_vec();
        let group = format!(
            "system:bootstrappers:{}",
            (0..1 + rng.below(if i % 50 == 0 { 300 } else { 20 }))
                .map(|_| *rng.pick(&['a', 'z', '0', '9', ':', '-']))
                .collect::<String>()
        );
        let name = format!("bootstrap-token-{}", token.id());
        match i % 8 {
            0 => inputs.push(wire.clone()),
            1 => inputs.push(wire[..6].to_vec()),
            2 => inputs.push(group.clone().into_bytes()),
            3 => inputs.push(name.into_bytes()),
            4 => inputs.push(mutate(&mut rng, &wire)),
            5 => inputs.push(mutate(&mut rng, group.as_bytes())),
            6 => inputs.push(mutate(&mut rng, &wire[..6])),
            _ => {
                let n = rng.below(30);
                inputs.push((0..n).map(|_| 0x20 + rng.below(0x60) as u8).collect());
            }
        }
    }
    // Lengths around the group limit.
    for n in [254usize, 255, 256, 257] {
        inputs.push(format!("system:bootstrappers:{}", "x".repeat(n)).into_bytes());
    }

    let script = r#"
import re, sys
pats = [rb'[a-z0-9]{6}\.[a-z0-9]{16}', rb'[a-z0-9]{6}', rb'system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]', rb'bootstrap-token-[a-z0-9]{6}']
for line in sys.stdin:
    b = bytes.fromhex(line.strip())
    print(''.join('1' if re.fullmatch(p, b) else '0' for p in pats))
"#;
    let stdin: String = inputs.iter().map(|b| hex(b) + "\n").collect();
    let Some(out) = run(PYTHON, &["-c", script], stdin.as_bytes(), None) else { return };
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), inputs.len());
    let mut matched = [0usize; 4];
    for (b, expect) in inputs.iter().zip(lines) {
        let s = std::str::from_utf8(b).ok();
        let ours = [
            BootstrapToken::parse_bytes(b).is_ok(),
            TokenId::from_bytes(b).is_ok(),
            s.is_some_and(|s| validate_group(s).is_ok()),
            s.is_some_and(|s| parse_secret_name(s).is_ok()),
        ];
        for (k, (&o, e)) in ours.iter().zip(expect.bytes()).enumerate() {
            assert_eq!(o, e == b'1', "regex {k} disagrees on {:?}", String::from_utf8_lossy(b));
            matched[k] += usize::from(o);
        }
    }
    // The corpus exercises both outcomes of every regex.
    for (k, m) in matched.iter().enumerate() {
        assert!(*m > 100 && *m < inputs.len() - 100, "regex {k}: {m} matches");
    }
}

// ---------------------------------------------------------------------------------------------
// Secret manifest vs YAML readers

struct Case {
    wire: &'static str,
    description: Option<&'static str>,
    expiration: Option<i64>,
    usages: Usages,
    groups: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let descriptions: [Option<&'static str>; 12] = [
        None,
        Some("The default bootstrap token generated by 'kubeadm init'."),
        Some(""),
        Some("null"),
        Some("true"),
        Some("- item: # not a comment"),
        Some("  leading and trailing  "),
        Some("quote \" backslash \\ tab\t newline\n cr\r nul\0 bell\x07 del\x7f"),
        Some("nel\u{85} ls\u{2028} ps\u{2029} bom\u{feff} nbsp\u{a0} é ü 日本 🎉"),
        Some("{json: [1, 2]} & *alias !tag %directive @reserved `tick`"),
        Some("'single' \"double\" \\x41 \\u0041"),
        Some("multi\n\nline\n  indented\n"),
    ];
    let wires = ["123456.0123456789abcdef", "12e456.000000000000000e", "abcdef.0123456789abcdef"];
    descriptions
        .iter()
        .enumerate()
        .map(|(i, d)| Case {
            wire: wires[i % wires.len()],
            description: *d,
            expiration: [None, Some(1_767_323_045), Some(0), Some(253_402_300_799)][i % 4],
            usages: [
                Usages::KUBEADM_DEFAULT,
                Usages::NONE.with(Usage::Authentication),
                Usages::NONE,
                Usages::NONE.with(Usage::Signing),
            ][i % 4],
            groups: [
                &["system:bootstrappers:kubeadm:default-node-token"][..],
                &[],
                &["system:bootstrappers:a", "system:bootstrappers:b:c-1"],
            ][i % 3],
        })
        .collect()
}

/// Expected `stringData`, as `key=hex(value)` lines, and the manifest text.
fn render(case: &Case) -> (String, Vec<u8>) {
    let token = BootstrapToken::parse(case.wire).unwrap();
    let spec = SecretSpec {
        token: &token,
        description: case.description,
        expiration: case.expiration,
        usages: case.usages,
        extra_groups: case.groups,
    };
    let mut buf = vec![0u8; 4096];
    let n = write_secret_manifest(&spec, &mut buf).unwrap();
    buf.truncate(n);
    let mut expect = vec![
        ("token-id".to_string(), token.id().to_string()),
        ("token-secret".to_string(), token.expose_secret().to_string()),
    ];
    if let Some(d) = case.description {
        expect.push(("description".into(), d.into()));
    }
    if let Some(e) = case.expiration {
        expect.push(("expiration".into(), rfc3339::format(e).unwrap().to_string()));
    }
    for u in case.usages.iter() {
        expect.push((format!("usage-bootstrap-{}", u.as_str()), "true".into()));
    }
    if !case.groups.is_empty() {
        expect.push(("auth-extra-groups".into(), case.groups.join(",")));
    }
    let mut lines = format!("name={}\n", hex(token.secret_name().as_bytes()));
    for (k, v) in expect {
        lines += &format!("data.{k}={}\n", hex(v.as_bytes()));
    }
    (lines, buf)
}

const CHECK_SECRET: &str = r#"
import sys, json
mode, doc_path, expect_path = sys.argv[1:4]
text = open(doc_path, encoding='utf-8').read()
if mode == 'yaml':
    import yaml
    obj = yaml.safe_load(text)
else:
    obj = json.loads(text)
expect = {}
name = None
for line in open(expect_path):
    k, v = line.rstrip('\n').split('=', 1)
    v = bytes.fromhex(v).decode('utf-8')
    if k == 'name':
        name = v
    else:
        expect[k[5:]] = v
problems = []
def check(what, got, want):
    if got != want or type(got) is not type(want):
        problems.append('%s: got %r want %r' % (what, got, want))
check('apiVersion', obj.get('apiVersion'), 'v1')
check('kind', obj.get('kind'), 'Secret')
check('type', obj.get('type'), 'bootstrap.kubernetes.io/token')
check('name', obj['metadata'].get('name'), name)
check('namespace', obj['metadata'].get('namespace'), 'kube-system')
check('stringData', obj.get('stringData'), expect)
for k, v in (obj.get('stringData') or {}).items():
    check('type of ' + k, type(v).__name__, 'str')
print('OK' if not problems else '\n'.join(problems))
"#;

#[test]
fn python_yaml_reads_secret_manifest() {
    let have_yaml = run(PYTHON, &["-c", "import yaml"], b"", None).is_some()
        && Command::new(PYTHON).args(["-c", "import yaml"]).status().is_ok_and(|s| s.success());
    if !have_yaml {
        eprintln!("note: skipping, python3 has no yaml module");
        return;
    }
    let dir = temp_dir("yaml");
    for (i, case) in cases().iter().enumerate() {
        let (expect, doc) = render(case);
        let doc_path = dir.join(format!("secret-{i}.yaml"));
        let expect_path = dir.join(format!("expect-{i}.txt"));
        std::fs::write(&doc_path, &doc).unwrap();
        std::fs::write(&expect_path, expect).unwrap();
        let out = run(
            PYTHON,
            &[
                "-c",
                CHECK_SECRET,
                "yaml",
                doc_path.to_str().unwrap(),
                expect_path.to_str().unwrap(),
            ],
            b"",
            None,
        )
        .unwrap();
        assert_eq!(out.trim(), "OK", "case {i}:\n{}", String::from_utf8_lossy(&doc));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_reads_secret_manifest() {
    // `kubectl create --dry-run=client` needs API discovery from a server; `annotate --local`
    // decodes the file with the same YAML reader and prints it without one.
    if Command::new("kubectl").arg("version").arg("--client").output().is_err() {
        eprintln!("note: skipping, kubectl not found");
        return;
    }
    let dir = temp_dir("kubectl");
    for (i, case) in cases().iter().enumerate() {
        let (expect, doc) = render(case);
        let doc_path = dir.join(format!("secret-{i}.yaml"));
        let json_path = dir.join(format!("secret-{i}.json"));
        let expect_path = dir.join(format!("expect-{i}.txt"));
        std::fs::write(&doc_path, &doc).unwrap();
        std::fs::write(&expect_path, expect).unwrap();
        let json = run(
            "kubectl",
            &[
                "annotate",
                "--local",
                "-o",
                "json",
                "-f",
                doc_path.to_str().unwrap(),
                "kubeboot-probe=1",
            ],
            b"",
            None,
        )
        .unwrap();
        std::fs::write(&json_path, &json).unwrap();
        let out = run(
            PYTHON,
            &[
                "-c",
                CHECK_SECRET,
                "json",
                json_path.to_str().unwrap(),
                expect_path.to_str().unwrap(),
            ],
            b"",
            None,
        )
        .unwrap();
        assert_eq!(out.trim(), "OK", "case {i}:\n{}", String::from_utf8_lossy(&doc));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Go: time.Parse(time.RFC3339) and encoding/csv

const GO_PROG: &str = r#"package main

import (
	"bufio"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b, err := hex.DecodeString(sc.Text())
		if err != nil {
			panic(err)
		}
		switch os.Args[1] {
		case "time":
			t, err := time.Parse(time.RFC3339, string(b))
			if err != nil {
				fmt.Println("ERR")
			} else {
				fmt.Println(t.Unix(), t.Nanosecond())
			}
		case "csv":
			r := csv.NewReader(strings.NewReader(string(b)))
			r.FieldsPerRecord = -1
			recs, err := r.ReadAll()
			if err != nil || len(recs) != 1 {
				fmt.Println("ERR")
				continue
			}
			out := []string{}
			for _, f := range recs[0] {
				out = append(out, hex.EncodeToString([]byte(f)))
			}
			fmt.Println("OK " + strings.Join(out, " "))
		}
	}
}
"#;

fn go(mode: &str, inputs: &[Vec<u8>]) -> Option<Vec<String>> {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("note: skipping, go not found");
        return None;
    }
    let dir = temp_dir(&format!("go-{mode}"));
    std::fs::write(dir.join("main.go"), GO_PROG).unwrap();
    let stdin: String = inputs.iter().map(|b| hex(b) + "\n").collect();
    let out = run("go", &["run", "main.go", mode], stdin.as_bytes(), Some(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<String> = out?.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), inputs.len());
    Some(lines)
}

fn time_inputs() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x3339);
    let mut v: Vec<Vec<u8>> = [
        "2026-01-02T03:04:05Z",
        "2026-01-02T3:04:05Z",
        "2026-01-02T03:04:05,5Z",
        "2026-01-02T03:04:05.Z",
        "2026-01-02t03:04:05Z",
        "2026-01-02T03:04:05z",
        "2024-02-29T00:00:00Z",
        "2100-02-29T00:00:00Z",
        "2000-02-29T23:59:59.999999999999-24:00",
        "0000-01-01T00:00:00+24:60",
        "9999-12-31T23:59:59-24:60",
        "2026-01-02T03:04:05+25:00",
        "2026-01-02T03:04:05+00:61",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    for _ in 0..3000 {
        let unix = rfc3339::MIN_FORMATTABLE
            + (rng.next() % (rfc3339::MAX_FORMATTABLE - rfc3339::MIN_FORMATTABLE) as u64) as i64;
        let dt = rfc3339::DateTime::from_unix(unix);
        let hour =
            if rng.below(4) == 0 { format!("{}", dt.hour) } else { format!("{:02}", dt.hour) };
        let frac = match rng.below(5) {
            0 => format!(
                ".{}",
                (0..1 + rng.below(12))
                    .map(|_| (b'0' + rng.below(10) as u8) as char)
                    .collect::<String>()
            ),
            1 => format!(",{}", rng.below(1000)),
            _ => String::new(),
        };
        let zone = match rng.below(3) {
            0 => "Z".to_string(),
            _ => format!("{}{:02}:{:02}", rng.pick(&['+', '-']), rng.below(27), rng.below(63)),
        };
        let day = if rng.below(10) == 0 { 28 + rng.below(4) as u8 } else { dt.day };
        let month = if rng.below(20) == 0 { rng.below(14) as u8 } else { dt.month };
        let s = format!(
            "{:04}-{:02}-{:02}T{}:{:02}:{:02}{}{}",
            dt.year, month, day, hour, dt.minute, dt.second, frac, zone
        );
        let b = s.into_bytes();
        v.push(if rng.below(4) == 0 { mutate(&mut rng, &b) } else { b });
    }
    v
}

#[test]
fn go_time_parse_agrees() {
    let inputs = time_inputs();
    let Some(lines) = go("time", &inputs) else { return };
    let mut ok = 0;
    for (b, expect) in inputs.iter().zip(&lines) {
        let ours = match rfc3339::parse_timestamp(b) {
            Ok(t) => format!("{} {}", t.unix, t.nanos),
            Err(e) => {
                assert_eq!(e, Error::InvalidExpiration);
                "ERR".to_string()
            }
        };
        assert_eq!(&ours, expect, "input {:?}", String::from_utf8_lossy(b));
        ok += usize::from(ours != "ERR");
    }
    assert!(ok > 500 && ok < inputs.len() - 500, "{ok} accepted");
}

#[test]
fn go_csv_agrees_with_auth_file_parser() {
    let mut rng = Rng(0xc5f);
    let mut inputs: Vec<Vec<u8>> = [
        "02b50b05283e98dd0fd71db496ef01e8,kubelet-bootstrap,10001,\"system:bootstrappers,system:foo\"\n",
        "a,b,c\r\n",
        "a,b,c\r",
        "\"a\"\"b\",\"\",\"x,y\",\"q\"\"1,q2\",extra",
        "a,\"b\"c,d",
        "a,b\"c,d",
        "\"a\rb\",c,d",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    const ALPHA: &[u8] = b"ab,,,\"\" \r";
    for _ in 0..4000 {
        let n = rng.below(14);
        let mut b: Vec<u8> = (0..n).map(|_| *rng.pick(ALPHA)).collect();
        match rng.below(3) {
            0 => b.push(b'\n'),
            1 => b.extend_from_slice(b"\r\n"),
            _ => {}
        }
        inputs.push(b);
    }
    let Some(lines) = go("csv", &inputs) else { return };
    let mut ok = 0;
    for (b, expect) in inputs.iter().zip(&lines) {
        let s = std::str::from_utf8(b).unwrap();
        let ours = match AuthFileLine::parse(s) {
            Ok(l) => {
                let mut cols: Vec<Vec<u8>> = vec![
                    l.token().bytes().collect(),
                    l.user().bytes().collect(),
                    l.uid().bytes().collect(),
                ];
                if let Some(g) = l.group_column() {
                    cols.push(g.bytes().collect());
                }
                Some((l.columns(), cols))
            }
            Err(e) => {
                assert_eq!(e, Error::InvalidAuthFileLine);
                None
            }
        };
        let theirs = expect.strip_prefix("OK").map(|rest| {
            let cols: Vec<Vec<u8>> = rest.split(' ').skip(1).map(unhex).collect();
            (cols.len(), cols.into_iter().take(4).collect::<Vec<_>>())
        });
        let theirs = theirs.filter(|(n, _)| *n >= 3);
        assert_eq!(ours, theirs, "input {s:?}");
        ok += usize::from(ours.is_some());
    }
    assert!(ok > 200, "{ok} accepted");
}
