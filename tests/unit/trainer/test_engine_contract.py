"""The engine contract: what every rollout engine behind `trainer.types.InferenceEngine` and
`trainer.engine.weights.TrainableEngine` must do, checked the same way on each of them.

Engines (the `harness` fixture):
- `torch`: `TorchEngine` on the tiny random model.
- `vllm-adapter`: `VllmEngine` (all of our side of the vLLM boundary) driving
  `FakeAsyncLLM`, a stand-in for vLLM's `AsyncLLM` built on a `TorchEngine`: the same
  calls, DELTA outputs of up to two tokens, per-position logprob maps, abort on close,
  pause/resume, sleep/wake and `collective_rpc` into the real worker extension. It runs
  everywhere; it is not vLLM.
- `vllm`: `build_vllm_engine` on a real vLLM; skipped with the reason where vLLM is not
  installed or there is no CUDA GPU (vLLM's attention kernels want head_dim 64, so this
  one gets its own tiny model).

Each engine's tokenizer treats one extra token as EOS: the token the model greedily emits
first for the probe prompt, so end-of-sequence handling is testable on random weights.
Checks against a reference forward pass compare within the engine's tolerance; greedy
tokens must be an argmax of the reference logits up to that tolerance (ties on random
weights are allowed to go either way).

Engine-specific tests stay with their engine (tests/unit/trainer/test_engine.py for the
torch engine's batching and cache); the adapter's vLLM-facing details are at the end.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from trainer.config import EngineConfig
from trainer.engine import TorchEngine
from trainer.engine.vllm_engine import (
    VllmEngine,
    VllmSettings,
    _guidance_backend,
    structured_outputs_for,
    write_hf_dir,
)
from trainer.engine.vllm_worker import WeightLoadingExtension
from trainer.engine.weights import TrainableEngine, copy_weights_into
from trainer.errors import EngineFailure, InvalidPrompt, PromptTooLong
from trainer.tokenizer import HFChatTokenizer
from trainer.types import GeneratedToken, Grammar, InferenceEngine, SamplingParams, StreamEnd

MAX_CONTEXT = 256


@dataclass
class Harness:
    kind: str
    engine: Any  # InferenceEngine and TrainableEngine
    reference: torch.nn.Module  # the served weights on the CPU, for teacher-forced checks
    tokenizer: HFChatTokenizer
    probe: list[int]  # a prompt whose greedy first token is `eos`
    eos: int  # an EOS of `tokenizer` (an extra one, see the module docstring)
    atol: float
    decoded: Callable[[], int]  # a count that grows while the engine decodes
    fake: FakeAsyncLLM | None = None


def chat(tokenizer: HFChatTokenizer, i: int) -> list[int]:
    words = " ".join(["alpha", "beta", "gamma", "delta"][: 1 + i % 4])
    return tokenizer.render_chat([{"role": "user", "content": f"prompt {i}: {words}"}]).token_ids


def greedy(n: int, **kw: Any) -> SamplingParams:
    return SamplingParams(max_tokens=n, temperature=0, ignore_eos=True, **kw)


def reference_logprobs(
    model: torch.nn.Module,
    prompt: list[int],
    tokens: list[int],
    temperature: float = 1.0,
    weights: dict[str, torch.Tensor] | None = None,
) -> torch.Tensor:
    """log_softmax(logits / temperature) at each completion position: [len(tokens), V]."""
    ids = torch.tensor([prompt + tokens])
    with torch.inference_mode():
        if weights is None:
            logits = model(ids).logits
        else:
            logits = torch.func.functional_call(model, weights, (ids,)).logits
    return torch.log_softmax(logits[0, len(prompt) - 1 : -1].float() / temperature, dim=-1)


def assert_greedy_matches(h: Harness, prompt: list[int], completion: Any, weights=None) -> None:
    ref = reference_logprobs(h.reference, prompt, completion.token_ids, weights=weights)
    chosen = ref.gather(1, torch.tensor(completion.token_ids)[:, None])[:, 0]
    assert torch.all(chosen >= ref.max(dim=-1).values - h.atol), "a greedy token is no argmax"
    assert torch.allclose(torch.tensor(completion.logprobs), chosen, atol=h.atol)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def collect(engine: InferenceEngine, prompt: list[int], params: SamplingParams) -> list:
    return [item async for item in engine.stream(prompt, params)]


# -- the engines ---------------------------------------------------------------------------


def eos_tokenizer(tiny_loaded: Any, reference: torch.nn.Module) -> tuple[HFChatTokenizer, dict]:
    """The tokenizer with one more EOS: the greedy first token after the probe prompt."""
    probe = chat(HFChatTokenizer(tiny_loaded.tokenizer), 0)
    with torch.inference_mode():
        first = int(reference(torch.tensor([probe])).logits[0, -1].argmax())
    tokenizer = HFChatTokenizer(tiny_loaded.tokenizer, extra_eos_token_ids=[first])
    return tokenizer, {"probe": probe, "eos": first}


def torch_harness(tiny_loaded: Any) -> Harness:
    model = tiny_loaded.model
    tokenizer, eos = eos_tokenizer(tiny_loaded, model)
    engine = TorchEngine(
        model,
        tokenizer,
        EngineConfig(max_batch=8, max_context=MAX_CONTEXT, initial_cache_tokens=16),
    )
    return Harness(
        "torch", engine, model, tokenizer, **eos, atol=1e-4, decoded=lambda: engine.steps
    )


def engine_on(fake: FakeAsyncLLM, model: torch.nn.Module, tokenizer, **kwargs: Any) -> VllmEngine:
    """`VllmEngine` driving the stand-in `fake` (vLLM's SamplingParams: a namespace)."""
    return VllmEngine(
        lambda: fake,
        tokenizer,
        max_context=MAX_CONTEXT,
        vocab_size=model.get_input_embeddings().num_embeddings,
        dtype=torch.float32,
        make_sampling_params=SimpleNamespace,
        **kwargs,
    )


def adapter_harness(tiny_loaded: Any, sleep: bool = False) -> Harness:
    model = tiny_loaded.model
    tokenizer, eos = eos_tokenizer(tiny_loaded, model)
    fake = FakeAsyncLLM(model, tokenizer)
    # 1 MiB update files: several for the tiny model
    engine = engine_on(fake, model, tokenizer, sleep=sleep, weight_shard_bytes=1 << 20)
    fake.engine = engine
    return Harness(
        "vllm-adapter",
        engine,
        model,
        tokenizer,
        **eos,
        atol=1e-4,
        decoded=lambda: fake.torch_engine.steps,
        fake=fake,
    )


def vllm_harness(tiny_loaded: Any) -> Harness:
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM not installed (pip install 'swarmrl[gpu]' on a CUDA machine)")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from transformers import LlamaForCausalLM

    from trainer.engine.vllm_engine import build_vllm_engine

    cfg = copy.deepcopy(tiny_loaded.model.config)
    cfg.update({"hidden_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1})
    cfg.head_dim = 64
    with torch.random.fork_rng():
        torch.manual_seed(0)
        reference = LlamaForCausalLM(cfg).float().eval()
    tokenizer, eos = eos_tokenizer(tiny_loaded, reference)
    engine = build_vllm_engine(
        copy.deepcopy(reference), tokenizer, EngineConfig(max_batch=8, max_context=MAX_CONTEXT)
    )
    return Harness(
        "vllm",
        engine,
        reference,
        tokenizer,
        **eos,
        atol=2e-2,
        decoded=lambda: engine.tokens_received,
    )


@pytest.fixture(scope="module", params=["torch", "vllm-adapter", "vllm"])
def harness(request, tiny_loaded):
    build = {"torch": torch_harness, "vllm-adapter": adapter_harness, "vllm": vllm_harness}
    h = build[request.param](tiny_loaded)
    yield h
    h.engine.shutdown()


@pytest.fixture
def engine(harness):
    return harness.engine


# -- the contract --------------------------------------------------------------------------


def test_the_engine_implements_both_protocols(engine):
    assert isinstance(engine, InferenceEngine) and isinstance(engine, TrainableEngine)
    assert engine.max_context == MAX_CONTEXT


def test_a_stream_is_its_tokens_then_one_end_that_repeats_them(harness, engine):
    prompt = chat(harness.tokenizer, 1)
    items = run(collect(engine, prompt, greedy(9, top_logprobs=3)))
    *tokens, end = items
    assert tokens and all(isinstance(t, GeneratedToken) for t in tokens)
    assert isinstance(end, StreamEnd)
    c = end.completion
    assert c.prompt_token_ids == prompt
    assert c.token_ids == [t.token_id for t in tokens]
    assert c.logprobs == [t.logprob for t in tokens]
    assert c.versions == [t.version for t in tokens] == [engine.version] * 9
    assert c.top_logprobs == [t.top_logprobs for t in tokens]
    assert c.token_texts == [harness.tokenizer.token_text(t.token_id) for t in tokens]
    assert "".join(t.text for t in tokens) == c.text
    assert c.temperature == 1.0  # greedy: logprobs of the raw logits
    assert c.started_at <= c.first_token_at <= c.finished_at


def test_max_tokens_finishes_with_length_after_exactly_that_many_tokens(harness, engine):
    prompt = chat(harness.tokenizer, 2)
    for n in (1, 6, 19):
        c = run(engine.generate(prompt, SamplingParams(max_tokens=n, seed=n, ignore_eos=True)))
        assert c.finish_reason == "length" and len(c.token_ids) == n


def test_eos_finishes_with_stop_unless_ignore_eos_says_go_on(harness, engine):
    eos = harness.eos
    stopped = run(engine.generate(harness.probe, SamplingParams(max_tokens=10, temperature=0)))
    assert stopped.finish_reason == "stop"
    assert stopped.token_ids == [eos] and stopped.text == ""  # kept in ids, not in text
    going = run(engine.generate(harness.probe, greedy(10)))
    assert going.finish_reason == "length" and len(going.token_ids) == 10
    assert going.token_ids[0] == eos


def test_greedy_is_deterministic_and_picks_the_reference_argmax(harness, engine):
    prompt = chat(harness.tokenizer, 3)
    first = run(engine.generate(prompt, greedy(24)))
    second = run(engine.generate(prompt, greedy(24)))
    assert first.token_ids == second.token_ids
    assert_greedy_matches(harness, prompt, first)


def test_a_seed_replays_the_same_sample_and_another_seed_does_not(harness, engine):
    prompt = chat(harness.tokenizer, 4)

    def sample(seed: int):
        return run(
            engine.generate(prompt, SamplingParams(max_tokens=16, seed=seed, ignore_eos=True))
        )

    a, b, c = sample(11), sample(11), sample(12)
    assert a.token_ids == b.token_ids
    assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=harness.atol)
    assert a.token_ids != c.token_ids


@pytest.mark.parametrize("temperature", [1.0, 0.6, 1.7])
def test_sampled_logprobs_are_log_softmax_of_logits_over_temperature(harness, engine, temperature):
    prompt = chat(harness.tokenizer, 5)
    params = SamplingParams(max_tokens=12, temperature=temperature, seed=3, ignore_eos=True)
    c = run(engine.generate(prompt, params))
    assert c.temperature == temperature
    ref = reference_logprobs(harness.reference, prompt, c.token_ids, temperature)
    expected = ref.gather(1, torch.tensor(c.token_ids)[:, None])[:, 0]
    assert torch.allclose(torch.tensor(c.logprobs), expected, atol=harness.atol)


def test_top_logprobs_have_the_requested_count_best_first_as_the_reference_ranks_them(
    harness, engine
):
    prompt = chat(harness.tokenizer, 6)
    params = SamplingParams(max_tokens=10, temperature=0.9, seed=5, top_logprobs=4, ignore_eos=True)
    c = run(engine.generate(prompt, params))
    ref = reference_logprobs(harness.reference, prompt, c.token_ids, 0.9)
    best = ref.topk(4, dim=-1).values
    for j, (token, logprob, alternatives) in enumerate(
        zip(c.token_ids, c.logprobs, c.top_logprobs, strict=True)
    ):
        values = [a.logprob for a in alternatives]
        assert len(alternatives) == 4 and len({a.token_id for a in alternatives}) == 4
        assert values == sorted(values, reverse=True)
        assert torch.allclose(torch.tensor(values), best[j], atol=harness.atol)
        for a in alternatives:
            assert abs(a.logprob - float(ref[j, a.token_id])) <= harness.atol
        if logprob > values[-1] + harness.atol:  # in the top 4: listed, with its own value
            assert (token, logprob) in [(a.token_id, a.logprob) for a in alternatives]
    none = run(engine.generate(prompt, greedy(3)))
    assert none.top_logprobs == [[], [], []]


def test_a_stop_string_cuts_the_text_finishes_with_stop_and_is_never_streamed(harness, engine):
    prompt = chat(harness.tokenizer, 7)
    full = run(engine.generate(prompt, greedy(40)))
    assert len(full.text) > 8
    stop = full.text[4:7]
    items = run(collect(engine, prompt, greedy(40, stop=("@@never@@", stop))))
    *tokens, end = items
    c = end.completion
    assert c.finish_reason == "stop"
    assert c.text == full.text[: full.text.index(stop)] and stop not in c.text
    assert "".join(t.text for t in tokens) == c.text
    assert c.token_ids == full.token_ids[: len(c.token_ids)] and len(c.token_ids) < 40


def test_closing_a_stream_early_cancels_it_and_the_engine_serves_on(harness, engine):
    prompt = chat(harness.tokenizer, 8)

    async def go():
        opened = harness.decoded()
        stream = engine.stream(prompt, greedy(200))
        async for _ in stream:
            break
        await stream.aclose()
        while True:  # until the engine goes quiet
            before = harness.decoded()
            await asyncio.sleep(0.3)
            if harness.decoded() == before:
                break
        assert harness.decoded() - opened < 100, "the closed request went on decoding"
        return await engine.generate(prompt, greedy(3))

    assert len(run(go()).token_ids) == 3


def test_concurrent_requests_all_complete_with_their_own_tokens(harness, engine):
    prompts = [chat(harness.tokenizer, i) for i in range(6)]
    lengths = [3, 17, 9, 30, 1, 12]

    async def go():
        return await asyncio.gather(
            *(engine.generate(p, greedy(n)) for p, n in zip(prompts, lengths, strict=True))
        )

    for p, n, c in zip(prompts, lengths, run(go()), strict=True):
        assert len(c.token_ids) == n and c.finish_reason == "length"
        assert c.prompt_token_ids == p
        assert_greedy_matches(harness, p, c)


def test_a_prompt_that_fills_the_context_is_refused_and_the_rest_finishes_at_the_limit(
    harness, engine
):
    with pytest.raises(PromptTooLong):
        run(engine.generate(list(range(100, 100 + MAX_CONTEXT)), greedy(4)))
    with pytest.raises(PromptTooLong):
        run(engine.generate([], greedy(4)))
    near = list(range(100, 100 + MAX_CONTEXT - 5))
    c = run(engine.generate(near, greedy(50)))
    assert c.finish_reason == "length" and len(near) + len(c.token_ids) == MAX_CONTEXT


def test_out_of_vocabulary_prompt_ids_fail_only_that_request(harness, engine):
    async def go():
        return await asyncio.gather(
            engine.generate([7, 10**9], greedy(3)),
            engine.generate([-1, 7], greedy(3)),
            engine.generate(chat(harness.tokenizer, 9), greedy(3)),
            return_exceptions=True,
        )

    too_big, negative, fine = run(go())
    assert isinstance(too_big, InvalidPrompt) and isinstance(negative, InvalidPrompt)
    assert len(fine.token_ids) == 3


def test_new_weights_through_run_exclusive_change_the_output_and_bump_the_version_once(
    harness, engine
):
    prompt = chat(harness.tokenizer, 10)
    original = {n: p.detach().clone() for n, p in harness.reference.named_parameters()}
    generator = torch.Generator().manual_seed(0)
    new = {n: p + 0.5 * torch.randn(p.shape, generator=generator) for n, p in original.items()}

    async def go():
        before = await engine.generate(prompt, greedy(8))
        version = engine.version
        result = await engine.run_exclusive(lambda: engine.load_weights(new.items()) or "done")
        bumped = engine.version
        after = await engine.generate(prompt, greedy(8))
        return before, version, result, bumped, after

    try:
        before, version, result, bumped, after = run(go())
    finally:
        run(engine.run_exclusive(lambda: engine.load_weights(original.items())))
    assert result == "done" and bumped == version + 1
    assert set(before.versions) == {version} and set(after.versions) == {version + 1}
    assert after.token_ids != before.token_ids
    assert_greedy_matches(harness, prompt, after, weights=new)
    restored = run(engine.generate(prompt, greedy(8)))
    assert restored.token_ids == before.token_ids


def test_run_exclusive_without_a_version_bump_keeps_the_version_and_returns_fn_s_value(engine):
    version = engine.version
    assert run(engine.run_exclusive(lambda: 42, bump_version=False)) == 42
    assert engine.version == version
    with pytest.raises(ZeroDivisionError):
        run(engine.run_exclusive(lambda: 1 / 0))
    assert engine.version == version  # a failed update changes nothing
    assert len(run(engine.generate([5, 6, 7], greedy(2))).token_ids) == 2


GRAMMAR_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}, "ok": {"type": "boolean"}},
    "required": ["n", "ok"],
    "additionalProperties": False,
}


