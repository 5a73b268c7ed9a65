"""The episode lifecycle of the swarm API: create, finish (reward → samples), abort.

Owns: `EpisodeService` — which run an episode belongs to and whether that run takes
episodes now (unknown run 404, paused or starting 429 with `retry_after`, stopped /
finished / failed 409), and turning a finished episode's calls into samples that are
persisted before `finish` returns and then buffered for training as the
`FinishedEpisode` that `gateway.runs.samples.finished_episode` builds (its reward per policy —
a float is every policy's reward, a dict names each policy of the run exactly — its
token-drift counts, task family and client's code version: run-wide training metrics). Admission by the run's task mix and back-pressure: a new group of a
family beyond its quota of the next two batches waits (429 `task_mix_quota`), any new
group while the run holds `max_buffered_groups` groups waits (429 `buffer_full`); an
episode joining a group in progress is always admitted (it lets the group complete).

An episode of run "default" while no run has that name is *recording-only* (issue 2):
its calls are recorded, its reward stored, no samples made; its "policies" are the
gateway's base models. Raises `GatewayError`s; knows nothing about routes or torch.
"""

from __future__ import annotations

import math
import secrets

import anyio

from gateway.errors import RateLimited, RunNotAccepting, RunNotFound, Unprocessable
from gateway.recording.recorder import CallRecord, EpisodeRecord, EpisodeRecorder, episode_not_open
from gateway.registry import ModelRegistry
from gateway.runs.manager import RunManager
from gateway.runs.run import Run
from gateway.runs.samples import finished_episode, rewards_per_policy, sample_rows
from gateway.runs.task_mix import family_of, shares
from gateway.settings import GatewaySettings
from gateway.swarm_api.clients import ClientRegistry
from swarm.protocol import EpisodeCreate, EpisodeCreated, EpisodeFinish, EpisodeResult

RECORDING_ONLY_RUN = "default"


