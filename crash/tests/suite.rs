//! The crash suite end to end on both backends: with the required settings no
//! acknowledged write is lost across SIGKILLs; with the append-only file off
//! and the opt-out, every kill shows the loss; nothing of the run is left.

use std::process::Command;
use std::sync::Arc;

use crash::suite::{run, BackendChoice, CrashConfig};
use harness::check::Verdict;
use harness::store::redis::RedisStoreFactory;
use harness::store::StoreFactory;

fn config(backend: BackendChoice, seed: u64) -> CrashConfig {
    CrashConfig {
        kills: 3,
        opt_out_kills: 5,
        power_losses: 3,
        instances: 4,
        seed,
        backend,
    }
}

async fn certify_crash(backend: BackendChoice, seed: u64) -> crash::suite::CrashOutcome {
    let dir = tempfile::tempdir().unwrap();
    let factory: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    run(
        factory,
        "sp:crash:".into(),
        &config(backend, seed),
        &mut |l| eprintln!("{l}"),
    )
    .await
    .expect("the crash suite runs")
}

fn assert_durable_and_loss_shown(outcome: &crash::suite::CrashOutcome) {
    for c in &outcome.checks {
        if c.id == "crash.docker-backend" {
            continue;
        }
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    let s = &outcome.stats;
    assert_eq!(s["kills"], 3);
    assert_eq!(s["lost"], 0);
    assert!(s["acknowledged_writes"].as_u64().unwrap() >= 60);
    assert_eq!(s["opt_out"]["kills_showing_loss"], 5);
    assert_eq!(s["power_loss"]["always"]["lost"], 0);
    assert_eq!(
        s["power_loss"]["everysec_opted_out"]["cuts_showing_loss"],
        3
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_process_backend_keeps_every_acknowledged_write_and_shows_the_opt_out_loss() {
    let outcome = certify_crash(BackendChoice::Process, 11).await;
    assert_eq!(outcome.stats["backend"], "process");
    assert_durable_and_loss_shown(&outcome);
    let docker = outcome
        .checks
        .iter()
        .find(|c| c.id == "crash.docker-backend")
        .unwrap();
    assert_eq!(docker.verdict, Verdict::Skipped, "{}", docker.reason);
}

fn labelled(kind: &str, label: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            kind,
            "ls",
            "-a",
            "-q",
            "--filter",
            &format!("label=storeproof.run={label}"),
        ])
        .output();
    let out = match out {
        Ok(o) => o,
        Err(_) => return vec![],
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_docker_backend_keeps_every_acknowledged_write_and_leaves_nothing() {
    let seed = 12;
    let outcome = certify_crash(BackendChoice::Docker, seed).await;
    assert_eq!(outcome.stats["backend"], "docker");
    assert_durable_and_loss_shown(&outcome);
    let docker = outcome
        .checks
        .iter()
        .find(|c| c.id == "crash.docker-backend")
        .unwrap();
    assert_eq!(docker.verdict, Verdict::Pass, "{}", docker.reason);
    for run in ["durable", "optout"] {
        let label = format!("{:08x}-{run}", seed as u32);
        assert_eq!(
            labelled("container", &label),
            Vec::<String>::new(),
            "containers left"
        );
        // `docker volume ls` has no -a.
        let out = Command::new("docker")
            .args([
                "volume",
                "ls",
                "-q",
                "--filter",
                &format!("label=storeproof.run={label}"),
            ])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).trim().is_empty(),
            "volumes left"
        );
    }
}