@pytest.mark.slow
def test_a_grammar_constrains_the_completion_and_marks_its_tokens(harness, engine):
    pytest.importorskip("llguidance", reason="constrained decoding needs llguidance")
    from trainer import grammar

    prompt = chat(harness.tokenizer, 4)
    built = grammar.json_value(GRAMMAR_SCHEMA)
    for seed in range(3):
        done = run(engine.generate(prompt, SamplingParams(max_tokens=40, seed=seed, grammar=built)))
        parsed = json.loads(done.text)
        assert set(parsed) == {"n", "ok"} and 0 <= parsed["n"] <= 9, done.text
        assert done.constrained is not None and len(done.constrained) == len(done.token_ids)
        assert any(done.constrained)
        if done.unconstrained_logprobs is not None:  # the torch engine sees both
            assert all(
                m >= f - 1e-5
                for m, f in zip(done.logprobs, done.unconstrained_logprobs, strict=True)
            )
    plain = run(engine.generate(prompt, greedy(3)))
    assert plain.constrained is None and plain.unconstrained_logprobs is None


# -- the vLLM adapter's own side (on the stand-in) -----------------------------------------


def test_a_grammar_reaches_vllm_as_its_structured_outputs_grammar():
    built = Grammar(kind="json_object", lark='start: %json {"type": "object"}\n')
    assert structured_outputs_for(built) == {"grammar": built.lark}
    assert structured_outputs_for(None) is None


