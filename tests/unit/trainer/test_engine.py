"""The continuous-batching torch engine on the tiny random model."""

from __future__ import annotations

import asyncio

import pytest
import torch

from trainer.config import EngineConfig
from trainer.engine import TorchEngine
from trainer.errors import PromptTooLong
from trainer.types import GeneratedToken, SamplingParams, StreamEnd


@pytest.fixture
def engine(tiny_loaded, tiny_tokenizer):
    eng = TorchEngine(
        tiny_loaded.model, tiny_tokenizer, EngineConfig(max_batch=8, initial_cache_tokens=16)
    )
    yield eng
    eng.shutdown()


def prompts(tokenizer, n):
    return [
        tokenizer.render_chat(
            [{"role": "user", "content": f"question number {i} " * (1 + i)}]
        ).token_ids
        for i in range(n)
    ]


def hf_greedy(model, prompt, n):
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([prompt]), max_new_tokens=n, min_new_tokens=n, do_sample=False
        )
    return out[0, len(prompt) :].tolist()


def run(coro):
    return asyncio.run(coro)


def test_greedy_tokens_match_hf_generate_for_concurrent_requests_of_different_lengths(
    engine, tiny_loaded, tiny_tokenizer
):
    ps = prompts(tiny_tokenizer, 5)
    lengths = [3, 17, 9, 30, 1]

    async def go():
        return await asyncio.gather(
            *(
                engine.generate(p, SamplingParams(max_tokens=n, temperature=0, ignore_eos=True))
                for p, n in zip(ps, lengths, strict=True)
            )
        )

    results = run(go())
    for p, n, r in zip(ps, lengths, results, strict=True):
        assert r.token_ids == hf_greedy(tiny_loaded.model, p, n)
        assert r.finish_reason == "length"
        assert len(r.logprobs) == len(r.versions) == len(r.token_texts) == n
    assert engine.max_live_seen > 1  # they really shared decode steps
    assert engine.steps < sum(lengths)


def test_logprobs_are_those_of_a_full_forward_pass(engine, tiny_loaded, tiny_tokenizer):
    p = prompts(tiny_tokenizer, 1)[0]
    r = run(
        engine.generate(p, SamplingParams(max_tokens=12, temperature=1.0, seed=3, ignore_eos=True))
    )
    with torch.inference_mode():
        logits = tiny_loaded.model(torch.tensor([p + r.token_ids])).logits[0].float()
    ref = torch.log_softmax(logits[len(p) - 1 : -1], dim=-1).gather(
        1, torch.tensor(r.token_ids)[:, None]
    )[:, 0]
    assert torch.allclose(torch.tensor(r.logprobs), ref, atol=1e-4)


def test_requests_joining_mid_decode_still_match(engine, tiny_loaded, tiny_tokenizer):
    ps = prompts(tiny_tokenizer, 3)

    async def go():
        first = asyncio.create_task(
            engine.generate(ps[0], SamplingParams(max_tokens=40, temperature=0, ignore_eos=True))
        )
        await asyncio.sleep(0.05)
        later = [
            engine.generate(q, SamplingParams(max_tokens=10, temperature=0, ignore_eos=True))
            for q in ps[1:]
        ]
        return [await first, *(await asyncio.gather(*later))]

    results = run(go())
    assert results[0].token_ids == hf_greedy(tiny_loaded.model, ps[0], 40)
    for q, r in zip(ps[1:], results[1:], strict=True):
        assert r.token_ids == hf_greedy(tiny_loaded.model, q, 10)


def test_a_seed_replays_the_same_sample(engine, tiny_tokenizer):
    p = prompts(tiny_tokenizer, 1)[0]
    params = SamplingParams(max_tokens=15, temperature=1.0, seed=42, ignore_eos=True)
    a = run(engine.generate(p, params))
    b = run(engine.generate(p, params))
    c = run(
        engine.generate(p, SamplingParams(max_tokens=15, temperature=1.0, seed=43, ignore_eos=True))
    )
    assert a.token_ids == b.token_ids
    assert a.token_ids != c.token_ids


def test_top_k_one_is_greedy_and_top_logprobs_are_sorted(engine, tiny_tokenizer):
    p = prompts(tiny_tokenizer, 1)[0]
    greedy = run(engine.generate(p, SamplingParams(max_tokens=8, temperature=0, ignore_eos=True)))
    topk1 = run(
        engine.generate(
            p,
            SamplingParams(max_tokens=8, temperature=0.8, top_k=1, ignore_eos=True, top_logprobs=3),
        )
    )
    assert topk1.token_ids == greedy.token_ids
    for alternatives in topk1.top_logprobs:
        assert len(alternatives) == 3
        values = [a.logprob for a in alternatives]
        assert values == sorted(values, reverse=True)


def test_stream_yields_each_token_then_the_completion(engine, tiny_tokenizer):
    p = prompts(tiny_tokenizer, 1)[0]

    async def go():
        return [
            item
            async for item in engine.stream(
                p, SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
            )
        ]

    items = run(go())
    assert all(isinstance(i, GeneratedToken) for i in items[:-1]) and isinstance(
        items[-1], StreamEnd
    )
    completion = items[-1].completion
    assert [i.token_id for i in items[:-1]] == completion.token_ids
    assert "".join(i.text for i in items[:-1]) == completion.text


