//! The CLI's configuration file (`examples/cli/src/config.rs`: `kubeboot run --config FILE`,
//! `/etc/kubeboot/kubeboot.conf`) on arbitrary text.
//!
//! Properties:
//! * nothing panics;
//! * a file that reads gives settings whose names are long options' spellings and whose
//!   arguments are `--NAME` or `--NAME=VALUE`; written back one a line, they read the same;
//! * a refused file names a line that exists, and the lines before it read;
//! * the grammar's judgement of a setting's value (`config::judge`) does not panic, and a
//!   refusal is its one line `--NAME "VALUE": <reason>: ...`;
//! * the settings go right after the subcommand, the rest of the command line kept in order;
//!   each argument's option is found back at its line.
#![no_main]

#[path = "../../examples/cli/src/config.rs"]
#[allow(dead_code)]
mod config;

use std::ffi::OsString;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match config::parse(text) {
        Ok(settings) => {
            let mut again = String::new();
            for s in &settings {
                assert!(!s.name.is_empty() && !s.name.starts_with('-'));
                assert!(
                    s.name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                );
                assert_ne!(s.name, "config");
                let arg = s.arg().into_string().unwrap();
                match s.value {
                    Some(v) => {
                        assert!(!v.is_empty() && v.trim() == v);
                        assert_eq!(arg, format!("--{}={v}", s.name));
                        again.push_str(&format!("{} = {v}\n", s.name));
                    }
                    None => {
                        assert_eq!(arg, format!("--{}", s.name));
                        again.push_str(&format!("{}\n", s.name));
                    }
                }
            }
            let reread = config::parse(&again).expect("settings written back read");
            assert_eq!(reread.len(), settings.len());
            for (a, b) in reread.iter().zip(&settings) {
                assert_eq!((a.name, a.value), (b.name, b.value));
            }
            let args: Vec<(usize, OsString)> = settings.iter().map(|s| (s.line, s.arg())).collect();
            let argv: Vec<OsString> = ["kubeboot", "run", "--config", "f"].map(Into::into).into();
            let spliced = config::splice(&argv, &args);
            assert_eq!(spliced.len(), argv.len() + args.len());
            assert_eq!(&spliced[..2], &argv[..2]);
            assert_eq!(&spliced[2 + args.len()..], &argv[2..]);
            for s in &settings {
                if let Err(line) = config::judge(s) {
                    assert!(line.starts_with(&format!("--{} \"", s.name)), "{line}");
                    assert!(!line.contains('\n'), "{line}");
                }
                let found = config::line_of(&args, &format!("--{} <X>", s.name)).unwrap();
                assert!(found >= s.line);
            }
        }
        Err((line, reason)) => {
            assert!(!reason.is_empty());
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(line >= 1 && line <= lines.len());
            assert!(config::parse(&lines[..line - 1].join("\n")).is_ok());
        }
    }
});
