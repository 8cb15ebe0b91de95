//! storeproof as a library (issue 22, item 3): a Rust store certified from
//! `cargo test` with one call, the typed report returned and the same
//! report folder written; a flawed store fails with its counterexample; a
//! bad option is refused before anything runs.

use std::path::Path;

use storeproof::kit::example::ExampleStore;
use storeproof::kit::{async_trait, LeaseView};
use storeproof::{
    Call, Certificate, Certification, Error, Hello, Reply, RunVerdict, StoreClient, StoreError,
    StoreFactory, StoreInfo, Suite, Verdict,
};

/// The checks both runs play: the take's own scenarios and its races, on
/// the lease contract only (kept small: the whole run is `certify`'s job).
const CHECKS: &str = "conformance.lease.take";

/// The kit's example store: every contract on Redis, written on the kit,
/// small enough to read in one sitting.
fn example(dir: &Path) -> ExampleStore {
    ExampleStore::new(dir.join("kept.sqlite"))
}

/// The example store with a take that grants even over a live lease: the
/// check of a live holder is gone.
fn takes_over_live_leases(dir: &Path) -> ExampleStore {
    let live_check = "if r[2] and r[4] ~= '1' and now < tonumber(r[3]) then";
    let store = example(dir);
    let take = store
        .script("lease.take")
        .expect("the example's take")
        .to_string();
    assert!(take.contains(live_check), "the example's take changed");
    store.with_script("lease.take", &take.replace(live_check, "if false then"))
}

/// [`CHECKS`] of the store `make` makes, its report under `out`.
fn certified(make: fn(&Path) -> ExampleStore, out: &Path) -> Certificate {
    Certification::of_in_workdir(make)
        .suites(&[Suite::Conformance])
        .check(CHECKS)
        .cases(2)
        .seed(5)
        .out(out.join("report"))
        .run_blocking()
        .expect("the run could be set up")
}

#[test]
fn a_correct_store_passes_and_its_report_folder_is_written() {
    let out = tempfile::tempdir().unwrap();
    let certificate = certified(example, out.path());
    assert!(certificate.passed(), "{certificate}");
    assert_eq!(certificate.verdict(), RunVerdict::Pass);
    assert_eq!(certificate.failed().count(), 0);
    let decided = certificate
        .report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Pass)
        .count();
    assert!(decided > 3, "only {decided} checks passed: {certificate}");
    for file in ["index.html", "report.json", "junit.xml"] {
        assert!(certificate.out.join(file).is_file(), "no {file} written");
    }
    assert_eq!(certificate.report.store.spec, "rust:example-store");
}

#[test]
fn a_flawed_store_fails_with_its_counterexample() {
    let out = tempfile::tempdir().unwrap();
    let certificate = certified(takes_over_live_leases, out.path());
    assert_eq!(certificate.verdict(), RunVerdict::Fail, "{certificate}");
    let failed: Vec<&str> = certificate.failed().map(|c| c.id.as_str()).collect();
    assert!(
        failed.contains(&"conformance.lease.take-busy"),
        "failed: {failed:?}"
    );
    assert!(
        certificate.failed().all(|c| c.counterexample.is_some()),
        "a failure without its counterexample: {certificate}"
    );
    let text = certificate.to_string();
    assert!(
        text.contains("FAIL") && text.contains("counterexample:"),
        "{text}"
    );
}

/// The faults suite meets the example with a full server and restarts:
/// its operations answer `store_full` while full (nothing changed) and
/// answer again once the server is back (a broken connection is dropped,
/// a forgotten script sent again). The Rust kit's pitfalls: a set-up
/// command's error mapping used for an operation, a connection kept after
/// it broke.
#[test]
fn the_example_store_rides_out_a_full_server_and_restarts() {
    let out = tempfile::tempdir().unwrap();
    let certificate = Certification::of_in_workdir(example)
        .suites(&[Suite::Faults])
        .check("faults.full-server-refuses")
        .check("faults.lease-linearizable")
        .faults(12, 12)
        .seed(3)
        .out(out.path().join("report"))
        .run_blocking()
        .expect("the run could be set up");
    assert!(certificate.passed(), "{certificate}");
    for id in ["faults.full-server-refuses", "faults.lease-linearizable"] {
        let check = certificate.check(id).expect(id);
        assert_eq!(check.verdict, Verdict::Pass, "{id}: {}", check.reason);
    }
}

/// The example with its take split into a read and then a write, two round
/// trips (issue 22's "small change"): a read of the lease answers busy
/// while it is live, else the example's take with its live check gone.
struct SplitTake(ExampleStore);

/// An instance of [`SplitTake`].
struct SplitTakeClient(Box<dyn StoreClient>);

#[async_trait]
impl StoreFactory for SplitTake {
    fn spec(&self) -> String {
        "rust:example-split-take".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.0.connect(hello, clock_ms).await?;
        Ok((info, Box::new(SplitTakeClient(inner))))
    }
}

#[async_trait]
impl StoreClient for SplitTakeClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if call.op == "lease.take" {
            let read = Call {
                op: "lease.read".into(),
                args: serde_json::json!({ "tree": call.args["tree"] }),
            };
            if let Reply::Lease(Some(LeaseView {
                holder: Some(holder),
                epoch,
                expires_at_ms: Some(expires_at_ms),
                live: true,
            })) = self.0.call(&read, clock_ms).await?
            {
                return Ok(Reply::Busy {
                    holder,
                    epoch,
                    expires_at_ms,
                });
            }
        }
        self.0.call(call, clock_ms).await
    }
}

/// The split take keeps every one-call rule of the take and loses its race
/// in conformance and in the explorer.
#[test]
fn the_example_with_its_take_split_into_a_read_and_a_write_loses_the_race() {
    let out = tempfile::tempdir().unwrap();
    let certificate = Certification::of_in_workdir(|dir| SplitTake(takes_over_live_leases(dir)))
        .suites(&[Suite::Conformance, Suite::Explorer])
        .check(CHECKS)
        .check("explorer.one-live-holder")
        .cases(2)
        .depths(6, 4, 4)
        .walks(0)
        .skews(&[0])
        .fail_fast(true)
        .seed(5)
        .out(out.path().join("report"))
        .run_blocking()
        .expect("the run could be set up");
    for (id, wanted) in [
        ("conformance.lease.take-races", Verdict::Fail),
        ("explorer.one-live-holder", Verdict::Fail),
        ("conformance.lease.take-free-tree", Verdict::Pass),
        ("conformance.lease.take-busy", Verdict::Pass),
    ] {
        let verdict = certificate.check(id).map(|c| c.verdict);
        assert_eq!(verdict, Some(wanted), "{id}: {certificate}");
    }
}

#[test]
fn a_bad_size_is_refused_and_nothing_is_written() {
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("report");
    let refused = Certification::of_in_workdir(example)
        .cases(0)
        .out(&report)
        .run_blocking();
    match refused {
        Err(Error::Option { option, problem }) => {
            assert_eq!(option, "--cases");
            assert!(problem.contains("at least 1"), "{problem}");
        }
        other => panic!("expected the --cases refusal, got {other:?}"),
    }
    assert!(!report.exists(), "a report was written for a refused run");
}
