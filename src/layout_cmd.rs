//! `storeproof layout check FILE`: whether a layout file assembles under the
//! one-backend rule (docs/CONTRACTS.md §1.5), without running anything.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::progress::printable;

/// What `storeproof layout` does.
#[derive(Debug, Subcommand)]
pub enum LayoutCommand {
    /// Assemble a layout file (TOML: `[stores]` with a backend per store);
    /// exit 0 if it assembles, 2 with the refusal naming each store if not.
    Check {
        /// The layout file, e.g. layout/layouts/coordination-set.toml.
        file: PathBuf,
    },
}

/// Runs `layout`; `Err` is the refusal or the unreadable file (exit 2).
pub fn run(command: LayoutCommand) -> anyhow::Result<ExitCode> {
    match command {
        LayoutCommand::Check { file } => {
            let verdict = layout::check_file(&file)
                .map_err(|e| anyhow::anyhow!(printable(&e.to_string())))?;
            println!("{}", printable(&verdict));
            Ok(ExitCode::SUCCESS)
        }
    }
}
