//! `kubeboot-sim-apiserver`: the simulated apiserver over HTTPS on 127.0.0.1, for the tests of
//! front-ends that cannot link the model (the Go and C runtimes). It writes the cluster CA and a
//! bootstrap kubeconfig into `--dir`, prints one line `ready url=https://127.0.0.1:<port>` and
//! serves until it is killed.
//!
//! ```text
//! kubeboot-sim-apiserver --dir DIR [--listen 127.0.0.1:0] [--lifetime SECS]
//!     [--approve-after SECS] [--no-approve-client] [--approve-serving] [--token ID.SECRET]
//! ```
//!
//! `DIR/ca.crt` is the cluster CA, `DIR/bootstrap.conf` the bootstrap kubeconfig, `DIR/admin-token`
//! a bearer token that may approve or deny CSRs through the `approval` subresource (as
//! `kubectl certificate approve` does).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use kubeboot_sim::serve::{Server, unix_now};
use kubeboot_sim::{Apiserver, bootstrap_kubeconfig};

fn usage(msg: &str) -> ExitCode {
    eprintln!("kubeboot-sim-apiserver: {msg}");
    eprintln!(
        "usage: kubeboot-sim-apiserver --dir DIR [--listen 127.0.0.1:0] [--lifetime SECS] \
         [--approve-after SECS] [--no-approve-client] [--approve-serving] [--token ID.SECRET]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut api = Apiserver::new(unix_now());
    let mut dir: Option<PathBuf> = None;
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let r: Result<(), String> = (|| {
            match a.as_str() {
                "--dir" => dir = Some(value("--dir")?.into()),
                "--listen" => {
                    listen = value("--listen")?.parse().map_err(|e| format!("--listen: {e}"))?
                }
                "--lifetime" => {
                    api.lifetime =
                        value("--lifetime")?.parse().map_err(|e| format!("--lifetime: {e}"))?
                }
                "--approve-after" => {
                    api.approve_after = value("--approve-after")?
                        .parse()
                        .map_err(|e| format!("--approve-after: {e}"))?
                }
                "--no-approve-client" => api.auto_approve_client = false,
                "--approve-serving" => api.approve_serving = true,
                "--token" => api.token = value("--token")?,
                other => return Err(format!("unknown argument {other:?}")),
            }
            Ok(())
        })();
        if let Err(e) = r {
            return usage(&e);
        }
    }
    let Some(dir) = dir else { return usage("--dir is required") };
    let server = match Server::bind(api, listen) {
        Ok(s) => s,
        Err(e) => return usage(&format!("--listen {listen}: {e}")),
    };
    let ca = dir.join("ca.crt");
    let written = (|| {
        std::fs::create_dir_all(&dir)?;
        let api = server.api();
        std::fs::write(&ca, &api.ca_pem)?;
        let kc = bootstrap_kubeconfig(&server.url(), &ca.to_string_lossy(), &api.token);
        std::fs::write(dir.join("bootstrap.conf"), kc)?;
        std::fs::write(dir.join("admin-token"), &api.admin_token)
    })();
    if let Err(e) = written {
        eprintln!("kubeboot-sim-apiserver: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    println!("ready url={}", server.url());
    loop {
        std::thread::park();
    }
}
