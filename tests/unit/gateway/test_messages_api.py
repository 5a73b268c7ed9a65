"""`POST /v1/messages` (the Anthropic Messages API) through the chat core: answers and
streaming events in Anthropic's shape, calls recorded into the episode like chat calls
(token ids, logprobs, drift repair, one timeline for a tool loop) under an `x-api-key` or
bearer episode key, and Anthropic-shaped errors. Real tiny-model tokenizer with a scripted
engine; the real tiny model at the end."""

from __future__ import annotations

import pytest

from gateway.openai.assistant_turn import AssistantTurn
from tests.unit.gateway.conftest import bearer, create_run, open_episode
from tests.unit.gateway.translated_apis import (
    BASE,
    PARIS,
    WEATHER_CALL,
    assert_one_timeline,
    new_episode,
    recorded_messages,
    reply_ids,
    scripted_gateway,
    sse_events,
    trace_of,
)

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
QUESTION = {"role": "user", "content": "Weather in Paris?"}


def message(client, key: str | None, status: int = 200, **body) -> dict:
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"} if key else None
    fields = {"model": BASE, "max_tokens": 64, **body}
    response = client.post("/v1/messages", json=fields, headers=headers)
    assert response.status_code == status, response.text
    return response.json()


def assert_anthropic_error(response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"type", "error"} and body["type"] == "error"
    assert set(body["error"]) == {"type", "message"} and body["error"]["type"] == kind
    assert body["error"]["message"]
    return body["error"]["message"]


def test_a_message_under_x_api_key_is_answered_and_recorded_with_its_token_ids(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [reply_ids(tok, PARIS)]) as (client, engine):
        episode = new_episode(client)
        system = [{"type": "text", "text": "Be brief."}]
        answer = message(client, episode["api_key"], system=system, messages=[QUESTION])
        trace = trace_of(client, episode)

    assert answer["type"] == "message" and answer["role"] == "assistant"
    assert answer["id"].startswith("msg") and answer["model"] == BASE
    assert answer["content"] == [{"type": "text", "text": PARIS}]
    assert (answer["stop_reason"], answer["stop_sequence"]) == ("end_turn", None)
    (call,) = trace["calls"]
    assert call["request_id"] == answer["id"]  # the trace names the message its client got
    assert call["completion_token_ids"] == reply_ids(tok, PARIS)
    assert call["prompt_token_ids"] == engine.requests[0][0]
    assert len(call["logprobs"]) == len(call["completion_token_ids"])
    assert recorded_messages(recorder, episode)[0] == [
        {"role": "system", "content": "Be brief."},
        QUESTION,
    ]
    assert answer["usage"]["input_tokens"] == len(call["prompt_token_ids"])
    assert answer["usage"]["output_tokens"] == len(call["completion_token_ids"])


