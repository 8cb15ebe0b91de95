//! The crash suite's figures: per setting, per kill, each kind of write
//! acknowledged and lost, in named units.
//!
//! Fields are declared in alphabetical order: `report.json` has always
//! written them so (it was built as a sorted JSON map), and a typed struct
//! serialises in declaration order.

use serde::{Deserialize, Serialize};

use crate::contract::Contract;

/// What one kill acknowledged and lost, each kind of write in its own unit.
/// An item counts once however many checks see its loss.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KillFigures {
    /// Children saved.
    pub children_acknowledged: usize,
    /// Saved children unknown to the restarted server.
    pub children_lost: usize,
    /// Saved children not judged (their read was answered `unsupported`).
    pub children_not_judged: usize,
    /// Claims answered `claimed`.
    pub claims_acknowledged: usize,
    /// Claims the restarted server does not show, or hands out again.
    pub claims_lost: usize,
    /// Acknowledged claims not judged (their read was answered `unsupported`).
    pub claims_not_judged: usize,
    /// Completes answered `completed`.
    pub completions_acknowledged: usize,
    /// Completed children not done after the restart, or handed out again.
    pub completions_lost: usize,
    /// Acknowledged completes not judged (their read was answered `unsupported`).
    pub completions_not_judged: usize,
    /// Takes granted (each a new epoch).
    pub epochs_acknowledged: usize,
    /// Granted epochs the restarted server no longer covers (its record, or
    /// the next take, is at or below them).
    pub epochs_lost: usize,
    /// Granted epochs whose record could not be read (`lease.read` answered
    /// `unsupported`); the next take may still judge them.
    pub epochs_not_judged: usize,
    /// Writes in flight at the kill: their outcome is unknown, nothing is
    /// judged on them.
    pub in_flight: usize,
    /// The kill's number in its setting, from 1 (in a total: the kills added).
    pub kill: usize,
    /// Pauses answered `paused`.
    pub pauses_acknowledged: usize,
    /// Pauses not in force after the restart.
    pub pauses_lost: usize,
    /// Acknowledged pauses not judged (their read was answered `unsupported`).
    pub pauses_not_judged: usize,
    /// Renews answered `renewed`.
    pub renews_acknowledged: usize,
    /// Judged renews whose expiry the restarted server does not honour.
    pub renews_lost: usize,
    /// Acknowledged renews not judged: their lease was released afterwards
    /// (or a release was in flight), they ended before the check, or their
    /// lease could not be read (`unsupported`).
    pub renews_not_judged: usize,
}

impl KillFigures {
    /// Items lost, of every kind.
    pub fn lost(&self) -> usize {
        self.epochs_lost
            + self.renews_lost
            + self.children_lost
            + self.claims_lost
            + self.completions_lost
            + self.pauses_lost
    }

    /// Items acknowledged, of every kind.
    pub fn acknowledged(&self) -> usize {
        self.epochs_acknowledged
            + self.renews_acknowledged
            + self.children_acknowledged
            + self.claims_acknowledged
            + self.completions_acknowledged
            + self.pauses_acknowledged
    }

    /// The figures of several kills added up (`kill` is the number of kills).
    pub fn total(kills: &[KillFigures]) -> KillFigures {
        let mut t = KillFigures {
            kill: kills.len(),
            ..KillFigures::default()
        };
        for k in kills {
            t.epochs_acknowledged += k.epochs_acknowledged;
            t.epochs_lost += k.epochs_lost;
            t.epochs_not_judged += k.epochs_not_judged;
            t.renews_acknowledged += k.renews_acknowledged;
            t.renews_not_judged += k.renews_not_judged;
            t.renews_lost += k.renews_lost;
            t.children_acknowledged += k.children_acknowledged;
            t.children_lost += k.children_lost;
            t.children_not_judged += k.children_not_judged;
            t.claims_acknowledged += k.claims_acknowledged;
            t.claims_lost += k.claims_lost;
            t.claims_not_judged += k.claims_not_judged;
            t.completions_acknowledged += k.completions_acknowledged;
            t.completions_lost += k.completions_lost;
            t.completions_not_judged += k.completions_not_judged;
            t.pauses_acknowledged += k.pauses_acknowledged;
            t.pauses_lost += k.pauses_lost;
            t.pauses_not_judged += k.pauses_not_judged;
            t.in_flight += k.in_flight;
        }
        t
    }

