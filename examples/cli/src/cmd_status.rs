//! `kubeboot status`: the node's certificates at a glance, like `kubeadm certs check-expiration`.
//! The verdicts are the core agent's ([`Mode::Check`]: it reads and validates exactly as `run`
//! would, and changes nothing); this file reads the files it asks for and formats the answer.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use kubeboot::agent::{
    Action, Agent, Capacities, CertCheck, Config, Mode, Origin, Serving, Status,
};
use kubeboot::rfc3339::DateTime;
use kubeboot::store::FileSteps;
use kubeboot::verify::{self, Described};
use serde_json::{Value, json};

use kubeboot_runtime::flags::{NodeFlags, ips};

use crate::cmd_bootstrap::rejected;
use crate::{CmdResult, Rejected, rfc, unix_now};

/// How to print.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Tables, as `kubeadm certs check-expiration` prints them.
    Table,
    /// One JSON object.
    Json,
}

/// Arguments of `kubeboot status`.
#[derive(Args)]
pub struct StatusArgs {
    /// The node kubeconfig.
    #[arg(long, default_value = "/etc/kubernetes/kubelet.conf")]
    kubeconfig: PathBuf,
    #[command(flatten)]
    node: NodeFlags,
    /// The serving certificate must have exactly these DNS names (repeatable; default: its own).
    #[arg(long)]
    dns: Vec<String>,
    /// The serving certificate must have exactly these IP addresses (repeatable). With --dns or
    /// --ip a missing serving certificate is an error.
    #[arg(long)]
    ip: Vec<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value = "table")]
    output: Output,
}

/// Run the agent in check mode: it only reads.
fn check<'a>(agent: &'a mut Agent<'_>, c: &Config<'_>) -> Result<Status<'a>, Rejected> {
    agent.start(c)?;
    let files = FileSteps::new();
    let now = unix_now();
    loop {
        match agent.poll(now) {
            Action::Read(_) => {
                if let Some(Err(e)) = files.perform(agent, now) {
                    eprintln!("kubeboot: {e}");
                }
            }
            Action::Event(_) => {}
            Action::Done(_) => break,
            Action::Failed(f) => return Err(Rejected::from(format!("{}: {}", f.error, f.detail))),
            other => return Err(Rejected::from(format!("status: unexpected action {other:?}"))),
        }
    }
    agent.status().ok_or_else(|| Rejected::from("status: no status after the check"))
}

/// `kubeadm`'s `Jan 02, 2006 15:04 UTC`.
fn kubeadm_time(t: i64) -> String {
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let d = DateTime::from_unix(t);
    let month = MONTHS[usize::from(d.month.clamp(1, 12)) - 1];
    format!("{month} {:02}, {:04} {:02}:{:02} UTC", d.day, d.year, d.hour, d.minute)
}

/// The residual time as kubeadm prints it (apimachinery's `ShortHumanDuration`).
fn residual(secs: i64) -> String {
    match secs {
        s if s < -1 => "<invalid>".into(),
        s if s < 0 => "0s".into(),
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s if s < 86_400 * 365 => format!("{}d", s / 86_400),
        s => format!("{}y", s / 86_400 / 365),
    }
}

fn origin(o: Origin<'_>) -> (&'static str, Option<&str>) {
    match o {
        Origin::File(p) => ("file", Some(p)),
        Origin::Data => ("data", None),
        _ => ("none", None),
    }
}

/// The leaf of a chain, described (`None`: no chain, or it does not parse).
fn leaf(chain_pem: &[u8]) -> Option<Described> {
    let der = kubeboot::pem::blocks(chain_pem).flatten().find(|b| b.label == "CERTIFICATE")?;
    let mut buf = vec![0u8; der.text.len()];
    let der = kubeboot::pem::decode_first(der.text, "CERTIFICATE", &mut buf).ok()?;
    verify::describe(der).ok()
}

/// Where `now` is against the rotation window (a running agent's deadline is drawn in it with
/// its own jitter, so only the window is known here).
fn rotation(d: &Described, now: i64) -> &'static str {
    let (lo, hi) = kubeboot::rotation::deadline_window(d.not_before, d.not_after);
    if now < lo {
        "before-window"
    } else if now < hi {
        "in-window"
    } else {
        "overdue"
    }
}

/// One certificate's row.
struct Row {
    name: &'static str,
    described: Option<Described>,
    check: CertCheckOwned,
}

