//! Delivering an instance's next command: from what the store did before
//! (the behaviour cache), on the store with the command held at the gate,
//! with its reply lost, or stopped between two commands (abandoned).

use super::*;

impl Inner {
    /// Delivers the next command of instance `i`'s operation `op`, whose first
    /// commands `delivered` already reached the server (their effects are in
    /// the restored keyspace): they are answered from the recording.
    ///
    /// With the cache, when the store sent a command last time it was given
    /// the same request and replies (at any clock), and the cache holds that
    /// command's outcome in this server state, the gate is told to answer it
    /// from the cache: if the store sends exactly those bytes it gets the
    /// server's recorded reply with no round trip; if it sends others (its
    /// clock mattered), the guess is dropped and the step runs again
    /// against the server (`guess` false).
    pub(super) async fn deliver(
        &mut self,
        next: &mut State,
        i: usize,
        pending: Pending,
        guess: bool,
    ) -> Result<(), String> {
        // An operation left in flight goes on on its process: cheaper than
        // any run from the start, and it keeps the chain's process.
        let pending = if self.live.is_none() && self.shared.speed.cache && guess && !self.recompute
        {
            let invoked = pending.invoked();
            let req = request_as_invoked(next, i, pending.op, invoked.acked_before);
            match self.replayed_behaviour(next, i, pending, &req, invoked) {
                Ok(()) => return Ok(()),
                Err(pending) => pending,
            }
        } else {
            pending
        };
        Box::pin(self.deliver_on_store(next, i, pending, guess)).await
    }

    /// Computes instance `i`'s step `pending` from what the store did
    /// before given the same request, clock and replies, when the command
    /// it sent then has a cached outcome in this server state: no call to
    /// the store, no round trip. A store's operation is a function of what
    /// it is given (the replay of an operation's first commands relies on
    /// it, and a seeded sample of such steps runs the store again to
    /// check it, [`TransitionCache::behaviour`]). `Err` gives `pending`
    /// back, nothing changed, when something is not recorded.
    pub(super) fn replayed_behaviour(
        &mut self,
        next: &mut State,
        i: usize,
        pending: Pending,
        req: &Request,
        invoked: judge::Invoked,
    ) -> Result<(), Pending> {
        let cache = &self.shared.cache;
        let trusted = self.shared.trusts_memory();
        let first = behaviour_key(i, req, &pending.delivered, pending.clock_ms);
        let Some(Next::Send(command)) = cache.behaviour(&first, trusted) else {
            return Err(pending);
        };
        let input = Input::Command {
            instance: i,
            command: crate::state::cache_command(&pending.delivered, pending.watch.dirty, &command),
            full: next.full,
        };
        let Some(outcome) = cache.get(&next.keys, next.now, &input) else {
            return Err(pending);
        };
        if cache.would_check(&next.keys, next.now, &input, &outcome) {
            return Err(pending);
        }
        let Some(reply) = outcome.reply.clone() else {
            return Err(pending);
        };
        let exchange = harness::gate::Exchange { command, reply };
        let mut delivered = pending.delivered.clone();
        delivered.push(exchange);
        let then = behaviour_key(i, req, &delivered, pending.clock_ms);
        let Some(after) = cache.behaviour(&then, trusted) else {
            return Err(pending);
        };
        self.shared
            .behaviour_answers
            .fetch_add(1, Ordering::Relaxed);
        next.keys = outcome.keys.clone();
        let text = delivered
            .last()
            .map(|e| vec![format!("{}", e.command)])
            .unwrap_or_default();
        match after {
            Next::Answer(out) => answered(next, i, pending.op, req, out, text, invoked),
            Next::Send(more) => {
                next.insts[i].pending = Some(pending.advanced(delivered, &next.keys, &more));
                next.note = Note {
                    commands: text,
                    answer: None,
                };
            }
        }
        Ok(())
    }