def test_vllm_without_structured_outputs_config_keeps_its_own_backend_choice():
    @dataclass
    class OldEngineArgs:  # a vLLM before `structured_outputs_config`
        model: str = ""

    assert _guidance_backend(OldEngineArgs) == {}


@dataclass
class FakeLogprob:
    logprob: float
    rank: int | None
    decoded_token: str | None = None


class FakeWorker(WeightLoadingExtension):
    """A vLLM worker as the extension sees it: `model_runner.model.load_weights`, `device`."""

    def __init__(self, model: torch.nn.Module, calls: list):
        self.device = torch.device("cpu")
        self.model_config = None
        self.model_runner = SimpleNamespace(model=SimpleNamespace(load_weights=self._copy))
        self._model = model
        self._calls = calls

    def _copy(self, weights):
        copy_weights_into(self._model, weights)

    def swarmrl_finish_weight_update(self) -> None:  # vLLM's post-processing: not here
        self._calls.append(("finish",))


def _grammar_of(structured_outputs: dict | None) -> Grammar | None:
    """vLLM's structured-output fields (`StructuredOutputsParams(grammar=...)`) as ours."""
    if structured_outputs is None:
        return None
    assert set(structured_outputs) == {"grammar"}, structured_outputs
    return Grammar(kind="lark", lark=structured_outputs["grammar"])


