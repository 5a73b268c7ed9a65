"""Constrained decoding in the torch engine on the tiny random model: what it samples
matches the grammar, and what it records is exactly the distribution it sampled from."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest
import torch

from trainer import chat_format, grammar
from trainer.config import EngineConfig
from trainer.engine import TorchEngine
from trainer.engine.constraint import CONSTRAINED_SHIFT, GrammarCompiler
from trainer.policy.batching import TrainItem, to_micro_batch
from trainer.policy.logprobs import completion_logprobs
from trainer.types import Sample, SamplingParams

pytest.importorskip("llguidance", reason="constrained decoding needs llguidance")

SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "n": {"type": "integer", "minimum": 0, "maximum": 99},
        "colour": {"enum": ["red", "blue"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 2},
    },
    "required": ["ok", "n", "colour", "tags"],
    "additionalProperties": False,
}
TOOLS = [
    grammar.ToolSchema(
        "get_weather",
        {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 8}},
            "required": ["city"],
            "additionalProperties": False,
        },
    ),
    grammar.ToolSchema(
        "add",
        {
            "type": "object",
            "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}},
            "required": ["a"],
            "additionalProperties": False,
        },
    ),
]


@pytest.fixture(scope="module")
def engine(tiny_loaded, tiny_tokenizer):
    eng = TorchEngine(tiny_loaded.model, tiny_tokenizer, EngineConfig(max_batch=8))
    yield eng
    eng.shutdown()


def generate_all(engine, prompt, params_list):
    async def go():
        return await asyncio.gather(*(engine.generate(prompt, p) for p in params_list))

    return asyncio.run(go())


def prompt_of(tokenizer, text="answer in JSON", prefix=""):
    rendered = tokenizer.render_chat([{"role": "user", "content": text}])
    return rendered.token_ids + tokenizer.encode(prefix)


@pytest.mark.slow
def test_json_schema_outputs_parse_and_validate_for_every_seed(engine, tiny_tokenizer):
    built = grammar.json_value(SCHEMA)
    prompt = prompt_of(tiny_tokenizer)
    done = generate_all(
        engine, prompt, [SamplingParams(max_tokens=120, seed=s, grammar=built) for s in range(6)]
    )
    for completion in done:
        assert completion.finish_reason == "stop", completion.text
        jsonschema.validate(json.loads(completion.text), SCHEMA)
        assert completion.token_ids[-1] not in tiny_tokenizer.eos_token_ids  # ended by the grammar
    assert len({c.text for c in done}) > 1  # sampled, not one forced string


def test_forced_calls_name_a_declared_tool_with_schema_valid_arguments(engine, tiny_tokenizer):
    prefix = chat_format.forced_prefix("required")
    built = grammar.forced_call(TOOLS, prefix)
    prompt = prompt_of(tiny_tokenizer, "what is the weather?", prefix)
    done = generate_all(
        engine, prompt, [SamplingParams(max_tokens=80, seed=s, grammar=built) for s in range(6)]
    )
    schemas = {t.name: t.parameters for t in TOOLS}
    for completion in done:
        parsed = chat_format.parse_tool_calls(prefix + completion.text)
        assert len(parsed.tool_calls) == 1, completion.text
        call = parsed.tool_calls[0]
        assert call.name in schemas
        jsonschema.validate(json.loads(call.arguments), schemas[call.name])


def test_unconstrained_requests_in_the_same_batch_are_untouched(engine, tiny_tokenizer):
    prompt = prompt_of(tiny_tokenizer)
    plain = SamplingParams(max_tokens=12, temperature=0, ignore_eos=True)
    alone = generate_all(engine, prompt, [plain])[0]
    together = generate_all(
        engine, prompt, [plain, SamplingParams(max_tokens=40, grammar=grammar.json_value(None))]
    )
    assert together[0].token_ids == alone.token_ids
    assert together[0].constrained is None and together[0].unconstrained_logprobs is None
    assert together[1].constrained is not None and any(together[1].constrained)


def replay_logprobs(model, tokenizer, vocab_size, prompt, completion, built, temperature):
    """Each completion token's logprob recomputed by a full forward pass, with and without
    the grammar mask replayed token by token."""
    ids = torch.tensor([prompt + completion.token_ids])
    with torch.no_grad():
        logits_TV = model(ids).logits[0, len(prompt) - 1 : -1].float() / temperature
    matcher = GrammarCompiler(tokenizer, vocab_size).matcher(built)
    masked, free = [], []
    for position, token in enumerate(completion.token_ids):
        allowed_V = matcher.allowed_V()[: logits_TV.shape[1]]
        row_V = logits_TV[position]
        masked.append(torch.log_softmax(row_V.masked_fill(~allowed_V, float("-inf")), -1)[token])
        free.append(torch.log_softmax(row_V, -1)[token])
        matcher.advance(token)
    return torch.stack(masked), torch.stack(free)


@pytest.mark.slow
def test_recorded_logprobs_equal_a_recomputation_under_the_same_mask(
    engine, tiny_loaded, tiny_tokenizer
):
    built = grammar.json_value(SCHEMA)
    prompt = prompt_of(tiny_tokenizer)
    done = generate_all(
        engine, prompt, [SamplingParams(max_tokens=120, temperature=0.7, seed=3, grammar=built)]
    )[0]
    vocab = tiny_loaded.model.get_input_embeddings().num_embeddings
    masked, free = replay_logprobs(
        tiny_loaded.model, tiny_tokenizer, vocab, prompt, done, built, temperature=0.7
    )
    assert torch.allclose(torch.tensor(done.logprobs), masked, atol=1e-4)
    assert torch.allclose(torch.tensor(done.unconstrained_logprobs), free, atol=1e-4)
    assert done.constrained == [
        bool(m - f > CONSTRAINED_SHIFT)
        for m, f in zip(done.logprobs, done.unconstrained_logprobs, strict=True)
    ]
    assert any(done.constrained)  # the mask did move logprobs on the random model


def test_the_trainer_recomputes_the_unconstrained_logprobs_training_compares_against(
    engine, tiny_loaded, tiny_tokenizer
):
    """Training scores tokens without the mask (docs/training.md): a constrained call's
    behaviour logprobs are its unconstrained ones, so ratios start at 1."""
    built = grammar.json_value(SCHEMA)
    prompt = prompt_of(tiny_tokenizer)
    done = generate_all(
        engine, prompt, [SamplingParams(max_tokens=120, temperature=0.7, seed=5, grammar=built)]
    )[0]
    sample = Sample(
        episode_id="e",
        policy="p",
        prompt_token_ids=prompt,
        completion_token_ids=done.token_ids,
        behaviour_logprobs=done.unconstrained_logprobs,
        version=0,
        temperature=done.temperature,
    )
    batch = to_micro_batch([TrainItem(sample=sample, advantage=1.0)], pad_id=0)
    with torch.no_grad():
        ours = completion_logprobs(tiny_loaded.model, batch)
    assert torch.allclose(ours, torch.tensor(done.unconstrained_logprobs), atol=1e-4)
    assert not torch.allclose(ours, torch.tensor(done.logprobs), atol=1e-3)
