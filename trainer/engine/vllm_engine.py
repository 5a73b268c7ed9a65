"""`VllmEngine`: rollouts through vLLM's async engine behind `trainer.types.InferenceEngine`
and `trainer.engine.weights.TrainableEngine` (`gateway serve --engine vllm`).

NOT RUN HERE. This machine has no GPU and vLLM has no CPU wheel, so this module was written
against vLLM's documented API and sources and has never driven a real vLLM engine in this
project. What does run in CI is everything on our side of the boundary: the contract tests
(`tests/unit/trainer/test_engine_contract.py`) drive `VllmEngine` against a stand-in for
vLLM's `AsyncLLM` (same calls, same output shapes) and run the real-vLLM cases only where a
CUDA GPU and vLLM are present. The vLLM surface it depends on, checked against vLLM's
main-branch sources of the 0.2x/0.3x line (the `AsyncLLM` with `PauseMode`
"abort"|"wait"|"keep", vllm-project/vllm#32351; FIELD-NOTES: pip resolves 0.32.0 with
torch 2.13 and 0.33.0 with torch 2.14) and the docs listed in docs/vllm.md:

- `vllm.engine.arg_utils.AsyncEngineArgs(model, tokenizer, dtype, max_model_len,
  max_num_seqs, gpu_memory_utilization, tensor_parallel_size, enforce_eager,
  enable_sleep_mode, logprobs_mode="processed_logprobs", max_logprobs,
  generation_config="vllm", worker_extension_cls, disable_log_stats)`
- `vllm.v1.engine.async_llm.AsyncLLM.from_engine_args(args)`; on it
  `generate({"prompt_token_ids": [...]}, sampling_params, request_id)` (an async generator
  of `RequestOutput`: `.finished`, `.outputs[0].token_ids / .logprobs / .finish_reason`;
  closing it aborts the request), `abort(request_id)`,
  `pause_generation(mode="keep", clear_cache=True)` (older: `wait_for_inflight_requests=`)
  and `resume_generation()`, `sleep(level=1, mode="keep")` and `wake_up(tags=[...])`,
  `collective_rpc(method, args=...)`, `shutdown()`
- `vllm.SamplingParams(n, temperature, top_p, top_k, seed, max_tokens, ignore_eos,
  stop_token_ids, logprobs, detokenize, output_kind, structured_outputs)` with
  `vllm.sampling_params.StructuredOutputsParams(grammar=...)` for constrained decoding
  (vLLM >= 0.12; the engine runs with `structured_outputs_config=StructuredOutputsConfig(
  backend="guidance")`, i.e. llguidance, the torch engine's library) with
  `vllm.sampling_params.RequestOutputKind.DELTA`; per position `logprobs` is a mapping
  token id -> `Logprob(.logprob, .rank)` holding the top `logprobs` and the sampled token
- in the worker (`trainer.engine.vllm_worker`): `self.model_runner.model.load_weights(
  weights=...)` and `vllm.model_executor.model_loader.utils.process_weights_after_loading`

How it maps the contract:

- one asyncio loop of our own (a daemon thread) owns the `AsyncLLM`: vLLM binds its output
  handler to the loop that first uses it, while our callers come from any loop (the
  gateway's, or a fresh one per test). `stream()` bridges to it with thread-safe queues
  (`trainer.engine.streaming.relay`, shared with `TorchEngine`); closing the stream
  cancels the request's task there, and vLLM aborts the request.
- text: vLLM returns token ids and logprobs only (`detokenize=False`); the visible text,
  its per-token pieces and stop strings are done here by the code `TorchEngine` uses
  (`trainer.engine.completion.CompletionBuilder`: incremental detokenizing, hold back a
  tail that may grow into a stop string, cut at the first match, finish "stop"). A stop
  string ends the vLLM request by abort. EOS: the tokenizer's `eos_token_ids` go to vLLM
  as `stop_token_ids` (none with `ignore_eos`), and `generation_config="vllm"` keeps the
  checkpoint's generation_config.json from adding stop tokens or sampling defaults of its
  own.
- logprobs: `logprobs_mode="processed_logprobs"` — vLLM's default ("raw_logprobs") is
  log_softmax of the raw logits, without temperature. Processed logprobs are taken after
  temperature (raw logits when greedy) but also after top-k/top-p truncation. So they equal
  the contract's `log_softmax(logits / temperature)` exactly when top_p = 1 and top_k = 0
  (the RL default); with a truncating top-p/top-k they are of the renormalised truncated
  distribution (the one actually sampled from), higher by -log(kept mass) than the torch
  engine's. `top_logprobs` are the top entries of the same distribution.
- prompt checks (ids in the vocabulary, 1 to max_context - 1 tokens) run before vLLM sees
  the request, with the torch engine's errors (`trainer.engine.completion.prompt_error`);
  vLLM's own refusals are mapped onto `trainer.errors` too (`_as_trainer_error`).
- weights (`run_exclusive(fn)` + `load_weights` inside fn): fn runs on a thread of its own
  while vLLM keeps generating (its forward/backward does not touch vLLM); the first
  `load_weights` call pauses vLLM's scheduler in "keep" mode with `clear_cache=True` (running
  requests are preempted and their KV is recomputed with the new weights on resume, and
  the prefix cache is dropped), writes the tensors as safetensors shards (to /dev/shm when
  it is writable), and has each worker load them with `collective_rpc` into
  `model.load_weights` — vLLM's own loader, no restart. After fn the version is bumped,
  then generation resumes: tokens after the update carry the new version. With sleep mode
  on (`SWARMRL_VLLM_SLEEP`, default: on when the trainer shares the GPU) an update puts
  vLLM to sleep (level 1: weights to CPU, KV cache freed) before fn, wakes the weights for
  the copy and the KV cache after, so the update has the GPU's memory to itself.
- one node only: the shards go through the local filesystem.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import itertools
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, Field

from trainer.config import EngineConfig
from trainer.engine.completion import CompletionBuilder, prompt_error, serving_context
from trainer.engine.streaming import Emit, RelayedEngine
from trainer.errors import (
    EngineFailure,
    EngineStopped,
    InvalidPrompt,
    PromptTooLong,
    TrainerError,
)
from trainer.tokenizer import HFChatTokenizer
from trainer.types import (
    FinishReason,
    Grammar,
    SamplingParams,
    StreamEnd,
    TokenLogprob,
)

log = logging.getLogger(__name__)

WORKER_EXTENSION = "trainer.engine.vllm_worker.WeightLoadingExtension"
MAX_TOP_LOGPROBS = 20  # what the gateway lets a request ask for (OpenAI's limit)


class VllmSettings(BaseModel):
    """Knobs of the vLLM engine that `EngineConfig` does not carry, read from the
    environment (`SWARMRL_VLLM_<NAME>`, e.g. `SWARMRL_VLLM_GPU_MEMORY_UTILIZATION=0.6`)."""

    gpu_memory_utilization: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="Share of the GPU's memory vLLM takes (weights + KV cache). Below vLLM's "
        "0.9 because the trainer's master weights and optimizer share the GPU.",
    )
    sleep: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Put vLLM to sleep (level 1) during each update; auto: when the trainer "
        "shares the GPU (the served model was on CUDA).",
    )
    tensor_parallel_size: int = Field(1, ge=1)
    enforce_eager: bool = Field(False, description="No CUDA graphs (faster start, slower decode).")
    weight_shard_mb: int = Field(1024, ge=1, description="Size of one weight-update file.")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> VllmSettings:
        values = {
            name: environ[key]
            for name in cls.model_fields
            if (key := f"SWARMRL_VLLM_{name.upper()}") in environ
        }
        return cls.model_validate(values)


@dataclass
class _Request:
    id: str
    emit: Emit
    out: CompletionBuilder  # assembled from vLLM's deltas on the engine loop


class VllmEngine(RelayedEngine):
    """Implements `InferenceEngine` and `TrainableEngine` on a vLLM `AsyncLLM`.

    `make_client` builds the `AsyncLLM` (called once, on the engine's own loop);
    `make_sampling_params(**kwargs)` builds vLLM's `SamplingParams` (with DELTA output).
    Both are injected so the adapter runs in tests without vLLM; `build_vllm_engine` is
    the real wiring.
    """

    def __init__(
        self,
        make_client: Callable[[], Any],
        tokenizer: HFChatTokenizer,
        *,
        max_context: int,
        vocab_size: int,
        dtype: torch.dtype,
        make_sampling_params: Callable[..., Any],
        initial_version: int = 0,
        sleep: bool = False,
        weight_shard_bytes: int = 1 << 30,
        owned_dirs: Sequence[Path] = (),
    ):
        self.tokenizer = tokenizer
        self._eos = frozenset(tokenizer.eos_token_ids)
        self._max_context = max_context
        self._vocab_size = vocab_size
        self._dtype = dtype
        self._make_sampling_params = make_sampling_params
        self._version = initial_version
        self._sleep = sleep
        self._shard_bytes = weight_shard_bytes
        self._owned_dirs = list(owned_dirs)
        self._ids = itertools.count()
        self._live: dict[str, _Request] = {}
        self._tokens_received = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = threading.Event()
        self._paused = False
        self._asleep: list[str] = []  # sleeping memory pools, in wake-up order
        self._exclusive_thread: int | None = None
        self._update_files = itertools.count()
        self._update_dir: Path | None = None
        # fn of run_exclusive runs here: one thread, so torch's per-thread state is stable
        self._fn_runner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="vllm-update")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="vllm-engine-loop", daemon=True)
        self._thread.start()
        try:
            self._client = self._call(self._start(make_client))
        except BaseException:
            self._stop_loop()
            raise

    # -- InferenceEngine ----------------------------------------------------------------
    @property
    def version(self) -> int:
        return self._version

    @property
    def max_context(self) -> int:
        return self._max_context

    @property
    def in_flight(self) -> int:
        """Requests submitted and not yet finished or cancelled."""
        return len(self._live)

    # vLLM's scheduler runs in its own process: which requests wait and which decode is not
    # visible from here, so these optional gauges are None (vLLM's own metrics have them).
    @property
    def requests_waiting(self) -> int | None:
        return None

    @property
    def sequences_active(self) -> int | None:
        return None

    @property
    def max_batch(self) -> int | None:
        return None

    @property
    def tokens_received(self) -> int:
        """Tokens vLLM has returned so far, all requests together (for tests and metrics)."""
        return self._tokens_received

    def _submit(
        self, prompt_token_ids: Sequence[int], params: SamplingParams, emit: Emit
    ) -> Callable[[], None]:
        """Check the prompt and start serving it on the engine loop; return its cancel."""
        prompt = list(prompt_token_ids)
        error = prompt_error(prompt, self._vocab_size, self._max_context)
        if error is not None:
            raise error
        out = CompletionBuilder.start(
            self.tokenizer, prompt, params, max_context=self._max_context, started_at=time.time()
        )
        request = _Request(id=f"swarmrl-{next(self._ids)}", emit=emit, out=out)
        self._live[request.id] = request
        if self._stopped.is_set():  # shut down while we registered: `_close` may have missed it
            self._live.pop(request.id, None)
            raise EngineStopped("the engine has been shut down")
        task = asyncio.run_coroutine_threadsafe(self._serve(request), self._loop)

        def cancel() -> None:
            if not task.done():
                task.cancel()  # cancels `_serve` on the engine loop; vLLM aborts the request
            self._live.pop(request.id, None)

        return cancel

    # -- TrainableEngine ----------------------------------------------------------------
    async def run_exclusive(self, fn: Callable[[], Any], bump_version: bool = True) -> Any:
        """Run `fn` on the update thread; if it loads weights, vLLM is paused from the
        first `load_weights` until after the version bump. With sleep mode, an update
        (`bump_version`) sleeps vLLM for the whole of `fn`."""
        if self._stopped.is_set():
            raise EngineStopped("the engine has been shut down")
        future = asyncio.run_coroutine_threadsafe(self._exclusive(fn, bump_version), self._loop)
        return await asyncio.wrap_future(future)

    def load_weights(self, named: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Push new values (plain-architecture names) into vLLM's served model. Called from
        inside a `run_exclusive` function."""
        assert threading.get_ident() == self._exclusive_thread, (
            "load_weights must be called from inside a run_exclusive function"
        )
        if not self._paused:
            self._call(self._pause())
        if "weights" in self._asleep:
            self._call(self._client.wake_up(tags=["weights"]))
            self._asleep.remove("weights")
        loaded = 0
        for path in self._write_update_files(named):
            try:
                counts = self._call(
                    self._client.collective_rpc("swarmrl_load_weights_file", args=(str(path),))
                )
            finally:
                path.unlink(missing_ok=True)
            loaded += counts[0] if counts else 0
        self._call(self._client.collective_rpc("swarmrl_finish_weight_update"))
        log.debug("loaded %d tensors into vLLM", loaded)

    def shutdown(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        try:
            self._call(self._close(), timeout=120)
        finally:
            self._stop_loop()
            self._fn_runner.shutdown(wait=False)
            for directory in [*self._owned_dirs, self._update_dir]:
                if directory is not None:
                    shutil.rmtree(directory, ignore_errors=True)

    # -- the engine loop ----------------------------------------------------------------
    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        self._loop.close()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def _call(self, coro: Any, timeout: float | None = None) -> Any:
        """Run a coroutine on the engine loop from another thread and wait for it."""
        assert threading.current_thread() is not self._thread, "would block the engine loop"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _start(self, make_client: Callable[[], Any]) -> Any:
        self._exclusive_lock = asyncio.Lock()
        return make_client()

    async def _close(self) -> None:
        for request in list(self._live.values()):
            request.emit(EngineStopped("the engine has been shut down"))
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._client.shutdown()

    async def _serve(self, request: _Request) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        out = request.out
        vllm_finished = False
        try:
            outputs = self._client.generate(
                {"prompt_token_ids": out.prompt}, self._vllm_params(out), request.id
            )
            try:
                async for output in outputs:
                    vllm_finished = self._take(request, output)
                    if out.finish_reason is not None:
                        break
            finally:
                await outputs.aclose()
            if out.finish_reason is None:  # the stream ended without saying so
                out.end_without_token(_finish(None))
            if not vllm_finished:  # we stopped it (a stop string): free its slot
                await self._client.abort(request.id)
            request.emit(StreamEnd(out.completion(finished_at=time.time())))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - the requester gets it as a trainer error
            request.emit(self._as_trainer_error(e))
        finally:
            self._tasks.discard(task)
            self._live.pop(request.id, None)

    def _vllm_params(self, out: CompletionBuilder) -> Any:
        p = out.params
        structured = structured_outputs_for(p.grammar)
        return self._make_sampling_params(
            **({} if structured is None else {"structured_outputs": structured}),
            n=1,
            temperature=p.temperature,
            top_p=p.top_p,
            top_k=p.top_k,
            seed=p.seed,
            max_tokens=out.max_tokens,
            ignore_eos=p.ignore_eos,
            stop_token_ids=[] if p.ignore_eos else sorted(self._eos),
            logprobs=p.top_logprobs,  # 0: only the sampled token's
            detokenize=False,  # text and stop strings are ours
        )

    def _take(self, request: _Request, output: Any) -> bool:
        """Append and stream the tokens of one DELTA `RequestOutput`; True when vLLM
        finished the request with the last token taken (or with none)."""
        out = request.out
        delta = output.outputs[0]
        token_ids = list(delta.token_ids)
        self._tokens_received += len(token_ids)
        positions = delta.logprobs
        if token_ids and (positions is None or len(positions) < len(token_ids)):
            raise EngineFailure("vLLM returned tokens without their logprobs")
        for i, token in enumerate(token_ids):
            last = bool(output.finished) and i == len(token_ids) - 1
            logprob, top = _logprobs_at(positions[i], token, out.params.top_logprobs)
            finish = _finish(delta.finish_reason) if last else None
            # vLLM's logprobs with a grammar are of the masked distribution; it does not
            # say which positions the mask narrowed, nor the logprobs without it
            constrained = out.params.grammar is not None
            request.emit(
                out.add(
                    token, logprob, top, self._version, time.time(), finish, constrained=constrained
                )
            )
            if out.finish_reason is not None:
                return last
        if output.finished:  # finished with no token in this delta (an abort)
            out.end_without_token(_finish(delta.finish_reason))
            return True
        return False

    def _as_trainer_error(self, error: BaseException) -> Exception:
        """vLLM's exceptions as `trainer.errors` (vLLM wraps unexpected ones in
        `EngineGenerateError`; the cause chain says what happened)."""
        if isinstance(error, TrainerError):
            return error
        if self._stopped.is_set():
            return EngineStopped("the engine has been shut down")
        chain: list[BaseException] = []
        e: BaseException | None = error
        while e is not None and e not in chain:
            chain.append(e)
            e = e.__cause__ or e.__context__
        names = {type(c).__name__ for c in chain}
        text = " ".join(str(c) for c in chain).lower()
        if "EngineDeadError" in names:
            return EngineFailure(f"the vLLM engine died: {error}")
        if "maximum model length" in text or "max_model_len" in text or "too long" in text:
            return PromptTooLong(f"vLLM refused the prompt: {text}")
        if "out of vocabulary" in text or "out-of-vocabulary" in text:
            return InvalidPrompt(f"vLLM refused the prompt: {text}")
        return EngineFailure(f"vLLM request failed: {type(error).__name__}: {error}")

    # -- weights ------------------------------------------------------------------------
    async def _exclusive(self, fn: Callable[[], Any], bump_version: bool) -> Any:
        async with self._exclusive_lock:
            try:
                if self._sleep and bump_version:
                    await self._pause()
                    await self._client.sleep(**_supported(self._client.sleep, level=1, mode="keep"))
                    self._asleep = ["weights", "kv_cache"]
                result = await self._loop.run_in_executor(self._fn_runner, self._run_fn, fn)
                if bump_version:
                    self._version += 1  # before resuming: later tokens carry the new version
                return result
            finally:
                for tag in list(self._asleep):
                    await self._client.wake_up(tags=[tag])
                    self._asleep.remove(tag)
                if self._paused:
                    await self._client.resume_generation()
                    self._paused = False

    def _run_fn(self, fn: Callable[[], Any]) -> Any:
        self._exclusive_thread = threading.get_ident()
        try:
            return fn()
        finally:
            self._exclusive_thread = None

    async def _pause(self) -> None:
        """Stop scheduling. "keep" freezes running requests; with `clear_cache` they are
        preempted and recompute their KV with the new weights when generation resumes.
        vLLM releases without the keep mode can only let them finish first."""
        pause = self._client.pause_generation
        if "mode" in inspect.signature(pause).parameters:
            await pause(mode="keep", clear_cache=True)
        else:
            await pause(wait_for_inflight_requests=True, clear_cache=True)
        self._paused = True

    def _write_update_files(self, named: Iterable[tuple[str, torch.Tensor]]) -> Iterator[Path]:
        """The tensors, cast to the served dtype on the CPU, as safetensors files of about
        `weight_shard_bytes` each; one file exists at a time."""
        from safetensors.torch import save_file

        if self._update_dir is None:
            shm = Path("/dev/shm")
            where = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
            self._update_dir = Path(tempfile.mkdtemp(prefix="swarmrl-vllm-weights-", dir=where))
        shard: dict[str, torch.Tensor] = {}
        size = 0
        for name, tensor in named:
            dtype = self._dtype if tensor.is_floating_point() else tensor.dtype
            shard[name] = tensor.detach().to("cpu", dtype=dtype, copy=True).contiguous()
            size += shard[name].nbytes
            if size >= self._shard_bytes:
                yield self._save_shard(save_file, shard)
                shard, size = {}, 0
        if shard:
            yield self._save_shard(save_file, shard)

    def _save_shard(self, save_file: Callable[..., None], shard: dict[str, torch.Tensor]) -> Path:
        assert self._update_dir is not None
        path = self._update_dir / f"update-{next(self._update_files)}.safetensors"
        save_file(shard, str(path))
        return path


def _logprobs_at(
    position: Mapping[int, Any], token: int, count: int
) -> tuple[float, list[TokenLogprob]]:
    """The sampled token's logprob and the `count` most likely alternatives (best first)
    from one position of vLLM's logprobs: the top `count` entries, plus the sampled token
    when it is not among them (then it is the least likely entry)."""
    if token not in position:
        raise EngineFailure("vLLM's logprobs do not hold the sampled token")
    ranked = sorted(position.items(), key=lambda item: -item[1].logprob)
    top = [TokenLogprob(token_id, float(entry.logprob)) for token_id, entry in ranked[:count]]
    return float(position[token].logprob), top


def _finish(vllm_reason: str | None) -> FinishReason:
    return vllm_reason if vllm_reason in ("stop", "length") else "abort"  # type: ignore[return-value]


def _supported(method: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    """The keyword arguments `method` accepts (vLLM grows them release by release)."""
    accepted = inspect.signature(method).parameters
    return {k: v for k, v in kwargs.items() if k in accepted}


def write_hf_dir(model: torch.nn.Module, hf_tokenizer: Any, directory: Path) -> None:
    """Save the served module and its tokenizer as a Hugging Face directory for vLLM.

    A GGUF-loaded model is already dequantized, but transformers still marks it quantized
    and refuses to save it (FIELD-NOTES): drop the marks first."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None and "gguf" in type(quantizer).__name__.lower():
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    model.save_pretrained(directory)
    hf_tokenizer.save_pretrained(directory)


def structured_outputs_for(grammar: Grammar | None) -> dict[str, Any] | None:
    """vLLM's `StructuredOutputsParams` fields for `grammar`: the grammar's Lark text, which
    vLLM's "guidance" backend compiles with llguidance as the torch engine does."""
    if grammar is None:
        return None
    return {"grammar": grammar.lark}


def _guidance_backend(engine_args_class: Any) -> dict[str, Any]:
    """The engine argument that picks llguidance for structured outputs (vLLM >= 0.12:
    `structured_outputs_config`); none on a vLLM without it, whose "auto" backend falls
    back to guidance for grammars xgrammar cannot read."""
    names = {f.name for f in dataclasses.fields(engine_args_class)}
    if "structured_outputs_config" not in names:
        return {}
    from vllm.config import StructuredOutputsConfig

    return {"structured_outputs_config": StructuredOutputsConfig(backend="guidance")}


def build_vllm_engine(
    served_model: torch.nn.Module,
    tokenizer: HFChatTokenizer,
    config: EngineConfig | None = None,
    initial_version: int = 0,
) -> VllmEngine:
    """Start vLLM on a copy of `served_model` (a transformers causal LM in the engine
    dtype) and wrap it. The module's weights are saved to a temporary directory that vLLM
    loads; when the module sits on a GPU it is then moved to the CPU, so the memory goes
    to vLLM (from here on vLLM holds the served weights; updates go through
    `load_weights`). Needs vLLM and a CUDA GPU."""
    from vllm import SamplingParams as VllmSamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine.async_llm import AsyncLLM

    config = config or EngineConfig()
    settings = VllmSettings.from_env()
    param = next(served_model.parameters())
    colocated = param.device.type == "cuda"
    sleep = settings.sleep == "on" or (settings.sleep == "auto" and colocated)
    max_context = serving_context(served_model.config, config.max_context)
    model_dir = Path(tempfile.mkdtemp(prefix="swarmrl-vllm-model-"))
    try:
        write_hf_dir(served_model, tokenizer.hf, model_dir)
        vocab_size = served_model.get_input_embeddings().num_embeddings
        if colocated:
            served_model.to("cpu")
            torch.cuda.empty_cache()
        args = AsyncEngineArgs(
            model=str(model_dir),
            tokenizer=str(model_dir),
            dtype=str(param.dtype).removeprefix("torch."),
            max_model_len=max_context,
            max_num_seqs=config.max_batch,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            tensor_parallel_size=settings.tensor_parallel_size,
            enforce_eager=settings.enforce_eager,
            enable_sleep_mode=sleep,
            logprobs_mode="processed_logprobs",
            max_logprobs=MAX_TOP_LOGPROBS,
            generation_config="vllm",
            worker_extension_cls=WORKER_EXTENSION,
            disable_log_stats=True,
            **_guidance_backend(AsyncEngineArgs),
        )
        log.info(
            "starting vLLM: %s, max_context %d, max_batch %d, sleep %s",
            settings.model_dump(),
            max_context,
            config.max_batch,
            sleep,
        )

        def make_sampling_params(**kwargs: Any) -> Any:
            if "structured_outputs" in kwargs:
                from vllm.sampling_params import StructuredOutputsParams

                kwargs["structured_outputs"] = StructuredOutputsParams(
                    **kwargs["structured_outputs"]
                )
            return VllmSamplingParams(output_kind=RequestOutputKind.DELTA, **kwargs)

        return VllmEngine(
            lambda: AsyncLLM.from_engine_args(args),
            tokenizer,
            max_context=max_context,
            vocab_size=vocab_size,
            dtype=param.dtype,
            make_sampling_params=make_sampling_params,
            initial_version=initial_version,
            sleep=sleep,
            weight_shard_bytes=settings.weight_shard_mb << 20,
            owned_dirs=[model_dir],
        )
    except BaseException:
        shutil.rmtree(model_dir, ignore_errors=True)
        raise