class FakeAsyncLLM:
    """The part of vLLM's `AsyncLLM` that `VllmEngine` calls, served by a `TorchEngine`."""

    def __init__(self, model: torch.nn.Module, tokenizer: HFChatTokenizer):
        config = EngineConfig(max_batch=8, max_context=MAX_CONTEXT, initial_cache_tokens=16)
        self.torch_engine = TorchEngine(model, tokenizer, config)
        self.eos = set(tokenizer.eos_token_ids)
        self.calls: list[tuple] = []
        self.worker = FakeWorker(model, self.calls)
        self.engine: VllmEngine | None = None

    async def generate(self, prompt: dict, sampling_params: Any, request_id: str):
        sp = sampling_params
        assert sp.n == 1 and sp.detokenize is False and not getattr(sp, "stop", None)
        assert set(sp.stop_token_ids) == (set() if sp.ignore_eos else self.eos)
        params = SamplingParams(
            max_tokens=sp.max_tokens,
            temperature=sp.temperature,
            top_p=sp.top_p,
            top_k=sp.top_k,
            seed=sp.seed,
            top_logprobs=sp.logprobs,
            ignore_eos=sp.ignore_eos,
            grammar=_grammar_of(getattr(sp, "structured_outputs", None)),
        )
        pending: list[GeneratedToken] = []
        finished = False
        try:
            async for item in self.torch_engine.stream(prompt["prompt_token_ids"], params):
                if isinstance(item, StreamEnd):
                    finished = True
                    yield self._output(request_id, pending, item.completion.finish_reason)
                    return
                if len(pending) == 2:  # deltas of up to two tokens, the last with `finished`
                    yield self._output(request_id, pending, None)
                    pending = []
                pending.append(item)
        finally:
            if not finished:
                self.calls.append(("abort", request_id))

    @staticmethod
    def _output(request_id: str, tokens: list[GeneratedToken], finish_reason: str | None):
        positions = []
        for t in tokens:
            position = {
                a.token_id: FakeLogprob(a.logprob, rank)
                for rank, a in enumerate(t.top_logprobs, start=1)
            }
            position.setdefault(t.token_id, FakeLogprob(t.logprob, len(t.top_logprobs) + 1))
            positions.append(position)
        out = SimpleNamespace(
            token_ids=[t.token_id for t in tokens], logprobs=positions, finish_reason=finish_reason
        )
        return SimpleNamespace(
            request_id=request_id, outputs=[out], finished=finish_reason is not None
        )

    async def abort(self, request_id: str, internal: bool = False) -> None:
        self.calls.append(("abort", request_id))

    async def pause_generation(self, *, mode: str = "abort", clear_cache: bool = True) -> None:
        self.calls.append(("pause", mode, clear_cache))

    async def resume_generation(self) -> None:
        self.calls.append(("resume", self.engine.version if self.engine else None))

    async def sleep(self, level: int = 1, mode: str = "abort") -> None:
        self.calls.append(("sleep", level, mode))

    async def wake_up(self, tags: list[str] | None = None) -> None:
        self.calls.append(("wake_up", tuple(tags or ())))

    async def collective_rpc(self, method, timeout=None, args=(), kwargs=None):
        self.calls.append(("rpc", method))

        def call():
            return getattr(self.worker, method)(*args, **(kwargs or {}))

        return [await self.torch_engine.run_exclusive(call, bump_version=False)]

    def shutdown(self, timeout: float | None = None) -> None:
        self.torch_engine.shutdown()