class EpisodeService:
    def __init__(
        self,
        *,
        settings: GatewaySettings,
        models: ModelRegistry,
        recorder: EpisodeRecorder,
        runs: RunManager,
        clients: ClientRegistry,
    ):
        self._settings = settings
        self._models = models
        self._recorder = recorder
        self._runs = runs
        self._clients = clients
        # open episodes of runs: episode id → (its run, its client's code version)
        self._open: dict[str, tuple[Run, str | None]] = {}
        recorder.on_close(self._closed)

    def _closed(self, episode_id: str) -> None:
        entry = self._open.pop(episode_id, None)
        if entry is not None:
            entry[0].in_flight.pop(episode_id, None)

    def _admit(self, run: Run, family: str, group_id: str | None) -> None:
        """Whether a new episode of `family` may start now (see the module docstring)."""
        total, per_family, open_keys = run.groups_held()
        if group_id is not None and group_id in open_keys:
            return  # it joins a group in progress
        mix = run.effective_task_mix()
        if mix is not None and family not in mix:
            raise Unprocessable(
                f"task_family: {family!r} is not in run {run.name!r}'s task_mix; its families "
                f"are: {', '.join(mix)} (an episode without task_family is "
                f"{family_of(None)!r}).",
                param="task_family",
            )
        retry_after = self._settings.paused_retry_after_s
        limit = run.settings.buffered_groups_limit
        if total >= limit:
            raise RateLimited(
                f"Run {run.name!r} holds {total} groups (max_buffered_groups {limit}); "
                "retry when training has taken some.",
                retry_after=retry_after,
                code="buffer_full",
            )
        if mix is not None:
            quota = math.ceil(shares(mix)[family] * 2 * run.settings.batch_groups)
            held = per_family.get(family, 0)
            if held >= quota:
                raise RateLimited(
                    f"Task family {family!r} of run {run.name!r} holds {held} groups, its "
                    f"quota of the next two batches ({quota}); retry later.",
                    retry_after=retry_after,
                    code="task_mix_quota",
                )

    def _accepting_run(self, name: str) -> Run | None:
        """The run a new episode joins (None: recording-only), or why it cannot."""
        run = self._runs.find(name)
        if run is None:
            if name == RECORDING_ONLY_RUN:
                return None
            raise RunNotFound(f"No run named {name!r}; create it with POST /runs.", param="run")
        if run.status in ("paused", "starting"):
            raise RateLimited(
                f"Run {name!r} is {run.status}; retry later.",
                retry_after=self._settings.paused_retry_after_s,
                code=f"run_{run.status}",
            )
        if run.status != "running":
            raise RunNotAccepting(
                f"Run {name!r} is {run.status} and takes no more episodes.", param="run"
            )
        return run

    async def create(self, body: EpisodeCreate, base_url: str) -> EpisodeCreated:
        code_version = None
        if body.client_id is not None:
            code_version = self._clients.active(body.client_id).code_version
        run = self._accepting_run(body.run)
        family = family_of(body.task_family)
        reservation = "reserved-" + secrets.token_hex(8)
        if run is not None:
            self._admit(run, family, body.group_id)
            run.in_flight[reservation] = (family, body.group_id or reservation)
        try:
            episode = await anyio.to_thread.run_sync(
                lambda: self._recorder.create_episode(
                    run=body.run,
                    task_id=body.task_id,
                    task_family=body.task_family,
                    group_id=body.group_id,
                    client_id=body.client_id,
                )
            )
        finally:
            if run is not None:
                run.in_flight.pop(reservation, None)
        if run is not None:
            run.in_flight[episode.episode_id] = (family, body.group_id or episode.episode_id)
            self._open[episode.episode_id] = (run, code_version)
        assert episode.api_key is not None
        created = EpisodeCreated(
            episode_id=episode.episode_id,
            api_key=episode.api_key,
            base_url=base_url,
            policy_versions=self._models.base_versions(),
            group_id=body.group_id,
        )
        if run is not None:
            created.policy_versions = run.policy_versions()
            created.models = {policy: run.model_of(policy) for policy in run.plans}
            created.model = run.model_of(next(iter(run.plans)))
        return created

    def _training_run(self, episode: EpisodeRecord) -> Run | None:
        """The run an episode trains, if any (a run created after it cannot own it)."""
        run = self._runs.find(episode.run)
        if run is None or run.created_at > episode.created_at or not run.ready:
            return None
        return run

    async def finish(self, episode_id: str, body: EpisodeFinish) -> EpisodeResult:
        episode = await anyio.to_thread.run_sync(self._recorder.get_episode, episode_id)
        if episode.status != "open":
            raise episode_not_open(episode_id, episode.status, episode.abort_reason)
        run = self._training_run(episode)
        policies = list(run.policies) if run is not None else self._models.base_names()
        rewards = rewards_per_policy(body.reward, policies)
        code_version = self._open.get(episode_id, (None, None))[1]
        calls: list[CallRecord] = []

        def make_samples(record, recorded):
            calls.extend(recorded)
            return sample_rows(record, recorded, rewards) if run is not None else []

        record, rows = await anyio.to_thread.run_sync(
            lambda: self._recorder.finish_episode(
                episode_id, reward=body.reward, metrics=body.metrics, make_samples=make_samples
            )
        )
        if run is not None and not run.is_terminal:
            run.add_finished(
                finished_episode(record, rows, calls, policies=policies, code_version=code_version)
            )
        return EpisodeResult(
            episode_id=episode_id, status="finished", rewards=rewards, samples=len(rows)
        )

    async def abort(self, episode_id: str, reason: str) -> EpisodeResult:
        """Abort an open episode; aborting it again answers the same (idempotent)."""
        record, _ = await anyio.to_thread.run_sync(
            lambda: self._recorder.abort_episode(episode_id, reason=reason or "aborted by client")
        )
        return EpisodeResult(episode_id=record.episode_id, status="aborted")
