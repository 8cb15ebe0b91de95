//! What an exploration's verdicts rest on, in words: the schedules
//! searched, each reduction that took states as one with what checked it,
//! how adapter processes were kept, and where schedules were cut. Every
//! PASS of the explorer says this, so that "every schedule" is never said
//! of a search that merged states without saying how.

use harness::contract::Contract;
use harness::figures::ExplorerFigures;

use crate::run::config::ExplorerConfig;

/// The scope of what held for `contract`'s checks (the lease's for a check
/// of no contract): the schedules searched and walked, then each reduction
/// that was used with what checked it, then the cuts. `step` and `part`
/// name a replayed step and a shard.
pub(crate) fn scope(
    figures: &ExplorerFigures,
    config: &ExplorerConfig,
    contract: Option<Contract>,
    step: Option<&str>,
    part: Option<&str>,
) -> String {
    let reductions: Vec<String> = [
        time_reading(figures, config),
        symmetry_reading(figures, config),
        drawn_reading(figures, config),
        fused_reading(figures),
        behaviour_reading(config),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut scope = format!(
        "every schedule of two instances {} steps deep for {} clock skew{}{}{}, and {} seeded walks of three (seed {})",
        config.depth_of(contract.unwrap_or(Contract::Lease)),
        config.skews.len(),
        if config.skews.len() == 1 { "" } else { "s" },
        chosen_skews(config),
        if reductions.is_empty() {
            ""
        } else {
            ", up to the reductions named below"
        },
        config.walks,
        config.seed
    );
    if config.three_depth > 0 {
        scope.push_str(&format!(
            ", and every schedule of three instances {} steps deep",
            config.three_depth
        ));
    }
    let whole = figures
        .per_skew
        .iter()
        .filter(|r| r.whole_operations_states > 0)
        .filter(|r| r.contract == contract.unwrap_or(Contract::Lease).name())
        .count();
    if whole > 0 {
        // Not a reduction: a second search, of other schedules.
        scope.push_str(&format!(
            ", and, for the {whole} search{} that left a race unreached (the store's operations take several commands each), every schedule of whole operations (an operation's commands back to back) as many operations deep",
            if whole == 1 { "" } else { "es" }
        ));
    }
    if let Some(step) = step {
        scope.push_str(&format!(" ({step})"));
    }
    if let Some(part) = part {
        scope.push_str(&format!("; {part}"));
    }
    if !reductions.is_empty() {
        scope.push_str(&format!("; reductions: {}", reductions.join("; ")));
    }
    if let Some(memory) = memory_reading(figures) {
        scope.push_str(&format!("; {memory}"));
    }
    // Schedules through a violating state stop there: what held, held
    // only as far as they went.
    match cuts_of(figures) {
        Some(cuts) => format!("every schedule explored ({scope}), but {cuts}"),
        None => scope,
    }
}

/// How instances of one clock were folded by renaming, in words: `None`
/// when no search folded a state (folding off, or no two instances of one
/// clock).
fn symmetry_reading(figures: &ExplorerFigures, config: &ExplorerConfig) -> Option<String> {
    let merges: usize = figures.per_skew.iter().map(|r| r.symmetric_merges).sum();
    if let Some(why) = figures
        .per_skew
        .iter()
        .find_map(|r| r.symmetry_failure.as_ref())
    {
        return Some(format!(
            "folding renamed instances was given up where a state and its renaming went on differently ({why}); those searches kept every state apart"
        ));
    }
    (merges > 0).then(|| {
        format!(
            "states that differ only by a renaming of instances of one clock were taken as one ({merges} such merges; this assumes the store treats holder names alike, checked one step ahead on the seeded sample of merges, up to {} a level, shared with the time merges; asked for with --symmetry)",
            config.shift_checks_per_level
        )
    })
}

/// How values the store drew at random were read, in words: `None` for a
/// store that drew none.
fn drawn_reading(figures: &ExplorerFigures, config: &ExplorerConfig) -> Option<String> {
    if let Some(why) = figures
        .per_skew
        .iter()
        .find_map(|r| r.drawn_failure.as_ref())
    {
        return Some(format!(
            "reading the values the store drew up to a renaming was given up where two states it took as one went on differently ({why}); from that search on every byte counted"
        ));
    }
    let values = figures
        .per_skew
        .iter()
        .map(|r| r.drawn_values)
        .max()
        .unwrap_or(0);
    let merges: usize = figures.per_skew.iter().map(|r| r.drawn_merges).sum();
    (values > 0).then(|| {
        format!(
            "states that differ only by a renaming of values the store drew at random were taken as one ({values} such values, learnt where two runs of one operation from one state sent different tokens; {merges} such merges; this assumes the store only compares what it draws for equality, checked one step ahead on the seeded sample of merges, up to {} a level, shared with the time merges)",
            config.shift_checks_per_level
        )
    })
}

/// How steps were taken from the store's recorded behaviour, in words:
/// `None` with the caches off.
/// The partial-order reduction of commands only an operation's own
/// connection sees ([`crate::fused`]), in words: `None` when the store sent
/// none.
fn fused_reading(figures: &ExplorerFigures) -> Option<String> {
    (figures.fused_steps > 0).then(|| {
        format!(
            "an operation's commands that only its own connection sees (MULTI, a command queued in a transaction, UNWATCH, DISCARD; TIME, with time moving or not) ran as soon as they were next, costing no step ({} such steps): they commute with every other instance's command (a queued one not with the server filling, kept beside it), so each schedule is one of those moved, its answers alike and each operation answering no later",
            figures.fused_steps
        )
    })
}

fn behaviour_reading(config: &ExplorerConfig) -> Option<String> {
    if !config.cache {
        return None;
    }
    Some(if config.cache_check_one_in == 0 {
        "a step whose request, clock and replies the store was given before was taken from what it did then, unchecked".to_string()
    } else {
        format!(
            "a step whose request, clock and replies the store was given before was taken from what it did then (this assumes the store's operation is a function of what it is given: a seeded sample, one in {}, runs the store again and must agree, and a store seen doing otherwise has every such step run)",
            config.cache_check_one_in
        )
    })
}

/// Where the schedules through a violating state were cut, in words, for
/// the scope of what held: `None` when no search or walk was cut.
pub(crate) fn cuts_of(figures: &ExplorerFigures) -> Option<String> {
    let rows: Vec<String> = figures
        .per_skew
        .iter()
        .filter(|r| r.violating_states_cut > 0)
        .map(|r| {
            format!(
                "{} under second clock {:+} ms, the shallowest at depth {}",
                r.violating_states_cut,
                r.skew_ms,
                r.shallowest_cut.unwrap_or(0)
            )
        })
        .collect();
    let mut said = Vec::new();
    if !rows.is_empty() {
        let total: usize = figures
            .per_skew
            .iter()
            .map(|r| r.violating_states_cut)
            .sum();
        said.push(format!(
            "schedules through a state that broke a property were not followed past it ({total} such states: {})",
            rows.join("; ")
        ));
    }
    if figures.walks_cut > 0 {
        said.push(format!(
            "{} of the {} walks ended early at a state that broke a property",
            figures.walks_cut, figures.walks
        ));
    }
    (!said.is_empty()).then(|| said.join("; "))
}

/// How the searches read times, in words: relative to now where states a
/// shift of every time by whole seconds apart, or apart only in times
/// further back than [`crate::FAR_PAST_MS`] (plus the largest skew: the
/// fingerprint's `far_past_ms`), were taken as one (a reduction, checked one
/// step ahead on a seeded sample of its merges), absolutely where they were
/// told apart (no reduction: after a merge went on differently, or asked
/// for). `None` when every search read absolute times unasked.
fn time_reading(figures: &ExplorerFigures, config: &ExplorerConfig) -> Option<String> {
    let skews = |absolute: bool| -> Vec<String> {
        let mut v: Vec<String> = figures
            .per_skew
            .iter()
            .filter(|r| r.absolute_times == absolute)
            .map(|r| format!("{:+}", r.skew_ms))
            .collect();
        v.dedup();
        v
    };
    let (relative, absolute) = (skews(false), skews(true));
    let checked: usize = figures.per_skew.iter().map(|r| r.shift_checked).sum();
    let failure = figures
        .per_skew
        .iter()
        .find_map(|r| r.shift_failure.as_ref());
    let mut said = Vec::new();
    if !relative.is_empty() {
        said.push(if config.shift_checks_per_level == 0 {
            format!(
                "under second clock {} ms states that differ only by a shift of every time by whole seconds, or only in times more than {} ms before every instance's clock, were taken as one, unchecked",
                relative.join(", "),
                crate::FAR_PAST_MS
            )
        } else {
            format!(
                "under second clock {} ms states that differ only by a shift of every time by whole seconds, or only in times more than {} ms before every instance's clock, were taken as one (sound for a store that reads time in milliseconds or whole seconds and never that far back), checked on {checked} such merges drawn with the seed (up to {} a level: the successors of both agreed one step ahead)",
                relative.join(", "),
                crate::FAR_PAST_MS,
                config.shift_checks_per_level
            )
        });
    }
    match failure {
        Some(why) => said.push(format!(
            "under second clock {} ms states were told apart by absolute time: the store's answers do not shift with every time ({why})",
            absolute.join(", ")
        )),
        None if !absolute.is_empty() && !relative.is_empty() => said.push(format!(
            "under second clock {} ms states were told apart by absolute time",
            absolute.join(", ")
        )),
        None => {}
    }
    (!said.is_empty()).then(|| said.join("; "))
}

/// How adapter processes that may remember were kept, in words: on trial
/// and checked, or given up for a fresh process per operation. `None` for a
/// store whose clients keep nothing (no search kept one on trial).
fn memory_reading(figures: &ExplorerFigures) -> Option<String> {
    if let Some(why) = figures
        .per_skew
        .iter()
        .find_map(|r| r.memory_failure.as_ref())
    {
        return Some(format!(
            "what an adapter process kept between operations remembered mattered ({why}): from that search on, each operation ran on a fresh process"
        ));
    }
    let checked: usize = figures.per_skew.iter().map(|r| r.memory_checked).sum();
    (checked > 0).then(|| {
        format!(
            "adapter processes were kept between operations on trial, checked on {checked} steps computed again on other processes (they agreed)"
        )
    })
}

/// The skews searched, named when they are not the default seven (a run
/// that chose fewer must say which it decided on).
fn chosen_skews(config: &ExplorerConfig) -> String {
    if config.skews == crate::skews() {
        return String::new();
    }
    let named: Vec<String> = config.skews.iter().map(|s| format!("{s:+}")).collect();
    format!(
        " ({} ms, not the default {})",
        named.join(", "),
        crate::skews().len()
    )
}
