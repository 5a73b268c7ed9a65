"""The official openai SDK (sync, async, streaming, tools) against a real `gateway serve`
with the bundled SmolLM2, and the recorded trace read back at token level — from the
gateway's SQLite file and from PostgreSQL (`--database-url`): the episode tests run on both,
plain inference (nothing recorded) on the session's SQLite gateway only."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest
from sqlmodel import Session, select

from tests.integration.conftest import start_gateway, stop_gateway

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def recording_gateway(request, module_gateway_database, tmp_path_factory):
    """Where the episode tests record: the session's SmolLM2 gateway (its SQLite file), or
    a SmolLM2 gateway of the module's own on a fresh PostgreSQL database."""
    if module_gateway_database is None:
        yield request.getfixturevalue("smollm2_gateway")
        return
    tmp = tmp_path_factory.mktemp("smollm2-postgresql-gateway")
    gw = start_gateway(tmp, "--dtype", "float32", database_url=module_gateway_database)
    yield gw
    stop_gateway(gw)


def client(gw, key="sk-none", base=None):
    return openai.OpenAI(base_url=base or gw.v1, api_key=key, max_retries=0)


def test_models_list_names_the_bundled_model(smollm2_gateway):
    models = client(smollm2_gateway).models.list()
    assert [m.id for m in models.data] == ["smollm2-135m"]


def test_sync_chat_answers_with_usage_that_counts_tokens(smollm2_gateway):
    r = client(smollm2_gateway).chat.completions.create(
        model="smollm2-135m", messages=QUESTION, max_tokens=24, temperature=0
    )
    choice = r.choices[0]
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 10 and 0 < r.usage.completion_tokens <= 24
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_async_concurrent_chats_with_n_and_logprobs(smollm2_gateway):
    async def go():
        llm = openai.AsyncOpenAI(base_url=smollm2_gateway.v1, api_key="sk-none", max_retries=0)
        return await asyncio.gather(
            *(
                llm.chat.completions.create(
                    model="smollm2-135m",
                    messages=QUESTION,
                    max_tokens=8,
                    n=2,
                    seed=i,
                    logprobs=True,
                    top_logprobs=2,
                )
                for i in range(3)
            )
        )

    for r in asyncio.run(go()):
        assert [c.index for c in r.choices] == [0, 1]
        for c in r.choices:
            assert len(c.logprobs.content) >= 1
            for t in c.logprobs.content:
                assert t.logprob <= 0 and len(t.top_logprobs) == 2
        assert r.usage.completion_tokens == sum(len(c.logprobs.content) for c in r.choices)


