"""`PolicyHost`: one served model or one trainable policy living in a process of its own —
the body of the Ray actor `gateway serve --ray` places on the cluster.

It builds what the in-process gateway builds (a `TorchPolicyFactory` policy: master
weights, engine, trainer; or a plain served model: weights and engine) and exposes the
calls the gateway makes on them as plain methods whose arguments and results are the
torch-free records of `trainer.types` (they cross the process boundary pickled):
`stream` (an async generator: Ray streams each yielded token back), `stream_chunks`
(the same tokens in lists, fewer items for Ray to carry: what the gateway uses), `generate`,
`train_step`, `save_checkpoint`, plus `describe` (tokenizer, version, context, pid) and
`wait_closed` (never returns while the host lives: a caller awaiting it learns of the
process's death). Nothing here knows of Ray: the composition root wraps the class with
`ray.remote`, so the same class runs in a plain process or a test.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import torch

from trainer.config import EngineConfig, EngineKind, ModelConfig
from trainer.engine.torch_engine import TorchEngine
from trainer.engine.weights import TrainableEngine
from trainer.model import load_model
from trainer.policy.factory import TorchPolicyFactory
from trainer.tokenizer import HFChatTokenizer
from trainer.types import (
    Completion,
    GeneratedToken,
    Group,
    PolicyTrainer,
    SamplingParams,
    StepResult,
    StreamEnd,
)

# How much of a stream `stream_chunks` gathers into one item after the first token. Ray
# carries each item a streaming actor method yields as one object: ~0.35 ms of the actor's
# CPU (which its engine thread shares on a small machine) and ~0.4 ms of the caller's
# (bench/ray_streaming.py); one object per token cost decode throughput. 0.2 s (5 updates
# a second) keeps a streamed reply live for a reader; the first token goes alone, so time
# to first token is unchanged.
STREAM_CHUNK_S = 0.2


class PolicyHost:
    """A served model (`model` given) or a trainable policy (`policy` given: the keyword
    arguments of `PolicyFactory.create`), built with `factory` (`TorchPolicyFactory`'s
    keyword arguments)."""

    def __init__(
        self,
        *,
        factory: dict[str, Any],
        policy: dict[str, Any] | None = None,
        model: dict[str, Any] | None = None,
        threads: int | None = None,
    ):
        assert (policy is None) != (model is None), "a host holds a policy or a served model"
        if threads:
            torch.set_num_threads(threads)
        self.trainer: PolicyTrainer | None = None
        if policy is not None:
            built = TorchPolicyFactory(**factory).build(**policy)
            self.engine: TrainableEngine = built.served.engine  # type: ignore[assignment]
            self.tokenizer = built.served.tokenizer
            self.trainer = built.trainer
            self.source = policy.get("resume_from") or policy["base_model"]
        else:
            loaded = load_model(ModelConfig.model_validate(model))
            self.tokenizer = HFChatTokenizer(loaded.tokenizer)
            self.engine = _served_engine(loaded.model, self.tokenizer, factory)
            self.source = loaded.source
        self._closed = asyncio.Event()

    # -- what the gateway learns once ------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {
            "tokenizer": self.tokenizer,
            "version": self.engine.version,
            "max_context": self.engine.max_context,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "source": str(self.source),
        }

    def version(self) -> int:
        return self.engine.version

    # -- inference ---------------------------------------------------------------------------
    async def stream(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[GeneratedToken | StreamEnd]:
        async for item in self.engine.stream(prompt_token_ids, params):
            yield item

    async def stream_chunks(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[list[GeneratedToken | StreamEnd]]:
        """`stream`'s items in order, in lists: the first token alone (time to first token),
        then each list closed by the first item at least `STREAM_CHUNK_S` after the previous
        list, or by the `StreamEnd` (no timer: a token waits in its list at most until the
        next item comes, one decode step, or a weight update's pause)."""
        chunk: list[GeneratedToken | StreamEnd] = []
        last_sent: float | None = None
        async for item in self.engine.stream(prompt_token_ids, params):
            chunk.append(item)
            now = time.monotonic()
            if (
                last_sent is None
                or isinstance(item, StreamEnd)
                or now - last_sent >= STREAM_CHUNK_S
            ):
                yield chunk
                chunk, last_sent = [], now

    async def generate(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> Completion:
        return await self.engine.generate(prompt_token_ids, params)

    # -- training ----------------------------------------------------------------------------
    async def train_step(self, groups: Sequence[Group], settings: dict[str, Any]) -> StepResult:
        assert self.trainer is not None, "a served model does not train"
        return await self.trainer.train_step(groups, settings)

    async def save_checkpoint(self, directory: str, resumable: bool = True) -> None:
        assert self.trainer is not None, "a served model has no checkpoints"
        await self.trainer.save_checkpoint(directory, resumable=resumable)

    def release_training(self) -> None:
        """The run ended: free the training state; the engine keeps serving."""
        release = getattr(self.trainer, "release_training", None)
        if release is not None:
            release()

    # -- lifetime ----------------------------------------------------------------------------
    async def wait_closed(self) -> None:
        await self._closed.wait()

    def close(self) -> None:
        if self.trainer is not None:
            self.trainer.close()
        else:
            self.engine.shutdown()
        self._closed.set()


def _served_engine(
    model: torch.nn.Module, tokenizer: HFChatTokenizer, factory: dict[str, Any]
) -> TrainableEngine:
    config = EngineConfig.model_validate(factory.get("engine_config") or {})
    kind: EngineKind = factory.get("engine", "torch")
    if kind == "vllm":
        from trainer.engine.vllm_engine import build_vllm_engine  # CUDA only

        return build_vllm_engine(model, tokenizer, config, initial_version=0)
    return TorchEngine(model, tokenizer, config)
