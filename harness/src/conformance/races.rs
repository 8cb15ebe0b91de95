//! `conformance.lease.take-races`: the three take races of the lease contract
//! (two takes of a free tree, two takes of an expired lease, a take against a
//! renew at the expiry instant), forced through the gate for any store.
//!
//! Each instance talks to the server through a gate of its own that holds
//! every scheduled command. The race driver releases one held command at a
//! time and explores every interleaving of the two operations' commands
//! (depth-first over the choice of which instance goes next). After each
//! schedule, the two replies must be explained by one of the two sequential
//! orders of the operations (the model judges both); when neither explains
//! them, the released commands in order are the counterexample.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::runner::{outcome_json, Outcome, Target};
use crate::contract::{ContractModel, Judgement, Reply, Request, StoreError};
use crate::gate::{Gate, Mode};
use crate::store::StoreClient;

/// How long an operation may take to send its next command or answer.
const STEP_TIMEOUT: Duration = Duration::from_secs(5);
/// The most schedules explored per race (two operations of up to four
/// commands each have at most 70 interleavings).
const MAX_SCHEDULES: usize = 70;
/// The two racing instances.
const NAMES: [&str; 2] = ["a", "b"];
/// The lease length the races use.
const TTL: i64 = 1000;

/// One race: what happens before it, then the two racing operations.
struct Race {
    name: &'static str,
    /// Set-up calls from instance `a`, judged, before the race; the second
    /// field moves the clock this far afterwards.
    setup: Vec<Request>,
    advance_after_setup: i64,
    a: fn(&[i64]) -> Request,
    b: fn(&[i64]) -> Request,
}

fn races() -> Vec<Race> {
    let take = |holder: &str| Request::LeaseTake {
        tree: "t".into(),
        holder: holder.into(),
        ttl_ms: TTL,
    };
    vec![
        Race {
            name: "two takes of a free tree",
            setup: vec![],
            advance_after_setup: 0,
            a: |_| take_by("a"),
            b: |_| take_by("b"),
        },
        Race {
            name: "two takes of an expired lease",
            setup: vec![take("c")],
            advance_after_setup: TTL + 1,
            a: |_| take_by("a"),
            b: |_| take_by("b"),
        },
        Race {
            name: "a take against a renew at the expiry instant",
            setup: vec![take("a")],
            advance_after_setup: TTL,
            a: |epochs| Request::LeaseRenew {
                tree: "t".into(),
                holder: "a".into(),
                epoch: epochs.first().copied().unwrap_or(1),
                ttl_ms: TTL,
            },
            b: |_| take_by("b"),
        },
    ]
}

fn take_by(holder: &str) -> Request {
    Request::LeaseTake {
        tree: "t".into(),
        holder: holder.into(),
        ttl_ms: TTL,
    }
}

/// What one schedule did.
struct Schedule {
    /// Which instance (0 = a, 1 = b) was released at each step.
    choices: Vec<usize>,
    /// At each step, the instances that could have gone.
    ready: Vec<Vec<usize>>,
    /// The released commands in order: (instance, command text).
    commands: Vec<(usize, String)>,
    outcomes: [Result<Reply, StoreError>; 2],
    requests: [Request; 2],
    /// The model after the set-up, and the server time of the race.
    model: ContractModel,
    now: i64,
}

