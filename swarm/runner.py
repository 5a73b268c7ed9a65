"""`WorkflowRunner`: what `swarm run workflow.py` does once the workflow has loaded.

Owns: the run loop — register the client, resolve the group size (flag, else the run's
`settings.group_size`, else 8), hand out episodes G per task with a shared `group_id`
(tasks cycled, `max_episodes` exact), run `concurrency` rollouts at once, heartbeat every
lease/3, turn each rollout's outcome into `finish` or `abort` (a raised exception is
printed at once and sent as the reason; a return value that is not a reward is refused),
and stop cleanly: on `max_episodes`, when the run stops taking episodes (409: the run
finished, was stopped — exit 0 with one line naming its last step — or failed, exit 1 with
its error), on a
signal or a reload (`stop()`, whose `abort_reason` the open episodes are aborted with), or
on an error it cannot get past — aborting the open episodes and deregistering on the way
out. `RunSummary.exit_code` is what the CLI exits with. With `episode_timeout_s`, a
`swarm.watchdog.RolloutWatchdog` ends rollouts that block the event loop.

Must not know about argument parsing or signals (`swarm.cli`), nor how requests are sent
and retried (`swarm.client`).
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
import traceback
import uuid
from collections import Counter
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from swarm.client import SwarmClient
from swarm.episode import ABORT_ON_CANCEL_RETRY_S, Episode, Reward, validate_reward
from swarm.errors import (
    ClientNotFound,
    ClientSuperseded,
    EpisodeNotOpen,
    GatewayError,
    GatewayUnavailable,
    InvalidReward,
    NotFound,
    RunNotAccepting,
    WorkflowError,
)
from swarm.progress import RunProgress
from swarm.watchdog import RolloutWatchdog
from swarm.workflow import Task, TaskCycle, Workflow, format_user_traceback

log = logging.getLogger(__name__)

DEFAULT_GROUP_SIZE = 8


@dataclass(frozen=True)
class RunnerSettings:
    run: str
    concurrency: int = 8
    group_size: int | None = None  # None: the run's settings.group_size, else 8
    max_episodes: int | None = None  # None: until stopped
    split: str = "train"
    episode_timeout_s: float | None = None  # a slower rollout is cancelled and aborted
    blocked_exit_s: float = 10.0  # a rollout blocking the loop this long after its abort: exit


class Outcome(enum.Enum):
    COMPLETED = ("completed", 0)  # max_episodes ran
    RUN_STOPPED = ("run stopped", 0)  # the gateway refused new episodes (409)
    RUN_FINISHED = ("run finished", 0)  # … because the run reached its last step
    RUN_FAILED = ("run failed", 1)  # … because the run failed (its error is the message)
    INTERRUPTED = ("interrupted", 130)  # Ctrl-C
    TERMINATED = ("terminated", 143)  # SIGTERM
    GATEWAY_FAILED = ("gateway error", 1)
    WORKFLOW_FAILED = ("workflow error", 2)
    RELOADING = ("workflow changed", 0)  # `swarm run --watch` goes on with the new code

    def __init__(self, label: str, exit_code: int):
        self.label = label
        self.exit_code = exit_code


@dataclass(frozen=True)
class RunSummary:
    outcome: Outcome
    message: str
    finished: int
    aborted: int
    mean_recent_reward: float | None = None
    recent_episodes: int = 0  # how many finished episodes the mean is over (the last 50 at most)

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code

    def describe(self) -> str:
        """e.g. `completed — 64 finished, 0 aborted, mean reward (last 50) 0.910`."""
        text = f"{self.outcome.label} — {self.finished} finished, {self.aborted} aborted"
        if self.mean_recent_reward is not None:
            text += f", mean reward (last {self.recent_episodes}) {self.mean_recent_reward:.3f}"
        return text + (f": {self.message}" if self.message else "")


class EpisodeSlots:
    """(task, group_id) for each episode to run: `group_size` in a row share one task and
    one group id; at most `max_episodes` in all."""

    def __init__(self, tasks: Iterator[Task], group_size: int, max_episodes: int | None):
        assert group_size >= 1
        self.tasks = tasks
        self.group_size = group_size
        self.max_episodes = max_episodes
        self.handed_out = 0
        self._task: Task | None = None
        self._group_id = ""
        self._left_in_group = 0

    def next(self) -> tuple[Task, str] | None:
        if self.max_episodes is not None and self.handed_out >= self.max_episodes:
            return None
        if self._left_in_group == 0:
            self._task = next(self.tasks)
            self._group_id = uuid.uuid4().hex
            self._left_in_group = self.group_size
        assert self._task is not None
        self._left_in_group -= 1
        self.handed_out += 1
        return self._task, self._group_id


class WorkflowRunner:
    """Runs one workflow against one run of a gateway until done or stopped."""

    def __init__(
        self,
        workflow: Workflow,
        settings: RunnerSettings,
        client: SwarmClient,
        progress: RunProgress,
    ):
        assert settings.concurrency >= 1
        self.workflow = workflow
        self.settings = settings
        self.client = client
        self.progress = progress
        self.group_size: int | None = None
        self.fallback_model: str | None = None
        self._group_size_source = ""
        self._stopping = asyncio.Event()
        self._registering = asyncio.Lock()
        self._outcome: tuple[Outcome, str] | None = None
        self._abort_reason: str | None = None
        self._failures_seen: Counter[tuple[str, str]] = Counter()
        self._watchdog: RolloutWatchdog | None = None

    def stop(self, outcome: Outcome, message: str, *, abort_reason: str | None = None) -> None:
        """Ask the run to end; the first reason given is the one reported. Rollouts still
        running are cancelled and their episodes aborted with `abort_reason` (default:
        "client stopped while the rollout ran")."""
        if self._outcome is None:
            self._outcome = (outcome, message)
            self._abort_reason = abort_reason
        self._stopping.set()

    async def run(self) -> RunSummary:
        tasks = TaskCycle(self.workflow.tasks, self.settings.split)
        try:
            first_task = next(tasks)  # a broken `tasks()` fails before anything is registered
        except WorkflowError as error:
            return self._summary(Outcome.WORKFLOW_FAILED, str(error))
        try:
            await self._unless_stopped(self.client.register())
        except GatewayError as error:
            self.stop(Outcome.GATEWAY_FAILED, f"cannot register with the gateway: {error}")
        if self._stopping.is_set():  # a failure, or a signal while the gateway was away
            await self._deregister()
            return self._summary(*self._outcome)
        try:
            await self._unless_stopped(self._resolve_run())
            self._print_settings()
            slots = EpisodeSlots(
                itertools.chain([first_task], tasks),
                self.group_size or DEFAULT_GROUP_SIZE,
                self.settings.max_episodes,
            )
            with self.progress:
                await self._run_workers(slots)
        except GatewayError as error:
            self.stop(Outcome.GATEWAY_FAILED, str(error))
        finally:
            await self._deregister()
        outcome, message = self._outcome or (Outcome.COMPLETED, "")
        if outcome is Outcome.RUN_STOPPED:
            outcome, message = await self._how_the_run_ended(message)
        return self._summary(outcome, message)

    async def _how_the_run_ended(self, message: str) -> tuple[Outcome, str]:
        """The run took no more episodes: say whether it finished, was stopped or failed."""
        try:
            run = await self.client.get_run(self.settings.run)
        except GatewayError as error:
            log.debug("GET /runs/%s failed: %s", self.settings.run, error)
            return Outcome.RUN_STOPPED, message
        name = self.settings.run
        if run is None or run.status not in ("finished", "stopped", "failed"):
            return Outcome.RUN_STOPPED, message
        if run.status == "finished":
            return Outcome.RUN_FINISHED, f"run {name!r} finished at step {run.step}"
        if run.status == "failed":
            return Outcome.RUN_FAILED, f"run {name!r} failed at step {run.step}: {run.error}"
        return Outcome.RUN_STOPPED, f"run {name!r} was stopped at step {run.step}"

    # -- setup and teardown ---------------------------------------------------------------

    async def _unless_stopped(self, work: Coroutine[Any, Any, None]) -> None:
        """Await `work`, but give it up when `stop()` is called meanwhile (a Ctrl-C while
        requests are being retried against a gateway that is away)."""
        task = asyncio.ensure_future(work)
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not task.done():
                task.cancel()
            await asyncio.wait({task, stopping})
        if not task.cancelled():
            task.result()  # re-raises the work's own error

    async def _resolve_run(self) -> None:
        run = await self.client.get_run(self.settings.run)
        if run is not None and run.policies:
            self.fallback_model = next(iter(run.policies.values())).model
        else:
            try:
                self.fallback_model = next(iter(await self.client.served_models()), None)
            except GatewayError as error:
                log.debug("GET /v1/models failed: %s", error)
        if self.settings.group_size is not None:
            self.group_size, source = self.settings.group_size, "--group-size"
        elif run is not None:
            self.group_size, source = run.settings.group_size, f"run {run.name!r}"
        else:
            self.group_size, source = DEFAULT_GROUP_SIZE, "default; no such run on the gateway"
        self._group_size_source = source

    def _print_settings(self) -> None:
        settings = self.settings
        self.progress.message(
            f"swarm run {self.workflow.path.name} (code {self.workflow.code_version}) → "
            f"{self.client.gateway_url} run={settings.run} client={self.client.client_id} | "
            f"group_size={self.group_size} ({self._group_size_source}) "
            f"concurrency={settings.concurrency} max_episodes={settings.max_episodes or '∞'} "
            f"split={settings.split} model={self.fallback_model or '?'}"
        )

    async def _deregister(self) -> None:
        try:
            await self.client.deregister()
        except GatewayError as error:
            self.progress.message(f"could not deregister client: {error}")

    def _summary(self, outcome: Outcome, message: str) -> RunSummary:
        return RunSummary(
            outcome=outcome,
            message=message,
            finished=self.progress.finished,
            aborted=self.progress.aborted,
            mean_recent_reward=self.progress.mean_recent_reward,
            recent_episodes=len(self.progress.recent_rewards),
        )

    # -- workers --------------------------------------------------------------------------

    async def _run_workers(self, slots: EpisodeSlots) -> None:
        if self.settings.episode_timeout_s is None:
            await self._run_workers_unwatched(slots)
            return
        self._watchdog = RolloutWatchdog(
            gateway_url=self.client.gateway_url,
            api_key=self.client.api_key,
            timeout_s=self.settings.episode_timeout_s,
            client_id=lambda: self.client.client_id,
            exit_after_s=self.settings.blocked_exit_s,
        )
        pulse = asyncio.create_task(self._pulse(self._watchdog), name="swarm-pulse")
        try:
            with self._watchdog:
                await self._run_workers_unwatched(slots)
        finally:
            pulse.cancel()
            await asyncio.gather(pulse, return_exceptions=True)
            self._watchdog = None

    @staticmethod
    async def _pulse(watchdog: RolloutWatchdog) -> None:
        while True:
            watchdog.pulse()
            await asyncio.sleep(watchdog.poll_s)

    async def _run_workers_unwatched(self, slots: EpisodeSlots) -> None:
        heartbeat = asyncio.create_task(self._keep_alive(), name="swarm-heartbeat")
        workers = [
            asyncio.create_task(self._work(slots), name=f"swarm-worker-{i}")
            for i in range(self.settings.concurrency)
        ]
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            all_done = asyncio.gather(*workers)
            await asyncio.wait({all_done, stopping}, return_when=asyncio.FIRST_COMPLETED)
            for worker in workers:
                worker.cancel()  # only those still running: their open episodes are aborted
            results = await asyncio.gather(*workers, return_exceptions=True)
            if all_done.done() and not all_done.cancelled():
                all_done.exception()  # retrieved; the same errors are in `results`
            for result in results:
                if isinstance(result, BaseException) and not isinstance(
                    result, asyncio.CancelledError
                ):
                    raise result
        finally:
            heartbeat.cancel()
            stopping.cancel()
            await asyncio.gather(heartbeat, stopping, return_exceptions=True)

    async def _work(self, slots: EpisodeSlots) -> None:
        try:
            while not self._stopping.is_set():
                slot = slots.next()
                if slot is None:
                    return
                await self._run_episode(*slot)
        except WorkflowError as error:
            self.stop(Outcome.WORKFLOW_FAILED, str(error))
        except RunNotAccepting as error:
            self.stop(
                Outcome.RUN_STOPPED,
                f"run {self.settings.run!r} takes no more episodes (stopped or finished): "
                f"{error.message}",
            )
        except GatewayError as error:
            self.stop(Outcome.GATEWAY_FAILED, str(error))

    async def _keep_alive(self) -> None:
        interval_s = max((self.client.lease_s or 30.0) / 3, 0.01)
        while True:
            await asyncio.sleep(interval_s)
            client_id = self.client.client_id
            try:
                await self.client.heartbeat()
            except ClientSuperseded as error:
                self.stop(Outcome.GATEWAY_FAILED, str(error))
                return
            except ClientNotFound:
                try:
                    await self._register_again(stale_client_id=client_id)
                except GatewayError as error:
                    self.progress.message(f"could not register again: {error}")
            except GatewayError as error:
                self.progress.message(f"heartbeat failed: {error}")

    async def _register_again(self, *, stale_client_id: str | None) -> None:
        """Register anew once, however many workers found `stale_client_id` forgotten."""
        async with self._registering:
            if self.client.client_id != stale_client_id:
                return  # another worker already did
            self.progress.message(
                f"the gateway forgot client {stale_client_id} (lease lapsed?); registering again"
            )
            await self.client.register()

    # -- one episode ----------------------------------------------------------------------

    async def _run_episode(self, task: Task, group_id: str) -> None:
        family = task.get("family")
        episode = self.client.episode(
            self.settings.run,
            task_id=str(task["id"]),
            task_family=family if isinstance(family, str) else None,
            group_id=group_id,
            fallback_model=self.fallback_model,
        )
        client_id = self.client.client_id
        try:
            await episode.open()
        except ClientSuperseded as error:
            self.stop(Outcome.GATEWAY_FAILED, str(error))
            return
        except ClientNotFound:
            await self._register_again(stale_client_id=client_id)
            await episode.open()
        self.progress.saw_policy_versions(episode.policy_versions)
        async with episode:
            try:
                await self._roll_out(task, episode)
            except asyncio.CancelledError:
                if episode.is_open and self._abort_reason is not None:
                    await self._abort_cancelled(episode, self._abort_reason)
                raise

    async def _roll_out(self, task: Task, episode: Episode) -> None:
        limit = asyncio.timeout(self.settings.episode_timeout_s)
        watchdog = self._watchdog
        watched = (
            watchdog.started(episode.episode_id, episode.api_key, episode.task_id)
            if watchdog is not None
            else None
        )
        try:
            async with limit:
                try:
                    value = await self.workflow.rollout(task, episode)
                finally:
                    if watchdog is not None and watched is not None:
                        watchdog.ended(watched)
        except TimeoutError as error:
            if not limit.expired():  # the user's own timeout: a failure like any other
                await self._rollout_failed(task, episode, error)
                return
            message = (
                "rollout did not return within --episode-timeout "
                f"{self.settings.episode_timeout_s:g} s; cancelled"
            )
            self.progress.failure(
                f"episode {episode.episode_id} (task {episode.task_id}): {message}"
            )
            await self._abort(episode, message)
            return
        except Exception as error:  # the user's code: this episode fails, the client goes on
            await self._rollout_failed(task, episode, error)
            return
        if not episode.is_open:  # the rollout finished or aborted the episode itself
            if episode.status == "finished" and episode.result is not None:
                self.progress.episode_finished(_mean(episode.result.rewards or {"": 0.0}))
            else:
                self.progress.episode_aborted()
            return
        try:
            reward = validate_reward(value)
        except InvalidReward as error:
            self.progress.failure(f"episode {episode.episode_id} (task {episode.task_id}): {error}")
            await self._abort(episode, str(error))
            return
        try:
            await episode.finish(reward)
        except (EpisodeNotOpen, NotFound) as error:
            self.progress.message(
                f"episode {episode.episode_id} was closed by the gateway before finish: {error}"
            )
            self.progress.episode_aborted()
            return
        except GatewayUnavailable:
            raise
        except GatewayError as error:  # e.g. 422: a policy name the run does not have
            self.progress.failure(
                f"episode {episode.episode_id} (task {episode.task_id}): the gateway refused "
                f"the reward {reward!r}: {error}"
            )
            await self._abort(episode, f"the gateway refused the reward: {error}")
            return
        self.progress.episode_finished(_mean(reward))

    async def _rollout_failed(self, task: Task, episode: Episode, error: Exception) -> None:
        """Abort the episode; print the traceback — unless the gateway had closed the
        episode meanwhile (the run ended, the client was dropped), which is why the rollout's
        calls failed: then one line says so."""
        text = format_user_traceback(error)
        if await self._abort(episode, text):
            summary = "".join(traceback.format_exception_only(error)).strip().splitlines()[-1]
            self.progress.message(
                f"episode {episode.episode_id} (task {task['id']}) was closed by the gateway "
                f"while its rollout ran (the run ended?); the rollout then raised {summary}"
            )
        else:
            self._print_failure(task, episode, error, text)

    async def _abort(self, episode: Episode, reason: str) -> bool:
        """Abort `episode` unless closed already; True when the gateway had closed it."""
        # a rollout may close its episode itself and raise afterwards (or its own finish
        # found the episode closed): it is over either way, and never aborted twice
        closed_by_gateway = False
        if episode.is_open:
            try:
                await episode.abort(reason)
            except (EpisodeNotOpen, NotFound) as error:
                log.debug("episode %s was already closed: %s", episode.episode_id, error)
                closed_by_gateway = True
        self.progress.episode_aborted()
        return closed_by_gateway

    async def _abort_cancelled(self, episode: Episode, reason: str) -> None:
        """Abort an episode whose rollout was cancelled by `stop()`, without waiting long on
        a gateway that is away (deregistering aborts it there anyway)."""
        try:
            await episode.abort(reason, retry_for_s=ABORT_ON_CANCEL_RETRY_S)
        except (EpisodeNotOpen, NotFound) as error:
            log.debug("episode %s was already closed: %s", episode.episode_id, error)
        except GatewayError as error:
            log.warning("could not abort episode %s: %s", episode.episode_id, error)
        self.progress.episode_aborted()

    def _print_failure(self, task: Task, episode: Episode, error: Exception, text: str) -> None:
        """The full traceback the first time a failure happens at a place; a line after."""
        frames = traceback.extract_tb(error.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        signature = (type(error).__name__, where)
        self._failures_seen[signature] += 1
        seen = self._failures_seen[signature]
        header = f"episode {episode.episode_id} (task {task['id']}): rollout raised"
        if seen == 1:
            self.progress.failure(f"{header}\n{text}")
        else:
            summary = "".join(traceback.format_exception_only(error)).strip().splitlines()[-1]
            self.progress.failure(f"{header} {summary} (again at {where}, {seen} times)")


def _mean(reward: Reward) -> float:
    if isinstance(reward, dict):
        return sum(reward.values()) / len(reward)
    return reward


async def run_workflow(
    workflow: Workflow,
    settings: RunnerSettings,
    client: SwarmClient,
    progress: RunProgress | None = None,
) -> RunSummary:
    """Run `workflow` to the end (see `WorkflowRunner`)."""
    progress = progress or RunProgress(total=settings.max_episodes)
    return await WorkflowRunner(workflow, settings, client, progress).run()