def test_stop_string_cuts_the_text_and_is_never_streamed(engine, tiny_tokenizer):
    p = prompts(tiny_tokenizer, 1)[0]
    full = run(engine.generate(p, SamplingParams(max_tokens=30, temperature=0, ignore_eos=True)))
    assert len(full.text) > 6
    stop = full.text[3:6]

    async def go():
        return [
            item
            async for item in engine.stream(
                p, SamplingParams(max_tokens=30, temperature=0, ignore_eos=True, stop=(stop,))
            )
        ]

    items = run(go())
    completion = items[-1].completion
    assert completion.finish_reason == "stop"
    assert completion.text == full.text[: full.text.index(stop)]
    assert "".join(i.text for i in items[:-1]) == completion.text


def test_eos_finishes_with_stop_and_is_kept_in_token_ids(tiny_loaded, tiny_tokenizer):
    # Make EOS the argmax everywhere by giving the tokenizer a different EOS: the token the
    # model greedily emits first.
    eng = TorchEngine(tiny_loaded.model, tiny_tokenizer)
    try:
        p = prompts(tiny_tokenizer, 1)[0]
        first = run(eng.generate(p, SamplingParams(max_tokens=1, temperature=0))).token_ids[0]
        tok = type(tiny_tokenizer)(tiny_loaded.tokenizer, extra_eos_token_ids=[first])
        eng2 = TorchEngine(tiny_loaded.model, tok)
        r = run(eng2.generate(p, SamplingParams(max_tokens=10, temperature=0)))
        eng2.shutdown()
        assert r.finish_reason == "stop" and r.token_ids == [first] and r.text == ""
    finally:
        eng.shutdown()


def test_prompt_longer_than_the_context_is_refused(tiny_loaded, tiny_tokenizer):
    eng = TorchEngine(tiny_loaded.model, tiny_tokenizer, EngineConfig(max_context=32))
    try:
        with pytest.raises(PromptTooLong):
            run(eng.generate(list(range(100, 140)), SamplingParams(max_tokens=4)))
        r = run(eng.generate(list(range(100, 130)), SamplingParams(max_tokens=50, ignore_eos=True)))
        assert r.finish_reason == "length" and len(r.prompt_token_ids) + len(r.token_ids) <= 32
    finally:
        eng.shutdown()


def test_weights_version_changes_between_steps_and_is_recorded(engine, tiny_tokenizer):
    p = prompts(tiny_tokenizer, 1)[0]

    async def go():
        before = await engine.generate(p, SamplingParams(max_tokens=3, ignore_eos=True))
        await engine.run_exclusive(lambda: None)
        after = await engine.generate(p, SamplingParams(max_tokens=3, ignore_eos=True))
        return before, after

    before, after = run(go())
    assert set(before.versions) == {0} and set(after.versions) == {1} and engine.version == 1


def test_cancelled_stream_frees_its_slot(engine, tiny_tokenizer):
    p = prompts(tiny_tokenizer, 1)[0]

    async def go():
        stream = engine.stream(p, SamplingParams(max_tokens=500, ignore_eos=True))
        async for _ in stream:
            break
        await stream.aclose()
        await asyncio.sleep(0.2)
        return await engine.generate(p, SamplingParams(max_tokens=2, ignore_eos=True))

    r = run(go())
    assert len(r.token_ids) == 2
    assert engine.steps < 100  # the 500-token request stopped decoding when its reader left


def test_many_requests_beyond_max_batch_all_finish(engine, tiny_tokenizer):
    ps = prompts(tiny_tokenizer, 4) * 5  # 20 requests, max_batch 8, cache grows from 16 columns

    async def go():
        return await asyncio.gather(
            *(
                engine.generate(p, SamplingParams(max_tokens=20, temperature=0, ignore_eos=True))
                for p in ps
            )
        )

    results = run(go())
    assert all(len(r.token_ids) == 20 for r in results)
    for i in range(4):  # identical prompts, greedy: identical outputs whatever slot they used
        assert len({tuple(results[i + 4 * k].token_ids) for k in range(5)}) == 1
    assert engine.max_live_seen == 8


def test_out_of_vocabulary_prompt_ids_fail_only_that_request(engine, tiny_tokenizer):
    from trainer.errors import InvalidPrompt

    good = prompts(tiny_tokenizer, 1)[0]

    async def go():
        return await asyncio.gather(
            engine.generate([5, 10**9], SamplingParams(max_tokens=3)),
            engine.generate(good, SamplingParams(max_tokens=3, ignore_eos=True)),
            return_exceptions=True,
        )

    bad, ok = run(go())
    assert isinstance(bad, InvalidPrompt)
    assert len(ok.token_ids) == 3


def test_the_chat_template_rejecting_messages_is_a_chat_format_error(tiny_loaded):
    from transformers import AutoTokenizer

    from trainer.errors import ChatFormatError
    from trainer.tokenizer import HFChatTokenizer

    hf = AutoTokenizer.from_pretrained(tiny_loaded.tokenizer.name_or_path)
    hf.chat_template = "{% if messages[0]['role'] != 'user' %}{{ raise_exception('first message must be from the user') }}{% endif %}x"
    with pytest.raises(ChatFormatError, match="first message must be from the user"):
        HFChatTokenizer(hf).render_chat([{"role": "assistant", "content": "hi"}])
