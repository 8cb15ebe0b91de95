//! Certifies the Rust kit's example store (`storeproof::kit::example`) with
//! every suite at `certify`'s default sizes, as a Rust author certifies a
//! store outside `cargo test`:
//!
//! ```sh
//! cargo run --release --example certify_kit_example -- target/kit-example-report
//! ```
//!
//! Prints the certificate (the verdict, each failed or undecided check with
//! its reason) and exits 0 on PASS, 1 otherwise, 2 when the run could not
//! be set up.

use std::process::ExitCode;

use storeproof::kit::example::ExampleStore;
use storeproof::Certification;

fn main() -> ExitCode {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "storeproof-report".into());
    let run = Certification::of_in_workdir(|dir| ExampleStore::new(dir.join("kept.sqlite")))
        .out(out)
        .verbose()
        .run_blocking();
    match run {
        Ok(certificate) => {
            println!("{certificate}");
            if certificate.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("storeproof: {e}");
            ExitCode::from(2)
        }
    }
}