    /// Records what instance `i`'s operation did next given `key` (on its
    /// client as it is now: on trial or not). A record it contradicts,
    /// where a process kept on trial did either, is what that process
    /// remembered: the exploration stops trusting such processes. Between
    /// processes not on trial it is the store's own choice (a name drawn
    /// at random): the record is used no more.
    pub(super) fn record_behaviour(&mut self, i: usize, key: BehaviourKey, next: Next) {
        if matches!(&next, Next::Answer(Err(e)) if e.kind == ErrorKind::AdapterFailed) {
            return;
        }
        let on_trial = self.on_trial[i];
        if let Some((difference, true)) = self.shared.cache.behaved(key, next, on_trial) {
            self.shared.distrust(format!(
                "instance {}'s operation, given the same request, clock and replies, {difference}",
                instance_name(i)
            ));
        }
    }

    /// [`Inner::deliver`] on the store: the operation runs on its client.
    pub(super) async fn deliver_on_store(
        &mut self,
        next: &mut State,
        i: usize,
        pending: Pending,
        guess: bool,
    ) -> Result<(), String> {
        if let Some(live) = self.live.take() {
            return self.go_on(next, i, pending, live).await;
        }
        let use_cache = self.shared.speed.cache;
        let run = Run::of(next, i, pending);
        let Run {
            op,
            clock_ms,
            invoked,
            ..
        } = run;
        let gate = self.gates[i].clone();
        // The run starts from the operation's first command: no
        // transaction is open until the replay opens it again.
        gate.reset_transactions();
        gate.set_watch_dirty(run.watch.dirty);
        let client = match self.client(i, clock_ms).await {
            Ok(_) => self.clients[i].take().ok_or("no client")?,
            Err(e) => return Err(e),
        };
        gate.clear_recording();
        gate.clear_faults();
        let replayed = run.delivered.len();
        // The command guessed and its cached outcome in this server state.
        let guessed = if use_cache && guess {
            self.shared.cache.guess(&run.guess_key).and_then(|command| {
                let input = Input::Command {
                    instance: i,
                    command: crate::state::cache_command(&run.delivered, run.watch.dirty, &command),
                    full: next.full,
                };
                let outcome = self.shared.cache.get(&next.keys, next.now, &input)?;
                // An entry in the sample is not answered from the cache:
                // the command goes to the server, which must agree with it.
                if self
                    .shared
                    .cache
                    .would_check(&next.keys, next.now, &input, &outcome)
                {
                    return None;
                }
                let reply = outcome.reply.clone()?;
                Some((harness::gate::Exchange { command, reply }, outcome))
            })
        } else {
            None
        };
        match &guessed {
            Some((exchange, _)) => {
                let mut script = run.delivered.clone();
                script.push(exchange.clone());
                gate.replay_guessing(script, replayed);
            }
            // An empty script holds every command, as `Mode::Hold` does,
            // and clears the divergence of a wrong guess just retried: left
            // on the gate it would judge this re-run by the guessed command
            // (another skew's clock) and call the store not deterministic.
            None => gate.replay(run.delivered.clone()),
        }
        self.shared.store_runs.fetch_add(1, Ordering::Relaxed);
        let mut task = start_operation(client, run.req.to_call(), clock_ms);
        // Wait for the command to deliver (or for an answer without one).
        let first = next_event(&gate, &mut task).await;
        if let Some(d) = gate.divergence() {
            if guessed.is_some() && d.index == replayed {
                // Not the store's fault: the guess was wrong (its command
                // depends on its clock). Its connection was reset; whatever
                // it sends until its operation ends is reset too, never
                // sent, and a fresh client runs the step against the server.
                self.shared.cache.saw(run.guess_key.clone(), &d.got);
                gate.inject(FaultRule::always(Fault::ResetBeforeSend));
                gate.set_mode(Mode::PassThrough);
                // An operation that answered already has nothing to wait for.
                let ended = matches!(first, Ok(Step::Answered(..)));
                if !ended && tokio::time::timeout(STEP_TIMEOUT, &mut task).await.is_err() {
                    task.abort();
                    let _ = task.await;
                }
                gate.clear_faults();
                // Not needed if every reset held, but a restore is cheap.
                self.holds = None;
                return Box::pin(self.deliver(next, i, run.retry, false)).await;
            }
            gate.release_all();
            task.abort();
            if self.remembered(i, &d) {
                self.holds = None;
                return Box::pin(self.deliver(next, i, run.retry, guess)).await;
            }
            return Err(format!(
                "the store is not deterministic: instance {} {d}",
                instance_name(i)
            ));
        }
        let first = first?;
        // What the operation sent a value drawn at random in, renamed by
        // the replay: the recorded value was drawn.
        self.shared.drawn.renamed(&gate.renamed());
        if let Some(probed) = self.probed.take() {
            if let Err(e) = self.probed_again(i, op, &probed, &first) {
                gate.release_all();
                task.abort();
                return Err(e);
            }
        }
        let again = match (&first, &guessed) {
            (Step::Held(h), None) => {
                let probe = !self.probing;
                self.shared.drawn.held(op, replayed, &h.command, probe) == Probe::Again
            }
            _ => false,
        };
        if again {
            // First seen at this place of an operation: stopped before it
            // reaches the server, and run again to see whether it draws
            // something there.
            if let Step::Held(h) = first {
                let probed = Probed::of(&h, self.on_trial[i]);
                self.abandon(i, h, task, clock_ms).await;
                return self.probe(next, i, run.retry, probed).await;
            }
        }
        let answered_from_cache = gate.replay_remaining() == 0 && gate.recording().len() > replayed;
        let (exchange, after) =
            if let Some((exchange, outcome)) = guessed.filter(|_| answered_from_cache) {
                // The store sent the guessed command and got the cached reply:
                // the server was not touched.
                self.shared.cache_answers.fetch_add(1, Ordering::Relaxed);
                next.keys = outcome.keys.clone();
                (exchange, first)
            } else {
                if gate.replay_remaining() > 0 {
                    // Answered before the script ran out: nothing is left to answer.
                    gate.replay(Vec::new());
                }
                let held = match first {
                    Step::Answered(client, out) => {
                        self.answered_unsent(next, i, (op, &run.req, invoked), client, out);
                        return Ok(());
                    }
                    Step::Held(h) => h,
                };
                let exchange = self.release_held(next, i, &run, &held, &mut task).await?;
                (exchange, next_event(&gate, &mut task).await?)
            };
        self.finish(next, i, run, exchange, after, task).await
    }

