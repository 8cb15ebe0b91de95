//! Re-running a schedule from the start on a world of its own: a
//! counterexample's proof, and `storeproof replay`.

use super::*;

/// Plays a schedule and renders its steps and its history.
pub(super) fn replay_path(
    model: &LeaseModel,
    actions: &[Action],
) -> (State, Vec<ExplorerStep>, History) {
    let mut start = State::initial(model.start_ms, &model.skews);
    start.drawn = Some(model.shared.drawn.values());
    let mut state = start.clone();
    let mut pairs = Vec::new();
    for a in actions {
        state = model.step(&state, *a);
        pairs.push((*a, state.clone()));
    }
    let rendered = render(&start, &pairs);
    let history = history_of(&start, &pairs);
    (state, rendered, history)
}

/// Re-runs a saved schedule on a fresh world; the final state says which
/// properties it broke.
pub fn replay_schedule(
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    schedule: &Schedule,
) -> (State, Vec<ExplorerStep>) {
    replay_schedule_on(None, factory, opt_out, prefix, schedule)
}

/// [`replay_schedule`] on a server of `server`'s kind (the run's; the
/// default binary when `None`).
pub fn replay_schedule_on(
    server: Option<ServerKind>,
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    schedule: &Schedule,
) -> (State, Vec<ExplorerStep>) {
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let shared = Shared::checking_on(factory, prefix, opt_out, Speed::FAST, 0, 0, server);
    let model = LeaseModel {
        run,
        shared,
        skews: schedule.skews.clone(),
        start_ms: START_MS,
        max_steps: usize::MAX,
        absolute_times: false,
        // A replay plays the saved actions: which contract's operations an
        // idle instance may start does not matter.
        contract: schedule
            .actions
            .iter()
            .find_map(|a| match a {
                Action::Start(_, op) | Action::Lose(_, op) => Some(op.contract()),
                _ => None,
            })
            .unwrap_or(Contract::Lease),
        symmetric: false,
        lost_replies: schedule
            .actions
            .iter()
            .any(|a| matches!(a, Action::Lose(..))),
        // A replay is the counterexample's proof: nothing a process
        // remembered from another schedule.
        fresh_processes: true,
        recompute: true,
        whole_operations: false,
    };
    let (_, last) = play(&model, &schedule.actions);
    let (_, rendered, _) = replay_path(&model, &schedule.actions);
    drop_world(run);
    (last, rendered)
}
