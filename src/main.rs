//! The `storeproof` binary: the command line of the library
//! (`storeproof::cli`), with the allocator the explorer wants.

use std::process::ExitCode;

// The explorer clones and drops a state's key dumps at every step; glibc's
// allocator spent a tenth of a run consolidating those chunks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    storeproof::cli::main()
}