    /// Goes on with `live`, the operation the last step left in flight, as
    /// instance `i`'s step `pending` ([`Live::continues`] held): its held
    /// command released, as a run from the start would release it once its
    /// replies were replayed. A place of the operation first seen here is
    /// probed as such a run would probe it ([`crate::drawn`]): stopped,
    /// and run again from the start on a fresh process.
    async fn go_on(
        &mut self,
        next: &mut State,
        i: usize,
        pending: Pending,
        live: Live,
    ) -> Result<(), String> {
        let probe = !self.probing;
        let place = pending.delivered.len();
        if self
            .shared
            .drawn
            .held(pending.op, place, &live.held.command, probe)
            == Probe::Again
        {
            let probed = Probed::of(&live.held, self.on_trial[i]);
            self.abandon_live(live).await;
            return self.probe(next, i, pending, probed).await;
        }
        self.shared.live_steps.fetch_add(1, Ordering::Relaxed);
        let run = Run::of(next, i, pending);
        let Live { held, mut task, .. } = live;
        let gate = self.gates[i].clone();
        // Whether a watched key changed, as a run from the start is told.
        gate.set_watch_dirty(run.watch.dirty);
        let exchange = self.release_held(next, i, &run, &held, &mut task).await?;
        let after = next_event(&gate, &mut task).await?;
        self.finish(next, i, run, exchange, after, task).await
    }

    /// Runs instance `i`'s step `pending` again from its first command on
    /// a fresh process, a probe's second run: a value drawn once per
    /// process (a client token, as lock libraries name their owner)
    /// differs between processes only, and a kept process would send it
    /// again. `probed` is what the first run sent.
    async fn probe(
        &mut self,
        next: &mut State,
        i: usize,
        pending: Pending,
        probed: Probed,
    ) -> Result<(), String> {
        self.clients[i] = None;
        self.on_trial[i] = false;
        self.shared.probe_processes.fetch_add(1, Ordering::Relaxed);
        self.probing = true;
        self.probed = Some(probed);
        let out = Box::pin(self.deliver_on_store(next, i, pending, false)).await;
        self.probing = false;
        self.probed = None;
        out
    }

