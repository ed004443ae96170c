//! The binary's exit status and one-line reasons, without a cluster.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubeboot-approver"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent")
        .output()
        .expect("run kubeboot-approver");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_flag_the_cores_grammar_refuses_is_exit_2_with_its_line() {
    let (code, err) = run(&["--dns-pattern", "example.com"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("kubeboot approver: --dns-pattern \"example.com\": invalid-dns-pattern: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, err) = run(&["--allowed-key-types", "ed25519"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("\"ed25519\": invalid-key-policy: "), "{err}");
    let (code, err) = run(&["--node-wait", "5x"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        "kubeboot approver: --node-wait \"5x\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)"
    );
}

#[test]
fn an_unusable_kubeconfig_is_exit_1() {
    let (code, err) =
        run(&["--kubeconfig", "/nonexistent/kubeconfig", "--metrics-bind-address", ""]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("kubeconfig") && err.contains("/nonexistent/kubeconfig"), "{err}");
}

#[test]
fn usage_errors_are_clap_s_exit_2() {
    let (code, _) = run(&["--log-format", "xml"]);
    assert_eq!(code, 2);
    let (code, _) = run(&["--no-such-flag"]);
    assert_eq!(code, 2);
}
