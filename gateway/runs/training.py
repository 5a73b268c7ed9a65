"""The training loop of one run: complete groups in, one optimizer step per policy out.

Owns: `TrainingLoop` — an asyncio task per run that sleeps on the run's wake event (set
by each finished episode, resume, patch and stop) or until the oldest open group times
out, and whenever the run is running, below `max_steps`, and holds `batch_groups`
complete groups, takes the oldest ones (with a task mix: each family's quota of the
batch, see below), hands each policy its view of them (`Group`s of
`EpisodeSamples` with that policy's reward and samples) and records what the step did:
metrics, which samples trained or were dropped, the new weights versions, the step number
and counters — one transaction. While running it closes open groups older than
`group_timeout_s` (partial groups: trained or dropped per `partial_groups` and
`min_group_size`; a drop is recorded at once). It checkpoints every `checkpoint_every`
steps and ends the run at `max_steps` (final checkpoint).

A step is an update: a batch from which no policy trained any sample (every group's rewards
equal, every sample stale, ...) is no step — the run's step stays, no checkpoint is due,
`max_steps` comes no nearer. Its samples are recorded as dropped with their reasons, and
the batch itself is counted by the reason that dropped most of its samples (the trainer's
counts over all policies; "no_samples" when it held none): two run-wide metrics at the
run's current step (the last update's number, 0 before the first) — `batches/dropped` and
`batches/dropped/<reason>`, the run's running totals — and `Run.batches_dropped` /
`Run.dropped_in_a_row`. After `max_dropped_batches` such batches in a row the run is
stopped (`RunLifecycle.stop_untrainable`) with the reason. A batch where at least one policy
trained a sample is a step for every policy (the others' versions stay).

With a task mix, a batch is `batch_groups` groups apportioned by the effective mix (each
family within one group of its exact share, `task_mix.quotas`). While a family has fewer
complete groups than its quota the step waits — for at most `group_timeout_s` after the
oldest complete group completed, or not at all once the buffer's complete groups reach
`max_buffered_groups` (nothing more could be admitted): then it takes what exists (the
quotas it can meet, the oldest other groups for the rest, fewer than `batch_groups` when
fewer are complete), so a family without clients never stalls the run. An exception fails the run
(logged with its traceback); the gateway keeps serving — except `PolicyHostLost` (a policy's
Ray actor died): the loop just ends, and the run manager restores the run. A metric that
is NaN or infinite (a NaN loss, say: the trainer then skips its weight update) never fails
the run: it is left out of the step's record with a warning, and the step's
`metrics/non_finite` counts them.

The step's numbers come from `gateway.runs.step_metrics`. Each sample row's status is what the
trainer of its policy reported for that sample (`StepResult.outcomes`: trained, or
dropped with the reason), and the counters count those same outcomes: the gateway applies
no drop rule of its own. A trainer that leaves a sample of the batch without an outcome
(or reports one for a sample it was not given) fails the run. Knows nothing about HTTP
or torch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Protocol

import anyio

from experiments_db.models import MetricRow
from gateway.runs.buffer import BufferedGroup
from gateway.runs.run import Run
from gateway.runs.step_metrics import (
    NO_SAMPLES,
    drop_non_finite,
    dropped_batch_reason,
    step_metrics,
)
from gateway.runs.store import DROPPED_BATCHES, RunStore
from gateway.runs.task_mix import quotas, shares, short_families
from trainer.errors import PolicyHostLost
from trainer.types import EpisodeSamples, Group, SampleKey, StepResult

log = logging.getLogger(__name__)

PARTIAL_GROUP = "partial_group"  # the drop reason of groups closed below min_group_size
RowOutcomes = dict[int, str | None]  # sample row id -> drop reason (None: trained)


class RunLifecycle(Protocol):
    """What the loop asks of the run manager at the edges of training."""

    async def checkpoint(self, run: Run) -> object: ...

    async def finish(self, run: Run) -> None: ...

    async def fail(self, run: Run, error: str) -> None: ...

    async def stop_untrainable(self, run: Run, reason: str) -> None: ...


def policy_groups(batch: Sequence[BufferedGroup], policy: str) -> list[Group]:
    """The batch as one policy sees it: its reward and its samples of every episode."""
    return [
        Group(
            group.group_id,
            [
                EpisodeSamples(
                    episode.episode_id,
                    episode.rewards[policy],
                    [buffered.sample for buffered in episode.samples.get(policy, [])],
                )
                for episode in group.episodes
            ],
        )
        for group in batch
    ]


def row_outcomes(batch: Sequence[BufferedGroup], results: dict[str, StepResult]) -> RowOutcomes:
    """Sample row id → drop reason (None: trained), as the trainers reported: every sample
    of the batch for the policies in `results` must have exactly one outcome."""
    rows: dict[SampleKey, int] = {
        buffered.sample.key: buffered.row_id
        for group in batch
        for episode in group.episodes
        for policy in results
        for buffered in episode.samples.get(policy, [])
    }
    told = [outcome for result in results.values() for outcome in result.outcomes]
    reasons = {outcome.key: outcome.dropped for outcome in told}
    if len(told) != len(rows) or reasons.keys() != rows.keys():
        missing = sorted(rows.keys() - reasons.keys())
        unknown = sorted(reasons.keys() - rows.keys())
        raise RuntimeError(
            f"the trainers reported {len(told)} sample outcomes for {len(rows)} samples "
            f"(none for {missing[:3]}, unknown {unknown[:3]})"
        )
    return {row_id: reasons[key] for key, row_id in rows.items()}


def outcome_counters(outcomes: RowOutcomes) -> dict[str, int]:
    """The run counters a step's outcomes bump."""
    dropped = sum(reason is not None for reason in outcomes.values())
    return {
        "samples_buffered": -len(outcomes),
        "samples_trained": len(outcomes) - dropped,
        "samples_dropped": dropped,
    }