    /// A probe's second run of instance `i`'s operation `op` reached
    /// `first` from the same state, request, clock and replies as the run
    /// that sent `probed`: a store that decides on what it is given sends
    /// the same command again, up to the values it draws. Any other
    /// command (or an answer without one) came from something no replay
    /// gives back, such as the machine's clock or a counter in memory:
    /// the store is not deterministic, unless the first run's process was
    /// kept on trial, whose memory is then not trusted any more.
    fn probed_again(
        &mut self,
        i: usize,
        op: Op,
        probed: &Probed,
        first: &Step,
    ) -> Result<(), String> {
        let second = match first {
            Step::Held(h) => {
                let mut renaming = harness::gate::drawn::Renaming::default();
                if renaming.unify(&probed.command, &h.command) {
                    return Ok(());
                }
                format!("`{}`", h.command)
            }
            Step::Answered(..) => "no command (it answered)".to_string(),
        };
        let what = format!(
            "{}'s operation {}, run twice from the same state with the same request, clock and replies, sent `{}` the first time and {second} the second",
            instance_name(i),
            op.wire(),
            probed.command
        );
        if probed.on_trial {
            self.shared.distrust(format!(
                "instance {what} (its first process was kept from an earlier operation)"
            ));
            return Ok(());
        }
        Err(format!("the store is not deterministic: instance {what}"))
    }

    /// Abandons `live`: its held command refused, never sent.
    pub(super) async fn abandon_live(&mut self, live: Live) {
        self.abandon(live.i, live.held, live.task, live.clock_ms)
            .await;
    }

    /// Releases instance `i`'s `held` command of `run` to the server and
    /// waits for its reply: the keys after it read back, or taken from the
    /// transition cache where the server agreed with it.
    async fn release_held(
        &mut self,
        next: &mut State,
        i: usize,
        run: &Run,
        held: &Held,
        task: &mut Operation,
    ) -> Result<harness::gate::Exchange, String> {
        let lazy = self.shared.speed.lazy();
        let use_cache = self.shared.speed.cache;
        let gate = self.gates[i].clone();
        let replayed = run.delivered.len();
        let input = Input::Command {
            instance: i,
            command: crate::state::cache_command(&run.delivered, run.watch.dirty, &held.command),
            full: next.full,
        };
        let before = next.keys.clone();
        let cached = if use_cache {
            self.shared.cache.saw(run.guess_key.clone(), &held.command);
            self.shared.cache.get(&next.keys, next.now, &input)
        } else {
            None
        };
        if lazy {
            self.ensure(next).await?;
            // What the command does to it is known once read back.
            self.holds = None;
        }
        self.rt();
        gate.release(held.id).map_err(|e| e.to_string())?;
        if !gate.wait_recorded(replayed + 1, STEP_TIMEOUT).await {
            task.abort();
            return Err(format!(
                "instance {}'s command {} got no reply within {}s",
                instance_name(i),
                held.command,
                STEP_TIMEOUT.as_secs()
            ));
        }
        let exchange = gate
            .recording()
            .last()
            .cloned()
            .ok_or("the gate recorded nothing")?;
        if lazy {
            // An entry in the sample: its keys after are read back
            // and compared too.
            let check = cached
                .as_ref()
                .filter(|hit| {
                    self.shared
                        .cache
                        .claim_check(&before, next.now, &input, hit)
                })
                .cloned();
            match cached {
                Some(hit) if check.is_none() && hit.agrees(&held.command, &exchange.reply) => {
                    // The server did what the cache says: no read back.
                    self.shared.cache_hits.fetch_add(1, Ordering::Relaxed);
                    next.keys = hit.keys.clone();
                    self.holds = Some(keyspace_of(&hit.keys));
                }
                _ => {
                    let clean = self.snapshot(next).await?;
                    // A cached reply the server no longer gives is
                    // counted and said, whether or not it was in
                    // the sample: the server went on as it did now.
                    let compared = match (&cached, &check) {
                        (_, Some(hit)) => Some(hit.differs(
                            Some((&held.command, &exchange.reply)),
                            clean.then_some(next.keys.as_slice()),
                        )),
                        (Some(hit), None) => {
                            Some(hit.differs(Some((&held.command, &exchange.reply)), None))
                        }
                        (None, None) => None,
                    };
                    if let Some(difference) = compared {
                        self.shared.checked(difference.map(|d| {
                            format!(
                                "instance {}'s `{}` at server time {}: {d}",
                                instance_name(i),
                                held.command,
                                next.now
                            )
                        }));
                    }
                    if use_cache && clean {
                        self.shared.cache.put(
                            &before,
                            next.now,
                            input,
                            Outcome::new(Some(exchange.reply.clone()), next.keys.clone()),
                        );
                    }
                }
            }
        }
        Ok(exchange)
    }

