"""`TorchEngine`: continuous-batching inference on a plain transformers causal LM.

A worker thread owns the model and a `SlotKVCache`. Each loop iteration it admits waiting
requests (a right-padded batched prefill), runs one decode step for every live sequence,
samples, and streams each token to its request's asyncio queue. Requests join between
steps and leave as soon as they finish, so short and long generations share the batch.
The event loop only awaits queues: the HTTP server stays responsive while we decode.

The weights version is a counter the training loop bumps (`run_exclusive` runs a weight
update on the worker thread between two decode steps); every token records the version
that produced it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from trainer.config import EngineConfig
from trainer.engine.kv_cache import SlotKVCache
from trainer.engine.sampling import RowSampler, sample_rows
from trainer.engine.weights import copy_weights_into
from trainer.errors import EngineFailure, EngineStopped, InvalidPrompt, PromptTooLong
from trainer.tokenizer import HFChatTokenizer, IncrementalDetokenizer
from trainer.types import Completion, GeneratedToken, SamplingParams, StreamEnd, TokenLogprob

log = logging.getLogger(__name__)

_DEFAULT_CONTEXT_CAP = 8192
# torch's thread count before anyone lowers it for the main thread (see `compute_thread`).
DEFAULT_THREADS = torch.get_num_threads()


def reserve_cores_for_engine() -> int:
    """Make the calling (main) thread single-threaded in torch; return the thread count
    the engine's worker should use.

    libgomp gives every thread that runs a parallel region its own OpenMP team. Once the
    teams together hold more threads than there are cores, every team switches to short
    spinning at barriers, and small decode-step kernels slow down ~1.7x (measured on 2
    cores: 35 ms -> 59 ms per batch-8 SmolLM2 forward). So one thread per process — the
    engine's worker — does all the torch compute (inference, and weight updates through
    `run_exclusive`); call this in the main thread before loading models.
    """
    torch.set_num_threads(1)
    return DEFAULT_THREADS


@dataclass
class _Request:
    id: int
    prompt: list[int]
    params: SamplingParams
    emit: Callable[[Any], None]  # thread-safe: delivers to the requester's asyncio queue
    cancelled: threading.Event = field(default_factory=threading.Event)
    submitted_at: float = field(default_factory=time.time)


@dataclass
class _Sequence:
    request: _Request
    detok: IncrementalDetokenizer
    sampler: RowSampler
    cached: int = 0  # tokens whose keys/values are in the cache
    next_token: int = -1  # sampled, not yet fed to the model
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    tops: list[list[TokenLogprob]] = field(default_factory=list)
    token_texts: list[str] = field(default_factory=list)
    text: str = ""  # visible text so far (before stop-string cut)
    emitted: int = 0  # chars of `text` already streamed
    first_token_at: float = 0.0
    finish_reason: str | None = None


class TorchEngine:
    """Implements `trainer.types.InferenceEngine` for transformers causal LMs."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: HFChatTokenizer,
        config: EngineConfig | None = None,
        initial_version: int = 0,  # a policy resumed from a checkpoint goes on counting
    ):
        self.config = config or EngineConfig()
        self.model = model
        self.tokenizer = tokenizer
        mc = model.config
        model_context = getattr(mc, "max_position_embeddings", None) or _DEFAULT_CONTEXT_CAP
        self._max_context = self.config.max_context or min(model_context, _DEFAULT_CONTEXT_CAP)
        self._vocab_size = model.get_input_embeddings().num_embeddings
        param = next(model.parameters())
        self.device, self.dtype = param.device, param.dtype
        head_dim = getattr(mc, "head_dim", None) or mc.hidden_size // mc.num_attention_heads
        self.cache = SlotKVCache(
            num_layers=mc.num_hidden_layers,
            num_kv_heads=getattr(mc, "num_key_value_heads", None) or mc.num_attention_heads,
            head_dim=head_dim,
            dtype=self.dtype,
            device=self.device,
            rows=min(4, self.config.max_batch),
            columns=min(self.config.initial_cache_tokens, self._max_context),
        )
        self._pad_id = tokenizer.hf.pad_token_id if tokenizer.hf.pad_token_id is not None else 0
        self._inbox: queue.SimpleQueue[_Request | Callable[[], None] | None] = queue.SimpleQueue()
        self._waiting: list[_Request] = []
        self._live: list[_Sequence] = []
        self._ids = itertools.count()
        self._version = initial_version
        self._generator = torch.Generator(device="cpu")
        self._generator.seed()
        self._stopped = threading.Event()
        self.steps = 0  # decode steps run (for tests and metrics)
        self.max_live_seen = 0
        self._thread = threading.Thread(target=self._run, name="torch-engine", daemon=True)
        self._thread.start()

    # -- InferenceEngine ----------------------------------------------------------------
    @property
    def version(self) -> int:
        return self._version

    @property
    def max_context(self) -> int:
        return self._max_context

    async def stream(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[GeneratedToken | StreamEnd]:
        if self._stopped.is_set():
            raise EngineStopped("the engine has been shut down")
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Any] = asyncio.Queue()

        def emit(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(inbox.put_nowait, item)
            except RuntimeError:  # the requester's loop is closed; nobody is listening
                pass

        request = _Request(next(self._ids), list(prompt_token_ids), params, emit)
        self._inbox.put(request)
        try:
            while True:
                item = await inbox.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, StreamEnd):
                    return
        finally:
            request.cancelled.set()

    async def generate(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> Completion:
        async for item in self.stream(prompt_token_ids, params):
            if isinstance(item, StreamEnd):
                return item.completion
        raise EngineFailure("the engine stream ended without a completion")

    # -- control ------------------------------------------------------------------------
    async def run_exclusive(self, fn: Callable[[], Any], bump_version: bool = True) -> Any:
        """Run `fn` on the worker thread between two decode steps (e.g. load new weights);
        bump the weights version afterwards."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()

        def task() -> None:
            try:
                result = fn()
                if bump_version:
                    self._version += 1
                loop.call_soon_threadsafe(done.set_result, result)
            except BaseException as e:  # noqa: BLE001 - handed back to the caller
                loop.call_soon_threadsafe(done.set_exception, e)

        self._inbox.put(task)
        return await done

    def load_weights(self, named: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Copy new weights (plain-architecture names) into the served model. Call it from
        a `run_exclusive` function: between two decode steps, before the version bump."""
        copy_weights_into(self.model, named)

    def shutdown(self) -> None:
        self._stopped.set()
        self._inbox.put(None)
        self._thread.join(timeout=30)

    # -- worker thread ------------------------------------------------------------------
    def _run(self) -> None:
        torch.set_num_threads(self.config.threads or DEFAULT_THREADS)
        torch.set_grad_enabled(False)
        while not self._stopped.is_set():
            if not self._drain_inbox(block=not self._live and not self._waiting):
                break
            try:
                with torch.inference_mode():
                    self._admit()
                    if self._live:
                        self._decode_step()
            except Exception as e:  # noqa: BLE001 - every live request gets the error
                log.exception("engine step failed")
                self._fail_all(EngineFailure(f"engine step failed: {type(e).__name__}: {e}"))
        self._fail_all(EngineStopped("the engine has been shut down"))

    def _drain_inbox(self, block: bool) -> bool:
        """Move new requests to the waiting list and run control tasks. False on shutdown."""
        while True:
            try:
                item = self._inbox.get(timeout=0.5) if block else self._inbox.get_nowait()
            except queue.Empty:
                return not self._stopped.is_set()
            block = False
            if item is None:
                return False
            if isinstance(item, _Request):
                self._waiting.append(item)
            else:
                item()

    def _fail_all(self, error: Exception) -> None:
        for seq in self._live:
            seq.request.emit(error)
        for req in self._waiting:
            req.emit(error)
        self._live.clear()
        self._waiting.clear()

    def _new_sequence(self, req: _Request) -> _Sequence:
        gen = None
        if req.params.seed is not None:
            gen = torch.Generator(device="cpu")
            gen.manual_seed(req.params.seed)
        else:
            gen = self._generator
        return _Sequence(
            request=req,
            detok=IncrementalDetokenizer(self.tokenizer),
            sampler=RowSampler(req.params, gen),
        )

    def _admit(self) -> None:
        self._waiting = [
            r for r in self._waiting if not r.cancelled.is_set() and self._acceptable(r)
        ]
        if not self._waiting:
            return
        room = self.config.max_batch - len(self._live)
        batch: list[_Request] = []
        longest = 0
        for req in self._waiting[:room]:
            longest_if = max(longest, len(req.prompt))
            if batch and longest_if * (len(batch) + 1) > self.config.prefill_token_budget:
                break
            batch.append(req)
            longest = longest_if
        if not batch:
            return
        self._waiting = self._waiting[len(batch) :]
        self._prefill(batch, longest)

    def _acceptable(self, req: _Request) -> bool:
        if any(not 0 <= t < self._vocab_size for t in req.prompt):
            req.emit(InvalidPrompt(f"prompt token ids must lie in [0, {self._vocab_size})"))
            return False
        if 0 < len(req.prompt) < self._max_context:
            return True
        req.emit(
            PromptTooLong(
                f"prompt has {len(req.prompt)} tokens; this engine takes 1 to {self._max_context - 1}"
            )
        )
        return False

    def _ensure_cache(self, rows: int, columns: int) -> None:
        live_columns = max((s.cached + 1 for s in self._live), default=0)
        self.cache.ensure_capacity(
            rows,
            min(columns, self._max_context),
            len(self._live),
            min(live_columns, self.cache.columns),
        )

    def _prefill(self, batch: list[_Request], longest: int) -> None:
        start = len(self._live)
        num = len(batch)
        self._ensure_cache(start + num, longest + 1)
        ids = torch.full((num, longest), self._pad_id, dtype=torch.long)
        for i, req in enumerate(batch):
            ids[i, : len(req.prompt)] = torch.tensor(req.prompt, dtype=torch.long)
        positions = torch.arange(longest).expand(num, longest)
        # right padding + causal mask: real tokens never see the padding after them
        mask = torch.full((longest, longest), torch.finfo(self.dtype).min, dtype=self.dtype).triu(1)
        self.cache.prepare_prefill(start, num, longest)
        hidden = self._forward(ids, positions, mask[None, None])
        last = torch.tensor([len(r.prompt) - 1 for r in batch])
        logits = self._logits(hidden[torch.arange(num), last])
        seqs = [self._new_sequence(r) for r in batch]
        for seq in seqs:
            seq.cached = len(seq.request.prompt)
        self._live.extend(seqs)
        self.max_live_seen = max(self.max_live_seen, len(self._live))
        self._take_samples(seqs, logits)

    def _decode_step(self) -> None:
        num = len(self._live)
        positions = torch.tensor([s.cached for s in self._live], dtype=torch.long)
        read_columns = int(positions.max()) + 1
        self._ensure_cache(num, read_columns)
        ids = torch.tensor([[s.next_token] for s in self._live], dtype=torch.long)
        column = torch.arange(read_columns)
        mask = torch.where(
            column[None, :] <= positions[:, None], 0.0, torch.finfo(self.dtype).min
        ).to(self.dtype)
        self.cache.prepare_decode(num, positions.to(self.device), read_columns)
        hidden = self._forward(ids, positions[:, None], mask[:, None, None, :])
        for s in self._live:
            s.cached += 1
        self.steps += 1
        self._take_samples(list(self._live), self._logits(hidden[:, -1]))

    def _forward(
        self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        body = self.model.get_decoder()
        out = body(
            input_ids=ids.to(self.device),
            position_ids=positions.to(self.device),
            attention_mask=mask.to(self.device),
            past_key_values=self.cache,
            use_cache=True,
        )
        return out.last_hidden_state

    def _logits(self, hidden_BH: torch.Tensor) -> torch.Tensor:
        return self.model.get_output_embeddings()(hidden_BH)

    def _take_samples(self, seqs: list[_Sequence], logits_BV: torch.Tensor) -> None:
        top_n = max(s.request.params.top_logprobs for s in seqs)
        tokens, logprobs, tops = sample_rows(logits_BV, [s.sampler for s in seqs], top_n)
        version = self._version
        now = time.time()
        for seq, token, logprob, top in zip(seqs, tokens, logprobs, tops, strict=True):
            self._append_token(
                seq, token, logprob, [TokenLogprob(i, lp) for i, lp in top], version, now
            )
        self._retire_finished()

    def _append_token(
        self,
        seq: _Sequence,
        token: int,
        logprob: float,
        top: list[TokenLogprob],
        version: int,
        now: float,
    ) -> None:
        p = seq.request.params
        if not seq.tokens:
            seq.first_token_at = now
        seq.tokens.append(token)
        seq.logprobs.append(logprob)
        seq.versions.append(version)
        seq.tops.append(top)
        seq.token_texts.append(self.tokenizer.token_text(token))
        seq.next_token = token
        is_eos = token in self.tokenizer.eos_token_ids and not p.ignore_eos
        delta = "" if is_eos else seq.detok.push(token)
        seq.text += delta
        if is_eos:
            seq.finish_reason = "stop"
        elif p.stop and self._cut_at_stop(seq):
            seq.finish_reason = "stop"
        elif len(seq.tokens) >= p.max_tokens or seq.cached + 1 >= self._max_context:
            seq.finish_reason = "length"
        visible = self._emittable(seq)
        piece = seq.text[seq.emitted : visible]
        seq.emitted = visible
        seq.request.emit(
            GeneratedToken(
                token_id=token, logprob=logprob, text=piece, version=version, top_logprobs=top
            )
        )

    def _cut_at_stop(self, seq: _Sequence) -> bool:
        window_start = max(0, seq.emitted - max(len(s) for s in seq.request.params.stop))
        hits = [i for s in seq.request.params.stop if (i := seq.text.find(s, window_start)) >= 0]
        if not hits:
            return False
        seq.text = seq.text[: min(hits)]
        return True

    def _emittable(self, seq: _Sequence) -> int:
        """How much of the text may be streamed: all of it once finished; otherwise hold
        back a tail that could still become a stop string."""
        if seq.finish_reason or not seq.request.params.stop:
            return len(seq.text)
        hold = 0
        for stop in seq.request.params.stop:
            for k in range(min(len(stop) - 1, len(seq.text)), 0, -1):
                if seq.text.endswith(stop[:k]):
                    hold = max(hold, k)
                    break
        return max(seq.emitted, len(seq.text) - hold)

    def _retire_finished(self) -> None:
        keep: list[_Sequence] = []
        now = time.time()
        for seq in self._live:
            if seq.request.cancelled.is_set():
                continue
            if seq.finish_reason is None:
                keep.append(seq)
                continue
            req = seq.request
            seq.request.emit(
                StreamEnd(
                    Completion(
                        prompt_token_ids=req.prompt,
                        token_ids=seq.tokens,
                        logprobs=seq.logprobs,
                        text=seq.text,
                        finish_reason=seq.finish_reason,  # type: ignore[arg-type]
                        versions=seq.versions,
                        top_logprobs=seq.tops,
                        token_texts=seq.token_texts,
                        temperature=req.params.temperature if req.params.temperature > 0 else 1.0,
                        started_at=req.submitted_at,
                        first_token_at=seq.first_token_at,
                        finished_at=now,
                    )
                )
            )
        if len(keep) != len(self._live):
            self._compact(keep)

    def _compact(self, keep: list[_Sequence]) -> None:
        """Move surviving sequences into slots 0..len(keep)-1, preserving their KV rows."""
        old_slot = {id(s): i for i, s in enumerate(self._live)}
        for new, seq in enumerate(keep):
            old = old_slot[id(seq)]
            if old != new:
                self.cache.move_row(old, new, seq.cached)
        self._live = keep
