//! A run stopped by a signal leaves nothing behind: SIGTERM (what CI
//! cancellation, `timeout` and `docker stop` send) cleans up like Ctrl-C and
//! exits 143; after SIGKILL, where nothing can run, the adapters and managed
//! servers die with storeproof (parent-death signals) and the next run
//! removes the dead run's directories.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn broken_adapter() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/adapters/broken/broken_adapter.py")
}

/// A certify run whose adapter hangs on its first request (with a marker in
/// its command line), its TMPDIR private; returns once instance `a`'s
/// adapter hangs.
fn start_hanging_run(marker: &str, tmp: &Path) -> Child {
    let store = format!("cmd:python3 {} hang {marker}", broken_adapter().display());
    let mut child = common::command()
        .args([
            "certify",
            "--store",
            &store,
            "--check",
            "conformance.lease.take-free-tree",
            "--adapter-timeout",
            "120",
            "--out",
        ])
        .arg(tmp.join("report"))
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The adapter writes this file once it hangs in its first request: from
    // then on it reads nothing, so only a signal can end it (not the end of
    // its stdin).
    let hanging = || {
        entries(tmp)
            .iter()
            .any(|dir| dir.join("hanging-a").exists())
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !hanging() {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "instance a's adapter never ran: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Running processes whose command line contains `marker`.
fn adapters(marker: &str) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}

/// Every process that runs (zombies excluded), with its parent pid.
fn processes() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|pid| stat(*pid).is_some_and(|(_, state, _)| state != "Z"))
        .collect()
}

/// (command name, state, parent pid) of `pid`.
fn stat(pid: u32) -> Option<(String, String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(") ")?;
    let comm = head.split_once(" (")?.1.to_string();
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    let ppid = fields.next()?.parse().ok()?;
    Some((comm, state, ppid))
}

/// The redis-server children of `parent` and their directories.
fn servers_of(parent: u32) -> Vec<(u32, PathBuf)> {
    processes()
        .into_iter()
        .filter(|pid| {
            stat(*pid)
                .is_some_and(|(comm, _, ppid)| comm.contains("redis-server") && ppid == parent)
        })
        .filter_map(|pid| Some((pid, std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?)))
        .collect()
}

fn running(pid: u32) -> bool {
    stat(pid).is_some_and(|(_, state, _)| state != "Z" && state != "X")
}

fn wait_until_gone(pids: &[u32]) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| running(*p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child has no memory-safety effect.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

#[test]
fn sigterm_mid_run_stops_everything_removes_every_directory_and_exits_143() {
    let marker = format!("sp-signal-term-{}", std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    let run = start_hanging_run(&marker, tmp.path());
    let servers = servers_of(run.id());
    assert!(!servers.is_empty(), "the run has a managed server");
    let adapter_pids = adapters(&marker);
    signal(&run, libc::SIGTERM);
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(
        stderr
            .trim_end()
            .lines()
            .last()
            .unwrap_or("")
            .contains("terminated (SIGTERM)"),
        "{stderr}"
    );
    assert_eq!(
        wait_until_gone(&adapter_pids),
        Vec::<u32>::new(),
        "adapters left"
    );
    let server_pids: Vec<u32> = servers.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        wait_until_gone(&server_pids),
        Vec::<u32>::new(),
        "servers left"
    );
    for (_, dir) in &servers {
        assert!(!dir.exists(), "{} left", dir.display());
    }
    assert_eq!(
        entries(tmp.path()),
        Vec::<PathBuf>::new(),
        "TMPDIR not empty"
    );
}

#[test]
fn after_sigkill_adapters_and_servers_die_and_the_next_run_reaps_the_directories() {
    let marker = format!("sp-signal-kill-{}", std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    let mut run = start_hanging_run(&marker, tmp.path());
    let servers = servers_of(run.id());
    assert!(!servers.is_empty(), "the run has a managed server");
    let adapter_pids = adapters(&marker);
    let workdirs = entries(tmp.path());
    assert!(
        workdirs.iter().any(|p| p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("storeproof-run-"))),
        "{workdirs:?}"
    );
    run.kill().unwrap();
    run.wait().unwrap();
    assert_eq!(
        wait_until_gone(&adapter_pids),
        Vec::<u32>::new(),
        "adapters outlived storeproof"
    );
    let server_pids: Vec<u32> = servers.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        wait_until_gone(&server_pids),
        Vec::<u32>::new(),
        "servers outlived storeproof"
    );
    // Nothing ran on SIGKILL: the directories are still there...
    for (_, dir) in &servers {
        assert!(dir.exists(), "{} vanished", dir.display());
    }
    assert!(!entries(tmp.path()).is_empty());
    // ...until the next run starts (any run: this one stops at a usage
    // error right after).
    let next = common::command()
        .args(["certify", "--check", "nope."])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(next.status.code(), Some(2));
    for (_, dir) in &servers {
        assert!(!dir.exists(), "{} not reaped", dir.display());
    }
    assert_eq!(
        entries(tmp.path()),
        Vec::<PathBuf>::new(),
        "TMPDIR not reaped"
    );
}