    /// Records what `run`'s operation did given its replies, and moves
    /// `next` on: the operation answered (judged, its client kept), or it
    /// holds its next command (left in flight, [`Live`]).
    async fn finish(
        &mut self,
        next: &mut State,
        i: usize,
        run: Run,
        exchange: harness::gate::Exchange,
        after: Step,
        task: Operation,
    ) -> Result<(), String> {
        let Run {
            op,
            clock_ms,
            delivered,
            retry,
            req,
            invoked,
            ..
        } = run;
        let use_cache = self.shared.speed.cache;
        let gate = self.gates[i].clone();
        let text = vec![format!("{}", exchange.command)];
        if use_cache {
            let then = match &after {
                Step::Answered(_, out) => Next::Answer(out.clone()),
                Step::Held(more) => Next::Send(more.command.clone()),
            };
            let first = behaviour_key(i, &req, &delivered, clock_ms);
            self.record_behaviour(i, first, Next::Send(exchange.command.clone()));
            let mut with = delivered.clone();
            with.push(exchange.clone());
            self.record_behaviour(i, behaviour_key(i, &req, &with, clock_ms), then);
        }
        match after {
            Step::Answered(client, out) => {
                self.keep(i, client, &out);
                gate.set_mode(Mode::PassThrough);
                answered(next, i, op, &req, out, text, invoked);
            }
            Step::Held(more) => {
                // The operation has more commands: remember what was
                // delivered.
                let mut delivered = delivered;
                delivered.push(exchange);
                let advanced = retry.advanced(delivered, &next.keys, &more.command);
                // Left in flight, its next command held: the next step
                // goes on with it if it is that command (a chain of
                // them, [`crate::model::LeaseModel::step_chained`]), else
                // it is abandoned then (the held command refused, never
                // sent).
                self.live = Some(Live {
                    i,
                    task,
                    held: more,
                    op,
                    clock_ms,
                    delivered: advanced.delivered.clone(),
                    watch: advanced.watch.clone(),
                    keys: crate::state::keys_digest(&next.keys),
                    now: next.now,
                    full: next.full,
                });
                next.insts[i].pending = Some(advanced);
                next.note = Note {
                    commands: text,
                    answer: None,
                };
            }
        }
        Ok(())
    }

