//! `kubeboot key ...`

use std::path::PathBuf;

use clap::Subcommand;
use kubeboot::key::{NodeKey, SEC1_PEM_LEN};
use zeroize::Zeroizing;

use crate::{CmdResult, files};

/// Key subcommands.
#[derive(Subcommand)]
pub enum KeyCommand {
    /// Generate a P-256 node key and write it as SEC1 PEM (mode 0600).
    Generate {
        /// Where to write the key.
        #[arg(long)]
        out: PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
}

/// Run a key subcommand.
pub fn run(cmd: KeyCommand) -> CmdResult {
    match cmd {
        KeyCommand::Generate { out, force } => {
            let key = NodeKey::generate(files::os_entropy)?;
            let mut pem = Zeroizing::new([0u8; SEC1_PEM_LEN]);
            let n = key.to_sec1_pem(&mut pem[..])?;
            files::write_private(&out, &pem[..n], force)
        }
    }
}