/// Whether some sequential order of the two operations explains both replies.
fn linearizable(s: &Schedule) -> Result<&'static str, String> {
    let mut why = Vec::new();
    for (order, name) in [([0usize, 1], "a then b"), ([1, 0], "b then a")] {
        let mut model = s.model.clone();
        let mut ok = true;
        for i in order {
            match model.judge(&s.requests[i], s.now, s.now, &s.outcomes[i]) {
                Judgement::Agrees | Judgement::Conservative(_) => {}
                Judgement::Violates(w) => {
                    why.push(format!("{name}: {} {w}", NAMES[i]));
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            return Ok(name);
        }
    }
    Err(why.join("; "))
}

fn command_text(args: &[Vec<u8>]) -> String {
    let text: Vec<String> = args
        .iter()
        .map(|a| {
            let s = String::from_utf8_lossy(a);
            if s.len() > 60 {
                format!(
                    "{}…",
                    &s[..s.char_indices().nth(57).map_or(s.len(), |(i, _)| i)]
                )
            } else {
                s.into_owned()
            }
        })
        .collect();
    text.join(" ")
}

pub(crate) async fn take_races(target: &Target<'_>, prefix: &str) -> Outcome {
    let Some(clock) = target.server.managed().and_then(|s| s.clock()) else {
        return Outcome::skipped(
            "needs a managed server: the races are judged at exact server instants \
             (the expiry instant) on a clock storeproof controls",
        );
    };
    let mut evidence = Vec::new();
    let mut run = 0usize;
    for race in races() {
        let mut stack: Vec<Vec<usize>> = vec![vec![]];
        let mut explored = Vec::new();
        while let Some(prefix_choices) = stack.pop() {
            if explored.len() >= MAX_SCHEDULES {
                break;
            }
            run += 1;
            let schedule_prefix = format!("{prefix}r{run}:");
            let start = clock.now_ms() + 86_400_000;
            clock.set_ms(start);
            let s = match run_schedule(
                target,
                &race,
                &schedule_prefix,
                &prefix_choices,
                clock,
                start,
            )
            .await
            {
                Ok(s) => s,
                Err(e) => {
                    return Outcome::fail(
                        format!("{}: {e}", race.name),
                        json!({"races": evidence}),
                        None,
                    )
                }
            };
            for i in prefix_choices.len()..s.choices.len() {
                for alt in &s.ready[i] {
                    if *alt != s.choices[i] {
                        let mut p = s.choices[..i].to_vec();
                        p.push(*alt);
                        stack.push(p);
                    }
                }
            }
            let commands: Vec<Value> = s
                .commands
                .iter()
                .map(|(i, c)| json!({"instance": NAMES[*i], "command": c}))
                .collect();
            let record = json!({
                "commands": commands,
                "a": {"call": s.requests[0].to_call(), "answer": outcome_json(&s.outcomes[0])},
                "b": {"call": s.requests[1].to_call(), "answer": outcome_json(&s.outcomes[1])},
            });
            match linearizable(&s) {
                Ok(_) => explored.push(record),
                Err(why) => {
                    let reason = format!(
                        "{}: no sequential order explains the replies after the interleaving {}: {why}",
                        race.name,
                        s.commands
                            .iter()
                            .map(|(i, c)| format!("{}:{}", NAMES[*i], c.split(' ').next().unwrap_or("")))
                            .collect::<Vec<_>>()
                            .join(" → ")
                    );
                    evidence.push(json!({"race": race.name, "schedules": explored.len() + 1}));
                    return Outcome::fail(
                        reason,
                        json!({"races": evidence, "failing": record}),
                        Some(json!({
                            "kind": "take-race",
                            "race": race.name,
                            "commands": record["commands"],
                            "a": record["a"],
                            "b": record["b"],
                        })),
                    );
                }
            }
        }
        evidence.push(json!({
            "race": race.name,
            "schedules": explored.len(),
            "interleavings": explored,
        }));
    }
    let summary: Vec<String> = evidence
        .iter()
        .map(|e| {
            format!(
                "{} ({} schedules)",
                e["race"].as_str().unwrap_or(""),
                e["schedules"]
            )
        })
        .collect();
    Outcome::pass(
        format!(
            "every interleaving was linearizable: {}",
            summary.join(", ")
        ),
        json!({"races": evidence}),
    )
}

async fn run_schedule(
    target: &Target<'_>,
    race: &Race,
    prefix: &str,
    forced: &[usize],
    clock: &crate::server::VirtualClock,
    start: i64,
) -> Result<Schedule, String> {
    let url = target.server.url();
    let gates = [
        Gate::start(&url).await.map_err(|e| e.to_string())?,
        Gate::start(&url).await.map_err(|e| e.to_string())?,
    ];
    let mut clients: Vec<Box<dyn StoreClient>> = Vec::new();
    for (i, name) in ["a", "b"].iter().enumerate() {
        clients.push(
            target
                .connect_via(name, prefix, &gates[i].url(), start)
                .await?,
        );
    }
    // Set-up, judged, through a's gate in pass-through.
    let mut model = ContractModel::default();
    let mut epochs = Vec::new();
    for req in &race.setup {
        let out = clients[0].call(&req.to_call(), start).await;
        if let Judgement::Violates(w) = model.judge(req, start, start, &out) {
            return Err(format!("the set-up {} failed: {w}", req.op()));
        }
        if let Ok(Reply::Granted { epoch, .. }) = out {
            epochs.push(epoch);
        }
    }
    let now = start + race.advance_after_setup;
    clock.set_ms(now);
    let requests = [(race.a)(&epochs), (race.b)(&epochs)];
    for g in &gates {
        g.set_mode(Mode::Hold);
    }
    let mut tasks = Vec::new();
    for (i, mut client) in clients.into_iter().enumerate() {
        let call = requests[i].to_call();
        tasks.push(tokio::spawn(async move {
            let out = client.call(&call, now).await;
            (client, out)
        }));
    }
    let mut choices = Vec::new();
    let mut ready_sets = Vec::new();
    let mut commands = Vec::new();
    let mut finished: [Option<Result<Reply, StoreError>>; 2] = [None, None];
    loop {
        // Wait until every running operation is either held at its gate or done.
        let deadline = Instant::now() + STEP_TIMEOUT;
        let ready: Vec<usize> = loop {
            for i in 0..2 {
                if finished[i].is_none() && tasks[i].is_finished() {
                    let joined = (&mut tasks[i]).await;
                    finished[i] = Some(match joined {
                        Ok((_client, out)) => out,
                        Err(e) => return Err(format!("instance {} panicked: {e}", NAMES[i])),
                    });
                }
            }
            let held: Vec<bool> = gates.iter().map(|g| !g.held().is_empty()).collect();
            let settled = (0..2).all(|i| finished[i].is_some() || held[i]);
            if settled {
                break (0..2)
                    .filter(|i| held[*i] && finished[*i].is_none())
                    .collect();
            }
            if Instant::now() > deadline {
                let stuck: Vec<&str> = (0..2)
                    .filter(|i| finished[*i].is_none() && !held[*i])
                    .map(|i| NAMES[i])
                    .collect();
                for g in &gates {
                    g.release_all();
                }
                return Err(format!(
                    "instance {} neither answered nor sent a command within {}s",
                    stuck.join(", "),
                    STEP_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        if ready.is_empty() {
            break;
        }
        let step = choices.len();
        let pick = match forced.get(step) {
            Some(f) if ready.contains(f) => *f,
            Some(f) => {
                return Err(format!(
                    "the store sent different commands on a re-run: instance {} has no command at step {step}",
                    NAMES[*f]
                ))
            }
            None => ready[0],
        };
        let held = gates[pick].held();
        let Some(first) = held.first() else {
            continue;
        };
        commands.push((pick, command_text(&first.command.args)));
        choices.push(pick);
        ready_sets.push(ready);
        gates[pick].release(first.id).map_err(|e| e.to_string())?;
        // Let the released command's reply arrive before looking again.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for g in gates {
        g.shutdown().await;
    }
    let [Some(a), Some(b)] = finished else {
        return Err("an operation did not finish".into());
    };
    Ok(Schedule {
        choices,
        ready: ready_sets,
        commands,
        outcomes: [a, b],
        requests,
        model,
        now,
    })
}