    /// Delivers the next command of instance `i`'s operation `pending` and
    /// loses its reply: the server applies it, the gate closes the client's
    /// connection instead of answering. The operation then runs to its end
    /// with nothing else happening, its later commands (a retry on a
    /// connection of its own, as client libraries do) going straight to the
    /// server. Its answer is judged like any other; `unavailable` (the
    /// outcome unknown, docs/PROTOCOL.md §4) ends it without an answer, which
    /// may have taken effect or not ([`judge::ended_unanswered`]). The client
    /// is not kept: the next operation starts on a fresh one.
    pub(super) async fn deliver_lost(
        &mut self,
        next: &mut State,
        i: usize,
        pending: Pending,
    ) -> Result<(), String> {
        let retry = pending.clone();
        let invoked = pending.invoked();
        let Pending {
            op,
            clock_ms,
            delivered,
            watch,
            ..
        } = pending;
        let req = request_as_invoked(next, i, op, invoked.acked_before);
        let gate = self.gates[i].clone();
        gate.reset_transactions();
        gate.set_watch_dirty(watch.dirty);
        self.client(i, clock_ms).await?;
        let client = self.clients[i].take().ok_or("no client")?;
        self.used[i] = false;
        gate.clear_recording();
        gate.clear_faults();
        let replayed = delivered.len();
        gate.replay(delivered);
        let mut task = start_operation(client, req.to_call(), clock_ms);
        let first = next_event(&gate, &mut task).await;
        if let Some(d) = gate.divergence() {
            gate.release_all();
            task.abort();
            if self.remembered(i, &d) {
                self.holds = None;
                return Box::pin(self.deliver_lost(next, i, retry)).await;
            }
            return Err(format!(
                "the store is not deterministic: instance {} {d}",
                instance_name(i)
            ));
        }
        let held = match first? {
            Step::Answered(client, out) => {
                // Answered before a command of its own: no reply to lose.
                self.answered_unsent(next, i, (op, &req, invoked), client, out);
                return Ok(());
            }
            Step::Held(h) => h,
        };
        self.ensure(next).await?;
        self.holds = None;
        self.rt();
        gate.inject(FaultRule::once(Fault::DropReplyAfterApply));
        // The fault applies to the released command; whatever the
        // operation sends after it goes through.
        gate.release(held.id).map_err(|e| e.to_string())?;
        gate.set_mode(Mode::PassThrough);
        let out = match tokio::time::timeout(STEP_TIMEOUT, &mut task).await {
            Ok(Ok((_, out))) => out,
            _ => {
                task.abort();
                let _ = task.await;
                gate.clear_faults();
                return Err(format!(
                    "instance {}'s {} did not end within {}s after its reply was lost",
                    instance_name(i),
                    req.op(),
                    STEP_TIMEOUT.as_secs()
                ));
            }
        };
        gate.clear_faults();
        let commands: Vec<String> = gate
            .recording()
            .iter()
            .skip(replayed)
            .enumerate()
            .map(|(k, e)| {
                if k == 0 {
                    format!("{} (its reply lost: connection closed)", e.command)
                } else {
                    e.command.to_string()
                }
            })
            .collect();
        self.snapshot(next).await?;
        match &out {
            Err(e) if e.kind == ErrorKind::Unavailable => {
                judge::ended_unanswered(next, i, op, clock_ms);
                next.note = Note {
                    commands,
                    answer: Some(out),
                };
            }
            _ => answered(next, i, op, &req, out, commands, invoked),
        }
        Ok(())
    }

