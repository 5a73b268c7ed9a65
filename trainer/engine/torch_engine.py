"""`TorchEngine`: continuous-batching inference on a plain transformers causal LM.

A worker thread owns the model and a `SlotKVCache`. Each loop iteration it admits waiting
requests (a right-padded batched prefill), runs one decode step for every live sequence,
samples, and streams each token to its request's asyncio queue. Requests join between
steps and leave as soon as they finish, so short and long generations share the batch.
The event loop only awaits queues: the HTTP server stays responsive while we decode.

A failing request fails alone: a seed torch cannot take, a prefill or a sampling step that
raises for one request ends that request with `EngineFailure` (a batched stage that raises
is retried request by request to find the culprit); every other request goes on and the
worker thread survives. Only a failed decode step, which cannot name a culprit, fails the
sequences it was decoding. On shutdown every request still live, waiting or queued ends
with `EngineStopped`.

The weights version is a counter the training loop bumps (`run_exclusive` runs a weight
update on the worker thread between two decode steps); every token records the version
that produced it.

What a sampled token becomes (text, stop strings, the `Completion`) and the bridge to the
caller's loop are shared with the vLLM engine: `trainer.engine.completion` and
`trainer.engine.streaming`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from trainer.config import EngineConfig
from trainer.engine.completion import CompletionBuilder, prompt_error, serving_context
from trainer.engine.constraint import (
    CONSTRAINED_SHIFT,
    GrammarCompiler,
    GrammarMatcher,
    mask_logits,
)
from trainer.engine.kv_cache import SlotKVCache
from trainer.engine.sampling import RowSampler, sample_rows
from trainer.engine.streaming import Emit, RelayedEngine
from trainer.engine.weights import copy_weights_into
from trainer.errors import EngineFailure, EngineStopped
from trainer.memory import release_memory
from trainer.tokenizer import HFChatTokenizer
from trainer.types import SamplingParams, StreamEnd, TokenLogprob

log = logging.getLogger(__name__)

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
    emit: Emit
    cancelled: threading.Event = field(default_factory=threading.Event)
    submitted_at: float = field(default_factory=time.time)


@dataclass
class _Task:
    """A control function for the worker (`run_exclusive`), and how to refuse it."""

    run: Callable[[], None]
    refuse: Callable[[BaseException], None]


@dataclass
class _Sequence:
    request: _Request
    out: CompletionBuilder
    sampler: RowSampler
    grammar: GrammarMatcher | None = None  # constrained decoding (`trainer.engine.constraint`)
    cached: int = 0  # tokens whose keys/values are in the cache
    next_token: int = -1  # sampled, not yet fed to the model


class TorchEngine(RelayedEngine):
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
        self._max_context = serving_context(mc, self.config.max_context)
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
        self._initial_cache = (self.cache.rows, self.cache.columns)
        self._grammars = GrammarCompiler(tokenizer, self._vocab_size)
        self._pad_id = tokenizer.hf.pad_token_id if tokenizer.hf.pad_token_id is not None else 0
        self._inbox: queue.SimpleQueue[_Request | _Task | None] = queue.SimpleQueue()
        self._waiting: list[_Request] = []
        self._admitting: list[_Request] = []  # out of `_waiting`, not yet live
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

    # -- load (optional `InferenceEngine` gauges; read from any thread, one len() each) -
    @property
    def requests_waiting(self) -> int:
        """Requests submitted and not yet in the decode batch: still in the inbox (which
        may also hold a control task or two), waiting for a slot, or being prefilled."""
        return self._inbox.qsize() + len(self._waiting) + len(self._admitting)

    @property
    def sequences_active(self) -> int:
        """Sequences in the current decode batch."""
        return len(self._live)

    @property
    def max_batch(self) -> int:
        return self.config.max_batch

    def _submit(
        self, prompt_token_ids: Sequence[int], params: SamplingParams, emit: Emit
    ) -> Callable[[], None]:
        """Queue the request for the worker (it checks the prompt); return its cancel."""
        request = _Request(next(self._ids), list(prompt_token_ids), params, emit)
        self._inbox.put(request)
        return request.cancelled.set

    # -- control ------------------------------------------------------------------------
    async def run_exclusive(self, fn: Callable[[], Any], bump_version: bool = True) -> Any:
        """Run `fn` on the worker thread between two decode steps (e.g. load new weights);
        bump the weights version afterwards."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()

        def settle(setter: Callable[[Any], None], value: Any) -> None:
            def unless_done() -> None:
                if not done.done():
                    setter(value)

            try:
                loop.call_soon_threadsafe(unless_done)
            except RuntimeError:  # the caller's loop is closed; nobody is waiting
                pass

        def task() -> None:
            try:
                result = fn()
                if bump_version:
                    self._version += 1
                settle(done.set_result, result)
            except BaseException as e:  # noqa: BLE001 - handed back to the caller
                settle(done.set_exception, e)

        if self._stopped.is_set():
            raise EngineStopped("the engine has been shut down")
        self._inbox.put(_Task(task, lambda e: settle(done.set_exception, e)))
        return await done

    def load_weights(self, named: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Copy new weights (plain-architecture names) into the served model. Call it from
        a `run_exclusive` function: between two decode steps, before the version bump."""
        copy_weights_into(self.model, named)

    def release_cache(self) -> None:
        """Shrink the KV cache back to its starting size once nothing is decoding (an
        ended run's engine still serves, rarely: its grown cache would only hold memory).
        Returns at once; the engine thread does it between steps."""

        def shrink() -> None:
            if self._live or self._waiting:
                return  # still in use: it keeps what it needs
            self.cache._resize(*self._initial_cache, keep_rows=0, keep_columns=0)
            release_memory()  # the freed columns go back to the OS

        self._inbox.put(_Task(shrink, lambda _error: None))  # refused at shutdown: nothing to do

    def idle(self) -> bool:
        """Nothing is decoding, waiting or queued (an evicted engine may stop now)."""
        return not (self._live or self._waiting or self._admitting) and self._inbox.empty()

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
            except Exception as e:  # noqa: BLE001 - the sequences of this step get the error
                log.exception("engine step failed")
                self._fail_in_flight(EngineFailure(f"engine step failed: {type(e).__name__}: {e}"))
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
                item.run()

    def _fail_in_flight(self, error: Exception) -> None:
        """End the sequences being decoded or admitted; waiting requests go on."""
        for seq in self._live:
            seq.request.emit(error)
        for req in self._admitting:
            req.emit(error)
        self._live.clear()
        self._admitting.clear()

    def _fail_all(self, error: Exception) -> None:
        """Shutdown: every request and control task the worker still holds ends with `error`."""
        self._fail_in_flight(error)
        for req in self._waiting:
            req.emit(error)
        self._waiting.clear()
        while True:  # queued after the stop sentinel, or never drained
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Request):
                item.emit(error)
            elif isinstance(item, _Task):
                item.refuse(error)

    def _fail_request(self, req: _Request, stage: str, error: Exception) -> None:
        log.warning("request %d failed in %s: %s: %s", req.id, stage, type(error).__name__, error)
        req.emit(EngineFailure(f"the request failed in {stage}: {type(error).__name__}"))

    def _new_sequence(self, req: _Request) -> _Sequence:
        gen = None
        if req.params.seed is not None:
            gen = torch.Generator(device="cpu")
            gen.manual_seed(req.params.seed)  # raises for seeds outside torch's 64 bits
        else:
            gen = self._generator
        out = CompletionBuilder.start(
            self.tokenizer,
            req.prompt,
            req.params,
            max_context=self._max_context,
            started_at=req.submitted_at,
        )
        grammar = req.params.grammar
        return _Sequence(
            request=req,
            out=out,
            sampler=RowSampler(req.params, gen),
            grammar=None if grammar is None else self._grammars.matcher(grammar),
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
        self._admitting = batch
        seqs = []
        for req in batch:  # a request that cannot start (e.g. its seed) fails alone
            try:
                seqs.append(self._new_sequence(req))
            except Exception as e:  # noqa: BLE001 - handed to that request
                self._fail_request(req, "admission", e)
        self._prefill_isolated(seqs)
        self._admitting = []

    def _prefill_isolated(self, seqs: list[_Sequence]) -> None:
        """Prefill `seqs` together; if that raises, one by one, failing only the culprit."""
        if not seqs:
            return
        try:
            self._prefill(seqs)
        except Exception as e:  # noqa: BLE001 - find and fail the request that caused it
            if len(seqs) == 1:
                self._fail_request(seqs[0].request, "prefill", e)
                return
            log.warning("batched prefill failed (%s); retrying request by request", e)
            for seq in seqs:
                self._prefill_isolated([seq])

    def _acceptable(self, req: _Request) -> bool:
        error = prompt_error(req.prompt, self._vocab_size, self._max_context)
        if error is not None:
            req.emit(error)
        return error is None

    def _ensure_cache(self, rows: int, columns: int) -> None:
        live_columns = max((s.cached + 1 for s in self._live), default=0)
        self.cache.ensure_capacity(
            rows,
            min(columns, self._max_context),
            len(self._live),
            min(live_columns, self.cache.columns),
        )

    def _prefill(self, seqs: list[_Sequence]) -> None:
        batch = [s.request for s in seqs]
        longest = max(len(r.prompt) for r in batch)
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
        for seq in seqs:
            seq.cached = len(seq.request.prompt)
        self._live.extend(seqs)
        for req in batch:
            self._admitting.remove(req)
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
        version = self._version
        now = time.time()
        # the one hook of constrained decoding: grammar rows sample from masked logits
        masked = mask_logits(logits_BV, [s.grammar for s in seqs])
        sampled_from = logits_BV if masked is None else masked.logits_BV
        samples = self._sample_isolated(seqs, sampled_from)
        for row, (seq, sample) in enumerate(zip(seqs, samples, strict=True)):
            if isinstance(sample, Exception):
                self._fail_request(seq.request, "sampling", sample)
                seq.request.cancelled.set()  # retired below, its slot freed
                continue
            token, logprob, top = sample
            seq.next_token = token
            top_logprobs = [TokenLogprob(i, lp) for i, lp in top]
            try:
                if seq.grammar is None or masked is None:
                    added = seq.out.add(token, logprob, top_logprobs, version, now)
                else:
                    complete = seq.grammar.advance(token)
                    free = masked.unmasked_logprob(row, token, seq.request.params.temperature)
                    added = seq.out.add(
                        token,
                        logprob,
                        top_logprobs,
                        version,
                        now,
                        "stop" if complete else None,
                        constrained=logprob - free > CONSTRAINED_SHIFT,
                        unconstrained_logprob=free,
                    )
                seq.request.emit(added)
            except Exception as e:  # noqa: BLE001 - e.g. the tokenizer on this token
                self._fail_request(seq.request, "detokenizing", e)
                seq.request.cancelled.set()
        self._retire_finished()

    def _sample_isolated(
        self, seqs: list[_Sequence], logits_BV: torch.Tensor
    ) -> list[tuple[int, float, list[tuple[int, float]]] | Exception]:
        """One (token, logprob, top) per sequence, sampled together; if that raises, row by
        row, so that only the row that raises gets its exception."""
        try:
            top_n = max(s.request.params.top_logprobs for s in seqs)
            tokens, logprobs, tops = sample_rows(logits_BV, [s.sampler for s in seqs], top_n)
            return list(zip(tokens, logprobs, tops, strict=True))
        except Exception as e:  # noqa: BLE001 - retried row by row below
            if len(seqs) == 1:
                return [e]
        return [self._sample_isolated([seq], logits_BV[i : i + 1])[0] for i, seq in enumerate(seqs)]

    def _retire_finished(self) -> None:
        keep: list[_Sequence] = []
        now = time.time()
        for seq in self._live:
            if seq.request.cancelled.is_set():
                continue
            if seq.out.finish_reason is None:
                keep.append(seq)
                continue
            seq.request.emit(StreamEnd(seq.out.completion(finished_at=now)))
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