    /// The figures in words: `epochs acknowledged 41, lost 0; renews …`.
    pub fn sentence(&self) -> String {
        self.sentence_of(&Contract::COORDINATION)
    }

    /// The figures of the writes of `contracts` in words (the others are
    /// never written, so their zeros say nothing); writes acknowledged but
    /// not judged are named (`renews acknowledged 30, lost 0, not judged 24`).
    pub fn sentence_of(&self, contracts: &[Contract]) -> String {
        let kind = |name: &str, acked: usize, lost: usize, not_judged: usize| {
            let mut s = format!("{name} {acked}, lost {lost}");
            if not_judged > 0 {
                s.push_str(&format!(", not judged {not_judged}"));
            }
            s
        };
        let mut parts = Vec::new();
        if contracts.contains(&Contract::Lease) {
            parts.push(kind(
                "epochs acknowledged",
                self.epochs_acknowledged,
                self.epochs_lost,
                self.epochs_not_judged,
            ));
            parts.push(kind(
                "renews acknowledged",
                self.renews_acknowledged,
                self.renews_lost,
                self.renews_not_judged,
            ));
        }
        if contracts.contains(&Contract::Queue) {
            parts.push(kind(
                "children saved",
                self.children_acknowledged,
                self.children_lost,
                self.children_not_judged,
            ));
            parts.push(kind(
                "claims acknowledged",
                self.claims_acknowledged,
                self.claims_lost,
                self.claims_not_judged,
            ));
            parts.push(kind(
                "completions acknowledged",
                self.completions_acknowledged,
                self.completions_lost,
                self.completions_not_judged,
            ));
        }
        if contracts.contains(&Contract::Rate) {
            parts.push(kind(
                "pauses acknowledged",
                self.pauses_acknowledged,
                self.pauses_lost,
                self.pauses_not_judged,
            ));
        }
        parts.join("; ")
    }
}

/// The kills of one setting on one server.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeriesFigures {
    /// Items acknowledged over every kill done.
    pub acknowledged: usize,
    /// The kills asked for.
    pub asked: usize,
    /// Kills done (fewer than asked when `trouble` stopped the series).
    pub kills: usize,
    /// Kills that lost at least one acknowledged item.
    pub kills_showing_loss: usize,
    /// Items lost over every kill done.
    pub lost: usize,
    /// One row per kill done, in order.
    pub per_kill: Vec<KillFigures>,
    /// The rows added up.
    pub total: KillFigures,
    /// Harness trouble that stopped the series early, if any.
    pub trouble: Option<String>,
}

impl SeriesFigures {
    /// The figures of a series of kills, `asked` of them wanted, stopped by
    /// `trouble` if any.
    pub fn of(per_kill: Vec<KillFigures>, asked: usize, trouble: Option<String>) -> SeriesFigures {
        let total = KillFigures::total(&per_kill);
        SeriesFigures {
            acknowledged: total.acknowledged(),
            asked,
            kills: per_kill.len(),
            kills_showing_loss: per_kill.iter().filter(|k| k.lost() > 0).count(),
            lost: total.lost(),
            per_kill,
            total,
            trouble,
        }
    }
}

/// The simulated power cuts, each setting on its own.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PowerLossFigures {
    /// With the required settings (`appendfsync always`): nothing may be lost.
    pub always: SeriesFigures,
    /// Always `process`: only it sees the server's fsyncs.
    pub backend: String,
    /// With `appendfsync everysec` and the opt-out: the store's figures,
    /// reported beside the reference store's.
    pub everysec_opted_out: SeriesFigures,
    /// The same power cuts as they hit storeproof's reference store: the
    /// loss should show there.
    pub everysec_reference: SeriesFigures,
}

/// After each kill with the required settings, a new instance of the store
/// tried while the server was down: its hello, then one write.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DownServerFigures {
    /// Kills after which its hello and its write were answered ok (a store
    /// whose state is on that server cannot).
    pub acknowledged: usize,
    /// Kills after which it was tried.
    pub probes: usize,
    /// Of those, the ones where its hello or its write answered an error.
    pub refused: usize,
    /// Of those, the ones where it gave no answer in time.
    pub silent: usize,
    /// Of those, the ones where its write was answered ok but storeproof's
    /// own server answered `PING` too (the kill had not held): not judged.
    pub server_up: usize,
}