def test_streaming_deltas_join_to_the_non_streamed_greedy_answer(smollm2_gateway):
    llm = client(smollm2_gateway)
    full = llm.chat.completions.create(
        model="smollm2-135m", messages=QUESTION, max_tokens=20, temperature=0
    )
    stream = llm.chat.completions.create(
        model="smollm2-135m",
        messages=QUESTION,
        max_tokens=20,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == full.choices[
        0
    ].finish_reason
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens


def test_a_forced_tool_choice_returns_an_openai_tool_call(smollm2_gateway):
    r = client(smollm2_gateway).chat.completions.create(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=40,
        temperature=0,
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert (
        call.type == "function"
        and call.function.name == "get_weather"
        and call.id.startswith("call_")
    )
    assert {"city"} <= set(json.loads(call.function.arguments))  # constrained: valid JSON


def test_required_tool_calls_name_the_declared_tool_with_schema_valid_arguments(smollm2_gateway):
    pytest.importorskip("llguidance", reason="constrained decoding needs llguidance")
    # bounded arguments: sampled at temperature 1, SmolLM2 may write a "city" of hundreds
    # of characters or extra properties until max_tokens cuts the call (the grammar holds
    # the shape, not the length)
    short_city = json.loads(json.dumps(WEATHER))
    parameters = short_city["function"]["parameters"]
    parameters["properties"]["city"]["maxLength"] = 24
    parameters["additionalProperties"] = False
    for seed in range(3):
        r = client(smollm2_gateway).chat.completions.create(
            model="smollm2-135m",
            messages=[{"role": "user", "content": "What is 12 * 7?"}],
            tools=[short_city],
            tool_choice="required",
            max_tokens=120,
            seed=seed,
        )
        assert r.choices[0].finish_reason == "tool_calls", r.choices[0]
        (call,) = r.choices[0].message.tool_calls
        assert call.function.name == "get_weather"
        assert isinstance(json.loads(call.function.arguments)["city"], str)


def test_the_sdk_parse_gets_an_answer_matching_its_pydantic_model(smollm2_gateway):
    pytest.importorskip("llguidance", reason="constrained decoding needs llguidance")
    from pydantic import BaseModel

    class Capital(BaseModel):
        country: str
        capital: str

    # greedy: a sampled answer may spend 100 tokens inside one string (then .parse raises
    # LengthFinishReasonError, rightly), which is no test of the constraint
    r = client(smollm2_gateway).chat.completions.parse(
        model="smollm2-135m",
        messages=QUESTION,
        response_format=Capital,
        max_tokens=100,
        temperature=0,
    )
    assert isinstance(r.choices[0].message.parsed, Capital)


def test_a_tool_result_round_trip_is_accepted(smollm2_gateway):
    messages = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"},
    ]
    r = client(smollm2_gateway).chat.completions.create(
        model="smollm2-135m", messages=messages, tools=[WEATHER], max_tokens=16, temperature=0
    )
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_legacy_completions_endpoint(smollm2_gateway):
    r = client(smollm2_gateway).completions.create(
        model="smollm2-135m", prompt="The capital of France is", max_tokens=5, temperature=0
    )
    assert r.choices[0].text and r.usage.completion_tokens <= 5


def test_sdk_errors_are_typed_for_unknown_model_and_oversized_prompt(smollm2_gateway):
    llm = client(smollm2_gateway)
    with pytest.raises(openai.NotFoundError) as e:
        llm.chat.completions.create(model="no-such-model", messages=QUESTION)
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        llm.chat.completions.create(
            model="smollm2-135m", messages=[{"role": "user", "content": "hello " * 9000}]
        )
    assert e.value.code == "context_length_exceeded"


def _new_episode(gw):
    r = httpx.post(gw.url + "/swarm/episodes", json={"task_id": "capital-of-france"})
    assert r.status_code == 200, r.text
    return r.json()


def test_episode_calls_are_recorded_at_token_level_and_redecode_to_the_text(recording_gateway):
    ep = _new_episode(recording_gateway)
    llm = client(recording_gateway, key=ep["api_key"], base=ep["base_url"])
    first = llm.chat.completions.create(
        model="smollm2-135m", messages=QUESTION, max_tokens=16, temperature=0.7, seed=1
    )
    follow = QUESTION + [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "And of Italy?"},
    ]
    streamed = "".join(
        c.choices[0].delta.content or ""
        for c in llm.chat.completions.create(
            model="smollm2-135m", messages=follow, max_tokens=16, stream=True
        )
        if c.choices
    )
    # the same under the path form, without a key
    path_llm = client(
        recording_gateway, base=f"{recording_gateway.url}/episodes/{ep['episode_id']}/v1"
    )
    path_llm.chat.completions.create(model="smollm2-135m", messages=QUESTION, max_tokens=4)
    # plain inference (no episode key) is not recorded
    client(recording_gateway).chat.completions.create(
        model="smollm2-135m", messages=QUESTION, max_tokens=4
    )

    trace = httpx.get(f"{recording_gateway.url}/swarm/episodes/{ep['episode_id']}").json()
    calls = trace["calls"]
    assert len(calls) == 3
    from transformers import AutoTokenizer

    from trainer.model import bundled_model_dir

    tok = AutoTokenizer.from_pretrained(bundled_model_dir())
    for call, text in zip(calls[:2], [first.choices[0].message.content, streamed], strict=True):
        assert call["prompt_token_ids"] and call["completion_token_ids"]
        assert len(call["logprobs"]) == len(call["completion_token_ids"])
        assert all(lp <= 0 for lp in call["logprobs"])
        assert call["version"] == 0 and call["finish_reason"] in ("stop", "length")
        assert tok.decode(call["completion_token_ids"], skip_special_tokens=True) == text
        assert "<|im_start|>assistant" in tok.decode(call["prompt_token_ids"])
    # the second call's prompt holds the first exchange
    assert "And of Italy?" in tok.decode(calls[1]["prompt_token_ids"])
    # the trace was read back from the database, where the three calls are rows
    from experiments_db.db import make_engine
    from experiments_db.models import CallRow

    engine = make_engine(recording_gateway.database_url)
    try:
        with Session(engine) as session:
            rows = session.exec(select(CallRow).where(CallRow.episode_id == ep["episode_id"])).all()
    finally:
        engine.dispose()  # PostgreSQL: no pooled connection left on the module's database
    assert sorted(row.index for row in rows) == [0, 1, 2]


def test_a_foreign_or_unknown_episode_key_is_refused(recording_gateway):
    a, b = _new_episode(recording_gateway), _new_episode(recording_gateway)
    with pytest.raises(openai.AuthenticationError):
        client(
            recording_gateway,
            key=a["api_key"],
            base=f"{recording_gateway.url}/episodes/{b['episode_id']}/v1",
        ).chat.completions.create(model="smollm2-135m", messages=QUESTION, max_tokens=2)
    with pytest.raises(openai.AuthenticationError):
        client(recording_gateway, key="sk-ep-not-a-real-key").chat.completions.create(
            model="smollm2-135m", messages=QUESTION, max_tokens=2
        )