class TrainingLoop:
    def __init__(self, run: Run, store: RunStore, lifecycle: RunLifecycle):
        self.run = run
        self.store = store
        self.lifecycle = lifecycle
        self.partial_groups_dropped = 0  # since the last step (its metric)
        self.mix: dict[str, float] | None = None  # the effective task mix of the next batch

    async def __call__(self) -> None:
        run = self.run
        try:
            while not run.is_terminal:
                if run.max_steps_reached:
                    if run.status == "running":
                        await self.lifecycle.finish(run)  # or paused: no disk for its checkpoint
                    else:
                        await self.sleep()  # paused at the end: resuming finishes it
                    continue
                if run.status == "running":
                    await self.close_partial_groups()
                batch = self.take_batch() if run.status == "running" else None
                if batch is not None:
                    async with run.lock:
                        if run.is_terminal:
                            break  # ended while this step waited: its training state is gone
                        stepped = await self.step(batch)
                    every = run.settings.checkpoint_every
                    due = stepped and every and run.step % every == 0
                    if due and not run.max_steps_reached:
                        await self.lifecycle.checkpoint(run)
                    reason = run.no_learning_signal
                    if not stepped and reason is not None:
                        await self.lifecycle.stop_untrainable(run, reason)
                    continue
                await self.sleep()
        except PolicyHostLost as error:  # the run manager's host watcher restores the run
            log.warning("run %s: training paused at step %d: %s", run.name, run.step + 1, error)
        except Exception as error:
            log.exception("run %s failed at step %d", run.name, run.step + 1)
            await self.lifecycle.fail(run, f"{type(error).__name__}: {error}")

    def take_batch(self) -> list[BufferedGroup] | None:
        """The next batch, removed from the buffer, or None while it should wait."""
        run = self.run
        settings = run.settings
        count = settings.batch_groups
        mix = run.effective_task_mix()
        self.mix = mix
        if mix is None:
            return run.buffer.take(count) if run.buffer.complete_groups >= count else None
        want = quotas(mix, count)
        if short_families(run.buffer.complete_by_family(), want):
            if not self.mix_wait_over():
                return None
        return run.buffer.take_by_family(want, count) or None

    def mix_wait_over(self) -> bool:
        """A short family has been waited for long enough (or cannot come: buffer full)."""
        run = self.run
        oldest = run.buffer.oldest_complete_at()
        if oldest is None:
            return False
        if run.buffer.complete_groups >= run.settings.buffered_groups_limit:
            return True
        return time.monotonic() >= oldest + run.settings.group_timeout_s

    async def sleep(self) -> None:
        """Until the wake event, or (while running) until the oldest open group times out
        or (with a task mix) the wait for a short family ends."""
        run = self.run
        timeout = None
        deadlines = [run.buffer.oldest_open_at()]
        if run.settings.task_mix is not None:
            deadlines.append(run.buffer.oldest_complete_at())
        known = [d for d in deadlines if d is not None]
        if run.status == "running" and known:
            timeout = max(0.0, min(known) + run.settings.group_timeout_s - time.monotonic())
        try:
            await asyncio.wait_for(run.wake.wait(), timeout)
        except TimeoutError:
            pass
        run.wake.clear()

    async def close_partial_groups(self) -> None:
        """Close the open groups that waited `group_timeout_s` for their missing episodes;
        record the ones that cannot train as dropped (`partial_group`)."""
        run = self.run
        settings = run.settings
        min_size = None
        if settings.partial_groups == "train":
            min_size = min(settings.min_group_size, settings.group_size)
        dropped = run.buffer.close_expired(time.monotonic() - settings.group_timeout_s, min_size)
        if not dropped:
            return
        episodes = [episode for group in dropped for episode in group.episodes]
        rows = [
            buffered.row_id
            for episode in episodes
            for samples in episode.samples.values()
            for buffered in samples
        ]
        # the drop is recorded at the run's current step (no optimizer step happens)
        async with run.lock:
            await anyio.to_thread.run_sync(
                lambda: self.store.record_step(
                    run.name,
                    step=run.step,
                    versions=run.policy_versions(),
                    metrics=[],
                    sample_outcomes=dict.fromkeys(rows, PARTIAL_GROUP),
                    episode_ids=[episode.episode_id for episode in episodes],
                    counters={"samples_buffered": -len(rows), "samples_dropped": len(rows)},
                )
            )
        self.partial_groups_dropped += len(dropped)
        log.info(
            "run %s: dropped %d partial group(s) after %g s (%s): %s",
            run.name,
            len(dropped),
            settings.group_timeout_s,
            settings.partial_groups,
            ", ".join(f"{g.group_id} ({len(g.episodes)}/{settings.group_size})" for g in dropped),
        )

    async def step(self, batch: list[BufferedGroup]) -> bool:
        """One optimizer step per policy on `batch`, then its record; False (and the
        batch recorded as dropped, no step) when no policy trained any of its samples."""
        run = self.run
        settings = run.train_settings()
        names = list(run.policies)
        started = time.monotonic()
        outputs = await asyncio.gather(
            *(run.policies[p].trainer.train_step(policy_groups(batch, p), settings) for p in names)
        )
        results = dict(zip(names, outputs, strict=True))
        outcomes = row_outcomes(batch, results)
        if not any(result.samples_trained for result in results.values()):
            await self.record_dropped_batch(batch, results, outcomes)
            return False
        step = run.step + 1
        values = step_metrics(batch, results)
        values[(None, "groups/partial_dropped")] = float(self.partial_groups_dropped)
        values[(None, "step_seconds")] = time.monotonic() - started
        if self.mix is not None:
            for family, share in shares(self.mix).items():
                values[(None, f"task_mix/{family}")] = share
        values, left_out = drop_non_finite(values)
        if left_out:
            log.warning(
                "run %s step %d: %d non-finite metric(s) not recorded: %s",
                run.name,
                step,
                len(left_out),
                ", ".join(left_out),
            )
        now = time.time()
        metrics = [
            MetricRow(run=run.name, step=step, policy=policy, name=name, value=value, time=now)
            for (policy, name), value in values.items()
        ]
        await anyio.to_thread.run_sync(
            lambda: self.store.record_step(
                run.name,
                step=step,
                versions={p: r.version for p, r in results.items()},
                metrics=metrics,
                sample_outcomes=outcomes,
                episode_ids=[e.episode_id for g in batch for e in g.episodes],
                counters=outcome_counters(outcomes),
            )
        )
        run.step = step
        run.last_metrics = values
        run.dropped_in_a_row = {}
        self.partial_groups_dropped = 0
        log.info(
            "run %s step %d: %s",
            run.name,
            step,
            ", ".join(f"{p or 'run'}/{n}={v:.4g}" for (p, n), v in values.items()),
        )
        return True

    async def record_dropped_batch(
        self, batch: list[BufferedGroup], results: dict[str, StepResult], outcomes: RowOutcomes
    ) -> None:
        """A batch no policy trained from: its samples dropped with their reasons, and the
        batch counted by its main reason, at the run's current step (no step taken)."""
        run = self.run
        reason, dropped = dropped_batch_reason(results)
        totals = run.batches_dropped | {reason: run.batches_dropped.get(reason, 0) + 1}
        now = time.time()
        metrics = [
            MetricRow(run=run.name, step=run.step, name=name, value=float(value), time=now)
            for name, value in (
                (DROPPED_BATCHES, sum(totals.values())),
                (f"{DROPPED_BATCHES}/{reason}", totals[reason]),
            )
        ]
        await anyio.to_thread.run_sync(
            lambda: self.store.record_step(
                run.name,
                step=run.step,
                versions={p: r.version for p, r in results.items()},
                metrics=metrics,
                sample_outcomes=outcomes,
                episode_ids=[e.episode_id for g in batch for e in g.episodes],
                counters=outcome_counters(outcomes),
            )
        )
        run.batches_dropped = totals
        run.dropped_in_a_row = run.dropped_in_a_row | {
            reason: run.dropped_in_a_row.get(reason, 0) + 1
        }
        log.info(
            "run %s: a batch of %d group(s) trained nothing (%s; %d in a row), still at step %d",
            run.name,
            len(batch),
            ", ".join(f"{r} {n}" for r, n in sorted(dropped.items())) or NO_SAMPLES,
            sum(run.dropped_in_a_row.values()),
            run.step,
        )
