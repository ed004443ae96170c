//! `kubeboot run --config FILE`: the service's settings in a file an operator edits
//! (`examples/systemd/kubeboot.conf`, installed as `/etc/kubeboot/kubeboot.conf`) instead of the
//! unit. A setting is one of `run`'s long options, so every rule is the option parser's: a line
//! `NAME = VALUE` is the argument `--NAME=VALUE`, a line `NAME` is `--NAME`; blank lines and lines
//! starting with `#` are skipped. The value is the rest of the line without the blanks around it
//! (no quoting). This file turns lines into arguments; the values the core's grammar judges
//! (durations, `key`, `ip`, `metrics-bind-address`: [`kubeboot::grammar`]) are judged here by it,
//! so a refused one is the grammar's line with the file and line in front; the rest is clap's and
//! the agent's, with the same words as on the command line and the file and line.
//!
//! std only (the fuzz target `cli_config` includes this file).

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The largest configuration file read (a few hundred bytes is usual).
pub const MAX_LEN: u64 = 64 * 1024;

/// One setting: `NAME [= VALUE]` on line `line` (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting<'a> {
    /// Its line number, from 1.
    pub line: usize,
    /// The long option without its dashes.
    pub name: &'a str,
    /// The value, if the line has `=`.
    pub value: Option<&'a str>,
}

impl Setting<'_> {
    /// The command-line argument it stands for.
    pub fn arg(&self) -> OsString {
        match self.value {
            Some(v) => format!("--{}={v}", self.name).into(),
            None => format!("--{}", self.name).into(),
        }
    }
}

/// Why a configuration file is refused: one line, with the file and the line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The line, if one is to blame.
    pub line: Option<usize>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(n) => write!(f, "{}:{n}: {}", self.file.display(), self.reason),
            None => write!(f, "{}: {}", self.file.display(), self.reason),
        }
    }
}

/// The settings of a configuration file's text: `Err((line, reason))` for the first line that is
/// neither blank, a comment nor `NAME [= VALUE]` with NAME a long option's spelling
/// (`[a-z0-9][a-z0-9-]*`, no dashes in front), or that names `config` itself.
pub fn parse(text: &str) -> Result<Vec<Setting<'_>>, (usize, &'static str)> {
    let mut settings = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((n, v)) => (n.trim_end(), Some(v.trim_start())),
            None => (line, None),
        };
        if name.starts_with('-') {
            return Err((i + 1, "a setting is an option's name without its dashes"));
        }
        let spelled = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
        if name.is_empty() || !name.bytes().all(spelled) {
            return Err((
                i + 1,
                "expected NAME = VALUE (NAME in lower case, letters, digits and -)",
            ));
        }
        if value == Some("") {
            return Err((i + 1, "no value after `=`"));
        }
        if name == "config" {
            return Err((i + 1, "a configuration file cannot name another"));
        }
        settings.push(Setting { line: i + 1, name, value });
    }
    Ok(settings)
}

/// Read and parse `file`; its settings as arguments, each with its line.
pub fn read(file: &Path) -> Result<Vec<(usize, OsString)>, ConfigError> {
    let refuse = |line, reason: String| ConfigError { file: file.to_owned(), line, reason };
    let bytes = std::fs::File::open(file)
        .and_then(|f| {
            use std::io::Read;
            let mut bytes = Vec::new();
            f.take(MAX_LEN + 1).read_to_end(&mut bytes).map(|_| bytes)
        })
        .map_err(|e| refuse(None, format!("cannot read the configuration file: {e}")))?;
    if bytes.len() as u64 > MAX_LEN {
        return Err(refuse(None, format!("larger than {MAX_LEN} bytes")));
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        refuse(Some(line), "not UTF-8".into())
    })?;
    let settings = parse(text).map_err(|(line, reason)| refuse(Some(line), reason.into()))?;
    for s in &settings {
        judge(s).map_err(|reason| refuse(Some(s.line), reason))?;
    }
    Ok(settings.iter().map(|s| (s.line, s.arg())).collect())
}

/// A setting's value judged by the core's grammar, when the grammar has a rule for its option
/// (the table of [`kubeboot::grammar`]): `Err` is the grammar's one line for the refusal,
/// `--wait "5x": invalid-duration: ...`. Other settings, and a grammar option without a value,
/// are left to the option parser.
pub fn judge(s: &Setting<'_>) -> Result<(), String> {
    use kubeboot::grammar;
    let Some(value) = s.value else { return Ok(()) };
    let verdict = match s.name {
        "wait" | "rotation-wait" | "ca-refresh-interval" => grammar::duration(value).map(drop),
        "key" => grammar::key_device(value).map(drop),
        "ip" => grammar::ip(value).map(drop),
        "metrics-bind-address" => grammar::bind_address(value).map(drop),
        _ => Ok(()),
    };
    verdict.map_err(|e| {
        let mut line = String::new();
        let _ = grammar::write_refusal(&mut line, &format!("--{}", s.name), value, e);
        line
    })
}