@pytest.fixture
def adapter(tiny_loaded):
    h = adapter_harness(tiny_loaded)
    yield h
    h.engine.shutdown()


def kinds(calls: list[tuple]) -> list[str]:
    return [c[0] if c[0] != "rpc" else c[1] for c in calls if c[0] != "abort"]


def test_the_adapter_pauses_vllm_only_for_the_weight_copy_and_resumes_after_the_bump(adapter):
    engine, fake = adapter.engine, adapter.fake
    weights = list(adapter.reference.named_parameters())
    run(engine.run_exclusive(lambda: None))
    assert kinds(fake.calls) == []  # nothing to copy: vLLM kept generating
    run(engine.run_exclusive(lambda: engine.load_weights((n, p.detach()) for n, p in weights)))
    files = len([c for c in fake.calls if c == ("rpc", "swarmrl_load_weights_file")])
    assert files > 1  # 1 MiB update files for a ~13 MB model
    assert kinds(fake.calls) == [
        "pause",
        *["swarmrl_load_weights_file"] * files,
        "swarmrl_finish_weight_update",
        "finish",
        "resume",
    ]
    assert fake.calls[0] == ("pause", "keep", True)
    assert fake.calls[-1] == ("resume", 2)  # the version was bumped before generation resumed


def test_sleep_mode_frees_vllm_for_the_update_and_wakes_weights_before_the_copy(tiny_loaded):
    h = adapter_harness(tiny_loaded, sleep=True)  # as when the trainer shares the GPU
    engine, fake = h.engine, h.fake
    try:
        weights = [(n, p.detach()) for n, p in h.reference.named_parameters()]
        run(engine.run_exclusive(lambda: engine.load_weights(weights)))
        calls = [c for c in fake.calls if c[0] != "rpc"]
        assert calls[:3] == [
            ("pause", "keep", True),
            ("sleep", 1, "keep"),
            ("wake_up", ("weights",)),
        ]
        assert calls[-2:] == [("wake_up", ("kv_cache",)), ("resume", 1)]
        run(engine.run_exclusive(lambda: None, bump_version=False))  # a snapshot: no sleep
        assert [c[0] for c in fake.calls].count("sleep") == 1
    finally:
        engine.shutdown()


