"""Policies (and served base models) hosted as Ray actors, behind the same interfaces the
gateway uses for in-process ones (`gateway serve --ray auto|HOST:PORT`).

Owns: `RayPolicyFactory` (a `trainer.types.PolicyFactory`: each `create` places one
actor on the cluster and answers a `Policy` of proxies), `RayEngine` (an
`InferenceEngine` whose `stream` relays the actor's token stream — Ray streams an async
generator's items as they are yielded; closing it early cancels the actor task),
`RayTrainer` (a `PolicyTrainer`; `host_lost()` returns when the actor's process is gone,
so the run manager can restore the run from its checkpoint as after a gateway restart)
and `start_served_model` for the base models `serve` loads.

Ray's own machinery does the placement, transport and lifetime (actors die with the
gateway process that owns them); nothing here schedules or serialises by hand. A dead
actor surfaces as `trainer.errors.PolicyHostLost`. The actor class itself
(`trainer.hosting.PolicyHost`) and the tokenizer type are handed in by the composition
root: this module never imports torch, and imports Ray only when used.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from trainer.errors import PolicyHostLost
from trainer.types import (
    ChatTokenizer,
    Completion,
    GeneratedToken,
    Group,
    Policy,
    SamplingParams,
    ServedModel,
    StepResult,
    StreamEnd,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActorResources:
    """What each actor asks the cluster for (Ray's logical resources)."""

    num_cpus: float = 1.0
    num_gpus: float = 0.0


def cluster_cpus() -> float:
    """The joined cluster's logical CPUs (all nodes', not this process's machine)."""
    import ray

    return float(ray.cluster_resources().get("CPU", 0.0))


def _lost(error: BaseException, what: str) -> PolicyHostLost:
    return PolicyHostLost(f"the Ray actor hosting {what} is gone ({type(error).__name__})")


class RayEngine:
    """`InferenceEngine` on an actor; `version` is what the actor last reported."""

    def __init__(self, actor: Any, name: str, version: int, max_context: int):
        self._actor = actor
        self._name = name
        self._version = version
        self._max_context = max_context

    @property
    def version(self) -> int:
        return self._version

    @property
    def max_context(self) -> int:
        return self._max_context

    def saw_version(self, version: int) -> None:
        self._version = max(self._version, version)

    async def stream(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[GeneratedToken | StreamEnd]:
        import ray

        generator = self._actor.stream.options(num_returns="streaming").remote(
            list(prompt_token_ids), params
        )
        finished = False
        try:
            async for ref in generator:
                try:
                    item = await ref
                except ray.exceptions.RayActorError as error:
                    raise _lost(error, self._name) from error
                if isinstance(item, GeneratedToken):
                    self.saw_version(item.version)
                yield item
                if isinstance(item, StreamEnd):
                    finished = True
                    return
        except ray.exceptions.RayActorError as error:
            raise _lost(error, self._name) from error
        finally:
            if not finished:
                ray.cancel(generator)

    async def generate(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> Completion:
        async for item in self.stream(prompt_token_ids, params):
            if isinstance(item, StreamEnd):
                return item.completion
        raise PolicyHostLost(f"the stream of {self._name} ended without a completion")


class RayTrainer:
    """`PolicyTrainer` on an actor (the same actor as its `RayEngine`)."""

    def __init__(self, actor: Any, engine: RayEngine, name: str):
        self._actor = actor
        self._engine = engine
        self._name = name
        self.released = False  # the run ended: the actor freed its training state

    @property
    def version(self) -> int:
        return self._engine.version

    async def train_step(self, groups: Sequence[Group], settings: Any) -> StepResult:
        import ray

        payload = settings.model_dump(mode="json") if hasattr(settings, "model_dump") else settings
        try:
            result: StepResult = await self._actor.train_step.remote(list(groups), payload)
        except ray.exceptions.RayActorError as error:
            raise _lost(error, self._name) from error
        self._engine.saw_version(result.version)
        return result

    async def save_checkpoint(self, directory: str, *, resumable: bool = True) -> None:
        import ray

        try:
            await self._actor.save_checkpoint.remote(directory, resumable)
        except ray.exceptions.RayActorError as error:
            raise _lost(error, self._name) from error

    def release_training(self) -> None:
        """The run ended: the actor frees its training state; its engine keeps serving."""
        import ray

        try:
            ray.get(self._actor.release_training.remote(), timeout=120)
        except ray.exceptions.RayActorError:
            pass  # a dead actor holds nothing any more
        except Exception:
            log.exception("%s: freeing the actor's training state failed", self._name)
        self.released = True

    async def host_lost(self) -> str:
        """Return (with why) once the actor's process is gone; never while it lives."""
        import ray

        try:
            await self._actor.wait_closed.remote()
        except ray.exceptions.RayActorError as error:
            return str(_lost(error, self._name))
        return f"the Ray actor hosting {self._name} was closed"

    def close(self) -> None:
        import ray

        with contextlib.suppress(Exception):  # already dead is as good as closed
            ray.kill(self._actor, no_restart=True)


async def _start(
    actor_class: Any,
    resources: ActorResources,
    name: str,
    init: dict[str, Any],
) -> tuple[Any, dict[str, Any]]:
    """Place one actor and wait until it has built its model; (actor, its description)."""
    import ray

    actor = _remote_class(actor_class, resources).remote(**init)
    try:
        description = await actor.describe.remote()
    except ray.exceptions.RayActorError as error:
        raise PolicyHostLost(f"the Ray actor for {name} failed to start: {error}") from error
    _log_started(name, description)
    return actor, description


def _remote_class(actor_class: Any, resources: ActorResources) -> Any:
    import ray

    return ray.remote(actor_class).options(
        num_cpus=resources.num_cpus,
        num_gpus=resources.num_gpus,
        max_restarts=0,  # a lost actor is restored by the run manager, from a checkpoint
        max_concurrency=1000,
    )


def _log_started(name: str, description: dict[str, Any]) -> None:
    log.info(
        "%s: Ray actor pid %s on %s (from %s)",
        name,
        description["pid"],
        description["host"],
        description["source"],
    )


class RayPolicyFactory:
    """`PolicyFactory` placing each policy in its own Ray actor."""

    def __init__(
        self,
        *,
        actor_class: Any,
        factory_kwargs: dict[str, Any],
        resources: ActorResources | None = None,
        threads: int | None = None,
    ):
        self._actor_class = actor_class
        self._factory_kwargs = factory_kwargs
        self._resources = resources or ActorResources()
        self._threads = threads
        self.actors: dict[str, Any] = {}  # served name → its live actor (tests kill them)

    async def create(
        self,
        *,
        served_name: str,
        base_model: str,
        lora: dict[str, Any] | None,
        seed: int,
        resume_from: str | None = None,
    ) -> Policy:
        policy = {
            "served_name": served_name,
            "base_model": base_model,
            "lora": lora,
            "seed": seed,
            "resume_from": resume_from,
        }
        actor, description = await _start(
            self._actor_class,
            self._resources,
            served_name,
            {"factory": self._factory_kwargs, "policy": policy, "threads": self._threads},
        )
        self.actors[served_name] = actor
        engine = RayEngine(actor, served_name, description["version"], description["max_context"])
        tokenizer: ChatTokenizer = description["tokenizer"]
        return Policy(
            served=ServedModel(name=served_name, tokenizer=tokenizer, engine=engine),
            trainer=RayTrainer(actor, engine, served_name),
        )


def start_served_model(
    *,
    actor_class: Any,
    name: str,
    model: dict[str, Any],
    factory_kwargs: dict[str, Any],
    resources: ActorResources | None = None,
    threads: int | None = None,
) -> ServedModel:
    """A base model `serve` loads, on an actor (blocking: `serve` calls it before the
    server starts)."""
    import ray

    init = {"factory": factory_kwargs, "model": model, "threads": threads}
    actor = _remote_class(actor_class, resources or ActorResources()).remote(**init)
    try:
        description = ray.get(actor.describe.remote())
    except ray.exceptions.RayActorError as error:
        raise PolicyHostLost(f"the Ray actor for {name} failed to start: {error}") from error
    _log_started(name, description)
    engine = RayEngine(actor, name, description["version"], description["max_context"])
    return ServedModel(
        name=name, tokenizer=description["tokenizer"], engine=engine, owned_by=description["source"]
    )
