"""Ended runs' policies: still served under `<run>/<policy>`, from their final weights on
disk, with at most a few engines resident.

A held-out evaluation calls an ended run's policy by model name after the run ended, so its
final weights must stay servable — but a gateway that kept every ended run's engine would
grow by one engine copy a run (issue 14, F11). When a run ends, `EndedRuns` hands each
policy's engine to the `EndedPolicyPool` (it becomes the most recently used resident) and
serves the policy through a `ReloadingEngine`: a request leases the policy's engine from the
pool, which loads it from the policy's final weights (`source`: the run's final checkpoint,
or what the policy was built from when it never trained) when it is not resident. The pool
keeps the `resident` most recently used engines; others are shut down as soon as no request
uses them (a load first evicts an idle one, so two never overlap needlessly). `resident` 0
loads one per request. `EndedTrainer` stands in the run for the freed trainer. A restarted
gateway registers its ended runs' policies the same way, none resident until asked.

Knows nothing of torch, HTTP or runs: `load(source, version, tokenizer)` is the policy
factory's (`TorchPolicyFactory.load_engine`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from trainer.memory import release_memory
from trainer.types import ChatTokenizer, Completion, InferenceEngine, SamplingParams

log = logging.getLogger(__name__)

EngineLoader = Callable[[str, int, ChatTokenizer], Awaitable[InferenceEngine]]
IDLE_WAIT_S = 30.0  # an evicted engine still finishing a request gets this long


@dataclass
class _Slot:
    engine: asyncio.Future[InferenceEngine]  # loading, or loaded
    users: int = 0  # requests holding a lease
    loaded_at: float = field(default_factory=time.monotonic)


class EndedPolicyPool:
    """The resident engines of ended runs' policies, by served name, least recently used
    first."""

    def __init__(self, load: EngineLoader, resident: int = 1):
        self._load = load
        self.resident = resident
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._closing: set[asyncio.Future[None]] = set()
        self.loads = 0  # engines loaded from disk (an adopted engine is no load)

    def resident_names(self) -> list[str]:
        """Served names whose engine is resident or loading, least recently used first."""
        return list(self._slots)

    def adopt(self, name: str, engine: InferenceEngine) -> None:
        """`name`'s engine, already running (its run just ended): resident, most recent."""
        future: asyncio.Future[InferenceEngine] = asyncio.get_running_loop().create_future()
        future.set_result(engine)
        self._drop(name)
        self._slots[name] = _Slot(future)
        self._evict()

    def forget(self, name: str) -> None:
        """`name` is no longer served (its final weights were deleted): its engine goes once
        idle, and nothing reloads it."""
        self._drop(name)

    @asynccontextmanager
    async def lease(
        self, name: str, source: str, version: int, tokenizer: ChatTokenizer
    ) -> AsyncIterator[InferenceEngine]:
        """`name`'s engine for one request (loaded from `source` unless resident)."""
        slot = self._slots.get(name)
        if slot is None:
            self._evict(room_for=1)
            log.info("%s: loading its final weights from %s", name, source)
            slot = _Slot(asyncio.ensure_future(self._load(source, version, tokenizer)))
            self._slots[name] = slot
            self.loads += 1
        self._slots.move_to_end(name)
        slot.users += 1
        try:
            try:
                engine = await asyncio.shield(slot.engine)
            except Exception:
                if self._slots.get(name) is slot and slot.engine.done():
                    del self._slots[name]  # the next request tries again
                raise
            self._evict()
            yield engine
        finally:
            slot.users -= 1
            self._evict()

    def _evict(self, room_for: int = 0) -> None:
        """Shut down idle engines, least recently used first, beyond `resident - room_for`."""
        for name in list(self._slots):
            if len(self._slots) + room_for <= self.resident:
                return
            slot = self._slots[name]
            if slot.users == 0 and slot.engine.done():
                self._drop(name)

    def _drop(self, name: str) -> None:
        slot = self._slots.pop(name, None)
        if slot is None or slot.engine.cancelled() or slot.engine.exception() is not None:
            return
        engine = slot.engine.result()
        closing = asyncio.get_running_loop().run_in_executor(None, _shut_down, engine)
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        log.info("%s: engine unloaded (ended run; reloads on demand)", name)

    async def close(self) -> None:
        """Gateway shutdown: every resident engine goes."""
        for name in list(self._slots):
            slot = self._slots[name]
            if not slot.engine.done():
                slot.engine.cancel()
            self._drop(name)
        await asyncio.gather(*self._closing, return_exceptions=True)


def _shut_down(engine: InferenceEngine) -> None:
    """Off the event loop: wait (bounded) for requests that got the engine before it was
    evicted, stop it, and give its memory back."""
    idle = getattr(engine, "idle", None)
    deadline = time.monotonic() + IDLE_WAIT_S
    while idle is not None and not idle() and time.monotonic() < deadline:
        time.sleep(0.05)
    shutdown = getattr(engine, "shutdown", None)
    if shutdown is not None:
        shutdown()
    del engine, shutdown, idle
    release_memory()


class ReloadingEngine:
    """Implements `trainer.types.InferenceEngine` for an ended run's policy: each request
    leases the policy's engine from the pool."""

    def __init__(
        self,
        pool: EndedPolicyPool,
        name: str,
        *,
        source: str,
        version: int,
        max_context: int,
        tokenizer: ChatTokenizer,
    ):
        self._pool = pool
        self.name = name
        self.source = source
        self._version = version
        self._max_context = max_context
        self.tokenizer = tokenizer

    @property
    def version(self) -> int:
        return self._version

    @property
    def max_context(self) -> int:
        return self._max_context

    def _lease(self):
        return self._pool.lease(self.name, self.source, self._version, self.tokenizer)

    async def stream(self, prompt_token_ids: Sequence[int], params: SamplingParams):
        async with (
            self._lease() as engine,
            aclosing(engine.stream(prompt_token_ids, params)) as items,
        ):
            async for item in items:  # closing this stream early cancels the request
                yield item

    async def generate(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> Completion:
        async with self._lease() as engine:
            return await engine.generate(prompt_token_ids, params)


class EndedTrainer:
    """Stands for an ended run's freed trainer (`Run.policies[...].trainer`): its version,
    `released`, and nothing to train, save or close."""

    released = True

    def __init__(self, version: int):
        self._version = version

    @property
    def version(self) -> int:
        return self._version

    async def train_step(self, groups: Any, settings: Any) -> Any:
        raise RuntimeError("this policy's run ended: its training state was released")

    async def save_checkpoint(self, directory: str, *, resumable: bool = True) -> None:
        raise RuntimeError("this policy's run ended: its training state was released")

    def release_training(self) -> None:
        pass

    def close(self) -> None:
        pass