/// The command line with a configuration file's settings put in place: `argv` is
/// `[program, subcommand, rest...]`; the settings go right after the subcommand, so that the
/// option parser reads them as if typed there (an option both in the file and on the command
/// line is then refused as given twice, as any repeated option is).
pub fn splice(argv: &[OsString], settings: &[(usize, OsString)]) -> Vec<OsString> {
    let at = argv.len().min(2);
    let mut out = argv[..at].to_vec();
    out.extend(settings.iter().map(|(_, a)| a.clone()));
    out.extend_from_slice(&argv[at..]);
    out
}

/// The line of the setting an option-parser complaint names (`--NAME` or `--NAME <VALUE>`):
/// the last one that gives that option (for "given twice", the second).
pub fn line_of(settings: &[(usize, OsString)], option: &str) -> Option<usize> {
    let name = option.split([' ', '=']).next()?;
    settings.iter().rev().find_map(|(line, arg)| {
        let arg = arg.to_str()?;
        (arg.split('=').next() == Some(name)).then_some(*line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_long_options() {
        let text = "# comment\n\n  kubeconfig = /etc/kubernetes/kubelet.conf\r\npoll\nip=10.0.0.1\n\
                    key = pkcs11:token=a;object=b?pin-source=/p # not a comment\n";
        let s = parse(text).unwrap();
        let args: Vec<_> = s.iter().map(|s| (s.line, s.arg())).collect();
        assert_eq!(
            args,
            [
                (3, "--kubeconfig=/etc/kubernetes/kubelet.conf".into()),
                (4, "--poll".into()),
                (5, "--ip=10.0.0.1".into()),
                (6, "--key=pkcs11:token=a;object=b?pin-source=/p # not a comment".into()),
            ]
        );
        assert_eq!(line_of(&args, "--ip <IP>"), Some(5));
        assert_eq!(line_of(&args, "--poll"), Some(4));
        assert_eq!(line_of(&args, "--wait <WAIT>"), None);
    }

    #[test]
    fn other_lines_are_refused_with_their_number() {
        for (text, line) in [
            ("--kubeconfig /x", 1),
            ("\nKubeconfig = /x", 2),
            ("wait =", 1),
            ("a\nb c", 2),
            ("config = /etc/other.conf", 1),
            ("= 1h", 1),
            ("wait\t1h", 1),
        ] {
            assert_eq!(parse(text).map_err(|e| e.0), Err(line), "{text:?}");
        }
    }

    #[test]
    fn the_grammar_judges_its_values_with_the_file_and_line() {
        let dir = std::env::temp_dir().join(format!("kubeboot-judge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("kubeboot.conf");
        for (text, line, refusal) in [
            ("wait = 1h\nrotation-wait = 5x\n", 2, "--rotation-wait \"5x\": invalid-duration: "),
            (
                "\nca-refresh-interval = 1.5h",
                2,
                "--ca-refresh-interval \"1.5h\": invalid-duration: ",
            ),
            ("key = /var/lib/node.pem", 1, "--key \"/var/lib/node.pem\": invalid-key-reference: "),
            ("poll\nip = 10.0.0.300", 2, "--ip \"10.0.0.300\": invalid-ip-address: "),
            (
                "metrics-bind-address = :9101",
                1,
                "--metrics-bind-address \":9101\": invalid-address: ",
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = read(&file).unwrap_err();
            assert_eq!(e.line, Some(line), "{text:?}");
            assert!(e.reason.starts_with(refusal), "{text:?}: {e}");
            let shown = e.to_string();
            assert!(shown.starts_with(&format!("{}:{line}: --", file.display())), "{shown}");
            assert!(!shown.contains('\n'), "{shown}");
        }
        std::fs::write(
            &file,
            "wait = 0\nrotation-wait = 1h30m\nkey = tpm:\nip = fd00::7\n\
                               metrics-bind-address = [::1]:9101\nnode-name = n\n",
        )
        .unwrap();
        assert_eq!(read(&file).unwrap().len(), 6);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn settings_go_after_the_subcommand() {
        let argv: Vec<OsString> = ["kubeboot", "run", "--config", "f"].map(Into::into).into();
        let out = splice(&argv, &[(1, "--poll".into())]);
        assert_eq!(out, ["kubeboot", "run", "--poll", "--config", "f"].map(OsString::from));
    }

    #[test]
    fn unreadable_and_oversized_files_are_refused() {
        let e = read(Path::new("/nonexistent/kubeboot.conf")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/kubeboot.conf: cannot read"), "{e}");
        let dir = std::env::temp_dir().join(format!("kubeboot-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.conf");
        std::fs::write(&big, vec![b'#'; MAX_LEN as usize + 1]).unwrap();
        assert!(read(&big).unwrap_err().reason.starts_with("larger than"));
        let latin1 = dir.join("latin1.conf");
        std::fs::write(&latin1, b"poll\nnode-name = caf\xe9\n").unwrap();
        assert_eq!(
            read(&latin1).unwrap_err().to_string(),
            format!("{}:2: not UTF-8", latin1.display())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