    /// Abandons instance `i`'s operation `task`, whose next command `held`
    /// waits at its gate: that command is refused with an error reply, never
    /// sent, and so is every other scheduled command until the operation
    /// answered (a store that retries must not reach the server behind the
    /// explorer's back). Refused rather than reset, the connection stays
    /// open and in step, so the adapter needs no new connection.
    ///
    /// The instance is kept for the next step only if it answered having
    /// sent nothing but the refused command, and then either it keeps
    /// nothing between operations (`stateless`, [`StoreClient::remembers`]
    /// false) or, asked to [reconnect](StoreClient::reconnect), it made
    /// itself as good as a fresh one with set-up commands alone: its next
    /// operation then sends exactly what a new instance's would, so no
    /// answer and no state count changes. Otherwise it is dropped (an
    /// adapter's process killed) and a new one connects when the slot is
    /// next used ([`Inner::client`]): an adapter process per abandoned
    /// operation is what made read-then-write adapters slow to explore
    /// (issue 12), never a wrong verdict.
    pub(super) async fn abandon(
        &mut self,
        i: usize,
        held: Held,
        mut task: Operation,
        clock_ms: i64,
    ) {
        let gate = self.gates[i].clone();
        refuse_every_command(&gate);
        let _ = gate.release(held.id);
        // Nothing is held from now on: a retry is refused at once.
        gate.set_mode(Mode::PassThrough);
        let answered = match tokio::time::timeout(STEP_TIMEOUT, &mut task).await {
            Ok(Ok((client, out))) => Some((client, out)),
            _ => {
                // No answer: the process goes with the task, before the
                // faults are cleared.
                task.abort();
                let _ = task.await;
                None
            }
        };
        let mut kept = false;
        let mut on_trial = false;
        if let Some((mut client, out)) = answered {
            let alive = !matches!(&out, Err(e) if e.kind == ErrorKind::AdapterFailed);
            // Nothing the store sent after the held command reached the
            // server: every command was refused (a store that cleans up
            // after the failure, `DISCARD` say, sends more than one). A
            // transaction it left open is the gate's, reset before the
            // next operation.
            let refusals = refused(&gate);
            let clean = alive && (1..REFUSALS).contains(&refusals);
            let keeps = !client.remembers() || self.trial();
            kept = if clean && keeps && self.shared.speed.keep_after_abandon {
                // Kept on trial if it may remember the operation abandoned.
                on_trial = client.remembers();
                true
            } else {
                clean
                    && tokio::time::timeout(STEP_TIMEOUT, client.reconnect(clock_ms))
                        .await
                        .unwrap_or(false)
                    // The reconnect sent no scheduled command either.
                    && refused(&gate) == refusals
            };
            if kept {
                self.clients[i] = Some(client);
            }
        }
        if !kept {
            self.shared
                .abandoned_processes
                .fetch_add(1, Ordering::Relaxed);
        }
        gate.clear_faults();
        self.used[i] = false;
        self.on_trial[i] = on_trial;
    }

    /// `client` of instance `i`, asked to [reconnect](StoreClient::reconnect)
    /// with set-up commands alone (any other command is refused, never sent):
    /// `None` if it could not, or sent something else (it is dropped, and a
    /// new instance connects).
    pub(super) async fn refreshed(
        &mut self,
        i: usize,
        mut client: Box<dyn StoreClient>,
        clock_ms: i64,
    ) -> Option<Box<dyn StoreClient>> {
        let gate = self.gates[i].clone();
        refuse_every_command(&gate);
        gate.set_mode(Mode::PassThrough);
        let reconnected = tokio::time::timeout(STEP_TIMEOUT, client.reconnect(clock_ms))
            .await
            .unwrap_or(false);
        let clean = refused(&gate) == 0;
        gate.clear_faults();
        self.shared.refreshes.fetch_add(1, Ordering::Relaxed);
        (reconnected && clean).then_some(client)
    }

    /// Instance `i`'s operation answered without sending a scheduled
    /// command: its client is kept, its gate lets everything through, and
    /// the answer is judged.
    pub(super) fn answered_unsent(
        &mut self,
        next: &mut State,
        i: usize,
        (op, req, invoked): (Op, &Request, judge::Invoked),
        client: Box<dyn StoreClient>,
        out: Result<Reply, StoreError>,
    ) {
        self.keep(i, client, &out);
        self.gates[i].set_mode(Mode::PassThrough);
        answered(next, i, op, req, out, vec![], invoked);
    }

    /// Keeps instance `i`'s client for the next step, unless its adapter
    /// failed: a dead adapter answers every later call with its failure, and
    /// the next state explored on this world must start from a live
    /// instance (a fresh one connects then).
    pub(super) fn keep(
        &mut self,
        i: usize,
        client: Box<dyn StoreClient>,
        out: &Result<Reply, StoreError>,
    ) {
        let dead = matches!(out, Err(e) if e.kind == ErrorKind::AdapterFailed);
        self.clients[i] = (!dead).then_some(client);
        self.used[i] = true;
    }
}

/// What instance `i`'s operation `req`, invoked at `clock_ms`, is given
/// before its next event: the replies to the commands `delivered`.
pub(super) fn behaviour_key(
    i: usize,
    req: &Request,
    delivered: &[harness::gate::Exchange],
    clock_ms: i64,
) -> BehaviourKey {
    BehaviourKey {
        given: guess_key(i, req, delivered),
        clock_ms,
    }
}

