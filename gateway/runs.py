"""Run control: create runs and their policies, and pause, resume, stop, patch,
checkpoint and inspect them.

Owns: `RunManager` — the runs of this gateway process by name, their policies' entries in
the model registry (`<run>/<policy>`), their training loops (one asyncio task per run),
and the status transitions:

    starting → running ⇄ paused → stopped | finished (max_steps) | failed (an error)

(stopped: on request, or by the training loop after `max_dropped_batches` batches in a row
trained nothing — its `error` says so.)

`POST /runs` waits until every policy is created (the factory loads weights off the event
loop) and answers "running"; a factory error leaves the run "failed" with its `error`.
Stopping, finishing and failing abort the run's open episodes and free the run's training
memory at once (master weights, gradients, optimizer state, reference model); the
policies keep serving (held-out evaluation) from their final weights on disk — the final
checkpoint, an export written at the end when no checkpoint holds them — through the
ended-policy pool (`gateway.ended_policies`: at most `ended_policies_resident` engines
loaded, the others reloaded on demand), so a gateway's memory does not grow with the runs
it hosted.
Checkpoints are kept per the run's `keep_checkpoints` (the newest N and the best by
reward/mean; only the newest keeps the optimizer state a restart needs, and none once the
run ended); one that would not fit on the disk is not written and pauses the run. At startup `restore` brings back the runs
an earlier gateway process left in the database (see its docstring). Raises
`GatewayError`s; knows nothing about routes or torch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import shutil
import time
from pathlib import Path

import anyio
from pydantic import ValidationError

from experiments_db.models import PolicyRow, RunRow
from gateway.buffer import FinishedEpisode, GroupBuffer
from gateway.drift import drift_counts
from gateway.ended_policies import EndedPolicyPool, EndedTrainer, ReloadingEngine
from gateway.errors import (
    CheckpointNotFound,
    Conflict,
    EpisodeNotOpen,
    InsufficientStorage,
    NotConfigured,
    RateLimited,
    RunNotFound,
    Unprocessable,
)
from gateway.recorder import EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.run import PolicyPlan, Run
from gateway.run_store import RunStore
from gateway.samples import buffered_by_policy
from gateway.settings import GatewaySettings
from gateway.training import TrainingLoop
from swarm.protocol import (
    CheckpointPublic,
    EpisodeSummary,
    LoraSpec,
    MetricPoint,
    PolicyPublic,
    RunCounters,
    RunCreate,
    RunPatch,
    RunPublic,
    RunSettings,
)
from trainer.errors import InsufficientDisk
from trainer.memory import release_memory
from trainer.types import (
    OPTIMIZER_FILE,
    ChatTokenizer,
    InferenceEngine,
    Policy,
    PolicyFactory,
    ServedModel,
)

log = logging.getLogger(__name__)

RESTART_REASON = "gateway restarted"  # why episodes left open by a killed gateway end
HOST_LOST_REASON = "policy host lost"  # why episodes end when a policy's Ray actor died
LIVE_RUNS_RETRY_AFTER_S = 30.0  # a 429 too_many_live_runs: runs end in minutes, not seconds


def stored_settings(stored: dict) -> tuple[RunSettings, str | None]:
    """A run's settings as the database keeps them, and why they are no longer valid (None:
    valid). Invalid ones are kept as they are (listed, never trained with)."""
    try:
        return RunSettings.model_validate(stored), None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        known = {k: v for k, v in stored.items() if k in RunSettings.model_fields}
        return RunSettings.model_construct(**known), f"stored setting {field}: {first['msg']}"


class RunManager:
    def __init__(
        self,
        *,
        settings: GatewaySettings,
        models: ModelRegistry,
        recorder: EpisodeRecorder,
        store: RunStore,
        factory: PolicyFactory | None,
    ):
        self._settings = settings
        self._models = models
        self._recorder = recorder
        self._store = store
        self._factory = factory
        self._runs: dict[str, Run] = {}
        self._stored_versions: dict[str, dict[str, int]] = {}  # restored runs not loaded
        self._releases: set[asyncio.Task] = set()  # ended runs freeing their memory
        # ended runs' policies are served from disk when the factory can load an engine alone
        self._ended = EndedPolicyPool(self._load_ended, settings.ended_policies_resident)
        self._parks = hasattr(factory, "load_engine")
        self._tokenizers: dict[str, ChatTokenizer] = {}  # by fingerprint: ended policies share

    # -- lookup ----------------------------------------------------------------------------

    def find(self, name: str) -> Run | None:
        return self._runs.get(name)

    def get(self, name: str) -> Run:
        run = self._runs.get(name)
        if run is None:
            raise RunNotFound(f"No run named {name!r}.", param="run")
        return run

    def runs(self) -> list[Run]:
        return list(self._runs.values())

    async def public(self, name: str) -> RunPublic:
        run = self.get(name)
        row = await anyio.to_thread.run_sync(self._store.row, name)
        return self._public(run, row)

    async def list_public(self) -> list[RunPublic]:
        rows = {row.id: row for row in await anyio.to_thread.run_sync(self._store.rows)}
        return [self._public(run, rows.get(run.name)) for run in self._runs.values()]

    def _public(self, run: Run, row: RunRow | None) -> RunPublic:
        counters = RunCounters.model_validate(row, from_attributes=True) if row else RunCounters()
        versions = run.policy_versions() or self._stored_versions.get(run.name, {})
        return RunPublic(
            id=run.name,
            name=run.name,
            status=run.status,
            step=run.step,
            settings=run.settings,
            policies={
                name: PolicyPublic(
                    name=name,
                    model=run.model_of(name),
                    base_model=plan.base_model,
                    lora=plan.lora,
                    version=versions.get(name, 0),
                )
                for name, plan in run.plans.items()
            },
            created_at=run.created_at,
            error=run.error,
            batches_dropped=dict(run.batches_dropped),
            batches_dropped_in_a_row=sum(run.dropped_in_a_row.values()),
            **counters.model_dump(),
        )

    # -- creation --------------------------------------------------------------------------

    async def create(self, body: RunCreate) -> RunPublic:
        if self._factory is None:
            raise NotConfigured(
                "This gateway was started without a policy factory, so it serves and records "
                "but cannot train; start it with `gateway serve` to create runs."
            )
        if not body.policies:
            raise Unprocessable("policies: a run needs at least one policy.", param="policies")
        if body.resume_from is not None and len(body.policies) > 1:
            raise Unprocessable(
                "resume_from: a checkpoint can seed a single-policy run only.", param="resume_from"
            )
        if body.name in self._runs:
            raise Conflict(
                f"A run named {body.name!r} exists already; choose another name.",
                param="name",
                code="run_exists",
            )
        live = [run.name for run in self._runs.values() if not run.is_terminal]
        if len(live) >= self._settings.max_live_runs:
            raise RateLimited(
                f"This gateway holds {len(live)} live runs ({', '.join(live)}), its limit "
                f"(--max-live-runs {self._settings.max_live_runs}); stop one with "
                "POST /runs/{id}/stop (or let one finish) before creating another.",
                retry_after=LIVE_RUNS_RETRY_AFTER_S,
                code="too_many_live_runs",
            )
        default_base = self._models.base_names()[0]
        plans = {
            name: PolicyPlan(base_model=spec.base_model or default_base, lora=spec.lora)
            for name, spec in body.policies.items()
        }
        run = Run(
            name=body.name,
            settings=RunSettings.model_validate(
                body.model_dump(include=set(RunSettings.model_fields))
            ),
            plans=plans,
            created_at=time.time(),
            resume_from=body.resume_from,
        )
        self._runs[run.name] = run  # reserved before the first await: names stay unique
        try:
            await anyio.to_thread.run_sync(self._persist_new, run)
        except BaseException:
            del self._runs[run.name]
            raise
        if not await self._create_policies(run, lambda name, plan: None, "creating"):
            return await self.public(run.name)
        await anyio.to_thread.run_sync(
            self._store.set_policy_versions, run.name, run.policy_versions()
        )
        await self._set_status(run, "running")
        self._start_training(run)
        return await self.public(run.name)

    def _persist_new(self, run: Run) -> None:
        now = time.time()
        row = RunRow(
            id=run.name,
            settings=run.settings.model_dump(mode="json"),
            status=run.status,
            created_at=run.created_at,
            updated_at=now,
            resume_from=run.resume_from,
        )
        policies = [
            PolicyRow(run=run.name, name=name, base_model=plan.base_model, lora=plan.lora_dict())
            for name, plan in run.plans.items()
        ]
        self._store.create(row, policies)
        directory = self._settings.runs_dir / run.name
        directory.mkdir(parents=True, exist_ok=True)
        resolved = {
            "name": run.name,
            "settings": row.settings,
            "policies": {p.name: {"base_model": p.base_model, "lora": p.lora} for p in policies},
            "resume_from": run.resume_from,
        }
        (directory / "run.json").write_text(json.dumps(resolved, indent=2))
        log.info("run %s: %s", run.name, json.dumps(resolved))

    async def _create_policy(
        self, run: Run, name: str, plan: PolicyPlan, *, resume_from: str | None = None
    ) -> Policy:
        assert self._factory is not None
        model = run.model_of(name)
        policy = await self._factory.create(
            served_name=model,
            base_model=plan.base_model,
            lora=plan.lora_dict(),
            seed=run.settings.seed,
            resume_from=resume_from or run.resume_from,
        )
        if policy.served.name != model:
            policy.served = dataclasses.replace(policy.served, name=model)
        self._models.add(model, policy.served)
        source = resume_from or run.resume_from or plan.base_model
        run.built_from[name] = (source, policy.trainer.version)
        return policy

    # -- restart ---------------------------------------------------------------------------

    async def restore(self) -> None:
        """Rebuild the runs of an earlier gateway process from the database (startup).

        The runs' episodes left open are aborted ("gateway restarted"; recording-only
        episodes, of no run, stay open: their calls are all in the database). Stopped,
        finished and failed runs are listed; their policies answer again from the
        ended-policy pool where their final weights are known (`_serve_restored`), nothing
        loaded until asked. Each starting,
        running or paused run resumes from its latest checkpoint (each policy from its own
        directory; the base model, or the run's `resume_from`, when it has none): its step
        is the checkpoint's,
        the steps after it are rewound (their samples are trained again, their metrics
        go), the group buffer is rebuilt from the finished episodes no step consumed, and
        its training loop restarts; a paused run stays paused. Without a policy factory,
        live runs are listed as failed here (the database keeps them for a gateway that
        can train)."""
        for row in await anyio.to_thread.run_sync(self._store.rows):
            if row.id in self._runs:
                continue
            await self._abort_open_episodes(row.id, reason=RESTART_REASON)
            policies = await anyio.to_thread.run_sync(self._store.policies, row.id)
            settings, invalid = stored_settings(row.settings)
            run = Run(
                name=row.id,
                settings=settings,
                plans={
                    p.name: PolicyPlan(
                        base_model=p.base_model,
                        lora=LoraSpec.model_validate(p.lora) if p.lora is not None else None,
                    )
                    for p in policies
                },
                created_at=row.created_at,
                resume_from=row.resume_from,
                status=row.status,  # type: ignore[arg-type]
                step=row.step,
                error=row.error,
            )
            self._runs[run.name] = run
            self._stored_versions[run.name] = {p.name: p.version for p in policies}
            await self._load_dropped_batches(run)
            if run.is_terminal:
                await self._serve_restored(run)
                continue
            if invalid is not None:  # saved by an older gateway, before today's bounds
                run.status, run.error = "failed", f"not restored: {invalid}"
                log.warning("run %s: %s", run.name, run.error)
                continue
            if self._factory is None:
                run.status = "failed"
                run.error = (
                    f"not restored: this gateway has no policy factory (the run was {row.status})"
                )
                log.warning("run %s: %s", run.name, run.error)
                continue
            await self._restart(run)

    async def _restart(self, run: Run) -> None:
        checkpoints = await anyio.to_thread.run_sync(self._store.checkpoints, run.name)
        latest = checkpoints[-1] if checkpoints else None
        step = latest.step if latest is not None else 0
        deltas = await anyio.to_thread.run_sync(self._store.rewind, run.name, step)
        run.step = step
        await self._load_dropped_batches(run)
        buffered = await anyio.to_thread.run_sync(self._buffered_episodes, run)
        for episode in buffered:
            run.buffer.add(episode, run.settings.group_size)
        log.info(
            "run %s: restarting at step %d from %s; %d sample(s) of later steps to train "
            "again; %d finished episode(s) buffered",
            run.name,
            step,
            latest.path if latest is not None else "its base model(s)",
            deltas["samples_buffered"],
            len(buffered),
        )

        def checkpoint_of(name: str, plan: PolicyPlan) -> str | None:
            return str(Path(latest.path) / name) if latest is not None else None

        if not await self._create_policies(run, checkpoint_of, "restoring"):
            return
        await anyio.to_thread.run_sync(
            self._store.set_policy_versions, run.name, run.policy_versions()
        )
        await self._set_status(run, "paused" if run.status == "paused" else "running")
        self._start_training(run)

    async def _load_dropped_batches(self, run: Run) -> None:
        run.batches_dropped, run.dropped_in_a_row = await anyio.to_thread.run_sync(
            self._store.dropped_batches, run.name, run.step
        )

    def _start_training(self, run: Run) -> None:
        """The run's training loop and, for policies in other processes, their watcher."""
        run.task = asyncio.create_task(
            TrainingLoop(run, self._store, self)(), name=f"train-{run.name}"
        )
        waits = [
            policy.trainer.host_lost
            for policy in run.policies.values()
            if hasattr(policy.trainer, "host_lost")
        ]
        if waits:
            run.watcher = asyncio.create_task(
                self._watch_hosts(run, waits), name=f"watch-{run.name}"
            )

    async def _watch_hosts(self, run: Run, waits) -> None:
        tasks = [asyncio.ensure_future(wait()) for wait in waits]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
        reason = next(iter(done)).result()
        run.watcher = None
        await self.recover(run, reason)

    async def recover(self, run: Run, reason: str) -> None:
        """A policy's host process died: do what a gateway restart does for this run —
        stop its loop, free its other hosts, abort its open episodes ("policy host lost"),
        rewind to the latest checkpoint, rebuild the buffer from the persisted episodes and
        create the policies again from the checkpoint. A stopped, finished or failed run
        only frees its policies (it trains no more)."""
        log.warning("run %s: %s; restoring it from its latest checkpoint", run.name, reason)
        if run.task is not None and run.task is not asyncio.current_task():
            run.task.cancel()
            await asyncio.gather(run.task, return_exceptions=True)
        run.task = None
        if run.is_terminal:
            async with run.lock:
                await self._close_policies(run)
            return
        previous = run.status
        await self._set_status(run, "starting")  # new episodes wait (429) meanwhile
        await self._abort_open_episodes(run.name, reason=HOST_LOST_REASON)
        async with run.lock:
            await self._close_policies(run)
        run.buffer = GroupBuffer()
        run.status = previous  # _restart brings a paused run back paused
        await self._restart(run)

    async def _create_policies(self, run: Run, resume_from_of, doing: str) -> bool:
        """Create every policy of `run` (`resume_from_of(name, plan)`: a checkpoint dir or
        None); on the first failure close the ones made, fail the run, and answer False."""
        for name, plan in run.plans.items():
            resume_from = resume_from_of(name, plan)
            try:
                run.policies[name] = await self._create_policy(
                    run, name, plan, resume_from=resume_from
                )
            except Exception as error:
                log.exception("run %s: %s policy %s failed", run.name, doing, name)
                await self._close_policies(run)
                origin = (
                    f"from {resume_from!r}" if resume_from else f"base_model {plan.base_model!r}"
                )
                prefix = "restart: " if doing == "restoring" else ""
                why = f"{prefix}policy {name!r} ({origin}): "
                await self._set_status(
                    run, "failed", error=why + f"{type(error).__name__}: {error}"
                )
                return False
        return True

    def _buffered_episodes(self, run: Run) -> list[FinishedEpisode]:
        """The finished episodes the run's buffer held, as `gateway.episodes` built them."""
        episodes = []
        for row, samples, code_version in self._store.unconsumed(run.name):
            by_policy = buffered_by_policy(samples)
            reward = row.reward if row.reward is not None else 0.0
            rewards = (
                {name: float(reward[name]) for name in run.plans}
                if isinstance(reward, dict)
                else dict.fromkeys(run.plans, float(reward))
            )
            episodes.append(
                FinishedEpisode(
                    episode_id=row.id,
                    group_id=row.group_id,
                    rewards=rewards,
                    samples=by_policy,
                    metrics=dict(row.metrics or {}),
                    drift=drift_counts(self._recorder.get_calls(row.id)),
                    task_family=row.task_family,
                    code_version=code_version,
                )
            )
        return episodes

    # -- control ---------------------------------------------------------------------------

    async def patch(self, name: str, body: RunPatch) -> RunPublic:
        run = self.get(name)
        self._require_live(run, "edited")
        changes = body.model_dump(exclude_unset=True)  # an explicit null clears max_steps, ...
        try:
            run.settings = RunSettings.model_validate(run.settings.model_dump() | changes)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise Unprocessable(f"{field}: {first['msg']}", param=field) from error
        await anyio.to_thread.run_sync(
            lambda: self._store.update(run.name, settings=run.settings.model_dump(mode="json"))
        )
        run.wake.set()
        return await self.public(name)

    async def pause(self, name: str) -> RunPublic:
        run = self.get(name)
        self._require_live(run, "paused")
        if run.status == "running":
            await self._set_status(run, "paused")
        return await self.public(name)

    async def resume(self, name: str) -> RunPublic:
        run = self.get(name)
        self._require_live(run, "resumed")
        if run.status == "paused":
            run.error = None  # why it paused (a disk without room), answered by resuming
            await self._set_status(run, "running")
            run.wake.set()
        return await self.public(name)

    async def stop(self, name: str) -> RunPublic:
        """No new episodes, no more steps (one in progress completes); open episodes are
        aborted; the policies keep serving."""
        run = self.get(name)
        if run.status != "stopped":
            self._require_live(run, "stopped")
            await self._end(run, "stopped", reason="run stopped")
        return await self.public(name)

    def _require_live(self, run: Run, verb: str) -> None:
        if run.is_terminal or run.status == "starting":
            raise Conflict(
                f"Run {run.name!r} is {run.status} and cannot be {verb}.",
                param="run",
                code="run_not_live",
            )

    async def _set_status(self, run: Run, status: str, *, error: str | None = None) -> None:
        run.status = status  # type: ignore[assignment]
        if error is not None:
            run.error = error
        await anyio.to_thread.run_sync(
            lambda: self._store.update(run.name, status=status, error=run.error)
        )
        log.info("run %s: %s%s", run.name, status, f" ({error})" if error else "")

    async def _end(self, run: Run, status: str, *, reason: str, error: str | None = None) -> None:
        await self._set_status(run, status, error=error)
        run.wake.set()  # the loop sees the terminal status and returns
        await self._abort_open_episodes(run.name, reason=reason)
        task = asyncio.create_task(self._release(run), name=f"release-{run.name}")
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def _abort_open_episodes(self, run: str, *, reason: str) -> int:
        """Abort the run's episodes that are still open. A client's finish may land between
        the listing and an abort: the recorder re-reads the status under the lock its finish
        takes too, so each episode ends exactly once, finished (counted) or aborted (the
        finish gets a 409) — a finish that won is no error of the run's end."""
        aborted = 0
        for episode_id in await anyio.to_thread.run_sync(
            lambda: self._recorder.open_episode_ids(run=run)
        ):
            try:
                _, changed = await anyio.to_thread.run_sync(
                    lambda e=episode_id: self._recorder.abort_episode(e, reason=reason)
                )
            except EpisodeNotOpen:
                continue  # finished meanwhile
            aborted += changed
        if aborted and reason == RESTART_REASON:
            log.info("run %s: aborted %d episode(s) left open by a killed gateway", run, aborted)
        return aborted

    # -- the training loop's lifecycle hooks -----------------------------------------------

    async def finish(self, run: Run) -> None:
        """The final checkpoint (an export: no restart resumes a finished run; resumable
        when the run keeps every checkpoint whole), then the end; a disk without room
        pauses the run instead (resuming it finishes it)."""
        if await self.checkpoint(run, resumable=self._keep(run) == 0) is None:
            return
        await self._end(run, "finished", reason="run finished")

    async def fail(self, run: Run, error: str) -> None:
        await self._end(run, "failed", reason="run failed", error=error)

    async def stop_untrainable(self, run: Run, reason: str) -> None:
        """`max_dropped_batches` batches in a row trained nothing: the run is stopped, as
        on request, with `reason` as its `error`."""
        log.warning("run %s: %s", run.name, reason)
        await self._end(run, "stopped", reason="run stopped", error=reason)

    # -- checkpoints and metrics -----------------------------------------------------------

    def checkpoint_dir(self, run: Run, step: int) -> Path:
        return self._contained(self._settings.runs_dir / run.name / "checkpoints" / f"step-{step}")

    def _contained(self, path: Path | str) -> Path:
        """`path` resolved; an error unless it lies inside the runs directory (a run or
        policy name must never choose where files are written or deleted)."""
        root = self._settings.runs_dir.resolve()
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(root) or resolved == root:
            raise Unprocessable(
                f"checkpoint path {str(path)!r} lies outside the state directory ({root}); "
                "nothing was written",
                param="policies",
                code="path_outside_state_dir",
            )
        return resolved

    def _policy_dir(self, directory: Path, policy: str) -> Path:
        target = self._contained(directory / policy)
        if target.parent != directory:
            raise Unprocessable(
                f"policy name {policy!r} is not a single path component; nothing was written",
                param="policies",
                code="path_outside_state_dir",
            )
        return target

    async def checkpoint(self, run: Run, *, resumable: bool = True) -> CheckpointPublic | None:
        """Save every policy under `<state_dir>/runs/<run>/checkpoints/step-<n>/<policy>`;
        a second request at the same step returns the first checkpoint. Older ones go per
        `keep_checkpoints`. None when the disk lacks room (nothing written, the run
        paused, why in its `error`) or when the run ended and its training state is gone."""
        if not run.ready:
            raise Conflict(f"Run {run.name!r} has no policies to save.", code="run_not_live")
        async with run.lock:
            return await self._save_checkpoint(run, resumable=resumable)

    async def _save_checkpoint(
        self, run: Run, *, resumable: bool, pause_on_full_disk: bool = True
    ) -> CheckpointPublic | None:
        """`checkpoint`'s body, under the run lock; without `pause_on_full_disk` a disk
        without room raises `InsufficientDisk` (nothing written) instead of pausing."""
        if _released(run):
            log.info("run %s: no checkpoint: the run ended (training state freed)", run.name)
            return None
        step = run.step
        row = await anyio.to_thread.run_sync(self._store.checkpoint, run.name, step)
        if row is None:
            directory = self.checkpoint_dir(run, step)
            targets = {name: self._policy_dir(directory, name) for name in run.policies}
            try:
                for name, policy in run.policies.items():
                    if resumable:
                        await policy.trainer.save_checkpoint(str(targets[name]))
                    else:
                        await policy.trainer.save_checkpoint(str(targets[name]), resumable=False)
            except InsufficientDisk as error:
                # policies saved before this one make no checkpoint: never half of one
                await anyio.to_thread.run_sync(lambda: shutil.rmtree(directory, ignore_errors=True))
                if not pause_on_full_disk:
                    raise
                await self._pause_for_disk(run, step, error)
                return None
            row = await anyio.to_thread.run_sync(
                self._store.add_checkpoint, run.name, step, str(directory)
            )
            log.info("run %s: checkpoint at step %d in %s", run.name, step, directory)
            await anyio.to_thread.run_sync(self._retain, run, False)
        return CheckpointPublic(step=row.step, path=row.path, created_at=row.created_at)

    async def _pause_for_disk(self, run: Run, step: int, error: InsufficientDisk) -> None:
        why = (
            f"checkpoint at step {step} not written: {error}; the run is paused: free disk "
            "space, then resume it"
        )
        log.error("run %s: %s", run.name, why)
        await anyio.to_thread.run_sync(
            lambda: self._store.add_metrics(
                run.name,
                step,
                {
                    "checkpoint/disk_needed_bytes": error.needed,
                    "checkpoint/disk_free_bytes": error.free,
                },
            )
        )
        status = "paused" if run.status in ("running", "paused") else run.status
        await self._set_status(run, status, error=why)

    def _retain(self, run: Run, ended: bool) -> None:
        """Keep the newest `keep_checkpoints` and the best by reward/mean (rows first, then
        directories: a row never names a missing checkpoint); the optimizer state stays in
        the newest only — the one a restart resumes from — and in none once the run ended.
        `keep_checkpoints` 0 keeps everything as written."""
        keep = self._keep(run)
        rows = self._store.checkpoints(run.name) if keep else []
        if not rows:
            return  # keep 0: every checkpoint stays whole
        newest = rows[-1]
        kept_steps = {r.step for r in rows[-keep:]}
        scores = self._store.step_scores(run.name, [r.step for r in rows])
        if scores:
            kept_steps.add(max(scores, key=lambda step: (scores[step], step)))
        dropped = [r for r in rows if r.step not in kept_steps]
        if dropped:
            self._store.delete_checkpoints(run.name, [r.step for r in dropped])
            for row in dropped:
                if (path := self._inside(row.path)) is not None:
                    shutil.rmtree(path, ignore_errors=True)
            log.info(
                "run %s: removed checkpoint(s) at step %s (keeping %s)",
                run.name,
                ", ".join(str(r.step) for r in dropped),
                ", ".join(str(step) for step in sorted(kept_steps)),
            )
        for row in rows:
            if row.step in kept_steps and (ended or row is not newest):
                if (path := self._inside(row.path)) is not None:
                    for optimizer in path.glob(f"*/{OPTIMIZER_FILE}"):
                        optimizer.unlink(missing_ok=True)

    def _inside(self, path: str) -> Path | None:
        """A stored checkpoint path, resolved, when it lies in the runs directory; else None
        (logged): files outside it are never deleted (e.g. after the state dir moved)."""
        try:
            return self._contained(path)
        except Unprocessable:
            log.warning("checkpoint %s lies outside %s: its files are left alone", path,
                        self._settings.runs_dir)  # fmt: skip
            return None

    def _keep(self, run: Run) -> int:
        keep = run.settings.keep_checkpoints
        return self._settings.keep_checkpoints if keep is None else keep

    async def delete_checkpoint(self, name: str, step: int) -> None:
        """Delete the checkpoint (or export) at `step` of run `name`: its row, then its files
        (`DELETE /runs/{name}/checkpoints/{step}`, e.g. a study keeping within its disk
        budget). When these were the final weights an ended run's policies are served from,
        those `<run>/<policy>` models go (404 `model_not_found`, as after a restart); a live
        run resumes from an older checkpoint, or its start, if the gateway restarts."""
        run = self.get(name)
        async with run.lock:
            row = await anyio.to_thread.run_sync(self._store.checkpoint, run.name, step)
            if row is None:
                raise CheckpointNotFound(f"Run {run.name!r} has no checkpoint at step {step}.")
            path = self._inside(row.path)
            await anyio.to_thread.run_sync(self._store.delete_checkpoints, run.name, [step])
            for policy in run.policies.values():
                engine = policy.served.engine
                if isinstance(engine, ReloadingEngine) and path is not None:
                    if Path(engine.source).resolve().is_relative_to(path):
                        self._models.remove(policy.served.name)
                        self._ended.forget(policy.served.name)
            if path is not None:
                await anyio.to_thread.run_sync(lambda: shutil.rmtree(path, ignore_errors=True))
        log.info("run %s: checkpoint at step %d deleted on request", run.name, step)

    async def checkpoint_by_name(self, name: str) -> CheckpointPublic:
        run = self.get(name)
        saved = await self.checkpoint(run)
        if saved is not None:
            return saved
        if _released(run):
            raise Conflict(
                f"Run {name!r} is {run.status}; its training state was freed, so it has no "
                "new checkpoint to save (GET /runs/{id}/checkpoints lists the kept ones).",
                code="run_not_live",
            )
        raise InsufficientStorage(run.error or "not enough disk space for a checkpoint")

    async def checkpoints(self, name: str) -> list[CheckpointPublic]:
        self.get(name)
        rows = await anyio.to_thread.run_sync(self._store.checkpoints, name)
        return [CheckpointPublic(step=r.step, path=r.path, created_at=r.created_at) for r in rows]

    async def metrics(
        self, name: str, *, since: int | None, metric: str | None = None
    ) -> list[MetricPoint]:
        self.get(name)
        rows = await anyio.to_thread.run_sync(
            lambda: self._store.metrics(name, since_step=since, name=metric)
        )
        return [
            MetricPoint(step=r.step, name=r.name, value=r.value, time=r.time, policy=r.policy)
            for r in rows
        ]

    async def episodes(
        self,
        name: str,
        *,
        status: str | None,
        limit: int,
        offset: int,
        group_id: str | None = None,
    ) -> list[EpisodeSummary]:
        """A page of the run's episodes, newest first (the recorder owns them)."""
        self.get(name)
        records = await anyio.to_thread.run_sync(
            lambda: self._recorder.list_episodes(
                run=name, status=status, group_id=group_id, limit=limit, offset=offset
            )
        )
        return [EpisodeSummary.model_validate(r, from_attributes=True) for r in records]

    # -- shutdown --------------------------------------------------------------------------

    async def close(self) -> None:
        """Cancel the training loops and free every policy (gateway shutdown)."""
        tasks = [
            task
            for run in self._runs.values()
            for task in (run.task, run.watcher)
            if task is not None
        ]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *self._releases, return_exceptions=True)
        for run in self._runs.values():
            await self._close_policies(run, unregister=False)
        await self._ended.close()

    async def _release(self, run: Run) -> None:
        """The run ended: its final weights go to disk where no checkpoint holds them yet,
        its checkpoints lose their optimizer state, and its training memory goes at once
        (after a step in progress: the run lock); each policy's engine moves to the
        ended-policy pool, which serves it from those weights (`gateway.ended_policies`).
        A policy whose final weights could not be written keeps its engine (logged)."""
        async with run.lock:
            sources = await self._final_weights(run)
            try:
                await anyio.to_thread.run_sync(self._retain, run, True)
            except Exception:
                log.exception("run %s: pruning its checkpoints failed", run.name)
            for name, policy in list(run.policies.items()):
                release = getattr(policy.trainer, "release_training", None)
                if release is None:
                    continue
                try:
                    await anyio.to_thread.run_sync(release)
                except Exception:
                    log.exception("run %s: freeing policy %s failed", run.name, name)
                    continue
                if name in sources:
                    tokenizer = await anyio.to_thread.run_sync(
                        self._shared, policy.served.tokenizer
                    )
                    self._park(run, name, policy, sources[name], tokenizer)
            run.buffer = GroupBuffer()  # nothing trains any more
        await anyio.to_thread.run_sync(release_memory)
        log.info("run %s: training memory freed", run.name)

    async def _final_weights(self, run: Run) -> dict[str, str]:
        """Where each policy's final weights lie (a checkpoint directory, or the model name
        it was built from when it never trained), an export checkpoint written for them
        when none holds them; {} when this gateway cannot serve policies from disk."""
        if not self._parks or not run.ready or _released(run):
            return {}
        rows = await anyio.to_thread.run_sync(self._store.checkpoints, run.name)
        newest = rows[-1] if rows else None
        sources: dict[str, str] = {}
        for name, policy in run.policies.items():
            built, version = run.built_from.get(name, (None, None))
            if newest is not None and newest.step == run.step:
                sources[name] = str(Path(newest.path) / name)
            elif built is not None and policy.trainer.version == version:
                sources[name] = built  # never trained: its weights are what it was built from
        if len(sources) == len(run.policies):
            return sources
        try:
            saved = await self._save_checkpoint(
                run, resumable=self._keep(run) == 0, pause_on_full_disk=False
            )
        except Exception as error:  # InsufficientDisk above all
            log.warning(
                "run %s: its final weights could not be written (%s: %s); its policies keep "
                "their engines loaded", run.name, type(error).__name__, error,
            )  # fmt: skip
            return sources
        if saved is None:
            return sources
        return {name: str(Path(saved.path) / name) for name in run.policies}

    async def _serve_restored(self, run: Run) -> None:
        """A restored ended run's policies are served from the pool again when their final
        weights are known — the newest checkpoint at the run's step, or what a policy that
        never trained was built from — and their base model is served here (its tokenizer
        is theirs: nothing is loaded at startup). Others stay unserved (404), as before."""
        if not self._parks:
            return
        rows = await anyio.to_thread.run_sync(self._store.checkpoints, run.name)
        newest = rows[-1] if rows else None
        versions = self._stored_versions.get(run.name, {})
        for name, plan in run.plans.items():
            base = self._models.find(plan.base_model)
            if base is None or plan.base_model not in self._models.base_names():
                continue
            if newest is not None and newest.step == run.step:
                source = str(Path(newest.path) / name)
                if not await anyio.to_thread.run_sync(Path(source).is_dir):
                    continue
            elif run.step == 0:
                source = run.resume_from or plan.base_model
            else:
                continue  # trained past its last checkpoint (an older gateway's run)
            served = ServedModel(
                name=run.model_of(name), tokenizer=base.tokenizer, engine=base.engine
            )
            self._serve_ended(run, name, served, source, versions.get(name, 0), base.tokenizer)

    def _park(
        self, run: Run, name: str, policy: Policy, source: str, tokenizer: ChatTokenizer
    ) -> None:
        """Serve `name` of the ended `run` from `source` with `tokenizer` through the
        ended-policy pool; its engine, still running, becomes the pool's most recent
        resident one."""
        self._ended.adopt(policy.served.name, policy.served.engine)
        self._serve_ended(run, name, policy.served, source, policy.trainer.version, tokenizer)

    def _serve_ended(
        self,
        run: Run,
        name: str,
        served: ServedModel,
        source: str,
        version: int,
        tokenizer: ChatTokenizer,
    ) -> None:
        """Register `<run>/<name>` as `served` (its engine: the context it serves) with a
        `ReloadingEngine` of `source` at `version`; the run holds an `EndedTrainer`."""
        engine = ReloadingEngine(
            self._ended,
            served.name,
            source=source,
            version=version,
            max_context=served.engine.max_context,
            tokenizer=tokenizer,
        )
        ended = dataclasses.replace(served, tokenizer=tokenizer, engine=engine)
        if self._models.find(served.name) is None:
            self._models.add(served.name, ended)
        else:
            self._models.replace(served.name, ended)
        run.policies[name] = Policy(served=ended, trainer=EndedTrainer(version))

    def _shared(self, tokenizer: ChatTokenizer) -> ChatTokenizer:
        """One tokenizer object for every ended policy (and base model) whose tokenizer
        works alike: a tokenizer takes ~10 MiB, an ended run would keep one for ever.
        Off the event loop: a fingerprint takes ~0.2 s."""
        fingerprint = getattr(tokenizer, "fingerprint", None)
        if fingerprint is None:
            return tokenizer
        if not self._tokenizers:
            for name in self._models.base_names():  # (never iterate the live registry here)
                base = self._models.find(name)
                known = getattr(base.tokenizer, "fingerprint", None) if base else None
                if known is not None:
                    self._tokenizers.setdefault(known(), base.tokenizer)
        return self._tokenizers.setdefault(fingerprint(), tokenizer)

    async def _load_ended(
        self, source: str, version: int, tokenizer: ChatTokenizer
    ) -> InferenceEngine:
        return await self._factory.load_engine(source, version, tokenizer)  # type: ignore[union-attr]

    async def _close_policies(self, run: Run, *, unregister: bool = True) -> None:
        for name, policy in list(run.policies.items()):
            if unregister:
                self._models.remove(run.model_of(name))
            try:
                await anyio.to_thread.run_sync(policy.trainer.close)
            except Exception:
                log.exception("run %s: closing policy %s failed", run.name, name)
        if unregister:
            run.policies.clear()
            await anyio.to_thread.run_sync(release_memory)


def _released(run: Run) -> bool:
    """The run's training state was freed (it ended): nothing more to train or save."""
    return any(getattr(policy.trainer, "released", False) for policy in run.policies.values())