struct CertCheckOwned {
    valid: Option<kubeboot::agent::CertStatus>,
    error: Option<(kubeboot::Error, &'static str)>,
    present: bool,
    certificate: (&'static str, Option<String>),
    key: (&'static str, Option<String>),
}

impl CertCheckOwned {
    fn new(c: &CertCheck<'_>) -> Self {
        let own = |o: Origin<'_>| {
            let (kind, path) = origin(o);
            (kind, path.map(str::to_owned))
        };
        let error = c.verdict.err().map(|u| (u.error, u.what));
        let missing = matches!(
            error,
            Some((kubeboot::Error::Store(kubeboot::error::StoreErrorKind::NotFound), _))
        );
        CertCheckOwned {
            valid: c.verdict.ok(),
            error,
            present: !missing,
            certificate: own(c.certificate),
            key: own(c.key),
        }
    }

    fn verdict(&self, d: Option<&Described>, now: i64) -> String {
        match (&self.valid, &self.error) {
            (Some(_), _) => match d.map(|d| rotation(d, now)) {
                Some("in-window") => "valid (rotation due in the window)".into(),
                Some("overdue") => "valid (rotation overdue)".into(),
                _ => "valid".into(),
            },
            (None, Some(_)) if !self.present => "absent".into(),
            (None, Some((e, _))) => format!("invalid: {}", e.name()),
            (None, None) => "unknown".into(),
        }
    }
}

/// Run `kubeboot status`.
pub fn run(a: StatusArgs) -> CmdResult {
    let cwd = std::env::current_dir()?;
    let dns: Vec<&str> = a.dns.iter().map(String::as_str).collect();
    let ips = ips(&a.ip).map_err(rejected)?;
    let mut c = Config::new("rust", text(&cwd)?, text(&a.kubeconfig)?, "");
    c.cert_dir = text(&a.node.cert_dir)?;
    c.node_name = a.node.node_name.as_deref();
    c.ca_bundle = a.node.ca_bundle.as_deref().map(text).transpose()?;
    let serving_expected = !dns.is_empty() || !ips.is_empty();
    c.serving = serving_expected.then_some(Serving { dns: &dns, ips: &ips });
    c.mode = Mode::Check;
    c.verifier = &kubeboot::backend::ring::Ring;
    let mut memory = vec![0u8; Capacities::HOST.memory_len()];
    let mut agent = Agent::new(&mut memory, &Capacities::HOST)?;
    let s = check(&mut agent, &c)?;
    let now = unix_now();
    let rows = [
        Row {
            name: "client",
            described: leaf(s.client.chain_pem),
            check: CertCheckOwned::new(&s.client),
        },
        Row {
            name: "serving",
            described: leaf(s.serving.chain_pem),
            check: CertCheckOwned::new(&s.serving),
        },
    ];
    let cas = cas(s.ca_pem);
    let (ca_kind, ca_path) = origin(s.ca);
    let ca_path = ca_path.map(str::to_owned);
    let node = s.node.to_owned();
    drop(agent);
    match a.output {
        Output::Table => print_table(&rows, &cas, (ca_kind, ca_path.as_deref()), now),
        Output::Json => {
            let v = json!({
                "node": node,
                "time": rfc(now),
                "certificates": rows.iter().map(|r| row_json(r, now)).collect::<Vec<_>>(),
                "certificateAuthorities": cas.iter().map(|(d, pin)| json!({
                    "subject": d.subject.as_str(),
                    "notAfter": rfc(d.not_after),
                    "residualSeconds": d.not_after - now,
                    "pin": pin,
                })).collect::<Vec<_>>(),
                "caSource": { "kind": ca_kind, "path": ca_path },
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
    }
    let client_bad = rows[0].check.valid.is_none();
    let serving_bad = rows[1].check.valid.is_none() && (rows[1].check.present || serving_expected);
    if client_bad || serving_bad {
        let bad: Vec<&str> = rows
            .iter()
            .filter(|r| r.check.valid.is_none() && (r.name == "client" || serving_bad))
            .map(|r| r.name)
            .collect();
        return Err(Rejected::from(format!("not usable: {}", bad.join(", "))));
    }
    Ok(())
}

/// Every CA of the bundle, described, with its kubeadm pin.
fn cas(bundle: &[u8]) -> Vec<(Described, String)> {
    let mut out = Vec::new();
    for block in kubeboot::pem::blocks(bundle).flatten().filter(|b| b.label == "CERTIFICATE") {
        let mut buf = vec![0u8; block.text.len()];
        let Ok(der) = kubeboot::pem::decode_first(block.text, "CERTIFICATE", &mut buf) else {
            continue;
        };
        let (Ok(d), Ok(pin)) = (verify::describe(der), kubeboot::pin::pin_of_cert_der(der)) else {
            continue;
        };
        out.push((d, pin.to_text().as_str().to_owned()));
    }
    out
}

fn row_json(r: &Row, now: i64) -> Value {
    let c = &r.check;
    let mut v = json!({
        "name": r.name,
        "present": c.present,
        "valid": c.valid.is_some(),
        "certificate": { "kind": c.certificate.0, "path": c.certificate.1 },
        "key": { "kind": c.key.0, "path": c.key.1 },
    });
    if let Some(d) = &r.described {
        let (lo, hi) = kubeboot::rotation::deadline_window(d.not_before, d.not_after);
        v["subject"] = json!(d.subject.as_str());
        v["issuer"] = json!(d.issuer.as_str());
        v["serial"] = json!(d.serial.as_str());
        v["notBefore"] = json!(rfc(d.not_before));
        v["notAfter"] = json!(rfc(d.not_after));
        v["residualSeconds"] = json!(d.not_after - now);
        v["rotationWindow"] = json!({ "start": rfc(lo), "end": rfc(hi) });
    }
    if let (Some(_), Some(d)) = (&c.valid, &r.described) {
        v["rotation"] = json!(rotation(d, now));
    }
    if let Some((e, what)) = &c.error {
        v["reason"] = json!(e.name());
        v["code"] = json!(e.code());
        v["what"] = json!(what);
        v["detail"] = json!(e.to_string());
    }
    v
}

/// Print rows of cells with columns padded to their widest cell (three spaces apart, as kubeadm).
fn print_cells(rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < r.len() {
                line.push_str(&" ".repeat(widths[i] - cell.chars().count() + 3));
            }
        }
        println!("{}", line.trim_end());
    }
}

fn print_table(rows: &[Row], cas: &[(Described, String)], ca: (&str, Option<&str>), now: i64) {
    let dash = || "-".to_owned();
    let mut t = vec![
        ["CERTIFICATE", "EXPIRES", "RESIDUAL TIME", "ROTATION WINDOW (70-90%)", "KEY", "STATUS"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for r in rows {
        let (expires, left, window) = match &r.described {
            Some(d) => {
                let (lo, hi) = kubeboot::rotation::deadline_window(d.not_before, d.not_after);
                (
                    kubeadm_time(d.not_after),
                    residual(d.not_after - now),
                    format!("{} - {}", kubeadm_time(lo), kubeadm_time(hi)),
                )
            }
            None => (dash(), dash(), dash()),
        };
        let key = if r.check.present { r.check.key.0.to_owned() } else { dash() };
        t.push(vec![
            r.name.to_owned(),
            expires,
            left,
            window,
            key,
            r.check.verdict(r.described.as_ref(), now),
        ]);
    }
    print_cells(&t);
    println!();
    let mut t = vec![["CERTIFICATE", "SUBJECT", "ISSUER", "SERIAL"].map(str::to_owned).to_vec()];
    for r in rows {
        if let Some(d) = &r.described {
            t.push(vec![
                r.name.to_owned(),
                d.subject.as_str().to_owned(),
                d.issuer.as_str().to_owned(),
                d.serial.as_str().to_owned(),
            ]);
        }
    }
    if t.len() > 1 {
        print_cells(&t);
        println!();
    }
    let mut t = vec![
        ["CERTIFICATE AUTHORITY", "EXPIRES", "RESIDUAL TIME", "PIN"].map(str::to_owned).to_vec(),
    ];
    for (d, pin) in cas {
        t.push(vec![
            d.subject.as_str().to_owned(),
            kubeadm_time(d.not_after),
            residual(d.not_after - now),
            pin.clone(),
        ]);
    }
    if t.len() > 1 {
        print_cells(&t);
        println!();
    }
    match ca {
        (kind, Some(path)) => println!("ca: {kind} {path}"),
        (kind, None) => println!("ca: {kind}"),
    }
    for r in rows {
        let c = &r.check;
        if let (_, Some(p)) = &c.key {
            println!("{}: key {} {p}", r.name, c.key.0);
        } else if c.present {
            println!("{}: key {}", r.name, c.key.0);
        }
        // An absent serving certificate is not an error; an absent client one is.
        if let (Some((e, what)), true) = (&c.error, c.present || r.name == "client") {
            println!("{}: {what}: {} (code {}): {e}", r.name, e.name(), e.code());
        }
    }
}

/// A path as the core takes it.
fn text(p: &std::path::Path) -> Result<&str, Rejected> {
    p.to_str().ok_or_else(|| Rejected::from(format!("{}: not UTF-8", p.display())))
}