/// What instance `i`'s operation `req` is given before its next command,
/// whatever its clock: the replies to the commands `delivered`.
fn guess_key(i: usize, req: &Request, delivered: &[harness::gate::Exchange]) -> GuessKey {
    GuessKey {
        instance: i,
        request: serde_json::to_string(req).unwrap_or_default(),
        delivered: delivered
            .iter()
            .map(|e| (e.command.clone(), e.reply.clone()))
            .collect(),
    }
}

/// Refusals that no store spends: the rule stays in force until cleared,
/// and what is left of it counts the refusals made ([`refused`]).
const REFUSALS: u32 = u32::MAX;

/// Has `gate` refuse every scheduled command (set-up commands pass) until
/// its faults are cleared.
pub(super) fn refuse_every_command(gate: &Gate) {
    gate.inject(FaultRule::always(Fault::RefuseBeforeSend).times(REFUSALS));
}

/// How many commands `gate` refused since [`refuse_every_command`].
pub(super) fn refused(gate: &Gate) -> u32 {
    gate.faults()
        .iter()
        .find(|r| r.fault == Fault::RefuseBeforeSend)
        .and_then(|r| r.times)
        .map_or(u32::MAX, |left| REFUSALS - left)
}

/// Waits until the gate holds a command or the operation answers; a
/// timeout lets every held command go (the operation is abandoned).
pub(super) async fn next_event(gate: &Gate, task: &mut Operation) -> Result<Step, String> {
    next_step(gate, task).await.map_err(|e| {
        gate.release_all();
        format!("the operation {e}")
    })
}

/// What a run of an operation's step is about: the operation, its clock and
/// request, the commands delivered before the step, and the pending state
/// to advance.
struct Run {
    op: Op,
    clock_ms: i64,
    delivered: Vec<harness::gate::Exchange>,
    watch: crate::state::Watch,
    retry: Pending,
    req: Request,
    invoked: judge::Invoked,
    guess_key: GuessKey,
}

impl Run {
    /// Instance `i`'s step `pending` from `next`.
    fn of(next: &State, i: usize, pending: Pending) -> Run {
        let invoked = pending.invoked();
        let req = request_as_invoked(next, i, pending.op, invoked.acked_before);
        Run {
            op: pending.op,
            clock_ms: pending.clock_ms,
            guess_key: guess_key(i, &req, &pending.delivered),
            delivered: pending.delivered.clone(),
            watch: pending.watch.clone(),
            retry: pending,
            req,
            invoked,
        }
    }
}

/// What a probe's first run sent where it was stopped ([`crate::drawn`]).
pub(super) struct Probed {
    command: harness::gate::Command,
    /// Its process was kept on trial: it may remember.
    on_trial: bool,
}

impl Probed {
    fn of(held: &Held, on_trial: bool) -> Probed {
        Probed {
            command: held.command.clone(),
            on_trial,
        }
    }
}

/// An operation the last step left in flight on its process, its next
/// command held at the gate.
///
/// Going on with it (releasing that command) is what running it again from
/// its first command would do, its earlier replies replayed from the
/// recording, when the step is that operation's next command from the state
/// the last step left: the same instance, operation, clock, commands and
/// replies so far, watched keys, server keys, time and fullness
/// ([`Live::continues`]). Anything else on the world abandons it first.
pub(super) struct Live {
    i: usize,
    task: Operation,
    held: Held,
    op: Op,
    clock_ms: i64,
    delivered: Vec<harness::gate::Exchange>,
    watch: crate::state::Watch,
    keys: u64,
    now: i64,
    full: bool,
}

impl Live {
    /// Whether instance `i`'s next command from `state` is this operation's
    /// held one.
    pub(super) fn continues(&self, state: &State, i: usize) -> bool {
        let Some(p) = state.insts.get(i).and_then(|x| x.pending.as_ref()) else {
            return false;
        };
        self.i == i
            && p.op == self.op
            && p.clock_ms == self.clock_ms
            && p.delivered == self.delivered
            && p.watch == self.watch
            && state.now == self.now
            && state.full == self.full
            && crate::state::keys_digest(&state.keys) == self.keys
    }
}
