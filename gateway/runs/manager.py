"""Run control: create runs and their policies, and pause, resume, stop and end them.

Owns: `RunManager` — the runs of this gateway process by name, their policies' entries in
the model registry (`<run>/<policy>`), their training loops (one asyncio task per run, and
for policies in other processes a watcher of their hosts), the run counters an episode's
end changes (`count_episode_end`, written in the recorder's transaction), and the status
transitions:

    starting → running ⇄ paused → stopped | finished (max_steps) | failed (an error)

(stopped: on request, or by the training loop after `max_dropped_batches` batches in a row
trained nothing — its `error` says so.)

`POST /runs` waits until every policy is created (the factory loads weights off the event
loop) and answers "running"; a factory error leaves the run "failed" with its `error`.
Stopping, finishing and failing abort the run's open episodes and free the run's training
memory at once; the policies keep serving from their final weights on disk
(`gateway.runs.release`).

It is the one object the routes, the app and the training loop call; the rest of run
control it delegates to, each in its own module: reads (`gateway.runs.queries`),
checkpoints and their retention (`gateway.runs.checkpoints`), ended runs' release
(`gateway.runs.release`), and restoring runs at startup or after a policy host died
(`gateway.runs.restore`). Raises `GatewayError`s; knows nothing about routes or torch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
from pydantic import ValidationError
from sqlmodel import Session

from experiments_db import crud
from experiments_db.models import PolicyRow, RunRow, SampleRow
from gateway.errors import (
    Conflict,
    EpisodeNotOpen,
    NotConfigured,
    RateLimited,
    Unprocessable,
)
from gateway.recording.recorder import EpisodeRecord, EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.runs.checkpoints import RunCheckpoints
from gateway.runs.queries import RunQueries
from gateway.runs.release import EndedRuns
from gateway.runs.restore import RESTART_REASON, RunRestorer
from gateway.runs.run import PolicyPlan, Run
from gateway.runs.store import RunStore
from gateway.runs.training import TrainingLoop
from gateway.settings import GatewaySettings
from swarm.protocol import (
    CheckpointPublic,
    EpisodeSummary,
    MetricPoint,
    RunCreate,
    RunPatch,
    RunPublic,
    RunSettings,
)
from trainer.memory import release_memory
from trainer.types import Policy, PolicyFactory

log = logging.getLogger(__name__)

LIVE_RUNS_RETRY_AFTER_S = 30.0  # a 429 too_many_live_runs: runs end in minutes, not seconds


def count_episode_end(
    session: Session, episode: EpisodeRecord, samples: Sequence[SampleRow]
) -> None:
    """The run's counters an episode's end changes (`episodes_finished` and
    `samples_buffered`, or `episodes_aborted`), in the recorder's transaction that ends it:
    they never disagree with the episode rows, across restarts too. An episode of no run
    (recording-only) counts nowhere."""
    if episode.status == "finished":
        crud.bump_run_counters(
            session, run_id=episode.run, episodes_finished=1, samples_buffered=len(samples)
        )
    else:
        crud.bump_run_counters(session, run_id=episode.run, episodes_aborted=1)


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
        recorder.on_end_in_transaction(count_episode_end)
        self._queries = RunQueries(
            runs=self._runs, stored_versions=self._stored_versions, store=store, recorder=recorder
        )
        self._checkpoints = RunCheckpoints(
            settings=settings, store=store, set_status=self.set_status
        )
        self._ended_runs = EndedRuns(
            settings=settings,
            models=models,
            store=store,
            factory=factory,
            checkpoints=self._checkpoints,
        )
        self._ended = self._ended_runs.pool  # the ended-policy pool (tests look at it)
        self._restorer = RunRestorer(
            runs=self._runs,
            stored_versions=self._stored_versions,
            store=store,
            recorder=recorder,
            ended=self._ended_runs,
            control=self,
            can_train=factory is not None,
        )

    # -- reads (gateway.runs.queries) --------------------------------------------------------

    def find(self, name: str) -> Run | None:
        return self._queries.find(name)

    def get(self, name: str) -> Run:
        return self._queries.get(name)

    def runs(self) -> list[Run]:
        return self._queries.runs()

    async def public(self, name: str) -> RunPublic:
        return await self._queries.public(name)

    async def list_public(self) -> list[RunPublic]:
        return await self._queries.list_public()

    async def checkpoints(self, name: str) -> list[CheckpointPublic]:
        return await self._queries.checkpoints(name)

    async def metrics(
        self, name: str, *, since: int | None, metric: str | None = None
    ) -> list[MetricPoint]:
        return await self._queries.metrics(name, since=since, metric=metric)

    async def episodes(
        self, name: str, *, status: str | None, limit: int, offset: int, group_id: str | None = None
    ) -> list[EpisodeSummary]:
        return await self._queries.episodes(
            name, status=status, limit=limit, offset=offset, group_id=group_id
        )

    # -- restoring runs (gateway.runs.restore) ------------------------------------------------

    async def restore(self) -> None:
        """Rebuild the runs of an earlier gateway process from the database (startup; see
        `RunRestorer.restore`)."""
        await self._restorer.restore()

    async def recover(self, run: Run, reason: str) -> None:
        """A policy's host process died: restore the run as a restart would (see
        `RunRestorer.recover`)."""
        await self._restorer.recover(run, reason)

    # -- checkpoints (gateway.runs.checkpoints) ----------------------------------------------

    def checkpoint_dir(self, run: Run, step: int) -> Path:
        return self._checkpoints.directory(run, step)

    async def checkpoint(self, run: Run, *, resumable: bool = True) -> CheckpointPublic | None:
        """Save every policy of `run` (see `RunCheckpoints.checkpoint`)."""
        return await self._checkpoints.checkpoint(run, resumable=resumable)

    async def checkpoint_by_name(self, name: str, *, optimizer: bool = True) -> CheckpointPublic:
        """`POST /runs/{id}/checkpoints` (see `RunCheckpoints.on_request`)."""
        return await self._checkpoints.on_request(self.get(name), optimizer=optimizer)

    async def delete_checkpoint(self, name: str, step: int) -> None:
        """`DELETE /runs/{name}/checkpoints/{step}` (e.g. a study keeping within its disk
        budget): the checkpoint goes, row and files; when it held the final weights an ended
        run's policies are served from, those `<run>/<policy>` models go too (404
        `model_not_found`, as after a restart). A live run resumes from an older checkpoint,
        or its start, if the gateway restarts."""
        run = self.get(name)
        async with run.lock:
            directory = await self._checkpoints.delete(run, step)
            if directory is not None:
                self._ended_runs.forget_served_from(run, directory)

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
        if not await self.create_policies(run, lambda name, plan: None, "creating"):
            return await self.public(run.name)
        await anyio.to_thread.run_sync(
            self._store.set_policy_versions, run.name, run.policy_versions()
        )
        await self.set_status(run, "running")
        self.start_training(run)
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

    # -- policies and training loops -------------------------------------------------------

    async def create_policies(
        self, run: Run, resume_from_of: Callable[[str, PolicyPlan], str | None], doing: str
    ) -> bool:
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
                await self.close_policies(run)
                origin = (
                    f"from {resume_from!r}" if resume_from else f"base_model {plan.base_model!r}"
                )
                prefix = "restart: " if doing == "restoring" else ""
                why = f"{prefix}policy {name!r} ({origin}): "
                await self.set_status(run, "failed", error=why + f"{type(error).__name__}: {error}")
                return False
        return True

    async def close_policies(self, run: Run, *, unregister: bool = True) -> None:
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

    def start_training(self, run: Run) -> None:
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
            await self.set_status(run, "paused")
        return await self.public(name)

    async def resume(self, name: str) -> RunPublic:
        run = self.get(name)
        self._require_live(run, "resumed")
        if run.status == "paused":
            run.error = None  # why it paused (a disk without room), answered by resuming
            await self.set_status(run, "running")
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

    async def set_status(self, run: Run, status: str, *, error: str | None = None) -> None:
        run.status = status  # type: ignore[assignment]
        if error is not None:
            run.error = error
        await anyio.to_thread.run_sync(
            lambda: self._store.update(run.name, status=status, error=run.error)
        )
        log.info("run %s: %s%s", run.name, status, f" ({error})" if error else "")

    async def _end(self, run: Run, status: str, *, reason: str, error: str | None = None) -> None:
        await self.set_status(run, status, error=error)
        run.wake.set()  # the loop sees the terminal status and returns
        await self.abort_open_episodes(run.name, reason=reason)
        task = asyncio.create_task(self._ended_runs.release(run), name=f"release-{run.name}")
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def abort_open_episodes(self, run: str, *, reason: str) -> int:
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
        if await self.checkpoint(run, resumable=self._checkpoints.keep(run) == 0) is None:
            return
        await self._end(run, "finished", reason="run finished")

    async def fail(self, run: Run, error: str) -> None:
        await self._end(run, "failed", reason="run failed", error=error)

    async def stop_untrainable(self, run: Run, reason: str) -> None:
        """`max_dropped_batches` batches in a row trained nothing: the run is stopped, as
        on request, with `reason` as its `error`."""
        log.warning("run %s: %s", run.name, reason)
        await self._end(run, "stopped", reason="run stopped", error=reason)

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
            await self.close_policies(run, unregister=False)
        await self._ended_runs.close()
