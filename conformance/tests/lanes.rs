//! Checks run in lanes (issue 45): on three lanes, each on a server of its
//! own, the suite gives the results one lane gives, in the same order, for
//! a correct store and for a broken one; and the lanes did run on servers
//! of their own.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use conformance::ConformanceSuite;
use harness::contract::StoreError;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::{Silent, Suite, Verdict};
use stores::redis::RedisStoreFactory;
use testkit::TestServer;

/// A store that notes the prefix and server of every connect of the
/// run's prefix, and the instances it was asked to start ahead.
struct Noting {
    inner: Arc<dyn StoreFactory>,
    connects: Mutex<Vec<(String, String)>>,
    warmed: Mutex<Vec<String>>,
}

#[async_trait]
impl StoreFactory for Noting {
    fn spec(&self) -> String {
        self.inner.spec()
    }

    fn warm(&self, instances: &[&str]) {
        if let Ok(mut warmed) = self.warmed.lock() {
            warmed.extend(instances.iter().map(|i| i.to_string()));
        }
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        if hello.prefix.starts_with("sp:lanes") {
            if let Ok(mut connects) = self.connects.lock() {
                connects.push((hello.prefix.clone(), hello.redis_url.clone()));
            }
        }
        self.inner.connect(hello, clock_ms).await
    }
}

/// Every check's id, verdict and reason, in the order the suite gave them,
/// and the servers the store was pointed at.
async fn run(
    server: &ManagedServer,
    store: Arc<dyn StoreFactory>,
    lanes: usize,
    tag: &str,
) -> (Vec<(String, Verdict, String)>, usize) {
    let noting = Arc::new(Noting {
        inner: store,
        connects: Mutex::default(),
        warmed: Mutex::default(),
    });
    let subject = testkit::subject(noting.clone())
        .prefix(format!("sp:lanes:{tag}:{lanes}:"))
        .seed(5)
        .on(server);
    let suite = ConformanceSuite::with_cases(8).with_lanes(lanes);
    let run = suite
        .run(&subject, &suite.checks(), &Silent)
        .await
        .expect("the suite runs");
    let results = run
        .checks
        .into_iter()
        // The prefix differs between the runs; nothing else may, but for
        // how many keys the server held when a check read every key (what
        // ran on that server before it, lane or not).
        .map(|c| {
            let reason = c.reason.replace(&subject.run_prefix, "PREFIX");
            let reason = match reason.split_once("searched every key on the server (") {
                Some((before, after)) => format!(
                    "{before}searched every key on the server (N{}",
                    after.trim_start_matches(|ch: char| ch.is_ascii_digit())
                ),
                None => reason,
            };
            (c.id, c.verdict, reason)
        })
        .collect();
    // The servers of the checks that do not start servers of their own
    // (the server-assumption checks do, on any lane), other than the run's:
    // managed servers listen below the ephemeral ports, the gates in front
    // of a server (races) on one of them.
    let checks = suite.checks();
    let lane_servers: BTreeSet<String> = noting
        .connects
        .lock()
        .map(|c| c.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|(prefix, url)| {
            let n: Option<usize> = prefix
                .strip_prefix(&format!("{}c", subject.run_prefix))
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse().ok());
            let own_servers = n.is_some_and(|n| checks[n].id.starts_with("conformance.server."));
            !own_servers && *url != server.url() && below_ephemeral(url)
        })
        .map(|(_, url)| url)
        .collect();
    let urls = lane_servers.len();
    // Each lane's instances started ahead.
    let warmed = noting.warmed.lock().map(|w| w.clone()).unwrap_or_default();
    let count = |name: &str| warmed.iter().filter(|w| *w == name).count();
    assert_eq!(
        (count("a"), count("b"), count("c"), warmed.len()),
        (lanes, lanes, lanes, 3 * lanes),
        "{warmed:?}"
    );
    (results, urls)
}

/// Whether `url`'s port is below the range this machine hands to outgoing
/// connections and to listeners on port 0 (where managed servers listen).
fn below_ephemeral(url: &str) -> bool {
    url.trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        .is_some_and(|port| port < harness::server::ephemeral_floor())
}

#[tokio::test]
async fn three_lanes_give_what_one_gives_on_servers_of_their_own() {
    // On the virtual clock: the scenarios move time to the millisecond.
    let server = TestServer::with(ServerOptions::default()).await;
    let good: Arc<dyn StoreFactory> = Arc::new(RedisStoreFactory::new(server.kept_db()));
    let broken = sabotage::by_name("release-without-token", server.dir()).expect("a sabotage");
    for (store, tag, fails) in [(good, "good", false), (broken, "broken", true)] {
        let (one, one_urls) = run(&server, store.clone(), 1, tag).await;
        let (three, three_urls) = run(&server, store, 3, tag).await;
        let differ: Vec<_> = one.iter().zip(&three).filter(|(a, b)| a != b).collect();
        assert_eq!(one.len(), three.len());
        assert!(differ.is_empty(), "one lane, then three: {differ:#?}");
        assert_eq!(
            one.iter().any(|(_, v, _)| *v == Verdict::Fail),
            fails,
            "{one:#?}"
        );
        assert_eq!((one_urls, three_urls), (0, 2), "servers besides the run's");
    }
}