def test_a_tool_use_and_its_tool_result_make_one_timeline_under_a_bearer_key(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    replies = [reply_ids(tok, WEATHER_CALL), reply_ids(tok, "Sunny.")]
    with scripted_gateway(recorder, settings, tok, replies) as (client, _engine):
        episode = new_episode(client)
        body = {"model": BASE, "max_tokens": 64, "tools": [WEATHER_TOOL], "messages": [QUESTION]}
        first = client.post("/v1/messages", json=body, headers=bearer(episode["api_key"])).json()
        (use,) = first["content"]
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": "sunny"}
        turns = [QUESTION, {"role": "assistant", "content": first["content"]}]
        turns.append({"role": "user", "content": [result]})
        second = message(client, episode["api_key"], tools=[WEATHER_TOOL], messages=turns)
        trace = trace_of(client, episode)

    assert first["stop_reason"] == "tool_use"
    assert use["type"] == "tool_use" and use["name"] == "get_weather"
    assert use["input"] == {"city": "Paris"}
    assert second["content"] == [{"type": "text", "text": "Sunny."}]
    assert_one_timeline(trace, calls=2)
    assert recorded_messages(recorder, episode)[1][-1] == {
        "role": "tool",
        "content": "sunny",
        "tool_call_id": use["id"],
    }


def test_arguments_that_are_not_a_json_object_go_out_raw_and_still_continue_the_call(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    broken = '<tool_call>\n{"name": "get_weather", "arguments": 12\n</tool_call>'
    replies = [reply_ids(tok, broken), reply_ids(tok, "Done.")]
    with scripted_gateway(recorder, settings, tok, replies) as (client, _engine):
        episode = new_episode(client)
        first = message(client, episode["api_key"], tools=[WEATHER_TOOL], messages=[QUESTION])
        (use,) = first["content"]
        result = {
            "type": "tool_result",
            "tool_use_id": use["id"],
            "content": [{"type": "text", "text": "?"}],
        }
        turns = [
            QUESTION,
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
        message(client, episode["api_key"], tools=[WEATHER_TOOL], messages=turns)
        trace = trace_of(client, episode)

    assert use["input"] == {"_raw_arguments": "12"}
    assert_one_timeline(trace, calls=2)


def test_streamed_text_arrives_as_message_events_in_order_and_is_recorded(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [reply_ids(tok, PARIS)]) as (client, _):
        episode = new_episode(client)
        response = client.post(
            "/v1/messages",
            json={"model": BASE, "max_tokens": 64, "messages": [QUESTION], "stream": True},
            headers={"x-api-key": episode["api_key"]},
        )
        trace = trace_of(client, episode)

    assert response.status_code == 200, response.text
    events = sse_events(response.text)
    assert all(name == data["type"] for name, data in events)
    names = [name for name, _ in events]
    assert [n for n in names if n != "content_block_delta"] == [
        "message_start",
        "content_block_start",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert start["content"] == [] and start["usage"]["input_tokens"] > 0
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert {d["type"] for d in deltas} == {"text_delta"} and len(deltas) > 1
    assert "".join(d["text"] for d in deltas) == PARIS
    final = events[-2][1]
    assert final["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert final["usage"]["output_tokens"] == len(reply_ids(tok, PARIS))
    assert trace["calls"][0]["completion_token_ids"] == reply_ids(tok, PARIS)
    assert trace["calls"][0]["request_id"] == start["id"]


def test_a_streamed_tool_use_sends_its_input_as_json_deltas(recorder, settings, tiny_tokenizer):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [reply_ids(tok, WEATHER_CALL)]) as (client, _):
        body = {"max_tokens": 64, "messages": [QUESTION], "tools": [WEATHER_TOOL], "stream": True}
        response = client.post("/v1/messages", json={"model": BASE, **body})
        events = sse_events(response.text)

    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    block = events[1][1]["content_block"]
    assert (block["type"], block["name"], block["input"]) == ("tool_use", "get_weather", {})
    assert events[2][1]["delta"] == {
        "type": "input_json_delta",
        "partial_json": '{"city": "Paris"}',
    }
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"max_tokens": None}, "max_tokens"),
        ({"messages": []}, "messages"),
        ({"temperature": 1.5}, "temperature"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
            "messages.0.content.0.type",
        ),
        (
            {"tools": [{"type": "bash_20250124", "name": "bash", "input_schema": {}}]},
            "tools.0.type",
        ),
        ({"stop_sequences": ["a", "b", "c", "d", "e"]}, "stop_sequences"),
    ],
)
def test_bad_input_is_an_anthropic_shaped_400_naming_the_field(client, body, needle):
    fields = {"model": "fake-model", "max_tokens": 16, "messages": [QUESTION], **body}
    fields = {k: v for k, v in fields.items() if v is not None}
    response = client.post("/v1/messages", json=fields)
    assert needle in assert_anthropic_error(response, 400, "invalid_request_error")


def test_unknown_keys_and_models_are_anthropic_shaped_errors(client):
    body = {"model": "fake-model", "max_tokens": 16, "messages": [QUESTION]}
    response = client.post("/v1/messages", json=body, headers={"x-api-key": "sk-ep-nope"})
    assert_anthropic_error(response, 401, "authentication_error")
    response = client.post("/v1/messages", json=body | {"model": "nope"})
    assert_anthropic_error(response, 404, "not_found_error")
    response = client.post(
        "/v1/messages", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert_anthropic_error(response, 400, "invalid_request_error")
    response = client.post(
        "/v1/messages", content=b"\xd4h\x18", headers={"content-type": "application/json"}
    )
    assert_anthropic_error(response, 400, "invalid_request_error")  # not UTF-8 at all


def test_the_stop_sequence_that_ended_the_text_is_named():
    turn = AssistantTurn(content="one two", finish_reason="stop")
    turn.token_texts = ["one", " two", " th", "ree", " four"]
    assert turn.stop_sequence(["four", " three"], eos_texts=["<|im_end|>"]) == " three"
    turn.token_texts = ["one", " two", "<|im_end|>"]
    assert turn.stop_sequence(["<"], eos_texts=["<|im_end|>"]) is None  # ended on EOS
    turn.finish_reason = "length"
    assert turn.stop_sequence([" three"], eos_texts=[]) is None


# -- the real tiny model -------------------------------------------------------------------


@pytest.mark.slow
def test_a_tiny_model_exchange_is_recorded_with_logprobs_as_one_timeline(make_client, tiny_factory):
    client = make_client(policy_factory=tiny_factory)
    create_run(client, policies={"policy": {"base_model": "tiny"}}, group_size=1, max_steps=1)
    episode = open_episode(client)
    fields = {"model": episode["model"], "max_tokens": 6, "temperature": 0}
    turns = [{"role": "user", "content": "Say hi."}]
    first = message(client, episode["api_key"], messages=turns, **fields)
    turns += [
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": "Again."},
    ]
    second = message(client, episode["api_key"], messages=turns, **fields)
    trace = trace_of(client, episode)

    assert len(trace["calls"]) == 2
    for call, answer in zip(trace["calls"], (first, second), strict=True):
        assert len(call["logprobs"]) == len(call["completion_token_ids"]) > 0
        assert answer["usage"]["output_tokens"] == len(call["completion_token_ids"])
    assert trace["calls"][1]["drift"] in ("exact", "repaired")
    assert len(trace["timelines"]["policy"]) == 1