/// The crash suite's figures in the report's `stats.crash`: the kills with
/// the required settings at the top level (as the first reports had them),
/// the other settings beside them.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CrashFigures {
    /// Items acknowledged over the kills with the required settings.
    pub acknowledged: usize,
    /// Where the required-settings kills ran: `docker` or `process`.
    pub backend: String,
    /// The contracts the store claimed: the only ones written.
    pub contracts: Vec<Contract>,
    /// Why Docker was not used when it was wanted (auto fell back).
    pub docker_unavailable: Option<String>,
    /// What new instances of the store did while the killed server was
    /// down (`crash.down-server-unavailable`); boxed, as the other series.
    pub down_server: Box<DownServerFigures>,
    /// Kills done with the required settings.
    pub kills: usize,
    /// Items lost over the kills with the required settings.
    pub lost: usize,
    /// The kills with the append-only file off and the opt-out given
    /// (boxed, as the power cuts: figures of every suite share one enum).
    pub opt_out: Box<SeriesFigures>,
    /// The same kills as they hit storeproof's reference store (the built-in
    /// Redis store), written beside the store on the same server: its loss,
    /// not the store's, is what shows that the kills are real.
    pub opt_out_reference: Box<SeriesFigures>,
    /// One row per kill with the required settings.
    pub per_kill: Vec<KillFigures>,
    /// The simulated power cuts.
    pub power_loss: Box<PowerLossFigures>,
    /// Wall time of the suite, in seconds (ms precision).
    pub seconds: f64,
    /// The seed of the kill moments and writers.
    pub seed: u64,
    /// The required-settings rows added up (boxed, as the series: figures
    /// of every suite share one enum).
    pub total: Box<KillFigures>,
    /// Harness trouble that stopped the required-settings kills, if any.
    pub trouble: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_figures_read_in_named_units_and_add_up() {
        let k = KillFigures {
            kill: 1,
            epochs_acknowledged: 41,
            children_acknowledged: 30,
            children_lost: 2,
            ..KillFigures::default()
        };
        assert_eq!(k.lost(), 2);
        assert!(
            k.sentence().starts_with(
                "epochs acknowledged 41, lost 0; renews acknowledged 0, lost 0; children saved 30, lost 2"
            ),
            "{}",
            k.sentence()
        );
        let s = SeriesFigures::of(vec![k.clone(), KillFigures { kill: 2, ..k }], 3, None);
        assert_eq!(
            (
                s.kills,
                s.asked,
                s.total.epochs_acknowledged,
                s.lost,
                s.kills_showing_loss
            ),
            (2, 3, 82, 4, 2)
        );
    }

    #[test]
    fn figures_in_words_name_only_the_claimed_kinds() {
        let k = KillFigures {
            pauses_acknowledged: 12,
            ..KillFigures::default()
        };
        assert_eq!(
            k.sentence_of(&[Contract::Rate]),
            "pauses acknowledged 12, lost 0"
        );
    }

    #[test]
    fn the_json_keeps_the_names_reports_and_tests_read() {
        let f = CrashFigures {
            backend: "process".into(),
            total: Box::new(KillFigures {
                pauses_acknowledged: 20,
                ..KillFigures::default()
            }),
            ..CrashFigures::default()
        };
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["backend"], "process");
        assert_eq!(v["total"]["pauses_acknowledged"], 20);
        assert!(v["power_loss"]["everysec_opted_out"]["per_kill"].is_array());
        assert!(v["trouble"].is_null() && v["docker_unavailable"].is_null());
        // A partial `stats.crash` (an older report) still reads.
        let partial: CrashFigures = serde_json::from_value(serde_json::json!({
            "backend": "docker", "kills": 1,
            "power_loss": {"always": {"kills": 0, "trouble": "gone"}}
        }))
        .unwrap();
        assert_eq!(partial.power_loss.always.trouble.as_deref(), Some("gone"));
    }
}
