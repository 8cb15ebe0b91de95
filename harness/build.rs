//! Builds the clock shim (`shim/clockshim.c`) into
//! `$OUT_DIR/libstoreproof_clock.so`; `harness::server` embeds it with
//! `include_bytes!` so that the `storeproof` binary stays one file.
//!
//! Why by hand: the `cc` crate (and every other build helper) produces static
//! archives to link into the Rust crate, but an LD_PRELOAD library must be a
//! separate shared object that the dynamic loader maps into *another*
//! process (redis-server). So we run the system C compiler ourselves.
//! The shim only has to run on the machine that runs the harness; cross
//! compilation would need `CC` to point at the target's compiler.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const SHIM_SOURCE: &str = "shim/clockshim.c";
const SHIM_OUTPUT: &str = "libstoreproof_clock.so";

fn main() {
    println!("cargo:rerun-if-changed={SHIM_SOURCE}");
    println!("cargo:rerun-if-env-changed=CC");

    let Some(out_dir) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("OUT_DIR is not set; build the harness through cargo");
    };
    let output = out_dir.join(SHIM_OUTPUT);

    // CC may carry arguments ("ccache gcc"); the first word is the program.
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc").to_string();
    let extra: Vec<String> = words.map(str::to_string).collect();

    let status = Command::new(&program)
        .args(&extra)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-o"])
        .arg(&output)
        .arg(SHIM_SOURCE)
        // dlsym (the shim's fopen finds libc's): in libc itself since glibc
        // 2.34, in libdl before; the flag is harmless on either.
        .arg("-ldl")
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!(
            "building the clock shim with `{cc}` failed ({s}); fix the compiler errors above \
             or set CC to a working C compiler"
        ),
        Err(e) => panic!(
            "cannot run the C compiler `{program}` to build the clock shim: {e}; install one \
             (apt-get install gcc) or set CC to its path"
        ),
    }
}
