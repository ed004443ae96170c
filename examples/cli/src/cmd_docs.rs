//! `kubeboot completions SHELL` and `kubeboot man`: shell completions (clap_complete) and man
//! pages (clap_mangen) generated from the command definitions, so they never drift from them.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Command};
use clap_complete::Shell;

use crate::CmdResult;

/// Arguments of `kubeboot completions`.
#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Arguments of `kubeboot man`.
#[derive(Args)]
pub struct ManArgs {
    /// Write `kubeboot.1` and one `kubeboot-<command>.1` per command into this directory
    /// (created if missing) instead of printing `kubeboot.1`.
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Print the completion script for `a.shell`.
pub fn completions(a: CompletionsArgs, mut cmd: Command) -> CmdResult {
    // Into a buffer: clap_complete panics on a failed write (a closed pipe), we report it.
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "kubeboot", &mut out);
    std::io::stdout().write_all(&out)?;
    Ok(())
}

/// Print or write the man pages.
pub fn man(a: ManArgs, cmd: Command) -> CmdResult {
    let Some(dir) = a.dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        std::io::stdout().write_all(&out)?;
        return Ok(());
    };
    std::fs::create_dir_all(&dir)?;
    let mut cmd = cmd;
    cmd.build();
    write_pages(&cmd, "kubeboot", &dir)
}

/// The page of `cmd` (named `name`) and, recursively, of its subcommands.
fn write_pages(cmd: &Command, name: &str, dir: &std::path::Path) -> CmdResult {
    let page = cmd.clone().name(name.to_owned());
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    std::fs::write(dir.join(format!("{name}.1")), out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(())
}