def test_a_stop_string_aborts_the_vllm_request(adapter):
    engine, fake = adapter.engine, adapter.fake
    prompt = chat(adapter.tokenizer, 11)
    full = run(engine.generate(prompt, greedy(30)))
    run(engine.generate(prompt, greedy(30, stop=(full.text[2:5],))))
    assert [c[0] for c in fake.calls].count("abort") >= 1
    assert engine.in_flight == 0


def test_vllm_errors_become_trainer_errors(adapter):
    engine = adapter.engine

    class EngineDeadError(Exception):
        pass

    class EngineGenerateError(Exception):
        pass

    wrapped = EngineGenerateError()
    wrapped.__cause__ = ValueError("Token id 99999 is out of vocabulary")
    assert isinstance(engine._as_trainer_error(EngineDeadError("boom")), EngineFailure)
    assert isinstance(engine._as_trainer_error(wrapped), InvalidPrompt)
    too_long = ValueError(
        "The decoder prompt (length 300) is longer than the maximum model length of 256."
    )
    assert isinstance(engine._as_trainer_error(too_long), PromptTooLong)
    assert isinstance(engine._as_trainer_error(RuntimeError("cuda")), EngineFailure)


@pytest.mark.slow
def test_the_served_module_saves_to_a_directory_vllm_can_load(tiny_loaded, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = copy.deepcopy(tiny_loaded.model)
    model.hf_quantizer = type("GgufHfQuantizer", (), {})()  # how a GGUF-loaded model looks
    model.config.quantization_config = {"quant_method": "gguf"}
    write_hf_dir(model, tiny_loaded.tokenizer, tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.inference_mode():
        assert torch.equal(loaded(ids).logits, tiny_loaded.model(ids).logits)
    assert AutoTokenizer.from_pretrained(tmp_path).encode("hello") == tiny_loaded.tokenizer.encode(
        "hello"
    )


def test_vllm_settings_come_from_the_environment():
    settings = VllmSettings.from_env(
        {"SWARMRL_VLLM_GPU_MEMORY_UTILIZATION": "0.7", "SWARMRL_VLLM_SLEEP": "off", "OTHER": "x"}
    )
    assert settings.gpu_memory_utilization == 0.7 and settings.sleep == "off"
    with pytest.raises(ValueError):
        VllmSettings.from_env({"SWARMRL_VLLM_GPU_MEMORY_UTILIZATION": "1.5"})


@pytest.mark.slow
@pytest.mark.parametrize("lora", [None, {"r": 4, "alpha": 8}], ids=["full", "lora"])
def test_a_policy_served_by_the_vllm_adapter_trains_and_serves_the_new_weights(monkeypatch, lora):
    """`TorchPolicyFactory(engine="vllm")` with the stand-in behind `build_vllm_engine`: a
    train step pushes the master's weights through run_exclusive + load_weights."""
    from tests.unit.trainer.policy_helpers import train_settings
    from trainer.engine import vllm_engine
    from trainer.policy import TorchPolicyFactory
    from trainer.types import EpisodeSamples, Group, Sample

    fakes: list[FakeAsyncLLM] = []

    def build_on_the_fake(served_model, tokenizer, config, initial_version=0):
        fakes.append(FakeAsyncLLM(served_model, tokenizer))
        return engine_on(fakes[-1], served_model, tokenizer, initial_version=initial_version)

    monkeypatch.setattr(vllm_engine, "build_vllm_engine", build_on_the_fake)
    factory = TorchPolicyFactory(
        EngineConfig(max_batch=8, max_context=MAX_CONTEXT),
        engine_dtype="float32",
        compute_dtype="float32",
        engine="vllm",
    )
    policy = factory.build(served_name="run/p", base_model="tiny", lora=lora, seed=0)
    engine = policy.served.engine
    try:
        assert isinstance(engine, VllmEngine)
        prompt = chat(policy.served.tokenizer, 12)

        async def rollouts():
            params = [SamplingParams(max_tokens=6, seed=s, ignore_eos=True) for s in (1, 2)]
            return await asyncio.gather(*(engine.generate(prompt, p) for p in params))

        good, bad = run(rollouts())
        group = Group(
            "g",
            [
                EpisodeSamples(
                    name,
                    reward,
                    [Sample(name, "p", prompt, c.token_ids, c.logprobs, c.version)],
                )
                for name, reward, c in (("good", 1.0, good), ("bad", 0.0, bad))
            ],
        )
        result = run(policy.trainer.train_step([group], train_settings(lr=1e-2)))
        assert result.samples_trained == 2 and result.version == engine.version == 1
        served = fakes[-1].torch_engine.model
        master = policy.trainer.master
        for name, tensor in master.engine_weights():
            assert torch.equal(dict(served.named_parameters())[name], tensor), name
        assert set(run(engine.generate(prompt, greedy(3))).versions) == {1}
    finally:
        policy.trainer.close()
