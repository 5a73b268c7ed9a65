"""What becomes of a run's policies once it ended: training memory freed at once, the
policies served on from their final weights on disk.

Owns: `EndedRuns` — at a run's end, its final weights written where no checkpoint holds
them yet (an export), its checkpoints' optimizer state dropped, its training memory freed
(master weights, gradients, optimizer state, reference model) and each policy's engine
handed to the ended-policy pool (`gateway.runs.ended_policies`: at most
`ended_policies_resident` engines loaded, the others reloaded on demand), so a gateway's
memory does not grow with the runs it hosted; and, at startup, a restored ended run's
policies registered again from their final weights (nothing loaded until asked). Ended
policies share one tokenizer object per fingerprint. Knows nothing about routes or torch.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path

import anyio

from gateway.registry import ModelRegistry
from gateway.runs.buffer import GroupBuffer
from gateway.runs.checkpoints import RunCheckpoints, released
from gateway.runs.ended_policies import EndedPolicyPool, EndedTrainer, ReloadingEngine
from gateway.runs.run import Run
from gateway.runs.store import RunStore
from gateway.settings import GatewaySettings
from trainer.memory import release_memory
from trainer.types import ChatTokenizer, InferenceEngine, Policy, PolicyFactory, ServedModel

log = logging.getLogger(__name__)


class EndedRuns:
    def __init__(
        self,
        *,
        settings: GatewaySettings,
        models: ModelRegistry,
        store: RunStore,
        factory: PolicyFactory | None,
        checkpoints: RunCheckpoints,
    ):
        self._models = models
        self._store = store
        self._factory = factory
        self._checkpoints = checkpoints
        # ended runs' policies are served from disk when the factory can load an engine alone
        self.pool = EndedPolicyPool(self._load_engine, settings.ended_policies_resident)
        self._parks = hasattr(factory, "load_engine")
        self._tokenizers: dict[str, ChatTokenizer] = {}  # by fingerprint: ended policies share

    async def release(self, run: Run) -> None:
        """The run ended: its final weights go to disk where no checkpoint holds them yet,
        its checkpoints lose their optimizer state, and its training memory goes at once
        (after a step in progress: the run lock); each policy's engine moves to the
        ended-policy pool, which serves it from those weights (`gateway.runs.ended_policies`).
        A policy whose final weights could not be written keeps its engine (logged)."""
        async with run.lock:
            sources = await self._final_weights(run)
            try:
                await anyio.to_thread.run_sync(self._checkpoints.retain, run, True)
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
        if not self._parks or not run.ready or released(run):
            return {}
        rows = await anyio.to_thread.run_sync(self._store.checkpoints, run.name)
        newest = rows[-1] if rows else None
        sources: dict[str, str] = {}
        for name, policy in run.policies.items():
            built, version = run.built_from.get(name, (None, None))
            if (
                newest is not None
                and newest.step == run.step
                and newest.step not in run.undone_checkpoints
            ):
                sources[name] = str(Path(newest.path) / name)
            elif built is not None and policy.trainer.version == version:
                sources[name] = built  # never trained: its weights are what it was built from
        if len(sources) == len(run.policies):
            return sources
        try:
            saved = await self._checkpoints.save(
                run, resumable=self._checkpoints.keep(run) == 0, pause_on_full_disk=False
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

    async def serve_restored(self, run: Run, versions: Mapping[str, int]) -> None:
        """A restored ended run's policies are served from the pool again when their final
        weights are known — the newest checkpoint at the run's step, or what a policy that
        never trained was built from — and their base model is served here (its tokenizer
        is theirs: nothing is loaded at startup); `versions`: their stored versions. Others
        stay unserved (404), as before."""
        if not self._parks:
            return
        rows = await anyio.to_thread.run_sync(self._store.checkpoints, run.name)
        newest = rows[-1] if rows else None
        for name, plan in run.plans.items():
            base = self._models.find(plan.base_model)
            if base is None or plan.base_model not in self._models.base_names():
                continue
            if (
                newest is not None
                and newest.step == run.step
                and newest.step not in run.undone_checkpoints
            ):
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
            self._serve(run, name, served, source, versions.get(name, 0), base.tokenizer)

    def forget_served_from(self, run: Run, directory: Path) -> None:
        """`run`'s ended policies whose final weights were in `directory` (just deleted)
        are served no more: their models go from the registry (404, as after a restart)
        and their engines from the pool."""
        for policy in run.policies.values():
            engine = policy.served.engine
            if isinstance(engine, ReloadingEngine) and Path(engine.source).resolve().is_relative_to(
                directory
            ):
                self._models.remove(policy.served.name)
                self.pool.forget(policy.served.name)

    async def close(self) -> None:
        await self.pool.close()

    def _park(
        self, run: Run, name: str, policy: Policy, source: str, tokenizer: ChatTokenizer
    ) -> None:
        """Serve `name` of the ended `run` from `source` with `tokenizer` through the
        ended-policy pool; its engine, still running, becomes the pool's most recent
        resident one."""
        self.pool.adopt(policy.served.name, policy.served.engine)
        self._serve(run, name, policy.served, source, policy.trainer.version, tokenizer)

    def _serve(
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
            self.pool,
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

    async def _load_engine(
        self, source: str, version: int, tokenizer: ChatTokenizer
    ) -> InferenceEngine:
        return await self._factory.load_engine(source, version, tokenizer)  # type: ignore[union-attr]
